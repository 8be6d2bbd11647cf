"""harness/checkpoints.py: a run's folder is written as one unit. Whenever a run is killed, the history beside
its checkpoint is at the checkpoint's step or ahead, and a resume continues both exactly; a history that is
behind (an older file put back) is said so."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
from cli_helpers import (
    ROOT,
    TINY,
    edit_npz,
    one_clean_line,
    peak_rss_mb,
    run,
    start,
    wait_for_training,
)

import microgpt as mg
from harness import run_files
from harness.checkpoints import load_checkpoint, save_checkpoint
from harness.errors import EXIT_BAD_INPUT, EXIT_OK, InputError
from harness.history import HISTORY_NAME, load_history
from model_config import TrainState


def both(folder):
    return load_checkpoint(os.path.join(folder, "checkpoint.npz")), load_history(os.path.join(folder, HISTORY_NAME))


@pytest.mark.slow
def test_kill_9_between_and_during_the_writes_never_leaves_the_history_behind(tmp_path, corpus):
    """Every step saves (--eval-every 1), so most of a run's time is its writes and a kill -9 lands between or
    inside them. After each kill both files load and the history is never behind the checkpoint; resuming
    again and again ends with the checkpoint and the history of a run that was never killed."""
    args = TINY + ["--corpus", corpus, "--steps", "400", "--eval-every", "1", "--norm", "sphere"]
    full = subprocess.run([sys.executable, "microgpt.py", *args, "--out", str(tmp_path / "full")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert full.returncode == 0, full.stderr
    out = str(tmp_path / "killed")
    rng, kills, ahead = random.Random(0), 0, 0
    while kills < 20:
        resuming = os.path.exists(os.path.join(out, "checkpoint.npz"))
        proc = start(["--resume", "--out", out] if resuming else args + ["--out", out])
        for line in proc.stdout:  # training is under way (a resume has read the files by now)
            if line.startswith("step"):
                break
        time.sleep(rng.uniform(0.0, 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        if proc.returncode == 0:
            break
        kills += 1
        ckpt, hist = both(out)
        assert hist.saved_step >= ckpt.step  # the history is written first: never behind
        ahead += hist.saved_step > ckpt.step
    assert kills >= 5 and ahead >= 1  # (some kills landed between the two writes)
    done = subprocess.run([sys.executable, "microgpt.py", "--resume", "--out", out], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (a, ha), (b, hb) = both(out), both(str(tmp_path / "full"))
    assert a.step == b.step == 400 and a.train_loss == b.train_loss and a.val_loss == b.val_loss
    np.testing.assert_array_equal(mg.flat_buffer(a.params), mg.flat_buffer(b.params))
    assert ha.step.tolist() == hb.step.tolist() and ha.saved_step == hb.saved_step == 400
    np.testing.assert_array_equal(ha.params, hb.params)
    np.testing.assert_array_equal(ha.drift, hb.drift)
    assert not [p for p in os.listdir(out) if p.startswith(run_files.TEMP_PREFIX)]


@pytest.mark.slow
def test_a_history_ahead_of_its_checkpoint_is_rewound_and_one_behind_is_said(tmp_path, corpus, capsys):
    out, at10 = tmp_path / "run", tmp_path / "at10"
    assert run(capsys, TINY + ["--corpus", corpus, "--eval-every", "5", "--steps", "10", "--out", str(out)])[0] == 0
    shutil.copytree(out, at10)  # the run's folder at step 10
    assert run(capsys, ["--resume", "--out", str(out), "--steps", "20"])[0] == 0
    # ahead: the step-20 history beside the step-10 checkpoint (what a kill between the two writes leaves)
    shutil.copy(at10 / HISTORY_NAME, tmp_path / "history-10.npz")
    shutil.copy(out / HISTORY_NAME, at10 / HISTORY_NAME)
    code, stdout, err = run(capsys, ["--resume", "--out", str(at10), "--steps", "20"])
    assert code == 0 and "is ahead of the checkpoint (step 20 > 10" in stdout, err
    np.testing.assert_array_equal(load_history(at10 / HISTORY_NAME).params, load_history(out / HISTORY_NAME).params)
    # behind: the step-10 history put back beside the step-20 checkpoint
    shutil.copy(tmp_path / "history-10.npz", out / HISTORY_NAME)
    code, stdout, err = run(capsys, ["--resume", "--out", str(out), "--steps", "30"])
    assert code == 0 and "is behind the checkpoint (step 10 < 20); it continues without the snapshots in " \
                          "between" in stdout, err
    assert load_checkpoint(out / "checkpoint.npz").step == 30


def test_a_resume_never_takes_another_runs_history(tmp_path, corpus, capsys):
    args = TINY + ["--corpus", corpus, "--steps", "10"]
    assert run(capsys, args + ["--out", str(tmp_path / "a")])[0] == 0
    assert run(capsys, args + ["--seed", "7", "--out", str(tmp_path / "b"), "--steps", "20"])[0] == 0
    shutil.copy(tmp_path / "a" / HISTORY_NAME, tmp_path / "b" / HISTORY_NAME)  # a's history in b's folder
    before = (tmp_path / "b" / HISTORY_NAME).read_bytes()
    code, _, err = run(capsys, ["--resume", "--out", str(tmp_path / "b"), "--steps", "30"])
    assert code == 2 and "is the history of another run" in err and err.count("\n") == 1
    assert (tmp_path / "b" / HISTORY_NAME).read_bytes() == before


@pytest.mark.slow
def test_kill_9_loop_leaves_a_loadable_checkpoint_and_resume_is_bit_exact(tmp_path, corpus):
    """kill -9 at random moments: every time, the checkpoint on disk loads; resuming after the last kill ends in
    exactly the weights of an uninterrupted run."""
    args = TINY + ["--corpus", corpus, "--steps", "3000", "--eval-every", "7", "--batch-size", "2"]
    full = subprocess.run([sys.executable, "microgpt.py", *args, "--out", str(tmp_path / "full")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # (about 10 s)
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
        steps_seen.append(load_checkpoint(ckpt).step)  # complete and loadable, never half written
    finished = subprocess.run([sys.executable, "microgpt.py", "--resume", "--out", out], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    a, b = load_checkpoint(ckpt), load_checkpoint(str(tmp_path / "full" / "checkpoint.npz"))
    assert a.step == b.step == 3000 and a.train_loss == b.train_loss and a.val_loss == b.val_loss
    for key in a.params:
        np.testing.assert_array_equal(a.params[key], b.params[key])
    assert steps_seen == sorted(steps_seen)
    assert not [p for p in os.listdir(out) if p.startswith(run_files.TEMP_PREFIX)]  # a killed write's temp file: gone

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

def test_a_checkpoint_describing_a_huge_model_is_refused_without_loading(tmp_path, corpus, capsys):
    src = tmp_path / "good"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(src)])[0] == EXIT_OK
    with np.load(src / "checkpoint.npz") as z:
        config = json.loads(str(z["meta"]))["config"]
    bad = edited_checkpoint(src / "checkpoint.npz", tmp_path / "huge.npz", config={**config, "n_layer": 10**7})
    code, _, err = run(capsys, ["--sample-only", "--checkpoint", bad])
    assert code == EXIT_BAD_INPUT and "describes a model of" in err and "--max-memory" in err

@pytest.mark.slow
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

@pytest.mark.parametrize("edit, message", [
    (lambda a: a["val_loss"].__setitem__((1, 0), np.nan), "NaN or inf"),
    (lambda a: a["val_loss"].__setitem__((1, 0), 7.5), "val-loss history"),
    (lambda a: a["train_loss"].__setitem__(0, np.nan), "NaN or inf"),
    (lambda a: a["adam_v"].__setitem__(0, -1.0), "negative"),
    (lambda a: a["adam_v"].__setitem__(0, 1e308), "Adam's moments are not what gradients"),
    (lambda a: (a["adam_m"].__setitem__(0, 1e200), a["adam_v"].__setitem__(0, 1e-300)), "Adam's moments"),
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

@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sample-only", "resume"])
def test_a_checkpoint_claiming_a_huge_history_is_refused_before_it_is_loaded(tmp_path, corpus, capsys, mode):
    path = huge_history_checkpoint(tmp_path, capsys, corpus)
    args = (["--sample-only", "--checkpoint", str(path)] if mode == "sample-only"
            else ["--resume", "--checkpoint", str(path), "--out", str(tmp_path / "new"), "--corpus", corpus])
    code, err, peak = peak_rss_mb(args + ["--max-memory", "0.5"])
    assert code == EXIT_BAD_INPUT and "30,000,000 steps" in err and "the limit is 0.5 GB" in err
    one_clean_line(err)
    assert peak < 400, peak  # (the file's history alone would be 960 MB as a Python list)

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
        save_checkpoint(tmp_path / "c.npz", state)
    assert not (tmp_path / "c.npz").exists()
    with pytest.raises(InputError, match=words):  # and train(resume=...) takes no such state either
        mg.train(WORDS[:8], WORDS[8:], VOCAB, state.cfg, steps=8, engine="numpy", resume=state)

def test_a_mixed_precision_state_cannot_be_resumed():
    state = small_state()
    mixed = TrainState(**{**state.__dict__, "params": {k: a.astype(np.float32) for k, a in state.params.items()}})
    with pytest.raises(InputError, match="one dtype"):
        mg.train(WORDS[:8], WORDS[8:], VOCAB, state.cfg, steps=8, engine="numpy", resume=mixed)


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
def test_a_checkpoint_claiming_many_layers_is_refused_in_one_short_line(small_checkpoint, capsys, config,
                                                                        words):
    edit_npz(small_checkpoint, config=config)
    code, _, err = run(capsys, ["--sample-only", "--checkpoint", str(small_checkpoint)])
    assert code == EXIT_BAD_INPUT and words in err and str(small_checkpoint) in err, err
    assert len(err) < 400, err
    one_clean_line(err)

def test_a_checkpoint_of_ten_layers_resumes(tmp_path, corpus, capsys):
    """(It holds 68 arrays; a fixed limit of 64 members refused it.)"""
    out = tmp_path / "deep"
    args = TINY + ["--corpus", corpus, "--n-layer", "10", "--out", str(out)]
    assert run(capsys, args + ["--steps", "2"])[0] == EXIT_OK
    code, _, err = run(capsys, ["--resume", "--out", str(out), "--steps", "3", "--corpus", corpus])
    assert code == EXIT_OK, err


def test_a_checkpoint_path_given_as_bytes_is_read_as_a_path(tmp_path, corpus, capsys):
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(tmp_path / "r")])[0] == 0
    assert load_checkpoint(os.fsencode(tmp_path / "r" / "checkpoint.npz")).step == 3
