"""model_config.py: GPTConfig (one field per model setting), the parameters' names, shapes and flat
layout, their count by formula, and nGPT's effective scales."""
import numpy as np
import pytest

import microgpt as mg
from microgpt import GPTConfig, init_params
from model_config import effective_scales

WORDS = ["anna", "bob", "carla", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"]

VOCAB = mg.build_vocab(WORDS)

V = len(VOCAB) + 1

def test_param_keys_shapes_and_flat_layout():
    cfg = GPTConfig(vocab_size=27, n_layer=2)
    p = init_params(cfg, seed=1)
    assert list(p)[:3] == ["wte", "wpe", "lm_head"]
    assert p["wte"].shape == (27, 16) and p["wpe"].shape == (16, 16) and p["lm_head"].shape == (27, 16)
    assert p["layer1.mlp_fc1"].shape == (64, 16) and p["layer1.mlp_fc2"].shape == (16, 64)
    assert all(a.dtype == np.float64 for a in p.values())
    flat = mg.flat_buffer(p)
    assert flat.size == sum(a.size for a in p.values())
    flat[0] = 123.0  # every array is a view: writing the buffer changes the parameter
    assert p["wte"][0, 0] == 123.0
    assert 0.06 < p["layer0.mlp_fc1"].std() < 0.10  # N(0, 0.08^2)
    np.testing.assert_array_equal(init_params(cfg, 1)["wpe"], init_params(cfg, 1)["wpe"])
    assert not np.array_equal(init_params(cfg, 1)["wpe"], init_params(cfg, 2)["wpe"])

@pytest.mark.parametrize("kwargs, match", [
    (dict(n_embd=10, n_head=4), "divisible"),
    (dict(n_embd=0), "n_embd"),
    (dict(n_layer=-1), "n_layer"),
    (dict(block_size=0), "block_size"),
    (dict(norm="layernorm"), "norm"),
    (dict(alpha_init=0.0), "alpha_init"),
    (dict(sz_init=float("nan")), "sz_init"),
])
def test_config_rejects_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GPTConfig(vocab_size=27, **kwargs)

def test_effective_scales_match_the_forward_pass():
    cfg = GPTConfig(vocab_size=7, n_embd=8, n_head=2, n_layer=2, block_size=6, norm="sphere", alpha_init=0.3,
                    sz_init=4.0)
    params = init_params(cfg, seed=1)
    init = effective_scales(params, cfg)  # nGPT's initial values: alpha_init, 1, sqrt(C), sz_init
    for name, expected in (("alpha_A", 0.3), ("alpha_M", 0.3), ("s_qk", 1.0), ("s_u", 8 ** 0.5), ("s_z", 4.0)):
        np.testing.assert_allclose(init[name], expected, rtol=1e-12)
    rng = np.random.default_rng(0)
    for v in params.values():  # move the scales away from their init so a wrong factor would show
        if v.ndim == 1:
            v *= rng.uniform(-2, 2, v.shape)
    eff = effective_scales(params, cfg)
    logits, acts = mg.gpt_forward(params, np.array([[6, 1, 2, 3]]), cfg)
    np.testing.assert_allclose(logits[0], acts.logit_cosines * eff["s_z"], rtol=1e-12)
    for i, layer in enumerate(acts.layers):
        np.testing.assert_allclose(layer.attn_step.alpha, eff["alpha_A"][i * 8:(i + 1) * 8], rtol=1e-12)
        np.testing.assert_allclose(layer.mlp_step.alpha, eff["alpha_M"][i * 8:(i + 1) * 8], rtol=1e-12)
        np.testing.assert_allclose(layer.mlp_preact, layer.mlp_cosines * eff["s_u"][i * 32:(i + 1) * 32],
                                   rtol=1e-12)
        sqk = eff["s_qk"][i * 8:(i + 1) * 8].reshape(2, 4)  # (heads, head_dim)
        np.testing.assert_allclose(layer.q, (layer.q_unit * sqk).transpose(0, 2, 1, 3), rtol=1e-12)


def test_the_config_is_a_frozen_hashable_dataclass_written_out():
    import dataclasses
    cfg = GPTConfig(vocab_size=V)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.n_embd = 32
    assert {cfg: 1}[GPTConfig(vocab_size=V)] == 1  # equal configs hash alike
    assert dataclasses.replace(cfg, norm="sphere").norm == "sphere" and cfg.norm == "rmsnorm"


def test_a_train_state_copy_shares_nothing_with_the_original():
    from model_config import TrainState, flat_buffer
    cfg = GPTConfig(vocab_size=V, n_embd=8, n_head=2)
    params = init_params(cfg, seed=1)
    flat = flat_buffer(params)
    state = TrainState(cfg, list("abc"), params, np.zeros_like(flat), np.ones_like(flat), step=3,
                       train_loss=[1.0, 2.0, 3.0], val_loss=[(0, 3.0)], error="x")
    copy = state.copy(lr=0.005)
    flat_buffer(copy.params)[:] = 7.0
    copy.m += 1
    copy.v += 1
    copy.train_loss.append(4.0)
    copy.val_loss.append((3, 2.0))
    assert flat_buffer(state.params)[0] != 7.0 and state.m.max() == 0 and state.v.min() == 1
    assert state.train_loss == [1.0, 2.0, 3.0] and state.val_loss == [(0, 3.0)] and state.lr == 0.01
    assert copy.lr == 0.005 and copy.step == 3 and copy.error == ""


@pytest.mark.parametrize("kw", [{}, dict(n_layer=3, n_embd=12, n_head=3, block_size=5), dict(norm="sphere"),
                                dict(norm="sphere", n_layer=2, n_embd=8, n_head=2)])
def test_the_parameter_count_formula_matches_the_shapes(kw):
    from model_config import n_params
    cfg = GPTConfig(vocab_size=V, **kw)
    assert n_params(cfg) == sum(a.size for a in init_params(cfg).values())


def test_off_sphere_measures_every_vector_kept_on_the_sphere():
    """0 after init_params (flat layout) and for separate arrays alike; a stretched column of a matrix kept
    unit along its columns (mlp_fc2) counts; an overflowed update (inf) is not <= any tolerance."""
    from model_config import off_sphere, pack_params
    cfg = GPTConfig(vocab_size=V, n_layer=2, norm="sphere")
    p = init_params(cfg, seed=3)
    assert off_sphere(p, cfg) < 1e-12
    separate = {k: a.copy() for k, a in p.items()}
    separate["layer1.mlp_fc2"][:, 5] *= 1.25
    assert off_sphere(separate, cfg) == pytest.approx(0.25)
    assert off_sphere(pack_params(separate, cfg), cfg) == pytest.approx(0.25)
    p["wpe"][2] = np.inf
    assert not off_sphere(p, cfg) <= 1e-6


def test_a_train_state_holds_training_state_only():
    """Who the run is and which documents it read (run id, corpus, fingerprint) are the
    checkpoint's (harness.checkpoints.RunIdentity), not the training state's."""
    from dataclasses import fields

    from model_config import TrainState
    names = {f.name for f in fields(TrainState)}
    assert not names & {"corpus", "run_id", "corpus_sha256", "corpus_docs"}, names
