"""Notebook 01's exercises (練習問題): for each check, the reference solution is 正解;
plausible wrong answers, the project's own function called or copied, a finite-difference answer
(central differences and Richardson extrapolation) and an answer that reads the judge's frame are
不正解; the unsolved stub is 未回答.

練習問題 4 (an iterative topological sort) asks for an order of nodes, not a number: there is no
difference quotient to take, so it has no finite-difference test.
"""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402
from exercise_attacks import (  # noqa: E402
    copies,
    derivative,
    find_in_callers,
    read_the_judges_frame,  # noqa: E402
)

from tracing import trace_backward  # noqa: E402
from value import Value, topological_order  # noqa: E402

BACKWARD_COPIES = copies(Value.backward)
TOPO_COPIES = copies(topological_order)


def stub(*args):
    raise NotImplementedError


# -- 練習問題1: dL/da of L = relu(tanh(a b) a - 1/2), by hand (a is used twice; the ReLU's step)


def grad_a(a, b):
    t = math.tanh(a * b)
    if t * a - 0.5 <= 0:
        return 0.0
    return t + a * b * (1 - t * t)


def loss(a, b):  # the forward pass in plain floats, for the difference quotients
    return max(math.tanh(a * b) * a - 0.5, 0.0)


# forgets the edge a -> (... * a): the gradients of the two uses must add up
def grad_a_one_path_only(a, b):
    t = math.tanh(a * b)
    return (1 - t * t) * b * a if t * a > 0.5 else 0.0


# the derivative of tanh(ab) a: right above the kink, wrong below it
def grad_a_without_the_relu(a, b):
    t = math.tanh(a * b)
    return t + a * b * (1 - t * t)


def grad_a_by_backward(a0, b0):  # the three engine lines the notebook shows: the engine's answer
    a, b = Value(a0), Value(b0)
    exercises._loss_01(a, b).backward()
    return a.grad


def grad_a_by_copied_backward(copy):
    def answer(a0, b0):
        a, b = Value(a0), Value(b0)
        copy(exercises._loss_01(a, b))
        return a.grad

    return answer


def grad_a_through_the_trace(a0, b0):
    a, b = Value(a0), Value(b0)
    trace_backward(exercises._loss_01(a, b), quiet=True)
    return a.grad


def grad_a_by_differences(method):
    return lambda a, b: derivative(method, lambda t: loss(t, b), a)


def test_grad_a(capsys):
    assert exercises.check_01_grad_a(grad_a) is True
    assert exercises.check_01_grad_a(grad_a_one_path_only) is False
    assert exercises.check_01_grad_a(grad_a_without_the_relu) is False
    assert exercises.check_01_grad_a(stub) is None
    out = capsys.readouterr().out
    assert "正解" in out and "不正解" in out and "未回答" in out


def test_the_kink_points_are_where_the_relu_switches():
    points = exercises._kink_points_01()
    assert len(points) == 6
    for (above, b), (below, b2) in zip(points[::2], points[1::2]):
        assert b == b2 and grad_a(above, b) > 0.5 and grad_a(below, b) == 0.0


@pytest.mark.parametrize(
    "copied",
    [grad_a_by_backward, grad_a_through_the_trace, grad_a_by_copied_backward(BACKWARD_COPIES[0]),
     grad_a_by_copied_backward(BACKWARD_COPIES[1])],
    ids=["backward", "trace_backward", "code_copy", "source_copy"],
)
def test_grad_a_copied_from_the_engine_is_wrong(copied, capsys):
    # the copy gives the right number ...
    assert copied(0.9, 1.2) == pytest.approx(grad_a(0.9, 1.2))
    assert exercises.check_01_grad_a(copied) is False  # ... but the engine is refused
    assert "使わずに" in capsys.readouterr().out
    # and backward() works again afterwards
    assert copied(0.9, 1.2) == pytest.approx(grad_a(0.9, 1.2))


@pytest.mark.parametrize("method", ["central", "richardson"])
def test_grad_a_by_finite_differences_is_wrong(method):
    answer = grad_a_by_differences(method)
    # fine away from the kink ...
    assert answer(0.9, 1.2) == pytest.approx(grad_a(0.9, 1.2), rel=1e-8)
    assert exercises.check_01_grad_a(answer) is False  # ... not next to it


def test_grad_a_reading_the_judges_frame_is_wrong():
    assert exercises.check_01_grad_a(read_the_judges_frame) is False


# -- 練習問題2: sigmoid as one node with its local gradient s * (1 - s)


def sigmoid(v):
    s = 1 / (1 + math.exp(-v.data))
    return Value(s, (v,), (s * (1 - s),), "sigmoid")


def sigmoid_wrong_local_grad(v):  # d sigma/dx written as s instead of s * (1 - s)
    s = 1 / (1 + math.exp(-v.data))
    return Value(s, (v,), (s,), "sigmoid")


def sigmoid_composed(v):  # right gradient, built from the engine's own ops: several nodes, not one
    return 1 / (1 + (-v).exp())


# sigma(x) = (1 + tanh(x/2)) / 2 with the project's Value.tanh: several nodes too
def sigmoid_through_tanh(v):
    return ((v * 0.5).tanh() + 1) * 0.5


# one node, its local gradient taken from the engine's backward()
def sigmoid_local_grad_by_backward(v):
    leaf = Value(v.data)
    s = 1 / (1 + (-leaf).exp())
    s.backward()
    return Value(s.data, (v,), (leaf.grad,), "sigmoid")


def sigmoid_by_differences(method):
    def answer(v):
        s = 1 / (1 + math.exp(-v.data))
        return Value(
            s, (v,), (derivative(method, lambda t: 1 / (1 + math.exp(-t)), v.data),), "sigmoid"
        )

    return answer


def test_sigmoid(capsys):
    assert exercises.check_01_sigmoid(sigmoid) is True
    assert exercises.check_01_sigmoid(sigmoid_wrong_local_grad) is False
    assert exercises.check_01_sigmoid(stub) is None
    assert "未回答" in capsys.readouterr().out


@pytest.mark.parametrize(
    "copied", [sigmoid_composed, sigmoid_through_tanh, sigmoid_local_grad_by_backward]
)
def test_sigmoid_from_the_engine_is_wrong(copied, capsys):
    assert copied(Value(0.3)).data == pytest.approx(sigmoid(Value(0.3)).data)
    assert exercises.check_01_sigmoid(copied) is False
    assert "不正解" in capsys.readouterr().out


@pytest.mark.parametrize("method", ["central", "richardson"])
def test_sigmoid_by_finite_differences_is_wrong(method):
    answer = sigmoid_by_differences(method)
    assert answer(Value(0.4))._local_grads[0] == pytest.approx(
        sigmoid(Value(0.4))._local_grads[0], rel=1e-8
    )
    assert exercises.check_01_sigmoid(answer) is False


def test_sigmoid_reading_the_judges_frame_is_wrong():
    assert exercises.check_01_sigmoid(read_the_judges_frame) is False


# -- 練習問題3: backward() by hand, over value.topological_order


def my_backward(root):
    root.grad = 1.0
    for node in reversed(topological_order(root)):
        for child, local_grad in zip(node._children, node._local_grads):
            child.grad += local_grad * node.grad


def my_backward_overwrites(root):  # '=' instead of '+=': a node used twice keeps only the last push
    root.grad = 1.0
    for node in reversed(topological_order(root)):
        for child, local_grad in zip(node._children, node._local_grads):
            child.grad = local_grad * node.grad


# children before parents: pushes grads that are not complete yet
def my_backward_wrong_order(root):
    root.grad = 1.0
    for node in topological_order(root):
        for child, local_grad in zip(node._children, node._local_grads):
            child.grad += local_grad * node.grad


def evaluate(node, kids):
    """node's value from its children's values `kids`: the node's op again. Constants folded into an
    op are recovered from the recorded values (c = data - child for '+', the local gradient for
    '*')."""
    if node._op in ("+", "-") and len(kids) == 2:
        return kids[0] + kids[1] if node._op == "+" else kids[0] - kids[1]
    if node._op == "*" and len(kids) == 2:
        return kids[0] * kids[1]
    (k,), (c,) = kids, node._children
    if node._op == "+":
        return k + (node.data - c.data)
    if node._op == "-":
        return k - (c.data - node.data) if node._local_grads[0] > 0 else (node.data + c.data) - k
    if node._op == "*":
        return k * node._local_grads[0]
    return {"tanh": math.tanh, "relu": lambda u: max(u, 0.0)}[node._op](k)


def root_with(topo, node, value):
    """The root's value when `node` holds `value`: every node after it in topological order
    evaluated again."""
    values = {id(node): value}
    for n in topo[topo.index(node) + 1 :]:
        if any(id(c) in values for c in n._children):
            values[id(n)] = evaluate(n, [values.get(id(c), c.data) for c in n._children])
    return values.get(id(topo[-1]), topo[-1].data)


def my_backward_by_differences(method):
    def answer(root):
        topo = topological_order(root)
        for node in topo:
            node.grad = derivative(method, lambda t, node=node: root_with(topo, node, t), node.data)

    return answer


@pytest.mark.parametrize("wrong", [my_backward_overwrites, my_backward_wrong_order])
def test_backward(wrong):
    assert exercises.check_01_backward(my_backward) is True
    assert exercises.check_01_backward(wrong) is False
    assert exercises.check_01_backward(stub) is None


@pytest.mark.parametrize(
    "copied",
    [lambda root: root.backward(), lambda root: trace_backward(root, quiet=True),
     lambda root: Value.backward(root), BACKWARD_COPIES[0], BACKWARD_COPIES[1]],
    ids=["backward", "trace_backward", "Value.backward", "code_copy", "source_copy"],
)
def test_backward_refuses_the_engines_own(copied, capsys):
    # Calling the engine's backward() (or a copy of it) gives exactly the right grads: the check
    # must still say 不正解.
    assert exercises.check_01_backward(copied) is False
    assert "使わずに" in capsys.readouterr().out
    a = Value(3.0)  # ... and the engine works again afterwards (the refusal is undone on exit)
    (a * a).backward()
    assert a.grad == 6.0 and len(trace_backward(a * a, quiet=True)) == 2


@pytest.mark.parametrize("method", ["central", "richardson"])
def test_backward_by_finite_differences_is_wrong(method):
    answer = my_backward_by_differences(method)
    _, root = exercises._graph_01(103)  # on a smooth graph the differences are close ...
    answer(root)
    _, ref = exercises._graph_01(103)
    ref.backward()
    assert all(u.grad == pytest.approx(w.grad, rel=1e-6, abs=1e-9)
               for u, w in zip(topological_order(root), topological_order(ref)))
    # ... but not next to the ReLU's kink, nor to 1e-12
    assert exercises.check_01_backward(answer) is False


def test_the_kink_graphs_straddle_the_relu():
    for side in (+1, -1):
        _, root = exercises._near_a_kink_01(side)
        relu = next(n for n in topological_order(root) if n._op == "relu")
        assert 0 < side * relu._children[0].data < 2e-13


def test_backward_reading_the_judges_frame_is_wrong():
    def answer(root):
        # the old judge built the reference graph before calling; this one after
        found = find_in_callers()
        for u, w in zip(topological_order(root), topological_order(found)):
            u.grad = w.grad

    assert exercises.check_01_backward(answer) is False


# -- 練習問題4: an iterative topological sort (order may differ from value.topological_order)


def my_topological_order(root):
    order, visited, stack = [], set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif node not in visited:
            visited.add(node)
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node._children))
    return order


# micrograd's build_topo: right order, but RecursionError on a deep chain
def recursive_topological_order(root):
    order, visited = [], set()

    def build(v):
        if v not in visited:
            visited.add(v)
            for c in v._children:
                build(c)
            order.append(v)

    build(root)
    return order


def parents_first(root):  # every node once, but in the wrong direction
    return list(reversed(topological_order(root)))


def test_topological_order(capsys):
    assert exercises.check_01_topological_order(my_topological_order) is True
    # any valid order passes: the reference's order is not value.topological_order's
    assert my_topological_order(exercises._graph_01(110)[1]) != topological_order(
        exercises._graph_01(110)[1]
    )
    assert exercises.check_01_topological_order(recursive_topological_order) is False
    assert "RecursionError" in capsys.readouterr().out
    assert exercises.check_01_topological_order(parents_first) is False
    assert exercises.check_01_topological_order(stub) is None


@pytest.mark.parametrize(
    "copied",
    [topological_order, lambda root: list(topological_order(root)), *TOPO_COPIES],
    ids=["itself", "listed", "code_copy", "source_copy"],
)
def test_topological_order_copied_is_wrong(copied, capsys):
    assert exercises.check_01_topological_order(copied) is False
    assert "使わずに" in capsys.readouterr().out
    assert len(topological_order(exercises._graph_01(110)[1])) > 4  # restored after the check


def test_topological_order_reading_the_judges_frame_is_wrong():
    assert exercises.check_01_topological_order(read_the_judges_frame) is False


def test_random_graphs_reuse_nodes_and_stay_finite():
    # The graphs of 練習問題3/4 must contain a node used twice (else '=' for '+=' would pass)
    # and modest numbers.
    for seed in range(103, 116):
        nodes, root = exercises._graph_01(seed)
        topo = topological_order(root)
        uses = {}
        for node in topo:
            for c in node._children:
                uses[id(c)] = uses.get(id(c), 0) + 1
        assert max(uses.values()) >= 2
        root.backward()
        assert all(math.isfinite(v.data) and abs(v.data) < 1e6 and abs(v.grad) < 1e6 for v in topo)


# -- the frame reader itself works: against a judge that computes its answer first, it passes


def test_the_frame_reader_finds_what_a_naive_judge_computed_first():
    def naive_judge(answer):
        want = grad_a(0.9, 1.2)  # computed before the call, as the old checks did
        return answer(0.9, 1.2) == want

    assert naive_judge(read_the_judges_frame) is True
