"""exercises.py -- the checks of the notebooks' build steps and 練習問題 (exercises).

Each check runs the learner's code at telling points (a kink, saturation, logits of
+-5000, entries of very different sizes) and prints a table in the manner of Karpathy's
cmp(): exact, close, and the largest difference. It returns True (正解), False (不正解)
or None (未回答: the stub still raises NotImplementedError). The project's own functions
compute every answer: the point is to derive it. Under each table the worked solution
(worked_solutions.md) is shown folded. What cannot be graded is a row that says why: a
forgotten return, complex numbers, text, an exception (its type and message); a
learner's iterator is read to one item more than the answer has, so an endless one
cannot hang. tests/test_exercises_NN.py shows each check telling right from wrong.
"""
import dataclasses
import itertools
import math
import numbers
import sys
import unicodedata
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # value.py, utils.py, ... live at the repo root
import microgpt  # noqa: E402
import numpy_engine  # noqa: E402
import sphere  # noqa: E402
import utils  # noqa: E402
import value  # noqa: E402

UNANSWERED = "未回答（解答セルを埋めてから、このセルをもう一度実行してください）"
FORGOT_RETURN = "None が返りました（return を忘れていませんか）"
SOLUTIONS_FILE = Path(__file__).resolve().parent / "worked_solutions.md"


class NotAnAnswer(Exception):
    """The learner's function gave what cannot be graded; compare() says why."""


def _returning(f):
    """The learner's f, but None (a forgotten `return`) raises
    NotAnAnswer(FORGOT_RETURN): a check that uses f's result before compare() sees it
    says so in the same words as every other."""
    def answer(*args):
        got = f(*args)
        if got is None:
            raise NotAnAnswer(FORGOT_RETURN)
        return got
    return answer


def _numbers(got):
    """The learner's answer as a float array; NotAnAnswer if it holds complex numbers or
    anything but real numbers (np.asarray(got, dtype=float) would drop an imaginary
    part, parse a string)."""
    a = np.asarray(got)
    if a.dtype.kind in "biuf":  # bool, int, unsigned, float
        return a.astype(float)
    if a.dtype.kind == "O":  # Python objects: real ones (int, Fraction, np.float32) are numbers
        odd = [x for x in a.ravel() if not isinstance(x, numbers.Real)]
        if not odd:
            return a.astype(float)
        odd = odd[0]
    else:  # complex, text, dates, ...: the array's own kind of value
        odd = a.dtype.type(0) if a.dtype.kind == "c" else a.ravel()[0] if a.size else a.dtype
    if isinstance(odd, numbers.Complex):
        imag = np.max(np.abs(np.imag(a)), initial=0) if a.dtype.kind == "c" else abs(odd.imag)
        raise NotAnAnswer(f"複素数が返りました（虚部 {imag:.2g}）：実数を返してください")
    if isinstance(odd, (str, bytes)):
        raise NotAnAnswer(f"数ではなく文字列が返りました（{str(odd)[:30]!r}）：数を返してください")
    raise NotAnAnswer(f"数ではない値が返りました（{type(odd).__name__}）：数を返してください")


def _described(e):
    """An exception from the learner's code as "Type: message", even if str() fails."""
    try:
        message = str(e)
    except Exception:  # noqa: BLE001 (the learner's __str__ may raise anything)
        message = "（メッセージを文字列にできませんでした）"
    return f"{type(e).__name__}: {message}"


# ========================================================= tables and worked solutions

def show_solution(markdown, ok=True):
    """Show a worked solution folded (<details>) in a notebook (only in IPython)."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:
        return
    if not markdown or get_ipython() is None:
        return
    summary = "解答例（自分の答えと比べてください）" if ok else "行き詰まったら：解答例"
    display(Markdown(f"<details><summary>{summary}</summary>\n\n{markdown.strip()}\n\n</details>"))


def solution(key):
    """Exercise `key`'s worked solution ("01-1", ...), from worked_solutions.md."""
    text = SOLUTIONS_FILE.read_text(encoding="utf-8")
    section = text.split(f"\n## {key}\n")[1]
    return section.split("\n## ")[0].strip()


def compare(name, learner, reference, points, key=None, rtol=1e-9, atol=1e-12):
    """Table learner(*args) against reference(*args) at each (label, args) of points:
    exact, close (|got - want| <= atol + rtol |want|), largest difference. True if all
    close, None if a stub. An answer of several parts (reference.part_names, from
    _flat) that is not close at a point gets a line per part under the table: its
    largest difference, with got, want and the relative difference at that entry. Under
    it all, exercise `key`'s worked solution, folded."""
    markdown = solution(key) if key else None
    rows = []  # (label, exact, close, largest difference, close as a bool)
    per_part = []  # (label, [a line per part]) of the points that are not close
    for label, args in points:
        want = np.asarray(reference(*args), dtype=float)
        shapes = getattr(reference, "part_shapes", None)
        try:
            got = learner(*args)
            if got is None:
                rows.append((label, "-", "-", FORGOT_RETURN, False))
                continue
            got = _numbers(got)
        except NotImplementedError:
            print(f"{name}: {UNANSWERED}")
            show_solution(markdown, False)
            return None
        except NotAnAnswer as e:
            rows.append((label, "-", "-", str(e), False))
            continue
        except Exception as e:  # the learner's code failed: say how, keep the notebook running
            rows.append((label, "-", "-", _described(e), False))
            continue
        if got.shape != want.shape:
            rows.append((label, "-", "-", f"形が違う {got.shape}（正しくは {want.shape}）", False))
            continue
        with np.errstate(invalid="ignore"):
            close = bool(np.all(np.abs(got - want) <= atol + rtol * np.abs(want)))
            diff = float(np.max(np.abs(got - want))) if got.size else 0.0
        yes = {True: "はい", False: "いいえ"}
        rows.append((label, yes[bool(np.array_equal(got, want))], yes[close], f"{diff:.2e}", close))
        if not close and shapes and len(shapes) > 1:
            lines = _part_lines(got, want, reference.part_names, shapes, atol, rtol)
            per_part.append((label, lines))
    ok = all(row[-1] for row in rows)
    width = max(_columns(label) for label, *_ in rows + [("点",)])
    print(f"{name}\n  {_pad('点', width)}  完全一致  近い    最大の差")
    for label, exact, close, diff, _ in rows:
        print(f"  {_pad(label, width)}  {_pad(exact, 8)}  {_pad(close, 6)}  {diff}")
    for label, lines in per_part:
        print(f"  {label}：部分ごとの最大の差")
        for line in lines:
            print(f"    {line}")
    print(f"  → {'すべての点で一致しました' if ok else '一致しない点があります'}")
    show_solution(markdown, ok)
    return ok


def _part_lines(got, want, names, shapes, atol, rtol):
    """A line per part of a flat answer: close or not, the largest difference, and at
    that entry (its index in the part) got, want and |got - want| / |want|."""
    lines, start = [], 0
    for name, shape in zip(names, shapes):
        n = int(np.prod(shape))
        g, w, start = got[start:start + n], want[start:start + n], start + n
        if n == 0:
            continue
        with np.errstate(invalid="ignore"):
            d = np.where(np.isnan(g - w), np.inf, np.abs(g - w))
            ok = bool(np.all(d <= atol + rtol * np.abs(w)))
        i = int(np.argmax(d))
        index = ", ".join(map(str, np.unravel_index(i, shape)))
        where = f"[{index}] " if shape else ""
        rel = (f"{d[i] / abs(w[i]):.1e}" if w[i] != 0 else
               "0" if d[i] == 0 else "∞（正しい値は 0）")
        lines.append(f"{name}：一致（最大の差 {d[i]:.2e}）" if ok else
                     f"{name}：不一致　最大の差 {d[i]:.2e}　{name}{where}で"
                     f"得た値 {g[i]:.8g}、正しい値 {w[i]:.8g}、相対差 {rel}")
    return lines


def _columns(text):
    """Columns text takes: a full-width character (kana, kanji) is two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text, width):
    return text + " " * max(0, width - _columns(text))


def _flat(f, names=None):
    """f's answer (an array, or a tuple of arrays and numbers) as one flat array: a
    table row (None, a forgotten return, stays None: compare() says so). With names (one
    per part), the shapes of the last answer's parts are kept in flat.part_shapes (for
    compare()'s lines)."""
    def flat(*args):
        parts = f(*args)
        if parts is None:
            return None
        parts = parts if isinstance(parts, (tuple, list)) else [parts]
        parts = [_numbers(p) for p in parts]
        if names:
            flat.part_shapes = [p.shape for p in parts]
        return np.concatenate([np.ravel(p) for p in parts])
    flat.part_names = names
    return flat


def _copies(args):
    """args, arrays copied: an answer that changes its input cannot fool the check."""
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _scaled(name, learner, reference, points, key, scale=None, names=None):
    """compare() on flat answers over their size: scale(*args), or by default each
    part's (y, dx, ...) largest reference entry, so a tiny y beside a huge dx is still
    compared at its own size. names: the parts', for compare()'s lines per part."""
    def size(*args):
        if scale:
            return scale(*args)
        parts = reference(*_copies(args))
        parts = parts if isinstance(parts, (tuple, list)) else [parts]
        return np.concatenate([np.full(np.size(p), max(np.abs(p).max(), 1e-300)) for p in parts])

    def over_size(f):
        flat = _flat(f, names)

        def scaled(*args):  # (None, or another shape: left for compare() to say in words)
            got, s = flat(*_copies(args)), np.asarray(size(*args), dtype=float)
            if got is not None and s.ndim == 0:  # one number for every entry
                s = np.broadcast_to(s, np.shape(got))
            scaled.part_shapes = getattr(flat, "part_shapes", None)
            return got if got is None or np.shape(got) != np.shape(s) else got / s
        scaled.part_names = names
        return scaled
    return compare(name, over_size(learner), over_size(reference), points, key, 1e-10, 1e-12)


# ============================================= 01-02 autograd: the learner's own Value

def _op(name, key, Value, op, reference_op, points, **tolerances):
    """The learner's op on their own Value against value.py's: [data, local grads]."""
    def node(make, V, *xs):
        v = make(*map(V, xs))
        return [v.data, *v._local_grads]
    op = _returning(op)
    return compare(name, lambda *xs: node(op, Value, *xs),
                   lambda *xs: node(reference_op, value.Value, *xs), points, key, **tolerances)


def check_01_add(Value, add):
    return _op("ステップ1（add）", "01-1", Value, add, lambda a, b: a + b,
               [("2 + (-3)", (2.0, -3.0)), ("0.1 + 0.2", (0.1, 0.2)), ("1e16 + 1", (1e16, 1.0))])


def check_01_mul(Value, mul):
    return _op("ステップ2（mul）", "01-2", Value, mul, lambda a, b: a * b,
               [("2 × (-3)", (2.0, -3.0)), ("1e200 × 1e-200", (1e200, 1e-200))])


def check_01_tanh(Value, tanh):  # at x = 20, 1 - t^2 = 0 and 1/cosh^2 = 1.7e-17: both right
    return _op("ステップ3（tanh）", "01-3", Value, tanh, lambda a: a.tanh(),
               [("x = 0.5", (0.5,)), ("x = -2", (-2.0,)), ("x = 20（飽和）", (20.0,))])


def check_01_relu(Value, relu):
    return _op("練習問題 1（relu）", "01-6", Value, relu, lambda a: a.relu(),
               [("x = 1.5", (1.5,)), ("x = -0.5", (-0.5,)),
                ("x = 0（折れ点：傾きは 0 と決める）", (0.0,)),
                ("x = 1e-300（折れ点のすぐ上）", (1e-300,)),
                ("x = -1e-300（折れ点のすぐ下）", (-1e-300,))])


def check_01_sigmoid(Value, sigmoid):
    """One node, against backward() through 1/(1 + exp(-x))."""
    sigmoid = _returning(sigmoid)

    def learner(x):
        v = Value(x)
        s = sigmoid(v)
        if list(s._children) != [v]:
            raise ValueError("1つのノード（子は v だけ）にしてください")
        return [s.data, s._local_grads[0]]

    def reference(x):
        v = value.Value(x)
        s = 1 / (1 + (-v).exp())
        s.backward()
        return [s.data, v.grad]
    points = [(f"x = {x:g}", (x,)) for x in (-3.0, 0.0, 2.5)] + [("x = 30（飽和）", (30.0,))]
    return compare("練習問題 2（sigmoid）", learner, reference, points, "01-7",
                   atol=1e-15)  # at x = 30, s(1 - s) and e^-x / (1 + e^-x)^2 agree only to 1e-16


EXPRESSIONS_01 = [  # (label, leaf values, the expression as a function of its leaves)
    ("(a·b + c)·f", (2.0, -3.0, 10.0, -2.0), lambda a, b, c, f: (a * b + c) * f),
    ("a·a + 2·a", (3.0,), lambda a: a * a + 2 * a),
    ("tanh(x1·w1 + x2·w2 + b)", (2.0, 0.0, -3.0, 1.0, 6.8813735870195432),
     lambda x1, x2, w1, w2, b: (x1 * w1 + x2 * w2 + b).tanh()),
    ("d = a·b; tanh(d)·d + d·c", (0.7, -1.3, 0.4),
     lambda a, b, c: (lambda d: d.tanh() * d + d * c)(a * b))]


def grads_01(Value, run_backward, expression, xs):
    """[root's data, the leaves' grads] of expression(*leaves) after run_backward."""
    leaves = [Value(x) for x in xs]
    root = expression(*leaves)
    run_backward(root)
    return [root.data] + [v.grad for v in leaves]


def check_01_backward(Value, backward):
    return compare("ステップ5（backward）", lambda f, xs: grads_01(Value, backward, f, xs),
                   lambda f, xs: grads_01(value.Value, value.Value.backward, f, xs),
                   [(label, (f, xs)) for label, xs, f in EXPRESSIONS_01], "01-5")


def _check_order(name, key, topological_order, roots):
    """Compares [nodes listed, distinct nodes, children listed after a parent or not at
    all]. The learner's iterator is read to one node more than the graph has: an endless
    one cannot hang."""
    topological_order = _returning(topological_order)

    def numbers(root):
        most = len(value.topological_order(root)) + 1
        order, pos = list(itertools.islice(topological_order(root), most)), {}
        for i, v in enumerate(order):
            pos.setdefault(id(v), i)
        late = sum(pos.get(id(c), math.inf) > pos[id(v)] for v in order for c in v._children)
        return [len(order), len(pos), late]
    print("比べる数：[並べたノードの数, 異なるノードの数, 親より後に来た（または来ない）子の数]")
    return compare(name, numbers, lambda root: [len(value.topological_order(root))] * 2 + [0],
                   roots, key)


def _graphs_01():  # EXPRESSIONS_01 built from value.Value, afresh: a node used twice, a diamond
    return [(label, (f(*map(value.Value, xs)),)) for label, xs, f in EXPRESSIONS_01]


def check_01_topological_order(topological_order):
    return _check_order("ステップ4（topological_order）", "01-4", topological_order, _graphs_01())


def check_02_topological_order(my_topological_order):
    n, chain = 3 * sys.getrecursionlimit(), value.Value(1.0)
    for _ in range(n):
        chain = chain * 0.999
    return _check_order("練習問題 2（my_topological_order）", "02-2", my_topological_order,
                        _graphs_01()[2:] + [(f"{n} 段の鎖", (chain,))])


def check_02_grad_a(grad_a):
    """dL/da of L = relu(tanh(a b) a - 1/2), 1e-11 (relatively) beside the kink too."""
    def reference(a0, b0):
        a = value.Value(a0)
        ((a * value.Value(b0)).tanh() * a - 0.5).relu().backward()
        return a.grad
    points = [(f"a = {a}, b = {b}", (a, b)) for a, b in ((1.2, 0.9), (-0.8, 1.7), (2.0, -1.1))]
    for b in (1.3, 0.7):  # bisect for the kink tanh(a b) a = 1/2
        lo, hi = 0.0, 8.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if math.tanh(mid * b) * mid < 0.5 else (lo, mid)
        points += [(f"折れ点のすぐ上（b = {b}）", (hi * (1 + 1e-11), b)),
                   (f"折れ点のすぐ下（b = {b}）", (hi * (1 - 1e-11), b))]
    return compare("練習問題 1（grad_a）", grad_a, reference, points, "02-1")


# =============================================== 03-04 chapter 21: the three functions

def _on_values(name, key, learner, reference, points):
    """learner and reference take and return lists of Values; points: float lists."""
    learner = _returning(learner)

    def on_values(fn):
        def values(a):
            return [values(t) for t in a] if isinstance(a, list) else value.Value(float(a))
        return lambda *args: [v.data for v in fn(*map(values, args))]
    return compare(name, on_values(learner), on_values(reference), points, key)


LOGITS_03 = [("章の例 [1, 2]", ([1, 2],)), ("ランダムな4個", ([0.3, -1.2, 2.2, 0.9],)),
             ("±1000", ([1000, 999, 990, -1000],)), ("±5000", ([5000, 4999, -5000],))]


def check_03_linear(linear):
    return _on_values("ステップ1（linear）", "03-1", linear, utils.linear,
                      [("章の例 w = [[3, 4]], x = [1, 2]", ([1, 2], [[3, 4]])),
                       ("入力3個・出力2個", ([0.5, -1, 2], [[1, 2, 3], [-0.5, 0.25, 4]])),
                       ("入力1個・出力3個", ([2], [[1], [-3], [0.5]]))])


def check_03_softmax(softmax):
    return _on_values("ステップ2（softmax）", "03-2", softmax, utils.softmax, LOGITS_03)


def check_03_rmsnorm(rmsnorm):
    return _on_values("ステップ3（rmsnorm）", "03-3", rmsnorm, utils.rmsnorm,
                      [("章の例 [3, 4]", ([3, 4],)), ("ランダムな4個", ([0.3, -1.2, 2.2, 0.9],)),
                       ("ゼロベクトル", ([0, 0, 0],)), ("小さな値", ([1e-3, -2e-3],))])


def check_03_log_softmax(log_softmax):
    def reference(z):
        m = max(v.data for v in z)
        lse = sum((v - m).exp() for v in z).log()
        return [v - m - lse for v in z]
    return _on_values("練習問題 1（log_softmax）", "03-4", log_softmax, reference, LOGITS_03)


def layernorm_values(xs, eps=1e-5):
    """LayerNorm (no gain or bias) of a list of Values: (x - mean) / sqrt(var + eps)."""
    mean = sum(xs) / len(xs)
    centered = [v - mean for v in xs]
    inv_std = (sum(c * c for c in centered) / len(xs) + eps) ** -0.5
    return [c * inv_std for c in centered]


def check_03_layernorm(layernorm):
    return _on_values("練習問題 2（layernorm）", "03-5", layernorm, layernorm_values,
                      [("[1, 2, 3, 4]", ([1, 2, 3, 4],)), ("100 を足す", ([101, 102, 103, 104],)),
                       ("ほぼ一定の行", ([3, 3 + 1e-4, 3 - 1e-4, 3],))])


def backward_points_04():
    """(label, (dy, x)): a row, a batch, entries 16 orders apart, near-constant rows."""
    rng = np.random.default_rng(2101)
    mixed = np.array([[1e8, -3e-8, 2.0, 5e-9, -7e7], [-4e-9, 6e7, 1e-8, -2.5e8, 3.0]])
    xs = [("ランダムな行", rng.normal(size=5)), ("バッチ (2, 3, 4)", rng.normal(size=(2, 3, 4))),
          ("16桁違う成分の並ぶ行", mixed), ("ほぼ一定の行", 3.0 + 1e-4 * rng.normal(size=(2, 5)))]
    return [(label, (rng.normal(size=x.shape), x)) for label, x in xs]


def check_04_linear_backward(linear_backward):
    """(dx, dw) of y = x @ w.T; over a batch, dw sums over the leading axes."""
    w = np.arange(12.0).reshape(3, 4) / 7 - 0.8
    points = [("章の例 dy = [1]", (np.ones(1), np.array([1.0, 2.0]), np.array([[3.0, 4.0]])))]
    points += [(label, (dy[..., :3], x[..., :4], w)) for label, (dy, x) in backward_points_04()[:2]]
    return compare("ステップ1（linear_backward）", _flat(linear_backward),
                   _flat(utils.linear_np_backward, ["dx", "dw"]), points, "04-1")


def check_04_softmax_backward(softmax_backward):
    """dz from dp and p = softmax(z), logits of +-5000 too (p holds exact 0s)."""
    points = [(label, (np.arange(len(z)) % 2 * 1.0, utils.softmax_np(np.array(z, float))))
              for label, (z,) in LOGITS_03]
    return compare("ステップ2（softmax_backward）", softmax_backward, utils.softmax_np_backward,
                   points, "04-2")


def check_04_rmsnorm_backward(rmsnorm_backward):
    return compare("ステップ3（rmsnorm_backward）", rmsnorm_backward, utils.rmsnorm_np_backward,
                   backward_points_04(), "04-3", atol=1e-20)


def check_04_log_softmax_jacobian(log_softmax_jacobian):
    """J[i, j] = d log p_i / d z_j, against the rows of -cross_entropy_np_backward."""
    def reference(z):
        return -np.stack([utils.cross_entropy_np_backward(z[None, :], np.array([i]))[0]
                          for i in range(z.size)])
    return compare("練習問題 1（log_softmax_jacobian）", log_softmax_jacobian, reference,
                   [(label, (np.array(z, float),)) for label, (z,) in LOGITS_03], "04-4")


def check_04_layernorm_backward(layernorm_backward):
    """Against value.py's backward() of sum(dy * layernorm_values(x)), row by row."""
    def reference(dy, x):
        dx = np.zeros(x.shape)
        for i in np.ndindex(*x.shape[:-1]):
            xs = [value.Value(float(v)) for v in x[i]]
            sum(float(g) * y for g, y in zip(dy[i], layernorm_values(xs))).backward()
            dx[i] = [v.grad for v in xs]
        return dx
    return compare("練習問題 2（layernorm_backward）", layernorm_backward, reference,
                   backward_points_04(), "04-5", atol=1e-20)


# ========================================== 05-07 PyTorch concepts, built and measured

def module_setattr_05(self, name, attr):
    """Module.__setattr__: a Parameter or a Module set as an attribute is registered."""
    for registry, cls in (("_parameters", "Parameter"), ("_modules", "Module")):
        if any(c.__name__ == cls for c in type(attr).__mro__):
            getattr(self, registry)[name] = attr
    object.__setattr__(self, name, attr)


def _05_build(classes, setattr_, depth):
    """`depth` nested modules (m.w = 2, a Parameter; m.scale = 5, a plain tensor; outer
    ones w = 4, inner, b = 3)."""
    Module, Parameter, Tensor = classes
    base = type("Base", (Module,), {"__setattr__": setattr_})
    m = base()
    m.w, m.scale = Parameter(2.0), Tensor(5.0)            # a plain tensor is no parameter
    for _ in range(depth):
        outer = base()
        outer.w, outer.inner, outer.b = Parameter(1.0), m, Parameter(3.0)
        outer.w, m = Parameter(4.0), outer               # set again: still one parameter
    return m


def check_05_setattr(module_setattr, *classes):
    def model(setattr_, depth):  # the parameters' values, then m.w (a lost attribute raises)
        m = _05_build(classes, setattr_, depth)
        return [p.data for p in m.parameters()] + [m.w.data]
    return compare("組み立て 1：Module.__setattr__（parameters() の値と model.w）",
                   lambda d: model(module_setattr, d), lambda d: model(module_setattr_05, d),
                   [("入れ子なし", (0,)), ("入れ子と上書き", (1,)), ("3 段", (2,))], "05-3")


def no_grad_05(Tensor):
    """A no_grad for the notebook's Tensor: off inside, then always as before."""
    @contextmanager
    def no_grad():
        before, Tensor.grad_enabled = Tensor.grad_enabled, False
        try:
            yield
        finally:
            Tensor.grad_enabled = before
    return no_grad


def check_05_no_grad(no_grad, Tensor):
    def states(no_grad, nested):  # before, inside (an inner one too), after, after an exception
        Tensor.grad_enabled, seen = True, [True]
        try:
            with no_grad():
                seen.append(Tensor.grad_enabled)
                if nested:
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
    return compare("組み立て 2：no_grad（grad_enabled の移り変わり）", lambda n: states(no_grad, n),
                   lambda n: states(no_grad_05(Tensor), n), [("1 段", (0,)), ("入れ子", (1,))],
                   "05-4")


def check_05_state_dict(state_dict, *classes):
    state_dict = _returning(state_dict)

    def answer(fn, depth):
        d = fn(_05_build(classes, module_setattr_05, depth))
        return [len(d)] + [d[k] for k in ["w", "inner.b", "inner.inner.w"][:depth + 1]]

    def reference(m, prefix=""):
        out = {prefix + k: p.data for k, p in m._parameters.items()}
        for k, child in m._modules.items():
            out.update(reference(child, prefix + k + "."))
        return out
    return compare("練習問題 1（state_dict：個数と各値）", lambda d: answer(state_dict, d),
                   lambda d: answer(reference, d), [("入れ子なし", (0,)), ("3 段", (2,))], "05-1")


def check_05_sgd_step(sgd_step, Parameter):
    def run(step, frozen):
        ps = [Parameter(float(i)) for i in range(4)]
        for i, p in enumerate(ps):
            p.grad = None if i == 3 else 10.0 * (i + 1)
            p.requires_grad = i not in frozen
        step(ps, 0.1)
        return [p.data for p in ps]

    def reference(ps, lr):
        for p in ps:
            if p.requires_grad and p.grad is not None:
                p.data -= lr * p.grad
    points = [("凍結なし", ((),)), ("1 つ凍結", ((1,),)), ("全部凍結", ((0, 1, 2, 3),))]
    return compare("練習問題 2（sgd_step）", lambda f: run(sgd_step, f),
                   lambda f: run(reference, f), points, "05-2")


def check_06_linear_relu_backward(linear_relu_np_backward):
    def reference(dy, x, w, b):
        dpre = dy * (utils.linear_np(x, w) + b > 0)
        return (*utils.linear_np_backward(dpre, x, w), dpre.reshape(-1, dpre.shape[-1]).sum(axis=0))

    r = np.random.default_rng(6)
    points = [(f"x の形 {s + (4,)}", (r.normal(size=s + (3,)), r.normal(size=s + (4,)),
                                     r.normal(size=(3, 4)), r.normal(size=3)))
              for s in ((5,), (2, 5))]
    x, w = r.normal(size=(6, 4)), r.normal(size=(3, 4))   # pre-activations 1e-12 from the kink:
    b = -np.diag(utils.linear_np(x, w)[:3]) + np.array([1e-12, -1e-12, 1e-12])
    points.append(("ReLU の折れ点のそば", (r.normal(size=(6, 3)), x, w, b)))
    return compare("練習問題 1（dx, dw, db を並べたもの）", _flat(linear_relu_np_backward),
                   _flat(reference, ["dx", "dw", "db"]), points, "06-1")


def check_06_dropout_backward(dropout_backward):
    r = np.random.default_rng(31)
    points = [(f"p = {p}", (r.normal(size=(4, 5)), r.random((4, 5)) >= p, p)) for p in (0.1, 0.5)]
    return compare("練習問題 2（dropout_backward）", dropout_backward,
                   lambda dy, keep, p: dy * keep / (1 - p), points, "06-2")


def check_07_init_std(xavier_std, he_std):
    xavier_std, he_std = _returning(xavier_std), _returning(he_std)
    points = [(f"fan_in {i}、fan_out {o}", (i, o)) for i, o in ((1, 1), (16, 64), (768, 3072))]
    return compare("組み立て：Xavier と He の標準偏差", lambda i, o: [xavier_std(i, o), he_std(i)],
                   lambda i, o: [math.sqrt(2 / (i + o)), math.sqrt(2 / i)], points, "07-3")


def check_07_he_uniform_bound(he_uniform_bound):
    return compare("練習問題 1（he_uniform_bound）", he_uniform_bound, lambda n: math.sqrt(6 / n),
                   [(f"fan_in {n}", (n,)) for n in (1, 3, 64, 768, 12288)], "07-1")


def check_07_key_value_grads(key_value_grads):
    def reference(q, K, V, do, scaled):
        alpha = q.size ** -0.5 if scaled else 1.0
        p = utils.softmax_np(alpha * (K @ q))
        return numpy_engine.attention_backward(do[None], q[None], K, V, p[None], alpha)[1:]

    points = []
    for d in (16, 256):
        r = np.random.default_rng(d)
        qkv = (r.normal(size=d), r.normal(size=(8, d)), r.normal(size=(8, d)), r.normal(size=d))
        points += [(f"d = {d}、{'1/√d あり' if s else 'なし'}", qkv + (s,)) for s in (False, True)]
    def learner(q, K, V, do, scaled):
        return key_value_grads(q.copy(), K.copy(), V.copy(), do.copy(), scaled)
    return compare("練習問題 2（dK と dV を並べたもの）", _flat(learner),
                   _flat(reference, ["dK", "dV"]), points, "07-2")


# ========================================== 08-10 chapter 22 (gpt, training, sampling)

def check_08_causal_attention(causal_attention):
    def reference(q, k, v, n_head):  # numpy_engine's attention on (T, C): heads side by side
        T, C = q.shape
        split = [a.reshape(1, T, n_head, C // n_head).transpose(0, 2, 1, 3) for a in (q, k, v)]
        y = numpy_engine.attention_forward(*split, (C // n_head) ** -0.5)[0]
        return y.transpose(0, 2, 1, 3).reshape(T, C)

    r = np.random.default_rng(2203)
    points = [(f"T={T} C={C} ヘッド {h}", tuple(r.normal(0, 2, (T, C)) for _ in "qkv") + (h,))
              for T, C, h in [(1, 8, 2), (4, 8, 2), (6, 16, 4), (7, 8, 1)]]
    return compare("練習問題 1（causal_attention）",
                   lambda q, k, v, h: causal_attention(q.copy(), k.copy(), v.copy(), h),
                   reference, points, "08-1")


def _08_size(cfg, norm=None):
    """How many parameters cfg (with norm, if given), by microgpt.init_params."""
    cfg = dataclasses.replace(cfg, norm=norm or cfg.norm)
    return sum(a.size for a in microgpt.init_params(cfg).values())


def _08_configs(norm):
    return [(f"V={V} C={C} 層 {L} 文脈 {T}", (microgpt.GPTConfig(V, C, H, L, T, norm),))
            for V, C, H, L, T in [(27, 16, 4, 1, 16), (50, 32, 4, 2, 8), (5, 12, 3, 4, 5)]]


def check_08_count_params(count_params):
    return compare("練習問題 2（count_params）", count_params, _08_size, _08_configs("rmsnorm"),
                   "08-2")


def adam_update_09(p, g, m, v, t, lr, beta1=0.85, beta2=0.99, eps=1e-8):
    """One Adam step at t = 1, 2, ... (m and v updated in place); returns the new p."""
    m[:] = beta1 * m + (1 - beta1) * g
    v[:] = beta2 * v + (1 - beta2) * g ** 2
    return p - lr * (m / (1 - beta1 ** t)) / ((v / (1 - beta2 ** t)) ** 0.5 + eps)


def check_09_adam(adam_update):
    adam_update = _returning(adam_update)

    def run(update, g, n):
        p, m, v = np.linspace(-1, 1, g.size), np.zeros(g.size), np.zeros(g.size)
        for t in range(1, n + 1):
            p = update(p.copy(), g * (-1) ** t, m, v, t, 0.01)
        return p, m, v

    def microgpt_update(p, g, m, v, t, lr):
        microgpt.adam_step(p, g, m, v, t - 1, np.inf, lr)   # num_steps inf: lr is not decayed
        return p

    g = np.array([1e-3, -2.0, 0.0, 5000.0, 1e-12])
    return compare("組み立て：Adam（p, m, v を並べたもの）",
                   _flat(lambda g, n: run(adam_update, g, n)),
                   _flat(lambda g, n: run(microgpt_update, g, n), ["p", "m", "v"]),
                   [(f"{n} ステップ", (g, n)) for n in (1, 2, 1000)], "09-3")


def check_09_bigram_loss(bigram_loss):
    r, points = np.random.default_rng(2207), []
    for n in (3, 6):
        docs = [[[n] + r.integers(0, n, r.integers(1, 9)).tolist() + [n] for _ in range(k)]
                for k in (40, 15)]
        points.append((f"語彙 {n + 1}", (*docs, n + 1)))
    return compare("練習問題 1（bigram_loss）", bigram_loss, lambda tr, va, V: microgpt.baselines(
        tr, va, microgpt.GPTConfig(V))["bigram"], points, "09-1")


def check_09_first_step(adam_first_step):
    g, z = np.array([3.0, -1e-3, 1e-7, -1e-9, 0.0, 5000.0]), np.zeros(6)
    return compare("練習問題 2（Adam の最初の一歩）", adam_first_step,
                   lambda g, lr: adam_update_09(z, g, z.copy(), z.copy(), 1, lr),
                   [("lr = 0.01", (g, 0.01)), ("lr = 0.5", (g, 0.5))], "09-2")


def check_10_sphere_extra(sphere_extra):
    return compare("練習問題 1（球面モードで増えるパラメータ）", sphere_extra,
                   lambda cfg: _08_size(cfg) - _08_size(cfg, "rmsnorm"), _08_configs("sphere"),
                   "10-1")


def check_10_temperature_probs(temperature_probs):
    r = np.random.default_rng(2205)
    points = [(f"T = {T}", (r.normal(0, 2, 27), T)) for T in (0.25, 1.0, 2.0)]
    points += [("ロジット 1000、T = 0.1", (np.array([1000.0, 999.0, 990.0, -1000.0]), 0.1)),
               ("同じロジット", (np.array([3.0, 3.0, 3.0]), 0.7))]
    return compare("練習問題 2（temperature_probs）", lambda z, T: temperature_probs(list(z), T),
                   lambda z, T: utils.softmax_np(z / T), points, "10-2", atol=1e-15)


# ============================= 06, 08, 10: exp, log, ** for notebook 01's Value; 10 §3

def _one_node(name, key, Value, op, f, points):
    """The learner's op(Value(x), *k) as one node: [data, local gradient] against
    [f(x, *k), the central difference (f(x + h) - f(x - h)) / 2h], h = 1e-6 |x| (1e-6
    at 0). Its error is far below rtol = 1e-7 at these points: "close" is right, and
    the gradient is never "exact"."""
    op = _returning(op)

    def learner(x, *k):
        v = Value(x)
        out = op(v, *k)
        if list(out._children) != [v]:
            raise NotAnAnswer("1つのノード（子は a だけ）にしてください")
        return [out.data, *out._local_grads]

    def reference(x, *k):
        h = 1e-6 * (abs(x) or 1.0)
        return [f(x, *k), (f(x + h, *k) - f(x - h, *k)) / (2 * h)]
    print("比べる数：[値, 局所勾配]。正しい値は math の関数と、その中心差分（数値微分）")
    return compare(name, learner, reference, points, key, rtol=1e-7)


def check_06_exp(Value, exp):
    return _one_node("組み立て：exp", "06-3", Value, exp, math.exp,
                     [(f"x = {x:g}", (x,)) for x in (1.0, -2.5, 0.0, 50.0)])


def check_08_log(Value, log):
    return _one_node("組み立て：log", "08-3", Value, log, math.log,
                     [(f"x = {x:g}", (x,)) for x in (1.0, 0.5, 1e-3, 1e6)])


def check_10_power(Value, power):
    return _one_node("組み立て：power", "10-3", Value, power, lambda x, k: x ** k,
                     [("2 ** 3", (2.0, 3)), ("12.5 ** -0.5（rmsnorm の例）", (12.5, -0.5)),
                      ("1e-5 ** -0.5（ゼロベクトルの rmsnorm）", (1e-5, -0.5)),
                      ("4 ** -1（割り算 a / b = a · b ** -1）", (4.0, -1))])


def value_01():
    """A fresh class as notebook 01's Value, its pieces as worked_solutions.md writes
    them (01-1 to 01-5, a recursive topological order): 10 §3 runs on it where the
    learner's own is not pasted."""
    class Value:
        def __init__(self, data, children=(), local_grads=(), op=""):
            self.data, self.grad = data, 0.0
            self._children, self._local_grads, self._op = children, local_grads, op

        def __add__(self, other):
            other = other if isinstance(other, Value) else Value(other)
            return Value(self.data + other.data, (self, other), (1.0, 1.0), "+")

        def __mul__(self, other):
            other = other if isinstance(other, Value) else Value(other)
            local_grads = (other.data, self.data)
            return Value(self.data * other.data, (self, other), local_grads, "*")

        __radd__, __rmul__ = __add__, __mul__

        def backward(self):
            order, visited = [], set()

            def visit(v):
                if v not in visited:
                    visited.add(v)
                    for child in v._children:
                        visit(child)
                    order.append(v)
            visit(self)
            self.grad = 1.0
            for node in reversed(order):
                for child, local_grad in zip(node._children, node._local_grads):
                    child.grad += local_grad * node.grad
    return Value


def compare_on_values_10(Value, linear, softmax, rmsnorm):
    """10 §3: the learner's three functions on their Value against the chapter's on
    value.py's, as [L, dL/d(each input)] for L = sum_i c_i f(...)_i (weighted: softmax's
    outputs sum to 1)."""
    def run(V, fn, args):
        def values(a):
            return [values(t) for t in a] if isinstance(a, list) else V(float(a))

        def leaves(a):
            return [v for t in a for v in leaves(t)] if isinstance(a, list) else [a]
        inputs = [values(a) for a in args]
        loss = sum(c * y for c, y in zip((0.5, -2.0, 3.0, 1.5), fn(*inputs)))
        loss.backward()
        return [loss.data] + [v.grad for v in leaves(inputs)]
    mine = {"linear": linear, "softmax": softmax, "rmsnorm": rmsnorm}
    chapter = {name: getattr(utils, name) for name in mine}
    w = [[1, 2, 3], [-0.5, 0.25, 4]]
    points = [("linear：入力3個・出力2個", ("linear", ([0.5, -1, 2], w))),
              ("softmax：±1000", ("softmax", ([1000, 999, 990, -1000],))),
              ("rmsnorm：章の例 [3, 4]", ("rmsnorm", ([3, 4],))),
              ("rmsnorm：ゼロベクトル", ("rmsnorm", ([0, 0, 0],)))]
    print("比べる数：[L の値, L の各入力での勾配]（L は出力の重みつきの和）")
    return compare("自分の Value の上の3つの関数と、value.py の上の章の関数",
                   lambda name, args: run(Value, mine[name], args),
                   lambda name, args: run(value.Value, chapter[name], args), points)


# The worked solutions of 01-6, 06-3, 08-3 and 10-3, on whichever Value class a is of.
def relu_01(a):
    return type(a)(max(a.data, 0.0), (a,), (1.0 if a.data > 0 else 0.0,), "relu")


def exp_06(a):
    e = math.exp(a.data)
    return type(a)(e, (a,), (e,), "exp")


def log_08(a):
    return type(a)(math.log(a.data), (a,), (1 / a.data,), "log")


def power_10(a, k):
    return type(a)(a.data ** k, (a,), (k * a.data ** (k - 1),), f"**{k}")


# ================================================= 11-17 lecture 3 (sphere, vMF, nGPT)

def sphere_points(rng, d, around=0.0, spread=1.0):
    """Norms 1, 4, 3e-7, both sides of the clamp's kink at eps = 1e-12, far below."""
    points = []
    for norm in (1.0, 4.0, 3e-7, 1e-12 * (1 + 1e-9), 1e-12 * (1 - 1e-9), 2e-13):
        u = around + spread * rng.standard_normal(d)
        points.append((f"||x|| = {norm:.9e}", norm * u / np.sqrt((u * u).sum())))
    return points


def check_11_safe_normalize(safe_normalize, safe_normalize_backward):
    """y = x / max(||x||, eps) and its dx, against sphere.l2_normalize_np(_backward)."""
    rng = np.random.default_rng(402)
    points = [(label, (x, rng.standard_normal(5))) for label, x in sphere_points(rng, 5)]
    forward, backward = sphere.l2_normalize_np, sphere.l2_normalize_np_backward
    safe_normalize, safe_normalize_backward = map(_returning, (safe_normalize,
                                                               safe_normalize_backward))
    return _scaled("練習問題（safe_normalize：y と dx を並べたもの）",
                   lambda x, g: (safe_normalize(x.copy()), safe_normalize_backward(g, x.copy())),
                   lambda x, g: (forward(x), backward(g, x)), points, "11-1", names=["y", "dx"])


def adam_retract_step_12(w, grad, m, v, t, lr, adam_update=adam_update_09):
    """An Adam step on the flat w (m, v updated in place), then each row to length 1."""
    w_new = adam_update(w.ravel(), grad.ravel(), m, v, t, lr).reshape(w.shape)
    return sphere.normalize_matrix(w_new, axis=1)


def check_12_adam_retract(adam_retract_step):
    """Steps of the learner's Adam with retraction against microgpt.adam_step +
    normalize_matrix: rows on the sphere or off it, a row whose gradient is 0, gradients
    from 1e-12 to 5000."""
    adam_retract_step = _returning(adam_retract_step)

    def run(step, w0, grads):
        w, m, v = w0.copy(), np.zeros(w0.size), np.zeros(w0.size)
        for t, g in enumerate(grads, start=1):
            w = step(w.copy(), g.copy(), m, v, t, 0.05)
        return w, m, v

    def reference(w, grad, m, v, t, lr):
        flat = w.ravel().copy()
        microgpt.adam_step(flat, grad.ravel(), m, v, t - 1, np.inf, lr)  # inf: lr not decayed
        return sphere.normalize_matrix(flat.reshape(w.shape), axis=1)

    rng, points = np.random.default_rng(1202), []
    for label, n, row_norm in (("1 ステップ", 1, 1.0), ("2 ステップ", 2, 1.0),
                               ("300 ステップ", 300, 1.0), ("行の長さ 3 から 1 ステップ", 1, 3.0)):
        w0 = row_norm * sphere.normalize_matrix(rng.standard_normal((4, 6)), axis=1)
        grads = rng.standard_normal((n, 4, 6)) * np.array([1e-12, 1.0, 5000.0, 0.0])[:, None]
        points.append((label, (w0, grads)))
    return compare("組み立て：Adam＋リトラクション（W, m, v を並べたもの）",
                   _flat(lambda w0, gs: run(adam_retract_step, w0, gs)),
                   _flat(lambda w0, gs: run(reference, w0, gs), ["W", "m", "v"]),
                   points, "12-1")


def _sphere_steps_points(rng):
    """(x, g, lr): g with a radial part, purely radial, purely tangent; lr 1e-3 to 2."""
    points = []
    for d, lr in ((3, 0.05), (10, 1e-3), (10, 2.0)):
        x = sphere.l2_normalize_np(rng.standard_normal(d))
        g = rng.standard_normal(d)
        points += [(f"d = {d}, η = {lr:g}, {kind}", (x, gk, lr)) for kind, gk in (
            ("半径方向の成分あり", g), ("半径方向だけ", -3.0 * x),
            ("接ベクトル", sphere.tangent_project(x, g)))]
    return points


def check_14_sphere_steps(riemannian_step, projected_step):
    """Both steps on the sphere, against sphere's riemannian_ and projected_sgd_step."""
    riemannian_step, projected_step = _returning(riemannian_step), _returning(projected_step)
    return compare("組み立て：リーマン勾配の1歩と射影勾配法の1歩を並べたもの",
                   _flat(lambda x, g, lr: (riemannian_step(x.copy(), g.copy(), lr),
                                           projected_step(x.copy(), g.copy(), lr))),
                   _flat(lambda x, g, lr: (sphere.riemannian_sgd_step(x, g, lr),
                                           sphere.projected_sgd_step(x, g, lr)),
                         ["リーマン", "射影"]),
                   _sphere_steps_points(np.random.default_rng(1401)), "14-1", 1e-12, 1e-15)


def check_14_estimate_kappa(estimate_kappa):
    """(mu_hat, kappa_hat) of vMF samples against sphere.vmf_estimate_kappa: d = 3 and
    16, kappa from 0.1 (R near 0) to 1e4 (R near 1, where 1 - R^2 cancels), and two
    samples."""
    rng, points = np.random.default_rng(1402), []
    for d, kappa, n in ((3, 0.1, 50), (3, 5.0, 1000), (16, 40.0, 500), (3, 1e4, 200), (3, 2.0, 2)):
        sample = sphere.vmf_sample(sphere.l2_normalize_np(rng.standard_normal(d)), kappa, n, rng)
        points.append((f"d = {d}, κ = {kappa:g}, n = {n}", (sample,)))
    return _scaled("組み立て：κ の推定（μ̂ と κ̂ を並べたもの）",
                   lambda s: estimate_kappa(s.copy()), sphere.vmf_estimate_kappa,
                   points, "14-2", names=["μ̂", "κ̂"])


def heavy_ball_step_15(x, m, g, lr, beta, transport):
    """Heavy-ball on the sphere: m <- beta m + g, x <- R(x - lr m); with transport, m is
    then projected onto the tangent space at the new x. Returns (x, m)."""
    m = beta * m + g
    x = sphere.retract(x - lr * m)
    return x, (sphere.tangent_project(x, m) if transport else m)


def check_15_heavy_ball(heavy_ball_step):
    """(x, m) after one step, with and without transport, against heavy_ball_step_15."""
    rng, points = np.random.default_rng(1501), []
    for d, lr, beta in ((3, 0.02, 0.9), (10, 0.5, 0.0), (10, 0.02, 0.99)):
        x = sphere.l2_normalize_np(rng.standard_normal(d))
        m, g = rng.standard_normal(d), rng.standard_normal(d)
        for transport in (False, True):
            points.append((f"d = {d}, η = {lr}, β = {beta}, 移送{'あり' if transport else 'なし'}",
                           (x, m, g, lr, beta, transport)))
    return compare("組み立て：重い球の1歩（x と m を並べたもの）",
                   _flat(lambda *a: heavy_ball_step(*_copies(a))),
                   _flat(lambda *a: heavy_ball_step_15(*_copies(a)), ["x", "m"]),
                   points, "15-1", 1e-12, 1e-15)


def check_13_vmf_s2(log_c3, mean_cos_s2):
    """(log C_3, E[mu . x]) on S^2, kappa 1e-6 (cancels) to 1000 (sinh overflow)."""
    log_c3, mean_cos_s2 = _returning(log_c3), _returning(mean_cos_s2)
    points = [(f"κ = {k:g}", (k,)) for k in (1e-6, 1e-3, 5e-3, 9.9e-3, 0.0126, 0.02, 0.5, 3.0,
                                              40.0, 700.0, 1000.0)]  # the series band, both sides
    return compare("練習問題（log_c3 と mean_cos_s2 を並べたもの）",
                   lambda k: [float(log_c3(k)), float(mean_cos_s2(k))],
                   lambda k: [float(sphere.vmf_log_normalizer(3, k)),
                              float(sphere.vmf_mean_resultant_length(3, k))],
                   points, "13-1", 1e-12, 1e-14)


def check_16_readout_grad(readout_grad):
    """(dh, ds_z) of -log softmax(s_z * (lm_head @ Norm(h)))[target]; s_z 1-9, 1000."""
    def reference(h, lm_head, s_z, target):
        cos = lm_head @ sphere.l2_normalize_np(h)
        dlogits = utils.cross_entropy_np_backward((s_z * cos)[None, :], np.array([target]))[0]
        return sphere.l2_normalize_np_backward((s_z * dlogits) @ lm_head, h), dlogits * cos

    rng = np.random.default_rng(601)
    w = sphere.l2_normalize_np(rng.standard_normal((27, 16)))
    points = [(lb, (h, w, rng.uniform(1.0, 9.0, 27), int(rng.integers(27))))
              for lb, h in sphere_points(rng, 16)]
    points += [(f"s_z = 1000, {lb}", (h, w, np.full(27, 1000.0), 0))
               for lb, h in sphere_points(rng, 16, w[0], 0.05)[:3]]
    return _scaled("練習問題（readout_grad：dh と ds_z を並べたもの）",
                   readout_grad, reference, points, "16-1", names=["dh", "ds_z"])


def check_17_vmf_posterior_grad(vmf_posterior_grad):
    """d/dr log p(k | Norm(r)) in a vMF mixture, one shared kappa, kappas up to 1000."""
    def reference(r, mus, kappas, priors, k):  # by the scalar engine's backward()
        log_const = np.log(priors) + sphere.vmf_log_normalizer(len(r), kappas)
        rs = [value.Value(float(v)) for v in r]
        xs = sphere.l2_normalize(rs)
        z = [float(c) + float(kap) * sum(float(m) * x for m, x in zip(mu, xs))
             for c, kap, mu in zip(log_const, kappas, mus)]
        top = max(zj.data for zj in z)
        log_p = z[k] - (sum((zj - top).exp() for zj in z).log() + top)
        log_p.backward()
        return np.array([v.grad for v in rs])

    rng = np.random.default_rng(404)
    points = []
    for d, kappas, priors, spread in ((3, [5.0] * 4, [0.25] * 4, 0.3),
                                      (3, [1.0, 4.0, 10.0, 30.0], [0.1, 0.2, 0.3, 0.4], 0.3),
                                      (16, [1000.0, 600.0, 200.0], [0.2, 0.3, 0.5], 0.02)):
        mus = sphere.l2_normalize_np(rng.standard_normal((len(kappas), d)))
        points += [(f"d = {d}, κ ≤ {max(kappas):g}, {lb}, k = {k}",
                    (r, mus, np.array(kappas), np.array(priors), k))
                   for lb, r in sphere_points(rng, d, mus[0], spread)[:5]
                   for k in range(len(kappas))]
    return _scaled("練習問題（vmf_posterior_grad）",
                   vmf_posterior_grad, reference,
                   points, "17-1", lambda r, m, ka, p, k: ka.max() / max(np.sqrt(r @ r), 1e-12))
