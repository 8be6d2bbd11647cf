"""Shared by every test file: pytest puts this folder on sys.path (for cli_helpers.py), and `-m "not slow"` (what
`python3 dev.py test --fast` runs) leaves out the tests marked slow: notebooks, browsers, subprocess loops.

A suite started in the background by a shell without job control (`cmd &` in a script) inherits SIGINT ignored,
and under nohup SIGHUP ignored, and so would every program it starts: microgpt.py rightly leaves an ignored signal
ignored, and the signal tests would see runs that cannot be stopped. The suite takes both back, for itself and
the programs it starts.

The suite checks the console's English lines (and its Japanese ones with --lang ja), so a learner's
LANG=ja_JP.UTF-8 must not switch the programs it starts: the message locale is pinned to English."""
import os
import signal

import pytest
from cli_helpers import write_corpus

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
    os.environ.pop(name, None)
os.environ["LANG"] = "C.UTF-8"


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(str(tmp_path))
