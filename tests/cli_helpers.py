"""Shared by the command-line tests: a tiny model's flags, a tiny corpus, and main() run in-process."""
import os
import signal
import subprocess
import sys

import microgpt as mg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["--engine", "numpy", "--n-embd", "8", "--n-head", "2", "--block-size", "8", "--num-samples", "3"]
NAMES = "anna\nbob\ncarla\ndave\neve\nfrank\ngrace\nheidi\nivan\njudy\nmallory\noscar\npeggy\nsybil\ntrent\n"


def write_corpus(folder, text=NAMES, name="names.txt"):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def interrupt_at(monkeypatch, k):
    """Make the k-th optimizer step deliver a real SIGINT (Ctrl-C) to this process."""
    real = mg.adam_step

    def adam_step(flat, grad, m, v, step, *args, **kwargs):
        real(flat, grad, m, v, step, *args, **kwargs)
        if step + 1 == k:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(mg, "adam_step", adam_step)


def run(capsys, argv):
    """main(argv) -> (exit code, stdout, stderr); argparse's own errors exit via SystemExit."""
    try:
        code = mg.main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def start(args, **kwargs):
    """python microgpt.py ARGS as a child process (text mode), from the repository root."""
    return subprocess.Popen([sys.executable, "microgpt.py", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def snapshot(folder):
    return {p: open(os.path.join(folder, p), "rb").read() for p in sorted(os.listdir(folder))}
