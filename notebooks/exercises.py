"""exercises.py -- the checks of the notebooks: each build step and each 練習問題 (exercise).

A check runs the learner's code at telling points (a kink, saturation, logits of +-5000, entries of
very different sizes) and prints a table in the manner of Karpathy's cmp(): exact, close (within a
tolerance every correct form meets) and the largest difference. It returns True (正解), False
(不正解) or None (未回答: the code still raises NotImplementedError, as in the executed notebooks).
The project's own functions compute every answer, so calling them passes: the point is to derive
it. Below every check, the worked solution (worked_solutions.md) is shown folded, for a learner who
is stuck. tests/test_exercises_NN.py shows each check telling right from wrong.
"""
import math
import sys
import unicodedata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # value.py, utils.py, ... live at the repo root
import utils  # noqa: E402
import value  # noqa: E402

UNANSWERED = "未回答（解答セルを埋めてから、このセルをもう一度実行してください）"


# ===================================================================== verdicts, tables, solutions


def verdict(name, judge, solution=None):
    """Run judge() (True = correct) and print one line: 正解, 不正解 (and why) or 未回答 (judge
    raised NotImplementedError: returns None). Another exception is 不正解, never a crash."""
    try:
        ok = judge()
    except NotImplementedError:
        print(f"{name}: {UNANSWERED}")
        ok = None
    except Exception as e:  # the learner's code failed: say how, keep the notebook running
        print(f"{name}: 不正解（{type(e).__name__}: {e}）")
        ok = False
    else:
        ok = bool(ok)
        print(f"{name}: {'正解' if ok else '不正解'}")
    show_solution(solution, ok)
    return ok


def show_solution(markdown, ok=True):
    """Display a worked solution as a folded <details> block in a notebook; nothing outside IPython.
    """
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:
        return
    if not markdown or get_ipython() is None:
        return
    summary = "解答例（自分の答えと比べてください）" if ok else "行き詰まったら：解答例"
    display(Markdown(f"<details><summary>{summary}</summary>\n\n{markdown.strip()}\n\n</details>"))


SOLUTIONS_FILE = Path(__file__).resolve().parent / "worked_solutions.md"


def solution(key):
    """The worked solution of exercise `key` ("10-1", ...) from worked_solutions.md (its "## key"
    section)."""
    text = SOLUTIONS_FILE.read_text(encoding="utf-8")
    start = text.index(f"\n## {key}\n") + len(key) + 5
    end = text.find("\n## ", start)
    return text[start:end if end >= 0 else len(text)].strip()


def compare(name, learner, reference, points, solution=None, rtol=1e-9, atol=1e-12):
    """Print a table of learner(*args) against reference(*args) for each (label, args) in points:
    exact (bit for bit), close (|got - want| <= atol + rtol |want|), the largest difference.

    True if every point is close, False if not, None while the learner's function raises
    NotImplementedError; another exception is that point's answer, never a crash.
    """
    rows, ok = [], True
    for label, args in points:
        want = np.asarray(reference(*args), dtype=float)
        try:
            got = np.asarray(learner(*args), dtype=float)
        except NotImplementedError:
            print(f"{name}: {UNANSWERED}")
            show_solution(solution, False)
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
    show_solution(solution, ok)
    return ok


def _columns(text):
    """How many terminal columns text takes: a full-width character (kana, kanji) takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text, width):
    """text padded with spaces to `width` columns, counting full-width characters as two."""
    return text + " " * max(0, width - _columns(text))


def answered(answer):
    """Raise NotImplementedError for an answer that is still the placeholder None."""
    if answer is None:
        raise NotImplementedError
    return answer


def _close(got, want, rtol, atol, what):
    """True if got (array-like) has want's shape and |got - want| <= atol + rtol |want| everywhere;
    else print where it differs and return False."""
    want = np.asarray(want, dtype=float)
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        print(f"  {what}: 答えが数の配列ではありません（{type(got).__name__}）")
        return False
    if got.shape != want.shape:
        print(f"  {what}: 形が {got.shape}（正しくは {want.shape}）")
        return False
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(got - want) <= atol + rtol * np.abs(want))
    if bad.any():
        k = tuple(int(i) for i in np.argwhere(bad)[0]) if want.ndim else ()
        print(f"  {what}: 添字 {k} であなたの答えは {got[k]:.15g}、正しくは {want[k]:.15g}")
        return False
    return True


# ======================================================= 10/11 autograd: the learner's own Value


def _op(name, worked, Value, op, reference_op, points, **tolerances):
    """The learner's op on their own Value against value.py's: [data, local gradients]."""
    def node(make, V):
        return lambda *x: [(v := make(*map(V, x))).data, *v._local_grads]
    return compare(name, node(op, Value), node(reference_op, value.Value), points, worked,
                   **tolerances)


def check_10_add(Value, add):
    return _op("ステップ1（add）", solution("10-1"), Value, add, lambda a, b: a + b,
               [("2 + (-3)", (2.0, -3.0)), ("0.1 + 0.2", (0.1, 0.2)), ("1e16 + 1", (1e16, 1.0))])


def check_10_mul(Value, mul):
    return _op("ステップ2（mul）", solution("10-2"), Value, mul, lambda a, b: a * b,
               [("2 × (-3)", (2.0, -3.0)), ("1e200 × 1e-200", (1e200, 1e-200))])


def check_10_tanh(Value, tanh):  # at x = 20, 1 - t^2 = 0 and 1/cosh^2 = 1.7e-17: both right
    return _op("ステップ3（tanh）", solution("10-3"), Value, tanh, lambda a: a.tanh(),
               [("x = 0.5", (0.5,)), ("x = -2", (-2.0,)), ("x = 20（飽和）", (20.0,))])


def check_10_relu(Value, relu):
    return _op("練習問題 1（relu）", solution("10-6"), Value, relu, lambda a: a.relu(),
               [("x = 1.5", (1.5,)), ("x = -0.5", (-0.5,)),
                ("x = 1e-300（折れ点のすぐ上）", (1e-300,)),
                ("x = -1e-300（折れ点のすぐ下）", (-1e-300,))])


def check_10_sigmoid(Value, sigmoid):
    """One node, against value.py's backward() through 1/(1 + exp(-x)). atol 1e-15: at x = 30,
    s(1 - s) and e^-x/(1 + e^-x)^2 agree to 1e-16, not to a relative 1e-9."""
    def learner(x):
        s = sigmoid(v := Value(x))
        if list(s._children) != [v]:
            raise ValueError("1つのノード（子は v だけ）にしてください")
        return [s.data, s._local_grads[0]]

    def reference(x):
        (s := 1 / (1 + (-(v := value.Value(x))).exp())).backward()
        return [s.data, v.grad]
    points = [(f"x = {x:g}", (x,)) for x in (-3.0, 0.0, 2.5)] + [("x = 30（飽和）", (30.0,))]
    return compare("練習問題 2（sigmoid）", learner, reference, points, solution("10-7"),
                   atol=1e-15)


EXPRESSIONS_10 = [  # (label, leaf values, the expression as a function of its leaves)
    ("(a·b + c)·f", (2.0, -3.0, 10.0, -2.0), lambda a, b, c, f: (a * b + c) * f),
    ("a·a + 2·a", (3.0,), lambda a: a * a + 2 * a),
    ("tanh(x1·w1 + x2·w2 + b)", (2.0, 0.0, -3.0, 1.0, 6.8813735870195432),
     lambda x1, x2, w1, w2, b: (x1 * w1 + x2 * w2 + b).tanh()),
    ("d = a·b; tanh(d)·d + d·c", (0.7, -1.3, 0.4),
     lambda a, b, c: (lambda d: d.tanh() * d + d * c)(a * b))]


def grads_10(Value, run_backward, expression, xs):
    """[the root's data, then the leaves' grads] of expression(*leaves) after run_backward(root).
    """
    leaves = [Value(x) for x in xs]
    run_backward(root := expression(*leaves))
    return [root.data] + [v.grad for v in leaves]


def check_10_backward(Value, backward):
    return compare("ステップ5（backward）", lambda f, xs: grads_10(Value, backward, f, xs),
                   lambda f, xs: grads_10(value.Value, value.Value.backward, f, xs),
                   [(label, (f, xs)) for label, xs, f in EXPRESSIONS_10], solution("10-5"))


def _check_order(name, worked, topological_order, roots):
    """Compares [nodes listed, distinct nodes, children listed after a parent or not at all]."""
    def numbers(root):
        order, pos = list(topological_order(root)), {}
        for i, v in enumerate(order):
            pos.setdefault(id(v), i)
        late = sum(pos.get(id(c), math.inf) > pos[id(v)] for v in order for c in v._children)
        return [len(order), len(pos), late]
    print("比べる数：[並べたノードの数, 異なるノードの数, 親より後に来た（または来ない）子の数]")
    return compare(name, numbers, lambda root: [len(value.topological_order(root))] * 2 + [0],
                   roots, worked)


def _graphs_10():
    """EXPRESSIONS_10 built from value.Value: a node used twice, a diamond."""
    return [(label, (f(*map(value.Value, xs)),)) for label, xs, f in EXPRESSIONS_10]


def check_10_topological_order(topological_order):
    return _check_order("ステップ4（topological_order）", solution("10-4"), topological_order,
                        _graphs_10())


def check_11_topological_order(my_topological_order):
    """On a chain three times as long as the recursion limit, too."""
    chain = value.Value(1.0)
    for _ in range(n := 3 * sys.getrecursionlimit()):
        chain = chain * 0.999
    return _check_order("練習問題 2（my_topological_order）", solution("11-2"),
                        my_topological_order, _graphs_10()[2:] + [(f"{n} 段の鎖", (chain,))])


def check_11_grad_a(grad_a):
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
    return compare("練習問題 1（grad_a）", grad_a, reference, points, solution("11-1"))


# ========================================================== 20/21 chapter 21: the three functions


def _check_20(name, worked, learner, reference, points):
    """learner and reference take and return lists of value.Values; points hold float lists."""
    def on_values(fn):
        def values(a):
            return [values(t) for t in a] if isinstance(a, list) else value.Value(float(a))
        return lambda *args: [v.data for v in fn(*map(values, args))]
    return compare(name, on_values(learner), on_values(reference), points, worked)


LOGITS_20 = [("章の例 [1, 2]", ([1, 2],)), ("ランダムな4個", ([0.3, -1.2, 2.2, 0.9],)),
             ("±1000", ([1000, 999, 990, -1000],)), ("±5000", ([5000, 4999, -5000],))]


def check_20_linear(linear):
    return _check_20("ステップ1（linear）", solution("20-1"), linear, utils.linear,
                     [("章の例 w = [[3, 4]], x = [1, 2]", ([1, 2], [[3, 4]])),
                      ("入力3個・出力2個", ([0.5, -1, 2], [[1, 2, 3], [-0.5, 0.25, 4]])),
                      ("入力1個・出力3個", ([2], [[1], [-3], [0.5]]))])


def check_20_softmax(softmax):
    return _check_20("ステップ2（softmax）", solution("20-2"), softmax, utils.softmax, LOGITS_20)


def check_20_rmsnorm(rmsnorm):
    return _check_20("ステップ3（rmsnorm）", solution("20-3"), rmsnorm, utils.rmsnorm,
                     [("章の例 [3, 4]", ([3, 4],)), ("ランダムな4個", ([0.3, -1.2, 2.2, 0.9],)),
                      ("ゼロベクトル", ([0, 0, 0],)), ("小さな値", ([1e-3, -2e-3],))])


def check_20_log_softmax(log_softmax):
    def reference(z):
        lse = sum((v - (m := max(v.data for v in z))).exp() for v in z).log()
        return [v - m - lse for v in z]
    return _check_20("練習問題 1（log_softmax）", solution("20-4"), log_softmax, reference,
                     LOGITS_20)


def layernorm_values(xs, eps=1e-5):
    """LayerNorm (no gain, no bias) on a list of Values: (x - mean) / sqrt(var + eps)."""
    centered = [v - sum(xs) / len(xs) for v in xs]
    return [c * (sum(c * c for c in centered) / len(xs) + eps) ** -0.5 for c in centered]


def check_20_layernorm(layernorm):
    return _check_20("練習問題 2（layernorm）", solution("20-5"), layernorm, layernorm_values,
                     [("[1, 2, 3, 4]", ([1, 2, 3, 4],)), ("100 を足す", ([101, 102, 103, 104],)),
                      ("ほぼ一定の行", ([3, 3 + 1e-4, 3 - 1e-4, 3],))])


def backward_points_21():
    """(label, (dy, x)): a random row, a batch, entries 16 orders of magnitude apart, nearly
    constant rows."""
    rng = np.random.default_rng(2101)
    mixed = np.array([[1e8, -3e-8, 2.0, 5e-9, -7e7], [-4e-9, 6e7, 1e-8, -2.5e8, 3.0]])
    xs = [("ランダムな行", rng.normal(size=5)), ("バッチ (2, 3, 4)", rng.normal(size=(2, 3, 4))),
          ("16桁違う成分の並ぶ行", mixed), ("ほぼ一定の行", 3.0 + 1e-4 * rng.normal(size=(2, 5)))]
    return [(label, (rng.normal(size=x.shape), x)) for label, x in xs]


def check_21_linear_backward(linear_backward):
    """(dx, dw) of y = x @ w.T; over a batch, dw sums over the leading axes."""
    w = np.arange(12.0).reshape(3, 4) / 7 - 0.8
    points = [("章の例 dy = [1]", (np.ones(1), np.array([1.0, 2.0]), np.array([[3.0, 4.0]])))]
    points += [(label, (dy[..., :3], x[..., :4], w)) for label, (dy, x) in backward_points_21()[:2]]
    return compare("ステップ1（linear_backward）",
                   lambda *a: np.concatenate([np.ravel(g) for g in linear_backward(*a)]),
                   lambda *a: np.concatenate([np.ravel(g) for g in utils.linear_np_backward(*a)]),
                   points, solution("21-1"))


def check_21_softmax_backward(softmax_backward):
    """dz from dp and p = softmax(z), logits of +-5000 too (p holds exact 0s and a 1)."""
    points = [(label, (np.arange(len(z)) % 2 * 1.0, utils.softmax_np(np.array(z, float))))
              for label, (z,) in LOGITS_20]
    return compare("ステップ2（softmax_backward）", softmax_backward, utils.softmax_np_backward,
                   points, solution("21-2"))


def check_21_rmsnorm_backward(rmsnorm_backward):
    return compare("ステップ3（rmsnorm_backward）", rmsnorm_backward, utils.rmsnorm_np_backward,
                   backward_points_21(), solution("21-3"), atol=1e-20)


def check_21_log_softmax_jacobian(log_softmax_jacobian):
    """J[i, j] = d log p_i / d z_j, against the rows of -cross_entropy_np_backward."""
    def reference(z):
        return -np.stack([utils.cross_entropy_np_backward(z[None, :], np.array([i]))[0]
                          for i in range(z.size)])
    return compare("練習問題 1（log_softmax_jacobian）", log_softmax_jacobian, reference,
                   [(label, (np.array(z, float),)) for label, (z,) in LOGITS_20], solution("21-4"))


def check_21_layernorm_backward(layernorm_backward):
    """Against value.py's backward() of sum(dy * layernorm_values(x)), row by row."""
    def reference(dy, x):
        dx = np.zeros(x.shape)
        for i in np.ndindex(*x.shape[:-1]):
            xs = [value.Value(float(v)) for v in x[i]]
            sum(float(g) * y for g, y in zip(dy[i], layernorm_values(xs))).backward()
            dx[i] = [v.grad for v in xs]
        return dx
    return compare("練習問題 2（layernorm_backward）", layernorm_backward, reference,
                   backward_points_21(), solution("21-5"), atol=1e-20)


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
