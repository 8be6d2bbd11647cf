"""harness/errors.py -- what can go wrong in a run of microgpt.py, and the exit code each kind gets.

    0    ok
    1    training diverged: a NaN/inf loss or gradient, a finite loss that exploded, or the engine's own
         numeric failure (value.NumericError); the step is named, the last good checkpoint kept. (Python
         also exits 1 on an uncaught exception: a bug in the code shows its traceback, never "diverged".)
    2    bad input: a flag, the corpus, a prompt, a checkpoint, a size over the memory limit, or an --out folder
         another run is using; one line on stderr, nothing written
    74   an I/O error while writing: disk full, an unwritable file, standard output closed or full; one line
         naming the file and the error (74 is EX_IOERR of BSD's sysexits.h); files already written are intact
    130  interrupted by Ctrl-C, SIGTERM or SIGHUP (during training, a checkpoint is saved first and the resume
         command printed)

Every module raises InputError for bad input it can name precisely, and WriteError when a file cannot be
written; harness/cli.py's Command prints either as one line and sets the exit code. No traceback reaches the
user for these; any other exception is a bug and keeps Python's traceback.
"""

EXIT_OK, EXIT_DIVERGED, EXIT_BAD_INPUT, EXIT_IO, EXIT_INTERRUPTED = 0, 1, 2, 74, 130


class InputError(ValueError):
    """Bad input from the user (corpus, flags, prompt, checkpoint): the CLI prints it as one line, exit 2."""


class WriteError(OSError):
    """A file could not be written (disk full, no permission, ...): names the file the user asked for, exit 74."""

    def __init__(self, path, error):
        super().__init__(error.errno, error.strerror or str(error), str(path))
        self.path = str(path)

    def __str__(self):
        return f"cannot write {self.path!r}: {self.strerror}"
