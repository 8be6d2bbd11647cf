# %% [markdown]
# # 第3回 プラネタリウムの建設：球面へのパラダイムシフト（PyTorch なし）
#
# **対応する講義:** 幾何学講義 第3回「プラネタリウムの建設: 球面へのパラダイムシフト」
# （nGPT、単位球面 $\mathbb{S}^{d-1}$、リトラクション、von Mises–Fisher 分布）。
#
# 講義の4つのコード例（PyTorch）を、このプロジェクトの `sphere.py`（NumPy とスカラー `Value`）で書き直し、
# 講義のコードが実際に何を表示するかも確かめながら、講義の先まで進みます。このノートで見られるもの：
#
# 1. **コード例 03_l2_normalize**：$L_2$ 正規化でノルムの平均 ≈ 1、標準偏差 ≈ 0。正規化の勾配が接空間に入ること。
# 2. **コード例 03_fp16_instability_demo**：講義のスクリプトが PyTorch 2.x で実際に表示する値（入力 5.9605e-08、
#    ノルム 1.1920928955078125e-07（= $2^{-23}$。`print(t.norm())` なら 1.1921e-07）、
#    正規化の結果 [0.5, 0.5, 0.5]、ゼロ割りの NaN、「安全策」の行での IndexError）を NumPy で再現し、コードとコメントの食い違いを確かめる。
#    安全な正規化 $x/\max(\lVert x\rVert, \epsilon)$ と、float16 で正規化できる入力の範囲。ゼロ近傍の勾配：講義の「足す ε」
#    $x/(\lVert x\rVert + \epsilon)$ では勾配が 0 ではなく 32.5 になり、`F.normalize` のクランプ形では 0 になること。
# 3. **コード例 03_normalized_linear**：重みを初期化で1回正規化するだけでは学習中に球面から外れること（毎ステップのリトラクションが必要）。
#    講義の残差 $x + \alpha f(x)$ と nGPT の残差 $\mathrm{Norm}(h + \alpha(\mathrm{Norm}(f(h)) - h))$、深さ方向のノルムの図の読み方。
# 4. **コード例 03_vmf_distribution_plot**：円周上の vMF 密度、集中度 κ ∈ {0, 1, 5, 10, 50}（折れ線と極座標、講義の図と同じ）。
# 5. 講義の先へ：$\mathbb{S}^2$ 上の vMF サンプル（3D、平均方向 μ の真上から）、サンプルから κ を推定し直す。
#    なぜ射影正規分布ではなく vMF か、ガウス分布から生まれる vMF（講義の κ = ‖m‖/σ² は「条件付け」で厳密、「射影」ではおよそ ‖m‖²/σ²）、
#    vMF が同じ平均合成ベクトル長の分布の中でエントロピー最大であること。
# 6. リーマン勾配＋リトラクションと、講義の疑似コードの「射影勾配法」の1歩の比較（球面からのずれ）。運動量ベクトルが接空間から外れること。
# 7. microgpt を `norm="rmsnorm"` と `norm="sphere"`（nGPT）で学習した損失曲線、隠れ状態と重みのノルムの分布。
#    「高速化」の意味（ステップ数と 1 ステップの時間）、講義の4つの仮説をここで確かめられる範囲で、
#    2010 年代に普及しなかった理由（正規化したロジットの損失の下限と倍率 $s_z$）と現在の技術。
# 8. 講義の中心：vMF と softmax。ロジット $z_k = \kappa\cos\theta_k$ の softmax（温度 $T = 1/\kappa$）は vMF 混合モデルのクラス事後確率であり、
#    microgpt の球面モードでは学習されるスケール `s_z` が κ であること。サンプリング温度が κ をどう変えるか。
# 9. プラネタリウム：学習したモデルのトークン埋め込み（`wte` の行）を球面上の星として見る（コサイン類似度行列と3次元の星図）。
#    第1回の離散的な星空との違い（星と星のあいだも意味を持つ連続した夜空）と、プラネタリウムの賞味期限。
# 10. 球面設計の限界：ノルムに意味がある場合（rmsnorm モードでは隠れ状態のノルムが確信度を運ぶ）。
# 11. 曲率の影響と双曲空間：球面と双曲面の三角形の内角の和、円周の長さ（講義の見通し、第12回）。
#
# 最後に、理解度チェック（答えは折りたたみ）と、コードで解く練習問題4題（チェックセルが 正解 / 不正解 / 未回答 を表示）があります。
# §2 と §5.1 には「予想してから確かめる」問いがあります。答えを開く前に、次のセルが何を表示するか予想してみてください。

# %%
import inspect
import json
import math
import sys
import time
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
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

import microgpt
import model_config
import sphere
from sphere import (
    cosine_similarity_np,
    geodesic_distance_np,
    l2_normalize,
    l2_normalize_np,
    l2_normalize_np_backward,
    normalize_matrix,
    retract,
    tangent_project,
)
from utils import linear_np, linear_np_backward, rmsnorm_np, softmax_np
from value import Value

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=6, suppress=False)

# %% [markdown]
# ## 1. 基本的な正規化（コード例 `03_l2_normalize.py`）
#
# 講義では `F.normalize(x, p=2, dim=-1, eps=1e-12)` を使います。`sphere.l2_normalize_np` は同じ意味
# $y = x / \max(\lVert x\rVert, \epsilon)$ の NumPy 版です。バッチ 32・次元 768 のガウス乱数を球面 $\mathbb{S}^{767}$ へ射影します。

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
# 講義のスクリプトは float32（`torch.randn` の既定）で計算し、小数点以下 6 桁で表示するので、`ノルムの平均: 1.000000`、`ノルムの標準偏差: 0.000000` と出ます（最後の2行。
# 標準偏差は 0 ではなく float32 の丸め誤差の大きさで、6 桁では見えないだけです）。768 次元のベクトルを正規化した点は $\mathbb{S}^{767}$ の上にあります
# （講義の「次元表記の混同に注意」：$\mathbb{R}^d$ の中の球面は $(d-1)$ 次元の $\mathbb{S}^{d-1}$）。
#
# 正規化前のノルムがほぼ $\sqrt{768} \approx 27.7$ に揃っているのは、第2回の「高次元の集中現象」（ガウス分布は殻に集中する）そのものです。
#
# 正規化の **勾配** も見ておきます。$y = x/\lVert x\rVert$ のヤコビアンは $(I - yy^\top)/\lVert x\rVert$、
# つまり「$y$ における接空間への射影」を $1/\lVert x\rVert$ 倍したものです。上流の勾配が何であっても、
# $x$ に戻る勾配は $x$ と直交します（半径方向の成分は正規化で消えるので、勾配もそこには流れない）。
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
# ## 2. 数値安定性：float16（コード例 `03_fp16_instability_demo.py`）
#
# 講義のスクリプトは、float16 のごく小さいベクトルとゼロベクトルを正規化して、何が起きるかを表示します。
# ここには PyTorch がないので、PyTorch 2.x（CPU）がする計算を NumPy で一つずつ再現します。押さえる点は3つです。
#
# - float16 の最小の正規化数は $2^{-14} \approx 6.1\times10^{-5}$、最小の非正規化数は $2^{-24} \approx 5.96\times10^{-8}$。
#   講義の `torch.finfo(torch.float16).tiny / 1024` は $2^{-14}/2^{10} = 2^{-24}$、float16 で表せる **最小の正の数そのもの** です。
# - `x.norm()` は、float16 の値を **float32 で累積** し（二乗・和・平方根を float32 で計算し）、結果だけを float16 に丸めます。
#   下の `norm_like_torch` がこれを真似ます。
# - テンソルの表示は **小数点以下 4 桁** です（PyTorch の既定 `precision=4`。固定小数点なら `0.5000`、指数表記なら仮数の小数点以下 4 桁で `5.9605e-08`。
#   有効数字 4 桁ではないので、`123.456789` は `123.4568` と表示されます）。`print(t)` なら `tensor([5.9605e-08, ...], dtype=torch.float16)` の形で、下の `torch_str` が同じ規則で書式化します。
#   ただし f 文字列に **0 次元** テンソルを入れると、`Tensor.__format__` が `.item()` を使うので Python の float として表示されます。
#
# **予想してから確かめる：** 講義のスクリプトは、$2^{-24}$（float16 の最小の正の数）を3つ並べたベクトルのノルムを表示します。コメントは「非常に小さい、または0」です。
# 実際には何が表示されるでしょうか。(a) 0、(b) 本当の値 $\sqrt{3}\cdot 2^{-24} \approx 1.03\times10^{-7}$、(c) そのどちらでもない値。
#
# <details><summary>答え</summary>
#
# (c) です。表示は `ノルム: 1.1920928955078125e-07`、つまり $2^{-23}$ で、本当の値の 1.1547 倍、15.5% 大きい値です（下のセルの出力。理由はその後の表とセルで）。
# そのため `eps` なしの正規化は NaN にならず、長さ 0.866 の単位ベクトルでないベクトル `[0.5, 0.5, 0.5]` を返します。
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
# 講義のスクリプトのコメントと、実際に起きることを並べます（コメントは講義のコードからの引用）。
#
# | 講義のコードのコメント | 実際 |
# |---|---|
# | `# min positive normal ≈ 6e-5 なので、それより十分小さい値は 0 になりやすい` | $2^{-14}$ より小さい値は 0 ではなく **非正規化数** になります（精度が落ちるだけ）。0 に丸められるのは $2^{-25}$ 以下だけです。 |
# | `# → 0 になりうる`（`.half()` の行） | $2^{-24}$ は float16 の最小の非正規化数で、**ちょうど表せます**。入力は 0 になりません（5.9605e-08 が3つ）。 |
# | `# 非常に小さい、または0`（ノルムの行） | 0 ではなく $2^{-23}$（f 文字列では Python の float として 1.1920928955078125e-07、`print(small_fp16.norm())` なら 1.1921e-07 と表示）。しかも本当の値 $\sqrt{3}\cdot 2^{-24} \approx 1.03\times10^{-7}$ より 15.5% 大きい（上の出力。理由は下で説明）。 |
# | `# eps なしで正規化すると不安定（ノルムが 0 に丸められると NaN/Inf）` | ノルムは 0 にならないので NaN も inf も出ません。出てくるのは [0.5, 0.5, 0.5]、長さ 0.866 の **単位ベクトルでないベクトル** です。何の警告もなく球面から外れる、NaN より気づきにくい壊れ方です。 |
# | `# NaN が出る`（ゼロ割り） | そのとおり：$0/0$ = NaN。 |
# | `# 安全策：ノルム計算をfloat32で行い、epsで保護して正規化` | 考え方は正しいのですが、その行 `F.normalize(small_fp16.float(), eps=1e-12)` は動きません。`F.normalize` の既定は `dim=1` で、1次元テンソルには次元 0（= −1）しかないので、次元が範囲外だという **IndexError** で止まります。スクリプトはここで終わり、最後の勾配の例（次の小節）は実行されません。`dim=-1` を渡せば各成分 0.5771（float32 で 0.57735 を float16 に丸めた値）が返ります。 |
#
# 下のセルで、これらの数を確かめます。

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
# $2^{-23}$（1.1920928955078125e-07）の正体：float32 で計算したノルム $1.0324\times10^{-7}$ は $2^{-24}$ の 1.732 倍です。float16 はこの大きさでは
# 非正規化数、つまり $2^{-24}$ の整数倍しか表せません。1.732 倍の両隣は 1 倍と 2 倍で、距離は 0.732 と 0.268 なので、
# 最も近い 2 倍 $= 2^{-23}$ に丸められます（上の出力の `the float16 numbers on either side` で始まる行）。
# 割り算 $2^{-24}/2^{-23}$ はちょうど 0.5 です。もし float16 の中だけで二乗していたら（素朴な NumPy の float16 計算）、
# $2^{-48}$ は 0 にアンダーフローして `inf` が出ていたはずで、講義のコメントが想定していたのはおそらくこちらです。
# PyTorch は float32 で累積するのでアンダーフローは起きず、代わりに **丸めの粗さ** が残ります。
#
# 安全策の中身は「ノルムを float32 で計算し、$x / \max(\lVert x\rVert, \epsilon)$ とクランプしてから float16 に戻す」です。
# ε = 1e-12 は float16 では 0 になってしまうので、ε が効くのは float32 の中だけです。
#
# どの大きさの入力なら正しく正規化できるのかを、入力の大きさ $s$ を $10^{-9}$ から $10^{6}$ まで振って調べます
# （$x = s\,[1, 2, 3]/\sqrt{14}$ を float16 に丸めたもの）。出力ノルムは 1 であるべきです。

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
# - **float16 だけで計算**：小さい側（$s \lesssim 2\times10^{-4}$）では二乗のアンダーフローでノルムが 0 になり、結果は `inf`／`NaN`。
#   その少し上（$s \sim 10^{-3}$ まで）では二乗が非正規化数の範囲に入って精度が粗く、ノルムが 1 からずれます。
#   大きい側（$s \gtrsim 270$）では二乗のオーバーフロー（float16 の最大値 65504）でノルムが `inf` になり、出力が 0 に潰れます。
# - **PyTorch の `x / x.norm()`**：float32 で累積するので、二乗のアンダーフローもオーバーフローも起きません。1 からずれるのは、
#   ノルムそのものが float16 の非正規化数の範囲（$2^{-14}$ 未満）に落ちて粗く丸められるとき（1% を超えるのは $s \lesssim 2\times10^{-6}$）と、
#   右端でノルムそのものが 65504 を超えて `inf` になるときだけです。講義の例（長さ 0.866）は左の範囲の1点です（ただし向きは $[1, 1, 1]$）。
# - **安全策**：入力が float16 で表せる範囲ではどこでも 1 です（float16 の丸めの範囲で）。左の灰色の範囲では入力そのものが 0 に丸められ、
#   安全策は NaN ではなくゼロベクトルを返します。右の灰色の範囲では入力の成分がすでに `inf` で、どんな正規化でも救えません
#   （正規化より前、入力を作る段階のオーバーフロー）。

# %% [markdown]
# ### ゼロ近傍の勾配：「足す ε」と「クランプする ε」
#
# 講義のスクリプトの最後（上の IndexError のせいで実際には実行されない部分）は、$x = [10^{-7}, 10^{-7}, 10^{-7}]$ で
# `y = x / (x.norm() + 1e-12)` の `y.sum()` を逆伝播し、`勾配 (eps保護あり)` を表示します。ここでの ε は分母に **足されて** います。
# `F.normalize` は違い、$x / \max(\lVert x\rVert, \epsilon)$ と **クランプ** します（`sphere.l2_normalize` も同じ）。
# $\lVert x\rVert = 1.7\times10^{-7}$ は ε = $10^{-12}$ よりずっと大きいので、クランプ形では ε は何もしません。
#
# 下のセルは、PyTorch の autograd がこの式をたどる順番（割り算の逆伝播 → 足し算／クランプ → ノルムの逆伝播）どおりに、
# float32 と float64 で勾配を計算します。

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
# 「eps で保護」した勾配は 0 ではなく、float32 で各成分 32.5（float64 で 33.33）で、しかも **ちょうど $x$ の方向**（cos(g, x) = 1）を向いています。
# クランプ形では 0 です。
#
# 理由はスケール不変性です。$y = x/\lVert x\rVert$ は $x$ を $c > 0$ 倍しても変わらない（0次の同次関数）ので、
# オイラーの同次関数定理から $\nabla f(x)^\top x = 0$、つまり勾配は接空間に入ります（§1 で見た直交性）。ここでは上流の勾配 $[1, 1, 1]$ が $y$ と平行なので、
# 接空間に残る成分はなく、勾配は 0 です。ε を **足す** と $x/(\lVert x\rVert + \epsilon)$ は $x$ を伸ばすとわずかに長くなる関数になり、
# スケール不変性が壊れます。$\mathbf{1}^\top y$ の勾配は
# $\dfrac{\mathbf{1}}{\lVert x\rVert + \epsilon} - \dfrac{\mathbf{1}^\top x}{(\lVert x\rVert + \epsilon)^2 \lVert x\rVert}\,x$ で、
# この $x$ では各成分 $\epsilon/(\lVert x\rVert+\epsilon)^2 \approx 33.33$、$x$ に平行な **半径方向** の勾配です。
# float32 では、どちらも約 $5.77\times10^{6}$ の2つの項の差を 0.5 刻みの数で取るので、33.33 ではなく 32.5 になります。
#
# 破れの大きさは $\lVert x\rVert$ が小さいほど大きくなります（float64、各成分の値）：

# %%
print(f"{'||x||':>9} {'x / (||x|| + eps)':>20} {'x / max(||x||, eps)':>21}")
for a in (1e-3, 1e-5, 1e-7, 1e-9, 1e-11):
    x = np.full(3, a)
    print(f"{np.linalg.norm(x):9.1e} {grad_of_sum_normalized(x, 1e-12, False)[0]:20.4g} "
          f"{grad_of_sum_normalized(x, 1e-12, True)[0]:21.4g}")

# %% [markdown]
# 同じことをスカラー版 `sphere.l2_normalize`（クランプ形、float64 の `Value`）の `backward()` でも確かめます。
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
# 講義の `NormalizedLinear` は、`__init__` で重みの行を **1回だけ** 正規化し（`F.normalize(self.linear.weight.data, dim=1, eps=eps)`）、
# `forward` では普通の線形層の **出力** を正規化します。`NormalizedResidual` は「$x + \alpha\,f(x)$ を正規化して球面に戻す」でした。
# クラスの代わりに関数で書きます（`nn.Module` との対応はノート 05 を参照）。使う部品はすべて `sphere.py` と `utils.py` のものです。

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
# 講義自身が「設計の徹底が本質」の注意で述べているとおりです：
#
# > 行列積や加算などの演算を行うと、結果は一般に球面から外れる。nGPTは、更新で球面から外れたら正規化で戻すことで、表現が常に球面上にあることを保証する。
#
# これは重みの更新にもそのまま当てはまります。小さな例で確かめます。入力 $x \in \mathbb{S}^{15}$ から出力の向き $y \in \mathbb{S}^{7}$ を当てる問題
# （教師は単位行の行列の出力にノイズを加えたもの、損失は $1 - \cos(\hat y, y)$ の平均）で、講義の層の重み $W$（8 行 × 16 列）を 300 ステップ学習します。
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
# 講義のままの層では、Adam で行のノルムが 1.66〜2.03 に、SGD でも 0.95〜1.16 に散らばります（上の出力）。毎ステップ リトラクションすると、
# すべての行が厳密に 1 のままで、損失はほとんど変わりません。ずれる理由は3つあります。
#
# 1. 出力を正規化していても、損失は **行ごとの** ノルムに依存します（ある行だけ伸ばすと出力の向きが変わる）。だから勾配は行に対して接ベクトルになりません（初期化での |cos| が 0 でない）。
# 2. 勾配が接ベクトルでも、接平面内の1歩は長さを $\sqrt{1 + \eta^2\lVert g\rVert^2}$ 倍にします（§6）。
# 3. Adam は座標ごとに勾配を割るので、接ベクトルの勾配からも接ベクトルでない更新が出てきます。
#
# つまり「球面上の重み」は、初期化ではなく **毎ステップのリトラクション** で保たれる性質です。microgpt の `train` は球面モードで、Adam の各ステップの後に
# `microgpt.retract(params, cfg)` を呼んで、すべての重み行列を埋め込み次元の方向に正規化し直しています（§7 のノルムの分布の図で、学習後の重みのノルムがすべて 1）。

# %% [markdown]
# ### 残差接続：講義の $x + \alpha f(x)$ と nGPT の $h + \alpha(\mathrm{Norm}(f(h)) - h)$
#
# 講義の `NormalizedResidual` は $\mathrm{Normalize}(x + \alpha f(x))$ です。nGPT の論文（Loshchilov et al., 2025）と microgpt の `gpt_sphere` の残差更新は少し違い、
# ブロックの出力もいったん球面に載せてから、そちらへ向かって α だけ進みます：
#
# $$h \leftarrow \mathrm{Norm}\big(h + \alpha\,(\mathrm{Norm}(f(h)) - h)\big) = \mathrm{Norm}\big((1-\alpha)\,h + \alpha\,\mathrm{Norm}(f(h))\big).$$
#
# 球面上の2点 $h$ と $\mathrm{Norm}(f(h))$ を結ぶ弦の上を α の割合だけ進み、球面に戻る形です（α は nGPT の eigen learning rate。
# microgpt では次元ごとに学習され、`model_config.effective_scales` の `alpha_A`, `alpha_M` で読めます）。講義の形との違いは、1歩の大きさが $\lVert f(h)\rVert$ によらないことです。
#
# 講義の注意「LayerNormの後に線形層を適用すると、出力の長さは射影行列に依存して変化する。」も、12 段の積み重ねで見ます（ここでは LayerNorm の代わりに RMSNorm）。
# 各段は $f(x) = W_2\,\mathrm{relu}(W_1 x)$ の小さな MLP です（$d = 64$、隠れ層 256、重みは段ごとに別で、成分は $\mathcal{N}(0, 0.3^2)$）。
#
# - **素朴な残差** $x \leftarrow x + f(\mathrm{RMSNorm}(x))$（標準的な pre-norm Transformer の形）
# - **講義の正規化残差** $x \leftarrow \mathrm{Normalize}(x + 0.1\,f(x))$
# - **nGPT の残差** $h \leftarrow \mathrm{Norm}(h + 0.1\,(\mathrm{Norm}(f(h)) - h))$
#
# 右の図は、正規化残差の1段で $x$ が球面上を **どれだけ回るか**（測地線距離 $\arccos(x_{\text{前}}\cdot x_{\text{後}})$）を、α の関数として2つの形で描いたものです。

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
            title="正規化残差の1段：測地線距離（||f(x)|| ≈ 8 のブロック）")
axes[1].legend(fontsize=8, loc="upper left")
plt.tight_layout()
plt.show()

# %% [markdown]
# 左の図の形と右の図の頭打ちを、上の出力の数で説明します。
#
# - **第1ブロックでの跳び（1 → 約 64）**：入力 $x_0$ はノルム 1 ですが、MLP に入るのは RMSNorm を通したベクトルで、そのノルムは $\sqrt{d} = 8$ です。
#   成分が $\mathcal{N}(0, \sigma^2)$ の重みでは、relu を挟んだ2層でノルムがおよそ $\sqrt{2}\,d\,\sigma^2 \approx 8.1$ 倍になるので、
#   各ブロックの出力 $f$ のノルムは約 65 です（出力の2行目：58〜78）。これがノルム 1 の $x_0$ に足されるので、最初のブロックで一気に 64 になります。
# - **その後の $\sqrt{\text{深さ}}$ の伸び**：RMSNorm のおかげで、$f$ の大きさは $x$ のノルムによらず毎回ほぼ 65 です。しかも $f$ の向きは $x$ とほぼ直交します
#   （|cos| ≈ 0.1、64 次元のランダムな2方向と同じ程度）。直交するベクトルを足すとノルムの二乗が足し算になるので、
#   $\lVert x_L\rVert^2 \approx 1 + \sum_{l \le L} \lVert f_l\rVert^2 \approx L \cdot 62^2$、つまり $\lVert x_L\rVert \approx 62\sqrt{L}$ です（出力の「$\lVert x_L\rVert/\sqrt{L}$」が 60〜64 でほぼ一定。点線）。
#   指数的には増えませんが、止まりもしません。講義の正規化残差と nGPT の残差は、どちらもノルムが常に 1 です。
# - **右の図が 90° で頭打ちになる理由（講義の形）**：α が大きいと $x + \alpha f \approx \alpha f$ なので、新しい向きは $f$ の向きそのものに近づき、
#   回る角度は「$x$ と $f$ のなす角」に近づきます。$f$ は $x$ とほぼ直交している（|cos| ≈ 0.09）ので、それが約 90° です。
#   $f \perp x$ ならちょうど $\arctan(\alpha\lVert f\rVert)$ で、45° になるのは $\alpha \approx 1/\lVert f\rVert \approx 0.13$ のときです。
#   つまり講義の形では、α の意味が **ブロックの出力の大きさ次第** で変わります（出力が 10 倍なら、同じ α = 0.1 で回る角度が 38° から 83° に）。
# - **nGPT の形**：回る角度は $\lVert f\rVert$ によらず $\operatorname{atan2}(\alpha, 1-\alpha)$（$f \perp h$ のとき）です。α = 0.5 で 45°、α = 1 でちょうど
#   $\mathrm{Norm}(f(h))$ の位置（約 90°）に着き、α > 1 は $\mathrm{Norm}(f(h))$ を通り越す外挿です（α → ∞ で $\mathrm{Norm}(f(h)) - h$ の向き、135°）。
#   α は「球面上の1歩の大きさ」を直接決める学習率のような量になります（nGPT の eigen learning rate）。

# %% [markdown]
# ## 4. vMF 分布の可視化（コード例 `03_vmf_distribution_plot.py`）
#
# 円周 $\mathbb{S}^1$（$d = 2$）上の vMF 密度は $p(\theta) = \exp(\kappa\cos\theta) / (2\pi I_0(\kappa))$。
# 講義は `scipy.special.iv` を使いますが、ここでは `sphere.vmf_log_density`（正規化定数 $\log C_d(\kappa)$ を
# NumPy だけで安定に計算する `sphere.log_bessel_iv` を使う）で描きます。κ = 0 は一様分布 $1/(2\pi)$ で、特別扱いは不要です。

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
# κ = 0 は円（一様）、κ が大きくなるほど平均方向 θ = 0 に鋭く集中します。正規分布の分散 $\sigma^2$ に対応するのは $1/\kappa$ で、
# 大きな κ では $p(\theta) \approx \mathcal{N}(0, 1/\kappa)$ に近づきます（κ = 50 のピーク 2.8131 は、$\mathcal{N}(0, 1/50)$ のピーク $\sqrt{50/2\pi} = 2.8209$ より
# わずかに低いだけ。上の出力の最後の2行）。
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
# ## 5. 講義の先へ：$\mathbb{S}^2$ 上の vMF サンプルと κ の推定
#
# vMF は方向統計学の標準的な分布で、講義は文献に Mardia & Jupp (2000) と、機械学習への応用として Banerjee et al. (2005) を挙げています。
# `sphere.vmf_sample` は Wood (1994) の棄却法で $\mathbb{S}^{d-1}$ 上の vMF からサンプルを引きます。
# $d = 3$（地球表面のような $\mathbb{S}^2$）で、κ ごとに 1000 点ずつ描きます。プラネタリウムのドームに貼られた「星座」のまとまり具合です。
# 視点は平均方向 μ の真上に置きます。μ の矢印はこちらを向いて点にしか見えないので、球面上の μ の位置（矢印の先）を大きな赤い星印で示します。
# こうすると、κ が大きいときの集まり（球面上の丸い「帽子」）を真正面から見られます。

# %%
mu3 = l2_normalize_np(np.array([1.0, 1.0, 1.0]))
rng = np.random.default_rng(5)
fig = plt.figure(figsize=(14, 4.8))
u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 30), np.linspace(0, np.pi, 15))
for i, k in enumerate([0, 1, 10, 100]):
    s = sphere.vmf_sample(mu3, k, 1000, rng)
    ax = fig.add_subplot(1, 4, i + 1, projection="3d")
    ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.5)
    ax.computed_zorder = False                       # draw in call order: the marker of mu stays on top
    ax.scatter(s[:, 0], s[:, 1], s[:, 2], s=3, alpha=0.6, label="サンプル")
    ax.quiver(0, 0, 0, *(1.3 * mu3), color="tab:red", lw=2, arrow_length_ratio=0.12)
    ax.scatter(*mu3, s=260, marker="*", color="tab:red", edgecolor="k", linewidth=0.8, depthshade=False,
               label="平均方向 μ（球面上の位置）")
    ax.set(title=f"$S^2$ 上の vMF、κ = {k}", xlabel="x", ylabel="y", zlabel="z",
           xlim=(-1, 1), ylim=(-1, 1), zlim=(-1, 1), box_aspect=(1, 1, 1),
           xticks=[-1, 0, 1], yticks=[-1, 0, 1], zticks=[-1, 0, 1])
    ax.view_init(elev=np.degrees(np.arcsin(mu3[2])), azim=np.degrees(np.arctan2(mu3[1], mu3[0])))  # look along mu
    ax.legend(loc="upper left", fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# サンプルから κ を推定し直します（`sphere.vmf_estimate_kappa`、Banerjee et al. 2005 の近似
# $\hat\kappa = \bar R (d - \bar R^2)/(1 - \bar R^2)$、$\bar R$ はサンプル平均の長さ）。
# 左：真の κ と推定値（$d = 3$ と $d = 16$、サンプル数 $n$ を変えて各 20 回の中央値と 10〜90% の幅）。
# 右：$\bar R$ と理論値 $A_d(\kappa) = I_{d/2}(\kappa)/I_{d/2-1}(\kappa)$（`sphere.vmf_mean_resultant_length`）。

# %%
true_kappas = np.array([0.5, 1, 2, 5, 10, 20, 50, 100, 200])
rng = np.random.default_rng(6)
fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
for d_, marker in ((3, "o"), (16, "s")):
    mu_d = np.zeros(d_)
    mu_d[0] = 1.0
    for n, ls in ((100, ":"), (10000, "-")):
        est = np.array([[sphere.vmf_estimate_kappa(sphere.vmf_sample(mu_d, k, n, rng))[1] for _ in range(20)]
                        for k in true_kappas])
        med, lo, hi = np.median(est, 1), np.percentile(est, 10, 1), np.percentile(est, 90, 1)
        axes[0].errorbar(true_kappas, med, yerr=[med - lo, hi - med], fmt=marker + ls, ms=4, capsize=2,
                         label=f"d = {d_}, サンプル数 n = {n}")
    r_bar = [np.linalg.norm(sphere.vmf_sample(mu_d, k, 10000, rng).mean(axis=0)) for k in true_kappas]
    ks = np.logspace(-1, 2.5, 200)
    axes[1].semilogx(ks, sphere.vmf_mean_resultant_length(d_, ks), "-", label=f"理論値 $A_d(\\kappa)$, d = {d_}")
    axes[1].semilogx(true_kappas, r_bar, marker, label=f"サンプル $10^4$ 個の平均の長さ, d = {d_}")
axes[0].plot(true_kappas, true_kappas, "k--", lw=1, label="推定値 = 真の κ")
axes[0].set(xscale="log", yscale="log", xlabel="真の κ", ylabel="推定した κ",
            title="サンプルから推定した集中度 κ（中央値と 10-90% の幅）")
axes[0].legend(fontsize=8)
axes[1].set(xlabel="集中度 κ", ylabel="E[μ·x]", title="平均合成ベクトル長 $A_d(\\kappa)$ とサンプル")
axes[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# 同じ κ でも次元が高いほど $\bar R$ は小さい（κ が小さいうちは $A_d(\kappa) \approx \kappa/d$）：高次元の球面では、同じ「まとまり」に見えるためにより大きな κ が要ります。
# サンプル数が少なく κ が小さい（ほぼ一様）と、推定は上に偏ります（ランダムな点の平均もわずかに長さを持つため）。

# %% [markdown]
# ### 5.1 なぜ vMF なのか：射影正規分布と、ガウス分布から生まれる vMF
#
# 球面上の分布を作るいちばん素直な方法は、講義も挙げるとおり、$\mathbb{R}^d$ の正規分布に従うベクトルを原点から球面へ射影すること（**射影正規分布**、projected normal）です。
# 講義はそれを正当な選択肢と認めたうえで、「平均方向 $\boldsymbol\mu$ と集中度 $\kappa$ を直接指定でき、指数型分布族として解析しやすい」vMF を選びます。違いを数で見ます。
#
# - 中心が原点の等方的な正規分布 $N(\mathbf 0, \sigma^2 I)$ を射影すると、球面上の **一様分布** になります（どの向きも同じ確率）。サンプル平均の長さ $\bar R$ が 0 に近いことで確かめます。
# - 中心 $\mathbf m \ne \mathbf 0$ の $N(\mathbf m, \sigma^2 I)$ を射影した分布の密度は、$d = 2$ でも $\Phi$（正規分布の累積分布関数）を含む式になり、
#   $\log p(\mathbf x)$ は $\mathbf x$ の簡単な関数になりません。vMF の $\log p(\mathbf x) = \log C_d(\kappa) + \kappa\,\boldsymbol\mu^\top\mathbf x$ は
#   $\mathbf x$ の **1次関数** で、μ と κ がそのまま読めます（指数型分布族の形）。
#
# 講義の NOTE「ガウスから誘導される方向分布」は、$N(\mathbf m, \sigma^2 I)$ から $\kappa = \lVert\mathbf m\rVert/\sigma^2$ の vMF が生まれると述べ、
# 括弧で「$\lVert\mathbf z\rVert = 1$ に条件付けた密度として見た場合」と断っています。ここには2つの別の操作が混ざっているので、分けて確かめます。
#
# 1. **条件付け**：$N(\mathbf m, \sigma^2 I)$ の密度を単位球面の上だけで見ると、$\lVert\mathbf x\rVert = 1$ では
#    $-\lVert\mathbf x - \mathbf m\rVert^2/(2\sigma^2) = \mathbf m^\top\mathbf x/\sigma^2 + \text{定数}$ なので、**どの次元でも厳密に**
#    $\mathrm{vMF}(\mathbf m/\lVert\mathbf m\rVert,\ \lVert\mathbf m\rVert/\sigma^2)$ です。
# 2. **射影**：サンプル $\mathbf z$ を $\mathbf z/\lVert\mathbf z\rVert$ に縮める。こちらが射影正規分布で、vMF とは別の分布です。
#
# **予想してから確かめる：** $\mathbb{S}^2$ で、$N(\mathbf m, \sigma^2 I)$ のサンプルを **射影** した点に vMF をあてはめると（§5 の κ の推定）、
# 推定した κ は講義の $\lVert\mathbf m\rVert/\sigma^2$ に一致するでしょうか。
#
# <details><summary>答え</summary>
#
# 一般には一致しません。$\lVert\mathbf m\rVert$ が $\sigma$ より十分大きいとき、射影した点の推定 κ はおよそ $\lVert\mathbf m\rVert^2/\sigma^2$ です
# （接方向のずれが $\sigma/\lVert\mathbf m\rVert$ 程度になるから）。$\lVert\mathbf m\rVert/\sigma^2$ に一致するのは、球面の近く（$\lVert\mathbf z\rVert \approx 1$）のサンプルだけを残す
# **条件付け** のほうです。2つの式は $\lVert\mathbf m\rVert = 1$ のときだけ同じ値になります。下の表と図で確かめます。
#
# </details>

# %%
rng = np.random.default_rng(9)
z0 = 2.0 * rng.standard_normal((20000, 3))                       # isotropic, centered at the origin
print(f"N(0, 2^2 I) projected onto S^2: mean resultant length {np.linalg.norm(l2_normalize_np(z0).mean(axis=0)):.4f} "
      f"(uniform on the sphere: 0 up to 1/sqrt(n) = {1 / np.sqrt(len(z0)):.4f})")

# 1. conditioning is exact: on the sphere, log N(x; m, sigma^2 I) and the vMF log density differ by a constant
m_vec, sigma = np.array([2.0, 0.0, 0.0]), 0.5
x_test = l2_normalize_np(rng.standard_normal((1000, 3)))
gap_log = (-np.sum((x_test - m_vec) ** 2, axis=1) / (2 * sigma**2)
           - sphere.vmf_log_density(x_test, l2_normalize_np(m_vec), np.linalg.norm(m_vec) / sigma**2))
print(f"on S^2: log N(x; m, sigma^2 I) - log vMF(x; m/|m|, |m|/sigma^2) has std {gap_log.std():.1e} over 1000 points "
      "(a constant: the same distribution up to normalization)")

# 2. projection vs conditioning, sample by sample
print(f"\n{'|m|':>5} {'sigma':>6} | {'|m|/sigma^2':>11} {'|m|^2/sigma^2':>13} | {'kappa fit: projected':>20} "
      f"{'kappa fit: conditioned':>22} {'(samples kept)':>14}")
gauss_rows = []
for m_len, sig in ((0.5, 0.5), (1.0, 0.5), (1.0, 0.25), (1.5, 0.5), (2.0, 0.5), (2.0, 0.4)):
    z = np.array([m_len, 0.0, 0.0]) + sig * rng.standard_normal((400_000, 3))
    r = np.linalg.norm(z, axis=1)
    u = z / r[:, None]
    kappa_proj = sphere.vmf_estimate_kappa(u[:20_000])[1]
    near = np.abs(r - 1) < 0.02                                   # keep the samples with ||z|| close to 1
    kappa_cond = sphere.vmf_estimate_kappa(u[near])[1]
    gauss_rows.append((m_len / sig**2, m_len**2 / sig**2, kappa_proj, kappa_cond))
    print(f"{m_len:5.2f} {sig:6.2f} | {m_len / sig**2:11.2f} {m_len**2 / sig**2:13.2f} | {kappa_proj:20.2f} "
          f"{kappa_cond:22.2f} {near.sum():14d}")

fig, ax = plt.subplots(figsize=(6.4, 4.6))
g = np.array(gauss_rows)
ax.plot(g[:, 0], g[:, 3], "o", ms=7, label="条件付け（||z|| ≈ 1 のサンプル）の推定 κ")
ax.plot(g[:, 0], g[:, 2], "s", ms=7, label="射影（z / ||z||）の推定 κ")
ax.plot(g[:, 0], g[:, 1], "x", color="k", ms=8, label="||m||² / σ²（射影の目安）")
line = np.linspace(0, g[:, 0].max() * 1.05, 2)
ax.plot(line, line, "k--", lw=1, label="推定 κ = ||m|| / σ²（講義の式）")
ax.set(xlabel="講義の式 ||m|| / σ²", ylabel="サンプルから推定した κ", title="ガウス分布から生まれる方向分布（$S^2$）")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# 原点中心の正規分布を射影すると平均の長さはほぼ 0、つまり一様分布です（最初の行）。条件付けは厳密に vMF で（2行目の標準偏差は丸め誤差の大きさ）、
# 球面の近くのサンプルから推定した κ は講義の式 $\lVert\mathbf m\rVert/\sigma^2$ の破線の上に乗ります（残ったサンプルが少ない行ほどばらつく）。
# 射影した点の κ は破線から外れ、$\lVert\mathbf m\rVert$ が σ より十分大きい行では $\lVert\mathbf m\rVert^2/\sigma^2$（× 印）に近づきます。
# 2つの式が重なるのは $\lVert\mathbf m\rVert = 1$ の行だけです。講義の「大 κ かつ高次元の条件下では vMF 分布で近似できる」は射影正規分布の話で、
# そのときの κ は $\lVert\mathbf m\rVert/\sigma^2$ ではなく、およそ $\lVert\mathbf m\rVert^2/\sigma^2$ です（$\lVert\mathbf m\rVert \gg \sigma\sqrt d$ のとき）。
# 「$\kappa = \lVert\mathbf m\rVert/\sigma^2$」は括弧の中の条件付けの読み方のほうで、こちらは近似ではなく厳密です。
#
# ### 5.2 vMF は最大エントロピーの方向分布
#
# 講義の NOTE「最大エントロピー原理」：平均 $\mathbb{E}[\mathbf x]$ が決まっているとき、球面上でエントロピーがいちばん大きい分布が vMF です。
# 円周 $\mathbb{S}^1$ で、平均合成ベクトル長 $R = \lVert\mathbb{E}[\mathbf x]\rVert$ が同じになるように合わせた6種類の分布のエントロピー
# $H = -\int p(\theta)\log p(\theta)\,d\theta$ を比べます（4096 点の格子で数値積分。vMF は閉じた式 $H = -\log C_2(\kappa) - \kappa A_2(\kappa)$ とも照合）。
#
# - **vMF**（円周では von Mises 分布）：$A_2(\kappa) = R$ になる κ を二分法で求める（`sphere.vmf_mean_resultant_length`）。
# - **巻き込み正規分布**（wrapped normal）：$N(0, s^2)$ を $2\pi$ で巻いたもの。$R = e^{-s^2/2}$。
# - **射影正規分布**：$N((m, 0), I)$ を円周へ射影したもの（§5.1）。$R$ が合う $m$ を、閉じた式
#   $R(m) = \sqrt{\pi/8}\,m\,e^{-m^2/4}\big(I_0(m^2/4) + I_1(m^2/4)\big)$（`sphere.log_bessel_iv` で計算）から二分法で求める
#   （表の「max |R - target|」が、この式と数値積分の $R$ の一致を確かめています）。
# - **巻き込みコーシー分布**：$p(\theta) = (1-\rho^2)/(2\pi(1 + \rho^2 - 2\rho\cos\theta))$、$R = \rho$。
# - **カージオイド分布**：$p(\theta) = (1 + 2\rho\cos\theta)/(2\pi)$、$R = \rho$（$\rho \le 1/2$ のときだけ密度が負にならない）。
# - **円弧上の一様分布**：$[-a, a]$ の上で一様。$R = \sin a / a$。

# %%
n_grid = 4096
theta_g = np.linspace(-np.pi, np.pi, n_grid, endpoint=False)
dtheta = 2 * np.pi / n_grid
circle_pts = np.stack([np.cos(theta_g), np.sin(theta_g)], axis=1)


def bisect(f, lo, hi, target, iters=60):
    """x in [lo, hi] with f(x) = target, for f increasing."""
    for _ in range(iters):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def entropy(p):
    q = p[p > 0]
    return -np.sum(q * np.log(q)) * dtheta


def resultant(p):
    return np.sum(p * np.cos(theta_g)) * dtheta


erf = np.vectorize(math.erf)


def projected_normal_pdf(m):
    """Angle density of z / |z| for z ~ N((m, 0), I) in R^2 (closed form with the normal cdf)."""
    a = m * np.cos(theta_g)
    cdf, pdf = 0.5 * (1 + erf(a / np.sqrt(2))), np.exp(-a * a / 2) / np.sqrt(2 * np.pi)
    return np.exp(-m * m / 2) / (2 * np.pi) * (1 + a * cdf / pdf)


def projected_normal_resultant(m):
    """R = E[cos theta] of the projected normal N((m, 0), I) on the circle, in closed form (modified Bessel I0, I1)."""
    x = m * m / 4
    return math.sqrt(math.pi / 8) * m * sum(math.exp(float(sphere.log_bessel_iv(nu, x)) - x) for nu in (0, 1))


def wrapped_normal_pdf(s2):
    return sum(np.exp(-(theta_g + 2 * np.pi * k) ** 2 / (2 * s2)) for k in range(-20, 21)) / np.sqrt(2 * np.pi * s2)


def family_densities(R):
    kappa_R = bisect(lambda k: sphere.vmf_mean_resultant_length(2, k), 0.0, 1e4, R)
    a_R = bisect(lambda a: -np.sin(a) / a, 1e-9, np.pi, -R)
    pdfs = {"vMF": np.exp(sphere.vmf_log_density(circle_pts, np.array([1.0, 0.0]), kappa_R)),
            "巻き込み正規": wrapped_normal_pdf(-2 * np.log(R)),
            "射影正規": projected_normal_pdf(bisect(projected_normal_resultant, 0.0, 30.0, R)),
            "巻き込みコーシー": (1 - R * R) / (2 * np.pi * (1 + R * R - 2 * R * np.cos(theta_g)))}
    if R <= 0.5:
        pdfs["カージオイド"] = (1 + 2 * R * np.cos(theta_g)) / (2 * np.pi)
    return kappa_R, a_R, pdfs


family_names = ["vMF", "巻き込み正規", "射影正規", "巻き込みコーシー", "カージオイド", "円弧上の一様"]
print(f"{'R':>5} | " + " ".join(f"{name:>10s}" for name in ["vMF", "wrap.normal", "proj.normal", "wrap.Cauchy", "cardioid",
                                                             "arc unif."]) + " | checks")
R_grid = np.linspace(0.05, 0.95, 19)
H_table = {name: [] for name in family_names}
for R in R_grid:
    kappa_R, a_R, pdfs = family_densities(R)
    H = {name: entropy(p) for name, p in pdfs.items()}
    H["円弧上の一様"] = np.log(2 * a_R)                            # uniform on [-a, a]: log(2a)
    for name in family_names:
        H_table[name].append(H.get(name, np.nan))
    if np.isclose(R, [0.2, 0.45, 0.7, 0.9]).any():
        H_closed = -sphere.vmf_log_normalizer(2, kappa_R) - kappa_R * sphere.vmf_mean_resultant_length(2, kappa_R)
        worst_R = max(abs(resultant(p) - R) for p in pdfs.values())
        worst_int = max(abs(np.sum(p) * dtheta - 1) for p in pdfs.values())
        print(f"{R:5.2f} | " + " ".join(f"{H[name]:10.4f}" if name in H else f"{'-':>10}" for name in family_names)
              + f" | vMF closed form {H_closed:.4f}; max |R - target| {worst_R:.0e}, max |integral - 1| {worst_int:.0e}")
print(f"uniform on the whole circle (R = 0): H = log(2 pi) = {np.log(2 * np.pi):.4f}")
H_arr = np.array([H_table[name] for name in family_names])
print("vMF has the largest entropy at every R on the grid:", bool(np.all(np.nanargmax(H_arr, axis=0) == 0)))

family_colors = dict(zip(family_names, ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")))
fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
for name in family_names[1:]:
    axes[0].plot(R_grid, np.array(H_table["vMF"]) - np.array(H_table[name]), "o-", ms=3, color=family_colors[name],
                 label=name)
axes[0].set(xlabel="平均合成ベクトル長 R", ylabel="H(vMF) − H（nats、対数軸）", yscale="log",
            title="同じ R の分布のエントロピーは vMF より小さい（差がすべて正）")
axes[0].legend(fontsize=8)
kappa_R, a_R, pdfs = family_densities(0.7)
for name, p in pdfs.items():
    axes[1].plot(theta_g, p, "-" if name == "vMF" else "--", lw=2.5 if name == "vMF" else 1.2,
                 color=family_colors[name], label=name)
axes[1].plot(theta_g, (np.abs(theta_g) <= a_R) / (2 * a_R), ":", color=family_colors["円弧上の一様"], label="円弧上の一様")
axes[1].set(xlabel="角度 θ（ラジアン）", ylabel="確率密度", title="R = 0.7 にそろえた密度")
axes[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# 表のどの行でも、図のどの $R$ でも、vMF のエントロピーがいちばん大きくなっています（表の後の True。左の図は vMF との差で、どれも正）。巻き込み正規分布と射影正規分布は vMF にかなり近く、
# 円弧上の一様分布や $R$ が大きいときの巻き込みコーシー分布は、同じ平均の長さでもずっと「仮定の多い」（エントロピーの小さい）分布です。
# 講義の言う「最も仮定の少ない方向分布」はこの意味です。ただし制約がなければ、最大は円周上の一様分布の $\log 2\pi = 1.8379$ で（表の下の行）、
# vMF は「平均の向きと長さを決めた」という制約つきの最大です。

# %% [markdown]
# ## 6. リーマン勾配＋リトラクション と 射影勾配法
#
# 講義の「球面上の学習」：点 $x \in \mathbb{S}^{d-1}$ の接空間は $T_x\mathbb{S}^{d-1} = \{v : v^\top x = 0\}$、
# ユークリッド勾配 $g$ を接空間へ射影したものがリーマン勾配 $\mathrm{grad}_S f = g - (g^\top x)\,x$（`sphere.tangent_project`）です。
#
# - **リーマン勾配＋リトラクション**：$x \leftarrow R(x - \eta\,\mathrm{grad}_S f)$（`sphere.riemannian_sgd_step`。$R$ は球面へ戻す写像、リトラクションで、
#   多様体最適化（講義の文献では Absil et al., 2008）の用語です）。
#   接平面内で1歩進むので、リトラクション前の $\lVert x - \eta\,\mathrm{grad}_S f\rVert^2 = 1 + \eta^2 \lVert \mathrm{grad}_S f \rVert^2$：球面からのずれは $\eta$ の **2次**。
# - **射影勾配法**（講義の疑似コード）：$x \leftarrow x - \eta g$、$x \leftarrow x/\lVert x\rVert$（`sphere.projected_sgd_step`）。
#   $g$ の半径方向成分も $x$ を動かすので、ずれは $\eta$ の **1次**。
#
# 例として $f(x) = -x^\top A x$（$A$ は対称行列）を $\mathbb{S}^{9}$ 上で最小化します。最小点は $A$ の最大固有ベクトルで、最小値は $-\lambda_{\max}$。

# %%
d = 10
rng = np.random.default_rng(7)
M = rng.standard_normal((d, d))
A = (M + M.T) / 2
lam_max = np.linalg.eigvalsh(A)[-1]


def f(x):
    return -x @ A @ x


def euclid_grad(x):
    return -2 * A @ x


x_start = l2_normalize_np(rng.standard_normal(d))
g = euclid_grad(x_start)
print(f"radial part of the Euclidean gradient g.x = {g @ x_start:.3f}; |g| = {np.linalg.norm(g):.3f}, "
      f"|grad_S| = {np.linalg.norm(tangent_project(x_start, g)):.3f}")

lrs = np.logspace(-4, 0, 30)
drift_riem = [abs(np.linalg.norm(x_start - lr * tangent_project(x_start, g)) - 1) for lr in lrs]
drift_proj = [abs(np.linalg.norm(x_start - lr * g) - 1) for lr in lrs]

lr = 0.05
xr, xp = x_start.copy(), x_start.copy()
hist = {"riem": [f(xr)], "proj": [f(xp)]}
drift = {"riem": [], "proj": []}
for _ in range(60):
    drift["riem"].append(abs(np.linalg.norm(xr - lr * tangent_project(xr, euclid_grad(xr))) - 1))
    drift["proj"].append(abs(np.linalg.norm(xp - lr * euclid_grad(xp)) - 1))
    xr = sphere.riemannian_sgd_step(xr, euclid_grad(xr), lr)
    xp = sphere.projected_sgd_step(xp, euclid_grad(xp), lr)
    hist["riem"].append(f(xr))
    hist["proj"].append(f(xp))
print(f"after 60 steps: f = {hist['riem'][-1]:.6f} (Riemannian), {hist['proj'][-1]:.6f} (projected); "
      f"minimum -λ_max = {-lam_max:.6f}; both |x| = {np.linalg.norm(xr):.15f}, {np.linalg.norm(xp):.15f}")
print(f"last step: drift before retraction {drift['riem'][-1]:.1e} (Riemannian) vs {drift['proj'][-1]:.3f} (projected); "
      f"at the minimum g = -2 λ_max x is purely radial, so the projected drift -> 2 η λ_max = {2 * lr * lam_max:.3f}")
print(f"near the minimum the projected step moves along the sphere only 1 / (1 + 2 η λ_max) = "
      f"{1 / (1 + 2 * lr * lam_max):.3f} as far as the Riemannian one")

fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
axes[0].loglog(lrs, drift_riem, "o-", ms=3, label="リーマン勾配の1歩 x - η grad_S f")
axes[0].loglog(lrs, drift_proj, "s-", ms=3, label="ユークリッド勾配の1歩 x - η g")
axes[0].loglog(lrs, lrs ** 2, "k:", lw=1, label="傾き 2（$\\eta^2$）")
axes[0].loglog(lrs, lrs, "k--", lw=1, label="傾き 1（$\\eta$）")
axes[0].set(xlabel="学習率 η", ylabel="リトラクション前の | ||x_new|| - 1 |", title="1歩で球面から外れる量")
axes[0].legend(fontsize=8)
axes[1].semilogy(drift["riem"], label="リーマン勾配＋リトラクション")
axes[1].semilogy(drift["proj"], label="射影勾配法（ユークリッド勾配の1歩）")
axes[1].set(xlabel="ステップ", ylabel="リトラクション前の | ||x_new|| - 1 |", title=f"学習中のずれ（η = {lr}）")
axes[1].legend(fontsize=8)
axes[2].semilogy(np.array(hist["riem"]) + lam_max, label="リーマン勾配＋リトラクション")
axes[2].semilogy(np.array(hist["proj"]) + lam_max, label="射影勾配法（ユークリッド勾配の1歩）")
axes[2].set(xlabel="ステップ", ylabel="f(x) - min f", title="$S^9$ 上の $f(x) = -x^\\top A x$")
axes[2].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# どちらもリトラクション後は厳密に球面上（ノルム 1）にあり、どちらも最小値へ収束します。$\eta \to 0$ では2つの1歩の差は $\eta^2$ の程度なので、
# 講義のとおり「学習率が十分小さければ、リーマン勾配降下法に近い挙動を示す」のです。違いはリトラクション前のずれの **次数** に現れます。
#
# - 左：1歩のずれ。接平面内の1歩は傾き 2、ユークリッド勾配の1歩は傾き 1。射影勾配法の曲線の谷は、半径方向成分 $g^\top x > 0$ による1次の縮みと
#   2次の伸びが打ち消し合って、たまたまノルムが 1 に戻る $\eta$ です。
# - 中：学習の途中のずれ。最小点に近づくとリーマン勾配は 0 に向かうのでずれも消えますが、ユークリッド勾配 $g = -2Ax \approx -2\lambda_{\max} x$ は
#   ほぼ **半径方向だけ** になり、射影勾配法は毎回「$x$ を $1 + 2\eta\lambda_{\max}$ 倍に伸ばして正規化で戻す」ことを繰り返します（上の出力の値）。
# - 右：$\eta = 0.05$ では、$f(x) < 0$ になって以降は射影勾配法のほうが遅くなります。$g^\top x = 2f(x) < 0$ なので $x - \eta g$ は伸び、
#   それを正規化で割り戻すとき接方向の1歩も同じ比率で縮むからです（最小点の近くでは上の出力の $1/(1 + 2\eta\lambda_{\max})$ 倍）。
#
# リトラクションと厳密な測地線の1歩（指数写像 `sphere.exp_map`）の差は $\eta$ の3次です。

# %%
v = 0.3 * l2_normalize_np(tangent_project(x_start, g))
for scale in (1.0, 0.5, 0.25):
    step = scale * v
    gap = geodesic_distance_np(retract(x_start + step), sphere.exp_map(x_start, step))
    print(f"|v| = {np.linalg.norm(step):.4f}: angle between retraction and exp map = {gap:.3e} rad "
          f"(|v|^3 / 3 = {np.linalg.norm(step) ** 3 / 3:.3e})")

# %% [markdown]
# ### 運動量（モーメンタム）は接空間に残らない
#
# 講義の「近似の限界」には、もう一つ注意があります：
#
# > また、運動量を使う場合、運動量ベクトルも接空間上にあるべきだが、この近似ではそれが保証されない。
#
# 講義は続けて、より厳密なリーマン最適化手法については Bonnabel (2013)（多様体上の確率的勾配降下法）などを参照、としています。ここでは、保証されないとはどういうことかを数で見ます。
# 重い球（heavy-ball）のモーメンタム $m \leftarrow \beta m + g$、$x \leftarrow R(x - \eta m)$（β = 0.9、η = 0.02）で同じ $f(x) = -x^\top A x$ を最小化し、
# 各ステップで運動量ベクトル $m$ のうち **半径方向の割合** $|m^\top x| / \lVert m\rVert$ を測ります（$m$ が接空間にあれば 0）。
#
# - **射影勾配法＋モーメンタム**：$g$ はユークリッド勾配のまま。
# - **リーマン勾配＋モーメンタム**：$g$ を接空間へ射影してから積む。各 $g$ はその時点の接空間にありますが、$m$ は **過去の点** の接ベクトルの和なので、
#   今の点の接空間からずれます（球面上では点ごとに接空間が違う）。
# - **＋運動量の移送**：リトラクションの後で $m$ を新しい点の接空間へ射影する（射影によるベクトル移送。いちばん簡単な移送）。

# %%
lr_m, beta = 0.02, 0.9
momentum_runs = {}
for name in ("projected", "riemannian", "riemannian + transport"):
    x = x_start.copy()
    m = np.zeros(d)
    radial, gap = [], []
    for _ in range(150):
        g_x = euclid_grad(x)
        if name != "projected":
            g_x = tangent_project(x, g_x)
        m = beta * m + g_x
        radial.append(abs(m @ x) / np.linalg.norm(m))     # x: the point where m is used
        stretch = np.linalg.norm(x - lr_m * m)             # length before the retraction
        x = retract(x - lr_m * m)
        if name == "riemannian + transport":
            m = tangent_project(x, m)                      # carry m into the tangent space at the new point
        gap.append(f(x) + lam_max)
    momentum_runs[name] = (np.array(radial), np.array(gap))
    print(f"{name:23s}: radial share |m.x| / |m| median {np.median(radial):.3f}, max {np.max(radial):.3f}; "
          f"f - min f after 150 steps {gap[-1]:.1e}; last ||x - eta m|| = {stretch:.2f}")
ratio_transport = momentum_runs["riemannian + transport"][1][-1] / momentum_runs["riemannian"][1][-1]
print(f"after 150 steps, f - min f with transport / without = {ratio_transport:.0f}")

fig, axes = plt.subplots(1, 2, figsize=(13, 4))
labels_m = {"projected": "射影勾配法＋モーメンタム", "riemannian": "リーマン勾配＋モーメンタム",
            "riemannian + transport": "リーマン勾配＋モーメンタム＋移送"}
for name, (radial, gap) in momentum_runs.items():
    axes[0].plot(radial, label=labels_m[name])
    axes[1].semilogy(gap, label=labels_m[name])
axes[0].set(xlabel="ステップ", ylabel="|m·x| / ||m||", ylim=(-0.03, 1.03),
            title="運動量ベクトルの半径方向の割合（0 なら接空間の中）")
axes[1].set(xlabel="ステップ", ylabel="f(x) - min f", title=f"収束（β = {beta}, η = {lr_m}）")
for ax in axes:
    ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# - **射影勾配法＋モーメンタム**：最小点に近づくと勾配がほぼ半径方向だけになり、それが積み重なって $m$ もほぼ半径方向になります（割合 → 1）。
#   $x - \eta m$ は大きく伸びてから正規化で縮められ（最後のステップで長さ 2.2、上の出力）、そのとき接方向の1歩も同じ比率で縮むので、
#   収束が大きく遅れます（右の図）。半径方向の運動量は、リトラクションで捨てられるだけの無駄な動きです。
# - **リーマン勾配＋モーメンタム**：積むのは接ベクトルでも、$m$ は接空間に残りません（割合は 0.97 まで上がり、中央値 0.31）。
#   この例では収束は速いままですが、$m$ が接空間にあるという保証はありません。講義の注意はこのことです。
# - **＋移送**：$m$ を毎回新しい接空間へ射影すると、割合は 0 のままです。ただし収束は移送なしより **遅く**、150 ステップ後の $f - \min f$ は
#   移送なしの 37 倍です（上の出力の最後の行の比。右の図でも、移送ありの線のほうが上に残る）。$m$ を接空間に保つことと速く収束することは別の性質で、
#   この例では移送しないほうが速く収束しました。移送は「運動量を接空間に保つ」ための操作で、速さを約束するものではありません。
#
# microgpt の Adam も同じ事情にあります。`microgpt.train(..., riemannian=True)`（コマンドラインでは `--riemannian`）は、Adam に渡す前に
# 各重み行列の勾配を接空間へ射影します（`microgpt.project_grads`。上の「リーマン勾配＋モーメンタム」にあたる）。しかし Adam の1次・2次モーメントは
# 移送されず、しかも Adam は座標ごとに $\sqrt{\hat v}$ で割るので、更新ベクトルは接ベクトルになりません。どちらの設定でも、球面制約を守っているのは
# 各ステップの後のリトラクション（`microgpt.retract`）です。学習率の掃引と 5 つのシードで比べた実験では、`--riemannian` の有無による差はシードのばらつきの範囲内でした
# （[`experiments/results/names/results.md`](../experiments/results/names/results.md)）。

# %% [markdown]
# ## 7. microgpt：RMSNorm と球面（nGPT）を学習で比べる
#
# 第22章の tiny GPT（`microgpt.py`）を2つのモードで学習します。
#
# - `norm="rmsnorm"`：元の microgpt（RMSNorm、重みは制約なし）。
# - `norm="sphere"`：nGPT（Loshchilov et al., 2025）の球面制約。埋め込み・隠れ状態・重み行列のベクトルがすべて単位ノルムで、更新のたびにリトラクション（`microgpt.retract`）で球面に戻します。
#
# 既定のコーパス（英語圏のファーストネーム）で、NumPy エンジン・バッチ 16・1500 ステップ（数秒）。検証損失を、ニューラルネットなしの基準
# （一様・ユニグラム・文字バイグラム）と並べます。

# %%
docs = microgpt.load_corpus("names")
vocab = microgpt.build_vocab(docs)
train_docs, val_docs = microgpt.split_docs(docs, seed=42)
base = microgpt.baselines([microgpt.doc_tokens(d, vocab) for d in train_docs],
                          [microgpt.doc_tokens(d, vocab) for d in val_docs],
                          microgpt.GPTConfig(vocab_size=len(vocab) + 1))
grad_probe = [microgpt.doc_tokens(d, vocab) for d in val_docs[:64]]   # a fixed batch: the gradient's size (§7.2)
runs, grad_norms = {}, {}
for norm in ("rmsnorm", "sphere"):
    cfg = microgpt.GPTConfig(vocab_size=len(vocab) + 1, norm=norm)
    record = []

    def probe(info, cfg=cfg, record=record):
        """Every 100 steps: the norm of the whole gradient on the fixed batch (train calls this after each step)."""
        if info["step"] == 1 or info["step"] % 100 == 0:
            _, grads = microgpt.loss_and_grads(info["state"].params, grad_probe, cfg, engine="numpy")
            record.append((info["step"], float(np.sqrt(sum(np.sum(g * g) for g in grads.values())))))

    runs[norm] = (cfg, microgpt.train(train_docs, val_docs, vocab, cfg, steps=1500, batch_size=16,
                                      engine="numpy", eval_every=50, seed=42, progress=probe))
    grad_norms[norm] = record
print(f"{len(docs)} names, vocab {len(vocab)} + BOS; baselines (val):",
      {k: round(v, 4) for k, v in base.items()})
for norm, (_cfg, st) in runs.items():
    below = [step for step, loss in st.val_loss if loss < base["bigram"]]
    print(f"{norm:8s} first eval with val loss below the bigram baseline: step {below[0] if below else 'none'}; "
          f"final val loss {st.val_loss[-1][1]:.4f}")

# %%
fig, ax = plt.subplots(figsize=(11, 4.8))
colors = {"rmsnorm": "tab:blue", "sphere": "tab:orange"}
base_names = {"uniform": "一様", "unigram": "ユニグラム", "bigram": "バイグラム"}
for norm, (_cfg, st) in runs.items():
    tl = np.array(st.train_loss)
    smooth = np.convolve(tl, np.ones(50) / 50, mode="valid")
    ax.plot(np.arange(50, len(tl) + 1), smooth, color=colors[norm], alpha=0.5, lw=1,
            label=f"{norm}：学習損失（50 ステップの移動平均）")
    vs, vl = zip(*st.val_loss)
    ax.plot(vs, vl, "o-", ms=3, color=colors[norm], label=f"{norm}：検証損失")
for (name, value), ls in zip(base.items(), ("-.", "--", ":")):
    ax.axhline(value, color="0.3", ls=ls, lw=1, label=f"{base_names[name]}の基準（検証）{value:.3f}")
ax.set(xlabel="ステップ（1 ステップ = 名前 16 個のバッチ）", ylabel="平均 NLL（1 文字あたり nats）", ylim=(1.9, 3.75),
       title="names で学習した microgpt：norm='rmsnorm' と norm='sphere'（NumPy エンジン）")
ax.legend(fontsize=8, ncol=2, loc="upper right")
plt.tight_layout()
plt.show()

# %% [markdown]
# どちらのモードも 100 ステップ以内にバイグラムの基準を下回り、その後は同じような曲線をたどります（正確なステップと最終値は上の出力）。
# この小さなモデル（$C = 16$、1層）と短い学習では、球面モードが目に見えて速く学習するわけではありません。
# 学習率の掃引と 5 つのシードで比べた実験（[`experiments/results/names/results.md`](../experiments/results/names/results.md)）でも、
# このスケールでは RMSNorm のほうが少し速く、少し低い損失に届きます。講義の注意どおり、nGPT の「4～20倍」は大きなモデルでの報告で、
# 高速化の理由もまだ仮説段階です。ここで確かめられるのは、球面制約が学習を壊さずに **厳密に** 保たれることです。
#
# 次に、学習後のモデルで **ノルムの分布** を比べます。検証用の名前 200 個を `microgpt.forward_np` に通し、
# 残差の流れ（埋め込みの後、注意ブロックの後、MLP ブロックの後：`cache["hidden"]`）の各ベクトルのノルムと、
# 各重み行列の「埋め込み次元に沿ったベクトル」（`microgpt.sphere_axes` の軸）のノルムを集めます。

# %%
val_tokens = [microgpt.doc_tokens(d, vocab) for d in val_docs[:200]]
block_size = runs["sphere"][0].block_size
inputs = [t[:-1][:block_size] for t in val_tokens]          # every position that predicts a next token
targets = [t[1:][:block_size] for t in val_tokens]
mask = np.zeros((len(inputs), max(len(t) for t in inputs)), dtype=bool)
target_ids = np.zeros(mask.shape, dtype=np.int64)
for b, (inp, tgt) in enumerate(zip(inputs, targets)):
    mask[b, :len(inp)] = True                                  # forward_np pads the shorter names at the end
    target_ids[b, :len(tgt)] = tgt
norm_data = {}
for norm, (cfg, st) in runs.items():
    _, cache = microgpt.forward_np(st.params, inputs, cfg)
    hidden = np.concatenate([np.linalg.norm(h, axis=-1)[mask] for h in cache["hidden"]])
    weights = np.concatenate([np.linalg.norm(st.params[k], axis=ax_) for k, ax_ in microgpt.sphere_axes(cfg).items()])
    norm_data[norm] = (hidden, weights)
    print(f"{norm:8s} hidden-state norms: min {hidden.min():.6f} max {hidden.max():.6f} "
          f"| weight-vector norms: min {weights.min():.6f} max {weights.max():.6f}")
    for stage, h in zip(("after the embedding", "after attention", "after the MLP"), cache["hidden"]):
        n_ = np.linalg.norm(h, axis=-1)[mask]
        print(f"         {stage:20s}: min {n_.min():.4f}, median {np.median(n_):.4f}, max {n_.max():.4f}")
    if norm == "sphere":
        print(f"         max | ||h|| - 1 | = {np.abs(hidden - 1).max():.1e}, "
              f"max | ||w|| - 1 | = {np.abs(weights - 1).max():.1e}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4))
for i, title in enumerate(["隠れ状態（残差の流れ）のノルム", "重み行列の埋め込み次元方向のベクトルのノルム"]):
    bins = np.linspace(0, max(norm_data[n][i].max() for n in runs) * 1.05, 60)  # shared by both modes
    for norm in runs:
        vals = norm_data[norm][i]
        axes[i].hist(vals, bins=bins, alpha=0.6, color=colors[norm], label=f"{norm}（{vals.size} 個）")
    axes[i].axvline(1.0, color="k", ls=":", lw=1, label="ノルム 1")
    axes[i].set(xlabel="L2 ノルム", ylabel="個数", yscale="log", title=title)
    axes[i].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# RMSNorm モードでは、埋め込みの直後の隠れ状態は RMSNorm の出力なので、ノルムがどれもほぼ $\sqrt{C} = 4$ です（RMSNorm は二乗平均をほぼ 1 にする。
# `1e-5` のぶんだけ 4 よりわずかに小さい）。その後の注意ブロックと MLP ブロックの残差加算で、ノルムは 4 より小さくも大きくもなり、
# 全体では 3.13 から 14.34 まで広がります（上の出力の段ごとの最小・中央値・最大）。重みのノルムも学習でばらばらになります。球面モードでは、隠れ状態も重みも **すべてノルム 1**（丸め誤差の範囲）に並びます。
# ノルムは捨てられ、意味は「向き」だけが担う ── 講義のプラネタリウム（星の明るさは使わない）です。
#
# 両モデルが作る名前（温度 0.5）：

# %%
for norm, (cfg, st) in runs.items():
    print(f"{norm:8s}", ", ".join(microgpt.sample(st.params, cfg, vocab, num_samples=12, temperature=0.5, seed=1)))

# %% [markdown]
# ### 7.1 「高速化」の意味：ステップ数と、1 ステップの時間
#
# 講義の NOTE のとおり、nGPT の主張は「同じ精度に届くまでの **学習ステップ数** の削減」（4～20倍、シーケンス長に依存）で、
# 壁時計時間や FLOPs が同じだけ減るとは限りません。正規化のぶん、1 ステップの計算は増えるからです。
# 削減率の「シーケンス長への依存」は、論文では文脈が長いほど削減率が大きいという報告です。ここの names は最長でも 12 トークン（BOS と 11 文字。下のセルの出力の1行目）、モデルは1層・$C = 16$ なので、
# その条件はまったく再現できません。ここで測れるのは、次の2つです。
#
# - 同じ検証損失に届くまでの **ステップ数**（上の学習の記録。検証損失は 50 ステップごとなので、50 ステップ刻み）。
# - **1 ステップの時間**：両モードを 150 ステップずつ、交互に 2 回学習し直し、各ステップにかかった時間の中央値を取ります
#   （同じマシンで他の仕事が動くと時間が跳ねるので、平均ではなく中央値、2 回のうち速いほう）。値はこのノートを実行するたびに少し変わります。

# %%
longest_name = max(docs, key=len)
print(f"longest name: {longest_name!r}, {len(longest_name)} characters -> {len(longest_name) + 1} input tokens "
      f"(BOS + characters), of block_size {runs['sphere'][0].block_size}")
targets = {"bigram baseline": base["bigram"], "2.2": 2.2, "2.1": 2.1, "2.05": 2.05}
steps_to = {norm: {name: next((step for step, loss in st.val_loss if loss <= t), None) for name, t in targets.items()}
            for norm, (_cfg, st) in runs.items()}


def ms_per_training_step(cfg, steps=150):
    """Median wall time of one training step (loss, gradient, Adam, and the retraction in sphere mode), in ms."""
    stamps = []
    microgpt.train(train_docs, val_docs, vocab, cfg, steps=steps, batch_size=16, engine="numpy", eval_every=steps,
                   seed=42, progress=lambda info: stamps.append(time.perf_counter()))
    return 1000 * float(np.median(np.diff(stamps[:-1])))      # the last step also evaluates: left out


ms_per_step = {norm: [] for norm in runs}
for _ in range(2):                                   # alternate the two modes
    for norm, (cfg, _st) in runs.items():
        ms_per_step[norm].append(ms_per_training_step(cfg))
ms = {norm: min(v) for norm, v in ms_per_step.items()}
print(f"time per step (median over 150 steps, best of 2 runs): rmsnorm {ms['rmsnorm']:.2f} ms, "
      f"sphere {ms['sphere']:.2f} ms -> sphere / rmsnorm = {ms['sphere'] / ms['rmsnorm']:.2f}")
print(f"\n{'val loss target':>16} | {'steps: rmsnorm':>14} {'sphere':>7} {'rmsnorm/sphere':>15} | "
      f"{'time: rmsnorm':>13} {'sphere':>11}")
for name in targets:
    a, b = steps_to["rmsnorm"][name], steps_to["sphere"][name]
    time_a = f"{a * ms['rmsnorm'] / 1000:.2f} s" if a else "-"
    time_b = f"{b * ms['sphere'] / 1000:.2f} s" if b else "not reached"
    ratio = f"{a / b:.2f}" if a and b else "-"
    print(f"{name:>16} | {a or '-':>14} {b or 'no':>7} {ratio:>15} | {time_a:>13} {time_b:>11}")

# %% [markdown]
# この小さなモデルでは、球面モードは **ステップ数でも遅く**（どの目標でも rmsnorm/sphere の比が 1 未満。いちばん低い目標には球面モードは届かない）、
# **1 ステップも重い**（正規化とリトラクションのぶん。上の時間の比）ので、壁時計時間ではさらに差が開きます。
# 講義の言う「総合的な効率改善の程度は、実装やハードウェアに依存する」の、小さなモデルでの姿です。1 ステップの上乗せは正規化とリトラクションの費用で、
# その割合はモデルの大きさ、系列の長さ、実装（行列積がどれだけ速いか）で変わります。
# 文脈が長いほどステップ数の削減が大きいという論文の報告が本当に当てはまるかは、ここでは確かめられません（長い文脈と大きなモデルが要る）。
#
# ### 7.2 なぜ高速化するのか（講義の仮説）を、ここで確かめられる範囲で
#
# 講義は、高速化の理由として4つの仮説を挙げ、「仮説段階」と注意しています。このノートの道具で確かめられる範囲を並べます。
#
# | 仮説 | 講義の説明 | ここで見るもの |
# |---|---|---|
# | 勾配の安定化 | ノルムが固定されると、勾配のスケールも安定する | 学習中の勾配全体のノルム（§7 の学習で 100 ステップごとに、検証の名前 64 個の固定バッチで測ったもの） |
# | 損失ランドスケープの改善 | 球面上では、局所解の構造が単純になる可能性 | ここでは測れません（ヘッセ行列や多数の初期値からの比較が要る） |
# | 学習率の設定が容易 | ノルムが一定なので、学習率の調整が楽になる | 記録済みの実験（`experiments/results/names/results.json`）の学習率の掃引：5 つの学習率での最終検証損失 |
# | 高次元の集中現象との相性 | 高次元のデータは「自然に球面状に分布しやすい」 | ガウス分布のノルムの相対的なばらつき（標準偏差 / 平均）が次元とともに縮むこと（§1 の 768 次元の続き） |

# %%
print("gradient norm on the fixed batch (every 100 steps; relative to the first, measured after step 1):")
for norm, record in grad_norms.items():
    gn = np.array([g for _, g in record])
    print(f"  {norm:8s} first {gn[0]:.3f}; relative: {np.round(gn / gn[0], 2)}; max / min over training {gn.max() / gn.min():.2f}")

results = json.loads((ROOT / "experiments" / "results" / "names" / "results.json").read_text(encoding="utf-8"))
print(f"\nrecorded learning-rate sweep ({results['main_setting']}: batch 16, 1 layer, 2000 steps, seed 0), final val loss:")
for run in results["runs"]:
    if run["setting"] == results["main_setting"] and run["arm"] in ("rmsnorm", "sphere"):
        finals = [r["final_val"] for r in run["sweep"]]
        print(f"  {run['arm']:8s} " + "  ".join(f"lr {r['lr']:.4f}: {r['final_val']:.3f}" for r in run["sweep"])
              + f"  | worst - best = {max(finals) - min(finals):.3f}")

rng = np.random.default_rng(1)
print("\nnorms of N(0, I) vectors in R^d (the shell gets thin as d grows):")
for d_ in (3, 16, 64, 768):
    n_ = np.linalg.norm(rng.standard_normal((4000, d_)), axis=1)
    print(f"  d = {d_:3d}: mean {n_.mean():6.2f} (sqrt(d) = {np.sqrt(d_):6.2f}), std / mean = {n_.std() / n_.mean():.3f} "
          f"(1 / sqrt(2d) = {1 / np.sqrt(2 * d_):.3f})")

# %% [markdown]
# - **勾配の安定化**：この学習では、球面モードの勾配のノルムのほうがむしろ大きく変わります（学習が進むにつれておおむね大きくなり、最大で最初の 2.33 倍。
#   $s_z$ などの倍率が育ってロジットが鋭くなるぶんと考えられます）。rmsnorm モードは上下に揺れながらほぼ同じ大きさです。この小さなモデルでは、仮説を支える様子は見えません。
# - **学習率の設定が容易**：記録済みの掃引では、5 つの学習率の最良と最悪の差は球面モードのほうが大きく、小さな学習率での悪化が目立ちます（上の出力）。
#   ここでも仮説を支える結果ではありません。
# - **高次元の集中現象**：ノルムの相対的なばらつきは $1/\sqrt{2d}$ のように縮み、768 次元ではノルムがほとんど一定です。
#   高次元のガウス的なデータは「もともとほぼ球面の上にある」ので、球面制約で失う情報が少ない、というのがこの仮説の中身です。
#   逆に $d = 16$ の microgpt では、ばらつきはまだ 18% ほどあります。
#
# 講義の CAUTION のとおり、これらは提案されている説明で、証明されたメカニズムではありません。小さなモデルでの結果は、大きなモデルでの報告を否定するものでもありません。
#
# ### 7.3 歴史的文脈：なぜ 2010 年代には普及しなかったか、そして今
#
# 講義は理由の1つ目に、NormFace（Wang et al., 2017）が指摘した「スケーリングと損失設計の非自明さ」を挙げます。その中身は、数で見るとはっきりします。
# 特徴ベクトルもクラス代表（ここでは `lm_head` の行）も単位ベクトルなら、ロジットはコサインで $[-1, 1]$ に収まります。
# するとどんなに上手に並べても、softmax の交差エントロピーには **下限** があります。$K$ クラスを互いにいちばん離れた配置（正単体：どの2つのコサインも $-1/(K-1)$）に置き、
# 特徴が正解クラスの代表にぴったり重なったときが最良で、倍率 $s$ を掛けたロジット $s\cos\theta$ の損失は
#
# $$\log\Big(1 + (K-1)\,e^{-sK/(K-1)}\Big)$$
#
# です（NormFace の下限）。$K = 27$ の microgpt で計算し、正単体を実際に作って交差エントロピーを測った値とも比べます。

# %%
K_tokens = len(vocab) + 1
simplex = l2_normalize_np(np.eye(K_tokens) - 1 / K_tokens)     # K unit vectors, pairwise cos = -1/(K-1)
print(f"regular simplex of {K_tokens} unit vectors: pairwise cos {(simplex @ simplex.T)[0, 1]:.4f} "
      f"(-1/(K-1) = {-1 / (K_tokens - 1):.4f})")
s_z_trained = model_config.effective_scales(runs["sphere"][1].params, runs["sphere"][0])["s_z"]
print(f"{'scale s':>26} | {'loss floor (formula)':>20} {'simplex, measured':>18}")
for label, s_ in (("1 (s_z at init)", 1.0), ("2", 2.0), ("4", 4.0),
                  (f"{np.median(s_z_trained):.2f} (median learned s_z)", float(np.median(s_z_trained)))):
    floor = np.log1p((K_tokens - 1) * np.exp(-s_ * K_tokens / (K_tokens - 1)))
    p_ = softmax_np(s_ * simplex @ simplex.T)                   # the feature sits exactly on its class's vector
    print(f"{label:>26} | {floor:20.4f} {-np.log(np.diag(p_)).mean():18.4f}")
print(f"bigram baseline (val) {base['bigram']:.4f}; the trained sphere model's final val loss "
      f"{runs['sphere'][1].val_loss[-1][1]:.4f}")
print("microgpt.adam_step's arguments:", list(inspect.signature(microgpt.adam_step).parameters))

# %% [markdown]
# 倍率が 1 のままでは、完璧なモデルでも損失は 2.32 より下がらず、これは文字バイグラムの基準 2.335 とほとんど同じです（上の出力）。
# 正規化しただけのモデルは、数え上げの統計と同じ程度にしか当てられない、ということです。倍率を学習させれば下限は急速に下がり、
# microgpt の球面モードでは $s_z$ がこの役目を担い、学習で中央値が 5.37 まで育ちます（上の表の最後の行。その倍率での下限は 0.09 で、もう邪魔になりません）。
# §8 で、この $s_z$ が vMF の集中度 κ だと見ます。
# 正規化を入れると「どのくらいの倍率を、どう学習させるか」を別に設計しなければならない ── NormFace が指摘したのはこのことでした。
#
# 講義の残りの2つの理由も、このノートで見たものにつながります。「球面制約を維持しながら効率的に最適化する実践的なレシピ」は、§3 の毎ステップのリトラクションと
# §6 のリーマン勾配・運動量の扱いです。「相対的なオーバーヘッド」は §7.1 の 1 ステップの時間の比です。講義の CAUTION のとおり、これは「なぜ普及しなかったか」についての
# 推測で、球面上の最適化そのものは多様体最適化（Absil et al., 2008; Bonnabel, 2013）として研究されていました。
#
# 講義が挙げる「現在の技術」と、このプロジェクトでの対応：
#
# | 現在の技術 | このプロジェクト |
# |---|---|
# | AdamW などの最適化手法（重み減衰と適応的学習率） | microgpt は Adam（`microgpt.adam_step`、学習率は 0 へ線形に減衰）。重み減衰の引数はありません（上の出力の引数の一覧）。球面モードでは重みのノルムが毎ステップ 1 に戻されるので、重み減衰が抑えるはずの「重みの伸び」そのものが起きません |
# | 残差接続（勾配の流れを安定させる） | `gpt` の `x + f(x)` と、`gpt_sphere` の nGPT の残差 $\mathrm{Norm}(h + \alpha(\mathrm{Norm}(f(h)) - h))$（§3） |
# | 混合精度学習 | §2 の float16：ノルムを float32 で計算してクランプする安全策。microgpt 自身は float64（`--dtype float32` も選べる） |
# | 大規模 GPU メモリ（大きなバッチ） | このプロジェクトは CPU だけで、バッチは 16 名前程度。ここでは関係しません |

# %% [markdown]
# ## 8. 講義の中心：vMF と softmax ── ロジットは κ 倍されたコサイン
#
# 講義は、分類を「$\mathbf{x}$ を $K$ 個あるクラス代表ベクトル ${\mathbf{w}}_1,\dots ,{\mathbf{w}}_K$ のそれぞれと比較し」、$K$ 個の角度
# $\theta_1, \dots, \theta_K$ を同時に計算する営みとして説明します。そして前提（クラス代表 $\boldsymbol\mu_k$ と入力 $\mathbf x$ が単位ノルム、
# ロジットがスケール付き内積）のもとで、
#
# $$p(k\mid \mathbf{x})=\frac{\exp (\kappa\,\boldsymbol{\mu}_k^{\top}\mathbf{x})}{\sum_j\exp (\kappa\,\boldsymbol{\mu}_j^{\top}\mathbf{x})}$$
#
# を「温度 $T=1/\kappa$ のSoftmax関数に対応する」と述べます。$\boldsymbol\mu_k^\top\mathbf x = \cos\theta_k$ なので、ロジットは $z_k = \kappa\cos\theta_k$、
# つまり **集中度 κ 倍されたコサイン** です。
#
# この式は、vMF の混合モデルにベイズの定理を当てはめたものと正確に一致します。クラス $k$ の点が $\mathrm{vMF}(\boldsymbol\mu_k, \kappa)$ から生まれ、
# どのクラスも事前確率 $\pi_k = 1/K$ で選ばれるとすると、
#
# $$p(k\mid\mathbf x) = \frac{\pi_k\,C_d(\kappa)\exp(\kappa\,\boldsymbol\mu_k^\top\mathbf x)}{\sum_j \pi_j\,C_d(\kappa)\exp(\kappa\,\boldsymbol\mu_j^\top\mathbf x)},$$
#
# で、$\pi_k$ と $C_d(\kappa)$ は $k$ によらないので約分され、上の softmax だけが残ります。講義の注意（「対応」であって「同一」ではない）が言うとおり、
# vMF 分布は球面上の **点 $\mathbf x$** の分布、softmax は **クラス $k$** の分布で、別物です：
#
# > 両者は「指数関数的に内積が入る」という形式が対応しているだけで、確率モデルとして同一視することはできない。
#
# 両者をつなぐのは「vMF 混合モデルのクラス事後確率」という読み方です。$\mathbb{S}^2$ 上の 4 クラス（κ = 5）で確かめます。事後確率は
# `sphere.vmf_log_density`（正規化定数 $C_d(\kappa)$ 込みの対数密度）からベイズの定理で、softmax は $\cos\theta_k$ を温度 $T = 1/\kappa$ で割って計算します。

# %%
rng = np.random.default_rng(8)
K, kappa = 4, 5.0
mus = l2_normalize_np(rng.standard_normal((K, 3)))                 # unit class means on S^2
counts = rng.multinomial(2000, np.full(K, 1 / K))                 # equal priors
x_mix = np.concatenate([sphere.vmf_sample(mus[k], kappa, n, rng) for k, n in enumerate(counts)])
y_mix = np.repeat(np.arange(K), counts)


def mixture_posterior(x, mus, kappas, priors):
    """Bayes: p(k | x) = pi_k vMF(x | mu_k, kappa_k) / sum_j pi_j vMF(x | mu_j, kappa_j), from log densities."""
    log_joint = np.stack([np.log(p) + sphere.vmf_log_density(x, m, k) for m, k, p in zip(mus, kappas, priors)], axis=1)
    return softmax_np(log_joint)


cos_theta_mix = x_mix @ mus.T
posterior = mixture_posterior(x_mix, mus, np.full(K, kappa), np.full(K, 1 / K))
T = 1 / kappa
print(f"shared kappa = {kappa}, equal priors: max |posterior - softmax(cos / T)| = "
      f"{np.abs(posterior - softmax_np(cos_theta_mix / T)).max():.1e}  (T = 1/kappa = {T})")
print(f"the class with the largest posterior is the class with the smallest angle: "
      f"{np.mean(posterior.argmax(1) == cos_theta_mix.argmax(1)):.0%} of the points; "
      f"it is the true class for {np.mean(posterior.argmax(1) == y_mix):.1%}")
kappas_k = np.array([2.0, 5.0, 10.0, 20.0])                       # one kappa per class
post_k = mixture_posterior(x_mix, mus, kappas_k, np.full(K, 1 / K))
priors_k = np.exp(-sphere.vmf_log_normalizer(3, kappas_k))
priors_k /= priors_k.sum()                                        # pi_k proportional to 1 / C_d(kappa_k)
print(f"kappa per class {kappas_k}: max |posterior (equal priors) - softmax(kappa_k cos)| = "
      f"{np.abs(post_k - softmax_np(kappas_k * cos_theta_mix)).max():.3f}; with priors proportional to "
      f"1 / C_d(kappa_k): {np.abs(mixture_posterior(x_mix, mus, kappas_k, priors_k) - softmax_np(kappas_k * cos_theta_mix)).max():.1e}")

# %% [markdown]
# κ がクラス共通なら、事後確率と温度 $1/\kappa$ の softmax は丸め誤差の範囲で一致し、最大事後確率のクラスは「角度がいちばん小さいクラス」です。
# κ がクラスごとに違うと正規化定数 $C_d(\kappa_k)$ が約分されずに残り、$\mathrm{softmax}(\kappa_k\cos\theta_k)$ は、事前確率が等しい混合の事後確率とは一致しません。
# 一致するのは、事前確率が $\pi_k \propto 1/C_d(\kappa_k)$ の混合です（最後の行）。
#
# ### microgpt の球面モード：$s_z$ が κ
#
# microgpt の球面モード（`norm="sphere"`）の出力層は、まさにこの形です。最後の隠れ状態 $h$ は単位ベクトル、出力埋め込み `lm_head` の各行
# $\boldsymbol\mu_k$ も単位ベクトル（毎ステップのリトラクションで球面に戻される）なので、$\boldsymbol\mu_k^\top h = \cos\theta_k$ です。
# ロジットはそれに学習されるスケール $s_z$ を掛けたもの、$z_k = s_{z,k}\cos\theta_k$ です（`gpt_sphere` の最後の行）。つまり **$s_z$ が集中度 κ** です。
# ただし nGPT と同じく $s_z$ はトークンごとのベクトルなので、κ もトークンごとに違います（上の「κ がクラスごとに違う」場合）。
#
# §7 で学習した球面モデルで確かめます。$s_z$ は `model_config.effective_scales(params, cfg)["s_z"]` で読めます
# （nGPT の流儀で小さく保存されたパラメータに、順伝播で掛け戻す倍率を掛けた値。初期値は `cfg.sz_init`）。

# %%
cfg_s, st_s = runs["sphere"]
labels = list(vocab) + ["BOS"]                                 # token ids 0..25 are the letters, 26 is BOS
s_z = model_config.effective_scales(st_s.params, cfg_s)["s_z"]
logits, cache = microgpt.forward_np(st_s.params, inputs, cfg_s)
h_out = cache["hidden"][-1]                                    # the last residual-stream vector (unit in sphere mode)
lm_head = st_s.params["lm_head"]
cos_theta = h_out @ lm_head.T                                  # cos of the angle to every output embedding
print(f"max | ||h|| - 1 | = {np.abs(np.linalg.norm(h_out, axis=-1) - 1).max():.1e}, "
      f"max | ||lm_head row|| - 1 | = {np.abs(np.linalg.norm(lm_head, axis=1) - 1).max():.1e}")
print(f"max | logits - s_z * cos(theta) | = {np.abs(logits - s_z * cos_theta).max():.1e}")
order_sz = np.argsort(s_z)
print(f"s_z at init: {cfg_s.sz_init} for every token; after training: median {np.median(s_z):.2f}, "
      f"from {s_z.min():.2f} ('{labels[order_sz[0]]}') to {s_z.max():.2f} ('{labels[order_sz[-1]]}')")
print("s_z per token, sorted:", "  ".join(f"{labels[i]} {s_z[i]:.1f}" for i in order_sz))
print(f"cos(theta) over the val positions: from {cos_theta[mask].min():.2f} to {cos_theta[mask].max():.2f}; "
      f"with kappa = 1, logits differ by at most 2: probability ratios up to e^2 = {np.e ** 2:.1f}")

# %% [markdown]
# ロジットは丸め誤差なしに $s_z \cos\theta$ と一致します。学習で $s_z$ は初期値 1 から、トークンによって 4〜9 程度まで育ちました（上の出力）。
# コサインは $[-1, 1]$ にしか値を取らないので、κ = 1 のままではロジットの差は最大 2、確率の比は最大 $e^2 \approx 7.4$ 倍にしかなれません（27 トークンのどれかに確率を集めることができない）。ロジットの幅を作るのが $s_z$ の役目です。
#
# サンプリングは `softmax(logits / temperature)`（`microgpt.sample`）なので、温度 $T$ で引くことは、集中度を $\kappa_k = s_{z,k}/T$ に変えることと同じです。
# $T < 1$ は星座をはっきりさせ（κ を大きく）、$T > 1$ はぼんやりさせます（κ を小さく）。検証データの全位置について、温度ごとの実効的な κ（$s_z/T$ の中央値）、
# 次の文字の分布のエントロピー、検証 NLL、そして生成される名前を見ます。

# %%
for T in (0.25, 0.5, 1.0, 2.0):
    p = softmax_np(logits[mask] / T)
    p_kappa = softmax_np((s_z / T) * cos_theta[mask])                 # the same thing, written with kappa = s_z / T
    entropy = -(p * np.log(p)).sum(axis=1).mean()
    nll = -np.log(p[np.arange(len(p)), target_ids[mask]]).mean()
    names = microgpt.sample(st_s.params, cfg_s, vocab, num_samples=8, temperature=T, seed=1)
    print(f"T = {T:4}: median kappa = s_z / T = {np.median(s_z) / T:5.1f} (max |difference| "
          f"{np.abs(p - p_kappa).max():.0e}), entropy {entropy:.2f} nats, val NLL {nll:.3f} | {', '.join(names)}")

# %%
bos = len(vocab)
first_logits, _ = microgpt.forward_np(st_s.params, [bos], cfg_s)      # position 0: the first letter of a name
kind = ["BOS" if c == "BOS" else "母音" if c in "aeiou" else "子音" for c in labels]
kind_color = {"母音": "tab:red", "子音": "tab:blue", "BOS": "k"}
fig, axes = plt.subplots(1, 2, figsize=(15, 4.4), gridspec_kw={"width_ratios": [1, 1.3]})
axes[0].bar(range(len(labels)), s_z[order_sz], color=[kind_color[kind[i]] for i in order_sz])
axes[0].set_xticks(range(len(labels)), [labels[i] for i in order_sz], fontsize=8)
axes[0].axhline(cfg_s.sz_init, color="0.4", ls=":", lw=1.5)
handles = [Patch(color=c_, label=k_) for k_, c_ in kind_color.items()]
handles.append(Line2D([], [], color="0.4", ls=":", lw=1.5, label=f"初期値 s_z = {cfg_s.sz_init}"))
axes[0].set(xlabel="出力トークン（s_z の小さい順）", ylabel="集中度 κ = s_z",
            title="学習された s_z：トークンごとの集中度 κ（温度 T = 1）")
axes[0].legend(handles=handles, fontsize=8, loc="upper left")
width = 0.27
for j, (T, color) in enumerate(((0.5, "tab:purple"), (1.0, "tab:green"), (2.0, "tab:orange"))):
    p0 = softmax_np(first_logits[0] / T)
    axes[1].bar(np.arange(len(labels)) + (j - 1) * width, p0, width, color=color,
                label=f"T = {T}（κ = s_z / {T}）")
axes[1].set_xticks(range(len(labels)), labels, fontsize=8)
axes[1].set(xlabel="次のトークン", ylabel="確率", title="名前の最初の文字の分布（BOS の次）：温度は集中度 κ を割る")
axes[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# 右の図のとおり、温度を下げる（κ を上げる）と確率は角度の小さいトークンに集まり、上げる（κ を下げる）と一様に近づきます。
# 上の出力では、検証 NLL は T = 1（学習したときの κ そのもの）でいちばん小さく、T を下げるとエントロピーが下がって名前はありふれた形に、
# T を上げると綴りが崩れていきます。§7 で名前の生成に使った T = 0.5 は、全トークンの κ を2倍にしたことになります。
#
# トークンごとの $s_z$ の違い（上の「κ がクラスごとに違う」場合）は、その出力トークンのロジットの幅の違いです。$s_z$ が大きいトークンほど、
# $\cos\theta_k$ の小さな違いが確率に大きく効きます。どのトークンの $s_z$ が大きくなるかはデータと学習の結果で、ここでは x、q、j、h など
# （上の出力と左の図）ですが、この1回の学習から理由を言い切ることはできません。

# %% [markdown]
# ## 9. プラネタリウム：学習した埋め込みの星図
#
# 講義の対応表では、ドーム＝単位球面 $\mathbb{S}^{d-1}$、星＝データ点（埋め込みベクトル）、星座＝意味的なクラスター、星同士の角度＝類似度、
# 星の明るさ＝「（この比喩では使わない。ノルムを捨てた）」でした。球面モードの microgpt では、トークン埋め込み `wte` の 27 行（26 文字と BOS）が、
# まさに $\mathbb{S}^{15}$ 上の 27 個の星です（どの行もノルム 1）。
#
# 星同士の角度を、コサイン類似度の行列で見ます（母音 a, e, i, o, u、子音、BOS の順に並べる）。比較のため、学習前（`microgpt.init_params`、同じシード）の行列も並べます。

# %%
wte = st_s.params["wte"]
wte_init = microgpt.init_params(cfg_s, seed=42)["wte"]
vowel_ids = [i for i, c in enumerate(labels) if c in "aeiou"]
consonant_ids = [i for i, c in enumerate(labels) if c != "BOS" and c not in "aeiou"]
order_star = vowel_ids + consonant_ids + [bos]


def mean_off_diagonal(c, rows, cols):
    block = c[np.ix_(rows, cols)]
    return block[~np.eye(len(rows), dtype=bool)].mean() if rows == cols else block.mean()


print(f"max | ||wte row|| - 1 | = {np.abs(np.linalg.norm(wte, axis=1) - 1).max():.1e}")
off_diagonal = (wte_init @ wte_init.T)[~np.eye(len(labels), dtype=bool)]
print(f"before training, every pair of different rows: cos std {off_diagonal.std():.2f} (random directions in R^16: "
      f"about 1/sqrt(16) = {1 / np.sqrt(16):.2f}), from {off_diagonal.min():+.2f} to {off_diagonal.max():+.2f}")
for name, e in (("before training", wte_init), ("after training", wte)):
    c = e @ e.T
    print(f"{name:15s}: mean cos vowel-vowel {mean_off_diagonal(c, vowel_ids, vowel_ids):+.2f}, "
          f"consonant-consonant {mean_off_diagonal(c, consonant_ids, consonant_ids):+.2f}, "
          f"vowel-consonant {mean_off_diagonal(c, vowel_ids, consonant_ids):+.2f}, "
          f"BOS-letters {c[bos, :bos].mean():+.2f}")
cos_wte = wte @ wte.T
for ch in ("a", "e", "o", "k", "s", "n", "BOS"):
    i = labels.index(ch)
    near = [j for j in np.argsort(-cos_wte[i]) if j != i][:3]
    print(f"  nearest stars to '{ch}': " + ", ".join(f"{labels[j]} ({cos_wte[i, j]:.2f})" for j in near))

fig, axes = plt.subplots(1, 2, figsize=(14, 6.2))
for ax, (title, e) in zip(axes, (("学習前（初期化）", wte_init), ("学習後（球面モード）", wte))):
    c = (e @ e.T)[np.ix_(order_star, order_star)]
    im = ax.imshow(c, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(len(order_star)), [labels[i] for i in order_star], fontsize=7)
    ax.set_yticks(range(len(order_star)), [labels[i] for i in order_star], fontsize=7)
    for pos in (len(vowel_ids) - 0.5, len(vowel_ids) + len(consonant_ids) - 0.5):
        ax.axhline(pos, color="k", lw=0.8)
        ax.axvline(pos, color="k", lw=0.8)
    ax.set_title(title)
fig.suptitle("wte の行（トークン埋め込み）どうしのコサイン類似度 cos θ（母音、子音、BOS の順）")
fig.colorbar(im, ax=axes, shrink=0.8, label="cos θ（1 = 同じ向き、0 = 直交、-1 = 反対向き）")
plt.show()

# %% [markdown]
# 学習前は cos が 0 のまわりに標準偏差 0.24 ほど（−0.62 から +0.75）ばらつくだけで、母音・子音のブロックの構造はありません
# （16 次元のランダムな向きどうしの $1/\sqrt{16} = 0.25$ と同じ程度。上の出力の2行目）。学習後は左上の母音のブロックが赤く（母音どうしは平均して近い向き）、
# 母音と子音の間は青く（平均して離れた向き）なりました（数値は上の出力）。1文字先を予測するモデルにとって、母音どうし・子音どうしは
# 「次に来る文字」の傾向が似ているからだと考えられます。y は子音の側に数えましたが、星図の上では a、e、o のすぐ近くにいます（最近傍の出力）。
# 名前の中の y はしばしば母音のように働くので、これも「次に来る文字」の傾向で説明がつきます。BOS は名前の始まりと終わりを表す特別な星です。
#
# 16 次元の球面は描けないので、3 次元に射影して「星図」にします：`wte` の行を主成分（平均を引いた行列の特異ベクトル）の上位 3 方向に射影し、
# 射影した点をもう一度単位球面 $\mathbb{S}^2$ に正規化して、ワイヤーフレームのドームに置きます。上位 3 方向が説明する分散の割合も出力します。
# この割合が 1 より小さい分だけ、図の上の角度は本当の角度から歪んでいます。

# %%
centered = wte - wte.mean(axis=0)
_, svals, vt = np.linalg.svd(centered, full_matrices=False)
share = svals ** 2 / np.sum(svals ** 2)
stars = l2_normalize_np(wte @ vt[:3].T)                         # top-3 principal directions, back onto S^2
print(f"variance explained by the top 3 principal directions: {share[:3].round(3)} (total {share[:3].sum():.0%})")
cos_3d = stars @ stars.T
iu = np.triu_indices(len(labels), 1)
print(f"correlation of the pairwise cosines in 16-D and on the 3-D map: {np.corrcoef(cos_wte[iu], cos_3d[iu])[0, 1]:.2f}")
print(f"on the 3-D map: mean cos vowel-vowel {mean_off_diagonal(cos_3d, vowel_ids, vowel_ids):+.2f}, "
      f"consonant-consonant {mean_off_diagonal(cos_3d, consonant_ids, consonant_ids):+.2f}, "
      f"vowel-consonant {mean_off_diagonal(cos_3d, vowel_ids, consonant_ids):+.2f}")
vowel_center = l2_normalize_np(stars[vowel_ids].mean(axis=0))   # look at the dome from the vowels' side, then the other
print(f"cos(vowel center, star) on the map: vowels {np.round(stars[vowel_ids] @ vowel_center, 2)}, "
      f"consonants with cos > 0: {sum(stars[i] @ vowel_center > 0 for i in consonant_ids)} of {len(consonant_ids)}, "
      f"BOS {stars[bos] @ vowel_center:+.2f}")

fig = plt.figure(figsize=(15, 7))
u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 30), np.linspace(0, np.pi, 15))
for n_view, (toward, side) in enumerate(((vowel_center, "母音の側から"), (-vowel_center, "反対側から"))):
    elev, azim = np.degrees(np.arcsin(toward[2])), np.degrees(np.arctan2(toward[1], toward[0]))
    ax = fig.add_subplot(1, 2, n_view + 1, projection="3d")
    ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.88", lw=0.4)
    for kind_name, ids, marker in (("母音", vowel_ids, "o"), ("子音", consonant_ids, "^"), ("BOS", [bos], "*")):
        for front in (True, False):      # stars on the near half of the dome bold, the far half faint
            sel = [i for i in ids if (stars[i] @ toward > 0) == front]
            if not sel:
                continue
            p_ = stars[sel]
            ax.scatter(p_[:, 0], p_[:, 1], p_[:, 2], color=kind_color[kind_name], marker=marker,
                       s=(160 if kind_name == "BOS" else 50) * (1 if front else 0.6), alpha=1 if front else 0.25,
                       depthshade=False)
            for i in sel:
                ax.text(*(1.13 * stars[i]), labels[i], fontsize=11 if front else 8, color=kind_color[kind_name],
                        alpha=1 if front else 0.35)
    ax.view_init(elev=elev, azim=azim)
    ax.set(xlim=(-1, 1), ylim=(-1, 1), zlim=(-1, 1), box_aspect=(1, 1, 1), xticks=[], yticks=[], zticks=[],
           xlabel="第1主成分", ylabel="第2主成分", zlabel="第3主成分")
    ax.set_title(f"プラネタリウム：wte の 27 個の星（上位 3 主成分）、{side}\n手前の半球は濃く、奥の半球は薄く表示",
                 fontsize=11)
    ax.legend(handles=[Line2D([], [], ls="", marker=mk, ms=ms, color=kind_color[kn], label=kn)
                       for kn, mk, ms in (("母音", "o", 7), ("子音", "^", 7), ("BOS", "*", 11))],
              loc="upper left", fontsize=9)
plt.tight_layout()
plt.show()

# %% [markdown]
# 左は母音の重心の方向から、右はその反対側からドームを見たものです（手前の半球の星を濃く、奥の半球の星を薄く描いています）。
# 母音（赤い丸）は左のドームの手前に集まって一つの「星座」を作り、子音（青い三角）の多くは右のドーム、つまり反対側の半球に広がります（上の出力の数）。
# ただし、上位 3 方向が説明するのは分散の半分弱で（上の出力）、この星図は 16 次元の配置の「影」です。3 次元に押しつぶした分だけ角度は歪み、
# 母音どうしのコサインは 16 次元の値より大きく見えています。正確な角度は上のコサイン類似度の行列で読んでください。
# ノルムはすべて 1 なので、星の「明るさ」はありません。意味を担うのは配置（角度）だけです。
#
# この星図は、学習を再生しながら動かして見ることもできます：`python planetarium.py RUN_DIR` が `--out` のフォルダの `history.npz` から 1 つの HTML ページを書き出し、星が落ち着いていく様子、Adam の一歩とリトラクション、入力した名前の隠れ状態の道、vMF キャップとしての次の文字の確率を、ドラッグで回せる球面の上に描きます（README の「Planetarium」）。

# %% [markdown]
# ### 9.1 第1回の「星空」との違い：連続した夜空
#
# 講義の NOTE のとおり、第1回の「星＝単語、星座＝トピック」は **離散的な星空** で、星はあっても、それらを浮かべる連続的な空間がありませんでした。
# 本回の単位球面は連続した夜空で、星と星の **あいだ** の点もすべて「向き」として意味を持ちます。
# 球面モデルの星 `a` から星 `k` まで、測地線（大円の弧）に沿って進み（`sphere.exp_map`）、途中の点にいちばん近い星を調べます。
# また、モデルが実際に予測に使う最後の隠れ状態 $h$ も、この夜空の上の点です。$h$ が出力の星（`lm_head` の行）にどれだけ近いかも見ます。

# %%
star_a, star_k = wte[labels.index("a")], wte[labels.index("k")]
arc = geodesic_distance_np(star_a, star_k)
toward_k = l2_normalize_np(tangent_project(star_a, star_k))      # the unit tangent at 'a' pointing to 'k'
print(f"angle between the stars a and k: {np.degrees(arc):.1f} deg")
for t in np.linspace(0, 1, 9):
    point = sphere.exp_map(star_a, t * arc * toward_k)
    c_ = wte @ point
    nearest = np.argsort(-c_)[:2]
    print(f"  {t:5.3f} of the way: |point| = {np.linalg.norm(point):.6f}, nearest stars "
          + ", ".join(f"{labels[j]} (cos {c_[j]:.2f})" for j in nearest))
max_cos_out = cos_theta[mask].max(axis=1)
print(f"last hidden states h of the val positions: cos to the nearest output star (lm_head row): median "
      f"{np.median(max_cos_out):.2f}, range {max_cos_out.min():.2f} .. {max_cos_out.max():.2f}")

# %% [markdown]
# 弧の上のどの点もノルム 1 で、いちばん近い星は道のりの半ばで `a` から `k` に入れ替わり、2番目に近い星も `o`、`a`、`d`、`f` と変わっていきます（上の出力）。
# 途中の点はどの文字でもありませんが、夜空の中の「向き」として、どの星に近いかが連続的に決まります。予測に使われる $h$ も、
# 出力の星のどれかにぴったり重なることはなく（いちばん近い星とのコサインの中央値は 1 よりずっと小さい）、星と星のあいだから、全部の星との角度で次の文字の確率が決まります。
# 離散的な星しかなかった第1回の星空では、こうした「あいだ」に意味はありませんでした。
#
# ### 9.2 プラネタリウムの賞味期限
#
# 講義の CAUTION のとおり、このメタファーは「空間全体が均一な曲率を持つ球面」であることを前提にしています。球面はどこでも同じ形をしていて、
# ドームのどこに星座を貼っても、同じ大きさの三角形は同じ内角の和を持ちます（§11 で、ばらばらな位置で測って確かめます）。
# 第12回の双曲空間のように曲率が負の空間や、場所によって曲率が変わる一般の多様体では、「ドームに星を貼る」という単純な描像は成り立ちません。
# プラネタリウムは、球面という特殊な場合のための直感です。

# %% [markdown]
# ## 10. 球面設計の限界：ノルムに意味がある場合
#
# 講義の「球面設計の限界と注意点」は、ノルムを捨てると失われる情報がある、と表にまとめています。
#
# | タスク | ノルムの意味 | 球面制約の適否 | このノートで見たこと |
# |---|---|---|---|
# | 分類（表現の比較） | 不要なことが多い | ✓ 適している | §8：角度だけで事後確率（softmax）が決まる |
# | 回帰（連続値の予測） | 出力の大きさが重要 | ✗ 適さない | 単位ベクトル同士の内積は $[-1, 1]$ に収まる（§8 のコサイン）。大きさを出すには、球面の外に倍率を足すしかない |
# | 不確実性推定 | ノルムが確信度を表す場合 | △ タスク依存 | 下のセル：rmsnorm モードでは隠れ状態のノルムが確信度を運んでいる |
# | 生成モデル | 分布のスケールが重要 | △ 設計次第 | microgpt の球面モードも生成モデル。分布の鋭さは学習する倍率 $s_z$ が担う（§7.3、§8） |
#
# 「ノルムが確信度を表す」を、§7 の2つのモデルで確かめます。検証の名前の全位置で、最後の隠れ状態 $h$ のノルムと、次の文字の分布のエントロピー（小さいほど確信している）を比べます。
# 相関は順位相関（スピアマン）で測ります。

# %%
def rank_correlation(a, b):
    """Spearman's rank correlation (Pearson's correlation of the ranks; no ties in continuous data)."""
    return np.corrcoef(np.argsort(np.argsort(a)), np.argsort(np.argsort(b)))[0, 1]


for norm, (cfg, st) in runs.items():
    logits_v, cache_v = microgpt.forward_np(st.params, inputs, cfg)
    h_v = cache_v["hidden"][-1][mask]
    p_v = softmax_np(logits_v[mask])
    entropy_v = -(p_v * np.log(p_v)).sum(axis=1)
    h_norm = np.linalg.norm(h_v, axis=1)
    print(f"{norm:8s}: ||h|| from {h_norm.min():.4f} to {h_norm.max():.4f}; entropy from {entropy_v.min():.2f} "
          f"to {entropy_v.max():.2f} nats")
    if norm == "rmsnorm":
        print(f"          rank correlation of ||h|| with the entropy: {rank_correlation(h_norm, entropy_v):+.2f}")
    else:
        cos_v = h_v @ st.params["lm_head"].T
        print(f"          ||h|| is 1 everywhere; rank correlation of the entropy with the largest cos: "
              f"{rank_correlation(cos_v.max(axis=1), entropy_v):+.2f}, with the largest s_z cos: "
              f"{rank_correlation((s_z * cos_v).max(axis=1), entropy_v):+.2f}")

# %% [markdown]
# rmsnorm モードでは、$h$ のノルムが大きい位置ほどエントロピーが小さい（確信している）という強い負の相関があります。このモデルは、確信度の一部を
# **ノルム** に載せています。球面モードではノルムは常に 1 なので、その通り道はありません。代わりに、いちばん近い出力の星とのコサイン（角度）と
# トークンごとの $s_z$ が確信度を運びます（同じく強い負の相関）。球面制約は確信度を表せなくするわけではなく、**どこに載せるか** を変えるのです。
# ただし、ノルムそのものが答えであるタスク（回帰や、ノルムで不確実性を読む設計）では、球面に載せた時点でその情報は消えます。講義の言う「タスク依存」「設計次第」はこのことです。

# %% [markdown]
# ## 11. 曲率の影響と双曲空間（講義の見通し）
#
# 球面は **正の曲率** を持つ多様体で、講義のとおり「三角形の内角の和が180°を超える」空間です。第12回で扱う双曲空間は **負の曲率** を持ち、内角の和は 180° に届きません。
# 同じ作り方で、3辺の長さが等しい測地線の三角形を、球面 $\mathbb{S}^2$ と双曲面（ミンコフスキー空間 $\mathbb{R}^{1,2}$ の中の $-t^2 + x^2 + y^2 = -1$、$t > 0$。
# 内積を $\langle u, v\rangle = -u_0 v_0 + u_1 v_1 + u_2 v_2$ に取り替えると、球面とまったく同じ式で距離と角度が測れる）に作り、内角の和を測ります。
# 内角は、頂点での接ベクトルどうしの角度です（球面では `sphere.tangent_project`）。

# %%
def minkowski(u, v):
    return -u[..., 0] * v[..., 0] + (u[..., 1:] * v[..., 1:]).sum(axis=-1)


def triangle(rho, space):
    """Three points at distance rho from the 'north pole', 120 degrees apart around it."""
    phis = np.radians([90.0, 210.0, 330.0])
    if space == "sphere":
        return np.stack([[np.cos(rho), np.sin(rho) * np.cos(p), np.sin(rho) * np.sin(p)] for p in phis])
    return np.stack([[np.cosh(rho), np.sinh(rho) * np.cos(p), np.sinh(rho) * np.sin(p)] for p in phis])


def side_length(P, space):
    return float(geodesic_distance_np(P[0], P[1])) if space == "sphere" else float(np.arccosh(-minkowski(P[0], P[1])))


def angle_sum(P, space):
    """Sum of the interior angles (degrees): the angle between the tangent vectors towards the other two corners."""
    total = 0.0
    for i in range(3):
        a, b, c = P[i], P[(i + 1) % 3], P[(i + 2) % 3]
        if space == "sphere":
            tb, tc = tangent_project(a, b), tangent_project(a, c)
            total += np.degrees(np.arccos(tb @ tc / (np.linalg.norm(tb) * np.linalg.norm(tc))))
        else:                                        # on the hyperboloid: project with the Minkowski inner product
            tb, tc = b + minkowski(a, b) * a, c + minkowski(a, c) * a
            total += np.degrees(np.arccos(minkowski(tb, tc) / np.sqrt(minkowski(tb, tb) * minkowski(tc, tc))))
    return total


print(f"{'side':>6} | {'angle sum: sphere':>17} {'plane':>6} {'hyperbolic':>11}")
for side in (0.1, 0.5, 1.0, 1.5):
    sums = {}
    for space in ("sphere", "hyperbolic"):
        rho = bisect(lambda r, space=space: side_length(triangle(r, space), space), 1e-9, 1.5, side)
        sums[space] = angle_sum(triangle(rho, space), space)
    print(f"{side:6.2f} | {sums['sphere']:17.2f} {180:6d} {sums['hyperbolic']:11.2f}")
print("the octant triangle (1,0,0), (0,1,0), (0,0,1) on S^2:", round(angle_sum(np.eye(3), "sphere"), 6), "degrees")

rng = np.random.default_rng(11)
rho_05 = bisect(lambda r: side_length(triangle(r, "sphere"), "sphere"), 1e-9, 1.5, 0.5)
moved = []
for _ in range(5):                                   # the same triangle, rotated to random places on the sphere
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    moved.append(angle_sum(triangle(rho_05, "sphere") @ Q.T, "sphere"))
print("side 0.5 at five random places on S^2: angle sums", np.round(moved, 6))

print(f"\n{'r':>4} | circumference of a circle of radius r: {'sphere':>8} {'plane':>8} {'hyperbolic':>11}")
phi = np.linspace(0, 2 * np.pi, 3601)
for r in (0.5, 1.0, 2.0, 3.0):
    on_s = np.stack([np.full_like(phi, np.cos(r)), np.sin(r) * np.cos(phi), np.sin(r) * np.sin(phi)], axis=1)
    on_h = np.stack([np.full_like(phi, np.cosh(r)), np.sinh(r) * np.cos(phi), np.sinh(r) * np.sin(phi)], axis=1)
    c_s = geodesic_distance_np(on_s[:-1], on_s[1:]).sum()       # the polygon through 3600 points on the circle
    c_h = np.arccosh(np.maximum(-minkowski(on_h[:-1], on_h[1:]), 1.0)).sum()
    print(f"{r:4.1f} | {'':39s}{c_s:8.2f} {2 * np.pi * r:8.2f} {c_h:11.2f}   (2 pi sin r = {2 * np.pi * np.sin(r):.2f}, "
          f"2 pi sinh r = {2 * np.pi * np.sinh(r):.2f})")

for deg in (60, 90, 150, 180):
    u_ = np.array([1.0, 0.0, 0.0])
    v_ = np.array([np.cos(np.radians(deg)), np.sin(np.radians(deg)), 0.0])
    print(f"two unit vectors {deg:3d} deg apart: the midpoint of the straight chord has norm {np.linalg.norm((u_ + v_) / 2):.3f}")

# %% [markdown]
# - **内角の和**：球面の三角形は 180° を超え、双曲面の三角形は 180° に届きません。差は三角形が大きいほど大きく、小さな三角形ではどちらも平面の 180° に近づきます
#   （曲率は「小さな範囲では平ら」に見える）。球面の八分円の三角形（3つの角がすべて直角）は 270° です。
# - **均一な曲率**：同じ三角形を球面のばらばらな位置に移しても、内角の和は丸め誤差まで同じです（§9.2 の「均一な曲率」）。
# - **円周の長さ**：半径 $r$ の円の周は、平面で $2\pi r$、球面で $2\pi\sin r$（$r = \pi/2$ を過ぎると縮む）、双曲面で $2\pi\sinh r$（$r$ とともに **指数的に** 増える）です。
#   木構造のように「深さとともに指数的に増える」階層を埋め込むには、中心から離れるほど空間が指数的に広がる双曲空間が向いている、というのが講義の見通し（第12回）の根拠です。
#   球面では逆に、遠くへ行くほど場所が足りなくなります。
# - **直線で結べない**：球面上の2点を結ぶ直線（弦）の中点は球面の内側にあり、正規化し直さないと球面に戻りません（講義の「遠い二点を直線で結ぶことができない」）。
#   正反対の2点（180°）では中点が原点になり、正規化の向きさえ決まりません（§2 のクランプする ε が守るのはこういう点です）。
#
# 講義のまとめのとおり、空間の曲率は表現したい構造に応じて選ぶものです。球面（正の曲率）はノルムの混乱を断ち切るのに向き、階層構造には双曲空間（負の曲率）が向くことがあります。

# %% [markdown]
# ## 理解度チェック
#
# **問1.** 講義の float16 のスクリプトで、ノルムが 0 にも本当の値 $\sqrt{3}\cdot 2^{-24} \approx 1.03\times10^{-7}$ にもならず
# $2^{-23}$（スクリプトの表示では 1.1920928955078125e-07）になるのはなぜですか。
# その結果、`eps` なしの正規化は何を返しますか。
#
# <details><summary>答え</summary>
#
# PyTorch は float16 の値を float32 で二乗・合計・平方根してから、結果だけを float16 に丸めます。float32 では $2^{-48}$ もアンダーフローしないので、
# ノルムは $1.03\times10^{-7} = 1.732 \times 2^{-24}$ と正しく計算されます。ところが float16 はこの大きさでは $2^{-24}$ の整数倍（非正規化数）しか表せないので、
# 最も近い整数倍の $2 \times 2^{-24} = 2^{-23} = 1.1921\times10^{-7}$ に丸められます。割り算は $2^{-24}/2^{-23} = 0.5$ なので結果は [0.5, 0.5, 0.5]、長さ 0.866 のベクトルです。
# NaN も inf も出ず、何の警告もなく単位ベクトルでないものが返ります。安全策は「ノルムを float32 で計算し、$x/\max(\lVert x\rVert, \epsilon)$ で割ってから float16 に戻す」です
# （`F.normalize` を使うなら 1次元テンソルには `dim=-1` を渡す）。
#
# </details>
#
# **問2.** $x = [10^{-7}, 10^{-7}, 10^{-7}]$ で $\sum_i y_i$ を逆伝播すると、$y = x/(\lVert x\rVert + \epsilon)$ では勾配が各成分 32.5（float32）、
# $y = x/\max(\lVert x\rVert, \epsilon)$ では 0 になります。なぜですか。
#
# <details><summary>答え</summary>
#
# $x/\lVert x\rVert$ は $x$ を正の数倍しても変わらない（スケール不変）ので、勾配は $x$ と直交します（接空間に入る）。上流の勾配 $[1, 1, 1]$ は $y$ と平行で接成分を持たないので、
# 勾配は 0 です。クランプ形は $\lVert x\rVert \ge \epsilon$ ではまさに $x/\lVert x\rVert$ なので 0 のまま。ε を **足す** と関数はスケール不変でなくなり、
# 各成分 $\epsilon/(\lVert x\rVert+\epsilon)^2 \approx 33.3$ の、$x$ に平行な（半径方向の）勾配が現れます。float32 では約 $5.77\times10^6$ の2つの項の差を 0.5 刻みで取るので 32.5 になります。
#
# </details>
#
# **問3.** 講義の `NormalizedLinear` を Adam で学習すると、重みの行のノルムはどうなりますか。球面上に保つには何が必要ですか。
#
# <details><summary>答え</summary>
#
# 初期化で1回正規化しただけなので、学習とともに 1 から離れます（§3 の例では Adam で 1.66〜2.03）。勾配が行に対して接ベクトルでない、接ベクトルでも1歩で長さが伸びる、
# Adam が座標ごとに割る、の3つが原因です。毎ステップの更新の後で行を正規化し直す（リトラクション）必要があり、microgpt の球面モードは Adam の各ステップの後に
# `microgpt.retract` でこれを行います。
#
# </details>
#
# **問4.** 射影勾配法（$x - \eta g$ を正規化）とリーマン勾配＋リトラクション（$x - \eta\,\mathrm{grad}_S f$ を正規化）で、リトラクション前に球面から外れる量は
# $\eta$ の何次ですか。運動量を使うと何が問題になりますか。
#
# <details><summary>答え</summary>
#
# 射影勾配法は1次（$g$ の半径方向成分が $x$ を伸び縮みさせる）、リーマン勾配は2次（接平面内の1歩は長さを $\sqrt{1+\eta^2\lVert\mathrm{grad}_S f\rVert^2}$ 倍にするだけ）です。
# η が小さければ2つの1歩はほぼ同じです。運動量ベクトルは過去の点の勾配の和なので、リーマン勾配を積んでも今の点の接空間には入りません。
# 新しい点の接空間へ移送（たとえば射影）して初めて接ベクトルになります。Adam の座標ごとのスケーリングも接空間を保たないので、microgpt の `--riemannian` でも
# リトラクションが球面制約を守っています。
#
# </details>
#
# **問5.** microgpt の球面モードで、サンプリング温度 $T = 0.5$ を使うことは、集中度 κ の言葉で言うと何をしていることになりますか。
# また、softmax が「等しい事前確率の vMF 混合モデルのクラス事後確率」と正確に一致するのはどんな条件のときですか。
#
# <details><summary>答え</summary>
#
# ロジットは $s_{z,k}\cos\theta_k$ で、$s_z$ が（トークンごとの）集中度 κ です。`softmax(logits / T)` は $\kappa_k = s_{z,k}/T$ の softmax なので、
# T = 0.5 はすべてのトークンの κ を2倍にして、分布を角度の小さいトークンに集中させます。softmax$(\kappa\cos\theta_k)$ が等しい事前確率の vMF 混合の事後確率と一致するのは、
# 入力とクラス代表がすべて単位ベクトルで、κ がすべてのクラスで共通のときです（正規化定数 $C_d(\kappa)$ が約分される）。κ がクラスごとに違うときは、
# 事前確率を $\pi_k \propto 1/C_d(\kappa_k)$ にした混合の事後確率になります。
#
# </details>

# %% [markdown]
# **問6.** 講義は、等方的なガウス分布 $N(\mathbf m, \sigma^2 I)$ から $\kappa = \lVert\mathbf m\rVert/\sigma^2$ の vMF が生まれると述べます。
# サンプル $\mathbf z$ を $\mathbf z/\lVert\mathbf z\rVert$ と射影した点の分布は、その vMF ですか。
#
# <details><summary>答え</summary>
#
# 違います。射影した点の分布は射影正規分布で、vMF とは別の分布です。$\lVert\mathbf m\rVert$ が $\sigma$ より十分大きいときは vMF で近似でき、
# その κ はおよそ $\lVert\mathbf m\rVert^2/\sigma^2$ です。$\kappa = \lVert\mathbf m\rVert/\sigma^2$ の vMF になるのは、ガウス分布の密度を単位球面の上だけで見たとき
# （$\lVert\mathbf z\rVert = 1$ に条件付けたとき）で、こちらはどの次元でも厳密です（§5.1 の表と図）。2つは $\lVert\mathbf m\rVert = 1$ のときだけ一致します。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を消して関数を書き、その下のチェックセルを実行してください。チェックは、このプロジェクトの関数
# （`sphere.py`）や中心差分と、シード固定の乱数の入力で比べて、正解 / 不正解 / 未回答 を表示します。
#
# ### 練習問題 1：リーマン勾配の1歩
#
# 単位ベクトル `x`（1次元の NumPy 配列）、ユークリッド勾配 `g`、学習率 `lr` から、
# リーマン勾配＋リトラクションの1歩 $R\big(x - \eta\,(g - (g^\top x)\,x)\big)$、$R(v) = v/\lVert v\rVert$ を返す関数 `riemannian_step(x, g, lr)` を書いてください。
# `sphere.riemannian_sgd_step` と比べます。`sphere` の関数は使わずに書いてください（チェックの間は `riemannian_sgd_step`、`projected_sgd_step`、
# `tangent_project`、`retract`、`exp_map` が使えず、呼ぶと 不正解 になります）。

# %%
import exercises  # the check cells (notebooks/exercises.py)


# %%
def riemannian_step(x, g, lr):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_04_riemannian_step(riemannian_step)

# %% [markdown]
# ### 練習問題 2：安全な正規化とその勾配
#
# 1次元の配列 `x` について、
#
# - `safe_normalize(x, eps=1e-12)`：$y = x / \max(\lVert x\rVert, \epsilon)$ を返す（`F.normalize` のクランプ形）。
# - `safe_normalize_backward(dy, x, eps=1e-12)`：上流の勾配 `dy` $= \partial L/\partial y$ から $\partial L/\partial x$ を返す。
#   $\lVert x\rVert \ge \epsilon$ では $(dy - y\,(y^\top dy))/\lVert x\rVert$、$\lVert x\rVert < \epsilon$ では分母が定数 ε なので $dy/\epsilon$。
#
# を書いてください。順伝播は `sphere.l2_normalize_np` と、逆伝播は中心差分と、$\lVert x\rVert \approx 1$、$\approx 10^{-7}$（「足す ε」の誤りが見える大きさ）、
# $< \epsilon$ の3つの大きさで比べます。チェックの間は、プロジェクトの正規化とその逆伝播（`sphere.l2_normalize_np`、`l2_normalize_np_backward`、
# スカラー版の `l2_normalize` など）と `backward()` が使えません（呼ぶと 不正解 になります）。

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
# ### 練習問題 3：$\mathbb{S}^2$ 上の vMF 密度
#
# $d = 3$ では正規化定数が初等関数で書けて、$C_3(\kappa) = \dfrac{\kappa}{4\pi\sinh\kappa}$ です。
# 形 `(n, 3)` の単位ベクトル `x`、単位ベクトル `mu`、$\kappa > 0$ から、各行の対数密度 $\log C_3(\kappa) + \kappa\,\boldsymbol\mu^\top\mathbf x$（形 `(n,)`）を返す
# `vmf_log_density_s2(x, mu, kappa)` を書いてください。κ は 0.01 から 1000 まで調べます。`np.sinh` は κ ≈ 710 を超えると inf に溢れるので、
# $\log\sinh\kappa = \kappa + \log(1 - e^{-2\kappa}) - \log 2$ のように対数のまま計算してください。`sphere.vmf_log_density` と比べます
# （チェックの間は `sphere.vmf_log_density`、`vmf_log_normalizer`、`log_bessel_iv` が使えず、呼ぶと 不正解 になります）。

# %%
def vmf_log_density_s2(x, mu, kappa):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_04_vmf_log_density_s2(vmf_log_density_s2)

# %% [markdown]
# ### 練習問題 4：vMF 混合の事後確率の、球面上の勾配
#
# §8 の混合モデル（クラス $k$ の点が $\mathrm{vMF}(\boldsymbol\mu_k, \kappa_k)$ から生まれ、クラスが事前確率 $\pi_k$ で選ばれる）で、
# 点 $\mathbf x$ を球面の上で動かすと、クラス $k$ の事後確率 $p(k\mid\mathbf x)$ はどう変わるでしょうか。
# 単位ベクトル `x`（形 `(d,)`）、`mus`（形 `(K, d)`）、`kappas` と `priors`（形 `(K,)`）、クラスの番号 `k` から、$\log p(k\mid\mathbf x)$ の
# **リーマン勾配**（§6：ユークリッド勾配を $\mathbf x$ の接空間へ射影したもの。形 `(d,)`）を返す関数 `vmf_posterior_grad(x, mus, kappas, priors, k)` を書いてください。
#
# 事後確率そのものは §8 の `mixture_posterior` で計算してかまいません（`x[None]` を渡すと形 `(1, K)` で返ります）。κ は 1000 まで調べるので、
# 事後確率は対数のまま計算してください（`mixture_posterior` はそうしています）。接空間への射影には `sphere.tangent_project` を使ってかまいません。
# チェックは、$\log p(k\mid\mathbf x)$ を `Value` で組んで `backward()` し、接空間へ射影したものと比べます。式を導く問題なので、
# あなたの関数が動いている間は `backward()` が使えません（呼ぶと 不正解 になります）。
#
# この勾配は、microgpt の球面モードで最後の隠れ状態 $h$ に届く勾配と同じ形です。損失 $-\log p(\text{正解}\mid h)$ の $h$ についての勾配は、
# κ を $s_z$ に置き換えたこの式の符号を変えたもので、$h$ は `l2_normalize` の出力なので、前の層へ流れるのはその接空間の成分だけです（§1：正規化の勾配は接空間に入る）。
#
# <details><summary>ヒント</summary>
#
# $\log p(k\mid\mathbf x) = z_k - \log\sum_j e^{z_j}$、$z_j = \log\pi_j + \log C_d(\kappa_j) + \kappa_j\,\boldsymbol\mu_j^\top\mathbf x$ です。
# $z_j$ の $\mathbf x$ についての勾配は $\kappa_j\boldsymbol\mu_j$ で、$\log\sum_j e^{z_j}$ の勾配は、それを事後確率 $p(j\mid\mathbf x)$ で平均したものです。
#
# </details>

# %%
def vmf_posterior_grad(x, mus, kappas, priors, k):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_04_vmf_posterior_grad(vmf_posterior_grad)
