// step_player_page.js -- the step player: the recording of gpt() (and gpt_sphere() beside it) played line by line.
//
// One panel per recording: the function's code with the line that just ran highlighted, the variables that line
// changed (vectors as strips of colored cells), |x| or |h|, the attention weights per head, the KV cache, and the
// position's predicted distribution. Only what the current step needs is drawn: the recording holds a few thousand
// steps, and building them all would make the page slow to open. Shared controls move every panel through its own
// steps while keeping them at the same position.
"use strict";

(function () {
  const TEXT = StepText, recs = DATA.recordings, TWO = recs.length > 1;
  const state = { lang: DATA.lang === "en" ? "en" : "ja", back: false, idx: recs.map(() => 0) };
  const $ = (id) => document.getElementById(id);
  function t(key, vars) {
    let s = TEXT[state.lang][key];
    for (const [k, v] of Object.entries(vars || {})) s = s.split("{" + k + "}").join(String(v));
    return s;
  }
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  function fmt(x) {  // 4 significant digits: the recording holds 6 (each cell's data-value has them all)
    if (typeof x !== "number") return String(x);
    if (Number.isInteger(x)) return String(x);
    const a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(2);
    return String(Number(x.toPrecision(4)));
  }
  const num = (V) => (V && V.k === "num" ? V.d : null);
  const norm2 = (d) => Math.sqrt(d.reduce((s, v) => s + v * v, 0));

  // ------------------------------------------------------------------------------------------ the recordings
  const panels = recs.map((r, k) => {
    const lines = {};  // function -> the lines that have a step (a line number there is a button)
    for (const s of r.steps) (lines[s.f] = lines[s.f] || new Set()).add(s.l);
    return { r, k, steps: r.steps, lines, resid: r.norm === "sphere" ? "h" : "x", fn: null, el: {} };
  });
  const tokenLabel = (r, id) => (id === r.vocab.length ? t("bos") : r.vocab[id] === " " ? "' '" : r.vocab[id]);

  // ------------------------------------------------------------------------------------------ moving
  const cur = (P) => P.steps[state.idx[P.k]];
  const clamp = (P, j) => Math.max(0, Math.min(P.steps.length - 1, j));
  // every panel at the same position: one that would leave it waits at its edge until the others get there too
  function align(targets, dir) {
    if (!TWO) return targets;
    const pos = targets.map((j, k) => panels[k].steps[j].p);
    const P = dir > 0 ? Math.min(...pos) : Math.max(...pos);
    return targets.map((j, k) => {
      if (pos[k] === P) return j;
      const pr = panels[k].r.positions[Math.min(P, panels[k].r.positions.length - 1)];
      return dir > 0 ? pr.last : pr.first;
    });
  }
  // the others follow panel `lead` to its step j: the same position, as far into it as the lead is
  function follow(lead, j, keep) {
    const L = panels[lead], s = L.steps[j], pr = L.r.positions[s.p];
    const f = (j - pr.first) / Math.max(1, pr.last - pr.first);
    return panels.map((P, k) => {
      if (k === lead) return j;
      if (keep && cur(P).p === s.p) return state.idx[k];
      const q = P.r.positions[Math.min(s.p, P.r.positions.length - 1)];
      return q.first + Math.round(f * (q.last - q.first));
    });
  }
  // step over: the next step no deeper than this one; on a for-loop's header, the next one outside the loop
  function overTarget(P, i, dir) {
    const S = P.steps, s = S[i], code = P.r.code[s.f];
    const loop = code && code.loops.find((l) => l[0] === s.l);
    for (let j = i + dir; j >= 0 && j < S.length; j += dir) {
      const u = S[j];
      if (u.d > s.d) continue;
      if (loop && u.d === s.d && u.f === s.f && u.p === s.p && u.l >= loop[0] && u.l <= loop[1]) continue;
      return j;
    }
    return i;
  }
  function go(targets, why) {
    const moved = targets.some((j, k) => j !== state.idx[k]);
    state.idx = targets;
    render();
    announce(moved ? why : t("announceEnd"));
  }
  const dirOf = () => (state.back ? -1 : 1);
  const step = (d) => go(align(panels.map((P) => clamp(P, state.idx[P.k] + d)), d));
  const over = (d) => go(align(panels.map((P) => overTarget(P, state.idx[P.k], d)), d));
  function position(d) {  // d in reading order; backward reading starts a position at its last step
    const p = Math.max(0, Math.min(panels[0].r.positions.length - 1, cur(panels[0]).p + d * dirOf()));
    go(panels.map((P) => { const q = P.r.positions[Math.min(p, P.r.positions.length - 1)]; return state.back ? q.last : q.first; }));
  }
  function ends(last) {
    const toEnd = last !== state.back;
    go(panels.map((P) => (toEnd ? P.steps.length - 1 : 0)));
  }
  function runTo(k, f, line) {  // the next step at that line, in reading order, wrapping
    const P = panels[k], S = P.steps, n = S.length, d = dirOf();
    for (let m = 1; m <= n; m++) {
      const j = (((state.idx[k] + d * m) % n) + n) % n;
      if (S[j].l === line && S[j].f === f) return go(follow(k, j, true));
    }
  }
  function setBack(on) {
    state.back = on;
    // turned on at the very start: backward() starts from the loss, at the last step
    if (on && state.idx.every((i) => i === 0)) state.idx = panels.map((P) => P.steps.length - 1);
    render();
    announce(t(on ? "sayBackward" : "sayForward"));
  }

  // ------------------------------------------------------------------------------------------ colors
  const MID = [31, 40, 62], NEG = [70, 140, 255], POS = [255, 104, 72], SEQ = [255, 209, 102];
  function mix(to, f) {
    f = Math.max(0, Math.min(1, f));
    return `rgb(${MID.map((x, i) => Math.round(x + (to[i] - x) * f)).join(",")})`;
  }
  const diverging = (v, m) => (m > 0 && Number.isFinite(v) ? mix(v < 0 ? NEG : POS, (Math.abs(v) / m) ** 0.7) : mix(POS, 0));
  const maxAbs = (a) => a.reduce((m, v) => Math.max(m, Array.isArray(v) ? maxAbs(v) : Math.abs(v)), 0);

  // ------------------------------------------------------------------------------------------ drawing values
  // the numbers a variable shows: its data going forward, its gradient in backward mode (null: none reaches it)
  const shown = (V) => (state.back ? (V.g === undefined ? null : V.g) : V.d);
  function cells(name, vals, m, ri) {
    return vals.map((v, i) => {
      const title = ri === undefined ? t("cellTitle", { name, i, v: fmt(v) }) : t("cellTitle2", { name, i: ri, j: i, v: fmt(v) });
      return `<span class="c" data-value="${v}" title="${esc(title)}" style="background:${diverging(v, m)}"></span>`;
    }).join("");
  }
  function varHtml(name, V, tag) {
    const vals = V.k === "vec" || V.k === "mat" || V.k === "val" ? shown(V) : null;
    const label = name === "return" ? t("returned") : name;
    let meta = "", body = "";
    const grad = state.back && (V.k === "vec" || V.k === "mat" || V.k === "val");
    if (V.k === "vec" || V.k === "mat") {
      const rows = V.k === "vec" ? [vals || V.d] : vals || V.d;
      const m = maxAbs(rows), n = rows.reduce((s, r) => s + r.length, 0);
      meta = (V.k === "vec" ? t("length", { n: V.d.length }) : t("shape", { r: V.d.length, c: V.d[0] ? V.d[0].length : 0 })) +
        (n && vals ? " · " + t("scale", { m: fmt(m) }) : "");
      if (!vals) body = `<span class="small">${esc(t("noGrad"))}</span>`;
      else if (n) {
        const list = rows.map((r) => r.map(fmt).join(", ")).join(" / ");
        const strips = V.k === "vec" ? `<span class="strip">${cells(name, vals, m)}</span>` :
          rows.map((r, ri) => `<span class="mrow"><span class="ri">${ri}</span><span class="strip">${cells(name, r, m, ri)}</span></span>`).join("");
        body = `<div class="cells ${V.k}" tabindex="0" role="img" aria-label="${esc(t("stripLabel", { name: label, n, list }))}">` +
          `${strips}</div><div class="nums" lang="en" hidden>${esc(list)}</div>`;
      } else body = `<span class="small" lang="en">[]</span>`;
    } else if (V.k === "val") {
      body = vals === null ? `<span class="small">${esc(t("noGrad"))}</span>` :
        `<span class="scalar" lang="en" data-value="${vals}"><span class="c" style="background:${diverging(vals, Math.abs(vals))}"></span>${fmt(vals)}</span>`;
    } else if (V.k === "num") {
      body = `<span class="scalar" lang="en" data-value="${V.d}">${fmt(V.d)}</span>`;
    } else if (V.k === "cache") {
      body = `<span class="scalar">${esc(V.d.map((n, l) => t("kvLayer", { l, n, T: panels[0].r.config.block_size })).join(" · "))}</span>`;
    } else {
      body = `<span class="scalar text" lang="en">${esc(V.d)}</span>`;
    }
    return `<div class="var${grad ? " grad" : ""}" data-var="${esc(name)}"><div class="varHead"><code lang="en">${esc(label)}</code>` +
      (tag ? ` <span class="tag">${esc(tag)}</span>` : "") + (meta ? ` <span class="meta">${esc(meta)}</span>` : "") +
      `</div>${body}</div>`;
  }

  // the call's locals up to step i (the model's own steps), and the attention weights of each layer and head
  function context(P, i) {
    const S = P.steps, pr = P.r.positions[S[i].p], loc = {}, attn = {};
    for (let j = pr.first; j <= i; j++) {
      const u = S[j];
      if (u.d !== 0) continue;
      if (u.a) Object.assign(loc, u.a);
      Object.assign(loc, u.v);
      if (u.v.attn_weights) {
        const li = num(loc.li) || 0, hd = num(loc.head_dim) || P.r.config.head_dim;
        const h = num(loc.hs) !== null ? Math.round(num(loc.hs) / hd) : num(loc.hd) !== null ? num(loc.hd) : num(loc.h);
        (attn[li] = attn[li] || {})[h] = u.v.attn_weights;
      }
    }
    return { loc, attn };
  }

  // ------------------------------------------------------------------------------------------ one panel
  function buildPanel(P) {
    const sec = document.createElement("section"), k = P.k;
    sec.className = "panel";
    sec.dataset.norm = P.r.norm;
    sec.setAttribute("aria-labelledby", "ph" + k);
    sec.innerHTML = `<h2 id="ph${k}"></h2><p class="info small"></p><p class="normLine"></p><div class="body">` +
      `<div class="codePart"><h3 class="codeH"></h3><p class="inside small"></p><div class="code"></div></div>` +
      `<div class="varPart"><h3 class="varsH"></h3><div class="vars"></div><div class="grads"></div>` +
      `<h3 class="attnH"></h3><div class="attn"></div><h3 class="kvH"></h3><div class="kv"></div>` +
      `<h3 class="probsH"></h3><div class="probs"></div></div></div>`;
    for (const c of ["info", "normLine", "codeH", "inside", "code", "varsH", "vars", "attnH", "attn", "kvH", "kv", "probsH",
      "probs", "grads"]) P.el[c] = sec.querySelector("." + c);
    P.el.h2 = sec.querySelector("h2");
    P.el.code.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-go]");
      if (!b) return;
      if (e.detail > 0) b.blur();  // a mouse click: the arrow keys go on stepping (from the keyboard they choose lines)
      runTo(k, P.fn, Number(b.dataset.go));
    });
    sec.addEventListener("focusin", (e) => { const n = e.target.nextElementSibling; if (e.target.matches(".cells") && n) n.hidden = false; });
    sec.addEventListener("focusout", (e) => { const n = e.target.nextElementSibling; if (e.target.matches(".cells") && n) n.hidden = true; });
    $("panels").appendChild(sec);
  }
  // a long line wraps to its own indentation plus 4 (as Python continues a statement), not to the margin
  const wrapIndent = (line) => { const n = line.length - line.trimStart().length + 4; return `padding-left:${n}ch;text-indent:-${n}ch`; };
  function buildCode(P, f) {
    const c = P.r.code[f], diff = new Set(c.differs || []), has = P.lines[f] || new Set();
    P.fn = f;
    P.el.code.innerHTML = c.lines.map((line, j) => {
      const n = c.first + j, d = diff.has(n);
      const no = has.has(n) ? `<button type="button" class="no" tabindex="-1" data-go="${n}" aria-label="${esc(t("lineGo", { n }))}">${n}</button>`
        : `<span class="no">${n}</span>`;
      return `<div class="ln${d ? " diff" : ""}" data-line="${n}">${no}` +
        (d ? `<span class="visually-hidden">${esc(t("differs"))}</span>` : "") +
        `<code class="src" lang="en" style="${wrapIndent(line)}">${esc(line)}</code></div>`;
    }).join("");
  }
  function showLine(P, s) {
    if (P.fn !== s.f) buildCode(P, s.f);
    const box = P.el.code, lines = P.r.code[s.f].lines, first = P.r.code[s.f].first;
    for (const e of box.querySelectorAll(".cur, .cont")) { e.classList.remove("cur", "cont"); e.removeAttribute("aria-current"); }
    for (const e of box.querySelectorAll("button[tabindex='0']")) e.tabIndex = -1;
    const el = box.querySelector(`.ln[data-line="${s.l}"]`);
    if (!el) return;
    el.classList.add("cur");
    el.setAttribute("aria-current", "step");
    const b = el.querySelector("button");
    if (b) b.tabIndex = 0;
    // a statement over several lines: its continuation lines (indented deeper, after a line that opens no block)
    const indent = (x) => x.length - x.trimStart().length, head = lines[s.l - first] || "";
    if (!/:\s*(#.*)?$/.test(head)) {
      for (let n = s.l + 1; n - first < lines.length && lines[n - first].trim() && indent(lines[n - first]) > indent(head); n++) {
        box.querySelector(`.ln[data-line="${n}"]`).classList.add("cont");
      }
    }
    // the code box scrolls (never the page) so that the line stands a third of the way down
    const top = el.offsetTop, h = box.clientHeight;  // (.code is the lines' offsetParent)
    if (top < box.scrollTop + 8 || top + el.offsetHeight > box.scrollTop + h - 8) box.scrollTop = Math.max(0, top - h / 3);
  }
  function renderPanel(P) {
    const i = state.idx[P.k], s = P.steps[i], r = P.r, C = r.config.n_embd;
    P.el.h2.innerHTML = `${esc(t(TWO ? r.norm : r.norm + "Long"))} <code lang="en">${esc(r.model)}()</code>`;
    P.el.info.textContent = (r.run ? t("trained", { run: r.run, s: r.trained_steps }) : t("fresh")) + " · " +
      t("nameLoss", { loss: fmt(r.loss) });
    const { loc, attn } = context(P, i);
    // |x| or |h|: the residual stream as this step leaves it
    const R = loc[P.resid];
    if (R && R.k === "vec" && R.d.length) {
      const wide = R.d.length !== C;
      let line = wide ? t("normWide", { v: P.resid, n: fmt(norm2(R.d)), len: R.d.length }) :
        t(r.norm === "sphere" ? "normSphere" : "normRms", { n: fmt(norm2(R.d)), len: R.d.length, C, s: fmt(Math.sqrt(C)) });
      if (state.back && R.g) line += " " + t("normGrad", { v: P.resid, g: fmt(norm2(R.g)) });
      P.el.normLine.textContent = line;
    } else P.el.normLine.textContent = t("normNone", { v: P.resid });
    P.el.normLine.dataset.norm = R && R.k === "vec" ? norm2(R.d) : "";
    // the code
    const code = r.code[s.f];
    P.el.codeH.innerHTML = `${esc(t("codeHeading"))} <span class="file" lang="en">${esc(code.file)} — ${esc(s.f)}()</span>`;
    if (s.d > 0) {
      let j = i;
      while (j > 0 && P.steps[j].d > 0) j--;
      P.el.inside.textContent = t("inside", { fn: s.f, caller: P.steps[j].f + "()", l: P.steps[j].l });
      P.el.inside.hidden = false;
    } else P.el.inside.hidden = true;
    showLine(P, s);
    // what the line changed (its arguments on a call's first step, what it returned on the last)
    P.el.varsH.textContent = t(state.back ? "varsHeadingBack" : "varsHeading");
    let html = "";
    for (const [n, V] of Object.entries(s.a || {})) html += varHtml(n, V, t("args"));
    for (const [n, V] of Object.entries(s.v)) html += varHtml(n, V);
    if (s.r) html += varHtml("return", s.r);
    P.el.vars.innerHTML = html || `<p class="small">${esc(t("noVars"))}</p>`;
    renderAttn(P, s, loc, attn);
    renderKv(P, loc);
    renderProbs(P, s.p);
    renderGrads(P, i);
  }
  function renderAttn(P, s, loc, attn) {
    const li = num(loc.li) || 0, H = P.r.config.n_head, toks = P.r.tokens, hd = P.r.config.head_dim;
    const now = num(loc.hs) !== null ? Math.round(num(loc.hs) / hd) : -1;
    P.el.attnH.textContent = t("attnHeading", { l: li });
    let html = "";
    for (let h = 0; h < H; h++) {
      const V = (attn[li] || {})[h];
      const vals = V ? shown(V) : null;
      let row;
      if (!vals) row = `<span class="small">${esc(V ? t("noGrad") : t("attnNone"))}</span>`;
      else {
        const m = maxAbs(vals);
        const list = vals.map((v, tt) => t("attnCell", { h, t: tt, c: tokenLabel(P.r, toks[tt]), v: fmt(v) }));
        row = `<span class="strip cells" tabindex="0" role="img" aria-label="${esc(list.join("、"))}">` + vals.map((v, tt) =>
          `<span class="c" data-value="${v}" title="${esc(list[tt])}" style="background:${state.back ? diverging(v, m) : mix(SEQ, v)}">` +
          `${esc(tokenLabel(P.r, toks[tt]))}</span>`).join("") + "</span>";
      }
      html += `<div class="head${h === now && !(attn[li] || {})[h] ? " now" : ""}" data-head="${h}"><span class="hl">${esc(t("attnHead", { h }))}</span>${row}</div>`;
    }
    P.el.attn.innerHTML = html;
  }
  function renderKv(P, loc) {
    const T = P.r.config.block_size, L = P.r.config.n_layer;
    const counts = loc.keys && loc.keys.k === "cache" ? loc.keys.d : new Array(L).fill(0);
    P.el.kvH.textContent = t("kvHeading");
    P.el.kv.innerHTML = counts.map((n, l) => `<div class="kvRow" data-layer="${l}" data-count="${n}" role="img" aria-label="${esc(t("kvLabel", { l, n, T }))}">` +
      `<span class="hl">${esc(t("kvLayer", { l, n, T }))}</span><span class="kvCells">` +
      Array.from({ length: T }, (_, p) => `<span class="k${p < n ? " on" : ""}"></span>`).join("") + "</span></div>").join("");
  }
  function renderProbs(P, p) {
    const r = P.r, pos = r.positions[p], V = r.vocab.length + 1, TOP = 6;
    const order = pos.probs.map((q, i) => i).sort((a, b) => pos.probs[b] - pos.probs[a]);
    const rows = order.slice(0, TOP);
    if (!rows.includes(pos.target)) rows.push(pos.target);
    const top = pos.probs[order[0]] || 1;
    P.el.probsH.textContent = t("probsHeading", { p, V });
    P.el.probs.innerHTML = rows.map((i) => {
      const q = pos.probs[i], tg = i === pos.target;
      return `<div class="probRow${tg ? " target" : ""}" data-token="${esc(tokenLabel(r, i))}" data-p="${q}">` +
        `<span class="ch">${esc(tokenLabel(r, i))}</span><span class="barBox"><span class="bar" style="width:${(100 * q / top).toFixed(1)}%"></span></span>` +
        `<span class="p">${(100 * q).toFixed(1)}%</span><span class="mark">${tg ? esc(t("target")) : ""}</span></div>`;
    }).join("") + `<p class="loss small" data-loss="${pos.loss}">${esc(t("lossLine", { c: tokenLabel(r, pos.target), p: fmt(pos.probs[pos.target]), loss: fmt(pos.loss) }))}</p>`;
  }
  // the parameters' gradients, as heat maps: where the backward pass ends (the first step, read in reverse)
  function renderGrads(P, i) {
    const box = P.el.grads, r = P.r;
    if (!state.back) { box.innerHTML = ""; box.dataset.shown = ""; return; }
    if (i !== 0) {
      box.dataset.shown = "";
      box.innerHTML = `<h3>${esc(t("gradsHeading"))}</h3><p class="small">${esc(t("gradsHint"))}</p>`;
      return;
    }
    if (box.dataset.shown === state.lang) return;
    box.dataset.shown = state.lang;
    let html = `<h3>${esc(t("gradsHeading"))}</h3><p class="small">${esc(t("gradsNote", { loss: fmt(r.loss) }))}</p><div class="maps">`;
    const entries = Object.entries(r.param_grads).map(([key, g]) => [key, Array.isArray(g[0]) ? g : [g]]);
    for (const [key, g] of entries) {
      const shape = g.length === 1 && !Array.isArray(r.param_grads[key][0]) ? String(g[0].length) : `${g.length} × ${g[0].length}`;
      const m = maxAbs(g), text = t("gradsMax", { key, shape, m: fmt(m) });
      html += `<figure data-key="${esc(key)}" data-max="${m}"><canvas role="img" aria-label="${esc(text)}"></canvas>` +
        `<figcaption><code lang="en">${esc(key)}</code><span>${esc(shape)} · ${esc(fmt(m))}</span></figcaption></figure>`;
    }
    html += "</div>";
    const wte = r.param_grads.wte;
    if (wte) {
      const rows = wte.map((row, id) => (row.some((v) => v !== 0) ? tokenLabel(r, id) : null)).filter((c) => c !== null);
      html += `<p class="small">${esc(t("gradsRows", { list: rows.join(state.lang === "ja" ? "、" : ", ") }))}</p>`;
    }
    box.innerHTML = html;
    const dpr = window.devicePixelRatio || 1;
    box.querySelectorAll("figure").forEach((fig, n) => {
      const [key, g] = entries[n], rows = g.length, cols = g[0].length, m = maxAbs(g);
      const cs = Math.max(2, Math.min(8, Math.floor(150 / cols), Math.floor(240 / rows)));
      const cv = fig.querySelector("canvas"), ctx = cv.getContext("2d");
      cv.width = cols * cs * dpr; cv.height = rows * cs * dpr;
      cv.style.width = cols * cs + "px"; cv.style.height = rows * cs + "px";
      ctx.scale(dpr, dpr);
      for (let a = 0; a < rows; a++) for (let b = 0; b < cols; b++) { ctx.fillStyle = diverging(g[a][b], m); ctx.fillRect(b * cs, a * cs, cs, cs); }
      cv.addEventListener("mousemove", (e) => {
        const a = Math.floor(e.offsetY / cs), b = Math.floor(e.offsetX / cs);
        if (g[a] && g[a][b] !== undefined) cv.title = rows > 1 ? `${key}[${a}][${b}] = ${fmt(g[a][b])}` : `${key}[${b}] = ${fmt(g[a][b])}`;
      });
    });
  }

  // ------------------------------------------------------------------------------------------ the page
  const slider = $("slider"), announceBox = $("announce");
  function render() {
    document.documentElement.lang = state.lang;
    document.title = t("docTitle");
    document.body.classList.toggle("backward", state.back);
    for (const P of panels) renderPanel(P);
    const P0 = panels[0], i = state.idx[0], n = P0.steps.length, s = cur(P0), r = P0.r, pos = r.positions[s.p];
    const label = TWO ? t("stepOfTwo", { i: i + 1, n, j: state.idx[1] + 1, m: panels[1].steps.length }) : t("stepOf", { i: i + 1, n });
    slider.max = String(n - 1);
    slider.value = String(i);
    slider.setAttribute("aria-valuetext", label);
    $("stepLabel").textContent = label;
    $("where").innerHTML = t(state.back ? "whereBackHtml" : "whereHtml", {
      p: s.p, last: r.positions.length - 1, tok: esc(tokenLabel(r, pos.token)), tgt: esc(tokenLabel(r, pos.target)),
    });
    $("mode").setAttribute("aria-pressed", String(state.back));
  }
  function updateText() {
    for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
    const r = recs[0];
    const what = TWO ? t("introTwo") : t("introOne", { fn: esc(r.model), norm: esc(t(r.norm)) });
    $("intro").innerHTML = t("introHtml", { what, name: esc(DATA.name) });
    $("helpText").innerHTML = TEXT[state.lang].helpHtml.map((p) => `<p>${p}</p>`).join("");
    const lang = $("lang");
    lang.textContent = t("lang");
    lang.setAttribute("aria-label", t("langLabel"));
    lang.setAttribute("lang", state.lang === "ja" ? "en" : "ja");
    const keys = { back: "ArrowLeft", step: "ArrowRight", over: "ArrowDown", prevPos: "PageUp", nextPos: "PageDown", mode: "B" };
    for (const id of Object.keys(keys)) {
      const b = $(id);
      b.textContent = t(id);
      b.title = t(id + "Tip");
      b.setAttribute("aria-keyshortcuts", keys[id]);
    }
    for (const P of panels) P.fn = null;  // (the line buttons' labels)
  }
  function announce(extra) {
    const parts = panels.map((P) => {
      const s = cur(P), line = (P.r.code[s.f].lines[s.l - P.r.code[s.f].first] || "").trim();
      const names = Object.keys(s.v).concat(s.r ? [t("returned")] : []);
      return t("announce", { panel: TWO ? t(P.r.norm) : t("stepOf", { i: state.idx[P.k] + 1, n: P.steps.length }), l: s.l,
        code: line.length > 70 ? line.slice(0, 70) + "…" : line, vars: names.length ? t("announceVars", { list: names.join(", ") }) : "" });
    });
    announceBox.textContent = (extra ? extra + " " : "") + parts.join(" ");
  }

  for (const P of panels) buildPanel(P);
  document.body.classList.toggle("two", TWO);
  $("back").addEventListener("click", () => step(-dirOf()));
  $("step").addEventListener("click", () => step(dirOf()));
  $("over").addEventListener("click", () => over(dirOf()));
  $("prevPos").addEventListener("click", () => position(-1));
  $("nextPos").addEventListener("click", () => position(1));
  $("mode").addEventListener("click", () => setBack(!state.back));
  $("lang").addEventListener("click", () => {
    state.lang = state.lang === "ja" ? "en" : "ja";
    announceBox.textContent = "";
    updateText();
    render();
  });
  let sliderTimer = null;
  slider.addEventListener("input", () => {
    state.idx = follow(0, Number(slider.value), false);
    render();
    clearTimeout(sliderTimer);  // a drag is announced once it pauses
    sliderTimer = setTimeout(() => announce(), 300);
  });
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const tg = e.target;
    if (tg.matches && tg.matches(".code button") && (e.key === "ArrowUp" || e.key === "ArrowDown")) {
      // in the line numbers, ↑↓ choose a line (Enter runs to it)
      const all = [...tg.closest(".code").querySelectorAll("button")], j = all.indexOf(tg) + (e.key === "ArrowUp" ? -1 : 1);
      if (all[j]) { tg.tabIndex = -1; all[j].tabIndex = 0; all[j].focus(); }
      e.preventDefault();
      return;
    }
    if (/^(INPUT|SELECT|TEXTAREA)$/.test(tg.tagName)) return;
    const d = dirOf();
    const act = {
      ArrowRight: () => step(d), ArrowLeft: () => step(-d), ArrowDown: () => over(d), n: () => over(d), ArrowUp: () => over(-d),
      PageDown: () => position(1), PageUp: () => position(-1), Home: () => ends(false), End: () => ends(true),
      b: () => setBack(!state.back),
    }[e.key];
    if (!act) return;
    e.preventDefault();
    act();
  });
  updateText();
  render();
  // what the tests and a curious learner can reach
  window.__stepPlayer = {
    state, panels, render, step, over, position, runTo, ends, setBack,
    go: (k, j) => { state.idx = follow(k, j, false); render(); },
  };
})();
