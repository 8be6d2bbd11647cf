"""Reference solutions of notebook 03's exercises (notebooks/exercises.py, section 03).

For each check: the reference solution is judged 正解 (True), a plausible wrong answer 不正解 (False),
and the unsolved stub 未回答 (None).
"""
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402


def stub(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- 1. attend

def attend(q, keys, values):
    d = len(q)
    logits = [sum(qj * kj for qj, kj in zip(q, k)) / math.sqrt(d) for k in keys]
    m = max(logits)
    exps = [math.exp(z - m) for z in logits]
    total = sum(exps)
    weights = [e / total for e in exps]
    return [sum(w * v[j] for w, v in zip(weights, values)) for j in range(d)]


def attend_unscaled(q, keys, values):  # forgets the 1/sqrt(d)
    z = np.asarray(keys) @ np.asarray(q)
    w = np.exp(z - z.max())
    return (w / w.sum()) @ np.asarray(values)


def attend_weights_only(q, keys, values):  # returns the weights, not the head output
    z = np.asarray(keys) @ np.asarray(q) / math.sqrt(len(q))
    w = np.exp(z - z.max())
    return w / w.sum()


def test_attend():
    assert exercises.check_03_attend(attend) is True
    assert exercises.check_03_attend(attend_unscaled) is False
    assert exercises.check_03_attend(attend_weights_only) is False
    assert exercises.check_03_attend(stub) is None


# ---------------------------------------------------------------- 2. count_params (rmsnorm and sphere)

def count_params(cfg):
    V, C, L, T = cfg.vocab_size, cfg.n_embd, cfg.n_layer, cfg.block_size
    embeddings = V * C + T * C + V * C                     # wte, wpe, lm_head
    per_layer = 4 * C * C + 4 * C * C + C * 4 * C         # wq wk wv wo, mlp_fc1, mlp_fc2
    if cfg.norm == "sphere":
        per_layer += C + C + 4 * C + C                     # s_qk, alpha_A, s_u (the MLP's hidden width), alpha_M
        embeddings += V                                    # s_z: one per token
    return embeddings + L * per_layer


def count_params_rmsnorm_formula_only(cfg):  # §1's printed formula: right for rmsnorm, misses the sphere's scales
    C = cfg.n_embd
    return 2 * cfg.vocab_size * C + cfg.block_size * C + 12 * cfg.n_layer * C * C


def count_params_no_wpe(cfg):  # forgets the position embedding
    return count_params(cfg) - cfg.block_size * cfg.n_embd


def count_params_su_of_width_c(cfg):  # takes s_u as long as the residual stream (C), not the MLP's hidden layer (4C)
    return count_params(cfg) - (3 * cfg.n_embd * cfg.n_layer if cfg.norm == "sphere" else 0)


def count_params_copied(cfg):  # the project's own count: refused
    import microgpt
    return sum(a.size for a in microgpt.init_params(cfg).values())


def count_params_copied_shapes(cfg):
    import math

    from model_config import param_shapes
    return sum(math.prod(shape) for _, shape in param_shapes(cfg))


def test_count_params(capsys):
    assert exercises.check_03_count_params(count_params) is True
    assert exercises.check_03_count_params(count_params_rmsnorm_formula_only) is False
    assert exercises.check_03_count_params(count_params_no_wpe) is False
    assert exercises.check_03_count_params(count_params_su_of_width_c) is False
    capsys.readouterr()
    assert exercises.check_03_count_params(count_params_copied) is False
    assert exercises.check_03_count_params(count_params_copied_shapes) is False
    assert "使わずに" in capsys.readouterr().out
    assert exercises.check_03_count_params(stub) is None
    import microgpt  # the refusal is undone after the check
    assert sum(a.size for a in microgpt.init_params(microgpt.GPTConfig(vocab_size=27)).values()) == 4192


# ---------------------------------------------------------------- 3. temperature_probs

def temperature_probs(logits, temperature):
    z = np.asarray(logits, dtype=float) / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


def temperature_probs_naive(logits, temperature):  # no max subtraction: exp(10000) overflows to inf -> nan
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(np.asarray(logits, dtype=float) / temperature)
        return e / e.sum()


def temperature_probs_times_t(logits, temperature):  # multiplies by T instead of dividing
    return temperature_probs(np.asarray(logits, dtype=float) * temperature ** 2, temperature)


def test_temperature_probs():
    assert exercises.check_03_temperature_probs(temperature_probs) is True
    assert exercises.check_03_temperature_probs(temperature_probs_naive) is False
    assert exercises.check_03_temperature_probs(temperature_probs_times_t) is False
    assert exercises.check_03_temperature_probs(stub) is None


# ---------------------------------------------------------------- 4. bigram_loss

def bigram_loss(train_tokens, val_tokens, vocab_size):
    counts = np.ones((vocab_size, vocab_size))
    for tokens in train_tokens:
        for a, b in zip(tokens, tokens[1:]):
            counts[a, b] += 1
    probs = counts / counts.sum(axis=1, keepdims=True)
    nll = [-math.log(probs[a, b]) for tokens in val_tokens for a, b in zip(tokens, tokens[1:])]
    return sum(nll) / len(nll)


def bigram_loss_unsmoothed(train_tokens, val_tokens, vocab_size):  # no +1: unseen pairs give inf
    counts = np.zeros((vocab_size, vocab_size))
    for tokens in train_tokens:
        for a, b in zip(tokens, tokens[1:]):
            counts[a, b] += 1
    with np.errstate(divide="ignore", invalid="ignore"):
        probs = counts / counts.sum(axis=1, keepdims=True)
        return float(np.mean([-np.log(probs[a, b]) for tokens in val_tokens for a, b in zip(tokens, tokens[1:])]))


def bigram_loss_mean_per_doc(train_tokens, val_tokens, vocab_size):  # averages per name, not per position
    return float(np.mean([bigram_loss(train_tokens, [t], vocab_size) for t in val_tokens]))


def test_bigram_loss():
    assert exercises.check_03_bigram_loss(bigram_loss) is True
    assert exercises.check_03_bigram_loss(bigram_loss_unsmoothed) is False
    assert exercises.check_03_bigram_loss(bigram_loss_mean_per_doc) is False
    assert exercises.check_03_bigram_loss(stub) is None
