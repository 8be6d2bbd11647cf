"""Tests for utils.py (chapter 21): the chapter's examples, finite differences, and twin == scalar.
"""

import math

import numpy as np
import pytest

from utils import (
    cross_entropy_np,
    cross_entropy_np_backward,
    linear,
    linear_np,
    linear_np_backward,
    rmsnorm,
    rmsnorm_np,
    rmsnorm_np_backward,
    softmax,
    softmax_np,
    softmax_np_backward,
)
from value import Value

BATCH_SHAPES = [(), (3,), (2, 3)]  # leading dims in front of the last (feature) axis
TOL = 1e-10  # twin vs scalar, relative, float64


def rel_err(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = max(np.abs(a).max(), np.abs(b).max(), 1e-300)
    return float(np.abs(a - b).max() / scale)


def values(a):
    """A nested list of leaf Values with the shape of array a."""
    return np.vectorize(lambda v: Value(float(v)), otypes=[object])(np.asarray(a, dtype=float))


def datas(v):
    return np.vectorize(lambda n: n.data, otypes=[float])(v)


def grads(v):
    return np.vectorize(lambda n: n.grad, otypes=[float])(v)


def objective(outs, c):
    """sum_i c_i * out_i as a Value: a random linear readout, so d(objective)/d(out) = c."""
    return sum(float(ci) * oi for ci, oi in zip(c, outs))


# --------------------------------------------------------------------------- the chapter's minimal
# examples


def test_chapter_linear_example():
    y = linear([Value(1.0), Value(2.0)], [[Value(3.0), Value(4.0)]])
    assert len(y) == 1 and y[0].data == 11


def test_chapter_softmax_example():
    p = [v.data for v in softmax([Value(1.0), Value(2.0)])]
    e = math.exp(-1)
    assert p == pytest.approx([e / (1 + e), 1 / (1 + e)], rel=1e-15)
    assert sum(p) == pytest.approx(1.0, rel=1e-15)
    assert p[1] > p[0]


def test_chapter_rmsnorm_example():
    y = [v.data for v in rmsnorm([Value(3.0), Value(4.0)])]
    scale = (12.5 + 1e-5) ** -0.5
    assert y == pytest.approx([3 * scale, 4 * scale], rel=1e-15)


# --------------------------------------------------------------------------- scalar functions vs
# finite differences


def finite_diff_grad(f, x, h=1e-6):
    """Central differences of the scalar function f(list of floats) -> float."""
    g = np.zeros(len(x))
    for i in range(len(x)):
        xp, xm = list(x), list(x)
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


@pytest.mark.parametrize("name", ["softmax", "rmsnorm"])
def test_scalar_vs_finite_differences(name):
    fn = {"softmax": softmax, "rmsnorm": rmsnorm}[name]
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=6).tolist()
    c = list(rng.normal(size=6))
    xs = [Value(v) for v in x0]
    objective(fn(xs), c).backward()
    fd = finite_diff_grad(lambda x: objective(fn([Value(v) for v in x]), c).data, x0)
    assert rel_err([v.grad for v in xs], fd) < 1e-7


def test_linear_vs_finite_differences():
    rng = np.random.default_rng(1)
    n_in, n_out = 4, 3
    x0, w0, c = rng.normal(size=n_in), rng.normal(size=(n_out, n_in)), list(rng.normal(size=n_out))
    flat0 = x0.tolist() + w0.ravel().tolist()

    def f(flat):
        x = [Value(v) for v in flat[:n_in]]
        w = [
            [Value(v) for v in flat[n_in + o * n_in : n_in + (o + 1) * n_in]] for o in range(n_out)
        ]
        return x, w, objective(linear(x, w), c)

    x, w, out = f(flat0)
    out.backward()
    analytic = [v.grad for v in x] + [v.grad for row in w for v in row]
    fd = finite_diff_grad(lambda flat: f(flat)[2].data, flat0)
    assert rel_err(analytic, fd) < 1e-7


# --------------------------------------------------------------------------- twins vs scalar
# versions


@pytest.mark.parametrize("batch", BATCH_SHAPES)
def test_linear_twin(batch):
    rng = np.random.default_rng(2)
    n_in, n_out = 5, 4
    x, w = rng.normal(size=batch + (n_in,)), rng.normal(size=(n_out, n_in))
    dy = rng.normal(size=batch + (n_out,))
    # scalar: one shared set of weight Values used by every row, so dw sums over all rows as in the
    # twin
    xv, wv = values(x), values(w)
    rows_x, rows_dy = xv.reshape(-1, n_in), dy.reshape(-1, n_out)
    ys = [linear(list(row), [list(r) for r in wv]) for row in rows_x]
    sum(objective(y, c) for y, c in zip(ys, rows_dy)).backward()

    y_np = linear_np(x, w)
    assert y_np.shape == batch + (n_out,)
    assert rel_err(y_np, datas(np.array(ys, dtype=object)).reshape(y_np.shape)) < TOL
    dx, dw = linear_np_backward(dy, x, w)
    assert dx.shape == x.shape and dw.shape == w.shape
    assert rel_err(dx, grads(xv)) < TOL
    assert rel_err(dw, grads(wv)) < TOL


@pytest.mark.parametrize("batch", BATCH_SHAPES)
@pytest.mark.parametrize("name", ["softmax", "rmsnorm"])
def test_rowwise_twins(name, batch):
    """softmax / rmsnorm twins vs the scalar version applied row by row, forward and backward."""
    fn = {"softmax": softmax, "rmsnorm": rmsnorm}[name]
    rng = np.random.default_rng(3)
    n = 5
    x, dy = rng.normal(scale=3.0, size=batch + (n,)), rng.normal(size=batch + (n,))
    xv = values(x)
    ys = [fn(list(row)) for row in xv.reshape(-1, n)]
    sum(objective(y, c) for y, c in zip(ys, dy.reshape(-1, n))).backward()
    y_scalar = datas(np.array(ys, dtype=object)).reshape(x.shape)

    if name == "softmax":
        y_np = softmax_np(x)
        dx = softmax_np_backward(dy, y_np)
    else:
        y_np = rmsnorm_np(x)
        dx = rmsnorm_np_backward(dy, x)
    assert y_np.shape == x.shape and dx.shape == x.shape
    assert rel_err(y_np, y_scalar) < TOL
    assert rel_err(dx, grads(xv)) < TOL


def test_twins_do_not_modify_inputs():
    rng = np.random.default_rng(4)
    x, w, dy = rng.normal(size=(3, 5)), rng.normal(size=(4, 5)), rng.normal(size=(3, 5))
    t = np.array([0, 4, 2])
    copies = [a.copy() for a in (x, w, dy)]
    linear_np_backward(linear_np(x, w), x, w)
    softmax_np_backward(dy, softmax_np(x))
    rmsnorm_np_backward(dy, rmsnorm_np(x))
    cross_entropy_np_backward(x, t)
    cross_entropy_np(x, t)
    for a, b in zip((x, w, dy), copies):
        assert np.array_equal(a, b)


# --------------------------------------------------------------------------- cross entropy


@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
def test_cross_entropy_vs_scalar(batch):
    rng = np.random.default_rng(5)
    V = 6
    logits, targets = rng.normal(scale=2.0, size=batch + (V,)), rng.integers(0, V, size=batch)
    lv = values(logits)
    rows, ts = lv.reshape(-1, V), targets.reshape(-1)
    losses = [-softmax(list(row))[t].log() for row, t in zip(rows, ts)]
    loss = sum(losses) / len(losses)
    loss.backward()

    value = cross_entropy_np(logits, targets)
    assert isinstance(value, float)
    assert abs(value - loss.data) <= TOL * abs(loss.data)
    dlogits = cross_entropy_np_backward(logits, targets)
    assert dlogits.shape == logits.shape
    assert rel_err(dlogits, grads(lv)) < TOL
    # dloss scales the gradient linearly
    assert rel_err(cross_entropy_np_backward(logits, targets, dloss=2.5), 2.5 * dlogits) < 1e-15


def test_cross_entropy_backward_vs_finite_differences():
    rng = np.random.default_rng(6)
    logits, targets = rng.normal(size=(3, 5)), np.array([1, 0, 4])
    h = 1e-6
    fd = np.zeros_like(logits)
    for idx in np.ndindex(logits.shape):
        lp, lm = logits.copy(), logits.copy()
        lp[idx] += h
        lm[idx] -= h
        fd[idx] = (cross_entropy_np(lp, targets) - cross_entropy_np(lm, targets)) / (2 * h)
    assert rel_err(cross_entropy_np_backward(logits, targets, dloss=1.0), fd) < 1e-7


def test_cross_entropy_stable_for_huge_logits():
    # Shifting all logits by 1e4 changes nothing mathematically; exp(1e4) would overflow a naive
    # version.
    base = np.array([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]])
    targets = np.array([2, 1])
    for shift in (1e4, -1e4):
        assert cross_entropy_np(base + shift, targets) == pytest.approx(
            cross_entropy_np(base, targets), rel=1e-12
        )
        g = cross_entropy_np_backward(base + shift, targets)
        assert np.all(np.isfinite(g))
        assert rel_err(g, cross_entropy_np_backward(base, targets)) < 1e-12
    # A target whose probability underflows to 0.0: the loss is large and finite, not inf (no
    # log(0)).
    big = np.array([1e4, 0.0, -1e4])
    assert cross_entropy_np(big, 2) == pytest.approx(2e4, rel=1e-15)
    assert cross_entropy_np(big, 0) == 0.0
    g = cross_entropy_np_backward(big, 2)
    assert np.all(np.isfinite(g)) and g == pytest.approx([1.0, 0.0, -1.0])


def test_cross_entropy_uniform_logits():
    # Equal logits: p = 1/V for every class, so the loss is log(V) whatever the targets.
    V = 7
    assert cross_entropy_np(np.zeros((4, V)), np.arange(4)) == pytest.approx(math.log(V), rel=1e-15)


# --------------------------------------------------------------------------- properties


def test_softmax_shift_invariance():
    rng = np.random.default_rng(7)
    z = rng.normal(size=(3, 5))
    for shift in (-50.0, 3.0, 700.0, 1e4):
        assert rel_err(softmax_np(z + shift), softmax_np(z)) < 1e-12
    p = softmax_np(z)
    assert np.allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-15)
    # the scalar version too: max subtraction keeps exp from overflowing at 1e4
    p_scalar = [v.data for v in softmax([Value(1e4 + v) for v in z[0].tolist()])]
    assert rel_err(p_scalar, p[0]) < 1e-12
    # shift invariance shows in the gradient as well: every row of dlogits sums to zero
    assert np.allclose(
        softmax_np_backward(rng.normal(size=z.shape), p).sum(axis=-1), 0.0, atol=1e-15
    )


def test_rmsnorm_unit_mean_square():
    rng = np.random.default_rng(8)
    for scale in (1e-1, 1.0, 1e3):
        y = rmsnorm_np(rng.normal(scale=scale, size=(4, 16)))
        # mean(y^2) = m / (m + eps): ~1 unless the input itself is tiny
        assert np.allclose(np.mean(y * y, axis=-1), 1.0, rtol=0, atol=1e-3)
    y = [v.data for v in rmsnorm([Value(v) for v in rng.normal(size=16).tolist()])]
    assert abs(np.mean(np.square(y)) - 1.0) < 1e-4
    # eps keeps zero input finite
    assert np.array_equal(rmsnorm_np(np.zeros((2, 4))), np.zeros((2, 4)))


# --------------------------------------------------------------------------- shape errors


def test_linear_shape_errors():
    x, w = np.ones((2, 5)), np.ones((4, 3))
    with pytest.raises(ValueError, match=r"x\.shape \(2, 5\).*w\.shape \(4, 3\)"):
        linear_np(x, w)
    with pytest.raises(ValueError, match="w.shape"):
        linear_np(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match=r"dy\.shape \(2, 3\)"):
        linear_np_backward(np.ones((2, 3)), np.ones((2, 3)), np.ones((4, 3)))


def test_backward_shape_errors():
    with pytest.raises(ValueError, match="dprobs.shape"):
        softmax_np_backward(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="dy.shape"):
        rmsnorm_np_backward(np.ones(3), np.ones(4))


@pytest.mark.parametrize("fn", [cross_entropy_np, cross_entropy_np_backward])
def test_cross_entropy_target_errors(fn):
    logits = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"targets\.shape \(3,\)"):
        fn(logits, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"in \[0, 3\)"):
        fn(logits, np.array([0, 3]))
    with pytest.raises(ValueError, match=r"in \[0, 3\)"):
        fn(logits, np.array([-1, 0]))
    with pytest.raises(ValueError, match="integers"):
        fn(logits, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="empty batch"):
        fn(np.zeros((0, 3)), np.zeros(0, dtype=int))


# ----------------------------------------------------------------------------- bad input


def test_empty_inputs_and_mismatched_lengths_are_clear_errors():
    with pytest.raises(ValueError, match=r"softmax: .*empty \(length 0\)"):
        softmax([])
    with pytest.raises(ValueError, match=r"rmsnorm: .*empty \(length 0\)"):
        rmsnorm([])
    x = [Value(1.0), Value(2.0), Value(3.0)]
    with pytest.raises(ValueError, match=r"linear: x has 3 entries but the rows of w have \[4\]"):
        linear(x, [[Value(0.5)] * 4, [Value(0.5)] * 4])
    with pytest.raises(
        ValueError, match=r"linear: x has 3 entries but the rows of w have \[2, 3\]"
    ):
        linear(x, [[Value(0.5)] * 3, [Value(0.5)] * 2])  # a ragged w is refused too
    with pytest.raises(ValueError, match="softmax_np: the last axis is empty"):
        softmax_np(np.zeros((2, 0)))
    with pytest.raises(ValueError, match="rmsnorm_np: the last axis is empty"):
        rmsnorm_np(np.zeros((0,)))
