"""Lecture 3's build steps and exercises (sittings 11-17): each check says 正解 (True) to a right answer,
不正解 (False) to plausible wrong ones, and 未回答 (None) to the unsolved stub (the notebooks are
executed unsolved). The checks compare by the table of exact / close / largest difference."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402

import sphere  # noqa: E402


def stub(*args):
    raise NotImplementedError


# ------------------------------------------------------------ 11-1: safe L2 normalization and its
# gradient


def safe_normalize(x, eps=1e-12):
    return x / max(np.sqrt((x * x).sum()), eps)


def safe_normalize_backward(dy, x, eps=1e-12):
    n = np.sqrt((x * x).sum())
    if n < eps:
        return dy / eps
    y = x / n
    return (dy - y * (y @ dy)) / n


def added_eps_normalize(x, eps=1e-12):  # the lecture's x / (||x|| + eps)
    return x / (np.linalg.norm(x) + eps)


def added_eps_backward(dy, x, eps=1e-12):
    n = np.linalg.norm(x)
    d = n + eps
    return dy / d - (dy @ x) / (d * d * n) * x


# right where ||x|| >= eps, but ignores the clamped branch
def backward_without_clamp(dy, x, eps=1e-12):
    n = np.linalg.norm(x)
    y = x / n
    return (dy - y * (y @ dy)) / max(n, eps)


# forgets that moving x along itself does not move y
def backward_without_projection(dy, x, eps=1e-12):
    return dy / max(np.linalg.norm(x), eps)


def test_safe_normalize(capsys):
    assert exercises.check_11_safe_normalize(safe_normalize, safe_normalize_backward) is True
    assert "すべての点で一致しました" in capsys.readouterr().out
    assert exercises.check_11_safe_normalize(added_eps_normalize, added_eps_backward) is False
    assert exercises.check_11_safe_normalize(safe_normalize, backward_without_clamp) is False
    assert exercises.check_11_safe_normalize(safe_normalize, backward_without_projection) is False
    # a wrong forward beside a right dx: each part is compared at its own size (y ~ 1, dx ~ 1e12)
    unclamped = lambda x: x / np.linalg.norm(x)  # noqa: E731
    assert exercises.check_11_safe_normalize(unclamped, safe_normalize_backward) is False
    plus_eps = lambda x: x / (np.linalg.norm(x) + 1e-12)  # noqa: E731
    assert exercises.check_11_safe_normalize(plus_eps, safe_normalize_backward) is False
    assert "一致しない点があります" in capsys.readouterr().out
    assert exercises.check_11_safe_normalize(stub, stub) is None
    assert exercises.check_11_safe_normalize(safe_normalize, stub) is None
    assert "未回答" in capsys.readouterr().out


def test_safe_normalize_points_sit_on_both_sides_of_the_kink():
    norms = [np.sqrt((x * x).sum()) for _, x in exercises.sphere_points(np.random.default_rng(0), 5)]
    assert any(1e-12 < n < 1e-12 * (1 + 2e-9) for n in norms)
    assert any(1e-12 * (1 - 2e-9) < n < 1e-12 for n in norms)


# ------------------------------------------------------------ 13-1: the vMF on S^2 in closed form


def log_c3(kappa):
    log_sinh = kappa + np.log(-np.expm1(-2.0 * kappa)) - np.log(2.0)
    return np.log(kappa) - np.log(4 * np.pi) - log_sinh


def mean_cos_s2(kappa):
    if kappa < 1e-2:
        k2 = kappa * kappa
        return kappa / 3 * (1 - k2 / 15 * (1 - 2 * k2 / 21))
    return 1 / np.tanh(kappa) - 1 / kappa


def log_c3_naive(kappa):  # right formula, but sinh(1000) overflows to inf
    with np.errstate(over="ignore", divide="ignore"):
        return np.log(kappa / (4 * np.pi * np.sinh(kappa)))


def mean_cos_naive(kappa):  # coth(k) - 1/k as written: at k = 1e-6 two numbers near 1e6 cancel
    return 1 / np.tanh(kappa) - 1 / kappa


def mean_cos_series_with_63(kappa):  # the series with 63 where 21 belongs: off by 4e-11 at 0.01
    if kappa < 1e-2:
        k2 = kappa * kappa
        return kappa / 3 * (1 - k2 / 15 * (1 - 2 * k2 / 63))
    return 1 / np.tanh(kappa) - 1 / kappa


def test_vmf_s2(capsys):
    assert exercises.check_13_vmf_s2(log_c3, mean_cos_s2) is True
    assert exercises.check_13_vmf_s2(log_c3_naive, mean_cos_s2) is False
    assert exercises.check_13_vmf_s2(log_c3, mean_cos_naive) is False
    assert exercises.check_13_vmf_s2(log_c3, mean_cos_series_with_63) is False  # the series band
    assert exercises.check_13_vmf_s2(stub, mean_cos_s2) is None
    assert exercises.check_13_vmf_s2(stub, stub) is None
    assert "未回答" in capsys.readouterr().out


def test_the_series_coefficient_is_04():
    for kappa in (1e-3, 5e-3, 9.9e-3):
        exact = float(sphere.vmf_mean_resultant_length(3, kappa))
        assert abs(mean_cos_s2(kappa) - exact) <= 1e-14 * exact
    kappa = 9.9e-3
    exact = float(sphere.vmf_mean_resultant_length(3, kappa))
    assert abs(mean_cos_series_with_63(kappa) - exact) > 1e-11 * exact


def test_the_worked_solution_of_13_1_passes():
    code = exercises.solution("13-1").split("```python")[1].split("```")[0]
    space = {"np": np}
    exec(code, space)
    assert exercises.check_13_vmf_s2(space["log_c3"], space["mean_cos_s2"]) is True


# ------------------------------------------------------------ 16-1: the read-out's gradient through
# Norm and s_z


def readout_grad(h, lm_head, s_z, target, eps=1e-12):
    n = np.sqrt((h * h).sum())
    c = h / max(n, eps)
    cos = lm_head @ c
    z = s_z * cos
    p = np.exp(z - z.max())
    p /= p.sum()
    p[target] -= 1.0
    g = (s_z * p) @ lm_head
    return (g / eps if n < eps else (g - c * (c @ g)) / n), p * cos


def readout_loss(h, lm_head, s_z, target, eps=1e-12):
    z = s_z * (lm_head @ (h / max(np.sqrt((h * h).sum()), eps)))
    m = z.max()
    return m + np.log(np.exp(z - m).sum()) - z[target]


# stops at d loss / d Norm(h)
def readout_grad_without_normalization(h, lm_head, s_z, target, eps=1e-12):
    c = h / max(np.sqrt((h * h).sum()), eps)
    cos = lm_head @ c
    z = s_z * cos
    p = np.exp(z - z.max())
    p /= p.sum()
    p[target] -= 1.0
    return (s_z * p) @ lm_head, p * cos


# forgets the scale on the way back
def readout_grad_without_s_z(h, lm_head, s_z, target, eps=1e-12):
    dh, ds = readout_grad(h, lm_head, s_z, target, eps)
    return dh / s_z.mean(), ds


def readout_ds_without_cos(h, lm_head, s_z, target, eps=1e-12):  # d loss / d s_z taken as p - e_t
    dh, ds = readout_grad(h, lm_head, s_z, target, eps)
    z = s_z * (lm_head @ (h / max(np.sqrt((h * h).sum()), eps)))
    p = np.exp(z - z.max())
    p /= p.sum()
    p[target] -= 1.0
    return dh, p


def readout_grad_unclamped(h, lm_head, s_z, target, eps=1e-12):  # divides by ||h|| even below eps
    g, ds = readout_grad_without_normalization(h, lm_head, s_z, target, eps)
    n = np.sqrt((h * h).sum())
    c = h / n
    return (g - c * (c @ g)) / n, ds


def readout_grad_naive_softmax(h, lm_head, s_z, target, eps=1e-12):  # exp(1000) overflows
    n = np.sqrt((h * h).sum())
    c = h / max(n, eps)
    cos = lm_head @ c
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(s_z * cos)
        p = e / e.sum()
    p[target] -= 1.0
    g = (s_z * p) @ lm_head
    return (g / eps if n < eps else (g - c * (c @ g)) / n), p * cos


def test_readout_grad(capsys):
    assert exercises.check_16_readout_grad(readout_grad) is True
    for wrong in (readout_grad_without_normalization, readout_grad_without_s_z,
                  readout_ds_without_cos, readout_grad_unclamped, readout_grad_naive_softmax):
        assert exercises.check_16_readout_grad(wrong) is False, wrong.__name__
    assert exercises.check_16_readout_grad(stub) is None
    assert "未回答" in capsys.readouterr().out


# ------------------------------------------------------------ 17-1: gradient of a vMF mixture's log
# posterior


def posterior(x, mus, kappas, priors):
    logp = np.log(priors) + sphere.vmf_log_normalizer(x.shape[0], kappas) + kappas * (mus @ x)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def normalized(r, eps=1e-12):
    n = np.sqrt((r * r).sum())
    return r / max(n, eps), n


def vmf_posterior_grad(r, mus, kappas, priors, k, eps=1e-12):
    x, n = normalized(r, eps)
    p = posterior(x, mus, kappas, priors)
    # d log p(k|x) / dx = kappa_k mu_k - sum_j p_j kappa_j mu_j
    g = kappas[k] * mus[k] - (p * kappas) @ mus
    return g / eps if n < eps else (g - x * (x @ g)) / n  # back through x = Norm(r)


def log_posterior(r, mus, kappas, priors, k):
    x, _ = normalized(r)
    z = np.log(priors) + sphere.vmf_log_normalizer(x.shape[0], kappas) + kappas * (mus @ x)
    m = z.max()
    return z[k] - (m + np.log(np.exp(z - m).sum()))


# the tangent projection, without the 1 / ||r|| of Norm
def riemannian_only(r, mus, kappas, priors, k):
    x, _ = normalized(r)
    p = posterior(x, mus, kappas, priors)
    g = kappas[k] * mus[k] - (p * kappas) @ mus
    return g - (g @ x) * x


def euclidean_gradient(r, mus, kappas, priors, k):  # not projected: keeps a radial part
    x, _ = normalized(r)
    p = posterior(x, mus, kappas, priors)
    return kappas[k] * mus[k] - (p * kappas) @ mus


def without_the_posterior_mean(r, mus, kappas, priors, k):  # the gradient of kappa_k mu_k.x alone
    x, n = normalized(r)
    g = kappas[k] * mus[k]
    return g / 1e-12 if n < 1e-12 else (g - (g @ x) * x) / n


# right only for one kappa, equal priors
def posterior_as_softmax_of_scaled_cosines(r, mus, kappas, priors, k):
    x, n = normalized(r)
    z = kappas * (mus @ x)
    p = np.exp(z - z.max())
    p /= p.sum()
    g = kappas[k] * mus[k] - (p * kappas) @ mus
    return g / 1e-12 if n < 1e-12 else (g - (g @ x) * x) / n


def posterior_without_log_space(r, mus, kappas, priors, k):  # exp(1000 cos) overflows
    x, n = normalized(r)
    with np.errstate(over="ignore", invalid="ignore"):
        w = (priors * np.exp(sphere.vmf_log_normalizer(x.shape[0], kappas))
             * np.exp(kappas * (mus @ x)))
        p = w / w.sum()
    g = kappas[k] * mus[k] - (p * kappas) @ mus
    return g / 1e-12 if n < 1e-12 else (g - (g @ x) * x) / n


def test_vmf_posterior_grad(capsys):
    assert exercises.check_17_vmf_posterior_grad(vmf_posterior_grad) is True
    for wrong in (riemannian_only, euclidean_gradient, without_the_posterior_mean,
                  posterior_as_softmax_of_scaled_cosines, posterior_without_log_space):
        assert exercises.check_17_vmf_posterior_grad(wrong) is False, wrong.__name__
    assert exercises.check_17_vmf_posterior_grad(stub) is None
    assert "未回答" in capsys.readouterr().out


def test_vmf_posterior_grad_is_compared_in_units_of_kappa_over_r():
    """A rounding-sized difference (1e-13 of kappa / ||r||) passes even where the gradient is 3e13:
    the check's one number per point scales every entry."""
    def rounded(r, mus, kappas, priors, k):
        size = kappas.max() / max(np.sqrt(r @ r), 1e-12)
        return vmf_posterior_grad(r, mus, kappas, priors, k) + 1e-13 * size
    assert exercises.check_17_vmf_posterior_grad(rounded) is True


def test_a_forgotten_return_is_said_in_words(capsys):
    assert exercises.check_16_readout_grad(lambda h, lm_head, s_z, target: None) is False
    assert exercises.FORGOT_RETURN in capsys.readouterr().out


# ------------------------------------------------ 12-1, 14-1, 14-2, 15-1: the build steps of 12-15


def adam_retract_step(w, grad, m, v, t, lr):
    w_new = exercises.adam_update_09(w.ravel(), grad.ravel(), m, v, t, lr).reshape(w.shape)
    return w_new / np.linalg.norm(w_new, axis=1, keepdims=True)


def adam_without_retraction(w, grad, m, v, t, lr):
    return exercises.adam_update_09(w.ravel(), grad.ravel(), m, v, t, lr).reshape(w.shape)


def adam_retracting_columns(w, grad, m, v, t, lr):
    w_new = exercises.adam_update_09(w.ravel(), grad.ravel(), m, v, t, lr).reshape(w.shape)
    return w_new / np.linalg.norm(w_new, axis=0, keepdims=True)


def retract_then_adam(w, grad, m, v, t, lr):  # the order swapped: the rows end off the sphere
    w = w / np.linalg.norm(w, axis=1, keepdims=True)
    return exercises.adam_update_09(w.ravel(), grad.ravel(), m, v, t, lr).reshape(w.shape)


def test_adam_retract(capsys):
    assert exercises.check_12_adam_retract(adam_retract_step) is True
    assert exercises.check_12_adam_retract(exercises.adam_retract_step_12) is True   # the fallback
    for wrong in (adam_without_retraction, adam_retracting_columns, retract_then_adam):
        assert exercises.check_12_adam_retract(wrong) is False, wrong.__name__
    assert "W：不一致" in capsys.readouterr().out      # the part that is wrong is named
    assert exercises.check_12_adam_retract(stub) is None


def riemannian_step(x, g, lr):
    y = x - lr * (g - (g @ x) * x)
    return y / np.linalg.norm(y)


def projected_step(x, g, lr):
    y = x - lr * g
    return y / np.linalg.norm(y)


def unretracted_riemannian_step(x, g, lr):
    return x - lr * (g - (g @ x) * x)


def test_sphere_steps(capsys):
    assert exercises.check_14_sphere_steps(riemannian_step, projected_step) is True
    assert exercises.check_14_sphere_steps(projected_step, projected_step) is False   # no projection
    assert exercises.check_14_sphere_steps(riemannian_step, riemannian_step) is False
    assert exercises.check_14_sphere_steps(unretracted_riemannian_step, projected_step) is False
    assert "リーマン：不一致" in capsys.readouterr().out
    assert exercises.check_14_sphere_steps(stub, stub) is None


def estimate_kappa(samples):
    n, d = samples.shape
    mean = samples.mean(axis=0)
    r = np.linalg.norm(mean)
    return mean / r, r * (d - r * r) / (1 - r * r)


def estimate_kappa_with_d_minus_1(samples):
    n, d = samples.shape
    mean = samples.mean(axis=0)
    r = np.linalg.norm(mean)
    return mean / r, r * (d - 1 - r * r) / (1 - r * r)


def estimate_kappa_low_concentration(samples):  # the small-kappa approximation kappa ~ d R
    mean = samples.mean(axis=0)
    r = np.linalg.norm(mean)
    return mean / r, samples.shape[1] * r


def test_estimate_kappa(capsys):
    assert exercises.check_14_estimate_kappa(estimate_kappa) is True
    assert exercises.check_14_estimate_kappa(sphere.vmf_estimate_kappa) is True
    for wrong in (estimate_kappa_with_d_minus_1, estimate_kappa_low_concentration):
        assert exercises.check_14_estimate_kappa(wrong) is False, wrong.__name__
    assert "κ̂：不一致" in capsys.readouterr().out
    assert exercises.check_14_estimate_kappa(stub) is None


def heavy_ball_step(x, m, g, lr, beta, transport):
    m = beta * m + g
    x = x - lr * m
    x = x / np.linalg.norm(x)
    if transport:
        m = m - (m @ x) * x
    return x, m


def transport_to_the_old_point(x, m, g, lr, beta, transport):
    m = beta * m + g
    x_new = x - lr * m
    x_new = x_new / np.linalg.norm(x_new)
    return x_new, (m - (m @ x) * x if transport else m)


def momentum_of_the_average(x, m, g, lr, beta, transport):  # an EMA (1 - beta) g: another method
    m = beta * m + (1 - beta) * g
    x = x - lr * m
    x = x / np.linalg.norm(x)
    return x, (m - (m @ x) * x if transport else m)


def test_heavy_ball(capsys):
    assert exercises.check_15_heavy_ball(heavy_ball_step) is True
    for wrong in (transport_to_the_old_point, momentum_of_the_average):
        assert exercises.check_15_heavy_ball(wrong) is False, wrong.__name__
    assert "m：不一致" in capsys.readouterr().out
    assert exercises.check_15_heavy_ball(stub) is None
