"""The README is part of the product: its commands, links and debugger line numbers must stay true."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def quickstart_commands():
    section = read("README.md").split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def test_ci_runs_exactly_the_quickstart_test_command():
    commands = quickstart_commands()
    test_commands = [c for c in commands if "pytest" in c]
    assert test_commands == ["python -m pytest"]
    ci_lines = [line.strip() for line in read(".ci/run").splitlines()]
    assert test_commands[0] in ci_lines
    assert "python -m pip install -q -r requirements.txt" in ci_lines  # CI installs what the README installs
    assert "python -m pip install -r requirements.txt" in commands


def test_pdb_breakpoints_point_at_the_lines_the_text_names():
    readme = read("README.md")
    expected = {"microgpt.py": "loss.backward()", "value.py": "a.grad += da * g"}
    found = re.findall(r"b (microgpt\.py|value\.py):(\d+)", readme)
    assert {name for name, _ in found} == set(expected)
    for name, line in found:
        source_line = read(name).splitlines()[int(line) - 1]
        assert expected[name] in source_line, f"README breaks at {name}:{line}, which is now {source_line!r}"


def test_local_links_exist():
    readme = read("README.md")
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert local, "expected links to notebooks and results"
    missing = [link for link in local if not os.path.exists(os.path.join(ROOT, link))]
    assert not missing, f"README links to missing files: {missing}"
