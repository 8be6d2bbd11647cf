# %% [markdown]
# # 第3回 プラネタリウムの建設（3）：正規化残差と、円周上の vMF 分布
#
# （目安：本編 約38分、練習問題 約24分）
#
# **対応する講義:** 幾何学講義 第3回の「実装ノート」のコード例 `03_normalized_linear.py` の `NormalizedResidual` と `03_vmf_distribution_plot.py`、
# 本文の「vMF と正規分布の対応」の表（κ → ∞ の行を含む）。ノート 12 の続きです。
#
# このノートで見るもの：
#
# 1. 講義の残差 $x + \alpha f(x)$ と nGPT の残差の違い。RMSNorm の残差の流れのノルムが深さとともに伸びること。
# 2. 円周上の vMF 密度（κ のスライダーつき）。κ → ∞ でデルタ関数に近づく様子。講義の表の「指数関数的な減衰（角度に対して）」の読み方。
# 3. **発展**（読み飛ばしてかまいません）：残差の1歩を2次元で描く（α のスライダーつき）。
# 4. まとめ、理解度チェック、練習問題（$\mathbb{S}^2$ の vMF の正規化定数と平均コサインを、閉じた式で書く）。
#
# スライダーつきの図は、Jupyter で ipywidgets を入れて実行したときに動かせます。実行済みのノートには、決まった値での図が入っています。

# %%
import sys
from pathlib import Path

ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists()), None)
if ROOT is None:  # the kernel was started outside the repository: say so, not a bare StopIteration
    raise FileNotFoundError(f"value.py が {Path.cwd()} にもその上のフォルダにもありません。"
                            "Jupyter はこのリポジトリの中（ルートか notebooks/）で起動してください")
for path in (ROOT, ROOT / "notebooks"):  # the project's modules at the root, helpers in notebooks/
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np
from figures import (
    slider_figure,  # notebooks/figures.py: a figure with sliders in Jupyter, static when run headless
)

import sphere
from sphere import cosine_similarity_np, geodesic_distance_np, l2_normalize_np, retract
from utils import linear_np, rmsnorm_np

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=6, suppress=False)

# %% [markdown]
# ## 1. 残差接続：講義の $x + \alpha f(x)$ と nGPT の $h + \alpha(\mathrm{Norm}(f(h)) - h)$
#
# 講義の `NormalizedResidual`（コード例 `03_normalized_linear.py`）を、ノート 12 の `NormalizedLinear` と同じく関数で書きます：
# $x \leftarrow \mathrm{Normalize}(x + \alpha f(x))$。最後の正規化が、球面へ戻すリトラクションで、nGPT の「残差接続後：正規化」にあたります。
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
def normalized_residual(x, module, alpha=0.1):
    """The lecture's NormalizedResidual: x <- Normalize(x + alpha * module(x)) (the normalization is the retraction)."""
    return retract(x + alpha * module(x))


def ngpt_residual(h, module, alpha=0.1):
    """nGPT's residual update (as in gpt_sphere, with one alpha): h <- Norm(h + alpha (Norm(module(h)) - h))."""
    h = l2_normalize_np(h)
    return retract(h + alpha * (l2_normalize_np(module(h)) - h))


d, depth, sigma = 64, 12, 0.3
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
print(f"RMSNorm(x) のノルム（sqrt(d)）= {np.linalg.norm(rmsnorm_np(x0), axis=1).mean():.2f}")
print("各ブロックの出力 f のノルムの平均:", np.round(f_norms, 1),
      f"（ガウスの重みなら約 sqrt(2) d sigma^2 sqrt(d) = {np.sqrt(2) * d * sigma ** 2 * np.sqrt(d):.1f}）")
print("各ブロックの |cos(x, f)| の平均 :", np.round(f_cos, 3),
      f"（R^{d} のランダムな2方向なら約 sqrt(2 / (pi d)) = {np.sqrt(2 / (np.pi * d)):.3f}）")
print("pre-norm 残差の ||x_L||       :", np.round(norm_plain, 1))
print("||x_L|| / sqrt(L)             :", np.round(np.array(norm_plain[1:]) / np.sqrt(np.arange(1, depth + 1)), 1))
print(f"2つの正規化残差の ||x||: {min(norm_lecture + norm_ngpt):.15f} 〜 {max(norm_lecture + norm_ngpt):.15f}")

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
print(f"単位ベクトル x0 からの1歩: ||f(x0)|| の中央値 = {f0_norm:.2f}（sqrt(2) d sigma^2 = {np.sqrt(2) * d * sigma**2:.2f}）、"
      f"|cos(x0, f(x0))| の中央値 = {np.median(np.abs(cosine_similarity_np(f0, x0))):.3f}")
for a in (0.1, 0.5, 1.0, 10.0):
    print(f"α = {a:4}: 講義の形で回る角度 {np.degrees(turn_angle(normalized_residual, f0, a)):5.1f}° "
          f"（atan(α ||f||) = {np.degrees(np.arctan(a * f0_norm)):5.1f}）、nGPT の形で "
          f"{np.degrees(turn_angle(ngpt_residual, f0, a)):5.1f}°（atan2(α, 1 - α) = "
          f"{np.degrees(np.arctan2(a, 1 - a)):5.1f}）")
print(f"ブロックの出力が 10 倍、α = 0.1: 講義の形 {np.degrees(turn_angle(normalized_residual, 10 * f0, 0.1)):.1f}°、"
      f"nGPT の形 {np.degrees(turn_angle(ngpt_residual, 10 * f0, 0.1)):.1f}°")

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
# - **第1ブロックでの跳び**：入力 $x_0$ はノルム 1 ですが、MLP に入るのは RMSNorm を通したベクトルで、そのノルムは $\sqrt{d} = 8$ です（「RMSNorm(x) のノルム」の行）。
#   成分が $\mathcal{N}(0, \sigma^2)$ の重みでは、relu を挟んだ2層でノルムがおよそ $\sqrt{2}\,d\,\sigma^2$ 倍になるので、各ブロックの出力 $f$ のノルムは
#   「各ブロックの出力 f のノルムの平均」の行の大きさです。これがノルム 1 の $x_0$ に足されるので、最初のブロックで一気に大きくなります。
# - **その後の $\sqrt{\text{深さ}}$ の伸び**：RMSNorm のおかげで、$f$ の大きさは $x$ のノルムによらず毎回ほぼ同じです。しかも $f$ の向きは $x$ とほぼ直交します
#   （「|cos(x, f)| の平均」の行が、64 次元のランダムな2方向の値に近い）。直交するベクトルを足すとノルムの二乗が足し算になるので、$\lVert x_L\rVert$ は $\sqrt{L}$ に比例して伸びます
#   （`||x_L|| / sqrt(L)` の行がほぼ一定。図の点線）。指数的には増えませんが、止まりもしません。講義の正規化残差と nGPT の残差は、どちらもノルムが常に 1 です。
# - **右の図が 90° で頭打ちになる理由（講義の形）**：α が大きいと $x + \alpha f \approx \alpha f$ なので、新しい向きは $f$ の向きに近づき、回る角度は「$x$ と $f$ のなす角」、
#   ほぼ 90° に近づきます。$f \perp x$ なら回る角度はちょうど $\arctan(\alpha\lVert f\rVert)$ で、α の意味が **ブロックの出力の大きさ次第** で変わります。
#   出力が 10 倍になると、同じ α = 0.1 で回る角度が大きく変わります（出力の最後の行）。
# - **nGPT の形**：回る角度は $\lVert f\rVert$ によらず $\operatorname{atan2}(\alpha, 1-\alpha)$（$f \perp h$ のとき）です。α = 0.5 で 45°、α = 1 でちょうど $\mathrm{Norm}(f(h))$ の位置に着き、
#   α > 1 はそこを通り越す外挿です。α は「球面上の1歩の大きさ」を直接決める、学習率のような量です。
#
# 1歩を2次元で描いた図（α のスライダーつき）は、このノートの最後の発展にあります。

# %% [markdown]
# ## 2. vMF 分布の可視化（コード例 `03_vmf_distribution_plot.py`）
#
# 講義の「vMF分布の定義」：平均方向 μ と集中度パラメータ κ の vMF の確率密度関数は $C_d(\kappa)\exp(\kappa\,\mu^\top x)$ で、正規化定数 $C_d(\kappa)$ は
# 第一種変形ベッセル関数 $I_\nu$ で書けます。円周 $\mathbb{S}^1$（$d = 2$）上では $p(\theta) = \exp(\kappa\cos\theta) / (2\pi I_0(\kappa))$ です。
# 講義の「集中度 κ の直感」の表（κ = 0 で一様、小さい κ で緩やかに集中、大きい κ で明確に集中、κ → ∞ で一点に集中）を、図と数で確かめます。
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
    print(f"κ = {k:2d}: 密度の最大値 {pdfs[k].max():.4f}、円周1周の積分 {total:.6f}")

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
# 右の図は極座標（原点からの距離 = 密度）で描いたものです。κ = 0 は円（一様）で、κ が大きくなるほど平均方向 θ = 0 に鋭く集中し、分布の鋭さが増します。どの κ でも、円周を1周した積分は 1 です（「円周1周の積分」の値）。

# %% [markdown]
# ### κ → ∞：一点に集中する（デルタ関数に近づく）
#
# 講義の表の最後の行は「$\kappa \to \infty$：一点に集中（デルタ関数に近づく）、星が一点に凝縮」です。名前だけでなく、数で見ます。
# κ を 10 倍ずつ大きくして、密度のピークの高さ、θ の標準偏差、平均方向から 0.05 ラジアン（約 3°）以内に入る確率を、細かい格子の数値積分で測ります。
# デルタ関数に近づくとは、積分は 1 のまま、幅が 0 に、ピークが無限大に向かい、どんな小さな範囲にもほぼ全部の確率が入るようになることです。

# %%
theta_fine = np.linspace(-np.pi, np.pi, 400_001)
step = theta_fine[1] - theta_fine[0]
circle_fine = np.stack([np.cos(theta_fine), np.sin(theta_fine)], axis=1)
print(f"{'κ':>8} | {'ピークの高さ':>10} {'θ の標準偏差':>12} {'1/sqrt(κ)':>10} {'|θ| < 0.05 の確率':>16} {'積分':>9}")
for k in (10, 100, 1_000, 10_000, 100_000):
    p = np.exp(sphere.vmf_log_density(circle_fine, mu, k))
    total = p[:-1].sum() * step
    std = np.sqrt((theta_fine**2 * p)[:-1].sum() * step)
    near = p[np.abs(theta_fine) < 0.05].sum() * step
    print(f"{k:8d} | {p.max():12.2f} {std:14.5f} {1 / np.sqrt(k):10.5f} {near:18.6f} {total:9.6f}")

fig, ax = plt.subplots(figsize=(8, 3.6))
for k in (10, 100, 1_000, 10_000):
    p = np.exp(sphere.vmf_log_density(circle_fine, mu, k))
    ax.plot(theta_fine, p, label=f"κ = {k}")
ax.set(xlim=(-0.8, 0.8), xlabel="角度 θ（ラジアン）", ylabel="確率密度（どれも積分は 1）",
       title="κ → ∞：幅が 1/√κ で縮み、ピークが √κ で伸びる（デルタ関数へ）")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# κ を 10 倍にするごとに、θ の標準偏差は $1/\sqrt{\kappa}$ のとおり約 $1/\sqrt{10}$ 倍に縮み、ピークは約 $\sqrt{10}$ 倍に伸びます。積分はどの κ でも 1 のままです。
# κ = 10 では 0.05 ラジアン以内の確率はわずかですが、κ = $10^5$ ではほぼ 1 です。星が一点に凝縮する様子です。
# 極限の κ = ∞ そのものは密度を持たない（関数として書けない）ので、`sphere.vmf_log_density` に渡せるのは有限の κ だけです。

# %% [markdown]
# ### 同じ κ でも、次元が上がると集中は弱い
#
# 講義の表の「小さい κ で緩やかに集中、大きい κ で明確に集中」は、円周や $\mathbb{S}^2$ のような低い次元の話です。
# 集中の度合いを、平均方向とのコサインの期待値 $E[\mu^\top x]$（1 なら一点、0 なら一様）で比べます（`sphere.vmf_mean_resultant_length(d, κ)`）。

# %%
print("E[μ·x]        " + "".join(f"{f'κ = {k}':>10s}" for k in (1, 5, 10, 50, 500)))
for d in (2, 3, 16, 768):
    print(f"S^{d - 1:<4d}（d = {d:3d}）" + "".join(f"{float(sphere.vmf_mean_resultant_length(d, k)):10.4f}"
                                          for k in (1, 5, 10, 50, 500)))

# %% [markdown]
# $\mathbb{S}^2$ では κ = 5 で 0.80、κ = 50 で 0.98 と「明確に集中」していますが、$\mathbb{S}^{767}$（埋め込みが 768 次元のとき）では同じ κ で 0.0065 と 0.065、
# ほとんど一様です。高い次元では、同じ集中を得るのに次元と同じ程度の κ が要ります（κ = 500 でも 0.49）。講義の表の目安は、低い次元でだけ成り立ちます。

# %% [markdown]
# ### 「指数関数的な減衰（角度に対して）」を読む
#
# 講義の「vMFと正規分布の対応」の表は、正規分布の「指数関数的な減衰」に vMF の「指数関数的な減衰（角度に対して）」を対応させています。
# 正規分布の密度 $\exp(-x^2/(2\sigma^2))$ は、中心からの距離の **2乗** の指数関数です。vMF の対数密度は
#
# $$\log p(\theta) - \log p(0) = \kappa(\cos\theta - 1) \approx -\tfrac{\kappa}{2}\theta^2 \quad (\theta \text{ が小さいとき}),$$
#
# 平均方向の近くでは角度の2乗の指数関数 $\exp(-\kappa\theta^2/2)$、つまり θ についての **ガウス分布**（分散 $1/\kappa$）です。
# 表の2つの行は同じ意味で「指数関数的」で、平均方向の近くでは対応はそのまま成り立ちます。表の「分散 $\sigma^2$ ↔ 集中度の逆数 $1/\kappa$」の行も、
# 「等方的な広がり」の行（どの向きへのずれも同じ重み）も、この形から来ています。
# ただし「角度に比例して指数的に減る」（$p \propto e^{-c\theta}$）と読むと合いません。また、2つが違うのは **平均方向から遠いところ** です。
# 正規分布は下がり続けますが、vMF の減衰は止まり、反対側 θ = π でも $e^{-2\kappa}$ 倍までしか下がりません。κ = 10 で3つの形を並べます。

# %%
kappa_t = 10.0
for th in (0.1, 0.3, 0.6, 1.0, 2.0, np.pi):
    exact = kappa_t * (np.cos(th) - 1)                  # log p(theta) - log p(0) for vMF
    print(f"θ = {th:4.2f}: vMF {exact:8.3f} | ガウス -κθ²/2 {-kappa_t * th * th / 2:8.3f} | "
          f"角度に比例する形 -sqrt(κ) θ {-np.sqrt(kappa_t) * th:7.3f}")
print("（各列は log p(θ) - log p(0)）")
print(f"κ = 50 のピークの高さ: vMF {np.exp(sphere.vmf_log_density(np.array([[1.0, 0.0]]), mu, 50))[0]:.4f}、"
      f"N(0, 1/κ) {np.sqrt(50 / (2 * np.pi)):.4f}")


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
# 小さな θ では vMF の値はガウスの $-\kappa\theta^2/2$ とほぼ重なり、角度に比例する形（右の列）とは合いません。θ が大きくなるとガウスは下がり続け、
# vMF は $-2\kappa$ で止まります（θ = π の行）。対数軸の図で、vMF の曲線は θ = 0 のまわりで放物線、端で平らです。
# 講義の表は「平均方向の近くでは、どちらも中心からのずれの2乗の指数関数」という意味で正しく、違いは裾（平均方向から遠いところ）に出ます。
# κ が大きいほど放物線の部分が分布のほとんどを占め、κ = 50 のピークは $\mathcal{N}(0, 1/50)$ のピークよりわずかに低いだけです（出力の最後の行）。

# %% [markdown]
# ## 発展：残差の1歩を2次元で描く（読み飛ばしてよい）
#
# §1 の2つの残差の形を、1歩ずつ円周の上で比べます。2次元で1歩を描くと、この違いがそのまま見えます。$h$ と、$h$ から 100° 離れた向きのブロック出力 $f$（長さは上のブロックの $\lVert f(x_0)\rVert$ の中央値）について、
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
# ## まとめ
#
# | 見たもの | わかったこと | 節 |
# |---|---|---|
# | 残差の流れ | RMSNorm の pre-norm 残差ではノルムが $\sqrt{\text{深さ}}$ で伸び続ける。2つの正規化残差はノルムが常に 1 | §1 |
# | 講義の残差と nGPT の残差 | 講義の $\mathrm{Normalize}(x + \alpha f(x))$ では、回る角度が $\lVert f\rVert$ 次第で変わる。nGPT の $\mathrm{Norm}(h + \alpha(\mathrm{Norm}(f) - h))$ では α だけで決まる | §1 |
# | `03_vmf_distribution_plot` | 円周上の密度 $\exp(\kappa\cos\theta)/(2\pi I_0(\kappa))$。κ = 0 は一様、κ が大きいほど鋭い。どの κ でも積分は 1 | §2 |
# | κ → ∞ | 幅が $1/\sqrt\kappa$ で縮み、ピークが伸び、積分は 1 のまま：デルタ関数に近づく | §2 |
# | 「指数関数的な減衰」 | 平均方向の近くでは、正規分布も vMF もずれの2乗の指数関数（vMF は θ についてのガウス分布）。違いは裾で、vMF は $e^{-2\kappa}$ で止まる | §2 |
#
# 次のノート 14 では、$\mathbb{S}^2$ の上の vMF からサンプルを引き、ガウス分布から vMF が生まれる仕組みと、球面上の勾配法を見ます。

# %% [markdown]
# ## 理解度チェック
#
# **問1.** 講義の正規化残差 $\mathrm{Normalize}(x + \alpha f(x))$ で α = 0.1 に固定しても、ブロックの出力が 10 倍になると1段で回る角度が大きく変わるのはなぜですか。nGPT の形ではどうですか。
#
# <details><summary>答え</summary>
#
# $f \perp x$ のとき、講義の形で回る角度は $\arctan(\alpha\lVert f\rVert)$ で、α と $\lVert f\rVert$ の積で決まります。出力が 10 倍になれば、α を 10 倍にしたのと同じです。
# nGPT の形は $f$ をいったん正規化してから進むので、回る角度は $\operatorname{atan2}(\alpha, 1-\alpha)$ で、$\lVert f\rVert$ によりません。
#
# </details>
#
# **問2.** vMF の密度は「角度に対して指数関数的に減衰する」と言えますか。講義の表の正規分布の行と並べて答えてください。
#
# <details><summary>答え</summary>
#
# 正規分布の「指数関数的な減衰」と同じ意味、つまり「ずれの2乗の指数関数」という意味でなら、平均方向の近くでは言えます：$\log p(\theta) - \log p(0) = \kappa(\cos\theta - 1) \approx -\kappa\theta^2/2$。
# 「角度に比例して指数的に減る」（$e^{-c\theta}$）という意味では言えません。また、平均方向から遠いところでは正規分布と違い、減衰は止まって、反対側でも $e^{-2\kappa}$ 倍までしか下がりません。
#
# </details>
#
# **問3.** κ → ∞ で vMF がデルタ関数に近づく、とはどういうことですか。§2 の表のどの列で確かめましたか。
#
# <details><summary>答え</summary>
#
# 積分は 1 のまま（「積分」の列）、幅が 0 に（「θ の標準偏差」の列、$1/\sqrt\kappa$ と一致）、ピークが無限大に向かい（「ピークの高さ」の列）、
# 平均方向のどんな小さな近くにも、ほぼすべての確率が入るようになる（「|θ| < 0.05 の確率」の列が 1 に近づく）ことです。
#
# </details>

# %% [markdown]
# ## 練習問題：$\mathbb{S}^2$ の vMF：正規化定数と、平均方向とのコサインの期待値
#
# 解答セルの `raise NotImplementedError` を消して関数を書き、その下のチェックセルを実行してください。チェックは、あなたの関数とプロジェクトの関数
# （`sphere.vmf_log_normalizer(3, kappa)` と `sphere.vmf_mean_resultant_length(3, kappa)`）を同じ κ で呼び、「完全一致」「近い」「最大の差」を表にします。
# プロジェクトの関数を呼べば答えは出ますが、この練習の中身は、閉じた式を自分で導くことです。
#
# §2 の円周（$d = 2$）の正規化定数はベッセル関数 $I_0$ を含みましたが、$d = 3$（地球の表面のような $\mathbb{S}^2$）では初等関数で書けます。次の2つを書いてください。
#
# - `log_c3(kappa)`：$\mathbb{S}^2$ の vMF の正規化定数の対数 $\log C_3(\kappa)$。$C_3(\kappa)$ は $\int_{\mathbb{S}^2} C_3(\kappa)\exp(\kappa\,\mu^\top x)\,dA = 1$ となる数です。
# - `mean_cos_s2(kappa)`：vMF$(\mu, \kappa)$ に従う $x$ の、平均方向とのコサインの期待値 $E[\mu^\top x]$。
#
# κ は $10^{-6}$ から 1000 まで調べます（$5\times10^{-3}$ から $0.02$ の間も細かく調べるので、小さな κ 用の式と素直な式の境目の両側で比べられます）。κ = $10^{-6}$ では素直な式が桁落ちし（差分商で確かめようとしても、値の変化が丸め誤差に埋もれます）、κ = 1000 では `np.sinh` が溢れます。
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
#
# <details><summary>解答例（行き詰まったら）</summary>
#
# `notebooks/worked_solutions.md` の「13-1」にあります。チェックで2つとも「すべての点で一致しました」と出ると、ここにも表示されます。
#
# </details>

# %%
import exercises  # the check cells (notebooks/exercises.py)


# %%
def log_c3(kappa):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


def mean_cos_s2(kappa):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_13_vmf_s2(log_c3, mean_cos_s2)
