"""Does the sphere's (nGPT's) speed-up over RMSNorm grow with the context length -- at CPU scale?

Lecture 3 quotes nGPT's headline, 4-20x fewer steps to the same loss. The published numbers grow with the context
length: the paper reports about 4x at 1k tokens of context and 10-20x at 4k-8k; NVIDIA's repository and a Nous
Research reproduction about 1.5-2x at 1k and about 4x at 4k. `scaling.py` measures the gap along training length,
depth and width on names (16 characters at most); this script measures it along the context length T, on the
plays of the `shakespeare` corpus (corpora.py: `shakespeare_plays`):

  * T in --contexts (default 64, 128, 256, 512); batch fixed in sequences (8), as NVIDIA's launcher fixes
    sequences at 1k and 4k; n_embd 32, 4 heads, 2 layers; float32 NumPy engine; nGPT's defaults for the sphere
    (alpha_init 0.05, s_z init 1, retraction); Adam with the lr decaying linearly to 0 over --steps (2,000);
  * training documents are windows of T characters cut at seeded random places from the training plays (each is
    [BOS] + T characters, so position p predicts character p from the p characters before it); the windows and
    their order depend on (seed, T) only, and the initial weights on the seed only, so seed s of rmsnorm and seed
    s of the sphere see the same initial draws and the same data in the same order (paired seeds);
  * validation is on whole held-out plays (--val-plays, chosen by --split-seed): they are cut into tiles of
    max(--contexts) characters; the val curve (about 25 points a run, dense early) is measured on a fixed subset
    of --curve-tiles tiles and the per-position loss at the end on all of them; a tile is cut into windows of T
    characters, so every T predicts the same characters, each with the context its T allows;
  * each norm gets its own learning rate at each T: lattice --lr0 * 2^(k/2), k = --center - --sweep .. --center
    + --sweep with seed --seed, one more lr beyond an edge while the best is at the edge (up to --max-extend
    times); then --seeds fresh seeds at the best lr, and at --anchor-contexts the anchors' protocol: full-schedule
    runs of S/4 and S/2 steps at the same lr.

What it reports (results.md; every number from the stored curves in results.json):
  * r_T = (rmsnorm steps) / (sphere steps) to reach l*, the worse of the pair's two final val losses, each read
    off its val curve by linear interpolation; per seed; mean, std and min-max per T; the slope of log r against
    log T per seed (least squares over the contexts); the verdict against the anchors' trend: supports if every
    seed's slope is > 0 and mean r at the longest T / mean r at the shortest >= 1.25, contradicts if the slopes
    straddle 0 (or are all < 0);
  * the gate: the rmsnorm runs at the longest T must use their context: mean loss at positions T/2..T-1 at least
    0.03 nats below positions 32..63 (else the runs are too short to say anything about context);
  * the gap sphere - rmsnorm in nats, the per-step time ratio measured apart from the grid (one process, the
    norms alternating, --timing-reps times, the fastest repetition of each counting; the grid's own timings are
    distorted by whatever else runs), and the speed-up per unit of wall time r_T * (rmsnorm ms/step) / (sphere
    ms/step);
  * the anchors' protocol: the rmsnorm run length whose final loss equals the sphere's at S (interpolated in
    log steps between S/4, S/2 and S), over S; and S over the sphere run length whose final loss equals
    rmsnorm's at S.

Runs go to a process pool (--workers, default 2; one BLAS thread each). Each run is a pure function of its
arguments, and results.json is rewritten after every finished run: an interrupted invocation, started again with
the same --out, takes every finished run from it and continues (the lr decisions depend only on run results).
--from-json re-renders results.md and the figures from a results.json without training.

    python experiments/context_length.py --gate-pilot 4000,8000          # before the grid: longer rmsnorm runs
    python experiments/context_length.py                                 # the full grid, hours
    python experiments/context_length.py --timing-only                   # the per-step times again, alone
    python experiments/context_length.py --quick --out /tmp/q            # smoke test, seconds
    python experiments/context_length.py --from-json experiments/results/context_length/results.json
"""
import argparse
import json
import math
import multiprocessing
import os
import shlex
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # microgpt.py lives at the repo root

import numpy as np  # noqa: E402
from arguments import Parser, int_list, nonneg_int, parse, pos_int  # noqa: E402
from scaling import machine_info  # noqa: E402
from sphere_vs_rmsnorm import measure_at, save_fig, steps_to_target  # noqa: E402  (as the other experiments do)

from corpora import fingerprint, shakespeare_plays  # noqa: E402
from harness.run_files import atomic_write  # noqa: E402
from microgpt import GPTConfig, build_vocab, encode, init_params, train  # noqa: E402
from model_config import effective_scales  # noqa: E402
from numpy_engine import gpt_forward  # noqa: E402
from settings import InputError  # noqa: E402

NORMS = ("rmsnorm", "sphere")
COLORS = {"rmsnorm": "tab:blue", "sphere": "tab:orange"}
BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
SCALE_GROUPS = ("alpha_A", "alpha_M", "s_qk", "s_u", "s_z")
GATE_NATS = 0.03          # the longest T's rmsnorm runs must gain this much from far context (see gate())
SUPPORT_RATIO = 1.25      # mean r at the longest T / at the shortest, for "supports"
EVAL_POSITIONS = 4096     # positions per forward call when evaluating (8 windows at T = 512)
# The anchors: (label, context, speed-up low, high), as lecture 3 and the issue quote them.
ANCHORS = (("nGPT paper", 1024, 4.0, 4.0), ("nGPT paper", 4096, 10.0, 20.0), ("nGPT paper", 8192, 10.0, 20.0),
           ("NVIDIA repo / Nous", 1024, 1.5, 2.0), ("NVIDIA repo / Nous", 4096, 4.0, 4.0))
# what a run is a function of besides its job (norm, T, steps, lr, seed): a results.json made with other values
# of these cannot be resumed from
SAME = ("batch_size", "n_embd", "n_head", "n_layer", "lr0", "val_plays", "split_seed", "curve_tiles", "n_log",
        "n_lin", "tile")


# =========================================================================== data

def split_plays(plays, n_val, seed):
    """(train plays, val plays): a seeded permutation of the plays; the last n_val are held out."""
    order = np.random.default_rng(seed).permutation(len(plays))
    return [plays[i] for i in order[:-n_val]], [plays[i] for i in order[-n_val:]]


def cut_tiles(texts, length):
    """Every text cut into consecutive tiles of `length` characters (each text's remainder is dropped)."""
    return [t[i:i + length] for t in texts for i in range(0, len(t) - length + 1, length)]


def sample_windows(texts, T, n, seed):
    """n windows of T characters, each at a uniformly drawn start inside one text (no window spans two plays);
    the draws depend on (seed, T) only: both norms of a seed pair train on the same windows in the same order."""
    starts = np.array([max(0, len(t) - T + 1) for t in texts])
    cum = np.cumsum(starts)
    u = np.random.default_rng([seed, T]).integers(0, cum[-1], size=n)
    play = np.searchsorted(cum, u, side="right")
    offset = u - (cum[play] - starts[play])
    return [texts[p][o:o + T] for p, o in zip(play.tolist(), offset.tolist())]


def window_ids(tiles, T, vocab):
    """Tiles cut into windows of T characters: (inputs, targets), both (n_windows, T) int arrays; inputs are
    [BOS] + the window's first T-1 characters, as the training documents' [BOS] + characters."""
    ids = np.array([encode(tile, vocab) for tile in tiles], dtype=np.int64).reshape(-1, T)
    inputs = np.concatenate([np.full((len(ids), 1), len(vocab)), ids[:, :-1]], axis=1)
    return inputs, ids


def load_data(opts):
    """The plays, the split, the vocabulary and the val tiles (InputError with a one-line message)."""
    plays = shakespeare_plays()
    if opts.val_plays >= len(plays):
        raise InputError(f"--val-plays {opts.val_plays} leaves no play to train on ({len(plays)} plays)")
    train_plays, val_plays = split_plays(plays, opts.val_plays, opts.split_seed)
    vocab = build_vocab([text for _, text in plays])
    tiles = cut_tiles([text for _, text in val_plays], opts.tile)
    if len(tiles) < opts.curve_tiles:
        raise InputError(f"the held-out plays give {len(tiles)} tiles of {opts.tile} characters, fewer than "
                         f"--curve-tiles {opts.curve_tiles}")
    pick = np.sort(np.random.default_rng(opts.split_seed + 1).choice(len(tiles), opts.curve_tiles, replace=False))
    return {"vocab": vocab, "train": [text for _, text in train_plays], "curve_tiles": [tiles[i] for i in pick],
            "final_tiles": tiles, "train_plays": [n for n, _ in train_plays], "val_plays": [n for n, _ in val_plays],
            "n_train_chars": sum(len(t) for _, t in train_plays), "n_val_chars": sum(len(t) for _, t in val_plays),
            "corpus_sha256": fingerprint([text for _, text in plays])}


def bigram_loss(train_texts, tiles, T, vocab):
    """Val loss of a character bigram model (add-one counts on the training plays; the first position of each
    window, after BOS, gets the unigram): what a model that ignores all context but one character can reach."""
    V = len(vocab) + 1
    counts = np.ones((V, V))
    for text in train_texts:
        ids = np.array(encode(text, vocab))
        np.add.at(counts, (ids[:-1], ids[1:]), 1.0)
    counts[V - 1] = counts.sum(axis=0)  # after BOS: the unigram
    logp = np.log(counts / counts.sum(axis=1, keepdims=True))
    inputs, targets = window_ids(tiles, T, vocab)
    return float(-logp[inputs, targets].mean())


# =========================================================================== one run (in a worker process)

_DATA = None


def _init_worker(data):
    global _DATA
    _DATA = data


def eval_points(steps, n_log, n_lin):
    """Steps at which the val curve is measured (besides step 0): n_lin evenly spaced up to the last step, and
    before the first of them up to n_log log-spaced ones (dense early, where the loss falls fastest)."""
    lin = np.linspace(0, steps, n_lin + 1)[1:].round().astype(int)
    early = np.geomspace(1, lin[0], n_log + 1)[:-1].round().astype(int)
    return sorted(p for p in set(lin.tolist()) | set(early.tolist()) if 0 < p <= steps)


def val_loss(params, cfg, inputs, targets):
    """Mean next-character loss over the windows, and its mean at each position (T,), in float64."""
    chunk = max(1, EVAL_POSITIONS // inputs.shape[1])
    sums = np.zeros(inputs.shape[1])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for i in range(0, len(inputs), chunk):
            logits = gpt_forward(params, inputs[i:i + chunk], cfg)[0].astype(np.float64)
            top = logits.max(axis=-1, keepdims=True)
            lse = np.log(np.exp(logits - top).sum(axis=-1)) + top[..., 0]
            sums += (lse - np.take_along_axis(logits, targets[i:i + chunk, :, None], axis=-1)[..., 0]).sum(axis=0)
    per_position = sums / len(inputs)
    return float(per_position.mean()), per_position


def model_config(job, vocab_size):
    return GPTConfig(vocab_size=vocab_size, n_embd=job["n_embd"], n_head=job["n_head"], n_layer=job["n_layer"],
                     block_size=job["T"], norm=job["norm"])


def run_job(job):
    """Train one model (a pure function of `job` and the data); return its record."""
    d, T = _DATA, job["T"]
    vocab = d["vocab"]
    cfg = model_config(job, len(vocab) + 1)
    docs = sample_windows(d["train"], T, job["steps"] * job["batch_size"], job["seed"])
    curve_in, curve_tg = window_ids(d["curve_tiles"], T, vocab)
    points = set(eval_points(job["steps"], job["n_log"], job["n_lin"]))
    curve = []

    def record(step, params):
        curve.append([step, round(val_loss(params, cfg, curve_in, curve_tg)[0], 6)])

    wall0, cpu0 = time.perf_counter(), time.process_time()
    record(0, init_params(cfg, job["seed"], np.float32))  # the init train() builds from the same seed
    # train() measures val only at its own step 0 and last step (eval_every = steps) on one short doc: the
    # curve is measured by the observer on the fixed val tiles instead
    state = train(docs, [d["curve_tiles"][0][:T]], vocab, cfg, steps=job["steps"], batch_size=job["batch_size"],
                  lr=job["lr"], seed=job["seed"], engine="numpy", dtype="float32", eval_every=job["steps"],
                  observer=measure_at(points, record))
    final = curve[-1][1] if not state.error and curve[-1][0] == job["steps"] else None
    if final is not None and not math.isfinite(final):
        final = None
    rec = dict(job, error=state.error, final_val=final, val_curve=curve, ms_per_step=state.ms_per_step)
    if final is not None and job["phase"] != "anchor":  # per-position loss at the end, on every val tile
        fin_in, fin_tg = window_ids(d["final_tiles"], T, vocab)
        loss, per_position = val_loss(state.params, cfg, fin_in, fin_tg)
        rec.update(final_tiles_val=round(loss, 6), per_position=[round(float(x), 5) for x in per_position])
    if job["norm"] == "sphere":
        eff = effective_scales(state.params, cfg)
        rec["final_scales"] = {g: round(float(eff[g].mean()), 5) for g in SCALE_GROUPS}
    rec.update(seconds=time.perf_counter() - wall0, cpu_seconds=time.process_time() - cpu0)
    return rec


def gate_job(job):
    """The gate's question for one long run: the context gain (see context_gain) on every val tile, measured at
    job["checks"] evenly spaced steps, with the val loss; the lr decays over the whole run as in the grid."""
    d, T = _DATA, job["T"]
    cfg = model_config(job, len(d["vocab"]) + 1)
    docs = sample_windows(d["train"], T, job["steps"] * job["batch_size"], job["seed"])
    fin_in, fin_tg = window_ids(d["final_tiles"], T, d["vocab"])
    points = set(np.linspace(0, job["steps"], job["checks"] + 1)[1:].round().astype(int).tolist())
    checks = []

    def check(step, params):
        loss, per_position = val_loss(params, cfg, fin_in, fin_tg)
        checks.append([step, round(loss, 6), round(context_gain(per_position), 6)])

    cpu0 = time.process_time()
    state = train(docs, [d["curve_tiles"][0][:T]], d["vocab"], cfg, steps=job["steps"], batch_size=job["batch_size"],
                  lr=job["lr"], seed=job["seed"], engine="numpy", dtype="float32", eval_every=job["steps"],
                  observer=measure_at(points, check))
    return dict(job, error=state.error, checks=checks, cpu_seconds=time.process_time() - cpu0)


def run_gate_pilot(data, opts, log):
    """--gate-pilot: rmsnorm at the longest T, lr --lr0 * 2^(center/2), seed --seed, one run per length given;
    writes gate_pilot.json into --out. The grid's gate is read from the grid's own runs; this decides the run
    length before the grid."""
    for var in BLAS_ENV:
        os.environ[var] = "1"
    T = max(opts.contexts)
    jobs = [{"norm": "rmsnorm", "T": T, "steps": steps, "lr": lr_of(opts, opts.center), "seed": opts.seed,
             "batch_size": opts.batch_size, "n_embd": opts.n_embd, "n_head": opts.n_head, "n_layer": opts.n_layer,
             "checks": 8} for steps in opts.gate_pilot]
    with ProcessPoolExecutor(max_workers=opts.workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_init_worker, initargs=(data,)) as pool:
        results = list(pool.map(gate_job, jobs))
    for r in results:
        log(f"gate pilot: rmsnorm T={T} lr={r['lr']:.3g} {r['steps']} steps ({r['cpu_seconds'] / 60:.0f} CPU min): "
            + "; ".join(f"step {s}: val {v:.4f}, gain {g:+.4f}" for s, v, g in r["checks"]))
    return results


def timing_job(job):
    """ms per training step (forward, backward, Adam, retraction; no evaluation) of one short run."""
    d = _DATA
    cfg = model_config(job, len(d["vocab"]) + 1)
    docs = sample_windows(d["train"], job["T"], job["steps"] * job["batch_size"], job["seed"])
    state = train(docs, [d["curve_tiles"][0][:job["T"]]], d["vocab"], cfg, steps=job["steps"],
                  batch_size=job["batch_size"], lr=job["lr"], seed=job["seed"], engine="numpy", dtype="float32",
                  eval_every=job["steps"], observer=measure_at((), None))
    return dict(job, ms_per_step=state.ms_per_step)


# =========================================================================== the plan

def lr_of(opts, k):
    return opts.lr0 * 2.0 ** (k / 2)


def run_key(r):
    """What a run is a function of (besides the options in SAME, checked once for the whole file)."""
    return (r["norm"], r["T"], r["steps"], r["lr_k"], r["seed"])


class Unit:
    """One norm at one context length: its lr sweep, the chosen lr, its seeds and its anchor runs."""

    def __init__(self, norm, T):
        self.norm, self.T = norm, T
        self.sweep = {}       # lattice k -> record (None while running)
        self.extended = 0     # lrs added beyond an edge
        self.best_k = None
        self.at_edge = False  # the best lr is still at the edge after --max-extend extensions
        self.seeds = {}       # seed -> record
        self.anchors = {}     # (steps, seed) -> record


def plan(opts):
    return {(norm, T): Unit(norm, T) for T in opts.contexts for norm in NORMS}


def pick_best(sweep):
    """The lattice k with the lowest final val loss (ties: the lower lr; a diverged run never wins)."""
    ks = sorted(sweep)
    finals = [math.inf if sweep[k]["final_val"] is None else sweep[k]["final_val"] for k in ks]
    return ks[int(np.argmin(finals))]


def anchor_steps(opts):
    return [opts.steps // f for f in opts.anchor_fractions]


def run_grid(units, data, opts, cache, save, log):
    """Every unit's sweep (with extensions), seeds and anchor runs in a process pool. Returns the records (taken
    from `cache`, run_key -> record, when there) and how many were trained now. save(records) after each run."""
    def job(unit, phase, k, seed, steps=None):
        return {"norm": unit.norm, "T": unit.T, "steps": steps or opts.steps, "lr": lr_of(opts, k), "lr_k": k,
                "seed": seed, "phase": phase, "batch_size": opts.batch_size, "n_embd": opts.n_embd,
                "n_head": opts.n_head, "n_layer": opts.n_layer, "n_log": opts.n_log, "n_lin": opts.n_lin}

    ready, notes, records = [], [], []

    def sweep_done(unit):
        ks = sorted(unit.sweep)
        best = pick_best(unit.sweep)
        if best in (ks[0], ks[-1]) and unit.extended < opts.max_extend:
            k = ks[0] - 1 if best == ks[0] else ks[-1] + 1
            unit.extended += 1
            unit.sweep[k] = None
            ready.append(job(unit, "sweep", k, opts.seed))
            return
        unit.at_edge = best in (ks[0], ks[-1])
        unit.best_k = best
        notes.append(f"  -> {unit.norm} T={unit.T}: lr {lr_of(opts, best):.3g} (tried "
                     + ", ".join(f"{lr_of(opts, k):.3g}" for k in ks) + ("; STILL AT THE EDGE" if unit.at_edge else "")
                     + ")")
        for s in range(opts.seed + 1, opts.seed + opts.seeds + 1):
            unit.seeds[s] = None
            ready.append(job(unit, "seeds", best, s))
            if unit.T in opts.anchor_contexts:
                for steps in anchor_steps(opts):
                    unit.anchors[(steps, s)] = None
                    ready.append(job(unit, "anchor", best, s, steps))

    for unit in units.values():
        for k in range(opts.center - opts.sweep, opts.center + opts.sweep + 1):
            unit.sweep[k] = None
            ready.append(job(unit, "sweep", k, opts.seed))

    def finish(j, rec, reused):
        records.append(rec)
        unit = units[(j["norm"], j["T"])]
        if j["phase"] == "sweep":
            unit.sweep[j["lr_k"]] = rec
            if all(r is not None for r in unit.sweep.values()):
                sweep_done(unit)
        elif j["phase"] == "seeds":
            unit.seeds[j["seed"]] = rec
        else:
            unit.anchors[(j["steps"], j["seed"])] = rec
        if not reused:
            save(records)
            final = "diverged" if rec["final_val"] is None else f"{rec['final_val']:.4f}"
            log(f"[{len(records)}] T={j['T']} {j['norm']:<7} {j['phase']:<6} steps={j['steps']} lr={j['lr']:.3g} "
                f"seed={j['seed']}: val {final} ({fmt_time(rec['seconds'])}, {rec['ms_per_step']:.0f} ms/step) | "
                f"elapsed {fmt_time(time.perf_counter() - t0)}, {len(ready)} ready")
        for note in notes:
            log(note)
        notes.clear()

    def cost(j):  # only the timing depends on the order: sweeps first (they unlock seeds), long runs first,
        return (j["phase"] != "sweep", -j["steps"] * j["T"] ** 1.5, abs(j["lr_k"] - opts.center))  # the centre first

    for var in BLAS_ENV:  # inherited by the spawned workers before they import numpy: one BLAS thread each
        os.environ[var] = "1"
    t0, n_trained, running = time.perf_counter(), 0, {}
    with ProcessPoolExecutor(max_workers=opts.workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_init_worker, initargs=(data,)) as pool:
        try:
            while ready or running:
                ready.sort(key=cost)
                while ready and len(running) < opts.workers:
                    j = ready.pop(0)
                    if run_key(j) in cache:
                        finish(j, dict(cache[run_key(j)], phase=j["phase"]), reused=True)
                        continue
                    running[pool.submit(run_job, j)] = j
                if not running:
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: run_key(running[f])):
                    j = running.pop(fut)
                    n_trained += 1
                    finish(j, fut.result(), reused=False)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return records, n_trained


def timing_steps(T):
    """Steps per timing run: a few seconds each (fewer at long T, where a step is slower)."""
    return max(16, 16384 // T)


def run_timing(data, opts, log):
    """ms per step of both norms at each T, measured in ONE worker process with the norms alternating (rmsnorm,
    sphere, rmsnorm, ...), so that a change in the machine's load falls on both alike; the ratio is that of each
    norm's fastest repetition. Returns {T: {...}}."""
    for var in BLAS_ENV:
        os.environ[var] = "1"
    out, t0 = {}, time.perf_counter()
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_init_worker, initargs=(data,)) as pool:
        for T in opts.contexts:
            ms = {norm: [] for norm in NORMS}
            for rep in range(opts.timing_reps):
                for norm in NORMS:
                    job = {"norm": norm, "T": T, "steps": timing_steps(T), "lr": opts.lr0, "seed": 1000 + rep,
                           "batch_size": opts.batch_size, "n_embd": opts.n_embd, "n_head": opts.n_head,
                           "n_layer": opts.n_layer}
                    ms[norm].append(pool.submit(timing_job, job).result()["ms_per_step"])
            ratios = [s / r for r, s in zip(ms["rmsnorm"], ms["sphere"])]
            # the machine is shared: other work only ever adds time, so the fastest repetition of each norm is the
            # closest to its own cost (as timeit reports the minimum); the medians are kept for comparison
            out[str(T)] = {"steps": timing_steps(T), "ms": ms, "ratios": ratios,
                           "ms_min": {n: float(min(ms[n])) for n in NORMS},
                           "ms_median": {n: float(np.median(ms[n])) for n in NORMS},
                           "ratio": float(min(ms["sphere"]) / min(ms["rmsnorm"])),
                           "ratio_of_medians": float(np.median(ms["sphere"]) / np.median(ms["rmsnorm"])),
                           "wall_s": time.perf_counter() - t0, "measured": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                           time.gmtime())}
            t = out[str(T)]
            log(f"timing T={T}: fastest of {opts.timing_reps}: rmsnorm {t['ms_min']['rmsnorm']:.1f} ms/step, sphere "
                f"{t['ms_min']['sphere']:.1f} ms/step, ratio sphere/rmsnorm {t['ratio']:.3f} (of the medians "
                f"{t['ratio_of_medians']:.3f}; per repetition {min(ratios):.3f}-{max(ratios):.3f})")
    return out


# =========================================================================== the measurements

def mean_std(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None
    return float(np.mean(xs)), (float(np.std(xs, ddof=1)) if len(xs) > 1 else None)


def speedup(rms, sph):
    """r = rmsnorm steps / sphere steps to l*, the worse of the two final losses (None if a run diverged)."""
    if rms["final_val"] is None or sph["final_val"] is None:
        return None
    target = max(rms["final_val"], sph["final_val"])
    a, b = steps_to_target(rms["val_curve"], target), steps_to_target(sph["val_curve"], target)
    return {"target": target, "rms_steps": a, "sphere_steps": b, "r": a / b}


def slope(xs, ys):
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def near_band(T):
    """The positions the gate compares the far half with: 32..63, or T/4..T/2-1 when T < 128."""
    return min(32, T // 4), min(64, T // 2)


def context_gain(per_position):
    """Mean loss at the near band's positions minus the mean over the second half of the positions (T/2..T-1): how
    much the far context helps (for T = 512: positions 32-63 against 256-511)."""
    T = len(per_position)
    lo, hi = near_band(T)
    return float(np.mean(per_position[lo:hi]) - np.mean(per_position[T // 2:]))


def iso_length(lengths, finals, target):
    """The run length whose final loss equals `target`: linear in log(steps) between the measured lengths around
    it; ["<", shortest] or [">", longest] when the target lies outside what was measured."""
    pts = sorted(zip(lengths, finals))
    if target > pts[0][1]:
        return ["<", pts[0][0]]
    for (n0, f0), (n1, f1) in zip(pts, pts[1:]):
        if f1 <= target <= f0 and f0 != f1:
            t = (f0 - target) / (f0 - f1)
            return ["=", float(math.exp(math.log(n0) + t * (math.log(n1) - math.log(n0))))]
    return [">", pts[-1][0]] if target < pts[-1][1] else ["=", float(pts[-1][0])]


def units_from_records(opts, records):
    """The units (sweeps, chosen lrs, seeds, anchors) from the run records of results.json."""
    units = plan(opts)
    for r in records:
        u = units[(r["norm"], r["T"])]
        if r["phase"] == "sweep":
            u.sweep[r["lr_k"]] = r
        elif r["phase"] == "seeds":
            u.seeds[r["seed"]] = r
        else:
            u.anchors[(r["steps"], r["seed"])] = r
    for u in units.values():
        if not u.sweep or not u.seeds:
            raise InputError(f"results.json has no complete runs of {u.norm} at T={u.T}: not a finished grid")
        ks = sorted(u.sweep)
        u.best_k = pick_best(u.sweep)
        u.extended = len(ks) - (2 * opts.sweep + 1)
        u.at_edge = u.best_k in (ks[0], ks[-1])
    return units


def summarize(units, opts, timing):
    """Every number of the report, from the run records (and the timing measurements)."""
    rows, seeds = [], list(range(opts.seed + 1, opts.seed + opts.seeds + 1))
    for T in opts.contexts:
        rms, sph = units[("rmsnorm", T)], units[("sphere", T)]
        pairs = [speedup(rms.seeds[s], sph.seeds[s]) for s in seeds]
        rs = [p["r"] if p else None for p in pairs]
        gaps = [None if None in (sph.seeds[s]["final_val"], rms.seeds[s]["final_val"])
                else sph.seeds[s]["final_val"] - rms.seeds[s]["final_val"] for s in seeds]
        row = {"T": T, "pairs": pairs, "r": rs, "gap": gaps,
               "final": {n: [u.seeds[s]["final_val"] for s in seeds] for n, u in (("rmsnorm", rms), ("sphere", sph))},
               "lr": {n: lr_of(opts, u.best_k) for n, u in (("rmsnorm", rms), ("sphere", sph))},
               "lr_k": {n: u.best_k for n, u in (("rmsnorm", rms), ("sphere", sph))},
               "sweep": {n: [[lr_of(opts, k), u.sweep[k]["final_val"]] for k in sorted(u.sweep)]
                         for n, u in (("rmsnorm", rms), ("sphere", sph))},
               "extended": {n: u.extended for n, u in (("rmsnorm", rms), ("sphere", sph))},
               "at_edge": {n: u.at_edge for n, u in (("rmsnorm", rms), ("sphere", sph))},
               "context_gain": {n: [context_gain(u.seeds[s]["per_position"]) if u.seeds[s].get("per_position")
                                    else None for s in seeds] for n, u in (("rmsnorm", rms), ("sphere", sph))}}
        row["r_mean"], row["r_std"] = mean_std(rs)
        valid = [x for x in rs if x is not None]
        row["r_min"], row["r_max"] = (min(valid), max(valid)) if valid else (None, None)
        row["gap_mean"], row["gap_std"] = mean_std(gaps)
        if timing and str(T) in timing:
            t = timing[str(T)]
            row["time_ratio"] = t["ratio"]  # sphere ms/step / rmsnorm ms/step
            row["wall_speedup"] = None if row["r_mean"] is None else row["r_mean"] / t["ratio"]
        rows.append(row)
    per_seed = []
    for i, s in enumerate(seeds):
        xs = [row["T"] for row in rows if row["r"][i] is not None]
        ys = [row["r"][i] for row in rows if row["r"][i] is not None]
        per_seed.append({"seed": s, "slope": slope(xs, ys) if len(xs) >= 2 else None,
                         "rises": all(b > a for a, b in zip(ys, ys[1:])) if len(ys) >= 2 else None})
    slopes = [p["slope"] for p in per_seed if p["slope"] is not None]
    first, last = rows[0], rows[-1]
    ratio = (last["r_mean"] / first["r_mean"]) if first["r_mean"] and last["r_mean"] is not None else None
    if not slopes or ratio is None:
        verdict = "undecided: a run diverged"
    elif min(slopes) < 0 < max(slopes):
        verdict = "contradicts: the slopes of log r against log T straddle 0"
    elif max(slopes) <= 0:
        verdict = "contradicts: r falls with T in every seed"
    elif ratio >= SUPPORT_RATIO:
        verdict = f"supports: r rises with T in every seed and r_{last['T']} / r_{first['T']} >= {SUPPORT_RATIO}"
    else:
        verdict = (f"neither: every seed's slope is > 0 but r_{last['T']} / r_{first['T']} = {ratio:.2f} < "
                   f"{SUPPORT_RATIO}")
    gate_row = last["context_gain"]["rmsnorm"]
    gate = {"T": last["T"], "gains": gate_row, "threshold": GATE_NATS,
            "passed": all(g is not None and g >= GATE_NATS for g in gate_row)}
    anchors = []
    for T in opts.contexts:
        if T not in opts.anchor_contexts:
            continue
        lengths = sorted(anchor_steps(opts)) + [opts.steps]
        u = {n: units[(n, T)] for n in NORMS}

        def finals_at(norm, steps, u=u):
            runs = ([u[norm].seeds[s] for s in seeds] if steps == opts.steps else
                    [u[norm].anchors[(steps, s)] for s in seeds])
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
            flip = {"<": ">", ">": "<", "=": "="}[iso_s[0]]
            a["sphere_ratio"] = [flip, opts.steps / iso_s[1]]
        anchors.append(a)
    return {"rows": rows, "per_seed": per_seed, "slopes": slopes, "ratio_last_first": ratio, "verdict": verdict,
            "gate": gate, "anchors": anchors, "seeds": seeds}


# =========================================================================== report

def fmt_time(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def _f(x, nd=3, sign=False):
    return "—" if x is None else (f"{x:+.{nd}f}" if sign else f"{x:.{nd}f}")


def _iso(iso, nd=2):
    return "—" if iso is None else (f"{iso[1]:.{nd}f}" if iso[0] == "=" else f"{iso[0]} {iso[1]:.{nd}f}")


def markdown(summary, data, opts, info, pilot=None):
    S = summary
    m = info["machine"]
    rows = S["rows"]
    L = ["# Sphere (nGPT) vs RMSNorm along the context length", "",
         f"- corpus `shakespeare` (38 plays, sha256 of the play texts {data['corpus_sha256'][:12]}…): "
         f"{len(data['train_plays'])} plays for training ({data['n_train_chars']:,} characters), "
         f"{len(data['val_plays'])} held out ({data['n_val_chars']:,} characters: {', '.join(data['val_plays'])}; "
         f"split seed {opts.split_seed}); vocab {data['vocab_size']} tokens (with BOS)",
         f"- val curve: {opts.curve_tiles} tiles of {opts.tile} characters of the held-out plays (a fixed subset, "
         f"{opts.curve_tiles * opts.tile:,} predicted characters; about {data['n_eval_points']} points a run, dense "
         f"early); per-position loss at the end on all {data['n_final_tiles']} tiles; every T predicts the same "
         "characters, each window starting with BOS",
         f"- model: n_embd {opts.n_embd}, n_head {opts.n_head}, n_layer {opts.n_layer}, block_size = T; batch "
         f"{opts.batch_size} windows of T characters per step; NumPy engine, float32; Adam (β1 0.85, β2 0.99), lr "
         f"decaying linearly to 0 over {opts.steps:,} steps; sphere: alpha_init 0.05, s_z init 1, retraction",
         f"- lr per norm and T: lattice {opts.lr0:g}·2^(k/2), k = {opts.center - opts.sweep}.."
         f"{opts.center + opts.sweep}, extended past an edge while the best is there (up to {opts.max_extend}×), "
         f"tuned on seed {opts.seed} alone; then seeds {S['seeds'][0]}..{S['seeds'][-1]} at the chosen lr "
         "(paired: same initial draws, same windows in the same order for both norms)",
         f"- command: `{info['command']}`",
         f"- machine: {m['cpu']}, {m['cpu_count']} logical CPUs, {m['platform']}, Python {m['python']}, NumPy "
         f"{m['numpy']}; {opts.workers} worker processes, 1 BLAS thread each; the machine was shared with other "
         "work (timings in the grid are wall time under that load)",
         f"- compute: {info['n_runs']} runs, **{info['cpu_s'] / 3600:.2f} CPU hours** (summed process time of the "
         f"runs), **{fmt_time(info['wall_s'])} wall time** over {len(info['invocations'])} invocation(s)"
         + "".join(f"; `{v['command']}` started {v['started']}, "
                   + ("stopped early or timing only" if v["n_trained"] is None else f"{v['n_trained']} runs trained")
                   + ", wall "
                   f"{fmt_time(v['wall_s'])}, load average {v['load_start']} → {v['load_end']}"
                   for v in info["invocations"]), ""]

    L += ["## The speed-up per context length", "",
          "r = rmsnorm steps / sphere steps to reach ℓ*, the worse of the pair's two final val losses (> 1: the "
          "sphere gets there in fewer steps). ± is the std over seeds (ddof 1); the gap is sphere − rmsnorm final "
          "val loss per seed pair; time ratio = sphere ms/step / rmsnorm ms/step, measured apart from the grid (one "
          f"process, the norms alternating, the fastest of {opts.timing_reps} repetitions each); per wall time = r / "
          "time ratio.", "",
          "| T | lr rmsnorm | lr sphere | rmsnorm final | sphere final | gap (nats) | r mean ± std | r min–max | "
          "r per seed | time ratio | speed-up per wall time |", "|---" * 11 + "|"]
    for row in rows:
        fr, fs = (mean_std(row["final"][n]) for n in NORMS)
        L.append(f"| {row['T']} | {row['lr']['rmsnorm']:.3g} | {row['lr']['sphere']:.3g} | "
                 f"{_f(fr[0])} ± {_f(fr[1])} | {_f(fs[0])} ± {_f(fs[1])} | "
                 f"{_f(row['gap_mean'], sign=True)} ± {_f(row['gap_std'])} | "
                 f"{_f(row['r_mean'], 2)} ± {_f(row['r_std'], 2)} | {_f(row['r_min'], 2)}–{_f(row['r_max'], 2)} | "
                 f"{', '.join(_f(x, 2) for x in row['r'])} | {_f(row.get('time_ratio'), 3)} | "
                 f"{_f(row.get('wall_speedup'), 2)} |")
    L += ["", "| seed | slope of log r against log T | r rises at every step of T |", "|---|---|---|"]
    for p in S["per_seed"]:
        L.append(f"| {p['seed']} | {_f(p['slope'], 3, sign=True)} | {'yes' if p['rises'] else 'no'} |")
    L += ["", f"- r_{rows[-1]['T']} / r_{rows[0]['T']} (means): **{_f(S['ratio_last_first'], 2)}**",
          f"- verdict against the anchors' trend (supports: every slope > 0 and that ratio ≥ {SUPPORT_RATIO}; "
          f"contradicts: the slopes straddle 0, or are all < 0): **{S['verdict']}**", ""]

    g = S["gate"]
    L += ["## The gate: do the longest-context rmsnorm runs use their context?", "",
          f"Mean loss at positions 32–63 minus the mean over positions {g['T'] // 2}–{g['T'] - 1}, per seed, at the "
          f"end of training, on all held-out tiles (must be ≥ {g['threshold']} nats):", "",
          "| T | norm | " + " | ".join(f"seed {s}" for s in S["seeds"]) + " |", "|---|---|" + "---|" * len(S["seeds"])]
    for row in rows:
        for n in NORMS:
            L.append(f"| {row['T']} | {n} | " + " | ".join(_f(x, 4, sign=True) for x in row["context_gain"][n])
                     + " |")
    L += ["", f"Gate at T = {g['T']}: **{'passed' if g['passed'] else 'NOT passed'}**.", ""]
    if pilot:
        L += [f"Before the grid, longer rmsnorm runs at T = {g['T']} (lr {pilot['runs'][0]['lr']:.3g}, seed "
              f"{pilot['runs'][0]['seed']}, the lr decaying over each run's own length; `{pilot['command']}`): the "
              "same gain on all held-out tiles, measured during each run:", "",
              "| run length | " + " | ".join(f"{i}/8 of the run" for i in range(1, 9)) + " |", "|---" * 9 + "|"]
        for r in pilot["runs"]:
            L.append(f"| {r['steps']:,} | " + " | ".join(f"{step:,}: {v:.3f} / {gain:+.4f}" for step, v, gain in
                                                         r["checks"]) + " |")
        L += ["", "(each cell: step: val loss / gain)", ""]

    if S["anchors"]:
        L += ["## The anchors' protocol: separate full-schedule runs of S/4, S/2 and S steps", "",
              "Final val loss (mean over seeds) of runs whose lr decays to 0 over their own length, at the lr chosen "
              "for S. 'rmsnorm length / S': the rmsnorm run length whose final loss equals the sphere's at S "
              "(interpolated linearly in log steps; < 1: the sphere at S is only as good as a shorter rmsnorm run). "
              "'S / sphere length': S over the sphere run length whose final loss equals rmsnorm's at S (the "
              "anchors' speed-up; > 1 would be a speed-up of the sphere). '<' / '>': outside the measured lengths.",
              "", "| T | norm | " + " | ".join(f"{L_:,} steps" for L_ in S["anchors"][0]["lengths"])
              + " | rmsnorm length / S | S / sphere length |", "|---|---|" + "---|" * (len(S["anchors"][0]["lengths"])
                                                                                    + 2)]
        for a in S["anchors"]:
            for n in NORMS:
                extra = (f"{_iso(a.get('rms_ratio'))} | {_iso(a.get('sphere_ratio'))}" if n == "sphere" else " | ")
                L.append(f"| {a['T']} | {n} | " + " | ".join(_f(x) for x in a["final_means"][n]) + f" | {extra} |")
        L.append("")

    L += ["## Learning-rate sweeps (final val loss, seed " + str(opts.seed) + "; chosen in bold)", "",
          "| T | norm | lr: final val loss |", "|---|---|---|"]
    for row in rows:
        for n in NORMS:
            cell = " · ".join((f"**{lr:.3g}: {_f(v)}**" if lr == row["lr"][n] else
                               f"{lr:.3g}: {'diverged' if v is None else _f(v)}") for lr, v in row["sweep"][n])
            note = (f" (extended {row['extended'][n]}×)" if row["extended"][n] else "") + (
                " **best at the edge**" if row["at_edge"][n] else "")
            L.append(f"| {row['T']} | {n} | {cell}{note} |")
    L += ["", "Figures: `context_length.png` (r per seed against T beside the anchors' numbers; final loss and gap; "
          "per-position loss at the longest T), `val_curves.png` (val curves per T, mean and min–max over seeds).",
          ""]
    return "\n".join(L)


def plots(summary, records, data, opts, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    S, rows = summary, summary["rows"]
    Ts = [row["T"] for row in rows]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
    ax = axes[0]
    for i in range(len(S["seeds"])):
        ys = [row["r"][i] for row in rows]
        ax.plot(Ts, ys, ".-", color="gray", alpha=0.5, lw=1, label="r per seed" if i == 0 else None)
    ax.plot(Ts, [row["r_mean"] for row in rows], "o-", color="k", label="r, mean over seeds")
    for label, T, lo, hi in ANCHORS:
        color = "tab:red" if label == "nGPT paper" else "tab:green"
        ax.plot([T, T], [lo, hi], "-", color=color, lw=4, alpha=0.6)
        ax.plot([T], [(lo * hi) ** 0.5], "s", color=color, ms=6,
                label=label if T == min(a[1] for a in ANCHORS if a[0] == label) else None)
    ax.axhline(1, color="k", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("context length T (characters here, tokens for the anchors)")
    ax.set_ylabel("speed-up r = rmsnorm steps / sphere steps")
    ax.set_title("speed-up in steps to the worse final loss")
    ax.legend(fontsize=8)
    ax = axes[1]
    for j, n in enumerate(NORMS):
        off = 2 ** ((j - 0.5) * 0.05)
        for row in rows:
            pts = [v for v in row["final"][n] if v is not None]
            ax.plot([row["T"] * off] * len(pts), pts, ".", color=COLORS[n], alpha=0.5)
        ax.plot([T * off for T in Ts], [mean_std(row["final"][n])[0] for row in rows], "o-", color=COLORS[n],
                label=f"{n} final val loss")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context length T")
    ax.set_ylabel("final val loss (nats/char)")
    ax2 = ax.twinx()
    ax2.errorbar(Ts, [row["gap_mean"] for row in rows], [row["gap_std"] or 0 for row in rows], color="tab:purple",
                 marker="s", capsize=3, ls="--", label="gap sphere − rmsnorm (right)")
    ax2.axhline(0, color="tab:purple", lw=0.6, ls=":")
    ax2.set_ylabel("gap (nats)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8)
    ax.set_title(f"final val loss (dots: seeds) after {opts.steps:,} steps")
    ax = axes[2]
    last = rows[-1]
    by = {(r["norm"], r["T"], r["seed"]): r for r in records if r["phase"] == "seeds"}
    for n in NORMS:
        pp = np.array([by[(n, last["T"], s)]["per_position"] for s in S["seeds"]
                       if by[(n, last["T"], s)].get("per_position")])
        if len(pp):
            ax.plot(np.arange(1, last["T"] + 1), pp.mean(axis=0), color=COLORS[n], lw=1, label=f"{n}, mean over seeds")
    ax.axvspan(32, 64, color="gray", alpha=0.15, label="positions 32–63")
    ax.axvspan(last["T"] // 2, last["T"], color="tab:green", alpha=0.08, label=f"positions {last['T'] // 2}–"
               f"{last['T'] - 1}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("position in the window (characters of context + 1)")
    ax.set_ylabel("val loss at that position (nats/char)")
    ax.set_ylim(None, 3.2)
    ax.set_title(f"per-position loss at the end, T = {last['T']}")
    ax.legend(fontsize=8)
    fig.suptitle(f"Sphere (nGPT) vs RMSNorm along the context length: Shakespeare, n_embd {opts.n_embd}, "
                 f"{opts.n_layer} layers, batch {opts.batch_size}, {len(S['seeds'])} paired seeds")
    fig.tight_layout()
    save_fig(fig, os.path.join(out, "context_length.png"))
    plt.close(fig)

    fig, axes = plt.subplots(1, len(rows), figsize=(4.6 * len(rows), 3.9), squeeze=False)
    for row, ax in zip(rows, axes[0]):
        for n in NORMS:
            runs = [by[(n, row["T"], s)] for s in S["seeds"] if by[(n, row["T"], s)]["final_val"] is not None]
            if not runs:
                continue
            steps = np.array([s for s, _ in runs[0]["val_curve"]])[1:]
            vals = np.array([[v for _, v in r["val_curve"]] for r in runs])[:, 1:]
            ax.plot(steps, vals.mean(axis=0), color=COLORS[n], label=f"{n} (lr {row['lr'][n]:.3g})")
            ax.fill_between(steps, vals.min(axis=0), vals.max(axis=0), color=COLORS[n], alpha=0.2, lw=0)
        ax.axhline(data["bigram"][str(row["T"])], color="gray", ls="--", lw=1, label="bigram")
        lo = min(min(v for v in row["final"][n] if v is not None) for n in NORMS)
        ax.set_ylim(lo - 0.05, data["bigram"][str(row["T"])] + 0.4)
        ax.set_xscale("log")
        ax.set_xlabel("optimizer step (log scale)")
        ax.set_ylabel("val loss (nats/char)")
        ax.set_title(f"T = {row['T']}: mean, min–max over seeds")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_fig(fig, os.path.join(out, "val_curves.png"))
    plt.close(fig)


# =========================================================================== files

def data_info(data, opts):
    """What results.json records about the data (the text itself is rebuilt from the corpus)."""
    return {"corpus_sha256": data["corpus_sha256"], "train_plays": data["train_plays"],
            "val_plays": data["val_plays"], "n_train_chars": data["n_train_chars"],
            "n_val_chars": data["n_val_chars"], "vocab_size": len(data["vocab"]) + 1,
            "n_final_tiles": len(data["final_tiles"]), "n_eval_points": len(eval_points(opts.steps, opts.n_log,
                                                                                          opts.n_lin)) + 1,
            "bigram": {str(T): bigram_loss(data["train"], data["curve_tiles"], T, data["vocab"])
                       for T in opts.contexts}}


def write_json(path, raw):
    atomic_write(path, lambda f: f.write(json.dumps(raw, separators=(",", ":")).encode("utf-8")))


def load_previous(path, opts, dinfo):
    """The runs (run_key -> record), timing and invocations of an earlier results.json in --out, if it was made
    with the same data and model options; InputError otherwise."""
    if not os.path.exists(path):
        return {}, None, []
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        old = raw["options"]
        differs = [k for k in SAME if old[k] != getattr(opts, k)]
        if raw["data"]["corpus_sha256"] != dinfo["corpus_sha256"]:
            differs.append("the corpus")
        cache = {run_key(r): r for r in raw["runs"]}
        return_value = cache, raw.get("timing"), raw["info"]["invocations"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"cannot continue from {path!r}: {type(e).__name__}: {e} (use another --out)") from None
    if differs:
        raise InputError(f"cannot continue from {path!r}: it was made with other {', '.join(differs)} "
                         "(use another --out, or the same options)")
    return return_value


# =========================================================================== CLI

QUICK = {"contexts": [16, 32], "steps": 24, "seeds": 2, "sweep": 0, "max_extend": 1, "anchor_contexts": [16, 32],
         "curve_tiles": 16, "val_plays": 2, "timing_reps": 1, "n_log": 4, "n_lin": 4}


def parser():
    p = Parser(
        prog="context_length.py",
        description="Train microgpt's rmsnorm and sphere (nGPT) modes on the Shakespeare plays at several context "
                    "lengths, each norm at its own learning rate per length, with paired seeds; report the "
                    "speed-up in steps r_T (and its trend with T), the gate (do the long-context runs use their "
                    "context?), the anchors' protocol, the gap and the per-step time ratio. Writes results.json "
                    "(after every run: an interrupted grid continues from it), results.md and two PNGs to --out.",
        epilog="examples:\n  python experiments/context_length.py\n"
               "  python experiments/context_length.py --quick --out /tmp/quick\n"
               "  python experiments/context_length.py --from-json experiments/results/context_length/results.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="output directory (default experiments/results/context_length/, or "
                                 "experiments/results/context_length-quick/ with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test in seconds: contexts 16 and 32, 24 steps, 2 seeds, one lr per sweep (+1 beyond "
                        "the edge), small val set (the defaults below become these; explicit flags still win)")
    p.add_argument("--workers", type=pos_int, default=2, help="worker processes (default 2)")
    p.add_argument("--contexts", type=int_list, default=[64, 128, 256, 512],
                   help="context lengths T, comma-separated (default 64,128,256,512)")
    p.add_argument("--steps", type=pos_int, default=2000, help="optimizer steps per run, S (default 2000)")
    p.add_argument("--seeds", type=pos_int, default=3, help="paired seeds at the chosen lr (default 3: SEED+1..)")
    p.add_argument("--seed", type=int, default=0, help="seed of the lr sweep runs (default 0)")
    p.add_argument("--lr0", type=float, default=0.01, help="lr lattice lr0*2^(k/2) (default 0.01)")
    p.add_argument("--center", type=int, default=0, help="the sweep's centre k on the lattice (default 0)")
    p.add_argument("--sweep", type=nonneg_int, default=1,
                   help="sweep k = center-N .. center+N (default 1: 3 lrs)")
    p.add_argument("--max-extend", type=nonneg_int, default=4,
                   help="lrs added, one at a time, beyond an edge where the best lr is (default 4)")
    p.add_argument("--anchor-contexts", type=int_list, default=[64, 512],
                   help="contexts with the anchors' protocol: runs of S/4 and S/2 steps (default 64,512)")
    p.add_argument("--batch-size", type=pos_int, default=8, help="windows per step (default 8)")
    p.add_argument("--n-embd", type=pos_int, default=32, help="embedding width (default 32)")
    p.add_argument("--n-head", type=pos_int, default=4, help="attention heads (default 4)")
    p.add_argument("--n-layer", type=pos_int, default=2, help="layers (default 2)")
    p.add_argument("--val-plays", type=pos_int, default=4, help="plays held out for validation (default 4)")
    p.add_argument("--split-seed", type=int, default=42, help="seed of the choice of held-out plays (default 42)")
    p.add_argument("--curve-tiles", type=pos_int, default=128,
                   help="held-out tiles of max(T) characters the val curve is measured on (default 128)")
    p.add_argument("--n-log", type=pos_int, default=8,
                   help="log-spaced eval points before the first evenly spaced one (default 8)")
    p.add_argument("--n-lin", type=pos_int, default=16, help="evenly spaced eval points per run (default 16)")
    p.add_argument("--timing-reps", type=pos_int, default=7,
                   help="repetitions of the per-step timing, norms alternating; the fastest counts (default 7)")
    p.add_argument("--retime", action="store_true", help="measure the per-step times again even if results.json "
                                                         "has them")
    p.add_argument("--timing-only", action="store_true",
                   help="train nothing else: measure the per-step times (into results.json, where the grid finds "
                        "them) and stop")
    p.add_argument("--gate-pilot", type=int_list, metavar="STEPS",
                   help="train nothing else: rmsnorm at the longest T for each of these run lengths (comma-"
                        "separated), measuring the gate's context gain 8 times a run; writes gate_pilot.json")
    p.add_argument("--from-json", metavar="PATH",
                   help="train nothing: write results.md and the figures again from a results.json (into --out, "
                        "default the directory of PATH)")
    return p


def check_options(opts):
    if not (math.isfinite(opts.lr0) and opts.lr0 > 0):
        raise InputError(f"--lr0 must be a positive number, got {opts.lr0}")
    if opts.n_embd % opts.n_head:
        raise InputError(f"--n-embd ({opts.n_embd}) must be divisible by --n-head ({opts.n_head})")
    for name in ("contexts", "anchor_contexts"):
        xs = getattr(opts, name)
        if len(set(xs)) != len(xs):
            raise InputError(f"--{name.replace('_', '-')} has repeated values: {xs}")
    if len(opts.contexts) < 2:
        raise InputError("--contexts needs at least two lengths (the trend is what is measured)")
    if min(opts.contexts) < 8:
        raise InputError(f"--contexts must be at least 8 (the gate compares position bands), got {opts.contexts}")
    if any(opts.steps // f < 2 for f in opts.anchor_fractions):
        raise InputError(f"--steps {opts.steps} is too short for runs of S/4 steps")
    opts.contexts = sorted(opts.contexts)
    opts.anchor_contexts = [T for T in opts.anchor_contexts if T in opts.contexts]
    opts.tile = max(opts.contexts)


def rerender(path, out):
    """--from-json: results.md and the figures again from a results.json (no training)."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        opts = SimpleNamespace(**raw["options"])
        units = units_from_records(opts, raw["runs"])
        data, info, timing, records = raw["data"], raw["info"], raw.get("timing"), raw["runs"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"cannot read results from {path!r}: {type(e).__name__}: {e}") from None
    out = out or os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create output directory {out!r}: {e.strerror or e}") from None
    summary = summarize(units, opts, timing)
    pilot = load_pilot(os.path.dirname(os.path.abspath(path)))
    return report(summary, records, data, opts, info, timing, out, pilot), out


def load_pilot(folder):
    """gate_pilot.json of --gate-pilot in `folder`, or None."""
    try:
        with open(os.path.join(folder, "gate_pilot.json"), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read {os.path.join(folder, 'gate_pilot.json')!r}: {e}") from None


def report(summary, records, data, opts, info, timing, out, pilot):
    md = markdown(summary, data, opts, info, pilot)
    write_json(os.path.join(out, "results.json"), {"complete": True, "options": vars(opts), "data": data,
                                                   "info": info, "timing": timing, "summary": summary,
                                                   "runs": records})
    atomic_write(os.path.join(out, "results.md"), lambda f: f.write(md.encode("utf-8")))
    plots(summary, records, data, opts, out)
    return md


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    opts = parse(parser(), argv, QUICK)
    opts.anchor_fractions = [4, 2]
    if opts.from_json:
        try:
            md, out = rerender(opts.from_json, opts.out)
        except InputError as e:
            print(f"context_length.py: error: {e}", file=sys.stderr)
            return 2
        print(md)
        print(f"re-rendered results.md, results.json and 2 PNGs in {out}", file=sys.stderr)
        return 0
    try:
        check_options(opts)
        data = load_data(opts)
        dinfo = data_info(data, opts)
        out = opts.out or os.path.join(HERE, "results", "context_length" + ("-quick" if opts.quick else ""))
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise InputError(f"cannot create output directory {out!r}: {e.strerror or e}") from None
        path = os.path.join(out, "results.json")
        if not opts.gate_pilot:
            cache, timing, invocations = load_previous(path, opts, dinfo)
    except InputError as e:
        print(f"context_length.py: error: {e}", file=sys.stderr)
        return 2
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    if opts.gate_pilot:
        t0 = time.perf_counter()
        results = run_gate_pilot(data, opts, log)
        command = " ".join(["python experiments/context_length.py"] + [shlex.quote(a) for a in argv])
        write_json(os.path.join(out, "gate_pilot.json"), {"command": command, "wall_s": time.perf_counter() - t0,
                                                          "machine": machine_info(), "runs": results})
        return 0
    started, load_start, t0 = (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                               " ".join(f"{x:.2f}" for x in os.getloadavg()), time.perf_counter())
    command = " ".join(["python experiments/context_length.py"] + [shlex.quote(a) for a in argv])
    log(f"shakespeare: {len(data['train_plays'])} train plays ({dinfo['n_train_chars']:,} chars), held out: "
        f"{', '.join(data['val_plays'])}; {len(cache)} runs already in {path}; {opts.workers} workers")
    units = plan(opts)

    def info_now(n_trained, records):
        inv = {"command": command, "started": started, "wall_s": time.perf_counter() - t0, "n_trained": n_trained,
               "load_start": load_start, "load_end": " ".join(f"{x:.2f}" for x in os.getloadavg())}
        return {"machine": machine_info(), "invocations": invocations + [inv], "n_runs": len(records),
                "wall_s": sum(v["wall_s"] for v in invocations) + inv["wall_s"],
                "cpu_s": sum(r["cpu_seconds"] for r in records), "command": command}

    def save(records):
        write_json(path, {"complete": False, "options": vars(opts), "data": dinfo,
                          "info": info_now(None, records), "timing": timing, "runs": records})

    if opts.timing_only:
        timing = run_timing(data, opts, log)
        save(list(cache.values()))
        log(f"wrote the per-step timing into {path}")
        return 0
    records, n_trained = run_grid(units, data, opts, cache, save, log)
    if timing is None or opts.retime or any("ms_min" not in timing.get(str(T), {}) for T in opts.contexts):
        timing = run_timing(data, opts, log)
    info = info_now(n_trained, records)
    summary = summarize(units, opts, timing)
    order = {T: i for i, T in enumerate(opts.contexts)}
    records.sort(key=lambda r: (order[r["T"]], r["norm"], ("sweep", "seeds", "anchor").index(r["phase"]), r["steps"],
                                r["lr_k"], r["seed"]))
    md = report(summary, records, dinfo, opts, info, timing, out, load_pilot(out))
    print(md)
    log(f"done: {n_trained} runs trained now, {len(records)} in all; wrote results.md, results.json and 2 PNGs "
        f"to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
