"""Notebook 04's exercises: each check says 正解 to a reference solution, 不正解 to a plausible wrong answer
and 未回答 to the unsolved stub (the notebook is executed unsolved)."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402


def stub(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- 1. Riemannian SGD step with retraction

def riemannian_step(x, g, lr):
    grad_s = g - (g @ x) * x
    v = x - lr * grad_s
    return v / np.linalg.norm(v)


def projected_step(x, g, lr):  # the lecture's pseudo code: the radial part of g moves x too
    v = x - lr * g
    return v / np.linalg.norm(v)


def riemannian_step_copied(x, g, lr):  # the project's step: refused
    import sphere
    return sphere.riemannian_sgd_step(x, g, lr)


def riemannian_step_from_its_parts(x, g, lr):  # the step's own line, from sphere's parts: refused too
    import sphere
    return sphere.retract(x - lr * sphere.tangent_project(x, g))


def riemannian_step_exp_map(x, g, lr):  # the exact geodesic step instead of the retraction: wrong, and refused
    import sphere
    return sphere.exp_map(x, -lr * sphere.tangent_project(x, g))


def test_riemannian_step(capsys):
    x = np.array([0.6, 0.8, 0.0])
    g = np.array([1.0, -2.0, 0.5])
    for copied in (riemannian_step_copied, riemannian_step_from_its_parts, riemannian_step_exp_map):
        assert exercises.check_04_riemannian_step(copied) is False
        assert "使わずに" in capsys.readouterr().out
    assert np.allclose(riemannian_step_copied(x, g, 0.1), riemannian_step(x, g, 0.1))  # right, and restored
    assert np.allclose(riemannian_step_from_its_parts(x, g, 0.1), riemannian_step(x, g, 0.1))
    assert exercises.check_04_riemannian_step(riemannian_step) is True
    assert exercises.check_04_riemannian_step(projected_step) is False
    assert exercises.check_04_riemannian_step(lambda x, g, lr: x - lr * (g - (g @ x) * x)) is False  # no retraction
    assert exercises.check_04_riemannian_step(stub) is None
    assert "未回答" in capsys.readouterr().out


# ---------------------------------------------------------------- 2. safe L2 normalization and its gradient

def safe_normalize(x, eps=1e-12):
    return x / max(np.linalg.norm(x), eps)


def safe_normalize_backward(dy, x, eps=1e-12):
    n = np.linalg.norm(x)
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


def backward_without_clamp(dy, x, eps=1e-12):  # right where ||x|| >= eps, but ignores the clamped branch
    n = np.linalg.norm(x)
    y = x / n
    return (dy - y * (y @ dy)) / max(n, eps)


def backward_without_projection(dy, x, eps=1e-12):  # forgets that moving x along itself does not move y
    return dy / max(np.linalg.norm(x), eps)


def copied_normalize(x, eps=1e-12):  # the project's forward: refused
    import sphere
    return sphere.l2_normalize_np(x, eps=eps)


def copied_backward(dy, x, eps=1e-12):  # the project's backward: refused
    import sphere
    return sphere.l2_normalize_np_backward(dy, x, eps=eps)


def fused_normalize(x, eps=1e-12):  # numpy_engine's twin (its eps is 1e-12 too): refused
    import numpy_engine
    return numpy_engine.l2_normalize_fused(x[None])[0][0]


def backward_by_the_engine(dy, x, eps=1e-12):  # the scalar l2_normalize backpropagated by Value: refused
    import sphere
    from value import Value
    xs = [Value(float(v)) for v in x]
    sum(float(g) * y for g, y in zip(dy, sphere.l2_normalize(xs, eps))).backward()
    return np.array([v.grad for v in xs])


def test_safe_normalize_copied_is_wrong(capsys):
    x, dy = np.array([3.0, -1.0, 2.0]), np.array([0.5, 2.0, -1.0])
    for forward, backward in ((copied_normalize, copied_backward), (copied_normalize, safe_normalize_backward),
                              (safe_normalize, copied_backward), (fused_normalize, safe_normalize_backward),
                              (safe_normalize, backward_by_the_engine)):
        assert np.allclose(forward(x), safe_normalize(x))
        assert np.allclose(backward(dy, x), safe_normalize_backward(dy, x))
        assert exercises.check_04_safe_normalize(forward, backward) is False
        assert "使わずに" in capsys.readouterr().out
    assert np.allclose(copied_normalize(x), safe_normalize(x))  # restored after the check


def test_safe_normalize(capsys):
    assert exercises.check_04_safe_normalize(safe_normalize, safe_normalize_backward) is True
    assert exercises.check_04_safe_normalize(added_eps_normalize, added_eps_backward) is False
    assert exercises.check_04_safe_normalize(safe_normalize, backward_without_clamp) is False
    assert exercises.check_04_safe_normalize(safe_normalize, backward_without_projection) is False
    assert exercises.check_04_safe_normalize(stub, stub) is None
    assert exercises.check_04_safe_normalize(safe_normalize, stub) is None
    assert "未回答" in capsys.readouterr().out


# ---------------------------------------------------------------- 3. vMF log-density on S^2 in closed form

def vmf_log_density_s2(x, mu, kappa):
    # log sinh k = k + log(1 - e^{-2k}) - log 2, without overflow for large k
    log_sinh = kappa + np.log(-np.expm1(-2.0 * kappa)) - np.log(2.0)
    return np.log(kappa) - np.log(4 * np.pi) - log_sinh + kappa * (x @ mu)


def vmf_log_density_s2_naive(x, mu, kappa):  # right formula, but sinh(1000) overflows to inf
    with np.errstate(over="ignore", divide="ignore"):
        return np.log(kappa / (4 * np.pi * np.sinh(kappa))) + kappa * (x @ mu)


def vmf_log_density_s2_copied(x, mu, kappa):  # the project's density: refused
    import sphere
    return sphere.vmf_log_density(x, mu, kappa)


def vmf_log_density_s2_from_the_normalizer(x, mu, kappa):  # log C_3 from the project: refused too
    import sphere
    return sphere.vmf_log_normalizer(3, kappa) + kappa * (x @ mu)


def test_vmf_log_density_s2(capsys):
    x, mu = np.array([[0.0, 0.6, 0.8]]), np.array([1.0, 0.0, 0.0])
    for copied in (vmf_log_density_s2_copied, vmf_log_density_s2_from_the_normalizer):
        assert np.allclose(copied(x, mu, 3.0), vmf_log_density_s2(x, mu, 3.0))
        assert exercises.check_04_vmf_log_density_s2(copied) is False
        assert "使わずに" in capsys.readouterr().out
    assert np.allclose(vmf_log_density_s2_copied(x, mu, 3.0), vmf_log_density_s2(x, mu, 3.0))  # restored
    assert exercises.check_04_vmf_log_density_s2(vmf_log_density_s2) is True
    assert exercises.check_04_vmf_log_density_s2(vmf_log_density_s2_naive) is False
    wrong_constant = lambda x, mu, k: vmf_log_density_s2(x, mu, k) + np.log(2.0)  # noqa: E731  (2 pi, the circle's)
    assert exercises.check_04_vmf_log_density_s2(wrong_constant) is False
    assert exercises.check_04_vmf_log_density_s2(stub) is None
    assert "未回答" in capsys.readouterr().out


# ---------------------------------------------------------------- 4. gradient of a vMF mixture's log posterior

def posterior(x, mus, kappas, priors):
    import sphere

    logp = np.log(priors) + sphere.vmf_log_normalizer(x.shape[0], kappas) + kappas * (mus @ x)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def vmf_posterior_grad(x, mus, kappas, priors, k):
    p = posterior(x, mus, kappas, priors)
    g = kappas[k] * mus[k] - (p * kappas) @ mus   # d log p(k|x) / dx = kappa_k mu_k - sum_j p_j kappa_j mu_j
    return g - (g @ x) * x                          # its tangent part: the Riemannian gradient


def euclidean_gradient(x, mus, kappas, priors, k):  # not projected: keeps a radial part
    p = posterior(x, mus, kappas, priors)
    return kappas[k] * mus[k] - (p * kappas) @ mus


def without_the_posterior_mean(x, mus, kappas, priors, k):  # the gradient of kappa_k mu_k.x alone
    g = kappas[k] * mus[k]
    return g - (g @ x) * x


def posterior_as_softmax_of_scaled_cosines(x, mus, kappas, priors, k):  # right only for one kappa, equal priors
    z = kappas * (mus @ x)
    p = np.exp(z - z.max())
    p /= p.sum()
    g = kappas[k] * mus[k] - (p * kappas) @ mus
    return g - (g @ x) * x


def posterior_without_log_space(x, mus, kappas, priors, k):  # exp(1000 cos) overflows
    import sphere

    with np.errstate(over="ignore", invalid="ignore"):
        w = priors * np.exp(sphere.vmf_log_normalizer(x.shape[0], kappas)) * np.exp(kappas * (mus @ x))
        p = w / w.sum()
    g = kappas[k] * mus[k] - (p * kappas) @ mus
    return g - (g @ x) * x


def grad_by_the_engine(x, mus, kappas, priors, k):  # the check's own reference, with Value.backward: refused
    return exercises._04_log_posterior_grad(x, mus, kappas, priors, k)


def test_vmf_posterior_grad(capsys):
    assert exercises.check_04_vmf_posterior_grad(vmf_posterior_grad) is True
    for wrong in (euclidean_gradient, without_the_posterior_mean, posterior_as_softmax_of_scaled_cosines,
                  posterior_without_log_space):
        assert exercises.check_04_vmf_posterior_grad(wrong) is False, wrong.__name__
    assert exercises.check_04_vmf_posterior_grad(stub) is None
    out = capsys.readouterr().out
    assert "未回答" in out and "不正解" in out


def test_vmf_posterior_grad_copied_is_wrong(capsys):
    rng = np.random.default_rng(0)
    mus = rng.standard_normal((3, 4))
    mus /= np.linalg.norm(mus, axis=1, keepdims=True)
    x = mus[0] + 0.4 * rng.standard_normal(4)
    x /= np.linalg.norm(x)
    args = (x, mus, np.array([2.0, 5.0, 9.0]), np.array([0.5, 0.3, 0.2]), 1)
    assert np.allclose(grad_by_the_engine(*args), vmf_posterior_grad(*args))   # the right numbers ...
    assert exercises.check_04_vmf_posterior_grad(grad_by_the_engine) is False  # ... but backward() is refused
    assert "使わずに" in capsys.readouterr().out
    assert np.allclose(grad_by_the_engine(*args), vmf_posterior_grad(*args))   # and works again afterwards


def test_the_gradient_is_the_derivative_along_the_sphere():
    # The reference is a derivative along the sphere: moving x along a great circle by t changes log p(k | x) by
    # t (grad . v) to first order (v a unit tangent vector), whatever the kappas and priors.
    import sphere

    rng = np.random.default_rng(5)
    mus = sphere.l2_normalize_np(rng.standard_normal((4, 5)))
    kappas, priors = np.array([1.0, 3.0, 8.0, 20.0]), np.array([0.4, 0.3, 0.2, 0.1])
    x = sphere.l2_normalize_np(rng.standard_normal(5))
    v = sphere.l2_normalize_np(sphere.tangent_project(x, rng.standard_normal(5)))
    t = 1e-6
    log_post = [np.log(posterior(sphere.exp_map(x, s * v), mus, kappas, priors)[2]) for s in (t, -t)]
    assert np.isclose((log_post[0] - log_post[1]) / (2 * t), vmf_posterior_grad(x, mus, kappas, priors, 2) @ v,
                      rtol=1e-6)
