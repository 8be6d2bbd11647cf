# %% [markdown]
# # 第3回 プラネタリウムの建設（4）：球面上の vMF 分布と、球面上の勾配法
#
# （目安：本編 約40分、練習問題 約22分）
#
# **対応する講義:** 幾何学講義 第3回の「von Mises-Fisher 分布」（NOTE「ガウスから誘導される方向分布」「最大エントロピー原理」）と
# 「球面上の学習」（リーマン勾配と、正規化による近似＝射影勾配法）。ノート 13 の続きです（ノート 11 の「接空間」を使います）。
#
# このノートで見るもの：
#
# 1. $\mathbb{S}^2$ 上の vMF のサンプルと、κ の推定（推定量を自分で書く）。
# 2. リーマン勾配＋リトラクションと、講義の疑似コードの射影勾配法（2つの1歩を自分で書く）。
# 3. **発展**（読み飛ばしてかまいません）：ガウス分布から生まれる vMF の集中度（条件付けなら講義の $\lVert\mathbf m\rVert/\sigma^2$ が厳密、射影なら次元の項がつく）。
#    vMF が最大エントロピーの方向分布であること（6種類の分布を比べる）。§2 の2つの1歩の図（学習率 η のスライダーつき）。
# 4. まとめ、理解度チェック、練習問題。
#
# 発展には「予想してから確かめる」問いがあります。

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

import math

import exercises  # notebooks/exercises.py: the checks of the build steps
import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np
from figures import (
    slider_figure,  # notebooks/figures.py: a figure with sliders in Jupyter, static when run headless
)

import sphere
from sphere import geodesic_distance_np, l2_normalize_np, retract, tangent_project

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=6, suppress=False)

# %% [markdown]
# ## 1. $\mathbb{S}^2$ 上の vMF：サンプルと κ の推定
#
# vMF は方向統計学の標準的な分布で、講義は文献に Mardia & Jupp (2000) と、機械学習への応用として Banerjee et al. (2005) を挙げています。
# `sphere.vmf_sample` は Wood (1994) の棄却法で $\mathbb{S}^{d-1}$ 上の vMF からサンプルを引きます。$d = 3$ で、κ ごとに 1000 点ずつ描きます。
# プラネタリウムのドームに貼られた「星座」のまとまり具合です。視点は平均方向 μ の真上に置き、球面上の μ の位置を赤い星印で示します。
# 真上から見ると裏側の半球の点が透けて重なるので、描くのは手前の半球（$\mu^\top x > 0$）の点だけにし、その割合をタイトルに書きます（一様な κ = 0 なら半分）。

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
    front = s @ mu3 > 0                              # seen along mu, the back hemisphere would show through
    ax.scatter(*s[front].T, s=3, alpha=0.6, label="サンプル（手前の半球）")
    ax.quiver(0, 0, 0, *(1.3 * mu3), color="tab:red", lw=2, arrow_length_ratio=0.12)
    ax.scatter(*mu3, s=260, marker="*", color="tab:red", edgecolor="k", linewidth=0.8, depthshade=False,
               label="平均方向 μ（球面上の位置）")
    ax.set(title=f"$S^2$ 上の vMF、κ = {k}\n手前の半球に {front.mean():.0%}", xlabel="x", ylabel="y", zlabel="z",
           xlim=(-1, 1), ylim=(-1, 1), zlim=(-1, 1), box_aspect=(1, 1, 1),
           xticks=[-1, 0, 1], yticks=[-1, 0, 1], zticks=[-1, 0, 1])
    ax.view_init(elev=np.degrees(np.arcsin(mu3[2])), azim=np.degrees(np.arctan2(mu3[1], mu3[0])))  # look along mu
    ax.legend(loc="upper left", fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# サンプルから κ を推定し直します。Banerjee et al. (2005) の近似 $\hat\kappa = \bar R (d - \bar R^2)/(1 - \bar R^2)$ を使います。
# $\bar R$ はサンプル平均の長さ、$d$ はベクトルの成分の数（$\mathbb{S}^{d-1}$ の $d$）です。
#
# **組み立て（1）：κ の推定。** `estimate_kappa(samples)` を書いてください。`samples` は単位ベクトルを行に並べた配列（n 行 × d 列）で、
# 平均方向 $\hat\mu = \bar{\mathbf x}/\bar R$ と $\hat\kappa$ の組 `(mu_hat, kappa_hat)` を返します。チェックは `sphere.vmf_estimate_kappa` と、
# $d = 3$ と $16$、κ = 0.1（$\bar R$ がほぼ 0）から $10^4$（$1 - \bar R^2$ が桁落ちする）まで、サンプル2個の場合も比べます。
#
# <details><summary>ヒント 1</summary>
#
# `mean = samples.mean(axis=0)`、その長さ `r = np.linalg.norm(mean)` が $\bar R$ です。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# `d` は `samples.shape[1]` です。$\hat\kappa$ の式の $d$ は球面の次元 $d - 1$ ではありません。解答例は `notebooks/worked_solutions.md` の「14-2」にあります。
#
# </details>

# %%
def estimate_kappa(samples):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
if not exercises.check_14_estimate_kappa(estimate_kappa):   # not written yet, or not yet right:
    estimate_kappa = sphere.vmf_estimate_kappa              # the rest goes on with the reference
    print("この先は参照の sphere.vmf_estimate_kappa で続けます")

# %% [markdown]
# 自分の `estimate_kappa` は、発展で2回使います。真の κ と比べる図と、ガウス分布から生まれる方向分布の κ の推定です。

# %% [markdown]
# ## 2. リーマン勾配＋リトラクション と 射影勾配法
#
# 講義の「球面上の学習：幾何学的な意味」：勾配の方向のうち、球面に沿う成分だけが点を球面の上で動かします。点 $x \in \mathbb{S}^{d-1}$ の接空間は $T_x\mathbb{S}^{d-1} = \{v : v^\top x = 0\}$ で（ノート 11 §1）、ユークリッド勾配 $g$ を接空間へ射影したものがリーマン勾配
# $\mathrm{grad}_S f = g - (g^\top x)\,x$ です（`sphere.tangent_project`）。
#
# - **リーマン勾配＋リトラクション**（リーマン最適化）：$x \leftarrow R(x - \eta\,\mathrm{grad}_S f)$（`sphere.riemannian_sgd_step`）。$R$ は球面へ戻す写像、リトラクションで、
#   多様体最適化（講義の文献では Absil et al., 2008）の用語です。接平面内で1歩進むので、リトラクション前の長さの2乗は $1 + \eta^2 \lVert \mathrm{grad}_S f \rVert^2$：球面からのずれは $\eta$ の **2次** です。
# - **射影勾配法**（講義の疑似コード、「正規化による近似」）：$x \leftarrow x - \eta g$、$x \leftarrow x/\lVert x\rVert$（`sphere.projected_sgd_step`）。$g$ の半径方向成分も $x$ を動かすので、ずれは $\eta$ の **1次** です。
#
# 講義の文献の多様体上の確率的勾配降下法（Bonnabel, 2013）も、行列の多様体（Stiefel 多様体、Grassmann 多様体）の上の最適化も、この2つの形の延長にあります。
#
# **組み立て（2）：球面上の2つの1歩。** `riemannian_step(x, g, lr)` と `projected_step(x, g, lr)` を書いてください。`x` は単位ベクトル、`g` はユークリッド勾配で、
# どちらもリトラクション（長さで割って球面へ戻す）の後の新しい点を返します。チェックは `sphere.riemannian_sgd_step` と `sphere.projected_sgd_step` と、
# 半径方向の成分を持つ勾配、半径方向だけの勾配、接ベクトルの勾配で、η = 0.001 から 2 まで比べます。
#
# <details><summary>ヒント 1</summary>
#
# リーマン勾配は $g - (g^\top x)\,x$（`g @ x` が $g^\top x$）。2つの関数の違いは、これを使うか $g$ をそのまま使うかだけです。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# `y = x - lr * ...` の後で `y / np.linalg.norm(y)` を返します。解答例は `notebooks/worked_solutions.md` の「14-1」にあります。
#
# </details>

# %%
def riemannian_step(x, g, lr):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


def projected_step(x, g, lr):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
if not exercises.check_14_sphere_steps(riemannian_step, projected_step):   # not yet right:
    riemannian_step, projected_step = sphere.riemannian_sgd_step, sphere.projected_sgd_step
    print("この先は参照の sphere.riemannian_sgd_step と sphere.projected_sgd_step で続けます")

# %% [markdown]
# 例として $f(x) = -x^\top A x$（$A$ は対称行列）を $\mathbb{S}^{9}$ 上で、自分の2つの1歩で最小化します。最小点は $A$ の最大固有ベクトルで、最小値は $-\lambda_{\max}$ です。

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
print(f"ユークリッド勾配の半径方向の成分 g・x = {g @ x_start:.3f}、|g| = {np.linalg.norm(g):.3f}、"
      f"リーマン勾配の大きさ |grad_S| = {np.linalg.norm(tangent_project(x_start, g)):.3f}")

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
    xr = riemannian_step(xr, euclid_grad(xr), lr)
    xp = projected_step(xp, euclid_grad(xp), lr)
    hist["riem"].append(f(xr))
    hist["proj"].append(f(xp))
print(f"60 ステップ後: f = {hist['riem'][-1]:.6f}（リーマン勾配）、{hist['proj'][-1]:.6f}（射影勾配法）、"
      f"最小値 -λ_max = {-lam_max:.6f}。|x| はそれぞれ {np.linalg.norm(xr):.15f}、{np.linalg.norm(xp):.15f}")
print(f"最後の1歩のリトラクション前のずれ: {drift['riem'][-1]:.1e}（リーマン勾配）、{drift['proj'][-1]:.3f}（射影勾配法）。"
      f"最小点では g = -2 λ_max x が半径方向だけなので、射影勾配法のずれ -> 2 η λ_max = {2 * lr * lam_max:.3f}")
print(f"最小点の近くで射影勾配法が球面に沿って進む距離は、リーマン勾配の 1 / (1 + 2 η λ_max) = "
      f"{1 / (1 + 2 * lr * lam_max):.3f} 倍")

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
# どちらもリトラクションの後は厳密に球面上にあり、どちらも最小値へ収束します（「60 ステップ後」の行）。$\eta \to 0$ では2つの1歩の差は $\eta^2$ の程度なので、
# 講義のとおり「学習率が十分小さければ、リーマン勾配降下法に近い挙動を示す」のです。違いは、リトラクション前のずれの **次数** に現れます。
#
# - 左の図は1歩のずれです。接平面内の1歩は傾き 2、ユークリッド勾配の1歩は傾き 1。射影勾配法の曲線の谷は、半径方向成分 $g^\top x > 0$ による1次の縮みと
#   2次の伸びが打ち消し合って、たまたまノルムが 1 に戻る $\eta$ です。
# - 中の図は学習の途中のずれです。最小点に近づくとリーマン勾配は 0 に向かうのでずれも消えますが、ユークリッド勾配 $g = -2Ax \approx -2\lambda_{\max} x$ は
#   ほぼ **半径方向だけ** になり、射影勾配法は毎回「$x$ を $1 + 2\eta\lambda_{\max}$ 倍に伸ばして正規化で戻す」ことを繰り返します（「最後の1歩」の行）。
# - 右の図では、$f(x) < 0$ になって以降は射影勾配法のほうが遅くなります。$g^\top x = 2f(x) < 0$ なので $x - \eta g$ は伸び、それを正規化で割り戻すとき、接方向の1歩も同じ比率で縮むからです。
#   最小点の近くでは、その比率は出力の最後の行の値です。
#
# 2つの1歩を2次元で描いた図（η のスライダーつき）と、リトラクションと指数写像の差は、発展にあります。

# %% [markdown]
# ## 発展：なぜ vMF なのか（読み飛ばしてよい）
#
# §1 の自分の `estimate_kappa` を真の κ と比べてから、講義が球面上の分布に vMF を選ぶ理由を、2つの面から数で確かめます。ガウス分布から生まれる方向分布と、最大エントロピーです。最後に §2 の2つの1歩を2次元の図で見ます。

# %% [markdown]
# ### 推定した κ と真の κ
#
# 自分の `estimate_kappa` で推定します。左の図は真の κ と推定値で、$d = 3$ と $d = 16$、サンプル数 $n$ を変えて各 20 回の中央値と 10〜90% の幅を描きます。
# 右の図は $\bar R$ と理論値 $A_d(\kappa) = I_{d/2}(\kappa)/I_{d/2-1}(\kappa)$（`sphere.vmf_mean_resultant_length`）です。

# %%
true_kappas = np.array([0.5, 1, 2, 5, 10, 20, 50, 100, 200])
rng = np.random.default_rng(6)
fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
for d_, marker in ((3, "o"), (16, "s")):
    mu_d = np.zeros(d_)
    mu_d[0] = 1.0
    for n, ls in ((100, ":"), (10000, "-")):
        est = np.array([[estimate_kappa(sphere.vmf_sample(mu_d, k, n, rng))[1] for _ in range(20)]
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
            title="サンプルから推定した集中度 κ（中央値と 10〜90% の幅）")
axes[0].legend(fontsize=8)
axes[1].set(xlabel="集中度 κ", ylabel="E[μ·x]", title="平均合成ベクトル長 $A_d(\\kappa)$ とサンプル")
axes[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# 同じ κ でも、次元が高いほど $\bar R$ は小さくなります。κ が小さいうちは $A_d(\kappa) \approx \kappa/d$ なので、高次元の球面では、同じ「まとまり」に見えるためにより大きな κ が要ります。
# サンプル数が少なく κ が小さいと、推定は上に偏ります。ランダムな点の平均も、わずかに長さを持つからです。


# %% [markdown]
# ### なぜ vMF なのか：射影正規分布と、ガウス分布から生まれる vMF
#
# 講義の「なぜ球面上の確率分布が必要か」：球面の上の点に、平らな空間の正規分布をそのまま使うことはできません。では球面上の「正規分布」は何か、が出発点です。
#
# 球面上の分布を作るいちばん素直な方法は、講義も挙げるとおり、$\mathbb{R}^d$ の正規分布に従うベクトルを原点から球面へ射影することです（**射影正規分布**、projected normal）。
# 講義はそれを正当な選択肢と認めたうえで、「平均方向 $\boldsymbol\mu$ と集中度 $\kappa$ を直接指定でき、指数型分布族として解析しやすい」vMF を選びます。違いを数で見ます。
#
# - 中心が原点の正規分布 $N(\mathbf 0, \sigma^2 I)$ を射影すると、球面上の **一様分布** になります。サンプル平均の長さ $\bar R$ が 0 に近いことで確かめます。
# - 中心 $\mathbf m \ne \mathbf 0$ のまわりに等方的な広がりを持つ $N(\mathbf m, \sigma^2 I)$ を射影した分布の密度は、$d = 2$ でも正規分布の累積分布関数 $\Phi$ を含む式になり、$\log p(\mathbf x)$ は $\mathbf x$ の簡単な関数になりません。
#   vMF の $\log p(\mathbf x) = \log C_d(\kappa) + \kappa\,\boldsymbol\mu^\top\mathbf x$ は $\mathbf x$ の **1次関数** で、μ と κ がそのまま読めます。これが指数型分布族の形です。
#
# 講義の NOTE「ガウスから誘導される方向分布」は、$N(\mathbf m, \sigma^2 I)$ から $\kappa = \lVert\mathbf m\rVert/\sigma^2$ の vMF が生まれると述べ、括弧で
# 「$\lVert\mathbf z\rVert = 1$ に条件付けた密度として見た場合」と断っています。鍵は、**半径 $r$ を決めたときの向きの分布** です。
# $\mathbf z = r\mathbf u$（$\lVert\mathbf u\rVert = 1$）と書くと、$\lVert\mathbf z\rVert = r$ のもとで
#
# $$p(\mathbf u \mid r) \propto \exp\Big(-\frac{\lVert r\mathbf u - \mathbf m\rVert^2}{2\sigma^2}\Big) \propto \exp\Big(\frac{r\,\mathbf m^\top\mathbf u}{\sigma^2}\Big),$$
#
# つまり **どの次元でも厳密に** $\mathrm{vMF}\big(\mathbf m/\lVert\mathbf m\rVert,\ \lVert\mathbf m\rVert\,r/\sigma^2\big)$ です。κ は半径 $r$ に比例します。
#
# 1. **条件付け**（$r = 1$）：講義の括弧の読み方で、$\kappa = \lVert\mathbf m\rVert/\sigma^2$ は厳密です。
# 2. **射影**：サンプル $\mathbf z$ を $\mathbf z/\lVert\mathbf z\rVert$ に縮めると、いろいろな $r$ の vMF が混ざります（射影正規分布）。
#    高次元では $\lVert\mathbf z\rVert$ が $\sqrt{\lVert\mathbf m\rVert^2 + d\sigma^2}$ の殻に集中する（第2回の高次元の集中現象）ので、射影した向きもほぼ1つの vMF で、
#
# $$\kappa \approx \frac{\lVert\mathbf m\rVert\sqrt{\lVert\mathbf m\rVert^2 + d\,\sigma^2}}{\sigma^2}.$$
#
#    次元の項 $d\sigma^2$ が効くので、講義の式 $\lVert\mathbf m\rVert/\sigma^2$ とも、低次元の目安 $\lVert\mathbf m\rVert^2/\sigma^2$（$r \approx \lVert\mathbf m\rVert$ のとき）とも違います。
#
# **予想してから確かめる：** $d = 768$、$\lVert\mathbf m\rVert = 8$、$\sigma = 0.5$ のサンプルを **射影** した向きに vMF をあてはめると、推定した κ はいくつくらいでしょうか。
# (a) 講義の式 $\lVert\mathbf m\rVert/\sigma^2 = 32$、(b) $\lVert\mathbf m\rVert^2/\sigma^2 = 256$、(c) そのどちらでもない。
#
# <details><summary>答え</summary>
#
# (c) です。$\lVert\mathbf z\rVert$ はほぼ $\sqrt{64 + 768\cdot 0.25} = 16$ にそろうので、κ ≈ $8 \cdot 16/0.25 = 512$ です。下の表の最後の行で、あてはめた κ もほぼ 512 になります。
# 低次元（$d = 3$）では $\lVert\mathbf z\rVert$ がばらつくので、この式は目安にとどまります（表の上の行）。
#
# </details>

# %%
rng = np.random.default_rng(9)
z0 = 2.0 * rng.standard_normal((20000, 3))                       # isotropic, centered at the origin
print(f"N(0, 2^2 I) を S^2 へ射影: 平均合成ベクトル長 {np.linalg.norm(l2_normalize_np(z0).mean(axis=0)):.4f} "
      f"（一様分布なら 0。サンプル数による揺れは 1/sqrt(n) = {1 / np.sqrt(len(z0)):.4f} 程度）")

# conditioning on ||z|| = r is exact: on the sphere of radius r, log N(r x; m, sigma^2 I) and the vMF log density
# with kappa = |m| r / sigma^2 differ by a constant
m_vec, sigma = np.array([2.0, 0.0, 0.0]), 0.5
x_test = l2_normalize_np(rng.standard_normal((1000, 3)))
for r in (1.0, 2.5):
    gap_log = (-np.sum((r * x_test - m_vec) ** 2, axis=1) / (2 * sigma**2)
               - sphere.vmf_log_density(x_test, l2_normalize_np(m_vec), np.linalg.norm(m_vec) * r / sigma**2))
    print(f"||z|| = {r} に条件付け: log N - log vMF(κ = ||m|| r / σ² = {np.linalg.norm(m_vec) * r / sigma**2:g}) の"
          f"標準偏差 {gap_log.std():.1e}（1000 点。定数なので同じ分布）")

print(f"\n{'d':>4} {'||m||':>5} {'σ':>5} | {'||m||/σ²':>8} {'||m||²/σ²':>9} {'次元つきの式':>10} | "
      f"{'射影の推定 κ':>11} {'条件付けの推定 κ':>14} {'（残したサンプル）':>12}")
gauss_rows = []
for d_, m_len, sig in ((3, 0.5, 0.5), (3, 1.0, 0.5), (3, 1.0, 0.25), (3, 1.5, 0.5), (3, 2.0, 0.5), (3, 2.0, 0.4),
                       (768, 8.0, 0.5)):
    n_samples = 400_000 if d_ == 3 else 20_000
    z = np.zeros(d_)
    z[0] = m_len
    z = z + sig * rng.standard_normal((n_samples, d_))
    r = np.linalg.norm(z, axis=1)
    u = z / r[:, None]
    kappa_proj = estimate_kappa(u[:20_000])[1]
    near = np.abs(r - 1) < 0.02                                   # keep the samples with ||z|| close to 1
    kappa_cond = estimate_kappa(u[near])[1] if near.sum() > 100 else np.nan
    with_d = m_len * np.sqrt(m_len**2 + d_ * sig**2) / sig**2
    gauss_rows.append((m_len / sig**2, m_len**2 / sig**2, kappa_proj, kappa_cond, with_d, d_))
    cond_text = f"{kappa_cond:16.2f} {near.sum():17d}" if near.sum() > 100 else f"{'-（||z|| ≈ 1 がない）':>24}"
    print(f"{d_:4d} {m_len:5.2f} {sig:5.2f} | {m_len / sig**2:9.2f} {m_len**2 / sig**2:10.2f} {with_d:13.2f} | "
          f"{kappa_proj:13.2f} {cond_text}")

fig, ax = plt.subplots(figsize=(6.4, 4.6))
g = np.array([row for row in gauss_rows if row[5] == 3])
ax.plot(g[:, 0], g[:, 3], "o", ms=7, label="条件付け（||z|| ≈ 1 のサンプル）の推定 κ")
ax.plot(g[:, 0], g[:, 2], "s", ms=7, label="射影（z / ||z||）の推定 κ")
ax.plot(g[:, 0], g[:, 4], "x", color="k", ms=8, label="||m|| √(||m||² + dσ²) / σ²（射影の目安）")
line = np.linspace(0, g[:, 0].max() * 1.05, 2)
ax.plot(line, line, "k--", lw=1, label="推定 κ = ||m|| / σ²（講義の式）")
ax.set(xlabel="講義の式 ||m|| / σ²", ylabel="サンプルから推定した κ", title="ガウス分布から生まれる方向分布（$S^2$、d = 3 の行）")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# 原点中心の正規分布を射影すると、平均の長さはほぼ 0、つまり一様分布です（出力の1行目）。半径 $r$ に条件付けた向きは厳密に κ = $\lVert\mathbf m\rVert r/\sigma^2$ の vMF で、
# 2、3行目の標準偏差は丸め誤差の大きさです。$d = 3$ の行では、球面の近くのサンプルから推定した κ が講義の式 $\lVert\mathbf m\rVert/\sigma^2$（破線）に乗り、
# 射影した点の κ は破線から外れ、$\lVert\mathbf m\rVert^2/\sigma^2$ と次元つきの式（× 印）のあいだに来ます。$d = 3$ では $\lVert\mathbf z\rVert$ が大きくばらつき、
# 半径の小さいサンプルほど向きが広がるので、$\sqrt{\lVert\mathbf m\rVert^2 + d\sigma^2}$（半径の2乗平均の平方根）を使う次元つきの式は、ここでは上からの目安にとどまります。
# $d = 768$ の行では $\lVert\mathbf z\rVert$ がほぼ 16 にそろい、射影の推定 κ は次元つきの式の 512 にほぼ一致します。$\lVert\mathbf m\rVert^2/\sigma^2 = 256$ の2倍です。
# この大きさでは、球面の近く（$\lVert\mathbf z\rVert \approx 1$）にサンプルはまったくありません。
#
# 講義の「大 κ かつ高次元の条件下では vMF 分布で近似できる」は射影正規分布の話で、そのときの κ は $\lVert\mathbf m\rVert/\sigma^2$ ではなく、
# 次元の項を含む $\lVert\mathbf m\rVert\sqrt{\lVert\mathbf m\rVert^2 + d\sigma^2}/\sigma^2$ です。
# 「$\kappa = \lVert\mathbf m\rVert/\sigma^2$」は括弧の中の条件付け（$r = 1$）の読み方のほうで、こちらは近似ではなく厳密です。
#
# ### vMF は最大エントロピーの方向分布
#
# 講義の NOTE「最大エントロピー原理」：平均 $\mathbb{E}[\mathbf x]$ が決まっているとき、球面上でエントロピーがいちばん大きい分布が vMF です。
# 円周 $\mathbb{S}^1$ で、平均合成ベクトル長 $R = \lVert\mathbb{E}[\mathbf x]\rVert$ が同じになるように合わせた6種類の分布のエントロピー $H = -\int p(\theta)\log p(\theta)\,d\theta$ を比べます。
# 積分は 4096 点の格子で数値的にとり、vMF は閉じた式 $H = -\log C_2(\kappa) - \kappa A_2(\kappa)$ とも照合します。
#
# - **vMF**（円周では von Mises 分布）：$A_2(\kappa) = R$ になる κ を二分法で求める。
# - **巻き込み正規分布**（wrapped normal）：$N(0, s^2)$ を $2\pi$ で巻いたもの。$R = e^{-s^2/2}$。
# - **射影正規分布**：$N((m, 0), I)$ を円周へ射影したもの（上の節）。$R$ が合う $m$ を、閉じた式 $R(m) = \sqrt{\pi/8}\,m\,e^{-m^2/4}\big(I_0(m^2/4) + I_1(m^2/4)\big)$ から二分法で求める。
#   表の「R のずれ最大」が、この式と数値積分の $R$ の一致を確かめています。
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
print("各分布のエントロピー H（nats）。R は平均合成ベクトル長")
print("    R |        vMF   巻込正規   射影正規 巻込コーシー カージオイド  円弧一様 | 照合")
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
              + f" | vMF の閉じた式 {H_closed:.4f}、R のずれ最大 {worst_R:.0e}、積分と 1 のずれ最大 {worst_int:.0e}")
print(f"円周全体の一様分布（R = 0）: H = log(2 pi) = {np.log(2 * np.pi):.4f}")
H_arr = np.array([H_table[name] for name in family_names])
print("格子のどの R でも vMF のエントロピーが最大:", bool(np.all(np.nanargmax(H_arr, axis=0) == 0)))

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
# 講義の言う「最も仮定の少ない方向分布」はこの意味です。ただし制約がなければ、最大は円周上の一様分布の $\log 2\pi$ で（「円周全体の一様分布」の行）、
# vMF は「平均の向きと長さを決めた」という制約つきの最大です。

# %% [markdown]
# ### §2 の2つの1歩を2次元で描く
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
v = 0.3 * l2_normalize_np(tangent_project(x_start, euclid_grad(x_start)))
for scale in (1.0, 0.5, 0.25):
    step = scale * v
    gap = geodesic_distance_np(retract(x_start + step), sphere.exp_map(x_start, step))
    print(f"|v| = {np.linalg.norm(step):.4f}: リトラクションと指数写像の間の角度 = {gap:.3e} rad "
          f"（|v|^3 / 3 = {np.linalg.norm(step) ** 3 / 3:.3e}）")


# %% [markdown]
# ### 発展の理解度チェック
#
# **問1.** 講義は、等方的なガウス分布 $N(\mathbf m, \sigma^2 I)$ から $\kappa = \lVert\mathbf m\rVert/\sigma^2$ の vMF が生まれると述べます。
# サンプル $\mathbf z$ を $\mathbf z/\lVert\mathbf z\rVert$ と射影した向きの分布は、その vMF ですか。$d = 768$ ではどうですか。
#
# <details><summary>答え</summary>
#
# 違います。$\lVert\mathbf z\rVert = r$ に条件付けた向きが厳密に κ = $\lVert\mathbf m\rVert r/\sigma^2$ の vMF で、講義の式は $r = 1$ の場合です。
# 射影した向きはいろいろな $r$ の vMF の混ざりです。高次元では $r$ が $\sqrt{\lVert\mathbf m\rVert^2 + d\sigma^2}$ に集中するので、ほぼ1つの vMF になり、
# κ ≈ $\lVert\mathbf m\rVert\sqrt{\lVert\mathbf m\rVert^2 + d\sigma^2}/\sigma^2$ です。$d = 768$、$\lVert\mathbf m\rVert = 8$、σ = 0.5 では約 512 で、講義の式の 32 とも、低次元の目安 $\lVert\mathbf m\rVert^2/\sigma^2 = 256$ とも違います（発展の表の最後の行）。
#
# </details>
#
# **問2.** 「vMF は最大エントロピーの方向分布」の「最大」は、何を決めたうえでの最大ですか。
#
# <details><summary>答え</summary>
#
# 平均 $\mathbb{E}[\mathbf x]$（向きと、平均合成ベクトル長 $R$）を決めたうえでの最大です。何も決めなければ、最大は球面全体の一様分布です（発展の「円周全体の一様分布」の行）。
#
# </details>


# %% [markdown]
# ## まとめ
#
# | 見たもの | わかったこと | 節 |
# |---|---|---|
# | $\mathbb{S}^2$ 上の vMF | κ が大きいほど平均方向に集まる。κ はサンプル平均の長さ $\bar R$ から推定できる。同じ κ でも次元が高いほど $\bar R$ は小さい | §1、発展 |
# | ガウス分布から生まれる vMF | 半径 $r$ に条件付けた向きは厳密に $\mathrm{vMF}(\mathbf m/\lVert\mathbf m\rVert, \lVert\mathbf m\rVert r/\sigma^2)$。$r = 1$ が講義の κ = $\lVert\mathbf m\rVert/\sigma^2$。射影した向きは高次元で κ ≈ $\lVert\mathbf m\rVert\sqrt{\lVert\mathbf m\rVert^2 + d\sigma^2}/\sigma^2$（d = 768 で 512） | 発展 |
# | 最大エントロピー | 平均合成ベクトル長が同じ分布の中で、vMF のエントロピーが最大 | 発展 |
# | リーマン勾配と射影勾配法 | リトラクション前のずれは、リーマン勾配で η の2次、射影勾配法で1次。η が小さければ2つはほぼ同じ | §2 |
#
# 次のノート 15 では、運動量が接空間に残らないことを見てから、microgpt を RMSNorm と球面（nGPT）の2つのモードで学習して比べます。

# %% [markdown]
# ## 理解度チェック
#
# **問1.** 勾配が半径方向だけ（$g = c\,x$、$c > 0$）のとき、リーマン勾配の1歩と射影勾配法の1歩は、それぞれどこへ行きますか。
#
# <details><summary>答え</summary>
#
# リーマン勾配は $g - (g^\top x)x = 0$ なので、$x$ から動きません。射影勾配法は $x - \eta c\,x = (1 - \eta c)\,x$ を正規化するので、
# $\eta c < 1$ なら $x$ に戻り、$\eta c > 1$ なら **反対側の点 $-x$** に飛びます。
#
# </details>
#
# **問2.** 射影勾配法（$x - \eta g$ を正規化）とリーマン勾配＋リトラクション（$x - \eta\,\mathrm{grad}_S f$ を正規化）で、リトラクション前に球面から外れる量は η の何次ですか。
#
# <details><summary>答え</summary>
#
# 射影勾配法は1次（$g$ の半径方向成分が $x$ を伸び縮みさせる）、リーマン勾配は2次（接平面内の1歩は長さを $\sqrt{1+\eta^2\lVert\mathrm{grad}_S f\rVert^2}$ 倍にするだけ）です。
# η が小さければ2つの1歩はほぼ同じで、講義の「学習率が十分小さければ、リーマン勾配降下法に近い挙動を示す」はこのことです。
#
# </details>


# %% [markdown]
# ## 練習問題
#
# 上のセルを少し書き換えて確かめる問題です。答えは折りたたみの中にあります。
#
# **練習 1.** 発展の表に、$d = 768$、$\lVert\mathbf m\rVert = 1$、σ = 0.05 の行を加えると、射影の推定 κ はいくつくらいになるでしょうか。
# 先に次元つきの式で計算してから、表のセルの行のリストに `(768, 1.0, 0.05)` を足して確かめてください。
#
# <details><summary>答え</summary>
#
# $\sqrt{1 + 768 \cdot 0.0025} = \sqrt{2.92} \approx 1.709$ なので、κ ≈ $1 \cdot 1.709/0.0025 \approx 684$ です。あてはめた κ もほぼ 683 になります。
# $\lVert\mathbf m\rVert^2/\sigma^2 = 400$ からは大きく外れます。
#
# </details>
#
# **練習 2.** §2 の学習率を η = 0.05 から η = 0.005 に下げると、60 ステップ後のリーマン勾配と射影勾配法の $f(x) - \min f$ の差は、大きくなりますか、小さくなりますか。
#
# <details><summary>答え</summary>
#
# 2つの1歩の差は η の2次なので、η を 1/10 にすると、1歩あたりの違いは約 1/100 になり、2つの曲線はほとんど重なります（ただしどちらも最小値からは遠いまま止まります）。
# `lr = 0.05` を `lr = 0.005` に書き換えて、右の図の2本の曲線を比べてください。
#
# </details>
