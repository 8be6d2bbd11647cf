"""Does the sphere's (nGPT's) gap to RMSNorm shrink with training length, depth or width -- at
CPU scale?

From the base point (--lengths[0] steps, --layers[0] layers, --widths[0] wide; batch 16) one thing
varies at a time: training length, depth (with a third model "sphere a=1/L": alpha_init =
1/n_layer) or width. Each model gets its own lr in every cell on the lattice lr0 * 2^(k/2): the
base cell sweeps k = -B..B, every other cell k*-S..k*+S around its neighbour's best k* (towards the
base point), one more lr beyond an edge while the best is there; then --seeds seeds at that lr.
A run is a pure function of its arguments: the results do not depend on --workers, --reuse takes
matching runs from an earlier results.json, and --from-json re-renders the report only.

    python experiments/scaling.py --corpus names.txt           # makemore's names, by its path
    python experiments/scaling.py --seeds 5 --reuse experiments/results/scaling/results.json
    python experiments/scaling.py --quick --out /tmp/q         # smoke test, seconds

results.json in --out is written after every run: the same command continues an interrupted study.
"""
import os
import sys

if __name__ == "__main__":  # a Ctrl-C while NumPy loads ends quietly (no traceback from an import)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from harness import quiet_startup
    quiet_startup("scaling.py")

import functools
import hashlib
import time
from types import SimpleNamespace

import common
import numpy as np
import sphere_vs_rmsnorm as sv
from common import SCALE_GROUPS, InputError, fmt, fmt_time, log, lr_of
from common import iso_length as iso_loss_steps  # rmsnorm's run length to a final loss

from corpora import BUILTIN, fingerprint, load_corpus
from harness.run_files import check_readable_file
from model_config import GPTConfig

DEFAULT_CORPUS = "names"  # built in (corpora.py); makemore's names.txt by its path, --corpus PATH
MODELS = ("rmsnorm", "sphere", "sphere a=1/L")
COLORS = {"rmsnorm": "tab:blue", "sphere": "tab:orange", "sphere a=1/L": "tab:red"}
AXES = (("length", "steps", "training steps"), ("depth", "n_layer", "layers"),
        ("width", "n_embd", "n_embd"))
RUN_KEY = ("model", "n_embd", "n_head", "n_layer", "block_size", "steps", "batch_size", "lr",
           "lr_k", "seed")


def shown_path(path):
    """A corpus as the results record it: a built-in's name, a file relative to the repository, or
    (outside it) by its name alone: no machine's folders."""
    return path if path in BUILTIN else common.outside_repo(path)


# =========================================================================== one run (in a worker)

def run_job(job):
    """Train one model (a pure function of `job` and the corpus data); return its record."""
    opts = SimpleNamespace(n_embd=job["n_embd"], n_head=job["n_head"],
                           block_size=job["block_size"], steps=job["steps"])
    data = dict(common.WORKER_DATA, eval_points=sv.eval_points(job["steps"]))
    alpha = {"rmsnorm": None, "sphere": 0.05}.get(job["model"], 1.0 / job["n_layer"])
    norm = {"norm": "rmsnorm"} if alpha is None else {"norm": "sphere", "alpha_init": alpha}
    r = sv.run_one(data, opts, batch_size=job["batch_size"], n_layer=job["n_layer"], lr=job["lr"],
                   seed=job["seed"], **norm)
    rec = {k: job[k] for k in RUN_KEY + ("phase",)}
    rec.update(norm=norm["norm"], alpha_init=alpha, final_val=r["final_val"], error=r["error"],
               val_curve=r["val_curve"], seconds=r["seconds"], ms_per_step=r["ms_per_step"],
               n_evals=len(r["val_curve"]))
    if r["scales"]:  # sphere: the learned scales at the end (mean over elements)
        rec["final_scales"] = {g: r["scales"][-1][j + 1][0] for j, g in enumerate(SCALE_GROUPS)}
    return rec


def run_key(r):
    """What a run is a pure function of (besides the corpus, split and val docs)."""
    return tuple(r[k] for k in RUN_KEY)


# =========================================================================== the plan

class Unit(common.Sweep):
    """One model in one cell (steps, n_layer, n_embd): its lr sweep, chosen lr and seeds."""

    def __init__(self, model, cell, parent):
        super().__init__()
        self.model, self.cell, self.parent, self.children = model, cell, parent, []
        self.key, self.started = (model,) + cell, False


def build_plan(opts):
    """The units in a fixed order; a unit's parent: the same model, one cell nearer the base."""
    base = (opts.lengths[0], opts.layers[0], opts.widths[0])
    axes = {"length": [(steps, base[1], base[2]) for steps in opts.lengths],
            "depth": [(base[0], n, base[2]) for n in opts.layers],
            "width": [(base[0], base[1], e) for e in opts.widths]}
    units = {}
    for axis, cells in axes.items():
        for model in MODELS if axis == "depth" and opts.alpha_variant else MODELS[:2]:
            parent = None
            for cell in cells:
                if (model,) + cell not in units:
                    units[(model,) + cell] = Unit(model, cell, parent)
                    if parent is not None:
                        parent.children.append(units[(model,) + cell])
                parent = units[(model,) + cell]
    return base, axes, units


# =========================================================================== the scheduler

class Study(common.Scheduler):
    """Every unit's sweep and seeds; a chosen lr starts the sweeps of the unit's children."""
    key = staticmethod(run_key)

    def __init__(self, units, opts, cache, save):
        super().__init__(units, opts, cache, save)
        self.n_reused, self.progress = 0, common.Progress(opts.workers)

    def job(self, unit, phase, k, seed):
        (steps, n_layer, n_embd), o = unit.cell, self.opts
        return {"unit": unit.key, "model": unit.model, "steps": steps, "n_layer": n_layer,
                "n_embd": n_embd, "n_head": o.n_head, "block_size": o.block_size,
                "batch_size": o.batch_size, "lr": lr_of(o, k), "lr_k": k, "seed": seed,
                "phase": phase}

    def unit_of(self, job):
        return self.units[job["unit"]]

    def describe(self, unit):
        steps, n_layer, n_embd = unit.cell
        return f"{unit.model} (steps={steps} L={n_layer} E={n_embd})"

    def start(self, unit, center, half):
        unit.started = True
        self.sweep(unit, range(center - half, center + half + 1))

    def chosen(self, unit):
        """The unit's lr is chosen (its seeds queued): its children's sweeps; the note to log."""
        for child in unit.children:
            self.start(child, unit.best_k, self.opts.sweep)
        return super().chosen(unit)

    def planned(self):
        """Jobs of the units not started (assuming no extensions), for the total and the ETA."""
        n = 2 * self.opts.sweep + 1 + self.opts.seeds
        return [self.job(u, "plan", 0, 0) for u in self.units.values() if not u.started
                for _ in range(n)]

    def priority(self, j):  # sweeps first (they unlock cells), long runs first
        return (j["phase"] != "sweep", -j["steps"] * j["n_layer"] * j["n_embd"])

    def finish(self, j, rec, reused):
        note = self.store(j, rec)
        self.n_reused += reused
        if not reused:
            self.save(self.records, self.n_reused)  # every finished run is kept as it comes
        pending = [x for x in self.ready + self.planned() if run_key(x) not in self.cache]
        pending += [x for x, _ in self.running.values()]
        total = len(self.records) + len(self.running) + len(self.ready) + len(self.planned())
        text = (f"steps={rec['steps']} L={rec['n_layer']} E={rec['n_embd']} {rec['model']:<12} "
                f"{rec['phase']:<5} lr={rec['lr']:.3g} seed={rec['seed']}")
        line = self.progress.line(text, rec, rec["steps"], total, sum(x["steps"] for x in pending),
                                  timed=not reused)
        log(line + (" (reused)" if reused else ""))
        if note:
            log(note)

    def run(self, data):
        for unit in self.units.values():
            if unit.parent is None:
                self.start(unit, 0, self.opts.base_sweep)
        worker_data = {k: data[k] for k in ("vocab", "train", "val", "val_tokens")}
        super().run(run_job, worker_data)
        return self.records, time.perf_counter() - self.progress.t0, self.n_reused


# =========================================================================== summarizing

def summarize_unit(unit, rms, targets, opts):
    seeds = sorted(unit.seeds)
    runs, rms_runs = [unit.seeds[i] for i in seeds], [rms.seeds[i] for i in seeds]
    finals = [r["final_val"] for r in runs]
    mean, std, n = sv.mean_std(finals)
    row = {"model": unit.model, "best_lr": lr_of(opts, unit.best_k), "best_k": unit.best_k,
           "sweep": [[lr_of(opts, k), unit.sweep[k]["final_val"]] for k in sorted(unit.sweep)],
           "extended": unit.extended, "at_edge": unit.at_edge, "alpha_init": runs[0]["alpha_init"],
           "seeds": seeds, "finals": finals, "final_mean": mean, "final_std": std,
           "n_finished": n, "ms_per_step": float(np.mean([r["ms_per_step"] for r in runs]))}
    if unit.model != "rmsnorm":  # per seed pair: same init draws, same data order
        row["gaps"] = [a["final_val"] - b["final_val"] for a, b in zip(runs, rms_runs)
                       if a["final_val"] is not None and b["final_val"] is not None]
        row["gap_mean"], row["gap_std"], _ = sv.mean_std(row["gaps"])
    row.update({name: sv.to_target(runs, rms_runs, t) for name, t in targets.items()})
    if "final_scales" in runs[0]:
        row["final_scales"] = {g: float(np.mean([r["final_scales"][g] for r in runs]))
                               for g in SCALE_GROUPS}
    return row


def summarize(axes, units, data, opts):
    summary = {}
    for axis, field, _label in AXES:
        cells = []
        for cell in axes[axis]:
            models = [m for m in MODELS if (m,) + cell in units
                      and (m != "sphere a=1/L" or axis == "depth")]
            rms, sphere = units[("rmsnorm",) + cell], units[("sphere",) + cell]
            targets = {"T2": data["baselines"]["bigram"],
                       "T3": sv.max_final(sphere.seeds.values()),
                       "T1": sv.max_final(rms.seeds.values())}
            rows = [summarize_unit(units[(m,) + cell], rms, targets, opts) for m in models]
            value = dict(zip(("steps", "n_layer", "n_embd"), cell))[field]
            cells.append({"value": value, "steps": cell[0], "n_layer": cell[1],
                          "n_embd": cell[2], "targets": targets, "rows": rows})
        summary[axis] = {"field": field, "cells": cells}
    # length axis: how long an rmsnorm run must be to end where the sphere's run of N steps ends
    length = summary["length"]["cells"]
    rms_means = [c["rows"][0]["final_mean"] for c in length]
    for c in length:
        for row in c["rows"][1:]:
            iso = iso_loss_steps([x["steps"] for x in length], rms_means, row["final_mean"])
            row["iso_rms_steps"] = iso
            row["iso_ratio"] = iso[1] / c["steps"] if iso and iso[0] == "=" else None
    return summary


# =========================================================================== markdown

def _pm(mean, std, nd=3, sign=False):  # a None mean (its std None too) shows as "—"
    return fmt(mean, nd, sign) + ("" if std is None else f" ± {std:.{nd}f}")


def _lr_cell(row):
    lrs = [lr for lr, _ in row["sweep"]]
    note = f"{row['best_lr']:.3g} (tried {min(lrs):.3g}–{max(lrs):.3g}, {len(lrs)} lrs"
    note += f", extended {row['extended']}×" if row["extended"] else ""
    return note + (", **best at the edge**)" if row["at_edge"] else ")")


def _reach_cell(t, n, ref=False):
    if t["reached"] == 0:
        return f"0/{n}"
    if ref:
        return f"{t['reached']}/{n} (own target)"
    return f"{t['reached']}/{n}" + (f" (ratio {t['ratio_mean']:.2f})" if t["ratios"] else "")


def axis_value_label(axis, v):
    return {"length": f"{v:,} steps", "depth": common.plural(v, "layer"),
            "width": f"n_embd {v}"}[axis]


def _reuse_note(info):
    """--reuse: which earlier invocations the reused runs come from (oldest first)."""
    if not info.get("n_reused"):
        return ""
    chain, src = [], info.get("reused_from")
    while src:
        chain.append(src)
        src = src.get("reused_from")
    earlier = "; ".join(
        f"`{c['command']}`, started {c['started']}, {c['n_runs']} runs, wall time "
        f"**{fmt_time(c['wall_s'])}**, load average at start {c['load_start']}, at end "
        f"{c['load_end']}" for c in reversed(chain))
    return (f". Of these runs {info['n_reused']} were not trained again but reused with --reuse "
            "(identical arguments; each run is a pure function of them) from earlier invocations: "
            f"{earlier}. This invocation trained the other {info['n_runs'] - info['n_reused']}")


def _header(data, opts, info):
    b, m, base = data["baselines"], info["machine"], info["base"]
    return [
        "# Sphere (nGPT) vs RMSNorm: the gap along training length, depth and width", "",
        f"- corpus `{data['corpus']}` (sha256 {data['corpus_sha256'][:12]}…): {data['n_docs']} "
        f"docs, split seed {opts.split_seed} → {data['n_train']} train / {data['n_val_full']} val "
        f"docs; val loss measured on the first {data['n_val_used']} val docs (a fixed subset; "
        f"eval points dense early); vocab {len(data['vocab']) + 1} tokens (with BOS); baselines "
        f"on those docs: uniform {b['uniform']:.3f}, unigram {b['unigram']:.3f}, bigram "
        f"{b['bigram']:.3f}",
        f"- base point: {base[0]} steps, {common.plural(base[1], 'layer')}, n_embd {base[2]}; "
        f"n_head {opts.n_head}, block_size {opts.block_size}, batch {opts.batch_size} docs/step; "
        "NumPy engine; Adam (β1 0.85, β2 0.99), lr decaying linearly to 0 over each run's own "
        "length. Each axis changes one of the three from the base point.",
        "- models: `rmsnorm` (reference microgpt), `sphere` (nGPT, alpha_init 0.05, sz_init 1, "
        "retraction), and in the depth sweep `sphere a=1/L` (alpha_init = 1/n_layer, a common "
        "choice elsewhere; at 1 layer that is 1.0)",
        f"- learning rate per model and cell: lattice {opts.lr0:g}·2^(k/2); the base cell sweeps "
        f"{2 * opts.base_sweep + 1} lrs, every other cell {2 * opts.sweep + 1} lrs around the best "
        "lr of its neighbour towards the base point (same model), one more beyond an edge when "
        f"the best is at the edge (up to {opts.max_extend}×); sweep runs use seed {opts.seed}, "
        f"lowest final val loss wins; then {opts.seeds} fresh seeds ({opts.seed + 1}.."
        f"{opts.seed + opts.seeds}) at that lr. ± is the population standard deviation over seeds "
        "(ddof 0, not the sample std); the gap is sphere − rmsnorm per seed pair (same init "
        "draws, same data order), mean ± that std; the ratios likewise.",
        "- steps to target (as in `sphere_vs_rmsnorm.py`): the first step at which a val curve "
        "reaches a loss, interpolated between eval points; the ratio is rmsnorm steps / model "
        "steps per seed pair (> 1: the model gets there in fewer steps). Targets per cell: "
        "bigram = the bigram val loss; T3 = the worst final loss among the sphere seeds; T1 = the "
        "worst final loss among the rmsnorm seeds ('reaches rmsnorm final': how many seeds of the "
        "model get there by their last step, and the ratio for those that do).",
        f"- command: `{info['command']}`",
        f"- machine: {m['cpu']}, {m['cpu_count']} logical CPUs, {m['platform']}, Python "
        f"{m['python']}, NumPy {m['numpy']}; {opts.workers} worker processes (1 BLAS thread "
        f"each); load average at start {info['load_start']}, at end {info['load_end']} (the "
        "machine may be shared: timings are wall time)",
        f"- started {info['started']}; wall time: **{fmt_time(info['wall_s'])}** for "
        f"{info['n_runs']} runs ({fmt_time(info['run_s'])} of run time summed over the runs)"
        + _reuse_note(info), ""]


def _trend(summary):
    L = ["## The trend", "",
         "| axis | cell | rmsnorm final | sphere final | gap sphere − rmsnorm | rmsnorm/sphere "
         "steps to T3 | sphere reaches rmsnorm final | gap a=1/L − rmsnorm |",
         "|---|---|---|---|---|---|---|---|"]
    for axis, _field, _label in AXES:
        for c in summary[axis]["cells"]:
            rows = {r["model"]: r for r in c["rows"]}
            rms, sphere, a = rows["rmsnorm"], rows["sphere"], rows.get("sphere a=1/L")
            t3 = sphere["T3"]
            ratio = f"{t3['ratio_mean']:.2f} ± {t3['ratio_std']:.2f}" if t3["ratios"] else "—"
            gap_a = _pm(a.get("gap_mean"), a.get("gap_std"), sign=True) if a else ""
            L.append(f"| {axis} | {axis_value_label(axis, c['value'])} | "
                     f"{_pm(rms['final_mean'], rms['final_std'])} | "
                     f"{_pm(sphere['final_mean'], sphere['final_std'])} | "
                     f"{_pm(sphere.get('gap_mean'), sphere.get('gap_std'), sign=True)} | {ratio} | "
                     f"{_reach_cell(sphere['T1'], len(sphere['seeds']))} | {gap_a} |")
    return L + [""]


def _iso_table(summary):
    L = ["Across run lengths (the published way of counting: separate full-schedule runs of "
         "different lengths): the rmsnorm run length whose mean final loss equals the sphere's "
         "mean final loss (interpolated linearly in log steps between the measured lengths), and "
         "that length / the sphere's length (> 1 would be a speed-up of the sphere).", "",
         "| sphere run | sphere final | rmsnorm run length with that final loss | ratio |",
         "|---|---|---|---|"]
    for c in summary["length"]["cells"]:
        sphere = c["rows"][1]
        iso = sphere["iso_rms_steps"]
        if iso is None:
            length, ratio = "—", "—"
        elif iso[0] == "=":
            length, ratio = f"{iso[1]:,.0f}", f"{sphere['iso_ratio']:.2f}"
        else:
            length, ratio = f"{iso[0]} {iso[1]:,.0f}", f"{iso[0]} {iso[1] / c['steps']:.2f}"
        L.append(f"| {c['steps']:,} steps | {fmt(sphere['final_mean'])} | {length} | {ratio} |")
    return L + [""]


def _axis_table(summary, axis, label):
    L = [f"## {axis.capitalize()} sweep", "",
         f"| {label} | model | lr | final val loss | gap vs rmsnorm | rmsnorm/model steps to "
         "bigram | rmsnorm/model steps to T3 | reaches rmsnorm final (T1) | ms/step |",
         "|---" * 9 + "|"]
    for c in summary[axis]["cells"]:
        for row in c["rows"]:
            ref = row["model"] == "rmsnorm"
            t2, t3 = (sv._ratio_cell(row[t], row["model"]) for t in ("T2", "T3"))
            gap = "—" if ref else _pm(row.get("gap_mean"), row.get("gap_std"), sign=True)
            L.append(f"| {c['value']} | {row['model']} | {_lr_cell(row)} | "
                     f"{_pm(row['final_mean'], row['final_std'])} | {gap} | {t2} | {t3} | "
                     f"{_reach_cell(row['T1'], len(row['seeds']), ref)} | "
                     f"{row['ms_per_step']:.2f} |")
    L += ["", "Targets: " + "; ".join(
        f"{axis_value_label(axis, c['value'])}: bigram {fmt(c['targets']['T2'])}, T3 "
        f"{fmt(c['targets']['T3'])}, T1 {fmt(c['targets']['T1'])}"
        for c in summary[axis]["cells"]), ""]
    return L + (_iso_table(summary) if axis == "length" else [])


def _sweeps_and_scales(summary, opts):
    L = [f"## Learning-rate sweeps (final val loss, seed {opts.seed}; best in bold)", "",
         "| axis | cell | model | lr: final val loss |", "|---|---|---|---|"]
    rows = [(axis, c, row) for axis, _f, _l in AXES for c in summary[axis]["cells"]
            for row in c["rows"]]
    for axis, c, row in rows:
        cell = " · ".join(f"**{lr:.3g}: {fmt(v)}**" if lr == row["best_lr"] else
                          f"{lr:.3g}: {'diverged' if v is None else fmt(v)}"
                          for lr, v in row["sweep"])
        L.append(f"| {axis} | {axis_value_label(axis, c['value'])} | {row['model']} | {cell} |")
    extended = "; ".join(f"{axis} {c['value']} {row['model']} ({row['extended']}×)"
                         for axis, c, row in rows if row["extended"])
    edges = "; ".join(f"{axis} {c['value']} {row['model']}"
                      for axis, c, row in rows if row["at_edge"])
    L += ["", f"Sweeps extended past an edge: {extended or 'none'}. Best lr still at the edge "
          f"after the extensions: {edges or 'none'}.", ""]
    L += ["## Learned sphere scales at the end (mean over seeds of the mean over elements)", "",
          "| axis | cell | model | " + " | ".join(SCALE_GROUPS) + " |", "|---" * 8 + "|"]
    for axis, c, row in rows:
        if "final_scales" in row:
            L.append(f"| {axis} | {axis_value_label(axis, c['value'])} | {row['model']} | "
                     + " | ".join(f"{row['final_scales'][g]:.3g}" for g in SCALE_GROUPS) + " |")
    return L + ["", "Plots: `gap_length.png`, `gap_depth.png`, `gap_width.png` (final val loss per "
                "model and the gap per seed pair along each axis), `val_curves_length.png`, "
                "`lr_sweeps.png`.", ""]


def markdown(summary, data, opts, info):
    L = _header(data, opts, info) + _trend(summary)
    for axis, _field, label in AXES:
        L += _axis_table(summary, axis, label)
    return "\n".join(L + _sweeps_and_scales(summary, opts))


# =========================================================================== plots

def plot_gap(plt, summary, axis, label, bigram, opts, out):
    """gap_<axis>.png: final val loss per model, and the gap per seed pair, along one axis."""
    cells = summary[axis]["cells"]
    xs = [c["value"] for c in cells]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.3))
    models = [m for m in MODELS if any(r["model"] == m for c in cells for r in c["rows"])]
    for j, model in enumerate(models):
        rows = [next(r for r in c["rows"] if r["model"] == model) for c in cells]
        off = 2 ** ((j - (len(models) - 1) / 2) * 0.06)  # a small offset between models
        for key, ax, name in (("finals", ax1, model), ("gaps", ax2, f"{model} − rmsnorm")):
            if key == "gaps" and model == "rmsnorm":
                continue
            for x, r in zip(xs, rows):
                points = [v for v in r[key] if v is not None]
                ax.plot([x * off] * len(points), points, ".", color=COLORS[model], alpha=0.5)
            mean, std = ("final_mean", "final_std") if key == "finals" else ("gap_mean", "gap_std")
            ax.errorbar([x * off for x in xs], [r[mean] for r in rows], [r[std] or 0 for r in rows],
                        marker="o", capsize=3, color=COLORS[model], label=name)
    ax2.axhline(0, color="k", lw=1)
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2 if axis != "length" else 10)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:,}" for x in xs])
        ax.minorticks_off()
        ax.set_xlabel(label + (" (log scale)" if axis == "length" else " (log2 scale)"))
        ax.legend(fontsize=8)
    ax1.set(ylabel=f"final val loss (nats/token; bigram: {bigram:.3f})",
            title=f"final val loss: mean ± std over {opts.seeds} seeds (dots: seeds)")
    ax2.set(ylabel="gap: sphere − rmsnorm final val loss (nats)",
            title="gap per seed pair (dots), mean ± std; below 0: sphere better")
    common.save_fig(fig, os.path.join(out, f"gap_{axis}.png"), f"Sphere vs RMSNorm along {axis} "
                    "(other axes at the base point), each model at its own lr")


def plot_length_curves(plt, summary, data, bigram, out):
    """val_curves_length.png: the val curves of the length sweep."""
    cells = summary["length"]["cells"]
    fig, axes = plt.subplots(1, len(cells), figsize=(5.2 * len(cells), 4), squeeze=False)
    for c, ax in zip(cells, axes[0]):
        for row in c["rows"]:
            runs = [data["records"][(row["model"], c["steps"], c["n_layer"], c["n_embd"],
                                     "seeds", seed)] for seed in row["seeds"]]
            common.band(ax, runs, f"{row['model']} (lr {row['best_lr']:.3g})", COLORS[row["model"]])
        ax.axhline(bigram, color="gray", ls="--", lw=1, label=f"bigram {bigram:.3f}")
        ax.set_ylim((c["targets"]["T1"] or bigram) - 0.08, bigram + 0.35)
        ax.set(xlabel="optimizer step (log scale)", ylabel="val loss (nats/token)",
               title=f"{c['steps']:,} steps: mean and min-max over seeds")
        ax.legend(fontsize=8)
    common.save_fig(fig, os.path.join(out, "val_curves_length.png"))


def plot_lr_sweeps(plt, summary, opts, out):
    """lr_sweeps.png: one panel per axis, one line per (model, cell)."""
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.3))
    for (axis, _field, _label), ax in zip(AXES, axes):
        cells = summary[axis]["cells"]
        for i, c in enumerate(cells):
            for row in c["rows"]:
                color = COLORS[row["model"]]
                ax.plot([lr for lr, _ in row["sweep"]],
                        [np.nan if v is None else v for _, v in row["sweep"]], marker="o", ms=3,
                        ls=("-", "--", ":", "-.")[i % 4], color=color,
                        label=f"{row['model']}, {axis_value_label(axis, c['value'])}")
                best = dict(row["sweep"])[row["best_lr"]]
                if best is not None:
                    ax.plot([row["best_lr"]], [best], "*", ms=10, color=color)
        ax.set_xscale("log")
        ticks = sorted({lr for c in cells for row in c["rows"] for lr, _ in row["sweep"]})
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:.3g}" for t in ticks], fontsize=7)
        ax.minorticks_off()
        ax.set(xlabel="peak learning rate", ylabel=f"final val loss (seed {opts.seed})",
               title=f"lr sweeps, {axis} axis (star: chosen)")
        ax.legend(fontsize=6, ncol=2)
    common.save_fig(fig, os.path.join(out, "lr_sweeps.png"))


def plots(summary, data, opts, out):
    plt = common.pyplot()
    bigram = data["baselines"]["bigram"]
    for axis, _field, label in AXES:
        plot_gap(plt, summary, axis, label, bigram, opts, out)
    plot_length_curves(plt, summary, data, bigram, out)
    plot_lr_sweeps(plt, summary, opts, out)


# =========================================================================== CLI

QUICK = {"lengths": [10, 20], "layers": [1, 2], "widths": [16, 32], "seeds": 2, "val_docs": 24,
         "base_sweep": 1, "sweep": 0, "max_extend": 1}


def parser():
    p = common.study_parser(
        "scaling", __doc__, "10/20 steps, 1/2 layers, widths 16/32, 2 seeds, tiny lr sweeps, 24 "
        "val docs", workers=2, seeds=3, seed=0, lr0=0.01, sweep=1, max_extend=6, batch_size=16,
        n_head=4, block_size=16, val_docs=600, split_seed=42, max_memory=4.0)
    add = p.add_argument
    add("--corpus", default=DEFAULT_CORPUS,
        help="a built-in corpus (names, jp-names) or a UTF-8 text file, one doc per line, e.g. "
             "makemore's names.txt (default names)")
    add("--lengths", type=common.int_list, default=[2000, 10000, 40000],
        help="training-length axis, comma-separated steps (default 2000,10000,40000; the first "
             "is the base point)")
    add("--layers", type=common.int_list, default=[1, 2, 4, 8],
        help="depth axis, comma-separated n_layer (default 1,2,4,8; the first is the base point)")
    add("--widths", type=common.int_list, default=[16, 32, 64],
        help="width axis, comma-separated n_embd (default 16,32,64; the first is the base point)")
    add("--no-alpha-variant", dest="alpha_variant", action="store_false",
        help="leave out the 'sphere a=1/L' model (alpha_init = 1/n_layer) of the depth sweep")
    add("--base-sweep", type=common.nonneg_int, default=2,
        help="the base cell sweeps k = -B..B on the lattice lr0*2^(k/2) (default 2: 5 lrs)")
    add("--reuse", metavar="PATH",
        help="take every run whose arguments match from an earlier results.json instead of "
             "training it again (same corpus, split and val docs required), e.g. to add seeds")
    return p


RULES = {"lengths": "steps", "layers": "n_layer", "widths": "n_embd"}


def check_options(opts):
    """Every flag by the settings table's rules, the lrs the sweeps may reach, the widths against
    --n-head, and the axes' values each once."""
    common.check_flags(opts, RULES)
    for width in opts.widths:
        if width % opts.n_head:
            raise InputError(f"every width must be divisible by --n-head ({opts.n_head}); "
                             f"got {width}")
    for name in ("lengths", "layers", "widths"):
        xs = getattr(opts, name)
        if len(set(xs)) != len(xs):
            raise InputError(f"--{name} has repeated values: {xs}")
    cells = max(map(len, (opts.lengths, opts.layers, opts.widths)))  # a sweep drifts cell by cell
    reach = opts.base_sweep + cells * (opts.sweep + opts.max_extend)
    units = len(MODELS) * (len(opts.lengths) + len(opts.layers) + len(opts.widths))
    common.check_plan(units * (2 * max(opts.base_sweep, opts.sweep) + 1 + opts.max_extend
                               + opts.seeds))
    common.check_lattice(opts, -reach, reach)


def check_memory(opts, data):
    """The largest cell's runs on --workers workers against --max-memory (before any run)."""
    vocab_size = len(data["vocab"]) + 1
    configs = [GPTConfig(vocab_size, n_embd=e, n_head=opts.n_head, n_layer=n,
                                block_size=opts.block_size)
               for e in opts.widths for n in opts.layers]
    docs = data["train"] + data["val"]
    common.check_grid_memory(configs, opts.batch_size, max(opts.lengths), opts.workers,
                             (len(docs), sum(map(len, docs))), opts.max_memory,
                             positions=max(map(len, docs)) + 1)


def load_data(opts):
    """The corpus (built in, or a file), the split, the val subset and the baselines (InputError:
    one line)."""
    if opts.corpus not in BUILTIN:
        try:
            check_readable_file(opts.corpus, "corpus file")
        except InputError as e:
            raise InputError(f"{e}; pass the path of names.txt with --corpus PATH") from None
    try:
        docs = load_corpus(opts.corpus)
    except InputError as e:
        raise InputError(f"{e} (pass another file with --corpus PATH)") from None
    if opts.corpus in BUILTIN:
        digest = fingerprint(docs)
    else:
        with open(opts.corpus, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    data = sv.corpus_data(docs, opts, opts.widths[0])
    return dict(data, corpus=shown_path(opts.corpus), corpus_sha256=digest,
                n_train=len(data["train"]), n_val_used=len(data["val"]))


RECORD = {"model": lambda x: x in MODELS, "phase": lambda x: x in ("sweep", "seeds"),
          "final_val": common.loss_or_none, "val_curve": common.is_curve,
          "seconds": common.is_number,
          "ms_per_step": common.is_number, "lr": common.is_number,
          **{k: lambda x: isinstance(x, int) and not isinstance(x, bool)
             for k in ("n_embd", "n_head", "n_layer", "block_size", "steps", "batch_size", "lr_k",
                       "seed")}}


def load_cache(path, data, opts, what="reuse runs from"):
    """An earlier results.json's runs by run_key (same corpus, split, val docs), and its origin:
    --reuse PATH, or this study's own results.json in --out (what an interrupted study kept)."""
    raw, runs = common.read_results(path, what, FILE)
    try:
        old, info = raw["options"], raw["info"]
        same = (raw["corpus_sha256"] == data["corpus_sha256"]
                and old["split_seed"] == opts.split_seed and old["val_docs"] == opts.val_docs)
        cache = {run_key(r): r for r in runs}
        keys = ("command", "started", "wall_s", "n_runs", "load_start", "load_end")
        reused_from = {k: info[k] for k in keys}
        reused_from["reused_from"] = info.get("reused_from") if info.get("n_reused") else None
    except (KeyError, TypeError, AttributeError) as e:
        raise InputError(f"cannot {what} {path!r}: {type(e).__name__}: {e}") from None
    if not same:
        raise InputError(f"cannot {what} {path!r}: another corpus, --split-seed or --val-docs"
                         + (" (use another --out)" if what != "reuse runs from" else ""))
    return cache, reused_from


def report(units, axes, base, data, opts, info, records, out, other=()):
    """Write results.json, results.md and the plots; return the markdown."""
    summary = summarize(axes, units, data, opts)
    order = {key: i for i, key in enumerate(units)}
    records.sort(key=lambda r: (order[(r["model"], r["steps"], r["n_layer"], r["n_embd"])],
                                r["phase"] != "sweep", r["lr_k"], r["seed"]))
    data["records"] = {(r["model"], r["steps"], r["n_layer"], r["n_embd"], r["phase"], r["seed"]): r
                       for r in records if r["phase"] == "seeds"}
    md = markdown(summary, data, opts, info)
    common.write_json(os.path.join(out, "results.json"), {
        "complete": True, "corpus": data["corpus"], "corpus_sha256": data["corpus_sha256"],
        "options": record(opts), "info": info,
        **{k: data[k] for k in ("n_docs", "n_train", "n_val_full", "n_val_used", "baselines")},
        "vocab": "".join(data["vocab"]), "base_point": list(base),
        "lr_lattice": f"{opts.lr0:g} * 2^(k/2)", "summary": summary, "runs": records,
        "other_runs": list(other)})
    common.write_text(os.path.join(out, "results.md"), md)
    plots(summary, data, opts, out)
    return md


def restore(raw, opts, _folder):
    """--from-json: the plan's units again from the run records; a writer of the report."""
    base, axes, units = build_plan(opts)
    for r in raw["runs"]:
        units[(r["model"], r["steps"], r["n_layer"], r["n_embd"])].add(r)
    for unit in units.values():
        unit.restore(2 * (opts.base_sweep if unit.parent is None else opts.sweep) + 1, unit.key)
    keys = ("n_docs", "n_train", "n_val_full", "n_val_used", "baselines", "corpus_sha256")
    data = dict({k: raw[k] for k in keys}, corpus=raw["corpus"], vocab=list(raw["vocab"]))
    return functools.partial(report, units, axes, base, data, opts, raw["info"], raw["runs"],
                             other=raw.get("other_runs", []))


def study(opts, argv):
    """Train the study (InputError before anything is trained), continuing the results.json in
    --out; return the markdown."""
    check_options(opts)
    data = load_data(opts)
    check_memory(opts, data)
    cache, reused_from = load_cache(opts.reuse, data, opts) if opts.reuse else ({}, None)
    own = {}
    out = common.output_folder(opts.out, "scaling", opts.quick)
    path = os.path.join(out, "results.json")
    if os.path.lexists(path):  # an interrupted (or finished) study: its runs are taken as they are
        own, own_from = load_cache(path, data, opts, "continue from")
        cache, reused_from = {**cache, **own}, own_from
        common.kept(f"the {len(own)} runs in {path} are kept as they were")
    base, axes, units = build_plan(opts)
    started, load_start, t0 = common.now_utc(), common.load_average(), time.perf_counter()
    log(f"corpus {shown_path(opts.corpus)}: {data['n_docs']} docs, {data['n_train']} train, "
        f"{data['n_val_used']} val used; bigram val loss {data['baselines']['bigram']:.4f}; "
        f"{len(units)} model-cells, {opts.workers} workers; {len(cache)} runs already known; "
        f"writing to {out}")

    def info_now(records, n_reused):
        return {"command": common.command_line("scaling.py", argv),
                "machine": common.machine_info(), "started": started, "load_start": load_start,
                "load_end": common.load_average(), "wall_s": time.perf_counter() - t0,
                "run_s": sum(r["seconds"] for r in records), "n_runs": len(records),
                "n_reused": n_reused, "reused_from": reused_from if n_reused else None,
                "base": list(base)}

    def save(records, n_reused):
        raw = {"complete": False, "corpus": data["corpus"], "corpus_sha256": data["corpus_sha256"],
               "options": record(opts), "info": info_now(records, n_reused), "runs": records,
               "other_runs": common.other_runs(own, records, run_key)}
        common.save_runs(lambda: common.write_json(path, raw), path, len(records), "study")

    records, wall, n_reused = Study(units, opts, cache, save).run(data)
    info = info_now(records, n_reused)
    md = report(units, axes, base, data, opts, info, records, out,
                other=common.other_runs(own, records, run_key))
    log(f"done in {fmt_time(wall)} wall ({len(records)} runs, {fmt_time(info['run_s'])} of run "
        f"time); wrote results.md, results.json and 5 PNGs to {out}")
    return md


def record(opts):
    """The options as results.json records them: no path outside the repository."""
    return {**vars(opts), "corpus": shown_path(opts.corpus), "out": None,
            "reuse": opts.reuse and common.outside_repo(opts.reuse)}


FILE = common.ResultsFile(RECORD, parser, check_options)


@common.cli
def main(argv):
    opts = common.parse(parser(), argv, QUICK)
    return (common.rerender(opts, restore, 5, FILE) if opts.from_json
            else study(opts, argv))


if __name__ == "__main__":
    from harness import leave
    leave(main())
