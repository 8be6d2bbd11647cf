"""harness/shell.py -- the one shell every program of the project runs in: signals, exit codes, one-line errors.

    quiet_startup("planetarium")          # harness/__init__.py: a Ctrl-C while NumPy loads is one line, exit 130
    ...imports...
    with Shell("planetarium") as shell:   # the program
        ...
    return shell.exit_code

Inside the shell (the exit codes are harness/errors.py's):
  * bad input (InputError) is one line on stderr and exit 2; not enough memory, the same;
  * a file that cannot be written (WriteError), or standard output closed, full or broken, is one line and
    exit 74 (a reader that left a pipe on purpose: quietly);
  * Ctrl-C, SIGTERM and SIGHUP raise KeyboardInterrupt where the program is, so every `with` block unwinds
    (the --out folder is released, a half-written temp file removed) and the shell says so: exit 130. A signal
    during the shell's own cleanup waits for it, then counts as an interruption;
  * standard output and error print any text: a character the terminal's encoding lacks becomes an escape;
  * any other exception is a bug: Python's own traceback, at its line.

Training defers signals further (DeferSigint): the first one only sets a flag, so the step in progress
finishes and the run saves it; a second one interrupts at once. Under a debugger (python -m pdb microgpt.py)
Ctrl-C is the debugger's: it breaks into the (Pdb) prompt, and `c` continues, as for any Python program, so
SIGINT is never taken from a debugger. A signal the parent set to be ignored (nohup: SIGHUP) stays ignored.
A program with more to say (microgpt.py: what was saved, how to resume) subclasses Shell (harness/cli.py).
"""
import argparse
import os
import signal
import sys
import threading

from harness import _late, _quiet_exit
from harness.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_IO, EXIT_OK, InputError, WriteError

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def say(message):
    """One line on stderr, if there is a stderr to write to (closed, or a full device: nothing more to do)."""
    try:
        if sys.stderr is not None:
            print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


def debugger_owns_sigint():
    """True while a debugger runs this program: a trace function is set (pdb stepping, or stopping at
    breakpoints), or SIGINT has a handler that is neither Python's default nor one of ours (pdb installs its
    own when told to continue)."""
    handler = signal.getsignal(signal.SIGINT)
    ours = handler in (signal.default_int_handler, _quiet_exit, _raise_keyboard_interrupt, signal.SIG_DFL) or \
        isinstance(getattr(handler, "__self__", None), (DeferSigint, Shell))
    return sys.gettrace() is not None or not ours


def _takeable(sig):
    """May this program handle `sig` now? Only in the main thread (Python delivers signals there), not a signal
    the parent process set to be ignored, and not SIGINT while a debugger owns it."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(sig) == signal.SIG_IGN:
        return False
    return not (sig == signal.SIGINT and debugger_owns_sigint())


def take(handler):
    """Point every takeable signal at `handler`; returns the handlers replaced (for restore)."""
    return {sig: signal.signal(sig, handler) for sig in SIGNALS if _takeable(sig)}


def restore(handlers):
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


class DeferSigint:
    """The first Ctrl-C (or SIGTERM, or SIGHUP: a closed terminal) only sets a flag, so the step in progress
    finishes, the state stays consistent and the caller can save it; a second one interrupts at once."""

    def __init__(self):
        self.hit, self.old = False, {}

    def __enter__(self):
        self.old = take(self._handler)
        return self

    def _handler(self, signum, frame):
        self.hit = True
        self.__exit__()  # a second signal acts immediately

    def __exit__(self, *exc):
        restore(self.old)
        self.old = {}
        return False


class Parser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line (like every other bad input) and exit 2, not the usage and an error."""

    def error(self, message):
        say(f"{self.prog.removesuffix('.py')}: error: {message} (python {self.prog} --help lists the flags)")
        sys.exit(EXIT_BAD_INPUT)


class Shell:
    """A program's `with` block: see the module docstring. exit_code is the program's exit code."""

    def __init__(self, prog):
        self.prog, self.exit_code, self.handlers = prog, EXIT_OK, {}

    def __enter__(self):
        if sys.stdout is None:  # started with stdout closed (`>&-`): nowhere to print
            say(f"{self.prog}: error: cannot write to standard output: it is closed")
            sys.exit(EXIT_IO)
        for stream in (sys.stdout, sys.stderr):
            if hasattr(stream, "reconfigure"):
                stream.reconfigure(errors="backslashreplace")  # any text prints, on any terminal encoding
        _late["prog"] = self.prog
        self.handlers = take(_raise_keyboard_interrupt)  # Ctrl-C, SIGTERM, SIGHUP now unwind to __exit__
        return self

    def __exit__(self, exc_type, exc, tb):
        hit = []
        take(lambda signum, frame: hit.append(signum))  # a signal now waits until the cleanup is done
        try:
            if exc is None:
                exc = self._flush()  # a full or closed standard output fails here, not at the interpreter's exit
            self.close()
        finally:
            _late["message"] = "interrupted while exiting; its work was done"
            restore(self.handlers)
        if exc is not None:
            code = self.report(exc)
            if code is None:
                return False  # not bad input, a write error or a signal: a bug, with Python's traceback
            self.exit_code = code
        if hit and self.exit_code == EXIT_OK:
            say(f"{self.prog}: {self.interrupted_at_the_end()}")
            self.exit_code = EXIT_INTERRUPTED
        return True

    @staticmethod
    def _flush():
        try:
            sys.stdout.flush()
        except (OSError, ValueError) as e:
            return e
        return None

    def close(self):
        """What the program releases however it ends (a subclass's --out folder); nothing here."""

    def interrupted(self):
        return "interrupted; nothing was written"

    def interrupted_at_the_end(self):
        return "interrupted while finishing; everything was written"

    def write_failed(self, error):
        say(f"{self.prog}: error: {error}")
        return EXIT_IO

    def report(self, e):
        """The one line for an exception that ends the program, and its exit code; None for anything else."""
        if isinstance(e, InputError):
            say(f"{self.prog}: error: {e}")
            return EXIT_BAD_INPUT
        if isinstance(e, WriteError):
            return self.write_failed(e)
        if isinstance(e, KeyboardInterrupt):
            say(f"\n{self.prog}: {self.interrupted()}")
            return EXIT_INTERRUPTED
        if isinstance(e, MemoryError):  # the estimates were within the limits, but the machine could not give it
            say(f"{self.prog}: error: not enough memory (an allocation failed); try a smaller model, batch or "
                "number of samples")
            return EXIT_BAD_INPUT
        if isinstance(e, OSError) and e.filename:  # a file of the run (the folder's lock, a temp file)
            return self.write_failed(WriteError(e.filename, e))
        if isinstance(e, (OSError, ValueError)) and _is_stdout_error(e):  # a closed pipe, a full device
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail
            except (OSError, ValueError):
                pass
            if not isinstance(e, BrokenPipeError):  # the reader of a pipe left on purpose: stop quietly
                say(f"{self.prog}: error: cannot write to standard output: {getattr(e, 'strerror', None) or e}")
            return EXIT_IO
        return None


def _is_stdout_error(e):
    """An error of writing to standard output (it carries an errno, or stdout's file is closed)."""
    return getattr(e, "errno", None) is not None or "closed file" in str(e)
