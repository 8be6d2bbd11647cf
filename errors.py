"""errors.py -- what can go wrong in a run of microgpt.py, and the exit code each kind gets.

    0    ok
    1    training diverged (a NaN/inf loss or gradient): the step is named, the last good checkpoint kept
    2    bad input: a flag, the corpus, a prompt or a checkpoint; one line on stderr, nothing written
    130  interrupted by Ctrl-C (during training, a checkpoint is saved first and the resume command printed)

Every module raises InputError for bad input it can name precisely; microgpt.main prints it as one line.
"""

EXIT_OK, EXIT_DIVERGED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


class InputError(ValueError):
    """Bad input from the user (corpus, flags, prompt, checkpoint): the CLI prints it as one line, exit 2."""
