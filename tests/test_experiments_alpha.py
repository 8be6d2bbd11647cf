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
    assert result["t512_due"] == ["alpha-L"]  # rule T=512: alpha-L is faster at T = 256
    assert "T = 512 runs next (alpha-L faster at T = 256)" in "\n".join(alpha._reading_md(result))


def test_a_slower_arm_does_not_close_and_a_censored_run_counts_at_its_bound():
    result = grid(lambda arm, T, s: None if s == 2 else 0.5)  # seed 2: the sphere never copies
    a = result["arms"]["alpha-L"]
    assert a["T"][64]["n"] == 10  # the censored seed enters at its bound, 1000 / S = 0.1 < 1
    assert a["T"][64]["call"] == "slower" and a["T"][64]["median"] == pytest.approx(0.5)
    assert a["verdict"].startswith("does not close")
    assert "supports" not in a["verdict"]
    assert result["t512_due"] == []  # no arm faster at T = 256: T = 512 does not run


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


def committed(folder):
    """The folder of a committed grid's records, and its (raw results.json, runs)."""
    path = os.path.join(ROOT, "experiments", "results", folder)
    return path, alpha.grid.read_results(os.path.join(path, "results.json"), "read", alpha.parser)


@pytest.mark.slow
def test_quick_runs_and_the_committed_report_is_what_its_results_give(tmp_path):
    script = os.path.join(ROOT, "experiments", "alpha.py")
    quick = subprocess.run([sys.executable, script, "--quick", "--out", str(tmp_path / "q")],
                           capture_output=True, text=True, timeout=600)  # (about 30 s)
    assert quick.returncode == 0, quick.stderr[-2000:]
    assert "## The pre-registered reading" in quick.stdout
    for folder in ("alpha", "alpha_c64"):  # the grid (under way too) and the width control
        path, (raw, runs) = committed(folder)
        (tmp_path / folder).mkdir()
        alpha.grid.write_all(alpha.ALPHA, runs, SimpleNamespace(**raw["options"]), raw["info"],
                               str(tmp_path / folder), raw["complete"])
        for name in ("results.md", "curves.png"):
            with open(os.path.join(path, name), "rb") as f, \
                    open(tmp_path / folder / name, "rb") as g:
                assert f.read() == g.read(), (folder, name)


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


def committed_reading(folder, contexts):
    """The reading of the committed runs at these T, as if the grid had planned only them."""
    _, (raw, runs) = committed(folder)
    opts = SimpleNamespace(**dict(raw["options"], contexts=contexts))
    runs = [r for r in runs if r.T in contexts]
    return alpha.reading(opts, alpha.repeat.summarize(runs, opts))


def readme_part(start, end):
    """The lines of experiments/README.md's alpha section from the paragraph starting
    with start up to the one starting with end."""
    with open(os.path.join(ROOT, "experiments", "README.md"), encoding="utf-8") as f:
        section = f.read().split("## Is α the lever?")[1]
    return section.split(start)[1].split(end)[0].splitlines()


@pytest.mark.parametrize("folder, contexts, start, end", [
    ("alpha", [64, 256], "**Results at T = 64 and 256**", "**The width control**"),
    ("alpha_c64", [64], "**The width control**", "**The Shakespeare control**")])
def test_the_readmes_reading_is_what_the_committed_results_give(folder, contexts, start, end):
    """Every row of the README's tables of the reading, and its lines on the trend, the
    verdicts and T = 512, recomputed from results.json (T = 512 runs by the rule T=512,
    after the reading at T = 64 and 256 called for it)."""
    result = committed_reading(folder, contexts)
    rows = [f"| {arm} | {T} | {x['median']:.2f} | [{x['low']:.2f}, {x['high']:.2f}] | {x['above']} of "
            f"{x['n']} | {x['p']:.3f} | {x['call']} |" for arm, a in result["arms"].items()
            for T, x in a["T"].items()]
    lines = readme_part(start, end)
    assert rows and [line for line in lines if line.startswith("| alpha")] == rows
    said = [line for line in alpha._reading_md(result) if line.startswith("- ")]
    assert said and [line for line in lines if line.startswith("- ")] == said


@pytest.mark.parametrize("folder, start, end", [
    ("alpha", "**Results at T = 64 and 256**", "**T = 512**"),
    ("alpha_c64", "**The width control**", "**The Shakespeare control**")])
def test_the_readmes_step_ranges_are_the_committed_runs(folder, start, end):
    """The range of the paired seeds' steps to copy-2 <= 1.0 the README quotes for each unit
    whose every seed got there, at each T."""
    _, (_, runs) = committed(folder)
    text, quoted = " ".join(readme_part(start, end)), 0
    for T in sorted({r.T for r in runs if r.T <= 256}):
        for variant in ("default",) + alpha.ARMS:
            steps = [r.steps_to["1.0"] for r in runs
                     if (r.T, r.variant, r.phase) == (T, variant, "seeds")]
            if steps and None not in steps:
                assert f"{min(steps):,.0f}–{max(steps):,.0f}" in text, (T, variant)
                quoted += 1
    assert quoted >= 3


def test_notebook_15_quotes_the_committed_reading():
    """Notebook 15's α paragraph gives alpha-L's median r and interval at T = 64 and 256."""
    arm = committed_reading("alpha", [64, 256])["arms"]["alpha-L"]["T"]
    path = os.path.join(ROOT, "notebooks", "src", "15_lecture3_ngpt_training.py")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for x in (arm[64], arm[256]):
        assert f"比の中央値 {x['median']:.2f}、95% 区間 [{x['low']:.2f}, {x['high']:.2f}]" in text


def test_the_readme_counts_the_t512_runs_so_far():
    """The README's T = 512 paragraph: how many runs, how many flushed subnormals, and
    the steps to copy-2 <= 1.0 it quotes, from results.json."""
    _, (_, runs) = committed("alpha")
    at_512 = [r for r in runs if r.T == 512]
    text = " ".join(readme_part("**T = 512**", "**The width control**"))
    flushed = sum((r.machine or {}).get("subnormals") == "flushed to zero" for r in at_512)
    assert f"So far {len(at_512)} runs" in text and f"{flushed} of the {len(at_512)} ran" in text
    reached = [r.steps_to["1.0"] for r in at_512 if r.steps_to["1.0"] is not None]
    assert all(f"{x:,.0f}" in text for x in reached)
