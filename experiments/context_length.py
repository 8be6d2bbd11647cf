"""Does the sphere's (nGPT's) speed-up over RMSNorm grow with the context length -- at CPU scale?

The published speed-up grows with the context: 4x at 1k tokens, 10x at 4k and up to 20x
at 8k (the nGPT paper; NVIDIA/ngpt's README expects the paper's 4x and 10x and says its
own bf16 code shows more), 1.5-2x at 1k and 4x at 4k (JoeLi12345/nGPT, a reproduction
sponsored by Nous Research, float32 parameters). On the Shakespeare plays, each norm at
its own lr per context length T, this measures r_T = rmsnorm steps / sphere steps to the
worse final loss of a seed pair and its slope in log T, the gate (the longest T's
rmsnorm runs must use their context; without it, no verdict), the loss at positions
16-31 (the same context at every T), the gap, the per-step time ratio and the anchors'
protocol; experiments/README.md gives the protocol. results.json is rewritten after
every run: the same command continues an interrupted grid.

    python experiments/context_length.py --gate-pilot 4000,8000   # before the grid: longer runs
    python experiments/context_length.py                          # the full grid, hours
    python experiments/context_length.py --timing-only            # the per-step times, alone
    python experiments/context_length.py --quick --out /tmp/q     # smoke test, seconds
    python experiments/context_length.py --from-json experiments/results/context_length/results.json
"""
import os
import sys

if __name__ == "__main__":  # a Ctrl-C while NumPy loads ends quietly (no traceback from an import)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from harness import quiet_startup
    quiet_startup("context_length.py")

import functools
import math
import time

import common
import numpy as np
from common import InputError, eval_points, fmt, fmt_time, iso_length, log, lr_of, steps_to_target

from corpora import fingerprint, shakespeare_plays
from microgpt import build_vocab, encode, init_params
from model_config import GPTConfig, effective_scales
from numpy_engine import gpt_forward

NORMS = ("rmsnorm", "sphere")
COLORS = {"rmsnorm": "tab:blue", "sphere": "tab:orange"}
GATE_NATS = 0.03       # the longest T's rmsnorm runs must gain this much from far context
SUPPORT_RATIO = 1.25   # mean r at the longest T / at the shortest, for "supports"
EVAL_POSITIONS = 4096  # positions per forward call when evaluating (8 windows at T = 512)
# The anchors: (source, context, speed-up low, high). The paper: 4x at 1k, 10x at 4k,
# 20x at 8k ("4 to 20, depending on the sequence length"); NVIDIA/ngpt's README expects
# the paper's 4x and 10x (no 8k figure) and says its own bf16 code shows larger ones;
# JoeLi12345/nGPT (sponsored by Nous Research; 0.5B, float32 parameters, separate runs):
# 1.5-2x at 1k, about 4x at 4k.
ANCHORS = (("nGPT paper", 1024, 4.0, 4.0),
           ("nGPT paper", 4096, 10.0, 10.0),
           ("nGPT paper", 8192, 20.0, 20.0),
           ("JoeLi12345/nGPT (Nous, float32)", 1024, 1.5, 2.0),
           ("JoeLi12345/nGPT (Nous, float32)", 4096, 4.0, 4.0))
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)  # t_0.975, df 1..10
SAME_CONTEXT = (16, 32)  # positions 16-31: every T gives them the same context (<= 31 characters)
# what a run depends on besides its job: a results.json made with others cannot be continued
SAME = ("batch_size", "n_embd", "n_head", "n_layer", "lr0", "val_plays", "split_seed",
        "curve_tiles", "n_log", "n_lin", "tile")


# =========================================================================== data

def split_plays(plays, n_val, seed):
    """(train plays, val plays): a seeded permutation of the plays; the last n_val are held out."""
    order = np.random.default_rng(seed).permutation(len(plays))
    return [plays[i] for i in order[:-n_val]], [plays[i] for i in order[-n_val:]]


def cut_tiles(texts, length):
    """Every text cut into consecutive tiles of `length` characters (remainders dropped)."""
    return [t[i:i + length] for t in texts for i in range(0, len(t) - length + 1, length)]


def sample_windows(texts, T, n, seed):
    """n windows of T characters, each at a uniformly drawn start inside one text (none spans two
    plays); the draws depend on (seed, T) only: both norms of a seed pair see the same windows."""
    starts = np.array([max(0, len(t) - T + 1) for t in texts])
    cum = np.cumsum(starts)
    u = np.random.default_rng([seed, T]).integers(0, cum[-1], size=n)
    play = np.searchsorted(cum, u, side="right")
    offset = u - (cum[play] - starts[play])
    return [texts[p][o:o + T] for p, o in zip(play.tolist(), offset.tolist())]


def window_ids(tiles, T, vocab):
    """Tiles cut into windows of T characters: (inputs, targets), both (n_windows, T) int arrays;
    inputs are [BOS] + the window's first T-1 characters, as in the training documents."""
    ids = np.array([encode(tile, vocab) for tile in tiles], dtype=np.int64).reshape(-1, T)
    inputs = np.concatenate([np.full((len(ids), 1), len(vocab)), ids[:, :-1]], axis=1)
    return inputs, ids


def load_data(opts):
    """The plays, the split, the vocabulary and the val tiles (InputError: one line)."""
    plays = shakespeare_plays()
    if opts.val_plays >= len(plays):
        raise InputError(f"--val-plays {opts.val_plays} leaves no play to train on "
                         f"({len(plays)} plays)")
    train_plays, val_plays = split_plays(plays, opts.val_plays, opts.split_seed)
    tiles = cut_tiles([text for _, text in val_plays], opts.tile)
    if len(tiles) < opts.curve_tiles:
        raise InputError(f"the held-out plays give {len(tiles)} tiles of {opts.tile} characters, "
                         f"fewer than --curve-tiles {opts.curve_tiles}")
    rng = np.random.default_rng(opts.split_seed + 1)
    pick = np.sort(rng.choice(len(tiles), opts.curve_tiles, replace=False))
    return {"vocab": build_vocab([text for _, text in plays]),
            "train": [text for _, text in train_plays], "curve_tiles": [tiles[i] for i in pick],
            "final_tiles": tiles, "train_plays": [name for name, _ in train_plays],
            "val_plays": [name for name, _ in val_plays],
            "n_train_chars": sum(len(text) for _, text in train_plays),
            "n_val_chars": sum(len(text) for _, text in val_plays),
            "corpus_sha256": fingerprint([text for _, text in plays])}


def bigram_loss(train_texts, tiles, T, vocab):
    """Val loss of a character bigram model (add-one counts on the training plays; after BOS the
    unigram): what a model that ignores all context but one character can reach."""
    V = len(vocab) + 1
    counts = np.ones((V, V))
    for text in train_texts:
        ids = np.array(encode(text, vocab))
        np.add.at(counts, (ids[:-1], ids[1:]), 1.0)
    counts[V - 1] = counts.sum(axis=0)  # after BOS: the unigram
    logp = np.log(counts / counts.sum(axis=1, keepdims=True))
    inputs, targets = window_ids(tiles, T, vocab)
    return float(-logp[inputs, targets].mean())


# =========================================================================== one run (in a worker)

def val_loss(params, cfg, inputs, targets):
    """Mean next-character loss over the windows, and its mean at each position (T,), float64."""
    chunk = max(1, EVAL_POSITIONS // inputs.shape[1])
    sums = np.zeros(inputs.shape[1])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for i in range(0, len(inputs), chunk):
            logits = gpt_forward(params, inputs[i:i + chunk], cfg)[0].astype(np.float64)
            top = logits.max(axis=-1, keepdims=True)
            lse = np.log(np.exp(logits - top).sum(axis=-1)) + top[..., 0]
            picked = np.take_along_axis(logits, targets[i:i + chunk, :, None], axis=-1)[..., 0]
            sums += (lse - picked).sum(axis=0)
    per_position = sums / len(inputs)
    return float(per_position.mean()), per_position


def model_config(job, vocab_size):
    return GPTConfig(vocab_size=vocab_size, n_embd=job["n_embd"], n_head=job["n_head"],
                     n_layer=job["n_layer"], block_size=job["T"], norm=job["norm"],
                     alpha_init=job.get("alpha_init", GPTConfig.alpha_init))


def train_job(job, observer):
    """train() on the job's windows (float32 NumPy engine); its own val loss only at the first and
    last step (eval_every = steps) on one short doc: the observer measures on the val tiles."""
    d = common.WORKER_DATA
    docs = sample_windows(d["train"], job["T"], job["steps"] * job["batch_size"], job["seed"])
    cfg = model_config(job, len(d["vocab"]) + 1)
    return common.train_observed(
        observer, docs, [d["curve_tiles"][0][:job["T"]]], d["vocab"], cfg, steps=job["steps"],
        batch_size=job["batch_size"], lr=job["lr"], seed=job["seed"], engine="numpy",
        dtype="float32", eval_every=job["steps"])


def run_job(job):
    """Train one model (a pure function of `job` and the data); return its record."""
    d, T = common.WORKER_DATA, job["T"]
    cfg = model_config(job, len(d["vocab"]) + 1)
    curve_in, curve_tg = window_ids(d["curve_tiles"], T, d["vocab"])
    curve = []

    def record(step, params):
        curve.append([step, round(val_loss(params, cfg, curve_in, curve_tg)[0], 6)])

    wall0, cpu0 = time.perf_counter(), time.process_time()
    record(0, init_params(cfg, job["seed"], np.float32))  # the init train() builds from the seed
    points = set(eval_points(job["steps"], job["n_log"], job["n_lin"]))
    state = train_job(job, common.MeasureAt(points, record))
    final = common.final_loss(curve, job["steps"], state.error)
    rec = dict(job, error=state.error, final_val=final, val_curve=curve,
               ms_per_step=state.ms_per_step)
    if final is not None and job["phase"] != "anchor":  # per-position loss on every val tile
        loss, per_position = val_loss(state.params, cfg,
                                      *window_ids(d["final_tiles"], T, d["vocab"]))
        rec.update(final_tiles_val=round(loss, 6),
                   per_position=[round(float(x), 5) for x in per_position])
    if job["norm"] == "sphere":
        eff = effective_scales(state.params, cfg)
        rec["final_scales"] = {g: round(float(eff[g].mean()), 5) for g in common.SCALE_GROUPS}
    rec.update(seconds=time.perf_counter() - wall0, cpu_seconds=time.process_time() - cpu0)
    return rec


def gate_job(job):
    """One long run's val loss and context_gain on every val tile at job["checks"] even steps."""
    d = common.WORKER_DATA
    cfg = model_config(job, len(d["vocab"]) + 1)
    final_tiles = window_ids(d["final_tiles"], job["T"], d["vocab"])
    points = np.linspace(0, job["steps"], job["checks"] + 1)[1:].round().astype(int)
    checks = []

    def check(step, params):
        loss, per_position = val_loss(params, cfg, *final_tiles)
        checks.append([step, round(loss, 6), round(context_gain(per_position), 6)])

    cpu0 = time.process_time()
    state = train_job(job, common.MeasureAt(set(points.tolist()), check))
    return dict(job, error=state.error, checks=checks, cpu_seconds=time.process_time() - cpu0)


def timing_job(job):
    """ms per training step (forward, backward, Adam, retraction; no evaluation) of a short run."""
    silent = common.MeasureAt((), None)  # an observer that measures nothing and prints nothing
    return dict(job, ms_per_step=train_job(job, silent).ms_per_step)


def run_gate_pilot(data, opts, argv, out):
    """--gate-pilot: rmsnorm at the longest T (lr at --center, seed --seed), one run per length
    given, to choose the run length before the grid (whose gate is read from its own runs)."""
    T, t0 = max(opts.contexts), time.perf_counter()
    jobs = [{"norm": "rmsnorm", "T": T, "steps": steps, "lr": lr_of(opts, opts.center),
             "seed": opts.seed, "checks": 8, **model_options(opts)} for steps in opts.gate_pilot]
    with common.pool(data, opts.workers) as executor:
        results = list(executor.map(gate_job, jobs))
    for r in results:
        log(f"gate pilot: rmsnorm T={T} lr={r['lr']:.3g} {r['steps']} steps "
            f"({r['cpu_seconds'] / 60:.0f} CPU min): " + "; ".join(
                f"step {step}: val {loss:.4f}, gain {gain:+.4f}"
                for step, loss, gain in r["checks"]))
    common.write_json(os.path.join(out, "gate_pilot.json"), {
        "command": common.command_line("context_length.py", argv),
        "wall_s": time.perf_counter() - t0, "machine": common.machine_info(), "runs": results})


def alpha_option(opts):
    """{"alpha_init": --alpha-init} in a job, unless it is nGPT's (the records before the flag)."""
    alpha = getattr(opts, "alpha_init", GPTConfig.alpha_init)
    return {} if alpha == GPTConfig.alpha_init else {"alpha_init": alpha}


def model_options(opts):
    return {**{k: getattr(opts, k) for k in ("batch_size", "n_embd", "n_head", "n_layer")},
            **alpha_option(opts)}


# =========================================================================== the grid

def run_key(r):
    """What a run is a function of (besides the options in SAME, checked once for the file)."""
    return (r["norm"], r["T"], r["steps"], r["lr_k"], r["seed"],
            r.get("alpha_init", GPTConfig.alpha_init))


class Unit(common.Sweep):
    """One norm at one context length: its lr sweep, the chosen lr, seeds and anchor runs."""

    def __init__(self, norm, T):
        super().__init__()
        self.norm, self.T, self.key = norm, T, (norm, T)


def plan(opts):
    return {(norm, T): Unit(norm, T) for T in opts.contexts for norm in NORMS}


def anchor_steps(opts):
    return [opts.steps // f for f in opts.anchor_fractions]


class Grid(common.Scheduler):
    """Every unit's sweep, then its seeds and (at --anchor-contexts) its anchor runs."""
    key = staticmethod(run_key)

    def job(self, unit, phase, k, seed, steps=None):
        return {**super().job(unit, phase, k, seed, steps), **alpha_option(self.opts)}

    def anchor_steps(self, unit):
        return anchor_steps(self.opts) if unit.T in self.opts.anchor_contexts else ()

    def line(self, j, rec):
        final = "diverged" if rec["final_val"] is None else f"{rec['final_val']:.4f}"
        return (f"T={j['T']} {j['norm']:<7} {j['phase']:<6} steps={j['steps']} lr={j['lr']:.3g} "
                f"seed={j['seed']}: val {final}, {rec['ms_per_step']:.0f} ms/step")

    def priority(self, j):  # sweeps first (they unlock seeds), long runs first, the centre first
        return (j["phase"] != "sweep", -j["steps"] * j["T"] ** 1.5,
                abs(j["lr_k"] - self.opts.center))


def timing_steps(T):
    """Steps per timing run: a few seconds each (fewer at long T, where a step is slower)."""
    return max(16, 16384 // T)


def run_timing(data, opts, log):
    """ms per step of both norms at each T, in ONE worker process, the norms alternating: a change
    in the machine's load falls on both alike. Other programs only add time, so the fastest
    repetition is closest to a norm's own cost (as in timeit); the medians are kept to compare."""
    out, t0 = {}, time.perf_counter()
    with common.pool(data, 1) as executor:
        for T in opts.contexts:
            ms = {norm: [] for norm in NORMS}
            for rep in range(opts.timing_reps):
                for norm in NORMS:
                    job = {"norm": norm, "T": T, "steps": timing_steps(T), "lr": opts.lr0,
                           "seed": 1000 + rep, **model_options(opts)}
                    ms[norm].append(executor.submit(timing_job, job).result()["ms_per_step"])
            ratios = [sphere / rms for rms, sphere in zip(ms["rmsnorm"], ms["sphere"])]
            t = out[str(T)] = {
                "steps": timing_steps(T), "ms": ms, "ratios": ratios,
                "ms_min": {n: float(min(ms[n])) for n in NORMS},
                "ms_median": {n: float(np.median(ms[n])) for n in NORMS},
                "ratio": float(min(ms["sphere"]) / min(ms["rmsnorm"])),
                "ratio_of_medians": float(np.median(ms["sphere"]) / np.median(ms["rmsnorm"])),
                "wall_s": time.perf_counter() - t0, "measured": common.now_utc()}
            log(f"timing T={T}: fastest of {opts.timing_reps}: rmsnorm "
                f"{t['ms_min']['rmsnorm']:.1f} ms/step, sphere {t['ms_min']['sphere']:.1f} "
                f"ms/step, ratio sphere/rmsnorm {t['ratio']:.3f} (of the medians "
                f"{t['ratio_of_medians']:.3f}; per repetition {min(ratios):.3f}-{max(ratios):.3f})")
    return out


# =========================================================================== the measurements

def mean_std(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None
    return float(np.mean(xs)), (float(np.std(xs, ddof=1)) if len(xs) > 1 else None)


def mean_ci(xs):
    """A 95% t-interval of the mean, [low, high] (None with fewer than two values)."""
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return None
    half = T95[min(len(xs) - 1, len(T95)) - 1] * float(np.std(xs, ddof=1)) / math.sqrt(len(xs))
    return [float(np.mean(xs)) - half, float(np.mean(xs)) + half]


def band_mean(per_position, band=SAME_CONTEXT):
    """Mean loss over the positions band[0]..band[1]-1 of a run's per-position loss (None if
    the run has none); band=None: over all positions."""
    if not per_position or (band is not None and len(per_position) < band[1]):
        return None  # no run, or a T too short for the band
    return float(np.mean(per_position if band is None else per_position[band[0]:band[1]]))


def speedup(rms, sph):
    """r = rmsnorm / sphere steps to l*, the worse of the two final losses; None if one diverged.
    r is None (no defined value) when the sphere's curve is at l* from step 0: a run that ends
    worse than it started takes no step to get there."""
    if rms["final_val"] is None or sph["final_val"] is None:
        return None
    target = max(rms["final_val"], sph["final_val"])
    a = steps_to_target(rms["val_curve"], target)
    b = steps_to_target(sph["val_curve"], target)
    return {"target": target, "rms_steps": a, "sphere_steps": b, "r": a / b if b else None}


def slope(xs, ys):
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def near_band(T):
    """The positions the gate compares the far half with: 32..63, or T/4..T/2-1 when T < 128."""
    return min(32, T // 4), min(64, T // 2)


def context_gain(per_position):
    """Mean loss at the near band's positions minus the mean over the second half of the
    positions (T/2..T-1): how much the far context helps (T = 512: 32-63 against 256-511)."""
    T = len(per_position)
    lo, hi = near_band(T)
    return float(np.mean(per_position[lo:hi]) - np.mean(per_position[T // 2:]))


def summarize_row(T, units, opts, timing, seeds):
    """The numbers of one context length."""
    u = {n: units[(n, T)] for n in NORMS}
    rms, sph = u["rmsnorm"].seeds, u["sphere"].seeds
    pairs = [speedup(rms[seed], sph[seed]) for seed in seeds]
    rs = [p["r"] if p else None for p in pairs]
    gaps = [None if None in (sph[seed]["final_val"], rms[seed]["final_val"])
            else sph[seed]["final_val"] - rms[seed]["final_val"] for seed in seeds]
    row = {"T": T, "pairs": pairs, "r": rs, "gap": gaps,
           "final": {n: [u[n].seeds[seed]["final_val"] for seed in seeds] for n in NORMS},
           "lr": {n: lr_of(opts, u[n].best_k) for n in NORMS},
           "lr_k": {n: u[n].best_k for n in NORMS},
           "sweep": {n: [[lr_of(opts, k), u[n].sweep[k]["final_val"]] for k in sorted(u[n].sweep)]
                     for n in NORMS},
           "extended": {n: u[n].extended for n in NORMS},
           "at_edge": {n: u[n].at_edge for n in NORMS},
           "context_gain": {n: [context_gain(u[n].seeds[seed]["per_position"])
                                if u[n].seeds[seed].get("per_position") else None
                                for seed in seeds] for n in NORMS}}
    row["r_mean"], row["r_std"] = mean_std(rs)
    valid = [x for x in rs if x is not None]
    row["r_min"], row["r_max"] = (min(valid), max(valid)) if valid else (None, None)
    row["gap_mean"], row["gap_std"] = mean_std(gaps)
    row["r_ci"], row["gap_ci"] = mean_ci(rs), mean_ci(gaps)
    for key, band in (("same_context", SAME_CONTEXT), ("all_positions", None)):
        row[key] = {n: [band_mean(u[n].seeds[seed].get("per_position"), band) for seed in seeds]
                    for n in NORMS}
    row["worse_took_S"] = sum(1 for p in pairs if p and max(p["rms_steps"], p["sphere_steps"])
                              >= opts.steps)  # then r is only the other run's steps over S
    if timing and str(T) in timing:
        row["time_ratio"] = timing[str(T)]["ratio"]  # sphere ms/step / rmsnorm ms/step
        row["wall_speedup"] = None if row["r_mean"] is None else row["r_mean"] / row["time_ratio"]
    return row


def verdict(slopes, ratio, first, last):
    """The trend against the anchors': supports, contradicts or neither."""
    if not slopes or ratio is None:
        return "undecided: a run diverged"
    if min(slopes) < 0 < max(slopes):
        return "contradicts: the slopes of log r against log T straddle 0"
    if max(slopes) <= 0:
        return "contradicts: r falls with T in every seed"
    if ratio >= SUPPORT_RATIO:
        return (f"supports: r rises with T in every seed and r_{last} / r_{first} >= "
                f"{SUPPORT_RATIO}")
    return (f"neither: every seed's slope is > 0 but r_{last} / r_{first} = {ratio:.2f} < "
            f"{SUPPORT_RATIO}")


def summarize_anchors(T, units, opts, seeds):
    """The anchors' protocol at T: mean final losses per run length, and the iso-loss lengths."""
    lengths = sorted(anchor_steps(opts)) + [opts.steps]
    u = {n: units[(n, T)] for n in NORMS}

    def finals_at(norm, steps):
        runs = ([u[norm].seeds[seed] for seed in seeds] if steps == opts.steps
                else [u[norm].anchors[(steps, seed)] for seed in seeds])
        return [r["final_val"] for r in runs]

    means = {n: [mean_std(finals_at(n, L))[0] for L in lengths] for n in NORMS}
    a = {"T": T, "lengths": lengths, "final_means": means,
         "finals": {n: {str(L): finals_at(n, L) for L in lengths} for n in NORMS}}
    if None not in means["rmsnorm"] + means["sphere"]:
        iso_r = iso_length(lengths, means["rmsnorm"], means["sphere"][-1])
        iso_s = iso_length(lengths, means["sphere"], means["rmsnorm"][-1])
        a["rms_length_for_sphere_final"] = iso_r
        a["rms_ratio"] = [iso_r[0], iso_r[1] / opts.steps]
        a["sphere_length_for_rms_final"] = iso_s
        a["sphere_ratio"] = [{"<": ">", ">": "<", "=": "="}[iso_s[0]], opts.steps / iso_s[1]]
    return a


def summarize(units, opts, timing):
    """Every number of the report, from the run records (and the timing measurements)."""
    seeds = list(range(opts.seed + 1, opts.seed + opts.seeds + 1))
    rows = [summarize_row(T, units, opts, timing, seeds) for T in opts.contexts]
    per_seed = []
    for i, seed in enumerate(seeds):
        xs = [row["T"] for row in rows if row["r"][i] is not None]
        ys = [row["r"][i] for row in rows if row["r"][i] is not None]
        per_seed.append({"seed": seed, "slope": slope(xs, ys) if len(xs) >= 2 else None,
                         "rises": all(b > a for a, b in zip(ys, ys[1:])) if len(ys) >= 2 else None})
    slopes = [p["slope"] for p in per_seed if p["slope"] is not None]
    first, last = rows[0], rows[-1]
    ratio = None
    if first["r_mean"] and last["r_mean"] is not None:
        ratio = last["r_mean"] / first["r_mean"]
    gains = last["context_gain"]["rmsnorm"]
    gate = {"T": last["T"], "gains": gains, "threshold": GATE_NATS,
            "passed": all(g is not None and g >= GATE_NATS for g in gains)}
    anchors = [summarize_anchors(T, units, opts, seeds)
               for T in opts.contexts if T in opts.anchor_contexts]
    trend = verdict(slopes, ratio, first["T"], last["T"])
    return {"rows": rows, "per_seed": per_seed, "slopes": slopes, "ratio_last_first": ratio,
            "trend": trend, "verdict": trend if gate["passed"] else
            f"no verdict: the gate failed (the rmsnorm runs at T = {last['T']} do not use their "
            "context)", "gate": gate, "anchors": anchors, "seeds": seeds,
            "same_context": same_context_shift(first, last),
            "tuning_seed": [tuning_seed(units[(n, T)], opts, seeds) for T in opts.contexts
                            for n in NORMS]}


def same_context_shift(first, last):
    """How the gap (sphere - rmsnorm, mean over seed pairs) moves from the shortest T to the
    longest at positions 16-31, where every T gives the same context, and over all positions."""
    def gap(row, key):
        pairs = [(a, b) for a, b in zip(row[key]["rmsnorm"], row[key]["sphere"])
                 if a is not None and b is not None]
        return float(np.mean([b - a for a, b in pairs])) if pairs else None

    shift = {key: [gap(first, key), gap(last, key)] for key in ("same_context", "all_positions")}
    moves = [None if None in g else g[1] - g[0] for g in shift.values()]
    shift["share"] = None if None in moves or not moves[1] else moves[0] / moves[1]
    return shift


def tuning_seed(unit, opts, seeds):
    """The winner's curse: the tuning seed's final loss at the chosen lr (the best of the sweep)
    against the mean of the seeds run at that lr afterwards."""
    best = unit.sweep[unit.best_k]["final_val"]
    after = mean_std([unit.seeds[seed]["final_val"] for seed in seeds])[0]
    return {"norm": unit.norm, "T": unit.T, "tuning": best, "seeds_mean": after,
            "difference": None if None in (best, after) else after - best}


# =========================================================================== report

def _iso(iso, nd=2):
    if iso is None:
        return "—"
    return f"{iso[1]:.{nd}f}" if iso[0] == "=" else f"{iso[0]} {iso[1]:.{nd}f}"


def _header(summary, data, opts, info):
    m = info["machine"]
    invocations = "".join(
        f"; `{v['command']}` started {v['started']}, "
        + ("stopped early or timing only" if v["n_trained"] is None
           else f"{v['n_trained']} runs trained")
        + f", wall {fmt_time(v['wall_s'])}, load average {v['load_start']} → {v['load_end']}"
        for v in info["invocations"])
    return [
        "# Sphere (nGPT) vs RMSNorm along the context length", "",
        f"- corpus `shakespeare` (38 plays, sha256 of the play texts "
        f"{data['corpus_sha256'][:12]}…): {len(data['train_plays'])} plays for training "
        f"({data['n_train_chars']:,} characters), {len(data['val_plays'])} held out "
        f"({data['n_val_chars']:,} characters: {', '.join(data['val_plays'])}; split seed "
        f"{opts.split_seed}); vocab {data['vocab_size']} tokens (with BOS)",
        f"- val curve: {opts.curve_tiles} tiles of {opts.tile} characters of the held-out plays "
        f"(a fixed subset, {opts.curve_tiles * opts.tile:,} predicted characters; about "
        f"{data['n_eval_points']} points a run, dense early); per-position loss at the end on "
        f"all {data['n_final_tiles']} tiles; every T predicts the same characters, each window "
        "starting with BOS",
        f"- model: n_embd {opts.n_embd}, n_head {opts.n_head}, n_layer {opts.n_layer}, block_size "
        f"= T; batch {opts.batch_size} windows of T characters per step; NumPy engine, float32; "
        f"Adam (β1 0.85, β2 0.99), lr decaying linearly to 0 over {opts.steps:,} steps; sphere: "
        f"alpha_init {getattr(opts, 'alpha_init', GPTConfig.alpha_init):g}, s_z init 1, retraction",
        f"- lr per norm and T: lattice {opts.lr0:g}·2^(k/2), k = {opts.center - opts.sweep}.."
        f"{opts.center + opts.sweep}, extended past an edge while the best is there (up to "
        f"{opts.max_extend}×), tuned on seed {opts.seed} alone; then seeds "
        f"{summary['seeds'][0]}..{summary['seeds'][-1]} at the chosen lr (paired: same initial "
        "draws, same windows in the same order for both norms)",
        f"- command: `{info['command']}`",
        f"- machine: {m['cpu']}, {m['cpu_count']} logical CPUs, {m['platform']}, Python "
        f"{m['python']}, NumPy {m['numpy']}; {opts.workers} worker processes, 1 BLAS thread "
        "each; the machine was shared with other work (timings in the grid are wall time under "
        "that load)",
        f"- compute: {info['n_runs']} runs, **{info['cpu_s'] / 3600:.2f} CPU hours** (summed "
        f"process time of the runs), **{fmt_time(info['wall_s'])} wall time** over "
        f"{len(info['invocations'])} invocation(s){invocations}", ""]


def _ci(ci, nd=2):
    return "—" if ci is None else f"[{ci[0]:.{nd}f}, {ci[1]:.{nd}f}]"


def _separate(summary, T):
    """The anchors' protocol at T: (S / sphere length, rmsnorm length / S), or dashes."""
    a = next((a for a in summary["anchors"] if a["T"] == T), None)
    return ("—", "—") if a is None else (_iso(a.get("sphere_ratio")), _iso(a.get("rms_ratio")))


def _speedup(summary, opts):
    rows = summary["rows"]
    L = ["## The speed-up per context length", "",
         "Separate runs (the anchors' protocol, below): S over the length of a sphere run "
         "whose final loss equals rmsnorm's at S, and the length of an rmsnorm run that matches "
         "the sphere's at S, over S. r = rmsnorm steps / sphere steps to reach ℓ*, the worse of "
         "the pair's two final val losses, read off the curves of one run each (> 1: the sphere "
         "gets there in fewer steps). ± is the std over seeds (ddof 1); the intervals are 95% "
         "t-intervals of the mean over seeds; the gap is sphere − rmsnorm final val loss per "
         "seed pair; time ratio = sphere ms/step / rmsnorm ms/step, measured apart from the grid "
         f"(one process, the norms alternating, the fastest of {opts.timing_reps} repetitions "
         "each); per wall time = r / time ratio.", "",
         "| T | separate runs: S / sphere length | separate runs: rmsnorm length / S | r mean ± "
         "std | r 95% interval | r per seed | gap (nats) | gap 95% interval | rmsnorm final | "
         "sphere final | lr rmsnorm | lr sphere | time ratio | speed-up per wall time |",
         "|---" * 14 + "|"]
    for row in rows:
        fr, fs = (mean_std(row["final"][n]) for n in NORMS)
        sep = _separate(summary, row["T"])
        L.append(f"| {row['T']} | {sep[0]} | {sep[1]} | "
                 f"{fmt(row['r_mean'], 2)} ± {fmt(row['r_std'], 2)} | {_ci(row['r_ci'])} | "
                 f"{', '.join(fmt(x, 2) for x in row['r'])} | "
                 f"{fmt(row['gap_mean'], sign=True)} ± {fmt(row['gap_std'])} | "
                 f"{_ci(row['gap_ci'], 3)} | {fmt(fr[0])} ± {fmt(fr[1])} | "
                 f"{fmt(fs[0])} ± {fmt(fs[1])} | {row['lr']['rmsnorm']:.3g} | "
                 f"{row['lr']['sphere']:.3g} | {fmt(row.get('time_ratio'), 3)} | "
                 f"{fmt(row.get('wall_speedup'), 2)} |")
    L += ["", "| seed | slope of log r against log T | r rises at every step of T |",
          "|---|---|---|"]
    L += [f"| {p['seed']} | {fmt(p['slope'], 3, sign=True)} | {'yes' if p['rises'] else 'no'} |"
          for p in summary["per_seed"]]
    took = sum(row["worse_took_S"] for row in rows)
    return L + [
        "", f"- r_{rows[-1]['T']} / r_{rows[0]['T']} (means): "
        f"**{fmt(summary['ratio_last_first'], 2)}**",
        "- the criteria fixed beforehand (supports: every slope > 0 and that ratio ≥ "
        f"{SUPPORT_RATIO}; contradicts: the slopes straddle 0, or are all < 0) read: "
        f"{summary['trend']}",
        f"- **verdict: {summary['verdict']}** (the pre-registration: a failed gate means no "
        "verdict)",
        f"- in {took} of {len(rows) * len(summary['seeds'])} pairs the worse run reaches ℓ* only "
        f"at its last step, so r is the other run's steps to ℓ* over S (or S over them): r "
        "restates which run ended lower and by how much, not how fast either got there", ""]


def _same_context(summary):
    sc = summary["same_context"]
    rows = summary["rows"]
    L = [f"## Positions {SAME_CONTEXT[0]}–{SAME_CONTEXT[1] - 1}: the same context at every T", "",
         f"At positions {SAME_CONTEXT[0]}–{SAME_CONTEXT[1] - 1} every T gives the model the same "
         f"≤ {SAME_CONTEXT[1] - 1} characters of context: whatever changes there with T is not "
         "the use of a longer context. Mean loss over those positions at the end, on all held-out "
         "tiles (mean over seeds), beside the mean over all positions:", "",
         f"| T | rmsnorm, {SAME_CONTEXT[0]}–{SAME_CONTEXT[1] - 1} | sphere, {SAME_CONTEXT[0]}–"
         f"{SAME_CONTEXT[1] - 1} | gap there | rmsnorm, all positions | sphere, all positions "
         "| gap over all positions |", "|---" * 7 + "|"]
    for row in rows:
        cells = []
        for key in ("same_context", "all_positions"):
            rms, sph = (mean_std(row[key][n])[0] for n in NORMS)
            gap = None if None in (rms, sph) else sph - rms
            cells += [fmt(rms), fmt(sph), fmt(gap, sign=True)]
        L.append(f"| {row['T']} | " + " | ".join(cells) + " |")
    same, every = sc["same_context"], sc["all_positions"]
    if None not in same + every and sc["share"] is not None:
        L += ["", f"From T = {rows[0]['T']} to T = {rows[-1]['T']} the gap moves by "
              f"{same[1] - same[0]:+.3f} nats at positions {SAME_CONTEXT[0]}–"
              f"{SAME_CONTEXT[1] - 1} and by {every[1] - every[0]:+.3f} over all positions: "
              f"**{sc['share']:.0%}** of the change is there, where the context is the same."]
    return L + [""]


def _gate(summary, pilot):
    g, seeds = summary["gate"], summary["seeds"]
    L = ["## The gate: do the longest-context rmsnorm runs use their context?", "",
         f"Mean loss at positions 32–63 minus the mean over positions {g['T'] // 2}–{g['T'] - 1}, "
         f"per seed, at the end of training, on all held-out tiles (must be ≥ {g['threshold']} "
         "nats):", "", "| T | norm | " + " | ".join(f"seed {seed}" for seed in seeds) + " |",
         "|---|---|" + "---|" * len(seeds)]
    L += [f"| {row['T']} | {n} | " + " | ".join(fmt(x, 4, sign=True)
                                                 for x in row["context_gain"][n]) + " |"
          for row in summary["rows"] for n in NORMS]
    L += ["", f"Gate at T = {g['T']}: **{'passed' if g['passed'] else 'NOT passed'}**.", ""]
    if pilot:
        first = pilot["runs"][0]
        L += [f"Before the grid, longer rmsnorm runs at T = {g['T']} (lr {first['lr']:.3g}, seed "
              f"{first['seed']}, the lr decaying over each run's own length; "
              f"`{pilot['command']}`): the same gain on all held-out tiles, measured during each "
              "run:", "",
              "| run length | " + " | ".join(f"{i}/8 of the run" for i in range(1, 9)) + " |",
              "|---" * 9 + "|"]
        L += [f"| {r['steps']:,} | " + " | ".join(f"{step:,}: {v:.3f} / {gain:+.4f}"
                                                  for step, v, gain in r["checks"]) + " |"
              for r in pilot["runs"]]
        L += ["", "(each cell: step: val loss / gain)", ""]
    return L


def _anchors(summary):
    if not summary["anchors"]:
        return []
    lengths = summary["anchors"][0]["lengths"]
    L = ["## The anchors' protocol: separate full-schedule runs of S/4, S/2 and S steps", "",
         "Final val loss (mean over seeds) of runs whose lr decays to 0 over their own length, at "
         "the lr chosen for S. 'rmsnorm length / S': the rmsnorm run length whose final loss "
         "equals the sphere's at S (interpolated linearly in log steps; < 1: the sphere at S is "
         "only as good as a shorter rmsnorm run). 'S / sphere length': S over the sphere run "
         "length whose final loss equals rmsnorm's at S (the anchors' speed-up; > 1 would be a "
         "speed-up of the sphere). '<' / '>': outside the measured lengths.", "",
         "| T | norm | " + " | ".join(f"{n:,} steps" for n in lengths)
         + " | rmsnorm length / S | S / sphere length |", "|---|---|" + "---|" * (len(lengths) + 2)]
    for a in summary["anchors"]:
        for n in NORMS:
            extra = (f"{_iso(a.get('rms_ratio'))} | {_iso(a.get('sphere_ratio'))}"
                     if n == "sphere" else " | ")
            L.append(f"| {a['T']} | {n} | " + " | ".join(fmt(x) for x in a["final_means"][n])
                     + f" | {extra} |")
    return L + [""]


def _sweeps(summary, opts):
    L = [f"## Learning-rate sweeps (final val loss, seed {opts.seed}; chosen in bold)", "",
         "| T | norm | lr: final val loss |", "|---|---|---|"]
    for row in summary["rows"]:
        for n in NORMS:
            cell = " · ".join(f"**{lr:.3g}: {fmt(v)}**" if lr == row["lr"][n] else
                              f"{lr:.3g}: {'diverged' if v is None else fmt(v)}"
                              for lr, v in row["sweep"][n])
            note = ((f" (extended {row['extended'][n]}×)" if row["extended"][n] else "")
                    + (" **best at the edge**" if row["at_edge"][n] else ""))
            L.append(f"| {row['T']} | {n} | {cell}{note} |")
    L += ["", "The winner's curse: the tuning seed's final loss at the chosen lr (the best of "
          "its sweep) against the mean of the seeds run at that lr afterwards (> 0: the chosen "
          "lr did worse on fresh seeds than on the one it was chosen on):", "",
          "| T | norm | tuning seed | later seeds, mean | difference |", "|---|---|---|---|---|"]
    L += [f"| {t['T']} | {t['norm']} | {fmt(t['tuning'])} | {fmt(t['seeds_mean'])} | "
          f"{fmt(t['difference'], sign=True)} |" for t in summary["tuning_seed"]]
    return L + ["", "Figures: `context_length.png` (r per seed against T beside the anchors' "
                "numbers; final loss and gap; per-position loss at the longest T), "
                "`val_curves.png` (val curves per T, mean and min–max over seeds).", ""]


def markdown(summary, data, opts, info, pilot=None):
    return "\n".join(_header(summary, data, opts, info) + _speedup(summary, opts)
                     + _same_context(summary) + _gate(summary, pilot) + _anchors(summary)
                     + _sweeps(summary, opts))


# =========================================================================== figures

def plot_speedup(ax, summary):
    rows, Ts = summary["rows"], [row["T"] for row in summary["rows"]]
    for i in range(len(summary["seeds"])):
        ax.plot(Ts, [row["r"][i] for row in rows], ".-", color="gray", alpha=0.5, lw=1,
                label="r per seed" if i == 0 else None)
    ax.plot(Ts, [row["r_mean"] for row in rows], "o-", color="k", label="r, mean over seeds")
    for label, T, lo, hi in ANCHORS:
        color = "tab:red" if label.startswith("nGPT paper") else "tab:green"
        first = T == min(a[1] for a in ANCHORS if a[0] == label)
        ax.plot([T, T], [lo, hi], "-", color=color, lw=4, alpha=0.6)
        ax.plot([T], [(lo * hi) ** 0.5], "s", color=color, ms=6, label=label if first else None)
    ax.axhline(1, color="k", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set(xlabel="context length T (characters here, tokens for the anchors)",
           ylabel="speed-up r = rmsnorm steps / sphere steps",
           title="speed-up in steps to the worse final loss")
    ax.legend(fontsize=8)


def plot_finals(ax, summary, opts):
    rows, Ts = summary["rows"], [row["T"] for row in summary["rows"]]
    for j, n in enumerate(NORMS):
        off = 2 ** ((j - 0.5) * 0.05)
        for row in rows:
            points = [v for v in row["final"][n] if v is not None]
            ax.plot([row["T"] * off] * len(points), points, ".", color=COLORS[n], alpha=0.5)
        ax.plot([T * off for T in Ts], [mean_std(row["final"][n])[0] for row in rows], "o-",
                color=COLORS[n], label=f"{n} final val loss")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="context length T", ylabel="final val loss (nats/char)",
           title=f"final val loss (dots: seeds) after {opts.steps:,} steps")
    ax2 = ax.twinx()
    ax2.errorbar(Ts, [row["gap_mean"] for row in rows], [row["gap_std"] or 0 for row in rows],
                 color="tab:purple", marker="s", capsize=3, ls="--",
                 label="gap sphere − rmsnorm (right)")
    ax2.axhline(0, color="tab:purple", lw=0.6, ls=":")
    ax2.set_ylabel("gap (nats)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8)


def plot_positions(ax, summary, seed_runs):
    T = summary["rows"][-1]["T"]
    for n in NORMS:
        runs = [seed_runs[(n, T, seed)] for seed in summary["seeds"]]
        per_position = np.array([r["per_position"] for r in runs if r.get("per_position")])
        if len(per_position):
            ax.plot(np.arange(1, T + 1), per_position.mean(axis=0), color=COLORS[n], lw=1,
                    label=f"{n}, mean over seeds")
    ax.axvspan(32, 64, color="gray", alpha=0.15, label="positions 32–63")
    ax.axvspan(T // 2, T, color="tab:green", alpha=0.08, label=f"positions {T // 2}–{T - 1}")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="position in the window (characters of context + 1)",
           ylabel="val loss at that position (nats/char)", ylim=(None, 3.2),
           title=f"per-position loss at the end, T = {T}")
    ax.legend(fontsize=8)


def plot_curves(ax, row, summary, seed_runs, data):
    bigram = data["bigram"][str(row["T"])]
    for n in NORMS:
        runs = [seed_runs[(n, row["T"], seed)] for seed in summary["seeds"]]
        common.band(ax, runs, f"{n} (lr {row['lr'][n]:.3g})", COLORS[n])
    ax.axhline(bigram, color="gray", ls="--", lw=1, label="bigram")
    low = min(min(v for v in row["final"][n] if v is not None) for n in NORMS)
    ax.set_ylim(low - 0.05, bigram + 0.4)
    ax.set_xscale("log")
    ax.set(xlabel="optimizer step (log scale)", ylabel="val loss (nats/char)",
           title=f"T = {row['T']}: mean, min–max over seeds")
    ax.legend(fontsize=8)


def plots(summary, records, data, opts, out):
    plt = common.pyplot()
    seed_runs = {(r["norm"], r["T"], r["seed"]): r for r in records if r["phase"] == "seeds"}
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
    plot_speedup(axes[0], summary)
    plot_finals(axes[1], summary, opts)
    plot_positions(axes[2], summary, seed_runs)
    common.save_fig(fig, os.path.join(out, "context_length.png"), "Sphere (nGPT) vs RMSNorm along "
                    f"the context length: Shakespeare, n_embd {opts.n_embd}, {opts.n_layer} "
                    f"layers, batch {opts.batch_size}, {len(summary['seeds'])} paired seeds")
    rows = summary["rows"]
    fig, axes = plt.subplots(1, len(rows), figsize=(4.6 * len(rows), 3.9), squeeze=False)
    for row, ax in zip(rows, axes[0]):
        plot_curves(ax, row, summary, seed_runs, data)
    common.save_fig(fig, os.path.join(out, "val_curves.png"))


# =========================================================================== files

def data_info(data, opts):
    """What results.json records about the data (the text itself is rebuilt from the corpus)."""
    n_points = len(eval_points(opts.steps, opts.n_log, opts.n_lin)) + 1
    return {"corpus_sha256": data["corpus_sha256"], "train_plays": data["train_plays"],
            "val_plays": data["val_plays"], "n_train_chars": data["n_train_chars"],
            "n_val_chars": data["n_val_chars"], "vocab_size": len(data["vocab"]) + 1,
            "n_final_tiles": len(data["final_tiles"]), "n_eval_points": n_points,
            "bigram": {str(T): bigram_loss(data["train"], data["curve_tiles"], T, data["vocab"])
                       for T in opts.contexts}}


RECORD = {"norm": lambda x: x in NORMS, "phase": lambda x: x in ("sweep", "seeds", "anchor"),
          "final_val": common.loss_or_none, "val_curve": common.is_curve,
          "seconds": common.is_number,
          "cpu_seconds": common.is_number, "ms_per_step": common.is_number,
          **{k: lambda x: isinstance(x, int) and not isinstance(x, bool) and x > 0
             for k in ("T", "steps")},
          **{k: lambda x: isinstance(x, int) and not isinstance(x, bool)
             for k in ("lr_k", "seed")}}


def check_memory(opts, data):
    """The longest context's runs on --workers workers against --max-memory (before any run):
    each holds its windows (steps x batch of T characters) and a model of block_size T."""
    T, vocab_size = max(opts.contexts), len(data["vocab"]) + 1
    n = opts.steps * opts.batch_size
    common.check_grid_memory([model_config({"T": T, "norm": "sphere", **model_options(opts)},
                                           vocab_size)], opts.batch_size, opts.steps,
                             opts.workers, (n, n * T), opts.max_memory)


DERIVED = ("anchor_fractions", "tile")  # options set after parsing (check_options, main)


def has_data(raw):
    """What the report reads besides the runs: the data's record and the invocations."""
    return isinstance(raw.get("data"), dict) and isinstance(raw["data"].get("corpus_sha256"), str) \
        and common.has_invocations(raw)


def whole_timing(timing):
    """The entries of a results.json's timing that are whole (per T: each norm's fastest ms per
    step and their ratio); None if none is. What is missing is measured again."""
    if not isinstance(timing, dict):
        return None
    whole = {T: t for T, t in timing.items() if isinstance(t, dict)
             and common.is_number(t.get("ratio")) and isinstance(t.get("ms_min"), dict)
             and all(common.is_number(t["ms_min"].get(n)) for n in NORMS)}
    return whole or None


def load_pilot(folder):
    """gate_pilot.json of --gate-pilot in `folder`, or None."""
    path = os.path.join(folder, "gate_pilot.json")
    if not os.path.exists(path):
        return None
    return common.read_json(path, "read", keys=("command", "runs"))


def report(summary, records, data, opts, info, timing, pilot, out, other=()):
    md = markdown(summary, data, opts, info, pilot)
    common.write_json(os.path.join(out, "results.json"), {
        "complete": True, "options": vars(opts), "data": data, "info": info, "timing": timing,
        "summary": summary, "runs": records, "other_runs": list(other)})
    common.write_text(os.path.join(out, "results.md"), md)
    plots(summary, records, data, opts, out)
    return md


def restore(raw, opts, folder):
    """--from-json: the units from the run records (and gate_pilot.json beside): a report writer."""
    units = plan(opts)
    for r in raw["runs"]:
        units[(r["norm"], r["T"])].add(r)
    for u in units.values():
        u.restore(2 * opts.sweep + 1, f"{u.norm} at T={u.T}")
    timing = whole_timing(raw.get("timing"))
    summary = summarize(units, opts, timing)
    return functools.partial(report, summary, raw["runs"], raw["data"], opts, raw["info"],
                             timing, load_pilot(folder),
                             other=raw.get("other_runs", []))


# =========================================================================== CLI

QUICK = {"contexts": [16, 32], "steps": 24, "seeds": 2, "sweep": 0, "max_extend": 1,
         "anchor_contexts": [16, 32], "curve_tiles": 16, "val_plays": 2, "timing_reps": 1,
         "n_log": 4, "n_lin": 4}


def parser():
    p = common.study_parser(
        "context_length", __doc__, "contexts 16 and 32, 24 steps, 2 seeds, one lr per sweep, "
        "small val set", workers=2, seeds=3, seed=0, lr0=0.01, sweep=1, max_extend=4,
        batch_size=8, n_embd=32, n_head=4, n_layer=2, split_seed=42, n_lin=16, n_log=8,
        max_memory=4.0)
    add, int_list = p.add_argument, common.int_list
    add("--contexts", type=int_list, default=[64, 128, 256, 512],
        help="context lengths T, comma-separated (default 64,128,256,512)")
    add("--steps", type=common.pos_int, default=2000,
        help="optimizer steps per run, S (default 2000)")
    add("--center", type=int, default=0, help="the sweep's centre k on the lattice lr0*2^(k/2) "
        "(default 0)")
    add("--anchor-contexts", type=int_list, default=[64, 512],
        help="contexts with the anchors' protocol: runs of S/4 and S/2 steps (default 64,512)")
    add("--val-plays", type=common.pos_int, default=4,
        help="plays held out for validation (default 4)")
    add("--curve-tiles", type=common.pos_int, default=128,
        help="held-out tiles of max(T) characters the val curve is measured on (default 128)")
    add("--timing-reps", type=common.pos_int, default=7,
        help="repetitions of the timing, norms alternating; the fastest counts (default 7)")
    add("--retime", action="store_true", help="measure the per-step times again even if known")
    add("--timing-only", action="store_true", help="measure only the per-step times (results.json)")
    add("--alpha-init", type=float, default=GPTConfig.alpha_init,
        help="the sphere's alpha_A and alpha_M at init (default 0.05, nGPT's; 0.5 is 1/n_layer at "
             "2 layers)")
    add("--gate-pilot", type=int_list, metavar="STEPS",
        help="train nothing else: rmsnorm at the longest T for each of these run lengths, "
             "measuring the gate's context gain 8 times a run; writes gate_pilot.json")
    return p


RULES = {"contexts": "block_size", "anchor_contexts": "block_size"}


def check_options(opts):
    """Every flag by the settings table's rules, the lrs the sweep may reach, and what the grid
    needs of them (two lengths, eval points that fit the shortest run), before anything runs."""
    common.check_flags(opts, RULES)
    reach = opts.sweep + opts.max_extend
    common.check_lattice(opts, opts.center - reach, opts.center + reach)
    shortest = min([opts.steps // f for f in opts.anchor_fractions] + [opts.steps])
    if opts.n_lin > shortest or opts.n_log > opts.steps:
        raise InputError(f"--n-lin {opts.n_lin} and --n-log {opts.n_log} need at most as many "
                         f"eval points as the shortest run has steps ({shortest}; --n-log at most "
                         f"--steps {opts.steps})")
    anchors = len(opts.anchor_fractions) * len(opts.anchor_contexts) * 2 * opts.seeds
    common.check_plan(2 * len(opts.contexts) * (2 * reach + 1 + opts.seeds) + anchors)
    if opts.n_embd % opts.n_head:
        raise InputError(f"--n-embd ({opts.n_embd}) must be divisible by --n-head ({opts.n_head})")
    for name in ("contexts", "anchor_contexts"):
        xs = getattr(opts, name)
        if len(set(xs)) != len(xs):
            raise InputError(f"--{name.replace('_', '-')} has repeated values: {xs}")
    if len(opts.contexts) < 2:
        raise InputError("--contexts needs at least two lengths (the trend is what is measured)")
    if min(opts.contexts) < 8:
        raise InputError("--contexts must be at least 8 (the gate compares position bands), got "
                         f"{opts.contexts}")
    if any(opts.steps // f < 2 for f in opts.anchor_fractions):
        raise InputError(f"--steps {opts.steps} is too short for runs of S/4 steps")
    opts.contexts = sorted(opts.contexts)
    opts.anchor_contexts = [T for T in opts.anchor_contexts if T in opts.contexts]
    opts.tile = max(opts.contexts)


def run(opts, argv, data, dinfo, out):
    """The grid (or only the timing), continuing the results.json in `out`; markdown or None."""
    path = os.path.join(out, "results.json")
    cache, raw = common.previous_runs(path, opts, FILE, run_key, SAME)
    if raw and raw["data"]["corpus_sha256"] != dinfo["corpus_sha256"]:
        raise InputError(f"cannot continue from {path!r}: it was made with other the corpus (use "
                         "another --out, or the same options)")
    timing = whole_timing(raw.get("timing")) if raw else None
    invocations = raw["info"]["invocations"] if raw else []
    command = common.command_line("context_length.py", argv)
    started, load_start, t0 = common.now_utc(), common.load_average(), time.perf_counter()
    log(f"shakespeare: {len(data['train_plays'])} train plays ({dinfo['n_train_chars']:,} chars), "
        f"held out: {', '.join(data['val_plays'])}; {len(cache)} runs already in {path}; "
        f"{opts.workers} workers")

    def info_now(n_trained, records):
        now = {"command": command, "started": started, "wall_s": time.perf_counter() - t0,
               "n_trained": n_trained, "load_start": load_start,
               "load_end": common.load_average()}
        return {"machine": common.machine_info(), "invocations": invocations + [now],
                "n_runs": len(records), "cpu_s": sum(r["cpu_seconds"] for r in records),
                "wall_s": sum(v["wall_s"] for v in invocations) + now["wall_s"],
                "command": command}

    def save(records):
        raw = {"complete": False, "options": vars(opts), "data": dinfo,
               "info": info_now(None, records), "timing": timing, "runs": records,
               "other_runs": common.other_runs(cache, records, run_key)}
        common.save_runs(lambda: common.write_json(path, raw), path, len(records), "grid")

    if opts.timing_only:
        timing = run_timing(data, opts, log)
        save(list(cache.values()))
        log(f"wrote the per-step timing into {path}")
        return None
    units = plan(opts)
    records, n_trained = Grid(units, opts, cache, save).grid(run_job, data)
    if (timing is None or opts.retime
            or any("ms_min" not in timing.get(str(T), {}) for T in opts.contexts)):
        timing = run_timing(data, opts, log)
    order = {T: i for i, T in enumerate(opts.contexts)}
    records.sort(key=lambda r: (order[r["T"]], r["norm"],
                                ("sweep", "seeds", "anchor").index(r["phase"]), r["steps"],
                                r["lr_k"], r["seed"]))
    md = report(summarize(units, opts, timing), records, dinfo, opts,
                info_now(n_trained, records), timing, load_pilot(out), out,
                other=common.other_runs(cache, records, run_key))
    log(f"done: {n_trained} runs trained now, {len(records)} in all; wrote results.md, "
        f"results.json and 2 PNGs to {out}")
    return md


FILE = common.ResultsFile(RECORD, parser, check_options, DERIVED, rest=has_data)


@common.cli
def main(argv):
    opts = common.parse(parser(), argv, QUICK)
    opts.anchor_fractions = [4, 2]
    if opts.from_json:
        return common.rerender(opts, restore, 2, FILE)
    check_options(opts)
    data = load_data(opts)
    check_memory(opts, data)
    dinfo = data_info(data, opts)
    out = common.output_folder(opts.out, "context_length", opts.quick)
    if opts.gate_pilot:
        return run_gate_pilot(data, opts, argv, out)  # writes gate_pilot.json, no report
    return run(opts, argv, data, dinfo, out)


if __name__ == "__main__":
    from harness import leave
    leave(main())
