"""Shared by every test file: pytest puts this folder on sys.path (for cli_helpers.py), and `-m "not slow"` (what
`python3 dev.py test --fast` runs) leaves out the tests marked slow: notebooks, browsers, subprocess loops."""
import pytest
from cli_helpers import write_corpus


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(str(tmp_path))
