"""exercises.py -- the check cells of the notebooks' 練習問題 (exercises), in one place.

Each notebook ends with exercises the learner solves in code. A check cell calls one of the
`check_*` functions below with the learner's answer; it prints 正解 (correct), 不正解 (wrong, with
the reason) or 未回答 (not answered yet) and returns True, False or None. An unanswered exercise is
a function that still raises NotImplementedError (or an answer that is still None): the notebooks
are executed unsolved, so every check must run clean then. After 正解, a worked solution is shown
in a collapsed block (in Jupyter; a plain Python session only gets the verdict).

How a check judges, and what it guards against:

- It calls the learner's function first, on inputs that hold nothing of the answer, and computes
  what it expects only after that function has returned (from the project's own functions, or the
  scalar engine's backward()). So there is nothing to read from the judge's frame
  (sys._getframe(1).f_locals, inspect.stack()) while the learner's code runs.
- Where calling one of the project's functions would be the answer copied (Value.backward for "write
  backward()", init_params for "count the parameters", l2_normalize_np_backward for "derive the
  normalization's gradient"), that function is refused while the learner's code runs (`refusing`):
  the function object's code is swapped for one that raises, and a profile hook notices any frame
  that runs the function's original code, so a copy made beforehand (types.FunctionType(f.__code__,
  f.__globals__)) or its source executed again (exec(inspect.getsource(f))) is refused too. A
  refused call makes the answer 不正解.
- Every exercise that asks for a derivative is also judged at a point where finite differences fail:
  next to a kink (a ReLU, the clamp of max(||x||, eps)), where the function's value dwarfs its
  change (logits of +-5000, the constant -log 4 pi beside a change of 1e-13), or across entries of
  very different sizes; and to a relative tolerance of about 1e-12. Central differences and
  Richardson extrapolation both miss there (tests/test_exercises_*.py shows it), while the derived
  formula does not.

None of this makes cheating impossible: a learner can switch the profile hook off, or read this
file. The checks deter rather than prevent, and the notebooks say so. Reference solutions live in
tests/test_exercises_NN.py (one file per notebook), which prove every check can say 正解, and that a
wrong, copied, numerical or frame-reading answer gets 不正解.
"""
import math
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # value.py, utils.py, ... live at the repo root


# ==================================================================== verdicts, refusals, solutions


def verdict(name, judge, solution=None):
    """Run judge() (True = correct) and print one line: 正解, 不正解 (and why) or 未回答.

    judge may raise NotImplementedError (the solution cell is not filled in yet): 未回答, returns
    None. Any other exception in the learner's code is 不正解 with the error, never a crash of the
    notebook.
    On 正解, the worked solution (Markdown) is shown folded, where a notebook can show it.
    """
    try:
        ok = judge()
    except NotImplementedError:
        print(f"{name}: 未回答（解答セルを埋めてから、このセルをもう一度実行してください）")
        return None
    except Exception as e:  # the learner's code failed: say how, keep the notebook running
        print(f"{name}: 不正解（{type(e).__name__}: {e}）")
        return False
    print(f"{name}: {'正解' if ok else '不正解'}")
    if ok and solution:
        show_solution(solution)
    return bool(ok)


def show_solution(markdown):
    """Display a worked solution as a folded <details> block in a notebook; nothing outside IPython.
    """
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:
        return
    if get_ipython() is None:
        return
    display(Markdown("<details><summary>解答例（開くと表示）</summary>\n\n" + markdown.strip()
                     + "\n\n</details>"))


SOLUTIONS_FILE = Path(__file__).resolve().parent / "worked_solutions.md"


def solution(key):
    """The worked solution of exercise `key` ("01-1", ...) from worked_solutions.md (its "## key"
    section)."""
    text = SOLUTIONS_FILE.read_text(encoding="utf-8")
    start = text.index(f"\n## {key}\n") + len(key) + 5
    end = text.find("\n## ", start)
    return text[start:end if end >= 0 else len(text)].strip()


def compare(name, learner, reference, points, solution=None, rtol=1e-9, atol=1e-12):
    """Compare the learner's function with the reference at each point and print a table, in the
    manner of Karpathy's cmp(): exact (bit for bit), close (within atol + rtol |want|), and the
    largest difference. points: a list of (label, args) where args is a tuple of arguments.

    Returns True when every point is exact or close, False when one is not, and None while the
    learner's function still raises NotImplementedError (the notebooks are executed unsolved).
    Another exception is shown as the learner's answer at that point, never a crash. On True the
    worked solution (Markdown) is shown folded, where a notebook can show it.
    """
    import numpy as np

    rows, ok = [], True
    for label, args in points:
        want = np.asarray(reference(*args), dtype=float)
        try:
            got = np.asarray(learner(*args), dtype=float)
        except NotImplementedError:
            print(f"{name}: 未回答（解答セルを埋めてから、このセルをもう一度実行してください）")
            return None
        except Exception as e:  # the learner's code failed: say how, keep the notebook running
            rows.append((label, "-", "-", f"{type(e).__name__}: {e}"))
            ok = False
            continue
        if got.shape != want.shape:
            rows.append((label, "-", "-", f"形が違う {got.shape}（正しくは {want.shape}）"))
            ok = False
            continue
        exact = bool(np.array_equal(got, want))
        with np.errstate(invalid="ignore"):
            close = bool(np.all(np.abs(got - want) <= atol + rtol * np.abs(want)))
            diff = float(np.max(np.abs(got - want))) if got.size else 0.0
        rows.append((label, "はい" if exact else "いいえ", "はい" if close else "いいえ",
                     f"{diff:.2e}"))
        ok = ok and close
    width = max(_columns(label) for label, *_ in rows + [("点",)])
    print(f"{name}")
    print(f"  {_pad('点', width)}  完全一致  近い    最大の差")
    for label, exact, close, diff in rows:
        print(f"  {_pad(label, width)}  {_pad(exact, 8)}  {_pad(close, 6)}  {diff}")
    print(f"  → {'すべての点で一致しました' if ok else '一致しない点があります'}")
    if ok and solution:
        show_solution(solution)
    return ok


def _columns(text):
    """How many terminal columns text takes: a full-width character (kana, kanji) takes two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text, width):
    """text padded with spaces to `width` columns, counting full-width characters as two."""
    return text + " " * max(0, width - _columns(text))


def _fingerprint(code):
    """What identifies a function's code across copies: its argument counts, the names, local
    variable names and constants it uses (nested code objects fingerprinted in turn). Not the
    bytecode itself, which a recompiled copy may spell differently (LOAD_ATTR for LOAD_METHOD), nor
    its name, file or line numbers."""
    consts = tuple(_fingerprint(c) if isinstance(c, types.CodeType)
                   # (a dedented copy re-indents its docstring)
                   else " ".join(c.split()) if isinstance(c, str)
                   else (type(c).__name__, repr(c)) for c in code.co_consts)
    return (code.co_argcount, code.co_kwonlyargcount, code.co_names, code.co_varnames, consts)


class refusing:
    """While the block runs, the project's functions in `functions` are refused: calling one raises
    RuntimeError(why), and leaving the block raises RuntimeError(why) if any of them ran.

    Two layers. The function object's __code__ is swapped for one that raises (a learner who
    imported the function by name, `from value import topological_order`, reaches the same object).
    And a profile hook (sys.setprofile) records every frame whose code has the fingerprint of a
    refused function, so a copy taken before the check (types.FunctionType(f.__code__,
    f.__globals__)) or its source executed again (exec(inspect.getsource(f))) is caught as well. An
    lru_cache'd function is refused through its __wrapped__ code, with its cache cleared so that a
    call cannot be answered from the cache without running that code. Everything is restored on
    exit.

    This deters; it does not prevent: the learner's code can call sys.setprofile(None), edit the
    source, or run the copy in another thread.
    """

    def __init__(self, *functions, why):
        self.functions = [f for f in functions if f is not None]
        self.why = why

    def __enter__(self):
        namespace = {}
        exec(f"def refused(*args, **kwargs):\n    raise RuntimeError({self.why!r})", namespace)
        stub = namespace["refused"].__code__
        self.fingerprints = {_fingerprint(stub)}
        self.saved, self.calls, self.seen = [], [], {}
        for f in self.functions:
            if hasattr(f, "cache_clear"):
                f.cache_clear()
            f = getattr(f, "__wrapped__", f)
            self.fingerprints.add(_fingerprint(f.__code__))
            # (a closure's code cannot be swapped; the profile hook still sees it)
            if not f.__code__.co_freevars:
                self.saved.append((f, f.__code__))
                f.__code__ = stub
        self.previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def _profile(self, frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        seen = self.seen.get(id(code))
        if seen is None:  # (the code object is kept, so its id is not reused while the block runs)
            seen = self.seen[id(code)] = (code, _fingerprint(code) in self.fingerprints)
        if seen[1]:
            self.calls.append(code.co_name)

    def __exit__(self, exc_type, exc, tb):
        sys.setprofile(self.previous)
        for f, code in self.saved:
            f.__code__ = code
        self.seen = {}
        if self.calls and exc_type is None:  # the learner's code caught the refusal, or ran a copy
            raise RuntimeError(self.why)
        return False


def answered(answer):
    """Raise NotImplementedError for an answer that is still the placeholder None."""
    if answer is None:
        raise NotImplementedError
    return answer


def _close(got, want, rtol, atol, what):
    """True if got (array-like) has want's shape and |got - want| <= atol + rtol |want| everywhere;
    else print where it differs and return False."""
    import numpy as np

    want = np.asarray(want, dtype=float)
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        print(f"  {what}: the answer is not an array of numbers ({type(got).__name__})")
        return False
    if got.shape != want.shape:
        print(f"  {what}: shape {got.shape}, expected {want.shape}")
        return False
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(got - want) <= atol + rtol * np.abs(want))
    if bad.any():
        k = tuple(int(i) for i in np.argwhere(bad)[0]) if want.ndim else ()
        print(f"  {what}: at index {k} your answer is {got[k]:.15g}, expected {want[k]:.15g}")
        return False
    return True


def _project(module, *names):
    """The named functions of one of the project's modules (those that exist), for a refusal list.
    """
    import importlib

    mod = importlib.import_module(module)
    return [getattr(mod, name) for name in names if hasattr(mod, name)]


# =============================================================================== 01 autograd traced


def _graph_01(seed, n_leaves=4, n_ops=14):
    """A random Value graph that reuses nodes (a*a, diamonds): (nodes in creation order, root).

    Built from a seeded random.Random, so the same seed builds the same graph again (fresh Values).
    """
    import random

    from value import Value

    rng = random.Random(seed)
    nodes = [Value(rng.uniform(-1.5, 1.5)) for _ in range(n_leaves)]
    for _ in range(n_ops):
        a, b = rng.choice(nodes), rng.choice(nodes[-4:])  # recent nodes are used again and again
        op = rng.choice("+*-t")
        nodes.append(a + b if op == "+" else a * b if op == "*" else a - b if op == "-"
                     else (a * b).tanh())
    root = sum(nodes[n_leaves:])  # every op node reaches the root
    return nodes, root


def _uses_twice_01():
    """Section 5's y = a*a + 2*a (a = 3): three edges leave a."""
    from value import Value

    a = Value(3.0)
    return [a], a * a + 2 * a


def _near_a_kink_01(side):
    """A graph with a ReLU whose input is 1e-13 from its kink (side = +1 above it, -1 below): root =
    relu(a*b - c) * a + tanh(b * c). Any difference quotient with a step above 1e-13 in a, b or c
    crosses the kink."""
    from value import Value

    a, b = Value(0.75), Value(-1.25)
    # a*b - c is then +-1e-13 (up to rounding, far below 1e-13)
    c = Value(a.data * b.data - side * 1e-13)
    return [a, b, c], (a * b - c).relu() * a + (b * c).tanh()


def _loss_01(a, b):
    """練習問題 1's L = relu(tanh(a b) a - 1/2), built from Values."""
    return ((a * b).tanh() * a - 0.5).relu()


def _kink_points_01():
    """Points (a, b) where a is 1e-11 (relatively) above or below the a at which tanh(a b) a = 1/2:
    the ReLU in L switches there."""
    points = []
    for b in (1.3, 0.7, 2.0):  # (tanh(a b) a has the sign of b, and grows with a > 0)
        lo, hi = 0.0, 8.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.tanh(mid * b) * mid < 0.5 else (lo, mid)
        points += [(hi * (1 + 1e-11), b), (hi * (1 - 1e-11), b)]
    return points


def check_01_grad_a(grad_a):
    """練習問題 1: grad_a(a, b) (floats) must be dL/da of L = relu(tanh(a b) a - 1/2), as backward()
    gives it.

    At random points, and next to the kink of the ReLU (tanh(ab) a = 1/2 up to a relative 1e-11),
    where a central difference or Richardson extrapolation averages the two sides. Relative
    tolerance 1e-12. Value.backward and tracing.trace_backward are refused while grad_a runs.
    """
    import random

    from tracing import trace_backward
    from value import Value

    def judge():
        rng = random.Random(101)
        points = [(rng.uniform(-2, 2), rng.uniform(-2, 2)) for _ in range(8)] + _kink_points_01()
        for a0, b0 in points:
            with refusing(Value.backward, trace_backward,
                          why="backward() も trace_backward も使わずに、"
                              "手で導いた式で書いてください"):
                got = float(grad_a(a0, b0))
            a, b = Value(a0), Value(b0)
            _loss_01(a, b).backward()
            if not abs(got - a.grad) <= 1e-12 * max(1.0, abs(a.grad)):
                print(f"  a = {a0!r}, b = {b0!r}: your dL/da = {got:.15g}, backward() gives "
                      f"{a.grad:.15g}")
                return False
        return True

    return verdict("練習問題 1（grad_a）", judge, solution("01-1"))


def check_01_sigmoid(sigmoid):
    """練習問題 2: sigmoid(v) must be one node (child v) with data 1/(1+e^-x) and a local gradient
    computed from the node's own value s (as tanh's 1 - t^2 is from t), to a relative 1e-12, at x
    from -3 to 30. At x = 30, s is 1 - 9.4e-14 and difference quotients of s lose almost all their
    digits. Value.backward is refused while sigmoid runs (a local gradient taken from the engine's
    backward of a composed sigmoid is not derived)."""
    from value import Value

    def judge():
        for x in (-3.0, -0.7, 0.0, 0.4, 2.5, 9.0, 30.0):
            v = Value(x)
            with refusing(Value.backward,
                          why="backward() を使わずに、局所勾配を式で書いてください"):
                out = sigmoid(v)
            if not isinstance(out, Value):
                print(f"  sigmoid(Value({x})) returned {out!r}, not a Value")
                return False
            if len(out._children) != 1 or out._children[0] is not v:
                print(f"  sigmoid(v) must be one node whose only child is v (its children: "
                      f"{out._children!r})")
                return False
            s = 1 / (1 + math.exp(-x))
            if not abs(out.data - s) <= 1e-15 * s:
                print(f"  sigmoid(Value({x})).data = {out.data!r}, but 1/(1+e^-x) = {s!r}")
                return False
            want = out.data * (1 - out.data)
            got = float(out._local_grads[0])
            if not abs(got - want) <= 1e-12 * want:
                print(f"  x = {x}: your local gradient is {got!r}; computed from the node's value "
                      f"s = {out.data!r} it is {want!r}")
                return False
        return True

    return verdict("練習問題 2（sigmoid）", judge, solution("01-2"))


def check_01_backward(my_backward):
    """練習問題 3: my_backward(root) on a fresh graph must give every node the grad that
    Value.backward gives, to a relative 1e-12: on random graphs that reuse nodes, and on two graphs
    with a ReLU 1e-13 from its kink.

    The reference graph is built and backpropagated after my_backward returns. Value.backward and
    tracing.trace_backward (which runs the same loop) are refused while my_backward runs.
    """
    from tracing import trace_backward
    from value import Value, topological_order

    def judge():
        cases = [_uses_twice_01, lambda: _near_a_kink_01(+1), lambda: _near_a_kink_01(-1)]
        cases += [lambda s=s: _graph_01(s) for s in range(103, 109)]
        for build in cases:
            _, root = build()
            with refusing(Value.backward, trace_backward,
                          why="root.backward() も trace_backward も使わずに、"
                              "ループを自分で書いてください"):
                my_backward(root)
            _, ref_root = build()  # the same graph again, for the reference
            ref_root.backward()
            mine, ref = topological_order(root), topological_order(ref_root)
            for i, (u, w) in enumerate(zip(mine, ref)):
                if not abs(u.grad - w.grad) <= 1e-12 * max(1.0, abs(w.grad)):
                    kind = "leaf" if not w._children else f"'{w._op}' node"
                    print(f"  a graph of {len(ref)} nodes: {kind} number {i} (topological order) "
                          f"has grad {u.grad:.15g}, backward() gives {w.grad:.15g}")
                    return False
        return True

    return verdict("練習問題 3（my_backward）", judge, solution("01-3"))


def check_01_topological_order(my_topological_order):
    """練習問題 4: my_topological_order(root) must list every reachable node once, children before
    parents, on random graphs and on a chain three times as long as the recursion limit.
    value.topological_order (and Value.backward, which calls it) is refused while the learner's
    function runs."""
    from value import Value, topological_order

    def valid(order, root):
        want = topological_order(root)
        if len(order) != len({id(v) for v in order}):
            print("  a node appears more than once")
            return False
        if {id(v) for v in order} != {id(v) for v in want}:
            print(f"  the list has {len(order)} nodes; the graph has {len(want)} (reachable from "
                  "root)")
            return False
        pos = {id(v): i for i, v in enumerate(order)}
        for v in order:
            if any(pos[id(c)] > pos[id(v)] for c in v._children):
                print("  a node comes before one of its children")
                return False
        return True

    def answer(root):
        with refusing(topological_order, Value.backward,
                      why="この問題では value.topological_order を使わずに書いてください"):
            return list(my_topological_order(root))

    def judge():
        for root in [_uses_twice_01()[1]] + [_graph_01(s)[1] for s in range(110, 116)]:
            if not valid(answer(root), root):
                return False
        n = 3 * sys.getrecursionlimit()
        y = Value(1.0)
        for _ in range(n):
            y = y * 0.999
        if not valid(answer(y), y):
            print(f"  (on a chain of {n} multiplications)")
            return False
        return True

    return verdict("練習問題 4（my_topological_order）", judge, solution("01-4"))


# ==================================================================================== 02 chapter 21
# Exercises of notebook 02: the Jacobian of log-softmax as a matrix, rmsnorm's backward, layernorm's
# backward. All three ask for a derivative by hand, so while the learner's function runs, the
# engine's backward() and the project's backward functions that would hand over the answer are
# refused (_02_REFUSED_WHY).

_02_REFUSED_WHY = ("プロジェクトの逆伝播（backward() や *_backward）を使わずに、"
                   "手で導いた式で書いてください")


def _02_answer_array(fn, *args, shape, refused=()):
    """Call the learner's fn on copies of args (so it cannot edit the judge's arrays); the answer as
    a float array.

    The functions in `refused` are refused while fn runs. Prints why and returns None when the
    answer does not have the expected shape.
    """
    import numpy as np

    with refusing(*refused, why=_02_REFUSED_WHY):
        out = np.asarray(fn(*(np.array(a, copy=True) for a in args)), dtype=float)
    if out.shape != shape:
        print(f"  the answer has shape {out.shape}, expected {shape}")
        return None
    return out


def _02_mixed_rows():
    """Rows whose entries span 16 orders of magnitude: the function's value hardly changes with the
    small entries, so a difference quotient in them is mostly rounding, while the derived formula
    stays exact."""
    import numpy as np

    return np.array([[1e8, -3e-8, 2.0, 5e-9, -7e7], [-4e-9, 6e7, 1e-8, -2.5e8, 3.0]])


def _02_row_reference(x, dy, build):
    """dx of sum_i dy_i y_i, y = build(list of Values), by the scalar engine, one row of x at a
    time."""
    import numpy as np

    from value import Value

    dx = np.zeros(x.shape)
    for i in np.ndindex(*x.shape[:-1]):
        xs = [Value(float(v)) for v in x[i]]
        sum(float(g) * yj for g, yj in zip(dy[i], build(xs))).backward()
        dx[i] = [v.grad for v in xs]
    return dx


def _02_compare_rows(dx, reference, what):
    """Row by row: |dx - reference| <= 1e-12 |reference| + 1e-14 max|reference of that row|."""
    import numpy as np

    scale = np.abs(reference).max(axis=-1, keepdims=True)
    bad = ~(np.abs(dx - reference) <= 1e-12 * np.abs(reference) + 1e-14 * scale)
    if bad.any():
        k = tuple(int(i) for i in np.argwhere(bad)[0])
        print(f"  {what}: at index {k} your dx is {dx[k]:.15g}, backward() gives "
              f"{reference[k]:.15g}")
        return False
    return True


def check_02_log_softmax_jacobian(log_softmax_jacobian):
    """Exercise 02-1: log_softmax_jacobian(z) -> the (n, n) matrix J[i, j] = d log p_i / d z_j for p
    = softmax(z). The notebook shows the Jacobian of softmax itself, not of its log.

    Judged against the project's cross-entropy backward (-log p_i is the loss for the target i;
    computed after the learner's function returns), to 1e-12 relative and 1e-13 absolute, including
    logits of +-1000 and +-5000: there log p_i is about -2000 or -10000, and a difference quotient
    of it keeps too few digits. While the learner's function runs, the backward functions that would
    give the rows directly (utils.softmax_np_backward, utils.cross_entropy_np_backward) and
    Value.backward are refused.
    """
    import numpy as np

    import utils
    from value import Value

    refused = (utils.softmax_np_backward, utils.cross_entropy_np_backward,
               Value.backward)

    def judge():
        rng = np.random.default_rng(2102)
        cases = [rng.normal(scale=2.0, size=n) for n in (2, 3, 6)]
        cases += [np.array([1000.0, 999.0, 990.0, -1000.0]), np.array([5000.0, 4999.0, -5000.0])]
        for z in cases:
            n = z.size
            J = _02_answer_array(log_softmax_jacobian, z, shape=(n, n), refused=refused)
            if J is None:
                return False
            reference = -np.stack([utils.cross_entropy_np_backward(z[None, :], np.array([i]))[0]
                                   for i in range(n)])
            where = f"logits up to +-{np.abs(z).max():.0f}" if np.abs(z).max() > 100 else f"n = {n}"
            if not _close(J, reference, 1e-12, 1e-13, where):
                return False
        return True

    return verdict("練習問題 1（log-softmax のヤコビアン）", judge, solution("02-1"))


def check_02_rmsnorm_backward(rmsnorm_backward):
    """Exercise 02-2: rmsnorm_backward(dy, x) -> dx for y = rmsnorm(x) over the last axis (eps =
    1e-5).

    Judged against the chapter's scalar rmsnorm: backward() of sum_i dy_i y_i, row by row, computed
    after the learner's function returns; to 1e-12 relative (plus 1e-14 of the row's largest entry),
    on random rows and on rows whose entries span 16 orders of magnitude. While the learner's
    function runs, utils.rmsnorm_np_backward and Value.backward are refused.
    """
    import numpy as np

    import utils
    from utils import rmsnorm
    from value import Value

    refused = (utils.rmsnorm_np_backward, Value.backward)

    def judge():
        rng = np.random.default_rng(2103)
        for x in (rng.normal(size=4), rng.normal(size=(3, 5)), _02_mixed_rows()):
            dy = rng.normal(size=x.shape)
            dx = _02_answer_array(rmsnorm_backward, dy, x, shape=x.shape, refused=refused)
            if dx is None:
                return False
            if not _02_compare_rows(dx, _02_row_reference(x, dy, rmsnorm), f"x.shape {x.shape}"):
                return False
        return True

    return verdict("練習問題 2（RMSNorm の逆伝播）", judge, solution("02-2"))


def _02_layernorm_values(xs, eps=1e-5):
    """Notebook 02's LayerNorm (no gain, no bias) on a list of Values: (x - mean) / sqrt(var + eps).
    """
    n = len(xs)
    mu = sum(xs) / n
    centered = [v - mu for v in xs]
    inv = (sum(c * c for c in centered) / n + eps) ** -0.5
    return [c * inv for c in centered]


def check_02_layernorm_backward(layernorm_backward):
    """Exercise 02-3: layernorm_backward(dy, x) -> dx for y = (x - mean) / sqrt(var + 1e-5) over the
    last axis.

    Judged against the scalar engine: LayerNorm written with Values, backward() of sum_i dy_i y_i,
    row by row, computed after the learner's function returns; to 1e-12 relative (plus 1e-14 of the
    row's largest entry), on random rows, on rows whose entries span 16 orders of magnitude and on
    nearly constant rows (variance far below eps). Value.backward is refused while the learner's
    function runs.
    """
    import numpy as np

    from value import Value

    def judge():
        rng = np.random.default_rng(2104)
        nearly_constant = 3.0 + 1e-4 * rng.normal(size=(2, 5))
        for x in (rng.normal(scale=2.0, size=(3, 5)), _02_mixed_rows(), nearly_constant):
            dy = rng.normal(size=x.shape)
            dx = _02_answer_array(layernorm_backward, dy, x, shape=x.shape,
                                  refused=(Value.backward,))
            if dx is None:
                return False
            reference = _02_row_reference(x, dy, _02_layernorm_values)
            if not _02_compare_rows(dx, reference, f"x.shape {x.shape}"):
                return False
        return True

    return verdict("練習問題 3（LayerNorm の逆伝播）", judge, solution("02-3"))


# =============================================================== 40-42 chapter 22 (gpt, training)

def _flat(f):
    """f's answer (a tuple of arrays or numbers) as one flat array: one row of compare's table."""
    import numpy as np

    return lambda *args: np.concatenate([np.ravel(np.asarray(a, dtype=float)) for a in f(*args)])


def _40_heads(q, k, v, n_head):
    """numpy_engine.attention_forward on (T, C) arrays: the heads' outputs side by side, (T, C)."""
    from numpy_engine import attention_forward

    T, C = q.shape
    split = [a.reshape(1, T, n_head, C // n_head).transpose(0, 2, 1, 3) for a in (q, k, v)]
    return attention_forward(*split, (C // n_head) ** -0.5)[0].transpose(0, 2, 1, 3).reshape(T, C)


def check_40_causal_attention(causal_attention):
    import numpy as np

    r = np.random.default_rng(2203)
    points = [(f"T={T} C={C} ヘッド {h}", tuple(r.normal(0, 2, (T, C)) for _ in "qkv") + (h,))
              for T, C, h in [(1, 8, 2), (4, 8, 2), (6, 16, 4), (7, 8, 1)]]
    return compare("練習問題 1（causal_attention）", lambda q, k, v, h: causal_attention(
        q.copy(), k.copy(), v.copy(), h), _40_heads, points, solution("40-1"))


def _40_size(cfg, norm=None):
    """The number of parameters of cfg (with norm, if given), from microgpt.init_params."""
    import dataclasses

    import microgpt

    cfg = dataclasses.replace(cfg, norm=norm or cfg.norm)
    return sum(a.size for a in microgpt.init_params(cfg).values())


def _40_configs(norm):
    from microgpt import GPTConfig

    return [(f"V={V} C={C} 層 {L} 文脈 {T}", (GPTConfig(V, C, H, L, T, norm),))
            for V, C, H, L, T in [(27, 16, 4, 1, 16), (50, 32, 4, 2, 8), (5, 12, 3, 4, 5)]]


def check_40_count_params(count_params):
    return compare("練習問題 2（count_params）", count_params, _40_size, _40_configs("rmsnorm"),
                   solution("40-2"))


def adam_update_41(p, g, m, v, t, lr, beta1=0.85, beta2=0.99, eps=1e-8):
    """One Adam step at step t = 1, 2, ... (m and v updated in place); returns the new p."""
    m[:] = beta1 * m + (1 - beta1) * g
    v[:] = beta2 * v + (1 - beta2) * g ** 2
    return p - lr * (m / (1 - beta1 ** t)) / ((v / (1 - beta2 ** t)) ** 0.5 + eps)


def check_41_adam(adam_update):
    """41's build against microgpt.adam_step (lr not decayed): p, m and v after n steps."""
    import numpy as np

    from microgpt import adam_step

    def run(update, g, n):
        p, m, v = np.linspace(-1, 1, g.size), np.zeros(g.size), np.zeros(g.size)
        for t in range(1, n + 1):
            p = update(p.copy(), g * (-1) ** t, m, v, t, 0.01)
        return p, m, v

    def microgpt_update(p, g, m, v, t, lr):
        adam_step(p, g, m, v, t - 1, np.inf, lr)   # num_steps inf: lr is not decayed
        return p

    g, name = np.array([1e-3, -2.0, 0.0, 5000.0, 1e-12]), "組み立て：Adam（p, m, v を並べたもの）"
    return compare(name, _flat(lambda g, n: run(adam_update, g, n)), _flat(
        lambda g, n: run(microgpt_update, g, n)), [(f"{n} ステップ", (g, n)) for n in (1, 2, 1000)],
        solution("41-3"))


def check_41_bigram_loss(bigram_loss):
    import numpy as np

    from microgpt import GPTConfig, baselines

    r, points = np.random.default_rng(2207), []
    for n in (3, 6):
        docs = [[[n] + r.integers(0, n, r.integers(1, 9)).tolist() + [n] for _ in range(k)]
                for k in (40, 15)]
        points.append((f"語彙 {n + 1}", (*docs, n + 1)))
    return compare("練習問題 1（bigram_loss）", bigram_loss, lambda tr, va, V: baselines(
        tr, va, GPTConfig(V))["bigram"], points, solution("41-1"))


def check_41_first_step(adam_first_step):
    import numpy as np

    g, z = np.array([3.0, -1e-3, 1e-7, -1e-9, 0.0, 5000.0]), np.zeros(6)
    return compare("練習問題 2（Adam の最初の一歩）", adam_first_step,
                   lambda g, lr: adam_update_41(z, g, z.copy(), z.copy(), 1, lr),
                   [("lr = 0.01", (g, 0.01)), ("lr = 0.5", (g, 0.5))], solution("41-2"))


def check_42_sphere_extra(sphere_extra):
    return compare("練習問題 1（球面モードで増えるパラメータ）", sphere_extra,
                   lambda cfg: _40_size(cfg) - _40_size(cfg, "rmsnorm"), _40_configs("sphere"),
                   solution("42-1"))


def check_42_temperature_probs(temperature_probs):
    import numpy as np

    from utils import softmax_np

    r = np.random.default_rng(2205)
    points = [(f"T = {T}", (r.normal(0, 2, 27), T)) for T in (0.25, 1.0, 2.0)]
    points += [("ロジット 1000、T = 0.1", (np.array([1000.0, 999.0, 990.0, -1000.0]), 0.1)),
               ("同じロジット", (np.array([3.0, 3.0, 3.0]), 0.7))]
    return compare("練習問題 2（temperature_probs）", lambda z, T: temperature_probs(list(z), T),
                   lambda z, T: softmax_np(z / T), points, solution("42-2"), atol=1e-15)


# ================================================================== 04 lecture 3, the code examples


def _04_norm_points(rng, d=5, eps=1e-12):
    """Points x whose norm is 1, 3e-7, just above eps, just below eps (1e-9 relatively) and far
    below eps."""
    import numpy as np

    points = []
    for norm in (1.0, 3e-7, eps * (1 + 1e-9), eps * (1 - 1e-9), 2e-13):
        u = rng.standard_normal(d)
        points.append(norm * u / np.sqrt((u * u).sum()))
    return points


def check_04_safe_normalize(safe_normalize, safe_normalize_backward):
    """練習問題 1: safe_normalize(x, eps) = x / max(||x||, eps) (as sphere.l2_normalize_np) and
    safe_normalize_backward(dy, x, eps) = its dx (as sphere.l2_normalize_np_backward), to 1e-12
    relative, at ||x|| = 1, 3e-7 (where the lecture's added eps is visibly wrong), 1e-9 above and
    below eps (the clamp's kink: no difference quotient with a step above 1e-21 stays on one side of
    it) and far below eps.

    The references are computed after the learner's functions return; while they run, the project's
    normalizations and their backward passes (sphere.l2_normalize_np, l2_normalize_np_backward, the
    scalar l2_normalize, numpy_engine's fused twins) and Value.backward are refused."""
    import numpy as np

    import sphere
    from value import Value

    refused = (sphere.l2_normalize_np, sphere.l2_normalize_np_backward, sphere.l2_normalize,
               Value.backward)
    why = ("sphere の正規化とその逆伝播（l2_normalize_np, l2_normalize_np_backward など）を"
           "使わずに書いてください")

    def judge():
        rng = np.random.default_rng(402)
        eps = 1e-12
        for x in _04_norm_points(rng):
            dy = rng.standard_normal(x.shape)
            at = f"at ||x|| = {np.sqrt((x * x).sum()):.10e}"
            with refusing(*refused, why=why):
                y_got = safe_normalize(x.copy(), eps)
            if not _close(y_got, sphere.l2_normalize_np(x, eps=eps), 1e-12, 0.0, f"y {at}"):
                return False
            with refusing(*refused, why=why):
                got = safe_normalize_backward(dy.copy(), x.copy(), eps)
            want = sphere.l2_normalize_np_backward(dy, x, eps=eps)
            if not _close(got, want, 1e-12, 1e-14 * np.abs(want).max(), f"dx {at}"):
                return False
        return True

    return verdict("練習問題 1（safe_normalize）", judge, solution("04-1"))


_04_KAPPAS = (1e-6, 1e-3, 0.5, 3.0, 40.0, 700.0, 1000.0)


def check_04_vmf_s2(log_c3, mean_cos_s2):
    """練習問題 2: on S^2 (d = 3), log_c3(kappa) = log C_3(kappa), the log of the vMF normalizing
    constant, and mean_cos_s2(kappa) = E[mu . x] under vMF(mu, kappa), both in closed form, for
    kappa from 1e-6 to 1000.

    Judged against sphere.vmf_log_normalizer(3, kappa) (absolute 1e-12 for |log C| <= 1, else
    relative) and sphere.vmf_mean_resultant_length(3, kappa) (relative 1e-12), computed after the
    learner's functions return. At kappa = 1e-6, E[mu . x] = 3.3e-7 is a difference of two numbers
    near 1e6 in the obvious formula, and a difference quotient of log C_3 (about -2.53, changing by
    3e-13 over the step) keeps no digit; at kappa = 1000, sinh overflows beyond 710. sphere's vMF
    functions and log_bessel_iv are refused while the learner's code runs.
    """

    import sphere

    refused = (sphere.vmf_log_normalizer, sphere.vmf_mean_resultant_length, sphere.log_bessel_iv,
               sphere.vmf_log_density, sphere.vmf_estimate_kappa, sphere.vmf_sample)
    why = ("sphere の vMF の関数（vmf_log_normalizer, vmf_mean_resultant_length など）を使わずに、"
           "閉じた式で書いてください")

    def judge():
        for kappa in _04_KAPPAS:
            with refusing(*refused, why=why):
                got_c = float(log_c3(kappa))
                got_m = float(mean_cos_s2(kappa))
            want_c = float(sphere.vmf_log_normalizer(3, kappa))
            want_m = float(sphere.vmf_mean_resultant_length(3, kappa))
            if not abs(got_c - want_c) <= 1e-12 * max(1.0, abs(want_c)):
                print(f"  kappa = {kappa}: your log C_3 = {got_c!r}, expected {want_c!r}")
                return False
            if not abs(got_m - want_m) <= 1e-12 * want_m:
                print(f"  kappa = {kappa}: your E[mu . x] = {got_m!r}, expected {want_m!r}")
                return False
        return True

    return verdict("練習問題 2（S² の vMF：正規化定数と平均コサイン）", judge, solution("04-2"))


# ======================================================================= 06 lecture 3, vMF and nGPT


def _06_raw_norms():
    """The norms of the raw vectors the exercises normalize: 1, 4, 3e-7, 1e-9 above and below eps
    (the clamp's kink: no difference quotient with a step above 1e-21 stays on one side of it)."""
    return (1.0, 4.0, 3e-7, 1e-12 * (1 + 1e-9), 1e-12 * (1 - 1e-9))


def _06_readout_cases():
    """(h, lm_head, s_z, target) cases for 練習問題 1: hidden states of every norm in _06_raw_norms,
    with s_z drawn from 1 to 9 (as microgpt learns them), and twice with s_z = 1000 near an output
    star (logits up to about 1000, beyond exp's range)."""
    import numpy as np

    import sphere

    rng = np.random.default_rng(601)
    cases = []
    for norm, sz in [(n, None) for n in _06_raw_norms()] + [(1.0, 1000.0), (3e-7, 1000.0)]:
        d, V = 16, 27
        lm_head = sphere.l2_normalize_np(rng.standard_normal((V, d)))
        s_z = rng.uniform(1.0, 9.0, V) if sz is None else np.full(V, sz)
        u = rng.standard_normal(d)
        if sz is not None:
            u = lm_head[0] + 0.05 * u
        cases.append((norm * u / np.sqrt((u * u).sum()), lm_head, s_z, int(rng.integers(V))))
    return cases


def _06_readout_reference(h, lm_head, s_z, target, eps=1e-12):
    """(d loss / d h, d loss / d s_z) for loss = -log softmax(s_z * (lm_head @ Norm(h)))[target],
    from the project's NumPy backward functions: the cross-entropy's p - e_target, then s_z, lm_head
    and the normalization."""
    import numpy as np

    import sphere
    import utils

    cos = lm_head @ sphere.l2_normalize_np(h, eps=eps)
    dlogits = utils.cross_entropy_np_backward((s_z * cos)[None, :], np.array([target]))[0]
    return sphere.l2_normalize_np_backward((s_z * dlogits) @ lm_head, h, eps=eps), dlogits * cos


def check_06_readout_grad(readout_grad):
    """練習問題 1: readout_grad(h, lm_head, s_z, target) -> (dh, ds_z), the gradients of the sphere
    mode's read-out loss = -log softmax(s_z * (lm_head @ Norm(h)))[target] (Norm(h) = h / max(||h||,
    1e-12), lm_head's rows unit) with respect to the last hidden state h before its normalization
    and to the concentrations s_z.

    Judged against the project's backward functions (cross_entropy_np_backward, then
    l2_normalize_np_backward), computed after the learner's function returns, to 1e-12 relative
    (plus 1e-14 of the largest entry): at hidden states of norm 1, 4 and 3e-7, 1e-9 above and below
    eps (the clamp's kink), and with s_z = 1000 (logits near 1000). While the learner's function
    runs, those backward functions and Value.backward are refused."""
    import numpy as np

    import sphere
    import utils
    from value import Value

    refused = (utils.cross_entropy_np_backward, utils.softmax_np_backward,
               sphere.l2_normalize_np_backward, sphere.l2_normalize, Value.backward)
    why = ("プロジェクトの逆伝播（cross_entropy_np_backward, l2_normalize_np_backward, "
           "backward()）を使わずに書いてください")

    def judge():
        for h, lm_head, s_z, target in _06_readout_cases():
            with refusing(*refused, why=why):
                got = readout_grad(h.copy(), lm_head.copy(), s_z.copy(), target)
            if not (isinstance(got, tuple) and len(got) == 2):
                print(f"  (dh, ds_z) の2つ組を返してください（返ってきたのは "
                      f"{type(got).__name__}）")
                return False
            what = f"||h|| = {np.sqrt((h * h).sum()):.10e}, s_z up to {s_z.max():.4g}"
            reference = _06_readout_reference(h, lm_head, s_z, target)
            for name, g, want in zip(("dh", "ds_z"), got, reference):
                if not _close(g, want, 1e-12, 1e-14 * np.abs(want).max(), f"{what}: {name}"):
                    return False
        return True

    return verdict("練習問題 1（readout_grad）", judge, solution("06-1"))


def _06_log_posterior_grad(r, mus, kappas, priors, k):
    """The reference of 練習問題 2: d/dr of log p(k | x), x = Norm(r), in the vMF mixture, by the
    scalar engine: log p(k | x) = z_k - logsumexp(z),
    z_j = log pi_j + log C_d(kappa_j) + kappa_j mu_j.x, with x = sphere.l2_normalize(Values of r)
    (the max subtracted as a constant, as the chapter's softmax does), backward()."""
    import numpy as np

    import sphere
    from value import Value

    d = r.shape[0]
    log_const = np.log(priors) + sphere.vmf_log_normalizer(d, kappas)
    rs = [Value(float(v)) for v in r]
    xs = sphere.l2_normalize(rs)
    z = [float(c) + float(kap) * sum(float(m_i) * x_i for m_i, x_i in zip(mu, xs))
         for c, kap, mu in zip(log_const, kappas, mus)]
    top = max(zj.data for zj in z)
    log_p = z[k] - (sum((zj - top).exp() for zj in z).log() + top)
    log_p.backward()
    return np.array([v.grad for v in rs])


def _06_posterior_cases():
    """(mus, kappas, priors, raw vectors) for 練習問題 2: the lecture's setting (one kappa, equal
    priors), one kappa per class, and kappas up to 1000 (exp(kappa) overflows beyond 709), each at
    raw vectors of every norm in _06_raw_norms pointing near the first class's mean."""
    import numpy as np

    import sphere

    rng = np.random.default_rng(404)
    cases = []
    for d, K, kappas, priors, spread in ((3, 4, [5.0] * 4, [0.25] * 4, 0.3),
                                         (3, 4, [1.0, 4.0, 10.0, 30.0], [0.1, 0.2, 0.3, 0.4], 0.3),
                                         (16, 5, [4.0, 5.0, 6.0, 7.0, 8.6], [0.2] * 5, 0.3),
                                         (16, 3, [1000.0, 600.0, 200.0], [0.2, 0.3, 0.5], 0.02)):
        mus = sphere.l2_normalize_np(rng.standard_normal((K, d)))
        points = []
        for norm in _06_raw_norms():
            u = mus[0] + spread * rng.standard_normal(d)
            points.append(norm * u / np.sqrt((u * u).sum()))
        cases.append((mus, np.array(kappas), np.array(priors), points))
    return cases


def check_06_vmf_posterior_grad(vmf_posterior_grad):
    """練習問題 2: vmf_posterior_grad(r, mus, kappas, priors, k) -> d/dr of log p(k | x),
    x = Norm(r): the gradient of the log posterior of class k in a mixture of vMF(mu_k, kappa_k)
    with priors pi_k, with respect to the raw vector r that is normalized onto the sphere (at
    ||r|| = 1 it is the Riemannian gradient).

    Judged against the scalar engine's backward() (_06_log_posterior_grad, computed after the
    learner's function returns) at every class, from one shared kappa to kappas up to 1000
    (exp(kappa) alone overflows: the posterior must be computed in log space), at raw vectors of
    norm 1, 4, 3e-7 and 1e-9 above and below eps (the normalization's kink), to 1e-12 relative plus
    1e-14 kappa_max / ||r|| (the scale of the gradient, whose entries for the dominant class are a
    difference of two terms of that size). Value.backward is refused while the learner's function
    runs."""
    import numpy as np

    from value import Value

    def judge():
        for mus, kappas, priors, points in _06_posterior_cases():
            for r in points:
                for k in range(len(kappas)):
                    with refusing(Value.backward,
                                  why="backward() を使わずに、勾配の式を書いてください"):
                        got = vmf_posterior_grad(r.copy(), mus.copy(), kappas.copy(),
                                                 priors.copy(), k)
                    want = _06_log_posterior_grad(r, mus, kappas, priors, k)
                    norm = np.sqrt((r * r).sum())
                    what = f"d = {len(r)}, kappas = {kappas.tolist()}, ||r|| = {norm:.10e}, k = {k}"
                    # the scale of this gradient is kappa / ||r||: the formula's own rounding is
                    # about 1e-16 of it
                    if not _close(got, want, 1e-12, 1e-14 * kappas.max() / max(norm, 1e-12), what):
                        return False
        return True

    return verdict("練習問題 2（vmf_posterior_grad）", judge, solution("06-2"))


# ======================================================= 30-32 PyTorch concepts, built and measured

def module_setattr_30(self, name, value):
    """Module.__setattr__: a Parameter or a Module set as an attribute is registered as well."""
    for registry, cls in (("_parameters", "Parameter"), ("_modules", "Module")):
        if any(c.__name__ == cls for c in type(value).__mro__):
            getattr(self, registry)[name] = value
    object.__setattr__(self, name, value)


def _30_build(classes, setattr_, depth):
    """A model of `depth` nested modules built with the notebook's (Module, Parameter, Tensor)
    and the given __setattr__: m.w = 2 and a plain tensor; each outer one w = 4, inner, b = 3."""
    Module, Parameter, Tensor = classes
    base = type("Base", (Module,), {"__setattr__": setattr_})
    m = base()
    m.w, m.scale = Parameter(2.0), Tensor(5.0)            # a plain tensor is no parameter
    for _ in range(depth):
        outer = base()
        outer.w, outer.inner, outer.b = Parameter(1.0), m, Parameter(3.0)
        outer.w, m = Parameter(4.0), outer               # set again: still one parameter
    return m


def _30_model(classes, setattr_, depth):
    m = _30_build(classes, setattr_, depth)
    return [p.data for p in m.parameters()] + [m.w.data]  # (a lost attribute raises)


def check_30_setattr(module_setattr, *classes):
    return compare("組み立て 1：Module.__setattr__（parameters() の値と model.w）",
                   lambda d: _30_model(classes, module_setattr, d),
                   lambda d: _30_model(classes, module_setattr_30, d),
                   [("入れ子なし", (0,)), ("入れ子と上書き", (1,)), ("3 段", (2,))],
                   solution("30-3"))


def no_grad_30(Tensor):
    """A no_grad for the notebook's Tensor: off inside, the previous state back after, always."""
    from contextlib import contextmanager

    @contextmanager
    def no_grad():
        before, Tensor.grad_enabled = Tensor.grad_enabled, False
        try:
            yield
        finally:
            Tensor.grad_enabled = before
    return no_grad


def _30_grad_enabled(Tensor, no_grad, nested):
    """Tensor.grad_enabled before, inside (nested: inside an inner one, after it), after; then
    after a no_grad left by an exception."""
    Tensor.grad_enabled, seen = True, [True]
    try:
        with no_grad():
            seen.append(Tensor.grad_enabled)
            for _ in range(nested):
                with no_grad():
                    seen.append(Tensor.grad_enabled)
                seen.append(Tensor.grad_enabled)
        seen.append(Tensor.grad_enabled)
        try:
            with no_grad():
                raise KeyError("例外")
        except KeyError:
            seen.append(Tensor.grad_enabled)
        return seen
    finally:
        Tensor.grad_enabled = True


def check_30_no_grad(no_grad, Tensor):
    return compare("組み立て 2：no_grad（grad_enabled の移り変わり）",
                   lambda n: _30_grad_enabled(Tensor, no_grad, n),
                   lambda n: _30_grad_enabled(Tensor, no_grad_30(Tensor), n),
                   [("1 段", (0,)), ("入れ子", (1,))], solution("30-4"))


def check_30_state_dict(state_dict, *classes):
    def answer(fn, depth):
        d = fn(_30_build(classes, module_setattr_30, depth))
        return [len(d)] + [d[k] for k in ["w", "inner.b", "inner.inner.w"][:depth + 1]]

    def reference(m, prefix=""):
        out = {prefix + k: p.data for k, p in m._parameters.items()}
        for k, child in m._modules.items():
            out.update(reference(child, prefix + k + "."))
        return out

    return compare("練習問題 1（state_dict：個数と各値）", lambda d: answer(state_dict, d),
                   lambda d: answer(reference, d), [("入れ子なし", (0,)), ("3 段", (2,))],
                   solution("30-1"))


def check_30_sgd_step(sgd_step, Parameter):
    def run(step, frozen):
        ps = [Parameter(float(i)) for i in range(4)]
        for i, p in enumerate(ps):
            p.grad, p.requires_grad = (None if i == 3 else 10.0 * (i + 1)), i not in frozen
        step(ps, 0.1)
        return [p.data for p in ps]

    def reference(ps, lr):
        for p in ps:
            if p.requires_grad and p.grad is not None:
                p.data -= lr * p.grad

    return compare("練習問題 2（sgd_step）", lambda f: run(sgd_step, f),
                   lambda f: run(reference, f), [("凍結なし", ((),)), ("1 つ凍結", ((1,),)),
                                                 ("全部凍結", ((0, 1, 2, 3),))], solution("30-2"))


def check_31_linear_relu_backward(linear_relu_np_backward):
    import numpy as np

    from utils import linear_np, linear_np_backward

    def reference(dy, x, w, b):
        dpre = dy * (linear_np(x, w) + b > 0)
        return (*linear_np_backward(dpre, x, w), dpre.reshape(-1, dpre.shape[-1]).sum(axis=0))

    r = np.random.default_rng(6)
    points = [(f"x の形 {s + (4,)}", (r.normal(size=s + (3,)), r.normal(size=s + (4,)),
                                     r.normal(size=(3, 4)), r.normal(size=3)))
              for s in ((5,), (2, 5))]
    x, w = r.normal(size=(6, 4)), r.normal(size=(3, 4))   # pre-activations 1e-12 from the kink:
    b = -np.diag(linear_np(x, w)[:3]) + np.array([1e-12, -1e-12, 1e-12])
    points.append(("ReLU の折れ目のそば", (r.normal(size=(6, 3)), x, w, b)))
    return compare("練習問題 1（dx, dw, db を並べたもの）", _flat(linear_relu_np_backward),
                   _flat(reference), points, solution("31-1"))


def check_31_dropout_backward(dropout_backward):
    import numpy as np

    r = np.random.default_rng(31)
    points = [(f"p = {p}", (r.normal(size=(4, 5)), r.random((4, 5)) >= p, p)) for p in (0.1, 0.5)]
    return compare("練習問題 2（dropout_backward）", dropout_backward,
                   lambda dy, keep, p: dy * keep / (1 - p), points, solution("31-2"))


def check_32_init_std(xavier_std, he_std):
    import math

    points = [(f"fan_in {i}、fan_out {o}", (i, o)) for i, o in ((1, 1), (16, 64), (768, 3072))]
    return compare("組み立て：Xavier と He の標準偏差", lambda i, o: [xavier_std(i, o), he_std(i)],
                   lambda i, o: [math.sqrt(2 / (i + o)), math.sqrt(2 / i)], points,
                   solution("32-3"))


def check_32_he_uniform_bound(he_uniform_bound):
    import math

    return compare("練習問題 1（he_uniform_bound）", he_uniform_bound, lambda n: math.sqrt(6 / n),
                   [(f"fan_in {n}", (n,)) for n in (1, 3, 64, 768, 12288)], solution("32-1"))


def check_32_key_value_grads(key_value_grads):
    import numpy as np

    from numpy_engine import attention_backward
    from utils import softmax_np

    def reference(q, K, V, do, scaled):
        alpha = q.size ** -0.5 if scaled else 1.0
        p = softmax_np(alpha * (K @ q))
        return attention_backward(do[None], q[None], K, V, p[None], alpha)[1:]

    points = []
    for d in (16, 256):
        r = np.random.default_rng(d)
        qkv = (r.normal(size=d), r.normal(size=(8, d)), r.normal(size=(8, d)), r.normal(size=d))
        points += [(f"d = {d}、{'1/√d あり' if s else 'なし'}", qkv + (s,)) for s in (False, True)]
    return compare("練習問題 2（dK と dV を並べたもの）", _flat(lambda *a: key_value_grads(
        *(np.copy(x) for x in a[:4]), a[4])), _flat(reference), points, solution("32-2"))
