"""numpy_engine.py: every fused piece equals the twins it replaces (1e-12), and the whole fused engine equals the
unfused one (benchmarks/numpy_engine_unfused.py, the twins composed as the formulas read) to 1e-12, in both norms,
at batch 1 and with padding; float32 follows float64 within float32's precision."""
import sys
from pathlib import Path

import numpy as np
import pytest

import microgpt as mg
import numpy_engine as ne
from harness.errors import InputError
from model_config import pack_params
from sphere import l2_normalize_np, l2_normalize_np_backward
from utils import (
    cross_entropy_np,
    cross_entropy_np_backward,
    rmsnorm_np,
    rmsnorm_np_backward,
    softmax_np,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import numpy_engine_unfused as unfused  # noqa: E402

WORDS = ["anna", "bob", "carla", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"]
VOCAB = mg.build_vocab(WORDS)
V = len(VOCAB) + 1


def rel_err(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.abs(a - b).max() / max(np.abs(a).max(), np.abs(b).max(), 1e-300))


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5)])
def test_fused_rmsnorm_equals_the_twin(shape):
    x, dy = RNG.normal(size=shape), RNG.normal(size=shape)
    y, r = ne.rmsnorm_fused(x)
    assert rel_err(y, rmsnorm_np(x)) <= 1e-12
    assert rel_err(ne.rmsnorm_fused_backward(dy, y, r), rmsnorm_np_backward(dy, x)) <= 1e-12


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5)])
def test_fused_l2_normalize_equals_the_twin_also_where_the_norm_is_clamped(shape):
    x, dy = RNG.normal(size=shape), RNG.normal(size=shape)
    if x.ndim > 1:
        x[0] = 0.0          # a zero vector: the clamped branch
        x[-1] *= 1e-14      # a tiny one: clamped too
    y, den, ok = ne.l2_normalize_fused(x)
    assert (ok is None) == (x.ndim == 1)  # no mask is kept when no row was clamped
    assert rel_err(y, l2_normalize_np(x)) <= 1e-12
    assert rel_err(ne.l2_normalize_fused_backward(dy, y, den, ok), l2_normalize_np_backward(dy, x)) <= 1e-12


@pytest.mark.parametrize("weighted", [False, True])
def test_fused_cross_entropy_equals_the_twins(weighted):
    logits, targets = RNG.normal(size=(7, 6)) * 3, RNG.integers(0, 6, size=7)
    if not weighted:
        loss, d = ne.cross_entropy_fused(logits, targets)
        assert rel_err(loss, cross_entropy_np(logits, targets)) <= 1e-12
        assert rel_err(d, cross_entropy_np_backward(logits, targets)) <= 1e-12
        return
    mask = np.array([1, 1, 0, 1, 0, 1, 1], dtype=bool)  # padding: weights 1/count on real positions, 0 elsewhere
    loss, d = ne.cross_entropy_fused(logits, targets, mask / mask.sum())
    assert rel_err(loss, cross_entropy_np(logits[mask], targets[mask])) <= 1e-12
    assert rel_err(d[mask], cross_entropy_np_backward(logits[mask], targets[mask])) <= 1e-12
    assert not d[~mask].any()


def test_fused_attention_equals_softmax_of_masked_scores():
    q, k, v = (RNG.normal(size=(2, 3, 5, 4)) for _ in range(3))
    out, att = ne.attention_np(q, k, v, 0.5, ne._causal_bias(5, np.float64))
    scores = np.where(np.tril(np.ones((5, 5), dtype=bool)), q @ k.swapaxes(-1, -2) * 0.5, -np.inf)
    assert rel_err(att, softmax_np(scores)) <= 1e-12 and rel_err(out, softmax_np(scores) @ v) <= 1e-12
    dy = RNG.normal(size=out.shape)
    got = ne.attention_np_backward(dy, q, k, v, att, 0.5, np.empty((3,) + q.shape))
    want = unfused.attention_np_backward(dy, q, k, v, att, 0.5)
    for g, w in zip(got, want):
        assert rel_err(g, w) <= 1e-12


@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
@pytest.mark.parametrize("words", [["mallory"], ["mallory", "bob", "eve"]], ids=["batch1", "padded"])
def test_the_fused_engine_equals_the_unfused_one(norm, words):
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2, n_layer=2, block_size=8, norm=norm)
    params = mg.init_params(cfg, seed=4)
    rng = np.random.default_rng(2)
    for a in params.values():  # scales off their init, some alphas negative: every factor matters
        if a.ndim == 1:
            a *= rng.uniform(-2, 2, a.shape)
    docs = [mg.doc_tokens(w, VOCAB) for w in words]
    loss, grads = ne.loss_and_grads_np(params, docs, cfg)
    loss_u, grads_u = unfused.loss_and_grads_np(params, docs, cfg)
    assert rel_err(loss, loss_u) <= 1e-12
    assert list(grads) == list(grads_u)
    for key in grads:
        assert rel_err(grads[key], grads_u[key]) <= 1e-12, key
    tokens = ne.make_batch(docs, cfg.block_size)[0]
    logits, cache = ne.forward_np(params, tokens, cfg)
    logits_u, cache_u = unfused.forward_np(params, tokens, cfg)
    assert rel_err(logits, logits_u) <= 1e-12
    for a, b in zip(cache["attn"] + cache["hidden"], cache_u["attn"] + cache_u["hidden"]):
        assert a.shape == b.shape and rel_err(a, b) <= 1e-12


def test_an_alpha_stored_as_zero_or_minus_zero_takes_the_sign_plus_one():
    """effective alpha = |stored| * mult: d/d stored = sign(stored) * mult with sign +1 at 0 and at -0.0 (gpt_sphere's
    _abs: `a if a.data >= 0`), -1 below; the engine reads that sign with copysign, which alone would say -1 at -0.0."""
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2, n_layer=1, block_size=8, norm="sphere")
    params = mg.init_params(cfg, seed=5)
    for key in ("layer0.attn_alpha", "layer0.mlp_alpha"):
        params[key][:4] = [0.0, -0.0, -0.3, 0.3]
    docs = [mg.doc_tokens("mallory", VOCAB)]
    grads, grads_u = ne.loss_and_grads_np(params, docs, cfg)[1], unfused.loss_and_grads_np(params, docs, cfg)[1]
    for key in ("layer0.attn_alpha", "layer0.mlp_alpha"):
        assert np.abs(grads_u[key][:4]).min() > 1e-6  # (so that a wrong sign would show)
        assert rel_err(grads[key], grads_u[key]) <= 1e-12, key


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


def test_a_params_dict_that_is_not_one_flat_buffer_still_works():
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2)
    params = mg.init_params(cfg, seed=3)
    loose = {k: a.copy() for k, a in params.items()}  # each array on its own: the engine packs a copy
    docs = [mg.doc_tokens("grace", VOCAB)]
    assert ne.loss_and_grads_np(loose, docs, cfg)[0] == ne.loss_and_grads_np(params, docs, cfg)[0]


# ----------------------------------------------------------------------------- float32

FLOAT32_RTOL = 2e-5  # float32 has 24 bits (eps 1.2e-7); a forward and backward pass of ~100 ops loses a few


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
    assert all(a.dtype == np.float32 for a in g32.values())  # computed in float32 throughout, not upcast
    assert abs(l32 - l64) <= FLOAT32_RTOL * abs(l64)
    for key in g64:
        assert rel_err(g32[key], g64[key]) <= FLOAT32_RTOL, key


@pytest.mark.slow
def test_a_float32_run_learns_like_float64():
    docs = mg.load_corpus("names")
    vocab = mg.build_vocab(docs)
    train_docs, val_docs = mg.split_docs(docs, seed=0)
    cfg = mg.GPTConfig(vocab_size=len(vocab) + 1)
    base = mg.baselines([mg.doc_tokens(d, vocab) for d in train_docs], [mg.doc_tokens(d, vocab) for d in val_docs],
                        cfg)
    runs = {dt: mg.train(train_docs, val_docs, vocab, cfg, steps=3000, engine="numpy", dtype=dt, eval_every=3000)
            for dt in ("float32", "float64")}
    assert runs["float32"].params["wte"].dtype == np.float32 and runs["float32"].m.dtype == np.float32
    for st in runs.values():
        assert st.val_loss[-1][1] < base["bigram"]
    assert abs(runs["float32"].val_loss[-1][1] - runs["float64"].val_loss[-1][1]) < 0.02


def test_float32_checkpoints_record_their_dtype_and_resume_bit_exactly(tmp_path):
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2, block_size=8, norm="sphere")
    kw = dict(steps=30, batch_size=2, lr=0.02, seed=7, engine="numpy", eval_every=5, dtype="float32")
    full = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, **kw)

    def stop_at_12(info):
        if info["step"] == 12:
            raise KeyboardInterrupt

    part = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, progress=stop_at_12, **kw)
    mg.save_checkpoint(tmp_path / "ck.npz", part)
    with np.load(tmp_path / "ck.npz") as z:
        assert z["param:wte"].dtype == np.float32 and z["adam_m"].dtype == np.float32
    loaded = mg.load_checkpoint(tmp_path / "ck.npz")
    assert loaded.params["wte"].dtype == np.float32
    resumed = mg.train(WORDS[:9], WORDS[9:], VOCAB, cfg, steps=30, engine="numpy", eval_every=5, resume=loaded)
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


@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
def test_the_blocks_the_engine_reads_as_one_matrix_lie_back_to_back(norm):
    """wte | wpe (the embedding gradient is one product) and each layer's wq | wk | wv (one matmul for q, k, v)."""
    cfg = mg.GPTConfig(vocab_size=V, n_embd=8, n_head=2, n_layer=2, block_size=8, norm=norm)
    offsets = ne.param_offsets(cfg)[0]
    C = cfg.n_embd
    assert offsets["wte"][0] == 0 and offsets["wpe"][0] == V * C
    for i in range(cfg.n_layer):
        q = offsets[f"layer{i}.attn_wq"][0]
        assert offsets[f"layer{i}.attn_wk"][0] == q + C * C and offsets[f"layer{i}.attn_wv"][0] == q + 2 * C * C
