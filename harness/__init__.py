"""harness -- the machinery around chapter 22's script: what makes a run of microgpt.py safe and pleasant.

The chapter (microgpt.py) is the dataset, the tokenizer, the model, the loss, Adam, the training loop and the
inference loop. A real run also has flags and their checks, progress with an ETA, a val loss and checkpoints,
a folder it holds while it runs, --resume, Ctrl-C that loses nothing, and exit codes. Those live here:

    errors.py       exit codes; InputError (bad input: one line, exit 2) and WriteError (exit 74)
    corpora.py      the documents: packaged name lists or a text file (chapter 22's `docs`)
    checks.py       every rule a setting obeys, written once: for a flag, a checkpoint and an API argument alike
    checkpoints.py  TrainState (everything a run needs to continue) and its .npz file, without pickle
    run_files.py    atomic writes, metrics.json, loss.png, the --out folder's lock
    signals.py      Ctrl-C (and SIGTERM, SIGHUP): finish the step, save, stop; a debugger keeps its Ctrl-C
    run.py          Run: what the training loop calls twice per step (val loss, divergence, progress)
    history.py      the snapshots a run keeps for the planetarium (planetarium.py): OUT/history.npz
    cli.py          the command line: flags, settings, messages and the exit code of `python microgpt.py`

Nothing here imports microgpt.py; the chapter hands over what the machinery needs (its tokenizer and init).
"""
