"""experiments/common.py -- what the experiment scripts share: the command line's parser
and argument types, the output folder and files, the steps to a target loss, and the
process pool that trains the runs."""
import argparse
import ctypes.util
import gc
import json
import math
import multiprocessing
import os
import platform
import shlex
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # microgpt.py lives at the repo root

from harness.errors import EXIT_DIVERGED  # noqa: E402
from harness.run_files import RunLock, atomic_write, check_readable_file  # noqa: E402
from harness.shell import DeferSigint, Shell, say  # noqa: E402
from microgpt import NumericError, train  # noqa: E402
from settings import InputError, check  # noqa: E402

# ==================================================================== the command line

class Parser(argparse.ArgumentParser):
    def __init__(self, prog, doc):  # --help shows the module docstring as written, examples too
        super().__init__(prog=prog, description=doc,
                         formatter_class=argparse.RawDescriptionHelpFormatter)

    def error(self, message):  # one line, exit 2 (argparse would print the whole usage first)
        raise InputError(f"{message} (see --help)")


def parse(parser, argv, quick):
    """The options; with --quick, the sizes in `quick` are the defaults (flags win)."""
    opts = parser.parse_args(argv)
    if opts.quick:
        parser.set_defaults(**quick)
        opts = parser.parse_args(argv)
    if opts.out is not None:  # an empty --out is refused at once, never taken for the default
        check("out", opts.out, "--out")
    return opts


def int_list(text):
    """"64,128" -> [64, 128]: positive integers."""
    try:
        xs = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") \
            from None
    if not xs or not all(x > 0 for x in xs):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return xs


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


def log(line):
    print(line, file=sys.stderr, flush=True)


class Diverged(Exception):
    """Every run of a model diverged: there is nothing to compare (one line, exit 1)."""


class ExperimentShell(Shell):
    """harness/shell.py's shell (signals, exit codes, one-line errors) for an
    experiment: the --out folder it holds is released however it ends, and an
    interrupted grid says what it kept."""

    def __init__(self, prog):
        super().__init__(prog)
        self.locks, self.kept = [], ""

    def close(self):
        for lock in self.locks:
            lock.__exit__()

    def interrupted(self):
        return f"interrupted; {self.kept or 'nothing was written'}"

    def report(self, e):
        if isinstance(e, Diverged):
            say(f"{self.prog}: {e}")
            return EXIT_DIVERGED
        return super().report(e)


SHELL = ExperimentShell("experiment")  # the running script's (cli() makes it)


def cli(main):
    """Decorate main(argv) -> markdown or None: run it inside the shell, print the
    markdown; bad input is one line and exit 2, Ctrl-C, SIGTERM or SIGHUP one line and
    exit 130."""
    def run(argv=None):
        global SHELL
        SHELL = ExperimentShell(os.path.basename(main.__code__.co_filename))
        with SHELL as shell:
            md = main(sys.argv[1:] if argv is None else list(argv))
            if md:
                print(md)
        gc.collect()  # an interruption's traceback held the pool's queues: their semaphores are
        return shell.exit_code  # released now, not reported as leaked when the program ends
    return run


def save_runs(write, path, n):
    """write() the record of an unfinished grid (n finished runs, in `path`) and name it
    in the line an interruption prints; a signal meanwhile waits until both are done, so
    the line says what the file holds."""
    with DeferSigint() as deferred:
        write()
        SHELL.kept = (f"the {n} finished runs are saved in {path}: the same command "
                      "continues the grid")
    if deferred.hit:
        raise KeyboardInterrupt


def command_line(script, argv):
    """The command, to record: a path by its path from the repository's root, or one
    outside the repository by its last part."""
    words = []
    for a in argv:
        flag, eq, value = a.rpartition("=") if a.startswith("--") else ("", "", a)
        if os.sep in value and os.path.isabs(value) or value.startswith(os.pardir):
            relative = os.path.relpath(os.path.abspath(value), REPO)
            value = os.path.basename(value) if relative.startswith(os.pardir) else relative
        words.append(flag + eq + value)
    return " ".join([f"python experiments/{script}"] + [shlex.quote(w) for w in words])


# =============================================================================== files

def output_folder(out, study="", quick=False):
    """The --out folder (default results/<study>[-quick]), created and held until the
    script ends, as microgpt holds its own: a second invocation on it is refused ("in
    use by ...")."""
    out = out or os.path.join(HERE, "results", study + ("-quick" if quick else ""))
    lock = RunLock(out).__enter__()  # (InputError: not a writable folder, or in use by a run)
    SHELL.locks.append(lock)
    lock.claim()
    return out


def write_json(path, raw):
    atomic_write(path, lambda f: f.write(json.dumps(raw, separators=(",", ":")).encode("utf-8")))


def write_text(path, text):
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


MAX_RESULTS_BYTES = 256 * 2**20  # a results.json of a long grid is a few MB


def read_json(path, what):
    """An earlier results file, a JSON object with "options" (an object) and "runs" (a
    list); InputError with one line when it cannot be read (a FIFO or device is refused,
    never waited on)."""
    check_readable_file(path, "results file")
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.loads(f.read(MAX_RESULTS_BYTES + 1) or "null")
    except (OSError, ValueError, RecursionError) as e:
        raise InputError(f"cannot {what} {path!r}: {type(e).__name__}: {e}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("runs"), list) or \
            not isinstance(raw.get("options"), dict):
        raise InputError(f"cannot {what} {path!r}: not a file of this script (no 'options' "
                         "and 'runs')")
    return raw


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def is_loss(x):
    """A loss as a record holds it: finite, >= 0 (a cross-entropy)."""
    return is_number(x) and x >= 0


ROUND_TRIP = (int, float, pos_int, nonneg_int, int_list)


def check_options(options, parser):
    """The options of a results.json are the parser's flags, each a value its flag's
    type gives back unchanged: "seeds": 1e9, "seeds": 0, a list written as a string or a
    NaN lr are refused, as the flags would be."""
    actions = {a.dest: a for a in parser._actions}
    for name, value in options.items():
        action = actions.get(name)
        if action is None:
            raise InputError(f"an unknown option {name!r}")
        if action.nargs == 0:  # a switch
            ok = isinstance(value, bool)
        elif value is None or action.type not in ROUND_TRIP:  # a path: the study's checks read it
            ok = True
        else:
            text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
            try:
                ok = value == [] or not isinstance(value, (bool, str)) and \
                    action.type(text) == value  # ([]: what a study's check left of a list)
            except (ValueError, TypeError, argparse.ArgumentTypeError):
                ok = False
        if not ok:
            raise InputError(f"option {name!r} is {value!r}, not a value of its flag")


def pyplot():
    """matplotlib.pyplot on the Agg backend: files only, no display needed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_fig(fig, path):
    """Write the figure as a PNG (laid out tight) and close it."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100))
    plt.close(fig)


FLUSHED = False  # this process flushes subnormal floats to zero (flush_subnormals)


def flush_subnormals(on=True):
    """This process's CPU flushes subnormal floats (below float32's 1.2e-38) to zero
    from now on, or (on=False) keeps them: MXCSR's FTZ and DAZ bits, on x86-64 Linux
    only. A collapsed attention's weights are such floats, which make some CPUs several
    times slower; a step's loss and gradients stay the same bit for bit
    (benchmarks/subnormal.py), a long run's last bits may not, as on another CPU."""
    global FLUSHED
    libm = ctypes.util.find_library("m")
    if platform.system() != "Linux" or platform.machine() != "x86_64" or not libm:
        return
    libm, env = ctypes.CDLL(libm), (ctypes.c_uint32 * 8)()  # glibc's fenv_t: x87 state, MXCSR
    if libm.fegetenv(env) == 0:
        env[7] = env[7] | 0x8040 if on else env[7] & ~0x8040  # FTZ (bit 15), DAZ (bit 6)
        FLUSHED = on if libm.fesetenv(env) == 0 else FLUSHED


def machine_info():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    try:  # the BLAS NumPy was built with (NumPy 1.25 and later say)
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = f"{blas['name']} {blas.get('version', '')}".strip()
    except (TypeError, KeyError):
        blas = "unknown"
    return {"cpu": cpu or "unknown", "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__, "blas": blas,
            "subnormals": "flushed to zero" if FLUSHED else "kept"}


def load_average():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def fmt_time(seconds):
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def fmt(x, nd=3):
    return "—" if x is None else f"{x:.{nd}f}"


# =========================================================================== measuring

class MeasureAt:
    """A silent observer of microgpt.train: measure(step, params) after the updates at
    `steps`. It holds the run's state as train() last showed it: its last good step
    (train_observed)."""

    def __init__(self, steps, measure):
        self.steps, self.measure, self.state = steps, measure, None

    def before_update(self, state, loss, grad):
        self.state = state
        return False

    def after_update(self, state, loss, drift):
        if state.step in self.steps:
            self.measure(state.step, state.params)
        return False


def train_observed(observer, *args, **kwargs):
    """microgpt.train(*args, observer=observer, **kwargs); a run that diverges (the
    engine's NumericError) is the last good state the observer holds, its .error naming
    the step. A failure before any update (the model's code, not the lr) is let
    through."""
    try:
        return train(*args, observer=observer, **kwargs)
    except NumericError as e:
        if observer.state is None or observer.state.step == 0:
            raise
        observer.state.error = f"step {observer.state.step + 1}: {e}"
        return observer.state


def steps_to_target(curve, target):
    """The step where [(step, loss), ...] reaches `target` (linear between), or None."""
    for i, (step, loss) in enumerate(curve):
        if loss is not None and loss <= target:
            if i == 0:
                return float(step)
            step0, loss0 = curve[i - 1]
            return step0 + (loss0 - target) / (loss0 - loss) * (step - step0)
    return None


# ======================================================================== the lr sweep

def eval_points(steps, n_log, n_lin):
    """Steps at which the val curve is measured (besides step 0): n_lin evenly spaced up
    to the last step, and before the first of them up to n_log log-spaced ones (dense
    early)."""
    lin = np.linspace(0, steps, n_lin + 1)[1:].round().astype(int)
    early = np.geomspace(1, lin[0], n_log + 1)[:-1].round().astype(int)
    return sorted(p for p in set(lin.tolist()) | set(early.tolist()) if 0 < p <= steps)


def tuning_seeds(opts):
    """The seeds every lr of a sweep runs on: --seed and the next --tune-seeds - 1."""
    return range(opts.seed, opts.seed + opts.tune_seeds)


def paired_seeds(opts):
    """The --seeds seeds each unit runs at its chosen lr, after the tuning seeds."""
    return range(opts.seed + opts.tune_seeds, opts.seed + opts.tune_seeds + opts.seeds)


# ==================================================================== the process pool

WORKER_DATA = None  # the corpus data, set once in each worker process


def _init_worker(data):
    """A worker: the data, Ctrl-C left to the parent (which ends the workers itself), a
    watch that ends this process if the parent is gone (kill -9: nothing else would),
    NumPy quiet about overflow: a run that diverges (a sweep's largest lr often does) is
    recorded as diverged, without a burst of RuntimeWarnings on the way; and subnormal
    floats flushed to zero (flush_subnormals)."""
    global WORKER_DATA
    WORKER_DATA = data
    flush_subnormals()
    np.seterr(over="ignore", invalid="ignore", divide="ignore")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # (blocked while it started)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()


def _exit_with_parent(parent):
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


class Pool(ProcessPoolExecutor):
    """A process pool whose workers start with SIGINT blocked (a process inherits its
    signal mask): a Ctrl-C while one is starting reaches only this process, which ends
    the workers itself, never a worker halfway through its imports (a traceback)."""

    def submit(self, fn, /, *args, **kwargs):  # (a submit is what starts a worker)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return super().submit(fn, *args, **kwargs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@contextmanager
def pool(data, workers):
    """`workers` spawned processes, each with one BLAS thread and `data` as WORKER_DATA.
    However the block ends (an error, Ctrl-C, SIGTERM), the queued runs are cancelled
    and the workers ended before it is left: no worker outlives the script."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"  # inherited by the workers before they import numpy
    executor = Pool(max_workers=workers, initializer=_init_worker, initargs=(data,),
                    mp_context=multiprocessing.get_context("spawn"))
    try:
        yield executor
    except BaseException:
        with DeferSigint():  # (a second Ctrl-C now would leave workers behind)
            stop(executor)
        raise
    executor.shutdown()


def stop(executor):
    """Cancel what is queued and end the running workers now (SIGTERM), then wait for
    them and for the pool's manager thread. That thread holds the pool's queues; their
    semaphores are released when the queues are collected, and leave() ends the program
    with os._exit, where nothing else would release them (the resource tracker then
    warns of leaked semaphores). shutdown(wait=False) lets go of the thread without
    waiting for it: it is joined here."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    manager = getattr(executor, "_executor_manager_thread", None)
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()
    if manager is not None:
        manager.join()
    executor.shutdown(wait=True)
