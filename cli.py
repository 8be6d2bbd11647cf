"""cli.py -- the command line of microgpt.py: its flags, their checks, and what a run prints while it trains.

`python microgpt.py --help` lists the flags. This module parses and checks them, settles a run's settings (the
flags over DEFAULTS for a new run, the checkpoint's own settings on --resume) and formats the output: the header,
the progress line with its ETA, the samples, the messages for a diverged or interrupted run. microgpt.main()
runs the chapter's steps with these settings; nothing here trains or samples.
"""
import argparse
import math
import os
import shlex
import sys
from dataclasses import asdict
from types import SimpleNamespace

from corpora import MAX_CORPUS_BYTES, corpus_id
from errors import EXIT_DIVERGED, EXIT_INTERRUPTED, EXIT_IO, InputError, WriteError
from model_config import MAX_MEMORY_GB, n_params
from run_files import check_setting, claim_run_folder, plot_losses, save_checkpoint, write_json

DEFAULTS = {"norm": "rmsnorm", "n_embd": 16, "n_head": 4, "n_layer": 1, "block_size": 16, "alpha_init": 0.05,
            "sz_init": 1.0, "engine": "value", "steps": 1000, "batch_size": 1, "lr": 0.01, "seed": 42,
            "riemannian": False, "corpus": "names", "eval_every": 100, "dtype": "float64"}
MODEL_FLAGS = ("norm", "n_embd", "n_head", "n_layer", "block_size", "alpha_init", "sz_init")
KEPT_ON_RESUME = MODEL_FLAGS + ("batch_size", "lr", "seed", "riemannian", "corpus", "dtype")


class Parser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line (like every other bad input), not the usage plus the error."""

    def error(self, message):
        say(f"microgpt: error: {message} (python microgpt.py --help lists the flags)")
        sys.exit(2)


def build_parser():
    p = Parser(
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
    g.add_argument("--dtype", choices=["float64", "float32"], help="numpy engine: compute in float64 (default) or "
                   "float32 (faster on bigger models; the value engine computes in float64 only)")
    g.add_argument("--steps", type=int, help="optimizer steps (default 1000; with --resume: the checkpoint's plan)")
    g.add_argument("--batch-size", type=int, help="docs per step (default 1)")
    g.add_argument("--lr", type=float, help="Adam learning rate, decays linearly to 0 (default 0.01); with --resume "
                   "it may be lowered (never raised) for the rest of the run, e.g. after a divergence")
    g.add_argument("--seed", type=int, help="seed for the train/val split, init and sampling (default 42)")
    g.add_argument("--riemannian", action="store_true", default=None,
                   help="sphere only: project matrix gradients onto the tangent space before Adam")
    g.add_argument("--eval-every", type=int, help="val loss (and checkpoint with --out) every N steps (default 100)")
    g.add_argument("--corpus", help="'names' (default), 'jp-names', or a UTF-8 text file with one doc per line "
                   f"(at most {MAX_CORPUS_BYTES // 2**20} MiB)")
    g.add_argument("--max-memory", type=float, metavar="GB",
                   help=f"refuse a run whose estimated memory is larger (default {MAX_MEMORY_GB:g} GB); the estimate "
                   "comes from the config before anything is allocated")
    g = p.add_argument_group("files")
    g.add_argument("--out", help="directory for checkpoint.npz, metrics.json and loss.png; the run holds it while "
                   "it runs (without --out, Ctrl-C still saves a checkpoint, to a new folder out/run-N)")
    g.add_argument("--resume", action="store_true", help="continue from --checkpoint (default OUT/checkpoint.npz)")
    g.add_argument("--checkpoint", help="checkpoint path for --resume or --sample-only")
    g.add_argument("--sample-only", action="store_true", help="load --checkpoint and only sample (with its engine "
                   "and seed unless --engine / --seed are given)")
    g = p.add_argument_group("sampling")
    g.add_argument("--num-samples", type=int, default=20, help="names to generate (default 20)")
    g.add_argument("--temperature", type=float, default=0.5, help="> 0; lower is more conservative (default 0.5); "
                   "below 1e-100 the most likely character is taken (greedy)")
    g.add_argument("--prompt", default="", help="prefix every sample continues (default: empty)")
    return p


def say(message):
    """One line on stderr, if there is a stderr to write to (closed, or a full device: nothing more to do)."""
    try:
        if sys.stderr is not None:
            print(message, file=sys.stderr, flush=True)
    except OSError:
        pass


def flag(name):
    return "--" + name.replace("_", "-")


def check_args(a):
    """The checks argparse cannot do: ranges (the same rules as a checkpoint's settings, run_files.check_setting)
    and combinations of flags. InputError names the flag."""
    for name in ("n_embd", "n_head", "n_layer", "block_size", "steps", "batch_size", "num_samples", "eval_every",
                 "lr", "alpha_init", "sz_init", "temperature", "seed"):
        if getattr(a, name) is not None:
            check_setting(name, getattr(a, name), flag(name))
    if a.max_memory is not None and not (math.isfinite(a.max_memory) and a.max_memory > 0):
        raise InputError(f"--max-memory must be a positive number of GB, got {a.max_memory}")
    if a.sample_only and not a.checkpoint:
        raise InputError("--sample-only needs --checkpoint PATH")
    if a.sample_only and a.resume:
        raise InputError("--sample-only and --resume exclude each other (sample from a checkpoint, or train on)")
    if a.checkpoint and not (a.resume or a.sample_only):
        raise InputError("--checkpoint is only read with --resume or --sample-only (to train from scratch, omit it)")
    if a.resume and not (a.checkpoint or a.out):
        raise InputError("--resume needs --checkpoint PATH or --out DIR (containing checkpoint.npz)")
    if a.out is not None and not a.out.strip():
        raise InputError("--out needs a folder name (it is empty)")
    if a.out and os.path.exists(a.out) and not os.path.isdir(a.out):
        raise InputError(f"--out {a.out!r} exists and is not a directory")
    if a.sample_only:
        ignored = [flag(k) for k in MODEL_FLAGS + ("steps", "batch_size", "lr", "riemannian", "eval_every", "corpus",
                                                   "dtype", "out") if getattr(a, k) is not None]
        if ignored:
            raise InputError(f"{', '.join(ignored)} {'has' if len(ignored) == 1 else 'have'} no effect with "
                             "--sample-only (it samples from the checkpoint as it is; only --engine, --seed and the "
                             "sampling flags apply)")
    if a.dtype == "float32" and a.engine == "value":
        raise InputError("--dtype float32 needs --engine numpy (the value engine computes in float64 only)")


def max_gb(a):
    return a.max_memory if a.max_memory is not None else MAX_MEMORY_GB


def resume_path(a):
    """The checkpoint --resume reads: --checkpoint, or checkpoint.npz in --out."""
    return a.checkpoint or os.path.join(a.out, "checkpoint.npz")


def settings(a, resume=None, ckpt_path=None):
    """The run's settings as one namespace: the flags over DEFAULTS for a new run; on --resume the checkpoint's
    model, data and optimizer settings (a flag that contradicts them is an InputError; a lower --lr is allowed),
    and the flags for --steps, --engine and --eval-every."""
    if resume is None:
        s = {k: (getattr(a, k) if getattr(a, k) is not None else d) for k, d in DEFAULTS.items()}
        s["corpus"] = corpus_id(s["corpus"])
        return SimpleNamespace(**s, out=a.out, lr_lowered_from=None)
    kept = {**asdict(resume.cfg), "batch_size": resume.batch_size, "lr": resume.lr, "seed": resume.seed,
            "riemannian": resume.riemannian, "corpus": corpus_id(resume.corpus),
            "dtype": resume.params["wte"].dtype.name}
    given = {k: getattr(a, k) for k in KEPT_ON_RESUME}
    given["corpus"] = a.corpus and corpus_id(a.corpus)  # the same file, however it is spelled, is no conflict
    lowered_from = None
    if given["lr"] is not None and given["lr"] < kept["lr"]:  # lowering the lr is allowed: a diverged run's way out
        lowered_from, kept["lr"] = kept["lr"], given["lr"]
    conflicts = [flag(k) for k, value in given.items() if value is not None and value != kept[k]]
    if conflicts:
        raise InputError(f"{', '.join(conflicts)} {'differs' if len(conflicts) == 1 else 'differ'} from the "
                         f"checkpoint {ckpt_path!r}; a resumed run keeps its model, data and optimizer settings "
                         "(only --steps, --engine, output flags and a lower --lr may change)")
    if a.steps is not None and a.steps < resume.step:
        raise InputError(f"the checkpoint is at step {resume.step}, beyond the requested --steps {a.steps}")
    return SimpleNamespace(**{k: kept[k] for k in KEPT_ON_RESUME},
                           steps=a.steps if a.steps is not None else resume.steps,
                           engine=a.engine or resume.engine, eval_every=a.eval_every or resume.eval_every,
                           out=a.out or os.path.dirname(os.path.abspath(ckpt_path)), lr_lowered_from=lowered_from)


def fmt_time(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def own_checkpoint(out, resume, resume_path):
    """The checkpoint file this run writes: OUT/checkpoint.npz, unless that is an earlier run's (then an
    InputError: never overwrite another run's work). None without --out."""
    if not out:
        return None
    ckpt = os.path.join(out, "checkpoint.npz")
    if os.path.exists(ckpt) and not (resume is not None and os.path.samefile(ckpt, resume_path)):
        if resume is not None:
            raise InputError(f"{ckpt!r} holds the checkpoint of another run; give this resumed run an --out of "
                             "its own")
        raise InputError(f"{ckpt!r} holds the checkpoint of an earlier run; continue it with --resume, "
                         "or choose another --out (or delete that folder to start over)")
    return ckpt


def print_header(s, docs, train_docs, val_docs, cfg, base, resume, notice):
    print(f"corpus {s.corpus!r}: {len(docs)} docs ({len(train_docs)} train / {len(val_docs)} val), "
          f"vocab size {cfg.vocab_size} ({cfg.vocab_size - 1} characters + BOS)")
    cropped = sum(len(d) + 1 > cfg.block_size for d in docs)
    if cropped:
        print(f"note: {cropped} docs are longer than block_size {cfg.block_size} and are cropped to it")
    print(f"model: norm={cfg.norm}, n_layer={cfg.n_layer}, n_embd={cfg.n_embd}, n_head={cfg.n_head}, "
          f"block_size={cfg.block_size}, {n_params(cfg)} parameters; engine={s.engine}"
          + (", riemannian" if s.riemannian else ""))
    print("baselines (val loss): " + ", ".join(f"{k} {v:.4f}" for k, v in base.items()))
    if notice:
        print(notice)
    if resume is not None:
        lowered = f" (lr lowered from {s.lr_lowered_from:g} to {s.lr:g})" if s.lr_lowered_from else ""
        print(f"resuming from step {resume.step} of {s.steps}{lowered}")


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
        loss = info["loss"]
        line = (f"step {info['step']:4d}/{info['steps']} | loss {loss:{'.4f' if abs(loss) < 1e4 else '.3e'}} | "
                f"{info['ms_per_step']:.2f} ms/step"
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


def kept_checkpoint(last_good, out, eval_every, steps, what="stopped"):
    """What a failed run leaves to fall back on, in words."""
    if last_good is not None:
        return f"the last good checkpoint is {last_good[0]!r} (step {last_good[1]})"
    if out:
        return f"no checkpoint was written (it {what} before the first one, due at step {min(eval_every, steps)})"
    return "no checkpoint was written (no --out)"


def report_write_error(error, progress, s):
    progress.end()
    say(f"microgpt: error: {error}; training stopped; "
        f"{kept_checkpoint(progress.last_good, s.out, s.eval_every, s.steps)}")
    return EXIT_IO


def report_divergence(state, progress, s):
    # Nothing new is written: the weights before the bad step would only repeat it on --resume, so the fallback
    # is the last checkpoint of this run (or the one it resumed from), left as it was.
    kept = kept_checkpoint(progress.last_good, s.out, s.eval_every, s.steps, "diverged")
    say(f"microgpt: error: training diverged: {state.error}. Stopped; {kept}. Try a smaller --lr (a resumed run "
        "may lower it: --resume --lr ...).")
    return EXIT_DIVERGED


def save_interrupted(state, progress, s, args):
    """Ctrl-C: save to --out, or without --out to a folder of its own (out/run-N, claimed atomically, so two
    runs stopped at the same moment never share one), and print the command that continues the run."""
    try:
        out = s.out or claim_run_folder("out")
        ckpt = os.path.join(out, "checkpoint.npz")
        save_checkpoint(ckpt, state)
    except WriteError as e:
        say(f"microgpt: error: interrupted at step {state.step}/{s.steps}, but {e}; "
            f"{kept_checkpoint(progress.last_good, s.out, s.eval_every, s.steps)}")
        return EXIT_IO
    say(f"interrupted at step {state.step}/{s.steps}; checkpoint saved to {ckpt}\n"
        f"continue with: {resume_command(out, args)}")
    return EXIT_INTERRUPTED


def resume_command(out, args):
    """The command that continues this run, to be pasted into a shell from the current folder: the script's
    path as seen from here, every argument quoted, and the flags a checkpoint does not keep (--max-memory, the
    sampling flags) when they were given."""
    script = os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "microgpt.py"))
    words = ["python", script, "--resume", "--out", out]
    defaults = {"max_memory": None, "num_samples": 20, "temperature": 0.5, "prompt": ""}
    for name, default in defaults.items():
        if getattr(args, name) != default:
            words += [flag(name), str(getattr(args, name))]
    return " ".join(shlex.quote(w) for w in words)


def print_final(state, base):
    val = state.val_loss[-1][1]
    print(f"final: train loss {final_train_loss(state):.4f} (mean of last {min(50, len(state.train_loss))} steps), "
          f"val loss {val:.4f} -- {'below' if val < base['bigram'] else 'not yet below'} the bigram baseline "
          f"{base['bigram']:.4f}; {state.ms_per_step:.2f} ms/step")


def final_train_loss(state):
    return sum(state.train_loss[-50:]) / len(state.train_loss[-50:])


def write_run_files(s, state, base, samples, docs, train_docs, val_docs):
    """--out: the final checkpoint, metrics.json and loss.png."""
    cfg = state.cfg
    ckpt, metrics_path, plot_path = (os.path.join(s.out, name) for name in ("checkpoint.npz", "metrics.json",
                                                                           "loss.png"))
    save_checkpoint(ckpt, state)
    metrics = {"config": asdict(cfg), "engine": s.engine, "norm": cfg.norm, "corpus": s.corpus, "seed": s.seed,
               "steps": state.step, "batch_size": state.batch_size, "lr": state.lr, "riemannian": state.riemannian,
               "n_params": n_params(cfg), "docs": {"train": len(train_docs), "val": len(val_docs),
                                                  "cropped": sum(len(d) + 1 > cfg.block_size for d in docs)},
               "final_train_loss": final_train_loss(state), "final_val_loss": state.val_loss[-1][1],
               "baselines": base, "ms_per_step": state.ms_per_step,
               "history": {"train_loss": state.train_loss, "val_loss": [list(x) for x in state.val_loss]},
               "samples": samples}
    write_json(metrics_path, metrics)
    plot_losses(plot_path, state, base,
                f"microgpt, norm={cfg.norm}, engine={s.engine}, corpus={os.path.basename(s.corpus)}")
    print(f"wrote {ckpt}, {metrics_path}, {plot_path}")


KEEP_SAMPLES = 1000  # how many of the printed names metrics.json keeps


def print_samples(samples, temperature, prompt):
    """Print each name as it arrives from an iterator; returns the first KEEP_SAMPLES of them."""
    print(f"--- inference (new, hallucinated names; temperature {temperature}"
          + (f", prompt {prompt!r}" if prompt else "") + ") ---")
    kept = []
    for i, s in enumerate(samples, 1):
        print(f"sample {i:2d}: {s}")
        if i <= KEEP_SAMPLES:
            kept.append(s)
    return kept
