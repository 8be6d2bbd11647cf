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

import functools
import math
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import asdict, dataclass, replace
from types import SimpleNamespace

import common
import numpy as np
from common import InputError, eval_points, fmt, fmt_time, log, steps_to_target

import numpy_engine
from harness import memory
from microgpt import init_params
from model_config import GPTConfig, TrainState, flat_buffer, scale_factors
from sphere import l2_normalize_np, l2_normalize_np_backward

LETTERS = "abcdefghijklmnopqrstuvwxyz"
VOCAB = list(LETTERS)  # BOS is id 26
LN26 = math.log(26)
TARGETS = (3.0, 2.0, 1.0)  # copy-2 loss (nats): the steps to reach each are recorded
EVAL_POSITIONS = 4096      # positions per forward call when evaluating
# The diagnosis arms: variant -> (norm, what it changes). "default" runs for both norms.
ALPHA_ARM = 0.25  # alpha25: alpha_init (attention and MLP steps), 5 times the default 0.05
# The alpha arms: (alpha_init, stored start x). alpha = |stored| alpha_init / base, the
# stored value starting at base; Adam moves it by about lr a step, so alpha_init sets
# alpha's start and its step together, and the stored start sets the start alone.
ALPHAS = {"alpha25": (ALPHA_ARM, 1.0), "alpha-start": (GPTConfig.alpha_init, 5.0),
          "alpha-step": (ALPHA_ARM, 0.2), "alpha-L": ("1/n_layer", 1.0)}
VARIANTS = {
    "sqk64": ("sphere", "s_qk initialized at (64/head_dim)^(1/4): the initial attention logit "
              "range s_qk^2 sqrt(head_dim) is sqrt(64) = 8, the paper's head_dim 64, not sqrt(8)"),
    "qknorm": ("rmsnorm", "rmsnorm with QK-norm: each head's q and k as unit vectors, logits = "
               "cos * sqrt(head_dim) (the sphere's attention at init, its s_qk fixed at 1)"),
    "alpha25": ("sphere", f"the residual steps' alpha initialized at {ALPHA_ARM} instead of "
                f"{GPTConfig.alpha_init}: each block moves h a quarter of the way to its output"),
    "alpha-start": ("sphere", "alpha starts 5 times larger (0.25), its Adam step unchanged"),
    "alpha-step": ("sphere", "alpha's Adam step 5 times larger, its start unchanged (0.05)"),
    "alpha-L": ("sphere", "alpha_init = 1/n_layer, the paper's rule (start and step both)"),
}
# ---- the pre-registration (fixed before the grid ran; experiments/README.md too) ----
GATE_COPY2 = 1.0      # G1: every rmsnorm seed at T reaches copy-2 <= 1.0 within the run
GATE_LEAK = 0.02      # G3: copy-1 >= ln 26 - 0.02 (no leak of the string into copy 1)
R_TARGETS = (2.0, 1.0)  # r = rmsnorm steps / sphere steps to these copy-2 losses, per paired seed
# a run's inputs besides its job (a results.json made with others: not continued)
SAME = ("batch_size", "n_embd", "n_head", "n_layer", "lr0", "val_docs", "split_seed",
        "n_log", "n_lin", "seed", "tune_seeds")


# ================================================================================ data

def random_strings(T, n, rng):
    """n (letters, L): L uniform in [T/4, T/2), letters ids in 0..25, (n, T//2)."""
    lengths = rng.integers(T // 4, T // 2, size=n)
    return rng.integers(0, 26, size=(n, T // 2)), lengths


def train_docs(T, n, seed):
    """n training documents (strings): each a random string written twice; the draws
    depend on (seed, T) only, so both norms of a seed pair see the same documents in the
    same order."""
    letters, lengths = random_strings(T, n, np.random.default_rng([seed, T, 1]))
    chars = np.array(VOCAB)[letters]
    return ["".join(row[:L]) * 2 for row, L in zip(chars, lengths.tolist())]


def held_out(T, n, seed):
    """n fixed held-out documents and their ablated twins, as (inputs, targets, L)
    arrays: inputs [BOS] s s (padded with BOS), targets s s [BOS] (padded); in the twin,
    the first copy's letters are replaced, each by another letter (never the same one),
    and the second copy is kept."""
    rng = np.random.default_rng([seed, T, 2])
    letters, lengths = random_strings(T, n, rng)
    other = (letters + rng.integers(1, 26, size=letters.shape)) % 26
    bos, docs = len(VOCAB), {}
    for name, first in (("plain", letters), ("ablated", other)):
        tokens = np.full((n, T + 1), bos, dtype=np.int64)
        for i, L in enumerate(lengths.tolist()):
            tokens[i, 1:L + 1], tokens[i, L + 1:2 * L + 1] = first[i, :L], letters[i, :L]
        docs[name] = (tokens[:, :-1], tokens[:, 1:])
    return {"docs": docs, "L": lengths}


def masks(L, T):
    """(n, T) target masks: copy 1 (j < L), copy 2 (L <= j < 2L), all (<= 2L)."""
    j = np.arange(T)[None, :]
    L = np.asarray(L)[:, None]
    return {"copy1": j < L, "copy2": (j >= L) & (j < 2 * L), "all": j <= 2 * L}


# ================================================================ the model's variants

def qknorm_forward(q, k, v, scale, logit_scale):
    """QK-norm: each head's q, k unit vectors, logits = cos * logit_scale."""
    return ATTENTION[0](l2_normalize_np(q), l2_normalize_np(k), v, logit_scale)


def qknorm_backward(dout, q, k, v, weights, scale, logit_scale):
    """(dq, dk, dv) of qknorm_forward: the plain attention's, then back through Norm."""
    qn, kn = l2_normalize_np(q), l2_normalize_np(k)
    dqn, dkn, dv = ATTENTION[1](dout, qn, kn, v, weights, logit_scale)
    return l2_normalize_np_backward(dqn, q), l2_normalize_np_backward(dkn, k), dv


ATTENTION = (numpy_engine.attention_forward, numpy_engine.attention_backward)


class attention_of:
    """`with attention_of(variant, head_dim):` the NumPy engine's attention is the
    variant's (QK-norm for qknorm; the engine's own otherwise), restored at the end. The
    engine's rmsnorm forward and backward look their attention up at each call, so
    nothing else changes."""

    def __init__(self, variant, head_dim):
        self.pair = ATTENTION if variant != "qknorm" else (
            functools.partial(qknorm_forward, logit_scale=head_dim ** 0.5),
            functools.partial(qknorm_backward, logit_scale=head_dim ** 0.5))

    def __enter__(self):
        numpy_engine.attention_forward, numpy_engine.attention_backward = self.pair

    def __exit__(self, *exc):
        numpy_engine.attention_forward, numpy_engine.attention_backward = ATTENTION


def initial_params(job, cfg):
    """train()'s init from the seed; sqk64: s_qk raised so that s_qk^2 sqrt(hd) = 8; the
    alpha arms: the stored alphas' start (ALPHAS)."""
    params = init_params(cfg, job.seed, np.float32)
    start = ALPHAS.get(job.variant, (None, 1.0))[1]
    for i in range(cfg.n_layer):
        if job.variant == "sqk64":
            params[f"layer{i}.attn_sqk"] *= np.float32((64 / cfg.head_dim) ** 0.25)
        for name in ("attn_alpha", "mlp_alpha") if start != 1.0 else ():
            params[f"layer{i}.{name}"] *= np.float32(start)
    return params


# =============================================================== one run (in a worker)

@dataclass(frozen=True)
class Job:
    """One run to train: its unit (norm, variant, T), steps, lr (lr0 10^(lr_k/2)), seed,
    phase (sweep or seeds; anchor: the archived anchors' protocol), model sizes."""
    norm: str
    variant: str
    T: int
    steps: int
    lr: float
    lr_k: int
    seed: int
    phase: str
    n_log: int
    n_lin: int
    batch_size: int
    n_embd: int
    n_head: int
    n_layer: int


@dataclass(frozen=True)
class Run(Job):
    """A trained run, as results.json's "runs" hold it: its job and what it measured."""
    error: str | None
    curves: dict  # "step" and the losses copy1, copy2, copy2_ablated, val at each step
    diag: dict    # at each step: entropy, copy_mass (layer, head); s_qk, alpha (sphere)
    ms_per_step: float
    steps_to: dict  # str(target) -> the step copy-2 first reached it (None: never)
    copy1: float | None  # the final losses (None: the run diverged)
    copy2: float | None
    copy2_ablated: float | None
    val: float | None
    final_val: float | None
    seconds: float
    cpu_seconds: float
    machine: dict | None = None  # (None: a run from before runs recorded their machine)

    def as_json(self):
        return {k: v for k, v in asdict(self).items() if not (k == "machine" and v is None)}


def measure(params, cfg, held):
    """The mean losses on the held-out documents (copy1, copy2, all) and their ablated
    twins' copy 2; and, per layer and head at the copy-2 positions, the attention's
    entropy (nats) and its weight on the key that holds the letter to copy (an induction
    head puts ~1 there)."""
    T, L = cfg.block_size, held["L"]
    m, out = masks(L, T), {}
    chunk = max(1, EVAL_POSITIONS // T)
    for name, (inputs, targets) in held["docs"].items():
        nll, ent, mass = np.zeros(inputs.shape), [], []
        for i in range(0, len(inputs), chunk):
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                logits, acts = numpy_engine.gpt_forward(params, inputs[i:i + chunk], cfg)
                logits = logits.astype(np.float64)
                top = logits.max(axis=-1, keepdims=True)
                lse = np.log(np.exp(logits - top).sum(axis=-1)) + top[..., 0]
                picked = np.take_along_axis(logits, targets[i:i + chunk, :, None], -1)[..., 0]
            nll[i:i + chunk] = lse - picked
            if name == "plain":
                e, w = attention_at_copy(acts, L[i:i + chunk], m["copy2"][i:i + chunk])
                ent.append(e)
                mass.append(w)
        if name == "plain":
            out.update(copy1=nll[m["copy1"]].mean(), copy2=nll[m["copy2"]].mean(),
                       val=nll[m["all"]].mean(), entropy=np.concatenate(ent, 1).mean(1),
                       copy_mass=np.concatenate(mass, 1).mean(1))
        else:
            out["copy2_ablated"] = nll[m["copy2"]].mean()
    return out


def attention_at_copy(acts, L, copy2):
    """(entropy, weight on the source) of every layer and head at each copy-2 query:
    arrays (layers, queries, heads). The query at j (L <= j < 2L) predicts letter j - L,
    held by key j - L + 1 (the position after the matching letter of copy 1: what an
    induction head reads)."""
    b, j = np.nonzero(copy2)
    source = j - L[b] + 1
    ent, mass = [], []
    for layer in acts.layers:
        w = layer.attn_weights[b, :, j, :].astype(np.float64)  # (queries, heads, keys)
        ent.append(-(w * np.log(np.where(w > 0, w, 1.0))).sum(-1))
        mass.append(w[np.arange(len(b)), :, source])
    return np.array(ent), np.array(mass)


def model_config(job):
    alpha = ALPHAS.get(job.variant, (GPTConfig.alpha_init,))[0]
    alpha = 1 / job.n_layer if alpha == "1/n_layer" else alpha
    return GPTConfig(vocab_size=len(VOCAB) + 1, n_embd=job.n_embd, n_head=job.n_head,
                     n_layer=job.n_layer, block_size=job.T, norm=job.norm, alpha_init=alpha)


def effective_sqk(params, cfg):
    """Sphere: each layer's effective s_qk, mean and max over its C entries."""
    f = scale_factors(cfg)["attn_sqk"]
    return [[float(params[f"layer{i}.attn_sqk"].mean() * f),
             float(params[f"layer{i}.attn_sqk"].max() * f)] for i in range(cfg.n_layer)]


def effective_alpha(params, cfg):
    """Sphere: each layer's effective alpha_A, alpha_M (|alpha|), mean over C."""
    f = scale_factors(cfg)
    return [[float(np.abs(params[f"layer{i}.{name}"]).mean() * f[name])
             for name in ("attn_alpha", "mlp_alpha")] for i in range(cfg.n_layer)]


def run_job(job):
    """Train one model (a pure function of `job` and the held-out data): its Run."""
    T, cfg = job.T, model_config(job)
    held = common.WORKER_DATA[T]
    curves = {k: [] for k in ("step", "copy1", "copy2", "copy2_ablated", "val")}
    diag = {"entropy": [], "copy_mass": [], "s_qk": [], "alpha": []}

    def record(step, params):
        x = measure(params, cfg, held)
        curves["step"].append(step)
        for k in ("copy1", "copy2", "copy2_ablated", "val"):
            curves[k].append(round(float(x[k]), 5))
        diag["entropy"].append(np.round(x["entropy"], 4).tolist())
        diag["copy_mass"].append(np.round(x["copy_mass"], 4).tolist())
        diag["s_qk"].append(effective_sqk(params, cfg) if cfg.norm == "sphere" else None)
        diag["alpha"].append(effective_alpha(params, cfg) if cfg.norm == "sphere" else None)

    wall0, cpu0 = time.perf_counter(), time.process_time()
    params = initial_params(job, cfg)
    record(0, params)
    flat = flat_buffer(params)
    start = TrainState(cfg, list(VOCAB), params, np.zeros_like(flat), np.zeros_like(flat),
                       steps=job.steps, lr=job.lr, batch_size=job.batch_size, seed=job.seed,
                       engine="numpy", dtype="float32", eval_every=job.steps)
    docs = train_docs(T, job.steps * job.batch_size, job.seed)
    observer = common.MeasureAt(set(eval_points(job.steps, job.n_log, job.n_lin)), record)
    with attention_of(job.variant, cfg.head_dim):
        state = common.train_observed(
            observer, docs, docs[:1], VOCAB, cfg, steps=job.steps, lr=job.lr,
            batch_size=job.batch_size, seed=job.seed, engine="numpy", dtype="float32",
            eval_every=job.steps, resume=start)
    finished = not state.error and curves["step"][-1] == job.steps
    copy2_curve = list(zip(curves["step"], curves["copy2"]))
    final = {k: curves[k][-1] if finished and math.isfinite(curves[k][-1]) else None
             for k in ("copy1", "copy2", "copy2_ablated", "val")}
    return Run(**vars(job), error=state.error, curves=curves, diag=diag,
               ms_per_step=state.ms_per_step,
               steps_to={str(t): steps_to_target(copy2_curve, t) for t in TARGETS}, **final,
               final_val=final["val"], seconds=time.perf_counter() - wall0,
               cpu_seconds=time.process_time() - cpu0, machine=common.machine_info())


# ============================================================================ the grid

def lr_of(opts, k):
    """The lattice of lrs: lr0 * 10^(k/2) (k = -1, 0, 1: 0.00316, 0.01, 0.0316)."""
    return opts.lr0 * 10.0 ** (k / 2)


def run_key(r):
    return (r.norm, r.variant, r.T, r.steps, r.lr_k, r.seed)


def goodness(rec):
    """How the sweep ranks a run (lower is better): the steps to copy-2 <= 1.0 nat, then
    (for runs that never get there) the final copy-2 loss; a diverged run is last."""
    reached = rec.steps_to[str(GATE_COPY2)]
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


def _status(summary, opts, records, complete, full):
    """Which runs exist, against the planned grid `full` (the study's defaults)."""
    units = len(units_of(full)) // len(full.contexts)
    runs_per_T = units * ((2 * full.sweep + 1) * full.tune_seeds + full.seeds)
    done = {row.T: sum(len(u["sweep"]) + len(u["seeds_done"]) for u in row.units.values())
            for row in summary.rows}
    planned = "; ".join(f"T = {T}: {done.get(T, 0)} of about {runs_per_T} runs"
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
    L += ["", "Seed 0, the tuning runs (one seed, the one each lr was chosen on): each unit at its "
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
    full = parser().parse_args([])  # the planned grid: the defaults
    return "\n".join(_header(opts, info, records) + _status(summary, opts, records, complete, full)
                      + _gate_and_r(summary) + _arms(records, summary))


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


# ======================================================================= files and CLI

@dataclass(frozen=True)
class Study:
    """What a study of the copy task has of its own: its name, parser, --quick sizes and
    report(records, opts, info, complete) -> (summary, markdown)."""
    name: str
    parser: Callable
    quick: dict
    report: Callable


def write_all(study, records, opts, info, out, complete):
    summary, md = study.report(records, opts, info, complete)
    common.write_json(os.path.join(out, "results.json"), {
        "complete": complete, "options": vars(opts), "info": info, "summary": asdict(summary),
        "runs": [r.as_json() for r in records]})
    common.write_text(os.path.join(out, "results.md"), md)
    plots(records, opts, out)
    return md


def is_curves(c):
    """A run's curves: steps (at least one), and copy1, copy2, copy2_ablated, val losses
    at them."""
    return all(len(c[k]) == len(c["step"]) and all(map(common.is_loss, c[k]))
               for k in ("copy1", "copy2", "copy2_ablated", "val")) and bool(c["step"]) \
        and all(map(common.is_number, c["step"]))


RECORD = {"norm": lambda x: x in ("rmsnorm", "sphere"),
          "variant": lambda x: x == "default" or x in VARIANTS,
          "phase": lambda x: x in ("sweep", "seeds", "anchor"), "lr": common.is_number,
          "curves": is_curves, "diag": lambda d: isinstance(d, dict) and all(
              isinstance(d.get(k), list) and d[k] for k in ("entropy", "copy_mass", "s_qk")),
          "steps_to": lambda d: isinstance(d, dict) and all(
              x is None or common.is_number(x) for x in (d.get(str(t), 0) for t in TARGETS)),
          **{k: lambda x: x is None or common.is_loss(x)
             for k in ("copy1", "copy2", "copy2_ablated", "val")},
          **{k: common.is_number for k in ("seconds", "cpu_seconds", "ms_per_step")},
          **{k: lambda x: common.is_int(x) and x > 0 for k in ("T", "steps")},
          **{k: common.is_int for k in ("lr_k", "seed")}}


QUICK = {"contexts": [16, 32], "steps": 24, "seeds": 2, "sweep": 0, "max_extend": 0,
         "val_docs": 16, "n_log": 3, "n_lin": 4, "variants": ["sqk64", "qknorm"]}


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


def parser(name="repeat", doc=__doc__, **defaults):
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
    variants = defaults.get("variants", [v for v in VARIANTS if v != "alpha-L"])
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


def report(records, opts, info, complete):
    summary = summarize(records, opts)
    return summary, markdown(summary, opts, info, records, complete)


REPEAT = Study("repeat", parser, QUICK, report)


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
    now = {"command": common.command_line(f"{study.name}.py", argv), "started": common.now_utc(),
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


@common.cli
def main(argv):
    return run_study(REPEAT, argv)


if __name__ == "__main__":
    from harness import leave
    leave(main())
