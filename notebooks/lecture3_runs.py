"""The two microgpt runs that lecture 3's sittings share: norm="rmsnorm" and
norm="sphere" (nGPT), trained on the names corpus with the NumPy engine (batch 16, 1500
steps, seed 42; about 3 s).

    import lecture3_runs
    data = lecture3_runs.train_both()  # data.runs["sphere"] == (cfg, state), data.mask

Each sitting trains them afresh (the same seed gives the same weights), so that a
sitting can be opened on its own. Besides the runs it returns the validation positions
that the sittings read (the first 200 validation names, padded at the end as gpt_forward
pads them), the gradient's norm every 100 steps on a fixed batch, and the weights'
snapshots for the planetarium page.
"""
from types import SimpleNamespace

import numpy as np

import microgpt
from harness.history import History

STEPS, BATCH_SIZE, SEED = 1500, 16, 42


class Probe:
    """An observer of train(), called twice a step: every 100 steps the norm of the
    whole gradient on a fixed batch, and the weights' snapshots for the planetarium."""

    def __init__(self, cfg, history, grad_batch):
        self.cfg, self.history, self.grad_batch, self.record = cfg, history, grad_batch, []

    def before_update(self, state, loss, grad):
        if state.step == 0:
            self.history.record(0, state.params)                  # the initial weights
        return False                                              # (True would stop training)

    def after_update(self, state, loss, drift):
        if state.step == 1 or state.step % 100 == 0:
            _, grads = microgpt.loss_and_grads(state.params, self.grad_batch, self.cfg,
                                               engine="numpy")
            norm = float(np.sqrt(sum(np.sum(g * g) for g in grads.values())))
            self.record.append((state.step, norm))
        if self.history.due(state.step):
            self.history.record(state.step, state.params, drift)
        return False


def validation_positions(val_docs, vocab, block_size, n_names=200):
    """Inputs, a mask of the real (unpadded) positions and each position's target id."""
    val_tokens = [microgpt.doc_tokens(d, vocab) for d in val_docs[:n_names]]
    inputs = [t[:-1][:block_size] for t in val_tokens]      # every position that predicts a token
    targets = [t[1:][:block_size] for t in val_tokens]
    mask = np.zeros((len(inputs), max(len(t) for t in inputs)), dtype=bool)
    target_ids = np.zeros(mask.shape, dtype=np.int64)
    for b, (inp, tgt) in enumerate(zip(inputs, targets)):
        mask[b, :len(inp)] = True                            # gpt_forward pads at the end
        target_ids[b, :len(tgt)] = tgt
    return inputs, mask, target_ids


def train_both(norms=("rmsnorm", "sphere"), steps=STEPS):
    """Train a model per norm; return everything the sittings read, in one namespace."""
    docs = microgpt.load_corpus("names")
    vocab = microgpt.build_vocab(docs)
    train_docs, val_docs = microgpt.split_docs(docs, seed=SEED)
    base = microgpt.baselines([microgpt.doc_tokens(d, vocab) for d in train_docs],
                              [microgpt.doc_tokens(d, vocab) for d in val_docs],
                              microgpt.GPTConfig(vocab_size=len(vocab) + 1))
    grad_batch = [microgpt.doc_tokens(d, vocab) for d in val_docs[:64]]
    runs, grad_norms, histories = {}, {}, {}
    for norm in norms:
        cfg = microgpt.GPTConfig(vocab_size=len(vocab) + 1, norm=norm)
        histories[norm] = History(cfg, vocab, steps)       # about 50 snapshots of the weights
        probe = Probe(cfg, histories[norm], grad_batch)
        state = microgpt.train(train_docs, val_docs, vocab, cfg, steps=steps,
                               batch_size=BATCH_SIZE, engine="numpy", eval_every=50, seed=SEED,
                               observer=probe)
        runs[norm], grad_norms[norm] = (cfg, state), probe.record
    inputs, mask, target_ids = validation_positions(val_docs, vocab, cfg.block_size)
    return SimpleNamespace(docs=docs, vocab=vocab, train_docs=train_docs, val_docs=val_docs,
                           base=base, runs=runs, grad_norms=grad_norms, histories=histories,
                           inputs=inputs, mask=mask, target_ids=target_ids,
                           labels=list(vocab) + ["BOS"])
