"""The repository's shape (issue 9): microgpt.py is the chapter file, in the reference's order and short; what is
not the chapter lives in modules of its own that never import microgpt.py and form no import cycle."""
import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = sorted(f[:-3] for f in os.listdir(ROOT) if f.endswith(".py"))

PUBLIC_API = ["load_corpus", "split_docs", "build_vocab", "encode", "decode", "doc_tokens", "GPTConfig",
              "init_params", "gpt", "gpt_sphere", "loss_and_grads", "forward_np", "backward_np", "adam_step",
              "retract", "project_grads", "train", "evaluate", "baselines", "sample", "save_checkpoint",
              "load_checkpoint", "TrainState", "main"]


def source(name):
    with open(os.path.join(ROOT, name + ".py"), encoding="utf-8") as f:
        return f.read()


def imports(name):
    """The root modules that `name` imports (anywhere in the file, also inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(source(name))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
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
def test_every_root_module_says_what_it_is_for(name):
    doc = ast.get_docstring(ast.parse(source(name)))
    assert doc and doc.startswith(f"{name}.py -- "), f"{name}.py must open with '{name}.py -- what it is for'"


def test_microgpt_is_short_and_in_the_references_order():
    text = source("microgpt")
    assert len(text.splitlines()) <= 700
    sections = re.findall(r"^# =+ (\d+)\. (\w+)", text, flags=re.M)
    assert [name for _, name in sections] == ["dataset", "tokenizer", "parameters", "model", "loss", "Adam",
                                              "training", "inference", "main"]
    assert [int(n) for n, _ in sections] == list(range(1, 10))
    # gpt, then gpt_sphere right after it, so the two can be read as a diff
    defs = [node.name for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)]
    assert defs.index("gpt_sphere") <= defs.index("gpt") + 2
    for name in ("gpt", "loss_and_grads_value", "adam_step", "train", "sample_value", "main"):
        assert name in defs, name
