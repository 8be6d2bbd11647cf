"""harness/run.py -- Run: everything a training run adds to chapter 22's loop, behind two calls per step.

The chapter's loop is: take the step's docs, forward and loss, backward, Adam (+ the retraction), report.
microgpt.train() keeps exactly that and hands the rest to a Run:

    with Run(cfg, vocab, train_docs, val_docs, tokenize=doc_tokens, init=init_params, **settings) as run:
        s = run.state                               # weights, Adam's moments, settings (resume: the checkpoint's)
        for step in range(s.step, s.steps):
            ...forward, loss and backward...
            if run.diverged(step, loss, grad):      # NaN or inf: stop before the update
                break
            ...Adam (+ retract)...
            if run.after_step(step, loss, drift):   # val loss, divergence rules, progress, Ctrl-C
                break

Run checks every setting (harness/checks.py, the rules the flags obey too), builds the TrainState (new, or a
resumed one after checking it), measures the val loss at step 0, every eval_every steps and at the end, times
the steps, stops a run whose loss has exploded, calls `progress` after every step, and turns the first Ctrl-C
into a clean stop after the step in progress (harness/signals.py). When the engine itself fails numerically
(value.NumericError: log of 0, an overflow), the run ends as diverged; any other exception is a bug in the code
and propagates as the normal traceback (so `python -m pdb microgpt.py` stops where it happened).
"""
import math
import time

import numpy as np

from harness.checkpoints import TrainState, check_same_corpus, check_state, corpus_fingerprint
from harness.checks import check_combination, check_forward, check_setting
from harness.errors import InputError
from harness.messages import fmt_loss
from harness.signals import DeferSigint
from model_config import check_dtype, flat_buffer, pack_params, sphere_axes
from numpy_engine import evaluate
from value import NumericError

DIVERGED_NATS = 1.0     # a mean train loss this far above where training started means training has diverged
DIVERGED_WINDOW = 50    # the mean is over this many steps
HUGE_GRADIENT = 1e150   # beyond this, Adam's grad ** 2 would overflow float64 (1.8e308): a gradient this large
                        # is as broken as an infinite one


class Run:
    """One training run: its state, its checks, and what happens after each step (see the module docstring).

    settings: steps=1000, batch_size=1, lr=0.01, seed=42, engine="value", riemannian=False, eval_every=100,
    dtype="float64", progress=None, resume=None, corpus="", history=None.
    progress(info) is called after every step with info = dict(step, steps, loss, ms_per_step, eta_s,
    val_loss or None, state); raising KeyboardInterrupt in it stops training like Ctrl-C does.
    resume: a TrainState (e.g. from load_checkpoint) to continue; `steps` may extend its plan; its
    batch_size, lr, seed, riemannian and dtype are kept (the arguments are ignored; to go on with a lower lr,
    set resume.lr first), eval_every unless given. Its docs must be the ones it was trained on (a fingerprint).
    history: a harness.history.History that records snapshots of the weights for the planetarium.
    """

    def __init__(self, cfg, vocab, train_docs, val_docs, *, tokenize, init, steps=1000, batch_size=1, lr=0.01,
                 seed=42, engine="value", riemannian=False, eval_every=None, dtype="float64", progress=None,
                 resume=None, corpus="", history=None):
        if eval_every is None:
            eval_every = resume.eval_every if resume is not None else 100
        for name, value in (("steps", steps), ("eval_every", eval_every), ("engine", engine)):
            check_setting(name, value, name)
        if not train_docs or not val_docs:
            raise InputError(f"training needs at least one train and one val document (got {len(train_docs)} "
                             f"and {len(val_docs)})")
        self.train_tokens = [tokenize(d, vocab) for d in train_docs]  # (InputError for an unknown character)
        self.val_tokens = [tokenize(d, vocab) for d in val_docs]
        if resume is None:
            for name, value in (("batch_size", batch_size), ("lr", lr), ("seed", seed), ("riemannian", riemannian),
                                ("dtype", check_dtype(dtype).name), ("corpus", corpus)):
                check_setting(name, value, name)
            params = init(cfg, seed, check_dtype(dtype))
            flat = flat_buffer(params)
            self.state = TrainState(cfg, list(vocab), params, np.zeros_like(flat), np.zeros_like(flat), 0, steps,
                                    batch_size, lr, seed, engine, riemannian, corpus, eval_every,
                                    *corpus_fingerprint(train_docs, val_docs))
        else:
            self.state = self._resumed(resume, train_docs, val_docs, steps, engine, eval_every, corpus)
        s = self.state
        check_combination(engine, s.params["wte"].dtype.name, cfg.norm, s.riemannian)
        check_forward(s.params, cfg, f"the model at step {s.step}")  # (flags or weights too large: refused now)
        self.progress, self.history = progress, history

    @staticmethod
    def _resumed(state, train_docs, val_docs, steps, engine, eval_every, corpus):
        """The TrainState to continue: checked like a checkpoint, on the docs it was trained on."""
        check_state(state, "resume")
        check_same_corpus(state, train_docs, val_docs, corpus or state.corpus)
        if state.step > steps:
            raise InputError(f"the checkpoint is at step {state.step}, beyond the requested --steps {steps}")
        state.corpus_sha256, state.corpus_docs = corpus_fingerprint(train_docs, val_docs)
        state.params = pack_params(state.params, state.cfg)  # one flat buffer (Adam updates it in one go)
        state.steps, state.engine, state.eval_every = steps, engine, eval_every
        state.interrupted, state.error = False, ""
        return state

    # -- the run's start and end

    def __enter__(self):
        s, cfg = self.state, self.state.cfg
        self.sigint = DeferSigint().__enter__()
        if not s.val_loss:
            s.val_loss.append((0, evaluate(s.params, self.val_tokens, cfg)))
        if self.history is not None and s.step == 0 and self.history.due(0):
            self.history.record(0, s.params)
        # where training started: guessing (log V), or the initial weights if they are worse
        self.start = max(math.log(cfg.vocab_size), s.val_loss[0][1])
        self.step_time, self.timed = 0.0, 0
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.sigint.__exit__()
        s = self.state
        s.interrupted = self.sigint.hit and s.step < s.steps
        if exc_type is not None and issubclass(exc_type, NumericError):  # the engine's own failure: divergence
            s.error = f"step {s.step + 1}: {exc}"
            return True  # (the weights are those of the last complete step)
        return False  # anything else is a bug in the code: Python's own traceback, at the line

    # -- the two calls of every step

    def diverged(self, step, loss, grad):
        """Before the update: True (and state.error says why) if the loss or a gradient is NaN or inf, or so
        large that Adam's squares would overflow. The update is then skipped: the weights stay the last good ones."""
        if math.isfinite(loss) and -HUGE_GRADIENT < float(grad.min()) and float(grad.max()) < HUGE_GRADIENT:
            return False  # (a NaN fails both comparisons)
        self.state.error = f"step {step + 1}: " + (f"the loss is {loss} (not finite)" if not math.isfinite(loss)
                                                   else f"the gradient is not finite (NaN/inf); loss {fmt_loss(loss)}")
        return True

    def after_step(self, step, loss, drift=None):
        """After the update: record the step, measure the val loss when it is due, check the divergence rules,
        report progress. True means stop now (diverged, or Ctrl-C: the state is consistent and can be saved).
        drift: what retract() returned (each vector's norm before it was put back on the sphere), or None."""
        s = self.state
        now = time.perf_counter()
        self.step_time += now - self.t0
        self.timed += 1
        s.step = step + 1
        s.train_loss.append(loss)
        s.ms_per_step = 1000 * self.step_time / self.timed
        evaluating = s.step % s.eval_every == 0 or s.step == s.steps
        val = None
        if (s.step % DIVERGED_WINDOW == 0 or evaluating) and self._exploded():  # so no exploded weights are saved
            return True
        if evaluating:
            if s.cfg.norm == "sphere" and not on_sphere(s.params, s.cfg):
                s.error = (f"step {s.step}: the weights are no longer on the sphere (the updates overflowed and the "
                           "retraction could not put them back)")
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
                self.progress({"step": s.step, "steps": s.steps, "loss": loss, "ms_per_step": s.ms_per_step,
                               "eta_s": (s.steps - s.step) * s.ms_per_step / 1000, "val_loss": val, "state": s})
            except KeyboardInterrupt:
                self.sigint.hit = True
        self.t0 = time.perf_counter()
        return self.sigint.hit

    def _exploded(self):
        """The mean train loss of the last DIVERGED_WINDOW steps is more than DIVERGED_NATS above where training
        started (the uniform baseline log(V), or the initial val loss if that is worse): the model fits its own
        training data clearly worse than guessing. (A val loss is not enough: on a tiny corpus overfitting alone
        can lift it above uniform.) The same rule holds for both engines."""
        s = self.state
        recent = s.train_loss[-DIVERGED_WINDOW:]
        mean = sum(recent) / len(recent)
        if mean <= self.start + DIVERGED_NATS:
            return False
        s.error = (f"step {s.step}: the mean train loss of the last {len(recent)} steps is {mean:.4g}, more than "
                   f"{DIVERGED_NATS:g} nat above where training started ({fmt_loss(self.start)}: the uniform baseline "
                   f"log({s.cfg.vocab_size}) or the initial val loss, whichever is higher); the loss exploded")
        return True


def on_sphere(params, cfg, tol=1e-6):
    """Sphere mode: is every matrix still unit-normalized along its embedding dimension? (Not when an update
    overflowed: retracting rows of inf gives zeros or NaN, and the loss of such a model can look harmless.)"""
    with np.errstate(over="ignore", invalid="ignore"):
        return all(np.abs(np.sqrt(np.add.reduce(params[key] ** 2, axis=axis)) - 1).max() <= tol
                   for key, axis in sphere_axes(cfg).items())
