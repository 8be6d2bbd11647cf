// planetarium_page.js -- the planetarium page: the skies (one canvas per run, one camera for all), the replay, the
// loss plot, a name's path, the readout on the sky and as text, vMF caps, the guided tour, Japanese / English.
//
// Drawing is plain Canvas 2D with an orthographic camera. The numbers (paths, probabilities, cosines, attention)
// come from PlanetModel (planetarium_model.js); nothing here changes them, it only projects them for drawing.
"use strict";

(function () {
  const DATA = JSON.parse(document.getElementById("planetarium-data").textContent);
  const M = PlanetModel, TEXT = PlanetText;
  const FONT = DATA.font ? `"${DATA.font}", sans-serif` : "sans-serif";
  const runs = DATA.runs.map(M.decodeRun);
  const RUN_COLORS = ["#5cc8ff", "#ffb454", "#c792ea", "#7fd962"];
  const TOP = 3;  // characters labelled on the sky, with caps (sphere mode: the first only, until all are asked for)
  const REPLAY_SECONDS = 12;  // the whole run at speed x1
  const REDUCED_MOTION = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)");
  const SLIDER = 1000;  // the replay slider's resolution

  // ------------------------------------------------------------------------------------------ state and words
  const planned = Math.max(...runs.map((r) => Math.max(r.data.planned, r.data.steps[r.data.steps.length - 1])));
  const allSteps = Array.from(new Set(runs.flatMap((r) => r.data.steps))).sort((a, b) => a - b);
  const state = {
    lang: DATA.lang === "en" ? "en" : "ja", time: allSteps[allSteps.length - 1], playing: false, speed: 1, prefix: "", T: 1,
    show: { stars: true, out: true, path: true, drift: false, trail: false, trueH: true, allCaps: false },
    selected: [], hover: null, R: mul(rotX(-0.45), rotY(0.6)), drag: null, tour: -1, turning: null,
  };
  function t(key, vars) {
    let s = TEXT[state.lang][key];
    for (const [k, v] of Object.entries(vars || {})) s = s.split("{" + k + "}").join(String(v));
    return s;
  }
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const pct = (p) => (p >= 0.095 ? (100 * p).toFixed(0) : (100 * p).toFixed(1)) + "%";
  const hasAll = (chars) => runs.every((r) => Array.from(chars).every((c) => r.data.vocab.includes(c)));
  const EXAMPLE = hasAll("emma") ? "emma" : hasAll("えみ") ? "えみ" :
    runs[0].data.vocab.filter((c) => c !== null).slice(0, 2).join("");

  // how the page writes run r's token i: its label, the end token as "BOS (end)" (it ends a name)
  const labelOf = (r, i) => (i === r.V - 1 ? t("bosEnd") : r.data.labels[i]);

  // ------------------------------------------------------------------------------------------ 3-D helpers
  function rotX(a) { const c = Math.cos(a), s = Math.sin(a); return [[1, 0, 0], [0, c, -s], [0, s, c]]; }
  function rotY(a) { const c = Math.cos(a), s = Math.sin(a); return [[c, 0, s], [0, 1, 0], [-s, 0, c]]; }
  function mul(A, B) {
    return A.map((row) => [0, 1, 2].map((j) => row[0] * B[0][j] + row[1] * B[1][j] + row[2] * B[2][j]));
  }
  function cross(a, b) { return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]; }
  function unit3(p) {
    const n = Math.hypot(p[0], p[1], p[2]);
    return n > 0 ? [p[0] / n, p[1] / n, p[2] / n] : [0, 0, 1];
  }
  function slerp3(a, b, f) { return Array.from(M.slerp(Float64Array.from(a), Float64Array.from(b), f)); }
  // a C-dimensional vector -> [its direction on the map, the share of its length the 3 directions keep]
  function projectKeep(r, x, o) {
    o = o || 0;
    const b = r.data.basis, C = r.C, p = [0, 0, 0];
    let n2 = 0;
    for (let i = 0; i < C; i++) n2 += x[o + i] * x[o + i];
    for (let a = 0; a < 3; a++) { let s = 0; for (let i = 0; i < C; i++) s += b[a][i] * x[o + i]; p[a] = s; }
    const kept = Math.hypot(p[0], p[1], p[2]);
    return [unit3(p), n2 > 0 ? kept / Math.sqrt(n2) : 0];
  }
  const project = (r, x, o) => projectKeep(r, x, o)[0];
  const unitC = (x) => M.l2normalize(x);
  function arc(r, u, v, n) {  // the great-circle arc from u to v in C dimensions, projected (n + 1 points)
    const pts = [];
    for (let i = 0; i <= n; i++) pts.push(project(r, M.slerp(u, v, i / n)));
    return pts;
  }
  function norm(x, o, n) { return Math.sqrt(M.dot(x, x, o, o, n)); }

  // ------------------------------------------------------------------------------------------ time and snapshots
  // where the replay is for run r: snapshot k (the last at or before the time), the next one k2, and how far
  // between them (f in [0, 1)); the stars are drawn interpolated, the numbers are those of snapshot k
  function locate(r, time) {
    const s = r.data.steps;
    let k = 0;
    while (k + 1 < s.length && s[k + 1] <= time) k++;
    if (k + 1 >= s.length || time <= s[k]) return { k, k2: k, f: 0 };
    return { k, k2: k + 1, f: (time - s[k]) / (s[k + 1] - s[k]) };
  }
  // the unit directions and norms of the stars (wte and lm_head rows) of snapshot k, and their map positions
  function starsAt(r, k) {
    r.starCache = r.starCache || new Map();
    if (r.starCache.has(k)) return r.starCache.get(k);
    const p = M.snapshot(r, k), V = r.V, C = r.C, s = { wte: [], lm: [], wteN: [], lmN: [], wte3: [], lm3: [], keep: [], lmKeep: [] };
    for (let i = 0; i < V; i++) {
      s.wteN.push(norm(p.wte, i * C, C)); s.lmN.push(norm(p.lm, i * C, C));
      s.wte.push(M.l2normalize(p.wte, i * C, C)); s.lm.push(M.l2normalize(p.lm, i * C, C));
      const [d, keep] = projectKeep(r, p.wte, i * C), [d2, keep2] = projectKeep(r, p.lm, i * C);
      s.wte3.push(d); s.keep.push(keep); s.lm3.push(d2); s.lmKeep.push(keep2);
    }
    r.starCache.set(k, s);
    return s;
  }
  // the stars' map positions at the current time: slerp between the two snapshots in C dimensions, projected
  function starsNow(r, loc) {
    const a = starsAt(r, loc.k);
    if (loc.f === 0) return { wte3: a.wte3, lm3: a.lm3, keep: a.keep, lmKeep: a.lmKeep, wteN: a.wteN };
    const b = starsAt(r, loc.k2), out = { wte3: [], lm3: [], keep: [], lmKeep: [], wteN: [] };
    for (let i = 0; i < r.V; i++) {
      const [d, keep] = projectKeep(r, M.slerp(a.wte[i], b.wte[i], loc.f));
      const [d2, keep2] = projectKeep(r, M.slerp(a.lm[i], b.lm[i], loc.f));
      out.wte3.push(d); out.keep.push(keep); out.lm3.push(d2); out.lmKeep.push(keep2);
      out.wteN.push(a.wteN[i] + loc.f * (b.wteN[i] - a.wteN[i]));
    }
    return out;
  }
  // the drift (norm before the retraction, minus 1) of star i at the current time: lerped, 0 where none (step 0)
  function driftNow(r, loc, i, out) {
    const at = (k) => { const d = r.drift[k * 2 * r.V + (out ? r.V : 0) + i]; return Number.isFinite(d) ? d : 0; };
    return at(loc.k) + loc.f * (at(loc.k2) - at(loc.k));
  }
  function driftMax(r, k) {  // the largest offset |d - 1| at snapshot k; NaN at step 0 (no Adam step yet)
    let mx = NaN;
    for (let i = 0; i < 2 * r.V; i++) {
      const d = r.drift[k * 2 * r.V + i];
      if (Number.isFinite(d)) mx = Math.max(Number.isNaN(mx) ? 0 : mx, Math.abs(d));
    }
    return mx;
  }
  // one exaggeration for the whole replay: the largest offset of any snapshot becomes a quarter of the radius
  // (rounded down to 1, 2 or 5 times a power of ten), so the offsets' shrinking as the learning rate decays shows
  for (const r of runs) {
    r.gain = 1;
    if (!r.drift) continue;
    let mx = 0;
    for (let k = 0; k < r.K; k++) { const d = driftMax(r, k); if (d > mx) mx = d; }
    if (mx > 0) {
      const x = 0.25 / mx, e = Math.pow(10, Math.floor(Math.log10(x))), m = x / e;
      r.gain = Math.max(1, (m >= 5 ? 5 : m >= 2 ? 2 : 1) * e);
    }
  }
  for (const r of runs) {  // RMSNorm: a star's size is its norm relative to the median norm of the final stars
    const ns = starsAt(r, r.K - 1).wteN.slice().sort((a, b) => a - b);
    r.normMedian = ns[ns.length >> 1] || 1;
  }
  // the share of snapshot k's embedding variance (rows of wte, centered) that the map's 3 directions keep: each
  // snapshot's own, not the last one's (the directions are the last snapshot's principal ones)
  function varianceShare(r, k) {
    const p = M.snapshot(r, k), V = r.V, C = r.C, b = r.data.basis, mean = new Float64Array(C);
    for (let i = 0; i < V; i++) for (let j = 0; j < C; j++) mean[j] += p.wte[i * C + j] / V;
    let all = 0, kept = 0;
    for (let i = 0; i < V; i++) {
      for (let j = 0; j < C; j++) all += (p.wte[i * C + j] - mean[j]) ** 2;
      for (let a = 0; a < 3; a++) {
        let s = 0;
        for (let j = 0; j < C; j++) s += b[a][j] * (p.wte[i * C + j] - mean[j]);
        kept += s * s;
      }
    }
    return all > 0 ? kept / all : 0;
  }
  for (const r of runs) r.shares = Array.from({ length: r.K }, (_, k) => varianceShare(r, k));
  // how far apart the same character sits in two skies (the first and each other, last snapshots): the median angle
  // on the map, in degrees (the tour prints it rather than claiming they coincide)
  const sameCharAngle = (() => {
    const angles = [], r0 = runs[0], s0 = starsAt(r0, r0.K - 1);
    for (const r of runs.slice(1)) {
      const s = starsAt(r, r.K - 1);
      r.data.labels.forEach((l, i) => {
        const j = r0.data.labels.indexOf(l);
        if (j < 0) return;
        const c = s.wte3[i][0] * s0.wte3[j][0] + s.wte3[i][1] * s0.wte3[j][1] + s.wte3[i][2] * s0.wte3[j][2];
        angles.push((Math.acos(Math.max(-1, Math.min(1, c))) * 180) / Math.PI);
      });
    }
    angles.sort((a, b) => a - b);
    return angles.length ? angles[angles.length >> 1] : null;
  })();

  // ------------------------------------------------------------------------------------------ the replay's clock
  // The replay spends its time where the sky moves: between two snapshots, in proportion to how far the stars move
  // (the mean angle of input and output stars in C dimensions, summed over the runs), with 15% of the time in
  // proportion to training steps so that no stretch is skipped. clock.u[j] is the replay position (0..1) of step
  // clock.s[j]; in between, steps and positions are linear.
  const STEP_SHARE = 0.15;
  const clock = (() => {
    const s = allSteps.slice();
    if (s[s.length - 1] < planned) s.push(planned);
    const move = new Float64Array(s.length - 1);
    for (const r of runs) {
      const st = r.data.steps;
      for (let k = 0; k + 1 < r.K; k++) {
        const a = starsAt(r, k), b = starsAt(r, k + 1);
        let m = 0;
        for (let i = 0; i < r.V; i++) {
          m += Math.acos(Math.max(-1, Math.min(1, M.dot(a.wte[i], b.wte[i], 0, 0, r.C))));
          m += Math.acos(Math.max(-1, Math.min(1, M.dot(a.lm[i], b.lm[i], 0, 0, r.C))));
        }
        m /= 2 * r.V;
        for (let j = 0; j + 1 < s.length; j++) {  // its share of each interval of the common grid it covers
          const lo = Math.max(s[j], st[k]), hi = Math.min(s[j + 1], st[k + 1]);
          if (hi > lo) move[j] += (m * (hi - lo)) / (st[k + 1] - st[k]);
        }
      }
    }
    const total = move.reduce((a, b) => a + b, 0), span = Math.max(1, s[s.length - 1] - s[0]), u = [0];
    for (let j = 0; j + 1 < s.length; j++) {
      const m = 1 - STEP_SHARE, by = (s[j + 1] - s[j]) / span;
      const w = (total > 0 ? (m * move[j]) / total : m * by) + STEP_SHARE * by;
      u.push(u[j] + w);
    }
    return { s, u: u.map((x) => x / u[u.length - 1]) };
  })();
  function interp(xs, ys, x) {  // piecewise linear, xs increasing
    if (x <= xs[0]) return ys[0];
    for (let j = 0; j + 1 < xs.length; j++) {
      if (x <= xs[j + 1]) return xs[j + 1] > xs[j] ? ys[j] + ((ys[j + 1] - ys[j]) * (x - xs[j])) / (xs[j + 1] - xs[j]) : ys[j + 1];
    }
    return ys[ys.length - 1];
  }
  const stepAtPosition = (u) => interp(clock.u, clock.s, u);
  const positionAtStep = (step) => interp(clock.s, clock.u, step);

  // ------------------------------------------------------------------------------------------ the prefix
  // the typed prefix as run r's tokens, as training reads a name: BOS, then the characters (upper case folded to
  // the vocabulary's case when only that one is in it), cropped to block_size positions; an unknown character ends
  // the path there
  function tokensFor(r) {
    const vocab = r.data.vocab, bos = r.V - 1, ids = [bos], out = { ids, folded: false, unknown: null, cropped: false };
    for (const ch of Array.from(state.prefix)) {
      let i = vocab.indexOf(ch);
      if (i < 0) {
        const alt = [ch.toLowerCase(), ch.toUpperCase()].filter((c) => c !== ch && vocab.indexOf(c) >= 0);
        if (alt.length === 1) { i = vocab.indexOf(alt[0]); out.folded = true; }
      }
      if (i < 0 || i === bos) { out.unknown = ch; break; }
      if (ids.length >= r.T) { out.cropped = true; break; }
      ids.push(i);
    }
    return out;
  }

  // ------------------------------------------------------------------------------------------ the numbers
  function forwardAt(r, k, ids) {
    r.fwdCache = r.fwdCache || new Map();
    const key = k + "|" + ids.join(",");
    if (!r.fwdCache.has(key)) {
      if (r.fwdCache.size > 200) r.fwdCache.clear();
      r.fwdCache.set(key, M.forward(r, k, ids));
    }
    return r.fwdCache.get(key);
  }
  // the forward pass at the current snapshot, and what the page reads of it
  function compute(r) {
    const loc = locate(r, state.time), tok = tokensFor(r), n = tok.ids.length;
    const res = forwardAt(r, loc.k, tok.ids), probs = M.softmax(res.logits[n - 1], state.T);
    const order = probs.map((p, i) => [p, i]).sort((a, b) => b[0] - a[0]).map(([, i]) => i);
    r.view = { loc, tok, res, probs, order, top: order.slice(0, TOP),
               kappa: r.sphere ? Array.from(M.snapshot(r, loc.k).sz, (s) => s / state.T) : null };
    r.view.shown = shownStars(r, loc.k, res.hidden[res.hidden.length - 1][n - 1], order, tok.ids);
    r.geomKey = null;
  }
  // A large vocabulary: the stars a sky draws, at most DATA.starLimit of each kind (computed here, once per snapshot,
  // prefix and T, not in the animation frame): half the likeliest characters, the rest those whose output star is
  // nearest h, and the prefix's own characters. null: every star.
  function shownStars(r, k, h, order, ids) {
    const most = DATA.starLimit || Infinity;
    if (r.V <= most) return null;
    const A = starsAt(r, k), hu = unitC(h), shown = new Uint8Array(r.V);
    const near = Array.from({ length: r.V }, (_, i) => [M.dot(A.lm[i], hu, 0, 0, r.C), i]).sort((a, b) => b[0] - a[0]);
    for (const i of order.slice(0, most >> 1)) shown[i] = 1;
    for (const i of ids) shown[i] = 1;
    let count = shown.reduce((a, b) => a + b, 0);
    for (let j = 0; count < most && j < r.V; j++) if (!shown[near[j][1]]) { shown[near[j][1]] = 1; count++; }
    return shown;
  }
  const isShown = (r, i) => !r.view.shown || r.view.shown[i] === 1;
  // what the sky draws of the name's path at the current time: each position's chain of hidden states, the links
  // from one position to the next and (sphere) the pulls toward Norm(f(h)); interpolated between snapshots
  function pathGeometry(r) {
    const v = r.view, loc = v.loc, key = `${loc.k}|${loc.f}|${v.tok.ids.join(",")}`;
    if (r.geomKey === key) return r.geom;
    const a = v.res, b = loc.f > 0 ? forwardAt(r, loc.k2, v.tok.ids) : null, n = v.tok.ids.length;
    const at = (stage, pos) => {
      const u = unitC(a.hidden[stage][pos]);
      return b ? M.slerp(u, unitC(b.hidden[stage][pos]), loc.f) : u;
    };
    const S = a.hidden.length, g = { chains: [], links: [], pulls: [], h: null };
    for (let p = 0; p < n; p++) {
      const pts = [];
      for (let s = 0; s < S; s++) pts.push(at(s, p));
      g.chains.push({ segs: pts.slice(1).map((q, s) => arc(r, pts[s], q, 10)), points: pts.map((q) => project(r, q)),
                      keeps: pts.map((q) => projectKeep(r, q)[1]) });
      if (p + 1 < n) g.links.push(arc(r, pts[S - 1], at(0, p + 1), 16));
    }
    if (r.sphere) {
      for (let s = 0; s < a.proposals.length; s++) {
        let q = a.proposals[s][n - 1];
        if (b) q = M.slerp(q, b.proposals[s][n - 1], loc.f);
        g.pulls.push(arc(r, at(s, n - 1), q, 14));
      }
    }
    g.hC = at(S - 1, n - 1);
    g.h = project(r, g.hC);
    // the output stars at their true angle from h: each moved along the map's great circle through h to the angle
    // arccos(w . h) of C dimensions, so that the map's nearness to h is the real one (and h lies in a star's cap on
    // the map exactly when it does in C dimensions); the map's directions around h are kept
    const A = starsAt(r, loc.k), B2 = loc.f > 0 ? starsAt(r, loc.k2) : null, lm3 = starsNow(r, loc).lm3;
    g.lmTrue = lm3.map((p3, i) => {
      const w = B2 ? M.slerp(A.lm[i], B2.lm[i], loc.f) : A.lm[i];
      const c = Math.max(-1, Math.min(1, M.dot(w, g.hC, 0, 0, r.C))), h3 = g.h;
      const along = p3[0] * h3[0] + p3[1] * h3[1] + p3[2] * h3[2];
      const d = [p3[0] - along * h3[0], p3[1] - along * h3[1], p3[2] - along * h3[2]], dn = Math.hypot(...d);
      if (dn < 1e-9) return c >= 0 ? h3 : h3.map((x) => -x);
      const sn = Math.sqrt(1 - c * c);
      return [0, 1, 2].map((j) => c * h3[j] + (sn * d[j]) / dn);
    });
    r.geomKey = key;
    r.geom = g;
    return g;
  }
  function computeAll() { for (const r of runs) compute(r); }

  // ------------------------------------------------------------------------------------------ the page's frame
  document.title = t("docTitle");
  const skiesBox = document.getElementById("skies");
  skiesBox.className = runs.length === 1 ? "one" : "many";
  runs.forEach((r, ri) => {
    const div = document.createElement("div");
    div.className = "sky";
    div.innerHTML = '<div class="skyHead"><h3 class="skyTitle"></h3><button type="button" class="faceH"></button></div>' +
      '<p class="legend"></p><div class="dome"><canvas tabindex="0" role="img"></canvas></div>' +
      '<div class="readout"></div><div class="skyInfo"></div>';
    skiesBox.appendChild(div);
    r.title = div.querySelector(".skyTitle");
    r.canvas = div.querySelector("canvas");
    r.readoutEl = div.querySelector(".readout");
    r.legend = div.querySelector(".legend");
    r.info = div.querySelector(".skyInfo");
    r.faceButton = div.querySelector(".faceH");
    r.faceButton.addEventListener("click", () => faceH(ri));
    r.box = div.querySelector(".dome");
  });
  const lossCanvas = document.getElementById("loss");

  // canvases follow their boxes' CSS size and the device pixel ratio (resize, zoom, a move to another screen)
  function fitCanvas(c, w, h) {
    const dpr = window.devicePixelRatio || 1;
    w = Math.max(1, Math.round(w));
    h = Math.max(1, Math.round(h));
    if (c.cssW === w && c.cssH === h && c.dpr === dpr) return false;
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    c.cssW = w; c.cssH = h; c.dpr = dpr;
    c.ctx = c.getContext("2d");
    c.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return true;
  }
  function fitAll() {
    let changed = false;
    for (const r of runs) { const b = r.box.getBoundingClientRect(); changed = fitCanvas(r.canvas, b.width, b.width) || changed; }
    changed = fitCanvas(lossCanvas, lossCanvas.getBoundingClientRect().width, 150) || changed;
    return changed;
  }
  let ratioQuery = null;  // (kept: a media query nobody holds may be collected, and its listener with it)
  function watchPixelRatio() {
    ratioQuery = window.matchMedia(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
    ratioQuery.addEventListener("change", () => { fitAll(); drawFrame(); watchPixelRatio(); }, { once: true });
  }
  watchPixelRatio();
  if (window.ResizeObserver) {
    const ro = new ResizeObserver(() => { if (fitAll()) redraw(); });
    for (const r of runs) ro.observe(r.box);
    ro.observe(lossCanvas);
  }
  window.addEventListener("resize", () => { if (fitAll()) redraw(); });

  // ------------------------------------------------------------------------------------------ drawing a sky
  const GRID = [];  // meridians and parallels of the dome as 3-D polylines, rotated each frame
  for (let m = 0; m < 6; m++) {
    const a = (m * Math.PI) / 6, pts = [];
    for (let i = 0; i <= 48; i++) {
      const b = (i * 2 * Math.PI) / 48;
      pts.push([Math.cos(a) * Math.sin(b), Math.cos(b), Math.sin(a) * Math.sin(b)]);
    }
    GRID.push(pts);
  }
  for (const lat of [-60, -30, 0, 30, 60]) {
    const y = Math.sin((lat * Math.PI) / 180), c = Math.cos((lat * Math.PI) / 180), pts = [];
    for (let i = 0; i <= 48; i++) { const b = (i * 2 * Math.PI) / 48; pts.push([c * Math.cos(b), y, c * Math.sin(b)]); }
    GRID.push(pts);
  }
  function skyFrame(r) {  // the sky's canvas size, the dome's center and radius (CSS pixels)
    const S = r.canvas.cssW || 300;
    return { S, cx: S / 2, cy: S / 2, rho: S * 0.43 };
  }
  // a point of the map (3-D) -> [x, y, depth] on a sky's canvas: the camera's rotation, then orthographic
  function screenOf(fr) {
    const R = state.R;
    return (p) => [fr.cx + fr.rho * (R[0][0] * p[0] + R[0][1] * p[1] + R[0][2] * p[2]),
                   fr.cy - fr.rho * (R[1][0] * p[0] + R[1][1] * p[1] + R[1][2] * p[2]),
                   R[2][0] * p[0] + R[2][1] * p[1] + R[2][2] * p[2]];
  }
  // the points of a cap's rim: the circle at angle th around direction c (3-D)
  function circle(c, th, n) {
    const e1 = unit3(Math.abs(c[0]) < 0.9 ? [0, -c[2], c[1]] : [-c[2], 0, c[0]]), e2 = cross(c, e1);
    const ct = Math.cos(th), sn = Math.sin(th), pts = [];
    for (let j = 0; j <= n; j++) {
      const f = (j * 2 * Math.PI) / n, a = Math.cos(f) * sn, b = Math.sin(f) * sn;
      pts.push([ct * c[0] + a * e1[0] + b * e2[0], ct * c[1] + a * e1[1] + b * e2[1], ct * c[2] + a * e1[2] + b * e2[2]]);
    }
    return pts;
  }
  // the cap of output star i: its center (the star, or the opposite point when kappa < 0) and angle, or whole
  function capOf(r, i, lm3) {
    const kappa = r.view.kappa[i], c = kappa < 0 ? lm3[i].map((x) => -x) : lm3[i];
    if (Math.abs(kappa) <= 0.5) return { c, whole: true, kappa, anti: kappa < 0 };
    return { c, th: Math.acos(1 - 1 / Math.abs(kappa)), kappa, anti: kappa < 0, whole: false };
  }

  // everything a sky draws, in map or screen coordinates: drawSky draws it, the tests read where it is
  // the map points of each input star's trail up to snapshot k: the snapshots, and the midpoint of the great circle
  // between each two (cached per k: the camera does not change them)
  function trails(r, k) {
    r.trailCache = r.trailCache || new Map();
    if (r.trailCache.has(k)) return r.trailCache.get(k);
    const way = [];
    for (let i = 0; i < r.V; i++) {
      const pts = [];
      for (let j = 0; j <= k; j++) {
        const cur = starsAt(r, j).wte3[i];
        if (j > 0) {
          const prev = starsAt(r, j - 1).wte3[i];
          pts.push(slerp3(prev, cur, 0.5));
        }
        pts.push(cur);
      }
      way.push(pts);
    }
    if (r.trailCache.size > 8) r.trailCache.clear();
    r.trailCache.set(k, way);
    return way;
  }
  function skyItems(r, withTrails) {
    const fr = skyFrame(r), scr = screenOf(fr), v = r.view, loc = v.loc, st = starsNow(r, loc);
    const items = { fr, scr, st, stars: [], out: [], caps: [], path: [], drift: [], trail: [] };
    for (let i = 0; i < r.V; i++) items.stars.push(scr(st.wte3[i]));
    const lm3 = state.show.trueH ? pathGeometry(r).lmTrue : st.lm3;
    items.lm3 = lm3;
    for (let i = 0; i < r.V; i++) items.out.push(scr(lm3[i]));
    if (r.sphere) {
      for (const i of state.show.allCaps ? v.top : v.top.slice(0, 1)) {
        const cap = capOf(r, i, lm3);
        cap.i = i;
        cap.rim = cap.whole ? null : circle(cap.c, cap.th, 48).map(scr);
        items.caps.push(cap);
      }
    }
    if (r.drift) {
      for (let i = 0; i < r.V; i++) {
        const d = driftNow(r, loc, i, false), f = 1 + d * r.gain, p = st.wte3[i];
        items.drift.push({ i, d, from: items.stars[i], to: scr([p[0] * f, p[1] * f, p[2] * f]) });
      }
    }
    if (withTrails && (loc.k > 0 || loc.f > 0)) {  // each input star's way from step 0 to now (map points cached)
      const way = trails(r, loc.k);
      for (let i = 0; i < r.V; i++) items.trail.push(way[i].map(scr).concat([items.stars[i]]));
    }
    return items;
  }

  // a star's (or a hidden state's) opacity: the share of its length the map's 3 directions keep, from 0.3 (none)
  const fadeOf = (keep) => 0.3 + 0.7 * keep;

  function drawSky(r, ri) {
    const ctx = r.canvas.ctx;
    if (!ctx) return;
    const it = skyItems(r, state.show.trail && state.show.stars), { fr, scr, st } = it, { cx, cy, rho, S } = fr, v = r.view, labels = r.data.labels;
    const bos = r.V - 1, show = state.show;
    ctx.clearRect(0, 0, S, S);
    const g = ctx.createRadialGradient(cx - rho * 0.3, cy - rho * 0.35, rho * 0.1, cx, cy, rho);
    g.addColorStop(0, "#1a2c52");
    g.addColorStop(1, "#0a1226");
    ctx.fillStyle = g;
    ctx.beginPath();
    ctx.arc(cx, cy, rho, 0, 2 * Math.PI);
    ctx.fill();
    ctx.strokeStyle = "#3a4d78";
    ctx.lineWidth = 1;
    ctx.stroke();
    for (const front of [false, true]) {  // the grid: the far half faint, the near half brighter
      ctx.beginPath();
      for (const pts of GRID) {
        let prev = scr(pts[0]);
        for (let i = 1; i < pts.length; i++) {
          const cur = scr(pts[i]);
          if ((prev[2] + cur[2] > 0) === front) { ctx.moveTo(prev[0], prev[1]); ctx.lineTo(cur[0], cur[1]); }
          prev = cur;
        }
      }
      ctx.strokeStyle = front ? "rgba(140,170,230,0.2)" : "rgba(140,170,230,0.06)";
      ctx.stroke();
    }
    // a polyline of screen points: near-side pieces at alpha 1, far-side ones at alphaBack
    const polyline = (s, color, width, dash, alphaBack, fade) => {
      fade = fade === undefined ? 1 : fade;
      ctx.setLineDash(dash || []);
      ctx.lineWidth = width;
      ctx.strokeStyle = color;
      let i = 1;
      while (i < s.length) {
        const front = s[i - 1][2] + s[i][2] > 0;
        ctx.globalAlpha = (front ? 1 : alphaBack) * fade;
        ctx.beginPath();
        ctx.moveTo(s[i - 1][0], s[i - 1][1]);
        while (i < s.length && (s[i - 1][2] + s[i][2] > 0) === front) { ctx.lineTo(s[i][0], s[i][1]); i++; }
        ctx.stroke();
      }
      ctx.globalAlpha = 1;
      ctx.setLineDash([]);
    };
    // star trails: older parts fainter (segments batched by age and side: a few strokes per sky)
    if (show.trail && show.stars) {
      const buckets = [0, 1, 2, 3].map(() => [new Path2D(), new Path2D()]);
      for (const [i, pts] of it.trail.entries()) {
        if (!isShown(r, i)) continue;
        let path = null;
        for (let j = 1; j < pts.length; j++) {
          const next = buckets[Math.min(3, Math.floor((4 * j) / pts.length))][pts[j - 1][2] + pts[j][2] > 0 ? 1 : 0];
          if (next !== path) { path = next; path.moveTo(pts[j - 1][0], pts[j - 1][1]); }
          path.lineTo(pts[j][0], pts[j][1]);
        }
      }
      ctx.strokeStyle = "#c9d2e8";
      ctx.lineWidth = 1.3;
      buckets.forEach(([far, near], age) => {
        ctx.globalAlpha = 0.08; ctx.stroke(far);
        ctx.globalAlpha = 0.15 + 0.18 * age; ctx.stroke(near);
      });
      ctx.globalAlpha = 1;
    }
    // vMF caps of the top characters (sphere mode only: in RMSNorm the softmax is no vMF posterior)
    if (show.out && r.sphere) {
      for (const cap of it.caps) {
        const hot = state.hover && state.hover.ri === ri && state.hover.i === cap.i;
        if (cap.whole) {
          ctx.setLineDash([6, 5]);
          ctx.strokeStyle = "rgba(255,154,118,0.8)";
          ctx.lineWidth = 2;
          ctx.beginPath(); ctx.arc(cx, cy, rho - 3, 0, 2 * Math.PI); ctx.stroke();
          ctx.setLineDash([]);
          continue;
        }
        const rim = cap.rim, front = scr(cap.c)[2] > 0;
        ctx.beginPath();
        rim.forEach((s, j) => (j ? ctx.lineTo(s[0], s[1]) : ctx.moveTo(s[0], s[1])));
        if (front && cap.th < 1.2) { ctx.fillStyle = "rgba(255,154,118,0.08)"; ctx.fill(); }
        ctx.setLineDash(cap.anti ? [5, 4] : []);
        ctx.strokeStyle = hot ? "#ffe0d4" : "rgba(255,154,118,0.85)";
        ctx.lineWidth = hot ? 2.6 : 1.8;
        ctx.globalAlpha = front ? 1 : 0.55;
        ctx.stroke();
        ctx.globalAlpha = 1;
        ctx.setLineDash([]);
      }
    }
    // the stars, far to near
    const order = [];
    if (show.stars) for (let i = 0; i < r.V; i++) if (isShown(r, i)) order.push([it.stars[i][2], 0, i]);
    if (show.out) for (let i = 0; i < r.V; i++) if (isShown(r, i)) order.push([it.out[i][2], 1, i]);
    order.sort((a, b) => a[0] - b[0]);
    for (const [z, kind, i] of order) {
      const near = z > 0;
      if (kind === 0) {
        const [x, y] = it.stars[i];
        if (show.drift && r.drift) {
          // the star before the retraction, (1 + d) times its unit vector: out along its radius (pink) or in (blue),
          // magnified by the replay's one factor; head-on a radius has no length, so a ring of the same size too
          const dr = it.drift[i];
          if (dr.d !== 0) {
            ctx.globalAlpha = near ? 1 : 0.35;
            ctx.strokeStyle = dr.d > 0 ? "#ff5d9e" : "#5cc8ff";
            ctx.lineWidth = 1.6;
            ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(dr.to[0], dr.to[1]); ctx.stroke();
            ctx.beginPath(); ctx.arc(dr.to[0], dr.to[1], 2.5, 0, 2 * Math.PI); ctx.stroke();
            const ring = rho * Math.abs(dr.d) * r.gain;
            if (ring > 1.5) { ctx.lineWidth = 1; ctx.beginPath(); ctx.arc(x, y, 4 + ring, 0, 2 * Math.PI); ctx.stroke(); }
          }
        }
        // faded by how much of its length the projection keeps (a star mostly outside the 3 directions is faint)
        ctx.globalAlpha = (near ? 1 : 0.35) * fadeOf(st.keep[i]);
        let rad = r.sphere ? 4 : Math.max(1.5, Math.min(11, (4 * st.wteN[i]) / r.normMedian));
        if (!near) rad *= 0.75;
        ctx.fillStyle = i === bos ? "#ffd166" : "#f4f7ff";
        ctx.beginPath(); ctx.arc(x, y, rad, 0, 2 * Math.PI); ctx.fill();
        if (state.selected.includes(labels[i])) {
          ctx.globalAlpha = 1;
          ctx.strokeStyle = "#ffd166"; ctx.lineWidth = 2;
          ctx.beginPath(); ctx.arc(x, y, rad + 4, 0, 2 * Math.PI); ctx.stroke();
        }
      } else {
        const [x, y] = it.out[i], p = v.probs[i], h = (near ? 4 : 3) + 8 * Math.sqrt(p);
        ctx.globalAlpha = (near ? 1 : 0.4) * fadeOf(st.lmKeep[i]);
        ctx.fillStyle = "#ff9a76";
        ctx.beginPath();
        ctx.moveTo(x, y - h); ctx.lineTo(x + h, y); ctx.lineTo(x, y + h); ctx.lineTo(x - h, y); ctx.closePath();
        ctx.fill();
        if (state.hover && state.hover.ri === ri && state.hover.i === i) {
          ctx.globalAlpha = 1;
          ctx.strokeStyle = "#ffffff"; ctx.lineWidth = 2;
          ctx.beginPath(); ctx.arc(x, y, h + 5, 0, 2 * Math.PI); ctx.stroke();
        }
      }
    }
    ctx.globalAlpha = 1;
    // the name's path
    const geo = show.path ? pathGeometry(r) : null;
    if (geo) {
      for (const l of geo.links) polyline(l.map(scr), "#67e3c0", 1.2, [5, 4], 0.3);
      for (const pull of geo.pulls) polyline(pull.map(scr), "#67e3c0", 1, [1.5, 3], 0.3);
      // faded, like the stars, by how much of the hidden state's length the map keeps
      geo.chains.forEach((chain) => {
        chain.segs.forEach((seg, s) => polyline(seg.map(scr), "#67e3c0", 2.2, null, 0.35,
          fadeOf((chain.keeps[s] + chain.keeps[s + 1]) / 2)));
      });
      geo.chains.forEach((chain, p) => {
        chain.points.forEach((pt, s) => {
          const [x, y, z] = scr(pt), last = s === chain.points.length - 1;
          ctx.globalAlpha = (z > 0 ? 1 : 0.45) * fadeOf(chain.keeps[s]);
          ctx.fillStyle = last ? "#67e3c0" : "#0a1226";
          ctx.strokeStyle = "#67e3c0";
          ctx.lineWidth = 1.5;
          ctx.beginPath(); ctx.arc(x, y, last ? 4.5 : 2.5, 0, 2 * Math.PI); ctx.fill(); ctx.stroke();
          if (last && p === geo.chains.length - 1) { ctx.beginPath(); ctx.arc(x, y, 8, 0, 2 * Math.PI); ctx.stroke(); }
        });
      });
      ctx.globalAlpha = 1;
    }
    drawLabels(r, ri, it, geo);
  }

  // labels, placed most important first where they do not cover one already placed: the top characters (at the
  // rim, with a marker, when they are on the far side), picked and hovered stars, the path's positions, then the
  // near-side stars
  function drawLabels(r, ri, it, geo) {
    const ctx = r.canvas.ctx, { fr, scr } = it, v = r.view, labels = r.data.labels, bos = r.V - 1, cands = [];
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    if (state.show.out) {
      v.top.forEach((i, rank) => {
        const [x, y, z] = it.out[i], text = `${labelOf(r, i)} ${pct(v.probs[i])}`;
        if (z > 0) {
          cands.push({ text, x, y, pad: 9, pri: 0, font: "600 13px", color: "#ffc2ab" });
        } else {  // far side: a marker on the rim, in the star's direction as seen from the front
          let dx = x - fr.cx, dy = y - fr.cy;
          const d = Math.hypot(dx, dy) || 1;
          dx /= d; dy /= d;
          const mx = fr.cx + dx * (fr.rho + 6), my = fr.cy + dy * (fr.rho + 6);
          ctx.fillStyle = "#ff9a76";
          ctx.beginPath();
          ctx.moveTo(mx + dx * 7, my + dy * 7); ctx.lineTo(mx - dy * 5, my + dx * 5); ctx.lineTo(mx + dy * 5, my - dx * 5);
          ctx.closePath(); ctx.fill();
          cands.push({ text: text + t("farSide"), x: mx, y: my, pad: 8, pri: 0.5 + rank * 0.01, font: "600 12px",
                       color: "#ffc2ab", rim: [dx, dy] });
        }
      });
      if (r.sphere) {
        for (const cap of it.caps) {
          if (cap.whole) cands.push({ text: t("capWhole", { c: labels[cap.i], k: cap.kappa.toFixed(2) }), x: fr.cx - fr.rho * 0.9,
                                      y: fr.cy + fr.rho + 2, pad: 0, pri: 1, font: "11px", color: "#ffc2ab" });
          else if (cap.anti) {
            const [x, y, z] = scr(cap.c);
            if (z > 0) cands.push({ text: `−${labels[cap.i]}${t("capAnti")}`, x, y, pad: 5, pri: 1.5, font: "11px", color: "#ffc2ab" });
          }
          if (!cap.whole) {  // its κ beside its rim, at the rim's highest near-side point
            const top = cap.rim.filter((p) => p[2] > 0).sort((a, b) => a[1] - b[1])[0];
            if (top) cands.push({ text: t("capKappa", { k: cap.kappa.toFixed(1) }), x: top[0], y: top[1], pad: 3, pri: 1.4,
                                  font: "11px", color: "#ffc2ab", kappa: cap.i });
          }
        }
      }
    }
    if (state.show.stars) {
      for (let i = 0; i < r.V; i++) {
        const [x, y, z] = it.stars[i], sel = state.selected.includes(labels[i]);
        const hot = state.hover && state.hover.ri === ri && state.hover.i === i;
        if ((z <= 0 && !sel && !hot) || !isShown(r, i)) continue;
        cands.push({ text: labels[i], x, y, pad: 6, pri: sel || hot ? 1 : 3 + (1 - z), font: z > 0 ? "600 13px" : "11px",
                     color: i === bos ? "#ffd166" : z > 0 ? "#e8eeff" : "#8e9bb8" });
      }
    }
    if (geo) {
      const ids = v.tok.ids, n = ids.length;
      geo.chains.forEach((chain, p) => {
        const [x, y, z] = scr(chain.points[chain.points.length - 1]);
        cands.push({ text: `${p === n - 1 ? "◎" : ""}${p}:${ids[p] === bos ? "BOS" : labels[ids[p]]}`, x, y, pad: 10,
                     pri: p === n - 1 ? 1.2 : 2 + (z > 0 ? 0 : 2), font: "600 12px", color: "#aef5df" });
      });
    }
    cands.sort((a, b) => a.pri - b.pri);
    // the near-side dots are obstacles too: a label goes where it covers none (the top characters' labels are drawn
    // at their first place if none is free; the others are left out)
    const dot = ([x, y, z]) => [x - 4, y - 4, x + 4, y + 4, z];
    const drawn = (pts) => pts.filter((_, i) => isShown(r, i));
    const obstacles = drawn(state.show.stars ? it.stars : []).concat(drawn(state.show.out ? it.out : [])).map(dot)
      .concat(geo ? geo.chains.flatMap((ch) => ch.points.map((p) => dot(scr(p)))) : []).filter((b) => b[4] > 0);
    const placed = [];
    for (const c of cands) {
      ctx.font = `${c.font} ${FONT}`;
      const w = ctx.measureText(c.text).width, h = 14;
      const tries = c.rim ? [[c.rim[0] >= 0 ? 4 : -w - 4, c.rim[1] >= 0 ? 8 : -8]]
        : [[c.pad, -2], [-w - c.pad, -2], [-w / 2, -c.pad - 6], [-w / 2, c.pad + 6], [c.pad, 10], [c.pad, -14]];
      const hits = (box, boxes) => boxes.some((b) => b[0] < box[2] && box[0] < b[2] && b[1] < box[3] && box[1] < b[3]);
      const boxes = tries.map(([ox, oy]) => {
        const x0 = Math.max(1, Math.min(fr.S - w - 1, c.x + ox)), y0 = Math.max(1, Math.min(fr.S - h - 1, c.y + oy - h / 2));
        return [x0, y0, x0 + w, y0 + h];
      });
      // a place that covers no label and no dot; else (the important ones) one that covers no label; else (the top
      // characters) the first place
      // the top characters may not cover each other: further places up and down before the first one
      const further = c.pri < 1 ? [1, -1, 2, -2, 3, -3, 4, -4].map((m) => {
        const y0 = Math.max(1, Math.min(fr.S - h - 1, boxes[0][1] + 15 * m));
        return [boxes[0][0], y0, boxes[0][2], y0 + h];
      }) : [];
      const box = boxes.find((b) => !hits(b, placed) && !hits(b, obstacles)) ||
        (c.pri < 2 ? boxes.concat(further).find((b) => !hits(b, placed)) : null) || (c.pri < 1 ? boxes[0] : null);
      if (box && further.includes(box)) {  // moved off its star's line: a thin leader to it
        ctx.strokeStyle = "rgba(255,194,171,0.5)"; ctx.lineWidth = 1;
        ctx.beginPath(); ctx.moveTo(c.x, c.y); ctx.lineTo(box[0], (box[1] + box[3]) / 2); ctx.stroke();
      }
      if (box) {
        placed.push(box);
        ctx.fillStyle = "rgba(7,12,24,0.55)";
        ctx.fillRect(box[0] - 1, box[1], w + 2, h);
        ctx.fillStyle = c.color;
        ctx.fillText(c.text, box[0], box[1] + h / 2);
      }
    }
  }

  // ------------------------------------------------------------------------------------------ the loss plot
  let lossFrame = null;  // where the last drawing put the plot's box (for the tests)
  function drawLoss() {
    const ctx = lossCanvas.ctx;
    if (!ctx) return;
    const W = lossCanvas.cssW, H = lossCanvas.cssH, L = 50, B = 30, Tp = 18, Rp = 12;
    ctx.clearRect(0, 0, W, H);
    let lo = Infinity, hi = -Infinity;
    for (const r of runs) for (const [, v] of r.data.train.concat(r.data.val)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
    if (hi - lo < 1e-6) { hi += 0.5; lo -= 0.5; }
    const X = (s) => L + ((W - L - Rp) * s) / Math.max(1, planned), Y = (v) => Tp + ((H - Tp - B) * (hi - v)) / (hi - lo);
    lossFrame = { left: L, top: Tp, width: W - L - Rp, height: H - Tp - B, lo, hi, planned };
    ctx.strokeStyle = "#24314f";
    ctx.lineWidth = 1;
    ctx.strokeRect(L, Tp, W - L - Rp, H - Tp - B);
    ctx.fillStyle = "#98a5c2";
    ctx.font = `10px ${FONT}`;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const v of [lo, (lo + hi) / 2, hi]) ctx.fillText(v.toFixed(2), L - 4, Y(v));
    ctx.textBaseline = "top";
    [0, Math.round(planned / 2), planned].forEach((s, j) => {
      ctx.textAlign = ["left", "center", "right"][j];
      ctx.fillText(String(s), X(s), H - B + 3);
    });
    ctx.textAlign = "center";
    ctx.fillText(t("lossX"), L + (W - L - Rp) / 2, H - 13);
    ctx.save();
    ctx.translate(8, Tp + (H - Tp - B) / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = "middle";
    ctx.fillText(t("lossY"), 0, 0);
    ctx.restore();
    // legend: the line style of train and val, the colour of each run
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    let lx = L;
    const legend = (draw, text) => { draw(lx, 8); ctx.fillStyle = "#98a5c2"; ctx.fillText(text, lx + 16, 8); lx += 22 + ctx.measureText(text).width; };
    legend((x, y) => { ctx.strokeStyle = "#98a5c2"; ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(x + 12, y); ctx.stroke(); }, t("lossTrain"));
    legend((x, y) => { ctx.fillStyle = "#98a5c2"; ctx.beginPath(); ctx.arc(x + 6, y, 2.5, 0, 2 * Math.PI); ctx.fill(); }, t("lossVal"));
    runs.forEach((r, ri) => {
      const col = RUN_COLORS[ri % RUN_COLORS.length];
      ctx.strokeStyle = col;
      ctx.globalAlpha = 0.55;
      ctx.beginPath();
      r.data.train.forEach(([s, v], j) => (j ? ctx.lineTo(X(s), Y(v)) : ctx.moveTo(X(s), Y(v))));
      ctx.stroke();
      ctx.globalAlpha = 1;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      r.data.val.forEach(([s, v], j) => (j ? ctx.lineTo(X(s), Y(v)) : ctx.moveTo(X(s), Y(v))));
      ctx.stroke();
      ctx.fillStyle = col;
      for (const [s, v] of r.data.val) { ctx.beginPath(); ctx.arc(X(s), Y(v), 2.5, 0, 2 * Math.PI); ctx.fill(); }
      ctx.lineWidth = 1;
    });
    const x = X(state.time);
    ctx.strokeStyle = "#ffd166";
    ctx.setLineDash([3, 3]);
    ctx.beginPath(); ctx.moveTo(x, Tp); ctx.lineTo(x, H - B); ctx.stroke();
    ctx.setLineDash([]);
  }

  function drawFrame() {
    if (!runs[0].canvas.ctx) fitAll();
    runs.forEach(drawSky);
    drawLoss();
  }
  let pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; drawFrame(); });
  }

  // ------------------------------------------------------------------------------------------ text
  function lossAt(curve, step) {  // the last point at or before step
    let best = null;
    for (const p of curve) if (p[0] <= step + 1e-9) best = p;
    return best;
  }
  const runTitle = (r) => `${t(r.data.config.norm + "Short")} ${r.data.name}`;
  function topList(r) { return r.view.top.map((i) => `${labelOf(r, i)} ${pct(r.view.probs[i])}`).join(t("readoutSep")); }
  function updateStepText() {
    const r0 = runs[0], loc = r0.view.loc, steps = r0.data.steps;
    let line = t("step", { s: Math.round(state.time), n: planned }) + " · ";
    line += loc.f > 0 ? t("stepBetween", { a: steps[loc.k], b: steps[loc.k2] })
      : t("stepAt", { i: loc.k + 1, m: r0.K, k: steps[loc.k] });
    const thin = runs.filter((r) => r.K < r.data.recorded);
    if (thin.length) line += thin.map((r) => t("thinned", { m: r.K, r: r.data.recorded })).join("");
    document.getElementById("stepLabel").textContent = line;
    slider.value = String(Math.round(SLIDER * positionAtStep(state.time)));
    slider.setAttribute("aria-valuetext", t("step", { s: Math.round(state.time), n: planned }));
  }
  function updateText() {
    document.documentElement.lang = state.lang;
    document.title = t("docTitle");
    for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
    const langButton = document.getElementById("lang");
    langButton.textContent = t("lang");
    langButton.setAttribute("aria-label", t("langLabel"));
    langButton.lang = state.lang === "ja" ? "en" : "ja";  // (it is written in the other language)
    document.getElementById("play").textContent = state.playing ? t("pause") : t("play");
    for (const [id, key] of [["prevSnap", "prevSnapLabel"], ["nextSnap", "nextSnapLabel"]]) {
      const b = document.getElementById(id);
      b.textContent = t(id);
      b.setAttribute("aria-label", t(key));
      b.title = t(key);
    }
    const anySphere = runs.some((r) => r.sphere);
    document.getElementById("tempLabel").textContent = t(anySphere ? "tempLabel" : "tempLabelRms", { T: state.T.toFixed(2) });
    prefixInput.placeholder = t("placeholder", { ex: EXAMPLE });
    tempInput.setAttribute("aria-valuetext", t("tempValue", { T: state.T.toFixed(2) }));
    const step0 = runs[0].data.steps[runs[0].view.loc.k], num = (p) => (p ? p[1].toFixed(3) : "–");
    lossCanvas.setAttribute("aria-label", t("lossSummary", { s: step0, list: runs.map((r) => t("lossRun", {
      run: runTitle(r), tl: num(lossAt(r.data.train, step0)), vl: num(lossAt(r.data.val, step0)) })).join(t("readoutSep")) }));
    updateStepText();
    const C = runs[0].C;
    runs.forEach((r, ri) => {
      const v = r.view, step = r.data.steps[v.loc.k];
      r.title.innerHTML = `<span style="color:${RUN_COLORS[ri % RUN_COLORS.length]}">●</span> ` +
        `<span class="norm">${esc(t(r.data.config.norm))}</span><span class="folder">${esc(r.data.name)}</span>`;
      r.faceButton.textContent = t("faceH");
      r.faceButton.setAttribute("aria-label", t("faceHLabel", { run: runTitle(r) }));
      r.canvas.setAttribute("aria-label", t("skyLabel", { run: runTitle(r), list: topList(r) }));
      r.readoutEl.innerHTML = esc(t("readout", { list: "" })) + v.top.map((i) =>
        `<span class="top" data-token="${esc(r.data.labels[i])}" data-p="${v.probs[i]}"><b>${esc(labelOf(r, i))}</b> ${pct(v.probs[i])}</span>`)
        .join(esc(t("readoutSep")));
      const tl = lossAt(r.data.train, step), vl = lossAt(r.data.val, step), st = starsAt(r, v.loc.k);
      const lines = [t("info1", { s: step, tl: tl ? tl[1].toFixed(3) : "–", vl: vl ? vl[1].toFixed(3) : "–", vs: vl ? vl[0] : "–" }),
        t("info2", { p: (100 * r.shares[v.loc.k]).toFixed(0) })];
      if (r.sphere) {
        const d = driftMax(r, v.loc.k);
        lines.push(t("infoUnit"));
        lines.push(Number.isNaN(d) ? t("infoDrift0") : t("infoDrift", { d: (100 * d).toPrecision(2) + "%", G: r.gain }));
      } else {
        lines.push(t("infoNorm", { lo: Math.min(...st.wteN).toFixed(2), hi: Math.max(...st.wteN).toFixed(2) }));
      }
      r.info.innerHTML = lines.join("<br>");
    });
    // the prefix
    const status = document.getElementById("prefixStatus"), msgs = [];
    let warn = false;
    for (const r of runs) {
      const tok = r.view.tok;
      if (tok.unknown !== null) { msgs.push(t("prefixUnknown", { run: r.data.name, c: tok.unknown })); warn = true; }
      if (tok.cropped) msgs.push(t("prefixCropped", { run: r.data.name, T: r.T, k: r.T - 1 }));
    }
    if (runs.some((r) => r.view.tok.folded)) msgs.push(t("prefixFolded"));
    const ids = runs[0].view.tok.ids, chars = ids.slice(1).map((i) => " " + runs[0].data.labels[i]).join("");
    const ok = ids.length === 1 && state.lang === "en" ? t("prefixOk1") : t("prefixOk", { n: ids.length, chars });
    status.className = "small" + (warn ? " warn" : "");
    status.textContent = [ok].concat(msgs).join(" ");
    // probabilities
    document.getElementById("probs").innerHTML = runs.map((r, ri) => {
      const v = r.view, head = `<div class="who" style="color:${RUN_COLORS[ri % RUN_COLORS.length]}">● ${esc(runTitle(r))}</div>`;
      return `<div class="probCol">${head}` + v.order.slice(0, 8).map((i) =>
        `<div class="probRow" data-run="${ri}" data-i="${i}" data-token="${esc(r.data.labels[i])}"><span class="ch">${esc(labelOf(r, i))}</span>` +
        `<span class="barBox"><span class="bar" style="width:${(100 * v.probs[i]).toFixed(1)}%"></span></span>` +
        `<span class="p">${v.probs[i].toFixed(3)}</span></div>`).join("") + "</div>";
    }).join("");
    markHover();
    // attention of the last position
    document.getElementById("attn").innerHTML = runs.map((r, ri) => {
      const v = r.view, ids = v.tok.ids;
      let html = `<div class="probCol"><div class="who" style="color:${RUN_COLORS[ri % RUN_COLORS.length]}">● ${esc(runTitle(r))}</div>` +
        '<div class="attnBox"><table class="attnGrid"><tr><th></th>' + ids.map((id) => `<th>${esc(id === r.V - 1 ? "BOS" : r.data.labels[id])}</th>`).join("") + "</tr>";
      v.res.attention.forEach((heads, l) => heads.forEach((w, h) => {
        html += `<tr><th>${esc(t("attnHead", { l, h }))}</th>` + w.map((a) =>
          `<td class="cell" style="background:rgba(255,209,102,${a.toFixed(3)});color:${a > 0.5 ? "#0a1226" : "#dde6f7"}">${Math.round(100 * a)}</td>`).join("") + "</tr>";
      }));
      return html + "</table></div></div>";
    }).join("");
    // picked stars: the nearest by the true cosine, or the cosine of two
    const cos = document.getElementById("cosine");
    if (state.selected.length === 0) {
      cos.innerHTML = esc(t("cosHint", { C }));
    } else if (state.selected.length === 1) {
      const a = state.selected[0];
      cos.innerHTML = runs.map((r) => {
        const i = r.data.labels.indexOf(a);
        if (i < 0) return esc(r.data.name) + ": –";
        const p = M.snapshot(r, r.view.loc.k), C = r.C, ni = norm(p.wte, i * C, C), list = [];
        for (let j = 0; j < r.V; j++) if (j !== i) list.push([M.dot(p.wte, p.wte, i * C, j * C, C) / (ni * norm(p.wte, j * C, C)), j]);
        list.sort((x, y) => y[0] - x[0]);
        return t("nearLine", { run: esc(runTitle(r)), a: esc(a), C, list: list.slice(0, 5).map(([c, j]) => `${esc(r.data.labels[j])} ${c.toFixed(2)}`).join(" · ") });
      }).join("<br>");
    } else {
      const [a, b] = state.selected;
      cos.innerHTML = `<span class="pair">${esc(a)} · ${esc(b)}</span><br>` + runs.map((r) => {
        const i = r.data.labels.indexOf(a), j = r.data.labels.indexOf(b);
        if (i < 0 || j < 0) return esc(r.data.name) + ": –";
        const p = M.snapshot(r, r.view.loc.k), st = starsAt(r, r.view.loc.k), C = r.C;
        const c16 = M.dot(p.wte, p.wte, i * C, j * C, C) / (norm(p.wte, i * C, C) * norm(p.wte, j * C, C));
        const c3 = st.wte3[i][0] * st.wte3[j][0] + st.wte3[i][1] * st.wte3[j][1] + st.wte3[i][2] * st.wte3[j][2];
        return t("cosLine", { run: esc(runTitle(r)), c: c16.toFixed(4), C, c3: c3.toFixed(3) });
      }).join("<br>");
    }
    const fixed = JSON.stringify([state.lang, state.show, state.selected]);
    if (fixed !== updateText.fixed) {  // what changes only with the language, the layers or the picked stars
      updateText.fixed = fixed;
      document.getElementById("notesText").innerHTML = notesHtml();
      buildOptions();
      buildStarPick();
      runs.forEach((r) => { r.legend.innerHTML = legendOf(r); });
      const capLine = document.getElementById("capLine");
      capLine.hidden = !runs.some((r) => r.sphere) || !state.show.out;
      capLine.textContent = t("capLine");
    }
    if (state.tour >= 0) showTour();
  }

  // the notes, put together from the kinds of runs on the page: each speaks only of what its skies draw
  function notesHtml() {
    const N = TEXT[state.lang].notes, anySphere = runs.some((r) => r.sphere), anyRms = runs.some((r) => !r.sphere);
    const parts = [N.projection, anySphere ? N.caps + (anyRms ? N.capsRms : "") : N.rmsOnly];
    if (runs.some((r) => r.drift)) parts.push(N.retraction);
    parts.push(anySphere && anyRms ? N.pathBoth : anySphere ? N.pathSphere : N.pathRms, N.replay);
    const vars = { C: runs[0].C, p: (100 * positionAtStep(planned / 10)).toFixed(0),
                   q: (100 * (1 - STEP_SHARE)).toFixed(0), r: (100 * STEP_SHARE).toFixed(0) };
    return parts.map((s) => "<p>" + Object.entries(vars).reduce((a, [k, v]) => a.split("{" + k + "}").join(String(v)), s) +
      "</p>").join("");
  }

  // each sky's own key to its marks: only what that sky draws
  function legendOf(r) {
    const item = (mark, color, key) => `<span><span class="mark" style="color:${color}" aria-hidden="true">${mark}</span>` +
      `${esc(t(key))}</span>`;
    const show = state.show, parts = [];
    if (show.stars) parts.push(item("●", "#f4f7ff", "legendIn") + (r.sphere ? "" : `<span>${esc(t("legendSize"))}</span>`));
    if (show.stars) parts.push(item("●", "#ffd166", "legendBos"));
    if (show.out) parts.push(item("◆", "#ff9a76", "legendOut"));
    if (show.out && r.sphere) parts.push(item("○", "#ff9a76", show.allCaps ? "legendCaps" : "legendCap"));
    if (show.path) parts.push(item("◎", "#67e3c0", "legendH"));
    return parts.join("");
  }
  function buildOptions() {
    const opts = [["stars", "optStars", "●", "#f4f7ff"], ["out", runs.some((r) => r.sphere) ? "optOut" : "optOutRms", "◆", "#ff9a76"], ["trueH", "optTrueH", "◇", "#ff9a76"],
      ["path", "optPath", "◎", "#67e3c0"], ["trail", "optTrail", "∼", "#c9d2e8"]];
    if (runs.some((r) => r.sphere)) {
      opts.splice(3, 0, ["drift", "optDrift", "↑", "#ff5d9e"]);
      opts.splice(2, 0, ["allCaps", "optAllCaps", "○", "#ff9a76"]);
    }
    const box = document.getElementById("options");
    box.querySelectorAll("label").forEach((el) => el.remove());
    box.insertAdjacentHTML("beforeend", opts.map(([key, label, sym, col]) =>
      `<label class="${state.show[key] ? "" : "off"}"><input type="checkbox" data-opt="${key}"${state.show[key] ? " checked" : ""}>` +
      `<span class="swatch" style="color:${col}" aria-hidden="true">${sym}</span>${esc(t(label))}</label>`).join(""));
  }
  function buildStarPick() {
    const sel = document.getElementById("starPick"), labels = [];
    for (const r of runs) for (const l of r.data.labels) if (!labels.includes(l)) labels.push(l);
    sel.innerHTML = `<option value="">${esc(t("starNone"))}</option>` +
      labels.map((l) => `<option value="${esc(l)}"${state.selected[state.selected.length - 1] === l ? " selected" : ""}>${esc(l)}</option>`).join("");
  }
  function markHover() {
    for (const row of document.querySelectorAll(".probRow")) {
      const hot = state.hover && Number(row.dataset.run) === state.hover.ri && Number(row.dataset.i) === state.hover.i;
      row.classList.toggle("hot", !!hot);
    }
  }

  // the one live region: it speaks on a pause, a new name, a new top character (never once per frame)
  const announceBox = document.getElementById("announce");
  function announce(text) { if (text.trim() && text !== announceBox.textContent) announceBox.textContent = text; }
  const topsText = () => runs.map((r) => t("announceTop", { run: runTitle(r), list: topList(r) })).join(" ");
  let lastTops = "";
  function update(quiet) {
    computeAll();
    updateText();
    redraw();
    const tops = runs.map((r) => r.view.top[0]).join(",");
    if (tops !== lastTops && !state.playing && !quiet && lastTops) announce(topsText());
    lastTops = tops;
  }

  // ------------------------------------------------------------------------------------------ controls
  const slider = document.getElementById("replay");
  slider.max = String(SLIDER);
  function setTime(time, quiet) {
    const before = runs.map((r) => r.view && r.view.loc.k);
    state.time = Math.max(0, Math.min(planned, time));
    if (runs.some((r, ri) => locate(r, state.time).k !== before[ri])) { update(quiet); return; }
    for (const r of runs) { r.view.loc = locate(r, state.time); }
    updateStepText();
    redraw();
  }
  // a scrub speaks once, when it ends (change: the pointer released, or a key pressed), not at every snapshot it crosses
  slider.addEventListener("input", () => setTime(stepAtPosition(Number(slider.value) / SLIDER), true));
  slider.addEventListener("change", () => announce(t("announceStep", { s: Math.round(state.time) }) + " " + topsText()));
  const snapJump = (dir) => {
    const s = dir > 0 ? allSteps.find((x) => x > state.time + 1e-9) : allSteps.slice().reverse().find((x) => x < state.time - 1e-9);
    if (s !== undefined) setTime(s);
  };
  document.getElementById("prevSnap").addEventListener("click", () => { setPlaying(false); snapJump(-1); });
  document.getElementById("nextSnap").addEventListener("click", () => { setPlaying(false); snapJump(1); });
  // playing: the replay position advances with the clock (the whole run in REPLAY_SECONDS at x1, paced by how much
  // the sky moves); with prefers-reduced-motion the sky steps from snapshot to snapshot, with no flight between
  let last = 0, playPos = 0;
  const reducedMotion = () => !!(REDUCED_MOTION && REDUCED_MOTION.matches);
  function tick(now) {
    if (!state.playing) return;
    const dt = Math.min(0.1, (now - last) / 1000);
    last = now;
    playPos += (dt * state.speed) / REPLAY_SECONDS;
    if (playPos >= 1) { setTime(planned); setPlaying(false); return; }
    let time = stepAtPosition(playPos);
    if (reducedMotion()) time = allSteps.filter((x) => x <= time + 1e-9).pop() || 0;
    setTime(time);
    requestAnimationFrame(tick);
  }
  function setPlaying(on) {
    if (on === state.playing) return;
    state.playing = on;
    if (on) {
      if (state.time >= planned) setTime(0);
      playPos = positionAtStep(state.time);
      last = performance.now();
      requestAnimationFrame(tick);
    } else {
      announce(t("announcePause", { s: Math.round(state.time) }) + " " + topsText());
    }
    document.getElementById("play").textContent = state.playing ? t("pause") : t("play");
  }
  document.getElementById("play").addEventListener("click", () => setPlaying(!state.playing));
  document.getElementById("speed").addEventListener("change", (e) => { state.speed = Number(e.target.value); });
  document.getElementById("lang").addEventListener("click", () => {
    state.lang = state.lang === "ja" ? "en" : "ja";
    announceBox.textContent = "";  // (what it said, in the other language)
    update(true);
  });
  const prefixInput = document.getElementById("prefix");
  // while an input method composes (kana to kanji), the box holds unfinished text: the page waits for it
  let nameTimer = null;
  const readPrefix = () => {
    state.prefix = prefixInput.value;
    update(true);
    skyUnderNameBox();
    clearTimeout(nameTimer);  // a new name is announced once the typing pauses
    nameTimer = setTimeout(() => announce(t("announceName", { p: state.prefix }) + " " + topsText()), 600);
  };
  prefixInput.addEventListener("input", (e) => { if (!e.isComposing) readPrefix(); });
  prefixInput.addEventListener("compositionend", readPrefix);
  // on a narrow screen the name box stays at the top: focusing it brings the first sky up under it, so that the name
  // is drawn where the learner is looking
  // (and keeps it there while the message under the box grows or shrinks)
  function skyUnderNameBox() {
    if (window.innerWidth >= 900 || document.activeElement !== prefixInput) return;
    const bar = document.getElementById("quick").getBoundingClientRect(), sky = runs[0].box.getBoundingClientRect();
    window.scrollBy({ top: sky.top - (bar.bottom - bar.top) - 4, behavior: "instant" });
  }
  prefixInput.addEventListener("focus", skyUnderNameBox);
  const tempInput = document.getElementById("temp");
  const setT = (v) => { tempInput.value = String(v); state.T = Math.pow(2, (v - 50) / 25); };  // 0.25 .. 4, 1 at the middle
  tempInput.addEventListener("input", () => { setT(Number(tempInput.value)); update(); });
  document.getElementById("options").addEventListener("change", (e) => {
    const key = e.target.dataset && e.target.dataset.opt;
    if (key) { state.show[key] = e.target.checked; updateText(); redraw(); }
  });
  document.getElementById("starPick").addEventListener("change", (e) => {
    const ch = e.target.value;
    state.selected = ch ? state.selected.filter((s) => s !== ch).concat([ch]).slice(-2) : [];
    updateText(); redraw();
  });
  const probsBox = document.getElementById("probs");
  probsBox.addEventListener("mouseover", (e) => {
    const row = e.target.closest(".probRow");
    const hover = row ? { ri: Number(row.dataset.run), i: Number(row.dataset.i) } : null;
    if (JSON.stringify(hover) !== JSON.stringify(state.hover)) { state.hover = hover; markHover(); redraw(); }
  });
  probsBox.addEventListener("mouseleave", () => { state.hover = null; markHover(); redraw(); });

  // the camera: dragging any sky turns all; arrow keys on a focused sky; "face h" turns it to a run's h
  function turn(dx, dy) { state.R = mul(mul(rotY(dx), rotX(dy)), state.R); }
  function cameraFacing(p) {  // the rotation that brings map point p to the front, keeping "up" where it can
    const e2 = unit3(p), up = state.R[1], d = up[0] * e2[0] + up[1] * e2[1] + up[2] * e2[2];
    let e1 = [up[0] - d * e2[0], up[1] - d * e2[1], up[2] - d * e2[2]];
    if (Math.hypot(...e1) < 1e-6) e1 = Math.abs(e2[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0];
    e1 = unit3(e1);
    const e1o = unit3([e1[0] - (e1[0] * e2[0] + e1[1] * e2[1] + e1[2] * e2[2]) * e2[0], e1[1] - (e1[0] * e2[0] + e1[1] * e2[1] + e1[2] * e2[2]) * e2[1],
      e1[2] - (e1[0] * e2[0] + e1[1] * e2[1] + e1[2] * e2[2]) * e2[2]]);
    return [cross(e1o, e2), e1o, e2];
  }
  // state.turning is true while the camera turns (a newer turn replaces an older one): the page's "animation
  // ended" signal, which its tests wait for
  function faceH(ri, instant) {
    const r = runs[ri], target = pathGeometry(r).h, from = state.R[2];
    const frames = instant || reducedMotion() ? 1 : 14, turn = {};
    let j = 0;
    state.turning = turn;
    const step = () => {
      if (state.turning !== turn) return;
      j += 1;
      state.R = cameraFacing(slerp3(from, target, j / frames));
      drawFrame();
      if (j < frames) requestAnimationFrame(step);
      else state.turning = null;
    };
    step();
  }
  // On a touch screen a vertical swipe scrolls the page (the canvas allows pan-y): the browser takes it and cancels
  // the pointer; a drag that starts sideways, or two fingers, turn the sky.
  runs.forEach((r, ri) => {
    const c = r.canvas, fingers = new Map();
    c.addEventListener("pointerdown", (e) => {
      fingers.set(e.pointerId, [e.clientX, e.clientY]);
      state.drag = { x: e.clientX, y: e.clientY, x0: e.clientX, y0: e.clientY, moved: 0, axis: null };
      if (e.pointerType !== "touch") c.setPointerCapture(e.pointerId);
    });
    c.addEventListener("pointermove", (e) => {
      if (!state.drag || !fingers.has(e.pointerId)) { if (!state.drag) hoverStar(ri, e); return; }
      if (e.pointerType === "touch" && fingers.size === 1 && state.drag.axis !== "x") {
        // one finger: the first 8 px decide; a vertical swipe is the page's (it scrolls), a sideways one turns
        const d = state.drag, ax = Math.abs(e.clientX - d.x0), ay = Math.abs(e.clientY - d.y0);
        if (d.axis === null && Math.hypot(ax, ay) >= 8) d.axis = ax > ay ? "x" : "y";
        if (d.axis !== "x") return;
      }
      const [px, py] = fingers.get(e.pointerId), dx = (e.clientX - px) / fingers.size, dy = (e.clientY - py) / fingers.size;
      fingers.set(e.pointerId, [e.clientX, e.clientY]);
      state.drag.moved += Math.abs(dx) + Math.abs(dy);
      turn(dx * 0.01, dy * 0.01);
      redraw();
    });
    const lift = (e) => { fingers.delete(e.pointerId); if (!fingers.size) state.drag = null; };
    c.addEventListener("pointercancel", lift);
    // (two fingers: the page neither scrolls nor zooms, from their first touch on)
    for (const type of ["touchstart", "touchmove"]) {
      c.addEventListener(type, (e) => { if (e.touches.length > 1) e.preventDefault(); }, { passive: false });
    }
    c.addEventListener("pointerup", (e) => {
      const d = state.drag;
      fingers.delete(e.pointerId);
      if (fingers.size) return;
      state.drag = null;
      if (!d || d.moved > 4) return;
      const box = c.getBoundingClientRect(), hit = pick(r, e.clientX - box.left, e.clientY - box.top);
      if (hit !== null) selectStar(r.data.labels[hit]);
    });
    c.addEventListener("pointerleave", () => { if (state.hover && state.hover.ri === ri) { state.hover = null; markHover(); redraw(); } });
    c.addEventListener("keydown", (e) => {
      const a = 0.12, keys = { ArrowLeft: [-a, 0], ArrowRight: [a, 0], ArrowUp: [0, -a], ArrowDown: [0, a] };
      if (keys[e.key]) { turn(...keys[e.key]); redraw(); e.preventDefault(); }
      if (e.key === "Enter" || e.key === "h") { faceH(ri); e.preventDefault(); }
    });
  });
  function selectStar(ch) {
    state.selected = state.selected.includes(ch) ? state.selected.filter((s) => s !== ch) : state.selected.concat([ch]).slice(-2);
    updateText();
    redraw();
  }
  function pick(r, x, y) {  // the nearest input star within 14 px, near side first
    const it = skyItems(r);
    let best = null, bestD = 14 * 14;
    for (let i = 0; i < r.V; i++) {
      const [sx, sy, z] = it.stars[i], d = (sx - x) ** 2 + (sy - y) ** 2 - (z > 0 ? 30 : 0);
      if (d < bestD && isShown(r, i)) { bestD = d; best = i; }
    }
    return best;
  }
  function hoverStar(ri, e) {  // the pointer over a star (input or output) marks its probability bar
    const r = runs[ri], box = r.canvas.getBoundingClientRect(), x = e.clientX - box.left, y = e.clientY - box.top;
    const it = skyItems(r);
    let best = null, bestD = 10 * 10;
    for (const pts of [state.show.out ? it.out : [], state.show.stars ? it.stars : []]) {
      pts.forEach(([sx, sy, z], i) => {
        const d = (sx - x) ** 2 + (sy - y) ** 2 - (z > 0 ? 20 : 0);
        if (d < bestD && isShown(r, i)) { bestD = d; best = i; }
      });
    }
    const hover = best === null ? null : { ri, i: best };
    if (JSON.stringify(hover) !== JSON.stringify(state.hover)) { state.hover = hover; markHover(); redraw(); }
  }

  // ------------------------------------------------------------------------------------------ the guided tour
  const tourBox = document.getElementById("tour");
  // The tour's steps come from the runs on the page: one sky or several, either norm. A step speaks only of skies that
  // are there, names them by their titles (never "left" or "right": a phone stacks them), and on a narrow screen
  // scrolls the sky it speaks of into view.
  const sphereRun = runs.findIndex((r) => r.sphere), lastRun = runs.length - 1;
  const showSky = (ri) => {
    if (window.innerWidth < 900 && runs[ri]) runs[ri].box.scrollIntoView({ block: "start", behavior: "instant" });
  };
  function tourSteps() {
    const steps = [], listSep = state.lang === "ja" ? "、" : ", ";
    const title = (ri) => esc(runTitle(runs[ri]));
    const overview = () => {
      setPlaying(false); state.prefix = EXAMPLE; setT(50); setTime(planned);
      Object.assign(state.show, { stars: true, out: true, path: true, drift: false, trail: false });
      state.R = mul(rotX(-0.45), rotY(0.6));
    };
    if (runs.length === 1) steps.push({ key: "stars1", vars: { run: title(0) }, act: overview, sky: 0 });
    else {
      steps.push({ key: "starsMany", act: overview, sky: 0, vars: { n: runs.length, list: runs.map((_, ri) => title(ri)).join(listSep),
                                                                  deg: sameCharAngle === null ? "–" : sameCharAngle.toFixed(0) } });
    }
    steps.push({ key: "replay", act: () => { setTime(0); setPlaying(true); }, sky: 0 });
    steps.push({ key: "path", vars: { run: title(lastRun) }, sky: lastRun,
                 act: () => { setPlaying(false); setTime(planned); state.prefix = EXAMPLE; setT(50); update(); faceH(lastRun); } });
    if (sphereRun >= 0) {
      steps.push({ key: "caps", vars: { run: title(sphereRun) }, sky: sphereRun,
                   act: () => { setPlaying(false); Object.assign(state.show, { out: true, allCaps: true }); setT(25); update(); faceH(sphereRun); } });
      steps.push({ key: "retraction", vars: { run: title(sphereRun) }, sky: sphereRun, act: () => {
        setPlaying(false); state.show.drift = true; setTime(runs[sphereRun].data.steps[Math.min(2, runs[sphereRun].K - 1)]); update();
      } });
    } else {
      steps.push({ key: "tempRms", sky: 0, act: () => { setPlaying(false); state.show.out = true; setT(25); update(); } });
    }
    return steps;
  }
  function tourText(i) {
    const step = tourSteps()[i];
    return Object.entries(Object.assign({ i: i + 1, ex: esc(EXAMPLE) }, step.vars || {}))
      .reduce((text, [k, v]) => text.split("{" + k + "}").join(String(v)), TEXT[state.lang].tour[step.key]);
  }
  function showTour() {
    tourBox.hidden = false;
    document.body.classList.add("touring");
    const n = tourSteps().length, html = tourText(state.tour), box = document.getElementById("tourText");
    if (box.innerHTML !== html) box.innerHTML = html;
    document.getElementById("tourCount").textContent = t("tourCount", { i: state.tour + 1, n });
    document.getElementById("tourBack").disabled = state.tour === 0;
    document.getElementById("tourNext").disabled = state.tour === n - 1;
  }
  function goTour(i) {
    const wasOpen = state.tour >= 0;
    state.tour = i;
    if (i < 0) {
      tourBox.hidden = true;
      document.body.classList.remove("touring");
      const focus = document.activeElement;  // (inside the tour, or lost with it: back to the tour's button)
      if (wasOpen && (tourBox.contains(focus) || focus === document.body)) tourButton.focus();
      return;
    }
    const step = tourSteps()[i];
    step.act();
    prefixInput.value = state.prefix;
    update(true);
    showTour();
    showSky(step.sky);
    announce(document.getElementById("tourText").textContent);
    if (!wasOpen) tourBox.focus({ preventScroll: true });  // the tour takes the focus when it opens
  }
  tourBox.addEventListener("keydown", (e) => { if (e.key === "Escape") { goTour(-1); e.preventDefault(); } });
  const tourButton = document.getElementById("tourButton");
  tourButton.classList.add("fresh");  // (lit until the tour is first opened)
  tourButton.addEventListener("click", () => { tourButton.classList.remove("fresh"); goTour(0); });
  document.getElementById("tourBack").addEventListener("click", () => goTour(Math.max(0, state.tour - 1)));
  document.getElementById("tourNext").addEventListener("click", () => goTour(Math.min(tourSteps().length - 1, state.tour + 1)));
  document.getElementById("tourClose").addEventListener("click", () => goTour(-1));

  // ------------------------------------------------------------------------------------------ for the tests
  window.__planetarium = {
    drawFrame,
    runs: runs.length,
    state,
    // the page's forward pass on run ri, snapshot k: plain arrays, to compare with numpy_engine.forward_np
    forward(ri, k, tokens) {
      const res = M.forward(runs[ri], k, tokens);
      return { hidden: res.hidden.map((stage) => stage.map((h) => Array.from(h))), logits: res.logits.map((z) => Array.from(z)),
               attention: res.attention };
    },
    softmax: (z, T) => M.softmax(z, T),
    turn(dx, dy) { turn(dx, dy); },
    setTime(time) { setTime(time); },
    setIndex(i) { setTime(allSteps[Math.max(0, Math.min(allSteps.length - 1, i))]); update(); },
    show(layer, on) { state.show[layer] = on; updateText(); drawFrame(); },
    update,
    faceH(ri) { faceH(ri, true); },
    tour: goTour,
    tourLength: () => tourSteps().length,
    // the replay's clock: the step at replay position u (0..1) and back; the last step the replay reaches
    stepAtPosition, positionAtStep, planned,
    // the plot box of the loss canvas (CSS pixels), the loss range it spans, and the steps its x axis spans
    lossFrame: () => lossFrame,
    shares: (ri) => runs[ri].shares.slice(),
    sameCharAngle,
    // where input star `label` of run ri is drawn, in CSS pixels from its canvas's top left corner
    starAt(ri, label) {
      const r = runs[ri], [x, y, z] = skyItems(r).stars[r.data.labels.indexOf(label)];
      return { x, y, near: z > 0 };
    },
    // where each layer's items are on sky ri (CSS pixels, near side only): what the tests compare pixels at
    projected(ri) {
      const r = runs[ri], it = skyItems(r, true), near = (p) => p[2] > 0, xy = (p) => [p[0], p[1]];
      const geo = pathGeometry(r), scr = it.scr;
      return {
        stars: it.stars.filter(near).map(xy), out: it.out.filter(near).map(xy),
        caps: it.caps.filter((c) => !c.whole).flatMap((c) => c.rim.filter(near).map(xy)),
        path: geo.chains.flatMap((c) => c.points.map(scr)).filter(near).map(xy),
        drift: it.drift.filter((d) => near(d.from) && r.gain * Math.abs(d.d) * it.fr.rho > 3).flatMap((d) => {
          const ring = 4 + it.fr.rho * Math.abs(d.d) * r.gain;  // (the ring drawn around the star)
          return [0, 1, 2, 3, 4, 5, 6, 7].map((j) => [d.from[0] + ring * Math.cos(j * Math.PI / 4),
                                                      d.from[1] + ring * Math.sin(j * Math.PI / 4)]);
        }),
        trail: it.trail.flatMap((pts) => pts.slice(1, -2)).filter(near).map(xy),
      };
    },
    // every input star, output star and hidden state of the path (by stage, then position) on sky ri, near and far
    places(ri) {
      const r = runs[ri], it = skyItems(r), geo = pathGeometry(r), xy = (p) => [p[0], p[1]];
      const stages = geo.chains.length ? geo.chains[0].points.length : 0, path = [];
      for (let s = 0; s < stages; s++) for (const chain of geo.chains) path.push(xy(it.scr(chain.points[s])));
      return { stars: it.stars.map(xy), out: it.out.map(xy), path };
    },
    // the cap of output star `label` of run ri as the sky draws it: its center and the star's direction (map)
    cap(ri, label) {
      const r = runs[ri], i = r.data.labels.indexOf(label), lm3 = skyItems(r).lm3, cap = capOf(r, i, lm3);
      return { i, center: cap.c, star: lm3[i], anti: cap.anti, whole: cap.whole, theta: cap.th, kappa: cap.kappa };
    },
    // each output star's cosine with h on the map and in C dimensions (the true-angle option makes them equal)
    cosToH(ri) {
      const r = runs[ri], g = pathGeometry(r), lm3 = skyItems(r).lm3, A = starsAt(r, r.view.loc.k);
      return lm3.map((p, i) => [p[0] * g.h[0] + p[1] * g.h[1] + p[2] * g.h[2], M.dot(A.lm[i], g.hC, 0, 0, r.C)]);
    },
    view: (ri) => {
      const v = runs[ri].view;
      return { k: v.loc.k, f: v.loc.f, probs: v.probs, shown: v.shown ? v.shown.reduce((a, b) => a + b, 0) : runs[ri].V, top: v.top.map((i) => runs[ri].data.labels[i]),
               error: v.tok.unknown, positions: v.tok.ids.length, ids: v.tok.ids, steps: runs[ri].data.steps };
    },
  };
  // the page opens as the tour's name step leaves it: the example name typed, the last sky facing its h
  setT(50);
  state.prefix = EXAMPLE;
  prefixInput.value = EXAMPLE;
  fitAll();
  update(true);
  faceH(lastRun, true);
  drawFrame();
  if (document.fonts && document.fonts.load) document.fonts.load(`13px ${FONT}`).then(() => drawFrame(), () => {});
})();
