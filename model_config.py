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
from dataclasses import dataclass

import numpy as np

from errors import InputError


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


def alloc_params(cfg):
    """One contiguous float64 buffer and a dict of views into it, one per parameter (zeros).

    Gradients and Adam moments use the same layout, so the optimizer is one vectorized update.
    """
    shapes = param_shapes(cfg)
    flat = np.zeros(sum(math.prod(s) for _, s in shapes))
    views, offset = {}, 0
    for key, shape in shapes:
        size = math.prod(shape)
        views[key] = flat[offset:offset + size].reshape(shape)
        offset += size
    return flat, views


def flat_buffer(params):
    """The flat buffer behind a params (or grads) dict made by alloc_params / init_params."""
    buf = next(iter(params.values())).base
    if buf is None or buf.ndim != 1 or any(a.base is not buf for a in params.values()) \
            or sum(a.size for a in params.values()) != buf.size:
        raise ValueError("these arrays are not views of one flat buffer: copy them with pack_params(params, cfg)")
    return buf


def pack_params(params, cfg):
    """A fresh flat-buffer copy of any dict of arrays with the right keys and shapes."""
    flat, views = alloc_params(cfg)
    expected = dict(param_shapes(cfg))
    if set(params) != set(expected):
        missing, extra = sorted(set(expected) - set(params)), sorted(set(params) - set(expected))
        raise ValueError(f"parameter keys do not match the config: missing {missing}, unexpected {extra}")
    for key, view in views.items():
        a = np.asarray(params[key], dtype=np.float64)
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


def step_memory(cfg, batch_size, engine):
    """An upper estimate of a training step's peak memory in bytes, from the config alone.

    Both engines: the weights, Adam's two moments, the gradients and the update's temporaries (8 float64
    arrays of the parameter count P), and the evaluation chunk (CHUNK_BYTES). numpy: the forward cache of the
    batch, twice (the backward pass's temporaries). value: the graph, about one Value node (~300 bytes with
    its tuples) per multiply and per add: 24 C^2 + 4 C T per position per layer, 2 V C for lm_head, and a
    node per parameter in the state_dict.
    """
    C, T, L, V = cfg.n_embd, cfg.block_size, cfg.n_layer, cfg.vocab_size
    P = n_params(cfg)
    static = 8 * 8 * P
    if engine == "numpy":
        activations = 2 * batch_size * forward_bytes_per_doc(cfg)
    else:
        nodes = batch_size * T * (L * (24 * C * C + 4 * C * T + 8 * C) + 2 * V * C) + P
        activations = 300 * nodes
    return static + max(activations, CHUNK_BYTES)


def check_memory(cfg, batch_size, engine, max_gb=MAX_MEMORY_GB):
    """InputError, with the estimate, if a training step would need more than max_gb GB."""
    need = step_memory(cfg, batch_size, engine)
    if need > max_gb * 1e9:
        raise InputError(f"this run would need about {need / 1e9:,.1f} GB of memory ({n_params(cfg):,} parameters, "
                         f"n_embd {cfg.n_embd}, n_layer {cfg.n_layer}, block_size {cfg.block_size}, batch "
                         f"{batch_size}, engine {engine}); the limit is {max_gb:g} GB (raise it with --max-memory)")
