"""Notebook 02's exercises: each check says 正解 for the reference solution, 不正解 for a plausible
wrong answer, and 未回答 for the unsolved stub (so the notebook runs clean unsolved)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402


def stub(*args):
    raise NotImplementedError


# --------------------------------------------------------------------------- reference solutions


def softmax_jacobian(p):
    return np.diag(p) - np.outer(p, p)


def rmsnorm_backward(dy, x):
    n = x.shape[-1]
    s = ((x * x).mean(axis=-1, keepdims=True) + 1e-5) ** -0.5
    return s * dy - s**3 * x * (dy * x).sum(axis=-1, keepdims=True) / n


def layernorm_backward(dy, x):
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    xhat = (x - x.mean(axis=-1, keepdims=True)) / sigma
    return (dy - dy.mean(axis=-1, keepdims=True) - xhat * (dy * xhat).mean(axis=-1, keepdims=True)) / sigma


# --------------------------------------------------------------------------- plausible wrong answers


def jacobian_diagonal_only(p):  # forgets the off-diagonal -p_i p_j
    return np.diag(p * (1 - p))


def jacobian_sign_flipped(p):
    return np.outer(p, p) - np.diag(p)


def rmsnorm_scale_as_constant(dy, x):  # the path through the scale is missing
    return dy * ((x * x).mean(axis=-1, keepdims=True) + 1e-5) ** -0.5


def rmsnorm_unbatched(dy, x):  # works on one vector only: the sums run over the whole array
    s = ((x * x).mean() + 1e-5) ** -0.5
    return s * dy - s**3 * x * (dy * x).mean()


def layernorm_without_variance_path(dy, x):  # keeps the mean path, forgets that sigma depends on x
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    return (dy - dy.mean(axis=-1, keepdims=True)) / sigma


def layernorm_as_rmsnorm(dy, x):  # treats LayerNorm as if it did not subtract the mean
    return rmsnorm_backward(dy, x)


CASES = [
    (exercises.check_02_softmax_jacobian, softmax_jacobian, [jacobian_diagonal_only, jacobian_sign_flipped]),
    (exercises.check_02_rmsnorm_backward, rmsnorm_backward, [rmsnorm_scale_as_constant, rmsnorm_unbatched]),
    (exercises.check_02_layernorm_backward, layernorm_backward,
     [layernorm_without_variance_path, layernorm_as_rmsnorm]),
]
IDS = ["softmax_jacobian", "rmsnorm_backward", "layernorm_backward"]


@pytest.mark.parametrize("check, solution, wrong", CASES, ids=IDS)
def test_reference_solution_is_correct(check, solution, wrong, capsys):
    assert check(solution) is True
    assert "正解" in capsys.readouterr().out


@pytest.mark.parametrize("check, solution, wrong", CASES, ids=IDS)
def test_wrong_answers_are_wrong(check, solution, wrong, capsys):
    for answer in wrong:
        assert check(answer) is False, answer.__name__
        assert "不正解" in capsys.readouterr().out


@pytest.mark.parametrize("check, solution, wrong", CASES, ids=IDS)
def test_unsolved_stub_is_unanswered(check, solution, wrong, capsys):
    assert check(stub) is None
    assert "未回答" in capsys.readouterr().out


@pytest.mark.parametrize("check, solution, wrong", CASES, ids=IDS)
def test_an_answer_that_raises_or_has_the_wrong_shape_is_wrong(check, solution, wrong, capsys):
    def broken(*args):
        raise ValueError("oops")

    def scalar(*args):
        return 0.0

    assert check(broken) is False
    assert check(scalar) is False
    out = capsys.readouterr().out
    assert out.count("不正解") == 2 and "ValueError" in out


def test_layernorm_check_prints_the_gradient_check_table_on_a_mismatch(capsys):
    assert exercises.check_02_layernorm_backward(layernorm_without_variance_path) is False
    out = capsys.readouterr().out
    assert "gradient_check at 5 inputs" in out and "FAIL" in out


def test_reference_solutions_agree_with_the_project():
    # the reference rmsnorm backward is utils.rmsnorm_np_backward; layernorm's rows of dx sum to 0 (shift invariance)
    import utils

    rng = np.random.default_rng(0)
    x, dy = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    assert np.allclose(rmsnorm_backward(dy, x), utils.rmsnorm_np_backward(dy, x), rtol=1e-12, atol=1e-14)
    assert np.allclose(layernorm_backward(dy, x).sum(axis=-1), 0.0, atol=1e-12)
