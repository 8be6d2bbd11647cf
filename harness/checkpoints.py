"""harness/checkpoints.py -- everything a run needs to continue exactly where it stopped, and its file.

    TrainState        the weights, Adam's moments, the step, the settings and the loss history of a run
    check_state       a TrainState's settings obey the flags' rules, its arrays fit its config
    save_checkpoint   one .npz file without pickle (arrays + a JSON "meta" entry), written atomically
    load_checkpoint   the same file back, checked like the flags: array headers against the config's shapes
                      before anything is loaded, every setting against its rule; a bad file is an InputError
    save_run          the checkpoint and the planetarium's history beside it, written as one unit
    corpus_fingerprint, check_same_corpus   the documents a run trains on, so a resume can tell they changed

The reference microgpt keeps everything in memory and ends; a learner expects --resume and a Ctrl-C that loses
nothing. The batch of step s is fixed by s and the seeded split, so no random state needs saving: a resumed
run continues bit for bit.
"""
import json
import os
from dataclasses import asdict, field, make_dataclass

import numpy as np

from harness.corpora import fingerprint
from harness.errors import InputError
from harness.history import HISTORY_NAME
from harness.memory import BYTES_PER_ARRAY, BYTES_PER_STEP, gigabytes, limit
from harness.run_files import atomic_write, check_arrays, check_npz_file, npz_headers, read_meta
from model_config import n_param_arrays, n_params, pack_params, param_shapes
from settings import MAX_STEPS, NON_NEGATIVE_INT, REQUIRED, STORED, check, check_combination, short

# TrainState(cfg, vocab, params, m, v, step=0, <one field per stored setting>, ...): a dataclass whose settings
# are the rows of settings.SETTINGS that a checkpoint keeps (engine, dtype, steps, batch_size, lr, seed,
# riemannian, eval_every, corpus), so a new setting reaches the state and the file with no edit here.
TrainState = make_dataclass("TrainState", [
    ("cfg", object), ("vocab", list),
    ("params", dict, field(default=None)),  # key -> array, views of one flat buffer (model_config's layout)
    ("m", object, field(default=None)),     # Adam's first moment, flat layout
    ("v", object, field(default=None)),     # Adam's second moment
    ("step", int, field(default=0)),        # optimizer steps done
    *[(s.name, type(s.default), field(default=s.default)) for s in STORED],
    ("run_id", str, field(default="")),          # the same for a run and all its resumes: whose files are whose
    ("corpus_sha256", str, field(default="")),   # corpora.fingerprint of train + val docs, checked on resume
    ("corpus_docs", int, field(default=0)),      # how many docs that was (for the message when they changed)
    ("train_loss", list, field(default_factory=list)),  # one per step
    ("val_loss", list, field(default_factory=list)),    # [(step, val loss), ...]
    ("ms_per_step", float, field(default=0.0)),  # mean wall time of the steps of the last train() call
    ("interrupted", bool, field(default=False)),  # stopped by Ctrl-C (or a KeyboardInterrupt from progress)
    ("error", str, field(default="")),           # why training diverged, if it did (params: the last good ones)
], namespace={"__module__": __name__, "__doc__": "Everything a run needs to continue exactly where it stopped, "
              "and what it has measured so far (microgpt.train returns it)."})

HUGE_GRADIENT = 1e150  # beyond this, Adam's grad ** 2 would overflow float64 (1.8e308): such a gradient is as
                       # broken as an infinite one (harness/run.py stops there), and no Adam moment comes near it


def check_state(state, where):
    """InputError unless every part of a TrainState is what a run makes: settings that obey their rules, arrays
    that fit its config in its dtype, finite weights, Adam moments a real gradient can give, one train loss per
    step and val losses at increasing whole steps. load_checkpoint, save_checkpoint and a resumed train() all
    apply it, so no file can be written that cannot be read back."""
    cfg = state.cfg
    _check_step(state.step, where)
    for s in STORED:
        check(s.name, getattr(state, s.name), f"{where}: {s.name}")
    if state.step > state.steps:
        raise InputError(f"{where}: step {state.step} is beyond the planned steps {state.steps}")
    vocab = state.vocab
    if not isinstance(vocab, list) or len(vocab) + 1 != cfg.vocab_size or vocab != sorted(set(vocab)) or \
            not all(isinstance(c, str) and len(c) == 1 for c in vocab):
        raise InputError(f"{where}: its vocabulary does not match vocab_size {cfg.vocab_size} (sorted characters, "
                         "each once, and BOS: as build_vocab makes it)")
    shapes = dict(param_shapes(cfg))
    if not isinstance(state.params, dict) or set(state.params) != set(shapes):
        raise InputError(f"{where}: its parameters are not the config's: {short(sorted(shapes))}")
    arrays = {**{f"param:{k}": a for k, a in state.params.items()}, "adam_m": state.m, "adam_v": state.v}
    for name, a in arrays.items():
        want = (n_params(cfg),) if name.startswith("adam") else shapes[name[len("param:"):]]
        if not isinstance(a, np.ndarray) or a.shape != want or a.dtype != np.dtype(state.dtype):
            raise InputError(f"{where}: {name} is {type(a).__name__} {getattr(a, 'shape', '')} "
                             f"{getattr(a, 'dtype', '')}; the config needs {want}, in one dtype ({state.dtype}) for "
                             "the weights and Adam's moments")
    check_combination(state.engine, state.dtype, cfg.norm, state.riemannian, f"{where}: ")
    if not all(np.isfinite(a).all() for a in arrays.values()):
        raise InputError(f"{where} contains non-finite weights or optimizer state")
    m_most, v_most = float(np.abs(state.m).max()), float(state.v.max())  # (as Python floats: no float32 overflow)
    if (state.v < 0).any() or not (m_most < HUGE_GRADIENT and v_most < HUGE_GRADIENT ** 2):
        raise InputError(f"{where}: Adam's moments are not what gradients can give (gradients below "
                         f"{HUGE_GRADIENT:g}: |adam_m| below that, adam_v not negative and below its square)")
    losses, val = np.asarray(state.train_loss, dtype=float), np.asarray(state.val_loss, dtype=float).reshape(-1, 2)
    if len(losses) != state.step:
        raise InputError(f"{where}: its train-loss history has {len(losses)} entries for {state.step} steps")
    if not (np.isfinite(losses).all() and np.isfinite(val).all()):
        raise InputError(f"{where}: its loss history contains NaN or inf")
    steps = val[:, 0]
    if len(steps) and ((steps != np.round(steps)).any() or steps.min() < 0 or steps.max() > state.step or
                       (np.diff(steps) <= 0).any()):
        raise InputError(f"{where}: its val-loss history has steps that are not increasing whole steps up to "
                         f"{state.step}")
    sha, docs = state.corpus_sha256, state.corpus_docs
    if not (isinstance(sha, str) and len(sha) in (0, 64) and isinstance(state.run_id, str)) or \
            not NON_NEGATIVE_INT.ok(docs):
        raise InputError(f"{where}: its corpus fingerprint or run id is malformed ({sha!r}, {docs!r})")


def _check_step(step, where):
    if not (NON_NEGATIVE_INT.ok(step) and step <= MAX_STEPS):
        raise InputError(f"{where}: step must be a non-negative integer up to 2**53, got {short(step)}")


def corpus_fingerprint(train_docs, val_docs):
    """(sha256, count) of the docs a run trains and validates on, in split order."""
    return fingerprint(list(train_docs) + list(val_docs)), len(train_docs) + len(val_docs)


def same_corpus(state, train_docs, val_docs):
    """Are these the documents the state was trained on (by its fingerprint; True when it has none)?"""
    return not state.corpus_sha256 or corpus_fingerprint(train_docs, val_docs)[0] == state.corpus_sha256


def check_same_corpus(state, train_docs, val_docs, corpus):
    """InputError if the docs differ from those the checkpoint was trained on (then the seeded split, and so
    every batch, would differ: the resumed run would not be the run it continues)."""
    sha, count = corpus_fingerprint(train_docs, val_docs)
    if state.corpus_sha256 and sha != state.corpus_sha256:
        change = (f"{state.corpus_docs} documents then, {count} now" if count != state.corpus_docs
                  else f"the same number of documents ({count}), but their text differs")
        raise InputError(f"corpus {corpus!r} has changed since the checkpoint was written ({change}): the seeded "
                         "train/val split would differ, so the run cannot continue exactly; restore the corpus, or "
                         "start a new run")


CHECKPOINT_FORMAT, CHECKPOINT_VERSION = "microgpt-checkpoint", 1


def save_checkpoint(path, state):
    """One .npz (no pickle): arrays "param:<key>", "adam_m", "adam_v", "train_loss", "val_loss" (K, 2), and
    "meta", a JSON string: format, version, config, vocab, step, every stored setting (engine, dtype, steps,
    batch_size, lr, seed, riemannian, eval_every, corpus), run_id, corpus_sha256 and corpus_docs."""
    check_state(state, "cannot save checkpoint")  # what load_checkpoint would refuse is never written
    meta = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "config": asdict(state.cfg),
            "vocab": list(state.vocab), "step": state.step, **{s.name: getattr(state, s.name) for s in STORED},
            "run_id": state.run_id, "corpus_sha256": state.corpus_sha256, "corpus_docs": state.corpus_docs}
    arrays = {f"param:{k}": a for k, a in state.params.items()}
    arrays.update(adam_m=state.m, adam_v=state.v, train_loss=np.asarray(state.train_loss, dtype=np.float64),
                  val_loss=np.asarray(state.val_loss, dtype=np.float64).reshape(-1, 2),
                  meta=np.array(json.dumps(meta)))
    atomic_write(path, lambda f: np.savez(f, **arrays))


def load_checkpoint(path, max_gb=None):
    """A TrainState from save_checkpoint's file; InputError if it is missing, corrupt or incompatible.

    Checked before anything big is read: the meta (its settings obey the same rules as the flags), the size
    of the model and history it describes (against max_gb, like --max-memory), and every array's header (the
    config's shapes and dtype, no unknown arrays). Then the arrays are loaded and checked (check_state).
    """
    path = os.fsdecode(path)
    check_npz_file(path, "checkpoint")
    where = f"checkpoint {path!r}"
    try:
        with open(path, "rb") as file:  # one open file for every read: a run replacing it cannot mix versions
            return _load_checkpoint(file, where, max_gb)
    except OSError as e:
        raise InputError(f"cannot read {where}: {e.strerror or e}") from None


def _load_checkpoint(file, where, max_gb):
    try:
        meta, cfg, vocab = read_meta(file, CHECKPOINT_FORMAT, CHECKPOINT_VERSION)
        step = meta.get("step")
        _check_step(step, where)
        settings = {}
        for s in STORED:  # each setting as the flags' rule wants it; one a file predates takes its `before`
            if s.name not in meta and s.before is REQUIRED:
                raise InputError(f"its meta has no {s.name!r}")
            settings[s.name] = check(s.name, meta.get(s.name, s.before))
        # weights and Adam's two moments, one train loss per step (in the file, in memory, in metrics.json: a file
        # of zeros compresses well, so a small file can claim a lot) and the objects of every parameter array
        need = 3 * 8 * n_params(cfg) + BYTES_PER_STEP * step + BYTES_PER_ARRAY * n_param_arrays(cfg)
        most, why = limit(max_gb)
        if need > most:
            raise InputError(f"it describes a model of {n_params(cfg):,} parameters trained {step:,} steps, about "
                             f"{gigabytes(need)} with its optimizer state and history; {why}")
        count = n_param_arrays(cfg) + 5  # + adam_m, adam_v, train_loss, val_loss, meta: counted before named
        headers = npz_headers(file, max_members=count + 16)
        if len(headers) < count:
            raise InputError(f"it holds {len(headers)} arrays; a checkpoint of its config (n_layer {cfg.n_layer}, "
                             f"norm {cfg.norm}) holds {count}")
        P, dtype = n_params(cfg), settings["dtype"]
        expected = {f"param:{key}": (shape, dtype) for key, shape in param_shapes(cfg)}
        expected.update(adam_m=((P,), dtype), adam_v=((P,), dtype), train_loss=((step,), np.float64),
                        val_loss=(lambda got: (min(got[0], step + 2), 2) if len(got) == 2 else (step + 2, 2),
                                  np.float64), meta=((), None))
        check_arrays(headers, expected)
        file.seek(0)
        with np.load(file, allow_pickle=False) as z:
            data = {k: z[k] for k in expected if k != "meta"}
        state = TrainState(cfg, vocab, pack_params({k[6:]: a for k, a in data.items() if k.startswith("param:")},
                                                   cfg), data["adam_m"], data["adam_v"], step, **settings,
                           run_id=meta.get("run_id", ""), corpus_sha256=meta.get("corpus_sha256", ""),
                           corpus_docs=meta.get("corpus_docs", 0), train_loss=data["train_loss"].tolist(),
                           val_loss=[tuple(row) for row in data["val_loss"].tolist()])
    except InputError as e:
        raise InputError(f"{where} is incompatible or incomplete: {e}") from None
    except Exception as e:  # zip, npy header, truncation, JSON, a config refusing its values: all "not valid"
        raise InputError(f"{where} is corrupt or not a microgpt checkpoint ({type(e).__name__}: {e})") from None
    check_state(state, where)
    state.val_loss = [(int(s), x) for s, x in state.val_loss]  # (whole steps: check_state made sure)
    return state


def save_run(folder, state, history=None):
    """The checkpoint and, when the run keeps one, the planetarium's history beside it, as one unit.

    The history is written first and records the step it belongs to; the checkpoint, written last, is what a
    resume continues from. So whenever a run stops (kill -9 between or during the writes, a full disk at the
    second one), the history is at the checkpoint's step or ahead of it, never behind: a resume drops the
    snapshots after the checkpoint's step (harness/cli.py, History.rewind) and continues both exactly. (One
    file would do too, but the planetarium would then read the optimizer state it never needs, and a manifest
    would be a third file to keep consistent.)"""
    if history is not None:
        history.save(os.path.join(folder, HISTORY_NAME), state.train_loss, state.val_loss, state.run_id)
    save_checkpoint(os.path.join(folder, "checkpoint.npz"), state)
