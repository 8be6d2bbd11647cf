"""planetarium.py -- lecture 3's planetarium: a self-contained page replaying training.

    python planetarium.py RUN_DIR [RUN_DIR ...] [--html PATH]

Each RUN_DIR is a training run's --out folder; its history.npz (about 50 snapshots of
the weights) is all this needs. The page shows the token embeddings as stars on a
sphere, the replay of training, the retraction, a typed name's hidden states and the
readout (docs/planetarium.md). Data, styles, font (a subset of IPAexGothic) and scripts
(web/) are in the page: it opens from file:// with no network. The tests check its
JavaScript forward pass against gpt_forward, to 1e-9, on the weights the page holds.
The flags and exit codes: --help.
"""
if __name__ == "__main__":  # a Ctrl-C while NumPy loads ends quietly (no traceback from an import)
    from harness import leave, quiet_startup
    quiet_startup("planetarium")

import argparse
import base64
import importlib.util
import io
import json
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

import numpy as np
from fontTools import subset
from fontTools.ttLib import TTFont

from harness import messages
from harness.errors import InputError, as_text
from harness.history import HISTORY_FORMAT, HISTORY_NAME, HISTORY_VERSION, load_history, thin_curve
from harness.i18n import LANG_HELP, LANGUAGES, N_, _, language_from, use
from harness.memory import SNAPSHOT_BUDGET
from harness.run_files import (
    atomic_write,
    check_readable_file,
    not_a_regular_file,
    npz_headers,
    read_meta,
)
from harness.shell import Parser, Shell, say
from model_config import n_params, param_offsets, scale_sizes

WEB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "web")


# -------------------------------------------------------------------- the page's bounds

MAX_RUNS = 4  # side by side on one page
STAR_LIMIT = 400  # stars of one kind a sky draws at a time (the likeliest, those nearest h)
PAGE_CURVE = 400  # points per loss curve on the page (the plot is a few hundred pixels wide)
PAGE_BUDGET = 5 * 10**6  # the size a page aims at, leaving out snapshots where weights move least
PAGE_LIMIT = 16 * 10**6  # the most a page takes: a history needing more is refused at once
# The largest |weight| and |loss| a page draws (a real run's are O(1) to O(10)): the
# page's float64 forward pass cannot overflow (no Infinity or NaN on the page).
VALUE_LIMIT = 1e6
FONT_FAMILY = "PlanetariumGothic"  # the embedded font's name in the page (a subset of IPAexGothic)


# ------------------------------------------------------------- the weights a page holds

def matrix_layout(cfg):
    """([(key, offset, rows, cols)] of the flat layout's matrices, total size): what the
    page stores row by row. The nGPT scales after them are stored apart, effective."""
    mats = [(key, o, shape[0], shape[1]) for key, (o, shape) in param_offsets(cfg)[0].items()
            if len(shape) == 2]
    return mats, sum(rows * cols for _, _, rows, cols in mats)


def snapshot_chars(cfg):
    """The page's characters per snapshot (base64), (first, each later one): an int8
    code per weight (the first: int16), a float32 step per matrix row, in sphere mode
    the scales and the stars' drift. A formula (a test checks it against matrix_layout):
    2VC + TC + 12LC^2 weights in 2V + T + 9LC rows."""
    V, C, T, L = cfg.vocab_size, cfg.n_embd, cfg.block_size, cfg.n_layer
    size, rows = 2 * V * C + T * C + 12 * L * C * C, 2 * V + T + 9 * L * C
    extra = 4 * (7 * L * C + V + 2 * V) if cfg.norm == "sphere" else 0
    return 4 / 3 * (2 * size + 4 * rows + extra), 4 / 3 * (size + 4 * rows + extra)


def page_chars(cfg, count):
    """What `count` snapshots of a run take on a page (characters, about)."""
    first, later = snapshot_chars(cfg)
    return first + (count - 1) * later


def encode_weights(W, cfg):
    """The snapshots' matrices (K, size) as the page stores them: closed-loop deltas.

    The first snapshot is rounded to steps of its row's largest |w| / 32767 (int16).
    Each later one is stored as its difference from what the page holds of the one
    before, in steps of that difference's largest |value| / 127 (int8; a float32 step
    per row). The page sums them up, held[k] = held[k - 1] + code * step; as each
    difference is taken from what the page holds, rounding errors do not add up: every
    snapshot is within half a step of the run's weights. Returns (parts, held): the
    arrays to embed and the float64 weights the page decodes (in the page's order)."""
    mats, size = matrix_layout(cfg)
    K, nrows = len(W), sum(r for _, _, r, _ in mats)
    codes, steps = np.empty((K, size), np.int16), np.empty((K, nrows), np.float32)
    held, state = np.empty((K, size)), np.zeros(size)
    for k in range(K):
        most = 32767 if k == 0 else 127
        row = 0
        for _name, o, rows, cols in mats:
            cut = slice(o, o + rows * cols)
            diff = (W[k, cut] - state[cut]).reshape(rows, cols)
            step = (np.abs(diff).max(axis=1) / most).astype(np.float32)
            step64 = step.astype(np.float64)
            q = np.clip(np.rint(diff / np.where(step64 > 0, step64, 1.0)[:, None]), -most, most)
            state[cut] = (state[cut].reshape(rows, cols) + q * step64[:, None]).ravel()
            codes[k, cut], steps[k, row:row + rows] = q.ravel(), step
            row += rows
        held[k] = state
    return {"first": b64(codes[0], "<i2"), "firstStep": b64(steps[0], "<f4"),
            "codes": b64(codes[1:], "i1"), "steps": b64(steps[1:], "<f4")}, held


def unit_rows(held, cfg):
    """Sphere mode: the stars (wte and lm_head rows) divided by their norms again after
    rounding (x / sqrt(x . x), as the page does), so that their cosines are cosines."""
    if cfg.norm != "sphere":
        return held
    out = held.copy()
    for key in ("wte", "lm_head"):
        o, (rows, cols) = param_offsets(cfg)[0][key]
        block = out[:, o:o + rows * cols].reshape(len(out), rows, cols)
        block /= np.sqrt(np.einsum("kij,kij->ki", block, block))[:, :, None]
    return out


def choose_snapshots(W, most):
    """Indices of the snapshots a page keeps, at most `most` (at least the first and the
    last): a snapshot equal to the one kept before it is left out, then, while there are
    too many, the one whose neighbours are closest (L2), where weights move least."""
    keep = [0]
    for k in range(1, len(W)):
        if k < len(W) - 1 and np.array_equal(W[k], W[keep[-1]]):
            continue
        keep.append(k)
    gap = lambda i: float(np.linalg.norm(W[keep[i + 1]] - W[keep[i - 1]]))  # noqa: E731
    gaps = [np.inf] + [gap(i) for i in range(1, len(keep) - 1)] + [np.inf]
    while len(keep) > max(2, most):
        i = int(np.argmin(gaps))
        del keep[i], gaps[i]
        for j in (i - 1, i):
            if 0 < j < len(keep) - 1:
                gaps[j] = gap(j)
    return keep


def snapshot_counts(cfgs, counts, room):
    """How many snapshots each run keeps to fit in `room` characters: the run whose
    snapshots take the most gives one up, until they fit or every run is down to 2."""
    counts = list(counts)
    while sum(page_chars(c, n) for c, n in zip(cfgs, counts)) > room:
        i = max((i for i in range(len(counts)) if counts[i] > 2),
                key=lambda i: page_chars(cfgs[i], counts[i]), default=None)
        if i is None:
            break
        counts[i] -= 1
    return counts


def check_claims(path):
    """Refuse, from its array headers, a history claiming more than a page can hold:
    first and last snapshots over PAGE_LIMIT, or more snapshot weights than a run keeps
    (SNAPSHOT_BUDGET, or two snapshots of a model above it)."""
    try:
        with open(path, "rb") as f:
            cfg = read_meta(f, HISTORY_FORMAT, HISTORY_VERSION)[1]
            K = int(npz_headers(f, max_members=16)["params"][0][0])
    except Exception:  # noqa: BLE001 (not a history this can measure: load_history says why)
        return
    P, history = n_params(cfg), _("history {path!r}").format(path=path)
    need = page_chars(cfg, min(K, 2))
    if need > PAGE_LIMIT:
        raise InputError(_("{history} holds snapshots of {p:,} weights; even its first and last "
                           "snapshot would make a page of {mb:,.0f} MB, above the planetarium's "
                           "limit of {most:.0f} MB").format(
                               history=history, p=P, mb=need / 1e6, most=PAGE_LIMIT / 1e6))
    if 8 * K * P > max(SNAPSHOT_BUDGET, 2 * 8 * P):
        raise InputError(_("{history} claims {k} snapshots of {p:,} weights ({mib:,.0f} MiB); a "
                           "run keeps at most {most:.0f} MiB of them").format(
                               history=history, k=K, p=P, mib=8 * K * P / 2**20,
                               most=SNAPSHOT_BUDGET / 2**20))


def check_values(history, source):
    """Refuse what a page cannot draw: weights or losses beyond VALUE_LIMIT."""
    for what, values in (("weights", history.params), ("train_loss", history.train_loss[:, 1:]),
                         ("val_loss", history.val_loss[:, 1:])):
        top = float(np.abs(values).max()) if values.size else 0.0
        if not top <= VALUE_LIMIT:
            raise InputError(_("{source}: its {what} reach {top:.3g}; the planetarium draws "
                               "runs whose weights and losses stay within {most:.0e} (a real "
                               "run's are far smaller)").format(
                                   source=source, what=what, top=top, most=VALUE_LIMIT))


@dataclass
class PageRun:
    """One run as the page holds it."""
    history: object
    name: str
    kept: list          # the snapshots kept (history indices)
    steps: list
    held: np.ndarray    # the weights the page decodes (float64, stars re-normalized)
    scales: np.ndarray  # effective scales (float32)
    parts: dict         # the embedded data
    thinned: int = 0    # snapshots left out for the page's size (not repeats)


def prepare_run(history, name, count):
    """A PageRun of at most `count` snapshots of `history`."""
    cfg, W = history.cfg, history.params
    _, size = matrix_layout(cfg)
    kept = choose_snapshots(W[:, :size], count)
    parts, held = encode_weights(W[kept, :size], cfg)
    scales = history.scales[kept].astype(np.float32) if cfg.norm == "sphere" else None
    steps = history.step[kept].tolist()
    repeats = sum(np.array_equal(W[k, :size], W[k - 1, :size]) for k in range(1, len(W) - 1))
    return PageRun(history, name, kept, steps, unit_rows(held, cfg), scales, parts,
                   len(W) - repeats - len(kept))


def prepare_runs(runs, room=None):
    """PageRuns for [(history, name)], thinned so that the snapshots fit in `room`
    characters (default: PAGE_BUDGET less the rest of the page); InputError if even the
    first and last snapshots of every run exceed PAGE_LIMIT."""
    if room is None:
        room = PAGE_BUDGET - page_overhead(runs)
    cfgs = [h.cfg for h, _ in runs]
    counts = snapshot_counts(cfgs, [len(h) for h, _ in runs], room)
    need = sum(page_chars(c, min(n, 2)) for c, n in zip(cfgs, counts))
    if need > PAGE_LIMIT:
        raise InputError(_("these runs' first and last snapshots alone would make a page of "
                           "{mb:,.0f} MB, above the planetarium's limit of {most:.0f} MB; give "
                           "fewer or smaller runs").format(mb=need / 1e6, most=PAGE_LIMIT / 1e6))
    return [prepare_run(h, name, n) for (h, name), n in zip(runs, counts)]


# --------------------------------------------------------------------------- the map

def principal_directions(wte):
    """The 3 principal directions of the wte rows (centered), and their variance shares;
    each direction's largest entry is positive (the same page each time)."""
    centered = wte - wte.mean(axis=0)
    _, s, vt = np.linalg.svd(centered, full_matrices=False)
    basis = vt[:3].copy()
    if len(basis) < 3:  # (C = 2: pad with zeros; the page still draws a sphere)
        basis = np.vstack([basis, np.zeros((3 - len(basis), wte.shape[1]))])
    basis *= np.where(basis[np.arange(3), np.abs(basis).argmax(axis=1)] < 0, -1.0, 1.0)[:, None]
    share = (s ** 2 / max(np.sum(s ** 2), 1e-300))[:3]
    return basis, np.pad(share, (0, 3 - len(share)))


def unit(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-300)


def aligned_bases(finals, vocabs):
    """[(basis, share)]: each run's 3 principal directions of its final wte, every run
    after the first turned within them (orthogonal Procrustes on the characters both
    know, BOS included, which leaves their variance as it is) so that a letter stands in
    about one place in every sky."""
    out = [principal_directions(w) for w in finals]
    ref_basis, ref_index = out[0][0], {c: i for i, c in enumerate(vocabs[0])}
    for r in range(1, len(finals)):
        shared = [(i, ref_index[c]) for i, c in enumerate(vocabs[r]) if c in ref_index]
        if len(shared) < 3:
            continue
        mine, theirs = (np.array(ix) for ix in zip(*shared))
        A, B = unit(finals[r][mine] @ out[r][0].T), unit(finals[0][theirs] @ ref_basis.T)
        u, _, vt = np.linalg.svd(A.T @ B)
        out[r] = ((u @ vt).T @ out[r][0], out[r][1])
    return out


# ----------------------------------------------------------- what a page shows of a run

def b64(array, dtype):
    """A numpy array as base64 of its little-endian bytes (the page's typed array)."""
    little_endian = np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<"))
    return base64.b64encode(little_endian.tobytes()).decode()


def running_mean(curve):
    """A step's train loss (batch 1) jumps by a nat: its running mean, N/20 points."""
    if not len(curve):
        return curve
    w = max(1, round(len(curve) / 20))
    sums = np.convolve(curve[:, 1], np.ones(w))[:len(curve)]
    return np.stack([curve[:, 0], sums / np.minimum(np.arange(1, len(curve) + 1), w)], axis=1)


def shown(char, cmap):
    """How the page writes a character: itself if the page's font has it, a space as ␣,
    anything else (a control character, lone surrogate, missing glyph) as U+XXXX."""
    if char == " ":
        return "␣"
    surrogate = 0xD800 <= ord(char) <= 0xDFFF
    if char.isprintable() and not surrogate and (cmap is None or ord(char) in cmap):
        return char
    return f"U+{ord(char):04X}"


def export_run(page_run, basis, share, cmap=None):
    """What the page needs of one run, as JSON-ready values (arrays as base64). The
    layout comes from model_config: the page's script has no formula of its own."""
    h, cfg = page_run.history, page_run.history.cfg
    V, T = cfg.vocab_size, cfg.block_size
    mats, size = matrix_layout(cfg)
    run = {"name": page_run.name,
           "config": {k: getattr(cfg, k) for k in ("vocab_size", "n_embd", "n_head", "n_layer",
                                                   "block_size", "norm", "alpha_init", "sz_init")},
           # what a typed prefix is matched against (None: a lone surrogate, not UTF-8)
           "vocab": [None if 0xD800 <= ord(c) <= 0xDFFF else c for c in h.vocab] + [None],
           "labels": [shown(c, cmap) for c in h.vocab] + ["BOS"],
           "steps": page_run.steps, "planned": h.steps, "recorded": len(h),
           "layout": [[key, o, [rows, cols]] for key, o, rows, cols in mats], "size": size,
           "unitRows": ["wte", "lm_head"] if cfg.norm == "sphere" else [],
           "weights": page_run.parts, "basis": basis.tolist(), "share": share.tolist(),
           "scaleLayout": None, "scales": None, "drift": None,
           "train": running_mean(thin_curve(h.train_loss, PAGE_CURVE)).round(5).tolist(),
           "val": h.val_loss.round(5).tolist()}
    if cfg.norm == "sphere":
        sizes = scale_sizes(cfg)  # (name, offset, size) in the stored scales
        starts = accumulate(sizes.values(), initial=0)
        run["scaleLayout"] = [[name, o, n] for (name, n), o in zip(sizes.items(), starts)]
        run["scales"] = b64(page_run.scales, "<f4")
        # wte rows are the first V norms, lm_head rows come after the T rows of wpe
        drift = h.drift[page_run.kept]
        stars = np.concatenate([drift[:, :V], drift[:, V + T:2 * V + T]], axis=1)
        run["drift"] = b64(stars - 1, "<f4")
    return run


# ----------------------------------------------------------------------------- the page

def read_web(name):
    with open(os.path.join(WEB, name), encoding="utf-8") as f:
        return f.read()


WEB_PARTS = {"CSS": "planetarium.css", "TEXT": "planetarium_text.js",
             "MODEL": "planetarium_model.js", "PAGE": "planetarium_page.js"}


def font_path():
    """IPAexGothic as matplotlib-fontja ships it (found without an import), or None."""
    spec = importlib.util.find_spec("matplotlib_fontja")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, "fonts", "ipaexg.ttf")
        if os.path.isfile(path):
            return path
    return None


@lru_cache(maxsize=1)
def font_cmap():
    """The code points IPAexGothic has glyphs for (None without the font: keep all)."""
    path = font_path()
    return None if path is None else frozenset(TTFont(path, lazy=True).getBestCmap())


@lru_cache(maxsize=8)
def font_subset(chars):
    """IPAexGothic cut down to `chars` (a string) as WOFF; None without the font."""
    path = font_path()
    if path is None:
        return None
    options = subset.Options(flavor="woff", hinting=False, layout_features=[], notdef_outline=True)
    font = subset.load_font(path, options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=chars)
    subsetter.subset(font)
    out = io.BytesIO()
    subset.save_font(font, out, options)
    return out.getvalue()


PAGE_FILES = ("planetarium.html", *WEB_PARTS.values())


def font_face(files, chars, family=FONT_FAMILY):
    """The @font-face rule of `family`: IPAexGothic cut to the web `files`' characters
    (both languages' words), printable ASCII and `chars` ("" without the font)."""
    text = "".join(read_web(name) for name in files) + "".join(map(chr, range(32, 127))) + chars
    data = font_subset("".join(sorted(set(text) - set("\n\r\t"))))
    if data is None:
        return ""
    woff = base64.b64encode(data).decode()
    return (f"@font-face {{ font-family: \"{family}\"; font-display: block; "
            f"src: url(data:font/woff;base64,{woff}) format(\"woff\"); }}\n")


def run_chars(runs):
    """The runs' names and vocabularies as the page shows them."""
    cmap = font_cmap()
    return "".join(name + "".join(shown(c, cmap) for c in h.vocab) for h, name in runs)


def page_overhead(runs):
    """A page's characters but its snapshots: web files, font, ~40 kB a run."""
    return (sum(len(read_web(name)) for name in PAGE_FILES)
            + len(font_face(PAGE_FILES, run_chars(runs))) + 40_000 * len(runs))


def make_page(runs, lang=None):
    """(html, PageRuns) of one page for [(history, name)] that opens in `lang` (None:
    Japanese); InputError if they make no page within PAGE_LIMIT."""
    runs = [(h, clean_name(name)) for h, name in runs]
    for h, name in runs:
        check_values(h, f"run {name!r}")
    cmap = font_cmap()
    with np.errstate(all="raise"):
        try:
            page_runs = prepare_runs(runs)
            shapes = [(pr.history.cfg.vocab_size, pr.history.cfg.n_embd) for pr in page_runs]
            finals = [pr.held[-1, :V * C].reshape(V, C) for pr, (V, C) in zip(page_runs, shapes)]
            bases = aligned_bases(finals, [pr.history.vocab + ["\0BOS"] for pr in page_runs])
            data = {"font": FONT_FAMILY, "starLimit": STAR_LIMIT, "lang": lang,
                    "runs": [export_run(pr, basis, share, cmap)
                             for pr, (basis, share) in zip(page_runs, bases)]}
        except FloatingPointError as e:
            raise InputError(_("these runs' numbers overflow when the page is made ({error})")
                             .format(error=e)) from None
    # (check_values and the errstate above leave no NaN or inf for allow_nan to refuse)
    payload = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    # "</" would end the <script> block: JSON may spell "<" as \u003c (in strings)
    payload = payload.replace("<", "\\u003c")
    parts = {key: read_web(name) for key, name in WEB_PARTS.items()}
    parts["CSS"] = (font_face(PAGE_FILES, run_chars(runs))
                    + parts["CSS"].replace("PLANETARIUM_FONT", FONT_FAMILY))
    parts["DATA"] = payload
    # one pass over the template: what is put in is not searched again for marks
    html = re.sub(r"/\*(CSS|TEXT|MODEL|PAGE|DATA)\*/", lambda m: parts[m.group(1)],
                  read_web("planetarium.html"))
    return html, page_runs


def run_folder(folder):
    """The name of a run folder that is there, else InputError."""
    name = clean_name(folder)
    if not os.path.exists(folder):
        raise InputError(_("run folder {name!r} not found").format(name=name))
    if not os.path.isdir(folder):
        raise InputError(_("{name!r} is not a folder (give the --out folder of a training run)")
                         .format(name=name))
    return name


def load_run(folder):
    """The History of a run folder; InputError: what is wrong and what to do."""
    name = run_folder(folder)
    path = os.path.join(folder, HISTORY_NAME)
    if not os.path.lexists(path):
        resume = os.path.lexists(os.path.join(folder, "checkpoint.npz"))
        words = (["--resume"] if resume else ["--engine", "numpy", "--steps", "500"])
        command = messages.microgpt_command(words + messages.flag_words("--out", name))
        advice = (_("continue it with {command}, which starts one") if resume else
                  _("runs with --out record one, e.g. {command}")).format(command=command)
        raise InputError(_("{name!r} has no {file}: {advice}").format(
            name=name, file=HISTORY_NAME, advice=advice))
    check_readable_file(path, N_("history"))  # (a FIFO would wait for a writer: refused, not read)
    check_claims(path)
    return load_history(path)


def clean_name(text):
    """A folder name as the page and messages can write it in UTF-8: a byte that was
    not UTF-8 (Python keeps it as a lone surrogate) as \\xNN, other ones U+XXXX."""
    try:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    except UnicodeError:
        return "".join(f"U+{ord(c):04X}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def run_name(folder):
    return clean_name(os.path.basename(os.path.normpath(os.path.abspath(folder))) or folder)


def build_parser():
    p = Parser(prog="planetarium.py", formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Write one self-contained HTML page that replays training runs on the "
                           "sphere (lecture 3's planetarium) and print its path.",
               epilog="""examples:
  python microgpt.py --engine numpy --steps 500 --out runs/rms
  python microgpt.py --engine numpy --steps 500 --norm sphere --out runs/sphere
  python planetarium.py runs/rms runs/sphere          # writes ./planetarium.html
  python planetarium.py runs/sphere --html /tmp/p.html

The page needs no network and no server: open it in a browser from file://. It shows the
token embeddings as stars (3 principal directions of the final embeddings, re-normalized),
a replay slider with the loss curves, the retraction in sphere mode, a typed name's hidden
states, and the next-character probabilities as vMF caps (kappa = s_z / T).

exit codes: 0 ok, 2 bad input (one line on stderr), 74 the page (or standard output)
could not be written, 130 interrupted (nothing is left behind)
""")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR",
                   help=f"the --out folder of a training run (it holds {HISTORY_NAME}); one to "
                        f"{MAX_RUNS}, shown side by side under one camera")
    p.add_argument("--lang", choices=LANGUAGES, help=_(LANG_HELP))
    p.add_argument("--html", metavar="PATH",
                   help="where to write the page (default: RUN_DIR/planetarium.html for one run, "
                        "./planetarium.html for several); it must end in .html or .htm, so that a "
                        "run's own files (history.npz, ...) or a corpus are never overwritten; an "
                        "existing page there is replaced (a symlink, FIFO or device is refused)")
    return p


def main(argv=None):
    with Shell("planetarium") as shell:  # bad input, write errors, signals: one line, an exit code
        use(language_from(sys.argv[1:] if argv is None else argv))
        args = build_parser().parse_args(argv)
        if len(args.runs) > MAX_RUNS:
            raise InputError(_("{n} runs given; one page shows at most {most}").format(
                n=len(args.runs), most=MAX_RUNS))
        runs = [(load_run(folder), run_name(folder)) for folder in args.runs]
        path = page_path(args)
        html, page_runs = make_page(runs, args.lang)
        atomic_write(path, lambda f: f.write(html.encode("utf-8")))
        left_out = sum(pr.thinned for pr in page_runs)
        if left_out:
            say(_("planetarium: note: {n} snapshots where the weights move least are left out, "
                  "to keep the page near {mb:.0f} MB").format(n=left_out, mb=PAGE_BUDGET / 1e6))
        for h, name in (run for run in runs if run[0].cfg.vocab_size > STAR_LIMIT):
            say(_("planetarium: note: {name} has {v:,} tokens; each sky draws {most} of their stars"
                  " at a time (the likeliest and those nearest h), so that it turns quickly")
                .format(name=name, v=h.cfg.vocab_size, most=STAR_LIMIT))
        print(as_text(path))
    return shell.exit_code


def page_path(args, default="planetarium.html"):
    """Where the page goes: --html, or beside the run (named `default`). Only a page's
    name is taken (a typo such as --html RUN/checkpoint.npz would replace a run's file),
    and only a regular file is replaced."""
    path = args.html
    if path is None:
        path = os.path.join(args.runs[0], default) if len(args.runs) == 1 else default
    if not path.strip():
        raise InputError(_("--html needs the path of the page to write (it is empty)"))
    if os.path.isdir(path):
        raise InputError(_("--html {path!r} is a folder; give the path of the page to write")
                         .format(path=path))
    if not path.lower().endswith((".html", ".htm")):
        raise InputError(_("--html {path!r} does not end in .html or .htm; the page is written "
                           "only to such a path, so that no run file or corpus is overwritten")
                         .format(path=path))
    kind = not_a_regular_file(path)
    if kind:
        raise InputError(_("--html {path!r} is {kind}, not a regular file; it is left as it is "
                           "(give the path of a new or existing page)").format(
                               path=path, kind=_(kind)))
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(_("--html {path!r}: folder {folder!r} does not exist").format(
            path=path, folder=folder))
    return path


if __name__ == "__main__":
    leave(main())
