"""The repository's shape: microgpt.py is the chapter file, in the reference's order and short enough to read in
one sitting, and it makes its own data, weights and Adam state; what a run adds around it lives in harness/,
which stays lighter than it was; the model's layer imports nothing of harness/; no module imports microgpt.py
and the modules form no import cycle."""
import ast
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = sorted([f[:-3] for f in os.listdir(ROOT) if f.endswith(".py")] +
                 [f"harness.{f[:-3]}" for f in os.listdir(os.path.join(ROOT, "harness")) if f.endswith(".py")])

PUBLIC_API = ["load_corpus", "split_docs", "build_vocab", "encode", "decode", "doc_tokens", "GPTConfig",
              "init_params", "gpt", "gpt_sphere", "loss_and_grads", "gpt_forward", "gpt_backward",
              "adam_step", "retract", "project_grads", "train", "evaluate", "baselines",
              "sample", "TrainState", "main"]


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
    """Nothing builds on the chapter script but the step player, whose page is the chapter's own code running."""
    offenders = [m for m in MODULES if m not in ("microgpt", "step_player") and "microgpt" in imports(m)]
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
    machinery = {"cli", "errors", "run_files", "checkpoints", "shell", "run", "messages", "memory", "history"}
    assert not machinery & set(MODULES), "the run's machinery belongs in harness/"
    assert {f"harness.{m}" for m in machinery} <= set(MODULES)


def test_microgpt_is_short_and_in_the_references_order():
    text = source("microgpt")
    assert len(text.splitlines()) <= 380
    tree = ast.parse(text)
    raises = sum(isinstance(n, ast.Raise) for n in ast.walk(tree))
    assert raises <= 2, f"{raises} raise statements: the checks belong in checks.py and harness/"
    sections = re.findall(r"^# =+ (\d+)\. (\w+)", text, flags=re.M)
    assert [name for _, name in sections] == ["dataset", "tokenizer", "parameters", "model", "loss",
                                              "Adam", "training", "inference", "main"]
    assert [int(n) for n, _ in sections] == list(range(1, 10))
    # gpt, then gpt_sphere right after it, so the two can be read as a diff
    defs = [node.name for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)]
    assert defs.index("gpt_sphere") <= defs.index("gpt") + 2
    for name in ("gpt", "loss_and_grads_value", "adam_step", "train", "sample_value", "main"):
        assert name in defs, name


def test_the_training_loop_reads_like_the_references():
    """train() is the reference's loop: the step's docs, forward and loss, backward, Adam (+ retract),
    report; what a run adds is one observer, called twice per step."""
    tree = ast.parse(source("microgpt"))
    train = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "train")
    loop = next(n for n in ast.walk(train) if isinstance(n, ast.For))
    calls = [ast.unparse(n.func) for n in sorted((n for n in ast.walk(loop) if isinstance(n, ast.Call)),
                                                 key=lambda n: (n.lineno, n.col_offset))]
    assert [c for c in calls if c.startswith("observer.")] == ["observer.before_update",
                                                               "observer.after_update"]
    order = [c for c in calls if c in ("loss_and_grads", "adam_step", "retract") or "observer." in c]
    assert order == ["loss_and_grads", "observer.before_update", "adam_step", "retract",
                     "observer.after_update"]
    assert len([n for n in ast.walk(train) if isinstance(n, ast.Try)]) <= 1  # the engine's NumericError


def test_microgpt_imports_the_harness_only_inside_main():
    tree = ast.parse(source("microgpt"))
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    scripts = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]  # run as a
    inside = {id(n) for n in ast.walk(main)} | {id(n) for s in scripts for n in ast.walk(s)}  # script only
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) else []
        if any(name.split(".")[0] == "harness" for name in names):
            assert id(node) in inside, ast.unparse(node)


def test_training_through_the_python_api_enters_no_file_of_the_harness():
    code = ("import sys, microgpt as mg\n"
            "docs = ['anna', 'bob', 'carla', 'dave']\n"
            "vocab = mg.build_vocab(docs)\n"
            "cfg = mg.GPTConfig(len(vocab) + 1, n_embd=8, n_head=2, block_size=8)\n"
            "mg.train(docs[:3], docs[3:], vocab, cfg, steps=3, engine='numpy')\n"
            "mg.train(docs[:3], docs[3:], vocab, cfg, steps=2, engine='value')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'harness'))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"


def python_files():
    """Every non-test Python file outside notebooks/ that git tracks (or would: not ignored)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [p for p in listed if not p.startswith(("tests/", "notebooks/"))
            and os.path.exists(os.path.join(ROOT, p))]


# The design's bound on the non-test Python outside notebooks/, all parts together. The lines
# per part (the root's modules, harness/, experiments/, benchmarks/) are printed as information.
TOTAL_BOUND = 9000


def lines_per_part():
    per_part = {}
    for path in python_files():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            part = path.split("/")[0] if "/" in path else "root"
            per_part[part] = per_part.get(part, 0) + len(f.read().splitlines())
    return per_part


def test_the_code_is_plain_short_lines_short_functions():
    """Lines of at most 100 characters (at most 1% over), functions of at most 60 lines."""
    lines, long_functions = [], []
    for path in python_files():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        lines += text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > 60:
                    long_functions.append(f"{path}:{node.lineno} {node.name} ({length} lines)")
    long_lines = [line for line in lines if len(line) > 100]
    assert not long_functions, long_functions
    assert len(long_lines) <= 0.01 * len(lines), f"{len(long_lines)} of {len(lines)} lines"


def test_the_whole_is_under_its_bound():
    """All parts together within TOTAL_BOUND (the parts are printed as information)."""
    per_part = lines_per_part()
    print(f"lines of non-test Python per part: {per_part}")
    assert sum(per_part.values()) <= TOTAL_BOUND, f"{per_part}: bound {TOTAL_BOUND}"


MODEL_LAYER = ["value", "utils", "sphere", "model_config", "numpy_engine", "tracing", "settings", "checks",
               "corpora"]


@pytest.mark.parametrize("name", MODEL_LAYER)
def test_the_models_layer_imports_nothing_of_the_harness(name):
    """The engine and the model are read on their own: no arrow runs from them up to the run's machinery (the
    error types they raise live in settings.py and value.py)."""
    assert not [m for m in imports(name) if m.split(".")[0] in ("harness", "microgpt", "planetarium", "step_player")]


def test_the_chapter_makes_its_data_weights_and_adam_state_before_its_loop():
    """Stepping into train(), a learner sees each document's tokens, the weights and Adam's moments
    made in microgpt.py, as the reference makes them, before the loop; an observer only observes."""
    tree = ast.parse(source("microgpt"))
    train = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "train")
    loop = next(i for i, n in enumerate(train.body) if isinstance(n, ast.For))
    before = train.body[:loop]
    made = [t.id for n in before for a in ast.walk(n) if isinstance(a, ast.Assign) for t in a.targets
            if isinstance(t, ast.Name)] + [e.id for n in before for a in ast.walk(n)
                                           if isinstance(a, ast.Assign) for t in a.targets
                                           if isinstance(t, ast.Tuple) for e in t.elts]
    assert {"docs", "params", "flat", "m", "v", "grads", "state"} <= set(made), made
    calls = {ast.unparse(c.func) for n in before for c in ast.walk(n) if isinstance(c, ast.Call)}
    assert {"doc_tokens", "init_params", "np.zeros_like", "alloc_params"} <= calls


def test_every_module_has_a_test_file_named_after_it():
    """tests/test_<module>.py for a root module, tests/harness/test_<module>.py for the run's machinery (a test
    file may also be named after a module and an aspect of it: test_microgpt_pdb.py)."""
    tests = {os.path.relpath(p, os.path.join(ROOT, "tests")) for p in
             [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(ROOT, "tests")) for f in fs if f.endswith(".py")]}
    missing = []
    for name in MODULES:
        if name == "harness.__init__":
            continue
        package, _, module = name.rpartition(".")
        expected = os.path.join(package, f"test_{module}") if package else f"test_{module}"
        if not any(t == expected + ".py" or t.startswith(expected + "_") for t in tests):
            missing.append(expected + ".py")
    assert not missing, missing
