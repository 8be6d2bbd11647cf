"""corpora.py: the documents a run trains on; a corpus file is measured before it is read, split at
newlines only, and a bad name or file is one line."""
import time

from cli_helpers import TINY, one_clean_line, peak_rss_mb, run, write_corpus

import microgpt as mg
from harness.errors import EXIT_BAD_INPUT


def test_an_endless_or_huge_corpus_is_refused_before_it_is_read(tmp_path, capsys):
    code, _, err = run(capsys, TINY + ["--corpus", "/dev/zero"])
    assert code == EXIT_BAD_INPUT and "larger than 64 MiB" in err
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
    t0 = time.monotonic()
    code, err, peak = peak_rss_mb(["--corpus", str(path), "--max-memory", "0.1"])
    assert code == EXIT_BAD_INPUT and "20,971,521 lines" in err
    one_clean_line(err)
    assert time.monotonic() - t0 < 30 and peak < 400, peak  # (was 17-20 s and 1.1 GB)

def test_an_empty_corpus_name_is_called_empty(capsys):
    code, _, err = run(capsys, TINY + ["--corpus", ""])
    assert code == EXIT_BAD_INPUT and "--corpus must be a non-empty path, got ''" in err and "directory" not in err
