"""harness/checks.py -- every rule a run's settings obey, each written once.

A setting can come from a command-line flag (--lr), from a checkpoint's meta ("lr": 0.01) or from an argument
of the Python API (train(lr=0.01)); all three are checked here, by the same function, so they can never
disagree. A broken rule is an InputError whose text names where the value came from (the `label`):

    check_setting(name, value, label)      the rule for one setting (a positive integer, a choice, ...)
    check_combination(engine, dtype, norm, riemannian, where)   the rules that tie settings together
    check_tokens(docs_tokens, vocab_size)  documents as token ids, as the loss needs them
    check_params(params, cfg)              weights that fit the config
    check_forward(params, cfg, where)      a forward pass that stays within floating point, for both engines
"""
import math
import numbers

import numpy as np

from harness.errors import InputError
from model_config import MAX_STEPS, laid_out, param_shapes
from numpy_engine import forward_np

POSITIVE_INTS = ("steps", "batch_size", "eval_every", "n_embd", "n_head", "n_layer", "block_size", "num_samples")
NON_NEGATIVE_INTS = ("seed", "step")
POSITIVE_NUMBERS = ("lr", "alpha_init", "sz_init", "temperature")
CHOICES = {"engine": ("value", "numpy"), "norm": ("rmsnorm", "sphere"), "dtype": ("float64", "float32")}


def is_int(value):
    """An integer (Python's or NumPy's), not a bool (True is an int in Python, but never a step count)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_real(value):
    """A real number (int, float or a NumPy scalar such as float32), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_setting(name, value, label):
    """value, if it obeys the rule for setting `name`; else InputError "{label} must be ..., got {value}"."""
    if name in POSITIVE_INTS and not (is_int(value) and value > 0):
        raise InputError(f"{label} must be a positive integer, got {short(value)}")
    if name in NON_NEGATIVE_INTS and not (is_int(value) and value >= 0):
        raise InputError(f"{label} must be a non-negative integer, got {short(value)}")
    if name in ("steps", "step") and value > MAX_STEPS:  # (a checkpoint's meta may say 10**30)
        raise InputError(f"{label} must be at most 2**53 = {MAX_STEPS:,}, got {short(value)}")
    if name in POSITIVE_NUMBERS and not (is_real(value) and math.isfinite(value) and value > 0):
        raise InputError(f"{label} must be a positive number, got {short(value)}")
    if name in CHOICES and value not in CHOICES[name]:
        raise InputError(f"{label} must be one of {', '.join(map(repr, CHOICES[name]))}, got {short(value)}")
    if name == "riemannian" and not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{label} must be true or false, got {short(value)}")
    if name == "corpus" and not isinstance(value, str):
        raise InputError(f"{label} must be a corpus name or path, got {short(value)}")
    return value


def check_combination(engine, dtype, norm, riemannian, where=""):
    """The rules that tie settings together: the Value engine computes in float64 only, and Riemannian gradients
    need the sphere (there is nothing to be tangent to otherwise)."""
    if engine == "value" and dtype != "float64":
        raise InputError(f"{where}the weights are {dtype}, but the value engine computes in float64 only "
                         "(--dtype float32 needs --engine numpy)")
    if riemannian and norm != "sphere":
        raise InputError(f"{where}riemannian gradients need norm 'sphere' (--riemannian needs --norm sphere: "
                         "there is no sphere to be tangent to)")


def check_tokens(docs_tokens, vocab_size):
    """Documents as lists of token ids, as the loss needs them: at least one, each [BOS, ..., BOS] (2 tokens or
    more), every id in [0, vocab_size)."""
    if len(docs_tokens) == 0:
        raise InputError("no documents: the loss needs at least one")
    for tokens in docs_tokens:
        if len(tokens) < 2:
            raise InputError(f"each document needs at least 2 tokens ([BOS, ..., BOS]), got {short(list(tokens))}")
        if min(tokens) < 0 or max(tokens) >= vocab_size:
            raise InputError(f"token ids must be in [0, {vocab_size}), got {short(list(tokens))}")


def short(value, width=60):
    """repr(value), cut to `width` characters: a message stays one readable line whatever it quotes
    (a 300-digit integer, a million-token list)."""
    return cut(repr(value), width)


def cut(text, width=60):
    return text if len(text) <= width else text[:width - 4] + " ..."


def check_known(text, index):
    """Every character of `text` is in the vocabulary (index: character -> id); else an InputError naming the
    unknown ones, each once."""
    unknown = [ch for ch in dict.fromkeys(text) if ch not in index]
    if unknown:
        raise InputError(f"characters not in the vocabulary: {cut(' '.join(map(repr, unknown)))} "
                         f"(vocabulary: {short(''.join(index))})")


def check_sampling(num_samples, temperature, engine, prompt, prefix, cfg):
    """The sampling settings (the same rules as --num-samples, --temperature, --engine) and the prompt, whose
    ids `prefix` must leave room to generate (fewer than block_size). Returns prefix."""
    check_setting("num_samples", num_samples, "num_samples")
    check_setting("temperature", temperature, "temperature")
    check_setting("engine", engine, "engine")
    if len(prefix) >= cfg.block_size:
        raise InputError(f"prompt {short(prompt)} has {len(prefix)} characters; it must be shorter than block_size "
                         f"{cfg.block_size}")
    return prefix


def check_params(params, cfg):
    """The weights fit the config: its keys, each with its shape (a mismatch would surface deep in the model as an
    IndexError or a broadcasting error). Free for what init_params and load_checkpoint make (model_config's flat
    layout); other dicts are checked key by key."""
    if laid_out(params, cfg) is not None:
        return
    shapes = dict(param_shapes(cfg))
    if set(params) != set(shapes):
        raise InputError(f"the weights do not fit the config: missing {short(sorted(set(shapes) - set(params)))}, "
                         f"unexpected {short(sorted(set(params) - set(shapes)))}")
    for key, shape in shapes.items():
        if np.shape(params[key]) != shape:
            raise InputError(f"weight {key!r} has shape {np.shape(params[key])}; the config needs {shape}")


LOGIT_SPAN = 700.0  # softmax gives a character probability exp(-span) at worst: 0 in float64 beyond ~745 (log 0)


def check_forward(params, cfg, where):
    """InputError unless the model's forward pass stays within floating point, the same for both engines: weights
    (a checkpoint's) or flags (--alpha-init, --sz-init) so large that a normalization overflows, or logits so
    far apart that softmax gives a character probability 0 (whose log the loss needs), would train at a
    meaningless loss or stop at once, differently in each engine. Checked on one sequence of every token."""
    tokens = np.arange(min(cfg.block_size, cfg.vocab_size)) % cfg.vocab_size
    try:
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            logits, _ = forward_np(params, tokens, cfg)
            span = float((logits.max(axis=-1) - logits.min(axis=-1)).max())
    except FloatingPointError as e:
        raise InputError(f"{where}: the model's forward pass overflows ({e}): its weights or scales are too large "
                         "for floating point") from None
    if not span < LOGIT_SPAN:  # (also NaN)
        raise InputError(f"{where}: the model's logits span {span:.3g}; beyond {LOGIT_SPAN:g} softmax gives some "
                         "characters probability 0, and the loss needs their log (is --sz-init, or a weight, far "
                         "too large?)")


def check_loss_args(params, docs_tokens, cfg, engine):
    """What microgpt.loss_and_grads is given: an engine, weights that fit cfg, documents of valid token ids."""
    check_setting("engine", engine, "engine")
    check_tokens(docs_tokens, cfg.vocab_size)
    check_params(params, cfg)
