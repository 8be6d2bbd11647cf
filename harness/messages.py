"""harness/messages.py -- what `python microgpt.py` prints: the header, the progress
line with its ETA, the final line, the names, and one line on stderr for a diverged,
interrupted or failed run (what was kept, what to do next)."""
import os
import shlex
import sys

from harness.errors import EXIT_DIVERGED, EXIT_INTERRUPTED, EXIT_IO, EXIT_OK, WriteError, as_text
from harness.i18n import _
from harness.run_files import claim_run_folder
from harness.shell import say
from model_config import n_params
from numpy_engine import GREEDY_BELOW

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the project's folder


def fmt_loss(x):
    """A loss in a message: 4 decimals, a huge one as 1.234e+300 (never 300 digits)."""
    return f"{x:.4f}" if abs(x) < 1e4 else f"{x:.3e}"


def fmt_time(seconds):
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m{seconds:02d}s"


def print_header(opts, cfg, base, resume, notices):
    """The corpus, the model, the baselines and the notes."""
    docs = opts.docs
    print(_("corpus {corpus}: {docs} docs ({train} train / {val} val), vocab size {vocab} "
            "({chars} characters + BOS)").format(
        corpus=as_text(repr(opts.corpus)), docs=docs["train"] + docs["val"], train=docs["train"],
        val=docs["val"], vocab=cfg.vocab_size, chars=cfg.vocab_size - 1))
    if docs["cropped"]:
        print(_("note: {n} docs are longer than block_size {block_size}: cropped to it").format(
            n=docs["cropped"], block_size=cfg.block_size))
    print(_("model: norm={norm}, n_layer={n_layer}, n_embd={n_embd}, n_head={n_head}, "
            "block_size={block_size}, {params} parameters; engine={engine}").format(
        **vars(cfg), params=n_params(cfg), engine=opts.engine)
          + (", riemannian" if opts.riemannian else ""))
    print(_("baselines (val loss): ") + ", ".join(f"{k} {v:.4f}" for k, v in base.items()))
    for notice in filter(None, notices):
        print(as_text(notice))
    if resume is not None:
        lowered = (_(" (lr lowered from {old:g} to {new:g})").format(
            old=opts.lr_lowered_from, new=opts.lr) if opts.lr_lowered_from else "")
        print(_("resuming from step {step} of {steps}").format(step=resume.step, steps=opts.steps)
              + lowered)


def report(state, run, folder, opts, args):
    """How training ended, said; exit code 0 finished, 1 diverged, 130 interrupted."""
    if state.error:
        return report_divergence(state, folder, opts, args, engine_failed=not run.stopped)
    if run.interrupted and state.step < state.steps:
        return save_interrupted(state, folder, opts, args)
    print_final(state, run.base)
    return EXIT_OK


def kept_checkpoint(last_good, out, eval_every, steps, what="stopped"):
    """What a failed run leaves to fall back on, in words."""
    if last_good is not None:
        return _("the last good checkpoint is {path!r} (step {step})").format(
            path=last_good[0], step=last_good[1])
    if out:
        return (_("no checkpoint was written (it stopped before the first one, due at step {due})")
                if what == "stopped" else
                _("no checkpoint was written (it diverged before the first one, due at step "
                  "{due})")).format(due=min(eval_every, steps))
    return _("no checkpoint was written (no --out)")


def report_divergence(state, folder, opts, args, engine_failed=False):
    """Nothing new is written: the weights before the bad step would only repeat it.
    When the engine failed (value.NumericError), how to see where in a debugger."""
    kept = kept_checkpoint(folder.last_good, opts.out, opts.eval_every, opts.steps, "diverged")
    where = (" " + _("To see where it broke: {command}, then `{line}`, `c` (pdb stops there as the "
                     "error arrives) and `c` again (under a breakpoint main() lets the error "
                     "through: pdb stops post-mortem at the line that raised it).").format(
        command=debugger_command(args.argv), line=breakpoint_line()) if engine_failed else "")
    say(_("microgpt: error: training diverged: {error}. Stopped; {kept}. Try a smaller --lr (a "
          "resumed run may lower it: --resume --lr ...).").format(error=state.error, kept=kept)
        + where)
    return EXIT_DIVERGED


def debugger_command(argv):
    """python3 dev.py pdb microgpt.py ARGV: paths seen from here, every word quoted."""
    here = os.getcwd()
    return shlex.join(["python3", shown_path(os.path.join(ROOT, "dev.py"), here), "pdb",
                       shown_path(os.path.join(ROOT, "microgpt.py"), here), *argv])


def breakpoint_line():
    """`b microgpt.py:LINE`, the line of main() that catches the engine's NumericError:
    a breakpoint there (any breakpoint: pdb then traces) makes main() let it through."""
    with open(os.path.join(ROOT, "microgpt.py"), encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "except NumericError" in text)
    return f"b microgpt.py:{line}"


def save_interrupted(state, folder, opts, args):
    """Ctrl-C: save to --out (or a new out/run-N); print the command that continues."""
    try:
        out = opts.out or claim_run_folder("out")
        folder.save(state, out)
    except WriteError as e:
        say(_("microgpt: error: interrupted at step {step}/{steps}, but {error}; {kept}").format(
            step=state.step, steps=opts.steps, error=e,
            kept=kept_checkpoint(folder.last_good, opts.out, opts.eval_every, opts.steps)))
        return EXIT_IO
    say(_("interrupted at step {step}/{steps}; checkpoint saved to {path}\ncontinue with: "
          "{command}").format(step=state.step, steps=opts.steps,
                              path=os.path.join(out, "checkpoint.npz"),
                              command=resume_command(out, args)))
    return EXIT_INTERRUPTED


def shown_path(path, here):
    """path seen from `here`: relative when short, else absolute (not ../../a/...)."""
    path = os.path.abspath(path)
    relative = os.path.relpath(path, here)
    return path if relative.startswith(os.path.join(os.pardir, os.pardir)) else relative


def flag_words(flag, value):
    """[flag, value], or [flag=value] when the value starts with "-" (argparse would
    take it for a flag of its own: --prompt -x fails, --prompt=-x does not)."""
    value = str(value)
    return [f"{flag}={value}"] if value.startswith("-") else [flag, value]


def microgpt_command(words):
    """python microgpt.py WORDS, to paste where this program was started: this
    interpreter (a bare `python` may lack the packages) or MICROGPT_LAUNCHER (dev.py's),
    the script's path seen from here, every word quoted."""
    launcher = os.environ.get("MICROGPT_LAUNCHER")
    script = shown_path(os.path.join(ROOT, "microgpt.py"), os.getcwd())
    return shlex.join((shlex.split(launcher) if launcher else [sys.executable, script]) + words)


def resume_command(out, args):
    """The command that continues this run: --out (as given, or the folder claimed),
    and the flags a checkpoint does not keep, if given."""
    words = ["--resume"] + flag_words("--out", args.out or shown_path(out, os.getcwd()))
    for name in ("lang", "max_memory", "num_samples", "temperature", "prompt"):
        if getattr(args, name) is not None:
            words += flag_words("--" + name.replace("_", "-"), getattr(args, name))
    return microgpt_command(words)


def print_final(state, base):
    val, last = state.val_loss[-1][1], min(50, len(state.train_loss))
    below = (_("below the bigram baseline {bigram}") if val < base["bigram"]
             else _("not yet below the bigram baseline {bigram}"))
    print(_("final: train loss {train} (mean of last {last} steps), val loss {val} -- {below}; "
            "{ms} ms/step").format(train=fmt_loss(final_train_loss(state)), last=last,
                                   val=fmt_loss(val), ms=f"{state.ms_per_step:.2f}",
                                   below=below.format(bigram=f"{base['bigram']:.4f}")))


def final_train_loss(state):
    return sum(state.train_loss[-50:]) / len(state.train_loss[-50:])


KEEP_SAMPLES = 1000  # how many of the printed names metrics.json keeps


def print_samples(samples, temperature, prompt, corpus):
    """Print each sample as it arrives from an iterator; returns the first KEEP_SAMPLES
    of them. A name corpus's samples are called names."""
    if temperature < GREEDY_BELOW:
        print(_("note: temperature {t:g} is below {least:g}: taking the most likely character "
                "each time (greedy)").format(t=temperature, least=GREEDY_BELOW))
    what = (_("--- inference (new, hallucinated names; temperature {t}{prompt}) ---")
            if corpus in ("names", "jp-names")
            else _("--- inference (new, hallucinated samples; temperature {t}{prompt}) ---"))
    print(what.format(t=temperature, prompt=_(", prompt {prompt}").format(
        prompt=as_text(repr(prompt))) if prompt else ""))
    kept = []
    for i, name in enumerate(samples, 1):
        print(_("sample {i:2d}: {name}").format(i=i, name=as_text(name)))
        if i <= KEEP_SAMPLES:
            kept.append(name)
    return kept
