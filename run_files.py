"""run_files.py -- what a training run keeps and writes, so that it can stop safely and continue exactly.

    TrainState        everything a run needs to continue where it stopped (weights, Adam moments, step, history)
    DeferSigint       the first Ctrl-C lets the step in progress finish, so the state stays consistent
    save_checkpoint   one .npz file without pickle (arrays + a JSON "meta" entry), written atomically
    load_checkpoint   the same file back, checked: a damaged or foreign file is an InputError, not a traceback
    write_json        metrics.json;  plot_losses: loss.png (train and val loss beside the baselines)
    atomic_write      temp file in the same folder, then rename: a reader never sees half a file

The reference microgpt keeps everything in memory and ends; these are what a learner expects from a real tool
(Ctrl-C, --resume, --out). microgpt.py uses them around its training loop; chapter 22 has no counterpart.
"""
import io
import json
import os
import signal
import tempfile
import threading
import zipfile
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from errors import InputError
from model_config import GPTConfig, flat_buffer, pack_params


@dataclass
class TrainState:
    """Everything a run needs to continue exactly where it stopped (and what it has measured so far)."""
    cfg: GPTConfig
    vocab: list
    params: dict
    m: np.ndarray                  # Adam first moment, flat layout
    v: np.ndarray                  # Adam second moment, flat layout
    step: int = 0                  # optimizer steps done
    steps: int = 1000              # planned total (the lr decays to 0 at this step)
    batch_size: int = 1
    lr: float = 0.01
    seed: int = 42
    engine: str = "value"
    riemannian: bool = False
    corpus: str = ""
    eval_every: int = 100          # val loss every eval_every steps (and at step 0 and the end)
    train_loss: list = field(default_factory=list)   # one per step
    val_loss: list = field(default_factory=list)     # [(step, val loss), ...]
    ms_per_step: float = 0.0       # mean wall time of the training steps of the last train() call
    interrupted: bool = False      # stopped by Ctrl-C (or a KeyboardInterrupt from the progress callback)
    error: str = ""                # non-empty if a step produced a NaN/inf loss (params are the last good ones)


class DeferSigint:
    """First Ctrl-C only sets a flag, so the step in progress finishes and the state stays consistent."""

    def __init__(self):
        self.hit = False
        self.old = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGINT, self._handler)
        return self

    def _handler(self, signum, frame):
        self.hit = True
        signal.signal(signal.SIGINT, self.old)  # a second Ctrl-C interrupts immediately

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
        return False


CHECKPOINT_FORMAT, CHECKPOINT_VERSION = "microgpt-checkpoint", 1


def atomic_write(path, write):
    """write(f) (f a binary file) into a temp file in the same directory, then os.replace: readers never see
    half a file, and an existing file is only replaced by a complete new one."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_checkpoint(path, state):
    """One .npz (no pickle): arrays "param:<key>", "adam_m", "adam_v", "train_loss", "val_loss" (K, 2),
    and "meta", a JSON string: format, version, config, vocab, step, steps, batch_size, lr, seed,
    engine, riemannian, corpus, eval_every.
    """
    meta = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "config": asdict(state.cfg),
            "vocab": list(state.vocab), "step": state.step, "steps": state.steps, "batch_size": state.batch_size,
            "lr": state.lr, "seed": state.seed, "engine": state.engine, "riemannian": state.riemannian,
            "corpus": state.corpus, "eval_every": state.eval_every}
    arrays = {f"param:{k}": a for k, a in state.params.items()}
    arrays.update(adam_m=state.m, adam_v=state.v, train_loss=np.asarray(state.train_loss, dtype=np.float64),
                  val_loss=np.asarray(state.val_loss, dtype=np.float64).reshape(-1, 2), meta=np.array(json.dumps(meta)))
    atomic_write(path, lambda f: np.savez(f, **arrays))


def load_checkpoint(path):
    """A TrainState from save_checkpoint's file; InputError if it is missing, corrupt or incompatible."""
    if not os.path.exists(path):
        raise InputError(f"checkpoint {path!r} not found")
    if not os.path.isfile(path):
        raise InputError(f"checkpoint {path!r} is not a file")
    if not zipfile.is_zipfile(path):  # else np.load would guess at a pickle and say so, which misleads
        raise InputError(f"checkpoint {path!r} is corrupt or not a microgpt checkpoint (not a .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except Exception as e:  # zip, npy header, truncation, pickle refusal: all mean "not a valid checkpoint"
        raise InputError(f"checkpoint {path!r} is corrupt or not a microgpt checkpoint ({type(e).__name__}: {e})"
                         ) from None
    try:
        meta = json.loads(str(data["meta"]))
        if meta.get("format") != CHECKPOINT_FORMAT or meta.get("version") != CHECKPOINT_VERSION:
            raise InputError(f"checkpoint {path!r} has format {meta.get('format')!r} version {meta.get('version')!r}; "
                             f"this microgpt reads {CHECKPOINT_FORMAT!r} version {CHECKPOINT_VERSION}")
        names = {f.name for f in fields(GPTConfig)}
        cfg = GPTConfig(**{k: v for k, v in meta["config"].items() if k in names})
        vocab = list(meta["vocab"])
        if len(vocab) + 1 != cfg.vocab_size or not all(isinstance(c, str) and len(c) == 1 for c in vocab):
            raise InputError(f"checkpoint {path!r}: vocabulary does not match vocab_size {cfg.vocab_size}")
        params = pack_params({k[len("param:"):]: a for k, a in data.items() if k.startswith("param:")}, cfg)
        flat = flat_buffer(params)
        m, v = data["adam_m"].astype(np.float64), data["adam_v"].astype(np.float64)
        if m.shape != flat.shape or v.shape != flat.shape:
            raise InputError(f"checkpoint {path!r}: optimizer state has the wrong size")
        if not (np.isfinite(flat).all() and np.isfinite(m).all() and np.isfinite(v).all()):
            raise InputError(f"checkpoint {path!r} contains non-finite weights or optimizer state")
        state = TrainState(cfg, vocab, params, m, v, int(meta["step"]), int(meta["steps"]), int(meta["batch_size"]),
                           float(meta["lr"]), int(meta["seed"]), str(meta["engine"]), bool(meta["riemannian"]),
                           str(meta["corpus"]), int(meta["eval_every"]), data["train_loss"].tolist(),
                           [(int(s), float(x)) for s, x in data["val_loss"].reshape(-1, 2)])
    except InputError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputError(f"checkpoint {path!r} is incompatible or incomplete ({type(e).__name__}: {e})") from None
    if len(state.train_loss) != state.step:
        raise InputError(f"checkpoint {path!r}: loss history ({len(state.train_loss)} entries) "
                         f"does not match step {state.step}")
    return state


def write_json(path, obj):
    """obj as indented JSON (UTF-8), written atomically."""
    atomic_write(path, lambda f: f.write((json.dumps(obj, indent=2) + "\n").encode("utf-8")))


def plot_losses(path, state, base, title):
    """Loss curve PNG: train loss (raw and smoothed), val loss, and the baselines as horizontal lines."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    steps = np.arange(1, len(state.train_loss) + 1)
    ax.plot(steps, state.train_loss, color="tab:blue", alpha=0.25, lw=0.8, label="train loss (per step)")
    if len(steps) >= 2:
        w = max(1, min(50, len(steps) // 10))
        smooth = np.convolve(state.train_loss, np.ones(w) / w, mode="valid")
        ax.plot(steps[w - 1:], smooth, color="tab:blue", lw=1.5, label=f"train loss ({w}-step mean)")
    if state.val_loss:
        vs, vl = zip(*state.val_loss)
        ax.plot(vs, vl, "o-", color="tab:orange", ms=3, label="val loss")
    for (name, value), color in zip(base.items(), ("gray", "tab:green", "tab:red")):
        ax.axhline(value, ls="--", lw=1, color=color, label=f"{name} baseline ({value:.3f})")
    ax.set(title=title, xlabel="training step", ylabel="loss (mean NLL, nats per token)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write(path, lambda f: f.write(buf.getvalue()))


def prepare_out(out):
    """Create --out and check that files can be written into it, before any training time is spent."""
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise InputError(f"--out {out!r} is not a writable directory ({e.strerror or e})") from None
