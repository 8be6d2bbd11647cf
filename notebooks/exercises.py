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

# Imports are local to each check, so this section does not touch the module's shared header.

def _show_mismatch_03(label, got, want):
    """Print one line that tells the learner where their answer differs (before verdict prints 不正解)."""
    print(f"  {label}: 期待される値 {want}、あなたの答え {got}")


def check_03_attend(attend):
    """Exercise 03-1: one head's causal attention at one position, as in gpt():
    z_t = q . k_t / sqrt(d), w = softmax(z), output sum_t w_t v_t.
    Judged against utils.softmax_np on seeded random q, keys, values with T = 1..6 cached positions."""
    import numpy as np

    from utils import softmax_np

    def judge():
        rng = np.random.default_rng(2203)
        for T, d in [(1, 4), (2, 4), (4, 4), (6, 4), (3, 8)]:
            q = rng.normal(0.0, 1.5, d)
            keys = rng.normal(0.0, 1.5, (T, d))
            values = rng.normal(0.0, 1.0, (T, d))
            want = softmax_np(keys @ q / np.sqrt(d)) @ values
            got = np.asarray(attend(q.tolist(), keys.tolist(), values.tolist()), dtype=float)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-9, atol=1e-12):
                _show_mismatch_03(f"T = {T}, d = {d}", np.round(got, 6), np.round(want, 6))
                return False
        return True

    return verdict("練習問題 1 attend", judge)


def check_03_count_params(count_params):
    """Exercise 03-2: the number of parameters of an rmsnorm GPTConfig, from its shapes.
    Judged against the total size of microgpt.init_params(cfg) for several configs."""
    import microgpt

    def judge():
        for vocab_size, n_embd, n_head, n_layer, block_size in [(27, 16, 4, 1, 16), (50, 32, 4, 2, 8),
                                                                 (10, 8, 2, 3, 32), (5, 12, 3, 4, 5)]:
            cfg = microgpt.GPTConfig(vocab_size=vocab_size, n_embd=n_embd, n_head=n_head, n_layer=n_layer,
                                     block_size=block_size)
            want = sum(a.size for a in microgpt.init_params(cfg).values())
            got = count_params(cfg)
            if got != want:
                _show_mismatch_03(f"GPTConfig(vocab_size={vocab_size}, n_embd={n_embd}, n_head={n_head}, "
                               f"n_layer={n_layer}, block_size={block_size})", got, want)
                return False
        return True

    return verdict("練習問題 2 count_params", judge)


def check_03_temperature_probs(temperature_probs):
    """Exercise 03-3: softmax(logits / T), stable for huge logits and small T.
    Judged against utils.softmax_np(logits / T)."""
    import numpy as np

    from utils import softmax_np

    def judge():
        rng = np.random.default_rng(2205)
        cases = [(rng.normal(0.0, 2.0, 27), T) for T in (0.25, 0.5, 1.0, 2.0)]
        cases += [(np.array([1000.0, 999.0, 990.0, -1000.0]), 0.1), (np.array([3.0, 3.0, 3.0]), 0.7)]
        for logits, T in cases:
            want = softmax_np(logits / T)
            got = np.asarray(temperature_probs(logits.tolist(), T), dtype=float)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-9, atol=1e-15):
                _show_mismatch_03(f"logits {np.round(logits[:4], 3)}..., T = {T}", np.round(got[:4], 6),
                               np.round(want[:4], 6))
                return False
        return True

    return verdict("練習問題 3 temperature_probs", judge)


def check_03_bigram_loss(bigram_loss):
    """Exercise 03-4: the add-one-smoothed bigram baseline's val loss.
    Judged against microgpt.baselines(train, val, cfg)["bigram"] on seeded random token sequences
    that fit in block_size (so no position is cropped)."""
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
            got = float(bigram_loss(train, val, cfg.vocab_size))
            if not np.isclose(got, want, rtol=1e-9, atol=1e-12):
                _show_mismatch_03(f"vocab_size {cfg.vocab_size}", got, want)
                return False
        return True

    return verdict("練習問題 4 bigram_loss", judge)


# ============================================================================ 04 lecture 3


# ============================================================================ 05 PyTorch concepts
