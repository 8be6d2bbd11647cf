"""torch_microgpt.py -- microgpt's rmsnorm model in PyTorch eager, to time beside the NumPy engine.

    python benchmarks/torch_microgpt.py [--rounds 7] [--steps 20]   # needs PyTorch (never required)

A float32 training step (forward, backward, Adam), C128 L4 T128 B16, 1 thread, in alternating fresh
processes: the NumPy engine, TorchGPT (the project's peer: attention and Adam written out as
numpy_engine.py and adam_step write them) and IdiomaticGPT (fused attention, fused Adam). Each
peer's loss is first checked equal to the NumPy engine's in float64 (1e-12, check_same_model).
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
from functools import partial

import floor  # (it puts the project on sys.path)
import numpy as np
import torch
from torch.nn.functional import cross_entropy, linear, scaled_dot_product_attention

from microgpt import GPTConfig, init_params, loss_and_grads
from numpy_engine import make_batch


def rmsnorm(x):
    return x * (x.pow(2).mean(dim=-1, keepdim=True) + 1e-5).rsqrt()


class TorchGPT:
    """The weights as leaf tensors in the state_dict layout, and one Adam step like adam_step."""

    def __init__(self, params, cfg, dtype):
        self.cfg = cfg
        self.w = {k: torch.tensor(a, dtype=dtype, requires_grad=True) for k, a in params.items()}
        self.m = {k: torch.zeros_like(t) for k, t in self.w.items()}
        self.v = {k: torch.zeros_like(t) for k, t in self.w.items()}
        self.step_no = 0

    def loss(self, inputs, targets):
        """Mean NLL of targets (B, T) given inputs (B, T) (no padding: the docs are full length)."""
        cfg, w = self.cfg, self.w
        B, T = inputs.shape
        H, hd = cfg.n_head, cfg.n_embd // cfg.n_head
        x = rmsnorm(w["wte"][inputs] + w["wpe"][:T])
        for i in range(cfg.n_layer):
            p = f"layer{i}."
            xn = rmsnorm(x)
            q, k, v = (linear(xn, w[p + n]).view(B, T, H, hd).transpose(1, 2)
                       for n in ("attn_wq", "attn_wk", "attn_wv"))
            y = self.attention(q, k, v).transpose(1, 2).reshape(B, T, cfg.n_embd)
            x = x + linear(y, w[p + "attn_wo"])
            x = x + linear(linear(rmsnorm(x), w[p + "mlp_fc1"]).relu(), w[p + "mlp_fc2"])
        logits = linear(x, w["lm_head"])
        return cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))

    def attention(self, q, k, v):
        """Causal softmax(q k^T / sqrt(hd)) v, as numpy_engine.attention_forward writes it."""
        T = q.shape[2]
        att = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        return att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v

    def train_step(self, inputs, targets, num_steps=10_000, lr=0.01, beta1=0.85, beta2=0.99,
                   eps=1e-8):
        for t in self.w.values():
            t.grad = None
        loss = self.loss(inputs, targets)
        loss.backward()
        step = self.step_no
        lr_t = lr * (1 - step / num_steps)
        with torch.no_grad():
            for k, p in self.w.items():
                self.m[k].mul_(beta1).add_(p.grad, alpha=1 - beta1)
                self.v[k].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                m_hat = self.m[k] / (1 - beta1 ** (step + 1))
                v_hat = self.v[k] / (1 - beta2 ** (step + 1))
                p.sub_(lr_t * m_hat / (v_hat.sqrt() + eps))
        self.step_no += 1
        return float(loss)


class IdiomaticGPT(TorchGPT):
    """As PyTorch is usually written: fused attention, Adam(fused=True), the same settings."""

    def __init__(self, params, cfg, dtype):
        super().__init__(params, cfg, dtype)
        self.adam = torch.optim.Adam(self.w.values(), betas=(0.85, 0.99), eps=1e-8, fused=True)

    def attention(self, q, k, v):
        return scaled_dot_product_attention(q, k, v, is_causal=True)

    def train_step(self, inputs, targets, num_steps=10_000, lr=0.01):
        self.adam.zero_grad(set_to_none=True)
        loss = self.loss(inputs, targets)
        loss.backward()
        self.adam.param_groups[0]["lr"] = lr * (1 - self.step_no / num_steps)
        self.adam.step()
        self.step_no += 1
        return float(loss)


def check_same_model(params, cfg, inputs, targets, numpy_loss, peer=TorchGPT):
    """The PyTorch loss of the same weights and batch, in float64, is the NumPy engine's (1e-12)."""
    model = peer(params, cfg, torch.float64)
    got = float(model.loss(torch.as_tensor(inputs), torch.as_tensor(targets)).detach())
    if abs(got - numpy_loss) > 1e-12 * abs(numpy_loss):
        raise AssertionError(f"not the same model: PyTorch loss {got!r}, NumPy {numpy_loss!r}")


# --------------------------------------------- run as a script: alternating processes, float32

PEERS = {"torch": TorchGPT, "torch idiomatic": IdiomaticGPT}
CFG = GPTConfig(vocab_size=27, n_embd=128, n_layer=4, n_head=4, block_size=128)  # rmsnorm
DOCS = [[26] + np.random.default_rng(i).integers(0, 26, 128).tolist() for i in range(16)]


def probe(engine, steps):
    """In a fresh process: the median ms of `steps` float32 training steps of one engine."""
    if engine == "numpy":
        step = partial(floor.NumpyStep(CFG, "float32", seed=42).update, DOCS)
    else:
        torch.set_num_threads(1)
        inputs, targets, _ = make_batch(DOCS, CFG.block_size)
        peer = PEERS[engine](init_params(CFG, seed=42), CFG, torch.float32)
        step = partial(peer.train_step, torch.as_tensor(inputs), torch.as_tensor(targets))
    print(floor.time_calls(step, steps, pick=statistics.median, warmup=2) * 1e3)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7, help="alternating rounds (default 7)")
    p.add_argument("--steps", type=int, default=20, help="steps per process (default 20)")
    p.add_argument("--probe", nargs=2, help=argparse.SUPPRESS)  # one child process: see probe()
    args = p.parse_args()
    if args.probe:
        return probe(args.probe[0], int(args.probe[1]))
    params, (inputs, targets, _) = init_params(CFG, seed=42), make_batch(DOCS, CFG.block_size)
    numpy_loss = loss_and_grads(params, DOCS, CFG, "numpy")[0]
    for peer in PEERS.values():
        check_same_model(params, CFG, inputs, targets, numpy_loss, peer)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    ms = {engine: [] for engine in ["numpy", *PEERS]}
    for r in range(args.rounds):  # the order reversed every other round
        for engine in list(ms) if r % 2 == 0 else list(ms)[::-1]:
            cmd = [sys.executable, __file__, "--probe", engine, str(args.steps)]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            ms[engine].append(float(out.stdout))
    print(f"PyTorch {torch.__version__}, NumPy {np.__version__}, float32, 1 thread, {args.rounds} "
          f"rounds x {args.steps} steps (median per process)\n\n| engine | ms/step, median of "
          "rounds | numpy / it: median of per-round ratios (range) |\n|---|---|---|")
    for engine, times in ms.items():
        ratios = [a / b for a, b in zip(ms["numpy"], times)]
        print(f"| {engine} | {statistics.median(times):.1f} | {statistics.median(ratios):.2f}x "
              f"({min(ratios):.2f}-{max(ratios):.2f}) |")


if __name__ == "__main__":
    main()
