"""harness/signals.py -- Ctrl-C, SIGTERM and SIGHUP: every phase of a run stops cleanly, and a debugger keeps Ctrl-C.

Three phases, three behaviours, all ending with one line and exit 130 (harness/errors.py):
    starting up     quiet_startup: while the modules load, a signal ends the program at once (nothing to save)
    running         stop_with_keyboard_interrupt: a signal raises KeyboardInterrupt, so every `with` block
                    unwinds (the --out folder's lock is released) and the command line says what was kept
    training        DeferSigint: the first signal only sets a flag, so the optimizer step in progress finishes,
                    the state stays consistent and the run saves it; a second one interrupts at once

Under a debugger (python -m pdb microgpt.py) Ctrl-C is the debugger's: it breaks into the (Pdb) prompt with
the program's state to inspect, and `c` continues, as for any Python program. So SIGINT is never taken from a
debugger (debugger_owns_sigint). A signal the parent process set to be ignored (nohup ignores SIGHUP) stays
ignored.
"""
import os
import signal
import sys
import threading

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def _quiet_exit(signum, frame):
    os.write(2, b"\nmicrogpt: interrupted while starting; nothing was written\n")
    os._exit(130)


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


def debugger_owns_sigint():
    """True while a debugger runs this program: a trace function is set (pdb stepping, or stopping at
    breakpoints), or SIGINT has a handler that is neither Python's default nor one of ours (pdb installs its
    own when told to continue)."""
    handler = signal.getsignal(signal.SIGINT)
    ours = handler in (signal.default_int_handler, _quiet_exit, _raise_keyboard_interrupt, signal.SIG_DFL) or \
        isinstance(getattr(handler, "__self__", None), DeferSigint)
    return sys.gettrace() is not None or not ours


def _takeable(sig):
    """May this program handle `sig` now? Only in the main thread (Python delivers signals there), not a signal
    the parent process set to be ignored, and not SIGINT while a debugger owns it."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(sig) == signal.SIG_IGN:
        return False
    return not (sig == signal.SIGINT and debugger_owns_sigint())


def quiet_startup():
    """Until the command line takes over: a signal ends the program with one line and exit 130 (no traceback
    from inside `import numpy`). Call it first thing, before the imports that take a moment."""
    for sig in SIGNALS:
        if _takeable(sig):
            signal.signal(sig, _quiet_exit)


def stop_with_keyboard_interrupt():
    """From here on a signal raises KeyboardInterrupt where the program is, so `with` blocks unwind (locks are
    released) and the command line reports it (exit 130). Returns the handlers it replaced (for restore())."""
    return {sig: signal.signal(sig, _raise_keyboard_interrupt) for sig in SIGNALS if _takeable(sig)}


def restore(handlers):
    """Put back the handlers that stop_with_keyboard_interrupt replaced (main() may run inside a larger program)."""
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


class DeferSigint:
    """The first Ctrl-C (or SIGTERM, or SIGHUP: a closed terminal) only sets a flag, so the step in progress
    finishes, the state stays consistent and the caller can save it; a second one interrupts at once.
    (Ctrl-C is left to a debugger if one runs the program: see the module's docstring.)"""

    def __init__(self):
        self.hit = False
        self.old = {}

    def __enter__(self):
        self.old = {sig: signal.signal(sig, self._handler) for sig in SIGNALS if _takeable(sig)}
        return self

    def _handler(self, signum, frame):
        self.hit = True
        self._restore()  # a second signal acts immediately

    def _restore(self):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        self.old = {}

    def __exit__(self, *exc):
        self._restore()
        return False
