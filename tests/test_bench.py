"""benchmarks/vs_commits.py's table against older commits, in smoke versions (a few rounds and
steps; nothing here judges a time)."""
import json
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import vs_commits  # noqa: E402

import microgpt as mg  # noqa: E402


def _has_commits(*commits):
    if shutil.which("git") is None:
        return False
    root = Path(__file__).resolve().parent.parent
    return all(subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet",
                               f"{c}^{{commit}}"],
                              capture_output=True).returncode == 0 for c in commits)


def test_the_old_and_the_new_code_run_in_alternating_processes(monkeypatch):
    calls = []
    monkeypatch.setattr(vs_commits, "run_probe",
                        lambda folder, *args: calls.append(folder) or [len(calls), 2.0, 3.0])
    new, old = vs_commits.side_by_side("NEW", "OLD", "numpy", "rmsnorm", 3, 4, "docs.txt",
                                       lambda *a: None)
    assert calls == ["NEW", "OLD", "OLD", "NEW", "NEW", "OLD", "OLD", "NEW"]
    assert [run[0] for run in new] == [1, 4, 5, 8] and [run[0] for run in old] == [2, 3, 6, 7]


def test_a_steps_best_is_taken_over_the_rounds_step_by_step():
    runs = [[5.0, 1.0, 9.0], [2.0, 8.0, 3.0]]  # two rounds of three steps
    assert vs_commits.figures("value", runs) == ([5.0, 13 / 3], 2.0)  # means; the mean of [2, 1, 3]
    # medians; the median of [2, 1, 3]
    assert vs_commits.figures("numpy", runs) == ([5.0, 3.0], 2.0)


def test_a_commit_git_does_not_have_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="cannot read commit 0000000"):
        vs_commits.export_commit("0000000", tmp_path)


@pytest.mark.skipif(not _has_commits(vs_commits.VALUE_BASE, vs_commits.NUMPY_BASE),
                    reason="needs git and a clone with the baseline commits (not a shallow one)")
@pytest.mark.slow
def test_the_table_against_older_commits_runs_both_comparisons():
    args = vs_commits._parse_args(["--value-rounds", "1", "--value-steps", "2",
                                   "--numpy-rounds", "1",
                                   "--numpy-steps", "20"])
    rows = vs_commits.table(args, lambda *a: None)
    body = rows[2:]
    assert [r.split(" | ")[:3] for r in body] == [["| value, default size", "rmsnorm", "9eb093c"],
                                                   ["| numpy, default size", "rmsnorm", "9eb093c"],
                                                   ["| numpy, default size", "sphere", "9eb093c"]]
    for r, target in zip(body, ("1.15", "1.60", "1.60")):
        assert re.search(rf"\| [\d.]+x \| at most {target}x: (met|not met) \| [\d.]+ \|$", r), r


def test_instructions_per_step_are_the_difference_of_two_counted_processes(monkeypatch):
    counted = []

    def process(folder, engine, norm, steps, docs_file, clock, size, prefix=()):
        assert prefix[0] == "valgrind" and clock == "instructions"
        counted.append(steps)
        return subprocess.CompletedProcess([], 0, "", f"==1== Collected : {1000 + 7 * steps}\n")
    monkeypatch.setattr(vs_commits.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(vs_commits, "_probe_process", process)
    assert vs_commits.run_probe("DIR", "value", "rmsnorm", 24, "docs.txt", "instructions") == [7.0]
    assert counted == [vs_commits.WARMUP_STEPS + 24, vs_commits.WARMUP_STEPS]


def test_instructions_without_valgrind_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(vs_commits.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="needs valgrind"):
        vs_commits.count_step("DIR", "value", "rmsnorm", 24, "docs.txt")


def _probe(tmp_path, monkeypatch, capsys, steps=3):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(mg.load_corpus("names")[:50]), encoding="utf-8")
    monkeypatch.setattr(sys, "path", list(sys.path))  # probe puts the checkout first on sys.path
    vs_commits.probe(str(Path(mg.__file__).parent), "numpy", "rmsnorm", steps, str(docs), "wall")
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_the_probe_times_each_step_of_a_train_that_takes_progress(tmp_path, monkeypatch, capsys):
    import inspect
    if "progress" not in inspect.signature(mg.train).parameters:
        pytest.skip("this tree's train() takes an observer")
    times = _probe(tmp_path, monkeypatch, capsys)
    assert len(times) == 3 and all(t > 0 for t in times)


def test_the_probe_times_each_step_of_a_train_that_takes_an_observer(tmp_path, monkeypatch, capsys):
    def train(train_docs, val_docs, vocab, cfg, *, steps=1000, observer=None, **settings):
        state = types.SimpleNamespace(step=0, error=None)
        for step in range(steps):
            state.step = step + 1
            if observer.after_update(state, 1.0, None):
                break
        return state

    fake = types.SimpleNamespace(train=train, GPTConfig=mg.GPTConfig,
                                 build_vocab=mg.build_vocab)
    monkeypatch.setitem(sys.modules, "microgpt", fake)
    times = _probe(tmp_path, monkeypatch, capsys, steps=4)
    assert len(times) == 4 and all(t >= 0 for t in times)


def test_a_probe_whose_train_diverges_says_at_which_step(tmp_path, monkeypatch, capsys):
    def train(train_docs, val_docs, vocab, cfg, *, steps=1000, observer=None, **settings):
        state = types.SimpleNamespace(step=0, error="")
        for step in range(steps):
            if step == 2:
                raise mg.NumericError("the loss (nan) or a gradient is not finite")
            state.step = step + 1
            observer.after_update(state, 1.0, None)
        return state

    fake = types.SimpleNamespace(train=train, GPTConfig=mg.GPTConfig,
                                 build_vocab=mg.build_vocab)
    monkeypatch.setitem(sys.modules, "microgpt", fake)
    with pytest.raises(SystemExit, match=r"training stopped: step 3: the loss \(nan\)"):
        _probe(tmp_path, monkeypatch, capsys, steps=4)


@pytest.mark.slow
def test_the_subnormal_benchmark_raises_s_qk_until_part_of_the_attention_is_subnormal():
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "subnormal.py"
    out = subprocess.run([sys.executable, str(script), "--rounds", "1", "--steps", "1"],
                         capture_output=True, text=True, timeout=300).stdout  # (about 3 s)
    shares = [float(x) for x in re.findall(r"([\d.]+)% of the attention weights subnormal", out)]
    assert shares[0] == 0 and 4 <= shares[1] <= 10, out
    assert re.search(r"takes [\d.]+x the fresh state's; flushed, [\d.]+x, with the loss and "
                     r"gradients the same bit for bit", out), out
