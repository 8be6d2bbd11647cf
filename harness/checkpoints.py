"""harness/checkpoints.py -- everything a run needs to continue exactly where it stopped, and its file.

    TrainState        the weights, Adam's moments, the step, the settings and the loss history of a run
    check_state       a TrainState's settings obey the flags' rules (harness/checks.py)
    save_checkpoint   one .npz file without pickle (arrays + a JSON "meta" entry), written atomically
    load_checkpoint   the same file back, checked like the flags: array headers against the config's shapes
                      before anything is loaded, every setting against its rule; a bad file is an InputError
    corpus_fingerprint, check_same_corpus   the documents a run trains on, so a resume can tell they changed

The reference microgpt keeps everything in memory and ends; a learner expects --resume and a Ctrl-C that loses
nothing. The batch of step s is fixed by s and the seeded split, so no random state needs saving: a resumed
run continues bit for bit.
"""
import json
import math
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from harness.checks import check_combination, check_setting, cut, short
from harness.corpora import fingerprint
from harness.errors import InputError
from harness.run_files import atomic_write, check_npz_file, npz_headers, npz_meta
from model_config import (
    BYTES_PER_ARRAY,
    BYTES_PER_STEP,
    MAX_MEMORY_GB,
    GPTConfig,
    check_dtype,
    n_param_arrays,
    n_params,
    pack_params,
    param_shapes,
)


@dataclass
class TrainState:
    """Everything a run needs to continue exactly where it stopped (and what it has measured so far)."""
    cfg: GPTConfig
    vocab: list
    params: dict
    m: np.ndarray                  # Adam first moment, flat layout
    v: np.ndarray                  # Adam second moment, flat layout
    step: int = 0                  # optimizer steps done
    steps: int = 1000              # planned total (the lr decays to 0 at this step)
    batch_size: int = 1
    lr: float = 0.01
    seed: int = 42
    engine: str = "value"
    riemannian: bool = False
    corpus: str = ""
    eval_every: int = 100          # val loss every eval_every steps (and at step 0 and the end)
    corpus_sha256: str = ""        # corpora.fingerprint of train + val docs: a resume checks they are unchanged
    corpus_docs: int = 0           # how many docs that was (for the message when they changed)
    train_loss: list = field(default_factory=list)   # one per step
    val_loss: list = field(default_factory=list)     # [(step, val loss), ...]
    ms_per_step: float = 0.0       # mean wall time of the training steps of the last train() call
    interrupted: bool = False      # stopped by Ctrl-C (or a KeyboardInterrupt from the progress callback)
    error: str = ""                # why training diverged, if it did (params are the last good ones)


def check_state(state, where):
    """InputError unless every part of a TrainState is what a run makes: settings that obey the flags' rules
    (harness/checks.py), arrays that fit its config in one dtype, finite numbers, a mean of squares that is not
    negative, one train loss per step and val losses at increasing whole steps. load_checkpoint,
    save_checkpoint and a resumed train() all apply it, so no file can be written that cannot be read back."""
    cfg = state.cfg
    for name in ("step", "steps", "batch_size", "lr", "seed", "engine", "riemannian", "corpus", "eval_every"):
        check_setting(name, getattr(state, name), f"{where}: {name}")
    if state.step > state.steps:
        raise InputError(f"{where}: step {state.step} is beyond the planned steps {state.steps}")
    vocab = state.vocab
    if not isinstance(vocab, list) or len(vocab) + 1 != cfg.vocab_size or \
            not all(isinstance(c, str) and len(c) == 1 for c in vocab):
        raise InputError(f"{where}: vocabulary does not match vocab_size {cfg.vocab_size}")
    if vocab != sorted(set(vocab)):  # build_vocab makes it: sorted, each character once
        raise InputError(f"{where}: its vocabulary is not sorted characters, each once (as build_vocab makes it)")
    shapes = dict(param_shapes(cfg))
    arrays = {**{f"param:{k}": a for k, a in state.params.items()}, "adam_m": state.m, "adam_v": state.v}
    dtype = np.asarray(state.params.get("wte", 0.0)).dtype
    for name, a in arrays.items():
        want = (n_params(cfg),) if name.startswith("adam") else shapes.get(name[len("param:"):])
        if not isinstance(a, np.ndarray) or a.shape != want or a.dtype != dtype or \
                dtype.name not in ("float64", "float32"):
            raise InputError(f"{where}: {name} is {type(a).__name__} {getattr(a, 'shape', '')} "
                             f"{getattr(a, 'dtype', '')}; the config needs {want}, one dtype (float64 or float32) "
                             "for the weights and Adam's moments")
    if len(state.params) != len(shapes):
        missing = sorted(set(shapes) - set(state.params))
        raise InputError(f"{where}: its parameters are not the config's: {short(missing)} missing")
    check_combination(state.engine, dtype.name, cfg.norm, state.riemannian, f"{where}: ")
    if not all(np.isfinite(a).all() for a in arrays.values()):
        raise InputError(f"{where} contains non-finite weights or optimizer state")
    if (state.v < 0).any():
        raise InputError(f"{where}: Adam's second moment adam_v has negative entries (it is a mean of squares)")
    losses, val = np.asarray(state.train_loss, dtype=float), np.asarray(state.val_loss, dtype=float).reshape(-1, 2)
    if len(losses) != state.step:
        raise InputError(f"{where}: its train-loss history has {len(losses)} entries for {state.step} steps "
                         "(one per step)")
    if not (np.isfinite(losses).all() and np.isfinite(val).all()):
        raise InputError(f"{where}: its loss history contains NaN or inf")
    val_steps = val[:, 0]
    if len(val_steps) and ((val_steps != np.round(val_steps)).any() or val_steps.min() < 0 or
                           val_steps.max() > state.step or (np.diff(val_steps) <= 0).any()):
        raise InputError(f"{where}: the steps of its val-loss history are not increasing whole steps up to "
                         f"{state.step}")
    sha, docs = state.corpus_sha256, state.corpus_docs
    if not (isinstance(sha, str) and (sha == "" or len(sha) == 64)) or isinstance(docs, bool) or \
            not isinstance(docs, int) or docs < 0:
        raise InputError(f"{where}: its corpus fingerprint is malformed (corpus_sha256 {sha!r}, corpus_docs {docs!r})")


def corpus_fingerprint(train_docs, val_docs):
    """(sha256, count) of the docs a run trains and validates on, in split order."""
    return fingerprint(list(train_docs) + list(val_docs)), len(train_docs) + len(val_docs)


def same_corpus(state, train_docs, val_docs):
    """Are these the documents the state was trained on (by its fingerprint; True when it has none)?"""
    return not state.corpus_sha256 or corpus_fingerprint(train_docs, val_docs)[0] == state.corpus_sha256


def check_same_corpus(state, train_docs, val_docs, corpus):
    """InputError if the docs differ from those the checkpoint was trained on (then the seeded split, and so
    every batch, would differ: the resumed run would not be the run it continues)."""
    sha, count = corpus_fingerprint(train_docs, val_docs)
    if state.corpus_sha256 and sha != state.corpus_sha256:
        change = (f"{state.corpus_docs} documents then, {count} now" if count != state.corpus_docs
                  else f"the same number of documents ({count}), but their text differs")
        raise InputError(f"corpus {corpus!r} has changed since the checkpoint was written ({change}): the seeded "
                         "train/val split would differ, so the run cannot continue exactly; restore the corpus, or "
                         "start a new run")


CHECKPOINT_FORMAT, CHECKPOINT_VERSION = "microgpt-checkpoint", 1


def save_checkpoint(path, state):
    """One .npz (no pickle): arrays "param:<key>", "adam_m", "adam_v", "train_loss", "val_loss" (K, 2),
    and "meta", a JSON string: format, version, config, vocab, step, steps, batch_size, lr, seed,
    engine, riemannian, corpus, eval_every, corpus_sha256, corpus_docs, dtype (of the weights and Adam's
    moments: float64 or float32; a checkpoint without it is float64).
    """
    check_state(state, "cannot save checkpoint")  # what load_checkpoint would refuse is never written
    meta = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "config": asdict(state.cfg),
            "vocab": list(state.vocab), "step": state.step, "steps": state.steps, "batch_size": state.batch_size,
            "lr": state.lr, "seed": state.seed, "engine": state.engine, "riemannian": state.riemannian,
            "corpus": state.corpus, "eval_every": state.eval_every, "corpus_sha256": state.corpus_sha256,
            "corpus_docs": state.corpus_docs, "dtype": state.params["wte"].dtype.name}
    arrays = {f"param:{k}": a for k, a in state.params.items()}
    arrays.update(adam_m=state.m, adam_v=state.v, train_loss=np.asarray(state.train_loss, dtype=np.float64),
                  val_loss=np.asarray(state.val_loss, dtype=np.float64).reshape(-1, 2), meta=np.array(json.dumps(meta)))
    atomic_write(path, lambda f: np.savez(f, **arrays))


MAX_META_CHARS = 2**20  # the JSON meta of a real checkpoint is a few hundred characters


def _expected_arrays(cfg, step):
    P = n_params(cfg)
    shapes = {f"param:{key}": shape for key, shape in param_shapes(cfg)}
    shapes.update(adam_m=(P,), adam_v=(P,), train_loss=(step,))
    return shapes


def load_checkpoint(path, max_gb=MAX_MEMORY_GB):
    """A TrainState from save_checkpoint's file; InputError if it is missing, corrupt or incompatible.

    Checked before anything big is read: the meta (its settings obey the same rules as the flags), the size
    of the model it describes (against max_gb, like --max-memory), and every array's header (the config's
    shapes, float64, no unknown arrays). Then the arrays are loaded and must be finite.
    """
    path = str(path)
    check_npz_file(path, "checkpoint")
    where = f"checkpoint {path!r}"
    try:
        with open(path, "rb") as file:  # one open file for every read: a run replacing it meanwhile cannot mix versions
            return _load_checkpoint(file, where, max_gb)
    except OSError as e:
        raise InputError(f"cannot read {where}: {e.strerror or e}") from None


def _load_checkpoint(file, where, max_gb):
    try:
        try:  # the meta first: its config says how many arrays the file should hold
            meta = npz_meta(file, npz_headers(file, max_members=None, only=("meta",)), MAX_META_CHARS)
        except ValueError as e:
            raise InputError(f"{where} is incompatible or incomplete ({e})") from None
        version = meta.get("version")
        if meta.get("format") != CHECKPOINT_FORMAT or type(version) is not int or version != CHECKPOINT_VERSION:
            raise InputError(f"{where} has format {meta.get('format')!r} version {meta.get('version')!r}; "
                             f"this microgpt reads {CHECKPOINT_FORMAT!r} version {CHECKPOINT_VERSION}")
        names = {f.name for f in fields(GPTConfig)}
        config = meta["config"]
        unknown_settings = sorted(set(config) - names) if isinstance(config, dict) else config
        if unknown_settings:
            raise InputError(f"{where}: its config has settings this microgpt does not know: "
                             f"{short(unknown_settings)}")
        try:
            cfg = GPTConfig(**config)
        except InputError as e:  # (GPTConfig does not know the file: name it, as every other refusal here does)
            raise InputError(f"{where}: its config: {e}") from None
        step = check_setting("step", meta["step"], f"{where}: step")
        # weights and Adam's two moments (float64: the larger case), and its history: one train loss per step,
        # in the file, in memory and in metrics.json (a file of zeros compresses well: a small file can claim a lot)
        # and the Python objects of each parameter array (n_layer 10^6 is 6 million of them, however narrow)
        need = 3 * 8 * n_params(cfg) + BYTES_PER_STEP * step + BYTES_PER_ARRAY * n_param_arrays(cfg)
        if need > max_gb * 1e9:
            raise InputError(f"{where} describes a model of {n_params(cfg):,} parameters trained {step:,} steps, "
                             f"about {need / 1e9:,.1f} GB with its optimizer state, history and per-array objects; the "
                             f"limit is {max_gb:g} GB (raise it with --max-memory)")
        dtype = check_dtype(meta.get("dtype", "float64"))
        # count before naming: a small file whose config claims 1000 layers is refused without a list of the 6000
        # arrays it lacks (and without building one)
        count = n_param_arrays(cfg) + 5  # + adam_m, adam_v, train_loss, val_loss, meta
        headers = npz_headers(file, max_members=count + 16)  # (room to name a few arrays that do not belong)
        if len(headers) < count:
            raise InputError(f"{where} is incompatible or incomplete: it holds {len(headers)} arrays; a checkpoint "
                             f"of its config (n_layer {cfg.n_layer}, norm {cfg.norm}) holds {count}")
        expected = _expected_arrays(cfg, step)
        unknown = sorted(set(headers) - set(expected) - {"meta", "val_loss"})
        if unknown:
            raise InputError(f"{where} holds arrays a microgpt checkpoint does not have: {cut(', '.join(unknown))}")
        missing = sorted(set(expected) - set(headers))
        if missing or "val_loss" not in headers:
            raise InputError(f"{where} is incompatible or incomplete (missing "
                             f"{cut(', '.join(missing) or 'val_loss')})")
        for name, shape in expected.items():
            got, got_dtype, stored = headers[name]
            want = np.dtype(np.float64) if name.endswith("_loss") else dtype
            if got != shape or got_dtype != want:
                raise InputError(f"{where}: array {name!r} has shape {got} and dtype {got_dtype}; the config needs "
                                 f"shape {shape}, {want}")
            if stored < want.itemsize * math.prod(shape):
                raise InputError(f"{where} is corrupt (array {name!r} is truncated)")
        val_shape, val_dtype, _ = headers["val_loss"]
        if len(val_shape) != 2 or val_shape[1] != 2 or val_shape[0] > step + 2 or val_dtype != np.float64:
            raise InputError(f"{where}: array 'val_loss' has shape {val_shape}; expected (K, 2) with K <= step + 2")
        file.seek(0)
        with np.load(file, allow_pickle=False) as z:
            data = {k: z[k] for k in expected}
            val_loss = z["val_loss"]
    except InputError:
        raise
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as e:
        raise InputError(f"{where} is incompatible or incomplete ({type(e).__name__}: {e})") from None
    except Exception as e:  # zip, npy header, truncation, pickle refusal: all mean "not a valid checkpoint"
        raise InputError(f"{where} is corrupt or not a microgpt checkpoint ({type(e).__name__}: {e})") from None
    vocab = meta.get("vocab")
    params = pack_params({k[len("param:"):]: a for k, a in data.items() if k.startswith("param:")}, cfg)
    sha, docs = meta.get("corpus_sha256", ""), meta.get("corpus_docs", 0)
    losses = data["train_loss"]
    m, v = data["adam_m"], data["adam_v"]
    try:
        state = TrainState(cfg, vocab, params, m, v, meta["step"], meta["steps"], meta["batch_size"], meta["lr"],
                           meta["seed"], meta["engine"], meta["riemannian"], meta["corpus"], meta["eval_every"],
                           sha, docs, losses.tolist(), [tuple(row) for row in val_loss.tolist()])
    except KeyError as e:
        raise InputError(f"{where} is incompatible or incomplete (no {e} in its meta)") from None
    check_state(state, where)
    state.val_loss = [(int(s), x) for s, x in state.val_loss]  # (whole steps: check_state made sure)
    return state


