"""experiments/grid.py, the study runner: a grid too large is refused before anything is allocated,
a results.json that cannot be true is refused in one line (on --from-json and on a resume) before
anything is rewritten, and a grid --deadline kept from running is not recorded as complete; what
--deadline leaves unrun is counted, never taken for diverged."""
import json
import os
import platform
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "experiments", "results", "repeat", "results.json")
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import common  # noqa: E402
import grid  # noqa: E402
import repeat as rp  # noqa: E402


def one_line(capsys, main, *args):
    code = main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip()


@pytest.mark.parametrize(("args", "message"), [
    (["--seeds", "100000000"], "this grid plans about 800,000,"),
    (["--sweep", "100000"], "this grid plans about 1,600,0"),
    (["--n-lin", "100000"], "--n-lin 100000 needs at most as many eval points"),
    (["--lr0", "5e-324", "--sweep", "1"], "the lr lr0*10^(k/2) at k = -1"),
])
def test_a_grid_too_large_or_out_of_reach_is_refused_before_anything_runs(capsys, tmp_path, args,
                                                                           message):
    code, err = one_line(capsys, rp.main, "--quick", "--out", str(tmp_path / "o"), *args)
    assert code == 2 and message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def impossible(raw, part):
    """A finished study's results.json, changed into what no run could have written (`part`: a
    part of the file the study reads besides the runs)."""
    run0, rest = raw["runs"][0], raw["runs"][1:]
    curves = dict(run0["curves"], copy2=[-1.0] * len(run0["curves"]["step"]))
    yield "a NaN loss", dict(raw, runs=[dict(run0, copy2=float("nan"))] + rest)
    yield "a negative loss", dict(raw, runs=[dict(run0, copy2=-0.5)] + rest)
    yield "a string loss", dict(raw, runs=[dict(run0, copy2="1.2")] + rest)
    yield "a key no run has", dict(raw, runs=[dict(run0, colour="red")] + rest)
    yield "a key missing", dict(raw, runs=[{k: v for k, v in run0.items() if k != "n_head"}] + rest)
    yield "a negative loss in a curve", dict(raw, runs=[dict(run0, curves=curves)] + rest)
    yield "no runs", dict(raw, runs=[], complete=True)  # a grid that ran nothing, "complete"
    yield "complete a string", dict(raw, complete="yes")
    yield "seeds a float", dict(raw, options=dict(raw["options"], seeds=1e9))
    yield "seeds huge", dict(raw, options=dict(raw["options"], seeds=10**9))
    yield "seeds 0", dict(raw, options=dict(raw["options"], seeds=0))
    yield "an unknown option", dict(raw, options=dict(raw["options"], colour="red"))
    yield f"no {part}", {k: v for k, v in raw.items() if k != part}


@pytest.mark.slow
def test_from_json_refuses_impossible_numbers_in_one_line(capsys, tmp_path):
    with open(RESULTS, encoding="utf-8") as f:
        raw = dict(json.load(f), complete=True)
    for i, (name, bad) in enumerate(impossible(raw, "info")):
        path = tmp_path / f"m{i}" / "results.json"
        path.parent.mkdir()
        path.write_text(json.dumps(bad))
        before = path.read_bytes()
        code, err = one_line(capsys, rp.main, "--from-json", str(path))
        assert code == 2 and len(err.splitlines()) == 1 and "results.json" in err, (name, err)
        assert sorted(os.listdir(path.parent)) == ["results.json"] and path.read_bytes() == before


@pytest.mark.slow
def test_a_damaged_results_json_is_refused_before_a_resume_rewrites_it(capsys, tmp_path):
    with open(RESULTS, encoding="utf-8") as f:
        raw = json.load(f)
    for i, (name, bad) in enumerate(impossible(raw, "info")):
        out = tmp_path / f"m{i}"
        out.mkdir()
        (out / "results.json").write_text(json.dumps(bad))
        before = (out / "results.json").read_bytes()
        code, err = one_line(capsys, rp.main, "--quick", "--out", str(out))
        assert code == 2 and len(err.splitlines()) == 1 and "cannot continue" in err, (name, err)
        assert "made with other" not in err, (name, err)  # refused for what it holds
        assert (out / "results.json").read_bytes() == before


@pytest.mark.slow
def test_a_deadline_already_past_leaves_a_grid_that_is_not_complete(capsys, tmp_path):
    """No run starts; the report is written, and results.json says the grid is not finished (the
    same command continues it); --from-json writes its report again, as partial."""
    past = time.strftime("%H:%M", time.gmtime(time.time() - 3600))
    code, err = one_line(capsys, rp.main, "--quick", "--out", str(tmp_path), "--deadline", past)
    raw = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert code == 0 and raw["runs"] == [] and raw["complete"] is False, err
    code = rp.main(["--from-json", str(tmp_path / "results.json")])
    out = capsys.readouterr().out
    assert code == 0 and "**Partial results.**" in out and "0 runs trained" in out


WORKER_STARTS_SLOWLY = """import os, sys, time
sys.path.insert(0, os.environ["EXPERIMENTS"])
if __name__ == "__mp_main__":
    time.sleep(3)  # a worker's start, made slow: a signal now finds it halfway
import common

if __name__ == "__main__":
    try:
        with common.pool(None, 2) as executor:
            executor.submit(int)
            executor.submit(int)
            print("started", flush=True)
            time.sleep(30)
    except KeyboardInterrupt:
        sys.exit(130)
"""


@pytest.mark.slow
def test_ctrl_c_while_the_workers_start_reaches_only_the_parent(tmp_path):
    """A terminal's Ctrl-C goes to the whole process group. Workers start with SIGINT
    blocked, so one halfway through its imports prints no traceback; the parent ends them
    (three tries: without the block, a try prints a worker's traceback about 5 times in 6)."""
    import signal
    import subprocess
    script = tmp_path / "slow_workers.py"
    script.write_text(WORKER_STARTS_SLOWLY, encoding="utf-8")
    for _ in range(3):
        p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True,
                             env={**os.environ, "EXPERIMENTS": os.path.join(ROOT, "experiments")})
        assert p.stdout.readline().strip() == "started"
        time.sleep(1)
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 130 and "Traceback" not in err, err


def test_seeds_a_deadline_left_unrun_are_not_taken_for_diverged_runs():
    runner = grid.Grid({}, None, {})
    runner.units = {"a": SimpleNamespace(seeds={1: SimpleNamespace(final_val=0.5), 2: None}),
                  "b": SimpleNamespace(seeds={1: None, 2: None})}
    runner.check_diverged()  # no error: unit a has a finite run, unit b has none yet
    runner.units["c"] = SimpleNamespace(seeds={1: SimpleNamespace(final_val=None), 2: None},
                                      key=("sphere", 64))
    with pytest.raises(common.Diverged):
        runner.check_diverged()


def test_runs_a_deadline_keeps_from_starting_are_counted():
    """They make the invocation 'stopped by --deadline', not finished; a run in results.json still starts."""
    job = lambda seed: SimpleNamespace(norm="sphere", variant="default", T=64, steps=10,  # noqa: E731
                                       lr_k=0, seed=seed)
    runner = grid.Grid({}, SimpleNamespace(deadline=time.time() - 1), {grid.run_key(job(1)): {}})
    runner.ready[:] = [job(1), job(2), job(3)]
    runner.past_deadline()
    assert runner.ready == [job(1)] and runner.left_unrun == 2
    runner.opts.deadline = None
    runner.ready.append(job(4))
    runner.past_deadline()
    assert len(runner.ready) == 2 and runner.left_unrun == 2


@pytest.mark.parametrize("now", ["00:25", "12:00", "23:40"])
def test_a_deadline_a_few_hours_past_has_passed_and_one_ahead_has_not(now, monkeypatch):
    hh, mm = map(int, now.split(":"))
    t = 1796515200 + hh * 3600 + mm * 60  # a day's midnight (UTC), then `now`
    monkeypatch.setattr(time, "time", lambda: t)
    hhmm = lambda dt: time.strftime("%H:%M", time.gmtime(t + dt))  # noqa: E731
    assert grid.deadline(hhmm(-2 * 3600)) < t < grid.deadline(hhmm(2 * 3600))
    assert grid.deadline(hhmm(2 * 3600)) - t < 3 * 3600 and t - grid.deadline(hhmm(-2 * 3600)) < 3 * 3600


X86_64_LINUX = sys.platform == "linux" and platform.machine() == "x86_64"


@pytest.mark.skipif(not X86_64_LINUX, reason="the flush is set on x86-64 Linux only")
def test_a_worker_flushes_subnormals_to_zero_and_its_runs_record_it(monkeypatch):
    """A collapsed attention's subnormal weights make some CPUs several times slower: the
    pool's workers flush them to zero, and each run's machine record says so."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, "1")  # (the pool sets them for its workers: restored after)
    quarter_of_tiny = lambda: np.float32(np.finfo(np.float32).tiny) / np.float32(4)  # noqa: E731
    assert quarter_of_tiny() > 0 and common.machine_info()["subnormals"] == "kept"
    try:
        common.flush_subnormals()
        assert quarter_of_tiny() == 0 and common.machine_info()["subnormals"] == "flushed to zero"
    finally:
        common.flush_subnormals(False)
    assert quarter_of_tiny() > 0 and common.machine_info()["subnormals"] == "kept"
    with common.pool(None, 1) as executor:
        assert executor.submit(common.machine_info).result()["subnormals"] == "flushed to zero"
