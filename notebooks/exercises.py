"""exercises.py -- the check cells of the notebooks' 練習問題 (exercises), in one place.

Each notebook ends with exercises the learner solves in code. A check cell calls one of the
`check_*` functions below with the learner's answer; it prints 正解 (correct), 不正解 (wrong, with
the reason) or 未回答 (not answered yet) and returns True, False or None. An unanswered exercise is a
function that still raises NotImplementedError (or an answer that is still None): the notebooks are
executed unsolved in CI, so every check must run clean then.

The checks compare with the project's own functions or with finite differences (value.gradient_check),
never with a hard-coded number the learner cannot see. Reference solutions live in
tests/test_exercises.py, which proves every check can say 正解 and that a wrong answer gets 不正解.
"""
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


def answered(answer):
    """Raise NotImplementedError for an answer that is still the placeholder None."""
    if answer is None:
        raise NotImplementedError
    return answer


# ============================================================================ 01 autograd traced


# ============================================================================ 02 chapter 21


# ============================================================================ 03 chapter 22


# ============================================================================ 04 lecture 3


# ============================================================================ 05 PyTorch concepts
# Exercises of notebook 05 (PyTorch concepts without PyTorch): He init, the backward of a linear layer with a
# bias in the [out, in] layout, and the gradient that reaches an attention query with and without 1/sqrt(d).


def check_05_he_std(he_std):
    """Exercise 05-1: he_std(fan_in) -> the He init std. A 30-layer ReLU stack initialized with it keeps its scale.

    The widths cycle through 64, 256, 128 (so fan_in changes from layer to layer). Five independently drawn
    stacks; correct when the geometric mean over them of (activation std at layer 30) / (at layer 1) is
    between 1/2 and 2. (One stack alone drifts by a random factor of up to about 2 at these widths.)
    """
    import numpy as np

    from utils import linear_np

    def judge():
        widths = [64, 256, 128] * 10
        ratios = []
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for seed in range(20, 25):   # five fixed stacks; their mean ratio for the He std is 0.95
                r = np.random.default_rng(seed)
                h = r.normal(size=(64, widths[-1]))
                stds = []
                for fan_out, fan_in in zip(widths, [widths[-1]] + widths[:-1]):
                    std = float(he_std(fan_in))
                    h = np.maximum(linear_np(h, r.normal(0.0, std, (fan_out, fan_in))), 0.0)
                    stds.append(h.std())
                ratios.append(stds[-1] / stds[0])
            ratio = float(np.exp(np.mean(np.log(ratios))))
        print(f"  活性の標準偏差の比（30 段目 / 1 段目、5 回の幾何平均）= {ratio:.3g}（1/2 から 2 の間なら正解）")
        return bool(np.isfinite(ratio) and 0.5 <= ratio <= 2.0)

    return verdict("練習問題 05-1（He 初期化の標準偏差）", judge)


def check_05_linear_bias_backward(linear_bias_np_backward):
    """Exercise 05-2: linear_bias_np_backward(dy, x, w) -> (dx, dw, db) for y = linear_np(x, w) + b.

    dx and dw are compared with utils.linear_np_backward, db with central differences of the forward pass
    (sum(dy * y) is linear in b, so the difference quotient is exact up to rounding).
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

    return verdict("練習問題 05-2（バイアス付き線形層の逆伝播）", judge)


def check_05_query_grad(query_grad):
    """Exercise 05-3: query_grad(q, K, dp, scaled) -> dL/dq for p = softmax(alpha K q), alpha = 1/sqrt(d) or 1.

    The reference is built from utils.softmax_np and utils.softmax_np_backward, for d = 16 and d = 256.
    """
    import numpy as np

    from utils import softmax_np, softmax_np_backward

    def judge():
        ok = True
        for d in (16, 256):
            r = np.random.default_rng(d)
            q, K, dp = r.normal(size=d), r.normal(size=(8, d)), r.normal(size=8)
            for scaled in (False, True):
                alpha = 1 / np.sqrt(d) if scaled else 1.0
                p = softmax_np(alpha * (K @ q))
                ref = alpha * (softmax_np_backward(dp, p) @ K)
                got = np.asarray(query_grad(q.copy(), K.copy(), dp.copy(), scaled), dtype=float)
                if got.shape != ref.shape:
                    print(f"  d = {d}, scaled = {scaled}：形が {got.shape}、正しくは {ref.shape}")
                    ok = False
                    continue
                good = np.allclose(got, ref, rtol=1e-6, atol=1e-12)
                print(f"  d = {d:3d}, scaled = {str(scaled):5s}：|dL/dq| = {np.linalg.norm(got):.3e}"
                      f"{'' if good else f'（正しくは {np.linalg.norm(ref):.3e}）'}")
                ok = ok and good
        return ok

    return verdict("練習問題 05-3（クエリに届く勾配）", judge)
