"""harness/errors.py: text from the user (a corpus line, a file name) made safe to print and draw."""
from cli_helpers import TINY, run, write_corpus

from harness.errors import EXIT_OK


def test_control_characters_of_a_corpus_are_printed_as_escapes(tmp_path, capsys):
    text = "".join(f"a\x07b{c}\x1b[31m\n" for c in "cdefghijkl")  # BEL, ESC: a name could ring and recolour
    corpus = write_corpus(str(tmp_path), text)
    code, out, _ = run(capsys, TINY + ["--corpus", corpus, "--steps", "30", "--num-samples", "30",
                                       "--temperature", "2.0"])
    assert code == EXIT_OK and "\x07" not in out and "\x1b" not in out
    assert "\\x07" in out or "\\x1b" in out
