"""Reference solutions of notebook 05's exercises (notebooks/exercises.py, section 05).

For every check: the reference solution is 正解 (True), a plausible wrong answer is 不正解 (False), and the
unsolved stub of the notebook is 未回答 (None) without raising.
"""
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402

from utils import linear_np_backward, softmax, softmax_np, softmax_np_backward  # noqa: E402


def stub(*args):
    raise NotImplementedError


# -- 05-1: the bound of He's uniform init (sqrt(6 / fan_in): U(-l, l) has variance l^2 / 3 = 2 / fan_in)


def he_uniform_bound(fan_in):
    return math.sqrt(6.0 / fan_in)


def test_he_uniform_bound_reference_is_correct(capsys):
    assert exercises.check_05_he_uniform_bound(he_uniform_bound) is True
    assert "正解" in capsys.readouterr().out


def test_he_uniform_bound_via_the_variance_is_correct():
    # derived as the notebook suggests: l^2 / 3 = Var = he_std(fan_in)^2
    assert exercises.check_05_he_uniform_bound(lambda fan_in: math.sqrt(3.0) * math.sqrt(2.0 / fan_in)) is True


def test_he_uniform_bound_wrong_answers():
    # the notebook's he_std copied as the bound: a third of He's variance, the signal vanishes
    assert exercises.check_05_he_uniform_bound(lambda fan_in: math.sqrt(2.0 / fan_in)) is False
    assert exercises.check_05_he_uniform_bound(lambda fan_in: 1.0 / math.sqrt(fan_in)) is False      # PyTorch's default
    assert exercises.check_05_he_uniform_bound(lambda fan_in: math.sqrt(3.0 / fan_in)) is False      # Xavier-like
    assert exercises.check_05_he_uniform_bound(lambda fan_in: 6.0 / fan_in) is False                 # no square root
    assert exercises.check_05_he_uniform_bound(lambda fan_in: 0.08) is False                 # microgpt's std


def test_he_uniform_bound_unanswered(capsys):
    assert exercises.check_05_he_uniform_bound(stub) is None
    assert "未回答" in capsys.readouterr().out


# -- 05-2: backward of linear_np(x, w) + b


def linear_bias_np_backward(dy, x, w):
    dx, dw = linear_np_backward(dy, x, w)
    db = dy.reshape(-1, dy.shape[-1]).sum(axis=0)
    return dx, dw, db


def test_linear_bias_backward_reference_is_correct():
    assert exercises.check_05_linear_bias_backward(linear_bias_np_backward) is True


def test_linear_bias_backward_from_scratch_is_correct():
    def from_scratch(dy, x, w):
        dy2, x2 = dy.reshape(-1, dy.shape[-1]), x.reshape(-1, x.shape[-1])
        return dy @ w, dy2.T @ x2, dy2.sum(axis=0)
    assert exercises.check_05_linear_bias_backward(from_scratch) is True


def test_linear_bias_backward_wrong_answers(capsys):
    def db_mean(dy, x, w):          # the mean over the batch instead of the sum
        dx, dw, _ = linear_bias_np_backward(dy, x, w)
        return dx, dw, dy.reshape(-1, dy.shape[-1]).mean(axis=0)

    def dw_transposed(dy, x, w):    # [in, out] instead of nn.Linear's [out, in]
        dx, dw, db = linear_bias_np_backward(dy, x, w)
        return dx, dw.T, db

    def db_first_axis_only(dy, x, w):  # right for one batch axis, wrong for two
        dx, dw, _ = linear_bias_np_backward(dy, x, w)
        return dx, dw, dy.sum(axis=0)

    assert exercises.check_05_linear_bias_backward(db_mean) is False
    assert exercises.check_05_linear_bias_backward(dw_transposed) is False
    assert "dw の形" in capsys.readouterr().out
    assert exercises.check_05_linear_bias_backward(db_first_axis_only) is False
    assert exercises.check_05_linear_bias_backward(lambda dy, x, w: (dy @ w, None)) is False  # not a 3-tuple


def test_linear_bias_backward_unanswered():
    assert exercises.check_05_linear_bias_backward(stub) is None


# -- 05-3: the gradients that reach the keys and the values


def key_value_grads(q, K, V, do, scaled):
    alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
    p = softmax_np(alpha * (K @ q))
    dV = np.outer(p, do)              # o = sum_t p_t v_t
    ds = softmax_np_backward(V @ do, p)   # dL/dp_t = v_t . do, then through softmax
    return alpha * np.outer(ds, q), dV    # s_t = alpha q . k_t


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
    def scale_once(q, K, V, do, scaled):   # 1/sqrt(d) in the forward pass, forgotten in dK
        dK, dV = key_value_grads(q, K, V, do, scaled)
        return dK * (np.sqrt(q.shape[-1]) if scaled else 1.0), dV

    def no_softmax_backward(q, K, V, do, scaled):  # treats softmax as the identity on the way back
        alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
        return alpha * np.outer(V @ do, q), key_value_grads(q, K, V, do, scaled)[1]

    def dv_transposed(q, K, V, do, scaled):  # outer(do, p): shape (d, T) instead of V's (T, d)
        dK, dV = key_value_grads(q, K, V, do, scaled)
        return dK, dV.T

    def dv_uniform(q, K, V, do, scaled):   # as if every value had weight 1/T
        dK, _ = key_value_grads(q, K, V, do, scaled)
        return dK, np.tile(do, (len(K), 1)) / len(K)

    for wrong in (scale_once, no_softmax_backward, dv_transposed, dv_uniform):
        assert exercises.check_05_key_value_grads(wrong) is False, wrong.__name__
    assert "形が" in capsys.readouterr().out
    only_dk = lambda q, K, V, do, scaled: key_value_grads(q, K, V, do, scaled)[0]  # noqa: E731  (not a pair)
    assert exercises.check_05_key_value_grads(only_dk) is False


def test_key_value_grads_copied_is_wrong(capsys):
    import numpy_engine
    from value import Value

    def copied_from_the_engine(q, K, V, do, scaled):  # the NumPy engine's attention backward: refused
        alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
        p = softmax_np(alpha * (K @ q))
        out = [np.zeros((1, len(q))), np.zeros(K.shape), np.zeros(V.shape)]
        numpy_engine.attention_np_backward(do[None], q[None], K, V, p[None], alpha, out)
        return out[1], out[2]

    def by_backward(q, K, V, do, scaled):  # §5's scalar attention with Values for K and V: refused
        alpha = 1 / math.sqrt(len(q)) if scaled else 1.0
        Kv = [[Value(float(a)) for a in row] for row in K]
        Vv = [[Value(float(a)) for a in row] for row in V]
        p = softmax([sum(float(qj) * kj for qj, kj in zip(q, k)) * alpha for k in Kv])
        loss = sum(float(do[j]) * sum(p[t] * Vv[t][j] for t in range(len(Vv))) for j in range(len(q)))
        loss.backward()
        return np.array([[a.grad for a in row] for row in Kv]), np.array([[a.grad for a in row] for row in Vv])

    r = np.random.default_rng(0)
    args = (r.normal(size=4), r.normal(size=(3, 4)), r.normal(size=(3, 4)), r.normal(size=4), True)
    for copied in (copied_from_the_engine, by_backward):
        assert all(np.allclose(a, b) for a, b in zip(copied(*args), key_value_grads(*args)))  # right numbers
        assert exercises.check_05_key_value_grads(copied) is False
        assert "使わずに" in capsys.readouterr().out
        assert all(np.allclose(a, b) for a, b in zip(copied(*args), key_value_grads(*args)))  # restored


def test_key_value_grads_unanswered():
    assert exercises.check_05_key_value_grads(stub) is None
