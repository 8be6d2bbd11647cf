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


def test_riemannian_step(capsys):
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


def test_vmf_log_density_s2(capsys):
    assert exercises.check_04_vmf_log_density_s2(vmf_log_density_s2) is True
    assert exercises.check_04_vmf_log_density_s2(vmf_log_density_s2_naive) is False
    wrong_constant = lambda x, mu, k: vmf_log_density_s2(x, mu, k) + np.log(2.0)  # noqa: E731  (2 pi, the circle's)
    assert exercises.check_04_vmf_log_density_s2(wrong_constant) is False
    assert exercises.check_04_vmf_log_density_s2(stub) is None
    assert "未回答" in capsys.readouterr().out


# ---------------------------------------------------------------- 4. posterior of a vMF mixture

def vmf_posterior(x, mus, kappas, priors):
    import sphere

    d = x.shape[1]
    logp = np.log(priors) + sphere.vmf_log_normalizer(d, kappas) + kappas * (x @ mus.T)
    logp -= logp.max(axis=1, keepdims=True)
    p = np.exp(logp)
    return p / p.sum(axis=1, keepdims=True)


def softmax_of_scaled_cosines(x, mus, kappas, priors):  # right only for one shared kappa (no log C_d(kappa_k))
    z = kappas * (x @ mus.T) + np.log(priors)
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)


def test_vmf_posterior(capsys):
    assert exercises.check_04_vmf_posterior(vmf_posterior) is True
    assert exercises.check_04_vmf_posterior(softmax_of_scaled_cosines) is False
    assert exercises.check_04_vmf_posterior(stub) is None
    assert "未回答" in capsys.readouterr().out
