"""Reference solutions of notebook 05's exercises (notebooks/exercises.py, section 05).

For every check: the reference solution is 正解 (True); a plausible wrong answer, the project's
own function called or copied, a numerical answer (finite differences, or for 練習問題 1 a bound
found by sampling) and an answer that reads the judge's frame are 不正解 (False); the unsolved stub
of the notebook is 未回答 (None) without raising.

練習問題 1 (He's uniform bound) is a number no project function computes, so it has no
copied-function test.
"""

import functools
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402
from exercise_attacks import DIFFERENCES, copies, read_the_judges_frame  # noqa: E402

import numpy_engine  # noqa: E402
from utils import (  # noqa: E402
    linear,
    linear_np,
    linear_np_backward,
    softmax,
    softmax_np,
    softmax_np_backward,  # noqa: E402
)
from value import Value  # noqa: E402


def stub(*args):
    raise NotImplementedError


# -- 05-1: the bound of He's uniform init (sqrt(6 / fan_in): U(-l, l) has variance l^2 / 3 = 2 /
# fan_in)


def he_uniform_bound(fan_in):
    return math.sqrt(6.0 / fan_in)


def test_he_uniform_bound_reference_is_correct(capsys):
    assert exercises.check_05_he_uniform_bound(he_uniform_bound) is True
    out = capsys.readouterr().out
    assert "正解" in out and "30 段目" in out


def test_he_uniform_bound_via_the_variance_is_correct():
    # derived as the notebook suggests: l^2 / 3 = Var = he_std(fan_in)^2
    assert (
        exercises.check_05_he_uniform_bound(lambda fan_in: math.sqrt(3.0) * math.sqrt(2.0 / fan_in))
        is True
    )


def test_he_uniform_bound_wrong_answers():
    # the notebook's he_std copied as the bound: a third of He's variance, the signal vanishes
    assert exercises.check_05_he_uniform_bound(lambda fan_in: math.sqrt(2.0 / fan_in)) is False
    # PyTorch's default
    assert exercises.check_05_he_uniform_bound(lambda fan_in: 1.0 / math.sqrt(fan_in)) is False
    # Xavier-like
    assert exercises.check_05_he_uniform_bound(lambda fan_in: math.sqrt(3.0 / fan_in)) is False
    # no square root
    assert exercises.check_05_he_uniform_bound(lambda fan_in: 6.0 / fan_in) is False
    # microgpt's std
    assert exercises.check_05_he_uniform_bound(lambda fan_in: 0.08) is False


# l such that the sample variance of U(-l, l) is 2 / fan_in, from 10^5 draws
def bound_by_sampling(fan_in):
    u = np.random.default_rng(fan_in).uniform(-1.0, 1.0, 100_000)
    return math.sqrt(2.0 / fan_in / u.var())


@functools.lru_cache(maxsize=1)
def stack_constant():
    """c such that l = c / sqrt(fan_in) keeps the 30-layer stack's ratio at 1, by bisection (a
    numerical search)."""
    lo, hi = 0.5, 4.0
    for _ in range(8):  # (to 1.5%: the search costs one 30-layer stack per step)
        mid = (lo + hi) / 2
        ratio = exercises.he_stack_ratio(lambda f, c=mid: c / math.sqrt(f))
        lo, hi = (mid, hi) if ratio < 1 else (lo, mid)
    return (lo + hi) / 2


def bound_that_keeps_the_stack_alive(fan_in):
    return stack_constant() / math.sqrt(fan_in)


@pytest.mark.slow
def test_he_uniform_bound_found_numerically_is_wrong():
    assert bound_by_sampling(64) == pytest.approx(he_uniform_bound(64), rel=1e-2)  # close ...
    # ... not the identity
    assert exercises.check_05_he_uniform_bound(bound_by_sampling) is False
    # what the old check accepted ...
    assert 0.5 < exercises.he_stack_ratio(bound_that_keeps_the_stack_alive) < 2
    assert exercises.check_05_he_uniform_bound(bound_that_keeps_the_stack_alive) is False


def test_he_uniform_bound_unanswered(capsys):
    assert exercises.check_05_he_uniform_bound(stub) is None
    assert "未回答" in capsys.readouterr().out


def test_he_uniform_bound_reading_the_judges_frame_is_wrong():
    assert exercises.check_05_he_uniform_bound(read_the_judges_frame) is False


# -- 05-2: backward of relu(linear_np(x, w) + b)


def linear_relu_np_backward(dy, x, w, b):
    da = dy * (linear_np(x, w) + b > 0)
    dx, dw = linear_np_backward(da, x, w)
    return dx, dw, da.reshape(-1, da.shape[-1]).sum(axis=0)


def test_linear_relu_backward_reference_is_correct():
    assert exercises.check_05_linear_relu_backward(linear_relu_np_backward) is True


def test_linear_relu_backward_from_scratch_is_correct():
    def from_scratch(dy, x, w, b):
        da = dy * (x @ w.T + b > 0)
        da2, x2 = da.reshape(-1, da.shape[-1]), x.reshape(-1, x.shape[-1])
        return da @ w, da2.T @ x2, da2.sum(axis=0)

    assert exercises.check_05_linear_relu_backward(from_scratch) is True


def test_linear_relu_backward_wrong_answers(capsys):
    def without_the_relu(dy, x, w, b):  # the bias layer's backward, the ReLU forgotten
        dx, dw = linear_np_backward(dy, x, w)
        return dx, dw, dy.reshape(-1, dy.shape[-1]).sum(axis=0)

    # relu'(a) read as [y >= 0]: 1 at the kink side where y = 0
    def mask_from_the_output(dy, x, w, b):
        return linear_relu_np_backward(dy * 0 + dy, x, w, b - 1e300 * 0)[:2] + (
            dy.reshape(-1, 3).sum(axis=0),
        )

    def db_mean(dy, x, w, b):  # the mean over the batch instead of the sum
        dx, dw, _ = linear_relu_np_backward(dy, x, w, b)
        da = dy * (linear_np(x, w) + b > 0)
        return dx, dw, da.reshape(-1, da.shape[-1]).mean(axis=0)

    def dw_transposed(dy, x, w, b):  # [in, out] instead of nn.Linear's [out, in]
        dx, dw, db = linear_relu_np_backward(dy, x, w, b)
        return dx, dw.T, db

    def db_first_axis_only(dy, x, w, b):  # right for one batch axis, wrong for two
        dx, dw, _ = linear_relu_np_backward(dy, x, w, b)
        return dx, dw, (dy * (linear_np(x, w) + b > 0)).sum(axis=0)

    for wrong in (
        without_the_relu,
        mask_from_the_output,
        db_mean,
        dw_transposed,
        db_first_axis_only,
    ):
        assert exercises.check_05_linear_relu_backward(wrong) is False, wrong.__name__
    assert "dw" in capsys.readouterr().out
    # not a 3-tuple
    assert exercises.check_05_linear_relu_backward(lambda dy, x, w, b: (dy @ w, None)) is False


def test_linear_relu_backward_unanswered():
    assert exercises.check_05_linear_relu_backward(stub) is None


def test_linear_relu_backward_by_finite_differences_is_wrong():
    def layer_loss(dy, x, w, b):
        return float(np.sum(dy * np.maximum(linear_np(x, w) + b, 0.0)))

    for method in ("central", "richardson"):
        diff = DIFFERENCES[method]

        def answer(dy, x, w, b, diff=diff):
            return (diff(lambda v: layer_loss(dy, v, w, b), x),
                    diff(lambda v: layer_loss(dy, x, v, b), w),
                    diff(lambda v: layer_loss(dy, x, w, v), b))

        x, w, b, dy = exercises._05_linear_relu_cases()[0]
        assert all(
            np.allclose(g, r, rtol=1e-6, atol=1e-8)  # close away from the kink ...
            for g, r in zip(answer(dy, x, w, b), linear_relu_np_backward(dy, x, w, b))
        )
        assert exercises.check_05_linear_relu_backward(answer) is False  # ... not next to it


def test_the_kink_case_has_pre_activations_next_to_zero():
    x, w, b, _ = exercises._05_linear_relu_cases()[-1]
    pre = linear_np(x, w) + b
    assert (np.sort(np.abs(pre).ravel())[2] < 2e-12
            and (pre.ravel()[np.argsort(np.abs(pre).ravel())[:3]] > 0).sum() == 2)


def test_linear_relu_backward_by_the_engine_is_wrong(capsys):
    # the layer with Values, backpropagated: refused
    def by_the_engine(dy, x, w, b, backward=Value.backward):
        W = [[Value(float(v)) for v in row] for row in w]
        B = [Value(float(v)) for v in b]
        X = [[Value(float(v)) for v in row] for row in x.reshape(-1, x.shape[-1])]
        backward(
            sum(float(g) * (yo + bo).relu() for row, dys in zip(X, dy.reshape(-1, dy.shape[-1]))
                for g, yo, bo in zip(dys, linear(row, W), B))
        )
        return (np.array([[v.grad for v in row] for row in X]).reshape(x.shape),
                np.array([[v.grad for v in row] for row in W]), np.array([v.grad for v in B]))

    copies_of_backward = copies(Value.backward)
    for copied in (by_the_engine,
                   *[lambda *a, c=c: by_the_engine(*a, backward=c) for c in copies_of_backward]):
        x, w, b, dy = exercises._05_linear_relu_cases()[1]
        assert all(np.allclose(g, r)
                   for g, r in zip(copied(dy, x, w, b), linear_relu_np_backward(dy, x, w, b)))
        assert exercises.check_05_linear_relu_backward(copied) is False
        assert "使わずに" in capsys.readouterr().out


def test_linear_relu_backward_reading_the_judges_frame_is_wrong():
    assert exercises.check_05_linear_relu_backward(read_the_judges_frame) is False


# -- 05-3: the gradients that reach the keys and the values


def key_value_grads(q, K, V, do, scaled):
    alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
    p = softmax_np(alpha * (K @ q))
    dV = np.outer(p, do)  # o = sum_t p_t v_t
    ds = softmax_np_backward(V @ do, p)  # dL/dp_t = v_t . do, then through softmax
    return alpha * np.outer(ds, q), dV  # s_t = alpha q . k_t


def test_key_value_grads_reference_is_correct(capsys):
    assert exercises.check_05_key_value_grads(key_value_grads) is True
    out = capsys.readouterr().out
    assert "正解" in out and "|dL/dK|" in out and "|dL/dV|" in out


def test_key_value_grads_by_hand_is_correct():
    def by_hand(q, K, V, do, scaled):
        alpha = 1 / math.sqrt(len(q)) if scaled else 1.0
        s = alpha * (K @ q)
        p = np.exp(s - s.max())
        p /= p.sum()
        dp = V @ do
        ds = p * (dp - p @ dp)
        return [[alpha * ds[t] * qj for qj in q] for t in range(len(K))], p[:, None] * do[None, :]

    assert exercises.check_05_key_value_grads(by_hand) is True


def test_key_value_grads_wrong_answers(capsys):
    def scale_once(q, K, V, do, scaled):  # 1/sqrt(d) in the forward pass, forgotten in dK
        dK, dV = key_value_grads(q, K, V, do, scaled)
        return dK * (np.sqrt(q.shape[-1]) if scaled else 1.0), dV

    def no_softmax_backward(q, K, V, do, scaled):  # treats softmax as the identity on the way back
        alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
        return alpha * np.outer(V @ do, q), key_value_grads(q, K, V, do, scaled)[1]

    def dv_transposed(q, K, V, do, scaled):  # outer(do, p): shape (d, T) instead of V's (T, d)
        dK, dV = key_value_grads(q, K, V, do, scaled)
        return dK, dV.T

    def dv_uniform(q, K, V, do, scaled):  # as if every value had weight 1/T
        dK, _ = key_value_grads(q, K, V, do, scaled)
        return dK, np.tile(do, (len(K), 1)) / len(K)

    for wrong in (scale_once, no_softmax_backward, dv_transposed, dv_uniform):
        assert exercises.check_05_key_value_grads(wrong) is False, wrong.__name__
    assert "shape" in capsys.readouterr().out

    def only_dk(q, K, V, do, scaled):  # not a pair
        return key_value_grads(q, K, V, do, scaled)[0]
    assert exercises.check_05_key_value_grads(only_dk) is False


def test_key_value_grads_by_finite_differences_is_wrong():
    def attention_loss(q, K, V, do, scaled):
        alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
        s = alpha * (K @ q)
        p = np.exp(s - s.max())
        return float(do @ ((p / p.sum()) @ V))

    for method in ("central", "richardson"):
        diff = DIFFERENCES[method]

        def answer(q, K, V, do, scaled, diff=diff):
            return (diff(lambda v: attention_loss(q, v, V, do, scaled), K),
                    diff(lambda v: attention_loss(q, K, v, do, scaled), V))

        r = np.random.default_rng(9)
        args = (r.normal(size=4), r.normal(size=(3, 4)), r.normal(size=(3, 4)), r.normal(size=4),
                True)
        assert all(np.allclose(g, w, rtol=1e-6, atol=1e-9)
                   for g, w in zip(answer(*args), key_value_grads(*args)))
        # not where the softmax saturates
        assert exercises.check_05_key_value_grads(answer) is False


def test_key_value_grads_copied_is_wrong(capsys):
    def copied_from_the_engine(q, K, V, do, scaled, backward=numpy_engine.attention_backward):
        alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
        p = softmax_np(alpha * (K @ q))
        _, dK, dV = backward(do[None], q[None], K, V, p[None], alpha)
        return dK, dV

    # §5's scalar attention with Values for K and V
    def by_backward(q, K, V, do, scaled, backward=Value.backward):
        alpha = 1 / math.sqrt(len(q)) if scaled else 1.0
        Kv = [[Value(float(a)) for a in row] for row in K]
        Vv = [[Value(float(a)) for a in row] for row in V]
        p = softmax([sum(float(qj) * kj for qj, kj in zip(q, k)) * alpha for k in Kv])
        backward(
            sum(float(do[j]) * sum(p[t] * Vv[t][j] for t in range(len(Vv))) for j in range(len(q)))
        )
        return np.array([[a.grad for a in row] for row in Kv]), np.array(
            [[a.grad for a in row] for row in Vv]
        )

    variants = [
        copied_from_the_engine,
        by_backward,
        *[lambda *a, c=c: copied_from_the_engine(*a, backward=c)
          for c in copies(numpy_engine.attention_backward)],
        *[lambda *a, c=c: by_backward(*a, backward=c) for c in copies(Value.backward)],
    ]
    r = np.random.default_rng(0)
    args = (r.normal(size=4), r.normal(size=(3, 4)), r.normal(size=(3, 4)), r.normal(size=4), True)
    for copied in variants:
        # right numbers
        assert all(np.allclose(a, b) for a, b in zip(copied(*args), key_value_grads(*args)))
        assert exercises.check_05_key_value_grads(copied) is False
        assert "使わずに" in capsys.readouterr().out
        # restored
        assert all(np.allclose(a, b) for a, b in zip(copied(*args), key_value_grads(*args)))


def test_key_value_grads_unanswered():
    assert exercises.check_05_key_value_grads(stub) is None


def test_key_value_grads_reading_the_judges_frame_is_wrong():
    assert exercises.check_05_key_value_grads(read_the_judges_frame) is False
