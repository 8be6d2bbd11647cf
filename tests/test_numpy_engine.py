"""numpy_engine.py: each layer's backward against finite differences of its forward, and the whole
engine against the Value engine (loss and every gradient to 1e-12 in float64, both norms, batch 1
and a padded batch); float32 follows float64 within float32's precision."""

import numpy as np
import pytest

import microgpt as mg
import numpy_engine as ne
from harness.checkpoints import load_checkpoint, save_checkpoint
from harness.errors import InputError
from model_config import pack_params
from sphere import l2_normalize_np, l2_normalize_np_backward
from utils import (
    cross_entropy_np,
    cross_entropy_np_backward,
    linear_np,
    linear_np_backward,
    rmsnorm_np,
    rmsnorm_np_backward,
)

WORDS = ["anna", "bob", "carla", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy",
         "mallory", "oscar"]
VOCAB = mg.build_vocab(WORDS)
V = len(VOCAB) + 1
RNG = np.random.default_rng(0)


def rel_err(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.abs(a - b).max() / max(np.abs(a).max(), np.abs(b).max(), 1e-300))


def numerical_grads(f, inputs, h=1e-6):
    """d sum(f(*inputs) * G) / d input for each input, by central differences; G a fixed random
    array."""
    G = np.random.default_rng(1).normal(size=np.shape(f(*inputs)))
    grads = []
    for x in inputs:
        g = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            old = x[i]
            x[i] = old + h
            plus = np.sum(f(*inputs) * G)
            x[i] = old - h
            minus = np.sum(f(*inputs) * G)
            x[i] = old
            g[i] = (plus - minus) / (2 * h)
        grads.append(g)
    return G, grads


FD_TOL = 1e-7  # central differences with h = 1e-6 are good to about 1e-9 relative here


def test_embedding_backward_matches_finite_differences():
    wte, wpe = RNG.normal(size=(5, 3)), RNG.normal(size=(4, 3))
    tokens = np.array([[1, 3, 1], [0, 1, 2]])  # token 1 three times, token 4 and position 3 never

    def f(wte, wpe):
        return ne.embedding_forward(wte, wpe, tokens)
    G, (dwte, dwpe) = numerical_grads(f, [wte, wpe])
    got_wte, got_wpe = np.full_like(wte, np.nan), np.full_like(wpe, np.nan)  # every row is written
    ne.embedding_backward(G, tokens, got_wte, got_wpe)
    assert rel_err(got_wte, dwte) <= FD_TOL and rel_err(got_wpe, dwpe) <= FD_TOL
    assert not got_wte[4].any() and not got_wpe[3].any()


def test_matrix_product_backward_matches_finite_differences():
    x, w = RNG.normal(size=(4, 3)), RNG.normal(size=(5, 3))
    G, (dx, dw) = numerical_grads(linear_np, [x, w])
    got_dx, got_dw = linear_np_backward(G, x, w)
    assert rel_err(got_dx, dx) <= FD_TOL and rel_err(got_dw, dw) <= FD_TOL


def test_rmsnorm_backward_from_the_kept_factor_matches_finite_differences():
    x = RNG.normal(size=(4, 6))
    y, inv_rms = rmsnorm_np(x, return_inv_rms=True)
    assert inv_rms.shape == (4, 1) and np.array_equal(y, rmsnorm_np(x))
    G, (dx,) = numerical_grads(rmsnorm_np, [x])
    assert rel_err(rmsnorm_np_backward(G, x, inv_rms), dx) <= FD_TOL
    assert rel_err(rmsnorm_np_backward(G, x, inv_rms), rmsnorm_np_backward(G, x)) <= 1e-14


def test_l2_normalize_backward_from_the_kept_norm_and_output_matches_finite_differences():
    x = RNG.normal(size=(2, 3, 4))
    y, norm = l2_normalize_np(x, return_norm=True)
    assert norm.shape == (2, 3, 1) and np.array_equal(y, l2_normalize_np(x))
    G, (dx,) = numerical_grads(l2_normalize_np, [x])
    assert rel_err(l2_normalize_np_backward(G, x, norm=norm), dx) <= FD_TOL
    assert rel_err(l2_normalize_np_backward(G, x, norm=norm, y=y), dx) <= FD_TOL  # the output kept
    x[0, 0] = 0.0  # a clamped row: dx = dy / eps there, with the norm kept as without it
    y, norm = l2_normalize_np(x, return_norm=True)
    kept = l2_normalize_np_backward(G, x, norm=norm, y=y)
    assert rel_err(kept, l2_normalize_np_backward(G, x)) <= 1e-14


@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_attention_backward_matches_finite_differences(scale):
    q, k, v = (RNG.normal(size=(2, 2, 4, 3)) for _ in range(3))
    out, weights = ne.attention_forward(q, k, v, scale)
    assert np.all(np.triu(weights, 1) == 0) and np.allclose(weights.sum(-1), 1.0)  # causal rows
    G, (dq, dk, dv) = numerical_grads(lambda q, k, v: ne.attention_forward(q, k, v, scale)[0],
                                      [q, k, v])
    for got, want in zip(ne.attention_backward(G, q, k, v, weights, scale), (dq, dk, dv)):
        assert rel_err(got, want) <= FD_TOL


def test_attention_is_the_chapters_loop_over_heads_and_positions():
    q, k, v = (RNG.normal(size=(1, 2, 3, 4)) for _ in range(3))
    out, _ = ne.attention_forward(q, k, v, 0.5)
    for h in range(2):
        for t in range(3):
            logits = np.array([q[0, h, t] @ k[0, h, s] * 0.5 for s in range(t + 1)])
            w = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
            assert rel_err(out[0, h, t], w @ v[0, h, :t + 1]) <= 1e-14


def test_residual_step_backward_matches_finite_differences():
    h, h_block, alpha = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)), RNG.uniform(0.1, 0.9, 4)
    h /= np.linalg.norm(h, axis=1, keepdims=True)  # the stream is on the sphere
    G, (dh, db, dalpha) = numerical_grads(lambda h, b, a: ne.residual_step_forward(h, b, a)[0],
                                          [h, h_block, alpha])
    got = ne.residual_step_backward(G, ne.residual_step_forward(h, h_block, alpha)[1])
    for g, want in zip(got, (dh, db, dalpha)):
        assert rel_err(g, want) <= FD_TOL


def test_cross_entropy_backward_matches_finite_differences():
    logits, targets = RNG.normal(size=(5, 4)) * 3, RNG.integers(0, 4, size=5)
    G, (dlogits,) = numerical_grads(lambda z: np.array(cross_entropy_np(z, targets)), [logits])
    assert rel_err(cross_entropy_np_backward(logits, targets, dloss=float(G)), dlogits) <= FD_TOL


def test_relu_backward_passes_where_the_input_is_positive():
    u, dy = np.array([-1.0, 0.0, 2.0]), np.array([3.0, 4.0, 5.0])
    assert np.array_equal(ne.relu_backward(dy, u), [0.0, 0.0, 5.0])  # 0 at 0, as Value.relu


# ----------------------------------------------------------------------------- the whole engine


def off_init(params, seed=2):
    """Scales off their init, some alphas negative, one at 0 and one at -0.0: every factor matters.
    """
    rng = np.random.default_rng(seed)
    for key, a in params.items():
        if a.ndim == 1:
            a *= rng.uniform(-2, 2, a.shape)
            if key.endswith("alpha"):
                a[:2] = [0.0, -0.0]
    return params


@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
@pytest.mark.parametrize("words", [["mallory"], ["mallory", "bob", "eve"]],
                         ids=["batch1", "padded"])
def test_the_engine_equals_the_value_engine_to_1e_12(norm, words):
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2, n_layer=2, block_size=8, norm=norm)
    params = off_init(mg.init_params(cfg, seed=4))
    docs = [mg.doc_tokens(w, VOCAB) for w in words]
    loss_v, grads_v = mg.loss_and_grads(params, docs, cfg, engine="value")
    loss, grads = ne.loss_and_grads_np(params, docs, cfg)
    assert abs(loss - loss_v) <= 1e-12 * abs(loss_v)
    assert list(grads) == list(grads_v) == list(params)
    for key in grads:
        assert rel_err(grads[key], grads_v[key]) <= 1e-12, key
    if norm == "sphere":  # d|alpha|/d alpha = +1 at 0 and at -0.0, as gpt_sphere's _abs
        for key in ("layer0.attn_alpha", "layer0.mlp_alpha"):
            assert np.abs(grads_v[key][:2]).min() > 1e-6
            assert rel_err(grads[key][:2], grads_v[key][:2]) <= 1e-12


@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
def test_the_records_hold_what_the_forward_pass_computed(norm):
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2, n_layer=2, block_size=8, norm=norm)
    params = mg.init_params(cfg, seed=4)
    tokens = ne.make_batch([mg.doc_tokens(w, VOCAB) for w in ("mallory", "bob")], cfg.block_size)[0]
    logits, acts = ne.gpt_forward(params, tokens, cfg)
    B, T = tokens.shape
    assert logits.shape == (B, T, V) and len(acts.hidden) == 1 + 2 * cfg.n_layer
    assert all(h.shape == (B, T, cfg.n_embd) for h in acts.hidden)
    for layer, before, after in zip(acts.layers, acts.hidden[0::2], acts.hidden[1::2]):
        assert layer.q.shape == layer.k.shape == layer.v.shape == (B, 2, T, 4)
        assert layer.attn_weights.shape == (B, 2, T, T) and layer.attn_heads.shape == (B * T, 8)
        assert np.array_equal(ne.merge_heads(layer.attn_weights @ layer.v), layer.attn_heads)
        x_in = layer.x_in if norm == "rmsnorm" else layer.h_in
        assert np.array_equal(x_in.reshape(B, T, -1), before)
        x_mid = layer.x_mid if norm == "rmsnorm" else layer.mlp_in
        assert np.array_equal(x_mid.reshape(B, T, -1), after)
    assert np.array_equal(acts.final, acts.hidden[-1].reshape(B * T, -1))


def test_grads_written_into_a_reused_buffer_are_the_same_as_fresh_ones():
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2, norm="sphere")
    params = mg.init_params(cfg, seed=1)
    _, out = mg.alloc_params(cfg)
    for words in (["mallory"], ["bob", "eve"], ["ivan"]):
        docs = [mg.doc_tokens(w, VOCAB) for w in words]
        fresh = ne.loss_and_grads_np(params, docs, cfg)[1]
        reused = ne.loss_and_grads_np(params, docs, cfg, out)[1]
        assert reused is out
        for key in fresh:
            np.testing.assert_array_equal(reused[key], fresh[key])


def test_a_params_dict_that_is_not_one_flat_buffer_works_the_same():
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2)
    params = mg.init_params(cfg, seed=3)
    loose = {k: a.copy() for k, a in params.items()}  # each array on its own
    docs = [mg.doc_tokens("grace", VOCAB)]
    assert ne.loss_and_grads_np(loose, docs, cfg)[0] == ne.loss_and_grads_np(params, docs, cfg)[0]


# ----------------------------------------------------------------------------- float32

# float32 has 24 bits (eps 1.2e-7); a forward and backward pass of ~100 ops loses a few
FLOAT32_RTOL = 2e-5


@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
def test_float32_loss_and_gradients_follow_float64(norm):
    cfg = mg.GPTConfig(vocab_size=V, n_embd=16, n_head=4, n_layer=2, block_size=8, norm=norm)
    p64 = mg.init_params(cfg, seed=5)
    rng = np.random.default_rng(3)
    for a in p64.values():
        if a.ndim == 1:
            a *= rng.uniform(0.5, 2, a.shape)
    p32 = pack_params(p64, cfg, np.float32)
    assert all(a.dtype == np.float32 for a in p32.values())
    docs = [mg.doc_tokens(w, VOCAB) for w in ("mallory", "bob", "eve")]
    l64, g64 = ne.loss_and_grads_np(p64, docs, cfg)
    l32, g32 = ne.loss_and_grads_np(pack_params(p32, cfg), docs, cfg)
    # computed in float32 throughout, not upcast
    assert all(a.dtype == np.float32 for a in g32.values())
    assert abs(l32 - l64) <= FLOAT32_RTOL * abs(l64)
    for key in g64:
        assert rel_err(g32[key], g64[key]) <= FLOAT32_RTOL, key


@pytest.mark.slow
def test_a_float32_run_learns_like_float64():
    docs = mg.load_corpus("names")
    vocab = mg.build_vocab(docs)
    train_docs, val_docs = mg.split_docs(docs, seed=0)
    cfg = mg.GPTConfig(vocab_size=len(vocab) + 1)
    base = mg.baselines([mg.doc_tokens(d, vocab) for d in train_docs],
                        [mg.doc_tokens(d, vocab) for d in val_docs], cfg)
    runs = {dt: mg.train(train_docs, val_docs, vocab, cfg, steps=3000, engine="numpy", dtype=dt,
                         eval_every=3000) for dt in ("float32", "float64")}
    assert runs["float32"].params["wte"].dtype == np.float32
    assert runs["float32"].m.dtype == np.float32
    for st in runs.values():
        assert st.val_loss[-1][1] < base["bigram"]
    assert abs(runs["float32"].val_loss[-1][1] - runs["float64"].val_loss[-1][1]) < 0.02


class StopAt12:
    """An observer that stops a run after 12 steps (what Ctrl-C does under the command line)."""

    def before_update(self, state, loss, grad):
        return False

    def after_update(self, state, loss, drift):
        return state.step == 12


def test_float32_checkpoints_record_their_dtype_and_resume_bit_exactly(tmp_path):
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2, block_size=8, norm="sphere")
    kw = dict(steps=30, batch_size=2, lr=0.02, seed=7, engine="numpy", eval_every=5,
              dtype="float32")
    full = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, **kw)

    part = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, observer=StopAt12(), **kw)
    save_checkpoint(tmp_path / "ck.npz", part)
    with np.load(tmp_path / "ck.npz") as z:
        assert z["param:wte"].dtype == np.float32 and z["adam_m"].dtype == np.float32
    loaded = load_checkpoint(tmp_path / "ck.npz")
    assert loaded.params["wte"].dtype == np.float32
    resumed = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, **kw, resume=loaded)
    for key in full.params:
        np.testing.assert_array_equal(resumed.params[key], full.params[key])
    np.testing.assert_array_equal(resumed.m, full.m)
    assert resumed.train_loss == full.train_loss


def test_float32_needs_the_numpy_engine():
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2)
    with pytest.raises(InputError, match="float64 only"):
        mg.train(WORDS[:8], WORDS[8:], VOCAB, cfg, steps=1, engine="value", dtype="float32")
    with pytest.raises(InputError, match="dtype must be one of"):
        mg.init_params(cfg, dtype="float16")
