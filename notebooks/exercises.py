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
