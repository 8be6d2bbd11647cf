"""checks.py -- what the chapter's functions check at their door, besides the settings'
rules: a learner calls train, loss_and_grads, sample or encode with whatever they have,
and a mistake is one clear InputError, not an IndexError deep in the model. Nothing of
harness/ is imported: a debugger stepping through the chapter never lands in the run's
machinery."""
import numpy as np

from model_config import HUGE_GRADIENT, TRAINING_FIELDS, check_dtype, n_params, param_shapes
from numpy_engine import gpt_forward
from settings import (
    DTYPES,
    MAX_STEPS,
    NON_NEGATIVE_INT,
    InputError,
    Text,
    check,
    check_combination,
    cut,
    is_bool,
    is_int,
    is_real,
    resumed,
    short,
)
from value import Value


def check_known(text, index):
    """InputError naming each character of `text` not in `index` (ids, or the vocab)."""
    unknown = [ch for ch in dict.fromkeys(text) if ch not in index]
    if unknown:
        raise InputError("characters not in the vocabulary: {unknown} (vocabulary: {vocab})",
                         unknown=cut(" ".join(map(repr, unknown))), vocab=short("".join(index)))


def check_vocab(vocab, cfg, where):
    """A vocabulary as build_vocab makes it: vocab_size - 1 sorted unique characters."""
    if not isinstance(vocab, list) or len(vocab) + 1 != cfg.vocab_size or \
            vocab != sorted(set(vocab)) or \
            not all(isinstance(c, str) and len(c) == 1 for c in vocab):
        raise InputError("{where}its vocabulary does not match vocab_size {vocab_size} (sorted "
                         "characters, each once, and BOS: as build_vocab makes it)", where=where,
                         vocab_size=cfg.vocab_size)


def check_tokens(docs_tokens, vocab_size):
    """Documents of token ids: at least one, each [BOS, ..., BOS], ids < vocab_size."""
    if len(docs_tokens) == 0:
        raise InputError("no documents: the loss needs at least one")
    for tokens in docs_tokens:
        if len(tokens) < 2:
            raise InputError("each document needs at least 2 tokens ([BOS, ..., BOS]), got {got}",
                             got=short(list(tokens)))
        if min(tokens) < 0 or max(tokens) >= vocab_size:
            raise InputError("token ids must be in [0, {vocab_size}), got {got}",
                             vocab_size=vocab_size, got=short(list(tokens)))


FLOAT_TYPES = tuple(np.dtype(name).type for name in DTYPES)  # (dtype.name runs Python code)


def check_params(params, cfg):
    """The weights fit the config: its keys, each an array of its shape (not an
    IndexError or a broadcasting error deep in the model)."""
    shapes = dict(param_shapes(cfg))
    if not isinstance(params, dict) or params.keys() != shapes.keys():
        got = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise InputError("the weights do not fit the config: its keys are {keys}, got {got}",
                         keys=short(sorted(shapes)), got=short(got))
    for key, shape in shapes.items():
        if not isinstance(params[key], np.ndarray):
            raise InputError("weight {key!r} is a {kind}; the model needs NumPy arrays "
                             "(init_params makes them)", key=key, kind=type(params[key]).__name__)
        if params[key].shape != shape:
            raise InputError("weight {key!r} has shape {got}; the config needs {shape}", key=key,
                             got=params[key].shape, shape=shape)
        # complex, ints, float16: not the model's numbers (by .type: NumPy computes
        # .name in Python, 18% of a sphere step at batch 1)
        if params[key].dtype.type not in FLOAT_TYPES:
            raise InputError("weight {key!r} has dtype {got}; the model computes in {dtypes}",
                             key=key, got=params[key].dtype, dtypes=" or ".join(DTYPES))


LOGIT_SPAN = 700.0  # softmax's smallest probability is exp(-span): 0 in float64 beyond ~745


def check_forward(params, cfg, where):
    """InputError unless the forward pass stays within floating point in both engines:
    weights or flags (--alpha-init, --sz-init) so large that a normalization overflows,
    or softmax gives a character probability 0 (the loss needs its log), would train at
    a meaningless loss, or stop. Checked on one sequence of every token."""
    tokens = np.arange(min(cfg.block_size, cfg.vocab_size)) % cfg.vocab_size
    try:
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            logits, _cache = gpt_forward(params, tokens, cfg)
            span = float((logits.max(axis=-1) - logits.min(axis=-1)).max())
    except FloatingPointError as e:
        raise InputError("{where}: the model's forward pass overflows ({error}): its weights or "
                         "scales are too large for floating point", where=where, error=e) from None
    if not span < LOGIT_SPAN:  # (also NaN)
        raise InputError("{where}: the model's logits span {span:.3g}; beyond {most:g} softmax "
                         "gives some characters probability 0, and the loss needs their log (is "
                         "--sz-init, or a weight, far too large?)", where=where, span=span,
                         most=LOGIT_SPAN)


# computes_the_mirrors_logits' model: every part of gpt() and gpt_sphere()
MIRROR_CFG = dict(vocab_size=5, n_embd=4, n_head=2, n_layer=2, block_size=3)
MIRROR_TOKENS = (4, 0, 3)  # BOS, then two characters: three positions, a few ms on Values
MIRROR_TOLERANCE = 1e-9  # the same code agrees to ~1e-15; an edit moves the logits far more


def computes_the_mirrors_logits(model, cfg, init_params):
    """Whether model(token_id, pos_id, keys, values, state_dict, cfg), the chapter's
    gpt() or gpt_sphere() as edited, on Values, gives gpt_forward's logits of
    MIRROR_TOKENS to MIRROR_TOLERANCE, for a tiny model with cfg's norm and scales, each
    1-D scale moved off its init (so each factor counts). A model that raises: False."""
    tiny = type(cfg)(**{**vars(cfg), **MIRROR_CFG})
    params, rng = init_params(tiny, 0), np.random.default_rng(1)
    for array in params.values():
        if array.ndim == 1:
            array *= rng.uniform(-2, 2, array.shape)
    want = gpt_forward(params, np.array(MIRROR_TOKENS), tiny)[0]
    state_dict = {key: [[Value(x) for x in row] for row in a.tolist()] if a.ndim == 2 else
                  [Value(x) for x in a.tolist()] for key, a in params.items()}
    keys, values = [[] for _ in range(tiny.n_layer)], [[] for _ in range(tiny.n_layer)]
    try:
        got = np.array([[logit.data for logit in model(token_id, pos_id, keys, values, state_dict,
                                                      tiny)]
                        for pos_id, token_id in enumerate(MIRROR_TOKENS)], dtype=float)
        return got.shape == want.shape and \
            np.abs(got - want).max() <= MIRROR_TOLERANCE * np.abs(want).max()
    except Exception:  # a learner's edit that fails: --engine value runs it, to its traceback
        return False


def check_loss_args(params, docs_tokens, cfg, engine, out=None):
    """What loss_and_grads is given: an engine, weights that fit cfg, documents of valid
    ids, and for out= writable arrays of the weights' shapes."""
    check("engine", engine)
    check_tokens(docs_tokens, cfg.vocab_size)
    check_params(params, cfg)
    shapes = dict(param_shapes(cfg))
    if out is not None and not (isinstance(out, dict) and out.keys() == shapes.keys() and all(
            isinstance(a, np.ndarray) and a.shape == shapes[k] and a.flags.writeable and
            a.dtype.type in FLOAT_TYPES for k, a in out.items())):
        raise InputError("out= must hold a writable float array of each weight's shape (as "
                         "alloc_params makes them), got {got}", got=short(out))


MAX_API_BYTES = 2**34  # 16 GiB: a batch or a number of samples needing more is a typo


def check_size(name, n, cfg):
    """batch_size or num_samples within memory: a sequence's activations take about
    block_size * (vocab_size + 16 n_embd n_layer) floats."""
    need = 8 * n * cfg.block_size * (cfg.vocab_size + 16 * cfg.n_embd * cfg.n_layer)
    if need > MAX_API_BYTES:
        raise InputError("{name} {n:,} would need about {gb:,.0f} GB for its activations (at most "
                         "{most:.0f} GB)", name=name, n=n, gb=need / 1e9, most=MAX_API_BYTES / 1e9)


def check_names_fit(num_samples, cfg):
    """sample()'s list holds every name at once, each about 64 + block_size bytes
    (iter_samples streams them instead)."""
    check("num_samples", num_samples)
    need = num_samples * (64 + cfg.block_size)
    if need > MAX_API_BYTES:
        raise InputError("num_samples {n:,} names in one list would need about {gb:,.0f} GB (at "
                         "most {most:.0f} GB); iter_samples gives them one at a time",
                         n=num_samples, gb=need / 1e9, most=MAX_API_BYTES / 1e9)


def check_split(docs, seed, val_fraction):
    """split_docs' arguments: a seed by --seed's rule, and a val_fraction in (0, 1) that
    leaves a document to train on. Returns the seed."""
    check("seed", seed)
    if not (is_real(val_fraction) and 0 < val_fraction < 1) or \
            len(docs) - max(1, int(len(docs) * val_fraction)) < 1:
        raise InputError("val_fraction must be a number between 0 and 1 that leaves at least one "
                         "of the {n} documents to train on, got {got}", n=len(docs),
                         got=short(val_fraction))
    return seed


def check_sampling(prompt, vocab, cfg, num_samples, temperature, seed, engine, params=None):
    """What microgpt.sample is given (the flags by their rules, weights that fit cfg, a
    prompt of known characters shorter than block_size); the temperature as a float."""
    if params is not None:
        check_params(params, cfg)
    for name, value in (("num_samples", num_samples), ("temperature", temperature), ("seed", seed),
                        ("engine", engine), ("prompt", prompt)):
        check(name, value)
    check_vocab(vocab, cfg, "")  # (one that does not fit would give wrong names, or an IndexError)
    check_known(prompt, vocab)
    if len(prompt) >= cfg.block_size:
        raise InputError("prompt {prompt} has {n} characters; it must be shorter than block_size "
                         "{block_size}", prompt=short(prompt), n=len(prompt),
                         block_size=cfg.block_size)
    return float(temperature)  # (a Fraction or a NumPy scalar: the real number it holds)


def check_training(cfg, vocab, train_docs, val_docs, settings, resume=None):
    """What microgpt.train is given: each setting by its rule and with the others, a
    train and a val document, and a state to resume of this model, its settings changed
    only as settings.resumed allows. Returns the settings as plain Python values."""
    settings = dict(settings)
    if not isinstance(settings["dtype"], str):  # np.float32 or its dtype: "float32"
        settings["dtype"] = check_dtype(settings["dtype"]).name
    for name, value in settings.items():
        settings[name] = plain(check(name, value))
    check_combination(settings["engine"], settings["dtype"], cfg.norm, settings["riemannian"])
    check_vocab(list(vocab), cfg, "")  # (vocab_size without BOS's +1: here, not an IndexError)
    check_size("batch_size", settings["batch_size"], cfg)
    if not train_docs or not val_docs:
        raise InputError("training needs at least one train and one val document (got {train} and "
                         "{val})", train=len(train_docs), val=len(val_docs))
    if resume is not None:  # (a state read from a file was checked there too, naming it)
        check_state(resume, Text("the state to resume"))
        if resume.cfg != cfg or list(resume.vocab) != list(vocab):
            raise InputError("the state to resume is of another model (its config or vocabulary "
                             "differ)")
        resumed(resume.settings(), settings, resume.step)
    return settings


def plain(value):
    """A NumPy scalar or a Fraction as the bool, int or float it holds (for JSON)."""
    if is_bool(value):
        return bool(value)
    if is_int(value):
        return int(value)
    return float(value) if is_real(value) else value


def check_state(state, where):
    """InputError unless a TrainState is what a run makes: settings by their rules,
    arrays of its config in one dtype, finite weights, Adam moments a gradient gives, a
    loss per step, val losses at increasing steps (what load refuses is never saved)."""
    cfg, vocab = state.cfg, state.vocab
    check_step(state.step, where)
    for name in TRAINING_FIELDS:
        check(name, getattr(state, name), f"{where}: {name}")
    if state.step > state.steps:
        raise InputError("{where}: step {step} is beyond the planned steps {steps}", where=where,
                         step=state.step, steps=state.steps)
    check_vocab(vocab, cfg, f"{where}: ")
    shapes = dict(param_shapes(cfg))
    if not isinstance(state.params, dict) or set(state.params) != set(shapes):
        raise InputError("{where}: its parameters are not the config's: {keys}", where=where,
                         keys=short(sorted(shapes)))
    arrays = {**{f"param:{k}": a for k, a in state.params.items()}, "adam_m": state.m,
              "adam_v": state.v}
    for name, a in arrays.items():
        want = (n_params(cfg),) if name.startswith("adam") else shapes[name[len("param:"):]]
        if not isinstance(a, np.ndarray) or a.shape != want or a.dtype != np.dtype(state.dtype):
            raise InputError("{where}: {name} is {kind} {shape} {dtype}; the config needs {want}, "
                             "in one dtype ({state_dtype}) for the weights and Adam's moments",
                             where=where, name=name, kind=type(a).__name__,
                             shape=getattr(a, "shape", ""), dtype=getattr(a, "dtype", ""),
                             want=want, state_dtype=state.dtype)
    check_combination(state.engine, state.dtype, cfg.norm, state.riemannian, f"{where}: ")
    if not all(np.isfinite(a).all() for a in arrays.values()):
        raise InputError("{where} contains non-finite weights or optimizer state", where=where)
    m_most, v_most = float(np.abs(state.m).max()), float(state.v.max())  # (no float32 overflow)
    if (state.v < 0).any() or not (m_most < HUGE_GRADIENT and v_most < HUGE_GRADIENT ** 2):
        raise InputError("{where}: Adam's moments are not what gradients below {most:g} give "
                         "(|adam_m| below that, adam_v not negative and below its square)",
                         where=where, most=HUGE_GRADIENT)
    losses = np.asarray(state.train_loss, float)
    val = np.asarray(state.val_loss, float).reshape(-1, 2)
    if len(losses) != state.step:
        raise InputError("{where}: its train-loss history has {n} entries for {step} steps",
                         where=where, n=len(losses), step=state.step)
    if not (np.isfinite(losses).all() and np.isfinite(val).all()):
        raise InputError("{where}: its loss history contains NaN or inf", where=where)
    steps = val[:, 0]
    if len(steps) and ((steps != np.round(steps)).any() or steps.min() < 0 or
                       steps.max() > state.step or (np.diff(steps) <= 0).any()):
        raise InputError("{where}: its val-loss history has steps that are not increasing whole "
                         "steps up to {step}", where=where, step=state.step)


def check_step(step, where):
    if not (NON_NEGATIVE_INT.ok(step) and step <= MAX_STEPS):
        raise InputError("{where}: step must be a non-negative integer up to 2**53, got {got}",
                         where=where, got=short(step))
