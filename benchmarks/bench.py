"""bench.py -- one table that shows where the performance goals stand.

    python benchmarks/bench.py                 # full run, a few minutes
    python benchmarks/bench.py --quick         # a rough table in well under a minute
    python benchmarks/bench.py --out perf.md   # also write the table to a file

A step is microgpt.train()'s: loss and gradients of a batch, Adam (and the sphere retraction). The
scalar rows run the chapter code on naive_value.NaiveValue and value.Value, cyclic GC on and paused.
"""

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from contextlib import nullcontext
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats, a smaller large batch")
    p.add_argument("--out", help="also write the tables (markdown) to this file")
    p.add_argument("--corpus", default="names", help="'names' or a text file, one doc per line")
    p.add_argument("--batch", type=int, default=16, help="the larger batch size (default 16)")
    p.add_argument("--blas-threads", type=int, default=1, help="for the NumPy engine (default 1)")
    p.add_argument("--skip-scaling", action="store_true", help="leave out the scaling tables")
    p.add_argument("--only-scaling", action="store_true", help="only the scaling tables")
    p.add_argument("--threads-probe", action="store_true", help=argparse.SUPPRESS)  # see below
    return p.parse_args(argv)


ARGS = _parse_args(sys.argv[1:]) if __name__ == "__main__" else None
# before numpy is imported: BLAS reads these once, when it loads
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS") if ARGS else ():
    os.environ[var] = str(ARGS.blas_threads)

import floor  # noqa: E402
import numpy as np  # noqa: E402
from naive_value import NaiveValue  # noqa: E402

import microgpt  # noqa: E402
from microgpt import GPTConfig, init_params, loss_and_grads  # noqa: E402
from utils import softmax  # noqa: E402
from value import Value, no_cycle_gc, topological_order  # noqa: E402


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
    return loss.data, {k: [v.grad for v in rows] if params[k].ndim == 1
                       else [[v.grad for v in r] for r in rows] for k, rows in state_dict.items()}


class Trainer(floor.NumpyStep):
    """One engine variant with its own weights and Adam state (all variants do the same math): the
    NumPy engine's step, or loss_fn's gradients with the same Adam (and retraction)."""

    def __init__(self, name, cfg, loss_fn=None, gc_paused=False, dtype="float64"):
        super().__init__(cfg, dtype, seed=42)
        self.name, self.loss_fn, self.gc_paused = name, loss_fn, gc_paused
        self.times, self.losses = [], []

    def step(self, batch, record=True):
        t0 = time.perf_counter()
        loss = self.update(batch)
        if record:
            self.times.append(time.perf_counter() - t0)
            self.losses.append(loss)

    def loss_and_grads(self, batch):
        if self.loss_fn is None:
            return super().loss_and_grads(batch)
        with no_cycle_gc() if self.gc_paused else nullcontext():
            loss, grads = self.loss_fn(self.params, batch, self.cfg)
        for key, grad in grads.items():
            self.grads[key][...] = grad
        return loss


naive_loss = partial(scalar_loss_and_grads, NaiveValue)
value_loss = partial(scalar_loss_and_grads, Value)
# microgpt's own value-engine path (it pauses the cycle collector itself, via value.no_cycle_gc)
engine_value_loss = partial(loss_and_grads, engine="value")


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
    # topological_order only reads ._children: it works for both classes
    counts = [len(topological_order(scalar_loss(cls, params, b, cfg)[0])) for b in batches]
    return sum(counts) / len(counts)


def value_step_memory(cfg, batch, steps=12):
    """(peak MB of a value-engine step, growth in kB of live memory from step 3 to the last)."""
    params, live = init_params(cfg, seed=42), []
    tracemalloc.start()
    try:
        for _ in range(1 + steps):
            with no_cycle_gc():
                loss_and_grads(params, batch, cfg, engine="value")
            live.append(tracemalloc.get_traced_memory()[0])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / 2**20, (live[-1] - live[2]) / 1024


def machine_info(blas_threads):
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return [f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}; numpy {np.__version__}, BLAS {blas.get('name', '?')} "
            f"{blas.get('version', '')}, {blas_threads} BLAS thread(s)"]


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
    np_t = Trainer("numpy", cfg)
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
    cfg, steps = GPTConfig(vocab_size=vocab_size), 6 if quick else 12
    for batch_size in (1, big):
        peak, growth = value_step_memory(cfg, docs_tokens[:batch_size], steps)
        notes.append(f"value engine (rmsnorm, batch {batch_size}): peak traced memory of one step "
                     f"{peak:.1f} MB; live memory growth from step 2 to step {steps}: "
                     f"{growth:+.1f} kB (graphs are freed)")
    return rows, notes


def scaling_docs(docs_tokens, block_size):
    """Docs of block_size + 1 tokens (names glued together): every step predicts block_size."""
    stream, bos, n = [t for doc in docs_tokens for t in doc[1:-1]], docs_tokens[0][0], block_size
    return [[bos] + stream[i * n : (i + 1) * n] for i in range(len(stream) // n)]


def flops_per_step(cfg, T):
    """Approximate multiply-adds x 2 of one step of one doc: forward + backward (= 3 x forward) of
    the matmuls (12 C^2 per layer per token + V C for lm_head) and of attention (q.k, weights.v)."""
    C = cfg.n_embd
    matmul = 2 * T * (cfg.n_layer * 12 * C * C + cfg.vocab_size * C)
    attention = cfg.n_layer * 2 * C * T * (T + 1)  # 2 C flops per (query, key) pair, twice
    return 3 * (matmul + attention)


def scaling_table(docs_tokens, vocab_size, args, log):
    configs = [dict(n_embd=16), dict(n_embd=32), dict(n_embd=64), dict(n_layer=2), dict(n_layer=4),
               dict(block_size=32)]
    rows = ["| n_embd | n_layer | block_size (= T) | params | MFLOP/step | value nodes/step "
            "| value ms/step | value us/node | numpy ms/step (IQR) | numpy GFLOP/s "
            "| numpy float32 ms/step | float64/float32 |", "|" + "---|" * 12]
    fit = []
    for over in configs:
        cfg = GPTConfig(vocab_size=vocab_size, **over)
        docs = scaling_docs(docs_tokens, cfg.block_size)
        T, vt = cfg.block_size, Trainer("value", cfg, engine_value_loss, gc_paused=True)
        nodes = nodes_per_step(Value, vt.params, [docs[:1]], cfg)
        reps = 1 if args.quick else (3 if nodes > 400_000 else 5)
        log(f"  scaling {over}: value engine x{reps}, numpy ...")
        vt.step(docs[0:1], record=False)
        for r in range(reps):
            vt.step(docs[1 + r : 2 + r])
        nt, nt32 = Trainer("numpy", cfg), Trainer("numpy", cfg, dtype="float32")
        n_np = 60 if args.quick else 300
        for r in range(n_np + 20):  # interleaved, the same doc back to back
            nt.step(docs[r % 50 : r % 50 + 1], record=r >= 20)
            nt32.step(docs[r % 50 : r % 50 + 1], record=r >= 20)
        v_med, n32 = summary(vt.times)[0], summary(nt32.times)[0]
        n_med, q1, q3 = summary(nt.times)
        mflop = flops_per_step(cfg, T) / 1e6
        fit.append((mflop, n_med, nodes, v_med))
        ratio32 = statistics.median(a / b for a, b in zip(nt.times, nt32.times))
        rows.append(f"| {cfg.n_embd} | {cfg.n_layer} | {T} | {vt.flat.size:,} | {mflop:.2f} | "
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


# (n_embd, n_layer, block_size, batch) of the bigger models
BIG_CONFIGS = [(16, 1, 16, 1), (64, 2, 64, 16), (128, 4, 128, 16), (256, 4, 128, 8)]


def big_models(vocab_size, quick):
    """(cfg, batch, docs, steps to time) of each bigger model, on random docs of full length."""
    for n_embd, n_layer, block_size, batch in BIG_CONFIGS[:2] if quick else BIG_CONFIGS:
        cfg = GPTConfig(vocab_size=vocab_size, n_embd=n_embd, n_layer=n_layer, n_head=4,
                        block_size=block_size)
        ids = np.random.default_rng(0).integers(0, vocab_size - 1, (batch, block_size))
        docs = [[vocab_size - 1] + row for row in ids.tolist()]
        steps = max(5, min(200, int(2e9 / (flops_per_step(cfg, block_size) * batch))))
        yield cfg, batch, docs, 3 if quick else steps


def numpy_ms(cfg, dtype, docs, n):
    """The median ms of n NumPy training steps, after two warm-up steps."""
    step = partial(Trainer("numpy", cfg, dtype=dtype).update, docs)
    return floor.time_calls(step, n, pick=statistics.median, warmup=2) * 1e3


def threads_probe(vocab_size, args):
    """--threads-probe: the bigger models' NumPy step times with this process's BLAS threads."""
    print(json.dumps({f"{cfg.n_embd},{cfg.n_layer},{cfg.block_size},{batch},{dt}":
                      numpy_ms(cfg, dt, docs, n)
                      for cfg, batch, docs, n in big_models(vocab_size, args.quick)
                      for dt in ("float64", "float32")}))


def threads_table(args, log):
    """Does a second BLAS thread help? Child processes with 1 and 2 BLAS threads, alternating
    (the machine drifts): medians over rounds, and the median of the per-round ratios."""
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


def floor_section(args, log):
    log("the NumPy step against its matrix products ...")
    return ["## The NumPy step against its floor (benchmarks/floor.py)", "",
            "A step's matrix products run alone, against the whole step (loss, gradients, Adam, "
            "retraction).", ""] + floor.table(args.quick, log)


def scaling_sections(docs_tokens, vocab_size, args, log):
    log("scaling ...")
    rows, notes = scaling_table(docs_tokens, vocab_size, args, log)
    lines = ["", "## Scaling (rmsnorm, batch 1, docs of exactly block_size tokens; value engine "
             "with GC paused)", ""] + rows + [""] + [f"- {n}" for n in notes] + [""]
    lines += ["## Bigger models, float64 and float32: does the second core help the NumPy "
              "engine? (PyTorch beside it: torch_microgpt.py)", ""]
    return lines + threads_table(args, log) + [""]


def main(args):
    t_start, log = time.perf_counter(), floor.log
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
