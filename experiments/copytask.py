"""The copy task: a random string written twice, and one run of it.

Each document is a random string of L letters (L uniform in [T/4, T/2)) written twice.
The first copy cannot be predicted (ln 26 nats a letter at best); the second can only be
read from the first, so its loss measures the use of context and nothing else. run_job
trains the chapter's model on it (learned wpe, ReLU, lr decaying linearly) with a norm
and a variant (the diagnosis arms), and records the copy-2 loss, the steps to reach
3.0 / 2.0 / 1.0 nats, the same loss with the first copy replaced by other letters, and
the attention at the copy positions: a Run, as results.json holds it.
"""
import functools
import math
import time
from dataclasses import asdict, dataclass

import common
import numpy as np
from common import eval_points, steps_to_target

import numpy_engine
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


# ============================================================== a run's record

def is_curves(c):
    """A run's curves: steps (at least one), and copy1, copy2, copy2_ablated, val losses
    at them."""
    return all(len(c[k]) == len(c["step"]) and all(map(common.is_loss, c[k]))
               for k in ("copy1", "copy2", "copy2_ablated", "val")) and bool(c["step"]) \
        and all(map(common.is_number, c["step"]))


# a Run's fields as results.json holds them -> the test each passes (grid.read_results)
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


