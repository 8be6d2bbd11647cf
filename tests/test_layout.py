"""The repository's shape (issues 9, 17): microgpt.py is the chapter file, in the reference's order and short
enough to read in one sitting; what a run adds around it lives in harness/; no module imports microgpt.py and
the modules form no import cycle."""
import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = sorted([f[:-3] for f in os.listdir(ROOT) if f.endswith(".py")] +
                 [f"harness.{f[:-3]}" for f in os.listdir(os.path.join(ROOT, "harness")) if f.endswith(".py")])

PUBLIC_API = ["load_corpus", "split_docs", "build_vocab", "encode", "decode", "doc_tokens", "GPTConfig",
              "init_params", "gpt", "gpt_sphere", "loss_and_grads", "forward_np", "backward_np", "adam_step",
              "retract", "project_grads", "train", "evaluate", "baselines", "sample", "save_checkpoint",
              "load_checkpoint", "TrainState", "main"]


def source(name):
    with open(os.path.join(ROOT, *name.split(".")) + ".py", encoding="utf-8") as f:
        return f.read()


def imports(name):
    """The project's modules that `name` imports (anywhere in the file, also inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(source(name))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}  # (from harness import cli)
    return found & set(MODULES)


def test_the_public_api_imports_from_microgpt():
    import microgpt as mg
    missing = [name for name in PUBLIC_API if not hasattr(mg, name)]
    assert not missing, missing


def test_no_root_module_imports_microgpt():
    offenders = [m for m in MODULES if m != "microgpt" and "microgpt" in imports(m)]
    assert not offenders, offenders


def test_root_modules_form_no_import_cycle():
    graph = {m: imports(m) for m in MODULES}
    state = {}

    def visit(m, path):
        if state.get(m) == "done":
            return
        assert state.get(m) != "active", f"import cycle: {' -> '.join(path + [m])}"
        state[m] = "active"
        for dep in sorted(graph[m]):
            visit(dep, path + [m])
        state[m] = "done"

    for m in MODULES:
        visit(m, [])


@pytest.mark.parametrize("name", MODULES)
def test_every_module_says_what_it_is_for(name):
    path = name.replace(".", "/")
    doc = ast.get_docstring(ast.parse(source(name)))
    expected = "harness -- " if name == "harness.__init__" else f"{path}.py -- "
    assert doc and doc.startswith(expected), f"{path}.py must open with '{expected}what it is for'"


def test_the_root_holds_the_chapters_and_harness_the_run():
    """What a reader of the chapters reads sits at the root; the run's machinery is in harness/."""
    machinery = {"cli", "errors", "corpora", "run_files", "checkpoints", "checks", "signals", "run", "messages"}
    assert not machinery & set(MODULES), "the run's machinery belongs in harness/"
    assert {f"harness.{m}" for m in machinery} <= set(MODULES)


def test_microgpt_is_short_and_in_the_references_order():
    text = source("microgpt")
    assert len(text.splitlines()) <= 350
    tree = ast.parse(text)
    long = {n.name: n.end_lineno - n.lineno + 1 for n in tree.body if isinstance(n, ast.FunctionDef)
            and n.end_lineno - n.lineno + 1 > 60}
    assert not long, f"functions over 60 lines: {long}"
    raises = sum(isinstance(n, ast.Raise) for n in ast.walk(tree))
    assert raises <= 2, f"{raises} raise statements: the run's checks belong in harness/checks.py"
    sections = re.findall(r"^# =+ (\d+)\. (\w+)", text, flags=re.M)
    assert [name for _, name in sections] == ["dataset", "tokenizer", "parameters", "model", "loss", "Adam",
                                              "training", "inference", "main"]
    assert [int(n) for n, _ in sections] == list(range(1, 10))
    # gpt, then gpt_sphere right after it, so the two can be read as a diff
    defs = [node.name for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)]
    assert defs.index("gpt_sphere") <= defs.index("gpt") + 2
    for name in ("gpt", "loss_and_grads_value", "adam_step", "train", "sample_value", "main"):
        assert name in defs, name


def test_the_training_loop_reads_like_the_references():
    """train() is the reference's loop: the step's docs, forward and loss, backward, Adam (+ retract), report;
    everything a run adds is one object, called twice per step."""
    tree = ast.parse(source("microgpt"))
    train = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "train")
    loop = next(n for n in ast.walk(train) if isinstance(n, ast.For))
    calls = [ast.unparse(n.func) for n in sorted((n for n in ast.walk(loop) if isinstance(n, ast.Call)),
                                                 key=lambda n: (n.lineno, n.col_offset))]
    assert [c for c in calls if c.startswith("run.")] == ["run.diverged", "run.after_step"]
    order = [c for c in calls if c in ("loss_and_grads", "adam_step", "retract", "run.diverged", "run.after_step")]
    assert order == ["loss_and_grads", "run.diverged", "adam_step", "retract", "run.after_step"]
    assert len(loop.body) <= 10 and not [n for n in ast.walk(train) if isinstance(n, (ast.Try, ast.Raise))]
