"""The planetarium's data: the history a run keeps (harness/history.py) and the page planetarium.py writes from it.
Stars on the sphere, the page's weights (delta-coded, decoded here as the page decodes them), its layout (from
model_config), its forward pass against gpt_forward, the bounds on snapshot count and page size, the embedded font,
and one clear line with exit 2 for every bad input. (The page in a real browser: test_planetarium_browser.py.)"""
import base64
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from cli_helpers import (
    MB,
    ROOT,
    TINY,
    broken,
    make_runs,
    one_clean_line,
    page_differences,
    peak_rss_mb,
    write_npz,
)
from cli_helpers import run as run_cli

import microgpt as mg
import planetarium
from harness.errors import EXIT_BAD_INPUT, EXIT_OK, InputError
from harness.history import (
    HISTORY_NAME,
    load_history,
)
from model_config import (
    SCALE_NAMES,
    effective_scales,
    n_params,
    param_views,
    scale_factors,
    scale_sizes,
)
from numpy_engine import gpt_forward
from utils import softmax_np


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return make_runs(tmp_path_factory.mktemp("planetarium"))


def page_data(html):
    """The JSON data block of a page written by planetarium.py."""
    text = html.read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="planetarium-data">(.*?)</script>', text, re.S).group(1)
    return json.loads(block)


def decode(b64, dtype):
    return np.frombuffer(base64.b64decode(b64), dtype=np.dtype(dtype).newbyteorder("<"))


# --------------------------------------------------------------------------- the history


def decode_weights(run):
    """The page's weights from its data, decoded here as web/planetarium_model.js decodes them (held[k] = held[k - 1]
    + code * step, row by row; sphere stars divided by their norms again)."""
    K, size, w = len(run["steps"]), run["size"], run["weights"]
    codes = [decode(w["first"], "<i2")] + list(decode(w["codes"], "i1").reshape(K - 1, size))
    nrows = sum(shape[0] for _, _, shape in run["layout"])
    steps = [decode(w["firstStep"], "<f4")] + list(decode(w["steps"], "<f4").reshape(K - 1, nrows))
    state, held = np.zeros(size), []
    for c, st in zip(codes, steps):
        row = 0
        for _, o, (rows, cols) in run["layout"]:
            cut = slice(o, o + rows * cols)
            state[cut] = (state[cut].reshape(rows, cols) + c[cut].reshape(rows, cols) * st[row:row + rows, None].astype(
                np.float64)).ravel()
            row += rows
        held.append(state.copy())
    held = np.array(held)
    for key in run["unitRows"]:
        _, o, (rows, cols) = next(e for e in run["layout"] if e[0] == key)
        block = held[:, o:o + rows * cols].reshape(K, rows, cols)
        block /= np.linalg.norm(block, axis=2, keepdims=True)
    return held


@pytest.mark.slow
def test_sphere_stars_are_unit_vectors_in_the_history_and_on_the_page(runs):
    h = runs["sphere"]["loaded"]
    for k in range(len(h)):
        p = h.params_at(k)
        for key in ("wte", "lm_head"):
            assert np.abs(np.linalg.norm(p[key], axis=1) - 1).max() < 1e-9, (k, key)
    page_run = runs["page_runs"][1]
    V, C = h.cfg.vocab_size, h.cfg.n_embd
    stars = page_run.held[:, :V * C].reshape(-1, V, C)
    assert np.abs(np.linalg.norm(stars, axis=2) - 1).max() < 1e-12
    # within the 8-bit steps of the run's own stars
    assert 0 < np.abs(stars - h.params[page_run.kept, :V * C].reshape(-1, V, C)).max() < 2e-3


def test_the_page_holds_the_weights_it_was_made_with(runs):
    """Decoding the page's data gives the weights page_params uses (to the last bit, but for the norms of the stars)
    and they stay within half an 8-bit step (a 16-bit one for the first snapshot) of the run's weights: the closed-loop
    delta code does not let rounding errors add up over the snapshots."""
    data = page_data(runs["html"])
    for run, page_run, norm in zip(data["runs"], runs["page_runs"], ("rmsnorm", "sphere")):
        held = decode_weights(run)
        assert np.abs(held - page_run.held).max() < 1e-15
        h = runs[norm]["loaded"]
        exact = h.params[page_run.kept, :run["size"]]
        err = np.abs(held - exact)
        if norm == "rmsnorm":
            assert np.array_equal(held, page_run.held)
        for k in range(1, len(held)):  # the error stays the size of one step's rounding, late snapshots too
            assert err[k].max() < 0.01 * np.abs(exact[k]).max(), k
        assert err[0].max() < 1e-4 * np.abs(exact[0]).max() * 2


def test_the_pages_layout_is_model_configs(runs):
    """The page reads where each matrix lies and how the effective scales are laid out from its data, which
    planetarium.py takes from model_config.param_shapes and model_config.scale_sizes; its script has no formula
    for the parameter count."""
    from model_config import param_shapes, scale_sizes
    data = page_data(runs["html"])
    for run, norm in zip(data["runs"], ("rmsnorm", "sphere")):
        cfg = runs[norm]["loaded"].cfg
        offsets, o = {}, 0
        for key, shape in param_shapes(cfg):  # the flat layout: param_shapes' order
            offsets[key], o = (o, shape), o + int(np.prod(shape))
        assert {key: (o, tuple(shape)) for key, o, shape in run["layout"]} == \
            {key: (o, shape) for key, (o, shape) in offsets.items() if len(shape) == 2}
        if norm == "sphere":
            assert [(n, size) for n, _, size in run["scaleLayout"]] == list(scale_sizes(cfg).items())
    script = open(os.path.join(ROOT, "web", "planetarium_model.js"), encoding="utf-8").read()
    assert not re.search(r"7 \* L|12 \* L|restSize|4 \* C", script)


def test_the_scales_are_the_effective_ones(runs):
    h = runs["sphere"]["loaded"]
    eff = effective_scales(h.params_at(len(h) - 1), h.cfg)
    assert np.array_equal(h.scales[-1], np.concatenate([eff[n] for n in ("alpha_A", "alpha_M", "s_qk", "s_u", "s_z")]))
    assert np.allclose(h.scales[0][-h.cfg.vocab_size:], h.cfg.sz_init)  # s_z starts at sz_init


# --------------------------------------------------------------------------- count and size


def test_the_page_for_two_runs_stays_under_5_mb(runs):
    size = os.path.getsize(runs["html"])
    assert 0.3 * MB < size < 2 * MB, size  # (measured: 0.90 MB)
    text = runs["html"].read_text(encoding="utf-8")
    # self-contained: no address to fetch anything from, a policy that forbids it anyway
    assert not re.search(r"(src|href)\s*=\s*[\"'](https?:)?//", text) and "default-src 'none'" in text


# --------------------------------------------------------------------------- the page's numbers

PREFIXES = ["", "em", "anna", "zzzzzzzzzzzzzzz"]  # the last one fills the block (BOS + 15 = block_size 16)

NODE_RUNNER = """
const fs = require("fs");
const M = require(process.argv[2]);
const data = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const asks = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
const runs = data.runs.map(M.decodeRun);
const out = asks.map(([ri, k, tokens, T]) => {
  const res = M.forward(runs[ri], k, tokens);
  return { hidden: res.hidden.map((s) => s.map((h) => Array.from(h))), logits: res.logits.map((z) => Array.from(z)),
           probs: M.softmax(res.logits[tokens.length - 1], T) };
});
process.stdout.write(JSON.stringify(out));
"""


def page_params(page_run, k):
    """Snapshot k of a PageRun (k counts the page's snapshots) as the page holds it, as
    a params dict: gpt_forward on it computes what the page's forward pass does."""
    cfg = page_run.history.cfg
    flat = np.zeros(n_params(cfg))
    flat[:page_run.held.shape[1]] = page_run.held[k]
    params = param_views(flat, cfg)
    if cfg.norm == "sphere":  # the stored scales whose effective values (effective_scales) it holds
        scales = page_run.scales[k].astype(np.float64)
        sizes, factor, o = scale_sizes(cfg), scale_factors(cfg), 0
        for label, name in SCALE_NAMES.items():
            column, o = scales[o:o + sizes[label]], o + sizes[label]
            keys = ["sz"] if name == "sz" else [f"layer{i}.{name}" for i in range(cfg.n_layer)]
            for key, part in zip(keys, np.split(column, len(keys))):
                params[key][:] = part / factor[name]
    return params


def expected(page_run, k, prefix, T):
    """gpt_forward on exactly the weights the page holds: hidden states, logits, softmax(last logits / T)."""
    h = page_run.history
    ids = [len(h.vocab)] + mg.encode(prefix, h.vocab)
    logits, acts = gpt_forward(page_params(page_run, k), ids, h.cfg)
    hidden = [np.reshape(stage, (len(ids), -1)) for stage in acts.hidden]  # (T, C) each
    return ids, hidden, logits, softmax_np(logits[-1] / T)


def asks(runs):
    """(run, snapshot, tokens, T) to ask the page's forward pass, and what gpt_forward says."""
    out = []
    for ri, page_run in enumerate(runs["page_runs"]):
        K = len(page_run.steps)
        for k in (0, K // 3, K - 1):
            for prefix, T in zip(PREFIXES, (1.0, 0.5, 2.0, 1.0)):
                ids, hidden, logits, probs = expected(page_run, k, prefix, T)
                out.append(((ri, k, ids, T), (hidden, logits, probs)))
    return out


def check_page_numbers(results, cases):
    """The page's forward pass against gpt_forward: every hidden state, logit and probability to 1e-9."""
    assert len(results) == len(cases)
    for got, (_, (hidden, logits, probs)) in zip(results, cases):
        assert len(got["hidden"]) == len(hidden)
        for stage, want in zip(got["hidden"], hidden):
            assert np.abs(np.array(stage) - want).max() < 1e-9
        assert np.abs(np.array(got["logits"]) - logits).max() < 1e-9
        assert np.abs(np.array(got["probs"]) - probs).max() < 1e-9


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="no node on PATH: the browser test checks the same")
def test_the_pages_forward_pass_is_gpt_forward_in_node(runs, tmp_path):
    cases = asks(runs)
    data_path, asks_path, runner = tmp_path / "data.json", tmp_path / "asks.json", tmp_path / "run.js"
    data_path.write_text(json.dumps(page_data(runs["html"])), encoding="utf-8")
    asks_path.write_text(json.dumps([a for a, _ in cases]), encoding="utf-8")
    runner.write_text(NODE_RUNNER, encoding="utf-8")
    model = os.path.join(ROOT, "web", "planetarium_model.js")
    result = subprocess.run(["node", str(runner), model, str(data_path), str(asks_path)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    check_page_numbers(json.loads(result.stdout), cases)


def test_the_pages_numbers_stay_within_a_thousandth_of_the_runs(runs):
    """The page holds its matrices to 8-bit steps of each row's change: its probabilities stay within 1e-3 of those
    of the run's own float64 weights (measured: a few 1e-4 at most)."""
    for page_run, norm in zip(runs["page_runs"], ("rmsnorm", "sphere")):
        h = runs[norm]["loaded"]
        worst = 0
        for k in (1, len(page_run.steps) // 2, len(page_run.steps) - 1):
            for prefix in PREFIXES:
                ids = [len(h.vocab)] + mg.encode(prefix, h.vocab)
                exact, _ = gpt_forward(h.params_at(page_run.kept[k]), ids, h.cfg)
                page, _ = gpt_forward(page_params(page_run, k), ids, h.cfg)
                worst = max(worst, max(np.abs(softmax_np(a) - softmax_np(b)).max() for a, b in zip(exact, page)))
        print(f"\n{norm}: the page's probabilities differ from the run's by at most {worst:.1e}")
        assert 0 < worst < 1e-3, (norm, worst)


def test_the_pages_projection_is_aligned_across_runs(runs):
    """Each basis is orthonormal; the sphere run's is turned (orthogonal Procrustes) so that the letters both runs
    know sit nearer to where the first run's sit than with its own principal directions."""
    data = page_data(runs["html"])
    for run, page_run in zip(data["runs"], runs["page_runs"]):
        basis = np.array(run["basis"])
        assert np.allclose(basis @ basis.T, np.eye(3), atol=1e-12)
        assert 0 < sum(run["share"]) <= 1 and run["labels"][-1] == "BOS" and run["steps"] == page_run.steps
    finals = [pr.held[-1, :pr.history.cfg.vocab_size * 16].reshape(-1, 16) for pr in runs["page_runs"]]
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    ref = unit(finals[0] @ np.array(data["runs"][0]["basis"]).T)
    aligned = unit(finals[1] @ np.array(data["runs"][1]["basis"]).T)
    own = unit(finals[1] @ planetarium.principal_directions(finals[1])[0].T)
    gap = lambda m: np.mean(np.linalg.norm(m - ref, axis=1))  # noqa: E731
    assert gap(aligned) < 0.7 * gap(own), (gap(aligned), gap(own))


def test_the_pages_size_formula_is_its_layout():
    from model_config import scale_sizes
    for cfg in (mg.GPTConfig(27), mg.GPTConfig(81, n_embd=32, n_layer=2, norm="sphere"),
                mg.GPTConfig(5, n_embd=8, n_head=2, n_layer=3, block_size=7, norm="sphere")):
        mats, size = planetarium.matrix_layout(cfg)
        rows = sum(r for _, _, r, _ in mats)
        extra = 4 * (sum(scale_sizes(cfg).values()) + 2 * cfg.vocab_size) if cfg.norm == "sphere" else 0
        assert planetarium.snapshot_chars(cfg) == (4 / 3 * (2 * size + 4 * rows + extra),
                                                   4 / 3 * (size + 4 * rows + extra))


def test_runs_whose_first_and_last_snapshots_exceed_the_limit_make_no_page(runs, monkeypatch):
    monkeypatch.setattr(planetarium, "PAGE_LIMIT", 20_000)  # (their first and last snapshots: 19 + 21 kB)
    with pytest.raises(InputError, match="first and last snapshots alone would make a page"):
        planetarium.make_page([(runs[n]["loaded"], n) for n in ("rmsnorm", "sphere")])


def test_snapshots_are_left_out_where_the_weights_move_least():
    rng = np.random.default_rng(0)
    W = np.cumsum(rng.normal(size=(20, 50)), axis=0)
    W[7] = W[6]  # nothing moved: left out first, however large the budget
    assert 7 not in planetarium.choose_snapshots(W, 100) and len(planetarium.choose_snapshots(W, 100)) == 19
    W[12:] = W[11] + 1e-6 * np.arange(8)[:, None]  # the end barely moves
    kept = planetarium.choose_snapshots(W, 10)
    assert len(kept) == 10 and kept[0] == 0 and kept[-1] == 19 and sum(k > 11 for k in kept) <= 2


@pytest.mark.slow
def test_a_pair_of_32_wide_2_layer_runs_makes_a_page_under_5_mb(tmp_path):
    """The largest runs the budget is made for: a pair of --n-embd 32 --n-layer 2 (26,816 weights each, 50 snapshots)
    fits with every snapshot; the page grows by no more than one snapshot's bytes per snapshot shown."""
    folders = []
    for norm in ("rmsnorm", "sphere"):
        folders.append(str(tmp_path / norm))
        assert mg.main(["--engine", "numpy", "--norm", norm, "--steps", "100", "--n-embd", "32", "--n-layer", "2",
                        "--num-samples", "1", "--out", folders[-1]]) == 0
    html = tmp_path / "pair.html"
    assert planetarium.main(folders + ["--html", str(html)]) == 0
    assert os.path.getsize(html) < 5 * 10**6, os.path.getsize(html)
    assert [len(r["steps"]) for r in page_data(html)["runs"]] == [50, 50]
    page_runs = planetarium.make_page([(load_history(os.path.join(f, HISTORY_NAME)), os.path.basename(f))
                                       for f in folders])[1]
    worst = 0
    for pr in page_runs:  # the page's probabilities against the run's own weights, every 7th snapshot
        h = pr.history
        for k in range(0, len(pr.steps), 7):
            for prefix in PREFIXES:
                ids = [len(h.vocab)] + mg.encode(prefix, h.vocab)
                exact, _ = gpt_forward(h.params_at(pr.kept[k]), ids, h.cfg)
                page, _ = gpt_forward(page_params(pr, k), ids, h.cfg)
                worst = max(worst, max(np.abs(softmax_np(a) - softmax_np(b)).max() for a, b in zip(exact, page)))
    print(f"\n32 x 2 pair: page {os.path.getsize(html):,} bytes; its probabilities differ from the runs' by at most "
          f"{worst:.1e}")
    assert worst < 1e-3
    runs = [(load_history(os.path.join(f, HISTORY_NAME)), os.path.basename(f)) for f in folders]
    shown, sizes = [], []
    for count in (10, 20, 40):
        prs = planetarium.prepare_runs(runs, room=sum(planetarium.page_chars(h.cfg, count) for h, _ in runs) + 1)
        shown.append(sum(len(pr.steps) for pr in prs))
        sizes.append(sum(len(json.dumps(pr.parts)) for pr in prs))
    per_snapshot = max(planetarium.snapshot_chars(h.cfg)[1] for h, _ in runs)
    assert all(abs(n - 2 * c) <= 2 for n, c in zip(shown, (10, 20, 40)))
    for i in (1, 2):
        assert sizes[i] - sizes[i - 1] <= (shown[i] - shown[i - 1]) * per_snapshot * 1.01


def test_the_embedded_font_covers_the_pages_characters(runs):
    """A subset of IPAexGothic is in the page (as WOFF), with a glyph for every character of the page's scripts and
    template (both languages) and of the runs' vocabularies; the page needs no font of the machine's."""
    from fontTools.ttLib import TTFont
    text = runs["html"].read_text(encoding="utf-8")
    m = re.search(r'font-family: "PlanetariumGothic";.*?base64,([A-Za-z0-9+/=]+)\)', text)
    assert m, "no embedded font"
    font = TTFont(__import__("io").BytesIO(base64.b64decode(m.group(1))))
    cmap = font.getBestCmap()
    needed = set()
    for name in ("planetarium.html", "planetarium_text.js", "planetarium_page.js"):
        needed |= set(open(os.path.join(ROOT, "web", name), encoding="utf-8").read())
    for norm in ("rmsnorm", "sphere"):
        needed |= set(runs[norm]["loaded"].vocab)
    missing = sorted(c for c in needed - set("\n\r\t") if ord(c) not in cmap)
    assert not missing, [f"U+{ord(c):04X} {c}" for c in missing]
    assert len(base64.b64decode(m.group(1))) < 200_000


# --------------------------------------------------------------------------- bad input

def planetarium_cli(*args):
    result = subprocess.run([sys.executable, os.path.join(ROOT, "planetarium.py"), *map(str, args)],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    return result.returncode, result.stdout, result.stderr


def check_one_line(code, out, err, *words):
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("planetarium: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


@pytest.mark.slow
def test_bad_input_on_the_command_line_is_one_line_and_exit_2(runs, tmp_path):
    good = os.path.join(runs["sphere"]["dir"], HISTORY_NAME)
    check_one_line(*planetarium_cli(tmp_path / "missing"), "not found")
    (tmp_path / "empty_run").mkdir()
    check_one_line(*planetarium_cli(tmp_path / "empty_run"), "no history.npz", "--out")
    check_one_line(*planetarium_cli(good), "not a folder")
    for kind in ("truncated", "pickled object", "a header claiming 1e12 weights", "stars off the sphere"):
        folder = tmp_path / kind.replace(" ", "_")
        broken(kind, folder, good)
        check_one_line(*planetarium_cli(runs["rmsnorm"]["dir"], folder), "history")
    check_one_line(*planetarium_cli(runs["sphere"]["dir"], "--html", tmp_path / "no" / "such" / "p.html"),
                   "does not exist")
    check_one_line(*planetarium_cli(*[runs["sphere"]["dir"]] * 5), "at most 4")
    check_one_line(*planetarium_cli("--no-such-flag"))


@pytest.mark.slow
def test_the_command_line_prints_the_pages_path(runs, tmp_path):
    html = tmp_path / "one.html"
    code, out, err = planetarium_cli(runs["sphere"]["dir"], "--html", html)
    assert (code, out, err) == (0, f"{html}\n", "")
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    code, out, _ = planetarium_cli("--help")
    assert code == 0 and "RUN_DIR" in out and "file://" in out and "exit codes" in out
    assert zipfile.is_zipfile(os.path.join(runs["sphere"]["dir"], HISTORY_NAME))  # (a plain .npz, no pickle)


def test_html_never_replaces_a_run_file_a_link_or_a_fifo(runs, tmp_path, capsys):
    """--html RUN/checkpoint.npz, a symbolic link or a FIFO (as /dev/null would be) is refused and left alone."""
    run_dir = runs["sphere"]["dir"]
    history = os.path.join(run_dir, HISTORY_NAME)
    before = open(history, "rb").read()
    target = tmp_path / "target.html"
    target.write_text("mine")
    link = tmp_path / "link.html"
    os.symlink(target, link)
    fifo = tmp_path / "fifo.html"
    os.mkfifo(fifo)
    for path, words in ((history, "does not end in .html"), (tmp_path / "metrics.json", "does not end in .html"),
                        (link, "is a symbolic link"), (fifo, "is a FIFO")):
        code = planetarium.main([run_dir, "--html", str(path)])
        out, err = capsys.readouterr()
        check_one_line(code, out, err, words)
    assert open(history, "rb").read() == before and target.read_text() == "mine"
    assert os.path.islink(link) and stat.S_ISFIFO(os.lstat(fifo).st_mode)


# --------------------------------------------------------------------------- what a crafted history cannot do

def crafted(folder, good, change):
    """A run folder whose history is `good`'s with change(meta, arrays) applied (the values a run never writes)."""
    folder.mkdir()
    with np.load(good) as z:
        arrays = {name: z[name] for name in z.files}
    meta = json.loads(str(arrays["meta"]))
    change(meta, arrays)
    arrays["meta"] = np.array(json.dumps(meta))
    write_npz(folder / HISTORY_NAME, **arrays)
    return folder


@pytest.mark.slow
def test_a_folder_name_that_is_not_utf8_makes_a_page(runs, tmp_path):
    """A byte that is not UTF-8 in the run folder's name (Python holds it as a lone surrogate) is written \\xff on
    the page, which is written and opens; it used to be a UnicodeEncodeError traceback."""
    folder = os.path.join(os.fsencode(str(tmp_path)), b"run\xff")
    os.mkdir(folder)
    shutil.copy(os.path.join(runs["sphere"]["dir"], HISTORY_NAME), os.path.join(folder, HISTORY_NAME.encode()))
    result = subprocess.run([sys.executable, os.path.join(ROOT, "planetarium.py"), folder, "--html",
                             str(tmp_path / "p.html")], capture_output=True, cwd=ROOT, timeout=60,
                            env={**os.environ, "LC_ALL": "C.UTF-8"})
    assert result.returncode == 0 and result.stderr == b"", result.stderr.decode(errors="replace")
    assert page_data(tmp_path / "p.html")["runs"][0]["name"] == "run\\xff"
    # the default page, in the folder itself (the path is printed as the file system spells it)
    result = subprocess.run([sys.executable, os.path.join(ROOT, "planetarium.py"), folder], capture_output=True,
                            cwd=ROOT, timeout=60, env={**os.environ, "LC_ALL": "C.UTF-8"})
    assert result.returncode == 0 and os.path.isfile(os.path.join(folder, b"planetarium.html")), result.stderr


@pytest.mark.slow
def test_a_lone_surrogate_in_the_vocabulary_is_shown_by_its_code(runs, tmp_path):
    def change(meta, arrays):
        meta["vocab"][-1] = "\ud800"  # (sorted after every letter, as the loader requires)
    folder = crafted(tmp_path / "run", os.path.join(runs["rmsnorm"]["dir"], HISTORY_NAME), change)
    html = tmp_path / "p.html"
    code, out, err = planetarium_cli(folder, "--html", html)
    assert code == 0 and err == "", err
    run = page_data(html)["runs"][0]
    assert run["labels"][-2] == "U+D800" and run["vocab"][-2] is None


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["train_loss 1e308", "weights x 1e300", "val_loss 1e300"])
def test_values_no_page_can_draw_are_one_line_and_exit_2(runs, tmp_path, kind):
    """Finite but huge values made a page whose data held Infinity or NaN (not JSON: a blank page), with NumPy's
    RuntimeWarnings on stderr; now they are refused in one line."""
    def change(meta, arrays):
        if kind == "train_loss 1e308":
            arrays["train_loss"] = arrays["train_loss"].copy()
            arrays["train_loss"][:, 1] = 1e308
        elif kind == "val_loss 1e300":
            arrays["val_loss"] = arrays["val_loss"].copy()
            arrays["val_loss"][:, 1] = -1e300
        else:
            arrays["params"] = arrays["params"] * 1e300
    folder = crafted(tmp_path / "run", os.path.join(runs["rmsnorm"]["dir"], HISTORY_NAME), change)
    code, out, err = planetarium_cli(folder, "--html", tmp_path / "p.html")
    check_one_line(code, out, err, "1e+06")
    assert "Warning" not in err and not (tmp_path / "p.html").exists()


def write_big_claim(path, snapshots=4, n_embd=512, n_layer=4):
    """A valid rmsnorm history of `snapshots` snapshots of zeros for a model of 12.6 M weights (n_embd 512, 4 layers),
    deflated: a few hundred kB on disk, 400 MB once loaded. Written in chunks, so writing it costs no memory."""
    cfg = mg.GPTConfig(27, n_embd=n_embd, n_head=4, n_layer=n_layer)
    P = n_params(cfg)
    meta = {"format": "microgpt-history", "version": 1, "config": {k: getattr(cfg, k) for k in (
        "vocab_size", "n_embd", "n_head", "n_layer", "block_size", "norm", "alpha_init", "sz_init")},
            "vocab": list("abcdefghijklmnopqrstuvwxyz"), "steps": 10, "count": 50, "dtype": "float64", "skipped": 0,
            "scales": {}}
    small = {"meta": np.array(json.dumps(meta)), "step": np.arange(snapshots, dtype=np.int64) * 3,
             "train_loss": np.array([[1.0, 3.0]]), "val_loss": np.array([[0.0, 3.0]])}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, array in small.items():
            with zf.open(name + ".npy", "w") as f:
                np.lib.format.write_array(f, array)
        with zf.open("params.npy", "w", force_zip64=True) as f:
            header = np.lib.format.header_data_from_array_1_0(np.zeros(1))
            header["shape"] = (snapshots, P)
            np.lib.format.write_array_header_1_0(f, header)
            chunk, left = bytes(2**24), 8 * snapshots * P
            while left:
                f.write(chunk[:min(left, len(chunk))])
                left -= min(left, len(chunk))
    return P


def test_a_history_claiming_more_than_a_page_holds_is_refused_from_its_headers(tmp_path):
    (tmp_path / "run").mkdir()
    P = write_big_claim(tmp_path / "run" / HISTORY_NAME, snapshots=2, n_embd=256, n_layer=8)
    with pytest.raises(InputError, match="limit of 16 MB"):
        planetarium.check_claims(str(tmp_path / "run" / HISTORY_NAME))
    assert P > 6 * 10**6


@pytest.mark.slow
def test_a_small_file_claiming_4_x_12_6_m_weights_is_refused_before_it_is_loaded(tmp_path):
    """A 0.4 MB history whose headers claim 4 snapshots of 12.6 M weights used to take 1.75 GB of memory and make a
    259 MiB page; its claims are now checked against the page's limit first: one line, exit 2, little memory."""
    (tmp_path / "run").mkdir()
    path = tmp_path / "run" / HISTORY_NAME
    assert write_big_claim(path) > 12.5 * 10**6 and os.path.getsize(path) < 10**6
    code, err, peak = peak_rss_mb([str(tmp_path / "run")], script="planetarium.py")
    check_one_line(code, "", err, "limit of 16 MB")
    assert peak < 300, f"peak memory {peak:.0f} MB"
    assert not (tmp_path / "run" / "planetarium.html").exists()


def spearman(a, b):
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def test_the_maps_nearness_to_h_and_the_probabilities(runs):
    """The measurement behind the page's choice of map for the output stars: over 150 prefixes of names, how well
    the map's cosine of each output star with h ranks the real next-character probabilities (Spearman), for the
    global map (3 principal directions of wte), a map centred on h (h and the 2 principal directions of the output
    stars around it), and the global map with each output star moved to its true angle from h (what the page draws,
    its map cosine being the true one). Printed with -s; docs/planetarium.md quotes it."""
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    docs = mg.load_corpus("names")
    rng = np.random.default_rng(0)
    lines = []
    for page_run, norm in zip(runs["page_runs"], ("rmsnorm", "sphere")):
        h = page_run.history
        k = len(page_run.steps) - 1
        p = page_params(page_run, k)
        basis = planetarium.principal_directions(p["wte"])[0]
        scores = {"global": [], "centred on h": [], "true angle from h": []}
        errors = {"global": [], "centred on h": []}
        for d in rng.choice(docs, 150, replace=False):
            prefix = d[:rng.integers(0, len(d))][:h.cfg.block_size - 1]
            logits, acts = gpt_forward(p, [len(h.vocab)] + mg.encode(prefix, h.vocab), h.cfg)
            last = acts.hidden[-1][..., -1, :].ravel()  # the last position's final hidden state
            hv, probs, lm = unit(last), softmax_np(logits[-1]), unit(p["lm_head"])
            true = lm @ hv
            rest = lm - np.outer(true, hv)
            centred = np.vstack([hv, np.linalg.svd(rest - rest.mean(0), full_matrices=False)[2][:2]])
            for name, b in (("global", basis), ("centred on h", centred)):
                on_map = unit(lm @ b.T) @ unit(b @ hv)
                scores[name].append(spearman(on_map, probs))
                errors[name].append(np.abs(on_map - true).mean())
            scores["true angle from h"].append(spearman(true, probs))
        med = {name: float(np.median(s)) for name, s in scores.items()}
        lines.append(f"{norm}: Spearman(map nearness to h, p), median over 150 prefixes: " + ", ".join(
            f"{name} {m:.2f}" for name, m in med.items()) + "; mean |map cos - true cos| to h: " + ", ".join(
            f"{name} {np.mean(e):.3f}" for name, e in errors.items()) + ", true angle 0")
        assert med["true angle from h"] > med["global"] + 0.1 and med["true angle from h"] > med["centred on h"]
    print("\n" + "\n".join(lines))


def test_planetarium_turns_a_failed_allocation_into_one_line(tmp_path, corpus, capsys, monkeypatch):
    import planetarium
    out = tmp_path / "run"
    assert run_cli(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])[0] == EXIT_OK

    def no_memory(runs, lang=None):
        raise MemoryError

    monkeypatch.setattr(planetarium, "make_page", no_memory)
    assert planetarium.main([str(out)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "not enough memory" in err
    one_clean_line(err)


def test_a_run_with_a_checkpoint_but_no_history_gets_advice_that_works(tmp_path, capsys):
    corpus = os.path.join(ROOT, "tests", "data", "checkpoint_v1_sphere.npz")
    (tmp_path / "run").mkdir()
    shutil.copy(corpus, tmp_path / "run" / "checkpoint.npz")
    code = planetarium.main([str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and ", which starts one" in err
    command = shlex.split(err.split("continue it with ")[1].split(", which starts one")[0])
    assert command[0] == sys.executable and os.path.samefile(command[1], os.path.join(ROOT, "microgpt.py"))
    assert command[2:] == ["--resume", "--out", str(tmp_path / "run")]


@pytest.mark.parametrize("name", ["my runs/a b", "-x"])
def test_suggested_commands_are_quoted_and_take_a_dash_value_as_flag_value(tmp_path, capsys, monkeypatch, name):
    """A folder named with a space or starting with "-": the suggested command quotes it (shlex) and writes
    --out=-x, so that it runs as printed, from where the planetarium was started."""
    monkeypatch.chdir(tmp_path)
    os.makedirs(name)
    assert planetarium.main(["--", name] if name.startswith("-") else [name]) == 2
    err = capsys.readouterr().err
    command = shlex.split(err.split("e.g. ")[1])
    assert command[0] == sys.executable and os.path.samefile(command[1], os.path.join(ROOT, "microgpt.py"))
    out = command[command.index("--out") + 1] if "--out" in command else command[-1].removeprefix("--out=")
    assert out == name and (name != "-x" or command[-1] == "--out=-x")


def test_a_fifo_as_history_is_refused_not_waited_on(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    os.mkfifo(tmp_path / "run" / HISTORY_NAME)
    assert planetarium.main([str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "is a FIFO, not a regular file" in err and err.count("\n") == 1


def test_an_empty_html_path_is_refused_not_replaced_by_the_default(runs, tmp_path, capsys):
    assert planetarium.main([runs["rmsnorm"]["dir"], "--html", ""]) == 2
    assert "--html needs the path of the page to write (it is empty)" in capsys.readouterr().err
    assert not os.path.exists(os.path.join(runs["rmsnorm"]["dir"], "planetarium.html"))


def test_the_example_page_in_docs_is_current(tmp_path):
    """docs/planetarium.html is what `python planetarium.py docs/examples/names-rmsnorm docs/examples/names-sphere
    --html docs/planetarium.html` writes today, and stays within the page's budget."""
    runs = [os.path.join(ROOT, "docs", "examples", name) for name in ("names-rmsnorm", "names-sphere")]
    page = tmp_path / "planetarium.html"
    assert planetarium.main([*runs, "--html", str(page)]) == 0
    want = open(os.path.join(ROOT, "docs", "planetarium.html"), encoding="utf-8").read()
    differences = page_differences(page.read_text(encoding="utf-8"), want)
    assert not differences, ("docs/planetarium.html is stale: rebuild it with the command in "
                             "docs/examples/README.md", differences)
    assert len(want.encode("utf-8")) < planetarium.PAGE_BUDGET


def test_the_note_on_snapshots_left_out_comes_only_when_the_pages_size_left_some_out(tmp_path, corpus, monkeypatch,
                                                                                   capsys):
    """A run whose weights never moved (--lr 1e-300) repeats one snapshot: the page keeps its first and last and says
    nothing; a run that moved, under a budget too small for all of its snapshots, is told how many were left out."""
    for name, lr in (("still", "1e-300"), ("moving", "0.01")):
        assert mg.main(TINY + ["--corpus", corpus, "--steps", "60", "--lr", lr, "--out", str(tmp_path / name)]) == 0
    capsys.readouterr()
    assert planetarium.main([str(tmp_path / "still")]) == EXIT_OK
    assert capsys.readouterr().err == ""
    moving = load_history(str(tmp_path / "moving" / HISTORY_NAME))
    room = planetarium.page_overhead([(moving, "moving")]) + planetarium.page_chars(moving.cfg, 10)
    monkeypatch.setattr(planetarium, "PAGE_BUDGET", room)  # (10 of its 50 snapshots fit)
    assert planetarium.main([str(tmp_path / "moving")]) == EXIT_OK
    assert re.fullmatch(r"planetarium: note: \d+ snapshots where the weights move least are left out, to keep the "
                        r"page near \d MB\n", capsys.readouterr().err)
