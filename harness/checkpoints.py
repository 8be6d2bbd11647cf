"""harness/checkpoints.py -- everything a run needs to continue exactly where it stopped, and its file:
TrainState, check_state (on load, save and resume), save_checkpoint and load_checkpoint (one .npz
without pickle, its claims checked from the headers before anything is loaded), save_run (the
checkpoint and the history as one unit), and the documents' fingerprint. The batch of step s is
fixed by s and the seeded split, so no random state is saved: a resumed run continues bit for bit.
"""
import json
import os
from dataclasses import asdict, field, make_dataclass

import numpy as np

from checks import check_vocab
from corpora import fingerprint
from harness.errors import InputError
from harness.history import HISTORY_NAME
from harness.memory import BYTES_PER_ARRAY, BYTES_PER_STEP, gigabytes, limit
from harness.run_files import atomic_write, check_arrays, npz_headers, read_meta, read_npz
from model_config import n_param_arrays, n_params, pack_params, param_shapes
from settings import MAX_STEPS, NON_NEGATIVE_INT, REQUIRED, STORED, check, check_combination, short

# TrainState(cfg, vocab, params, m, v, step=0, <a field per stored setting>, ...): its settings are the rows
# of settings.SETTINGS a checkpoint keeps, so a new setting reaches the state and the file with no edit here.
TrainState = make_dataclass("TrainState", [
    ("cfg", object), ("vocab", list),
    ("params", dict, field(default=None)),  # key -> array, views of one flat buffer (model_config's layout)
    ("m", object, field(default=None)),     # Adam's first moment, flat layout
    ("v", object, field(default=None)),     # Adam's second moment
    ("step", int, field(default=0)),        # optimizer steps done
    *[(s.name, type(s.default), field(default=s.default)) for s in STORED],
    ("run_id", str, field(default="")),          # the same for a run and all its resumes: whose files are whose
    ("corpus_sha256", str, field(default="")),   # corpora.fingerprint of train + val docs
    ("corpus_docs", int, field(default=0)),      # how many docs that was
    ("train_loss", list, field(default_factory=list)),  # one per step
    ("val_loss", list, field(default_factory=list)),    # [(step, val loss), ...]
    ("ms_per_step", float, field(default=0.0)),  # mean wall time of the steps of the last train() call
    ("interrupted", bool, field(default=False)),  # stopped by Ctrl-C (or a KeyboardInterrupt from progress)
    ("error", str, field(default="")),           # why training diverged (params: the last good ones)
], namespace={"__module__": __name__, "__doc__": "Everything a run needs to continue where it stopped, and "
              "what it has measured so far (microgpt.train returns it)."})

HUGE_GRADIENT = 1e150  # Adam's grad ** 2 would overflow float64 beyond it: as broken as an infinite gradient


def check_state(state, where):
    """InputError unless every part of a TrainState is what a run makes: settings that obey their
    rules, arrays that fit its config in one dtype, finite weights, Adam moments a gradient gives, a
    loss per step, val losses at increasing steps (what load_checkpoint refuses is never saved)."""
    cfg, vocab = state.cfg, state.vocab
    check_step(state.step, where)
    for s in STORED:
        check(s.name, getattr(state, s.name), f"{where}: {s.name}")
    if state.step > state.steps:
        raise InputError(f"{where}: step {state.step} is beyond the planned steps {state.steps}")
    check_vocab(vocab, cfg, f"{where}: ")
    shapes = dict(param_shapes(cfg))
    if not isinstance(state.params, dict) or set(state.params) != set(shapes):
        raise InputError(f"{where}: its parameters are not the config's: {short(sorted(shapes))}")
    arrays = {**{f"param:{k}": a for k, a in state.params.items()}, "adam_m": state.m, "adam_v": state.v}
    for name, a in arrays.items():
        want = (n_params(cfg),) if name.startswith("adam") else shapes[name[len("param:"):]]
        if not isinstance(a, np.ndarray) or a.shape != want or a.dtype != np.dtype(state.dtype):
            raise InputError(f"{where}: {name} is {type(a).__name__} {getattr(a, 'shape', '')} "
                             f"{getattr(a, 'dtype', '')}; the config needs {want}, in one dtype "
                             f"({state.dtype}) for the weights and Adam's moments")
    check_combination(state.engine, state.dtype, cfg.norm, state.riemannian, f"{where}: ")
    if not all(np.isfinite(a).all() for a in arrays.values()):
        raise InputError(f"{where} contains non-finite weights or optimizer state")
    m_most, v_most = float(np.abs(state.m).max()), float(state.v.max())  # (floats: no float32 overflow)
    if (state.v < 0).any() or not (m_most < HUGE_GRADIENT and v_most < HUGE_GRADIENT ** 2):
        raise InputError(f"{where}: Adam's moments are not what gradients below {HUGE_GRADIENT:g} give "
                         "(|adam_m| below that, adam_v not negative and below its square)")
    losses, val = np.asarray(state.train_loss, float), np.asarray(state.val_loss, float).reshape(-1, 2)
    if len(losses) != state.step:
        raise InputError(f"{where}: its train-loss history has {len(losses)} entries for {state.step} steps")
    if not (np.isfinite(losses).all() and np.isfinite(val).all()):
        raise InputError(f"{where}: its loss history contains NaN or inf")
    steps = val[:, 0]
    if len(steps) and ((steps != np.round(steps)).any() or steps.min() < 0 or steps.max() > state.step or
                       (np.diff(steps) <= 0).any()):
        raise InputError(f"{where}: its val-loss history has steps that are not increasing whole steps up "
                         f"to {state.step}")
    if not (isinstance(state.corpus_sha256, str) and len(state.corpus_sha256) in (0, 64) and
            isinstance(state.run_id, str) and NON_NEGATIVE_INT.ok(state.corpus_docs)):
        raise InputError(f"{where}: its corpus fingerprint or run id is malformed")


def check_step(step, where):
    if not (NON_NEGATIVE_INT.ok(step) and step <= MAX_STEPS):
        raise InputError(f"{where}: step must be a non-negative integer up to 2**53, got {short(step)}")


def corpus_fingerprint(train_docs, val_docs):
    """(sha256, count) of the docs a run trains and validates on, in split order."""
    return fingerprint(list(train_docs) + list(val_docs)), len(train_docs) + len(val_docs)


def same_corpus(state, train_docs, val_docs):
    """Are these the documents the state was trained on (by its fingerprint; True when it has none)?"""
    return not state.corpus_sha256 or corpus_fingerprint(train_docs, val_docs)[0] == state.corpus_sha256


def check_same_corpus(state, train_docs, val_docs, corpus):
    """InputError if the docs differ from the checkpoint's: the seeded split, and so every batch, would
    differ, and the resumed run would not be the run it continues."""
    sha, count = corpus_fingerprint(train_docs, val_docs)
    if state.corpus_sha256 and sha != state.corpus_sha256:
        change = (f"{state.corpus_docs} documents then, {count} now" if count != state.corpus_docs
                  else f"the same number of documents ({count}), but their text differs")
        raise InputError(f"corpus {corpus!r} has changed since the checkpoint was written ({change}): the "
                         "run cannot continue exactly; restore the corpus, or start a new run")


CHECKPOINT_FORMAT, CHECKPOINT_VERSION = "microgpt-checkpoint", 1


def save_checkpoint(path, state):
    """One .npz (no pickle): arrays "param:<key>", "adam_m", "adam_v", "train_loss", "val_loss" (K, 2),
    and "meta", JSON: format, version, config, vocab, step, every stored setting, run_id,
    corpus_sha256 and corpus_docs."""
    check_state(state, "cannot save checkpoint")
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
    Before anything big is read: its meta (each setting by its rule), the memory the model and
    history it describes would take (against max_gb, like --max-memory), and every array's header."""
    state = read_npz(path, "checkpoint", lambda file, where: _load(file, where, max_gb))
    where = f"checkpoint {os.fsdecode(path)!r}"
    check_state(state, where)
    state.val_loss = [(int(s), x) for s, x in state.val_loss]  # (whole steps: check_state made sure)
    return state


def _load(file, where, max_gb):
    meta, cfg, vocab = read_meta(file, CHECKPOINT_FORMAT, CHECKPOINT_VERSION)
    step = meta.get("step")
    check_step(step, where)
    settings = {}
    for s in STORED:  # each by its rule; a setting the file predates takes its `before`
        if s.name not in meta and s.before is REQUIRED:
            raise InputError(f"its meta has no {s.name!r}")
        settings[s.name] = check(s.name, meta.get(s.name, s.before))
    # weights, Adam's moments, a train loss per step (a file of zeros compresses well: a small file can claim
    # a lot) and the objects of every parameter array
    need = 3 * 8 * n_params(cfg) + BYTES_PER_STEP * step + BYTES_PER_ARRAY * n_param_arrays(cfg)
    most, why = limit(max_gb)
    if need > most:
        raise InputError(f"it describes a model of {n_params(cfg):,} parameters trained {step:,} steps, "
                         f"about {gigabytes(need)} with its optimizer state and history; {why}")
    count = n_param_arrays(cfg) + 5  # + adam_m, adam_v, train_loss, val_loss, meta: counted, then named
    headers = npz_headers(file, max_members=count + 16)
    if len(headers) < count:
        raise InputError(f"it holds {len(headers)} arrays; a checkpoint of its config (n_layer "
                         f"{cfg.n_layer}, norm {cfg.norm}) holds {count}")
    P, dtype = n_params(cfg), settings["dtype"]
    expected = {f"param:{key}": (shape, dtype) for key, shape in param_shapes(cfg)}
    expected.update(adam_m=((P,), dtype), adam_v=((P,), dtype), train_loss=((step,), np.float64),
                    val_loss=(lambda got: (min(got[0], step + 2), 2) if len(got) == 2 else (step + 2, 2),
                              np.float64), meta=((), None))
    check_arrays(headers, expected)
    with np.load(file, allow_pickle=False) as z:
        data = {k: z[k] for k in expected if k != "meta"}
    params = pack_params({k[len("param:"):]: a for k, a in data.items() if k.startswith("param:")}, cfg)
    return TrainState(cfg, vocab, params, data["adam_m"], data["adam_v"], step, **settings,
                      run_id=meta.get("run_id", ""), corpus_sha256=meta.get("corpus_sha256", ""),
                      corpus_docs=meta.get("corpus_docs", 0), train_loss=data["train_loss"].tolist(),
                      val_loss=[tuple(row) for row in data["val_loss"].tolist()])


def save_run(folder, state, history=None):
    """The checkpoint and (when the run keeps one) the planetarium's history, written as one unit: the
    history first, recording the step it belongs to, the checkpoint last. A resume continues from
    the checkpoint, so whenever a run stops (kill -9 between or during the writes, a full disk at
    the second), the history is at its step or ahead, never behind: the resume drops the snapshots
    after that step and continues both exactly. (One file would do too, but the planetarium would
    read optimizer state it never needs; a manifest would be a third file to keep consistent.)"""
    if history is not None:
        history.save(os.path.join(folder, HISTORY_NAME), state.train_loss, state.val_loss, state.run_id)
    save_checkpoint(os.path.join(folder, "checkpoint.npz"), state)
