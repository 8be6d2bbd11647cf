"""Issue 11: each case that broke under adversarial use, reproduced. No run loses another's work, checkpoints are
checked like flags, memory is bounded, write errors and divergence are reported cleanly (one line, the
documented exit code, no traceback), and kill -9 / Ctrl-C never cost more than the steps since the last save."""
import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
from cli_helpers import ROOT, TINY, interrupt_at, run, snapshot, start, write_corpus

import microgpt as mg
from harness import run_files
from harness.errors import EXIT_BAD_INPUT, EXIT_DIVERGED, EXIT_INTERRUPTED, EXIT_IO, EXIT_OK, InputError
from harness.memory import step_memory
from model_config import CHUNK_BYTES

LONG = TINY + ["--steps", "10000000", "--eval-every", "20"]  # (its history fits the memory estimate)


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(str(tmp_path))


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


# ----------------------------------------------------------------------------- 1, 2: a run owns its folder

def test_a_second_run_into_a_held_folder_is_refused_and_a_dead_runs_lock_is_taken_over(tmp_path, corpus, capsys):
    out = str(tmp_path / "run")
    first = start(LONG + ["--corpus", corpus, "--out", out])
    try:
        wait_for_training(first)
        wait_for_checkpoint(os.path.join(out, "checkpoint.npz"))
        code, stdout, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "5", "--out", out])
        assert code == EXIT_BAD_INPUT and "is in use by another run" in err and f"pid {first.pid}" in err
        assert err.count("\n") == 1 and "step" not in stdout
        code, _, err = run(capsys, ["--resume", "--out", out])  # resuming a running run is refused too
        assert code == EXIT_BAD_INPUT and "is in use by another run" in err
    finally:
        first.send_signal(signal.SIGKILL)  # leaves its lock file behind, but the kernel drops the lock
        first.communicate()
    assert os.path.exists(os.path.join(out, run_files.LOCK_NAME))
    code, stdout, err = run(capsys, ["--resume", "--out", out, "--steps", str(mg.load_checkpoint(
        os.path.join(out, "checkpoint.npz")).step + 3)])
    assert code == EXIT_OK, err
    assert f"took over {os.path.join(out, run_files.LOCK_NAME)} from an earlier run that is no longer running " \
           f"(pid {first.pid}" in stdout
    assert not os.path.exists(os.path.join(out, run_files.LOCK_NAME))  # released on exit


def test_the_lock_is_released_and_reused_in_process(tmp_path):
    folder = str(tmp_path / "x")
    with run_files.RunLock(folder) as lock:
        assert lock.notice is None
        with pytest.raises(InputError, match="in use by another run"):
            run_files.RunLock(folder).__enter__()
    with run_files.RunLock(folder) as again:  # released: free for the next run, with no notice
        assert again.notice is None


def test_kill_9_loop_leaves_a_loadable_checkpoint_and_resume_is_bit_exact(tmp_path, corpus):
    """kill -9 at random moments: every time, the checkpoint on disk loads; resuming after the last kill ends in
    exactly the weights of an uninterrupted run."""
    args = TINY + ["--corpus", corpus, "--steps", "3000", "--eval-every", "7", "--batch-size", "2"]
    full = subprocess.run([sys.executable, "microgpt.py", *args, "--out", str(tmp_path / "full")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert full.returncode == 0, full.stderr
    out = str(tmp_path / "killed")
    ckpt = os.path.join(out, "checkpoint.npz")
    rng = random.Random(0)
    steps_seen = []
    for _ in range(3):
        proc = start(["--resume", "--out", out] if os.path.exists(ckpt) else args + ["--out", out])
        wait_for_training(proc)
        time.sleep(rng.uniform(0.05, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        if proc.returncode == 0:  # it finished before the kill: nothing more to test
            break
        steps_seen.append(mg.load_checkpoint(ckpt).step)  # complete and loadable, never half written
    finished = subprocess.run([sys.executable, "microgpt.py", "--resume", "--out", out], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    a, b = mg.load_checkpoint(ckpt), mg.load_checkpoint(str(tmp_path / "full" / "checkpoint.npz"))
    assert a.step == b.step == 3000 and a.train_loss == b.train_loss and a.val_loss == b.val_loss
    for key in a.params:
        np.testing.assert_array_equal(a.params[key], b.params[key])
    assert steps_seen == sorted(steps_seen)
    assert not [p for p in os.listdir(out) if p.startswith(run_files.TEMP_PREFIX)]  # a killed write's temp file: gone


# ----------------------------------------------------------------------------- 3: checkpoints checked like flags

def edited_checkpoint(src, dst, **meta_changes):
    """A copy of checkpoint src with some meta settings changed (arrays untouched)."""
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    meta.update(meta_changes)
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(dst, **arrays)
    return str(dst)


@pytest.mark.parametrize("change, message", [
    (dict(lr=-0.01), "lr must be a positive number, got -0.01"),
    (dict(lr=float("nan")), "lr must be a positive number, got nan"),
    (dict(batch_size=0), "batch_size must be a positive integer, got 0"),
    (dict(seed=-1), "seed must be a non-negative integer, got -1"),
    (dict(seed=1.5), "seed must be a non-negative integer, got 1.5"),
    (dict(steps="many"), "steps must be a positive integer (at most 2**53 = 9,007,199,254,740,992), got 'many'"),
    (dict(engine="torch"), "engine must be one of 'value', 'numpy', got 'torch'"),
    (dict(riemannian=True), "riemannian gradients need norm 'sphere'"),
    (dict(eval_every=0), "eval_every must be a positive integer, got 0"),
    (dict(steps=2), "step 4 is beyond the planned steps 2"),
])
def test_a_checkpoints_settings_obey_the_flags_rules(tmp_path, corpus, capsys, change, message):
    src = tmp_path / "good"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "4", "--out", str(src)])[0] == EXIT_OK
    bad = edited_checkpoint(src / "checkpoint.npz", tmp_path / "bad.npz", **change)
    new_out = tmp_path / "new"
    code, out, err = run(capsys, ["--resume", "--checkpoint", bad, "--out", str(new_out), "--steps", "8"])
    assert code == EXIT_BAD_INPUT and message in err, err
    assert err.startswith("microgpt: error: checkpoint") and err.count("\n") == 1 and "step" not in out.lower()
    assert not new_out.exists()  # nothing created
    code, _, err = run(capsys, ["--sample-only", "--checkpoint", bad])
    assert code == EXIT_BAD_INPUT and message in err


def test_resume_may_lower_the_lr_but_not_raise_it(tmp_path, corpus, capsys):
    out = str(tmp_path / "run")
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "4", "--out", out])[0] == EXIT_OK
    code, _, err = run(capsys, ["--resume", "--out", out, "--steps", "6", "--lr", "0.02"])
    assert code == EXIT_BAD_INPUT and "--lr differs from the checkpoint" in err and "a lower --lr" in err
    code, stdout, err = run(capsys, ["--resume", "--out", out, "--steps", "6", "--lr", "0.001"])
    assert code == EXIT_OK, err
    assert "(lr lowered from 0.01 to 0.001)" in stdout
    assert mg.load_checkpoint(os.path.join(out, "checkpoint.npz")).lr == 0.001
    code, stdout, err = run(capsys, ["--resume", "--out", out, "--steps", "8"])  # no --lr: the checkpoint's (now lower)
    assert code == EXIT_OK and "lowered" not in stdout


# ----------------------------------------------------------------------------- 4: sizes checked before allocation

def test_a_huge_model_is_refused_before_anything_is_allocated(tmp_path, corpus, capsys):
    t0 = time.time()
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--n-embd", "100000", "--n-head", "4",
                                       "--out", str(tmp_path / "o")])
    assert code == EXIT_BAD_INPUT and "would need about" in err and "GB" in err and "--max-memory" in err
    assert time.time() - t0 < 5 and not (tmp_path / "o").exists()
    # the same model in the value engine: its graph is far larger than its weights
    code, _, err = run(capsys, ["--corpus", corpus, "--n-embd", "256", "--steps", "1", "--batch-size", "8"])
    assert code == EXIT_BAD_INPUT and "engine value" in err
    # a raised limit lets a mid-size run through
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--n-embd", "64", "--steps", "2", "--max-memory", "1"])
    assert code == EXIT_OK, err


def test_a_checkpoint_describing_a_huge_model_is_refused_without_loading(tmp_path, corpus, capsys):
    src = tmp_path / "good"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(src)])[0] == EXIT_OK
    with np.load(src / "checkpoint.npz") as z:
        config = json.loads(str(z["meta"]))["config"]
    bad = edited_checkpoint(src / "checkpoint.npz", tmp_path / "huge.npz", config={**config, "n_layer": 10**7})
    t0 = time.time()
    code, _, err = run(capsys, ["--sample-only", "--checkpoint", bad])
    assert code == EXIT_BAD_INPUT and "describes a model of" in err and "--max-memory" in err
    assert time.time() - t0 < 5


def test_a_zip_bomb_array_is_refused_from_its_header(tmp_path, corpus, capsys):
    """A 2 MB .npz whose extra array of zeros is 2 GB uncompressed: refused without loading it."""
    src = tmp_path / "good"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(src)])[0] == EXIT_OK
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(src / "checkpoint.npz") as zin, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info.filename))
        with zout.open("extra.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (2**28,)})
            zeros = bytes(2**24)
            for _ in range(2**31 // 2**24):
                f.write(zeros)
    assert bomb.stat().st_size < 5 * 2**20
    tracemalloc.start()
    code, _, err = run(capsys, ["--sample-only", "--checkpoint", str(bomb)])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert code == EXIT_BAD_INPUT and "its arrays do not match its config: missing [], unexpected ['extra']" in err
    assert peak < 50 * 2**20


def test_an_endless_or_huge_corpus_is_refused_before_it_is_read(tmp_path, capsys):
    code, _, err = run(capsys, TINY + ["--corpus", "/dev/zero"])
    assert code == EXIT_BAD_INPUT and "larger than 64 MiB" in err
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(65 * 2**20)  # sparse: no disk used
    code, _, err = run(capsys, TINY + ["--corpus", str(big)])
    assert code == EXIT_BAD_INPUT and "larger than 64 MiB" in err


def test_many_samples_run_in_bounded_chunks():
    cfg = mg.GPTConfig(vocab_size=27)
    params = mg.init_params(cfg)
    vocab = [chr(ord("a") + i) for i in range(26)]
    tracemalloc.start()
    names = mg.sample(params, cfg, vocab, num_samples=8_000, temperature=1.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(names) == 8_000
    assert peak < 120 * 2**20  # one chunk (CHUNK_BYTES, 64 MiB) and the names, not 8,000 caches (~640 MB) at once


@pytest.mark.parametrize("engine, batch, kw", [("numpy", 1, {}), ("numpy", 16, {}), ("numpy", 8, dict(n_embd=64,
                         n_layer=2, norm="sphere")), ("value", 1, {}), ("value", 2, dict(norm="sphere"))])
def test_the_memory_estimate_is_an_upper_bound(engine, batch, kw):
    cfg = mg.GPTConfig(vocab_size=27, **kw)
    params = mg.init_params(cfg)
    docs = [[26] + [i % 26 for i in range(cfg.block_size)]] * batch  # full-length docs: the worst case
    tracemalloc.start()
    mg.loss_and_grads(params, docs, cfg, engine)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    estimate = step_memory(cfg, batch, engine)
    assert peak <= estimate <= 20 * max(peak, CHUNK_BYTES), (peak, estimate)  # an upper bound, not a wild one


# ----------------------------------------------------------------------------- 5: write errors

def fail_fsync_after(monkeypatch, n_ok):
    """Make run_files' fsync fail with ENOSPC (a full disk) after n_ok successful calls."""
    calls, real = [], os.fsync

    def fsync(fd):
        calls.append(fd)
        if len(calls) > n_ok:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(run_files.os, "fsync", fsync)


def test_a_full_disk_while_saving_a_checkpoint_keeps_the_last_good_one(tmp_path, corpus, capsys, monkeypatch):
    out = tmp_path / "run"
    fail_fsync_after(monkeypatch, 2)  # the step-10 history and checkpoint are saved, the step-20 history fails
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "40", "--eval-every", "10",
                                       "--out", str(out)])
    assert code == EXIT_IO and err.count("\n") == 1
    assert f"cannot write {str(out / 'history.npz')!r}: No space left on device" in err
    assert f"the last good checkpoint is {str(out / 'checkpoint.npz')!r} (step 10)" in err
    assert mg.load_checkpoint(str(out / "checkpoint.npz")).step == 10
    assert not [p for p in os.listdir(out) if p.startswith(run_files.TEMP_PREFIX)]


def test_a_full_disk_while_writing_the_plot_is_an_io_error(tmp_path, corpus, capsys, monkeypatch):
    fail_fsync_after(monkeypatch, 3)  # history and checkpoint at step 5, metrics.json at the end; not loss.png
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "5", "--out", str(tmp_path / "run")])
    assert code == EXIT_IO and "cannot write" in err and "loss.png" in err and "No space left" in err


def test_ctrl_c_on_a_full_disk_says_what_was_kept(tmp_path, corpus, capsys, monkeypatch):
    interrupt_at(monkeypatch, 15)
    fail_fsync_after(monkeypatch, 2)  # the step-10 checkpoint and history; not the one Ctrl-C saves
    out = tmp_path / "run"
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "40", "--eval-every", "10", "--out", str(out)])
    assert code == EXIT_IO
    assert "interrupted at step 15/40, but cannot write" in err and "No space left on device" in err
    assert "the last good checkpoint is" in err and "(step 10)" in err
    assert mg.load_checkpoint(str(out / "checkpoint.npz")).step == 10


def test_stdout_full_or_closed_is_an_io_error_without_a_traceback(corpus):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "microgpt.py", *TINY, "--corpus", corpus, "--steps", "3"], cwd=ROOT,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == EXIT_IO
    assert proc.stderr == "microgpt: error: cannot write to standard output: No space left on device\n"
    closed = subprocess.run(f"{sys.executable} microgpt.py --corpus {corpus} --steps 3 >&-", shell=True, cwd=ROOT,
                            stderr=subprocess.PIPE, text=True, timeout=60)
    assert closed.returncode == EXIT_IO
    assert closed.stderr == "microgpt: error: cannot write to standard output: it is closed\n"


# ----------------------------------------------------------------------------- 6: divergence while finite

@pytest.mark.parametrize("engine", ["numpy", "value"])
def test_an_exploding_finite_loss_stops_both_engines(tmp_path, corpus, capsys, engine):
    args = ["--corpus", corpus, "--engine", engine, "--n-embd", "8", "--n-head", "2", "--block-size", "8",
            "--steps", "200", "--lr", "1e6", "--eval-every", "25", "--out", str(tmp_path / engine)]
    code, _, err = run(capsys, args)
    assert code == EXIT_DIVERGED and "training diverged" in err and "Try a smaller --lr" in err
    # numpy: the finite loss explodes; value: its exp() or log() refuses first. Either way: exit 1, step named
    assert any(why in err for why in ("the loss exploded", "not finite", "overflows", "log of non-positive"))
    assert not os.path.exists(tmp_path / engine / "checkpoint.npz")  # diverged before its first checkpoint


def test_the_divergence_rule_leaves_healthy_high_lr_runs_alone():
    docs = mg.load_corpus("names")
    vocab = mg.build_vocab(docs)
    train_docs, val_docs = mg.split_docs(docs, 0)
    for norm in ("rmsnorm", "sphere"):
        cfg = mg.GPTConfig(vocab_size=len(vocab) + 1, norm=norm)
        st = mg.train(train_docs, val_docs[:100], vocab, cfg, steps=400, batch_size=4, lr=0.05, engine="numpy",
                      eval_every=400)
        assert not st.error and st.step == 400


# ----------------------------------------------------------------------------- 8, 9, 10

def test_a_tiny_temperature_is_greedy_not_nan(corpus, capsys):
    code, out, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "30", "--temperature", "1e-320"])
    assert code == EXIT_OK, err
    assert "below 1e-100: taking the most likely character each time (greedy)" in out
    names = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("sample ")]
    assert len(set(names)) == 1  # greedy: the same argmax path for every sample


def test_a_corpus_edited_between_interrupt_and_resume_is_refused(tmp_path, capsys, monkeypatch):
    corpus = write_corpus(str(tmp_path))
    out = str(tmp_path / "run")
    interrupt_at(monkeypatch, 3)
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "10", "--out", out])[0] == EXIT_INTERRUPTED
    monkeypatch.undo()
    with open(corpus, "a", encoding="utf-8") as f:
        f.write("victor\n")
    code, _, err = run(capsys, ["--resume", "--out", out])
    assert code == EXIT_BAD_INPUT and "has changed since the checkpoint was written (15 documents then, 16 now" in err
    with open(corpus, encoding="utf-8") as f:
        edited = f.read().replace("victor\n", "").replace("bob", "rob")
    write_corpus(str(tmp_path), edited)  # the same count, one name changed: still refused
    code, _, err = run(capsys, ["--resume", "--out", out])
    assert code == EXIT_BAD_INPUT and "the same number of documents (15), but their text differs" in err
    write_corpus(str(tmp_path))  # restored: resumes
    assert run(capsys, ["--resume", "--out", out])[0] == EXIT_OK


def test_corpus_lines_end_only_at_newline(tmp_path):
    path = write_corpus(str(tmp_path), "ab\x0bcd\x0cef\x1cgh\x85ij\u2028kl\r\nmn\n")
    assert mg.load_corpus(path) == ["ab\x0bcd\x0cef\x1cgh\x85ij\u2028kl", "mn"]


# ----------------------------------------------------------------------------- found by red-teaming the CLI

def test_the_corpus_counts_in_the_memory_estimate(tmp_path, capsys):
    from harness.memory import check_memory
    cfg = mg.GPTConfig(vocab_size=27, n_embd=8, n_head=2)
    check_memory(cfg, 1, "numpy", 4.0, corpus=(100_000, 600_000))  # names.txt-like: fine
    with pytest.raises(InputError, match="16,000,000 documents"):
        check_memory(cfg, 1, "numpy", 4.0, corpus=(16_000_000, 48_000_000))  # a 64 MiB file of 3-letter lines
    path = write_corpus(str(tmp_path), "\n".join(f"n{i}" for i in range(50_000)))
    code, _, err = run(capsys, TINY + ["--corpus", path, "--max-memory", "0.05"])
    assert code == EXIT_BAD_INPUT and "50,000 documents" in err


def test_sigterm_and_early_ctrl_c_stop_cleanly(tmp_path, corpus):
    proc = start(LONG + ["--corpus", corpus, "--out", str(tmp_path / "run")])
    wait_for_training(proc)
    proc.send_signal(signal.SIGTERM)  # like Ctrl-C: the step finishes, a checkpoint is saved, exit 130
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED and "checkpoint saved" in err and "Traceback" not in err
    assert mg.load_checkpoint(str(tmp_path / "run" / "checkpoint.npz")).step >= 1
    # while NumPy and the project's modules are still loading (the interpreter's own start-up, before the script's
    # first line can install a handler, is not covered: a signal there is Python's default traceback)
    for delay in (0.3, 0.5, 0.8):
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "microgpt.py"), *LONG, "--corpus", corpus],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == EXIT_INTERRUPTED and "Traceback" not in err, (delay, err)


def test_names_print_on_an_ascii_terminal(corpus):
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run([sys.executable, "microgpt.py", "--engine", "numpy", "--steps", "3", "--corpus", "jp-names",
                           "--num-samples", "2"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == EXIT_OK and "Traceback" not in proc.stderr
    assert "sample  1: \\u" in proc.stdout  # hiragana escaped, not a UnicodeEncodeError


def test_the_lock_file_is_never_followed_through_a_symlink(tmp_path, corpus, capsys):
    out = tmp_path / "o"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("IMPORTANT DATA")
    os.symlink(victim, out / run_files.LOCK_NAME)
    (out / ".tmp-mynotes.txt").write_text("mine")
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(out)])
    assert code == EXIT_BAD_INPUT and "symbolic link" in err
    assert victim.read_text() == "IMPORTANT DATA" and (out / ".tmp-mynotes.txt").read_text() == "mine"


def test_a_stale_lock_is_left_alone_when_the_run_is_refused(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])[0] == EXIT_OK
    (out / run_files.LOCK_NAME).write_text("pid 999999 on elsewhere, started yesterday\n")  # as kill -9 leaves it
    before = snapshot(out)
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])
    assert code == EXIT_BAD_INPUT and "holds the checkpoint of an earlier run" in err
    assert snapshot(out) == before  # the refusal changed nothing


@pytest.mark.parametrize("edit, message", [
    (lambda a: a["val_loss"].__setitem__((1, 0), np.nan), "NaN or inf"),
    (lambda a: a["val_loss"].__setitem__((1, 0), 7.5), "val-loss history"),
    (lambda a: a["train_loss"].__setitem__(0, np.nan), "NaN or inf"),
    (lambda a: a["adam_v"].__setitem__(0, -1.0), "negative"),
])
def test_checkpoints_with_bad_histories_or_moments_are_refused(tmp_path, corpus, capsys, edit, message):
    src = tmp_path / "good"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "20", "--eval-every", "5", "--out", str(src)])[0] == 0
    with np.load(src / "checkpoint.npz") as z:
        arrays = {k: z[k].copy() for k in z.files}
    edit(arrays)
    np.savez(tmp_path / "bad.npz", **arrays)
    code, _, err = run(capsys, ["--sample-only", "--checkpoint", str(tmp_path / "bad.npz")])
    assert code == EXIT_BAD_INPUT and message in err and err.count("\n") == 1


def test_float32_weights_at_a_tiny_temperature_sample_greedily_not_from_nan(tmp_path, corpus, capsys):
    out = str(tmp_path / "f32")
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "30", "--dtype", "float32", "--out", out])[0] == 0
    ckpt = os.path.join(out, "checkpoint.npz")
    code, text, err = run(capsys, ["--sample-only", "--checkpoint", ckpt, "--temperature", "1e-39"])
    assert code == EXIT_OK and not err
    state = mg.load_checkpoint(ckpt)
    greedy = mg.sample(state.params, state.cfg, state.vocab, num_samples=1, temperature=1e-300)[0]
    assert f"sample  1: {greedy}\n" in text
