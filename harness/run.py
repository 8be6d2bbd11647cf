"""harness/run.py -- what a run adds to chapter 22's loop: run_state (checked settings) and Run.

microgpt.train() makes its data, weights and Adam moments, then loops inside `with Run(...) as run`,
calling run.diverged(step, loss, grad) before the update and run.after_step(step, loss, drift) after
it. Run keeps a reference to the chapter's arrays (what a checkpoint saves), measures the val loss
at step 0, every eval_every steps and at the end, times the steps, stops a run whose loss exploded,
and turns the first Ctrl-C into a stop after the step in progress. The engine's numeric failure
(value.NumericError) ends the run as diverged; any other exception is a bug and keeps its traceback.
In the loop NumPy's overflow warnings are off: what overflows becomes inf or NaN, which the
divergence rules name.
"""
import math
import os
import secrets
import time
import traceback

import numpy as np

from checks import check_forward
from harness.checkpoints import HUGE_GRADIENT, TrainState, check_same_corpus, check_state, corpus_fingerprint
from harness.errors import InputError
from harness.shell import DeferSigint
from model_config import check_dtype, off_sphere, pack_params
from numpy_engine import evaluate
from settings import STORED, check, check_combination, resumed
from value import NumericError

DIVERGED_NATS = 1.0     # a mean train loss this far above where training started means training has diverged
DIVERGED_WINDOW = 50    # the mean is over this many steps


def run_state(cfg, vocab, train_docs, val_docs, resume=None, **settings):
    """The TrainState a run starts from, every setting checked by its rule: a new one at step 0,
    without weights (the chapter makes them), or `resume` with what a resume may change. The
    documents: at least one of each, and on resume the ones it was trained on."""
    unknown = sorted(set(settings) - {s.name for s in STORED})
    if unknown:
        raise TypeError(f"train() got unexpected keyword arguments: {', '.join(unknown)}")
    if not train_docs or not val_docs:
        raise InputError(f"training needs at least one train and one val document (got {len(train_docs)} "
                         f"and {len(val_docs)})")
    if settings.get("dtype") is not None:  # (np.float32 or its dtype: the same as "float32")
        settings["dtype"] = check_dtype(settings["dtype"]).name
    given = {name: check(name, value) for name, value in settings.items() if value is not None}
    if resume is None:
        s = TrainState(cfg, list(vocab), **given, run_id=secrets.token_hex(8))
    else:
        check_state(resume, "resume")
        if resume.cfg != cfg or resume.vocab != list(vocab):
            raise InputError("the state to resume is of another model (its config or vocabulary differ)")
        check_same_corpus(resume, train_docs, val_docs, given.get("corpus", resume.corpus))
        merged, _ = resumed({s.name: getattr(resume, s.name) for s in STORED}, given, resume.step)
        s = resume
        for name, value in merged.items():
            setattr(s, name, value)
        s.params = pack_params(s.params, cfg)  # one flat buffer (Adam updates it in one go)
        s.interrupted, s.error = False, ""
    s.corpus_sha256, s.corpus_docs = corpus_fingerprint(train_docs, val_docs)
    check_combination(s.engine, s.dtype, cfg.norm, s.riemannian)
    return s


class Run:
    """Observes one training run (see the module docstring). progress(info) is called after every step,
    info = dict(step, steps, loss, ms_per_step, eta_s, val_loss or None, state); a KeyboardInterrupt
    in it stops training like Ctrl-C. history: a harness.history.History."""

    def __init__(self, state, params, m, v, val_tokens, progress=None, history=None):
        state.params, state.m, state.v = params, m, v  # the chapter's own arrays: what a checkpoint saves
        check_forward(params, state.cfg, f"the model at step {state.step}")  # (flags or weights too large)
        self.state, self.val_tokens, self.progress, self.history = state, val_tokens, progress, history

    # -- the run's start and end

    def __enter__(self):
        s, cfg = self.state, self.state.cfg
        self.sigint = DeferSigint().__enter__()
        self.quiet = np.errstate(all="ignore")  # overflow becomes inf or NaN: the divergence rules name it
        self.quiet.__enter__()
        if not s.val_loss:
            s.val_loss.append((0, evaluate(s.params, self.val_tokens, cfg)))
        if self.history is not None and s.step == 0 and self.history.due(0):
            self.history.record(0, s.params)
        # where training started: guessing (log V), or the initial weights if they are worse
        self.start = max(math.log(cfg.vocab_size), s.val_loss[0][1])
        self.first_step = s.step
        self.step_time, self.timed = 0.0, 0
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.quiet.__exit__(None, None, None)
        self.sigint.__exit__()
        s = self.state
        s.interrupted = self.sigint.hit and s.step < s.steps
        if exc_type is not None and issubclass(exc_type, NumericError):  # the engine's own: divergence
            s.error = f"step {s.step + 1}: {exc} ({where(tb)})"
            return True  # (the weights are those of the last complete step)
        return False  # anything else is a bug in the code: Python's own traceback, at the line

    # -- the two calls of every step

    def diverged(self, step, loss, grad):
        """Before the update: True (state.error says why) if the loss or a gradient is NaN or inf, or
        so large that Adam's squares would overflow; the weights stay the last good ones."""
        if math.isfinite(loss) and -HUGE_GRADIENT < float(grad.min()) and float(grad.max()) < HUGE_GRADIENT:
            return False  # (a NaN fails both comparisons)
        why = (f"the loss is {loss} (not finite)" if not math.isfinite(loss) else
               f"the gradient is not finite (NaN/inf); loss {loss:.4g}")
        self.state.error = f"step {step + 1}: {why}"
        return True

    def after_step(self, step, loss, drift=None):
        """After the update: record the step, the val loss when due, the divergence rules, progress.
        True means stop now (diverged, or Ctrl-C: the state is consistent and can be saved). drift:
        what retract() returned (each vector's norm before it was put back on the sphere), or None."""
        s = self.state
        self.step_time += time.perf_counter() - self.t0
        self.timed += 1
        s.step = step + 1
        s.train_loss.append(loss)
        s.ms_per_step = 1000 * self.step_time / self.timed
        evaluating = s.step % s.eval_every == 0 or s.step == s.steps
        val = None
        if (s.step % DIVERGED_WINDOW == 0 or evaluating) and self._exploded():
            return True  # (before an evaluation: no exploded weights are saved)
        if evaluating:
            if s.cfg.norm == "sphere" and not off_sphere(s.params, s.cfg) <= 1e-6:  # (NaN: not on it)
                s.error = (f"step {s.step}: the weights are no longer on the sphere (the updates overflowed "
                           "and the retraction could not put them back)")
                return True
            val = evaluate(s.params, self.val_tokens, s.cfg)
            if not math.isfinite(val):
                s.error = f"step {s.step}: val loss is {val} (the weights are no longer finite-valued)"
                return True
            s.val_loss.append((s.step, val))
        if self.history is not None and self.history.due(s.step):  # a snapshot for the planetarium
            self.history.record(s.step, s.params, drift)
        if self.progress is not None:
            try:
                eta = (s.steps - s.step) * s.ms_per_step / 1000
                self.progress({"step": s.step, "steps": s.steps, "loss": loss, "ms_per_step": s.ms_per_step,
                               "eta_s": eta, "val_loss": val, "state": s})
            except KeyboardInterrupt:
                self.sigint.hit = True
        self.t0 = time.perf_counter()
        return self.sigint.hit

    def _exploded(self):
        """The mean train loss of the last DIVERGED_WINDOW steps is DIVERGED_NATS above where training
        started (log V, or the first val loss if worse): the model fits its own data worse than
        guessing. (Not the val loss: on a tiny corpus overfitting can lift that above uniform.)"""
        s = self.state
        recent = s.train_loss[-DIVERGED_WINDOW:]
        mean = sum(recent) / len(recent)
        if mean <= self.start + DIVERGED_NATS:
            return False
        s.error = (f"step {s.step}: the mean train loss of the last {len(recent)} steps is {mean:.4g}, more "
                   f"than {DIVERGED_NATS:g} nat above where training started ({self.start:.4f}: the uniform "
                   f"baseline log({s.cfg.vocab_size}) or the initial val loss, whichever is higher); the loss "
                   "exploded")
        return True


def where(tb):
    """'at FILE:LINE in FUNCTION: code' of the innermost frame outside value.py: the model's line."""
    frames = [f for f in traceback.extract_tb(tb) if os.path.basename(f.filename) != "value.py"] or \
        traceback.extract_tb(tb)
    f = frames[-1]
    return f"at {os.path.basename(f.filename)}:{f.lineno} in {f.name}: {(f.line or '').strip()}"

