"""harness/i18n.py -- the console in Japanese with `--lang ja` or a Japanese locale;
English otherwise. One gettext catalogue, po/ja.po, read as msgfmt reads it; a
broken entry, or a terminal that cannot show Japanese, stays English and says so.
The code writes English, `_("... {name} ...")`, and fills the placeholders after
translation (a translation may reorder them); N_("...") marks a text translated later.
The model's layer raises InputError in plain English (a template and its fields):
translated() words it in the console's language."""
import argparse
import ast
import contextlib
import os
import re
import sys

CATALOGUE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "po", "ja.po")
LANGUAGES = ("en", "ja")
# argparse's own messages a learner meets (harness/shell.py hands argparse our _())
ARGPARSE = ("usage: ", "options", "show this help message and exit", "unrecognized arguments: %s",
            "argument %(argument_name)s: %(message)s", "expected one argument",
            "invalid %(type)s value: %(value)r",
            "invalid choice: %(value)r (choose from %(choices)s)",
            "ambiguous option: %(option)s could match %(matches)s", "ignored explicit argument %r")
_catalogue = {}  # msgid -> msgstr of the console's language (English: none)


def _(message):
    """message in the console's language (as written when there is no translation)."""
    return _catalogue.get(message, message)


def N_(message):
    """message as it is: marks it for the catalogue, translated where it is used."""
    return message


LANG_HELP = N_("the console's language (default: ja in a Japanese locale, such as "
               "LANG=ja_JP.UTF-8; else en)")


def translated(text):
    """An InputError or a settings.Text in the console's language: its template
    translated, then its fields filled in (a Text field translated too)."""
    fields = {k: translated(v) if hasattr(v, "template") else v for k, v in text.fields.items()}
    return _(text.template).format(**fields) if fields else _(text.template)


def read_po(path, problems=None):
    """{msgid: msgstr} of a .po file as msgfmt takes it: no header, fuzzy entry or empty
    msgstr. An entry that is not one quoted msgid and msgstr, or whose placeholders
    differ, is left out too, and (its line, why) appended to `problems`."""
    messages, problems = {}, [] if problems is None else problems
    with open(path, encoding="utf-8") as f:
        for line, fuzzy, texts in _po_entries(f):
            quoted = all(isinstance(s, str) for strings in texts.values() for s in strings)
            if set(texts) != {"msgid", "msgstr"} or not quoted:
                problems.append((line, "not one msgid and one msgstr in quotes"))
                continue
            msgid, msgstr = "".join(texts["msgid"]), "".join(texts["msgstr"])
            if msgstr and _fields(msgstr) != _fields(msgid):
                problems.append((line, "its placeholders are not the msgid's"))
            elif msgid and msgstr and not fuzzy:
                messages[msgid] = msgstr
    return messages


def _po_entries(lines):
    """(line, fuzzy, {keyword: [strings]}) of each .po entry: one starts at its flags or
    at a msgid after another's text; a "..." line continues the keyword before it. A
    string that does not parse is kept as None."""
    number, fuzzy, texts, key = 0, False, {}, None
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if line.startswith("#,") or line.startswith("msgid ") and texts:
            if texts:
                yield number, fuzzy, texts
            flags = line[2:].replace(",", " ").split() if line.startswith("#,") else []
            number, fuzzy, texts = n, "fuzzy" in flags, {}
        if not line or line.startswith("#"):
            continue
        if not line.startswith('"'):
            key, _space, line = line.partition(" ")
        try:
            text = ast.literal_eval(line)
        except (SyntaxError, ValueError):
            text = None
        texts.setdefault(key, []).append(text)
        number = n if key == "msgid" else number
    if texts:
        yield number, fuzzy, texts


def _fields(text):
    """A message's placeholders: {name}, {name:spec}, argparse's %s, %r, %(name)s."""
    return sorted(re.findall(r"\{[^}]*\}|%\(\w+\)[sr]|%[sr]", text))


def language_from(argv, environ=os.environ):
    """'ja' or 'en', as argparse and GNU gettext choose: --lang as argparse parses it
    (last wins, --lan abbreviates, not after `--`), else LANGUAGE's first entry with a
    catalogue (not under the C locale), else the first of LC_ALL, LC_MESSAGES, LANG set;
    a locale's language is its code up to `_`, `.` or `@`."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument("--lang")
    try:
        flag = parser.parse_known_args(argv)[0].lang
    except argparse.ArgumentError:  # a malformed --lang: the real parser's to refuse, in a language
        flag = None
    locale = next((environ[n] for n in ("LC_ALL", "LC_MESSAGES", "LANG") if environ.get(n)), "C")
    entries = [] if _code(locale) in ("C", "POSIX") else environ.get("LANGUAGE", "").split(":")
    chosen = flag or next((e for e in entries if _code(e) in LANGUAGES), locale)
    return "ja" if _code(chosen) == "ja" else "en"


def _code(locale):
    return re.split(r"[_.@]", locale, maxsplit=1)[0]


def use(language):
    """Print in `language` ('ja'; else English) from now on. Japanese needs a terminal
    that can show it and a catalogue that reads; else English, and one line says so."""
    global _catalogue
    _catalogue = {}
    if language != "ja":
        return
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            "日本語".encode(encoding)
        except (UnicodeError, LookupError):
            return _note(f"this terminal's encoding ({encoding}) cannot show Japanese: the "
                         "messages are in English (a UTF-8 terminal shows them in Japanese)")
    problems = []
    try:
        messages = read_po(CATALOGUE, problems)
    except (OSError, UnicodeError) as e:
        return _note(f"cannot read {CATALOGUE} ({e}): the messages are in English")
    if problems:
        _note(f"{CATALOGUE}: {len(problems)} entries are left out (line {problems[0][0]}: "
              f"{problems[0][1]}...): those messages are in English")
    _catalogue = messages


def _note(text):
    with contextlib.suppress(AttributeError, OSError, ValueError):  # no stderr, or a closed one
        print(f"note: {text}", file=sys.stderr, flush=True)
