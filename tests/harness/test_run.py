"""harness/run.py on its own: run_state checks every setting with the flags' rules, and Run observes a
hand-written loop (val loss, divergence rules, progress, Ctrl-C, the engine's numeric failures) without making
weights, optimizer state or tokens of its own."""
import math
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from cli_helpers import ROOT, TINY, run

import microgpt as mg
from harness.checkpoints import HUGE_GRADIENT
from harness.errors import EXIT_DIVERGED, InputError
from harness.run import DIVERGED_WINDOW, Run, run_state
from model_config import GPTConfig
from value import NumericError

WORDS = ["anna", "bob", "carla", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy"]
VOCAB = mg.build_vocab(WORDS)
CFG = GPTConfig(vocab_size=len(VOCAB) + 1, n_embd=8, n_head=2, block_size=8)


VAL = [mg.doc_tokens(d, VOCAB) for d in WORDS[8:]]


def make_run(progress=None, resume=None, **settings):
    """What train() does before its loop: the checked state, then the chapter's weights and moments."""
    s = run_state(CFG, VOCAB, WORDS[:8], WORDS[8:], resume, **{"engine": "numpy", "steps": 10, "eval_every": 4,
                                                                **settings})
    params = mg.init_params(CFG, s.seed) if resume is None else s.params
    flat = mg.flat_buffer(params)
    return Run(s, params, np.zeros_like(flat), np.zeros_like(flat), VAL, progress)


def test_the_run_keeps_the_chapters_arrays_and_measures_step_0():
    run = make_run(seed=3)
    params = run.state.params
    np.testing.assert_array_equal(mg.flat_buffer(params), mg.flat_buffer(mg.init_params(CFG, 3)))
    assert run.state.m.base is None and run.state.m.shape == mg.flat_buffer(params).shape
    with run:
        assert run.state.val_loss == [(0, pytest.approx(mg.evaluate(params, VAL, CFG)))]
        assert run.state.params is params  # (a reference, not a copy: what a checkpoint saves is what trains)


def test_after_step_records_evaluates_when_due_and_reports_progress():
    seen = []
    run = make_run(progress=seen.append)
    with run:
        for step in range(10):
            assert run.after_step(step, 2.5) is False
    s = run.state
    assert s.step == 10 and s.train_loss == [2.5] * 10
    assert [step for step, _ in s.val_loss] == [0, 4, 8, 10]  # step 0, every eval_every, and the end
    assert [info["step"] for info in seen] == list(range(1, 11))
    assert [info["val_loss"] is not None for info in seen] == [k in (4, 8, 10) for k in range(1, 11)]
    assert seen[-1]["eta_s"] == 0 and seen[0]["state"] is s and not s.interrupted and not s.error


@pytest.mark.parametrize("loss, grad, why", [
    (float("nan"), 0.0, "the loss is nan"),
    (float("inf"), 0.0, "the loss is inf"),
    (2.0, float("nan"), "the gradient is not finite"),
    (2.0, -float("inf"), "the gradient is not finite"),
    (2.0, 10 * HUGE_GRADIENT, "the gradient is not finite"),  # finite, but Adam's square would overflow
])
def test_diverged_stops_before_the_update(loss, grad, why):
    run = make_run()
    g = np.zeros(5)
    assert run.diverged(0, 2.0, g) is False and not run.state.error
    g[3] = grad
    assert run.diverged(6, loss, g) is True
    assert run.state.error.startswith("step 7: " + why)


def test_an_exploding_loss_is_caught_at_the_window():
    run = make_run(steps=200, eval_every=1000)
    with run:
        start = run.start
        for step in range(DIVERGED_WINDOW - 1):
            assert run.after_step(step, start + 5) is False  # not checked between windows
        assert run.after_step(DIVERGED_WINDOW - 1, start + 5) is True
    assert "the loss exploded" in run.state.error and run.state.step == DIVERGED_WINDOW


def test_the_engines_numeric_failure_is_divergence_and_any_other_exception_a_traceback():
    run = make_run()
    with run:
        run.after_step(0, 2.0)
        raise NumericError("Value.log: log of non-positive value 0.0 is undefined")
    assert run.state.error.startswith("step 2: Value.log: log of non-positive value 0.0 is undefined (at "
                                      "test_run.py:")  # (and the line of the code that called the engine)
    with pytest.raises(IndexError):  # a learner's bug: not swallowed, not called divergence
        with make_run() as other:
            [][0]
    assert not other.state.error


def test_ctrl_c_finishes_the_step_then_stops(monkeypatch):
    run = make_run(steps=50)
    with run:
        assert run.after_step(0, 2.0) is False
        signal.raise_signal(signal.SIGINT)  # arrives in the middle of step 2: only a flag is set
        assert run.after_step(1, 2.0) is True
    assert run.state.interrupted and run.state.step == 2 and len(run.state.train_loss) == 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handed back


def test_a_keyboard_interrupt_from_progress_stops_like_ctrl_c():
    def progress(info):
        if info["step"] == 3:
            raise KeyboardInterrupt

    run = make_run(progress=progress)
    with run:
        stops = [run.after_step(step, 2.0) for step in range(3)]
    assert stops == [False, False, True] and run.state.interrupted


@pytest.mark.parametrize("settings, message", [
    ({"steps": 0}, "steps must be a positive integer"),
    ({"steps": True}, "steps must be a positive integer"),
    ({"batch_size": 2.0}, "batch_size must be a positive integer"),
    ({"lr": float("nan")}, "lr must be a positive number"),
    ({"engine": "torch"}, "engine must be one of"),
    ({"riemannian": True}, "riemannian gradients need norm 'sphere'"),
    ({"engine": "value", "dtype": "float32"}, "value engine computes in float64 only"),
    ({"eval_every": -1}, "eval_every must be a positive integer"),
    ({"seed": -1}, "seed must be a non-negative integer"),
    ({"dtype": "float16"}, "dtype must be one of"),
])
def test_every_setting_is_checked_with_the_flags_rules(settings, message):
    with pytest.raises(InputError, match=message):
        make_run(**settings)


def test_an_unknown_setting_is_a_learners_mistake():
    with pytest.raises(TypeError, match="unexpected keyword arguments: stpes"):
        make_run(stpes=3)


def test_numpy_integer_and_float32_settings_are_accepted():
    run = make_run(steps=np.int64(3), batch_size=np.int32(2), lr=np.float32(0.01))
    assert run.state.steps == 3 and run.state.batch_size == 2


def test_empty_docs_and_unknown_characters_are_refused():
    with pytest.raises(InputError, match="at least one train and one val document"):
        mg.train(WORDS, [], VOCAB, CFG, steps=1, engine="numpy")
    with pytest.raises(InputError, match="not in the vocabulary: 'Z'"):
        mg.train(WORDS + ["Zed"], WORDS[:1], VOCAB, CFG, steps=1, engine="numpy")


def test_a_resumed_run_continues_the_state_it_is_given():
    first = mg.train(WORDS[:8], WORDS[8:], VOCAB, CFG, steps=6, engine="numpy", eval_every=3)
    run = make_run(steps=9, resume=first, lr=0.005)  # a resume may extend the plan and lower the lr
    assert run.state is first and run.state.step == 6 and run.state.steps == 9 and run.state.lr == 0.005
    with pytest.raises(InputError, match="lr differs from the checkpoint"):  # but not raise it
        make_run(steps=9, resume=first, lr=123.0)
    with pytest.raises(InputError, match="batch_size differs from the checkpoint"):
        make_run(steps=9, resume=first, batch_size=3)
    with pytest.raises(InputError, match="at step .*, beyond the requested steps 5"):
        make_run(steps=5, resume=first)
    with pytest.raises(InputError, match="has changed since the checkpoint"):
        run_state(CFG, VOCAB, WORDS[1:8], WORDS[8:], first, steps=9)
    assert math.isfinite(first.val_loss[-1][1])


@pytest.mark.parametrize("engine", ["numpy", "value"])
def test_an_exploding_finite_loss_stops_both_engines(tmp_path, corpus, capsys, engine):
    args = ["--corpus", corpus, "--engine", engine, "--n-embd", "8", "--n-head", "2", "--block-size", "8",
            "--steps", "200", "--lr", "1e6", "--eval-every", "25", "--out", str(tmp_path / engine)]
    code, _, err = run(capsys, args)
    assert code == EXIT_DIVERGED and "training diverged" in err and "Try a smaller --lr" in err
    # numpy: the finite loss explodes; value: its exp() or log() refuses first. Either way: exit 1, step named
    assert any(why in err for why in ("the loss exploded", "not finite", "overflows", "log of non-positive"))
    assert not os.path.exists(tmp_path / engine / "checkpoint.npz")  # diverged before its first checkpoint

@pytest.mark.slow
def test_the_divergence_rule_leaves_healthy_high_lr_runs_alone():
    docs = mg.load_corpus("names")
    vocab = mg.build_vocab(docs)
    train_docs, val_docs = mg.split_docs(docs, 0)
    for norm in ("rmsnorm", "sphere"):
        cfg = mg.GPTConfig(vocab_size=len(vocab) + 1, norm=norm)
        st = mg.train(train_docs, val_docs[:100], vocab, cfg, steps=400, batch_size=4, lr=0.05, engine="numpy",
                      eval_every=400)
        assert not st.error and st.step == 400


@pytest.mark.parametrize("flags", [["--lr", "1e6"], ["--norm", "sphere", "--lr", "1e300"],
                                   ["--norm", "sphere", "--lr", "1e300", "--riemannian"],
                                   ["--norm", "sphere", "--lr", "1e300", "--engine", "value"],
                                   ["--norm", "sphere", "--lr", "1e30", "--dtype", "float32"]])
def test_no_numpy_warning_reaches_stderr_when_training_blows_up(corpus, flags):
    """Inside the loop, what overflows becomes inf or NaN and the divergence rules name it: no RuntimeWarning."""
    proc = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "microgpt.py", *TINY, "--corpus", corpus,
                           "--steps", "200", *flags], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "diverged" in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1
