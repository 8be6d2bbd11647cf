"""microgpt.py -- chapter 22: a tiny GPT, trained from scratch, invents names.

norm="rmsnorm" is the reference microgpt; "sphere" keeps every vector on the unit
hypersphere (nGPT, lecture 3). engine="value" runs this file on value.py's Values;
"numpy" runs numpy_engine.py, which mirrors gpt() and gpt_sphere() on arrays (an edit
to them runs on "value" only; a numpy run says so). main() adds harness/.
"""
if __name__ == "__main__":  # Ctrl-C as NumPy loads, or a Python without it: one line, no traceback
    from harness import quiet_startup
    quiet_startup("microgpt", "run [flags] (it installs them into .venv)")

import math
import time

import numpy as np

from checks import check_known, check_loss_args, check_names_fit, check_sampling, check_split
from checks import check_training
from corpora import load_corpus
from model_config import HUGE_GRADIENT, TrainState, alloc_params, flat_buffer
from model_config import GPTConfig, sphere_axes  # noqa: F401  (GPTConfig: the public API)
from numpy_engine import baselines, draw, evaluate, loss_and_grads_np, samples_np, too_cold
from numpy_engine import gpt_backward, gpt_forward  # noqa: F401  (the public API)
from sphere import l2_normalize, tangent_project
from utils import linear, rmsnorm, softmax
from value import NumericError, Value, no_cycle_gc

# ================================================================== 1. dataset
def split_docs(docs, seed=42, val_fraction=0.1):
    """Seeded shuffle, then the last 10% (at least one doc) is the validation set."""
    order = np.random.default_rng(check_split(docs, seed, val_fraction)).permutation(len(docs))
    shuffled = [docs[i] for i in order]
    n_val = max(1, int(len(docs) * val_fraction))
    return shuffled[:-n_val], shuffled[-n_val:]


# ================================================================== 2. tokenizer
def build_vocab(docs):
    """The sorted unique characters: id i is vocab[i]; BOS (start/end) is len(vocab)."""
    return sorted(set("".join(docs)))


def encode(text, vocab):
    """Characters -> ids (no BOS); an unknown character is an InputError naming it."""
    index = {ch: i for i, ch in enumerate(vocab)}
    check_known(text, index)
    return [index[ch] for ch in text]


def decode(ids, vocab):
    """Ids -> string; BOS (and anything outside the vocabulary) is skipped."""
    return "".join(vocab[i] for i in ids if 0 <= i < len(vocab))


def doc_tokens(doc, vocab):
    """[BOS] + characters + [BOS]: the model learns where a name starts and ends."""
    return [len(vocab)] + encode(doc, vocab) + [len(vocab)]


# ================================================================== 3. parameters
def init_params(cfg, seed=42, dtype=np.float64):
    """Matrices ~ N(0, 0.08^2) in key order, views of one buffer. Sphere: unit vectors;
    nGPT's scales stored at 1/sqrt(C) (mlp_su at 1), scaled back up in gpt_sphere."""
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
    """The reference state_dict: key -> a matrix as rows of Values (a vector: a row)."""
    return {key: [[Value(x) for x in row] for row in a.tolist()] if a.ndim == 2 else
            [Value(x) for x in a.tolist()] for key, a in params.items()}


# ================================================================== 4. model
# chapter 22: the reference forward pass for ONE position. keys/values are the KV cache:
# each call appends this position's k and v and attends over all cached so far (causal).
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
            attn_logits = [sum(q_h[j] * k_h[t][j] for j in range(head_dim)) / head_dim**0.5
                           for t in range(len(k_h))]
            attn_weights = softmax(attn_logits)
            head_out = [sum(attn_weights[t] * v_h[t][j] for t in range(len(v_h)))
                        for j in range(head_dim)]
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


# Lecture 3: the same network, every vector on the unit sphere (nGPT). Diff it with
# gpt(): rmsnorm becomes l2_normalize; `x + f(x)`, a step alpha from h to Norm(f(h)).
def gpt_sphere(token_id, pos_id, keys, values, state_dict, cfg):
    n_layer, n_head, head_dim = cfg.n_layer, cfg.n_head, cfg.head_dim
    base = cfg.n_embd ** -0.5  # the scales are stored small: times (wanted initial value / base)
    tok_emb = state_dict['wte'][token_id]
    pos_emb = state_dict['wpe'][pos_id]
    h = l2_normalize([t + p for t, p in zip(tok_emb, pos_emb)])  # a point on the sphere

    for li in range(n_layer):
        # 1) attention: each head's q and k are unit vectors times a learnable s_qk:
        #    a logit is a scaled cosine, times sqrt(head_dim) as cosines are small
        sqk = [s * (1 / base) for s in state_dict[f'layer{li}.attn_sqk']]
        q = linear(h, state_dict[f'layer{li}.attn_wq'])
        k = linear(h, state_dict[f'layer{li}.attn_wk'])
        v = linear(h, state_dict[f'layer{li}.attn_wv'])
        heads = range(0, n_head * head_dim, head_dim)
        q = [s * qi for hs in heads
             for s, qi in zip(sqk[hs:hs + head_dim], l2_normalize(q[hs:hs + head_dim]))]
        k = [s * ki for hs in heads
             for s, ki in zip(sqk[hs:hs + head_dim], l2_normalize(k[hs:hs + head_dim]))]
        keys[li].append(k)
        values[li].append(v)
        x_attn = []
        for hd in range(n_head):
            hs = hd * head_dim
            q_h = q[hs:hs + head_dim]
            k_h = [ki[hs:hs + head_dim] for ki in keys[li]]
            v_h = [vi[hs:hs + head_dim] for vi in values[li]]
            attn_logits = [sum(q_h[j] * k_h[t][j] for j in range(head_dim)) * head_dim**0.5
                           for t in range(len(k_h))]
            attn_weights = softmax(attn_logits)
            head_out = [sum(attn_weights[t] * v_h[t][j] for t in range(len(v_h)))
                        for j in range(head_dim)]
            x_attn.extend(head_out)
        h_attn = linear(x_attn, state_dict[f'layer{li}.attn_wo'])
        # h <- Norm(Norm(h) + alpha (Norm(h_A) - Norm(h))): a step towards the output
        alpha = [abs(a) * (cfg.alpha_init / base) for a in state_dict[f'layer{li}.attn_alpha']]
        h_n, h_a = l2_normalize(h), l2_normalize(h_attn)
        h = l2_normalize([hi + ai * (hai - hi) for hi, ai, hai in zip(h_n, alpha, h_a)])
        # 2) MLP, the hidden pre-activation scaled by s_u (times sqrt(C): h is unit)
        su = [s * cfg.n_embd**0.5 for s in state_dict[f'layer{li}.mlp_su']]
        u = [ui * si for ui, si in zip(linear(h, state_dict[f'layer{li}.mlp_fc1']), su)]
        u = [ui.relu() for ui in u]
        h_mlp = linear(u, state_dict[f'layer{li}.mlp_fc2'])
        alpha = [abs(a) * (cfg.alpha_init / base) for a in state_dict[f'layer{li}.mlp_alpha']]
        h_n, h_m = l2_normalize(h), l2_normalize(h_mlp)
        h = l2_normalize([hi + ai * (hmi - hi) for hi, ai, hmi in zip(h_n, alpha, h_m)])

    # logits: cosines with the unit lm_head rows; s_z gives them the range softmax needs
    sz = [s * (cfg.sz_init / base) for s in state_dict['sz']]
    logits = [l * s for l, s in zip(linear(h, state_dict['lm_head']), sz)]
    return logits


# ================================================================== 5. loss
def loss_and_grads(params, docs_tokens, cfg, engine="value", out=None):
    """Mean next-token NLL over the batch's predicted positions, and its gradient (a
    dict of arrays, into `out` if given). engine="numpy": the same numbers on arrays."""
    check_loss_args(params, docs_tokens, cfg, engine, out)  # weights fit cfg, ids the vocabulary
    if engine == "numpy":
        return loss_and_grads_np(params, docs_tokens, cfg, out)
    with no_cycle_gc():  # an acyclic graph: refcounting frees it; the cycle collector only costs
        return loss_and_grads_value(params, docs_tokens, cfg, out)


# chapter 22's training step: each doc forward through the KV cache, then backward()
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
    loss = (1 / len(losses)) * sum(losses)  # final average loss over the positions. May it be low.
    loss.backward()
    grads = alloc_params(cfg)[1] if out is None else out
    for key, g in grads.items():  # every parameter's .grad, into an array of its shape
        rows = state_dict[key]
        g[...] = [p.grad for p in rows] if g.ndim == 1 else [[p.grad for p in row] for row in rows]
    return loss.data, grads


# ============================================================== 6. Adam (+ retraction)
def adam_step(flat, grad, m, v, step, num_steps, lr=0.01, beta1=0.85, beta2=0.99, eps_adam=1e-8):
    """The reference's Adam with linear lr decay: flat, grad, m and v hold a number per
    parameter, so each line is the reference's per-parameter line, on all at once."""
    lr_t = lr * (1 - step / num_steps)  # linear learning rate decay
    m[:] = beta1 * m + (1 - beta1) * grad
    v[:] = beta2 * v + (1 - beta2) * grad ** 2
    m_hat = m / (1 - beta1 ** (step + 1))
    v_hat = v / (1 - beta2 ** (step + 1))
    flat -= lr_t * m_hat / (v_hat ** 0.5 + eps_adam)


def retract(params, cfg):
    """Sphere mode: each matrix back on the sphere along its embedding axis, w / |w|, in
    place. Returns the norms it divided by: how far the update pushed each one off."""
    norms = []
    for key, axis in sphere_axes(cfg).items():
        vectors = params[key] if axis == 1 else params[key].T  # unit rows, or unit columns
        norm = np.sqrt(np.vecdot(vectors, vectors))  # each row's |v|
        vectors /= norm[:, None]
        norms.append(norm)
    return norms


def project_grads(params, grads, cfg):
    """Riemannian option: keep only each matrix gradient's tangent part (in place)."""
    for key, axis in sphere_axes(cfg).items():
        grads[key][...] = tangent_project(params[key], grads[key], axis=axis)


# ================================================================== 7. training
def train(train_docs, val_docs, vocab, cfg, *, steps=1000, lr=0.01, batch_size=1, seed=42,
          engine="value", dtype="float64", riemannian=False, eval_every=100, resume=None,
          observer=None):
    """Train with Adam; returns a TrainState (.params, .train_loss, .val_loss, ...).
    resume: a state to go on from, in a copy. observer: as harness/run.py's, told of
    each update (True: stop); without one, each step's loss is printed. Divergence
    (log(0), overflow, NaN) raises NumericError; the observer has the last good step."""
    settings = dict(steps=steps, lr=lr, batch_size=batch_size, seed=seed, engine=engine,
                    dtype=dtype, riemannian=riemannian, eval_every=eval_every)
    settings = check_training(cfg, vocab, train_docs, val_docs, settings, resume)  # or InputError
    docs = [doc_tokens(doc, vocab) for doc in train_docs]  # the data: each document as token ids
    val_tokens = [doc_tokens(doc, vocab) for doc in val_docs]
    if resume is None:
        params = init_params(cfg, seed, dtype)  # the weights
        flat = flat_buffer(params)  # all of them in one array, a view per key: what Adam updates
        m, v = np.zeros_like(flat), np.zeros_like(flat)  # Adam's moments, one per parameter
        state = TrainState(cfg, list(vocab), params, m, v, **settings)
    else:  # a copy of the state to continue: its weights, moments, step and losses
        state = resume.copy(**settings)
        params, flat, m, v = state.params, flat_buffer(state.params), state.m, state.v
    grad, grads = alloc_params(cfg, flat.dtype)  # the gradients: one buffer, a view per key
    if not state.val_loss:
        state.val_loss.append((0, evaluate(params, val_tokens, cfg)))  # before training
    for step in range(state.step, steps):
        started = time.perf_counter()
        batch = [docs[(step * batch_size + j) % len(docs)] for j in range(batch_size)]  # its docs
        loss, _ = loss_and_grads(params, batch, cfg, engine, out=grads)  # forward and backward
        if not (math.isfinite(loss) and float(np.abs(grad).max()) < HUGE_GRADIENT):  # or NaN
            raise NumericError(f"the loss ({loss}) or a gradient is not finite")  # (diverged)
        if observer is not None and observer.before_update(state, loss, grad):
            break
        if riemannian:
            project_grads(params, grads, cfg)
        adam_step(flat, grad, m, v, step, steps, lr)
        drift = retract(params, cfg) if cfg.norm == "sphere" else None  # back onto the sphere
        state.seconds += time.perf_counter() - started  # (state.ms_per_step: their mean)
        state.step = step + 1
        state.train_loss.append(loss)
        if state.step % eval_every == 0 or state.step == steps:
            state.val_loss.append((state.step, evaluate(params, val_tokens, cfg)))
        if observer is None:  # the reference's line
            print(f"step {state.step:4d} / {steps:4d} | loss {loss:.4f}", end="\r")
        elif observer.after_update(state, loss, drift):
            break
    return state


# ================================================================== 8. inference
def sample(params, cfg, vocab, num_samples=20, temperature=0.5, prompt="", seed=42, engine="numpy"):
    """A list of num_samples new names (iter_samples gives them one at a time)."""
    check_names_fit(num_samples, cfg)  # the list holds every name at once: it must fit in memory
    return list(iter_samples(params, cfg, vocab, num_samples, temperature, prompt, seed, engine))


def iter_samples(params, cfg, vocab, num_samples=20, temperature=0.5, prompt="", seed=42,
                 engine="numpy"):
    """New names, one at a time: chapter 22's loop (sample_value), or a chunk at once
    (samples_np). Both draw position p of name i with one uniform number u[i, p]."""
    temperature = check_sampling(prompt, vocab, cfg, num_samples, temperature, seed, engine, params)
    prefix, rng = encode(prompt, vocab), np.random.default_rng(seed)
    if engine == "numpy":
        names = samples_np(params, cfg, prefix, temperature, num_samples, rng)
        return (decode(ids, vocab) for ids in names)
    state_dict = values_from_params(params)
    return (sample_value(state_dict, cfg, vocab, prefix, temperature, rng.random(cfg.block_size))
            for _ in range(num_samples))


# chapter 22's inference loop for one name: feed BOS (then the prompt), then draw each
# token from the prediction until it predicts BOS (a name's end) or the block is full
def sample_value(state_dict, cfg, vocab, prefix, temperature, u):
    model = gpt_sphere if cfg.norm == "sphere" else gpt
    keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
    token_id = BOS = len(vocab)
    sample = [vocab[t] for t in prefix]
    with no_cycle_gc():
        for pos_id in range(cfg.block_size):
            logits = model(token_id, pos_id, keys, values, state_dict, cfg)
            if pos_id < len(prefix):  # still reading the prompt: the next token is given, not drawn
                token_id = prefix[pos_id]
                continue
            if too_cold([l.data for l in logits], temperature):  # softmax(logits / T) is one-hot
                token_id = max(range(len(logits)), key=lambda i: logits[i].data)
            else:
                probs = softmax([l / temperature for l in logits])
                token_id = int(draw([p.data for p in probs], u[pos_id]))  # as random.choices
            if token_id == BOS:
                break
            sample.append(vocab[token_id])
    return "".join(sample)


# ================================================================== 9. main
def main(argv=None):
    """`python microgpt.py [flags]`: the sections above, in order, inside harness/."""
    from harness import cli, messages
    from harness.run import Run
    with cli.Shell("microgpt") as shell:  # bad input, a failed write, Ctrl-C: one line, exit code
        args = cli.parse_args(argv)  # every flag, checked by its rule
        if args.sample_only:  # a saved model: inference alone (section 8)
            return cli.sample_checkpoint(args, iter_samples, shell)
        resume, opts = cli.run_settings(args)  # the flags over the defaults or the checkpoint's
        docs = load_corpus(opts.corpus)                                      # 1. dataset
        train_docs, val_docs = split_docs(docs, opts.seed)
        vocab = build_vocab(docs)                                            # 2. tokenizer
        cfg = cli.model_config(opts, vocab, resume)                          # 3. parameters
        cli.check_run(opts, cfg, vocab, train_docs, val_docs, resume, args, init_params)
        cli.note_gpt_edits(opts, cfg, gpt_sphere if cfg.norm == "sphere" else gpt, init_params)
        if cli.finished(resume, opts, args, iter_samples):  # no step left: files stay as they were
            return shell.exit_code
        base = baselines([doc_tokens(d, vocab) for d in train_docs],
                         [doc_tokens(d, vocab) for d in val_docs], cfg)
        with cli.RunFolder(opts, resume, shell) as folder:  # holds --out until the run ends
            messages.print_header(opts, cfg, base, resume, folder.notices)
            settings = dict(opts.training(), resume=resume)
            with Run(opts, cfg, vocab, base, folder) as run:                 # 7. training
                try:
                    state = train(train_docs, val_docs, vocab, cfg, **settings, observer=run)
                except NumericError as e:  # log(0), overflow, NaN: the model diverged
                    state = run.diverged(e, resume)  # the last good state, or raised on
            shell.exit_code = messages.report(state, run, folder, opts, args)
            if shell.exit_code == 0:                                         # 8. inference
                samples = iter_samples(state.params, cfg, vocab, **opts.sampling())
                names = messages.print_samples(samples, opts.temperature, opts.prompt, opts.corpus)
                shell.exit_code = folder.write_run_files(state, names, base)
    return shell.exit_code


if __name__ == "__main__":
    from harness import leave
    leave(main())
