"""Reference solutions of notebook 03's exercises (notebooks/exercises.py, section 03).

For each check: the reference solution is judged 正解 (True); a plausible wrong answer, the
project's own function called or copied, and an answer that reads the judge's frame 不正解 (False);
the unsolved stub 未回答 (None).

None of the four asks for a derivative (causal attention, a count, a softmax, a bigram table's
loss): there is no difference quotient to take, so they have no finite-difference test.
"""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402
from exercise_attacks import copies, read_the_judges_frame  # noqa: E402

import microgpt  # noqa: E402
import model_config  # noqa: E402
import numpy_engine  # noqa: E402
import utils  # noqa: E402


def stub(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- 1. causal_attention (all
# positions, all heads)


def causal_attention(q, k, v, n_head):
    T, C = q.shape
    hd = C // n_head
    out = np.zeros((T, C))
    mask = np.tril(np.ones((T, T), dtype=bool))  # position t sees keys 0..t
    for h in range(n_head):
        s = slice(h * hd, (h + 1) * hd)
        z = np.where(mask, q[:, s] @ k[:, s].T / math.sqrt(hd), -np.inf)
        w = np.exp(z - z.max(axis=1, keepdims=True))
        out[:, s] = (w / w.sum(axis=1, keepdims=True)) @ v[:, s]
    return out


# gpt's loop: the cache at position t holds keys 0..t
def causal_attention_by_position(q, k, v, n_head):
    T, C = len(q), len(q[0])
    hd = C // n_head
    out = []
    for t in range(T):
        row = []
        for h in range(n_head):
            s = slice(h * hd, (h + 1) * hd)
            logits = [
                sum(a * b for a, b in zip(q[t][s], k[u][s])) / math.sqrt(hd) for u in range(t + 1)
            ]
            m = max(logits)
            e = [math.exp(z - m) for z in logits]
            row += [sum(e[u] / sum(e) * v[u][s][j] for u in range(t + 1)) for j in range(hd)]
        out.append(row)
    return out


def attention_without_mask(q, k, v, n_head):  # every position sees the future too
    T, C = q.shape
    hd = C // n_head
    out = np.zeros((T, C))
    for h in range(n_head):
        s = slice(h * hd, (h + 1) * hd)
        z = q[:, s] @ k[:, s].T / math.sqrt(hd)
        w = np.exp(z - z.max(axis=1, keepdims=True))
        out[:, s] = (w / w.sum(axis=1, keepdims=True)) @ v[:, s]
    return out


# treats the whole vector as one head (right only when n_head = 1)
def attention_one_head(q, k, v, n_head):
    return causal_attention(q, k, v, 1)


def attention_scaled_by_n_embd(q, k, v, n_head):  # 1/sqrt(n_embd) instead of 1/sqrt(head_dim)
    return causal_attention(q / math.sqrt(n_head), k, v, n_head)


def causal_attention_copied(q, k, v, n_head):  # the NumPy engine's own attention: refused
    import numpy_engine

    T, C = q.shape
    heads = [a.reshape(1, T, n_head, -1).transpose(0, 2, 1, 3) for a in (q, k, v)]
    y, _ = numpy_engine.attention_forward(*heads, (C // n_head) ** -0.5)
    return y.transpose(0, 2, 1, 3).reshape(T, C)


def test_causal_attention(capsys):
    assert exercises.check_03_causal_attention(causal_attention) is True
    # loops are fine too
    assert exercises.check_03_causal_attention(causal_attention_by_position) is True
    assert exercises.check_03_causal_attention(attention_without_mask) is False
    assert "未来のキー" in capsys.readouterr().out
    assert exercises.check_03_causal_attention(attention_one_head) is False
    assert exercises.check_03_causal_attention(attention_scaled_by_n_embd) is False
    assert exercises.check_03_causal_attention(stub) is None


ATTENTION_COPIES = copies(numpy_engine.attention_forward)


def attention_with(attention):
    def answer(q, k, v, n_head):
        T, C = q.shape
        heads = [a.reshape(1, T, n_head, -1).transpose(0, 2, 1, 3) for a in (q, k, v)]
        y, _ = attention(*heads, (C // n_head) ** -0.5)
        return y.transpose(0, 2, 1, 3).reshape(T, C)

    return answer


# the heads' outputs of gpt_forward itself: refused inside
def attention_from_a_forward_pass(q, k, v, n_head):
    cfg = microgpt.GPTConfig(
        vocab_size=3, n_embd=q.shape[1], n_head=n_head, n_layer=1, block_size=8
    )
    params = microgpt.init_params(cfg)
    return microgpt.gpt_forward(params, [0] * len(q), cfg)[1].layers[0].attn_heads


@pytest.mark.parametrize("copied",
                         [causal_attention_copied, *map(attention_with, ATTENTION_COPIES)],
                         ids=["attention_forward", "code_copy", "source_copy"])
def test_causal_attention_copied_from_the_engine_is_wrong(copied, capsys):
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 5, 8))
    assert np.allclose(copied(q, k, v, 2), causal_attention(q, k, v, 2))  # right numbers ...
    assert exercises.check_03_causal_attention(copied) is False  # ... but refused
    assert "使わずに" in capsys.readouterr().out
    assert np.allclose(copied(q, k, v, 2), causal_attention(q, k, v, 2))  # restored afterwards
    assert exercises.check_03_causal_attention(attention_from_a_forward_pass) is False


def test_causal_attention_reading_the_judges_frame_is_wrong():
    # a judge that kept the forward pass's record (with the heads' outputs)
    def answer(q, k, v, n_head):
        import inspect

        for info in inspect.stack()[1:]:
            for name in ("want", "layer", "acts"):
                found = info.frame.f_locals.get(name)
                if hasattr(found, "attn_heads"):
                    return found.attn_heads
                if isinstance(found, np.ndarray):
                    return found
        raise LookupError("no answer in the judge's frames")

    assert exercises.check_03_causal_attention(answer) is False
    assert exercises.check_03_causal_attention(read_the_judges_frame) is False


# ---------------------------------------------------------------- 2. count_params (rmsnorm and
# sphere)


def count_params(cfg):
    V, C, L, T = cfg.vocab_size, cfg.n_embd, cfg.n_layer, cfg.block_size
    embeddings = V * C + T * C + V * C  # wte, wpe, lm_head
    per_layer = 4 * C * C + 4 * C * C + C * 4 * C  # wq wk wv wo, mlp_fc1, mlp_fc2
    if cfg.norm == "sphere":
        # s_qk, alpha_A, s_u (the MLP's hidden width), alpha_M
        per_layer += C + C + 4 * C + C
        embeddings += V  # s_z: one per token
    return embeddings + L * per_layer


# §1's printed formula: right for rmsnorm, misses the sphere's scales
def count_params_rmsnorm_formula_only(cfg):
    C = cfg.n_embd
    return 2 * cfg.vocab_size * C + cfg.block_size * C + 12 * cfg.n_layer * C * C


def count_params_no_wpe(cfg):  # forgets the position embedding
    return count_params(cfg) - cfg.block_size * cfg.n_embd


# takes s_u as long as the residual stream (C), not the MLP's hidden layer (4C)
def count_params_su_of_width_c(cfg):
    return count_params(cfg) - (3 * cfg.n_embd * cfg.n_layer if cfg.norm == "sphere" else 0)


def count_params_copied(cfg):  # the project's own count: refused
    import microgpt

    return sum(a.size for a in microgpt.init_params(cfg).values())


def count_params_copied_shapes(cfg):
    import math

    from model_config import param_shapes

    return sum(math.prod(shape) for _, shape in param_shapes(cfg))


def count_params_copied_n_params(cfg):
    import model_config

    return model_config.n_params(cfg)


# the layout's cache, which the old check's own init_params call filled
def count_params_from_the_offsets(cfg):
    return model_config.param_offsets(cfg)[1]


N_PARAMS_COPIES = copies(model_config.n_params)
SHAPES_COPIES = copies(model_config.param_shapes)


def count_with(copy):
    return lambda cfg: copy(cfg)


def count_shapes_with(copy):
    import math

    return lambda cfg: sum(math.prod(shape) for _, shape in copy(cfg))


@pytest.mark.parametrize(
    "copied",
    [count_params_copied, count_params_copied_shapes, count_params_copied_n_params,
     count_params_from_the_offsets,
     *map(count_with, N_PARAMS_COPIES), *map(count_shapes_with, SHAPES_COPIES)],
    ids=["init_params", "param_shapes", "n_params", "param_offsets",
         "n_params-code_copy", "n_params-source_copy", "param_shapes-code_copy",
         "param_shapes-source_copy"],
)
def test_count_params_copied_is_wrong(copied, capsys):
    for norm in ("rmsnorm", "sphere"):
        # right, without the refusal
        assert copied(microgpt_cfg(norm)) == count_params(microgpt_cfg(norm))
    assert exercises.check_03_count_params(copied) is False
    assert "使わずに" in capsys.readouterr().out
    # restored after the check
    assert copied(microgpt_cfg("sphere")) == count_params(microgpt_cfg("sphere"))


def test_count_params_reading_the_judges_frame_is_wrong():
    assert exercises.check_03_count_params(read_the_judges_frame) is False


def test_count_params(capsys):
    assert exercises.check_03_count_params(count_params) is True
    assert exercises.check_03_count_params(count_params_rmsnorm_formula_only) is False
    assert exercises.check_03_count_params(count_params_no_wpe) is False
    assert exercises.check_03_count_params(count_params_su_of_width_c) is False
    assert exercises.check_03_count_params(stub) is None
    import microgpt  # the refusal is undone after the check

    assert (sum(a.size for a in microgpt.init_params(microgpt.GPTConfig(vocab_size=27)).values())
            == 4192)


def microgpt_cfg(norm):
    import microgpt

    return microgpt.GPTConfig(vocab_size=27, n_embd=16, n_layer=2, norm=norm)


# ---------------------------------------------------------------- 3. temperature_probs


def temperature_probs(logits, temperature):
    z = np.asarray(logits, dtype=float) / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


# no max subtraction: exp(10000) overflows to inf -> nan
def temperature_probs_naive(logits, temperature):
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(np.asarray(logits, dtype=float) / temperature)
        return e / e.sum()


def temperature_probs_times_t(logits, temperature):  # multiplies by T instead of dividing
    return temperature_probs(np.asarray(logits, dtype=float) * temperature**2, temperature)


def temperature_probs_copied(logits, temperature):  # the project's softmax: refused
    import utils

    return utils.softmax_np(np.asarray(logits, dtype=float) / temperature)


# chapter 21's scalar softmax: refused too
def temperature_probs_chapter_softmax(logits, temperature):
    import utils
    from value import Value

    return np.array(
        [p.data for p in utils.softmax([Value(float(z) / temperature) for z in logits])]
    )


SOFTMAX_COPIES = copies(utils.softmax_np)


def temperature_probs_with(copy):
    return lambda logits, temperature: copy(np.asarray(logits, dtype=float) / temperature)


def test_temperature_probs_reading_the_judges_frame_is_wrong():
    assert exercises.check_03_temperature_probs(read_the_judges_frame) is False


def test_temperature_probs(capsys):
    for copied in (temperature_probs_copied, temperature_probs_chapter_softmax,
                   *map(temperature_probs_with, SOFTMAX_COPIES)):
        assert np.allclose(
            copied([1000.0, 999.0, 3.0], 0.1), temperature_probs([1000.0, 999.0, 3.0], 0.1)
        )
        assert exercises.check_03_temperature_probs(copied) is False
        assert "使わずに" in capsys.readouterr().out
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
        return float(
            np.mean(
                [-np.log(probs[a, b]) for tokens in val_tokens for a, b in zip(tokens, tokens[1:])]
            )
        )


# averages per name, not per position
def bigram_loss_mean_per_doc(train_tokens, val_tokens, vocab_size):
    return float(np.mean([bigram_loss(train_tokens, [t], vocab_size) for t in val_tokens]))


def bigram_loss_copied(train_tokens, val_tokens, vocab_size):  # the project's baseline: refused
    import microgpt

    cfg = microgpt.GPTConfig(vocab_size=vocab_size, block_size=16)
    return microgpt.baselines(train_tokens, val_tokens, cfg)["bigram"]


def bigram_loss_copied_from_numpy_engine(train_tokens, val_tokens, vocab_size):  # the same function
    import microgpt
    import numpy_engine

    cfg = microgpt.GPTConfig(vocab_size=vocab_size, block_size=16)
    return numpy_engine.baselines(train_tokens, val_tokens, cfg)["bigram"]


BASELINES_COPIES = copies(numpy_engine.baselines)


def bigram_loss_with(copy):
    def answer(train_tokens, val_tokens, vocab_size):
        return copy(
            train_tokens, val_tokens, microgpt.GPTConfig(vocab_size=vocab_size, block_size=16)
        )["bigram"]

    return answer


def test_bigram_loss_reading_the_judges_frame_is_wrong():
    assert exercises.check_03_bigram_loss(read_the_judges_frame) is False


def test_bigram_loss(capsys):
    docs = [[3, 0, 1, 2, 3], [3, 2, 2, 3], [3, 1, 3]]
    for copied in (bigram_loss_copied, bigram_loss_copied_from_numpy_engine,
                   *map(bigram_loss_with, BASELINES_COPIES)):
        assert math.isclose(copied(docs, docs[:2], 4), bigram_loss(docs, docs[:2], 4))
        assert exercises.check_03_bigram_loss(copied) is False
        assert "使わずに" in capsys.readouterr().out
    # restored
    assert math.isclose(bigram_loss_copied(docs, docs[:2], 4), bigram_loss(docs, docs[:2], 4))
    assert exercises.check_03_bigram_loss(bigram_loss) is True
    assert exercises.check_03_bigram_loss(bigram_loss_unsmoothed) is False
    assert exercises.check_03_bigram_loss(bigram_loss_mean_per_doc) is False
    assert exercises.check_03_bigram_loss(stub) is None
