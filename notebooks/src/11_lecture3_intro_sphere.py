# %% [markdown]
# # 第3回 プラネタリウムの建設（1）：ノルムを捨てて、球面へ
#
# （目安：本編 約28分、練習問題 約24分）
#
# **対応する講義:** 幾何学講義 第3回「プラネタリウムの建設: 球面へのパラダイムシフト」の「導入：平面から球面へ」と、「実装ノート」のコード例
# `03_l2_normalize.py`（正規化の基本）と `03_fp16_instability_demo.py` の最後の勾配の例（ε の入れ方）。
# 第3回は7つのノート（11〜17）に分かれていて、これが最初です。どのノートも、単独で開いて上から実行できます。
#
# このノートで見るもの：
#
# 0. **導入**：第2回で見たノルムの「三重の意味」、そのうち一つを諦めること、空間そのものを変えること。RMSNorm のモデルで、ノルムが強度と確信度を同時に運んでいる様子。
# 1. **`03_l2_normalize`**：ノルムの平均 1.000000、標準偏差 0.000000 と表示される理由。768 個の数でできた点が 767 次元の球面 $\mathbb{S}^{767}$ の上にあること。正規化の勾配が接空間に入ること。
# 2. **ゼロ近傍の勾配**：講義の「足す ε」と、`F.normalize` の「クランプする ε」。
# 3. **発展**（任意）：torch が入っていれば、講義のスクリプトと §2 の勾配を本物の PyTorch で計算する（入っていなければ1行の案内だけ）。
# 4. まとめ、理解度チェック（答えは折りたたみ）、練習問題（安全な正規化とその勾配を自分で書く）。

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

import microgpt
from sphere import l2_normalize, l2_normalize_np, l2_normalize_np_backward
from utils import softmax_np
from value import Value

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=6, suppress=False)

# %% [markdown]
# ## 0. 導入：平面から球面へ
#
# 第2回では、埋め込みや隠れ状態の **ノルム** が、3つの意味を同時に担っていました。
#
# - **意味の強度**：ベクトルが長いほど、その向きの主張が強い（内積やロジットが大きくなる）。
# - **確信度**：モデルが確信している位置ほど、ベクトルが長い。
# - **スケーリングノイズ**：初期化や学習の都合で生じる、意味のない大きさの揺れ。
#
# 講義はこれを、ノルムが担う「三重の意味」と呼びます。1つの数に3つの意味が混ざっていると、あとから仕分けることはできません。講義は「だとすれば、最初から一つを諦めるしかない」と続けます。
# すべてのベクトルを単位球面の上（ノルム 1）に置けば、ノルムは定数になり、自由に動けるのは **向き** だけです。
# これは正規化の小技ではなく、**空間そのものを変える** 決断です（講義の「導入：平面から球面へ」）。平らなユークリッド空間 $\mathbb{R}^d$ から、曲がった単位球面 $\mathbb{S}^{d-1}$ へ、
# 平らな世界から曲がった世界へ移ります。すべてのベクトルを単位球面に置くこの制約を、講義は **球面制約** と呼びます。
# 講義の冒頭の「注意事項」（球面上で計算する設計が成り立つ条件）は、第3回のノートの中で一つずつ確かめます：リトラクションはリーマン最適化そのものではないこと（ノート 14 §2、ノート 15 §1）、
# vMF 分布の解釈が成り立つ条件（ノート 16 §1、§2）、ノルムに意味がある場合（ノート 16 §3）。
#
# まず、混ざっている様子を自分の目で見ます。第22章の microgpt を、元の RMSNorm のまま（`norm="rmsnorm"`）names で 1500 ステップ学習し
# （`notebooks/lecture3_runs.py`、数秒）、検証用の名前 200 個のすべての位置で、最後の隠れ状態 $h$ のノルムを次の2つと比べます。
#
# - **強度**：ロジットの標準偏差（ロジットがどれだけ大きく開いているか）。
# - **確信度**：次の文字の分布のエントロピー（小さいほど確信している）。
#
# 相関は順位相関（スピアマン）で測ります。+1 なら完全に同じ順、−1 なら完全に逆順です。

# %%
def rank_correlation(a, b):
    """Spearman's rank correlation (Pearson's correlation of the ranks; no ties in continuous data)."""
    return np.corrcoef(np.argsort(np.argsort(a)), np.argsort(np.argsort(b)))[0, 1]


data = lecture3_runs.train_both(norms=("rmsnorm",))
cfg, state = data.runs["rmsnorm"]
logits, acts = microgpt.gpt_forward(state.params, data.inputs, cfg)
h = acts.hidden[-1][data.mask]                          # the last hidden state at every real position
probs = softmax_np(logits[data.mask])
h_norm = np.linalg.norm(h, axis=1)
logit_spread = logits[data.mask].std(axis=1)            # strength: how far apart the logits are
entropy = -(probs * np.log(probs)).sum(axis=1)          # confidence: small entropy = confident
print(f"検証の位置の数: {h_norm.size}、最終検証損失: {state.val_loss[-1][1]:.4f}")
print(f"||h|| の範囲: {h_norm.min():.2f} 〜 {h_norm.max():.2f}（位置によって {h_norm.max() / h_norm.min():.1f} 倍違う）")
print(f"||h|| とロジットの標準偏差（強度）の順位相関: {rank_correlation(h_norm, logit_spread):+.2f}")
print(f"||h|| とエントロピー（確信度の逆）の順位相関: {rank_correlation(h_norm, entropy):+.2f}")

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
axes[0].scatter(h_norm, logit_spread, s=4, alpha=0.4)
axes[0].set(xlabel="最後の隠れ状態のノルム ||h||", ylabel="ロジットの標準偏差", title="強度：ノルムが大きいほどロジットが開く")
axes[1].scatter(h_norm, entropy, s=4, alpha=0.4, color="tab:orange")
axes[1].set(xlabel="最後の隠れ状態のノルム ||h||", ylabel="次の文字のエントロピー（nats）",
            title="確信度：ノルムが大きいほどエントロピーが小さい")
plt.tight_layout()
plt.show()

# %% [markdown]
# 同じ1つの数 $\lVert h\rVert$ が、ロジットの開き（強度）とは強い正の相関、エントロピーとは強い負の相関を持っています（出力の最後の2行）。
# ノルムの大きい位置では、モデルは「強く」かつ「確信して」予測しています。ロジットは $h$ の1次式なので、$h$ を2倍にすればロジットの開きも2倍になり、
# 分布も鋭くなります。強度と確信度は、この1つの通り道を共有していて、どちらの意味でノルムが大きいのかを $h$ だけから見分けることはできません。
#
# 講義の答えは、この通り道を **閉じる** ことです。球面の上では $\lVert h\rVert = 1$ がどこでも成り立ち、残るのは向きだけです。
# 確信度はどこへ行くのか ── それは第3回の後半（ノート 16 の §3）で、同じ学習を球面モード（nGPT）で行って確かめます。
# 答えを先に言うと、確信度は消えるのではなく、角度と学習される倍率 $s_z$（vMF 分布の集中度 κ）に載せ替えられます。
#
# このノートでは、球面に移るための道具、**正規化** $x \mapsto x/\lVert x\rVert$ を、講義のコード例で確かめます。

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
print(f"正規化の前のノルム: 平均 {np.linalg.norm(embeddings, axis=-1).mean():.3f}（sqrt(768) = {768 ** 0.5:.3f} に近い）")
print(f"正規化の後のノルム: 平均 {norms.mean():.6f}、標準偏差 {norms.std(ddof=1):.2e}（float64）")
# the lecture's two lines, as its script prints them: torch.randn is float32, .std() has ddof=1, format .6f
norms32 = np.linalg.norm(l2_normalize_np(embeddings.astype(np.float32)), axis=-1)
print(f"ノルムの平均: {norms32.mean():.6f}")
print(f"ノルムの標準偏差: {norms32.std(ddof=1):.6f}   （float32。丸めずに書くと {norms32.std(ddof=1):.1e}）")

# %% [markdown]
# 講義のスクリプトは float32（`torch.randn` の既定）で計算し、小数点以下 6 桁で表示するので、`ノルムの平均: 1.000000`、`ノルムの標準偏差: 0.000000` と出ます
# （出力の最後の2行）。標準偏差は 0 ではなく、float32 の丸め誤差の大きさで、6 桁では見えないだけです（「丸めずに書くと」の値）。
#
# 正規化する前のノルムは、どのベクトルもほぼ $\sqrt{768}$ にそろっています（出力の1行目）。第2回の「高次元の集中現象」、ガウス分布が殻（シェル）に集中する様子そのものです。
#
# ### 768 個の数でできた点が、なぜ 767 次元の球面の上にあるのか
#
# 講義の「次元表記の混同に注意」は、768 次元の埋め込みを正規化すると $\mathbb{S}^{767}$ 上の点になる、と一文で述べます。
# $\mathbb{S}^{d-1}$ の肩の数は、その点を **動かせる向きの数**（自由度）です。点そのものは 768 個の数で書かれますが、$\lVert y\rVert = 1$ という1本の式が
# 1つの向き（半径方向）を使えなくするので、球面の上にとどまったまま動ける向きは 767 です。講義の表の言葉では、1次元球面 $\mathbb{S}^1$（単位円）、2次元球面 $\mathbb{S}^2$（地球表面）、
# そして高次元の単位球面 $\mathbb{S}^{767}$ です。円周（$\mathbb{R}^2$ の中の $\mathbb{S}^1$）なら、2つの座標で書かれる点が、
# 円に沿った1つの向きにしか動けません。
#
# 動ける向きの集まりが、点 $y$ での **接空間** $T_y\mathbb{S}^{d-1} = \{v : v^\top y = 0\}$ です。接空間への射影 $I - yy^\top$ の階数（独立な向きの数）を数えます。

# %%
for d_ in (2, 3, 768):
    y = l2_normalize_np(np.random.default_rng(d_).standard_normal(d_))
    projector = np.eye(d_) - np.outer(y, y)            # onto the tangent space at y
    print(f"R^{d_:<3d}: 単位ベクトルの座標は {d_} 個、そこでの接空間の次元は "
          f"{np.linalg.matrix_rank(projector)}（S^{d_ - 1}）")

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
print("y                 =", np.array([v.data for v in y]), " |y| =", np.linalg.norm([v.data for v in y]))
print("dx（Value の逆伝播）=", dx_scalar)
print("dx（NumPy の逆伝播）=", dx_twin)
print("dx・x             =", dx_scalar @ x_np, "（0：勾配は接空間の中にある）")

# %% [markdown]
# 2つの逆伝播は同じ勾配を返し、`dx・x` は丸め誤差の大きさ、つまり勾配は接空間の中にあります（出力の最後の行）。

# %% [markdown]
# ## 2. ゼロ近傍の勾配：「足す ε」と「クランプする ε」
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
    print(f"{dtype.__name__}: x / (||x|| + eps)   の勾配 {g_added}、g・x = {g_added @ x:.3e}、"
          f"cos(g, x) = {cos_gx:.6f}")
    print(f"{'':9s}x / max(||x||, eps) の勾配 {g_clamp}")
x = np.full(3, 1e-7, dtype=np.float32)
first_term = np.float32(1) / (np.sqrt(np.sum(x * x)) + np.float32(1e-12))
print(f"float32 では：2つの項はどちらも約 {first_term:.4e}、その大きさでの float32 の刻みは {np.spacing(first_term)}")
print(f"式 eps / (||x|| + eps)^2 の値 = {1e-12 / (np.sqrt(3) * 1e-7 + 1e-12) ** 2:.4f}")

# %% [markdown]
# 「eps で保護」した勾配は 0 ではなく、float32 で各成分 32.5、float64 で 33.33 で、しかも **ちょうど $x$ の方向**（`cos(g, x) = 1.000000`）を向いています。クランプ形では 0 です。
#
# 理由はスケール不変性です。$y = x/\lVert x\rVert$ は $x$ を正の数倍しても変わらないので、§1 で見たとおり勾配は接空間に入ります。ここでは上流の勾配 $[1, 1, 1]$ が $y$ と平行で、
# 接空間に残る成分がないので、勾配は 0 です。ε を **足す** と、$x/(\lVert x\rVert + \epsilon)$ は $x$ を伸ばすとわずかに長くなる関数になり、スケール不変性が壊れます。
# $\mathbf{1}^\top y$ の勾配は $\dfrac{\mathbf{1}}{\lVert x\rVert + \epsilon} - \dfrac{\mathbf{1}^\top x}{(\lVert x\rVert + \epsilon)^2 \lVert x\rVert}\,x$ で、
# この $x$ では各成分 $\epsilon/(\lVert x\rVert+\epsilon)^2$（「式」の行の値）、$x$ に平行な **半径方向** の勾配です。
# float32 では、どちらも約 $5.77\times10^{6}$ の2つの項の差を 0.5 刻みの数で取るので、33.33 ではなく 32.5 になります（「float32 では」の行）。
#
# 破れの大きさは、$\lVert x\rVert$ が小さいほど大きくなります（float64、各成分の値）：

# %%
print(f"{'||x||':>9} {'足す ε の勾配':>14} {'クランプの勾配':>13}")
for a in (1e-3, 1e-5, 1e-7, 1e-9, 1e-11):
    x = np.full(3, a)
    print(f"{np.linalg.norm(x):9.1e} {grad_of_sum_normalized(x, 1e-12, False)[0]:20.4g} "
          f"{grad_of_sum_normalized(x, 1e-12, True)[0]:20.4g}")

# %% [markdown]
# 同じことを、スカラー版 `sphere.l2_normalize`（クランプ形、float64 の `Value`）の `backward()` でも確かめます。
# ゼロベクトルでは `l2_normalize` は定数 ε で割るので、NaN ではなく有限の勾配 $1/\epsilon$ が出ます。

# %%
x = [Value(1e-7) for _ in range(3)]
sum(l2_normalize(x)).backward()
print("x = 1e-7 * [1, 1, 1] での勾配:", [v.grad for v in x])
z = [Value(0.0) for _ in range(3)]
out = l2_normalize(z)
sum(out).backward()
print("ゼロベクトル: y =", [v.data for v in out], " 勾配 =", [v.grad for v in z], "（有限、1/eps）")


# %% [markdown]
# ## 発展：本物の PyTorch で（任意）
#
# torch が入っている環境なら、次のセルは講義の `03_l2_normalize.py` の2行の表示と、§2 の「足す ε」と `F.normalize` のクランプの勾配を本物の PyTorch で計算し、
# このノートの NumPy の結果と並べます。このプロジェクトは PyTorch なしで動くので、入っていなければ1行の案内だけを表示します。

# %%
import importlib.util

if importlib.util.find_spec("torch") is None:
    print("torch は入っていません（見るには .venv で pip install torch。このプロジェクト自体は torch なしで動きます）")
else:
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    norms_t = F.normalize(torch.randn(32, 768), p=2, dim=-1, eps=1e-12).norm(dim=-1)
    def verdict(same):
        return "→ 一致" if same else "→ 不一致"

    printed = (f"ノルムの平均: {norms_t.mean():.6f}", f"ノルムの標準偏差: {norms_t.std():.6f}")
    for line, reproduced in zip(printed, (f"ノルムの平均: {norms32.mean():.6f}", f"ノルムの標準偏差: {norms32.std(ddof=1):.6f}")):
        print(line, "（§1 の NumPy の float32 の表示と）", verdict(line == reproduced))
    x_added = torch.full((3,), 1e-7, requires_grad=True)
    (x_added / (x_added.norm() + 1e-12)).sum().backward()
    x_clamp = torch.full((3,), 1e-7, requires_grad=True)
    F.normalize(x_clamp, dim=-1, eps=1e-12).sum().backward()
    x32 = np.full(3, 1e-7, dtype=np.float32)
    for label, got, clamp in (("x / (||x|| + eps)", x_added.grad, False), ("F.normalize（クランプ）", x_clamp.grad, True)):
        want = grad_of_sum_normalized(x32, np.float32(1e-12), clamp=clamp)
        print(f"§2 {label} の勾配：PyTorch {got.tolist()}、NumPy で再現した値 {want.tolist()}",
              verdict(np.allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)))


# %% [markdown]
# ## まとめ
#
# | 見たもの | わかったこと | 節 |
# |---|---|---|
# | ノルムの三重の意味 | RMSNorm のモデルでは、1つの $\lVert h\rVert$ が強度（ロジットの開き）と確信度（エントロピー）を同時に運ぶ。後から仕分けられないので、講義はノルムを固定し、空間を球面に変える | §0 |
# | `03_l2_normalize` | 表示は平均 1.000000、標準偏差 0.000000。標準偏差は 0 でなく float32 の丸め誤差。$\mathbb{R}^{768}$ の単位ベクトルは 767 次元の $\mathbb{S}^{767}$ の上にある（接空間の次元が 767） | §1 |
# | 正規化の勾配 | ヤコビアンは $(I - yy^\top)/\lVert x\rVert$。勾配は接空間に入り、$x$ と直交する | §1 |
# | 足す ε とクランプする ε | ε を **足す** とスケール不変性が壊れ、半径方向の勾配（float32 で各成分 32.5）が出る。`F.normalize` の **クランプ** $\max(\lVert x\rVert, \epsilon)$ では 0 | §2 |
#
# 次のノート 12 では、float16 での正規化と、講義の `NormalizedLinear` の重みが学習で球面から外れる様子を見ます。

# %% [markdown]
# ## 理解度チェック
#
# **問1.** 講義の導入は、なぜ「ノルムを後から仕分ける」のではなく「一つを諦める」道を選ぶのですか。§0 の出力を使って説明してください。
#
# <details><summary>答え</summary>
#
# RMSNorm のモデルでは、1つの数 $\lVert h\rVert$ がロジットの開き（強度）とも、エントロピー（確信度）とも強く相関していました。$h$ を長くするとロジットが開き、分布も鋭くなるので、
# 2つの意味は同じ通り道を通っています。$h$ だけを見て「このノルムのうち、どれだけが強度で、どれだけが確信度か」を分ける方法はありません。
# そこでノルムを定数 1 に固定し、意味を向き（角度）だけに担わせます。これは空間を $\mathbb{R}^d$ から $\mathbb{S}^{d-1}$ に変えることです。
#
# </details>
#
# **問2.** 768 次元のベクトルを正規化した点が $\mathbb{S}^{768}$ ではなく $\mathbb{S}^{767}$ の上にある、とはどういう意味ですか。
#
# <details><summary>答え</summary>
#
# 球面の次元は、その上にとどまったまま動ける向きの数です。点は 768 個の数で書かれますが、$\lVert y\rVert = 1$ という1本の式が半径方向を使えなくするので、
# 動ける向き（接空間 $\{v : v^\top y = 0\}$）は 767 次元です。§1 で接空間への射影 $I - yy^\top$ の階数が 767 になることを確かめました。
#
# </details>
#
# **問3.** $x = [10^{-7}, 10^{-7}, 10^{-7}]$ で $\sum_i y_i$ を逆伝播すると、$y = x/(\lVert x\rVert + \epsilon)$ では勾配が各成分 32.5（float32）、
# $y = x/\max(\lVert x\rVert, \epsilon)$ では 0 になります。なぜですか。
#
# <details><summary>答え</summary>
#
# $x/\lVert x\rVert$ は $x$ を正の数倍しても変わらないので、勾配は $x$ と直交します（接空間に入る）。上流の勾配 $[1, 1, 1]$ は $y$ と平行で接成分を持たないので、
# 勾配は 0 です。クランプ形は $\lVert x\rVert \ge \epsilon$ ではまさに $x/\lVert x\rVert$ なので 0 のまま。ε を足すと関数はスケール不変でなくなり、$x$ に平行な（半径方向の）勾配が現れます。
#
# </details>

# %% [markdown]
# ## 練習問題：安全な正規化とその勾配
#
# 解答セルの `raise NotImplementedError` を消して関数を書き、その下のチェックセルを実行してください。チェックは、あなたの関数とプロジェクトの関数
# （`sphere.l2_normalize_np` と `sphere.l2_normalize_np_backward`）を同じ入力で呼び、点ごとに「完全一致」「近い」「最大の差」を表にします。
# プロジェクトの関数を呼べば答えは出ますが、この練習の中身は、式を自分で導くことです。
#
# 1次元の配列 `x` について、次の2つを書いてください。
#
# - `safe_normalize(x, eps=1e-12)`：`F.normalize` のクランプ形 $y = x / \max(\lVert x\rVert, \epsilon)$ を返す。
# - `safe_normalize_backward(dy, x, eps=1e-12)`：上流の勾配 `dy` $= \partial L/\partial y$ から $\partial L/\partial x$ を返す。
#
# チェックは、$\lVert x\rVert = 1$、$3\times10^{-7}$（講義の「足す ε」の誤りが見える大きさ）、ε のすぐ上、すぐ下、ε よりずっと下の5つの大きさで、
# $y$ と $dx$ を並べたものを比べます（差は、その点の値の最大の大きさを 1 とした単位で表示します）。
# ε のすぐ上と下は、クランプの **折れ点** の両側です。差分商で確かめようとすると、刻みが折れ点をまたいでしまう場所です。
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
# ヤコビアンを $y$ で書くと、§1 の「接空間への射影」が出てきます。$dx$ は $x$ と直交するはずです（§1 の `dx・x`）。
#
# </details>
#
# <details><summary>解答例（行き詰まったら）</summary>
#
# `notebooks/worked_solutions.md` の「11-1」にあります。チェックで「すべての点で一致しました」と出ると、ここにも表示されます。
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
exercises.check_11_safe_normalize(safe_normalize, safe_normalize_backward)
