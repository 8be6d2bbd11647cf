"""torch_microgpt.py -- microgpt's rmsnorm model in PyTorch eager, to time beside the NumPy engine.

benchmarks/bench.py imports this when PyTorch happens to be installed (it is never a requirement)
and times a training step (forward, backward, the reference Adam) in float64 and float32 next to
numpy_engine.py on the same model and batch. The math is microgpt.gpt's; `check_same_model` proves
the loss equals the NumPy engine's to 1e-12 in float64 before anything is timed.
"""
import math

import torch
from torch.nn.functional import cross_entropy, linear


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
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        for i in range(cfg.n_layer):
            p = f"layer{i}."
            xn = rmsnorm(x)
            q, k, v = (linear(xn, w[p + n]).view(B, T, H, hd).transpose(1, 2)
                       for n in ("attn_wq", "attn_wk", "attn_wv"))
            att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, cfg.n_embd)
            x = x + linear(y, w[p + "attn_wo"])
            x = x + linear(linear(rmsnorm(x), w[p + "mlp_fc1"]).relu(), w[p + "mlp_fc2"])
        logits = linear(x, w["lm_head"])
        return cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))

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


def check_same_model(params, cfg, inputs, targets, numpy_loss):
    """The PyTorch loss of the same weights and batch, in float64, is the NumPy engine's (1e-12)."""
    model = TorchGPT(params, cfg, torch.float64)
    got = float(model.loss(torch.as_tensor(inputs), torch.as_tensor(targets)).detach())
    if abs(got - numpy_loss) > 1e-12 * abs(numpy_loss):
        raise AssertionError(f"not the same model: PyTorch loss {got!r}, NumPy {numpy_loss!r}")
