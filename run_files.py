"""run_files.py -- what a training run keeps and writes, so that it can stop safely and continue exactly.

    TrainState        everything a run needs to continue where it stopped (weights, Adam moments, step, history)
    check_setting     the one rule per training setting, for a command-line flag and a checkpoint's meta alike
    DeferSigint       the first Ctrl-C lets the step in progress finish, so the state stays consistent
    save_checkpoint   one .npz file without pickle (arrays + a JSON "meta" entry), written atomically
    load_checkpoint   the same file back, checked like the flags: array headers against the config's shapes
                      before anything is loaded, every setting against its rule; a bad file is an InputError
    RunLock           a run holds its --out folder (a lock file with its pid) until it ends
    claim_run_folder  Ctrl-C without --out: the next free out/run-N, taken atomically (mkdir is exclusive)
    write_json, plot_losses, atomic_write   metrics.json, loss.png; temp file + rename, so no half files

The reference microgpt keeps everything in memory and ends; these are what a learner expects from a real tool
(Ctrl-C, --resume, --out). microgpt.py uses them around its training loop; chapter 22 has no counterpart.
"""
import datetime
import io
import json
import math
import os
import signal
import socket
import tempfile
import threading
import zipfile
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from corpora import fingerprint
from errors import InputError, WriteError
from model_config import MAX_MEMORY_GB, GPTConfig, check_dtype, flat_buffer, n_params, pack_params, param_shapes

try:  # POSIX: an advisory lock the kernel releases when the process ends, however it ends (kill -9 too)
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt


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
    corpus_sha256: str = ""        # corpora.fingerprint of train + val docs: a resume checks they are unchanged
    corpus_docs: int = 0           # how many docs that was (for the message when they changed)
    train_loss: list = field(default_factory=list)   # one per step
    val_loss: list = field(default_factory=list)     # [(step, val loss), ...]
    ms_per_step: float = 0.0       # mean wall time of the training steps of the last train() call
    interrupted: bool = False      # stopped by Ctrl-C (or a KeyboardInterrupt from the progress callback)
    error: str = ""                # why training diverged, if it did (params are the last good ones)


# The rule for each setting of a run, shared by the command line (--lr, ...) and a checkpoint's meta.
POSITIVE_INTS = ("steps", "batch_size", "eval_every", "n_embd", "n_head", "n_layer", "block_size", "num_samples")
NON_NEGATIVE_INTS = ("seed", "step")
POSITIVE_NUMBERS = ("lr", "alpha_init", "sz_init", "temperature")
CHOICES = {"engine": ("value", "numpy"), "norm": ("rmsnorm", "sphere")}


def check_setting(name, value, label):
    """InputError "{label} must be ..., got {value}" unless value obeys the rule for setting `name`."""
    integer = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if name in POSITIVE_INTS and not (integer and value > 0):
        raise InputError(f"{label} must be a positive integer, got {value!r}")
    if name in NON_NEGATIVE_INTS and not (integer and value >= 0):
        raise InputError(f"{label} must be a non-negative integer, got {value!r}")
    if name in POSITIVE_NUMBERS and not (isinstance(value, (int, float)) and not isinstance(value, bool)
                                         and math.isfinite(value) and value > 0):
        raise InputError(f"{label} must be a positive number, got {value!r}")
    if name in CHOICES and value not in CHOICES[name]:
        raise InputError(f"{label} must be one of {', '.join(map(repr, CHOICES[name]))}, got {value!r}")
    if name == "riemannian" and not isinstance(value, bool):
        raise InputError(f"{label} must be true or false, got {value!r}")
    if name == "corpus" and not isinstance(value, str):
        raise InputError(f"{label} must be a corpus name or path, got {value!r}")
    return value


def check_state(state, where):
    """Every setting of a TrainState (e.g. just read from a checkpoint) obeys the flags' rules."""
    for name in ("step", "steps", "batch_size", "lr", "seed", "engine", "riemannian", "corpus", "eval_every"):
        check_setting(name, getattr(state, name), f"{where}: {name}")
    if state.step > state.steps:
        raise InputError(f"{where}: step {state.step} is beyond the planned steps {state.steps}")
    if state.riemannian and state.cfg.norm != "sphere":
        raise InputError(f"{where}: riemannian is true but norm is {state.cfg.norm!r} (riemannian gradients need "
                         "norm 'sphere': there is no sphere to be tangent to)")


def corpus_fingerprint(train_docs, val_docs):
    """(sha256, count) of the docs a run trains and validates on, in split order."""
    return fingerprint(list(train_docs) + list(val_docs)), len(train_docs) + len(val_docs)


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


class DeferSigint:
    """The first Ctrl-C (or SIGTERM, or SIGHUP: a closed terminal) only sets a flag, so the step in progress
    finishes, the state stays consistent and the caller can save it; a second one interrupts at once."""

    SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))

    def __init__(self):
        self.hit = False
        self.old = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.old = {sig: signal.signal(sig, self._handler) for sig in self.SIGNALS}
        return self

    def _handler(self, signum, frame):
        self.hit = True
        self._restore()  # a second signal acts immediately

    def _restore(self):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        self.old = {}

    def __exit__(self, *exc):
        self._restore()
        return False


CHECKPOINT_FORMAT, CHECKPOINT_VERSION = "microgpt-checkpoint", 1


def atomic_write(path, write):
    """write(f) (f a binary file) into a temp file in the same directory, then os.replace: readers never see
    half a file, and an existing file is only replaced by a complete new one. An OSError (disk full, no
    permission) becomes a WriteError naming `path`; the file that was there stays as it was."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=folder)
    except OSError as e:
        raise WriteError(path, e) from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and not isinstance(e, WriteError):
            raise WriteError(path, e) from None
        raise


def save_checkpoint(path, state):
    """One .npz (no pickle): arrays "param:<key>", "adam_m", "adam_v", "train_loss", "val_loss" (K, 2),
    and "meta", a JSON string: format, version, config, vocab, step, steps, batch_size, lr, seed,
    engine, riemannian, corpus, eval_every, corpus_sha256, corpus_docs, dtype (of the weights and Adam's
    moments: float64 or float32; a checkpoint without it is float64).
    """
    meta = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "config": asdict(state.cfg),
            "vocab": list(state.vocab), "step": state.step, "steps": state.steps, "batch_size": state.batch_size,
            "lr": state.lr, "seed": state.seed, "engine": state.engine, "riemannian": state.riemannian,
            "corpus": state.corpus, "eval_every": state.eval_every, "corpus_sha256": state.corpus_sha256,
            "corpus_docs": state.corpus_docs, "dtype": state.params["wte"].dtype.name}
    arrays = {f"param:{k}": a for k, a in state.params.items()}
    arrays.update(adam_m=state.m, adam_v=state.v, train_loss=np.asarray(state.train_loss, dtype=np.float64),
                  val_loss=np.asarray(state.val_loss, dtype=np.float64).reshape(-1, 2), meta=np.array(json.dumps(meta)))
    atomic_write(path, lambda f: np.savez(f, **arrays))


MAX_META_CHARS = 2**20  # the JSON meta of a real checkpoint is a few hundred characters


def _npy_headers(file):
    """name -> (shape, dtype, stored bytes) of every array in an .npz, from the .npy headers alone: nothing
    is loaded, so a header that claims a huge array costs nothing until it is compared with the config."""
    headers = {}
    with zipfile.ZipFile(file) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                raise ValueError(f"member {info.filename!r} is not a .npy array")
            with zf.open(info) as f:
                version = np.lib.format.read_magic(f)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                    np.lib.format.read_array_header_2_0
                shape, _, dtype = read(f)
            headers[info.filename[:-len(".npy")]] = (shape, dtype, info.file_size)
    file.seek(0)
    return headers


def _expected_arrays(cfg, step):
    P = n_params(cfg)
    shapes = {f"param:{key}": shape for key, shape in param_shapes(cfg)}
    shapes.update(adam_m=(P,), adam_v=(P,), train_loss=(step,))
    return shapes


def load_checkpoint(path, max_gb=MAX_MEMORY_GB):
    """A TrainState from save_checkpoint's file; InputError if it is missing, corrupt or incompatible.

    Checked before anything big is read: the meta (its settings obey the same rules as the flags), the size
    of the model it describes (against max_gb, like --max-memory), and every array's header (the config's
    shapes, float64, no unknown arrays). Then the arrays are loaded and must be finite.
    """
    path = str(path)
    if not os.path.exists(path):
        raise InputError(f"checkpoint {path!r} not found")
    if not os.path.isfile(path):
        raise InputError(f"checkpoint {path!r} is not a file")
    if not zipfile.is_zipfile(path):  # else np.load would guess at a pickle and say so, which misleads
        raise InputError(f"checkpoint {path!r} is corrupt or not a microgpt checkpoint (not a .npz archive)")
    where = f"checkpoint {path!r}"
    try:
        with open(path, "rb") as file:  # one open file for every read: a run replacing it meanwhile cannot mix versions
            return _load_checkpoint(file, where, max_gb)
    except OSError as e:
        raise InputError(f"cannot read {where}: {e.strerror or e}") from None


def _load_checkpoint(file, where, max_gb):
    try:
        headers = _npy_headers(file)
        meta_shape, meta_dtype, _ = headers.get("meta", (None, None, 0))
        if meta_shape != () or meta_dtype.kind != "U" or meta_dtype.itemsize > 4 * MAX_META_CHARS:
            raise InputError(f"{where} is incompatible or incomplete (no JSON 'meta' entry of the expected form)")
        with np.load(file, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
        if not isinstance(meta, dict):
            raise InputError(f"{where} is incompatible or incomplete ('meta' is not a JSON object)")
        version = meta.get("version")
        if meta.get("format") != CHECKPOINT_FORMAT or type(version) is not int or version != CHECKPOINT_VERSION:
            raise InputError(f"{where} has format {meta.get('format')!r} version {meta.get('version')!r}; "
                             f"this microgpt reads {CHECKPOINT_FORMAT!r} version {CHECKPOINT_VERSION}")
        names = {f.name for f in fields(GPTConfig)}
        config = meta["config"]
        unknown_settings = sorted(set(config) - names) if isinstance(config, dict) else config
        if unknown_settings:
            raise InputError(f"{where}: its config has settings this microgpt does not know: {unknown_settings}")
        cfg = GPTConfig(**config)
        if 3 * 8 * n_params(cfg) > max_gb * 1e9:  # weights and Adam's two moments (float64: the larger case)
            raise InputError(f"{where} describes a model of {n_params(cfg):,} parameters, about "
                             f"{3 * 8 * n_params(cfg) / 1e9:,.1f} GB with its optimizer state; the limit is "
                             f"{max_gb:g} GB (raise it with --max-memory)")
        step = check_setting("step", meta["step"], f"{where}: step")
        dtype = check_dtype(meta.get("dtype", "float64"))
        expected = _expected_arrays(cfg, step)
        unknown = sorted(set(headers) - set(expected) - {"meta", "val_loss"})
        if unknown:
            raise InputError(f"{where} holds arrays a microgpt checkpoint does not have: {', '.join(unknown)}")
        missing = sorted(set(expected) - set(headers))
        if missing or "val_loss" not in headers:
            raise InputError(f"{where} is incompatible or incomplete (missing {', '.join(missing) or 'val_loss'})")
        for name, shape in expected.items():
            got, got_dtype, stored = headers[name]
            want = np.dtype(np.float64) if name.endswith("_loss") else dtype
            if got != shape or got_dtype != want:
                raise InputError(f"{where}: array {name!r} has shape {got} and dtype {got_dtype}; the config needs "
                                 f"shape {shape}, {want}")
            if stored < want.itemsize * math.prod(shape):
                raise InputError(f"{where} is corrupt (array {name!r} is truncated)")
        val_shape, val_dtype, _ = headers["val_loss"]
        if len(val_shape) != 2 or val_shape[1] != 2 or val_shape[0] > step + 2 or val_dtype != np.float64:
            raise InputError(f"{where}: array 'val_loss' has shape {val_shape}; expected (K, 2) with K <= step + 2")
        file.seek(0)
        with np.load(file, allow_pickle=False) as z:
            data = {k: z[k] for k in expected}
            val_loss = z["val_loss"]
    except InputError:
        raise
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as e:
        raise InputError(f"{where} is incompatible or incomplete ({type(e).__name__}: {e})") from None
    except Exception as e:  # zip, npy header, truncation, pickle refusal: all mean "not a valid checkpoint"
        raise InputError(f"{where} is corrupt or not a microgpt checkpoint ({type(e).__name__}: {e})") from None
    vocab = meta.get("vocab")
    if not isinstance(vocab, list) or len(vocab) + 1 != cfg.vocab_size or \
            not all(isinstance(c, str) and len(c) == 1 for c in vocab):
        raise InputError(f"{where}: vocabulary does not match vocab_size {cfg.vocab_size}")
    if vocab != sorted(set(vocab)):  # build_vocab makes it: sorted, each character once
        raise InputError(f"{where}: its vocabulary is not sorted characters, each once (as build_vocab makes it)")
    params = pack_params({k[len("param:"):]: a for k, a in data.items() if k.startswith("param:")}, cfg)
    m, v = data["adam_m"], data["adam_v"]
    if not (np.isfinite(flat_buffer(params)).all() and np.isfinite(m).all() and np.isfinite(v).all()):
        raise InputError(f"{where} contains non-finite weights or optimizer state")
    if (v < 0).any():
        raise InputError(f"{where}: Adam's second moment adam_v has negative entries (it is a mean of squares)")
    losses = data["train_loss"]
    if not (np.isfinite(losses).all() and np.isfinite(val_loss).all()):
        raise InputError(f"{where}: its loss history contains NaN or inf")
    val_steps = val_loss[:, 0]
    if len(val_steps) and ((val_steps != np.round(val_steps)).any() or val_steps.min() < 0 or
                           val_steps.max() > step or (np.diff(val_steps) <= 0).any()):
        raise InputError(f"{where}: the steps of its val-loss history are not increasing whole steps up to {step}")
    sha, docs = meta.get("corpus_sha256", ""), meta.get("corpus_docs", 0)
    if not (isinstance(sha, str) and (sha == "" or len(sha) == 64)) or isinstance(docs, bool) or \
            not isinstance(docs, int) or docs < 0:
        raise InputError(f"{where}: its corpus fingerprint is malformed (corpus_sha256 {sha!r}, corpus_docs {docs!r})")
    try:
        state = TrainState(cfg, vocab, params, m, v, meta["step"], meta["steps"], meta["batch_size"], meta["lr"],
                           meta["seed"], meta["engine"], meta["riemannian"], meta["corpus"], meta["eval_every"],
                           sha, docs, losses.tolist(), [(int(s), float(x)) for s, x in val_loss])
    except KeyError as e:
        raise InputError(f"{where} is incompatible or incomplete (no {e} in its meta)") from None
    check_state(state, where)
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


LOCK_NAME = ".microgpt.lock"


class RunLock:
    """A run holds its --out folder: a lock file with its pid, kept locked until the run ends.

    The lock is the operating system's (fcntl.flock on POSIX, msvcrt.locking on Windows): it is released when
    the process ends, however it ends, so a run killed with kill -9 leaves the file but not the lock. The next
    run then takes it over with a notice. A second run while the first is alive gets an InputError (exit 2)
    before any work. Use it as a context manager; `notice` says whether a stale lock was taken over.
    """

    def __init__(self, folder):
        self.folder, self.path = folder, folder and os.path.join(folder, LOCK_NAME)
        self.fd, self.notice = None, None

    def __enter__(self):
        if not self.folder:  # no --out: nothing to hold
            return self
        prepare_out(self.folder)
        while True:
            try:  # (O_NOFOLLOW: a symbolic link planted as the lock file is refused, not followed and overwritten)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            except OSError as e:
                raise InputError(f"cannot use {self.path!r} as the lock of --out {self.folder!r} ({e.strerror}); "
                                 "is it a symbolic link or a folder?") from None
            if not _try_lock(fd):
                holder = _read_all(fd).strip() or "a process that has not written its pid yet"
                os.close(fd)
                raise InputError(f"--out {self.folder!r} is in use by another run ({holder}); wait for it to end, "
                                 "or choose another --out")
            try:  # the file may have been removed by its last owner between our open and our lock: try again
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        previous = _read_all(fd).strip()
        if previous:  # a run that ended without releasing (killed): the kernel already dropped its lock
            self.notice = f"note: took over {self.path} from an earlier run that is no longer running ({previous})"
        started = datetime.datetime.now().isoformat(timespec="seconds")
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, started {started}\n".encode())
        except OSError as e:  # e.g. a full disk: give the folder back as it was
            os.close(fd)
            raise WriteError(self.path, e) from None
        self.fd = fd
        return self

    @staticmethod
    def check_free(folder):
        """InputError if another live run holds `folder`; changes nothing (a shared lock, taken and dropped)."""
        path = folder and os.path.join(folder, LOCK_NAME)
        if not path or not os.path.isfile(path) or os.path.islink(path):
            return
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return  # (the exclusive lock will say what is wrong)
        try:
            if not _try_lock(fd, shared=True):
                holder = _read_all(fd).strip() or "a process that has not written its pid yet"
                raise InputError(f"--out {folder!r} is in use by another run ({holder}); wait for it to end, "
                                 "or choose another --out")
        finally:
            os.close(fd)

    def clean(self):
        """Remove the temp files of a write that a killed run left half done (atomic_write's .tmp-*<name> files
        for checkpoint.npz, metrics.json and loss.png; nothing else). Call it once the run is sure to go ahead."""
        if not self.notice:
            return
        for name in os.listdir(self.folder):
            path = os.path.join(self.folder, name)
            if name.startswith(".tmp-") and name.endswith(RUN_FILE_NAMES) and os.path.isfile(path) \
                    and not os.path.islink(path):
                os.unlink(path)

    def __exit__(self, *exc):
        if self.fd is not None:
            try:
                os.unlink(self.path)  # while still holding the lock: whoever opened the old file will retry
            except OSError:
                pass
            os.close(self.fd)  # releases the lock
            self.fd = None
        return False


RUN_FILE_NAMES = ("checkpoint.npz", "metrics.json", "loss.png")


def _try_lock(fd, shared=False):
    try:
        if fcntl is not None:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        else:
            msvcrt.locking(fd, msvcrt.LK_NBRLCK if shared else msvcrt.LK_NBLCK, 1)
        return True
    except OSError:
        return False


def _read_all(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, 4096).decode("utf-8", "replace")


def claim_run_folder(base="out"):
    """Ctrl-C without --out: a new folder base/run-N for this run's checkpoint, the first N that is free.
    os.mkdir is atomic and fails if the folder exists, so two runs stopped at the same moment get two folders."""
    n = 1
    while True:
        folder = os.path.join(base, f"run-{n}")
        try:
            os.makedirs(folder)
            return folder
        except FileExistsError:
            n += 1
        except OSError as e:
            raise WriteError(folder, e) from None
