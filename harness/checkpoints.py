"""harness/checkpoints.py -- what a run needs to continue exactly where it stopped: one
.npz without pickle, its claims checked from the headers before anything is loaded. The
batch of step s is fixed by s and the seeded split, so no random state is saved."""
import json
import os
from dataclasses import asdict, dataclass

import numpy as np

from checks import check_state, check_step
from corpora import fingerprint
from harness.errors import InputError
from harness.history import HISTORY_NAME
from harness.i18n import N_, _
from harness.memory import BYTES_PER_ARRAY, BYTES_PER_STEP, gigabytes, limit
from harness.run_files import atomic_write, load_arrays, npz_headers, read_meta, read_npz
from model_config import (
    TRAINING_FIELDS,
    TrainState,
    n_param_arrays,
    n_params,
    pack_params,
    param_shapes,
)
from settings import NON_NEGATIVE_INT, REQUIRED, STORED, check


def corpus_fingerprint(train_docs, val_docs):
    """(sha256, count) of the docs a run trains and validates on, in split order."""
    return fingerprint(list(train_docs) + list(val_docs)), len(train_docs) + len(val_docs)


@dataclass(frozen=True)
class RunIdentity:
    """Which run a checkpoint is of (one run_id for a run and its resumes), on which
    documents: corpora.fingerprint of train + val in split order, and their count
    ("" and 0 in an older file)."""
    corpus: str = "names"
    run_id: str = ""
    corpus_sha256: str = ""
    corpus_docs: int = 0


def corpus_change(state, identity, train_docs, val_docs, corpus):
    """Why the docs, split by the checkpoint's seed, are not the ones it was trained on
    (by its fingerprint), in words; None if they are, or it has none: the batches, and
    so the run, would differ."""
    sha, count = corpus_fingerprint(train_docs, val_docs)
    if not identity.corpus_sha256 or sha == identity.corpus_sha256:
        return None
    if count != identity.corpus_docs:
        return _("corpus {corpus!r} has changed since the checkpoint was written ({then} documents "
                 "then, {now} now)").format(corpus=corpus, then=identity.corpus_docs, now=count)
    return _("corpus {corpus!r} split with the checkpoint's seed {seed} does not give the "
             "documents the run was trained on: it has as many ({now}), so their text changed, or "
             "the seed is not the run's").format(corpus=corpus, seed=state.seed, now=count)


CHECKPOINT_FORMAT, CHECKPOINT_VERSION = "microgpt-checkpoint", 1


def save_checkpoint(path, state, identity=RunIdentity()):
    """One .npz (no pickle): "param:<key>", "adam_m", "adam_v", "train_loss", "val_loss"
    (K, 2), and "meta", JSON: config, vocab, step, settings, identity."""
    check_state(state, _("cannot save checkpoint"))
    meta = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "config": asdict(state.cfg),
            "vocab": list(state.vocab), "step": state.step,
            **{name: getattr(state, name) for name in TRAINING_FIELDS}, **asdict(identity)}
    arrays = {f"param:{k}": a for k, a in state.params.items()}
    arrays.update(adam_m=state.m, adam_v=state.v,
                  train_loss=np.asarray(state.train_loss, dtype=np.float64),
                  val_loss=np.asarray(state.val_loss, dtype=np.float64).reshape(-1, 2),
                  meta=np.array(json.dumps(meta)))
    atomic_write(path, lambda f: np.savez(f, **arrays))


def load_run(path, max_gb=None):
    """The TrainState and RunIdentity in save_checkpoint's file; InputError if it is
    missing, corrupt or incompatible, or (by its headers) bigger than max_gb."""
    state, identity = read_npz(path, N_("checkpoint"),
                               lambda file, where: _load(file, where, max_gb))
    where = f"checkpoint {os.fsdecode(path)!r}"
    check_state(state, where)
    if not (isinstance(identity.corpus_sha256, str) and len(identity.corpus_sha256) in (0, 64)
            and isinstance(identity.run_id, str) and NON_NEGATIVE_INT.ok(identity.corpus_docs)):
        raise InputError("{where}: its corpus fingerprint or run id is malformed", where=where)
    state.val_loss = [(int(s), x) for s, x in state.val_loss]  # (whole: check_state made sure)
    return state, identity


def load_checkpoint(path, max_gb=None):
    """load_run's TrainState alone: the model, what sampling and the pages read."""
    return load_run(path, max_gb)[0]


def _load(file, where, max_gb):
    meta, cfg, vocab = read_meta(file, CHECKPOINT_FORMAT, CHECKPOINT_VERSION)
    step = meta.get("step")
    check_step(step, where)
    settings = {}
    for row in STORED:  # each by its rule; a setting the file predates takes its `before`
        if row.name not in meta and row.before is REQUIRED:
            raise InputError("its meta has no {name!r}", name=row.name)
        settings[row.name] = check(row.name, meta.get(row.name, row.before))
    # weights, Adam's moments, a train loss per step (a file of zeros compresses well: a
    # small file can claim a lot) and the objects of every parameter array
    need = 3 * 8 * n_params(cfg) + BYTES_PER_STEP * step + BYTES_PER_ARRAY * n_param_arrays(cfg)
    most, why = limit(max_gb)
    if need > most:
        raise InputError("it describes a model of {params:,} parameters trained {step:,} steps, "
                         "about {size} with its optimizer state and history; {why}",
                         params=n_params(cfg), step=step, size=gigabytes(need), why=why)
    count = n_param_arrays(cfg) + 5  # + adam_m, adam_v, train_loss, val_loss, meta
    headers = npz_headers(file, max_members=count + 16)
    if len(headers) < count:
        raise InputError("it holds {n} arrays; a checkpoint of its config (n_layer {n_layer}, norm "
                         "{norm}) holds {count}", n=len(headers), n_layer=cfg.n_layer,
                         norm=cfg.norm, count=count)
    P, dtype = n_params(cfg), settings["dtype"]
    expected = {f"param:{key}": (shape, dtype) for key, shape in param_shapes(cfg)}
    def val_shape(got):  # at most one val loss per step, and step 0's and the last's
        return (min(got[0], step + 2), 2) if len(got) == 2 else (step + 2, 2)
    expected.update(adam_m=((P,), dtype), adam_v=((P,), dtype), train_loss=((step,), np.float64),
                    val_loss=(val_shape, np.float64), meta=((), None))
    data = load_arrays(file, headers, expected)
    weights = {k[len("param:"):]: a for k, a in data.items() if k.startswith("param:")}
    params = pack_params(weights, cfg)
    identity = RunIdentity(settings.pop("corpus"), meta.get("run_id", ""),
                           meta.get("corpus_sha256", ""), meta.get("corpus_docs", 0))
    return TrainState(cfg, vocab, params, data["adam_m"], data["adam_v"], step, **settings,
                      train_loss=data["train_loss"].tolist(),
                      val_loss=[tuple(row) for row in data["val_loss"].tolist()]), identity


def save_run(folder, state, history=None, identity=RunIdentity()):
    """The checkpoint and the planetarium's history (if kept) as one unit: the history
    first, with its step, the checkpoint last. However a run stops, the history is at
    the checkpoint's step or ahead, never behind: a resume drops the later snapshots."""
    if history is not None:
        history.save(os.path.join(folder, HISTORY_NAME), state.train_loss, state.val_loss,
                     identity.run_id)
    save_checkpoint(os.path.join(folder, "checkpoint.npz"), state, identity)
