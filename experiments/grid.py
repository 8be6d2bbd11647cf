"""The grid runner of the copy-task studies (repeat.py, alpha.py): the flags and their
door checks, the plan (each unit's lr sweep on the tuning seeds, then the paired seeds
at its lr), the pool, --deadline, resume from results.json and --from-json, all through
one validator. A study gives its name, parser, --quick sizes, report and plots (Study).
"""
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import asdict, dataclass, replace
from types import SimpleNamespace

import common
from common import InputError, fmt, fmt_time, log
from copytask import RECORD, VARIANTS, Job, Run, held_out, model_config, run_job

from harness import memory

RANK_AT = 1.0  # a sweep ranks an lr by the steps to copy-2 <= this loss (nats)
# a run's inputs besides its job (a results.json made with others: not continued)
SAME = ("batch_size", "n_embd", "n_head", "n_layer", "lr0", "val_docs", "split_seed",
        "n_log", "n_lin", "seed", "tune_seeds")


# ============================================================================ the grid

def lr_of(opts, k):
    """The lattice of lrs: lr0 * 10^(k/2) (k = -1, 0, 1: 0.00316, 0.01, 0.0316)."""
    return opts.lr0 * 10.0 ** (k / 2)


def run_key(r):
    return (r.norm, r.variant, r.T, r.steps, r.lr_k, r.seed)


def goodness(rec):
    """How the sweep ranks a run (lower is better): the steps to copy-2 <= 1.0 nat, then
    (for runs that never get there) the final copy-2 loss; a diverged run is last."""
    reached = rec.steps_to[str(RANK_AT)]
    final = math.inf if rec.copy2 is None else rec.copy2
    return (math.inf if reached is None else reached, final)


def beyond_edge(ks, best, extended, max_extend):
    """The lattice k one past the edge of the swept ks where the best lr is, while fewer
    than max_extend lrs were added; None: the best lr is chosen."""
    if best in (ks[0], ks[-1]) and extended < max_extend:
        return ks[0] - 1 if best == ks[0] else ks[-1] + 1
    return None


def best_k(runs_by_k):
    """The lattice k of the sweep's best lr (the lowest k on a tie): an lr ranks by its
    worst tuning seed. runs_by_k: k -> that lr's runs."""
    return min(sorted(runs_by_k), key=lambda k: max(goodness(r) for r in runs_by_k[k]))


class Unit:
    """A norm and variant at one T: its lr sweep on the lattice (ranked by goodness),
    the chosen lr and the runs at it."""

    def __init__(self, norm, variant, T):
        self.norm, self.variant, self.T, self.key = norm, variant, T, (norm, variant, T)
        self.sweep = {}       # lattice k -> {tuning seed: record (None while running)}
        self.extended = 0     # lrs added beyond an edge
        self.best_k = None
        self.at_edge = False  # the best lr is still at the edge after the extensions
        self.seeds = {}       # seed -> record (None while running)

    def next_k(self, max_extend):
        """the k past the best lr's edge (max_extend times), or None."""
        ks = sorted(self.sweep)
        best = best_k({k: by_seed.values() for k, by_seed in self.sweep.items()})
        k = beyond_edge(ks, best, self.extended, max_extend)
        if k is not None:
            self.extended += 1
            return k
        self.best_k, self.at_edge = best, best in (ks[0], ks[-1])
        return None

    def add(self, rec):
        """Keep a finished run by k (sweep) or seed (seeds)."""
        if rec.phase == "sweep":
            self.sweep.setdefault(rec.lr_k, {})[rec.seed] = rec
        else:
            self.seeds[rec.seed] = rec


def units_of(opts):
    """(norm, variant, T) -> Unit, in the order the grid runs them."""
    pairs = [(n, "default") for n in ("rmsnorm", "sphere")[:1 + opts.sphere_default]]
    pairs += [(VARIANTS[v][0], v) for v in opts.variants]
    return {(n, v, T): Unit(n, v, T) for T in opts.contexts for n, v in pairs}


class Grid:
    """Every unit's lr sweep on the tuning seeds, then --seeds paired seeds at its lr,
    in a pool; stops starting runs at --deadline (the runs under way finish; the same
    command continues later)."""
    MODEL = ("n_log", "n_lin", "batch_size", "n_embd", "n_head", "n_layer")  # every job's options

    def __init__(self, units, opts, cache, save=None):
        self.units, self.opts, self.cache, self.save = units, opts, cache, save
        self.ready, self.records, self.running = [], [], {}
        self.n_trained, self.left_unrun, self.t0 = 0, 0, time.perf_counter()

    def job(self, unit, phase, k, seed):
        o = self.opts
        return Job(*unit.key, steps=o.steps, lr=lr_of(o, k), lr_k=k, seed=seed,
                   phase=phase, **{m: getattr(o, m) for m in self.MODEL})

    def describe(self, unit):  # how the log and the errors name a unit: sphere/default at T=64
        return f"{'/'.join(unit.key[:-1])} at T={unit.key[-1]}"

    def chosen(self, unit):
        """The unit's lr is chosen (its seeds queued): the note to log."""
        tried = ", ".join(f"{lr_of(self.opts, k):.3g}" for k in sorted(unit.sweep))
        return (f"  -> {self.describe(unit)}: lr {lr_of(self.opts, unit.best_k):.3g} (tried "
                f"{tried}" + (f"; extended {unit.extended}x" if unit.extended else "")
                + ("; STILL AT THE EDGE" if unit.at_edge else "") + ")")

    def finish(self, j, rec, reused):
        """Keep a finished run, save them all if it was trained now, and log it and what
        it unlocked."""
        note = self.store(j, rec)
        if not reused:
            self.n_trained += 1
            self.save(self.records)
            log(f"[{len(self.records)}] T={j.T} {j.norm}/{j.variant} {j.phase} "
                f"steps={j.steps} lr={j.lr:.3g} seed={j.seed}: copy2 "
                f"{fmt(rec.copy2)}, ablated {fmt(rec.copy2_ablated)}, copy1 "
                f"{fmt(rec.copy1)}, steps to 1.0: {fmt(rec.steps_to['1.0'], 0)} "
                f"({fmt_time(rec.seconds)}) | elapsed "
                f"{fmt_time(time.perf_counter() - self.t0)}, {len(self.ready)} ready")
        if note:
            log(note)
        self.past_deadline()

    def grid(self, run_job, data):
        """Every unit's sweep, k = -N..N (N: --sweep), and what it unlocks: the records
        (from the cache when there), how many were trained now."""
        for unit in self.units.values():
            self.sweep(unit, range(-self.opts.sweep, self.opts.sweep + 1))
        self.run(run_job, data)
        return self.records, self.n_trained

    def past_deadline(self):
        """After --deadline: no new run starts; results.json's are kept."""
        if getattr(self.opts, "deadline", None) and time.time() >= self.opts.deadline:
            kept = [job for job in self.ready if run_key(job) in self.cache]
            self.left_unrun += len(self.ready) - len(kept)
            self.ready[:] = kept

    def sweep(self, unit, ks):
        for k in ks:
            unit.sweep[k] = dict.fromkeys(common.tuning_seeds(self.opts))
            self.ready += [self.job(unit, "sweep", k, seed) for seed in unit.sweep[k]]

    def store(self, job, rec):
        """Keep a finished run in its unit. If it completes the sweep: one more lr
        beyond the edge, or the chosen lr's runs (and chosen(unit)'s note to log is
        returned)."""
        self.records.append(rec)
        unit = self.units[(job.norm, job.variant, job.T)]
        unit.add(rec)
        if job.phase != "sweep" or None in [r for by_seed in unit.sweep.values()
                                               for r in by_seed.values()]:
            return None
        k = unit.next_k(self.opts.max_extend)
        if k is not None:
            self.sweep(unit, [k])
            return None
        for seed in common.paired_seeds(self.opts):
            unit.seeds[seed] = None
            self.ready.append(self.job(unit, "seeds", unit.best_k, seed))
        return self.chosen(unit)

    def priority(self, j):  # the shortest T first, sweeps before seeds, the default arms first
        unit = list(self.units).index((j.norm, j.variant, j.T))
        return (j.T, j.phase != "sweep", j.seed, unit, abs(j.lr_k))

    def run(self, run_job, data):
        """Train the ready jobs with run_job(job) in a common.pool(); finish(job,
        record, reused) may add jobs. A run is a pure function of its job: one whose
        run_key(job) is in the cache is reused."""
        ready, running, workers, key = self.ready, self.running, self.opts.workers, run_key
        with common.pool(data, workers) as executor:
            self.past_deadline()
            while ready or running:
                ready.sort(key=self.priority)  # only the timing depends on the order
                while ready and len(running) < workers:
                    job = ready.pop(0)
                    if key(job) in self.cache:
                        self.finish(job, replace(self.cache[key(job)], phase=job.phase), True)
                        continue
                    running[executor.submit(run_job, job)] = (job, time.perf_counter())
                if not running:
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: key(running[f][0])):
                    job, _ = running.pop(future)
                    self.finish(job, future.result(), False)
        self.check_diverged()

    def finished(self):
        """Every planned run is in: none waits, --deadline kept none from starting."""
        return not self.ready and not self.left_unrun

    def check_diverged(self):
        """common.Diverged (one line, exit 1) if every run of a model at its chosen lr
        diverged (of those that ran: a --deadline leaves the rest of a unit's seeds
        unrun, as None)."""
        for unit in self.units.values():
            ran = [r for r in unit.seeds.values() if r is not None]
            if ran and all(r.final_val is None for r in ran):
                raise common.Diverged(f"error: every run of {self.describe(unit)} at its "
                                      "chosen lr diverged: nothing to compare; try a smaller "
                                      "--lr0 (the finished runs are saved in results.json)")


# ======================================================================= files and CLI

@dataclass(frozen=True)
class Study:
    """What a study of the copy task has of its own: its name, parser, --quick sizes,
    report(records, opts, info, complete) -> (summary, markdown) and plots(records,
    opts, out), which writes its figures."""
    name: str
    parser: Callable
    quick: dict
    report: Callable
    plots: Callable


def write_all(study, records, opts, info, out, complete):
    summary, md = study.report(records, opts, info, complete)
    common.write_json(os.path.join(out, "results.json"), {
        "complete": complete, "options": vars(opts), "info": info, "summary": asdict(summary),
        "runs": [r.as_json() for r in records]})
    common.write_text(os.path.join(out, "results.md"), md)
    study.plots(records, opts, out)
    return md


def deadline(text):
    """"05:10" -> that UTC time as a Unix time, the one within 12 hours of now: a time a
    few hours past (yesterday's, just after midnight) is a deadline already passed: no
    run starts."""
    try:
        hh, mm = (int(x) for x in text.split(":"))
        assert 0 <= hh < 24 and 0 <= mm < 60
    except (ValueError, AssertionError):
        raise common.argparse.ArgumentTypeError(f"expected HH:MM (UTC), got {text!r}") from None
    now = time.time()
    t = now - now % 86400 + hh * 3600 + mm * 60
    if t > now + 12 * 3600:
        return t - 86400
    return t + 86400 if now - t > 12 * 3600 else t


def variant_list(text):
    xs = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in xs if x not in VARIANTS]
    if bad:
        raise common.argparse.ArgumentTypeError(
            f"unknown variant(s) {', '.join(bad)}; known: {', '.join(VARIANTS)}")
    return xs


FLAGS = {  # name -> (type, default, help)
    "workers": (common.pos_int, 1, "worker processes"),
    "seeds": (common.pos_int, 5, "paired seeds per unit at its chosen lr, after the tuning seeds"),
    "seed": (int, 0, "the first seed: the lr sweep's runs use the first --tune-seeds"),
    "tune_seeds": (common.pos_int, 1, "seeds every lr of the sweep runs on (an lr ranks by its "
                                      "worst)"),
    "lr0": (float, 0.01, "the lr lattice's base lr0"),
    "sweep": (common.nonneg_int, 1, "the sweep's lrs: k = centre-N..centre+N on the lattice"),
    "max_extend": (common.nonneg_int, 2, "lrs added, one at a time, beyond an edge where the best "
                                         "lr is"),
    "batch_size": (common.pos_int, 8, "documents per step"),
    "n_embd": (common.pos_int, 32, "embedding width"),
    "n_head": (common.pos_int, 4, "attention heads"),
    "n_layer": (common.pos_int, 2, "layers"),
    "val_docs": (common.pos_int, 256, "held-out documents the val loss is measured on"),
    "split_seed": (int, 42, "seed of the held-out split"),
    "n_lin": (common.pos_int, 40, "evenly spaced eval points per run"),
    "n_log": (common.pos_int, 8, "log-spaced eval points before those"),
    "max_memory": (float, 4.0, "refuse a grid whose memory, estimated before anything runs, is "
                               "larger (GB)"),
}
# each flag's row of the settings table, checked at the door (settings.check)
RULES = {"seed": "seed", "split_seed": "seed", "lr0": "lr", "steps": "steps",
         "batch_size": "batch_size", "n_embd": "n_embd", "n_head": "n_head", "n_layer": "n_layer",
         "max_memory": "max_memory", "contexts": "block_size"}
MAX_RUNS = 20000  # a grid's planned runs, at most: the largest one run so far had a few hundred


def parser(name, doc, **defaults):
    """The flags; a study built on this grid gives its name, doc and own defaults."""
    p = common.Parser(f"{name}.py", doc)
    add = p.add_argument
    add("--out", help=f"output directory (default experiments/results/{name}[-quick]/)")
    add("--quick", action="store_true", help="smoke test in seconds: short runs at small T, "
        "few seeds, one lr per unit, 16 held-out documents (the defaults below become these; "
        "explicit flags still win)")
    add("--from-json", metavar="PATH", help="train nothing: write results.md and the figures "
        "again from a results.json (into --out, default PATH's folder)")
    for flag, (kind, default, text) in FLAGS.items():
        default = defaults.get(flag, default)
        add("--" + flag.replace("_", "-"), type=kind, default=default,
            help=f"{text} (default {default})")
    contexts = defaults.get("contexts", [64, 128, 256])
    add("--contexts", type=common.int_list, default=contexts,
        help=f"context lengths T (default {','.join(map(str, contexts))})")
    add("--steps", type=common.pos_int, default=10000,
        help="optimizer steps per run, S (default 10000)")
    variants = defaults["variants"]
    add("--variants", type=variant_list, default=variants, help="arms besides the defaults "
        f"(default {','.join(variants)}; known: {', '.join(VARIANTS)})")
    add("--no-sphere-default", dest="sphere_default", action="store_false",
        default=defaults.get("sphere_default", True),
        help="leave out the sphere/default unit (an arm's r is against rmsnorm/default)")
    add("--deadline", type=deadline, metavar="HH:MM", help="start no run after this UTC time; "
        "the runs under way finish, the report is written (the same command continues later)")
    return p


def check_memory(opts):
    """InputError unless --workers runs of the longest T fit in --max-memory, before any
    run (harness/memory.py's estimate: a training step, the loss per step, the run's
    documents: steps x batch of at most T characters; this process keeps them too)."""
    cfg = model_config(SimpleNamespace(T=max(opts.contexts), norm="sphere", variant="default",
                                       n_embd=opts.n_embd, n_head=opts.n_head,
                                       n_layer=opts.n_layer))
    workers, n = opts.workers, opts.steps * opts.batch_size
    docs = memory.corpus_memory(n, n * cfg.block_size)
    run = memory.step_memory(cfg, opts.batch_size, "numpy", 8) + memory.history_memory(
        cfg, opts.steps)
    need = workers * (run + docs) + docs
    most, why = memory.limit(opts.max_memory)
    if need > most:
        raise InputError(f"this grid would need about {memory.gigabytes(need)} of memory "
                         f"({workers} worker{'s' if workers > 1 else ''}, each a run of n_embd "
                         f"{cfg.n_embd}, n_layer {cfg.n_layer}, block_size {cfg.block_size}, "
                         f"batch {opts.batch_size}); {why}")


def check_options(opts):
    """The flags by the settings table's rules (RULES: --seed -1 is refused here, not by
    train() in a worker after other runs), the grid's size (--seeds 10^8 would fill the
    memory with plans before the first run) and every lr the sweeps may reach, before
    anything is allocated or trained."""
    for name, row in RULES.items():
        values = getattr(opts, name)
        for value in values if isinstance(values, list) else [values]:
            common.check(row, value, "--" + name.replace("_", "-"))
    reach, units = opts.sweep + opts.max_extend, len(units_of(opts))
    n_runs = units * ((2 * reach + 1) * opts.tune_seeds + opts.seeds)
    if n_runs > MAX_RUNS:
        raise InputError(f"this grid plans about {n_runs:,} runs, more than {MAX_RUNS:,}: "
                         "fewer seeds, lrs or units (or run it in parts)")
    for k in (-reach, reach):
        try:
            lr = lr_of(opts, k)
        except OverflowError:
            lr = math.inf
        common.check("lr", lr, f"the lr lr0*10^(k/2) at k = {k} (--lr0 {opts.lr0:g}, the "
                     "sweep's reach)")
    if opts.n_lin > opts.steps:
        raise InputError(f"--n-lin {opts.n_lin} needs at most as many eval points as a run "
                         f"has steps ({opts.steps})")
    if opts.n_embd % opts.n_head:
        raise InputError(f"--n-embd ({opts.n_embd}) must be divisible by --n-head ({opts.n_head})")
    if min(opts.contexts) < 8 or len(set(opts.contexts)) != len(opts.contexts):
        raise InputError(f"--contexts must be distinct and at least 8, got {opts.contexts}")
    if opts.steps < 4:
        raise InputError(f"--steps must be at least 4 (runs of S/4 steps), got {opts.steps}")
    opts.contexts = sorted(opts.contexts)


def is_info(raw):
    """raw["info"]: the machine and each invocation (a report's header); and each run's
    machine."""
    info = raw.get("info")
    return isinstance(info, dict) and isinstance(info.get("invocations"), list) and all(
        isinstance(v, dict) and {"command", "started", "wall_s", "n_trained", "load_start",
                                 "load_end"} <= set(v) for v in info["invocations"]) and all(
        isinstance(m, dict) and all(isinstance(v, (str, int)) for v in m.values())
        for m in (r.get("machine", {}) for r in raw["runs"]))


def read_results(path, what, parser):
    """An earlier results.json through one validator, before anything is trained or
    rewritten: its options (common.check_options, then the door checks: a grid of 10^9
    seeds never ran), "complete" a bool and never true of a grid that ran nothing, every
    run record by RECORD (with no key a Run has not), and is_info(raw). Returns (raw,
    its runs as Runs); InputError with one line for anything that cannot be true."""
    raw = common.read_json(path, what)  # (an option the file predates: its default)
    raw["options"] = {**vars(parser().parse_args([])), **raw["options"]}
    try:
        if not isinstance(raw.get("complete", True), bool):
            raise InputError(f'"complete" is {raw["complete"]!r}, not true or false')
        common.check_options(raw["options"], parser())
        check_options(SimpleNamespace(**raw["options"]))  # (a copy: a check may sort a list)
        runs = raw["runs"]
        if raw.get("complete", True) and not runs:
            raise InputError("it holds no run, yet says it is complete")
        for i, r in enumerate(runs):
            bad = [name for name, ok in RECORD.items()
                   if not (isinstance(r, dict) and name in r and ok(r[name]))]
            if bad:
                raise InputError(f"run {i} has no valid {', '.join(bad)}: not a record this "
                                 "script wrote")
        if not is_info(raw):
            raise InputError("its other parts are not those of a record this script wrote")
        runs = [Run(**r) for r in runs]
    except (InputError, KeyError, TypeError, AttributeError, ValueError) as e:
        why = e if isinstance(e, InputError) else f"{type(e).__name__}: {e}"
        raise InputError(f"cannot {what} {path!r}: {why} (start with another --out, or restore "
                         "the file)") from None
    return raw, runs


def previous_runs(path, opts, parser):
    """The runs (run_key(run) -> record) of the results.json in --out and the file, if
    there is one and it was made with the options in SAME as now (else InputError): the
    same command continues an interrupted grid."""
    if not os.path.lexists(path):
        return {}, None
    raw, runs = read_results(path, "continue from", parser)
    differs = [k for k in SAME if raw["options"].get(k) != getattr(opts, k)]
    if differs:
        raise InputError(f"cannot continue from {path!r}: it was made with other "
                         f"{', '.join(differs)} (use another --out, or the same options)")
    common.SHELL.kept = f"the {len(runs)} runs in {path} are kept as they were"
    return {run_key(r): r for r in runs}, raw


def rerender(study, opts):
    """--from-json: the report again from a finished grid's file that read_results
    accepts, into --out (default PATH's folder); any part of the file the report cannot
    use is one line naming it, never a traceback."""
    path = opts.from_json
    raw, runs = read_results(path, "read results from", study.parser)  # (under way: partial)
    try:
        complete = raw["complete"]
    except KeyError as e:
        raise InputError(f"cannot read results from {path!r}: KeyError: {e}") from None
    out = common.output_folder(opts.out or os.path.dirname(os.path.abspath(path)))
    try:
        md = write_all(study, runs, SimpleNamespace(**raw["options"]), raw["info"], out, complete)
    except (InputError, OSError):
        raise
    except Exception as e:  # noqa: BLE001 (a crafted file: whatever it breaks is the file's fault)
        raise InputError(f"cannot write a report from {path!r}: its numbers do not make one "
                         f"({type(e).__name__}: {e})") from None
    log(f"re-rendered results.md, results.json and 1 PNGs in {out} from {path}")
    return md


def run_study(study, argv):
    """A study's grid (or --from-json: its report again): the report's markdown."""
    opts = common.parse(study.parser(), argv, study.quick)
    if opts.from_json:
        return rerender(study, opts)
    check_options(opts)
    check_memory(opts)
    out = common.output_folder(opts.out, study.name, opts.quick)
    path = os.path.join(out, "results.json")
    cache, raw = previous_runs(path, opts, study.parser)
    invocations = raw["info"]["invocations"] if raw else []
    data = {T: held_out(T, opts.val_docs, opts.split_seed) for T in opts.contexts}
    now = {"command": common.command_line(f"{study.name}.py", argv),
           "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "load_start": common.load_average(), "n_trained": 0, "finished": False,
           "machine": common.machine_info()}
    t0 = time.perf_counter()
    log(f"{study.name}: T {opts.contexts}, {len(cache)} runs already in {path}; "
        f"{opts.workers} workers")

    def info(records):
        now.update(wall_s=time.perf_counter() - t0, load_end=common.load_average())
        return {"machine": now["machine"], "invocations": invocations + [now],
                "cpu_s": sum(r.cpu_seconds for r in records),
                "wall_s": sum(v["wall_s"] for v in invocations + [now])}

    def with_the_rest(records):  # and the runs in results.json this invocation does not plan
        mine = {run_key(r) for r in records}  # (other T, seeds or arms: never dropped)
        return list(records) + [r for k, r in cache.items() if k not in mine]

    def save(records):
        now["n_trained"] += 1
        records = with_the_rest(records)
        common.save_runs(lambda: write_all(study, records, opts, info(records), out, False),
                         path, len(records))

    grid = Grid(units_of(opts), opts, cache, save)
    records, n_trained = grid.grid(run_job, data)
    now["finished"] = grid.finished()
    records = sorted(with_the_rest(records), key=run_key)
    md = write_all(study, records, opts, info(records), out, now["finished"])  # (--deadline)
    log(f"done: {n_trained} runs trained now, {len(records)} in all; wrote results.md, "
        f"results.json and curves.png to {out}")
    return md


