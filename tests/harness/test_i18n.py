"""harness/i18n.py: the console in Japanese with --lang ja or a Japanese locale, English by default; one gettext
catalogue (harness/locale/ja.po) that translates exactly the messages the harness wraps, placeholders kept."""
import ast
import gettext
import glob
import io
import os
import re
import subprocess
import sys

import pytest
from cli_helpers import ROOT, TINY, write_corpus

from harness import i18n


def wrapped_messages():
    """Every string literal the harness passes to _() (adjacent literals joined, as Python does)."""
    found = set()
    for path in glob.glob(os.path.join(ROOT, "harness", "*.py")):
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_" and node.args:
                assert isinstance(node.args[0], ast.Constant), f"{path}: _() of a non-literal"
                found.add(node.args[0].value)
    return found


def test_the_catalogue_translates_every_wrapped_message_and_nothing_else():
    catalogue = i18n.read_po(i18n.CATALOGUE)
    assert set(catalogue) == wrapped_messages()
    placeholders = lambda text: sorted(re.findall(r"\{[^}]*\}", text))  # noqa: E731
    for english, japanese in catalogue.items():
        assert japanese and placeholders(japanese) == placeholders(english), english
        assert re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", japanese) or english == "{prog}: error: {message}"


def test_the_catalogue_compiles_to_what_gettext_reads():
    messages = {"a": "あ", "step {step}": "ステップ {step}", "line\none": "行\n1"}
    translation = gettext.GNUTranslations(io.BytesIO(i18n.mo_bytes(messages)))
    assert all(translation.gettext(k) == v for k, v in messages.items())
    assert translation.gettext("not there") == "not there"


@pytest.mark.parametrize("argv, environ, expected", [
    ([], {}, "en"), ([], {"LANG": "ja_JP.UTF-8"}, "ja"), ([], {"LANG": "C.UTF-8"}, "en"),
    ([], {"LC_ALL": "en_US.UTF-8", "LANG": "ja_JP.UTF-8"}, "en"), ([], {"LANGUAGE": "ja", "LANG": "C"}, "ja"),
    (["--lang", "ja"], {}, "ja"), (["--lang=ja"], {"LANG": "C"}, "ja"), (["--lang", "en"], {"LANG": "ja_JP"}, "en"),
])
def test_the_language_is_the_flag_else_the_locale_else_english(argv, environ, expected):
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


def test_an_error_is_one_japanese_line(tmp_path):
    proc = run(tmp_path, "--lang", "ja", "--steps", "0")
    assert proc.returncode == 2 and proc.stdout == ""
    assert re.fullmatch(r"microgpt: エラー: --steps must be [^\n]*\n", proc.stderr), proc.stderr
    proc = run(tmp_path, "--bogus", lang="ja_JP.UTF-8")
    assert re.fullmatch(r"microgpt: エラー: unrecognized arguments: --bogus（フラグの一覧は python microgpt\.py "
                        r"--help）\n", proc.stderr), proc.stderr
