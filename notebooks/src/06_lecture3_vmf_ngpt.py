# %% [markdown]
# # 第3回 プラネタリウムの建設（後半）：vMF 分布と nGPT を PyTorch なしで
#
# **対応する講義:** 幾何学講義 第3回「プラネタリウムの建設: 球面へのパラダイムシフト」の本文：nGPT とその仮説、プラネタリウム・メタファー、
# von Mises–Fisher（vMF）分布と Softmax の関係、球面上の学習（リーマン勾配と射影勾配法）、球面設計の限界と曲率。
# 講義の4つのコード例は **ノート 04** で扱いました（このノートは 04 の続きで、04 の §1 の「接空間」と §3 の「残差」を使います）。
#
# **読む時間の目安：約 50 分**（コードの実行には数分かかります。microgpt を2回学習するので）。
#
# このノートで見られるもの：
#
# 1. $\mathbb{S}^2$ 上の vMF のサンプルと κ の推定。なぜ射影正規分布ではなく vMF か（講義の κ = ‖m‖/σ² は「条件付け」で厳密）、vMF が最大エントロピーの方向分布であること。
# 2. リーマン勾配＋リトラクションと、講義の疑似コードの射影勾配法（学習率 η のスライダーつき）。運動量が接空間から外れること。
# 3. microgpt を `norm="rmsnorm"` と `norm="sphere"`（nGPT）で学習し、損失、ノルムの分布、「高速化」の意味、講義の仮説と歴史を、ここで確かめられる範囲で。
# 4. **このモデルが論文から変えていること**：位置の扱い（学習する `wpe` と論文の RoPE）と MLP（ReLU と論文の SwiGLU）。
# 5. 講義の中心：softmax は vMF 混合モデルの事後確率で、microgpt の球面モードでは学習される $s_z$ が集中度 κ（温度 T のスライダーつき）。
# 6. プラネタリウム：学習した埋め込みの星図。コサインと内積が一致するのは単位ベクトルのときだけであること、cos = 1 / 0 / −1 の例、
#    このノートの学習から作ったプラネタリウムのページ（`planetarium.py`）。第1回の星空との違いと、メタファーの賞味期限。
# 7. 球面設計の限界：ノルムに意味がある場合。
# 8. 曲率の影響と双曲空間。
# 9. 講義のまとめの表に沿ったまとめ、理解度チェック、練習問題2題（正解すると解答例を開ける）。
#
# §1.1 には「予想してから確かめる」問いがあります。スライダーつきの図は、Jupyter で ipywidgets を入れて実行したときに動かせます。

# %%
import inspect
import json
import math
import shutil
import subprocess
import sys
import tempfile
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
from figures import (
    slider_figure,  # notebooks/figures.py: a figure with sliders in Jupyter, static when run headless
)
from IPython.display import HTML, Markdown, display
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

import microgpt
import model_config
import sphere
from harness.history import HISTORY_NAME, History
from sphere import geodesic_distance_np, l2_normalize_np, retract, tangent_project
from utils import softmax_np

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=6, suppress=False)

# %% [markdown]
# ## 1. $\mathbb{S}^2$ 上の vMF：サンプルと κ の推定
#
# vMF は方向統計学の標準的な分布で、講義は文献に Mardia & Jupp (2000) と、機械学習への応用として Banerjee et al. (2005) を挙げています。
# `sphere.vmf_sample` は Wood (1994) の棄却法で $\mathbb{S}^{d-1}$ 上の vMF からサンプルを引きます。$d = 3$ で、κ ごとに 1000 点ずつ描きます。
# プラネタリウムのドームに貼られた「星座」のまとまり具合です。視点は平均方向 μ の真上に置き、球面上の μ の位置を赤い星印で示します。

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
# サンプルから κ を推定し直します。`sphere.vmf_estimate_kappa` は Banerjee et al. (2005) の近似 $\hat\kappa = \bar R (d - \bar R^2)/(1 - \bar R^2)$ を使います。
# $\bar R$ はサンプル平均の長さです。左の図は真の κ と推定値で、$d = 3$ と $d = 16$、サンプル数 $n$ を変えて各 20 回の中央値と 10〜90% の幅を描きます。
# 右の図は $\bar R$ と理論値 $A_d(\kappa) = I_{d/2}(\kappa)/I_{d/2-1}(\kappa)$（`sphere.vmf_mean_resultant_length`）です。

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
# 同じ κ でも、次元が高いほど $\bar R$ は小さくなります。κ が小さいうちは $A_d(\kappa) \approx \kappa/d$ なので、高次元の球面では、同じ「まとまり」に見えるためにより大きな κ が要ります。
# サンプル数が少なく κ が小さいと、推定は上に偏ります。ランダムな点の平均も、わずかに長さを持つからです。

# %% [markdown]
# ### 1.1 なぜ vMF なのか：射影正規分布と、ガウス分布から生まれる vMF
#
# 球面上の分布を作るいちばん素直な方法は、講義も挙げるとおり、$\mathbb{R}^d$ の正規分布に従うベクトルを原点から球面へ射影することです（**射影正規分布**、projected normal）。
# 講義はそれを正当な選択肢と認めたうえで、「平均方向 $\boldsymbol\mu$ と集中度 $\kappa$ を直接指定でき、指数型分布族として解析しやすい」vMF を選びます。違いを数で見ます。
#
# - 中心が原点の正規分布 $N(\mathbf 0, \sigma^2 I)$ を射影すると、球面上の **一様分布** になります。サンプル平均の長さ $\bar R$ が 0 に近いことで確かめます。
# - 中心 $\mathbf m \ne \mathbf 0$ の $N(\mathbf m, \sigma^2 I)$ を射影した分布の密度は、$d = 2$ でも正規分布の累積分布関数 $\Phi$ を含む式になり、$\log p(\mathbf x)$ は $\mathbf x$ の簡単な関数になりません。
#   vMF の $\log p(\mathbf x) = \log C_d(\kappa) + \kappa\,\boldsymbol\mu^\top\mathbf x$ は $\mathbf x$ の **1次関数** で、μ と κ がそのまま読めます。これが指数型分布族の形です。
#
# 講義の NOTE「ガウスから誘導される方向分布」は、$N(\mathbf m, \sigma^2 I)$ から $\kappa = \lVert\mathbf m\rVert/\sigma^2$ の vMF が生まれると述べ、括弧で
# 「$\lVert\mathbf z\rVert = 1$ に条件付けた密度として見た場合」と断っています。ここには2つの別の操作が混ざっているので、分けて確かめます。
#
# 1. **条件付け**：$N(\mathbf m, \sigma^2 I)$ の密度を単位球面の上だけで見ると、$\lVert\mathbf x\rVert = 1$ では $-\lVert\mathbf x - \mathbf m\rVert^2/(2\sigma^2) = \mathbf m^\top\mathbf x/\sigma^2 + \text{定数}$ なので、
#    **どの次元でも厳密に** $\mathrm{vMF}(\mathbf m/\lVert\mathbf m\rVert,\ \lVert\mathbf m\rVert/\sigma^2)$ です。
# 2. **射影**：サンプル $\mathbf z$ を $\mathbf z/\lVert\mathbf z\rVert$ に縮めます。こちらが射影正規分布で、vMF とは別の分布です。
#
# **予想してから確かめる：** $\mathbb{S}^2$ で、$N(\mathbf m, \sigma^2 I)$ のサンプルを **射影** した点に vMF をあてはめると、推定した κ は講義の $\lVert\mathbf m\rVert/\sigma^2$ に一致するでしょうか。
#
# <details><summary>答え</summary>
#
# 一般には一致しません。$\lVert\mathbf m\rVert$ が $\sigma$ より十分大きいとき、射影した点の推定 κ はおよそ $\lVert\mathbf m\rVert^2/\sigma^2$ です。接方向のずれが $\sigma/\lVert\mathbf m\rVert$ 程度になるからです。
# $\lVert\mathbf m\rVert/\sigma^2$ に一致するのは、球面の近くのサンプルだけを残す **条件付け** のほうです。2つの式は $\lVert\mathbf m\rVert = 1$ のときだけ同じ値になります。下の表と図で確かめます。
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
# 原点中心の正規分布を射影すると、平均の長さはほぼ 0、つまり一様分布です（出力の1行目）。条件付けは厳密に vMF で、2行目の標準偏差は丸め誤差の大きさです。
# 球面の近くのサンプルから推定した κ は、講義の式 $\lVert\mathbf m\rVert/\sigma^2$ の破線の上に乗ります。残ったサンプルが少ない行ほどばらつきます。
# 射影した点の κ は破線から外れ、$\lVert\mathbf m\rVert$ が σ より十分大きい行では $\lVert\mathbf m\rVert^2/\sigma^2$（図の × 印）に近づきます。2つの式が重なるのは $\lVert\mathbf m\rVert = 1$ の行だけです。
#
# 講義の「大 κ かつ高次元の条件下では vMF 分布で近似できる」は射影正規分布の話で、そのときの κ は $\lVert\mathbf m\rVert/\sigma^2$ ではなく、およそ $\lVert\mathbf m\rVert^2/\sigma^2$ です。
# 「$\kappa = \lVert\mathbf m\rVert/\sigma^2$」は括弧の中の条件付けの読み方のほうで、こちらは近似ではなく厳密です。
#
# ### 1.2 vMF は最大エントロピーの方向分布
#
# 講義の NOTE「最大エントロピー原理」：平均 $\mathbb{E}[\mathbf x]$ が決まっているとき、球面上でエントロピーがいちばん大きい分布が vMF です。
# 円周 $\mathbb{S}^1$ で、平均合成ベクトル長 $R = \lVert\mathbb{E}[\mathbf x]\rVert$ が同じになるように合わせた6種類の分布のエントロピー $H = -\int p(\theta)\log p(\theta)\,d\theta$ を比べます。
# 積分は 4096 点の格子で数値的にとり、vMF は閉じた式 $H = -\log C_2(\kappa) - \kappa A_2(\kappa)$ とも照合します。
#
# - **vMF**（円周では von Mises 分布）：$A_2(\kappa) = R$ になる κ を二分法で求める。
# - **巻き込み正規分布**（wrapped normal）：$N(0, s^2)$ を $2\pi$ で巻いたもの。$R = e^{-s^2/2}$。
# - **射影正規分布**：$N((m, 0), I)$ を円周へ射影したもの（§1.1）。$R$ が合う $m$ を、閉じた式 $R(m) = \sqrt{\pi/8}\,m\,e^{-m^2/4}\big(I_0(m^2/4) + I_1(m^2/4)\big)$ から二分法で求める。
#   表の `max |R - target|` が、この式と数値積分の $R$ の一致を確かめています。
# - **巻き込みコーシー分布**：$p(\theta) = (1-\rho^2)/(2\pi(1 + \rho^2 - 2\rho\cos\theta))$、$R = \rho$。
# - **カージオイド分布**：$p(\theta) = (1 + 2\rho\cos\theta)/(2\pi)$、$R = \rho$。$\rho \le 1/2$ のときだけ密度が負になりません。
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
# 表のどの行でも、図のどの $R$ でも、vMF のエントロピーがいちばん大きくなっています（表の後の `True`。左の図は vMF との差で、どれも正）。
# 巻き込み正規分布と射影正規分布は vMF にかなり近く、円弧上の一様分布や、$R$ が大きいときの巻き込みコーシー分布は、同じ平均の長さでもずっと「仮定の多い」分布です。
# 講義の言う「最も仮定の少ない方向分布」はこの意味です。ただし制約がなければ、最大は円周上の一様分布の $\log 2\pi$ で（`uniform on the whole circle` の行）、
# vMF は「平均の向きと長さを決めた」という制約つきの最大です。

# %% [markdown]
# ## 2. リーマン勾配＋リトラクション と 射影勾配法
#
# 講義の「球面上の学習」：点 $x \in \mathbb{S}^{d-1}$ の接空間は $T_x\mathbb{S}^{d-1} = \{v : v^\top x = 0\}$ で（ノート 04 §1）、ユークリッド勾配 $g$ を接空間へ射影したものがリーマン勾配
# $\mathrm{grad}_S f = g - (g^\top x)\,x$ です（`sphere.tangent_project`）。
#
# - **リーマン勾配＋リトラクション**：$x \leftarrow R(x - \eta\,\mathrm{grad}_S f)$（`sphere.riemannian_sgd_step`）。$R$ は球面へ戻す写像、リトラクションで、
#   多様体最適化（講義の文献では Absil et al., 2008）の用語です。接平面内で1歩進むので、リトラクション前の長さの2乗は $1 + \eta^2 \lVert \mathrm{grad}_S f \rVert^2$：球面からのずれは $\eta$ の **2次** です。
# - **射影勾配法**（講義の疑似コード）：$x \leftarrow x - \eta g$、$x \leftarrow x/\lVert x\rVert$（`sphere.projected_sgd_step`）。$g$ の半径方向成分も $x$ を動かすので、ずれは $\eta$ の **1次** です。
#
# 例として $f(x) = -x^\top A x$（$A$ は対称行列）を $\mathbb{S}^{9}$ 上で最小化します。最小点は $A$ の最大固有ベクトルで、最小値は $-\lambda_{\max}$ です。

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
# どちらもリトラクションの後は厳密に球面上にあり、どちらも最小値へ収束します（`after 60 steps` の行）。$\eta \to 0$ では2つの1歩の差は $\eta^2$ の程度なので、
# 講義のとおり「学習率が十分小さければ、リーマン勾配降下法に近い挙動を示す」のです。違いは、リトラクション前のずれの **次数** に現れます。
#
# - 左の図は1歩のずれです。接平面内の1歩は傾き 2、ユークリッド勾配の1歩は傾き 1。射影勾配法の曲線の谷は、半径方向成分 $g^\top x > 0$ による1次の縮みと
#   2次の伸びが打ち消し合って、たまたまノルムが 1 に戻る $\eta$ です。
# - 中の図は学習の途中のずれです。最小点に近づくとリーマン勾配は 0 に向かうのでずれも消えますが、ユークリッド勾配 $g = -2Ax \approx -2\lambda_{\max} x$ は
#   ほぼ **半径方向だけ** になり、射影勾配法は毎回「$x$ を $1 + 2\eta\lambda_{\max}$ 倍に伸ばして正規化で戻す」ことを繰り返します（`last step` の行）。
# - 右の図では、$f(x) < 0$ になって以降は射影勾配法のほうが遅くなります。$g^\top x = 2f(x) < 0$ なので $x - \eta g$ は伸び、それを正規化で割り戻すとき、接方向の1歩も同じ比率で縮むからです。
#   最小点の近くでは、その比率は出力の最後の行の値です。
#
# 2次元で1歩を描くと、2つの1歩の違いがそのまま見えます。円周上の点 $x$ で、半径方向の成分を持つ勾配 $g$ について、2つの1歩とリトラクション前の点を描きます。
# Jupyter で実行すると、学習率 η をスライダーで動かせます。

# %%
def draw_one_step(eta):
    """One step from x = (1, 0) on the circle with a gradient g that has a radial part: the Euclidean step x - eta g
    and the Riemannian step x - eta grad_S f, each before and after the retraction."""
    x = np.array([1.0, 0.0])
    g2 = np.array([-1.5, -1.0])                      # radial part -1.5 (along x), tangent part -1.0
    euclid, riem = x - eta * g2, x - eta * tangent_project(x, g2)
    t = np.linspace(0, 2 * np.pi, 400)
    fig, ax = plt.subplots(figsize=(7.0, 6.4))
    ax.plot(np.cos(t), np.sin(t), color="0.8")
    ax.annotate("", xy=x - 0.5 * g2, xytext=x, arrowprops=dict(arrowstyle="->", color="0.4"))
    ax.text(*(x - 0.5 * g2 + np.array([0.03, 0.0])), "−g（半分に縮めて表示）", color="0.4", fontsize=9)
    for before, color, label in ((euclid, "tab:blue", "射影勾配法：x − η g"), (riem, "tab:orange", "リーマン勾配：x − η grad_S f")):
        after = retract(before)
        ax.plot(*before, "o", mfc="none", color=color, ms=9, label=f"{label}（リトラクション前、長さ {np.linalg.norm(before):.3f}）")
        ax.plot(*after, "o", color=color, ms=6, label=f"{label} → 球面に戻した点")
        ax.plot(*np.stack([before, after]).T, ":", color=color)
    ax.plot(*x, "ko", label="x（前）")
    angle = [np.degrees(np.arctan2(retract(p)[1], retract(p)[0])) for p in (euclid, riem)]
    ax.set(xlim=(0.2, 2.4), ylim=(-0.25, 1.3), aspect="equal", xticks=[], yticks=[],
           title=f"η = {eta:.3g}：円周上で進む角度 {angle[0]:.1f}°（射影勾配法）、{angle[1]:.1f}°（リーマン勾配）")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=8)
    plt.tight_layout()
    plt.show()


slider_figure(draw_one_step, {"eta": ("log", 0.01, 2.0, 0.3)}, description=["η"])

# %% [markdown]
# 勾配が $x$ の向きに負の成分を持つので、射影勾配法の1歩は $x$ を伸ばしてから縮め、円周上で進む角度が小さくなります（図のタイトル）。リーマン勾配の1歩は接線の上を進み、
# 戻すときの縮みは η の2次だけです。η を小さくすると2つの点は近づき、大きくすると離れます。
#
# リトラクションと、厳密な測地線の1歩（指数写像 `sphere.exp_map`）の差は η の3次です。

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
# 講義は、より厳密なリーマン最適化手法については Bonnabel (2013) などを参照、と続けます。ここでは、保証されないとはどういうことかを数で見ます。
# 重い球（heavy-ball）のモーメンタム $m \leftarrow \beta m + g$、$x \leftarrow R(x - \eta m)$（β = 0.9、η = 0.02）で同じ $f(x) = -x^\top A x$ を最小化し、
# 各ステップで運動量ベクトル $m$ のうち **半径方向の割合** $|m^\top x| / \lVert m\rVert$ を測ります。$m$ が接空間にあれば 0 です。
#
# - **射影勾配法＋モーメンタム**：$g$ はユークリッド勾配のまま。
# - **リーマン勾配＋モーメンタム**：$g$ を接空間へ射影してから積む。各 $g$ はその時点の接空間にありますが、$m$ は **過去の点** の接ベクトルの和なので、今の点の接空間からずれます。
# - **＋運動量の移送**：リトラクションの後で $m$ を新しい点の接空間へ射影する。いちばん簡単な「ベクトル移送」です。

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
# 出力の3行を、上から読みます。
#
# - **射影勾配法＋モーメンタム**：最小点に近づくと勾配がほぼ半径方向だけになり、それが積み重なって $m$ もほぼ半径方向になります。
#   $x - \eta m$ は大きく伸びてから正規化で縮められ（`last ||x - eta m||` の値）、そのとき接方向の1歩も同じ比率で縮むので、収束が大きく遅れます。
#   半径方向の運動量は、リトラクションで捨てられるだけの無駄な動きです。
# - **リーマン勾配＋モーメンタム**：積むのは接ベクトルでも、$m$ は接空間に残りません（`radial share` の中央値と最大値）。この例では収束は速いままですが、
#   $m$ が接空間にあるという保証はありません。講義の注意はこのことです。
# - **＋移送**：$m$ を毎回新しい接空間へ射影すると、割合は 0 のままです。ただし収束は移送なしより **遅く**、150 ステップ後の $f - \min f$ は移送なしの何倍にもなります（最後の行の比）。
#   $m$ を接空間に保つことと速く収束することは、別の性質です。移送は「運動量を接空間に保つ」ための操作で、速さを約束するものではありません。
#
# microgpt の Adam も同じ事情にあります。`microgpt.train(..., riemannian=True)`（コマンドラインでは `--riemannian`）は、Adam に渡す前に各重み行列の勾配を接空間へ射影します
# （`microgpt.project_grads`。上の「リーマン勾配＋モーメンタム」にあたる）。しかし Adam の1次・2次モーメントは移送されず、Adam は座標ごとに $\sqrt{\hat v}$ で割るので、
# 更新ベクトルは接ベクトルになりません。どちらの設定でも、球面制約を守っているのは各ステップの後のリトラクション（`microgpt.retract`）です。
# 学習率の掃引と 5 つのシードで比べた実験では、`--riemannian` の有無による差はシードのばらつきの範囲内でした
# （[`experiments/results/names/results.md`](../experiments/results/names/results.md)）。

# %% [markdown]
# ## 3. microgpt：RMSNorm と球面（nGPT）を学習で比べる
#
# 第22章の tiny GPT（`microgpt.py`）を2つのモードで学習します。
#
# - `norm="rmsnorm"`：元の microgpt。RMSNorm で、重みに制約はありません。
# - `norm="sphere"`：nGPT（Loshchilov et al., 2025）の球面制約。埋め込み・隠れ状態・重み行列のベクトルがすべて単位ノルムで、更新のたびにリトラクションで球面に戻します。
#
# 既定のコーパス（英語圏のファーストネーム）で、NumPy エンジン・バッチ 16・1500 ステップ。検証損失を、ニューラルネットなしの基準（一様・ユニグラム・文字バイグラム）と並べます。
# 学習中の重みのスナップショット（`harness.history.History`）も記録しておき、§6 でプラネタリウムのページを作ります。

# %%
docs = microgpt.load_corpus("names")
vocab = microgpt.build_vocab(docs)
train_docs, val_docs = microgpt.split_docs(docs, seed=42)
base = microgpt.baselines([microgpt.doc_tokens(d, vocab) for d in train_docs],
                          [microgpt.doc_tokens(d, vocab) for d in val_docs],
                          microgpt.GPTConfig(vocab_size=len(vocab) + 1))
grad_probe = [microgpt.doc_tokens(d, vocab) for d in val_docs[:64]]   # a fixed batch: the gradient's size (§3.2)
runs, grad_norms, histories = {}, {}, {}


class Probe:
    """An observer of train(), called twice a step: every 100 steps the norm of the whole gradient on
    the fixed batch, and the weights' snapshots for the planetarium."""
    def __init__(self, cfg, history):
        self.cfg, self.history, self.record = cfg, history, []

    def before_update(self, state, loss, grad):
        if state.step == 0:
            self.history.record(0, state.params)                  # the initial weights
        return False                                              # (True would stop training)

    def after_update(self, state, loss, drift):
        if state.step == 1 or state.step % 100 == 0:
            _, grads = microgpt.loss_and_grads(state.params, grad_probe, self.cfg, engine="numpy")
            self.record.append((state.step, float(np.sqrt(sum(np.sum(g * g) for g in grads.values())))))
        if self.history.due(state.step):
            self.history.record(state.step, state.params, drift)
        return False


for norm in ("rmsnorm", "sphere"):
    cfg = microgpt.GPTConfig(vocab_size=len(vocab) + 1, norm=norm)
    histories[norm] = History(cfg, vocab, 1500)    # about 50 snapshots of the weights, for the planetarium (§6)
    probe = Probe(cfg, histories[norm])
    runs[norm] = (cfg, microgpt.train(train_docs, val_docs, vocab, cfg, steps=1500, batch_size=16,
                                      engine="numpy", eval_every=50, seed=42, observer=probe))
    grad_norms[norm] = probe.record
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
# どちらのモードも 100 ステップ以内にバイグラムの基準を下回り、その後は同じような曲線をたどります（正確なステップと最終値は `first eval` の2行）。
# この小さなモデル（$C = 16$、1層）と短い学習では、球面モードが目に見えて速く学習するわけではありません。学習率の掃引と 5 つのシードで比べた実験
# （[`experiments/results/names/results.md`](../experiments/results/names/results.md)）でも、このスケールでは RMSNorm のほうが少し速く、少し低い損失に届きます。
# 講義の注意どおり、nGPT の「4～20倍」は大きなモデルでの報告で、高速化の理由もまだ仮説段階です。ここで確かめられるのは、球面制約が学習を壊さずに **厳密に** 保たれることです。
#
# 次に、学習後のモデルで **ノルムの分布** を比べます。検証用の名前 200 個を `microgpt.gpt_forward` に通し、残差の流れ（埋め込みの後、注意ブロックの後、MLP ブロックの後：記録 `acts.hidden`）の
# 各ベクトルのノルムと、各重み行列の「埋め込み次元に沿ったベクトル」（`microgpt.sphere_axes` の軸）のノルムを集めます。

# %%
val_tokens = [microgpt.doc_tokens(d, vocab) for d in val_docs[:200]]
block_size = runs["sphere"][0].block_size
inputs = [t[:-1][:block_size] for t in val_tokens]          # every position that predicts a next token
targets = [t[1:][:block_size] for t in val_tokens]
mask = np.zeros((len(inputs), max(len(t) for t in inputs)), dtype=bool)
target_ids = np.zeros(mask.shape, dtype=np.int64)
for b, (inp, tgt) in enumerate(zip(inputs, targets)):
    mask[b, :len(inp)] = True                                  # gpt_forward pads the shorter names at the end
    target_ids[b, :len(tgt)] = tgt
norm_data = {}
for norm, (cfg, st) in runs.items():
    _, acts = microgpt.gpt_forward(st.params, inputs, cfg)
    hidden = np.concatenate([np.linalg.norm(h, axis=-1)[mask] for h in acts.hidden])
    weights = np.concatenate([np.linalg.norm(st.params[k], axis=ax_) for k, ax_ in microgpt.sphere_axes(cfg).items()])
    norm_data[norm] = (hidden, weights)
    print(f"{norm:8s} hidden-state norms: min {hidden.min():.6f} max {hidden.max():.6f} "
          f"| weight-vector norms: min {weights.min():.6f} max {weights.max():.6f}")
    for stage, h in zip(("after the embedding", "after attention", "after the MLP"), acts.hidden):
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
# RMSNorm モードでは、埋め込みの直後の隠れ状態は RMSNorm の出力なので、ノルムがどれもほぼ $\sqrt{C} = 4$ です。`1e-5` のぶんだけ 4 よりわずかに小さくなります。
# その後の注意ブロックと MLP ブロックの残差加算で、ノルムは 4 より小さくも大きくもなります（段ごとの `min`, `median`, `max`）。重みのノルムも学習でばらばらになります。
# 球面モードでは、隠れ状態も重みも **すべてノルム 1** に並びます（`max | ||h|| - 1 |` の行）。ノルムは捨てられ、意味は「向き」だけが担う ── 講義のプラネタリウム（星の明るさは使わない）です。
#
# 両モデルが作る名前（温度 0.5）：

# %%
for norm, (cfg, st) in runs.items():
    print(f"{norm:8s}", ", ".join(microgpt.sample(st.params, cfg, vocab, num_samples=12, temperature=0.5, seed=1)))

# %% [markdown]
# ### 3.1 「高速化」の意味：ステップ数と、1 ステップの時間
#
# 講義の NOTE のとおり、nGPT の主張は「同じ精度に届くまでの **学習ステップ数** の削減」で、壁時計時間や FLOPs が同じだけ減るとは限りません。正規化のぶん、1 ステップの計算は増えるからです。
# 論文は、文脈が長いほどステップ数の削減が大きいと報告しています。ここの names は最長でも 12 トークン（BOS と 11 文字）、モデルは1層・$C = 16$ なので、その条件はまったく再現できません。
# ここで測れるのは、次の2つです。
#
# - 同じ検証損失に届くまでの **ステップ数**。検証損失は 50 ステップごとなので、50 ステップ刻みです。
# - **1 ステップの時間**。両モードを 150 ステップずつ、交互に 2 回学習し直し、各ステップの時間の中央値の、2 回のうち速いほうをとります。値はこのノートを実行するたびに少し変わります。

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

    class Clock:                                               # an observer: a time stamp after each step
        def before_update(self, state, loss, grad):
            return False

        def after_update(self, state, loss, drift):
            stamps.append(time.perf_counter())
            return False

    microgpt.train(train_docs, val_docs, vocab, cfg, steps=steps, batch_size=16, engine="numpy", eval_every=steps,
                   seed=42, observer=Clock())
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
# 表は、左半分がステップ数、右半分がそれを時間に直したものです。この小さなモデルでは、球面モードは **ステップ数でも遅く**（`rmsnorm/sphere` の列が 1 未満）、
# **1 ステップも重い**（`time per step` の行の比）ので、壁時計時間ではさらに差が開きます。講義の言う「総合的な効率改善の程度は、実装やハードウェアに依存する」の、小さなモデルでの姿です。
# 1 ステップの上乗せは正規化とリトラクションの費用で、その割合はモデルの大きさ、系列の長さ、行列積の速さで変わります。
#
# ### 3.2 なぜ高速化するのか：講義の4つの仮説を、ここで確かめられる範囲で
#
# 講義は高速化の理由として4つの仮説を挙げ、「仮説段階」と注意しています。1つずつ、このノートの道具で見られるものを測ります。
#
# - **勾配の安定化**（ノルムが固定されると、勾配のスケールも安定する）：§3 の学習の途中、100 ステップごとに、検証の名前 64 個の固定バッチで勾配全体のノルムを測っておきました。
# - **損失ランドスケープの改善**（局所解の構造が単純になる可能性）：ここでは測れません。ヘッセ行列や、多数の初期値からの比較が要ります。
# - **学習率の設定が容易**：記録済みの実験（`experiments/results/names/results.json`）の学習率の掃引で、5 つの学習率での最終検証損失を並べます。
# - **高次元の集中現象との相性**（高次元のデータは「自然に球面状に分布しやすい」）：ガウス分布のノルムの相対的なばらつきが、次元とともに縮むことを測ります。

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
# 出力の3つのかたまりを、仮説ごとに読みます。
#
# - **勾配の安定化**：この学習では、球面モードの勾配のノルムのほうがむしろ大きく変わります（`max / min over training` の値）。$s_z$ などの倍率が育ってロジットが鋭くなるぶんと考えられます。
#   この小さなモデルでは、仮説を支える様子は見えません。
# - **学習率の設定が容易**：記録済みの掃引では、5 つの学習率の最良と最悪の差（`worst - best`）は球面モードのほうが大きく、小さな学習率での悪化が目立ちます。ここでも仮説を支える結果ではありません。
# - **高次元の集中現象**：ノルムの相対的なばらつき（`std / mean`）は $1/\sqrt{2d}$ のように縮み、768 次元ではノルムがほとんど一定です。
#   高次元のガウス的なデータは「もともとほぼ球面の上にある」ので、球面制約で失う情報が少ない、というのがこの仮説の中身です。$d = 16$ の microgpt では、ばらつきはまだ残っています。
#
# 講義の CAUTION のとおり、これらは提案されている説明で、証明されたメカニズムではありません。小さなモデルでの結果は、大きなモデルでの報告を否定するものでもありません。
#
# ### 3.3 歴史的文脈：なぜ 2010 年代には普及しなかったか、そして今
#
# 講義は理由の1つ目に、NormFace（Wang et al., 2017）が指摘した「スケーリングと損失設計の非自明さ」を挙げます。その中身は、数で見るとはっきりします。
# 特徴ベクトルもクラス代表（ここでは `lm_head` の行）も単位ベクトルなら、ロジットはコサインで $[-1, 1]$ に収まります。するとどんなに上手に並べても、softmax の交差エントロピーには **下限** があります。
# $K$ クラスを互いにいちばん離れた配置（正単体：どの2つのコサインも $-1/(K-1)$）に置き、特徴が正解クラスの代表にぴったり重なったときが最良で、倍率 $s$ を掛けたロジット $s\cos\theta$ の損失は
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
# 倍率が 1 のままでは、完璧なモデルでも損失は `1 (s_z at init)` の行の下限より下がらず、これは文字バイグラムの基準とほとんど同じです（最後から2行目）。
# 正規化しただけのモデルは、数え上げの統計と同じ程度にしか当てられない、ということです。倍率を学習させれば下限は急速に下がります。
# microgpt の球面モードでは $s_z$ がこの役目を担い、学習で育った中央値での下限は、もう邪魔になりません（`median learned s_z` の行）。§5 で、この $s_z$ が vMF の集中度 κ だと見ます。
# 正規化を入れると「どのくらいの倍率を、どう学習させるか」を別に設計しなければならない ── NormFace が指摘したのはこのことでした。
#
# 講義の残りの2つの理由も、これまでに見たものにつながります。「球面制約を維持しながら効率的に最適化する実践的なレシピ」は、ノート 04 §3 の毎ステップのリトラクションと、
# §2 のリーマン勾配・運動量の扱いです。「相対的なオーバーヘッド」は §3.1 の 1 ステップの時間の比です。講義の CAUTION のとおり、これは「なぜ普及しなかったか」についての推測で、
# 球面上の最適化そのものは多様体最適化（Absil et al., 2008; Bonnabel, 2013）として研究されていました。
#
# 講義が挙げる「現在の技術」と、このプロジェクトでの対応：
#
# | 現在の技術 | このプロジェクト |
# |---|---|
# | AdamW などの最適化手法 | microgpt は Adam（`microgpt.adam_step`、学習率は 0 へ線形に減衰）で、重み減衰の引数はありません（出力の最後の行の引数の一覧）。球面モードでは重みのノルムが毎ステップ 1 に戻されるので、重み減衰が抑えるはずの「重みの伸び」そのものが起きません |
# | 残差接続 | `gpt` の `x + f(x)` と、`gpt_sphere` の nGPT の残差 $\mathrm{Norm}(h + \alpha(\mathrm{Norm}(f(h)) - h))$（ノート 04 §3） |
# | 混合精度学習 | ノート 04 §2 の float16：ノルムを float32 で計算してクランプする安全策。microgpt 自身は float64 で、`--dtype float32` も選べます |
# | 大規模 GPU メモリ | このプロジェクトは CPU だけで、バッチは名前 16 個程度です。ここでは関係しません |

# %% [markdown]
# ## 4. このモデルが nGPT の論文から変えていること、その理由
#
# microgpt の球面モード `gpt_sphere` は、nGPT の正規化の設計（すべてのベクトルを単位球面に置き、残差を $\mathrm{Norm}(h + \alpha(\mathrm{Norm}(f) - h))$ で進め、ロジットに $s_z$ を掛ける）を
# そのまま使います。しかし論文と同じではない点が2つあります。どちらも、第22章の参照実装（`gpt`）の部品を残したためです。球面モードと RMSNorm モードの違いを、正規化だけに絞って比べられるようにしています。
#
# | | nGPT の論文 | このプロジェクト | 変えると何が起きるか |
# |---|---|---|---|
# | 位置の情報 | RoPE：位置埋め込みを足さず、注意の $q$, $k$ を位置に応じて回転させる | 参照実装と同じく、学習する位置埋め込み `wpe` を `wte` に足してから正規化する（$h_0 = \mathrm{Norm}(\mathrm{wte}[t] + \mathrm{wpe}[p])$） | RoPE なら、入力の星 $h_0$ はトークンだけで決まり、位置は注意の中で **相対的な** ずれとしてだけ効く。`wpe` のパラメータ（`block_size` × $C$）もなくなる |
# | MLP | SwiGLU：$\mathrm{SiLU}(s_v \odot v) \odot (s_u \odot u)$ の2つの射影と2つの倍率。$\sqrt{d_{\text{model}}}$ の因子は SiLU のゲートに入る $s_v$ の側 | 参照実装と同じく ReLU の MLP で、倍率は $s_u$ だけ（初期値に $\sqrt{C}$） | SwiGLU ならゲートの射影の分だけパラメータが増え、$s_v$ の大きさが SiLU の曲がり方を決める。ReLU は正の数倍と入れ替えられるので、$s_u$ の共通の倍率は何も変えない（ノート 03 §7 の実験） |
#
# `wpe` を足してから正規化すると、同じ文字でも位置ごとに少し違う向きの星から出発します。学習した球面モデルで、文字ごとに、位置 0 の $h_0$ と位置 $p$ の $h_0$ のなす角を測ります。
# RoPE なら、この角は常に 0 です。

# %%
cfg_s, st_s = runs["sphere"]
labels = list(vocab) + ["BOS"]                                 # token ids 0..25 are the letters, 26 is BOS
wte_s, wpe_s = st_s.params["wte"], st_s.params["wpe"]
h0 = l2_normalize_np(wte_s[:, None, :] + wpe_s[None, :, :])   # (token, position, C): the starting star
turn = np.degrees(np.arccos(np.clip(np.sum(h0 * h0[:, :1], axis=-1), -1, 1)))   # angle to the same token at p = 0
print(f"angle between h0(token, p) and h0(token, 0), over the {len(labels)} tokens: median at p = 1 "
      f"{np.median(turn[:, 1]):.1f} deg, at p = 5 {np.median(turn[:, 5]):.1f} deg, largest over p {turn.max():.1f} deg")
norm_wte, norm_wpe = np.linalg.norm(wte_s, axis=1), np.linalg.norm(wpe_s, axis=1)
print(f"row norms: wte {norm_wte.min():.2f} .. {norm_wte.max():.2f}, wpe {norm_wpe.min():.2f} .. {norm_wpe.max():.2f} "
      "(both are unit vectors in sphere mode: retract normalizes their rows)")
print(f"parameters that RoPE would not need: wpe = block_size x C = {wpe_s.size}")

# %% [markdown]
# `wte` と `wpe` の行はどちらも単位ベクトルなので、足してから正規化した $h_0$ は、文字の星と位置の星の「中間」の向きになり、位置が変わると大きく回ります（出力の1行目）。
# 入力の星は「文字」ではなく「文字と位置の組」で、プラネタリウムの星図（§6）に描く `wte` の行は、そのうち文字の成分だけです。
# 論文のように RoPE を使えば、入力の星は文字だけで決まり、位置は注意のロジット $q^\top k$ の中で、2つの位置の差に応じた回転として効きます。
# このプロジェクトが `wpe` を残しているのは、第22章の `gpt` との差を正規化だけにしておくためで、どちらが学習に有利かを確かめたものではありません。

# %% [markdown]
# ## 5. 講義の中心：vMF と softmax ── ロジットは κ 倍されたコサイン
#
# 講義は、分類を「$\mathbf{x}$ を $K$ 個あるクラス代表ベクトル ${\mathbf{w}}_1,\dots ,{\mathbf{w}}_K$ のそれぞれと比較し」、$K$ 個の角度 $\theta_1, \dots, \theta_K$ を同時に計算する営みとして説明します。
# そして前提（クラス代表 $\boldsymbol\mu_k$ と入力 $\mathbf x$ が単位ノルム、ロジットがスケール付き内積）のもとで、
#
# $$p(k\mid \mathbf{x})=\frac{\exp (\kappa\,\boldsymbol{\mu}_k^{\top}\mathbf{x})}{\sum_j\exp (\kappa\,\boldsymbol{\mu}_j^{\top}\mathbf{x})}$$
#
# を「温度 $T=1/\kappa$ のSoftmax関数に対応する」と述べます。$\boldsymbol\mu_k^\top\mathbf x = \cos\theta_k$ なので、ロジットは $z_k = \kappa\cos\theta_k$、つまり **集中度 κ 倍されたコサイン** です。
#
# この式は、vMF の混合モデルにベイズの定理を当てはめたものと正確に一致します。クラス $k$ の点が $\mathrm{vMF}(\boldsymbol\mu_k, \kappa)$ から生まれ、どのクラスも事前確率 $\pi_k = 1/K$ で選ばれるとすると、
#
# $$p(k\mid\mathbf x) = \frac{\pi_k\,C_d(\kappa)\exp(\kappa\,\boldsymbol\mu_k^\top\mathbf x)}{\sum_j \pi_j\,C_d(\kappa)\exp(\kappa\,\boldsymbol\mu_j^\top\mathbf x)},$$
#
# で、$\pi_k$ と $C_d(\kappa)$ は $k$ によらないので約分され、上の softmax だけが残ります。講義の注意（「対応」であって「同一」ではない）が言うとおり、vMF 分布は球面上の **点 $\mathbf x$** の分布、
# softmax は **クラス $k$** の分布で、別物です。両者をつなぐのは「vMF 混合モデルのクラス事後確率」という読み方です。
# $\mathbb{S}^2$ 上の 4 クラス（κ = 5）で確かめます。事後確率は `sphere.vmf_log_density` からベイズの定理で、softmax は $\cos\theta_k$ を温度 $T = 1/\kappa$ で割って計算します。

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
# κ がクラス共通なら、事後確率と温度 $1/\kappa$ の softmax は丸め誤差の範囲で一致し、最大事後確率のクラスは「角度がいちばん小さいクラス」です（出力の1、2行目）。
# κ がクラスごとに違うと正規化定数 $C_d(\kappa_k)$ が約分されずに残り、$\mathrm{softmax}(\kappa_k\cos\theta_k)$ は、事前確率が等しい混合の事後確率とは一致しません。
# 一致するのは、事前確率が $\pi_k \propto 1/C_d(\kappa_k)$ の混合です（最後の行）。
#
# ### コサインと内積が同じになるのは、単位ベクトルのときだけ
#
# 講義の NOTE「単位正規化が前提」：コサイン類似度 $\mathbf u^\top\mathbf v/(\lVert\mathbf u\rVert\lVert\mathbf v\rVert)$ は、$\lVert\mathbf u\rVert = \lVert\mathbf v\rVert = 1$ のときだけ内積 $\mathbf u^\top\mathbf v$ に一致します。
# 上のロジット $\kappa\cos\theta_k$ が「内積」で書けるのも、この前提のおかげです。§3 で学習した2つのモデルの埋め込み `wte` で、内積で選んだ「いちばん近いトークン」とコサインで選んだものを比べます。
# rmsnorm モードの `wte` の行は正規化されていないので、ノルムのばらつきが内積の順位を動かします。

# %%
for norm, (_cfg, st) in runs.items():
    e = st.params["wte"]
    dots = e @ e.T
    cosines = dots / np.outer(np.linalg.norm(e, axis=1), np.linalg.norm(e, axis=1))
    gap = np.abs(dots - cosines).max()
    np.fill_diagonal(dots, -np.inf)
    np.fill_diagonal(cosines, -np.inf)
    by_dot, by_cos = dots.argmax(axis=1), cosines.argmax(axis=1)
    differ = [labels[i] for i in range(len(labels)) if by_dot[i] != by_cos[i]]
    print(f"{norm:8s} row norms {np.linalg.norm(e, axis=1).min():.3f} .. {np.linalg.norm(e, axis=1).max():.3f}; "
          f"max |u.v - cos| = {gap:.1e}; the nearest "
          f"token by inner product and by cosine differ for {len(differ)} of {len(labels)} tokens {differ[:8]}")
    if differ:
        i = labels.index(differ[0])
        print(f"         e.g. '{differ[0]}': by inner product '{labels[by_dot[i]]}' (u.v {dots[i, by_dot[i]]:.3f}, cos "
              f"{cosines[i, by_dot[i]]:.3f}); by cosine '{labels[by_cos[i]]}' (u.v {dots[i, by_cos[i]]:.3f}, cos "
              f"{cosines[i, by_cos[i]]:.3f})")

# %% [markdown]
# 球面モードの `wte` では、内積とコサインの差は丸め誤差で、「いちばん近いトークン」はどちらで選んでも同じです。rmsnorm モードでは行のノルムがばらつくので、内積はノルムの大きい行を
# 優遇し、いくつものトークンで選ばれる相手が変わります（出力の例の行：内積では近いが、コサインではそれほどでもない相手）。
# 球面制約のもとでは「コサイン類似度」と「内積」を区別する必要がなくなる ── 講義の「コサイン類似度と内積は同一である」は、この前提つきの主張です。
#
# ### microgpt の球面モード：$s_z$ が κ
#
# microgpt の球面モード（`norm="sphere"`）の出力層は、まさにこの形です。最後の隠れ状態 $h$ は単位ベクトル、出力埋め込み `lm_head` の各行 $\boldsymbol\mu_k$ も単位ベクトルなので、
# $\boldsymbol\mu_k^\top h = \cos\theta_k$ です。ロジットはそれに学習されるスケール $s_z$ を掛けたもの、$z_k = s_{z,k}\cos\theta_k$ です（`gpt_sphere` の最後の行）。
# つまり **$s_z$ が集中度 κ** です。ただし nGPT と同じく $s_z$ はトークンごとのベクトルなので、κ もトークンごとに違います（上の「κ がクラスごとに違う」場合）。
#
# §3 で学習した球面モデルで確かめます。$s_z$ は `model_config.effective_scales(params, cfg)["s_z"]` で読めます。nGPT の流儀で小さく保存されたパラメータに、
# 順伝播で掛け戻す倍率を掛けた値で、初期値は `cfg.sz_init` です。

# %%
s_z = model_config.effective_scales(st_s.params, cfg_s)["s_z"]
logits, acts = microgpt.gpt_forward(st_s.params, inputs, cfg_s)
h_out = acts.hidden[-1]                                        # the last residual-stream vector (unit in sphere mode)
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
# ロジットは丸め誤差なしに $s_z \cos\theta$ と一致します。学習で $s_z$ は初期値 1 から、トークンによって何倍にも育ちました（`s_z per token, sorted` の行）。
# コサインは $[-1, 1]$ にしか値を取らないので、κ = 1 のままではロジットの差は最大 2、確率の比は最大 $e^2$ 倍にしかなれません（最後の行）。ロジットの幅を作るのが $s_z$ の役目です。
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

# %% [markdown]
# 検証 NLL は T = 1、つまり学習したときの κ そのものでいちばん小さく、T を下げるとエントロピーが下がって名前はありふれた形に、T を上げると綴りが崩れていきます。
# §3 で名前の生成に使った T = 0.5 は、全トークンの κ を2倍にしたことになります。
#
# 名前の最初の文字（BOS の次）の分布で、温度の効果を図にします。左は学習された $s_z$、右は温度ごとの確率です。Jupyter で実行すると、温度 T をスライダーで動かせます。

# %%
bos = len(vocab)
first_logits, _ = microgpt.gpt_forward(st_s.params, [bos], cfg_s)      # position 0: the first letter of a name
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


def draw_temperature(T):
    """The distribution of a name's first letter at temperature T: softmax((s_z / T) cos theta), kappa = s_z / T."""
    p0 = softmax_np(first_logits[0] / T)
    order = np.argsort(-p0)
    fig, ax = plt.subplots(figsize=(12, 3.6))
    ax.bar(range(len(labels)), p0[order], color=[kind_color[kind[i]] for i in order])
    ax.set_xticks(range(len(labels)), [labels[i] for i in order], fontsize=8)
    entropy_T = -(p0 * np.log(p0)).sum()
    ax.set(xlabel="次のトークン（確率の大きい順）", ylabel="確率", ylim=(0, max(0.15, 1.15 * p0.max())),
           title=f"名前の最初の文字：T = {T:.2f}（κ の中央値 = {np.median(s_z) / T:.1f}）、エントロピー {entropy_T:.2f} nats")
    plt.show()


slider_figure(draw_temperature, {"T": ("log", 0.1, 5.0, 1.0)}, description=["T"])

# %% [markdown]
# 温度を下げる（κ を上げる）と、確率は角度の小さいトークンに集まり、上げる（κ を下げる）と一様に近づきます。
#
# トークンごとの $s_z$ の違いは、その出力トークンのロジットの幅の違いです。$s_z$ が大きいトークンほど、$\cos\theta_k$ の小さな違いが確率に大きく効きます。
# どのトークンの $s_z$ が大きくなるかはデータと学習の結果で（左の図）、この1回の学習から理由を言い切ることはできません。

# %% [markdown]
# ## 6. プラネタリウム：学習した埋め込みの星図
#
# 講義の対応表では、ドーム＝単位球面 $\mathbb{S}^{d-1}$、星＝データ点（埋め込みベクトル）、星座＝意味的なクラスター、星同士の角度＝類似度、星の明るさ＝「（この比喩では使わない。ノルムを捨てた）」でした。
# 球面モードの microgpt では、トークン埋め込み `wte` の 27 行（26 文字と BOS）が、まさに $\mathbb{S}^{15}$ 上の 27 個の星です。どの行もノルム 1 です。
#
# 星同士の角度を、コサイン類似度の行列で見ます。母音 a, e, i, o, u、子音、BOS の順に並べ、比較のため学習前（`microgpt.init_params`、同じシード）の行列も並べます。

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
# 学習前は cos が 0 のまわりにばらつくだけで、母音・子音のブロックの構造はありません（`before training` の行。16 次元のランダムな向きどうしの $1/\sqrt{16}$ と同じ程度）。
# 学習後は左上の母音のブロックが赤く、母音と子音の間は青くなりました。母音どうしは平均して近い向き、母音と子音は平均して離れた向きです（`after training` の行）。
# 1文字先を予測するモデルにとって、母音どうし・子音どうしは「次に来る文字」の傾向が似ているからだと考えられます。
#
# ### 角度が意味を担う：cos = 1、0、−1
#
# 講義は、コサインの3つの値を「同じ方向、完全に類似」「直交、無関係」「反対方向、対立」と読みます。学習した星の組から、コサインがいちばん大きい組、0 にいちばん近い組、
# いちばん小さい組を選んで、講義の表の形に並べます（表の数はこのセルが計算したもの）。

# %%
pairs_idx = np.triu_indices(len(labels), 1)
pair_cos = cos_wte[pairs_idx]
picks = {"cos θ = 1 に近い（同じ方向）": int(np.argmax(pair_cos)), "cos θ = 0 に近い（直交）": int(np.argmin(np.abs(pair_cos))),
         "cos θ = −1 に近い（反対方向）": int(np.argmin(pair_cos))}
rows = ["| 講義の読み方 | 学習した星の組 | cos θ | θ |", "|---|---|---|---|"]
for reading, k in picks.items():
    i, j = pairs_idx[0][k], pairs_idx[1][k]
    rows.append(f"| {reading} | `{labels[i]}` と `{labels[j]}` | {pair_cos[k]:+.3f} | {np.degrees(np.arccos(pair_cos[k])):.1f}° |")
display(Markdown("\n".join(rows)))
print(f"over all {pair_cos.size} pairs of stars: cos from {pair_cos.min():+.3f} to {pair_cos.max():+.3f}")

# %% [markdown]
# 学習した星にも、ほぼ同じ向きの組、ほぼ直交する組、かなり反対を向く組があります。ただし 27 個の星を 16 次元に置くと、ぴったり反対向き（cos = −1）の組はできにくく、
# いちばん小さいコサインでも −1 までは下がりません（表の下の行の範囲）。「同じ方向」の組が似た役割の文字になっているか、表の組を上の行列で確かめてみてください。
#
# 16 次元の球面は描けないので、3 次元に射影して「星図」にします。`wte` の行を主成分（平均を引いた行列の特異ベクトル）の上位 3 方向に射影し、射影した点をもう一度単位球面 $\mathbb{S}^2$ に正規化して、
# ワイヤーフレームのドームに置きます。上位 3 方向が説明する分散の割合も出力します。この割合が 1 より小さい分だけ、図の上の角度は本当の角度から歪んでいます。

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
# 左は母音の重心の方向から、右はその反対側からドームを見たものです。手前の半球の星を濃く、奥の半球の星を薄く描いています。
# 母音（赤い丸）は左のドームの手前に集まって一つの「星座」を作り、子音（青い三角）の多くは右のドーム、反対側の半球に広がります（`cos(vowel center, star)` の行）。
# ただし、上位 3 方向が説明するのは分散の一部で（`variance explained` の行）、この星図は 16 次元の配置の「影」です。正確な角度は、コサイン類似度の行列で読んでください。
# ノルムはすべて 1 なので、星の「明るさ」はありません。意味を担うのは配置（角度）だけです。
#
# ### このノートの学習を、プラネタリウムのページで再生する
#
# §3 の2つの学習で記録したスナップショットから、`planetarium.py` が1つの HTML ページを書き出します。星が落ち着いていく様子、Adam の一歩とリトラクション、
# 入力した名前の隠れ状態の道、vMF のキャップとしての次の文字の確率を、ドラッグで回せる球面の上に描くページです（docs/planetarium.md）。
# ページはネットワークもサーバーも使わず、ブラウザで開くだけで動きます。作るのはコマンドラインと同じ `python planetarium.py RUN_DIR ... --html PATH` です。

# %%
run_root = Path(tempfile.mkdtemp(prefix="microgpt-06-"))
for norm, history in histories.items():                      # one run folder per mode, holding its history.npz
    (run_root / norm).mkdir()
    history.save(str(run_root / norm / HISTORY_NAME), runs[norm][1].train_loss, runs[norm][1].val_loss)
page = ROOT / "notebooks" / "planetarium_lecture3.html"
made = subprocess.run([sys.executable, str(ROOT / "planetarium.py"), str(run_root / "rmsnorm"), str(run_root / "sphere"),
                       "--html", str(page)], capture_output=True, text=True, cwd=ROOT)
shutil.rmtree(run_root)                                       # the page holds everything it needs
assert made.returncode == 0, f"planetarium.py could not write the page: {made.stderr.strip()}"
print(f"snapshots per run: {[len(h) for h in histories.values()]}; page: notebooks/{page.name}, "
      f"{page.stat().st_size / 2**20:.1f} MiB")
display(HTML(f'<a href="{page.name}" target="_blank">プラネタリウムのページを開く（notebooks/{page.name}：このセルを実行すると作られます）</a>'))

# %% [markdown]
# ページは `notebooks/planetarium_lecture3.html` に書き出されます。リポジトリには入れていないので、このノートを自分で実行したときに作られ、上のリンクから開けます。
# 左右に rmsnorm と sphere の2つの学習が並び、スライダーで学習を再生できます。

# %% [markdown]
# ### 6.1 第1回の「星空」との違い：連続した夜空
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
# 弧の上のどの点もノルム 1 で、いちばん近い星は道のりの半ばで `a` から `k` に入れ替わり、2番目に近い星も途中で何度も変わっていきます。
# 途中の点はどの文字でもありませんが、夜空の中の「向き」として、どの星に近いかが連続的に決まります。予測に使われる $h$ も、出力の星のどれかにぴったり重なることはなく
# （出力の最後の行：いちばん近い星とのコサインの中央値は 1 よりずっと小さい）、星と星のあいだから、全部の星との角度で次の文字の確率が決まります。
# 離散的な星しかなかった第1回の星空では、こうした「あいだ」に意味はありませんでした。
#
# ### 6.2 プラネタリウムの賞味期限
#
# 講義の CAUTION のとおり、このメタファーは「空間全体が均一な曲率を持つ球面」であることを前提にしています。球面はどこでも同じ形をしていて、ドームのどこに星座を貼っても、
# 同じ大きさの三角形は同じ内角の和を持ちます（§8 で、ばらばらな位置で測って確かめます）。第12回の双曲空間のように曲率が負の空間や、場所によって曲率が変わる一般の多様体では、
# 「ドームに星を貼る」という単純な描像は成り立ちません。プラネタリウムは、球面という特殊な場合のための直感です。

# %% [markdown]
# ## 7. 球面設計の限界：ノルムに意味がある場合
#
# 講義の「球面設計の限界と注意点」は、ノルムを捨てると失われる情報がある、と表にまとめています。
#
# | タスク | ノルムの意味 | 球面制約の適否 | このノートで見たこと |
# |---|---|---|---|
# | 分類（表現の比較） | 不要なことが多い | ✓ 適している | §5：角度だけで事後確率（softmax）が決まる |
# | 回帰（連続値の予測） | 出力の大きさが重要 | ✗ 適さない | 単位ベクトル同士の内積は $[-1, 1]$ に収まる（§5 のコサイン）。大きさを出すには、球面の外に倍率を足すしかない |
# | 不確実性推定 | ノルムが確信度を表す場合 | △ タスク依存 | 下のセル：rmsnorm モードでは隠れ状態のノルムが確信度を運んでいる |
# | 生成モデル | 分布のスケールが重要 | △ 設計次第 | microgpt の球面モードも生成モデル。分布の鋭さは学習する倍率 $s_z$ が担う（§3.3、§5） |
#
# 「ノルムが確信度を表す」を、§3 の2つのモデルで確かめます。検証の名前の全位置で、最後の隠れ状態 $h$ のノルムと、次の文字の分布のエントロピー（小さいほど確信している）を比べます。
# 相関は順位相関（スピアマン）で測ります。

# %%
def rank_correlation(a, b):
    """Spearman's rank correlation (Pearson's correlation of the ranks; no ties in continuous data)."""
    return np.corrcoef(np.argsort(np.argsort(a)), np.argsort(np.argsort(b)))[0, 1]


for norm, (cfg, st) in runs.items():
    logits_v, acts_v = microgpt.gpt_forward(st.params, inputs, cfg)
    h_v = acts_v.hidden[-1][mask]
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
# rmsnorm モードでは、$h$ のノルムが大きい位置ほどエントロピーが小さい（確信している）という強い負の相関があります。このモデルは、確信度の一部を **ノルム** に載せています。
# 球面モードではノルムは常に 1 なので、その通り道はありません。代わりに、いちばん近い出力の星とのコサイン（角度）と、トークンごとの $s_z$ が確信度を運びます（同じく強い負の相関）。
# 球面制約は確信度を表せなくするわけではなく、**どこに載せるか** を変えるのです。ただし、ノルムそのものが答えであるタスク（回帰や、ノルムで不確実性を読む設計）では、
# 球面に載せた時点でその情報は消えます。講義の言う「タスク依存」「設計次第」はこのことです。

# %% [markdown]
# ## 8. 曲率の影響と双曲空間（講義の見通し）
#
# 球面は **正の曲率** を持つ多様体で、講義のとおり「三角形の内角の和が180°を超える」空間です。第12回で扱う双曲空間は **負の曲率** を持ち、内角の和は 180° に届きません。
# 同じ作り方で、3辺の長さが等しい測地線の三角形を、球面 $\mathbb{S}^2$ と双曲面に作り、内角の和を測ります。双曲面はミンコフスキー空間 $\mathbb{R}^{1,2}$ の中の
# $-t^2 + x^2 + y^2 = -1$（$t > 0$）で、内積を $\langle u, v\rangle = -u_0 v_0 + u_1 v_1 + u_2 v_2$ に取り替えると、球面とまったく同じ式で距離と角度が測れます。
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
# - **内角の和**：球面の三角形は 180° を超え、双曲面の三角形は 180° に届きません。差は三角形が大きいほど大きく、小さな三角形ではどちらも平面の 180° に近づきます（曲率は「小さな範囲では平ら」に見える）。
#   球面の八分円の三角形（3つの角がすべて直角）は 270° です。
# - **均一な曲率**：同じ三角形を球面のばらばらな位置に移しても、内角の和は丸め誤差まで同じです（§6.2 の「均一な曲率」）。
# - **円周の長さ**：半径 $r$ の円の周は、平面で $2\pi r$、球面で $2\pi\sin r$（$r = \pi/2$ を過ぎると縮む）、双曲面で $2\pi\sinh r$（$r$ とともに **指数的に** 増える）です。
#   木構造のように「深さとともに指数的に増える」階層を埋め込むには、中心から離れるほど空間が指数的に広がる双曲空間が向いている、というのが講義の見通し（第12回）の根拠です。
#   球面では逆に、遠くへ行くほど場所が足りなくなります。
# - **直線で結べない**：球面上の2点を結ぶ直線（弦）の中点は球面の内側にあり、正規化し直さないと球面に戻りません（講義の「遠い二点を直線で結ぶことができない」）。
#   正反対の2点では中点が原点になり、正規化の向きさえ決まりません（ノート 04 §2 のクランプする ε が守るのは、こういう点です）。
#
# 講義のまとめのとおり、空間の曲率は表現したい構造に応じて選ぶものです。球面（正の曲率）はノルムの混乱を断ち切るのに向き、階層構造には双曲空間（負の曲率）が向くことがあります。

# %% [markdown]
# ## まとめ：球面という設計の選択
#
# 講義の最後のまとめの表に、2つのノートで確かめたことを並べます。
#
# | 概念 | 講義の定義 | 本回での役割（講義） | ノート 04 と 06 で確かめたこと |
# |---|---|---|---|
# | 球面制約 | すべての埋め込みを単位球面 $\mathbb{S}^{d-1}$ 上に置く | ノルムの混乱を根本から断ち切る設計 | $\mathbb{R}^{768}$ の単位ベクトルは 767 次元の $\mathbb{S}^{767}$ の上にある（04 §1）。重みを球面に保つのは初期化ではなく毎ステップのリトラクション（04 §3）。リーマン勾配と射影勾配法の違いは η の次数に出る（06 §2） |
# | nGPT | 重みも埋め込みも完全に正規化した Transformer 設計 | 球面制約の実用例。学習効率の改善も報告 | この小さなモデルでは、ステップ数でも時間でも速くならない（06 §3.1）。仮説はここでは支えられない（06 §3.2）。論文との違いは位置（`wpe` と RoPE）と MLP（ReLU と SwiGLU）（06 §4） |
# | プラネタリウム・メタファー | 球面をドーム、埋め込みを星として捉える | 角度が意味を担うという直感の可視化 | 学習した `wte` の星図で、母音が1つの星座になる。コサインと内積は単位ベクトルのときだけ一致する（06 §5、§6） |
# | vMF 分布 | 球面上の方向分布。集中度 κ が分布の鋭さを制御 | Softmax との形式的対応。第4回と第7回に接続 | 平均方向の近くでは角度についてのガウス分布（04 §4）。softmax は vMF 混合の事後確率で、microgpt では $s_z$ が κ、温度は κ を割る（06 §5）。条件付けなら κ = ‖m‖/σ² は厳密（06 §1.1） |
# | 球面設計の限界 | ノルムに意味がある場合、回帰タスク等では適さない | 「球面が常に良い」という過剰一般化を防ぐ | rmsnorm モードでは隠れ状態のノルムが確信度を運ぶ。球面モードは角度と $s_z$ に載せ替える（06 §7）。曲率は表したい構造で選ぶ（06 §8） |

# %% [markdown]
# ## 理解度チェック
#
# **問1.** 射影勾配法（$x - \eta g$ を正規化）とリーマン勾配＋リトラクション（$x - \eta\,\mathrm{grad}_S f$ を正規化）で、リトラクション前に球面から外れる量は η の何次ですか。
# 運動量を使うと何が問題になりますか。
#
# <details><summary>答え</summary>
#
# 射影勾配法は1次（$g$ の半径方向成分が $x$ を伸び縮みさせる）、リーマン勾配は2次（接平面内の1歩は長さを $\sqrt{1+\eta^2\lVert\mathrm{grad}_S f\rVert^2}$ 倍にするだけ）です。
# η が小さければ2つの1歩はほぼ同じです。運動量ベクトルは過去の点の勾配の和なので、リーマン勾配を積んでも今の点の接空間には入りません。新しい点の接空間へ移送して初めて接ベクトルになります。
# Adam の座標ごとのスケーリングも接空間を保たないので、microgpt の `--riemannian` でも、球面制約を守っているのはリトラクションです。
#
# </details>
#
# **問2.** microgpt の球面モードで、サンプリング温度 $T = 0.5$ を使うことは、集中度 κ の言葉で言うと何をしていることになりますか。
# また、softmax が「等しい事前確率の vMF 混合モデルのクラス事後確率」と正確に一致するのはどんな条件のときですか。
#
# <details><summary>答え</summary>
#
# ロジットは $s_{z,k}\cos\theta_k$ で、$s_z$ が（トークンごとの）集中度 κ です。`softmax(logits / T)` は $\kappa_k = s_{z,k}/T$ の softmax なので、T = 0.5 はすべてのトークンの κ を2倍にして、
# 分布を角度の小さいトークンに集中させます。softmax$(\kappa\cos\theta_k)$ が等しい事前確率の vMF 混合の事後確率と一致するのは、入力とクラス代表がすべて単位ベクトルで、
# κ がすべてのクラスで共通のときです（正規化定数 $C_d(\kappa)$ が約分される）。κ がクラスごとに違うときは、事前確率を $\pi_k \propto 1/C_d(\kappa_k)$ にした混合の事後確率になります。
#
# </details>
#
# **問3.** 講義は、等方的なガウス分布 $N(\mathbf m, \sigma^2 I)$ から $\kappa = \lVert\mathbf m\rVert/\sigma^2$ の vMF が生まれると述べます。サンプル $\mathbf z$ を $\mathbf z/\lVert\mathbf z\rVert$ と射影した点の分布は、その vMF ですか。
#
# <details><summary>答え</summary>
#
# 違います。射影した点の分布は射影正規分布で、vMF とは別の分布です。$\lVert\mathbf m\rVert$ が $\sigma$ より十分大きいときは vMF で近似でき、その κ はおよそ $\lVert\mathbf m\rVert^2/\sigma^2$ です。
# $\kappa = \lVert\mathbf m\rVert/\sigma^2$ の vMF になるのは、ガウス分布の密度を単位球面の上だけで見たとき（$\lVert\mathbf z\rVert = 1$ に条件付けたとき）で、こちらはどの次元でも厳密です（§1.1）。
#
# </details>
#
# **問4.** rmsnorm モードの埋め込みで「内積がいちばん大きいトークン」と「コサインがいちばん大きいトークン」が違うことがあるのはなぜですか。球面モードではどうですか。
#
# <details><summary>答え</summary>
#
# 内積はコサインにノルムの積を掛けたものなので、rmsnorm モードのようにノルムがばらつくと、ノルムの大きい行が内積で優遇されます。球面モードではどの行もノルム 1 なので、
# 内積とコサインは丸め誤差まで一致し、選ばれるトークンも同じです（§5）。
#
# </details>
#
# **問5.** microgpt の球面モードは、入力の星を $\mathrm{Norm}(\mathrm{wte}[t] + \mathrm{wpe}[p])$ で作ります。nGPT の論文のように RoPE を使うと、入力の星と位置の情報はどう変わりますか。
#
# <details><summary>答え</summary>
#
# RoPE では位置埋め込みを足さないので、入力の星はトークンだけで決まり、同じ文字はどの位置でも同じ向きから出発します（§4 で測った、位置による角度は 0 になる）。
# 位置は注意の $q$ と $k$ を位置に応じて回転させることで入り、ロジット $q^\top k$ には2つの位置の **差** だけが効きます。学習する `wpe`（`block_size` × $C$ のパラメータ）も要らなくなります。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を消して関数を書き、その下のチェックセルを実行してください。チェックは、シード固定の入力であなたの関数を呼び終えてから、
# プロジェクトの逆伝播の関数や `backward()` で期待する答えを計算して比べ、正解 / 不正解 / 未回答 を表示します。正解すると、その下に解答例（折りたたみ）が出ます。
#
# - 答えそのものを計算してしまうプロジェクトの関数と `backward()` は、あなたの関数が動いている間は使えません（呼ぶと 不正解。あらかじめ取ったコピーも見分けます）。
# - 数値微分では正解になりません。チェックは、正規化のクランプの屈折点のすぐ上と下（$\lVert h\rVert$ が ε の $1 \pm 10^{-9}$ 倍）と、ロジットが 1000 近くまでくる $s_z = 1000$ や κ = 1000 で、
#   相対誤差 $10^{-12}$ まで比べます。
# - これらは思いとどまらせるための仕組みで、防ぎきるものではありません。式を自分で導くことが、この練習の中身です。
#
# ### 練習問題 1：球面モードの出力層の勾配
#
# microgpt の球面モードの出力層は、最後の隠れ状態 $h$ を正規化し、`lm_head` の各行とのコサインに $s_z$ を掛けてロジットにします（§5）。損失は正解トークン `target` の交差エントロピーです：
#
# $$\mathrm{loss} = -\log\mathrm{softmax}\big(s_z \odot (W\,\mathrm{Norm}(h))\big)_{\text{target}},\qquad \mathrm{Norm}(h) = h/\max(\lVert h\rVert, 10^{-12}).$$
#
# `h`（形 `(d,)`、正規化する **前** のベクトル）、`lm_head`（形 `(V, d)`、行は単位ベクトル）、`s_z`（形 `(V,)`）、`target`（整数）から、
# $\partial\,\mathrm{loss}/\partial h$ と $\partial\,\mathrm{loss}/\partial s_z$ の組を返す関数 `readout_grad(h, lm_head, s_z, target)` を書いてください。
# 前者は、学習で $h$ に届く勾配、後者は κ（$s_z$）を育てる勾配です。
#
# <details><summary>ヒント 1</summary>
#
# 段を順にさかのぼります：交差エントロピー → ロジット $z$ → コサイン（と $s_z$） → $\mathrm{Norm}(h)$ → $h$。最初の段はノート 02 の練習問題 1、最後の段はノート 04 の練習問題 1 で求めたものです。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $z_k = s_{z,k}\cos_k$ は、$s_{z,k}$ と $\cos_k$ の積です。積の微分で、$s_z$ への勾配と $\cos$ への勾配の両方が出ます。$s_z = 1000$ では、softmax の最大値を引くのを忘れないでください。
#
# </details>

# %%
import exercises  # the check cells (notebooks/exercises.py)


# %%
def readout_grad(h, lm_head, s_z, target):
    # ここに解答を書く (write your answer here): return (d loss / d h, d loss / d s_z)
    raise NotImplementedError

# %%
exercises.check_06_readout_grad(readout_grad)

# %% [markdown]
# ### 練習問題 2：vMF 混合の事後確率の勾配
#
# §5 の混合モデル（クラス $k$ の点が $\mathrm{vMF}(\boldsymbol\mu_k, \kappa_k)$ から生まれ、クラスが事前確率 $\pi_k$ で選ばれる）で、点 $\mathbf x$ を球面の上で動かすと、
# クラス $k$ の事後確率 $p(k\mid\mathbf x)$ はどう変わるでしょうか。球面の上の点を、microgpt と同じく、正規化する前のベクトル $\mathbf r$ から $\mathbf x = \mathrm{Norm}(\mathbf r)$ で作ります。
# `r`（形 `(d,)`）、`mus`（形 `(K, d)`、行は単位ベクトル）、`kappas` と `priors`（形 `(K,)`）、クラスの番号 `k` から、$\log p(k\mid\mathrm{Norm}(\mathbf r))$ の $\mathbf r$ についての勾配
# （形 `(d,)`）を返す関数 `vmf_posterior_grad(r, mus, kappas, priors, k)` を書いてください。$\lVert\mathbf r\rVert = 1$ では、それがリーマン勾配（§2）です。
#
# 事後確率そのものは、§5 の `mixture_posterior` で計算してかまいません（`x[None]` を渡すと形 `(1, K)` で返ります）。κ は 1000 まで調べるので、事後確率は対数のまま計算してください
# （`mixture_posterior` はそうしています）。チェックは、$\log p(k\mid\mathbf x)$ を `Value` で組んで `backward()` したものと比べます。
#
# この勾配は、microgpt の球面モードで最後の隠れ状態に届く勾配と同じ形です。練習問題 1 の損失は、κ を $s_z$ に、事前確率を $1/C_d(\kappa_k)$ に比例させた混合の、この事後確率の $-\log$ です（§5）。
#
# <details><summary>ヒント 1</summary>
#
# $\log p(k\mid\mathbf x) = z_k - \log\sum_j e^{z_j}$ と書けます。$z_j$ は $\log\pi_j$、$\log C_d(\kappa_j)$ と、$\mathbf x$ に依存する項の和です。どの項が $\mathbf x$ によりますか。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $\log\sum_j e^{z_j}$ の勾配は、各 $z_j$ の勾配を事後確率で重み付けした平均です（ノート 02 の練習問題 1 と同じ形）。$\mathbf x$ についての勾配が出たら、$\mathrm{Norm}$ の逆伝播で $\mathbf r$ まで戻します。
#
# </details>

# %%
def vmf_posterior_grad(r, mus, kappas, priors, k):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_06_vmf_posterior_grad(vmf_posterior_grad)
