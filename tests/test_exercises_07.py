"""Notebook 07's build check (Xavier's and He's std) and exercise checks (He's uniform bound, the
gradients reaching the keys and values): True on a right answer, False on a wrong one, None while
unanswered."""
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402

from utils import softmax_np, softmax_np_backward  # noqa: E402


def stub(*args):
    raise NotImplementedError


def test_init_std():
    xavier, he = (lambda i, o: math.sqrt(2 / (i + o))), (lambda i: math.sqrt(2 / i))
    assert exercises.check_07_init_std(xavier, he) is True
    assert exercises.check_07_init_std(lambda i, o: (2 / (i + o)) ** 0.5,
                                       lambda i: 2 ** 0.5 / i ** 0.5) is True
    assert exercises.check_07_init_std(stub, he) is None


def test_init_std_wrong_answers():
    he = lambda i: math.sqrt(2 / i)  # noqa: E731
    assert exercises.check_07_init_std(lambda i, o: 2 / (i + o), he) is False    # the variance
    assert exercises.check_07_init_std(lambda i, o: math.sqrt(1 / i), he) is False  # fan_in only
    assert exercises.check_07_init_std(lambda i, o: math.sqrt(2 / (i + o)),
                                       lambda i: math.sqrt(1 / i)) is False     # no ReLU factor


def test_he_uniform_bound():
    assert exercises.check_07_he_uniform_bound(lambda n: math.sqrt(6 / n)) is True
    assert exercises.check_07_he_uniform_bound(lambda n: math.sqrt(3) * math.sqrt(2 / n)) is True
    assert exercises.check_07_he_uniform_bound(stub) is None


def test_he_uniform_bound_wrong_answers():
    for wrong in (lambda n: math.sqrt(2 / n), lambda n: 1 / math.sqrt(n), lambda n: 6 / n):
        assert exercises.check_07_he_uniform_bound(wrong) is False


def key_value_grads(q, K, V, do, scaled):
    alpha = 1 / np.sqrt(q.shape[-1]) if scaled else 1.0
    p = softmax_np(alpha * (K @ q))
    ds = softmax_np_backward(V @ do, p)
    return alpha * np.outer(ds, q), np.outer(p, do)


def test_key_value_grads():
    assert exercises.check_07_key_value_grads(key_value_grads) is True
    assert exercises.check_07_key_value_grads(stub) is None


def test_key_value_grads_wrong_answers():
    def unscaled_dk(q, K, V, do, scaled):  # alpha forgotten in dK
        dK, dV = key_value_grads(q, K, V, do, scaled)
        return dK / (1 / np.sqrt(q.size) if scaled else 1.0), dV

    def swapped(q, K, V, do, scaled):
        dK, dV = key_value_grads(q, K, V, do, scaled)
        return dV, dK

    def no_softmax_jacobian(q, K, V, do, scaled):
        alpha = 1 / np.sqrt(q.size) if scaled else 1.0
        p = softmax_np(alpha * (K @ q))
        return alpha * np.outer(V @ do, q), np.outer(p, do)

    for wrong in (unscaled_dk, swapped, no_softmax_jacobian):
        assert exercises.check_07_key_value_grads(wrong) is False, wrong
