"""harness/cli.py -- the command line of microgpt.py: a flag per row of
settings.SETTINGS, and the steps microgpt.main() takes around the chapter, in order:
parse_args, run_settings, model_config, check_run, RunFolder. Every check comes before
a step is taken or a file written: a refused run changes nothing.
"""
import argparse
import importlib.util
import os
import secrets
import sys
from dataclasses import asdict, dataclass, field

from checks import check_forward, check_sampling, computes_the_mirrors_logits
from corpora import BUILTIN, MAX_CORPUS_BYTES, corpus_id
from harness import messages
from harness.checkpoints import RunIdentity, corpus_change, corpus_fingerprint, load_run, save_run
from harness.errors import EXIT_INTERRUPTED, EXIT_IO, EXIT_OK, InputError, as_text
from harness.history import HISTORY_NAME, History, load_history
from harness.i18n import LANG_HELP, LANGUAGES, N_, _, language_from, translated, use
from harness.memory import check_corpus_memory, check_memory
from harness.run_files import (
    RUN_FILE_NAMES,
    RunLock,
    check_readable_file,
    not_a_regular_file,
    plot_losses,
    write_json,
)
from harness.shell import DeferSigint, Parser, Shell, say  # noqa: F401  (Shell: microgpt.main's)
from model_config import MODEL_FIELDS, TRAINING_FIELDS, GPTConfig, n_params
from settings import DEFAULTS, SETTINGS, check, check_combination, resumed

EPILOG = N_("""examples:
  python microgpt.py
  python microgpt.py --engine numpy --steps 3000 --out runs/np
  python microgpt.py --norm sphere --engine numpy --out runs/sphere
  python microgpt.py --resume --out runs/np --steps 5000
  python microgpt.py --sample-only --checkpoint runs/np/checkpoint.npz --prompt ma

built-in corpora: {corpora}; or a UTF-8 text file, one document per line, at most {mib} MiB
exit codes: 0 ok, 1 diverged, 2 bad input, 74 a file or standard output could not be written,
130 interrupted (docs/running.md says what each promises)""")


SAMPLING_FIELDS = ("num_samples", "temperature", "prompt", "seed", "engine")  # the flags first


@dataclass
class RunSettings:
    """Every setting of one run, a field per row of settings.SETTINGS (whose defaults
    and rules are the table's), then what the harness learns on the way."""
    n_embd: int
    n_head: int
    n_layer: int
    block_size: int
    norm: str
    alpha_init: float
    sz_init: float
    engine: str
    dtype: str
    steps: int
    batch_size: int
    lr: float
    seed: int
    riemannian: bool
    eval_every: int
    corpus: str
    max_memory: float
    out: str | None
    resume: bool
    checkpoint: str | None
    sample_only: bool
    num_samples: int
    temperature: float
    prompt: str
    lr_lowered_from: float | None = None  # a resume's --lr, lowered from the checkpoint's
    corpus_moved_from: str | None = None  # a resume's corpus, read before from this path
    run_id: str = ""                      # the same for a run and all its resumes
    resumed_from: RunIdentity = None      # the checkpoint's identity, on --resume
    notes: list = field(default_factory=list)  # lines the header prints
    fingerprint: tuple = ("", 0)          # the documents' (sha256, count), as check_run read them
    docs: dict = None                     # their counts: {"train", "val", "cropped"}

    def training(self):
        """train()'s settings."""
        return {name: getattr(self, name) for name in TRAINING_FIELDS}

    def sampling(self):
        """sample()'s settings."""
        return {name: getattr(self, name) for name in SAMPLING_FIELDS}

    def identity(self):
        """Who the run is and what it trains on, as its checkpoints record it."""
        return RunIdentity(self.corpus, self.run_id, *self.fingerprint)


def build_parser():
    """A flag per row of the table, in its groups; every default None, so that a resumed
    run can tell a flag given from one that was not."""
    p = Parser(prog="microgpt.py", formatter_class=argparse.RawDescriptionHelpFormatter,
               description=_("Train a tiny GPT on names and sample new ones. --norm sphere "
                             "switches to the nGPT hypersphere model; --engine numpy runs the "
                             "same math on arrays."),
               epilog=_(EPILOG).format(corpora=", ".join(BUILTIN),
                                       mib=MAX_CORPUS_BYTES // 2**20))
    p.add_argument("--lang", choices=LANGUAGES, help=_(LANG_HELP))
    names = dict.fromkeys(row.group for row in SETTINGS)  # model, training, files, sampling
    groups = {name: p.add_argument_group(_(name)) for name in names}
    for row in SETTINGS:
        group = groups[row.group]
        if row.rule.parse is bool:
            group.add_argument(row.flag, action="store_true", default=None, help=_(row.help))
        else:
            default = "" if row.default in (None, "") else _(" (default {default})").format(
                default=row.default)
            group.add_argument(row.flag, type=row.rule.parse, choices=row.rule.choices or None,
                               metavar=None if row.rule.choices else row.rule.shown,
                               help=_(row.help) + default)
    return p


def check_args(a):
    """Each given flag by its rule (as a checkpoint's value), and which go together."""
    for row in SETTINGS:
        if getattr(a, row.name) is not None:
            check(row.name, getattr(a, row.name), row.flag)
    if a.sample_only and not a.checkpoint:
        raise InputError(_("--sample-only needs --checkpoint PATH"))
    if a.sample_only and a.resume:
        raise InputError(_("--sample-only and --resume exclude each other (sample, or train on)"))
    if a.checkpoint and not (a.resume or a.sample_only):
        raise InputError(_("--checkpoint is only read with --resume or --sample-only"))
    if a.resume and not (a.checkpoint or a.out):
        raise InputError(_("--resume needs --checkpoint PATH or --out FOLDER (containing "
                           "checkpoint.npz)"))
    if a.out and os.path.exists(a.out) and not os.path.isdir(a.out):
        raise InputError(_("--out {out!r} exists and is not a folder").format(out=a.out))
    given = [row.flag for row in SETTINGS if not row.sampling and getattr(a, row.name) is not None]
    if a.sample_only and given:
        raise InputError(_("{flags}: no effect with --sample-only (it samples from the checkpoint "
                           "as it is; only --engine, --seed and the sampling flags apply)").format(
                               flags=", ".join(given)))


def new_settings(a):
    """A new run's settings: the flags over the table's defaults."""
    values = {name: default if getattr(a, name) is None else getattr(a, name)
         for name, default in DEFAULTS.items()}
    values["corpus"] = corpus_id(values["corpus"])
    check_combination(values["engine"], values["dtype"], values["norm"], values["riemannian"])
    return RunSettings(**values, run_id=secrets.token_hex(8))


def resumed_settings(a, resume, identity, ckpt_path):
    """A resumed run's settings: the checkpoint's, changed as settings.resumed allows; a
    corpus at another path is taken if its documents are the checkpoint's."""
    kept = {**asdict(resume.cfg), **resume.settings(), "corpus": corpus_id(identity.corpus)}
    given = {name: getattr(a, name, None) for name in kept}
    given["corpus"] = a.corpus and corpus_id(a.corpus)  # the same file, however it is spelled
    moved_from = None
    if given["corpus"] and given["corpus"] != kept["corpus"]:  # the run's folder moved, say
        moved_from, kept["corpus"] = kept["corpus"], given["corpus"]
    elif kept["corpus"] not in BUILTIN and not os.path.exists(kept["corpus"]):
        raise InputError(_("the checkpoint's corpus {corpus!r} is not there any more; if it "
                           "moved, give its new path with --corpus (its documents are checked "
                           "against the run's)").format(corpus=kept["corpus"]))
    merged, lowered = resumed(kept, given, resume.step, lambda name: "--" + name.replace("_", "-"))
    check_combination(merged["engine"], merged["dtype"], merged["norm"], merged["riemannian"],
                      _("checkpoint {path!r}: ").format(path=ckpt_path))
    flags = {name: getattr(a, name) for name in DEFAULTS.keys() - kept.keys()}  # --max-memory...
    values = {**DEFAULTS, **{k: v for k, v in flags.items() if v is not None}, **merged,
              "out": a.out or os.path.dirname(os.path.abspath(ckpt_path)), "checkpoint": ckpt_path}
    return RunSettings(**{name: values[name] for name in DEFAULTS},
                       lr_lowered_from=lowered.get("lr"), corpus_moved_from=moved_from,
                       run_id=identity.run_id or secrets.token_hex(8), resumed_from=identity)


def parse_args(argv=None):
    """The flags, each checked by its rule, and which go together (argparse's errors:
    one line); the console speaks --lang (or the locale's language) from here on."""
    argv = sys.argv[1:] if argv is None else list(argv)
    use(language_from(argv))
    args = build_parser().parse_args(argv)
    check_args(args)
    args.argv = argv  # the flags as typed, for a command that repeats them (the debugger's)
    return args


def load_checkpoint_for(args):
    """--resume, --sample-only: the checkpoint's state, identity and path, checked."""
    path = args.checkpoint or os.path.join(args.out, "checkpoint.npz")
    state, identity = load_run(path, args.max_memory)
    check_forward(state.params, state.cfg, _("checkpoint {path!r}").format(path=path))
    return state, identity, path


def run_settings(args):
    """The state to resume (or None) and the run's settings; a corpus file too large
    for --max-memory is refused before it is read."""
    if args.resume:
        resume, identity, path = load_checkpoint_for(args)
        opts = resumed_settings(args, resume, identity, path)
    else:
        resume, opts = None, new_settings(args)
    if resume is None and args.corpus in BUILTIN and os.path.exists(args.corpus):
        opts.notes.append(_("note: --corpus {corpus} is the built-in corpus; for the file of that "
                            "name here give its path, ./{corpus}").format(corpus=args.corpus))
    if opts.corpus not in BUILTIN and os.path.lexists(opts.corpus):  # (a FIFO would wait for a
        # writer: refused, never read; a missing file is load_corpus's to explain)
        check_readable_file(opts.corpus, N_("corpus file"))
    check_corpus_memory(opts.corpus, opts.max_memory)
    return resume, opts


def model_config(opts, vocab, resume):
    """The model's config: the checkpoint's, or the flags' sizes for this vocabulary."""
    if resume is not None:
        return resume.cfg
    return GPTConfig(len(vocab) + 1, **{name: getattr(opts, name) for name in MODEL_FIELDS})


def check_run(opts, cfg, vocab, train_docs, val_docs, resume, args, init_params):
    """Before anything is written: a resumed run's documents are the checkpoint's, the
    prompt can be sampled, the run fits in memory, and the initial weights compute
    within floating point. Records the documents' fingerprint and counts in opts."""
    if resume is not None:
        check_resumed_corpus(opts, resume, vocab, train_docs, val_docs)
    docs = train_docs + val_docs  # (the machine's memory first: its message names the machine)
    check_memory(cfg, opts.batch_size, opts.engine, opts.max_memory, opts.dtype,
                 (len(docs), sum(map(len, docs))), opts.steps, max(map(len, docs)) + 1)
    how = opts.sampling()
    check_sampling(how.pop("prompt"), vocab, cfg, **how)
    if resume is None:  # (a checkpoint's weights were checked as it was loaded)
        check_forward(init_params(cfg, opts.seed, opts.dtype), cfg, _("the initial weights"))
    opts.fingerprint = corpus_fingerprint(train_docs, val_docs)
    opts.docs = {"train": len(train_docs), "val": len(val_docs),
                 "cropped": sum(len(d) + 1 > cfg.block_size for d in docs)}


def note_gpt_edits(opts, cfg, model, init_params):
    """A note when --engine numpy runs numpy_engine.py's mirror of a `model` (gpt() or
    gpt_sphere()) that a learner's edit made compute other logits, or raise."""
    if opts.engine == "numpy" and not computes_the_mirrors_logits(model, cfg, init_params):
        opts.notes.append(_("note: {name}() no longer computes what numpy_engine.py does, and "
                            "--engine numpy runs numpy_engine.py, not {name}(): this run does not "
                            "use your edit (--engine value does)").format(name=model.__name__))


def check_resumed_corpus(opts, resume, vocab, train_docs, val_docs):
    """The checkpoint's documents (by fingerprint, else by vocabulary), wherever."""
    change = corpus_change(resume, opts.resumed_from, train_docs, val_docs, opts.corpus)
    if opts.corpus_moved_from and (vocab != resume.vocab or change):
        raise InputError(_("--corpus {corpus!r} differs from the checkpoint's corpus {moved!r}: "
                           "its documents are not the ones the run was trained on").format(
                               corpus=opts.corpus, moved=opts.corpus_moved_from))
    if vocab != resume.vocab:
        raise InputError(_("corpus {corpus!r} does not have the checkpoint's vocabulary; cannot "
                           "resume").format(corpus=opts.corpus))
    if change:
        raise InputError(_("{change}: the run cannot continue exactly; restore the corpus, or "
                           "start a new run").format(change=change))
    if opts.corpus_moved_from:
        how = (_("its documents are the checkpoint's (their fingerprint matches)")
               if opts.resumed_from.corpus_sha256 else
               _("the checkpoint has no fingerprint of its documents, so only its vocabulary "
                 "could be compared (it matches); from now on the checkpoint has one"))
        opts.notes.append(_("note: the corpus is now {corpus!r} (the checkpoint read it from "
                            "{moved!r}); {how}").format(
                                corpus=opts.corpus, moved=opts.corpus_moved_from, how=how))
    if opts.engine != resume.engine:
        opts.notes.append(_("note: this run was trained on the {old} engine and goes on with the "
                            "{new} engine: the two agree to about 1e-15, so the result is not bit "
                            "for bit the one either engine alone would give").format(
                                old=resume.engine, new=opts.engine))


def sample_checkpoint(args, iter_samples, shell):
    """--sample-only: a checkpoint's names (iter_samples: the chapter's), exit code."""
    ckpt, identity, _path = load_checkpoint_for(args)
    run = {**DEFAULTS, "seed": ckpt.seed, "engine": ckpt.engine}  # the sampling flags over these
    how = {name: run[name] if getattr(args, name) is None else getattr(args, name)
           for name in SAMPLING_FIELDS}
    messages.print_samples(iter_samples(ckpt.params, ckpt.cfg, ckpt.vocab, **how),
                           how["temperature"], how["prompt"], identity.corpus)
    return shell.exit_code


def finished(resume, opts, args, iter_samples):
    """Is this a resumed run with no step left? Then it says so, and samples if a
    sampling flag asks; its files are left as they are. True."""
    if resume is None or resume.step < opts.steps:
        return False
    asked = any(getattr(args, name) is not None for name in SAMPLING_FIELDS[:3])
    what = _(" Its names, with the sampling flags given:") if asked else _(
        " To see its names: --sample-only --checkpoint PATH, or give a sampling flag.")
    print(_("the run in {path} is finished: step {step} of {steps}; nothing to train, and its "
            "files stay as they are (to train on, give a larger --steps).").format(
                path=as_text(repr(opts.checkpoint)), step=resume.step, steps=opts.steps) + what)
    if asked:
        samples = iter_samples(resume.params, resume.cfg, resume.vocab, **opts.sampling())
        messages.print_samples(samples, opts.temperature, opts.prompt, opts.corpus)
    return True


def check_out_folder(out, resume, ckpt_path):
    """InputError unless --out may take this run's files: a new run's holds none, a
    resumed run's is its checkpoint's or holds none, each there a regular file."""
    ckpt = os.path.join(out, "checkpoint.npz")
    own = resume is not None and os.path.exists(ckpt) and os.path.samefile(ckpt, ckpt_path)
    present = [name for name in RUN_FILE_NAMES if os.path.lexists(os.path.join(out, name))]
    if present and not own:
        what = (_("--out {out!r} holds another run's files ({files}); a resumed run writes only "
                  "into its checkpoint's folder or a folder without run files")
                if resume is not None else
                _("--out {out!r} holds an earlier run's {files}; continue it with --resume, or "
                  "choose another --out (or delete them to start over)")
                if "checkpoint.npz" in present else
                _("--out {out!r} holds an earlier run's {files}; choose another --out (or delete "
                  "them to start over)"))
        raise InputError(what.format(out=out, files=", ".join(present)))
    for path in (os.path.join(out, name) for name in present):
        if not_a_regular_file(path):
            raise InputError(_("{path!r} is {kind}; a run writes its files only as regular files "
                               "(put the file itself there, or choose another --out)").format(
                                   path=path, kind=_(not_a_regular_file(path))))


def previous_history(path, resume, run_id, own_folder, notes):
    """On --resume, the history beside the checkpoint, to continue (snapshots past its
    step dropped); one behind or unreadable is a note. Another run's is refused in the
    run's own folder and left alone elsewhere."""
    if not os.path.lexists(path):
        return None
    try:
        h = load_history(path)
    except InputError as e:
        notes.append(_("note: the planetarium history is not continued ({error}); it starts "
                       "again").format(error=translated(e)))
        return None
    another = run_id and h.run_id and h.run_id != run_id
    if another or (h.cfg, h.vocab) != (resume.cfg, resume.vocab):
        if own_folder:
            raise InputError(_("{path!r} is the history of another run; a run writes only its "
                               "own files: move it away, or resume into another --out").format(
                                   path=path))
        return None
    if h.saved_step is not None and h.saved_step > resume.step:
        notes.append(_("note: {path} is ahead of the checkpoint (step {saved} > {step}: the run "
                       "stopped between its writes); its snapshots from step {step} on are "
                       "recorded again").format(path=path, saved=h.saved_step, step=resume.step))
        h.rewind(resume.step)
    elif h.saved_step is not None and h.saved_step < resume.step:
        notes.append(_("note: {path} is behind the checkpoint (step {saved} < {step}); it "
                       "continues without the snapshots in between").format(
                           path=path, saved=h.saved_step, step=resume.step))
    return h


def check_default_out(base="out"):
    """InputError unless a stopped run without --out could save to a new base/run-N
    (checked before the first step: otherwise Ctrl-C would lose the run)."""
    if os.path.lexists(base) and not os.path.isdir(base):
        what = N_("a dangling link") if os.path.islink(base) and not os.path.exists(base) else \
            not_a_regular_file(base) or N_("a file")
        raise InputError(_("./{base} is {what}, not a folder: a run without --out saves there "
                           "when stopped (Ctrl-C); move it away, or give --out FOLDER").format(
                               base=base, what=_(what)))
    folder = base if os.path.isdir(base) else "."
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(_("{folder!r} is not writable: a run without --out saves to "
                           "./{base}/run-N when stopped (Ctrl-C); give --out FOLDER").format(
                               folder=os.path.abspath(folder), base=base))


class RunFolder:
    """`with RunFolder(opts, resume, shell) as folder:` holds --out while the run runs
    (RunLock), continues its history, and tells the shell what a stop leaves behind."""

    def __init__(self, opts, resume, shell):
        self.opts, self.resume, self.shell = opts, resume, shell
        self.previous_history, self.history = None, None  # the run's snapshots (harness.run.Run)
        self.written = []  # the run files written so far
        self.last_good = resume and (os.path.abspath(opts.checkpoint), resume.step)  # (path, step)
        self.notices = list(opts.notes)

    def __enter__(self):
        opts = self.opts
        if opts.out and importlib.util.find_spec("matplotlib") is None:
            raise InputError(_("--out writes loss.png, which needs matplotlib: pip install "
                               "matplotlib"))
        if not opts.out:
            check_default_out()
        self.lock = RunLock(opts.out).__enter__()  # this run holds --out (or is refused: exit 2)
        try:
            if opts.out:
                check_out_folder(opts.out, self.resume, opts.checkpoint)
            if self.resume is not None:
                folder = os.path.dirname(os.path.abspath(opts.checkpoint))
                self.previous_history = previous_history(
                    os.path.join(folder, HISTORY_NAME), self.resume, opts.resumed_from.run_id,
                    os.path.samefile(folder, opts.out), self.notices)
            self.lock.claim()
        except BaseException:
            self.lock.__exit__()  # a refusal releases the folder: nothing changed
            raise
        self.notices.insert(0, self.lock.notice)
        self.shell.folder = self  # a stop or a failed write is now told as this folder sees it
        return self

    def __exit__(self, *exc):
        self.lock.__exit__()  # the --out folder is free again, however the run ended

    def start_history(self, cfg, vocab):
        """The run's History, going on from the checkpoint's on --resume."""
        self.history = History(cfg, vocab, self.opts.steps, previous=self.previous_history)
        return self.history

    def save(self, state, out=None):
        """At a val loss: the checkpoint and the history; from now on the last good one.
        out: another folder (a stopped run without --out saves to out/run-N)."""
        if out is None:
            self.lock.check_held()  # --out still names the folder this run holds
        out = out or self.opts.out
        save_run(out, state, self.history, self.opts.identity())
        self.last_good = (os.path.join(out, "checkpoint.npz"), state.step)

    def interrupted(self):
        path, step = self.last_good or (None, None)
        done = (_("{files} was written") if len(self.written) == 1 else
                _("{files} were written") if self.written else
                _("the last checkpoint is {path!r} (step {step})") if self.last_good else
                _("nothing was saved")).format(files=", ".join(self.written), path=path, step=step)
        return _("interrupted; {done} (files already written are complete: writes are atomic)"
                 ).format(done=done)

    def write_failed(self, error):
        opts = self.opts
        if self.lock.moved_to and self.last_good:  # the checkpoints went with the folder
            self.last_good = (os.path.join(self.lock.moved_to, "checkpoint.npz"), self.last_good[1])
        kept = messages.kept_checkpoint(self.last_good, opts.out, opts.eval_every, opts.steps)
        say(_("microgpt: error: {error}; training stopped; {kept}").format(error=error, kept=kept))
        return EXIT_IO

    def write_run_files(self, state, names, base):
        """metrics.json, loss.png, the history, the checkpoint (last: a stop before it
        resumes); the exit code."""
        opts, cfg, out = self.opts, state.cfg, self.opts.out
        if not out:
            return EXIT_OK
        with DeferSigint() as signal:
            self.lock.check_held()
            metrics = {"config": asdict(cfg), "engine": opts.engine, "norm": cfg.norm,
                       "corpus": opts.corpus,
                       "seed": opts.seed, "steps": state.step, "batch_size": state.batch_size,
                       "lr": state.lr, "riemannian": state.riemannian, "n_params": n_params(cfg),
                       "docs": opts.docs, "final_train_loss": messages.final_train_loss(state),
                       "final_val_loss": state.val_loss[-1][1], "baselines": base,
                       "ms_per_step": state.ms_per_step, "samples": names,
                       "history": {"train_loss": state.train_loss,
                                   "val_loss": [list(x) for x in state.val_loss]}}
            paths = [os.path.join(out, name) for name in ("metrics.json", "loss.png",
                                                          HISTORY_NAME, "checkpoint.npz")]
            write_json(paths[0], metrics)
            self.written.append(paths[0])
            plot_losses(paths[1], state, base, f"microgpt, norm={cfg.norm}, "
                        f"engine={opts.engine}, corpus={os.path.basename(opts.corpus)}")
            self.written.append(paths[1])
            save_run(out, state, self.history, opts.identity())
            self.written += paths[2:]
        print(as_text(_("wrote {paths}").format(paths=", ".join(paths[i] for i in (3, 2, 0, 1)))))
        if signal.hit:
            say(_("microgpt: interrupted while writing the run's files; all of them were written"))
            return EXIT_INTERRUPTED
        return EXIT_OK
