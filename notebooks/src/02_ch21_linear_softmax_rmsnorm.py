# %% [markdown]
# # 第21章 microgpt のユーティリティ関数：`linear` / `softmax` / `rmsnorm`
#
# **対応する章:** microgpt 本 第21章「microgpt のユーティリティ関数」。
# 第22章の `gpt` から何度も呼ばれる3つの部品を、章の最小例そのままで動かします。
#
# このノートで見られるもの（先頭の §N がその節）：
#
# - **§0**：章の行番号（microgpt.py L129–L144）と、このプロジェクトでコードが実際にあるファイル（`utils.py`）。
# - **§1〜§3**：章の最小例（§1 `linear` → 11、§2 `softmax([1, 2])`、§3 `rmsnorm([3, 4])`）の値、計算グラフ、`backward()` の勾配と手計算の照合。
#   §2 では、softmax の入力 logits が「まだ確率になっていない生のスコア」であること（負の値もあり、和は 1 でない。`lm_head` が作る）も見ます。
# - **§2**：softmax のヤコビアン：各行の和が 0 になること、それは全 logits に同じ定数を足しても確率が変わらない性質（シフト不変性）から来ること、そしてだから `max_val` を定数として扱っても勾配が変わらないこと。
# - **§4**：`value.gradient_check` で3つの関数の勾配を有限差分（中心差分）と照合し、`rmsnorm` の `scale` を `max_val` と同じように定数扱いすると勾配が間違うことを検出する例。
# - **§5**：LayerNorm と RMSNorm を同じベクトルに適用し、「平均を引くかどうか」の違いを図で見る。LayerNorm の学習可能な倍率とバイアス、
#   microgpt.py の「GPT-2 との相違点」のコメントが指す違い。
# - **§6**：スカラー版（`Value` のリスト）と NumPy 版の双子（`linear_np` など、順伝播と明示的な逆伝播）が float64 の精度で一致すること。
# - **まとめ、理解度チェックと練習問題**：log-softmax のヤコビアン行列、RMSNorm と LayerNorm の逆伝播を自分で書き、チェックセルで確かめる（正解すると解答例を開ける）。
#
# 関数はすべて `utils.py` から import します（章のコードそのもの）。
# 計算グラフの図は横に長いので、縮小せず実寸で表示します（ページからはみ出す部分は横にスクロールして見てください）。
# §2 と §5 には「予想してから確かめる」問いがあります。答えを開く前に、次のセルが何を表示するか予想してみてください。

# %%
import inspect
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

import microgpt
import model_config
import utils
from tracing import trace_backward
from utils import linear, rmsnorm, softmax
from value import NumericError, Value, gradient_check, zero_grad

plt.rcParams["figure.dpi"] = 110
np.set_printoptions(precision=6, suppress=True)

# %% [markdown]
# ## 0. 章の行番号と、コードのあるファイル
#
# 章は `linear` を「L129–L131」、`softmax` を「L133–L138」、`rmsnorm` を「L140–L144」と、**microgpt.py** の行番号で示します。
# これは参照実装（Karpathy の microgpt、1ファイル）の、章が使った版の行番号です（章のコードには日本語の docstring が付いていて、どのリビジョンかは章に書かれていません。§5 の「microgpt.py のコメント」を参照）。このプロジェクトでは3つの関数は **`utils.py`** にあり、
# `microgpt.py` はそれを import して使います。行番号も違うので、実行時のソースから確かめます（ファイル名と行番号は `inspect` が返すもの）。

# %%
for fn, chapter_lines in ((utils.linear, "L129-L131"), (utils.softmax, "L133-L138"), (utils.rmsnorm, "L140-L144")):
    lines, start = inspect.getsourcelines(fn)
    print(f"{fn.__name__:8s} chapter: microgpt.py {chapter_lines} | here: {Path(inspect.getsourcefile(fn)).name} "
          f"L{start}-L{start + len(lines) - 1}")
print("microgpt.py imports them:", [line for line in inspect.getsource(microgpt).splitlines()
                                    if line.startswith("from utils import")])

# %% [markdown]
# `utils.py` の版には、章のコードにない入力の検査（空のリストや長さの合わない行列でエラーを出す数行）が加わっているので、章より数行長くなっています。
# 計算の行そのものは章と同じです。`utils.py` の各関数の上のコメント（`# chapter 21.1.1, microgpt.py L129-L131` など）も、この対応を書いています。
#
# ## 1. `linear`：行ごとの内積（線形変換）
#
# ```python
# def linear(x, w):
#     return [sum(wi * xi for wi, xi in zip(wo, x)) for wo in w]
# ```
#
# `w` は「行が出力次元、列が入力次元」のリストのリストで、出力の各成分は `w` の1行と `x` の内積です。
# 章の最小例は入力2次元・出力1ニューロン：$x = [1, 2]$、$w = [[3, 4]]$ で $y_0 = 3 \times 1 + 4 \times 2 = 11$。

# %%
x = [Value(1.0), Value(2.0)]
w = [[Value(3.0), Value(4.0)]]
y = linear(x, w)
print("linear(x, w) =", [v.data for v in y])
assert y[0].data == 11

names = {x[0]: "x0", x[1]: "x1", w[0][0]: "w00", w[0][1]: "w01", y[0]: "y0"}
rows = trace_backward(y[0], labels=names)

# %%
show_graph(y[0], names, "linear の計算グラフ：y0 = w00·x0 + w01·x1 = 11")

# %% [markdown]
# 図の箱は各ノードの値（data）と勾配（grad）、矢印の上の数は局所勾配 $\partial(\text{ノード})/\partial(\text{子})$ です。
# `sum` は 0 から足し始めますが、`value.py` は `0 + v` を `v` そのものとして返すので、余分なノードは増えません。
# 勾配は $\partial y_0/\partial x_i = w_{0i}$、$\partial y_0/\partial w_{0i} = x_i$：

# %%
print("x.grad =", [v.grad for v in x], " (= w[0] = [3, 4])")
print("w.grad =", [[v.grad for v in row] for row in w], " (= x = [1, 2])")

# %% [markdown]
# ## 2. `softmax`：logits を確率分布に
#
# ```python
# def softmax(logits):
#     max_val = max(val.data for val in logits)
#     exps = [(val - max_val).exp() for val in logits]
#     total = sum(exps)
#     return [e / total for e in exps]
# ```
#
# 入力の **logits（ロジット）** は、まだ確率になっていない、語彙の各候補に対する **生のスコア** の列です（語彙サイズが $V$ なら長さ $V$）。
# 大きいほど「そのトークンらしい」という強さを表しますが、**負でもよく、足して 1 になる必要もありません**。
# microgpt では、最後の隠れ状態 $h$ に出力の線形層 `lm_head`（形 `[V, n_embd]`）をかけた $z = \mathrm{lm\_head}\,h$ がロジットです（第22章の `gpt` の最後の行）。
# 初期化したばかりの microgpt で、`BOS`、`e`、`m` と入力したときの3つの位置のロジットを見ます（`microgpt.gpt_forward` は `gpt` の NumPy 版で、
# 最後の隠れ状態も記録 `acts.hidden[-1]` に返します）。

# %%
cfg = microgpt.GPTConfig(vocab_size=27)                        # 26 letters + BOS, the names corpus of chapter 22
params = microgpt.init_params(cfg, seed=42)
tokens_in = [26, 4, 12]                                         # BOS, 'e', 'm'
logits_np, acts = microgpt.gpt_forward(params, tokens_in, cfg)
h_last = acts.hidden[-1][0]                                  # the last hidden state of every position
print("logits = linear(h, lm_head) exactly:", np.array_equal(logits_np, utils.linear_np(h_last, params["lm_head"])))
for pos, z in enumerate(logits_np):
    p = utils.softmax_np(z)
    print(f"position {pos}: logits in [{z.min():+.3f}, {z.max():+.3f}], {int((z < 0).sum())} of {z.size} negative, "
          f"sum {z.sum():+.3f} | softmax: all >= 0: {bool((p >= 0).all())}, sum {p.sum():.15f}")

# %% [markdown]
# ロジットには負の値がいくつもあり、和もばらばらです（上の出力）。softmax は、このスコアを「0 以上で、すべて足すと 1」の確率に変える関数です。
# 章の説明どおり「最大値を引いてから指数するので、オーバーフローを抑えた実装です。」
# 最小例 `[1, 2]`：$\exp(1-2) = e^{-1}$、$\exp(2-2) = 1$、正規化の分母は $1 + e^{-1}$、確率は $[e^{-1}, 1]/(1 + e^{-1}) = [0.2689, 0.7311]$。
# `max_val` は `.data` から取ったただの数（章の言葉では「全 logits の最大（スカラー）」）なので、計算グラフのノードにはなりません。

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
show_graph(probs[1], names, "softmax([1, 2]) の計算グラフ（出力 p1）")

# %% [markdown]
# 図の `-` のノードは `val - max_val` で、子は `z0`（または `z1`）だけです。`max_val` はただの数として値（data）の計算に使われるだけで、ノードにも矢印にもなりません。
#
# $p_1$ の勾配は $\partial p_1/\partial z_j = p_1(\delta_{1j} - p_j)$、つまり $[-p_0 p_1,\ p_1(1 - p_1)] = [-0.1966, 0.1966]$（上の表の `z0`、`z1` の grad）。
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
print("Jacobian from backward():\n", J)
print("diag(p) - p p^T:\n", np.diag(p) - np.outer(p, p))
print("row sums    (sum over j of dp_i/dz_j):", [f"{v:.1e}" for v in J.sum(axis=1)])
print("column sums (sum over i of dp_i/dz_j):", [f"{v:.1e}" for v in J.sum(axis=0)])
assert np.allclose(J, np.diag(p) - np.outer(p, p), atol=1e-15)

# %% [markdown]
# 各行の和も各列の和も 0 です（$10^{-17}$ 以下の値は float64 の丸め誤差）。2成分では $J$ の形が $\pm p_0 p_1$ だけで決まってしまうので、4成分の logits でも確かめます。

# %%
z4 = [1.0, 2.0, 0.5, -1.0]
J4, p4 = jacobian(softmax, z4)
print("z =", z4, "\np =", p4)
print("Jacobian:\n", J4)
print("row sums:   ", [f"{v:.1e}" for v in J4.sum(axis=1)])
print("column sums:", [f"{v:.1e}" for v in J4.sum(axis=0)])
print("max |J - (diag(p) - p p^T)| =", np.abs(J4 - (np.diag(p4) - np.outer(p4, p4))).max())

# %% [markdown]
# ### シフト不変性：行の和が 0 になる理由と、`max_val` を定数として扱ってよい理由
#
# すべての logits に同じ定数 $c$ を足しても、確率は変わりません。分子と分母の $e^c$ が約分されるからです：
#
# $$\mathrm{softmax}(z + c\mathbf{1})_i = \frac{e^{z_i + c}}{\sum_j e^{z_j + c}} = \frac{e^{z_i}}{\sum_j e^{z_j}} = \mathrm{softmax}(z)_i, \qquad \mathbf{1} = (1, \dots, 1).$$
#
# $z$ を $\mathbf{1}$ の方向に動かしても $p$ が動かないので、その方向の微分 $\sum_j \partial p_i/\partial z_j = (J\mathbf{1})_i$ は 0 です。これが **各行の和が 0** になる理由です。
# （**列の和** が 0 になるのは別の理由で、確率の和 $\sum_i p_i$ が常に 1 だからです。softmax の $J$ は対称なので、両方が同時に成り立ちます。）
#
# まず数値で確かめます。
#
# **予想してから確かめる：** `[1, 2]` のすべての logits に $c = -100, 0, 3.5, 1000$ を足して章の `softmax` に通すと、出力はどうなるでしょうか。
# また、最大値を引かずに $e^{2 + 1000}$ を直接計算しようとすると、何が起きるでしょうか。
#
# <details><summary>答え</summary>
#
# どの $c$ でも出力は `[0.2689, 0.7311]` のままです（分子と分母の $e^c$ が約分される。章の `softmax` は最大値を引くので、指数に入るのは常に $-1$ と $0$）。
# 最大値を引かずに $e^{1002}$ を計算すると float の上限（約 $e^{709.78}$）を超えるので、`Value.exp` は `NumericError` を出します（下のセルの最後の行）。
#
# </details>

# %%
for c in [-100.0, 0.0, 3.5, 1000.0]:
    shifted = softmax([Value(1.0 + c), Value(2.0 + c)])
    print(f"c = {c:7.1f}: softmax([1 + c, 2 + c]) = {[q.data for q in shifted]}")

try:
    Value(2.0 + 1000.0).exp()  # what softmax would compute without subtracting max_val first
except NumericError as e:
    print("without subtracting the max:", e)

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
print("same probabilities:", np.array_equal(p4, p4_graph))
print("max |J (max_val a constant) - J (max in the graph)| =", np.abs(J4 - J4_graph).max())

# %% [markdown]
# 確率はまったく同じで、ヤコビアンの差も $10^{-17}$ 程度の丸め誤差だけです。
# この議論はシフト不変性に頼っています。§4 では、同じように `.data` から取った値を定数として扱うと勾配が **変わってしまう** 例（`rmsnorm` の `scale`）を見ます。
#
# ## 3. `rmsnorm`：RMS（二乗平均の平方根）でスケール
#
# ```python
# def rmsnorm(x):
#     ms = sum(xi * xi for xi in x) / len(x)
#     scale = (ms + 1e-5) ** -0.5
#     return [xi * scale for xi in x]
# ```
#
# 最小例 `[3, 4]`：$ms = (9 + 16)/2 = 12.5$、$scale = (12.5 + 10^{-5})^{-1/2} \approx 1/\sqrt{12.5}$、
# 出力 $\approx [0.8485, 1.1314]$。各成分に 1/RMS を掛けるので、出力の二乗平均はほぼ 1 になります。

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
show_graph(y[0], names, "rmsnorm([3, 4]) の計算グラフ（出力 y0）")

# %% [markdown]
# $y_0 = x_0 s$、$s = (m + \epsilon)^{-1/2}$、$m = (x_0^2 + x_1^2)/2$ なので
# $\partial y_0/\partial x_0 = s - s^3 x_0^2/2$、$\partial y_0/\partial x_1 = -s^3 x_0 x_1/2$。
# $x_0$ は2つの道（直接の `x0 * scale` と、`x0 * x0` から `scale` を経由する道）から勾配を受け取り、それらが足し合わされています
# （表の `x0` の行の child.grad が、0.2828 → 0.2319 → 0.1810 と足し込まれていく）。

# %%
hand = [scale - scale**3 * 3 * 3 / 2, -(scale**3) * 3 * 4 / 2]
print("backward():", [v.grad for v in x])
print("by hand:   ", hand)
assert np.allclose([v.grad for v in x], hand, rtol=1e-12)

# %% [markdown]
# ## 4. 有限差分で確かめる：`gradient_check`
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


print("linear: x (inputs 0-2) and w (inputs 3-8)")
ok_linear = gradient_check(f_linear, rng.normal(size=n_in + n_in * n_out).tolist())

# %%
c4 = rng.normal(size=4).tolist()
print("softmax: 4 logits")
ok_softmax = gradient_check(lambda vs: sum(c * q for c, q in zip(c4, softmax(vs))), rng.normal(size=4).tolist())
print("\nrmsnorm: 4 components")
ok_rmsnorm = gradient_check(lambda vs: sum(c * q for c, q in zip(c4, rmsnorm(vs))), rng.normal(size=4).tolist())
assert ok_linear and ok_softmax and ok_rmsnorm

# %% [markdown]
# 3つとも all gradients agree です。相対誤差は最大でも $2 \times 10^{-8}$ 程度（勾配そのものが小さい成分で大きめに出る）で、合格の基準 $10^{-5}$ に十分収まります。
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
print("same forward values:",
      [v.data for v in rmsnorm_scale_as_constant([Value(t) for t in point])] == [v.data for v in rmsnorm([Value(t) for t in point])])
ok_wrong = gradient_check(lambda vs: sum(c * q for c, q in zip(c4, rmsnorm_scale_as_constant(vs))), point)
print("gradient_check returned", ok_wrong)
assert not ok_wrong

# %% [markdown]
# 勾配は FAIL になり、`gradient_check` は False を返します。`softmax` では $m$ を通る道の寄与が $J\mathbf{1} = 0$ のおかげでちょうど消えましたが、
# `rmsnorm` では `scale` を通る道の寄与は 0 ではありません。「`.data` から取った値を定数として扱ってよいか」は、その値を通る道の寄与が 0 かどうかで決まります。

# %% [markdown]
# ## 5. LayerNorm と RMSNorm を並べる
#
# 章の注記のとおり、LayerNorm は「中心化（平均を引く）→ スケーリング（標準偏差で割る）」、RMSNorm は中心化を省いて RMS で割るだけです。
# このプロジェクトには LayerNorm はないので、比較用にここで NumPy の2行で書きます（まずは学習可能な倍率・バイアスなし、$\epsilon = 10^{-5}$。倍率とバイアスはこの節の後半で）。
# RMSNorm はプロジェクトの `utils.rmsnorm_np`（`rmsnorm` の NumPy 版）を使います。
#
# **予想してから確かめる：** `[1, 2, 3, 4]` と、それに 100 を足した `[101, 102, 103, 104]` を LayerNorm と RMSNorm に通すと、
# 2つの出力はそれぞれ同じになるでしょうか、違うでしょうか。
#
# <details><summary>答え</summary>
#
# LayerNorm ではどちらも同じ `[-1.34, -0.45, 0.45, 1.34]` になります（平均を引くので、全成分に足した 100 は消える）。
# RMSNorm では違い、`[101, …, 104]` の出力は各成分がほぼ 1 の `[0.985, 0.995, 1.005, 1.015]` です（平均を引かないので、共通の 100 が RMS の大部分を占める）。下のセルの出力で確かめてください。
#
# </details>

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
# 章の注記はスケーリングを「成分の分散（または標準偏差）で割る（ばらつきの大きさをおおよそ 1 に）」と書いていますが、ばらつきが 1 に揃うのは標準偏差（分散の平方根）で割った場合だけです。
# 分散で割ると、入力を 10 倍すれば出力は 1/10 になります（上の `layernorm_np` は標準偏差 $\sqrt{\sigma^2 + \epsilon}$ で割っています）：

# %%
v = np.array([1.0, 2.0, 3.0, 4.0])
for k in (1.0, 10.0):
    centered = k * v - (k * v).mean()
    var = (k * v).var() + 1e-5
    print(f"x = {k:4g} * [1, 2, 3, 4]: divided by the std -> {centered / np.sqrt(var)},"
          f"  by the variance -> {centered / var}")

# %% [markdown]
# `[1, 2, 3, 4]` と、それに 100 を足した `[101, …, 104]` を比べると違いがはっきりします。
# LayerNorm は平均を引くので両者は同じ出力になり（softmax と同じシフト不変性）、RMSNorm では大きな共通成分が残って各成分がほぼ 1 に揃ってしまいます。
#
# 2 次元の点の雲に当てると、幾何学的な違いが見えます。RMSNorm の出力は二乗平均がほぼ 1、つまりノルムがほぼ $\sqrt{n} = \sqrt 2$ で、**円の上** に乗ります
# （幾何学講義 第3回「プラネタリウムの建設: 球面へのパラダイムシフト」の、単位超球面への $L_2$ 正規化とほぼ同じで、半径が 1 でなく $\sqrt n$ なだけ。ノート 04 を参照）。2 次元の LayerNorm は平均を引くと $(t, -t)$ の形しか残らないので、
# 出力は **2点** $\pm(1, -1)$ に潰れます（2成分がほぼ等しい点だけは分散がほぼ 0 で $\epsilon$ が効き、原点の近くに残ります）。

# %%
rng = np.random.default_rng(0)
cloud = rng.normal(loc=[2.0, 1.0], scale=[1.5, 0.8], size=(400, 2))
fig, axes = plt.subplots(1, 3, figsize=(12, 4.4), sharex=True, sharey=True)
panels = [("入力 x（中心をずらした正規分布の点群）", cloud),
          ("RMSNorm：半径 √2 の円の上に乗る", utils.rmsnorm_np(cloud)),
          ("LayerNorm：2点に潰れる", layernorm_np(cloud))]
t = np.linspace(0, 2 * np.pi, 200)
for ax, (title, pts) in zip(axes, panels):
    ax.plot(np.sqrt(2) * np.cos(t), np.sqrt(2) * np.sin(t), color="0.8", lw=1, label="半径 √2 の円")
    ax.scatter(pts[:, 0], pts[:, 1], s=8, alpha=0.5, label="点")
    ax.set(xlabel="成分 1", ylabel="成分 2", aspect="equal")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="best", fontsize=8)
plt.tight_layout()
plt.show()

# %%
x4 = np.array([[1.0, 2.0, 3.0, 4.0], [101.0, 102.0, 103.0, 104.0]])
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
idx = np.arange(4)
for k, (title, out) in enumerate([("入力", x4), ("RMSNorm の出力", utils.rmsnorm_np(x4)),
                                  ("LayerNorm の出力", layernorm_np(x4))]):
    axes[k].bar(idx - 0.2, out[0], width=0.4, label="x = [1, 2, 3, 4]")
    axes[k].bar(idx + 0.2, out[1], width=0.4, label="x + 100")
    axes[k].set(title=title, xlabel="成分の番号", ylabel="値", xticks=idx)
    axes[k].legend(fontsize=8, loc="center left" if k == 0 else "best")
plt.tight_layout()
plt.show()

# %% [markdown]
# ### LayerNorm の学習可能な倍率とバイアス
#
# 章の注記の3つ目の段階「（実装によっては）学習可能な倍率とバイアスを掛けて、モデルが正規化の強さを調整できるようにする」は、
# 正規化した $\hat x = (x - \mu)/\sqrt{\sigma^2 + \epsilon}$ に、成分ごとの倍率 $\gamma$（gain、PyTorch の `weight`）とバイアス $\beta$（`bias`）をかけることです：
#
# $$y_i = \gamma_i\,\hat x_i + \beta_i .$$
#
# $\gamma, \beta$ は長さ `n_embd` のパラメータで、初期値は $\gamma = 1$、$\beta = 0$（PyTorch の `nn.LayerNorm` の既定）なので、学習の始めは上の `layernorm_np` と同じです。
# 大事なのは、$\gamma, \beta$ が **すべての入力で共通** だということです。成分ごとに大きさと位置をずらせますが、入力ごとの平均や大きさを元に戻すことはできません。
# GPT-2 の LayerNorm（各ブロックの `ln_1`、`ln_2` と最後の `ln_f`）はどれも $\gamma$ と $\beta$ を持ちます。
# microgpt の `rmsnorm` には倍率もバイアスもありません（LLaMA などの RMSNorm は倍率 $\gamma$ だけを持つ）。

# %%
def layernorm_affine_np(x, gamma, beta, eps=1e-5):
    """LayerNorm with a learnable gain gamma and bias beta (per component, shared by every input)."""
    return gamma * layernorm_np(x, eps) + beta


x4 = np.array([[1.0, 2.0, 3.0, 4.0], [101.0, 102.0, 103.0, 104.0], [10.0, 20.0, 30.0, 40.0]])
gamma0, beta0 = np.ones(4), np.zeros(4)                       # the initial values
print("gamma = 1, beta = 0 gives layernorm_np exactly:",
      np.array_equal(layernorm_affine_np(x4, gamma0, beta0), layernorm_np(x4)))
gamma, beta = np.array([2.0, 2.0, 0.5, 0.5]), np.array([0.0, 1.0, 0.0, -1.0])   # as learning might set them
out = layernorm_affine_np(x4, gamma, beta)
print("with gamma =", gamma, "beta =", beta)
for row, o in zip(x4, out):
    print(f"  x = {row} -> y = {o}   mean {o.mean():+.3f}, std {o.std():.3f}")
extra = cfg.n_embd * (1 + 2 * cfg.n_layer)                      # one norm after the embedding, two per layer
print(f"microgpt's rmsnorm calls per position: {1 + 2 * cfg.n_layer} (n_layer = {cfg.n_layer}); a gain of length "
      f"n_embd = {cfg.n_embd} for each would add {extra} parameters, gain and bias (LayerNorm) {2 * extra}, "
      f"to the {sum(a.size for a in params.values())} of the model")

# %% [markdown]
# 3つの入力は、倍率とバイアスを通しても **同じ出力** になります（10 倍した行だけ 6 桁目が違うのは、分散に足す $\epsilon$ の効き方が変わるため）。
# LayerNorm は入力ごとに平均を引いて標準偏差で割るので、$[1, 2, 3, 4]$、それに 100 を足したもの、10 倍したものは
# どれも同じ $\hat x$ になり、その後の $\gamma, \beta$ は全入力に共通だからです。倍率とバイアスが調整するのは「正規化した後の成分ごとの大きさと位置」で、
# 出力の平均と標準偏差は $\beta$ と $\gamma$ で決まる値になります（上の出力）。
#
# ### microgpt.py のコメント：GPT-2 との相違点
#
# 章は「microgpt.py のモデル部コメント（GPT-2 との相違点として LayerNorm→RMSNorm と書かれている箇所）」に触れますが、
# コメントの文面は引用しておらず、どのリビジョンの microgpt.py を使ったかも書いていません。章のコードには L130 の日本語の docstring のように
# 公開版にない行があるので、章の行番号（L129 など）は章が使った版のものです。Karpathy が公開している microgpt.py では、`linear` の定義のすぐ上に
# 次のコメントがあり、章が指しているのはこの行だと考えられます（下の引用は公開版のもので、章の版の文面ではありません）：
#
# ```python
# # Follow GPT-2, blessed among the GPTs, with minor differences: layernorm -> rmsnorm, no biases, GeLU -> ReLU
# ```
#
# 相違点は3つです：LayerNorm の代わりに RMSNorm（しかも上で見た倍率もバイアスもない）、線形層にバイアスがない、MLP の活性化関数が GeLU ではなく ReLU。
# このプロジェクトの `microgpt.py` は関数を `utils.py` に移したので、このコメントの行はありません。代わりに、3つの相違点がこのプロジェクトのコードでも成り立つことを、
# 実行時のソースとパラメータの一覧から確かめます。

# %%
src_microgpt = inspect.getsource(microgpt)
src_gpt = inspect.getsource(microgpt.gpt)
print("lines of microgpt.py that mention GPT-2:", [line.strip() for line in src_microgpt.splitlines() if "GPT-2" in line])
print("gpt() normalizes with rmsnorm:", "rmsnorm(" in src_gpt, "| with a layernorm:", "layernorm" in src_gpt.lower())
print("parameters named like a bias:", [key for key, _ in model_config.param_shapes(cfg) if "bias" in key])
print("MLP nonlinearity in gpt():", [name for name in ("relu", "gelu") if f".{name}()" in src_gpt])

# %% [markdown]
# RMSNorm を使い、バイアスは1つもなく、活性化関数は ReLU です（上の出力）。倍率 $\gamma$ がないので、microgpt の `rmsnorm` の出力は常に RMS がほぼ 1
# （ノルムがほぼ $\sqrt{\text{n\_embd}}$）で、大きさを調整する役目は、その後の `linear` の重みが担います。

# %% [markdown]
# ## 6. スカラー版と NumPy 版（双子）の一致
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
# 逆伝播は、上流の勾配 `dy` を固定して損失 $\sum y \cdot dy$ に `backward()` をかけたスカラー版の勾配と、
# NumPy 版の明示的な逆伝播を比べます。誤差は $\max|a - b| / \max|b|$（相対誤差）。

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
print(f"(float64 machine epsilon: {np.finfo(float).eps:.2e})")
assert max(errors.values()) < 1e-10

# %%
fig, ax = plt.subplots(figsize=(9, 3.8))
names_ = list(errors)
vals = [max(errors[k], 1e-18) for k in names_]   # an exact 0 would vanish on a log axis
ax.bar(range(len(names_)), vals, color="tab:blue", label="スカラー版と NumPy 版の最大相対誤差")
for i, k in enumerate(names_):
    if errors[k] == 0:
        ax.text(i, 2e-18, "0（完全一致）", ha="center", va="bottom", fontsize=8)
ax.axhline(1e-10, color="tab:red", ls="--", label="テストの許容誤差 1e-10")
ax.axhline(np.finfo(float).eps, color="0.5", ls=":", label="float64 の機械イプシロン")
ax.set(yscale="log", ylim=(1e-18, 1e-8), ylabel="最大相対誤差",
       title="NumPy 版の双子は章のスカラー版と一致する（バッチ形 (2, 3)）")
ticks = [k.replace(" fwd", " 順伝播").replace(" bwd", " 逆伝播") for k in names_]
ax.set_xticks(range(len(names_)), ticks, rotation=30, ha="right")
ax.legend(fontsize=8, loc="upper left")
plt.tight_layout()
plt.show()

# %% [markdown]
# すべて機械イプシロン（約 $2.2 \times 10^{-16}$）程度で一致します。NumPy 版は第22章の GPT の高速エンジン（`--engine numpy`）で使われ、
# スカラー版は1つ1つの勾配を追いかけるための「読める」実装です。同じ数学の2つの書き方です。

# %% [markdown]
# ## まとめ
#
# | 関数 | 章の最小例 | 逆伝播で見たこと | 節 |
# |---|---|---|---|
# | `linear(x, w)` | $w = [[3, 4]]$、$x = [1, 2]$ で 11 | $x_j$ はすべての出力に使われるので、勾配は全出力から足し合わされる（NumPy 版では `dy @ w`） | §1, §6 |
# | `softmax(logits)` | `[1, 2]` | ヤコビアン $\mathrm{diag}(p) - pp^\top$ の各行の和は 0（シフト不変性）。だから `max_val` は定数として扱ってよい | §2 |
# | `rmsnorm(x)` | `[3, 4]` | $x_j$ から出力へは直接の道と `scale` を経由する道がある。`scale` を定数扱いすると勾配が間違い、`gradient_check` が FAIL を出す | §3, §4 |
# | LayerNorm | `[1, 2, 3, 4]` と `[101, …, 104]` | 平均を引く（中心化）ので、全成分に同じ数を足しても出力が変わらない。RMSNorm は引かない | §5 |
#
# ## 理解度チェック
#
# **Q1.** `linear(x, w)` で `w` が3行2列（出力3、入力2）のとき、$\partial y_1/\partial x_0$ と $\partial y_1/\partial w_{10}$ はそれぞれ何ですか。
# 損失から `backward()` したとき、`x[0].grad` には何が集まりますか。
#
# <details><summary>答え</summary>
#
# $y_1 = w_{10} x_0 + w_{11} x_1$ なので $\partial y_1/\partial x_0 = w_{10}$、$\partial y_1/\partial w_{10} = x_0$（§1 の最小例と同じ形）。
# $x_0$ は3つの出力すべてに使われるので、`x[0].grad` には3本の道の和 $\sum_o w_{o0}\,\partial L/\partial y_o$ が集まります（NumPy 版では `dx = dy @ w`）。
#
# </details>
#
# **Q2.** `softmax` が最大値を引くのは何のためですか。また `max_val` を `.data` から取って（計算グラフの外の定数として）扱っても勾配が変わらないのはなぜですか。
#
# <details><summary>答え</summary>
#
# 指数のオーバーフローを防ぐためです（§2：$c = 1000$ だと `exp` があふれる）。引いた後の最大の指数は $e^0 = 1$ になります。
# 勾配が変わらないのはシフト不変性のためです。全 logits に同じ定数を足しても確率は変わらないので $J\mathbf{1} = 0$（ヤコビアンの各行の和が 0）で、
# `max_val` を通る道の寄与 $-(J\mathbf{1})_i\,\partial m/\partial z_k$ はちょうど 0 になります。§2 で、最大値をグラフに入れた版とヤコビアンが一致することを確かめました。
#
# </details>
#
# **Q3.** softmax のヤコビアンの **列** の和 $\sum_i \partial p_i/\partial z_j$ が 0 になるのはなぜですか（行の和とは別の理由で）。
#
# <details><summary>答え</summary>
#
# 確率の和 $\sum_i p_i$ が $z$ によらず常に 1 なので、それをどの $z_j$ で微分しても 0 だからです。
# $J = \mathrm{diag}(p) - pp^\top$ は対称なので、行の和（シフト不変性）と列の和（和が 1）が両方 0 になります。
#
# </details>
#
# **Q4.** `rmsnorm` の `scale` を、`max_val` と同じように `.data` から計算すると何が起きますか。
#
# （答えは、練習問題 2 の答えそのものに触れるので、練習問題 2 のチェックセルの後にあります。）
#
# **Q5.** `[1, 2, 3, 4]` と `[101, 102, 103, 104]` を LayerNorm と RMSNorm に通すと、それぞれどうなりますか。
#
# <details><summary>答え</summary>
#
# LayerNorm は中心化（平均を引く）のでどちらも同じ `[-1.34, -0.45, 0.45, 1.34]` になります（softmax と同じくシフト不変）。
# RMSNorm は平均を引かないので、`[101, …, 104]` では共通成分 100 が残り、出力は各成分がほぼ 1 の `[0.985, 0.995, 1.005, 1.015]` になります（§5 の出力）。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 各問の解答セルの `raise NotImplementedError` を自分のコードに置き換え、その下のチェックセルを実行すると「正解」か「不正解」が表示されます（書く前は「未回答」）。
# 正解すると、その下に解答例（折りたたみ）が出ます。チェックは、シードを固定した入力であなたの関数を呼び終えてから、プロジェクトの関数や `backward()` で期待する答えを計算して比べます。
#
# - 答えそのものを計算してしまうプロジェクトの逆伝播（`backward()` や `*_backward`）は、あなたの関数が動いている間は使えません（呼ぶと 不正解。あらかじめ取ったコピーも見分けます）。
# - 数値微分（中心差分やリチャードソン補外）では正解になりません。チェックは、差分商が桁を失う入力（ロジット ±5000、16 桁も大きさの違う成分が並ぶ行）と、
#   相対誤差 $10^{-12}$ の厳しさで比べます。
# - これらは思いとどまらせるための仕組みで、防ぎきるものではありません。式を自分で導くことが、この練習の中身です。
#
# ### 練習問題 1：log-softmax のヤコビアン行列
#
# §2 では softmax そのもののヤコビアン $J = \mathrm{diag}(p) - pp^\top$ を見ました。第22章の損失（交差エントロピー $-\log p_t$）が使うのは確率の **対数** です。
# logits `z`（形 `(n,)` の NumPy 配列）を受け取り、$p = \mathrm{softmax}(z)$ の対数のヤコビアン $\partial \log p_i/\partial z_j$ を形 `(n, n)` の NumPy 配列で返す関数
# `log_softmax_jacobian(z)` を書いてください（$i$ が行、$j$ が列）。ロジットには ±1000 や ±5000 のような大きな値も来ます
# （`utils.softmax_np` は使ってかまいません）。
#
# チェックは、第 $i$ 行を「正解が $i$ のときの交差エントロピー $-\log p_i$ の勾配」（`utils.cross_entropy_np_backward`）の符号を変えたものと比べます。
# チェックの間は逆伝播の関数（`utils.softmax_np_backward`、`utils.cross_entropy_np_backward` など）と `backward()`（§2 の `jacobian` 関数も）が使えません。
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
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


# %%
exercises.check_02_log_softmax_jacobian(log_softmax_jacobian)

# %% [markdown]
# ### 練習問題 2：RMSNorm の逆伝播
#
# 形 `(..., n)` の NumPy 配列 `dy` と `x`（最後の軸が1本のベクトル、先頭の軸はバッチ）を受け取り、$y = \mathrm{rmsnorm}(x)$（章と同じ $\epsilon = 10^{-5}$）の
# 入力についての勾配 $dx_j = \sum_i dy_i\,\partial y_i/\partial x_j$ を同じ形で返す関数 `rmsnorm_backward(dy, x)` を書いてください。
#
# チェックは、章のスカラー版 `rmsnorm` に損失 $\sum_i dy_i y_i$ の `backward()` をかけた勾配と、ランダムな行と、$10^{8}$ と $10^{-8}$ の成分が並ぶ行で比べます。
# チェックの間は `utils.rmsnorm_np_backward` と `backward()` が使えません（どちらも答えそのものを計算してしまうので）。
#
# <details><summary>ヒント 1</summary>
#
# §3 の手計算（$n = 2$）と同じく、$x_j$ から $y_i$ へは2つの道があります。直接の道と、`scale` を経由する道です。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# `scale` $= (m + \epsilon)^{-1/2}$、$m = \frac1n\sum_i x_i^2$ です。`scale` を $m$ で、$m$ を $x_j$ で微分して掛け合わせ、2つの道を $dy$ で重み付けして足してください。
# バッチの軸があっても、和は最後の軸だけでとります。
#
# </details>

# %%
def rmsnorm_backward(dy, x):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


# %%
exercises.check_02_rmsnorm_backward(rmsnorm_backward)

# %% [markdown]
# <details><summary>理解度チェック Q4 の答え（練習問題 2 を解いてから開いてください）</summary>
#
# 順伝播の値は同じですが、`backward()` は `scale` が $x$ に依存することを知らず、`scale` を経由する道が抜け落ちます。
# この道の寄与は 0 ではないので勾配は間違い、§4 の `gradient_check` は FAIL を出して False を返しました。
# 定数扱いしてよいかどうかは、その値を通る道の寄与が 0 になるかどうかで決まります（`max_val` ではシフト不変性で 0 になりました）。
#
# </details>
#
# ### 練習問題 3：LayerNorm の逆伝播
#
# §5 の `layernorm_np` と同じ $y = (x - \mu)/\sqrt{\sigma^2 + \epsilon}$（$\mu$ は最後の軸の平均、$\sigma^2$ は分散 `x.var(axis=-1)`、$\epsilon = 10^{-5}$、学習可能な倍率・バイアスなし）について、
# 形 `(..., n)` の `dy` と `x` から勾配 $dx$ を同じ形で返す関数 `layernorm_backward(dy, x)` を書いてください。
#
# チェックは、LayerNorm を `Value` で組んで損失 $\sum_i dy_i y_i$ を `backward()` した勾配と、ランダムな行、大きさが16桁違う成分の並ぶ行、
# ほぼ一定の行（分散が $\epsilon$ よりずっと小さい）で比べます。あなたの関数が動いている間は `backward()` が使えません。
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
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


# %%
exercises.check_02_layernorm_backward(layernorm_backward)
