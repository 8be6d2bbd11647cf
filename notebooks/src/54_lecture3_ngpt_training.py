# %% [markdown]
# @@HEAD@@

# %% [markdown]
# @@SETUP@@

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
# @@END@@
