"""checks.py -- what the chapter's functions check at their door, besides the settings (settings.py).

A learner calls loss_and_grads, sample or encode with whatever they have; a mistake there is one clear
InputError instead of an IndexError deep in the model. These rules are part of the model's layer (they import
nothing of harness/), so stepping through the chapter in a debugger never lands in the run's machinery:

    check_known(text, index)               every character is in the vocabulary
    check_vocab(vocab, cfg, where)         a vocabulary as build_vocab makes it (a checkpoint's, say)
    check_tokens(docs_tokens, vocab_size)  documents as token ids, as the loss needs them
    check_params(params, cfg)              weights that fit the config
    check_forward(params, cfg, where)      a forward pass that stays within floating point, for both engines
    check_loss_args, check_sampling        what loss_and_grads and sample are given, checked at their door
"""
import numpy as np

from model_config import laid_out, param_shapes
from numpy_engine import gpt_forward
from settings import InputError, check, cut, short


def check_known(text, index):
    """Every character of `text` is in the vocabulary (index: character -> id, or the vocabulary itself); else
    an InputError naming the unknown ones, each once."""
    unknown = [ch for ch in dict.fromkeys(text) if ch not in index]
    if unknown:
        raise InputError(f"characters not in the vocabulary: {cut(' '.join(map(repr, unknown)))} "
                         f"(vocabulary: {short(''.join(index))})")


def check_vocab(vocab, cfg, where):
    """A vocabulary as build_vocab makes it: vocab_size - 1 sorted characters, each once (BOS is the last id)."""
    if not isinstance(vocab, list) or len(vocab) + 1 != cfg.vocab_size or vocab != sorted(set(vocab)) or \
            not all(isinstance(c, str) and len(c) == 1 for c in vocab):
        raise InputError(f"{where}its vocabulary does not match vocab_size {cfg.vocab_size} (sorted "
                         "characters, each once, and BOS: as build_vocab makes it)")


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


def check_params(params, cfg):
    """The weights fit the config: its keys, each an array of its shape (a mismatch would surface deep in the
    model as an IndexError or a broadcasting error). Free for what init_params and load_checkpoint make
    (model_config's flat layout); other dicts are checked key by key."""
    if laid_out(params, cfg) is not None:
        return
    shapes = dict(param_shapes(cfg))
    if not isinstance(params, dict) or set(params) != set(shapes):
        got = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise InputError(f"the weights do not fit the config: its keys are {short(sorted(shapes))}, got {short(got)}")
    for key, shape in shapes.items():
        if not isinstance(params[key], np.ndarray):
            raise InputError(f"weight {key!r} is a {type(params[key]).__name__}; the model needs NumPy arrays "
                             "(init_params makes them)")
        if params[key].shape != shape:
            raise InputError(f"weight {key!r} has shape {params[key].shape}; the config needs {shape}")


LOGIT_SPAN = 700.0  # softmax gives a character probability exp(-span) at worst: 0 in float64 beyond ~745 (log 0)


def check_forward(params, cfg, where):
    """InputError unless the model's forward pass stays within floating point, the same for both engines: weights
    (a checkpoint's) or flags (--alpha-init, --sz-init) so large that a normalization overflows, or logits so
    far apart that softmax gives a character probability 0 (whose log the loss needs), would train at a
    meaningless loss or stop at once, differently in each engine. Checked on one sequence of every token."""
    tokens = np.arange(min(cfg.block_size, cfg.vocab_size)) % cfg.vocab_size
    try:
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            logits, _ = gpt_forward(params, tokens, cfg)
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
    check("engine", engine)
    check_tokens(docs_tokens, cfg.vocab_size)
    check_params(params, cfg)


def check_sampling(prompt, vocab, cfg, num_samples, temperature, seed, engine):
    """What microgpt.sample is given, by the flags' rules (--num-samples, --temperature, --seed, --engine), and a
    prompt of known characters that leaves room to generate (shorter than block_size). Returns the prompt."""
    for name, value in (("num_samples", num_samples), ("temperature", temperature), ("seed", seed),
                        ("engine", engine), ("prompt", prompt)):
        check(name, value)
    check_known(prompt, vocab)
    if len(prompt) >= cfg.block_size:
        raise InputError(f"prompt {short(prompt)} has {len(prompt)} characters; it must be shorter than block_size "
                         f"{cfg.block_size}")
    return prompt
