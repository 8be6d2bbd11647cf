"""The step player page in a real browser: Playwright drives a headless Chromium (Debian's `chromium`) through the page
step_player.py writes for a fresh model of each norm (RMSNorm beside the sphere) over a short name, and checks what a
learner sees against the recording itself: the highlighted line (its number and its text) after each control (step,
back, step over a loop, run to a line, next position, the slider, Home / End, backward mode); the numbers drawn in the
cells of the variables, of the attention weights, the KV cache, the predicted distribution and, at the end of the
backward pass, the parameters' gradients; one level down (--into). Also: at 375, 1024 and 1440 px nothing scrolls
sideways and no control covers another; the language switch; keyboard-only use; the first screen says what to press;
every character shown is in the embedded font; no console error, no request but the page; its size (its load
time is measured by benchmarks/page_load.py).

Screenshots at 375 and 1440 px are written only when asked:
    STEP_PLAYER_SCREENSHOTS=/tmp/shots python3 dev.py test tests/test_step_player_browser.py -k screenshots
With no Chromium (or no Playwright) the module is skipped with one line saying how to install it.
"""
import base64
import io
import math
import os
import re

import pytest
from browser_helpers import ARGS, chromium_or_skip

import step_player

CHROMIUM, sync_playwright = chromium_or_skip("step player")

pytestmark = pytest.mark.slow

NAME = "ava"  # short: few positions, a quick recording
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uff01-\uff5e]")
WEB_FILES = ["step_player.html", "step_player.css", "step_player_text.js", "step_player_page.js"]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Two pages (both norms; RMSNorm alone with --into) and the data each holds, as the page reads it."""
    base = tmp_path_factory.mktemp("step_player_browser")
    models = step_player.fresh_models()
    out = {}
    for key, chosen, into in (("two", models, False), ("into", models[:1], True)):
        recordings = [step_player.record(params, cfg, vocab, NAME, into, run, step)
                      for params, cfg, vocab, run, step in chosen]
        html = step_player.make_page(recordings, NAME, "ja")
        path = base / f"{key}.html"
        path.write_text(html, encoding="utf-8")
        out[key] = (path, step_player.page_data(recordings, NAME, "ja"), len(html.encode("utf-8")))
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
    pg.set_default_timeout(5000)
    errors, requests = [], []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("request", lambda r: requests.append(r.url))
    pg.goto(html.as_uri())
    pg.evaluate("document.fonts.ready")
    pg.errors, pg.requests, pg.html = errors, requests, html
    return pg


def close_page(pg):
    assert not pg.errors, pg.errors
    assert pg.requests == [pg.html.as_uri()], pg.requests
    pg.close()


@pytest.fixture(scope="module")
def page(browser, pages):
    """The two-norm page at 1280 x 800; afterwards: no console errors, no request but the page."""
    pg = open_page(browser, pages["two"][0])
    yield pg
    close_page(pg)


def reset(pg, lang="ja"):
    """Forward mode, every panel at its first step, the language given, focus on nothing."""
    pg.evaluate(f"""() => {{ const S = window.__stepPlayer;
        if (S.state.lang !== {lang!r}) document.getElementById('lang').click();
        S.state.back = false; S.go(0, 0); document.activeElement.blur(); }}""")


def shown(pg):
    """Per panel: the highlighted line's number and text, the page's step index, the line's function."""
    return pg.evaluate("""[...document.querySelectorAll('.panel')].map((p, k) => {
        const e = p.querySelectorAll('[aria-current=step]');
        return {n: e.length, line: e.length ? Number(e[0].dataset.line) : null,
                text: e.length ? e[0].querySelector('.src').textContent : null,
                idx: window.__stepPlayer.state.idx[k]}; })""")


def check_lines(pg, data):
    """Each panel highlights exactly one line: its recording's line at the page's step, with the source's text; and
    every panel is at the same position."""
    got = shown(pg)
    for k, (g, rec) in enumerate(zip(got, data["recordings"])):
        s = rec["steps"][g["idx"]]
        code = rec["code"][s["f"]]
        assert g["n"] == 1 and g["line"] == s["l"], (k, g, s["l"])
        assert g["text"] == code["lines"][s["l"] - code["first"]], (k, g)
    positions = {rec["steps"][g["idx"]]["p"] for g, rec in zip(got, data["recordings"])}
    assert len(positions) == 1, got
    return [g["idx"] for g in got]


# --------------------------------------------------------------------------- the semantics, as the page documents them

def over_target(rec, i, d):
    """Step over: the next step no deeper than step i; on a for-loop's header, the next one outside the loop."""
    S, s = rec["steps"], rec["steps"][i]
    loop = next((lp for lp in rec["code"][s["f"]]["loops"] if lp[0] == s["l"]), None)
    j = i + d
    while 0 <= j < len(S):
        u = S[j]
        inside = loop and u["d"] == s["d"] and u["f"] == s["f"] and u["p"] == s["p"] and loop[0] <= u["l"] <= loop[1]
        if u["d"] <= s["d"] and not inside:
            return j
        j += d
    return i


def source(rec, line):
    code = rec["code"][rec["model"]]
    return code["lines"][line - code["first"]]


def follower(lead, j, other):
    """Where a panel goes when another one jumps to its step j: the same position, as far into it."""
    s = lead["steps"][j]
    a, b = lead["positions"][s["p"]], other["positions"][s["p"]]
    f = (j - a["first"]) / max(1, a["last"] - a["first"])
    return b["first"] + math.floor(f * (b["last"] - b["first"]) + 0.5)


# --------------------------------------------------------------------------- the tests

def test_it_is_small_and_its_first_screen_says_what_to_press(page, pages):
    reset(page)
    assert page.locator(".panel").count() == 2
    intro = page.inner_text("#intro")
    assert "1 行ずつ" in intro and "→" in intro and "↓" in intro and "逆伝播" in intro and NAME in intro
    box = page.locator("#intro").bounding_box()
    assert box["y"] + box["height"] < 200  # on the first screen, above the controls
    assert page.title().startswith("ステッププレーヤー")
    headings = page.evaluate("[...document.querySelectorAll('h1, h2, h3')].map(h => h.tagName + ' ' + h.textContent)")
    assert any(h.startswith("H2 RMSNorm") for h in headings) and any(h.startswith("H2 球面") for h in headings)
    # (how long it takes to load is measured by benchmarks/page_load.py, not timed here)
    # small: scripts and styles well under 60 kB, a page of the default model far under 2 MB (--into included)
    web = sum(os.path.getsize(os.path.join(step_player.planetarium.WEB, f)) for f in WEB_FILES)
    assert web < 60_000, web
    assert pages["two"][2] < 2_000_000 and pages["into"][2] < 2_000_000, (pages["two"][2], pages["into"][2])
    # only what the current step needs is drawn
    assert page.evaluate("document.querySelectorAll('*').length") < 3000


def test_the_highlighted_line_follows_every_control(page, pages):
    data = pages["two"][1]
    rms, sph = data["recordings"]
    N = len(rms["steps"])
    reset(page)
    assert check_lines(page, data) == [0, 0]
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert check_lines(page, data)[0] == 3
    page.click("#back")
    assert check_lines(page, data)[0] == 2
    page.click("#step")
    assert check_lines(page, data)[0] == 3
    # run to the outer loop's header (its line number), then step over the whole loop: the line after it
    header, end = rms["code"]["gpt"]["loops"][0]
    page.click(f".panel >> nth=0 >> button[data-go='{header}']")
    h = check_lines(page, data)[0]
    assert h == next(j for j in range(4, N) if rms["steps"][j]["l"] == header)
    page.keyboard.press("ArrowDown")
    i = check_lines(page, data)[0]
    assert i == over_target(rms, h, 1)
    s = rms["steps"][i]
    assert s["l"] > end and s["p"] == 0 and source(rms, s["l"]).lstrip().startswith("logits")
    # run to a line: the next step at it (here in the next position); the sphere follows to that position
    line = next(s["l"] for s in rms["steps"] if source(rms, s["l"]).lstrip().startswith("attn_weights"))
    page.click(f".panel >> nth=0 >> button[data-go='{line}']")
    j = next(j for j in range(i + 1, N) if rms["steps"][j]["l"] == line)
    assert check_lines(page, data) == [j, follower(rms, j, sph)]
    # an inner loop's header: over it goes past the head loop, still in the outer loop
    inner = rms["code"]["gpt"]["loops"][1]
    page.click(f".panel >> nth=0 >> button[data-go='{inner[0]}']")
    i = check_lines(page, data)[0]
    page.keyboard.press("n")
    j = check_lines(page, data)[0]
    assert j == over_target(rms, i, 1) and rms["steps"][j]["l"] > inner[1] and rms["steps"][j]["l"] <= end
    # next / previous position: every panel at its first step there
    p = rms["steps"][j]["p"]
    page.keyboard.press("PageDown")
    assert check_lines(page, data) == [rms["positions"][p + 1]["first"], sph["positions"][p + 1]["first"]]
    page.click("#prevPos")
    assert check_lines(page, data) == [rms["positions"][p]["first"], sph["positions"][p]["first"]]
    # the slider: over the whole recording, the sphere at the same position as far into it
    page.locator("#slider").fill(str(N // 2))
    assert check_lines(page, data) == [N // 2, follower(rms, N // 2, sph)]
    assert page.get_attribute("#slider", "aria-valuetext").startswith(f"ステップ {N // 2 + 1} / {N}")
    page.keyboard.press("End")
    assert check_lines(page, data) == [N - 1, len(sph["steps"]) - 1]
    page.keyboard.press("ArrowRight")  # (the end: nothing moves)
    assert check_lines(page, data) == [N - 1, len(sph["steps"]) - 1]
    page.keyboard.press("Home")
    assert check_lines(page, data) == [0, 0]
    # steps keep the panels at one position: one that finishes first waits for the other
    for _ in range(len(sph["steps"]) // len(sph["positions"]) + 5):
        page.keyboard.press("ArrowRight")
        check_lines(page, data)
    # backward mode reads the steps in reverse: → goes back, ← forward, Home is the last step
    page.click("#mode")
    assert page.get_attribute("#mode", "aria-pressed") == "true"
    i = check_lines(page, data)[0]
    page.keyboard.press("ArrowRight")
    assert check_lines(page, data)[0] == i - 1
    page.keyboard.press("ArrowLeft")
    assert check_lines(page, data)[0] == i
    page.keyboard.press("Home")
    assert check_lines(page, data) == [N - 1, len(sph["steps"]) - 1]
    page.keyboard.press("PageDown")  # the next position in reading order: the one before, from its last step
    last = len(rms["positions"]) - 1
    assert check_lines(page, data) == [rms["positions"][last - 1]["last"], sph["positions"][last - 1]["last"]]
    page.keyboard.press("b")
    assert page.get_attribute("#mode", "aria-pressed") == "false"
    assert not page.errors


def drawn(pg, k, name):
    """The numbers drawn for variable `name` in panel k: its cells' data-value, or its scalar's."""
    return pg.evaluate("""([k, name]) => { const v = document.querySelectorAll('.panel')[k]
            .querySelector(`.vars [data-var="${name}"]`);
        if (!v) return null;
        const c = v.querySelectorAll('.cells .c');
        if (c.length) return [...c].map(e => Number(e.dataset.value));
        const s = v.querySelector('.scalar[data-value]');
        return s ? [Number(s.dataset.value)] : []; }""", [k, name])


def flat(V, key):
    x = V.get(key)
    if x is None:
        return None
    return [v for row in x for v in row] if V["k"] == "mat" else x if V["k"] == "vec" else [x]


def check_values(pg, data, backward):
    """Every vector, matrix and Value the current step of each panel changed is drawn with the recording's numbers
    (its data, or in backward mode its gradient); the attention weights of each head, the KV cache and the
    predicted distribution of the position too."""
    checked = 0
    for k, g in enumerate(shown(pg)):
        rec = data["recordings"][k]
        s = rec["steps"][g["idx"]]
        for name, V in {**s.get("a", {}), **s["v"], **({"return": s["r"]} if "r" in s else {})}.items():
            if V["k"] not in ("vec", "mat", "val") or not V["d"]:
                continue
            want = flat(V, "g" if backward else "d")
            got = drawn(pg, k, name)
            if want is None:
                assert got == [], (k, name, got)
            else:
                assert got == want, (k, g["idx"], name, got[:4], want[:4])
                checked += 1
        # the call's locals so far: the attention weights of each head (the layer of the loop), the cache, |x| or |h|
        loc, attn, hd = {}, {}, rec["config"]["head_dim"]
        for u in rec["steps"][rec["positions"][s["p"]]["first"]:g["idx"] + 1]:
            if u["d"] == 0:
                loc.update(u.get("a", {}))
                loc.update(u["v"])
                if "attn_weights" in u["v"]:
                    attn[(loc["li"]["d"], loc["hs"]["d"] // hd)] = u["v"]["attn_weights"]
        layer = loc["li"]["d"] if "li" in loc else 0
        heads = pg.evaluate("""k => [...document.querySelectorAll('.panel')[k].querySelectorAll('.attn .head')]
            .map(h => [Number(h.dataset.head), [...h.querySelectorAll('.c')].map(c => Number(c.dataset.value))])""", k)
        assert len(heads) == rec["config"]["n_head"]
        for h, values in heads:
            V = attn.get((layer, h))
            assert values == (flat(V, "g" if backward else "d") if V else []), (k, h, values)
        counts = pg.evaluate("k => [...document.querySelectorAll('.panel')[k].querySelectorAll('.kvRow')]"
                             ".map(r => [Number(r.dataset.count), r.querySelectorAll('.k.on').length])", k)
        want = loc["keys"]["d"] if "keys" in loc else [0] * rec["config"]["n_layer"]
        assert counts == [[n, n] for n in want], (k, counts, want)
        resid = loc.get("h" if rec["norm"] == "sphere" else "x")
        norm = pg.evaluate("k => document.querySelectorAll('.panel')[k].querySelector('.normLine').dataset.norm", k)
        if resid and resid["k"] == "vec" and resid["d"]:
            assert float(norm) == pytest.approx(math.sqrt(sum(v * v for v in resid["d"])), rel=1e-9)
            if rec["norm"] == "sphere" and len(resid["d"]) == rec["config"]["n_embd"]:
                assert float(norm) == pytest.approx(1, abs=1e-4)  # on the sphere: |h| = 1
        pos = rec["positions"][s["p"]]
        target = pg.evaluate("""k => { const r = document.querySelectorAll('.panel')[k].querySelector('.probRow.target');
            return [r.dataset.token, Number(r.dataset.p), Number(document.querySelectorAll('.panel')[k]
                .querySelector('.loss').dataset.loss)]; }""", k)
        bos = pos["target"] == len(rec["vocab"])
        assert target == ["BOS" if bos else rec["vocab"][pos["target"]], pos["probs"][pos["target"]], pos["loss"]]
    return checked


def test_the_drawn_numbers_are_the_recordings_forward_and_backward(page, pages):
    data = pages["two"][1]
    rms = data["recordings"][0]
    picks = [i for i, s in enumerate(rms["steps"]) if s["p"] == 1 and any(
        name in s["v"] for name in ("x", "k_h", "attn_weights", "head_out"))] + [
        i for i, s in enumerate(rms["steps"]) if "r" in s or "a" in s][:3] + [len(rms["steps"]) - 1]
    for backward in (False, True):
        reset(page)
        if backward:  # turned on at the start: backward() starts from the loss, at each panel's last step
            page.keyboard.press("b")
            assert page.evaluate("window.__stepPlayer.state.idx") == [len(r["steps"]) - 1 for r in data["recordings"]]
            assert page.inner_text("#announce").startswith("逆伝播モード")
        checked = 0
        for i in picks[::2]:
            page.evaluate(f"window.__stepPlayer.go(0, {i})")
            checked += check_values(page, data, backward)
        assert checked >= 15
        # a cell shows its number on hover (title) and the strip its numbers to a screen reader
        page.evaluate(f"window.__stepPlayer.go(0, {picks[0]})")
        cell = page.locator(".panel >> nth=0 >> .vars .cells .c").first
        assert re.search(r"\] = -?[0-9.e-]+$", cell.get_attribute("title"))
        assert re.search(r"[0-9]", page.locator(".panel >> nth=0 >> .vars .cells").first.get_attribute("aria-label"))
    # the end of the backward pass: the parameters' gradients as heat maps, their largest |gradient| as recorded
    page.keyboard.press("End")
    assert page.evaluate("window.__stepPlayer.state.idx").count(0) == 2
    for k, rec in enumerate(data["recordings"]):
        figs = page.evaluate("k => [...document.querySelectorAll('.panel')[k].querySelectorAll('.grads figure')]"
                             ".map(f => [f.dataset.key, Number(f.dataset.max), f.querySelector('canvas').width])", k)
        assert [f[0] for f in figs] == list(rec["param_grads"])
        for key, most, width in figs:
            g = rec["param_grads"][key]
            assert most == max(abs(v) for row in (g if isinstance(g[0], list) else [g]) for v in row) and width > 0
    reset(page)
    assert not page.errors


def test_one_level_down_with_into(browser, pages):
    path, data, _ = pages["into"]
    rec = data["recordings"][0]
    pg = open_page(browser, path)
    S = rec["steps"]
    i = next(j for j, s in enumerate(S) if s["d"] == 0 and S[j + 1]["d"] == 1)  # a line that calls a function
    pg.evaluate(f"window.__stepPlayer.go(0, {i})")
    check_lines(pg, data)
    pg.keyboard.press("ArrowRight")  # into it: its own code, with its arguments
    assert check_lines(pg, data) == [i + 1]
    f = S[i + 1]["f"]
    assert pg.inner_text(".panel .codeH").endswith(f"{f}()") and pg.is_visible(".panel .inside")
    assert drawn(pg, 0, "x") == S[i + 1]["a"]["x"]["d"]
    pg.keyboard.press("ArrowLeft")
    pg.keyboard.press("ArrowDown")  # over it: the caller's next line
    j = check_lines(pg, data)[0]
    assert j > i + 1 and S[j]["d"] == 0 and all(s["d"] == 1 for s in S[i + 1:j])
    assert not pg.is_visible(".panel .inside")
    close_page(pg)


# the words on the page but the language button's (in the other language) and the last announcement
TEXT = """[...document.body.children].filter(e => e.tagName !== 'SCRIPT' && e.id !== 'announce')
    .map(e => e.innerText).join('\\n').replace(document.getElementById('lang').innerText, '')"""


def test_the_english_switch_changes_every_word(page):
    reset(page)
    ja = page.evaluate(TEXT)
    page.click("#lang")
    assert page.evaluate("document.documentElement.lang") == "en" and page.title().startswith("Step player")
    en = page.evaluate(TEXT)
    assert en != ja and "Step →" in en and "Backward" in en
    assert not JAPANESE.search(en), JAPANESE.findall(en)[:10]
    assert page.get_attribute("#slider", "aria-valuetext").startswith("Step 1 /")
    page.click("#lang")
    assert page.evaluate("document.documentElement.lang") == "ja" and page.evaluate(TEXT) == ja
    # English inside Japanese is marked: the code and the variables' names
    assert page.evaluate("[...document.querySelectorAll('.src, .varHead code')].every(e => e.closest('[lang=en]'))")
    assert page.get_attribute("#lang", "lang") == "en"


def test_keyboard_only(page, pages):
    """Tab reaches every control in order, focus is visible, Enter presses a button, the line numbers take ↑↓ and
    Enter; the slider has a name and its value as text; every change is announced."""
    data = pages["two"][1]
    reset(page)
    page.focus("#lang")
    order, outlines = ["lang"], []
    for _ in range(9):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id || document.activeElement.className"))
        outlines.append(page.evaluate("getComputedStyle(document.activeElement).outlineStyle"))
    assert order[:8] == ["lang", "back", "step", "over", "prevPos", "nextPos", "mode", "slider"], order
    assert order[8:] == ["no", "no"], order  # then each panel's line numbers (one stop each: its current line)
    assert "none" not in outlines, list(zip(order[1:], outlines))
    page.focus("#step")
    page.keyboard.press("Enter")
    assert check_lines(page, data)[0] == 1
    assert "88" not in page.inner_text("#announce") and re.search(r"\d+ 行目", page.inner_text("#announce"))
    # the line numbers: ↓ moves to the next line's number, Enter runs to it
    page.focus(".panel >> nth=0 >> .code button[tabindex='0']")
    here = page.evaluate("Number(document.activeElement.dataset.go)")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    there = page.evaluate("Number(document.activeElement.dataset.go)")
    assert there > here
    page.keyboard.press("Enter")
    assert shown(page)[0]["line"] == there
    assert f"{there} 行目" in page.inner_text("#announce")
    # every control has a name
    unnamed = page.evaluate("""[...document.querySelectorAll('button, input, [tabindex]')].filter(e => {
        const name = e.getAttribute('aria-label') || (e.labels && [...e.labels].map(l => l.textContent).join('')) ||
                     (e.tagName === 'BUTTON' ? e.textContent : '');
        return !name || !name.trim(); }).map(e => e.outerHTML.slice(0, 80))""")
    assert not unnamed, unnamed
    assert page.get_attribute("#slider", "aria-valuetext") == page.inner_text("#stepLabel")
    reset(page)


def overlaps(a, b):
    return a["x"] < b["x"] + b["width"] - 0.5 and b["x"] < a["x"] + a["width"] - 0.5 and \
        a["y"] < b["y"] + b["height"] - 0.5 and b["y"] < a["y"] + a["height"] - 0.5


CONTROLS = """[...document.querySelectorAll('header button, #bar button, #slider, #stepLabel, #where, .panel h2, .codeH, ' +
    '.normLine, .info')].map(e => { const r = e.getBoundingClientRect();
    return {x: r.x, y: r.y, width: r.width, height: r.height, what: e.id || e.className || e.tagName,
            clipped: e.scrollWidth > e.clientWidth + 1}; })"""


@pytest.mark.parametrize("width,height", [(375, 667), (1024, 768), (1440, 900)])
def test_nothing_scrolls_sideways_and_no_control_covers_another(browser, pages, width, height):
    pg = open_page(browser, pages["two"][0], width, height)
    for action in ("", "window.__stepPlayer.go(0, 150)", "document.getElementById('mode').click()",
                   "window.__stepPlayer.ends(true)", "document.getElementById('lang').click()"):
        pg.evaluate(f"{action}; window.scrollTo(0, 0)")
        assert pg.evaluate("document.scrollingElement.scrollWidth") <= pg.evaluate("innerWidth"), action
        boxes = pg.evaluate(CONTROLS)
        for i, a in enumerate(boxes):
            assert not a["clipped"], a
            assert a["x"] >= 0 and a["x"] + a["width"] <= width, a
            for b in boxes[i + 1:]:
                assert not overlaps(a, b), (a, b)
        # the panels and their parts stay within the screen
        parts = pg.evaluate("""[...document.querySelectorAll('.panel, .code, .vars, .attn, .kv, .probs, .maps')]
            .map(e => e.getBoundingClientRect()).map(r => [r.left, r.right])""")
        assert all(left >= 0 and right <= width for left, right in parts), parts
    if width < 1000:  # stacked: the sphere below RMSNorm; else side by side
        a, b = (pg.locator(".panel").nth(i).bounding_box() for i in range(2))
        assert b["y"] >= a["y"] + a["height"]
    else:
        a, b = (pg.locator(".panel").nth(i).bounding_box() for i in range(2))
        assert b["x"] >= a["x"] + a["width"] and abs(a["y"] - b["y"]) < 1
    close_page(pg)


def test_the_embedded_font_has_every_character_shown(page):
    """Everything the page writes, in both languages and modes (titles and labels too): each character is in the
    embedded IPAexGothic subset, and that font is loaded."""
    from fontTools.ttLib import TTFont
    html = page.evaluate("document.documentElement.outerHTML")
    found = re.search(r"base64,([A-Za-z0-9+/=]+)\) format", html)
    if found is None:
        pytest.skip("no font embedded (matplotlib-fontja is not installed)")
    cmap = TTFont(io.BytesIO(base64.b64decode(found.group(1)))).getBestCmap()
    text = set()
    for lang in ("ja", "en"):
        reset(page, lang)
        for action in ("window.__stepPlayer.go(0, 120)", "document.getElementById('mode').click()",
                       "window.__stepPlayer.ends(true)"):
            page.evaluate(action)
            text |= set(page.inner_text("body")) | set(page.evaluate(
                """[...document.querySelectorAll('[aria-label], [title], [aria-valuetext]')].map(e =>
                (e.getAttribute('aria-label') || '') + (e.title || '') + (e.getAttribute('aria-valuetext') || ''))
                .join('') + document.title + document.getElementById('announce').textContent"""))
    missing = sorted(c for c in text - set(" \n\t\u00a0") if ord(c) not in cmap)
    assert not missing, [f"U+{ord(c):04X} {c}" for c in missing]
    assert len(text) > 150
    assert page.evaluate("[...document.fonts].some(f => f.family.includes('StepPlayerGothic') && f.status === 'loaded')")
    reset(page)


def test_screenshots(browser, pages, tmp_path):
    """The page at 1440 x 900 and 375 x 667 (device scale 2), a few steps into the second position; written to
    STEP_PLAYER_SCREENSHOTS when it is set."""
    folder = os.environ.get("STEP_PLAYER_SCREENSHOTS") or str(tmp_path)
    os.makedirs(folder, exist_ok=True)
    rms = pages["two"][1]["recordings"][0]
    i = next(j for j, s in enumerate(rms["steps"]) if s["p"] == 2 and "k_h" in s["v"])
    for width, height, scale in ((1440, 900, 1), (375, 667, 2)):
        pg = open_page(browser, pages["two"][0], width, height, scale)
        pg.evaluate(f"window.__stepPlayer.go(0, {i}); window.scrollTo(0, 0)")
        pg.screenshot(path=os.path.join(folder, f"step-player-{width}.png"))
        pg.evaluate("document.getElementById('mode').click(); window.__stepPlayer.ends(true)")
        pg.locator(".panel .grads").first.scroll_into_view_if_needed()
        pg.screenshot(path=os.path.join(folder, f"step-player-{width}-backward.png"))
        close_page(pg)
        assert os.path.getsize(os.path.join(folder, f"step-player-{width}.png")) > 20_000
