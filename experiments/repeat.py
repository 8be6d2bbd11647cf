"""Where context provably matters: a random string written twice. Is nGPT faster?

Each document is a random string of L letters (L uniform in [T/4, T/2)) written twice.
The first copy cannot be predicted (ln 26 nats a letter at best); the second can only be
read from the first, so its loss measures the use of context and nothing else. The
chapter's model, unchanged (learned wpe, ReLU, batch 8, lr decaying linearly), trains
with each norm at its own lr; the runs record the copy-2 loss, the steps to reach 3.0 /
2.0 / 1.0 nats, the same loss when the first copy is replaced by other letters, and the
attention at the copy positions. Diagnosis arms (`variant`) ask why the sphere is slow
here. experiments/README.md gives the protocol and the verdict fixed before the runs.
results.json is rewritten after every run: the same command continues an interrupted
grid.

    python experiments/repeat.py                          # the full grid, CPU-hours
    python experiments/repeat.py --contexts 64 --seeds 2 --deadline 05:10  # a part
    python experiments/repeat.py --quick --out /tmp/q     # smoke test, seconds
    python experiments/repeat.py --from-json experiments/results/repeat/results.json
"""
import os
import sys

if __name__ == "__main__":  # a Ctrl-C while NumPy loads ends quietly (no traceback from an import)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from harness import quiet_startup
    quiet_startup("repeat.py")

import math
from dataclasses import dataclass

import common
import grid
import numpy as np
from common import fmt, fmt_time
from copytask import ALPHA_ARM, LN26, TARGETS, VARIANTS
from grid import best_k, beyond_edge, goodness, units_of

from model_config import GPTConfig

# ---- the pre-registration (fixed before the grid ran; experiments/README.md too) ----
GATE_COPY2 = grid.RANK_AT  # G1: every rmsnorm seed at T reaches copy-2 <= 1.0 in the run
GATE_LEAK = 0.02      # G3: copy-1 >= ln 26 - 0.02 (no leak of the string into copy 1)
R_TARGETS = (2.0, 1.0)  # r = rmsnorm steps / sphere steps to these copy-2 losses, per paired seed


# ==================================================================== the measurements

def paired_ratio(rms, sph, target, steps):
    """r = rmsnorm steps / sphere steps to copy-2 <= target, censored, never imputed:
    ["=", r] if both get there; ["<", rms / S] if only rmsnorm does (the sphere would
    need more than S); [">", S / sph] if only the sphere does; None if neither (or a run
    is missing)."""
    if rms is None or sph is None:
        return None
    a, b = rms.steps_to[str(target)], sph.steps_to[str(target)]
    if a is not None and b is not None:
        return ["=", a / b]
    if a is not None:
        return ["<", a / steps]
    return None if b is None else [">", steps / b]


def gate(runs_at, seeds, steps):
    """G1-G4 at one T from the seed runs {(norm, variant, seed): record}: passed only
    when every planned rmsnorm seed has run; each entry says what it saw."""
    rms = [runs_at.get(("rmsnorm", "default", s)) for s in seeds]
    done = [r for r in rms if r is not None]
    sph = [r for (n, v, s), r in runs_at.items() if n == "sphere" and v == "default"
           and r.steps_to[str(GATE_COPY2)] is not None]
    g = {"G1": bool(done) and all(r.steps_to[str(GATE_COPY2)] is not None for r in done),
         "G2": bool(done) and all(r.copy2_ablated is not None and r.copy2_ablated >= LN26
                                  for r in done),
         "G3": bool(done) and all(r.copy1 is not None and r.copy1 >= LN26 - GATE_LEAK
                                  for r in done),
         "G4": all(r.copy2_ablated >= LN26 and r.copy1 >= LN26 - GATE_LEAK for r in sph)}
    return {"seeds_run": len(done), "seeds_planned": len(seeds), **g, "sphere_counted": len(sph),
            "passed": len(done) == len(seeds) and all(g.values())}


def verdict_at(ratios):
    """The pre-registered reading of one T's paired r at 1.0 nat: 'sphere faster' if
    every seed's r is > 1 (a censored '> x' with x >= 1 counts), 'sphere slower' if
    every seed's r is < 1 (a censored '< x' with x <= 1 counts), 'mixed' otherwise;
    'undecided' if a pair has no r."""
    if not ratios or any(r is None for r in ratios):
        return "undecided"
    above = [x > 1 if kind == "=" else kind == ">" and x >= 1 for kind, x in ratios]
    below = [x < 1 if kind == "=" else kind == "<" and x <= 1 for kind, x in ratios]
    return "sphere faster" if all(above) else "sphere slower" if all(below) else "mixed"


def verdict(rows):
    """Against the anchors' direction, over the T whose gate passed: 'supports' if the
    sphere is faster at every such T and the median r rises with T; 'contradicts' if it
    is slower at every such T; 'neither' otherwise; no verdict where no gate passed."""
    gated = [row for row in rows if row.gate["passed"]]
    if not gated:
        return "no verdict: the gate has not passed at any T (see the gate table)"
    calls = [row.verdict_at for row in gated]
    Ts = ", ".join(str(row.T) for row in gated)
    if all(c == "sphere slower" for c in calls):
        return f"contradicts: the sphere is slower at every gated T ({Ts})"
    medians = [row.r_median for row in gated]
    rising = None not in medians and all(b > a for a, b in zip(medians, medians[1:]))
    if all(c == "sphere faster" for c in calls) and rising:
        return f"supports: the sphere is faster at every gated T ({Ts}) and r rises with T"
    return f"neither: at T = {Ts} the readings are {', '.join(calls)}"


def unit_summary(unit_runs, opts):
    """One unit's sweep (lr -> goodness numbers), its chosen lr (None: not finished)."""
    sweep = sorted((r for r in unit_runs if r.phase == "sweep"), key=lambda r: (r.lr_k, r.seed))
    by_k = {}
    for r in sweep:
        by_k.setdefault(r.lr_k, []).append(r)
    seeds = [r for r in unit_runs if r.phase == "seeds"]
    chosen = seeds[0].lr if seeds else None
    ks = sorted(by_k)
    if chosen is None and len(ks) >= 2 * opts.sweep + 1 and all(  # the sweep ran: its pick
            len(runs) == opts.tune_seeds for runs in by_k.values()):
        best = best_k(by_k)
        if beyond_edge(ks, best, len(ks) - (2 * opts.sweep + 1), opts.max_extend) is None:
            chosen = by_k[best][0].lr
    return {"sweep": [{"lr": r.lr, "copy2": r.copy2, "steps_to": r.steps_to,
                       "copy1": r.copy1, "copy2_ablated": r.copy2_ablated} for r in sweep],
            "lr": chosen, "seeds_done": sorted(r.seed for r in seeds)}


@dataclass(frozen=True)
class Row:
    """One context length's numbers: the gate, each unit's sweep and seeds, the paired r
    (str(target) -> per seed), each arm's r at 1.0 nat, seed 0's first look (tuning),
    and the reading at 1.0 nat and the median r."""
    T: int
    gate: dict
    units: dict
    r: dict
    arms_r: dict
    tuning: dict
    verdict_at: str
    r_median: float | None


def summarize_T(T, records, opts, seeds):
    """The numbers of one context length from the records (a partial grid too)."""
    at = [r for r in records if r.T == T]
    runs_at = {(r.norm, r.variant, r.seed): r for r in at if r.phase == "seeds"}
    units = {f"{n}/{v}": unit_summary([r for r in at if (r.norm, r.variant) == (n, v)], opts)
             for n, v in sorted({(r.norm, r.variant) for r in at})}
    r = {str(target): [paired_ratio(runs_at.get(("rmsnorm", "default", s)),
                                    runs_at.get(("sphere", "default", s)), target, opts.steps)
                       for s in seeds] for target in R_TARGETS}
    arms = {}  # each arm in the sphere's place, against rmsnorm/default
    for (_, v, s), rec in runs_at.items():
        if v != "default":
            arms.setdefault(v, {})[s] = paired_ratio(runs_at.get(("rmsnorm", "default", s)),
                                                     rec, GATE_COPY2, opts.steps)
    ones = r[str(GATE_COPY2)]
    exact = [x for kind, x in filter(None, ones)]
    return Row(T, gate(runs_at, seeds, opts.steps), units, r, arms, tuning_ratios(at, units, opts),
               verdict_at(ones), float(np.median(exact)) if exact and None not in ones else None)


def tuning_ratios(at, units, opts):
    """Seed 0, where every unit ran its sweep: each unit's run at its chosen lr against
    rmsnorm/default's at its own, r at 2.0 and 1.0 (censored): a first look, one seed,
    and the seed the lrs were chosen on (so each side's best case)."""
    def chosen(name):
        u = units.get(name)
        return None if u is None or u["lr"] is None else next((
            r for r in at if f"{r.norm}/{r.variant}" == name and r.phase == "sweep"
            and r.lr == u["lr"]), None)

    base = chosen("rmsnorm/default")
    return {name: {str(t): paired_ratio(base, chosen(name), t, opts.steps) for t in R_TARGETS}
            for name in units if name != "rmsnorm/default" and chosen(name) is not None}


def contexts_of(records, opts):
    """The T of this invocation and of every run in results.json, shortest first."""
    return sorted(set(opts.contexts) | {r.T for r in records})


@dataclass(frozen=True)
class Summary:
    """results.json's "summary": a Row per T, the paired seeds and the verdict."""
    rows: list
    seeds: list
    verdict: str


def summarize(records, opts):
    seeds = list(common.paired_seeds(opts))
    rows = [summarize_T(T, records, opts, seeds) for T in contexts_of(records, opts)]
    return Summary(rows, seeds, verdict(rows))


# ============================================================================== report

def _ratio(r, nd=2):
    if r is None:
        return "—"
    return f"{r[1]:.{nd}f}" if r[0] == "=" else f"{r[0]} {r[1]:.{nd}f}"


def _seeds(seeds):
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}–{seeds[-1]}"


def _header(opts, info, records):
    m = info["machine"]
    lines = [f"- `{v['command']}` started {v['started']}, "
             + ("stopped by --deadline or interrupted, " if not v.get("finished") else "")
             + f"{v['n_trained']} runs trained, wall {fmt_time(v['wall_s'])}, load average "
             f"{v['load_start']} → {v['load_end']}"
             + (f", on {v['machine']['cpu']}" if "machine" in v else "")
             for v in info["invocations"]]
    return [
        "# Where context provably matters: a random string written twice", "",
        f"Each document is a random string of L letters (L uniform in [T/4, T/2)) written twice; "
        f"copy 1 cannot be predicted (ln 26 = {LN26:.3f} nats a letter), copy 2 only from copy 1. "
        f"Model: n_embd {opts.n_embd}, n_head {opts.n_head}, n_layer {opts.n_layer}, learned wpe, "
        f"ReLU, block_size = T; batch {opts.batch_size} documents a step; NumPy engine, float32; "
        f"Adam with the lr decaying linearly to 0 over {opts.steps:,} steps. Held out: "
        f"{opts.val_docs} fixed documents per T and their ablated twins (copy 1 replaced, each "
        "letter by another). lr per unit on the lattice "
        f"{opts.lr0:g}·10^(k/2), k = −{opts.sweep}..{opts.sweep}, "
        + _seeds(common.tuning_seeds(opts)) + "; ranked by "
        f"the steps to copy-2 ≤ {GATE_COPY2}, then the final copy-2 loss"
        + (" (an lr by its worst seed)" if opts.tune_seeds > 1 else "") + ".", "",
        f"Machine (of the last invocation): {m['cpu']}, {m['cpu_count']} logical CPUs, "
        f"Python {m['python']}, NumPy "
        f"{m['numpy']}; shared with other work. Compute: {len(records)} runs, "
        f"**{info['cpu_s'] / 3600:.2f} CPU hours**, {fmt_time(info['wall_s'])} wall over "
        f"{len(info['invocations'])} invocation(s):", *lines, "", *_machines(records), ""]


def _machines(records):
    """Which CPU ran how many runs, and the units whose runs came from more than one."""
    cpus, by_unit = {}, {}
    for r in records:
        cpu = (r.machine or {}).get("cpu", "not recorded")
        cpus[cpu] = cpus.get(cpu, 0) + 1
        if cpu != "not recorded":
            by_unit.setdefault((r.T, f"{r.norm}/{r.variant}"), set()).add(cpu)
    mixed = [f"T = {T}, {name} ({', '.join(sorted(c))})"
             for (T, name), c in sorted(by_unit.items()) if len(c) > 1]
    return ["Runs by CPU: " + ", ".join(f"{cpu} {n}" for cpu, n in sorted(cpus.items()))
            + (" (not recorded: runs from before each run recorded its machine; the "
               "invocations above name theirs)" if "not recorded" in cpus else "")
            + f". Units with runs from more than one recorded CPU: {'; '.join(mixed) or 'none'}."]


def _status(summary, opts, records, complete, study_parser):
    """Which runs exist, against the planned grid: the study's defaults, at the T
    asked for too; a control (a model or seeds unlike the defaults': grid.SAME) plans
    only its own T."""
    full = study_parser().parse_args([])
    control = any(getattr(opts, k) != getattr(full, k) for k in grid.SAME)
    full.contexts = sorted(set(opts.contexts) | (set() if control else set(full.contexts)))
    units = len(units_of(full)) // len(full.contexts)
    lattice = (2 * full.sweep + 1) * full.tune_seeds  # a unit's sweep before any extension
    plan = units * (lattice + full.seeds)
    done = {row.T: sum(len(u["sweep"]) + len(u["seeds_done"]) for u in row.units.values())
            for row in summary.rows}
    extended = {row.T: sum(max(0, len(u["sweep"]) - lattice) for u in row.units.values())
                for row in summary.rows}  # runs in sweeps extended past an edge
    planned = "; ".join(f"T = {T}: {done.get(T, 0)} of about {plan + extended.get(T, 0)} runs"
                        for T in full.contexts)
    rows = {row.T: row.units for row in summary.rows}
    names = sorted({f"{n}/{v}" for n, v, _ in units_of(full)})
    absent = {T: [n for n in names if n not in rows.get(T, {})] for T in full.contexts}
    partial = not complete or any(absent.values()) or any(
        len(u["seeds_done"]) < full.seeds for units in rows.values() for u in units.values())
    not_run = "; ".join(f"T = {T}: {', '.join(a)}" for T, a in absent.items() if a)
    L = ["## Which runs exist", "",
         ("**Partial results.** " if partial else "") + f"The planned grid ({units} units per T, "
         f"each {2 * full.sweep + 1} lrs on {_seeds(common.tuning_seeds(full))} (more if the "
         f"best is at an edge), then {full.seeds} seeds): {planned}."
         + (f" Units never run: {not_run}." if not_run else ""), "",
         f"| T | unit | lr sweep ({_seeds(common.tuning_seeds(opts))}): lr → final copy-2 / steps "
         "to 1.0 | chosen lr | seeds done |", "|---|---|---|---|---|"]
    for row in summary.rows:
        for name, u in row.units.items():
            cells = " · ".join(f"{s['lr']:.3g} → {fmt(s['copy2'])} / "
                               f"{fmt(s['steps_to'][str(GATE_COPY2)], 0)}" for s in u["sweep"])
            L.append(f"| {row.T} | {name} | {cells or 'pending'} | "
                     f"{'pending' if u['lr'] is None else format(u['lr'], '.3g')} | "
                     f"{', '.join(map(str, u['seeds_done'])) or 'none'} of {opts.seeds} |")
    return L + [""] + _chosen_blind(summary, opts) + [""]


def _chosen_blind(summary, opts):
    """The units whose lr no sweep run could rank by speed: none reached copy-2 <= 1.0,
    so the final copy-2 alone chose it; under 0.001 nats ahead of the next lr is a
    tie."""
    L = []
    for row in summary.rows:
        for name, u in row.units.items():
            worst_final = {}  # lr -> its worst tuning seed's final copy-2 (diverged: inf)
            for s in u["sweep"]:
                final = math.inf if s["copy2"] is None else s["copy2"]
                worst_final[s["lr"]] = max(final, worst_final.get(s["lr"], final))
            finals = sorted(x for x in worst_final.values() if x < math.inf)
            if len(finals) < 2 or u["lr"] is None or any(
                    s["steps_to"][str(GATE_COPY2)] is not None for s in u["sweep"]):
                continue
            margin = finals[1] - finals[0]
            L.append(f"- T = {row.T}, {name}: no lr of the sweep reached copy-2 ≤ "
                     f"{GATE_COPY2}; the final copy-2 alone chose {u['lr']:.3g}, "
                     f"{margin:.4f} nats ahead of the next lr"
                     + (f" (a tie: its {len(finals)} finals lie within "
                        f"{finals[-1] - finals[0]:.4f} nats)" if margin < 0.001 else "")
                     + f"; seeds {opts.seed + opts.tune_seeds}–"
                     f"{opts.seed + opts.tune_seeds + opts.seeds - 1} ran at that lr only.")
    return L


def _gate_and_r(summary):
    L = ["## The gate and the paired ratio", "",
         f"G1: every rmsnorm seed reaches copy-2 ≤ {GATE_COPY2}; G2: its ablated copy-2 ≥ ln 26; "
         f"G3: its copy-1 ≥ ln 26 − {GATE_LEAK}; G4: G2 and G3 for the sphere runs counted (those "
         f"that reach {GATE_COPY2}). r = rmsnorm steps / sphere steps to the target, per paired "
         "seed; '<': the sphere never got there (rmsnorm steps / S); '>': rmsnorm never did.", "",
         "| T | seeds run | G1 | G2 | G3 | G4 | gate | r at 2.0 | r at 1.0 | reading at 1.0 |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for row in summary.rows:
        g, checks = row.gate, ("G1", "G2", "G3", "G4")
        yes = {True: "yes", False: "no"}
        holding = not g["seeds_run"] or all(g[k] for k in checks)  # so far
        status = ("passed" if g["passed"] else "pending" if holding and g["seeds_run"]
                  < g["seeds_planned"] else "not passed")
        L.append(f"| {row.T} | {g['seeds_run']} of {g['seeds_planned']} | "
                 + " | ".join(yes[g[k]] if g["seeds_run"] else "—" for k in checks)
                 + f" | **{status}** | "
                 + ", ".join(_ratio(r) for r in row.r["2.0"]) + " | "
                 + ", ".join(_ratio(r) for r in row.r["1.0"]) + f" | {row.verdict_at} |")
    return L + ["", f"Verdict (pre-registered, experiments/README.md): **{summary.verdict}**",
                ""]


def _arms(records, summary):
    """Every unit's runs side by side: when copy 2 reached each target, where it ended,
    and what the attention did at the copy-2 positions by the end (last layer: the head
    with the most weight on the source key, and its entropy; the sphere's effective
    s_qk, mean over layers)."""
    L = ["## The arms side by side", "",
         "Per run: the steps at which copy-2 loss first reached 3.0 / 2.0 / 1.0 nats (linear "
         "between eval points; — never), the final copy-2, its ablated twin and copy-1 losses; at "
         "the end, in the last layer at the copy-2 positions, the largest weight a head puts on "
         "the source key (an induction head: ~1) and that head's entropy (nats; uniform "
         "weights over k keys: ln k); the sphere's effective s_qk (mean over layers; the "
         "attention logit is s_qk² √head_dim cos) and α_A / α_M (mean over layers; at init "
         f"{GPTConfig.alpha_init}; {ALPHA_ARM} in alpha25 and alpha-start, 1/n_layer in alpha-L; "
         "— where a run did not record it).", "",
         "| T | unit | phase | lr | seed | steps to 3.0 / 2.0 / 1.0 | copy-2 | ablated | copy-1 | "
         "source weight | entropy | s_qk | α_A / α_M |", "|---" * 13 + "|"]
    for r in sorted(records, key=lambda r: (r.T, r.phase == "anchor", r.seed, r.norm, r.variant,
                                            r.lr_k, r.steps)):
        to = " / ".join(fmt(r.steps_to[str(t)], 0) for t in TARGETS)
        mass, ent = r.diag["copy_mass"][-1][-1], r.diag["entropy"][-1][-1]
        head = int(np.argmax(mass))
        sqk, alpha = r.diag["s_qk"][-1], (r.diag.get("alpha") or [None])[-1]
        alpha = " / ".join(f"{a:.3f}" for a in np.mean(alpha, axis=0)) if alpha else "—"
        L.append(f"| {r.T} | {r.norm}/{r.variant} | {r.phase}"
                 + (f" ({r.steps:,} steps)" if r.phase == "anchor" else "")
                 + f" | {r.lr:.3g} | {r.seed} | {to} | {fmt(r.copy2)} | "
                 f"{fmt(r.copy2_ablated)} | {fmt(r.copy1)} | {mass[head]:.2f} | "
                 f"{ent[head]:.2f} | {fmt(np.mean([m for m, _ in sqk]) if sqk else None, 2)} | "
                 f"{alpha} |")
    L += ["", "Seed 0, a tuning seed (each lr was chosen on the tuning seeds): each unit at its "
          "chosen lr against rmsnorm/default at its own, r at 2.0 / 1.0 nats (censored as above):",
          ""]
    for row in summary.rows:
        L += [f"- T = {row.T}, {name}: {_ratio(r['2.0'])} / {_ratio(r['1.0'])}"
              for name, r in sorted(row.tuning.items())]
    L += ["", "Each diagnosis arm against rmsnorm/default at the same seed (r at 1.0 nat, "
          "censored as above; the arm in the sphere's place):", ""]
    for row in summary.rows:
        for arm, by_seed in sorted(row.arms_r.items()):
            L.append(f"- T = {row.T}, {arm}: " + ", ".join(
                f"seed {seed}: {_ratio(r)}" for seed, r in sorted(by_seed.items())))
    return L + [""]


def markdown(summary, opts, info, records, complete=True):
    status = _status(summary, opts, records, complete, parser)
    return "\n".join(_header(opts, info, records) + status + _gate_and_r(summary)
                     + _arms(records, summary))


def plots(records, opts, out):
    """curves.png, per T (columns): the copy-2 loss (solid) and its ablated twin
    (dashed) of each unit's best sweep run (seed 0); the last layer's largest weight on
    the source key at the copy-2 positions; the effective s_qk (sphere arms, mean over
    layers)."""
    plt = common.pyplot()
    Ts = [T for T in contexts_of(records, opts) if any(r.T == T for r in records)]
    if not Ts:
        return
    fig, axes = plt.subplots(3, len(Ts), figsize=(5.5 * len(Ts), 11), squeeze=False)
    units = sorted({f"{r.norm}/{r.variant}" for r in records})
    color = {unit: f"C{i}" for i, unit in enumerate(units)}  # a unit's color is the same at every T
    for col, T in enumerate(Ts):
        ax, mx, sx = (axes[i][col] for i in range(3))
        for rec in best_runs(records, T):
            c = color[f"{rec.norm}/{rec.variant}"]
            label = f"{rec.norm}/{rec.variant} lr {rec.lr:.3g} seed {rec.seed}"
            steps = np.maximum(rec.curves["step"], 1)
            ax.plot(steps, rec.curves["copy2"], color=c, label=label)
            ax.plot(steps, rec.curves["copy2_ablated"], color=c, ls="--", lw=0.8)
            mx.plot(steps, [max(d[-1]) for d in rec.diag["copy_mass"]], color=c, label=label)
            if rec.norm == "sphere":
                sx.plot(steps, [np.mean([m for m, _ in d]) for d in rec.diag["s_qk"]],
                        color=c, label=label)
        ax.axhline(LN26, color="gray", ls=":", lw=1, label="ln 26")
        ax.set(xscale="log", xlabel="optimizer step", ylabel="copy-2 loss (nats/letter)",
               title=f"T = {T}: copy 2 (dashed: copy 1 replaced)")
        mx.set(xscale="log", xlabel="optimizer step", ylim=(0, 1),
               ylabel="largest weight on the source key", title=f"T = {T}: last layer at copy 2")
        sx.set(xscale="log", xlabel="optimizer step", ylabel="effective s_qk (mean)",
               title=f"T = {T}: the sphere's s_qk")
        for a in (ax, mx, sx):
            if a.get_legend_handles_labels()[0]:
                a.legend(fontsize=7)
    common.save_fig(fig, os.path.join(out, "curves.png"))


def best_runs(records, T):
    """Per unit at T: its best sweep run (seed 0, for every unit)."""
    out = {}
    for r in records:
        key = (r.norm, r.variant)
        if r.T == T and r.phase == "sweep" and (key not in out
                                                      or goodness(r) < goodness(out[key])):
            out[key] = r
    return list(out.values())


# ======================================================================= the CLI

QUICK = {"contexts": [16, 32], "steps": 24, "seeds": 2, "sweep": 0, "max_extend": 0,
         "val_docs": 16, "n_log": 3, "n_lin": 4, "variants": ["sqk64", "qknorm"]}


def report(records, opts, info, complete):
    summary = summarize(records, opts)
    return summary, markdown(summary, opts, info, records, complete)


def parser():
    return grid.parser("repeat", __doc__, variants=[v for v in VARIANTS if v != "alpha-L"])


REPEAT = grid.Study("repeat", parser, QUICK, report, plots)


@common.cli
def main(argv):
    return grid.run_study(REPEAT, argv)


if __name__ == "__main__":
    from harness import leave
    leave(main())

