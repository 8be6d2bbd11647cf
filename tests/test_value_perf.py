"""Tests for the performance work on value.py: the faster backward/topological sort compute exactly what the
textbook versions compute, the graph is as lean as the math allows, and no_cycle_gc() is safe.
Nothing here measures wall-clock time (benchmarks/README.md has the timings)."""
import gc
import random
import sys
import tracemalloc
from pathlib import Path

import pytest

from utils import linear, rmsnorm, softmax
from value import Value, no_cycle_gc, topological_order

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from naive_value import NaiveValue  # noqa: E402


def random_graph(cls, seed, n_leaves=6, n_ops=60):
    """A random DAG with shared nodes (diamonds), built from +, -, *, / and unary ops."""
    rng = random.Random(seed)
    leaves = [cls(rng.uniform(0.5, 1.5)) for _ in range(n_leaves)]
    nodes = list(leaves)
    for _ in range(n_ops):
        a, b = rng.choice(nodes), rng.choice(nodes)
        op = rng.randrange(6)
        if op == 0:
            c = a + b
        elif op == 1:
            c = a * b * 0.5
        elif op == 2:
            c = a - b * 0.3
        elif op == 3:
            c = a / (b * b + 1.0)
        elif op == 4:
            c = (a * 0.1).exp()
        else:
            c = (a * a + 0.5).log()
        nodes.append(c)
    return sum(nodes[-10:]), leaves


def recursive_topo(root):
    """The textbook recursive DFS (small graphs only)."""
    order, seen = [], set()

    def visit(v):
        if v not in seen:
            seen.add(v)
            for c in v._children:
                visit(c)
            order.append(v)
    visit(root)
    return order


@pytest.mark.parametrize("seed", range(5))
def test_topological_order_is_a_valid_order_of_the_reachable_nodes(seed):
    root, _ = random_graph(Value, seed)
    order = topological_order(root)
    assert len(order) == len(set(order))
    assert set(order) == set(recursive_topo(root))
    where = {node: i for i, node in enumerate(order)}
    assert all(where[c] < where[node] for node in order for c in node._children)
    assert order[-1] is root


@pytest.mark.parametrize("seed", range(5))
def test_backward_matches_reference_design(seed):
    root, leaves = random_graph(Value, seed)
    ref_root, ref_leaves = random_graph(NaiveValue, seed)
    assert root.data == pytest.approx(ref_root.data, rel=1e-12)
    root.backward()
    ref_root.backward()
    for a, b in zip(leaves, ref_leaves):
        assert a.grad == pytest.approx(b.grad, rel=1e-10, abs=1e-12)


def test_backward_with_a_hand_built_three_child_node():
    a, b, c = Value(1.0), Value(2.0), Value(3.0)
    s = Value(6.0, (a, b, c), (1.0, 2.0, 3.0), "sum3")
    (s * s).backward()
    assert (a.grad, b.grad, c.grad) == (12.0, 24.0, 36.0)


def test_chapter_functions_use_fewer_nodes_than_the_reference_design():
    # constants are folded into local gradients and a - b, a / b are one node each (reference: 2-3 nodes)
    def nodes(cls):
        x = [cls(0.1 * i - 0.5) for i in range(16)]
        w = [[cls(0.01 * (i - j)) for j in range(16)] for i in range(16)]
        probs = softmax(linear(rmsnorm(x), w))
        return len(topological_order(-probs[3].log()))
    lean, naive = nodes(Value), nodes(NaiveValue)
    # linear: 16 rows x (16 mul + 15 add) either way; rmsnorm and softmax are where the reference pays extra
    assert lean < naive
    assert naive - lean >= 16 + 16  # at least one node saved per softmax division and per sum's `0 +`


def test_linear_row_is_exactly_2n_minus_1_nodes():
    x = [Value(1.0) for _ in range(16)]
    w = [[Value(2.0) for _ in range(16)]]
    (y,) = linear(x, w)
    assert len(topological_order(y)) == 32 + 31  # 32 leaves, 16 products, 15 additions (sum's 0 is free)


def test_no_cycle_gc_restores_the_collector_state():
    assert gc.isenabled()
    with no_cycle_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), no_cycle_gc():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with no_cycle_gc():
            pass
        assert not gc.isenabled()  # it was off before, so it stays off
    finally:
        gc.enable()


def test_graphs_are_freed_without_the_cycle_collector():
    # a graph is a DAG, so reference counting alone frees it: memory does not grow from step to step
    params = [Value(random.Random(i).gauss(0, 1)) for i in range(64)]

    def step():
        with no_cycle_gc():
            x = rmsnorm(params[:16])
            loss = sum(linear(x, [params[16:32], params[32:48], params[48:]]))
            loss.backward()

    tracemalloc.start()
    try:
        step()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(20):
            step()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after - before < 4096  # bytes; one graph here is ~100 nodes, ~20 kB
