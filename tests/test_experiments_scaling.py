"""Smoke test of experiments/scaling.py (--quick): outputs, clear errors, and results independent of --workers."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "experiments", "scaling.py")
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import scaling  # noqa: E402
from cli_helpers import alive, children  # noqa: E402

import microgpt  # noqa: E402


def _corpus_file():
    """A names.txt-like file (one name per line) from the packaged `names` list: the smoke test reads its corpus
    from a file, as the study does given makemore's names.txt (its default is the built-in `names`)."""
    import tempfile
    folder = tempfile.mkdtemp(prefix="scaling-corpus-")
    path = os.path.join(folder, "names.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(microgpt.load_corpus("names")) + "\n")
    return path


CORPUS = _corpus_file()

PNGS = ("gap_length.png", "gap_depth.png", "gap_width.png", "val_curves_length.png", "lr_sweeps.png")
TIMING = ("seconds", "ms_per_step")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    """--quick with 2 workers and with 1 worker (each a few seconds)."""
    out = {}
    for workers in (2, 1):
        d = tmp_path_factory.mktemp(f"w{workers}")
        r = run("--quick", "--corpus", CORPUS, "--out", str(d), "--workers", str(workers))
        out[workers] = (r, d)
    return out


@pytest.mark.slow
def test_quick_writes_tables_json_and_plots(quick_runs):
    r, out = quick_runs[2]
    assert r.returncode == 0, r.stderr
    md = (out / "results.md").read_text(encoding="utf-8")
    for heading in ("## The trend", "## Length sweep", "## Depth sweep", "## Width sweep", "## Learning-rate sweeps"):
        assert heading in md
    for model in ("| rmsnorm |", "| sphere |", "| sphere a=1/L |"):
        assert model in md
    assert "- command: `python experiments/scaling.py --quick" in md and "- machine:" in md and "wall time" in md
    raw = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert set(raw["summary"]) == {"length", "depth", "width"}
    for rec in raw["runs"]:
        for k in ("model", "n_embd", "n_layer", "steps", "batch_size", "lr", "seed", "alpha_init", "val_curve",
                  "final_val"):
            assert k in rec
        assert rec["val_curve"][0][0] == 0 and rec["val_curve"][-1][0] == rec["steps"]
        assert (rec["alpha_init"] is None) == (rec["model"] == "rmsnorm")
    # every model in every cell: a sweep, then the seeds at the sweep's best lr
    seeds = [rec for rec in raw["runs"] if rec["phase"] == "seeds"]
    assert {(r["model"], r["steps"], r["n_layer"], r["n_embd"]) for r in seeds} == {
        (m, s, n, e) for m in ("rmsnorm", "sphere") for s, n, e in ((10, 1, 16), (20, 1, 16), (10, 2, 16), (10, 1, 32))
    } | {("sphere a=1/L", 10, 1, 16), ("sphere a=1/L", 10, 2, 16)}
    for cell in raw["summary"]["depth"]["cells"]:
        rows = {row["model"]: row for row in cell["rows"]}
        assert len(rows["sphere"]["gaps"]) == 2
        assert rows["sphere"]["gap_mean"] == pytest.approx(rows["sphere"]["final_mean"] - rows["rmsnorm"]["final_mean"])
        assert rows["sphere a=1/L"]["alpha_init"] == pytest.approx(1 / cell["n_layer"])
    for name in PNGS:
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    assert not [p for p in os.listdir(out) if p.startswith(".tmp-")]  # atomic writes left no temp files
    assert "ETA" in r.stderr


@pytest.mark.slow
def test_results_do_not_depend_on_the_number_of_workers(quick_runs):
    (r2, d2), (r1, d1) = quick_runs[2], quick_runs[1]
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    a, b = (json.loads((d / "results.json").read_text(encoding="utf-8")) for d in (d2, d1))
    strip = lambda runs: [{k: v for k, v in rec.items() if k not in TIMING} for rec in runs]  # noqa: E731
    assert strip(a["runs"]) == strip(b["runs"])
    assert a["info"]["wall_s"] > 0 and a["options"]["workers"] == 2 and b["options"]["workers"] == 1


@pytest.mark.slow
def test_from_json_rerenders_the_same_report(quick_runs, tmp_path):
    _, out = quick_runs[2]
    r = run("--from-json", str(out / "results.json"), "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "results.md").read_text(encoding="utf-8") == (out / "results.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_reuse_trains_only_the_new_runs(quick_runs, tmp_path):
    _, out = quick_runs[2]
    old = json.loads((out / "results.json").read_text(encoding="utf-8"))
    r = run("--quick", "--corpus", CORPUS, "--out", str(tmp_path), "--seeds", "3", "--reuse", str(out / "results.json"))
    assert r.returncode == 0, r.stderr
    new = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert new["info"]["n_reused"] == len(old["runs"])  # same sweeps and seeds 1-2; only seed 3 is trained
    assert len(new["runs"]) == len(old["runs"]) + sum(1 for rec in old["runs"] if rec["seed"] == 2)
    assert [rec for rec in new["runs"] if rec["seed"] != 3] == old["runs"]
    assert "were not trained again but reused" in (tmp_path / "results.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_narrower_invocation_keeps_the_runs_it_does_not_plan(quick_runs, tmp_path):
    """--seeds 1 into a finished quick study's --out: seed 2's runs stay in results.json (other_runs),
    and the full command afterwards trains nothing."""
    _, done = quick_runs[1]
    out = tmp_path / "o"
    shutil.copytree(done, out)
    old = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert run("--quick", "--corpus", CORPUS, "--out", str(out), "--seeds", "1").returncode == 0
    narrow = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert {r["seed"] for r in narrow["other_runs"]} == {2}
    assert len(narrow["runs"]) + len(narrow["other_runs"]) == len(old["runs"])
    again = run("--quick", "--corpus", CORPUS, "--out", str(out))
    assert again.returncode == 0, again.stderr
    final = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert final["info"]["n_reused"] == len(old["runs"]) and not final["other_runs"]


def test_missing_corpus_is_one_clear_line(tmp_path):
    r = run("--quick", "--corpus", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "not found" in lines[0] and "--corpus" in lines[0] and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args", [["--workers", "0"], ["--lengths", "x"], ["--bogus"], ["--widths", "18"],
                                  ["--layers", "1,1"]])
def test_bad_flags_exit_2_with_one_line(args, tmp_path):
    r = run("--corpus", CORPUS, "--out", str(tmp_path / "o"), *args)  # not --quick: it would override the sizes
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0] and "Traceback" not in r.stderr


def test_help_mentions_every_flag():
    r = run("--help")
    assert r.returncode == 0
    for flag in ("--corpus", "--out", "--quick", "--workers", "--lengths", "--layers", "--widths", "--seeds",
                 "--lr0", "--base-sweep", "--sweep", "--max-extend", "--val-docs", "--from-json"):
        assert flag in r.stdout


def test_iso_loss_steps_interpolates_in_log_steps():
    lengths, finals = [1000, 4000], [2.2, 2.0]
    assert scaling.iso_loss_steps(lengths, finals, 2.1) == ["=", pytest.approx(2000.0)]
    assert scaling.iso_loss_steps(lengths, finals, 2.3) == ["<", 1000]
    assert scaling.iso_loss_steps(lengths, finals, 1.9) == [">", 4000]


def test_plan_shares_the_base_cell_and_chains_neighbours():
    opts = scaling.parser().parse_args([])
    base, axes, units = scaling.build_plan(opts)
    assert base == (2000, 1, 16)
    assert len(units) == 2 * (1 + 2 + 3 + 2) + 4  # base + 2 lengths + 3 depths + 2 widths, and a=1/L in depth
    u = units[("sphere", 40000, 1, 16)]
    assert u.parent is units[("sphere", 10000, 1, 16)] and u.parent.parent is units[("sphere", 2000, 1, 16)]
    assert units[("sphere a=1/L", 2000, 8, 16)].parent is units[("sphere a=1/L", 2000, 4, 16)]
    assert scaling.lr_of(opts, 0) == 0.01 and scaling.lr_of(opts, 2) == pytest.approx(0.02)


# ----------------------------------------------------------------------------- inside the shell

def in_process(capsys, *args):
    """scaling.main(ARGS) in this process: (exit code, stderr); never a traceback."""
    code = scaling.main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


LONGER = ["--quick", "--lengths", "300,600", "--workers", "2"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "Ctrl-C", "SIGKILL"])
def test_a_stopped_grid_leaves_no_worker_and_continues_where_it_stopped(tmp_path, how):
    """SIGTERM, SIGHUP or Ctrl-C (to the whole process group, as a terminal sends it): one line, exit 130, the queued runs
    cancelled and the workers ended; kill -9: the workers see their parent gone and end within a second or two.
    Every finished run was saved: the same command continues from them."""
    out = tmp_path / "o"
    proc = subprocess.Popen([sys.executable, SCRIPT, *LONGER, "--out", str(out)], stderr=subprocess.PIPE,
                            text=True, start_new_session=True, cwd=ROOT)
    for line in proc.stderr:
        if line.startswith("[2/"):
            break
    workers = children(proc.pid)
    assert len(workers) >= 2
    if how == "Ctrl-C":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(getattr(signal, how))
    rest = proc.stderr.read()
    code = proc.wait(timeout=60)
    deadline = time.time() + 10
    while any(alive(pid) for pid in workers) and time.time() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in workers if alive(pid)], "a worker outlived the grid"
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert saved["complete"] is False and len(saved["runs"]) >= 2
    if how != "SIGKILL":
        assert code == 130 and "Traceback" not in rest and "leaked" not in rest
        assert rest.strip().splitlines() == [f"scaling.py: interrupted; the {len(saved['runs'])} finished runs are "
                                             f"saved in {out / 'results.json'}: the same command continues the study"]
    again = run(*LONGER, "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert f"{len(saved['runs'])} runs already known" in again.stderr
    final = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert final["complete"] and final["info"]["n_reused"] == len(saved["runs"])


def test_a_second_invocation_on_the_same_out_is_refused(tmp_path, capsys):
    from harness.run_files import RunLock
    with RunLock(str(tmp_path)) as lock:
        lock.claim()
        code, err = in_process(capsys, "--quick", "--out", str(tmp_path))
    assert code == 2 and "is in use by another run (pid " in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "results.json").exists()


def test_an_empty_out_is_refused_not_taken_for_the_default(capsys):
    code, err = in_process(capsys, "--quick", "--out", "")
    assert code == 2 and "--out must be a non-empty path" in err


@pytest.mark.parametrize(("args", "message"), [
    (["--seed", "-1"], "--seed must be a non-negative integer"),
    (["--split-seed", "-3"], "--split-seed must be a non-negative integer"),
    (["--lr0", "nan"], "--lr0 must be a positive number"),
    (["--lr0", "1e308", "--base-sweep", "4"], "lr0*2^(k/2) at k = 6"),
    (["--max-memory", "0"], "--max-memory must be a positive number"),
    (["--max-memory", "0.001"], "this grid would need about"),
    (["--widths", "4096", "--n-head", "4"], "this grid would need about"),
])
def test_flags_are_checked_at_the_door_by_the_settings_rules(capsys, tmp_path, args, message):
    code, err = in_process(capsys, "--quick", "--out", str(tmp_path / "o"), *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_the_memory_estimate_counts_the_longest_document_not_block_size():
    """Names under a block_size of 4096: a step computes only a name's positions (the run peaks at
    about 60 MB); the estimate is not the 141 GB of 4096 positions."""
    import common
    opts = common.parse(scaling.parser(), ["--quick", "--block-size", "4096"], scaling.QUICK)
    scaling.check_memory(opts, scaling.load_data(opts))  # no InputError
    opts.max_memory = 0.01
    with pytest.raises(common.InputError, match="this grid would need about"):
        scaling.check_memory(opts, scaling.load_data(opts))


def test_a_fifo_as_corpus_is_refused_not_waited_on(capsys, tmp_path):
    os.mkfifo(tmp_path / "fifo")
    code, err = in_process(capsys, "--quick", "--corpus", str(tmp_path / "fifo"), "--out", str(tmp_path / "o"))
    assert code == 2 and "is a FIFO, not a regular file" in err


@pytest.mark.slow
def test_a_grid_whose_runs_all_diverge_says_so_in_one_line(tmp_path):
    r = run("--quick", "--lr0", "1e300", "--base-sweep", "0", "--max-extend", "0", "--out", str(tmp_path))
    assert r.returncode == 1 and "Traceback" not in r.stderr and "Warning" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("scaling.py: error: every run of rmsnorm (steps=10 L=1 E=16) "
                                                        "at its chosen lr diverged")
    assert "diverged" in r.stderr and json.loads((tmp_path / "results.json").read_text())["complete"] is False


def test_from_json_on_an_interrupted_study_is_one_line(capsys, tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"complete": False, "options": {}, "runs": [{}]}))
    code, err = in_process(capsys, "--from-json", str(tmp_path / "results.json"))
    assert code == 2 and "is the record of an interrupted grid (1 runs saved)" in err


def mutations(raw):
    """results.json changed as a careless edit or a crafted file would change it."""
    run0 = raw["runs"][0]
    yield "not an object", [1, 2]
    yield "no runs", {k: v for k, v in raw.items() if k != "runs"}
    yield "runs a dict", dict(raw, runs={})
    yield "a run a string", dict(raw, runs=["x"] + raw["runs"][1:])
    yield "options a list", dict(raw, options=[])
    yield "no options key", dict(raw, options={k: v for k, v in raw["options"].items() if k != "lengths"})
    yield "lengths a string", dict(raw, options=dict(raw["options"], lengths="10,20"))
    yield "seeds 0", dict(raw, options=dict(raw["options"], seeds=0))
    yield "a run without final_val", dict(raw, runs=[{k: v for k, v in run0.items() if k != "final_val"}]
                                          + raw["runs"][1:])
    yield "a model unknown", dict(raw, runs=[dict(run0, model="gpt5")] + raw["runs"][1:])
    yield "a curve of strings", dict(raw, runs=[dict(run0, val_curve=[["a", "b"]])] + raw["runs"][1:])
    yield "a loss of NaN", dict(raw, runs=[dict(run0, final_val=float("nan"))] + raw["runs"][1:])
    yield "half the runs", dict(raw, runs=raw["runs"][: len(raw["runs"]) // 2])
    yield "no info", {k: v for k, v in raw.items() if k != "info"}
    yield "baselines gone", {k: v for k, v in raw.items() if k != "baselines"}
    yield "vocab a number", dict(raw, vocab=3)
    yield "nested too deep", dict(raw, info=json.loads("[" * 100 + "]" * 100))


@pytest.mark.slow
def test_a_crafted_results_json_is_refused_in_one_line_or_read(quick_runs, tmp_path, capsys):
    _, out = quick_runs[2]
    raw = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for i, (name, bad) in enumerate(mutations(raw)):
        path = tmp_path / f"m{i}" / "results.json"
        path.parent.mkdir()
        path.write_text(json.dumps(bad))
        code, err = in_process(capsys, "--from-json", str(path), "--out", str(tmp_path / f"r{i}"))
        assert code in (0, 2), name
        assert code == 0 or len(err.strip().splitlines()) == 1 and "error" in err, (name, err)


@pytest.mark.slow
def test_the_report_names_no_path_outside_the_repository(quick_runs):
    r, out = quick_runs[2]
    md = (out / "results.md").read_text(encoding="utf-8")
    assert str(out) not in md and os.path.dirname(CORPUS) not in md and "../" not in md and "`names.txt`" in md
    assert scaling.DEFAULT_CORPUS == "names"
