"""The README is part of the product: its commands, links and debugger line numbers must stay true."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def quickstart_commands(heading="## Quickstart"):
    """The commands of the first bash block under a heading (comments stripped)."""
    section = read("README.md").split(heading, 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def test_quickstart_is_two_commands_and_ci_runs_the_test_command():
    # one command sets up and runs microgpt.py, one runs the tests; the Japanese section says the same
    assert quickstart_commands() == ["python3 dev.py run", "python3 dev.py test"]
    assert quickstart_commands("### クイックスタート") == quickstart_commands()
    ci_lines = [line.strip() for line in read(".ci/run").splitlines()]
    assert "python3 dev.py test" in ci_lines  # CI runs exactly the README's test command (which installs first)
    assert not [line for line in ci_lines if "pytest" in line]


def test_dev_py_runs_what_it_says():
    import dev
    assert dev.COMMANDS["run"] == ["microgpt.py"] and dev.COMMANDS["test"] == ["-m", "pytest"]


def test_pdb_breakpoints_point_at_the_lines_the_text_names():
    readme = read("README.md")
    expected = {"microgpt.py": ["loss.backward()", "if token_id == BOS:"],
                "value.py": ["child.grad += local_grad * node.grad"]}
    found = re.findall(r"b (microgpt\.py|value\.py):(\d+)", readme)
    assert sorted(found) == sorted(set(found)) and len(found) == 3
    hits = []
    for name, line in found:
        source_line = read(name).splitlines()[int(line) - 1]
        match = [text for text in expected[name] if text in source_line]
        assert match, f"README breaks at {name}:{line}, which is now {source_line!r}"
        hits += match
    assert sorted(hits) == sorted(text for texts in expected.values() for text in texts)


def test_local_links_exist():
    readme = read("README.md")
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert local, "expected links to notebooks and results"
    missing = [link for link in local if not os.path.exists(os.path.join(ROOT, link))]
    assert not missing, f"README links to missing files: {missing}"


@pytest.mark.slow
def test_the_python_api_example_runs_as_written(tmp_path, monkeypatch):
    """The README's "Using it from Python" block, executed (with fewer steps, in a temporary folder)."""
    block = read("README.md").split("### Using it from Python", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    assert "steps=2000" in block
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(block.replace("steps=2000", "steps=60"), namespace)
    state, mg = namespace["state"], namespace["mg"]
    assert state.step == 60 and len(state.val_loss) == 2 and os.path.exists("ck.npz")
    assert mg.sample(state.params, state.cfg, state.vocab, num_samples=3, seed=0) == \
        mg.sample(state.params, state.cfg, state.vocab, num_samples=3, seed=0, engine="value")
