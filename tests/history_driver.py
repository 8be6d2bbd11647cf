"""A training loop that records a planetarium history, for the tests (and by hand) until microgpt.py's run does.

It is microgpt.train's loop at batch 1 on the NumPy engine (the same batches, Adam, retraction, val every
eval_every steps), reduced to what the history needs: no checkpoints, no Ctrl-C, no divergence checks. When the
run writes history.npz itself, the tests switch to `python microgpt.py --engine numpy ... --out DIR`.

    python tests/history_driver.py OUT [--norm sphere] [--steps 300] [--corpus names] [--seed 42]
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import microgpt as mg  # noqa: E402
from harness.history import HISTORY_NAME, History  # noqa: E402


def train_with_history(out=None, corpus="names", norm="rmsnorm", steps=300, seed=42, lr=0.01, eval_every=100,
                       count=50, **config):
    """Train a model (GPTConfig defaults unless `config` says otherwise) and record its History as a run would;
    with `out`, write OUT/history.npz. Returns (history, params, train_loss, val_loss)."""
    docs = mg.load_corpus(corpus)
    vocab = mg.build_vocab(docs)
    cfg = mg.GPTConfig(len(vocab) + 1, norm=norm, **config)
    train_docs, val_docs = mg.split_docs(docs, seed)
    train_tokens = [mg.doc_tokens(d, vocab) for d in train_docs]
    val_tokens = [mg.doc_tokens(d, vocab) for d in val_docs]
    params = mg.init_params(cfg, seed)
    flat = mg.flat_buffer(params)
    m, v = mg.np.zeros_like(flat), mg.np.zeros_like(flat)
    g, grads = mg.alloc_params(cfg)
    history = History(cfg, vocab, steps, count)
    if history.due(0):
        history.record(0, params)
    train_loss, val_loss = [], [(0, mg.evaluate(params, val_tokens, cfg))]
    for step in range(steps):
        loss, _ = mg.loss_and_grads(params, [train_tokens[step % len(train_tokens)]], cfg, "numpy", out=grads)
        mg.adam_step(flat, g, m, v, step, steps, lr)
        drift = mg.retract(params, cfg) if norm == "sphere" else None
        train_loss.append(loss)
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            val_loss.append((step + 1, mg.evaluate(params, val_tokens, cfg)))
        if history.due(step + 1):
            history.record(step + 1, params, drift)
    if out is not None:
        os.makedirs(out, exist_ok=True)
        history.save(os.path.join(out, HISTORY_NAME), train_loss, val_loss)
    return history, params, train_loss, val_loss


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--norm", default="rmsnorm", choices=("rmsnorm", "sphere"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--corpus", default="names")
    parser.add_argument("--seed", type=int, default=42)
    a = parser.parse_args()
    train_with_history(a.out, a.corpus, a.norm, a.steps, a.seed)
    print(os.path.join(a.out, HISTORY_NAME))
