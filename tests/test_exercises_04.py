"""Notebook 04's build steps and exercises (chapter 21's backward in NumPy): 正解 (True) to a right
answer in any correct form, 不正解 (False) to a wrong one or to central differences where they lose
their digits, 未回答 (None) to the unsolved stub."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402
from test_exercises_01 import stub  # noqa: E402


def linear_backward(dy, x, w):
    return dy @ w, dy.reshape(-1, dy.shape[-1]).T @ x.reshape(-1, x.shape[-1])


def linear_backward_one_position(dy, x, w):  # dw of the last position only, not the batch's sum
    return dy @ w, np.outer(dy.reshape(-1, dy.shape[-1])[-1], x.reshape(-1, x.shape[-1])[-1])


def softmax_backward(dp, p):
    return p * (dp - (dp * p).sum(axis=-1, keepdims=True))


def softmax_backward_by_jacobian(dp, p):  # another right form: the full diag(p) - p p^T
    return (np.diag(p) - np.outer(p, p)) @ dp


def rmsnorm_backward(dy, x):
    n = x.shape[-1]
    s = ((x * x).mean(axis=-1, keepdims=True) + 1e-5) ** -0.5
    return s * dy - s**3 * x * (dy * x).sum(axis=-1, keepdims=True) / n


def rmsnorm_backward_scale_constant(dy, x):  # the path through the scale forgotten
    return dy * ((x * x).mean(axis=-1, keepdims=True) + 1e-5) ** -0.5


def by_central_differences(forward, h=1e-6):
    def backward(dy, x):
        dx = np.zeros_like(x)
        for k in np.ndindex(*x.shape):
            e = np.zeros_like(x)
            e[k] = h * max(1.0, abs(x[k]))
            dx[k] = ((dy * forward(x + e)).sum() - (dy * forward(x - e)).sum()) / (2 * e[k])
        return dx
    return backward


def rmsnorm(x):
    return x * ((x * x).mean(axis=-1, keepdims=True) + 1e-5) ** -0.5


def layernorm(x):
    return (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def log_softmax_jacobian(z):
    e = np.exp(z - z.max())
    return np.eye(z.size) - (e / e.sum())[None, :]


def log_softmax_jacobian_by_division(z):  # J_softmax / p_i: 0/0 where p underflows at -5000
    e = np.exp(z - z.max())
    p = e / e.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.diag(p) - np.outer(p, p)) / p[:, None]


def layernorm_backward(dy, x):
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    xhat = (x - x.mean(axis=-1, keepdims=True)) / sigma
    mean = (dy * xhat).mean(axis=-1, keepdims=True)
    return (dy - dy.mean(axis=-1, keepdims=True) - xhat * mean) / sigma


def test_build_steps():
    assert exercises.check_04_linear_backward(linear_backward) is True
    assert exercises.check_04_linear_backward(linear_backward_one_position) is False
    assert exercises.check_04_linear_backward(stub) is None
    assert exercises.check_04_softmax_backward(softmax_backward) is True
    assert exercises.check_04_softmax_backward(softmax_backward_by_jacobian) is True
    assert exercises.check_04_softmax_backward(lambda dp, p: p * dp) is False
    assert exercises.check_04_softmax_backward(stub) is None
    assert exercises.check_04_rmsnorm_backward(rmsnorm_backward) is True
    assert exercises.check_04_rmsnorm_backward(rmsnorm_backward_scale_constant) is False
    assert exercises.check_04_rmsnorm_backward(by_central_differences(rmsnorm)) is False
    assert exercises.check_04_rmsnorm_backward(stub) is None


def test_exercises():
    assert exercises.check_04_log_softmax_jacobian(log_softmax_jacobian) is True
    assert exercises.check_04_log_softmax_jacobian(log_softmax_jacobian_by_division) is False
    assert exercises.check_04_log_softmax_jacobian(lambda z: log_softmax_jacobian(z).T) is False
    assert exercises.check_04_log_softmax_jacobian(stub) is None
    assert exercises.check_04_layernorm_backward(layernorm_backward) is True
    assert exercises.check_04_layernorm_backward(by_central_differences(layernorm)) is False
    assert exercises.check_04_layernorm_backward(lambda dy, x: dy) is False
    assert exercises.check_04_layernorm_backward(stub) is None


def test_linear_backward_says_which_part_is_wrong(capsys):
    assert exercises.check_04_linear_backward(linear_backward_one_position) is False
    out = capsys.readouterr().out
    assert "バッチ (2, 3, 4)：部分ごとの最大の差" in out and "章の例 dy = [1]：部分ごとの最大の差" not in out
    lines = out[out.index("バッチ (2, 3, 4)：部分ごとの最大の差"):].splitlines()[1:3]
    assert lines[0].strip().startswith("dx：一致")
    assert lines[1].strip().startswith("dw：不一致") and "dw[" in lines[1] and "相対差" in lines[1]
