"""The companion notebooks: each runs top to bottom without error, and each
committed .ipynb matches its source in notebooks/src/ (so nobody edits one
without the other; regenerate with `python3 notebooks/build.py`)."""
import importlib.util
from pathlib import Path

import nbformat
import pytest

NB_DIR = Path(__file__).resolve().parent.parent / "notebooks"
_spec = importlib.util.spec_from_file_location("nb_build", NB_DIR / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

SOURCES = build.sources()
IDS = [p.stem for p in SOURCES]


def test_all_five_notebooks_are_there():
    assert [p.stem[:2] for p in SOURCES] == ["01", "02", "03", "04", "05"], [p.name for p in SOURCES]


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_committed_notebook_matches_source(src):
    ipynb = NB_DIR / (src.stem + ".ipynb")
    assert ipynb.exists(), f"{ipynb.name} is missing: run python3 notebooks/build.py {src.stem}"
    committed = nbformat.read(ipynb, as_version=4)
    fresh = build.to_notebook(src)
    got = [(c.cell_type, c.source) for c in committed.cells]
    want = [(c.cell_type, c.source) for c in fresh.cells]
    assert got == want, f"{ipynb.name} is out of date with {src.name}: run python3 notebooks/build.py {src.stem}"


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_committed_notebook_has_outputs_and_no_errors(src):
    nb = nbformat.read(NB_DIR / (src.stem + ".ipynb"), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code), "committed without executing"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors


@pytest.mark.parametrize("src", SOURCES, ids=IDS)
def test_notebook_executes(src):
    # A fresh kernel runs every cell from the source; nbclient raises CellExecutionError on any error.
    build.execute(build.to_notebook(src))
