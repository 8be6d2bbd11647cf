"""settings.py: every setting written once, in one table, and everything else made from it.

The last test adds a hypothetical setting to a copy of the project, touching the table and nothing else, and
follows it to the flag, its help, the check, GPTConfig or TrainState, the checkpoint, and a resume's rule.
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from cli_helpers import ROOT, TINY, write_corpus

import settings
from harness import cli
from harness.checkpoints import TrainState
from model_config import GPTConfig
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
    fields = TrainState.__dataclass_fields__
    assert all(fields[s.name].default == s.default for s in STORED)
    assert not [s.name for s in SETTINGS if s.resume and s.group != "model" and s.name not in fields]


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


HYPOTHETICAL = ('    Setting("warmup", 0, NON_NEGATIVE_INT, "a hypothetical setting: steps of linear lr warm-up",\n'
                '            "training", "keep", before=0),\n')


@pytest.mark.slow
def test_a_new_setting_is_one_row_of_the_table_and_nothing_else(tmp_path):
    """Add a row to a copy of settings.py (no other file is touched): the flag exists with its help, its rule
    refuses a bad value, a run keeps it in its TrainState and its checkpoint, and a resume applies its rule."""
    copy = tmp_path / "project"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", ".venv", "notebooks", "out", "runs",
                                                               "experiments", "benchmarks", "tests", "*.ipynb"))
    path = copy / "settings.py"
    text = path.read_text(encoding="utf-8")
    assert text.count("    # files\n") == 1
    path.write_text(text.replace("    # files\n", HYPOTHETICAL + "    # files\n"), encoding="utf-8")
    corpus = write_corpus(str(tmp_path))

    def microgpt(*args):
        return subprocess.run([sys.executable, "microgpt.py", *args], cwd=copy, capture_output=True, text=True,
                              timeout=120)

    help_text = microgpt("--help").stdout
    assert "--warmup N" in help_text and "steps of linear lr warm-up" in help_text
    bad = microgpt(*TINY, "--corpus", corpus, "--warmup", "-1")
    assert bad.returncode == 2 and bad.stderr == "microgpt: error: --warmup must be a non-negative integer, got -1\n"
    run = microgpt(*TINY, "--corpus", corpus, "--steps", "4", "--warmup", "3", "--out", str(tmp_path / "run"))
    assert run.returncode == 0, run.stderr
    with zipfile.ZipFile(tmp_path / "run" / "checkpoint.npz") as z:
        meta = json.loads(str(np.load(z.open("meta.npy"), allow_pickle=False)))
    assert meta["warmup"] == 3
    loaded = subprocess.run([sys.executable, "-c", "import microgpt, sys; s = microgpt.load_checkpoint(sys.argv[1]); "
                             "print(s.warmup, microgpt.TrainState(None, []).warmup)",
                             str(tmp_path / "run" / "checkpoint.npz")], cwd=copy, capture_output=True, text=True)
    assert loaded.stdout.split() == ["3", "0"], loaded.stderr
    conflict = microgpt("--resume", "--out", str(tmp_path / "run"), "--steps", "8", "--warmup", "5")
    assert conflict.returncode == 2 and "--warmup differs from the checkpoint" in conflict.stderr
    assert microgpt("--resume", "--out", str(tmp_path / "run"), "--steps", "8").returncode == 0
