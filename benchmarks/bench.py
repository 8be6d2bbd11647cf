"""bench.py -- one table that shows where the performance goals stand.

    python benchmarks/bench.py                 # full run, a few minutes
    python benchmarks/bench.py --quick         # a rough table in well under a minute
    python benchmarks/bench.py --out perf.md   # also write the table to a file

A step is what microgpt.train() does per step: loss and gradients of a batch, the flat-buffer Adam
update (and the retraction in sphere mode). Scalar rows run the chapter code (microgpt.gpt /
gpt_sphere) with one of two Value classes: naive (benchmarks/naive_value.py, the reference design:
constants as nodes, sub/div as compositions, recursive topological sort) and value (value.py), each
with Python's cyclic garbage collector on and paused ("value, GC paused" is what training runs).
The scalar variants are interleaved on the same batches; each speed-up is the median of per-round
ratios (same batch, back to back); the NumPy engine runs the same batches.
"""

import argparse
import os
import platform
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="fewer repeats and a smaller large batch (rough numbers)")
    p.add_argument("--out", help="also write the tables (markdown) to this file")
    p.add_argument("--corpus", default="names", help="docs to train on: 'names' (microgpt's "
                   "default corpus) or a text file, one doc per line")
    p.add_argument("--batch", type=int, default=16, help="the larger batch size (default 16)")
    p.add_argument("--blas-threads", type=int, default=1, help="BLAS threads for the NumPy engine "
                   "(default 1: these matrices are far too small to split)")
    p.add_argument("--skip-scaling", action="store_true", help="only the main table")
    p.add_argument("--only-commits", action="store_true",
                   help="only the table of this tree against older commits (vs_commits.py)")
    p.add_argument("--skip-commits", action="store_true",
                   help="leave out the table against older commits")
    p.add_argument("--only-scaling", action="store_true", help="only the scaling table")
    p.add_argument("--threads-probe", action="store_true", help=argparse.SUPPRESS)  # threads table
    return p.parse_args(argv)


ARGS = _parse_args(sys.argv[1:]) if __name__ == "__main__" else None
if ARGS is not None:
    # must happen before numpy is imported: BLAS reads these once, when it loads
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.blas_threads)

import floor  # noqa: E402
import numpy as np  # noqa: E402
import vs_commits  # noqa: E402
from naive_value import NaiveValue  # noqa: E402

import microgpt  # noqa: E402
import numpy_engine  # noqa: E402
from microgpt import GPTConfig, init_params, loss_and_grads  # noqa: E402

try:  # PyTorch is never a requirement: its rows appear only where it happens to be installed
    import torch  # noqa: E402
    import torch_microgpt  # noqa: E402
except ImportError:
    torch = None
from utils import softmax  # noqa: E402
from value import Value, no_cycle_gc, topological_order  # noqa: E402

# -------------------------------------------------------------------------------------------- steps


def scalar_loss(cls, params, docs_tokens, cfg):
    """microgpt's scalar forward (the chapter code) on `cls` Values: (loss node, state_dict)."""
    state_dict = {k: [cls(x) for x in a.tolist()] if a.ndim == 1
                  else [[cls(x) for x in row] for row in a.tolist()] for k, a in params.items()}
    model = microgpt.gpt_sphere if cfg.norm == "sphere" else microgpt.gpt
    losses = []
    for tokens in docs_tokens:
        n = min(cfg.block_size, len(tokens) - 1)
        keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
        for pos_id in range(n):
            logits = model(tokens[pos_id], pos_id, keys, values, state_dict, cfg)
            losses.append(-softmax(logits)[tokens[pos_id + 1]].log())
    return (1 / len(losses)) * sum(losses), state_dict


def scalar_loss_and_grads(cls, params, docs_tokens, cfg):
    loss, state_dict = scalar_loss(cls, params, docs_tokens, cfg)
    loss.backward()
    grads = {k: np.array([v.grad for v in rows] if params[k].ndim == 1
                         else [[v.grad for v in r] for r in rows])
             for k, rows in state_dict.items()}
    return loss.data, grads


class Trainer:
    """One engine variant with its own weights and Adam state (all variants do the same math)."""

    def __init__(self, name, cfg, loss_fn, gc_paused=False, dtype="float64"):
        self.name, self.cfg, self.loss_fn, self.gc_paused = name, cfg, loss_fn, gc_paused
        self.params = init_params(cfg, seed=42, dtype=dtype)
        self.flat = microgpt.flat_buffer(self.params)
        self.m, self.v = np.zeros_like(self.flat), np.zeros_like(self.flat)
        self.step_no, self.times, self.losses = 0, [], []

    def step(self, batch, record=True):
        t0 = time.perf_counter()
        loss = self.update(batch)
        dt = time.perf_counter() - t0
        self.step_no += 1
        if record:
            self.times.append(dt)
            self.losses.append(loss)
        return dt

    def update(self, batch):
        """Loss and gradients of the batch, then Adam (and the retraction): the timed loss."""
        if self.gc_paused:
            with no_cycle_gc():
                loss, grads = self.loss_fn(self.params, batch, self.cfg)
        else:
            loss, grads = self.loss_fn(self.params, batch, self.cfg)
        g = np.concatenate([grads[k].ravel() for k in self.params])
        microgpt.adam_step(self.flat, g, self.m, self.v, self.step_no, 10_000)
        if self.cfg.norm == "sphere":
            microgpt.retract(self.params, self.cfg)
        return loss


class NumpyStep(Trainer):
    """One NumPy-engine training step as microgpt.train() runs it: loss and gradients into a reused
    buffer, adam_step, the retraction in sphere mode."""

    def __init__(self, cfg, dtype="float64"):
        super().__init__("numpy" + ("" if dtype == "float64" else " f32"), cfg, None, dtype=dtype)
        self.g, self.grads = microgpt.alloc_params(cfg, dtype)

    def update(self, batch):
        cfg = self.cfg
        loss, _ = loss_and_grads(self.params, batch, cfg, engine="numpy", out=self.grads)
        microgpt.adam_step(self.flat, self.g, self.m, self.v, self.step_no, 10_000)
        if cfg.norm == "sphere":
            microgpt.retract(self.params, cfg)
        return loss


def naive_loss(params, batch, cfg):
    return scalar_loss_and_grads(NaiveValue, params, batch, cfg)


def value_loss(params, batch, cfg):
    return scalar_loss_and_grads(Value, params, batch, cfg)


def engine_value_loss(params, batch, cfg):
    # microgpt's own value-engine path (it pauses the cycle collector itself, via value.no_cycle_gc)
    return loss_and_grads(params, batch, cfg, engine="value")


# -------------------------------------------------------------------------------------------- stats


def summary(times):
    """(median, q25, q75) in ms."""
    ms = sorted(t * 1e3 for t in times)
    if len(ms) == 1:
        return ms[0], ms[0], ms[0]
    q = statistics.quantiles(ms, n=4, method="inclusive")
    return statistics.median(ms), q[0], q[2]


def fmt_ms(x):
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def nodes_per_step(cls, params, batches, cfg):
    """Mean number of graph nodes (leaves included) per step over the given batches."""
    counts = []
    for batch in batches:
        loss, _ = scalar_loss(cls, params, batch, cfg)
        # works for both classes: it only reads ._children
        counts.append(len(topological_order(loss)))
    return sum(counts) / len(counts)


def value_step_memory(cfg, batch, steps=12):
    """(peak MB of one value-engine step, growth in kB of live memory from step 2 to step `steps`).
    """
    params = init_params(cfg, seed=42)
    tracemalloc.start()
    try:
        with no_cycle_gc():
            loss_and_grads(params, batch, cfg, engine="value")
        _, peak = tracemalloc.get_traced_memory()
        live = []
        for _ in range(steps):
            with no_cycle_gc():
                loss_and_grads(params, batch, cfg, engine="value")
            live.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    return peak / 2**20, (live[-1] - live[1]) / 1024


# ----------------------------------------------------------------------------------------- sections


def machine_info(blas_threads):
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas_name = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # older numpy: no dict mode
        blas_name = "unknown"
    cpus = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cpus
    return [f"- machine: {platform.machine()}, {platform.processor() or platform.system()}, "
            f"{cpus} CPUs ({usable} usable); Python {platform.python_version()}",
            f"- numpy {np.__version__}, BLAS {blas_name}, BLAS threads {blas_threads} "
            f"(OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')})",
            f"- OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')} "
            "(a forced core type can make OpenBLAS pick slower kernels)"]


def scalar_and_numpy_rows(cfg, batches, n_warm, quick, log):
    """The rows of one norm and batch size: the four scalar variants interleaved on the same
    batches, then the NumPy engine. Returns (rows, graph nodes per step of each Value class)."""
    norm, batch_size = cfg.norm, len(batches[0])
    log(f"  {norm} batch {batch_size}: scalar engines, {len(batches) - n_warm} rounds ...")
    variants = [Trainer("naive", cfg, naive_loss), Trainer("value", cfg, value_loss),
                Trainer("value", cfg, engine_value_loss, gc_paused=True),
                Trainer("naive", cfg, naive_loss, gc_paused=True)]
    for r, batch in enumerate(batches):
        for t in variants:  # interleaved: every variant sees the same batch back to back
            t.step(batch, record=r >= n_warm)
    ref = variants[0].losses  # the same math: identical losses for both Value classes
    for t in variants[1:]:
        if max(abs(a - b) for a, b in zip(ref, t.losses)) > 1e-9 * max(1.0, abs(ref[0])):
            raise AssertionError(f"{t.name} disagrees with naive: {t.losses} vs {ref}")
    n_np = (400 if batch_size == 1 else 200) if not quick else 60
    log(f"  {norm} batch {batch_size}: numpy engine, {n_np} steps ...")
    np_t = NumpyStep(cfg)
    for r in range(n_np + 20):
        np_t.step(batches[r % len(batches)], record=r >= 20)
    timed = batches[n_warm:][:3]
    counts = {"naive": nodes_per_step(NaiveValue, variants[0].params, timed, cfg),
              "value": nodes_per_step(Value, variants[1].params, timed, cfg)}
    naive, rows = variants[0].times, []
    for t in variants + [np_t]:
        med, q1, q3 = summary(t.times)
        numpy_row = t.name.startswith("numpy")
        gc_txt = "-" if numpy_row else ("paused" if t.gc_paused else "on")
        nodes = f"{counts[t.name]:,.0f}" if t.name in counts else "-"
        # scalar variants ran the same batch back to back: the median of the per-round ratios is
        # robust to how long each name is; the NumPy engine ran its own steps: ratio of medians
        speedup = (statistics.median(a / b for a, b in zip(naive, t.times)) if not numpy_row
                   else statistics.median(naive) / statistics.median(t.times))
        rows.append(f"| {'numpy' if numpy_row else t.name} | {norm} | {batch_size} | {gc_txt} | "
                    f"{fmt_ms(med)} | {fmt_ms(q1)}-{fmt_ms(q3)} | {fmt_ms(med / batch_size)} | "
                    f"{speedup:,.1f}x | {nodes} |")
    return rows, counts


def main_table(docs_tokens, vocab_size, args, log):
    quick = args.quick
    big = args.batch if not quick else min(args.batch, 4)
    rows = ["| engine | norm | batch | cyclic GC | ms/step (median) | IQR (q25-q75) | ms/doc "
            "| speed-up vs naive (GC on), median of per-round ratios | graph nodes/step |",
            "|" + "---|" * 9]
    notes = []
    for norm in ("rmsnorm", "sphere"):
        cfg = GPTConfig(vocab_size=vocab_size, norm=norm)
        for batch_size in (1, big):
            n_scalar = (40, 3)[batch_size > 1] if not quick else (5, 1)[batch_size > 1]
            n_warm = 2 if batch_size == 1 else 0  # the batch-1 rounds have warmed everything up
            batches = [docs_tokens[i * batch_size:(i + 1) * batch_size]
                       for i in range(n_warm + n_scalar)]
            more, counts = scalar_and_numpy_rows(cfg, batches, n_warm, quick, log)
            rows += more
            if norm == "rmsnorm" and batch_size == 1:
                notes.append(f"nodes per step (rmsnorm, batch 1): naive {counts['naive']:,.0f}, "
                             f"value {counts['value']:,.0f} "
                             f"({1 - counts['value'] / counts['naive']:.1%} fewer)")
    log("  memory of a value-engine step (tracemalloc) ...")
    cfg = GPTConfig(vocab_size=vocab_size)
    for batch_size in (1, big):
        peak, growth = value_step_memory(cfg, docs_tokens[:batch_size], steps=6 if quick else 12)
        notes.append(f"value engine (rmsnorm, batch {batch_size}): peak traced memory of one step "
                     f"{peak:.1f} MB; live memory growth from step 2 to step {6 if quick else 12}: "
                     f"{growth:+.1f} kB (graphs are freed)")
    return rows, notes


def scaling_docs(docs_tokens, block_size):
    """Docs of block_size + 1 tokens (names glued together): every step predicts block_size."""
    stream = [t for doc in docs_tokens for t in doc[1:-1]]
    bos = docs_tokens[0][0]
    n = block_size
    return [[bos] + stream[i * n : (i + 1) * n] for i in range(len(stream) // n)]


def flops_per_step(cfg, T):
    """Approximate multiply-adds x 2 of one step of one doc: forward + backward (= 3 x forward) of
    the matmuls (12 C^2 per layer per token + V C for lm_head) and of attention (q.k, weights.v)."""
    C = cfg.n_embd
    matmul = 2 * T * (cfg.n_layer * 12 * C * C + cfg.vocab_size * C)
    attention = cfg.n_layer * 2 * C * T * (T + 1)  # 2 C flops per (query, key) pair, twice
    return 3 * (matmul + attention)


def scaling_table(docs_tokens, vocab_size, args, log):
    quick = args.quick
    configs = [dict(n_embd=16), dict(n_embd=32), dict(n_embd=64), dict(n_layer=2), dict(n_layer=4),
               dict(block_size=32)]
    rows = ["| n_embd | n_layer | block_size (= T) | params | MFLOP/step | value nodes/step "
            "| value ms/step | value us/node | numpy ms/step (IQR) | numpy GFLOP/s "
            "| numpy float32 ms/step | float64/float32 |", "|" + "---|" * 12]
    fit = []
    for over in configs:
        cfg = GPTConfig(vocab_size=vocab_size, **over)
        docs = scaling_docs(docs_tokens, cfg.block_size)
        T = cfg.block_size
        params = init_params(cfg, seed=42)
        n_params = sum(a.size for a in params.values())
        nodes = nodes_per_step(Value, params, [docs[:1]], cfg)
        reps = 1 if quick else (3 if nodes > 400_000 else 5)
        log(f"  scaling {over}: value engine x{reps}, numpy ...")
        vt = Trainer("value", cfg, engine_value_loss, gc_paused=True)
        vt.step(docs[0:1], record=False)
        for r in range(reps):
            vt.step(docs[1 + r : 2 + r])
        nt, nt32 = NumpyStep(cfg), NumpyStep(cfg, dtype="float32")
        n_np = 60 if quick else 300
        for r in range(n_np + 20):  # interleaved, the same doc back to back
            nt.step(docs[r % 50 : r % 50 + 1], record=r >= 20)
            nt32.step(docs[r % 50 : r % 50 + 1], record=r >= 20)
        v_med = summary(vt.times)[0]
        n_med, q1, q3 = summary(nt.times)
        n32 = summary(nt32.times)[0]
        mflop = flops_per_step(cfg, T) / 1e6
        fit.append((mflop, n_med, nodes, v_med))
        ratio32 = statistics.median(a / b for a, b in zip(nt.times, nt32.times))
        rows.append(f"| {cfg.n_embd} | {cfg.n_layer} | {T} | {n_params:,} | {mflop:.2f} | "
                    f"{nodes:,.0f} | {fmt_ms(v_med)} | {v_med * 1e3 / nodes:.2f} | {fmt_ms(n_med)} "
                    f"({fmt_ms(q1)}-{fmt_ms(q3)}) | {mflop / n_med:.2f} | {fmt_ms(n32)} | "
                    f"{ratio32:.2f}x |")
    return rows, scaling_notes(fit)


def scaling_notes(fit):
    """fit = [(MFLOP, numpy ms, value nodes, value ms)] for C16, C32, C64, L2, L4, T32."""
    per_node = [f[3] * 1e3 / f[2] for f in fit]
    per_layer = (fit[4][1] - fit[0][1]) / 3
    return [f"value engine: time tracks graph nodes (about one node per scalar multiply or add, so "
            f"nodes ~ FLOPs/2): {min(per_node):.2f}-{max(per_node):.2f} us per node across all "
            "configs -- the slope is the FLOPs, each one paid as a Python object",
            f"numpy engine: each extra layer adds {per_layer:.3f} ms at n_embd 16 (Python-level "
            "function calls plus the array operators, about 1 us each: per-call overhead, not "
            f"FLOPs); n_embd 16 -> 64 multiplies FLOPs by {fit[2][0] / fit[0][0]:.1f} but time "
            f"only by {fit[2][1] / fit[0][1]:.1f}; block_size 16 -> 32 multiplies FLOPs by "
            f"{fit[5][0] / fit[0][0]:.1f}, time by {fit[5][1] / fit[0][1]:.2f}. At these sizes the "
            "NumPy engine is mostly fixed overhead (best throughput here "
            f"{max(f[0] / f[1] for f in fit):.1f} GFLOP/s)"]


BIG_CONFIGS = [dict(n_embd=16, n_layer=1, block_size=16, batch=1),
               dict(n_embd=64, n_layer=2, block_size=64, batch=16),
               dict(n_embd=128, n_layer=4, block_size=128, batch=16),
               dict(n_embd=256, n_layer=4, block_size=128, batch=8)]


def big_batch(vocab_size, cfg, batch):
    rng = np.random.default_rng(0)
    return [[vocab_size - 1] + rng.integers(0, vocab_size - 1, cfg.block_size).tolist()
            for _ in range(batch)]


def time_steps(step, n):
    for _ in range(2):
        step()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def bigger_models(vocab_size, args, log):
    """rmsnorm, forward + backward + Adam, full-length docs: the NumPy engine in float64 and float32
    and, where installed, PyTorch eager in both (1 thread each): same model, batch and weights."""
    configs = BIG_CONFIGS[:2] if args.quick else BIG_CONFIGS
    head = "| n_embd | n_layer | T | batch | numpy f64 ms | numpy f32 ms | f64/f32"
    if torch is not None:
        torch.set_num_threads(args.blas_threads)
        head += " | torch f64 ms | torch f32 ms | numpy f64 / torch f64 | numpy f32 / torch f32"
    rows = [head + " |", "|" + "---|" * (head.count("|"))]
    for over in configs:
        over = dict(over)
        batch = over.pop("batch")
        cfg = GPTConfig(vocab_size=vocab_size, n_head=4, **over)
        docs = big_batch(vocab_size, cfg, batch)
        n = (3 if args.quick
             else max(5, min(200, int(2e9 / (flops_per_step(cfg, cfg.block_size) * batch)))))
        log(f"  bigger models {over}, batch {batch}: {n} steps each ...")
        out = {}
        for dt in ("float64", "float32"):
            t = NumpyStep(cfg, dtype=dt)
            out[f"numpy {dt}"] = time_steps(lambda t=t, docs=docs: t.step(docs, record=False), n)
        cells = [out["numpy float64"], out["numpy float32"],
                 out["numpy float64"] / out["numpy float32"]]
        if torch is not None:
            inputs, targets, _ = numpy_engine.make_batch(docs, cfg.block_size)
            params = init_params(cfg, seed=42)
            numpy_loss = loss_and_grads(params, docs, cfg, engine="numpy")[0]
            torch_microgpt.check_same_model(params, cfg, inputs, targets, numpy_loss)
            ti, tt = torch.as_tensor(inputs), torch.as_tensor(targets)
            for dt, tdt in (("float64", torch.float64), ("float32", torch.float32)):
                model = torch_microgpt.TorchGPT(params, cfg, tdt)
                step = lambda m=model, ti=ti, tt=tt: m.train_step(ti, tt)  # noqa: E731
                out[f"torch {dt}"] = time_steps(step, n)
            cells += [out["torch float64"], out["torch float32"],
                      out["numpy float64"] / out["torch float64"],
                      out["numpy float32"] / out["torch float32"]]
        fmt = [fmt_ms(c) if i not in (2, 5, 6) else f"{c:.2f}x" for i, c in enumerate(cells)]
        rows.append(f"| {cfg.n_embd} | {cfg.n_layer} | {cfg.block_size} | {batch} | "
                    + " | ".join(fmt) + " |")
    return rows


def threads_probe(vocab_size, args):
    """--threads-probe: the bigger models' NumPy step times with whatever BLAS threads this process
    has (printed as one line of JSON for the parent, which runs this with 1 and with 2 threads)."""
    import json

    res = {}
    for over in BIG_CONFIGS[:2] if args.quick else BIG_CONFIGS:
        over = dict(over)
        batch = over.pop("batch")
        cfg = GPTConfig(vocab_size=vocab_size, n_head=4, **over)
        docs = big_batch(vocab_size, cfg, batch)
        n = (3 if args.quick
             else max(5, min(200, int(2e9 / (flops_per_step(cfg, cfg.block_size) * batch)))))
        for dt in ("float64", "float32"):
            t = NumpyStep(cfg, dtype=dt)
            key = f"{cfg.n_embd},{cfg.n_layer},{cfg.block_size},{batch},{dt}"
            res[key] = time_steps(lambda t=t, docs=docs: t.step(docs, record=False), n)
    print(json.dumps(res))


def threads_table(args, log):
    """Does a second BLAS thread help? The same steps in child processes with 1 and with 2 BLAS
    threads, in alternating rounds (1, 2, then 2, 1, ...): this machine's speed drifts over minutes,
    so the speed-up is the median of the per-round ratios and the times are medians over rounds."""
    import json
    import subprocess

    rounds = 1 if args.quick else 3
    runs = {1: [], 2: []}
    for r in range(rounds):
        for threads in (1, 2) if r % 2 == 0 else (2, 1):
            log(f"  BLAS threads {threads}, round {r + 1} of {rounds} (child process) ...")
            cmd = [sys.executable, __file__, "--threads-probe", "--blas-threads", str(threads),
                   "--corpus", args.corpus]
            out = subprocess.run(cmd + (["--quick"] if args.quick else []), capture_output=True,
                                 text=True, check=True)
            runs[threads].append(json.loads(out.stdout.strip().splitlines()[-1]))
    rows = ["| n_embd | n_layer | T | batch | dtype | 1 thread ms | 2 threads ms | "
            "speed-up, median of per-round ratios |", "|" + "---|" * 8]
    for key in runs[1][0]:
        c, layers, t, b, dt = key.split(",")
        one, two = (statistics.median(run[key] for run in runs[n]) for n in (1, 2))
        ratio = statistics.median(a[key] / b[key] for a, b in zip(runs[1], runs[2]))
        rows.append(f"| {c} | {layers} | {t} | {b} | {dt} | {fmt_ms(one)} | {fmt_ms(two)} | "
                    f"{ratio:.2f}x |")
    return rows


def commits_section(args, log):
    log("this tree against older commits, alternating processes ...")
    head = ["## This tree against older commits, side by side", "",
            "Each figure is one fresh process running microgpt.train() of one checkout (the old "
            "ones from `git archive`) on the same docs; processes alternate, old and new. ms/step "
            "is CPU time (benchmarks/vs_commits.py; `--clock wall` there for elapsed time).", ""]
    vs_args = vs_commits._parse_args(["--corpus", args.corpus] + (["--quick"] * args.quick))
    return head + vs_commits.table(vs_args, log) + [""]


def floor_section(args, log):
    log("the NumPy step against its matrix products ...")
    return ["## The NumPy step against its floor (benchmarks/floor.py)", "",
            "The same matrix products as a training step, run alone back to back, against the "
            "whole step (loss, gradients, Adam, retraction).", ""] + floor.table(args.quick, log)


def scaling_sections(docs_tokens, vocab_size, args, log):
    log("scaling ...")
    rows, notes = scaling_table(docs_tokens, vocab_size, args, log)
    lines = ["", "## Scaling (rmsnorm, batch 1, docs of exactly block_size tokens; value engine "
             "with GC paused)", ""] + rows + [""] + [f"- {n}" for n in notes] + [""]
    log("bigger models ...")
    lines += ["## Bigger models: NumPy engine in float64 and float32"
              + (", beside PyTorch eager" if torch else "")
              + f" (rmsnorm, forward + backward + Adam, {args.blas_threads} BLAS thread(s))", ""]
    if torch is None:
        lines += ["(PyTorch is not installed here, so there are no PyTorch columns; they appear "
                  "when it is.)", ""]
    else:
        lines += [f"PyTorch {torch.__version__}, eager, torch.set_num_threads({args.blas_threads});"
                  " the loss of the same weights and batch is checked equal to the NumPy engine's "
                  "(1e-12) first.", ""]
    lines += bigger_models(vocab_size, args, log) + [""]
    lines += ["## BLAS threads: does the second core help the NumPy engine?", ""]
    return lines + threads_table(args, log) + [""]


def main(args):
    t_start = time.perf_counter()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    docs = list(microgpt.load_corpus(args.corpus))
    vocab = microgpt.build_vocab(docs)
    random.Random(0).shuffle(docs)  # a fixed, seeded sample: every engine sees the same docs
    docs_tokens = [microgpt.doc_tokens(d, vocab) for d in docs]
    vocab_size = len(vocab) + 1
    if args.threads_probe:
        return threads_probe(vocab_size, args)
    mean_len = sum(len(t) - 1 for t in docs_tokens[:200]) / 200
    lines = ["# microgpt benchmark", "",
             f"Command: `python benchmarks/bench.py {' '.join(sys.argv[1:])}`", ""]
    lines += machine_info(args.blas_threads)
    lines += [f"- corpus: {args.corpus} ({len(docs)} docs, vocab {vocab_size}, mean predicted "
              f"positions per doc {mean_len:.1f}); default config n_embd 16, n_head 4, n_layer 1, "
              "block_size 16", ""]
    if not args.skip_commits and not args.only_scaling:
        lines += commits_section(args, log)
    if args.only_commits:
        args.only_scaling = args.skip_scaling = True
    if not args.only_scaling:
        lines += floor_section(args, log) + [""]
        log("main table ...")
        rows, notes = main_table(docs_tokens, vocab_size, args, log)
        lines += ["## ms per training step (loss + gradients + Adam)", ""] + rows + [""]
        lines += [f"- {n}" for n in notes]
    if not args.skip_scaling:
        lines += scaling_sections(docs_tokens, vocab_size, args, log)
    lines.append(f"Total benchmark time {time.perf_counter() - t_start:.0f} s.")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(ARGS)
