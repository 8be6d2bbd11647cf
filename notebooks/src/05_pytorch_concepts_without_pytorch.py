# %% [markdown]
# # PyTorch の概念を PyTorch なしで
#
# **対応する資料:** 「PyTorchの基本：Parameter、Module、Linear層の仕組み」（`/work/shared/seeds/002_…`）。
#
# このノートでは、PyTorch の基本概念を、このプロジェクトのスカラー自動微分エンジン `value.Value` と
# `utils.py`（第21章の `linear` / `softmax` / `rmsnorm` とその NumPy 版）に対応づけて確かめます。
# 読み終えると、次のものが見られます。
#
# 1. `nn.Parameter` / `requires_grad` ↔ 「パラメータのリストに入っている `Value`」。凍結（フリーズ）の2つのやり方。
# 2. `nn.Module` / `forward` ↔ `state_dict` を受け取るただの関数。
# 3. `nn.Linear`（バイアスあり・なし）と重みの `[out, in]` レイアウト。
# 4. Xavier 初期化と He 初期化：深い層を通した活性と勾配の分散をプロット。
# 5. アテンションの softmax をスケーリング（1/√d）しないと勾配が消える様子を、実際の勾配で。
#
# コードセルはすべてプロジェクトのモジュールを import して使います（ノートの中で再実装はしません）。

# %%
import sys
from pathlib import Path

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists())
sys.path.insert(0, str(ROOT))  # value.py, utils.py, ... live at the repo root

import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np

from utils import linear, linear_np, linear_np_backward, softmax, softmax_np, softmax_np_backward
from value import Value, topological_order, zero_grad

plt.rcParams["figure.dpi"] = 90

# %% [markdown]
# ## 1. `Parameter` / `requires_grad` ↔ パラメータリストの中の `Value`
#
# PyTorch では `requires_grad=True` のテンソルだけが計算を記録され、`nn.Parameter` で包んだものが
# `model.parameters()` に登録されてオプティマイザに更新されます。
#
# このエンジンでは役割が2つに分かれます。
#
# - **記録されるかどうか** ＝ `Value` か、ただの `float` か。`Value` との演算は計算グラフに記録され、
#   `backward()` で `.grad` が入ります。ただの数（`2.0` など）はノードにすらなりません
#   （`value.py` は定数を局所勾配に畳み込みます）。これが `requires_grad=False` に当たります。
# - **更新されるかどうか** ＝ オプティマイザに渡すリスト `params` に入っているか。
#   これが `model.parameters()` に当たります。

# %%
w = Value(0.5)   # a "parameter": recorded, gets a .grad
b = Value(0.1)
x = 2.0          # plain data: requires_grad=False, not even a node in the graph
y = w * x + b
y.backward()
print("y      =", y)
print("w.grad =", w.grad, " (= x)")
print("b.grad =", b.grad, " (= 1)")
print("nodes in the graph:", len(topological_order(y)), "-> w, b, w*x, +  (x is folded into w*x)")

# %% [markdown]
# ### 凍結（フリーズ）の2つのやり方
#
# 直線 $y = 3x + 1$ に $\hat y = w x + b$ を当てはめます。
#
# - (a) **全部学習**：`params = [w, b]`
# - (b) **`requires_grad=False` 型**：`b` をただの `float`（0.0）にする。グラフに入らず、勾配も計算されない。
# - (c) **オプティマイザから外す型**：`b` は `Value` のままだが `params = [w]` だけを更新する。
#   勾配は計算されるが使われない（PyTorch で `optimizer` に渡さなかったパラメータと同じ）。

# %%
xs = np.linspace(-1, 1, 8)
ys = 3 * xs + 1


def fit(w, b, params, steps=60, lr=0.3):
    """Plain SGD on the mean squared error; only the Values in `params` are updated."""
    losses = []
    for _ in range(steps):
        loss = sum((w * xi + b - yi) ** 2 for xi, yi in zip(xs, ys)) / len(xs)
        zero_grad([w, b] if isinstance(b, Value) else [w])
        loss.backward()
        for p in params:
            p.data -= lr * p.grad
        losses.append(loss.data)
    return losses


runs = {}
w, b = Value(0.0), Value(0.0)
runs["(a) w, b trainable"] = (fit(w, b, [w, b]), w, b)
w, b = Value(0.0), 0.0
runs["(b) b = 0.0 plain float"] = (fit(w, b, [w]), w, b)
w, b = Value(0.0), Value(0.0)
runs["(c) b a Value, not in params"] = (fit(w, b, [w]), w, b)
for name, (losses, w, b) in runs.items():
    b_data = b.data if isinstance(b, Value) else b
    b_grad = f"{b.grad:+.3f}" if isinstance(b, Value) else "n/a (not a node)"
    print(f"{name:32s} w = {w.data:.3f}  b = {b_data:.3f}  final loss = {losses[-1]:.4f}  last b.grad = {b_grad}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
styles = {"(a)": "-", "(b)": "-", "(c)": "--"}  # (b) and (c) coincide: dashed so both stay visible
for name, (losses, _, _) in runs.items():
    axes[0].plot(losses, styles[name[:3]], label=name)
axes[0].set(yscale="log", xlabel="SGD step", ylabel="MSE loss", title="Frozen bias cannot fit y = 3x + 1")
axes[0].legend()
axes[1].scatter(xs, ys, color="k", zorder=3, label="data y = 3x + 1")
for name, (_, w, b) in runs.items():
    b_data = b.data if isinstance(b, Value) else b
    axes[1].plot(xs, w.data * xs + b_data, styles[name[:3]], label=name)
axes[1].set(xlabel="x", ylabel="y", title="Fitted lines")
axes[1].legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# (b) と (c) は同じ直線に落ち着きます（切片が 0 に固定され、原点を通る直線しか引けない）。
# 違いは (c) では `b.grad` が毎回計算されていること：計算の無駄はあるが、後で凍結を解くのは簡単です。
# 大きなモデルでは (b) のほうがグラフが小さく速くなります。

# %% [markdown]
# ## 2. `nn.Module` / `forward` ↔ `state_dict` を受け取るただの関数
#
# PyTorch の `nn.Module` は「パラメータの登録（`__init__`）」と「計算の流れ（`forward`）」を1つのクラスにまとめます。
# microgpt（第22章）は同じことを **辞書と関数** で書きます。
#
# | PyTorch | このプロジェクト |
# |---|---|
# | `__init__` で `nn.Parameter` を登録 | `state_dict = {"名前": 行列（Value のリストのリスト）}` を作る |
# | `forward(self, x)` | `def mlp(x, state_dict)`（microgpt では `gpt(token_id, pos_id, keys, values, state_dict, cfg)`） |
# | `model.parameters()` | `[p for mat in state_dict.values() for row in mat for p in row]` |
# | `model(x)` と呼ぶ（フック処理のため） | ただ関数を呼ぶ。フックも学習/評価モードもない |
#
# 個別インスタンスが必要か共有してよいかの規則もそのまま残ります：学習パラメータを持つ部品は
# **辞書のキーを分ける**（`fc1.weight` と `fc2.weight`）。パラメータを持たない部品は関数を共有するだけです。
# `utils.rmsnorm` には学習可能なゲインが **ない** ので、ReLU と同じく「ハサミ」側（共有してよい）です。

# %%
rng = np.random.default_rng(0)


def matrix(n_out, n_in, std):
    """An [out][in] matrix of Values (the nn.Linear.weight layout)."""
    return [[Value(float(v)) for v in row] for row in rng.normal(0.0, std, (n_out, n_in))]


def linear_bias(x, w, b):
    """nn.Linear(bias=True): utils.linear (y = Wx) plus a bias vector."""
    return [yi + bi for yi, bi in zip(linear(x, w), b)]


state_dict = {
    "fc1.weight": matrix(4, 2, 0.5), "fc1.bias": matrix(1, 4, 0.0),  # bias kept as a [1][out] matrix
    "fc2.weight": matrix(1, 4, 0.5),                      # bias=False, as in GPT's attention projections
}


def mlp(x, state_dict):
    """The 'forward': a plain function of the input and the parameters."""
    h = [v.relu() for v in linear_bias(x, state_dict["fc1.weight"], state_dict["fc1.bias"][0])]
    return linear(h, state_dict["fc2.weight"])


params = [p for mat in state_dict.values() for row in mat for p in row]
out = mlp([Value(1.0), Value(-2.0)], state_dict)
out[0].backward()
print("number of parameters:", len(params), "= 4*2 + 4 + 1*4")
print("output:", out[0])
for name, mat in state_dict.items():
    print(f"{name:11s} shape [{len(mat)}][{len(mat[0])}]  grads:", np.round([[p.grad for p in row] for row in mat], 3).tolist())

# %% [markdown]
# ## 3. `nn.Linear`：バイアスと `[out, in]` レイアウト
#
# `utils.linear(x, w)` の `w` は **行が出力、列が入力** です（`nn.Linear.weight` と同じ `[out_features, in_features]`）。
# 行ごとに $y_o = \sum_i w_{oi} x_i$、つまり縦ベクトルで書けば $y = Wx$。
# 行ベクトルのバッチ $X$（形 `[N, in]`）では NumPy 版 `linear_np` が $Y = X W^\top$ を計算します。

# %%
W = np.array([[1.0, 2.0],
              [0.0, -1.0],
              [3.0, 0.5]])            # [out=3, in=2]
X = np.array([[1.0, 1.0],
              [2.0, -1.0]])           # a batch of N=2 row vectors, [N, in]
Y = linear_np(X, W)                   # [N, out] = X @ W.T
print("W.shape", W.shape, " X.shape", X.shape, " -> Y.shape", Y.shape)
print("Y =\n", Y)
print("column-vector view, W @ x for the first x:", W @ X[0])
y_scalar = linear([Value(v) for v in X[0]], [[Value(v) for v in row] for row in W])
print("utils.linear (scalar) for the first x:   ", [float(v.data) for v in y_scalar])

# %% [markdown]
# バイアスがない線形層は $x = 0$ で必ず $y = 0$（原点を通る）。バイアスがあれば平行移動できます。

# %%
zero = [Value(0.0), Value(0.0)]
Wv = [[Value(v) for v in row] for row in W]
bias = [Value(0.5), Value(-1.0), Value(2.0)]
print("bias=False, x = 0 ->", [float(v.data) for v in linear(zero, Wv)])
print("bias=True,  x = 0 ->", [float(v.data) for v in linear_bias(zero, Wv, bias)])

# %% [markdown]
# ## 4. Xavier 初期化と He 初期化
#
# 幅 256 の全結合層を 30 段重ね、各段で `linear_np`（重み `[out, in]`）→ 活性化関数を通します。
# 重みの標準偏差の選び方を4通り比べ、各段の **活性の分散**（順伝播）と、出力側から流した
# **勾配の分散**（`linear_np_backward` による逆伝播）を層ごとにプロットします。
#
# - `N(0, 1)`：大きすぎる → tanh は飽和、ReLU は爆発
# - `N(0, 0.01²)`：小さすぎる → 信号が層ごとに縮んで消える
# - Xavier：$\mathrm{Var}(w) = 2/(\text{fan\_in} + \text{fan\_out})$（tanh 向き）
# - He：$\mathrm{Var}(w) = 2/\text{fan\_in}$（ReLU が半分を 0 にするぶん2倍）

# %%
depth, width, batch = 30, 256, 512
inits = {
    "N(0, 1)": 1.0,
    "N(0, 0.01^2)": 0.01,
    "Xavier": np.sqrt(2.0 / (width + width)),
    "He": np.sqrt(2.0 / width),
}
acts = {
    "tanh": (np.tanh, lambda y, a: 1.0 - a * a),
    "relu": (lambda y: np.maximum(y, 0.0), lambda y, a: (y > 0).astype(float)),
}


def propagate(std, act, dact, seed=0):
    """Forward through `depth` layers, then backward a unit-variance gradient. Returns per-layer variances."""
    r = np.random.default_rng(seed)
    h = r.normal(size=(batch, width))
    cache, fwd_var = [], []
    for _ in range(depth):
        w = r.normal(0.0, std, (width, width))
        y = linear_np(h, w)
        a = act(y)
        cache.append((h, w, y, a))
        fwd_var.append(a.var())
        h = a
    g = r.normal(size=h.shape)
    bwd_var = []
    for h_in, w, y, a in reversed(cache):
        dy = g * dact(y, a)
        g, _ = linear_np_backward(dy, h_in, w)
        bwd_var.append(g.var())
    return fwd_var, bwd_var[::-1]   # bwd_var[l] = variance of the gradient arriving at layer l's input


with np.errstate(over="ignore", invalid="ignore"):
    results = {(a, i): propagate(std, *acts[a]) for a in acts for i, std in inits.items()}

fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
layers = np.arange(1, depth + 1)
for col, a in enumerate(acts):
    for name in inits:
        fwd, bwd = results[(a, name)]
        axes[0, col].plot(layers, fwd, marker=".", label=name)
        axes[1, col].plot(layers, bwd, marker=".", label=name)
    axes[0, col].set(yscale="log", title=f"{a}: activation variance (forward)", ylabel="Var(activation)")
    axes[1, col].set(yscale="log", title=f"{a}: gradient variance (backward)", ylabel="Var(dL/dinput)",
                     xlabel="layer")
    for ax in axes[:, col]:
        ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %%
for a in acts:
    for name in inits:
        fwd, bwd = results[(a, name)]
        print(f"{a:4s} {name:13s} Var(act) layer 1 = {fwd[0]:9.3g}, layer 30 = {fwd[-1]:9.3g} | "
              f"Var(grad) layer 1 = {bwd[0]:9.3g}")

# %% [markdown]
# - **ReLU + He**：30 段を通しても活性と勾配の分散がほぼ一定（0.69 → 0.45）。
#   ReLU に Xavier を使うと1段ごとに分散が約半分になり、30 段で $10^{-9}$ を下回ります。
# - **tanh + Xavier**：指数的には崩れず、ゆっくり（層数に対して多項式的に）小さくなるだけです。
#   tanh + He は少し大きめで、勾配が入力側へ向かって緩やかに増えます。
# - `N(0,1)` は tanh を ±1 に飽和させ（分散 ≈ 0.95 のまま）、逆伝播では勾配が層ごとに増幅して **勾配爆発**、
#   ReLU では活性そのものが爆発します。`N(0,0.01²)` は信号も勾配も層ごとに縮んで **消失** します。
#   資料の「初期値が大きすぎる／小さすぎる」の両方の失敗例です。

# %% [markdown]
# ## 5. スケーリングしないアテンション softmax の勾配消失
#
# クエリ $q$ とキー $k_1,\dots,k_T$ の成分が標準正規分布なら、内積 $q\cdot k_t$ の標準偏差は $\sqrt d$ です。
# $d = 64$ なら ±8 程度の差がつき、softmax は `[0.999, 0.000, 0.001]` のように **飽和** します。
# 飽和した softmax のヤコビアン $\mathrm{diag}(p) - pp^\top$ はほぼ 0 なので、そこから前へ勾配が流れません。
# $1/\sqrt d$ を掛ければスコアの標準偏差は 1 に戻ります。
#
# まずはスカラーエンジンで、1つのクエリ・8つのキー・$d = 128$ の注意を実際に組み、
# `backward()` で $q$ に届く勾配（前の層 $W_q$ へ流れていく勾配）を比べます。
# 損失は注意出力 $o = \sum_t p_t v_t$ と固定ベクトル $c$ の内積 $L = c \cdot o$ です。

# %%
d, T = 128, 8
r = np.random.default_rng(4)
q_np, K_np, V_np, c_np = r.normal(size=d), r.normal(size=(T, d)), r.normal(size=(T, d)), r.normal(size=d)


def attention_grad(scaled):
    """Scalar-engine attention for one query; returns (probs, dL/dq) for L = c . sum_t p_t v_t."""
    q = [Value(float(v)) for v in q_np]
    scores = [sum(qi * float(ki) for qi, ki in zip(q, k)) for k in K_np]
    if scaled:
        scores = [s / d ** 0.5 for s in scores]
    p = softmax(scores)
    out = [sum(p[t] * float(V_np[t, j]) for t in range(T)) for j in range(d)]
    loss = sum(oj * float(cj) for oj, cj in zip(out, c_np))
    loss.backward()
    return np.array([pt.data for pt in p]), np.array([qi.grad for qi in q])


p_raw, g_raw = attention_grad(scaled=False)
p_sc, g_sc = attention_grad(scaled=True)
np.set_printoptions(precision=4, suppress=True)
print("probs, raw q.k    :", p_raw)
print("probs, q.k/sqrt(d):", p_sc)
print(f"|dL/dq| raw = {np.linalg.norm(g_raw):.3e}   |dL/dq| with 1/sqrt(d) = {np.linalg.norm(g_sc):.3e}")

# %% [markdown]
# 1つの例では偶然2つのキーが拮抗して飽和しないこともあります（その場合は勾配も残る）。
# そこで、同じ計算を NumPy 版（`softmax_np` / `softmax_np_backward`）で 2000 回のランダム試行について行い、
# 次元 $d$ を変えながら「softmax の最大確率」と「$q$ に届く勾配の大きさ $|\partial L/\partial q|$」の中央値を描きます。
# （$\partial L/\partial q = \sum_t \frac{\partial L}{\partial s_t} k_t$、スケーリングありならさらに $1/\sqrt d$ 倍。）

# %%
dims = [4, 8, 16, 32, 64, 128, 256, 512]
trials, T = 2000, 8
stats = {True: ([], []), False: ([], [])}
for d in dims:
    r = np.random.default_rng(d)
    q, K, V, c = (r.normal(size=(trials, d)), r.normal(size=(trials, T, d)),
                  r.normal(size=(trials, T, d)), r.normal(size=(trials, d)))
    raw = np.einsum("nd,ntd->nt", q, K)
    for scaled in (True, False):
        scale = 1 / np.sqrt(d) if scaled else 1.0
        p = softmax_np(raw * scale)
        dp = np.einsum("ntd,nd->nt", V, c)          # dL/dp_t = v_t . c
        ds = softmax_np_backward(dp, p)             # dL/d(score fed to softmax)
        dq = np.einsum("nt,ntd->nd", ds, K) * scale
        stats[scaled][0].append(np.median(p.max(axis=-1)))
        stats[scaled][1].append(np.median(np.linalg.norm(dq, axis=-1)))

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
for scaled, style in ((False, "o-"), (True, "s-")):
    label = "softmax(q.k / sqrt(d))" if scaled else "softmax(q.k)  (no scaling)"
    axes[0].plot(dims, stats[scaled][0], style, label=label)
    axes[1].plot(dims, stats[scaled][1], style, label=label)
axes[0].set(xscale="log", xlabel="head dimension d", ylabel="median of max_t p_t",
            title="Softmax saturation (T = 8 keys)")
axes[1].set(xscale="log", yscale="log", xlabel="head dimension d", ylabel="median |dL/dq|",
            title="Gradient reaching the query")
for ax in axes:
    ax.legend()
plt.tight_layout()
plt.show()
print("   d | median max p: raw  scaled | median |dL/dq|: raw     scaled   scaled/raw")
for i, d in enumerate(dims):
    print(f"{d:4d} | {stats[False][0][i]:17.3f} {stats[True][0][i]:7.3f} | {stats[False][1][i]:19.2e} "
          f"{stats[True][1][i]:10.2e} {stats[True][1][i] / stats[False][1][i]:10.3g}")

# %% [markdown]
# スケーリングなしでは $d$ が大きいほど softmax が1点に張り付き（最大確率 → 1）、$q$ に届く勾配が桁違いに小さくなります
# （表の最後の行：$d = 512$ ではスケーリングありの数百分の一）。
# $d$ が小さいうちはスケーリングなしのほうが勾配はむしろ大きい点にも注意してください：スコアの幅がまだ softmax を飽和させない範囲では、
# $1/\sqrt d$ を掛けないぶん勾配がそのまま大きいだけです。勾配消失は、$d$ が大きくなって飽和が始まってから起こります。
# $1/\sqrt d$ で割ると、どの $d$ でも分布の鋭さはほぼ一定で、勾配も消えません。
# microgpt の `gpt` も各ヘッドで `q·k / √head_dim` を使っています（第22章）。
