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
# 2. **コード例 03_fp16_instability_demo**：講義のスクリプトが PyTorch 2.x で実際に表示する値（入力 5.9605e-08、ノルム 1.1921e-07、
#    正規化の結果 [0.5, 0.5, 0.5]、ゼロ割りの NaN、「安全策」の行での IndexError）を NumPy で再現し、コードとコメントの食い違いを確かめる。
#    安全な正規化 $x/\max(\lVert x\rVert, \epsilon)$ と、float16 で正規化できる入力の範囲。ゼロ近傍の勾配：講義の「足す ε」
#    $x/(\lVert x\rVert + \epsilon)$ では勾配が 0 ではなく 32.5 になり、`F.normalize` のクランプ形では 0 になること。
# 3. **コード例 03_normalized_linear**：重みを初期化で1回正規化するだけでは学習中に球面から外れること（毎ステップのリトラクションが必要）。
#    講義の残差 $x + \alpha f(x)$ と nGPT の残差 $\mathrm{Norm}(h + \alpha(\mathrm{Norm}(f(h)) - h))$、深さ方向のノルムの図の読み方。
# 4. **コード例 03_vmf_distribution_plot**：円周上の vMF 密度、集中度 κ ∈ {0, 1, 5, 10, 50}（折れ線と極座標、講義の図と同じ）。
# 5. 講義の先へ：$\mathbb{S}^2$ 上の vMF サンプル（3D）、サンプルから κ を推定し直す。
# 6. リーマン勾配＋リトラクションと、講義の疑似コードの「射影勾配法」の1歩の比較（球面からのずれ）。運動量ベクトルが接空間から外れること。
# 7. microgpt を `norm="rmsnorm"` と `norm="sphere"`（nGPT）で学習した損失曲線、隠れ状態と重みのノルムの分布。
# 8. 講義の中心：vMF と softmax。ロジット $z_k = \kappa\cos\theta_k$ の softmax（温度 $T = 1/\kappa$）は vMF 混合モデルのクラス事後確率であり、
#    microgpt の球面モードでは学習されるスケール `s_z` が κ であること。サンプリング温度が κ をどう変えるか。
# 9. プラネタリウム：学習したモデルのトークン埋め込み（`wte` の行）を球面上の星として見る（コサイン類似度行列と3次元の星図）。
#
# 最後に、理解度チェック（答えは折りたたみ）と、コードで解く練習問題4題（チェックセルが 正解 / 不正解 / 未回答 を表示）があります。

# %%
import sys
from pathlib import Path

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists())
for path in (ROOT, ROOT / "notebooks"):  # the project's modules live at the root, exercises.py in notebooks/
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

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
print(f"norm after : mean {norms.mean():.6f}, std {norms.std(ddof=1):.2e}")

# %% [markdown]
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
# - テンソルの表示は有効数字 4 桁です（`print(t)` なら `tensor([5.9605e-08, ...], dtype=torch.float16)` の形。下の `torch_str` が同じ規則で書式化）。
#   ただし f 文字列に **0 次元** テンソルを入れると、`Tensor.__format__` が `.item()` を使うので Python の float として表示されます。

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
print("as NumPy arrays: x / norm =", unsafe, f", a vector of length {np.linalg.norm(unsafe.astype(np.float64)):.3f}")

# %% [markdown]
# 講義のスクリプトのコメントと、実際に起きることを並べます（コメントは講義のコードからの引用）。
#
# | 講義のコードのコメント | 実際 |
# |---|---|
# | `# min positive normal ≈ 6e-5 なので、それより十分小さい値は 0 になりやすい` | $2^{-14}$ より小さい値は 0 ではなく **非正規化数** になります（精度が落ちるだけ）。0 に丸められるのは $2^{-25}$ 以下だけです。 |
# | `# → 0 になりうる`（`.half()` の行） | $2^{-24}$ は float16 の最小の非正規化数で、**ちょうど表せます**。入力は 0 になりません（5.9605e-08 が3つ）。 |
# | `# 非常に小さい、または0`（ノルムの行） | 0 ではなく $2^{-23}$（f 文字列では Python の float として 1.1920928955078125e-07、`print(small_fp16.norm())` なら 1.1921e-07 と表示）。しかも本当の値 $\sqrt{3}\cdot 2^{-24} \approx 1.03\times10^{-7}$ より 15% 大きい（下で説明）。 |
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
# 1.1921e-07 の正体：float32 で計算したノルム $1.0324\times10^{-7}$ は $2^{-24}$ の 1.732 倍です。float16 はこの大きさでは
# $2^{-24}$ 刻みの非正規化数しか持たないので、1.732 刻みは 2 刻みに丸められ、ノルムは $2^{-23}$ になります。
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
# オイラーの同次関数定理から $\nabla f(x)^\top x = 0$、つまり勾配は接空間に入ります（1節で見た直交性）。ここでは上流の勾配 $[1, 1, 1]$ が $y$ と平行なので、
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
# 2. 勾配が接ベクトルでも、接平面内の1歩は長さを $\sqrt{1 + \eta^2\lVert g\rVert^2}$ 倍にします（6節）。
# 3. Adam は座標ごとに勾配を割るので、接ベクトルの勾配からも接ベクトルでない更新が出てきます。
#
# つまり「球面上の重み」は、初期化ではなく **毎ステップのリトラクション** で保たれる性質です。microgpt の `train` は球面モードで、Adam の各ステップの後に
# `microgpt.retract(params, cfg)` を呼んで、すべての重み行列を埋め込み次元の方向に正規化し直しています（7節のノルムの分布の図で、学習後の重みのノルムがすべて 1）。

# %% [markdown]
# ### 残差接続：講義の $x + \alpha f(x)$ と nGPT の $h + \alpha(\mathrm{Norm}(f(h)) - h)$
#
# 講義の `NormalizedResidual` は $\mathrm{Normalize}(x + \alpha f(x))$ です。nGPT の論文（と microgpt の `gpt_sphere`）の残差更新は少し違い、
# ブロックの出力もいったん球面に載せてから、そちらへ向かって α だけ進みます：
#
# $$h \leftarrow \mathrm{Norm}\big(h + \alpha\,(\mathrm{Norm}(f(h)) - h)\big) = \mathrm{Norm}\big((1-\alpha)\,h + \alpha\,\mathrm{Norm}(f(h))\big).$$
#
# 球面上の2点 $h$ と $\mathrm{Norm}(f(h))$ を結ぶ弦の上を α の割合だけ進み、球面に戻る形です（α は nGPT の eigen learning rate。
# microgpt では次元ごとに学習され、`microgpt.effective_scales` の `alpha_A`, `alpha_M` で読めます）。講義の形との違いは、1歩の大きさが $\lVert f(h)\rVert$ によらないことです。
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
# 大きな κ では $p(\theta) \approx \mathcal{N}(0, 1/\kappa)$ に近づきます（κ = 50 のピーク $\approx \sqrt{50/2\pi} = 2.82$）。
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
# `sphere.vmf_sample` は Wood (1994) の棄却法で $\mathbb{S}^{d-1}$ 上の vMF からサンプルを引きます。
# $d = 3$（地球表面のような $\mathbb{S}^2$）で、κ ごとに 1000 点ずつ描きます。プラネタリウムのドームに貼られた「星座」のまとまり具合です。

# %%
mu3 = l2_normalize_np(np.array([1.0, 1.0, 1.0]))
rng = np.random.default_rng(5)
fig = plt.figure(figsize=(14, 4.8))
u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 30), np.linspace(0, np.pi, 15))
for i, k in enumerate([0, 1, 10, 100]):
    s = sphere.vmf_sample(mu3, k, 1000, rng)
    ax = fig.add_subplot(1, 4, i + 1, projection="3d")
    ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.5)
    ax.scatter(s[:, 0], s[:, 1], s[:, 2], s=3, alpha=0.6, label="サンプル")
    ax.quiver(0, 0, 0, *(1.3 * mu3), color="tab:red", lw=2, arrow_length_ratio=0.12, label="平均方向 μ")
    ax.set(title=f"$S^2$ 上の vMF、κ = {k}", xlabel="x", ylabel="y", zlabel="z",
           xlim=(-1, 1), ylim=(-1, 1), zlim=(-1, 1), box_aspect=(1, 1, 1),
           xticks=[-1, 0, 1], yticks=[-1, 0, 1], zticks=[-1, 0, 1])
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
# ## 6. リーマン勾配＋リトラクション と 射影勾配法
#
# 講義の「球面上の学習」：点 $x \in \mathbb{S}^{d-1}$ の接空間は $T_x\mathbb{S}^{d-1} = \{v : v^\top x = 0\}$、
# ユークリッド勾配 $g$ を接空間へ射影したものがリーマン勾配 $\mathrm{grad}_S f = g - (g^\top x)\,x$（`sphere.tangent_project`）です。
#
# - **リーマン勾配＋リトラクション**：$x \leftarrow R(x - \eta\,\mathrm{grad}_S f)$（`sphere.riemannian_sgd_step`）。
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
# - 右：$\eta = 0.05$ では、$f(x) < 0$ になって以降は射影勾配法のほうが遅い。$g^\top x = 2f(x) < 0$ なので $x - \eta g$ は伸び、
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
# - **＋移送**：$m$ を毎回新しい接空間へ射影すると、割合は 0 のままです（収束の速さは、この例では移送なしとほぼ同じ）。
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
# - `norm="sphere"`：nGPT の球面制約。埋め込み・隠れ状態・重み行列のベクトルがすべて単位ノルムで、更新のたびにリトラクション（`microgpt.retract`）で球面に戻します。
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
runs = {}
for norm in ("rmsnorm", "sphere"):
    cfg = microgpt.GPTConfig(vocab_size=len(vocab) + 1, norm=norm)
    runs[norm] = (cfg, microgpt.train(train_docs, val_docs, vocab, cfg, steps=1500, batch_size=16,
                                      engine="numpy", eval_every=50, seed=42))
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
# RMSNorm モードでは隠れ状態のノルムは $\sqrt{C} = 4$ 付近から広がり（RMSNorm は二乗平均を 1 にするのでノルムは $\sqrt{C}$、その後の残差加算でさらに変わる）、
# 重みのノルムも学習でばらばらになります。球面モードでは、隠れ状態も重みも **すべてノルム 1**（丸め誤差の範囲）に並びます。
# ノルムは捨てられ、意味は「向き」だけが担う ── 講義のプラネタリウム（星の明るさは使わない）です。
#
# 両モデルが作る名前（温度 0.5）：

# %%
for norm, (cfg, st) in runs.items():
    print(f"{norm:8s}", ", ".join(microgpt.sample(st.params, cfg, vocab, num_samples=12, temperature=0.5, seed=1)))

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
# 7節で学習した球面モデルで確かめます。$s_z$ は `microgpt.effective_scales(params, cfg)["s_z"]` で読めます
# （nGPT の流儀で小さく保存されたパラメータに、順伝播で掛け戻す倍率を掛けた値。初期値は `cfg.sz_init`）。

# %%
cfg_s, st_s = runs["sphere"]
labels = list(vocab) + ["BOS"]                                 # token ids 0..25 are the letters, 26 is BOS
s_z = microgpt.effective_scales(st_s.params, cfg_s)["s_z"]
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
# T を上げると綴りが崩れていきます。7節で名前の生成に使った T = 0.5 は、全トークンの κ を2倍にしたことになります。
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
# 学習前は cos が 0 のまわりに ±0.5 程度ばらつくだけで、母音・子音のブロックの構造はありません（16 次元のランダムな向きどうし）。学習後は左上の母音のブロックが赤く（母音どうしは平均して近い向き）、
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

# %% [markdown]
# ## 理解度チェック
#
# **問1.** 講義の float16 のスクリプトで、ノルムが 0 にも本当の値 $\sqrt{3}\cdot 2^{-24} \approx 1.03\times10^{-7}$ にもならず 1.1921e-07 になるのはなぜですか。
# その結果、`eps` なしの正規化は何を返しますか。
#
# <details><summary>答え</summary>
#
# PyTorch は float16 の値を float32 で二乗・合計・平方根してから、結果だけを float16 に丸めます。float32 では $2^{-48}$ もアンダーフローしないので、
# ノルムは $1.03\times10^{-7} = 1.732 \times 2^{-24}$ と正しく計算されます。ところが float16 はこの大きさでは $2^{-24}$ 刻みの非正規化数しか持たないので、
# 2 刻み $= 2^{-23} = 1.1921\times10^{-7}$ に丸められます。割り算は $2^{-24}/2^{-23} = 0.5$ なので結果は [0.5, 0.5, 0.5]、長さ 0.866 のベクトルです。
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
# 初期化で1回正規化しただけなので、学習とともに 1 から離れます（3節の例では Adam で 1.66〜2.03）。勾配が行に対して接ベクトルでない、接ベクトルでも1歩で長さが伸びる、
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
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を消して関数を書き、その下のチェックセルを実行してください。チェックは、このプロジェクトの関数
# （`sphere.py`）や中心差分と、シード固定の乱数の入力で比べて、正解 / 不正解 / 未回答 を表示します。
#
# **練習問題1（リーマン勾配の1歩）.** 単位ベクトル `x`（1次元の NumPy 配列）、ユークリッド勾配 `g`、学習率 `lr` から、
# リーマン勾配＋リトラクションの1歩 $R\big(x - \eta\,(g - (g^\top x)\,x)\big)$、$R(v) = v/\lVert v\rVert$ を返す関数 `riemannian_step(x, g, lr)` を書いてください。
# `sphere.riemannian_sgd_step` と比べます（`sphere` の関数は使わずに書くこと）。

# %%
import exercises  # the check cells (notebooks/exercises.py)


# %%
def riemannian_step(x, g, lr):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_04_riemannian_step(riemannian_step)

# %% [markdown]
# **練習問題2（安全な正規化とその勾配）.** 1次元の配列 `x` について、
#
# - `safe_normalize(x, eps=1e-12)`：$y = x / \max(\lVert x\rVert, \epsilon)$ を返す（`F.normalize` のクランプ形）。
# - `safe_normalize_backward(dy, x, eps=1e-12)`：上流の勾配 `dy` $= \partial L/\partial y$ から $\partial L/\partial x$ を返す。
#   $\lVert x\rVert \ge \epsilon$ では $(dy - y\,(y^\top dy))/\lVert x\rVert$、$\lVert x\rVert < \epsilon$ では分母が定数 ε なので $dy/\epsilon$。
#
# を書いてください。順伝播は `sphere.l2_normalize_np` と、逆伝播は中心差分と、$\lVert x\rVert \approx 1$、$\approx 10^{-7}$（「足す ε」の誤りが見える大きさ）、
# $< \epsilon$ の3つの大きさで比べます。

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
# **練習問題3（$\mathbb{S}^2$ 上の vMF 密度）.** $d = 3$ では正規化定数が初等関数で書けて、$C_3(\kappa) = \dfrac{\kappa}{4\pi\sinh\kappa}$ です。
# 形 `(n, 3)` の単位ベクトル `x`、単位ベクトル `mu`、$\kappa > 0$ から、各行の対数密度 $\log C_3(\kappa) + \kappa\,\boldsymbol\mu^\top\mathbf x$（形 `(n,)`）を返す
# `vmf_log_density_s2(x, mu, kappa)` を書いてください。κ は 0.01 から 1000 まで調べます。`np.sinh` は κ ≈ 710 を超えると inf に溢れるので、
# $\log\sinh\kappa = \kappa + \log(1 - e^{-2\kappa}) - \log 2$ のように対数のまま計算してください。`sphere.vmf_log_density` と比べます。

# %%
def vmf_log_density_s2(x, mu, kappa):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_04_vmf_log_density_s2(vmf_log_density_s2)

# %% [markdown]
# **練習問題4（vMF 混合のクラス事後確率）.** クラス $k$ の点が $\mathrm{vMF}(\boldsymbol\mu_k, \kappa_k)$ から生まれ、クラスが事前確率 $\pi_k$ で選ばれる混合モデルで、
# 事後確率 $p(k\mid\mathbf x) \propto \pi_k\,C_d(\kappa_k)\exp(\kappa_k\,\boldsymbol\mu_k^\top\mathbf x)$ を返す `vmf_posterior(x, mus, kappas, priors)` を書いてください。
# `x` は形 `(n, d)` の単位ベクトル、`mus` は形 `(K, d)`、`kappas` と `priors` は形 `(K,)`。戻り値は形 `(n, K)` で、各行の和が 1。
# $\log C_d(\kappa)$ には `sphere.vmf_log_normalizer(d, kappa)` を使ってかまいません。κ は 1000 まで調べるので、対数のまま足し合わせ、
# 行ごとに最大値を引いてから exp してください。κ が共通で事前確率が等しいときに 8節の softmax$(\kappa\cos\theta_k)$ に一致することも確かめられます。

# %%
def vmf_posterior(x, mus, kappas, priors):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_04_vmf_posterior(vmf_posterior)
