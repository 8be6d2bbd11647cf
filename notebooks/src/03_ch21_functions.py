# %% [markdown]
# # 第21章 microgpt のユーティリティ関数（1）：`linear` / `softmax` / `rmsnorm` を自分で書く
#
# （目安：本編 約38分、練習問題 約24分）
#
# **対応する章:** microgpt 本 第21章「microgpt のユーティリティ関数」。
# 第22章の `gpt` から何度も呼ばれる3つの部品を、章のコードを見ながら自分で書き、章の最小例の値を確かめます。逆伝播は次のノート 04 で書きます。
#
# このノートで見られるもの（先頭の §N がその節）：
#
# - **§0**：章の行番号（microgpt.py L129–L144）と、このプロジェクトでコードが実際にあるファイル（`utils.py`）。
# - **§1〜§3**：`linear`、`softmax`、`rmsnorm` を `Value` のリストの関数として自分で書き、チェックで `utils.py` と比べる。章の最小例（§1 `linear` → 11、§2 `softmax([1, 2])`、§3 `rmsnorm([3, 4])`）の値。
#   §2 では、softmax の入力 logits が「まだ確率になっていない生のスコア」であること（負の値もあり、和は 1 でない。`lm_head` が作る）と、最大値を引く理由（ロジット ±5000）も見ます。
# - **§4**：ノート 01 の自分の `Value` を貼り、自分の `linear` をその上で動かして、値と勾配を `value.py` と比べる。
# - **発展**（読み飛ばしてかまいません）：LayerNorm と RMSNorm を同じベクトルに適用し、「平均を引くかどうか」の違いを図で見る。LayerNorm の学習可能な倍率とバイアス、
#   microgpt.py の「GPT-2 との相違点」のコメントが指す違い。
# - **まとめ、理解度チェックと練習問題**：log-softmax と LayerNorm を `Value` で書く。
#
# **チェックについて：** 各チェックは、あなたの関数と `utils.py` の関数（章のコード）を同じ入力で動かし、
# 点ごとに「完全一致」「近い」（丸め誤差の範囲）「最大の差」を表にします。入力には、書き方の違いが表に出る点（ロジット ±5000、ゼロベクトルなど）も入れてあります。
# 答えはこのプロジェクト自身の関数が計算しているので、それを呼べばチェックは通ってしまいます。大事なのは、自分で書くことです。
# 行き詰まったら、チェックの下の「行き詰まったら：解答例」を開いてください。
# §2 と発展には「予想してから確かめる」問いがあります。答えを開く前に、次のセルが何を表示するか予想してみてください。

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

import microgpt
import model_config
import utils
from value import NumericError, Value  # the chapter: utils.linear ...; yours: linear ...

plt.rcParams["figure.dpi"] = 110
np.set_printoptions(precision=6, suppress=True)


# %% [markdown]
# ## 0. 章の行番号と、コードのあるファイル
#
# 章は `linear` を「L129–L131」、`softmax` を「L133–L138」、`rmsnorm` を「L140–L144」と、**microgpt.py** の行番号で示します（3つで L129–L144）。
# これは参照実装（Karpathy の microgpt、1ファイル）の、章が使った版の行番号です（章のコードには日本語の docstring が付いていて、どのリビジョンかは章に書かれていません。発展の「microgpt.py のコメント」を参照）。このプロジェクトでは3つの関数は **`utils.py`** にあり、
# `microgpt.py` はそれを import して使います。行番号も違うので、実行時のソースから確かめます（ファイル名と行番号は `inspect` が返すもの）。


# %%
for fn, chapter_lines in ((utils.linear, "L129-L131"), (utils.softmax, "L133-L138"), (utils.rmsnorm, "L140-L144")):
    lines, start = inspect.getsourcelines(fn)
    print(f"{fn.__name__:8s} 章: microgpt.py {chapter_lines} | ここ: {Path(inspect.getsourcefile(fn)).name} "
          f"L{start}-L{start + len(lines) - 1}")
print("microgpt.py の import 文:", [line for line in inspect.getsource(microgpt).splitlines()
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
# 重み行列 `w` は「行が出力次元、列が入力次元」のリストのリストで、出力の各成分は `w` の1行と入力ベクトル `x` の内積です。
# 章の最小例は入力2次元・出力1ニューロン：$x = [1, 2]$、$w = [[3, 4]]$ で $y_0 = 3 \times 1 + 4 \times 2 = 11$。

#
# 下の `linear(x, w)` を書いてください。`x` は `Value` のリスト、`w` は `Value` のリストのリストで、戻り値は `Value` のリストです。
# チェックは章の例のほか、入力3個・出力2個、入力1個・出力3個の形でも比べます（行と列を取り違えると、形か値が合わなくなります）。

# %%
def linear(x, w):
    # ここに書く：出力の第 o 成分は、w の第 o 行と x の内積
    raise NotImplementedError


# %%
exercises.check_03_linear(linear)

# %% [markdown]
# 章の最小例を、章のコード `utils.linear` で計算します（あなたの `linear` でも同じ値になるはずです）。

# %%
y = utils.linear([Value(1.0), Value(2.0)], [[Value(3.0), Value(4.0)]])
print("章の例 linear([1, 2], [[3, 4]]) =", [v.data for v in y], "（3×1 + 4×2 = 11）")

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
print("ロジット = linear(h, lm_head) と完全に一致:", np.array_equal(logits_np, utils.linear_np(h_last, params["lm_head"])))
for pos, z in enumerate(logits_np):
    p = utils.softmax_np(z)
    print(f"位置 {pos}: ロジットの範囲 [{z.min():+.3f}, {z.max():+.3f}]、負の値 {int((z < 0).sum())} / {z.size} 個、"
          f"和 {z.sum():+.3f} | softmax: すべて 0 以上 {bool((p >= 0).all())}、和 {p.sum():.15f}")

# %% [markdown]
# ロジットには負の値がいくつもあり、和もばらばらです（上の出力）。softmax は、このスコアを「0 以上で、すべて足すと 1」の確率に変える関数です。
# 章の説明どおり「最大値を引いてから指数するので、オーバーフローを抑えた実装です。」
# 最小例 `[1, 2]`：$\exp(1-2) = e^{-1}$、$\exp(2-2) = 1$、正規化の分母は $1 + e^{-1}$、確率は $[e^{-1}, 1]/(1 + e^{-1}) = [0.2689, 0.7311]$。
# `max_val` は `.data` から取ったただの数（章の言葉では「全 logits の最大（スカラー）」）なので、計算グラフのノードにはなりません。

#
# 下の `softmax(logits)` を書いてください（`Value` のリストを受け取り、`Value` のリストを返す）。指数は `Value` の `.exp()` です。
# チェックはロジット ±1000、±5000 の行でも比べます。最大値を引かずに書くと、そこで `Value.exp` がオーバーフローのエラーを出し、表のその行にエラーが表示されます。

# %%
def softmax(logits):
    # ここに書く：最大値（ただの数）を引いてから exp、和で割る
    raise NotImplementedError


# %%
exercises.check_03_softmax(softmax)

# %% [markdown]
# **予想してから確かめる：** `[1, 2]` のすべての logits に $c = -100, 0, 3.5, 1000$ を足して章の `softmax` に通すと、出力はどうなるでしょうか。
# また、最大値を引かずに $e^{2 + 1000}$ を直接計算しようとすると、何が起きるでしょうか。
#
# <details><summary>答え</summary>
#
# どの $c$ でも出力は `[0.2689, 0.7311]` のままです。分子と分母の $e^c$ が約分されるからです（**シフト不変性**）：
# $\mathrm{softmax}(z + c\mathbf{1})_i = e^{z_i + c}/\sum_j e^{z_j + c} = \mathrm{softmax}(z)_i$。章の `softmax` は最大値を引くので、指数に入るのは常に $-1$ と $0$ です。
# 最大値を引かずに $e^{1002}$ を計算すると float の上限（約 $e^{709.78}$）を超えるので、`Value.exp` は `NumericError` を出します（下のセルの最後の行）。
#
# </details>

# %%
for c in [-100.0, 0.0, 3.5, 1000.0]:
    shifted = utils.softmax([Value(1.0 + c), Value(2.0 + c)])
    print(f"c = {c:7.1f}: softmax([1 + c, 2 + c]) = {[q.data for q in shifted]}")

try:
    Value(2.0 + 1000.0).exp()  # what softmax would compute without subtracting max_val first
except NumericError as e:
    print("最大値を引かないと:", e)

# %% [markdown]
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

#
# 下の `rmsnorm(x)` を書いてください。`** -0.5` は `Value` の累乗です。チェックはゼロベクトルと、$\epsilon = 10^{-5}$ より二乗平均が小さいベクトル `[1e-3, -2e-3]` でも比べます。
# $\epsilon$ を忘れると、ゼロベクトルで 0 の $-1/2$ 乗（0 除算）になり、小さなベクトルでも出力がずれます。

# %%
def rmsnorm(x):
    # ここに書く：ms = 二乗の平均、scale = (ms + 1e-5) ** -0.5、各成分に scale を掛ける
    raise NotImplementedError


# %%
exercises.check_03_rmsnorm(rmsnorm)

# %% [markdown]
# 章の最小例を、章のコード `utils.rmsnorm` で計算します。

# %%
y = utils.rmsnorm([Value(3.0), Value(4.0)])
scale = (12.5 + 1e-5) ** -0.5
print("章の例 rmsnorm([3, 4]) =", [v.data for v in y])
print("手計算                 =", [3 * scale, 4 * scale])
print("出力の二乗平均         =", sum(v.data**2 for v in y) / 2)


# %% [markdown]
# ## 4. ノート 01 の自分の `Value` で `linear` を動かす
#
# `linear` が使う演算は `+` と `*` だけで、どちらもノート 01 で自分で書きました。ノート 01 の `Value` のクラスと `add`、`mul`、`tanh`、`topological_order`、`backward` の
# セルを、下のセルの `r'''` と `'''` の間に貼ると、ここで書いた `linear` を **自分のエンジンの上で** 動かし、値と勾配を `value.py` の `Value` と `utils.linear` に比べます。
# 貼ったコードは、このノートの `Value`（`value.py` のもの）と混ざらないよう、別の名前空間で実行します（`exec`）。
# 貼らなければ、この比較は飛ばします。`softmax` の `exp` と `rmsnorm` の累乗はノート 01 の `Value` にないので、この2つは `value.py` の `Value` で動かします（06、08、10 で足し、ノート 10 で3つとも自分の `Value` の上で動かします）。

# %%
NOTEBOOK_01 = r'''
# ここにノート 01 の Value のクラスと add、mul、tanh、topological_order、backward を貼る (paste notebook 01's)
'''

# %%
import math

notebook_01 = {"math": math}            # its own namespace: its Value stays apart from value.py's
exec(NOTEBOOK_01, notebook_01)
MyValue = notebook_01.get("Value")      # None until notebook 01's cells are pasted


def weighted_linear(ValueClass, linear_fn, x, w):
    """[L, dL/dx..., dL/dw...] for L = sum_o c_o * linear(x, w)_o, built from ValueClass."""
    xs, ws = [ValueClass(v) for v in x], [[ValueClass(v) for v in row] for row in w]
    out = linear_fn(xs, ws)
    loss = sum(c * y for c, y in zip((0.5, -2.0, 3.0), out))
    loss.backward()
    return [loss.data] + [v.grad for v in xs] + [v.grad for row in ws for v in row]


if MyValue is None:
    print("ノート 01 の Value が貼られていないので、この比較は飛ばします")
else:
    r = np.random.default_rng(21)
    exercises.compare("ノート 01 の Value の上の linear（L と勾配を並べたもの）",
                      lambda x, w: weighted_linear(MyValue, linear, x, w),
                      lambda x, w: weighted_linear(Value, utils.linear, x, w),
                      [("x 3 個、w 3 × 3", (r.normal(size=3), r.normal(size=(3, 3)))),
                       ("x 4 個、w 3 × 4、1e8 と 1e-8", (np.array([1e8, -1.0, 1e-8, 2.0]), r.normal(size=(3, 4))))])


# %% [markdown]
# ## 発展：LayerNorm と RMSNorm を並べる（読み飛ばしてよい）
#
# 章の注記の LayerNorm を、本編の RMSNorm と並べて数で確かめます。練習問題 2 の LayerNorm の準備にもなります。

# %% [markdown]
# 章の注記のとおり、LayerNorm は「中心化（平均を引く）→ スケーリング（標準偏差で割る）」、RMSNorm は中心化を省いて RMS で割るだけです。
# どちらも目的は同じで、層を重ねても中間の値が極端に大きくも小さくもならないようにし、勾配が安定して流れるようにすることです。
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
    print(f"x = {v}\n   RMSNorm   → {utils.rmsnorm_np(v)}\n   LayerNorm → {layernorm_np(v)}")

# %% [markdown]
# 章の注記はスケーリングを「成分の分散（または標準偏差）で割る（ばらつきの大きさをおおよそ 1 に）」と書いていますが、ばらつきが 1 に揃うのは標準偏差（分散の平方根）で割った場合だけです。
# 分散で割ると、入力を 10 倍すれば出力は 1/10 になります（上の `layernorm_np` は標準偏差 $\sqrt{\sigma^2 + \epsilon}$ で割っています）：

# %%
v = np.array([1.0, 2.0, 3.0, 4.0])
for k in (1.0, 10.0):
    centered = k * v - (k * v).mean()
    var = (k * v).var() + 1e-5
    print(f"x = {k:4g} × [1, 2, 3, 4]: 標準偏差で割る → {centered / np.sqrt(var)}、"
          f" 分散で割る → {centered / var}")

# %% [markdown]
# `[1, 2, 3, 4]` と、それに 100 を足した `[101, …, 104]` を比べると違いがはっきりします。
# LayerNorm は平均を引くので両者は同じ出力になり（softmax と同じシフト不変性）、RMSNorm では大きな共通成分が残って各成分がほぼ 1 に揃ってしまいます。
#
# 2 次元の点の雲に当てると、幾何学的な違いが見えます。RMSNorm の出力は二乗平均がほぼ 1、つまりノルムがほぼ $\sqrt{n} = \sqrt 2$ で、**円の上** に乗ります
# （幾何学講義 第3回「プラネタリウムの建設: 球面へのパラダイムシフト」の、単位超球面への $L_2$ 正規化とほぼ同じで、半径が 1 でなく $\sqrt n$ なだけ。第3回講義のノートを参照）。2 次元の LayerNorm は平均を引くと $(t, -t)$ の形しか残らないので、
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
print("gamma = 1, beta = 0 なら layernorm_np と完全に一致:",
      np.array_equal(layernorm_affine_np(x4, gamma0, beta0), layernorm_np(x4)))
gamma, beta = np.array([2.0, 2.0, 0.5, 0.5]), np.array([0.0, 1.0, 0.0, -1.0])   # as learning might set them
out = layernorm_affine_np(x4, gamma, beta)
print("gamma =", gamma, "beta =", beta, "のとき")
for row, o in zip(x4, out):
    print(f"  x = {row} → y = {o}   平均 {o.mean():+.3f}、標準偏差 {o.std():.3f}")
extra = cfg.n_embd * (1 + 2 * cfg.n_layer)                      # one norm after the embedding, two per layer
print(f"microgpt の1位置あたりの rmsnorm の呼び出し: {1 + 2 * cfg.n_layer} 回（n_layer = {cfg.n_layer}）。"
      f"それぞれに長さ n_embd = {cfg.n_embd} の倍率を付けると {extra} 個、倍率とバイアス（LayerNorm）なら {2 * extra} 個のパラメータが、"
      f"モデルの {sum(a.size for a in params.values())} 個に加わる")

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
print("microgpt.py で GPT-2 に触れる行:", [line.strip() for line in src_microgpt.splitlines() if "GPT-2" in line])
print("gpt() は rmsnorm で正規化:", "rmsnorm(" in src_gpt, "| layernorm を使う:", "layernorm" in src_gpt.lower())
print("名前に bias を含むパラメータ:", [key for key, _ in model_config.param_shapes(cfg) if "bias" in key])
print("gpt() の MLP の活性化関数:", [name for name in ("relu", "gelu") if f".{name}()" in src_gpt])

# %% [markdown]
# RMSNorm を使い、バイアスは1つもなく、活性化関数は ReLU です（上の出力）。倍率 $\gamma$ がないので、microgpt の `rmsnorm` の出力は常に RMS がほぼ 1
# （ノルムがほぼ $\sqrt{\text{n\_embd}}$）で、大きさを調整する役目は、その後の `linear` の重みが担います。

# %% [markdown]
# ## まとめ
#
# | 関数 | 章の最小例 | 書くときの要点 | 節 |
# |---|---|---|---|
# | `linear(x, w)` | $w = [[3, 4]]$、$x = [1, 2]$ で 11 | 出力の第 $o$ 成分は `w` の第 $o$ 行と `x` の内積（`w` は「行が出力、列が入力」） | §1 |
# | `softmax(logits)` | `[1, 2]` → `[0.2689, 0.7311]` | 最大値（ただの数）を引いてから指数。引いても確率は変わらない（シフト不変性）が、引かないとロジット 1000 で指数があふれる | §2 |
# | `rmsnorm(x)` | `[3, 4]` → `[0.8485, 1.1314]` | 二乗平均に $\epsilon = 10^{-5}$ を足してから $-1/2$ 乗。ゼロベクトルでも割り算が起きない | §3 |
# | 自分の `Value` の上の `linear` | ノート 01 の `Value` を貼って比べる | `+` と `*` だけなので、ノート 01 のエンジンで値も勾配も `value.py` と一致する。`softmax` と `rmsnorm` には `exp` と累乗が要る | §4 |
# | LayerNorm | `[1, 2, 3, 4]` と `[101, …, 104]` | 平均を引く（中心化）ので、全成分に同じ数を足しても出力が変わらない。RMSNorm は引かない | 発展 |
#
# ## 理解度チェック
#
# **問1.** `linear(x, w)` で `w` が3行2列（出力3、入力2）のとき、出力は何個で、$y_1$ はどの数の内積ですか。
#
# <details><summary>答え</summary>
#
# 出力は3個（`w` の行の数）です。$y_1 = w_{10} x_0 + w_{11} x_1$、つまり `w` の第1行と `x` の内積です。
#
# </details>
#
# **問2.** `softmax` が最大値を引くのは何のためですか。引いても結果が変わらないのはなぜですか。
#
# <details><summary>答え</summary>
#
# 指数のオーバーフローを防ぐためです（§2：$c = 1000$ だと `exp` があふれる）。引いた後の最大の指数は $e^0 = 1$ になります。
# 全 logits から同じ数を引いても、分子と分母の $e^{-m}$ が約分されるので確率は変わりません（シフト不変性）。
#
# </details>
#
# **問3.** `[1, 2, 3, 4]` と `[101, 102, 103, 104]` を LayerNorm と RMSNorm に通すと、それぞれどうなりますか。
#
# <details><summary>答え</summary>
#
# LayerNorm は中心化（平均を引く）のでどちらも同じ `[-1.34, -0.45, 0.45, 1.34]` になります（softmax と同じくシフト不変）。
# RMSNorm は平均を引かないので、`[101, …, 104]` では共通成分 100 が残り、出力は各成分がほぼ 1 の `[0.985, 0.995, 1.005, 1.015]` になります（発展の出力）。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 各問の解答セルの関数を書き、すぐ下のチェックセルを実行してください。チェックは §1〜§3 と同じく、比べた表を出します（書く前は 未回答）。
#
# ### 練習問題 1：log-softmax
#
# 第22章の損失（交差エントロピー $-\log p_t$）が使うのは確率の **対数** です。logits（`Value` のリスト）を受け取り、
# $\log p_i$（$p = \mathrm{softmax}(z)$）を `Value` のリストで返す関数 `log_softmax(z)` を書いてください。
# チェックはロジット ±1000、±5000 の行でも比べます。そこでは $\log p_i$ が約 $-2000$、$-10000$ の普通の数ですが、$p_i$ そのものは float64 で 0 になります。
#
# <details><summary>ヒント 1</summary>
#
# $\log p_i$ を、$p_i$ の定義から $z$ だけの式に書き直してみてください（$\log$ と $\exp$ が打ち消し合う部分があります）。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $\log p_i = z_i - \log\sum_k e^{z_k}$。$\log\sum_k e^{z_k}$ は、最大値 $m$ を引いて $m + \log\sum_k e^{z_k - m}$ と計算すればあふれません。
# `[p.log() for p in softmax(z)]` では、$p_i = 0$ の成分で $\log 0$ になります。
#
# </details>

# %%
def log_softmax(z):
    # ここに解答を書く
    raise NotImplementedError


# %%
exercises.check_03_log_softmax(log_softmax)

# %% [markdown]
# ### 練習問題 2：LayerNorm を `Value` で書く
#
# 発展の `layernorm_np` と同じ $y = (x - \mu)/\sqrt{\sigma^2 + \epsilon}$（$\mu$ は平均、$\sigma^2$ は分散、$\epsilon = 10^{-5}$、学習可能な倍率・バイアスなし）を、
# `Value` のリストを受け取り `Value` のリストを返す関数 `layernorm(x)` として書いてください。
# チェックは、発展の2つのベクトルと、ほぼ一定の行（分散が $\epsilon$ よりずっと小さい）で比べます。
#
# <details><summary>ヒント 1</summary>
#
# `rmsnorm` との違いは、先に平均を引くことだけです。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# `mu = sum(x) / len(x)`、`centered = [v - mu for v in x]` として、`centered` の二乗平均（分散）に $\epsilon$ を足して $-1/2$ 乗し、`centered` に掛けます。
#
# </details>

# %%
def layernorm(x):
    # ここに解答を書く
    raise NotImplementedError


# %%
exercises.check_03_layernorm(layernorm)
