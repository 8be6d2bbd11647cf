"""harness/run_files.py -- writing files safely, reading .npz files warily, and the --out folder's lock.

    atomic_write      temp file + os.replace: readers never see half a file; a failed write is a WriteError
    check_npz_file    a file that can be read and is a zip archive, as every .npz is
    npz_headers       every array's shape and dtype from its header, before anything is loaded
    check_arrays      those headers against what a file of its kind must hold
    write_json        metrics.json
    plot_losses       loss.png: train and val loss beside the baselines
    RunLock           a run holds its --out folder (a lock file with its pid) until it ends
    claim_run_folder  Ctrl-C without --out: the next free out/run-N, taken atomically (mkdir is exclusive)
"""
import datetime
import errno
import io
import json
import math
import os
import secrets
import socket
import stat
import tempfile
import zipfile
from dataclasses import fields

import numpy as np

from harness.errors import InputError, WriteError, as_text
from model_config import GPTConfig
from settings import short

try:  # POSIX: an advisory lock the kernel releases when the process ends, however it ends (kill -9 too)
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt

RUN_FILE_NAMES = ("checkpoint.npz", "history.npz", "metrics.json", "loss.png")
TEMP_PREFIX, TEMP_SUFFIX = ".microgpt-", ".tmp"  # a temp file's name: short, so it fits wherever its target fits


def not_a_regular_file(path):
    """What `path` is if it exists and is not a regular file ("a symbolic link", "a FIFO", ...), else None.
    lstat, not stat: a symbolic link is itself what os.replace would replace."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # not there (or not reachable: the write itself will say why)
        return None
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def check_writable(path):
    """WriteError unless `path` is a regular file or not there yet: os.replace would put a regular file in the
    place of a symbolic link, a FIFO or a device (run as root, /dev/null itself), so those are left alone."""
    kind = not_a_regular_file(path)
    if kind:
        raise WriteError(path, OSError(errno.EEXIST, f"it is {kind}, not a regular file; it is left as it is"))


def atomic_write(path, write):
    """write(f) (f a binary file) into a temp file in the same folder, then os.replace: readers never see half a
    file, and an existing file is only replaced by a complete new one. An OSError (disk full, no permission)
    becomes a WriteError naming `path`; the file that was there stays as it was. Whatever ends the write (an
    error, Ctrl-C, SIGTERM: the shell turns signals into KeyboardInterrupt), the temp file is removed."""
    check_writable(path)
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)), TEMP_PREFIX + secrets.token_hex(4) + TEMP_SUFFIX)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # (the umask applies, as for any file)
    except OSError as e:
        raise WriteError(path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and not isinstance(e, WriteError):
            raise WriteError(path, e) from None
        raise


def check_npz_file(path, what):
    """InputError unless `path` is a file this process can read and a zip archive, as every .npz is (np.load
    would take any other file for a pickle, refuse it, and say so, which misleads). what: "checkpoint", ..."""
    try:
        with open(path, "rb") as f:
            is_zip = zipfile.is_zipfile(f)
    except FileNotFoundError:
        raise InputError(f"{what} {path!r} not found") from None
    except IsADirectoryError:
        raise InputError(f"{what} {path!r} is not a file") from None
    except OSError as e:
        raise InputError(f"cannot read {what} {path!r}: {e.strerror or e}") from None
    if not is_zip:
        raise InputError(f"{what} {path!r} is corrupt, truncated or not a microgpt {what} (not a .npz archive)")


def npz_headers(file, max_members=64, only=None):
    """name -> (shape, dtype, stored bytes) of every array in an open .npz file (or of those named in `only`),
    from the .npy headers alone: nothing is loaded, so a header that claims a huge array costs nothing until it
    is compared with what the file should hold. ValueError for a member that is not an array, or too many
    members (max_members None: any number)."""
    headers = {}
    with zipfile.ZipFile(file) as zf:
        infos = zf.infolist()
        if max_members is not None and len(infos) > max_members:
            raise ValueError(f"it has {len(infos)} members; at most {max_members} were expected")
        for info in infos:
            if only is not None and info.filename[:-len(".npy")] not in only:
                continue
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


def npz_meta(file, headers, max_chars=2**20):
    """The JSON object in an open .npz's "meta" entry (a 0-d string array of at most max_chars characters: its
    header says so before it is read); ValueError if there is no such entry or it holds no JSON object."""
    shape, dtype, _ = headers.get("meta", (None, None, 0))
    if shape != () or dtype.kind != "U" or dtype.itemsize > 4 * max_chars:
        raise ValueError("no JSON 'meta' entry of the expected form")
    with np.load(file, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
    file.seek(0)
    if not isinstance(meta, dict):
        raise ValueError("'meta' is not a JSON object")
    return meta


def read_meta(file, fmt, version, max_chars=2**20):
    """(meta, GPTConfig, vocab) of an open checkpoint or history (`fmt`, `version`): InputError naming what is
    wrong with its format, its config or its vocabulary. Only the meta entry is read."""
    try:
        meta = npz_meta(file, npz_headers(file, max_members=None, only=("meta",)), max_chars)
    except ValueError as e:
        raise InputError(str(e)) from None
    if meta.get("format") != fmt or type(meta.get("version")) is not int or meta["version"] != version:
        raise InputError(f"it has format {meta.get('format')!r} version {meta.get('version')!r}; this microgpt "
                         f"reads {fmt!r} version {version}")
    config = meta.get("config")
    unknown = sorted(set(config) - {f.name for f in fields(GPTConfig)}) if isinstance(config, dict) else config
    if unknown:
        raise InputError(f"its config has settings this microgpt does not know: {short(unknown)}")
    try:
        cfg = GPTConfig(**config)
    except InputError as e:
        raise InputError(f"its config: {e}") from None
    vocab = meta.get("vocab")
    if not isinstance(vocab, list) or len(vocab) + 1 != cfg.vocab_size or vocab != sorted(set(vocab)) or \
            not all(isinstance(c, str) and len(c) == 1 for c in vocab):
        raise InputError(f"its vocabulary is not vocab_size - 1 = {cfg.vocab_size - 1} sorted characters")
    return meta, cfg, vocab


def check_arrays(headers, expected):
    """InputError unless the file's arrays are exactly `expected` (name -> (shape, dtype)), each stored whole.
    A shape may be a function of the header's shape that returns the expected one (loss curves of any length);
    a dtype of None is not checked (meta)."""
    unknown, missing = sorted(set(headers) - set(expected)), sorted(set(expected) - set(headers))
    if unknown or missing:
        raise InputError(f"its arrays do not match its config: {'missing ' + cut_list(missing) if missing else ''}"
                         f"{'; ' if unknown and missing else ''}{'unexpected ' + cut_list(unknown) if unknown else ''}")
    for name, (shape, dtype) in expected.items():
        got, got_dtype, stored = headers[name]
        if dtype is None:
            continue
        shape = shape(got) if callable(shape) else shape
        if got != shape or got_dtype != np.dtype(dtype):
            raise InputError(f"array {name!r} has shape {got} and dtype {got_dtype}; expected {shape}, "
                             f"{np.dtype(dtype)}")
        if stored < np.dtype(dtype).itemsize * math.prod(shape):
            raise InputError(f"array {name!r} is truncated")


def cut_list(names, most=4):
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def write_json(path, obj):
    """obj as indented JSON (UTF-8), written atomically."""
    atomic_write(path, lambda f: f.write((json.dumps(obj, indent=2) + "\n").encode("utf-8")))


MAX_PLOT_POINTS = 20_000  # loss.png draws at most this many train-loss points


def plot_losses(path, state, base, title):
    """Loss curve PNG: train loss (raw and smoothed), val loss, and the baselines as horizontal lines. The
    title is the user's text (a corpus file's name): drawn as text, never as matplotlib's $math$."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    losses = np.asarray(state.train_loss, dtype=np.float64)
    stride = -(-len(losses) // MAX_PLOT_POINTS)  # a long run is drawn as means of `stride` steps
    if stride > 1:
        losses = losses[:len(losses) // stride * stride].reshape(-1, stride).mean(axis=1)
    steps = stride * np.arange(1, len(losses) + 1)
    per = "per step" if stride == 1 else f"means of {stride} steps"
    ax.plot(steps, losses, color="tab:blue", alpha=0.25, lw=0.8, label=f"train loss ({per})")
    if len(steps) >= 2:
        w = max(1, min(50, len(steps) // 10))
        smooth = np.convolve(losses, np.ones(w) / w, mode="valid")
        ax.plot(steps[w - 1:], smooth, color="tab:blue", lw=1.5, label=f"train loss ({w * stride}-step mean)")
    if state.val_loss:
        vs, vl = zip(*state.val_loss)
        ax.plot(vs, vl, "o-", color="tab:orange", ms=3, label="val loss")
    for (name, value), color in zip(base.items(), ("gray", "tab:green", "tab:red")):
        ax.axhline(value, ls="--", lw=1, color=color, label=f"{name} baseline ({value:.3f})")
    ax.set(xlabel="training step", ylabel="loss (mean NLL, nats per token)")
    ax.set_title(as_text(title).replace("$", r"\$"))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write(path, lambda f: f.write(buf.getvalue()))


# --------------------------------------------------------------------------- the --out folder

def make_folder(out):
    """Create --out (and its missing parents) and check that files can be written into it, before any
    training time is spent. Returns the folders it created, innermost first (release_folder removes them
    again if the run leaves them empty)."""
    created, folder = [], os.path.abspath(out)
    try:
        while not os.path.isdir(folder) and folder != os.path.dirname(folder):
            created.append(folder)
            folder = os.path.dirname(folder)
    except (ValueError, OSError):
        pass
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        remove_empty(created)
        raise InputError(f"--out {out!r} is not a writable folder ({e.strerror or e})") from None
    except RecursionError:  # os.makedirs recurses once per missing folder level: thousands of them overflow it
        remove_empty(created)
        raise InputError(f"--out {out[:60]!r}... has too many folder levels to create") from None
    return created


def remove_empty(folders):
    for folder in folders:  # innermost first: a parent is empty once its child is gone
        try:
            os.rmdir(folder)
        except OSError:
            return


LOCK_NAME = ".microgpt.lock"


class RunLock:
    """A run holds its --out folder until the run ends: the folder itself is locked, and a lock file in it says
    which process holds it.

    The locks are the operating system's (fcntl.flock on POSIX, msvcrt.locking of the file on Windows): they are
    released when the process ends, however it ends, so a run killed with kill -9 leaves the file but not the
    lock. The next run then takes it over with a notice. Deleting the lock file does not free a folder that a
    live run holds (its lock is on the folder). A second run while the first is alive gets an InputError (exit 2)
    before any work. Folders the run created and left empty (it was refused, or stopped before writing anything)
    are removed again. Use it as a context manager; `notice` says whether a stale lock was taken over.
    """

    def __init__(self, folder):
        self.folder, self.path = folder, folder and os.path.join(folder, LOCK_NAME)
        self.fd, self.dir_fd, self.notice, self.created = None, None, None, []

    def __enter__(self):
        if not self.folder:  # no --out: nothing to hold
            return self
        self.created = make_folder(self.folder)
        self.dir_fd = _lock_folder(self.folder)
        while True:
            try:  # (O_NOFOLLOW: a symbolic link planted as the lock file is refused, not followed)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            except OSError as e:
                self._release()
                raise InputError(f"cannot use {self.path!r} as the lock of --out {self.folder!r} ({e.strerror}); "
                                 "is it a symbolic link or a folder?") from None
            if not _try_lock(fd):
                holder = _read_all(fd).strip()
                os.close(fd)
                self._release()
                raise in_use(self.folder, holder)
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
        self.fd = fd
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, started {started}\n".encode())
        except OSError as e:  # e.g. a full disk: give the folder back as it was
            self._release()
            raise WriteError(self.path, e) from None
        return self

    @staticmethod
    def check_free(folder):
        """InputError if another live run holds `folder`; changes nothing (shared locks, taken and dropped)."""
        if folder and os.path.isdir(folder) and fcntl is not None:
            os.close(_lock_folder(folder, shared=True))
        path = folder and os.path.join(folder, LOCK_NAME)
        if not path or not os.path.isfile(path) or os.path.islink(path):
            return
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return  # (the exclusive lock will say what is wrong)
        try:
            if not _try_lock(fd, shared=True):
                raise in_use(folder, _read_all(fd).strip())
        finally:
            os.close(fd)

    def clean(self):
        """Remove the temp files a killed run left half written (atomic_write's, and nothing else). Call it once
        the run is sure to go ahead."""
        if not self.notice:
            return
        for name in os.listdir(self.folder):
            path = os.path.join(self.folder, name)
            if name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX) and not_a_regular_file(path) is None:
                os.unlink(path)

    def __exit__(self, *exc):
        self._release()
        return False

    def _release(self):
        if self.fd is not None:
            try:
                os.unlink(self.path)  # while still holding the lock: whoever opened the old file will retry
            except OSError:
                pass
            os.close(self.fd)  # releases the file's lock
            self.fd = None
        remove_empty(self.created)  # folders this run made and left empty
        if self.dir_fd is not None:
            os.close(self.dir_fd)  # releases the folder
            self.dir_fd = None


def in_use(folder, holder):
    return InputError(f"--out {folder!r} is in use by another run ({holder or 'a process starting up'}); wait "
                      "for it to end, or choose another --out")


def _lock_folder(folder, shared=False):
    """An open descriptor of `folder` holding the operating system's lock on it (POSIX; None on Windows, where the
    lock file alone holds the folder); InputError if another live run holds it."""
    if fcntl is None:
        return None
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    if not _try_lock(fd, shared):
        os.close(fd)
        try:
            with open(os.path.join(folder, LOCK_NAME), encoding="utf-8", errors="replace") as f:
                holder = f.read(4096).strip()
        except OSError:
            holder = "its lock file was deleted"
        raise in_use(folder, holder)
    return fd


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
