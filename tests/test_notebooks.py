"""The companion notebooks: each runs top to bottom without error, and each
committed .ipynb matches its source in notebooks/src/ (so nobody edits one
without the other; regenerate with `python3 notebooks/build.py`). The shape every
notebook shares (a まとめ, a self-check with folded answers, exercises with graded
hints and check cells) and the helpers they use (figures.slider_figure) are checked too."""

import importlib.util
import re
import sys
from pathlib import Path

import nbformat
import pytest

NB_DIR = Path(__file__).resolve().parent.parent / "notebooks"
_spec = importlib.util.spec_from_file_location("nb_build", NB_DIR / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

SOURCES = build.sources()
IDS = [p.stem for p in SOURCES]


def test_all_six_notebooks_are_there():
    assert [p.stem[:2] for p in SOURCES] == ["01", "02", "03", "04", "05", "06"], [
        p.name for p in SOURCES
    ]


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_committed_notebook_matches_source(src):
    ipynb = NB_DIR / (src.stem + ".ipynb")
    assert ipynb.exists(), f"{ipynb.name} is missing: run python3 notebooks/build.py {src.stem}"
    committed = nbformat.read(ipynb, as_version=4)
    fresh = build.to_notebook(src)
    got = [(c.cell_type, c.source) for c in committed.cells]
    want = [(c.cell_type, c.source) for c in fresh.cells]
    assert got == want, (
        f"{ipynb.name} is out of date with {src.name}: run python3 notebooks/build.py {src.stem}"
    )


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_committed_notebook_has_outputs_and_no_errors(src):
    nb = nbformat.read(NB_DIR / (src.stem + ".ipynb"), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code), "committed without executing"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    assert not missing_glyphs(nb), missing_glyphs(nb)
    # executed headless (build.py sets NOTEBOOK_STATIC): static figures, no widget views or widget
    # state
    assert "widgets" not in nb.metadata
    views = [o for c in code for o in c.outputs
             if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert not views, f"{len(views)} widget views committed"


def missing_glyphs(nb):
    """matplotlib's warnings that a character of a figure's text has no glyph in the font (it
    renders as a box)."""
    return [o.text.strip() for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if o.output_type == "stream" and "missing from font" in o.text]


# Where a reader's kernel may start: notebooks/ (as build.py runs it, and Jupyter opened on the
# file) and the repository root (`jupyter lab` started there). Each notebook must find value.py and
# exercises.py from both.
WORKING_DIRECTORIES = {"notebooks/": NB_DIR, "repository root": NB_DIR.parent}


@pytest.mark.slow
@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_notebook_executes_from_both_working_directories(src):
    # Two fresh kernels, one per working directory, run every cell of the source at the same time
    # (kernels are processes of their own, so the second pass costs little wall time on two cores);
    # nbclient raises CellExecutionError on any error in either.
    jobs = [(build.to_notebook(src), cwd) for cwd in WORKING_DIRECTORIES.values()]
    for where, nb in zip(WORKING_DIRECTORIES, build.execute_all(jobs)):
        # Figure text is Japanese (matplotlib-fontja's IPAexGothic): every character must have a
        # glyph.
        assert not missing_glyphs(nb), (where, missing_glyphs(nb))


@pytest.mark.slow
def test_a_notebook_that_needs_its_folder_fails_from_the_root():
    # The two-folder test must be able to fail: a cell that imports exercises.py without putting
    # notebooks/ on sys.path (as 01, 03 and 04 once did) works from notebooks/ (the working
    # directory is on sys.path) but not from the root.
    nb = build.nbformat.v4.new_notebook(cells=[build.nbformat.v4.new_code_cell("import exercises")])
    with pytest.raises(Exception, match="ModuleNotFoundError"):
        build.execute(nb, cwd=WORKING_DIRECTORIES["repository root"])


@pytest.mark.slow
def test_a_kernel_started_outside_the_repository_gets_a_clear_error(tmp_path):
    # Each notebook's first code cell looks for value.py from the working directory upwards. Started
    # outside the repository it must stop with one clear line, not a bare StopIteration from next().
    # The lines from `ROOT = next(` up to the sys.path loop run in a fresh Python, once in tmp_path
    # (no value.py above it) and once in notebooks/ (where they must find the root).
    import subprocess
    import sys

    for src in SOURCES:
        code = next(text for kind, text in build.parse_cells(src.read_text(encoding="utf-8"))
                    if kind == "code")
        lines = code.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("ROOT = next("))
        end = next(i for i, line in enumerate(lines) if line.startswith("for path in (ROOT"))
        guard = "\n".join(["from pathlib import Path", *lines[start:end], "print(ROOT)"])
        outside = subprocess.run(
            [sys.executable, "-c", guard], cwd=tmp_path, capture_output=True, text=True
        )
        assert outside.returncode != 0 and "StopIteration" not in outside.stderr, (src.name,
                                                                                   outside.stderr)
        assert (
            outside.stderr.strip().splitlines()[-1].startswith("FileNotFoundError: value.py が")
        ), outside.stderr
        inside = subprocess.run(
            [sys.executable, "-c", guard], cwd=NB_DIR, capture_output=True, text=True
        )
        assert inside.returncode == 0 and inside.stdout.strip() == str(NB_DIR.parent), (
            src.name,
            inside.stderr,
        )


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_notebook_opens_with_its_chapter(src):
    # The first cell tells the reader which lecture chapter this notebook accompanies and what they
    # will see.
    kind, text = build.parse_cells(src.read_text(encoding="utf-8"))[0]
    assert kind == "markdown" and text.startswith("# "), "the first cell must be a markdown title"
    assert "**対応する" in text, f"no '**対応する章/講義/資料:**' line: {text[:200]!r}"
    assert "見られ" in text, f"no list of what the reader will see: {text[:200]!r}"


@pytest.mark.slow
def test_missing_glyph_detector_sees_a_box(tmp_path):
    # The check above must be able to fail: a figure title in a script the default font cannot draw.
    nb = build.nbformat.v4.new_notebook()
    nb.cells = [
        build.nbformat.v4.new_code_cell(
            "import matplotlib.pyplot as plt\n"
            "plt.rcParams['font.family'] = ['DejaVu Sans']\n"
            "fig, ax = plt.subplots(); ax.set_title('\u96c6\u4e2d\u5ea6')"
        )
    ]
    assert missing_glyphs(build.execute(nb))


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_notebook_ends_with_a_summary_a_self_check_and_exercises_with_check_cells(src):
    cells = build.parse_cells(src.read_text(encoding="utf-8"))
    lines = [(i, line) for i, (kind, text) in enumerate(cells) if kind == "markdown"
             for line in text.splitlines()]
    headings = [line for _, line in lines if line.startswith("## ")]
    at = {line: i for i, line in lines if line in ("## 理解度チェック", "## 練習問題")}
    assert set(at) == {"## 理解度チェック", "## 練習問題"}, (
        "the notebook must end with both sections"
    )
    summary = [h for h in headings if h.startswith("## まとめ")]
    assert summary and headings[-3:] == [summary[-1], "## 理解度チェック", "## 練習問題"], headings[
        -4:
    ]
    self_check = cells[at["## 理解度チェック"] : at["## 練習問題"] + 1]
    between = "\n".join(text for kind, text in self_check if kind == "markdown")
    assert between.count("<details>") >= 3, (
        "answers to the self-check questions go in <details> blocks"
    )
    code_after = [text for kind, text in cells[at["## 練習問題"] :] if kind == "code"]
    checks = [text for text in code_after if "exercises.check_" in text]
    assert 2 <= len(checks) <= 4, f"{len(checks)} check cells after 練習問題"
    stubs = [text for text in code_after if "raise NotImplementedError" in text]
    assert len(stubs) >= len(checks), "every exercise leaves a stub for the learner"


def exercise_sections(src):
    """{exercise heading: its markdown text} for the '### 練習問題 N' sections of a source."""
    cells = build.parse_cells(src.read_text(encoding="utf-8"))
    text = "\n".join(t for kind, t in cells if kind == "markdown")
    text = text[text.index("## 練習問題") :]
    parts = re.split(r"^(### 練習問題 \d+.*)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_every_exercise_has_graded_hints_and_the_checks_say_they_deter(src):
    sections = exercise_sections(src)
    assert sections, "no '### 練習問題 N' sections"
    for heading, text in sections.items():
        hints = re.findall(r"<details><summary>ヒント (\d)</summary>", text)
        assert hints[:2] == ["1", "2"], (
            f"{heading}: hints 1 and 2, each in <details> (found {hints})"
        )
    intro = build.parse_cells(src.read_text(encoding="utf-8"))
    intro = "\n".join(t for kind, t in intro if kind == "markdown")
    intro = intro[intro.index("## 練習問題") : intro.index("### 練習問題 1")]
    assert "防ぎきるものではありません" in intro, (
        "the notebook must say the refusals deter rather than prevent"
    )


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_every_check_cell_has_a_worked_solution(src):
    sys.path.insert(0, str(NB_DIR))
    import exercises

    cells = build.parse_cells(src.read_text(encoding="utf-8"))
    names = re.findall(
        r"exercises\.(check_\w+)\(", "\n".join(t for kind, t in cells if kind == "code")
    )
    assert names
    for name in names:
        keys = re.findall(r'solution\("(\d\d-\d)"\)', inspect_source(getattr(exercises, name)))
        assert len(keys) == 1 and keys[0].startswith(src.stem[:2]), (name, keys)
        assert len(exercises.solution(keys[0])) > 100, (
            f"the worked solution of {keys[0]} is missing or empty"
        )


def inspect_source(function):
    import inspect

    return inspect.getsource(function)


@pytest.mark.parametrize("stem", ["04_lecture3_hypersphere", "06_lecture3_vmf_ngpt"])
def test_lecture_3_notebooks_state_a_reading_time(stem):
    first = build.parse_cells((NB_DIR / "src" / f"{stem}.py").read_text(encoding="utf-8"))[0][1]
    assert re.search(r"読む時間の目安：約 \d+ 分", first), first[:300]


def test_a_slider_figure_is_static_when_run_headless(monkeypatch, capsys):
    sys.path.insert(0, str(NB_DIR))
    import figures

    calls = []
    monkeypatch.setenv(figures.STATIC_ENV, "1")
    assert (
        figures.slider_figure(
            lambda kappa: calls.append(kappa), {"kappa": ("log", 0.1, 100.0, 5.0)}
        )
        is None
    )
    assert calls == [5.0] and "スライダー" in capsys.readouterr().out


def test_a_slider_figure_redraws_when_a_slider_moves():
    widgets = pytest.importorskip("ipywidgets")
    sys.path.insert(0, str(NB_DIR))
    import figures

    calls = []
    panel = figures.show_sliders(lambda kappa, T: calls.append((kappa, T)),
                                 {"kappa": ("log", 0.1, 100.0, 5.0), "T": (0.1, 3.0, 1.0)}, widgets,
                                 display=lambda panel: None)
    assert calls == [(5.0, 1.0)]
    panel.children[0].value = 50.0
    assert calls[-1] == (50.0, 1.0)


# The terms of lecture 3's headings and tables (its TIP promises a キーワード集): each must be in
# GLOSSARY.md.
LECTURE_3_TERMS = [
    # headings and callout titles, in the lecture's order
    "注意事項",
    "導入：平面から球面へ",
    "nGPTの衝撃",
    "nGPTとは何か",
    "Transformerの構成要素",
    "「高速化」の意味",
    "「正規化」と「球面制約」の違い",
    "LayerNormと球面制約の違い",
    "設計の徹底が本質",
    "なぜ高速化するのか",
    "高次元の集中現象",
    "仮説段階",
    "歴史的文脈",
    "歴史的推測",
    "プラネタリウム・メタファー",
    "球面を「ドーム」として捉える",
    "プラネタリウムの賞味期限",
    "第1回の「星空」",
    "角度が意味を担う",
    "単位正規化が前提",
    "角度はスカラーだが、分類は1個では終わらない",
    "測地線距離",
    "von Mises-Fisher",
    "なぜ球面上の確率分布が必要か",
    "vMF分布の定義",
    "集中度 κ の直感",
    "vMFと正規分布の対応",
    "ガウスから誘導される",
    "最大エントロピー原理",
    "Softmax との関係",
    "「対応」であって「同一」ではない",
    "前提が崩れる場合",
    "第4回への伏線",
    "球面上の学習：幾何学的な意味",
    "勾配の方向",
    "正規化による近似",
    "近似の限界",
    "球面設計の限界",
    "ノルムに意味がある場合",
    "次元表記の混同",
    "曲率の影響",
    "双曲空間",
    "まとめ：球面という設計の選択",
    "次回予告",
    "実装ノート：正規化の実践",
    "基本的な正規化",
    "数値安定性",
    "混合精度学習",
    "nGPT風の設計：球面制約の維持",
    "概念と実装のギャップ",
    "vMF 分布の可視化",
    "参考文献",
    # the tables: hypotheses, the planetarium, vMF's parameters, kappa, vMF vs normal, limits,
    # dimensions, summary
    "勾配の安定化",
    "損失ランドスケープの改善",
    "学習率の設定が容易",
    "ドーム",
    "星座",
    "星同士の角度",
    "星の明るさ",
    "単位球面",
    "データ点",
    "意味的なクラスター",
    "類似度",
    "平均方向",
    "集中度パラメータ",
    "正規化定数",
    "星座の「中心」",
    "まとまり具合",
    "一様分布",
    "緩やかに集中",
    "明確に集中",
    "一点に集中",
    "デルタ関数",
    "集中度の逆数",
    "等方的な広がり",
    "指数関数的な減衰",
    "分類",
    "回帰",
    "不確実性推定",
    "生成モデル",
    "1次元球面",
    "2次元球面",
    "単位円",
    "地球表面",
    "高次元の単位球面",
    "球面制約",
    "nGPT",
    "vMF",
    "確率密度関数",
]


def test_the_glossary_covers_the_terms_of_lecture_3s_headings_and_tables():
    text = (NB_DIR / "GLOSSARY.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1] for line in text.splitlines()
            if line.startswith("| ") and line.count("|") >= 5]
    missing = [term for term in LECTURE_3_TERMS if not any(term in row for row in rows)]
    assert not missing, f"not in GLOSSARY.md's first column: {missing}"


def test_the_glossary_names_sections_that_exist():
    # every "NN §k" reference in the glossary must be a section heading of notebook NN
    text = (NB_DIR / "GLOSSARY.md").read_text(encoding="utf-8")
    headings = {}
    for src in SOURCES:
        cells = build.parse_cells(src.read_text(encoding="utf-8"))
        headings[src.stem[:2]] = {
            m.group(1)
            for kind, t in cells
            if kind == "markdown"
            for m in re.finditer(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", t, flags=re.M)
        }
    for row in [line for line in text.splitlines() if line.startswith("| ")]:
        for nb, refs in re.findall(r"\b(0[1-6]) ((?:§\d+(?:\.\d+)?(?:, )?)+)", row):
            for ref in re.findall(r"§(\d+(?:\.\d+)?)", refs):
                assert ref in headings[nb], f"{nb} §{ref} in: {row[:80]}"


def test_the_notebooks_readme_links_exist_and_names_every_notebook():
    text = (NB_DIR / "README.md").read_text(encoding="utf-8")
    links = [
        link for link in re.findall(r"\]\(([^)#]+)\)", text) if not re.match(r"[a-z]+://", link)
    ]
    missing = [link for link in links if not (NB_DIR / link).exists()]
    assert links and not missing, missing
    assert all(f"{src.stem}.ipynb" in links for src in SOURCES)
