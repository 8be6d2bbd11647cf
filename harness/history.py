"""harness/history.py -- the snapshots a run keeps for the planetarium's sky: about 50
of its weights in OUT/history.npz, denser early, always step 0 and the last planned
step. docs/planetarium.md lists the file's arrays; load_history checks every header
against the config before anything is loaded."""
import json
import os
from dataclasses import asdict

import numpy as np

from harness.errors import InputError
from harness.i18n import N_
from harness.memory import BYTES_PER_ARRAY, SNAPSHOT_BUDGET
from harness.run_files import atomic_write, load_arrays, npz_headers, read_meta, read_npz
from model_config import (
    effective_scales,
    n_param_arrays,
    n_params,
    off_sphere,
    param_shapes,
    param_views,
    scale_sizes,
    unit_vector_count,
)
from settings import MAX_STEPS

HISTORY_NAME = "history.npz"
HISTORY_FORMAT, HISTORY_VERSION = "microgpt-history", 1
DEFAULT_COUNT = 50
MAX_SNAPSHOTS = 1000            # a history never keeps more (count is capped, and so is the loader)
MAX_CURVE = 2000                # points per loss curve in the file (a million steps averaged down)
MAX_FILE_BYTES = 2**30          # load_history refuses bigger files before reading them


def snapshot_steps(steps, count=DEFAULT_COUNT):
    """The steps a run of `steps` steps keeps: all, or `count` with 0 and `steps`; half
    on a geometric grid (the first steps move the stars most), the rest split the
    largest gaps."""
    if steps + 1 <= count:
        return list(range(steps + 1))
    chosen = {0, steps} | {int(round(s)) for s in np.geomspace(1, steps, max(1, count // 2))}
    while len(chosen) < count:
        s = sorted(chosen)
        gaps = np.diff(s)
        i = int(np.argmax(gaps))  # the first of the largest gaps
        chosen.add(s[i] + int(gaps[i]) // 2)
    return sorted(chosen)


class History:
    """Snapshots of one training run. previous: its History so far, on --resume (a
    longer plan spaces the snapshots to come evenly)."""

    def __init__(self, cfg, vocab, steps, count=DEFAULT_COUNT, previous=None):
        self.cfg, self.vocab, self.steps = cfg, list(vocab), int(steps)
        self.count = max(2, min(count, MAX_SNAPSHOTS, SNAPSHOT_BUDGET // (8 * n_params(cfg))))
        self.dtype, self.skipped, self.saved_step, self.run_id = "float64", 0, None, ""
        self._steps, self._params, self._drift = [], [], []  # one entry per snapshot
        if previous is not None:
            if (previous.cfg, previous.vocab) != (cfg, self.vocab):
                raise ValueError("the previous history is of another model (other config or vocab)")
            self._steps, self._params = list(previous.step), list(previous.params)
            self._drift = list(previous._drift)
            self.dtype, self.skipped = previous.dtype, previous.skipped
        self._due = set(snapshot_steps(self.steps, self.count))
        if previous is not None and self._steps and previous.steps != self.steps:  # a longer plan
            last, room = self._steps[-1], max(2, self.count - len(self._steps))
            self._due = {int(round(s)) for s in np.linspace(last, self.steps, room + 1)[1:]}
            self._due.add(self.steps)  # the snapshots still to come split what is left evenly

    def due(self, step):
        """Are the weights after `step` steps recorded (0: the initial weights)?"""
        return step in self._due

    def record(self, step, params, drift=None):
        """A copy of the weights after `step` steps (sphere: and retract's drift),
        replacing any snapshot from `step` on; weights not finite are not kept."""
        flat = np.concatenate([np.asarray(params[k], dtype=np.float64).ravel()
                               for k, _ in param_shapes(self.cfg)])
        if not np.isfinite(flat).all():
            self.skipped += 1
            return
        if self.cfg.norm == "sphere":
            drift = np.full(unit_vector_count(self.cfg), np.nan) if drift is None else \
                np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in drift])
        self.dtype = np.asarray(params["wte"]).dtype.name
        self.rewind(step - 1)
        self._steps.append(int(step)), self._params.append(flat), self._drift.append(drift)

    def rewind(self, step):
        """Drop the snapshots after `step` (a resume from there records them again)."""
        while self._steps and self._steps[-1] > step:
            self._steps.pop(), self._params.pop(), self._drift.pop()

    @property
    def step(self):
        return np.array(self._steps, dtype=np.int64)

    @property
    def params(self):
        """(K, P): every snapshot's weights in the flat layout."""
        return np.array(self._params, np.float64).reshape(len(self._params), n_params(self.cfg))

    @property
    def drift(self):
        """(K, U) in sphere mode (NaN where no Adam step came before); rmsnorm: None."""
        U, sphere = unit_vector_count(self.cfg), self.cfg.norm == "sphere"
        return np.array(self._drift, np.float64).reshape(len(self), U) if sphere else None

    @property
    def scales(self):
        """(K, S) effective scales in sphere mode, each snapshot's alpha_A | alpha_M |
        s_qk | s_u | s_z (effective_scales, in its order); rmsnorm: None."""
        if self.cfg.norm == "sphere":
            scales = [np.concatenate(list(effective_scales(self.params_at(k), self.cfg).values()))
                      for k in range(len(self))]
            return np.array(scales).reshape(len(self), sum(scale_sizes(self.cfg).values()))
        return None

    def params_at(self, k):
        """Snapshot k's weights as a params dict (views of a fresh float64 buffer)."""
        return param_views(np.array(self._params[k], dtype=np.float64), self.cfg)

    def __len__(self):
        return len(self._steps)

    def save(self, path, train_loss, val_loss, run_id=""):
        """Write the history to `path` atomically. train_loss: one float per step (its
        length is the checkpoint's step); val_loss: [(step, val loss), ...]."""
        sphere = self.cfg.norm == "sphere"
        meta = {"format": HISTORY_FORMAT, "version": HISTORY_VERSION, "config": asdict(self.cfg),
                "vocab": self.vocab, "steps": self.steps, "count": self.count, "dtype": self.dtype,
                "skipped": self.skipped, "scales": scale_sizes(self.cfg) if sphere else {},
                "step": len(train_loss), "run_id": run_id}
        arrays = {"meta": np.array(json.dumps(meta, ensure_ascii=False)), "step": self.step,
                  "params": self.params, "train_loss": train_curve(train_loss),
                  "val_loss": val_curve(val_loss)}
        if sphere:
            arrays.update(scales=self.scales, drift=self.drift)
        atomic_write(path, lambda f: np.savez(f, **arrays))


def thin_curve(curve, most):
    """At most `most` points of an (N, 2) loss curve: means over equal runs."""
    if len(curve) <= most:
        return curve
    edges = np.linspace(0, len(curve), most + 1).astype(np.int64)
    return np.add.reduceat(curve, edges[:-1], axis=0) / np.diff(edges)[:, None]


def train_curve(train_loss):
    """(N, 2) (step, loss) from one loss per step, finite ones only, N <= MAX_CURVE."""
    losses = np.asarray(train_loss, dtype=np.float64).reshape(-1)
    curve = np.stack([np.arange(1, losses.size + 1, dtype=np.float64), losses], axis=1)
    return thin_curve(curve[np.isfinite(losses)], MAX_CURVE)


def val_curve(val_loss):
    """(M, 2) (step, val loss), finite ones; over MAX_CURVE points thinned evenly."""
    points = np.asarray(val_loss, dtype=np.float64).reshape(-1, 2)
    points = points[np.isfinite(points).all(axis=1)]
    if len(points) > MAX_CURVE:
        points = points[np.unique(np.linspace(0, len(points) - 1, MAX_CURVE).round().astype(int))]
    return points


def curve_shape(got):
    """A loss curve's expected shape, given the file's: (N, 2) with N <= MAX_CURVE."""
    return got if len(got) == 2 and got[1] == 2 and got[0] <= MAX_CURVE else (MAX_CURVE, 2)


def load_history(path, max_bytes=MAX_FILE_BYTES):
    """A History from History.save's file; InputError for what no run writes."""
    return read_npz(path, N_("history"), lambda file, where: _load(file, max_bytes))


def _load(file, max_bytes):
    """The History in an open history file, every claim checked before it is loaded."""
    size = os.fstat(file.fileno()).st_size
    if size > max_bytes:
        raise InputError("it is {mib:,.0f} MiB; the limit is {most:,.0f} MiB", mib=size / 2**20,
                         most=max_bytes / 2**20)
    meta, cfg, vocab = read_meta(file, HISTORY_FORMAT, HISTORY_VERSION)
    headers = npz_headers(file, max_members=16)  # (a history has at most 7 arrays)
    steps, count, saved = meta.get("steps"), meta.get("count"), meta.get("step", meta.get("steps"))
    for name, value, least in (("steps", steps, 1), ("count", count, 2),
                               ("skipped", meta.get("skipped"), 0), ("step", saved, 0)):
        if type(value) is not int or value < least:
            raise InputError("its {name} is not an integer >= {least}", name=name, least=least)
    if steps > MAX_STEPS:  # (--steps has the same bound: 10**30 would break the snapshot plan)
        raise InputError("its steps is beyond 2**53, the most a run may plan")
    if meta.get("dtype") not in ("float64", "float32") or type(meta.get("run_id", "")) is not str:
        raise InputError("its dtype or run_id is malformed")
    P, K, A = n_params(cfg), headers.get("params", ((0,),))[0][0], n_param_arrays(cfg)
    if not 1 <= K <= MAX_SNAPSHOTS:
        raise InputError("it has {k} snapshots; a history has 1 to {most}", k=K, most=MAX_SNAPSHOTS)
    # the weights, and the objects of every parameter array of every snapshot (the page
    # takes the snapshots apart array by array: n_layer 10^6 is millions of them,
    # however narrow the model)
    need = 8 * K * P + K * A * BYTES_PER_ARRAY
    if need > max_bytes:
        raise InputError("its {k} snapshots of {p:,} weights in {a:,} arrays would take {mib:,.0f} "
                         "MiB; the limit is {most:,.0f} MiB", k=K, p=P, a=A, mib=need / 2**20,
                         most=max_bytes / 2**20)
    expected = {"meta": ((), None), "step": ((K,), np.int64), "params": ((K, P), np.float64),
                "train_loss": (curve_shape, np.float64), "val_loss": (curve_shape, np.float64)}
    if cfg.norm == "sphere":
        expected.update(scales=((K, sum(scale_sizes(cfg).values())), np.float64),
                        drift=((K, unit_vector_count(cfg)), np.float64))
    data = load_arrays(file, headers, expected)
    h = History(cfg, vocab, steps, count)
    h.dtype, h.skipped, h.saved_step = meta["dtype"], meta["skipped"], saved
    h.run_id, h._steps = meta.get("run_id", ""), data["step"].tolist()
    h._params, h.train_loss, h.val_loss = list(data["params"]), data["train_loss"], data["val_loss"]
    h._drift = list(data["drift"]) if cfg.norm == "sphere" else [None] * K
    _check_values(h, data)
    h.train_loss, h.val_loss = (in_order(curve, steps) for curve in (h.train_loss, h.val_loss))
    return h


def in_order(curve, planned):
    """The points of a (step, loss) curve a run can have made: steps from 0 to the
    planned ones, increasing (a crafted file's others are dropped, not drawn)."""
    keep, last = [], -1.0
    for i, step in enumerate(curve[:, 0]):
        if last < step <= planned:
            keep.append(i)
            last = step
    return curve[keep].reshape(-1, 2)


def _check_values(h, data):
    """InputError for what History.save cannot have written."""
    step = data["step"]
    if step.min() < 0 or step.max() > h.steps or (np.diff(step) <= 0).any():
        raise InputError("its snapshot steps are not increasing from 0 to its planned {steps}",
                         steps=h.steps)
    for name in ("params", "train_loss", "val_loss"):
        if not np.isfinite(data[name]).all():
            raise InputError("its {name} is not all finite",
                             name="weights" if name == "params" else name)
    if h.cfg.norm != "sphere":
        return
    off = max(off_sphere(h.params_at(k), h.cfg) for k in range(len(h)))  # (float32: unit to ~1e-7)
    if not off <= 1e-6:
        raise InputError("its weights are not on the sphere (max | |v| - 1 | = {off:.2g})", off=off)
    if not np.allclose(data["scales"], h.scales, rtol=1e-12, atol=0):
        raise InputError("its effective scales do not match its weights")
    if ((data["drift"] <= 0) | np.isinf(data["drift"])).any():
        raise InputError("its drift (norms before the retraction) is not all positive and finite")
