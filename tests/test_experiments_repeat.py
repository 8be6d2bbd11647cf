"""experiments/repeat.py: the censored ratio, the gate and the verdict; the runs' machines in the
report; its --quick mode; and every number of the report recomputed from results.json."""
import json
import math
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "experiments", "repeat.py")
RESULTS = os.path.join(ROOT, "experiments", "results", "repeat", "results.json")
README = os.path.join(ROOT, "experiments", "README.md")
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import common  # noqa: E402
import repeat as rp  # noqa: E402
from cli_helpers import alive, children  # noqa: E402

# ----------------------------------------------------------------------------- the measurements

def _rec(**steps_to):
    return SimpleNamespace(steps_to={"3.0": None, "2.0": steps_to.get("two"), "1.0": steps_to.get("one")})


def test_each_run_records_its_machine_and_the_report_names_mixed_units():
    runs = [SimpleNamespace(T=64, norm="sphere", variant="default", machine={"cpu": cpu})
            for cpu in ("AMD EPYC", "Intel Xeon")] + [SimpleNamespace(T=64, norm="rmsnorm", variant="default",
                                                                      machine=None)]
    note = rp._machines(runs)[0]
    assert "AMD EPYC 1, Intel Xeon 1, not recorded 1 (not recorded: runs from before" in note
    assert "more than one recorded CPU: T = 64, sphere/default (AMD EPYC, Intel Xeon)." in note
    assert "recorded CPU: none." in rp._machines(runs[:1] + runs[2:])[0]
    assert {"cpu", "numpy", "blas"} <= set(common.machine_info())


def test_the_ratio_is_censored_never_imputed():
    assert rp.paired_ratio(_rec(one=1000), _rec(one=500), 1.0, 10000) == ["=", 2.0]
    assert rp.paired_ratio(_rec(one=1000), _rec(), 1.0, 10000) == ["<", 0.1]
    assert rp.paired_ratio(_rec(), _rec(one=5000), 1.0, 10000) == [">", 2.0]
    assert rp.paired_ratio(_rec(), _rec(), 1.0, 10000) is None
    assert rp.paired_ratio(None, _rec(one=5), 1.0, 10000) is None


def test_the_reading_and_the_verdict():
    assert rp.verdict_at([["=", 2.0], [">", 1.5]]) == "sphere faster"
    assert rp.verdict_at([["<", 0.1], ["=", 0.5]]) == "sphere slower"
    assert rp.verdict_at([["<", 1.5], ["=", 0.5]]) == "mixed"  # "< 1.5" does not say r < 1
    assert rp.verdict_at([["=", 2.0], None]) == "undecided"
    row = lambda T, passed, call, median: SimpleNamespace(  # noqa: E731
        T=T, gate={"passed": passed}, verdict_at=call, r_median=median)
    assert rp.verdict([row(64, False, "sphere faster", 2)]).startswith("no verdict")
    assert rp.verdict([row(64, True, "sphere slower", 0.1), row(128, True, "sphere slower", 0.2)]
                      ).startswith("contradicts")
    assert rp.verdict([row(64, True, "sphere faster", 1.5), row(128, True, "sphere faster", 2)]
                      ).startswith("supports")
    assert rp.verdict([row(64, True, "sphere faster", 2), row(128, True, "sphere faster", 1.5)]
                      ).startswith("neither")


# ----------------------------------------------------------------------------- the script

def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_quick_writes_results_continues_and_rerenders(tmp_path):
    out = tmp_path / "q"
    r = run("--quick", "--out", str(out))
    assert r.returncode == 0, r.stderr
    raw = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert raw["complete"] and len(raw["runs"]) == 2 * 4 * 3  # 2 T x 4 units x (1 lr + 2 seeds)
    for rec in raw["runs"]:
        assert {"norm", "T", "seed", "lr", "steps", "variant", "copy1", "copy2", "copy2_ablated",
                "curves", "steps_to"} <= set(rec) and set(rec["steps_to"]) == {"3.0", "2.0", "1.0"}
        assert rec["curves"]["step"][0] == 0 and rec["curves"]["step"][-1] == rec["steps"]
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = run("--quick", "--out", str(out))
    assert again.returncode == 0 and "0 runs trained now" in again.stderr, again.stderr
    bad = run("--quick", "--out", str(out), "--n-embd", "16")
    assert bad.returncode == 2 and "n_embd" in bad.stderr and "Traceback" not in bad.stderr
    rerendered = run("--from-json", str(out / "results.json"), "--out", str(tmp_path / "r"))
    assert rerendered.returncode == 0, rerendered.stderr
    assert (tmp_path / "r" / "results.md").read_text("utf-8") == (out / "results.md").read_text("utf-8")


@pytest.mark.slow
def test_a_stopped_grid_says_what_it_kept_and_leaves_no_worker(tmp_path):
    """SIGTERM after two runs: one line naming the runs saved, exit 130, no worker left."""
    out = tmp_path / "q"
    proc = subprocess.Popen([sys.executable, SCRIPT, "--quick", "--workers", "2", "--out", str(out)],
                            stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=ROOT)
    for line in proc.stderr:
        if line.startswith("[2]"):
            break
    workers = children(proc.pid)
    proc.terminate()
    rest, code = proc.stderr.read(), proc.wait(timeout=60)
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert code == 130 and not saved["complete"] and len(saved["runs"]) >= 2
    assert rest.strip().splitlines()[-1] == (
        f"repeat.py: interrupted; the {len(saved['runs'])} finished runs are saved in "
        f"{out / 'results.json'}: the same command continues the grid"), rest
    assert "Traceback" not in rest and "leaked" not in rest
    deadline = time.time() + 10
    while [pid for pid in workers if alive(pid)] and time.time() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in workers if alive(pid)], "a worker outlived the grid"



@pytest.mark.slow
def test_a_narrower_invocation_keeps_the_runs_it_does_not_plan(tmp_path):
    """--contexts 16 then --contexts 32 into one --out: results.json and the report hold both."""
    out = tmp_path / "q"
    for T in ("16", "32"):
        r = run("--quick", "--contexts", T, "--variants", "qknorm", "--out", str(out))
        assert r.returncode == 0, r.stderr
    raw = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert sorted({rec["T"] for rec in raw["runs"]}) == [16, 32] and len(raw["runs"]) == 2 * 3 * 3
    assert [row["T"] for row in raw["summary"]["rows"]] == [16, 32]
    assert "**Partial results.**" in (out / "results.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_grid_whose_runs_all_diverge_names_the_unit_in_one_line(tmp_path):
    r = run("--quick", "--contexts", "16", "--variants", "", "--lr0", "1e300", "--out", str(tmp_path))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith(
        "repeat.py: error: every run of rmsnorm/default at T=16 at its chosen lr diverged"), r.stderr


@pytest.mark.slow
def test_bad_options_are_one_line():
    for args, message in ((["--variants", "nope"], "unknown variant"), (["--deadline", "25:00"], "HH:MM"),
                          (["--contexts", "4,64"], "at least 8"), (["--n-embd", "30"], "divisible")):
        r = run(*args, "--out", os.devnull)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


# ----------------------------------------------------------------------------- the report, recomputed

@pytest.fixture(scope="module")
def grid():
    with open(RESULTS, encoding="utf-8") as f:
        return json.load(f)


def _first_at_or_below(steps, losses, target):
    """An independent steps-to-target: the first eval point at or below it, linear from the one before."""
    for i, loss in enumerate(losses):
        if loss <= target:
            return float(steps[0]) if i == 0 else float(np.interp(target, [loss, losses[i - 1]],
                                                                  [steps[i], steps[i - 1]]))
    return None


def test_every_run_record_is_what_its_curves_say(grid):
    for rec in grid["runs"]:
        c = rec["curves"]
        assert rec["error"] == "" and c["step"][-1] == rec["steps"]
        for key in ("copy1", "copy2", "copy2_ablated"):
            assert rec[key] == c[key][-1]
        for t in rp.TARGETS:
            expected = _first_at_or_below(c["step"], c["copy2"], t)
            assert rec["steps_to"][str(t)] == (None if expected is None else pytest.approx(expected))
        assert rec["lr"] == pytest.approx(grid["options"]["lr0"] * 10 ** (rec["lr_k"] / 2))


def test_the_gate_the_ratios_and_the_verdict_recomputed(grid):
    o, S = grid["options"], grid["summary"]
    seeds = list(range(o["seed"] + 1, o["seed"] + o["seeds"] + 1))
    for row in S["rows"]:
        T = row["T"]
        seed_runs = {(r["norm"], r["variant"], r["seed"]): r for r in grid["runs"]
                     if r["T"] == T and r["phase"] == "seeds"}
        rms = [seed_runs[("rmsnorm", "default", s)] for s in seeds if ("rmsnorm", "default", s) in seed_runs]
        g = row["gate"]
        assert g["seeds_run"] == len(rms)
        assert g["G1"] == (bool(rms) and all(r["steps_to"]["1.0"] is not None for r in rms))
        assert g["G2"] == (bool(rms) and all(r["copy2_ablated"] >= math.log(26) for r in rms))
        assert g["G3"] == (bool(rms) and all(r["copy1"] >= math.log(26) - 0.02 for r in rms))
        assert g["passed"] == (len(rms) == len(seeds) and g["G1"] and g["G2"] and g["G3"] and g["G4"])
        for target in ("2.0", "1.0"):
            for s, r in zip(seeds, row["r"][target]):
                a, b = seed_runs.get(("rmsnorm", "default", s)), seed_runs.get(("sphere", "default", s))
                if a is None or b is None or (a["steps_to"][target] is None and b["steps_to"][target] is None):
                    assert r is None
                elif b["steps_to"][target] is None:
                    assert r == ["<", pytest.approx(a["steps_to"][target] / o["steps"])]
                elif a["steps_to"][target] is None:
                    assert r == [">", pytest.approx(o["steps"] / b["steps_to"][target])]
                else:
                    assert r == ["=", pytest.approx(a["steps_to"][target] / b["steps_to"][target])]
        sweeps = {}  # seed 0: each unit's chosen run against rmsnorm/default's
        for r in grid["runs"]:
            if r["T"] == T and r["phase"] == "sweep":
                sweeps.setdefault(f"{r['norm']}/{r['variant']}", []).append(r)
        best = {name: min(runs, key=lambda r: (r["steps_to"]["1.0"] or math.inf, r["copy2"]))
                for name, runs in sweeps.items()}
        for name, ratios in row["tuning"].items():
            a, b = best["rmsnorm/default"]["steps_to"], best[name]["steps_to"]
            for t in ("2.0", "1.0"):
                if a[t] is not None and b[t] is not None:
                    assert ratios[t] == ["=", pytest.approx(a[t] / b[t])]
                elif a[t] is not None:
                    assert ratios[t] == ["<", pytest.approx(a[t] / o["steps"])]
    if not any(row["gate"]["passed"] for row in S["rows"]):
        assert S["verdict"].startswith("no verdict")


def test_the_report_says_what_is_stored(grid):
    with open(os.path.join(os.path.dirname(RESULTS), "results.md"), encoding="utf-8") as f:
        md = f.read()
    assert f"**{grid['summary']['verdict']}**" in md
    start = md.index("| T | unit | phase |")
    table = [line for line in md[start:].split("\n")[2:] if line.startswith("|")]
    assert len(table) == len(grid["runs"])  # one row per run, none left out
    for rec in grid["runs"]:
        to = " / ".join("—" if rec["steps_to"][str(t)] is None else f"{rec['steps_to'][str(t)]:.0f}"
                        for t in rp.TARGETS)
        assert f"| {rec['lr']:.3g} | {rec['seed']} | {to} | {rec['copy2']:.3f} | " in md
    with open(README, encoding="utf-8") as f:
        readme = f.read()
    assert "experiments/repeat.py" in readme and grid["summary"]["verdict"] in readme.replace("\n", " ")
    for name, value in (("GATE_COPY2", rp.GATE_COPY2), ("GATE_LEAK", rp.GATE_LEAK)):
        assert f"{value}" in readme, name  # the pre-registration in the README is the code's


def readme_table(header):
    """The rows of the README's table that starts with `header`, as lists of stripped cells."""
    with open(README, encoding="utf-8") as f:
        md = f.read()
    lines = md[md.index(header):].split("\n")[2:]
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in lines[:next(i for i, line in enumerate(lines) if not line.startswith("|"))]]


def test_the_readme_table_is_the_stored_tuning_runs(grid):
    """Each unit at its chosen lr, seed 0, at every T: the README's row is the stored run's."""
    table = readme_table("| T | unit | lr | steps to copy-2")
    rows = {row["T"]: row for row in grid["summary"]["rows"]}
    assert len(table) == sum(u["lr"] is not None for row in rows.values() for u in row["units"].values())
    for cells in table:
        row = rows[int(cells[0])]
        name, u = cells[1], row["units"][cells[1]]
        rec = next(r for r in grid["runs"] if f"{r['norm']}/{r['variant']}" == name
                   and r["phase"] == "sweep" and r["lr"] == u["lr"] and r["T"] == row["T"])
        to = " / ".join("—" if rec["steps_to"][t] is None else f"{rec['steps_to'][t]:,.0f}"
                        for t in ("3.0", "2.0", "1.0"))
        mass = max(rec["diag"]["copy_mass"][-1][-1])
        sqk, alpha = rec["diag"]["s_qk"][-1], (rec["diag"].get("alpha") or [None])[-1]
        assert cells[2:10] == [f"{rec['lr']:.3g}", to, f"{rec['copy2']:.3f}", f"{rec['copy2_ablated']:.3f}",
                               f"{rec['copy1']:.3f}", f"{mass:.2f}",
                               "—" if not sqk else f"{np.mean([m for m, _ in sqk]):.2f}",
                               "—" if not alpha else " / ".join(f"{a:.3f}" for a in np.mean(alpha, axis=0))]
        ratios = row["tuning"].get(name)
        cell = lambda r: r and (f"{r[1]:.2f}" if r[0] == "=" else f"{r[0]} {r[1]:.2f}")  # noqa: E731
        assert cells[10] == ("1 (the reference)" if ratios is None
                             else f"{cell(ratios['2.0'])} / {cell(ratios['1.0'])}")


def test_the_readme_seed_table_is_the_stored_seed_runs(grid):
    table = readme_table("| T | unit | seed 1 |")
    by = {(r["T"], f"{r['norm']}/{r['variant']}", r["seed"]): r for r in grid["runs"] if r["phase"] == "seeds"}
    assert len(table) == len({key[:2] for key in by})
    for cells in table:
        for seed, cell in enumerate(cells[2:], start=1):
            r = by.get((int(cells[0]), cells[1], seed))
            t = r and r["steps_to"]["1.0"]
            assert cell == ("pending" if r is None else f"{r['copy2']:.2f}"
                            + (f" ({t:,.0f})" if t is not None else " (—)"))
    with open(README, encoding="utf-8") as f:
        assert grid["summary"]["verdict"] in f.read().replace("\n", " ")


@pytest.mark.parametrize(("args", "message"), [
    (["--seed", "-1"], "--seed must be a non-negative integer"),
    (["--split-seed", "-1"], "--split-seed must be a non-negative integer"),
    (["--max-memory", "-1"], "--max-memory must be a positive number"),
    (["--n-embd", "65536"], "this grid would need about"),
    (["--out", ""], "--out"),
])
def test_flags_are_refused_at_the_door_in_one_line_before_any_run(tmp_path, args, message):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "repeat.py"), "--quick",
                           "--out", str(tmp_path / "o"), *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_a_second_invocation_on_the_same_out_is_refused(tmp_path):
    from harness.run_files import RunLock
    with RunLock(str(tmp_path)) as lock:
        lock.claim()
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "repeat.py"),
                               "--quick", "--out", str(tmp_path)], capture_output=True, text=True,
                              timeout=120)
    assert proc.returncode == 2 and f"pid {os.getpid()}" in proc.stderr, proc.stderr
    assert not (tmp_path / "results.json").exists()
