"""model_config.py -- the model's size and its parameters' names, shapes and storage.

Chapter 22's n_layer, n_embd, block_size, n_head and `state_dict` are a GPTConfig and
param_shapes(cfg): the keys with their [out, in] shapes, in the reference order.
TrainState is where a training run is.

Storage: one flat buffer with a NumPy view per key (alloc_params), the array form of
`params = [p for mat in state_dict.values() for row in mat for p in row]`; gradients
and Adam's moments share the layout, so the optimizer updates one buffer.
"""
import math
from dataclasses import dataclass, field, replace
from functools import cache
from types import MappingProxyType

import numpy as np

from settings import DTYPES, POSITIVE_INT, SETTINGS, InputError, check


@dataclass(frozen=True)
class GPTConfig:
    """The model's hyperparameters: chapter 22's sizes, the norm, nGPT's initial scales.
    Every field but vocab_size is a row of settings.SETTINGS."""
    vocab_size: int           # characters + BOS
    n_embd: int = 16          # embedding width C
    n_head: int = 4           # attention heads; must divide n_embd
    n_layer: int = 1          # transformer blocks
    block_size: int = 16      # most positions per document
    norm: str = "rmsnorm"     # "rmsnorm": the reference microgpt; "sphere": nGPT
    alpha_init: float = 0.05  # sphere: the residual steps' initial eigen learning rate
    sz_init: float = 1.0      # sphere: the initial logit scale s_z

    def __post_init__(self):
        if not POSITIVE_INT.ok(self.vocab_size) or self.vocab_size < 2:
            raise InputError("vocab_size must be an integer of at least 2 (one character + BOS), "
                             "got {got!r}", got=self.vocab_size)
        for name in MODEL_FIELDS:
            check(name, getattr(self, name))
        if self.n_embd % self.n_head:
            raise InputError("n_embd ({n_embd}) must be divisible by n_head ({n_head})",
                             n_embd=self.n_embd, n_head=self.n_head)

    @property
    def head_dim(self):
        return self.n_embd // self.n_head


MODEL_FIELDS = tuple(row.name for row in SETTINGS if row.group == "model")  # but vocab_size


@dataclass
class TrainState:
    """Where a training run is: the model, Adam's moments, its settings and losses so
    far. microgpt.train returns it; a checkpoint stores it."""
    cfg: GPTConfig
    vocab: list                 # the characters; BOS is id len(vocab)
    params: dict = None         # key -> array, views of one flat buffer (alloc_params)
    m: np.ndarray = None        # Adam's first moment, in the flat buffer's layout
    v: np.ndarray = None        # Adam's second moment
    step: int = 0               # optimizer steps done
    # the training settings (settings.SETTINGS holds their rules and help)
    steps: int = 1000
    lr: float = 0.01
    batch_size: int = 1
    seed: int = 42
    engine: str = "value"
    dtype: str = "float64"
    riemannian: bool = False
    eval_every: int = 100
    # what training measured
    train_loss: list = field(default_factory=list)  # one per step
    val_loss: list = field(default_factory=list)    # [(step, val loss), ...]
    seconds: float = 0.0        # wall time in the steps of the last train() call
    first_step: int = 0         # the step that call started from
    interrupted: bool = False   # stopped by Ctrl-C
    error: str = ""             # why training diverged, said by its observer ("" if it did not)

    @property
    def ms_per_step(self):
        """Mean wall time per step of the last train() call."""
        return 1000 * self.seconds / max(1, self.step - self.first_step)

    def settings(self):
        """The training settings, as train() takes them."""
        return {name: getattr(self, name) for name in TRAINING_FIELDS}

    def copy(self, **settings):
        """A state to go on from this one with `settings`, with its own weights, moments
        and losses: training the copy leaves this state as it is."""
        return replace(self, params=pack_params(self.params, self.cfg), m=self.m.copy(),
                       v=self.v.copy(), train_loss=list(self.train_loss),
                       val_loss=list(self.val_loss), interrupted=False, error="", seconds=0.0,
                       first_step=self.step, **settings)


HUGE_GRADIENT = 1e150  # beyond it Adam's grad ** 2 overflows float64: as bad as an infinite one
TRAINING_FIELDS = ("steps", "lr", "batch_size", "seed", "engine", "dtype", "riemannian",
                   "eval_every")


def layer_shapes(C):
    """(name, [out, in] shape, sphere axis) of one block's matrices, in the reference
    order. The sphere axis is the embedding dimension: 1 (unit rows) for those that read
    the residual stream (wq, wk, wv, fc1), 0 (unit columns) for those that write it."""
    return (("attn_wq", (C, C), 1), ("attn_wk", (C, C), 1), ("attn_wv", (C, C), 1),
            ("attn_wo", (C, C), 0), ("mlp_fc1", (4 * C, C), 1), ("mlp_fc2", (C, 4 * C), 0))


def layer_scales(C):
    """Sphere mode: (name, length) of one block's nGPT scales: s_qk and alpha_A for
    attention, s_u and alpha_M for the MLP (sz, length V, follows the last block's)."""
    return (("attn_sqk", C), ("attn_alpha", C), ("mlp_su", 4 * C), ("mlp_alpha", C))


def scale_factors(cfg):
    """Sphere mode: what the forward pass multiplies each stored scale by. nGPT stores a
    scale small (base = 1/sqrt(C)) and multiplies it back up, so that Adam's steps on it
    have a useful size; the alphas are used as |alpha|."""
    base = cfg.n_embd ** -0.5
    return {"attn_sqk": 1 / base, "attn_alpha": cfg.alpha_init / base, "mlp_su": cfg.n_embd ** 0.5,
            "mlp_alpha": cfg.alpha_init / base, "sz": cfg.sz_init / base}


@cache  # (a config is frozen: its layout is computed once; every training step asks for it)
def param_shapes(cfg):
    """(key, shape) of every parameter, in the reference order (the flat layout's)."""
    C, V = cfg.n_embd, cfg.vocab_size
    shapes = [("wte", (V, C)), ("wpe", (cfg.block_size, C)), ("lm_head", (V, C))]
    for i in range(cfg.n_layer):
        shapes += [(f"layer{i}.{name}", shape) for name, shape, _ in layer_shapes(C)]
    if cfg.norm == "sphere":  # nGPT's learnable scales (stored small, see scale_factors)
        for i in range(cfg.n_layer):
            shapes += [(f"layer{i}.{name}", (n,)) for name, n in layer_scales(C)]
        shapes += [("sz", (V,))]
    return tuple(shapes)


def n_params(cfg):
    """The number of parameters, by formula (n_layer = 10^7 too, without listing)."""
    C, V, L = cfg.n_embd, cfg.vocab_size, cfg.n_layer
    per_layer = sum(math.prod(shape) for _, shape, _ in layer_shapes(C))
    if cfg.norm == "sphere":
        per_layer += sum(n for _, n in layer_scales(C))
    return 2 * V * C + cfg.block_size * C + L * per_layer + (V if cfg.norm == "sphere" else 0)


def n_param_arrays(cfg):
    """How many arrays param_shapes lists, by formula (no object made per layer)."""
    per_layer = len(layer_shapes(1)) + (len(layer_scales(1)) if cfg.norm == "sphere" else 0)
    return 3 + cfg.n_layer * per_layer + (cfg.norm == "sphere")


@cache
def sphere_axes(cfg):
    """key -> the axis along which sphere mode keeps a matrix unit-normalized: rows of
    wte, wpe and lm_head; per layer, layer_shapes' axis. Read-only."""
    axes = {"wte": 1, "wpe": 1, "lm_head": 1}
    for i in range(cfg.n_layer):
        axes.update({f"layer{i}.{name}": axis for name, _, axis in layer_shapes(cfg.n_embd)})
    return MappingProxyType(axes)


def unit_vector_count(cfg):
    """How many unit vectors sphere mode keeps: wte, wpe and lm_head rows, and each
    block's along its sphere axis (len of np.concatenate(microgpt.retract(...)))."""
    per_layer = sum(shape[1 - axis] for _, shape, axis in layer_shapes(cfg.n_embd))
    return 2 * cfg.vocab_size + cfg.block_size + cfg.n_layer * per_layer


SCALE_NAMES = {"alpha_A": "attn_alpha", "alpha_M": "mlp_alpha", "s_qk": "attn_sqk", "s_u": "mlp_su",
               "s_z": "sz"}


def effective_scales(params, cfg):
    """Sphere mode: alpha_A, alpha_M, s_qk, s_u, s_z as the forward pass applies them,
    layers concatenated (at init: alpha_init, alpha_init, 1, sqrt(C), sz_init)."""
    factor = scale_factors(cfg)
    out = {}
    for label, name in SCALE_NAMES.items():
        keys = ["sz"] if name == "sz" else [f"layer{i}.{name}" for i in range(cfg.n_layer)]
        stored = np.concatenate([params[key] for key in keys])
        out[label] = (np.abs(stored) if name.endswith("alpha") else stored) * factor[name]
    return out


def check_dtype(dtype):
    """The numpy dtype for "float64" / "float32" (or those dtypes); else InputError."""
    name = np.dtype(dtype).name if isinstance(dtype, (type, np.dtype)) else dtype
    if name not in DTYPES:
        raise InputError("dtype must be one of {dtypes}, got {dtype!r}", dtypes=", ".join(DTYPES),
                         dtype=dtype)
    return np.dtype(name)


def param_offsets(cfg):
    """key -> (offset, shape) of each parameter in the flat buffer, and its size."""
    offsets, offset = {}, 0
    for key, shape in param_shapes(cfg):
        offsets[key] = (offset, shape)
        offset += math.prod(shape)
    return offsets, offset


def alloc_params(cfg, dtype=np.float64):
    """A flat buffer of zeros (float64 or float32) and a dict of a view per key."""
    flat = np.zeros(param_offsets(cfg)[1], dtype=check_dtype(dtype))
    return flat, param_views(flat, cfg)


def param_views(flat, cfg):
    """A params dict over the flat buffer `flat`: key -> a view of its part."""
    return {key: flat[o:o + math.prod(shape)].reshape(shape)
            for key, (o, shape) in param_offsets(cfg)[0].items()}


def flat_buffer(params):
    """The flat buffer behind a params (or grads) dict made by alloc_params."""
    buf = getattr(next(iter(params.values())), "base", None)
    if buf is None or buf.ndim != 1 or sum(a.size for a in params.values()) != buf.size \
            or any(getattr(a, "base", None) is not buf for a in params.values()):
        raise ValueError("these arrays are not views of one flat buffer: copy them with "
                         "pack_params(params, cfg)")
    return buf


def off_sphere(params, cfg):
    """Sphere mode: the largest | |v| - 1 | over the vectors on the sphere (0 on it);
    NaN or inf after an update overflowed (retracting inf gives zeros or NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.max([np.abs(np.sqrt((params[key] ** 2).sum(axis=axis)) - 1).max()
                             for key, axis in sphere_axes(cfg).items()]))


def scale_sizes(cfg):
    """Sphere mode: the length of each effective_scales vector, in SCALE_NAMES order."""
    per_layer = dict(layer_scales(cfg.n_embd))
    return {label: cfg.vocab_size if name == "sz" else cfg.n_layer * per_layer[name]
            for label, name in SCALE_NAMES.items()}


def cut_list(items, most=5):
    """A list in a message: its first `most` items and how many more (one line)."""
    return repr(items) if len(items) <= most else f"{items[:most]!r} and {len(items) - most:,} more"


def pack_params(params, cfg, dtype=None):
    """A fresh flat-buffer copy of a dict of arrays of the right keys and shapes (in
    their dtype when they share float32 or float64, else float64)."""
    if dtype is None:
        kinds = {np.asarray(a).dtype for a in params.values()}
        one_float = len(kinds) == 1 and kinds <= {np.dtype("float32"), np.dtype("float64")}
        dtype = kinds.pop() if one_float else np.float64
    _flat, views = alloc_params(cfg, dtype)
    if set(params) != set(views):
        missing, extra = sorted(set(views) - set(params)), sorted(set(params) - set(views))
        raise ValueError(f"parameter keys do not match the config: missing {cut_list(missing)}, "
                         f"unexpected {cut_list(extra)}")
    for key, view in views.items():
        a = np.asarray(params[key])
        if a.shape != view.shape:
            raise ValueError(f"parameter {key!r} has shape {a.shape}, the config needs "
                             f"{view.shape}")
        view[...] = a
    return views


# ------------------------------------------------------------------ forward pass chunks

CHUNK_BYTES = 64 * 2**20  # evaluation and sampling run the forward pass on chunks of at most this


def forward_bytes_per_doc(cfg):
    """An upper estimate of what the NumPy forward pass keeps for one document: per
    layer ~28 vectors of width C and the attention weights, plus the logits."""
    C, T, L, H, V = cfg.n_embd, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.vocab_size
    return 8 * T * (L * (28 * C + 2 * H * T) + 2 * V)


def chunk_rows(cfg, most=512):
    """How many documents evaluation or sampling feeds through gpt_forward at once: 1 to
    `most`, few enough that their activations stay under CHUNK_BYTES."""
    return max(1, min(most, CHUNK_BYTES // forward_bytes_per_doc(cfg)))
