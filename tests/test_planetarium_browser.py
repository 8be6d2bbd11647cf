"""The planetarium page in a real browser: Playwright drives a headless Chromium (Debian's `chromium`, which .ci/run
installs) through the page planetarium.py writes for two runs, rmsnorm and sphere from one seed, and checks what a
learner sees, by its pixels where it matters, against places computed here from history.npz alone (the map's basis,
the Procrustes turn, the true angles from h, the camera): input stars, output stars and a typed name's path at three
snapshots; from the pixels, the fade of input stars, output stars and the path's dots, an RMSNorm star's size, the
retraction's direction and length (each star's drift), each top-3 label beside its own star, the cap rims at
arccos(1 - T/s_z) and the loss plot; the variance share, the tour's median angle and the replay's pacing from the
history. Also: the readout is numpy_engine.gpt_forward's top 3; at 375, 768,
1024, 1440 and 2560 px no control covers a sky and nothing scrolls sideways; headings in the accessibility tree, one
announcement per replay, reduced motion, touch; the tour of one, two and four runs; the embedded font has every
character the page shows; typography; keyboard, labels, the prefix as training reads it; the time to draw one frame
(printed, never a limit).

It also takes docs/planetarium.md's screenshots; they are written to the repository only when asked:
    PLANETARIUM_SCREENSHOTS=docs python3 dev.py test tests/test_planetarium_browser.py -k screenshots
With no Chromium (or no Playwright) the module is skipped with one line saying how to install it.
"""
import base64
import io
import os
import re
import statistics

import numpy as np
import pytest
from browser_helpers import ARGS, chromium_or_skip, write_big_vocab_run
from cli_helpers import make_runs
from test_planetarium import asks, check_page_numbers, page_params

import microgpt as mg
import planetarium
from harness.history import HISTORY_NAME, load_history

CHROMIUM, sync_playwright = chromium_or_skip("planetarium")

pytestmark = pytest.mark.slow

VIEWPORTS = [(375, 667, 2), (768, 1024, 2), (1024, 768, 1), (1440, 900, 1), (2560, 1440, 1)]

# Wraps the canvas's fillText, so that a test can read every string the page draws (the page's own code is unchanged)
RECORD_TEXT = """
window.__drawnText = new Set();
window.__drawnBoxes = [];
const fillText = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
  window.__drawnText.add(String(text));
  if (window.__drawnBoxes.length < 20000) {
    window.__drawnBoxes.push({canvas: this.canvas, text: String(text), x: rest[0], y: rest[1],
                              width: this.measureText(String(text)).width});
  }
  return fillText.call(this, text, ...rest);
};
window.__leaders = [];  // the thin lines from a star to its label when the label had to move off the star's line
const moveTo = CanvasRenderingContext2D.prototype.moveTo, lineTo = CanvasRenderingContext2D.prototype.lineTo;
CanvasRenderingContext2D.prototype.moveTo = function (x, y) {
  if (this.strokeStyle === "rgba(255, 194, 171, 0.5)" && window.__leaders.length < 2000) {
    window.__leaders.push({canvas: this.canvas, from: [x, y]});
  }
  return moveTo.call(this, x, y);
};
CanvasRenderingContext2D.prototype.lineTo = function (x, y) {
  const last = window.__leaders[window.__leaders.length - 1];
  if (this.strokeStyle === "rgba(255, 194, 171, 0.5)" && last && !last.to) last.to = [x, y];
  return lineTo.call(this, x, y);
};
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("planetarium_browser")
    out = make_runs(base)
    out["html"] = out.pop("html").with_name("planetarium.html")
    assert planetarium.main([out["rmsnorm"]["dir"], out["sphere"]["dir"], "--html", str(out["html"])]) == 0
    one = base / "one.html"  # (the command line's default: one run, here RMSNorm)
    assert planetarium.main([out["rmsnorm"]["dir"], "--html", str(one)]) == 0
    out["one"] = one
    four = base / "four.html"
    assert planetarium.main([out["rmsnorm"]["dir"], out["sphere"]["dir"]] * 2 + ["--html", str(four)]) == 0
    out["four"] = four
    sphere_only = base / "sphere_only.html"
    assert planetarium.main([out["sphere"]["dir"], "--html", str(sphere_only)]) == 0
    out["sphere_only"] = sphere_only
    return out


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def open_page(browser, html, width=1280, height=800, scale=1):
    """The page from file://, its console errors and requests recorded (checked by close_page)."""
    pg = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=scale)
    errors, requests = [], []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("request", lambda r: requests.append(r.url))
    pg.add_init_script(RECORD_TEXT)
    pg.goto(html.as_uri())  # (load: the page has drawn once its scripts have run)
    pg.evaluate("document.fonts.ready.then(() => window.__planetarium.drawFrame())")
    pg.errors, pg.requests, pg.html = errors, requests, html
    return pg


def close_page(pg):
    assert not pg.errors, pg.errors
    assert pg.requests == [pg.html.as_uri()], pg.requests
    pg.close()


@pytest.fixture(scope="module")
def page(browser, runs):
    """The two-run page at 1280 x 800; afterwards: no console errors, no request but the page."""
    pg = open_page(browser, runs["html"])
    yield pg
    close_page(pg)


def wait_until(page, condition, seconds=60):
    """Wait until a JavaScript condition holds, checked in the page at every animation
    frame (its policy forbids the eval behind page.wait_for_function); `seconds` only
    bounds a wait that never ends (the longest, a whole replay, takes 3 s)."""
    held = page.evaluate(f"""new Promise(done => {{ const end = performance.now() + {seconds * 1000};
        (function check() {{ if ({condition}) done(true); else if (performance.now() > end) done(false);
                             else requestAnimationFrame(check); }})(); }})""")
    assert held, f"{condition} did not become true within {seconds} s"


# the page's scroll at rest: the same scrollY over 10 animation frames in a row (a
# touch's fling has ended)
SCROLL_AT_REST = """new Promise(done => { let last = null, same = 0;
    (function look() { same = window.scrollY === last ? same + 1 : 0; last = window.scrollY;
                       if (same >= 10) done(last); else requestAnimationFrame(look); })(); })"""


def picture(page, i):
    """Sky i's pixels, as a data URL."""
    return page.evaluate(f"document.querySelectorAll('.dome canvas')[{i}].toDataURL()")


def pixels_at(page, ri, points):
    """The colors of sky ri's canvas around each point (CSS pixels): a 3 x 3 device-pixel patch each, flattened."""
    return page.evaluate("""([ri, points]) => {
        const c = document.querySelectorAll('.dome canvas')[ri], dpr = c.width / c.getBoundingClientRect().width;
        const ctx = c.getContext('2d');
        return points.map(([x, y]) => Array.from(ctx.getImageData(Math.round(x * dpr) - 1, Math.round(y * dpr) - 1,
                                                                  3, 3).data));
    }""", [ri, points])


def changed_share(before, after):
    """The share of patches whose colors moved by more than 12 (of 255) somewhere."""
    moved = [np.abs(np.array(a, dtype=int) - np.array(b, dtype=int)).max() > 12 for a, b in zip(before, after)]
    return sum(moved) / max(1, len(moved))


def reset(page, prefix="", time=None, T=50):
    """Back to a known view: everything but the retraction and trails on, a prefix, the time (default: the end)."""
    page.evaluate("""([prefix, time, T]) => {
        const P = window.__planetarium;
        Object.assign(P.state.show, {stars: true, out: true, path: true, drift: false, trail: false, trueH: true,
                                      allCaps: true});
        P.state.selected = []; P.state.hover = null;
        P.state.R = [[0.8253, 0, 0.5646], [0.2456, 0.9004, -0.3590], [-0.5084, 0.4350, 0.7431]];
        document.getElementById('prefix').value = prefix; P.state.prefix = prefix;
        const temp = document.getElementById('temp');
        temp.value = String(T); temp.dispatchEvent(new Event('input'));
        P.setTime(time === null ? 1e18 : time); P.update(); P.drawFrame();
    }""", [prefix, time, T])


# --------------------------------------------------------------------------- what is drawn

def test_it_loads_without_errors_and_draws_two_skies(page):
    assert page.evaluate("window.__planetarium.runs") == 2
    assert page.locator(".dome canvas").count() == 2
    assert page.evaluate("document.fonts.check('13px \"PlanetariumGothic\"')")
    assert not page.errors


LAYERS = {  # the toggle, the items whose pixels must change, the moment to look at
    "stars": ("stars", "stars", "end"),
    "output stars": ("out", "out", "end"),
    "caps": ("out", "caps", "end"),
    "path": ("path", "path", "end"),
    "retraction": ("drift", "drift", "early"),
    "trails": ("trail", "trail", "middle"),
}


@pytest.mark.parametrize("layer", list(LAYERS))
def test_each_layer_toggle_changes_the_pixels_where_its_items_are_drawn(page, layer):
    """Toggling a layer changes the pixels at the places its items are projected to (taken from the page's own
    projection, near side only), away from the other layers' items. Without the drawing of that layer the pixels
    there stay as they are and this fails."""
    toggle, items, when = LAYERS[layer]
    steps = page.evaluate("window.__planetarium.view(1).steps")
    time = {"end": None, "early": steps[len(steps) // 4], "middle": steps[len(steps) // 2]}[when]
    reset(page, prefix="emma", time=time, T=25)
    for ri in range(2):
        if layer in ("caps", "retraction") and ri == 0:
            continue  # (RMSNorm has neither)
        page.evaluate(f"window.__planetarium.show({toggle!r}, true)")
        where = page.evaluate(f"window.__planetarium.projected({ri})")
        others = [p for key, pts in where.items() if key not in (items, "caps", "trail", "drift") for p in pts]
        away = {"caps": 14, "trails": 14, "retraction": 7}.get(layer, 0)
        points = [p for p in where[items]
                  if away == 0 or all((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 > away ** 2 for q in others)]
        assert len(points) >= 3, (layer, ri, len(points))
        on = pixels_at(page, ri, points)
        page.evaluate(f"window.__planetarium.show({toggle!r}, false)")
        off = pixels_at(page, ri, points)
        share = changed_share(on, off)
        assert share >= 0.6, f"{layer}, sky {ri}: only {share:.0%} of {len(points)} places changed"
        page.evaluate(f"window.__planetarium.show({toggle!r}, true)")
    reset(page)
    assert not page.errors


def test_the_readout_on_the_sky_is_gpt_forwards_top_3(page, runs):
    """For a typed prefix, each sky's readout lists the 3 most likely next characters
    with the probabilities numpy_engine.gpt_forward computes from the weights the page holds."""
    for prefix in ("", "emma"):
        reset(page, prefix=prefix)
        for ri, page_run in enumerate(runs["page_runs"]):
            h = page_run.history
            view = page.evaluate(f"window.__planetarium.view({ri})")
            ids = [len(h.vocab)] + mg.encode(prefix, h.vocab)
            logits, _ = mg.gpt_forward(page_params(page_run, view["k"]), ids, h.cfg)
            probs = np.exp(logits[-1] - logits[-1].max())
            probs /= probs.sum()
            top = np.argsort(-probs)[:3]
            readout = page.locator(".readout").nth(ri)
            shown = readout.locator(".top")
            assert shown.count() == 3
            for j, i in enumerate(top):
                assert shown.nth(j).get_attribute("data-token") == (h.vocab + ["BOS"])[i]
                assert abs(float(shown.nth(j).get_attribute("data-p")) - probs[i]) < 1e-9
                pct = 100 * probs[i]
                assert (f"{pct:.0f}%" if pct >= 9.5 else f"{pct:.1f}%") in shown.nth(j).inner_text()
            # the top 3 are labelled on the sky: near side at the star, far side at the rim
            drawn = page.evaluate("[...window.__drawnText]")
            for i in top:
                label = (h.vocab + ["BOS（終わり）"])[i]  # (the end token as it reads)
                assert any(s.startswith(label + " ") for s in drawn), (label, drawn[:20])


def test_the_pages_forward_pass_is_gpt_forward_in_the_browser(page, runs):
    cases = asks(runs)
    results = page.evaluate("""asks => asks.map(([ri, k, tokens, T]) => {
        const P = window.__planetarium, r = P.forward(ri, k, tokens);
        return {hidden: r.hidden, logits: r.logits, probs: P.softmax(r.logits[tokens.length - 1], T)};
    })""", [a for a, _ in cases])
    check_page_numbers(results, cases)


def test_the_replay_slider_play_and_a_drag_change_the_picture(page):
    reset(page)
    before = [picture(page, 0), picture(page, 1)]
    label = page.inner_text("#stepLabel")
    page.focus("#replay")
    page.keyboard.press("Home")  # the slider to step 0, as a learner's keyboard would move it
    page.evaluate("window.__planetarium.drawFrame()")
    assert page.evaluate("window.__planetarium.view(1).k") == 0 and page.inner_text("#stepLabel") != label
    assert [picture(page, 0), picture(page, 1)] != before
    play = page.inner_text("#play")
    page.click("#play")
    wait_until(page, "window.__planetarium.state.time > 20")
    assert page.inner_text("#play") != play
    page.click("#play")
    assert page.inner_text("#play") == play and not page.evaluate("window.__planetarium.state.playing")
    reset(page)
    box = page.locator(".dome canvas").first.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 60, y + 25, steps=6)
    page.mouse.up()
    page.evaluate("window.__planetarium.drawFrame()")
    after = [picture(page, 0), picture(page, 1)]
    assert after[0] != before[0] and after[1] != before[1]  # one camera turns both skies
    assert not page.errors


def test_the_replay_moves_the_stars_between_snapshots(page):
    """Between two snapshots the stars are drawn on the great circle between their two positions (slerp), at a time
    spaced as trained; the numbers stay those of the earlier snapshot."""
    steps = page.evaluate("window.__planetarium.view(1).steps")
    k = 3
    at = []
    for time in (steps[k], (steps[k] + steps[k + 1]) / 2, steps[k + 1]):
        page.evaluate(f"window.__planetarium.setTime({time})")
        at.append(page.evaluate("[window.__planetarium.view(1), window.__planetarium.starAt(1, 'a')]"))
    assert at[1][0]["k"] == k and at[1][0]["f"] == pytest.approx(0.5) and at[0][0]["f"] == 0
    assert at[1][0]["probs"] == at[0][0]["probs"]
    a, mid, b = (np.array([s["x"], s["y"]]) for _, s in at)
    assert np.linalg.norm(b - a) > 1
    assert np.linalg.norm(mid - (a + b) / 2) < 0.25 * np.linalg.norm(b - a)
    speed = page.locator("#speed")
    assert speed.evaluate("e => e.labels.length") == 1 and speed.locator("option").count() == 5
    reset(page)


def test_output_stars_stand_at_their_true_angle_from_h(page):
    """With the option on (the default), every output star's cosine with h on the map is its cosine in C dimensions,
    so the map's nearness to h is the real one; the plain projection distorts it (the measurement in
    docs/planetarium.md: its rank agreement with the probabilities is far weaker)."""
    reset(page, prefix="emma")
    for ri in range(2):
        pairs = np.array(page.evaluate(f"window.__planetarium.cosToH({ri})"))
        assert np.abs(pairs[:, 0] - pairs[:, 1]).max() < 1e-9
    page.evaluate("window.__planetarium.show('trueH', false)")
    pairs = np.array(page.evaluate("window.__planetarium.cosToH(1)"))
    assert np.abs(pairs[:, 0] - pairs[:, 1]).mean() > 0.05
    reset(page)
    page.evaluate("window.__planetarium.show('trueH', true)")


def test_the_retraction_has_one_exaggeration_for_the_whole_replay(page):
    """Its factor is the same at every snapshot, so the drawn offsets shrink as the learning rate decays."""
    steps = page.evaluate("window.__planetarium.view(1).steps")
    reset(page, time=steps[2])
    page.evaluate("window.__planetarium.show('drift', true)")
    lengths, texts = [], []
    for k in (2, len(steps) // 2, len(steps) - 1):
        page.evaluate(f"window.__planetarium.setTime({steps[k]}); window.__planetarium.update()")
        where = page.evaluate("window.__planetarium.projected(1)")
        drift = where["drift"]
        lengths.append(len(drift))  # (8 points on each ring wider than 3 pixels)
        texts.append(re.search(r"×(\S+?)[)）]", page.locator(".skyInfo").nth(1).inner_text()).group(1))
    assert len(set(texts)) == 1, texts
    assert lengths[0] > 3 * lengths[2], lengths
    reset(page)


def test_a_negative_s_z_has_its_cap_at_the_opposite_point(browser, runs, tmp_path):
    """A character whose s_z is negative (the jp-names sphere run learns one) gets likelier the further h points from
    its star: the density exp(kappa w.h) peaks at -w, where its cap is drawn (dashed), of angle cos th = 1 - 1/|kappa|;
    |kappa| <= 1/2 covers the whole sphere."""
    from model_config import param_offsets
    h = load_history(os.path.join(runs["sphere"]["dir"], HISTORY_NAME))
    o = param_offsets(h.cfg)[0]["sz"][0] + h.vocab.index("e")
    for p in h._params:
        p[o] = -3 * abs(p[o])  # s_z(e) < 0 at every snapshot (the effective scales follow in save)
    (tmp_path / "neg").mkdir()
    h.save(str(tmp_path / "neg" / HISTORY_NAME), h.train_loss[:, 1], [tuple(v) for v in h.val_loss])
    html = tmp_path / "neg.html"
    assert planetarium.main([str(tmp_path / "neg"), "--html", str(html)]) == 0
    pg = open_page(browser, html)
    cap = pg.evaluate("window.__planetarium.cap(0, 'e')")
    assert cap["kappa"] < -0.5 and cap["anti"] and not cap["whole"]
    assert np.allclose(cap["center"], -np.array(cap["star"]))
    assert np.cos(cap["theta"]) == pytest.approx(1 - 1 / abs(cap["kappa"]))
    pg.evaluate("document.getElementById('temp').value = '100'; document.getElementById('temp')"
                ".dispatchEvent(new Event('input'))")  # T = 4: kappa / 4
    cap = pg.evaluate("window.__planetarium.cap(0, 'e')")
    assert cap["whole"] == (abs(cap["kappa"]) <= 0.5)
    assert "−w_k" in pg.inner_text("#notes")
    close_page(pg)


# --------------------------------------------------------------------------- an independent projection
# Where things should be drawn, computed here from history.npz alone (float64 weights, no code of the page or of
# planetarium.py): the map's 3 directions are the principal directions of the last snapshot's embeddings (centered
# rows of wte; each direction's largest entry positive), every run after the first turned within them by the
# orthogonal Procrustes rotation that best matches its characters' directions to the first run's; a point is its
# direction in those 3 coordinates, turned by the camera R and drawn orthographically on the dome (center S/2, radius
# 0.43 S). The page computes all of this in JavaScript from its own 8-bit copy of the weights.

def histories(runs, names=("rmsnorm", "sphere")):
    return [load_history(os.path.join(runs[n]["dir"], HISTORY_NAME)) for n in names]


def wte_of(h, index):
    V, C = h.cfg.vocab_size, h.cfg.n_embd
    return h.params[index, :V * C].reshape(V, C)


def lm_head_of(h, index):
    return h.params_at(index)["lm_head"]


def map_bases(hs):
    """Each run's 3 x C map basis, from the math above."""
    bases, directions = [], []
    for h in hs:
        w = wte_of(h, len(h) - 1)
        _, _, vt = np.linalg.svd(w - w.mean(axis=0), full_matrices=False)
        b = vt[:3] * np.sign(vt[:3][np.arange(3), np.abs(vt[:3]).argmax(axis=1)])[:, None]
        bases.append(b)
        directions.append(dict(zip(h.vocab + ["BOS"], unit_rows(w @ b.T))))
    for r in range(1, len(hs)):
        shared = [c for c in directions[r] if c in directions[0]]
        A = np.array([directions[r][c] for c in shared])
        B = np.array([directions[0][c] for c in shared])
        u, _, vt = np.linalg.svd(A.T @ B)
        bases[r] = (u @ vt).T @ bases[r]
    return bases


def unit_rows(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def on_screen(points, R, size):
    """Map points (N, 3) on the unit sphere -> (N, 2) CSS pixels on a sky of `size`, and whether on the near side."""
    R, rho = np.array(R), 0.43 * size
    cam = points @ R.T
    return np.stack([size / 2 + rho * cam[:, 0], size / 2 - rho * cam[:, 1]], axis=1), cam[:, 2] > 0


def history_index(h, step):
    return int(np.flatnonzero(h.step == step)[0])


def true_angle_places(lm_map, h_map, cosines):
    """Output stars moved along the map's great circle through h to their true angle arccos(w . h) from it."""
    d = lm_map - (lm_map @ h_map)[:, None] * h_map
    return cosines[:, None] * h_map + np.sqrt(1 - cosines ** 2)[:, None] * unit_rows(d)


def expected_places(h, basis, index, prefix):
    """Input stars, output stars (at their true angle from h) and every hidden state of the prefix's path (each
    position after the embedding and after each block), as map points, for snapshot `index` of history h."""
    wte, lm = wte_of(h, index), lm_head_of(h, index)
    ids = [len(h.vocab)] + mg.encode(prefix, h.vocab)
    _, acts = mg.gpt_forward(h.params_at(index), ids, h.cfg)
    path = np.concatenate([unit_rows(np.reshape(stage, (len(ids), -1)) @ basis.T) for stage in acts.hidden])
    last = unit_rows(np.reshape(acts.hidden[-1], (len(ids), -1))[-1])
    h_map = unit_rows(last @ basis.T)
    cosines = np.clip(unit_rows(lm) @ last, -1, 1)
    hidden = np.concatenate([np.reshape(stage, (len(ids), -1)) for stage in acts.hidden])
    kept = lambda x: np.linalg.norm(x @ basis.T, axis=1) / np.linalg.norm(x, axis=1)  # noqa: E731
    return {"stars": unit_rows(wte @ basis.T), "out": true_angle_places(unit_rows(lm @ basis.T), h_map, cosines),
            "path": path, "keep": kept(wte), "out_keep": kept(lm), "path_keep": kept(hidden),
            "norms": np.linalg.norm(wte, axis=1), "positions": len(ids)}


def only_layer(page, layer):
    """Draw the skies with one layer on (a list: those; None: none) and the true-angle option on."""
    page.evaluate("""layer => { const P = window.__planetarium;
        for (const k of ['stars', 'out', 'path', 'drift', 'trail']) P.state.show[k] = [].concat(layer).includes(k);
        P.state.show.trueH = true; P.state.selected = []; P.state.hover = null; P.update(); P.drawFrame(); }""", layer)


def sky_state(page, ri):
    return page.evaluate(f"""(() => {{ const P = window.__planetarium, c = document.querySelectorAll('.dome canvas')[{ri}];
        return {{R: P.state.R, size: c.getBoundingClientRect().width, steps: P.view({ri}).steps, k: P.view({ri}).k}}; }})()""")


def drawn_share(page, ri, points, layer):
    """The share of `points` (CSS pixels) where drawing `layer` alone changes the pixels against drawing nothing."""
    only_layer(page, layer)
    on = pixels_at(page, ri, points)
    only_layer(page, None)
    off = pixels_at(page, ri, points)
    return changed_share(on, off)


@pytest.mark.parametrize("when", ["start", "third", "end"])
def test_stars_and_a_path_are_drawn_where_an_independent_projection_puts_them(page, runs, when):
    """At three snapshots, for both skies: the input stars, the output stars (at their true angle from h) and every
    hidden state of a typed name's path are drawn where the projection computed here from history.npz puts them (the
    pixels there change when that layer alone is drawn), and the page's own places agree with it to a pixel."""
    hs = histories(runs)
    bases = map_bases(hs)
    errors = []
    for ri, (h, basis) in enumerate(zip(hs, bases)):
        steps = sky_state(page, ri)["steps"]
        step = {"start": steps[0], "third": steps[len(steps) // 3], "end": steps[-1]}[when]
        reset(page, prefix="emma", time=step)
        s = sky_state(page, ri)
        want = expected_places(h, basis, history_index(h, step), "emma")
        page_places = page.evaluate(f"window.__planetarium.places({ri})")
        for layer in ("stars", "out", "path"):
            xy, near = on_screen(want[layer], s["R"], s["size"])
            got = np.array(page_places[layer])
            errors.append(np.abs(got - xy).max())
            points = xy[near].tolist()
            assert len(points) >= 3, (layer, ri)
            share = drawn_share(page, ri, points, layer)
            assert share >= 0.9, f"{when}, sky {ri}, {layer}: drawn at only {share:.0%} of {len(points)} places"
    print(f"\n{when}: the page's places are within {max(errors):.3f} px of the independent projection")
    assert max(errors) < 1.0
    reset(page)


def isolated(xy, near, others, apart):
    """Indices of near-side points with no other point (of xy or others) within `apart` CSS pixels."""
    allp = np.concatenate([xy, others]) if len(others) else xy
    out = []
    for i in np.flatnonzero(near):
        d = np.hypot(*(allp - xy[i]).T)
        if np.sort(d)[1] > apart:
            out.append(int(i))
    return out


def test_stars_fade_by_the_share_of_their_length_the_map_keeps(page, runs):
    """An input star's opacity is 0.3 + 0.7 x (|its projection onto the 3 directions| / its length), the share
    computed here from history.npz: measured on the sphere sky's pixels (star drawn against nothing drawn)."""
    hs = histories(runs)
    h, basis = hs[1], map_bases(hs)[1]
    reset(page, prefix="emma")
    s = sky_state(page, 1)
    want = expected_places(h, basis, len(h) - 1, "emma")
    xy, near = on_screen(want["stars"], s["R"], s["size"])
    far_xy = xy[~near]
    picked = isolated(xy, near, far_xy, 10)
    assert len(picked) >= 6, len(picked)
    points = xy[picked].tolist()
    only_layer(page, "stars")
    on = np.array(page.evaluate("""([points]) => { const c = document.querySelectorAll('.dome canvas')[1];
        const ctx = c.getContext('2d'), dpr = c.width / c.getBoundingClientRect().width;
        return points.map(([x, y]) => Array.from(ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data)); }""",
                                [points]), dtype=float)
    only_layer(page, None)
    off = np.array(page.evaluate("""([points]) => { const c = document.querySelectorAll('.dome canvas')[1];
        const ctx = c.getContext('2d'), dpr = c.width / c.getBoundingClientRect().width;
        return points.map(([x, y]) => Array.from(ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data)); }""",
                                 [points]), dtype=float)
    bos = len(h.vocab)
    color = np.array([[255.0, 209, 102] if i == bos else [244.0, 247, 255] for i in picked])
    alpha = ((on - off)[:, :3] * (color - off[:, :3])).sum(1) / ((color - off[:, :3]) ** 2).sum(1)
    expected = 0.3 + 0.7 * want["keep"][picked]
    print(f"\nfade: opacity measured {np.round(alpha, 2).tolist()}, expected {np.round(expected, 2).tolist()}")
    assert np.abs(alpha - expected).max() < 0.05, (alpha, expected)
    reset(page)


def half_width(row):
    """Half the width of the run of pixels around the middle of `row` that change by more than half as much as the
    middle one (a disc's radius, from its antialiased edge; a label beside it is not part of the run)."""
    mid, half = len(row) // 2, row[len(row) // 2] / 2
    left = right = mid
    while left > 0 and row[left - 1] > half:
        left -= 1
    while right < len(row) - 1 and row[right + 1] > half:
        right += 1
    return (right - left + 1) / 2


def test_an_rmsnorm_stars_size_is_its_norm(browser, runs):
    """On the RMSNorm sky an input star's radius is 4 px times its norm over the median norm of the final stars (within
    1.5 to 11 px); norms computed here from history.npz, radii measured on the pixels (device scale 2)."""
    hs = histories(runs)
    h, basis = hs[0], map_bases(hs)[0]
    pg = open_page(browser, runs["html"], 1280, 800, 2)
    reset(pg, prefix="emma")
    s = sky_state(pg, 0)
    want = expected_places(h, basis, len(h) - 1, "emma")
    xy, near = on_screen(want["stars"], s["R"], s["size"])
    picked = isolated(xy, near, xy[~near], 26)
    assert len(picked) >= 5, len(picked)
    final = np.sort(want["norms"])
    radius = np.clip(4 * want["norms"] / final[len(final) // 2], 1.5, 11)[picked]
    rows = []
    for layer in ("stars", None):
        only_layer(pg, layer)
        rows.append(np.array(pg.evaluate("""([points]) => { const c = document.querySelectorAll('.dome canvas')[0];
            const ctx = c.getContext('2d'), dpr = c.width / c.getBoundingClientRect().width;
            return points.map(([x, y]) => Array.from(ctx.getImageData(Math.round((x - 14) * dpr), Math.round(y * dpr),
                                                                      Math.round(28 * dpr), 1).data)); }""",
                                         [xy[picked].tolist()]), dtype=float))
    diff = np.abs(rows[0] - rows[1]).reshape(len(picked), -1, 4)[:, :, :3].max(axis=2)
    measured = [half_width(d) / 2 for d in diff]  # device px -> CSS px
    print(f"\nRMSNorm star radii: measured {np.round(measured, 2).tolist()}, expected {np.round(radius, 2).tolist()}")
    assert np.abs(np.array(measured) - radius).max() < 0.5, (measured, radius)
    assert radius.max() - radius.min() > 1.5  # (sizes that differ, or the test could not tell)
    close_page(pg)


def opacities(page, ri, points, layer, colors, radius):
    """The opacity of `layer` drawn alone (against nothing drawn) at each point of sky ri: 16 pixels on a circle of
    `radius` CSS px around it, their lower quartile (a line of the same color that runs through the point, as the path
    does, only adds to it)."""
    rows = []
    for which in (layer, None):
        only_layer(page, which)
        rows.append(np.array(page.evaluate("""([ri, points, radius]) => {
            const c = document.querySelectorAll('.dome canvas')[ri], ctx = c.getContext('2d');
            const dpr = c.width / c.getBoundingClientRect().width;
            return points.map(([x, y]) => Array.from({length: 16}, (_, j) => Array.from(ctx.getImageData(
                Math.round((x + radius * Math.cos(j * Math.PI / 8)) * dpr),
                Math.round((y + radius * Math.sin(j * Math.PI / 8)) * dpr), 1, 1).data))); }""",
            [ri, points, radius]), dtype=float)[..., :3])
    on, off = rows
    color = np.asarray(colors, dtype=float)[:, None, :]
    alpha = ((on - off) * (color - off)).sum(-1) / ((color - off) ** 2).sum(-1)
    return np.percentile(alpha, 25, axis=1)


def angle_between(a, b):
    return np.arccos(np.clip(unit_rows(a) @ unit_rows(b), -1, 1))


def test_output_stars_and_path_dots_fade_as_the_input_stars_do(page, runs):
    """An output star's opacity is 0.3 + 0.7 x the share of its lm_head row's length the map keeps, and so is the
    filled dot of each position's last hidden state on a typed name's path: the shares computed here from history.npz,
    the opacities measured on both skies' pixels (output stars under a cap's tint are left out)."""
    hs = histories(runs)
    bases = map_bases(hs)
    reset(page, prefix="emma")
    measured, expected = {"out": [], "path": []}, {"out": [], "path": []}
    for ri, (h, basis) in enumerate(zip(hs, bases)):
        s = sky_state(page, ri)
        want = expected_places(h, basis, len(h) - 1, "emma")
        xy, near = on_screen(want["out"], s["R"], s["size"])
        caps = [page.evaluate(f"window.__planetarium.cap({ri}, {c!r})") for c in page.evaluate(
            f"window.__planetarium.view({ri}).top")] if ri == 1 else []
        tinted = {i for c in caps if not c["whole"] for i in range(len(xy))
                  if angle_between(want["out"][i], np.array(c["center"])) < c["theta"] + 0.05}
        picked = [i for i in isolated(xy, near, xy[~near], 14) if i not in tinted]
        assert len(picked) >= 4, (ri, len(picked))
        measured["out"] += opacities(page, ri, xy[picked].tolist(), "out", [[255, 154, 118]] * len(picked), 1.5).tolist()
        expected["out"] += (0.3 + 0.7 * want["out_keep"][picked]).tolist()
        n = want["positions"]
        xy, near = on_screen(want["path"], s["R"], s["size"])
        last = [i for i in isolated(xy, near, [], 9) if i >= len(xy) - n]  # (the last stage: filled dots)
        measured["path"] += opacities(page, ri, xy[last].tolist(), "path", [[103, 227, 192]] * len(last), 2).tolist()
        expected["path"] += (0.3 + 0.7 * want["path_keep"][last]).tolist()
    for layer in ("out", "path"):
        got, want = np.array(measured[layer]), np.array(expected[layer])
        print(f"\n{layer} fade: opacity measured {np.round(got, 2).tolist()}, expected {np.round(want, 2).tolist()}")
        assert len(got) >= 4, layer
        assert np.abs(got - want).max() < 0.05, (layer, got, want)
    reset(page)


def retraction_gain(drift):
    """The replay's one exaggeration, from (K, 2V) offsets d (NaN at step 0): the largest |d| made a quarter of the
    radius, rounded down to 1, 2 or 5 times a power of ten, and at least 1."""
    x = 0.25 / np.nanmax(np.abs(drift))
    e = 10.0 ** np.floor(np.log10(x))
    m = x / e
    return max(1.0, (5 if m >= 5 else 2 if m >= 2 else 1) * e)


def test_the_retraction_runs_along_each_stars_radius_by_its_drift(page, runs):
    """Early in training, each input star of the sphere sky has its retraction drawn from the star to its map direction
    times 1 + G d, where d is its norm before the retraction minus 1 (history.npz) and G the replay's one exaggeration
    (computed here from the history too): out along its radius when d > 0, in when d < 0. At the first snapshots after
    step 0, for the stars whose line is longer than 4.5 px, the pixels of the small circle at its end change when the
    retraction is drawn; those of its mirror image, on the star's other side, do not."""
    hs = histories(runs)
    h, basis = hs[1], map_bases(hs)[1]
    steps = sky_state(page, 1)["steps"]
    V, T = h.cfg.vocab_size, h.cfg.block_size
    drift = h.drift[[history_index(h, st) for st in steps]]
    offsets = np.concatenate([drift[:, :V], drift[:, V + T:2 * V + T]], axis=1) - 1
    gain = retraction_gain(offsets)
    pixels, count = {"end": [[], []], "mirror": [[], []]}, 0
    for k in range(1, min(11, len(steps))):
        reset(page, prefix="emma", time=steps[k])
        s = sky_state(page, 1)
        xy, near = on_screen(unit_rows(wte_of(h, history_index(h, steps[k])) @ basis.T), s["R"], s["size"])
        line = (gain * offsets[k, :V])[:, None] * (xy - np.array([s["size"] / 2] * 2))  # star -> before retraction
        length = np.linalg.norm(line, axis=1)
        picked = [i for i in isolated(xy, near, xy[~near], 12) if length[i] > 4.5]
        count += len(picked)
        ahead = line[picked] / length[picked, None]
        side = np.stack([-ahead[:, 1], ahead[:, 0]], axis=1)
        for where, sign in (("end", 1), ("mirror", -1)):
            tip = xy[picked] + sign * line[picked]
            pts = np.concatenate([tip + 2.5 * side, tip - 2.5 * side, tip + sign * 2.5 * ahead]).tolist()
            for j, layers in enumerate((["stars", "drift"], "stars")):
                only_layer(page, layers)
                pixels[where][j] += pixels_at(page, 1, pts)
    shown = re.search(r"×(\S+?)[)）]", page.locator(".skyInfo").nth(1).inner_text()).group(1)
    assert float(shown) == pytest.approx(gain), (shown, gain)
    assert count >= 5, count
    shares = {where: changed_share(*pixels[where]) for where in pixels}
    print(f"\nretraction (x{gain:g}), {count} lines: the share of places that change: {shares}")
    assert shares["end"] >= 0.8 and shares["mirror"] <= 0.2, shares
    reset(page)


def test_each_top_3_label_sits_beside_its_own_star(page, runs):
    """Wherever the camera looks, the label of each of a sky's 3 likeliest characters is drawn beside that
    character's output star as the independent projection places it (its box within 12 px of the star), or, when the
    star is on the far side, beside its marker on the rim (6 px outside the dome, in the star's direction)."""
    hs = histories(runs)
    bases = map_bases(hs)
    reset(page, prefix="emma")
    wants = [expected_places(h, b, len(h) - 1, "emma") for h, b in zip(hs, bases)]
    far_from_own, moved = [], 0
    for turn in range(12):
        page.evaluate(f"window.__planetarium.turn({0.5 * turn}, {0.13 * turn}); window.__drawnBoxes = [];"
                      "window.__leaders = []; window.__planetarium.drawFrame()")
        for ri, (h, want) in enumerate(zip(hs, wants)):
            leaders = page.evaluate(f"""window.__leaders.filter(l => l.canvas === document.querySelectorAll(
                '.dome canvas')[{ri}]).map(l => l.from.concat(l.to))""")
            s = sky_state(page, ri)
            xy, near = on_screen(want["out"], s["R"], s["size"])
            center, rho = np.array([s["size"] / 2] * 2), 0.43 * s["size"]
            boxes = page.evaluate(f"""window.__drawnBoxes.filter(b => b.canvas === document.querySelectorAll(
                '.dome canvas')[{ri}]).map(b => [b.text, b.x, b.y - 7, b.x + b.width, b.y + 7])""")
            for label in page.evaluate(f"window.__planetarium.view({ri}).top"):
                i = (h.vocab + ["BOS"]).index(label)
                box = next(b for b in boxes if b[0].startswith(label + " ") or b[0].startswith(label + "（"))
                anchor = xy[i] if near[i] else center + (rho + 6) * unit_rows(xy[i] - center)
                gap = np.hypot(max(box[1] - anchor[0], 0, anchor[0] - box[3]), max(box[2] - anchor[1], 0, anchor[1] - box[4]))
                led = any(np.hypot(*(np.array(l[:2]) - anchor)) < 1 and
                          np.hypot(l[2] - box[1], l[3] - (box[2] + box[4]) / 2) < 1 for l in leaders)
                moved += led
                if gap > 12 and not led:
                    far_from_own.append((turn, ri, label, round(float(gap), 1), leaders))
    print(f"\ntop-3 labels: {moved} of {12 * 2 * 3} moved off their star's line, with a leader to it")
    assert not far_from_own, far_from_own
    reset(page)


def test_the_cap_rims_are_drawn_at_the_angle_s_z_and_T_give(page, runs):
    """The vMF cap of each of the 3 likeliest characters on the sphere sky, at T = 0.5, is the circle at angle
    arccos(1 - T / |s_z|) around its output star (around the opposite point when s_z < 0), with s_z from history.npz's
    effective scales and the star at its true angle from h as projected here: the pixels on that circle change when
    the output stars are drawn (away from stars and labels), those on a circle 15% wider do not; κ = s_z / T is
    written beside each."""
    hs = histories(runs)
    h, basis = hs[1], map_bases(hs)[1]
    reset(page, prefix="emma", T=25)
    T, V = 0.5, h.cfg.vocab_size
    s_z = h.scales[-1][-V:]
    want = expected_places(h, basis, len(h) - 1, "emma")
    s = sky_state(page, 1)
    stars, near = on_screen(want["out"], s["R"], s["size"])
    stars = stars[near]
    page.evaluate("window.__drawnBoxes = []; window.__drawnText.clear()")
    only_layer(page, "out")
    boxes = page.evaluate("""window.__drawnBoxes.filter(b => b.canvas === document.querySelectorAll('.dome canvas')[1])
        .map(b => [b.x - 2, b.y - 9, b.x + b.width + 2, b.y + 9])""")
    rims, caps, kappas = {"rim": [], "wider": []}, [], []
    for label in page.evaluate("window.__planetarium.view(1).top"):
        i = (h.vocab + ["BOS"]).index(label)
        if abs(s_z[i]) / T <= 0.5:
            continue  # (the whole sphere)
        c = np.sign(s_z[i]) * want["out"][i]
        e1 = unit_rows(np.cross(c, [0.0, 0.0, 1.0] if abs(c[2]) < 0.9 else [1.0, 0.0, 0.0]))
        e2 = np.cross(c, e1)
        theta = np.arccos(1 - T / abs(s_z[i]))
        caps.append((c, theta))
        for name, th in (("rim", theta), ("wider", 1.15 * theta)):
            f = np.linspace(0, 2 * np.pi, 97)[:-1, None]
            circle = np.cos(th) * c + np.sin(th) * (np.cos(f) * e1 + np.sin(f) * e2)
            xy, front = on_screen(circle, s["R"], s["size"])
            if name == "rim" and front.any():
                kappas.append(s_z[i] / T)
            rims[name] += [[float(p[0]), float(p[1]), *q] for p, q in zip(xy[front], circle[front])
                           if np.hypot(*(stars - p).T).min() > 10 and
                           not any(b[0] < p[0] < b[2] and b[1] < p[1] < b[3] for b in boxes)]
    # (a point of a wider circle inside another cap is under that cap's tint)
    rims["wider"] = [p[:2] for p in rims["wider"] if all(angle_between(np.array(p[2:]), c) > 1.05 * th for c, th in caps)]
    rims["rim"] = [p[:2] for p in rims["rim"]]
    assert len(rims["rim"]) >= 20 and len(rims["wider"]) >= 20, (len(rims["rim"]), len(rims["wider"]))
    shares = {}
    for name, pts in rims.items():
        only_layer(page, "out")
        on = pixels_at(page, 1, pts)
        only_layer(page, None)
        shares[name] = changed_share(on, pixels_at(page, 1, pts))
    drawn = page.evaluate("[...window.__drawnText]")
    for kappa in kappas:  # each cap's κ is written beside it
        assert f"κ = {kappa:.1f}" in drawn, (kappa, [d for d in drawn if "κ" in d])
    print(f"\ncaps: the share of places that change on the rim ({len(rims['rim'])}) and on a wider circle: {shares}")
    assert shares["rim"] >= 0.85 and shares["wider"] <= 0.3, shares
    reset(page)


def running_mean(values, window):
    return np.array([values[max(0, i - window + 1):i + 1].mean() for i in range(len(values))])


def test_the_loss_plot_draws_the_runs_losses(page, runs):
    """The loss plot puts each run's val losses (dots) and its train loss's running mean over N/20 steps (the line),
    read here from history.npz, at their places in the plot's box (its range: the lowest and highest of them all)."""
    hs = histories(runs)
    reset(page, prefix="emma")
    curves = []
    for h in hs:
        train = h.train_loss
        curves.append((train[:, 0], running_mean(train[:, 1], max(1, round(len(train) / 20))), h.val_loss))
    lo = min(min(c[1].min(), c[2][:, 1].min()) for c in curves)
    hi = max(max(c[1].max(), c[2][:, 1].max()) for c in curves)
    f = page.evaluate("window.__planetarium.lossFrame()")
    X = lambda s: f["left"] + f["width"] * s / f["planned"]  # noqa: E731
    Y = lambda v: f["top"] + f["height"] * (hi - v) / (hi - lo)  # noqa: E731
    assert f["lo"] == pytest.approx(lo, abs=1e-4) and f["hi"] == pytest.approx(hi, abs=1e-4)
    colors = [(0x5c, 0xc8, 0xff), (0xff, 0xb4, 0x54)]
    read = """([points]) => { const c = document.getElementById('loss'), ctx = c.getContext('2d');
        const dpr = c.width / c.getBoundingClientRect().width;
        return points.map(([x, y]) => Array.from(ctx.getImageData(Math.round(x * dpr) - 1, Math.round(y * dpr) - 1,
                                                                  3, 3).data)); }"""
    for (steps, mean, val), color in zip(curves, colors):
        dots = np.array(page.evaluate(read, [[[X(s), Y(v)] for s, v in val]]), dtype=float).reshape(len(val), 9, 4)
        close = np.abs(dots[:, :, :3] - color).max(axis=2).min(axis=1) < 60  # some pixel of the patch in its colour
        assert close.mean() >= 0.75, f"val dots: {close.mean():.0%} in colour at their places"
        pick = np.linspace(len(steps) // 10, len(steps) - 1, 20).astype(int)
        line = np.array(page.evaluate(read, [[[X(steps[i]), Y(mean[i])] for i in pick]]), dtype=float).reshape(20, 9, 4)
        lit = (line[:, :, :3].max(axis=2) - line[:, :, :3].min(axis=2)).max(axis=1) > 40  # coloured, not grey
        assert lit.mean() >= 0.75, f"train line: {lit.mean():.0%} of its places coloured"
    reset(page)


def test_the_variance_share_and_the_same_characters_angle_are_measured(page, runs):
    """The share of each snapshot's own embedding variance that the map's 3 directions keep (shown under each sky), and
    the median angle between a character's places in the two skies (printed by the tour), computed here."""
    hs = histories(runs)
    bases = map_bases(hs)
    for ri, (h, basis) in enumerate(zip(hs, bases)):
        steps = sky_state(page, ri)["steps"]
        shares = page.evaluate(f"window.__planetarium.shares({ri})")
        for k in (0, len(steps) // 3, len(steps) - 1):
            w = wte_of(h, history_index(h, steps[k]))
            c = w - w.mean(axis=0)
            assert shares[k] == pytest.approx(np.sum((c @ basis.T) ** 2) / np.sum(c ** 2), abs=0.01)
            reset(page, time=steps[k])
            assert f"{100 * shares[k]:.0f}%" in page.locator(".skyInfo").nth(ri).inner_text()
        assert abs(shares[0] - shares[-1]) > 0.05  # (the start's share is not the end's)
    places = [dict(zip(h.vocab + ["BOS"], unit_rows(wte_of(h, len(h) - 1) @ b.T))) for h, b in zip(hs, bases)]
    angles = [np.degrees(np.arccos(np.clip(places[0][c] @ places[1][c], -1, 1))) for c in places[1]]
    median = sorted(angles)[len(angles) // 2]
    assert page.evaluate("window.__planetarium.sameCharAngle") == pytest.approx(median, abs=0.5)
    page.evaluate("window.__planetarium.tour(0)")
    assert f"{median:.0f}°" in page.inner_text("#tourText")
    page.evaluate("window.__planetarium.tour(-1)")
    reset(page)


def test_the_replay_spends_its_time_where_the_stars_move(page, runs):
    """Each tenth of the replay's time shows at most 13% of the stars' motion (the mean angle the input and output
    stars move in C dimensions between snapshots, from history.npz, summed over the runs); a replay paced by training
    steps alone shows most of it in its first tenth."""
    hs = histories(runs)
    steps = sky_state(page, 0)["steps"]
    grid, moved = np.array(steps, dtype=float), np.zeros(len(steps))
    for h in hs:
        idx = [history_index(h, s) for s in steps]
        for j in range(1, len(idx)):
            for rows in (wte_of, lm_head_of):
                a, b = unit_rows(rows(h, idx[j - 1])), unit_rows(rows(h, idx[j]))
                moved[j] += np.arccos(np.clip((a * b).sum(1), -1, 1)).mean()
    cumulative = np.cumsum(moved) / moved.sum()
    at = lambda step: np.interp(step, grid, cumulative)  # noqa: E731
    times = page.evaluate("[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1].map(u => window.__planetarium.stepAtPosition(u))")
    shares = np.diff([0] + [at(s) for s in times])
    print(f"\nthe stars' motion shown in each tenth of the replay: {np.round(shares, 3).tolist()}; paced by steps, the "
          f"first tenth would show {at(grid[-1] / 10):.0%}")
    assert shares.max() < 0.13
    assert at(grid[-1] / 10) > 0.3  # (what pacing by steps did)


# --------------------------------------------------------------------------- the prefix, the readout, the stars

def test_a_prefix_is_read_as_training_reads_it(page):
    reset(page)
    prefix = page.locator("#prefix")
    assert prefix.input_value() == "" and prefix.get_attribute("placeholder").startswith("例：")
    page.fill("#prefix", "Emma")  # upper case folds to the names' lower case
    assert page.evaluate("window.__planetarium.view(0).positions") == 5
    status = page.inner_text("#prefixStatus")
    assert "小文字" in status
    page.fill("#prefix", "em1ma")  # an unknown character: the path up to it, and a message
    view = page.evaluate("window.__planetarium.view(0)")
    assert view["positions"] == 3 and view["error"] == "1" and "1" in page.inner_text("#prefixStatus")
    assert page.locator("#prefixStatus.warn").count() == 1
    page.fill("#prefix", "a" * 40)  # cropped to block_size positions, as training crops a name
    assert page.evaluate("window.__planetarium.view(1).positions") == 16
    assert "16" in page.inner_text("#prefixStatus")
    reset(page)
    assert not page.errors


def test_hovering_a_probability_bar_marks_its_star_and_back(page):
    reset(page, prefix="em")
    row = page.locator("#probs .probCol").nth(1).locator(".probRow").first
    i = int(row.get_attribute("data-i"))
    before = picture(page, 1)
    row.hover()
    assert page.evaluate("window.__planetarium.state.hover") == {"ri": 1, "i": i}
    page.evaluate("window.__planetarium.drawFrame()")
    assert picture(page, 1) != before
    page.mouse.move(0, 0)
    # and back: the pointer over a star marks its row
    at = page.evaluate("window.__planetarium.starAt(1, 'a')")
    page.evaluate("window.scrollTo(0, 0)")
    box = page.locator(".dome canvas").nth(1).bounding_box()
    page.mouse.move(box["x"] + at["x"], box["y"] + at["y"])
    hover = page.evaluate("window.__planetarium.state.hover")
    assert hover and hover["ri"] == 1
    reset(page)


def test_picked_stars_show_their_nearest_stars_and_their_exact_cosine(page, runs):
    reset(page)
    box = page.locator(".dome canvas").nth(1).bounding_box()
    at = page.evaluate("window.__planetarium.starAt(1, 'a')")
    page.mouse.click(box["x"] + at["x"], box["y"] + at["y"])
    assert page.evaluate("window.__planetarium.state.selected") == ["a"]
    page_run = runs["page_runs"][1]
    wte = page_params(page_run, page.evaluate("window.__planetarium.view(1).k"))["wte"]
    h = page_run.history
    cos = wte @ wte[h.vocab.index("a")]  # unit rows: cosines are dot products
    nearest = [j for j in np.argsort(-cos) if j != h.vocab.index("a")][0]
    assert f"{(h.vocab + ['BOS'])[nearest]} {cos[nearest]:.2f}" in page.inner_text("#cosine")
    page.select_option("#starPick", "e")  # the list reaches the stars from the keyboard
    assert page.evaluate("window.__planetarium.state.selected") == ["a", "e"]
    assert f"{cos[h.vocab.index('e')]:.4f}" in page.inner_text("#cosine")
    reset(page)


def test_the_attention_of_the_last_position_is_listed(page, runs):
    reset(page, prefix="emma")
    table = page.locator("#attn .attnGrid").nth(1)
    cfg = runs["page_runs"][1].history.cfg
    assert table.locator("tr").count() == 1 + cfg.n_layer * cfg.n_head
    assert table.locator("tr").first.locator("th").count() == 1 + 5
    weights = page.evaluate("window.__planetarium.forward(1, 0, window.__planetarium.view(1).ids).attention")
    assert np.allclose([sum(w) for layer in weights for w in layer], 1)
    reset(page)


# --------------------------------------------------------------------------- by ear, on opening, the tour

def test_the_page_opens_on_a_typed_name_facing_h(browser, runs):
    """No setup needed: the example name is typed, the last sky faces its h (at the sky's centre), each sky has its own
    legend, the end token reads BOS (end), and one line says what a cap is."""
    pg = open_page(browser, runs["html"], 1440, 900)
    assert pg.input_value("#prefix") == "emma" and pg.evaluate("window.__planetarium.view(1).positions") == 5
    path = pg.evaluate("window.__planetarium.projected(1).path")
    size = pg.locator(".dome canvas").nth(1).bounding_box()["width"]
    assert abs(path[-1][0] - size / 2) < 2 and abs(path[-1][1] - size / 2) < 2
    legends = [pg.locator(".legend").nth(i).inner_text() for i in range(2)]
    assert all("●" in t and "◆" in t and "BOS" in t for t in legends)
    assert "○" not in legends[0] and "○" in legends[1]  # caps only where they are drawn
    assert "BOS（終わり）" in pg.inner_text(".readout >> nth=0") + pg.inner_text("#probs")
    assert "1/e" in pg.inner_text("#capLine") and pg.is_visible("#capLine")
    pg.click("#lang")
    assert "BOS (end)" in pg.inner_text("#probs") and "not on h" in pg.inner_text("#capLine")
    assert "fresh" in pg.get_attribute("#tourButton", "class")  # (lit until first used)
    pg.click("#tourButton")
    pg.click("#tourClose")
    assert "fresh" not in pg.get_attribute("#tourButton", "class")
    close_page(pg)


def test_the_sphere_sky_opens_with_the_likeliest_characters_cap_alone(browser, runs):
    """The caps do not fill the first screen: the sphere sky draws the likeliest
    character's cap alone (the pixels on the other two rims change only when the visible
    option asks for all three); the tour's caps step draws all three; the line under the
    skies says that a cap's size is set by κ alone and that h may lie outside the
    likeliest character's cap (as it does here)."""
    pg = open_page(browser, runs["html"], 1440, 900)
    option = pg.locator("#options input[data-opt=allCaps]")
    assert option.is_visible() and not option.is_checked()
    one = pg.evaluate("window.__planetarium.projected(1)")
    pg.click("#options input[data-opt=allCaps]")
    three = pg.evaluate("window.__planetarium.projected(1)")
    others = [p for key in ("stars", "out", "path") for p in three[key]] + one["caps"]
    added = [p for p in three["caps"] if p not in one["caps"] and
             all((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 > 14 ** 2 for q in others)]
    assert len(added) >= 10, len(added)
    on = pixels_at(pg, 1, added)
    pg.click("#options input[data-opt=allCaps]")
    assert changed_share(on, pixels_at(pg, 1, added)) >= 0.6
    top = pg.evaluate("window.__planetarium.view(1).top[0]")
    cap, cosines = pg.evaluate(f"window.__planetarium.cap(1, {top!r})"), pg.evaluate("window.__planetarium.cosToH(1)")
    # h outside the likeliest character's cap
    assert cosines[cap["i"]][1] < np.cos(cap["theta"])
    assert "h にはよりません" in pg.inner_text("#capLine")
    pg.click("#lang")
    assert "not on h" in pg.inner_text("#capLine") and "outside the likeliest" in pg.inner_text("#capLine")
    pg.evaluate("window.__planetarium.tour(3)")  # the caps step
    assert "cap" in pg.inner_text("#tourText").lower() and option.is_checked()
    close_page(pg)


def test_the_parts_of_the_page_are_headings(page):
    """The accessibility tree (Chromium's own, through the DevTools protocol) has a heading for each part."""
    cdp = page.context.new_cdp_session(page)
    nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    headings = [(n.get("name", {}).get("value", ""), next((p["value"]["value"] for p in n.get("properties", [])
                                                           if p["name"] == "level"), None))
                for n in nodes if n.get("role", {}).get("value") == "heading"]
    levels = [lv for _, lv in headings]
    names = " | ".join(n for n, _ in headings)
    assert levels.count(1) == 1 and levels.count(2) >= 4 and levels.count(3) >= 5, headings
    for part in ("名前と再生", "設定と数値", "空", "この図の読み方", "損失の推移", "RMSNorm", "球面モード"):
        assert part in names, (part, names)


LIVE_COUNTER = """() => {
    window.__liveChanges = [];
    for (const o of window.__liveObservers || []) o.disconnect();  // (one counter per page, however often it is set)
    window.__liveObservers = [...document.querySelectorAll('[aria-live], [role=status], [role=alert]')].map(el => {
        const o = new MutationObserver(() => window.__liveChanges.push(el.textContent));
        o.observe(el, {childList: true, subtree: true, characterData: true});
        return o;
    });
}"""


def test_a_replay_is_announced_once_not_per_frame(page):
    """One live region; a whole replay at x4 (3 s, some 180 frames, 50 snapshots per run) changes it once, when it
    stops; a new name is announced once, after the typing pauses; a frame changes no live text."""
    reset(page, prefix="emma")
    assert page.locator("[aria-live]").count() == 1
    page.evaluate(LIVE_COUNTER)
    page.select_option("#speed", "4")
    page.click("#play")
    wait_until(page, "!window.__planetarium.state.playing")
    changes = page.evaluate("window.__liveChanges")
    assert len(changes) == 1 and "300" in changes[0], changes
    page.evaluate("window.__liveChanges = []")
    page.press("#prefix", "End")
    page.type("#prefix", "xyz", delay=50)
    wait_until(page, "window.__liveChanges.some(c => c.includes('emmaxyz'))")
    changes = page.evaluate("window.__liveChanges")
    assert len(changes) == 1 and "emmaxyz" in changes[0], changes
    page.select_option("#speed", "1")
    reset(page)


def test_reduced_motion_steps_between_snapshots(browser, runs):
    """With prefers-reduced-motion the replay shows snapshots only, never the flight between two; faceH jumps."""
    pg = open_page(browser, runs["html"], 1280, 800)
    pg.emulate_media(reduced_motion="reduce")
    pg.evaluate("""() => { const P = window.__planetarium; window.__between = [];
        (function look() { window.__between.push(P.view(1).f); if (P.state.playing) requestAnimationFrame(look); })(); }""")
    pg.select_option("#speed", "4")
    pg.evaluate("window.__planetarium.setTime(0)")
    pg.click("#play")
    pg.evaluate("""() => { const P = window.__planetarium;
        (function look() { window.__between.push(P.view(1).f); if (P.state.playing) requestAnimationFrame(look); })(); }""")
    wait_until(pg, "!window.__planetarium.state.playing")
    between = pg.evaluate("window.__between")
    assert len(between) > 20 and max(between) == 0, between[:20]
    close_page(pg)
    pg = open_page(browser, runs["html"], 1280, 800)  # and without it: the flight between snapshots
    pg.evaluate("window.__planetarium.setTime(0)")
    pg.click("#play")
    pg.evaluate("""() => { const P = window.__planetarium; window.__between = [];
        (function look() { window.__between.push(P.view(1).f); if (P.state.playing) requestAnimationFrame(look); })(); }""")
    # (fails if no frame falls between two snapshots)
    wait_until(pg, "window.__between.some(f => f > 0)")
    pg.click("#play")
    close_page(pg)


CAPTIONS = """(() => [...document.querySelectorAll('#notesText, #tempLabel, #options, #capLine, .legend')]
    .filter(e => e.checkVisibility()).map(e => e.innerText).join(' | '))()"""
# what a page's captions may speak of only when one of its skies draws it (sphere skies: caps, the pulls of the blocks,
# the retraction, sphere mode's residual step; RMSNorm skies: RMSNorm's residual step)
SPHERE_WORDS = {"ja": ("κ", "vMF", "キャップ", "点線", "Norm(f(h))", "リトラクション", "Norm(h + α(Norm(f(h)) − h))"),
                "en": ("κ", "vMF", "cap", "dotted", "Norm(f(h))", "retraction", "Norm(h + α(Norm(f(h)) − h))")}
RMS_WORDS = ("RMSNorm", "h ← h + f(RMSNorm(h))")


@pytest.mark.parametrize("kind", ["pair", "rmsnorm", "sphere"])
def test_the_captions_speak_only_of_what_the_page_draws(browser, runs, kind):
    """The notes, the temperature's label, the layers' names, the cap line and the legends, for each kind of page (an
    RMSNorm and a sphere run, RMSNorm only, sphere only) in both languages: caps, κ, the blocks' dotted pulls, the
    retraction and sphere mode's residual step where a sphere sky draws them, RMSNorm's residual step h ← h +
    f(RMSNorm(h)) where an RMSNorm sky is; and the replay's pacing as the page's own clock has it (the share of the
    time the first tenth of the steps takes), never "in proportion to training steps"."""
    html = {"pair": runs["html"], "rmsnorm": runs["one"], "sphere": runs["sphere_only"]}[kind]
    pg = open_page(browser, html)
    share = pg.evaluate("window.__planetarium.positionAtStep(window.__planetarium.planned / 10)")
    for lang in ("ja", "en"):
        if pg.evaluate("window.__planetarium.state.lang") != lang:
            pg.click("#lang")
        text = pg.evaluate(CAPTIONS)
        folded = text.lower()
        for word in SPHERE_WORDS[lang]:
            assert (word.lower() in folded) == (kind != "rmsnorm"), (kind, lang, word)
        for word in RMS_WORDS:
            assert (word in text) == (kind != "sphere"), (kind, lang, word)
        notes = pg.inner_text("#notesText")
        assert f"{100 * share:.0f}%" in notes and "proportion to training steps, " not in notes, (lang, share, notes[-400:])
        assert ("最初の 10% のステップ" if lang == "ja" else "first 10% of the steps") in notes
    assert 0.2 < share < 0.6  # (the first tenth of the steps, where the stars move most, takes more than a tenth)
    close_page(pg)


TOUR_WORDS = {"caps": ("キャップ", "vMF"), "retraction": ("リトラクション",), "sides": ("左", "右")}


def tour_texts(pg, lang="ja"):
    if pg.evaluate("window.__planetarium.state.lang") != lang:
        pg.click("#lang")
    n = pg.evaluate("window.__planetarium.tourLength()")
    texts = []
    for i in range(n):
        pg.evaluate(f"window.__planetarium.tour({i})")
        texts.append(pg.inner_text("#tourText"))
    pg.evaluate("window.__planetarium.tour(-1)")
    return texts


def test_the_tour_speaks_only_of_the_skies_on_the_page(browser, runs):
    """One RMSNorm run (the command line's default page is one run): four steps, no caps, no retraction, no left or
    right; two runs: five, naming both skies and printing the same character's median angle; four runs: five, naming
    four skies; on a phone the step's sky is scrolled into view."""
    pg = open_page(browser, runs["one"], 1280, 800)
    texts = tour_texts(pg)
    assert len(texts) == 4 and all(t.startswith(f"{i + 1}.") for i, t in enumerate(texts))
    joined = "".join(texts)
    assert not any(w in joined for w in TOUR_WORDS["caps"] + TOUR_WORDS["retraction"] + TOUR_WORDS["sides"]), joined
    assert "RMSNorm" in texts[0] and "温度" in texts[3]
    close_page(pg)
    pg = open_page(browser, runs["four"], 1440, 900)
    texts = tour_texts(pg)
    assert len(texts) == 5 and "4 つの空" in texts[0] and "°" in texts[0]
    assert not any(w in "".join(texts) for w in TOUR_WORDS["sides"])
    en = tour_texts(pg, "en")
    assert "4 skies" in en[0] and not re.search(r"[\u3000-\u30ff\uff00-\uffef]", "".join(en))
    close_page(pg)
    pg = open_page(browser, runs["html"], 375, 667, 2)
    pg.evaluate("window.__planetarium.tour(3)")  # caps, on the sphere sky: the second on a phone
    box = pg.locator(".dome canvas").nth(1).bounding_box()
    assert -1 <= box["y"] < 667 / 2, box
    tour = pg.locator("#tour").bounding_box()  # the tour's text in view too, covering at most a quarter of the sky
    assert tour["y"] + tour["height"] <= 667 and tour["y"] >= box["y"] + 0.75 * box["height"], (tour, box)
    pg.evaluate("window.__planetarium.tour(-1)")
    close_page(pg)


def test_a_vertical_swipe_on_a_sky_scrolls_the_page_and_a_sideways_drag_turns_it(browser, runs):
    """On a touch screen (375 x 667): a vertical swipe that starts on a sky scrolls the page and leaves the camera; a
    sideways drag turns the sky."""
    ctx = browser.new_context(viewport={"width": 375, "height": 667}, device_scale_factor=2, has_touch=True,
                              is_mobile=True)
    pg = ctx.new_page()
    pg.goto(runs["html"].as_uri())
    cdp = ctx.new_cdp_session(pg)
    box = pg.locator(".dome canvas").first.bounding_box()
    pg.evaluate(f"window.scrollTo(0, {box['y'] - 250})")
    box = pg.locator(".dome canvas").first.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

    def swipe(dx, dy, fingers=1):
        at = lambda f: [{"x": x + 40 * j, "y": y, "id": j} if f == 0 else  # noqa: E731
                        {"x": x + 40 * j + dx * f, "y": y + dy * f, "id": j} for j in range(fingers)]
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": at(0)})
        for i in range(1, 11):
            cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": at(i / 10)})
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        pg.evaluate(SCROLL_AT_REST)

    R = pg.evaluate("window.__planetarium.state.R")
    swipe(120, 0)
    R2, scrolled = pg.evaluate("window.__planetarium.state.R"), pg.evaluate("window.scrollY")
    assert R2 != R
    swipe(0, -150)
    assert pg.evaluate("window.scrollY") > scrolled + 50
    assert pg.evaluate("window.__planetarium.state.R") == R2
    pg.evaluate(f"window.scrollTo(0, {scrolled})")  # (the sky back under the fingers)
    scrolled = pg.evaluate("window.scrollY")
    swipe(0, -80, fingers=2)  # two fingers turn the sky, vertically too, and leave the page where it is
    assert pg.evaluate("window.__planetarium.state.R") != R2 and pg.evaluate("window.scrollY") == scrolled
    ctx.close()


def test_on_a_phone_a_typed_name_is_drawn_where_the_learner_looks(browser, runs):
    """At 375 x 667 the name box and the replay come before the skies and stay at the top; focusing the name box brings
    the first sky up under them: at least 60% of its canvas is on the screen, uncovered."""
    pg = open_page(browser, runs["html"], 375, 667, 2)
    # the first sky starts so high that 60% of it is on the first screen, both languages
    for _ in range(2):
        sky = pg.locator(".dome canvas").first.bounding_box()
        assert 667 - sky["y"] >= 0.6 * sky["height"], (pg.evaluate("document.documentElement.lang"), sky)
        pg.click("#lang")
    quick, sky = pg.locator("#quick").bounding_box(), pg.locator(".dome canvas").first.bounding_box()
    assert quick["y"] + quick["height"] <= sky["y"] and quick["y"] < 667 / 2
    pg.focus("#prefix")
    pg.keyboard.type("a")
    quick, sky = pg.locator("#quick").bounding_box(), pg.locator(".dome canvas").first.bounding_box()
    assert quick["y"] == 0 and sky["y"] >= quick["height"] - 1, (quick, sky)
    assert (min(667, sky["y"] + sky["height"]) - sky["y"]) >= 0.6 * sky["height"], sky
    assert pg.evaluate("window.__planetarium.view(0).positions") == 6
    close_page(pg)


def test_typography(page):
    """Japanese body text at 15 px or more with a line height near 1.7; headings break between phrases, not inside a
    word; no slanted kana; in English, Latin punctuation (none of the full-width forms) in the text and on the skies."""
    reset(page, prefix="emma")
    sizes = page.evaluate("""[...document.querySelectorAll('#notesText p, #tourText, .readout, .skyInfo, ' +
        '#prefixStatus, #stepLabel, #capLine, #options label, .subtitle, #tempLabel')].map(e => [e.className || e.id,
        parseFloat(getComputedStyle(e).fontSize), parseFloat(getComputedStyle(e).lineHeight)])""")
    assert all(size >= 15 for _, size, _ in sizes), sizes
    body = page.evaluate("[parseFloat(getComputedStyle(document.body).fontSize), "
                         "parseFloat(getComputedStyle(document.body).lineHeight)]")
    assert body[0] >= 15 and 1.6 <= body[1] / body[0] <= 1.8, body
    for sel in ("h1", "h2", "h3", ".heading"):
        assert page.evaluate(f"getComputedStyle(document.querySelector('{sel}')).wordBreak") in ("keep-all", "auto-phrase")
    assert page.evaluate("getComputedStyle(document.getElementById('prefix'), '::placeholder').fontStyle") == "normal"
    page.click("#lang")
    page.evaluate("window.__drawnText.clear(); window.__planetarium.show('drift', true); window.__planetarium.drawFrame()")
    text = page.inner_text("body") + "".join(page.evaluate("[...window.__drawnText]"))
    wide = [text[max(0, m.start() - 30):m.end() + 5] for m in re.finditer(r"[\u3000-\u303f\uff00-\uffef]", text)]
    assert not wide, wide
    page.click("#lang")
    reset(page)


def test_the_top_3_labels_never_cover_each_other(page):
    """Wherever the camera looks, the labels of each sky's 3 likeliest characters (with their probabilities) are drawn
    where they do not overlap one another (each 14 px high, as wide as its text)."""
    reset(page, prefix="emma")
    for turn in range(12):
        page.evaluate(f"window.__planetarium.turn({0.5 * turn}, {0.13 * turn}); window.__drawnBoxes = [];"
                      "window.__planetarium.drawFrame()")
        for ri in range(2):
            top = page.evaluate(f"window.__planetarium.view({ri}).top")
            boxes = page.evaluate(f"""window.__drawnBoxes.filter(b => b.canvas === document.querySelectorAll('.dome canvas')[{ri}])
                .map(b => [b.text, b.x, b.y - 7, b.x + b.width, b.y + 7])""")
            labels = [b for b in boxes if any(b[0].startswith(label + " ") or b[0].startswith(label + "（")
                                              for label in top)]
            assert len(labels) == 3, (turn, ri, [b[0] for b in boxes][:12])
            for i in range(3):
                for j in range(i + 1, 3):
                    a, b = labels[i], labels[j]
                    assert not (a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]), (turn, ri, a, b)
    reset(page)


def test_an_input_method_composing_shows_no_warning_until_it_is_done(page):
    """While an input method composes (romaji to kana), the box holds unfinished text: no red warning until the
    composition ends; then the prefix is read as usual."""
    reset(page, prefix="em")
    page.evaluate("""() => { const box = document.getElementById('prefix');
        box.dispatchEvent(new CompositionEvent('compositionstart'));
        box.value = 'emえ';
        box.dispatchEvent(new InputEvent('input', {isComposing: true, data: 'え', inputType: 'insertCompositionText'})); }""")
    assert page.locator("#prefixStatus.warn").count() == 0 and page.evaluate("window.__planetarium.state.prefix") == "em"
    page.evaluate("document.getElementById('prefix').dispatchEvent(new CompositionEvent('compositionend', {data: 'え'}))")
    assert page.locator("#prefixStatus.warn").count() == 1 and "え" in page.inner_text("#prefixStatus")
    reset(page)


# --------------------------------------------------------------------------- keyboard, labels, languages, tour

def test_the_skies_take_the_keyboard_and_every_control_has_a_name(page):
    reset(page, prefix="em")
    page.focus(".dome canvas >> nth=1")
    R = page.evaluate("window.__planetarium.state.R")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("window.__planetarium.state.R") != R
    page.keyboard.press("Enter")  # face h: the last position's h comes to the front, at the sky's center
    wait_until(page, "!window.__planetarium.state.turning")  # (the page's own signal: the camera has stopped)
    center = page.evaluate("""(() => { const P = window.__planetarium, c = document.querySelectorAll('.dome canvas')[1];
        const w = c.getBoundingClientRect().width; const p = P.projected(1).path; return [p[p.length - 1], w]; })()""")
    (x, y), w = center
    assert abs(x - w / 2) < 3 and abs(y - w / 2) < 3, center
    unnamed = page.evaluate("""[...document.querySelectorAll('button, input, select, canvas[tabindex]')].filter(e => {
        const name = e.getAttribute('aria-label') || (e.labels && [...e.labels].map(l => l.textContent).join('')) ||
                     (e.tagName === 'BUTTON' ? e.textContent : '');
        return !name || !name.trim();
    }).map(e => e.outerHTML.slice(0, 80))""")
    assert not unnamed, unnamed
    reset(page)


def test_a_screen_reader_hears_values_and_the_keyboard_reaches_everything(page):
    """Both sliders say what they hold (the step, T), the loss plot's text alternative gives each run's losses at the
    current step, the language button is marked as the language it is written in, a skip link leads to the skies, and
    the tour takes the focus when it opens, closes with Escape and gives the focus back to its button."""
    steps = page.evaluate("window.__planetarium.view(1).steps")
    reset(page, time=steps[7], T=25)
    planned = page.evaluate("window.__planetarium.planned")
    assert page.get_attribute("#replay", "aria-valuetext") == f"学習ステップ {steps[7]} / {planned}"
    assert page.get_attribute("#temp", "aria-valuetext") == "T = 0.50"
    loss = page.get_attribute("#loss", "aria-label")
    assert f"ステップ {steps[7]}" in loss
    for ri in range(2):  # each run's train loss, as its sky's caption gives it
        assert re.search(r"訓練損失 (\d+\.\d{3})", page.locator(".skyInfo").nth(ri).inner_text()).group(1) in loss
    assert page.get_attribute("#lang", "lang") == "en"
    page.click("#lang")
    assert page.get_attribute("#lang", "lang") == "ja" and page.get_attribute("#replay", "aria-valuetext").startswith("training step")
    page.click("#lang")
    first = page.evaluate("""[...document.querySelectorAll('a[href], button, input, select, [tabindex]')]
        .find(e => e.tabIndex >= 0 && e.checkVisibility()).id""")
    assert first == "skip"  # (the first stop of the keyboard)
    page.focus("#skip")
    assert page.locator("#skip").bounding_box()["y"] >= 0
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "skiesPart"
    page.click("#tourButton")
    assert page.evaluate("document.getElementById('tour').contains(document.activeElement)")
    page.keyboard.press("Escape")
    assert not page.is_visible("#tour") and page.evaluate("document.activeElement.id") == "tourButton"
    page.evaluate("history.replaceState(null, '', location.pathname)")
    reset(page)


def test_a_scrub_is_announced_once_when_it_ends(page):
    """A mouse drag along the replay slider across many snapshots changes the live region once, on release."""
    reset(page)
    page.evaluate("document.getElementById('announce').textContent = ''")
    # typed: announced once the typing pauses; the count starts after that
    page.fill("#prefix", "emma")
    wait_until(page, "document.getElementById('announce').textContent.includes('「emma」')")
    page.evaluate(LIVE_COUNTER)
    box = page.locator("#replay").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.9, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.1, y, steps=20)
    page.mouse.up()
    changes = page.evaluate("window.__liveChanges")
    assert len(changes) == 1 and "ステップ" in changes[0], changes
    reset(page)


def test_the_english_toggle_changes_every_label(page):
    reset(page)
    title = page.inner_text("h1")
    assert "プラネタリウム" in title and page.title().startswith("プラネタリウム")
    options = page.inner_text("#options")
    page.click("#lang")
    assert page.inner_text("h1").startswith("Planetarium") and page.title().startswith("Planetarium")
    assert page.inner_text("#options") != options
    aside = page.inner_text("aside")
    assert "Temperature" in aside and not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", aside)
    assert "1 position:" in page.inner_text("#prefixStatus")  # (not "1 positions")
    assert "T = 1/κ" not in aside
    page.click("#lang")
    assert page.inner_text("h1") == title
    assert not page.errors


def test_the_guided_tour_moves_through_five_steps(page):
    reset(page)
    page.click("#tourButton")
    texts = []
    for i in range(5):
        assert page.is_visible("#tour")
        texts.append(page.inner_text("#tourText"))
        if i == 2:  # a name's path, with the camera on its h
            assert page.input_value("#prefix") != "" and page.evaluate("window.__planetarium.view(1).positions") > 1
        if i == 4:
            assert page.evaluate("window.__planetarium.state.show.drift")
        if i < 4:
            page.click("#tourNext")
    assert len(set(texts)) == 5 and texts[0].startswith("1.")
    page.click("#lang")
    assert page.inner_text("#tourText").startswith("5. Retraction")
    page.click("#lang")
    page.click("#tourClose")
    assert not page.is_visible("#tour")
    reset(page)


# --------------------------------------------------------------------------- any screen

CANVAS_SIZE = "(() => { const c = document.querySelector('.dome canvas'); " \
              "return [c.width, c.getBoundingClientRect().width]; })()"
# the first sky's canvas has its box's size in device pixels (what a resize or a new
# pixel ratio waits for)
FITTED = f"(Math.abs({CANVAS_SIZE}[0] - {CANVAS_SIZE}[1] * window.devicePixelRatio) <= 1)"


def overlaps(a, b):
    return a["x"] < b["x"] + b["width"] - 0.5 and b["x"] < a["x"] + a["width"] - 0.5 and \
        a["y"] < b["y"] + b["height"] - 0.5 and b["y"] < a["y"] + a["height"] - 0.5


# text an element cuts off (an ellipsis, or overflow hidden): none should be
CLIPPED = """[...document.querySelectorAll('body *')].filter(e => { const cs = getComputedStyle(e);
    return (cs.overflowX === 'hidden' || cs.overflowX === 'clip' || cs.textOverflow === 'ellipsis') &&
        e.scrollWidth > e.clientWidth + 1 && e.checkVisibility() && !e.classList.contains('visually-hidden'); })
    .map(e => [e.id || e.className, e.textContent.slice(0, 40), e.scrollWidth, e.clientWidth])"""


@pytest.mark.parametrize("width,height,scale", VIEWPORTS)
def test_no_control_covers_a_sky_and_nothing_scrolls_sideways(browser, runs, width, height, scale):
    """Also the first screen: a subtitle, the line that says what to press (above the skies, on the first screen) and
    no text cut off, in both languages."""
    pg = open_page(browser, runs["html"], width, height, scale)
    for _ in range(2):
        hint = pg.locator("#hint").bounding_box()
        assert hint and hint["y"] + hint["height"] <= height and "▶" in pg.inner_text("#hint"), hint
        assert hint["y"] + hint["height"] <= pg.locator(".dome canvas").first.bounding_box()["y"]
        assert pg.evaluate("[...document.querySelectorAll('.subtitle')].filter(e => e.checkVisibility()).length") == 1
        assert not pg.evaluate(CLIPPED), (width, pg.evaluate(CLIPPED))
        pg.click("#lang")
    assert pg.evaluate("document.documentElement.scrollWidth") <= width
    skies = [pg.locator(".dome canvas").nth(i).bounding_box() for i in range(2)]
    pg.evaluate("window.scrollTo(0, 0)")
    controls = pg.evaluate("""[...document.querySelectorAll('aside *, #quick *, header *, .skyHead *, .legend, .readout, .skyInfo')]
        .map(e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height,
                    tag: e.tagName + '#' + e.id}; }).filter(r => r.width > 0 && r.height > 0)""")
    for sky in skies:
        assert sky["width"] >= min(300, width - 40) * 0.9 and abs(sky["width"] - sky["height"]) < 1
        assert sky["x"] >= 0 and sky["x"] + sky["width"] <= width
        for c in controls:
            assert not overlaps(sky, c), (c, sky)
        # what is on top at points of the sky is the sky's own canvas (scrolled to just below the name box and the
        # replay, which stay at the top of a narrow screen)
        bar = pg.evaluate("(() => { const q = document.getElementById('quick'); "
                          "return getComputedStyle(q).position === 'sticky' ? q.offsetHeight : 0; })()")
        assert bar < 0.4 * height
        for fx, fy in ((0.5, 0.5), (0.1, 0.1), (0.9, 0.9), (0.9, 0.1), (0.1, 0.9)):
            pg.evaluate(f"window.scrollTo(0, {max(0, sky['y'] - bar - 10)})")
            top = pg.evaluate(f"""(() => {{ const c = document.querySelectorAll('.dome canvas');
                const y = {sky['y']} - window.scrollY; const e = document.elementFromPoint({sky['x']} + {fx} *
                {sky['width']}, y + {fy} * {sky['height']}); return e && e.tagName === 'CANVAS' &&
                [...c].includes(e); }})()""")
            assert top, (width, fx, fy)
    # the canvas has the sky's size in device pixels: sharp at device scale 2
    dims = pg.evaluate(CANVAS_SIZE)
    assert abs(dims[0] - dims[1] * scale) <= 1
    for prefix in ("a" * 30, "abcdefghijklmn"):  # a long prefix's attention table scrolls in its box, not the page
        pg.fill("#prefix", prefix)
        assert pg.evaluate("document.documentElement.scrollWidth") <= width, prefix
    for _ in range(2):
        pg.click("#lang")
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
    if width < 900:  # narrow: the name box and the replay above the skies, the other controls below
        pg.evaluate("window.scrollTo(0, 0)")
        assert pg.locator("aside").bounding_box()["y"] >= max(s["y"] + s["height"] for s in skies)
        quick = pg.locator("#quick").bounding_box()
        assert quick["y"] + quick["height"] <= min(s["y"] for s in skies)
    # a change of the device pixel ratio (zoom, a window moved to another screen) redraws sharp (headless Chromium
    # reports an emulated ratio change to the page only together with a change of size)
    cdp = pg.context.new_cdp_session(pg)
    cdp.send("Emulation.setDeviceMetricsOverride", {"width": width - 10, "height": height,
                                                    "deviceScaleFactor": scale + 1, "mobile": False})
    wait_until(pg, f"window.devicePixelRatio === {scale + 1} && {FITTED}")
    cdp.send("Emulation.clearDeviceMetricsOverride")
    # a resize redraws at the new size
    pg.set_viewport_size({"width": max(360, width - 100), "height": height})
    wait_until(pg, f"window.innerWidth === {max(360, width - 100)} && {FITTED}")
    dims, ratio = pg.evaluate(CANVAS_SIZE), pg.evaluate("window.devicePixelRatio")
    assert dims[1] <= max(360, width - 100) and abs(dims[0] - dims[1] * ratio) <= 1, (dims, ratio)
    assert pg.evaluate("document.documentElement.scrollWidth") <= max(360, width - 100)
    close_page(pg)


def test_four_runs_make_a_2_by_2_grid(browser, runs):
    pg = open_page(browser, runs["four"], 1440, 900)
    boxes = [pg.locator(".dome canvas").nth(i).bounding_box() for i in range(4)]
    xs, ys = sorted({round(b["x"]) for b in boxes}), sorted({round(b["y"]) for b in boxes})
    assert len(xs) == 2 and len(ys) == 2
    assert pg.evaluate("document.documentElement.scrollWidth") <= 1440
    close_page(pg)


# --------------------------------------------------------------------------- fonts

def test_the_embedded_font_has_every_character_the_page_shows(page):
    """Everything the page writes, in both languages, the tour, the canvases' labels, messages: each character is in
    the embedded IPAexGothic subset (so a machine without a Japanese font shows no box), and that font is loaded."""
    from fontTools.ttLib import TTFont
    shown = set()
    reset(page, prefix="Em1")
    for lang in ("ja", "en"):
        if page.evaluate("window.__planetarium.state.lang") != lang:
            page.click("#lang")
        for prefix in ("", "emma", "Em1", "a" * 30):
            page.fill("#prefix", prefix)
            page.evaluate("window.__planetarium.show('drift', true); window.__planetarium.drawFrame()")
            shown |= set(page.inner_text("body"))
        for i in range(5):
            page.evaluate(f"window.__planetarium.tour({i})")
            shown |= set(page.inner_text("body"))
        page.evaluate("window.__planetarium.tour(-1)")
        shown |= set(page.evaluate("""[...document.querySelectorAll('[placeholder], [aria-label], [title]')].map(e =>
            (e.getAttribute('placeholder') || '') + (e.getAttribute('aria-label') || '') + (e.title || '')).join('')
            + document.title"""))
    if page.evaluate("window.__planetarium.state.lang") != "ja":
        page.click("#lang")
    shown |= set("".join(page.evaluate("[...window.__drawnText]")))
    html = page.evaluate("document.documentElement.outerHTML")
    font = TTFont(io.BytesIO(base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)\) format", html).group(1))))
    cmap = font.getBestCmap()
    missing = sorted(c for c in shown - set(" \n\t\u00a0") if ord(c) not in cmap)
    assert not missing, [f"U+{ord(c):04X} {c}" for c in missing]
    assert len(shown) > 150
    assert page.evaluate("[...document.fonts].some(f => f.family.includes('PlanetariumGothic') && "
                         "f.status === 'loaded')")
    assert page.evaluate("getComputedStyle(document.body).fontFamily").strip('"').startswith('PlanetariumGothic')
    reset(page)


# --------------------------------------------------------------------------- speed and screenshots

def test_the_time_to_draw_one_frame_is_measured(page):
    """A measurement, printed, not a limit (a loaded machine must not fail it): the median over 120 frames of two skies
    and the loss plot with every layer on (a typed name, caps, the retraction, trails) while the camera turns, each
    ending with a one-pixel read of every canvas so that the time includes putting the pixels on the canvas; and replay
    frames that cross snapshots (forward passes, text). Every frame is drawn, and the last turned the camera."""
    reset(page, prefix="emma")
    turned_from = page.evaluate("window.__planetarium.state.R")
    times = page.evaluate("""() => {
        const P = window.__planetarium, canvases = [...document.querySelectorAll('canvas')], times = [];
        Object.assign(P.state.show, {stars: true, out: true, path: true, drift: true, trail: true});
        for (let i = 0; i < 120; i++) {
            P.turn(0.02, 0.005);
            const t0 = performance.now();
            P.drawFrame();
            for (const c of canvases) c.getContext('2d').getImageData(0, 0, 1, 1);
            times.push(performance.now() - t0);
        }
        return times;
    }""")
    replay = page.evaluate("""() => {
        const P = window.__planetarium, canvases = [...document.querySelectorAll('canvas')], times = [];
        const steps = P.view(1).steps, end = steps[steps.length - 1];
        for (let i = 0; i < 60; i++) {
            const t0 = performance.now();
            P.setTime(end * i / 60);
            P.drawFrame();
            for (const c of canvases) c.getContext('2d').getImageData(0, 0, 1, 1);
            times.push(performance.now() - t0);
        }
        return times;
    }""")
    median = statistics.median(times)
    print(f"\nplanetarium frame time: median {median:.2f} ms, 90th percentile {np.percentile(times, 90):.2f} ms over "
          f"{len(times)} frames (every layer on); a replay frame: median {statistics.median(replay):.2f} ms, 90th "
          f"percentile {np.percentile(replay, 90):.2f} ms over {len(replay)} frames")
    assert len(times) == 120 and len(replay) == 60 and np.isfinite(times + replay).all()
    assert page.evaluate("window.__planetarium.state.R") != turned_from
    reset(page)
    assert not page.errors


def test_a_big_vocabulary_draws_a_bounded_subset_of_its_stars(browser, tmp_path, capsys):
    """A run of 3,000 characters (random weights, 5 snapshots): planetarium.py says in one line that each sky draws
    400 of its stars; the page draws the likeliest and those nearest h (the top 3 among them), and prints the time a
    frame takes while the camera turns (a measurement, not a limit)."""
    html = tmp_path / "big.html"
    run = write_big_vocab_run(tmp_path / "big")
    assert planetarium.main([run, "--html", str(html), "--lang", "en"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "3,001" in line]
    assert len(notes) == 1 and str(planetarium.STAR_LIMIT) in notes[0], notes
    pg = open_page(browser, html)
    assert pg.evaluate("window.__planetarium.state.lang") == "en"  # (--lang is written into the page)
    view = pg.evaluate("window.__planetarium.view(0)")
    assert view["shown"] == planetarium.STAR_LIMIT
    times = pg.evaluate("""() => { const P = window.__planetarium, t = [];
        for (let i = 0; i < 20; i++) { P.turn(0.05, 0); const t0 = performance.now(); P.drawFrame(); t.push(performance.now() - t0); }
        return t; }""")
    print(f"\n3,001 tokens, {view['shown']} stars drawn: a frame while turning takes a median of "
          f"{statistics.median(times):.1f} ms")
    pg.evaluate("window.__drawnText.clear(); window.__planetarium.drawFrame()")
    drawn = pg.evaluate("[...window.__drawnText]")
    assert all(any(d.startswith(label) for d in drawn) for label in view["top"] if label != "BOS"), view["top"]
    close_page(pg)


def test_the_docs_screenshots(browser, runs, tmp_path):
    """The page as docs/planetarium.md shows it (and names it), at 1440 x 900 and 375 x
    667: a name typed, the sphere sky facing its h with the likeliest character's cap, T
    = 0.5, the retraction on, a third of the way through training for the wide one."""
    folder = os.environ.get("PLANETARIUM_SCREENSHOTS") or str(tmp_path)
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "planetarium.md"), encoding="utf-8") as f:
        docs = f.read()
    for width, height, scale in ((1440, 900, 1), (375, 667, 2)):
        assert f"planetarium-{width}.png" in docs
        pg = open_page(browser, runs["html"], width, height, scale)
        steps = pg.evaluate("window.__planetarium.view(1).steps")
        reset(pg, prefix="emma", time=None if width < 900 else steps[25], T=25)
        pg.evaluate("window.__planetarium.state.show.allCaps = false;"
                    "window.__planetarium.show('drift', true); window.__planetarium.state.selected = ['a'];"
                    "window.__planetarium.update(); window.__planetarium.faceH(1); window.__planetarium.drawFrame();"
                    "document.activeElement.blur(); window.scrollTo(0, 0)")
        path = os.path.join(folder, f"planetarium-{width}.png")
        pg.screenshot(path=path)
        # 256 colors (Pillow comes with matplotlib): a third of the size, no visible change on this dark page
        from PIL import Image
        Image.open(path).convert("RGB").quantize(256, dither=Image.Dither.NONE).save(path, optimize=True)
        assert 30_000 < os.path.getsize(path) < 400_000
        close_page(pg)
