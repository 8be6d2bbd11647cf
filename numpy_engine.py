"""numpy_engine.py -- the GPT of microgpt.py on arrays: forward_np and backward_np, both norms, whole batches.

Chapter 22's `gpt()` runs one position at a time on scalar Values, and value.py's backward() finds every
gradient. This module computes the same numbers on arrays, for a whole batch of sequences at once, with the
backward pass written out by hand (llm.c / cs231n style):

    x (N, C)     the residual stream, one row per position of every sequence (N = B * T); attention runs on
                 (B, n_head, T, head_dim) with a causal mask instead of a growing KV cache (position t attends
                 to positions s <= t, exactly what the cache holds)
    forward_np   logits and a `cache` of what the backward pass needs (and what notebooks plot)
    backward_np  the gradient of every parameter from dloss/dlogits, in the flat-buffer layout of model_config

The math is that of the NumPy twins in utils.py (linear, softmax, rmsnorm, cross entropy) and sphere.py
(l2_normalize), but the training step calls none of them: it runs fused versions of its own, because at
microgpt's size a step is ~100 small NumPy calls and each call's overhead, not its arithmetic, is the cost.
(Of the twins, only cross_entropy_np is called, by evaluate, and softmax_np, by sample_np.) What is fused:
  * q, k and v come from one matmul with attn_wq | attn_wk | attn_wv, which lie back to back in the flat buffer
    (nanoGPT's c_attn); their gradients come back the same way, as one matmul into one view of the buffer;
    wte | wpe likewise get their gradients from one product (_embedding_backward);
  * 2-D `a.dot(b)` instead of `a @ b` (half the call overhead for small matrices, the same BLAS product), and
    row dot products in one call (np.vecdot: _dot_rows, _dot_columns);
  * each normalization keeps what its backward pass needs (rmsnorm: its 1/rms factor; l2: the norm) instead of
    recomputing it, and the softmax and the cross entropy work in place on their own temporaries;
  * a few index tricks that each save 1-3% of a batch-1 step, measured side by side (benchmarks/README.md; tricks
    that saved less went back to the plain expression): .take for row gathers, flat indices in the cross entropy,
    argmin for the smallest norm, copysign for the nGPT scales' sign; each says so where it is used.
tests/test_numpy_engine.py proves each fused piece equal to the twins it replaces (1e-12), and
tests/test_microgpt.py that the engine agrees with the Value engine and with finite differences.
The engine computes in the dtype of the parameters: float64 (the default) or float32.
"""
import math

import numpy as np

from model_config import (
    alloc_params,
    chunk_rows,
    flat_buffer,
    laid_out,
    pack_params,
    param_offsets,
    scale_layout,
    stacked,
)
from settings import InputError
from utils import cross_entropy_np, softmax_np

EPS_NORM = 1e-12  # l2_normalize's clamp (sphere.l2_normalize_np)
EPS_RMS = 1e-5    # rmsnorm's epsilon (utils.rmsnorm)


def _dot_rows(a, b):
    """The dot product of matching rows (last axis) of a and b, keepdims: sum(a * b, axis=-1, keepdims=True) in
    one NumPy call instead of two (np.vecdot, NumPy >= 2.0)."""
    return np.vecdot(a, b)[..., None]


def _dot_columns(a, b, out):
    """The dot product of matching columns of 2-D a and b, into out: sum(a * b, axis=0) in one NumPy call."""
    return np.vecdot(a.T, b.T, out=out)

_CONSTANTS = {}


def _causal_bias(T, dtype):
    """(T, T): 0 where query position t may attend to key position s <= t, -inf after it (exp(-inf) = 0)."""
    key = ("causal", T, dtype)
    if key not in _CONSTANTS:
        _CONSTANTS[key] = np.triu(np.full((T, T), -np.inf, dtype=dtype), 1)
    return _CONSTANTS[key]


def _one_hot(V, dtype):
    key = ("eye", V, dtype)
    if key not in _CONSTANTS:
        _CONSTANTS[key] = np.eye(V, dtype=dtype)
    return _CONSTANTS[key]


def _position_one_hot(B, T, V, block_size, dtype):
    """(B * T, V + block_size): a 1 in column V + t of the rows of position t (the wpe half of the embedding's
    one-hot rows; _embedding_backward adds the token half)."""
    key = ("positions", B, T, V, block_size, dtype)
    if key not in _CONSTANTS:
        _CONSTANTS[key] = _one_hot(V + block_size, dtype).take(np.tile(V + np.arange(T), B), axis=0)
    return _CONSTANTS[key]


def _row_starts(N, V):
    """0, V, 2V, ...: where each row of a contiguous (N, V) array starts in its flat view."""
    key = ("rows", N, V)
    if key not in _CONSTANTS:
        _CONSTANTS[key] = np.arange(0, N * V, V)
    return _CONSTANTS[key]


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


def _flat(params, cfg):
    """The flat buffer behind params when it has model_config's layout (init_params, pack_params), else a copy
    in that layout: the engine reads the fused attn_wq | attn_wk | attn_wv matrix from it."""
    flat = laid_out(params, cfg)
    return flat if flat is not None else flat_buffer(pack_params(params, cfg))


# --------------------------------------------------------------------------- fused twins

def rmsnorm_fused(x):
    """utils.rmsnorm_np on rows, keeping its factor: y = x r, r = (mean(x^2) + 1e-5)^(-1/2) of shape (N, 1)."""
    r = _dot_rows(x, x)
    r *= 1.0 / x.shape[-1]
    r += EPS_RMS
    r **= -0.5
    return x * r, r


def rmsnorm_fused_backward(dy, y, r):
    """utils.rmsnorm_np_backward from the forward's output y = x r and r:
    dx = r dy - r^3 x mean(dy x) = r (dy - y mean(dy y))."""
    c = _dot_rows(dy, y)
    c *= 1.0 / y.shape[-1]
    dx = y * c
    np.subtract(dy, dx, out=dx)
    dx *= r
    return dx


def l2_normalize_fused(x):
    """sphere.l2_normalize_np along the last axis, keeping what its backward needs:
    (y, den, unclamped) with y = x / den, den = max(|x|, eps), unclamped = |x| >= eps per row, or None when no
    row is clamped (the usual case: one check instead of two operations here and one in the backward pass)."""
    n = np.sqrt(_dot_rows(x, x))
    unclamped = None
    if n.ravel()[n.argmin()] < EPS_NORM:  # the smallest norm: ~1.5 us less than n.min(), 1-2% of a sphere step
        unclamped = n >= EPS_NORM
        np.maximum(n, EPS_NORM, out=n)
    return x / n, n, unclamped


def l2_normalize_fused_backward(dy, y, den, unclamped, out=None):
    """sphere.l2_normalize_np_backward from the forward's results: dx = (dy - y (y . dy)) / |x|, and where the
    norm was clamped (den = eps, a constant) dx = dy / eps: the projection term is switched off there.
    out: where to write dx (may be dy itself); by default a new array."""
    s = _dot_rows(y, dy)
    if unclamped is not None:
        s *= unclamped
    t = y * s
    dx = np.subtract(dy, t, out=t if out is None else out)
    dx /= den
    return dx


def attention_np(q, k, v, scale, bias):
    """Causal attention on (B, H, T, hd) arrays: softmax(q k^T * scale + bias) v, bias = the causal mask
    (0 or -inf, _causal_bias). Returns (output, weights); the softmax is utils.softmax_np, in place."""
    att = q @ k.swapaxes(-1, -2)
    att *= scale
    att += bias
    att -= att.max(axis=-1, keepdims=True)
    np.exp(att, out=att)
    att /= att.sum(axis=-1, keepdims=True)
    return att @ v, att


def attention_np_backward(dy, q, k, v, att, scale, out):
    """y = W v, W = softmax(q k^T scale + bias): writes dq, dk, dv into out[0], out[1], out[2] (masked weights
    are 0, so they pass nothing back); the softmax backward is utils.softmax_np_backward, times scale."""
    datt = dy @ v.swapaxes(-1, -2)
    np.matmul(att.swapaxes(-1, -2), dy, out=out[2])
    datt -= _dot_rows(datt, att)
    datt *= att
    datt *= scale
    np.matmul(datt, k, out=out[0])
    np.matmul(datt.swapaxes(-1, -2), q, out=out[1])
    return out


def _split_qkv(qkv, B, T, H):
    """(N, 3C) -> q, k, v of shape (B, H, T, hd) each (views)."""
    return qkv.reshape(B, T, 3, H, -1).transpose(2, 0, 3, 1, 4)


def _heads(x):
    """(B, T, H, hd) -> (B, H, T, hd), the layout attention works in (a view)."""
    return x.transpose(0, 2, 1, 3)


def _merge_heads(y, N):
    """(B, H, T, hd) -> (N, C)."""
    return y.transpose(0, 2, 1, 3).reshape(N, -1)


# --------------------------------------------------------------------------- forward

def forward_np(params, tokens, cfg):
    """Logits for every position of every sequence, and the cache the backward pass (and notebooks) need.

    tokens: input ids, 1-D (T,), 2-D (B, T) or a list of id lists (right-padded). Returns
    (logits, cache): logits (B, T, V), or (T, V) for 1-D input. cache["attn"][layer] are the attention
    weights (B, n_head, T, T); cache["hidden"] the residual stream (B, T, C) after the embedding and
    after each attention and MLP block (unit vectors in sphere mode).

    What else the cache keeps, each entry named for what it holds (rows are positions, N = B * T):
      rmsnorm  emb_norm, emb_inv_rms       rmsnorm(wte[token] + wpe[pos]) and its 1/rms factor (N, 1)
               layers[l]: attn_norm, attn_inv_rms (q | k | v's input), q, k, v (B, H, T, hd), attn_weights,
               attn_heads (the heads' outputs side by side, attn_wo's input), mlp_norm, mlp_inv_rms,
               mlp_preact (fc1's output), mlp_act (relu of it);  x_final (lm_head's input)
      sphere   emb_unit (unit rows, norms, unclamped rows), eff_scales and deff_dstored (nGPT's scales at
               their effective size, and d effective / d stored), logit_cosines (before s_z), h_final;
               layers[l]: attn_in, s_qk, qk_unit (unit q | k with norms), q_unit, k_unit, q, k, v,
               attn_weights, attn_heads, attn_residual, mlp_in, s_u, mlp_cosines (fc1's output before
               s_u), mlp_preact, mlp_act, mlp_residual (what sphere_residual_np keeps)
    """
    idx = _token_array(tokens, cfg)
    squeeze = idx.ndim == 1
    logits, cache = _forward(params, np.atleast_2d(idx), cfg)
    shape = cache["idx"].shape
    logits = logits.reshape(shape + (cfg.vocab_size,))
    cache["hidden"] = [h.reshape(shape + (cfg.n_embd,)) for h in cache["hidden"]]
    return (logits[0] if squeeze else logits), cache


def _forward(params, idx, cfg):
    """forward_np for a checked (B, T) id array; logits as (N, V)."""
    flat = _flat(params, cfg)
    logits, cache = (_forward_sphere_np if cfg.norm == "sphere" else _forward_rmsnorm_np)(params, flat, idx, cfg)
    cache["flat"] = flat
    return logits, cache


def _embed(params, idx):
    """wte[token] + wpe[position] for every position: (N, C)."""
    B, T = idx.shape
    x = params["wte"].take(idx.reshape(B * T), axis=0)  # .take, not wte[ids]: with the backward's, ~3% of a step
    xb = x.reshape(B, T, -1)
    xb += params["wpe"][:T]
    return x


def _forward_rmsnorm_np(params, flat, idx, cfg):
    B, T = idx.shape
    N, H = B * T, cfg.n_head
    x0 = _embed(params, idx)
    x, inv_rms = rmsnorm_fused(x0)
    bias, scale = _causal_bias(T, x.dtype), cfg.head_dim ** -0.5
    cache = {"idx": idx, "emb_norm": x, "emb_inv_rms": inv_rms, "layers": [], "attn": [], "hidden": [x]}
    for li in range(cfg.n_layer):
        p = f"layer{li}."
        c = {}
        # attention block: x_mid = x + wo(attention(q, k, v)), q | k | v = rmsnorm(x) [wq | wk | wv]^T
        c["attn_norm"], c["attn_inv_rms"] = xn, _ = rmsnorm_fused(x)
        c["q"], c["k"], c["v"] = q, k, v = _split_qkv(xn.dot(stacked(flat, cfg, p + "attn_wq", 3).T), B, T, H)
        y, c["attn_weights"] = attention_np(q, k, v, scale, bias)
        c["attn_heads"] = y = _merge_heads(y, N)  # the heads' outputs side by side: attn_wo's input
        x_mid = x + y.dot(params[p + "attn_wo"].T)
        # MLP block: x_out = x_mid + fc2(relu(fc1(rmsnorm(x_mid))))
        c["mlp_norm"], c["mlp_inv_rms"] = xn2, _ = rmsnorm_fused(x_mid)
        c["mlp_preact"] = u = xn2.dot(params[p + "mlp_fc1"].T)
        c["mlp_act"] = a = np.maximum(u, 0.0)
        x = x_mid + a.dot(params[p + "mlp_fc2"].T)
        cache["layers"].append(c)
        cache["attn"].append(c["attn_weights"])
        cache["hidden"] += [x_mid, x]
    cache["x_final"] = x  # lm_head's input
    return x.dot(params["lm_head"].T), cache


def _forward_sphere_np(params, flat, idx, cfg):
    B, T = idx.shape
    N, H = B * T, cfg.n_head
    h, den, ok = l2_normalize_fused(_embed(params, idx))
    bias, scale = _causal_bias(T, h.dtype), cfg.head_dim ** 0.5
    # nGPT's scales, stored small, at the effective size the forward pass uses (model_config.effective_scales):
    # all of them at once, as one vector (model_config.scale_layout), then a slice for each
    start, mult, sign_offset, where = scale_layout(cfg)
    tail = flat[start:]
    # effective = stored * mult, and |stored| * mult for the alphas: stored * (-mult) where an alpha is negative.
    # That factor is also d effective / d stored (sign +1 at 0, as gpt_sphere's _abs), kept for the backward pass.
    # sign_offset (0 at the alphas, +inf elsewhere) makes it +mult for the rest and at -0.0 (-0.0 + 0.0 = +0.0):
    # two operations, ~2.5% of a sphere step less than np.where((tail < 0) & is_alpha, -mult, mult)
    deff_dstored = np.copysign(mult, tail + sign_offset).astype(flat.dtype, copy=False)  # (f32 stays f32)
    eff = tail * deff_dstored
    cache = {"idx": idx, "emb_unit": (h, den, ok), "layers": [], "attn": [], "hidden": [h], "eff_scales": eff,
             "deff_dstored": deff_dstored}
    for li in range(cfg.n_layer):
        p = f"layer{li}."
        c = {"attn_in": h}
        # attention: q and k of each head are unit vectors times s_qk (a scaled cosine), sqrt(head_dim) scale
        c["s_qk"] = sqk = eff[where[p + "attn_sqk"]].reshape(H, -1)  # (H, hd): per head and dimension
        qkv = h.dot(stacked(flat, cfg, p + "attn_wq", 3).T).reshape(B, T, 3, H, -1)  # per position q | k | v, by head
        c["qk_unit"] = qkn, _, _ = l2_normalize_fused(qkv[:, :, :2])  # every head's q and k at once
        qk = qkn * sqk
        c["q_unit"], c["k_unit"] = _heads(qkn[:, :, 0]), _heads(qkn[:, :, 1])
        c["q"], c["k"], c["v"] = q, k, v = _heads(qk[:, :, 0]), _heads(qk[:, :, 1]), _heads(qkv[:, :, 2])
        y, c["attn_weights"] = attention_np(q, k, v, scale, bias)
        c["attn_heads"] = y = _merge_heads(y, N)
        h, c["attn_residual"] = sphere_residual_np(h, y.dot(params[p + "attn_wo"].T), eff[where[p + "attn_alpha"]])
        c["mlp_in"] = h
        # MLP, its hidden pre-activation scaled by s_u (times sqrt(C), since the inputs are unit vectors)
        c["s_u"] = su = eff[where[p + "mlp_su"]]
        c["mlp_cosines"] = u_raw = h.dot(params[p + "mlp_fc1"].T)  # unit h with unit fc1 rows
        c["mlp_preact"] = u = u_raw * su
        c["mlp_act"] = a = np.maximum(u, 0.0)
        h, c["mlp_residual"] = sphere_residual_np(h, a.dot(params[p + "mlp_fc2"].T), eff[where[p + "mlp_alpha"]])
        cache["layers"].append(c)
        cache["attn"].append(c["attn_weights"])
        cache["hidden"] += [c["mlp_in"], h]
    cache["h_final"] = h
    lm = h.dot(params["lm_head"].T)  # cosines with the unit lm_head rows
    cache["logit_cosines"] = lm.reshape(B, T, -1)
    return lm * eff[where["sz"]], cache


def sphere_residual_np(h, h_block, alpha):
    """h <- Norm(Norm(h) + alpha (Norm(h_block) - Norm(h))) for unit rows h, with the effective alpha
    (|attn_alpha| * alpha_init / base). Returns the new h and what the backward pass needs.

    In the engine h is always the output of a normalization, so Norm(h) = h up to rounding and is not computed
    again (gpt_sphere does compute it). The forward pass changes by ~1e-16; the gradient by nothing beyond
    rounding: Norm(h)'s backward would project the gradient onto the tangent space at h, and the normalization
    that produced h applies that same projection to everything that reaches h; projecting twice is projecting
    once. tests/test_numpy_engine.py checks the whole engine against one that normalizes h, to 1e-12.
    """
    bn, bden, bok = l2_normalize_fused(h_block)
    step = bn - h
    r = step * alpha
    r += h
    out, rden, rok = l2_normalize_fused(r)
    return out, {"alpha": alpha, "step": step, "block_unit": (bn, bden, bok), "out_unit": (out, rden, rok)}


def sphere_residual_np_backward(dout, c, dalpha):
    """(dh, dh_block) of sphere_residual_np; writes the gradient of the effective alpha into dalpha.
    r = h + alpha (bn - h)."""
    dr = l2_normalize_fused_backward(dout, *c["out_unit"])
    _dot_columns(dr, c["step"], out=dalpha)
    db = dr * c["alpha"]
    dr -= db  # dh = dr (1 - alpha)
    l2_normalize_fused_backward(db, *c["block_unit"], out=db)
    return dr, db


# --------------------------------------------------------------------------- backward

def backward_np(dlogits, cache, params, cfg, out=None):
    """Gradient of a scalar loss w.r.t. every parameter, given dloss/dlogits (B, T, V) and the cache.
    out: a grads dict made by alloc_params to write into (train reuses one); by default a new one."""
    if out is None:
        gflat, out = alloc_params(cfg, params["wte"].dtype)
    else:
        gflat = out["wte"].base  # alloc_params' buffer (flat_buffer(out) would check every view, every step)
        if gflat is None or gflat.size != param_offsets(cfg)[1]:
            gflat = flat_buffer(out)
    dlogits = dlogits.reshape(-1, cfg.vocab_size)
    backward = _backward_sphere_np if cfg.norm == "sphere" else _backward_rmsnorm_np
    backward(dlogits, cache, params, cache["flat"], out, gflat, cfg)
    return out


def _embedding_backward(dx0, idx, gflat, cfg):
    """wte: one-hot(tokens)^T dx0 (a token used twice collects both gradients, unused rows get 0); wpe: the same
    with one-hot(positions) (positions beyond T get 0). wte | wpe lie back to back at the start of the flat buffer,
    so both are one product into that (V + block_size, C) block: [one-hot(token) | one-hot(position)]^T dx0."""
    B, T = idx.shape
    V, rows = cfg.vocab_size, cfg.vocab_size + cfg.block_size
    hot = _one_hot(rows, dx0.dtype).take(idx.reshape(-1), axis=0)  # a 1 in each row's token column (.take: _embed)
    hot += _position_one_hot(B, T, V, cfg.block_size, dx0.dtype)     # and one in its position's column
    np.dot(hot.T, dx0, out=gflat[:rows * cfg.n_embd].reshape(rows, cfg.n_embd))


def _backward_rmsnorm_np(dlogits, cache, params, flat, grads, gflat, cfg):
    B, T = cache["idx"].shape
    N, scale = B * T, cfg.head_dim ** -0.5
    dx = dlogits.dot(params["lm_head"])
    np.dot(dlogits.T, cache["x_final"], out=grads["lm_head"])
    for li in reversed(range(cfg.n_layer)):
        p, c = f"layer{li}.", cache["layers"][li]
        # MLP block: x_out = x_mid + fc2(relu(fc1(rmsnorm(x_mid))))
        da = dx.dot(params[p + "mlp_fc2"])
        np.dot(dx.T, c["mlp_act"], out=grads[p + "mlp_fc2"])
        da *= c["mlp_preact"] > 0.0
        dxn2 = da.dot(params[p + "mlp_fc1"])
        np.dot(da.T, c["mlp_norm"], out=grads[p + "mlp_fc1"])
        dx += rmsnorm_fused_backward(dxn2, c["mlp_norm"], c["mlp_inv_rms"])
        # attention block: x_mid = x_in + wo(attention(q, k, v)), q | k | v = rmsnorm(x_in) [wq | wk | wv]^T
        dy = dx.dot(params[p + "attn_wo"])
        np.dot(dx.T, c["attn_heads"], out=grads[p + "attn_wo"])
        dqkv = np.empty((N, 3 * cfg.n_embd), dtype=dx.dtype)  # dq | dk | dv, laid out as qkv
        attention_np_backward(_heads(dy.reshape(B, T, cfg.n_head, -1)), c["q"], c["k"], c["v"], c["attn_weights"],
                              scale, _split_qkv(dqkv, B, T, cfg.n_head))
        dxn = dqkv.dot(stacked(flat, cfg, p + "attn_wq", 3))
        np.dot(dqkv.T, c["attn_norm"], out=stacked(gflat, cfg, p + "attn_wq", 3))
        dx += rmsnorm_fused_backward(dxn, c["attn_norm"], c["attn_inv_rms"])
    _embedding_backward(rmsnorm_fused_backward(dx, cache["emb_norm"], cache["emb_inv_rms"]), cache["idx"], gflat, cfg)


def _backward_sphere_np(dlogits, cache, params, flat, grads, gflat, cfg):
    B, T = cache["idx"].shape
    N, H, scale = B * T, cfg.n_head, cfg.head_dim ** 0.5
    start, _, _, where = scale_layout(cfg)
    eff = cache["eff_scales"]
    deff = gflat[start:]  # first the gradients of the effective scales, turned into the stored ones at the end
    _dot_columns(dlogits, cache["logit_cosines"].reshape(N, -1), out=deff[where["sz"]])
    dlm = dlogits * eff[where["sz"]]
    dh = dlm.dot(params["lm_head"])
    np.dot(dlm.T, cache["h_final"], out=grads["lm_head"])
    for li in reversed(range(cfg.n_layer)):
        p, c = f"layer{li}.", cache["layers"][li]
        # MLP residual step and block
        dh, dh_mlp = sphere_residual_np_backward(dh, c["mlp_residual"], deff[where[p + "mlp_alpha"]])
        da = dh_mlp.dot(params[p + "mlp_fc2"])
        np.dot(dh_mlp.T, c["mlp_act"], out=grads[p + "mlp_fc2"])
        da *= c["mlp_preact"] > 0.0
        _dot_columns(da, c["mlp_cosines"], out=deff[where[p + "mlp_su"]])
        da *= c["s_u"]
        dh += da.dot(params[p + "mlp_fc1"])
        np.dot(da.T, c["mlp_in"], out=grads[p + "mlp_fc1"])
        # attention residual step and block
        dh, dh_attn = sphere_residual_np_backward(dh, c["attn_residual"], deff[where[p + "attn_alpha"]])
        dy = dh_attn.dot(params[p + "attn_wo"])
        np.dot(dh_attn.T, c["attn_heads"], out=grads[p + "attn_wo"])
        dqkv = np.empty((N, 3 * cfg.n_embd), dtype=dh.dtype)  # dq_raw | dk_raw | dv, laid out as qkv
        attention_np_backward(_heads(dy.reshape(B, T, H, -1)), c["q"], c["k"], c["v"], c["attn_weights"], scale,
                              _split_qkv(dqkv, B, T, H))
        # q = qn * s_qk, k = kn * s_qk: s_qk's gradient, then back through both normalizations at once
        dqk = dqkv.reshape(B, T, 3, H, -1)[:, :, :2]
        (dqk * c["qk_unit"][0]).sum(axis=(0, 1, 2), out=deff[where[p + "attn_sqk"]].reshape(H, -1))
        dqk *= c["s_qk"]
        l2_normalize_fused_backward(dqk, *c["qk_unit"], out=dqk)
        dh += dqkv.dot(stacked(flat, cfg, p + "attn_wq", 3))
        np.dot(dqkv.T, c["attn_in"], out=stacked(gflat, cfg, p + "attn_wq", 3))
    _embedding_backward(l2_normalize_fused_backward(dh, *cache["emb_unit"]), cache["idx"], gflat, cfg)
    deff *= cache["deff_dstored"]  # the stored scales' gradients


# --------------------------------------------------------------------------- loss

def make_batch(docs_tokens, block_size):
    """Pad docs to the longest: inputs, targets (B, T) and a mask of the positions that are predicted."""
    ns = [min(block_size, len(t) - 1) for t in docs_tokens]
    inputs = np.zeros((len(docs_tokens), max(ns)), dtype=np.int64)
    targets, mask = np.zeros_like(inputs), np.zeros(inputs.shape, dtype=bool)
    for b, (tokens, n) in enumerate(zip(docs_tokens, ns)):
        inputs[b, :n], targets[b, :n], mask[b, :n] = tokens[:n], tokens[1:n + 1], True
    return inputs, targets, mask


def cross_entropy_fused(logits, targets, weights=None):
    """utils.cross_entropy_np and its backward in one pass over (N, V) logits: returns (loss, dlogits).
    weights (N,): each position's share of the loss (1/count, 0 for padding); None: the plain mean."""
    N, V = logits.shape
    at = _row_starts(N, V) + targets  # each target in the flat view: 1-D indexing, not [rows, targets], ~2.5% of a step
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1)
    nll = np.log(s)
    nll -= z.take(at)
    e /= s[:, None]  # softmax(logits), and from here dlogits = (softmax - onehot(targets)) * weight
    e.reshape(-1)[at] -= 1.0
    if weights is None:
        e *= 1.0 / N
        return float(nll.sum() / N), e
    e *= weights[:, None]
    return float(nll.dot(weights)), e


def _batch(docs_tokens, block_size):
    """make_batch as the training step needs it: inputs, targets and per-position loss weights (None when
    nothing is padding, e.g. at batch 1, the default, which takes a shortcut)."""
    if len(docs_tokens) == 1:
        t = docs_tokens[0]
        ids = np.array(t[:min(block_size, len(t) - 1) + 1])
        return ids[None, :-1], ids[None, 1:], None
    inputs, targets, mask = make_batch(docs_tokens, block_size)
    return inputs, targets, None if mask.all() else (mask / mask.sum()).reshape(-1)


def loss_and_grads_np(params, docs_tokens, cfg, out=None):
    """The mean next-token NLL over all predicted positions of the batch, and its gradient (into `out`, a grads
    dict from alloc_params, when given). docs_tokens are checked by microgpt.loss_and_grads."""
    inputs, targets, weights = _batch(docs_tokens, cfg.block_size)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # overflow shows as a non-finite result,
        logits, cache = _forward(params, inputs, cfg)                      # which training checks (and reports)
        if weights is not None:
            weights = weights.astype(logits.dtype)
        loss, dlogits = cross_entropy_fused(logits, targets.reshape(-1), weights)
        return loss, backward_np(dlogits, cache, params, cfg, out)


def evaluate(params, docs_tokens, cfg):
    """Mean NLL over all predicted positions of docs_tokens (NumPy engine, no gradients), in chunks of
    model_config.chunk_rows(cfg) documents so that memory stays bounded."""
    total, count, chunk = 0.0, 0, chunk_rows(cfg)
    for i in range(0, len(docs_tokens), chunk):
        inputs, targets, mask = make_batch(docs_tokens[i:i + chunk], cfg.block_size)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # (overflow: a non-finite result)
            logits, _ = forward_np(params, inputs, cfg)
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


# --------------------------------------------------------------------------- sampling (microgpt.iter_samples)

GREEDY_BELOW = 1e-100  # a temperature below this samples the argmax (see too_cold)


def too_cold(logits, temperature):
    """True (per row of logits) where the sampling distribution is taken as the argmax: below GREEDY_BELOW, or
    where logits / T, or its derivative logits / T^2 that the Value engine computes, would overflow. There
    softmax(logits / T) is one-hot in float64 anyway (unless two logits tie to within T * 745).
    Logits that are not finite numbers are an InputError: such a model cannot be sampled from."""
    logits = np.asarray(logits, dtype=np.float64)
    if not np.isfinite(logits).all():
        raise InputError("the model's logits are not finite numbers (its weights are too large for float64 "
                         f"arithmetic, max |logit| {np.abs(logits).max():.3g}): it cannot be sampled from")
    with np.errstate(over="ignore"):
        return (temperature < GREEDY_BELOW) | ~np.isfinite(np.abs(logits).max(axis=-1) / temperature / temperature)


def draw(probs, u):
    """Inverse-CDF draw (like random.choices): the first token whose cumulative probability reaches u.
    probs (..., V), u (...) in [0, 1); the same arithmetic for one sample or a batch."""
    probs = np.asarray(probs)
    return np.minimum((np.cumsum(probs, axis=-1) < np.expand_dims(u, -1)).sum(axis=-1), probs.shape[-1] - 1)


SAMPLE_CHUNK = 1024  # samples_np advances at most this many names at once (fewer for a big model)


def samples_np(params, cfg, prefix, temperature, num_samples, rng):
    """microgpt.sample_value's loop on arrays: the token ids (after BOS) of num_samples names, one at a time,
    computed a chunk at a time (model_config.chunk_rows: memory stays bounded, whatever num_samples is). The
    uniform numbers are rows of rng.random, in order, exactly as the Value engine draws them."""
    rows = chunk_rows(cfg, most=SAMPLE_CHUNK)
    for start in range(0, num_samples, rows):
        yield from sample_np(params, cfg, prefix, temperature, rng.random((min(rows, num_samples - start),
                                                                          cfg.block_size)))


def sample_np(params, cfg, prefix, temperature, u):
    """len(u) names at once: each forward_np call advances all of them by one position; row i draws its token at
    position p with u[i, p]. Returns each name's token ids after BOS."""
    n, bos = len(u), cfg.vocab_size - 1
    tokens = np.array([[bos] + list(prefix)] * n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    while tokens.shape[1] <= cfg.block_size and not done.all():
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # (too_cold refuses non-finite logits)
            logits, _ = forward_np(params, tokens, cfg)
        z = logits[:, -1].astype(np.float64)
        pos = tokens.shape[1] - 1  # the position whose prediction is drawn now
        cold = too_cold(z, temperature)
        with np.errstate(over="ignore", invalid="ignore"):  # (overflowing rows are the cold ones: argmax there)
            token_id = np.where(cold, z.argmax(axis=1), draw(softmax_np(z / temperature), u[:, pos]))
        token_id[done] = bos
        done |= token_id == bos
        tokens = np.concatenate([tokens, token_id[:, None]], axis=1)
    return [row.tolist() for row in tokens[:, 1:]]


gpt_forward, gpt_backward = forward_np, backward_np  # TEMPORARY: the engine branch renames them
