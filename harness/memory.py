"""harness/memory.py -- the memory a run will need, estimated before it is allocated:
over --max-memory or the machine's memory, the run is refused (exit 2)."""
import os
from dataclasses import replace

from corpora import BUILTIN, MAX_CORPUS_BYTES
from harness.i18n import _
from model_config import CHUNK_BYTES, check_dtype, forward_bytes_per_doc, n_param_arrays, n_params
from settings import DEFAULTS, InputError

# What each parameter array costs in Python objects besides its numbers: its key string,
# dict entries (params, grads, offsets, sphere axes), NumPy views of the flat buffers
# and the per-layer objects of a step. Measured with tracemalloc around a 1-step
# numpy-engine train() of n_layer = 10,000, n_embd = 1: 1.2-1.4 kB an array. A deep,
# narrow model (n_layer 10^6, n_embd 1) is made of these, not of its numbers.
BYTES_PER_ARRAY = 1500
BYTES_PER_STEP = 80  # each step's loss: a float in a list (32), checkpoint (8), metrics.json (~25)
SNAPSHOT_BUDGET = 32 * 2**20  # the history's snapshots of weights (a big model keeps fewer)


def step_memory(cfg, batch_size, engine, itemsize=8, positions=None):
    """An upper estimate of a training step's peak bytes: 8 arrays of P (weights, Adam,
    gradients, temporaries), the evaluation chunk; numpy: the forward cache, twice;
    value: a ~300-byte node per multiply and add, 24 C^2 + 4 C T per position and
    layer, 2 V C for lm_head. positions: the longest document's (+ 1, cropped)."""
    T = cfg.block_size if positions is None else max(1, min(cfg.block_size, positions))
    C, L, V, P = cfg.n_embd, cfg.n_layer, cfg.vocab_size, n_params(cfg)
    if engine == "numpy":
        doc = forward_bytes_per_doc(replace(cfg, block_size=T) if T != cfg.block_size else cfg)
        activations = 2 * batch_size * doc * itemsize // 8
    else:
        activations = 300 * (batch_size * T * (L * (24 * C*C + 4 * C*T + 8 * C) + 2 * V * C) + P)
    return 8 * itemsize * P + BYTES_PER_ARRAY * n_param_arrays(cfg) + max(activations, CHUNK_BYTES)


def corpus_memory(n_docs, n_chars):
    """The documents as a run keeps them: ~350 bytes a document and 50 a character
    (measured: 2 million 3-character names take about 0.7 GB)."""
    return 350 * n_docs + 50 * n_chars


def history_memory(cfg, steps):
    """What a run keeps beside its model: a loss a step, the planetarium's snapshots."""
    return BYTES_PER_STEP * steps + min(SNAPSHOT_BUDGET, 50 * 8 * n_params(cfg))


def baseline_memory(cfg):
    """The bigram baseline's dense V x V float64 table: 7.2 GB for 30,000 characters."""
    return 8 * cfg.vocab_size ** 2


def machine_memory():
    """This machine's memory in bytes (0 where the operating system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 0


def gigabytes(n):
    """A size in a message: '1.5 GB', or '12 MB' when small (never 'about 0.0 GB')."""
    return f"{n / 1e9:,.1f} GB" if n >= 1e8 else f"{n / 1e6:,.1f} MB"


def limit(max_gb=None):
    """(bytes, why): the memory a run may use, --max-memory or the machine's if less."""
    max_gb = DEFAULTS["max_memory"] if max_gb is None else max_gb
    ram = machine_memory()
    if 0 < ram < max_gb * 1e9:
        return ram, _("this machine has {size}").format(size=gigabytes(ram))
    return max_gb * 1e9, _("the limit is {gb:g} GB (raise it with --max-memory)").format(gb=max_gb)


def check_memory(cfg, batch_size, engine, max_gb=None, dtype="float64", corpus=(0, 0), steps=0,
                 positions=None):
    """InputError with the estimate if a run needs more than allowed; corpus: the
    documents' (n_docs, n_chars); positions: the longest one's tokens (step_memory)."""
    itemsize = check_dtype(dtype).itemsize
    need = (step_memory(cfg, batch_size, engine, itemsize, positions) + baseline_memory(cfg)
            + corpus_memory(*corpus) + history_memory(cfg, steps))
    most, why = limit(max_gb)
    if need > most:
        raise InputError("this run would need about {size} of memory ({params:,} parameters, "
                         "vocab_size {vocab:,}, n_embd {n_embd}, n_layer {n_layer}, block_size "
                         "{block_size}, batch {batch}, engine {engine}, {docs:,} documents, "
                         "{steps:,} steps); {why}", size=gigabytes(need), params=n_params(cfg),
                         vocab=cfg.vocab_size, n_embd=cfg.n_embd, n_layer=cfg.n_layer,
                         block_size=cfg.block_size, batch=batch_size, engine=engine, docs=corpus[0],
                         steps=steps, why=why)


def check_corpus_memory(name_or_path, max_gb):
    """InputError if a corpus file holds more documents than --max-memory allows,
    before it is decoded (64 MiB of short lines is 16M documents)."""
    if name_or_path in BUILTIN or not os.path.isfile(name_or_path):
        return  # (load_corpus says what is wrong with a path that is not a file)
    try:
        with open(name_or_path, "rb") as f:
            raw = f.read(MAX_CORPUS_BYTES + 1)
    except OSError:
        return
    lines = raw.count(b"\n") + 1
    need, (most, why) = corpus_memory(lines, len(raw)), limit(max_gb)
    if need > most:
        raise InputError("corpus file {path!r} has {lines:,} lines; keeping them as documents "
                         "would need about {size} of memory; {why}", path=name_or_path, lines=lines,
                         size=gigabytes(need), why=why)
