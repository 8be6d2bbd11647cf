"""Does the hypersphere (nGPT) learn in fewer steps than RMSNorm -- at microgpt scale?

Lecture 3 quotes nGPT: the same accuracy in 4-20x fewer training steps. Every arm (rmsnorm, the
sphere with retraction, with Riemannian gradients, with other initial alpha or s_z) gets its own
lr (a sweep over --lrs, then --seeds seeds at the best); seed s sets the init and the order of the
docs for every arm. Steps to a target (T1 = the worst final rmsnorm loss, T2 = the bigram loss,
T3 = the worst final sphere loss) are read off the val curve; the ratio rmsnorm/arm is per seed
pair. experiments/README.md gives the results.

    python experiments/sphere_vs_rmsnorm.py                       # corpus `names`
    python experiments/sphere_vs_rmsnorm.py --quick --out /tmp/q  # seconds

results.json in --out is written after every run: the same command continues an interrupted study.
"""
import os
import sys

if __name__ == "__main__":  # a Ctrl-C while NumPy loads ends quietly (no traceback from an import)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from harness import quiet_startup
    quiet_startup("sphere_vs_rmsnorm.py")

import json
import math
import time

import common
import numpy as np
from common import SCALE_GROUPS, InputError, fmt, fmt_time, log, plural, steps_to_target

from corpora import BUILTIN, load_corpus
from microgpt import build_vocab, doc_tokens, init_params, split_docs
from model_config import GPTConfig, effective_scales
from numpy_engine import baselines, evaluate

# =========================================================================== measuring

def eval_points(steps, n_log=32, n_lin=16):
    """Eval steps after 0 (the init): log-spaced (dense early, where targets are crossed), even."""
    points = set(np.unique(np.geomspace(1, steps, n_log).round().astype(int)).tolist())
    points |= set(np.linspace(0, steps, n_lin + 1).round().astype(int).tolist())
    return sorted(p for p in points if 0 < p <= steps)


def run_one(data, opts, *, norm, batch_size, n_layer, lr, seed, riemannian=False, alpha_init=0.05,
            sz_init=1.0):
    """Train one model; its val curve, final val loss, timing and (sphere) scale trajectories."""
    vocab, train_docs, val_tokens = data["vocab"], data["train"], data["val_tokens"]
    cfg = GPTConfig(vocab_size=len(vocab) + 1, n_embd=opts.n_embd, n_head=opts.n_head,
                    n_layer=n_layer, block_size=opts.block_size, norm=norm,
                    alpha_init=alpha_init, sz_init=sz_init)
    order = np.random.default_rng(seed).permutation(len(train_docs))  # the seed sets the order
    docs = [train_docs[i] for i in order]
    curve, scales = [], []

    def record(step, params):  # (a diverged run's curve ends at its last finite loss)
        loss = evaluate(params, val_tokens, cfg)
        if math.isfinite(loss):
            curve.append((step, round(loss, 6)))  # rounded once
        if norm == "sphere":
            eff = effective_scales(params, cfg)
            scales.append([step] + [[round(float(eff[g].mean()), 6), round(float(eff[g].std()), 6)]
                                    for g in SCALE_GROUPS])

    t0 = time.perf_counter()
    # The observer measures val at our own points, so train() evaluates only at its first and last
    # step (eval_every=steps), on one doc. Step 0 is the init train() builds from the same seed.
    # A run that diverges is recorded as diverged, without NumPy's overflow warnings on the way.
    record(0, init_params(cfg, seed))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        state = common.train_observed(
            common.MeasureAt(set(data["eval_points"]), record), docs, data["val"][:1], vocab,
            cfg, steps=opts.steps, batch_size=batch_size, lr=lr, seed=seed, engine="numpy",
            riemannian=riemannian, eval_every=opts.steps)
    return {"norm": norm, "riemannian": riemannian, "batch_size": batch_size, "n_layer": n_layer,
            "lr": lr, "seed": seed, "alpha_init": alpha_init, "sz_init": sz_init,
            "final_val": common.final_loss(curve, opts.steps, state.error), "error": state.error,
            "ms_per_step": state.ms_per_step, "seconds": time.perf_counter() - t0,
            "val_curve": [[int(step), float(loss)] for step, loss in curve], "scales": scales}


# =========================================================================== the plan

def arms_for(setting, opts, main_setting):
    """The arms (model variants) trained in one (batch_size, n_layer) setting."""
    arms = [{"name": "rmsnorm", "norm": "rmsnorm"}, {"name": "sphere", "norm": "sphere"},
            {"name": "sphere+riemannian", "norm": "sphere", "riemannian": True}]
    if setting != main_setting:
        return arms
    for a in opts.alpha_inits:
        arms.append({"name": f"sphere a={a:g}", "norm": "sphere", "alpha_init": a})
    for z in opts.sz_inits:
        arms.append({"name": f"sphere sz={z:g}", "norm": "sphere", "sz_init": z})
    if opts.alpha_inits and opts.sz_inits:  # both large at once
        a, z = max(opts.alpha_inits), max(opts.sz_inits)
        arms.append({"name": f"sphere a={a:g} sz={z:g}", "norm": "sphere", "alpha_init": a,
                     "sz_init": z})
    for arm in arms[3:]:
        arm["sensitivity"] = True
    return arms


def run_all(data, opts, cache=None, save=lambda done: None):
    """Every arm's sweep, then its seeds at the best lr, one run after the other: the settings,
    the main one, the arms, {(setting, arm name): {"arm", "sweep", "best_lr", "seeds"}}, runtime.
    A run whose run_key is in `cache` is taken from it; save(records) follows every run trained."""
    cache, done = cache or {}, list((cache or {}).values())
    settings = [(b, n) for n in opts.n_layers for b in opts.batch_sizes]
    main_setting = (opts.batch_sizes[-1], opts.n_layers[0])
    arms = {setting: arms_for(setting, opts, main_setting) for setting in settings}
    n_runs = sum(map(len, arms.values())) * (len(opts.lrs) + opts.seeds)
    progress, cpu0, results = common.Progress(), time.process_time(), {}

    def run(setting, arm, phase, lr, seed):
        kwargs = {k: arm[k] for k in ("norm", "riemannian", "alpha_init", "sz_init") if k in arm}
        result = cache.get(run_key(arm["name"], setting[0], setting[1], lr, seed))
        reused = result is not None
        if not reused:
            result = run_one(data, opts, batch_size=setting[0], n_layer=setting[1], lr=lr,
                             seed=seed, **kwargs)
            done.append(dict(result, arm=arm["name"]))
            save(done)
        text = (f"bs={setting[0]} L={setting[1]} {arm['name']:<22} {phase:<5} lr={lr:.4g} "
                f"seed={seed}")
        log(progress.line(text, result, opts.steps, n_runs,
                          (n_runs - progress.done - 1) * opts.steps, timed=not reused)
            + (" (reused)" if reused else ""))
        return result

    for setting in settings:
        for arm in arms[setting]:
            rec = results[(setting, arm["name"])] = {"arm": arm}
            rec["sweep"] = [run(setting, arm, "sweep", lr, opts.seed) for lr in opts.lrs]
            rec["best_lr"] = rec["sweep"][common.best_final(rec["sweep"])]["lr"]
            rec["seeds"] = [run(setting, arm, "seeds", rec["best_lr"], opts.seed + i)
                            for i in range(1, opts.seeds + 1)]
    # wall time, and this process's CPU time (the same unless other jobs share the cores)
    runtime = (time.perf_counter() - progress.t0, time.process_time() - cpu0)
    return settings, main_setting, arms, results, runtime


# =========================================================================== summarizing

def mean_std(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None, 0
    return float(np.mean(xs)), float(np.std(xs)), len(xs)


def to_target(runs, rms_runs, target):
    """Steps to `target` per run, and rmsnorm's / the run's per seed pair (same init and data)."""
    steps = [None if target is None else steps_to_target(r["val_curve"], target) for r in runs]
    rms = [None if target is None else steps_to_target(r["val_curve"], target) for r in rms_runs]
    ratios = [a / b for a, b in zip(rms, steps) if a is not None and b is not None and b > 0]
    steps_mean, steps_std, reached = mean_std(steps)
    ratio_mean, ratio_std, _ = mean_std(ratios)
    return {"target": target, "steps": steps, "steps_mean": steps_mean, "steps_std": steps_std,
            "reached": reached, "ratios": ratios, "ratio_mean": ratio_mean,
            "ratio_std": ratio_std, "ratio_min": min(ratios, default=None),
            "ratio_max": max(ratios, default=None)}


def max_final(runs):
    """The worst final val loss of the runs that finished (None if none did)."""
    return max((r["final_val"] for r in runs if r["final_val"] is not None), default=None)


def scales_row(runs):
    """Each learned scale's init and final value (mean over elements, then over seeds)."""
    first, last = [r["scales"][0] for r in runs], [r["scales"][-1] for r in runs]
    return {g: {"init": float(np.mean([x[j + 1][0] for x in first])),
                "final_mean": float(np.mean([x[j + 1][0] for x in last])),
                "final_seed_std": float(np.std([x[j + 1][0] for x in last])),
                "final_elem_std": float(np.mean([x[j + 1][1] for x in last]))}
            for j, g in enumerate(SCALE_GROUPS)}


def summarize(settings, arms, results, data):
    summary = {}
    for setting in settings:
        rms, sphere = (results[(setting, name)]["seeds"] for name in ("rmsnorm", "sphere"))
        targets = {"T1": max_final(rms), "T2": data["baselines"]["bigram"], "T3": max_final(sphere)}
        rows = []
        for arm in arms[setting]:
            rec = results[(setting, arm["name"])]
            runs = rec["seeds"]
            row = {"arm": arm["name"], "sensitivity": arm.get("sensitivity", False),
                   "best_lr": rec["best_lr"], "n_seeds": len(runs),
                   "ms_per_step": float(np.mean([r["ms_per_step"] for r in runs]))}
            row["final_mean"], row["final_std"], row["n_finished"] = mean_std(
                [r["final_val"] for r in runs])
            row.update({name: to_target(runs, rms, t) for name, t in targets.items()})
            if arm["norm"] == "sphere":
                row["scales"] = scales_row(runs)
            rows.append(row)
        summary[f"bs{setting[0]}_L{setting[1]}"] = {
            "batch_size": setting[0], "n_layer": setting[1], "targets": targets, "rows": rows}
    return summary


# =========================================================================== report

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
    return (f"{t['ratio_mean']:.2f} ± {t['ratio_std']:.2f} "
            f"[{t['ratio_min']:.2f}–{t['ratio_max']:.2f}]")


def _cells(r):
    return (f"{r['arm']} | {r['best_lr']:.3g} | {fmt(r['final_mean'])} ± {fmt(r['final_std'])} | "
            + " | ".join(f"{_steps_cell(r[t], r['n_seeds'])} | {_ratio_cell(r[t], r['arm'])}"
                         for t in ("T2", "T3", "T1")))


def _header(data, opts, runtime):
    b = data["baselines"]
    return [
        f"# Sphere (nGPT) vs RMSNorm on `{data['corpus']}`", "",
        f"- corpus `{data['corpus']}`: {data['n_docs']} docs, split seed {opts.split_seed} → "
        f"{len(data['train'])} train / {data['n_val_full']} val docs; val loss measured on "
        f"{len(data['val'])} val docs ({len(data['eval_points'])} eval points, dense early); "
        f"vocab {len(data['vocab']) + 1} tokens (with BOS)",
        f"- model: n_embd {opts.n_embd}, n_head {opts.n_head}, block_size {opts.block_size}; NumPy "
        f"engine; Adam (β1 0.85, β2 0.99), lr decaying linearly to 0 over {opts.steps} steps",
        f"- lr sweep {', '.join(f'{x:.3g}' for x in opts.lrs)} with seed {opts.seed}, best final "
        f"val loss wins; then {opts.seeds} seeds ({opts.seed + 1}..{opts.seed + opts.seeds}) at "
        "that lr; ± is the std over seeds",
        f"- baselines on the same val docs: uniform {b['uniform']:.3f}, unigram "
        f"{b['unigram']:.3f}, bigram {b['bigram']:.3f}",
        "- targets: T2 = the bigram val loss; T3 = the worst final val loss among the (retraction) "
        "sphere seeds; T1 = the worst final val loss among the rmsnorm seeds (every seed of that "
        "model reaches its own target by the last step). Steps to a target are linearly "
        "interpolated between eval points; the ratio is rmsnorm steps / this model's steps per "
        "seed pair (mean ± std [min–max]): > 1 means this model needs fewer steps than rmsnorm "
        "(the paper's claim is 4–20), < 1 means more.",
        f"- runtime of this invocation: {fmt_time(runtime[0])} wall, {fmt_time(runtime[1])} CPU "
        "(one process, NumPy engine; wall > CPU when other jobs share the cores; ms/step is wall "
        "time, so compare it only within a run)", ""]


def markdown(summary, main_key, data, opts, runtime):
    L = _header(data, opts, runtime)
    cols = ("model | best lr | final val loss | steps to bigram (T2) | rmsnorm/model at T2 | "
            "steps to T3 | rmsnorm/model at T3 | steps to T1 | rmsnorm/model at T1 |")
    L += ["## Steps to target, per setting", "",
          "| batch | layers | T2 (bigram) | T3 (sphere final) | T1 (rmsnorm final) |",
          "|---|---|---|---|---|"]
    for setting in summary.values():
        t = setting["targets"]
        L.append(f"| {setting['batch_size']} | {setting['n_layer']} | {fmt(t['T2'])} | "
                 f"{fmt(t['T3'])} | {fmt(t['T1'])} |")
    L += ["", "| batch | layers | " + cols + " ms/step |", "|---" * 12 + "|"]
    L += [f"| {setting['batch_size']} | {setting['n_layer']} | {_cells(r)} | "
          f"{r['ms_per_step']:.2f} |"
          for setting in summary.values() for r in setting["rows"] if not r["sensitivity"]]
    m = summary[main_key]
    L += ["", f"## Sensitivity to alpha_init and sz_init (batch {m['batch_size']}, "
          f"{m['n_layer']} layer; each variant at its own best lr; same targets as above)", "",
          "| alpha_init | sz_init | " + cols, "|---" * 11 + "|"]
    for r in m["rows"]:
        if r["arm"] not in ("rmsnorm", "sphere+riemannian"):
            arm = data["arm_by_name"][r["arm"]]
            L.append(f"| {arm.get('alpha_init', 0.05):g} | {arm.get('sz_init', 1.0):g} | "
                     f"{_cells(r)} |")
    L += ["", f"## Learned scales at the end of training (batch {m['batch_size']}, "
          f"{m['n_layer']} layer; mean over seeds of the mean over elements, ± std over elements)",
          "", "| model | " + " | ".join(f"{g} init → final" for g in SCALE_GROUPS) + " |",
          "|---|" + "---|" * len(SCALE_GROUPS)]
    for r in m["rows"]:
        if "scales" in r:
            L.append(f"| {r['arm']} | " + " | ".join(
                f"{r['scales'][g]['init']:.3g} → {r['scales'][g]['final_mean']:.3g} ± "
                f"{r['scales'][g]['final_elem_std']:.2g}" for g in SCALE_GROUPS) + " |")
    L += ["", f"## Learning-rate sweeps (final val loss, seed {opts.seed})", "",
          "| batch | layers | model | " + " | ".join(f"lr {x:.3g}" for x in opts.lrs) + " |",
          "|---|---|---|" + "---|" * len(opts.lrs)]
    for (setting, name), rec in data["results"].items():
        L.append(f"| {setting[0]} | {setting[1]} | {name} | " + " | ".join(
            "diverged" if r["final_val"] is None else f"{r['final_val']:.3f}"
            for r in rec["sweep"]) + " |")
    L += ["", "Plots: `val_curves.png` (mean and min–max band over seeds), `lr_sweep.png`, "
          "`scales.png`, `sensitivity.png`.", ""]
    return "\n".join(L)


# =========================================================================== plots

COLORS = {"rmsnorm": "tab:blue", "sphere": "tab:orange", "sphere+riemannian": "tab:green"}


def plot_curves(plt, summary, settings, arms, results, data, opts, out):
    """val_curves.png and lr_sweep.png: one panel per setting."""
    bigram = data["baselines"]["bigram"]
    nb, nl = len(opts.batch_sizes), len(opts.n_layers)
    fig, axes = plt.subplots(nl, nb, figsize=(5.5 * nb, 4 * nl), squeeze=False)
    fig2, axes2 = plt.subplots(nl, nb, figsize=(5 * nb, 3.6 * nl), squeeze=False)
    for (bs, n), ax, ax2 in zip(settings, axes.ravel(), axes2.ravel()):
        for name in ("rmsnorm", "sphere", "sphere+riemannian"):
            rec = results[((bs, n), name)]
            common.band(ax, rec["seeds"], f"{name} (lr {rec['best_lr']:.3g})", COLORS[name])
            ax2.plot([r["lr"] for r in rec["sweep"]],
                     [np.nan if r["final_val"] is None else r["final_val"] for r in rec["sweep"]],
                     "o-", color=COLORS[name], label=name)
        t1 = summary[f"bs{bs}_L{n}"]["targets"]["T1"]
        ax.axhline(bigram, color="gray", ls="--", lw=1, label=f"bigram {bigram:.3f}")
        if t1 is not None:
            ax.axhline(t1, color="k", ls=":", lw=1, label=f"T1 (rmsnorm final) {t1:.3f}")
        ax.set_ylim(min(t1 or bigram, bigram) - 0.12, bigram + 0.45)
        ax.set(xlabel="optimizer step (log scale)", ylabel="val loss (nats/token)",
               title=f"batch {bs}, {plural(n, 'layer')}: mean and min-max over {opts.seeds} seeds")
        ax2.axhline(bigram, color="gray", ls="--", lw=1, label="bigram")
        ax2.set_xscale("log")
        ax2.set(xlabel="peak learning rate", ylabel=f"final val loss (seed {opts.seed})",
                title=f"lr sweep, batch {bs}, {plural(n, 'layer')}")
        ax.legend(fontsize=8)
        ax2.legend(fontsize=8)
    common.save_fig(fig, os.path.join(out, "val_curves.png"), "Sphere (nGPT) vs RMSNorm, corpus "
                    f"{data['corpus_label']}, each at its best lr")
    common.save_fig(fig2, os.path.join(out, "lr_sweep.png"))


def plot_scales(plt, main_setting, results, out):
    """scales.png: the learned scales over training in the main setting."""
    names = {"alpha_A": "alpha_A (attention eigen lr)", "alpha_M": "alpha_M (MLP eigen lr)",
             "s_qk": "s_qk (query/key scale)", "s_u": "s_u (MLP hidden scale)",
             "s_z": "s_z (logit scale)"}
    fig, axes = plt.subplots(1, len(SCALE_GROUPS), figsize=(4 * len(SCALE_GROUPS), 3.6))
    for name in ("sphere", "sphere+riemannian"):
        runs = results[(main_setting, name)]["seeds"]
        steps = np.array([x[0] for x in runs[0]["scales"]])
        for j, (g, ax) in enumerate(zip(SCALE_GROUPS, axes)):
            mean = np.mean([[x[j + 1][0] for x in r["scales"]] for r in runs], axis=0)
            spread = np.mean([[x[j + 1][1] for x in r["scales"]] for r in runs], axis=0)
            ax.plot(steps, mean, color=COLORS[name], label=name)
            ax.fill_between(steps, mean - spread, mean + spread, color=COLORS[name], alpha=0.2,
                            linewidth=0)
            ax.set_title(names[g], fontsize=10)
            ax.set(xlabel="optimizer step", ylabel="effective value")
    axes[0].legend(fontsize=8)
    bs, n_layer = main_setting
    common.save_fig(fig, os.path.join(out, "scales.png"), f"Learned scales, batch {bs}, {n_layer} "
                    "layer: mean over elements and seeds, band = +/- std over elements")


def plot_sensitivity(plt, summary, main_setting, arms, results, data, out):
    """sensitivity.png: val curves and the alpha / s_z trajectories of each init variant."""
    bigram = data["baselines"]["bigram"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    variants = [a for a in arms[main_setting] if a["name"] == "sphere" or a.get("sensitivity")]
    rms = results[(main_setting, "rmsnorm")]
    common.band(axes[0], rms["seeds"], f"rmsnorm (lr {rms['best_lr']:.3g})", "tab:blue")
    for k, arm in enumerate(variants):
        rec = results[(main_setting, arm["name"])]
        color = ("tab:orange" if arm["name"] == "sphere"
                 else plt.get_cmap("viridis")(k / max(1, len(variants) - 1) * 0.9))
        common.band(axes[0], rec["seeds"], f"{arm['name']} (lr {rec['best_lr']:.3g})", color)
        runs = rec["seeds"]
        steps = [x[0] for x in runs[0]["scales"]]
        alpha = np.mean([[(x[1][0] + x[2][0]) / 2 for x in r["scales"]] for r in runs], axis=0)
        s_z = np.mean([[x[5][0] for x in r["scales"]] for r in runs], axis=0)
        axes[1].plot(steps, alpha, color=color, label=arm["name"])
        axes[2].plot(steps, s_z, color=color, label=arm["name"])
    axes[0].axhline(bigram, color="gray", ls="--", lw=1, label="bigram")
    t1 = summary[f"bs{main_setting[0]}_L{main_setting[1]}"]["targets"]["T1"]
    axes[0].set_ylim((t1 or bigram) - 0.12, bigram + 0.45)
    axes[0].set(title="val loss (mean, min-max band over seeds)",
                xlabel="optimizer step (log scale)", ylabel="val loss (nats/token)")
    axes[1].set(title="mean eigen learning rate (alpha_A + alpha_M)/2", yscale="log",
                ylabel="effective alpha", xlabel="optimizer step")
    axes[2].set(title="mean logit scale s_z", ylabel="effective s_z", xlabel="optimizer step")
    for ax in axes:
        ax.legend(fontsize=7)
    common.save_fig(fig, os.path.join(out, "sensitivity.png"), "Sensitivity of the sphere model "
                    f"to alpha_init and sz_init (batch {main_setting[0]}, {main_setting[1]} layer, "
                    "each variant at its own best lr)")


def plots(summary, settings, main_setting, arms, results, data, opts, out):
    plt = common.pyplot()
    plot_curves(plt, summary, settings, arms, results, data, opts, out)
    plot_scales(plt, main_setting, results, out)
    plot_sensitivity(plt, summary, main_setting, arms, results, data, out)


# =========================================================================== CLI

QUICK = {"steps": 40, "seeds": 2, "lrs": [3e-3, 1e-2], "batch_sizes": [4], "n_layers": [1],
         "val_docs": 48, "alpha_inits": [0.5], "sz_inits": [5.0]}


def parser():
    p = common.study_parser(
        "sphere_vs_rmsnorm", __doc__, f"{QUICK['steps']} steps, {QUICK['seeds']} seeds, 2 lrs, "
        "batch 4, 1 layer, 1 alpha and 1 sz variant", from_json=False, seeds=5, seed=0,
        val_docs=600, split_seed=42, n_embd=16, n_head=4, block_size=16, max_memory=4.0)
    add = p.add_argument
    add("--corpus", default="names",
        help="'names' (default), 'jp-names', or a UTF-8 text file with one doc per line")
    add("--steps", type=common.pos_int, default=2000, help="optimizer steps per run (default 2000)")
    add("--lrs", type=common.float_list, default=[float(x) for x in np.geomspace(1e-3, 3e-2, 5)],
        help="comma-separated peak learning rates of the sweep (default 5 in 1e-3..3e-2)")
    add("--batch-sizes", type=common.int_list, default=[1, 16],
        help="comma-separated docs per step (default 1,16); the last one is the main setting")
    add("--n-layers", type=common.int_list, default=[1, 2],
        help="comma-separated layer counts (default 1,2); the first one is the main setting")
    add("--alpha-inits", type=common.float_list_or_empty, default=[0.2, 0.5],
        help="extra sphere arms (main setting) with these initial eigen lrs alpha (default "
             "0.2,0.5; nGPT's 0.05 is the plain sphere arm; 'none' for no extra arms)")
    add("--sz-inits", type=common.float_list_or_empty, default=[5.0, 10.0],
        help="extra sphere arms (main setting) with these initial logit scales s_z (default 5,10; "
             "'none' for no extra arms). With both lists, one more arm combines the largest two")
    return p


def check_options(opts):
    """The flags by the settings table's rules and the study's size, before anything runs."""
    common.check_flags(opts, {"lrs": "lr", "batch_sizes": "batch_size", "n_layers": "n_layer",
                              "alpha_inits": "alpha_init", "sz_inits": "sz_init"})
    arms = 3 * len(opts.batch_sizes) * len(opts.n_layers) + len(opts.alpha_inits) + len(
        opts.sz_inits) + 1
    common.check_plan(arms * (len(opts.lrs) + opts.seeds))


def check_memory(opts, data):
    """The largest setting's run against --max-memory, before any run (one run at a time)."""
    configs = [GPTConfig(len(data["vocab"]) + 1, n_embd=opts.n_embd, n_head=opts.n_head,
                         n_layer=n, block_size=opts.block_size) for n in opts.n_layers]
    docs = data["train"] + data["val"]
    common.check_grid_memory(configs, max(opts.batch_sizes), opts.steps, 1,
                             (len(docs), sum(map(len, docs))), opts.max_memory,
                             positions=max(map(len, docs)) + 1)


def run_key(arm, batch_size, n_layer, lr, seed):
    """What a run is a pure function of, besides the options in SAME (checked for the file)."""
    return json.dumps([arm, batch_size, n_layer, lr, seed])


SAME = ("corpus", "steps", "val_docs", "split_seed", "n_embd", "n_head", "block_size")
RECORD = {"arm": lambda x: isinstance(x, str), "final_val": common.loss_or_none,
          "val_curve": common.is_curve,
          "lr": common.is_number, "seconds": common.is_number, "ms_per_step": common.is_number,
          **{k: lambda x: isinstance(x, int) and not isinstance(x, bool)
             for k in ("batch_size", "n_layer", "seed")}}


def runs_of(raw):
    """The run records of a results.json: a finished study's by arm, an unfinished one's as run."""
    if raw.get("complete") is False:
        return raw["runs"]
    return [dict(r, arm=rec["arm"]) for rec in raw["runs"] for r in rec["sweep"] + rec["seeds"]]


def record_key(r):
    return run_key(r["arm"], r["batch_size"], r["n_layer"], r["lr"], r["seed"])


def planned_runs(results):
    """Every run record of this invocation's arms, each with its arm's name."""
    return [dict(r, arm=name) for (_, name), rec in results.items()
            for r in rec["sweep"] + rec["seeds"]]


def corpus_label(corpus):
    """A folder name: 'names' stays, a path 'x/names.txt' becomes 'names_txt'."""
    if corpus in ("names", "jp-names"):
        return corpus
    name = os.path.basename(os.path.normpath(corpus))
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def corpus_data(docs, opts, n_embd):
    """The vocabulary, the 90/10 split, the first --val-docs val docs and the baselines on them."""
    vocab = build_vocab(docs)
    train_docs, val_all = split_docs(docs, opts.split_seed)
    val_docs = val_all[:opts.val_docs]
    val_tokens = [doc_tokens(d, vocab) for d in val_docs]
    cfg0 = GPTConfig(vocab_size=len(vocab) + 1, n_embd=n_embd, n_head=opts.n_head,
                     block_size=opts.block_size)
    return {"n_docs": len(docs), "vocab": vocab, "train": train_docs, "val": val_docs,
            "val_tokens": val_tokens, "n_val_full": len(val_all),
            "baselines": baselines([doc_tokens(d, vocab) for d in train_docs], val_tokens, cfg0)}


def load_data(opts):
    """The corpus, the split, the val docs and the baselines (InputError: one line)."""
    if opts.n_embd % opts.n_head:
        raise InputError(f"--n-embd ({opts.n_embd}) must be divisible by --n-head ({opts.n_head})")
    shown = opts.corpus if opts.corpus in BUILTIN else common.outside_repo(opts.corpus)
    return dict(corpus_data(load_corpus(opts.corpus), opts, opts.n_embd), corpus=shown,
                corpus_label=corpus_label(opts.corpus), eval_points=eval_points(opts.steps))


FILE = common.ResultsFile(RECORD, parser, check_options, runs_of=runs_of)


@common.cli
def main(argv):
    opts = common.parse(parser(), argv, QUICK)
    check_options(opts)
    data = load_data(opts)
    check_memory(opts, data)
    out = common.output_folder(opts.out, data["corpus_label"], opts.quick)
    path = os.path.join(out, "results.json")
    cache, _ = common.previous_runs(path, opts, FILE, record_key, SAME)
    log(f"corpus {opts.corpus}: {data['n_docs']} docs, {len(data['train'])} train, "
        f"{len(data['val'])} val used; bigram val loss {data['baselines']['bigram']:.4f}; "
        f"{len(cache)} runs already in {path}; writing to {out}")

    def save(done):
        raw = {"complete": False, "corpus": opts.corpus, "options": vars(opts), "runs": done}
        common.save_runs(lambda: common.write_json(path, raw), path, len(done), "study")

    settings, main_setting, arms, results, runtime = run_all(data, opts, cache, save)
    for ((bs, n_layer), name), rec in results.items():
        if all(r["final_val"] is None for r in rec["seeds"]):
            raise common.Diverged(f"error: every run of {name} (batch {bs}, "
                                  f"{plural(n_layer, 'layer')}) at its chosen lr diverged: nothing "
                                  "to compare; try smaller --lrs (the finished runs are saved in "
                                  f"{path})")
    data["results"] = results
    data["arm_by_name"] = {a["name"]: a for a in arms[main_setting]}
    summary = summarize(settings, arms, results, data)
    main_key = f"bs{main_setting[0]}_L{main_setting[1]}"
    md = markdown(summary, main_key, data, opts, runtime)
    common.write_json(os.path.join(out, "results.json"), {
        "complete": True, "corpus": opts.corpus, "options": vars(opts), "n_docs": data["n_docs"],
        "n_train": len(data["train"]), "n_val_used": len(data["val"]),
        "vocab": "".join(data["vocab"]), "baselines": data["baselines"],
        "eval_points": data["eval_points"], "runtime_wall_s": runtime[0],
        "runtime_cpu_s": runtime[1], "main_setting": main_key,
        "scale_groups": list(SCALE_GROUPS), "summary": summary,
        "runs": [{"setting": f"bs{bs}_L{n}", "arm": name, "best_lr": rec["best_lr"],
                  "sweep": rec["sweep"], "seeds": rec["seeds"]}
                 for ((bs, n), name), rec in results.items()],
        "other_runs": common.other_runs(cache, planned_runs(results), record_key)})
    common.write_text(os.path.join(out, "results.md"), md)
    plots(summary, settings, main_setting, arms, results, data, opts, out)
    log(f"done in {fmt_time(runtime[0])} wall ({fmt_time(runtime[1])} CPU); wrote results.md, "
        f"results.json and 4 PNGs to {out}")
    return md


if __name__ == "__main__":
    from harness import leave
    leave(main())
