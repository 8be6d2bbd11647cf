"""experiments/alpha.py: the pre-registered reading (bootstrap interval, sign test, the
change of ln r over T, the calls and the verdict) on made-up runs, and the README's rules
being the code's."""
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import alpha  # noqa: E402

STEPS = 10000


def run(T, norm, variant, seed, to_one):
    """A paired-seed record that passed the gate's checks, reaching copy-2 1.0 at to_one."""
    return SimpleNamespace(T=T, norm=norm, variant=variant, phase="seeds", seed=seed, lr=0.00316,
                           lr_k=-1, steps=STEPS, copy1=3.3, copy2=0.1, copy2_ablated=6.0,
                           steps_to={"3.0": 1.0, "2.0": 1.0, "1.0": to_one})


def read(records, opts):
    return alpha.reading(opts, alpha.repeat.summarize(records, opts))


def grid(ratio_at):
    """rmsnorm at 1,000 steps; each arm at 1,000 / r with r = ratio_at(arm, T, seed)."""
    opts = SimpleNamespace(seed=0, tune_seeds=2, seeds=10, steps=STEPS, contexts=[64, 256],
                           sweep=1, max_extend=2)
    records = []
    for T in (64, 256):
        for s in alpha.common.paired_seeds(opts):
            records.append(run(T, "rmsnorm", "default", s, 1000.0))
            for arm in alpha.ARMS:
                r = ratio_at(arm, T, s)
                records.append(run(T, "sphere", arm, s, None if r is None else 1000.0 / r))
    return read(records, opts)


def test_the_calls_follow_the_rules():
    result = grid(lambda arm, T, s: (2.0 if T == 64 else 4.0 + 0.1 * s) if arm == "alpha-L"
                  else 0.9 + 0.02 * s)
    a = result["arms"]["alpha-L"]
    assert result["gated"] == [64, 256]
    assert a["T"][64]["call"] == "faster" and a["T"][64]["above"] == 10
    assert a["T"][64]["p"] == pytest.approx(2 / 2 ** 10)
    assert a["trend"]["call"] == "rises" and a["trend"]["low"] > 0
    assert a["verdict"].startswith("closes") and "supports the anchors' direction" in a["verdict"]
    b = result["arms"]["alpha25"]
    assert b["T"][64]["call"] == b["T"][256]["call"] == "as fast"  # 0.94 .. 1.12 holds 1
    assert b["trend"]["call"] == "no trend" and b["trend"]["mean"] == pytest.approx(0)


def test_a_slower_arm_does_not_close_and_a_censored_run_counts_at_its_bound():
    result = grid(lambda arm, T, s: None if s == 2 else 0.5)  # seed 2: the sphere never copies
    a = result["arms"]["alpha-L"]
    assert a["T"][64]["n"] == 10  # the censored seed enters at its bound, 1000 / S = 0.1 < 1
    assert a["T"][64]["call"] == "slower" and a["T"][64]["median"] == pytest.approx(0.5)
    assert a["verdict"].startswith("does not close")
    assert "supports" not in a["verdict"]


def test_the_interval_and_the_sign_test():
    median, low, high = alpha.interval([1, 2, 3, 4, 100], alpha.np.median)
    assert median == 3 and low <= median <= high and (low, high) == alpha.interval(
        [1, 2, 3, 4, 100], alpha.np.median)[1:]  # the same resamples every time
    assert alpha.sign_test(5, 10) == 1.0 and alpha.sign_test(0, 5) == pytest.approx(2 / 32)
    assert alpha.sign_test(9, 10) == pytest.approx(2 * 11 / 1024)


def test_the_readme_states_the_codes_rules():
    with open(os.path.join(ROOT, "experiments", "README.md"), encoding="utf-8") as f:
        readme = re.sub(r"\s+", " ", f.read())
    for name, text in alpha.RULES.items():
        assert f"*{name}*: {text}" in readme, name
    for value in (f"{alpha.RESAMPLES:,}", f"{alpha.CONFIDENCE:.0%}", "generator seed "
                  f"{alpha.BOOTSTRAP_SEED}", "tuning seeds 0 and 1", "paired seeds 2–11"):
        assert value in readme, value
    opts = alpha.parser().parse_args([])
    assert (opts.tune_seeds, opts.seeds, opts.contexts, opts.seed) == (2, 10, [64, 256], 0)
    assert opts.variants == ["alpha-L", "alpha25"] and not opts.sphere_default


@pytest.mark.slow
def test_quick_runs_and_the_committed_report_is_what_its_results_give(tmp_path):
    script = os.path.join(ROOT, "experiments", "alpha.py")
    quick = subprocess.run([sys.executable, script, "--quick", "--out", str(tmp_path / "q")],
                           capture_output=True, text=True, timeout=600)  # (about 30 s)
    assert quick.returncode == 0, quick.stderr[-2000:]
    assert "## The pre-registered reading" in quick.stdout
    committed = os.path.join(ROOT, "experiments", "results", "alpha")
    raw, runs = alpha.grid.read_results(os.path.join(committed, "results.json"), "read",
                                          alpha.parser)  # (a grid under way too)
    (tmp_path / "a").mkdir()
    alpha.grid.write_all(alpha.ALPHA, runs, SimpleNamespace(**raw["options"]), raw["info"],
                           str(tmp_path / "a"), raw["complete"])
    for name in ("results.md", "curves.png"):
        with open(os.path.join(committed, name), "rb") as f, open(tmp_path / "a" / name, "rb") as g:
            assert f.read() == g.read(), name


def test_no_verdict_while_a_seed_has_not_run():
    opts = SimpleNamespace(seed=0, tune_seeds=2, seeds=3, steps=STEPS, contexts=[64],
                           sweep=1, max_extend=2)
    records = [run(64, "rmsnorm", "default", s, 1000.0) for s in (2, 3, 4)]
    records += [run(64, "sphere", arm, s, 500.0) for arm in alpha.ARMS for s in (2, 3)]
    result = read(records, opts)
    assert result["arms"]["alpha-L"]["T"][64]["call"] == "faster"  # read so far
    assert result["arms"]["alpha-L"]["verdict"].startswith("no verdict")
    records += [run(64, "sphere", arm, 4, 500.0) for arm in alpha.ARMS]
    assert read(records, opts)["arms"]["alpha-L"]["verdict"].startswith("closes")
    opts.contexts = [64, 256]  # T = 256 planned, not yet run: its gate is pending
    assert read(records, opts)["arms"]["alpha-L"]["verdict"].startswith("no verdict")


def test_the_readmes_table_is_what_the_committed_results_give():
    """Every row of experiments/README.md's table of the reading, recomputed from results.json."""
    raw, runs = alpha.grid.read_results(os.path.join(ROOT, "experiments", "results", "alpha",
                                                       "results.json"), "read", alpha.parser)
    opts = SimpleNamespace(**raw["options"])
    result = alpha.reading(opts, alpha.repeat.summarize(runs, opts))
    rows = [f"| {arm} | {T} | {x['median']:.2f} | [{x['low']:.2f}, {x['high']:.2f}] | {x['above']} of "
            f"{x['n']} | {x['p']:.3f} | {x['call']} |" for arm, a in result["arms"].items()
            for T, x in a["T"].items()]
    with open(os.path.join(ROOT, "experiments", "README.md"), encoding="utf-8") as f:
        table = [line for line in f.read().split("## Is α the lever?")[1].splitlines()
                 if re.match(r"\| alpha", line)]
    assert rows and table == rows
