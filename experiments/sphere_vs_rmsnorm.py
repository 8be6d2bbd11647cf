"""Does the hypersphere (nGPT) learn in fewer steps than RMSNorm -- at microgpt scale?

Lecture 3 quotes nGPT (Loshchilov et al., ICLR 2025): the same accuracy in 4-20x fewer training steps.
This script asks the same question of microgpt.py's two modes, trained with the NumPy engine on the same
corpus and the same train/val split, and tries to make the comparison fair and honest:

  * every "arm" (rmsnorm, sphere with retraction only, sphere with Riemannian = tangent-projected gradients,
    and the sphere with other initial eigen learning rates alpha / logit scales s_z) gets its OWN learning
    rate: a sweep over --lrs with seed 0, best final val loss wins, then --seeds fresh seeds (1..S) at that lr;
  * the seed sets the init (both modes draw the same Gaussian matrices; the sphere then normalizes them)
    and the order of the training docs (a seeded shuffle), so seed s of rmsnorm and seed s of the sphere
    see the same data in the same order;
  * "steps to target" = the first step at which the val loss curve reaches a target, linearly interpolated
    between eval points (dense early, see eval_points). Targets: T1 = the worst final val loss among the
    rmsnorm seeds (so every rmsnorm seed reaches it), T2 = the character-bigram val loss of the split, and
    T3 = the worst final val loss among the sphere seeds (how early rmsnorm gets to the sphere's end result).
    The ratio rmsnorm/arm is taken per seed pair; a run that never gets there is reported as not reached;
  * all of this at batch sizes x layer counts (--batch-sizes, --n-layers); Riemannian vs retraction in every
    setting; the learned scales (alpha_A, alpha_M, s_qk, s_u, s_z) recorded over training; the alpha_init /
    sz_init sensitivity in the "main" setting (the last batch size, the first layer count).

Outputs (atomically written) in --out: results.md (tables), results.json (every number), val_curves.png,
lr_sweep.png, scales.png, sensitivity.png.

    python experiments/sphere_vs_rmsnorm.py                                    # default corpus `names`
    python experiments/sphere_vs_rmsnorm.py --corpus ../shared/data/names.txt
    python experiments/sphere_vs_rmsnorm.py --quick --out /tmp/q               # smoke test, seconds
"""
import argparse
import json
import math
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # microgpt.py lives at the repo root

import numpy as np  # noqa: E402
from arguments import Parser, float_list, float_list_or_empty, int_list, pos_int  # noqa: E402

from harness.errors import InputError  # noqa: E402
from harness.run_files import atomic_write  # noqa: E402
from microgpt import (  # noqa: E402
    GPTConfig,
    baselines,
    build_vocab,
    doc_tokens,
    evaluate,
    init_params,
    load_corpus,
    split_docs,
    train,
)
from model_config import effective_scales  # noqa: E402

SCALE_GROUPS = ("alpha_A", "alpha_M", "s_qk", "s_u", "s_z")


# =========================================================================== measuring

def measure_at(steps, measure):
    """A silent microgpt.Observer that calls measure(step, params) after each update whose step is in `steps`."""
    from microgpt import Observer

    class MeasureAt(Observer):
        def after_update(self, state, loss, drift):
            if state.step in steps:
                measure(state.step, state.params)
            return False

    return MeasureAt(every=0)


def eval_points(steps, n_log=32, n_lin=16):
    """Steps at which val loss is measured: log-spaced (dense early, where targets are crossed first)
    plus evenly spaced, plus the last step. Step 0 (the init) is measured too."""
    pts = set(np.unique(np.geomspace(1, steps, n_log).round().astype(int)).tolist())
    pts |= set(np.linspace(0, steps, n_lin + 1).round().astype(int).tolist())
    return sorted(p for p in pts if 0 < p <= steps)


def steps_to_target(curve, target):
    """First step at which the val curve [(step, loss), ...] reaches `target`, linearly interpolated
    between the two eval points around the crossing; None if it never does."""
    for i, (s, v) in enumerate(curve):
        if v is not None and v <= target:
            if i == 0:
                return float(s)
            s0, v0 = curve[i - 1]
            return s0 + (v0 - target) / (v0 - v) * (s - s0)
    return None


def run_one(data, opts, *, norm, batch_size, n_layer, lr, seed, riemannian=False, alpha_init=0.05, sz_init=1.0):
    """Train one model; return its val curve, final val loss, timing and (sphere) scale trajectories."""
    vocab, train_docs, val_docs, val_tokens = data["vocab"], data["train"], data["val"], data["val_tokens"]
    cfg = GPTConfig(vocab_size=len(vocab) + 1, n_embd=opts.n_embd, n_head=opts.n_head, n_layer=n_layer,
                    block_size=opts.block_size, norm=norm, alpha_init=alpha_init, sz_init=sz_init)
    order = np.random.default_rng(seed).permutation(len(train_docs))  # the seed also sets the data order
    docs = [train_docs[i] for i in order]
    points = set(data["eval_points"])
    curve, scales = [], []

    def record(step, params):
        curve.append((step, round(evaluate(params, val_tokens, cfg), 6)))  # rounded once, used everywhere
        if norm == "sphere":
            eff = effective_scales(params, cfg)
            scales.append([step] + [[round(float(eff[g].mean()), 6), round(float(eff[g].std()), 6)]
                                    for g in SCALE_GROUPS])

    t0 = time.perf_counter()
    # train() measures val only every eval_every steps; we measure at our own log-spaced points in
    # the observer instead, so train() gets eval_every=steps and one val doc (its own step-0 and final evals
    # are then nearly free and unused). Step 0 is the init train() builds from the same seed.
    record(0, init_params(cfg, seed))
    state = train(docs, val_docs[:1], vocab, cfg, steps=opts.steps, batch_size=batch_size, lr=lr, seed=seed,
                  engine="numpy", riemannian=riemannian, eval_every=opts.steps,
                  observer=measure_at(points, record))
    seconds = time.perf_counter() - t0
    final = curve[-1][1] if not state.error and curve[-1][0] == opts.steps else None
    if final is not None and not math.isfinite(final):
        final = None
    return {"norm": norm, "riemannian": riemannian, "batch_size": batch_size, "n_layer": n_layer, "lr": lr,
            "seed": seed, "alpha_init": alpha_init, "sz_init": sz_init, "final_val": final,
            "error": state.error, "ms_per_step": state.ms_per_step, "seconds": seconds,
            "val_curve": [[int(s), float(v)] for s, v in curve], "scales": scales}


# =========================================================================== the plan

def arms_for(setting, opts, main_setting):
    """The arms (model variants) trained in one (batch_size, n_layer) setting."""
    arms = [{"name": "rmsnorm", "norm": "rmsnorm"},
            {"name": "sphere", "norm": "sphere"},
            {"name": "sphere+riemannian", "norm": "sphere", "riemannian": True}]
    if setting == main_setting:
        for a in opts.alpha_inits:
            arms.append({"name": f"sphere a={a:g}", "norm": "sphere", "alpha_init": a, "sensitivity": True})
        for z in opts.sz_inits:
            arms.append({"name": f"sphere sz={z:g}", "norm": "sphere", "sz_init": z, "sensitivity": True})
        if opts.alpha_inits and opts.sz_inits:  # both large at once
            a, z = max(opts.alpha_inits), max(opts.sz_inits)
            arms.append({"name": f"sphere a={a:g} sz={z:g}", "norm": "sphere", "alpha_init": a, "sz_init": z,
                         "sensitivity": True})
    return arms


def arm_kwargs(arm):
    return {k: arm[k] for k in ("norm", "riemannian", "alpha_init", "sz_init") if k in arm}


def fmt_time(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


class Progress:
    """One stderr line per finished run, with an ETA from measured seconds per step of similar runs."""

    def __init__(self, jobs, steps):
        self.jobs, self.steps, self.done, self.t0 = jobs, steps, 0, time.perf_counter()
        self.per_key = {}  # (norm, batch_size, n_layer) -> [total seconds, runs]

    @staticmethod
    def key(job):
        return job["arm"]["norm"], job["batch_size"], job["n_layer"]

    def estimate(self, job):
        k = self.key(job)
        if k in self.per_key:
            s, n = self.per_key[k]
            return s / n
        if self.per_key:  # unknown kind yet: scale the mean by batch size and depth, roughly
            mean = sum(s for s, _ in self.per_key.values()) / sum(n for _, n in self.per_key.values())
            return mean * (1 + job["batch_size"] / 16) * job["n_layer"] / 1.5
        return None

    def update(self, job, result, remaining):
        self.done += 1
        s = self.per_key.setdefault(self.key(job), [0.0, 0])
        s[0] += result["seconds"]
        s[1] += 1
        eta = sum(self.estimate(j) or 0.0 for j in remaining)
        final = "diverged" if result["final_val"] is None else f"{result['final_val']:.4f}"
        print(f"[{self.done}/{len(self.jobs)}] bs={job['batch_size']} L={job['n_layer']} {job['arm']['name']:<22} "
              f"{job['phase']:<5} lr={job['lr']:.4g} seed={job['seed']}: val {final} ({result['seconds']:.1f}s) | "
              f"elapsed {fmt_time(time.perf_counter() - self.t0)}, ETA {fmt_time(eta)}", file=sys.stderr, flush=True)


def run_all(data, opts):
    settings = [(b, n) for n in opts.n_layers for b in opts.batch_sizes]
    main_setting = (opts.batch_sizes[-1], opts.n_layers[0])
    arms = {s: arms_for(s, opts, main_setting) for s in settings}
    # the job list up front (lr of the seed phase is filled in once the sweep of that arm is done)
    jobs = []
    for b, n in settings:
        for arm in arms[(b, n)]:
            jobs += [{"batch_size": b, "n_layer": n, "arm": arm, "phase": "sweep", "lr": lr, "seed": opts.seed}
                     for lr in opts.lrs]
            jobs += [{"batch_size": b, "n_layer": n, "arm": arm, "phase": "seeds", "lr": None, "seed": opts.seed + s}
                     for s in range(1, opts.seeds + 1)]
    prog = Progress(jobs, opts.steps)
    cpu0 = time.process_time()
    results = {}  # (setting, arm name) -> {"sweep": [...], "best_lr": lr, "seeds": [...]}
    for i, job in enumerate(jobs):
        setting = (job["batch_size"], job["n_layer"])
        rec = results.setdefault((setting, job["arm"]["name"]), {"arm": job["arm"], "sweep": [], "seeds": []})
        if job["phase"] == "seeds" and job["lr"] is None:
            if "best_lr" not in rec:  # lowest final val loss of the sweep; diverged runs never win
                finals = [r["final_val"] if r["final_val"] is not None else math.inf for r in rec["sweep"]]
                rec["best_lr"] = rec["sweep"][int(np.argmin(finals))]["lr"]
            job["lr"] = rec["best_lr"]
        r = run_one(data, opts, batch_size=job["batch_size"], n_layer=job["n_layer"], lr=job["lr"], seed=job["seed"],
                    **arm_kwargs(job["arm"]))
        rec[job["phase"]].append(r)
        prog.update(job, r, jobs[i + 1:])
    # wall time, and the CPU time of this process (the same unless other jobs share the cores)
    return settings, main_setting, arms, results, (time.perf_counter() - prog.t0, time.process_time() - cpu0)


# =========================================================================== summarizing

def mean_std(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None, 0
    return float(np.mean(xs)), float(np.std(xs)), len(xs)


def summarize(settings, main_setting, arms, results, data, opts):
    summary = {}
    for setting in settings:
        rms = results[(setting, "rmsnorm")]["seeds"]
        rms_finals = [r["final_val"] for r in rms if r["final_val"] is not None]
        sph_finals = [r["final_val"] for r in results[(setting, "sphere")]["seeds"] if r["final_val"] is not None]
        targets = {"T1": max(rms_finals, default=None), "T2": data["baselines"]["bigram"],
                   "T3": max(sph_finals, default=None)}
        rows = []
        for arm in arms[setting]:
            rec = results[(setting, arm["name"])]
            runs = rec["seeds"]
            row = {"arm": arm["name"], "sensitivity": arm.get("sensitivity", False), "best_lr": rec["best_lr"],
                   "n_seeds": len(runs), "ms_per_step": float(np.mean([r["ms_per_step"] for r in runs]))}
            row["final_mean"], row["final_std"], row["n_finished"] = mean_std([r["final_val"] for r in runs])
            for tname, target in targets.items():
                st = [steps_to_target(r["val_curve"], target) if target is not None else None for r in runs]
                st_rms = [steps_to_target(r["val_curve"], target) if target is not None else None for r in rms]
                # per seed pair (same init draws, same data order): rmsnorm steps / this arm's steps
                ratios = [a / b for a, b in zip(st_rms, st) if a is not None and b is not None and b > 0]
                m, s, n = mean_std(st)
                rm, rs, rn = mean_std(ratios)
                row[tname] = {"target": target, "steps": st, "steps_mean": m, "steps_std": s, "reached": n,
                              "ratios": ratios, "ratio_mean": rm, "ratio_std": rs,
                              "ratio_min": min(ratios, default=None), "ratio_max": max(ratios, default=None)}
            if arm["norm"] == "sphere":
                first = [r["scales"][0] for r in runs]
                last = [r["scales"][-1] for r in runs]
                row["scales"] = {g: {"init": float(np.mean([f[j + 1][0] for f in first])),
                                     "final_mean": float(np.mean([x[j + 1][0] for x in last])),
                                     "final_seed_std": float(np.std([x[j + 1][0] for x in last])),
                                     "final_elem_std": float(np.mean([x[j + 1][1] for x in last]))}
                                 for j, g in enumerate(SCALE_GROUPS)}
            rows.append(row)
        summary[f"bs{setting[0]}_L{setting[1]}"] = {"batch_size": setting[0], "n_layer": setting[1],
                                                    "targets": targets, "rows": rows}
    return summary


def _f(x, nd=3):
    return "—" if x is None else f"{x:.{nd}f}"


def _steps_cell(t, n_seeds):
    if t["reached"] == 0:
        return f"not reached (0/{n_seeds})"
    cell = f"{t['steps_mean']:.0f}" + (f" ± {t['steps_std']:.0f}" if t["reached"] > 1 else "")
    return cell + ("" if t["reached"] == n_seeds else f" ({t['reached']}/{n_seeds} reached)")


def _ratio_cell(t, arm):
    if arm == "rmsnorm":
        return "1 (reference)"
    if not t["ratios"]:
        return "not reached"
    if len(t["ratios"]) == 1:
        return f"{t['ratio_mean']:.2f} (1 pair)"
    return f"{t['ratio_mean']:.2f} ± {t['ratio_std']:.2f} [{t['ratio_min']:.2f}–{t['ratio_max']:.2f}]"


def markdown(summary, main_key, data, opts, runtime):
    b = data["baselines"]
    L = [f"# Sphere (nGPT) vs RMSNorm on `{data['corpus']}`", "",
         f"- corpus `{data['corpus']}`: {data['n_docs']} docs, split seed {opts.split_seed} → {len(data['train'])} "
         f"train / {data['n_val_full']} val docs; val loss measured on {len(data['val'])} val docs "
         f"({len(data['eval_points'])} eval points, dense early); vocab {len(data['vocab']) + 1} tokens (with BOS)",
         f"- model: n_embd {opts.n_embd}, n_head {opts.n_head}, block_size {opts.block_size}; NumPy engine; Adam "
         f"(β1 0.85, β2 0.99), lr decaying linearly to 0 over {opts.steps} steps",
         f"- lr sweep {', '.join(f'{x:.3g}' for x in opts.lrs)} with seed {opts.seed}, best final val loss wins; "
         f"then {opts.seeds} seeds ({opts.seed + 1}..{opts.seed + opts.seeds}) at that lr; ± is the std over seeds",
         f"- baselines on the same val docs: uniform {b['uniform']:.3f}, unigram {b['unigram']:.3f}, "
         f"bigram {b['bigram']:.3f}",
         "- targets: T2 = the bigram val loss; T3 = the worst final val loss among the (retraction) sphere seeds; "
         "T1 = the worst final val loss among the rmsnorm seeds (every seed of that model reaches its own target "
         "by the last step). Steps to a target are linearly interpolated between eval points; the ratio is "
         "rmsnorm steps / this model's steps per seed pair (mean ± std [min–max]): > 1 means this model needs "
         "fewer steps than rmsnorm (the paper's claim is 4–20), < 1 means more.",
         f"- runtime of this invocation: {fmt_time(runtime[0])} wall, {fmt_time(runtime[1])} CPU "
         "(one process, NumPy engine; wall > CPU when other jobs share the cores; ms/step is wall time, "
         "so compare it only within a run)", ""]
    cols = ("| {bs}{nl}model | best lr | final val loss | steps to bigram (T2) | rmsnorm/model at T2 | "
            "steps to T3 | rmsnorm/model at T3 | steps to T1 | rmsnorm/model at T1 |")

    def cells(r):
        return (f"{r['arm']} | {r['best_lr']:.3g} | {_f(r['final_mean'])} ± {_f(r['final_std'])} | "
                + " | ".join(f"{_steps_cell(r[t], r['n_seeds'])} | {_ratio_cell(r[t], r['arm'])}"
                             for t in ("T2", "T3", "T1")))

    L += ["## Steps to target, per setting", "",
          "| batch | layers | T2 (bigram) | T3 (sphere final) | T1 (rmsnorm final) |", "|---|---|---|---|---|"]
    for s in summary.values():
        t = s["targets"]
        L.append(f"| {s['batch_size']} | {s['n_layer']} | {_f(t['T2'])} | {_f(t['T3'])} | {_f(t['T1'])} |")
    L += ["", cols.format(bs="batch | ", nl="layers | ") + " ms/step |", "|---" * 12 + "|"]
    for s in summary.values():
        for r in s["rows"]:
            if not r["sensitivity"]:
                L.append(f"| {s['batch_size']} | {s['n_layer']} | {cells(r)} | {r['ms_per_step']:.2f} |")
    m = summary[main_key]
    L += ["", f"## Sensitivity to alpha_init and sz_init (batch {m['batch_size']}, {m['n_layer']} layer; "
          "each variant at its own best lr; same targets as above)", "",
          "| alpha_init | sz_init " + cols.format(bs="", nl=""), "|---" * 11 + "|"]
    for r in m["rows"]:
        if r["arm"] in ("rmsnorm", "sphere+riemannian"):
            continue
        arm = data["arm_by_name"][r["arm"]]
        L.append(f"| {arm.get('alpha_init', 0.05):g} | {arm.get('sz_init', 1.0):g} | {cells(r)} |")
    L += ["", f"## Learned scales at the end of training (batch {m['batch_size']}, {m['n_layer']} layer; "
          "mean over seeds of the mean over elements, ± std over elements)", "",
          "| model | " + " | ".join(f"{g} init → final" for g in SCALE_GROUPS) + " |",
          "|---|" + "---|" * len(SCALE_GROUPS)]
    for r in m["rows"]:
        if "scales" in r:
            sc = r["scales"]
            L.append(f"| {r['arm']} | " + " | ".join(
                f"{sc[g]['init']:.3g} → {sc[g]['final_mean']:.3g} ± {sc[g]['final_elem_std']:.2g}"
                for g in SCALE_GROUPS) + " |")
    L += ["", "## Learning-rate sweeps (final val loss, seed " + str(opts.seed) + ")", "",
          "| batch | layers | model | " + " | ".join(f"lr {x:.3g}" for x in opts.lrs) + " |",
          "|---|---|---|" + "---|" * len(opts.lrs)]
    for (setting, name), rec in data["results"].items():
        L.append(f"| {setting[0]} | {setting[1]} | {name} | " + " | ".join(
            "diverged" if r["final_val"] is None else f"{r['final_val']:.3f}" for r in rec["sweep"]) + " |")
    L += ["", "Plots: `val_curves.png` (mean and min–max band over seeds), `lr_sweep.png`, `scales.png`, "
          "`sensitivity.png`.", ""]
    return "\n".join(L)


# =========================================================================== files and plots

def save_fig(fig, path):
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100))


COLORS = {"rmsnorm": "tab:blue", "sphere": "tab:orange", "sphere+riemannian": "tab:green"}


def _band(ax, runs, label, color, key="val_curve"):
    """Mean over seeds and a min-max band, on a log step axis (step 0, the init, is left out)."""
    steps = np.array([s for s, _ in runs[0][key]])
    vals = np.array([[v for _, v in r[key]] for r in runs if r["final_val"] is not None])
    if not len(vals):
        return
    steps, vals = steps[1:], vals[:, 1:]
    ax.set_xscale("log")
    ax.plot(steps, vals.mean(axis=0), color=color, label=label)
    ax.fill_between(steps, vals.min(axis=0), vals.max(axis=0), color=color, alpha=0.2, linewidth=0)


def plots(summary, settings, main_setting, arms, results, data, opts, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b = data["baselines"]
    nb, nl = len(opts.batch_sizes), len(opts.n_layers)
    # 1. val curves, one panel per setting
    fig, axes = plt.subplots(nl, nb, figsize=(5.5 * nb, 4 * nl), squeeze=False)
    for (bs, n), ax in zip(settings, axes.ravel()):
        for name in ("rmsnorm", "sphere", "sphere+riemannian"):
            rec = results[((bs, n), name)]
            _band(ax, rec["seeds"], f"{name} (lr {rec['best_lr']:.3g})", COLORS[name])
        t1 = summary[f"bs{bs}_L{n}"]["targets"]["T1"]
        ax.axhline(b["bigram"], color="gray", ls="--", lw=1, label=f"bigram {b['bigram']:.3f}")
        if t1 is not None:
            ax.axhline(t1, color="k", ls=":", lw=1, label=f"T1 (rmsnorm final) {t1:.3f}")
        ax.set_ylim(min(t1 or b["bigram"], b["bigram"]) - 0.12, b["bigram"] + 0.45)
        ax.set_xlabel("optimizer step (log scale)")
        ax.set_ylabel("val loss (nats/token)")
        ax.set_title(f"batch {bs}, {n} layer{'s' if n > 1 else ''}: mean and min-max over {opts.seeds} seeds")
        ax.legend(fontsize=8)
    fig.suptitle(f"Sphere (nGPT) vs RMSNorm, corpus {data['corpus_label']}, each at its best lr")
    fig.tight_layout()
    save_fig(fig, os.path.join(out, "val_curves.png"))
    plt.close(fig)

    # 2. lr sweeps
    fig, axes = plt.subplots(nl, nb, figsize=(5 * nb, 3.6 * nl), squeeze=False)
    for (bs, n), ax in zip(settings, axes.ravel()):
        for arm in arms[(bs, n)]:
            if arm.get("sensitivity"):
                continue
            sw = results[((bs, n), arm["name"])]["sweep"]
            ax.plot([r["lr"] for r in sw], [np.nan if r["final_val"] is None else r["final_val"] for r in sw],
                    "o-", color=COLORS[arm["name"]], label=arm["name"])
        ax.axhline(b["bigram"], color="gray", ls="--", lw=1, label="bigram")
        ax.set_xscale("log")
        ax.set_xlabel("peak learning rate")
        ax.set_ylabel(f"final val loss (seed {opts.seed})")
        ax.set_title(f"lr sweep, batch {bs}, {n} layer{'s' if n > 1 else ''}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_fig(fig, os.path.join(out, "lr_sweep.png"))
    plt.close(fig)

    # 3. learned scales over training (main setting)
    greek = {"alpha_A": "alpha_A (attention eigen lr)", "alpha_M": "alpha_M (MLP eigen lr)",
             "s_qk": "s_qk (query/key scale)", "s_u": "s_u (MLP hidden scale)", "s_z": "s_z (logit scale)"}
    fig, axes = plt.subplots(1, len(SCALE_GROUPS), figsize=(4 * len(SCALE_GROUPS), 3.6))
    for name in ("sphere", "sphere+riemannian"):
        runs = results[(main_setting, name)]["seeds"]
        steps = np.array([x[0] for x in runs[0]["scales"]])
        for j, (g, ax) in enumerate(zip(SCALE_GROUPS, axes)):
            mean = np.mean([[x[j + 1][0] for x in r["scales"]] for r in runs], axis=0)
            spread = np.mean([[x[j + 1][1] for x in r["scales"]] for r in runs], axis=0)
            ax.plot(steps, mean, color=COLORS[name], label=name)
            ax.fill_between(steps, mean - spread, mean + spread, color=COLORS[name], alpha=0.2, linewidth=0)
            ax.set_title(greek[g], fontsize=10)
            ax.set_xlabel("optimizer step")
            ax.set_ylabel("effective value")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Learned scales, batch {main_setting[0]}, {main_setting[1]} layer: mean over elements and "
                 f"seeds, band = +/- std over elements")
    fig.tight_layout()
    save_fig(fig, os.path.join(out, "scales.png"))
    plt.close(fig)

    # 4. sensitivity: val curves and the alpha / s_z trajectories of each init variant
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    variants = [a for a in arms[main_setting] if a["name"] == "sphere" or a.get("sensitivity")]
    cmap = plt.get_cmap("viridis")
    rms = results[(main_setting, "rmsnorm")]
    _band(axes[0], rms["seeds"], f"rmsnorm (lr {rms['best_lr']:.3g})", "tab:blue")
    for k, arm in enumerate(variants):
        rec = results[(main_setting, arm["name"])]
        color = "tab:orange" if arm["name"] == "sphere" else cmap(k / max(1, len(variants) - 1) * 0.9)
        _band(axes[0], rec["seeds"], f"{arm['name']} (lr {rec['best_lr']:.3g})", color)
        runs = rec["seeds"]
        steps = [x[0] for x in runs[0]["scales"]]
        alpha = np.mean([[(x[1][0] + x[2][0]) / 2 for x in r["scales"]] for r in runs], axis=0)
        sz = np.mean([[x[5][0] for x in r["scales"]] for r in runs], axis=0)
        axes[1].plot(steps, alpha, color=color, label=arm["name"])
        axes[2].plot(steps, sz, color=color, label=arm["name"])
    axes[0].axhline(b["bigram"], color="gray", ls="--", lw=1, label="bigram")
    t1 = summary[f"bs{main_setting[0]}_L{main_setting[1]}"]["targets"]["T1"]
    axes[0].set_ylim((t1 or b["bigram"]) - 0.12, b["bigram"] + 0.45)
    axes[0].set_title("val loss (mean, min-max band over seeds)")
    axes[0].set_xlabel("optimizer step (log scale)")
    axes[0].set_ylabel("val loss (nats/token)")
    axes[1].set_title("mean eigen learning rate (alpha_A + alpha_M)/2")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("effective alpha")
    axes[2].set_title("mean logit scale s_z")
    axes[2].set_ylabel("effective s_z")
    for ax in axes:
        ax.set_xlabel(ax.get_xlabel() or "optimizer step")
        ax.legend(fontsize=7)
    fig.suptitle(f"Sensitivity of the sphere model to alpha_init and sz_init (batch {main_setting[0]}, "
                 f"{main_setting[1]} layer, each variant at its own best lr)")
    fig.tight_layout()
    save_fig(fig, os.path.join(out, "sensitivity.png"))
    plt.close(fig)


# =========================================================================== CLI

QUICK = {"steps": 40, "seeds": 2, "lrs": [3e-3, 1e-2], "batch_sizes": [4], "n_layers": [1], "val_docs": 48,
         "alpha_inits": [0.5], "sz_inits": [5.0]}


def parser():
    p = Parser(
        prog="sphere_vs_rmsnorm.py",
        description="Train microgpt's rmsnorm and sphere (nGPT) modes with the NumPy engine on the same corpus "
                    "and split, each at its own best learning rate, and report val-loss curves, steps to target "
                    "losses (and the rmsnorm/sphere ratio), retraction vs Riemannian gradients, the learned "
                    "scales, and the sensitivity to alpha_init / sz_init. Writes results.md, results.json and "
                    "PNG plots to --out.",
        epilog="examples:\n  python experiments/sphere_vs_rmsnorm.py\n"
               "  python experiments/sphere_vs_rmsnorm.py --corpus ../shared/data/names.txt\n"
               "  python experiments/sphere_vs_rmsnorm.py --quick --out /tmp/quick",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default="names",
                   help="'names' (default), 'jp-names', or a UTF-8 text file with one doc per line")
    p.add_argument("--out", help="output directory (default experiments/results/<corpus name>/, "
                                 "or .../<corpus name>-quick/ with --quick)")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke test in seconds: {QUICK['steps']} steps, {QUICK['seeds']} seeds, 2 lrs, batch 4, "
                        "1 layer, 1 alpha and 1 sz variant (overrides the sizes below)")
    p.add_argument("--steps", type=pos_int, default=2000, help="optimizer steps per run (default 2000)")
    p.add_argument("--seeds", type=pos_int, default=5,
                   help="seeds per arm at its chosen lr (default 5; seeds SEED+1..SEED+N)")
    p.add_argument("--seed", type=int, default=0, help="seed of the lr sweep runs (default 0)")
    p.add_argument("--lrs", type=float_list, default=[float(x) for x in np.geomspace(1e-3, 3e-2, 5)],
                   help="comma-separated peak learning rates of the sweep (default 5 log-spaced in 1e-3..3e-2)")
    p.add_argument("--batch-sizes", type=int_list, default=[1, 16],
                   help="comma-separated docs per step (default 1,16); the last one is the main setting")
    p.add_argument("--n-layers", type=int_list, default=[1, 2],
                   help="comma-separated layer counts (default 1,2); the first one is the main setting")
    p.add_argument("--alpha-inits", type=float_list_or_empty, default=[0.2, 0.5],
                   help="extra sphere arms (main setting) with these initial eigen lrs alpha (default 0.2,0.5; "
                        "nGPT's 0.05 is the plain sphere arm; 'none' for no extra arms)")
    p.add_argument("--sz-inits", type=float_list_or_empty, default=[5.0, 10.0],
                   help="extra sphere arms (main setting) with these initial logit scales s_z (default 5,10; "
                        "1 is the plain sphere arm; 'none' for no extra arms). With both lists, one more arm "
                        "combines the largest alpha and sz")
    p.add_argument("--val-docs", type=pos_int, default=600,
                   help="measure val loss on the first N docs of the val split (default 600: all of `names`, "
                        "a fixed subset of larger corpora, to keep evals cheap)")
    p.add_argument("--split-seed", type=int, default=42, help="seed of the 90/10 train/val split (default 42)")
    p.add_argument("--n-embd", type=pos_int, default=16, help="embedding width (default 16)")
    p.add_argument("--n-head", type=pos_int, default=4, help="attention heads (default 4)")
    p.add_argument("--block-size", type=pos_int, default=16, help="max positions per doc (default 16)")
    return p


def corpus_label(corpus):
    """A directory-friendly name: 'names' stays, a path 'x/names.txt' becomes 'names_txt'."""
    if corpus in ("names", "jp-names"):
        return corpus
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in os.path.basename(os.path.normpath(corpus)))


def main(argv=None):
    opts = parser().parse_args(argv)
    if opts.quick:
        for k, v in QUICK.items():
            setattr(opts, k, v)
    try:
        if opts.n_embd % opts.n_head:
            raise InputError(f"--n-embd ({opts.n_embd}) must be divisible by --n-head ({opts.n_head})")
        docs = load_corpus(opts.corpus)
        vocab = build_vocab(docs)
        train_docs, val_all = split_docs(docs, opts.split_seed)
        label = corpus_label(opts.corpus)
        out = opts.out or os.path.join(REPO, "experiments", "results", label + ("-quick" if opts.quick else ""))
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise InputError(f"cannot create output directory {out!r}: {e.strerror or e}") from None
        if not os.access(out, os.W_OK):
            raise InputError(f"output directory {out!r} is not writable")
        val_docs = val_all[:opts.val_docs]
        cfg0 = GPTConfig(vocab_size=len(vocab) + 1, n_embd=opts.n_embd, n_head=opts.n_head, n_layer=1,
                         block_size=opts.block_size)
        val_tokens = [doc_tokens(d, vocab) for d in val_docs]
        data = {"corpus": opts.corpus, "corpus_label": label, "n_docs": len(docs), "vocab": vocab,
                "train": train_docs, "val": val_docs, "val_tokens": val_tokens, "n_val_full": len(val_all),
                "eval_points": eval_points(opts.steps),
                "baselines": baselines([doc_tokens(d, vocab) for d in train_docs], val_tokens, cfg0)}
    except InputError as e:
        print(f"sphere_vs_rmsnorm.py: error: {e}", file=sys.stderr)
        return 2
    print(f"corpus {opts.corpus}: {len(docs)} docs, {len(train_docs)} train, {len(val_docs)} val used; "
          f"bigram val loss {data['baselines']['bigram']:.4f}; writing to {out}", file=sys.stderr, flush=True)
    settings, main_setting, arms, results, runtime = run_all(data, opts)
    data["results"] = results
    data["arm_by_name"] = {a["name"]: a for a in arms[main_setting]}
    summary = summarize(settings, main_setting, arms, results, data, opts)
    main_key = f"bs{main_setting[0]}_L{main_setting[1]}"
    md = markdown(summary, main_key, data, opts, runtime)
    raw = {"corpus": opts.corpus, "options": {k: v for k, v in vars(opts).items()}, "n_docs": len(docs),
           "n_train": len(train_docs), "n_val_used": len(val_docs), "vocab": "".join(vocab),
           "baselines": data["baselines"], "eval_points": data["eval_points"],
           "runtime_wall_s": runtime[0], "runtime_cpu_s": runtime[1],
           "main_setting": main_key, "scale_groups": list(SCALE_GROUPS), "summary": summary,
           "runs": [{"setting": f"bs{s[0]}_L{s[1]}", "arm": name, "best_lr": rec["best_lr"],
                     "sweep": rec["sweep"], "seeds": rec["seeds"]} for (s, name), rec in results.items()]}
    atomic_write(os.path.join(out, "results.json"),
                 lambda f: f.write(json.dumps(raw, separators=(",", ":")).encode("utf-8")))
    atomic_write(os.path.join(out, "results.md"), lambda f: f.write(md.encode("utf-8")))
    plots(summary, settings, main_setting, arms, results, data, opts, out)
    print(md)
    print(f"done in {fmt_time(runtime[0])} wall ({fmt_time(runtime[1])} CPU); wrote results.md, results.json "
          f"and 4 PNGs to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
