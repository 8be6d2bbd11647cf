"""step_player.py -- watch chapter 22 run: gpt() and backward(), line by line.

    python step_player.py [RUN_DIR ...] [--name NAME] [--into] [--html PATH]

One page shows the chapter's own training step on the Value engine over one name:
microgpt.loss_and_grads_value, which calls gpt() (gpt_sphere() in sphere mode) one
position at a time through the KV cache, then backward() on the name's loss. A trace
function (sys.settrace), limited to the model's function (and with --into to linear /
softmax / rmsnorm / l2_normalize, one level down), records each statement that runs:
its line as the file holds it now, the locals it created or changed, and after
backward() the gradient of every vector it made. An edited gpt() is recorded as edited;
a mistake in it is Python's traceback at its line.

The page (docs/step_player.md) holds its data, styles, font and scripts
(web/step_player*): it opens from file://, offline. The flags and exit codes: --help.
"""
if __name__ == "__main__":  # a Ctrl-C while NumPy loads ends quietly (no traceback from an import)
    from harness import leave, quiet_startup
    quiet_startup("step_player")

import argparse
import ast
import difflib
import inspect
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field

import microgpt
import planetarium
import sphere
import utils
from corpora import load_corpus
from harness import messages
from harness.checkpoints import load_checkpoint
from harness.errors import InputError, as_text
from harness.i18n import LANGUAGES, _, language_from, use
from harness.run_files import atomic_write
from harness.shell import Parser, Shell
from model_config import n_params
from value import Value

INSIDE = {"linear": utils.linear, "softmax": utils.softmax, "rmsnorm": utils.rmsnorm,
          "l2_normalize": sphere.l2_normalize}  # what --into records, one level down
DIGITS = 6  # significant digits of a number on the page (it shows 4; the tests read 6)
PAGE_MOST = 64 * 10**6  # a page estimated larger is refused before anything is recorded
FONT_FAMILY = "StepPlayerGothic"
WEB_PARTS = {"CSS": "step_player.css", "TEXT": "step_player_text.js",
             "PAGE": "step_player_page.js"}


# --------------------------------------------------------------------- what a line did

@dataclass
class Var:
    """One local as a line left it (describe), and the Values behind its numbers."""
    kind: str
    data: object
    nodes: object = None  # a Value, or lists of them shaped as data

    def grad(self):
        return nested(self.nodes, lambda v: v.grad) if self.nodes else None


def is_values(obj):
    return isinstance(obj, list) and all(isinstance(v, Value) for v in obj)


def describe(name, obj):
    """A local as the page shows it: a list of Values as its .data (a vector), a list of
    such lists as a matrix, the KV cache (keys, values) as its positions per layer."""
    if isinstance(obj, Value):
        return Var("val", obj.data, obj)
    if isinstance(obj, bool) or not isinstance(obj, (int, float, list)):
        return Var("text", repr(obj)[:80])
    if isinstance(obj, (int, float)):
        return Var("num", obj)
    if name in ("keys", "values") and all(isinstance(layer, list) for layer in obj):
        return Var("cache", [len(layer) for layer in obj])
    if is_values(obj):
        return Var("vec", [v.data for v in obj], list(obj))
    if obj and all(is_values(row) for row in obj):
        return Var("mat", [[v.data for v in row] for row in obj], [list(row) for row in obj])
    return Var("text", f"list of {len(obj)}")


def signature(obj):
    """What tells that a local changed: its identity, and for a list (grown in place by
    append or extend) its length, per layer for the KV cache."""
    if isinstance(obj, list):
        return id(obj), len(obj), tuple(len(x) for x in obj if isinstance(x, list))
    return (obj,) if isinstance(obj, (int, float)) else (id(obj),)


# ---------------------------------------------------------------- the functions' lines

@dataclass
class Code:
    """A function as its file holds it now, its statements and loops."""
    name: str
    file: str
    first: int
    lines: list
    statement: dict = field(default_factory=dict)  # line -> the line its statement starts on
    loops: list = field(default_factory=list)       # [header line, last line of the body]
    hidden: set = field(default_factory=set)  # the names only its comprehensions bind

    @classmethod
    def of(cls, function):
        lines, first = inspect.getsourcelines(function)
        code = cls(function.__name__, os.path.basename(inspect.getsourcefile(function)), first,
                   [line.rstrip("\n") for line in lines])
        tree = ast.parse("".join(lines))
        code.index(tree.body[0].body, first - 1)
        in_comprehensions = {id(n) for comp in ast.walk(tree) if isinstance(comp, ast.comprehension)
                             for n in ast.walk(comp.target)}
        names = [n for n in ast.walk(tree)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        bound = {n.id for n in names if id(n) not in in_comprehensions}
        bound |= {a.arg for a in ast.walk(tree.body[0].args) if isinstance(a, ast.arg)}
        code.hidden = {n.id for n in names if id(n) in in_comprehensions} - bound
        return code

    def index(self, body, offset):
        """Map each line to its statement: a simple statement's lines to its first
        line, a compound one's header lines to the header, its blocks' lines as their
        statements. The same on every Python, however a comprehension reports its lines
        (PEP 709)."""
        for stmt in body:
            start = stmt.lineno + offset
            blocks = [getattr(stmt, name, None) for name in ("body", "orelse", "finalbody")]
            blocks = [b for b in blocks if b] + [h.body for h in getattr(stmt, "handlers", [])]
            end = (min(b[0].lineno for b in blocks) - 1 if blocks else stmt.end_lineno) + offset
            for line in range(start, max(start, end) + 1):
                self.statement[line] = start
            if isinstance(stmt, (ast.For, ast.While)):
                self.loops.append([start, stmt.end_lineno + offset])
            for block in blocks:
                self.index(block, offset)


# ------------------------------------------------------------------------ the recorder

@dataclass
class Step:
    """One statement that ran: depth 0 in the model, 1 one level down (--into)."""
    function: str
    line: int
    depth: int
    pos: int
    changed: dict = field(default_factory=dict)  # the locals it created or changed
    args: dict = None   # on a call's first step: its arguments
    returned: Var = None  # on its last: what it returned


@dataclass
class Frame:
    code: Code
    depth: int
    seen: dict
    step: Step = None


class Recorder:
    """sys.settrace's trace function for the model's code objects (and --into's, while
    the model runs): each new statement of a traced frame opens a Step; the next one, or
    the return, closes it with what changed. Every other frame (Value's ops, the loss
    loop) runs untraced."""

    def __init__(self, model, into):
        self.model = Code.of(model)
        self.codes = {model.__code__: (self.model, 0)}
        self.codes.update({f.__code__: (Code.of(f), 1) for f in into})
        self.steps, self.calls, self.frames = [], [], {}

    def trace(self, frame, event, arg):
        found = self.codes.get(frame.f_code)
        if found is None or (found[1] and not self.frames):  # depth 1 only inside the model
            return None
        code, depth = found
        if depth == 0:
            self.calls.append(len(self.steps))
        self.frames[frame] = Frame(code, depth, self.locals_of(frame, code))
        return self.trace_line

    def trace_line(self, frame, event, arg):
        state = self.frames[frame]
        if event == "line":
            start = state.code.statement.get(frame.f_lineno)
            if start is not None and (state.step is None or start != state.step.line):
                self.close(frame, state)
                first = state.step is None
                state.step = Step(state.code.name, start, state.depth, len(self.calls) - 1)
                if first:
                    state.step.args = {k: describe(k, v) for k, v in self.locals_of(
                        frame, state.code).items() if k not in ("state_dict", "cfg")}
                self.steps.append(state.step)
        elif event == "return":
            self.close(frame, state)
            if state.step is not None:
                state.step.returned = describe("", arg)
            del self.frames[frame]
        return self.trace_line

    def locals_of(self, frame, code):
        return {k: v for k, v in frame.f_locals.items() if k not in code.hidden}

    def close(self, frame, state):
        """The open step's changes: each local whose identity or length has changed."""
        now = self.locals_of(frame, state.code)
        marks = {k: signature(v) for k, v in now.items()}
        if state.step is not None:
            state.step.changed = {k: describe(k, now[k]) for k in now
                                  if state.seen.get(k) != marks[k]}
        state.seen = marks


# ------------------------------------------------------------------------- a recording

@dataclass
class Recording:
    """The steps of gpt() (or gpt_sphere()) over one name, its loss and gradients."""
    norm: str
    cfg: object
    vocab: list
    tokens: list
    codes: list
    steps: list
    calls: list
    loss: float
    param_grads: dict
    logits: list
    run: str = ""
    trained_steps: int = 0


def record(params, cfg, vocab, name, into=False, run="", trained_steps=0):
    """Run the chapter's training step for one name under the recorder; a Recording."""
    tokens = microgpt.doc_tokens(name, vocab)
    model = microgpt.gpt_sphere if cfg.norm == "sphere" else microgpt.gpt
    functions = [f for key, f in INSIDE.items()
                 if into and (key != "rmsnorm" if cfg.norm == "sphere" else key != "l2_normalize")]
    recorder = Recorder(model, functions)
    previous = sys.gettrace()
    sys.settrace(recorder.trace)
    try:
        loss, grads = microgpt.loss_and_grads_value(params, [tokens], cfg)
    finally:
        sys.settrace(previous)
    codes = [recorder.model] + [code for code, depth in recorder.codes.values() if depth]
    logits = [s.returned.data for s in recorder.steps if s.depth == 0 and s.returned]
    return Recording(cfg.norm, cfg, list(vocab), tokens, codes, recorder.steps, recorder.calls,
                     loss, {k: g.copy() for k, g in grads.items()}, logits, run, trained_steps)


def probabilities(logits):
    """softmax, as utils.softmax computes it, on plain floats."""
    top = max(logits)
    exps = [math.exp(x - top) for x in logits]
    total = sum(exps)
    return [e / total for e in exps]


SPHERE_NAMES = {"h": "x", "hd": "h"}  # gpt_sphere calls the stream h, and its heads' loop hd


def differing_lines(base, other):
    """The lines of gpt_sphere (`other`, a Code) computing what gpt's (`base`) do not:
    comments, blank lines and the two renamed variables aside."""
    def plain(line, names):
        line = re.sub(r"\s*#.*$", "", line).strip()
        return re.sub(r"\b(\w+)\b", lambda m: names.get(m.group(1), m.group(1)), line)

    a, b = [plain(x, {}) for x in base.lines], [plain(x, SPHERE_NAMES) for x in other.lines]
    marked = []
    for op, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "equal":
            marked += [other.first + j for j in range(j1, j2) if b[j]]
    return marked


# --------------------------------------------------------------------- the page's data

def rounded(x):
    """A number to the page's DIGITS significant digits (a plain int stays as it is)."""
    return x if isinstance(x, int) else float(f"{x:.{DIGITS}g}")


def nested(data, fn=rounded):
    return [nested(x, fn) for x in data] if isinstance(data, list) else fn(data)


def export_var(var):
    out = {"k": var.kind, "d": var.data if var.kind in ("text", "cache") else nested(var.data)}
    grad = var.grad()
    if grad is not None:
        out["g"] = nested(grad)
    return out


def export_step(step):
    out = {"f": step.function, "l": step.line, "d": step.depth, "p": step.pos,
           "v": {k: export_var(v) for k, v in step.changed.items()}}
    if step.args is not None:
        out["a"] = {k: export_var(v) for k, v in step.args.items()}
    if step.returned is not None:
        out["r"] = export_var(step.returned)
    return out


def export_positions(rec):
    positions = []
    for p, (first, end) in enumerate(zip(rec.calls, rec.calls[1:] + [len(rec.steps)])):
        probs = probabilities(rec.logits[p])
        target = rec.tokens[p + 1]
        positions.append({"pos": p, "token": rec.tokens[p], "target": target,
                          "probs": nested(probs), "loss": rounded(-math.log(probs[target])),
                          "first": first, "last": end - 1})
    return positions


def export(rec, differs=()):
    """A Recording as the page reads it (docs/step_player.md describes every field)."""
    cfg = rec.cfg
    return {"norm": rec.norm, "model": rec.codes[0].name, "run": rec.run,
            "trained_steps": rec.trained_steps,
            "config": {k: getattr(cfg, k) for k in ("n_layer", "n_embd", "n_head", "head_dim",
                                                    "block_size", "vocab_size")},
            "vocab": rec.vocab, "tokens": rec.tokens, "loss": rounded(rec.loss),
            "code": {c.name: {"file": c.file, "first": c.first, "lines": c.lines,
                              "loops": c.loops, "differs": list(differs if i == 0 else ())}
                     for i, c in enumerate(rec.codes)},
            "steps": [export_step(s) for s in rec.steps], "positions": export_positions(rec),
            "param_grads": {k: nested(g.tolist()) for k, g in rec.param_grads.items()}}


def page_data(recordings, name, lang):
    """The page's DATA: one recording, or two side by side (gpt_sphere's lines that
    differ from gpt's marked when one of each is shown)."""
    models = {r.codes[0].name: r.codes[0] for r in recordings}
    differs = (differing_lines(models["gpt"], models["gpt_sphere"])
               if set(models) == {"gpt", "gpt_sphere"} else [])
    return {"font": FONT_FAMILY, "lang": lang, "name": name,
            "recordings": [export(r, differs if r.norm == "sphere" else ()) for r in recordings]}


# ---------------------------------------------------------------------------- the page

def make_page(recordings, name, lang="ja"):
    """The page's HTML: web/step_player.html with its styles, font, scripts and data."""
    payload = json.dumps(page_data(recordings, name, lang), ensure_ascii=False, allow_nan=False,
                         separators=(",", ":"))
    payload = payload.replace("<", "\\u003c")  # "</" would end the <script> block
    files = ["step_player.html", *WEB_PARTS.values()]
    parts = {key: planetarium.read_web(file) for key, file in WEB_PARTS.items()}
    parts["CSS"] = (planetarium.font_face(files, payload, FONT_FAMILY)
                    + parts["CSS"].replace("STEP_PLAYER_FONT", FONT_FAMILY))
    parts["DATA"] = payload
    return re.sub(r"/\*(CSS|TEXT|PAGE|DATA)\*/", lambda m: parts[m.group(1)],
                  planetarium.read_web("step_player.html"))


# ------------------------------------------------------------------------- the command

def fresh_models(seed=42):
    """Both norms at the default sizes for the names corpus, freshly initialized."""
    vocab = microgpt.build_vocab(load_corpus("names"))
    cfgs = [microgpt.GPTConfig(len(vocab) + 1, norm=norm) for norm in ("rmsnorm", "sphere")]
    return [(microgpt.init_params(cfg, seed), cfg, vocab, "", 0) for cfg in cfgs]


def load_model(folder):
    """(params, cfg, vocab, run, step) of a run folder's checkpoint, or InputError."""
    name = planetarium.run_folder(folder)
    path = os.path.join(folder, "checkpoint.npz")
    if not os.path.lexists(path):
        command = messages.microgpt_command(["--engine", "numpy", "--steps", "1000"] +
                                            messages.flag_words("--out", name))
        raise InputError(_("{name!r} has no checkpoint.npz: runs with --out save one, e.g. "
                           "{command}").format(name=name, command=command))
    state = load_checkpoint(path)
    return state.params, state.cfg, state.vocab, planetarium.run_name(folder), state.step


def check_name(name, cfg, vocab, run):
    """A name of known characters that fits the block, as training would read it."""
    where = _("run {run!r}").format(run=run) if run else _("the fresh model")
    unknown = [ch for ch in dict.fromkeys(name) if ch not in vocab]
    if not name or unknown:
        raise InputError(_("--name {name!r}: {where} knows only the characters {vocab} (give "
                           "--name with those)").format(name=name, where=where,
                                                        vocab="".join(vocab)))
    if len(name) > cfg.block_size:
        raise InputError(_("--name {name!r} has {n} characters; the block holds {most} (the "
                           "model's block_size)").format(name=name, n=len(name),
                                                         most=cfg.block_size))


def page_bytes(cfg, positions, into):
    """About what a recording's page takes, from its sizes (measured: each number ~9
    bytes, with its gradient; per position and layer ~90 vectors of width n_embd and the
    cached keys and values of each head; --into about 5 times as many steps)."""
    per_layer = 90 * cfg.n_embd + 2 * positions * cfg.n_embd
    steps = positions * (cfg.n_layer * per_layer + 2 * cfg.vocab_size) * 18
    return steps * (5 if into else 1) + 12 * n_params(cfg)


def check_size(models, name, into):
    """InputError, before anything is recorded, when the page would exceed PAGE_MOST."""
    size = sum(page_bytes(cfg, min(len(name) + 1, cfg.block_size), into)
               for _params, cfg, *_ in models)
    if size > PAGE_MOST:
        raise InputError(_("the page for this model and name would take about {mb:.0f} MB (at "
                           "most {most:.0f} MB): give a shorter --name, or leave out --into")
                         .format(mb=size / 1e6, most=PAGE_MOST / 1e6))


def build_parser():
    p = Parser(prog="step_player.py", formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Record chapter 22's gpt() and backward() over one name, line by line, "
                           "and write one self-contained HTML page that plays it back.",
               epilog="""examples:
  python step_player.py                          # a fresh model, RMSNorm beside the sphere
  python step_player.py runs/rms runs/sphere --name emma
  python step_player.py runs/rms --into --html /tmp/steps.html

The page needs no network and no server: open it in a browser from file://. Step through
gpt() with the arrow keys; the variables each line made are drawn as strips of colored
cells; the backward mode reads the code bottom to top with each vector's gradient.

exit codes: 0 ok, 2 bad input (one line on stderr), 74 the page could not be written,
130 interrupted
""")
    p.add_argument("runs", nargs="*", metavar="RUN_DIR",
                   help="the --out folder of a training run (it holds checkpoint.npz); none: "
                        "a fresh model of each norm; two: shown side by side")
    p.add_argument("--name", default="emma",
                   help="the name to run through the model (default: emma); its characters must "
                        "be in the model's vocabulary, at most block_size of them")
    p.add_argument("--into", action="store_true",
                   help="also record one level down: the lines of linear, softmax, rmsnorm "
                        "and l2_normalize")
    p.add_argument("--lang", choices=LANGUAGES,
                   help=_("the page's language (default: ja; a button on the page switches) and "
                          "the console's (default: ja in a Japanese locale, else en)"))
    p.add_argument("--html", metavar="PATH",
                   help="where to write the page (default: RUN_DIR/step_player.html for one "
                        "run, ./step_player.html otherwise); it must end in .html or .htm")
    return p


def main(argv=None):
    with Shell("step_player") as shell:  # bad input, write errors, signals: one line, exit code
        use(language_from(sys.argv[1:] if argv is None else argv))
        args = build_parser().parse_args(argv)
        if len(args.runs) > 2:
            raise InputError(_("{n} runs given; the page shows one, or two side by side")
                             .format(n=len(args.runs)))
        models = [load_model(f) for f in args.runs] if args.runs else fresh_models()
        for _params, cfg, vocab, run, _step in models:
            check_name(args.name, cfg, vocab, run)
        check_size(models, args.name, args.into)
        path = planetarium.page_path(args, "step_player.html")
        recordings = [record(params, cfg, vocab, args.name, args.into, run, step)
                      for params, cfg, vocab, run, step in models]
        html = make_page(recordings, args.name, args.lang or "ja")
        atomic_write(path, lambda f: f.write(html.encode("utf-8")))
        print(as_text(path))
    return shell.exit_code


if __name__ == "__main__":
    leave(main())
