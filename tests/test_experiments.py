"""Smoke test of experiments/sphere_vs_rmsnorm.py (--quick) and checks of its measuring helpers."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "experiments", "sphere_vs_rmsnorm.py")
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import sphere_vs_rmsnorm as exp  # noqa: E402


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_quick_writes_table_json_and_plots(tmp_path):
    out = tmp_path / "q"
    r = run("--quick", "--out", str(out))
    assert r.returncode == 0, r.stderr
    md = (out / "results.md").read_text(encoding="utf-8")
    assert "| batch | layers | model | best lr |" in md
    for arm in ("| rmsnorm |", "| sphere |", "| sphere+riemannian |"):
        assert arm in md
    assert "Sensitivity to alpha_init and sz_init" in md
    raw = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert raw["summary"] and raw["runs"] and raw["baselines"]["bigram"] > 0
    for name in ("val_curves.png", "lr_sweep.png", "scales.png", "sensitivity.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    assert not [p for p in os.listdir(out) if p.startswith(".tmp-")]  # atomic writes left no temp files
    assert "ETA" in r.stderr


@pytest.mark.slow
def test_a_narrower_invocation_keeps_the_runs_it_does_not_plan(tmp_path):
    """--seeds 1 after a finished quick study in one --out: seed 2's runs stay in results.json
    (other_runs), and the full command afterwards trains nothing again."""
    out = tmp_path / "q"
    assert run("--quick", "--out", str(out)).returncode == 0
    assert run("--quick", "--seeds", "1", "--out", str(out)).returncode == 0
    narrow = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert narrow["other_runs"] and {r["seed"] for r in narrow["other_runs"]} == {2}
    again = run("--quick", "--out", str(out))
    assert again.returncode == 0 and again.stderr.count("(reused)") == 24, again.stderr
    assert not json.loads((out / "results.json").read_text(encoding="utf-8"))["other_runs"]


def test_missing_corpus_is_a_clear_error(tmp_path):
    r = run("--quick", "--corpus", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "not found" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args", [["--steps", "0"], ["--lrs", "0.01,-1"], ["--batch-sizes", "x"]])
def test_bad_flags_exit_nonzero(args):
    r = run("--quick", *args)
    assert r.returncode != 0 and "error" in r.stderr and "Traceback" not in r.stderr


def test_help_mentions_every_flag():
    r = run("--help")
    assert r.returncode == 0
    for flag in ("--corpus", "--out", "--quick", "--steps", "--seeds", "--lrs", "--batch-sizes", "--n-layers",
                 "--alpha-inits", "--sz-inits", "--val-docs"):
        assert flag in r.stdout


def test_steps_to_target_interpolates_and_reports_not_reached():
    curve = [(0, 3.0), (10, 2.5), (20, 2.0)]
    assert exp.steps_to_target(curve, 2.25) == pytest.approx(15.0)
    assert exp.steps_to_target(curve, 3.5) == 0.0
    assert exp.steps_to_target(curve, 1.9) is None


def in_process(capsys, *args):
    code = exp.main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


@pytest.mark.parametrize(("args", "message"), [(["--seed", "-1"], "--seed must be a non-negative integer"),
                                               (["--out", ""], "--out must be a non-empty path"),
                                               (["--alpha-inits", "inf"], "expected positive numbers"),
                                               (["--n-embd", "30"], "must be divisible by --n-head"),
                                               (["--max-memory", "0"], "--max-memory must be a positive"),
                                               (["--n-embd", "4096"], "this grid would need about 13.0 GB")])
def test_flags_are_checked_at_the_door(capsys, tmp_path, args, message):
    code, err = in_process(capsys, "--quick", "--out", str(tmp_path / "o"), *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_a_study_whose_runs_all_diverge_says_so_in_one_line_and_again_when_continued(capsys, tmp_path,
                                                                                       recwarn):
    """Every lr diverges: exit 1 and one line, no NumPy warnings; the saved runs are a record the same
    command reads back."""
    for _ in range(2):
        code, err = in_process(capsys, "--quick", "--out", str(tmp_path), "--lrs", "1e308")
        last = err.strip().splitlines()[-1]
        assert code == 1 and "every run of rmsnorm (batch 4, 1 layer) at its chosen lr diverged" in last, err
        assert "not a record" not in err
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    runs = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["runs"]
    assert runs and all(r["final_val"] is None and r["val_curve"][0][0] == 0 for r in runs)


def test_a_second_invocation_on_the_same_out_is_refused(capsys, tmp_path):
    from harness.run_files import RunLock
    with RunLock(str(tmp_path)) as lock:
        lock.claim()
        code, err = in_process(capsys, "--quick", "--out", str(tmp_path))
    assert code == 2 and "is in use by another run (pid " in err


@pytest.mark.slow
def test_every_run_is_saved_and_the_same_command_continues(tmp_path):
    out = tmp_path / "q"
    assert run("--quick", "--out", str(out)).returncode == 0
    raw = json.loads((out / "results.json").read_text(encoding="utf-8"))
    again = run("--quick", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert "24 runs already in" in again.stderr and again.stderr.count("(reused)") == 24
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["summary"] == raw["summary"]
    other = run("--quick", "--out", str(out), "--steps", "30")
    assert other.returncode == 2 and "it was made with other steps" in other.stderr
