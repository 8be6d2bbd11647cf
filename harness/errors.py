"""harness/errors.py -- the exit codes, WriteError, and text safe to print.

0 ok, 1 diverged (a bug also exits 1, with Python's traceback), 2 bad input, 74 a write
failed (sysexits.h's EX_IOERR), 130 interrupted: docs/running.md (Exit codes) says what
each promises. The shell (harness/shell.py) prints InputError (settings.py) and
WriteError as one line with code.
"""
from harness.i18n import _
from settings import InputError  # noqa: F401  (re-exported: the run's machinery raises it too)

EXIT_OK, EXIT_DIVERGED, EXIT_BAD_INPUT, EXIT_IO, EXIT_INTERRUPTED = 0, 1, 2, 74, 130


class WriteError(OSError):
    """A file could not be written (disk full, no permission, ...): named; exit 74."""

    def __init__(self, path, error):
        super().__init__(error.errno, error.strerror or str(error), str(path))
        self.path = str(path)

    def __str__(self):
        return _("cannot write {path}: {error}").format(path=as_text(repr(self.path)),
                                                        error=self.strerror)


def as_text(text):
    """Text from the user (a file name, a corpus line) safe to print or draw: what is
    not printable (control characters, lone surrogates from undecodable file-name bytes)
    becomes backslash escapes, so nothing moves the cursor, recolours the terminal or
    fails to encode."""
    return "".join(ch if ch.isprintable() and not "\ud800" <= ch <= "\udfff" else
                   ch.encode("unicode_escape", "backslashreplace").decode() for ch in str(text))
