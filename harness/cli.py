"""harness/cli.py -- the command line of microgpt.py: a flag per row of settings.SETTINGS, and the
Command around main(), the shell (harness/shell.py) with what a training run has to say. main()
calls its methods in the chapter's order: settings() (the flags checked; --resume, --sample-only:
the checkpoint's), config() (the model's size; the corpus, prompt and memory checked), training()
(takes --out, prints the header; train()'s arguments), trained() (a diverged or interrupted run said
and saved) and finish() (the names, the run's files). Every check comes before a step is taken or a
file written: a refused run changes nothing.
"""
import argparse
import importlib.util
import os
from dataclasses import asdict
from types import SimpleNamespace

from checks import check_forward, check_sampling
from corpora import BUILTIN, MAX_CORPUS_BYTES, corpus_id
from harness import messages
from harness.checkpoints import check_same_corpus, load_checkpoint, same_corpus, save_run
from harness.errors import EXIT_INTERRUPTED, InputError, as_text
from harness.history import HISTORY_NAME, History, load_history
from harness.memory import check_corpus_memory, check_memory
from harness.run_files import RUN_FILE_NAMES, RunLock, not_a_regular_file, plot_losses, write_json
from harness.shell import DeferSigint, Parser, Shell, say
from model_config import MODEL_SETTINGS, GPTConfig, n_params
from numpy_engine import GREEDY_BELOW, baselines
from settings import DEFAULTS, SETTINGS, STORED, check, check_combination, resumed

EPILOG = """examples:
  python microgpt.py
  python microgpt.py --engine numpy --steps 3000 --out runs/np
  python microgpt.py --norm sphere --engine numpy --out runs/sphere
  python microgpt.py --resume --out runs/np --steps 5000
  python microgpt.py --sample-only --checkpoint runs/np/checkpoint.npz --prompt ma

built-in corpora: {corpora}; or a UTF-8 text file, one document per line, at most {mib} MiB
exit codes: 0 ok, 1 diverged, 2 bad input, 74 a file or standard output could not be written,
130 interrupted (docs/running.md says what each promises)"""


def build_parser():
    """A flag per row of the table, in its groups; every default None, so that a resumed run can tell a
    flag given from one that was not (the table's default comes later)."""
    p = Parser(prog="microgpt.py", formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Train a tiny GPT on names and sample new ones. --norm sphere switches to "
                           "the nGPT hypersphere model; --engine numpy runs the same math on arrays.",
               epilog=EPILOG.format(corpora=", ".join(BUILTIN), mib=MAX_CORPUS_BYTES // 2**20))
    groups = {group: p.add_argument_group(group) for group in dict.fromkeys(s.group for s in SETTINGS)}
    for s in SETTINGS:
        if s.rule.parse is bool:
            groups[s.group].add_argument(s.flag, action="store_true", default=None, help=s.help)
        else:
            default = "" if s.default in (None, "") else f" (default {s.default})"
            groups[s.group].add_argument(s.flag, type=s.rule.parse, choices=s.rule.choices or None,
                                         metavar=None if s.rule.choices else s.rule.shown, help=s.help + default)
    return p


def check_args(a):
    """Every given flag by its rule (a checkpoint's value obeys the same), and which flags go together."""
    for s in SETTINGS:
        if getattr(a, s.name) is not None:
            check(s.name, getattr(a, s.name), s.flag)
    if a.sample_only and not a.checkpoint:
        raise InputError("--sample-only needs --checkpoint PATH")
    if a.sample_only and a.resume:
        raise InputError("--sample-only and --resume exclude each other (sample, or train on)")
    if a.checkpoint and not (a.resume or a.sample_only):
        raise InputError("--checkpoint is only read with --resume or --sample-only")
    if a.resume and not (a.checkpoint or a.out):
        raise InputError("--resume needs --checkpoint PATH or --out FOLDER (containing checkpoint.npz)")
    if a.out and os.path.exists(a.out) and not os.path.isdir(a.out):
        raise InputError(f"--out {a.out!r} exists and is not a folder")
    ignored = [s.flag for s in SETTINGS if not s.sampling and getattr(a, s.name) is not None]
    if a.sample_only and ignored:
        raise InputError(f"{', '.join(ignored)}: no effect with --sample-only (it samples from the checkpoint "
                         "as it is; only --engine, --seed and the sampling flags apply)")


def new_settings(a):
    """A new run's settings: the flags over the table's defaults."""
    s = {name: default if getattr(a, name) is None else getattr(a, name)
         for name, default in DEFAULTS.items()}
    s["corpus"] = corpus_id(s["corpus"])
    check_combination(s["engine"], s["dtype"], s["norm"], s["riemannian"])
    return SimpleNamespace(**s, lr_lowered_from=None, corpus_moved_from=None)


def resumed_settings(a, resume, ckpt_path):
    """A resumed run's settings: the checkpoint's, with what a resume may change (settings.resumed); a
    corpus at another path is taken if its documents are the checkpoint's (checked once read)."""
    kept = {**asdict(resume.cfg), **{s.name: getattr(resume, s.name) for s in STORED}}
    kept["corpus"] = corpus_id(resume.corpus)
    given = {name: getattr(a, name, None) for name in kept}
    given["corpus"] = a.corpus and corpus_id(a.corpus)  # the same file, however it is spelled
    moved_from = None
    if given["corpus"] and given["corpus"] != kept["corpus"]:  # the run's folder moved, say
        moved_from, kept["corpus"] = kept["corpus"], given["corpus"]
    elif kept["corpus"] not in BUILTIN and not os.path.exists(kept["corpus"]):
        raise InputError(f"the checkpoint's corpus {kept['corpus']!r} is not there any more; if it moved, "
                         "give its new path with --corpus (its documents are checked against the run's)")
    merged, lowered = resumed(kept, given, resume.step, lambda name: "--" + name.replace("_", "-"))
    check_combination(merged["engine"], merged["dtype"], merged["norm"], merged["riemannian"],
                      f"checkpoint {ckpt_path!r}: ")
    out = a.out or os.path.dirname(os.path.abspath(ckpt_path))
    return SimpleNamespace(**{**DEFAULTS, **merged, "out": out}, lr_lowered_from=lowered.get("lr"),
                           corpus_moved_from=moved_from)


def check_out_folder(out, resume, ckpt_path):
    """InputError unless --out may take this run's files: a new run's folder holds no run's files, a
    resumed run's is its checkpoint's or holds none, and every run file there is a regular file (a
    symbolic link planted as checkpoint.npz is refused now, not at the first save)."""
    ckpt = os.path.join(out, "checkpoint.npz")
    own = resume is not None and os.path.exists(ckpt) and os.path.samefile(ckpt, ckpt_path)
    present = [name for name in RUN_FILE_NAMES if os.path.lexists(os.path.join(out, name))]
    if present and not own:
        if resume is not None:
            raise InputError(f"--out {out!r} holds another run's files ({', '.join(present)}); a resumed "
                             "run writes only into its checkpoint's folder or a folder without run files")
        what = "continue it with --resume, or " if "checkpoint.npz" in present else ""
        raise InputError(f"--out {out!r} holds an earlier run's {', '.join(present)}; {what}choose another "
                         "--out (or delete them to start over)")
    for path in (os.path.join(out, name) for name in present):
        if not_a_regular_file(path):
            raise InputError(f"{path!r} is {not_a_regular_file(path)}; a run writes its files only as "
                             "regular files (put the file itself there, or choose another --out)")


def previous_history(path, resume, cfg, vocab, own_folder, notes):
    """On --resume, the run's history so far (beside its checkpoint), to continue: written before the
    checkpoint, it is at its step or ahead (the later snapshots are dropped); one behind or
    unreadable is a note. Another run's is refused in the run's own folder and left alone elsewhere."""
    if not os.path.lexists(path):
        return None
    try:
        h = load_history(path)
    except InputError as e:
        notes.append(f"note: the planetarium history is not continued ({e}); it starts again")
        return None
    if (resume.run_id and h.run_id and h.run_id != resume.run_id) or (h.cfg, h.vocab) != (cfg, vocab):
        if own_folder:
            raise InputError(f"{path!r} is the history of another run; a run writes only its own files: "
                             "move it away, or resume into another --out")
        return None
    if h.saved_step is not None and h.saved_step > resume.step:
        notes.append(f"note: {path} is ahead of the checkpoint (step {h.saved_step} > {resume.step}: "
                     f"the run stopped between its writes); its snapshots from step {resume.step} on are "
                     "recorded again")
        h.rewind(resume.step)
    elif h.saved_step is not None and h.saved_step < resume.step:
        notes.append(f"note: {path} is behind the checkpoint (step {h.saved_step} < {resume.step}); it "
                     "continues without the snapshots in between")
    return h


class Command(Shell):
    """The shell around microgpt.main(): see the module docstring."""

    def __init__(self, argv=None, *, tokenize):
        super().__init__("microgpt")
        self.argv, self.tokenize = argv, tokenize  # the chapter's tokenizer: prompt and baselines
        self.args = self.s = self.resume = self.ckpt_path = self.lock = self.progress = None
        self.notes, self.written = [], []  # the run files written so far (a Ctrl-C says which)

    def __enter__(self):
        self.args = build_parser().parse_args(self.argv)  # (argparse's own errors: one line, exit 2)
        return super().__enter__()

    def close(self):
        if self.lock is not None:
            self.lock.__exit__()  # the --out folder is free again, however the run ended

    def interrupted(self):
        last = self.progress and self.progress.last_good
        done = (f"{', '.join(self.written)} {'was' if len(self.written) == 1 else 'were'} written"
                if self.written else f"the last checkpoint is {last[0]!r} (step {last[1]})" if last
                else "nothing was saved")
        return f"interrupted; {done} (files already written are complete: writes are atomic)"

    def write_failed(self, error):
        if self.progress is not None:  # a checkpoint failed (disk full?): the one before is intact
            return messages.report_write_error(error, self.progress, self.s)
        return super().write_failed(error)

    # -- the chapter's steps, in order

    def settings(self):
        a = self.args
        check_args(a)
        if a.sample_only:
            ckpt = load_checkpoint(a.checkpoint, a.max_memory)
            check_forward(ckpt.params, ckpt.cfg, f"checkpoint {a.checkpoint!r}")
            self.s = SimpleNamespace(sample_only=True, params=ckpt.params, cfg=ckpt.cfg, vocab=ckpt.vocab,
                                     seed=ckpt.seed if a.seed is None else a.seed,
                                     engine=a.engine or ckpt.engine)
            return self.s
        if a.resume:
            self.ckpt_path = a.checkpoint or os.path.join(a.out, "checkpoint.npz")
            self.resume = load_checkpoint(self.ckpt_path, a.max_memory)
            check_forward(self.resume.params, self.resume.cfg, f"checkpoint {self.ckpt_path!r}")
            self.s = resumed_settings(a, self.resume, self.ckpt_path)
        else:
            self.s = new_settings(a)
            if a.corpus in BUILTIN and os.path.exists(a.corpus):
                self.notes.append(f"note: --corpus {a.corpus} is the built-in corpus; for the file of that "
                                  f"name here give its path, ./{a.corpus}")
        self.s.sample_only = False
        check_corpus_memory(self.s.corpus, self.s.max_memory)  # before the corpus is read and split
        return self.s

    def config(self, vocab, train_docs, val_docs):
        """The GPTConfig (resumed: the checkpoint's), once the documents, prompt and memory pass."""
        s, resume, tokenize = self.s, self.resume, self.tokenize
        if resume is not None:
            self._check_resumed_corpus(vocab, train_docs, val_docs)
        cfg = resume.cfg if resume is not None else \
            GPTConfig(len(vocab) + 1, **{x.name: getattr(s, x.name) for x in MODEL_SETTINGS})
        check_sampling(self.args.prompt or "", vocab, cfg, **self.sampling(prompt=False))
        docs = train_docs + val_docs
        check_memory(cfg, s.batch_size, s.engine, s.max_memory, s.dtype, (len(docs), sum(map(len, docs))),
                     s.steps)
        self.base = baselines([tokenize(d, vocab) for d in train_docs], [tokenize(d, vocab) for d in val_docs],
                              cfg)
        self.docs = {"train": len(train_docs), "val": len(val_docs),
                     "cropped": sum(len(d) + 1 > cfg.block_size for d in docs)}
        self.cfg, self.vocab = cfg, vocab
        return cfg

    def _check_resumed_corpus(self, vocab, train_docs, val_docs):
        """The checkpoint's documents (by their fingerprint, or else by the vocabulary), wherever."""
        s, resume = self.s, self.resume
        if s.corpus_moved_from and (vocab != resume.vocab or not same_corpus(resume, train_docs, val_docs)):
            raise InputError(f"--corpus {s.corpus!r} differs from the checkpoint's corpus "
                             f"{s.corpus_moved_from!r}: its documents are not the ones the run was trained on")
        if vocab != resume.vocab:
            raise InputError(f"corpus {s.corpus!r} does not have the checkpoint's vocabulary; cannot resume")
        check_same_corpus(resume, train_docs, val_docs, s.corpus)
        if s.corpus_moved_from:
            how = ("its documents are the checkpoint's (their fingerprint matches)" if resume.corpus_sha256
                   else "the checkpoint has no fingerprint of its documents, so only its vocabulary could be "
                        "compared (it matches); from now on the checkpoint has one")
            self.notes.append(f"note: the corpus is now {s.corpus!r} (the checkpoint read it from "
                              f"{s.corpus_moved_from!r}); {how}")
        if s.engine != resume.engine:
            self.notes.append(f"note: this run was trained on the {resume.engine} engine and goes on with the "
                              f"{s.engine} engine: the two agree to about 1e-15, so the result is not bit "
                              "for bit the one either engine alone would give")
        resume.corpus = s.corpus  # where it is now

    def training(self):
        """Take --out, print the header; train()'s arguments (settings, progress, history, resume)."""
        s, resume = self.s, self.resume
        if s.out and importlib.util.find_spec("matplotlib") is None:
            raise InputError("--out writes loss.png, which needs matplotlib: pip install matplotlib")
        self.lock = RunLock(s.out)
        self.lock.__enter__()  # this run holds --out now (or is refused: exit 2)
        previous = None
        if s.out:
            check_out_folder(s.out, resume, self.ckpt_path)  # (a refusal releases it: nothing changed)
        if resume is not None:
            folder = os.path.dirname(os.path.abspath(self.ckpt_path))
            previous = previous_history(os.path.join(folder, HISTORY_NAME), resume, self.cfg, self.vocab,
                                        os.path.samefile(folder, s.out), self.notes)
        self.lock.claim()
        messages.print_header(s, self.docs, self.cfg, self.base, resume, [self.lock.notice, *self.notes])
        history = History(self.cfg, self.vocab, s.steps, previous=previous)
        self.progress = messages.Progress(s.steps, self.base, s.out, resume and (self.ckpt_path, resume.step),
                                          history)
        names = ("steps", "engine", "eval_every", "lr") if resume else [x.name for x in STORED]
        return {**{name: getattr(s, name) for name in names}, "progress": self.progress, "resume": resume,
                "history": history}

    def trained(self, state):
        """True if training ran to its end; else it says why (diverged: 1; interrupted: saved, 130)."""
        self.progress.end()
        if state.error:
            self.exit_code = messages.report_divergence(state, self.progress, self.s, self.resume is None)
        elif state.interrupted:
            self.exit_code = messages.save_interrupted(state, self.progress, self.s, self.args)
        else:
            messages.print_final(state, self.base)
        return not (state.error or state.interrupted)

    def sampling(self, prompt=True):
        """sample()'s settings: the sampling flags, the run's (or checkpoint's) seed and engine."""
        names = ("num_samples", "temperature") + (("prompt",) if prompt else ())
        values = {name: DEFAULTS[name] if getattr(self.args, name) is None else getattr(self.args, name)
                  for name in names}
        return {**values, "seed": self.s.seed, "engine": self.s.engine}

    def finish(self, names, state=None):
        """Print the names as they come; after training with --out, write the run's files."""
        sampling = self.sampling()
        if sampling["temperature"] < GREEDY_BELOW:
            print(f"note: temperature {sampling['temperature']:g} is below {GREEDY_BELOW:g}: taking the most "
                  "likely character each time (greedy)")
        kept = messages.print_samples(names, sampling["temperature"], sampling["prompt"])
        if state is not None and self.s.out:
            with DeferSigint() as signal:  # a signal now lets the files be written whole, then stops
                self.write_run_files(state, kept)
            if signal.hit:
                say("microgpt: interrupted while writing the run's files; all of them were written")
                self.exit_code = EXIT_INTERRUPTED

    def write_run_files(self, state, samples):
        """metrics.json, loss.png, then the history and the checkpoint (last: a stop before it resumes)."""
        s, cfg, out = self.s, state.cfg, self.s.out
        metrics = {"config": asdict(cfg), "engine": s.engine, "norm": cfg.norm, "corpus": s.corpus,
                   "seed": s.seed, "steps": state.step, "batch_size": state.batch_size, "lr": state.lr,
                   "riemannian": state.riemannian, "n_params": n_params(cfg), "docs": self.docs,
                   "final_train_loss": messages.final_train_loss(state),
                   "final_val_loss": state.val_loss[-1][1], "baselines": self.base,
                   "ms_per_step": state.ms_per_step, "samples": samples,
                   "history": {"train_loss": state.train_loss, "val_loss": [list(x) for x in state.val_loss]}}
        paths = [os.path.join(out, name) for name in ("metrics.json", "loss.png", HISTORY_NAME,
                                                      "checkpoint.npz")]
        write_json(paths[0], metrics)
        self.written.append(paths[0])
        plot_losses(paths[1], state, self.base, f"microgpt, norm={cfg.norm}, engine={s.engine}, "
                                                f"corpus={os.path.basename(s.corpus)}")
        self.written.append(paths[1])
        save_run(out, state, self.progress.history)
        self.written += paths[2:]
        print(as_text("wrote " + ", ".join(paths[i] for i in (3, 2, 0, 1))))
