"""Notebook 06's exercises (lecture 3, vMF and nGPT): each check says 正解 to a reference solution;
不正解 to plausible wrong answers, to the project's own backward functions called or copied, to
finite-difference answers (central differences and Richardson extrapolation) and to an answer that
reads the judge's frame; 未回答 to the unsolved stub."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402
from exercise_attacks import DIFFERENCES, copies, read_the_judges_frame  # noqa: E402

import sphere  # noqa: E402
import utils  # noqa: E402
from value import Value  # noqa: E402


def stub(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- 1. the read-out's gradient
# through Norm and s_z


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
    assert exercises.check_06_readout_grad(readout_grad) is True
    for wrong in (readout_grad_without_normalization, readout_grad_without_s_z,
                  readout_ds_without_cos, readout_grad_unclamped, readout_grad_naive_softmax):
        assert exercises.check_06_readout_grad(wrong) is False, wrong.__name__
    assert exercises.check_06_readout_grad(stub) is None
    assert "未回答" in capsys.readouterr().out


@pytest.mark.parametrize("method", ["central", "richardson"])
def test_readout_grad_by_finite_differences_is_wrong(method):
    def answer(h, lm_head, s_z, target):
        return (DIFFERENCES[method](lambda v: readout_loss(v, lm_head, s_z, target), h),
                DIFFERENCES[method](lambda s: readout_loss(h, lm_head, s, target), s_z))

    h, lm_head, s_z, target = exercises._06_readout_cases()[0]
    for got, want in zip(answer(h, lm_head, s_z, target), readout_grad(h, lm_head, s_z, target)):
        assert np.allclose(got, want, rtol=1e-6, atol=1e-8)  # close at ||h|| = 1 ...
    assert exercises.check_06_readout_grad(answer) is False  # ... not next to the clamp


def readout_grad_from_the_project(
    h, lm_head, s_z, target, ce=utils.cross_entropy_np_backward, nb=sphere.l2_normalize_np_backward
):
    cos = lm_head @ sphere.l2_normalize_np(h)
    dlogits = ce((s_z * cos)[None, :], np.array([target]))[0]
    return nb((s_z * dlogits) @ lm_head, h), dlogits * cos


def readout_grad_by_the_engine(h, lm_head, s_z, target, backward=Value.backward):
    hs, ss = [Value(float(v)) for v in h], [Value(float(v)) for v in s_z]
    c = sphere.l2_normalize(hs)
    z = [s * sum(float(w) * ci for w, ci in zip(row, c)) for s, row in zip(ss, lm_head)]
    top = max(zi.data for zi in z)
    backward(sum((zi - top).exp() for zi in z).log() + top - z[target])
    return np.array([v.grad for v in hs]), np.array([v.grad for v in ss])


CE_COPIES, NB_COPIES, ENGINE_COPIES = (copies(utils.cross_entropy_np_backward),
                                       copies(sphere.l2_normalize_np_backward),
                                       copies(Value.backward))


@pytest.mark.parametrize(
    "copied",
    [readout_grad_from_the_project, readout_grad_by_the_engine,
     *[lambda *a, c=c: readout_grad_from_the_project(*a, ce=c) for c in CE_COPIES],
     *[lambda *a, c=c: readout_grad_from_the_project(*a, nb=c) for c in NB_COPIES],
     *[lambda *a, c=c: readout_grad_by_the_engine(*a, backward=c) for c in ENGINE_COPIES]],
    ids=["project", "engine", "ce-code_copy", "ce-source_copy", "normalize-code_copy",
         "normalize-source_copy", "engine-code_copy", "engine-source_copy"],
)
def test_readout_grad_copied_is_wrong(copied, capsys):
    h, lm_head, s_z, target = exercises._06_readout_cases()[1]

    def same():
        return all(np.allclose(a, b) for a, b in zip(copied(h, lm_head, s_z, target),
                                                      readout_grad(h, lm_head, s_z, target)))
    assert same()
    assert exercises.check_06_readout_grad(copied) is False
    assert "使わずに" in capsys.readouterr().out
    assert same()  # restored


def test_readout_grad_reading_the_judges_frame_is_wrong():
    assert exercises.check_06_readout_grad(read_the_judges_frame) is False


def test_the_readout_cases_reach_the_clamp_and_large_logits():
    cases = exercises._06_readout_cases()
    norms = [np.sqrt((h * h).sum()) for h, *_ in cases]
    assert (
        max(np.max(s_z * (lm_head @ (h / np.sqrt((h * h).sum())))) for h, lm_head, s_z, _ in cases)
        > 709
    )
    assert any(1e-12 < n < 1e-12 * (1 + 2e-9) for n in norms) and any(
        1e-12 * (1 - 2e-9) < n < 1e-12 for n in norms
    )
    assert max(s_z.max() for _, _, s_z, _ in cases) == 1000.0


# ---------------------------------------------------------------- 2. gradient of a vMF mixture's
# log posterior


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
    assert exercises.check_06_vmf_posterior_grad(vmf_posterior_grad) is True
    for wrong in (riemannian_only, euclidean_gradient, without_the_posterior_mean,
                  posterior_as_softmax_of_scaled_cosines, posterior_without_log_space):
        assert exercises.check_06_vmf_posterior_grad(wrong) is False, wrong.__name__
    assert exercises.check_06_vmf_posterior_grad(stub) is None
    out = capsys.readouterr().out
    assert "未回答" in out and "不正解" in out


@pytest.mark.parametrize("method", ["central", "richardson"])
def test_vmf_posterior_grad_by_finite_differences_is_wrong(method):
    def answer(r, mus, kappas, priors, k):
        return DIFFERENCES[method](lambda v: log_posterior(v, mus, kappas, priors, k), r)

    mus, kappas, priors, points = exercises._06_posterior_cases()[1]
    assert np.allclose(
        answer(points[0], mus, kappas, priors, 2),
        vmf_posterior_grad(points[0], mus, kappas, priors, 2),
        rtol=1e-6,
        atol=1e-8,
    )  # close at a unit r ...
    assert exercises.check_06_vmf_posterior_grad(answer) is False  # ... not next to the clamp


# the check's own reference, with Value.backward: refused
def grad_by_the_engine(r, mus, kappas, priors, k):
    return exercises._06_log_posterior_grad(r, mus, kappas, priors, k)


def grad_by_a_copied_engine(copy):
    def answer(r, mus, kappas, priors, k):
        saved = Value.backward
        Value.backward = copy  # the reference, run on a copy of backward() taken before the check
        try:
            return exercises._06_log_posterior_grad(r, mus, kappas, priors, k)
        finally:
            Value.backward = saved

    return answer


@pytest.mark.parametrize(
    "copied",
    [grad_by_the_engine, *map(grad_by_a_copied_engine, copies(Value.backward))],
    ids=["backward", "code_copy", "source_copy"],
)
def test_vmf_posterior_grad_copied_is_wrong(copied, capsys):
    rng = np.random.default_rng(0)
    mus = sphere.l2_normalize_np(rng.standard_normal((3, 4)))
    r = 2.0 * sphere.l2_normalize_np(mus[0] + 0.4 * rng.standard_normal(4))
    args = (r, mus, np.array([2.0, 5.0, 9.0]), np.array([0.5, 0.3, 0.2]), 1)
    assert np.allclose(copied(*args), vmf_posterior_grad(*args))  # the right numbers ...
    # ... but backward() is refused
    assert exercises.check_06_vmf_posterior_grad(copied) is False
    assert "使わずに" in capsys.readouterr().out
    # and works again afterwards
    assert np.allclose(copied(*args), vmf_posterior_grad(*args))


def test_vmf_posterior_grad_reading_the_judges_frame_is_wrong():
    assert exercises.check_06_vmf_posterior_grad(read_the_judges_frame) is False


def test_at_a_unit_vector_the_gradient_is_the_derivative_along_the_sphere():
    # At ||r|| = 1 the answer is the Riemannian gradient: moving x along a great circle by t changes
    # log p(k | x) by t (grad . v) to first order (v a unit tangent vector), whatever the kappas and
    # priors.
    rng = np.random.default_rng(5)
    mus = sphere.l2_normalize_np(rng.standard_normal((4, 5)))
    kappas, priors = np.array([1.0, 3.0, 8.0, 20.0]), np.array([0.4, 0.3, 0.2, 0.1])
    x = sphere.l2_normalize_np(rng.standard_normal(5))
    v = sphere.l2_normalize_np(sphere.tangent_project(x, rng.standard_normal(5)))
    t = 1e-6
    log_post = [
        np.log(posterior(sphere.exp_map(x, s * v), mus, kappas, priors)[2]) for s in (t, -t)
    ]
    assert np.isclose((log_post[0] - log_post[1]) / (2 * t),
                      vmf_posterior_grad(x, mus, kappas, priors, 2) @ v, rtol=1e-6)


def test_the_raw_vectors_reach_the_clamp_and_kappa_1000():
    cases = exercises._06_posterior_cases()
    assert max(kappas.max() for _, kappas, _, _ in cases) == 1000.0
    norms = sorted(np.sqrt((r * r).sum()) for r in cases[0][3])
    assert norms[0] < 1e-12 < norms[1] < 1e-12 * (1 + 2e-9)
