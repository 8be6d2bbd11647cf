// planetarium_page.js -- the planetarium page: the skies (one canvas per run, one camera for all), the replay,
// the loss plot, a name's path, the readout as vMF caps, and the Japanese / English labels.
//
// Drawing is plain Canvas 2D with an orthographic camera. The numbers (paths, probabilities, cosines) come from
// PlanetModel (planetarium_model.js); nothing here changes them, it only projects them for drawing.
"use strict";

(function () {
  const DATA = JSON.parse(document.getElementById("planetarium-data").textContent);
  const M = PlanetModel;
  const runs = DATA.runs.map(M.decodeRun);

  // ------------------------------------------------------------------------------------------ words
  const TEXT = {
    ja: {
      title: "プラネタリウム：単位球面の上で学習を再生する",
      subtitle: "第3回「プラネタリウムの建設」── 星（トークンの埋め込み）は、単位球面上の向きで意味を持つ。" +
        "ドラッグで回転、星をクリックで選択。",
      lang: "English",
      play: "▶ 再生", pause: "❚❚ 停止",
      step: "学習ステップ {s} / {n}（スナップショット {i} / {m}）",
      lossTitle: "損失：訓練 ─（移動平均）と検証 ●、縦線＝いま",
      prefix: "名前の書き出し（接頭辞）：各位置の隠れ状態 h をたどる",
      prefixOk: "{n} 個の位置：BOS{chars}。最後の位置 ◎ が次の文字を読み出す。",
      prefixUnknown: "{run}：「{c}」は語彙にない文字です",
      prefixLong: "{run}：長すぎます（block_size {T} の位置まで）",
      temp: "温度 T",
      tempLabel: "T = {T}：集中度 κ = s_z / T（温度 T ＝ 1/κ）",
      optStars: "入力の星（埋め込み wte の行）",
      optOut: "出力の星（lm_head の行）と vMF キャップ",
      optPath: "名前の道（隠れ状態 h と残差ステップ）",
      optDrift: "リトラクション前の位置（Adam の一歩）",
      optTrail: "星の軌跡（ステップ 0 から）",
      probsTitle: "次の文字の確率 softmax(z / T)（上位 8 文字）",
      probsNone: "接頭辞を直すと表示します",
      cosHint: "星を2つクリックすると、{C} 次元での本当のコサイン類似度を表示します。",
      cosLine: "{run}：cos θ = <b>{c}</b>（{C} 次元）、図の上では {c3}",
      sphere: "球面モード（nGPT）", rmsnorm: "RMSNorm（元の microgpt）", sphereShort: "球面（nGPT）",
      rmsnormShort: "RMSNorm",
      info1: "ステップ <b>{s}</b> · 訓練損失 <b>{tl}</b>（移動平均）· 検証損失 <b>{vl}</b>（ステップ {vs}）",
      info2: "上位3主成分が説明する分散 {p}%（射影して単位球面 S² に正規化）",
      infoUnit: "どの星もノルム 1：意味は向きだけが担う（星の明るさは捨てた）",
      infoNorm: "星の大きさ＝ノルム |wte_i|（{lo}〜{hi}）：球面モードが捨てるもの",
      infoDrift: "Adam の一歩で星は球面から最大 {d} 外れ、リトラクションが引き戻す（図では ×{G}）",
      infoDrift0: "ステップ 0：まだ Adam の一歩はない（初期化の直後）",
      notes: [
        "<b>射影。</b>{C} 次元の星は描けないので、最後のスナップショットの埋め込み wte の上位3主成分の方向に射影し、" +
          "もう一度単位球面 S² に正規化して描いています。図の上の角度は本当の角度から歪みます。正確な値" +
          "（コサイン、確率）は数値で示します。",
        "<b>vMF キャップ。</b>出力の星 w_k を囲む円は、vMF 分布 exp(κ w_k·h) の密度がピークの 1/e に落ちる角度 " +
          "cos θ = 1 − 1/κ です（κ = s_z,k / T、κ ≤ 1/2 なら球面全体）。κ が大きいほどキャップは小さく、その文字の確率は" +
          " h の向きに敏感です。塗りの濃さと ◆ の大きさはその文字の確率。RMSNorm ではノルムが固定されず、ロジットはコサインでは" +
          "ないので vMF との対応は成り立ちません（講義の「前提が崩れる場合」）：キャップは描かず、◆ の大きさで確率だけを示します。",
        "<b>リトラクション。</b>球面モードでは Adam の一歩で星が単位球面の外（や内）にずれ、リトラクション w ← w/|w| が" +
          "半径方向に引き戻します。ピンクの線と輪は外へ（|w| > 1）、青は内へ（|w| < 1）のずれ。ずれは小さいので図では拡大しています" +
          "（倍率は各図の下）。学習率が 0 に向かって減るので、ずれも小さくなります。",
        "<b>名前の道。</b>各位置の隠れ状態 h（埋め込みの後、各ブロックの後）を点で、残差ステップ " +
          "h ← Norm(h + α(Norm(f(h)) − h)) を大円の弧（{C} 次元の弧の射影）で結びます。数字は位置、◎ は最後の位置。" +
          "破線は位置から位置への移り変わり、点線は最後の位置でブロックが向かう先 Norm(f(h))。",
      ],
    },
    en: {
      title: "Planetarium: replaying training on the unit sphere",
      subtitle: "Lecture 3, “Building the planetarium”: stars (token embeddings) get their meaning from their " +
        "direction on the unit sphere. Drag to rotate, click stars to pick them.",
      lang: "日本語",
      play: "▶ Play", pause: "❚❚ Pause",
      step: "training step {s} / {n} (snapshot {i} / {m})",
      lossTitle: "Loss: train ─ (running mean) and val ●; dashed: now",
      prefix: "Start of a name: the hidden state h at each position",
      prefixOk: "{n} positions: BOS{chars}; the last one ◎ reads out the next character.",
      prefixUnknown: "{run}: “{c}” is not in the vocabulary",
      prefixLong: "{run}: too long (block_size {T} positions)",
      temp: "Temperature T",
      tempLabel: "T = {T}: concentration κ = s_z / T (temperature T = 1/κ)",
      optStars: "Input stars (rows of the embedding wte)",
      optOut: "Output stars (rows of lm_head) and vMF caps",
      optPath: "A name's path (hidden states h, residual steps)",
      optDrift: "Position before the retraction (Adam's step)",
      optTrail: "Star trails (from step 0)",
      probsTitle: "Next-character probabilities softmax(z / T) (top 8)",
      probsNone: "shown once the prefix is valid",
      cosHint: "Click two stars to see their exact cosine similarity in {C} dimensions.",
      cosLine: "{run}: cos θ = <b>{c}</b> ({C}-D); on the map {c3}",
      sphere: "sphere mode (nGPT)", rmsnorm: "RMSNorm (the original microgpt)", sphereShort: "sphere (nGPT)",
      rmsnormShort: "RMSNorm",
      info1: "step <b>{s}</b> · train loss <b>{tl}</b> (running mean) · val loss <b>{vl}</b> (step {vs})",
      info2: "top 3 principal directions: {p}% of the variance (projected, re-normalized onto S²)",
      infoUnit: "every star has norm 1: only its direction carries meaning",
      infoNorm: "star size = norm |wte_i| ({lo} to {hi}): what sphere mode throws away",
      infoDrift: "Adam's step pushed the stars up to {d} off the sphere; the retraction pulls them back (map: ×{G})",
      infoDrift0: "step 0: no Adam step yet (right after initialization)",
      notes: [
        "<b>Projection.</b> {C}-dimensional stars cannot be drawn: they are projected onto the top 3 principal " +
          "directions of the last snapshot's embeddings (wte) and re-normalized onto the unit sphere S². Angles on " +
          "the map are distorted; the exact values (cosines, probabilities) are shown as numbers.",
        "<b>vMF caps.</b> The circle around output star w_k is where the vMF density exp(κ w_k·h) falls to 1/e of " +
          "its peak: cos θ = 1 − 1/κ with κ = s_z,k / T (the whole sphere if κ ≤ 1/2). The larger κ, the smaller " +
          "the cap and the more that character's probability depends on the direction of h. The fill shows its " +
          "probability, as does the size of ◆. In RMSNorm the norms are free and the logits are no cosines, so the vMF " +
          "correspondence does not hold (the lecture's caution): no caps there, ◆'s size shows the probability.",
        "<b>Retraction.</b> In sphere mode Adam's step moves each star off the unit sphere (outward or inward) and " +
          "the retraction w ← w/|w| pulls it back along the radius. Pink lines and rings: pushed out (|w| > 1); blue: " +
          "pushed in (|w| < 1). The offsets are small: the map exaggerates them (the factor is under each sky). " +
          "The learning rate decays to 0, and so do the offsets.",
        "<b>A name's path.</b> Dots are the hidden state h at each position (after the embedding, after each " +
          "block); arcs are the residual steps h ← Norm(h + α(Norm(f(h)) − h)), great-circle arcs in {C} " +
          "dimensions, projected. Numbers are positions, ◎ the last one. Dashed: from one position to the next; " +
          "dotted: where the block pulls the last position, Norm(f(h)).",
      ],
    },
  };
  const state = {
    lang: "ja", index: 0, playing: false, timer: null, prefix: "", T: 1,
    show: { stars: true, out: true, path: true, drift: false, trail: false },
    selected: [], R: mul(rotX(-0.45), rotY(0.6)), drag: null,
  };
  function t(key, vars) {
    let s = TEXT[state.lang][key];
    for (const [k, v] of Object.entries(vars || {})) s = s.split("{" + k + "}").join(String(v));
    return s;
  }
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  // ------------------------------------------------------------------------------------------ 3-D helpers
  function rotX(a) { const c = Math.cos(a), s = Math.sin(a); return [[1, 0, 0], [0, c, -s], [0, s, c]]; }
  function rotY(a) { const c = Math.cos(a), s = Math.sin(a); return [[c, 0, s], [0, 1, 0], [-s, 0, c]]; }
  function mul(A, B) {
    return A.map((row) => [0, 1, 2].map((j) => row[0] * B[0][j] + row[1] * B[1][j] + row[2] * B[2][j]));
  }
  function unit3(p) {
    const n = Math.hypot(p[0], p[1], p[2]);
    return n > 0 ? [p[0] / n, p[1] / n, p[2] / n] : [0, 0, 0];
  }
  // a C-dimensional vector -> its direction on the map (top 3 principal directions, re-normalized)
  function project(r, x, o) {
    o = o || 0;
    const b = r.data.basis, C = r.C, p = [0, 0, 0];
    for (let a = 0; a < 3; a++) { let s = 0; for (let i = 0; i < C; i++) s += b[a][i] * x[o + i]; p[a] = s; }
    return unit3(p);
  }
  // points along the great-circle arc from unit vector u to v in C dimensions (slerp), projected to the map
  function arc(r, u, v, n) {
    const C = r.C, cos = Math.max(-1, Math.min(1, M.dot(u, v, 0, 0, C))), th = Math.acos(cos), pts = [];
    for (let i = 0; i <= n; i++) {
      const f = i / n;
      const a = th < 1e-9 ? 1 - f : Math.sin((1 - f) * th) / Math.sin(th), b = th < 1e-9 ? f : Math.sin(f * th) / Math.sin(th);
      const w = new Float64Array(C);
      for (let j = 0; j < C; j++) w[j] = a * u[j] + b * v[j];
      pts.push(project(r, w));
    }
    return pts;
  }
  const unitC = (x) => M.l2normalize(x);

  // ------------------------------------------------------------------------------------------ per-run views
  const allSteps = Array.from(new Set(runs.flatMap((r) => r.data.steps))).sort((a, b) => a - b);
  const currentStep = () => allSteps[state.index];
  function snapIndex(r, step) {  // the last snapshot at or before `step`
    const s = r.data.steps;
    let k = 0;
    while (k + 1 < s.length && s[k + 1] <= step) k++;
    return k;
  }
  function norm(x, o, n) { return Math.sqrt(M.dot(x, x, o, o, n)); }

  // the stars of snapshot k on the map (cached): directions and norms of the wte and lm_head rows
  function stars(r, k) {
    r.starCache = r.starCache || new Map();
    if (r.starCache.has(k)) return r.starCache.get(k);
    const p = M.snapshot(r, k), V = r.V, C = r.C, s = { wte: [], lm: [], wteN: [], lmN: [] };
    for (let i = 0; i < V; i++) {
      s.wte.push(project(r, p.wte, i * C)); s.wteN.push(norm(p.wte, i * C, C));
      s.lm.push(project(r, p.lm, i * C)); s.lmN.push(norm(p.lm, i * C, C));
    }
    r.starCache.set(k, s);
    return s;
  }
  // the largest offset |d - 1| of the stars (wte and lm_head rows) at snapshot k; NaN at step 0 (no Adam step yet)
  function driftMax(r, k) {
    let mx = NaN;
    for (let i = 0; i < 2 * r.V; i++) {
      const d = r.drift[k * 2 * r.V + i];
      if (Number.isFinite(d)) mx = Math.max(Number.isNaN(mx) ? 0 : mx, Math.abs(d - 1));
    }
    return mx;
  }
  // how far the map exaggerates the drift at snapshot k: the largest offset becomes about 0.2 radii (rounded down to
  // 1, 2 or 5 times a power of ten; the offsets shrink by orders of magnitude as the learning rate decays)
  function driftGain(r, k) {
    const mx = driftMax(r, k);
    if (!(mx > 0)) return 1;
    const x = 0.2 / mx, e = Math.pow(10, Math.floor(Math.log10(x))), m = x / e;
    return Math.max(1, (m >= 5 ? 5 : m >= 2 ? 2 : 1) * e);
  }
  for (const r of runs) {  // RMSNorm: a star's size is its norm relative to the median norm of the final stars
    const fin = stars(r, r.K - 1);
    const ns = fin.wteN.slice().sort((a, b) => a - b);
    r.normMedian = ns[ns.length >> 1] || 1;
  }

  // tokens of the typed prefix for run r: BOS then the characters; or an error message
  function tokensFor(r) {
    const labels = r.data.labels, bos = r.V - 1, ids = [bos];
    for (const ch of Array.from(state.prefix)) {
      const i = labels.indexOf(ch);
      if (i < 0 || i === bos) return { error: t("prefixUnknown", { run: r.data.name, c: ch }) };
      ids.push(i);
    }
    if (ids.length > r.T) return { error: t("prefixLong", { run: r.data.name, T: r.T }) };
    return { ids };
  }

  // the forward pass for the current snapshot and prefix, and what the page draws of it
  function compute(r) {
    const k = snapIndex(r, currentStep()), tok = tokensFor(r);
    const view = { k, tokens: tok.ids || null, error: tok.error || null };
    if (tok.ids) {
      const res = M.forward(r, k, tok.ids), n = tok.ids.length, last = res.logits[n - 1];
      view.res = res;
      view.probs = M.softmax(last, state.T);
      // each position: its chain of hidden states (stage by stage) as arcs, and its final state
      view.chains = [];
      for (let tpos = 0; tpos < n; tpos++) {
        const segs = [];
        for (let s = 0; s + 1 < res.hidden.length; s++) {
          segs.push(arc(r, unitC(res.hidden[s][tpos]), unitC(res.hidden[s + 1][tpos]), 10));
        }
        view.chains.push({ segs, points: res.hidden.map((h) => project(r, h[tpos])) });
      }
      view.links = [];  // final state of position t -> embedding of position t + 1
      for (let tpos = 0; tpos + 1 < n; tpos++) {
        view.links.push(arc(r, unitC(res.hidden[res.hidden.length - 1][tpos]), unitC(res.hidden[0][tpos + 1]), 16));
      }
      view.pulls = [];  // sphere: from the last position's states toward each block's Norm(f(h))
      if (r.sphere) {
        for (let s = 0; s < res.proposals.length; s++) {
          view.pulls.push(arc(r, res.hidden[s][n - 1], res.proposals[s][n - 1], 14));
        }
      }
      // sphere: each output star's vMF concentration kappa = s_z / T (the caps)
      view.kappa = r.sphere ? Array.from(M.snapshot(r, k).sz, (s) => s / state.T) : null;
    }
    r.view = view;
  }
  function computeAll() { for (const r of runs) compute(r); }

  // ------------------------------------------------------------------------------------------ drawing
  const SIZE = 380, CX = SIZE / 2, CY = SIZE / 2 + 4, RHO = SIZE * 0.39;  // a sky's canvas, the dome's center, radius
  // a point of the map (3-D) -> [x, y, depth] on a sky's canvas: the camera's rotation, then orthographic
  function screen(p) {
    const R = state.R;
    return [CX + RHO * (R[0][0] * p[0] + R[0][1] * p[1] + R[0][2] * p[2]),
            CY - RHO * (R[1][0] * p[0] + R[1][1] * p[1] + R[1][2] * p[2]),
            R[2][0] * p[0] + R[2][1] * p[1] + R[2][2] * p[2]];
  }
  const skies = document.getElementById("skies");
  for (const r of runs) {
    const div = document.createElement("div");
    div.className = "sky";
    div.innerHTML = '<div class="skyTitle"></div><canvas class="dome"></canvas><div class="skyInfo"></div>';
    skies.appendChild(div);
    r.title = div.querySelector(".skyTitle");
    r.canvas = div.querySelector("canvas");
    r.info = div.querySelector(".skyInfo");
    setupCanvas(r.canvas, SIZE, SIZE);
  }
  function setupCanvas(c, w, h) {
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    c.style.width = w + "px";
    c.style.height = h + "px";
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.ctx = ctx;
  }
  const lossCanvas = document.getElementById("loss");
  setupCanvas(lossCanvas, 364, 128);

  // the grid of the dome: meridians and parallels as 3-D polylines, rotated each frame
  const GRID = [];
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
  const RUN_COLORS = ["#5cc8ff", "#ffb454", "#c792ea", "#7fd962"];
  const VOWELS = new Set(["a", "e", "i", "o", "u"]);

  function drawSky(r, ri) {
    const ctx = r.canvas.ctx, cx = CX, cy = CY, rho = RHO, scr = screen;
    const view = r.view, k = view.k, st = stars(r, k);
    ctx.clearRect(0, 0, SIZE, SIZE);
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
    // grid: the far half faint, the near half brighter
    for (const front of [false, true]) {
      ctx.beginPath();
      for (const pts of GRID) {
        let prev = scr(pts[0]);
        for (let i = 1; i < pts.length; i++) {
          const cur = scr(pts[i]);
          if ((prev[2] + cur[2] > 0) === front) { ctx.moveTo(prev[0], prev[1]); ctx.lineTo(cur[0], cur[1]); }
          prev = cur;
        }
      }
      ctx.strokeStyle = front ? "rgba(140,170,230,0.22)" : "rgba(140,170,230,0.07)";
      ctx.stroke();
    }
    // a polyline on the dome: its near-side pieces opaque, its far-side pieces at alphaBack (one stroke per piece)
    const polyline = (pts, color, width, dash, alphaBack) => {
      const s = pts.map(scr);
      ctx.setLineDash(dash || []);
      ctx.lineWidth = width;
      ctx.strokeStyle = color;
      let i = 1;
      while (i < s.length) {
        const front = s[i - 1][2] + s[i][2] > 0;
        ctx.globalAlpha = front ? 1 : alphaBack;
        ctx.beginPath();
        ctx.moveTo(s[i - 1][0], s[i - 1][1]);
        while (i < s.length && (s[i - 1][2] + s[i][2] > 0) === front) { ctx.lineTo(s[i][0], s[i][1]); i++; }
        ctx.stroke();
      }
      ctx.globalAlpha = 1;
      ctx.setLineDash([]);
    };
    // star trails: each wte star's direction at every snapshot up to this one
    if (state.show.trail && state.show.stars && k > 0) {
      ctx.lineWidth = 1;
      for (let i = 0; i < r.V; i++) {
        ctx.beginPath();
        for (let j = 0; j <= k; j++) {
          const s = scr(stars(r, j).wte[i]);
          if (j === 0) ctx.moveTo(s[0], s[1]); else ctx.lineTo(s[0], s[1]);
        }
        ctx.strokeStyle = "rgba(244,247,255,0.28)";
        ctx.stroke();
      }
    }
    // vMF caps around the output stars: angular radius theta with cos theta = 1 - 1/kappa. Sphere mode only: in
    // RMSNorm the norms are free and the softmax is no vMF posterior (lecture 3: 前提が崩れる場合)
    const caps = r.sphere && state.show.out && view.probs;
    if (caps) {
      for (let i = 0; i < r.V; i++) {
        // the cap's ink follows the character's probability (p^0.75: at a uniform 1/27 the caps are faint lines)
        const w = Math.pow(view.probs[i], 0.75), c = st.lm[i];
        const th = Math.acos(Math.max(-1, Math.min(1, 1 - 1 / view.kappa[i])));
        const e1 = unit3(Math.abs(c[0]) < 0.9 ? [0, -c[2], c[1]] : [-c[2], 0, c[0]]);
        const e2 = [c[1] * e1[2] - c[2] * e1[1], c[2] * e1[0] - c[0] * e1[2], c[0] * e1[1] - c[1] * e1[0]];
        const ct = Math.cos(th), sn = Math.sin(th), pts = [];
        for (let j = 0; j <= 40; j++) {
          const f = (j * 2 * Math.PI) / 40, a = Math.cos(f) * sn, b = Math.sin(f) * sn;
          pts.push(scr([ct * c[0] + a * e1[0] + b * e2[0], ct * c[1] + a * e1[1] + b * e2[1],
                        ct * c[2] + a * e1[2] + b * e2[2]]));
        }
        ctx.beginPath();
        pts.forEach((s, j) => (j ? ctx.lineTo(s[0], s[1]) : ctx.moveTo(s[0], s[1])));
        if (scr(c)[2] > 0 && th < 1.05) {
          ctx.fillStyle = `rgba(255,154,118,${(0.25 * w).toFixed(3)})`;
          ctx.fill();
        }
        ctx.strokeStyle = `rgba(255,154,118,${(0.04 + 0.8 * w).toFixed(3)})`;
        ctx.lineWidth = 0.6 + 1.2 * w;
        ctx.stroke();
      }
    }
    // stars, far to near
    const items = [];
    const labels = r.data.labels, bos = r.V - 1;
    if (state.show.stars) {
      for (let i = 0; i < r.V; i++) items.push({ kind: "in", i, p: st.wte[i], s: scr(st.wte[i]) });
    }
    if (state.show.out) {
      for (let i = 0; i < r.V; i++) items.push({ kind: "out", i, p: st.lm[i], s: scr(st.lm[i]) });
    }
    items.sort((a, b) => a.s[2] - b.s[2]);
    const gain = r.drift ? driftGain(r, k) : 1;
    const driftAt = (i, out) => (r.drift ? r.drift[k * 2 * r.V + (out ? r.V : 0) + i] : NaN);
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    for (const it of items) {
      const [x, y, z] = it.s, near = z > 0, alpha = near ? 1 : 0.32;
      ctx.globalAlpha = alpha;
      if (it.kind === "in") {
        if (state.show.drift && r.drift) {
          // the star before the retraction, d times its unit vector: out along its radius (d > 1, pink) or in
          // (d < 1, blue), exaggerated by `gain`. Seen head-on a radius has no length, so a ring of the same
          // size shows it too.
          const d = driftAt(it.i, false);
          if (Number.isFinite(d) && d !== 1) {
            const f = 1 + (d - 1) * gain, q = scr([it.p[0] * f, it.p[1] * f, it.p[2] * f]);
            ctx.strokeStyle = d > 1 ? "#ff5d9e" : "#5cc8ff";
            ctx.lineWidth = 1.4;
            ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(q[0], q[1]); ctx.stroke();
            ctx.beginPath(); ctx.arc(q[0], q[1], 2.5, 0, 2 * Math.PI); ctx.stroke();
            const ring = RHO * Math.abs(d - 1) * gain;
            if (ring > 1.5) {
              ctx.lineWidth = 1;
              ctx.beginPath(); ctx.arc(x, y, 4 + ring, 0, 2 * Math.PI); ctx.stroke();
            }
          }
        }
        let rad = r.sphere ? 4 : Math.max(1.5, Math.min(11, 4 * st.wteN[it.i] / r.normMedian));
        if (!near) rad *= 0.75;
        const ch = labels[it.i], sel = state.selected.includes(ch);
        ctx.fillStyle = it.i === bos ? "#ffd166" : VOWELS.has(ch) ? "#ffe0a3" : "#f4f7ff";
        ctx.beginPath();
        ctx.arc(x, y, rad, 0, 2 * Math.PI);
        ctx.fill();
        if (sel) {
          ctx.strokeStyle = "#ffd166"; ctx.lineWidth = 2;
          ctx.beginPath(); ctx.arc(x, y, rad + 4, 0, 2 * Math.PI); ctx.stroke();
        }
        ctx.font = (near ? "600 13px " : "11px ") + "IPAexGothic, sans-serif";
        ctx.fillStyle = it.i === bos ? "#ffd166" : "#e8eeff";
        ctx.fillText(ch, x + rad + 2, y - 1);
      } else {
        const p = view.probs ? view.probs[it.i] : 0;
        ctx.fillStyle = "#ff9a76";
        const h = (near ? 4 : 3) + 7 * Math.sqrt(p);  // the more probable, the bigger
        ctx.beginPath();
        ctx.moveTo(x, y - h); ctx.lineTo(x + h, y); ctx.lineTo(x, y + h); ctx.lineTo(x - h, y); ctx.closePath();
        ctx.fill();
        if (near && view.probs && p >= 0.04) {
          ctx.font = "11px IPAexGothic, sans-serif";
          ctx.fillStyle = "#ffc2ab";
          ctx.fillText(`${labels[it.i]} ${(100 * p).toFixed(0)}%`, x + h + 2, y + 8);
        }
      }
    }
    ctx.globalAlpha = 1;
    // the name's path
    if (state.show.path && view.chains) {
      const n = view.chains.length;
      for (const l of view.links) polyline(l, "#67e3c0", 1.2, [5, 4], 0.3);
      for (const pull of view.pulls || []) polyline(pull, "#67e3c0", 1, [1.5, 3], 0.3);
      view.chains.forEach((chain, tpos) => {
        for (const seg of chain.segs) polyline(seg, "#67e3c0", 2.2, null, 0.35);
        chain.points.forEach((pt, s) => {
          const [x, y, z] = scr(pt), last = s === chain.points.length - 1;
          ctx.globalAlpha = z > 0 ? 1 : 0.4;
          ctx.fillStyle = last ? "#67e3c0" : "#0a1226";
          ctx.strokeStyle = "#67e3c0";
          ctx.lineWidth = 1.5;
          ctx.beginPath();
          ctx.arc(x, y, last ? 4.5 : 2.5, 0, 2 * Math.PI);
          ctx.fill();
          ctx.stroke();
          if (last) {
            if (tpos === n - 1) { ctx.beginPath(); ctx.arc(x, y, 8, 0, 2 * Math.PI); ctx.stroke(); }
            ctx.font = "600 12px IPAexGothic, sans-serif";
            ctx.fillStyle = "#aef5df";
            const tok = view.tokens[tpos];
            ctx.fillText(`${tpos}:${tok === bos ? "BOS" : labels[tok]}`, x + 9, y - 9);
          }
        });
        ctx.globalAlpha = 1;
      });
    }
  }

  // the train loss of one step (batch 1) jumps by a nat: the page shows its running mean over a 20th of the run
  function smooth(curve) {
    if (curve.smoothed) return curve.smoothed;
    const w = Math.max(1, Math.round(curve.length / 20)), out = [];
    let sum = 0;
    for (let j = 0; j < curve.length; j++) {
      sum += curve[j][1];
      if (j >= w) sum -= curve[j - w][1];
      out.push([curve[j][0], sum / Math.min(j + 1, w)]);  // (the first points: the mean so far)
    }
    curve.smoothed = out;
    return out;
  }
  function drawLoss() {
    const ctx = lossCanvas.ctx, W = 364, H = 128, L = 34, B = 18, Tp = 6, Rp = 8;
    ctx.clearRect(0, 0, W, H);
    let lo = Infinity, hi = -Infinity, xmax = 1;
    for (const r of runs) {
      for (const [s, v] of smooth(r.data.train).concat(r.data.val)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      xmax = Math.max(xmax, r.data.planned, r.data.steps[r.data.steps.length - 1]);
    }
    if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
    if (hi - lo < 1e-6) { hi += 0.5; lo -= 0.5; }
    const X = (s) => L + ((W - L - Rp) * s) / xmax, Y = (v) => Tp + ((H - Tp - B) * (hi - v)) / (hi - lo);
    ctx.strokeStyle = "#24314f";
    ctx.lineWidth = 1;
    ctx.strokeRect(L, Tp, W - L - Rp, H - Tp - B);
    ctx.fillStyle = "#8e9bb8";
    ctx.font = "10px IPAexGothic, sans-serif";
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const v of [lo, (lo + hi) / 2, hi]) ctx.fillText(v.toFixed(2), L - 4, Y(v));
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (const s of [0, Math.round(xmax / 2), xmax]) ctx.fillText(String(s), X(s), H - B + 3);
    runs.forEach((r, ri) => {
      const col = RUN_COLORS[ri % RUN_COLORS.length];
      ctx.strokeStyle = col;
      ctx.globalAlpha = 0.6;
      ctx.beginPath();
      smooth(r.data.train).forEach(([s, v], j) => (j ? ctx.lineTo(X(s), Y(v)) : ctx.moveTo(X(s), Y(v))));
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
    const x = X(currentStep());
    ctx.strokeStyle = "#ffd166";
    ctx.setLineDash([3, 3]);
    ctx.beginPath(); ctx.moveTo(x, Tp); ctx.lineTo(x, H - B); ctx.stroke();
    ctx.setLineDash([]);
  }

  function drawFrame() {
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
  const pct = (x) => (100 * x).toPrecision(2) + "%";
  function updateText() {
    document.documentElement.lang = state.lang;
    for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
    document.getElementById("lang").textContent = t("lang");
    document.getElementById("play").textContent = state.playing ? t("pause") : t("play");
    document.getElementById("stepLabel").textContent = t("step", { s: currentStep(), n: Math.max(...runs.map((r) => r.data.planned)), i: state.index + 1, m: allSteps.length });
    document.getElementById("tempLabel").textContent = t("tempLabel", { T: state.T.toFixed(2) });
    const C = runs[0].C;
    runs.forEach((r, ri) => {
      const v = r.view, step = r.data.steps[v.k];
      r.title.innerHTML = `<span style="color:${RUN_COLORS[ri % RUN_COLORS.length]}">●</span> ` +
        `<span class="norm">${esc(t(r.data.config.norm))}</span><span class="folder">${esc(r.data.name)}</span>`;
      const tl = lossAt(smooth(r.data.train), step), vl = lossAt(r.data.val, step), st = stars(r, v.k);
      const lines = [t("info1", { s: step, tl: tl ? tl[1].toFixed(3) : "–", vl: vl ? vl[1].toFixed(3) : "–", vs: vl ? vl[0] : "–" }),
        t("info2", { p: (100 * (r.data.share[0] + r.data.share[1] + r.data.share[2])).toFixed(0) })];
      if (r.sphere) {
        const d = driftMax(r, v.k);
        lines.push(t("infoUnit"));
        lines.push(Number.isNaN(d) ? t("infoDrift0") : t("infoDrift", { d: pct(d), G: driftGain(r, v.k) }));
      } else {
        lines.push(t("infoNorm", { lo: Math.min(...st.wteN).toFixed(2), hi: Math.max(...st.wteN).toFixed(2) }));
      }
      r.info.innerHTML = lines.join("<br>");
    });
    // the prefix
    const status = document.getElementById("prefixStatus"), errs = runs.map((r) => r.view.error).filter(Boolean);
    status.className = "small" + (errs.length ? " warn" : "");
    status.textContent = errs.length ? errs.join(" · ") : t("prefixOk", { n: Array.from(state.prefix).length + 1, chars: Array.from(state.prefix).map((c) => " " + c).join("") });
    // probabilities
    const probs = document.getElementById("probs");
    probs.innerHTML = runs.map((r, ri) => {
      const v = r.view, head = `<div class="who" style="color:${RUN_COLORS[ri % RUN_COLORS.length]}">● ${esc(t(r.data.config.norm + "Short"))} ${esc(r.data.name)}</div>`;
      if (!v.probs) return `<div class="probCol">${head}<div class="small">${esc(t("probsNone"))}</div></div>`;
      const order = v.probs.map((p, i) => [p, i]).sort((a, b) => b[0] - a[0]).slice(0, 8);
      return `<div class="probCol">${head}` + order.map(([p, i]) =>
        `<div class="probRow" data-token="${esc(r.data.labels[i])}"><span class="ch">${esc(r.data.labels[i])}</span>` +
        `<span class="barBox"><span class="bar" style="display:block;width:${(100 * p).toFixed(1)}%"></span></span>` +
        `<span class="p">${p.toFixed(3)}</span></div>`).join("") + "</div>";
    }).join("");
    // cosine of the picked stars
    const cos = document.getElementById("cosine");
    if (state.selected.length < 2) {
      cos.innerHTML = esc(t("cosHint", { C }));
    } else {
      const [a, b] = state.selected;
      cos.innerHTML = `<span class="pair">${esc(a)} · ${esc(b)}</span><br>` + runs.map((r) => {
        const i = r.data.labels.indexOf(a), j = r.data.labels.indexOf(b);
        if (i < 0 || j < 0) return esc(r.data.name) + ": –";
        const p = M.snapshot(r, r.view.k), st = stars(r, r.view.k);
        const c16 = M.dot(p.wte, p.wte, i * r.C, j * r.C, r.C) / (norm(p.wte, i * r.C, r.C) * norm(p.wte, j * r.C, r.C));
        const c3 = st.wte[i][0] * st.wte[j][0] + st.wte[i][1] * st.wte[j][1] + st.wte[i][2] * st.wte[j][2];
        return t("cosLine", { run: esc(t(r.data.config.norm + "Short")), c: c16.toFixed(4), C: r.C, c3: c3.toFixed(3) });
      }).join("<br>");
    }
    const anyDrift = runs.some((r) => r.drift);
    document.getElementById("notes").innerHTML = TEXT[state.lang].notes
      .filter((_, i) => i !== 2 || anyDrift)
      .map((s) => "<p>" + s.split("{C}").join(String(C)) + "</p>").join("");
    buildOptions();
  }

  function buildOptions() {
    const opts = [["stars", "optStars", "●", "#f4f7ff"], ["out", "optOut", "◆", "#ff9a76"],
      ["path", "optPath", "◎", "#67e3c0"], ["trail", "optTrail", "∿", "#c9d2e8"]];
    if (runs.some((r) => r.sphere)) opts.splice(3, 0, ["drift", "optDrift", "⟋", "#ff5d9e"]);
    const box = document.getElementById("options");
    box.innerHTML = opts.map(([key, label, sym, col]) =>
      `<label class="${state.show[key] ? "" : "off"}"><input type="checkbox" data-opt="${key}"${state.show[key] ? " checked" : ""}>` +
      `<span class="swatch" style="color:${col}">${sym}</span>${esc(t(label))}</label>`).join("");
  }

  function update() {
    computeAll();
    updateText();
    redraw();
  }

  // ------------------------------------------------------------------------------------------ controls
  const slider = document.getElementById("replay");
  slider.max = String(allSteps.length - 1);
  state.index = allSteps.length - 1;
  slider.value = String(state.index);
  slider.addEventListener("input", () => { state.index = Number(slider.value); update(); });
  function setPlaying(on) {
    state.playing = on;
    clearInterval(state.timer);
    if (on) {
      if (state.index >= allSteps.length - 1) state.index = 0;
      state.timer = setInterval(() => {
        if (state.index >= allSteps.length - 1) { setPlaying(false); return; }
        state.index += 1;
        slider.value = String(state.index);
        update();
      }, 160);
    }
    update();
  }
  document.getElementById("play").addEventListener("click", () => setPlaying(!state.playing));
  document.getElementById("lang").addEventListener("click", () => { state.lang = state.lang === "ja" ? "en" : "ja"; update(); });
  const prefixInput = document.getElementById("prefix");
  const hasAll = (chars) => runs.every((r) => Array.from(chars).every((c) => r.data.labels.includes(c)));
  prefixInput.placeholder = hasAll("えみ") ? "えみ" : hasAll("em") ? "em" : "";
  prefixInput.addEventListener("input", () => { state.prefix = prefixInput.value; update(); });
  const tempInput = document.getElementById("temp");
  tempInput.addEventListener("input", () => { state.T = 0.2 * Math.pow(25, Number(tempInput.value) / 100); update(); });
  document.getElementById("options").addEventListener("change", (e) => {
    const key = e.target.dataset && e.target.dataset.opt;
    if (key) { state.show[key] = e.target.checked; update(); }
  });

  // one camera for every sky: dragging any of them turns all; a click (no drag) picks the nearest star
  for (const r of runs) {
    const c = r.canvas;
    c.addEventListener("pointerdown", (e) => {
      state.drag = { x: e.clientX, y: e.clientY, moved: 0 };
      c.setPointerCapture(e.pointerId);
    });
    c.addEventListener("pointermove", (e) => {
      if (!state.drag) return;
      const dx = e.clientX - state.drag.x, dy = e.clientY - state.drag.y;
      state.drag.x = e.clientX;
      state.drag.y = e.clientY;
      state.drag.moved += Math.abs(dx) + Math.abs(dy);
      state.R = mul(mul(rotY(dx * 0.01), rotX(dy * 0.01)), state.R);
      redraw();
    });
    c.addEventListener("pointerup", (e) => {
      const d = state.drag;
      state.drag = null;
      if (!d || d.moved > 4) return;
      const box = c.getBoundingClientRect(), x = e.clientX - box.left, y = e.clientY - box.top;
      const hit = pick(r, x, y);
      if (hit !== null) {
        const ch = r.data.labels[hit];
        state.selected = state.selected.includes(ch) ? state.selected.filter((s) => s !== ch)
          : state.selected.concat([ch]).slice(-2);
        update();
      }
    });
  }
  function pick(r, x, y) {  // the nearest input star within 14 px, near side first
    const st = stars(r, r.view.k);
    let best = null, bestD = 14 * 14;
    for (let i = 0; i < r.V; i++) {
      const [sx, sy, z] = screen(st.wte[i]);
      const d = (sx - x) ** 2 + (sy - y) ** 2 - (z > 0 ? 30 : 0);
      if (d < bestD) { bestD = d; best = i; }
    }
    return best;
  }

  // ------------------------------------------------------------------------------------------ for the tests
  window.__planetarium = {
    drawFrame,
    runs: runs.length,
    state,
    // the page's forward pass on run ri, snapshot k: plain arrays, to compare with numpy_engine.forward_np
    forward(ri, k, tokens) {
      const res = M.forward(runs[ri], k, tokens);
      return { hidden: res.hidden.map((stage) => stage.map((h) => Array.from(h))), logits: res.logits.map((z) => Array.from(z)) };
    },
    softmax: (z, T) => M.softmax(z, T),
    turn(dx, dy) { state.R = mul(mul(rotY(dx), rotX(dy)), state.R); },
    setIndex(i) {  // the replay slider's position (clamped), with everything it recomputes
      state.index = Math.max(0, Math.min(allSteps.length - 1, i));
      slider.value = String(state.index);
      update();
    },
    // where input star `label` of run ri is drawn, in pixels from its canvas's top left corner
    starAt(ri, label) {
      const r = runs[ri], [x, y, z] = screen(stars(r, r.view.k).wte[r.data.labels.indexOf(label)]);
      return { x, y, near: z > 0 };
    },
    view: (ri) => ({ k: runs[ri].view.k, probs: runs[ri].view.probs, error: runs[ri].view.error,
                     positions: runs[ri].view.chains ? runs[ri].view.chains.length : 0 }),
  };
  update();
  drawFrame();
})();
