"""planetarium.py -- lecture 3's planetarium: one self-contained HTML page that replays training on the sphere.

    python planetarium.py RUN_DIR [RUN_DIR ...] [--html PATH]

Each RUN_DIR is the --out folder of a training run; its history.npz (harness/history.py: about 50 snapshots of
the weights, denser early) is all this needs. The page shows the token embeddings (wte rows) as stars on a sphere
you can rotate, a replay of training with the loss curves, in sphere mode how far each Adam step pushed the stars
off the sphere before the retraction pulled them back, a typed name's hidden states from position to position,
and the readout: the lm_head stars with the next-character probabilities and a vMF cap of concentration
kappa = s_z / T around each. Two runs (e.g. rmsnorm and sphere from the same seed) sit side by side under one
camera. Labels use lecture 3's Japanese terms, with an English toggle.

The page is one file: its data (base64 arrays in a JSON block), styles and scripts are inside it; it makes no
network request and opens from file://. The numbers it shows come from a JavaScript forward pass
(web/planetarium_model.js) that the tests check against numpy_engine.forward_np, to 1e-9, on exactly the weights
the page holds: wte, lm_head and the effective scales in float64, the other matrices in float32 (page_params).

Exit codes: 0 ok (the page's path is printed), 2 bad input (a missing folder, a run without history.npz, a
corrupted file, not enough memory: one line on stderr), 74 the page could not be written.
"""
if __name__ == "__main__":  # a Ctrl-C while NumPy loads ends quietly (no traceback from inside an import)
    from harness import leave, quiet_startup
    quiet_startup("planetarium")

import argparse
import base64
import json
import os
import re

import numpy as np

from harness.errors import InputError, as_text
from harness.history import HISTORY_NAME, load_history, unflatten
from harness.run_files import atomic_write, not_a_regular_file
from harness.shell import Parser, Shell, say
from model_config import param_offsets

ROOT = os.path.dirname(os.path.abspath(__file__))
WEB = os.path.join(ROOT, "web")
MAX_RUNS = 4               # side by side on one page
PAGE_CURVE = 400           # points per train-loss curve on the page (the plot is 360 pixels wide)
PAGE_BUDGET = 5 * 2**20    # two default runs make about 3 MB; above this the page says so on stderr


# --------------------------------------------------------------------------- the data a page holds

def rest_keys(cfg):
    """The matrices the page holds in float32 (half the size), in the order the page reads them: wpe, then per
    layer wq, wk, wv, wo, fc1, fc2. The stars (wte, lm_head rows) stay float64, so that sphere-mode stars are
    unit vectors to 1e-16, and so do the nGPT scales (as their effective values)."""
    keys = ["wpe"]
    for i in range(cfg.n_layer):
        keys += [f"layer{i}.{name}" for name in ("attn_wq", "attn_wk", "attn_wv", "attn_wo", "mlp_fc1", "mlp_fc2")]
    return keys


def page_params(history, k):
    """Snapshot k's weights exactly as the page holds them: the stars in float64, wpe and the layer matrices
    rounded to float32 (and back to float64), the scale vectors as stored (the page holds their effective values,
    which effective_scales computes from these). forward_np on this dict is what the page's forward pass computes."""
    params = history.params_at(k)
    for key in rest_keys(history.cfg):
        params[key][...] = params[key].astype(np.float32)
    return params


def principal_directions(wte):
    """The 3 principal directions of the embeddings (rows of wte, centered) and the share of the variance each
    explains. Signs are fixed so that each direction's largest entry is positive (the page looks the same each
    time it is made)."""
    centered = wte - wte.mean(axis=0)
    _, s, vt = np.linalg.svd(centered, full_matrices=False)
    basis = vt[:3].copy()
    if len(basis) < 3:  # (C = 2: pad with zeros; the page still draws a sphere)
        basis = np.vstack([basis, np.zeros((3 - len(basis), wte.shape[1]))])
    basis *= np.where(basis[np.arange(3), np.abs(basis).argmax(axis=1)] < 0, -1.0, 1.0)[:, None]
    share = (s ** 2 / max(np.sum(s ** 2), 1e-300))[:3]
    return basis, np.pad(share, (0, 3 - len(share)))


def b64(array, dtype):
    """A numpy array as base64 of its little-endian bytes (the page decodes it into a typed array)."""
    return base64.b64encode(np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()).decode()


def thin_curve(curve, most=PAGE_CURVE):
    """At most `most` points of an (N, 2) loss curve: means over equal runs (the plot has no more pixels)."""
    if len(curve) <= most:
        return curve
    edges = np.linspace(0, len(curve), most + 1).astype(np.int64)
    return np.add.reduceat(curve, edges[:-1], axis=0) / np.diff(edges)[:, None]


def export_run(history, name):
    """What the page needs of one run, as JSON-ready values (arrays as base64)."""
    cfg = history.cfg
    V, T = cfg.vocab_size, cfg.block_size
    offsets = param_offsets(cfg)[0]
    params = history.params
    span = lambda key: params[:, offsets[key][0]:offsets[key][0] + np.prod(offsets[key][1])]  # noqa: E731
    stars = np.concatenate([span("wte"), span("lm_head")], axis=1)
    rest = np.concatenate([span(key) for key in rest_keys(cfg)], axis=1)
    final = unflatten(params[-1], cfg)
    basis, share = principal_directions(final["wte"])
    run = {"name": name, "config": {k: getattr(cfg, k) for k in ("vocab_size", "n_embd", "n_head", "n_layer",
                                                                  "block_size", "norm", "alpha_init", "sz_init")},
           "labels": list(history.vocab) + ["BOS"], "steps": history.step.tolist(), "planned": history.steps,
           "basis": basis.tolist(), "share": share.tolist(),
           "stars": b64(stars, np.float64), "rest": b64(rest, np.float32), "scales": None, "drift": None,
           "train": thin_curve(history.train_loss).round(5).tolist(), "val": history.val_loss.round(5).tolist()}
    if cfg.norm == "sphere":
        run["scales"] = b64(history.scales, np.float64)
        drift = history.drift  # wte rows are the first V norms, lm_head rows come after the T rows of wpe
        run["drift"] = b64(np.concatenate([drift[:, :V], drift[:, V + T:2 * V + T]], axis=1), np.float64)
    return run


# --------------------------------------------------------------------------- the page

def read_web(name):
    with open(os.path.join(WEB, name), encoding="utf-8") as f:
        return f.read()


def build_page(runs):
    """The HTML of one page for the given [(history, name)]: web/planetarium.html with the styles, the scripts
    and the data put in."""
    data = {"runs": [export_run(h, name) for h, name in runs]}
    # in a <script> block "</" would end it: JSON may spell "<" as \u003c (it only occurs inside strings)
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    parts = {"CSS": read_web("planetarium.css"), "MODEL": read_web("planetarium_model.js"),
             "PAGE": read_web("planetarium_page.js"), "DATA": payload}
    # one pass over the template: what is put in is not searched again for marks
    return re.sub(r"/\*(CSS|MODEL|PAGE|DATA)\*/", lambda m: parts[m.group(1)], read_web("planetarium.html"))


def load_run(folder):
    """The History of a run folder; InputError with one line saying what is wrong and how to make one."""
    if not os.path.exists(folder):
        raise InputError(f"run folder {folder!r} not found")
    if not os.path.isdir(folder):
        raise InputError(f"{folder!r} is not a folder (give the --out folder of a training run)")
    path = os.path.join(folder, HISTORY_NAME)
    if not os.path.lexists(path):
        advice = (f"continue it with python microgpt.py --resume --out {folder}, which starts one" if
                  os.path.lexists(os.path.join(folder, "checkpoint.npz")) else
                  f"runs with --out record one, e.g. python microgpt.py --engine numpy --steps 500 --out {folder}")
        raise InputError(f"{folder!r} has no {HISTORY_NAME}: {advice}")
    return load_history(path)


def run_name(folder):
    return os.path.basename(os.path.normpath(os.path.abspath(folder))) or folder


def build_parser():
    p = Parser(prog="planetarium.py", formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Write one self-contained HTML page that replays training runs on the sphere "
                           "(lecture 3's planetarium) and print its path.",
               epilog="examples:\n"
                      "  python microgpt.py --engine numpy --steps 500 --out runs/rms\n"
                      "  python microgpt.py --engine numpy --steps 500 --norm sphere --out runs/sphere\n"
                      "  python planetarium.py runs/rms runs/sphere          # writes ./planetarium.html\n"
                      "  python planetarium.py runs/sphere --html /tmp/p.html\n\n"
                      "The page needs no network and no server: open it in a browser from file://. It shows the\n"
                      "token embeddings as stars (3 principal directions of the final embeddings, re-normalized),\n"
                      "a replay slider with the loss curves, the retraction in sphere mode, a typed name's hidden\n"
                      "states, and the next-character probabilities as vMF caps (kappa = s_z / T).\n\n"
                      "exit codes: 0 ok, 2 bad input (one line on stderr), 74 the page (or standard output) could not\n"
                      "be written, 130 interrupted (nothing is left behind)\n")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR",
                   help=f"the --out folder of a training run (it holds {HISTORY_NAME}); one to {MAX_RUNS}, shown "
                        "side by side under one camera")
    p.add_argument("--html", metavar="PATH",
                   help="where to write the page (default: RUN_DIR/planetarium.html for one run, ./planetarium.html "
                        "for several); it must end in .html or .htm, so that a run's own files (checkpoint.npz, "
                        "history.npz, metrics.json, ...) or a corpus are never overwritten; an existing page "
                        "there is replaced (a symbolic link, FIFO or device is refused, not replaced)")
    return p


def main(argv=None):
    with Shell("planetarium") as shell:  # bad input, write errors, signals: one line and an exit code
        args = build_parser().parse_args(argv)
        if len(args.runs) > MAX_RUNS:
            raise InputError(f"{len(args.runs)} runs given; one page shows at most {MAX_RUNS}")
        runs = [(load_run(folder), run_name(folder)) for folder in args.runs]
        path = page_path(args)
        page = build_page(runs).encode("utf-8")
        atomic_write(path, lambda f: f.write(page))
        if len(page) > PAGE_BUDGET:
            say(f"planetarium: note: the page is {len(page) / 2**20:.1f} MiB (big models make big pages); it still "
                "opens, but slowly")
        print(as_text(path))
    return shell.exit_code


def page_path(args):
    """Where the page goes: --html, or beside the run. Only a page's name is taken (a typo such as --html
    RUN/checkpoint.npz would replace a run's own file), and only a regular file is replaced."""
    path = args.html if args.html is not None else (
        os.path.join(args.runs[0], "planetarium.html") if len(args.runs) == 1 else "planetarium.html")
    if not path.strip():
        raise InputError("--html needs the path of the page to write (it is empty)")
    if os.path.isdir(path):
        raise InputError(f"--html {path!r} is a folder; give the path of the page to write")
    if not path.lower().endswith((".html", ".htm")):
        raise InputError(f"--html {path!r} does not end in .html or .htm; the page is written only to such a "
                         "path, so that no run file or corpus is overwritten")
    kind = not_a_regular_file(path)
    if kind:
        raise InputError(f"--html {path!r} is {kind}, not a regular file; it is left as it is (give the path "
                         "of a new or existing page)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"--html {path!r}: folder {folder!r} does not exist")
    return path


if __name__ == "__main__":
    leave(main())
