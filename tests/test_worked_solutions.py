"""notebooks/worked_solutions.md against the checks of notebooks/exercises.py.

Each worked solution's code is taken from the file as a learner would copy it, run in a namespace
like its notebook's (the notebook's own Value, Tensor / Parameter / Module, mixture_posterior), and
handed to its check by the notebook's own check line: the check must accept it. Then one plausible
mistake is typed into each solution (a replacement in its text) and the check must reject it.
"""
import ast
import math
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

NB = Path(__file__).resolve().parent.parent / "notebooks"
sys.path.insert(0, str(NB))
import exercises  # noqa: E402
from build import parse_cells  # noqa: E402

SOLUTIONS = (NB / "worked_solutions.md").read_text(encoding="utf-8")
KEYS = re.findall(r"^## (\d\d-\d+)$", SOLUTIONS, re.M)

# One plausible mistake per check: (text in the worked solution's code, what the learner typed).
MISTAKES = {
    "01-1": ("(1.0, 1.0)", "(1.0, 0.0)"),
    "01-2": ("(b.data, a.data)", "(a.data, b.data)"),
    "01-3": ("(1 - t * t,)", "(1 - t,)"),
    "01-4": ("            order.append(v)", "        order.append(v)"),    # appended unvisited
    "01-5": ("child.grad += local_grad * node.grad", "child.grad = local_grad * node.grad"),
    "01-6": ("1.0 if x > 0 else 0.0", "1.0 if x >= 0 else 0.0"),                # slope 1 at 0
    "01-7": ("(s * (1 - s),)", "(s,)"),
    "02-1": ("t * a - 0.5 <= 0", "t * a - 0.5 <= -1e-6"),        # the kink moved a little
    "02-2": ("order.append(node)", "order.insert(0, node)"),
    "03-1": ("zip(wo, x)", "zip(wo, reversed(x))"),
    "03-2": ("(val - max_val).exp()", "val.exp()"),                  # overflows at 1000
    "03-3": ("(ms + 1e-5) ** -0.5", "ms ** -0.5"),
    "03-4": ("v - m - lse", "v - lse"),
    "03-5": ("(var + eps) ** -0.5", "var ** -0.5"),
    "04-1": ("dx = dy @ w", "dx = dy @ w * 1.0000001"),
    "04-2": ("(dp * p).sum(axis=-1, keepdims=True)", "dp.sum(axis=-1, keepdims=True)"),
    "04-3": ("/ n\n", "\n"),
    "04-4": ("np.eye(z.size) - p[None, :]", "np.eye(z.size) - p[:, None]"),
    "04-5": ("- dy.mean(axis=-1, keepdims=True) ", ""),
    "05-1": ("prefix + name + \".\"", "name + \".\""),
    "05-2": ("if p.requires_grad and p.grad is not None:", "if p.grad is not None:"),
    "05-3": ("    elif isinstance(value, Module):\n        self._modules[name] = value\n", ""),
    "05-4": ("Tensor.grad_enabled = before", "Tensor.grad_enabled = True"),
    "06-1": ("da.reshape(-1, da.shape[-1]).sum(axis=0)", "da.sum(axis=0)"),  # one batch axis
    "06-2": ("dy * keep / (1 - p)", "dy * keep"),
    "06-3": ("(e,)", "(a.data,)"),                                     # the input, not e^x
    "07-1": ("6.0 / fan_in", "3.0 / fan_in"),
    "07-2": ("return alpha * np.outer(ds, q)", "return np.outer(ds, q)"),
    "07-3": ("2 / (fan_in + fan_out)", "1 / fan_in"),
    "08-1": ("np.tril(", "np.triu("),
    "08-2": ("T * C + ", ""),
    "08-3": ("(1 / a.data,)", "(1 / a.data ** 2,)"),
    "09-1": ("np.ones((vocab_size, vocab_size))", "np.zeros((vocab_size, vocab_size)) + 0.5"),
    "09-2": ("np.abs(g) + eps", "np.abs(g)"),
    "09-3": ("m[:] = beta1", "m = beta1"),
    "10-1": ("4 * C", "3 * C"),
    "10-2": ("/ temperature", "* temperature"),
    "10-3": ("k * a.data ** (k - 1)", "k * a.data ** k"),
    "11-1": ("return dy / eps", "return dy"),
    "12-1": ("axis=1, keepdims", "axis=0, keepdims"),           # unit columns, not rows
    "13-1": ("(1 - 2 * k2 / 21)", "(1 - 2 * k2 / 63)"),     # a wrong coefficient in the series
    "14-1": ("grad_s = g - (g @ x) * x", "grad_s = g"),              # the radial part kept
    "14-2": ("r * (d - r * r)", "r * (d - 1 - r * r)"),
    "15-1": ("    m = m - (m @ x) * x", "    m = m - (m @ x) * x + 1e-3 * x"),  # m not tangent
    "16-1": ("return dh, p * cos", "return dh, p"),
    "17-1": ("kappas * (mus @ x)", "mus @ x"),
}


def code_of(key):
    """The ```python block of the worked solution `key`."""
    blocks = re.findall(r"```python\n(.*?)```", exercises.solution(key), re.S)
    assert len(blocks) == 1, f"{key}: one python block expected"
    return blocks[0]


def check_function(key):
    """The name of the check in exercises.py that shows solution `key`."""
    source = (NB / "exercises.py").read_text(encoding="utf-8")
    names = [name for name, body in re.findall(r"^def (check_\w+)\((.*?)(?=^def |\Z)", source,
                                                re.M | re.S) if f'"{key}"' in body]
    assert len(names) == 1, f"{key}: checked by {names}"
    return names[0]


def notebook_cells(number):
    path = next((NB / "src").glob(f"{number}_*.py"))
    return [code for kind, code in parse_cells(path.read_text(encoding="utf-8")) if kind == "code"]


def check_line(key):
    """The notebook's own call of the check, e.g. `exercises.check_01_add(Value, add)`."""
    name = check_function(key)
    for code in notebook_cells(key[:2]):
        found = re.search(rf"exercises\.{name}\(.*\)(?=:?\s*(#.*)?$)", code, re.M)
        if found:
            return found.group(0)
    raise AssertionError(f"{key}: no cell of notebook {key[:2]} calls {name}")


def namespace(number):
    """What the notebook has defined when its checks run: imports, and its own classes (06,
    08 and 10 extend notebook 01's Value: theirs is checked on it)."""
    import sphere
    import utils
    ns = {"math": math, "np": np, "contextmanager": contextmanager, "exercises": exercises,
          "sphere": sphere, "linear_np": utils.linear_np,
          "linear_np_backward": utils.linear_np_backward, "softmax_np": utils.softmax_np}
    on_value_01 = number in ("06", "08", "10")
    for code in notebook_cells("01" if on_value_01 else number):
        if code.startswith(("class Value", "class Tensor", "class Parameter")) or \
                code.startswith("import exercises") and "def mixture_posterior" in code:
            exec(code, ns)
    return ns


# The pieces a notebook carries forward from an earlier one: 12 runs the learner's Adam of 09;
# exp (06), log (08) and ** (10) are nodes of notebook 01's Value, built by its five pieces.
CARRIED = {"12": ["09-3"], **{n: [f"01-{k}" for k in range(1, 6)] for n in ("06", "08", "10")}}


def run(key, code):
    """The check's verdict on `code` typed in as the answer (the solutions before it as well, as in
    the notebook: 01's backward uses the learner's add, mul and tanh; 12 uses 09's Adam)."""
    ns = namespace(key[:2])
    same_notebook = [k for k in KEYS if k[:2] == key[:2] and k != key]
    for earlier in CARRIED.get(key[:2], []) + same_notebook:
        exec(code_of(earlier), ns)
    exec(code, ns)
    return eval(check_line(key), ns)


def test_every_solution_has_a_check_and_a_mistake():
    assert len(KEYS) == len(set(KEYS)) >= 39
    assert sorted(MISTAKES) == sorted(KEYS)
    for key in KEYS:
        check_line(key)


@pytest.mark.parametrize("key", KEYS)
def test_worked_solution_passes_its_check(key, capsys):
    assert run(key, code_of(key)) is True, capsys.readouterr().out


@pytest.mark.parametrize("key", KEYS)
def test_a_mistake_is_rejected(key, capsys):
    right, typed = MISTAKES[key]
    code = code_of(key)
    assert right in code, f"{key}: the mistake's text is no longer in the worked solution"
    assert run(key, code.replace(right, typed)) is False, capsys.readouterr().out


def without_return(key):
    """The worked solution with its answer function's final `return X` typed as `X` (None if the
    function the check line names ends otherwise: backward(), __setattr__, a context manager)."""
    tree = ast.parse(code_of(key))
    named = set(re.findall(r"\w+", check_line(key).split("(", 1)[1]))
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in named), None)
    if function is None or not isinstance(function.body[-1], ast.Return) or function.body[-1].value is None:
        return None
    function.body[-1] = ast.Expr(function.body[-1].value)
    return ast.unparse(tree)


@pytest.mark.parametrize("key", [key for key in KEYS if without_return(key)])
def test_a_forgotten_return_is_the_same_line_in_every_check(key, capsys):
    assert run(key, without_return(key)) is False
    assert exercises.FORGOT_RETURN in capsys.readouterr().out


def executed_with_pasted(number, tmp_path, pastes):
    """Notebook `number` executed with code pasted in place of what asks for it (a line found by its
    start, or a whole stub), and everything it printed."""
    import build

    source = next((NB / "src").glob(f"{number}_*.py")).read_text(encoding="utf-8")
    for find, code in pastes:
        if "\n" not in find:                    # a line, found by its start
            match = re.search(rf"^{re.escape(find)}.*$", source, re.M)
            assert match, f"{number} no longer asks for the pieces with {find!r}"
            find = match.group(0)
        assert find in source, f"{number} no longer has {find!r}"
        source = source.replace(find, code)
    path = tmp_path / f"{number}_pasted.py"
    path.write_text(source, encoding="utf-8")
    nb = build.execute(build.to_notebook(path))
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


@pytest.mark.slow
def test_notebook_03_runs_the_learners_linear_on_their_value_of_notebook_01(tmp_path):
    # 03 §4: notebook 01's Value class and the worked solutions of its five pieces, pasted, carry
    # the learner's linear (03-1, typed in its own cell) to value.py's values and gradients
    value_class = next(code for code in notebook_cells("01") if code.startswith("class Value"))
    pieces = "\n\n".join([value_class] + [code_of(f"01-{k}") for k in range(1, 6)])
    text = executed_with_pasted("03", tmp_path, [
        ("# ここにノート 01 の Value のクラス", pieces),
        ("def linear(x, w):\n    # ここに書く：出力の第 o 成分は、w の第 o 行と x の内積\n    raise NotImplementedError",
         code_of("03-1").rstrip())])
    table = text[text.index("ノート 01 の Value の上の linear"):].split("→", 1)[1].split("\n", 1)[0]
    assert "すべての点で一致しました" in table, text


@pytest.mark.slow
def test_notebook_10_trains_like_microgpt_with_the_learners_pasted_pieces(tmp_path):
    # 10 §3 closes chapter 22: with notebook 01's Value and the worked solutions of 01, 06, 08,
    # 03, 09 and 10 pasted where it asks, the learner's own engine, functions and Adam train
    # gpt's code to microgpt.train's losses (to rounding: a / b as a * b ** -1, another order)
    value_class = next(code for code in notebook_cells("01") if code.startswith("class Value"))
    engine = "\n\n".join([value_class] + [code_of(f"01-{k}") for k in range(1, 7)])
    functions = "\n\n".join(code_of(key) for key in ("03-1", "03-2", "03-3"))
    stub = ('def power(a, k):\n    # ここに書く：Value(a.data ** k, (a,), (局所勾配,), f"**{k}")\n'
            "    raise NotImplementedError")
    text = executed_with_pasted("10", tmp_path, [
        ("Value = relu = None", engine), ("exp = log = None", code_of("06-3") + code_of("08-3")),
        ("linear = softmax = rmsnorm = None", functions), ("adam_update = None", code_of("09-3")),
        (stub, code_of("10-3").rstrip())])
    assert "この先は解答例で続ける部品： なし" in text, "a pasted piece was not accepted"
    table = text[text.index("自分の Value の上の3つの関数"):].split("→", 1)[1].split("\n", 1)[0]
    assert "すべての点で一致しました" in table, text
    worst = float(re.search(r"損失の差の最大 ([0-9.e+-]+)", text).group(1))
    assert worst < 1e-12, text
