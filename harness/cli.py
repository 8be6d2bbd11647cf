"""harness/cli.py -- the command line of microgpt.py: its flags, their checks, and the Command around main().

`python microgpt.py --help` lists the flags. microgpt.main() runs the chapter's steps inside a Command:

    with Command(argv, tokenize=doc_tokens) as cmd:
        s = cmd.settings()          # the flags, checked (on --resume / --sample-only: the checkpoint's settings)
        ... docs, vocab ...
        cfg = cmd.config(...)       # the model's size; the prompt, the corpus and the memory estimate checked
        state = train(..., **cmd.training())   # takes the --out folder's lock, prints the header and progress
        if cmd.trained(state):      # a diverged or interrupted run is reported (and saved) here
            cmd.finish(names, state)   # prints the names, writes checkpoint.npz, metrics.json, loss.png

Every check happens before the --out folder is touched, so a refused run changes nothing. Bad input, a write
error and Ctrl-C (or SIGTERM, SIGHUP) end the `with` block with one line on stderr and an exit code
(harness/errors.py), never a traceback; any other exception is a bug and keeps Python's traceback.
"""
import argparse
import math
import os
import sys
from dataclasses import asdict
from types import SimpleNamespace

from harness import messages
from harness.checkpoints import check_same_corpus, load_checkpoint, same_corpus, save_checkpoint
from harness.checks import check_combination, check_forward, check_sampling, check_setting
from harness.corpora import BUILTIN, MAX_CORPUS_BYTES, check_corpus_memory, corpus_id
from harness.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_IO, EXIT_OK, InputError, WriteError
from harness.history import HISTORY_NAME, History, load_history
from harness.messages import final_train_loss, flag, say
from harness.run_files import RUN_FILE_NAMES, RunLock, plot_losses, write_json
from harness.signals import DeferSigint, restore, stop_with_keyboard_interrupt
from model_config import MAX_MEMORY_GB, GPTConfig, check_memory, n_params
from numpy_engine import GREEDY_BELOW, baselines

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


def check_args(a):
    """The checks argparse cannot do: ranges (the rules of harness/checks.py, which a checkpoint's settings obey
    too) and which flags go together. InputError names the flag."""
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
        check_combination(s["engine"], s["dtype"], s["norm"], s["riemannian"])
        return SimpleNamespace(**s, out=a.out, lr_lowered_from=None, corpus_moved_from=None)
    kept = {**asdict(resume.cfg), "batch_size": resume.batch_size, "lr": resume.lr, "seed": resume.seed,
            "riemannian": resume.riemannian, "corpus": corpus_id(resume.corpus),
            "dtype": resume.params["wte"].dtype.name}
    given = {k: getattr(a, k) for k in KEPT_ON_RESUME}
    given["corpus"] = a.corpus and corpus_id(a.corpus)  # the same file, however it is spelled, is no conflict
    moved_from = None
    if given["corpus"] and given["corpus"] != kept["corpus"] and resume.corpus_sha256:
        # another path (the run's folder moved, say): fine if it holds the same documents, which the checkpoint's
        # fingerprint of them tells (checked once the corpus is read: check_same_corpus)
        moved_from, kept["corpus"] = kept["corpus"], given["corpus"]
    elif not given["corpus"] and kept["corpus"] not in BUILTIN and not os.path.exists(kept["corpus"]):
        raise InputError(f"the checkpoint's corpus {kept['corpus']!r} is not there any more; if it moved, give its "
                         "new path with --corpus (its documents are checked against the checkpoint's fingerprint)")
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
    s = SimpleNamespace(**{k: kept[k] for k in KEPT_ON_RESUME},
                        steps=a.steps if a.steps is not None else resume.steps, engine=a.engine or resume.engine,
                        eval_every=a.eval_every or resume.eval_every,
                        out=a.out or os.path.dirname(os.path.abspath(ckpt_path)), lr_lowered_from=lowered_from,
                        corpus_moved_from=moved_from)
    check_combination(s.engine, s.dtype, s.norm, s.riemannian, f"checkpoint {ckpt_path!r}: ")
    return s


def own_checkpoint(out, resume, resume_path):
    """The checkpoint file this run writes: OUT/checkpoint.npz, unless that is an earlier run's (then an
    InputError: never overwrite another run's work). None without --out."""
    if not out:
        return None
    ckpt = os.path.join(out, "checkpoint.npz")
    if resume is None and not os.path.exists(ckpt):  # its checkpoint was deleted, but not the rest of its work
        earlier = [name for name in RUN_FILE_NAMES if os.path.exists(os.path.join(out, name))]
        if earlier:
            raise InputError(f"--out {out!r} holds an earlier run's {', '.join(earlier)}; a new run would overwrite "
                             "them: choose another --out (or delete them to start over)")
    if os.path.exists(ckpt) and not (resume is not None and os.path.samefile(ckpt, resume_path)):
        if resume is not None:
            raise InputError(f"{ckpt!r} holds the checkpoint of another run; give this resumed run an --out of "
                             "its own")
        raise InputError(f"{ckpt!r} holds the checkpoint of an earlier run; continue it with --resume, "
                         "or choose another --out (or delete that folder to start over)")
    return ckpt




class Command:
    """The command line around microgpt.main(): see the module docstring. Its methods are called in the order of
    the chapter's steps; each check runs before anything is written, and exit_code is the run's exit code."""

    def __init__(self, argv=None, *, tokenize):
        self.argv, self.tokenize = argv, tokenize  # the chapter's tokenizer: the prompt, the baselines
        self.exit_code = EXIT_OK
        self.args = self.s = self.resume = self.ckpt_path = self.lock = self.progress = None
        self.handlers, self.notes = {}, []
        self.written = []  # the run files written so far (a Ctrl-C while writing says which)

    def __enter__(self):
        if sys.stdout is None:  # started with stdout closed (`>&-`): nowhere to print the names
            say("microgpt: error: cannot write to standard output: it is closed")
            sys.exit(EXIT_IO)
        sys.stdout.reconfigure(errors="backslashreplace")  # names in any script print on any terminal encoding
        self.args = build_parser().parse_args(self.argv)  # (argparse's own errors: one line, exit 2)
        self.handlers = stop_with_keyboard_interrupt()  # Ctrl-C, SIGTERM, SIGHUP now unwind to __exit__ (exit 130)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.lock is not None:
            self.lock.__exit__(None, None, None)  # the --out folder is free again, however the run ended
        restore(self.handlers)
        if exc_type is None:
            return False
        code = self._report(exc)
        if code is None:
            return False  # not bad input, a write error or a signal: a bug, with Python's traceback
        self.exit_code = code
        return True

    def _report(self, e):
        """The one line for an exception that ends a run, and its exit code; None for anything else."""
        if isinstance(e, InputError):
            say(f"microgpt: error: {e}")
            return EXIT_BAD_INPUT
        if isinstance(e, WriteError):
            if self.progress is not None:  # a checkpoint could not be saved (disk full?): the one before it is intact
                return messages.report_write_error(e, self.progress, self.s)
            say(f"microgpt: error: {e}")
            return EXIT_IO
        if isinstance(e, KeyboardInterrupt):  # a signal outside the training loop (or a second one within it)
            last = self.progress and self.progress.last_good
            done = (f"{', '.join(self.written)} {'was' if len(self.written) == 1 else 'were'} written" if self.written
                    else f"the last checkpoint is {last[0]!r} (step {last[1]})" if last else "nothing was saved")
            say(f"\nmicrogpt: interrupted; {done} (files already written are complete: writes are atomic)")
            return EXIT_INTERRUPTED
        if isinstance(e, MemoryError):  # the estimate was within the limits, but the machine could not give it
            say("microgpt: error: not enough memory for this run (an allocation failed); try a smaller model, batch "
                "or --num-samples")
            return EXIT_BAD_INPUT
        if isinstance(e, OSError) and e.filename:  # a file of the run (the folder's lock, a temp file)
            say(f"microgpt: error: cannot write {e.filename!r}: {e.strerror or e}")
            return EXIT_IO
        if isinstance(e, OSError) and e.errno is not None:  # writing to stdout failed: a closed pipe, a full device
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush does not fail again
            if not isinstance(e, BrokenPipeError):  # the reader of a pipe left on purpose: stop quietly
                say(f"microgpt: error: cannot write to standard output: {e.strerror or e}")
            return EXIT_IO
        return None

    # -- the chapter's steps, in order

    def settings(self):
        """The run's settings, every flag checked: a new run's (the flags over DEFAULTS), a resumed run's (the
        checkpoint's, with --steps, --engine, --eval-every and a lower --lr), or --sample-only's checkpoint."""
        a = self.args
        check_args(a)
        if a.sample_only:
            ckpt = load_checkpoint(a.checkpoint, max_gb(a))
            check_forward(ckpt.params, ckpt.cfg, f"checkpoint {a.checkpoint!r}")
            self.s = SimpleNamespace(sample_only=True, params=ckpt.params, cfg=ckpt.cfg, vocab=ckpt.vocab,
                                     seed=ckpt.seed if a.seed is None else a.seed, engine=a.engine or ckpt.engine)
            return self.s
        if a.resume:
            self.ckpt_path = resume_path(a)
            self.resume = load_checkpoint(self.ckpt_path, max_gb(a))
            check_forward(self.resume.params, self.resume.cfg, f"checkpoint {self.ckpt_path!r}")
        self.s = settings(a, self.resume, self.ckpt_path)
        self.s.sample_only = False
        check_corpus_memory(self.s.corpus, max_gb(a))  # before the corpus is read and split
        return self.s

    def config(self, vocab, train_docs, val_docs):
        """The model's GPTConfig (a resumed run's is the checkpoint's), after the checks that need the corpus:
        its vocabulary and fingerprint on --resume, the prompt, the memory the run would need."""
        s, a, resume, tokenize = self.s, self.args, self.resume, self.tokenize
        if s.corpus_moved_from and (vocab != resume.vocab or not same_corpus(resume, train_docs, val_docs)):
            raise InputError(f"--corpus {s.corpus!r} differs from the checkpoint's corpus {s.corpus_moved_from!r}: "
                             "its documents are not the ones the run was trained on (a corpus that moved is taken "
                             "when its documents are the same)")
        if resume is not None and vocab != resume.vocab:
            raise InputError(f"corpus {s.corpus!r} no longer has the checkpoint's vocabulary; cannot resume")
        cfg = resume.cfg if resume is not None else GPTConfig(
            len(vocab) + 1, s.n_embd, s.n_head, s.n_layer, s.block_size, s.norm, s.alpha_init, s.sz_init)
        check_sampling(a.num_samples, a.temperature, s.engine, a.prompt, tokenize(a.prompt, vocab)[1:-1], cfg)
        if resume is not None:
            check_same_corpus(resume, train_docs, val_docs, s.corpus)
            resume.lr, resume.corpus = s.lr, s.corpus  # the checkpoint's, or a lower --lr; the corpus where it is now
            if s.corpus_moved_from:
                self.notes.append(f"note: the corpus is now {s.corpus!r} (the checkpoint read it from "
                                  f"{s.corpus_moved_from!r}); its documents are the same (the checkpoint's "
                                  "fingerprint of them matches)")
            if s.engine != resume.engine:
                self.notes.append(f"note: this run was trained on the {resume.engine} engine and goes on with the "
                                  f"{s.engine} engine: the two agree to about 1e-15, so the result is not bit for bit "
                                  "the one either engine alone would give")
        docs = train_docs + val_docs
        check_memory(cfg, s.batch_size, s.engine, max_gb(a), s.dtype, (len(docs), sum(map(len, docs))), s.steps)
        self.base = baselines([tokenize(d, vocab) for d in train_docs], [tokenize(d, vocab) for d in val_docs], cfg)
        self.docs = {"train": len(train_docs), "val": len(val_docs),
                     "cropped": sum(len(d) + 1 > cfg.block_size for d in docs)}
        self.cfg, self.vocab = cfg, vocab
        return cfg

    def training(self):
        """Take the --out folder (everything is checked by now), print the header, and return train()'s
        settings, with the progress line (and, with --out, a checkpoint at every val loss)."""
        s, resume = self.s, self.resume
        RunLock.check_free(s.out)  # (both checked before the lock is taken too, so that a refusal changes nothing)
        own_checkpoint(s.out, resume, self.ckpt_path)
        self.lock = RunLock(s.out).__enter__()  # this run holds --out now (or is refused: exit 2)
        ckpt = own_checkpoint(s.out, resume, self.ckpt_path)
        self.lock.clean()
        messages.print_header(s, self.docs, self.cfg, self.base, resume, [self.lock.notice, *self.notes])
        history = History(self.cfg, self.vocab, s.steps, previous=self._previous_history())
        self.progress = messages.Progress(s.steps, self.base, ckpt,
                                          (self.ckpt_path, resume.step) if resume is not None else None, history)
        return {"steps": s.steps, "batch_size": s.batch_size, "lr": s.lr, "seed": s.seed, "engine": s.engine,
                "riemannian": s.riemannian, "eval_every": s.eval_every, "dtype": s.dtype, "corpus": s.corpus,
                "progress": self.progress, "resume": resume, "history": history}

    def _previous_history(self):
        """On --resume, the planetarium snapshots the run kept so far (OUT/history.npz), to continue; a missing or
        unreadable file is a note, not an error: the history is a by-product, and starts again here."""
        path = os.path.join(self.s.out, HISTORY_NAME) if self.s.out else None
        if self.resume is None or not path or not os.path.exists(path):
            return None
        try:
            previous = load_history(path)
            if previous.cfg == self.cfg and previous.vocab == self.vocab:
                return previous
            problem = "it is of another model"
        except InputError as e:
            problem = str(e)
        print(f"note: the planetarium history {path!r} is not continued ({problem}); it starts again at step "
              f"{self.resume.step}")
        return None

    def trained(self, state):
        """True if training ran to its end; else it says why (diverged: exit 1; interrupted: the checkpoint is
        saved and the resume command printed, exit 130) and returns False."""
        self.progress.end()
        if state.error:
            self.exit_code = messages.report_divergence(state, self.progress, self.s)
            return False
        if state.interrupted:
            self.exit_code = messages.save_interrupted(state, self.progress, self.s, self.args)
            return False
        messages.print_final(state, self.base)
        return True

    def sampling(self):
        """sample()'s settings: the sampling flags, and the run's (or the checkpoint's) seed and engine."""
        a = self.args
        return {"num_samples": a.num_samples, "temperature": a.temperature, "prompt": a.prompt, "seed": self.s.seed,
                "engine": self.s.engine}

    def finish(self, names, state=None):
        """Print the names as they come; after training with --out, write checkpoint.npz, metrics.json, loss.png."""
        a = self.args
        if a.temperature < GREEDY_BELOW:
            print(f"note: temperature {a.temperature:g} is below {GREEDY_BELOW:g}: taking the most likely character "
                  "each time (greedy)")
        kept = messages.print_samples(names, a.temperature, a.prompt)
        if state is not None and self.s.out:
            with DeferSigint() as signal:  # a signal now lets the run's files be written whole, then stops the run
                write_run_files(self.s, state, self.base, kept, self.docs, self.progress.history, self.written)
            if signal.hit:
                say("microgpt: interrupted while writing the run's files; all of them were written")
                self.exit_code = EXIT_INTERRUPTED


def write_run_files(s, state, base, samples, docs, history, written):
    """--out: the final checkpoint, history.npz, metrics.json and loss.png (each goes into `written` when written)."""
    cfg = state.cfg
    ckpt, metrics_path, plot_path = (os.path.join(s.out, name) for name in ("checkpoint.npz", "metrics.json",
                                                                           "loss.png"))
    save_checkpoint(ckpt, state)
    written.append(ckpt)
    messages.save_history(ckpt, state, history)
    written.append(os.path.join(s.out, HISTORY_NAME))
    metrics = {"config": asdict(cfg), "engine": s.engine, "norm": cfg.norm, "corpus": s.corpus, "seed": s.seed,
               "steps": state.step, "batch_size": state.batch_size, "lr": state.lr, "riemannian": state.riemannian,
               "n_params": n_params(cfg), "docs": docs, "final_train_loss": final_train_loss(state),
               "final_val_loss": state.val_loss[-1][1],
               "baselines": base, "ms_per_step": state.ms_per_step,
               "history": {"train_loss": state.train_loss, "val_loss": [list(x) for x in state.val_loss]},
               "samples": samples}
    write_json(metrics_path, metrics)
    written.append(metrics_path)
    plot_losses(plot_path, state, base,
                f"microgpt, norm={cfg.norm}, engine={s.engine}, corpus={os.path.basename(s.corpus)}")
    written.append(plot_path)
    print(f"wrote {ckpt}, {os.path.join(s.out, HISTORY_NAME)}, {metrics_path}, {plot_path}")


