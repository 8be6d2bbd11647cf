"""Shared by the tests: a tiny model's flags and corpus, main() run in-process and as a child, runs with their
planetarium history, crafted files, and how to measure a child's memory and wait for it to reach a phase."""
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np

import microgpt as mg
import planetarium
from harness import run_files
from harness.checkpoints import load_checkpoint
from harness.history import HISTORY_NAME, load_history

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


LONG = TINY + ["--steps", "10000000", "--eval-every", "20"]  # (its history fits the memory estimate)


def wait_for_training(proc):
    for line in proc.stdout:
        if line.startswith("step"):
            return
    raise AssertionError("the run ended before training: " + proc.stderr.read())


def wait_for_checkpoint(path, timeout=30):
    t0 = time.time()
    while not os.path.exists(path):
        assert time.time() - t0 < timeout, f"{path} never appeared"
        time.sleep(0.05)


def loading_numpy(proc, timeout=20):
    """Wait until the child maps NumPy's core library: it is importing NumPy, the slow part of starting up."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and os.path.exists(f"/proc/{proc.pid}/maps"):
        with open(f"/proc/{proc.pid}/maps") as f:
            if "_multiarray_umath" in f.read():
                return
        time.sleep(0.001)


STEPS = 300


MB = 2**20


def one_clean_line(err):
    """stderr is one line: no traceback, no NumPy RuntimeWarning."""
    assert "Traceback" not in err and "Warning" not in err, err
    assert err.strip().count("\n") == 0, err


def child(args, cwd=ROOT, **kwargs):
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "microgpt.py"), *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


PEAK = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)")


def peak_rss_mb(args, cwd=ROOT, script="microgpt.py"):
    """(exit code, stderr, peak resident memory in MB) of `python SCRIPT ARGS`, measured by a small parent process
    of its own (whose only child it is: RUSAGE_CHILDREN's peak is then exactly this run's; a child of the big
    test process itself would start its count at the parent's size)."""
    proc = subprocess.run([sys.executable, "-c", PEAK, sys.executable, os.path.join(ROOT, script), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)
    err, peak_kb = proc.stderr.rstrip("\n").rsplit("\n", 1) if "\n" in proc.stderr.strip() else ("", proc.stderr)
    return proc.returncode, err + "\n", int(peak_kb) / 1024  # (ru_maxrss is in KB on Linux)


def fail_fsync_after(monkeypatch, n_ok):
    """Make run_files' fsync fail with ENOSPC (a full disk) after n_ok successful calls."""
    calls, real = [], os.fsync

    def fsync(fd):
        calls.append(fd)
        if len(calls) > n_ok:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(run_files.os, "fsync", fsync)


def edit_npz(path, **changes):
    """Rewrite the .npz at `path` with its meta's entries updated by `changes` (the crafted files of a red team)."""
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    for key, value in changes.items():
        if isinstance(value, dict):
            meta[key].update(value)
        else:
            meta[key] = value
    arrays["meta"] = np.array(json.dumps(meta))
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def write_npz(path, **arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def make_runs(base, steps=STEPS):
    """Two runs of the default model from the same seed, rmsnorm and sphere, NumPy engine, each with --out (as a
    learner makes them), and the page for both."""
    out = {}
    for norm in ("rmsnorm", "sphere"):
        folder = base / norm
        assert mg.main(["--engine", "numpy", "--norm", norm, "--steps", str(steps), "--num-samples", "1",
                        "--out", str(folder)]) == 0
        ckpt = load_checkpoint(str(folder / "checkpoint.npz"))
        out[norm] = {"dir": str(folder), "params": ckpt.params, "train_loss": ckpt.train_loss,
                     "val_loss": ckpt.val_loss, "loaded": load_history(folder / HISTORY_NAME)}
    out["html"] = base / "two.html"
    assert planetarium.main([out["rmsnorm"]["dir"], out["sphere"]["dir"], "--html", str(out["html"])]) == 0
    # the PageRuns that page holds (made again: the same runs make the same page)
    out["page_runs"] = planetarium.make_page([(out[n]["loaded"], n) for n in ("rmsnorm", "sphere")])[1]
    return out


BROKEN = ["random bytes", "truncated", "empty", "a folder", "pickled object", "a header claiming 1e12 weights",
          "stars off the sphere", "another format", "steps out of order", "NaN weights", "an extra member"]


def broken(kind, folder, good):
    """Make `folder` a run folder whose history.npz is broken in the way `kind` says."""
    folder.mkdir()
    path = folder / HISTORY_NAME
    raw = open(good, "rb").read()
    if kind == "random bytes":
        path.write_bytes(np.random.default_rng(0).bytes(5000))
    elif kind == "truncated":
        path.write_bytes(raw[:len(raw) // 2])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "a folder":
        path.mkdir()
    else:
        with np.load(good) as z:
            arrays = {name: z[name] for name in z.files}
        meta = json.loads(str(arrays["meta"]))
        if kind == "pickled object":
            arrays["params"] = np.full(arrays["params"].shape, None, dtype=object)  # the right shape, pickled
            with open(path, "wb") as f:
                np.savez(f, **arrays)  # (savez pickles object arrays; the loader must refuse to unpickle)
            return
        if kind == "a header claiming 1e12 weights":
            meta["config"]["n_embd"] = 2**20
            meta["config"]["n_head"] = 1
        elif kind == "stars off the sphere":
            arrays["params"] = arrays["params"] * 1.5
        elif kind == "another format":
            meta["format"] = "something-else"
        elif kind == "steps out of order":
            arrays["step"] = arrays["step"][::-1].copy()
        elif kind == "NaN weights":
            arrays["params"] = arrays["params"].copy()
            arrays["params"][3, 7] = np.nan
        elif kind == "an extra member":
            arrays["extra"] = np.zeros(3)
        arrays["meta"] = np.array(json.dumps(meta))
        write_npz(path, **arrays)


def children(pid):
    """The pids of the processes whose parent is `pid`."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def alive(pid):
    """Is process `pid` running (not a zombie)?"""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


NUMBER = r"-?\d+\.\d+(?:e[-+]?\d+)?"


def page_differences(got, want, rel=1e-6):
    """Where two pages differ, but for the embedded font's bytes (fontTools' versions subset a font into
    different bytes) and, in decimal numbers, the last digits a machine's floating point may change."""
    got, want = (re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,FONT", page) for page in (got, want))
    skeletons = [re.sub(NUMBER, "#", page) for page in (got, want)]
    if skeletons[0] != skeletons[1]:
        a, b = (s.splitlines() for s in skeletons)
        diff = [f"{x[:120]!r} != {y[:120]!r}" for x, y in zip(a, b) if x != y][:3]
        return diff or [f"{len(a)} lines != {len(b)} lines"]
    numbers = zip(re.findall(NUMBER, got), re.findall(NUMBER, want))
    return [f"{x} != {y}" for x, y in numbers if abs(float(x) - float(y)) > rel * max(1e-3, abs(float(y)))][:3]
