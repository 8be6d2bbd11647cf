"""The planetarium's data (issue 19): the history a run keeps (harness/history.py) and the page planetarium.py
writes from it. Stars on the sphere, the page's forward pass against forward_np, the bounds on snapshot count and
size, and one clear line with exit 2 for every bad input. (The page in a real browser: test_planetarium_browser.py.)"""
import base64
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from cli_helpers import TINY, interrupt_at, write_corpus

import microgpt as mg
import planetarium
from harness.errors import InputError
from harness.history import (
    BUDGET_BYTES,
    HISTORY_NAME,
    MAX_CURVE,
    History,
    load_history,
    snapshot_steps,
    unit_vector_count,
)
from model_config import effective_scales, n_params
from numpy_engine import forward_np
from utils import softmax_np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = 300
MB = 2**20


def make_runs(base, steps=STEPS):
    """Two runs of the default model from the same seed, rmsnorm and sphere, NumPy engine, each with --out (as a
    learner makes them), and the page for both."""
    out = {}
    for norm in ("rmsnorm", "sphere"):
        folder = base / norm
        assert mg.main(["--engine", "numpy", "--norm", norm, "--steps", str(steps), "--num-samples", "1",
                        "--out", str(folder)]) == 0
        ckpt = mg.load_checkpoint(str(folder / "checkpoint.npz"))
        out[norm] = {"dir": str(folder), "params": ckpt.params, "train_loss": ckpt.train_loss,
                     "val_loss": ckpt.val_loss, "loaded": load_history(folder / HISTORY_NAME)}
    out["html"] = base / "two.html"
    assert planetarium.main([out["rmsnorm"]["dir"], out["sphere"]["dir"], "--html", str(out["html"])]) == 0
    return out


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

def test_the_history_is_what_the_run_recorded(runs):
    for norm in ("rmsnorm", "sphere"):
        loaded = runs[norm]["loaded"]
        assert loaded.step.tolist() == snapshot_steps(STEPS)
        final = loaded.params_at(len(loaded) - 1)  # the last snapshot is the checkpoint's weights, bit for bit
        for key, array in runs[norm]["params"].items():
            assert np.array_equal(final[key], array), key
        assert loaded.vocab == mg.build_vocab(mg.load_corpus("names")) and loaded.steps == STEPS
        assert loaded.val_loss.tolist() == [[float(s), v] for s, v in runs[norm]["val_loss"]]
        assert np.array_equal(loaded.train_loss[:, 1], runs[norm]["train_loss"])
    assert runs["rmsnorm"]["loaded"].drift is None and runs["rmsnorm"]["loaded"].scales is None


def test_sphere_stars_are_unit_vectors_in_the_history_and_on_the_page(runs):
    h = runs["sphere"]["loaded"]
    for k in range(len(h)):
        p = h.params_at(k)
        for key in ("wte", "lm_head"):
            assert np.abs(np.linalg.norm(p[key], axis=1) - 1).max() < 1e-9, (k, key)
    run = page_data(runs["html"])["runs"][1]
    V, C = h.cfg.vocab_size, h.cfg.n_embd
    stars = decode(run["stars"], np.float64).reshape(len(h), 2, V, C)  # the page's wte | lm_head, every snapshot
    assert np.abs(np.linalg.norm(stars, axis=3) - 1).max() < 1e-9
    assert np.array_equal(stars[:, 0], h.params[:, :V * C].reshape(-1, V, C))


def test_the_scales_are_the_effective_ones(runs):
    h = runs["sphere"]["loaded"]
    eff = effective_scales(h.params_at(len(h) - 1), h.cfg)
    assert np.array_equal(h.scales[-1], np.concatenate([eff[n] for n in ("alpha_A", "alpha_M", "s_qk", "s_u", "s_z")]))
    assert np.allclose(h.scales[0][-h.cfg.vocab_size:], h.cfg.sz_init)  # s_z starts at sz_init


def test_drift_is_the_norm_before_the_retraction():
    """One Adam step by hand: the rows before the retraction are drift * the retracted rows, for every unit
    vector (wte rows first, as microgpt.retract lists them), and step 0 has no drift."""
    docs = ["anna", "bob", "eve", "otto"]
    vocab = mg.build_vocab(docs)
    cfg = mg.GPTConfig(len(vocab) + 1, n_embd=8, n_head=2, block_size=8, norm="sphere")
    params = mg.init_params(cfg)
    h = History(cfg, vocab, 5)
    h.record(0, params)
    flat = mg.flat_buffer(params)
    m, v = np.zeros_like(flat), np.zeros_like(flat)
    _, grads = mg.loss_and_grads(params, [mg.doc_tokens(d, vocab) for d in docs[:2]], cfg, "numpy")
    mg.adam_step(flat, mg.flat_buffer(grads), m, v, 0, 5, lr=0.05)
    before = {key: params[key].copy() for key in ("wte", "lm_head")}
    h.record(1, params, mg.retract(params, cfg))
    V, T = cfg.vocab_size, cfg.block_size
    assert h.drift.shape == (2, unit_vector_count(cfg)) and np.isnan(h.drift[0]).all()
    d = h.drift[1]
    assert np.abs(d[:V] - 1).max() > 1e-4  # the step really moved the stars off the sphere
    assert np.allclose(d[:V, None] * h.params_at(1)["wte"], before["wte"], rtol=0, atol=1e-14)
    assert np.allclose(d[V + T:2 * V + T, None] * h.params_at(1)["lm_head"], before["lm_head"], rtol=0, atol=1e-14)


# --------------------------------------------------------------------------- count and size

def test_the_snapshot_schedule():
    for steps in (1, 10, 49, 50, 300, 1000, 12345, 10**6):
        s = snapshot_steps(steps)
        assert s[0] == 0 and s[-1] == steps and s == sorted(set(s))
        assert len(s) == min(50, steps + 1)
    s = snapshot_steps(1000)
    assert sum(x <= 100 for x in s) >= 15  # a tenth of the run holds a third of the snapshots: early is dense
    assert max(np.diff(s)) <= 2 * 1000 / 50  # and none of the later gaps is large


def test_the_file_stays_small_for_the_default_model_and_a_million_steps(runs, tmp_path):
    for norm in ("rmsnorm", "sphere"):
        size = os.path.getsize(os.path.join(runs[norm]["dir"], HISTORY_NAME))
        assert len(runs[norm]["loaded"]) == 50 and size < 5 * MB, (norm, size)
    # a million steps: 50 snapshots, and the loss curves are averaged down to MAX_CURVE points
    h0 = runs["sphere"]["loaded"]
    h = History(h0.cfg, h0.vocab, 10**6)
    params = h0.params_at(len(h0) - 1)
    for step in range(0, 10**6 + 1):
        if h.due(step):
            h.record(step, params, None if step == 0 else [np.ones(unit_vector_count(h0.cfg))])
    path = tmp_path / HISTORY_NAME
    train = np.random.default_rng(0).uniform(2, 3, 10**6)
    h.save(path, train, [(s, 2.5) for s in range(0, 10**6 + 1, 100)])
    loaded = load_history(path)
    assert len(loaded) == 50 and os.path.getsize(path) < 5 * MB
    assert len(loaded.train_loss) == len(loaded.val_loss) == MAX_CURVE
    assert abs(loaded.train_loss[:, 1].mean() - train.mean()) < 1e-9  # means of equal runs keep the mean


def test_a_big_model_keeps_fewer_snapshots():
    cfg = mg.GPTConfig(27, n_embd=128, n_head=4, n_layer=2)  # 400k parameters: 10 snapshots
    h = History(cfg, list("abcdefghijklmnopqrstuvwxyz"), 1000)
    assert 2 <= h.count < 50 and h.count * 8 * n_params(cfg) <= BUDGET_BYTES


def test_the_page_for_two_runs_stays_under_5_mb(runs):
    size = os.path.getsize(runs["html"])
    assert 1 * MB < size < 5 * MB, size
    text = runs["html"].read_text(encoding="utf-8")
    # self-contained: no address to fetch anything from, a policy that forbids it anyway
    assert not re.search(r"(src|href)\s*=\s*[\"'](https?:)?//", text) and "default-src 'none'" in text


@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
def test_an_interrupted_and_resumed_run_records_the_history_of_an_uninterrupted_one(tmp_path, capsys, monkeypatch,
                                                                                     norm):
    corpus = write_corpus(str(tmp_path))
    args = TINY + ["--corpus", corpus, "--norm", norm, "--steps", "120", "--eval-every", "20"]
    assert mg.main(args + ["--out", str(tmp_path / "whole")]) == 0
    with monkeypatch.context() as patch:
        interrupt_at(patch, 47)  # Ctrl-C during step 47: the step finishes, the checkpoint and history are saved
        assert mg.main(args + ["--out", str(tmp_path / "cut")]) == 130
    assert mg.main(["--resume", "--out", str(tmp_path / "cut"), "--num-samples", "3"]) == 0
    whole, cut = (load_history(tmp_path / name / HISTORY_NAME) for name in ("whole", "cut"))
    assert whole.step.tolist() == cut.step.tolist() == snapshot_steps(120)
    assert np.array_equal(whole.params, cut.params)  # bit for bit, like the resumed weights
    if norm == "sphere":
        assert np.array_equal(whole.drift, cut.drift, equal_nan=True)
    assert np.array_equal(whole.train_loss, cut.train_loss) and np.array_equal(whole.val_loss, cut.val_loss)
    capsys.readouterr()


def test_resume_keeps_the_snapshots_and_the_schedule(runs):
    h0 = runs["sphere"]["loaded"]
    cut = History(h0.cfg, h0.vocab, STEPS)  # a run stopped at step 100 ...
    for k, step in enumerate(h0.step):
        if step <= 100:
            cut.record(int(step), h0.params_at(k), None if step == 0 else [h0.drift[k]])
    resumed = History(h0.cfg, h0.vocab, STEPS, previous=cut)  # ... and resumed with the same plan
    for k, step in enumerate(h0.step):
        if step > 100:
            assert resumed.due(int(step))
            resumed.record(int(step), h0.params_at(k), [h0.drift[k]])
    assert resumed.step.tolist() == h0.step.tolist() and np.array_equal(resumed.params, h0.params)
    longer = History(h0.cfg, h0.vocab, 3 * STEPS, previous=h0)  # a longer plan: evenly spaced, count kept
    due = [s for s in range(STEPS + 1, 3 * STEPS + 1) if longer.due(s)]
    assert due[-1] == 3 * STEPS and len(h0) + len(due) <= h0.count + 2
    with pytest.raises(ValueError):
        History(runs["rmsnorm"]["loaded"].cfg, h0.vocab, STEPS, previous=h0)


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


def expected(h, k, prefix, T):
    """forward_np on exactly the weights the page holds: hidden states, logits, softmax(last logits / T)."""
    ids = [len(h.vocab)] + mg.encode(prefix, h.vocab)
    logits, cache = forward_np(planetarium.page_params(h, k), ids, h.cfg)
    return ids, [s[0] for s in cache["hidden"]], logits, softmax_np(logits[-1] / T)


def asks(runs):
    """(run, snapshot, tokens, T) to ask the page's forward pass, and what forward_np says."""
    out = []
    for ri, norm in enumerate(("rmsnorm", "sphere")):
        h = runs[norm]["loaded"]
        for k in (0, len(h) // 3, len(h) - 1):
            for prefix, T in zip(PREFIXES, (1.0, 0.5, 2.0, 1.0)):
                ids, hidden, logits, probs = expected(h, k, prefix, T)
                out.append(((ri, k, ids, T), (hidden, logits, probs)))
    return out


def check_page_numbers(results, cases):
    """The page's forward pass against forward_np: every hidden state, logit and probability to 1e-9."""
    assert len(results) == len(cases)
    for got, (_, (hidden, logits, probs)) in zip(results, cases):
        assert len(got["hidden"]) == len(hidden)
        for stage, want in zip(got["hidden"], hidden):
            assert np.abs(np.array(stage) - want).max() < 1e-9
        assert np.abs(np.array(got["logits"]) - logits).max() < 1e-9
        assert np.abs(np.array(got["probs"]) - probs).max() < 1e-9


@pytest.mark.skipif(shutil.which("node") is None, reason="no node on PATH: the browser test checks the same")
def test_the_pages_forward_pass_is_forward_np_in_node(runs, tmp_path):
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


def test_float32_matrices_change_the_pages_numbers_by_rounding_only(runs):
    """The page holds wpe and the layers' matrices in float32: its probabilities stay within 1e-5 of the run's."""
    for norm in ("rmsnorm", "sphere"):
        h = runs[norm]["loaded"]
        k = len(h) - 1
        ids = [len(h.vocab)] + mg.encode("em", h.vocab)
        exact, _ = forward_np(h.params_at(k), ids, h.cfg)
        page, _ = forward_np(planetarium.page_params(h, k), ids, h.cfg)
        assert 0 < np.abs(softmax_np(exact[-1]) - softmax_np(page[-1])).max() < 1e-5


def test_the_pages_projection(runs):
    data = page_data(runs["html"])
    for run, norm in zip(data["runs"], ("rmsnorm", "sphere")):
        h = runs[norm]["loaded"]
        basis = np.array(run["basis"])
        assert np.allclose(basis @ basis.T, np.eye(3), atol=1e-12)  # orthonormal principal directions
        assert 0 < sum(run["share"]) <= 1 and run["labels"][-1] == "BOS" and run["steps"] == h.step.tolist()


# --------------------------------------------------------------------------- bad input

def planetarium_cli(*args):
    result = subprocess.run([sys.executable, os.path.join(ROOT, "planetarium.py"), *map(str, args)],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    return result.returncode, result.stdout, result.stderr


def write_npz(path, **arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def broken(kind, folder, good):
    """Make `folder` a run folder whose history.npz is broken in the way `kind` says."""
    folder.mkdir()
    path = folder / HISTORY_NAME
    raw = open(good, "rb").read()
    if kind == "random bytes":
        path.write_bytes(np.random.default_rng(0).bytes(5000))
    elif kind == "truncated":
        path.write_bytes(raw[:len(raw) // 2])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "a folder":
        path.mkdir()
    else:
        with np.load(good) as z:
            arrays = {name: z[name] for name in z.files}
        meta = json.loads(str(arrays["meta"]))
        if kind == "pickled object":
            arrays["params"] = np.full(arrays["params"].shape, None, dtype=object)  # the right shape, pickled
            with open(path, "wb") as f:
                np.savez(f, **arrays)  # (savez pickles object arrays; the loader must refuse to unpickle)
            return
        if kind == "a header claiming 1e12 weights":
            meta["config"]["n_embd"] = 2**20
            meta["config"]["n_head"] = 1
        elif kind == "stars off the sphere":
            arrays["params"] = arrays["params"] * 1.5
        elif kind == "another format":
            meta["format"] = "something-else"
        elif kind == "steps out of order":
            arrays["step"] = arrays["step"][::-1].copy()
        elif kind == "NaN weights":
            arrays["params"] = arrays["params"].copy()
            arrays["params"][3, 7] = np.nan
        elif kind == "an extra member":
            arrays["extra"] = np.zeros(3)
        arrays["meta"] = np.array(json.dumps(meta))
        write_npz(path, **arrays)


BROKEN = ["random bytes", "truncated", "empty", "a folder", "pickled object", "a header claiming 1e12 weights",
          "stars off the sphere", "another format", "steps out of order", "NaN weights", "an extra member"]


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_history_is_one_line_in_process(runs, tmp_path, kind):
    broken(kind, tmp_path / "run", os.path.join(runs["sphere"]["dir"], HISTORY_NAME))
    with pytest.raises(InputError) as e:
        planetarium.load_run(str(tmp_path / "run"))
    assert "\n" not in str(e.value) and "history" in str(e.value)


def check_one_line(code, out, err, *words):
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("planetarium: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


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


def test_atomic_write_replaces_only_regular_files(tmp_path):
    from harness.errors import WriteError
    from harness.run_files import atomic_write
    fifo, link = tmp_path / "fifo", tmp_path / "link"
    os.mkfifo(fifo)
    os.symlink(tmp_path / "elsewhere", link)
    for path in (fifo, link):
        with pytest.raises(WriteError, match="not a regular file"):
            atomic_write(str(path), lambda f: f.write(b"x"))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.path.islink(link)
    assert not (tmp_path / "elsewhere").exists() and sorted(os.listdir(tmp_path)) == ["fifo", "link"]
    atomic_write(str(tmp_path / "plain"), lambda f: f.write(b"x"))  # a new file, or a regular one, as before
    atomic_write(str(tmp_path / "plain"), lambda f: f.write(b"y"))
    assert (tmp_path / "plain").read_bytes() == b"y"
