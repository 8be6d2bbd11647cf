"""Notebook 02's exercises: 正解 (True) to a right answer, 不正解 (False) to a wrong one (the central
difference beside the kink among them), 未回答 (None) to the unsolved stub."""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402
from test_exercises_01 import stub, topological_order  # noqa: E402


def grad_a(a, b):
    t = math.tanh(a * b)
    return 0.0 if t * a - 0.5 <= 0 else t + a * b * (1 - t * t)


def grad_a_one_path_only(a, b):  # forgets the path through tanh(a b)
    t = math.tanh(a * b)
    return 0.0 if t * a - 0.5 <= 0 else t


def grad_a_by_central_difference(a, b, h=1e-6):
    def loss(a):
        return max(math.tanh(a * b) * a - 0.5, 0.0)
    return (loss(a + h) - loss(a - h)) / (2 * h)


def my_topological_order(root):
    order, visited, stack = [], set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif node not in visited:
            visited.add(node)
            stack.append((node, True))
            stack.extend((c, False) for c in node._children)
    return order


def parents_first(root):
    return my_topological_order(root)[::-1]


def test_grad_a():
    assert exercises.check_02_grad_a(grad_a) is True
    assert exercises.check_02_grad_a(grad_a_one_path_only) is False
    assert exercises.check_02_grad_a(grad_a_by_central_difference) is False  # beside the kink
    assert exercises.check_02_grad_a(stub) is None


def test_iterative_topological_order():
    assert exercises.check_02_topological_order(my_topological_order) is True
    assert exercises.check_02_topological_order(topological_order) is False  # RecursionError
    assert exercises.check_02_topological_order(parents_first) is False
    assert exercises.check_02_topological_order(stub) is None
