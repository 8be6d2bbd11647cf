"""numpy_engine_unfused.py -- the NumPy engine as it was before it was fused for speed: every op a
twin from utils.py / sphere.py, composed as the formulas read (three matmuls for q, k, v; each normalization's
backward recomputes its norm; `@` everywhere).

Two uses: benchmarks/bench.py times it beside numpy_engine.py (the "before" of the batch-1 rows, measured in
the same run), and tests/test_numpy_engine.py proves the fused engine equal to it to 1e-12. It is not used
by microgpt.py.
"""
import numpy as np

from model_config import alloc_params
from numpy_engine import _token_array, make_batch  # (input handling, unchanged by the fusing)
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

# --------------------------------------------------------------------------- forward

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


def attention_np(q, k, v, scale):
    """Causal attention on (B, H, T, hd) arrays: softmax(q k^T * scale) v."""
    T = q.shape[2]
    logits = (q @ k.transpose(0, 1, 3, 2)) * scale
    weights = softmax_np(np.where(_causal_mask(T), logits, -np.inf))  # masked: exp(-inf) = 0 exactly
    return weights @ v, weights


def attention_np_backward(dy, q, k, v, weights, scale):
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
        y, c["weights"] = attention_np(q, k, v, cfg.head_dim ** -0.5)
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
        y, c["weights"] = attention_np(q, k, v, cfg.head_dim ** 0.5)
        c["y"] = y = _merge_heads(y)
        c["h_attn"] = h_attn = linear_np(y, params[p + "attn_wo"])
        h, c["res_a"] = sphere_residual_np(h, h_attn, params[p + "attn_alpha"], cfg)
        c["h_mid"] = h
        su = params[p + "mlp_su"] * C ** 0.5
        c["u_raw"] = u_raw = linear_np(h, params[p + "mlp_fc1"])
        c["u"] = u = u_raw * su
        c["a"] = a = np.maximum(u, 0.0)
        c["h_mlp"] = h_mlp = linear_np(a, params[p + "mlp_fc2"])
        h, c["res_m"] = sphere_residual_np(h, h_mlp, params[p + "mlp_alpha"], cfg)
        cache["layers"].append(c)
        cache["attn"].append(c["weights"])
        cache["hidden"] += [c["h_mid"], h]
    cache["h_out"] = h
    cache["lm"] = lm = linear_np(h, params["lm_head"])
    return lm * (params["sz"] * (cfg.sz_init / base)), cache


def sphere_residual_np(h, h_block, alpha_param, cfg):
    """h <- Norm(Norm(h) + alpha (Norm(h_block) - Norm(h))), alpha = |alpha_param| * alpha_init / base."""
    alpha = np.abs(alpha_param) * (cfg.alpha_init * cfg.n_embd ** 0.5)
    hn, bn = l2_normalize_np(h), l2_normalize_np(h_block)
    r = hn + alpha * (bn - hn)
    return l2_normalize_np(r), {"h": h, "b": h_block, "hn": hn, "bn": bn, "r": r, "alpha": alpha}


def sphere_residual_np_backward(dout, c, alpha_param, cfg):
    """Returns (dh, dh_block, dalpha_param) of sphere_residual_np; r = (1 - alpha) hn + alpha bn."""
    dr = l2_normalize_np_backward(dout, c["r"])
    dalpha = (dr * (c["bn"] - c["hn"])).reshape(-1, dr.shape[-1]).sum(axis=0)
    dalpha_param = dalpha * (cfg.alpha_init * cfg.n_embd ** 0.5) * np.where(alpha_param >= 0, 1.0, -1.0)
    dh = l2_normalize_np_backward(dr * (1 - c["alpha"]), c["h"])
    db = l2_normalize_np_backward(dr * c["alpha"], c["b"])
    return dh, db, dalpha_param


# --------------------------------------------------------------------------- backward

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
        dq, dk, dv = attention_np_backward(_split_heads(dy, cfg.n_head), c["q"], c["k"], c["v"], c["weights"],
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
        dh, dh_mlp, grads[p + "mlp_alpha"][...] = sphere_residual_np_backward(dh, c["res_m"], params[p + "mlp_alpha"],
                                                                               cfg)
        da, grads[p + "mlp_fc2"][...] = linear_np_backward(dh_mlp, c["a"], params[p + "mlp_fc2"])
        du = da * (c["u"] > 0)
        grads[p + "mlp_su"][...] = (du * c["u_raw"]).reshape(-1, 4 * C).sum(axis=0) * C ** 0.5
        dh_in, grads[p + "mlp_fc1"][...] = linear_np_backward(du * (params[p + "mlp_su"] * C ** 0.5), c["h_mid"],
                                                              params[p + "mlp_fc1"])
        dh = dh + dh_in
        # attention residual step and block
        dh, dh_attn, grads[p + "attn_alpha"][...] = sphere_residual_np_backward(dh, c["res_a"],
                                                                                 params[p + "attn_alpha"], cfg)
        dy, grads[p + "attn_wo"][...] = linear_np_backward(dh_attn, c["y"], params[p + "attn_wo"])
        dq, dk, dv = attention_np_backward(_split_heads(dy, cfg.n_head), c["q"], c["k"], c["v"], c["weights"],
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


# --------------------------------------------------------------------------- loss

def loss_and_grads_np(params, docs_tokens, cfg):
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


# --------------------------------------------------------------------------- the update, as it was


def adam_step(flat, grad, m, v, step, num_steps, lr=0.01, beta1=0.85, beta2=0.99, eps_adam=1e-8):
    """microgpt.adam_step before the fusing: the same update with fresh arrays for every line (no in-place)."""
    lr_t = lr * (1 - step / num_steps)
    m[:] = beta1 * m + (1 - beta1) * grad
    v[:] = beta2 * v + (1 - beta2) * grad ** 2
    m_hat = m / (1 - beta1 ** (step + 1))
    v_hat = v / (1 - beta2 ** (step + 1))
    flat -= lr_t * m_hat / (v_hat ** 0.5 + eps_adam)


def retract(params, cfg):
    """microgpt.retract before the fusing: one l2_normalize_np per matrix, copied back."""
    from model_config import sphere_axes
    for key, axis in sphere_axes(cfg).items():
        params[key][...] = l2_normalize_np(params[key], axis=axis)
