"""settings.py: every setting's flag, default, rule, help and resume policy written once, in one table;
the flags are made from it, and GPTConfig, TrainState and train() agree with it."""
import inspect
import os

import pytest
from cli_helpers import ROOT

import microgpt
import settings
from harness import cli
from harness.checkpoints import RunIdentity
from model_config import TRAINING_FIELDS, GPTConfig, TrainState
from settings import BY_NAME, DEFAULTS, SETTINGS, STORED, InputError, check, resumed


def test_the_table_names_each_setting_once_with_a_rule_a_help_and_a_group():
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    for s in SETTINGS:
        assert s.help and s.group in ("model", "training", "files", "sampling")
        assert s.resume in ("keep", "lower", "change", "")
        assert s.default is None or s.rule.ok(s.default), s.name


def test_the_flags_the_config_and_the_state_come_from_the_table():
    parser = cli.build_parser()
    flags = {a.dest: a for a in parser._actions}
    for s in SETTINGS:
        assert s.name in flags and s.flag in flags[s.name].option_strings and flags[s.name].default is None
        assert s.help in flags[s.name].help
        if s.rule.choices:
            assert tuple(flags[s.name].choices) == s.rule.choices
    model = [s.name for s in SETTINGS if s.group == "model"]
    assert [f for f in GPTConfig.__dataclass_fields__ if f != "vocab_size"] == model
    assert {n: GPTConfig.__dataclass_fields__[n].default for n in model} == {n: DEFAULTS[n] for n in model}
    # the state holds every stored setting but the corpus, which the run's identity holds
    fields = TrainState.__dataclass_fields__
    training = [s for s in STORED if s.name != "corpus"]
    assert [s.name for s in STORED if s not in training] == ["corpus"]
    assert all(s.name in fields and fields[s.name].default == s.default for s in training)
    assert RunIdentity().corpus == DEFAULTS["corpus"]
    # train() takes every stored setting but the corpus (the harness records it), with its default
    train = inspect.signature(microgpt.train).parameters
    assert {name: train[name].default for name in TRAINING_FIELDS} == \
        {s.name: s.default for s in STORED if s.name != "corpus"}


def test_the_list_of_norms_is_written_once():
    assert BY_NAME["norm"].rule.choices == settings.NORMS
    for module in ("model_config.py", "harness/cli.py", "checks.py", "harness/checkpoints.py"):
        text = open(os.path.join(ROOT, module), encoding="utf-8").read()
        assert '"rmsnorm", "sphere"' not in text and "'rmsnorm', 'sphere'" not in text, module


@pytest.mark.parametrize("name, value, words", [
    ("steps", 0, "steps must be a positive integer"),
    ("steps", 2**53 + 1, "at most 2**53"),
    ("lr", float("inf"), "lr must be a positive number"),
    ("seed", True, "seed must be a non-negative integer"),
    ("norm", "cube", "norm must be one of 'rmsnorm', 'sphere'"),
    ("riemannian", 1, "riemannian must be true or false"),
    ("corpus", " ", "corpus must be a non-empty path"),
])
def test_one_rule_for_a_flag_a_checkpoint_and_an_argument(name, value, words):
    with pytest.raises(InputError, match=words.replace("*", r"\*")):
        check(name, value)
    assert check(name, DEFAULTS[name]) == DEFAULTS[name] or DEFAULTS[name] is None


def test_a_resume_keeps_lowers_or_changes_each_setting_as_its_row_says():
    kept = {"steps": 100, "lr": 0.01, "batch_size": 4, "engine": "value"}
    merged, lowered = resumed(kept, {"steps": 200, "lr": 0.005, "batch_size": None, "engine": "numpy"}, 100)
    assert merged == {"steps": 200, "lr": 0.005, "batch_size": 4, "engine": "numpy"} and lowered == {"lr": 0.01}
    with pytest.raises(InputError, match="lr, batch_size differ from the checkpoint.*a lower --lr"):
        resumed(kept, {"lr": 0.1, "batch_size": 8}, 0)
    with pytest.raises(InputError, match="at step 150, beyond the requested --steps 100"):
        resumed(kept, {}, 150, lambda name: "--" + name)


def test_numpy_bools_are_switches_and_other_numpy_scalars_are_not():
    import numpy as np

    from settings import is_bool
    assert is_bool(np.True_) and is_bool(np.bool_(False)) and is_bool(True)
    assert not any(is_bool(x) for x in (np.int64(1), np.float64(0.0), 1, "true"))
