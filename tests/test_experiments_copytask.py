"""experiments/copytask.py: the documents (a string written twice) and their ablated twins, the
QK-norm arm's gradient, the s_qk and alpha arms' init, and the attention measured at the copy
positions."""
import math
import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))

import copytask  # noqa: E402

import microgpt as mg  # noqa: E402
import numpy_engine  # noqa: E402

# ----------------------------------------------------------------------------- the documents

def test_a_training_document_is_a_random_string_written_twice():
    docs = copytask.train_docs(64, 500, seed=3)
    assert docs == copytask.train_docs(64, 500, seed=3) != copytask.train_docs(64, 500, seed=4)
    halves = [len(d) // 2 for d in docs]
    assert all(d[:n] == d[n:] and set(d) <= set(copytask.LETTERS) for d, n in zip(docs, halves))
    assert min(halves) == 16 and max(halves) == 31  # L uniform in [T/4, T/2)
    assert len(set(docs)) == 500 and len(set("".join(docs))) == 26


def test_held_out_documents_and_their_ablated_twins():
    held = copytask.held_out(32, 50, seed=1)
    (inputs, targets), (_, ab_targets) = held["docs"]["plain"], held["docs"]["ablated"]
    bos = len(copytask.VOCAB)
    for i, L in enumerate(held["L"].tolist()):
        assert 8 <= L < 16 and inputs[i, 0] == bos and targets[i, 2 * L] == bos
        assert (targets[i, :L] == targets[i, L:2 * L]).all()  # written twice
        assert (inputs[i, 1:] == targets[i, :-1]).all()  # inputs are the targets shifted by one
        assert (ab_targets[i, L:] == targets[i, L:]).all()  # copy 2 (and what follows) kept
        assert (ab_targets[i, :L] != targets[i, :L]).all()  # every letter of copy 1 replaced
    m = copytask.masks(held["L"], 32)
    assert (m["copy1"].sum(1) == held["L"]).all() and (m["copy2"].sum(1) == held["L"]).all()
    assert (m["all"].sum(1) == 2 * held["L"] + 1).all() and not (m["copy1"] & m["copy2"]).any()


# ----------------------------------------------------------------------------- the arms

def _loss_and_grads(params, docs, cfg, variant):
    with copytask.attention_of(variant, cfg.head_dim):
        return mg.loss_and_grads(params, docs, cfg, "numpy")


def test_the_qknorm_arm_has_the_gradient_of_its_loss_and_leaves_the_engine_as_it_was():
    cfg = mg.GPTConfig(vocab_size=27, n_embd=8, n_head=2, n_layer=1, block_size=8)
    params = mg.init_params(cfg, seed=3)
    docs = [[26, 1, 2, 3, 1, 2, 3, 26], [26, 4, 5, 4, 5, 26]]
    loss, grads = _loss_and_grads(params, docs, cfg, "qknorm")
    assert loss != pytest.approx(mg.loss_and_grads(params, docs, cfg, "numpy")[0], abs=1e-6)
    assert numpy_engine.attention_forward is copytask.ATTENTION[0]  # restored
    for key, index in (("layer0.attn_wq", (1, 2)), ("layer0.attn_wk", (3, 0)), ("wpe", (2, 5))):
        eps = 1e-6
        params[key][index] += eps
        up = _loss_and_grads(params, docs, cfg, "qknorm")[0]
        params[key][index] -= 2 * eps
        down = _loss_and_grads(params, docs, cfg, "qknorm")[0]
        params[key][index] += eps
        assert grads[key][index] == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-9)


def test_qknorm_bounds_the_attention_logits():
    q, k, v = (np.random.default_rng(i).normal(size=(1, 1, 6, 8)) * 50 for i in range(3))
    _, weights = copytask.attention_of("qknorm", 8).pair[0](q, k, v, 8 ** -0.5)
    last = np.log(weights[0, 0, -1])  # logits up to a constant: their range is at most 2 * sqrt(8)
    assert last.max() - last.min() <= 2 * 8 ** 0.5 + 1e-9


def test_the_sqk64_arm_starts_with_the_papers_logit_range():
    job = SimpleNamespace(seed=1, variant="sqk64", T=16, norm="sphere", n_embd=32, n_head=4, n_layer=2)
    cfg = copytask.model_config(job)
    default = copytask.effective_sqk(copytask.initial_params(SimpleNamespace(**{**vars(job), "variant": "default"}),
                                                 cfg), cfg)
    raised = copytask.effective_sqk(copytask.initial_params(job, cfg), cfg)
    for (s0, _), (s1, _) in zip(default, raised):
        assert s0 ** 2 * cfg.head_dim ** 0.5 == pytest.approx(8 ** 0.5, rel=1e-6)  # the default: sqrt(8)
        assert s1 ** 2 * cfg.head_dim ** 0.5 == pytest.approx(8.0, rel=1e-6)  # the paper's: sqrt(64)


@pytest.mark.parametrize("variant, start, step", [("default", 0.05, 1), ("alpha25", 0.25, 5),
                                                  ("alpha-start", 0.25, 1), ("alpha-step", 0.05, 5)])
def test_the_alpha_arms_set_alphas_start_and_its_step_apart(variant, start, step):
    """alpha at init, and how far one Adam step (the stored value moved by about lr) moves it,
    against the default's: the start and the step are the two levers alpha25 moves together."""
    job = SimpleNamespace(seed=1, variant=variant, T=16, norm="sphere", n_embd=32, n_head=4, n_layer=2)
    cfg = copytask.model_config(job)
    params = copytask.initial_params(job, cfg)
    for a_attn, a_mlp in copytask.effective_alpha(params, cfg):
        assert a_attn == pytest.approx(start, rel=1e-6) and a_mlp == pytest.approx(start, rel=1e-6)
    params["layer0.attn_alpha"] += np.float32(1e-3)  # one step of size lr = 1e-3
    moved = copytask.effective_alpha(params, cfg)[0][0] - start
    assert moved == pytest.approx(step * 1e-3 * 0.05 * 32 ** 0.5, rel=1e-3)


def test_the_attention_at_the_copy_positions():
    L, T = np.array([3]), 8
    copy2 = copytask.masks(L, T)["copy2"]
    weights = np.zeros((1, 2, T, T))
    for j in range(T):
        weights[0, 0, j, :j + 1] = 1.0 / (j + 1)  # head 0: uniform
        weights[0, 1, j, max(0, j - L[0] + 1)] = 1.0  # head 1: the key after the matching letter
    acts = SimpleNamespace(layers=[SimpleNamespace(attn_weights=weights)])
    ent, mass = copytask.attention_at_copy(acts, L, copy2)
    queries = [3, 4, 5]
    assert mass[0, :, 1] == pytest.approx([1, 1, 1]) and ent[0, :, 1] == pytest.approx([0, 0, 0])
    assert mass[0, :, 0] == pytest.approx([1 / (j + 1) for j in queries])
    assert ent[0, :, 0] == pytest.approx([math.log(j + 1) for j in queries])
