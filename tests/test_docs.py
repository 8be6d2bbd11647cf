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


def listed_line(listing, code):
    """The number `ll` showed beside the first line of code (not a comment) that starts with `code`."""
    rows = re.findall(r"^\s*(\d+)[^\t\n]*\t(.*)$", listing, flags=re.M)
    return next(number for number, text in rows if text.strip().startswith(code))


def walk(args, commands, cwd):
    """Type a session's commands exactly as the page gives them, each once and nothing else; LINE is what the
    last `ll` showed beside the comment's last `code`. [(command as typed, comment, what pdb showed)]."""
    pdb, listing, typed = Pdb(args, cwd), "", []
    try:
        for command, comment in commands:
            if "LINE" in command:
                command = command.replace("LINE", listed_line(listing, re.findall(r"`([^`]+)`", comment)[-1]))
            shown = pdb.type(command)
            listing = shown if command == "ll" else listing
            typed.append((command, comment, shown))
    finally:
        pdb.close()
    assert "***" not in pdb.out, pdb.out  # pdb's mark of a command that failed
    return typed


def shown_by(typed, command):
    """What pdb showed after each time `command` was typed (a LINE already the number)."""
    return [shown for c, _, shown in typed if re.fullmatch(command, c)]


def test_the_japanese_walkthrough_types_the_english_ones_commands():
    english, japanese = pdb_sessions(read("docs/debugging.md")), pdb_sessions(read("docs/debugging.ja.md"))
    assert [(args, [c for c, _ in typed]) for args, typed in japanese] == \
        [(args, [c for c, _ in typed]) for args, typed in english] and len(english) == 2
    for (_, english_typed), (_, japanese_typed) in zip(english, japanese):  # LINE: the same line of code
        assert [re.findall(r"`([^`]+)`", e)[-1:] for c, e in english_typed if "LINE" in c] == \
            [re.findall(r"`([^`]+)`", j)[-1:] for c, j in japanese_typed if "LINE" in c]


# Typed as a learner types (a line, then read up to the prompt), the page takes about 3 s, on every Python CI
# tests (pdb's stops differ between versions); the Japanese page types the same commands (the test above)
def test_the_pdb_walkthrough_works_as_written(tmp_path):
    """The page's pdb sessions (into train(); a training step and the inference loop), typed into pdb exactly as
    written, on the Python that runs the tests; what the comments promise is what pdb shows."""
    sessions = pdb_sessions(read("docs/debugging.md"))
    tiny = ["--n-embd", "4", "--n-head", "1", "--steps", "1", "--num-samples", "1"]
    assert [args for args, _ in sessions] == [tiny, tiny]
    typed = walk(*sessions[0], tmp_path)
    assert "-> settings = dict(" in shown_by(typed, "c")[0]  # train()'s first line
    assert "-> params = init_params(cfg, seed, dtype)" in shown_by(typed, r"unt \d+")[0]
    assert re.match(r"\(4647, \[26, (\d+, )+26\]\)\n", shown_by(typed, r"p len\(docs\), docs\[0\]")[0])
    typed = walk(*sessions[1], tmp_path)
    assert shown_by(typed, "p token_id, pos_id") == ["(26, 0)\n(Pdb) "]  # BOS (id 26 of 27) at position 0
    assert "gpt()\n-> x = rmsnorm(x)" in shown_by(typed, r"unt \d+")[0]  # the first one, after the embedding
    assert re.fullmatch(r"\[(Value\(data=-?[\d.e-]+, grad=0, op='\+'\), ){3}Value\([^)]*\)\]\n\(Pdb\) ",
                        shown_by(typed, "p x")[0])  # 4 Values, each a sum
    assert "microgpt.py(" in shown_by(typed, "up")[0] and "-> loss.backward()" in shown_by(typed, "up")[0]
    assert re.match(r"\(\d+, Value\(data=[\d.]+, grad=0, op='\*'\)\)", shown_by(typed, r"p len\(losses\), loss")[0])
    line = re.fullmatch(r"b (\d+), child is W", typed[[c for c, _, _ in typed].index("down") + 1][0]).group(1)
    pushed = next(shown for c, _, shown in typed if c == "c" and "value.py(" in shown and "backward()" in shown
                  and f"({line})backward()" in shown)  # the breakpoint on W's push, in the binary op
    assert "-> child.grad += local_grad * node.grad" in pushed
    assert re.match(r"\('\*', -?[\d.e-]+, -?[\d.e-]+\)", shown_by(typed, r"p node\._op, local_grad, node\.grad")[0])
    w = [re.match(r"Value\(data=(-?[\d.e-]+), grad=(-?[\d.e-]+)\)", s).groups()
         for s in shown_by(typed, r"p state_dict\['lm_head'\]\[0\]\[0\]")]
    child = re.match(r"Value\(data=(-?[\d.e-]+), grad=(-?[\d.e-]+)\)", shown_by(typed, "p child")[0]).groups()
    assert w[0][1] == "0" and child[0] == w[0][0] and child[1] != "0" and w[1][1] != "0"  # W: none, some, all
    assert "microgpt.py(" in shown_by(typed, "n")[-1] and "loss_and_grads_value()" in shown_by(typed, "n")[-1]
    assert shown_by(typed, r"p flat\.shape, grad\[:3\]")[0].startswith("((472,), array(")  # every parameter
    assert all("draw()->" in s for s in shown_by(typed, "r")[1:])  # the draw returns the id it picked
    assert re.match(r"\(0, 1, \[(0\.\d+, ){26}0\.\d+\]\)", shown_by(typed, r"p pos_id, len\(keys\[0\]\), .*")[0])
    assert shown_by(typed, r"p pos_id, len\(keys\[0\]\)") == ["(1, 2)\n(Pdb) "]  # position 1, two cached keys


DOCUMENTED = ["README.md", "README.ja.md", "docs/*.md", "experiments/README.md", "benchmarks/README.md",
              "notebooks/README.md"]
# Documented commands that take over a minute, or that another test runs: what a fresh clone leaves out, and why
LONG = {r"^python3 dev\.py test\b": "the tests themselves (CI runs them all)",
        r"^python3 dev\.py notebooks\b": "executes every notebook (tests/test_notebooks.py builds them)",
        r"^python3 dev\.py lab\b": "a server (tests/test_dev.py starts it)",
        r"^python3 dev\.py run$": "the first Quickstart command, run first as written",
        r"^python3 dev\.py python experiments/\S+ *$|--gate-pilot|--corpus names\.txt": "a whole study: minutes",
        r"--corpus shakespeare": "2,000 steps of the plays: two minutes (tests/test_corpora.py runs it for 3)",
        r"experiments/(repeat|alpha)\.py --quick": "a study's smoke test (its tests/test_experiments_*.py runs it)",
        r"--deadline|--anchor-contexts": "a part of a study: minutes",
        r"archive/(experiments|benchmarks)/": "a finished study, run from its tag (git worktree add archive ...)",
        r"^\.venv/bin/python benchmarks/": "the benchmarks: minutes each",
        r"browser_helpers|runs/big": "the planetarium frame benchmark's recipe (its page is 4.6 MB)",
        r"runs/p16\.html": "the page load benchmark's recipe (tests/test_step_player.py makes that page)",
        r"tests/test_planetarium_browser\.py": "the browser tests' own checks (tests/test_planetarium_browser.py)"}


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
    first = run("python3 dev.py run", 3000)  # (the setup and 35 s of training: 140 s measured)
    assert "dev.py: installing requirements.txt and requirements-nodeps.txt into .venv (first time" in first.stderr
    assert first.returncode == 0 and "sample 20: " in first.stdout, first.stderr
    again = run("python3 dev.py test tests/test_value.py", 900)
    assert again.returncode == 0 and "installing" not in again.stderr and " passed" in again.stdout, again.stderr
    for command in documented_commands():
        if not any(re.search(pattern, command) for pattern in LONG):
            proc = run(command, 600)  # (each under 10 s on a quiet machine)
            ran.append(command)
            if proc.returncode != 0:
                failed.append(f"{command}\n{proc.stdout[-1000:]}\n{proc.stderr[-1000:]}")
    assert not failed, "\n\n".join(failed)
    assert len(ran) >= 10, ran


def test_the_project_is_mit_licensed_and_the_readmes_say_so():
    assert read("LICENSE").startswith("MIT License")
    assert all("](LICENSE)" in read(name) for name in ("README.md", "README.ja.md"))
