"""step_player.py records the chapter's own gpt() / gpt_sphere() and backward(): every recorded number is
checked against the NumPy engine (gpt_forward's Activations, gpt_backward's gradients) to 1e-12 in float64, for
both norms; each step's line is the statement that made its variables; the recording does not depend on how the
Python version reports a comprehension's lines; a learner's edit is recorded, a learner's bug is a traceback; the
command's errors are one line with exit code 2; the committed example page is current."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from cli_helpers import ROOT, page_differences

import microgpt as mg
import step_player as sp
from numpy_engine import gpt_backward, gpt_forward

PAGE_BUDGET = 2 * 10**6  # bytes: the default model and a 16-character name take about 1 MB

VOCAB = list("abcdefghijklmnopqrstuvwxyz")
NAME = "annabel"


def model(norm, n_layer=2, seed=3):
    """A model of each norm whose weights are not the init's alone: the scales moved off their start."""
    cfg = mg.GPTConfig(len(VOCAB) + 1, n_embd=8, n_head=2, n_layer=n_layer, block_size=16, norm=norm)
    params = mg.init_params(cfg, seed)
    rng = np.random.default_rng(seed)
    for a in params.values():
        if a.ndim == 1:
            a *= 1 + 0.5 * rng.random(a.shape)
    return params, cfg


@pytest.fixture(scope="module", params=["rmsnorm", "sphere"])
def recorded(request):
    params, cfg = model(request.param)
    return sp.record(params, cfg, VOCAB, NAME), params, cfg


def made(rec, position):
    """{(layer, head, statement text, k): Var}: what each statement of the model made at one position, the k-th
    time that text runs in the layer (the layer and head as the loop variables li and h / hd were then; a head is
    None before the layer's heads' loop)."""
    code, found, li, head, seen = rec.codes[0], {}, None, None, {}
    for step in rec.steps:
        if step.pos != position or step.depth:
            continue
        text = code.lines[step.line - code.first].strip()
        if "li" in step.changed:  # a new layer: its heads' loop has not run yet
            li, head = step.changed["li"].data, None
        loop = "hd" if code.name == "gpt_sphere" else "h"  # (gpt_sphere's h is the hidden state)
        head = step.changed[loop].data if loop in step.changed else head
        k = seen[li, head, text] = seen.get((li, head, text), -1) + 1
        for name, var in step.changed.items():
            found[li, head, text, k, name] = var
        if step.returned is not None:
            found[li, head, text, k, "return"] = step.returned
    return found


def pick(found, li, head, start, name, k=0):
    """The Var `name` made by the statement starting with `start` (its k-th run in layer li, head)."""
    hits = [v for (l_, h_, text, k_, n), v in found.items()
            if (l_, h_, k_, n) == (li, head, k, name) and text.startswith(start)]
    assert len(hits) == 1, (li, head, start, name, k, len(hits))
    return hits[0]


def same(var, want):
    np.testing.assert_allclose(np.asarray(var.data, dtype=float), np.asarray(want).reshape(np.shape(var.data)),
                               rtol=1e-12, atol=1e-12)


def expected_rmsnorm(found, acts, t, cfg):
    H, hd = cfg.n_head, cfg.head_dim
    same(pick(found, None, None, "x = [t + p", "x"), acts.embedding[t])
    same(pick(found, None, None, "x = rmsnorm(x)", "x"), acts.hidden[0][0, t])
    for li, b in enumerate(acts.layers):
        h_last = H - 1  # statements after the heads' loop ran with h at its last value
        same(pick(found, li, None, "x = rmsnorm(x)", "x"), b.attn_in[t])
        for name in "qkv":
            same(pick(found, li, None, f"{name} = linear", name), getattr(b, name)[0, :, t, :])
        for h in range(H):
            same(pick(found, li, h, "attn_weights = softmax", "attn_weights"), b.attn_weights[0, h, t, :t + 1])
            same(pick(found, li, h, "head_out =", "head_out"), b.attn_heads[t, h * hd:(h + 1) * hd])
        same(pick(found, li, h_last, "x = [a + b", "x"), b.x_mid[t])
        same(pick(found, li, h_last, "x = rmsnorm(x)", "x"), b.mlp_in[t])
        same(pick(found, li, h_last, "x = linear(x, state_dict[f'layer{li}.mlp_fc1'])", "x"), b.mlp_preact[t])
        same(pick(found, li, h_last, "x = [xi.relu()", "x"), b.mlp_act[t])
        same(pick(found, li, h_last, "x = [a + b", "x", k=1), acts.hidden[2 * li + 2][0, t])


def expected_sphere(found, acts, t, cfg):
    H = cfg.n_head
    same(pick(found, None, None, "h = l2_normalize([t + p", "h"), acts.hidden[0][0, t])
    for li, b in enumerate(acts.layers):
        last, head = H - 1, None
        same(pick(found, li, head, "sqk = [", "sqk"), b.s_qk)
        same(pick(found, li, head, "q = linear", "q"), b.q_raw[0, t])
        same(pick(found, li, head, "k = linear", "k"), b.k_raw[0, t])
        same(pick(found, li, head, "v = linear", "v"), b.v[0, :, t, :])
        same(pick(found, li, head, "q = [s * qi", "q"), b.q[0, :, t, :])
        same(pick(found, li, head, "k = [s * ki", "k"), b.k[0, :, t, :])
        for h in range(H):
            same(pick(found, li, h, "attn_weights = softmax", "attn_weights"), b.attn_weights[0, h, t, :t + 1])
        same(pick(found, li, last, "h_attn = linear", "h_attn"), b.attn_step.h_block[t])
        same(pick(found, li, last, "h = l2_normalize([hi + ai * (hai", "h"), b.mlp_in[t])
        same(pick(found, li, last, "u = [ui * si", "u"), b.mlp_preact[t])
        same(pick(found, li, last, "u = [ui.relu()", "u"), b.mlp_act[t])
        same(pick(found, li, last, "h_mlp = linear", "h_mlp"), b.mlp_step.h_block[t])
        same(pick(found, li, last, "h = l2_normalize([hi + ai * (hmi", "h"), acts.hidden[2 * li + 2][0, t])


def dlogits_of(logits, targets):
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    probs[np.arange(len(targets)), targets] -= 1
    return probs / len(targets)


def test_every_recorded_number_is_the_numpy_engines(recorded):
    """At every position: the values each statement made equal gpt_forward's Activations, and the logits it
    returned, to 1e-12; the gradients equal gpt_backward's, for the parameters and for the vectors."""
    rec, params, cfg = recorded
    tokens = np.array(rec.tokens)
    logits, acts = gpt_forward(params, tokens[:-1], cfg)
    dlogits = dlogits_of(logits, tokens[1:])
    grads = gpt_backward(dlogits, acts, params, cfg)
    assert len(rec.calls) == len(tokens) - 1 == len(NAME) + 1
    for t in range(len(rec.calls)):
        found = made(rec, t)
        (expected_sphere if cfg.norm == "sphere" else expected_rmsnorm)(found, acts, t, cfg)
        returned = [v for key, v in found.items() if key[-1] == "return"]
        assert len(returned) == 1
        same(returned[0], logits[t])
        np.testing.assert_allclose(returned[0].grad(), dlogits[t], rtol=1e-12, atol=1e-15)
        # tok_emb and pos_emb are rows of wte and wpe themselves: their grads are those rows' gradients
        tok_emb = pick(found, None, None, "tok_emb", "tok_emb")
        np.testing.assert_allclose(tok_emb.grad(), grads["wte"][tokens[t]], rtol=1e-12, atol=1e-15)
        pos_emb = pick(found, None, None, "pos_emb", "pos_emb")
        np.testing.assert_allclose(pos_emb.grad(), grads["wpe"][t], rtol=1e-12, atol=1e-15)
        if cfg.norm == "rmsnorm":  # the embedding's sum: wpe's row t is used at position t alone
            embedding = pick(found, None, None, "x = [t + p", "x")
            np.testing.assert_allclose(embedding.grad(), grads["wpe"][t], rtol=1e-12, atol=1e-15)
    for key, g in grads.items():
        np.testing.assert_allclose(rec.param_grads[key], g, rtol=1e-10, atol=1e-14, err_msg=key)
    nll = -np.log(np.exp(logits - logits.max(-1, keepdims=True)) /
                  np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True))
    assert math.isclose(rec.loss, nll[np.arange(len(tokens) - 1), tokens[1:]].mean(), rel_tol=1e-12)


def test_each_step_is_the_statement_that_made_its_variables(recorded):
    """A step's line is where its statement starts, and every local it changed is bound (or grown, for the KV
    cache and x_attn) by that statement's text: a line offset by one, or a change put on the wrong step, fails."""
    rec = recorded[0]
    code = rec.codes[0]
    starts = set(code.statement.values())
    for step in rec.steps:
        assert step.line in starts, step
        lines = [i for i, start in code.statement.items() if start == step.line]
        text = " ".join(code.lines[i - code.first] for i in lines)
        for name in step.changed:
            grown = {"keys": "keys[li].append", "values": "values[li].append", "x_attn": "x_attn.extend"}
            assert (name in grown and grown[name] in text) or \
                any(f"{name}{sep}" in text for sep in (" = ", ", ", " in ")), (step.line, text, name)
    assert [s.depth for s in rec.steps] == [0] * len(rec.steps)


def test_into_records_the_chapters_functions_one_level_down():
    """--into: linear, softmax and rmsnorm (l2_normalize in sphere mode) are recorded at depth 1, inside the model's
    steps, each call with its argument and what it returned; the model's own steps are unchanged."""
    for norm, inside in (("rmsnorm", {"linear", "softmax", "rmsnorm"}), ("sphere", {"linear", "softmax", "l2_normalize"})):
        params, cfg = model(norm, n_layer=1)
        plain, into = sp.record(params, cfg, VOCAB, "bo"), sp.record(params, cfg, VOCAB, "bo", into=True)
        assert {s.function for s in into.steps if s.depth == 1} == inside
        assert [(s.line, list(s.changed)) for s in into.steps if s.depth == 0] == \
            [(s.line, list(s.changed)) for s in plain.steps]
        calls = [s for s in into.steps if s.depth == 1 and s.args is not None]
        returns = [s for s in into.steps if s.depth == 1 and s.returned is not None]
        assert len(calls) == len(returns) > 0
        assert all(r.returned.kind == "vec" for r in returns)


def test_the_sphere_lines_that_differ_from_gpt_are_marked():
    gpt, sphere = sp.Code.of(mg.gpt), sp.Code.of(mg.gpt_sphere)
    marked = sp.differing_lines(gpt, sphere)
    text = {sphere.lines[i - sphere.first].strip() for i in marked}
    assert any(line.startswith("h = l2_normalize([t + p") for line in text)
    assert any(line.startswith("sqk = [") for line in text)
    assert not any(line.startswith(("for li in range", "v = linear(", "keys[li].append")) for line in text)


def test_probabilities_are_softmax():
    rec = sp.record(*model("rmsnorm", n_layer=1), VOCAB, "bo")
    for logits in rec.logits:
        want = np.exp(np.array(logits) - max(logits))
        np.testing.assert_allclose(sp.probabilities(logits), want / want.sum(), rtol=1e-14)


def run_main(capsys, argv):
    try:
        code = sp.main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path):
    """A missing run folder, one without a checkpoint, a name with a character outside the vocabulary, an empty
    name, a name longer than the block, three runs, a page path that is not .html: one line, exit 2, no page."""
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [([str(tmp_path / "nope")], "not found"), ([str(empty)], "no checkpoint.npz"),
             (["--name", "Emma"], "knows only the characters"), (["--name", ""], "knows only"),
             (["--name", "a" * 17], "17 characters; the block holds 16"),
             ([str(empty)] * 3, "3 runs given"), (["--html", str(tmp_path / "page.txt")], ".html")]
    for argv, words in cases:
        code, out, err = run_main(capsys, argv + (["--html", str(tmp_path / "p.html")] if "--html" not in argv else []))
        assert code == 2, (argv, out, err)
        assert words in err and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
    assert not os.path.exists(tmp_path / "p.html")


def learners_copy(folder, old, new):
    """microgpt.py with one line of gpt() changed, in `folder`; step_player.py run there finds it first."""
    text = open(os.path.join(ROOT, "microgpt.py"), encoding="utf-8").read()
    start = text.index("def gpt(")
    at = text.index(old, start)
    assert at < text.index("def gpt_sphere(")
    with open(os.path.join(folder, "microgpt.py"), "w", encoding="utf-8") as f:
        f.write(text[:at] + new + text[at + len(old):])


def step_player_in(folder, *args):
    code = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; import step_player; "
            "sys.exit(step_player.main(sys.argv[3:]))")
    return subprocess.run([sys.executable, "-c", code, str(folder), ROOT, *args], capture_output=True, text=True,
                          timeout=300, cwd=str(folder))


@pytest.mark.slow
def test_a_learners_edit_is_recorded_and_a_learners_bug_is_a_traceback_at_their_line(tmp_path):
    edited = "        x = [xi.relu() for xi in x]  # my relu"
    learners_copy(tmp_path, "        x = [xi.relu() for xi in x]", edited)
    proc = step_player_in(tmp_path, "--html", "p.html", "--name", "bo")
    assert proc.returncode == 0, proc.stderr
    assert "# my relu" in (tmp_path / "p.html").read_text(encoding="utf-8")
    broken = "        x = linear(x, state_dict[f'layer{li}.mlp_fc1'])"
    learners_copy(tmp_path, "        x = linear(x, state_dict[f'layer{li}.mlp_fc2'])", broken)
    proc = step_player_in(tmp_path, "--html", "q.html", "--name", "bo")
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert f'{tmp_path / "microgpt.py"}", line' in proc.stderr and broken.strip() in proc.stderr, proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1].startswith("ValueError: linear: x has 64 entries")
    assert not (tmp_path / "q.html").exists()


EXAMPLES = os.path.join(ROOT, "docs", "examples")
EXAMPLE_RUNS = [os.path.join(EXAMPLES, "names-rmsnorm"), os.path.join(EXAMPLES, "names-sphere")]


def test_the_example_page_in_docs_is_current(capsys, tmp_path):
    """docs/step_player.html is what `python step_player.py docs/examples/names-rmsnorm docs/examples/names-sphere
    --html docs/step_player.html` writes today, on every Python (CI runs this on 3.10 to 3.13: the recording does
    not depend on how a version reports a comprehension's lines), and stays under its 2 MB budget."""
    page = tmp_path / "step_player.html"
    assert run_main(capsys, [*EXAMPLE_RUNS, "--html", str(page)])[0] == 0
    got = page.read_text(encoding="utf-8")
    want = open(os.path.join(ROOT, "docs", "step_player.html"), encoding="utf-8").read()
    assert not page_differences(got, want), ("docs/step_player.html is stale: rebuild it with the command in "
                                             "docs/examples/README.md", page_differences(got, want))
    assert len(want.encode("utf-8")) < PAGE_BUDGET


def test_the_size_is_estimated_from_above_and_a_page_too_large_is_refused_before_recording():
    for norm, into, name in (("rmsnorm", False, "annabel"), ("sphere", True, "bo")):
        params, cfg = model(norm)
        size = len(json.dumps(sp.export(sp.record(params, cfg, VOCAB, name, into)), separators=(",", ":")))
        assert size <= sp.page_bytes(cfg, len(name) + 1, into) <= 2 * size
    big = mg.GPTConfig(len(VOCAB) + 1, n_embd=512, n_head=8, n_layer=8, block_size=64)
    with pytest.raises(sp.InputError, match="would take about"):
        sp.check_size([(None, big, VOCAB, "", 0)], "a" * 40, False)


@pytest.mark.slow
def test_the_default_models_page_for_a_16_character_name_is_under_2_mb(capsys, tmp_path):
    page = tmp_path / "p.html"
    assert run_main(capsys, ["--name", "abcdefghijklmnop", "--html", str(page)])[0] == 0
    assert page.stat().st_size < PAGE_BUDGET


def test_help_explains_the_command(capsys):
    code, out, err = run_main(capsys, ["--help"])
    assert code == 0 and not err
    for words in ("RUN_DIR", "--name", "--into", "--html", "--lang", "file://", "exit codes: 0 ok, 2 bad input"):
        assert words in out, words
