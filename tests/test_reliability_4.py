"""Issue 20, each case reproduced: every signal ends every phase cleanly, nothing a checkpoint or corpus says makes
a run allocate past --max-memory, no path prints a traceback or a NumPy warning, a moved run resumes, the printed
resume command works when pasted, and the Python API checks what the command line checks."""
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from cli_helpers import ROOT, TINY, interrupt_at, run, write_corpus
from test_reliability import LONG, wait_for_training

import dev
import microgpt as mg
from harness import cli, messages, run_files
from harness.checkpoints import TrainState
from harness.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, InputError
from harness.history import HISTORY_NAME
from harness.memory import machine_memory
from harness.run_files import LOCK_NAME


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(str(tmp_path))


def child(args, cwd=ROOT, **kwargs):
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "microgpt.py"), *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def one_clean_line(err):
    """stderr is one line: no traceback, no NumPy RuntimeWarning."""
    assert "Traceback" not in err and "Warning" not in err, err
    assert err.strip().count("\n") == 0, err


PEAK = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)")


def peak_rss_mb(args, cwd=ROOT):
    """(exit code, stderr, peak resident memory in MB) of `python microgpt.py ARGS`, measured by a parent process
    of its own (whose only child it is: RUSAGE_CHILDREN's peak is then exactly this run's)."""
    proc = subprocess.run([sys.executable, "-c", PEAK, sys.executable, os.path.join(ROOT, "microgpt.py"), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)
    err, peak_kb = proc.stderr.rstrip("\n").rsplit("\n", 1) if "\n" in proc.stderr.strip() else ("", proc.stderr)
    return proc.returncode, err + "\n", int(peak_kb) / 1024  # (ru_maxrss is in KB on Linux)


# ----------------------------------------------------------------------------- 1: signals in every phase

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_sample_only_is_exit_130_with_a_message(tmp_path, corpus, capsys, sig):
    ckpt = tmp_path / "run" / "checkpoint.npz"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(tmp_path / "run")])[0] == 0
    proc = child(["--sample-only", "--checkpoint", str(ckpt), "--num-samples", "100000000", "--engine", "numpy"])
    proc.stdout.readline(), proc.stdout.readline()  # the names are coming
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED and "interrupted" in err and "Traceback" not in err, err


def loading_numpy(proc, timeout=20):
    """Wait until the child maps NumPy's core library: it is importing NumPy, the slow part of starting up."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(f"/proc/{proc.pid}/maps") as f:
                if "_multiarray_umath" in f.read():
                    return
        except OSError:
            return
        time.sleep(0.001)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize("delay", [0.0, 0.3])
def test_a_signal_while_starting_is_exit_130_and_leaves_nothing(tmp_path, corpus, sig, delay):
    out = tmp_path / "run"
    proc = child(LONG + ["--corpus", corpus, "--out", str(out)], cwd=tmp_path)
    if os.path.exists(f"/proc/{proc.pid}/maps"):
        loading_numpy(proc)  # (the first moment a signal must be caught: while NumPy loads)
    time.sleep(delay)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED and "interrupted" in err and "Traceback" not in err, (delay, err)
    assert not (out / LOCK_NAME).exists()  # the folder is not left held, nor created for nothing
    assert not out.exists() or os.listdir(out)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_training_saves_and_releases_the_folder(tmp_path, corpus, sig):
    out = tmp_path / "run"
    proc = child(LONG + ["--corpus", corpus, "--out", str(out)])
    wait_for_training(proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED and "checkpoint saved" in err and "Traceback" not in err
    assert not (out / LOCK_NAME).exists()
    assert (out / HISTORY_NAME).exists() and mg.load_checkpoint(str(out / "checkpoint.npz")).step >= 20


def test_a_signal_during_the_final_writes_lets_them_finish(tmp_path, corpus, capsys, monkeypatch):
    real = run_files.write_json

    def write_json(path, obj):  # SIGTERM arrives while metrics.json is being written
        signal.raise_signal(signal.SIGTERM)
        real(path, obj)

    monkeypatch.setattr(cli, "write_json", write_json)
    out = tmp_path / "run"
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "5", "--out", str(out)])
    assert code == EXIT_INTERRUPTED and "all of them were written" in err
    assert sorted(os.listdir(out)) == ["checkpoint.npz", HISTORY_NAME, "loss.png", "metrics.json"]  # no lock left
    assert json.loads((out / "metrics.json").read_text())["steps"] == 5


def test_a_second_signal_after_the_run_stopped_says_what_was_kept(tmp_path, corpus, capsys, monkeypatch):
    def names(*args, **kwargs):  # Ctrl-C while the names are sampled, after training saved its last checkpoint
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(mg, "iter_samples", names)
    out = tmp_path / "run"
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "5", "--out", str(out)])
    assert code == EXIT_INTERRUPTED and "stopped without saving" not in err
    assert f"the last checkpoint is {str(out / 'checkpoint.npz')!r} (step 5)" in err


# ----------------------------------------------------------------------------- 2, 6: sizes before allocation

def huge_history_checkpoint(tmp_path, capsys, corpus, steps=30_000_000):
    """A real checkpoint, edited to claim step = steps = 3e7 with a loss history of zeros (which compresses to
    almost nothing: a small file that says a lot)."""
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])[0] == 0
    with np.load(out / "checkpoint.npz") as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    meta.update(step=steps, steps=steps)
    arrays.update(meta=np.array(json.dumps(meta)), train_loss=np.zeros(steps))
    path = tmp_path / "huge.npz"
    np.savez_compressed(path, **arrays)
    assert path.stat().st_size < 2**20
    return path


@pytest.mark.parametrize("mode", ["sample-only", "resume"])
def test_a_checkpoint_claiming_a_huge_history_is_refused_before_it_is_loaded(tmp_path, corpus, capsys, mode):
    path = huge_history_checkpoint(tmp_path, capsys, corpus)
    args = (["--sample-only", "--checkpoint", str(path)] if mode == "sample-only"
            else ["--resume", "--checkpoint", str(path), "--out", str(tmp_path / "new"), "--corpus", corpus])
    code, err, peak = peak_rss_mb(args + ["--max-memory", "0.5"])
    assert code == EXIT_BAD_INPUT and "30,000,000 steps" in err and "the limit is 0.5 GB" in err
    one_clean_line(err)
    assert peak < 400, peak  # (the file's history alone would be 960 MB as a Python list)


def test_a_corpus_file_is_measured_before_it_is_read_into_documents(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"ab\n" * (20 * 2**20))  # 60 MiB: 21 million documents
    t0 = time.monotonic()
    code, err, peak = peak_rss_mb(["--corpus", str(path), "--max-memory", "0.1"])
    assert code == EXIT_BAD_INPUT and "20,971,521 lines" in err
    one_clean_line(err)
    assert time.monotonic() - t0 < 30 and peak < 400, peak  # (was 17-20 s and 1.1 GB)


@pytest.mark.parametrize("flags", [["--max-memory", "1e6", "--n-embd", "200000", "--n-head", "1"],
                                   ["--max-memory", "1e6", "--n-embd", "4611686018427387904", "--n-head", "1"]])
def test_a_model_larger_than_the_machine_is_refused_in_one_line(corpus, capsys, flags):
    code, _, err = run(capsys, TINY + ["--corpus", corpus] + flags)
    assert code == EXIT_BAD_INPUT and "this machine has" in err and "GB" in err
    one_clean_line(err)


def test_the_steps_history_counts_in_the_memory_estimate(corpus, capsys):
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "1000000000"])
    assert code == EXIT_BAD_INPUT and "1,000,000,000 steps" in err


def test_an_allocation_that_fails_anyway_is_one_line(corpus, capsys, monkeypatch):
    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(mg, "alloc_params", no_memory)
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "3"])
    assert code == EXIT_BAD_INPUT and "not enough memory" in err
    one_clean_line(err)


# ----------------------------------------------------------------------------- 3, 5: overflowing weights or flags

@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
@pytest.mark.parametrize("engine", ["value", "numpy"])
def test_weights_that_overflow_the_forward_pass_are_refused_alike(tmp_path, corpus, capsys, norm, engine):
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--norm", norm, "--out", str(out)])[0] == 0
    with np.load(out / "checkpoint.npz") as z:
        arrays = {k: (z[k] * 1e300 if k.startswith("param:") else z[k]) for k in z.files}
    np.savez(out / "checkpoint.npz", **arrays)
    for args in (["--sample-only", "--checkpoint", str(out / "checkpoint.npz"), "--engine", engine],
                 ["--resume", "--out", str(out), "--steps", "6", "--engine", engine]):
        proc = subprocess.run([sys.executable, "microgpt.py", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == EXIT_BAD_INPUT and "forward pass overflows" in proc.stderr, proc.stderr
        one_clean_line(proc.stderr)


@pytest.mark.parametrize("engine", ["value", "numpy"])
@pytest.mark.parametrize("flag, value, words", [("--alpha-init", "1e200", "forward pass overflows"),
                                                ("--sz-init", "1e300", "logits span 1.57e+300")])
def test_flags_that_overflow_the_model_are_refused_the_same_on_both_engines(tmp_path, corpus, engine, flag, value,
                                                                            words):
    proc = subprocess.run([sys.executable, "microgpt.py", *TINY, "--corpus", corpus, "--norm", "sphere", flag, value,
                           "--engine", engine, "--steps", "3", "--out", str(tmp_path / "run")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == EXIT_BAD_INPUT and words in proc.stderr, proc.stderr
    one_clean_line(proc.stderr)
    assert len(proc.stderr) < 400  # (no 300-digit number)
    assert not (tmp_path / "run").exists()  # refused after the folder was taken: given back as it was


def test_a_huge_loss_is_never_printed_as_a_300_digit_number():
    assert messages.fmt_loss(1e300) == "1.000e+300" and messages.fmt_loss(2.34567) == "2.3457"


def test_no_numpy_warning_reaches_stderr_when_training_blows_up(corpus):
    proc = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "microgpt.py", *TINY, "--corpus", corpus,
                           "--lr", "1e6", "--steps", "200"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "diverged" in proc.stderr and "Warning" not in proc.stderr, proc.stderr


# ----------------------------------------------------------------------------- 7, 8, 9: resuming

def test_a_moved_run_resumes_when_its_corpus_is_the_same(tmp_path, capsys, monkeypatch):
    d1 = tmp_path / "d1"
    d1.mkdir()
    corpus = write_corpus(str(d1), name="c.txt")
    with monkeypatch.context() as patch:
        interrupt_at(patch, 7)
        code, _, _ = run(capsys, TINY + ["--corpus", corpus, "--steps", "20", "--out", str(d1 / "run")])
    assert code == EXIT_INTERRUPTED
    shutil.move(str(d1), str(tmp_path / "d2"))
    d2 = tmp_path / "d2"
    code, _, err = run(capsys, ["--resume", "--out", str(d2 / "run")])  # the old path is gone: say what to do
    assert code == EXIT_BAD_INPUT and "is not there any more; if it moved, give its new path with --corpus" in err
    code, out, err = run(capsys, ["--resume", "--out", str(d2 / "run"), "--corpus", str(d2 / "c.txt")])
    assert code == EXIT_OK, err
    assert "note: the corpus is now" in out and "resuming from step 7 of 20" in out
    assert mg.load_checkpoint(str(d2 / "run" / "checkpoint.npz")).corpus == str(d2 / "c.txt")
    other = write_corpus(str(tmp_path), "zed\nyan\nxia\n", name="other.txt")  # other documents: refused
    code, _, err = run(capsys, ["--resume", "--out", str(d2 / "run"), "--steps", "30", "--corpus", other])
    assert code == EXIT_BAD_INPUT and "differs from the checkpoint's corpus" in err


def test_the_printed_resume_command_names_the_interpreter_or_the_launcher(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = cli.build_parser().parse_args([])
    words = shlex.split(messages.resume_command(os.path.join("out", "run-1"), args))
    assert words[0] == sys.executable and words[1] == os.path.join(ROOT, "microgpt.py")  # (far away: absolute)
    assert words[2:] == ["--resume", "--out", os.path.join("out", "run-1")]  # (the folder it claimed, from here)
    # started by `python3 dev.py run`: dev.py says so, and the command is the user's own, with their --out
    monkeypatch.setenv("MICROGPT_LAUNCHER", shlex.join(["/usr/bin/python3", "../dev.py", "run"]))
    args = cli.build_parser().parse_args(["--out", "/tmp/dev test/o u't", "--temperature", "0.7"])
    assert shlex.split(messages.resume_command("/tmp/dev test/o u't", args)) == [
        "/usr/bin/python3", "../dev.py", "run", "--resume", "--out", "/tmp/dev test/o u't", "--temperature", "0.7"]


def test_dev_py_runs_microgpt_in_the_users_folder(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(dev.os, "environ", dict(os.environ))  # (dev.main sets variables for the run it starts)
    monkeypatch.setattr(dev, "ensure_venv", lambda: sys.executable)
    monkeypatch.setattr(dev.os, "execv", lambda python, command: seen.update(dev.os.environ, command=command,
                                                                            cwd=os.getcwd()))
    monkeypatch.setattr(dev.sys, "argv", ["../dev.py", "run"])
    monkeypatch.chdir(tmp_path)
    dev.main(["run", "--steps", "3"])
    assert shlex.split(seen["MICROGPT_LAUNCHER"])[1:] == ["../dev.py", "run"]
    assert seen["cwd"] == str(tmp_path) and seen["command"][1:] == [os.path.join(ROOT, "microgpt.py"), "--steps", "3"]


def test_switching_engines_on_resume_says_the_numbers_agree_to_1e15(tmp_path, corpus, capsys, monkeypatch):
    with monkeypatch.context() as patch:
        interrupt_at(patch, 4)
        assert run(capsys, TINY + ["--engine", "value", "--corpus", corpus, "--steps", "8",
                                   "--out", str(tmp_path / "a")])[0] == EXIT_INTERRUPTED
    code, out, _ = run(capsys, ["--resume", "--out", str(tmp_path / "a"), "--engine", "numpy"])
    assert code == EXIT_OK and "trained on the value engine and goes on with the numpy engine" in out
    assert run(capsys, TINY + ["--engine", "value", "--corpus", corpus, "--steps", "8",
                               "--out", str(tmp_path / "b")])[0] == EXIT_OK
    switched, whole = (mg.load_checkpoint(str(tmp_path / x / "checkpoint.npz")) for x in "ab")
    gap = np.abs(mg.flat_buffer(switched.params) - mg.flat_buffer(whole.params)).max()
    assert gap < 1e-12  # equal to about 1e-15, as the note says (not bit for bit)


# ----------------------------------------------------------------------------- 10: the Python API

WORDS = ["anna", "bob", "carla", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy"]
VOCAB = mg.build_vocab(WORDS)


def small_state():
    cfg = mg.GPTConfig(len(VOCAB) + 1, n_embd=8, n_head=2, block_size=8)
    return mg.train(WORDS[:8], WORDS[8:], VOCAB, cfg, steps=4, engine="numpy", eval_every=2)


@pytest.mark.parametrize("edit, words", [
    (lambda s: setattr(s, "step", 9), "beyond the planned steps"),
    (lambda s: setattr(s, "lr", float("nan")), "lr must be a positive number"),
    (lambda s: setattr(s, "vocab", s.vocab[:-1]), "vocabulary does not match"),
    (lambda s: setattr(s, "m", s.m.astype(np.float32)), "one dtype"),
    (lambda s: setattr(s, "steps", True), "steps must be a positive integer"),
])
def test_save_checkpoint_refuses_what_load_checkpoint_would(tmp_path, edit, words):
    state = small_state()
    edit(state)
    with pytest.raises(InputError, match=words):
        mg.save_checkpoint(tmp_path / "c.npz", state)
    assert not (tmp_path / "c.npz").exists()
    with pytest.raises(InputError, match=words):  # and train(resume=...) takes no such state either
        mg.train(WORDS[:8], WORDS[8:], VOCAB, state.cfg, steps=8, engine="numpy", resume=state)


def test_the_apis_arguments_are_the_flags_rules():
    cfg = mg.GPTConfig(len(VOCAB) + 1, n_embd=8, n_head=2, block_size=8)
    for bad, words in ((dict(steps=True), "steps must be a positive integer"),
                       (dict(batch_size=0), "batch_size must be a positive integer")):
        with pytest.raises(InputError, match=words):
            mg.train(WORDS[:8], WORDS[8:], VOCAB, cfg, engine="numpy", **bad)
    with pytest.raises(InputError, match="at least one train and one val document"):
        mg.train(WORDS, [], VOCAB, cfg, steps=2, engine="numpy")
    params = mg.init_params(cfg)
    names = mg.sample(params, cfg, VOCAB, num_samples=np.int64(2), temperature=np.float32(0.5))
    assert len(names) == 2 and names == mg.sample(params, cfg, VOCAB, num_samples=2, temperature=0.5)
    with pytest.raises(InputError, match="num_samples must be a positive integer"):
        mg.sample(params, cfg, VOCAB, num_samples=True)
    other = mg.GPTConfig(len(VOCAB) + 1, n_embd=16, n_head=2, block_size=8)
    docs = [mg.doc_tokens(w, VOCAB) for w in WORDS[:2]]
    for engine in ("value", "numpy"):  # weights that do not fit the config: the same clear error on both engines
        with pytest.raises(InputError, match="weight 'wte' has shape"):
            mg.loss_and_grads({k: a.copy() for k, a in params.items()}, docs, other, engine)


def test_a_mixed_precision_state_cannot_be_resumed():
    state = small_state()
    mixed = TrainState(**{**state.__dict__, "params": {k: a.astype(np.float32) for k, a in state.params.items()}})
    with pytest.raises(InputError, match="one dtype"):
        mg.train(WORDS[:8], WORDS[8:], VOCAB, state.cfg, steps=8, engine="numpy", resume=mixed)


# ----------------------------------------------------------------------------- smaller findings

def test_control_characters_of_a_corpus_are_printed_as_escapes(tmp_path, capsys):
    text = "".join(f"a\x07b{c}\x1b[31m\n" for c in "cdefghijkl")  # BEL, ESC: a name could ring and recolour
    corpus = write_corpus(str(tmp_path), text)
    code, out, _ = run(capsys, TINY + ["--corpus", corpus, "--steps", "30", "--num-samples", "30",
                                       "--temperature", "2.0"])
    assert code == EXIT_OK and "\x07" not in out and "\x1b" not in out
    assert "\\x07" in out or "\\x1b" in out


def test_deleting_the_lock_file_does_not_free_a_held_folder(tmp_path, corpus):
    out = tmp_path / "run"
    first = child(LONG + ["--corpus", corpus, "--out", str(out)])
    try:
        wait_for_training(first)
        os.remove(out / LOCK_NAME)
        second = subprocess.run([sys.executable, "microgpt.py", *LONG, "--corpus", corpus, "--out", str(out)],
                                cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert second.returncode == EXIT_BAD_INPUT and "is in use by another run" in second.stderr
    finally:
        first.kill()
        first.wait()


def test_the_machine_memory_is_known_here():
    assert machine_memory() > 2**30


# ----------------------------------------------------------------------------- red team: crafted files and paths

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


def test_a_history_planning_10_to_the_30_steps_is_one_line_or_a_note(tmp_path, corpus, capsys):
    import planetarium
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])[0] == EXIT_OK
    edit_npz(out / HISTORY_NAME, steps=10**30)
    assert planetarium.main([str(out), "--html", str(tmp_path / "p.html")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "beyond 2**53" in err
    one_clean_line(err)
    code, out_text, err = run(capsys, ["--resume", "--out", str(out), "--steps", "6", "--corpus", corpus])
    assert code == EXIT_OK and "is not continued" in out_text and "beyond 2**53" in out_text, err
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", str(10**30)])
    assert code == EXIT_BAD_INPUT and "at most 2**53" in err


def test_the_estimate_counts_the_bigram_table_of_a_big_vocabulary(tmp_path, capsys):
    from harness.memory import check_memory
    from model_config import GPTConfig
    with pytest.raises(InputError, match="vocab_size 30,001"):  # 7.2 GB of bigram counts for a tiny model
        check_memory(GPTConfig(30_001, n_embd=16, n_head=4), 1, "numpy", max_gb=4)
    chars = "".join(chr(0x4E00 + i) for i in range(12_000))  # 12,000 distinct CJK characters: a 1.15 GB table
    corpus = write_corpus(str(tmp_path), "\n".join(chars[i:i + 8] for i in range(0, len(chars), 8)) + "\n")
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "1", "--max-memory", "1"])
    assert code == EXIT_BAD_INPUT and "vocab_size 12,001" in err
    one_clean_line(err)


def test_the_estimate_counts_the_python_objects_of_every_layer(corpus, capsys):
    from harness.memory import check_memory
    from model_config import GPTConfig
    deep = GPTConfig(27, n_embd=1, n_head=1, n_layer=1_000_000, block_size=1)  # 12 M weights, ~10 GB of objects
    with pytest.raises(InputError, match="n_layer 1000000"):
        check_memory(deep, 1, "numpy", max_gb=4)
    t0 = time.monotonic()
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--n-layer", "1000000", "--n-embd", "1", "--n-head", "1",
                                       "--block-size", "1", "--steps", "1"])
    assert code == EXIT_BAD_INPUT and "n_layer 1000000" in err and time.monotonic() - t0 < 5
    one_clean_line(err)


@pytest.fixture
def small_checkpoint(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(out)])[0] == EXIT_OK
    return out / "checkpoint.npz"


@pytest.mark.parametrize("config, words", [
    ({"n_layer": 1000}, "holds 14 arrays; a checkpoint of its config (n_layer 1000, norm rmsnorm) holds 6008"),
    ({"n_layer": 10**6, "n_embd": 1, "n_head": 1}, "describes a model of 12,000,"),
    ({"n_layer": 10**7, "n_embd": 1, "n_head": 1}, "describes a model of"),
    ({"n_embd": 16.0}, "its config: n_embd must be a positive integer, got 16.0"),
])
def test_a_checkpoint_claiming_many_layers_is_refused_quickly_in_one_short_line(small_checkpoint, capsys, config,
                                                                                  words):
    edit_npz(small_checkpoint, config=config)
    t0 = time.monotonic()
    code, _, err = run(capsys, ["--sample-only", "--checkpoint", str(small_checkpoint)])
    assert code == EXIT_BAD_INPUT and words in err and str(small_checkpoint) in err, err
    assert len(err) < 400 and time.monotonic() - t0 < 3, (len(err), time.monotonic() - t0)
    one_clean_line(err)


def test_a_checkpoint_of_ten_layers_resumes(tmp_path, corpus, capsys):
    """(It holds 68 arrays; a fixed limit of 64 members refused it.)"""
    out = tmp_path / "deep"
    args = TINY + ["--corpus", corpus, "--n-layer", "10", "--out", str(out)]
    assert run(capsys, args + ["--steps", "2"])[0] == EXIT_OK
    code, _, err = run(capsys, ["--resume", "--out", str(out), "--steps", "3", "--corpus", corpus])
    assert code == EXIT_OK, err


def test_a_history_claiming_a_deep_narrow_model_is_refused_before_it_is_taken_apart(tmp_path, corpus, capsys):
    """n_layer 10^5, n_embd 1: 1.2 M weights (small), but 600,000 arrays in each snapshot (was 7 s; 10^6 layers:
    72 s, 4 GB and a 122 MiB page)."""
    import planetarium
    from model_config import GPTConfig, n_params
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])[0] == EXIT_OK
    path = out / HISTORY_NAME
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    meta["config"].update(n_layer=10**5, n_embd=1, n_head=1)
    P = n_params(GPTConfig(**meta["config"]))
    arrays.update(meta=np.array(json.dumps(meta)), step=np.array([0, 3]), params=np.zeros((2, P)))
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)
    t0 = time.monotonic()
    code = planetarium.main([str(out), "--html", str(tmp_path / "p.html")])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "600,003 arrays would take" in err and time.monotonic() - t0 < 3, err
    one_clean_line(err)


def test_planetarium_turns_a_failed_allocation_into_one_line(tmp_path, corpus, capsys, monkeypatch):
    import planetarium
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])[0] == EXIT_OK

    def no_memory(runs):
        raise MemoryError

    monkeypatch.setattr(planetarium, "build_page", no_memory)
    assert planetarium.main([str(out)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "not enough memory" in err
    one_clean_line(err)


def test_an_out_of_3000_folder_levels_is_one_line(tmp_path, corpus, capsys):
    deep = str(tmp_path) + "/a" * 3000
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "1", "--out", deep])
    assert code == EXIT_BAD_INPUT and "too many folder levels" in err
    one_clean_line(err)
    assert os.listdir(tmp_path) == ["names.txt"]


def test_a_new_run_never_overwrites_an_earlier_runs_history_or_metrics(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(out)])[0] == EXIT_OK
    os.remove(out / "checkpoint.npz")
    before = {name: (out / name).read_bytes() for name in (HISTORY_NAME, "metrics.json")}
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(out)])
    assert code == EXIT_BAD_INPUT and "holds an earlier run's history.npz, metrics.json" in err
    assert before == {name: (out / name).read_bytes() for name in before}


def test_an_empty_corpus_name_is_called_empty(capsys):
    code, _, err = run(capsys, TINY + ["--corpus", ""])
    assert code == EXIT_BAD_INPUT and "--corpus must be a non-empty path, got ''" in err and "directory" not in err
