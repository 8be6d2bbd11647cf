"""vs_commits.py -- this working tree's training step against older commits, side by side.

    python benchmarks/vs_commits.py                        # both comparisons, ~5 minutes on 2 cores
    python benchmarks/vs_commits.py --quick                # a rough run in well under a minute
    python benchmarks/vs_commits.py --clock instructions   # instructions per step (needs valgrind)
    python benchmarks/vs_commits.py --clock instructions --only numpy --size experiments

"this tree / the old commit" (9eb093c: the fused NumPy engine) of one step: the Value engine's
(batch 1, default config; mean over --value-steps), the NumPy engine's (both norms; median over
--numpy-steps). --size experiments: the NumPy engine at n_embd 32, n_layer 2, n_head 4,
block_size 128, batch 8, float32, on names joined into lines of >= 129 characters.

Each figure is one fresh process running microgpt.train() of a checkout (old ones by `git
archive`) on the same seeded sample of the corpus, timing the step (loss and gradients, the finite
checks, Adam, the retraction) in CPU time (--clock wall: elapsed); old and new alternate, so the
machine's drift hits both alike. The table gives each side's step-wise best (each step's best over
the rounds, see figures()) and median over rounds. --clock instructions: the instructions a step
executes under valgrind's callgrind, the same every run (hash seed fixed): processes of 5 and of
5 + N steps, the difference over N. Not a time (a cache miss costs more than an add), but to 0.1%.
"""

import argparse
import inspect
import io
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VALUE_BASE = NUMPY_BASE = "9eb093c"  # the tree before the plain engine and the plain chapter

# The sizes a step is measured at: GPTConfig fields, and train()'s batch size and dtype.
SIZES = {
    "default": ({}, {"batch_size": 1}),
    "experiments": ({"n_embd": 32, "n_layer": 2, "n_head": 4, "block_size": 128},
                    {"batch_size": 8, "dtype": "float32"}),
}


def _parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer rounds and steps (rough numbers)")
    p.add_argument("--only", choices=("value", "numpy"), help="run one of the two comparisons")
    p.add_argument("--value-base", default=VALUE_BASE,
                   help=f"commit for the Value engine (default {VALUE_BASE})")
    p.add_argument("--numpy-base", default=NUMPY_BASE,
                   help=f"commit for the NumPy engine (default {NUMPY_BASE})")
    p.add_argument("--value-rounds", type=int,
                   help="alternating rounds of the Value engine (default 15, quick 1)")
    p.add_argument("--value-steps", type=int,
                   help="steps per Value-engine process (default 48, quick 8)")
    p.add_argument("--numpy-rounds", type=int,
                   help="alternating rounds per norm (default 15, quick 3)")
    p.add_argument("--numpy-steps", type=int,
                   help="steps per NumPy-engine process (default 2000, quick 300)")
    p.add_argument("--value-norms", nargs="+", choices=("rmsnorm", "sphere"), default=["rmsnorm"],
                   help="the norms of the Value-engine comparison (default rmsnorm)")
    p.add_argument("--corpus", default="names", help="docs to train on (as microgpt's --corpus)")
    p.add_argument("--clock", choices=("cpu", "wall", "instructions"), default="cpu",
                   help="cpu (default): each process's CPU time, which other programs on a shared\n"
                        "machine disturb far less; wall: elapsed time; instructions: instructions\n"
                        "per step, counted by valgrind (one round; steps 24 and 300 unless given,\n"
                        "20 at the experiments' size)")
    p.add_argument("--size", choices=tuple(SIZES), default="default",
                   help="default: the default config at batch 1; experiments: n_embd 32,\n"
                        "n_layer 2, n_head 4, block_size 128, batch 8, float32 (NumPy only)")
    p.add_argument("--probe", nargs=7, help=argparse.SUPPRESS,  # one child process: see probe()
                   metavar=("DIR", "ENGINE", "NORM", "STEPS", "DOCS", "CLOCK", "SIZE"))
    args = p.parse_args(argv)
    defaults = {"value_rounds": (15, 1), "value_steps": (48, 8), "numpy_rounds": (15, 3),
                "numpy_steps": (2000, 300)}
    if args.clock == "instructions":  # a count is the same every round: one is enough
        numpy_steps = (20, 4) if args.size == "experiments" else (300, 50)
        defaults = {"value_rounds": (1, 1), "value_steps": (24, 4), "numpy_rounds": (1, 1),
                    "numpy_steps": numpy_steps}
    for name, (full, quick) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


# ------------------------------------------------------------------------------------ child process


def probe(folder, engine, norm, steps, docs_file, clock, size="default"):
    """In a fresh process: microgpt.train() of the checkout in `folder` for `steps` steps; prints
    the time of each step (ms) as one line of JSON. Older trees take a progress(info) callback that
    reports the running mean after every step; newer ones an observer whose after_update is called
    after every step."""
    sys.path[0] = folder  # that checkout's modules, not this tree's
    if clock == "cpu":  # train() times its steps with time.perf_counter(): make it CPU time
        time.perf_counter = time.process_time
    import microgpt as mg

    docs = Path(docs_file).read_text(encoding="utf-8").split("\n")
    vocab = mg.build_vocab(docs)
    model, run = SIZES[size]
    cfg = mg.GPTConfig(vocab_size=len(vocab) + 1, norm=norm, **model)
    kw = dict(steps=steps, engine=engine, eval_every=steps, **run)
    if "observer" in inspect.signature(mg.train).parameters:
        times = []

        class StepTimer:  # an observer: train() calls it twice a step
            last = time.perf_counter()

            def before_update(self, state, loss, grad):
                return False

            def after_update(self, state, loss, drift):
                now = time.perf_counter()
                times.append((now - self.last) * 1e3)
                self.last = now
                return False

        try:
            state = mg.train(docs, docs[:20], vocab, cfg, observer=StepTimer(), **kw)
        except ArithmeticError as e:  # train() raises the engine's NumericError when it diverges
            raise SystemExit(f"training stopped: step {len(times) + 1}: {e}") from None
    else:
        sums = [0.0]

        def progress(info):
            sums.append(info["ms_per_step"] * info["step"])

        state = mg.train(docs, docs[:20], vocab, cfg, progress=progress, **kw)
        times = [b - a for a, b in zip(sums, sums[1:])]
    if state.error:  # older trees: train() returns its state, .error saying why it stopped
        raise SystemExit(f"training stopped: {state.error}")
    print(json.dumps(times))


def run_probe(folder, engine, norm, steps, docs_file, clock="cpu", size="default"):
    """One process's step times (ms); for clock "instructions", [instructions per step]."""
    if clock == "instructions":
        return [count_step(folder, engine, norm, steps, docs_file, size)]
    out = _probe_process(folder, engine, norm, steps, docs_file, clock, size)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _probe_process(folder, engine, norm, steps, docs_file, clock, size, prefix=()):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONHASHSEED="0")
    cmd = [*prefix, sys.executable, str(Path(__file__).resolve()), "--probe", str(folder), engine,
           norm, str(steps), docs_file, "cpu" if clock == "instructions" else clock, size]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=folder)
    if out.returncode != 0:
        raise RuntimeError(f"probe in {folder} failed:\n{out.stderr[-2000:]}")
    return out


CALLGRIND = ("valgrind", "--tool=callgrind", f"--callgrind-out-file={os.devnull}")
WARMUP_STEPS = 5  # not counted: the first steps of a process also grow Python's allocator


def count_step(folder, engine, norm, steps, docs_file, size="default"):
    """Instructions per training step, counted by callgrind: (count of WARMUP_STEPS + steps steps -
    count of WARMUP_STEPS steps) / steps. Everything but the extra steps (start-up, loading, the
    first steps, the evaluations) is the same in both processes."""
    if shutil.which("valgrind") is None:
        raise SystemExit("vs_commits: --clock instructions needs valgrind (apt install valgrind)")

    def count(n):
        out = _probe_process(folder, engine, norm, n, docs_file, "instructions", size, CALLGRIND)
        return int(re.search(r"Collected : (\d+)", out.stderr).group(1))
    return (count(WARMUP_STEPS + steps) - count(WARMUP_STEPS)) / steps


# ----------------------------------------------------------------------------------- old code


def export_commit(commit, into):
    """The files of `commit` in a new folder under `into` (git archive), or a clear error."""
    def git(*cmd):
        try:
            return subprocess.run(["git", "-C", str(ROOT), *cmd], capture_output=True, check=True)
        except FileNotFoundError:
            raise SystemExit("vs_commits: needs git (the old code comes from git)") from None
        except subprocess.CalledProcessError as e:
            raise SystemExit(f"vs_commits: cannot read commit {commit} from the repository at "
                             f"{ROOT} (a shallow clone? try `git fetch --unshallow`): "
                             f"{e.stderr.decode(errors='replace').strip()}") from None
    sha = git("rev-parse", "--verify", f"{commit}^{{commit}}").stdout.decode().strip()
    folder = Path(into) / sha[:12]
    folder.mkdir()
    with tarfile.open(fileobj=io.BytesIO(git("archive", "--format=tar", sha).stdout)) as tar:
        tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return folder


# --------------------------------------------------------------------------------- comparison

def side_by_side(new_dir, old_dir, engine, norm, steps, rounds, docs_file, log, clock="cpu",
                 size="default"):
    """(new runs, old runs): each run one process's list of step times (ms), alternating rounds."""
    runs = {"new": [], "old": []}
    for r in range(rounds):
        for side in ("new", "old") if r % 2 == 0 else ("old", "new"):
            log(f"  {engine} {norm}: round {r + 1} of {rounds}, {side} ...")
            folder = new_dir if side == "new" else old_dir
            runs[side].append(run_probe(folder, engine, norm, steps, docs_file, clock, size))
    return runs["new"], runs["old"]


# this tree / the old commit, at most: what a change must keep, per (engine, size)
TARGETS = {("value", "default"): 1.15, ("numpy", "default"): 1.60, ("numpy", "experiments"): 1.10}


def figures(engine, runs):
    """(one figure per process, the step-wise best): the mean step (Value engine: 48 different docs)
    or the median step (NumPy engine) of each process; and the same figure of each step's best over
    all rounds. Every round runs the same docs from the same weights, so step i is the same work in
    every round; another program on the machine only ever adds time, so a step's best over rounds is
    its least disturbed measurement."""
    figure = statistics.fmean if engine == "value" else statistics.median
    return [figure(run) for run in runs], figure([min(step) for step in zip(*runs)])


def row(engine, norm, base, steps, new_runs, old_runs, clock="cpu", size="default"):
    (new, new_best), (old, old_best) = figures(engine, new_runs), figures(engine, old_runs)
    ratios = [a / b for a, b in zip(new, old)]
    what = "counted" if clock == "instructions" else "mean" if engine == "value" else "median"
    scale = 1e-6 if clock == "instructions" else 1.0  # instructions in millions
    target = TARGETS[engine, size]
    verdict = "met" if new_best / old_best <= target else "not met"
    return (f"| {engine}, {size} size | {norm} | {base} | {len(new)} x {steps} steps ({what}) | "
            f"{new_best * scale:.3f} / {statistics.median(new) * scale:.3f} | "
            f"{old_best * scale:.3f} / {statistics.median(old) * scale:.3f} | "
            f"{new_best / old_best:.3f}x | {statistics.median(ratios):.3f}x | "
            f"at most {target:.2f}x: {verdict} | {' '.join(f'{x:.2f}' for x in ratios)} |")


def long_lines(docs, length):
    """docs joined with spaces into lines of at least `length` characters."""
    lines, line = [], ""
    for doc in docs:
        line = f"{line} {doc}" if line else doc
        if len(line) >= length:
            lines.append(line)
            line = ""
    return lines


def table(args, log):
    """The markdown rows of both comparisons (or the one --only asks for)."""
    sys.path.insert(0, str(ROOT))
    import microgpt as mg

    docs = list(mg.load_corpus(args.corpus))
    random.Random(0).shuffle(docs)  # a fixed sample: both sides see the same docs in the same order
    unit = "million instructions/step" if args.clock == "instructions" else "ms/step"
    rows = [f"| engine | norm | against | rounds x steps (per process) | this tree {unit}: "
            f"step-wise best / median of rounds | old {unit}: the same | ratio, step-wise best | "
            "median of per-round ratios | target (on the step-wise best) | per-round ratios |",
            "|" + "---|" * 10]
    with tempfile.TemporaryDirectory(prefix="vs_commits_") as tmp:
        docs_file = str(Path(tmp) / "docs.txt")
        if args.size == "experiments":  # sequences that fill block_size: names in long lines
            docs = long_lines(docs, SIZES["experiments"][0]["block_size"] + 1)
        Path(docs_file).write_text("\n".join(docs[:5000]), encoding="utf-8")
        plan = []
        if args.only in (None, "value") and args.size == "default":
            plan += [("value", norm, args.value_base, args.value_steps, args.value_rounds)
                     for norm in args.value_norms]
        if args.only in (None, "numpy"):
            plan += [("numpy", norm, args.numpy_base, args.numpy_steps, args.numpy_rounds)
                     for norm in ("rmsnorm", "sphere")]
        folders = {}
        for engine, norm, base, steps, rounds in plan:
            if base not in folders:
                log(f"  git archive {base} ...")
                folders[base] = export_commit(base, tmp)
            new, old = side_by_side(ROOT, folders[base], engine, norm, steps, rounds, docs_file,
                                    log, args.clock, args.size)
            rows.append(row(engine, norm, base, steps, new, old, args.clock, args.size))
    return rows


def main(argv=None):
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    if args.probe:
        folder, engine, norm, steps, docs_file, clock, size = args.probe
        return probe(folder, engine, norm, int(steps), docs_file, clock, size)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)
    cmd = " ".join(["python benchmarks/vs_commits.py", *(sys.argv[1:] if argv is None else argv)])
    print("\n".join([f"Command: `{cmd}`", ""] + table(args, log)))


if __name__ == "__main__":
    main()
