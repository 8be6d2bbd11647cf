"""harness/checkpoints.py: a run's folder is written as one unit. Whenever a run is killed, the history beside
its checkpoint is at the checkpoint's step or ahead, and a resume continues both exactly; a history that is
behind (an older file put back) is said so."""
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from cli_helpers import ROOT, TINY, run, start, write_corpus

import microgpt as mg
from harness import run_files
from harness.history import HISTORY_NAME, load_history


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(str(tmp_path))


def both(folder):
    return mg.load_checkpoint(os.path.join(folder, "checkpoint.npz")), load_history(os.path.join(folder, HISTORY_NAME))


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
    assert mg.load_checkpoint(out / "checkpoint.npz").step == 30


def test_a_resume_never_takes_another_runs_history(tmp_path, corpus, capsys):
    args = TINY + ["--corpus", corpus, "--steps", "10"]
    assert run(capsys, args + ["--out", str(tmp_path / "a")])[0] == 0
    assert run(capsys, args + ["--seed", "7", "--out", str(tmp_path / "b"), "--steps", "20"])[0] == 0
    shutil.copy(tmp_path / "a" / HISTORY_NAME, tmp_path / "b" / HISTORY_NAME)  # a's history in b's folder
    before = (tmp_path / "b" / HISTORY_NAME).read_bytes()
    code, _, err = run(capsys, ["--resume", "--out", str(tmp_path / "b"), "--steps", "30"])
    assert code == 2 and "is the history of another run" in err and err.count("\n") == 1
    assert (tmp_path / "b" / HISTORY_NAME).read_bytes() == before
