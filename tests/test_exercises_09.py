"""Notebook 09's build check (an Adam step) and exercise checks (the bigram baseline, Adam's first
step): True on a right answer, False on a wrong one, None while unanswered."""
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402


def stub(*args):
    raise NotImplementedError


def adam_update(p, g, m, v, t, lr, beta1=0.85, beta2=0.99, eps=1e-8, correct=True):
    m[:] = beta1 * m + (1 - beta1) * g
    v[:] = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = (m / (1 - beta1 ** t), v / (1 - beta2 ** t)) if correct else (m, v)
    with np.errstate(invalid="ignore"):  # eps=0 at g=0: 0/0
        return p - lr * m_hat / (np.sqrt(v_hat) + eps)


def test_adam():
    assert exercises.check_09_adam(adam_update) is True
    assert exercises.check_09_adam(exercises.adam_update_09) is True
    assert exercises.check_09_adam(stub) is None


def test_adam_wrong_answers():
    wrong = [lambda *a: adam_update(*a, correct=False),                         # no bias correction
             lambda p, g, m, v, t, lr: adam_update(p, g, m, v, t + 1, lr),      # t counted from 0
             lambda p, g, m, v, t, lr: adam_update(p, g, m, v, t, lr, eps=0.0),  # eps dropped
             lambda p, g, m, v, t, lr: adam_update(p, g, m, v, t, lr, beta1=0.9, beta2=0.999)]
    for answer in wrong:
        assert exercises.check_09_adam(answer) is False


def bigram_loss(train_tokens, val_tokens, vocab_size, smoothing=1.0):
    counts = np.full((vocab_size, vocab_size), smoothing)
    for tokens in train_tokens:
        for a, b in zip(tokens, tokens[1:]):
            counts[a, b] += 1
    probs = counts / counts.sum(axis=1, keepdims=True)
    nll = [-math.log(probs[a, b]) for tokens in val_tokens for a, b in zip(tokens, tokens[1:])]
    return sum(nll) / len(nll)


def test_bigram_loss():
    assert exercises.check_09_bigram_loss(bigram_loss) is True
    assert exercises.check_09_bigram_loss(stub) is None


def test_bigram_loss_wrong_answers():
    def mean_per_name(train_tokens, val_tokens, vocab_size):
        return float(np.mean([bigram_loss(train_tokens, [d], vocab_size) for d in val_tokens]))

    assert exercises.check_09_bigram_loss(lambda *a: bigram_loss(*a, smoothing=0.5)) is False
    assert exercises.check_09_bigram_loss(mean_per_name) is False


def test_first_step():
    assert exercises.check_09_first_step(lambda g, lr: -lr * g / (np.abs(g) + 1e-8)) is True
    assert exercises.check_09_first_step(stub) is None


def test_first_step_wrong_answers():
    assert exercises.check_09_first_step(lambda g, lr: -lr * np.sign(g)) is False    # eps dropped
    assert exercises.check_09_first_step(lambda g, lr: -lr * g) is False             # plain SGD
    assert exercises.check_09_first_step(lambda g, lr: -lr * 1.5 * g / (np.abs(g) + 1e-8)) is False


def test_adam_says_which_part_is_wrong(capsys):
    def m_not_in_place(p, g, m, v, t, lr, beta1=0.85, beta2=0.99, eps=1e-8):
        m = beta1 * m + (1 - beta1) * g           # a new array: the caller's m stays 0
        v[:] = beta2 * v + (1 - beta2) * g * g
        return p - lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)

    assert exercises.check_09_adam(m_not_in_place) is False
    out = capsys.readouterr().out
    first = out[out.index("1 ステップ：部分ごとの最大の差"):].splitlines()[1:4]
    assert first[0].strip().startswith("p：一致") and first[2].strip().startswith("v：一致")
    assert "m：不一致" in first[1] and "m[3] で得た値 0、正しい値 -750、相対差 1.0e+00" in first[1]
