"""exercises.py -- the check cells of the notebooks' 練習問題 (exercises), in one place.

Each notebook ends with exercises the learner solves in code. A check cell calls one of the
`check_*` functions below with the learner's answer; it prints 正解 (correct), 不正解 (wrong, with
the reason) or 未回答 (not answered yet) and returns True, False or None. An unanswered exercise is a
function that still raises NotImplementedError (or an answer that is still None): the notebooks are
executed unsolved in CI, so every check must run clean then.

The checks compare with the project's own functions or with finite differences (value.gradient_check),
never with a hard-coded number the learner cannot see. Reference solutions live in
tests/test_exercises.py, which proves every check can say 正解 and that a wrong answer gets 不正解.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # value.py, utils.py, ... live at the repo root


def verdict(name, judge):
    """Run judge() (True = correct) and print one line: 正解, 不正解 (and why) or 未回答.

    judge may raise NotImplementedError (the solution cell is not filled in yet): 未回答, returns None.
    Any other exception in the learner's code is 不正解 with the error, never a crash of the notebook.
    """
    try:
        ok = judge()
    except NotImplementedError:
        print(f"{name}: 未回答（解答セルを埋めてから、このセルをもう一度実行してください）")
        return None
    except Exception as e:  # the learner's code failed: say how, keep the notebook running
        print(f"{name}: 不正解（{type(e).__name__}: {e}）")
        return False
    print(f"{name}: {'正解' if ok else '不正解'}")
    return bool(ok)


def answered(answer):
    """Raise NotImplementedError for an answer that is still the placeholder None."""
    if answer is None:
        raise NotImplementedError
    return answer


# ============================================================================ 01 autograd traced


# ============================================================================ 02 chapter 21


# ============================================================================ 03 chapter 22


# ============================================================================ 04 lecture 3


def _close_04(got, want, rtol, atol, what):
    """True if got (array-like) has want's shape and matches it; else print where it differs and return False."""
    import numpy as np

    got = np.asarray(got, dtype=float)
    if got.shape != want.shape:
        print(f"  {what}: shape {got.shape}, expected {want.shape}")
        return False
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        k = np.unravel_index(np.argmax(np.abs(got - want) - rtol * np.abs(want)), want.shape)
        print(f"  {what}: at index {tuple(int(i) for i in k)} your answer is {got[k]:.10g}, expected {want[k]:.10g}")
        return False
    return True


def check_04_riemannian_step(riemannian_step):
    """練習問題1: riemannian_step(x, g, lr) (x a unit 1-D vector) must equal sphere.riemannian_sgd_step:
    x <- R(x - lr (g - (g.x) x)), R(v) = v / ||v||."""
    import numpy as np

    import sphere

    def judge():
        rng = np.random.default_rng(401)
        for d, lr in ((3, 0.1), (5, 0.5), (16, 0.02), (16, 2.0), (64, 0.3)):
            x = sphere.l2_normalize_np(rng.standard_normal(d))
            g = 3.0 * rng.standard_normal(d) + 2.0 * x  # with a radial part, which the step must ignore
            got = riemannian_step(x.copy(), g.copy(), lr)
            want = sphere.riemannian_sgd_step(x, g, lr)
            if not _close_04(got, want, 1e-9, 1e-12, f"d = {d}, lr = {lr}"):
                return False
        return True

    return verdict("練習問題1 riemannian_step", judge)


def check_04_safe_normalize(safe_normalize, safe_normalize_backward):
    """練習問題2: safe_normalize(x, eps) = x / max(||x||, eps) (as sphere.l2_normalize_np) and
    safe_normalize_backward(dy, x, eps) = its dx, checked against central differences of the project's
    forward, at ||x|| ~ 1, ~ 1e-7 (where an added eps is visibly wrong) and below eps (the clamped branch)."""
    import numpy as np

    import sphere

    def judge():
        rng = np.random.default_rng(402)
        eps = 1e-12
        for scale in (1.0, 3e-7, 2e-13):
            x = scale * rng.standard_normal(5)
            dy = rng.standard_normal(5)
            y_want = sphere.l2_normalize_np(x, eps=eps)
            at = f"at ||x|| = {np.linalg.norm(x):.1e}"
            if not _close_04(safe_normalize(x.copy(), eps), y_want, 1e-10, 0.0, f"y {at}"):
                return False
            h = 1e-5 * np.linalg.norm(x)  # central differences of L = dy . y(x), one coordinate at a time
            numeric = np.array([(dy @ sphere.l2_normalize_np(x + h * e, eps=eps)
                                 - dy @ sphere.l2_normalize_np(x - h * e, eps=eps)) / (2 * h) for e in np.eye(5)])
            got = safe_normalize_backward(dy.copy(), x.copy(), eps)
            if not _close_04(got, numeric, 1e-6, 1e-6 * np.abs(numeric).max(), f"dx {at}"):
                return False
        return True

    return verdict("練習問題2 safe_normalize", judge)


def check_04_vmf_log_density_s2(vmf_log_density_s2):
    """練習問題3: the closed form on S^2, log(kappa / (4 pi sinh kappa)) + kappa mu.x, must equal
    sphere.vmf_log_density for kappa from 0.01 to 1000 (sinh overflows above ~710: work in log space)."""
    import numpy as np

    import sphere

    def judge():
        rng = np.random.default_rng(403)
        mu = sphere.l2_normalize_np(rng.standard_normal(3))
        x = sphere.l2_normalize_np(rng.standard_normal((6, 3)))
        for kappa in (0.01, 0.5, 3.0, 40.0, 1000.0):
            got = vmf_log_density_s2(x.copy(), mu.copy(), kappa)
            want = sphere.vmf_log_density(x, mu, kappa)
            if not _close_04(got, want, 1e-9, 1e-9, f"kappa = {kappa}"):
                return False
        return True

    return verdict("練習問題3 vmf_log_density_s2", judge)


def check_04_vmf_posterior(vmf_posterior):
    """練習問題4: vmf_posterior(x, mus, kappas, priors) -> p(k | x) of a mixture of vMF(mu_k, kappa_k) with
    priors pi_k, i.e. pi_k C_d(kappa_k) exp(kappa_k mu_k.x) normalized over k; built here from
    sphere.vmf_log_density. With one shared kappa and equal priors it is softmax(kappa mu_k.x)."""
    import numpy as np

    import sphere
    from utils import softmax_np

    def reference(x, mus, kappas, priors):
        logp = np.stack([np.log(p) + sphere.vmf_log_density(x, m, k) for m, k, p in zip(mus, kappas, priors)], axis=1)
        return softmax_np(logp)

    def judge():
        rng = np.random.default_rng(404)
        cases = [(3, 4, [5.0] * 4, [0.25] * 4),                 # the lecture's setting: softmax(kappa cos)
                 (3, 4, [1.0, 4.0, 10.0, 30.0], [0.1, 0.2, 0.3, 0.4]),
                 (16, 5, [4.0, 5.0, 6.0, 7.0, 8.6], [0.2] * 5),  # like microgpt's s_z: one kappa per class
                 (16, 3, [200.0, 600.0, 1000.0], [0.5, 0.3, 0.2])]  # exp(kappa) alone would overflow
        for d, K, kappas, priors in cases:
            mus = sphere.l2_normalize_np(rng.standard_normal((K, d)))
            x = sphere.l2_normalize_np(mus[0] + 0.3 * rng.standard_normal((7, d)))
            kappas, priors = np.array(kappas), np.array(priors)
            want = reference(x, mus, kappas, priors)
            got = vmf_posterior(x.copy(), mus.copy(), kappas.copy(), priors.copy())
            if not _close_04(got, want, 1e-7, 1e-12, f"d = {d}, kappas = {kappas.tolist()}"):
                return False
        return True

    return verdict("練習問題4 vmf_posterior", judge)


# ============================================================================ 05 PyTorch concepts
