"""Notebook 01's build steps and exercises: each check says 正解 (True) to a right answer, 不正解
(False) to a wrong one, and 未回答 (None) to the unsolved stub, so the notebook runs clean unsolved.
The learner's Value is the notebook's skeleton class; its ops call the functions being checked."""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402


def stub(*args):
    raise NotImplementedError


def make_value(add, mul, tanh):
    """The notebook's skeleton Value, its ops handed to add / mul / tanh."""

    class Value:
        def __init__(self, data, children=(), local_grads=(), op=""):
            self.data, self.grad = data, 0.0
            self._children, self._local_grads, self._op = children, local_grads, op

        def __add__(self, other):
            return add(self, other if isinstance(other, Value) else Value(other))

        def __mul__(self, other):
            return mul(self, other if isinstance(other, Value) else Value(other))

        __radd__, __rmul__ = __add__, __mul__

        def tanh(self):
            return tanh(self)

    return Value


def add(a, b):
    return type(a)(a.data + b.data, (a, b), (1.0, 1.0), "+")


def mul(a, b):
    return type(a)(a.data * b.data, (a, b), (b.data, a.data), "*")


def tanh(a):
    t = math.tanh(a.data)
    return type(a)(t, (a,), (1 - t * t,), "tanh")


def tanh_by_cosh(a):  # another right form: 1/cosh^2 is 1.7e-17 at x = 20, where 1 - t^2 is 0
    return type(a)(math.tanh(a.data), (a,), (1 / math.cosh(a.data) ** 2,), "tanh")


def topological_order(root):  # recursive, as micrograd writes it
    order, seen = [], set()

    def visit(v):
        if v not in seen:
            seen.add(v)
            for c in v._children:
                visit(c)
            order.append(v)
    visit(root)
    return order


def backward(root):
    root.grad = 1.0
    for node in reversed(topological_order(root)):
        for child, local in zip(node._children, node._local_grads):
            child.grad += local * node.grad


def backward_overwrites(root):  # '=' for '+=': a node used twice keeps only its last push
    root.grad = 1.0
    for node in reversed(topological_order(root)):
        for child, local in zip(node._children, node._local_grads):
            child.grad = local * node.grad


def relu(a):
    return type(a)(max(a.data, 0.0), (a,), (1.0 if a.data > 0 else 0.0,), "relu")


def sigmoid(v):
    s = 1 / (1 + math.exp(-v.data))
    return type(v)(s, (v,), (s * (1 - s),), "sigmoid")


def sigmoid_exact(v):  # e^-x / (1 + e^-x)^2: the exact derivative, right at x = 30 as well
    e = math.exp(-v.data)
    return type(v)(1 / (1 + e), (v,), (e / (1 + e) ** 2,), "sigmoid")


def sigmoid_by_central_difference(v, h=1e-6):  # at x = 30 the difference of s is all rounding
    def s(x):
        return 1 / (1 + math.exp(-x))
    return type(v)(s(v.data), (v,), ((s(v.data + h) - s(v.data - h)) / (2 * h),), "sigmoid")


V = make_value(add, mul, tanh)
WRONG = make_value(add, lambda a, b: type(a)(a.data * b.data, (a, b), (a.data, b.data)), tanh)


def test_each_op_check_tells_right_from_wrong():
    assert exercises.check_01_add(V, add) is True
    assert exercises.check_01_add(V, lambda a, b: type(a)(a.data + b.data, (a, b), (1.0, 0.0)))\
        is False
    assert exercises.check_01_add(V, stub) is None
    assert exercises.check_01_mul(V, mul) is True
    assert exercises.check_01_mul(V, lambda a, b: type(a)(a.data * b.data, (a, b), (a.data, b.data)))\
        is False
    assert exercises.check_01_mul(V, stub) is None
    assert exercises.check_01_tanh(V, tanh) is True
    assert exercises.check_01_tanh(V, tanh_by_cosh) is True
    assert exercises.check_01_tanh(V, lambda a: type(a)(math.tanh(a.data), (a,), (1 - a.data**2,)))\
        is False
    assert exercises.check_01_tanh(V, stub) is None


def test_topological_order_and_backward(capsys):
    assert exercises.check_01_topological_order(topological_order) is True
    assert exercises.check_01_topological_order(lambda root: topological_order(root)[::-1]) is False
    assert exercises.check_01_topological_order(lambda r: topological_order(r)[1:]) is False
    assert exercises.check_01_topological_order(stub) is None
    assert exercises.check_01_backward(V, backward) is True
    assert exercises.check_01_backward(V, backward_overwrites) is False
    assert exercises.check_01_backward(WRONG, backward) is False  # a wrong local gradient in mul
    assert exercises.check_01_backward(V, stub) is None
    assert "完全一致" in capsys.readouterr().out


def test_relu_and_sigmoid():
    assert exercises.check_01_relu(V, relu) is True
    assert exercises.check_01_relu(V, lambda a: type(a)(max(a.data, 0), (a,), (1.0,))) is False
    slope_1_at_0 = lambda a: type(a)(max(a.data, 0.0), (a,), (1.0 if a.data >= 0 else 0.0,))  # noqa: E731
    assert exercises.check_01_relu(V, slope_1_at_0) is False
    assert exercises.check_01_relu(V, stub) is None
    assert exercises.check_01_sigmoid(V, sigmoid) is True
    assert exercises.check_01_sigmoid(V, sigmoid_exact) is True
    s = 1 / (1 + math.exp(-30.0))
    assert math.exp(-30.0) / (1 + math.exp(-30.0)) ** 2 != s * (1 - s)  # two forms, both right
    assert exercises.check_01_sigmoid(V, lambda v: type(v)(sigmoid(v).data, (v,), (sigmoid(v).data,)))\
        is False
    assert exercises.check_01_sigmoid(V, lambda v: 1 / (1 + (v * -1).tanh())) is False  # not one node
    assert exercises.check_01_sigmoid(V, sigmoid_by_central_difference) is False  # only at x = 30
    assert exercises.check_01_sigmoid(V, stub) is None
