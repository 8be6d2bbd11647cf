"""Does a collapsed attention cost time? A training step of the sphere at T = 256 (the
copy study's model, float32) from a fresh state, beside the same state with s_qk raised
until part of the attention weights are subnormal (below float32's smallest normal
number, 1.2e-38), as in the collapsed runs of experiments/repeat.py; and that state
with the CPU set to flush subnormals to zero, as the experiments' workers are (its loss
and gradients compared with the unflushed step's). Some CPUs take many times longer on
subnormal numbers.

    .venv/bin/python benchmarks/subnormal.py    # 7 rounds, the three states alternating
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "experiments")]
from common import flush_subnormals, machine_info  # noqa: E402

import numpy_engine  # noqa: E402
from microgpt import init_params  # noqa: E402
from model_config import GPTConfig  # noqa: E402

CFG = GPTConfig(vocab_size=27, n_embd=32, n_head=4, n_layer=2, block_size=256, norm="sphere")


def subnormal_share(params, tokens):
    """The share of the causal attention weights (the lower triangle, all layers) that
    are subnormal: nonzero and below float32's smallest normal number."""
    _, acts = numpy_engine.gpt_forward(params, tokens, CFG)
    weights = np.stack([layer.attn_weights for layer in acts.layers])
    causal = np.tril(np.ones(weights.shape[-2:], dtype=bool))
    w = weights[..., causal]
    return float(((w > 0) & (w < np.finfo(np.float32).tiny)).mean())


def step_ms(params, docs, steps):
    """The ms of CPU a step takes, and the last step's (loss, gradients)."""
    t0 = time.process_time()  # CPU time: what another program on the machine moves least
    for _ in range(steps):
        loss, grads = numpy_engine.loss_and_grads_np(params, docs, CFG)[:2]
    return (time.process_time() - t0) / steps * 1e3, (loss, grads)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds of each state (default 7)")
    parser.add_argument("--steps", type=int, default=5, help="steps a round (default 5)")
    parser.add_argument("--sqk", type=float, default=8.0,
                        help="how many times s_qk is raised (default 8: about 8%% of the weights "
                        "subnormal; the collapsed runs held 4-10%%)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 26, size=CFG.block_size + 1).tolist() for _ in range(8)]
    fresh = init_params(CFG, 0, np.float32)
    collapsed = {k: v * np.float32(args.sqk) if k.endswith("attn_sqk") else v
                 for k, v in fresh.items()}
    states = {"fresh": (fresh, False), "collapsed": (collapsed, False),
              "collapsed, flushed": (collapsed, True)}  # (params, subnormals flushed)
    tokens = np.array(docs)[:, :-1]
    times, last = {name: [] for name in states}, {}
    for _ in range(args.rounds):  # alternating, so that a change in the machine's load hits all
        for name, (params, flushed) in states.items():
            flush_subnormals(flushed)
            ms, last[name] = step_ms(params, docs, args.steps)
            times[name].append(ms)
    flush_subnormals(False)
    (loss, grads), (loss_flushed, grads_flushed) = last["collapsed"], last["collapsed, flushed"]
    identical = loss == loss_flushed and all(np.array_equal(grads[k], grads_flushed[k])
                                             for k in grads)
    median = {name: float(np.median(t)) for name, t in times.items()}
    machine = machine_info()
    print(f"CPU: {machine['cpu']}; NumPy {machine['numpy']}, BLAS {machine['blas']}")
    for name, (params, flushed) in states.items():
        share = "" if flushed else f"{subnormal_share(params, tokens):6.1%} of the attention " \
            "weights subnormal; "
        print(f"{name:>18}: {share}{median[name]:.1f} ms of CPU a step (median of "
              f"{args.rounds} rounds)")
    ratio = {name: t / median["fresh"] for name, t in median.items()}
    print(f"the collapsed state's step takes {ratio['collapsed']:.2f}x the fresh state's; "
          f"flushed, {ratio['collapsed, flushed']:.2f}x, with the loss and gradients "
          f"{'the same' if identical else 'NOT the same'} bit for bit")


if __name__ == "__main__":
    main()
