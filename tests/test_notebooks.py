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


READING_ORDER = [
    "01_autograd_build", "02_autograd_traced",                                      # autograd
    "03_ch21_functions", "04_ch21_backward",                                        # chapter 21
    "05_pytorch_parameter_module", "06_pytorch_modules_linear", "07_pytorch_init_vanishing",
    "08_ch22_gpt_forward", "09_ch22_training_loop", "10_ch22_sphere_sampling",      # chapter 22
    "11_lecture3_intro_sphere", "12_lecture3_fp16_retraction", "13_lecture3_residual_vmf",
    "14_lecture3_vmf_riemannian", "15_lecture3_ngpt_training", "16_lecture3_vmf_softmax",
    "17_lecture3_planetarium_curvature",
]


def test_the_17_sittings_are_numbered_in_reading_order():
    # autograd, chapter 21, the PyTorch concepts, chapter 22, lecture 3: the file names sort in the
    # order a learner reads them, numbered 01-17 without a gap
    assert IDS == READING_ORDER
    assert [int(stem[:2]) for stem in IDS] == list(range(1, len(IDS) + 1))


# A sitting states its two times under its title, 本編 and 練習問題, as build.reading_minutes gives
# them for the executed notebook (prose, code, printed output, figures, build steps and exercises).


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_the_stated_times_are_the_formulas_and_the_body_takes_at_most_40_minutes(src):
    nb = nbformat.read(NB_DIR / (src.stem + ".ipynb"), as_version=4)
    stated, measured = build.stated_minutes(nb), build.reading_minutes(nb)
    assert stated is not None, f"no {build.stated_line((0, 0))} under the title of {src.name}"
    assert stated == measured, f"{src.name} states {stated} minutes, the formula gives {measured}"
    assert measured[0] <= 40, (f"the body of {src.name} takes {measured[0]} minutes: fold a detour "
                               "into 発展 or split it into sittings of at most 40")


def test_the_reading_time_formula_counts_what_a_notebook_holds():
    # The formula must see each kind of content at a learner's pace: a notebook with more of any of
    # them takes longer; a folded 発展 part is not in the body; the exercises are counted apart.
    new, md, code = nbformat.v4.new_notebook, nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    base = [md("あ" * 400), code("x = 1\n" * 10)]
    assert build.reading_minutes(new(cells=base)) == (2, 0)
    assert build.reading_minutes(new(cells=base + [md("い" * 1200)])) == (5, 0)
    assert build.reading_minutes(new(cells=base + [code("raise NotImplementedError")])) == (7, 0)
    printed = code("print()")
    printed.outputs = [nbformat.v4.new_output("stream", name="stdout", text="行\n" * 60)]
    assert build.reading_minutes(new(cells=base + [printed])) == (4, 0)
    figure = code("plt.show()")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": ""})]
    assert build.reading_minutes(new(cells=base + [figure])) == (3, 0)
    detour = [md("## 発展：寄り道"), code("y = 2\n" * 100), md("## まとめ\n\n" + "う" * 400)]
    assert build.reading_minutes(new(cells=base + detour)) == (3, 0)
    exercises = [md("## 練習問題\n\n**練習 1.** え"), code("raise NotImplementedError")]
    assert build.reading_minutes(new(cells=base + exercises)) == (2, 20)


MAPS = [NB_DIR / "README.md", NB_DIR.parent / "README.md", NB_DIR.parent / "README.ja.md"]


@pytest.mark.parametrize("path", MAPS, ids=[p.parent.name + "/" + p.name for p in MAPS])
def test_the_chapter_maps_state_each_notebooks_times(path):
    # each link to a notebook in a chapter map carries the times its title states
    text = path.read_text(encoding="utf-8")
    for src in SOURCES:
        nb = nbformat.read(NB_DIR / (src.stem + ".ipynb"), as_version=4)
        body, exercises = build.stated_minutes(nb)
        link = re.search(rf"\[[^\]]*\]\((?:notebooks/)?{src.stem}\.ipynb\)", text)
        assert link, f"{path.name} does not link {src.stem}.ipynb"
        # notebooks/README.md says it in the row's first column, the READMEs in the link's text
        where = (next(line for line in text.splitlines() if link.group(0) in line)
                 if path == MAPS[0] else link.group(0))
        times = (f"本編 {body} 分、練習問題 {exercises} 分" if path.name.endswith(".ja.md") else
                 f"{body} + {exercises} min")
        assert times in where, f"{path.name}: {src.stem} should be stated with ({times})"


TORCH_SITTINGS = ["05_pytorch_parameter_module", "06_pytorch_modules_linear",
                  "07_pytorch_init_vanishing", "11_lecture3_intro_sphere", "12_lecture3_fp16_retraction"]


@pytest.mark.parametrize("stem", TORCH_SITTINGS)
def test_the_pytorch_sittings_have_a_folded_optional_torch_cell_that_says_how_to_see_it(stem):
    # torch is not a dependency: the cell sits in the folded 発展 part, and where torch is missing (as
    # when the notebooks are built) it prints one line saying how to see it
    nb = nbformat.read(NB_DIR / f"{stem}.ipynb", as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and 'find_spec("torch")' in c.source]
    assert cells, f"{stem} has no optional torch cell"
    for cell in cells:
        assert "発展" in cell.metadata.get("tags", []), "the torch cell belongs to the folded 発展 part"
        if importlib.util.find_spec("torch") is None:
            printed = "".join(o.get("text", "") for o in cell.outputs).splitlines()
            assert len(printed) == 1 and "pip install torch" in printed[0], printed


def test_a_detour_is_folded():
    # A 発展 part's code cells are folded (Jupyter's source_hidden); the sitting's own cells are not.
    src = next(s for s in SOURCES if s.stem.endswith("_lecture3_fp16_retraction"))
    nb = build.to_notebook(src)
    folded = [c for c in nb.cells if c.get("metadata", {}).get("jupyter", {}).get("source_hidden")]
    assert folded and all("発展" in c.metadata["tags"] for c in folded)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert first_code not in folded and len(folded) < len([c for c in nb.cells if c.cell_type == "code"])


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
    assert "見られ" in text or "見るもの" in text, f"no list of what the reader will see: {text[:200]!r}"


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
def test_notebook_ends_with_a_summary_a_self_check_and_exercises(src):
    cells = build.parse_cells(src.read_text(encoding="utf-8"))
    headings = [(i, line) for i, (kind, text) in enumerate(cells) if kind == "markdown"
                for line in text.splitlines() if line.startswith("## ")]
    last = [line for _, line in headings[-3:]]
    assert len(last) == 3 and last[0].startswith("## まとめ") and last[1] == "## 理解度チェック" and (
        last[2].startswith("## 練習問題")), f"the notebook must end with まとめ, 理解度チェック, 練習問題: {last}"
    at_check, at_exercises = headings[-2][0], headings[-1][0]
    self_check = "\n".join(text for kind, text in cells[at_check:at_exercises + 1] if kind == "markdown")
    assert self_check.count("<details>") >= 2, "answers to the self-check questions go in <details>"
    exercises_part = cells[at_exercises:]
    prose = "\n".join(text for kind, text in exercises_part if kind == "markdown")
    code_after = [text for kind, text in exercises_part if kind == "code"]
    checks = [text for text in code_after if "exercises.check_" in text]
    stubs = [text for text in code_after if "raise NotImplementedError" in text]
    assert len(stubs) >= len(checks), "every checked exercise leaves a stub for the learner"
    if checks:   # an exercise the learner writes: graded hints, and a folded way to the worked solution
        assert "ヒント 1" in prose and "ヒント 2" in prose, "hints 1 and 2, each in <details>"
        # each check shows its worked solution folded under its table (「行き詰まったら：解答例」);
        # the prose says so once, or names each exercise's section of worked_solutions.md
        sys.path.insert(0, str(NB_DIR))
        import exercises

        everywhere = "\n".join(text for kind, text in cells if kind == "markdown")
        keys = [re.findall(r'"(\d\d-\d)"', inspect_source(getattr(exercises, name)))[0]
                for name in re.findall(r"exercises\.(check_\w+)\(", "\n".join(code_after))]
        unnamed = [key for key in keys if f"「{key}」" not in everywhere]
        assert not unnamed or "行き詰まったら：解答例" in everywhere, (
            f"a stuck learner finds the worked solutions of {unnamed}")
    else:        # exercises done on paper or by editing a cell: their answers folded
        assert prose.count("<details>") >= 1, "the answers of written exercises go in <details>"


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_every_check_cell_has_a_worked_solution(src):
    sys.path.insert(0, str(NB_DIR))
    import exercises

    cells = build.parse_cells(src.read_text(encoding="utf-8"))
    names = re.findall(
        r"exercises\.(check_\w+)\(", "\n".join(t for kind, t in cells if kind == "code")
    )
    for name in names:
        keys = re.findall(r'"(\d\d-\d)"', inspect_source(getattr(exercises, name)))
        # a check of this sitting, or of an earlier one whose piece the sitting carries forward
        assert len(keys) == 1 and keys[0][:2] <= src.stem[:2], (name, keys)
        assert len(exercises.solution(keys[0])) > 100, (
            f"the worked solution of {keys[0]} is missing or empty"
        )


def inspect_source(function):
    import inspect

    return inspect.getsource(function)




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


def test_a_live_slider_figure_is_displayed_once(monkeypatch):
    # slider_figure is a cell's last line: a panel it returned would be displayed a second time
    sys.path.insert(0, str(NB_DIR))
    import types

    import figures

    shown = []
    monkeypatch.delenv(figures.STATIC_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "ipywidgets", types.ModuleType("ipywidgets"))
    monkeypatch.setattr(figures, "show_sliders", lambda *args: shown.append(args) or "panel")
    assert figures.slider_figure(lambda kappa: None, {"kappa": (0.1, 3.0, 1.0)}) is None
    assert len(shown) == 1


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


def notebook_sections(src):
    """{pointer: text} of one notebook source: "§k" for each numbered section ("## k." or "### k.m",
    a section running to the next heading of its level or above, so that it holds its unnumbered
    subsections), and "練習", "発展", "まとめ" for those parts. The text is markdown and code."""
    cells = build.parse_cells(src.read_text(encoding="utf-8"))
    lines = "\n".join(text for _, text in cells).splitlines()
    starts = []
    for i, line in enumerate(lines):
        m = re.match(r"^(#{2,3}) (?:(\d+(?:\.\d+)?)\.? |(練習|発展|まとめ))", line)
        if m:
            starts.append((i, len(m.group(1)), f"§{m.group(2)}" if m.group(2) else m.group(3)))
    sections = {}
    for n, (i, level, key) in enumerate(starts):
        end = next((j for j, lv, _ in starts[n + 1:] if lv <= level), len(lines))
        sections.setdefault(key, "\n".join(lines[i:end]))
    return sections


def glossary_pointers(cell):
    """[(notebook number, part)] named by a glossary row's notebook column: "53 §1.1, §2, 55 練習"
    (text in parentheses is a comment)."""
    cell = re.sub(r"\([^)]*\)|（[^）]*）", "", cell)
    pointers, notebook = [], None
    for token in re.findall(r"\b\d\d\b(?! ?[-–])|§\d+(?:\.\d+)?|練習|発展|まとめ", cell):
        if token[0].isdigit():
            notebook = token
        elif notebook:
            pointers.append((notebook, token))
    return pointers


def term_variants(term):
    """The spellings of a glossary term: its " / " alternatives (outside and inside brackets),
    without math, each as the list of its words (split at particles and punctuation)."""
    term = re.sub(r"\$[^$]*\$", "", term)
    inner = [a or b for a, b in re.findall(r"（([^）]*)）|\(([^)]*)\)", term)]
    outer = re.sub(r"（[^）]*）|\([^)]*\)", "", term)
    variants = []
    for text in [outer, *inner]:
        for part in text.split(" / "):
            words = [w for w in re.split(r"[のとをがにはでや：:・、，,「」『』`*\s]+", part.lower())
                     if len(w) >= 2] or [part.strip().lower()] * bool(part.strip())
            if words:
                variants.append(words)
    return variants


def holds(section, variants):
    """True if the section holds every word of one of the term's variants."""
    text = re.sub(r"\s", "", section).lower()
    return any(all(w in text for w in words) for words in variants)


def test_every_glossary_pointer_names_a_section_that_holds_the_term():
    text = (NB_DIR / "GLOSSARY.md").read_text(encoding="utf-8")
    notebooks = {src.stem[:2]: src for src in SOURCES}
    sections = {}
    wrong = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if not line.startswith("| ") or len(cells) != 4 or set(cells[0]) <= {"-"}:
            continue
        errata = cells[0].startswith(("Lecture 3", "Chapter 21", "PyTorch notes"))
        term, pointer = (cells[1], cells[3]) if errata else (cells[0], cells[2])
        variants = [v for v in term_variants(term)] if not errata else []
        for number, part in glossary_pointers(pointer):
            if number not in notebooks:
                wrong.append(f"{term[:40]}: there is no notebook {number}")
                continue
            if number not in sections:
                sections[number] = notebook_sections(notebooks[number])
            if part not in sections[number]:
                wrong.append(f"{term[:40]}: notebook {number} has no {part}")
                continue
            if variants and not holds(sections[number][part], variants):
                wrong.append(f"{term[:40]}: not in {number} {part}")
    assert not wrong, "\n".join(wrong)


def test_the_glossary_pointer_check_can_fail():
    src = next(s for s in SOURCES if s.stem.endswith("_lecture3_intro_sphere"))
    sections = notebook_sections(src)
    assert "§1" in sections and "練習" in sections and "§9" not in sections
    assert glossary_pointers("53 §1.1, §2 (η slider), 55 練習") == [("53", "§1.1"), ("53", "§2"),
                                                                    ("55", "練習")]
    assert term_variants("単位球面 $\\mathbb{S}^{d-1}$（単位円） / unit sphere") == [
        ["単位球面"], ["unit", "sphere"], ["単位円"]]
    assert holds(sections["§1"], term_variants("接空間")) and not holds(sections["§1"], [["双曲空間"]])


def test_every_section_of_lecture_3_has_its_counterpart():
    # notebooks/README.md maps every section of lecture 3 to the sittings that take it up: each row
    # names at least one part, and each part named exists.
    text = (NB_DIR / "README.md").read_text(encoding="utf-8")
    table = text[text.index("| Lecture section | Notebook section |"):].split("\n\n")[0]
    rows = [line for line in table.splitlines()[2:] if line.startswith("| ")]
    notebooks = {src.stem[:2]: notebook_sections(src) for src in SOURCES}
    assert len(rows) >= 30, len(rows)
    for row in rows:
        pointers = glossary_pointers(row.split("|")[2])
        assert pointers or "every sitting" in row, row[:60]
        missing = [f"{n} {part}" for n, part in pointers if part not in notebooks.get(n, {})]
        assert not missing, f"{missing}: {row[:60]}"


def stream_text(stem):
    nb = nbformat.read(NB_DIR / f"{stem}.ipynb", as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
                   if o.output_type == "stream")


def test_lecture_3s_own_printed_lines_are_printed():
    # The lecture's scripts print these lines (under PyTorch 2.x, float32 and float16 as the lecture
    # runs them); the sittings reproduce them and explain them.
    first = stream_text("11_lecture3_intro_sphere")
    assert "ノルムの平均: 1.000000" in first and "ノルムの標準偏差: 0.000000" in first
    second = stream_text("12_lecture3_fp16_retraction")
    for line in ("入力 (float16): tensor([5.9605e-08, 5.9605e-08, 5.9605e-08], dtype=torch.float16)",
                 "ノルム: 1.1920928955078125e-07",
                 "Unsafe (epsなし): tensor([0.5000, 0.5000, 0.5000], dtype=torch.float16)",
                 "ゼロをepsなしで割る: tensor([nan, nan, nan], dtype=torch.float16)"):
        assert line in second, line
    # the Gaussian-induced vMF at d = 768, |m| = 8, sigma = 0.5: the fitted kappa is about 512
    fits = re.findall(r"^ *768 +8\.00 +0\.50 \|.*\| +([\d.]+) ", stream_text("14_lecture3_vmf_riemannian"),
                      flags=re.M)
    assert fits and abs(float(fits[0]) - 512) < 10, fits


def test_the_notebooks_readme_links_exist_and_names_every_notebook():
    text = (NB_DIR / "README.md").read_text(encoding="utf-8")
    links = [
        link for link in re.findall(r"\]\(([^)#]+)\)", text) if not re.match(r"[a-z]+://", link)
    ]
    missing = [link for link in links if not (NB_DIR / link).exists()]
    assert links and not missing, missing
    assert all(f"{src.stem}.ipynb" in links for src in SOURCES)


# A sitting is named one way everywhere: 「ノート NN」, a section of it 「ノート NN §k」 (or
# 「ノート NN の §k」), several sections 「ノート NN §k、§m」 ("notebook NN §k" in code comments). Inside a
# notebook a bare 「§k」 is its own.
SITTING_REFERENCE = re.compile(r"(?:ノート|notebook) (\d\d)((?:(?: ?の)? ?§\d+(?:\.\d+)?)(?:、 ?§\d+(?:\.\d+)?)*)?")
REFERRING_TEXTS = [*SOURCES, NB_DIR / "worked_solutions.md", NB_DIR / "GLOSSARY.md", NB_DIR / "README.md",
                   NB_DIR.parent / "README.md", NB_DIR.parent / "README.ja.md"]


def unresolved_references(text, own=None):
    """The references of text that name no notebook or no section of it: 「ノート NN §k」, and with
    own (a notebook's number) the bare 「§k」 of that notebook, and a number before § with no ノート."""
    sections = {src.stem[:2]: notebook_sections(src) for src in SOURCES}
    wrong = []
    for m in SITTING_REFERENCE.finditer(text):
        number, parts = m.group(1), re.findall(r"§\d+(?:\.\d+)?", m.group(2) or "")
        if number not in sections:
            wrong.append(f"{m.group(0)}: there is no notebook {number}")
        wrong += [f"{m.group(0)}: notebook {number} has no {p}" for p in parts
                  if number in sections and p not in sections[number]]
    if own is not None:
        rest = SITTING_REFERENCE.sub("", text)
        wrong += [f"{m.group(0)}: " + (f"say 「ノート {m.group(1)} {m.group(2)}」"
                                       if m.group(1) in sections else "no such notebook")
                  for m in re.finditer(r"(?<![\d.])(\d\d) ?(§\d+(?:\.\d+)?)", rest)]
        wrong += [f"{m.group(0)}: notebook {own} has no {m.group(1)}"
                  for m in re.finditer(r"(?<![\d.] )(?<!\d)(§\d+(?:\.\d+)?)", rest)
                  if m.group(1) not in sections[own]]
    return wrong


@pytest.mark.parametrize("path", REFERRING_TEXTS, ids=[p.name for p in REFERRING_TEXTS])
def test_every_sitting_reference_resolves_to_a_heading(path):
    own = path.stem[:2] if path in SOURCES else None
    wrong = unresolved_references(path.read_text(encoding="utf-8"), own)
    assert not wrong, "\n".join(wrong)


def test_the_sitting_reference_check_can_fail():
    assert unresolved_references("（ノート 14 §2、§1）、ノート 15 の §2.1") == []
    assert len(unresolved_references("（ノート 50 §0）、ノート 14 §2、§9")) == 2
    assert unresolved_references("§2 と §7", own="11") == ["§7: notebook 11 has no §7"]
    assert unresolved_references("（56 §2.1）", own="17") == ["56 §2.1: no such notebook"]
    assert unresolved_references("（16 §1）", own="17") == ["16 §1: say 「ノート 16 §1」"]


def test_one_japanese_word_for_each_thing():
    # a sitting is a ノート, a kink a 折れ点; Japanese words are not joined by a half-width "/" or "~"
    # (a quotation of the texts in 「」 keeps its own spelling)
    kana_kanji = r"[\u3040-\u30ff\u4e00-\u9fff]"
    joiner = re.compile(rf"{kana_kanji}[/~･]{kana_kanji}")
    for path in [*REFERRING_TEXTS, NB_DIR / "exercises.py"]:
        text = path.read_text(encoding="utf-8")
        assert "すわり" not in text and "折れ目" not in text, path.name
        unquoted = re.sub(r"「[^」]*」", "", text)
        assert not joiner.findall(unquoted), (path.name, joiner.findall(unquoted))


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_prose_is_in_markdown_cells(src):
    # A paragraph left in a code cell (its `# %% [markdown]` line missing) shows as `#` comments: a
    # bare "#" line, or two top-level comment lines of Japanese sentences in a row.
    sentence = re.compile(r"^# .*[\u3040-\u30ff\u4e00-\u9fff]{8}.*。")
    for kind, code in build.parse_cells(src.read_text(encoding="utf-8")):
        lines = code.splitlines() if kind == "code" else []
        for line, after in zip(lines, lines[1:] + [""]):
            assert line != "#" and not (sentence.match(line) and after.startswith("# ")), line
