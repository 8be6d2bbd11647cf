# %% [markdown]
# # 第3回 プラネタリウムの建設（前半）：講義の4つのコード例を PyTorch なしで
#
# **対応する講義:** 幾何学講義 第3回「プラネタリウムの建設: 球面へのパラダイムシフト」の「実装ノート」の4つのコード例と、
# そこに出てくる考え方（$\mathbb{R}^d$ と単位球面 $\mathbb{S}^{d-1}$、正規化と球面制約、リトラクション、von Mises–Fisher 分布の形）。
# 講義の後半（vMF 分布と softmax、nGPT の学習、プラネタリウム、球面設計の限界、曲率）は **ノート 06** で扱います。
#
# **読む時間の目安：約 30 分**（コードを実行しながらなら、もう少し）。
#
# 講義の4つのコード例（PyTorch）を、このプロジェクトの `sphere.py`（NumPy とスカラー `Value`）で書き直し、講義のコードが実際に何を表示するかを確かめます。
# このノートで見られるもの：
#
# 1. **`03_l2_normalize`**：ノルムの平均 1.000000、標準偏差 0.000000 と表示される理由。768 個の数でできた点が、なぜ 767 次元の球面 $\mathbb{S}^{767}$ の上の点なのか。
#    正規化の勾配が接空間に入ること。
# 2. **`03_fp16_instability_demo`**：講義のスクリプトが PyTorch 2.x で実際に表示する値を NumPy で再現し、コメントとの食い違いを確かめる。
#    安全な正規化 $x/\max(\lVert x\rVert, \epsilon)$ と、ゼロ近傍の勾配（講義の「足す ε」と、`F.normalize` の「クランプする ε」）。
# 3. **`03_normalized_linear`**：初期化で1回正規化した重みは、学習で球面から外れること。講義の残差 $x + \alpha f(x)$ と nGPT の残差の違いを、α のスライダーで。
# 4. **`03_vmf_distribution_plot`**：円周上の vMF 密度（κ のスライダーつき）。講義の「vMF と正規分布の対応」の表の「指数関数的な減衰（角度に対して）」を確かめる。
# 5. まとめ、理解度チェック（答えは折りたたみ）、練習問題2題（チェックセルが 正解 / 不正解 / 未回答 を表示し、正解すると解答例を開ける）。
#
# §2 には「予想してから確かめる」問いがあります。答えを開く前に、次のセルが何を表示するか予想してみてください。
# スライダーつきの図は、Jupyter で ipywidgets を入れて実行したときに動かせます。実行済みのノートには、決まった値での図が入っています。

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

import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np
from figures import (
    slider_figure,  # notebooks/figures.py: a figure with sliders in Jupyter, static when run headless
)

import microgpt
import sphere
from sphere import (
    cosine_similarity_np,
    geodesic_distance_np,
    l2_normalize,
    l2_normalize_np,
    l2_normalize_np_backward,
    normalize_matrix,
    retract,
)
from utils import linear_np, linear_np_backward, rmsnorm_np
from value import Value

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=6, suppress=False)

# %% [markdown]
# ## 1. 基本的な正規化（コード例 `03_l2_normalize.py`）
#
# 講義は `F.normalize(x, p=2, dim=-1, eps=1e-12)` を使います。`sphere.l2_normalize_np` は同じ計算 $y = x / \max(\lVert x\rVert, \epsilon)$ の NumPy 版です。
# バッチ 32・次元 768 のガウス乱数を正規化します。

# %%
rng = np.random.default_rng(0)
embeddings = rng.standard_normal((32, 768))   # batch 32, dimension 768
normalized = l2_normalize_np(embeddings)
norms = np.linalg.norm(normalized, axis=-1)
print(f"norm before: mean {np.linalg.norm(embeddings, axis=-1).mean():.3f}  (about sqrt(768) = {768 ** 0.5:.3f})")
print(f"norm after : mean {norms.mean():.6f}, std {norms.std(ddof=1):.2e}  (float64)")
# the lecture's two lines, as its script prints them: torch.randn is float32, .std() has ddof=1, format .6f
norms32 = np.linalg.norm(l2_normalize_np(embeddings.astype(np.float32)), axis=-1)
print(f"ノルムの平均: {norms32.mean():.6f}")
print(f"ノルムの標準偏差: {norms32.std(ddof=1):.6f}   (float32; unrounded {norms32.std(ddof=1):.1e})")

# %% [markdown]
# 講義のスクリプトは float32（`torch.randn` の既定）で計算し、小数点以下 6 桁で表示するので、`ノルムの平均: 1.000000`、`ノルムの標準偏差: 0.000000` と出ます
# （出力の最後の2行）。標準偏差は 0 ではなく、float32 の丸め誤差の大きさで、6 桁では見えないだけです（`unrounded` の値）。
#
# 正規化する前のノルムは、どのベクトルもほぼ $\sqrt{768}$ にそろっています（出力の1行目）。第2回の「高次元の集中現象」、ガウス分布が殻に集中する様子そのものです。
#
# ### 768 個の数でできた点が、なぜ 767 次元の球面の上にあるのか
#
# 講義の「次元表記の混同に注意」は、768 次元の埋め込みを正規化すると $\mathbb{S}^{767}$ 上の点になる、と一文で述べます。
# $\mathbb{S}^{d-1}$ の肩の数は、その点を **動かせる向きの数**（自由度）です。点そのものは 768 個の数で書かれますが、$\lVert y\rVert = 1$ という1本の式が
# 1つの向き（半径方向）を使えなくするので、球面の上にとどまったまま動ける向きは 767 です。円周（$\mathbb{R}^2$ の中の $\mathbb{S}^1$）なら、2つの座標で書かれる点が、
# 円に沿った1つの向きにしか動けません。
#
# 動ける向きの集まりが、点 $y$ での **接空間** $T_y\mathbb{S}^{d-1} = \{v : v^\top y = 0\}$ です。接空間への射影 $I - yy^\top$ の階数（独立な向きの数）を数えます。

# %%
for d_ in (2, 3, 768):
    y = l2_normalize_np(np.random.default_rng(d_).standard_normal(d_))
    projector = np.eye(d_) - np.outer(y, y)            # onto the tangent space at y
    print(f"R^{d_:<3d}: a unit vector has {d_} coordinates; the tangent space at it has dimension "
          f"{np.linalg.matrix_rank(projector)} (S^{d_ - 1})")

# %% [markdown]
# $\mathbb{R}^2$ の単位ベクトルの接空間は1次元（円周 $\mathbb{S}^1$）、$\mathbb{R}^3$ では2次元（地球の表面のような $\mathbb{S}^2$）、$\mathbb{R}^{768}$ では 767 次元です（出力の3行）。
# 講義の表の「$(d-1)$ 次元球面 $\mathbb{S}^{d-1}$ は $\mathbb{R}^d$ 内の球面」はこのことです。
#
# ### 正規化の勾配は接空間に入る
#
# $y = x/\lVert x\rVert$ のヤコビアンは $(I - yy^\top)/\lVert x\rVert$、つまり接空間への射影を $1/\lVert x\rVert$ 倍したものです。
# 上流の勾配が何であっても、$x$ に戻る勾配は $x$ と直交します。半径方向の動きは正規化で消えるので、勾配もそこへは流れません。
# スカラー版 `sphere.l2_normalize`（`Value` のリスト）の `backward()` と、NumPy 版の逆伝播 `l2_normalize_np_backward` で確かめます。

# %%
x_np = np.array([3.0, -1.0, 2.0])
dy = np.array([0.5, 2.0, -1.0])                   # an arbitrary upstream gradient
x = [Value(v) for v in x_np]
y = l2_normalize(x)
loss = sum(yi * float(g) for yi, g in zip(y, dy))  # L = y . dy, so dL/dy = dy
loss.backward()
dx_scalar = np.array([v.grad for v in x])
dx_twin = l2_normalize_np_backward(dy, x_np)
print("y            =", np.array([v.data for v in y]), " |y| =", np.linalg.norm([v.data for v in y]))
print("dx (Value)   =", dx_scalar)
print("dx (NumPy)   =", dx_twin)
print("dx . x       =", dx_scalar @ x_np, " (orthogonal: the gradient lives in the tangent space)")

# %% [markdown]
# 2つの逆伝播は同じ勾配を返し、`dx . x` は丸め誤差の大きさ、つまり勾配は接空間の中にあります（出力の最後の行）。
#
# ## 2. 数値安定性：float16（コード例 `03_fp16_instability_demo.py`）
#
# 講義のスクリプトは、float16 のごく小さいベクトルとゼロベクトルを正規化して、何が起きるかを表示します。
# ここには PyTorch がないので、PyTorch 2.x（CPU）の計算を NumPy で一つずつ再現します。押さえる点は3つです。
#
# - float16 の最小の正規化数は $2^{-14} \approx 6.1\times10^{-5}$、最小の非正規化数は $2^{-24} \approx 5.96\times10^{-8}$ です。
#   講義の `torch.finfo(torch.float16).tiny / 1024` は $2^{-14}/2^{10} = 2^{-24}$、float16 で表せる **最小の正の数そのもの** です。
# - `x.norm()` は float16 の値を **float32 で累積** し、二乗・和・平方根を float32 で計算してから、結果だけを float16 に丸めます。下の `norm_like_torch` がこれを真似ます。
# - テンソルの表示は小数点以下 4 桁です（PyTorch の既定 `precision=4`）。固定小数点なら `0.5000`、指数表記なら仮数の小数点以下 4 桁で `5.9605e-08` です。
#   下の `torch_str` が同じ規則で書式化します。f 文字列に **0 次元** テンソルを入れると、`Tensor.__format__` が `.item()` を使うので Python の float として表示されます。
#
# **予想してから確かめる：** 講義のスクリプトは、$2^{-24}$ を3つ並べたベクトルのノルムを表示します。コメントは「非常に小さい、または0」です。
# 実際には何が表示されるでしょうか。(a) 0、(b) 本当の値 $\sqrt{3}\cdot 2^{-24} \approx 1.03\times10^{-7}$、(c) そのどちらでもない値。
#
# <details><summary>答え</summary>
#
# (c) です。表示は `ノルム: 1.1920928955078125e-07`、つまり $2^{-23}$ で、本当の値より 15.5% 大きい値です。
# そのため `eps` なしの正規化は NaN にならず、長さ 0.866 の、単位ベクトルでないベクトル `[0.5, 0.5, 0.5]` を返します（次のセルの出力。理由はその後の表とセルで）。
#
# </details>

# %%
def torch_str(a):
    """str(t) for a float16 / float32 tensor as PyTorch 2.x prints it: 4 digits, its rule for scientific notation."""
    a = np.asarray(a)
    v = a.astype(np.float64).ravel()
    nz = np.abs(v[np.isfinite(v) & (v != 0)])
    int_mode = bool(np.all(nz == np.floor(nz)))
    sci = nz.size > 0 and (nz.max() / nz.min() > 1000 or nz.max() > 1e8 or (not int_mode and nz.min() < 1e-4))
    if sci:
        items = [f"{x:.4e}" for x in v]
    elif int_mode:
        items = [f"{x:.0f}" + ("" if np.isnan(x) or np.isinf(x) else ".") for x in v]
    else:
        items = [f"{x:.4f}" for x in v]
    width = max(len(s) for s in items)
    body = ", ".join(s.rjust(width) for s in items)
    dtype = "" if a.dtype == np.float32 else f", dtype=torch.{a.dtype}"  # float32 is the default dtype
    return f"tensor({body if a.ndim == 0 else '[' + body + ']'}{dtype})"


def norm_like_torch(x16):
    """x.norm() of a float16 tensor on CPU: squares, sum and sqrt in float32, the result rounded to float16."""
    x32 = x16.astype(np.float32)
    return np.sqrt(np.sum(x32 * x32, dtype=np.float32)).astype(np.float16)


# the lecture's script, line by line
very_small = float(np.finfo(np.float16).tiny) / 1024                 # a Python float, 2^-24
small_fp16 = np.full(3, very_small, dtype=np.float32).astype(np.float16)
norm_fp16 = norm_like_torch(small_fp16)
unsafe = small_fp16 / norm_fp16
zero_fp16 = np.zeros(3, dtype=np.float16)
with np.errstate(invalid="ignore"):
    zero_by_zero = zero_fp16 / norm_like_torch(zero_fp16)

print("--- what the lecture's script prints under PyTorch 2.x ---")
print(f"入力 (float16): {torch_str(small_fp16)}")
print(f"ノルム: {float(norm_fp16)}")                      # f-string of a 0-d tensor: formatted as a Python float
print(f"Unsafe (epsなし): {torch_str(unsafe)}")
print(f"ゼロ入力 (float16): {torch_str(zero_fp16)}, ノルム: {float(norm_like_torch(zero_fp16))}")
print(f"ゼロをepsなしで割る: {torch_str(zero_by_zero)}")
print("--- then F.normalize(small_fp16.float(), eps=1e-12) raises IndexError and the script stops ---")
print()
print("print(small_fp16.norm()) would show:", torch_str(norm_fp16), f"  (= 2^-23: {float(norm_fp16) == 2.0 ** -23})")
true_norm = np.sqrt(3.0) * 2.0 ** -24
print(f"2^-23 against the true norm sqrt(3) * 2^-24 = {true_norm:.4e}: {float(norm_fp16) / true_norm:.4f} times, "
      f"{float(norm_fp16) / true_norm - 1:.1%} too large")
print("as NumPy arrays: x / norm =", unsafe, f", a vector of length {np.linalg.norm(unsafe.astype(np.float64)):.3f}")

# %% [markdown]
# 講義のスクリプトのコメントと、実際に起きることを並べます（左の列は講義のコードからの引用）。
#
# | 講義のコードのコメント | 実際 |
# |---|---|
# | `# min positive normal ≈ 6e-5 なので、それより十分小さい値は 0 になりやすい` | $2^{-14}$ より小さい値は 0 ではなく **非正規化数** になり、精度が落ちるだけです。0 に丸められるのは $2^{-25}$ 以下です。 |
# | `# → 0 になりうる`（`.half()` の行） | $2^{-24}$ は float16 の最小の非正規化数で、**ちょうど表せます**。入力は 0 になりません。 |
# | `# 非常に小さい、または0`（ノルムの行） | 0 ではなく $2^{-23}$ で、本当の値 $\sqrt{3}\cdot 2^{-24}$ より 15.5% 大きい値です。f 文字列では Python の float として 1.1920928955078125e-07 と表示されます。 |
# | `# eps なしで正規化すると不安定（ノルムが 0 に丸められると NaN/Inf）` | ノルムは 0 にならないので NaN も inf も出ません。出てくるのは長さ 0.866 の [0.5, 0.5, 0.5] で、何の警告もなく球面から外れます。NaN より気づきにくい壊れ方です。 |
# | `# NaN が出る`（ゼロ割り） | そのとおり：$0/0$ は NaN です。 |
# | `# 安全策：ノルム計算をfloat32で行い、epsで保護して正規化` | 考え方は正しいのですが、その行 `F.normalize(small_fp16.float(), eps=1e-12)` は **IndexError** で止まります。`F.normalize` の既定は `dim=1` で、1次元テンソルには次元 0 しかないからです。スクリプトはここで終わり、最後の勾配の例は実行されません。`dim=-1` を渡せば、各成分 0.5771 が返ります。 |
#
# 次のセルで、$2^{-23}$ になる理由を数で追います。

# %%
x32 = small_fp16.astype(np.float32)
norm32 = np.sqrt(np.sum(x32 * x32, dtype=np.float32))
print(f"exact norm sqrt(3) * 2^-24       = {np.sqrt(3.0) * 2.0 ** -24:.4e}")
print(f"float32 norm (before rounding)   = {float(norm32):.4e}  = {float(norm32) / 2.0 ** -24:.3f} x 2^-24")
print(f"rounded to float16               = {float(norm_fp16):.4e}  = {float(norm_fp16) / 2.0 ** -24:.0f} x 2^-24 "
      f"(float16's spacing at this size is {float(np.spacing(np.float16(0))):.4e} = 2^-24)")
units = float(norm32) / 2.0 ** -24
print(f"the float16 numbers on either side: {np.floor(units):.0f} x 2^-24 and {np.ceil(units):.0f} x 2^-24, at distances "
      f"{units - np.floor(units):.3f} and {np.ceil(units) - units:.3f} (in units of 2^-24): round to nearest picks "
      f"{float(norm_fp16) / 2.0 ** -24:.0f} x 2^-24")
print(f"so x / norm = 2^-24 / 2^-23 = {unsafe}, length sqrt(3)/2 = {np.sqrt(3) / 2:.3f}")
print()
print("float16 rounding of tiny numbers:", {f"2^{e}": float(np.float16(2.0 ** e)) for e in (-14, -24, -25)},
      "| 1.5 * 2^-25 ->", float(np.float16(1.5 * 2.0 ** -25)))
with np.errstate(divide="ignore"):
    naive = np.sqrt(np.sum(small_fp16 * small_fp16))           # squares in float16: 2^-48 underflows to 0
    print("a float16-only norm (squares in float16, what plain NumPy float16 does):", naive,
          "-> x / norm =", small_fp16 / naive)
safe32 = l2_normalize_np(small_fp16.astype(np.float32), axis=-1, eps=1e-12)   # F.normalize(..., dim=-1, eps=1e-12)
print("F.normalize(small_fp16.float(), dim=-1, eps=1e-12):", torch_str(safe32), "-> .half():",
      torch_str(safe32.astype(np.float16)))
print("safe recipe on the zero vector:", torch_str(l2_normalize_np(zero_fp16.astype(np.float32)).astype(np.float16)),
      "| eps = 1e-12 in float16 is", float(np.float16(1e-12)), "(the eps only protects in float32)")

# %% [markdown]
# float32 で計算したノルムは $2^{-24}$ の 1.732 倍です（出力の2行目）。float16 はこの大きさでは $2^{-24}$ の整数倍しか表せないので、1.732 倍の両隣の 1 倍と 2 倍のうち、
# 近いほうの 2 倍、つまり $2^{-23}$ に丸められます（`the float16 numbers on either side` で始まる行）。割り算 $2^{-24}/2^{-23}$ はちょうど 0.5 です。
# もし float16 の中だけで二乗していたら、$2^{-48}$ は 0 にアンダーフローして `inf` が出ていたはずで（`a float16-only norm` の行）、講義のコメントが想定していたのはおそらくこちらです。
# PyTorch は float32 で累積するのでアンダーフローは起きず、代わりに **丸めの粗さ** が残ります。
#
# 安全策の中身は「ノルムを float32 で計算し、$x / \max(\lVert x\rVert, \epsilon)$ とクランプしてから float16 に戻す」です。ε = 1e-12 は float16 では 0 になってしまうので（最後の行）、
# ε が効くのは float32 の中だけです。
#
# どの大きさの入力なら正しく正規化できるのかを、入力の大きさ $s$ を $10^{-9}$ から $10^{6}$ まで振って調べます（$x = s\,[1, 2, 3]/\sqrt{14}$ を float16 に丸めたもの）。
# 出力のノルムは 1 であるべきです。

# %%
scales = np.logspace(-9, 6, 400)
direction = np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)
naive, like_torch, safe_norms, zero_in, inf_in = [], [], [], [], []
with np.errstate(all="ignore"):
    for s in scales:
        v16 = (s * direction).astype(np.float16)
        zero_in.append(not v16.any())
        inf_in.append(not np.isfinite(v16).all())
        n16 = np.sqrt(np.sum(v16 * v16))                                   # everything in float16
        naive.append(np.linalg.norm((v16 / n16).astype(np.float64)))
        like_torch.append(np.linalg.norm((v16 / norm_like_torch(v16)).astype(np.float64)))
        safe_norms.append(np.linalg.norm(l2_normalize_np(v16.astype(np.float32)).astype(np.float16).astype(np.float64)))
naive, like_torch, safe_norms = np.array(naive), np.array(like_torch), np.array(safe_norms)
zero_in, inf_in = np.array(zero_in), np.array(inf_in)
in_range = ~zero_in & ~inf_in
off = in_range & (np.abs(like_torch - 1) > 0.01)
print(f"input representable in float16 for s in [{scales[in_range].min():.1e}, {scales[in_range].max():.1e}]; "
      f"there the safe version gives |y| within {np.abs(safe_norms[in_range] - 1).max():.1e} of 1")
print(f"PyTorch-like x / x.norm(): |y| off by more than 1% for s up to {scales[off & (scales < 1)].max():.1e} "
      f"(float16's smallest normal number is {float(np.finfo(np.float16).tiny):.1e}) and from "
      f"{scales[off & (scales > 1)].min():.1e} (the norm itself overflows 65504)")
print(f"float16-only: inf or NaN for s up to {scales[in_range & ~np.isfinite(naive)].max():.1e}, "
      f"|y| off by more than 1% up to {scales[in_range & (np.abs(naive - 1) > 0.01) & (scales < 1)].max():.1e} "
      f"and 0 from {scales[in_range & (naive == 0)].min():.1e}")

fig, ax = plt.subplots(figsize=(11, 4.4))
ok = np.isfinite(naive)
ax.semilogx(scales[ok], naive[ok], ".", ms=3, label="float16 だけで計算（二乗も float16）")
ax.semilogx(scales[~ok], np.full((~ok).sum(), 1.6), "x", color="tab:red", ms=4,
            label="float16 だけで計算：結果が inf か NaN（高さ 1.6 に表示）")
ax.semilogx(scales, like_torch, "-", color="tab:purple", lw=1.2,
            label="PyTorch の x / x.norm()（float32 で累積し、ノルムを float16 に丸める）")
ax.semilogx(scales, safe_norms, "-", color="tab:green", lw=2, alpha=0.6,
            label="安全策：ノルムを float32 で計算し ε でクランプ、最後に float16")
ax.axvspan(scales[0], scales[zero_in].max(), color="0.9", label="入力が float16 で 0 に丸められる／inf に溢れる")
ax.axvspan(scales[inf_in].min(), scales[-1], color="0.9")
ax.axvline(float(np.finfo(np.float16).tiny), color="0.5", ls=":", lw=1)
ax.text(float(np.finfo(np.float16).tiny) * 1.3, 1.72, "float16 の最小の正規化数 $2^{-14}$", fontsize=8, color="0.3")
ax.set(xlabel="入力の大きさ s = ||x||", ylabel="正規化した結果のノルム", ylim=(-0.1, 1.8),
       title="float16 での L2 正規化：アンダーフロー（左）とオーバーフロー（右）")
ax.legend(fontsize=8, loc="lower center")
plt.tight_layout()
plt.show()

# %% [markdown]
# 3通りの計算を、図の左から右へ読みます。境目の $s$ は、図の上に表示した3行の出力にあります。
#
# - **float16 だけで計算**：小さい側では二乗がアンダーフローしてノルムが 0 になり、結果は `inf` か `NaN` です。その少し上では二乗が非正規化数の範囲に入って粗く、
#   ノルムが 1 からずれます。大きい側では二乗が float16 の最大値 65504 を超えて `inf` になり、出力が 0 に潰れます。
# - **PyTorch の `x / x.norm()`**：float32 で累積するので、二乗のアンダーフローもオーバーフローも起きません。1 からずれるのは、ノルムそのものが float16 の
#   非正規化数の範囲に落ちて粗く丸められるときと、右端でノルムが 65504 を超えるときだけです。講義の例（長さ 0.866）は、左の範囲の1点です。
# - **安全策**：入力が float16 で表せる範囲ではどこでも 1 です。左の灰色の範囲では入力そのものが 0 に丸められ、安全策は NaN ではなくゼロベクトルを返します。
#   右の灰色の範囲では入力の成分がすでに `inf` で、どんな正規化でも救えません。

# %% [markdown]
# ### ゼロ近傍の勾配：「足す ε」と「クランプする ε」
#
# 講義のスクリプトの最後（IndexError のせいで実際には実行されない部分）は、$x = [10^{-7}, 10^{-7}, 10^{-7}]$ で `y = x / (x.norm() + 1e-12)` の `y.sum()` を逆伝播し、
# `勾配 (eps保護あり)` を表示します。ここで ε は分母に **足されて** います。`F.normalize` と `sphere.l2_normalize` は違い、$x / \max(\lVert x\rVert, \epsilon)$ と **クランプ** します。
# $\lVert x\rVert = 1.7\times10^{-7}$ は ε = $10^{-12}$ よりずっと大きいので、クランプ形では ε は何もしません。
#
# 下のセルは、PyTorch の autograd がこの式をたどる順番（割り算の逆伝播、足し算またはクランプ、ノルムの逆伝播）どおりに、float32 と float64 で勾配を計算します。

# %%
def grad_of_sum_normalized(x, eps, clamp):
    """d/dx of sum(x / den), den = max(||x||, eps) (clamp) or ||x|| + eps (added), in x's dtype and in the order
    PyTorch's autograd computes it: div backward (grad / den, and -sum(grad * (x / den) / den) for den), then the
    norm backward x * (grad_den / ||x||)."""
    g = np.ones_like(x)                           # d(y.sum())/dy
    n = np.sqrt(np.sum(x * x))
    den = np.maximum(n, eps) if clamp else n + eps
    grad_den = -np.sum(g * ((x / den) / den))
    return g / den + x * (grad_den / n)


for dtype in (np.float32, np.float64):
    x = np.full(3, 1e-7, dtype=dtype)
    eps = dtype(1e-12)
    g_added = grad_of_sum_normalized(x, eps, clamp=False)
    g_clamp = grad_of_sum_normalized(x, eps, clamp=True)
    cos_gx = g_added @ x / (np.linalg.norm(g_added) * np.linalg.norm(x))
    print(f"{dtype.__name__}: x / (||x|| + eps)   : grad {g_added}, g.x = {g_added @ x:.3e}, cos(g, x) = {cos_gx:.6f}")
    print(f"{'':9s}x / max(||x||, eps): grad {g_clamp}")
x = np.full(3, 1e-7, dtype=np.float32)
first_term = np.float32(1) / (np.sqrt(np.sum(x * x)) + np.float32(1e-12))
print("as PyTorch prints x.grad:", torch_str(grad_of_sum_normalized(x, np.float32(1e-12), clamp=False)))
print(f"float32: the two terms are about {first_term:.4e} each; float32's spacing there is {np.spacing(first_term)}")
print(f"formula eps / (||x|| + eps)^2 = {1e-12 / (np.sqrt(3) * 1e-7 + 1e-12) ** 2:.4f}")

# %% [markdown]
# 「eps で保護」した勾配は 0 ではなく、float32 で各成分 32.5、float64 で 33.33 で、しかも **ちょうど $x$ の方向**（`cos(g, x) = 1.000000`）を向いています。クランプ形では 0 です。
#
# 理由はスケール不変性です。$y = x/\lVert x\rVert$ は $x$ を正の数倍しても変わらないので、§1 で見たとおり勾配は接空間に入ります。ここでは上流の勾配 $[1, 1, 1]$ が $y$ と平行で、
# 接空間に残る成分がないので、勾配は 0 です。ε を **足す** と、$x/(\lVert x\rVert + \epsilon)$ は $x$ を伸ばすとわずかに長くなる関数になり、スケール不変性が壊れます。
# $\mathbf{1}^\top y$ の勾配は $\dfrac{\mathbf{1}}{\lVert x\rVert + \epsilon} - \dfrac{\mathbf{1}^\top x}{(\lVert x\rVert + \epsilon)^2 \lVert x\rVert}\,x$ で、
# この $x$ では各成分 $\epsilon/(\lVert x\rVert+\epsilon)^2$（`formula` の行の値）、$x$ に平行な **半径方向** の勾配です。
# float32 では、どちらも約 $5.77\times10^{6}$ の2つの項の差を 0.5 刻みの数で取るので、33.33 ではなく 32.5 になります（`float32: the two terms` の行）。
#
# 破れの大きさは、$\lVert x\rVert$ が小さいほど大きくなります（float64、各成分の値）：

# %%
print(f"{'||x||':>9} {'x / (||x|| + eps)':>20} {'x / max(||x||, eps)':>21}")
for a in (1e-3, 1e-5, 1e-7, 1e-9, 1e-11):
    x = np.full(3, a)
    print(f"{np.linalg.norm(x):9.1e} {grad_of_sum_normalized(x, 1e-12, False)[0]:20.4g} "
          f"{grad_of_sum_normalized(x, 1e-12, True)[0]:21.4g}")

# %% [markdown]
# 同じことを、スカラー版 `sphere.l2_normalize`（クランプ形、float64 の `Value`）の `backward()` でも確かめます。
# ゼロベクトルでは `l2_normalize` は定数 ε で割るので、NaN ではなく有限の勾配 $1/\epsilon$ が出ます。

# %%
x = [Value(1e-7) for _ in range(3)]
sum(l2_normalize(x)).backward()
print("grad at x = 1e-7 * [1, 1, 1]:", [v.grad for v in x])
z = [Value(0.0) for _ in range(3)]
out = l2_normalize(z)
sum(out).backward()
print("zero vector: y =", [v.data for v in out], " grad =", [v.grad for v in z], "(finite, 1/eps)")

# %% [markdown]
# ## 3. nGPT 風の設計：正規化線形層と正規化残差（コード例 `03_normalized_linear.py`）
#
# 講義の `NormalizedLinear` は、`__init__` で重みの行を **1回だけ** 正規化し、`forward` では普通の線形層の **出力** を正規化します。
# `NormalizedResidual` は「$x + \alpha\,f(x)$ を正規化して球面に戻す」でした。クラスの代わりに関数で書きます（`nn.Module` との対応はノート 05）。
# 部品はすべて `sphere.py` と `utils.py` のものです。

# %%
def init_normalized_linear(w):
    """The lecture's __init__: the rows of the weight become unit vectors, once (normalize_matrix, axis=1)."""
    return normalize_matrix(w, axis=1)


def normalized_linear(x, w):
    """The lecture's forward: a plain linear layer, whose output is put back on the sphere."""
    return l2_normalize_np(linear_np(x, w))


def normalized_residual(x, module, alpha=0.1):
    """The lecture's NormalizedResidual: x <- Normalize(x + alpha * module(x)) (the normalization is the retraction)."""
    return retract(x + alpha * module(x))


d = 64
rng = np.random.default_rng(3)
W = init_normalized_linear(rng.normal(0.0, 0.08, (d, d)))
x = l2_normalize_np(rng.standard_normal((1000, d)))      # 1000 unit inputs
raw = linear_np(x, W)
out = normalized_linear(x, W)
print("unit rows of W: norms", np.linalg.norm(W, axis=1)[:4], "...")
print(f"before the output normalization: entries are cosines in [{raw.min():.3f}, {raw.max():.3f}], "
      f"row norms {np.linalg.norm(raw, axis=1).min():.3f} .. {np.linalg.norm(raw, axis=1).max():.3f}")
print(f"normalized_linear output norms: {np.linalg.norm(out, axis=1).min():.15f} .. "
      f"{np.linalg.norm(out, axis=1).max():.15f}")

# %% [markdown]
# ### 重みは学習で球面から外れる：毎ステップのリトラクション
#
# 講義の `NormalizedLinear` が重みを正規化するのは初期化のときだけです。学習で重みを更新すると、行のノルムは 1 から離れていきます。
# 講義自身が「設計の徹底が本質」で述べているとおりです：
#
# > 行列積や加算などの演算を行うと、結果は一般に球面から外れる。nGPTは、更新で球面から外れたら正規化で戻すことで、表現が常に球面上にあることを保証する。
#
# これは重みの更新にも当てはまります。入力 $x \in \mathbb{S}^{15}$ から出力の向き $y \in \mathbb{S}^{7}$ を当てる小さな問題（損失は $1 - \cos(\hat y, y)$ の平均）で、
# 講義の層の重み $W$（8 行 × 16 列）を 300 ステップ学習します。
#
# - **講義のまま**：初期化で正規化し、あとは Adam（`microgpt.adam_step`、microgpt と同じ更新）で更新するだけ。
# - **毎ステップ リトラクション**：各ステップの後で行を正規化し直す（`normalize_matrix(W, axis=1)`。microgpt が球面モードで毎ステップ呼ぶ `microgpt.retract` と同じ操作）。
#
# 同じことを素朴な SGD（学習率 1）でも行います。

# %%
d_in, d_out, n_data, train_steps = 16, 8, 256, 300
rng = np.random.default_rng(11)
W_teacher = normalize_matrix(rng.standard_normal((d_out, d_in)), axis=1)
X = l2_normalize_np(rng.standard_normal((n_data, d_in)))
Y = l2_normalize_np(linear_np(X, W_teacher) + 0.3 * rng.standard_normal((n_data, d_out)))   # target directions
W_init = init_normalized_linear(rng.normal(0.0, 0.08, (d_out, d_in)))


def cosine_loss_and_grad(w):
    """mean(1 - cos(normalized_linear(X, w), Y)) and its gradient with respect to w."""
    z = linear_np(X, w)
    loss = np.mean(1.0 - np.sum(l2_normalize_np(z) * Y, axis=1))
    dz = l2_normalize_np_backward(-Y / n_data, z)
    return loss, linear_np_backward(dz, X, w)[1]


_, g0 = cosine_loss_and_grad(W_init)
print(f"at init, |cos(gradient row, weight row)| = {np.round(np.abs(cosine_similarity_np(g0, W_init)), 2)} "
      f"(0 would mean tangent)")
drift_runs = {}
for opt in ("Adam", "SGD"):
    for retract_each_step in (False, True):
        flat = W_init.ravel().copy()           # one flat buffer, updated in place as microgpt's Adam does
        w = flat.reshape(d_out, d_in)           # a view of it
        m, v = np.zeros_like(flat), np.zeros_like(flat)
        row_norms = [np.linalg.norm(w, axis=1)]
        for step in range(train_steps):
            loss, grad = cosine_loss_and_grad(w)
            if opt == "Adam":
                microgpt.adam_step(flat, grad.ravel(), m, v, step, train_steps, lr=0.05)
            else:
                flat -= 1.0 * grad.ravel()
            if retract_each_step:
                w[...] = normalize_matrix(w, axis=1)
            row_norms.append(np.linalg.norm(w, axis=1))
        drift_runs[opt, retract_each_step] = np.array(row_norms)
        print(f"{opt:4s} {'retraction every step' if retract_each_step else 'normalized at init only':23s}: "
              f"final loss {cosine_loss_and_grad(w)[0]:.4f}, row norms {row_norms[-1].min():.3f} .. "
              f"{row_norms[-1].max():.3f}")

fig, axes = plt.subplots(1, 2, figsize=(12, 3.8), sharey=True)
for ax, opt, lr_text in zip(axes, ("Adam", "SGD"), ("lr 0.05", "lr 1.0")):
    for retract_each_step, color, label in ((False, "tab:blue", "講義のまま（初期化で1回だけ正規化）"),
                                            (True, "tab:orange", "毎ステップ リトラクション")):
        rn = drift_runs[opt, retract_each_step]
        ax.plot(rn, color=color, lw=1, alpha=0.8)
        ax.plot([], [], color=color, label=label)          # one legend entry per variant (8 rows each)
    ax.axhline(1.0, color="k", ls=":", lw=1)
    ax.set(xlabel="ステップ", title=f"{opt}（{lr_text}）：重み8行それぞれのノルム")
    ax.legend(fontsize=8, loc="upper left")
axes[0].set_ylabel("行のノルム ||w_i||")
plt.tight_layout()
plt.show()

# %% [markdown]
# 講義のままの層では、Adam でも SGD でも行のノルムが 1 から散らばります（出力の `normalized at init only` の2行）。毎ステップ リトラクションすると、すべての行が厳密に 1 のままで、
# 損失はほとんど変わりません（`retraction every step` の2行）。ずれる理由は3つあります。
#
# 1. 出力を正規化していても、損失は **行ごとの** ノルムに依存します。ある行だけ伸ばすと出力の向きが変わるからです。だから勾配は行の接ベクトルになりません（出力の1行目の |cos| が 0 でない）。
# 2. 勾配が接ベクトルでも、接平面内の1歩は長さを $\sqrt{1 + \eta^2\lVert g\rVert^2}$ 倍にします（ノート 06 §2）。
# 3. Adam は座標ごとに勾配を割るので、接ベクトルの勾配からも接ベクトルでない更新が出てきます。
#
# つまり「球面上の重み」は、初期化ではなく **毎ステップのリトラクション** で保たれる性質です。microgpt の `train` は球面モードで、Adam の各ステップの後に
# `microgpt.retract(params, cfg)` を呼び、すべての重み行列を埋め込み次元の方向に正規化し直しています。

# %% [markdown]
# ### 残差接続：講義の $x + \alpha f(x)$ と nGPT の $h + \alpha(\mathrm{Norm}(f(h)) - h)$
#
# 講義の `NormalizedResidual` は $\mathrm{Normalize}(x + \alpha f(x))$ です。nGPT の論文（Loshchilov et al., 2025）と microgpt の `gpt_sphere` の残差更新は少し違い、
# ブロックの出力もいったん球面に載せてから、そちらへ向かって α だけ進みます：
#
# $$h \leftarrow \mathrm{Norm}\big(h + \alpha\,(\mathrm{Norm}(f(h)) - h)\big) = \mathrm{Norm}\big((1-\alpha)\,h + \alpha\,\mathrm{Norm}(f(h))\big).$$
#
# 球面上の2点 $h$ と $\mathrm{Norm}(f(h))$ を結ぶ弦の上を α の割合だけ進み、球面に戻る形です。α は nGPT の eigen learning rate で、
# microgpt では次元ごとに学習されます（`model_config.effective_scales` の `alpha_A`, `alpha_M`）。講義の形との違いは、1歩の大きさが $\lVert f(h)\rVert$ によらないことです。
#
# 講義の注意「LayerNormの後に線形層を適用すると、出力の長さは射影行列に依存して変化する。」も、12 段の積み重ねで見ます（ここでは LayerNorm の代わりに RMSNorm）。
# 各段は $f(x) = W_2\,\mathrm{relu}(W_1 x)$ の小さな MLP です（$d = 64$、隠れ層 256、重みは段ごとに別で、成分は $\mathcal{N}(0, 0.3^2)$）。
#
# - **素朴な残差** $x \leftarrow x + f(\mathrm{RMSNorm}(x))$（標準的な pre-norm Transformer の形）
# - **講義の正規化残差** $x \leftarrow \mathrm{Normalize}(x + 0.1\,f(x))$
# - **nGPT の残差** $h \leftarrow \mathrm{Norm}(h + 0.1\,(\mathrm{Norm}(f(h)) - h))$

# %%
def ngpt_residual(h, module, alpha=0.1):
    """nGPT's residual update (as in gpt_sphere, with one alpha): h <- Norm(h + alpha (Norm(module(h)) - h))."""
    h = l2_normalize_np(h)
    return retract(h + alpha * (l2_normalize_np(module(h)) - h))


depth, sigma = 12, 0.3
rng = np.random.default_rng(4)
blocks = [(rng.normal(0.0, sigma, (4 * d, d)), rng.normal(0.0, sigma, (d, 4 * d))) for _ in range(depth)]


def mlp(h, w1, w2):
    return linear_np(np.maximum(linear_np(h, w1), 0.0), w2)


x0 = l2_normalize_np(rng.standard_normal((500, d)))
h_plain, h_lecture, h_ngpt = x0.copy(), x0.copy(), x0.copy()
norm_plain, norm_lecture, norm_ngpt = [1.0], [1.0], [1.0]
f_norms, f_cos = [], []
for w1, w2 in blocks:
    f_out = mlp(rmsnorm_np(h_plain), w1, w2)
    f_norms.append(np.linalg.norm(f_out, axis=1).mean())
    f_cos.append(np.abs(cosine_similarity_np(f_out, h_plain)).mean())
    h_plain = h_plain + f_out
    h_lecture = normalized_residual(h_lecture, lambda h, w1=w1, w2=w2: mlp(h, w1, w2), alpha=0.1)
    h_ngpt = ngpt_residual(h_ngpt, lambda h, w1=w1, w2=w2: mlp(h, w1, w2), alpha=0.1)
    norm_plain.append(np.linalg.norm(h_plain, axis=1).mean())
    norm_lecture.append(np.linalg.norm(h_lecture, axis=1).mean())
    norm_ngpt.append(np.linalg.norm(h_ngpt, axis=1).mean())
print(f"RMSNorm(x) has norm sqrt(d) = {np.linalg.norm(rmsnorm_np(x0), axis=1).mean():.2f}")
print("mean ||f|| of each block's output:", np.round(f_norms, 1),
      f" (Gaussian weights: about sqrt(2) d sigma^2 sqrt(d) = {np.sqrt(2) * d * sigma ** 2 * np.sqrt(d):.1f})")
print("mean |cos(x, f)| per block       :", np.round(f_cos, 3),
      f" (two random directions in R^{d}: about sqrt(2 / (pi d)) = {np.sqrt(2 / (np.pi * d)):.3f})")
print("pre-norm residual ||x_L||        :", np.round(norm_plain, 1))
print("||x_L|| / sqrt(L)                :", np.round(np.array(norm_plain[1:]) / np.sqrt(np.arange(1, depth + 1)), 1))
print(f"both normalized residuals: ||x|| in [{min(norm_lecture + norm_ngpt):.15f}, {max(norm_lecture + norm_ngpt):.15f}]")

# %%
alphas = np.logspace(-3, 1, 30)
w1, w2 = blocks[0]
f0 = mlp(x0, w1, w2)                 # the block applied to the unit inputs themselves (no RMSNorm)


def turn_angle(residual, f_value, alpha):
    """Median over the inputs of the angle (radians) that one residual step with output f_value turns x0."""
    return np.median(geodesic_distance_np(x0, residual(x0, lambda h: f_value, alpha=alpha)))


angles_lecture = np.array([turn_angle(normalized_residual, f0, a) for a in alphas])
angles_ngpt = np.array([turn_angle(ngpt_residual, f0, a) for a in alphas])
f0_norm = np.median(np.linalg.norm(f0, axis=1))
print(f"one step from the unit x0: median ||f(x0)|| = {f0_norm:.2f} (sqrt(2) d sigma^2 = {np.sqrt(2) * d * sigma**2:.2f}), "
      f"median |cos(x0, f(x0))| = {np.median(np.abs(cosine_similarity_np(f0, x0))):.3f}")
for a in (0.1, 0.5, 1.0, 10.0):
    print(f"alpha = {a:4}: lecture's step turns x by {np.degrees(turn_angle(normalized_residual, f0, a)):5.1f} deg "
          f"(atan(alpha ||f||) = {np.degrees(np.arctan(a * f0_norm)):5.1f}), nGPT's by "
          f"{np.degrees(turn_angle(ngpt_residual, f0, a)):5.1f} deg (atan2(alpha, 1 - alpha) = "
          f"{np.degrees(np.arctan2(a, 1 - a)):5.1f})")
print(f"the blocks' output 10x larger, alpha = 0.1: lecture's step {np.degrees(turn_angle(normalized_residual, 10 * f0, 0.1)):.1f}"
      f" deg, nGPT's {np.degrees(turn_angle(ngpt_residual, 10 * f0, 0.1)):.1f} deg")

fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
axes[0].plot(range(depth + 1), norm_plain, "o-", label="x + f(RMSNorm(x))（pre-norm 残差）")
axes[0].plot(range(depth + 1), norm_lecture, "s-", ms=7, label="Normalize(x + 0.1 f(x))（講義の正規化残差）")
axes[0].plot(range(depth + 1), norm_ngpt, "^--", ms=5, label="Norm(h + 0.1 (Norm(f(h)) - h))（nGPT の残差）")
c_fit = np.mean(np.array(norm_plain[1:]) / np.sqrt(np.arange(1, depth + 1)))
axes[0].plot(range(1, depth + 1), c_fit * np.sqrt(np.arange(1, depth + 1)), "k:", lw=1,
             label=f"{c_fit:.0f} √(ブロック数)")
axes[0].set(xlabel="ブロック", ylabel="||x|| の平均", yscale="log", title="残差の流れのノルムと深さ")
axes[0].legend(fontsize=8)
axes[1].semilogx(alphas, np.degrees(angles_lecture), "o-", ms=3, label="講義：Normalize(x + α f(x))（500 入力の中央値）")
axes[1].semilogx(alphas, np.degrees(np.arctan(alphas * f0_norm)), "k:", lw=1, label="atan(α ||f||)（f ⊥ x のとき）")
axes[1].semilogx(alphas, np.degrees(angles_ngpt), "s-", ms=3, label="nGPT：Norm(h + α(Norm(f(h)) - h))")
axes[1].semilogx(alphas, np.degrees(np.arctan2(alphas, 1 - alphas)), "k--", lw=1, label="atan2(α, 1 - α)（f ⊥ h のとき）")
axes[1].axhline(90, color="0.6", lw=0.8)
axes[1].set(xlabel="α", ylabel="球面上で回った角度（度）", yticks=[0, 45, 90, 135],
            title=f"正規化残差の1段：測地線距離（||f(x)|| の中央値 {f0_norm:.2f} のブロック）")
axes[1].legend(fontsize=8, loc="upper left")
plt.tight_layout()
plt.show()

# %% [markdown]
# 左の図の形と右の図の頭打ちを、出力の数で読みます。
#
# - **第1ブロックでの跳び**：入力 $x_0$ はノルム 1 ですが、MLP に入るのは RMSNorm を通したベクトルで、そのノルムは $\sqrt{d} = 8$ です（`RMSNorm(x) has norm` の行）。
#   成分が $\mathcal{N}(0, \sigma^2)$ の重みでは、relu を挟んだ2層でノルムがおよそ $\sqrt{2}\,d\,\sigma^2$ 倍になるので、各ブロックの出力 $f$ のノルムは
#   `mean ||f||` の行の大きさです。これがノルム 1 の $x_0$ に足されるので、最初のブロックで一気に大きくなります。
# - **その後の $\sqrt{\text{深さ}}$ の伸び**：RMSNorm のおかげで、$f$ の大きさは $x$ のノルムによらず毎回ほぼ同じです。しかも $f$ の向きは $x$ とほぼ直交します
#   （`mean |cos(x, f)|` の行が、64 次元のランダムな2方向の値に近い）。直交するベクトルを足すとノルムの二乗が足し算になるので、$\lVert x_L\rVert$ は $\sqrt{L}$ に比例して伸びます
#   （`||x_L|| / sqrt(L)` の行がほぼ一定。図の点線）。指数的には増えませんが、止まりもしません。講義の正規化残差と nGPT の残差は、どちらもノルムが常に 1 です。
# - **右の図が 90° で頭打ちになる理由（講義の形）**：α が大きいと $x + \alpha f \approx \alpha f$ なので、新しい向きは $f$ の向きに近づき、回る角度は「$x$ と $f$ のなす角」、
#   ほぼ 90° に近づきます。$f \perp x$ なら回る角度はちょうど $\arctan(\alpha\lVert f\rVert)$ で、α の意味が **ブロックの出力の大きさ次第** で変わります。
#   出力が 10 倍になると、同じ α = 0.1 で回る角度が大きく変わります（出力の最後の行）。
# - **nGPT の形**：回る角度は $\lVert f\rVert$ によらず $\operatorname{atan2}(\alpha, 1-\alpha)$（$f \perp h$ のとき）です。α = 0.5 で 45°、α = 1 でちょうど $\mathrm{Norm}(f(h))$ の位置に着き、
#   α > 1 はそこを通り越す外挿です。α は「球面上の1歩の大きさ」を直接決める、学習率のような量です。
#
# 2次元で1歩を描くと、この違いがそのまま見えます。$h$ と、$h$ から 100° 離れた向きのブロック出力 $f$（長さは上のブロックの $\lVert f(x_0)\rVert$ の中央値）について、
# 講義の形と nGPT の形で α だけ進んだ新しい $h$ を円周の上に描きます。Jupyter で実行すると、α をスライダーで動かせます。

# %%
def draw_residual_step(alpha):
    """One residual step on the circle, the lecture's form and nGPT's, from h = (1, 0) towards f at 100 degrees."""
    h = np.array([1.0, 0.0])
    f = f0_norm * np.array([np.cos(np.radians(100)), np.sin(np.radians(100))])
    lecture = l2_normalize_np(h + alpha * f)
    ngpt = l2_normalize_np(h + alpha * (l2_normalize_np(f) - h))
    t = np.linspace(0, 2 * np.pi, 400)
    fig, ax = plt.subplots(figsize=(5.2, 5.2))
    ax.plot(np.cos(t), np.sin(t), color="0.8")
    for point, color, label in ((h, "k", "h（前）"), (l2_normalize_np(f), "tab:green", "Norm(f)"),
                                (lecture, "tab:blue", "講義：Normalize(h + α f)"),
                                (ngpt, "tab:orange", "nGPT：Norm(h + α(Norm(f) − h))")):
        ax.annotate("", xy=point, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=color, lw=2))
        ax.plot(*point, "o", color=color, label=label)
    ax.plot(*np.stack([h, h + alpha * (l2_normalize_np(f) - h)]).T, ":", color="tab:orange", lw=1)
    turn = [np.degrees(np.arccos(np.clip(p @ h, -1, 1))) for p in (lecture, ngpt)]
    ax.set(xlim=(-1.3, 1.3), ylim=(-1.3, 1.3), aspect="equal", xticks=[], yticks=[],
           title=f"残差の1歩（α = {alpha:.3g}）：講義の形は {turn[0]:.1f}°、nGPT の形は {turn[1]:.1f}° 回る")
    ax.legend(loc="lower left", fontsize=8)
    plt.show()


slider_figure(draw_residual_step, {"alpha": ("log", 0.001, 10.0, 0.1)}, description=["α"])

# %% [markdown]
# α = 0.1 でも、講義の形はブロックの出力の長さのぶん大きく回り、nGPT の形は弦の 1/10 だけ進みます（図のタイトルの2つの角度）。
# α を 1 にすると nGPT の形はちょうど $\mathrm{Norm}(f)$ に着き、講義の形はすでにその近くまで回っています。

# %% [markdown]
# ## 4. vMF 分布の可視化（コード例 `03_vmf_distribution_plot.py`）
#
# 円周 $\mathbb{S}^1$（$d = 2$）上の vMF 密度は $p(\theta) = \exp(\kappa\cos\theta) / (2\pi I_0(\kappa))$ です。
# 講義は `scipy.special.iv` を使いますが、ここでは `sphere.vmf_log_density` で描きます。正規化定数 $\log C_d(\kappa)$ は、NumPy だけで安定に計算する
# `sphere.log_bessel_iv` が受け持ちます。κ = 0 は一様分布 $1/(2\pi)$ で、特別扱いは要りません。

# %%
theta = np.linspace(-np.pi, np.pi, 1000)
points = np.stack([np.cos(theta), np.sin(theta)], axis=1)   # unit vectors on the circle
mu = np.array([1.0, 0.0])                                      # mean direction at theta = 0
kappas = [0, 1, 5, 10, 50]
pdfs = {k: np.exp(sphere.vmf_log_density(points, mu, k)) for k in kappas}
for k in kappas:
    total = np.sum(pdfs[k][:-1]) * (theta[1] - theta[0])      # the density integrates to 1 over the circle
    print(f"κ = {k:2d}: max density {pdfs[k].max():.4f}, integral over the circle {total:.6f}")
print(f"κ = 50: the peak of N(0, 1/κ), sqrt(κ / 2π) = {np.sqrt(50 / (2 * np.pi)):.4f}")

fig = plt.figure(figsize=(13, 5))
ax = fig.add_subplot(1, 2, 1)
for k in kappas:
    ax.plot(theta, pdfs[k], label=f"κ = {k}")
ax.set(xlabel="角度 θ（ラジアン）", ylabel="確率密度", title="von Mises-Fisher 分布（円周上、d = 2）",
       xlim=(-np.pi, np.pi))
ax.legend()
ax = fig.add_subplot(1, 2, 2)
for k in kappas:
    ax.plot(pdfs[k] * np.cos(theta), pdfs[k] * np.sin(theta), label=f"κ = {k}")
ax.set(aspect="equal", title="円周上の vMF 分布（原点からの距離 r = 密度）", xlabel="r cos θ", ylabel="r sin θ",
       ylim=(-1.3, 1.3))
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# κ = 0 は円（一様）で、κ が大きくなるほど平均方向 θ = 0 に鋭く集中します。どの κ でも、円周を1周した積分は 1 です（`integral over the circle` の値）。
# 同じ図を極座標の軸（`projection="polar"`）でも描いておきます。

# %%
fig, ax = plt.subplots(subplot_kw={"projection": "polar"}, figsize=(5.5, 5.5))
for k in kappas:
    ax.plot(theta, pdfs[k], label=f"κ = {k}")
ax.set_rlabel_position(112.5)   # radial tick labels away from the curves (which point to theta = 0)
ax.set_title("円周上の vMF 密度（極座標の軸、半径 = 密度）", pad=14)
ax.legend(loc="lower left", bbox_to_anchor=(-0.15, -0.12), fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ### 「指数関数的な減衰（角度に対して）」を確かめる
#
# 講義の「vMFと正規分布の対応」の表は、正規分布の「指数関数的な減衰」に vMF の「指数関数的な減衰（角度に対して）」を対応させています。
# 「角度に対して指数関数的」なら、$\log p$ は θ の1次関数（$p \propto e^{-c\theta}$）のはずです。しかし vMF の対数密度は
#
# $$\log p(\theta) - \log p(0) = \kappa(\cos\theta - 1) \approx -\tfrac{\kappa}{2}\theta^2 \quad (\theta \text{ が小さいとき}),$$
#
# θ の **2次関数**、つまり平均方向の近くでは θ について **ガウス分布**（分散 $1/\kappa$）です。遠くでは減衰は止まり、反対側 θ = π でも $e^{-2\kappa}$ 倍までしか下がりません。
# 表の「分散 $\sigma^2$ ↔ $1/\kappa$」の行がそのまま成り立つのは、この2次の形のおかげです。κ = 10 で、3つの形を並べます。

# %%
kappa_t = 10.0
for th in (0.1, 0.3, 0.6, 1.0, 2.0, np.pi):
    exact = kappa_t * (np.cos(th) - 1)                  # log p(theta) - log p(0) for vMF
    print(f"theta = {th:4.2f}: vMF {exact:8.3f} | Gaussian -kappa theta^2 / 2 {-kappa_t * th * th / 2:8.3f} | "
          f"exponential -sqrt(kappa) theta {-np.sqrt(kappa_t) * th:7.3f}")
print(f"kappa = 50: the peak of vMF {np.exp(sphere.vmf_log_density(np.array([[1.0, 0.0]]), mu, 50))[0]:.4f}, "
      f"of N(0, 1/kappa) {np.sqrt(50 / (2 * np.pi)):.4f}")


def draw_vmf(kappa):
    """The vMF density on the circle for one kappa, beside the Gaussian N(0, 1/kappa) in theta; log scale on the right."""
    th = np.linspace(-np.pi, np.pi, 1000)
    pts = np.stack([np.cos(th), np.sin(th)], axis=1)
    p = np.exp(sphere.vmf_log_density(pts, mu, kappa))
    gauss = np.exp(-kappa * th * th / 2) * np.sqrt(kappa / (2 * np.pi))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, scale in zip(axes, ("linear", "log")):
        ax.plot(th, p, lw=2, label=f"vMF（κ = {kappa:.3g}）")
        ax.plot(th, gauss, "--", label="正規分布 N(0, 1/κ)（θ について）")
        ax.set(xlabel="角度 θ（ラジアン）", ylabel="確率密度", yscale=scale, xlim=(-np.pi, np.pi))
        if scale == "log":
            ax.set(ylim=(max(p.min(), 1e-12) / 10, p.max() * 3), title="対数軸：θ = 0 の近くは放物線（θ についての正規分布）、端で平ら")
        else:
            ax.set(title="vMF と、θ についての正規分布")
        ax.legend(fontsize=8)
    plt.tight_layout()
    plt.show()


slider_figure(draw_vmf, {"kappa": ("log", 0.1, 200.0, 10.0)}, description=["κ"])

# %% [markdown]
# 小さな θ では vMF の値は正規分布の $-\kappa\theta^2/2$ とほぼ重なり、θ に比例する形（右の列）とは合いません。θ が大きくなると正規分布は下がり続け、vMF は $-2\kappa$ で止まります（θ = π の行）。
# 対数軸の図で、vMF の曲線は θ = 0 のまわりで放物線、端で平らです。「指数関数的な減衰（角度に対して）」は、「平均方向の近くでは角度についてのガウス分布
# （$\exp(-\kappa\theta^2/2)$）、遠くでは有界」と言い直すのが正確です。κ が大きいほど放物線の部分が分布のほとんどを占め、
# κ = 50 のピークは $\mathcal{N}(0, 1/50)$ のピークよりわずかに低いだけです（出力の最後の行）。

# %% [markdown]
# ## まとめ
#
# 講義の「実装ノート」の4つのコード例と、そこから見えたこと。講義全体のまとめの表（球面制約、nGPT、プラネタリウム、vMF 分布、球面設計の限界）は、ノート 06 の最後にあります。
#
# | コード例 | 講義のコードが実際に表示するもの | このノートで確かめたこと | 節 |
# |---|---|---|---|
# | `03_l2_normalize` | ノルムの平均 1.000000、標準偏差 0.000000 | 標準偏差は 0 でなく float32 の丸め誤差。$\mathbb{R}^{768}$ の単位ベクトルは 767 次元の $\mathbb{S}^{767}$ の上にある（接空間の次元が 767）。正規化の勾配は接空間に入る | §1 |
# | `03_fp16_instability_demo` | ノルム $2^{-23}$、正規化の結果 [0.5, 0.5, 0.5]、「安全策」の行で IndexError | float32 で累積して float16 に丸めるので、0 ではなく粗い値になる。安全策は float32 で計算して ε でクランプ（`dim=-1` を渡す）。ε を **足す** と、ゼロ近傍で半径方向の勾配が出る | §2 |
# | `03_normalized_linear` | （クラスの定義だけ） | 初期化で1回正規化した重みは学習で球面から外れる：毎ステップのリトラクションが要る。講義の残差は α の意味がブロックの出力の大きさで変わり、nGPT の残差は変わらない | §3 |
# | `03_vmf_distribution_plot` | κ = 0, 1, 5, 10, 50 の密度 | 密度は $\exp(\kappa\cos\theta)$：平均方向の近くでは θ についてのガウス分布（分散 $1/\kappa$）で、角度について指数関数的ではない | §4 |
#
# 後半（ノート 06）では、vMF 分布と softmax の対応、microgpt の球面モード（nGPT）の学習、学習した埋め込みのプラネタリウム、球面設計の限界と曲率を見ます。

# %% [markdown]
# ## 理解度チェック
#
# **問1.** 講義の float16 のスクリプトで、ノルムが 0 にも本当の値 $\sqrt{3}\cdot 2^{-24} \approx 1.03\times10^{-7}$ にもならず $2^{-23}$ になるのはなぜですか。
# その結果、`eps` なしの正規化は何を返しますか。
#
# <details><summary>答え</summary>
#
# PyTorch は float16 の値を float32 で二乗・合計・平方根してから、結果だけを float16 に丸めます。float32 では $2^{-48}$ もアンダーフローしないので、
# ノルムは $2^{-24}$ の 1.732 倍と正しく計算されます。ところが float16 はこの大きさでは $2^{-24}$ の整数倍しか表せないので、最も近い $2 \times 2^{-24} = 2^{-23}$ に丸められます。
# 割り算は $2^{-24}/2^{-23} = 0.5$ なので結果は [0.5, 0.5, 0.5]、長さ 0.866 のベクトルです。NaN も inf も出ず、何の警告もなく単位ベクトルでないものが返ります。
#
# </details>
#
# **問2.** $x = [10^{-7}, 10^{-7}, 10^{-7}]$ で $\sum_i y_i$ を逆伝播すると、$y = x/(\lVert x\rVert + \epsilon)$ では勾配が各成分 32.5（float32）、
# $y = x/\max(\lVert x\rVert, \epsilon)$ では 0 になります。なぜですか。
#
# <details><summary>答え</summary>
#
# $x/\lVert x\rVert$ は $x$ を正の数倍しても変わらないので、勾配は $x$ と直交します（接空間に入る）。上流の勾配 $[1, 1, 1]$ は $y$ と平行で接成分を持たないので、
# 勾配は 0 です。クランプ形は $\lVert x\rVert \ge \epsilon$ ではまさに $x/\lVert x\rVert$ なので 0 のまま。ε を足すと関数はスケール不変でなくなり、$x$ に平行な（半径方向の）勾配が現れます。
#
# </details>
#
# **問3.** 768 次元のベクトルを正規化した点が $\mathbb{S}^{768}$ ではなく $\mathbb{S}^{767}$ の上にある、とはどういう意味ですか。
#
# <details><summary>答え</summary>
#
# 球面の次元は、その上にとどまったまま動ける向きの数です。点は 768 個の数で書かれますが、$\lVert y\rVert = 1$ という1本の式が半径方向を使えなくするので、
# 動ける向き（接空間 $\{v : v^\top y = 0\}$）は 767 次元です。§1 で接空間への射影 $I - yy^\top$ の階数が 767 になることを確かめました。
#
# </details>
#
# **問4.** 講義の `NormalizedLinear` を Adam で学習すると、重みの行のノルムはどうなりますか。球面上に保つには何が必要ですか。
#
# <details><summary>答え</summary>
#
# 初期化で1回正規化しただけなので、学習とともに 1 から離れます。勾配が行に対して接ベクトルでない、接ベクトルでも1歩で長さが伸びる、Adam が座標ごとに割る、の3つが原因です。
# 毎ステップの更新の後で行を正規化し直す（リトラクション）必要があり、microgpt の球面モードは Adam の各ステップの後に `microgpt.retract` でこれを行います。
#
# </details>
#
# **問5.** vMF の密度は「角度に対して指数関数的に減衰する」と言えますか。
#
# <details><summary>答え</summary>
#
# 正確ではありません。$\log p(\theta) - \log p(0) = \kappa(\cos\theta - 1)$ は θ の1次関数ではなく、平均方向の近くでは $-\kappa\theta^2/2$、つまり θ についてのガウス分布です。
# 遠くでは減衰が止まり、反対側でも $e^{-2\kappa}$ 倍までしか下がりません（§4 の表と対数軸の図）。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を消して関数を書き、その下のチェックセルを実行してください。チェックは、シード固定の入力であなたの関数を呼び終えてから、
# このプロジェクトの関数（`sphere.py`）で期待する答えを計算して比べ、正解 / 不正解 / 未回答 を表示します。正解すると、その下に解答例（折りたたみ）が出ます。
#
# - 答えそのものを計算してしまう `sphere` の関数は、あなたの関数が動いている間は使えません（呼ぶと 不正解。あらかじめ取ったコピーも見分けます）。
# - 数値微分や数値積分では正解になりません。チェックは、差分商が屈折点の両側を混ぜてしまう点（$\lVert x\rVert$ が ε のすぐ上と下）や、値の変化が丸め誤差に埋もれる点（κ = $10^{-6}$）で、
#   相対誤差 $10^{-12}$ まで比べます。
# - これらは思いとどまらせるための仕組みで、防ぎきるものではありません。式を自分で導くことが、この練習の中身です。
#
# ### 練習問題 1：安全な正規化とその勾配
#
# 1次元の配列 `x` について、次の2つを書いてください。
#
# - `safe_normalize(x, eps=1e-12)`：`F.normalize` のクランプ形 $y = x / \max(\lVert x\rVert, \epsilon)$ を返す。
# - `safe_normalize_backward(dy, x, eps=1e-12)`：上流の勾配 `dy` $= \partial L/\partial y$ から $\partial L/\partial x$ を返す。
#
# チェックは、$\lVert x\rVert = 1$、$3\times10^{-7}$（講義の「足す ε」の誤りが見える大きさ）、ε のすぐ上、すぐ下、ε よりずっと下の5つの大きさで、
# 順伝播を `sphere.l2_normalize_np` と、逆伝播を `sphere.l2_normalize_np_backward` と比べます。
#
# <details><summary>ヒント 1</summary>
#
# $\lVert x\rVert \ge \epsilon$ なら $y = x/\lVert x\rVert$ です。まず $\partial \lVert x\rVert/\partial x_j$ を求め、$y_i = x_i/\lVert x\rVert$ を商の微分法で微分してください。
# $\lVert x\rVert < \epsilon$ では、分母は何になっていますか。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# ヤコビアンを $y$ で書くと、§1 の「接空間への射影」が出てきます。$dx$ は $x$ と直交するはずです（§1 の `dx . x`）。
#
# </details>

# %%
import exercises  # the check cells (notebooks/exercises.py)


# %%
def safe_normalize(x, eps=1e-12):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


def safe_normalize_backward(dy, x, eps=1e-12):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_04_safe_normalize(safe_normalize, safe_normalize_backward)

# %% [markdown]
# ### 練習問題 2：$\mathbb{S}^2$ の vMF：正規化定数と、平均方向とのコサインの期待値
#
# §4 の円周（$d = 2$）の正規化定数はベッセル関数 $I_0$ を含みましたが、$d = 3$（地球の表面のような $\mathbb{S}^2$）では初等関数で書けます。次の2つを書いてください。
#
# - `log_c3(kappa)`：$\mathbb{S}^2$ の vMF の正規化定数の対数 $\log C_3(\kappa)$。$C_3(\kappa)$ は $\int_{\mathbb{S}^2} C_3(\kappa)\exp(\kappa\,\mu^\top x)\,dA = 1$ となる数です。
# - `mean_cos_s2(kappa)`：vMF$(\mu, \kappa)$ に従う $x$ の、平均方向とのコサインの期待値 $E[\mu^\top x]$。
#
# κ は $10^{-6}$ から 1000 まで調べます。`sphere.vmf_log_normalizer(3, kappa)` と `sphere.vmf_mean_resultant_length(3, kappa)` と比べ、
# チェックの間は `sphere` の vMF の関数と `log_bessel_iv` が使えません。
#
# <details><summary>ヒント 1</summary>
#
# $\mu$ を北極にとり、$t = \mu^\top x = \cos\theta$ を使います。$\mathbb{S}^2$ の面積要素 $\sin\theta\,d\theta\,d\phi$ を $t$ で書くと、積分は $t$ の1変数の積分になります。
# $E[\mu^\top x]$ は、その積分の $\log$ を κ で微分すると出てきます。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# κ = 1000 では `np.sinh` が溢れます（710 を超えると inf）。$\log\sinh\kappa$ を溢れない形に書き直してください。
# κ = $10^{-6}$ では、$E[\mu^\top x]$ の素直な式が、$10^{6}$ 程度の2つの数の差になって桁を失います。小さな κ では、テイラー展開の最初の数項を使ってください。
#
# </details>

# %%
def log_c3(kappa):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


def mean_cos_s2(kappa):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_04_vmf_s2(log_c3, mean_cos_s2)
