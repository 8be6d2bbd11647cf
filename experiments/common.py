"""experiments/common.py -- what the experiment scripts share: the command line's parser and
argument types, the output folder and files, the steps to a target loss, the lr sweep on a
lattice, and the process pool that trains the runs."""
import argparse
import json
import math
import multiprocessing
import os
import platform
import shlex
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # microgpt.py lives at the repo root

from harness.run_files import atomic_write  # noqa: E402
from settings import InputError  # noqa: E402

SCALE_GROUPS = ("alpha_A", "alpha_M", "s_qk", "s_u", "s_z")


# =========================================================================== the command line

class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse would print the whole usage first)
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def parse(parser, argv, quick):
    """The options; with --quick, the sizes in `quick` become the defaults (flags still win)."""
    opts = parser.parse_args(argv)
    if opts.quick:
        parser.set_defaults(**quick)
        opts = parser.parse_args(argv)
    return opts


def _numbers(text, kind, ok, what):
    try:
        xs = [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r}") from None
    if not xs or not all(ok(x) for x in xs):
        raise argparse.ArgumentTypeError(f"expected positive {what}, got {text!r}")
    return xs


def float_list(text):
    """"0.001,0.01" -> [0.001, 0.01]: positive finite numbers."""
    return _numbers(text, float, lambda x: math.isfinite(x) and x > 0, "numbers")


def float_list_or_empty(text):
    """float_list, or [] for "" and "none" (an axis switched off)."""
    return [] if text.strip().lower() in ("", "none") else float_list(text)


def int_list(text):
    """"64,128" -> [64, 128]: positive integers."""
    return _numbers(text, int, lambda x: x > 0, "integers")


def _int_at_least(text, low, what):
    try:
        x = int(text)
    except ValueError:
        x = low - 1
    if x < low:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return x


def pos_int(text):
    return _int_at_least(text, 1, "a positive integer")


def nonneg_int(text):
    return _int_at_least(text, 0, "an integer >= 0")


def command_line(script, argv):
    return " ".join([f"python experiments/{script}"] + [shlex.quote(a) for a in argv])


# =========================================================================== files

def output_folder(out):
    """Create `out` if needed; InputError when it cannot be made or written."""
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create output directory {out!r}: {e.strerror or e}") from None
    if not os.access(out, os.W_OK):
        raise InputError(f"output directory {out!r} is not writable")
    return out


def write_json(path, raw):
    atomic_write(path, lambda f: f.write(json.dumps(raw, separators=(",", ":")).encode("utf-8")))


def write_text(path, text):
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def read_json(path, what):
    """An earlier results file; InputError with one line when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"cannot {what} {path!r}: {type(e).__name__}: {e}") from None


def save_fig(fig, path):
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100))


def machine_info():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return {"cpu": cpu or "unknown", "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__}


def load_average():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def now_utc():
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def fmt_time(seconds):
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def fmt(x, nd=3, sign=False):
    return "—" if x is None else (f"{x:+.{nd}f}" if sign else f"{x:.{nd}f}")


def plural(n, word):
    return f"{n} {word}{'s' if n > 1 else ''}"


class Progress:
    """One stderr line per finished run: runs done / total, elapsed time, and an ETA: the seconds a
    step of the runs timed so far took, times the steps still to run, over the workers."""

    def __init__(self, workers=1):
        self.workers, self.t0, self.done = workers, time.perf_counter(), 0
        self.seconds, self.steps = 0.0, 0

    def line(self, text, rec, steps, total, steps_left, timed=True):
        self.done += 1
        if timed:
            self.seconds, self.steps = self.seconds + rec["seconds"], self.steps + steps
        eta = fmt_time(self.seconds / self.steps * steps_left / self.workers) if self.steps else "?"
        final = "diverged" if rec["final_val"] is None else f"{rec['final_val']:.4f}"
        return (f"[{self.done}/{total}] {text}: val {final} ({rec['seconds']:.1f}s) | elapsed "
                f"{fmt_time(time.perf_counter() - self.t0)}, ETA {eta}")


# =========================================================================== measuring

class MeasureAt:
    """An observer of microgpt.train (silent): calls measure(step, params) after each update whose
    step is in `steps`."""

    def __init__(self, steps, measure):
        self.steps, self.measure = steps, measure

    def before_update(self, state, loss, grad):
        return False

    def after_update(self, state, loss, drift):
        if state.step in self.steps:
            self.measure(state.step, state.params)
        return False


def steps_to_target(curve, target):
    """First step at which the val curve [(step, loss), ...] reaches `target`, linearly
    interpolated between the two eval points around the crossing; None if it never does."""
    for i, (step, loss) in enumerate(curve):
        if loss is not None and loss <= target:
            if i == 0:
                return float(step)
            step0, loss0 = curve[i - 1]
            return step0 + (loss0 - target) / (loss0 - loss) * (step - step0)
    return None


def final_loss(curve, steps, error):
    """The curve's last loss if the run finished all its steps with a finite loss, else None."""
    if error or curve[-1][0] != steps or not math.isfinite(curve[-1][1]):
        return None
    return curve[-1][1]


# =========================================================================== the lr sweep

def lr_of(opts, k):
    """The lattice of learning rates: lr0 * 2^(k/2)."""
    return opts.lr0 * 2.0 ** (k / 2)


def pick_best(sweep):
    """The k with the lowest final val loss (ties: the lower lr; a diverged run never wins)."""
    ks = sorted(sweep)
    finals = [math.inf if sweep[k]["final_val"] is None else sweep[k]["final_val"] for k in ks]
    return ks[int(np.argmin(finals))]


class Sweep:
    """One model's lr sweep on the lattice, the chosen lr and the runs at it."""

    def __init__(self):
        self.sweep = {}       # lattice k -> record (None while running)
        self.extended = 0     # lrs added beyond an edge
        self.best_k = None
        self.at_edge = False  # the best lr is still at the edge after the extensions
        self.seeds = {}       # seed -> record (None while running)

    def next_k(self, max_extend):
        """Once every sweep run is in: the k to try beyond the edge where the best lr is (while
        fewer than max_extend were added), or None after choosing best_k."""
        ks = sorted(self.sweep)
        best = pick_best(self.sweep)
        edge = best in (ks[0], ks[-1])
        if edge and self.extended < max_extend:
            self.extended += 1
            return ks[0] - 1 if best == ks[0] else ks[-1] + 1
        self.best_k, self.at_edge = best, edge
        return None

    def tried(self, opts):
        return ", ".join(f"{lr_of(opts, k):.3g}" for k in sorted(self.sweep))


# =========================================================================== the process pool

WORKER_DATA = None  # the corpus data, set once in each worker process


def _init_worker(data):
    global WORKER_DATA
    WORKER_DATA = data


def run_pool(run, data, workers, ready, finish, key, priority, cache, running):
    """Train the jobs in `ready` with run(job) in `workers` spawned processes, each with one BLAS
    thread; finish(job, record, reused) may add jobs to `ready`. A job whose key(job) is in
    `cache` (an earlier record) is not trained again. running: {future: (job, start time)}."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"  # inherited by the workers before they import numpy
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_init_worker, initargs=(data,)) as pool:
        try:
            while ready or running:
                ready.sort(key=priority)  # only the timing depends on the order
                while ready and len(running) < workers:
                    job = ready.pop(0)
                    if key(job) in cache:  # a run is a pure function of its job: done before
                        finish(job, dict(cache[key(job)], phase=job["phase"]), True)
                        continue
                    running[pool.submit(run, job)] = (job, time.perf_counter())
                if not running:
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: key(running[f][0])):
                    job, _ = running.pop(future)
                    finish(job, future.result(), False)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


class Scheduler:
    """Every unit's lr sweep (one more lr beyond an edge while the best is there), then the runs at
    the chosen lr; a subclass says what a job is (job, unit_of), what follows the choice, and what
    to log (finish)."""

    def __init__(self, units, opts, cache):
        self.units, self.opts, self.cache = units, opts, cache
        self.ready, self.records, self.running = [], [], {}

    def sweep(self, unit, ks):
        for k in ks:
            unit.sweep[k] = None
            self.ready.append(self.job(unit, "sweep", k, self.opts.seed))

    def store(self, job, rec):
        """Keep a finished run in its unit. Returns the unit if this run completed its sweep and
        its lr is chosen now (else None; an lr beyond the edge may have been added)."""
        self.records.append(rec)
        unit = self.unit_of(job)
        if job["phase"] == "seeds":
            unit.seeds[job["seed"]] = rec
        elif job["phase"] == "anchor":
            unit.anchors[(job["steps"], job["seed"])] = rec
        else:
            unit.sweep[job["lr_k"]] = rec
            if all(r is not None for r in unit.sweep.values()):
                k = unit.next_k(self.opts.max_extend)
                if k is None:
                    return unit
                self.sweep(unit, [k])
        return None

    def run(self, run_job, data, key):
        run_pool(run_job, data, self.opts.workers, self.ready, self.finish, key, self.priority,
                 self.cache, self.running)
