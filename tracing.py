"""tracing.py -- follow backward() edge by edge, and draw a Value graph.

value.py is the engine; this module only looks at its graphs (micrograd draws in a
notebook, DeZero in utils.py: apart from the engine). Nodes get short stable names n0,
n1, ... in topological order (children first: leaves have small numbers, the root the
largest); a `labels` dict {Value: "name"} overrides any of them.
"""
import math
from types import SimpleNamespace

from value import Value, topological_order


def node_names(root, labels=None):
    """(topo, names): the graph's topological order; {Value: name} for each node."""
    topo = topological_order(root)
    names = {node: f"n{i}" for i, node in enumerate(topo)}
    names.update({node: str(name) for node, name in (labels or {}).items() if node in names})
    return topo, names


def trace_backward(root, labels=None, file=None, quiet=False):
    """Run root.backward() while recording each step; print a table and return the rows.

    Does exactly what Value.backward() does (same order, arithmetic and accumulation
    into leaves), and records one dict per node, in the order backward visits it: its
    node name (n3, or its label), op ('' for a leaf), data, grad (d(root)/d(node),
    complete here: all its parents are done), children (their names), local_grads
    (d(node)/d(child), from the forward pass), pushed (local_grad * grad, what it adds
    to each child's grad) and child_grads (each child's grad right after the push).
    The table goes to `file` (default sys.stdout) unless quiet=True.
    """
    topo, names = node_names(root, labels)
    for node in topo:  # same reset as in Value.backward
        if node._children:
            node.grad = 0.0
    root.grad += 1.0
    rows = []
    for node in reversed(topo):
        pushed, child_grads = [], []
        for child, local_grad in zip(node._children, node._local_grads):
            child.grad += local_grad * node.grad
            pushed.append(local_grad * node.grad)
            child_grads.append(child.grad)
        rows.append({"node": names[node], "op": node._op, "data": node.data, "grad": node.grad,
                     "children": [names[c] for c in node._children],
                     "local_grads": list(node._local_grads), "pushed": pushed,
                     "child_grads": child_grads})
    if not quiet:
        print(format_trace(rows), file=file)
    return rows


def format_trace(rows):
    """The rows of trace_backward() as a plain-text table (one line per edge)."""
    w = max([4] + [len(r["node"]) for r in rows] + [len(c) for r in rows for c in r["children"]])
    head = (f"{'node':<{w}}  {'op':<6} {'data':>12} {'grad':>12}  | "
            f"{'child':<{w}} {'d node/d child':>14} {'pushed':>12} {'child.grad':>12}")
    lines = [f"backward() from {rows[0]['node']}: {len(rows)} nodes, in the order they are visited",
             head, "-" * len(head)]
    for r in rows:
        left = f"{r['node']:<{w}}  {r['op'] or 'leaf':<6} {r['data']:>12.6g} {r['grad']:>12.6g}  |"
        if not r["children"]:
            lines.append(left)
        edges = zip(r["children"], r["local_grads"], r["pushed"], r["child_grads"])
        for i, (c, lg, p, cg) in enumerate(edges):
            prefix = left if i == 0 else " " * (len(left) - 1) + "|"
            lines.append(f"{prefix} {c:<{w}} {lg:>14.6g} {p:>12.6g} {cg:>12.6g}")
    return "\n".join(lines)


# characters with a meaning inside a Graphviz record label, escaped with a backslash
DOT_ESCAPES = str.maketrans({ch: "\\" + ch for ch in '\\"{}|<>'})


def to_dot(root, labels=None):
    """Graphviz DOT text of root's graph (render it with `dot -Tsvg`, or online).

    One record node per Value (name | op | data | grad), one edge child -> parent per
    use, labelled d(parent)/d(child). Ids are always n0, n1, ...; `labels` set the text.
    """
    topo, names = node_names(root, labels)
    ids = {node: f"n{i}" for i, node in enumerate(topo)}
    lines = ["digraph value_graph {", "  rankdir=LR;",
             '  node [shape=record, fontname="monospace"];']
    for node in topo:
        fields = [names[node], node._op or "leaf", f"data {node.data:.6g}", f"grad {node.grad:.6g}"]
        label = " | ".join(f.translate(DOT_ESCAPES) for f in fields)
        lines.append(f'  {ids[node]} [label="{{ {label} }}"];')
    for node in topo:
        for child, local_grad in zip(node._children, node._local_grads):
            lines.append(f'  {ids[child]} -> {ids[node]} [label="{local_grad:.4g}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw_graph(root, labels=None, ax=None, max_nodes=80):
    """Draw a small graph with matplotlib and return the Axes (for notebooks).

    Columns by depth above the leaves (root at the right); each Value a box (name, data,
    grad), each op a marker just left of its box; each edge child -> op carries the
    local gradient, skips columns through free row slots (not boxes), has its own ports
    (both edges of `a*a` show). Sizes assume the figure made when ax=None. matplotlib is
    imported here, not at the top, so `import tracing` stays fast.
    """
    topo, names = node_names(root, labels)
    if len(topo) > max_nodes:
        raise ValueError(f"draw_graph: the graph has {len(topo)} nodes, more than "
                         f"max_nodes={max_nodes}; use to_dot() or trace_backward() instead")
    g = _columns(topo)
    _place(g, topo, names)
    _ports(g, topo)
    if ax is None:
        import matplotlib.pyplot as plt

        width = (len(g.columns) - 1) * g.dx + g.bw + g.op_slot + 0.4
        height = (max(len(col) for col in g.columns.values()) - 1) * g.dy + g.bh + 0.4
        fig, ax = plt.subplots(figsize=(S * width, S * height + 0.3))  # 0.3 in for a title
        fig.subplots_adjust(left=0, right=1, bottom=0, top=S * height / (S * height + 0.3))
    _draw_nodes(ax, g, topo)
    _draw_edges(ax, g)
    xs, ys = [g.x[n] for n in topo], [g.y[n] for n in topo]
    ax.set_xlim(min(xs) - g.bw / 2 - g.op_slot - 0.2, max(xs) + g.bw / 2 + 0.2)
    ax.set_ylim(min(ys) - g.bh / 2 - 0.2, max(ys) + g.bh / 2 + 0.2)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


# Sizes in data units. The default figure has S inches per unit; a monospace character
# of FONT points is 0.6 FONT points wide: boxes and markers just fit their text.
S, FONT = 0.5, 7


def _text_width(text, pt=FONT):
    return 0.6 * pt / 72 / S * max(len(line) for line in text.split("\n"))


def _columns(topo):
    """A layout, for _place and _ports to fill in: depth, columns, feeds, edges."""
    g = SimpleNamespace()
    # column = depth above the leaves; a leaf sits one column left of its first user
    g.depth, users = {}, {node: [] for node in topo}
    for node in topo:  # children come first, so their depth is known
        g.depth[node] = 1 + max((g.depth[c] for c in node._children), default=-1)
        for c in node._children:
            users[c].append(node)
    g.columns = {}
    for node in topo:
        if not node._children and users[node]:
            g.depth[node] = min(g.depth[p] for p in users[node]) - 1
        g.columns.setdefault(g.depth[node], []).append(node)
    # An edge that skips columns gets a waypoint (node, i, column) in each column it
    # passes; a waypoint takes a row slot like a node: the edge is drawn through it.
    g.feeds = {node: [] for node in topo}  # item -> [(next item one hop right, edge index)]
    g.edges = []  # (child, node, i, waypoints)
    for node in topo:
        for i, child in enumerate(node._children):
            way = [(node, i, k) for k in range(g.depth[child] + 1, g.depth[node])]
            hops = [child, *way, node]
            for a, b in zip(hops, hops[1:]):
                g.feeds.setdefault(a, []).append((b, i))
            for waypoint in way:
                g.columns[waypoint[2]].append(waypoint)
            g.edges.append((child, node, i, way))
    return g


def _place(g, topo, names):
    """Box and op sizes, and the position of every box, op marker and waypoint."""
    g.texts = {node: f"{names[node]}\ndata {node.data:.4g}\ngrad {node.grad:.4g}" for node in topo}
    g.bw = 0.3 + max(_text_width(t) for t in g.texts.values())  # box width
    g.bh, g.dy = 0.95, 1.25  # box height, row spacing
    g.oh = 0.5  # op marker height; one-character ops get a circle, longer ones a pill
    g.ow = {node: max(g.oh, 0.3 + _text_width(node._op)) for node in topo if node._children}
    g.op_slot = 0.35 + max(g.ow.values(), default=0.0)  # op marker + a short arrow
    g.dx = g.bw + 1.2 + g.op_slot  # 1.2 units between a box and the next ops: edge labels
    g.y = {}

    def row_key(item):  # high if what it feeds is high; on a tie, operand order (a above b in a*b)
        targets = g.feeds[item] or [(None, 0)]
        return -sum(g.y.get(p, 0.0) for p, _ in targets) / len(targets), min(i for _, i in targets)

    for d in sorted(g.columns, reverse=True):  # root first: an item's targets are placed before it
        col = sorted(g.columns[d], key=row_key)
        for row, item in enumerate(col):
            g.y[item] = ((len(col) - 1) / 2 - row) * g.dy
    g.x = {item: (g.depth[item] if isinstance(item, Value) else item[2]) * g.dx for item in g.y}
    g.ox = {node: g.x[node] - g.bw / 2 - 0.35 - g.ow[node] / 2 for node in g.ow}  # op centers


def _ports(g, topo):
    """Where each edge leaves its child's box and enters its op marker."""
    # in-ports: on the op marker's left half-circle, spread by angle, the top one on top
    g.in_port, r = {}, g.oh / 2
    for node in g.ow:
        incoming = sorted((e for e in g.edges if e[1] is node),
                          key=lambda e: (-g.y[(e[3] or [e[0]])[-1]], e[2]))
        spread = math.radians(min(60, 35 * (len(incoming) - 1)))
        for j, e in enumerate(incoming):
            angle = spread * (1 - 2 * j / (len(incoming) - 1)) if len(incoming) > 1 else 0.0
            g.in_port[e[1], e[2]] = (g.ox[node] - g.ow[node] / 2 + r - r * math.cos(angle),
                                     g.y[node] + r * math.sin(angle))
    # out-ports: on the child box's right side, in the order of where the edges go first
    g.out_port = {}
    for child in topo:
        outgoing = [e for e in g.edges if e[0] is child]
        outgoing.sort(key=lambda e: -(g.y[e[3][0]] if e[3] else g.in_port[e[1], e[2]][1]))
        spread = min(0.3, 0.15 * (len(outgoing) - 1))
        for j, e in enumerate(outgoing):
            offset = spread * (1 - 2 * j / (len(outgoing) - 1)) if len(outgoing) > 1 else 0.0
            g.out_port[e[1], e[2]] = (g.x[child] + g.bw / 2, g.y[child] + offset)


LINE = {"color": "0.4", "lw": 0.9, "zorder": 1}


def _draw_nodes(ax, g, topo):
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    text = {"ha": "center", "va": "center", "fontsize": FONT, "family": "monospace", "zorder": 3}
    for node in topo:
        x, y = g.x[node], g.y[node]
        ax.add_patch(FancyBboxPatch((x - g.bw / 2, y - g.bh / 2), g.bw, g.bh, ec="0.3", zorder=2,
                                    fc="#dbe9f6" if node._children else "#f6e7c8",
                                    boxstyle="round,pad=0.02", gid="box"))
        ax.text(x, y, g.texts[node], **text)
        if node._children:
            w, ox = g.ow[node], g.ox[node]
            ax.add_patch(FancyBboxPatch((ox - w / 2, y - g.oh / 2), w, g.oh, fc="white", ec="0.3",
                                        boxstyle=f"round,pad=0,rounding_size={g.oh / 2}",
                                        zorder=2, gid="op"))
            ax.text(ox, y, node._op, **text)
            ax.add_patch(FancyArrowPatch((ox + w / 2, y), (x - g.bw / 2, y), arrowstyle="->",
                                         mutation_scale=8, shrinkA=0, shrinkB=0, gid="out", **LINE))


def _draw_edges(ax, g):
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.path import Path

    for _child, node, i, way in g.edges:
        points = [g.out_port[node, i]]
        for waypoint in way:  # straight through the empty slot: across the op and box columns
            x, y = g.x[waypoint], g.y[waypoint]
            points += [(x - g.bw / 2 - g.op_slot, y), (x + g.bw / 2, y)]
        points.append(g.in_port[node, i])
        # smooth S-curves between the points: horizontal tangents at each segment's ends
        verts, codes = [points[0]], [Path.MOVETO]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            verts += [((x0 + x1) / 2, y0), ((x0 + x1) / 2, y1), (x1, y1)]
            codes += [Path.CURVE4] * 3
        ax.add_patch(FancyArrowPatch(path=Path(verts, codes), arrowstyle="->", mutation_scale=8,
                                     gid="edge", **LINE))
        # the local gradient, at the middle of the last segment
        (x0, y0), (x1, y1) = points[-2:]
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, f"{node._local_grads[i]:.3g}", fontsize=6,
                color="0.25", ha="center", va="center", zorder=3,
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85})
