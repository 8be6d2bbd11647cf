// planetarium_model.js -- the planetarium page's model: decode a run's embedded snapshots, and the GPT forward
// pass of numpy_engine.forward_np for one sequence (both norms), in plain JavaScript float64.
//
// No DOM here: planetarium.py embeds this file in the page, and tests/test_planetarium.py runs it in Node to
// check it against forward_np on exactly the weights the page holds (to 1e-9).
"use strict";

const PlanetModel = (function () {
  function bytes(b64) {
    const s = atob(b64);
    const out = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out;
  }
  // little-endian arrays, as planetarium.py writes them (numpy '<f8', '<f4')
  function f64(b64) { return new Float64Array(bytes(b64).buffer); }
  function f32(b64) { return new Float32Array(bytes(b64).buffer); }

  function i8(b64) { return new Int8Array(bytes(b64).buffer); }
  function i16(b64) { return new Int16Array(bytes(b64).buffer); }

  // One run of the page's data: its weights decoded once (every snapshot, float64), snapshot k's matrices as views.
  // The layout (which matrix lies where, the effective scales' columns) comes with the data from model_config, so
  // this file has no formula for it.
  function decodeRun(run) {
    const cfg = run.config, K = run.steps.length, size = run.size;
    const r = {
      data: run, cfg, V: cfg.vocab_size, C: cfg.n_embd, T: cfg.block_size, L: cfg.n_layer, K, H: cfg.n_head,
      hd: cfg.n_embd / cfg.n_head, sphere: cfg.norm === "sphere", size,
      layout: new Map(run.layout.map(([key, o, shape]) => [key, { o, rows: shape[0], cols: shape[1] }])),
      held: decodeWeights(run, K, size),
      scales: run.scales ? f32(run.scales) : null,  // K x S effective scales (float32)
      drift: run.drift ? f32(run.drift) : null,     // K x (wte V | lm_head V): norm before the retraction, minus 1
      cache: new Map(),
    };
    r.scaleLayout = run.scaleLayout || [];
    r.scaleSize = r.scaleLayout.reduce((s, [, , n]) => s + n, 0);
    return r;
  }

  // planetarium.encode_weights' closed-loop delta code, undone: held[k] = held[k - 1] + code * step, row by row
  // (the first snapshot: 16-bit codes from zero), in the same order of operations as the Python encoder; in sphere
  // mode the stars (run.unitRows) are then divided by their norms again.
  function decodeWeights(run, K, size) {
    const w = run.weights, first = i16(w.first), firstStep = f32(w.firstStep);
    const codes = i8(w.codes), steps = f32(w.steps), nrows = firstStep.length;
    const held = new Float64Array(K * size), state = new Float64Array(size);
    for (let k = 0; k < K; k++) {
      const c = k === 0 ? first : codes.subarray((k - 1) * size, k * size);
      const s = k === 0 ? firstStep : steps.subarray((k - 1) * nrows, k * nrows);
      let row = 0;
      for (const [, o, [rows, cols]] of run.layout) {
        for (let i = 0; i < rows; i++, row++) {
          const step = s[row], base = o + i * cols;
          for (let j = base; j < base + cols; j++) state[j] = state[j] + c[j] * step;
        }
      }
      held.set(state, k * size);
    }
    for (const key of run.unitRows) {
      const [, o, [rows, cols]] = run.layout.find((e) => e[0] === key);
      for (let k = 0; k < K; k++) {
        for (let i = 0; i < rows; i++) {
          const base = k * size + o + i * cols;
          let n = 0;
          for (let j = base; j < base + cols; j++) n += held[j] * held[j];
          n = Math.sqrt(n);
          for (let j = base; j < base + cols; j++) held[j] = held[j] / n;
        }
      }
    }
    return held;
  }

  function snapshot(r, k) {
    if (r.cache.has(k)) return r.cache.get(k);
    const at = (key) => {
      const e = r.layout.get(key), o = k * r.size + e.o;
      return r.held.subarray(o, o + e.rows * e.cols);
    };
    const p = { wte: at("wte"), lm: at("lm_head"), wpe: at("wpe"), layers: [] };
    for (let l = 0; l < r.L; l++) {
      p.layers.push({ wq: at(`layer${l}.attn_wq`), wk: at(`layer${l}.attn_wk`), wv: at(`layer${l}.attn_wv`),
                      wo: at(`layer${l}.attn_wo`), fc1: at(`layer${l}.mlp_fc1`), fc2: at(`layer${l}.mlp_fc2`) });
    }
    if (r.sphere) {  // effective scales, each a vector with the layers concatenated
      const e = Float64Array.from(r.scales.subarray(k * r.scaleSize, (k + 1) * r.scaleSize));
      const cut = {};
      for (const [name, o, n] of r.scaleLayout) cut[name] = e.subarray(o, o + n);
      p.alphaA = cut.alpha_A; p.alphaM = cut.alpha_M; p.sqk = cut.s_qk; p.su = cut.s_u; p.sz = cut.s_z;
    }
    r.cache.set(k, p);
    return p;
  }

  // y = W x for W stored [out, in] row-major (like the engine's x.dot(W.T))
  function matvec(W, x, rows, cols, xo) {
    const y = new Float64Array(rows);
    xo = xo || 0;
    for (let i = 0; i < rows; i++) {
      let s = 0;
      const w = i * cols;
      for (let j = 0; j < cols; j++) s += W[w + j] * x[xo + j];
      y[i] = s;
    }
    return y;
  }
  function dot(a, b, ao, bo, n) {
    let s = 0;
    for (let i = 0; i < n; i++) s += a[ao + i] * b[bo + i];
    return s;
  }
  function rmsnorm(x) {  // numpy_engine.rmsnorm_fused: x * (mean(x^2) + 1e-5)^-0.5
    let r = dot(x, x, 0, 0, x.length);
    r *= 1.0 / x.length;
    r += 1e-5;
    r = Math.pow(r, -0.5);
    return x.map((v) => v * r);
  }
  function l2normalize(x, o, n) {  // sphere.l2_normalize_np: x / max(|x|, 1e-12), on x[o .. o + n)
    o = o || 0;
    n = n || x.length;
    let s = Math.sqrt(dot(x, x, o, o, n));
    if (s < 1e-12) s = 1e-12;
    const y = new Float64Array(n);
    for (let i = 0; i < n; i++) y[i] = x[o + i] / s;
    return y;
  }
  function add(a, b) { return a.map((v, i) => v + b[i]); }

  // causal attention of position t over positions 0..t, every head: q, k, v are per-position (C) vectors
  function attention(qs, ks, vs, t, H, hd, scale, weights) {
    const y = new Float64Array(H * hd);
    for (let h = 0; h < H; h++) {
      const o = h * hd;
      const w = new Float64Array(t + 1);
      let mx = -Infinity;
      for (let u = 0; u <= t; u++) {
        w[u] = dot(qs[t], ks[u], o, o, hd) * scale;
        if (w[u] > mx) mx = w[u];
      }
      let z = 0;
      for (let u = 0; u <= t; u++) { w[u] = Math.exp(w[u] - mx); z += w[u]; }
      if (weights) weights.push(Array.from(w, (v) => v / z));
      for (let u = 0; u <= t; u++) {
        const a = w[u] / z;
        for (let d = 0; d < hd; d++) y[o + d] += a * vs[u][o + d];
      }
    }
    return y;
  }

  // nGPT's residual step: h <- Norm(h + alpha (Norm(block) - h)); returns [new h, Norm(block)]
  function sphereResidual(h, block, alpha) {
    const bn = l2normalize(block);
    const r = new Float64Array(h.length);
    for (let i = 0; i < h.length; i++) r[i] = (bn[i] - h[i]) * alpha[i] + h[i];
    return [l2normalize(r), bn];
  }

  // The forward pass of numpy_engine.forward_np for one sequence of token ids (at most block_size of them).
  // Returns hidden[stage][position] (stage 0: the embedding after its norm, then after each attention and MLP
  // block: forward_np's cache["hidden"]), proposals[stage - 1][position] (sphere: the normalized block output
  // each residual step moves toward), logits[position] (V each), and attention[layer][head]: the last position's
  // attention weights over positions 0..n-1.
  function forward(r, k, tokens) {
    const p = snapshot(r, k), C = r.C, H = r.H, hd = r.hd, V = r.V, n = tokens.length;
    const F = r.layout.get("layer0.mlp_fc1") ? r.layout.get("layer0.mlp_fc1").rows : 0;  // the MLP's width
    let hs = [];
    for (let t = 0; t < n; t++) {
      const x = new Float64Array(C);
      for (let i = 0; i < C; i++) x[i] = p.wte[tokens[t] * C + i] + p.wpe[t * C + i];
      hs.push(r.sphere ? l2normalize(x) : rmsnorm(x));
    }
    const hidden = [hs], proposals = [], lastAttention = [];
    for (let l = 0; l < r.L; l++) {
      const w = p.layers[l];
      const qs = [], ks = [], vs = [];
      for (let t = 0; t < n; t++) {
        const xin = r.sphere ? hs[t] : rmsnorm(hs[t]);
        let q = matvec(w.wq, xin, C, C), kk = matvec(w.wk, xin, C, C);
        const v = matvec(w.wv, xin, C, C);
        if (r.sphere) {  // each head's q and k: unit vectors times s_qk
          const qn = new Float64Array(C), kn = new Float64Array(C);
          for (let h = 0; h < H; h++) {
            const a = l2normalize(q, h * hd, hd), b = l2normalize(kk, h * hd, hd);
            for (let d = 0; d < hd; d++) {
              qn[h * hd + d] = a[d] * p.sqk[l * C + h * hd + d];
              kn[h * hd + d] = b[d] * p.sqk[l * C + h * hd + d];
            }
          }
          q = qn; kk = kn;
        }
        qs.push(q); ks.push(kk); vs.push(v);
      }
      const scale = r.sphere ? Math.pow(hd, 0.5) : Math.pow(hd, -0.5);
      const mid = [], out = [], propA = [], propM = [], lastWeights = [];
      for (let t = 0; t < n; t++) {
        const y = attention(qs, ks, vs, t, H, hd, scale, t === n - 1 ? lastWeights : null);
        const a = matvec(w.wo, y, C, C);
        if (r.sphere) {
          const [hm, bn] = sphereResidual(hs[t], a, p.alphaA.subarray(l * C, (l + 1) * C));
          mid.push(hm); propA.push(bn);
        } else {
          mid.push(add(hs[t], a));
        }
      }
      for (let t = 0; t < n; t++) {
        let u;
        if (r.sphere) {
          u = matvec(w.fc1, mid[t], F, C);
          for (let i = 0; i < F; i++) u[i] *= p.su[l * F + i];
        } else {
          u = matvec(w.fc1, rmsnorm(mid[t]), F, C);
        }
        for (let i = 0; i < F; i++) if (!(u[i] > 0)) u[i] = 0;
        const m = matvec(w.fc2, u, C, F);
        if (r.sphere) {
          const [ho, bn] = sphereResidual(mid[t], m, p.alphaM.subarray(l * C, (l + 1) * C));
          out.push(ho); propM.push(bn);
        } else {
          out.push(add(mid[t], m));
        }
      }
      hidden.push(mid, out);
      lastAttention.push(lastWeights);
      if (r.sphere) proposals.push(propA, propM);
      hs = out;
    }
    const logits = [], cosines = [];
    for (let t = 0; t < n; t++) {
      const z = matvec(p.lm, hs[t], V, C);
      if (r.sphere) {  // cos theta with each unit output star, times s_z
        cosines.push(Float64Array.from(z));
        for (let i = 0; i < V; i++) z[i] *= p.sz[i];
      }
      logits.push(z);
    }
    return { hidden, proposals, logits, cosines, attention: lastAttention };
  }

  // softmax(logits / T), the probabilities the page lists (max subtracted first, as utils.softmax_np)
  function softmax(z, T) {
    let mx = -Infinity;
    for (const v of z) if (v / T > mx) mx = v / T;
    const e = Array.from(z, (v) => Math.exp(v / T - mx));
    const s = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / s);
  }

  // points along the great-circle arc from unit vector u to v (any dimension), f in [0, 1]: slerp
  function slerp(u, v, f) {
    const n = u.length, c = Math.max(-1, Math.min(1, dot(u, v, 0, 0, n))), th = Math.acos(c);
    const out = new Float64Array(n);
    if (th < 1e-9) { for (let i = 0; i < n; i++) out[i] = u[i] + f * (v[i] - u[i]); return out; }
    const a = Math.sin((1 - f) * th) / Math.sin(th), b = Math.sin(f * th) / Math.sin(th);
    for (let i = 0; i < n; i++) out[i] = a * u[i] + b * v[i];
    return out;
  }

  return { decodeRun, snapshot, forward, softmax, l2normalize, dot, slerp };
})();

if (typeof module !== "undefined") module.exports = PlanetModel;
