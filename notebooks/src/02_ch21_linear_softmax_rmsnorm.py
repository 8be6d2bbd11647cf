# %% [markdown]
# # 第21章 microgpt のユーティリティ関数：`linear` / `softmax` / `rmsnorm`
#
# **対応する章:** microgpt 本 第21章「microgpt のユーティリティ関数」。
# 第22章の `gpt` が何度も呼ぶ3つの部品を、章の最小例そのままで動かします。
#
# このノートで見られるもの：
#
# 1. 章の最小例 — `linear` → 11、`softmax([1, 2])`、`rmsnorm([3, 4])` — の値、計算グラフ、`backward()` の勾配（手計算と照合）。
# 2. LayerNorm と RMSNorm を同じベクトルに並べて適用し、「平均を引くかどうか」の違いを図で見る。
# 3. スカラー版（`Value` のリスト）と NumPy 版の双子（`linear_np` など、順伝播と明示的な逆伝播）が
#    float64 の精度で一致することを数値で示す。
#
# 関数はすべて `utils.py` から import します（章のコードそのもの）。

# %%
import sys
from pathlib import Path

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists())
sys.path.insert(0, str(ROOT))  # value.py, utils.py, ... live at the repo root

import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np

import utils
from utils import linear, rmsnorm, softmax
from value import Value, draw_graph, trace_backward, zero_grad

plt.rcParams["figure.dpi"] = 110
np.set_printoptions(precision=6, suppress=True)

# %% [markdown]
# ## 1. `linear`：行ごとの内積
#
# ```python
# def linear(x, w):
#     return [sum(wi * xi for wi, xi in zip(wo, x)) for wo in w]
# ```
#
# `w` は「行が出力次元、列が入力次元」のリストのリスト。章の最小例は入力2次元・出力1ニューロン：
# $x = [1, 2]$、$w = [[3, 4]]$ で $y_0 = 3 \times 1 + 4 \times 2 = 11$。

# %%
x = [Value(1.0), Value(2.0)]
w = [[Value(3.0), Value(4.0)]]
y = linear(x, w)
print("linear(x, w) =", [v.data for v in y])
assert y[0].data == 11

names = {x[0]: "x0", x[1]: "x1", w[0][0]: "w00", w[0][1]: "w01", y[0]: "y0"}
rows = trace_backward(y[0], labels=names)

# %%
ax = draw_graph(y[0], labels=names)
ax.set_title("linear: y0 = w00*x0 + w01*x1 = 11")
plt.show()

# %% [markdown]
# `sum` は 0 から足し始めますが、`value.py` は `0 + v` を `v` そのものとして返すので、余分なノードは増えません。
# 勾配は $\partial y_0/\partial x_i = w_{0i}$、$\partial y_0/\partial w_{0i} = x_i$：

# %%
print("x.grad =", [v.grad for v in x], " (= w[0] = [3, 4])")
print("w.grad =", [[v.grad for v in row] for row in w], " (= x = [1, 2])")

# %% [markdown]
# ## 2. `softmax`：logits を確率に
#
# ```python
# def softmax(logits):
#     max_val = max(val.data for val in logits)
#     exps = [(val - max_val).exp() for val in logits]
#     total = sum(exps)
#     return [e / total for e in exps]
# ```
#
# 最小例 `[1, 2]`：$\exp(1-2) = e^{-1}$、$\exp(2-2) = 1$、確率は $[e^{-1}, 1]/(1 + e^{-1}) = [0.2689, 0.7311]$。
# `max_val` は `.data` から取ったただの数なので、グラフの中では定数（ノードにならない）です。

# %%
logits = [Value(1.0), Value(2.0)]
probs = softmax(logits)
expected = np.exp([-1.0, 0.0]) / np.exp([-1.0, 0.0]).sum()
print("softmax([1, 2]) =", [p.data for p in probs], " sum =", sum(p.data for p in probs))
print("by hand          =", expected.tolist())
assert np.allclose([p.data for p in probs], expected, rtol=1e-15)

names = {logits[0]: "z0", logits[1]: "z1", probs[0]: "p0", probs[1]: "p1"}
rows = trace_backward(probs[1], labels=names)

# %%
ax = draw_graph(probs[1], labels=names)
ax.set_title("softmax([1, 2]): the graph of p1")
plt.show()

# %% [markdown]
# $p_1$ の勾配は $\partial p_1/\partial z_j = p_1(\delta_{1j} - p_j)$、つまり $[-p_0 p_1,\ p_1(1 - p_1)] = [-0.1966, 0.1966]$。
# 出力ごとに `backward()` を呼べばヤコビアン全体 $J = \mathrm{diag}(p) - pp^\top$ が得られます
# （各回の前に `zero_grad` で葉の勾配を消す）。和が 1 に固定されているので、各行の和は 0 です。

# %%
J = np.zeros((2, 2))
for i in range(2):
    zero_grad(logits)
    probs[i].backward()
    J[i] = [z.grad for z in logits]
p = np.array([v.data for v in probs])
print("Jacobian from backward():\n", J)
print("diag(p) - p p^T:\n", np.diag(p) - np.outer(p, p))
assert np.allclose(J, np.diag(p) - np.outer(p, p), atol=1e-15)

# %% [markdown]
# ## 3. `rmsnorm`：二乗平均の平方根でスケール
#
# ```python
# def rmsnorm(x):
#     ms = sum(xi * xi for xi in x) / len(x)
#     scale = (ms + 1e-5) ** -0.5
#     return [xi * scale for xi in x]
# ```
#
# 最小例 `[3, 4]`：$ms = (9 + 16)/2 = 12.5$、$scale = (12.5 + 10^{-5})^{-1/2} \approx 1/\sqrt{12.5}$、
# 出力 $\approx [0.8485, 1.1314]$。出力の二乗平均はほぼ 1 です。

# %%
x = [Value(3.0), Value(4.0)]
y = rmsnorm(x)
scale = (12.5 + 1e-5) ** -0.5
print("rmsnorm([3, 4]) =", [v.data for v in y])
print("by hand         =", [3 * scale, 4 * scale])
print("mean square of the output =", sum(v.data**2 for v in y) / 2)
assert [v.data for v in y] == [3 * scale, 4 * scale]

names = {x[0]: "x0", x[1]: "x1", y[0]: "y0", y[1]: "y1"}
rows = trace_backward(y[0], labels=names)

# %%
ax = draw_graph(y[0], labels=names)
ax.set_title("rmsnorm([3, 4]): the graph of y0")
plt.show()

# %% [markdown]
# $y_0 = x_0 s$、$s = (m + \epsilon)^{-1/2}$、$m = (x_0^2 + x_1^2)/2$ なので
# $\partial y_0/\partial x_0 = s - s^3 x_0^2/2$、$\partial y_0/\partial x_1 = -s^3 x_0 x_1/2$。
# $x_0$ が2つの道（直接の `x0 * scale` と、`scale` を経由する道）から勾配を受け取り、それが足し合わされています。

# %%
hand = [scale - scale**3 * 3 * 3 / 2, -(scale**3) * 3 * 4 / 2]
print("backward():", [v.grad for v in x])
print("by hand:   ", hand)
assert np.allclose([v.grad for v in x], hand, rtol=1e-12)

# %% [markdown]
# ## 4. LayerNorm と RMSNorm を並べる
#
# 章の注記のとおり、LayerNorm は「中心化（平均を引く）→ 分散で割る」、RMSNorm は中心化を省いて RMS で割るだけです。
# このプロジェクトには LayerNorm はないので、比較用にここで NumPy の2行で書きます（学習可能な倍率・バイアスなし、$\epsilon = 10^{-5}$）。
# RMSNorm はプロジェクトの `utils.rmsnorm_np`（`rmsnorm` の NumPy 版）を使います。

# %%
def layernorm_np(x, eps=1e-5):
    """Comparison only (not part of the project): (x - mean) / sqrt(var + eps) over the last axis."""
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + eps)


vectors = np.array([[3.0, 4.0, 0.0, 0.0],
                    [1.0, 2.0, 3.0, 4.0],
                    [101.0, 102.0, 103.0, 104.0],
                    [-2.0, 0.0, 2.0, 4.0]])
for v in vectors:
    print(f"x = {v}\n   rmsnorm   -> {utils.rmsnorm_np(v)}\n   layernorm -> {layernorm_np(v)}")

# %% [markdown]
# `[1, 2, 3, 4]` と、それに 100 を足した `[101, …, 104]` を比べると違いがはっきりします：
# LayerNorm は平均を引くので両者は同じ出力になり、RMSNorm では大きな共通成分が残って各成分がほぼ 1 に揃ってしまいます。
#
# 2 次元の点の雲に当てると、幾何学的な違いが見えます。RMSNorm の出力は二乗平均が 1、つまりノルム $\sqrt{n} = \sqrt 2$ の **円の上** に乗ります
# （第3回の球面への $L_2$ 正規化とほぼ同じ、半径だけが違う）。2 次元の LayerNorm は平均を引くと $(t, -t)$ の形しか残らないので、
# 出力は **2点** $\pm(1, -1)$ に潰れます（2成分がほぼ等しい点だけは分散がほぼ 0 で $\epsilon$ が効き、原点の近くに残ります）。

# %%
rng = np.random.default_rng(0)
cloud = rng.normal(loc=[2.0, 1.0], scale=[1.5, 0.8], size=(400, 2))
fig, axes = plt.subplots(1, 3, figsize=(12, 4.2), sharex=True, sharey=True)
panels = [("input x (shifted Gaussian cloud)", cloud),
          ("RMSNorm: on the circle |y| = sqrt(2)", utils.rmsnorm_np(cloud)),
          ("LayerNorm: collapses to 2 points", layernorm_np(cloud))]
t = np.linspace(0, 2 * np.pi, 200)
for ax, (title, pts) in zip(axes, panels):
    ax.plot(np.sqrt(2) * np.cos(t), np.sqrt(2) * np.sin(t), color="0.8", lw=1, label="circle of radius sqrt(2)")
    ax.scatter(pts[:, 0], pts[:, 1], s=8, alpha=0.5, label="points")
    ax.set(title=title, xlabel="component 1", ylabel="component 2", aspect="equal")
    ax.legend(loc="best", fontsize=8)
plt.tight_layout()
plt.show()

# %%
x4 = np.array([[1.0, 2.0, 3.0, 4.0], [101.0, 102.0, 103.0, 104.0]])
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
idx = np.arange(4)
for k, (title, out) in enumerate([("input", x4), ("RMSNorm", utils.rmsnorm_np(x4)), ("LayerNorm", layernorm_np(x4))]):
    axes[k].bar(idx - 0.2, out[0], width=0.4, label="x = [1, 2, 3, 4]")
    axes[k].bar(idx + 0.2, out[1], width=0.4, label="x + 100")
    axes[k].set(title=title, xlabel="component index", ylabel="value", xticks=idx)
    axes[k].legend(fontsize=8, loc="center left" if k == 0 else "best")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 5. スカラー版と NumPy 版（双子）の一致
#
# `utils.py` では各スカラー関数の隣に NumPy 版が並んでいます。
#
# | スカラー版（`Value` のリスト） | NumPy 版（任意の先頭バッチ次元、最後の軸に作用） | 逆伝播 |
# |---|---|---|
# | `linear(x, w)` | `linear_np(x, w)` = `x @ w.T` | `linear_np_backward(dy, x, w)` → `(dx, dw)` |
# | `softmax(logits)` | `softmax_np(logits)` | `softmax_np_backward(dprobs, probs)` |
# | `rmsnorm(x)` | `rmsnorm_np(x)` | `rmsnorm_np_backward(dy, x)` |
# | `-softmax(z)[t].log()` の平均 | `cross_entropy_np(logits, targets)` | `cross_entropy_np_backward(logits, targets)` |
#
# バッチ形 `(2, 3, n)` のランダム入力で、スカラー版を1行ずつ動かしたものと比べます。
# 逆伝播は、上流の勾配 `dy` を固定して損失 $\sum y \cdot dy$ に `backward()` をかけたスカラーの勾配と、
# NumPy の明示的な逆伝播を比べます。誤差は $\max|a - b| / \max|b|$（相対誤差）。

# %%
rng = np.random.default_rng(21)
B, n_in, n_out = (2, 3), 8, 5
X = rng.normal(size=B + (n_in,))
W = rng.normal(size=(n_out, n_in))
DY = rng.normal(size=B + (n_out,))
DX_in = rng.normal(size=B + (n_in,))


def rel_err(a, b):
    return float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b)))


def to_values(a):
    return [Value(float(v)) for v in a]


def scalar_rows(fn, x, dy, w=None):
    """Run the scalar `fn` row by row; return (outputs, input grads, weight grads) as arrays."""
    outs, dxs, dw = [], [], np.zeros_like(w) if w is not None else None
    for i in np.ndindex(*x.shape[:-1]):
        xv = to_values(x[i])
        wv = [to_values(row) for row in w] if w is not None else None
        yv = fn(xv, wv) if w is not None else fn(xv)
        loss = sum(yj * float(g) for yj, g in zip(yv, dy[i]))
        loss.backward()
        outs.append([v.data for v in yv])
        dxs.append([v.grad for v in xv])
        if w is not None:
            dw += np.array([[v.grad for v in row] for row in wv])
    shape = x.shape[:-1]
    return np.array(outs).reshape(shape + (-1,)), np.array(dxs).reshape(x.shape), dw


errors = {}
# linear
y_s, dx_s, dw_s = scalar_rows(linear, X, DY, W)
dx_n, dw_n = utils.linear_np_backward(DY, X, W)
errors["linear fwd"] = rel_err(utils.linear_np(X, W), y_s)
errors["linear bwd dx"] = rel_err(dx_n, dx_s)
errors["linear bwd dw"] = rel_err(dw_n, dw_s)
# softmax
y_s, dx_s, _ = scalar_rows(softmax, X, DX_in)
p_n = utils.softmax_np(X)
errors["softmax fwd"] = rel_err(p_n, y_s)
errors["softmax bwd"] = rel_err(utils.softmax_np_backward(DX_in, p_n), dx_s)
# rmsnorm
y_s, dx_s, _ = scalar_rows(rmsnorm, X, DX_in)
errors["rmsnorm fwd"] = rel_err(utils.rmsnorm_np(X), y_s)
errors["rmsnorm bwd"] = rel_err(utils.rmsnorm_np_backward(DX_in, X), dx_s)

# cross-entropy: mean over all 6 positions of -log softmax(z)[t]
targets = rng.integers(0, n_in, size=B)
zs = [to_values(X[i]) for i in np.ndindex(*B)]
loss = sum(-softmax(z)[int(targets[i])].log() for z, i in zip(zs, np.ndindex(*B))) / len(zs)
loss.backward()
errors["cross-entropy fwd"] = rel_err(utils.cross_entropy_np(X, targets), loss.data)
errors["cross-entropy bwd"] = rel_err(utils.cross_entropy_np_backward(X, targets),
                                      np.array([[v.grad for v in z] for z in zs]).reshape(X.shape))

for name, e in errors.items():
    print(f"{name:18s} max relative error {e:.2e}")
assert max(errors.values()) < 1e-10

# %%
fig, ax = plt.subplots(figsize=(9, 3.6))
names_ = list(errors)
vals = [max(errors[k], 1e-18) for k in names_]   # an exact 0 would vanish on a log axis
ax.bar(range(len(names_)), vals, color="tab:blue", label="scalar Value vs NumPy twin")
for i, k in enumerate(names_):
    if errors[k] == 0:
        ax.text(i, 2e-18, "0 (exact)", ha="center", va="bottom", fontsize=8)
ax.axhline(1e-10, color="tab:red", ls="--", label="test tolerance 1e-10")
ax.axhline(np.finfo(float).eps, color="0.5", ls=":", label="float64 machine epsilon")
ax.set(yscale="log", ylim=(1e-18, 1e-8), ylabel="max relative error",
       title="NumPy twins agree with the chapter's scalar code (batch shape (2, 3))")
ax.set_xticks(range(len(names_)), names_, rotation=30, ha="right")
ax.legend(fontsize=8, loc="upper left")
plt.tight_layout()
plt.show()

# %% [markdown]
# すべて機械イプシロン（約 $2.2 \times 10^{-16}$）程度で一致します。NumPy 版は第22章の GPT の高速エンジン（`--engine numpy`）で使われ、
# スカラー版は1つ1つの勾配を追いかけるための「読める」実装です。同じ数学の2つの書き方です。
