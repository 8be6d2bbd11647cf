"""harness/i18n.py: the console in Japanese with --lang ja or a Japanese locale, English by default; one
gettext catalogue (harness/po/ja.po) that translates exactly the messages the project wraps, placeholders
kept: the harness's _() and N_(), and the model layer's English InputError and Text templates."""
import ast
import glob
import io
import os
import re
import subprocess
import sys

import pytest
from cli_helpers import ROOT, TINY, edit_npz, write_corpus

import microgpt as mg
from harness import i18n
from harness.checkpoints import save_checkpoint
from harness.errors import EXIT_BAD_INPUT
from settings import SETTINGS


def wrapped_messages():
    """Every string literal the project passes to _() or N_(), or (outside experiments/) as the template
    of InputError() or Text() (adjacent literals joined, as Python does; either branch of an `if`), the
    argparse messages i18n.ARGPARSE names, and the settings table's help texts, group names and rules."""
    found = set(i18n.ARGPARSE) | {t for row in SETTINGS for t in (row.help, row.group, row.rule.says)}
    for path in [p for folder in ("", "harness", "experiments") for p in glob.glob(os.path.join(ROOT, folder, "*.py"))]:
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            template = getattr(node, "func", None) and getattr(node.func, "id", None) in ("InputError", "Text")
            if template and "experiments" not in path and not isinstance(node.args[0], ast.Call):
                first = node.args[0]  # English: translated() words it as it is printed
                assert not isinstance(first, ast.BinOp), f"{path}: a template made with +: {{where}} it"
                branches = [first.body, first.orelse] if isinstance(first, ast.IfExp) else [first]
                found |= {b.value for b in branches if isinstance(b, ast.Constant)}
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("_", "N_") and node.args:
                if isinstance(node.args[0], ast.Constant):
                    found.add(node.args[0].value)
                else:  # _(rule.says), _(what): a text marked N_("...") where it was written
                    assert not isinstance(node.args[0], (ast.JoinedStr, ast.BinOp)), f"{path}: _() of a text made"
    return found


def placeholders(text):
    """The fields a message fills in: {name}, {name:spec}, and argparse's %s, %r, %(name)s."""
    return sorted(re.findall(r"\{[^}]*\}|%\(\w+\)[sr]|%[sr]", text))


def test_the_catalogue_translates_every_wrapped_message_and_nothing_else():
    catalogue = i18n.read_po(i18n.CATALOGUE)
    assert set(catalogue) == wrapped_messages(), set(catalogue) ^ wrapped_messages()
    for english, japanese in catalogue.items():
        assert japanese and placeholders(japanese) == placeholders(english), english
        assert re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", japanese) or english == "{prog}: error: {message}"


BROKEN_PO = r"""msgid ""
msgstr "Content-Type: text/plain; charset=UTF-8\n"

#, fuzzy
msgid "options"
msgstr "オプション"

msgid "usage: "
msgstr ""

msgid "show this help message and exit"
msgstr "このヘルプを表示して終わります

msgid "{prog}: error: {message}"
msgstr "{prog}: エラー: {messages}"

msgid "expected one argument"
msgstr "引数が1つ必要です"
"""


@pytest.fixture
def broken_catalogue(tmp_path, monkeypatch):
    (tmp_path / "ja.po").write_text(BROKEN_PO, encoding="utf-8")
    monkeypatch.setattr(i18n, "CATALOGUE", str(tmp_path / "ja.po"))
    yield str(tmp_path / "ja.po")
    i18n.use("en")


def test_the_catalogue_is_read_as_msgfmt_reads_it(broken_catalogue):
    """A fuzzy entry and an empty msgstr are not translations; an unterminated string and a placeholder the
    msgid does not have leave their entry out, each a problem with its line."""
    problems = []
    assert i18n.read_po(broken_catalogue, problems) == {"expected one argument": "引数が1つ必要です"}
    assert problems == [(11, "not one msgid and one msgstr in quotes"), (14, "its placeholders are not the msgid's")]


def test_a_broken_catalogue_falls_back_to_english_in_one_line(broken_catalogue, capsys):
    i18n.use("ja")
    assert [i18n._(m) for m in ("options", "usage: ", "{prog}: error: {message}", "expected one argument")] == \
        ["options", "usage: ", "{prog}: error: {message}", "引数が1つ必要です"]
    err = capsys.readouterr().err
    assert err == f"note: {broken_catalogue}: 2 entries are left out (line 11: not one msgid and one msgstr in " \
                  "quotes...): those messages are in English\n"


def test_a_terminal_that_cannot_show_japanese_gets_english_and_one_line_why(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    try:
        i18n.use("ja")
        assert i18n._("options") == "options"
    finally:
        i18n.use("en")
    assert capsys.readouterr().err == ("note: this terminal's encoding (ascii) cannot show Japanese: the messages "
                                       "are in English (a UTF-8 terminal shows them in Japanese)\n")


@pytest.mark.slow
def test_help_on_an_ascii_terminal_is_english_without_escapes(tmp_path):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "microgpt.py"), "--lang", "ja", "--help"],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                          env={**environ, "LANG": "C.UTF-8", "PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0 and proc.stdout.startswith("usage: microgpt.py") and "\\u" not in proc.stdout
    assert proc.stderr.count("\n") == 1 and "cannot show Japanese" in proc.stderr, proc.stderr


@pytest.mark.parametrize("argv, environ, expected", [
    ([], {}, "en"), ([], {"LANG": "ja_JP.UTF-8"}, "ja"), ([], {"LANG": "C.UTF-8"}, "en"),
    ([], {"LC_ALL": "en_US.UTF-8", "LANG": "ja_JP.UTF-8"}, "en"), ([], {"LANGUAGE": "ja", "LANG": "C"}, "en"),
    (["--lang", "ja"], {}, "ja"), (["--lang=ja"], {"LANG": "C"}, "ja"), (["--lang", "en"], {"LANG": "ja_JP"}, "en"),
])
def test_the_language_is_the_flag_else_the_locale_else_english(argv, environ, expected):
    assert i18n.language_from(argv, environ) == expected


@pytest.mark.parametrize("argv, environ, expected", [
    (["--lang", "ja", "--lang", "en"], {}, "en"), (["--lan", "ja"], {}, "ja"),  # argparse: last wins, abbreviations
    (["--out", "x", "--", "--lang=ja"], {}, "en"),  # after --: a word, not the flag
    ([], {"LANGUAGE": "fr:ja", "LANG": "fr_FR.UTF-8"}, "ja"),  # the first entry with a catalogue
    ([], {"LANGUAGE": "ja", "LC_ALL": "C"}, "en"),  # GNU gettext ignores LANGUAGE under the C locale
    ([], {"LANGUAGE": "jav", "LANG": "en_US.UTF-8"}, "en"), ([], {"LANG": "jav_ID"}, "en"),  # Javanese
    ([], {"LANG": "ja.UTF-8"}, "ja"), ([], {"LANG": "ja@cjknarrow"}, "ja"),
])
def test_the_language_is_chosen_as_argparse_and_gettext_choose_it(argv, environ, expected):
    assert i18n.language_from(argv, environ) == expected


def run(tmp_path, *flags, lang="C.UTF-8"):
    corpus = write_corpus(str(tmp_path))
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
    return subprocess.run([sys.executable, os.path.join(ROOT, "microgpt.py"), *TINY, "--corpus", corpus,
                           "--steps", "20", "--eval-every", "10", *flags], cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=120, env={**environ, "LANG": lang, "PYTHONIOENCODING": "utf-8"})


@pytest.mark.parametrize("how", ["--lang ja", "LANG=ja_JP.UTF-8"])
def test_a_run_speaks_japanese_when_asked(tmp_path, how):
    proc = run(tmp_path, "--lang", "ja") if how == "--lang ja" else run(tmp_path, lang="ja_JP.UTF-8")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("コーパス ") and "文書 15 件（学習 14 / 検証 1）、語彙サイズ 23（22 文字 + BOS）" in lines[0]
    assert lines[1].startswith("モデル: ") and lines[2].startswith("ベースライン（検証損失）: ")
    assert re.search(r"^ステップ   10/20 \| 損失 [\d.]+ \| [\d.]+ ms/ステップ \| 残り 0m\d\ds \| 検証損失 ", proc.stdout,
                     flags=re.M)
    assert re.search(r"^結果: 学習損失 [\d.]+（最後の 20 ステップの平均）、検証損失 ", proc.stdout, flags=re.M)
    assert "--- 推論（モデルが新しく作ったサンプル。温度 0.5）---" in proc.stdout and "サンプル  1: " in proc.stdout


def test_english_is_the_default(tmp_path):
    proc = run(tmp_path)
    assert proc.stdout.startswith("corpus ") and "\nfinal: train loss " in proc.stdout
    assert "--- inference (new, hallucinated samples; temperature 0.5) ---" in proc.stdout


# a bad flag, an argparse error, a corpus, a model's sizes, --out and a checkpoint whose config the
# model refuses: the whole line in Japanese with --lang ja, and the English line with --lang en
BAD_INPUTS = [
    (["--steps", "0"], "--steps は正の整数（2**53 = 9,007,199,254,740,992 以下）でなければなりません（指定された値: 0）",
     "--steps must be a positive integer (at most 2**53 = 9,007,199,254,740,992), got 0"),
    (["--lr", "-1"], "--lr は正の数でなければなりません（指定された値: -1.0）", "--lr must be a positive number, got -1.0"),
    (["--steps", "abc"], "引数 --steps: int として読めない値です: 'abc'（フラグの一覧は python microgpt.py --help）",
     "argument --steps: invalid int value: 'abc' (python microgpt.py --help lists the flags)"),
    (["--norm", "cube"], "引数 --norm: 選べない値です: 'cube'（'rmsnorm', 'sphere' から選んでください）（フラグの一覧は "
     "python microgpt.py --help）", "argument --norm: invalid choice: 'cube' (choose from 'rmsnorm', 'sphere') "
     "(python microgpt.py --help lists the flags)"),
    (["--bogus"], "知らない引数です: --bogus（フラグの一覧は python microgpt.py --help）",
     "unrecognized arguments: --bogus (python microgpt.py --help lists the flags)"),
    (["--n-head", "3"], "埋め込み次元 n_embd（8）はヘッド数 n_head（3）で割り切れなければなりません",
     "n_embd (8) must be divisible by n_head (3)"),
    (["--corpus", "nowhere.txt"], "コーパスのファイル '{tmp}/nowhere.txt' が見つかりません（組み込みのコーパス: 'names', "
     "'jp-names', 'shakespeare'）",
     "corpus file '{tmp}/nowhere.txt' not found (built-in corpora: 'names', 'jp-names', 'shakespeare')"),
    (["--out", "names.txt"], "--out 'names.txt' は既にあり、フォルダではありません",
     "--out 'names.txt' exists and is not a folder"),
    (["--sample-only"], "--sample-only には --checkpoint PATH が必要です", "--sample-only needs --checkpoint PATH"),
    (["--resume", "--checkpoint", "bad.npz"], "チェックポイント 'bad.npz' は互換性がないか、不完全です: 設定: "
     "埋め込み次元 n_embd（8）はヘッド数 n_head（3）で割り切れなければなりません",
     "checkpoint 'bad.npz' is incompatible or incomplete: its config: n_embd (8) must be divisible by n_head (3)"),
]


def write_bad_checkpoint(folder):
    """bad.npz: a checkpoint whose config claims 3 heads for an n_embd of 8."""
    words = ["anna", "bob", "carla", "dave", "eve"]
    vocab = mg.build_vocab(words)
    cfg = mg.GPTConfig(len(vocab) + 1, n_embd=8, n_head=2, block_size=8)
    state = mg.train(words[:4], words[4:], vocab, cfg, steps=2, engine="numpy", eval_every=2)
    save_checkpoint(os.path.join(folder, "bad.npz"), state)
    edit_npz(os.path.join(folder, "bad.npz"), config={"n_head": 3})


@pytest.mark.parametrize("flags, japanese, english", BAD_INPUTS, ids=[" ".join(c[0]) for c in BAD_INPUTS])
def test_bad_input_is_one_line_in_japanese_and_the_same_english_line_without(tmp_path, flags, japanese, english):
    tmp = os.path.realpath(str(tmp_path))
    write_bad_checkpoint(tmp)
    for lang, prefix, expected in (("--lang=ja", "microgpt: エラー: ", japanese), ("--lang=en", "microgpt: error: ",
                                                                                    english)):
        proc = run(tmp_path, lang, *flags)
        assert proc.returncode == EXIT_BAD_INPUT and proc.stdout == "", proc.stderr
        assert proc.stderr == prefix + expected.format(tmp=tmp) + "\n", proc.stderr


def test_help_and_a_locale_error_speak_japanese(tmp_path):
    proc = run(tmp_path, "--lang", "ja", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("使い方: microgpt.py [-h]"), proc.stdout[:200]
    assert "\nモデル:\n  --n-embd N            埋め込み次元 C（既定値 16）\n" in proc.stdout, proc.stdout
    proc = run(tmp_path, "--bogus", lang="ja_JP.UTF-8")
    assert re.fullmatch(r"microgpt: エラー: 知らない引数です: --bogus（フラグの一覧は python microgpt\.py "
                        r"--help）\n", proc.stderr), proc.stderr


def test_the_planetarium_speaks_japanese_when_asked(tmp_path):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
    for lang, line in (("ja", "planetarium: エラー: 実行のフォルダ 'nowhere' が見つかりません\n"),
                       ("en", "planetarium: error: run folder 'nowhere' not found\n")):
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "planetarium.py"), "--lang", lang, "nowhere"],
                              cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                              env={**environ, "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"})
        assert proc.returncode == 2 and proc.stderr == line, proc.stderr
