# %% [markdown]
# # 第3回 プラネタリウムの建設：球面へのパラダイムシフト（PyTorch なし）
#
# **対応する講義:** 幾何学講義 第3回「プラネタリウムの建設: 球面へのパラダイムシフト」
# （nGPT、単位球面 $\mathbb{S}^{d-1}$、リトラクション、von Mises–Fisher 分布）。
#
# 講義の4つのコード例（PyTorch）を、このプロジェクトの `sphere.py`（NumPy とスカラー `Value`）で書き直し、
# さらに講義の先まで進みます。このノートで見られるもの：
#
# 1. **コード例 03_l2_normalize**：$L_2$ 正規化でノルムの平均 ≈ 1、標準偏差 ≈ 0。正規化の勾配が接空間に入ること。
# 2. **コード例 03_fp16_instability_demo**：float16 でのアンダーフローと NaN、そして安全な正規化（NumPy の float16 で再現）。
# 3. **コード例 03_normalized_linear**：nGPT 風の正規化線形層と正規化残差接続。ノルムが深さ方向に保たれる様子。
# 4. **コード例 03_vmf_distribution_plot**：円周上の vMF 密度、集中度 κ ∈ {0, 1, 5, 10, 50}（折れ線と極座標、講義の図と同じ）。
# 5. 講義の先へ：$\mathbb{S}^2$ 上の vMF サンプル（3D）、サンプルから κ を推定し直す。
# 6. リーマン勾配（接空間への射影）＋リトラクションの1歩と、講義の疑似コードの「射影勾配法」の1歩の比較：球面からのずれ。
# 7. microgpt を `norm="rmsnorm"` と `norm="sphere"`（nGPT）で学習した損失曲線、隠れ状態と重みのノルムの分布。

# %%
import sys
from pathlib import Path

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists())
sys.path.insert(0, str(ROOT))  # value.py, utils.py, sphere.py, microgpt.py live at the repo root

import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np

import sphere
from sphere import (
    geodesic_distance_np,
    l2_normalize,
    l2_normalize_np,
    l2_normalize_np_backward,
    normalize_matrix,
    retract,
    tangent_project,
)
from utils import linear_np, rmsnorm_np
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
# ## 2. 数値安定性：float16 のアンダーフロー（コード例 `03_fp16_instability_demo.py`）
#
# NumPy にも `float16` があるので、講義の実験をそのまま再現できます。
# float16 の最小の正規化数は $2^{-14} \approx 6.1\times10^{-5}$、最小の非正規化数は $2^{-24} \approx 6\times10^{-8}$。
# 講義の `tiny / 1024` $= 2^{-24}$ はぎりぎり表せますが、その **二乗** $2^{-48}$ は float16 では 0 に丸められます（アンダーフロー）。
# するとノルムが 0 になり、`x / norm` は `inf`、ゼロベクトルなら `0/0 = NaN` です。

# %%
very_small = np.finfo(np.float16).tiny / 1024                        # 2^-24: non-zero in float32
small_fp16 = np.full(3, very_small, dtype=np.float32).astype(np.float16)
norm_fp16 = np.sqrt(np.sum(small_fp16 * small_fp16))                # the squares underflow to 0 in float16
print("input (float16):", small_fp16, " dtype", small_fp16.dtype)
print("norm in float16:", norm_fp16)
with np.errstate(divide="ignore", invalid="ignore"):
    print("unsafe x / norm (no eps):", small_fp16 / norm_fp16)
    zero_fp16 = np.zeros(3, dtype=np.float16)
    zero_norm = np.sqrt(np.sum(zero_fp16 * zero_fp16))
    print("zero input:", zero_fp16, " norm", zero_norm, " zero / norm:", zero_fp16 / zero_norm)

# safe: compute the norm in float32 and protect it with eps (what F.normalize(x.float(), eps=1e-12).half() does)
safe = l2_normalize_np(small_fp16.astype(np.float32), eps=1e-12).astype(np.float16)
print("safe (norm in float32, eps):", safe, " |y| =", np.linalg.norm(safe.astype(np.float64)))
print("safe on the zero vector    :", l2_normalize_np(zero_fp16.astype(np.float32)).astype(np.float16))

# %% [markdown]
# 講義の最後の例（ゼロ近傍での勾配）：$x = [10^{-7}, 10^{-7}, 10^{-7}]$ で `y.sum().backward()`。
# 上の直交性から、上流の勾配 $[1,1,1]$ が $y$ と平行なら勾配はちょうど 0 になります（丸め誤差の範囲で）。
# ゼロベクトルでは `l2_normalize` は定数 $\epsilon$ で割るので、NaN ではなく有限の勾配 $1/\epsilon$ が出ます。

# %%
x = [Value(1e-7) for _ in range(3)]
sum(l2_normalize(x)).backward()
print("grad at x = 1e-7 * [1, 1, 1]:", [v.grad for v in x])
z = [Value(0.0) for _ in range(3)]
out = l2_normalize(z)
sum(out).backward()
print("zero vector: y =", [v.data for v in out], " grad =", [v.grad for v in z], "(finite, 1/eps)")

# %% [markdown]
# どの大きさの入力なら float16 だけで正規化できるのかを、入力の大きさ $s$ を $10^{-9}$ から $10^{6}$ まで振って調べます
# （$x = s\,[1, 2, 3]/\sqrt{14}$ を float16 に丸めたもの）。出力ノルムは 1 であるべきです。
#
# - **float16 だけで計算**：小さい側では二乗のアンダーフローでノルムが 0 になり、結果は `inf`／`NaN`。
#   その少し上（$s \sim 10^{-4}$）では二乗が非正規化数の範囲に入って精度が粗く、ノルムが 1 からずれます。
#   大きい側では二乗のオーバーフロー（float16 の最大値 65504）でノルムが `inf` になり、出力が 0 に潰れます。
# - **ノルムを float32 で計算し $\epsilon$ で守る安全策**：入力が float16 で表せる範囲ではどこでも 1 です
#   （float16 の丸めの範囲で）。左の灰色の範囲では入力そのものが 0 に丸められ、安全策は NaN ではなくゼロベクトルを返します。
#   右の灰色の範囲では入力の成分がすでに `inf` で、どんな正規化でも救えません（正規化より前、入力を作る段階のオーバーフロー）。

# %%
scales = np.logspace(-9, 6, 400)
direction = np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)
naive, safe_norms, zero_in, inf_in = [], [], [], []
with np.errstate(all="ignore"):
    for s in scales:
        v16 = (s * direction).astype(np.float16)
        zero_in.append(not v16.any())
        inf_in.append(not np.isfinite(v16).all())
        n16 = np.sqrt(np.sum(v16 * v16))
        naive.append(np.linalg.norm((v16 / n16).astype(np.float64)))
        safe_norms.append(np.linalg.norm(l2_normalize_np(v16.astype(np.float32)).astype(np.float16).astype(np.float64)))
naive, safe_norms = np.array(naive), np.array(safe_norms)
zero_in, inf_in = np.array(zero_in), np.array(inf_in)
in_range = ~zero_in & ~inf_in
print(f"input representable in float16 for s in [{scales[in_range].min():.1e}, {scales[in_range].max():.1e}]; "
      f"there the safe version gives |y| within {np.abs(safe_norms[in_range] - 1).max():.1e} of 1")

fig, ax = plt.subplots(figsize=(9, 3.8))
ok = np.isfinite(naive)
ax.semilogx(scales[ok], naive[ok], ".", ms=3, label="float16 only: x / ||x||")
ax.semilogx(scales[~ok], np.full((~ok).sum(), 1.6), "x", color="tab:red", ms=4,
            label="float16 only: result is inf or NaN (drawn at 1.6)")
ax.semilogx(scales, safe_norms, "-", color="tab:green", label="norm in float32 with eps, then float16")
ax.axvspan(scales[0], scales[zero_in].max(), color="0.9", label="input rounds to 0 / overflows to inf in float16")
ax.axvspan(scales[inf_in].min(), scales[-1], color="0.9")
ax.set(xlabel="input scale s = ||x||", ylabel="||normalized x||", ylim=(-0.1, 1.8),
       title="L2 normalization in float16: underflow (left), overflow (right)")
ax.legend(fontsize=8, loc="lower center")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 3. nGPT 風の設計：正規化線形層と正規化残差（コード例 `03_normalized_linear.py`）
#
# 講義の `NormalizedLinear` は「重みの行を正規化して初期化し、出力を正規化する」、
# `NormalizedResidual` は「$x + \alpha\,f(x)$ を正規化して球面に戻す」でした。クラスの代わりに関数で書きます
# （`nn.Module` との対応は notebook 05 を参照）。使う部品はすべて `sphere.py` と `utils.py` のものです。

# %%
def normalized_linear(x, w):
    """nGPT-style linear layer: unit rows of w (normalize_matrix, axis=1), output put back on the sphere."""
    return l2_normalize_np(linear_np(x, normalize_matrix(w, axis=1)))


def normalized_residual(x, module, alpha=0.1):
    """x <- Normalize(x + alpha * module(x)): add the residual, then return to the sphere (the retraction)."""
    return retract(x + alpha * module(x))


d = 64
rng = np.random.default_rng(3)
W = rng.normal(0.0, 0.08, (d, d))
x = l2_normalize_np(rng.standard_normal((1000, d)))      # 1000 unit inputs
out = normalized_linear(x, W)
raw = linear_np(x, normalize_matrix(W, axis=1))
print("unit rows of W: norms", np.linalg.norm(normalize_matrix(W, axis=1), axis=1)[:4], "...")
print(f"before the output normalization: entries are cosines in [{raw.min():.3f}, {raw.max():.3f}], "
      f"row norms {np.linalg.norm(raw, axis=1).min():.3f} .. {np.linalg.norm(raw, axis=1).max():.3f}")
print(f"normalized_linear output norms: {np.linalg.norm(out, axis=1).min():.15f} .. "
      f"{np.linalg.norm(out, axis=1).max():.15f}")

# %% [markdown]
# 講義の注意「LayerNorm（ここでは RMSNorm）の後に線形層を通すと長さは射影行列次第で変わる」を、12 段の積み重ねで見ます。
# 各段は $f(x) = \mathrm{relu}(W_1 x)$ を $W_2$ で戻す小さな MLP（重みは段ごとに別）です。
#
# - **素朴な残差** $x \leftarrow x + f(\mathrm{RMSNorm}(x))$（標準的な pre-norm Transformer の形）：残差の流れのノルムは段ごとに増えていく。
# - **nGPT 風の正規化残差** $x \leftarrow \mathrm{Normalize}(x + \alpha f(x))$：ノルムは常に 1。
#
# 右の図は、正規化残差の1段で $x$ が球面上を **どれだけ回るか**（測地線距離 $\arccos(x_{\text{before}}\cdot x_{\text{after}})$）を $\alpha$ の関数として描いたもの。
# $\alpha$ は「球面上の1歩の大きさ」を決める学習率のような役割をします（nGPT の eigen learning rate）。

# %%
depth = 12
rng = np.random.default_rng(4)
blocks = [(rng.normal(0.0, 0.3, (4 * d, d)), rng.normal(0.0, 0.3, (d, 4 * d))) for _ in range(depth)]


def mlp(h, w1, w2):
    return linear_np(np.maximum(linear_np(h, w1), 0.0), w2)


x0 = l2_normalize_np(rng.standard_normal((500, d)))
h_plain, h_sphere = x0.copy(), x0.copy()
norm_plain, norm_sphere = [1.0], [1.0]
for w1, w2 in blocks:
    h_plain = h_plain + mlp(rmsnorm_np(h_plain), w1, w2)
    h_sphere = normalized_residual(h_sphere, lambda h, w1=w1, w2=w2: mlp(h, w1, w2), alpha=0.1)
    norm_plain.append(np.linalg.norm(h_plain, axis=1).mean())
    norm_sphere.append(np.linalg.norm(h_sphere, axis=1).mean())

alphas = np.logspace(-3, 1, 30)
w1, w2 = blocks[0]
f0 = mlp(x0, w1, w2)
angles = [np.median(geodesic_distance_np(x0, normalized_residual(x0, lambda h: f0, alpha=a))) for a in alphas]

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
axes[0].plot(range(depth + 1), norm_plain, "o-", label="x + f(RMSNorm(x))  (pre-norm residual)")
axes[0].plot(range(depth + 1), norm_sphere, "s-", label="Normalize(x + 0.1 f(x))  (nGPT-style)")
axes[0].set(xlabel="block", ylabel="mean ||x||", yscale="log", title="Norm of the residual stream vs depth")
axes[0].legend(fontsize=8)
axes[1].semilogx(alphas, np.degrees(angles), "o-", ms=3, label="median over 500 inputs")
axes[1].set(xlabel="alpha", ylabel="angle moved on the sphere (degrees)",
            title="One normalized residual step: geodesic distance")
axes[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

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
ax.set(xlabel="Angle θ (radians)", ylabel="Probability Density", title="von Mises-Fisher Distribution (2D)",
       xlim=(-np.pi, np.pi))
ax.legend()
ax = fig.add_subplot(1, 2, 2)
for k in kappas:
    ax.plot(pdfs[k] * np.cos(theta), pdfs[k] * np.sin(theta), label=f"κ = {k}")
ax.set(aspect="equal", title="vMF Distribution on Circle", xlabel="r cos θ", ylabel="r sin θ  (r = density)",
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
ax.set_title("vMF density on the circle (polar axes, radius = density)", pad=14)
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
    ax.scatter(s[:, 0], s[:, 1], s[:, 2], s=3, alpha=0.6, label="samples")
    ax.quiver(0, 0, 0, *(1.3 * mu3), color="tab:red", lw=2, arrow_length_ratio=0.12, label="μ")
    ax.set(title=f"vMF on S^2, κ = {k}", xlabel="x", ylabel="y", zlabel="z",
           xlim=(-1, 1), ylim=(-1, 1), zlim=(-1, 1), box_aspect=(1, 1, 1),
           xticks=[-1, 0, 1], yticks=[-1, 0, 1], zticks=[-1, 0, 1])
    ax.legend(loc="upper left", fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# サンプルから κ を推定し直します（`sphere.vmf_estimate_kappa`、Banerjee et al. 2005 の近似
# $\hat\kappa = \bar R (d - \bar R^2)/(1 - \bar R^2)$、$\bar R$ はサンプル平均の長さ）。
# 左：真の κ と推定値（$d = 3$ と $d = 16$、サンプル数 $n$ を変えて各 20 回の中央値と 10–90% の幅）。
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
                         label=f"d = {d_}, n = {n}")
    r_bar = [np.linalg.norm(sphere.vmf_sample(mu_d, k, 10000, rng).mean(axis=0)) for k in true_kappas]
    ks = np.logspace(-1, 2.5, 200)
    axes[1].semilogx(ks, sphere.vmf_mean_resultant_length(d_, ks), "-", label=f"A_d(κ), d = {d_}")
    axes[1].semilogx(true_kappas, r_bar, marker, label=f"mean resultant length of 10^4 samples, d = {d_}")
axes[0].plot(true_kappas, true_kappas, "k--", lw=1, label="estimate = true κ")
axes[0].set(xscale="log", yscale="log", xlabel="true κ", ylabel="estimated κ",
            title="κ recovered from samples (median, 10-90% band)")
axes[0].legend(fontsize=8)
axes[1].set(xlabel="κ", ylabel="E[μ·x]", title="Mean resultant length A_d(κ) vs samples")
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

fig, axes = plt.subplots(1, 3, figsize=(15, 4))
axes[0].loglog(lrs, drift_riem, "o-", ms=3, label="tangent step x - η grad_S f")
axes[0].loglog(lrs, drift_proj, "s-", ms=3, label="Euclidean step x - η g")
axes[0].loglog(lrs, lrs ** 2, "k:", lw=1, label="slope 2 (η^2)")
axes[0].loglog(lrs, lrs, "k--", lw=1, label="slope 1 (η)")
axes[0].set(xlabel="learning rate η", ylabel="| ||x_new|| - 1 |  before retraction",
            title="Drift off the sphere in one step")
axes[0].legend(fontsize=8)
axes[1].semilogy(drift["riem"], label="Riemannian + retraction")
axes[1].semilogy(drift["proj"], label="projected (Euclidean) step")
axes[1].set(xlabel="step", ylabel="| ||x_new|| - 1 |  before retraction", title=f"Drift along the run (η = {lr})")
axes[1].legend(fontsize=8)
axes[2].semilogy(np.array(hist["riem"]) + lam_max, label="Riemannian + retraction")
axes[2].semilogy(np.array(hist["proj"]) + lam_max, label="projected (Euclidean) step")
axes[2].set(xlabel="step", ylabel="f(x) - min f", title="f(x) = -x^T A x on S^9")
axes[2].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# どちらもリトラクション後は厳密に球面上（ノルム 1）にあり、どちらも最小値へ収束します。$\eta \to 0$ では2つの1歩の差は $\eta^2$ の程度なので、
# 講義のとおり「学習率が十分小さければ、リーマン勾配降下法に近い挙動」です。違いはリトラクション前のずれの **次数** に現れます。
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
# ## 7. microgpt：RMSNorm と球面（nGPT）を学習で比べる
#
# 最後に、第22章の tiny GPT（`microgpt.py`）を2つのモードで学習します。
#
# - `norm="rmsnorm"`：元の microgpt（RMSNorm、重みは制約なし）。
# - `norm="sphere"`：nGPT の球面制約。埋め込み・隠れ状態・重み行列のベクトルがすべて単位ノルムで、更新のたびにリトラクション（`microgpt.retract`）で球面に戻します。
#
# 既定のコーパス（英語の名前）で、NumPy エンジン・バッチ 16・1500 ステップ（数秒）。検証損失を、ニューラルネットなしの基準
# （一様・ユニグラム・文字バイグラム）と並べます。

# %%
import microgpt

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
fig, ax = plt.subplots(figsize=(10, 4.5))
colors = {"rmsnorm": "tab:blue", "sphere": "tab:orange"}
for norm, (_cfg, st) in runs.items():
    tl = np.array(st.train_loss)
    smooth = np.convolve(tl, np.ones(50) / 50, mode="valid")
    ax.plot(np.arange(50, len(tl) + 1), smooth, color=colors[norm], alpha=0.5, lw=1,
            label=f"{norm}: train loss (50-step mean)")
    vs, vl = zip(*st.val_loss)
    ax.plot(vs, vl, "o-", ms=3, color=colors[norm], label=f"{norm}: val loss")
for (name, value), ls in zip(base.items(), ("-.", "--", ":")):
    ax.axhline(value, color="0.3", ls=ls, lw=1, label=f"{name} baseline (val) {value:.3f}")
ax.set(xlabel="step (batch of 16 names)", ylabel="mean NLL (nats per character)", ylim=(1.9, 3.75),
       title="microgpt on names: norm='rmsnorm' vs norm='sphere' (NumPy engine)")
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
norm_data = {}
for norm, (cfg, st) in runs.items():
    inputs, _, mask = microgpt.make_batch(val_tokens, cfg.block_size)
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
for i, title in enumerate(["hidden states (residual stream)", "weight vectors along the embedding dim"]):
    bins = np.linspace(0, max(norm_data[n][i].max() for n in runs) * 1.05, 60)  # shared by both modes
    for norm in runs:
        vals = norm_data[norm][i]
        axes[i].hist(vals, bins=bins, alpha=0.6, color=colors[norm], label=f"{norm} (n = {vals.size})")
    axes[i].axvline(1.0, color="k", ls=":", lw=1, label="norm 1")
    axes[i].set(xlabel="L2 norm", ylabel="count", yscale="log", title=f"Norms of {title}")
    axes[i].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# RMSNorm モードでは隠れ状態のノルムは $\sqrt{C} = 4$ 付近から広がり（RMSNorm は二乗平均を 1 にするのでノルムは $\sqrt{C}$、その後の残差加算でさらに変わる）、
# 重みのノルムも学習でばらばらになります。球面モードでは、隠れ状態も重みも **すべてノルム 1**（丸め誤差の範囲）に並びます。
# ノルムは捨てられ、意味は「向き」だけが担う ── 講義のプラネタリウム（星の明るさは使わない）です。
#
# 最後に、両モデルが作る名前（温度 0.5）：

# %%
for norm, (cfg, st) in runs.items():
    print(f"{norm:8s}", ", ".join(microgpt.sample(st.params, cfg, vocab, num_samples=12, temperature=0.5, seed=1)))
