"""sphere.py -- lecture 3: the unit hypersphere (nGPT, retraction, von Mises-Fisher) in NumPy.

Lecture 3 fixes every norm to 1 so that only directions carry meaning: representations live on
S^{d-1} = {x in R^d : ||x|| = 1}, similarity is the angle between two points, and a learning step
that leaves the sphere is pulled back onto it (a *retraction*). This module is the NumPy /
scalar-Value counterpart of the lecture's PyTorch snippets:

  l2_normalize                                 x / max(||x||, eps), torch.nn.functional.normalize,
  l2_normalize_np(+_backward)                  for a list of Values, and its NumPy twin with an
                                               explicit backward
  cosine_similarity(_np), geodesic_distance_np angles on the sphere
  tangent_project, retract, exp_map,           Riemannian gradient g - (g.x) x, the projection
  riemannian_sgd_step, projected_sgd_step      retraction, and the two kinds of step the lecture
                                               contrasts
  normalize_matrix                             unit rows / unit columns of a weight matrix (nGPT)
  log_bessel_iv, vmf_*                         the von Mises-Fisher distribution on S^{d-1}, d >= 2

Only NumPy and the standard library are used (no scipy): the modified Bessel function I_nu that the
vMF normalizer needs is computed here, in log space, by three classical methods (see log_bessel_iv).
"""
import math
from fractions import Fraction

import numpy as np

# --------------------------------------------------------------------------------------------------
# L2 normalization: the map from R^d \ {0} onto the sphere


def l2_normalize(x, eps=1e-12):
    """x / max(||x||, eps) for a list of Values (the semantics of torch.nn.functional.normalize).

    When ||x|| < eps the denominator is the plain constant eps, so a zero vector maps to a zero
    vector with finite gradients (1/eps); sqrt is never taken of 0 (no derivative there).
    """
    sq = sum(xi * xi for xi in x)
    if math.sqrt(getattr(sq, "data", sq)) < eps:
        return [xi / eps for xi in x]
    norm = sq.sqrt()
    return [xi / norm for xi in x]


def l2_normalize_np(x, axis=-1, eps=1e-12, return_norm=False):
    """NumPy twin of l2_normalize along `axis`: y = x / max(||x||, eps).
    return_norm: also return ||x|| (keepdims), which the backward pass can take instead of
    recomputing it."""
    n = np.sqrt(np.vecdot(x, x, axis=axis, keepdims=True))  # one call: sum(x * x) along axis
    y = x / np.maximum(n, eps)
    return (y, n) if return_norm else y


def l2_normalize_np_backward(dy, x, axis=-1, eps=1e-12, norm=None, y=None):
    """dx for y = x / n, n = ||x|| (where n >= eps).

    dy_i/dx_j = (delta_ij - y_i y_j) / n  (a projection onto the tangent space at y, times 1/n), so
        dx = (dy - y (y . dy)) / n.
    Where the norm was clamped (n < eps) the denominator is the constant eps and dx = dy / eps.
    norm, y: ||x|| and the output, as the forward pass returned them; by default recomputed.
    """
    n = np.sqrt(np.vecdot(x, x, axis=axis, keepdims=True)) if norm is None else norm
    den = np.maximum(n, eps)
    y = x / den if y is None else y
    dx = (dy - y * np.vecdot(y, dy, axis=axis, keepdims=True)) / den
    if n.min() < eps:  # (one reduction; the mask is only built when some norm was really clamped)
        dx = np.where(n < eps, dy / eps, dx)
    return dx


# --------------------------------------------------------------------------------------------------
# Angles: cosine similarity and geodesic (great-circle) distance


def cosine_similarity(u, v, eps=1e-8):
    """cos(theta) = u.v / (||u|| ||v||) for lists of Values, each norm clamped at eps (as torch)."""
    return sum(a * b for a, b in zip(l2_normalize(u, eps), l2_normalize(v, eps)))


def cosine_similarity_np(u, v, axis=-1, eps=1e-8):
    """NumPy twin of cosine_similarity along `axis` (that axis is reduced away)."""
    return np.sum(l2_normalize_np(u, axis, eps) * l2_normalize_np(v, axis, eps), axis=axis)


def cosine_similarity_np_backward(dc, u, v, axis=-1, eps=1e-8):
    """(du, dv) for c = uhat . vhat: dc/duhat = vhat, then back through the normalizations."""
    dc = np.expand_dims(dc, axis)
    uh, vh = l2_normalize_np(u, axis, eps), l2_normalize_np(v, axis, eps)
    return (l2_normalize_np_backward(dc * vh, u, axis, eps),
            l2_normalize_np_backward(dc * uh, v, axis, eps))


def geodesic_distance_np(u, v, axis=-1):
    """Great-circle distance theta = arccos(u.v) between the directions of u and v (normalized).""

    Mathematically this is arccos(clip(u.v, -1, 1)); we evaluate it as theta = 2 atan2(||u-v||,
    ||u+v||) (the chord identities ||u-v|| = 2 sin(theta/2), ||u+v|| = 2 cos(theta/2)). It never
    gives NaN, is exactly 0 for identical and exactly pi for antipodal inputs, and keeps full
    precision for tiny angles, where arccos(1 - theta^2/2) loses half of the digits.
    """
    u, v = l2_normalize_np(u, axis), l2_normalize_np(v, axis)
    dif = np.sqrt(np.sum((u - v) ** 2, axis=axis))
    tot = np.sqrt(np.sum((u + v) ** 2, axis=axis))
    return 2.0 * np.arctan2(dif, tot)


# --------------------------------------------------------------------------------------------------
# Optimization on the sphere: Riemannian gradient, retraction, and the two kinds of step


def tangent_project(x, g, axis=-1):
    """Riemannian gradient at a unit x: remove the radial part of g, grad_S = g - (g.x) x.

    The tangent space at x is {v : v.x = 0}; the radial component (g.x) x would only change ||x||.
    """
    return g - np.sum(g * x, axis=axis, keepdims=True) * x


def retract(x, axis=-1):
    """Projection retraction: map a point that left the sphere back onto it, R(x) = x / ||x||."""
    return l2_normalize_np(x, axis)


def exp_map(x, v, axis=-1):
    """Exponential map: walk ||v|| along the great circle leaving unit x in tangent direction v.

    exp_x(v) = cos(||v||) x + sin(||v||) v / ||v||. This is the exact geodesic step; the retraction
    retract(x + v) turns by atan(||v||) instead of ||v||, so it agrees to second order (error
    ||v||^3 / 3) and needs no trigonometry.
    """
    n = np.sqrt(np.sum(v * v, axis=axis, keepdims=True))
    safe = np.where(n > 0, n, 1.0)
    return np.cos(n) * x + np.sin(n) * (v / safe)


def riemannian_sgd_step(x, g, lr, axis=-1):
    """Riemannian SGD with the projection retraction: x <- R(x - lr * (g - (g.x) x)).

    The step is taken in the tangent plane, so before the retraction ||x - lr grad_S||^2 = 1 + lr^2
    ||grad_S||^2: the drift off the sphere is second order in lr.
    """
    return retract(x - lr * tangent_project(x, g, axis), axis)


def projected_sgd_step(x, g, lr, axis=-1):
    """Projected (Euclidean) SGD, the lecture's pseudo code: x <- x - lr * g, then x <- x / ||x||.

    The radial part of g also moves x, so the drift off the sphere before the projection is first
    order in lr (and it rescales the effective step); for small lr it acts like the Riemannian one.
    """
    return retract(x - lr * g, axis)


def normalize_matrix(w, axis):
    """Unit rows (axis=1, e.g. an embedding table [vocab][d]) or unit columns (axis=0) of w."""
    return l2_normalize_np(w, axis)


# --------------------------------------------------------------------------------------------------
# log I_nu(x): the modified Bessel function of the first kind, in log space, NumPy-free scalar core.
#
# Three methods, each used where it gives log I_nu to a few ulps (checked in tests/test_sphere.py
# against a 50-digit Decimal power series and the half-integer closed forms):
#   x <= 40:                  power series  I_nu(x) = (x/2)^nu / Gamma(nu+1) * sum_k r_k,
#                             r_k = prod_{j<=k} (x^2/4) / (j (j+nu)); every term positive, no
#                             cancellation.
#   x > 40 and x >= nu^2 / 2: Hankel's large-x expansion
#                             I_nu(x) ~ e^x / sqrt(2 pi x) * sum_k (-1)^k a_k(nu) / x^k,
#                             a_k = a_{k-1} (4 nu^2 - (2k-1)^2) / (8k); the first ratio is <= 1 here
#                             and the neglected exponentially small part is O(e^{-2x}) < 1e-34.
#   x > 40 and x <  nu^2 / 2: Debye's uniform expansion for large order (so nu > 8.9 here),
#                             z = x / nu,
#                             I_nu(nu z) ~ e^{nu eta} / (sqrt(2 pi nu) (1+z^2)^{1/4})
#                                          * sum_k u_k(t) / nu^k,
#                             t = 1/sqrt(1+z^2), eta = sqrt(1+z^2) + log(z / (1 + sqrt(1+z^2))).
# The large-x methods return log I_nu(x) - x (the log of the exponentially scaled I), so that x =
# 1e5 does not overflow and ratios like I_{nu+1}/I_nu keep their digits.

_SERIES_MAX_X = 40.0


def _debye_polynomials(n):
    """Coefficients (lowest power first) of Debye's u_0..u_{n-1}: exact rationals, as floats.

    u_0 = 1,  u_{k+1}(t) = 1/2 t^2 (1 - t^2) u_k'(t) + 1/8 int_0^t (1 - 5 s^2) u_k(s) ds
    (DLMF 10.41.11).
    """
    polys = [[Fraction(1)]]
    for _ in range(n - 1):
        u = polys[-1]
        new = [Fraction(0)] * (len(u) + 3)
        for p, c in enumerate(u):
            if p > 0:  # 1/2 t^2 (1 - t^2) * p c t^(p-1)
                new[p + 1] += Fraction(p, 2) * c
                new[p + 3] -= Fraction(p, 2) * c
            new[p + 1] += c / (8 * (p + 1))  # 1/8 int_0^t s^p ds
            new[p + 3] -= 5 * c / (8 * (p + 3))  # -5/8 int_0^t s^(p+2) ds
        polys.append(new)
    return [[float(c) for c in u] for u in polys]


_DEBYE_U = _debye_polynomials(16)


def _series_log_tail(nu, x):
    """log(sum_k r_k) = log1p(sum_{k>=1} r_k) of the power series (see the comment block above)."""
    q = 0.25 * x * x
    tail, term, k = 0.0, 1.0, 0
    while True:
        k += 1
        den = k * (k + nu)
        term *= q / den
        tail += term
        # terms decrease geometrically once q/den < 1/2, so the rest is below one more term
        if term <= 1e-17 * (1.0 + tail) and q < 0.5 * den:
            return math.log1p(tail)


def _log_iv_scaled(nu, x):
    """log I_nu(x) - x for x > _SERIES_MAX_X (Hankel or Debye, see above)."""
    if x >= 0.5 * nu * nu:  # Hankel
        mu4 = 4.0 * nu * nu
        s, term, k = 1.0, 1.0, 0
        while k < 500:
            k += 1
            m = (2 * k - 1) ** 2
            new = -term * (mu4 - m) / (8.0 * k * x)
            if m > mu4 and abs(new) >= abs(term):
                break  # past the optimal truncation point of the asymptotic series
            s += new
            term = new
            if abs(term) <= 1e-17 * abs(s):
                break
        return math.log(s) - 0.5 * math.log(2.0 * math.pi * x)
    z = x / nu  # Debye
    r = math.sqrt(1.0 + z * z)
    t = 1.0 / r
    # nu (eta - z), with sqrt(1+z^2) - z = 1/(sqrt(1+z^2) + z) to avoid cancellation for large z
    eta_minus_z = 1.0 / (r + z) + math.log(z / (1.0 + r))
    s, p = 0.0, 1.0
    for u in _DEBYE_U:
        term = p * _horner(u, t)
        s += term
        if abs(term) <= 1e-17 * abs(s):
            break
        p /= nu
    return nu * eta_minus_z - 0.5 * math.log(2.0 * math.pi * nu) + 0.5 * math.log(t) + math.log(s)


def _horner(coeffs, t):
    acc = 0.0
    for c in reversed(coeffs):
        acc = acc * t + c
    return acc


def _check_order_arg(name, nu, x):
    if not (nu >= 0 and math.isfinite(nu)):
        raise ValueError(f"{name}: the order nu must be a finite number >= 0 (got {nu!r})")
    if not (x >= 0 and x < math.inf):
        raise ValueError(f"{name}: the argument must be a finite number >= 0 (got {x!r})")


def _log_iv_scalar(nu, x):
    nu, x = float(nu), float(x)
    _check_order_arg("log_bessel_iv", nu, x)
    if x == 0.0:
        return 0.0 if nu == 0.0 else -math.inf  # I_0(0) = 1, I_nu(0) = 0 for nu > 0
    if x <= _SERIES_MAX_X:
        return nu * math.log(0.5 * x) - math.lgamma(nu + 1.0) + _series_log_tail(nu, x)
    return _log_iv_scaled(nu, x) + x


def _as_output(out, *inputs):
    """A Python float when every input was a scalar, else the array."""
    return float(out) if all(np.ndim(a) == 0 for a in inputs) else out


def log_bessel_iv(nu, x):
    """log I_nu(x), the modified Bessel function of the first kind, for nu >= 0, x >= 0
    (broadcasts).

    I_nu(0) is 1 for nu = 0 and 0 otherwise (log = -inf). The log is accurate to a few ulps, |error|
    <~ 2e-15 * max(1, |log I_nu(x)|), from x = 1e-300 to x = 1e5 and beyond, for orders from 0 to
    several hundred (tests: 50-digit reference up to nu = 100, spot checks to nu = 500). So I_nu
    itself is good to ~1e-15 relative while |log I_nu| <= 1, and to ~1e-15 * |log I_nu| beyond (for
    x = 1e5 that is ~1e-10: the limit of storing log I_nu ~ 1e5 in a float64). Methods: see above.
    """
    out = np.vectorize(_log_iv_scalar, otypes=[float])(nu, x)
    return _as_output(out, nu, x)


# --------------------------------------------------------------------------------------------------
# von Mises-Fisher on S^{d-1}:  p(x | mu, kappa) = C_d(kappa) exp(kappa mu.x),
#   C_d(kappa) = kappa^{d/2-1} / ((2 pi)^{d/2} I_{d/2-1}(kappa)),  C_d(0) = 1 / area(S^{d-1}).


def _check_dim(name, d):
    if int(d) != d or d < 2:
        raise ValueError(f"{name}: the dimension d must be an integer >= 2 (got {d!r})")


def _check_kappa(name, kappa):
    if not (kappa >= 0 and kappa < math.inf):
        raise ValueError(f"{name}: the concentration kappa must be a finite number >= 0 "
                         f"(got {kappa!r})")


def _vmf_log_normalizer_scalar(d, kappa):
    kappa = float(kappa)
    _check_kappa("vmf_log_normalizer", kappa)
    nu = 0.5 * d - 1.0
    if kappa <= _SERIES_MAX_X:
        # Insert the series for I_nu: kappa^nu / (kappa/2)^nu = 2^nu cancels analytically, so
        # tiny kappa (and kappa = 0, where the tail is 0) lose no digits:
        #   log C = nu log 2 + lgamma(nu+1) - (d/2) log(2 pi) - log(sum_k r_k),
        # which at kappa = 0 is -log area(S^{d-1}).
        tail = _series_log_tail(nu, kappa) if kappa > 0 else 0.0
        return nu * math.log(2.0) + math.lgamma(nu + 1.0) - 0.5 * d * math.log(2.0 * math.pi) - tail
    return _vmf_log_peak(d, kappa) - kappa


def _vmf_log_peak(d, kappa):
    """log C_d(kappa) + kappa = log p(mu | mu, kappa), the log density at the mode, without the
    cancellation of adding kappa to log C ~ -kappa (at kappa = 1e300 it would lose every digit)."""
    nu = 0.5 * d - 1.0
    if kappa <= _SERIES_MAX_X:
        return _vmf_log_normalizer_scalar(d, kappa) + kappa
    return nu * math.log(kappa) - 0.5 * d * math.log(2.0 * math.pi) - _log_iv_scaled(nu, kappa)


def vmf_log_normalizer(d, kappa):
    """log C_d(kappa) = (d/2-1) log kappa - (d/2) log(2 pi) - log I_{d/2-1}(kappa); kappa
    broadcasts.

    kappa = 0 gives the uniform density, -log area(S^{d-1}) = log Gamma(d/2) - log 2 - (d/2) log pi.
    """
    _check_dim("vmf_log_normalizer", d)
    out = np.vectorize(_vmf_log_normalizer_scalar, otypes=[float])(d, kappa)
    return _as_output(out, kappa)


def _check_mu(name, mu):
    mu = np.asarray(mu, dtype=float)
    if mu.ndim != 1 or mu.shape[0] < 2:
        raise ValueError(f"{name}: mu must be a 1-D vector with d >= 2 entries "
                         f"(got shape {mu.shape})")
    n = np.linalg.norm(mu)
    if not abs(n - 1.0) <= 1e-8:
        raise ValueError(f"{name}: mu must be a unit vector (got norm {n!r}); normalize it with "
                         "l2_normalize_np")
    # renormalize only what rounding cannot explain: dividing a unit vector by 1 + 2e-16 moves it,
    # and at kappa = 1e300 the density at x = (the caller's) mu would notice
    return mu if abs(n - 1.0) <= 4e-16 else mu / n


def vmf_log_density(x, mu, kappa):
    """log p(x | mu, kappa) = log C_d(kappa) + kappa mu.x for each row of x (..., d) on S^{d-1}.

    Computed as (log C_d(kappa) + kappa) + kappa (mu.x - 1), with mu.x - 1 = -|x - mu|^2 / 2 for
    unit vectors: near the mode both parts keep their digits at any kappa (the plain sum loses all
    of them once kappa is large: at kappa = 1e300, log C ~ -1e300 and kappa mu.x ~ +1e300, while
    their sum at x = mu is ~689).
    """
    mu = _check_mu("vmf_log_density", mu)
    kappa = float(kappa)
    _check_kappa("vmf_log_density", kappa)
    x = np.asarray(x, dtype=float)
    if x.shape[-1] != mu.shape[0]:
        raise ValueError(f"vmf_log_density: x has rows of length {x.shape[-1]} but mu has "
                         f"{mu.shape[0]} entries")
    diff = x - mu
    return _vmf_log_peak(mu.shape[0], kappa) - 0.5 * kappa * (diff * diff).sum(axis=-1)


def _mean_resultant_length_scalar(d, kappa):
    kappa = float(kappa)
    _check_kappa("vmf_mean_resultant_length", kappa)
    nu = 0.5 * d - 1.0
    if kappa <= _SERIES_MAX_X:
        # the same series for both orders:
        # I_{nu+1}/I_nu = (kappa/2)/(nu+1) * sum r_k(nu+1) / sum r_k(nu)
        if kappa == 0.0:
            return 0.0
        log_ratio = _series_log_tail(nu + 1.0, kappa) - _series_log_tail(nu, kappa)
        return 0.5 * kappa / (nu + 1.0) * math.exp(log_ratio)
    return math.exp(_log_iv_scaled(nu + 1.0, kappa) - _log_iv_scaled(nu, kappa))


def vmf_mean_resultant_length(d, kappa):
    """A_d(kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa) = E[mu.x], the sample mean's expected length.

    Rises from 0 (A_d ~ kappa/d for small kappa) to 1 (1 - A_d ~ (d-1)/(2 kappa) for large kappa);
    it is also -d/dkappa log C_d(kappa). kappa broadcasts.
    """
    _check_dim("vmf_mean_resultant_length", d)
    out = np.vectorize(_mean_resultant_length_scalar, otypes=[float])(d, kappa)
    return _as_output(out, kappa)


def vmf_sample(mu, kappa, n, rng):
    """n samples (n, d) from vMF(mu, kappa) on S^{d-1}, with Wood's (1994) rejection sampler.

    The density depends on x only through w = mu.x, whose marginal is proportional to
    exp(kappa w) (1 - w^2)^{(d-3)/2}. Wood proposes w from a Beta((d-1)/2, (d-1)/2) variable z,
        w = (1 - (1+b) z) / (1 - (1-b) z),  b = (d-1) / (2 kappa + sqrt(4 kappa^2 + (d-1)^2)),
    and accepts when kappa w + (d-1) log(1 - x0 w) - c >= log u, u ~ U(0,1), x0 = (1-b)/(1+b), c =
    kappa x0 + (d-1) log(1 - x0^2). Then x = w mu + sqrt(1 - w^2) v with v uniform on the unit
    sphere of the tangent space at mu. kappa = 0 is the uniform distribution. Rejections are redrawn
    in batches. Written in 1 - w and 1 - x0: exact for kappa up to 1e300. rng: a numpy Generator.
    """
    mu = _check_mu("vmf_sample", mu)
    kappa = float(kappa)
    _check_kappa("vmf_sample", kappa)
    if int(n) != n or n < 0:
        raise ValueError(f"vmf_sample: the number of samples n must be an integer >= 0 (got {n!r})")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"vmf_sample: rng must be a numpy.random.Generator "
                        f"(got {type(rng).__name__})")
    n, d = int(n), mu.shape[0]
    if kappa == 0.0:
        return l2_normalize_np(rng.standard_normal((n, d)))

    w, one_minus_w = _vmf_sample_w(d, kappa, n, rng)

    v = rng.standard_normal((n, d))
    # project out mu twice: once is not enough when v is nearly parallel to mu (d = 2)
    for _ in range(2):
        v = v - (v @ mu)[:, None] * mu
    v = l2_normalize_np(v)  # a uniform direction in the tangent space at mu
    # sqrt(1 - w^2) = sqrt((1-w)(1+w))
    s = np.sqrt(np.clip(one_minus_w * (2.0 - one_minus_w), 0.0, None))
    return w[:, None] * mu + s[:, None] * v


def _vmf_sample_w(d, kappa, n, rng):
    """Wood's rejection step: n draws of w = mu.x, as (w, 1 - w) (1 - w keeps its digits near 1)."""
    # Everything in terms of b, a = 1 - x0 and 1 - w, never x0 or w themselves: at large kappa x0
    # and w round to 1.0 (kappa = 1e16 made log1p(-x0 * x0) a domain error), while b, a and 1 - w
    # keep their digits up to kappa = 1e300. With t = 2 kappa / (d-1), b = 1 / (t + hypot(t, 1)):
    # hypot neither overflows (kappa = 1e300) nor does 1 / t (kappa = 1e-300: b = 1, uniform).
    t = 2.0 * kappa / (d - 1)
    b = 1.0 / (t + math.hypot(t, 1.0))           # = (d-1) / (2 kappa + sqrt(4 kappa^2 + (d-1)^2))
    a = 2.0 * b / (1.0 + b)                      # 1 - x0
    # log(1 - x0^2) = log(a (2 - a)); c = kappa x0 + (d-1) this
    log_c_rest = math.log(a) + math.log1p(1.0 - a)
    w = np.empty(0)
    one_minus_w = np.empty(0)
    while w.size < n:
        m = max(2 * (n - w.size), 16)  # acceptance is >= ~0.5 for every (d, kappa) (Wood 1994)
        z = rng.beta(0.5 * (d - 1), 0.5 * (d - 1), size=m)
        u = rng.random(m)
        omw = 2.0 * b * z / (1.0 - (1.0 - b) * z)  # 1 - w
        # kappa w + (d-1) log(1 - x0 w) - c, w - x0 = a - (1 - w), 1 - x0 w = a + (1 - a)(1 - w)
        ok = kappa * (a - omw) + (d - 1) * (np.log(a + (1.0 - a) * omw) - log_c_rest) >= np.log(u)
        w = np.concatenate([w, 1.0 - omw[ok]])
        one_minus_w = np.concatenate([one_minus_w, omw[ok]])
    return w[:n], one_minus_w[:n]


def vmf_estimate_kappa(samples):
    """(mu_hat, kappa_hat) from unit vectors `samples` (shape (n, d)), the maximum likelihood
    direction and Banerjee et al.'s (2005) approximation of the maximum likelihood concentration.

    With the mean resultant length R = ||mean(x)||:  mu_hat = mean(x) / R  and
        kappa_hat = R (d - R^2) / (1 - R^2),
    an approximate inverse of A_d (A_d(kappa_hat) ~ R). Edge cases: R >= 1 gives kappa_hat = inf
    (identical samples give R = 1 only up to rounding, so there kappa_hat is inf or a huge finite
    ~1e15); R = 0 has no direction: mu_hat is the zero vector, with kappa_hat = 0 (uniform).
    """
    x = np.asarray(samples, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ValueError(f"vmf_estimate_kappa: samples must have shape (n >= 1, d >= 2) "
                         f"(got {x.shape})")
    d = x.shape[1]
    mean = x.mean(axis=0)
    r = float(np.linalg.norm(mean))
    mu_hat = mean / r if r > 0 else mean
    if r >= 1.0:
        return mu_hat, math.inf
    return mu_hat, r * (d - r * r) / (1.0 - r * r)
