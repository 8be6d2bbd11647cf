# %% [markdown]
# @@HEAD@@

# %% [markdown]
# @@SETUP@@

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
# @@END@@
