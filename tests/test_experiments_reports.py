"""experiments/README.md and the studies' results.md: the numbers they state, recomputed
from the committed results.json with json and NumPy alone (no study script is imported:
the records outlive the scripts that made them)."""
import functools
import json
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "experiments", "results")
T95_DF2 = 4.303  # t_0.975 with 2 degrees of freedom: 3 seeds


def text(*parts):
    """A file's text, each run of whitespace as one space (the docs wrap their lines)."""
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return " ".join(f.read().split())


@functools.cache  # (read once: the tests only read them)
def records(study):
    with open(os.path.join(RESULTS, study, "results.json"), encoding="utf-8") as f:
        return json.load(f)["runs"]


README = text("experiments", "README.md")


# ================================================================ the string written twice

def repeat_runs(T, unit, phase="seeds"):
    """{seed: run} of one unit ('norm/variant') at T."""
    return {r["seed"]: r for r in records("repeat") if r["T"] == T and r["phase"] == phase
            and f"{r['norm']}/{r['variant']}" == unit}


def ratios_at_1(T, unit):
    """Per seed: (r, censored) against rmsnorm/default at the same seed, r = rmsnorm
    steps / the unit's steps to copy-2 <= 1.0; where the unit never got there, the bound
    rmsnorm steps / S."""
    ref, arm = repeat_runs(T, "rmsnorm/default"), repeat_runs(T, unit)
    out = []
    for seed in sorted(arm):
        rms, steps = ref[seed]["steps_to"]["1.0"], arm[seed]["steps_to"]["1.0"]
        out.append((rms / steps, False) if steps is not None else (rms / arm[seed]["steps"], True))
    return out


def median_bounds(pairs):
    """The median's (lower, upper) bound: a censored r lies between 0 and its bound."""
    lows = sorted(0.0 if censored else r for r, censored in pairs)
    highs = sorted(r for r, _ in pairs)
    return lows[len(lows) // 2], highs[len(highs) // 2]


def test_the_repeat_grid_is_reported_as_partial_with_the_arms_at_t64_only():
    ran = {(r["T"], r["variant"]) for r in records("repeat")}
    assert {T for T, v in ran if v in ("sqk64", "qknorm")} == {64}
    assert {T for T, v in ran if v in ("default", "alpha25")} == {64, 128, 256}
    md = text("experiments", "results", "repeat", "results.md")
    assert "**Partial results.**" in md
    assert ("Units never run: T = 128: rmsnorm/qknorm, sphere/alpha-start, sphere/alpha-step, "
            "sphere/sqk64; T = 256: rmsnorm/qknorm, sphere/sqk64.") in md
    repeat_section = README.split("## Where context")[1]
    assert "The grid is partial" in repeat_section and "complete" not in repeat_section
    assert "`sqk64` and `qknorm` ran at T = 64 only" in README


@pytest.mark.parametrize("study", ["repeat", "alpha", "alpha_c64"])
def test_the_runs_counted_against_the_plan_include_the_extended_sweeps(study):
    """results.md's "T: n of about m runs": m is the plan (units x (the lattice's lrs x
    tuning seeds + seeds)) plus each unit's sweep runs beyond its lattice, so a finished T
    never reads as more runs than planned."""
    with open(os.path.join(RESULTS, study, "results.json"), encoding="utf-8") as f:
        options = json.load(f)["options"]
    runs = [r for r in records(study) if r["phase"] in ("sweep", "seeds")]
    units = {(r["norm"], r["variant"]) for r in runs}
    lattice = (2 * options["sweep"] + 1) * options["tune_seeds"]  # a sweep before extending
    md = text("experiments", "results", study, "results.md")
    for T in sorted({r["T"] for r in runs}):
        sweeps = [sum(r["T"] == T and r["phase"] == "sweep" and (r["norm"], r["variant"]) == u
                      for r in runs) for u in units]
        extended = sum(max(0, n - lattice) for n in sweeps)
        planned = len(units) * (lattice + options["seeds"]) + extended
        done = sum(r["T"] == T for r in runs)
        assert f"T = {T}: {done} of about {planned} runs" in md


def test_the_spheres_slowdown_bounds_per_context():
    """At least 1 / (the largest r or bound over the seeds) times slower, per T."""
    factor = {T: 1 / max(r for r, _ in ratios_at_1(T, "sphere/default"))
              for T in (64, 128, 256)}
    low = min(factor[64], factor[128])
    assert f"{low:.1f}" == "5.2" and f"{factor[256]:.1f}" == "2.7"
    assert (f"at least {low:.1f} times *slower* where context provably matters at T = 64 and 128, "
            f"and at least {factor[256]:.1f} times at T = 256") in README
    seed, run = max(repeat_runs(256, "rmsnorm/default").items(),
                    key=lambda kv: kv[1]["steps_to"]["1.0"])
    assert f"seed {seed}: rmsnorm needs {round(run['steps_to']['1.0']):,} of the" in README


def test_qk_norm_over_the_seeds():
    pairs = ratios_at_1(64, "rmsnorm/qknorm")
    reached = [r for r, censored in pairs if not censored]
    low, high = median_bounds(pairs)
    assert len(reached) == 3 and low == high
    assert ("reaches 1 nat in three (r " + ", ".join(f"{r:.2f}" for r in reached)
            + " against rmsnorm) and fails to copy in two: its median r is "
            + f"{low:.2f}") in README
    sphere_high = median_bounds(ratios_at_1(64, "sphere/default"))[1]
    assert sphere_high < 0.13 and "against the sphere's below 0.13" in README
    assert f"about {1 / low:.1f} times slower and unreliable" in README
    assert "Mostly not the sphere's attention" not in README


def test_the_spheres_lr_at_t256_was_a_tie_and_its_seeds_never_tried_the_others():
    sweep = [r for r in records("repeat") if r["T"] == 256 and r["phase"] == "sweep"
             and (r["norm"], r["variant"]) == ("sphere", "default")]
    assert all(r["steps_to"]["1.0"] is None for r in sweep)
    finals = sorted(r["copy2"] for r in sweep)
    chosen = min(sweep, key=lambda r: r["copy2"])["lr"]
    spread = f"{finals[-1] - finals[0]:.4f}"
    assert f"{chosen:.3g}" == "0.0316" and spread == "0.0002" and len(finals) == 4
    assert {r["lr"] for r in repeat_runs(256, "sphere/default").values()} == {chosen}
    others = {r["lr"] for r in records("repeat") if r["T"] == 256 and r["phase"] == "seeds"
              and f"{r['norm']}/{r['variant']}" in ("rmsnorm/default", "sphere/alpha25")}
    assert {f"{lr:.3g}" for lr in others} == {"0.00316"}
    assert (f"the four failed runs' final copy-2 losses lie within {spread} nats. Seeds 1–5 "
            "ran at 0.0316 only: none was tried at 0.00316") in README
    assert "the sphere's 0.0316 at T = 256 is a tie among four failed runs" in README
    md = text("experiments", "results", "repeat", "results.md")
    assert ("chose 0.0316, 0.0001 nats ahead of the next lr (a tie: its 4 finals lie "
            f"within {spread} nats)") in md


# ================================================================ the context length

def gap_and_interval(study, T):
    """Sphere - rmsnorm final val loss per seed pair: (mean, 95% t-interval)."""
    final = {(r["norm"], r["seed"]): r["final_val"] for r in records(study)
             if r["T"] == T and r["phase"] == "seeds"}
    gaps = np.array([final[("sphere", s)] - final[("rmsnorm", s)]
                     for s in sorted({s for _, s in final})])
    assert len(gaps) == 3
    half = T95_DF2 * gaps.std(ddof=1) / np.sqrt(len(gaps))
    return gaps.mean(), (gaps.mean() - half, gaps.mean() + half)


def test_the_tokens_per_step_control_explains_about_half_with_its_interval():
    at64, _ = gap_and_interval("context_length", 64)
    at512, _ = gap_and_interval("context_length", 512)
    control, (low, high) = gap_and_interval("context_length_batch64", 64)
    share = [(at64 - g) / (at64 - at512) for g in (control, high, low)]
    point, least, most = (f"{100 * x:.0f}%" for x in share)
    assert (point, least, most) == ("54%", "21%", "87%")
    assert (f"{point} of the way to T = 512's −{abs(at512):.3f} (a point estimate: over the "
            f"control's own 95% interval of the gap, −{abs(low):.3f} to +{high:.3f}, the share "
            f"runs from {least} to {most})") in README
    assert f"explain about half of the trend ({least[:-1]}–{most})" in README
    assert "at least half" not in README


# ================================================================ scaling

def test_the_scaling_tables_plus_minus_is_the_population_std():
    cells = {}
    for r in records("scaling"):
        if r["phase"] == "seeds":
            cells.setdefault((r["model"], r["steps"], r["n_layer"], r["n_embd"]), []).append(
                r["final_val"])
    md = text("experiments", "results", "scaling", "results.md")
    shown = {key: f"{np.mean(v):.3f} ± {np.std(v, ddof=0):.3f}" for key, v in cells.items()}
    assert all(s in md for s in shown.values()), shown
    sample = {f"{np.mean(v):.3f} ± {np.std(v, ddof=1):.3f}" for v in cells.values()}
    assert sample - set(shown.values())  # somewhere the two stds print differently
    assert "± is the population standard deviation over seeds (ddof 0, not the sample std)" in md
    assert "is the population standard deviation over the 3 seeds (ddof 0" in README


# ================================================================ sources

@pytest.mark.parametrize("source", ["Learning Rate Transfer in Normalized Transformers",
                                    "Learning in Compact Spaces with Approximately Normalized",
                                    "openai/parameter-golf, pull request 1108"])
def test_the_newer_sources_are_cited(source):
    assert source in README.split("## Sources")[1]


def test_the_nvidia_readme_is_credited_with_the_papers_figures_only():
    speed_up = README.split("| NVIDIA/ngpt README |")[1].split("|")[1]
    assert speed_up.startswith(" 4× / 10×: the paper's figures") and "20" not in speed_up


@pytest.mark.parametrize("study, row", [
    ("context_length_alpha_base", "| α = 0.05 (nGPT's) | {gap} | {interval} | {lr:.3g} |"),
    ("context_length_alpha", "| α = 1/L = 0.5 | {gap} | {interval} | {lr:.3g} |"),
    ("context_length_alpha_small_val", "gave {gap} {interval}:")])
def test_the_shakespeare_controls_gap_is_what_its_results_give(study, row):
    """The α control on the plays: sphere − rmsnorm final val loss at T = 64 per paired seed,
    its mean and 95% t-interval, as the README states them."""
    runs = {(r["norm"], r["seed"]): r for r in records(study) if r["T"] == 64 and r["phase"] == "seeds"}
    gaps = [runs[("sphere", s)]["final_val"] - runs[("rmsnorm", s)]["final_val"] for s in (1, 2, 3)]
    half = T95_DF2 * np.std(gaps, ddof=1) / np.sqrt(3)
    signed = lambda x: f"{x:+.3f}".replace("-", "−")  # noqa: E731
    stated = row.format(gap=signed(np.mean(gaps)), lr=runs[("sphere", 1)]["lr"],
                        interval=f"[{signed(np.mean(gaps) - half)}, {signed(np.mean(gaps) + half)}]")
    assert stated in README


@pytest.mark.parametrize("T", [64, 256])
def test_the_alpha_split_over_the_seeds(T):
    """Each of α's levers alone, r at 1 nat per seed against rmsnorm (a censored r as its
    bound), as the README lists them."""
    for unit in ("sphere/alpha-start", "sphere/alpha-step"):
        pairs = ratios_at_1(T, unit)
        assert len(pairs) == 5
        assert "r " + ", ".join(f"< {r:.2f}" if censored else f"{r:.2f}" for r, censored in pairs) in README
