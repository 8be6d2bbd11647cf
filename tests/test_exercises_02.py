"""Notebook 02's exercises: each check says 正解 for the reference solution, 不正解 for plausible
wrong answers, for the project's own backward functions called or copied, for finite-difference
answers (central differences and Richardson extrapolation) and for an answer that reads the
judge's frame; 未回答 for the unsolved stub (so the notebook runs clean unsolved)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402
from exercise_attacks import copies, read_the_judges_frame, vjp  # noqa: E402

import numpy_engine  # noqa: E402
import utils  # noqa: E402
from value import Value  # noqa: E402


def stub(*args):
    raise NotImplementedError


# --------------------------------------------------------------------------- reference solutions


def log_softmax_jacobian(z):
    p = np.exp(z - z.max())
    p /= p.sum()
    return np.eye(z.size) - p[None, :]  # d log p_i / d z_j = delta_ij - p_j


def rmsnorm_backward(dy, x):
    n = x.shape[-1]
    s = ((x * x).mean(axis=-1, keepdims=True) + 1e-5) ** -0.5
    return s * dy - s**3 * x * (dy * x).sum(axis=-1, keepdims=True) / n


def layernorm_backward(dy, x):
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    xhat = (x - x.mean(axis=-1, keepdims=True)) / sigma
    return (
        dy - dy.mean(axis=-1, keepdims=True) - xhat * (dy * xhat).mean(axis=-1, keepdims=True)
    ) / sigma


# --------------------------------------------------------------------------- plausible wrong
# answers


def softmax_jacobian_instead(z):  # the Jacobian of softmax itself (shown in §2), without the log
    p = np.exp(z - z.max())
    p /= p.sum()
    return np.diag(p) - np.outer(p, p)


def log_softmax_jacobian_transposed(z):  # delta_ij - p_i: the rows and columns swapped
    return log_softmax_jacobian(z).T


# J of softmax divided row by row by p_i: 0/0 where p_i underflows to 0
def log_softmax_jacobian_dividing_by_p(z):
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
    (
        exercises.check_02_log_softmax_jacobian,
        log_softmax_jacobian,
        [softmax_jacobian_instead, log_softmax_jacobian_transposed, log_softmax_jacobian_unstable,
         log_softmax_jacobian_dividing_by_p],
    ),
    (exercises.check_02_rmsnorm_backward, rmsnorm_backward,
     [rmsnorm_scale_as_constant, rmsnorm_unbatched]),
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


@pytest.mark.parametrize("check, solution, wrong", CASES, ids=IDS)
def test_reading_the_judges_frame_is_wrong(check, solution, wrong):
    assert check(read_the_judges_frame) is False


def test_reference_solutions_agree_with_the_project():
    # the reference rmsnorm backward is utils.rmsnorm_np_backward; layernorm's rows of dx sum to 0
    # (shift invariance)
    rng = np.random.default_rng(0)
    x, dy = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    assert np.allclose(
        rmsnorm_backward(dy, x), utils.rmsnorm_np_backward(dy, x), rtol=1e-12, atol=1e-14
    )
    assert np.allclose(layernorm_backward(dy, x).sum(axis=-1), 0.0, atol=1e-12)


def test_dividing_by_p_is_right_where_no_probability_underflows():
    # The second route (softmax's J divided by p_i) is the same matrix wherever every p_i > 0; only
    # the logits of -1000 make it 0/0.
    z = np.array([0.3, -1.2, 2.0, 0.5])
    assert np.allclose(log_softmax_jacobian_dividing_by_p(z), log_softmax_jacobian(z), atol=1e-12)


# --------------------------------------------------------------------------- finite differences


def log_p(z, i):
    m = z.max()
    return z[i] - (m + np.log(np.exp(z - m).sum()))


def rmsnorm_forward(x):
    return x * ((x * x).mean(axis=-1, keepdims=True) + 1e-5) ** -0.5


def layernorm_forward(x):
    return (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def jacobian_by_differences(method):
    from exercise_attacks import DIFFERENCES

    return lambda z: np.stack(
        [DIFFERENCES[method](lambda v, i=i: log_p(v, i), z) for i in range(z.size)]
    )


def backward_by_differences(method, forward):
    def answer(dy, x):
        dx = np.zeros_like(x)
        for i in np.ndindex(*x.shape[:-1]):
            dx[i] = vjp(method, forward, dy[i], x[i])
        return dx

    return answer


DIFFERENCE_CASES = [
    (exercises.check_02_log_softmax_jacobian, jacobian_by_differences, None),
    (exercises.check_02_rmsnorm_backward, backward_by_differences, rmsnorm_forward),
    (exercises.check_02_layernorm_backward, backward_by_differences, layernorm_forward),
]


@pytest.mark.parametrize("method", ["central", "richardson"])
@pytest.mark.parametrize("check, make, forward", DIFFERENCE_CASES, ids=IDS)
def test_finite_differences_are_wrong(check, make, forward, method):
    answer = make(method) if forward is None else make(method, forward)
    rng = np.random.default_rng(3)  # close to the derived answer at an ordinary point ...
    if forward is None:
        z = rng.normal(size=4)
        assert np.allclose(answer(z), log_softmax_jacobian(z), rtol=1e-7, atol=1e-9)
    else:
        x, dy = rng.normal(size=(2, 5)), rng.normal(size=(2, 5))
        solution = rmsnorm_backward if forward is rmsnorm_forward else layernorm_backward
        assert np.allclose(answer(dy, x), solution(dy, x), rtol=1e-6, atol=1e-9)
    # ... but not at logits of +-5000, nor across entries 16 orders of magnitude apart
    assert check(answer) is False


# --------------------------------------------------------------------------- copied answers

SOFTMAX_BACKWARD_COPIES = copies(utils.softmax_np_backward)
CROSS_ENTROPY_COPIES = copies(utils.cross_entropy_np_backward)
RMSNORM_COPIES = copies(utils.rmsnorm_np_backward)
ENGINE_COPIES = copies(Value.backward)


# row i: J^T e_i / p_i
def log_softmax_jacobian_from_softmax_backward(z, backward=utils.softmax_np_backward):
    p = utils.softmax_np(z)
    return np.stack([backward(e / p[i], p) for i, e in enumerate(np.eye(z.size))])


# -grad of -log p_i
def log_softmax_jacobian_from_cross_entropy(z, backward=utils.cross_entropy_np_backward):
    return -np.stack([backward(z[None, :], np.array([i]))[0] for i in range(z.size)])


# the cross-entropy backward the engine imports: refused
def log_softmax_jacobian_from_the_engines_loss(z):
    return (
        -numpy_engine.cross_entropy_np_backward(np.tile(z, (z.size, 1)), np.arange(z.size)) * z.size
    )


def log_softmax_jacobian_by_backward(z, backward=Value.backward):  # §2's jacobian() on log(softmax)
    from value import zero_grad

    leaves = [Value(float(v)) for v in z - z.max()]
    J = []
    for out in [p.log() for p in utils.softmax(leaves)]:
        zero_grad(leaves)
        backward(out)
        J.append([v.grad for v in leaves])
    return np.array(J)


def rmsnorm_backward_copied(dy, x, backward=utils.rmsnorm_np_backward):
    return backward(dy, x)


# the engine's way: the forward's 1/rms handed back
def rmsnorm_backward_from_the_kept_factor(dy, x):
    _, inv_rms = numpy_engine.rmsnorm_np(x, return_inv_rms=True)
    return numpy_engine.rmsnorm_np_backward(dy, x, inv_rms)


def rows_by_the_engine(build, backward=Value.backward):  # the check's own reference, row by row
    def answer(dy, x):
        dx = np.zeros_like(x)
        for i in np.ndindex(*x.shape[:-1]):
            xs = [Value(float(v)) for v in x[i]]
            backward(sum(float(g) * yj for g, yj in zip(dy[i], build(xs))))
            dx[i] = [v.grad for v in xs]
        return dx

    return answer


def with_copy(function, copy):
    return lambda *args: function(*args, copy)


COPIED = [
    (exercises.check_02_log_softmax_jacobian, log_softmax_jacobian_from_softmax_backward),
    *[
        (exercises.check_02_log_softmax_jacobian,
         with_copy(log_softmax_jacobian_from_softmax_backward, c))
        for c in SOFTMAX_BACKWARD_COPIES
    ],
    (exercises.check_02_log_softmax_jacobian, log_softmax_jacobian_from_cross_entropy),
    *[
        (exercises.check_02_log_softmax_jacobian,
         with_copy(log_softmax_jacobian_from_cross_entropy, c))
        for c in CROSS_ENTROPY_COPIES
    ],
    (exercises.check_02_log_softmax_jacobian, log_softmax_jacobian_from_the_engines_loss),
    (exercises.check_02_log_softmax_jacobian, log_softmax_jacobian_by_backward),
    (exercises.check_02_log_softmax_jacobian,
     with_copy(log_softmax_jacobian_by_backward, ENGINE_COPIES[0])),
    (exercises.check_02_rmsnorm_backward, rmsnorm_backward_copied),
    *[(exercises.check_02_rmsnorm_backward, with_copy(rmsnorm_backward_copied, c))
      for c in RMSNORM_COPIES],
    (exercises.check_02_rmsnorm_backward, rmsnorm_backward_from_the_kept_factor),
    (exercises.check_02_rmsnorm_backward, rows_by_the_engine(utils.rmsnorm)),
    (exercises.check_02_rmsnorm_backward, rows_by_the_engine(utils.rmsnorm, ENGINE_COPIES[1])),
    (exercises.check_02_layernorm_backward, rows_by_the_engine(exercises._02_layernorm_values)),
    *[
        (exercises.check_02_layernorm_backward,
         rows_by_the_engine(exercises._02_layernorm_values, c))
        for c in ENGINE_COPIES
    ],
]
COPIED_IDS = ["softmax_np_backward", "softmax_np_backward-code_copy",
              "softmax_np_backward-source_copy", "cross_entropy_np_backward",
              "cross_entropy-code_copy", "cross_entropy-source_copy", "engines_loss",
              "jacobian_by_backward", "jacobian_by_backward-code_copy", "rmsnorm_np_backward",
              "rmsnorm-code_copy", "rmsnorm-source_copy", "rmsnorm_kept_factor",
              "rmsnorm_by_the_engine", "rmsnorm_by_the_engine-source_copy",
              "layernorm_by_the_engine", "layernorm-code_copy", "layernorm-source_copy"]


def copy_gives_the_right_numbers(check, copied):
    rng = np.random.default_rng(1)
    if check is exercises.check_02_log_softmax_jacobian:
        z = rng.normal(size=4)
        return np.allclose(copied(z), log_softmax_jacobian(z), atol=1e-12)
    dy, x = rng.normal(size=(2, 5)), rng.normal(size=(2, 5))
    solution = (
        rmsnorm_backward if check is exercises.check_02_rmsnorm_backward else layernorm_backward
    )
    return np.allclose(copied(dy, x), solution(dy, x), atol=1e-9)


@pytest.mark.parametrize("check, copied", COPIED, ids=COPIED_IDS)
def test_copied_answers_are_wrong(check, copied, capsys):
    # Each copy computes the right numbers, so without the refusal the check would say 正解 ...
    assert copy_gives_the_right_numbers(check, copied)
    # ... but the functions it calls (or their copies) are refused while it runs: 不正解,
    assert check(copied) is False
    out = capsys.readouterr().out
    assert "不正解" in out and "使わずに" in out
    # and they work again after the check.
    assert copy_gives_the_right_numbers(check, copied)
