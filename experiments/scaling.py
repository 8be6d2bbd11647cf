"""Does the sphere's (nGPT's) gap to RMSNorm shrink with training length, depth or width -- at CPU scale?

`sphere_vs_rmsnorm.py` measured one point: n_embd 16, 1-2 layers, 2,000 steps, where the sphere ends
0.02-0.04 nats behind RMSNorm. Published results say the benefit, where there is one, needs long runs and
scale. This script measures the trend along three one-dimensional sweeps from the base point
(--lengths[0] steps, --layers[0] layers, --widths[0] wide; batch 16, block 16, n_head 4):

  * training length: --lengths (default 2000, 10000, 40000 steps; lr decays linearly over each run's length);
  * depth:           --layers  (default 1, 2, 4, 8), with a third model "sphere a=1/L": alpha_init = 1/n_layer;
  * width:           --widths  (default 16, 32, 64).

Every model gets its own learning rate in every cell. The lrs live on a lattice lr0 * 2^(k/2); the base cell
sweeps k = -B..B (--base-sweep), every other cell k* - 1 .. k* + 1 (--sweep) around the best k* of its
neighbour towards the base point (same model); if the best lr is at the edge of what was tried, one more lr
beyond that edge is run, up to --max-extend times (reported). The sweep uses seed --seed; then --seeds fresh
seeds (seed+1 ..) run at the chosen lr. The measuring helpers (eval points, steps to target, one training run)
are those of sphere_vs_rmsnorm.py, so "steps to target" and its rmsnorm/model ratios mean the same thing there
and here: T2 = the bigram val loss, T3 = the worst final loss among the sphere seeds, T1 = the worst final loss
among the rmsnorm seeds (does the sphere reach rmsnorm's end result at all?).

Runs are independent and run in a process pool (--workers, default 2; BLAS threads are pinned to 1 per worker).
Each run is a pure function of its arguments and the lr choices depend only on run results, so the results do
not depend on the number of workers or on the order in which runs finish (only the timings do).

Because of that, --reuse PATH takes every run whose arguments match from an earlier results.json instead of
training it again (to extend sweeps, add seeds or cells), and --from-json PATH re-renders the report only.

Outputs (atomically written) in --out: results.md, results.json (one record per run + per-cell summaries),
gap_length.png, gap_depth.png, gap_width.png, val_curves_length.png, lr_sweeps.png.

    python experiments/scaling.py                                  # corpus ../shared/data/names.txt
    python experiments/scaling.py --corpus /path/to/names.txt --workers 2
    python experiments/scaling.py --seeds 5 --reuse experiments/results/scaling/results.json   # 2 more seeds
    python experiments/scaling.py --quick --out /tmp/q             # smoke test, seconds
"""
import argparse
import hashlib
import json
import math
import multiprocessing
import os
import platform
import shlex
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # microgpt.py lives at the repo root
sys.path.insert(0, HERE)  # sphere_vs_rmsnorm.py: the measuring helpers

import numpy as np  # noqa: E402
import sphere_vs_rmsnorm as sv  # noqa: E402
from arguments import Parser, int_list, parse, pos_int  # noqa: E402

from harness.errors import InputError  # noqa: E402
from harness.run_files import atomic_write  # noqa: E402
from microgpt import (  # noqa: E402
    GPTConfig,
    baselines,
    build_vocab,
    doc_tokens,
    load_corpus,
    split_docs,
)

DEFAULT_CORPUS = os.path.normpath(os.path.join(REPO, "..", "shared", "data", "names.txt"))


def shown_path(path):
    """A path as results.md / results.json record it: relative to the repository (../shared/data/names.txt), so
    the files name no machine's folders."""
    return os.path.relpath(os.path.abspath(path), REPO)
BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
MODELS = ("rmsnorm", "sphere", "sphere a=1/L")
COLORS = {"rmsnorm": "tab:blue", "sphere": "tab:orange", "sphere a=1/L": "tab:red"}
AXES = (("length", "steps", "training steps"), ("depth", "n_layer", "layers"), ("width", "n_embd", "n_embd"))


# =========================================================================== one run (in a worker process)

_DATA = None


def _init_worker(data):
    global _DATA
    _DATA = data


def model_kwargs(model, n_layer):
    """run_one() arguments of a model; alpha_init is what the record reports (None: no alpha in rmsnorm)."""
    if model == "rmsnorm":
        return {"norm": "rmsnorm"}, None
    alpha = 0.05 if model == "sphere" else 1.0 / n_layer
    return {"norm": "sphere", "alpha_init": alpha}, alpha


def run_job(job):
    """Train one model (a pure function of `job` and the corpus data); return its record."""
    opts = SimpleNamespace(n_embd=job["n_embd"], n_head=job["n_head"], block_size=job["block_size"],
                           steps=job["steps"])
    data = dict(_DATA, eval_points=sv.eval_points(job["steps"]))
    kwargs, alpha = model_kwargs(job["model"], job["n_layer"])
    r = sv.run_one(data, opts, batch_size=job["batch_size"], n_layer=job["n_layer"], lr=job["lr"], seed=job["seed"],
                   **kwargs)
    rec = {k: job[k] for k in ("model", "n_embd", "n_head", "n_layer", "block_size", "steps", "batch_size", "lr",
                               "lr_k", "seed", "phase")}
    rec.update(norm=kwargs["norm"], alpha_init=alpha, final_val=r["final_val"], error=r["error"],
               val_curve=r["val_curve"], seconds=r["seconds"], ms_per_step=r["ms_per_step"],
               n_evals=len(r["val_curve"]))
    if r["scales"]:  # sphere: the learned scales at the end (mean over elements)
        rec["final_scales"] = {g: r["scales"][-1][j + 1][0] for j, g in enumerate(sv.SCALE_GROUPS)}
    return rec


# =========================================================================== the plan

def lr_of(opts, k):
    return opts.lr0 * 2.0 ** (k / 2)


class Unit:
    """One model in one cell (steps, n_layer, n_embd): its lr sweep, the chosen lr, its seeds."""

    def __init__(self, model, cell, parent):
        self.model, self.cell, self.parent, self.children = model, cell, parent, []
        self.sweep = {}      # lattice k -> record (None while running)
        self.extended = 0    # lrs added beyond an edge
        self.best_k = None
        self.at_edge = False  # the best lr is still at the edge after --max-extend extensions
        self.seeds = {}      # seed -> record (None while running)
        self.started = False

    @property
    def key(self):
        return (self.model,) + self.cell


def build_plan(opts):
    """Units in a fixed order and their parent (the neighbouring cell towards the base point, same model)."""
    base = (opts.lengths[0], opts.layers[0], opts.widths[0])
    axes = {"length": [(s, base[1], base[2]) for s in opts.lengths],
            "depth": [(base[0], n, base[2]) for n in opts.layers],
            "width": [(base[0], base[1], e) for e in opts.widths]}
    units = {}
    for axis, cells in axes.items():
        models = MODELS if axis == "depth" and opts.alpha_variant else MODELS[:2]
        for model in models:
            parent = None
            for cell in cells:
                key = (model,) + cell
                if key not in units:
                    units[key] = Unit(model, cell, parent)
                    if parent is not None:
                        parent.children.append(units[key])
                parent = units[key]
    return base, axes, units


# =========================================================================== cost model and progress

def _prior_ms(norm, n_layer, n_embd):
    """A rough relative cost per step, used only until a run of that kind has been timed."""
    per_layer = 0.25 if norm == "rmsnorm" else 0.65
    return (0.35 + per_layer * n_layer) * (n_embd / 16) ** 0.7


class Progress:
    """One stderr line per finished run: runs done / total, elapsed, and an ETA from measured costs
    (ms per training step and seconds per eval of each (norm, n_layer, n_embd), times each run's steps and
    eval points; kinds not timed yet are scaled from the timed ones by a rough prior)."""

    def __init__(self, workers):
        self.workers, self.t0, self.done = workers, time.perf_counter(), 0
        self.timed = {}  # (norm, n_layer, n_embd) -> [sum ms/step, sum s/eval, runs]

    @staticmethod
    def kind(job):
        return ("rmsnorm" if job["model"] == "rmsnorm" else "sphere", job["n_layer"], job["n_embd"])

    def add(self, rec):
        t = self.timed.setdefault(self.kind(rec), [0.0, 0.0, 0])
        train_s = rec["ms_per_step"] * rec["steps"] / 1000
        t[0] += rec["ms_per_step"]
        t[1] += max(0.0, rec["seconds"] - train_s) / max(1, rec["n_evals"])
        t[2] += 1

    def estimate(self, job):
        """Seconds one run of `job` takes (None before anything has been timed)."""
        if not self.timed:
            return None
        k = self.kind(job)
        if k in self.timed:
            ms, ev, n = self.timed[k]
            ms, ev = ms / n, ev / n
        else:
            prior = sum(_prior_ms(*kk) * t[2] for kk, t in self.timed.items())
            ms = sum(t[0] for t in self.timed.values()) / prior * _prior_ms(*k)
            ev = sum(t[1] for t in self.timed.values()) / prior * _prior_ms(*k)
        return job["steps"] * ms / 1000 + len(sv.eval_points(job["steps"])) * ev

    def eta(self, pending, running):
        """pending: jobs not started (including planned ones); running: [(job, seconds since start)]."""
        if not self.timed:
            return None
        left = [self.estimate(j) for j in pending] + [max(0.0, self.estimate(j) - s) for j, s in running]
        return max(sum(left) / self.workers, max(left, default=0.0))

    def line(self, rec, total, eta):
        self.done += 1
        final = "diverged" if rec["final_val"] is None else f"{rec['final_val']:.4f}"
        eta_s = "?" if eta is None else sv.fmt_time(eta)
        return (f"[{self.done}/{total}] steps={rec['steps']} L={rec['n_layer']} E={rec['n_embd']} "
                f"{rec['model']:<12} {rec['phase']:<5} lr={rec['lr']:.3g} seed={rec['seed']}: val {final} "
                f"({rec['seconds']:.1f}s) | elapsed {sv.fmt_time(time.perf_counter() - self.t0)}, ETA {eta_s}")


# =========================================================================== the scheduler

def run_key(r):
    """What a run is a pure function of (besides the corpus, split and val docs, checked once for --reuse)."""
    return tuple(r[k] for k in ("model", "n_embd", "n_head", "n_layer", "block_size", "steps", "batch_size", "lr",
                                "lr_k", "seed"))


def run_study(units, data, opts, log=print, cache=None):
    """Run every unit's sweep (with extensions) and seeds in a process pool; return the records, the wall
    time and how many runs were taken from `cache` (run_key -> record of an earlier invocation)."""
    cache = cache or {}
    n_reused = [0]
    def job(unit, phase, k, seed):
        steps, n_layer, n_embd = unit.cell
        return {"unit": unit.key, "model": unit.model, "steps": steps, "n_layer": n_layer, "n_embd": n_embd,
                "n_head": opts.n_head, "block_size": opts.block_size, "batch_size": opts.batch_size,
                "lr": lr_of(opts, k), "lr_k": k, "seed": seed, "phase": phase}

    ready, notes = [], []  # notes: the lr decisions, logged after the line of the run that completed a sweep

    def start(unit, center, half):
        unit.started = True
        for k in range(center - half, center + half + 1):
            unit.sweep[k] = None
            ready.append(job(unit, "sweep", k, opts.seed))

    def sweep_done(unit):
        """All sweep runs of `unit` are in: extend past an edge, or fix the lr and start seeds and children."""
        ks = sorted(unit.sweep)
        finals = [math.inf if unit.sweep[k]["final_val"] is None else unit.sweep[k]["final_val"] for k in ks]
        best = ks[int(np.argmin(finals))]  # ties: the lower lr; diverged runs never win
        if best in (ks[0], ks[-1]):  # the optimum may lie beyond: try one more lr on that side
            if unit.extended < opts.max_extend:
                k = ks[0] - 1 if best == ks[0] else ks[-1] + 1
                unit.extended += 1
                unit.sweep[k] = None
                ready.append(job(unit, "sweep", k, opts.seed))
                return
            unit.at_edge = True
        unit.best_k = best
        notes.append(
            f"  -> {unit.model} steps={unit.cell[0]} L={unit.cell[1]} E={unit.cell[2]}: lr {lr_of(opts, best):.3g} "
            f"(tried {', '.join(f'{lr_of(opts, k):.3g}' for k in ks)}"
            + (f"; extended {unit.extended}x" if unit.extended else "")
            + ("; STILL AT THE EDGE" if unit.at_edge else "") + ")")
        for s in range(1, opts.seeds + 1):
            unit.seeds[opts.seed + s] = None
            ready.append(job(unit, "seeds", best, opts.seed + s))
        for child in unit.children:
            start(child, best, opts.sweep)

    for unit in units.values():
        if unit.parent is None:
            start(unit, 0, opts.base_sweep)

    def planned():
        """Jobs not yet made (units not started; assumes no extensions), for the total and the ETA."""
        return [j for u in units.values() if not u.started
                for j in [job(u, "plan", 0, 0)] * (2 * opts.sweep + 1 + opts.seeds)]

    for var in BLAS_ENV:  # inherited by the spawned workers before they import numpy: one BLAS thread each
        os.environ[var] = "1"
    prog = Progress(opts.workers)
    records, running = [], {}
    ctx = multiprocessing.get_context("spawn")
    worker_data = {k: data[k] for k in ("vocab", "train", "val", "val_tokens")}

    def priority(j):  # only the timing depends on this: sweeps first (they unlock cells), long runs first
        return (j["phase"] != "sweep", -(prog.estimate(j) or j["steps"] * _prior_ms(*Progress.kind(j))))

    def finish(j, rec, reused):
        records.append(rec)
        if reused:
            n_reused[0] += 1
        else:
            prog.add(rec)
        unit = units[j["unit"]]
        if j["phase"] == "sweep":
            unit.sweep[j["lr_k"]] = rec
            if all(r is not None for r in unit.sweep.values()):
                sweep_done(unit)
        else:
            unit.seeds[j["seed"]] = rec
        now = time.perf_counter()
        plan = planned()
        total = len(records) + len(running) + len(ready) + len(plan)
        eta = prog.eta([jj for jj in ready + plan if run_key(jj) not in cache],
                       [(jj, now - t) for jj, t in running.values()])
        log(prog.line(rec, total, eta) + (" (reused)" if reused else ""))
        for note in notes:
            log(note)
        notes.clear()

    with ProcessPoolExecutor(max_workers=opts.workers, mp_context=ctx, initializer=_init_worker,
                             initargs=(worker_data,)) as pool:
        try:
            while ready or running:
                ready.sort(key=priority)
                while ready and len(running) < opts.workers:
                    j = ready.pop(0)
                    if run_key(j) in cache:  # the same run (a pure function of these arguments) was done before
                        finish(j, dict(cache[run_key(j)], phase=j["phase"]), reused=True)
                        continue
                    fut = pool.submit(run_job, {k: v for k, v in j.items() if k != "unit"})
                    running[fut] = (j, time.perf_counter())
                if not running:
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: (running[f][0]["unit"], running[f][0]["lr_k"],
                                                       running[f][0]["seed"])):
                    j, _t = running.pop(fut)
                    finish(j, fut.result(), reused=False)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return records, time.perf_counter() - prog.t0, n_reused[0]


# =========================================================================== summarizing

def _curve(rec):
    return [(s, v) for s, v in rec["val_curve"]]


def summarize_unit(unit, rms, targets, opts):
    seeds = sorted(unit.seeds)
    runs = [unit.seeds[s] for s in seeds]
    finals = [r["final_val"] for r in runs]
    m, s, n = sv.mean_std(finals)
    row = {"model": unit.model, "best_lr": lr_of(opts, unit.best_k), "best_k": unit.best_k,
           "sweep": [[lr_of(opts, k), unit.sweep[k]["final_val"]] for k in sorted(unit.sweep)],
           "extended": unit.extended, "at_edge": unit.at_edge, "alpha_init": runs[0]["alpha_init"],
           "seeds": seeds, "finals": finals, "final_mean": m, "final_std": s, "n_finished": n,
           "ms_per_step": float(np.mean([r["ms_per_step"] for r in runs]))}
    rms_runs = [rms.seeds[sd] for sd in seeds]
    if unit.model != "rmsnorm":  # per seed pair: same init draws, same data order
        gaps = [a["final_val"] - b["final_val"] for a, b in zip(runs, rms_runs)
                if a["final_val"] is not None and b["final_val"] is not None]
        row["gaps"] = gaps
        row["gap_mean"], row["gap_std"], _ = sv.mean_std(gaps)
    for tname, target in targets.items():
        st = [sv.steps_to_target(_curve(r), target) if target is not None else None for r in runs]
        st_rms = [sv.steps_to_target(_curve(r), target) if target is not None else None for r in rms_runs]
        ratios = [a / b for a, b in zip(st_rms, st) if a is not None and b is not None and b > 0]
        sm, ss, sn = sv.mean_std(st)
        rm, rs, _ = sv.mean_std(ratios)
        row[tname] = {"target": target, "steps": st, "steps_mean": sm, "steps_std": ss, "reached": sn,
                      "ratios": ratios, "ratio_mean": rm, "ratio_std": rs,
                      "ratio_min": min(ratios, default=None), "ratio_max": max(ratios, default=None)}
    if "final_scales" in runs[0]:
        row["final_scales"] = {g: float(np.mean([r["final_scales"][g] for r in runs])) for g in sv.SCALE_GROUPS}
    return row


def iso_loss_steps(lengths, rms_finals, target):
    """The run length at which rmsnorm's final val loss equals `target`: linear in log(steps) between the two
    measured lengths around it (rmsnorm's mean final loss per length); ('<', N0) / ('>', N1) outside them."""
    pts = [(n, f) for n, f in zip(lengths, rms_finals) if f is not None]
    if len(pts) < 2 or target is None:
        return None
    if target >= pts[0][1]:
        return ["<", pts[0][0]]
    for (n0, f0), (n1, f1) in zip(pts, pts[1:]):
        if f1 <= target <= f0 and f0 != f1:
            t = (f0 - target) / (f0 - f1)
            return ["=", float(math.exp(math.log(n0) + t * (math.log(n1) - math.log(n0))))]
    return [">", pts[-1][0]]


def summarize(axes, units, data, opts):
    summary = {}
    for axis, field, _label in AXES:
        cells = []
        for cell in axes[axis]:
            models = [m for m in MODELS if (m,) + cell in units and (m != "sphere a=1/L" or axis == "depth")]
            us = {m: units[(m,) + cell] for m in models}
            rms = us["rmsnorm"]
            sph = [us["sphere"].seeds[s]["final_val"] for s in sorted(us["sphere"].seeds)]
            rmf = [rms.seeds[s]["final_val"] for s in sorted(rms.seeds)]
            targets = {"T2": data["baselines"]["bigram"],
                       "T3": max((x for x in sph if x is not None), default=None),
                       "T1": max((x for x in rmf if x is not None), default=None)}
            value = dict(zip(("steps", "n_layer", "n_embd"), cell))[field]
            cells.append({"value": value, "steps": cell[0], "n_layer": cell[1], "n_embd": cell[2],
                          "targets": targets, "rows": [summarize_unit(us[m], rms, targets, opts) for m in models]})
        summary[axis] = {"field": field, "cells": cells}
    # length axis: how long an rmsnorm run must be to end where the sphere's run of N steps ends
    length = summary["length"]["cells"]
    rms_means = [c["rows"][0]["final_mean"] for c in length]
    for c in length:
        for row in c["rows"][1:]:
            iso = iso_loss_steps([cc["steps"] for cc in length], rms_means, row["final_mean"])
            row["iso_rms_steps"] = iso
            row["iso_ratio"] = iso[1] / c["steps"] if iso and iso[0] == "=" else None
    return summary


# =========================================================================== markdown

def _f(x, nd=3):
    return "—" if x is None else f"{x:.{nd}f}"


def _pm(m, s, nd=3, sign=False):
    if m is None:
        return "—"
    return (f"{m:+.{nd}f}" if sign else f"{m:.{nd}f}") + ("" if s is None else f" ± {s:.{nd}f}")


def _lr_cell(row):
    lrs = [lr for lr, _ in row["sweep"]]
    note = f"{row['best_lr']:.3g} (tried {min(lrs):.3g}–{max(lrs):.3g}, {len(lrs)} lrs"
    if row["extended"]:
        note += f", extended {row['extended']}×"
    return note + (", **best at the edge**)" if row["at_edge"] else ")")


def _reach_cell(t, n, ref=False):
    if t["reached"] == 0:
        return f"0/{n}"
    if ref:
        return f"{t['reached']}/{n} (own target)"
    return f"{t['reached']}/{n}" + (f" (ratio {t['ratio_mean']:.2f})" if t["ratios"] else "")


def axis_value_label(axis, v):
    return {"length": f"{v:,} steps", "depth": f"{v} layer{'s' if v > 1 else ''}", "width": f"n_embd {v}"}[axis]


def _reuse_note(info):
    """--reuse: which earlier invocations the reused runs come from (oldest first), with their wall times."""
    if not info.get("n_reused"):
        return ""
    chain, src = [], info.get("reused_from")
    while src:
        chain.append(src)
        src = src.get("reused_from")
    earlier = "; ".join(f"`{c['command']}`, started {c['started']}, {c['n_runs']} runs, wall time "
                        f"**{sv.fmt_time(c['wall_s'])}**, load average at start {c['load_start']}, at end "
                        f"{c['load_end']}" for c in reversed(chain))
    return (f". Of these runs {info['n_reused']} were not trained again but reused with --reuse (identical "
            f"arguments; each run is a pure function of them) from earlier invocations: {earlier}. This invocation "
            f"trained the other {info['n_runs'] - info['n_reused']}")


def machine_info():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {"cpu": cpu or "unknown", "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__}


def markdown(summary, data, opts, info):
    b = data["baselines"]
    m = info["machine"]
    base = info["base"]
    L = ["# Sphere (nGPT) vs RMSNorm: the gap along training length, depth and width", "",
         f"- corpus `{data['corpus']}` (sha256 {data['corpus_sha256'][:12]}…): {data['n_docs']} docs, split seed "
         f"{opts.split_seed} → {data['n_train']} train / {data['n_val_full']} val docs; val loss measured on the "
         f"first {data['n_val_used']} val docs (a fixed subset; eval points dense early); vocab "
         f"{len(data['vocab']) + 1} tokens (with BOS); baselines on those docs: uniform {b['uniform']:.3f}, "
         f"unigram {b['unigram']:.3f}, bigram {b['bigram']:.3f}",
         f"- base point: {base[0]} steps, {base[1]} layer{'s' if base[1] > 1 else ''}, n_embd {base[2]}; "
         f"n_head {opts.n_head}, block_size "
         f"{opts.block_size}, batch {opts.batch_size} docs/step; NumPy engine; Adam (β1 0.85, β2 0.99), lr decaying "
         "linearly to 0 over each run's own length. Each axis changes one of the three from the base point.",
         "- models: `rmsnorm` (reference microgpt), `sphere` (nGPT, alpha_init 0.05, sz_init 1, retraction), and in "
         "the depth sweep `sphere a=1/L` (alpha_init = 1/n_layer, a common choice elsewhere; at 1 layer that is 1.0)",
         f"- learning rate per model and cell: lattice {opts.lr0:g}·2^(k/2); the base cell sweeps "
         f"{2 * opts.base_sweep + 1} lrs, every other cell {2 * opts.sweep + 1} lrs around the best lr of its "
         f"neighbour towards the base point (same model), one more beyond an edge when the best is at the edge "
         f"(up to {opts.max_extend}×); sweep runs use seed {opts.seed}, lowest final val loss wins; then "
         f"{opts.seeds} fresh seeds ({opts.seed + 1}..{opts.seed + opts.seeds}) at that lr. ± is the std over "
         "seeds; the gap is sphere − rmsnorm per seed pair (same init draws, same data order), mean ± std.",
         "- steps to target (as in `sphere_vs_rmsnorm.py`): the first step at which a val curve reaches a loss, "
         "interpolated between eval points; the ratio is rmsnorm steps / model steps per seed pair (> 1: the model "
         "gets there in fewer steps). Targets per cell: bigram = the bigram val loss; T3 = the worst final loss "
         "among the sphere seeds; T1 = the worst final loss among the rmsnorm seeds ('reaches rmsnorm final': how "
         "many seeds of the model get there by their last step, and the ratio for those that do).",
         f"- command: `{info['command']}`",
         f"- machine: {m['cpu']}, {m['cpu_count']} logical CPUs, {m['platform']}, Python {m['python']}, NumPy "
         f"{m['numpy']}; {opts.workers} worker processes (1 BLAS thread each); load average at start "
         f"{info['load_start']}, at end {info['load_end']} (the machine may be shared: timings are wall time)",
         f"- started {info['started']}; wall time: **{sv.fmt_time(info['wall_s'])}** for {info['n_runs']} runs "
         f"({sv.fmt_time(info['run_s'])} of run time summed over the runs)" + _reuse_note(info), ""]

    L += ["## The trend", "",
          "| axis | cell | rmsnorm final | sphere final | gap sphere − rmsnorm | rmsnorm/sphere steps to T3 | "
          "sphere reaches rmsnorm final | gap a=1/L − rmsnorm |", "|---|---|---|---|---|---|---|---|"]
    for axis, _field, _label in AXES:
        for c in summary[axis]["cells"]:
            rows = {r["model"]: r for r in c["rows"]}
            r, s = rows["rmsnorm"], rows["sphere"]
            a = rows.get("sphere a=1/L")
            t3 = s["T3"]
            ratio = (f"{t3['ratio_mean']:.2f} ± {t3['ratio_std']:.2f}" if t3["ratios"] else "—")
            L.append(f"| {axis} | {axis_value_label(axis, c['value'])} | {_pm(r['final_mean'], r['final_std'])} | "
                     f"{_pm(s['final_mean'], s['final_std'])} | {_pm(s.get('gap_mean'), s.get('gap_std'), sign=True)} "
                     f"| {ratio} | {_reach_cell(s['T1'], len(s['seeds']))} | "
                     f"{_pm(a.get('gap_mean'), a.get('gap_std'), sign=True) if a else ''} |")
    L.append("")

    for axis, _field, label in AXES:
        L += [f"## {axis.capitalize()} sweep", "",
              f"| {label} | model | lr | final val loss | gap vs rmsnorm | rmsnorm/model steps to bigram | "
              "rmsnorm/model steps to T3 | reaches rmsnorm final (T1) | ms/step |", "|---" * 9 + "|"]
        for c in summary[axis]["cells"]:
            for row in c["rows"]:
                ref = row["model"] == "rmsnorm"

                def ratio(t, ref=ref, row=row):
                    return "1 (reference)" if ref else sv._ratio_cell(t, row["model"])

                L.append(f"| {c['value']} | {row['model']} | {_lr_cell(row)} | "
                         f"{_pm(row['final_mean'], row['final_std'])} | "
                         f"{'—' if ref else _pm(row.get('gap_mean'), row.get('gap_std'), sign=True)} | "
                         f"{ratio(row['T2'])} | {ratio(row['T3'])} | "
                         f"{_reach_cell(row['T1'], len(row['seeds']), ref)} | "
                         f"{row['ms_per_step']:.2f} |")
        L.append("")
        L += ["Targets: " + "; ".join(f"{axis_value_label(axis, c['value'])}: bigram {_f(c['targets']['T2'])}, "
                                        f"T3 {_f(c['targets']['T3'])}, T1 {_f(c['targets']['T1'])}"
                                        for c in summary[axis]["cells"]), ""]
        if axis == "length":
            L += ["Across run lengths (the published way of counting: separate full-schedule runs of different "
                  "lengths): the rmsnorm run length whose mean final loss equals the sphere's mean final loss "
                  "(interpolated linearly in log steps between the measured lengths), and that length / the "
                  "sphere's length (> 1 would be a speed-up of the sphere).", "",
                  "| sphere run | sphere final | rmsnorm run length with that final loss | ratio |",
                  "|---|---|---|---|"]
            for c in summary["length"]["cells"]:
                s = c["rows"][1]
                iso = s["iso_rms_steps"]
                where = ("—" if iso is None else f"{iso[0]} {iso[1]:,.0f}" if iso[0] != "=" else f"{iso[1]:,.0f}")
                ratio = ("—" if iso is None else f"{s['iso_ratio']:.2f}" if iso[0] == "=" else
                         f"{iso[0]} {iso[1] / c['steps']:.2f}")
                L.append(f"| {c['steps']:,} steps | {_f(s['final_mean'])} | {where} | {ratio} |")
            L.append("")

    L += ["## Learning-rate sweeps (final val loss, seed " + str(opts.seed) + "; best in bold)", "",
          "| axis | cell | model | lr: final val loss |", "|---|---|---|---|"]
    for axis, _field, _label in AXES:
        for c in summary[axis]["cells"]:
            for row in c["rows"]:
                cellv = " · ".join((f"**{lr:.3g}: {_f(v)}**" if lr == row["best_lr"] else
                                    f"{lr:.3g}: {'diverged' if v is None else _f(v)}") for lr, v in row["sweep"])
                L.append(f"| {axis} | {axis_value_label(axis, c['value'])} | {row['model']} | {cellv} |")
    edges = [(axis, c["value"], row["model"]) for axis, _f2, _l in AXES for c in summary[axis]["cells"]
             for row in c["rows"] if row["at_edge"]]
    ext = [(axis, c["value"], row["model"], row["extended"]) for axis, _f2, _l in AXES
           for c in summary[axis]["cells"] for row in c["rows"] if row["extended"]]
    L += ["", "Sweeps extended past an edge: " + ("; ".join(f"{a} {v} {m} ({n}×)" for a, v, m, n in ext) or "none")
          + ". Best lr still at the edge after the extensions: "
          + ("; ".join(f"{a} {v} {m}" for a, v, m in edges) or "none") + ".", ""]

    L += ["## Learned sphere scales at the end (mean over seeds of the mean over elements)", "",
          "| axis | cell | model | " + " | ".join(sv.SCALE_GROUPS) + " |", "|---|---|---|" + "---|" * 5]
    for axis, _field, _label in AXES:
        for c in summary[axis]["cells"]:
            for row in c["rows"]:
                if "final_scales" in row:
                    L.append(f"| {axis} | {axis_value_label(axis, c['value'])} | {row['model']} | "
                             + " | ".join(f"{row['final_scales'][g]:.3g}" for g in sv.SCALE_GROUPS) + " |")
    L += ["", "Plots: `gap_length.png`, `gap_depth.png`, `gap_width.png` (final val loss per model and the gap "
          "per seed pair along each axis), `val_curves_length.png`, `lr_sweeps.png`.", ""]
    return "\n".join(L)


# =========================================================================== plots

def plots(summary, data, opts, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    bigram = data["baselines"]["bigram"]
    for axis, _field, label in AXES:
        cells = summary[axis]["cells"]
        xs = [c["value"] for c in cells]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.3))
        models = [m for m in MODELS if any(r["model"] == m for c in cells for r in c["rows"])]
        for j, model in enumerate(models):
            rows = [next(r for r in c["rows"] if r["model"] == model) for c in cells]
            off = 2 ** ((j - (len(models) - 1) / 2) * 0.06)  # small horizontal offset between models
            for x, r in zip(xs, rows):
                pts = [v for v in r["finals"] if v is not None]
                ax1.plot([x * off] * len(pts), pts, ".", color=COLORS[model], alpha=0.5)
            ax1.errorbar([x * off for x in xs], [r["final_mean"] for r in rows], [r["final_std"] or 0 for r in rows],
                         marker="o", capsize=3, color=COLORS[model], label=model)
            if model == "rmsnorm":
                continue
            for x, r in zip(xs, rows):
                ax2.plot([x * off] * len(r["gaps"]), r["gaps"], ".", color=COLORS[model], alpha=0.5)
            ax2.errorbar([x * off for x in xs], [r["gap_mean"] for r in rows], [r["gap_std"] or 0 for r in rows],
                         marker="o", capsize=3, color=COLORS[model], label=f"{model} − rmsnorm")
        ax2.axhline(0, color="k", lw=1)
        for ax in (ax1, ax2):
            ax.set_xscale("log", base=2 if axis != "length" else 10)
            ax.set_xticks(xs)
            ax.set_xticklabels([f"{x:,}" for x in xs])
            ax.minorticks_off()
            ax.set_xlabel(label + (" (log scale)" if axis == "length" else " (log2 scale)"))
            ax.legend(fontsize=8)
        ax1.set_ylabel(f"final val loss (nats/token; bigram: {bigram:.3f})")
        ax1.set_title(f"final val loss: mean ± std over {opts.seeds} seeds (dots: seeds)")
        ax2.set_ylabel("gap: sphere − rmsnorm final val loss (nats)")
        ax2.set_title("gap per seed pair (dots), mean ± std; below 0: sphere better")
        fig.suptitle(f"Sphere vs RMSNorm along {axis} (other axes at the base point), each model at its own lr")
        fig.tight_layout()
        sv.save_fig(fig, os.path.join(out, f"gap_{axis}.png"))
        plt.close(fig)

    # val curves of the length sweep
    cells = summary["length"]["cells"]
    fig, axes = plt.subplots(1, len(cells), figsize=(5.2 * len(cells), 4), squeeze=False)
    for c, ax in zip(cells, axes[0]):
        for row in c["rows"]:
            runs = [data["records"][(row["model"], c["steps"], c["n_layer"], c["n_embd"], "seeds", s)]
                    for s in row["seeds"]]
            sv._band(ax, runs, f"{row['model']} (lr {row['best_lr']:.3g})", COLORS[row["model"]])
        ax.axhline(bigram, color="gray", ls="--", lw=1, label=f"bigram {bigram:.3f}")
        t1 = c["targets"]["T1"]
        ax.set_ylim((t1 or bigram) - 0.08, bigram + 0.35)
        ax.set_xlabel("optimizer step (log scale)")
        ax.set_ylabel("val loss (nats/token)")
        ax.set_title(f"{c['steps']:,} steps: mean and min-max over seeds")
        ax.legend(fontsize=8)
    fig.tight_layout()
    sv.save_fig(fig, os.path.join(out, "val_curves_length.png"))
    plt.close(fig)

    # lr sweeps: one panel per axis, one line per (model, cell)
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.3))
    for (axis, _field, _label), ax in zip(AXES, axes):
        cells = summary[axis]["cells"]
        for i, c in enumerate(cells):
            for row in c["rows"]:
                lrs = [lr for lr, _ in row["sweep"]]
                vals = [np.nan if v is None else v for _, v in row["sweep"]]
                ls = ("-", "--", ":", "-.")[i % 4]
                ax.plot(lrs, vals, marker="o", ms=3, ls=ls, color=COLORS[row["model"]],
                        label=f"{row['model']}, {axis_value_label(axis, c['value'])}")
                best = dict(row["sweep"])[row["best_lr"]]
                if best is not None:
                    ax.plot([row["best_lr"]], [best], "*", ms=10, color=COLORS[row["model"]])
        ax.set_xscale("log")
        ticks = sorted({lr for c in cells for row in c["rows"] for lr, _ in row["sweep"]})
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:.3g}" for t in ticks], fontsize=7)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("peak learning rate")
        ax.set_ylabel(f"final val loss (seed {opts.seed})")
        ax.set_title(f"lr sweeps, {axis} axis (star: chosen)")
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    sv.save_fig(fig, os.path.join(out, "lr_sweeps.png"))
    plt.close(fig)


# =========================================================================== CLI

QUICK = {"lengths": [10, 20], "layers": [1, 2], "widths": [16, 32], "seeds": 2, "val_docs": 24, "base_sweep": 1,
         "sweep": 0, "max_extend": 1}


def parser():
    p = Parser(
        prog="scaling.py",
        description="Train microgpt's rmsnorm and sphere (nGPT) modes along three one-dimensional sweeps from a "
                    "base point -- training length, depth, width -- each model at its own learning rate per cell, "
                    "several seeds each, in a process pool; report final val loss, the gap sphere - rmsnorm and "
                    "steps-to-target ratios. Writes results.md, results.json and PNG plots to --out.",
        epilog="examples:\n  python experiments/scaling.py\n"
               "  python experiments/scaling.py --corpus /path/to/names.txt --workers 2\n"
               "  python experiments/scaling.py --quick --out /tmp/quick",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default=DEFAULT_CORPUS,
                   help="UTF-8 text file, one doc per line (default ../shared/data/names.txt next to the repo)")
    p.add_argument("--out", help="output directory (default experiments/results/scaling/, "
                                 "or experiments/results/scaling-quick/ with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test in seconds: 10/20 steps, 1/2 layers, widths 16/32, 2 seeds, tiny lr sweeps, "
                        "24 val docs (the defaults of the sizes below become these; explicit flags still win)")
    p.add_argument("--workers", type=pos_int, default=2, help="worker processes (default 2)")
    p.add_argument("--lengths", type=int_list, default=[2000, 10000, 40000],
                   help="training-length axis, comma-separated steps (default 2000,10000,40000; the first is the "
                        "base point)")
    p.add_argument("--layers", type=int_list, default=[1, 2, 4, 8],
                   help="depth axis, comma-separated n_layer (default 1,2,4,8; the first is the base point)")
    p.add_argument("--widths", type=int_list, default=[16, 32, 64],
                   help="width axis, comma-separated n_embd (default 16,32,64; the first is the base point)")
    p.add_argument("--no-alpha-variant", dest="alpha_variant", action="store_false",
                   help="leave out the 'sphere a=1/L' model (alpha_init = 1/n_layer) of the depth sweep")
    p.add_argument("--seeds", type=pos_int, default=3,
                   help="seeds per model and cell at its chosen lr (default 3; seeds SEED+1..SEED+N)")
    p.add_argument("--seed", type=int, default=0, help="seed of the lr sweep runs (default 0)")
    p.add_argument("--lr0", type=float, default=0.01, help="centre of the lr lattice lr0*2^(k/2) (default 0.01)")
    p.add_argument("--base-sweep", type=int, default=2,
                   help="the base cell sweeps k = -B..B on the lattice (default 2: 5 lrs, 0.005..0.02)")
    p.add_argument("--sweep", type=int, default=1,
                   help="other cells sweep k*-S..k*+S around the neighbour's best k* (default 1: 3 lrs)")
    p.add_argument("--max-extend", type=int, default=6,
                   help="lrs added, one at a time, beyond an edge of a sweep whose best lr is at it (default 6)")
    p.add_argument("--batch-size", type=pos_int, default=16, help="docs per step (default 16)")
    p.add_argument("--n-head", type=pos_int, default=4, help="attention heads (default 4)")
    p.add_argument("--block-size", type=pos_int, default=16, help="max positions per doc (default 16)")
    p.add_argument("--val-docs", type=pos_int, default=600,
                   help="measure val loss on the first N docs of the val split (default 600, as sphere_vs_rmsnorm)")
    p.add_argument("--split-seed", type=int, default=42, help="seed of the 90/10 train/val split (default 42)")
    p.add_argument("--reuse", metavar="PATH",
                   help="take every run whose arguments match from an earlier results.json instead of training it "
                        "again (same corpus, split and val docs required; each run is a pure function of its "
                        "arguments), e.g. to extend sweeps or add seeds")
    p.add_argument("--from-json", metavar="PATH",
                   help="train nothing: write results.md and the plots again from an earlier results.json "
                        "(into --out, default the directory of PATH)")
    return p


def load_data(opts):
    """The corpus, the split, the val subset and the baselines (InputError with a one-line message)."""
    if not os.path.isfile(opts.corpus):
        raise InputError(f"corpus file {opts.corpus!r} not found; pass the path of names.txt with --corpus PATH")
    try:
        docs = load_corpus(opts.corpus)
    except InputError as e:
        raise InputError(f"{e} (pass another file with --corpus PATH)") from None
    vocab = build_vocab(docs)
    train_docs, val_all = split_docs(docs, opts.split_seed)
    val_docs = val_all[:opts.val_docs]
    val_tokens = [doc_tokens(d, vocab) for d in val_docs]
    cfg0 = GPTConfig(vocab_size=len(vocab) + 1, n_embd=opts.widths[0], n_head=opts.n_head, n_layer=1,
                     block_size=opts.block_size)
    with open(opts.corpus, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return {"corpus": shown_path(opts.corpus), "corpus_sha256": digest, "n_docs": len(docs), "vocab": vocab,
            "train": train_docs, "val": val_docs, "val_tokens": val_tokens, "n_train": len(train_docs),
            "n_val_full": len(val_all), "n_val_used": len(val_docs),
            "baselines": baselines([doc_tokens(d, vocab) for d in train_docs], val_tokens, cfg0)}


def load_cache(opts, data):
    """--reuse: the runs of an earlier results.json, by run_key, if it used the same corpus, split and val docs;
    and what to say about where they came from."""
    try:
        with open(opts.reuse, encoding="utf-8") as f:
            raw = json.load(f)
        old = raw["options"]
        same = (raw["corpus_sha256"] == data["corpus_sha256"] and old["split_seed"] == opts.split_seed
                and old["val_docs"] == opts.val_docs)
        cache = {run_key(r): r for r in raw["runs"]}
        info = raw["info"]
        reused_from = {k: info[k] for k in ("command", "started", "wall_s", "n_runs", "load_start", "load_end")}
        reused_from["reused_from"] = info.get("reused_from") if info.get("n_reused") else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"cannot reuse runs from {opts.reuse!r}: {type(e).__name__}: {e}") from None
    if not same:
        raise InputError(f"cannot reuse runs from {opts.reuse!r}: another corpus, --split-seed or --val-docs")
    return cache, reused_from


def units_from_records(opts, records):
    """Rebuild the plan's units (sweeps, chosen lrs, extensions, seeds) from the run records of results.json."""
    base, axes, units = build_plan(opts)
    for r in records:
        u = units[(r["model"], r["steps"], r["n_layer"], r["n_embd"])]
        u.started = True
        if r["phase"] == "sweep":
            u.sweep[r["lr_k"]] = r
        else:
            u.seeds[r["seed"]] = r
            u.best_k = r["lr_k"]
    for u in units.values():
        if not u.seeds or not u.sweep:
            raise InputError(f"results.json has no complete runs of {u.key}: not a finished study")
        ks = sorted(u.sweep)
        u.extended = len(ks) - (2 * (opts.base_sweep if u.parent is None else opts.sweep) + 1)
        u.at_edge = u.best_k in (ks[0], ks[-1])
    return base, axes, units


def report(units, axes, base, data, opts, info, records, out):
    """Write results.json, results.md and the plots; return the markdown."""
    summary = summarize(axes, units, data, opts)
    order = {key: i for i, key in enumerate(units)}
    records.sort(key=lambda r: (order[(r["model"], r["steps"], r["n_layer"], r["n_embd"])], r["phase"] != "sweep",
                                r["lr_k"], r["seed"]))
    data["records"] = {(r["model"], r["steps"], r["n_layer"], r["n_embd"], r["phase"], r["seed"]): r
                       for r in records if r["phase"] == "seeds"}
    md = markdown(summary, data, opts, info)
    raw = {"corpus": shown_path(opts.corpus), "corpus_sha256": data["corpus_sha256"],
           "options": {**vars(opts), "corpus": shown_path(opts.corpus)}, "info": info,
           "n_docs": data["n_docs"], "n_train": data["n_train"], "n_val_full": data["n_val_full"],
           "n_val_used": data["n_val_used"], "vocab": "".join(data["vocab"]), "baselines": data["baselines"],
           "base_point": list(base), "lr_lattice": f"{opts.lr0:g} * 2^(k/2)", "summary": summary, "runs": records}
    atomic_write(os.path.join(out, "results.json"),
                 lambda f: f.write(json.dumps(raw, separators=(",", ":")).encode("utf-8")))
    atomic_write(os.path.join(out, "results.md"), lambda f: f.write(md.encode("utf-8")))
    plots(summary, data, opts, out)
    return md


def rerender(path, out):
    """--from-json: results.md and the plots again from an earlier results.json (no training)."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        opts = SimpleNamespace(**raw["options"])
        base, axes, units = units_from_records(opts, raw["runs"])
        data = {k: raw[k] for k in ("n_docs", "n_train", "n_val_full", "n_val_used", "baselines", "corpus_sha256")}
        data.update(corpus=raw["corpus"], vocab=list(raw["vocab"]))
        info = raw["info"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"cannot read results from {path!r}: {type(e).__name__}: {e}") from None
    out = out or os.path.dirname(os.path.abspath(path))
    return report(units, axes, base, data, opts, info, raw["runs"], out), out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    opts = parse(parser(), argv, QUICK)
    if opts.from_json:
        try:
            md, out = rerender(opts.from_json, opts.out)
        except InputError as e:
            print(f"scaling.py: error: {e}", file=sys.stderr)
            return 2
        print(md)
        print(f"re-rendered results.md, results.json and 5 PNGs in {out}", file=sys.stderr)
        return 0
    try:
        for name in ("base_sweep", "sweep", "max_extend"):
            if getattr(opts, name) < 0:
                raise InputError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(opts, name)}")
        if not (math.isfinite(opts.lr0) and opts.lr0 > 0):
            raise InputError(f"--lr0 must be a positive number, got {opts.lr0}")
        for w in opts.widths:
            if w % opts.n_head:
                raise InputError(f"every width must be divisible by --n-head ({opts.n_head}); got {w}")
        for name in ("lengths", "layers", "widths"):
            xs = getattr(opts, name)
            if len(set(xs)) != len(xs):
                raise InputError(f"--{name} has repeated values: {xs}")
        data = load_data(opts)
        cache, reused_from = load_cache(opts, data) if opts.reuse else ({}, None)
        out = opts.out or os.path.join(HERE, "results", "scaling" + ("-quick" if opts.quick else ""))
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise InputError(f"cannot create output directory {out!r}: {e.strerror or e}") from None
        if not os.access(out, os.W_OK):
            raise InputError(f"output directory {out!r} is not writable")
    except InputError as e:
        print(f"scaling.py: error: {e}", file=sys.stderr)
        return 2
    base, axes, units = build_plan(opts)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"corpus {opts.corpus}: {data['n_docs']} docs, {data['n_train']} train, {data['n_val_used']} val used; "
          f"bigram val loss {data['baselines']['bigram']:.4f}; {len(units)} model-cells, {opts.workers} workers; "
          f"writing to {out}", file=sys.stderr, flush=True)
    records, wall, n_reused = run_study(units, data, opts, log=lambda s: print(s, file=sys.stderr, flush=True),
                                        cache=cache)
    info = {"command": " ".join(["python experiments/scaling.py"] + [shlex.quote(a) for a in argv]),
            "machine": machine_info(), "started": started, "load_start": load_start,
            "load_end": " ".join(f"{x:.2f}" for x in os.getloadavg()), "wall_s": wall,
            "run_s": sum(r["seconds"] for r in records), "n_runs": len(records), "n_reused": n_reused,
            "reused_from": reused_from if n_reused else None, "base": list(base)}
    md = report(units, axes, base, data, opts, info, records, out)
    print(md)
    print(f"done in {sv.fmt_time(wall)} wall ({len(records)} runs, {sv.fmt_time(info['run_s'])} of run time); "
          f"wrote results.md, results.json and 5 PNGs to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
