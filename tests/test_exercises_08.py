"""Notebook 08's exercise checks (causal attention of every position, the number of parameters):
True on a right answer, False on a wrong one, None while unanswered."""
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402


def stub(*args):
    raise NotImplementedError


def causal_attention(q, k, v, n_head, mask=True, scale=None):
    T, C = q.shape
    hd = C // n_head
    out = np.zeros((T, C))
    for h in range(n_head):
        s = slice(h * hd, (h + 1) * hd)
        z = q[:, s] @ k[:, s].T * (scale or 1 / math.sqrt(hd))
        if mask:
            z = np.where(np.tril(np.ones((T, T), dtype=bool)), z, -np.inf)
        w = np.exp(z - z.max(axis=1, keepdims=True))
        out[:, s] = (w / w.sum(axis=1, keepdims=True)) @ v[:, s]
    return out


def by_position(q, k, v, n_head):  # gpt's loop: position t sees the keys 0..t
    return np.stack([causal_attention(q[:t + 1], k[:t + 1], v[:t + 1], n_head)[-1]
                     for t in range(len(q))])


def test_causal_attention():
    assert exercises.check_08_causal_attention(causal_attention) is True
    assert exercises.check_08_causal_attention(by_position) is True
    assert exercises.check_08_causal_attention(stub) is None


def test_causal_attention_wrong_answers():
    wrong = [lambda q, k, v, h: causal_attention(q, k, v, h, mask=False),       # sees the future
             lambda q, k, v, h: causal_attention(q, k, v, 1),                   # one head
             lambda q, k, v, h: causal_attention(q, k, v, h, scale=q.shape[1] ** -0.5)]
    for answer in wrong:
        assert exercises.check_08_causal_attention(answer) is False


def count_params(cfg):
    V, C, L, T = cfg.vocab_size, cfg.n_embd, cfg.n_layer, cfg.block_size
    return 2 * V * C + T * C + 12 * L * C * C


def test_count_params():
    assert exercises.check_08_count_params(count_params) is True
    assert exercises.check_08_count_params(stub) is None


def test_count_params_wrong_answers():
    assert exercises.check_08_count_params(lambda cfg: count_params(cfg) - cfg.block_size
                                           * cfg.n_embd) is False        # no wpe
    assert exercises.check_08_count_params(lambda cfg: count_params(cfg) - 4 * cfg.n_layer
                                           * cfg.n_embd ** 2) is False   # MLP 4C^2, not 8C^2


# §5: log for notebook 01's Value, its local gradient against the central difference
def log(a):
    return type(a)(math.log(a.data), (a,), (1 / a.data,), "log")


def test_log():
    assert exercises.check_08_log(exercises.value_01(), log) is True
    assert exercises.check_08_log(exercises.value_01(), stub) is None


def test_log_wrong_answers():
    Value = exercises.value_01()

    def node(f, local_grad):
        return lambda a: Value(f(a.data), (a,), (local_grad(a.data),), "log")
    assert exercises.check_08_log(Value, node(math.log, lambda x: 1 / x ** 2)) is False
    assert exercises.check_08_log(Value, node(math.log10, lambda x: 1 / x)) is False
