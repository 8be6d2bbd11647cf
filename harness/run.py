"""harness/run.py -- Run, the command line's observer of microgpt.train(): it records
the planetarium's snapshots, stops a run that exploded or left the sphere, prints
progress, saves a checkpoint at every val loss, and makes Ctrl-C stop after the step.
"""
import math
import sys

import numpy as np

from harness.i18n import _
from harness.messages import fmt_loss, fmt_time
from harness.shell import DeferSigint
from model_config import off_sphere

DIVERGED_NATS = 1.0     # a mean train loss this far above where training started: it has diverged
DIVERGED_WINDOW = 50    # the mean is over this many steps


class Run:
    """`with Run(opts, cfg, vocab, base, folder) as run: train(..., observer=run)`;
    folder: the run's harness.cli.RunFolder."""

    def __init__(self, opts, cfg, vocab, base, folder):
        self.opts, self.cfg, self.base, self.folder = opts, cfg, base, folder
        self.history = folder.start_history(cfg, vocab)  # saved with every checkpoint
        self.tty = sys.stdout.isatty()
        self.every_line = max(1, opts.steps // 10)  # no terminal: a line every tenth of the run
        self.start = None
        self.stopped = False  # True when this observer stopped a diverging run (not the engine)
        self.state = None  # the run's state as train() last showed it: its last good step

    def __enter__(self):
        self.sigint = DeferSigint().__enter__()
        self.quiet = np.errstate(all="ignore")  # overflow becomes inf or NaN, which the rules name
        self.quiet.__enter__()
        return self

    def __exit__(self, *exc):
        self.quiet.__exit__(None, None, None)
        self.sigint.__exit__()
        if self.tty:
            print()

    @property
    def interrupted(self):
        return self.sigint.hit

    def diverged(self, error, resume=None):
        """The engine's NumericError out of train(): the last good state, .error naming
        the step; let through before any update (the model's code failed) or under a
        debugger (pdb stops post-mortem where the number broke)."""
        state = self.state or resume
        if state is None or state.step == 0 or sys.gettrace():
            raise error
        state.error = f"step {state.step + 1}: {error}"
        return state

    def before_update(self, state, loss, grad):
        self.state = state
        if self.start is None:  # the first step of this call: who the run is, where it started
            self.start = max(math.log(self.cfg.vocab_size), state.val_loss[0][1])
            if state.step == 0 and self.history.due(0):
                self.history.record(0, state.params)
        return False

    def after_update(self, state, loss, drift):
        evaluated = state.val_loss[-1][0] == state.step
        if (state.step % DIVERGED_WINDOW == 0 or evaluated) and self.exploded(state):
            self.stopped = True
            return True  # (before a checkpoint: no exploded weights are saved)
        sphere = self.cfg.norm == "sphere"
        if evaluated and sphere and not off_sphere(state.params, self.cfg) <= 1e-6:  # (NaN too)
            state.error = (f"step {state.step}: the weights are no longer on the sphere (the "
                           "updates overflowed and the retraction could not put them back)")
        elif evaluated and not math.isfinite(state.val_loss[-1][1]):
            state.error = (f"step {state.step}: val loss is {state.val_loss[-1][1]} (the weights "
                           "are no longer finite-valued)")
        if state.error:
            self.stopped = True
            return True
        if self.history.due(state.step):  # a snapshot for the planetarium
            self.history.record(state.step, state.params, drift)
        self.progress(state, loss, evaluated)
        return self.sigint.hit

    def progress(self, state, loss, evaluated):
        """A live line on a terminal (else a line every tenth of the run), a line that
        stays at every val loss, and with --out a checkpoint then."""
        eta = (state.steps - state.step) * state.ms_per_step / 1000
        line = _("step {step:4d}/{steps} | loss {loss} | {ms} ms/step | ETA {eta}").format(
            step=state.step, steps=state.steps, loss=fmt_loss(loss),
            ms=f"{state.ms_per_step:.2f}", eta=fmt_time(eta))
        if evaluated:  # val loss beside the baselines it should beat
            base = ", ".join(f"{name} {self.base[name]:.4f}"
                             for name in ("bigram", "unigram", "uniform"))
            print(("\r" if self.tty else "") + line + _(" | val loss {val} ({base})").format(
                val=fmt_loss(state.val_loss[-1][1]), base=base), flush=True)
            if self.opts.out:
                self.folder.save(state)
        elif self.tty:  # a live line, overwritten in place
            print("\r" + line + "   ", end="", flush=True)
        elif state.step % self.every_line == 0:
            print(line, flush=True)

    def exploded(self, state):
        """The mean train loss of the last DIVERGED_WINDOW steps is DIVERGED_NATS above
        the start (log V, or the first val loss if worse): worse than guessing. (Not the
        val loss: on a tiny corpus overfitting can lift that above uniform.)"""
        recent = state.train_loss[-DIVERGED_WINDOW:]
        mean = sum(recent) / len(recent)
        if mean <= self.start + DIVERGED_NATS:
            return False
        state.error = (f"step {state.step}: the mean train loss of the last {len(recent)} steps is "
                       f"{mean:.4g}, more than {DIVERGED_NATS:g} nat above where training started "
                       f"({self.start:.4f}: the uniform baseline log({self.cfg.vocab_size}) or the "
                       "initial val loss, whichever is higher); the loss exploded")
        return True
