"""microgpt.py under a debugger: stepping into train() shows the chapter making its data, weights and Adam
moments; a learner's mistake is a traceback at their line; a debugger keeps its Ctrl-C.

Someone who edits gpt() and breaks it must see Python's traceback, and `python -m pdb microgpt.py` must stop
post-mortem where the mistake is; only the engine's own numeric failures count as divergence. Under pdb, Ctrl-C
during training breaks into the (Pdb) prompt with the program still running, and `c` continues training.
"""
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from cli_helpers import ROOT, TINY, write_corpus

import dev

BROKEN_LINE = "        x = linear(x, state_dict[f'layer{li}.mlp_fc1'])"


def broken_copy(folder):
    """microgpt.py with a learner's mistake: gpt()'s mlp_fc2 changed to mlp_fc1 (a shape error)."""
    text = open(os.path.join(ROOT, "microgpt.py"), encoding="utf-8").read()
    gpt = text.index("def gpt(")
    fc2 = text.index("        x = linear(x, state_dict[f'layer{li}.mlp_fc2'])", gpt)
    assert fc2 < text.index("def gpt_sphere(")  # the line is gpt()'s own
    path = os.path.join(folder, "microgpt.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:fc2] + BROKEN_LINE + text[fc2 + len(BROKEN_LINE):])
    return path


def pdb(*args):
    """`python3 dev.py pdb ARGS` with this Python: `python -m pdb -- ARGS` (Python 3.13.0's pdb refuses
    a script's flags without the `--`, and needs dev.py's fix to break on a function by its name)."""
    return dev.command_for("pdb", sys.executable, list(args))


def env():
    """The copy imports the project's modules from the repository, and prints without buffering."""
    return {**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"}


@pytest.mark.slow
def test_stepping_into_train_shows_the_chapter_making_its_tokens_weights_and_moments(tmp_path):
    """`s` into train() from main, then `n`: the lines shown are microgpt.py's (never the harness's), and
    before the loop they check the settings and make each document's tokens, the weights and Adam's m, v."""
    corpus = write_corpus(str(tmp_path))
    text = open(os.path.join(ROOT, "microgpt.py"), encoding="utf-8").read().splitlines()
    call = next(i for i, line in enumerate(text, 1) if "= train(train_docs, val_docs, vocab, cfg" in line)  # in main
    # `unt` (until) is `n` that runs a loop, or a list comprehension, to its end: from Python 3.12 on a
    # comprehension runs in train()'s own frame (PEP 709), and `n` would stop at each of its elements
    commands = [f"b {os.path.join(ROOT, 'microgpt.py')}:{call}", "c", "s"] + ["unt"] * 12 + ["q"]
    proc = subprocess.run(pdb(os.path.join(ROOT, "microgpt.py"), *TINY, "--corpus", corpus, "--steps", "1"), input="\n".join(commands) + "\n", cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=120)
    after = proc.stdout.split("--Call--", 1)[1]
    frames = re.findall(r"^(?:\(Pdb\) )?> (.*?)\((\d+)\)(\w+)\(\)\n-> (.*)$", after, flags=re.M)
    assert frames and all(f[0].endswith("microgpt.py") and f[2] == "train" for f in frames), after
    shown = list(dict.fromkeys(f[3] for f in frames))[1:]  # each line once (the first: the def line)
    made = list(dict.fromkeys(line.split(" = ")[0] for line in shown if " = " in line))
    assert made[:6] == ["settings", "docs", "val_tokens", "params", "flat", "m, v"], shown
    assert any("docs = [doc_tokens(doc, vocab)" in line for line in shown)
    assert any("params = init_params(cfg" in line for line in shown)


def test_a_learners_mistake_in_gpt_is_a_traceback_into_gpt_not_divergence(tmp_path):
    script = broken_copy(str(tmp_path))
    corpus = write_corpus(str(tmp_path))
    proc = subprocess.run([sys.executable, script, "--steps", "2", "--corpus", corpus], cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=120, env=env())
    assert proc.returncode == 1  # Python's own exit code for an uncaught exception
    assert "Traceback (most recent call last)" in proc.stderr
    assert re.search(r'File ".*microgpt\.py", line \d+, in gpt\n\s+' + re.escape(BROKEN_LINE.strip()), proc.stderr), \
        proc.stderr
    assert "linear: x has 64 entries" in proc.stderr  # the shape message is the exception's text
    assert "diverged" not in proc.stderr + proc.stdout


def test_pdb_stops_post_mortem_at_the_learners_line(tmp_path):
    script = broken_copy(str(tmp_path))
    corpus = write_corpus(str(tmp_path))
    proc = subprocess.run(pdb(script, "--steps", "2", "--corpus", corpus),
                          input="c\nup\np li, len(x)\nq\n", cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=120, env=env())
    assert "Entering post mortem debugging" in proc.stdout, proc.stdout + proc.stderr
    # `up` from linear() reaches the learner's line in gpt(), with gpt's variables to inspect
    assert re.search(r"microgpt\.py\(\d+\)gpt\(\)\n-> " + re.escape(BROKEN_LINE.strip()), proc.stdout), proc.stdout
    assert "(0, 64)" in proc.stdout  # layer 0; x is the 4C = 64 hidden units the wrong matrix cannot take


class Console:
    """A child process on pipes, read by a thread: wait for text on its stdout, type lines into its stdin."""

    def __init__(self, args, **kwargs):
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     **kwargs)
        self.out, self.chunks = "", queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while chunk := os.read(self.proc.stdout.fileno(), 4096):
            self.chunks.put(chunk.decode("utf-8", "replace"))

    def wait_for(self, pattern, start=0, timeout=60):
        """The position after the first match of `pattern` in the output from `start` on."""
        deadline = time.monotonic() + timeout
        while not (match := re.search(pattern, self.out[start:])):
            try:
                self.out += self.chunks.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {pattern!r} within {timeout} s; output so far:\n{self.out[-3000:]}")
        return start + match.end()

    def type(self, line):
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="needs POSIX signals")
def test_ctrl_c_under_pdb_breaks_into_the_prompt_and_c_continues_training(tmp_path):
    corpus = write_corpus(str(tmp_path))
    shutil.copy(os.path.join(ROOT, "microgpt.py"), tmp_path)  # (run from a copy: pdb may restart it at the end)
    console = Console(pdb("microgpt.py", *TINY, "--corpus", corpus, "--steps", "10000000", "--eval-every", "200",
                          "--out", str(tmp_path / "run")), cwd=str(tmp_path), env=env())
    try:
        at = console.wait_for(r"\(Pdb\) ")  # pdb stops before the first line
        console.type("c")
        at = console.wait_for(r"step +\d+/10000000 .*val loss", at)  # training is under way
        console.proc.send_signal(signal.SIGINT)
        at = console.wait_for(r"Program interrupted\. \(Use 'cont' to resume\)\.", at)
        at = console.wait_for(r"\(Pdb\) ", at)  # the prompt is back, and the program is still alive
        assert console.proc.poll() is None
        console.type("p 6 * 7")
        at = console.wait_for(r"\b42\n", at)
        console.type("c")  # training continues from where it was stopped
        at = console.wait_for(r"step +\d+/10000000 .*val loss", at)
        assert console.proc.poll() is None
        assert "interrupted at step" not in console.out and "checkpoint saved" not in console.out  # pdb had it
    finally:
        console.proc.kill()
        console.proc.wait(timeout=30)


def test_the_divergence_message_names_the_commands_that_stop_pdb_where_the_number_broke(tmp_path):
    """Exit 1 names a command, `b microgpt.py:LINE` and `c` twice; typed as it says, and nothing else, the first `c`
    stops at that line (main()'s `except NumericError`), the second goes post-mortem at the line that raised
    the error (not "The program exited via sys.exit()")."""
    corpus = write_corpus(str(tmp_path))
    flags = [*TINY, "--corpus", corpus, "--steps", "20", "--lr", "1e300"]
    plain = subprocess.run([sys.executable, os.path.join(ROOT, "microgpt.py"), *flags], cwd=str(tmp_path),
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 1 and "training diverged" in plain.stderr, plain.stderr
    # the command it prints repeats the flags and runs from where it was printed: dev.py pdb on microgpt.py
    command, then = re.search(r"To see where it broke: (.+?), then (.*)", plain.stderr).groups()
    words = shlex.split(command)
    assert words[0] == "python3" and words[2] == "pdb" and words[4:] == flags, words
    assert os.path.samefile(tmp_path / words[1], os.path.join(ROOT, "dev.py"))
    assert os.path.samefile(tmp_path / words[3], os.path.join(ROOT, "microgpt.py"))
    typed = re.findall(r"`([^`]+)`", then)
    assert re.fullmatch(r"b microgpt\.py:\d+", typed[0]) and typed[1:] == ["c", "c"], then
    proc = subprocess.run(pdb(words[3], *words[4:]), input="\n".join(typed + ["q"]) + "\n", cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=120, env=env())
    shown = proc.stdout.split("(Pdb) ")  # [before the first command, after the first, ...]
    line = typed[0].split(":")[1]
    assert f"microgpt.py({line})main()\n-> except NumericError as e:" in shown[2], proc.stdout[-2000:]
    assert "Uncaught exception. Entering post mortem debugging" in shown[3], proc.stdout[-2000:]
    assert "NumericError: the loss" in proc.stderr and "exited via sys.exit()" not in proc.stdout
    raised = re.findall(r'File "(.*)", line (\d+), in \w+\n', proc.stderr)[-1]  # the traceback's innermost line
    assert re.search(rf"> {re.escape(raised[0])}\({raised[1]}\)\w+\(\)\n-> raise ", shown[3])  # pdb is there
