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


# §3: ** for notebook 01's Value, then the chapter's functions and gpt on it
def power(a, k):
    return type(a)(a.data ** k, (a,), (k * a.data ** (k - 1),), f"**{k}")


def test_power():
    assert exercises.check_10_power(exercises.value_01(), power) is True
    assert exercises.check_10_power(exercises.value_01(), stub) is None


def test_power_wrong_answers():
    Value = exercises.value_01()

    def with_grad(local_grad):
        return lambda a, k: Value(a.data ** k, (a,), (local_grad(a.data, k),), f"**{k}")
    assert exercises.check_10_power(Value, with_grad(lambda x, k: k * x ** k)) is False
    assert exercises.check_10_power(Value, with_grad(lambda x, k: x ** (k - 1))) is False


def value_01_finished():
    """exercises.value_01(), the worked solutions attached as 10 §3 attaches them."""
    Value = exercises.value_01()
    Value.exp, Value.log = exercises.exp_06, exercises.log_08
    Value.relu, Value.__pow__ = exercises.relu_01, exercises.power_10
    Value.__neg__ = lambda a: a * -1.0
    Value.__sub__ = lambda a, b: a + -b
    Value.__truediv__ = lambda a, b: a * b ** -1
    return Value


def test_the_chapters_functions_on_notebook_01s_value():
    import utils
    Value = value_01_finished()
    chapters = utils.linear, utils.softmax, utils.rmsnorm
    assert exercises.compare_on_values_10(Value, *chapters) is True

    def softmax_without_max(logits):  # exp(1000) overflows: that row shows the error
        exps = [v.exp() for v in logits]
        total = sum(exps)
        return [e / total for e in exps]

    def rmsnorm_without_eps(x):
        scale = (sum(v * v for v in x) / len(x)) ** -0.5
        return [v * scale for v in x]
    assert exercises.compare_on_values_10(Value, utils.linear, softmax_without_max,
                                          utils.rmsnorm) is False
    assert exercises.compare_on_values_10(Value, utils.linear, utils.softmax,
                                          rmsnorm_without_eps) is False
