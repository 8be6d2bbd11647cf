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
import math


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
        # d(a/b)/da = 1/b,  d(a/b)/db = -a/b^2
        if isinstance(other, Value):
            b = other.data
            if b == 0:
                raise ZeroDivisionError(f"Value division: {self.data!r} / {other!r} divides by zero")
            return Value(self.data / b, (self, other), (1.0 / b, -self.data / (b * b)), "/")
        if other == 0:
            raise ZeroDivisionError(f"Value division: {self.data!r} / 0 divides by zero")
        return Value(self.data / other, (self,), (1.0 / other,), "/")

    def __rtruediv__(self, other):  # other / self
        b = self.data
        if b == 0:
            raise ZeroDivisionError(f"Value division: {other!r} / {self!r} divides by zero")
        return Value(other / b, (self,), (-other / (b * b),), "/")

    def __pow__(self, exponent):
        # d(x^n)/dx = n x^(n-1); only a plain-number exponent is supported.
        if isinstance(exponent, Value):
            raise TypeError("Value ** Value is not supported: the exponent must be a plain int or float "
                            f"(got {exponent!r})")
        x = self.data
        if x == 0 and exponent < 0:
            raise ZeroDivisionError(f"Value power: 0 ** {exponent!r} is undefined (division by zero)")
        if x < 0 and not float(exponent).is_integer():
            raise ValueError(f"Value power: negative base {x!r} ** non-integer {exponent!r} is not a real number")
        out = x ** exponent
        return Value(out, (self,), (exponent * x ** (exponent - 1) if exponent != 1 else 1.0,), f"**{exponent:g}")

    def __neg__(self):
        return Value(-self.data, (self,), (-1.0,), "neg")

    # -- unary functions

    def log(self):
        x = self.data
        if x <= 0:
            raise ValueError(f"Value.log: log of non-positive value {x!r} is undefined")
        return Value(math.log(x), (self,), (1.0 / x,), "log")

    def exp(self):
        try:
            e = math.exp(self.data)
        except OverflowError:
            raise OverflowError(f"Value.exp: exp({self.data!r}) overflows a float (limit is about 709.78)") from None
        return Value(e, (self,), (e,), "exp")

    def relu(self):
        x = self.data
        return Value(x if x > 0 else 0.0, (self,), (1.0 if x > 0 else 0.0,), "relu")

    def tanh(self):
        t = math.tanh(self.data)
        return Value(t, (self,), (1.0 - t * t,), "tanh")

    def sqrt(self):
        x = self.data
        if x <= 0:
            raise ValueError(f"Value.sqrt: sqrt of {x!r} has no finite derivative (needs a positive value)")
        s = math.sqrt(x)
        return Value(s, (self,), (0.5 / s,), "sqrt")

    # -- backpropagation

    def backward(self):
        """Fill in .grad of every node reachable from this one (this node = the loss).

        Nodes are visited in reverse topological order, so a node's grad is
        complete before it is pushed on to its children. Leaf gradients
        accumulate across calls, as in PyTorch; interior nodes are reset, so
        their grad always describes the latest call.
        """
        topo = topological_order(self)
        for node in topo:
            if node._children:
                node.grad = 0.0
        self.grad += 1.0
        for node in reversed(topo):
            g = node.grad
            for child, local_grad in zip(node._children, node._local_grads):
                child.grad += local_grad * g

    def __repr__(self):
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g}{', op=' + repr(self._op) if self._op else ''})"


def topological_order(root):
    """All nodes reachable from root, children before parents (iterative DFS).

    An explicit stack instead of recursion, so a chain of a million nodes does
    not hit Python's recursion limit. Each entry is (node, expanded): a node is
    emitted the second time it is popped, after all its children.
    """
    order, visited = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in visited:
            continue
        visited.add(node)
        stack.append((node, True))
        for child in node._children:
            if child not in visited:
                stack.append((child, False))
    return order


def zero_grad(params):
    """Set .grad = 0 for every Value in params (call between optimizer steps)."""
    for p in params:
        p.grad = 0.0
