# %% [markdown]
# # PyTorch の概念を組み立てる（3）：Xavier と He を導く、勾配消失
#
# （目安：本編 約39分、練習問題 約25分）
#
# **対応する資料:** 「PyTorchの基本：Parameter、Module、Linear層の仕組み」の 2（勾配消失、アテンションの softmax）と
# 6（重みの初期化と Xavier / He 初期化）。
#
# 資料は Xavier と He を「分散が層を通過した後も同じスケールに保たれるように」決める手法として紹介します。ここではその式を、
# 1つの層の出力と勾配の分散から **自分で導いて書き**、30 段の網で測って確かめます。このノートで見られるもの：
#
# - **§1**：1つの線形層で、出力の分散と勾配の分散が重みの分散の何倍になるかを導き、Xavier と He の標準偏差を書く（組み立て）。1層で測って確かめる。
# - **§2**：Xavier / He / PyTorch の `nn.Linear` の既定（He の 1/6 の分散）で 30 段を通した活性と勾配（対数軸）。資料の「入力に近い深い層」の読み替え。
# - **§3**：初期値が大きすぎるとき：tanh は飽和するのに、勾配は爆発すること。
# - **§4**：スケーリングしないアテンションの softmax で勾配が消える様子。
# - **発展**（任意）：torch が入っていれば、自分の Xavier と He を `torch.nn.init` と、§2 の既定を本物の `nn.Linear` と比べる（入っていなければ1行の案内だけ）。
# - **まとめ、理解度チェックと練習問題**：He 初期化の一様分布版、キーとバリューに届く勾配。

# %%
import math
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

from utils import linear_np, linear_np_backward, softmax_np, softmax_np_backward

plt.rcParams["figure.dpi"] = 90

# %% [markdown]
# ## 1. 1つの層の分散から Xavier と He を導く
#
# 線形層 $y_o = \sum_{i=1}^{\text{fan\_in}} w_{oi}\,x_i$ で、重み $w_{oi}$ は平均 0・分散 $\mathrm{Var}(w)$ で独立に引かれ、入力 $x_i$ とも独立とします。
# 独立な項の和の分散は分散の和なので、
# $$\mathrm{Var}(y_o) = \text{fan\_in}\cdot \mathrm{Var}(w)\cdot E[x^2].$$
# **順伝播**：
# - 活性化関数が tanh（0 の近くではほぼ恒等写像）なら、次の層の入力の $E[x^2]$ は $\mathrm{Var}(y)$ とほぼ同じです。層を通しても大きさを保つには
#   $\text{fan\_in}\cdot\mathrm{Var}(w) = 1$、つまり $\mathrm{Var}(w) = 1/\text{fan\_in}$。
# - ReLU は、平均 0 で対称な $y$ の半分を 0 にするので、$E[\mathrm{relu}(y)^2] = \mathrm{Var}(y)/2$。保つには $\text{fan\_in}\cdot\mathrm{Var}(w)/2 = 1$、
#   つまり $\mathrm{Var}(w) = 2/\text{fan\_in}$。これが **He 初期化** です（資料の「ReLU によって情報が半分消えることを考慮し、少し大きめに」の中身）。
#
# **逆伝播**：入力の勾配は $\partial L/\partial x_i = \sum_{o=1}^{\text{fan\_out}} w_{oi}\,\partial L/\partial y_o$ で、今度は **fan_out** 個の和です。
# 同じ計算で $\mathrm{Var}(\partial L/\partial x) = \text{fan\_out}\cdot\mathrm{Var}(w)\cdot E[(\partial L/\partial y)^2]$。勾配の大きさを保つには $\mathrm{Var}(w) = 1/\text{fan\_out}$ です。
#
# 順伝播は $1/\text{fan\_in}$、逆伝播は $1/\text{fan\_out}$ を求め、正方形でない層では両方は満たせません。**Xavier 初期化**（Glorot と Bengio, 2010）は
# その間をとって、fan_in と fan_out の平均の逆数 $\mathrm{Var}(w) = 1/\big((\text{fan\_in} + \text{fan\_out})/2\big) = 2/(\text{fan\_in} + \text{fan\_out})$ にします（逆数の平均 $\tfrac12(1/\text{fan\_in} + 1/\text{fan\_out})$ ではありません）。He は順伝播の条件を選びました（ReLU の因子 2 つき）。
#
# **組み立て：** 標準偏差（分散の平方根）を返す `xavier_std(fan_in, fan_out)` と `he_std(fan_in)` を書いてください。
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「07-3」にあります（チェックが一致すると、その下にも折りたたんで表示されます）。
#
# </details>

# %%
def xavier_std(fan_in, fan_out):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


def he_std(fan_in):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
if not exercises.check_07_init_std(xavier_std, he_std):   # not written yet: go on with the formulas
    xavier_std = lambda fan_in, fan_out: math.sqrt(2 / (fan_in + fan_out))  # noqa: E731
    he_std = lambda fan_in: math.sqrt(2 / fan_in)  # noqa: E731

# %% [markdown]
# 1つの層で測ります。fan_in = 256、fan_out = 64 の ReLU 層に、標準正規分布の入力 4096 個を通し、出力側から分散 1 の勾配を流して、
# 「出力の $E[\mathrm{relu}(y)^2]$ ÷ 入力の $E[x^2]$」と「入力の勾配の分散 ÷ 出力の勾配の分散」を見ます。導いた式の予想は、それぞれ
# $\text{fan\_in}\cdot\mathrm{Var}(w)/2$ と $\text{fan\_out}\cdot\mathrm{Var}(w)/2$（逆伝播でも ReLU の局所勾配が半分を 0 にする）です。

# %%
fan_in, fan_out, n = 256, 64, 4096
r = np.random.default_rng(0)
x = r.normal(size=(n, fan_in))
print(f"{'初期化':8s} Var(w)    順伝播の倍率 実測 / 式    逆伝播の倍率 実測 / 式")
for name, std in (("Xavier", xavier_std(fan_in, fan_out)), ("He", he_std(fan_in))):
    w = r.normal(0.0, std, (fan_out, fan_in))
    y = linear_np(x, w)
    a = np.maximum(y, 0.0)
    g = r.normal(size=a.shape)                         # a unit-variance gradient at the output
    dx, _ = linear_np_backward(g * (y > 0), x, w)      # back through the ReLU, then the weights
    forward = (a ** 2).mean() / (x ** 2).mean()
    backward = dx.var() / g.var()
    print(f"{name:8s} {std ** 2:.5f}  {forward:8.3f} / {fan_in * std ** 2 / 2:.3f}"
          f"          {backward:8.3f} / {fan_out * std ** 2 / 2:.3f}")

# %% [markdown]
# 実測は式どおりです。He は順伝播の倍率をちょうど 1 にし、逆伝播はこの長方形の層では 1/4 です。Xavier は ReLU が半分を 0 にすることを考えない
# （tanh のための）式なので、ReLU の層ではどちらの倍率も 1 より小さくなります。
# 正方形の層（fan_in = fan_out）では Xavier の分散は $1/\text{fan\_in}$ になり、ReLU の網では He の半分です。
#
# ## 2. 30 段で測る：Xavier、He、PyTorch の既定
#
# PyTorch の `nn.Linear` の既定の初期化は $U(-1/\sqrt{\text{fan\_in}}, 1/\sqrt{\text{fan\_in}})$ です（`kaiming_uniform_(weight, a=math.sqrt(5))`）。
# 一様分布 $U(-\ell, \ell)$ の分散は $\ell^2/3$ なので $\mathrm{Var}(w) = 1/(3\,\text{fan\_in})$、**He の分散の 1/6** です。
# 資料は「PyTorch ではデフォルトで He 初期化の変形版」と書きます。関数としては確かに He（Kaiming）の一様分布版に $a = \sqrt 5$ を渡したものですが、
# 分散は He の 1/6 で、ReLU の層を重ねたときに大きさを保つ「He 初期化」とは別物です。
# Xavier でもありません：Xavier の一様分布版（`xavier_uniform_`）の分散は $2/(\text{fan\_in} + \text{fan\_out})$ で、正方形の層でも $1/\text{fan\_in}$、既定の3倍です。
#
# 幅 256 の全結合層を 30 段重ね（正規化も残差もなし）、各段の活性の標準偏差と、出力側から流した勾配の標準偏差を **対数軸** で描きます。
# 1段ごとに一定の倍率で増減すると直線になり、分散を保つ初期化は水平になります。
#
# **予想してから確かめる：** ReLU の 30 段を PyTorch の既定で通すと、30 段目の活性の標準偏差は 1 段目のおよそ何倍になるでしょうか。
# (a) ほぼ 1 倍、(b) $10^{-1}$ 倍くらい、(c) $10^{-11}$ 倍くらい。
#
# <details><summary>答え</summary>
#
# (c) です。§1 の式で1段の分散の倍率は $\text{fan\_in}\cdot\mathrm{Var}(w)/2 = 1/6$、標準偏差は $1/\sqrt 6 \approx 0.408$ 倍で、それが 29 回掛かるので
# $0.408^{29} \approx 5 \times 10^{-12}$ です（下の表）。
#
# </details>

# %%
depth, width, batch = 30, 256, 64
acts = {"tanh": (np.tanh, lambda y, a: 1.0 - a * a),
        "ReLU": (lambda y: np.maximum(y, 0.0), lambda y, a: (y > 0).astype(float))}


def propagate(std, act, dact, uniform=False, seed=0):
    """Forward through `depth` layers, then backward a unit-variance gradient: the activation std and
    the std of the gradient at each layer's input, and the last layer's pre-activations."""
    r = np.random.default_rng(seed)
    h, cache = r.normal(size=(batch, width)), []
    for _ in range(depth):
        bound = math.sqrt(3) * std                    # U(-bound, bound) has this std
        w = r.uniform(-bound, bound, (width, width)) if uniform else r.normal(0, std, (width, width))
        y = linear_np(h, w)
        cache.append((h, w, y, act(y)))
        h = cache[-1][3]
    g, grad_std = r.normal(size=h.shape), []
    for h_in, w, y, a in reversed(cache):
        g, _ = linear_np_backward(g * dact(y, a), h_in, w)
        grad_std.append(g.std())
    return np.array([c[3].std() for c in cache]), np.array(grad_std[::-1]), cache[-1][2]


inits = {"Xavier": (xavier_std(width, width), False), "He": (he_std(width), False),
         "PyTorch 既定": (1 / math.sqrt(3 * width), True)}
results = {(a, name): propagate(std, *acts[a], uniform=uni) for a in acts for name, (std, uni) in inits.items()}
fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharex=True)
layers = np.arange(1, depth + 1)
for col, a in enumerate(acts):
    for name in inits:
        fwd, bwd, _ = results[(a, name)]
        axes[0, col].plot(layers, fwd, ".-", label=name)
        axes[1, col].plot(layers, bwd, ".-", label=name)
    axes[0, col].set(yscale="log", title=f"{a}：活性の標準偏差（順伝播）", ylabel="標準偏差（対数軸）")
    axes[1, col].set(yscale="log", title=f"{a}：勾配の標準偏差（逆伝播）", ylabel="∂L/∂(層の入力) の標準偏差（対数軸）",
                     xlabel="層（1 = 入力側の浅い層、30 = 出力側の深い層）")
    for ax in axes[:, col]:
        ax.set_ylim(1e-13, 1e1)
        ax.grid(True, alpha=0.3)
axes[0, 0].legend()
fig.suptitle(f"幅 {width} の全結合層 30 段（正規化も残差接続もなし）")
plt.tight_layout()
plt.show()
print("活性化  初期化          1段の分散の倍率（式） | 活性の標準偏差 1段目  30段目 | 勾配の標準偏差 1段目  30段目")
for a in acts:
    for name, (std, _) in inits.items():
        fwd, bwd, _ = results[(a, name)]
        gain = width * std ** 2 / (2 if a == "ReLU" else 1)
        print(f"{a:5s}  {name:12s} {gain:16.3f}      | {fwd[0]:17.3g} {fwd[-1]:8.3g} | {bwd[0]:17.3g} {bwd[-1]:8.3g}")

# %% [markdown]
# 対数軸の上で、違いは傾きとして読めます。ReLU + He は水平で、30 段を通しても活性と勾配の大きさが保たれます。ReLU + Xavier は1段ごとに標準偏差が
# $1/\sqrt 2$ 倍、ReLU + PyTorch 既定は $1/\sqrt 6$ 倍の直線で、30 段目の活性はそれぞれ $2 \times 10^{-5}$、$2 \times 10^{-12}$ まで縮みます
# （表の「式」の列の平方根が1段の倍率）。tanh + Xavier はゆっくり縮み（1段あたり約 0.95 倍：tanh は 0 から離れると恒等写像より小さい）、
# tanh + PyTorch 既定は $1/\sqrt 3$ 倍ずつ縮みます。
#
# 勾配の段（下の2つ）では、縮む初期化のとき、勾配は出力側（30 段目）から入力側（1 段目）へ向かって小さくなります。資料は勾配消失で
# 「**入力に近い深い層** の重みパラメータは…勾配が届かなくなり」と書きますが、ふつう「深い層」は入力から遠い（出力に近い）層を指します。
# 入力に近いのは **浅い層** で、勾配が届かなくなるのは、出力から最も遠いその浅い層です（図の横軸の 1 の側）。資料の言いたいことは「出力から遠い、入力に近い層」と読めば正確です。
#
# microgpt はどの行列も $N(0, 0.08^2)$ で初期化します（`init_params`）。fan_in は `mlp_fc2` の 64 を除いてすべて 16 です。

# %%
for fan_in in (16, 64):
    print(f"fan_in {fan_in}：microgpt の分散 0.08² は He の {0.08 ** 2 / he_std(fan_in) ** 2:.3f} 倍、"
          f"PyTorch 既定の {0.08 ** 2 * 3 * fan_in:.3f} 倍")

# %% [markdown]
# microgpt の初期値は He よりずっと小さいのですが、層は1つで、各ブロックの前に `rmsnorm` で大きさをそろえ、残差接続で足し込むので、
# この小ささが層ごとに掛け算で積み重なることはありません。上の 30 段の網の縮み方は、正規化も残差もないときに起きることです。
#
# ## 3. 初期値が大きすぎると：tanh は飽和するのに、勾配は爆発する
#
# 資料は、初期値が大きすぎると「活性化関数の出力が極端になり、前述の勾配消失や…勾配爆発が起きて」と書きます。どちらが起きるのでしょうか。
# 逆伝播の1段は、勾配に活性化関数の局所勾配 $\phi'(y)$ と重みの両方を掛けるので、勾配の分散の1段あたりの倍率は
# $\chi = \text{fan\_out}\cdot\mathrm{Var}(w)\cdot E[\phi'(y)^2]$ です（§1 の逆伝播の式に局所勾配を入れたもの）。
# 重みを $N(0, 1)$（幅 256 では He の標準偏差の約 11 倍）で引くと、tanh のユニットは ±1 に張り付いて $E[\tanh'^2]$ は小さくなりますが、
# 重みの因子 $\text{fan\_out}\cdot\mathrm{Var}(w) = 256$ のほうが勝ちます。

# %%
for a, (act, dact) in acts.items():
    fwd, bwd, y_last = propagate(1.0, act, dact)
    saturated = f"|tanh| > 0.99 のユニット {np.mean(np.abs(np.tanh(y_last)) > 0.99):.1%}、" if a == "tanh" else ""
    dphi2 = np.mean(dact(y_last, act(y_last)) ** 2)
    chi = (bwd[0] / bwd[-1]) ** (2 / (depth - 1))
    print(f"{a}、N(0, 1)：出力側の層で {saturated}E[φ'²] = {dphi2:.4f}、"
          f"χ = 256 × E[φ'²] ≈ {256 * dphi2:.1f}（実測 {chi:.1f}）、1 段目の勾配の標準偏差 {bwd[0]:.2g}")

# %% [markdown]
# tanh のユニットの大半が飽和し、局所勾配の因子は確かに小さくなります（資料の「傾きはほぼ 0」）。それでも重みの因子が大きいので $\chi > 1$ で、
# 30 段では勾配は **爆発** します。ReLU は飽和しないので、もっと速く爆発します。飽和による消失が勝つのは、大きさの原因が次の重みではないとき、
# たとえば次のアテンションの softmax です。
#
# ## 4. スケーリングしないアテンション softmax の勾配消失
#
# クエリ $q$ とキー $k_t$ の成分が標準正規分布なら、内積 $q\cdot k_t$ の標準偏差は $\sqrt d$ です。$d = 64$ なら ±8 程度の差がつき、softmax は
# 資料の例の `[0.999, 0.000, 0.001]` のように飽和します。飽和した softmax のヤコビアン $\mathrm{diag}(p) - pp^\top$ はほぼ 0 なので、そこから前へ勾配が流れません。
# $1/\sqrt d$ を掛ければスコアの標準偏差は 1 に戻ります。キー 8 個の注意で、損失 $L = c\cdot o$（$o = \sum_t p_t v_t$）から $q$ に届く勾配を、
# 2000 回のランダムな試行の中央値で比べます。

# %%
dims, trials, T = [4, 16, 64, 256, 512], 2000, 8
stats = {True: ([], []), False: ([], [])}
for d in dims:
    r = np.random.default_rng(d)
    q, K, V, c = (r.normal(size=(trials, d)), r.normal(size=(trials, T, d)),
                  r.normal(size=(trials, T, d)), r.normal(size=(trials, d)))
    raw = np.einsum("nd,ntd->nt", q, K)
    for scaled in (True, False):
        scale = 1 / np.sqrt(d) if scaled else 1.0
        p = softmax_np(raw * scale)
        ds = softmax_np_backward(np.einsum("ntd,nd->nt", V, c), p)   # dL/dp_t = v_t . c, then softmax
        dq = np.einsum("nt,ntd->nd", ds, K) * scale
        stats[scaled][0].append(np.median(p.max(axis=-1)))
        stats[scaled][1].append(np.median(np.linalg.norm(dq, axis=-1)))
print("   d | 最大確率の中央値：なし  1/√d あり | |∂L/∂q| の中央値：なし      1/√d あり   あり÷なし")
for i, d in enumerate(dims):
    print(f"{d:4d} | {stats[False][0][i]:21.3f} {stats[True][0][i]:9.3f} | {stats[False][1][i]:22.2e} "
          f"{stats[True][1][i]:11.2e} {stats[True][1][i] / stats[False][1][i]:9.3g}")

# %% [markdown]
# スケーリングなしでは $d$ が大きいほど softmax が1点に張り付き（最大確率 → 1）、$q$ に届く勾配が桁違いに小さくなります。$d$ が小さいうちは
# スケーリングなしのほうが勾配はむしろ大きい点にも注意してください。消失は、飽和が始まってから起こります。$1/\sqrt d$ で割ると、どの $d$ でも
# 分布の鋭さはほぼ一定で、勾配も消えません。microgpt の `gpt` も各ヘッドで `q·k / √head_dim` を使っています（第22章）。

# %% [markdown]
# ## 発展：本物の PyTorch で（任意）
#
# torch が入っている環境なら、次のセルは §1 で導いた Xavier と He の標準偏差を `torch.nn.init` の初期化と、§2 の「PyTorch の既定」を本物の `nn.Linear` と比べます。
# このプロジェクトは PyTorch なしで動くので、入っていなければ1行の案内だけを表示します。

# %%
import importlib.util

if importlib.util.find_spec("torch") is None:
    print("torch は入っていません（見るには .venv で pip install torch。このプロジェクト自体は torch なしで動きます）")
else:
    import torch

    torch.manual_seed(0)
    fan_in, fan_out = 512, 256
    weight = torch.empty(fan_out, fan_in, dtype=torch.float64)          # [out, in], as nn.Linear stores it
    xavier = torch.nn.init.xavier_normal_(weight.clone()).std().item()
    he = torch.nn.init.kaiming_normal_(weight.clone(), nonlinearity="relu").std().item()
    default_var = torch.nn.Linear(fan_in, fan_out).weight.double().var().item()
    def verdict(got, want, rtol=0.03):                      # sampled: 131,072 weights, about 0.4% spread
        return "→ 一致" if abs(got - want) <= rtol * abs(want) else "→ 不一致"

    print(f"Xavier：torch.nn.init.xavier_normal_ の標準偏差 {xavier:.4f}、自分の xavier_std {xavier_std(fan_in, fan_out):.4f}",
          verdict(xavier, xavier_std(fan_in, fan_out)))
    print(f"He：torch.nn.init.kaiming_normal_(relu) の標準偏差 {he:.4f}、自分の he_std {he_std(fan_in):.4f}",
          verdict(he, he_std(fan_in)))
    print(f"nn.Linear の既定（kaiming_uniform_(a=√5)）：He の分散 2 / fan_in との比 {default_var / he_std(fan_in) ** 2:.3f}（§2 の 1/6）",
          verdict(default_var / he_std(fan_in) ** 2, 1 / 6))


# %% [markdown]
# ## まとめ
#
# | 資料の項目 | ここで導いて確かめたこと | 節 |
# |---|---|---|
# | Xavier / He | 1層の分散：順伝播は $\text{fan\_in}\cdot\mathrm{Var}(w)$、逆伝播は $\text{fan\_out}\cdot\mathrm{Var}(w)$ 倍。He は ReLU の 1/2 を補って $2/\text{fan\_in}$、Xavier は両者の間の $2/(\text{fan\_in}+\text{fan\_out})$ | §1 |
# | PyTorch の既定 | 分散は He の 1/6。正規化も残差もない ReLU の 30 段では信号も勾配も $10^{-12}$ 程度に縮む | §2 |
# | 「入力に近い深い層」 | 入力に近いのは浅い層。勾配が届かなくなるのは出力から最も遠い浅い層 | §2 |
# | 初期値が大きすぎる | tanh は飽和するが、重みの因子が勝って勾配は爆発する | §3 |
# | アテンションの勾配消失 | スケーリングしないと、次元が大きいほど softmax が張り付き、勾配が消える | §4 |
#
# ## 理解度チェック
#
# **問1.** fan_in = 512、fan_out = 128 の ReLU 層に He 初期化を使うと、順伝播の信号の2乗平均と逆伝播の勾配の分散は、1層でそれぞれ何倍になりますか。
#
# <details><summary>答え</summary>
#
# He は $\mathrm{Var}(w) = 2/512$。順伝播は $512 \cdot (2/512)/2 = 1$ 倍、逆伝播は $128 \cdot (2/512)/2 = 1/4$ 倍です（§1 の式）。He は順伝播を保つ選び方です。
#
# </details>
#
# **問2.** 正規化も残差もない ReLU の全結合層を 30 段重ね、PyTorch の `nn.Linear` の既定の初期化を使います。1段あたり活性の分散はおよそ何倍になりますか。
#
# <details><summary>答え</summary>
#
# 既定は $\mathrm{Var}(w) = 1/(3\,\text{fan\_in})$ なので、1段の倍率は $\text{fan\_in}\cdot\mathrm{Var}(w)/2 = 1/6$（標準偏差で 0.408 倍）、30 段で標準偏差は $10^{-12}$ 程度まで縮みます。
#
# </details>
#
# **問3.** 勾配消失で勾配が届かなくなるのは、入力側と出力側のどちらの層ですか。資料の「入力に近い深い層」はどう読めばよいですか。
#
# <details><summary>答え</summary>
#
# 勾配は出力から入力へ向かって層ごとに掛け算されるので、届かなくなるのは出力から最も遠い、入力側の層です。入力に近い層は「浅い層」と呼ぶのがふつうなので、
# 「出力から遠い、入力に近い（浅い）層」と読みます（§2 の図の 1 の側）。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を自分のコードに置き換えてから、その下のチェックセルを実行してください。
# チェックは、いくつかの入力であなたの答えとプロジェクトの関数で計算した答えを比べて表にします（まだ解いていなければ 未回答）。
# プロジェクトの関数を呼べば答えは出せますが、式を導いて書くことが練習の目的です。
#
# ### 練習問題 1：He 初期化の一様分布版
#
# PyTorch の `nn.init.kaiming_uniform_` のように、重みを **一様分布** $U(-\ell, \ell)$ で引いて He 初期化と同じ分散にしたいとき、範囲 $\ell$ はいくつにすればよいでしょうか。
# fan_in を受け取って $\ell$ を返す `he_uniform_bound(fan_in)` を書いてください。チェックは fan_in を 1 から 12288 まで変えて比べます。
#
# <details><summary>ヒント 1</summary>
#
# $U(-\ell, \ell)$ の分散を、密度 $1/(2\ell)$ の積分 $\int_{-\ell}^{\ell} x^2/(2\ell)\,dx$ から求めてください。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# それを He の分散 $2/\text{fan\_in}$ と等しいとおき、$\ell$ について解きます。`he_std` そのものを $\ell$ に使うと、分散が 1/3 しかありません。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「07-1」にあります。
#
# </details>

# %%
def he_uniform_bound(fan_in):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_07_he_uniform_bound(he_uniform_bound)

# %% [markdown]
# ### 練習問題 2：キーとバリューに届く勾配
#
# §4 では、注意の出力から **クエリ** に届く勾配を見ました。同じ注意で **キー** と **バリュー** に届く勾配を求めます。
# 1つのクエリ `q`（形 `(d,)`）、キー `K` とバリュー `V`（どちらも形 `(T, d)`）から、スコア $s_t = \alpha\, q \cdot k_t$
# （`scaled=True` なら $\alpha = 1/\sqrt d$、`False` なら $\alpha = 1$）、重み $p = \mathrm{softmax}(s)$、出力 $o = \sum_t p_t v_t$ を作ります。
# 出力の勾配 `do` $= \partial L/\partial o$ が与えられたとき、`key_value_grads(q, K, V, do, scaled)` は $(\partial L/\partial K, \partial L/\partial V)$ を返します。
# `utils.softmax_np` と `utils.softmax_np_backward` は使ってかまいません。チェックは NumPy エンジンの注意の逆伝播（`numpy_engine.attention_backward`）と比べます。
# 解けたら、2つのうち softmax のヤコビアンを通るのはどちらか、softmax が飽和したときにどちらが消えるかを考えてみてください。
#
# <details><summary>ヒント 1</summary>
#
# $o = \sum_t p_t v_t$ です。$v_t$ は $o$ に何を掛けて効いていますか。$k_t$ は、スコア $s_t$ と softmax を通してしか $o$ に効きません。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $\partial L/\partial p_t = v_t \cdot do$ を先に求め、`softmax_np_backward` に通して $\partial L/\partial s_t$ にします。その後 $s_t = \alpha\, q \cdot k_t$ を $k_t$ で微分します。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「07-2」にあります。
#
# </details>

# %%
def key_value_grads(q, K, V, do, scaled):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_07_key_value_grads(key_value_grads)
