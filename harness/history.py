"""harness/history.py -- a run's snapshots for the planetarium (planetarium.py): how the stars move while it learns.

A run with --out keeps about 50 snapshots of its weights in OUT/history.npz, denser early (where the stars move
most), always the initial weights (step 0) and the last planned step. The run drives it:

    history = History(cfg, vocab, steps)                 # or History(..., previous=load_history(path)) on --resume
    if history.due(0): history.record(0, params)
    ... after each optimizer step (+ retraction):
    if history.due(step): history.record(step, params, drift)     # drift: what microgpt.retract returned
    ... whenever the run writes its checkpoint:
    history.save(os.path.join(out, HISTORY_NAME), state.train_loss, state.val_loss)

The file is an .npz without pickle (like run_files' checkpoints), written atomically:

    meta        JSON: format, version, config (GPTConfig), vocab (BOS = len(vocab)), steps (planned), count, dtype
                (of the run's weights; they are kept here as float64), scales (the names and sizes of the columns of
                `scales`), skipped (snapshots not kept because the weights were not finite), step (the run's
                step when it was written: the checkpoint it belongs to) and run_id (the run's, as in its
                checkpoint); files written before these two existed lack them
    step        (K,) int64      the optimizer steps done at each snapshot, increasing (0 = the initial weights)
    params      (K, P) float64  every weight, in model_config's flat layout (param_offsets: wte first, lm_head at
                                 offset (V + block_size) * C, ...)
    scales      (K, S) float64  sphere only: model_config.effective_scales at each snapshot, the columns alpha_A,
                                 alpha_M, s_qk, s_u, s_z (stored small, used large: these are the values the forward
                                 pass applies; s_z is the vMF concentration kappa of each output star)
    drift       (K, U) float64  sphere only: for each unit vector, its norm after the Adam step and before the
                                 retraction divided by it (1 = not pushed off the sphere), in the flat layout's
                                 order: wte rows, wpe rows, lm_head rows, then per layer wq, wk, wv rows, wo columns,
                                 fc1 rows, fc2 columns; NaN at step 0 (no Adam step came before it)
    train_loss  (N, 2) float64  (step, train loss); above MAX_CURVE steps, means over equal runs of steps
    val_loss    (M, 2) float64  (step, val loss); above MAX_CURVE points, evenly thinned

Its size: K * P * 8 bytes plus small change, about 1.9 MB for the default model (4,192 parameters, 50 snapshots).
For big models the number of snapshots shrinks so that the weights stay within BUDGET_BYTES (at least 2 are kept).
load_history reads it back, checking every array header against the config before anything is loaded, so a
corrupted, truncated or hostile file is an InputError with one clear line.
"""
import json
import math
import os
from dataclasses import asdict

import numpy as np

from harness.errors import InputError
from harness.memory import BYTES_PER_ARRAY, SNAPSHOT_BUDGET
from harness.run_files import atomic_write, check_arrays, check_npz_file, npz_headers, read_meta
from model_config import (
    SCALE_NAMES,
    effective_scales,
    layer_scales,
    n_param_arrays,
    n_params,
    param_offsets,
    param_shapes,
    unit_vector_count,
)
from settings import MAX_STEPS

HISTORY_NAME = "history.npz"
HISTORY_FORMAT, HISTORY_VERSION = "microgpt-history", 1
DEFAULT_COUNT = 50
MAX_SNAPSHOTS = 1000           # a history never keeps more (count is capped, and so is the loader)
BUDGET_BYTES = SNAPSHOT_BUDGET  # the snapshots' weights of one run: a big model gets fewer snapshots
MAX_CURVE = 2000               # points per loss curve in the file (a million steps are averaged down to this)
MAX_META_CHARS = 2**20         # a real meta is a few hundred characters (plus the vocabulary)
MAX_FILE_BYTES = 2**30         # load_history refuses bigger files before reading them


def snapshot_steps(steps, count=DEFAULT_COUNT):
    """The steps a run of `steps` optimizer steps keeps a snapshot of: every step if there are at most `count`,
    else `count` of them, always 0 and `steps`. Half lie on a geometric grid (1, 2, 3, 4, 6, 8, 10, 13, ...: the
    first steps move the stars most), the rest split the largest gaps left (so later steps are evenly spaced)."""
    if steps + 1 <= count:
        return list(range(steps + 1))
    chosen = {0, steps} | {int(round(s)) for s in np.geomspace(1, steps, max(1, count // 2))}
    while len(chosen) < count:
        s = sorted(chosen)
        gaps = np.diff(s)
        i = int(np.argmax(gaps))  # the first of the largest gaps
        chosen.add(s[i] + int(gaps[i]) // 2)
    return sorted(chosen)


def scale_sizes(cfg):
    """The length of each effective-scale vector, in SCALE_NAMES order (layers concatenated)."""
    per_layer = dict(layer_scales(cfg.n_embd))
    return {label: cfg.vocab_size if name == "sz" else cfg.n_layer * per_layer[name]
            for label, name in SCALE_NAMES.items()}


def unflatten(flat, cfg):
    """A params dict (key -> view of `flat`) in model_config's layout, e.g. for numpy_engine.forward_np."""
    return {key: flat[o:o + math.prod(shape)].reshape(shape) for key, (o, shape) in param_offsets(cfg)[0].items()}


def flat_scales(params, cfg):
    """model_config.effective_scales as one vector: alpha_A | alpha_M | s_qk | s_u | s_z."""
    eff = effective_scales(params, cfg)
    return np.concatenate([np.asarray(eff[label], dtype=np.float64) for label in SCALE_NAMES])


class History:
    """Snapshots of one training run for the planetarium.

    cfg: model_config.GPTConfig; vocab: the run's characters (BOS = len(vocab)); steps: the planned total;
    count: how many snapshots to aim for; previous: a History loaded from the run folder, to continue on --resume
    (its snapshots are kept; with the same planned total the schedule is the one it had, so a resumed run keeps
    the snapshots an uninterrupted one would; with a longer plan the snapshots still to come are evenly spaced).
    """

    def __init__(self, cfg, vocab, steps, count=DEFAULT_COUNT, previous=None):
        if len(vocab) + 1 != cfg.vocab_size:
            raise ValueError(f"vocab has {len(vocab)} characters; the config needs vocab_size - 1 = "
                             f"{cfg.vocab_size - 1}")
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not 0 < steps <= MAX_STEPS:
            raise ValueError(f"steps must be a positive integer up to 2**53, got {steps!r}")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or not 2 <= count <= MAX_SNAPSHOTS:
            raise ValueError(f"count must be an integer from 2 to {MAX_SNAPSHOTS}, got {count!r}")
        self.cfg, self.vocab, self.steps = cfg, list(vocab), int(steps)
        self.count = max(2, min(int(count), BUDGET_BYTES // (8 * n_params(cfg))))  # a big model: fewer snapshots
        self.dtype, self.skipped, self.saved_step, self.run_id = "float64", 0, None, ""
        self._steps, self._params, self._drift = [], [], []  # one entry per snapshot
        if previous is not None:
            if previous.cfg != cfg or previous.vocab != self.vocab:
                raise ValueError("the previous history is of another model (config or vocabulary differ)")
            self._steps = list(previous.step)
            self._params = list(previous.params)
            self._drift = list(previous.drift) if previous.drift is not None else [None] * len(self._steps)
            self.dtype, self.skipped = previous.dtype, previous.skipped
        self._due = self._plan(previous)

    def _plan(self, previous):
        if previous is None or not self._steps or previous.steps == self.steps:
            return set(snapshot_steps(self.steps, self.count))
        last = self._steps[-1]  # a new plan on --resume: the snapshots still to come split what is left evenly
        if last >= self.steps:
            return set()
        room = max(2, self.count - len(self._steps))
        return {int(round(s)) for s in np.linspace(last, self.steps, room + 1)[1:]} | {self.steps}

    def due(self, step):
        """Should the weights after `step` optimizer steps be recorded (0 = the initial weights)?"""
        return step in self._due

    def record(self, step, params, drift=None):
        """Keep a copy of the weights after `step` optimizer steps (params: key -> array, model_config's keys), and
        in sphere mode what microgpt.retract returned at this step (None at step 0). A step at or before the last
        one recorded replaces the snapshots from there on (the run went back to a checkpoint). Weights that are not
        finite (a diverging run) are not kept: no page could draw them."""
        flat = np.concatenate([np.asarray(params[key], dtype=np.float64).ravel() for key, _ in param_shapes(self.cfg)])
        if self.cfg.norm == "sphere":
            if drift is None:
                d = np.full(unit_vector_count(self.cfg), np.nan)
            else:
                d = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in drift])
                if d.size != unit_vector_count(self.cfg):
                    raise ValueError(f"drift has {d.size} norms; this model has {unit_vector_count(self.cfg)} unit "
                                     "vectors (pass what microgpt.retract returned)")
        elif drift is not None:
            raise ValueError("drift is for sphere mode (rmsnorm has no retraction)")
        else:
            d = None
        if not np.isfinite(flat).all():
            self.skipped += 1
            return
        self.dtype = np.asarray(params["wte"]).dtype.name
        while self._steps and self._steps[-1] >= step:
            self._steps.pop(), self._params.pop(), self._drift.pop()
        self._steps.append(int(step))
        self._params.append(flat)
        self._drift.append(d)

    # ----------------------------------------------------------------------- what was recorded, as arrays
    @property
    def step(self):
        return np.array(self._steps, dtype=np.int64)

    @property
    def params(self):
        """(K, P): every snapshot's weights in the flat layout."""
        return np.array(self._params, dtype=np.float64).reshape(len(self._params), n_params(self.cfg))

    @property
    def drift(self):
        """(K, U) in sphere mode (NaN rows where no Adam step preceded the snapshot), None for rmsnorm."""
        if self.cfg.norm != "sphere":
            return None
        return np.array(self._drift, dtype=np.float64).reshape(len(self._drift), unit_vector_count(self.cfg))

    @property
    def scales(self):
        """(K, S) effective scales (alpha_A | alpha_M | s_qk | s_u | s_z) in sphere mode, None for rmsnorm."""
        if self.cfg.norm != "sphere":
            return None
        S = sum(scale_sizes(self.cfg).values())
        return np.array([flat_scales(unflatten(p, self.cfg), self.cfg) for p in self._params]).reshape(-1, S)

    def params_at(self, k):
        """Snapshot k's weights as a params dict (views of a fresh flat float64 buffer)."""
        return unflatten(np.array(self._params[k], dtype=np.float64), self.cfg)

    def __len__(self):
        return len(self._steps)

    # ----------------------------------------------------------------------- the file
    def rewind(self, step):
        """Drop the snapshots after `step` (a resume from the checkpoint of that step re-records them)."""
        while self._steps and self._steps[-1] > step:
            self._steps.pop(), self._params.pop(), self._drift.pop()

    def save(self, path, train_loss, val_loss, run_id=""):
        """Write the history to `path` atomically (temp file + rename): no reader ever sees half a file.
        train_loss: one float per optimizer step (so the run's step is its length: the checkpoint this history
        belongs to); val_loss: [(step, val loss), ...]; both curves are kept bounded. run_id: the run's."""
        meta = {"format": HISTORY_FORMAT, "version": HISTORY_VERSION, "config": asdict(self.cfg),
                "vocab": self.vocab, "steps": self.steps, "count": self.count, "dtype": self.dtype,
                "skipped": self.skipped, "scales": scale_sizes(self.cfg) if self.cfg.norm == "sphere" else {},
                "step": len(train_loss), "run_id": run_id}
        arrays = {"meta": np.array(json.dumps(meta, ensure_ascii=False)), "step": self.step, "params": self.params,
                  "train_loss": train_curve(train_loss), "val_loss": val_curve(val_loss)}
        if self.cfg.norm == "sphere":
            arrays.update(scales=self.scales, drift=self.drift)
        atomic_write(path, lambda f: np.savez(f, **arrays))


def train_curve(train_loss):
    """(N, 2) (step, loss) from one loss per step (step i + 1 for entry i), finite ones only; more than MAX_CURVE
    steps are averaged in MAX_CURVE equal runs (step and loss both the run's mean)."""
    losses = np.asarray(train_loss, dtype=np.float64).reshape(-1)
    steps = np.arange(1, losses.size + 1, dtype=np.float64)
    ok = np.isfinite(losses)
    steps, losses = steps[ok], losses[ok]
    if losses.size > MAX_CURVE:
        edges = np.linspace(0, losses.size, MAX_CURVE + 1).astype(np.int64)
        counts = np.diff(edges)
        steps = np.add.reduceat(steps, edges[:-1]) / counts
        losses = np.add.reduceat(losses, edges[:-1]) / counts
    return np.stack([steps, losses], axis=1).reshape(-1, 2)


def val_curve(val_loss):
    """(M, 2) (step, val loss), finite ones only; more than MAX_CURVE points are thinned evenly (first and last
    kept)."""
    points = np.asarray(val_loss, dtype=np.float64).reshape(-1, 2)
    points = points[np.isfinite(points).all(axis=1)]
    if len(points) > MAX_CURVE:
        points = points[np.unique(np.linspace(0, len(points) - 1, MAX_CURVE).round().astype(np.int64))]
    return points


# --------------------------------------------------------------------------- reading it back

def load_history(path, max_bytes=MAX_FILE_BYTES):
    """A History from the file History.save wrote; InputError (one line) if it is missing, not a history, corrupted,
    truncated, too big, or holds values no run could have written (weights off the sphere, steps out of order, ...).
    Every array's header is checked against the config in its meta before anything but the meta is read."""
    path = str(path)
    where = f"history {path!r}"
    try:
        check_npz_file(path, "history")
        size = os.path.getsize(path)
        if size > max_bytes:
            raise InputError(f"{where} is {size / 2**20:,.0f} MiB; the limit is {max_bytes / 2**20:,.0f} MiB")
        with open(path, "rb") as file:  # one open file: a run replacing it meanwhile cannot mix two versions
            return _load(file, where, max_bytes)
    except OSError as e:
        raise InputError(f"cannot read {where}: {e.strerror or e}") from None


def _load(file, where, max_bytes):
    try:
        meta, cfg, vocab = read_meta(file, HISTORY_FORMAT, HISTORY_VERSION, MAX_META_CHARS)
        headers = npz_headers(file, max_members=16)  # (a history has at most 7 arrays)
        steps, count = meta.get("steps"), meta.get("count")
        saved = meta.get("step", steps)
        for name, value, least in (("steps", steps, 1), ("count", count, 2), ("skipped", meta.get("skipped"), 0),
                                   ("step", saved, 0)):
            if type(value) is not int or value < least:
                raise InputError(f"its {name} is not an integer >= {least}")
        if steps > MAX_STEPS:  # (the same bound as a run's --steps: 10**30 would break the snapshot plan)
            raise InputError("its steps is beyond 2**53, the most a run may plan")
        if meta.get("dtype") not in ("float64", "float32") or not isinstance(meta.get("run_id", ""), str):
            raise InputError("its dtype or run_id is malformed")
        P, K = n_params(cfg), headers.get("params", ((0,),))[0][0]
        if not 1 <= K <= MAX_SNAPSHOTS:
            raise InputError(f"it has {K} snapshots; a history has 1 to {MAX_SNAPSHOTS}")
        # the weights, and the Python objects of every parameter array of every snapshot (the checks and the page
        # take the snapshots apart array by array: n_layer 10^6 is millions of them, however narrow the model)
        need = 8 * K * P + K * n_param_arrays(cfg) * BYTES_PER_ARRAY
        if need > max_bytes:
            raise InputError(f"its {K} snapshots of {P:,} weights in {n_param_arrays(cfg):,} arrays would take "
                             f"{need / 2**20:,.0f} MiB; the limit is {max_bytes / 2**20:,.0f} MiB")
        expected = {"meta": ((), None), "step": ((K,), np.int64), "params": ((K, P), np.float64),
                    "train_loss": (curve_shape, np.float64), "val_loss": (curve_shape, np.float64)}
        if cfg.norm == "sphere":
            expected.update(scales=((K, sum(scale_sizes(cfg).values())), np.float64),
                            drift=((K, unit_vector_count(cfg)), np.float64))
        check_arrays(headers, expected)
        with np.load(file, allow_pickle=False) as z:
            data = {name: z[name] for name in expected if name != "meta"}
        count = max(2, min(count, MAX_SNAPSHOTS))
        due = set(snapshot_steps(steps, count))  # (in here: any failure is one line)
    except InputError as e:
        raise InputError(f"{where} is not a valid microgpt history: {e}") from None
    except Exception as e:  # zip, npy header, truncation, JSON, a GPTConfig refusing its values: all "not valid"
        raise InputError(f"{where} is corrupt or not a microgpt history ({type(e).__name__}: {e})") from None
    _check_values(data, cfg, steps, where)
    h = History.__new__(History)
    h.cfg, h.vocab, h.steps, h.count = cfg, vocab, steps, count
    h.dtype, h.skipped, h.saved_step, h.run_id = meta["dtype"], meta["skipped"], saved, meta.get("run_id", "")
    h._steps, h._params = data["step"].tolist(), list(data["params"])
    h._drift = list(data["drift"]) if cfg.norm == "sphere" else [None] * K
    h._due = due
    h.train_loss, h.val_loss = data["train_loss"], data["val_loss"]
    return h


def curve_shape(got):
    """A loss curve is (N, 2) with N <= MAX_CURVE: the shape a file's curve should have, given its own."""
    return got if len(got) == 2 and got[1] == 2 and got[0] <= MAX_CURVE else (MAX_CURVE, 2)


def _check_values(data, cfg, steps, where):
    """What History.save cannot have written: InputError naming it."""
    def bad(message):
        return InputError(f"{where} is not a valid microgpt history: {message}")

    step = data["step"]
    if step.min() < 0 or step.max() > steps or (np.diff(step) <= 0).any():
        raise bad(f"its snapshot steps are not increasing steps from 0 to its planned {steps}")
    params = data["params"]
    if not np.isfinite(params).all():
        raise bad("its weights are not all finite")
    for name in ("train_loss", "val_loss"):
        if not np.isfinite(data[name]).all():
            raise bad(f"its {name} is not all finite")
    if cfg.norm != "sphere":
        return
    offsets = param_offsets(cfg)[0]
    for key in ("wte", "lm_head"):  # the stars: unit rows (float32 runs are unit to ~1e-7)
        o, (rows, cols) = offsets[key]
        norms = np.sqrt((params[:, o:o + rows * cols].reshape(-1, rows, cols) ** 2).sum(axis=2))
        if np.abs(norms - 1).max() > 1e-6:
            raise bad(f"its {key} rows are not unit vectors (max | |row| - 1 | = {np.abs(norms - 1).max():.2g})")
    scales = np.array([flat_scales(unflatten(p, cfg), cfg) for p in params])
    if not np.allclose(data["scales"], scales, rtol=1e-12, atol=0):
        raise bad("its effective scales do not match its weights")
    drift = data["drift"]
    if ((drift <= 0) | np.isinf(drift)).any():
        raise bad("its drift (norms before the retraction) has values that are not positive and finite")
