"""value.py -- a scalar autograd engine in the micrograd / microgpt style.

A `Value` wraps one float. Every arithmetic op on Values returns a new Value
that remembers its children and the *local* derivative of the op with respect
to each child. `backward()` then walks the graph from the output back to the
leaves, applying the chain rule one edge at a time:

    child.grad += local_grad * node.grad

That one line is the whole of backpropagation; everything else here is
bookkeeping (which order to visit nodes in) and care (clear errors instead of
NaN, no recursion limit on deep graphs, no wasted nodes). To watch that line
run node by node, or to draw the graph, see tracing.py.
"""
import gc
import math
import numbers
from contextlib import contextmanager


class NumericError(ArithmeticError):
    """The engine's own numeric failure: log of a non-positive number, division by
    zero, an overflow (also an int leaf too large for a float), a NaN or inf reaching
    log / exp / sqrt. Training reports it as divergence; other exceptions are bugs."""


class Value:
    """One scalar node of a computation graph.

    data         the float this node holds (forward value)
    grad         d(root)/d(this node), filled in by root.backward()
    _children    the Values this node was computed from
    _local_grads d(this node)/d(child), one float per child, from the forward pass
    _op          a short name of the op that made this node ('' for a leaf)
    """

    __slots__ = ("data", "grad", "_children", "_local_grads", "_op")

    def __init__(self, data, children=(), local_grads=(), op=""):
        if children:  # an op's result: inf - inf and NaN - NaN are NaN (true), finite x - x is 0
            if data - data:  # it overflowed, or a NaN came in: an error, as in exp and log
                raise _not_finite(op, data, children)
        elif type(data) is not float:  # a leaf holding the caller's number: it must be real
            data = _check_real(data, self)
        self.data = data
        self.grad = 0.0
        self._children = children
        self._local_grads = local_grads
        self._op = op

    # -- binary ops. A plain number on either side is a factor of the local gradient.

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

    def __truediv__(self, other):  # d(a/b)/da = 1/b, d(a/b)/db = -a/b^2 (see _divide)
        if isinstance(other, Value):
            out, inv, db = _divide(self.data, other.data)
            return Value(out, (self, other), (inv, db), "/")
        out, inv, _ = _divide(self.data, other)
        return Value(out, (self,), (inv,), "/")

    def __rtruediv__(self, other):  # other / self, other a plain number: d(c/b)/db = -c/b^2
        out, _, db = _divide(other, self.data)
        return Value(out, (self,), (db,), "/")

    def __pow__(self, n):  # d(x^n)/dx = n x^(n-1), for a plain-number exponent n
        if isinstance(n, Value):
            raise TypeError(f"Value power (**): the exponent must be a plain int or float, "
                            f"got {n!r}")
        n = _check_real(n)  # (a NumPy int64 exponent would overflow silently, a Python int not)
        x = self.data
        if x < 0 and not float(n).is_integer():
            raise NumericError(f"Value power (**): negative base {x!r} ** non-integer {n!r} is "
                               "not a real number")
        if x == 0 and n < 1 and n != 0:  # 0 ** -1 divides by zero; n / x^(1-n) at 0 ** 0.5 too
            raise NumericError(f"Value power (**): {x!r} ** {n!r} divides by zero (or n x^(n-1))")
        try:  # (d(x^0)/dx = 0 even at x = 0, where 0 * 0 ** -1 would raise)
            out, local_grad = x ** n, (n * x ** (n - 1) if n != 0 else 0.0)
        except OverflowError:
            raise NumericError(f"Value power (**): {x!r} ** {n!r} (or its derivative) overflows "
                               "a float") from None
        return Value(out, (self,), (local_grad,), f"**{n:g}")

    def __neg__(self):
        return Value(-self.data, (self,), (-1.0,), "neg")

    def __abs__(self):  # d|x|/dx = sign(x), taken as +1 at 0
        return self if self.data >= 0 else -self

    # -- unary functions. `not 0 < x < inf` also catches NaN (NaN compares False).

    def log(self):
        x = self.data
        if not 0 < x < math.inf:
            raise _domain_error("log", x, f"log of non-positive value {x!r} is undefined")
        return Value(math.log(x), (self,), (1.0 / x,), "log")

    def exp(self):
        x = self.data
        if not math.isfinite(x):
            raise _domain_error("exp", x)
        try:
            e = math.exp(x)
        except OverflowError:
            raise NumericError(f"Value.exp: exp({x!r}) overflows a float (limit is about "
                               "709.78)") from None
        return Value(e, (self,), (e,), "exp")

    def relu(self):  # NaN is not <= 0: it stays NaN, and __init__ raises NumericError (never 0)
        x = self.data
        return Value(0.0 if x <= 0 else x, (self,), (0.0 if x <= 0 else 1.0,), "relu")

    def tanh(self):
        t = math.tanh(self.data)
        return Value(t, (self,), (1.0 - t * t,), "tanh")

    def sqrt(self):  # sqrt(0) = 0 is fine, but d sqrt(x)/dx = 1 / (2 sqrt(x)) is infinite there
        x = self.data
        if not 0 < x < math.inf:
            raise _domain_error("sqrt", x, f"sqrt of negative value {x!r} is not a real number" if
                                x < 0 else f"sqrt of {x!r} has an infinite derivative (needs > 0)")
        s = math.sqrt(x)
        return Value(s, (self,), (0.5 / s,), "sqrt")

    # -- backpropagation

    def backward(self):
        """Fill in .grad of every node reachable from this one (this node = the loss).

        Nodes are visited in reverse topological order: a node's grad is complete
        before it goes on to its children. Leaves (parameters, inputs) ACCUMULATE, as
        in PyTorch: call zero_grad(params) between steps. Interior nodes are reset to 0
        first, so a node shared by several parents (a diamond) is not pushed on twice.
        """
        topo = topological_order(self)
        for node in topo:
            if node._children:
                node.grad = 0.0
        self.grad += 1.0
        for node in reversed(topo):
            # The plain form is one loop for every node:
            #     for child, local_grad in zip(node._children, node._local_grads):
            #         child.grad += local_grad * node.grad
            # Written out per number of children, a step runs 17% fewer instructions and
            # takes 16% less time (benchmarks/vs_commits.py, the one loop as the base).
            # (one local grad per child, or the unpacking or zip(strict=True) raises)
            children = node._children
            if len(children) == 2:  # a binary op
                child, other = children
                local_grad, other_local_grad = node._local_grads
                child.grad += local_grad * node.grad
                other.grad += other_local_grad * node.grad
            elif len(children) == 1:  # a unary op
                (local_grad,) = node._local_grads
                children[0].grad += local_grad * node.grad
            else:  # a leaf (no children), or a Value built by hand with more
                for child, local_grad in zip(children, node._local_grads, strict=True):
                    child.grad += local_grad * node.grad

    def __repr__(self):
        op = f", op={self._op!r}" if self._op else ""
        return f"Value(data={_short(self.data)}, grad={_short(self.grad)}{op})"


def _short(x):
    """A number in a repr: a float to 6 significant digits; an int or a Fraction (exact
    arithmetic) as itself, whatever its size (Fraction's float format, new in Python
    3.12, rounds it), except an int beyond str()'s limit of 4300 digits."""
    if isinstance(x, int) and x.bit_length() > 14000:
        return f"<an int of {x.bit_length()} bits>"
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def _check_real(data, leaf=None):
    """A leaf must hold a real number (numbers.Real: int, float, bool, a Fraction, a
    NumPy scalar, which becomes the Python number it holds: NumPy's int64 would overflow
    silently); an exact one beyond float range makes the leaf a _BeyondFloat."""
    if not isinstance(data, numbers.Real):
        raise TypeError("Value: data must be a real number (int, float, bool or a NumPy real "
                        f"scalar), got {type(data).__name__} {data!r}")
    data = data.item() if type(data).__module__ == "numpy" else data
    if leaf is not None and isinstance(data, numbers.Rational) and abs(data) > 1.79e308:
        leaf.__class__ = _BeyondFloat  # (the same slots: only its ops change)
    return data


class _BeyondFloat(Value):  # a leaf beyond float range: exact among ints; where it meets a float,
    __slots__ = ()  # float() of it overflows: each op says so as a NumericError


def _guard(name):  # Value's op `name`, its OverflowError a NumericError
    def guarded(self, *other):
        try:  # (Python calls a subclass's reflected op first: a Value on the left gets its own)
            if name.startswith("__r") and isinstance(other[0], Value):
                return getattr(Value, "__" + name[3:])(other[0], self)
            return getattr(Value, name)(self, *other)
        except OverflowError:
            raise NumericError(f"Value {name.strip('_')}: {_short(self.data)} is too large to "
                               "become a float (beyond about 1.8e308)") from None
    return guarded


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "log", "exp", "tanh", "sqrt"):
    setattr(_BeyondFloat, _name, _guard(_name))


def _not_finite(op, data, children):
    """An op gave inf or NaN: it overflowed (as exp and log say), or an input did."""
    why = "an input is not finite" if any(c.data - c.data for c in children) else "overflow"
    inputs = ", ".join(_short(c.data) for c in children)
    return NumericError(f"Value {op}: {op!r} of {inputs} is {data!r} ({why})")


def _domain_error(op, x, message=""):
    """log / exp / sqrt / relu outside their domain: one clear error instead of a NaN
    that spreads through the graph (a NaN or inf input went wrong before this op)."""
    if not math.isfinite(x):
        message = (f"{op}({x!r}) is undefined here: the input is not a finite number "
                   "(something before it overflowed or became NaN)")
    return NumericError(f"Value.{op}: {message}")


def _divide(a, b):
    """(a / b, d(a/b)/da, d(a/b)/db), with one clear error instead of inf or NaN.
    d(a/b)/db = -a/b^2 is computed as -(a/b) * (1/b): b*b would underflow to 0 for
    |b| < 1e-162, and Python would say "float division by zero" although b != 0."""
    if b == 0:
        raise NumericError(f"Value division (/): {a!r} / {b!r} divides by zero")
    out, inv = a / b, 1.0 / b
    db = -out * inv
    if not (math.isfinite(inv) and math.isfinite(db)):  # a/b = inf: db inf; 0 * (1/b = inf): NaN
        raise NumericError(f"Value division (/): {a!r} / {b!r} (or its derivative) overflows "
                           "a float")
    return out, inv, db


def topological_order(root):
    """All nodes reachable from root, children before parents: an iterative DFS (no
    recursion limit on a chain of a million nodes). A node first popped is pushed back
    under a None marker, its children above; when the marker surfaces, its children
    are all in the order, and it follows (no (node, expanded) tuple per visit)."""
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
    """.grad = 0 for every Value in params, between steps: backward() adds to leaves."""
    for p in params:
        p.grad = 0.0


@contextmanager
def no_cycle_gc():
    """Pause Python's cyclic garbage collector in a `with` block, around one training
    step. A Value graph has no cycles: refcounting frees it. The collector runs every
    few hundred allocations and re-walks the ~10^5 live nodes of a step each time:
    about half of a step's time (benchmarks/README.md)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ------------------------ checking: is backprop right? Against a numerical derivative.
def gradient_check(f, inputs, eps=1e-6, rtol=1e-5, atol=1e-8, file=None, quiet=False):
    """Compare backprop's gradient of f (a list of Values -> one Value, e.g. lambda xs:
    softmax(xs)[0]) at `inputs` (floats) with central differences, input by input
    (DeZero's gradient_check): (f(x + eps e_i) - f(x - eps e_i)) / (2 eps), whose error
    is O(eps^2) from the Taylor series plus about 1e-16 / eps from rounding. An input
    passes when |backprop - numeric| <= atol + rtol * |numeric| (numpy.isclose's rule).
    Prints a table of the errors unless quiet; True when every input passes."""
    xs = [float(x) for x in inputs]
    if not xs:
        raise ValueError("gradient_check: inputs is empty; give at least one number to check at")
    leaves = [Value(x) for x in xs]
    out = f(leaves)
    if not isinstance(out, Value):
        raise TypeError("gradient_check: f must return a Value (the scalar to differentiate), "
                        f"got {out!r}")
    out.backward()

    def at(point, i):
        try:
            return f([Value(x) for x in point]).data
        except NumericError as e:  # (log at x - eps < 0, say: a point the caller never passed)
            raise NumericError(f"gradient_check: input {i} is {xs[i]:g}, but the central "
                               f"difference also needs f at {xs[i]:g} +- eps ({eps:g}), where f "
                               f"fails: {e}; give a smaller eps") from None

    rows, ok = [], True
    for i, x in enumerate(xs):
        plus, minus = list(xs), list(xs)
        plus[i], minus[i] = x + eps, x - eps
        numeric = (at(plus, i) - at(minus, i)) / (2 * eps)
        backprop = leaves[i].grad
        abs_err = abs(backprop - numeric)
        passed = abs_err <= atol + rtol * abs(numeric)
        ok = ok and passed
        rel_err = abs_err / max(abs(numeric), abs(backprop), 1e-300)
        rows.append((i, x, backprop, numeric, abs_err, rel_err, passed))
    if not quiet:
        lines = [f"gradient_check at {len(xs)} inputs (eps={eps:g}; "
                 f"passes if |error| <= {atol:g} + {rtol:g}*|numeric|)",
                 f"{'i':>3} {'input':>12} {'backprop':>15} {'numeric':>15} {'abs error':>10} "
                 f"{'rel error':>10}"]
        for i, x, b, n, ae, re, passed in rows:
            mark = "ok" if passed else "FAIL"
            lines.append(f"{i:>3} {x:>12.6g} {b:>15.9g} {n:>15.9g} {ae:>10.2e} {re:>10.2e}  {mark}")
        lines.append("all gradients agree" if ok
                     else "MISMATCH: backprop and the numerical derivative disagree")
        print("\n".join(lines), file=file)
    return ok
