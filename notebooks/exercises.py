"""exercises.py -- the check cells of the notebooks' 練習問題 (exercises), in one place.

Each notebook ends with exercises the learner solves in code. A check cell calls one of the
`check_*` functions below with the learner's answer; it prints 正解 (correct), 不正解 (wrong, with
the reason) or 未回答 (not answered yet) and returns True, False or None. An unanswered exercise is a
function that still raises NotImplementedError (or an answer that is still None): the notebooks are
executed unsolved in CI, so every check must run clean then.

The checks compare with the project's own functions or with finite differences (value.gradient_check),
never with a hard-coded number the learner cannot see. Where calling the project's own function would be the
answer copied (Value.backward for "write backward()", init_params for "count the parameters"), the check
refuses it while the learner's code runs (`refusing`): the call raises, and the verdict is 不正解. Reference
solutions live in tests/test_exercises_NN.py (one file per notebook), which prove every check can say 正解 and
that a wrong or copied answer gets 不正解.
"""
import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # value.py, utils.py, ... live at the repo root


def verdict(name, judge):
    """Run judge() (True = correct) and print one line: 正解, 不正解 (and why) or 未回答.

    judge may raise NotImplementedError (the solution cell is not filled in yet): 未回答, returns None.
    Any other exception in the learner's code is 不正解 with the error, never a crash of the notebook.
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
    return bool(ok)


@contextlib.contextmanager
def refusing(*functions, why):
    """While the block runs, each of the project's functions in `functions` raises RuntimeError(why) when called.

    The function object itself is changed (its __code__), not a module attribute: a learner who imported the
    function by name (`from value import topological_order`) reaches the same object. Restored on exit.
    """
    namespace = {}
    exec(f"def refused(*args, **kwargs):\n    raise RuntimeError({why!r})", namespace)
    saved = [(f, f.__code__) for f in functions]
    try:
        for f in functions:
            f.__code__ = namespace["refused"].__code__
        yield
    finally:
        for f, code in saved:
            f.__code__ = code


def answered(answer):
    """Raise NotImplementedError for an answer that is still the placeholder None."""
    if answer is None:
        raise NotImplementedError
    return answer


# ============================================================================ 01 autograd traced


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
        nodes.append(a + b if op == "+" else a * b if op == "*" else a - b if op == "-" else (a * b).tanh())
    root = sum(nodes[n_leaves:])  # every op node reaches the root
    return nodes, root


def _uses_twice_01():
    """Section 5's y = a*a + 2*a (a = 3): three edges leave a."""
    from value import Value

    a = Value(3.0)
    return [a], a * a + 2 * a


def check_01_grad_a(grad_a):
    """練習問題 1: grad_a(a, b) (floats) must be dL/da of L = tanh(a*b) * a, compared with backward().

    Value.backward and tracing.trace_backward are refused while grad_a runs: the exercise prints the three lines
    that compute a.grad with the engine, and pasting them into grad_a would copy the engine's answer.
    """
    import random

    from tracing import trace_backward
    from value import Value

    def judge():
        rng = random.Random(101)
        for _ in range(6):
            a0, b0 = rng.uniform(-2, 2), rng.uniform(-2, 2)
            a, b = Value(a0), Value(b0)
            ((a * b).tanh() * a).backward()
            with refusing(Value.backward, trace_backward,
                          why="backward() も trace_backward も使わずに、手で導いた式で書いてください"):
                got = float(grad_a(a0, b0))
            if not abs(got - a.grad) <= 1e-9 * max(1.0, abs(a.grad)):
                print(f"  a = {a0:.4f}, b = {b0:.4f}: your dL/da = {got:.6g}, backward() gives {a.grad:.6g}")
                return False
        return True

    return verdict("練習問題 1（grad_a）", judge)


def check_01_sigmoid(sigmoid):
    """練習問題 2: sigmoid(v) must be one node (child v) with data 1/(1+e^-x) and a local gradient that
    passes value.gradient_check in expressions at several points."""
    import math
    import random

    from value import Value, gradient_check

    def judge():
        for x in (-3.0, -0.7, 0.0, 0.4, 2.5):
            v = Value(x)
            out = sigmoid(v)
            if not isinstance(out, Value):
                print(f"  sigmoid(Value({x})) returned {out!r}, not a Value")
                return False
            want = 1 / (1 + math.exp(-x))
            if not abs(out.data - want) <= 1e-12:
                print(f"  sigmoid(Value({x})).data = {out.data!r}, but 1/(1+e^-x) = {want!r}")
                return False
            if len(out._children) != 1 or out._children[0] is not v:
                print(f"  sigmoid(v) must be one node whose only child is v (its children: {out._children!r})")
                return False
        rng = random.Random(102)
        for _ in range(4):
            checks = [(lambda xs: sigmoid(xs[0]), [rng.uniform(-3, 3)]),
                      (lambda xs: sigmoid(xs[0] * xs[1] + xs[2]) * xs[1], [rng.uniform(-2, 2) for _ in range(3)])]
            for f, point in checks:
                if not gradient_check(f, point, quiet=True):
                    gradient_check(f, point)  # show the table: which input disagrees
                    return False
        return True

    return verdict("練習問題 2（sigmoid）", judge)


def check_01_backward(my_backward):
    """練習問題 3: my_backward(root) on a fresh graph must give every node the grad that Value.backward gives.

    Value.backward and tracing.trace_backward (which runs the same loop) are refused while my_backward runs:
    `lambda root: root.backward()` copies the engine's answer instead of writing the loop.
    """
    from tracing import trace_backward
    from value import Value, topological_order

    def judge():
        cases = [_uses_twice_01] + [lambda s=s: _graph_01(s) for s in range(103, 109)]
        for build in cases:
            _, root = build()
            _, ref_root = build()  # the same graph again, for the reference
            with refusing(Value.backward, trace_backward,
                          why="root.backward() も trace_backward も使わずに、ループを自分で書いてください"):
                my_backward(root)
            ref_root.backward()
            mine, ref = topological_order(root), topological_order(ref_root)
            for i, (u, w) in enumerate(zip(mine, ref)):
                if not abs(u.grad - w.grad) <= 1e-9 * max(1.0, abs(w.grad)):
                    kind = "leaf" if not w._children else f"'{w._op}' node"
                    print(f"  a graph of {len(ref)} nodes: {kind} number {i} (topological order) has grad "
                          f"{u.grad:.6g}, backward() gives {w.grad:.6g}")
                    return False
        return True

    return verdict("練習問題 3（my_backward）", judge)


def check_01_topological_order(my_topological_order):
    """練習問題 4: my_topological_order(root) must list every reachable node once, children before parents,
    on random graphs and on a chain three times as long as the recursion limit. value.topological_order (and
    Value.backward, which calls it) is refused while the learner's function runs."""
    from value import Value, topological_order

    def valid(order, root):
        want = topological_order(root)
        if len(order) != len({id(v) for v in order}):
            print("  a node appears more than once")
            return False
        if {id(v) for v in order} != {id(v) for v in want}:
            print(f"  the list has {len(order)} nodes; the graph has {len(want)} (reachable from root)")
            return False
        pos = {id(v): i for i, v in enumerate(order)}
        for v in order:
            if any(pos[id(c)] > pos[id(v)] for c in v._children):
                print("  a node comes before one of its children")
                return False
        return True

    def answer(root):
        with refusing(topological_order, why="この問題では value.topological_order を使わずに書いてください"):
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

    return verdict("練習問題 4（my_topological_order）", judge)


# ============================================================================ 02 chapter 21
# Exercises of notebook 02: the Jacobian of log-softmax as a matrix, rmsnorm's backward, layernorm's backward.
# numpy, utils and value are imported inside the functions (this file's imports stay at its top).
# All three ask for a derivative by hand, so while the learner's function runs, the engine's backward() and the
# project's backward functions that would hand over the answer are refused (_02_REFUSED_WHY).

_02_REFUSED_WHY = "プロジェクトの逆伝播（backward() や *_backward）を使わずに、手で導いた式で書いてください"


def _02_layernorm_np(x, eps=1e-5):
    """Notebook 02's LayerNorm (no gain, no bias): (x - mean) / sqrt(var + eps) over the last axis."""
    import numpy as np

    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + eps)


def _02_answer_array(fn, *args, shape, refused=()):
    """Call the learner's fn on copies of args (so it cannot edit the judge's arrays); the answer as a float array.

    The functions in `refused` raise while fn runs. Prints why and returns None when the answer does not have
    the expected shape.
    """
    import numpy as np

    with refusing(*refused, why=_02_REFUSED_WHY):
        out = np.asarray(fn(*(np.array(a, copy=True) for a in args)), dtype=float)
    if out.shape != shape:
        print(f"  the answer has shape {out.shape}, expected {shape}")
        return None
    return out


def check_02_log_softmax_jacobian(log_softmax_jacobian):
    """Exercise 02-1: log_softmax_jacobian(z) -> the (n, n) matrix J[i, j] = d log p_i / d z_j for p = softmax(z)
    (= delta_ij - p_j). The notebook shows the Jacobian of softmax itself (diag(p) - p p^T), not of its log.

    Judged against the project's cross-entropy backward: -log p_i is the loss for the target i, and
    utils.cross_entropy_np_backward(z, i) = p - e_i is minus the i-th row of J. Includes logits of +-1000 (the
    softmax must subtract the max first). While the learner's function runs, the backward functions that would
    give the rows directly (utils.softmax_np_backward, utils.cross_entropy_np_backward,
    numpy_engine.cross_entropy_fused) and Value.backward (the notebook's jacobian() helper) are refused.
    """
    import numpy as np

    import numpy_engine
    import utils
    from value import Value

    refused = (utils.softmax_np_backward, utils.cross_entropy_np_backward, numpy_engine.cross_entropy_fused,
               Value.backward)

    def judge():
        rng = np.random.default_rng(2102)
        cases = [rng.normal(scale=2.0, size=n) for n in (2, 3, 6)] + [np.array([1000.0, 999.0, 990.0, -1000.0])]
        for z in cases:
            n = z.size
            reference = -np.stack([utils.cross_entropy_np_backward(z[None, :], np.array([i]))[0] for i in range(n)])
            J = _02_answer_array(log_softmax_jacobian, z, shape=(n, n), refused=refused)
            if J is None:
                return False
            if not np.allclose(J, reference, rtol=1e-9, atol=1e-12):
                where = "logits of +-1000 (subtract the max before exp)" if np.abs(z).max() > 100 else f"n = {n}"
                print(f"  {where}: max |J - reference| = {np.abs(J - reference).max():.3g}")
                return False
        return True

    return verdict("練習問題 1（log-softmax のヤコビアン）", judge)


def check_02_rmsnorm_backward(rmsnorm_backward):
    """Exercise 02-2: rmsnorm_backward(dy, x) -> dx for y = rmsnorm(x) over the last axis (eps = 1e-5).

    Judged against the chapter's scalar rmsnorm: backward() of sum_i dy_i y_i, row by row. While the learner's
    function runs, utils.rmsnorm_np_backward, numpy_engine.rmsnorm_fused_backward and Value.backward are refused
    (each would compute the answer instead of the learner's formula).
    """
    import numpy as np

    import numpy_engine
    import utils
    from utils import rmsnorm
    from value import Value

    refused = (utils.rmsnorm_np_backward, numpy_engine.rmsnorm_fused_backward, Value.backward)

    def judge():
        rng = np.random.default_rng(2103)
        for shape in ((4,), (3, 5)):
            x, dy = rng.normal(size=shape), rng.normal(size=shape)
            reference = np.zeros(shape)
            for i in np.ndindex(*shape[:-1]):
                xs = [Value(float(v)) for v in x[i]]
                sum(float(g) * yj for g, yj in zip(dy[i], rmsnorm(xs))).backward()
                reference[i] = [v.grad for v in xs]
            dx = _02_answer_array(rmsnorm_backward, dy, x, shape=shape, refused=refused)
            if dx is None:
                return False
            if not np.allclose(dx, reference, rtol=1e-9, atol=1e-12):
                print(f"  x.shape {shape}: max |dx - backward()| = {np.abs(dx - reference).max():.3g}")
                return False
        return True

    return verdict("練習問題 2（RMSNorm の逆伝播）", judge)


def check_02_layernorm_backward(layernorm_backward):
    """Exercise 02-3: layernorm_backward(dy, x) -> dx for y = (x - mean) / sqrt(var + 1e-5) over the last axis.

    Judged with value.gradient_check: for each row, the learner's dx becomes the local gradients of one
    Value node holding the loss sum_i dy_i y_i, and backprop through that node is compared with central
    differences of the loss. On a mismatch the gradient_check table of that row is printed. Value.backward is
    refused while the learner's function runs (LayerNorm written with Values and backpropagated by the engine
    would be the engine's answer, not the learner's formula).
    """
    import numpy as np

    from value import Value, gradient_check

    def judge():
        rng = np.random.default_rng(2104)
        shape = (3, 5)
        x, dy = rng.normal(scale=2.0, size=shape), rng.normal(size=shape)
        dx = _02_answer_array(layernorm_backward, dy, x, shape=shape, refused=(Value.backward,))
        if dx is None:
            return False
        for r in range(shape[0]):
            def loss(vs, r=r):
                # only .data is used off the point being checked; at it, backward() uses the learner's dx
                value = float((dy[r] * _02_layernorm_np(np.array([v.data for v in vs]))).sum())
                return Value(value, tuple(vs), tuple(float(g) for g in dx[r]), "layernorm")

            if not gradient_check(loss, x[r].tolist(), quiet=True):
                print(f"  row {r} of x: your dx and the central differences disagree")
                gradient_check(loss, x[r].tolist())
                return False
        return True

    return verdict("練習問題 3（LayerNorm の逆伝播）", judge)


# ============================================================================ 03 chapter 22

# Imports are local to each check, so this section does not touch the module's shared header.

def _show_mismatch_03(label, got, want):
    """Print one line that tells the learner where their answer differs (before verdict prints 不正解)."""
    print(f"  {label}: 期待される値 {want}、あなたの答え {got}")


def check_03_causal_attention(causal_attention):
    """Exercise 03-1: causal multi-head attention for every position at once, as forward_np computes it:
    causal_attention(q, k, v, n_head) with q, k, v of shape (T, C) (row t = position t) returns (T, C), the heads'
    outputs side by side (attn_wo's input). Row t, head h: softmax over s <= t of q_t,h . k_s,h / sqrt(head_dim),
    then the weighted sum of v_s,h. The notebook steps through one head at one position (gpt's loop); this asks
    for all positions and heads together, with the causal rule that the KV cache gives gpt for free.

    Judged against the project's NumPy engine: microgpt.forward_np on a random model (rmsnorm mode) keeps each
    layer's q, k, v and the heads' outputs ("attn_heads"); the learner gets that q, k, v. numpy_engine.attention_np
    (the engine's own attention) is refused while the learner's function runs.
    """
    import numpy as np

    import microgpt
    import numpy_engine

    def judge():
        rng = np.random.default_rng(2203)
        for T, n_embd, n_head in [(1, 8, 2), (4, 8, 2), (6, 16, 4), (5, 12, 3), (7, 8, 1)]:
            cfg = microgpt.GPTConfig(vocab_size=11, n_embd=n_embd, n_head=n_head, n_layer=1, block_size=8)
            params = microgpt.init_params(cfg, seed=int(rng.integers(1000)))
            for a in params.values():
                a *= 4.0  # larger than init's N(0, 0.08^2), so the attention weights are far from uniform
            _, cache = microgpt.forward_np(params, rng.integers(0, cfg.vocab_size, T), cfg)
            layer = cache["layers"][0]
            q, k, v = (layer[name][0].transpose(1, 0, 2).reshape(T, n_embd) for name in ("q", "k", "v"))
            want = layer["attn_heads"]
            with refusing(numpy_engine.attention_np,
                          why="numpy_engine.attention_np を使わずに、注意の計算を自分で書いてください"):
                got = np.asarray(causal_attention(q.copy(), k.copy(), v.copy(), n_head), dtype=float)
            if got.shape != want.shape:
                _show_mismatch_03(f"T = {T}, n_embd = {n_embd}, n_head = {n_head}: 形", got.shape, want.shape)
                return False
            bad = ~np.isclose(got, want, rtol=1e-9, atol=1e-12).all(axis=1)
            if bad.any():
                t = int(np.argmax(bad))
                print(f"  T = {T}, n_embd = {n_embd}, n_head = {n_head}: 位置 {t} の行が違います"
                      + ("（位置 t はキー 0..t だけを見ます。未来のキーを見ていませんか）" if t < T - 1 else ""))
                _show_mismatch_03(f"位置 {t}", np.round(got[t], 6), np.round(want[t], 6))
                return False
        return True

    return verdict("練習問題 1（causal_attention）", judge)


def check_03_count_params(count_params):
    """Exercise 03-2: the number of parameters of a GPTConfig, rmsnorm or sphere, from its sizes.
    Judged against the total size of microgpt.init_params(cfg) for several configs of both norms. The project's
    own counts (init_params, param_shapes, alloc_params, n_params) are refused while the learner's function runs: the
    exercise is to find the formula, in particular the sphere mode's scale vectors, from gpt_sphere's source."""
    import microgpt
    import model_config

    def judge():
        for norm in ("rmsnorm", "sphere"):
            for vocab_size, n_embd, n_head, n_layer, block_size in [(27, 16, 4, 1, 16), (50, 32, 4, 2, 8),
                                                                     (10, 8, 2, 3, 32), (5, 12, 3, 4, 5)]:
                cfg = microgpt.GPTConfig(vocab_size=vocab_size, n_embd=n_embd, n_head=n_head, n_layer=n_layer,
                                         block_size=block_size, norm=norm)
                want = sum(a.size for a in microgpt.init_params(cfg).values())
                with refusing(microgpt.init_params, model_config.param_shapes, model_config.alloc_params,
                              model_config.n_params,
                              why="init_params / param_shapes / n_params を使わずに、式で求めてください"):
                    got = count_params(cfg)
                if got != want:
                    _show_mismatch_03(f"GPTConfig(vocab_size={vocab_size}, n_embd={n_embd}, n_head={n_head}, "
                                      f"n_layer={n_layer}, block_size={block_size}, norm={norm!r})", got, want)
                    return False
        return True

    return verdict("練習問題 2（count_params）", judge)


def check_03_temperature_probs(temperature_probs):
    """Exercise 03-3: softmax(logits / T), stable for huge logits and small T.
    Judged against utils.softmax_np(logits / T). While the learner's function runs, utils.softmax_np, the chapter's
    softmax and numpy_engine.cross_entropy_fused (which computes a softmax too) are refused: calling them would
    copy the answer instead of writing the max-subtracting softmax."""
    import numpy as np

    import numpy_engine
    import utils
    from utils import softmax_np

    def judge():
        rng = np.random.default_rng(2205)
        cases = [(rng.normal(0.0, 2.0, 27), T) for T in (0.25, 0.5, 1.0, 2.0)]
        cases += [(np.array([1000.0, 999.0, 990.0, -1000.0]), 0.1), (np.array([3.0, 3.0, 3.0]), 0.7)]
        for logits, T in cases:
            want = softmax_np(logits / T)
            with refusing(utils.softmax_np, utils.softmax, numpy_engine.cross_entropy_fused,
                          why="utils.softmax_np も章の softmax も使わずに、自分で書いてください"):
                got = np.asarray(temperature_probs(logits.tolist(), T), dtype=float)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-9, atol=1e-15):
                _show_mismatch_03(f"logits {np.round(logits[:4], 3)}..., T = {T}", np.round(got[:4], 6),
                               np.round(want[:4], 6))
                return False
        return True

    return verdict("練習問題 3（temperature_probs）", judge)


def check_03_bigram_loss(bigram_loss):
    """Exercise 03-4: the add-one-smoothed bigram baseline's val loss.
    Judged against microgpt.baselines(train, val, cfg)["bigram"] on seeded random token sequences
    that fit in block_size (so no position is cropped). baselines (numpy_engine.baselines, the same function) is
    refused while the learner's function runs."""
    import numpy as np

    import microgpt

    def judge():
        rng = np.random.default_rng(2207)
        for n_chars in (3, 6):
            bos = n_chars
            cfg = microgpt.GPTConfig(vocab_size=n_chars + 1, block_size=16)

            def docs(n, n_chars=n_chars, bos=bos):
                return [[bos] + rng.integers(0, n_chars, rng.integers(1, 9)).tolist() + [bos] for _ in range(n)]

            train, val = docs(40), docs(15)
            want = microgpt.baselines(train, val, cfg)["bigram"]
            with refusing(microgpt.baselines, why="microgpt.baselines を使わずに、数えて求めてください"):
                got = float(bigram_loss(train, val, cfg.vocab_size))
            if not np.isclose(got, want, rtol=1e-9, atol=1e-12):
                _show_mismatch_03(f"vocab_size {cfg.vocab_size}", got, want)
                return False
        return True

    return verdict("練習問題 4（bigram_loss）", judge)


# ============================================================================ 04 lecture 3


def _close_04(got, want, rtol, atol, what):
    """True if got (array-like) has want's shape and matches it; else print where it differs and return False."""
    import numpy as np

    got = np.asarray(got, dtype=float)
    if got.shape != want.shape:
        print(f"  {what}: shape {got.shape}, expected {want.shape}")
        return False
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        k = np.unravel_index(np.argmax(np.abs(got - want) - rtol * np.abs(want)), want.shape)
        print(f"  {what}: at index {tuple(int(i) for i in k)} your answer is {got[k]:.10g}, expected {want[k]:.10g}")
        return False
    return True


def check_04_riemannian_step(riemannian_step):
    """練習問題1: riemannian_step(x, g, lr) (x a unit 1-D vector) must equal sphere.riemannian_sgd_step:
    x <- R(x - lr (g - (g.x) x)), R(v) = v / ||v||. sphere's step functions and their parts (tangent_project,
    retract, exp_map) are refused while the learner's function runs: the exercise is to write the step."""
    import numpy as np

    import sphere

    refused = (sphere.riemannian_sgd_step, sphere.projected_sgd_step, sphere.tangent_project, sphere.retract,
               sphere.exp_map)

    def judge():
        rng = np.random.default_rng(401)
        for d, lr in ((3, 0.1), (5, 0.5), (16, 0.02), (16, 2.0), (64, 0.3)):
            x = sphere.l2_normalize_np(rng.standard_normal(d))
            g = 3.0 * rng.standard_normal(d) + 2.0 * x  # with a radial part, which the step must ignore
            want = sphere.riemannian_sgd_step(x, g, lr)
            with refusing(*refused, why="sphere の関数（riemannian_sgd_step, tangent_project, retract など）を"
                                        "使わずに書いてください"):
                got = riemannian_step(x.copy(), g.copy(), lr)
            if not _close_04(got, want, 1e-9, 1e-12, f"d = {d}, lr = {lr}"):
                return False
        return True

    return verdict("練習問題 1（riemannian_step）", judge)


def check_04_safe_normalize(safe_normalize, safe_normalize_backward):
    """練習問題2: safe_normalize(x, eps) = x / max(||x||, eps) (as sphere.l2_normalize_np) and
    safe_normalize_backward(dy, x, eps) = its dx, checked against central differences of the project's
    forward, at ||x|| ~ 1, ~ 1e-7 (where an added eps is visibly wrong) and below eps (the clamped branch).
    The reference values are computed first; while the learner's functions run, the project's normalizations and
    their backward passes (sphere.l2_normalize_np, l2_normalize_np_backward, the scalar l2_normalize,
    numpy_engine's fused twins) and Value.backward are refused."""
    import numpy as np

    import numpy_engine
    import sphere
    from value import Value

    refused = (sphere.l2_normalize_np, sphere.l2_normalize_np_backward, sphere.l2_normalize,
               numpy_engine.l2_normalize_fused, numpy_engine.l2_normalize_fused_backward, Value.backward)
    why = "sphere の正規化とその逆伝播（l2_normalize_np, l2_normalize_np_backward など）を使わずに書いてください"

    def judge():
        rng = np.random.default_rng(402)
        eps = 1e-12
        for scale in (1.0, 3e-7, 2e-13):
            x = scale * rng.standard_normal(5)
            dy = rng.standard_normal(5)
            y_want = sphere.l2_normalize_np(x, eps=eps)
            h = 1e-5 * np.linalg.norm(x)  # central differences of L = dy . y(x), one coordinate at a time
            numeric = np.array([(dy @ sphere.l2_normalize_np(x + h * e, eps=eps)
                                 - dy @ sphere.l2_normalize_np(x - h * e, eps=eps)) / (2 * h) for e in np.eye(5)])
            at = f"at ||x|| = {np.linalg.norm(x):.1e}"
            with refusing(*refused, why=why):
                y_got = safe_normalize(x.copy(), eps)
            if not _close_04(y_got, y_want, 1e-10, 0.0, f"y {at}"):
                return False
            with refusing(*refused, why=why):
                got = safe_normalize_backward(dy.copy(), x.copy(), eps)
            if not _close_04(got, numeric, 1e-6, 1e-6 * np.abs(numeric).max(), f"dx {at}"):
                return False
        return True

    return verdict("練習問題 2（safe_normalize）", judge)


def check_04_vmf_log_density_s2(vmf_log_density_s2):
    """練習問題3: the closed form on S^2, log(kappa / (4 pi sinh kappa)) + kappa mu.x, must equal
    sphere.vmf_log_density for kappa from 0.01 to 1000 (sinh overflows above ~710: work in log space).
    sphere.vmf_log_density, vmf_log_normalizer and log_bessel_iv are refused while the learner's function runs."""
    import numpy as np

    import sphere

    def judge():
        rng = np.random.default_rng(403)
        mu = sphere.l2_normalize_np(rng.standard_normal(3))
        x = sphere.l2_normalize_np(rng.standard_normal((6, 3)))
        for kappa in (0.01, 0.5, 3.0, 40.0, 1000.0):
            want = sphere.vmf_log_density(x, mu, kappa)
            with refusing(sphere.vmf_log_density, sphere.vmf_log_normalizer, sphere.log_bessel_iv,
                          why="sphere.vmf_log_density / vmf_log_normalizer / log_bessel_iv を使わずに、"
                              "閉じた式で書いてください"):
                got = vmf_log_density_s2(x.copy(), mu.copy(), kappa)
            if not _close_04(got, want, 1e-9, 1e-9, f"kappa = {kappa}"):
                return False
        return True

    return verdict("練習問題 3（vmf_log_density_s2）", judge)


def _04_log_posterior_grad(x, mus, kappas, priors, k):
    """The reference of 練習問題4: the Riemannian gradient at the unit vector x of log p(k | x) in the vMF mixture,
    by the scalar engine: log p(k | x) = z_k - logsumexp(z), z_j = log pi_j + log C_d(kappa_j) + kappa_j mu_j.x,
    built from Values of x (the max subtracted as a constant, as the chapter's softmax does), backward(), and
    the Euclidean gradient projected onto the tangent space (sphere.tangent_project)."""
    import numpy as np

    import sphere
    from value import Value

    d = x.shape[0]
    log_const = np.log(priors) + sphere.vmf_log_normalizer(d, kappas)
    xs = [Value(float(v)) for v in x]
    z = [float(c) + float(kap) * sum(float(m_i) * x_i for m_i, x_i in zip(mu, xs))
         for c, kap, mu in zip(log_const, kappas, mus)]
    top = max(zj.data for zj in z)
    log_p = z[k] - (sum((zj - top).exp() for zj in z).log() + top)
    log_p.backward()
    return sphere.tangent_project(x, np.array([v.grad for v in xs]))


def check_04_vmf_posterior_grad(vmf_posterior_grad):
    """練習問題4: vmf_posterior_grad(x, mus, kappas, priors, k) -> the Riemannian gradient at the unit vector x (d,)
    of log p(k | x), the log posterior of class k in a mixture of vMF(mu_k, kappa_k) with priors pi_k:
    kappa_k mu_k - sum_j p(j | x) kappa_j mu_j, projected onto the tangent space at x. The notebook computes the
    posterior (§8) and the tangent projection (§6), not this gradient.

    Judged against the scalar engine's backward() (_04_log_posterior_grad) at several points and classes, from
    one shared kappa to kappas up to 1000 (exp(kappa) alone overflows: the posterior must be computed in log
    space). Value.backward is refused while the learner's function runs."""
    import numpy as np

    import sphere
    from value import Value

    def judge():
        rng = np.random.default_rng(404)
        cases = [(3, 4, [5.0] * 4, [0.25] * 4),                 # the lecture's setting: softmax(kappa cos)
                 (3, 4, [1.0, 4.0, 10.0, 30.0], [0.1, 0.2, 0.3, 0.4]),
                 (16, 5, [4.0, 5.0, 6.0, 7.0, 8.6], [0.2] * 5),  # like microgpt's s_z: one kappa per class
                 (16, 3, [1000.0, 600.0, 200.0], [0.2, 0.3, 0.5])]  # exp(kappa_0 mu_0.x) overflows
        for d, K, kappas, priors in cases:
            mus = sphere.l2_normalize_np(rng.standard_normal((K, d)))
            kappas, priors = np.array(kappas), np.array(priors)
            for _ in range(3):
                # a point near mu_0 (not too near: with kappa = 1000 every class's posterior would be 0 or 1)
                x = sphere.l2_normalize_np(mus[0] + (0.3 if kappas.max() < 100 else 0.02) * rng.standard_normal(d))
                for k in range(K):
                    want = _04_log_posterior_grad(x, mus, kappas, priors, k)
                    with refusing(Value.backward, why="backward() を使わずに、勾配の式を書いてください"):
                        got = vmf_posterior_grad(x.copy(), mus.copy(), kappas.copy(), priors.copy(), k)
                    what = f"d = {d}, kappas = {kappas.tolist()}, k = {k}"
                    if not _close_04(got, want, 1e-7, 1e-9 * max(1.0, np.abs(want).max()), what):
                        return False
        return True

    return verdict("練習問題 4（vmf_posterior_grad）", judge)


# ============================================================================ 05 PyTorch concepts
# Exercises of notebook 05 (PyTorch concepts without PyTorch): He init drawn from a uniform distribution, the
# backward of a linear layer with a bias in the [out, in] layout, and the gradients that reach the attention's keys
# and values with and without 1/sqrt(d).


def check_05_he_uniform_bound(he_uniform_bound):
    """Exercise 05-1: he_uniform_bound(fan_in) -> l such that U(-l, l) has He's variance 2 / fan_in
    (l = sqrt(6 / fan_in), what nn.init.kaiming_uniform_ draws for ReLU). A 30-layer ReLU stack initialized from
    U(-l, l) keeps its scale.

    The notebook shows he_std (the std of the normal version) and Var(U(-l, l)) = l^2 / 3 but not the bound:
    returning he_std's sqrt(2 / fan_in) as the bound gives a third of He's variance, and the signal shrinks by
    sqrt(1/3) per layer.
    The widths cycle through 64, 256, 128 (so fan_in changes from layer to layer). Five independently drawn stacks;
    correct when the geometric mean over them of (activation std at layer 30) / (at layer 1) is between 1/2 and 2.
    (One stack alone drifts by a random factor of up to about 2 at these widths.)
    """
    import numpy as np

    from utils import linear_np

    def judge():
        widths = [64, 256, 128] * 10
        ratios = []
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for seed in range(20, 25):   # five fixed stacks
                r = np.random.default_rng(seed)
                h = r.normal(size=(64, widths[-1]))
                stds = []
                for fan_out, fan_in in zip(widths, [widths[-1]] + widths[:-1]):
                    bound = float(he_uniform_bound(fan_in))
                    h = np.maximum(linear_np(h, r.uniform(-bound, bound, (fan_out, fan_in))), 0.0)
                    stds.append(h.std())
                ratios.append(stds[-1] / stds[0])
            ratio = float(np.exp(np.mean(np.log(ratios))))
        print(f"  活性の標準偏差の比（30 段目 / 1 段目、5 回の幾何平均）= {ratio:.3g}（1/2 から 2 の間なら正解）")
        return bool(np.isfinite(ratio) and 0.5 <= ratio <= 2.0)

    return verdict("練習問題 1（He 初期化の一様分布版）", judge)


def check_05_linear_bias_backward(linear_bias_np_backward):
    """Exercise 05-2: linear_bias_np_backward(dy, x, w) -> (dx, dw, db) for y = linear_np(x, w) + b.

    dx and dw are compared with utils.linear_np_backward, db with central differences of the forward pass
    (sum(dy * y) is linear in b, so the difference quotient is exact up to rounding). The task lets the learner
    take dx and dw from utils.linear_np_backward (the bias does not change them): db over any number of batch
    axes is the new part.
    """
    import numpy as np

    from utils import linear_np, linear_np_backward

    def judge():
        r = np.random.default_rng(6)
        ok = True
        for batch_shape in ((5,), (2, 5)):        # one batch axis, then two
            x = r.normal(size=batch_shape + (4,))
            w = r.normal(size=(3, 4))             # [out=3, in=4]
            b = r.normal(size=3)
            dy = r.normal(size=batch_shape + (3,))
            got = linear_bias_np_backward(dy, x, w)
            if not (isinstance(got, tuple) and len(got) == 3):
                print(f"  (dx, dw, db) の3つ組を返してください（返ってきたのは {type(got).__name__}）")
                return False
            dx, dw, db = (np.asarray(g, dtype=float) for g in got)
            dx_ref, dw_ref = linear_np_backward(dy, x, w)
            y0, eps = linear_np(x, w), 1e-6     # the loss sum(dy * (y0 + b)) at b +- eps e_o
            db_ref = np.array([((dy * (y0 + b + eps * e)).sum() - (dy * (y0 + b - eps * e)).sum()) / (2 * eps)
                               for e in np.eye(3)])
            for name, g, ref in (("dx", dx, dx_ref), ("dw", dw, dw_ref), ("db", db, db_ref)):
                if g.shape != ref.shape:
                    print(f"  x の形 {x.shape}：{name} の形が {g.shape}、正しくは {ref.shape}")
                    ok = False
                elif not np.allclose(g, ref, rtol=1e-6, atol=1e-8):
                    print(f"  x の形 {x.shape}：{name} の値が違う（最大の誤差 {np.abs(g - ref).max():.3g}）")
                    ok = False
        return ok

    return verdict("練習問題 2（バイアス付き線形層の逆伝播）", judge)


def check_05_key_value_grads(key_value_grads):
    """Exercise 05-3: key_value_grads(q, K, V, do, scaled) -> (dK, dV) for the attention output of one query,
    o = p @ V, p = softmax(alpha K q), alpha = 1/sqrt(d) or 1, given do = dL/do. The notebook computes the gradient
    that reaches the query (§5); this asks for the keys and the values: dV = outer(p, do) does not pass through
    softmax's Jacobian, dK = alpha outer(ds, q) does (ds = dL/d(scores)).

    Judged against the NumPy engine's attention backward (numpy_engine.attention_np_backward) for d = 16 and
    d = 256, with and without the scaling; it and Value.backward are refused while the learner's function runs.
    """
    import numpy as np

    import numpy_engine
    from utils import softmax_np
    from value import Value

    def judge():
        ok = True
        for d in (16, 256):
            r = np.random.default_rng(d)
            q, K, V, do = r.normal(size=d), r.normal(size=(8, d)), r.normal(size=(8, d)), r.normal(size=d)
            for scaled in (False, True):
                alpha = 1 / np.sqrt(d) if scaled else 1.0
                p = softmax_np(alpha * (K @ q))
                out = [np.zeros((1, d)), np.zeros((8, d)), np.zeros((8, d))]   # dq, dK, dV
                numpy_engine.attention_np_backward(do[None], q[None], K, V, p[None], alpha, out)
                dK_ref, dV_ref = out[1], out[2]
                with refusing(numpy_engine.attention_np_backward, Value.backward,
                              why="attention_np_backward も backward() も使わずに、式で書いてください"):
                    got = key_value_grads(q.copy(), K.copy(), V.copy(), do.copy(), scaled)
                if not (isinstance(got, tuple) and len(got) == 2):
                    print(f"  (dK, dV) の2つ組を返してください（返ってきたのは {type(got).__name__}）")
                    return False
                dK, dV = (np.asarray(g, dtype=float) for g in got)
                line = f"  d = {d:3d}, scaled = {str(scaled):5s}："
                if dK.shape != dK_ref.shape or dV.shape != dV_ref.shape:
                    print(f"{line}形が dK {dK.shape}, dV {dV.shape}、正しくは {dK_ref.shape}, {dV_ref.shape}")
                    ok = False
                    continue
                good_K = np.allclose(dK, dK_ref, rtol=1e-6, atol=1e-12)
                good_V = np.allclose(dV, dV_ref, rtol=1e-6, atol=1e-12)
                print(f"{line}|dL/dK| = {np.linalg.norm(dK):.3e}"
                      f"{'' if good_K else f'（正しくは {np.linalg.norm(dK_ref):.3e}）'}, |dL/dV| = "
                      f"{np.linalg.norm(dV):.3e}{'' if good_V else f'（正しくは {np.linalg.norm(dV_ref):.3e}）'}")
                ok = ok and good_K and good_V
        return ok

    return verdict("練習問題 3（キーとバリューに届く勾配）", judge)
