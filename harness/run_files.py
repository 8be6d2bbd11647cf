"""harness/run_files.py -- files written safely (atomic_write), .npz files read warily
(a checkpoint's or history's claims checked from its headers first), metrics.json and
loss.png, and the --out folder a run holds (RunLock; without --out: out/run-N).
"""
import contextlib
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

from checks import check_vocab
from harness.errors import InputError, WriteError, as_text
from harness.i18n import N_, _
from model_config import GPTConfig, cut_list
from settings import short

try:  # POSIX: an advisory lock the kernel releases however the process ends (kill -9 too)
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt

RUN_FILE_NAMES = ("checkpoint.npz", "history.npz", "metrics.json", "loss.png")
KINDS = {stat.S_IFLNK: N_("a symbolic link"), stat.S_IFDIR: N_("a folder"),
         stat.S_IFIFO: N_("a FIFO"), stat.S_IFSOCK: N_("a socket"),
         stat.S_IFCHR: N_("a device"), stat.S_IFBLK: N_("a device")}
TEMP_PREFIX, TEMP_SUFFIX = ".microgpt-", ".tmp"  # short: a temp file fits wherever its target fits


def not_a_regular_file(path):
    """What `path` is if there and not a regular file ("a symbolic link", "a FIFO"), or
    None (in English: _(kind) translates it)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # not there (or not reachable: the write itself will say why)
        return None
    if stat.S_ISREG(mode):
        return None
    return KINDS.get(stat.S_IFMT(mode), N_("not a regular file"))


def atomic_write(path, write):
    """write(f) into a temp file in the same folder, then os.replace: never half a file.
    An OSError is a WriteError naming `path`, the old file intact; however the write
    ends, the temp file is removed. Only a regular file is replaced (os.replace would
    put one in the place of a symbolic link, a FIFO or /dev/null)."""
    if kind := not_a_regular_file(path):
        raise WriteError(path, OSError(errno.EEXIST,
                                       f"it is {kind}, not a regular file; it is left as it is"))
    folder = os.path.dirname(os.path.abspath(path))
    tmp = TEMP_PREFIX + secrets.token_hex(4) + TEMP_SUFFIX
    at = HELD.get(folder)  # a held --out: through its folder, wherever that is now
    tmp, name = (tmp, os.path.basename(path)) if at is not None else \
        (os.path.join(folder, tmp), path)
    try:  # (the umask applies, as for any file)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666, dir_fd=at)
    except OSError as e:
        raise WriteError(path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=at, dst_dir_fd=at)
    except BaseException as e:
        if _is_file(tmp, at):
            os.unlink(tmp, dir_fd=at)
        if isinstance(e, OSError) and not isinstance(e, WriteError):
            raise WriteError(path, e) from None
        raise


def check_readable_file(path, what):
    """InputError unless `path` (followed) is a regular file: reading a FIFO, a device
    or a socket would wait for a writer, or never end. what: N_("corpus file"), say."""
    what = _(what)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError("{what} {path!r} not found", what=what, path=path) from None
    except OSError as e:
        raise InputError("cannot read {what} {path!r}: {error}", what=what, path=path,
                         error=e.strerror or e) from None
    if stat.S_ISDIR(mode):
        raise InputError("{what} {path!r} is a folder, not a file", what=what, path=path)
    if not stat.S_ISREG(mode):
        kind = _(KINDS.get(stat.S_IFMT(mode), N_("a device")))
        raise InputError("{what} {path!r} is {kind}, not a regular file; give the file itself",
                         what=what, path=path, kind=kind)


def read_npz(path, what, load):
    """load(file, where) on the .npz at `path` (what: "checkpoint", "history"), through
    one open file; whatever is wrong is one InputError naming the file (not a zip:
    np.load would call it a pickle it refuses, which misleads)."""
    path = os.fsdecode(path)
    check_readable_file(path, what)
    what = _(what)
    where = f"{what} {path!r}"
    try:
        with open(path, "rb") as file:
            if zipfile.is_zipfile(file):
                file.seek(0)
                return load(file, where)
    except OSError as e:
        raise InputError("cannot read {where}: {error}", where=where,
                         error=e.strerror or e) from None
    except InputError as e:
        raise InputError("{where} is incompatible or incomplete: {error}", where=where,
                         error=e) from None
    except Exception as e:
        raise InputError("{where} is corrupt or not a microgpt {what} ({kind}: {error})",
                         where=where, what=what, kind=type(e).__name__, error=e) from None
    raise InputError("{what} {path!r} is corrupt, truncated or not a microgpt {what} (not a .npz "
                     "archive)", what=what, path=path)


def npz_headers(file, max_members=64, only=None):
    """name -> (shape, dtype, stored bytes) of every array in an open .npz (or those in
    `only`), from the .npy headers alone: a huge claim costs nothing. ValueError for a
    member that is not an array, or too many (max_members None: any number)."""
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
                shape, _fortran_order, dtype = read(f)
            headers[info.filename[:-len(".npy")]] = (shape, dtype, info.file_size)
    file.seek(0)
    return headers


def read_meta(file, fmt, version, max_chars=2**20):
    """(meta, GPTConfig, vocab) of an open checkpoint or history, else InputError; only
    the meta entry is read, a 0-d string of at most max_chars characters."""
    shape, dtype, _size = npz_headers(file, max_members=None, only=("meta",)).get("meta",
                                                                                 (None,) * 3)
    if shape != () or dtype.kind != "U" or dtype.itemsize > 4 * max_chars:
        raise InputError("no JSON 'meta' entry of the expected form")
    with np.load(file, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
    file.seek(0)
    if not isinstance(meta, dict):
        raise InputError("'meta' is not a JSON object")
    if (meta.get("format"), type(meta.get("version"))) != (fmt, int) or meta["version"] != version:
        raise InputError("it has format {got!r} version {got_version!r}; this microgpt reads "
                         "{fmt!r} version {version}", got=meta.get("format"),
                         got_version=meta.get("version"), fmt=fmt, version=version)
    config = meta.get("config")
    known = {f.name for f in fields(GPTConfig)}
    unknown = sorted(set(config) - known) if isinstance(config, dict) else config
    if unknown:
        raise InputError("its config has settings this microgpt does not know: {unknown}",
                         unknown=short(unknown))
    try:
        cfg = GPTConfig(**config)
    except InputError as e:
        raise InputError("its config: {error}", error=e) from None
    check_vocab(meta.get("vocab"), cfg, "")
    return meta, cfg, meta["vocab"]


def load_arrays(file, headers, expected):
    """The arrays of an open .npz but "meta", or InputError unless they are exactly
    `expected` (name -> (shape, dtype)), each stored whole. A shape may be a function
    of the header's; dtype None: any."""
    unknown, missing = sorted(set(headers) - set(expected)), sorted(set(expected) - set(headers))
    if unknown or missing:
        raise InputError("its arrays do not match its config: missing {missing}, unexpected "
                         "{unknown}", missing=cut_list(missing), unknown=cut_list(unknown))
    for name, (shape, dtype) in expected.items():
        got, got_dtype, stored = headers[name]
        if dtype is None:
            continue
        shape = shape(got) if callable(shape) else shape
        if got != shape or got_dtype != np.dtype(dtype):
            raise InputError("array {name!r} has shape {got} and dtype {got_dtype}; expected "
                             "{shape}, {dtype}", name=name, got=got, got_dtype=got_dtype,
                             shape=shape, dtype=np.dtype(dtype))
        if stored < np.dtype(dtype).itemsize * math.prod(shape):
            raise InputError("array {name!r} is truncated", name=name)
    with np.load(file, allow_pickle=False) as z:
        return {name: z[name] for name in expected if name != "meta"}


def write_json(path, obj):
    """obj as indented JSON (UTF-8), written atomically."""
    atomic_write(path, lambda f: f.write((json.dumps(obj, indent=2) + "\n").encode("utf-8")))


MAX_PLOT_POINTS = 20_000  # loss.png draws at most this many train-loss points


def plot_losses(path, state, base, title):
    """loss.png: train loss (raw and smoothed), val loss, and the baselines. The title
    (a corpus file's name) is drawn as text, never as matplotlib's $math$."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    losses = np.asarray(state.train_loss, dtype=np.float64)
    stride = -(-len(losses) // MAX_PLOT_POINTS)  # a long run is drawn as means of `stride` steps
    losses = losses[:len(losses) // stride * stride].reshape(-1, stride).mean(axis=1)
    steps = stride * np.arange(1, len(losses) + 1)
    per = "per step" if stride == 1 else f"means of {stride} steps"
    ax.plot(steps, losses, color="tab:blue", alpha=0.25, lw=0.8, label=f"train loss ({per})")
    w = max(1, min(50, len(steps) // 10))
    ax.plot(steps[w - 1:], np.convolve(losses, np.ones(w) / w, mode="valid"), color="tab:blue",
            lw=1.5, label=f"train loss ({w * stride}-step mean)")
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


# --------------------------------------------------------------------- the --out folder

def make_folder(out):
    """Create --out (and its parents); check, before training, that it takes files."""
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise InputError("--out {out!r} is not a writable folder ({error})", out=out,
                         error=e.strerror or e) from None
    except RecursionError:  # os.makedirs recurses per missing folder level: thousands overflow it
        raise InputError("--out {out!r}... has too many folder levels to create",
                         out=out[:60]) from None


LOCK_NAME = ".microgpt.lock"
HELD = {}  # the --out folders this process holds (POSIX): absolute path -> the folder's fd


class RunLock:
    """A run holds its --out folder until it ends, by the OS's lock (released however
    the process ends); a lock file says who holds it. __enter__ refuses a folder a live
    run holds; claim() writes this run's pid; __exit__ releases it and removes the
    folders it made, if empty."""

    def __init__(self, folder):
        self.folder, self.path = folder, folder and os.path.join(folder, LOCK_NAME)
        self.fd, self.claimed, self.notice, self.created = None, False, None, []
        self.moved_to = None  # where the folder held went, if --out stopped naming it

    def __enter__(self):
        if not self.folder:  # no --out: nothing to hold
            return self
        try:  # (whatever ends this, Ctrl-C included, gives the folder back as it was)
            folder = os.path.abspath(self.folder)  # the folders it creates, innermost first
            while not os.path.isdir(folder) and folder != os.path.dirname(folder):
                self.created.append(folder)
                folder = os.path.dirname(folder)
            make_folder(self.folder)
            try:
                self.fd = os.open(self.folder, os.O_RDONLY) if fcntl else \
                    os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                raise InputError("cannot lock --out {out!r} ({error})", out=self.folder,
                                 error=e.strerror or e) from None
            try:
                if fcntl:
                    fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                else:
                    msvcrt.locking(self.fd, msvcrt.LK_NBLCK, 1)
            except OSError:
                raise InputError("--out {out!r} is in use by another run ({holder}); wait for it "
                                 "to end, or choose another --out", out=self.folder,
                                 holder=self._holder() or _("its lock file was deleted")) from None
            if fcntl:
                HELD[os.path.abspath(self.folder)] = self.fd
        except BaseException:
            self.__exit__()
            raise
        return self

    def _holder(self):
        if not_a_regular_file(self.path) or not os.path.exists(self.path):
            return ""
        with open(self.path, encoding="utf-8", errors="replace") as f:
            return f.read(4096).strip()

    def _at(self):
        """The lock file's name and dir_fd, in the folder held (wherever it is now)."""
        return (LOCK_NAME, self.fd) if fcntl and self.fd is not None else (self.path, None)

    def check_held(self):
        """WriteError unless --out still names the folder this run holds (not renamed,
        nor a link retargeted since)."""
        if not self._still_here():
            proc = f"/proc/self/fd/{self.fd}"  # (Linux: where the folder held is now)
            self.moved_to = os.readlink(proc) if os.path.exists(proc) else None
            raise WriteError(self.folder, OSError(errno.ESTALE, _(
                "--out was moved or replaced while the run was writing it; this run writes "
                "nothing more there")))

    def _still_here(self):
        if not fcntl or self.fd is None:
            return True
        here, held = os.stat(self.folder) if os.path.isdir(self.folder) else None, os.fstat(self.fd)
        return here is not None and (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)

    def claim(self):
        """This run's pid into the lock file (a symbolic link there is refused); the
        temp files a killed run left are removed (atomic_write's, nothing else)."""
        if not self.folder:
            return
        if previous := self._holder():  # left by a killed run: the kernel dropped its lock
            self.notice = _("note: took over {path} from an earlier run that is no longer "
                            "running ({previous})").format(path=self.path, previous=previous)
            for name in os.listdir(self.folder):
                if name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX):
                    os.unlink(os.path.join(self.folder, name))
        started = f"started {datetime.datetime.now().isoformat(timespec='seconds')}\n"
        name, dir_fd = self._at()
        try:  # made anew: a hard link there (cp -al) is unlinked, never written through
            if dir_fd is not None and _is_file(name, dir_fd):
                os.unlink(name, dir_fd=dir_fd)
            fresh = os.O_EXCL if dir_fd is not None else os.O_TRUNC
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | fresh | getattr(os, "O_NOFOLLOW", 0),
                         0o644, dir_fd=dir_fd)
        except OSError as e:
            raise InputError("cannot use {path!r} as the lock of --out {out!r} ({error}); is it a "
                             "symbolic link or a folder?", path=self.path, out=self.folder,
                             error=e.strerror) from None
        self.claimed = True
        try:
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, {started}".encode())
        except OSError as e:  # e.g. a full disk
            raise WriteError(self.path, e) from None
        finally:
            os.close(fd)

    def __exit__(self, *exc):
        if self.claimed:
            name, dir_fd = self._at()
            with contextlib.suppress(OSError):  # in the held folder, not --out's; still locked
                os.unlink(name, dir_fd=dir_fd)
            self.claimed = False
        if not self._still_here():  # its path names another folder now: not this run's to remove
            self.created = []
        if self.fd is not None:
            HELD.pop(os.path.abspath(self.folder), None)
            os.close(self.fd)  # releases the lock
            self.fd = None
        for folder in self.created:  # the folders it made, innermost first, while empty
            try:
                os.rmdir(folder)
            except OSError:
                break


def _is_file(name, dir_fd=None):
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def claim_run_folder(base="out"):
    """Ctrl-C without --out: a new folder base/run-N, the first N free (mkdir is atomic:
    two runs stopped at once get two folders)."""
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
