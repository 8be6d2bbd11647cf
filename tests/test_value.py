"""Tests for value.py: every op against central finite differences, graph leanness,
deep graphs, gradient accumulation semantics, error messages and gradient_check (tracing: test_tracing.py)."""
import math
from fractions import Fraction

import numpy as np
import pytest

from value import NumericError, Value, topological_order, zero_grad

H = 1e-6  # central differences: truncation error ~h^2, rounding error ~1e-16/h, both far below the tolerance


def numeric_grads(f, xs):
    """d f / d x_i by central differences; f maps a list of Values to a Value."""
    grads = []
    for i in range(len(xs)):
        plus = [x + H if j == i else x for j, x in enumerate(xs)]
        minus = [x - H if j == i else x for j, x in enumerate(xs)]
        grads.append((f([Value(v) for v in plus]).data - f([Value(v) for v in minus]).data) / (2 * H))
    return grads


def check_grads(f, xs, rel=1e-6, abs_=1e-8):
    leaves = [Value(x) for x in xs]
    out = f(leaves)
    out.backward()
    expected = numeric_grads(f, xs)
    for leaf, g in zip(leaves, expected):
        assert leaf.grad == pytest.approx(g, rel=rel, abs=abs_)
    return out, leaves


# -- every op, with Values and plain numbers on both sides --------------------------------------------------

BINARY_AND_UNARY = {
    "V+V": (lambda v: v[0] + v[1], [1.3, -0.7]),
    "V+n": (lambda v: v[0] + 2.5, [1.3]),
    "n+V": (lambda v: 2.5 + v[0], [1.3]),
    "V-V": (lambda v: v[0] - v[1], [1.3, -0.7]),
    "V-n": (lambda v: v[0] - 2.5, [1.3]),
    "n-V": (lambda v: 2.5 - v[0], [1.3]),
    "V*V": (lambda v: v[0] * v[1], [1.3, -0.7]),
    "V*n": (lambda v: v[0] * 2.5, [1.3]),
    "n*V": (lambda v: 2.5 * v[0], [1.3]),
    "V/V": (lambda v: v[0] / v[1], [1.3, -0.7]),
    "V/n": (lambda v: v[0] / 2.5, [1.3]),
    "n/V": (lambda v: 2.5 / v[0], [1.3]),
    "V*V same": (lambda v: v[0] * v[0], [1.3]),
    "V/V same": (lambda v: (v[0] * 3.0) / v[0], [1.3]),
    "pow 3": (lambda v: v[0] ** 3, [1.3]),
    "pow 2 neg base": (lambda v: v[0] ** 2, [-1.7]),
    "pow -1.5": (lambda v: v[0] ** -1.5, [1.3]),
    "pow 0.5": (lambda v: v[0] ** 0.5, [1.3]),
    "pow -0.5 (rmsnorm)": (lambda v: (v[0] + 1e-5) ** -0.5, [12.5]),
    "pow -2": (lambda v: v[0] ** -2, [1.3]),
    "pow -1 neg base": (lambda v: v[0] ** -1, [-1.7]),
    "pow -3 neg base": (lambda v: v[0] ** -3, [-1.2]),
    "pow 3.0 neg base": (lambda v: v[0] ** 3.0, [-1.7]),  # an integral float exponent is fine for x < 0
    "pow 1": (lambda v: v[0] ** 1, [1.3]),
    "abs positive": (lambda v: abs(v[0]) * 3.0, [1.3]),
    "abs negative": (lambda v: abs(v[0]) * 3.0, [-1.3]),
    "neg": (lambda v: -v[0], [1.3]),
    "log": (lambda v: v[0].log(), [1.3]),
    "exp": (lambda v: v[0].exp(), [1.3]),
    "exp neg": (lambda v: v[0].exp(), [-2.1]),
    "relu pos": (lambda v: v[0].relu(), [1.3]),
    "relu neg": (lambda v: v[0].relu(), [-1.3]),
    "tanh": (lambda v: v[0].tanh(), [0.4]),
    "tanh neg": (lambda v: v[0].tanh(), [-1.9]),
    "sqrt": (lambda v: v[0].sqrt(), [1.3]),
}


@pytest.mark.parametrize("name", list(BINARY_AND_UNARY))
def test_op_matches_finite_differences(name):
    f, xs = BINARY_AND_UNARY[name]
    check_grads(f, xs)


@pytest.mark.parametrize(("f", "x", "expected"), [
    (lambda a: a + 2.5, 1.5, 4.0), (lambda a: 2.5 + a, 1.5, 4.0),
    (lambda a: a - 2.5, 1.5, -1.0), (lambda a: 2.5 - a, 1.5, 1.0),
    (lambda a: a * 2.5, 1.5, 3.75), (lambda a: 2.5 * a, 1.5, 3.75),
    (lambda a: a / 2.5, 1.5, 0.6), (lambda a: 3.0 / a, 1.5, 2.0),
    (lambda a: a ** 3, 1.5, 3.375), (lambda a: -a, 1.5, -1.5),
    (lambda a: a.log(), math.e, 1.0), (lambda a: a.exp(), 0.0, 1.0),
    (lambda a: a.relu(), -1.5, 0.0), (lambda a: a.tanh(), 0.0, 0.0), (lambda a: a.sqrt(), 2.25, 1.5),
])
def test_forward_values(f, x, expected):
    assert f(Value(x)).data == pytest.approx(expected, rel=1e-15, abs=1e-15)


def test_relu_at_zero_has_zero_gradient():
    x = Value(0.0)
    x.relu().backward()
    assert x.grad == 0.0


def test_tanh_saturates_to_zero_gradient_not_nan():
    # far out tanh rounds to exactly +-1, so 1 - t^2 is exactly 0: a dead unit, never NaN
    for x0 in (30.0, -30.0, 1e300):
        x = Value(x0)
        y = x.tanh()
        y.backward()
        assert (abs(y.data), x.grad) == (1.0, 0.0)
    # before it saturates the local gradient still carries its digits: 1 - tanh^2 = 1 / cosh^2
    x = Value(8.0)
    x.tanh().backward()
    assert x.grad == pytest.approx(1.0 / math.cosh(8.0) ** 2, rel=1e-7)


def test_division_by_tiny_denominators():
    # d(a/b)/db = -a/b^2 must not square b: 1e-170 ** 2 underflows to 0 (a bare "float division by zero")
    a, b = Value(1e-170), Value(1e-170)
    y = a / b
    y.backward()
    assert (y.data, a.grad, b.grad) == (1.0, 1e170, -1e170)
    c = Value(1e-165)
    (1e-170 / c).backward()
    assert c.grad == pytest.approx(-1e160, rel=1e-15)  # -1e-170 / c^2, while c^2 = 1e-330 rounds to 0


def test_pow_edge_cases_at_zero():
    # d(x^0)/dx = 0 everywhere (computing n * x^(n-1) at x=0 would raise)
    x = Value(0.0)
    y = x ** 0
    y.backward()
    assert (y.data, x.grad) == (1.0, 0.0)
    x = Value(0.0)
    (x ** 2).backward()
    assert x.grad == 0.0
    x = Value(0.0)
    (x ** 1.5).backward()
    assert x.grad == 0.0


def test_composite_expression_finite_differences():
    def f(v):
        a, b, c = v
        h = (a * b + c).tanh()
        return (h * h + 1.0).log() + (a / c) ** 2 - (b.exp() * 0.1).sqrt() + (1.0 - a).relu() * 3.0
    check_grads(f, [0.3, -1.2, 2.0])


def test_cross_entropy_of_softmax_finite_differences():
    def f(v):  # -log softmax(v)[1], written with Value ops the way the chapter does it
        m = max(x.data for x in v)
        exps = [(x - m).exp() for x in v]
        total = sum(exps)
        return -(exps[1] / total).log()
    out, leaves = check_grads(f, [0.5, -1.0, 2.0])
    # and the closed form: d/dz_i = softmax_i - onehot_i
    z = [0.5, -1.0, 2.0]
    s = [math.exp(x) / sum(math.exp(y) for y in z) for x in z]
    for i, leaf in enumerate(leaves):
        assert leaf.grad == pytest.approx(s[i] - (i == 1), rel=1e-12)


def test_micrograd_sanity_check():
    # micrograd's test_sanity_check; values verified there against PyTorch
    x = Value(-4.0)
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    assert y.data == pytest.approx(-20.0, rel=1e-12)
    assert x.grad == pytest.approx(46.0, rel=1e-12)


def test_micrograd_more_ops():
    # micrograd's test_more_ops; values verified there against PyTorch
    a = Value(-4.0)
    b = Value(2.0)
    c = a + b
    d = a * b + b ** 3
    c += c + 1
    c += 1 + c + (-a)
    d += d * 2 + (b + a).relu()
    d += 3 * d + (b - a).relu()
    e = c - d
    f = e ** 2
    g = f / 2.0
    g += 10.0 / f
    g.backward()
    assert g.data == pytest.approx(24.70408163265306, rel=1e-12)
    assert a.grad == pytest.approx(138.83381924198252, rel=1e-12)
    assert b.grad == pytest.approx(645.5772594752186, rel=1e-12)


# -- leanness: constants are not nodes, - and / are single nodes --------------------------------------------

def count_nodes(root):
    return len(topological_order(root))


@pytest.mark.parametrize("f", [
    lambda x: x * 2, lambda x: 2 * x, lambda x: x + 1.5, lambda x: 1.5 + x, lambda x: x - 1.5,
    lambda x: 1.5 - x, lambda x: x / 2, lambda x: 2 / x, lambda x: x ** 2, lambda x: -x,
    lambda x: x.log(), lambda x: x.exp(), lambda x: x.relu(), lambda x: x.tanh(), lambda x: x.sqrt(),
])
def test_constant_operand_adds_exactly_one_node(f):
    x = Value(1.5)
    y = f(x)
    assert count_nodes(y) == 2
    assert y._children == (x,)
    assert all(isinstance(g, float) for g in y._local_grads)


def test_adding_zero_returns_the_same_node():
    x = Value(1.5)
    assert x + 0 is x
    assert 0 + x is x
    assert x + 0.0 is x


def test_sum_of_three_values_is_two_nodes():
    a, b, c = Value(1.0), Value(2.0), Value(3.0)
    s = sum([a, b, c])
    assert s.data == 6.0
    assert count_nodes(s) == 3 + 2


@pytest.mark.parametrize(("f", "op"), [(lambda a, b: a - b, "-"), (lambda a, b: a / b, "/")])
def test_sub_and_div_are_single_nodes(f, op):
    a, b = Value(3.0), Value(2.0)
    y = f(a, b)
    assert count_nodes(y) == 3
    assert y._op == op
    assert y._children == (a, b)


# -- deep graphs ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_million_node_chain_backward_without_recursion_error():
    x = Value(0.5)
    y = x
    for _ in range(1_000_000):
        y = y + 1.0
    y.backward()  # an iterative topological sort: no RecursionError, whatever the depth
    assert y.data == 1_000_000.5
    assert x.grad == 1.0


def test_topological_order_children_before_parents():
    a, b = Value(1.0), Value(2.0)
    c = a * b
    d = c + a
    e = d * c
    order = topological_order(e)
    assert len(order) == len(set(order)) == 5
    where = {node: i for i, node in enumerate(order)}
    for node in order:
        for child in node._children:
            assert where[child] < where[node]


# -- gradient semantics ---------------------------------------------------------------------------------

def diamond():
    """x -> h (shared interior) -> two branches -> y."""
    x, w = Value(0.7), Value(-1.3)
    h = (x * w).tanh()
    y = h * h + h.exp() * 2.0 + h / w
    return y, x, w, h


def test_backward_twice_accumulates_exactly_twice_in_leaves():
    y, x, w, h = diamond()
    y.backward()
    gx, gw, gh = x.grad, w.grad, h.grad
    assert gx != 0.0 and gw != 0.0
    y.backward()
    assert x.grad == 2 * gx
    assert w.grad == 2 * gw
    assert h.grad == gh  # interior node: reset each call, describes the latest call only
    assert y.grad == 1.0


def test_backward_twice_simple_chain():
    a = Value(2.0)
    y = (a * 3.0 + 1.0) ** 2
    y.backward()
    y.backward()
    assert a.grad == 2 * (2 * 7.0 * 3.0)


def test_zero_grad_then_backward_gives_single_call_gradients():
    y, x, w, _ = diamond()
    y.backward()
    gx, gw = x.grad, w.grad
    y.backward()
    zero_grad([x, w])
    assert (x.grad, w.grad) == (0.0, 0.0)
    y.backward()
    assert (x.grad, w.grad) == (gx, gw)


def test_backward_on_a_leaf_accumulates_one():
    x = Value(3.0)
    x.backward()
    x.backward()
    assert x.grad == 2.0


def test_leaves_shared_between_two_losses_accumulate():
    x = Value(1.5)
    (x * 2.0).backward()
    (x * x).backward()
    assert x.grad == 2.0 + 3.0


# -- bad input: one clear exception naming the op and the value ------------------------------------------

ERRORS = [
    ("log 0", lambda: Value(0.0).log(), NumericError, ["log", "0.0"]),
    ("log neg", lambda: Value(-2.5).log(), NumericError, ["log", "-2.5"]),
    ("pow Value exponent", lambda: Value(2.0) ** Value(3.5), TypeError, ["**", "data=3.5"]),
    ("div by Value 0", lambda: Value(1.5) / Value(0.0), NumericError, ["/", "1.5", "0.0"]),
    ("div by number 0", lambda: Value(1.5) / 0, NumericError, ["/", "1.5", "/ 0"]),
    ("rdiv by Value 0", lambda: 2.5 / Value(0.0), NumericError, ["/", "2.5", "0.0"]),
    ("exp overflow", lambda: Value(710.0).exp(), NumericError, ["exp", "710.0"]),
    ("sqrt neg", lambda: Value(-4.0).sqrt(), NumericError, ["sqrt", "-4.0"]),
    ("sqrt 0", lambda: Value(0.0).sqrt(), NumericError, ["sqrt", "0.0"]),
    ("pow 0 ** neg", lambda: Value(0.0) ** -1, NumericError, ["**", "0.0", "-1"]),
    ("pow neg ** frac", lambda: Value(-8.0) ** 0.5, NumericError, ["**", "-8.0", "0.5"]),
    ("pow 0 ** 0.5", lambda: Value(0.0) ** 0.5, NumericError, ["**", "0.0", "0.5"]),
    ("pow overflow", lambda: Value(1e200) ** 2, NumericError, ["**", "1e+200", "2"]),
    ("pow number ** Value", lambda: 2.0 ** Value(3.5), TypeError, ["**", "float", "Value"]),  # Python's own
    ("div overflow", lambda: Value(1e300) / Value(1e-10), NumericError, ["/", "1e+300", "1e-10"]),
    ("div grad overflow", lambda: 1.0 / Value(1e-200), NumericError, ["/", "1.0", "1e-200", "derivative"]),
    ("div 0 by subnormal", lambda: Value(0.0) / 1e-320, NumericError, ["/", "0.0", "1e-320"]),
    # non-real leaves, and log / exp / sqrt of NaN or inf, fail like log(0) instead of spreading NaN
    ("leaf str", lambda: Value("abc"), TypeError, ["real number", "str", "'abc'"]),
    ("leaf None", lambda: Value(None), TypeError, ["real number", "NoneType"]),
    ("leaf list", lambda: Value([1, 2]), TypeError, ["real number", "list", "[1, 2]"]),
    ("leaf complex", lambda: Value(1j), TypeError, ["real number", "complex"]),
    ("log nan", lambda: Value(float("nan")).log(), NumericError, ["log", "nan", "not a finite number"]),
    ("log inf", lambda: Value(float("inf")).log(), NumericError, ["log", "inf", "not a finite number"]),
    ("exp nan", lambda: Value(float("nan")).exp(), NumericError, ["exp", "nan", "not a finite number"]),
    ("exp -inf", lambda: Value(float("-inf")).exp(), NumericError, ["exp", "-inf", "not a finite number"]),
    ("sqrt nan", lambda: Value(float("nan")).sqrt(), NumericError, ["sqrt", "nan", "not a finite number"]),
    ("sqrt inf", lambda: Value(float("inf")).sqrt(), NumericError, ["sqrt", "inf", "not a finite number"]),
    # + - * that overflow, and NaN through relu, are NumericErrors too, never a silent inf, NaN or 0
    ("add overflow", lambda: Value(1e308) + Value(1e308), NumericError, ["+", "1e+308", "inf", "overflow"]),
    ("add number overflow", lambda: Value(1e308) + 1e308, NumericError, ["+", "inf", "overflow"]),
    ("radd overflow", lambda: 1e308 + Value(1e308), NumericError, ["+", "inf", "overflow"]),
    ("sub overflow", lambda: Value(-1e308) - Value(1e308), NumericError, ["-", "-inf", "overflow"]),
    ("sub number overflow", lambda: Value(-1e308) - 1e308, NumericError, ["-", "-inf", "overflow"]),
    ("rsub overflow", lambda: -1e308 - Value(1e308), NumericError, ["-", "-inf", "overflow"]),
    ("mul overflow", lambda: Value(1e200) * Value(1e200), NumericError, ["*", "1e+200", "inf", "overflow"]),
    ("mul number overflow", lambda: Value(1e200) * 1e200, NumericError, ["*", "inf", "overflow"]),
    ("rmul overflow", lambda: 1e200 * Value(1e200), NumericError, ["*", "inf", "overflow"]),
    ("mul inf by 0", lambda: Value(float("inf")) * 0.0, NumericError, ["*", "nan", "not finite"]),
    ("add nan", lambda: Value(float("nan")) + Value(1.0), NumericError, ["+", "nan", "not finite"]),
    ("relu nan", lambda: Value(float("nan")).relu(), NumericError, ["relu", "nan", "not finite"]),
    ("relu inf", lambda: Value(float("inf")).relu(), NumericError, ["relu", "inf", "not finite"]),
    # a node built by hand must give one local gradient per child: backward() pairs them, never dropping one
    ("hand-built, too few grads", lambda: Value(1.0, (Value(1.0), Value(2.0)), (1.0,), "f").backward(), ValueError,
     ["not enough values to unpack (expected 2, got 1)"]),
    ("hand-built, too many grads", lambda: Value(1.0, (Value(1.0),), (1.0, 2.0), "f").backward(), ValueError,
     ["too many values to unpack (expected 1)"]),
    ("hand-built, no grads", lambda: Value(1.0, (Value(1.0),), (), "f").backward(), ValueError,
     ["not enough values to unpack (expected 1, got 0)"]),
    ("hand-built, 3 children 2 grads", lambda: Value(1.0, (Value(1.0), Value(2.0), Value(3.0)), (1.0, 2.0),
                                                     "f").backward(), ValueError, ["zip() argument 2 is shorter"]),
]


def test_finite_results_near_the_float_limit_still_work():
    """The overflow check only fires on inf or NaN: the largest finite results, exact ints and Fractions pass."""
    assert (Value(1e308) + Value(-1e308)).data == 0.0
    assert (Value(8e307) + Value(8e307)).data == 1.6e308
    assert (Value(10 ** 400) * 2).data == 2 * 10 ** 400  # a Python int never overflows
    assert (Value(Fraction(1, 3)) - Fraction(1, 3)).data == 0
    a, b, c = Value(1.0), Value(2.0), Value(3.0)
    y = Value(6.0, (a, b, c), (6.0, 3.0, 2.0), "prod3")  # a hand-built node with three children
    y.backward()
    assert (a.grad, b.grad, c.grad) == (6.0, 3.0, 2.0)


def test_repr_of_an_int_beyond_float_range():
    assert repr(Value(10 ** 400)).startswith("Value(data=1000000000")
    assert repr(Value(-10 ** 5000)) == "Value(data=<an int of 16610 bits>, grad=0)"  # str() stops at 4300 digits


@pytest.mark.parametrize("data", [True, 3, 2.5, np.float32(1.5), np.float64(-2.0), np.int64(7), Fraction(1, 4)])
def test_real_leaves_are_accepted(data):
    v = Value(data) * 2 + 1
    assert v.data == data * 2 + 1


@pytest.mark.parametrize(("name", "fn", "exc", "needles"), ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_input_raises_clear_error(name, fn, exc, needles):
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"
    assert "math domain error" not in msg


def test_exp_just_below_overflow_is_fine():
    assert math.isfinite(Value(709.0).exp().data)


# -- repr ------------------------------------------------------------------------------------------------


def test_repr_is_readable():
    a = Value(2.0)
    y = a * 3.0
    y.backward()
    assert repr(a) == "Value(data=2, grad=3)"
    assert repr(y) == "Value(data=6, grad=1, op='*')"


# ----------------------------------------------------------------------------- gradient_check

def test_gradient_check_passes_on_correct_ops_and_prints_a_table(capsys):
    from utils import rmsnorm, softmax
    from value import gradient_check
    assert gradient_check(lambda xs: (xs[0] * xs[1] + xs[2].exp()).log(), [0.5, -1.5, 0.3])
    assert gradient_check(lambda xs: softmax(xs)[1] * rmsnorm(xs)[2], [1.0, -2.0, 0.5, 3.0])
    out = capsys.readouterr().out
    assert "backprop" in out and "numeric" in out and "all gradients agree" in out
    assert out.count(" ok") == 3 + 4 and "FAIL" not in out


def test_gradient_check_catches_a_wrong_local_gradient(capsys):
    from value import gradient_check

    def square_wrong(x):  # d(x^2)/dx is 2x; this node claims x
        return Value(x.data * x.data, (x,), (x.data,), "sq")

    def square_right(x):
        return Value(x.data * x.data, (x,), (2 * x.data,), "sq")

    assert gradient_check(lambda xs: square_right(xs[0]) + xs[1], [1.5, 2.0])
    capsys.readouterr()
    assert not gradient_check(lambda xs: square_wrong(xs[0]) + xs[1], [1.5, 2.0])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].endswith("FAIL") and lines[3].endswith("ok")  # input 0 is wrong, input 1 is right
    assert "MISMATCH" in lines[-1]
    # quiet: no output, same verdict
    assert gradient_check(lambda xs: square_wrong(xs[0]), [1.5], quiet=True) is False
    assert capsys.readouterr().out == ""


def test_gradient_check_rejects_bad_arguments():
    from value import gradient_check
    with pytest.raises(ValueError, match="empty"):
        gradient_check(lambda xs: xs[0], [])
    with pytest.raises(TypeError, match="must return a Value"):
        gradient_check(lambda xs: 3.0, [1.0])


# ----------------------------------------------------------------------------- the file a learner opens

def test_value_py_is_the_engine_alone():
    import ast
    from pathlib import Path

    import value
    source = Path(value.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    cls = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Value")
    assert len(source.splitlines()) <= 350
    assert cls.end_lineno - cls.lineno + 1 <= 160
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert not functions & {"node_names", "trace_backward", "format_trace", "to_dot", "draw_graph"}  # tracing.py
    # the chain rule reads as the module docstring writes it, in each branch: binary ops, unary ops, hand-built
    backward = next(node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "backward")
    assert ast.get_source_segment(source, backward).count("child.grad += local_grad * node.grad") == 3


def test_a_numpy_number_is_never_a_silently_wrong_one():
    """NumPy's int64 wraps around silently (10 ** 30 would be 5.07e18): a leaf or an exponent holding a NumPy
    scalar becomes the Python number it holds, and a Fraction keeps its exact repr."""
    np = pytest.importorskip("numpy")
    assert (Value(np.int64(10)) ** 30).data == 10 ** 30 == (Value(10) ** np.int64(30)).data
    assert type(Value(np.float32(0.5)).data) is float
    assert repr(Value(Fraction(1, 3))) == "Value(data=1/3, grad=0)"


def test_gradient_check_names_the_input_whose_neighbourhood_leaves_the_domain():
    from value import gradient_check
    with pytest.raises(NumericError, match=r"input 0 is 1e-07, but the central difference also needs f at 1e-07 \+- "
                                           r"eps \(1e-06\), where f fails: .*-9e-07.*give a smaller eps"):
        gradient_check(lambda xs: xs[0].log(), [1e-7], quiet=True)
    assert gradient_check(lambda xs: xs[0].log(), [1e-7], eps=1e-10, rtol=1e-3, quiet=True)


@pytest.mark.parametrize("op", [lambda v: v * 1.0, lambda v: 1.0 * v, lambda v: v + 1.0,
                                lambda v: 1.0 + v, lambda v: v - 1.0, lambda v: 1.0 - v,
                                lambda v: v / 3, lambda v: 3.0 / v, lambda v: v * Value(1.0),
                                lambda v: v.exp(), lambda v: v.log(), lambda v: v.tanh(),
                                lambda v: v.sqrt()])
def test_an_int_leaf_beyond_float_range_is_a_numeric_error_where_it_meets_a_float(op):
    """An exact int stays exact among ints (10**400 * 10**400), but where it meets a float it
    cannot become one: NumericError, which training reports as divergence, not as a bug."""
    assert (Value(10**400) * Value(10**400)).data == 10**800
    with pytest.raises(NumericError, match="float"):
        op(Value(10**400))
