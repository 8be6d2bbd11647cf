"""Notebook 06's exercise checks (the backward of relu(linear + b), dropout's backward): True on a
right answer, False on a wrong one, None while unanswered."""
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402

from utils import linear_np, linear_np_backward  # noqa: E402


def stub(*args):
    raise NotImplementedError


def linear_relu_np_backward(dy, x, w, b):
    da = dy * (linear_np(x, w) + b > 0)
    dx, dw = linear_np_backward(da, x, w)
    return dx, dw, da.reshape(-1, da.shape[-1]).sum(axis=0)


def test_linear_relu_backward():
    assert exercises.check_06_linear_relu_backward(linear_relu_np_backward) is True
    assert exercises.check_06_linear_relu_backward(stub) is None


def test_linear_relu_backward_from_scratch_is_correct():
    def from_scratch(dy, x, w, b):
        da = dy * (x @ w.T + b > 0)
        da2, x2 = da.reshape(-1, da.shape[-1]), x.reshape(-1, x.shape[-1])
        return da @ w, da2.T @ x2, da2.sum(axis=0)

    assert exercises.check_06_linear_relu_backward(from_scratch) is True


def test_linear_relu_backward_wrong_answers():
    def without_the_relu(dy, x, w, b):
        dx, dw = linear_np_backward(dy, x, w)
        return dx, dw, dy.reshape(-1, dy.shape[-1]).sum(axis=0)

    def bias_of_the_first_row(dy, x, w, b):
        dx, dw, _ = linear_relu_np_backward(dy, x, w, b)
        return dx, dw, (dy * (linear_np(x, w) + b > 0)).reshape(-1, dy.shape[-1])[0]

    def mask_without_the_bias(dy, x, w, b):  # wrong only where b moves a pre-activation over 0
        da = dy * (linear_np(x, w) > 0)
        dx, dw = linear_np_backward(da, x, w)
        return dx, dw, da.reshape(-1, da.shape[-1]).sum(axis=0)

    for wrong in (without_the_relu, bias_of_the_first_row, mask_without_the_bias):
        assert exercises.check_06_linear_relu_backward(wrong) is False, wrong


def test_dropout_backward():
    assert exercises.check_06_dropout_backward(lambda dy, keep, p: dy * keep / (1 - p)) is True
    assert exercises.check_06_dropout_backward(
        lambda dy, keep, p: np.where(keep, dy / (1 - p), 0.0)) is True
    assert exercises.check_06_dropout_backward(stub) is None


def test_dropout_backward_wrong_answers():
    assert exercises.check_06_dropout_backward(lambda dy, keep, p: dy * keep) is False
    assert exercises.check_06_dropout_backward(lambda dy, keep, p: dy / (1 - p)) is False
    assert exercises.check_06_dropout_backward(lambda dy, keep, p: dy * keep * (1 - p)) is False


# §6: exp for notebook 01's Value, its local gradient against the central difference
def exp(a):
    e = math.exp(a.data)
    return type(a)(e, (a,), (e,), "exp")


def test_exp_on_notebook_01s_value_and_on_value_py():
    import value
    assert exercises.check_06_exp(exercises.value_01(), exp) is True
    assert exercises.check_06_exp(value.Value, exp) is True
    assert exercises.check_06_exp(value.Value, stub) is None


def test_exp_wrong_answers(capsys):
    Value = exercises.value_01()

    def exp_with_local_grad(local_grad):
        return lambda a: Value(math.exp(a.data), (a,), (local_grad(a.data),), "exp")
    assert exercises.check_06_exp(Value, exp_with_local_grad(lambda x: x)) is False
    assert exercises.check_06_exp(Value, exp_with_local_grad(lambda x: 1.0)) is False
    two_nodes = exercises.check_06_exp(Value, lambda a: a * Value(math.exp(a.data) / a.data))
    assert two_nodes is False and "1つのノード" in capsys.readouterr().out
