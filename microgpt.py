"""microgpt.py -- chapter 22: a tiny GPT, trained from scratch, that invents names; with an nGPT switch.

Read it top to bottom: that is the order in which things happen when you run `python microgpt.py`.

    1. dataset     load_corpus, split_docs              a list of names, 90/10 train/val
    2. tokenizer   build_vocab, encode, decode          one token per character, plus BOS
    3. parameters  GPTConfig, init_params               wte, wpe, lm_head, per layer attention and MLP
    4. model       gpt (chapter 22), gpt_sphere         one position at a time, on scalar Values
    5. loss        loss_and_grads                       mean NLL of the next character, and its gradient
    6. Adam        adam_step, retract, project_grads    one vectorized update of one flat buffer
    7. training    train (evaluate, baselines)          the loop; val loss and baselines in numpy_engine.py
    8. inference   sample                               invent new names, one character at a time
    9. main        main                                 `python microgpt.py --help`

Two normalizations (GPTConfig.norm): "rmsnorm" is the reference microgpt exactly; "sphere" keeps every
embedding, hidden state and weight vector on the unit hypersphere (nGPT, Loshchilov et al. 2025: lecture 3).
Two engines compute the same model: "value" runs this file's scalar code on value.py's Value graph (slow,
every number inspectable, steppable in pdb); "numpy" runs numpy_engine.py, the same math on arrays with an
explicit backward (fast). Both share init and Adam, so the same seed gives the same weights and samples.

What is not the chapter lives beside this file, each module with a docstring saying what it is for:
value.py (the Value engine), utils.py (chapter 21), sphere.py (lecture 3), model_config.py (GPTConfig and the
parameter layout), numpy_engine.py (forward_np / backward_np), corpora.py (the name lists), run_files.py
(checkpoints, metrics, the loss plot, Ctrl-C), cli.py (flags and messages), errors.py (exit codes).
"""
import math
import os
import signal
import sys
import threading
import time

if __name__ == "__main__":  # Ctrl-C while the modules below load (NumPy takes a moment): stop quietly, exit 130
    signal.signal(signal.SIGINT, lambda *_: (os.write(2, b"\nmicrogpt: interrupted while starting\n"), os._exit(130)))

import numpy as np

import cli
from corpora import dedupe, load_corpus
from errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_IO, EXIT_OK, InputError, WriteError
from model_config import (  # noqa: F401  (re-exported: the public API is `import microgpt as mg`)
    GPTConfig,
    alloc_params,
    check_dtype,
    check_memory,
    chunk_rows,
    effective_scales,
    flat_buffer,
    laid_out,
    n_params,
    pack_params,
    param_shapes,
    sphere_axes,
    sphere_blocks,
)
from numpy_engine import (  # noqa: F401
    GREEDY_BELOW,
    backward_np,
    baselines,
    draw,
    evaluate,
    forward_np,
    loss_and_grads_np,
    make_batch,
    not_finite,
    sample_np,
    too_cold,
)
from run_files import (  # noqa: F401
    DeferSigint,
    RunLock,
    TrainState,
    atomic_write,
    check_same_corpus,
    check_state,
    corpus_fingerprint,
    load_checkpoint,
    save_checkpoint,
)
from sphere import l2_normalize, tangent_project
from utils import linear, rmsnorm, softmax
from value import Value, no_cycle_gc

# =========================================================================== 1. dataset
# docs: a list of strings, one name each. load_corpus (corpora.py) reads the packaged name lists or a text file.

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
    """Characters -> ids (no BOS). Unknown characters are an InputError that names them."""
    index = {ch: i for i, ch in enumerate(vocab)}
    unknown = dedupe(ch for ch in text if ch not in index)
    if unknown:
        raise InputError(f"characters not in the vocabulary: {' '.join(repr(c) for c in unknown)} "
                         f"(vocabulary: {''.join(vocab)!r})")
    return [index[ch] for ch in text]


def decode(ids, vocab):
    """Ids -> string; BOS (and anything outside the vocabulary) is skipped."""
    return "".join(vocab[i] for i in ids if 0 <= i < len(vocab))


def doc_tokens(doc, vocab):
    """[BOS] + characters + [BOS]: the model learns where a name starts and where it ends."""
    bos = len(vocab)
    return [bos] + encode(doc, vocab) + [bos]


# =========================================================================== 3. parameters
# GPTConfig holds n_layer, n_embd, block_size, n_head; param_shapes(cfg) lists the state_dict keys with their
# [out, in] shapes: wte, wpe, lm_head, then per layer attn_wq, attn_wk, attn_wv, attn_wo, mlp_fc1, mlp_fc2
# (model_config.py). The weights live in one flat float64 buffer, a NumPy view per key.

def init_params(cfg, seed=42, dtype=np.float64):
    """Matrices ~ N(0, 0.08^2) drawn in key order (the reference init); sphere mode adds nGPT's scales.
    dtype: float64 (default) or float32 for the NumPy engine; float32 weights are the float64 draws, rounded.

    Sphere mode, base = 1/sqrt(C): every matrix is normalized along its embedding dimension; the scale
    vectors attn_alpha, mlp_alpha, attn_sqk and sz are stored as `base` and mlp_su as 1, and gpt_sphere
    multiplies them back so the *effective* values start at alpha_init, 1, sqrt(C) and sz_init.
    (Storing small values and rescaling is nGPT's trick to give the scales Adam steps of a useful size.)
    """
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
    state_dict = {}
    for key, array in params.items():
        rows = array.tolist()
        state_dict[key] = [Value(x) for x in rows] if array.ndim == 1 else [[Value(x) for x in row] for row in rows]
    return state_dict


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


def _abs(a):
    """|a| for a Value (d|a|/da = sign(a), taken as +1 at 0)."""
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

def _check_docs_tokens(docs_tokens, cfg):
    if not docs_tokens:
        raise ValueError("docs_tokens is empty: need at least one document")
    for tokens in docs_tokens:
        if len(tokens) < 2:
            raise ValueError(f"each document needs at least 2 tokens ([BOS, ..., BOS]), got {list(tokens)}")
        if min(tokens) < 0 or max(tokens) >= cfg.vocab_size:
            raise ValueError(f"token ids must be in [0, {cfg.vocab_size}), got {list(tokens)}")


def loss_and_grads(params, docs_tokens, cfg, engine="value", out=None):
    """Mean next-token NLL over all predicted positions of the batch, and its gradient (flat layout).
    out: a grads dict from alloc_params to write the gradient into (train reuses one); by default a new one."""
    _check_docs_tokens(docs_tokens, cfg)
    if engine == "numpy":
        return loss_and_grads_np(params, docs_tokens, cfg, out)
    if engine != "value":
        raise ValueError(f"engine must be 'value' or 'numpy', got {engine!r}")
    # The graph is acyclic, so reference counting frees it; pausing the cycle collector while it is
    # built roughly halves the step time (see value.no_cycle_gc and benchmarks/bench.py).
    with no_cycle_gc():
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
    return loss.data, grads_from_values(state_dict, cfg, out)


def grads_from_values(state_dict, cfg, out=None):
    """The .grad of every Value leaf, gathered into a grads dict with the flat-buffer layout (`out`, if given)."""
    grads = alloc_params(cfg)[1] if out is None else out
    for key, g in grads.items():
        rows = state_dict[key]
        g[...] = [v.grad for v in rows] if g.ndim == 1 else [[v.grad for v in row] for row in rows]
    return grads


# =========================================================================== 6. Adam (+ the sphere retraction)

def adam_step(flat, grad, m, v, step, num_steps, lr=0.01, beta1=0.85, beta2=0.99, eps_adam=1e-8):
    """The reference Adam update with linear lr decay, on the whole flat buffer at once (in place): each line
    is the reference's per-parameter line, applied to every parameter (m, v updated in place, no copies)."""
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
    """Sphere mode: put every matrix back on the sphere along its embedding dimension (in place): w / |w|,
    as l2_normalize_np, for rows or columns as sphere_axes says. (Matrices that lie back to back in the flat
    buffer and are normalized by rows are done as one block, sphere_blocks: the same numbers, fewer calls.)
    Returns the norms it divided by, a list of arrays: concatenated, one per unit vector in the flat layout's
    order (wte rows, wpe rows, lm_head rows, then each layer's), i.e. how far the update had pushed each off
    the sphere (1 = not at all)."""
    flat = laid_out(params, cfg)
    if flat is None:  # not one flat buffer: matrix by matrix
        blocks = [(params[key], axis) for key, axis in sphere_axes(cfg).items()]
    else:
        blocks = [(flat[o:o + rows * cols].reshape(rows, cols), axis) for o, rows, cols, axis in sphere_blocks(cfg)]
    norms = []
    for w, axis in blocks:
        vectors = w if axis == 1 else w.T  # one vector per row
        n = np.maximum(np.sqrt(np.vecdot(vectors, vectors)), 1e-12)  # their norms (vecdot: one call for all)
        w /= n[:, None] if axis == 1 else n  # each row divided by its norm, or each column by its own
        norms.append(n)
    return norms


def on_sphere(params, cfg, tol=1e-6):
    """Sphere mode: is every matrix still unit-normalized along its embedding dimension? (Not when an update
    overflowed: retracting rows of inf gives zeros or NaN, and the loss of such a model can look harmless.)"""
    return all(np.abs(np.sqrt(np.add.reduce(params[key] ** 2, axis=axis)) - 1).max() <= tol
               for key, axis in sphere_axes(cfg).items())


def project_grads(params, grads, cfg):
    """Riemannian option: keep only the part of each matrix gradient tangent to its sphere (in place)."""
    for key, axis in sphere_axes(cfg).items():
        grads[key][...] = tangent_project(params[key], grads[key], axis=axis)


# =========================================================================== 7. training

DIVERGED_NATS = 1.0   # a mean train loss this far above the uniform baseline log(V) means training has diverged
DIVERGED_WINDOW = 50  # the mean is over this many steps


def train(train_docs, val_docs, vocab, cfg, *, steps=1000, batch_size=1, lr=0.01, seed=42, engine="value",
          riemannian=False, eval_every=None, progress=None, resume=None, corpus="", dtype="float64"):
    """Train with Adam; return a TrainState (params, per-step train loss, [(step, val loss)], ...).

    Step s uses docs (s * batch_size + j) % len(train_docs), so a resumed run sees the same batches.
    Val loss (NumPy engine) is measured at step 0, every eval_every steps and at the end.
    progress(info) is called after every step with info = dict(step, steps, loss, ms_per_step, eta_s,
    val_loss or None, state); raising KeyboardInterrupt in it stops training like Ctrl-C does.
    resume: a TrainState (e.g. from load_checkpoint) to continue; `steps` may extend its plan; its
    batch_size, lr, seed, riemannian and dtype are kept (the arguments are ignored; to go on with a lower lr,
    set resume.lr first), eval_every unless given. Its docs must be the ones it was trained on (a fingerprint).
    dtype: "float64" or "float32" (NumPy engine only; the Value engine computes in float64); the weights and
    Adam's moments are kept in it.

    Training stops with state.error set (and the weights of the last step) when the loss or a gradient is
    not finite, or when it explodes while finite: when the mean train loss of the last DIVERGED_WINDOW steps
    (checked every DIVERGED_WINDOW steps and before every val loss, so before every checkpoint) is more than
    DIVERGED_NATS above both the uniform baseline log(vocab_size) and the val loss at step 0: the model then
    fits its own training data clearly worse than guessing and than its initial weights. The same rule holds
    for both engines. (A val loss is not enough: on a tiny corpus overfitting alone can lift it above uniform.)
    """
    if eval_every is None:
        eval_every = resume.eval_every if resume is not None else 100
    if engine not in ("value", "numpy"):
        raise InputError(f"engine must be 'value' or 'numpy', got {engine!r}")
    for name, value in (("steps", steps), ("batch_size", batch_size), ("eval_every", eval_every)):
        if not isinstance(value, (int, np.integer)) or value <= 0:
            raise InputError(f"{name} must be a positive integer, got {value!r}")
    if not (math.isfinite(lr) and lr > 0):
        raise InputError(f"lr must be a positive finite number, got {lr!r}")
    if riemannian and cfg.norm != "sphere":
        raise InputError("riemannian gradients need norm='sphere' (there is no sphere to be tangent to)")
    dtype = check_dtype(resume.params["wte"].dtype if resume is not None else dtype)
    if engine == "value" and dtype != np.float64:
        raise InputError(f"the Value engine computes in float64 only; train {dtype.name} with engine='numpy'")
    train_tokens = [doc_tokens(d, vocab) for d in train_docs]
    val_tokens = [doc_tokens(d, vocab) for d in val_docs]
    if resume is None:
        params = init_params(cfg, seed, dtype)
        flat = flat_buffer(params)
        state = TrainState(cfg, list(vocab), params, np.zeros_like(flat), np.zeros_like(flat), 0, steps, batch_size,
                           lr, seed, engine, riemannian, corpus, eval_every,
                           *corpus_fingerprint(train_docs, val_docs))
    else:
        state = resume
        check_state(state, "resume")
        check_same_corpus(state, train_docs, val_docs, corpus or state.corpus)
        state.corpus_sha256, state.corpus_docs = corpus_fingerprint(train_docs, val_docs)
        state.params = pack_params(state.params, cfg)
        state.steps, state.engine, state.eval_every = steps, engine, eval_every
        state.interrupted, state.error = False, ""
        if state.step > steps:
            raise InputError(f"the checkpoint is at step {state.step}, beyond the requested --steps {steps}")
        batch_size, lr, seed, riemannian = state.batch_size, state.lr, state.seed, state.riemannian
    flat = flat_buffer(state.params)
    g, grads = alloc_params(cfg, dtype)  # one gradient buffer, written by every step
    if not state.val_loss:
        state.val_loss.append((0, evaluate(state.params, val_tokens, cfg)))
    n_train, step_time, timed = len(train_tokens), 0.0, 0
    start = max(math.log(cfg.vocab_size), state.val_loss[0][1])  # guessing, or the initial weights if worse
    explode = start + DIVERGED_NATS  # a train loss above this has become clearly worse than where it started
    with DeferSigint() as sigint, np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        while state.step < steps and not sigint.hit:
            step = state.step
            batch = [train_tokens[(step * batch_size + j) % n_train] for j in range(batch_size)]
            t0 = time.perf_counter()
            try:
                loss, _ = loss_and_grads(state.params, batch, cfg, engine, out=grads)
                ok = math.isfinite(loss) and math.isfinite(np.add.reduce(g))  # a NaN or inf anywhere makes the sum so
            except (ArithmeticError, ValueError) as e:  # e.g. the Value engine refusing log(0) or exp overflow
                loss, ok = float("nan"), False
                state.error = f"step {step + 1}: {e}"
            if not ok:  # stop before the update; the caller reports it and keeps the last good checkpoint
                if not state.error:
                    state.error = f"step {step + 1}: " + (f"the loss is {loss} (not finite)" if not math.isfinite(loss)
                                                          else f"the gradient is not finite (NaN/inf); loss {loss:.4f}")
                break
            if riemannian:
                project_grads(state.params, grads, cfg)
            adam_step(flat, g, state.m, state.v, step, steps, lr)
            if cfg.norm == "sphere":
                retract(state.params, cfg)
            step_time += time.perf_counter() - t0
            timed += 1
            state.step += 1
            state.train_loss.append(loss)
            state.ms_per_step = 1000 * step_time / timed
            evaluating = state.step % eval_every == 0 or state.step == steps
            if state.step % DIVERGED_WINDOW == 0 or evaluating:  # (so no exploded weights are ever saved)
                recent = state.train_loss[-DIVERGED_WINDOW:]
                if sum(recent) / len(recent) > explode:
                    state.error = (f"step {state.step}: the mean train loss of the last {len(recent)} steps is "
                                   f"{sum(recent) / len(recent):.4g}, more than {DIVERGED_NATS:g} nat above where "
                                   f"training started ({start:.4f}: the uniform baseline log({cfg.vocab_size}) or "
                                   "the initial val loss, whichever is higher); the loss exploded")
                    break
            if evaluating and cfg.norm == "sphere" and not on_sphere(state.params, cfg):
                state.error = (f"step {state.step}: the weights are no longer on the sphere (the updates overflowed "
                               "and the retraction could not put them back)")
                break
            val = None
            if evaluating:
                val = evaluate(state.params, val_tokens, cfg)
                if not math.isfinite(val):
                    state.error = f"step {state.step}: val loss is {val} (the weights are no longer finite-valued)"
                    break
                state.val_loss.append((state.step, val))
            if progress is not None:
                try:
                    progress({"step": state.step, "steps": steps, "loss": loss, "ms_per_step": state.ms_per_step,
                              "eta_s": (steps - state.step) * state.ms_per_step / 1000, "val_loss": val,
                              "state": state})
                except KeyboardInterrupt:
                    sigint.hit = True
        state.interrupted = sigint.hit and state.step < steps
    return state


# =========================================================================== 8. inference

def encode_prompt(prompt, vocab, cfg):
    """The prompt's ids; InputError naming unknown characters, or if it leaves no room to generate."""
    prefix = encode(prompt, vocab)
    if len(prefix) >= cfg.block_size:
        raise InputError(f"prompt {prompt!r} has {len(prefix)} characters; it must be shorter than block_size "
                         f"{cfg.block_size}")
    return prefix


SAMPLE_CHUNK = 1024    # the NumPy engine samples at most this many names at once (fewer for a big model)


def sample(params, cfg, vocab, num_samples=20, temperature=0.5, prompt="", seed=42, engine="numpy"):
    """Invent num_samples new docs: start from BOS (+ prompt), draw each next token from
    softmax(logits / temperature), stop at BOS or after block_size positions.

    engine="value" runs chapter 22's inference loop (sample_value: gpt() one position at a time, one sample
    at a time); engine="numpy" advances a chunk of samples together (sample_np). Both draw the token at
    position pos of sample i with the same uniform number u[i, pos] (row i of one seeded stream), so for the
    same parameters, prompt, temperature and seed they return the same samples. Where the temperature is so
    low that softmax(logits / T) is one-hot anyway and computing it would overflow (too_cold), the draw is the
    argmax. The distribution is computed in float64 also for float32 weights.
    """
    return list(iter_samples(params, cfg, vocab, num_samples, temperature, prompt, seed, engine))


def iter_samples(params, cfg, vocab, num_samples=20, temperature=0.5, prompt="", seed=42, engine="numpy"):
    """sample(), one name at a time (the command line prints them as they come; memory stays bounded)."""
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise InputError(f"temperature must be a positive number, got {temperature!r}")
    if not isinstance(num_samples, int) or num_samples <= 0:
        raise InputError(f"num_samples must be a positive integer, got {num_samples!r}")
    if engine not in ("value", "numpy"):
        raise InputError(f"engine must be 'value' or 'numpy', got {engine!r}")
    prefix = encode_prompt(prompt, vocab, cfg)
    rng = np.random.default_rng(seed)
    if engine == "value":
        state_dict = values_from_params(params)
        return (sample_value(state_dict, cfg, vocab, prefix, temperature, rng.random(cfg.block_size))
                for _ in range(num_samples))
    rows = chunk_rows(cfg, most=SAMPLE_CHUNK)  # memory stays bounded, whatever num_samples is
    return (decode(ids, vocab) for start in range(0, num_samples, rows)  # rows of one stream, in order
            for ids in sample_np(params, cfg, len(vocab), prefix, temperature,
                                 rng.random((min(rows, num_samples - start), cfg.block_size))))


# chapter 22's inference loop, for one sample: feed BOS (then the prompt), and from then on draw each token
# from the model's prediction, until it predicts BOS (the end of a name) or the block is full.
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
            z = np.array([l.data for l in logits])
            if not np.isfinite(z).all():
                raise not_finite(z)
            if too_cold(z, temperature):
                token_id = int(np.argmax(z))
            else:
                probs = softmax([l / temperature for l in logits])
                token_id = int(draw(np.array([p.data for p in probs]), u[pos_id]))
            if token_id == BOS:
                break
            sample.append(vocab[token_id])
    return "".join(sample)


# =========================================================================== 9. main

def main(argv=None):
    """python microgpt.py: the steps above, in order, driven by flags (cli.py). Returns the exit code (errors.py)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)  # from here on Ctrl-C is a KeyboardInterrupt
    if sys.stdout is None:  # started with stdout closed (`>&-`): nowhere to print the names
        cli.say("microgpt: error: cannot write to standard output: it is closed")
        return EXIT_IO
    sys.stdout.reconfigure(errors="backslashreplace")  # names in any script print on any terminal encoding
    args = cli.build_parser().parse_args(argv)
    try:
        return run(args)
    except InputError as e:
        cli.say(f"microgpt: error: {e}")
        return EXIT_BAD_INPUT
    except WriteError as e:
        cli.say(f"microgpt: error: {e}")
        return EXIT_IO
    except KeyboardInterrupt:  # Ctrl-C outside the training loop (loading, sampling, writing), or a second one
        cli.say("\nmicrogpt: interrupted; stopped without saving (files already written are complete: writes are "
                "atomic)")
        return EXIT_INTERRUPTED
    except OSError as e:
        if e.filename:  # a file of the run (the folder's lock, a temp file) that could not be written
            cli.say(f"microgpt: error: cannot write {e.filename!r}: {e.strerror or e}")
            return EXIT_IO
        # writing to stdout failed: a closed pipe (`| head`) or a full device (> /dev/full)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush does not fail again
        if not isinstance(e, BrokenPipeError):  # the reader of a pipe left on purpose: stop quietly
            cli.say(f"microgpt: error: cannot write to standard output: {e.strerror or e}")
        return EXIT_IO


def run(args):
    cli.check_args(args)
    if args.sample_only:  # inference from a saved model: section 8 alone
        state = load_checkpoint(args.checkpoint, cli.max_gb(args))
        print_samples(state.params, state.cfg, state.vocab, args, state.seed if args.seed is None else args.seed,
                      args.engine or state.engine)
        return EXIT_OK
    ckpt_path = cli.resume_path(args) if args.resume else None
    resume = load_checkpoint(ckpt_path, cli.max_gb(args)) if args.resume else None
    s = cli.settings(args, resume, ckpt_path)

    docs = load_corpus(s.corpus)                                             # 1. dataset
    vocab = build_vocab(docs)                                                # 2. tokenizer
    if resume is not None and vocab != resume.vocab:
        raise InputError(f"corpus {s.corpus!r} no longer has the checkpoint's vocabulary; cannot resume")
    cfg = resume.cfg if resume is not None else GPTConfig(                   # 3. parameters
        len(vocab) + 1, s.n_embd, s.n_head, s.n_layer, s.block_size, s.norm, s.alpha_init, s.sz_init)
    if s.riemannian and cfg.norm != "sphere":
        raise InputError("--riemannian needs --norm sphere (there is no sphere to be tangent to)")
    encode_prompt(args.prompt, vocab, cfg)  # fail on a bad prompt now, not after training
    train_docs, val_docs = split_docs(docs, s.seed)
    if resume is not None:
        check_same_corpus(resume, train_docs, val_docs, s.corpus)
        resume.lr = s.lr  # the checkpoint's, or a lower --lr
    if s.engine == "value" and s.dtype != "float64":
        raise InputError(f"this run's weights are {s.dtype}; the value engine computes in float64 only: use "
                         "--engine numpy")
    check_memory(cfg, s.batch_size, s.engine, cli.max_gb(args), s.dtype, (len(docs), sum(map(len, docs))))
    base = baselines([doc_tokens(d, vocab) for d in train_docs], [doc_tokens(d, vocab) for d in val_docs], cfg)

    RunLock.check_free(s.out)  # (both checked before the lock is taken too, so that a refusal changes nothing)
    cli.own_checkpoint(s.out, resume, ckpt_path)
    with RunLock(s.out) as lock:  # everything is checked; now this run holds --out (or is refused: exit 2)
        ckpt = cli.own_checkpoint(s.out, resume, ckpt_path)
        lock.clean()
        cli.print_header(s, docs, train_docs, val_docs, cfg, base, resume, lock.notice)
        progress = cli.Progress(s.steps, base, ckpt, (ckpt_path, resume.step) if resume is not None else None)
        try:                                                                 # 7. training
            state = train(train_docs, val_docs, vocab, cfg, steps=s.steps, batch_size=s.batch_size, lr=s.lr,
                          seed=s.seed, engine=s.engine, riemannian=s.riemannian, eval_every=s.eval_every,
                          progress=progress, resume=resume, corpus=s.corpus, dtype=s.dtype)
        except WriteError as e:  # a checkpoint could not be saved (disk full?): the one before it is intact
            return cli.report_write_error(e, progress, s)
        progress.end()
        if state.error:
            return cli.report_divergence(state, progress, s)
        if state.interrupted:
            return cli.save_interrupted(state, progress, s, args)
        cli.print_final(state, base)
        samples = print_samples(state.params, cfg, vocab, args, s.seed, s.engine)  # 8. inference
        if s.out:
            cli.write_run_files(s, state, base, samples, docs, train_docs, val_docs)
    return EXIT_OK


def print_samples(params, cfg, vocab, args, seed, engine):
    """Sample and print the names as they come (a million of them need no more memory than one chunk); returns
    the first KEEP_SAMPLES for metrics.json."""
    if args.temperature < GREEDY_BELOW:
        print(f"note: temperature {args.temperature:g} is below {GREEDY_BELOW:g}: taking the most likely character "
              "each time (greedy)")
    names = iter_samples(params, cfg, vocab, args.num_samples, args.temperature, args.prompt, seed, engine)
    return cli.print_samples(names, args.temperature, args.prompt)


if __name__ == "__main__":
    sys.exit(main())
