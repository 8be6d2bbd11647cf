"""microgpt.py: engine agreement, finite differences, sphere invariants, learning, resume, sampling."""
import os

import numpy as np
import pytest
from cli_helpers import TINY, run

import microgpt as mg
import numpy_engine
from harness.checkpoints import RunIdentity, load_checkpoint, load_run, save_checkpoint
from harness.errors import EXIT_OK, InputError
from microgpt import GPTConfig, init_params, loss_and_grads

WORDS = ["anna", "bob", "carla", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"]
VOCAB = mg.build_vocab(WORDS)
V = len(VOCAB) + 1


def rel_err(a, b):
    """Norm-wise relative error of two arrays (robust to entries that are exactly zero in both)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(np.abs(a).max(), np.abs(b).max(), 1e-300)
    return float(np.abs(a - b).max() / scale)


def toks(words, vocab=VOCAB):
    return [mg.doc_tokens(w, vocab) for w in words]


# ----------------------------------------------------------------------------- config and parameters


def test_sphere_params_init():
    cfg = GPTConfig(vocab_size=27, norm="sphere")
    p = init_params(cfg, seed=0)
    base = 16 ** -0.5
    for key in ("layer0.attn_alpha", "layer0.mlp_alpha", "layer0.attn_sqk", "sz"):
        np.testing.assert_allclose(p[key], base)
    np.testing.assert_allclose(p["layer0.mlp_su"], 1.0)
    for key, axis in mg.sphere_axes(cfg).items():
        np.testing.assert_allclose(np.linalg.norm(p[key], axis=axis), 1.0, atol=1e-14)


def test_retraction_rows_and_columns_as_ngpt_puts_them_on_the_sphere():
    """Written from the nGPT equations, not from sphere_axes: rows of wte, wpe, lm_head, wq/wk/wv, fc1; columns of
    wo, fc2."""
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, n_layer=2, norm="sphere")
    params = init_params(cfg, seed=0)
    rng = np.random.default_rng(1)
    for a in params.values():
        a[...] = rng.normal(size=a.shape)
    scales = {k: a.copy() for k, a in params.items() if a.ndim == 1}
    mg.retract(params, cfg)
    rows = ["wte", "wpe", "lm_head"] + [f"layer{i}.{n}" for i in range(2)
                                         for n in ("attn_wq", "attn_wk", "attn_wv", "mlp_fc1")]
    cols = [f"layer{i}.{n}" for i in range(2) for n in ("attn_wo", "mlp_fc2")]
    assert sorted(rows + cols) == sorted(k for k, a in params.items() if a.ndim == 2)
    for key in rows:
        np.testing.assert_allclose(np.linalg.norm(params[key], axis=1), 1.0, rtol=1e-14, err_msg=key)
    for key in cols:
        np.testing.assert_allclose(np.linalg.norm(params[key], axis=0), 1.0, rtol=1e-14, err_msg=key)
    for key, a in scales.items():  # the scale vectors are not normalized
        np.testing.assert_array_equal(params[key], a)


def reference_logits(params, tokens, cfg):
    """The nGPT equations for one sequence, one position at a time, in plain NumPy (independent of microgpt)."""
    C, H = cfg.n_embd, cfg.n_head
    hd, base = C // H, C ** -0.5
    P = {k: np.asarray(a) for k, a in params.items()}
    norm = lambda v: v / np.linalg.norm(v)  # noqa: E731
    rms = lambda v: v / np.sqrt(np.mean(v * v) + 1e-5)  # noqa: E731
    soft = lambda z: np.exp(z - z.max()) / np.exp(z - z.max()).sum()  # noqa: E731
    keys, vals, out = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)], []
    for pos, tok in enumerate(tokens):
        e = P["wte"][tok] + P["wpe"][pos]
        if cfg.norm == "rmsnorm":
            x = rms(e)
            for i in range(cfg.n_layer):
                L = lambda n, i=i: P[f"layer{i}.{n}"]  # noqa: E731
                xn = rms(x)
                q, k, v = L("attn_wq") @ xn, L("attn_wk") @ xn, L("attn_wv") @ xn
                keys[i].append(k)
                vals[i].append(v)
                heads = []
                for s in range(0, C, hd):
                    w = soft(np.array([q[s:s + hd] @ kt[s:s + hd] / np.sqrt(hd) for kt in keys[i]]))
                    heads.append(sum(wt * vt[s:s + hd] for wt, vt in zip(w, vals[i])))
                x = L("attn_wo") @ np.concatenate(heads) + x
                x = L("mlp_fc2") @ np.maximum(L("mlp_fc1") @ rms(x), 0) + x
            out.append(P["lm_head"] @ x)
        else:
            h = norm(e)
            for i in range(cfg.n_layer):
                L = lambda n, i=i: P[f"layer{i}.{n}"]  # noqa: E731
                sqk = L("attn_sqk") * (1 / base)
                q, k, v = L("attn_wq") @ h, L("attn_wk") @ h, L("attn_wv") @ h
                k = np.concatenate([sqk[s:s + hd] * norm(k[s:s + hd]) for s in range(0, C, hd)])
                keys[i].append(k)
                vals[i].append(v)
                heads = []
                for s in range(0, C, hd):
                    q_h = sqk[s:s + hd] * norm(q[s:s + hd])
                    w = soft(np.array([q_h @ kt[s:s + hd] * np.sqrt(hd) for kt in keys[i]]))
                    heads.append(sum(wt * vt[s:s + hd] for wt, vt in zip(w, vals[i])))
                h_a = L("attn_wo") @ np.concatenate(heads)
                alpha_a = np.abs(L("attn_alpha") * (0.05 / base))
                h = norm(norm(h) + alpha_a * (norm(h_a) - norm(h)))
                u = (L("mlp_fc1") @ h) * (L("mlp_su") * np.sqrt(C))
                h_m = L("mlp_fc2") @ np.maximum(u, 0)
                alpha_m = np.abs(L("mlp_alpha") * (0.05 / base))
                h = norm(norm(h) + alpha_m * (norm(h_m) - norm(h)))
            out.append((P["lm_head"] @ h) * (P["sz"] * (1 / base)))
    return np.array(out)


@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
def test_both_engines_compute_the_issues_equations(norm):
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, n_layer=2, block_size=8, norm=norm)
    params = init_params(cfg, seed=4)
    rng = np.random.default_rng(2)
    for a in params.values():  # scales off their init, some alphas negative: every factor matters
        if a.ndim == 1:
            a *= rng.uniform(-2, 2, a.shape)
    tokens = mg.doc_tokens("mallory", VOCAB)[:cfg.block_size]
    expected = reference_logits(params, tokens, cfg)
    logits_np, _ = mg.gpt_forward(params, tokens, cfg)
    assert rel_err(logits_np, expected) <= 1e-12
    state_dict = mg.values_from_params(params)
    model = mg.gpt_sphere if norm == "sphere" else mg.gpt
    keys, values = [[] for _ in range(2)], [[] for _ in range(2)]
    logits_value = [[x.data for x in model(t, pos, keys, values, state_dict, cfg)] for pos, t in enumerate(tokens)]
    assert rel_err(logits_value, expected) <= 1e-12


# ----------------------------------------------------------------------------- engines agree

@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
@pytest.mark.parametrize("batch", [1, 3])
def test_engines_agree_default_config(norm, batch):
    cfg = GPTConfig(vocab_size=V, norm=norm)
    params = init_params(cfg, seed=3)
    docs = toks(["mallory", "eve", "frank"][:batch])
    lv, gv = loss_and_grads(params, docs, cfg, engine="value")
    ln, gn = loss_and_grads(params, docs, cfg, engine="numpy")
    assert abs(lv - ln) <= 1e-12 * abs(lv)
    assert list(gv) == list(gn) == list(params)
    for key in params:
        assert gv[key].shape == params[key].shape
        assert rel_err(gv[key], gn[key]) <= 1e-12, key


@pytest.mark.parametrize("norm, riemannian", [("rmsnorm", False), ("sphere", False), ("sphere", True)])
def test_engines_agree_through_adam_steps(norm, riemannian):
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, n_layer=2, block_size=8, norm=norm)
    runs = {engine: mg.train(WORDS[:8], WORDS[8:], VOCAB, cfg, steps=4, batch_size=3, seed=5, engine=engine,
                             riemannian=riemannian, eval_every=2) for engine in ("value", "numpy")}
    a, b = runs["value"], runs["numpy"]
    np.testing.assert_allclose(a.train_loss, b.train_loss, rtol=1e-9)
    for key in a.params:
        assert rel_err(a.params[key], b.params[key]) <= 1e-9, key
    assert rel_err(a.m, b.m) <= 1e-9 and rel_err(a.v, b.v) <= 1e-9


# ----------------------------------------------------------------------------- finite differences

@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
@pytest.mark.parametrize("engine", ["value", "numpy"])
def test_gradients_match_finite_differences(norm, engine):
    cfg = GPTConfig(vocab_size=V, n_embd=4, n_head=2, n_layer=1, block_size=5, norm=norm)
    params = init_params(cfg, seed=11)
    if norm == "sphere":  # move the scales off their init so every term of the gradient is exercised
        rng = np.random.default_rng(0)
        for a in params.values():
            if a.ndim == 1:
                a *= 1 + 0.5 * rng.random(a.shape)
    docs = toks(["mallory", "bob"])  # unequal lengths: padding + cropping (mallory > block_size)
    _, grads = loss_and_grads(params, docs, cfg, engine=engine)
    flat, g = mg.flat_buffer(params), mg.flat_buffer(grads)
    h = 1e-6
    numeric = np.empty_like(flat)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        lp, _ = loss_and_grads(params, docs, cfg, engine="numpy")
        flat[i] = old - h
        lm, _ = loss_and_grads(params, docs, cfg, engine="numpy")
        flat[i] = old
        numeric[i] = (lp - lm) / (2 * h)
    assert rel_err(g, numeric) < 1e-6


def test_loss_definition_mean_over_positions_and_cropping():
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, block_size=4)
    params = init_params(cfg, seed=0)
    a, b = toks(["mallory"]), toks(["bob"])  # mallory: 8 positions, cropped to 4; bob: 4
    la, _ = loss_and_grads(params, a, cfg, engine="numpy")
    lb, _ = loss_and_grads(params, b, cfg, engine="numpy")
    lab, _ = loss_and_grads(params, a + b, cfg, engine="numpy")
    assert lab == pytest.approx((4 * la + 4 * lb) / 8, rel=1e-12)
    cfg8 = GPTConfig(vocab_size=V, n_embd=8, n_head=2, block_size=8)
    p8 = init_params(cfg8, seed=0)
    l1, _ = loss_and_grads(p8, toks(["eve"]), cfg8, engine="numpy")   # 4 positions
    l2, _ = loss_and_grads(p8, toks(["frank"]), cfg8, engine="numpy")  # 6 positions
    l12, _ = loss_and_grads(p8, toks(["eve", "frank"]), cfg8, engine="value")
    assert l12 == pytest.approx((4 * l1 + 6 * l2) / 10, rel=1e-12)


def test_loss_and_grads_rejects_bad_docs():
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2)
    params = init_params(cfg, seed=0)
    with pytest.raises(ValueError, match="at least 2 tokens"):
        loss_and_grads(params, [[V - 1]], cfg, engine="numpy")
    with pytest.raises(ValueError, match="token ids"):
        loss_and_grads(params, [[V - 1, V, V - 1]], cfg, engine="numpy")
    with pytest.raises(ValueError, match="engine"):
        loss_and_grads(params, toks(["bob"]), cfg, engine="torch")


def test_adam_is_the_reference_update():
    """The reference microgpt's per-parameter Adam loop, constants written out: beta1 .85, beta2 .99, eps 1e-8,
    lr .01 decaying linearly to 0; adam_step (called with its defaults, as train does) must match it."""
    import inspect

    from settings import DEFAULTS
    assert inspect.signature(mg.adam_step).parameters["lr"].default == 0.01 == DEFAULTS["lr"]
    rng = np.random.default_rng(0)
    n, num_steps = 7, 5
    flat, m, v = rng.normal(size=n), np.zeros(n), np.zeros(n)
    data, m_ref, v_ref = flat.tolist(), [0.0] * n, [0.0] * n
    for step in range(num_steps):
        grad = rng.normal(size=n)
        mg.adam_step(flat, grad, m, v, step, num_steps)
        lr_t = 0.01 * (1 - step / num_steps)
        for i in range(n):
            m_ref[i] = 0.85 * m_ref[i] + (1 - 0.85) * grad[i]
            v_ref[i] = 0.99 * v_ref[i] + (1 - 0.99) * grad[i] ** 2
            m_hat = m_ref[i] / (1 - 0.85 ** (step + 1))
            v_hat = v_ref[i] / (1 - 0.99 ** (step + 1))
            data[i] -= lr_t * m_hat / (v_hat ** 0.5 + 1e-8)
        np.testing.assert_allclose(flat, data, rtol=1e-14, atol=0)


# ----------------------------------------------------------------------------- sphere invariants

@pytest.mark.parametrize("riemannian", [False, True])
def test_sphere_invariants_after_training(riemannian):
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, n_layer=2, block_size=8, norm="sphere")
    st = mg.train(WORDS[:8], WORDS[8:], VOCAB, cfg, steps=200, batch_size=4, lr=0.02, engine="numpy",
                  riemannian=riemannian, eval_every=200)
    for key, axis in mg.sphere_axes(cfg).items():
        norms = np.linalg.norm(st.params[key], axis=axis)
        assert np.abs(norms - 1).max() <= 1e-12, key
    _, acts = mg.gpt_forward(st.params, numpy_engine.make_batch(toks(WORDS), cfg.block_size)[0], cfg)
    assert len(acts.hidden) == 1 + 2 * cfg.n_layer
    for h in acts.hidden:
        assert np.abs(np.linalg.norm(h, axis=-1) - 1).max() <= 1e-12
    assert st.train_loss[-1] < st.train_loss[0]


def test_forward_records_expose_attention_and_hidden_states():
    cfg = GPTConfig(vocab_size=V, n_layer=2)
    params = init_params(cfg, seed=0)
    tokens = mg.doc_tokens("grace", VOCAB)[:-1]
    logits, acts = mg.gpt_forward(params, tokens, cfg)
    T = len(tokens)
    assert logits.shape == (T, V)
    assert len(acts.layers) == 2 and acts.layers[0].attn_weights.shape == (1, 4, T, T)
    assert len(acts.hidden) == 5 and acts.hidden[-1].shape == (1, T, cfg.n_embd)
    w = acts.layers[1].attn_weights[0]
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert np.all(np.triu(w, 1) == 0)  # causal: nothing attends to the future
    # causality: the logits of a prefix do not depend on what comes after it
    logits3, _ = mg.gpt_forward(params, tokens[:3], cfg)
    np.testing.assert_allclose(logits3, logits[:3], rtol=1e-12, atol=1e-14)


def test_riemannian_needs_sphere():
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2)
    with pytest.raises(ValueError, match="sphere"):
        mg.train(WORDS[:8], WORDS[8:], VOCAB, cfg, steps=1, engine="numpy", riemannian=True)


# ----------------------------------------------------------------------------- learning

@pytest.mark.slow
def test_training_beats_bigram_baseline():
    docs = mg.load_corpus("names")
    vocab = mg.build_vocab(docs)
    train_docs, val_docs = mg.split_docs(docs, seed=0)
    cfg = GPTConfig(vocab_size=len(vocab) + 1)
    base = mg.baselines(toks(train_docs, vocab), toks(val_docs, vocab), cfg)
    assert base["bigram"] < base["unigram"] < base["uniform"]
    st = mg.train(train_docs, val_docs, vocab, cfg, steps=1500, batch_size=8, engine="numpy", seed=0,
                  eval_every=500)
    assert [s for s, _ in st.val_loss] == [0, 500, 1000, 1500]
    assert len(st.train_loss) == 1500
    assert st.val_loss[-1][1] < base["bigram"] < st.val_loss[0][1]


def test_baselines_on_a_known_corpus():
    vocab = ["a", "b"]
    cfg = GPTConfig(vocab_size=3, n_embd=4, n_head=1)
    train_t, val_t = toks(["ab"] * 10, vocab), toks(["ab"], vocab)
    base = mg.baselines(train_t, val_t, cfg)
    assert base["uniform"] == pytest.approx(np.log(3))
    # bigram with add-one: P(a|BOS) = 11/13, P(b|a) = 11/13, P(BOS|b) = 11/13
    assert base["bigram"] == pytest.approx(-np.log(11 / 13))


# ----------------------------------------------------------------------------- resume and checkpoints

@pytest.mark.parametrize("norm, engine", [("rmsnorm", "numpy"), ("sphere", "numpy"), ("rmsnorm", "value")])
def test_resume_reproduces_uninterrupted_run(tmp_path, norm, engine):
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, block_size=8, norm=norm)
    n, k = (30, 12) if engine == "numpy" else (6, 2)
    kw = dict(steps=n, batch_size=2, lr=0.02, seed=7, engine=engine, eval_every=5)
    full = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, **kw)

    class StopAtK:  # what the command line's Ctrl-C does between steps
        def before_update(self, state, loss, grad):
            return False

        def after_update(self, state, loss, drift):
            return state.step == k

    part = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, observer=StopAtK(), **kw)
    assert part.step == k
    save_checkpoint(tmp_path / "ck.npz", part)
    loaded = load_checkpoint(tmp_path / "ck.npz")
    resumed = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, **kw, resume=loaded)
    assert resumed.step == n and loaded.step == k  # (the state given in is left as it was)
    for key in full.params:
        np.testing.assert_array_equal(resumed.params[key], full.params[key])
    np.testing.assert_array_equal(resumed.m, full.m)
    np.testing.assert_array_equal(resumed.v, full.v)
    assert resumed.train_loss == full.train_loss
    assert resumed.val_loss == full.val_loss


def test_checkpoint_roundtrip_without_pickle(tmp_path):
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, norm="sphere", alpha_init=0.2, sz_init=3.0)
    st = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, steps=3, engine="numpy", riemannian=True)
    path = tmp_path / "ck.npz"
    save_checkpoint(path, st, RunIdentity(corpus="x.txt", run_id="r1", corpus_docs=10))
    with np.load(path, allow_pickle=False) as z:  # every member loads without pickle
        assert "meta" in z.files and all(z[k].dtype != object for k in z.files)
    back, identity = load_run(path)
    assert back.cfg == cfg and back.vocab == VOCAB and back.step == 3 and back.riemannian
    assert identity == RunIdentity(corpus="x.txt", run_id="r1", corpus_docs=10)
    for key in st.params:
        np.testing.assert_array_equal(back.params[key], st.params[key])
    assert not list(tmp_path.glob(".tmp-*"))  # the atomic write leaves no temp file behind


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_load_checkpoint_rejects_damaged_files(tmp_path, damage):
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2)
    st = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, steps=2, engine="numpy")
    path = tmp_path / "ck.npz"
    save_checkpoint(path, st)
    data = path.read_bytes()
    path.write_bytes({"garbage": b"not a checkpoint" * 10, "truncated": data[: len(data) // 2], "empty": b""}[damage])
    with pytest.raises(InputError, match="corrupt"):
        load_checkpoint(path)


def test_load_checkpoint_rejects_incompatible_files(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, weights=np.zeros(3))
    with pytest.raises(InputError, match="incompatible"):
        load_checkpoint(path)
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2)
    st = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, steps=1, engine="numpy")
    save_checkpoint(path, st)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["param:wte"] = np.zeros((3, 3))
    np.savez(path, **arrays)
    with pytest.raises(InputError, match="shape"):
        load_checkpoint(path)
    st.params = {k: (np.zeros((3, 3)) if k == "wte" else a) for k, a in st.params.items()}
    with pytest.raises(InputError, match="cannot save checkpoint: param:wte"):  # nor is such a file written
        save_checkpoint(tmp_path / "bad.npz", st)
    assert not (tmp_path / "bad.npz").exists()


# ----------------------------------------------------------------------------- tokenizer, corpora, sampling

def test_tokenizer_roundtrip_and_unknown_characters():
    assert mg.decode(mg.encode("grace", VOCAB), VOCAB) == "grace"
    t = mg.doc_tokens("bob", VOCAB)
    assert t[0] == t[-1] == len(VOCAB)
    with pytest.raises(InputError, match="'X'.*'!'"):
        mg.encode("boXb!", VOCAB)


def test_builtin_corpora():
    names = mg.load_corpus("names")
    assert len(names) > 4000 and len(set(names)) == len(names)
    assert names[:2] == ["james", "john"] and all(n.isalpha() and n.islower() for n in names)
    jp = mg.load_corpus("jp-names")
    assert len(jp) > 5000 and len(set(jp)) == len(jp)
    assert all("\u3041" <= c <= "\u3096" for name in jp for c in name)


def test_split_is_seeded_and_disjoint():
    docs = [f"d{i}" for i in range(50)]
    tr, va = mg.split_docs(docs, seed=1)
    assert len(va) == 5 and sorted(tr + va) == sorted(docs)
    assert mg.split_docs(docs, seed=1) == (tr, va) and mg.split_docs(docs, seed=2) != (tr, va)


def test_sample_respects_prompt_block_size_and_seed():
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, block_size=6)
    params = init_params(cfg, seed=0)
    a = mg.sample(params, cfg, VOCAB, num_samples=30, temperature=2.0, prompt="ma", seed=3)
    assert len(a) == 30 and all(s.startswith("ma") and len(s) <= cfg.block_size for s in a)
    assert any(len(s) == cfg.block_size for s in a)  # a hot, untrained model runs into the block size
    assert a == mg.sample(params, cfg, VOCAB, num_samples=30, temperature=2.0, prompt="ma", seed=3)
    with pytest.raises(InputError, match="temperature"):
        mg.sample(params, cfg, VOCAB, temperature=0)
    with pytest.raises(InputError, match="'Z'"):
        mg.sample(params, cfg, VOCAB, prompt="Zed")


# ----------------------------------------------------------------------------- inference: the two engines

def trained(norm, steps=60):
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, block_size=8, norm=norm)
    return cfg, mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, steps=steps, batch_size=4, lr=0.03, engine="numpy",
                         eval_every=steps).params


@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
@pytest.mark.parametrize("temperature, prompt", [(0.5, ""), (1.0, "ma"), (2.0, "e"), (1e-300, "")])
def test_value_and_numpy_sampling_agree_sample_for_sample(norm, temperature, prompt):
    cfg, params = trained(norm)
    kw = dict(num_samples=12, temperature=temperature, prompt=prompt, seed=7)
    by_value = mg.sample(params, cfg, VOCAB, engine="value", **kw)
    by_numpy = mg.sample(params, cfg, VOCAB, engine="numpy", **kw)
    assert by_value == by_numpy
    assert all(s.startswith(prompt) and len(s) <= cfg.block_size for s in by_value)
    if temperature < numpy_engine.GREEDY_BELOW:  # greedy: every sample is the same argmax path
        assert len(set(by_value)) == 1
    else:
        assert len(set(by_value)) > 1


def test_sampling_in_chunks_draws_the_same_samples(monkeypatch):
    cfg, params = trained("rmsnorm", steps=10)
    whole = mg.sample(params, cfg, VOCAB, num_samples=10, temperature=1.5, seed=3)
    monkeypatch.setattr(numpy_engine, "SAMPLE_CHUNK", 3)  # 3 + 3 + 3 + 1: rows of the same random stream, in order
    assert mg.sample(params, cfg, VOCAB, num_samples=10, temperature=1.5, seed=3) == whole


def test_value_sampling_is_the_chapters_loop(monkeypatch):
    """engine="value" calls gpt() once per position with a KV cache that grows by one entry per call."""
    cfg, params = trained("rmsnorm", steps=10)
    calls = []
    real = mg.gpt

    def spy(token_id, pos_id, keys, values, state_dict, cfg):
        assert len(keys[0]) == pos_id  # the cache holds exactly the earlier positions
        calls.append((token_id, pos_id))
        return real(token_id, pos_id, keys, values, state_dict, cfg)

    monkeypatch.setattr(mg, "gpt", spy)
    [name] = mg.sample(params, cfg, VOCAB, num_samples=1, temperature=1.0, prompt="da", seed=1, engine="value")
    bos = len(VOCAB)
    ids = [bos] + mg.encode(name, VOCAB)
    assert [t for t, _ in calls] == ids[:len(calls)] and [p for _, p in calls] == list(range(len(calls)))
    assert len(calls) == min(len(name) + 1, cfg.block_size)  # one call per position, until BOS or the block ends


def test_greedy_below_threshold_never_gives_nan():
    cfg, params = trained("sphere", steps=5)
    for t in (1e-320, 5e-324, 1e-101):
        out = mg.sample(params, cfg, VOCAB, num_samples=3, temperature=t, engine="value")
        assert out == mg.sample(params, cfg, VOCAB, num_samples=3, temperature=t, engine="numpy")


def test_checkpoint_written_before_the_module_split_still_loads():
    """tests/data/checkpoint_v1_sphere.npz was written by the single-file microgpt.py (commit 0f36a61)."""
    import os
    path = os.path.join(os.path.dirname(__file__), "data", "checkpoint_v1_sphere.npz")
    state = load_checkpoint(path)
    assert state.cfg.norm == "sphere" and state.step == 6 and state.cfg.vocab_size == len(state.vocab) + 1
    names = ["anna", "bob", "carla", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar",
             "peggy", "sybil", "trent"]
    assert state.vocab == mg.build_vocab(names)
    samples = mg.sample(state.params, state.cfg, state.vocab, num_samples=4, engine="value")
    assert samples == mg.sample(state.params, state.cfg, state.vocab, num_samples=4, engine="numpy")
    train_docs, val_docs = mg.split_docs(names, state.seed)
    more = mg.train(train_docs, val_docs, state.vocab, state.cfg, steps=8, engine="numpy", resume=state)
    assert more.step == 8 and len(more.train_loss) == 8


@pytest.mark.parametrize("laid_out", [True, False])
def test_retract_returns_each_vectors_norm_before_it_was_put_back(laid_out):
    cfg = mg.GPTConfig(vocab_size=7, n_embd=8, n_head=2, n_layer=2, block_size=5, norm="sphere")
    params = mg.init_params(cfg, seed=3)
    rng = np.random.default_rng(0)
    for a in params.values():
        a += 0.1 * rng.standard_normal(a.shape)
    before = {k: a.copy() for k, a in params.items()}
    if not laid_out:
        params = {k: a.copy() for k, a in params.items()}  # separate arrays: the matrix-by-matrix path
    norms = np.concatenate(mg.retract(params, cfg))
    expected = [np.linalg.norm(before[k], axis=axis) for k, axis in mg.sphere_axes(cfg).items()]
    np.testing.assert_allclose(norms, np.concatenate(expected), rtol=1e-13)
    assert not np.allclose(norms, 1.0)  # the update had moved them off the sphere


def test_a_tiny_temperature_is_greedy_not_nan(corpus, capsys):
    code, out, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "30", "--temperature", "1e-320"])
    assert code == EXIT_OK, err
    assert "below 1e-100: taking the most likely character each time (greedy)" in out
    names = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("sample ")]
    assert len(set(names)) == 1  # greedy: the same argmax path for every sample

def test_float32_weights_at_a_tiny_temperature_sample_greedily_not_from_nan(tmp_path, corpus, capsys):
    out = str(tmp_path / "f32")
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "30", "--dtype", "float32", "--out", out])[0] == 0
    ckpt = os.path.join(out, "checkpoint.npz")
    code, text, err = run(capsys, ["--sample-only", "--checkpoint", ckpt, "--temperature", "1e-39"])
    assert code == EXIT_OK and not err
    state = load_checkpoint(ckpt)
    greedy = mg.sample(state.params, state.cfg, state.vocab, num_samples=1, temperature=1e-300)[0]
    assert f"sample  1: {greedy}\n" in text


# ----------------------------------------------------------------------------- the API never rewrites its input

class Quiet:
    def before_update(self, state, loss, grad):
        return False

    def after_update(self, state, loss, drift):
        return False


def tiny_state(steps=4, **settings):
    tr, va = mg.split_docs(WORDS)
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, block_size=8)
    state = mg.train(tr, va, VOCAB, cfg, steps=steps, engine="numpy", observer=Quiet(), **settings)
    return tr, va, cfg, state


def test_two_branches_from_one_state_are_independent():
    """train(resume=state) continues a copy: the state given keeps its step, lr and weights, and a second branch
    from it trains the same steps as the first (not 0), at its own lr."""
    tr, va, cfg, s0 = tiny_state(lr=0.005)
    before = {k: a.copy() for k, a in s0.params.items()}
    a = mg.train(tr, va, VOCAB, cfg, **dict(s0.settings(), steps=8), resume=s0, observer=Quiet())
    b = mg.train(tr, va, VOCAB, cfg, **dict(s0.settings(), steps=8), resume=s0, observer=Quiet())
    c = mg.train(tr, va, VOCAB, cfg, **dict(s0.settings(), steps=8, lr=0.001), resume=s0, observer=Quiet())
    assert (s0.step, s0.lr, len(s0.train_loss)) == (4, 0.005, 4)
    assert all(np.array_equal(before[k], s0.params[k]) for k in before)
    assert (a.step, b.step, a.lr, c.lr) == (8, 8, 0.005, 0.001)
    assert a.train_loss == b.train_loss and a.params["wte"] is not b.params["wte"]
    assert c.train_loss[4:] != a.train_loss[4:]


@pytest.mark.parametrize("engine", ["numpy", "value"])
@pytest.mark.parametrize("vocab", [VOCAB[:-1], VOCAB + ["z"], list(reversed(VOCAB)), "".join(VOCAB)])
def test_sample_refuses_a_vocabulary_that_does_not_fit_the_config(engine, vocab):
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, block_size=8)
    with pytest.raises(InputError, match="vocabulary does not match vocab_size"):
        mg.sample(init_params(cfg), cfg, vocab, num_samples=2, engine=engine)


@pytest.mark.parametrize("dtype", [np.complex128, np.int64, np.float16])
def test_weights_of_another_dtype_are_refused_at_the_door(dtype):
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2, block_size=8)
    params = {k: a.astype(dtype) for k, a in init_params(cfg).items()}
    with pytest.raises(InputError, match="has dtype"):
        loss_and_grads(params, toks(WORDS[:2]), cfg, engine="numpy")
    with pytest.raises(InputError, match="has dtype"):
        mg.sample(params, cfg, VOCAB, num_samples=2)


@pytest.mark.parametrize("kind", ["numpy", "fraction"])
def test_settings_of_numpy_scalars_or_fractions_become_plain_python(tmp_path, kind):
    """A NumPy scalar or a Fraction passes the rules; train() keeps them as the plain numbers they hold, so the
    state saves as JSON (before: "int64 is not JSON serializable")."""
    from fractions import Fraction
    number = np.float64 if kind == "numpy" else (lambda x: Fraction(x).limit_denominator())
    whole = np.int64 if kind == "numpy" else int  # (Fraction(2, 1) is no integer: refused, as it should be)
    _, _, _, state = tiny_state(steps=int(whole(3)), lr=number(0.01), batch_size=whole(2), seed=whole(1),
                                eval_every=whole(2), riemannian=np.bool_(False))
    assert [type(getattr(state, k)) for k in ("lr", "batch_size", "seed", "eval_every", "riemannian")] == \
        [float, int, int, int, bool]
    save_checkpoint(tmp_path / "ck.npz", state)
    assert load_checkpoint(tmp_path / "ck.npz").lr == 0.01


def test_train_is_the_same_under_a_tracer(monkeypatch):
    """A diverging run raises the engine's NumericError whether or not a trace function is set (pdb, coverage,
    a profiler): train() never asks which; the caller that holds the last good state reports divergence."""
    import sys

    def diverging():
        tiny_state(steps=6, lr=1e300)

    with pytest.raises(mg.NumericError, match="not finite"):
        diverging()
    old = sys.gettrace()
    sys.settrace(lambda *args: None)
    try:
        with pytest.raises(mg.NumericError, match="not finite"):
            diverging()
    finally:
        sys.settrace(old)
