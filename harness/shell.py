"""harness/shell.py -- the shell each program runs in: signals, exit codes, errors.

    with Shell("planetarium") as shell:  # (after quiet_startup, then the imports)
        ...the program...
    return shell.exit_code

Bad input or too little memory is one line and exit 2; a failed write or a closed
standard output, one line and exit 74; Ctrl-C, SIGTERM and SIGHUP raise
KeyboardInterrupt where the program is, so every `with` block unwinds, then one line and
exit 130. Any other exception is a bug, with its traceback. A debugger keeps its Ctrl-C,
and a signal set to be ignored (nohup) stays ignored.
"""
import argparse
import contextlib
import os
import signal
import sys
import threading

from harness import _late, _quiet_exit
from harness.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_IO, EXIT_OK, WriteError
from harness.i18n import N_, _, translated
from settings import InputError

# argparse words its own messages with gettext's _ (a name in its module): the console's
# instead, so that "unrecognized arguments", "invalid choice" and "usage:" speak its
# language (i18n.ARGPARSE)
argparse._ = _
SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


def say(message):
    """One line on stderr, if it takes one (closed or full: nothing to do)."""
    with contextlib.suppress(OSError, ValueError):
        if sys.stderr is not None:
            print(message, file=sys.stderr, flush=True)


CWD_GONE = N_("the current folder no longer exists (it was deleted or moved); cd into an "
              "existing folder and run the command again")


def cwd_gone():
    try:
        os.getcwd()
        return False
    except FileNotFoundError:
        return True


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt


def _takeable(sig):
    """May this program handle `sig` now? Only in the main thread, not one set to be
    ignored, and not SIGINT under a debugger (a trace function, or pdb's handler)."""
    handler = signal.getsignal(sig)
    if threading.current_thread() is not threading.main_thread() or handler == signal.SIG_IGN:
        return False
    ours = isinstance(getattr(handler, "__self__", None), DeferSigint) or handler in (
        signal.default_int_handler, signal.SIG_DFL, _quiet_exit, _raise_keyboard_interrupt)
    return sig != signal.SIGINT or (ours and sys.gettrace() is None)


def take(handler):
    """Point each takeable signal at `handler`; returns those it replaced."""
    return {sig: signal.signal(sig, handler) for sig in SIGNALS if _takeable(sig)}


class DeferSigint:
    """The first Ctrl-C (or SIGTERM, SIGHUP) only sets a flag, so that the step in
    progress finishes and is saved; a second one interrupts at once."""

    def __init__(self):
        self.hit, self.old = False, {}

    def __enter__(self):
        self.old = take(self._handler)
        return self

    def _handler(self, signum, frame):
        self.hit = True
        self.__exit__()  # a second signal acts immediately

    def __exit__(self, *exc):
        for sig, handler in self.old.items():  # (the handlers take() replaced)
            signal.signal(sig, handler)
        self.old = {}


class Parser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line (like every other bad input) and exit 2."""

    def error(self, message):
        if message.startswith("argument ") and ": " in message:  # (Python < 3.13 leaves it English)
            name, rest = message[len("argument "):].split(": ", 1)
            message = _("argument %(argument_name)s: %(message)s") % {"argument_name": name,
                                                                      "message": rest}
        say(_("{prog}: error: {message} (python {script} --help lists the flags)").format(
            prog=self.prog.removesuffix(".py"), message=message, script=self.prog))
        sys.exit(EXIT_BAD_INPUT)


class Shell:
    """A program's `with` block (the module docstring); exit_code: the program's."""

    def __init__(self, prog):
        self.prog, self.exit_code, self.handlers = prog, EXIT_OK, {}
        self.folder = None  # a run's RunFolder, once it holds --out: a stop or a failed
        # write is then told as it sees it (what it wrote, its last good checkpoint)

    def __enter__(self):
        if sys.stdout is None:  # started with stdout closed (`>&-`): nowhere to print
            say(f"{self.prog}: error: cannot write to standard output: it is closed")
            sys.exit(EXIT_IO)
        for stream in (sys.stdout, sys.stderr):
            if hasattr(stream, "reconfigure"):
                stream.reconfigure(errors="backslashreplace")  # any text, any terminal encoding
        if cwd_gone():  # (every relative path, and os.getcwd(), would fail later, far from here)
            say(f"{self.prog}: error: {CWD_GONE}")
            sys.exit(EXIT_BAD_INPUT)
        _late["prog"] = self.prog
        self.handlers = take(_raise_keyboard_interrupt)  # the three signals now unwind to __exit__
        return self

    def __exit__(self, exc_type, exc, tb):
        _late["message"] = "interrupted while exiting; what it said above stands"
        late = DeferSigint().__enter__()  # a signal now waits for the cleanup; a second one, or
        late.old = self.handlers          # one after it, goes to the handlers from before the shell
        try:
            if exc is None:  # a full or closed stdout fails here, not at the interpreter's exit
                try:
                    sys.stdout.flush()
                except (OSError, ValueError) as e:
                    exc = e
            self.close()
        finally:
            late.__exit__()
        if exc is not None:
            code = self.report(exc)
            if code is None:
                return False  # not bad input, a write error or a signal: a bug, with its traceback
            self.exit_code = code
        if late.hit and self.exit_code == EXIT_OK:
            say(_("{prog}: interrupted while finishing; everything was written").format(
                prog=self.prog))
            self.exit_code = EXIT_INTERRUPTED
        return True

    def close(self):
        """What the program releases however it ends; nothing here (a subclass's)."""

    def interrupted(self):
        if self.folder is not None:
            return self.folder.interrupted()
        return _("interrupted; nothing was written")

    def write_failed(self, error):
        if self.folder is not None:
            return self.folder.write_failed(error)
        say(_("{prog}: error: {message}").format(prog=self.prog, message=error))
        return EXIT_IO

    def report(self, e):
        """The line for an exception ending the program, and its exit code (or None)."""
        if isinstance(e, InputError):
            say(_("{prog}: error: {message}").format(prog=self.prog, message=translated(e)))
            return EXIT_BAD_INPUT
        if isinstance(e, KeyboardInterrupt):
            say(f"\n{self.prog}: {self.interrupted()}")
            return EXIT_INTERRUPTED
        if isinstance(e, MemoryError):  # the estimates allowed it but the machine could not give it
            say(_("{prog}: error: not enough memory (an allocation failed); try a smaller model, "
                  "batch or number of samples").format(prog=self.prog))
            return EXIT_BAD_INPUT
        if isinstance(e, OSError) and e.filename:  # a file: WriteError, the lock, a temp file
            return self.write_failed(e if isinstance(e, WriteError) else WriteError(e.filename, e))
        if isinstance(e, FileNotFoundError) and cwd_gone():  # deleted while the program ran
            say(_("{prog}: error: {message}").format(prog=self.prog, message=_(CWD_GONE)))
            return EXIT_IO
        if getattr(e, "errno", None) is not None or "closed file" in str(e):  # stdout failed
            with contextlib.suppress(OSError, ValueError):  # so the exit flush cannot fail
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            if not isinstance(e, BrokenPipeError):  # a pipe's reader left on purpose: stop quietly
                say(_("{prog}: error: cannot write to standard output: {error}").format(
                    prog=self.prog, error=getattr(e, "strerror", "") or e))
            return EXIT_IO
        return None
