"""harness/errors.py -- what can go wrong in a program of the project, the exit code each kind gets, and text.

    0    ok
    1    training diverged: a NaN/inf loss or gradient, a finite loss that exploded, or the engine's own
         numeric failure (value.NumericError); the step is named, the last good checkpoint kept. (Python
         also exits 1 on an uncaught exception: a bug in the code shows its traceback, never "diverged".)
    2    bad input: a flag, the corpus, a prompt, a checkpoint or history, a size over the memory limit, or an
         --out folder that another run is using or that holds another run's files; one line on stderr,
         nothing written
    74   an I/O error while writing: disk full, an unwritable file, standard output closed or full; one line
         naming the file and the error (74 is EX_IOERR of BSD's sysexits.h); files already written are intact
    130  interrupted by Ctrl-C, SIGTERM or SIGHUP (during training, a checkpoint is saved first and the resume
         command printed)

InputError (settings.py: the model's layer raises it too) and WriteError are what the shell (harness/shell.py)
prints as one line with their exit code; any other exception is a bug and keeps Python's traceback.
"""
from settings import InputError  # noqa: F401  (re-exported: the run's machinery raises it too)

EXIT_OK, EXIT_DIVERGED, EXIT_BAD_INPUT, EXIT_IO, EXIT_INTERRUPTED = 0, 1, 2, 74, 130


class WriteError(OSError):
    """A file could not be written (disk full, no permission, ...): names the file the user asked for, exit 74."""

    def __init__(self, path, error):
        super().__init__(error.errno, error.strerror or str(error), str(path))
        self.path = str(path)

    def __str__(self):
        return f"cannot write {as_text(repr(self.path))}: {self.strerror}"


def as_text(text):
    """Text from the user (a file name, a corpus line, a vocabulary) made safe to print or draw: characters that
    are not printable (control characters, lone surrogates from undecodable file-name bytes) become backslash
    escapes, so nothing can move the cursor, recolour the terminal or fail to encode."""
    return "".join(ch if ch.isprintable() and not "\ud800" <= ch <= "\udfff" else
                   ch.encode("unicode_escape", "backslashreplace").decode("ascii") for ch in str(text))
