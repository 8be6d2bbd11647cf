"""Tests for sphere.py (lecture 3): normalization twins, angles, sphere optimization steps, von
Mises-Fisher.

The log-Bessel reference is independent of sphere.py: a 50-digit Decimal power series (stdlib only).
"""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

import sphere
from value import Value

RNG_SEED = 20240229
EPS64 = np.finfo(float).eps


# --------------------------------------------------------------------------------------------------
# helpers


def rel_err(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(
        np.max(np.abs(a - b) / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-300), initial=0.0)
    )


def central_diff_grad(f, x, h=1e-6):
    """d f / d x by central differences, f: float array -> float."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


def scalar_normalize_along(x, c, axis, eps=1e-12):
    """Run the scalar l2_normalize on every fiber of x along `axis`; loss = sum(c * y); return (y,
    dx)."""
    xm, cm = np.moveaxis(x, axis, -1), np.moveaxis(c, axis, -1)
    y, dx = np.zeros_like(xm), np.zeros_like(xm)
    for idx in np.ndindex(xm.shape[:-1]):
        xs = [Value(float(v)) for v in xm[idx]]
        ys = sphere.l2_normalize(xs, eps)
        loss = sum(yi * float(ci) for yi, ci in zip(ys, cm[idx]))
        loss.backward()
        y[idx] = [yi.data for yi in ys]
        dx[idx] = [xi.grad for xi in xs]
    return np.moveaxis(y, -1, axis), np.moveaxis(dx, -1, axis)


PI50 = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")


def ref_log_iv(nu2, x, digits=50):
    """log I_{nu2/2}(x) (nu2 an integer >= 0, so integer and half-integer orders) from the power
    series I_nu(x) = sum_k (x/2)^{2k+nu} / (k! Gamma(k+nu+1)), summed in `digits`-digit Decimal
    arithmetic. All terms are positive, so the sum carries ~digits-3 correct digits for any x."""
    with localcontext() as ctx:
        ctx.prec = digits
        xd, nu = Decimal(x), Decimal(nu2) / 2
        if nu2 % 2 == 0:
            gamma = Decimal(math.factorial(nu2 // 2))
        else:  # Gamma(1/2) = sqrt(pi), Gamma(a+1) = a Gamma(a)
            gamma, a = PI50.sqrt(), Decimal(1) / 2
            while a < nu + 1:
                gamma *= a
                a += 1
        q, s, t, k = xd * xd / 4, Decimal(1), Decimal(1), 0
        tiny = Decimal(10) ** (5 - digits)
        while True:
            k += 1
            t = t * q / (k * (k + nu))
            s += t
            if t < tiny * s and q < k * (k + nu):
                break
        return float(nu * (xd / 2).ln() - gamma.ln() + s.ln())


def assert_log_close(got, want, ulps=200):
    """|got - want| <= ulps * eps * max(1, |want|): absolute in the log = relative in I."""
    assert abs(got - want) <= ulps * EPS64 * max(1.0, abs(want)), (got, want)


# --------------------------------------------------------------------------------------------------
# l2_normalize and its twin


def test_l2_normalize_matches_finite_differences():
    rng = np.random.default_rng(RNG_SEED)
    x, c = rng.standard_normal(5), rng.standard_normal(5)
    xs = [Value(float(v)) for v in x]
    loss = sum(yi * float(ci) for yi, ci in zip(sphere.l2_normalize(xs), c))
    loss.backward()
    fd = central_diff_grad(lambda z: float(np.dot(c, z / np.linalg.norm(z))), x)
    assert rel_err([xi.grad for xi in xs], fd) < 1e-7
    assert abs(sum(yi.data**2 for yi in sphere.l2_normalize(xs)) - 1.0) < 1e-15


@pytest.mark.parametrize(
    "shape,axis",
    [((7,), -1), ((3, 5), -1), ((2, 3, 4), -1), ((4, 6), 0), ((4, 6), 1), ((3, 4, 5), 1)],
)
def test_l2_normalize_twin_matches_scalar(shape, axis):
    rng = np.random.default_rng(RNG_SEED + len(shape) + axis)
    x, c = rng.standard_normal(shape) * 3.0, rng.standard_normal(shape)
    y_s, dx_s = scalar_normalize_along(x, c, axis)
    y = sphere.l2_normalize_np(x, axis)
    dx = sphere.l2_normalize_np_backward(c, x, axis)
    assert y.shape == dx.shape == x.shape
    assert rel_err(y, y_s) <= 1e-10
    assert rel_err(dx, dx_s) <= 1e-10
    assert np.allclose(np.linalg.norm(y, axis=axis), 1.0, rtol=0, atol=1e-14)


def test_l2_normalize_zero_and_tiny_vectors_have_finite_grads():
    c = np.array([0.5, -1.0, 2.0])
    for x in (np.zeros(3), np.array([1e-14, -2e-14, 0.0])):  # both below eps = 1e-12 in norm
        y_s, dx_s = scalar_normalize_along(x, c, -1)
        y = sphere.l2_normalize_np(x)
        dx = sphere.l2_normalize_np_backward(c, x)
        for arr in (y_s, dx_s, y, dx):
            assert np.all(np.isfinite(arr))
        assert np.array_equal(y, x / 1e-12) and rel_err(y, y_s) <= 1e-12
        assert rel_err(dx, c / 1e-12) <= 1e-12 and rel_err(dx_s, c / 1e-12) <= 1e-12
    # a batch mixing a zero row with ordinary rows: each row takes its own branch
    x = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]])
    cc = np.stack([c, c])
    y_s, dx_s = scalar_normalize_along(x, cc, -1)
    assert rel_err(sphere.l2_normalize_np(x), y_s) <= 1e-12
    assert rel_err(sphere.l2_normalize_np_backward(cc, x), dx_s) <= 1e-12
    assert np.array_equal(sphere.l2_normalize_np(x)[1], [0.6, 0.8, 0.0])


# --------------------------------------------------------------------------------------------------
# cosine similarity and geodesic distance


def test_cosine_similarity_scalar_twin_and_finite_differences():
    rng = np.random.default_rng(RNG_SEED + 1)
    u, v = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    dc = rng.standard_normal(4)
    du_s, dv_s, c_s = np.zeros_like(u), np.zeros_like(v), np.zeros(4)
    for i in range(4):
        us, vs = [Value(float(a)) for a in u[i]], [Value(float(a)) for a in v[i]]
        cs = sphere.cosine_similarity(us, vs)
        (cs * float(dc[i])).backward()
        c_s[i], du_s[i], dv_s[i] = cs.data, [a.grad for a in us], [a.grad for a in vs]
        fd = central_diff_grad(
            lambda z, i=i: float(z @ v[i] / np.linalg.norm(z) / np.linalg.norm(v[i])), u[i]
        )
        assert rel_err(du_s[i], fd * dc[i]) < 1e-7
    assert rel_err(sphere.cosine_similarity_np(u, v), c_s) <= 1e-10
    du, dv = sphere.cosine_similarity_np_backward(dc, u, v)
    assert rel_err(du, du_s) <= 1e-10 and rel_err(dv, dv_s) <= 1e-10
    # unbatched, and along axis 0
    assert rel_err(sphere.cosine_similarity_np(u[0], v[0]), c_s[0]) <= 1e-10
    assert rel_err(sphere.cosine_similarity_np(u.T, v.T, axis=0), c_s) <= 1e-10


def test_geodesic_distance_identical_antipodal_and_rounding():
    rng = np.random.default_rng(RNG_SEED + 2)
    # find a unit vector whose float dot product with itself rounds above 1: arccos would give NaN
    for _ in range(1000):
        u = sphere.l2_normalize_np(rng.standard_normal(16))
        if np.dot(u, u) > 1.0:
            break
    assert np.dot(u, u) > 1.0
    with np.errstate(invalid="ignore"):
        assert np.isnan(np.arccos(np.dot(u, u)))  # the failure mode being guarded against
    assert sphere.geodesic_distance_np(u, u) == 0.0
    assert sphere.geodesic_distance_np(u, -u) == np.pi
    # inputs are normalized first (rounding only)
    assert sphere.geodesic_distance_np(u, 5.0 * u) < 1e-15
    # agrees with arccos(clip(u.v)) in general, and is accurate for tiny angles where arccos is not
    a, b = (sphere.l2_normalize_np(rng.standard_normal((50, 8))),
            sphere.l2_normalize_np(rng.standard_normal((50, 8))))
    ref = np.arccos(np.clip(np.sum(a * b, axis=-1), -1, 1))
    assert np.max(np.abs(sphere.geodesic_distance_np(a, b) - ref)) < 1e-12
    assert rel_err(sphere.geodesic_distance_np(a.T, b.T, axis=0), ref) < 1e-12
    theta = 1e-9
    d = sphere.geodesic_distance_np(
        np.array([1.0, 0.0]), np.array([math.cos(theta), math.sin(theta)])
    )
    assert abs(d - theta) < 1e-15 * theta * 10
    d90 = sphere.geodesic_distance_np(np.array([1.0, 0.0, 0.0]), np.array([0.0, 2.0, 0.0]))
    assert abs(d90 - np.pi / 2) < 1e-15


def test_cosine_and_geodesic_of_a_zero_vector_are_finite():
    # a zero vector normalizes to zero (no direction): cosine 0, geodesic pi/2, finite gradients,
    # never NaN
    v = np.array([0.6, -0.8, 0.0])
    zs = [Value(0.0) for _ in range(3)]
    vs = [Value(float(a)) for a in v]
    c = sphere.cosine_similarity(zs, vs)
    c.backward()
    grads = [a.grad for a in zs + vs]
    assert c.data == 0.0 and all(math.isfinite(g) for g in grads)
    assert rel_err([a.grad for a in zs], v / 1e-8) <= 1e-12  # d(z/eps . vhat)/dz = vhat / eps
    with np.errstate(all="raise"):  # no 0/0 or invalid-value warnings either
        assert sphere.cosine_similarity_np(np.zeros(3), v) == 0.0
        du, dv = sphere.cosine_similarity_np_backward(1.0, np.zeros(3), v)
        assert (rel_err(du, [a.grad for a in zs]) <= 1e-12
                and rel_err(dv, [a.grad for a in vs]) <= 1e-12)
        assert sphere.geodesic_distance_np(np.zeros(3), v) == pytest.approx(np.pi / 2, abs=1e-15)
        assert sphere.geodesic_distance_np(np.zeros(3), np.zeros(3)) == 0.0  # "identical" inputs


# --------------------------------------------------------------------------------------------------
# tangent projection, retraction, steps


def test_tangent_project_retract_and_normalize_matrix():
    rng = np.random.default_rng(RNG_SEED + 3)
    x = sphere.retract(rng.standard_normal((10, 5)))
    g = rng.standard_normal((10, 5))
    gt = sphere.tangent_project(x, g)
    assert np.max(np.abs(np.sum(gt * x, axis=-1))) < 1e-14  # tangent: orthogonal to x
    assert np.allclose(sphere.tangent_project(x, gt), gt, rtol=0, atol=1e-14)  # a projection
    assert np.allclose(sphere.tangent_project(x.T, g.T, axis=0), gt.T, rtol=0, atol=1e-15)
    y = sphere.retract(x - 0.3 * g)
    assert np.allclose(np.linalg.norm(y, axis=-1), 1.0, rtol=0, atol=1e-15)
    w = rng.standard_normal((4, 7))
    assert np.allclose(
        np.linalg.norm(sphere.normalize_matrix(w, axis=1), axis=1), 1.0, rtol=0, atol=1e-15
    )
    assert np.allclose(
        np.linalg.norm(sphere.normalize_matrix(w, axis=0), axis=0), 1.0, rtol=0, atol=1e-15
    )
    # the exponential map stays on the sphere and moves by exactly ||v|| along the great circle
    v = 0.7 * gt / np.linalg.norm(gt, axis=-1, keepdims=True)
    e = sphere.exp_map(x, v)
    assert np.allclose(np.linalg.norm(e, axis=-1), 1.0, rtol=0, atol=1e-15)
    assert np.allclose(sphere.geodesic_distance_np(x, e), 0.7, rtol=0, atol=1e-14)
    assert np.array_equal(sphere.exp_map(x, np.zeros_like(x)), x)


def test_riemannian_vs_projected_step():
    """On S^1 at x = (1, 0) with g = (2, 1): radial part 2, tangent part 1 (the lecture's two kinds
    of step)."""
    x, g, lr = np.array([1.0, 0.0]), np.array([2.0, 1.0]), 0.1
    # before the retraction: the Riemannian step leaves the sphere to 2nd order, the Euclidean one
    # to 1st
    assert abs(np.linalg.norm(x - lr * sphere.tangent_project(x, g)) - 1) == pytest.approx(
        math.hypot(1, lr) - 1
    )
    assert abs(np.linalg.norm(x - lr * g) - 1) > 0.15
    r, p = sphere.riemannian_sgd_step(x, g, lr), sphere.projected_sgd_step(x, g, lr)
    angle = lambda z: math.atan2(-z[1], z[0])  # noqa: E731 -- angle moved "downhill"
    assert angle(r) == pytest.approx(math.atan(lr), abs=1e-15)  # = exp-map step lr, up to lr^3/3
    assert abs(angle(r) - lr) < lr**3 / 3 + 1e-15
    # radial part inflates the step
    assert angle(p) == pytest.approx(math.atan(lr / (1 - 2 * lr)), abs=1e-15)
    # with a purely tangent gradient the two coincide
    t = np.array([0.0, 1.0])
    assert np.allclose(
        sphere.riemannian_sgd_step(x, t, lr), sphere.projected_sgd_step(x, t, lr), atol=1e-16
    )
    # both minimize f(x) = -m.x on S^2 and converge to m
    m = sphere.retract(np.array([1.0, -2.0, 0.5]))
    for step in (sphere.riemannian_sgd_step, sphere.projected_sgd_step):
        z = sphere.retract(np.array([-1.0, 0.3, 0.2]))
        for _ in range(300):
            z = step(z, -m, 0.2)
        assert sphere.geodesic_distance_np(z, m) < 1e-8


# --------------------------------------------------------------------------------------------------
# log I_nu(x)


def test_log_bessel_iv_hardcoded_reference_values():
    # values from the literature (A&S tables / scipy.special.iv), each also reproduced by the
    # Decimal series
    known = [(0, 1.0, 1.2660658777520082), (1, 1.0, 0.5651591039924851),
             (0, 10.0, 2815.716628466254), (1, 10.0, 2670.988303701255),
             (10, 1.0, 2.7529480398368736e-10), (0, 100.0, 1.0737517071310738e42)]
    for nu, x, val in known:
        assert_log_close(sphere.log_bessel_iv(nu, x), math.log(val), ulps=100)
        assert_log_close(ref_log_iv(2 * nu, x), math.log(val), ulps=100)
    assert sphere.log_bessel_iv(0, 0.0) == 0.0
    assert sphere.log_bessel_iv(2.5, 0.0) == -math.inf
    out = sphere.log_bessel_iv(np.array([0.0, 1.0]), np.array([[1.0], [10.0]]))
    assert out.shape == (2, 2) and isinstance(sphere.log_bessel_iv(1, 2.0), float)


def test_log_bessel_iv_against_decimal_series():
    xs = [1e-8, 1e-3, 0.5, 3.0, 17.0, 39.9, 40.0, 40.1, 55.0, 90.0, 250.0, 1500.0, 2e4, 1e5]
    worst = 0.0
    for nu2 in (0, 1, 2, 3, 5, 12, 17, 18, 31, 40, 63, 100, 127, 200):
        for x in xs:
            if x > 2000 and nu2 not in (0, 1, 63, 200):
                continue  # keep the Decimal reference fast
            want, got = ref_log_iv(nu2, x), sphere.log_bessel_iv(nu2 / 2, x)
            worst = max(worst, abs(got - want) / max(1.0, abs(want)))
            assert_log_close(got, want, ulps=200)
    assert worst < 1e-13


def test_log_bessel_iv_half_integer_closed_forms():
    # I_{1/2}(x) = sqrt(2/(pi x)) sinh x,  I_{3/2}(x) = sqrt(2/(pi x)) (cosh x - sinh x / x)
    for x in np.geomspace(1e-6, 1e5, 60):
        pre = 0.5 * math.log(2 / (math.pi * x))
        log_sinh = x + math.log(-math.expm1(-2 * x)) - math.log(2)  # exact for every x
        assert_log_close(sphere.log_bessel_iv(0.5, x), pre + log_sinh, ulps=20)
        if x >= 0.5:
            e = math.exp(-2 * x)
            log_b = x - math.log(2) + math.log((1 - 1 / x) + e * (1 + 1 / x))
            assert_log_close(sphere.log_bessel_iv(1.5, x), pre + log_b, ulps=60)


def test_log_bessel_iv_methods_agree_at_switch_points():
    """The series is valid for every x; compare it with Hankel/Debye just past the switch at x = 40,
    and check Hankel vs Debye around x = nu^2/2 (nu = 12: x = 72)."""
    for nu in (0.0, 0.5, 3.0, 8.9, 9.1, 15.0, 31.0, 50.0, 100.0):
        for x in (40.0, 45.0, 60.0):
            series = nu * math.log(x / 2) - math.lgamma(nu + 1) + sphere._series_log_tail(nu, x)
            assert_log_close(sphere._log_iv_scaled(nu, x) + x, series, ulps=200)
    for nu in (12.0, 20.0):
        x = 0.5 * nu * nu
        left, right = sphere.log_bessel_iv(nu, x * (1 - 1e-12)), sphere.log_bessel_iv(nu, x)
        assert abs(right - left) < 1e-12 * x * 2 + 1e-13
        assert_log_close(sphere.log_bessel_iv(nu, x), ref_log_iv(int(2 * nu), x), ulps=100)


def test_log_bessel_iv_recurrence_for_arbitrary_orders():
    """I_{nu-1}(x) - I_{nu+1}(x) = (2 nu / x) I_nu(x) for non-half-integer orders, in every regime.
    """
    rng = np.random.default_rng(RNG_SEED + 4)
    for nu in rng.uniform(1.0, 120.0, 25):
        for x in (1e-6, 0.7, 12.0, 39.0, 41.0, 0.5 * nu * nu, 3.0 * nu, 700.0, 9e4):
            lo, mid, hi = sphere.log_bessel_iv(np.array([nu - 1, nu, nu + 1]), x)
            # cancels when x >> nu: scale the tolerance
            lhs = math.exp(lo - mid) - math.exp(hi - mid)
            # rounding floor of a log: ~eps * (size of the numbers summed into it, lgamma(nu+1) for
            # the series)
            tol = (20 * EPS64 * max(1.0, abs(mid), math.lgamma(nu + 2))
                   * (math.exp(lo - mid) + 2 * nu / x))
            assert abs(lhs - 2 * nu / x) <= tol


def test_log_bessel_iv_bad_input():
    with pytest.raises(ValueError, match="order nu"):
        sphere.log_bessel_iv(-1, 1.0)
    with pytest.raises(ValueError, match="argument"):
        sphere.log_bessel_iv(1, -1.0)
    with pytest.raises(ValueError, match="argument"):
        sphere.log_bessel_iv(1, float("nan"))


# --------------------------------------------------------------------------------------------------
# von Mises-Fisher: normalizer, density, mean resultant length


def log_area(d):
    """log area(S^{d-1}) = log(2 pi^{d/2} / Gamma(d/2))."""
    return math.log(2) + 0.5 * d * math.log(math.pi) - math.lgamma(0.5 * d)


@pytest.mark.parametrize("d", [2, 3, 16, 64])
def test_vmf_log_normalizer_range_and_smoothness(d):
    kappas = np.concatenate([np.logspace(-10, 4, 281), [3e4, 1e5]])
    f = sphere.vmf_log_normalizer(d, kappas)
    assert f.shape == kappas.shape and np.all(np.isfinite(f))
    f0 = sphere.vmf_log_normalizer(d, 0.0)
    assert f0 == pytest.approx(-log_area(d), abs=1e-13)
    # tiny kappa: log C(kappa) = log C(0) - kappa^2 / (2 d) + O(kappa^4), no cancellation noise
    small = kappas < 1e-3
    assert np.all(np.abs(f[small] - f0 + kappas[small] ** 2 / (2 * d))
                  <= kappas[small] ** 4 + 4 * EPS64 * abs(f0))
    # decreasing (d/dkappa = -A_d < 0)
    assert np.all(np.diff(f) < 1e-13 * np.maximum(1, np.abs(f[1:])))
    # d/dkappa log C_d = -A_d(kappa): central differences across the whole range, incl. the switch
    # at 40
    k = np.concatenate([np.logspace(-2, 5, 71), [40.0, 40.0 + 1e-9]])
    h = 1e-5 * k
    fp, fm = sphere.vmf_log_normalizer(d, k + h), sphere.vmf_log_normalizer(d, k - h)
    rounding = 20 * EPS64 * np.maximum(1, np.abs(fp)) / (2 * h)  # |log C| is ~100 for d = 64
    a = sphere.vmf_mean_resultant_length(d, k)
    assert np.all(np.abs((fp - fm) / (2 * h) + a) <= 1e-6 * a + rounding)
    # no jump at the switch point: f(40 + 1e-9) - f(40) = -A * 1e-9 to rounding
    jump = sphere.vmf_log_normalizer(d, 40.0 + 1e-9) - sphere.vmf_log_normalizer(d, 40.0)
    assert abs(jump + 1e-9 * sphere.vmf_mean_resultant_length(d, 40.0)) < 1e-13
    # against the independent Decimal reference for I_{d/2-1}
    for kappa in (1e-10, 0.3, 7.0, 40.0, 41.0, 600.0, 1e4):
        want = (
            (d / 2 - 1) * math.log(kappa) - d / 2 * math.log(2 * math.pi) - ref_log_iv(d - 2, kappa)
        )
        assert_log_close(sphere.vmf_log_normalizer(d, kappa), want, ulps=300)


def test_vmf_log_normalizer_closed_forms_d3():
    # d = 3: C_3(kappa) = kappa / (4 pi sinh kappa)
    for kappa in np.concatenate([np.logspace(-10, 5, 76), [0.0]]):
        if kappa == 0:
            want = -math.log(4 * math.pi)
        elif kappa < 1:
            want = math.log(kappa / math.sinh(kappa)) - math.log(4 * math.pi)
        else:
            want = (
                math.log(kappa) - math.log(2 * math.pi) - kappa - math.log(-math.expm1(-2 * kappa))
            )
        assert_log_close(sphere.vmf_log_normalizer(3, kappa), want, ulps=40)


@pytest.mark.parametrize("kappa", [0.0, 0.5, 10.0, 100.0])
def test_vmf_density_integrates_to_one_on_circle(kappa):
    # trapezoid rule: spectral for periodic integrands
    theta = np.linspace(0, 2 * np.pi, 4096, endpoint=False)
    x = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    mu = np.array([math.cos(1.1), math.sin(1.1)])
    p = np.exp(sphere.vmf_log_density(x, mu, kappa))
    assert np.sum(p) * (2 * np.pi / theta.size) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("kappa", [0.0, 0.5, 10.0, 100.0])
def test_vmf_density_integrates_to_one_on_s2(kappa):
    mu = sphere.retract(np.array([0.3, -0.5, 0.8]))
    e1 = sphere.retract(np.cross(mu, [1.0, 0.0, 0.0]))
    e2 = np.cross(mu, e1)
    u, wu = np.polynomial.legendre.leggauss(200)  # u = cos(polar angle from mu); dA = du dphi
    phi = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    s = np.sqrt(1 - u * u)
    x = (u[:, None, None] * mu + (s[:, None] * np.cos(phi))[..., None] * e1
         + (s[:, None] * np.sin(phi))[..., None] * e2)
    p = np.exp(sphere.vmf_log_density(x, mu, kappa))  # shape (200, 16)
    total = np.sum(wu[:, None] * p) * (2 * np.pi / phi.size)
    assert total == pytest.approx(1.0, abs=1e-12)


def test_vmf_mean_resultant_length():
    for d in (2, 3, 16, 64):
        for kappa in (1e-8, 0.2, 5.0, 40.0, 40.5, 300.0, 1e4, 1e5):
            want = math.exp(ref_log_iv(d, kappa) - ref_log_iv(d - 2, kappa))
            assert rel_err(sphere.vmf_mean_resultant_length(d, kappa), want) < 1e-11
        assert sphere.vmf_mean_resultant_length(d, 0.0) == 0.0
        assert sphere.vmf_mean_resultant_length(d, 1e-10) == pytest.approx(1e-10 / d, rel=1e-12)
    # d = 3: A_3 = coth(kappa) - 1/kappa
    for kappa in (0.5, 3.0, 50.0):
        assert sphere.vmf_mean_resultant_length(3, kappa) == pytest.approx(
            1 / math.tanh(kappa) - 1 / kappa, rel=1e-13
        )
    assert sphere.vmf_mean_resultant_length(3, np.array([1.0, 2.0])).shape == (2,)


def test_vmf_bad_input():
    with pytest.raises(ValueError, match="dimension d"):
        sphere.vmf_log_normalizer(1, 1.0)
    with pytest.raises(ValueError, match="kappa"):
        sphere.vmf_log_normalizer(3, -1.0)
    with pytest.raises(ValueError, match="unit vector"):
        sphere.vmf_log_density(np.zeros((2, 3)), np.array([1.0, 1.0, 0.0]), 1.0)
    with pytest.raises(ValueError, match="unit vector"):
        sphere.vmf_sample(np.array([0.0, 2.0]), 1.0, 5, np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        sphere.vmf_sample(np.array([0.0, 1.0]), 1.0, 5, np.random)
    with pytest.raises(ValueError, match="samples"):
        sphere.vmf_estimate_kappa(np.ones(3))


# --------------------------------------------------------------------------------------------------
# sampling and estimation


@pytest.mark.parametrize(
    "d,kappa", [(2, 5.0), (3, 0.5), (3, 50.0), (16, 10.0), (64, 1e4), (5, 1e5), (3, 0.0)]
)
def test_vmf_sample_moments(d, kappa):
    rng = np.random.default_rng(RNG_SEED + d)
    mu = sphere.retract(rng.standard_normal(d))
    n = 10_000
    x = sphere.vmf_sample(mu, kappa, n, rng)
    assert x.shape == (n, d)
    assert np.max(np.abs(np.linalg.norm(x, axis=1) - 1)) < 1e-14
    a = sphere.vmf_mean_resultant_length(d, kappa)
    ew2 = 1 - (d - 1) * a / kappa if kappa > 0 else 1 / d  # E[(mu.x)^2]
    se = math.sqrt(max(ew2 - a * a, 0) / n)
    w = x @ mu
    assert abs(w.mean() - a) < 5 * se
    # ||mean(x)||^2 = mean(w)^2 + |tangent part|^2, whose expectation is (1 - E w^2) / n
    r = np.linalg.norm(x.mean(axis=0))
    assert abs(r - a) < 5 * se + 5 * math.sqrt((1 - ew2) / n)
    if kappa > 0:
        mu_hat, _ = sphere.vmf_estimate_kappa(x)
        assert sphere.geodesic_distance_np(mu_hat, mu) < 5 * math.sqrt((1 - ew2) / n) / a


def test_vmf_sample_w_distribution_d3():
    """On S^2 the marginal of w = mu.x has CDF (e^{kappa w} - e^{-kappa}) / (e^kappa - e^{-kappa})
    (KS test)."""
    rng = np.random.default_rng(RNG_SEED + 7)
    mu = np.array([0.0, 0.0, 1.0])
    for kappa in (0.7, 8.0):
        w = np.sort(sphere.vmf_sample(mu, kappa, 10_000, rng) @ mu)
        cdf = np.expm1(kappa * (w + 1)) / np.expm1(2 * kappa)
        ecdf = np.arange(1, w.size + 1) / w.size
        assert np.max(np.abs(cdf - ecdf)) < 1.63 / math.sqrt(w.size)  # 1% critical value
    # d = 2: the sign of the tangent component is fair
    x = sphere.vmf_sample(np.array([1.0, 0.0]), 3.0, 10_000, rng)
    assert abs(np.mean(x[:, 1] > 0) - 0.5) < 0.02


def ks_statistic(samples, grid, density):
    """max |empirical CDF - CDF| where the CDF is the trapezoid integral of `density` on `grid`,
    normalized."""
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(grid))])
    cdf /= cdf[-1]
    samples = np.sort(samples)
    model = np.interp(samples, grid, cdf)
    n = samples.size
    return max(np.max(np.arange(1, n + 1) / n - model), np.max(model - np.arange(n) / n))


@pytest.mark.parametrize(
    "d,kappa", [(2, 0.7), (2, 5.0), (2, 60.0), (3, 60.0), (16, 10.0), (16, 200.0)]
)
def test_vmf_sample_marginal_matches_the_density(d, kappa):
    """Wood's sampler against the vMF marginal itself, integrated numerically (independent of
    sphere.py): d = 2: the angle theta from mu has density prop. to exp(kappa cos theta) on (-pi,
    pi] (von Mises); d > 2: w = mu.x has density prop. to exp(kappa w) (1 - w^2)^((d-3)/2) on [-1,
    1]."""
    rng = np.random.default_rng(RNG_SEED + 11 * d + int(kappa))
    mu = sphere.retract(rng.standard_normal(d))
    x = sphere.vmf_sample(mu, kappa, 10_000, rng)
    if d == 2:
        perp = np.array([-mu[1], mu[0]])
        samples = np.arctan2(x @ perp, x @ mu)
        grid = np.linspace(-np.pi, np.pi, 200_001)
        density = np.exp(kappa * (np.cos(grid) - 1))
    else:
        samples = x @ mu
        grid = np.linspace(-1.0, 1.0, 200_001)
        density = np.exp(kappa * (grid - 1)) * np.clip(1 - grid * grid, 0, None) ** (0.5 * (d - 3))
    # 0.1% critical value of the Kolmogorov distribution: with fixed seeds a correct sampler fails
    # rarely if its random stream ever changes; a wrong marginal at n = 10,000 is far beyond it
    assert ks_statistic(samples, grid, density) < 1.95 / math.sqrt(samples.size)


def test_vmf_estimate_kappa_edge_cases():
    # R = 0: no direction
    mu_hat, kappa_hat = sphere.vmf_estimate_kappa(np.array([[1.0, 0.0], [-1.0, 0.0]]))
    assert kappa_hat == 0.0 and np.array_equal(mu_hat, [0.0, 0.0])
    mu_hat, kappa_hat = sphere.vmf_estimate_kappa(np.array([[0.0, 1.0, 0.0]] * 5))  # R = 1 exactly
    assert kappa_hat == math.inf and np.array_equal(mu_hat, [0.0, 1.0, 0.0])


@pytest.mark.parametrize("d", [3, 16])
@pytest.mark.parametrize("kappa", [1.0, 10.0, 100.0])
def test_vmf_estimate_kappa_recovers_kappa(d, kappa):
    rng = np.random.default_rng(1000 * d + int(kappa))
    mu = sphere.retract(np.arange(1.0, d + 1.0))
    mu_hat, kappa_hat = sphere.vmf_estimate_kappa(sphere.vmf_sample(mu, kappa, 10_000, rng))
    assert abs(kappa_hat - kappa) < 0.1 * kappa
    assert abs(np.linalg.norm(mu_hat) - 1) < 1e-14 and mu_hat @ mu > 0.9


# ----------------------------------------------------------------------------- vMF at extreme kappa


def wood_sampler_as_before(mu, kappa, n, rng):
    """The textbook form of the sampler (in w and x0 directly): the oracle where it still works."""
    d = mu.shape[0]
    b = (d - 1) / (2.0 * kappa + math.sqrt(4.0 * kappa * kappa + (d - 1) ** 2))
    x0 = (1.0 - b) / (1.0 + b)
    c = kappa * x0 + (d - 1) * math.log1p(-x0 * x0)
    w, omw = np.empty(0), np.empty(0)
    while w.size < n:
        m = max(2 * (n - w.size), 16)
        z = rng.beta(0.5 * (d - 1), 0.5 * (d - 1), size=m)
        u = rng.random(m)
        den = 1.0 - (1.0 - b) * z
        wz = (1.0 - (1.0 + b) * z) / den
        ok = kappa * wz + (d - 1) * np.log(1.0 - x0 * wz) - c >= np.log(u)
        w, omw = np.concatenate([w, wz[ok]]), np.concatenate([omw, (2.0 * b * z / den)[ok]])
    w, omw = w[:n], omw[:n]
    v = rng.standard_normal((n, d))
    for _ in range(2):
        v = v - (v @ mu)[:, None] * mu
    v = sphere.l2_normalize_np(v)
    return w[:, None] * mu + np.sqrt(np.clip(omw * (2.0 - omw), 0.0, None))[:, None] * v


@pytest.mark.parametrize("d", [2, 3, 16])
@pytest.mark.parametrize("kappa", [0.5, 5.0, 50.0, 500.0])
def test_vmf_sample_equals_the_previous_sampler_where_both_work(d, kappa):
    mu = sphere.l2_normalize_np(np.arange(1.0, d + 1))
    new = sphere.vmf_sample(mu, kappa, 500, np.random.default_rng(3))
    old = wood_sampler_as_before(mu, kappa, 500, np.random.default_rng(3))
    np.testing.assert_allclose(new, old, rtol=0, atol=1e-12)


def assert_gamma_like(t, k):
    """t ~ Gamma(k, 1): mean and variance k (5 and 8 standard errors); for k = 1 an Exponential(1)
    (KS, 1%)."""
    n = t.size
    assert abs(t.mean() - k) < 5 * math.sqrt(k / n)
    assert abs(t.var() - k) < 8 * math.sqrt(k * (k + 3) * 2 / n)
    if k == 1.0:
        ts = np.sort(t)
        assert np.max(np.abs(1 - np.exp(-ts) - np.arange(1, n + 1) / n)) < 1.63 / math.sqrt(n)


@pytest.mark.parametrize("d", [3, 16])
@pytest.mark.parametrize("kappa", [1e6, 1e16, 1e100, 1e300])
def test_vmf_sample_at_huge_kappa(d, kappa):
    """For large kappa, t = kappa (1 - mu.x) ~ Gamma((d-1)/2, 1) (the marginal exp(kappa
    w)(1-w^2)^((d-3)/2) with w = 1 - t/kappa); on S^2 (d = 3) an Exponential(1). Checked on the
    sampler's 1 - w at every kappa, and on the samples themselves while their tangent part is above
    float64's resolution (kappa <= 1e16; beyond, every sample rounds to mu, which is then the
    correct float64 answer)."""
    mu = sphere.l2_normalize_np(np.arange(1.0, d + 1))
    n = 4000
    _, one_minus_w = sphere._vmf_sample_w(d, kappa, n, np.random.default_rng(5))
    assert_gamma_like(kappa * one_minus_w, 0.5 * (d - 1))
    x = sphere.vmf_sample(mu, kappa, n, np.random.default_rng(7))
    assert np.isfinite(x).all()
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-12)
    if kappa <= 1e16:
        tangent = x - (x @ mu)[:, None] * mu
        # 1 - cos = sin^2 / 2
        assert_gamma_like(kappa * 0.5 * (tangent * tangent).sum(axis=1), 0.5 * (d - 1))
    else:
        np.testing.assert_allclose(x, np.broadcast_to(mu, x.shape), rtol=0, atol=1e-15)


@pytest.mark.parametrize("d", [2, 3, 16])
def test_vmf_log_density_at_huge_kappa_and_as_before_at_moderate_kappa(d):
    mu = sphere.l2_normalize_np(np.arange(1.0, d + 1))
    # at the mode: log C + kappa -> ((d-1)/2) log(kappa / 2 pi) + O(1/kappa), from I_nu(k) ~ e^k /
    # sqrt(2 pi k)
    for kappa in (1e16, 1e100, 1e300):
        expected = 0.5 * (d - 1) * (math.log(kappa) - math.log(2 * math.pi))
        assert sphere.vmf_log_density(mu, mu, kappa) == pytest.approx(expected, rel=1e-14)
    if d == 3:  # in closed form: log kappa - log 2 pi at kappa = 1e300 on S^2
        assert sphere.vmf_log_density(mu, mu, 1e300) == pytest.approx(688.9376508318, rel=1e-12)
    x = sphere.l2_normalize_np(np.random.default_rng(0).standard_normal((50, d)))
    # where the plain formula log C + kappa mu.x keeps its digits
    for kappa in (0.0, 0.3, 7.0, 60.0, 300.0):
        plain = sphere.vmf_log_normalizer(d, kappa) + kappa * (x @ mu)
        np.testing.assert_allclose(
            sphere.vmf_log_density(x, mu, kappa), plain, rtol=1e-12, atol=1e-12
        )


def test_vmf_sample_at_a_vanishing_kappa_is_uniform_not_a_domain_error():
    rng = np.random.default_rng(0)
    mu = np.array([1.0, 0.0, 0.0])
    for kappa in (1e-300, 5e-324):
        x = sphere.vmf_sample(mu, kappa, 4000, rng)
        assert np.allclose(np.linalg.norm(x, axis=1), 1) and abs(x[:, 0].mean()) < 0.05
