"""checks.py: what the chapter's functions check at their door: weights and flags that overflow the forward
pass are refused the same on both engines, and the Python API's arguments obey the flags' rules."""
import subprocess
import sys

import numpy as np
import pytest
from cli_helpers import ROOT, TINY, one_clean_line, run

import checks
import microgpt as mg
from harness.errors import EXIT_BAD_INPUT, InputError


@pytest.mark.slow
@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
@pytest.mark.parametrize("engine", ["value", "numpy"])
def test_weights_that_overflow_the_forward_pass_are_refused_alike(tmp_path, corpus, capsys, norm, engine):
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--norm", norm, "--out", str(out)])[0] == 0
    with np.load(out / "checkpoint.npz") as z:
        arrays = {k: (z[k] * 1e300 if k.startswith("param:") else z[k]) for k in z.files}
    np.savez(out / "checkpoint.npz", **arrays)
    for args in (["--sample-only", "--checkpoint", str(out / "checkpoint.npz"), "--engine", engine],
                 ["--resume", "--out", str(out), "--steps", "6", "--engine", engine]):
        proc = subprocess.run([sys.executable, "microgpt.py", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == EXIT_BAD_INPUT and "forward pass overflows" in proc.stderr, proc.stderr
        one_clean_line(proc.stderr)

@pytest.mark.parametrize("engine", ["value", "numpy"])
@pytest.mark.parametrize("flag, value, words", [("--alpha-init", "1e200", "forward pass overflows"),
                                                ("--sz-init", "1e300", "logits span 1.57e+300")])
def test_flags_that_overflow_the_model_are_refused_the_same_on_both_engines(tmp_path, corpus, engine, flag, value,
                                                                            words):
    proc = subprocess.run([sys.executable, "microgpt.py", *TINY, "--corpus", corpus, "--norm", "sphere", flag, value,
                           "--engine", engine, "--steps", "3", "--out", str(tmp_path / "run")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == EXIT_BAD_INPUT and words in proc.stderr, proc.stderr
    one_clean_line(proc.stderr)
    assert len(proc.stderr) < 400  # (no 300-digit number)
    assert not (tmp_path / "run").exists()  # refused after the folder was taken: given back as it was

WORDS = ["anna", "bob", "carla", "dave", "eve", "frank", "grace", "heidi", "ivan", "judy"]

VOCAB = mg.build_vocab(WORDS)

def test_the_apis_arguments_are_the_flags_rules():
    cfg = mg.GPTConfig(len(VOCAB) + 1, n_embd=8, n_head=2, block_size=8)
    for bad, words in ((dict(steps=True), "steps must be a positive integer"),
                       (dict(batch_size=0), "batch_size must be a positive integer")):
        with pytest.raises(InputError, match=words):
            mg.train(WORDS[:8], WORDS[8:], VOCAB, cfg, engine="numpy", **bad)
    with pytest.raises(InputError, match="at least one train and one val document"):
        mg.train(WORDS, [], VOCAB, cfg, steps=2, engine="numpy")
    params = mg.init_params(cfg)
    names = mg.sample(params, cfg, VOCAB, num_samples=np.int64(2), temperature=np.float32(0.5))
    assert len(names) == 2 and names == mg.sample(params, cfg, VOCAB, num_samples=2, temperature=0.5)
    with pytest.raises(InputError, match="num_samples must be a positive integer"):
        mg.sample(params, cfg, VOCAB, num_samples=True)
    other = mg.GPTConfig(len(VOCAB) + 1, n_embd=16, n_head=2, block_size=8)
    docs = [mg.doc_tokens(w, VOCAB) for w in WORDS[:2]]
    for engine in ("value", "numpy"):  # weights that do not fit the config: the same clear error on both engines
        with pytest.raises(InputError, match="weight 'wte' has shape"):
            mg.loss_and_grads({k: a.copy() for k, a in params.items()}, docs, other, engine)


def test_the_apis_doors_say_what_is_wrong_instead_of_a_numpy_error():
    cfg = mg.GPTConfig(len(VOCAB) + 1, n_embd=8, n_head=2, block_size=8)
    params = mg.init_params(cfg)
    docs = [mg.doc_tokens(w, VOCAB) for w in WORDS[:2]]
    as_lists = {k: a.tolist() for k, a in params.items()}
    with pytest.raises(InputError, match="weight 'wte' is a list; the model needs NumPy arrays"):
        mg.loss_and_grads(as_lists, docs, cfg, "numpy")
    for seed, words in ((-1, "seed must be a non-negative integer, got -1"),
                        (1.5, "seed must be a non-negative integer, got 1.5")):
        with pytest.raises(InputError, match=words):
            mg.sample(params, cfg, VOCAB, num_samples=2, seed=seed)
    with pytest.raises(InputError, match="characters not in the vocabulary: 'Z'"):
        mg.sample(params, cfg, VOCAB, num_samples=2, prompt="Zed")


def test_the_mirror_check_tells_the_chapters_models_from_edited_ones():
    """gpt() and gpt_sphere() compute numpy_engine.py's logits; doubled logits, the other norm's model, or one
    that raises do not (each cheap: a tiny model on Values, at three positions)."""
    def raises(*args):
        raise IndexError("a learner's mistake")
    for norm, model, other in [("rmsnorm", mg.gpt, mg.gpt_sphere), ("sphere", mg.gpt_sphere, mg.gpt)]:
        cfg = mg.GPTConfig(vocab_size=27, norm=norm)
        assert checks.computes_the_mirrors_logits(model, cfg, mg.init_params)
        doubled = lambda *args, model=model: [2 * logit for logit in model(*args)]  # noqa: E731
        for edited in (doubled, other, raises):
            assert not checks.computes_the_mirrors_logits(edited, cfg, mg.init_params)


DOCS = ["anna", "bob", "carla", "dave", "eve"]


def small(vocab_size=None):
    vocab = mg.build_vocab(DOCS)
    return vocab, mg.GPTConfig(vocab_size or len(vocab) + 1, n_embd=8, n_head=2, block_size=8)


def read_only(arrays):
    for a in arrays.values():
        a.setflags(write=False)
    return arrays


@pytest.mark.parametrize("case", [
    lambda: mg.train(DOCS[:4], DOCS[4:], small()[0], small(len(small()[0]))[1], steps=1, engine="numpy"),
    lambda: mg.train(DOCS[:4], DOCS[4:], *small(), steps=1, batch_size=10**12, engine="numpy"),
    lambda: mg.sample(mg.init_params(small()[1]), small()[1], small()[0], num_samples=10**12),
    lambda: mg.split_docs(DOCS, seed=-1), lambda: mg.split_docs(DOCS, seed="x"),
    lambda: mg.split_docs(DOCS, val_fraction=float("nan")), lambda: mg.split_docs(DOCS, val_fraction=2.0),
    lambda: mg.split_docs(DOCS[:1]),
    lambda: mg.loss_and_grads(mg.init_params(small()[1]), [[5, 0, 5]], small()[1], "numpy",
                              out=read_only(mg.init_params(small()[1]))),
    lambda: mg.loss_and_grads(mg.init_params(small()[1]), [[5, 0, 5]], small()[1], "value", out=[]),
], ids=["vocab-size", "batch-size", "num-samples", "seed-negative", "seed-text", "val-nan", "val-2",
        "val-leaves-no-train", "out-read-only", "out-list"])
def test_the_python_api_refuses_what_the_command_line_refuses_with_one_input_error(case):
    with pytest.raises(InputError):
        case()


def test_a_fraction_temperature_samples_as_its_real_number():
    from fractions import Fraction
    vocab, cfg = small()
    params = mg.init_params(cfg)
    assert mg.sample(params, cfg, vocab, 3, Fraction(1, 2)) == mg.sample(params, cfg, vocab, 3, 0.5)
