"""Reference solutions of notebook 01's exercises (練習問題): each check says 正解 for the reference,
不正解 for a plausible wrong answer, and 未回答 for the unsolved stub."""
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402

from tracing import trace_backward  # noqa: E402
from value import Value, topological_order  # noqa: E402


def stub(*args):
    raise NotImplementedError


# -- 練習問題1: dL/da of L = tanh(a*b) * a, by hand (a is used twice: product rule = two paths)

def grad_a(a, b):
    t = math.tanh(a * b)
    return (1 - t * t) * b * a + t


def grad_a_one_path_only(a, b):  # forgets the edge a -> (... * a): the gradients of the two uses must add up
    t = math.tanh(a * b)
    return (1 - t * t) * b * a


def grad_a_copied_from_the_exercise(a0, b0):  # the three engine lines the exercise prints: the engine's answer
    a, b = Value(a0), Value(b0)
    ((a * b).tanh() * a).backward()
    return a.grad


def grad_a_copied_through_the_trace(a0, b0):
    a, b = Value(a0), Value(b0)
    trace_backward((a * b).tanh() * a, quiet=True)
    return a.grad


def test_grad_a(capsys):
    assert exercises.check_01_grad_a(grad_a) is True
    assert exercises.check_01_grad_a(grad_a_one_path_only) is False
    assert exercises.check_01_grad_a(stub) is None
    out = capsys.readouterr().out
    assert "正解" in out and "不正解" in out and "未回答" in out


@pytest.mark.parametrize("copied", [grad_a_copied_from_the_exercise, grad_a_copied_through_the_trace])
def test_grad_a_copied_from_the_engine_is_wrong(copied, capsys):
    assert exercises.check_01_grad_a(copied) is False
    assert "使わずに" in capsys.readouterr().out
    assert copied(0.3, -1.2) == pytest.approx(grad_a(0.3, -1.2))  # the copy is right, and backward() works again


# -- 練習問題2: sigmoid as one node with its local gradient s * (1 - s)

def sigmoid(v):
    s = 1 / (1 + math.exp(-v.data))
    return Value(s, (v,), (s * (1 - s),), "sigmoid")


def sigmoid_wrong_local_grad(v):  # d sigma/dx written as s instead of s * (1 - s)
    s = 1 / (1 + math.exp(-v.data))
    return Value(s, (v,), (s,), "sigmoid")


def sigmoid_composed(v):  # right gradient, but several nodes: the exercise asks for one node
    return 1 / (1 + (-v).exp())


def test_sigmoid(capsys):
    assert exercises.check_01_sigmoid(sigmoid) is True
    assert exercises.check_01_sigmoid(sigmoid_wrong_local_grad) is False
    assert "FAIL" in capsys.readouterr().out  # the failing gradient_check table is shown
    assert exercises.check_01_sigmoid(sigmoid_composed) is False
    assert exercises.check_01_sigmoid(stub) is None


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


def my_backward_wrong_order(root):  # children before parents: pushes grads that are not complete yet
    root.grad = 1.0
    for node in topological_order(root):
        for child, local_grad in zip(node._children, node._local_grads):
            child.grad += local_grad * node.grad


@pytest.mark.parametrize("wrong", [my_backward_overwrites, my_backward_wrong_order])
def test_backward(wrong):
    assert exercises.check_01_backward(my_backward) is True
    assert exercises.check_01_backward(wrong) is False
    assert exercises.check_01_backward(stub) is None


@pytest.mark.parametrize("copied", [lambda root: root.backward(), lambda root: trace_backward(root, quiet=True),
                                    lambda root: Value.backward(root)])
def test_backward_refuses_the_engines_own(copied, capsys):
    # Calling the engine's backward() gives exactly the right grads: the check must still say 不正解.
    assert exercises.check_01_backward(copied) is False
    assert "使わずに" in capsys.readouterr().out
    # ... and the engine works again afterwards (the refusal is undone on exit)
    a = Value(3.0)
    (a * a).backward()
    assert a.grad == 6.0 and len(trace_backward(a * a, quiet=True)) == 2


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


def recursive_topological_order(root):  # micrograd's build_topo: right order, but RecursionError on a deep chain
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
    assert my_topological_order(exercises._graph_01(110)[1]) != topological_order(exercises._graph_01(110)[1])
    assert exercises.check_01_topological_order(topological_order) is False  # the engine's own: copied
    assert exercises.check_01_topological_order(lambda root: list(topological_order(root))) is False
    assert "使わずに" in capsys.readouterr().out
    assert len(topological_order(exercises._graph_01(110)[1])) > 4  # restored after the check
    assert exercises.check_01_topological_order(recursive_topological_order) is False
    assert "RecursionError" in capsys.readouterr().out
    assert exercises.check_01_topological_order(parents_first) is False
    assert exercises.check_01_topological_order(stub) is None


def test_random_graphs_reuse_nodes_and_stay_finite():
    # The graphs of 練習問題3/4 must contain a node used twice (else '=' for '+=' would pass) and modest numbers.
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
