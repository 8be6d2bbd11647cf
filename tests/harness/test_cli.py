"""harness/cli.py: the command line of microgpt.py end to end: flags and their combinations, --out, --resume
and --sample-only, and every bad input one line and exit 2 with nothing written."""
import json
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest
from cli_helpers import ROOT, TINY, edit_npz, interrupt_at, run, snapshot, write_corpus

import corpora
import microgpt as mg
from harness import run_files
from harness.checkpoints import load_checkpoint, load_run
from harness.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, InputError
from harness.history import HISTORY_NAME, load_history


@pytest.mark.slow
def test_resume_may_lower_the_lr_but_not_raise_it(tmp_path, corpus, capsys):
    out = str(tmp_path / "run")
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "4", "--out", out])[0] == EXIT_OK
    code, _, err = run(capsys, ["--resume", "--out", out, "--steps", "6", "--lr", "0.02"])
    assert code == EXIT_BAD_INPUT and "--lr differs from the checkpoint" in err and "a lower --lr" in err
    code, stdout, err = run(capsys, ["--resume", "--out", out, "--steps", "6", "--lr", "0.001"])
    assert code == EXIT_OK, err
    assert "(lr lowered from 0.01 to 0.001)" in stdout
    assert load_checkpoint(os.path.join(out, "checkpoint.npz")).lr == 0.001
    code, stdout, err = run(capsys, ["--resume", "--out", out, "--steps", "8"])  # no --lr: the checkpoint's (now lower)
    assert code == EXIT_OK and "lowered" not in stdout

@pytest.mark.slow
def test_a_resumed_run_keeps_to_max_memory_as_a_new_one_does(tmp_path, corpus, capsys):
    """--max-memory is not stored in the checkpoint: a resumed run takes the flag, and a limit
    that its small checkpoint fits but the run does not refuses it, as it refuses a new run."""
    out = str(tmp_path / "run")
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", out])[0] == EXIT_OK
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "4", "--max-memory", "0.01"])
    assert code == EXIT_BAD_INPUT and "this run would need about" in err
    code, _, err = run(capsys, ["--resume", "--out", out, "--steps", "4", "--max-memory", "0.01"])
    assert code == EXIT_BAD_INPUT and "this run would need about" in err, err


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
    assert code == EXIT_BAD_INPUT and "it has as many (15), so their text changed, or the seed" in err
    write_corpus(str(tmp_path))  # restored: resumes
    assert run(capsys, ["--resume", "--out", out])[0] == EXIT_OK


def test_a_checkpoint_whose_seed_was_changed_is_refused_for_its_seed(tmp_path, capsys):
    """A seed of 2**70 in a crafted checkpoint splits the unchanged corpus otherwise: the refusal names the
    seed, and does not claim that the corpus changed."""
    corpus, out = write_corpus(str(tmp_path)), str(tmp_path / "run")
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", out])[0] == EXIT_OK
    edit_npz(os.path.join(out, "checkpoint.npz"), seed=2**70)
    code, _, err = run(capsys, ["--resume", "--out", out, "--steps", "4"])
    assert code == EXIT_BAD_INPUT and f"split with the checkpoint's seed {2**70} does not give the documents" in err
    assert "has changed" not in err and err.count("\n") == 1, err


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
    assert load_run(str(d2 / "run" / "checkpoint.npz"))[1].corpus == str(d2 / "c.txt")
    other = write_corpus(str(tmp_path), "zed\nyan\nxia\n", name="other.txt")  # other documents: refused
    code, _, err = run(capsys, ["--resume", "--out", str(d2 / "run"), "--steps", "30", "--corpus", other])
    assert code == EXIT_BAD_INPUT and "differs from the checkpoint's corpus" in err

@pytest.mark.slow
def test_switching_engines_on_resume_says_the_numbers_agree_to_1e15(tmp_path, corpus, capsys, monkeypatch):
    with monkeypatch.context() as patch:
        interrupt_at(patch, 4)
        assert run(capsys, TINY + ["--engine", "value", "--corpus", corpus, "--steps", "8",
                                   "--out", str(tmp_path / "a")])[0] == EXIT_INTERRUPTED
    code, out, _ = run(capsys, ["--resume", "--out", str(tmp_path / "a"), "--engine", "numpy"])
    assert code == EXIT_OK and "trained on the value engine and goes on with the numpy engine" in out
    assert run(capsys, TINY + ["--engine", "value", "--corpus", corpus, "--steps", "8",
                               "--out", str(tmp_path / "b")])[0] == EXIT_OK
    switched, whole = (load_checkpoint(str(tmp_path / x / "checkpoint.npz")) for x in "ab")
    gap = np.abs(mg.flat_buffer(switched.params) - mg.flat_buffer(whole.params)).max()
    assert gap < 1e-12  # equal to about 1e-15, as the note says (not bit for bit)

def test_a_new_run_never_overwrites_an_earlier_runs_history_or_metrics(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(out)])[0] == EXIT_OK
    os.remove(out / "checkpoint.npz")
    before = {name: (out / name).read_bytes() for name in (HISTORY_NAME, "metrics.json")}
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(out)])
    assert code == EXIT_BAD_INPUT and "holds an earlier run's history.npz, metrics.json" in err
    assert before == {name: (out / name).read_bytes() for name in before}


def test_end_to_end_with_out(tmp_path, corpus, capsys):
    out_dir = tmp_path / "run"
    code, out, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "40", "--eval-every", "20",
                                         "--out", str(out_dir), "--prompt", "a"])
    assert code == 0, err
    assert "val loss" in out and "bigram" in out and "sample  3: a" in out
    assert sorted(os.listdir(out_dir)) == ["checkpoint.npz", "history.npz", "loss.png", "metrics.json"]
    identity = load_run(out_dir / "checkpoint.npz")[1]  # who the run is, and on which documents
    assert len(identity.run_id) == 16 and identity.corpus == corpus and identity.corpus_docs == 15
    assert load_history(out_dir / HISTORY_NAME).run_id == identity.run_id
    m = json.loads((out_dir / "metrics.json").read_text())
    assert m["engine"] == "numpy" and m["norm"] == "rmsnorm" and m["steps"] == 40 and m["corpus"] == corpus
    assert m["config"]["n_embd"] == 8 and set(m["baselines"]) == {"uniform", "unigram", "bigram"}
    assert len(m["history"]["train_loss"]) == 40 and [s for s, _ in m["history"]["val_loss"]] == [0, 20, 40]
    assert np.isfinite(m["final_val_loss"]) and m["ms_per_step"] > 0
    assert (out_dir / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert load_checkpoint(str(out_dir / "checkpoint.npz")).step == 40
    # sample from the checkpoint alone
    code, out, err = run(capsys, ["--sample-only", "--checkpoint", str(out_dir / "checkpoint.npz"),
                                  "--num-samples", "4", "--prompt", "ma"])
    assert code == 0, err
    assert out.count("sample ") == 4 and "sample  4: ma" in out

def test_sphere_riemannian_value_engine_runs(tmp_path, corpus, capsys):
    code, out, err = run(capsys, ["--corpus", corpus, "--norm", "sphere", "--riemannian", "--engine", "value",
                                  "--n-embd", "4", "--n-head", "1", "--steps", "2", "--num-samples", "2",
                                  "--alpha-init", "0.2", "--sz-init", "5"])
    assert code == 0, err
    assert "norm=sphere" in out and "riemannian" in out

def test_cropping_is_reported_once(tmp_path, capsys):
    path = tmp_path / "long.txt"
    path.write_text("abcdefghijkl\nabc\nabcdefghij\nba\n", encoding="utf-8")
    code, out, _ = run(capsys, TINY + ["--corpus", str(path), "--block-size", "6", "--steps", "3"])
    assert code == 0
    assert out.count("cropped") == 1 and "2 docs are longer than block_size 6" in out

@pytest.mark.slow
@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
def test_ctrl_c_saves_and_resume_matches_uninterrupted_run(tmp_path, corpus, capsys, monkeypatch, norm):
    args = TINY + ["--corpus", corpus, "--norm", norm, "--steps", "30", "--batch-size", "2", "--eval-every", "7"]
    code, _, err = run(capsys, args + ["--out", str(tmp_path / "full")])
    assert code == 0, err
    interrupt_at(monkeypatch, 12)
    code, _, err = run(capsys, args + ["--out", str(tmp_path / "part")])
    assert code == 130
    assert "interrupted at step 12/30" in err and "--resume" in err
    assert load_checkpoint(str(tmp_path / "part" / "checkpoint.npz")).step == 12
    monkeypatch.undo()
    code, out, err = run(capsys, ["--resume", "--out", str(tmp_path / "part")])
    assert code == 0, err
    assert "resuming from step 12 of 30" in out
    full = load_checkpoint(str(tmp_path / "full" / "checkpoint.npz"))
    resumed = load_checkpoint(str(tmp_path / "part" / "checkpoint.npz"))
    for key in full.params:
        np.testing.assert_array_equal(resumed.params[key], full.params[key])
    np.testing.assert_array_equal(resumed.m, full.m)
    assert resumed.train_loss == full.train_loss and resumed.val_loss == full.val_loss

@pytest.mark.slow
def test_ctrl_c_without_out_saves_to_a_folder_of_its_own_and_the_printed_command_resumes(tmp_path, corpus, capsys,
                                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    interrupt_at(monkeypatch, 3)
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "10"])
    assert code == 130 and os.path.join("out", "run-1", "checkpoint.npz") in err
    assert load_checkpoint("out/run-1/checkpoint.npz").step == 3
    # a second interrupted run keeps the first one's checkpoint and takes the next free folder
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    interrupt_at(monkeypatch, 5)
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "10"])
    assert code == 130 and os.path.join("out", "run-2", "checkpoint.npz") in err
    assert load_checkpoint("out/run-1/checkpoint.npz").step == 3
    assert load_checkpoint("out/run-2/checkpoint.npz").step == 5
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    # the resume command it prints works exactly as printed (for run-2 too)
    command = err.split("continue with: ", 1)[1].strip()
    words = shlex.split(command)  # the interpreter that ran it (a bare `python` may be another, or none at all)
    assert words[0] == sys.executable and os.path.samefile(words[1], os.path.join(ROOT, "microgpt.py"))
    assert words[2:] == ["--resume", "--out", "out/run-2", "--num-samples", "3"]  # (TINY samples 3)
    pasted = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert pasted.returncode == 0, pasted.stderr
    assert "resuming from step 5 of 10" in pasted.stdout
    assert load_checkpoint("out/run-2/checkpoint.npz").step == 10
    assert load_checkpoint("out/run-1/checkpoint.npz").step == 3  # the other run's file is untouched

def test_two_runs_stopped_together_claim_different_folders(tmp_path):
    folders = [run_files.claim_run_folder(str(tmp_path / "out")) for _ in range(3)]
    assert [os.path.basename(f) for f in folders] == ["run-1", "run-2", "run-3"]
    os.rmdir(folders[1])  # a gap is reused, never an existing folder
    assert run_files.claim_run_folder(str(tmp_path / "out")) == folders[1]

def test_nan_loss_stops_and_keeps_last_good_checkpoint(tmp_path, corpus, capsys):
    out_dir = tmp_path / "run"
    code, _, _ = run(capsys, TINY + ["--corpus", corpus, "--steps", "5", "--out", str(out_dir)])
    assert code == 0
    before = snapshot(out_dir)
    # a fresh run never overwrites an earlier run's checkpoint: it is refused before training
    code, out, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "50", "--lr", "1e200", "--out", str(out_dir)])
    assert code == 2 and "holds an earlier run's checkpoint.npz" in err and "continue it with --resume" in err
    assert "step" not in out
    assert snapshot(out_dir) == before
    # diverging before this run's first checkpoint: nothing is written, and the message says so
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "50", "--lr", "1e200",
                                       "--out", str(tmp_path / "run1")])
    assert code == 1
    assert "diverged" in err and "step 2" in err and "not finite" in err
    assert "no checkpoint was written (it diverged before the first one" in err
    assert not (tmp_path / "run1" / "checkpoint.npz").exists()
    # diverging after this run's own checkpoint (step 1): that one is kept, and named
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "50", "--lr", "1e200", "--eval-every", "1",
                                       "--out", str(tmp_path / "run2")])
    assert code == 1 and "the last good checkpoint is" in err and "(step 1)" in err
    assert load_checkpoint(str(tmp_path / "run2" / "checkpoint.npz")).step == 1
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "50", "--lr", "1e200"])
    assert code == 1 and "no checkpoint was written (no --out)" in err

def bad_input_cases(tmp_path, corpus):
    (tmp_path / "empty.txt").write_text("\n  \n", encoding="utf-8")
    (tmp_path / "latin1.txt").write_bytes("jos\xe9\nana\n".encode("latin-1"))
    (tmp_path / "garbage.npz").write_bytes(b"PK\x03\x04 this is not a zip file")
    np.savez(tmp_path / "foreign.npz", weights=np.zeros(3))
    return [
        (["--corpus", str(tmp_path / "missing.txt")], "not found"),
        (["--corpus", str(tmp_path)], "is a folder, not a file"),
        (["--corpus", corpus + "/sub.txt"], "cannot read"),
        (["--corpus", str(tmp_path / "latin1.txt")], "not valid UTF-8"),
        (["--corpus", str(tmp_path / "empty.txt")], "0 non-empty lines"),
        (["--corpus", corpus, "--n-embd", "10", "--n-head", "4"], "divisible"),
        (["--corpus", corpus, "--n-embd", "0"], "--n-embd must be a positive"),
        (["--corpus", corpus, "--n-head", "-2"], "--n-head must be a positive"),
        (["--corpus", corpus, "--n-layer", "0"], "--n-layer must be a positive"),
        (["--corpus", corpus, "--block-size", "0"], "--block-size must be a positive"),
        (["--corpus", corpus, "--steps", "0"], "--steps must be a positive"),
        (["--corpus", corpus, "--steps", "-5"], "--steps must be a positive"),
        (["--corpus", corpus, "--batch-size", "0"], "--batch-size must be a positive"),
        (["--corpus", corpus, "--lr", "-0.1"], "--lr must be a positive"),
        (["--corpus", corpus, "--temperature", "0"], "--temperature must be a positive"),
        (["--corpus", corpus, "--temperature", "-1"], "--temperature must be a positive"),
        (["--corpus", corpus, "--prompt", "Zoë!"], "'Z' 'ë' '!'"),
        (["--corpus", corpus, "--prompt", "annabobcarla"], "prompt 'annabobcarla' has 12 characters; it must be "
                                                           "shorter than block_size 8"),
        (["--corpus", corpus, "--riemannian"], "--riemannian needs --norm sphere"),
        (["--corpus", corpus, "--seed", "-1"], "--seed must be a non-negative integer"),
        (["--corpus", corpus, "--checkpoint", str(tmp_path / "garbage.npz")], "only read with --resume or --sample"),
        (["--sample-only", "--resume", "--checkpoint", str(tmp_path / "foreign.npz")], "exclude each other"),
        (["--sample-only"], "--sample-only needs --checkpoint"),
        (["--sample-only", "--checkpoint", corpus, "--n-embd", "8", "--out", "x"],
         "--n-embd, --out: no effect with --sample-only"),
        (["--corpus", corpus, "--steps", "1e3"], "argument --steps: invalid int value: '1e3'"),
        (["--sample-only", "--checkpoint", str(tmp_path / "nope.npz")], "not found"),
        (["--sample-only", "--checkpoint", str(tmp_path / "garbage.npz")], "corrupt"),
        (["--sample-only", "--checkpoint", str(tmp_path / "foreign.npz")], "incompatible"),
        (["--resume", "--checkpoint", str(tmp_path / "garbage.npz")], "corrupt"),
    ]

def test_every_bad_input_gives_one_clear_message(tmp_path, corpus, capsys):
    out_dir = tmp_path / "keep"
    code, _, _ = run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out_dir)])
    assert code == 0
    before = snapshot(out_dir)
    for argv, message in bad_input_cases(tmp_path, corpus):
        # (--sample-only takes no model, training or output flags: those cases run on their own)
        code, out, err = run(capsys, argv if "--sample-only" in argv else TINY + argv + ["--out", str(out_dir)])
        assert code == 2, (argv, err)
        assert message in err, (argv, err)
        assert err.startswith("microgpt: error:") and err.count("\n") == 1, (argv, err)
        assert "step" not in out, argv  # failed before training
        assert snapshot(out_dir) == before, argv  # nothing overwritten

def test_out_that_cannot_hold_files(tmp_path, corpus, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("keep me")
    code, out, err = run(capsys, TINY + ["--corpus", corpus, "--out", str(blocker / "sub")])
    assert code == 2 and "is not a writable folder" in err and "step" not in out
    assert blocker.read_text() == "keep me"

def test_out_without_write_permission(tmp_path, corpus, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):
        pytest.skip("running as root: permissions do not stop writes")
    code, out, err = run(capsys, TINY + ["--corpus", corpus, "--out", str(locked)])
    assert code == 2 and "is not a writable folder" in err and "step" not in out

def test_truncated_checkpoint_and_conflicting_resume(tmp_path, corpus, capsys):
    out_dir = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out_dir)])[0] == 0
    ckpt = out_dir / "checkpoint.npz"
    data = ckpt.read_bytes()
    code, _, err = run(capsys, ["--resume", "--out", str(out_dir), "--n-embd", "16"])
    assert code == 2 and "--n-embd differs from the checkpoint" in err
    code, _, err = run(capsys, ["--resume", "--out", str(out_dir), "--steps", "2"])
    assert code == 2 and "beyond the requested --steps 2" in err
    assert ckpt.read_bytes() == data
    (tmp_path / "half.npz").write_bytes(data[: len(data) // 2])
    code, _, err = run(capsys, ["--sample-only", "--checkpoint", str(tmp_path / "half.npz")])
    assert code == 2 and "corrupt" in err

@pytest.mark.slow
def test_resume_from_another_directory_with_a_relative_corpus_path(tmp_path, corpus, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(capsys, TINY + ["--corpus", "names.txt", "--steps", "3", "--out", "run"])[0] == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, err = run(capsys, ["--resume", "--out", "../run", "--steps", "5"])
    assert code == 0 and "resuming from step 3 of 5" in out, err
    code, out, err = run(capsys, ["--resume", "--out", "../run", "--steps", "7", "--corpus", "./../names.txt"])
    assert code == 0 and "resuming from step 5 of 7" in out, err  # the same file, spelled differently
    code, _, err = run(capsys, ["--resume", "--out", "../run", "--steps", "9", "--corpus", "names"])
    assert code == 2 and "--corpus 'names' differs from the checkpoint's corpus" in err

def test_argparse_errors_and_help(capsys):
    code, _, err = run(capsys, ["--steps", "many"])
    assert code == 2 and "invalid int value" in err
    code, _, err = run(capsys, ["--engine", "torch"])
    assert code == 2 and "invalid choice" in err
    code, out, _ = run(capsys, ["--help"])
    assert code == 0 and "--norm" in out and "--resume" in out

def test_missing_package_message(monkeypatch):
    real = corpora.importlib.util.find_spec
    monkeypatch.setattr(corpora.importlib.util, "find_spec",
                        lambda name, *a: None if name == "names" else real(name, *a))
    with pytest.raises(InputError, match="pip install names"):
        mg.load_corpus("names")

@pytest.mark.slow
def test_the_cli_samples_with_the_engine_it_trained_with(tmp_path, corpus, capsys, monkeypatch):
    calls = []
    real = mg.sample_value
    monkeypatch.setattr(mg, "sample_value", lambda *a: calls.append(1) or real(*a))
    args = ["--corpus", corpus, "--n-embd", "4", "--n-head", "1", "--block-size", "8", "--steps", "2",
            "--num-samples", "3"]
    code, out, err = run(capsys, args + ["--engine", "value", "--out", str(tmp_path / "v")])
    assert code == 0, err
    assert len(calls) == 3 and out.count("sample ") == 3  # the chapter's loop, once per sample
    calls.clear()
    code, _, err = run(capsys, args + ["--engine", "numpy", "--out", str(tmp_path / "n")])
    assert code == 0 and not calls, err
    # --sample-only: the checkpoint's engine, unless --engine says otherwise; the same names either way
    ckpt = str(tmp_path / "n" / "checkpoint.npz")
    code, by_numpy, err = run(capsys, ["--sample-only", "--checkpoint", ckpt, "--num-samples", "5"])
    assert code == 0 and not calls, err
    code, by_value, err = run(capsys, ["--sample-only", "--checkpoint", ckpt, "--num-samples", "5",
                                       "--engine", "value"])
    assert code == 0 and len(calls) == 5, err
    assert by_value == by_numpy

def test_dtype_float32_end_to_end_and_kept_on_resume(tmp_path, corpus, capsys):
    out = str(tmp_path / "f32")
    code, stdout, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "20", "--dtype", "float32", "--out", out])
    assert code == 0, err
    state = load_checkpoint(os.path.join(out, "checkpoint.npz"))
    assert state.params["wte"].dtype == np.float32 and state.m.dtype == np.float32
    code, _, err = run(capsys, ["--resume", "--out", out, "--steps", "30"])
    assert code == 0, err
    assert load_checkpoint(os.path.join(out, "checkpoint.npz")).params["wte"].dtype == np.float32
    code, _, err = run(capsys, ["--resume", "--out", out, "--steps", "40", "--dtype", "float64"])
    assert code == 2 and "--dtype differs from the checkpoint" in err
    code, _, err = run(capsys, ["--corpus", corpus, "--dtype", "float32", "--engine", "value"])
    assert code == 2 and "--dtype float32 needs --engine numpy" in err
    code, _, err = run(capsys, ["--resume", "--out", out, "--steps", "40", "--engine", "value"])
    assert code == 2 and "the value engine computes in float64 only" in err

def test_small_flag_mistakes_get_one_line(corpus, capsys):
    code, _, err = run(capsys, ["--corpus", corpus, "--out", " "])
    assert code == 2 and err == "microgpt: error: --out must be a non-empty path, got ' '\n"
    code, _, err = run(capsys, ["--bogus"])
    assert code == 2 and err.count("\n") == 1 and "unrecognized arguments: --bogus" in err and "--help" in err


# ----------------------------------------------------------------------------- a run writes only its own files

def test_a_resume_into_a_folder_with_another_runs_files_is_refused_and_changes_nothing(tmp_path, corpus, capsys,
                                                                                      monkeypatch):
    x, b, y = tmp_path / "X", tmp_path / "B", tmp_path / "Y"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "6", "--out", str(x)])[0] == EXIT_OK
    shutil.copytree(x, b)
    os.remove(b / "checkpoint.npz")  # B holds X's history, metrics.json and loss.png
    interrupt_at(monkeypatch, 3)
    assert run(capsys, TINY + ["--corpus", corpus, "--seed", "7", "--steps", "6", "--out", str(y)])[0] == 130
    monkeypatch.undo()
    before = snapshot(str(b))
    code, out, err = run(capsys, ["--resume", "--checkpoint", str(y / "checkpoint.npz"), "--out", str(b)])
    assert code == EXIT_BAD_INPUT and "holds another run's files (history.npz, metrics.json, loss.png)" in err
    assert err.count("\n") == 1 and "step" not in out and snapshot(str(b)) == before
    empty = tmp_path / "empty"  # an empty folder (or a new one) is fine
    assert run(capsys, ["--resume", "--checkpoint", str(y / "checkpoint.npz"), "--out", str(empty)])[0] == EXIT_OK
    assert load_checkpoint(str(empty / "checkpoint.npz")).step == 6


def test_a_run_file_that_is_a_symbolic_link_is_refused_before_the_first_step(tmp_path, corpus, capsys):
    out, real = tmp_path / "OUT", tmp_path / "real.npz"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "4", "--out", str(out)])[0] == EXIT_OK
    shutil.move(out / "checkpoint.npz", real)
    os.symlink("../real.npz", out / "checkpoint.npz")
    code, stdout, err = run(capsys, ["--resume", "--out", str(out), "--steps", "300", "--eval-every", "1000"])
    assert code == EXIT_BAD_INPUT and "checkpoint.npz' is a symbolic link" in err and "step " not in stdout
    assert os.path.islink(out / "checkpoint.npz") and load_checkpoint(str(real)).step == 4


def test_a_checkpoint_without_a_fingerprint_resumes_from_its_corpus_new_place(tmp_path, capsys):
    """The checkpoint of tests/data predates the corpus fingerprint, and its corpus is gone: --corpus NEW is taken,
    with a note that only the vocabulary could be compared."""
    old = os.path.join(ROOT, "tests", "data", "checkpoint_v1_sphere.npz")
    ckpt = tmp_path / "run" / "checkpoint.npz"
    os.makedirs(ckpt.parent)
    shutil.copy(old, ckpt)
    code, _, err = run(capsys, ["--resume", "--out", str(ckpt.parent), "--steps", "8"])
    assert code == EXIT_BAD_INPUT and "is not there any more; if it moved, give its new path with --corpus" in err
    corpus = write_corpus(str(tmp_path))
    code, stdout, err = run(capsys, ["--resume", "--out", str(ckpt.parent), "--steps", "8", "--corpus", corpus])
    assert code == EXIT_OK, err
    assert "the checkpoint has no fingerprint of its documents, so only its vocabulary could be compared" in stdout
    assert load_run(str(ckpt))[1].corpus_sha256  # from now on it has one
    other = write_corpus(str(tmp_path), "zed\nquinn\n", "other.txt")
    code, _, err = run(capsys, ["--resume", "--out", str(ckpt.parent), "--steps", "9", "--corpus", other])
    assert code == EXIT_BAD_INPUT and "differs from the checkpoint's corpus" in err


@pytest.mark.slow
@pytest.mark.parametrize("name", ["x$_$y.txt", "$a$.txt", b"bad\xffname.txt"])
def test_a_corpus_whose_name_is_not_plain_text_is_drawn_as_text(tmp_path, capsys, name):
    path = os.path.join(os.fsencode(tmp_path), name if isinstance(name, bytes) else name.encode())
    with open(path, "w", encoding="utf-8") as f:
        f.write("anna\nbob\ncarla\ndave\neve\n")
    code, _, err = run(capsys, TINY + ["--corpus", os.fsdecode(path), "--steps", "3", "--out", str(tmp_path / "r")])
    assert code == EXIT_OK, err
    assert (tmp_path / "r" / "loss.png").stat().st_size > 10_000


def test_the_models_first_failing_step_is_the_models_code_not_the_learning_rate(tmp_path, corpus):
    """A learner's edit that makes the engine fail at step 1 (log of a negative probability): no learning
    rate has acted yet, so it is the model's code: Python's traceback, ending at the learner's line (where
    `python -m pdb` stops too), not a divergence that blames --lr."""
    text = open(os.path.join(ROOT, "microgpt.py"), encoding="utf-8").read()
    assert text.count("loss_t = -probs[target_id].log()") == 1
    (tmp_path / "microgpt.py").write_text(text.replace("loss_t = -probs[target_id].log()",
                                                       "loss_t = -(probs[target_id] - 0.5).log()"),
                                          encoding="utf-8")
    proc = subprocess.run([sys.executable, "microgpt.py", "--steps", "3", "--corpus", corpus],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 1 and "Traceback" in proc.stderr, proc.stderr
    assert "loss_t = -(probs[target_id] - 0.5).log()" in proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1].startswith("value.NumericError: Value.log")
    assert "Try a smaller --lr" not in proc.stderr


def test_a_file_named_like_a_built_in_corpus_is_mentioned(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "names").write_text("zed\nquinn\n", encoding="utf-8")
    code, stdout, _ = run(capsys, TINY + ["--corpus", "names", "--steps", "1"])
    assert code == EXIT_OK and "note: --corpus names is the built-in corpus; for the file of that name here give " \
                               "its path, ./names" in stdout


def test_without_matplotlib_a_run_with_out_is_refused_before_training(tmp_path, corpus, capsys, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    code, stdout, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(tmp_path / "r")])
    assert code == EXIT_BAD_INPUT and "loss.png, which needs matplotlib: pip install matplotlib" in err
    assert "step" not in stdout and not (tmp_path / "r").exists()


@pytest.mark.parametrize("where", ["--corpus", "--checkpoint", "OUT/checkpoint.npz", "--sample-only",
                                   "OUT/history.npz"])
def test_a_fifo_where_a_file_is_read_is_refused_not_waited_on(tmp_path, corpus, capsys, where):
    """Reading a FIFO waits for a writer forever: the corpus, a checkpoint, OUT/checkpoint.npz, a resumed run's
    OUT/history.npz are refused in one line (exit 2) before anything opens them."""
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    argv = {"--corpus": TINY + ["--corpus", fifo, "--steps", "2"],
            "--checkpoint": ["--resume", "--checkpoint", fifo, "--steps", "2"],
            "--sample-only": ["--sample-only", "--checkpoint", fifo]}.get(where)
    if where == "OUT/history.npz":
        out = tmp_path / "run"
        assert run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(out)])[0] == EXIT_OK
        os.remove(out / "history.npz")
        os.mkfifo(out / "history.npz")
        argv = ["--resume", "--out", str(out), "--steps", "4"]
    if argv is None:
        (tmp_path / "out").mkdir()
        os.mkfifo(tmp_path / "out" / "checkpoint.npz")
        argv = ["--resume", "--out", str(tmp_path / "out"), "--steps", "2"]
    code, _, err = run(capsys, argv)
    assert code == EXIT_BAD_INPUT and "is a FIFO" in err and err.count("\n") == 1, err


def test_resuming_a_finished_run_says_so_and_leaves_its_files_as_they_are(tmp_path, corpus, capsys):
    out = str(tmp_path / "run")
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "4", "--out", out])[0] == EXIT_OK
    before = snapshot(out)
    code, stdout, err = run(capsys, ["--resume", "--out", out])
    assert code == EXIT_OK and "is finished: step 4 of 4; nothing to train" in stdout, err
    assert "--sample-only" in stdout and "sample  1" not in stdout
    code, stdout, err = run(capsys, ["--resume", "--out", out, "--num-samples", "2", "--temperature", "0.8"])
    assert code == EXIT_OK and "temperature 0.8" in stdout and "sample  2: " in stdout and "sample  3" not in stdout
    assert snapshot(out) == before  # metrics.json keeps its ms/step and its names; nothing rewritten


@pytest.mark.parametrize("what", ["a file", "a dangling link", "a FIFO"])
def test_the_default_out_is_checked_before_the_first_step(tmp_path, corpus, capsys, monkeypatch, what):
    """Without --out a stopped run saves to ./out/run-N: ./out that cannot take it is refused before training
    (exit 2, nothing written), not found out at Ctrl-C after hours."""
    monkeypatch.chdir(tmp_path)
    {"a file": lambda: (tmp_path / "out").write_text("x"), "a dangling link": lambda: os.symlink("gone", "out"),
     "a FIFO": lambda: os.mkfifo("out")}[what]()
    code, stdout, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "3"])
    assert code == EXIT_BAD_INPUT and f"./out is {what}, not a folder" in err and "step" not in stdout, err


MIRRORS = "numpy_engine.py does, and --engine numpy runs numpy_engine.py"  # the note, as English prints it


def times_two(real):
    """gpt() or gpt_sphere() edited: the same name, every logit doubled."""
    def edited(*args):
        return [2 * logit for logit in real(*args)]
    edited.__name__ = real.__name__
    return edited


def test_a_numpy_run_of_an_edited_gpt_notes_that_it_runs_numpy_engine_py(corpus, capsys, monkeypatch):
    code, out, _ = run(capsys, TINY + ["--corpus", corpus, "--steps", "2"])
    assert code == EXIT_OK and "numpy_engine.py" not in out  # the chapter's gpt(): no note
    monkeypatch.setattr(mg, "gpt", times_two(mg.gpt))
    code, out, _ = run(capsys, TINY + ["--corpus", corpus, "--steps", "2"])
    assert code == EXIT_OK and "note: gpt() no longer computes what " + MIRRORS in out, out
    code, out, _ = run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--norm", "sphere"])
    assert code == EXIT_OK and "numpy_engine.py" not in out  # gpt_sphere() is the chapter's
    code, out, _ = run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--engine", "value"])
    assert code == EXIT_OK and "numpy_engine.py" not in out  # the Value engine runs the edit
    monkeypatch.setattr(mg, "gpt_sphere", times_two(mg.gpt_sphere))
    code, out, _ = run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--norm", "sphere", "--lang", "ja"])
    assert code == EXIT_OK and "注意: gpt_sphere() の計算が numpy_engine.py と一致しません" in out, out


def edited_copy(folder, old, new):
    """microgpt.py with one line of gpt() changed, as a learner edits it."""
    text = open(os.path.join(ROOT, "microgpt.py"), encoding="utf-8").read()
    at = text.index(old, text.index("def gpt("))
    assert at < text.index("def gpt_sphere(")  # gpt()'s own line
    (folder / "microgpt.py").write_text(text[:at] + new + text[at + len(old):], encoding="utf-8")
    return str(folder / "microgpt.py")


@pytest.mark.parametrize("edit", ["no relu", "raises"])
def test_a_copy_with_gpt_edited_notes_it_on_numpy_and_runs_it_on_value(tmp_path, corpus, edit):
    """The file run as a learner runs it: gpt() without the MLP's relu computes other logits; one that raises
    (mlp_fc2 changed to mlp_fc1: a shape error) computes none. On --engine numpy both are a note and exit 0;
    on --engine value the first trains without a note and the second is Python's traceback at its line."""
    relu, fc2 = "        x = [xi.relu() for xi in x]\n", "state_dict[f'layer{li}.mlp_fc2']"
    script = edited_copy(tmp_path, *((relu, "") if edit == "no relu" else (fc2, fc2.replace("fc2", "fc1"))))

    def python(*flags):
        return subprocess.run([sys.executable, script, *TINY, "--corpus", corpus, "--steps", "2", *flags],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": ROOT})
    numpy_run, value_run = python(), python("--engine", "value")
    assert numpy_run.returncode == 0 and "note: gpt() no longer computes what " + MIRRORS in numpy_run.stdout
    assert "Traceback" not in numpy_run.stderr and "sample  1: " in numpy_run.stdout
    assert "numpy_engine.py" not in value_run.stdout
    if edit == "no relu":
        assert value_run.returncode == 0, value_run.stderr
    else:
        assert value_run.returncode == 1 and "in gpt\n" in value_run.stderr and "Traceback" in value_run.stderr


def test_a_runs_settings_are_a_written_out_dataclass_a_field_per_row():
    """RunSettings declares every row of settings.SETTINGS, in the table's order, then what the
    harness learns; nothing adds a field to it later (a dataclass without __dict__ extras)."""
    import dataclasses

    from harness.cli import RunSettings, new_settings, parse_args
    from settings import SETTINGS
    names = [f.name for f in dataclasses.fields(RunSettings)]
    assert names[:len(SETTINGS)] == [row.name for row in SETTINGS]
    opts = new_settings(parse_args([]))
    assert set(vars(opts)) == set(names)
