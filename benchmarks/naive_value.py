"""naive_value.py -- the reference scalar design, kept as a benchmark baseline and counter-example.

microgpt's `Value` as first written: constants wrapped in nodes, `a - b` as `a + (-b)`, `a / b` as
`a * b**-1`, a recursive topological sort (notebook 02's 発展 part: RecursionError on a deep graph).
"""
import math


class NaiveValue:
    __slots__ = ("data", "grad", "_children", "_local_grads")

    def __init__(self, data, children=(), local_grads=()):
        self.data = data
        self.grad = 0
        self._children = children
        self._local_grads = local_grads

    def __add__(self, other):
        other = other if isinstance(other, NaiveValue) else NaiveValue(other)
        return NaiveValue(self.data + other.data, (self, other), (1, 1))

    def __mul__(self, other):
        other = other if isinstance(other, NaiveValue) else NaiveValue(other)
        return NaiveValue(self.data * other.data, (self, other), (other.data, self.data))

    def __pow__(self, other):
        return NaiveValue(self.data**other, (self,), (other * self.data ** (other - 1),))

    def log(self):
        return NaiveValue(math.log(self.data), (self,), (1 / self.data,))

    def exp(self):
        return NaiveValue(math.exp(self.data), (self,), (math.exp(self.data),))

    def relu(self):
        return NaiveValue(max(0, self.data), (self,), (float(self.data > 0),))

    def sqrt(self):
        return self**0.5

    def __neg__(self):
        return self * -1

    def __abs__(self):  # as value.py: d|x|/dx = sign(x), taken as +1 at 0
        return self if self.data >= 0 else -self

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * other**-1

    def __rtruediv__(self, other):
        return other * self**-1

    def backward(self):
        topo = []
        visited = set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._children:
                    build_topo(child)
                topo.append(v)

        build_topo(self)
        self.grad = 1
        for v in reversed(topo):
            for child, local_grad in zip(v._children, v._local_grads):
                child.grad += local_grad * v.grad
