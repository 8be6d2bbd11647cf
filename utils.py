"""utils.py -- chapter 21: the microgpt utility functions linear / softmax / rmsnorm.

Each scalar function below is the chapter's code line for line (microgpt.py
L129-L144), operating on lists of `Value`s so every gradient can be followed
through the graph. Beside each one sits its NumPy *twin*, in the llm.c /
cs231n style: a forward on float64 arrays with any leading batch dims
(the function acts on the last axis) and an explicit `*_backward` that takes
the output gradient and returns the input (and weight) gradients. The NumPy
GPT engine (numpy_engine.py) is built from these twins: a forward may also
return what its backward reads (rmsnorm_np's 1/rms factor), so the backward
does not compute it again. tests/test_utils.py proves each twin equals its
scalar version to float64 precision, forward and backward; a stable cross-entropy
twin (log-softmax + NLL) closes the file.
"""
import numpy as np

# --------------------------------------------------------------------------- linear


# chapter 21.1.1, microgpt.py L129-L131
def linear(x, w):
    """Linear map y = Wx: output vector from input x and weights w (w is [out][in])."""
    if set(map(len, w)) - {len(x)}:  # zip() would silently drop the extra entries
        raise ValueError(f"linear: x has {len(x)} entries but the rows of w have "
                         f"{sorted(set(map(len, w)))} "
                         "(w is [out][in]: every row needs len(x) weights)")
    return [sum(wi * xi for wi, xi in zip(wo, x)) for wo in w]


def linear_np(x, w):
    """Twin of `linear`: y = x @ w.T, x shaped (..., in), w (out, in) -> (..., out)."""
    if w.ndim != 2 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"linear_np: x.shape {x.shape} does not match w.shape {w.shape} "
                         "(need x.shape[-1] == w.shape[1], w of shape (out, in))")
    return x @ w.T


def linear_np_backward(dy, x, w):
    """Gradients of y = x @ w.T.

    y[..., o] = sum_i w[o, i] x[..., i], so
        dx[..., i] = sum_o dy[..., o] w[o, i]           ->  dx = dy @ w
        dw[o, i]   = sum_{batch} dy[..., o] x[..., i]   ->  dw = dy^T x
    (the rows of all leading dims stacked)
    Returns (dx, dw).
    """
    if dy.shape != x.shape[:-1] + (w.shape[0],):
        raise ValueError(f"linear_np_backward: dy.shape {dy.shape} does not match the output shape "
                         f"{x.shape[:-1] + (w.shape[0],)} of x.shape {x.shape} @ w.T (w.shape "
                         f"{w.shape})")
    dx = dy @ w
    # Flatten leading dims into one batch axis (a view): one GEMM sums over all of them.
    dw = dy.reshape(-1, dy.shape[-1]).T @ x.reshape(-1, x.shape[-1])
    return dx, dw


# --------------------------------------------------------------------------- softmax


# chapter 21.1.2, microgpt.py L133-L138
def softmax(logits):
    """Softmax: logits into probabilities (the max subtracted before exp)."""
    if not logits:
        raise ValueError("softmax: the list of logits is empty (length 0); a distribution needs at "
                         "least one")
    max_val = max(val.data for val in logits)
    exps = [(val - max_val).exp() for val in logits]
    total = sum(exps)
    return [e / total for e in exps]


def softmax_np(logits):
    """Twin of `softmax` over the last axis (the max is a constant: `.data` there)."""
    if logits.shape[-1] == 0:
        raise ValueError(f"softmax_np: the last axis is empty (shape {logits.shape}); a "
                         "distribution needs an entry")
    e = logits - logits.max(axis=-1, keepdims=True)  # fresh array: safe to overwrite in place
    np.exp(e, out=e)
    e /= e.sum(axis=-1, keepdims=True)
    return e


def softmax_np_backward(dprobs, probs):
    """Gradient of p = softmax(z) along the last axis, given p (the forward output).

    dp_i/dz_j = p_i (delta_ij - p_j), so
        dz_j = sum_i dp_i p_i (delta_ij - p_j) = p_j (dp_j - sum_i dp_i p_i)
    (The subtracted max has zero gradient: softmax is shift invariant.)
    """
    if dprobs.shape != probs.shape:
        raise ValueError(f"softmax_np_backward: dprobs.shape {dprobs.shape} != probs.shape "
                         f"{probs.shape}")
    dz = dprobs - np.vecdot(dprobs, probs)[..., None]  # sum_i dp_i p_i, one row-wise dot product
    dz *= probs
    return dz


# --------------------------------------------------------------------------- rmsnorm


# chapter 21.1.3, microgpt.py L140-L144
def rmsnorm(x):
    """RMSNorm: divide by the root mean square (LayerNorm without the mean)."""
    if not x:
        raise ValueError("rmsnorm: the vector is empty (length 0); its mean square is undefined")
    ms = sum(xi * xi for xi in x) / len(x)
    scale = (ms + 1e-5) ** -0.5
    return [xi * scale for xi in x]


def rmsnorm_np(x, return_inv_rms=False):
    """Twin of `rmsnorm` over the last axis: y = x * r, r = (mean(x^2) + 1e-5) ** -0.5.
    return_inv_rms: also return r (..., 1), for the backward to take, not recompute."""
    if x.shape[-1] == 0:
        raise ValueError(f"rmsnorm_np: the last axis is empty (shape {x.shape}); its mean square "
                         "is undefined")
    ms = np.vecdot(x, x)[..., None] / x.shape[-1]  # mean(x^2) as one row-wise dot product
    inv_rms = (ms + 1e-5) ** -0.5
    y = x * inv_rms
    return (y, inv_rms) if return_inv_rms else y


def rmsnorm_np_backward(dy, x, inv_rms=None):
    """Gradient of y = x * s, s = (m + eps)^(-1/2), m = mean(x^2) over the last axis.

    ds/dx_j = -1/2 (m + eps)^(-3/2) * 2 x_j / n = -s^3 x_j / n (n: the axis length), so
        dx_j = s dy_j + sum_i dy_i x_i ds/dx_j = s dy_j - s^3 x_j mean(dy * x)
    inv_rms: s as rmsnorm_np(x, return_inv_rms=True) returned it; by default recomputed.
    """
    if dy.shape != x.shape:
        raise ValueError(f"rmsnorm_np_backward: dy.shape {dy.shape} != x.shape {x.shape}")
    n = x.shape[-1]
    s = (np.vecdot(x, x)[..., None] / n + 1e-5) ** -0.5 if inv_rms is None else inv_rms
    c = s * s * s * (np.vecdot(dy, x)[..., None] / n)
    dx = s * dy
    dx -= c * x
    return dx


# ---------------------------------------------------------------------- cross entropy


def _check_targets(logits, targets, name):
    """targets as an int array with shape logits.shape[:-1] and values in [0, vocab)."""
    targets = np.asarray(targets)
    if targets.shape != logits.shape[:-1]:
        raise ValueError(f"{name}: targets.shape {targets.shape} must equal logits.shape[:-1] "
                         f"(logits.shape {logits.shape})")
    if targets.size == 0:
        raise ValueError(f"{name}: empty batch (logits.shape {logits.shape}); the mean loss is "
                         "undefined")
    if not np.issubdtype(targets.dtype, np.integer):
        raise ValueError(f"{name}: targets must be integers, got dtype {targets.dtype}")
    vocab = logits.shape[-1]
    if targets.min() < 0 or targets.max() >= vocab:
        raise ValueError(f"{name}: targets must be in [0, {vocab}), got values in "
                         f"[{targets.min()}, {targets.max()}]")
    return targets


def cross_entropy_np(logits, targets):
    """Mean negative log-likelihood of integer targets under softmax(logits).

    Scalar counterpart: mean of -softmax(logits)[t].log(). As a stable log-softmax,
        -log p_t = logsumexp(z) - z_t,  logsumexp(z) = m + log(sum(exp(z - m))),
    m = max(z), so huge logits never overflow and a tiny p_t never becomes log(0).
    logits: (..., V) float64; targets: int array of shape (...). Returns a python float.
    """
    targets = _check_targets(logits, targets, "cross_entropy_np")
    shifted = logits - logits.max(axis=-1, keepdims=True)  # z - m, a fresh array
    # (N, V): all leading positions in one axis (a view)
    shifted = shifted.reshape(-1, shifted.shape[-1])
    z_t = shifted[np.arange(shifted.shape[0]), targets.ravel()]  # z_t - m: row n, column targets[n]
    # logsumexp(z) - m; shifted is ours to overwrite
    lse = np.log(np.exp(shifted, out=shifted).sum(axis=-1))
    return float((lse - z_t).sum() / lse.size)  # the mean (np.mean costs more on tiny arrays)


def cross_entropy_np_backward(logits, targets, dloss=1.0):
    """Gradient of loss = mean_n (logsumexp(z_n) - z_n[t_n]) w.r.t. logits.

    d/dz_j (logsumexp(z) - z_t) = softmax(z)_j - [j == t]; the mean divides by N:
        dlogits = (softmax(logits) - onehot(targets)) * dloss / N
    """
    targets = _check_targets(logits, targets, "cross_entropy_np_backward")
    d = softmax_np(logits)  # fresh contiguous array, edited in place below
    flat = d.reshape(-1, d.shape[-1])  # a view
    flat[np.arange(flat.shape[0]), targets.ravel()] -= 1.0
    d *= dloss / flat.shape[0]
    return d
