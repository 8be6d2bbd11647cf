"""Notebook 03's build steps and exercises (chapter 21's functions on lists of Values): 正解 (True)
to a right answer, 不正解 (False) to a wrong one, 未回答 (None) to the unsolved stub."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402
from test_exercises_01 import stub  # noqa: E402

import utils  # noqa: E402


def linear_transposed(x, w):  # columns of w instead of rows: right only for a square symmetric w
    return [sum(w[i][o] * x[i] for i in range(len(x))) for o in range(len(w[0]))]


def softmax_without_the_max(logits):  # e^1000 overflows
    exps = [v.exp() for v in logits]
    total = sum(exps)
    return [e / total for e in exps]


def rmsnorm_without_eps(x):
    return [xi * (sum(v * v for v in x) / len(x)) ** -0.5 for xi in x]


def log_softmax(z):
    m = max(v.data for v in z)
    lse = sum((v - m).exp() for v in z).log()
    return [v - m - lse for v in z]


def layernorm(x, eps=1e-5):
    mu = sum(x) / len(x)
    centered = [v - mu for v in x]
    var = sum(c * c for c in centered) / len(x)
    return [c * (var + eps) ** -0.5 for c in centered]


def layernorm_without_eps(x):
    return layernorm(x, eps=0.0)


def test_build_steps():
    assert exercises.check_03_linear(utils.linear) is True
    assert exercises.check_03_linear(linear_transposed) is False
    assert exercises.check_03_linear(stub) is None
    assert exercises.check_03_softmax(utils.softmax) is True
    assert exercises.check_03_softmax(softmax_without_the_max) is False
    assert exercises.check_03_softmax(stub) is None
    assert exercises.check_03_rmsnorm(utils.rmsnorm) is True
    assert exercises.check_03_rmsnorm(rmsnorm_without_eps) is False
    assert exercises.check_03_rmsnorm(stub) is None


def test_exercises():
    assert exercises.check_03_log_softmax(log_softmax) is True
    assert exercises.check_03_log_softmax(lambda z: [p.log() for p in utils.softmax(z)]) is False
    assert exercises.check_03_log_softmax(stub) is None
    assert exercises.check_03_layernorm(layernorm) is True
    assert exercises.check_03_layernorm(layernorm_without_eps) is False
    assert exercises.check_03_layernorm(utils.rmsnorm) is False
    assert exercises.check_03_layernorm(stub) is None
