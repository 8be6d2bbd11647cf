"""harness/errors.py -- each way a program ends and its exit code, WriteError, text safe to print.

    0    ok
    1    training diverged (a NaN/inf loss or gradient, an exploding loss, value.NumericError); Python also
         exits 1 on an uncaught exception: a bug shows its traceback, never "diverged"
    2    bad input (a flag, a corpus, a checkpoint, a size over the memory limit, an --out folder in use or
         holding another run's files): one line on stderr, nothing written
    74   an I/O error while writing (disk full, standard output closed or full; 74 is sysexits.h's EX_IOERR)
    130  interrupted by Ctrl-C, SIGTERM or SIGHUP (training saves a checkpoint first)

The shell (harness/shell.py) prints InputError (settings.py) and WriteError as one line with their
code.
"""
from settings import InputError  # noqa: F401  (re-exported: the run's machinery raises it too)

EXIT_OK, EXIT_DIVERGED, EXIT_BAD_INPUT, EXIT_IO, EXIT_INTERRUPTED = 0, 1, 2, 74, 130


class WriteError(OSError):
    """A file could not be written (disk full, no permission, ...): it names the file; exit 74."""

    def __init__(self, path, error):
        super().__init__(error.errno, error.strerror or str(error), str(path))
        self.path = str(path)

    def __str__(self):
        return f"cannot write {as_text(repr(self.path))}: {self.strerror}"


def as_text(text):
    """Text from the user (a file name, a corpus line) safe to print or draw: what is not printable
    (control characters, lone surrogates from undecodable file-name bytes) becomes backslash escapes,
    so nothing moves the cursor, recolours the terminal or fails to encode."""
    return "".join(ch if ch.isprintable() and not "\ud800" <= ch <= "\udfff" else
                   ch.encode("unicode_escape", "backslashreplace").decode("ascii") for ch in str(text))
