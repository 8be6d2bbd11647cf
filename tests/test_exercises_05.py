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

from utils import linear_np_backward, softmax_np, softmax_np_backward  # noqa: E402


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


# -- 05-3: the gradient that reaches the query


def query_grad(q, K, dp, scaled):
    alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
    p = softmax_np(alpha * (K @ q))
    ds = softmax_np_backward(dp, p)   # dL/ds
    return alpha * (ds @ K)           # s_t = alpha q . k_t


def test_query_grad_reference_is_correct(capsys):
    assert exercises.check_05_query_grad(query_grad) is True
    assert "正解" in capsys.readouterr().out


def test_query_grad_by_hand_is_correct():
    def by_hand(q, K, dp, scaled):
        alpha = 1 / math.sqrt(len(q)) if scaled else 1.0
        s = alpha * (K @ q)
        p = np.exp(s - s.max())
        p /= p.sum()
        ds = p * (dp - p @ dp)
        return alpha * (K.T @ ds)
    assert exercises.check_05_query_grad(by_hand) is True


def test_query_grad_wrong_answers():
    def scale_once(q, K, dp, scaled):   # applies 1/sqrt(d) in the forward but forgets it in the backward
        alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
        return softmax_np_backward(dp, softmax_np(alpha * (K @ q))) @ K

    def no_softmax_backward(q, K, dp, scaled):  # treats softmax as the identity
        alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
        return alpha * (dp @ K)

    assert exercises.check_05_query_grad(scale_once) is False
    assert exercises.check_05_query_grad(no_softmax_backward) is False


def test_query_grad_unanswered():
    assert exercises.check_05_query_grad(stub) is None
