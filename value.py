"""value.py -- a scalar autograd engine in the micrograd / microgpt style.

A `Value` wraps one float. Every arithmetic op on Values returns a new Value
that remembers its children and the *local* derivative of the op with respect
to each child. `backward()` then walks the graph from the output back to the
leaves, applying the chain rule one edge at a time:

    child.grad += local_grad * node.grad

That one line is the whole of backpropagation; everything else here is
bookkeeping (which order to visit nodes in) and care (clear errors instead of
NaN, no recursion limit on deep graphs, no wasted nodes).
"""
import gc
import math
import numbers
from contextlib import contextmanager


class NumericError(ArithmeticError):
    """The engine's own numeric failure: log of a non-positive number, division by zero, an overflow, a NaN or
    inf reaching log / exp / sqrt. Training reports it as divergence; every other exception (a shape mistake,
    a NameError, ...) is a bug in the code that called the engine and surfaces as a normal traceback."""


class Value:
    """One scalar node of a computation graph.

    data         the float this node holds (forward value)
    grad         d(root)/d(this node), filled in by root.backward()
    _children    the Values this node was computed from
    _local_grads d(this node)/d(child), one float per child, computed in the forward pass
    _op          a short name of the op that made this node ('' for a leaf)
    """

    __slots__ = ("data", "grad", "_children", "_local_grads", "_op")

    def __init__(self, data, children=(), local_grads=(), op=""):
        if not children and type(data) is not float:  # a leaf holding the caller's number: check it is real
            _check_real(data)                          # (ops always pass children, so they skip this)
        self.data = data
        self.grad = 0.0
        self._children = children
        self._local_grads = local_grads
        self._op = op

    # -- binary ops. A plain number on either side is folded into the local
    # gradient instead of being wrapped in a Value node of its own.

    def __add__(self, other):
        if isinstance(other, Value):
            return Value(self.data + other.data, (self, other), (1.0, 1.0), "+")
        if other == 0:  # sum() starts from 0: adding it must not grow the graph
            return self
        return Value(self.data + other, (self,), (1.0,), "+")

    def __radd__(self, other):  # other + self, other a plain number
        return self.__add__(other)

    def __sub__(self, other):
        if isinstance(other, Value):
            return Value(self.data - other.data, (self, other), (1.0, -1.0), "-")
        return Value(self.data - other, (self,), (1.0,), "-")

    def __rsub__(self, other):  # other - self
        return Value(other - self.data, (self,), (-1.0,), "-")

    def __mul__(self, other):
        if isinstance(other, Value):
            return Value(self.data * other.data, (self, other), (other.data, self.data), "*")
        return Value(self.data * other, (self,), (float(other),), "*")

    def __rmul__(self, other):
        return Value(self.data * other, (self,), (float(other),), "*")

    def __truediv__(self, other):
        # d(a/b)/da = 1/b,  d(a/b)/db = -a/b^2. _divide computes both, and raises a clear error on b == 0 or
        # on overflow (for a tiny b, 1/b or a/b^2 can overflow even when a/b itself is finite).
        if isinstance(other, Value):
            out, inv, db = _divide(self.data, other.data)
            return Value(out, (self, other), (inv, db), "/")
        out, inv, _ = _divide(self.data, other)
        return Value(out, (self,), (inv,), "/")

    def __rtruediv__(self, other):  # other / self, other a plain number
        out, _, db = _divide(other, self.data)  # d(c/b)/db = -c/b^2
        return Value(out, (self,), (db,), "/")

    def __rpow__(self, base):
        # base ** Value: Python falls back to this when the base is a plain number. A Value exponent is not
        # supported (d(c^x)/dx = c^x log c would need log of the base, and no op in the chapters uses it), so
        # say so in the same words as __pow__ instead of Python's "unsupported operand type(s)".
        raise TypeError(f"Value power (**): {base!r} ** Value is not supported, the exponent must be a plain "
                        f"int or float (got exponent {self!r})")

    def __pow__(self, exponent):
        # d(x^n)/dx = n x^(n-1); only a plain-number exponent is supported.
        if isinstance(exponent, Value):
            raise TypeError("Value power (**): Value ** Value is not supported, the exponent must be a plain "
                            f"int or float (got exponent {exponent!r})")
        x = self.data
        if x == 0 and exponent < 0:
            raise NumericError(f"Value power (**): {x!r} ** {exponent!r} is undefined (division by zero)")
        if x < 0 and not float(exponent).is_integer():
            raise NumericError(f"Value power (**): negative base {x!r} ** non-integer {exponent!r} "
                             "is not a real number")
        if x == 0 and 0 < exponent < 1:
            # e.g. 0 ** 0.5: the value is 0 but n x^(n-1) = n / x^(1-n) is infinite
            raise NumericError(f"Value power (**): {x!r} ** {exponent!r} has an infinite derivative "
                             "(needs a positive base)")
        try:
            out = x ** exponent
            # n == 0 separately: 0 * 0 ** -1 would raise although d(x^0)/dx = 0
            local_grad = exponent * x ** (exponent - 1) if exponent != 0 else 0.0
        except OverflowError:
            raise NumericError(f"Value power (**): {x!r} ** {exponent!r} (or its derivative) "
                                "overflows a float") from None
        return Value(out, (self,), (local_grad,), f"**{exponent:g}")

    def __neg__(self):
        return Value(-self.data, (self,), (-1.0,), "neg")

    # -- unary functions

    def log(self):
        x = self.data
        _check_finite("log", x)
        if x <= 0:
            raise NumericError(f"Value.log: log of non-positive value {x!r} is undefined")
        return Value(math.log(x), (self,), (1.0 / x,), "log")

    def exp(self):
        _check_finite("exp", self.data)
        try:
            e = math.exp(self.data)
        except OverflowError:
            raise NumericError(f"Value.exp: exp({self.data!r}) overflows a float (limit is about 709.78)") from None
        return Value(e, (self,), (e,), "exp")

    def relu(self):
        x = self.data
        return Value(x if x > 0 else 0.0, (self,), (1.0 if x > 0 else 0.0,), "relu")

    def tanh(self):
        t = math.tanh(self.data)
        return Value(t, (self,), (1.0 - t * t,), "tanh")

    def sqrt(self):
        x = self.data
        _check_finite("sqrt", x)
        if x < 0:
            raise NumericError(f"Value.sqrt: sqrt of negative value {x!r} is not a real number")
        if x == 0:
            # sqrt(0) = 0 is fine, but d sqrt(x)/dx = 1 / (2 sqrt(x)) is infinite there
            raise NumericError(f"Value.sqrt: sqrt of {x!r} has an infinite derivative (needs a positive value)")
        s = math.sqrt(x)
        return Value(s, (self,), (0.5 / s,), "sqrt")

    # -- backpropagation

    def backward(self):
        """Fill in .grad of every node reachable from this one (this node = the loss).

        Nodes are visited in reverse topological order, so a node's grad is
        complete before it is pushed on to its children.

        Gradient semantics (the same as PyTorch's):
        - Leaves (Values with no children: parameters, inputs) ACCUMULATE:
          backward() adds d(root)/d(leaf) to whatever .grad already holds.
          Calling it twice on the same graph therefore leaves exactly twice
          the gradient in every leaf; call zero_grad(params) between steps.
        - Interior nodes are reset to 0 at the start of every call, so their
          .grad always describes the latest call only. This is what makes the
          second call exactly "the first one added again" for the leaves, even
          when an interior node is shared by several parents (a diamond):
          without the reset its stale grad would be pushed on a second time.
        - The root itself gets grad 1 (d root / d root), or +1 if it is a leaf.
        """
        topo = topological_order(self)
        for node in topo:
            if node._children:
                node.grad = 0.0
        self.grad += 1.0
        for node in reversed(topo):
            children = node._children
            if not children:  # a leaf: nothing to push further
                continue
            g = node.grad
            # Every op of this class has one or two children. Unpacking them directly instead of
            # zip()-ing the two tuples saves a zip object per node: this loop runs ~2x faster.
            if len(children) == 2:
                a, b = children
                da, db = node._local_grads
                a.grad += da * g
                b.grad += db * g
            elif len(children) == 1:
                children[0].grad += node._local_grads[0] * g
            else:  # a Value built by hand with any number of children
                for child, local_grad in zip(children, node._local_grads):
                    child.grad += local_grad * g

    def __repr__(self):
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g}{', op=' + repr(self._op) if self._op else ''})"


def _check_real(data):
    """A leaf must hold a real number: int, float, bool, or a NumPy real scalar (anything numbers.Real)."""
    if not isinstance(data, numbers.Real):
        raise TypeError(f"Value: data must be a real number (int, float, bool or a NumPy real scalar), got "
                        f"{type(data).__name__} {data!r}")


def _check_finite(op, x):
    """log, exp and sqrt of NaN or +-inf: one clear error instead of a NaN that spreads through the graph."""
    if not math.isfinite(x):
        raise NumericError(f"Value.{op}: {op}({x!r}) is undefined here: the input is not a finite number "
                         "(something before it overflowed or became NaN)")


def _divide(a, b):
    """(a / b, d(a/b)/da, d(a/b)/db) for the two division ops, with one clear error instead of inf or NaN.

    d(a/b)/db = -a/b^2 is computed as -(a/b) * (1/b): b*b would underflow to 0 for |b| < 1e-162 and turn
    into Python's bare "float division by zero" although b != 0.
    """
    if b == 0:
        raise NumericError(f"Value division (/): {a!r} / {b!r} divides by zero")
    out, inv = a / b, 1.0 / b
    db = -out * inv
    if not (math.isfinite(inv) and math.isfinite(db)):  # a/b = inf makes db inf; 0 * (1/b = inf) makes it NaN
        raise NumericError(f"Value division (/): {a!r} / {b!r} (or its derivative) overflows a float")
    return out, inv, db


def topological_order(root):
    """All nodes reachable from root, children before parents (iterative DFS).

    An explicit stack instead of recursion, so a chain of a million nodes does
    not hit Python's recursion limit. When a node is first popped it is pushed
    back with a None marker above it and its children above that; once the
    marker surfaces again, everything below the node has been emitted, so the
    node is emitted. (Cheaper than pushing (node, expanded) tuples: no tuple
    per visit, and visited children are skipped when popped.)
    """
    order, visited = [], set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node is None:  # the marker: the node under it has all its children in `order`
            order.append(stack.pop())
        elif node not in visited:
            visited.add(node)
            stack.append(node)
            stack.append(None)
            stack.extend(node._children)
    return order


def zero_grad(params):
    """Set .grad = 0 for every Value in params (call between optimizer steps).

    backward() accumulates into leaves, so without this the gradients of
    successive steps pile up. Interior nodes need no zeroing: backward()
    resets them itself.
    """
    for p in params:
        p.grad = 0.0


@contextmanager
def no_cycle_gc():
    """Pause Python's cyclic garbage collector inside a `with` block (restored on exit).

    Use it around one training step (forward + backward). A Value graph is a DAG:
    plain reference counting frees every node as soon as the loss goes out of
    scope, so the cycle collector never finds anything to collect here. But it
    is triggered by allocation counts, and a step allocates ~10^5 nodes (plus
    their children tuples), so it runs hundreds of times per step and its full
    passes re-walk every live node: about half of a microgpt step's time
    (benchmarks/bench.py measures it). Reference counting is untouched, so
    memory still does not grow from step to step.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ---------------------------------------------------------------------------
# Checking: is backprop right? Compare it with a numerical derivative.


def gradient_check(f, inputs, eps=1e-6, rtol=1e-5, atol=1e-8, file=None, quiet=False):
    """Compare backprop's gradient of f with central differences, input by input (DeZero's gradient_check).

    f       a function from a list of Values to one Value, e.g. lambda xs: softmax(xs)[0]
    inputs  the point to check at, a list of floats

    Backprop: f is applied to fresh leaves and .backward() fills in each leaf's grad. Numeric: for each
    input i, the central difference (f(x + eps e_i) - f(x - eps e_i)) / (2 eps), whose error is
    O(eps^2) from the Taylor series plus about 1e-16 / eps from rounding. An input passes when
    |backprop - numeric| <= atol + rtol * |numeric| (numpy.isclose's rule). Prints a table (one row per
    input: value, backprop, numeric, absolute and relative error) unless quiet=True; returns True when
    every input passes, else False.
    """
    xs = [float(x) for x in inputs]
    if not xs:
        raise ValueError("gradient_check: inputs is empty; give at least one number to check at")
    leaves = [Value(x) for x in xs]
    out = f(leaves)
    if not isinstance(out, Value):
        raise TypeError(f"gradient_check: f must return a Value (the scalar to differentiate), got {out!r}")
    out.backward()

    def at(point):
        return f([Value(x) for x in point]).data

    rows, ok = [], True
    for i, x in enumerate(xs):
        plus, minus = list(xs), list(xs)
        plus[i], minus[i] = x + eps, x - eps
        numeric = (at(plus) - at(minus)) / (2 * eps)
        backprop = leaves[i].grad
        abs_err = abs(backprop - numeric)
        passed = abs_err <= atol + rtol * abs(numeric)
        ok = ok and passed
        rows.append((i, x, backprop, numeric, abs_err, abs_err / max(abs(numeric), abs(backprop), 1e-300), passed))
    if not quiet:
        lines = [f"gradient_check at {len(xs)} inputs (eps={eps:g}; "
                 f"passes if |error| <= {atol:g} + {rtol:g}*|numeric|)",
                 f"{'i':>3} {'input':>12} {'backprop':>15} {'numeric':>15} {'abs error':>10} {'rel error':>10}"]
        for i, x, b, n, ae, re, passed in rows:
            mark = "ok" if passed else "FAIL"
            lines.append(f"{i:>3} {x:>12.6g} {b:>15.9g} {n:>15.9g} {ae:>10.2e} {re:>10.2e}  {mark}")
        lines.append("all gradients agree" if ok else "MISMATCH: backprop and the numerical derivative disagree")
        print("\n".join(lines), file=file)
    return ok


# ---------------------------------------------------------------------------
# Tracing: follow every gradient line by line.
# Nodes get short stable names n0, n1, ... in topological order (children
# first, so leaves have small numbers and the root the largest); a `labels`
# dict {Value: "name"} overrides any of them.


def node_names(root, labels=None):
    """(topo, names): the topological order of root's graph and {Value: name} for every node."""
    topo = topological_order(root)
    names = {node: f"n{i}" for i, node in enumerate(topo)}
    if labels:
        for node, name in labels.items():
            if node in names:
                names[node] = str(name)
    return topo, names


def trace_backward(root, labels=None, file=None, quiet=False):
    """Run root.backward() while recording each step; print a table and return the rows.

    Does exactly what Value.backward() does (same order, same arithmetic, same
    accumulation into leaves), and for each node, in the order backward visits
    it, records one dict:

        node         its name (n3, or the one given in `labels`)
        op           the op that made it ('' for a leaf)
        data         its forward value
        grad         d(root)/d(node), complete at this point (all parents are done)
        children     names of its children
        local_grads  d(node)/d(child) for each child, computed in the forward pass
        pushed       local_grad * grad, what this node adds to each child's grad
        child_grads  each child's accumulated grad right after the push

    The table goes to `file` (default sys.stdout) unless quiet=True.
    """
    topo, names = node_names(root, labels)
    for node in topo:  # same reset as in Value.backward
        if node._children:
            node.grad = 0.0
    root.grad += 1.0
    rows = []
    for node in reversed(topo):
        g = node.grad
        pushed, child_grads = [], []
        for child, local_grad in zip(node._children, node._local_grads):
            child.grad += local_grad * g
            pushed.append(local_grad * g)
            child_grads.append(child.grad)
        rows.append({"node": names[node], "op": node._op, "data": node.data, "grad": g,
                     "children": [names[c] for c in node._children], "local_grads": list(node._local_grads),
                     "pushed": pushed, "child_grads": child_grads})
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
        for i, (c, lg, p, cg) in enumerate(zip(r["children"], r["local_grads"], r["pushed"], r["child_grads"])):
            prefix = left if i == 0 else " " * (len(left) - 1) + "|"
            lines.append(f"{prefix} {c:<{w}} {lg:>14.6g} {p:>12.6g} {cg:>12.6g}")
    return "\n".join(lines)


def _dot_escape(text):
    # characters with a meaning inside a Graphviz record label
    for ch in '\\"{}|<>':
        text = text.replace(ch, "\\" + ch)
    return text


def to_dot(root, labels=None):
    """Graphviz DOT text of root's graph (render with `dot -Tsvg`, or any online viewer).

    One record node per Value (name | op | data | grad), one edge child -> parent
    per use, labelled with the local gradient d(parent)/d(child). Node ids are
    always n0, n1, ...; a `labels` name only changes the text shown.
    """
    topo, names = node_names(root, labels)
    ids = {node: f"n{i}" for i, node in enumerate(topo)}
    lines = ["digraph value_graph {", "  rankdir=LR;", '  node [shape=record, fontname="monospace"];']
    for node in topo:
        fields = [names[node], node._op or "leaf", f"data {node.data:.6g}", f"grad {node.grad:.6g}"]
        label = " | ".join(_dot_escape(f) for f in fields)
        lines.append(f'  {ids[node]} [label="{{ {label} }}"];')
    for node in topo:
        for child, local_grad in zip(node._children, node._local_grads):
            lines.append(f'  {ids[child]} -> {ids[node]} [label="{local_grad:.4g}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw_graph(root, labels=None, ax=None, max_nodes=80):
    """Draw a small graph with matplotlib and return the Axes (for notebooks).

    Layered layout: a node's column is its depth above the leaves (leaves at
    the left, root at the right); each Value is a box (name, data, grad), each
    op a rounded marker sized to its text, just left of the box it produced;
    every edge child -> op carries the local gradient d(node)/d(child).

    Legibility rules: an edge that skips columns runs through a free row slot in
    each column it passes (so never through a box); edges leave a box and enter
    an op at separate ports (so the two edges of `a*a` are both visible).
    Sizes assume the figure this function makes when ax=None. matplotlib is
    imported here, not at module level, so `import value` stays fast.
    """
    topo, names = node_names(root, labels)
    if len(topo) > max_nodes:
        raise ValueError(f"draw_graph: the graph has {len(topo)} nodes, more than max_nodes={max_nodes}; "
                         "use to_dot() or trace_backward() for large graphs")
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
    from matplotlib.path import Path

    # column = depth above the leaves; a leaf sits one column left of its first user
    depth, users = {}, {node: [] for node in topo}
    for node in topo:  # children come first, so their depth is known
        depth[node] = 1 + max((depth[c] for c in node._children), default=-1)
        for c in node._children:
            users[c].append(node)
    for node in topo:
        if not node._children and users[node]:
            depth[node] = min(depth[p] for p in users[node]) - 1

    # An edge that skips columns gets a waypoint (node, i, column) in every column it passes. A waypoint
    # takes a row slot like a node does, so the edge is drawn through that empty slot, not through a box.
    columns = {}
    for node in topo:
        columns.setdefault(depth[node], []).append(node)
    feeds = {node: [] for node in topo}  # item -> (item its edge goes to next, one hop right; edge index)
    edges = []  # (child, node, i, waypoints)
    for node in topo:
        for i, child in enumerate(node._children):
            way = [(node, i, k) for k in range(depth[child] + 1, depth[node])]
            hops = [child, *way, node]
            for a, b in zip(hops, hops[1:]):
                feeds.setdefault(a, []).append((b, i))
            for wp in way:
                columns[wp[2]].append(wp)
            edges.append((child, node, i, way))

    # Sizes in data units. The default figure has S inches per unit; a monospace character of f points
    # is about 0.6 f points wide, so boxes and op markers can be made just wide enough for their text.
    S, font = 0.5, 7

    def text_width(text, pt=font):
        return 0.6 * pt / 72 / S * max(len(line) for line in text.split("\n"))

    texts = {node: f"{names[node]}\ndata {node.data:.4g}\ngrad {node.grad:.4g}" for node in topo}
    bw, bh, dy = 0.3 + max(text_width(t) for t in texts.values()), 0.95, 1.25  # box size, row spacing
    oh = 0.5  # op marker height; one-character ops get a circle, longer ones a pill
    ow = {node: max(oh, 0.3 + text_width(node._op)) for node in topo if node._children}
    op_slot = 0.35 + max(ow.values(), default=0.0)  # op marker + a short arrow, left of each box
    dx = bw + 1.2 + op_slot  # 1.2 units between a box and the next column's ops, for the edge labels

    y = {}

    def row_key(item):  # high if what it feeds is high; on a tie, operand order (a above b in a*b)
        targets = feeds[item] or [(None, 0)]
        return -sum(y.get(p, 0.0) for p, _ in targets) / len(targets), min(i for _, i in targets)

    for d in sorted(columns, reverse=True):  # root first: each item's targets are placed before it
        col = sorted(columns[d], key=row_key)
        for row, item in enumerate(col):
            y[item] = ((len(col) - 1) / 2 - row) * dy
    x = {item: depth[item] * dx if isinstance(item, Value) else item[2] * dx for item in y}
    ox = {node: x[node] - bw / 2 - 0.35 - ow[node] / 2 for node in ow}  # op marker centers

    # In-ports: on the left half-circle of the op marker, spread by angle, top edge to the top port.
    in_port = {}
    for node in ow:
        incoming = sorted((e for e in edges if e[1] is node), key=lambda e: (-y[(e[3] or [e[0]])[-1]], e[2]))
        spread = math.radians(min(60, 35 * (len(incoming) - 1)))
        r = oh / 2
        for j, e in enumerate(incoming):
            angle = spread * (1 - 2 * j / (len(incoming) - 1)) if len(incoming) > 1 else 0.0
            in_port[e[1], e[2]] = (ox[node] - ow[node] / 2 + r - r * math.cos(angle), y[node] + r * math.sin(angle))
    # Out-ports: on the right side of the child's box, in the vertical order of where the edges go first.
    out_port = {}
    for child in topo:
        outgoing = [e for e in edges if e[0] is child]
        outgoing.sort(key=lambda e: -(y[e[3][0]] if e[3] else in_port[e[1], e[2]][1]))
        spread = min(0.3, 0.15 * (len(outgoing) - 1))
        for j, e in enumerate(outgoing):
            offset = spread * (1 - 2 * j / (len(outgoing) - 1)) if len(outgoing) > 1 else 0.0
            out_port[e[1], e[2]] = (x[child] + bw / 2, y[child] + offset)

    if ax is None:
        import matplotlib.pyplot as plt

        width = (len(columns) - 1) * dx + bw + op_slot + 0.4
        height = (max(len(col) for col in columns.values()) - 1) * dy + bh + 0.4
        fig, ax = plt.subplots(figsize=(S * width, S * height + 0.3))
        fig.subplots_adjust(left=0, right=1, bottom=0, top=S * height / (S * height + 0.3))  # 0.3 in: title
    line = {"color": "0.4", "lw": 0.9, "zorder": 1}
    for node in topo:
        ax.add_patch(FancyBboxPatch((x[node] - bw / 2, y[node] - bh / 2), bw, bh, boxstyle="round,pad=0.02",
                                    fc="#dbe9f6" if node._children else "#f6e7c8", ec="0.3", zorder=2, gid="box"))
        ax.text(x[node], y[node], texts[node], ha="center", va="center", fontsize=font, family="monospace",
                zorder=3)
        if node._children:
            w = ow[node]
            ax.add_patch(FancyBboxPatch((ox[node] - w / 2, y[node] - oh / 2), w, oh, fc="white", ec="0.3",
                                        boxstyle=f"round,pad=0,rounding_size={oh / 2}", zorder=2, gid="op"))
            ax.text(ox[node], y[node], node._op, ha="center", va="center", fontsize=font, family="monospace",
                    zorder=3)
            ax.add_patch(FancyArrowPatch((ox[node] + w / 2, y[node]), (x[node] - bw / 2, y[node]),
                                         arrowstyle="->", mutation_scale=8, shrinkA=0, shrinkB=0, gid="out", **line))
    for _child, node, i, way in edges:
        points = [out_port[node, i]]
        for wp in way:  # straight through the empty slot: across the op column and the box column
            points += [(x[wp] - bw / 2 - op_slot, y[wp]), (x[wp] + bw / 2, y[wp])]
        points.append(in_port[node, i])
        # smooth S-curves between the points: horizontal tangents at both ends of every segment
        verts, codes = [points[0]], [Path.MOVETO]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            verts += [((x0 + x1) / 2, y0), ((x0 + x1) / 2, y1), (x1, y1)]
            codes += [Path.CURVE4] * 3
        ax.add_patch(FancyArrowPatch(path=Path(verts, codes), arrowstyle="->", mutation_scale=8, gid="edge", **line))
        # the local gradient, at the middle of the last segment (where the curve is at its midpoint)
        (x0, y0), (x1, y1) = points[-2:]
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, f"{node._local_grads[i]:.3g}", fontsize=6, color="0.25",
                ha="center", va="center", zorder=3,
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85})
    xs, ys = [x[n] for n in topo], [y[n] for n in topo]
    ax.set_xlim(min(xs) - bw / 2 - op_slot - 0.2, max(xs) + bw / 2 + 0.2)
    ax.set_ylim(min(ys) - bh / 2 - 0.2, max(ys) + bh / 2 + 0.2)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax
