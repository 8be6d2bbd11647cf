"""settings.py -- every setting of a run, once: name, default, rule, help, resume.

One table, SETTINGS: harness/cli.py makes a flag of each row, and check(name, value,
label) applies a row's rule alike to a flag, a checkpoint's field and a Python argument.
GPTConfig, TrainState and microgpt.train write their fields out as plain code;
tests/test_settings.py checks them against the table. resumed() says what a resume may
change. InputError lives here, in plain English, so that the model's modules raise it
without importing the run's machinery (which prints it translated).
"""
import math
import numbers
from dataclasses import dataclass

NORMS = ("rmsnorm", "sphere")  # the reference microgpt, and nGPT on the unit sphere (lecture 3)
ENGINES = ("value", "numpy")   # the scalar Value graph of the chapter, and the same math on arrays
DTYPES = ("float64", "float32")  # the NumPy engine computes in its weights' dtype; Value in float64
MAX_STEPS = 2**53  # integers up to here are exact in float64 (the lr schedule divides by steps)


class Text(str):
    """English words, template.format(**fields); harness/i18n.py's translated() words
    them in the console's language."""

    def __new__(cls, template, **fields):
        text = super().__new__(cls, template.format(**fields) if fields else template)
        text.template, text.fields = template, fields
        return text


class InputError(ValueError):
    """Bad input (a flag, an argument, a corpus, a checkpoint): one line, exit 2. str()
    is the English Text(template, **fields); .template and .fields translate it."""

    def __init__(self, template, **fields):
        super().__init__(Text(template, **fields))
        self.template, self.fields = template, fields


# --------------------------------------------------------------------------- rules

def is_int(value):
    """An integer (Python's or NumPy's), not a bool (True is an int, but never a count).
    (No NumPy import here, so that a program starts fast; NumPy's bool is no number.)"""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value):
    """A real number (int, float or a NumPy scalar such as float32), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_bool(value):
    return isinstance(value, bool) or (type(value).__module__ == "numpy"  # NumPy's bool too
                                       and type(value).__name__ in ("bool", "bool_"))


@dataclass(frozen=True)
class Rule:
    """What a setting's value must be: `says` completes "{label} must be ..." (check()
    fills in {most} and {choices}), `ok` tests a value, `parse` is argparse's type,
    `choices` a choice's values, `shown` names a value in --help (--steps N)."""
    says: str
    ok: object
    parse: object = str
    choices: tuple = ()
    shown: str = "X"


def positive_int(most=None):
    says = "a positive integer" + (" (at most 2**53 = {most:,})" if most == MAX_STEPS else "")
    return Rule(says, lambda v: is_int(v) and 0 < v <= (most or v), int, shown="N")


def choice(*values):
    return Rule("one of {choices}",
                lambda v: isinstance(v, str) and v in values, str, values)


POSITIVE_INT = positive_int()
NON_NEGATIVE_INT = Rule("a non-negative integer", lambda v: is_int(v) and v >= 0, int,
                        shown="N")
POSITIVE_NUMBER = Rule("a positive number",
                       lambda v: is_real(v) and math.isfinite(v) and v > 0, float)
SWITCH = Rule("true or false", is_bool, bool)
TEXT = Rule("a string", lambda v: isinstance(v, str), shown="TEXT")
PATH = Rule("a non-empty path", lambda v: isinstance(v, str) and v.strip() != "", shown="PATH")


# --------------------------------------------------------------------------- the table

REQUIRED = object()  # Setting.before for a setting every checkpoint holds


@dataclass(frozen=True)
class Setting:
    """One row of the table.

    group     "model" (a GPTConfig field), "training", "files", "sampling" (--help)
    resume    on resume: "keep" (the checkpoint's value; another is refused), "lower"
              (or a lower one), "change" (the new value), "" (not in a checkpoint)
    sampling  it also applies to --sample-only
    before    its value in a checkpoint older than the setting (REQUIRED: all have it)
    """
    name: str
    default: object
    rule: Rule
    help: str
    group: str
    resume: str = ""
    sampling: bool = False
    before: object = REQUIRED

    @property
    def flag(self):
        return "--" + self.name.replace("_", "-")


SETTINGS = (
    # model: chapter 22's sizes, and the switch to the hypersphere
    Setting("n_embd", 16, POSITIVE_INT, "embedding width C", "model", "keep"),
    Setting("n_head", 4, POSITIVE_INT, "attention heads; must divide n_embd", "model", "keep"),
    Setting("n_layer", 1, POSITIVE_INT, "transformer blocks", "model", "keep"),
    Setting("block_size", 16, POSITIVE_INT, "most positions per document; longer ones are cropped",
            "model", "keep"),
    Setting("norm", "rmsnorm", choice(*NORMS), "rmsnorm: the reference microgpt; sphere: nGPT, "
            "every vector on the unit hypersphere", "model", "keep"),
    Setting("alpha_init", 0.05, POSITIVE_NUMBER, "sphere: the initial eigen learning rate alpha of "
            "the residual steps", "model", "keep"),
    Setting("sz_init", 1.0, POSITIVE_NUMBER, "sphere: the initial logit scale s_z", "model",
            "keep"),
    Setting("engine", "value", choice(*ENGINES), "value: the chapter's code on the scalar Value "
            "graph (slow, every number inspectable); numpy: the same math on arrays. Sampling uses "
            "it too", "training", "change", sampling=True),
    Setting("dtype", "float64", choice(*DTYPES), "the numpy engine computes in float64 or float32 "
            "(faster on bigger models); the value engine in float64 only", "training", "keep",
            before="float64"),
    Setting("steps", 1000, positive_int(MAX_STEPS), "optimizer steps; the learning rate decays "
            "linearly to 0 at the last one (--resume: may extend the run)", "training", "change"),
    Setting("batch_size", 1, POSITIVE_INT, "documents per step", "training", "keep"),
    Setting("lr", 0.01, POSITIVE_NUMBER, "Adam's learning rate; --resume may lower it (never raise "
            "it) for the rest of the run, e.g. after a divergence", "training", "lower"),
    Setting("seed", 42, NON_NEGATIVE_INT, "seeds the train/val split, the initial weights and the "
            "samples", "training", "keep", sampling=True),
    Setting("riemannian", False, SWITCH, "sphere: project the matrix gradients onto the tangent "
            "space before Adam", "training", "keep"),
    Setting("eval_every", 100, POSITIVE_INT, "val loss (and, with --out, a checkpoint) every N "
            "steps", "training", "change"),
    Setting("corpus", "names", PATH, "a built-in corpus (listed below) or a UTF-8 text file with "
            "one document per line", "training", "keep"),
    Setting("max_memory", 4.0, POSITIVE_NUMBER, "refuse a run whose memory, estimated from the "
            "config before anything is allocated, is larger (GB)", "training", sampling=True),
    Setting("out", None, PATH, "folder for checkpoint.npz, history.npz, metrics.json and loss.png; "
            "the run holds it while it runs (without --out, Ctrl-C still saves, to a new folder "
            "out/run-N)", "files"),
    Setting("resume", False, SWITCH, "continue from --checkpoint (default: OUT/checkpoint.npz)",
            "files"),
    Setting("checkpoint", None, PATH, "the checkpoint --resume or --sample-only reads", "files",
            sampling=True),
    Setting("sample_only", False, SWITCH, "load --checkpoint and only sample (with its engine and "
            "seed unless --engine or --seed is given)", "files", sampling=True),
    Setting("num_samples", 20, POSITIVE_INT, "names to generate", "sampling", sampling=True),
    Setting("temperature", 0.5, POSITIVE_NUMBER, "lower is more conservative; below 1e-100 the "
            "most likely character is taken (greedy)", "sampling", sampling=True),
    Setting("prompt", "", TEXT, "a prefix every name continues", "sampling", sampling=True),
)
BY_NAME = {row.name: row for row in SETTINGS}
DEFAULTS = {row.name: row.default for row in SETTINGS}
# a checkpoint's settings (its config holds the model rows)
STORED = tuple(row for row in SETTINGS if row.resume and row.group != "model")


# --------------------------------------------------------------------------- checking

def cut(text, width=60):
    """text, cut to `width` characters: a message stays one line whatever it quotes."""
    return text if len(text) <= width else text[:width - 4] + " ..."


def short(value, width=60):
    return cut(repr(value), width)


def check(name, value, label=None):
    """value, if it obeys setting `name`'s rule; else InputError "{label} must be ...,
    got ...". label: its source (a flag, "checkpoint 'x.npz': lr", an argument)."""
    rule = BY_NAME[name].rule
    if not rule.ok(value):
        says = Text(rule.says, most=MAX_STEPS, choices=", ".join(map(repr, rule.choices)))
        raise InputError("{label} must be {says}, got {value}", label=label or name, says=says,
                         value=short(value))
    return value


def check_combination(engine, dtype, norm, riemannian, where=""):
    """The rules that tie settings together: the Value engine computes in float64 only,
    and Riemannian gradients need the sphere (nothing is tangent otherwise)."""
    if engine == "value" and dtype != "float64":
        raise InputError("{where}the weights are {dtype}, but the value engine computes in "
                         "float64 only (--dtype float32 needs --engine numpy)", where=where,
                         dtype=dtype)
    if riemannian and norm != "sphere":
        raise InputError("{where}riemannian gradients need norm 'sphere' (--riemannian needs "
                         "--norm sphere: there is no sphere to be tangent to)", where=where)


def resumed(kept, given, step, label=lambda name: name):
    """(settings, {name: the checkpoint's value} of those lowered) of a resumed run,
    from the checkpoint's `kept` and the `given` (None: not given), each by its
    `resume`; InputError names every one that breaks it, or steps below `step`."""
    merged, lowered, conflicts = dict(kept), {}, []
    for name, value in given.items():
        if value is None or value == kept.get(name):
            continue
        how = BY_NAME[name].resume
        if how == "change" or (how == "lower" and value < kept[name]):
            if how == "lower":
                lowered[name] = kept[name]
            merged[name] = value
        elif how:
            conflicts.append(label(name))
    if conflicts:
        changeable = ", ".join(row.flag for row in SETTINGS if row.resume == "change")
        raise InputError("{flags} differs from the checkpoint; a resumed run keeps its model, data "
                         "and optimizer settings (only {changeable} may change, and a lower --lr)"
                         if len(conflicts) == 1 else
                         "{flags} differ from the checkpoint; a resumed run keeps its model, data "
                         "and optimizer settings (only {changeable} may change, and a lower --lr)",
                         flags=", ".join(conflicts), changeable=changeable)
    if merged["steps"] < step:
        raise InputError("the checkpoint is at step {step}, beyond the requested {flag} {steps}",
                         step=step, flag=label("steps"), steps=merged["steps"])
    return merged, lowered
