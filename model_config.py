"""model_config.py -- the model's size and the names, shapes and storage of its parameters.

Chapter 22 sets n_layer, n_embd, block_size, n_head and builds a `state_dict` of weight matrices; here that is
a GPTConfig and `param_shapes(cfg)`: the state_dict keys (wte, wpe, lm_head, then per layer attn_wq, attn_wk,
attn_wv, attn_wo, mlp_fc1, mlp_fc2; in sphere mode also nGPT's scale vectors) with their [out, in] shapes, in
the reference order. Both engines, the checkpoint files and the command line share these definitions, which is
why they live in a module of their own (microgpt.py re-exports them).

Storage: one contiguous float64 buffer with a NumPy view per key (`alloc_params`). It is the array form of the
chapter's `params = [p for mat in state_dict.values() for row in mat for p in row]`: gradients and Adam's
moments use the same layout, so the optimizer is one vectorized update of the whole buffer.
"""
import math
import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from harness.errors import InputError


@dataclass
class GPTConfig:
    """The model's hyperparameters: chapter 22's n_layer, n_embd, block_size, n_head, plus the norm switch."""
    vocab_size: int
    n_embd: int = 16
    n_head: int = 4
    n_layer: int = 1
    block_size: int = 16
    norm: str = "rmsnorm"    # "rmsnorm" (reference microgpt) or "sphere" (nGPT)
    alpha_init: float = 0.05  # sphere: effective initial eigen learning rate alpha of both residual updates
    sz_init: float = 1.0      # sphere: effective initial logit scale s_z

    def __post_init__(self):
        for name in ("vocab_size", "n_embd", "n_head", "n_layer", "block_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise InputError(f"{name} must be a positive integer, got {value!r}")
        if self.vocab_size < 2:
            raise InputError(f"vocab_size must be at least 2 (one character + BOS), got {self.vocab_size}")
        if self.n_embd % self.n_head:
            raise InputError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if self.norm not in ("rmsnorm", "sphere"):
            raise InputError(f"norm must be 'rmsnorm' or 'sphere', got {self.norm!r}")
        for name in ("alpha_init", "sz_init"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InputError(f"{name} must be a positive finite number, got {value!r}")

    @property
    def head_dim(self):
        return self.n_embd // self.n_head


def param_shapes(cfg):
    """(key, shape) of every parameter, in the reference order (this order is also the flat layout)."""
    C, V = cfg.n_embd, cfg.vocab_size
    shapes = [("wte", (V, C)), ("wpe", (cfg.block_size, C)), ("lm_head", (V, C))]
    for i in range(cfg.n_layer):
        shapes += [(f"layer{i}.attn_wq", (C, C)), (f"layer{i}.attn_wk", (C, C)), (f"layer{i}.attn_wv", (C, C)),
                   (f"layer{i}.attn_wo", (C, C)), (f"layer{i}.mlp_fc1", (4 * C, C)), (f"layer{i}.mlp_fc2", (C, 4 * C))]
    if cfg.norm == "sphere":  # the learnable scales of nGPT (stored at scale `base`, see gpt_sphere)
        for i in range(cfg.n_layer):
            shapes += [(f"layer{i}.attn_sqk", (C,)), (f"layer{i}.attn_alpha", (C,)),
                       (f"layer{i}.mlp_su", (4 * C,)), (f"layer{i}.mlp_alpha", (C,))]
        shapes += [("sz", (V,))]
    return shapes


def sphere_axes(cfg):
    """key -> axis along which a matrix is unit-normalized in sphere mode: its embedding dimension.

    Matrices are stored [out, in]. Those that read from the residual stream (wq, wk, wv, fc1, lm_head)
    and the embeddings (wte, wpe rows) have the embedding along axis 1; those that write into it
    (attn_wo, mlp_fc2) along axis 0, i.e. their columns are unit vectors.
    """
    axes = {"wte": 1, "wpe": 1, "lm_head": 1}
    for i in range(cfg.n_layer):
        axes.update({f"layer{i}.attn_wq": 1, f"layer{i}.attn_wk": 1, f"layer{i}.attn_wv": 1,
                     f"layer{i}.attn_wo": 0, f"layer{i}.mlp_fc1": 1, f"layer{i}.mlp_fc2": 0})
    return axes


def effective_scales(params, cfg):
    """Sphere mode: the scale vectors as the forward pass really applies them, layers concatenated.

    nGPT stores each scale small (initialized at base = 1/sqrt(C)) and multiplies it back up in the
    forward pass, so that Adam's steps on it have a useful size. The effective values are
    alpha_A, alpha_M = |param| * alpha_init / base,  s_qk = param / base,  s_u = param * sqrt(C),
    s_z = param * sz_init / base; at init: alpha_init, 1, sqrt(C) and sz_init.
    """
    base = cfg.n_embd ** -0.5
    cat = lambda name: np.concatenate([params[f"layer{i}.{name}"] for i in range(cfg.n_layer)])  # noqa: E731
    return {"alpha_A": np.abs(cat("attn_alpha")) * (cfg.alpha_init / base),
            "alpha_M": np.abs(cat("mlp_alpha")) * (cfg.alpha_init / base),
            "s_qk": cat("attn_sqk") * (1 / base),
            "s_u": cat("mlp_su") * cfg.n_embd ** 0.5,
            "s_z": params["sz"] * (cfg.sz_init / base)}


DTYPES = ("float64", "float32")  # the NumPy engine computes in its parameters' dtype; the Value engine in float64


def check_dtype(dtype):
    """The numpy dtype for "float64" / "float32" (or those dtypes); InputError for anything else."""
    name = np.dtype(dtype).name if isinstance(dtype, (type, np.dtype)) else dtype
    if name not in DTYPES:
        raise InputError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return np.dtype(name)


@lru_cache(maxsize=64)
def _offsets(vocab_size, n_embd, n_layer, block_size, norm):
    shapes = param_shapes(GPTConfig(vocab_size, n_embd, 1, n_layer, block_size, norm))
    offsets, offset = {}, 0
    for key, shape in shapes:
        offsets[key] = (offset, shape)
        offset += math.prod(shape)
    return offsets, offset


def param_offsets(cfg):
    """key -> (offset, shape) of every parameter in the flat buffer, and the buffer's size."""
    return _offsets(cfg.vocab_size, cfg.n_embd, cfg.n_layer, cfg.block_size, cfg.norm)


def alloc_params(cfg, dtype=np.float64):
    """One contiguous buffer (float64, or float32) and a dict of views into it, one per parameter (zeros).

    Gradients and Adam moments use the same layout, so the optimizer is one vectorized update.
    """
    offsets, size = param_offsets(cfg)
    flat = np.zeros(size, dtype=check_dtype(dtype))
    return flat, {key: flat[o:o + math.prod(shape)].reshape(shape) for key, (o, shape) in offsets.items()}


def flat_buffer(params):
    """The flat buffer behind a params (or grads) dict made by alloc_params / init_params."""
    buf = next(iter(params.values())).base
    if buf is None or buf.ndim != 1 or any(a.base is not buf for a in params.values()) \
            or sum(a.size for a in params.values()) != buf.size:
        raise ValueError("these arrays are not views of one flat buffer: copy them with pack_params(params, cfg)")
    return buf


def laid_out(params, cfg):
    """The flat buffer behind params if every array is a view of it in this module's layout (init_params,
    pack_params), else None (e.g. a dict of separate arrays). One check per call: no generator, no sum."""
    flat = params["wte"].base
    if flat is None or flat.ndim != 1 or flat.size != param_offsets(cfg)[1]:
        return None
    for a in params.values():
        if a.base is not flat:
            return None
    return flat


def stacked(flat, cfg, first, count):
    """`count` parameters that follow each other in the flat layout, starting at key `first`, as one matrix:
    e.g. attn_wq | attn_wk | attn_wv as a (3C, C) view (nanoGPT's c_attn), so the engine needs one matmul."""
    offset, (rows, cols) = param_offsets(cfg)[0][first]
    return flat[offset:offset + count * rows * cols].reshape(count * rows, cols)


@lru_cache(maxsize=64)
def _sphere_blocks(vocab_size, n_embd, n_layer, block_size):
    cfg = GPTConfig(vocab_size, n_embd, 1, n_layer, block_size, "sphere")
    offsets, blocks = _offsets(vocab_size, n_embd, n_layer, block_size, "sphere")[0], []
    for key, axis in sphere_axes(cfg).items():
        offset, (rows, cols) = offsets[key]
        last = blocks[-1] if blocks else None
        if last and axis == 1 == last[3] and cols == last[2] and last[0] + last[1] * last[2] == offset:
            blocks[-1] = (last[0], last[1] + rows, cols, 1)  # the rows of the next matrix continue this block
        else:
            blocks.append((offset, rows, cols, axis))
    return tuple(blocks)


def sphere_blocks(cfg):
    """The matrices of sphere_axes as (offset, rows, cols, axis) blocks of the flat buffer: consecutive
    matrices whose rows are normalized and have the same width form one block (wte | wpe | lm_head | the
    first layer's wq | wk | wv are one (2V + T + 3C, C) block), so the retraction needs few NumPy calls."""
    return _sphere_blocks(cfg.vocab_size, cfg.n_embd, cfg.n_layer, cfg.block_size)


def sphere_matrices(params, cfg):
    """(matrix, axis) for every matrix that sphere mode keeps on the sphere along `axis` (sphere_axes), as views
    to normalize in place: the blocks of sphere_blocks when params lie in the flat layout (fewer NumPy calls,
    the same numbers), else matrix by matrix. Either way their vectors come in the flat layout's order."""
    flat = laid_out(params, cfg)
    if flat is None:
        return [(params[key], axis) for key, axis in sphere_axes(cfg).items()]
    return [(flat[o:o + rows * cols].reshape(rows, cols), axis) for o, rows, cols, axis in sphere_blocks(cfg)]


@lru_cache(maxsize=64)
def _scale_layout(vocab_size, n_embd, n_layer, block_size, alpha_init, sz_init):
    offsets, size = _offsets(vocab_size, n_embd, n_layer, block_size, "sphere")
    start = offsets["layer0.attn_sqk"][0]
    base = n_embd ** -0.5
    factor = {"attn_sqk": 1 / base, "attn_alpha": alpha_init / base, "mlp_su": n_embd ** 0.5,
              "mlp_alpha": alpha_init / base, "sz": sz_init / base}
    mult, sign_offset, slices = np.empty(size - start), np.full(size - start, np.inf), {}
    for key, (offset, shape) in offsets.items():
        if offset >= start:  # a scale vector
            sl = slice(offset - start, offset - start + shape[0])
            name = key.split(".")[-1]
            mult[sl], slices[key] = factor[name], sl
            if name.endswith("alpha"):
                sign_offset[sl] = 0.0
    return start, mult, sign_offset, slices


def scale_layout(cfg):
    """Sphere mode: the scale vectors lie together at the end of the flat buffer (each layer's attn_sqk,
    attn_alpha, mlp_su, mlp_alpha, then sz). Returns (start, mult, sign_offset, slices): the effective values of
    all of them are |scales| * mult for the alphas and scales * mult for the rest (see effective_scales), in one
    vectorized step; sign_offset is 0 at the alphas and +inf elsewhere, so that the sign of scales + sign_offset
    is the factor the abs applies (+1 at 0, and for everything that is not an alpha); slices[key] is each one's
    place in that tail."""
    return _scale_layout(cfg.vocab_size, cfg.n_embd, cfg.n_layer, cfg.block_size, cfg.alpha_init, cfg.sz_init)


def cut_list(items, most=5):
    """A list in a message: its first `most` items and how many more (a message stays one readable line)."""
    return repr(items) if len(items) <= most else f"{items[:most]!r} and {len(items) - most:,} more"


def pack_params(params, cfg, dtype=None):
    """A fresh flat-buffer copy of any dict of arrays with the right keys and shapes (dtype: the arrays' own
    when they are all float32 or all float64, else float64)."""
    if dtype is None:
        kinds = {np.asarray(a).dtype for a in params.values()}
        dtype = kinds.pop() if len(kinds) == 1 and kinds <= {np.dtype("float32"), np.dtype("float64")} else np.float64
    flat, views = alloc_params(cfg, dtype)
    expected = dict(param_shapes(cfg))
    if set(params) != set(expected):
        missing, extra = sorted(set(expected) - set(params)), sorted(set(params) - set(expected))
        raise ValueError(f"parameter keys do not match the config: missing {cut_list(missing)}, unexpected "
                         f"{cut_list(extra)}")
    for key, view in views.items():
        a = np.asarray(params[key])
        if a.shape != view.shape:
            raise ValueError(f"parameter {key!r} has shape {a.shape}, the config needs {view.shape}")
        view[...] = a
    return views


# --------------------------------------------------------------------------- sizes, checked before allocating

MAX_MEMORY_GB = 4.0       # default of --max-memory: a run whose estimate is larger is refused before it starts
CHUNK_BYTES = 64 * 2**20  # evaluation and sampling run the NumPy forward pass on chunks of at most this size


def n_params(cfg):
    """The number of parameters, by formula (param_shapes would list 60 million keys for n_layer = 10^7):
    wte and lm_head V C each, wpe T C, per layer 4 C^2 of attention and 8 C^2 of MLP; sphere mode adds the
    scale vectors, 7 C per layer (s_qk, alpha_A, alpha_M: C each; s_u: 4C) and s_z (V)."""
    C, V, L = cfg.n_embd, cfg.vocab_size, cfg.n_layer
    P = 2 * V * C + cfg.block_size * C + 12 * L * C * C
    return P + (7 * L * C + V if cfg.norm == "sphere" else 0)


def n_param_arrays(cfg):
    """How many parameter arrays (state_dict keys) param_shapes lists, by formula, so that a config can be
    measured before a Python object is made per layer: wte, wpe, lm_head, 6 matrices per layer; sphere mode adds 4
    scale vectors per layer and s_z."""
    return 3 + 6 * cfg.n_layer + (4 * cfg.n_layer + 1 if cfg.norm == "sphere" else 0)


# What each parameter array costs in Python objects besides its numbers: its key string, dict entries (params,
# grads, offsets, sphere axes), NumPy views of the flat buffers and the per-layer objects of a step. Measured
# with tracemalloc around a 1-step numpy-engine train() of n_layer = 10,000, n_embd = 1: 7.2 kB per layer for
# rmsnorm (6 arrays), 13.6 kB for sphere (10 arrays), i.e. 1.2-1.4 kB an array; peak RSS grew 14 kB per sphere
# layer at 40,000 layers. A deep, narrow model (n_layer 10^6, n_embd 1) is made of these, not of its numbers.
BYTES_PER_ARRAY = 1500


def forward_bytes_per_doc(cfg):
    """What the NumPy forward pass keeps for one document of block_size tokens: per layer about 28 vectors of
    width C (normalized inputs, q, k, v, the MLP's 4C hidden units, ...) and the attention weights (heads x T),
    plus the logits. An upper estimate (tests/test_run_files.py measures it with tracemalloc)."""
    C, T, L, H, V = cfg.n_embd, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.vocab_size
    return 8 * T * (L * (28 * C + 2 * H * T) + 2 * V)


def chunk_rows(cfg, most=512):
    """How many documents evaluation or sampling feeds through forward_np at once: at most `most`, and few
    enough that their cache stays under CHUNK_BYTES (but always at least one)."""
    return max(1, min(most, CHUNK_BYTES // forward_bytes_per_doc(cfg)))


def step_memory(cfg, batch_size, engine, itemsize=8):
    """An upper estimate of a training step's peak memory in bytes, from the config alone.

    Both engines: the weights, Adam's two moments, the gradients and the update's temporaries (8 float64
    arrays of the parameter count P), and the evaluation chunk (CHUNK_BYTES). numpy: the forward cache of the
    batch, twice (the backward pass's temporaries). value: the graph, about one Value node (~300 bytes with
    its tuples) per multiply and per add: 24 C^2 + 4 C T per position per layer, 2 V C for lm_head, and a
    node per parameter in the state_dict. itemsize: 8 for float64, 4 for float32 (NumPy engine only).
    """
    C, T, L, V = cfg.n_embd, cfg.block_size, cfg.n_layer, cfg.vocab_size
    P = n_params(cfg)
    static = 8 * itemsize * P
    if engine == "numpy":
        activations = 2 * batch_size * forward_bytes_per_doc(cfg) * itemsize // 8
    else:
        nodes = batch_size * T * (L * (24 * C * C + 4 * C * T + 8 * C) + 2 * V * C) + P
        activations = 300 * nodes
    return static + BYTES_PER_ARRAY * n_param_arrays(cfg) + max(activations, CHUNK_BYTES)


def corpus_memory(n_docs, n_chars):
    """The documents in memory, as a run keeps them: each as a str, as a list of token ids (for the baselines and
    for training) and as pairs for the bigram counts; about 350 bytes per document and 50 per character
    (measured: 2 million 3-character names take about 0.7 GB)."""
    return 350 * n_docs + 50 * n_chars


MAX_STEPS = 2**53          # the most steps a run may plan: whole numbers up to here are exact in float64 (the lr
                           # schedule divides by it, np.geomspace plans the snapshots); far beyond any real run
BYTES_PER_STEP = 80        # what a run keeps per optimizer step: its train loss as a Python float in a list (32),
                           # in the checkpoint's array (8) and as text in metrics.json (~25), with room to spare
SNAPSHOT_BUDGET = 32 * 2**20  # the planetarium history's weights (harness/history.py keeps a big model's fewer)


def history_memory(cfg, steps):
    """What a run of `steps` steps keeps besides its model: the loss history, and the planetarium's snapshots."""
    return BYTES_PER_STEP * steps + min(SNAPSHOT_BUDGET, 50 * 8 * n_params(cfg))


def machine_memory():
    """This machine's memory in bytes (0 where the operating system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 0


def baseline_memory(cfg):
    """numpy_engine.baselines counts the bigrams in a dense V x V float64 table: 7.2 GB for 30,000 distinct
    characters (a CJK corpus), however small the model."""
    return 8 * cfg.vocab_size ** 2


def check_memory(cfg, batch_size, engine, max_gb=MAX_MEMORY_GB, dtype="float64", corpus=(0, 0), steps=0):
    """InputError, with the estimate, if a run would need more than max_gb GB, or more than this machine has: a
    training step, the bigram baseline's V x V table, the corpus (n_docs, n_chars) it keeps in memory, and the
    history of `steps` steps."""
    need = (step_memory(cfg, batch_size, engine, check_dtype(dtype).itemsize) + baseline_memory(cfg)
            + corpus_memory(*corpus) + history_memory(cfg, steps))
    limit, why = max_gb * 1e9, f"the limit is {max_gb:g} GB (raise it with --max-memory)"
    ram = machine_memory()
    if 0 < ram < limit:
        limit, why = ram, f"this machine has {ram / 1e9:,.1f} GB"
    if need > limit:
        raise InputError(f"this run would need about {need / 1e9:,.1f} GB of memory ({n_params(cfg):,} parameters, "
                         f"vocab_size {cfg.vocab_size:,}, n_embd {cfg.n_embd}, n_layer {cfg.n_layer}, block_size "
                         f"{cfg.block_size}, batch {batch_size}, engine {engine}, {corpus[0]:,} documents, {steps:,} "
                         f"steps); {why}")
