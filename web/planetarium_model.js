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

  // One run of the page's data: the arrays decoded once, snapshot k's weights built on demand (and kept).
  function decodeRun(run) {
    const cfg = run.config, V = cfg.vocab_size, C = cfg.n_embd, T = cfg.block_size, L = cfg.n_layer;
    const K = run.steps.length;
    const r = {
      data: run, cfg, V, C, T, L, K, H: cfg.n_head, hd: C / cfg.n_head, sphere: cfg.norm === "sphere",
      stars: f64(run.stars),   // K x (wte V*C | lm_head V*C), float64
      rest: f32(run.rest),     // K x (wpe T*C | per layer wq, wk, wv, wo, fc1, fc2), float32 (cast to float64)
      scales: run.scales ? f64(run.scales) : null,  // K x S effective scales, float64
      drift: run.drift ? f64(run.drift) : null,     // K x (wte V | lm_head V): norms before the retraction
      cache: new Map(),
    };
    r.restSize = T * C + 12 * L * C * C;
    r.scaleSize = r.sphere ? 7 * L * C + V : 0;
    return r;
  }

  function snapshot(r, k) {
    if (r.cache.has(k)) return r.cache.get(k);
    const V = r.V, C = r.C, T = r.T, L = r.L;
    const s0 = k * 2 * V * C;
    const p = { wte: r.stars.subarray(s0, s0 + V * C), lm: r.stars.subarray(s0 + V * C, s0 + 2 * V * C) };
    const rest = Float64Array.from(r.rest.subarray(k * r.restSize, (k + 1) * r.restSize));
    let o = 0;
    const take = (n) => { const a = rest.subarray(o, o + n); o += n; return a; };
    p.wpe = take(T * C);
    p.layers = [];
    for (let l = 0; l < L; l++) {
      p.layers.push({ wq: take(C * C), wk: take(C * C), wv: take(C * C), wo: take(C * C), fc1: take(4 * C * C),
                      fc2: take(4 * C * C) });
    }
    if (r.sphere) {  // effective scales: alpha_A | alpha_M | s_qk | s_u | s_z, layers concatenated
      const e = r.scales.subarray(k * r.scaleSize, (k + 1) * r.scaleSize);
      let q = 0;
      const cut = (n) => { const a = e.subarray(q, q + n); q += n; return a; };
      p.alphaA = cut(L * C); p.alphaM = cut(L * C); p.sqk = cut(L * C); p.su = cut(4 * L * C); p.sz = cut(V);
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
  function attention(qs, ks, vs, t, H, hd, scale) {
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
  // each residual step moves toward), and logits[position] (V each).
  function forward(r, k, tokens) {
    const p = snapshot(r, k), C = r.C, H = r.H, hd = r.hd, V = r.V, n = tokens.length;
    let hs = [];
    for (let t = 0; t < n; t++) {
      const x = new Float64Array(C);
      for (let i = 0; i < C; i++) x[i] = p.wte[tokens[t] * C + i] + p.wpe[t * C + i];
      hs.push(r.sphere ? l2normalize(x) : rmsnorm(x));
    }
    const hidden = [hs], proposals = [];
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
      const mid = [], out = [], propA = [], propM = [];
      for (let t = 0; t < n; t++) {
        const y = attention(qs, ks, vs, t, H, hd, scale);
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
          u = matvec(w.fc1, mid[t], 4 * C, C);
          for (let i = 0; i < 4 * C; i++) u[i] *= p.su[l * 4 * C + i];
        } else {
          u = matvec(w.fc1, rmsnorm(mid[t]), 4 * C, C);
        }
        for (let i = 0; i < 4 * C; i++) if (!(u[i] > 0)) u[i] = 0;
        const m = matvec(w.fc2, u, C, 4 * C);
        if (r.sphere) {
          const [ho, bn] = sphereResidual(mid[t], m, p.alphaM.subarray(l * C, (l + 1) * C));
          out.push(ho); propM.push(bn);
        } else {
          out.push(add(mid[t], m));
        }
      }
      hidden.push(mid, out);
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
    return { hidden, proposals, logits, cosines };
  }

  // softmax(logits / T), the probabilities the page lists (max subtracted first, as utils.softmax_np)
  function softmax(z, T) {
    let mx = -Infinity;
    for (const v of z) if (v / T > mx) mx = v / T;
    const e = Array.from(z, (v) => Math.exp(v / T - mx));
    const s = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / s);
  }

  return { decodeRun, snapshot, forward, softmax, l2normalize, dot };
})();

if (typeof module !== "undefined") module.exports = PlanetModel;
