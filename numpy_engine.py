"""numpy_engine.py -- microgpt's GPT on arrays: gpt_forward and gpt_backward, both norms, batches.

microgpt.gpt runs one position at a time on scalar Values, and value.py's backward() finds every
gradient. This module computes the same numbers on arrays, for a whole batch of sequences at once,
with the backward pass written out by hand, layer by layer, as llm.c writes it: each layer is a
forward function and a backward function, and the forward keeps what the backward reads in a named
record (Block, SphereBlock, ResidualStep, Activations; each field's shape in a comment). The layers:

    embedding       wte[token] + wpe[position]               embedding_forward / _backward
    matrix product  y = x W^T                                utils.linear_np / _backward
    rmsnorm         x / rms(x)                               utils.rmsnorm_np / _backward
    l2_normalize    x / |x|                                  sphere.l2_normalize_np / _backward
    attention       causal softmax(q k^T scale) v, per head  attention_forward / _backward
    residual step   nGPT's Norm(h + alpha (Norm(f(h)) - h))  residual_step_forward / _backward
    cross-entropy   mean -log softmax(logits)[target]        utils.cross_entropy_np / _backward

B sequences of T positions, N = B * T rows, C = n_embd, H heads of hd = C / H, V = vocab_size. The
residual stream is (N, C); attention works on (B, H, T, hd) with a causal mask instead of a KV cache
(position t attends to s <= t, what the cache holds). gpt_forward reads line for line as
microgpt.gpt / gpt_sphere, gpt_backward is it read bottom up. The dtype is the parameters'.
"""
import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from model_config import alloc_params, chunk_rows, scale_factors
from settings import InputError
from sphere import l2_normalize_np, l2_normalize_np_backward
from utils import (
    cross_entropy_np,
    cross_entropy_np_backward,
    linear_np,
    linear_np_backward,
    rmsnorm_np,
    rmsnorm_np_backward,
    softmax_np,
    softmax_np_backward,
)

# ------------------------------------------------------------------ what the backward pass reads


@dataclass
class Block:
    """One transformer block in rmsnorm mode (microgpt.gpt's loop body)."""
    x_in: np.ndarray          # (N, C) the residual stream entering the block
    attn_inv_rms: np.ndarray  # (N, 1) 1 / rms(x_in)
    attn_in: np.ndarray       # (N, C) rmsnorm(x_in): the input of wq, wk, wv
    q: np.ndarray             # (B, H, T, hd)
    k: np.ndarray             # (B, H, T, hd)
    v: np.ndarray             # (B, H, T, hd)
    attn_weights: np.ndarray  # (B, H, T, T) softmax of the attention logits, 0 above the diagonal
    attn_heads: np.ndarray    # (N, C) the heads' outputs side by side: the input of wo
    x_mid: np.ndarray         # (N, C) the residual stream after attention
    mlp_inv_rms: np.ndarray   # (N, 1) 1 / rms(x_mid)
    mlp_in: np.ndarray        # (N, C) rmsnorm(x_mid): the input of fc1
    mlp_preact: np.ndarray    # (N, 4C) fc1's output
    mlp_act: np.ndarray       # (N, 4C) relu(mlp_preact): the input of fc2


@dataclass
class ResidualStep:
    """nGPT's step h <- Norm(h + alpha (Norm(h_block) - h)), h a unit vector already."""
    h_block: np.ndarray       # (N, C) the block's output
    block_unit: np.ndarray    # (N, C) Norm(h_block)
    block_norm: np.ndarray    # (N, 1) |h_block|
    alpha: np.ndarray         # (C,) the effective alpha: |stored| * its scale factor
    direction: np.ndarray     # (N, C) Norm(h_block) - h
    r: np.ndarray             # (N, C) h + alpha * direction
    out: np.ndarray           # (N, C) Norm(r): the stream after the step
    r_norm: np.ndarray        # (N, 1) |r|


@dataclass
class SphereBlock:
    """One transformer block in sphere mode (microgpt.gpt_sphere's loop body)."""
    h_in: np.ndarray          # (N, C) the stream entering the block (unit rows): wq, wk, wv's input
    s_qk: np.ndarray          # (H, hd) the effective s_qk, per head and dimension
    q_raw: np.ndarray         # (B, T, H, hd) h wq^T, by head
    q_norm: np.ndarray        # (B, T, H, 1) |q_raw| per head
    q_unit: np.ndarray        # (B, T, H, hd) Norm(q_raw)
    k_raw: np.ndarray         # (B, T, H, hd)
    k_norm: np.ndarray        # (B, T, H, 1)
    k_unit: np.ndarray        # (B, T, H, hd)
    q: np.ndarray             # (B, H, T, hd) q_unit * s_qk
    k: np.ndarray             # (B, H, T, hd) k_unit * s_qk
    v: np.ndarray             # (B, H, T, hd)
    attn_weights: np.ndarray  # (B, H, T, T)
    attn_heads: np.ndarray    # (N, C) the input of wo
    attn_step: ResidualStep   # h <- Norm(Norm(h) + alpha_A (Norm(h_attn) - Norm(h)))
    mlp_in: np.ndarray        # (N, C) the stream after attention: the input of fc1
    s_u: np.ndarray           # (4C,) the effective s_u
    mlp_cosines: np.ndarray   # (N, 4C) fc1's output (unit rows times unit h)
    mlp_preact: np.ndarray    # (N, 4C) mlp_cosines * s_u
    mlp_act: np.ndarray       # (N, 4C) relu(mlp_preact): the input of fc2
    mlp_step: ResidualStep    # h <- Norm(Norm(h) + alpha_M (Norm(h_mlp) - Norm(h)))


@dataclass
class Activations:
    """What gpt_forward keeps, for gpt_backward and for anyone who wants to look inside."""
    tokens: np.ndarray        # (B, T) the input ids
    embedding: np.ndarray     # (N, C) wte[token] + wpe[position]
    hidden: list              # 1 + 2 n_layer arrays (B, T, C): the residual stream after the
                              # embedding (and its norm), after each attention and each MLP block
    layers: list              # n_layer records: Block (rmsnorm) or SphereBlock (sphere)
    final: np.ndarray         # (N, C) the last hidden state: the input of lm_head
    embedding_inv_rms: np.ndarray = None  # (N, 1) rmsnorm: 1 / rms(embedding)
    embedding_norm: np.ndarray = None     # (N, 1) sphere: |embedding|
    logit_cosines: np.ndarray = None      # (N, V) sphere: final lm_head^T, the logits before s_z
    s_z: np.ndarray = None                # (V,) sphere: the effective s_z


# --------------------------------------------------------------------------- layers

def embedding_forward(wte, wpe, tokens):
    """(N, C): wte[token] + wpe[position] for every position of every sequence of tokens (B, T)."""
    B, T = tokens.shape
    x = wte[tokens] + wpe[:T]
    return x.reshape(B * T, -1)


def embedding_backward(dx, tokens, dwte, dwpe):
    """Writes into dwte and dwpe: dwte = onehot(tokens)^T dx, so a token that occurs twice collects
    both gradients and rows of tokens that do not occur get 0; positions beyond T get 0."""
    B, T = tokens.shape
    one_hot = np.eye(dwte.shape[0], dtype=dx.dtype)[tokens.reshape(-1)]  # (N, V)
    dwte[...] = one_hot.T @ dx
    dwpe[...] = 0.0
    dwpe[:T] = dx.reshape(B, T, -1).sum(axis=0)


def split_heads(x, B, T, H):
    """(N, C) -> (B, H, T, hd), the layout attention works in (a view)."""
    return x.reshape(B, T, H, -1).transpose(0, 2, 1, 3)


def merge_heads(y):
    """(B, H, T, hd) -> (N, C): the heads side by side, as microgpt's x_attn.extend(head_out)."""
    B, H, T, hd = y.shape
    return y.transpose(0, 2, 1, 3).reshape(B * T, H * hd)


@cache  # (made once per length and dtype: every step adds it)
def causal_mask(T, dtype):
    """(T, T) read-only: 0 where position t attends to s <= t, -inf above the diagonal."""
    mask = np.triu(np.full((T, T), -np.inf, dtype=dtype), 1)
    mask.flags.writeable = False
    return mask


def attention_forward(q, k, v, scale):
    """Causal attention of every head: weights = softmax(q k^T * scale) over the positions s <= t
    (the logits of later positions are -inf, so their weights are 0); out = weights v.
    q, k, v: (B, H, T, hd). Returns (out (B, H, T, hd), weights (B, H, T, T))."""
    T = q.shape[2]
    logits = (q * scale) @ k.swapaxes(-1, -2)  # the scale on q: T times fewer numbers than logits
    logits += causal_mask(T, q.dtype)
    weights = softmax_np(logits)
    return weights @ v, weights


def attention_backward(dout, q, k, v, weights, scale):
    """(dq, dk, dv) of attention_forward.
        out = W v               dW = dout v^T, dv = W^T dout
        W = softmax(logits)     dlogits = softmax_np_backward(dW, W)  (0 where W is masked)
        logits = q k^T scale    dq = dlogits k scale, dk = dlogits^T q scale
    """
    dweights = dout @ v.swapaxes(-1, -2)
    dv = weights.swapaxes(-1, -2) @ dout
    dlogits = softmax_np_backward(dweights, weights)
    dq = dlogits @ k
    dq *= scale
    dk = dlogits.swapaxes(-1, -2) @ q
    dk *= scale
    return dq, dk, dv


def residual_step_forward(h, h_block, alpha):
    """gpt_sphere's h <- Norm(Norm(h) + alpha (Norm(h_block) - Norm(h))). Every h here is a
    normalization's output, so Norm(h) = h: not computed again, nor its backward (a projection
    onto the tangent space at h, which the normalization that made h applies to all that
    reaches h: projecting twice is projecting once). Returns (new h, record)."""
    block_unit, block_norm = l2_normalize_np(h_block, return_norm=True)
    direction = block_unit - h
    r = h + alpha * direction
    out, r_norm = l2_normalize_np(r, return_norm=True)
    return out, ResidualStep(h_block, block_unit, block_norm, alpha, direction, r, out, r_norm)


def residual_step_backward(dout, step):
    """(dh, dh_block, dalpha) of residual_step_forward, from
        r = h (1 - alpha) + alpha Norm(h_block):  dalpha = sum over rows of dr * direction."""
    dr = l2_normalize_np_backward(dout, step.r, norm=step.r_norm, y=step.out)
    dalpha = (dr * step.direction).sum(axis=0)
    dh = dr * (1.0 - step.alpha)
    dh_block = l2_normalize_np_backward(dr * step.alpha, step.h_block, norm=step.block_norm,
                                        y=step.block_unit)
    return dh, dh_block, dalpha


def relu_backward(dy, preact):
    """relu(u) = max(u, 0): the gradient passes where u > 0 (at 0 it is 0, as Value.relu)."""
    return dy * (preact > 0.0)


# --------------------------------------------------------------------------- forward

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
        raise ValueError(f"tokens must be a non-empty 1-D or 2-D array of ids, got shape "
                         f"{idx.shape}")
    if idx.shape[-1] > cfg.block_size:
        raise ValueError(f"sequence length {idx.shape[-1]} exceeds block_size {cfg.block_size}")
    if idx.min() < 0 or idx.max() >= cfg.vocab_size:
        raise ValueError(f"token ids must be in [0, {cfg.vocab_size}), got "
                         f"[{idx.min()}, {idx.max()}]")
    return idx


def gpt_forward(params, tokens, cfg):
    """The logits of every position of every sequence, and the Activations the backward pass reads.

    tokens: input ids, 1-D (T,), 2-D (B, T) or a list of id lists (right-padded with 0). Returns
    (logits, acts): logits (B, T, V), or (T, V) for 1-D input. acts.hidden are always (B, T, C);
    acts.layers[i].attn_weights (B, H, T, T) are layer i's attention weights.
    """
    idx = _token_array(tokens, cfg)
    tokens2d = idx if idx.ndim == 2 else idx[None, :]
    logits, acts = _forward(params, tokens2d, cfg)
    logits = logits.reshape(tokens2d.shape + (cfg.vocab_size,))
    return (logits[0] if idx.ndim == 1 else logits), acts


def _forward(params, tokens, cfg):
    """gpt_forward for a checked (B, T) array of ids: logits (N, V) and the Activations."""
    forward = _forward_sphere if cfg.norm == "sphere" else _forward_rmsnorm
    return forward(params, tokens, cfg)


def _forward_rmsnorm(params, tokens, cfg):
    """microgpt.gpt for every position at once: logits (N, V) and the Activations."""
    B, T = tokens.shape
    H, scale = cfg.n_head, cfg.head_dim ** -0.5
    x0 = embedding_forward(params["wte"], params["wpe"], tokens)  # token and position embedding
    x, inv_rms = rmsnorm_np(x0, return_inv_rms=True)
    hidden, layers = [x.reshape(B, T, -1)], []
    for li in range(cfg.n_layer):
        p = f"layer{li}."
        # 1) multi-head attention block
        x_in = x
        xn, attn_inv_rms = rmsnorm_np(x_in, return_inv_rms=True)
        q = split_heads(linear_np(xn, params[p + "attn_wq"]), B, T, H)
        k = split_heads(linear_np(xn, params[p + "attn_wk"]), B, T, H)
        v = split_heads(linear_np(xn, params[p + "attn_wv"]), B, T, H)
        heads, attn_weights = attention_forward(q, k, v, scale)
        x_attn = merge_heads(heads)
        x_mid = linear_np(x_attn, params[p + "attn_wo"]) + x_in
        # 2) MLP block
        xn2, mlp_inv_rms = rmsnorm_np(x_mid, return_inv_rms=True)
        u = linear_np(xn2, params[p + "mlp_fc1"])
        a = np.maximum(u, 0.0)
        x = linear_np(a, params[p + "mlp_fc2"]) + x_mid
        layers.append(Block(x_in, attn_inv_rms, xn, q, k, v, attn_weights, x_attn, x_mid,
                            mlp_inv_rms, xn2, u, a))
        hidden += [x_mid.reshape(B, T, -1), x.reshape(B, T, -1)]
    logits = linear_np(x, params["lm_head"])
    return logits, Activations(tokens, x0, hidden, layers, x, embedding_inv_rms=inv_rms)


def _effective(params, key, factor):
    """A stored nGPT scale at the size gpt_sphere uses: stored * factor (|stored|: the alphas)."""
    stored = params[key]
    return (np.abs(stored) if key.endswith("alpha") else stored) * factor[key.split(".")[-1]]


def _forward_sphere(params, tokens, cfg):
    """microgpt.gpt_sphere for every position at once: logits (N, V) and the Activations."""
    B, T = tokens.shape
    H, hd, scale = cfg.n_head, cfg.head_dim, cfg.head_dim ** 0.5
    f = scale_factors(cfg)
    x0 = embedding_forward(params["wte"], params["wpe"], tokens)
    h, emb_norm = l2_normalize_np(x0, return_norm=True)  # a point on the sphere
    hidden, layers = [h.reshape(B, T, -1)], []
    for li in range(cfg.n_layer):
        p = f"layer{li}."
        # 1) attention: q and k of each head are unit vectors times s_qk (a scaled cosine)
        h_in = h
        sqk = _effective(params, p + "attn_sqk", f).reshape(H, hd)
        q_raw = linear_np(h, params[p + "attn_wq"]).reshape(B, T, H, hd)
        k_raw = linear_np(h, params[p + "attn_wk"]).reshape(B, T, H, hd)
        v = split_heads(linear_np(h, params[p + "attn_wv"]), B, T, H)
        q_unit, q_norm = l2_normalize_np(q_raw, return_norm=True)
        k_unit, k_norm = l2_normalize_np(k_raw, return_norm=True)
        q, k = (q_unit * sqk).transpose(0, 2, 1, 3), (k_unit * sqk).transpose(0, 2, 1, 3)
        heads, attn_weights = attention_forward(q, k, v, scale)
        x_attn = merge_heads(heads)
        h_attn = linear_np(x_attn, params[p + "attn_wo"])
        alpha = _effective(params, p + "attn_alpha", f)
        h, attn_step = residual_step_forward(h, h_attn, alpha)
        # 2) MLP, its hidden pre-activation scaled by s_u
        mlp_in = h
        su = _effective(params, p + "mlp_su", f)
        cosines = linear_np(h, params[p + "mlp_fc1"])
        u = cosines * su
        a = np.maximum(u, 0.0)
        h_mlp = linear_np(a, params[p + "mlp_fc2"])
        alpha = _effective(params, p + "mlp_alpha", f)
        h, mlp_step = residual_step_forward(h, h_mlp, alpha)
        layers.append(SphereBlock(h_in, sqk, q_raw, q_norm, q_unit, k_raw, k_norm, k_unit, q, k,
                                  v, attn_weights, x_attn, attn_step, mlp_in, su, cosines, u, a,
                                  mlp_step))
        hidden += [mlp_in.reshape(B, T, -1), h.reshape(B, T, -1)]
    # logits are cosines with the (unit) lm_head rows, times s_z
    cosines = linear_np(h, params["lm_head"])
    sz = _effective(params, "sz", f)
    acts = Activations(tokens, x0, hidden, layers, h, embedding_norm=emb_norm,
                       logit_cosines=cosines, s_z=sz)
    return cosines * sz, acts


# --------------------------------------------------------------------------- backward

def gpt_backward(dlogits, acts, params, cfg, grads=None):
    """The gradient of a scalar loss w.r.t. every parameter, from dloss/dlogits (B, T, V) or (N, V)
    and the Activations of gpt_forward. grads: a dict of views from model_config.alloc_params to
    write into (train reuses one); by default a new one. Returns grads."""
    if grads is None:
        _, grads = alloc_params(cfg, params["wte"].dtype)
    dlogits = dlogits.reshape(-1, cfg.vocab_size)
    backward = _backward_sphere if cfg.norm == "sphere" else _backward_rmsnorm
    backward(dlogits, acts, params, cfg, grads)
    return grads


def _linear_backward(dy, x, key, params, grads):
    """linear_np_backward of y = x params[key]^T: writes dW into grads[key] and returns dx."""
    dx, grads[key][...] = linear_np_backward(dy, x, params[key])
    return dx


def _backward_rmsnorm(dlogits, acts, params, cfg, grads):
    """_forward_rmsnorm read from the bottom up."""
    B, T = acts.tokens.shape
    H, scale = cfg.n_head, cfg.head_dim ** -0.5
    dx = _linear_backward(dlogits, acts.final, "lm_head", params, grads)
    for li in reversed(range(cfg.n_layer)):
        p, layer = f"layer{li}.", acts.layers[li]
        # 2) MLP block: x = x_mid + fc2(relu(fc1(rmsnorm(x_mid))))
        da = _linear_backward(dx, layer.mlp_act, p + "mlp_fc2", params, grads)
        du = relu_backward(da, layer.mlp_preact)
        dxn2 = _linear_backward(du, layer.mlp_in, p + "mlp_fc1", params, grads)
        dx_mid = dx + rmsnorm_np_backward(dxn2, layer.x_mid, layer.mlp_inv_rms)
        # 1) attention block: x_mid = x_in + wo(attention(q, k, v)), q, k, v = rmsnorm(x_in) w^T
        dx_attn = _linear_backward(dx_mid, layer.attn_heads, p + "attn_wo", params, grads)
        dq, dk, dv = attention_backward(split_heads(dx_attn, B, T, H), layer.q, layer.k, layer.v,
                                        layer.attn_weights, scale)
        dxn = _linear_backward(merge_heads(dq), layer.attn_in, p + "attn_wq", params, grads)
        dxn += _linear_backward(merge_heads(dk), layer.attn_in, p + "attn_wk", params, grads)
        dxn += _linear_backward(merge_heads(dv), layer.attn_in, p + "attn_wv", params, grads)
        dx = dx_mid + rmsnorm_np_backward(dxn, layer.x_in, layer.attn_inv_rms)
    dx0 = rmsnorm_np_backward(dx, acts.embedding, acts.embedding_inv_rms)
    embedding_backward(dx0, acts.tokens, grads["wte"], grads["wpe"])


def _scale_backward(deffective, key, params, grads, factor):
    """Writes d loss / d stored into grads[key] from d loss / d effective (_effective): times the
    factor, and for an alpha times sign(stored), +1 at 0 and at -0.0, as gpt_sphere's _abs."""
    d = deffective * factor[key.split(".")[-1]]
    grads[key][...] = np.where(params[key] >= 0, d, -d) if key.endswith("alpha") else d


def _backward_sphere(dlogits, acts, params, cfg, grads):
    """_forward_sphere read from the bottom up."""
    B, T = acts.tokens.shape
    H, scale, f = cfg.n_head, cfg.head_dim ** 0.5, scale_factors(cfg)
    _scale_backward((dlogits * acts.logit_cosines).sum(axis=0), "sz", params, grads, f)
    dh = _linear_backward(dlogits * acts.s_z, acts.final, "lm_head", params, grads)
    for li in reversed(range(cfg.n_layer)):
        p, layer = f"layer{li}.", acts.layers[li]
        # 2) MLP and its residual step
        dh, dh_mlp, dalpha = residual_step_backward(dh, layer.mlp_step)
        _scale_backward(dalpha, p + "mlp_alpha", params, grads, f)
        da = _linear_backward(dh_mlp, layer.mlp_act, p + "mlp_fc2", params, grads)
        du = relu_backward(da, layer.mlp_preact)
        _scale_backward((du * layer.mlp_cosines).sum(axis=0), p + "mlp_su", params, grads, f)
        dh = dh + _linear_backward(du * layer.s_u, layer.mlp_in, p + "mlp_fc1", params, grads)
        # 1) attention and its residual step
        dh, dh_attn, dalpha = residual_step_backward(dh, layer.attn_step)
        _scale_backward(dalpha, p + "attn_alpha", params, grads, f)
        dx_attn = _linear_backward(dh_attn, layer.attn_heads, p + "attn_wo", params, grads)
        dq, dk, dv = attention_backward(split_heads(dx_attn, B, T, H), layer.q, layer.k, layer.v,
                                        layer.attn_weights, scale)
        dq, dk = dq.transpose(0, 2, 1, 3), dk.transpose(0, 2, 1, 3)  # (B, T, H, hd), as q_unit
        dsqk = (dq * layer.q_unit).sum(axis=(0, 1)) + (dk * layer.k_unit).sum(axis=(0, 1))
        _scale_backward(dsqk.reshape(-1), p + "attn_sqk", params, grads, f)
        dq_raw = l2_normalize_np_backward(dq * layer.s_qk, layer.q_raw, norm=layer.q_norm,
                                          y=layer.q_unit)
        dk_raw = l2_normalize_np_backward(dk * layer.s_qk, layer.k_raw, norm=layer.k_norm,
                                          y=layer.k_unit)
        dh += _linear_backward(dq_raw.reshape(B * T, -1), layer.h_in, p + "attn_wq", params, grads)
        dh += _linear_backward(dk_raw.reshape(B * T, -1), layer.h_in, p + "attn_wk", params, grads)
        dh += _linear_backward(merge_heads(dv), layer.h_in, p + "attn_wv", params, grads)
    dx0 = l2_normalize_np_backward(dh, acts.embedding, norm=acts.embedding_norm,
                                   y=acts.hidden[0].reshape(dh.shape))
    embedding_backward(dx0, acts.tokens, grads["wte"], grads["wpe"])


# --------------------------------------------------------------------------- loss

def make_batch(docs_tokens, block_size):
    """Pad docs to the longest: inputs, targets (B, T) and a mask of the predicted positions."""
    ns = [min(block_size, len(t) - 1) for t in docs_tokens]
    inputs = np.zeros((len(docs_tokens), max(ns)), dtype=np.int64)
    targets, mask = np.zeros_like(inputs), np.zeros(inputs.shape, dtype=bool)
    for b, (tokens, n) in enumerate(zip(docs_tokens, ns)):
        inputs[b, :n], targets[b, :n], mask[b, :n] = tokens[:n], tokens[1:n + 1], True
    return inputs, targets, mask


def loss_and_grads_np(params, docs_tokens, cfg, out=None):
    """The mean next-token NLL over all predicted positions of the batch, and its gradient (into
    `out`, a grads dict from alloc_params, when given). docs_tokens are checked by
    microgpt.loss_and_grads."""
    inputs, targets, mask = make_batch(docs_tokens, cfg.block_size)
    # overflow shows as a non-finite result, which training reports
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        logits, acts = _forward(params, inputs, cfg)
        targets, mask = targets.reshape(-1), mask.reshape(-1)
        if mask.all():
            loss = cross_entropy_np(logits, targets)
            dlogits = cross_entropy_np_backward(logits, targets)
        else:  # padding: only the predicted positions count, the others get no gradient
            loss = cross_entropy_np(logits[mask], targets[mask])
            dlogits = np.zeros_like(logits)
            dlogits[mask] = cross_entropy_np_backward(logits[mask], targets[mask])
        return loss, gpt_backward(dlogits, acts, params, cfg, out)


def evaluate(params, docs_tokens, cfg):
    """Mean NLL over docs_tokens' predicted positions, no gradients, in chunks (chunk_rows)."""
    total, count, chunk = 0.0, 0, chunk_rows(cfg)
    for i in range(0, len(docs_tokens), chunk):
        inputs, targets, mask = make_batch(docs_tokens[i:i + chunk], cfg.block_size)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            logits, _ = gpt_forward(params, inputs, cfg)
            n = int(mask.sum())
            total += cross_entropy_np(logits[mask], targets[mask]) * n
        count += n
    return total / count


# --------------------------------------------------------------------------- what "good" means

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


# --------------------------------------------------------------- sampling (microgpt.iter_samples)

GREEDY_BELOW = 1e-100  # a temperature below this samples the argmax (see too_cold)


def too_cold(logits, temperature):
    """True (per row of logits) where the sampling distribution is taken as the argmax: below
    GREEDY_BELOW, or where logits / T, or its derivative logits / T^2 that the Value engine
    computes, would overflow. There softmax(logits / T) is one-hot in float64 anyway (unless two
    logits tie to within T * 745). Logits that are not finite numbers are an InputError: such a
    model cannot be sampled from."""
    logits = np.asarray(logits, dtype=np.float64)
    if not np.isfinite(logits).all():
        raise InputError("the model's logits are not finite numbers (its weights are too large for "
                         f"float64 arithmetic, max |logit| {np.abs(logits).max():.3g}): it cannot "
                         "be sampled from")
    with np.errstate(over="ignore"):
        largest = np.abs(logits).max(axis=-1)
        return (temperature < GREEDY_BELOW) | ~np.isfinite(largest / temperature / temperature)


def draw(probs, u):
    """Inverse-CDF draw (like random.choices): the first token whose cumulative probability reaches
    u. probs (..., V), u (...) in [0, 1); the same arithmetic for one sample or a batch."""
    probs = np.asarray(probs)
    below = (np.cumsum(probs, axis=-1) < np.expand_dims(u, -1)).sum(axis=-1)
    return np.minimum(below, probs.shape[-1] - 1)


SAMPLE_CHUNK = 1024  # samples_np advances at most this many names at once (fewer for a big model)


def samples_np(params, cfg, prefix, temperature, num_samples, rng):
    """microgpt.sample_value's loop on arrays: the token ids (after BOS) of num_samples names, one
    at a time, computed a chunk at a time (model_config.chunk_rows: memory stays bounded, whatever
    num_samples is). The uniform numbers are rows of rng.random, in order, as the Value engine's."""
    rows = chunk_rows(cfg, most=SAMPLE_CHUNK)
    for start in range(0, num_samples, rows):
        u = rng.random((min(rows, num_samples - start), cfg.block_size))
        yield from sample_np(params, cfg, prefix, temperature, u)


def sample_np(params, cfg, prefix, temperature, u):
    """len(u) names at once: each gpt_forward call advances all of them by one position; row i draws
    its token at position p with u[i, p]. Returns each name's token ids after BOS."""
    n, bos = len(u), cfg.vocab_size - 1
    tokens = np.array([[bos] + list(prefix)] * n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    while tokens.shape[1] <= cfg.block_size and not done.all():
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            logits, _ = gpt_forward(params, tokens, cfg)
        z = logits[:, -1].astype(np.float64)
        pos = tokens.shape[1] - 1  # the position whose prediction is drawn now
        cold = too_cold(z, temperature)
        with np.errstate(over="ignore", invalid="ignore"):
            drawn = draw(softmax_np(z / temperature), u[:, pos])
            token_id = np.where(cold, z.argmax(axis=1), drawn)
        token_id[done] = bos
        done |= token_id == bos
        tokens = np.concatenate([tokens, token_id[:, None]], axis=1)
    return [row.tolist() for row in tokens[:, 1:]]
