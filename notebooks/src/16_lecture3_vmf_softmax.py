# %% [markdown]
# # 第3回 プラネタリウムの建設（6）：vMF と softmax ── 学習した $s_z$ は集中度 κ
#
# （目安：本編 約38分、練習問題 約14分）
#
# **対応する講義:** 幾何学講義 第3回の「von Mises-Fisher 分布」の「Softmax との関係」（温度 $T = 1/\kappa$、CAUTION「対応」であって「同一」ではない、
# CAUTION「前提が崩れる場合」、NOTE「単位正規化が前提」）と、「球面設計の限界と注意点」。ノート 15 の続きです。
#
# このノートで見るもの：
#
# 0. 準備：ノート 15 と同じ2つのモデル（rmsnorm と sphere）を学習し直す（同じシードなので同じ重み、数秒）。
# 1. 講義の中心：softmax は vMF 混合モデルの事後確率で、microgpt の球面モードでは学習される $s_z$ が集中度 κ（温度 T のスライダーつき）。
# 2. 前提が崩れる場合：正規化しない分類ヘッドでは、ロジットは κ·cos にならないこと。
# 3. 球面設計の限界：ノルムに意味がある場合。ノート 11 の導入の問い「確信度はどこへ行くのか」の答え。
# 4. まとめ、理解度チェック、練習問題（球面モードの出力層の勾配を自分で書く）。

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

import lecture3_runs  # notebooks/lecture3_runs.py: the two microgpt runs lecture 3's sittings share
import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np
from figures import (
    slider_figure,  # notebooks/figures.py: a figure with sliders in Jupyter, static when run headless
)
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

import microgpt
import model_config
import sphere
from sphere import l2_normalize_np
from utils import softmax_np

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=6, suppress=False)

# %% [markdown]
# ## 0. 準備：2つのモデルを学習する
#
# ノート 15 §2 と同じ学習です（`notebooks/lecture3_runs.py` の `train_both()`：names、NumPy エンジン、バッチ 16、1500 ステップ、シード 42）。

# %%
data = lecture3_runs.train_both()
runs, vocab, labels = data.runs, data.vocab, data.labels            # labels: the 26 letters and "BOS"
inputs, mask, target_ids = data.inputs, data.mask, data.target_ids  # the first 200 validation names
cfg_s, st_s = runs["sphere"]
for norm, (_cfg, st) in runs.items():
    print(f"{norm:8s} 最終の検証損失 {st.val_loss[-1][1]:.4f}")

# %% [markdown]
# ## 1. 講義の中心：vMF と softmax ── ロジットは κ 倍されたコサイン
#
# 講義の「Softmax との関係」の節と、その前の「角度はスカラーだが、分類は1個では終わらない」。講義は、分類を「$\mathbf{x}$ を $K$ 個あるクラス代表ベクトル ${\mathbf{w}}_1,\dots ,{\mathbf{w}}_K$ のそれぞれと比較し」、$K$ 個の角度 $\theta_1, \dots, \theta_K$ を同時に計算する営みとして説明します。
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
# 講義の注意事項のとおり、この vMF 分布の解釈は、埋め込みを方向分布として明示的にモデル化した場合に有効です。講義はこれを第4回への伏線（情報幾何学）とし、
# 次回予告で「分類を確率で読む」ことと自然勾配を予告します。
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
print(f"共通の κ = {kappa}、等しい事前確率: |事後確率 - softmax(cos / T)| の最大 = "
      f"{np.abs(posterior - softmax_np(cos_theta_mix / T)).max():.1e}（T = 1/κ = {T}）")
print(f"事後確率が最大のクラスが、角度が最小のクラスと一致する点の割合: "
      f"{np.mean(posterior.argmax(1) == cos_theta_mix.argmax(1)):.0%}。"
      f"それが本当のクラスである割合: {np.mean(posterior.argmax(1) == y_mix):.1%}")
kappas_k = np.array([2.0, 5.0, 10.0, 20.0])                       # one kappa per class
post_k = mixture_posterior(x_mix, mus, kappas_k, np.full(K, 1 / K))
priors_k = np.exp(-sphere.vmf_log_normalizer(3, kappas_k))
priors_k /= priors_k.sum()                                        # pi_k proportional to 1 / C_d(kappa_k)
print(f"クラスごとの κ {kappas_k}: |事後確率（等しい事前確率）- softmax(κ_k cos)| の最大 = "
      f"{np.abs(post_k - softmax_np(kappas_k * cos_theta_mix)).max():.3f}、事前確率を 1 / C_d(κ_k) に比例させると "
      f"{np.abs(mixture_posterior(x_mix, mus, kappas_k, priors_k) - softmax_np(kappas_k * cos_theta_mix)).max():.1e}")

# %% [markdown]
# κ がクラス共通なら、事後確率と温度 $1/\kappa$ の softmax は丸め誤差の範囲で一致し、最大事後確率のクラスは「角度がいちばん小さいクラス」です（出力の1、2行目）。
# κ がクラスごとに違うと正規化定数 $C_d(\kappa_k)$ が約分されずに残り、$\mathrm{softmax}(\kappa_k\cos\theta_k)$ は、事前確率が等しい混合の事後確率とは一致しません。
# 一致するのは、事前確率が $\pi_k \propto 1/C_d(\kappa_k)$ の混合です（最後の行）。
#
# ### コサインと内積が同じになるのは、単位ベクトルのときだけ
#
# 講義の NOTE「単位正規化が前提」：コサイン類似度 $\mathbf u^\top\mathbf v/(\lVert\mathbf u\rVert\lVert\mathbf v\rVert)$ は、$\lVert\mathbf u\rVert = \lVert\mathbf v\rVert = 1$ のときだけ内積 $\mathbf u^\top\mathbf v$ に一致します。
# 上のロジット $\kappa\cos\theta_k$ が「内積」で書けるのも、この前提のおかげです。§0 で学習した2つのモデルの埋め込み `wte` で、内積で選んだ「いちばん近いトークン」とコサインで選んだものを比べます。
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
    print(f"{norm:8s} 行のノルム {np.linalg.norm(e, axis=1).min():.3f} 〜 {np.linalg.norm(e, axis=1).max():.3f}、"
          f"|u・v - cos| の最大 = {gap:.1e}。内積とコサインで「いちばん近いトークン」が違うのは "
          f"{len(labels)} 個中 {len(differ)} 個 {differ[:8]}")
    if differ:
        i = labels.index(differ[0])
        print(f"         例 '{differ[0]}': 内積では '{labels[by_dot[i]]}'（u・v {dots[i, by_dot[i]]:.3f}、cos "
              f"{cosines[i, by_dot[i]]:.3f}）、コサインでは '{labels[by_cos[i]]}'（u・v {dots[i, by_cos[i]]:.3f}、cos "
              f"{cosines[i, by_cos[i]]:.3f}）")

# %% [markdown]
# 球面モードの `wte` では、内積とコサインの差は丸め誤差で、「いちばん近いトークン」はどちらで選んでも同じです。rmsnorm モードでは行のノルムがばらつくので、内積はノルムの大きい行を
# 優遇し、いくつものトークンで選ばれる相手が変わります（出力の「例」の行：内積では近いが、コサインではそれほどでもない相手）。
# 埋め込み空間の中で、角度が意味を担うのはこのためです。球面制約のもとでは「コサイン類似度」と「内積」を区別する必要がなくなる ── 講義の「コサイン類似度と内積は同一である」は、この前提つきの主張です。
#
# ### microgpt の球面モード：$s_z$ が κ
#
# microgpt の球面モード（`norm="sphere"`）の出力層は、まさにこの形です。次トークン予測の分類ヘッドで、最後の隠れ状態 $h$（特徴ベクトル）は単位ベクトル、出力埋め込み `lm_head` の各行 $\boldsymbol\mu_k$ も単位ベクトルなので、
# $\boldsymbol\mu_k^\top h = \cos\theta_k$ です。ロジットはそれに学習されるスケール $s_z$ を掛けたもの、$z_k = s_{z,k}\cos\theta_k$ です（`gpt_sphere` の最後の行）。
# つまり **$s_z$ が集中度 κ** です。ただし nGPT と同じく $s_z$ はトークンごとのベクトルなので、κ もトークンごとに違います（上の「κ がクラスごとに違う」場合）。
#
# §0 で学習した球面モデルで確かめます。$s_z$ は `model_config.effective_scales(params, cfg)["s_z"]` で読めます。nGPT の流儀で小さく保存されたパラメータに、
# 順伝播で掛け戻す倍率を掛けた値で、初期値は `cfg.sz_init` です。

# %%
s_z = model_config.effective_scales(st_s.params, cfg_s)["s_z"]
logits, acts = microgpt.gpt_forward(st_s.params, inputs, cfg_s)
h_out = acts.hidden[-1]                                        # the last residual-stream vector (unit in sphere mode)
lm_head = st_s.params["lm_head"]
cos_theta = h_out @ lm_head.T                                  # cos of the angle to every output embedding
print(f"| ||h|| - 1 | の最大 = {np.abs(np.linalg.norm(h_out, axis=-1) - 1).max():.1e}、"
      f"| ||lm_head の行|| - 1 | の最大 = {np.abs(np.linalg.norm(lm_head, axis=1) - 1).max():.1e}")
print(f"| ロジット - s_z cos θ | の最大 = {np.abs(logits - s_z * cos_theta).max():.1e}")
order_sz = np.argsort(s_z)
print(f"s_z の初期値: どのトークンも {cfg_s.sz_init}。学習後: 中央値 {np.median(s_z):.2f}、"
      f"{s_z.min():.2f}（'{labels[order_sz[0]]}'）〜 {s_z.max():.2f}（'{labels[order_sz[-1]]}'）")
print("トークンごとの s_z（小さい順）:", "  ".join(f"{labels[i]} {s_z[i]:.1f}" for i in order_sz))
print(f"検証の位置での cos θ: {cos_theta[mask].min():.2f} 〜 {cos_theta[mask].max():.2f}。"
      f"κ = 1 ならロジットの差は最大 2、確率の比は最大 e^2 = {np.e ** 2:.1f} 倍")

# %% [markdown]
# ロジットは丸め誤差なしに $s_z \cos\theta$ と一致します。学習で $s_z$ は初期値 1 から、トークンによって何倍にも育ちました（「トークンごとの s_z」の行）。
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
    print(f"T = {T:4}: κ = s_z / T の中央値 {np.median(s_z) / T:5.1f}（2つの書き方の差の最大 "
          f"{np.abs(p - p_kappa).max():.0e}）、エントロピー {entropy:.2f} nats、検証 NLL {nll:.3f} | {', '.join(names)}")

# %% [markdown]
# 検証 NLL は T = 1、つまり学習したときの κ そのものでいちばん小さく、T を下げるとエントロピーが下がって名前はありふれた形に、T を上げると綴りが崩れていきます。
# ノート 15 で名前の生成に使った T = 0.5 は、全トークンの κ を2倍にしたことになります。
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
# ## 2. 前提が崩れる場合：正規化しない分類ヘッド
#
# 講義の CAUTION「前提が崩れる場合」：標準的な Transformer の分類ヘッドでは、出力層の重みも入力の特徴も正規化されていないことが多く、
# そのときロジットは $\kappa\cos\theta$ ではなく一般の線形変換になり、vMF との対応は成り立ちません。名前だけでなく、rmsnorm モードの microgpt で見ます。
# このモデルのロジットは $z_k = \mathbf w_k^\top h = \lVert\mathbf w_k\rVert\,\lVert h\rVert\cos\theta_k$ で、「κ」にあたる $\lVert\mathbf w_k\rVert\,\lVert h\rVert$ が
# 位置ごと（$\lVert h\rVert$）にもトークンごと（$\lVert\mathbf w_k\rVert$）にも違います。
#
# 各位置で、ロジットをいちばんよく再現する1つの κ（最小二乗）を選んで $\kappa\cos\theta_k$ で近似し、どれだけ外れるかを測ります。
# 球面モードでも同じことをすると（ただし κ をトークンごとの $s_z$ にした形で）、外れは丸め誤差です。

# %%
cfg_r, st_r = runs["rmsnorm"]
logits_r, acts_r = microgpt.gpt_forward(st_r.params, inputs, cfg_r)
h_r, w_r = acts_r.hidden[-1][mask], st_r.params["lm_head"]
z_r = logits_r[mask]
cos_r = (h_r @ w_r.T) / np.outer(np.linalg.norm(h_r, axis=1), np.linalg.norm(w_r, axis=1))
kappa_fit = np.sum(z_r * cos_r, axis=1) / np.sum(cos_r * cos_r, axis=1)   # the best single kappa per position
residual = z_r - kappa_fit[:, None] * cos_r
print(f"rmsnorm: lm_head の行のノルム {np.linalg.norm(w_r, axis=1).min():.2f} 〜 {np.linalg.norm(w_r, axis=1).max():.2f}、"
      f"||h|| {np.linalg.norm(h_r, axis=1).min():.2f} 〜 {np.linalg.norm(h_r, axis=1).max():.2f}")
print(f"rmsnorm: 位置ごとに最もよい κ でも、|ロジット - κ cos θ| の中央値 {np.median(np.abs(residual)):.2f}、最大 "
      f"{np.abs(residual).max():.2f}（ロジットの標準偏差の中央値は {np.median(z_r.std(axis=1)):.2f}）")
print(f"rmsnorm: 最大のロジットのトークンと、最大の cos のトークンが違う位置の割合: "
      f"{np.mean(z_r.argmax(axis=1) != cos_r.argmax(axis=1)):.1%}")
print(f"sphere : |ロジット - s_z cos θ| の最大 {np.abs(logits[mask] - s_z * cos_theta[mask]).max():.1e}、"
      f"最大のロジットと最大の s_z cos θ のトークンはすべての位置で一致: "
      f"{bool(np.all(logits[mask].argmax(axis=1) == (s_z * cos_theta[mask]).argmax(axis=1)))}")

# %% [markdown]
# rmsnorm モードでは、位置ごとに κ を選び直してもロジットは $\kappa\cos\theta_k$ の形に収まりません。外れは中央値では小さくても、最大ではロジットの広がり（標準偏差）を超えます。
# 何より、いちばん確率の高いトークンが「いちばん角度の小さいトークン」と違う位置が 3 割を超えます（出力の3行目）。ノルムの大きい出力の行が、角度で負けていても勝つからです。
# このとき softmax を「vMF 混合の事後確率」と読むことはできません。球面モードでは、ロジットは厳密に $s_z \cos\theta$ で、対応が意味を持ちます。
# 講義の言うとおり、vMF との対応は「nGPT のように球面制約を徹底する場合」のものです。

# %% [markdown]
# ## 3. 球面設計の限界：ノルムに意味がある場合
#
# 講義の「球面設計の限界と注意点」は、ノルムを捨てると失われる情報がある、と表にまとめています。
#
# | タスク | ノルムの意味 | 球面制約の適否 | ここで見たこと |
# |---|---|---|---|
# | 分類（表現の比較） | 不要なことが多い | ✓ 適している | §1：角度だけで事後確率（softmax）が決まる |
# | 回帰（連続値の予測） | 出力の大きさが重要 | ✗ 適さない | 単位ベクトル同士の内積は $[-1, 1]$ に収まる（§1 のコサイン）。大きさを出すには、球面の外に倍率を足すしかない |
# | 不確実性推定 | ノルムが確信度を表す場合 | △ タスク依存 | 下のセル：rmsnorm モードでは隠れ状態のノルムが確信度を運んでいる |
# | 生成モデル | 分布のスケールが重要 | △ 設計次第 | microgpt の球面モードも生成モデル。分布の鋭さは学習する倍率 $s_z$ が担う（ノート 15 の発展、§1） |
#
# 「ノルムが確信度を表す」を、§0 の2つのモデルで確かめます（ノート 11 §0 では rmsnorm モードだけを見ました）。検証の名前の全位置で、最後の隠れ状態 $h$ のノルムと、次の文字の分布のエントロピー（小さいほど確信している）を比べます。
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
    print(f"{norm:8s}: ||h|| は {h_norm.min():.4f} 〜 {h_norm.max():.4f}、エントロピーは {entropy_v.min():.2f} "
          f"〜 {entropy_v.max():.2f} nats")
    if norm == "rmsnorm":
        print(f"          ||h|| とエントロピーの順位相関: {rank_correlation(h_norm, entropy_v):+.2f}")
    else:
        cos_v = h_v @ st.params["lm_head"].T
        print(f"          ||h|| はどこでも 1。エントロピーと「最大の cos」の順位相関: "
              f"{rank_correlation(cos_v.max(axis=1), entropy_v):+.2f}、「最大の s_z cos」との順位相関: "
              f"{rank_correlation((s_z * cos_v).max(axis=1), entropy_v):+.2f}")

# %% [markdown]
# rmsnorm モードでは、$h$ のノルムが大きい位置ほどエントロピーが小さい（確信している）という強い負の相関があります。このモデルは、確信度の一部を **ノルム** に載せています。
# 球面モードではノルムは常に 1 なので、その通り道はありません。代わりに、いちばん近い出力の星とのコサイン（角度）と、トークンごとの $s_z$ が確信度を運びます（同じく強い負の相関）。
# 分布の鋭さ（確信度）は、角度が意味を担う形に載せ替えられました。球面制約は確信度を表せなくするわけではなく、**どこに載せるか** を変えるのです。
# 講義の言う第2回の「ノルムの呪い」への答えは、ノート 11 §0 で見た、ノルムの三重の意味の混線を断つことでした。ただし、ノルムそのものが答えであるタスク（回帰や、ノルムで不確実性を読む設計）では、
# 球面に載せた時点でその情報は消えます。講義の言う「タスク依存」「設計次第」はこのことです。


# %% [markdown]
# ## まとめ
#
# | 見たもの | わかったこと | 節 |
# |---|---|---|
# | softmax と vMF | 単位ベクトルとクラス共通の κ なら、softmax$(\kappa\cos\theta_k)$ は等しい事前確率の vMF 混合の事後確率と厳密に一致。κ がクラスごとなら事前確率 $\propto 1/C_d(\kappa_k)$ の混合 | §1 |
# | コサインと内積 | 一致するのは単位ベクトルのときだけ。rmsnorm の `wte` では「いちばん近いトークン」が変わる | §1 |
# | $s_z$ が κ | 球面モードのロジットは丸め誤差まで $s_z\cos\theta$。温度 T は κ を $s_z/T$ に変える | §1 |
# | 前提が崩れる場合 | rmsnorm モードのロジットは $\lVert\mathbf w_k\rVert\lVert h\rVert\cos\theta_k$ で、1つの κ では表せない | §2 |
# | 球面設計の限界 | rmsnorm ではノルムが確信度を運ぶ。球面モードでは角度と $s_z$ に載せ替えられる。ノルムそのものが答えのタスクでは、その情報は消える | §3 |
#
# 次のノート 17 は第3回の最後です。学習した埋め込みをプラネタリウムの星図にし、曲率を測ります。

# %% [markdown]
# ## 理解度チェック
#
# **問1.** microgpt の球面モードで、サンプリング温度 $T = 0.5$ を使うことは、集中度 κ の言葉で言うと何をしていることになりますか。
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
# **問2.** rmsnorm モードの埋め込みで「内積がいちばん大きいトークン」と「コサインがいちばん大きいトークン」が違うことがあるのはなぜですか。球面モードではどうですか。
#
# <details><summary>答え</summary>
#
# 内積はコサインにノルムの積を掛けたものなので、rmsnorm モードのようにノルムがばらつくと、ノルムの大きい行が内積で優遇されます。球面モードではどの行もノルム 1 なので、
# 内積とコサインは丸め誤差まで一致し、選ばれるトークンも同じです（§1）。
#
# </details>
#
# **問3.** ノート 11 の導入で見た「ノルムが確信度を運ぶ」性質は、球面モードではどうなりましたか。
#
# <details><summary>答え</summary>
#
# 球面モードでは $\lVert h\rVert = 1$ がどこでも成り立つので、ノルムという通り道は閉じています。確信度は消えずに、いちばん近い出力の星とのコサイン（角度）と、
# トークンごとの倍率 $s_z$（集中度 κ）に載せ替えられました（§3 の順位相関）。ノルムそのものが答えのタスクでは、この載せ替えはできません。
#
# </details>

# %% [markdown]
# ## 練習問題：球面モードの出力層の勾配
#
# 解答セルの `raise NotImplementedError` を消して関数を書き、その下のチェックセルを実行してください。チェックは、あなたの関数と、プロジェクトの逆伝播の関数
# （`utils.cross_entropy_np_backward` と `sphere.l2_normalize_np_backward`）で組んだ答えを同じ入力で呼び、点ごとに「完全一致」「近い」「最大の差」を表にします。
# プロジェクトの関数を組めば答えは出ますが、この練習の中身は、勾配の式を自分で導くことです。
#
# microgpt の球面モードの出力層は、最後の隠れ状態 $h$ を正規化し、`lm_head` の各行とのコサインに $s_z$ を掛けてロジットにします（§1）。損失は正解トークン `target` の交差エントロピーです：
#
# $$\mathrm{loss} = -\log\mathrm{softmax}\big(s_z \odot (W\,\mathrm{Norm}(h))\big)_{\text{target}},\qquad \mathrm{Norm}(h) = h/\max(\lVert h\rVert, 10^{-12}).$$
#
# `h`（形 `(d,)`、正規化する **前** のベクトル）、`lm_head`（形 `(V, d)`、行は単位ベクトル）、`s_z`（形 `(V,)`）、`target`（整数）から、
# $\partial\,\mathrm{loss}/\partial h$ と $\partial\,\mathrm{loss}/\partial s_z$ の組を返す関数 `readout_grad(h, lm_head, s_z, target)` を書いてください。
# 前者は学習で $h$ に届く勾配、後者は κ（$s_z$）を育てる勾配です。チェックは、$\lVert h\rVert$ が 1、4、$3\times10^{-7}$、正規化のクランプの折れ点（ε）のすぐ上と下の点と、
# ロジットが 1000 近くになる $s_z = 1000$ の点で比べます（2つの勾配を並べ、差はその点の値の最大の大きさを 1 とした単位で表示します）。
#
# <details><summary>ヒント 1</summary>
#
# 段を順にさかのぼります：交差エントロピー → ロジット $z$ → コサイン（と $s_z$） → $\mathrm{Norm}(h)$ → $h$。最初の段は第21章の softmax の逆伝播、最後の段はノート 11 の練習問題で求めたものです。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $z_k = s_{z,k}\cos_k$ は、$s_{z,k}$ と $\cos_k$ の積です。積の微分で、$s_z$ への勾配と $\cos$ への勾配の両方が出ます。$s_z = 1000$ では、softmax の最大値を引くのを忘れないでください。
#
# </details>
#
# <details><summary>解答例（行き詰まったら）</summary>
#
# `notebooks/worked_solutions.md` の「16-1」にあります。チェックで「すべての点で一致しました」と出ると、ここにも表示されます。
#
# </details>

# %%
import exercises  # the check cells (notebooks/exercises.py)


# %%
def readout_grad(h, lm_head, s_z, target):
    # ここに解答を書く (write your answer here): return (d loss / d h, d loss / d s_z)
    raise NotImplementedError

# %%
exercises.check_16_readout_grad(readout_grad)
