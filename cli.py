"""cli.py -- the command line of microgpt.py: its flags, their checks, and what a run prints while it trains.

`python microgpt.py --help` lists the flags. This module parses and checks them, settles a run's settings (the
flags over DEFAULTS for a new run, the checkpoint's own settings on --resume) and formats the output: the header,
the progress line with its ETA, the samples, the messages for a diverged or interrupted run. microgpt.main()
runs the chapter's steps with these settings; nothing here trains or samples.
"""
import argparse
import math
import os
import sys
from dataclasses import asdict
from types import SimpleNamespace

from corpora import corpus_id
from errors import InputError
from run_files import save_checkpoint

DEFAULTS = {"norm": "rmsnorm", "n_embd": 16, "n_head": 4, "n_layer": 1, "block_size": 16, "alpha_init": 0.05,
            "sz_init": 1.0, "engine": "value", "steps": 1000, "batch_size": 1, "lr": 0.01, "seed": 42,
            "riemannian": False, "corpus": "names", "eval_every": 100}
MODEL_FLAGS = ("norm", "n_embd", "n_head", "n_layer", "block_size", "alpha_init", "sz_init")
KEPT_ON_RESUME = MODEL_FLAGS + ("batch_size", "lr", "seed", "riemannian", "corpus")


def build_parser():
    p = argparse.ArgumentParser(
        prog="microgpt.py",
        description="Train a tiny GPT on names and sample new ones. --norm sphere switches to the nGPT "
                    "hypersphere model; --engine numpy runs the same math vectorized (fast).",
        epilog="examples:\n  python microgpt.py\n  python microgpt.py --engine numpy --steps 3000 --out runs/np\n"
               "  python microgpt.py --norm sphere --engine numpy --out runs/sphere\n"
               "  python microgpt.py --resume --out runs/np --steps 5000\n"
               "  python microgpt.py --sample-only --checkpoint runs/np/checkpoint.npz --prompt ma",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("model")
    g.add_argument("--norm", choices=["rmsnorm", "sphere"], help="rmsnorm (reference, default) or sphere (nGPT)")
    g.add_argument("--n-embd", type=int, help="embedding width C (default 16)")
    g.add_argument("--n-head", type=int, help="attention heads; must divide n_embd (default 4)")
    g.add_argument("--n-layer", type=int, help="transformer blocks (default 1)")
    g.add_argument("--block-size", type=int, help="max positions per doc; longer docs are cropped (default 16)")
    g.add_argument("--alpha-init", type=float, help="sphere: initial eigen learning rate alpha (default 0.05)")
    g.add_argument("--sz-init", type=float, help="sphere: initial logit scale s_z (default 1.0)")
    g = p.add_argument_group("training")
    g.add_argument("--engine", choices=["value", "numpy"], help="value: scalar autograd graph (default, slow); "
                   "numpy: vectorized twins with explicit backward. Sampling uses the same engine")
    g.add_argument("--steps", type=int, help="optimizer steps (default 1000; with --resume: the checkpoint's plan)")
    g.add_argument("--batch-size", type=int, help="docs per step (default 1)")
    g.add_argument("--lr", type=float, help="Adam learning rate, decays linearly to 0 (default 0.01)")
    g.add_argument("--seed", type=int, help="seed for the train/val split, init and sampling (default 42)")
    g.add_argument("--riemannian", action="store_true", default=None,
                   help="sphere only: project matrix gradients onto the tangent space before Adam")
    g.add_argument("--eval-every", type=int, help="val loss (and checkpoint with --out) every N steps (default 100)")
    g.add_argument("--corpus", help="'names' (default), 'jp-names', or a UTF-8 text file with one doc per line")
    g = p.add_argument_group("files")
    g.add_argument("--out", help="directory for checkpoint.npz, metrics.json and loss.png "
                   "(without --out, Ctrl-C still saves to out/checkpoint.npz, or the next free checkpoint-N.npz)")
    g.add_argument("--resume", action="store_true", help="continue from --checkpoint (default OUT/checkpoint.npz)")
    g.add_argument("--checkpoint", help="checkpoint path for --resume or --sample-only")
    g.add_argument("--sample-only", action="store_true", help="load --checkpoint and only sample")
    g = p.add_argument_group("sampling")
    g.add_argument("--num-samples", type=int, default=20, help="names to generate (default 20)")
    g.add_argument("--temperature", type=float, default=0.5, help="> 0; lower is more conservative (default 0.5)")
    g.add_argument("--prompt", default="", help="prefix every sample continues (default: empty)")
    return p


def flag(name):
    return "--" + name.replace("_", "-")


def check_args(a):
    """The checks argparse cannot do: ranges and combinations of flags. InputError names the flag."""
    for name in ("n_embd", "n_head", "n_layer", "block_size", "steps", "batch_size", "num_samples", "eval_every"):
        value = getattr(a, name)
        if value is not None and value <= 0:
            raise InputError(f"{flag(name)} must be a positive integer, got {value}")
    for name in ("lr", "alpha_init", "sz_init", "temperature"):
        value = getattr(a, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"{flag(name)} must be a positive number, got {value}")
    if a.seed is not None and a.seed < 0:
        raise InputError(f"--seed must be a non-negative integer, got {a.seed}")
    if a.sample_only and not a.checkpoint:
        raise InputError("--sample-only needs --checkpoint PATH")
    if a.sample_only and a.resume:
        raise InputError("--sample-only and --resume exclude each other (sample from a checkpoint, or train on)")
    if a.checkpoint and not (a.resume or a.sample_only):
        raise InputError("--checkpoint is only read with --resume or --sample-only (to train from scratch, omit it)")
    if a.resume and not (a.checkpoint or a.out):
        raise InputError("--resume needs --checkpoint PATH or --out DIR (containing checkpoint.npz)")
    if a.out and os.path.exists(a.out) and not os.path.isdir(a.out):
        raise InputError(f"--out {a.out!r} exists and is not a directory")


def resume_path(a):
    """The checkpoint --resume reads: --checkpoint, or checkpoint.npz in --out."""
    return a.checkpoint or os.path.join(a.out, "checkpoint.npz")


def settings(a, resume=None, ckpt_path=None):
    """The run's settings as one namespace: the flags over DEFAULTS for a new run; on --resume the checkpoint's
    model, data and optimizer settings (a flag that contradicts them is an InputError), and the flags only for
    --steps, --engine and --eval-every."""
    if resume is None:
        s = {k: (getattr(a, k) if getattr(a, k) is not None else d) for k, d in DEFAULTS.items()}
        s["corpus"] = corpus_id(s["corpus"])
        return SimpleNamespace(**s, out=a.out)
    kept = {**asdict(resume.cfg), "batch_size": resume.batch_size, "lr": resume.lr, "seed": resume.seed,
            "riemannian": resume.riemannian, "corpus": corpus_id(resume.corpus)}
    given = {k: getattr(a, k) for k in KEPT_ON_RESUME}
    given["corpus"] = a.corpus and corpus_id(a.corpus)  # the same file, however it is spelled, is no conflict
    conflicts = [flag(k) for k, value in given.items() if value is not None and value != kept[k]]
    if conflicts:
        raise InputError(f"{', '.join(conflicts)} {'differs' if len(conflicts) == 1 else 'differ'} from the "
                         f"checkpoint {ckpt_path!r}; a resumed run keeps "
                         "its model, data and optimizer settings (only --steps, --engine and output flags change)")
    return SimpleNamespace(**{k: kept[k] for k in KEPT_ON_RESUME},
                           steps=a.steps if a.steps is not None else resume.steps,
                           engine=a.engine or resume.engine, eval_every=a.eval_every or resume.eval_every,
                           out=a.out or os.path.dirname(os.path.abspath(ckpt_path)))


def fmt_time(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def print_header(corpus, docs, train_docs, val_docs, cfg, n_params, engine, riemannian, base, cropped):
    print(f"corpus {corpus!r}: {len(docs)} docs ({len(train_docs)} train / {len(val_docs)} val), "
          f"vocab size {cfg.vocab_size} ({cfg.vocab_size - 1} characters + BOS)")
    if cropped:
        print(f"note: {cropped} docs are longer than block_size {cfg.block_size} and are cropped to it")
    print(f"model: norm={cfg.norm}, n_layer={cfg.n_layer}, n_embd={cfg.n_embd}, n_head={cfg.n_head}, "
          f"block_size={cfg.block_size}, {n_params} parameters; engine={engine}" + (", riemannian" if riemannian
                                                                                    else ""))
    print("baselines (val loss): " + ", ".join(f"{k} {v:.4f}" for k, v in base.items()))


class Progress:
    """train()'s progress callback: a live line on a terminal (a plain line every tenth of the run otherwise),
    a line that stays at every val loss, and with --out a checkpoint at every val loss.

    last_good is the checkpoint this run could fall back to if training diverges: (path, step) of the one it
    resumed from, then of each one it saves.
    """

    def __init__(self, steps, base, ckpt=None, last_good=None):
        self.base, self.ckpt, self.last_good = base, ckpt, last_good
        self.tty = sys.stdout.isatty()
        self.every = max(1, steps // 10)

    def __call__(self, info):
        line = (f"step {info['step']:4d}/{info['steps']} | loss {info['loss']:.4f} | {info['ms_per_step']:.2f} ms/step"
                f" | ETA {fmt_time(info['eta_s'])}")
        base = self.base
        if info["val_loss"] is not None:  # a line that stays: val loss beside the baselines it should beat
            print(("\r" if self.tty else "") + line + f" | val loss {info['val_loss']:.4f} (bigram "
                  f"{base['bigram']:.4f}, unigram {base['unigram']:.4f}, uniform {base['uniform']:.4f})", flush=True)
            if self.ckpt:
                save_checkpoint(self.ckpt, info["state"])
                self.last_good = (self.ckpt, info["step"])
        elif self.tty:  # a live line, overwritten in place
            print("\r" + line + "   ", end="", flush=True)
        elif info["step"] % self.every == 0:
            print(line, flush=True)

    def end(self):
        if self.tty:
            print()


def divergence_message(state, last_good, out, steps):
    # Nothing new is written: the weights before the bad step would only repeat it on --resume (which keeps
    # --lr), so the fallback is the last checkpoint of this run (or the one it resumed from), left as it was.
    if last_good is not None:
        kept = f"the last good checkpoint is {last_good[0]!r} (step {last_good[1]})"
    elif out:
        first = min(state.eval_every, steps)
        kept = f"no checkpoint was written (it diverged before the first one, due at step {first})"
    else:
        kept = "no checkpoint was written (no --out)"
    return f"microgpt: error: training diverged: {state.error}. Stopped; {kept}. Try a smaller --lr."


def interrupt_checkpoint(out):
    """Where Ctrl-C saves: OUT/checkpoint.npz; without --out, out/checkpoint.npz or the next free checkpoint-N.npz
    (an earlier interrupted run's file is kept)."""
    if out:
        return os.path.join(out, "checkpoint.npz")
    os.makedirs("out", exist_ok=True)
    path, n = os.path.join("out", "checkpoint.npz"), 1
    while os.path.exists(path):
        n += 1
        path = os.path.join("out", f"checkpoint-{n}.npz")
    return path


def print_samples(samples, temperature, prompt):
    print(f"--- inference (new, hallucinated names; temperature {temperature}"
          + (f", prompt {prompt!r}" if prompt else "") + ") ---")
    for i, s in enumerate(samples, 1):
        print(f"sample {i:2d}: {s}")
