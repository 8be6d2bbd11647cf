"""harness/errors.py -- the exit codes (docs/running.md says what each promises),
WriteError, and text safe to print."""
from harness.i18n import _
from settings import InputError  # noqa: F401  (re-exported: the run's machinery raises it too)

EXIT_OK, EXIT_DIVERGED, EXIT_BAD_INPUT, EXIT_IO, EXIT_INTERRUPTED = 0, 1, 2, 74, 130


class WriteError(OSError):
    """A file could not be written (disk full, no permission, ...): named; exit 74."""

    def __init__(self, path, error):
        super().__init__(error.errno, error.strerror or str(error), str(path))

    def __str__(self):
        return _("cannot write {path}: {error}").format(path=as_text(repr(self.filename)),
                                                        error=self.strerror)


def as_text(text):
    """Text from the user (a file name, a corpus line) safe to print: control characters
    and lone surrogates become backslash escapes (no cursor move, no encoding error)."""
    return "".join(ch if ch.isprintable() and not "\ud800" <= ch <= "\udfff" else
                   ch.encode("unicode_escape", "backslashreplace").decode() for ch in str(text))
