# %% [markdown]
# # 第21章 microgpt のユーティリティ関数（2）：3つの関数の逆伝播
#
# （目安：本編 約40分、練習問題 約25分）
#
# **対応する章:** microgpt 本 第21章「microgpt のユーティリティ関数」。ノート 03 で書いた `linear` / `softmax` / `rmsnorm` の勾配を、
# 計算グラフで追い、式で導き、NumPy の逆伝播として自分で書きます。
#
# このノートで見られるもの（先頭の §N がその節）：
#
# - **§1**：章の最小例（`softmax([1, 2])`、`rmsnorm([3, 4])`）の計算グラフと、`backward()` の勾配と手計算の照合。
# - **§2**：softmax のヤコビアン：各行の和が 0 になること。
# - **§3**：NumPy 版の逆伝播 `linear_backward`、`softmax_backward`、`rmsnorm_backward` を自分で書き、チェックで `utils.py` と比べる。数値微分（中心差分）がどこで外れるかも見る。
# - **発展**（読み飛ばしてかまいません）：シフト不変性（`max_val` を定数として扱ってよい理由）。`value.gradient_check` で勾配を有限差分と照合し、`rmsnorm` の `scale` を `max_val` と同じように定数扱いすると勾配が間違うことを検出する例。
# - **まとめ、理解度チェックと練習問題**：log-softmax のヤコビアン行列と、LayerNorm の逆伝播を自分で書く。
#
# **チェックについて：** 各チェックは、あなたの関数と `utils.py` の逆伝播（またはエンジンの `backward()`）を同じ入力で動かし、
# 点ごとに「完全一致」「近い」（丸め誤差の範囲）「最大の差」を表にします。入力には、書き方の違いが表に出る点（ロジット ±5000、16 桁違う成分の並ぶ行、ほぼ一定の行）も入れてあります。
# 答えはこのプロジェクト自身の関数が計算しているので、それを呼べばチェックは通ってしまいます。大事なのは、式を自分で導くことです。
# 行き詰まったら、チェックの下の「行き詰まったら：解答例」を開いてください。
#
# `trace_backward` と `gradient_check` が印字する表の見出しは英語です（プロジェクトの関数の出力。列の意味はノート 02 で説明しています）。

# %%
import sys
from pathlib import Path

ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists()), None)
if ROOT is None:  # the kernel was started outside the repository: say so, instead of a bare StopIteration
    raise FileNotFoundError(f"value.py が {Path.cwd()} にもその上のフォルダにもありません。"
                            "Jupyter はこのリポジトリの中（ルートか notebooks/）で起動してください")
for path in (ROOT, ROOT / "notebooks"):  # the project's modules live at the root, exercises.py in notebooks/
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import exercises
import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np
from figures import (
    show_graph,  # notebooks/figures.py: tracing.draw_graph at 150 dpi, shown at full size
)

import utils
from tracing import trace_backward
from utils import linear, rmsnorm, softmax
from value import Value, gradient_check, zero_grad

plt.rcParams["figure.dpi"] = 110
np.set_printoptions(precision=6, suppress=True)


# %% [markdown]
# ## 1. 章の最小例の計算グラフ
#
# `linear` の勾配は簡単です（$y_0 = w_{00}x_0 + w_{01}x_1$ なら $\partial y_0/\partial x_i = w_{0i}$、$\partial y_0/\partial w_{0i} = x_i$）。
# ここでは、道が枝分かれする `softmax` と `rmsnorm` のグラフを見ます。
#
# **`softmax`**：`[1, 2]` の確率は $[0.2689, 0.7311]$。出力 $p_1$ から `backward()` します。

# %%
logits = [Value(1.0), Value(2.0)]
probs = softmax(logits)
names = {logits[0]: "z0", logits[1]: "z1", probs[0]: "p0", probs[1]: "p1"}
rows = trace_backward(probs[1], labels=names)

# %%
show_graph(probs[1], names, "softmax([1, 2]) の計算グラフ（出力 p1）")

# %% [markdown]
# 図の箱は各ノードの値（data）と勾配（grad）、矢印の上の数は局所勾配 $\partial(\text{ノード})/\partial(\text{子})$ です。
# 図の `-` のノードは `val - max_val` で、子は `z0`（または `z1`）だけです。`max_val` はただの数として値（data）の計算に使われるだけで、ノードにも矢印にもなりません。
#
# $p_1$ の勾配は $\partial p_1/\partial z_j = p_1(\delta_{1j} - p_j)$、つまり $[-p_0 p_1,\ p_1(1 - p_1)] = [-0.1966, 0.1966]$（上の表の `z0`、`z1` の grad）。
#
# **`rmsnorm`**：`[3, 4]` の出力 $y_0$ から `backward()` します。

# %%
x = [Value(3.0), Value(4.0)]
y = rmsnorm(x)
scale = (12.5 + 1e-5) ** -0.5
names = {x[0]: "x0", x[1]: "x1", y[0]: "y0", y[1]: "y1"}
rows = trace_backward(y[0], labels=names)

# %%
show_graph(y[0], names, "rmsnorm([3, 4]) の計算グラフ（出力 y0）")

# %% [markdown]
# $y_0 = x_0 s$、$s = (m + \epsilon)^{-1/2}$、$m = (x_0^2 + x_1^2)/2$ なので
# $\partial y_0/\partial x_0 = s - s^3 x_0^2/2$、$\partial y_0/\partial x_1 = -s^3 x_0 x_1/2$。
# $x_0$ は2つの道（直接の `x0 * scale` と、`x0 * x0` から `scale` を経由する道）から勾配を受け取り、それらが足し合わされています
# （表の `x0` の行の child.grad が、0.2828 → 0.2319 → 0.1810 と足し込まれていく）。


# %%
hand = [scale - scale**3 * 3 * 3 / 2, -(scale**3) * 3 * 4 / 2]
print("backward() の勾配:", [v.grad for v in x])
print("手計算          :", hand)
assert np.allclose([v.grad for v in x], hand, rtol=1e-12)

# %% [markdown]
# ## 2. softmax のヤコビアン
#
# 出力ごとに `backward()` を呼べばヤコビアン全体 $J_{ij} = \partial p_i/\partial z_j = p_i(\delta_{ij} - p_j)$、行列で書けば $J = \mathrm{diag}(p) - pp^\top$ が得られます
# （葉の勾配は足し込まれるので、各回の前に `zero_grad` で消します）。

# %%
def jacobian(fn, z):
    """J[i, j] = d fn(z)[i] / d z[j] with one backward() per output (leaf grads accumulate: reset them first)."""
    leaves = [Value(float(v)) for v in z]
    outs = fn(leaves)
    J = np.zeros((len(outs), len(leaves)))
    for i, out in enumerate(outs):
        zero_grad(leaves)
        out.backward()
        J[i] = [v.grad for v in leaves]
    return J, np.array([out.data for out in outs])


J, p = jacobian(softmax, [1.0, 2.0])
print("backward() で求めたヤコビアン:\n", J)
print("diag(p) - p p^T:\n", np.diag(p) - np.outer(p, p))
print("行の和（j について dp_i/dz_j を足す）:", [f"{v:.1e}" for v in J.sum(axis=1)])
print("列の和（i について dp_i/dz_j を足す）:", [f"{v:.1e}" for v in J.sum(axis=0)])
assert np.allclose(J, np.diag(p) - np.outer(p, p), atol=1e-15)

# %% [markdown]
# 各行の和も各列の和も 0 です（$10^{-17}$ 以下の値は float64 の丸め誤差）。2成分では $J$ の形が $\pm p_0 p_1$ だけで決まってしまうので、4成分の logits でも確かめます。

# %%
z4 = [1.0, 2.0, 0.5, -1.0]
J4, p4 = jacobian(softmax, z4)
print("z =", z4, "\np =", p4)
print("ヤコビアン:\n", J4)
print("行の和:", [f"{v:.1e}" for v in J4.sum(axis=1)])
print("列の和:", [f"{v:.1e}" for v in J4.sum(axis=0)])
print("max |J - (diag(p) - p p^T)| =", np.abs(J4 - (np.diag(p4) - np.outer(p4, p4))).max())


# %% [markdown]
# ## 3. NumPy 版の逆伝播を自分で書く
#
# `utils.py` では、各スカラー関数の隣に NumPy 版（任意の先頭バッチ次元を持ち、最後の軸に作用する）と、その **明示的な逆伝播** が並んでいます。
# 第22章の高速エンジン（`--engine numpy`）が使うのはこちらです。逆伝播は、上流の勾配（出力についての損失の勾配）`dy` を受け取り、入力についての勾配を返します：
# $dx_j = \sum_i dy_i\,\partial y_i/\partial x_j$（ヤコビアンの転置を `dy` に掛ける。ヤコビアン全体は作らない）。
#
# ### ステップ1：`linear_backward(dy, x, w)`
#
# $y = x\,W^\top$（$y_o = \sum_i w_{oi} x_i$）。`x` の形は `(..., n_in)`、`w` は `(n_out, n_in)`、`dy` は `(..., n_out)` です。
# `(dx, dw)` を返してください。`dx` は `x` と同じ形、`dw` は `w` と同じ形です。チェックの「バッチ (2, 3, 4)」では、`dw` にすべての位置の寄与が足し合わされます
# （同じ重みがすべての位置で使われるから。ノート 02 §4 の「同じノードを何度も使うと勾配は足される」と同じ）。

# %%
def linear_backward(dy, x, w):
    # ここに書く：return dx, dw
    raise NotImplementedError


# %%
exercises.check_04_linear_backward(linear_backward)

# %% [markdown]
# ### ステップ2：`softmax_backward(dp, p)`
#
# 順伝播の出力 $p = \mathrm{softmax}(z)$ と上流の勾配 `dp` から、$dz_j = \sum_i dp_i\,\partial p_i/\partial z_j$ を返してください。§2 の $J = \mathrm{diag}(p) - pp^\top$ を使います。
# ヤコビアンを作って掛けても正解ですが、式を整理すると $n \times n$ の行列を作らずに書けます。チェックはロジット ±5000 の $p$（ちょうど 0 の成分と、ちょうど 1 の成分がある）でも比べます。

# %%
def softmax_backward(dp, p):
    # ここに書く：return dz（p と同じ形）
    raise NotImplementedError


# %%
exercises.check_04_softmax_backward(softmax_backward)

# %% [markdown]
# ### ステップ3：`rmsnorm_backward(dy, x)`
#
# $y = \mathrm{rmsnorm}(x)$（$\epsilon = 10^{-5}$）について、$dx_j = \sum_i dy_i\,\partial y_i/\partial x_j$ を `x` と同じ形で返してください。
# §1 の手計算（$n = 2$）と同じく、$x_j$ から $y_i$ へは2つの道があります。直接の道と、`scale` を経由する道です。
# チェックは、ランダムな行、バッチ、$10^{8}$ と $10^{-8}$ の成分が並ぶ行、ほぼ一定の行で、`utils.rmsnorm_np_backward` と比べます。

# %%
def rmsnorm_backward(dy, x):
    # ここに書く：return dx（x と同じ形）
    raise NotImplementedError


# %%
exercises.check_04_rmsnorm_backward(rmsnorm_backward)

# %% [markdown]
# **数値微分ではどうなるか。** 式を導かずに、中心差分 $(f(x + h e_j) - f(x - h e_j))/2h$（$f = \sum_i dy_i y_i$）で $dx$ を作ってみます。
# 刻みは成分の大きさに合わせて $h = 10^{-6}\max(1, |x_j|)$ とします。同じチェックの点で `utils.rmsnorm_np_backward` と比べると：

# %%
def rmsnorm_backward_by_differences(dy, x):
    """dx by central differences of sum(dy * rmsnorm(x)): no derivation, only the forward pass."""
    dx = np.zeros_like(x)
    for k in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[k] = 1e-6 * max(1.0, abs(x[k]))
        dx[k] = ((dy * utils.rmsnorm_np(x + step)).sum() - (dy * utils.rmsnorm_np(x - step)).sum()) / (2 * step[k])
    return dx


exercises.compare("中心差分で作った dx", rmsnorm_backward_by_differences, utils.rmsnorm_np_backward,
                  exercises.backward_points_04())

# %% [markdown]
# 普通の行でも中心差分の相対誤差は $10^{-10}$〜$10^{-8}$ ほどあり（刻み $h$ による打ち切り誤差と丸め誤差）、チェックの許容誤差（相対 $10^{-9}$）を超える点があります。
# 16 桁違う成分の並ぶ行では、相対誤差が数 % にまで広がります。$f = \sum_i dy_i y_i$ は大きな成分に支配されていて、差 $f(x + he_j) - f(x - he_j)$ の大部分が丸め誤差になるからです。
# 導いた式にはその心配がありません。数値微分は、式の検算（発展の `gradient_check`）には役立ちますが、式の代わりにはなりません。


# %% [markdown]
# ## 発展：シフト不変性と、有限差分による確認（読み飛ばしてよい）
#
# 本編の2つの話題を掘り下げます。softmax のシフト不変性（章のコードが `max_val` を定数として扱ってよい理由）と、有限差分で勾配を確かめる `gradient_check` です。

# %% [markdown]
# ### シフト不変性：行の和が 0 になる理由と、`max_val` を定数として扱ってよい理由
#
# ノート 03 §2 で見たとおり、すべての logits に同じ定数 $c$ を足しても、確率は変わりません。分子と分母の $e^c$ が約分されるからです：
#
# $$\mathrm{softmax}(z + c\mathbf{1})_i = \frac{e^{z_i + c}}{\sum_j e^{z_j + c}} = \frac{e^{z_i}}{\sum_j e^{z_j}} = \mathrm{softmax}(z)_i, \qquad \mathbf{1} = (1, \dots, 1).$$
#
# $z$ を $\mathbf{1}$ の方向に動かしても $p$ が動かないので、その方向の微分 $\sum_j \partial p_i/\partial z_j = (J\mathbf{1})_i$ は 0 です。これが **各行の和が 0** になる理由です。
# （**列の和** が 0 になるのは別の理由で、確率の和 $\sum_i p_i$ が常に 1 だからです。softmax の $J$ は対称なので、両方が同時に成り立ちます。）

# %% [markdown]
# 同じ性質が `max_val` の扱いを正当化します。`max_val` = $m(z)$ は本当は $z$ の関数ですが、章のコードは `.data` から取るので、`backward()` は $m$ を通る道を通りません。
# 本当の微分には、$m$ を通る道の寄与 $-\sum_j J_{ij} \cdot \partial m/\partial z_k = -(J\mathbf{1})_i\,\partial m/\partial z_k$ が加わるはずですが、$J\mathbf{1} = 0$ なのでこの寄与はちょうど 0 です。
# つまり `max_val` を定数として扱っても、どの勾配も変わりません。
#
# 確かめるために、最大値を `Value` のまま（グラフのノードとして）引く版を書き、`backward()` がそこも通るようにして、ヤコビアンを比べます。

# %%
def softmax_max_in_graph(logits):
    """The chapter's softmax, except that the max is a Value (a node of the graph): backward() runs through it too."""
    max_node = max(logits, key=lambda v: v.data)
    exps = [(val - max_node).exp() for val in logits]
    total = sum(exps)
    return [e / total for e in exps]


J4_graph, p4_graph = jacobian(softmax_max_in_graph, z4)
print("確率は完全に同じ:", np.array_equal(p4, p4_graph))
print("max |J（max_val は定数） - J（最大値もグラフに）| =", np.abs(J4 - J4_graph).max())

# %% [markdown]
# 確率はまったく同じで、ヤコビアンの差も $10^{-17}$ 程度の丸め誤差だけです。
# この議論はシフト不変性に頼っています。次の節では、同じように `.data` から取った値を定数として扱うと勾配が **変わってしまう** 例（`rmsnorm` の `scale`）を見ます。

# %% [markdown]
# ### 有限差分で確かめる：`gradient_check`
#
# 手計算できるのは最小例まで。大きな入力では `value.gradient_check(f, inputs)` を使います。`f` は `Value` のリストから1つの `Value` を返す関数で、
# 各入力について `backward()` の勾配と中心差分 $(f(x + \varepsilon e_i) - f(x - \varepsilon e_i))/(2\varepsilon)$ を比べ、表を印字して True / False を返します。
#
# 3つの関数はどれもベクトルを返すので、ランダムな重み $c$ で出力を足し合わせたスカラー $\sum_i c_i y_i$ を `f` にします。
# $c$ がランダムなので、どの出力の勾配が間違っていても差が出ます（これは `backward()` に上流の勾配 $c$ を流すのと同じです）。
# `linear` は入力 $x$（3成分）と重み $w$（2×3）の両方について確かめます。

# %%
rng = np.random.default_rng(7)
n_in, n_out = 3, 2
c_lin = rng.normal(size=n_out).tolist()


def f_linear(vs):
    """sum_o c_o * linear(x, w)[o], with vs = x (n_in values) followed by the rows of w."""
    xv, wv = vs[:n_in], vs[n_in:]
    rows_w = [wv[o * n_in:(o + 1) * n_in] for o in range(n_out)]
    return sum(c * yo for c, yo in zip(c_lin, linear(xv, rows_w)))


print("linear: x（入力 0〜2）と w（入力 3〜8）")
ok_linear = gradient_check(f_linear, rng.normal(size=n_in + n_in * n_out).tolist())

# %%
c4 = rng.normal(size=4).tolist()
print("softmax: ロジット4個")
ok_softmax = gradient_check(lambda vs: sum(c * q for c, q in zip(c4, softmax(vs))), rng.normal(size=4).tolist())
print("\nrmsnorm: 4成分")
ok_rmsnorm = gradient_check(lambda vs: sum(c * q for c, q in zip(c4, rmsnorm(vs))), rng.normal(size=4).tolist())
assert ok_linear and ok_softmax and ok_rmsnorm

# %% [markdown]
# 3つとも all gradients agree（すべての勾配が一致）です。相対誤差は最大でも $2 \times 10^{-8}$ 程度（勾配そのものが小さい成分で大きめに出る）で、合格の基準 $10^{-5}$ に十分収まります。
#
# 次は、`gradient_check` が間違いを見つける例です。`softmax` の `max_val` と同じように、`rmsnorm` の `scale` を `.data` から作ってみます。
# 順伝播の値はまったく同じですが、`backward()` は「`scale` も $x$ に依存する」ことを知らないので、`scale` を経由する道（上の手計算の $-s^3 x_0^2/2$ などの項）が抜け落ちます。

# %%
def rmsnorm_scale_as_constant(x):
    """WRONG on purpose: scale is computed from .data, so backward() does not see that it depends on x."""
    ms = sum(xi.data * xi.data for xi in x) / len(x)
    scale = (ms + 1e-5) ** -0.5
    return [xi * scale for xi in x]


point = rng.normal(size=4).tolist()
print("順伝播の値は同じ:",
      [v.data for v in rmsnorm_scale_as_constant([Value(t) for t in point])] == [v.data for v in rmsnorm([Value(t) for t in point])])
ok_wrong = gradient_check(lambda vs: sum(c * q for c, q in zip(c4, rmsnorm_scale_as_constant(vs))), point)
print("gradient_check の戻り値:", ok_wrong)
assert not ok_wrong

# %% [markdown]
# 勾配は FAIL になり、`gradient_check` は False を返します。`softmax` では $m$ を通る道の寄与が $J\mathbf{1} = 0$ のおかげでちょうど消えましたが、
# `rmsnorm` では `scale` を通る道の寄与は 0 ではありません。「`.data` から取った値を定数として扱ってよいか」は、その値を通る道の寄与が 0 かどうかで決まります。

# %% [markdown]
# ## まとめ
#
# | 関数 | 勾配 | 逆伝播で見たこと | 節 |
# |---|---|---|---|
# | `linear(x, w)` | $dx = dy\,W$、$dW = dy^\top x$ | $x_j$ はすべての出力に、$W$ はすべての位置に使われるので、勾配は足し合わされる | §1, §3 |
# | `softmax(logits)` | $dz = p \odot (dp - \langle dp, p\rangle)$ | ヤコビアン $\mathrm{diag}(p) - pp^\top$ の各行の和は 0（シフト不変性）。だから `max_val` は定数として扱ってよい | §2, §3, 発展 |
# | `rmsnorm(x)` | $dx = s\,dy - \frac{s^3 x}{n}\langle dy, x\rangle$ | 直接の道と `scale` を経由する道がある。`scale` を定数扱いすると勾配が間違い、`gradient_check` が FAIL を出す | §1, §3, 発展 |
# | 数値微分 | 中心差分 | 普通の行では相対誤差 $10^{-10}$〜$10^{-8}$ ほど、大きさが 16 桁違う成分の並ぶ行では数 % ずれる（差の大部分が丸め誤差） | §3 |
#
# ## 理解度チェック
#
# **問1.** `linear` をバッチ（形 `(B, T, n_in)` の `x`）に使うとき、`dw` がすべての位置の和になるのはなぜですか。
#
# <details><summary>答え</summary>
#
# 同じ重み $W$ が、すべての位置 $(b, t)$ の出力を作るのに使われるからです。計算グラフでは $w_{oi}$ という1つのノードから、位置の数だけ辺が出ています。
# 同じノードを何度も使えば、それぞれの道の勾配が足し合わされます（ノート 02 §4）。$dx$ のほうは位置ごとに別の入力なので、足し合わされません。
#
# </details>
#
# **問2.** softmax のヤコビアンの **列** の和 $\sum_i \partial p_i/\partial z_j$ が 0 になるのはなぜですか（行の和とは別の理由で）。
#
# <details><summary>答え</summary>
#
# 確率の和 $\sum_i p_i$ が $z$ によらず常に 1 なので、それをどの $z_j$ で微分しても 0 だからです。
# $J = \mathrm{diag}(p) - pp^\top$ は対称なので、行の和（シフト不変性）と列の和（和が 1）が両方 0 になります。
#
# </details>
#
# **問3.** `rmsnorm` の `scale` を、`max_val` と同じように `.data` から計算すると何が起きますか。
#
# <details><summary>答え</summary>
#
# 順伝播の値は同じですが、`backward()` は `scale` が $x$ に依存することを知らず、`scale` を経由する道が抜け落ちます。
# この道の寄与は 0 ではないので勾配は間違い、発展の `gradient_check` は FAIL を出して False を返しました。
# 定数扱いしてよいかどうかは、その値を通る道の寄与が 0 になるかどうかで決まります（`max_val` ではシフト不変性で 0 になりました）。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 各問の解答セルの関数を書き、すぐ下のチェックセルを実行してください。チェックは §3 と同じく、比べた表を出します（書く前は 未回答）。
#
# ### 練習問題 1：log-softmax のヤコビアン行列
#
# §2 では softmax そのもののヤコビアン $J = \mathrm{diag}(p) - pp^\top$ を見ました。第22章の損失（交差エントロピー $-\log p_t$）が使うのは確率の **対数** です。
# logits `z`（形 `(n,)` の NumPy 配列）を受け取り、$p = \mathrm{softmax}(z)$ の対数のヤコビアン $\partial \log p_i/\partial z_j$ を形 `(n, n)` の NumPy 配列で返す関数
# `log_softmax_jacobian(z)` を書いてください（$i$ が行、$j$ が列）。ロジットには ±1000 や ±5000 のような大きな値も来ます（`utils.softmax_np` は使ってかまいません）。
# チェックは、第 $i$ 行を「正解が $i$ のときの交差エントロピー $-\log p_i$ の勾配」（`utils.cross_entropy_np_backward`）の符号を変えたものと比べます。
#
# <details><summary>ヒント 1</summary>
#
# $\log p_i$ を、$p_i$ の定義から $z$ だけの式に書き直してみてください（$\log$ と $\exp$ が打ち消し合う部分があります）。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $\log\sum_k e^{z_k}$ を $z_j$ で微分すると、見覚えのある量が出てきます。§2 の $J$ の第 $i$ 行を $p_i$ で割っても同じ答えになりますが、
# ロジット −5000 の成分では $p_i$ が float64 で 0 にアンダーフローし、そのまま割ると 0/0 = NaN です。約分して消した形で書いてください。
#
# </details>

# %%
def log_softmax_jacobian(z):
    # ここに解答を書く
    raise NotImplementedError


# %%
exercises.check_04_log_softmax_jacobian(log_softmax_jacobian)

# %% [markdown]
# ### 練習問題 2：LayerNorm の逆伝播
#
# ノート 03 の LayerNorm $y = (x - \mu)/\sqrt{\sigma^2 + \epsilon}$（$\mu$ は最後の軸の平均、$\sigma^2$ は分散 `x.var(axis=-1)`、$\epsilon = 10^{-5}$、学習可能な倍率・バイアスなし）について、
# 形 `(..., n)` の `dy` と `x` から勾配 $dx$ を同じ形で返す関数 `layernorm_backward(dy, x)` を書いてください。
# チェックは、LayerNorm を `Value` で組んで損失 $\sum_i dy_i y_i$ を `backward()` した勾配と、§3 と同じ点で比べます。
#
# <details><summary>ヒント 1</summary>
#
# $\tilde\sigma = \sqrt{\sigma^2 + \epsilon}$、$\hat x = (x - \mu)/\tilde\sigma$ とおきます。$x_j$ から $y_i$ へは、直接の道のほかに $\mu$ を経由する道と $\tilde\sigma$ を経由する道があります。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 先に $\partial \mu/\partial x_j$ と $\partial \tilde\sigma/\partial x_j$ を求めてください（$\tilde\sigma^2 = \frac1n\sum_i (x_i - \mu)^2 + \epsilon$ を微分します。$\sum_i (x_i - \mu) = 0$ が効きます）。
# 答えは $\hat x$ と $dy$ の平均を使って1行で書けます。LayerNorm もシフト不変なので、正しい $dx$ は各行の和が 0 になります（検算に使ってください）。
#
# </details>

# %%
def layernorm_backward(dy, x):
    # ここに解答を書く
    raise NotImplementedError


# %%
exercises.check_04_layernorm_backward(layernorm_backward)
