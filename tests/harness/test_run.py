"""harness/run.py's Run, the command line's observer of microgpt.train(): its stopping rules (a loss or
gradient that is not finite, an exploding loss), progress, Ctrl-C; and train()'s own door: every
setting checked by the flags' rules, a resumed state continued in a copy, the engine's numeric
failure as divergence and any other exception as a traceback."""
import os
import signal
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from cli_helpers import ROOT, TINY, run

import microgpt as mg
from harness.errors import EXIT_DIVERGED, InputError
from harness.history import History
from harness.run import DIVERGED_WINDOW, Run
from model_config import HUGE_GRADIENT, GPTConfig
from value import NumericError

WORDS = ["anna", "bob", "carla", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy"]
VOCAB = mg.build_vocab(WORDS)
CFG = GPTConfig(vocab_size=len(VOCAB) + 1, n_embd=8, n_head=2, block_size=8)
BASE = {"uniform": 2.9, "unigram": 2.8, "bigram": 2.5}


def make_run(steps=10):
    """A Run as microgpt.main makes it, without --out: the settings it reads, a folder without files."""
    s = SimpleNamespace(steps=steps, out=None, corpus="words", run_id="", fingerprint=("0" * 64, 10))
    return Run(s, CFG, VOCAB, BASE, NoFolder(s))


class NoFolder:
    """A run without --out: its history starts afresh and no checkpoint is saved."""

    def __init__(self, opts):
        self.opts, self.last_good = opts, None

    def start_history(self, cfg, vocab):
        self.history = History(cfg, vocab, self.opts.steps)
        return self.history


def train(observer=None, **settings):
    return mg.train(WORDS[:8], WORDS[8:], VOCAB, CFG, observer=observer,
                    **{"engine": "numpy", "steps": 10, "eval_every": 4, **settings})


def test_the_run_observes_a_training_run_and_prints_progress(capsys):
    with make_run() as observer:
        state = train(observer)
    assert state.step == 10 and len(state.train_loss) == 10 and not state.error
    assert [step for step, _ in state.val_loss] == [0, 4, 8, 10]  # step 0, every eval_every, the end
    out = capsys.readouterr().out.splitlines()
    assert [line.split("|")[0].strip() for line in out if "val loss" in line] == \
        ["step    4/10", "step    8/10", "step   10/10"]
    assert observer.history.step.tolist()[0] == 0  # the planetarium's first snapshot: the initial weights


@pytest.mark.parametrize("loss, grad", [(float("nan"), 0.0), (float("inf"), 0.0), (2.0, float("nan")),
                                        (2.0, -float("inf")), (2.0, 10 * HUGE_GRADIENT)])
def test_a_loss_or_gradient_that_is_not_finite_stops_before_the_update(monkeypatch, loss, grad):
    """The loop's own rule: at step 3 the loss or a gradient is NaN, inf, or so large that Adam's square
    would overflow; training stops with the weights of step 2."""
    stopped_at_2 = train(StopAt(2))
    original, calls = mg.loss_and_grads, []

    def breaks_at_3(params, docs, cfg, engine, out):
        calls.append(1)
        value, grads = original(params, docs, cfg, engine, out)
        if len(calls) == 3:
            grads["wte"][0, 0] = grad
            return loss, grads
        return value, grads

    monkeypatch.setattr(mg, "loss_and_grads", breaks_at_3)
    observer = StopAt(None)
    with pytest.raises(NumericError) as raised:
        train(observer)
    state = Run.diverged(observer, raised.value)  # the last good state the observer holds
    assert state.step == 2 and state.error.startswith("step 3: the loss (") and "is not finite" in state.error
    np.testing.assert_array_equal(mg.flat_buffer(state.params), mg.flat_buffer(stopped_at_2.params))


class StopAt:
    """A silent observer that stops training after `step` steps (None: never)."""

    def __init__(self, step):
        self.step, self.state = step, None

    def before_update(self, state, loss, grad):
        self.state = state
        return False

    def after_update(self, state, loss, drift):
        return state.step == self.step


def test_an_exploding_loss_is_caught_at_the_window():
    observer = make_run(steps=200)
    state = train(steps=3)
    with observer:
        observer.before_update(state, 2.0, np.zeros(3))
        state.val_loss = [(0, 2.0)]
        for step in range(1, DIVERGED_WINDOW):
            state.step = step
            state.train_loss.append(observer.start + 5)
            assert observer.after_update(state, observer.start + 5, None) is False  # between windows
        state.step = DIVERGED_WINDOW
        state.train_loss.append(observer.start + 5)
        assert observer.after_update(state, observer.start + 5, None) is True
    assert "the loss exploded" in state.error


def test_ctrl_c_finishes_the_step_then_stops():
    class CtrlC(Run):
        def before_update(self, state, loss, grad):
            if state.step == 1:
                signal.raise_signal(signal.SIGINT)  # arrives in the middle of step 2: a flag is set
            return super().before_update(state, loss, grad)

    with CtrlC(make_run().opts, CFG, VOCAB, BASE, make_run().folder) as observer:
        state = train(observer, steps=50)
    assert observer.interrupted and state.step == 2 and len(state.train_loss) == 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handed back


def test_the_engines_numeric_failure_is_divergence_and_any_other_exception_a_traceback(monkeypatch):
    calls = []

    def failing(params, docs, cfg, engine, out):
        calls.append(1)
        if len(calls) == 2:
            raise NumericError("Value.log: log of non-positive value 0.0 is undefined")
        return original(params, docs, cfg, engine, out)

    original = mg.loss_and_grads
    monkeypatch.setattr(mg, "loss_and_grads", failing)
    observer = StopAt(None)
    with pytest.raises(NumericError) as raised:
        train(observer)
    state = Run.diverged(observer, raised.value)
    assert state.step == 1 and state.error == "step 2: Value.log: log of non-positive value 0.0 is undefined"
    calls.clear()
    with pytest.raises(NumericError):  # before any update it is the model's code: let through
        Run.diverged(StopAt(None), raised.value)
    monkeypatch.setattr(mg, "loss_and_grads", lambda *args, **kw: [][0])
    with pytest.raises(IndexError):  # a learner's bug: not swallowed, not called divergence
        train()


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
def test_train_checks_every_setting_with_the_flags_rules(settings, message):
    with pytest.raises(InputError, match=message):
        train(**settings)


def test_an_unknown_setting_is_a_learners_mistake():
    with pytest.raises(TypeError, match="unexpected keyword argument 'stpes'"):
        train(stpes=3)


def test_numpy_scalar_settings_become_plain_python_numbers():
    state = train(steps=np.int64(3), batch_size=np.int32(2), lr=np.float32(0.01), dtype=np.float32)
    assert state.steps == 3 and type(state.steps) is int and type(state.lr) is float
    assert state.dtype == "float32" and state.params["wte"].dtype == np.float32


def test_empty_docs_and_unknown_characters_are_refused():
    with pytest.raises(InputError, match="at least one train and one val document"):
        mg.train(WORDS, [], VOCAB, CFG, steps=1, engine="numpy")
    with pytest.raises(InputError, match="not in the vocabulary: 'Z'"):
        mg.train(WORDS + ["Zed"], WORDS[:1], VOCAB, CFG, steps=1, engine="numpy")


def test_a_resumed_run_continues_a_copy_of_the_state_it_is_given():
    first = train(steps=6, eval_every=3)
    before = (mg.flat_buffer(first.params).copy(), first.m.copy(), list(first.train_loss), first.lr)
    second = train(steps=9, resume=first, lr=0.005)  # a resume may extend the plan and lower the lr
    assert second.step == 9 and second.lr == 0.005 and second is not first
    branch = train(steps=9, resume=first, lr=0.005)  # two branches from one state are the same run
    np.testing.assert_array_equal(mg.flat_buffer(branch.params), mg.flat_buffer(second.params))
    np.testing.assert_array_equal(mg.flat_buffer(first.params), before[0])  # the state given in is
    np.testing.assert_array_equal(first.m, before[1])                     # left as it was
    assert first.step == 6 and first.train_loss == before[2] and first.lr == before[3]
    with pytest.raises(InputError, match="lr differs from the checkpoint"):  # but not raise the lr
        train(steps=9, resume=first, lr=123.0)
    with pytest.raises(InputError, match="batch_size differs from the checkpoint"):
        train(steps=9, resume=first, batch_size=3)
    with pytest.raises(InputError, match="at step .*, beyond the requested steps 5"):
        train(steps=5, resume=first)


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
