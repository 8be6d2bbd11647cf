"""microgpt.py -- chapter 22: a tiny GPT, trained from scratch, that invents names; with an nGPT switch.

Read it top to bottom: the sections run in this order. norm="rmsnorm" is the reference microgpt exactly,
norm="sphere" keeps every vector on the unit hypersphere (nGPT, Loshchilov et al. 2025: lecture 3).
engine="value" runs this file's code on value.py's scalar Values (every number inspectable in pdb); "numpy"
the same math on arrays (numpy_engine.py). What a run adds (flags, checks, checkpoints, Ctrl-C): harness/.
"""
if __name__ == "__main__":  # a Ctrl-C while NumPy loads ends quietly (no traceback from inside an import)
    from harness import leave, quiet_startup
    quiet_startup("microgpt")

import numpy as np

from checks import check_known, check_loss_args, check_sampling
from corpora import load_corpus
from harness.checkpoints import TrainState, load_checkpoint, save_checkpoint  # noqa: F401  (the public API)
from harness.cli import Command
from harness.run import Run, run_state
from model_config import GPTConfig, alloc_params, flat_buffer, sphere_axes, sphere_matrices  # noqa: F401
from numpy_engine import (  # noqa: F401  (gpt_forward, gpt_backward: the public API)
    baselines, draw, evaluate, gpt_backward, gpt_forward, loss_and_grads_np, samples_np, too_cold,
)
from sphere import l2_normalize, tangent_project
from utils import linear, rmsnorm, softmax
from value import Value, no_cycle_gc

# =========================================================================== 1. dataset
# docs: a list of strings, one name each (corpora.py's load_corpus: packaged corpora, or a text file)

def split_docs(docs, seed=42, val_fraction=0.1):
    """Seeded shuffle, then the last 10% (at least one doc) is the validation set."""
    order = np.random.default_rng(seed).permutation(len(docs))
    shuffled = [docs[i] for i in order]
    n_val = max(1, int(len(docs) * val_fraction))
    return shuffled[:-n_val], shuffled[-n_val:]


# =========================================================================== 2. tokenizer

def build_vocab(docs):
    """The sorted unique characters: token id i is vocab[i]; BOS (begin/end of sequence) is id len(vocab)."""
    return sorted(set("".join(docs)))


def encode(text, vocab):
    """Characters -> ids (no BOS); a character not in the vocabulary is an InputError that names it."""
    index = {ch: i for i, ch in enumerate(vocab)}
    check_known(text, index)
    return [index[ch] for ch in text]


def decode(ids, vocab):
    """Ids -> string; BOS (and anything outside the vocabulary) is skipped."""
    return "".join(vocab[i] for i in ids if 0 <= i < len(vocab))


def doc_tokens(doc, vocab):
    """[BOS] + characters + [BOS]: the model learns where a name starts and where it ends."""
    bos = len(vocab)
    return [bos] + encode(doc, vocab) + [bos]


# =========================================================================== 3. parameters
# GPTConfig (n_layer, n_embd, ...), the state_dict keys and [out, in] shapes, one flat buffer: model_config.py

def init_params(cfg, seed=42, dtype=np.float64):
    """Matrices ~ N(0, 0.08^2) drawn in key order (the reference init). Sphere mode: unit vectors, and nGPT's scales
    stored at base = 1/sqrt(C) (mlp_su at 1), which gpt_sphere multiplies back (so Adam's steps on them are useful)."""
    rng = np.random.default_rng(seed)
    _, params = alloc_params(cfg, dtype)
    for array in params.values():
        if array.ndim == 2:
            array[...] = rng.normal(0.0, 0.08, array.shape)
    if cfg.norm == "sphere":
        base = cfg.n_embd ** -0.5
        for key, array in params.items():
            if array.ndim == 1:
                array[...] = 1.0 if key.endswith("mlp_su") else base
        retract(params, cfg)
    return params


def values_from_params(params):
    """The reference state_dict: key -> list of rows of Values (vectors: a list of Values)."""
    return {key: [Value(x) for x in a.tolist()] if a.ndim == 1 else [[Value(x) for x in row] for row in a.tolist()]
            for key, a in params.items()}


# =========================================================================== 4. model

# chapter 22: the reference microgpt forward pass for ONE position. keys/values are the KV cache: each
# call appends this position's k and v, and attends over everything cached so far (causal by construction).
def gpt(token_id, pos_id, keys, values, state_dict, cfg):
    n_layer, n_head, head_dim = cfg.n_layer, cfg.n_head, cfg.head_dim
    tok_emb = state_dict['wte'][token_id]  # token embedding
    pos_emb = state_dict['wpe'][pos_id]  # position embedding
    x = [t + p for t, p in zip(tok_emb, pos_emb)]  # joint token and position embedding
    x = rmsnorm(x)

    for li in range(n_layer):
        # 1) Multi-head attention block
        x_residual = x
        x = rmsnorm(x)
        q = linear(x, state_dict[f'layer{li}.attn_wq'])
        k = linear(x, state_dict[f'layer{li}.attn_wk'])
        v = linear(x, state_dict[f'layer{li}.attn_wv'])
        keys[li].append(k)
        values[li].append(v)
        x_attn = []
        for h in range(n_head):
            hs = h * head_dim
            q_h = q[hs:hs + head_dim]
            k_h = [ki[hs:hs + head_dim] for ki in keys[li]]
            v_h = [vi[hs:hs + head_dim] for vi in values[li]]
            attn_logits = [sum(q_h[j] * k_h[t][j] for j in range(head_dim)) / head_dim**0.5 for t in range(len(k_h))]
            attn_weights = softmax(attn_logits)
            head_out = [sum(attn_weights[t] * v_h[t][j] for t in range(len(v_h))) for j in range(head_dim)]
            x_attn.extend(head_out)
        x = linear(x_attn, state_dict[f'layer{li}.attn_wo'])
        x = [a + b for a, b in zip(x, x_residual)]
        # 2) MLP block
        x_residual = x
        x = rmsnorm(x)
        x = linear(x, state_dict[f'layer{li}.mlp_fc1'])
        x = [xi.relu() for xi in x]
        x = linear(x, state_dict[f'layer{li}.mlp_fc2'])
        x = [a + b for a, b in zip(x, x_residual)]

    logits = linear(x, state_dict['lm_head'])
    return logits


def _abs(a):  # |a| for a Value: d|a|/da = sign(a), taken as +1 at 0
    return a if a.data >= 0 else -a


# Lecture 3: the same network with every vector on the unit sphere (nGPT). Diff it against gpt():
# rmsnorm becomes l2_normalize, and `x + f(x)` becomes a step of size alpha from h towards Norm(f(h)).
def gpt_sphere(token_id, pos_id, keys, values, state_dict, cfg):
    n_layer, n_head, head_dim = cfg.n_layer, cfg.n_head, cfg.head_dim
    base = cfg.n_embd ** -0.5  # stored scales are rescaled by (wanted initial value / base)
    tok_emb = state_dict['wte'][token_id]
    pos_emb = state_dict['wpe'][pos_id]
    h = l2_normalize([t + p for t, p in zip(tok_emb, pos_emb)])  # a point on the sphere

    for li in range(n_layer):
        # 1) attention: q and k of each head are unit vectors times a learnable s_qk, so a logit is a
        #    scaled cosine; sqrt(head_dim) (not 1/sqrt) because cosines are small in [-1, 1]
        sqk = [s * (1 / base) for s in state_dict[f'layer{li}.attn_sqk']]
        q = linear(h, state_dict[f'layer{li}.attn_wq'])
        k = linear(h, state_dict[f'layer{li}.attn_wk'])
        v = linear(h, state_dict[f'layer{li}.attn_wv'])
        q = [s * qi for hs in range(0, n_head * head_dim, head_dim)
             for s, qi in zip(sqk[hs:hs + head_dim], l2_normalize(q[hs:hs + head_dim]))]
        k = [s * ki for hs in range(0, n_head * head_dim, head_dim)
             for s, ki in zip(sqk[hs:hs + head_dim], l2_normalize(k[hs:hs + head_dim]))]
        keys[li].append(k)
        values[li].append(v)
        x_attn = []
        for hd in range(n_head):
            hs = hd * head_dim
            q_h = q[hs:hs + head_dim]
            k_h = [ki[hs:hs + head_dim] for ki in keys[li]]
            v_h = [vi[hs:hs + head_dim] for vi in values[li]]
            attn_logits = [sum(q_h[j] * k_h[t][j] for j in range(head_dim)) * head_dim**0.5 for t in range(len(k_h))]
            attn_weights = softmax(attn_logits)
            head_out = [sum(attn_weights[t] * v_h[t][j] for t in range(len(v_h))) for j in range(head_dim)]
            x_attn.extend(head_out)
        h_attn = linear(x_attn, state_dict[f'layer{li}.attn_wo'])
        # h <- Norm(Norm(h) + alpha (Norm(h_A) - Norm(h))): a step towards the block's output, back onto the sphere
        alpha = [_abs(a) * (cfg.alpha_init / base) for a in state_dict[f'layer{li}.attn_alpha']]
        h_n, h_a = l2_normalize(h), l2_normalize(h_attn)
        h = l2_normalize([hi + ai * (hai - hi) for hi, ai, hai in zip(h_n, alpha, h_a)])
        # 2) MLP, its hidden pre-activation scaled by s_u (times sqrt(C), since the inputs are unit vectors)
        su = [s * cfg.n_embd**0.5 for s in state_dict[f'layer{li}.mlp_su']]
        u = [ui * si for ui, si in zip(linear(h, state_dict[f'layer{li}.mlp_fc1']), su)]
        u = [ui.relu() for ui in u]
        h_mlp = linear(u, state_dict[f'layer{li}.mlp_fc2'])
        alpha = [_abs(a) * (cfg.alpha_init / base) for a in state_dict[f'layer{li}.mlp_alpha']]
        h_n, h_m = l2_normalize(h), l2_normalize(h_mlp)
        h = l2_normalize([hi + ai * (hmi - hi) for hi, ai, hmi in zip(h_n, alpha, h_m)])

    # logits are cosines with the (unit) lm_head rows: s_z gives them the range a softmax needs
    logits = [l * (s * (cfg.sz_init / base)) for l, s in zip(linear(h, state_dict['lm_head']), state_dict['sz'])]
    return logits


# =========================================================================== 5. loss

def loss_and_grads(params, docs_tokens, cfg, engine="value", out=None):
    """Mean next-token NLL over all predicted positions of the batch, and its gradient (flat layout, into `out`
    if given). engine="numpy" computes the same numbers on arrays (numpy_engine.py)."""
    check_loss_args(params, docs_tokens, cfg, engine)  # (the weights fit cfg, the ids the vocabulary)
    if engine == "numpy":
        return loss_and_grads_np(params, docs_tokens, cfg, out)
    with no_cycle_gc():  # the graph is acyclic: refcounting frees it, the cycle collector would only cost time
        return loss_and_grads_value(params, docs_tokens, cfg, out)


# chapter 22's training step: forward each doc one token at a time through the KV cache, building up the
# computation graph all the way to the loss; then backward() fills in every parameter's gradient
def loss_and_grads_value(params, docs_tokens, cfg, out=None):
    state_dict = values_from_params(params)
    model = gpt_sphere if cfg.norm == "sphere" else gpt
    losses = []
    for tokens in docs_tokens:
        n = min(cfg.block_size, len(tokens) - 1)
        keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
        for pos_id in range(n):
            token_id, target_id = tokens[pos_id], tokens[pos_id + 1]
            logits = model(token_id, pos_id, keys, values, state_dict, cfg)
            probs = softmax(logits)
            loss_t = -probs[target_id].log()
            losses.append(loss_t)
    loss = (1 / len(losses)) * sum(losses)  # final average loss over all predicted positions. May yours be low.
    loss.backward()
    grads = alloc_params(cfg)[1] if out is None else out
    for key, g in grads.items():  # every parameter's .grad, gathered into the flat-buffer layout
        g[...] = [p.grad for p in state_dict[key]] if g.ndim == 1 else [[p.grad for p in r] for r in state_dict[key]]
    return loss.data, grads


# =========================================================================== 6. Adam (+ the sphere retraction)

def adam_step(flat, grad, m, v, step, num_steps, lr=0.01, beta1=0.85, beta2=0.99, eps_adam=1e-8):
    """The reference Adam update with linear lr decay: each line is its per-parameter line, on all at once."""
    lr_t = lr * (1 - step / num_steps)  # linear learning rate decay
    m *= beta1
    m += (1 - beta1) * grad                 # m = beta1 * m + (1 - beta1) * grad
    v *= beta2
    v += (1 - beta2) * grad ** 2            # v = beta2 * v + (1 - beta2) * grad ** 2
    m_hat = m / (1 - beta1 ** (step + 1))
    v_hat = v / (1 - beta2 ** (step + 1))
    v_hat **= 0.5
    v_hat += eps_adam
    m_hat *= lr_t
    m_hat /= v_hat
    flat -= m_hat                           # flat -= lr_t * m_hat / (v_hat ** 0.5 + eps_adam)


def retract(params, cfg):
    """Sphere mode: every matrix back on the sphere along its embedding dimension, w / |w|, in place. Returns the
    norms it divided by: how far the update had pushed each vector off the sphere (1 = not at all)."""
    norms = []
    for w, axis in sphere_matrices(params, cfg):  # (matrices back to back in the flat buffer: one block)
        vectors = w if axis == 1 else w.T  # one vector per row
        n = np.maximum(np.sqrt(np.vecdot(vectors, vectors)), 1e-12)  # their norms (vecdot: one call for all)
        w /= n[:, None] if axis == 1 else n  # each row divided by its norm, or each column by its own
        norms.append(n)
    return norms


def project_grads(params, grads, cfg):
    """Riemannian option: keep only the part of each matrix gradient tangent to its sphere (in place)."""
    for key, axis in sphere_axes(cfg).items():
        grads[key][...] = tangent_project(params[key], grads[key], axis=axis)


# =========================================================================== 7. training

def train(train_docs, val_docs, vocab, cfg, resume=None, progress=None, history=None, **settings):
    """Train with Adam; return the TrainState (.params, .train_loss, .val_loss, ...). settings: steps, lr, ...
    (settings.py); resume: a TrainState to continue; progress, history: what Run (harness/run.py) calls."""
    docs = [doc_tokens(doc, vocab) for doc in train_docs]  # the data: each document as token ids
    s = run_state(cfg, vocab, train_docs, val_docs, resume, **settings)  # the settings, checked (and the step)
    params = init_params(cfg, s.seed, s.dtype) if resume is None else s.params  # the weights (or the resumed)
    flat = flat_buffer(params)  # all of them in one array, a view per key: what Adam updates in one go
    m, v = (np.zeros_like(flat), np.zeros_like(flat)) if resume is None else (s.m, s.v)  # Adam's moments
    g, grads = alloc_params(cfg, flat.dtype)  # the gradients: one buffer, reused by every step
    with Run(s, params, m, v, [doc_tokens(doc, vocab) for doc in val_docs], progress, history) as run:
        for step in range(s.step, s.steps):
            batch = [docs[(step * s.batch_size + j) % len(docs)] for j in range(s.batch_size)]  # this step's docs
            loss, _ = loss_and_grads(params, batch, cfg, s.engine, out=grads)  # forward, loss and backward
            if run.diverged(step, loss, g):  # a NaN or inf loss or gradient: stop before it reaches the weights
                break
            if s.riemannian:
                project_grads(params, grads, cfg)
            adam_step(flat, g, m, v, step, s.steps, s.lr)
            drift = retract(params, cfg) if cfg.norm == "sphere" else None  # back onto the sphere
            if run.after_step(step, loss, drift):  # val loss, divergence rules, progress; Ctrl-C: stop here
                break
    return s


# =========================================================================== 8. inference

def sample(params, cfg, vocab, num_samples=20, temperature=0.5, prompt="", seed=42, engine="numpy"):
    """A list of num_samples new names (iter_samples gives them one at a time)."""
    return list(iter_samples(params, cfg, vocab, num_samples, temperature, prompt, seed, engine))


def iter_samples(params, cfg, vocab, num_samples=20, temperature=0.5, prompt="", seed=42, engine="numpy"):
    """New names, one at a time: chapter 22's loop (sample_value), or a chunk at once (numpy_engine.samples_np).
    Both draw position p of name i with the same uniform number u[i, p], so they invent the same names."""
    prefix = encode(check_sampling(prompt, vocab, cfg, num_samples, temperature, seed, engine), vocab)  # its ids
    rng = np.random.default_rng(seed)
    if engine == "numpy":
        return (decode(ids, vocab) for ids in samples_np(params, cfg, prefix, temperature, num_samples, rng))
    state_dict = values_from_params(params)
    return (sample_value(state_dict, cfg, vocab, prefix, temperature, rng.random(cfg.block_size))
            for _ in range(num_samples))


# chapter 22's inference loop for one name: feed BOS (then the prompt), then draw each token from the model's
# prediction until it predicts BOS (the end of a name) or the block is full
def sample_value(state_dict, cfg, vocab, prefix, temperature, u):
    model = gpt_sphere if cfg.norm == "sphere" else gpt
    BOS = len(vocab)
    keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
    token_id = BOS
    sample = [vocab[t] for t in prefix]
    with no_cycle_gc():
        for pos_id in range(cfg.block_size):
            logits = model(token_id, pos_id, keys, values, state_dict, cfg)
            if pos_id < len(prefix):  # still reading the prompt: the next token is given, not drawn
                token_id = prefix[pos_id]
                continue
            if too_cold([l.data for l in logits], temperature):  # T so low that softmax(logits / T) is one-hot
                token_id = max(range(len(logits)), key=lambda i: logits[i].data)
            else:
                probs = softmax([l / temperature for l in logits])
                token_id = int(draw([p.data for p in probs], u[pos_id]))  # as random.choices(range(V), probs)
            if token_id == BOS:
                break
            sample.append(vocab[token_id])
    return "".join(sample)


# =========================================================================== 9. main

def main(argv=None):
    """`python microgpt.py [flags]`: the steps above, in order; harness/cli.py does the flags and exit codes."""
    with Command(argv, tokenize=doc_tokens) as cmd:  # bad input or Ctrl-C: one line and an exit code
        s = cmd.settings()  # every flag, checked; with --resume or --sample-only, the checkpoint's settings
        if s.sample_only:  # a saved model: inference alone
            cmd.finish(iter_samples(s.params, s.cfg, s.vocab, **cmd.sampling()))
        else:
            docs = load_corpus(s.corpus)                                        # 1. dataset
            train_docs, val_docs = split_docs(docs, s.seed)
            vocab = build_vocab(docs)                                           # 2. tokenizer
            cfg = cmd.config(vocab, train_docs, val_docs)                       # 3. parameters: their sizes
            settings = cmd.training()  # holds --out; the header; progress, checkpoints, the planetarium
            state = train(train_docs, val_docs, vocab, cfg, **settings)         # 7. training
            if cmd.trained(state):  # else it said why: diverged, or interrupted (and saved)
                cmd.finish(iter_samples(state.params, cfg, vocab, **cmd.sampling()), state)  # 8. inference
    return cmd.exit_code


if __name__ == "__main__":
    leave(main())
