"""Build the companion notebooks from their plain-Python sources, then execute them.

    python3 notebooks/build.py            # rebuild and execute every notebook
    python3 notebooks/build.py 04 vmf     # only those whose name contains "04" or "vmf"
    python3 notebooks/build.py --no-exec  # convert only (no kernel), e.g. to check sync

Each notebook is authored as notebooks/src/<name>.py in the "percent" cell format
(the one Jupytext / VS Code understand):

    # %% [markdown]
    # # Title            <- markdown cell: every line starts with "# " (or is "#")
    # %%
    import value        <- code cell

and written to notebooks/<name>.ipynb with its outputs, executed in a fresh kernel
with the working directory notebooks/. The notebooks put the repo root and notebooks/ on
sys.path themselves, so they also run when Jupyter is started at the repo root (the
tests execute them from both folders: `execute_all`). Volatile metadata
(execution timing, kernel version details) is not recorded, so rebuilding an
unchanged source gives an unchanged (or near-unchanged) .ipynb.
"""
import re
import sys
import time
from pathlib import Path

import nbformat

NB_DIR = Path(__file__).resolve().parent
SRC_DIR = NB_DIR / "src"
CELL_MARK = "# %%"


def sources():
    """All notebook sources, sorted by name (01_..., 02_..., ...)."""
    return sorted(SRC_DIR.glob("[0-9]*.py"))


def parse_cells(text):
    """Split percent-format text into [(kind, source)], kind 'markdown' or 'code'."""
    cells, kind, lines = [], None, []

    def flush():
        if kind is not None:
            src = "\n".join(lines).strip("\n")
            if src:
                cells.append((kind, src))

    for line in text.splitlines():
        if line.startswith(CELL_MARK):
            flush()
            kind = "markdown" if "[markdown]" in line else "code"
            lines = []
            continue
        if kind == "markdown":
            if not (line == "#" or line.startswith("# ") or line == ""):
                raise ValueError(f"markdown line must start with '# ': {line!r}")
            line = line[2:]
        lines.append(line)
    flush()
    return cells


def to_notebook(src_path):
    """An unexecuted nbformat v4 notebook from one source file."""
    nb = nbformat.v4.new_notebook()
    for kind, src in parse_cells(src_path.read_text(encoding="utf-8")):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(make(src))
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    # Stable cell ids (nbformat would draw random ones): a rebuild must not change them.
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    fold_advanced_parts(nb)
    return nb


ADVANCED = "## 発展"


def fold_advanced_parts(nb):
    """Fold the code of a 発展 part (a markdown cell opening with '## 発展', up to the
    next '## ' heading): Jupyter shows such a cell collapsed until the reader opens it,
    so a detour the sitting can do without stays one click away."""
    folding = False
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            folding = cell.source.startswith(ADVANCED)
        elif cell.cell_type == "code" and folding:
            cell.metadata["jupyter"] = {"source_hidden": True, "outputs_hidden": True}
            cell.metadata["tags"] = ["発展"]


def _client(nb, timeout, cwd):
    from nbclient import NotebookClient

    # coalesce_streams: consecutive stdout chunks become one output, however the kernel
    # happened to flush them
    return NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                          coalesce_streams=True, resources={"metadata": {"path": str(cwd)}})


def _tidy(nb):
    # nbclient copies kernel details into the metadata; keep only what a reader needs.
    nb.metadata["language_info"] = {"name": "python"}
    return nb


# A headless run keeps each movable figure static (notebooks/figures.py: slider_figure)
# instead of showing widgets.
STATIC = {"NOTEBOOK_STATIC": "1"}


def execute(nb, timeout=600, cwd=NB_DIR):
    """Run every cell in a fresh kernel whose working directory is cwd; raises on the
    first cell error."""
    import os

    _client(nb, timeout, cwd).execute(env={**os.environ, **STATIC})
    return _tidy(nb)


# With several kernels at once, each gets one BLAS thread: two kernels that each start a
# BLAS thread per core would fight over two cores (OpenBLAS threads spin while they
# wait), and a BLAS-heavy notebook then runs several times slower than alone.
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def execute_all(jobs, timeout=600):
    """Run several notebooks at once, each job (nb, cwd) in a fresh kernel of its own;
    raises on the first cell error.

    The kernels are processes of their own with one BLAS thread each, so two of them
    keep two cores busy (a pass costs about the time of the slower notebook, not of
    both).
    """
    import asyncio
    import os

    env = {**os.environ, **ONE_BLAS_THREAD, **STATIC}
    clients = [_client(nb, timeout, cwd) for nb, cwd in jobs]

    async def run():
        await asyncio.gather(*(client.async_execute(env=env) for client in clients))

    asyncio.run(run())
    return [_tidy(nb) for nb, _ in jobs]


# How long a sitting takes, from what the executed notebook holds, at a learner's pace
# (read, run, think), not a reader's: Japanese prose at 400 characters a minute, code at
# 10 lines a minute, printed output at 30 lines a minute, a minute per figure, 5 minutes
# per build step (a code cell of the sitting's body that still raises
# NotImplementedError in the executed notebook) and 10 minutes per exercise piece (such
# a cell in 練習問題, or a written exercise 「**練習 k.**」). Two numbers: the body
# (本編: up to 練習問題, without its folded 発展 parts) and the exercises.
PROSE_CHARS_PER_MIN, CODE_LINES_PER_MIN, OUTPUT_LINES_PER_MIN = 400, 10, 30
MIN_PER_FIGURE, MIN_PER_BUILD_STEP, MIN_PER_EXERCISE_PIECE = 1, 5, 10
EXERCISES = "## 練習問題"
WRITTEN_EXERCISE = re.compile(r"^\*\*練習 \d+\.\*\*", re.M)


def parts(nb):
    """The cells of the body (本編), its folded 発展 parts, the exercises (練習問題)."""
    body, advanced, exercises = [], [], []
    part = body
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## ") and part is not exercises:
            part = (exercises if cell.source.startswith(EXERCISES) else
                    advanced if cell.source.startswith(ADVANCED) else body)
        part.append(cell)
    return body, advanced, exercises


def _minutes(cells, min_per_piece):
    markdown = [c.source for c in cells if c.cell_type == "markdown"]
    prose = sum(len("".join(text.split())) for text in markdown)
    code_cells = [c for c in cells if c.cell_type == "code"]
    code = sum(1 for c in code_cells for line in c.source.splitlines() if line.strip())
    pieces = sum(c.source.count("raise NotImplementedError") for c in code_cells)
    pieces += sum(len(WRITTEN_EXERCISE.findall(text)) for text in markdown)
    outputs = [o for c in code_cells for o in c.get("outputs", [])]
    figures = sum(1 for o in outputs if "image/png" in o.get("data", {}))
    printed = sum(len((o.get("text") or o.get("data", {}).get("text/plain", "")).splitlines())
                  for o in outputs)
    return (prose / PROSE_CHARS_PER_MIN + code / CODE_LINES_PER_MIN
            + printed / OUTPUT_LINES_PER_MIN + figures * MIN_PER_FIGURE + pieces * min_per_piece)


def reading_minutes(nb):
    """(本編, 練習問題): the honest time of an executed notebook's body and of its
    exercises, in whole minutes (the formula above)."""
    body, _, exercises = parts(nb)
    return (round(_minutes(body, MIN_PER_BUILD_STEP)),
            round(_minutes(exercises, MIN_PER_EXERCISE_PIECE)))


STATED_TIME = re.compile(r"（目安：本編 約(\d+)分、練習問題 約(\d+)分）")


def stated_minutes(nb):
    """The times a notebook states under its title, `（目安：本編 約NN分、練習問題
    約MM分）`, as (本編, 練習問題), or None."""
    found = STATED_TIME.findall(nb.cells[0].source) if nb.cells else []
    return tuple(map(int, found[0])) if found else None


def stated_line(minutes):
    return f"（目安：本編 約{minutes[0]}分、練習問題 約{minutes[1]}分）"


def build(src_path, run=True):
    nb = to_notebook(src_path)
    if run:
        execute(nb)
    out = NB_DIR / (src_path.stem + ".ipynb")
    nbformat.write(nb, out)
    return out


def main(argv):
    run = "--no-exec" not in argv
    filters = [a for a in argv if not a.startswith("--")]
    picked = [p for p in sources() if not filters or any(f in p.stem for f in filters)]
    if not picked:
        sys.exit(f"build.py: no notebook source in {SRC_DIR} matches {filters}")
    total = time.perf_counter()
    for p in picked:
        t = time.perf_counter()
        out = build(p, run=run)
        nb = nbformat.read(out, as_version=4)
        minutes, stated = reading_minutes(nb), stated_minutes(nb)
        note = "" if stated == minutes else f"  (write under the title: {stated_line(minutes)})"
        print(f"{out.relative_to(NB_DIR.parent)}  {time.perf_counter() - t:5.1f} s"
              f"  本編 {minutes[0]} min, 練習問題 {minutes[1]} min{note}")
    print(f"total {time.perf_counter() - total:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
