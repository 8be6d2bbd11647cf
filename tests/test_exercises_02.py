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


def log_softmax_jacobian(z):
    p = np.exp(z - z.max())
    p /= p.sum()
    return np.eye(z.size) - p[None, :]                  # d log p_i / d z_j = delta_ij - p_j


def rmsnorm_backward(dy, x):
    n = x.shape[-1]
    s = ((x * x).mean(axis=-1, keepdims=True) + 1e-5) ** -0.5
    return s * dy - s**3 * x * (dy * x).sum(axis=-1, keepdims=True) / n


def layernorm_backward(dy, x):
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    xhat = (x - x.mean(axis=-1, keepdims=True)) / sigma
    return (dy - dy.mean(axis=-1, keepdims=True) - xhat * (dy * xhat).mean(axis=-1, keepdims=True)) / sigma


# --------------------------------------------------------------------------- plausible wrong answers


def softmax_jacobian_instead(z):  # the Jacobian of softmax itself (shown in §2), without the log
    p = np.exp(z - z.max())
    p /= p.sum()
    return np.diag(p) - np.outer(p, p)


def log_softmax_jacobian_transposed(z):  # delta_ij - p_i: the rows and columns swapped
    return log_softmax_jacobian(z).T


def log_softmax_jacobian_dividing_by_p(z):  # J of softmax divided row by row by p_i: 0/0 where p_i underflows to 0
    p = np.exp(z - z.max())
    p /= p.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.diag(p) - np.outer(p, p)) / p[:, None]


def log_softmax_jacobian_unstable(z):  # exp without subtracting the max: nan at logits of 1000
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.exp(z) / np.exp(z).sum()
    return np.eye(z.size) - p[None, :]


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
    (exercises.check_02_log_softmax_jacobian, log_softmax_jacobian,
     [softmax_jacobian_instead, log_softmax_jacobian_transposed, log_softmax_jacobian_unstable,
      log_softmax_jacobian_dividing_by_p]),
    (exercises.check_02_rmsnorm_backward, rmsnorm_backward, [rmsnorm_scale_as_constant, rmsnorm_unbatched]),
    (exercises.check_02_layernorm_backward, layernorm_backward,
     [layernorm_without_variance_path, layernorm_as_rmsnorm]),
]
IDS = ["log_softmax_jacobian", "rmsnorm_backward", "layernorm_backward"]


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


# --------------------------------------------------------------------------- copied answers


def log_softmax_jacobian_from_softmax_backward(z):  # row i = softmax_np_backward(e_i / p_i, p)
    import utils

    p = utils.softmax_np(z)
    return np.stack([utils.softmax_np_backward(e / p[i], p) for i, e in enumerate(np.eye(z.size))])


def log_softmax_jacobian_from_cross_entropy(z):  # -log p_i is the loss for the target i: minus its gradient
    import utils

    return -np.stack([utils.cross_entropy_np_backward(z[None, :], np.array([i]))[0] for i in range(z.size)])


def log_softmax_jacobian_from_the_fused_loss(z):
    import numpy_engine

    return -numpy_engine.cross_entropy_fused(np.tile(z, (z.size, 1)), np.arange(z.size))[1] * z.size


def log_softmax_jacobian_by_backward(z):  # the notebook's jacobian() idea on log(softmax): the engine's answer
    import utils
    from value import Value, zero_grad

    leaves = [Value(float(v)) for v in z - z.max()]
    J = []
    for out in [p.log() for p in utils.softmax(leaves)]:
        zero_grad(leaves)
        out.backward()
        J.append([v.grad for v in leaves])
    return np.array(J)


def rmsnorm_backward_copied(dy, x):
    import utils

    return utils.rmsnorm_np_backward(dy, x)


def rmsnorm_backward_fused(dy, x):
    import numpy_engine

    y, r = numpy_engine.rmsnorm_fused(x.reshape(-1, x.shape[-1]))
    return numpy_engine.rmsnorm_fused_backward(dy.reshape(y.shape), y, r).reshape(x.shape)


def rmsnorm_backward_by_the_engine(dy, x):  # the check's own reference, row by row with Value.backward
    import utils
    from value import Value

    dx = np.zeros_like(x)
    for i in np.ndindex(*x.shape[:-1]):
        xs = [Value(float(v)) for v in x[i]]
        sum(float(g) * yj for g, yj in zip(dy[i], utils.rmsnorm(xs))).backward()
        dx[i] = [v.grad for v in xs]
    return dx


def layernorm_backward_by_the_engine(dy, x):  # LayerNorm written with Values, backpropagated by the engine
    from value import Value

    dx = np.zeros_like(x)
    for i in np.ndindex(*x.shape[:-1]):
        xs = [Value(float(v)) for v in x[i]]
        mu = sum(xs) / len(xs)
        var = sum((v - mu) ** 2 for v in xs) / len(xs)
        y = [(v - mu) * (var + 1e-5) ** -0.5 for v in xs]
        sum(float(g) * yj for g, yj in zip(dy[i], y)).backward()
        dx[i] = [v.grad for v in xs]
    return dx


COPIED = [
    (exercises.check_02_log_softmax_jacobian, log_softmax_jacobian_from_softmax_backward),
    (exercises.check_02_log_softmax_jacobian, log_softmax_jacobian_from_cross_entropy),
    (exercises.check_02_log_softmax_jacobian, log_softmax_jacobian_from_the_fused_loss),
    (exercises.check_02_log_softmax_jacobian, log_softmax_jacobian_by_backward),
    (exercises.check_02_rmsnorm_backward, rmsnorm_backward_copied),
    (exercises.check_02_rmsnorm_backward, rmsnorm_backward_fused),
    (exercises.check_02_rmsnorm_backward, rmsnorm_backward_by_the_engine),
    (exercises.check_02_layernorm_backward, layernorm_backward_by_the_engine),
]


def copy_gives_the_right_numbers(check, copied):
    rng = np.random.default_rng(1)
    if check is exercises.check_02_log_softmax_jacobian:
        z = rng.normal(size=4)
        return np.allclose(copied(z), log_softmax_jacobian(z), atol=1e-12)
    dy, x = rng.normal(size=(2, 5)), rng.normal(size=(2, 5))
    solution = rmsnorm_backward if check is exercises.check_02_rmsnorm_backward else layernorm_backward
    return np.allclose(copied(dy, x), solution(dy, x), atol=1e-9)


@pytest.mark.parametrize("check, copied", COPIED, ids=[c.__name__ for _, c in COPIED])
def test_copied_answers_are_wrong(check, copied, capsys):
    # Each copy computes the right numbers, so without the refusal the check would say 正解 ...
    assert copy_gives_the_right_numbers(check, copied)
    # ... but the functions it calls are refused while it runs: 不正解,
    assert check(copied) is False
    out = capsys.readouterr().out
    assert "不正解" in out and "使わずに" in out
    # and they work again after the check.
    assert copy_gives_the_right_numbers(check, copied)


def test_dividing_by_p_is_right_where_no_probability_underflows():
    # The hint's second route is the same matrix wherever every p_i > 0; only the logits of -1000 make it 0/0.
    z = np.array([0.3, -1.2, 2.0, 0.5])
    assert np.allclose(log_softmax_jacobian_dividing_by_p(z), log_softmax_jacobian(z), atol=1e-12)
