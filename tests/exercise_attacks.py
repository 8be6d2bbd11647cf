"""Answers that try to pass the notebooks' exercises without deriving anything, for tests/test_exercises_*.py.

- Finite differences: `central` (h = 1e-6, scaled by max(1, |x_i|), the usual choice) and `richardson`
  (Ridders' extrapolation of central differences, Numerical Recipes' dfridr, started from several step sizes
  and keeping the estimate its own error bound trusts most). Richardson is strong: on a smooth function of
  moderate size it reaches 1e-14 or better, so a check only beats it where differences really fail.
- `copies(f)`: the two ways to keep a refused function working that a refusal by name alone misses: its code
  in a new function object taken before the check, and its source executed again.
- `read_the_judges_frame`: an answer that looks for the expected value in its callers' frames.
"""
import inspect
import math
import textwrap
import types

import numpy as np

# ---------------------------------------------------------------- finite differences

def _guarded(f):
    """f, with a domain error (log of 0, overflow) turned into nan, as a difference routine would see it."""
    def g(*args):
        try:
            with np.errstate(all="ignore"):
                return float(f(*args))
        except (ValueError, OverflowError, ZeroDivisionError, FloatingPointError):
            return math.nan
    return g


def central(f, x, h=1e-6):
    """The gradient of the scalar function f at x (an array) by central differences, one coordinate at a time."""
    f = _guarded(f)
    x = np.array(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = h * max(1.0, abs(x[i]))
        e = np.zeros_like(x)
        e[i] = step
        g[i] = (f(x + e) - f(x - e)) / (2 * step)
    return g


def _ridders(f1, x0, h, con=1.4, ntab=12):
    """Ridders' method for df1/dx at x0 from the initial step h: (estimate, its error bound)."""
    a = np.zeros((ntab, ntab))
    a[0, 0] = (f1(x0 + h) - f1(x0 - h)) / (2 * h)
    best, err = a[0, 0], math.inf
    for i in range(1, ntab):
        h /= con
        a[0, i] = (f1(x0 + h) - f1(x0 - h)) / (2 * h)
        fac = con * con
        for j in range(1, i + 1):
            a[j, i] = (a[j - 1, i] * fac - a[j - 1, i - 1]) / (fac - 1)
            fac *= con * con
            errt = max(abs(a[j, i] - a[j - 1, i]), abs(a[j, i] - a[j - 1, i - 1]))
            if errt <= err:
                best, err = a[j, i], errt
        if abs(a[i, i] - a[i - 1, i - 1]) >= 2 * err:
            break
    return best, err


def richardson(f, x):
    """The gradient of the scalar function f at x (an array) by Richardson extrapolation (Ridders), from initial
    steps 0.1 max(1, |x_i|), 0.1 |x_i|, 0.1, 1 and 1e-3, keeping the estimate with the smallest error bound."""
    f = _guarded(f)
    x = np.array(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        def f1(t, i=i):
            y = x.copy()
            y[i] = t
            return f(y)
        best = (math.nan, math.inf)
        for h in {0.1 * max(1.0, abs(x[i])), 0.1 * abs(x[i]) or 0.1, 0.1, 1.0, 1e-3}:
            with np.errstate(all="ignore"):
                estimate, err = _ridders(f1, x[i], h)
            if math.isfinite(estimate) and err < best[1]:
                best = (estimate, err)
        g[i] = best[0]
    return g


DIFFERENCES = {"central": central, "richardson": richardson}


def derivative(method, f, x0):
    """df/dx at the float x0 by `method` ("central" or "richardson")."""
    return float(DIFFERENCES[method](lambda v: f(v[0]), [x0])[0])


def vjp(method, forward, dy, x):
    """dx = d(dy . forward(x))/dx by `method`: what a backward function computes, from the forward pass alone."""
    return DIFFERENCES[method](lambda v: float(np.sum(dy * forward(v))), x)


# ---------------------------------------------------------------- copies of a refused function

def copies(function):
    """Two copies of `function` that keep working when the function object is refused: a new function object on
    its code (taken now, before the check swaps the code), and its source executed again."""
    function = getattr(function, "__wrapped__", function)  # (under functools.cache: the function)
    code_copy = types.FunctionType(function.__code__, function.__globals__, function.__name__,
                                   function.__defaults__, function.__closure__)
    namespace = dict(function.__globals__)
    exec(textwrap.dedent(inspect.getsource(function)), namespace)
    return code_copy, namespace[function.__name__]


# ---------------------------------------------------------------- reading the judge's frame

SUSPECT_NAMES = ("want", "expected", "reference", "ref", "numeric", "y_want", "dx_ref", "dK_ref", "dV_ref",
                 "want_c", "want_m", "answer", "target_value")


def find_in_callers():
    """The first local variable of a calling frame (outermost last) whose name suggests the expected answer;
    LookupError if there is none. Uses inspect.stack(), and so sees what sys._getframe(n).f_locals sees."""
    for info in inspect.stack()[2:]:
        for name in SUSPECT_NAMES:
            if name in info.frame.f_locals:
                return info.frame.f_locals[name]
    raise LookupError("nothing that looks like the expected answer in the judge's frames")


def read_the_judges_frame(*args, **kwargs):
    """An answer to any exercise: whatever the judge has already computed and left in its frame."""
    return find_in_callers()
