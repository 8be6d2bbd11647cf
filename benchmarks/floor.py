"""floor.py -- how close the NumPy engine's training step is to its floor: its matrix products.

    python benchmarks/floor.py           # batch 1 (default config) and the experiments' size
    python benchmarks/floor.py --quick   # fewer rounds (rough numbers)

The floor: a step's matrix products (shapes and dtype: matmul_shapes) back to back on arrays made
in advance; floor / step is the share of a step that is arithmetic. Each figure is the best of
rounds over the same batches (other programs only ever add time), 1 BLAS thread.
"""
import argparse
import os
import random
import sys
import time

from vs_commits import ROOT, SIZES, long_lines

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads: BLAS reads it once
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import microgpt as mg  # noqa: E402


def matmul_shapes(cfg, B, T):
    """(left shape, right shape) of every matrix product of one training step; N = B * T rows.
    Per layer, forward: x W^T for wq, wk, wv, wo (C x C), fc1 (4C x C), fc2 (C x 4C), and q k^T,
    W v per head; backward: dy W and dy^T x for each W, and dout v^T, W^T dout, dlogits k,
    dlogits^T q; then lm_head's three (V x C) once."""
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


class NumpyStep:
    """Weights and Adam state of their own, and the NumPy engine's training step as microgpt.train()
    runs it: loss and gradients into a reused buffer, adam_step, the retraction in sphere mode."""

    def __init__(self, cfg, dtype="float64", seed=0):
        self.cfg, self.step_no = cfg, 0
        self.params = mg.init_params(cfg, seed=seed, dtype=dtype)
        self.flat = mg.flat_buffer(self.params)
        self.m, self.v = np.zeros_like(self.flat), np.zeros_like(self.flat)
        self.flat_grad, self.grads = mg.alloc_params(cfg, dtype)  # grads: views into flat_grad

    def update(self, batch):
        loss = self.loss_and_grads(batch)
        mg.adam_step(self.flat, self.flat_grad, self.m, self.v, self.step_no, 10_000)
        if self.cfg.norm == "sphere":
            mg.retract(self.params, self.cfg)
        self.step_no += 1
        return loss

    def loss_and_grads(self, batch):  # the loss of the batch; its gradients into self.grads
        return mg.loss_and_grads(self.params, batch, self.cfg, engine="numpy", out=self.grads)[0]


def step_runner(cfg, batches, dtype):
    """A function that runs microgpt's training step on every batch in `batches`."""
    stepper = NumpyStep(cfg, dtype)
    return lambda: [stepper.update(batch) for batch in batches]


def time_calls(run, rounds, pick=min, warmup=1):
    """pick() of the seconds of `rounds` calls of run(), after `warmup` calls."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return pick(times)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def table(quick=False, log=log):
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
            step = time_calls(step_runner(cfg, batches, dtype), rounds) / n_batches * 1e3
            floor = time_calls(floor_runner(cfg, batches, dtype), rounds) / n_batches * 1e3
            rows.append(f"| {size} (batch {B}, {dtype.name}) | {norm} | {step:.3f} | {floor:.3f} | "
                        f"{floor / step:.0%} |")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer rounds and batches (rough numbers)")
    print("\n".join(table(p.parse_args(argv).quick)))


if __name__ == "__main__":
    main()
