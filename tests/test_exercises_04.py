"""Notebook 04's exercises: each check says 正解 to a reference solution; 不正解 to plausible wrong
answers, to the project's own functions called or copied, to finite-difference (or, for a
normalizing constant, numerical integration) answers and to an answer that reads the judge's frame;
and 未回答 to the unsolved stub (the notebook is executed unsolved)."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402
from exercise_attacks import copies, derivative, read_the_judges_frame, vjp  # noqa: E402

import numpy_engine  # noqa: E402
import sphere  # noqa: E402
from value import Value  # noqa: E402


def stub(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- 1. safe L2 normalization and its
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


# the project's forward: refused
def copied_normalize(x, eps=1e-12, normalize=sphere.l2_normalize_np):
    return normalize(x, eps=eps)


# the project's backward: refused
def copied_backward(dy, x, eps=1e-12, backward=sphere.l2_normalize_np_backward):
    return backward(dy, x, eps=eps)


# the normalization numpy_engine imports (the same function): refused
def engines_normalize(x, eps=1e-12):
    return numpy_engine.l2_normalize_np(x[None], return_norm=True)[0][0]


# the scalar l2_normalize backpropagated by Value: refused
def backward_by_the_engine(dy, x, eps=1e-12):
    xs = [Value(float(v)) for v in x]
    sum(float(g) * y for g, y in zip(dy, sphere.l2_normalize(xs, eps))).backward()
    return np.array([v.grad for v in xs])


NORMALIZE_COPIES = copies(sphere.l2_normalize_np)
BACKWARD_COPIES = copies(sphere.l2_normalize_np_backward)
COPIED_PAIRS = [
    (copied_normalize, copied_backward),
    (copied_normalize, safe_normalize_backward),
    (safe_normalize, copied_backward),
    (engines_normalize, safe_normalize_backward),
    (safe_normalize, backward_by_the_engine),
    *[(lambda x, eps=1e-12, c=c: copied_normalize(x, eps, c), safe_normalize_backward)
      for c in NORMALIZE_COPIES],
    *[(safe_normalize, lambda dy, x, eps=1e-12, c=c: copied_backward(dy, x, eps, c))
      for c in BACKWARD_COPIES],
]
COPIED_IDS = ["both", "forward", "backward", "engines_normalize", "engine", "forward-code_copy",
              "forward-source_copy", "backward-code_copy", "backward-source_copy"]


@pytest.mark.parametrize("forward, backward", COPIED_PAIRS, ids=COPIED_IDS)
def test_safe_normalize_copied_is_wrong(forward, backward, capsys):
    x, dy = np.array([3.0, -1.0, 2.0]), np.array([0.5, 2.0, -1.0])
    assert np.allclose(forward(x), safe_normalize(x))
    assert np.allclose(backward(dy, x), safe_normalize_backward(dy, x))
    assert exercises.check_04_safe_normalize(forward, backward) is False
    assert "使わずに" in capsys.readouterr().out
    assert np.allclose(forward(x), safe_normalize(x))  # restored after the check


def test_safe_normalize(capsys):
    assert exercises.check_04_safe_normalize(safe_normalize, safe_normalize_backward) is True
    assert exercises.check_04_safe_normalize(added_eps_normalize, added_eps_backward) is False
    assert exercises.check_04_safe_normalize(safe_normalize, backward_without_clamp) is False
    assert exercises.check_04_safe_normalize(safe_normalize, backward_without_projection) is False
    assert exercises.check_04_safe_normalize(stub, stub) is None
    assert exercises.check_04_safe_normalize(safe_normalize, stub) is None
    assert "未回答" in capsys.readouterr().out


def test_the_points_sit_on_both_sides_of_the_clamp():
    norms = [np.sqrt((x * x).sum()) for x in exercises._04_norm_points(np.random.default_rng(0))]
    assert 0 < norms[2] / 1e-12 - 1 < 2e-9 and 0 < 1 - norms[3] / 1e-12 < 2e-9


@pytest.mark.parametrize("method", ["central", "richardson"])
def test_safe_normalize_backward_by_finite_differences_is_wrong(method):
    def backward(dy, x, eps=1e-12):
        return vjp(method, lambda v: safe_normalize(v, eps), dy, x)

    x, dy = np.array([3.0, -1.0, 2.0]), np.array([0.5, 2.0, -1.0])
    # close at ||x|| ~ 1 ...
    assert np.allclose(backward(dy, x), safe_normalize_backward(dy, x), rtol=1e-7)
    # ... not next to the clamp
    assert exercises.check_04_safe_normalize(safe_normalize, backward) is False


def test_safe_normalize_reading_the_judges_frame_is_wrong():
    assert exercises.check_04_safe_normalize(safe_normalize, read_the_judges_frame) is False
    assert (
        exercises.check_04_safe_normalize(read_the_judges_frame, safe_normalize_backward) is False
    )


# ---------------------------------------------------------------- 2. vMF on S^2: log C_3 and E[mu .
# x]


def log_c3(kappa):
    log_sinh = kappa + np.log(-np.expm1(-2.0 * kappa)) - np.log(2.0)
    return np.log(kappa) - np.log(4 * np.pi) - log_sinh


def mean_cos_s2(kappa):
    if kappa < 1e-2:
        k2 = kappa * kappa
        return kappa / 3 * (1 - k2 / 15 * (1 - 2 * k2 / 63))
    return 1 / np.tanh(kappa) - 1 / kappa


def log_c3_naive(kappa):  # right formula, but sinh(1000) overflows to inf
    with np.errstate(over="ignore", divide="ignore"):
        return np.log(kappa / (4 * np.pi * np.sinh(kappa)))


def mean_cos_naive(kappa):  # coth(k) - 1/k as written: at k = 1e-6 two numbers near 1e6 cancel
    return 1 / np.tanh(kappa) - 1 / kappa


def log_c3_of_the_circle(kappa):  # the circle's constant 1 / (2 pi I_0(kappa)): d = 2, not 3
    return -np.log(2 * np.pi) - float(sphere.log_bessel_iv(0, kappa))


# E[cos theta] as if theta were uniform on [0, pi]: no sin theta
def mean_cos_without_the_area_element(kappa):
    t = np.linspace(0, np.pi, 20001)
    w = np.exp(kappa * (np.cos(t) - 1))
    return float(np.sum(np.cos(t) * w) / np.sum(w))


# log of the area integral 2 pi int exp(kappa t) dt, by Simpson's rule in log space
def quadrature_log_c3(kappa):
    t = np.linspace(-1.0, 1.0, 4001)
    w = np.ones_like(t)
    w[1:-1:2], w[2:-1:2] = 4, 2
    return -(
        np.log(2 * np.pi) + kappa + np.log(np.sum(w * np.exp(kappa * (t - 1))) * (t[1] - t[0]) / 3)
    )


# E[mu . x] = -d log C_3 / d kappa, by differences of the right log C_3
def mean_cos_by_differences(method):
    return lambda kappa: -derivative(method, log_c3, kappa)


def test_vmf_s2(capsys):
    assert exercises.check_04_vmf_s2(log_c3, mean_cos_s2) is True
    assert exercises.check_04_vmf_s2(log_c3_naive, mean_cos_s2) is False
    assert exercises.check_04_vmf_s2(log_c3, mean_cos_naive) is False
    assert exercises.check_04_vmf_s2(log_c3_of_the_circle, mean_cos_s2) is False
    assert exercises.check_04_vmf_s2(log_c3, mean_cos_without_the_area_element) is False
    assert exercises.check_04_vmf_s2(stub, stub) is None
    assert "未回答" in capsys.readouterr().out


def test_the_references_are_the_closed_forms():
    for kappa in exercises._04_KAPPAS:
        assert log_c3(kappa) == pytest.approx(
            float(sphere.vmf_log_normalizer(3, kappa)), rel=1e-14, abs=1e-14
        )
        assert mean_cos_s2(kappa) == pytest.approx(
            float(sphere.vmf_mean_resultant_length(3, kappa)), rel=1e-14
        )


@pytest.mark.parametrize("method", ["central", "richardson"])
def test_mean_cos_by_finite_differences_is_wrong(method):
    answer = mean_cos_by_differences(method)
    assert answer(3.0) == pytest.approx(mean_cos_s2(3.0), rel=1e-7)  # fine at kappa = 3 ...
    assert exercises.check_04_vmf_s2(log_c3, answer) is False  # ... not at kappa = 1e-6


def test_log_c3_by_numerical_integration_is_wrong():
    assert quadrature_log_c3(3.0) == pytest.approx(log_c3(3.0), rel=1e-9)  # close at kappa = 3 ...
    # ... not at 1000 (a width of 1e-3)
    assert exercises.check_04_vmf_s2(quadrature_log_c3, mean_cos_s2) is False


LOGNORM_COPIES = copies(sphere.vmf_log_normalizer)
MEAN_COPIES = copies(sphere.vmf_mean_resultant_length)


@pytest.mark.parametrize(
    "answer_c, answer_m",
    [(lambda k: sphere.vmf_log_normalizer(3, k), mean_cos_s2),
     (log_c3, lambda k: sphere.vmf_mean_resultant_length(3, k)),
     (log_c3, lambda k: math.exp(sphere.log_bessel_iv(1.5, k) - sphere.log_bessel_iv(0.5, k))),
     *[(lambda k, c=c: c(3, k), mean_cos_s2) for c in LOGNORM_COPIES],
     *[(log_c3, lambda k, c=c: c(3, k)) for c in MEAN_COPIES]],
    ids=["normalizer", "mean_resultant_length", "bessel_ratio", "normalizer-code_copy",
         "normalizer-source_copy", "mean-code_copy", "mean-source_copy"],
)
def test_vmf_s2_copied_is_wrong(answer_c, answer_m, capsys):
    assert float(answer_c(3.0)) == pytest.approx(log_c3(3.0))
    assert float(answer_m(3.0)) == pytest.approx(mean_cos_s2(3.0))
    assert exercises.check_04_vmf_s2(answer_c, answer_m) is False
    assert "使わずに" in capsys.readouterr().out
    assert float(answer_c(3.0)) == pytest.approx(log_c3(3.0))  # restored


def test_vmf_s2_reading_the_judges_frame_is_wrong():
    assert exercises.check_04_vmf_s2(read_the_judges_frame, mean_cos_s2) is False
    assert exercises.check_04_vmf_s2(log_c3, read_the_judges_frame) is False
