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


# ==================================================================================== 03 chapter 22

def _show_mismatch_03(label, got, want):
    """Print one line that tells the learner where their answer differs (before verdict says
    不正解)."""
    print(f"  {label}: 期待される値 {want}、あなたの答え {got}")


def check_03_causal_attention(causal_attention):
    """Exercise 03-1: causal multi-head attention for every position at once, as gpt_forward
    computes it: causal_attention(q, k, v, n_head) with q, k, v of shape (T, C) (row t = position t)
    returns (T, C), the heads' outputs side by side (attn_wo's input). Row t, head h: softmax over s
    <= t of q_t,h . k_s,h / sqrt(head_dim), then the weighted sum of v_s,h.

    The learner gets the q, k, v of a random model's first layer (microgpt.gpt_forward, rmsnorm
    mode); the heads' outputs that gpt_forward computed are dropped before the call, and gpt_forward
    is run again after it for the reference. numpy_engine.attention_forward (the engine's own
    attention) is refused while the learner's function runs.
    """
    import numpy as np

    import microgpt
    import numpy_engine

    def first_layer(params, tokens, cfg):
        _, acts = microgpt.gpt_forward(params, tokens, cfg)
        return acts.layers[0]

    def judge():
        rng = np.random.default_rng(2203)
        for T, n_embd, n_head in [(1, 8, 2), (4, 8, 2), (6, 16, 4), (5, 12, 3), (7, 8, 1)]:
            cfg = microgpt.GPTConfig(vocab_size=11, n_embd=n_embd, n_head=n_head, n_layer=1,
                                     block_size=8)
            params = microgpt.init_params(cfg, seed=int(rng.integers(1000)))
            for a in params.values():
                # larger than init's N(0, 0.08^2), so the attention weights are far from uniform
                a *= 4.0
            tokens = rng.integers(0, cfg.vocab_size, T)
            layer = first_layer(params, tokens, cfg)
            q, k, v = (a[0].transpose(1, 0, 2).reshape(T, n_embd).copy()
                       for a in (layer.q, layer.k, layer.v))
            # (its attn_heads is the answer: not left in this frame while the learner's code runs)
            del layer
            with refusing(numpy_engine.attention_forward,
                          why="numpy_engine.attention_forward を使わずに、"
                              "注意の計算を自分で書いてください"):
                got = causal_attention(q.copy(), k.copy(), v.copy(), n_head)
                got = np.asarray(got, dtype=float)
            want = first_layer(params, tokens, cfg).attn_heads
            if got.shape != want.shape:
                _show_mismatch_03(f"T = {T}, n_embd = {n_embd}, n_head = {n_head}: 形", got.shape,
                                  want.shape)
                return False
            bad = ~np.isclose(got, want, rtol=1e-9, atol=1e-12).all(axis=1)
            if bad.any():
                t = int(np.argmax(bad))
                print(f"  T = {T}, n_embd = {n_embd}, n_head = {n_head}: 位置 {t} の行が違います"
                      + ("（位置 t はキー 0..t だけを見ます。未来のキーを見ていませんか）"
                         if t < T - 1 else ""))
                _show_mismatch_03(f"位置 {t}", np.round(got[t], 6), np.round(want[t], 6))
                return False
        return True

    return verdict("練習問題 1（causal_attention）", judge, solution("03-1"))


def _03_counting_functions():
    """The project's functions that count, list or lay out a model's parameters (refused in
    練習問題 2)."""
    return (_project("microgpt", "init_params", "values_from_params", "loss_and_grads",
                     "loss_and_grads_value")
            + _project("numpy_engine", "loss_and_grads_np")
            + _project("model_config", "param_shapes", "alloc_params", "n_params", "param_offsets",
                       "_offsets", "n_param_arrays", "pack_params", "sphere_matrices",
                       "effective_scales"))


def check_03_count_params(count_params):
    """Exercise 03-2: the number of parameters of a GPTConfig, rmsnorm or sphere, from its sizes.
    Judged against the total size of microgpt.init_params(cfg) (computed after the learner's
    function returns) for several configs of both norms. The project's functions that count or lay
    out the parameters (init_params, param_shapes, n_params, param_offsets and its cache, ...) are
    refused while the learner's function runs: the exercise is to find the formula, in particular
    the sphere mode's scale vectors, from gpt_sphere's source."""
    import microgpt

    def judge():
        for norm in ("rmsnorm", "sphere"):
            for vocab_size, n_embd, n_head, n_layer, block_size in [
                    (27, 16, 4, 1, 16), (50, 32, 4, 2, 8), (10, 8, 2, 3, 32), (5, 12, 3, 4, 5)]:
                cfg = microgpt.GPTConfig(vocab_size=vocab_size, n_embd=n_embd, n_head=n_head,
                                         n_layer=n_layer, block_size=block_size, norm=norm)
                with refusing(*_03_counting_functions(),
                              why="init_params / param_shapes / n_params / param_offsets "
                                  "を使わずに、式で求めてください"):
                    got = count_params(cfg)
                want = sum(a.size for a in microgpt.init_params(cfg).values())
                if got != want:
                    _show_mismatch_03(f"GPTConfig(vocab_size={vocab_size}, n_embd={n_embd}, "
                                      f"n_head={n_head}, n_layer={n_layer}, "
                                      f"block_size={block_size}, norm={norm!r})", got, want)
                    return False
        return True

    return verdict("練習問題 2（count_params）", judge, solution("03-2"))


def check_03_temperature_probs(temperature_probs):
    """Exercise 03-3: softmax(logits / T), stable for huge logits and small T. Judged against
    utils.softmax_np(logits / T), computed after the learner's function returns. While it runs,
    utils.softmax_np and the chapter's softmax are refused: calling them would copy the answer
    instead of writing the max-subtracting softmax."""
    import numpy as np

    import utils

    def judge():
        rng = np.random.default_rng(2205)
        cases = [(rng.normal(0.0, 2.0, 27), T) for T in (0.25, 0.5, 1.0, 2.0)]
        cases += [(np.array([1000.0, 999.0, 990.0, -1000.0]), 0.1),
                  (np.array([3.0, 3.0, 3.0]), 0.7)]
        for logits, T in cases:
            with refusing(utils.softmax_np, utils.softmax,
                          why="utils.softmax_np も章の softmax も使わずに、自分で書いてください"):
                got = np.asarray(temperature_probs(logits.tolist(), T), dtype=float)
            want = utils.softmax_np(logits / T)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-9, atol=1e-15):
                _show_mismatch_03(f"logits {np.round(logits[:4], 3)}..., T = {T}",
                                  np.round(got[:4], 6), np.round(want[:4], 6))
                return False
        return True

    return verdict("練習問題 3（temperature_probs）", judge, solution("03-3"))


def check_03_bigram_loss(bigram_loss):
    """Exercise 03-4: the add-one-smoothed bigram baseline's val loss. Judged against
    microgpt.baselines(train, val, cfg)["bigram"] (computed after the learner's function returns) on
    seeded random token sequences that fit in block_size (so no position is cropped). baselines
    (numpy_engine.baselines, the same function) is refused while the learner's function runs."""
    import numpy as np

    import microgpt

    def judge():
        rng = np.random.default_rng(2207)
        for n_chars in (3, 6):
            bos = n_chars
            cfg = microgpt.GPTConfig(vocab_size=n_chars + 1, block_size=16)

            def docs(n, n_chars=n_chars, bos=bos):
                return [[bos] + rng.integers(0, n_chars, rng.integers(1, 9)).tolist() + [bos]
                        for _ in range(n)]

            train, val = docs(40), docs(15)
            with refusing(microgpt.baselines,
                          why="microgpt.baselines を使わずに、数えて求めてください"):
                got = bigram_loss([list(d) for d in train], [list(d) for d in val], cfg.vocab_size)
                got = float(got)
            want = microgpt.baselines(train, val, cfg)["bigram"]
            if not np.isclose(got, want, rtol=1e-9, atol=1e-12):
                _show_mismatch_03(f"vocab_size {cfg.vocab_size}", got, want)
                return False
        return True

    return verdict("練習問題 4（bigram_loss）", judge, solution("03-4"))


# ============================================================ 50-56 lecture 3 (sphere, vMF, nGPT)


def _5x_libs():  # numpy and sphere, imported when a check runs
    import numpy

    import sphere
    return numpy, sphere


def _5x_table(name, learner, reference, points, key, scale=None):
    """compare() on flat arrays over scale(*args), by default the reference's largest entry."""
    np, _ = _5x_libs()

    def flat(fn, *args):
        parts = fn(*args)
        return np.concatenate([np.ravel(q) for q in (parts if type(parts) is tuple else [parts])])

    def size(*args):
        return scale(*args) if scale else max(np.abs(flat(reference, *args)).max(), 1e-300)
    return compare(name, lambda *a: flat(learner, *a) / size(*a),
                   lambda *a: flat(reference, *a) / size(*a), points, solution(key), 1e-10, 1e-12)


def _5x_points(rng, d, around=0.0, spread=1.0):
    """Norms 1, 4, 3e-7 and both sides of the clamp's kink at eps = 1e-12 (and far below it)."""
    np, _ = _5x_libs()
    points = []
    for norm in (1.0, 4.0, 3e-7, 1e-12 * (1 + 1e-9), 1e-12 * (1 - 1e-9), 2e-13):
        u = around + spread * rng.standard_normal(d)
        points.append((f"||x|| = {norm:.9e}", norm * u / np.sqrt((u * u).sum())))
    return points


def check_50_safe_normalize(safe_normalize, safe_normalize_backward):
    """y = x / max(||x||, eps) and its dx, against sphere.l2_normalize_np(_backward)."""
    np, sphere = _5x_libs()
    rng = np.random.default_rng(402)
    points = [(label, (x, rng.standard_normal(5))) for label, x in _5x_points(rng, 5)]
    forward, backward = sphere.l2_normalize_np, sphere.l2_normalize_np_backward
    return _5x_table("練習問題（safe_normalize：y と dx を並べたもの）",
                     lambda x, g: (safe_normalize(x.copy()), safe_normalize_backward(g, x.copy())),
                     lambda x, g: (forward(x), backward(g, x)), points, "50-1")


def check_52_vmf_s2(log_c3, mean_cos_s2):
    """(log C_3, E[mu . x]) on S^2, kappa from 1e-6 (cancellation) to 1000 (sinh overflows)."""
    _, sphere = _5x_libs()
    points = [(f"κ = {k:g}", (k,)) for k in (1e-6, 1e-3, 0.5, 3.0, 40.0, 700.0, 1000.0)]
    return compare("練習問題（log_c3 と mean_cos_s2 を並べたもの）",
                   lambda k: [float(log_c3(k)), float(mean_cos_s2(k))],
                   lambda k: [float(sphere.vmf_log_normalizer(3, k)),
                              float(sphere.vmf_mean_resultant_length(3, k))],
                   points, solution("52-1"), 1e-12, 1e-14)


def _55_readout_reference(h, lm_head, s_z, target):
    """(dh, ds_z) of -log softmax(s_z * (lm_head @ Norm(h)))[target], by the project's backward."""
    np, sphere = _5x_libs()
    import utils

    cos = lm_head @ sphere.l2_normalize_np(h)
    dlogits = utils.cross_entropy_np_backward((s_z * cos)[None, :], np.array([target]))[0]
    return sphere.l2_normalize_np_backward((s_z * dlogits) @ lm_head, h), dlogits * cos


def check_55_readout_grad(readout_grad):
    """(dh, ds_z) of the sphere mode's read-out, s_z from 1 to 9 and 1000 (logits near 1000)."""
    np, sphere = _5x_libs()
    rng = np.random.default_rng(601)
    w = sphere.l2_normalize_np(rng.standard_normal((27, 16)))
    points = [(lb, (h, w, rng.uniform(1.0, 9.0, 27), int(rng.integers(27))))
              for lb, h in _5x_points(rng, 16)]
    points += [(f"s_z = 1000, {lb}", (h, w, np.full(27, 1000.0), 0))
               for lb, h in _5x_points(rng, 16, w[0], 0.05)[:3]]
    return _5x_table("練習問題（readout_grad：dh と ds_z を並べたもの）",
                     lambda h, w, s, t: readout_grad(h.copy(), w.copy(), s.copy(), t),
                     _55_readout_reference, points, "55-1")


def _56_log_posterior_grad(r, mus, kappas, priors, k):
    """d/dr of log p(k | Norm(r)) in the vMF mixture, by the scalar engine's backward()."""
    np, sphere = _5x_libs()
    from value import Value

    log_const = np.log(priors) + sphere.vmf_log_normalizer(len(r), kappas)
    rs = [Value(float(v)) for v in r]
    xs = sphere.l2_normalize(rs)
    z = [float(c) + float(kap) * sum(float(m) * x for m, x in zip(mu, xs))
         for c, kap, mu in zip(log_const, kappas, mus)]
    top = max(zj.data for zj in z)
    (z[k] - (sum((zj - top).exp() for zj in z).log() + top)).backward()
    return np.array([v.grad for v in rs])


def check_56_vmf_posterior_grad(vmf_posterior_grad):
    """d/dr log p(k | Norm(r)) in a vMF mixture, one shared kappa to kappas up to 1000."""
    np, sphere = _5x_libs()
    rng = np.random.default_rng(404)
    points = []
    for d, kappas, priors, spread in ((3, [5.0] * 4, [0.25] * 4, 0.3),
                                      (3, [1.0, 4.0, 10.0, 30.0], [0.1, 0.2, 0.3, 0.4], 0.3),
                                      (16, [1000.0, 600.0, 200.0], [0.2, 0.3, 0.5], 0.02)):
        mus = sphere.l2_normalize_np(rng.standard_normal((len(kappas), d)))
        points += [(f"d = {d}, κ ≤ {max(kappas):g}, {lb}, k = {k}",
                    (r, mus, np.array(kappas), np.array(priors), k))
                   for lb, r in _5x_points(rng, d, mus[0], spread)[:5] for k in range(len(kappas))]
    return _5x_table("練習問題（vmf_posterior_grad）",
                     lambda r, *rest: vmf_posterior_grad(r.copy(), *rest), _56_log_posterior_grad,
                     points, "56-1", lambda r, m, ka, p, k: ka.max() / max(np.sqrt(r @ r), 1e-12))


# ============================================================================== 05 PyTorch concepts
# Exercises of notebook 05 (PyTorch concepts without PyTorch): He init drawn from a uniform
# distribution, the backward of a linear layer with a bias and a ReLU in the [out, in] layout, and
# the gradients that reach the attention's keys and values with and without 1/sqrt(d).


def he_stack_ratio(bound_of):
    """The 30-layer ReLU stack of 練習問題 1 with weights from U(-l, l), l = bound_of(fan_in): the
    geometric mean over five stacks of (activation std at layer 30) / (at layer 1). Widths cycle
    through 64, 256, 128."""
    import numpy as np

    from utils import linear_np

    widths = [64, 256, 128] * 10
    ratios = []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for seed in range(20, 25):   # five fixed stacks
            r = np.random.default_rng(seed)
            h = r.normal(size=(64, widths[-1]))
            stds = []
            for fan_out, fan_in in zip(widths, [widths[-1]] + widths[:-1]):
                bound = float(bound_of(fan_in))
                h = np.maximum(linear_np(h, r.uniform(-bound, bound, (fan_out, fan_in))), 0.0)
                stds.append(h.std())
            ratios.append(stds[-1] / stds[0])
        return float(np.exp(np.mean(np.log(ratios))))


def check_05_he_uniform_bound(he_uniform_bound):
    """Exercise 05-1: he_uniform_bound(fan_in) -> l such that U(-l, l) has He's variance 2 / fan_in.

    Judged by that identity, Var(U(-l, l)) = l^2 / 3 = 2 / fan_in, to a relative 1e-12 for fan_in
    from 1 to 12288: a bound found by sampling (or by searching for a value that keeps the stack
    below alive) is not that exact. The 30-layer ReLU stack is then printed for the learner's l (its
    ratio should stay near 1)."""

    def judge():
        for fan_in in (1, 3, 64, 100, 768, 12288):
            bound = float(he_uniform_bound(fan_in))
            if not (bound > 0 and abs(bound * bound / 3 - 2 / fan_in) <= 1e-12 * (2 / fan_in)):
                print(f"  fan_in = {fan_in}: l = {bound!r} gives Var(U(-l, l)) = l^2 / 3 = "
                      f"{bound * bound / 3!r}; "
                      f"He's variance is 2 / fan_in = {2 / fan_in!r}")
                return False
        ratio = he_stack_ratio(he_uniform_bound)
        print(f"  活性の標準偏差の比（30 段目 / 1 段目、5 本の網の幾何平均）= {ratio:.3g}")
        return True

    return verdict("練習問題 1（He 初期化の一様分布版）", judge, solution("05-1"))


def _05_linear_relu_cases():
    """(x, w, b, dy) for 練習問題 2: one and two batch axes, and a batch in which b puts two
    pre-activations 1e-12 from the ReLU's kink (one above, one below)."""
    import numpy as np

    from utils import linear_np

    r = np.random.default_rng(6)
    cases = []
    for batch_shape in ((5,), (2, 5)):
        x, w, b = r.normal(size=batch_shape + (4,)), r.normal(size=(3, 4)), r.normal(size=3)
        cases.append((x, w, b, r.normal(size=batch_shape + (3,))))
    x, w = r.normal(size=(6, 4)), r.normal(size=(3, 4))
    pre = linear_np(x, w)
    b = -np.array([pre[0, 0], pre[1, 1], pre[2, 2]]) + np.array([1e-12, -1e-12, 1e-12])
    cases.append((x, w, b, r.normal(size=(6, 3))))
    return cases


def check_05_linear_relu_backward(linear_relu_np_backward):
    """Exercise 05-2: linear_relu_np_backward(dy, x, w, b) -> (dx, dw, db) for y = relu(linear_np(x,
    w) + b).

    Judged against the reference computed after the learner's function returns (the ReLU's mask,
    then utils.linear_np_backward for dx and dw and the sum over every batch axis for db), to 1e-12
    relative, on one and two batch axes and on a batch whose pre-activations are 1e-12 from the kink
    (a difference quotient there mixes both sides of it). Value.backward is refused while the
    learner's function runs (the layer written with Values and backpropagated by the engine would be
    the engine's answer)."""
    import numpy as np

    from utils import linear_np, linear_np_backward
    from value import Value

    def judge():
        for x, w, b, dy in _05_linear_relu_cases():
            with refusing(Value.backward, why="backward() を使わずに、式で書いてください"):
                got = linear_relu_np_backward(dy.copy(), x.copy(), w.copy(), b.copy())
            if not (isinstance(got, tuple) and len(got) == 3):
                print(f"  (dx, dw, db) の3つ組を返してください（返ってきたのは "
                      f"{type(got).__name__}）")
                return False
            dpre = dy * (linear_np(x, w) + b > 0)
            dx_ref, dw_ref = linear_np_backward(dpre, x, w)
            db_ref = dpre.reshape(-1, dpre.shape[-1]).sum(axis=0)
            for name, g, ref in zip(("dx", "dw", "db"), got, (dx_ref, dw_ref, db_ref)):
                where = f"x の形 {x.shape}：{name}"
                if not _close(g, ref, 1e-12, 1e-14 * np.abs(ref).max(), where):
                    return False
        return True

    return verdict("練習問題 2（バイアスと ReLU のある線形層の逆伝播）", judge, solution("05-2"))


def check_05_key_value_grads(key_value_grads):
    """Exercise 05-3: key_value_grads(q, K, V, do, scaled) -> (dK, dV) for the attention output of
    one query, o = p @ V, p = softmax(alpha K q), alpha = 1/sqrt(d) or 1, given do = dL/do.

    Judged against the NumPy engine's attention backward (numpy_engine.attention_backward, computed
    after the learner's function returns) for d = 16 and d = 256, with and without the scaling, to
    1e-12 relative (plus 1e-14 of the largest entry); without the scaling the softmax is nearly
    saturated (its largest weight is 0.9989 at d = 16), so most entries of dK are far smaller than
    the loss they change and a difference quotient of the loss misses them. It and Value.backward
    are refused while the learner's function runs.
    """
    import numpy as np

    import numpy_engine
    from utils import softmax_np
    from value import Value

    def judge():
        for d in (16, 256):
            r = np.random.default_rng(d)
            q, K, V, do = (r.normal(size=d), r.normal(size=(8, d)), r.normal(size=(8, d)),
                           r.normal(size=d))
            for scaled in (False, True):
                with refusing(numpy_engine.attention_backward, Value.backward,
                              why="attention_backward も backward() も使わずに、"
                                  "式で書いてください"):
                    got = key_value_grads(q.copy(), K.copy(), V.copy(), do.copy(), scaled)
                alpha = 1 / np.sqrt(d) if scaled else 1.0
                p = softmax_np(alpha * (K @ q))
                _, dK_ref, dV_ref = numpy_engine.attention_backward(do[None], q[None], K, V,
                                                                    p[None], alpha)
                if not (isinstance(got, tuple) and len(got) == 2):
                    print(f"  (dK, dV) の2つ組を返してください（返ってきたのは "
                          f"{type(got).__name__}）")
                    return False
                line = f"d = {d:3d}, scaled = {scaled}"
                if not (_close(got[0], dK_ref, 1e-12, 1e-14 * np.abs(dK_ref).max(), f"{line}: dK")
                        and _close(got[1], dV_ref, 1e-12, 1e-14 * np.abs(dV_ref).max(),
                                   f"{line}: dV")):
                    return False
                print(f"  {line}：|dL/dK| = {np.linalg.norm(dK_ref):.3e}, "
                      f"|dL/dV| = {np.linalg.norm(dV_ref):.3e}")
        return True

    return verdict("練習問題 3（キーとバリューに届く勾配）", judge, solution("05-3"))
