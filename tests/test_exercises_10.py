"""Notebook 10's exercise checks (the sphere mode's extra parameters, softmax with a temperature):
True on a right answer, False on a wrong one, None while unanswered."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402


def stub(*args):
    raise NotImplementedError


def sphere_extra(cfg):
    C, L, V = cfg.n_embd, cfg.n_layer, cfg.vocab_size
    return L * (C + C + 4 * C + C) + V    # s_qk, alpha_A, s_u, alpha_M per layer; s_z


def test_sphere_extra():
    assert exercises.check_10_sphere_extra(sphere_extra) is True
    assert exercises.check_10_sphere_extra(stub) is None


def test_sphere_extra_wrong_answers():
    assert exercises.check_10_sphere_extra(lambda cfg: sphere_extra(cfg) - cfg.vocab_size) is False
    assert exercises.check_10_sphere_extra(
        lambda cfg: sphere_extra(cfg) - 3 * cfg.n_layer * cfg.n_embd) is False   # s_u of width C


def temperature_probs(logits, temperature):
    z = np.asarray(logits, dtype=float) / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


def test_temperature_probs():
    assert exercises.check_10_temperature_probs(temperature_probs) is True
    assert exercises.check_10_temperature_probs(stub) is None


def test_temperature_probs_wrong_answers(capsys):
    def unstable(logits, temperature):  # overflows at logits 1000, T = 0.1
        e = np.exp(np.asarray(logits) / temperature)
        return e / e.sum()

    def temperature_after_softmax(logits, temperature):
        return temperature_probs(logits, 1.0) ** (1 / temperature)

    with np.errstate(over="ignore", invalid="ignore"):
        assert exercises.check_10_temperature_probs(unstable) is False
    assert exercises.check_10_temperature_probs(temperature_after_softmax) is False
    assert exercises.check_10_temperature_probs(lambda z, T: temperature_probs(z, 1 / T)) is False
