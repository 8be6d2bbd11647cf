"""floor.py -- how close the NumPy engine's training step is to its floor: its matrix products.

    python benchmarks/floor.py           # batch 1 (default config) and the experiments' size
    python benchmarks/floor.py --quick   # fewer rounds (rough numbers)

A training step (loss_and_grads with engine="numpy", adam_step, the retraction in sphere mode) does
two kinds of work: the matrix products, the arithmetic a step cannot do without, and everything else
(elementwise NumPy calls, Python, the optimizer). The floor is the first alone: the same products,
same shapes and dtype, run back to back on arrays made in advance. floor / step is how much of a
step is arithmetic; 1 - floor / step is the most any rewrite could save. The products of one step
(N = B * T rows), per layer:
  forward   x W^T for wq, wk, wv, wo (C x C), fc1 (4C x C), fc2 (C x 4C); q k^T and W v per head
  backward  dy W and dy^T x for each of them; dout v^T, W^T dout, dlogits k and dlogits^T q
and lm_head's three (V x C) once. Each figure is the best of rounds over the same batches (other
programs only ever add time), 1 BLAS thread.
"""
import argparse
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads: BLAS reads it once
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
from vs_commits import SIZES, long_lines  # noqa: E402

import microgpt as mg  # noqa: E402


def matmul_shapes(cfg, B, T):
    """(left shape, right shape) of every matrix product of one training step (see above)."""
    N, C, H, hd, V = B * T, cfg.n_embd, cfg.n_head, cfg.head_dim, cfg.vocab_size
    linears = [(C, C)] * 4 + [(4 * C, C), (C, 4 * C)]
    per_layer = []
    for out, inp in linears:
        per_layer += [((N, inp), (inp, out)), ((N, out), (out, inp)), ((out, N), (N, inp))]
    heads = (B, H)
    per_layer += [(heads + (T, hd), heads + (hd, T)), (heads + (T, T), heads + (T, hd))] * 3
    lm_head = [((N, C), (C, V)), ((N, V), (V, C)), ((V, N), (N, C))]
    return per_layer * cfg.n_layer + lm_head


def floor_runner(cfg, batches, dtype):
    """A function that runs the matrix products of every batch in `batches` back to back."""
    rng = np.random.default_rng(0)
    work = []
    for batch in batches:
        T = min(cfg.block_size, max(len(t) - 1 for t in batch))
        for a, b in matmul_shapes(cfg, len(batch), T):
            work.append((rng.normal(size=a).astype(dtype), rng.normal(size=b).astype(dtype)))

    def run():
        for a, b in work:
            np.matmul(a, b)

    return run


def step_runner(cfg, batches, dtype):
    """A function that runs microgpt's training step on every batch in `batches`."""
    params = mg.init_params(cfg, seed=0, dtype=dtype)
    flat = mg.flat_buffer(params)
    m, v = np.zeros_like(flat), np.zeros_like(flat)
    g, grads = mg.alloc_params(cfg, dtype)

    def run():
        for i, batch in enumerate(batches):
            mg.loss_and_grads(params, batch, cfg, engine="numpy", out=grads)
            mg.adam_step(flat, g, m, v, i, 10_000, 0.01)
            if cfg.norm == "sphere":
                mg.retract(params, cfg)

    return run


def best_time(run, rounds):
    run()  # warm up
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times)


def table(quick=False, log=print):
    """Markdown rows: per size and norm, ms per step, the floor's ms, and floor / step."""
    docs = list(mg.load_corpus("names"))
    random.Random(0).shuffle(docs)
    rows = ["| size | norm | ms/step | matrix products alone, ms/step | floor / step |",
            "|---|---|---|---|---|"]
    for size, (model, run) in SIZES.items():
        sized = long_lines(docs, model["block_size"] + 1) if "block_size" in model else docs
        vocab = mg.build_vocab(sized)
        tokens = [mg.doc_tokens(d, vocab) for d in sized]
        B, dtype = run["batch_size"], np.dtype(run.get("dtype", "float64"))
        n_batches = (40 if quick else 200) if B == 1 else (2 if quick else 8)
        batches = [tokens[i * B : (i + 1) * B] for i in range(n_batches)]
        for norm in ("rmsnorm", "sphere"):
            cfg = mg.GPTConfig(vocab_size=len(vocab) + 1, norm=norm, **model)
            log(f"  {size} size, {norm} ...")
            rounds = 5 if quick else 41
            step = best_time(step_runner(cfg, batches, dtype), rounds) / n_batches * 1e3
            floor = best_time(floor_runner(cfg, batches, dtype), rounds) / n_batches * 1e3
            rows.append(f"| {size} (batch {B}, {dtype.name}) | {norm} | {step:.3f} | {floor:.3f} | "
                        f"{floor / step:.0%} |")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer rounds and batches (rough numbers)")
    args = p.parse_args(argv)
    print("\n".join(table(args.quick, log=lambda msg: print(msg, file=sys.stderr, flush=True))))


if __name__ == "__main__":
    main()
