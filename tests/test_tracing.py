"""Tests for tracing.py: node names, the backward trace table, DOT text and the matplotlib drawing."""
import io
import re
import subprocess
import sys

import pytest
from test_value import diamond  # x -> h (shared interior) -> two branches -> y

from tracing import draw_graph, format_trace, node_names, to_dot, trace_backward
from value import Value, topological_order


def chapter_graph():
    a, b, c, f = Value(2.0), Value(-3.0), Value(10.0), Value(-2.0)
    e = a * b
    d = e + c
    loss = d * f
    return loss, {a: "a", b: "b", c: "c", d: "d", e: "e", f: "f", loss: "L"}


def test_node_names_default_and_labels():
    loss, labels = chapter_graph()
    topo, names = node_names(loss)
    assert [names[n] for n in topo] == [f"n{i}" for i in range(len(topo))]
    _, named = node_names(loss, labels)
    assert named[loss] == "L"
    assert sorted(named.values()) == sorted(labels.values())


def test_trace_backward_rows_match_backward():
    loss, labels = chapter_graph()
    ref, ref_labels = chapter_graph()  # an identical graph, through plain backward()
    ref.backward()
    ref_grads = {ref_labels[n]: n.grad for n in topological_order(ref)}

    out = io.StringIO()
    rows = trace_backward(loss, labels=labels, file=out)
    topo = topological_order(loss)
    # one row per node, in the order backward visits them: reverse topological order
    assert [r["node"] for r in rows] == [labels[n] for n in reversed(topo)]
    assert {r["node"]: r["grad"] for r in rows} == ref_grads
    assert {labels[n]: n.grad for n in topo} == ref_grads
    assert ref_grads == {"L": 1.0, "d": -2.0, "f": 4.0, "e": -2.0, "c": -2.0, "a": 6.0, "b": -4.0}
    by_name = {labels[n]: n for n in topo}
    for r in rows:
        node = by_name[r["node"]]
        assert r["op"] == node._op and r["data"] == node.data
        assert r["children"] == [labels[c] for c in node._children]
        assert r["local_grads"] == list(node._local_grads)
        assert r["pushed"] == [lg * r["grad"] for lg in r["local_grads"]]
    # the root pushes to d and f first, and they hold exactly that afterwards
    assert rows[0]["node"] == "L"
    assert rows[0]["child_grads"] == rows[0]["pushed"] == [-2.0, 4.0]
    text = out.getvalue()
    assert text == format_trace(rows) + "\n"
    assert len(text.splitlines()) == 3 + 6 + 4  # title, header, rule; one line per edge; one per leaf
    assert re.search(r"^L\s+\*\s+-8\s+1\s+\|\s+d\s+-2\s+-2\s+-2$", text, re.M)


def test_trace_backward_accumulates_like_backward():
    y, x, w, _ = diamond()
    y.backward()
    gx = x.grad
    rows = trace_backward(y, quiet=True)
    assert x.grad == 2 * gx
    # with a shared node, a child's accumulated grad grows across rows
    assert len(rows) == len(topological_order(y))


def test_trace_backward_quiet_prints_nothing(capsys):
    loss, _ = chapter_graph()
    trace_backward(loss, quiet=True)
    assert capsys.readouterr().out == ""
    loss, _ = chapter_graph()
    trace_backward(loss)
    assert "backward() from n6" in capsys.readouterr().out


def test_to_dot():
    loss, labels = chapter_graph()
    loss.backward()
    dot = to_dot(loss, labels)
    assert dot.lstrip().startswith("digraph")
    node_lines = re.findall(r"^\s*n\d+ \[label=", dot, re.M)
    edge_lines = re.findall(r"^\s*n\d+ -> n\d+", dot, re.M)
    assert len(node_lines) == len(topological_order(loss)) == 7
    assert len(edge_lines) == 6
    assert "{ L | * | data -8 | grad 1 }" in dot
    assert dot.count("{") == dot.count("}")


def test_to_dot_escapes_record_characters():
    a = Value(1.0)
    y = a ** 2
    dot = to_dot(y, {a: 'x|"y"'})
    assert r'x\|\"y\"' in dot


def test_draw_graph_with_agg_backend():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    loss, labels = chapter_graph()
    loss.backward()
    ax = draw_graph(loss, labels)
    assert isinstance(ax, Axes)
    # one box per Value, one op marker + one op->box arrow per op node, one curve per child edge
    gids = [p.get_gid() for p in ax.patches]
    assert (gids.count("box"), gids.count("op"), gids.count("out"), gids.count("edge")) == (7, 3, 3, 6)
    assert any("grad 6" in t.get_text() for t in ax.texts)
    plt.close(ax.figure)

    fig, ax2 = plt.subplots()
    assert draw_graph(loss, ax=ax2) is ax2
    plt.close(fig)


def _drawn(root, labels=None):
    """draw_graph on the Agg backend, drawn once so that text extents are known."""
    import matplotlib

    matplotlib.use("Agg")
    ax = draw_graph(root, labels)
    ax.figure.canvas.draw()
    return ax


def _rmsnorm_y0():
    # utils.rmsnorm's graph for y0, written out: x0 feeds both x0*x0 (column 1) and the last op (column 6)
    x0, x1 = Value(3.0), Value(4.0)
    scale = ((x0 * x0 + x1 * x1) / 2 + 1e-5) ** -0.5
    y0 = x0 * scale
    y0.backward()
    return y0


def test_draw_graph_edges_that_skip_columns_go_around_the_boxes():
    import matplotlib.pyplot as plt
    from matplotlib.transforms import Bbox

    ax = _drawn(_rmsnorm_y0())
    boxes = [p.get_extents().transformed(ax.transData.inverted()) for p in ax.patches if p.get_gid() == "box"]
    edges = [p for p in ax.patches if p.get_gid() == "edge"]
    assert len(boxes) == 9 and len(edges) == 11  # x0*x0, x1*x1, +, /2, +1e-5, **-0.5, * (2+2+2+1+1+1+2)
    for edge in edges:
        # 20 points on every Bezier piece of the curve (and of its arrow head), in data coordinates
        ts = [i / 19 for i in range(20)]
        points = [pt for piece, _ in edge.get_path().iter_bezier() for pt in piece(ts)]
        for box in boxes:
            inner = Bbox.from_extents(box.x0 + 0.05, box.y0 + 0.05, box.x1 - 0.05, box.y1 - 0.05)
            assert not any(inner.contains(px, py) for px, py in points), "an edge runs through a box"
    plt.close(ax.figure)


def test_draw_graph_separates_the_two_edges_of_a_times_a():
    import matplotlib.pyplot as plt

    a = Value(3.0)
    y = a * a
    y.backward()
    ax = _drawn(y, {a: "a", y: "y"})
    edges = [p.get_path().vertices for p in ax.patches if p.get_gid() == "edge"]
    assert len(edges) == 2
    # the curves start apart on a's box and end apart on the op marker
    assert abs(edges[0][0][1] - edges[1][0][1]) > 0.2
    labels = [t for t in ax.texts if t.get_text() == "3"]  # d(a*a)/da = a, once per edge
    assert len(labels) == 2
    r = ax.figure.canvas.get_renderer()
    assert not labels[0].get_window_extent(r).overlaps(labels[1].get_window_extent(r))
    plt.close(ax.figure)


def test_draw_graph_text_fits_in_boxes_and_op_markers():
    import matplotlib.pyplot as plt

    x = Value(0.5)
    y = (x.tanh() ** -0.5).exp() * 1e-7
    y.backward()
    ax = _drawn(y, {x: "a_long_name"})
    r = ax.figure.canvas.get_renderer()
    shapes = [p.get_window_extent(r) for p in ax.patches if p.get_gid() in ("box", "op")]
    for text in ax.texts:
        if text.get_bbox_patch() is not None:
            continue  # an edge label (drawn on a white background over its edge)
        extent = text.get_window_extent(r)
        assert any(s.x0 <= extent.x0 and extent.x1 <= s.x1 and s.y0 <= extent.y0 and extent.y1 <= s.y1
                   for s in shapes), f"{text.get_text()!r} spills out of its shape"
    assert {"tanh", "**-0.5", "exp", "*"} <= {t.get_text() for t in ax.texts}
    plt.close(ax.figure)


def test_draw_graph_refuses_large_graphs():
    y = sum(Value(float(i)) for i in range(100))
    with pytest.raises(ValueError, match="draw_graph"):
        draw_graph(y)


def test_importing_value_or_tracing_does_not_import_matplotlib():
    code = "import sys, value, tracing; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    assert out.stdout.strip() == "False"
