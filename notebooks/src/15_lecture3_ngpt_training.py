# %% [markdown]
# # 第3回 プラネタリウムの建設（5）：運動量と、microgpt を球面（nGPT）で学習する
#
# （目安：本編 約40分、練習問題 約22分）
#
# **対応する講義:** 幾何学講義 第3回の「球面上の学習」の「近似の限界」（運動量）、「nGPTの衝撃：設計の徹底」（NOTE「高速化」の意味、
# 高速化の仮説、歴史的文脈）。ノート 14 の続きです。
#
# このノートで見るもの：
#
# 1. 運動量ベクトルが接空間に残らないこと（重い球の1歩を自分で書く）。
# 2. microgpt を `norm="rmsnorm"` と `norm="sphere"`（nGPT）で学習し、損失、ノルムの分布、「高速化」の意味を見る。
# 3. **発展**（読み飛ばしてかまいません）：講義の仮説と歴史を、ここで確かめられる範囲で。このモデルが論文から変えていること（位置の扱い：学習する `wpe` と論文の RoPE、MLP：ReLU と論文の SwiGLU）。
# 4. まとめ、理解度チェック、練習問題。
#
# 実行には1分ほどかかります（microgpt を2回学習し、1 ステップの時間も測るので）。

# %%
import inspect
import json
import sys
import time
from pathlib import Path

ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists()), None)
if ROOT is None:  # the kernel was started outside the repository: say so, not a bare StopIteration
    raise FileNotFoundError(f"value.py が {Path.cwd()} にもその上のフォルダにもありません。"
                            "Jupyter はこのリポジトリの中（ルートか notebooks/）で起動してください")
for path in (ROOT, ROOT / "notebooks"):  # the project's modules at the root, helpers in notebooks/
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import exercises  # notebooks/exercises.py: the checks of the build steps
import lecture3_runs  # notebooks/lecture3_runs.py: the two microgpt runs lecture 3's sittings share
import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np

import microgpt
import model_config
from sphere import l2_normalize_np, tangent_project
from utils import softmax_np

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=6, suppress=False)

# %% [markdown]
# ## 1. 運動量（モーメンタム）は接空間に残らない
#
# ノート 14 §2 の続きです。講義の「近似の限界」には、もう一つ注意があります：
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
#
# **組み立て：重い球の1歩。** `heavy_ball_step(x, m, g, lr, beta, transport)` を書いてください。$m \leftarrow \beta m + g$、$x \leftarrow R(x - \eta m)$ と進め、
# `transport` が真なら、$m$ を **新しい** $x$ の接空間へ射影します（ノート 14 で書いたリーマン勾配と同じ引き算）。新しい `(x, m)` を返します。
# `g` を接空間へ射影するかどうかは呼ぶ側が決めます（下のセル）。チェックは、β = 0、0.9、0.99、移送のありとなしで1歩を比べます。
#
# <details><summary>ヒント 1</summary>
#
# 射影は $m - (m^\top x)\,x$、リトラクションは長さで割ることです。順番が大事です：$x$ を更新してから、その新しい $x$ で $m$ を射影します。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 古い $x$ の接空間へ射影すると、$m$ は新しい点の接空間に入りません（表の「移送あり」の行の m が合わない）。解答例は `notebooks/worked_solutions.md` の「15-1」にあります。
#
# </details>

# %%
def heavy_ball_step(x, m, g, lr, beta, transport):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
if not exercises.check_15_heavy_ball(heavy_ball_step):   # not written yet, or not yet right:
    heavy_ball_step = exercises.heavy_ball_step_15       # the rest goes on with the reference
    print("この先は参照の heavy_ball_step で続けます")

# %% [markdown]
# 自分の `heavy_ball_step` で3通りを 150 ステップずつ回します。

# %%
d = 10
rng = np.random.default_rng(7)
M = rng.standard_normal((d, d))
A = (M + M.T) / 2                                   # the problem of notebook 14 §2: minimize -x.A.x on S^9
lam_max = np.linalg.eigvalsh(A)[-1]
x_start = l2_normalize_np(rng.standard_normal(d))


def f(x):
    return -x @ A @ x


def euclid_grad(x):
    return -2 * A @ x


lr_m, beta = 0.02, 0.9
labels_m = {"projected": "射影勾配法＋モーメンタム", "riemannian": "リーマン勾配＋モーメンタム",
            "riemannian + transport": "リーマン勾配＋モーメンタム＋移送"}
momentum_runs = {}
for name in ("projected", "riemannian", "riemannian + transport"):
    x = x_start.copy()
    m = np.zeros(d)
    radial, gap = [], []
    for _ in range(150):
        g_x = euclid_grad(x)
        if name != "projected":
            g_x = tangent_project(x, g_x)
        m_used = beta * m + g_x                             # the momentum this step moves x by
        radial.append(abs(m_used @ x) / np.linalg.norm(m_used))   # x: the point where it is used
        stretch = np.linalg.norm(x - lr_m * m_used)         # length before the retraction
        x, m = heavy_ball_step(x, m, g_x, lr_m, beta, transport=name == "riemannian + transport")
        gap.append(f(x) + lam_max)
    momentum_runs[name] = (np.array(radial), np.array(gap))
    print(f"{labels_m[name]:18s}: 半径方向の割合 |m・x| / |m| の中央値 {np.median(radial):.3f}、最大 {np.max(radial):.3f}、"
          f"150 ステップ後の f - min f {gap[-1]:.1e}、最後の ||x - η m|| = {stretch:.2f}")
ratio_transport = momentum_runs["riemannian + transport"][1][-1] / momentum_runs["riemannian"][1][-1]
print(f"150 ステップ後の f - min f の比（移送あり / 移送なし）= {ratio_transport:.0f}")

fig, axes = plt.subplots(1, 2, figsize=(13, 4))
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
#   $x - \eta m$ は大きく伸びてから正規化で縮められ（「最後の ||x - η m||」の値）、そのとき接方向の1歩も同じ比率で縮むので、収束が大きく遅れます。
#   半径方向の運動量は、リトラクションで捨てられるだけの無駄な動きです。
# - **リーマン勾配＋モーメンタム**：積むのは接ベクトルでも、$m$ は接空間に残りません（「半径方向の割合」の中央値と最大値）。この例では収束は速いままですが、
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
# ## 2. microgpt：RMSNorm と球面（nGPT）を学習で比べる
#
# 講義の「nGPTの衝撃」の節（「nGPTとは何か」：埋め込み、注意機構の出力、FFN の出力、残差接続後のすべてを正規化する設計）を、第22章の tiny GPT（`microgpt.py`）で確かめます。
# 2つのモードで学習します。
#
# - `norm="rmsnorm"`：元の microgpt。RMSNorm で、重みに制約はありません。
# - `norm="sphere"`：nGPT（Loshchilov et al., 2025）の球面制約。埋め込み・隠れ状態・重み行列のベクトルがすべて単位ノルムで、更新のたびにリトラクションで球面に戻します。
#
# 既定のコーパス（英語圏のファーストネーム）で、NumPy エンジン・バッチ 16・1500 ステップ。検証損失を、ニューラルネットなしの基準（一様・ユニグラム・文字バイグラム）と並べます。
# 学習は第3回のノートで共通の `notebooks/lecture3_runs.py` の `train_both()` が行います（同じシードなので、どのノートで学習しても同じ重みになります）。
# 中身は `microgpt.train` を2回呼ぶだけで、学習中の勾配のノルム（発展）と、プラネタリウムのための重みのスナップショット（ノート 17）も記録します。

# %%
base_names = {"uniform": "一様", "unigram": "ユニグラム", "bigram": "バイグラム"}
data = lecture3_runs.train_both()                    # norm="rmsnorm" and norm="sphere", 1500 steps each
docs, vocab, base, runs = data.docs, data.vocab, data.base, data.runs
val_docs, train_docs, grad_norms = data.val_docs, data.train_docs, data.grad_norms
print(f"名前 {len(docs)} 個、語彙 {len(vocab)} 文字 + BOS。基準の検証損失:",
      {base_names[k]: round(v, 4) for k, v in base.items()})
for norm, (_cfg, st) in runs.items():
    below = [step for step, loss in st.val_loss if loss < base["bigram"]]
    print(f"{norm:8s} 検証損失が初めてバイグラムの基準を下回った評価: ステップ {below[0] if below else 'なし'}、"
          f"最終の検証損失 {st.val_loss[-1][1]:.4f}")

# %%
fig, ax = plt.subplots(figsize=(11, 4.8))
colors = {"rmsnorm": "tab:blue", "sphere": "tab:orange"}
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
# どちらのモードも 100 ステップ以内にバイグラムの基準を下回り、その後は同じような曲線をたどります（正確なステップと最終値は「初めてバイグラムの基準を下回った評価」の2行）。
# この小さなモデル（$C = 16$、1層）と短い学習では、球面モードが目に見えて速く学習するわけではありません。学習率の掃引と 5 つのシードで比べた実験
# （[`experiments/results/names/results.md`](../experiments/results/names/results.md)）でも、このスケールでは RMSNorm のほうが少し速く、少し低い損失に届きます。
# 講義の注意どおり、nGPT の「4～20倍」は大きなモデルでの報告で、高速化の理由もまだ仮説段階です。ここで確かめられるのは、球面制約が学習を壊さずに **厳密に** 保たれることです。
#
# 次に、学習後のモデルで **ノルムの分布** を比べます。検証用の名前 200 個を `microgpt.gpt_forward` に通し、残差の流れ（埋め込みの後、注意ブロックの後、MLP ブロックの後：記録 `acts.hidden`）の
# 各ベクトルのノルムと、各重み行列の「埋め込み次元に沿ったベクトル」（`microgpt.sphere_axes` の軸）のノルムを集めます。

# %%
inputs, mask, target_ids = data.inputs, data.mask, data.target_ids   # the first 200 validation names
norm_data = {}
for norm, (cfg, st) in runs.items():
    _, acts = microgpt.gpt_forward(st.params, inputs, cfg)
    hidden = np.concatenate([np.linalg.norm(h, axis=-1)[mask] for h in acts.hidden])
    weights = np.concatenate([np.linalg.norm(st.params[k], axis=ax_) for k, ax_ in microgpt.sphere_axes(cfg).items()])
    norm_data[norm] = (hidden, weights)
    print(f"{norm:8s} 隠れ状態のノルム: 最小 {hidden.min():.6f} 最大 {hidden.max():.6f} "
          f"| 重みのベクトルのノルム: 最小 {weights.min():.6f} 最大 {weights.max():.6f}")
    for stage, h in zip(("埋め込みの後", "注意ブロックの後", "MLP ブロックの後"), acts.hidden):
        n_ = np.linalg.norm(h, axis=-1)[mask]
        print(f"         {stage:10s}: 最小 {n_.min():.4f}、中央値 {np.median(n_):.4f}、最大 {n_.max():.4f}")
    if norm == "sphere":
        print(f"         隠れ状態の | ||h|| - 1 | の最大 = {np.abs(hidden - 1).max():.1e}、"
              f"重みの | ||w|| - 1 | の最大 = {np.abs(weights - 1).max():.1e}")

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
# その後の注意ブロックと MLP ブロックの残差加算で、ノルムは 4 より小さくも大きくもなります（段ごとの最小、中央値、最大）。重みのノルムも学習でばらばらになります。
# 球面モードでは、隠れ状態も重みも **すべてノルム 1** に並びます（「| ||h|| - 1 | の最大」の行）。ノルムは捨てられ、意味は「向き」だけが担う ── 講義のプラネタリウム（星の明るさは使わない）です。
#
# 両モデルが作る名前（温度 0.5）：

# %%
for norm, (cfg, st) in runs.items():
    print(f"{norm:8s}", ", ".join(microgpt.sample(st.params, cfg, vocab, num_samples=12, temperature=0.5, seed=1)))

# %% [markdown]
# ### 2.1 「高速化」の意味：ステップ数と、1 ステップの時間
#
# 講義の NOTE のとおり、nGPT の主張は「同じ精度に届くまでの **学習ステップ数** の削減」で、壁時計時間や FLOPs が同じだけ減るとは限りません。正規化のぶん、1 ステップの計算は増えるからです。
# 論文は、文脈が長い（シーケンス長が長い）ほどステップ数の削減が大きいと報告しています。ここの names は最長でも 12 トークン（BOS と 11 文字）、モデルは1層・$C = 16$ なので、その条件はまったく再現できません。
# ここで測れるのは、次の2つです。
#
# - 同じ検証損失に届くまでの **ステップ数**。検証損失は 50 ステップごとなので、50 ステップ刻みです。
# - **1 ステップの時間**。両モードを 150 ステップずつ、交互に 2 回学習し直し、各ステップの時間の中央値の、2 回のうち速いほうをとります。値はこのノートを実行するたびに少し変わります。

# %%
longest_name = max(docs, key=len)
print(f"いちばん長い名前: {longest_name!r}、{len(longest_name)} 文字 -> 入力トークン {len(longest_name) + 1} 個 "
      f"（BOS と文字）。block_size は {runs['sphere'][0].block_size}")
targets = {"バイグラムの基準": base["bigram"], "2.2": 2.2, "2.1": 2.1, "2.05": 2.05}
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
print(f"1 ステップの時間（150 ステップの中央値、2 回のうち速いほう）: rmsnorm {ms['rmsnorm']:.2f} ms、"
      f"sphere {ms['sphere']:.2f} ms -> sphere / rmsnorm = {ms['sphere'] / ms['rmsnorm']:.2f}")
print(f"\n{'目標の検証損失':>12} | {'ステップ数: rmsnorm':>16} {'sphere':>7} {'rmsnorm/sphere':>15} | "
      f"{'時間: rmsnorm':>12} {'sphere':>11}")
for name in targets:
    a, b = steps_to["rmsnorm"][name], steps_to["sphere"][name]
    time_a = f"{a * ms['rmsnorm'] / 1000:.2f} s" if a else "届かない"
    time_b = f"{b * ms['sphere'] / 1000:.2f} s" if b else "届かない"
    ratio = f"{a / b:.2f}" if a and b else "-"
    print(f"{name:>16} | {a or '-':>18} {b or '-':>7} {ratio:>15} | {time_a:>13} {time_b:>11}")

# %% [markdown]
# 表は、左半分がステップ数、右半分がそれを時間に直したものです。この小さなモデルでは、球面モードは **ステップ数でも遅く**（`rmsnorm/sphere` の列が 1 未満）、
# **1 ステップも重い**（「1 ステップの時間」の行の比）ので、壁時計時間ではさらに差が開きます。講義の言う「総合的な効率改善の程度は、実装やハードウェアに依存する」の、小さなモデルでの姿です。
# 1 ステップの上乗せは正規化とリトラクションの費用で、その割合はモデルの大きさ、系列の長さ、行列積の速さで変わります。


# %% [markdown]
# ## 発展：講義の仮説、歴史、論文との違い（読み飛ばしてよい）
#
# §2 の学習の続きで、講義の仮説と歴史、このモデルが論文から変えていることを、ここで確かめられる範囲で追います。

# %% [markdown]
# ### なぜ高速化するのか：講義の4つの仮説を、ここで確かめられる範囲で
#
# 講義は高速化の理由として4つの仮説を挙げ、「仮説段階」と注意しています。1つずつ、このノートの道具で見られるものを測ります。
#
# - **勾配の安定化**（ノルムが固定されると、勾配のスケールも安定する）：§2 の学習の途中、100 ステップごとに、検証の名前 64 個の固定バッチで勾配全体のノルムを測っておきました。
# - **損失ランドスケープの改善**（局所解の構造が単純になる可能性）：ここでは測れません。ヘッセ行列や、多数の初期値からの比較が要ります。
# - **学習率の設定が容易**：記録済みの実験（`experiments/results/names/results.json`）の学習率の掃引で、5 つの学習率での最終検証損失を並べます。
# - **高次元の集中現象との相性**（高次元のデータは「自然に球面状に分布しやすい」）：ガウス分布のノルムの相対的なばらつきが、次元とともに縮むことを測ります。

# %%
print("固定したバッチでの勾配のノルム（100 ステップごと。ステップ 1 の後の値を 1 とした比）:")
for norm, record in grad_norms.items():
    gn = np.array([g for _, g in record])
    print(f"  {norm:8s} 最初 {gn[0]:.3f}、比: {np.round(gn / gn[0], 2)}、学習中の最大 / 最小 {gn.max() / gn.min():.2f}")

results = json.loads((ROOT / "experiments" / "results" / "names" / "results.json").read_text(encoding="utf-8"))
print(f"\n記録済みの学習率の掃引（{results['main_setting']}：バッチ 16、1 層、2000 ステップ、シード 0）の最終検証損失:")
for run in results["runs"]:
    if run["setting"] == results["main_setting"] and run["arm"] in ("rmsnorm", "sphere"):
        finals = [r["final_val"] for r in run["sweep"]]
        print(f"  {run['arm']:8s} " + "  ".join(f"lr {r['lr']:.4f}: {r['final_val']:.3f}" for r in run["sweep"])
              + f"  | 最悪 - 最良 = {max(finals) - min(finals):.3f}")

rng = np.random.default_rng(1)
print("\nR^d の N(0, I) のベクトルのノルム（d が大きいほど殻が薄くなる）:")
for d_ in (3, 16, 64, 768):
    n_ = np.linalg.norm(rng.standard_normal((4000, d_)), axis=1)
    print(f"  d = {d_:3d}: 平均 {n_.mean():6.2f}（sqrt(d) = {np.sqrt(d_):6.2f}）、標準偏差 / 平均 = {n_.std() / n_.mean():.3f} "
          f"（1 / sqrt(2d) = {1 / np.sqrt(2 * d_):.3f}）")

# %% [markdown]
# 出力の3つのかたまりを、仮説ごとに読みます。
#
# - **勾配の安定化**：この学習では、球面モードの勾配のノルムのほうがむしろ大きく変わります（「学習中の最大 / 最小」の値）。$s_z$ などの倍率が育ってロジットが鋭くなるぶんと考えられます。
#   この小さなモデルでは、仮説を支える様子は見えません。
# - **学習率の設定が容易**：記録済みの掃引では、5 つの学習率の最良と最悪の差（「最悪 - 最良」）は球面モードのほうが大きく、小さな学習率での悪化が目立ちます。ここでも仮説を支える結果ではありません。
# - **高次元の集中現象**：ノルムの相対的なばらつき（「標準偏差 / 平均」）は $1/\sqrt{2d}$ のように縮み、768 次元ではノルムがほとんど一定です。
#   高次元のガウス的なデータは「もともとほぼ球面の上にある」ので、球面制約で失う情報が少ない、というのがこの仮説の中身です。$d = 16$ の microgpt では、ばらつきはまだ残っています。
#
# 講義の CAUTION のとおり、これらは提案されている説明で、証明されたメカニズムではありません。小さなモデルでの結果は、大きなモデルでの報告を否定するものでもありません。

# %% [markdown]
# ### 歴史的文脈：なぜ 2010 年代には普及しなかったか、そして今
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
print(f"{K_tokens} 個の単位ベクトルの正単体: どの2つのコサインも {(simplex @ simplex.T)[0, 1]:.4f} "
      f"（-1/(K-1) = {-1 / (K_tokens - 1):.4f}）")
s_z_trained = model_config.effective_scales(runs["sphere"][1].params, runs["sphere"][0])["s_z"]
print(f"{'倍率 s':>24} | {'損失の下限（式）':>14} {'正単体で測った値':>14}")
for label, s_ in (("1（s_z の初期値）", 1.0), ("2", 2.0), ("4", 4.0),
                  (f"{np.median(s_z_trained):.2f}（学習した s_z の中央値）", float(np.median(s_z_trained)))):
    floor = np.log1p((K_tokens - 1) * np.exp(-s_ * K_tokens / (K_tokens - 1)))
    p_ = softmax_np(s_ * simplex @ simplex.T)                   # the feature sits exactly on its class's vector
    print(f"{label:>24} | {floor:20.4f} {-np.log(np.diag(p_)).mean():20.4f}")
print(f"バイグラムの基準（検証）{base['bigram']:.4f}、学習した球面モデルの最終検証損失 "
      f"{runs['sphere'][1].val_loss[-1][1]:.4f}")
print("microgpt.adam_step の引数:", list(inspect.signature(microgpt.adam_step).parameters))

# %% [markdown]
# 倍率が 1 のままでは、完璧なモデルでも損失は 「1（s_z の初期値）」の行の下限より下がらず、これは文字バイグラムの基準とほとんど同じです（最後から2行目）。
# 正規化しただけのモデルは、数え上げの統計と同じ程度にしか当てられない、ということです。倍率を学習させれば下限は急速に下がります。
# microgpt の球面モードでは $s_z$ がこの役目を担い、学習で育った中央値での下限は、もう邪魔になりません（「学習した s_z の中央値」の行）。ノート 16 で、この $s_z$ が vMF の集中度 κ だと見ます。
# 正規化を入れると「どのくらいの倍率を、どう学習させるか」を別に設計しなければならない ── NormFace が指摘したのはこのことでした。
#
# 講義の残りの2つの理由も、これまでに見たものにつながります。「球面制約を維持しながら効率的に最適化する実践的なレシピ」は、ノート 12 の毎ステップのリトラクションと、
# ノート 14 §2 とこのノートの §1 のリーマン勾配・運動量の扱いです。「相対的なオーバーヘッド」は §2.1 の 1 ステップの時間の比です。講義の CAUTION のとおり、これは「なぜ普及しなかったか」についての推測で、
# 球面上の最適化そのものは多様体最適化（Absil et al., 2008; Bonnabel, 2013）として研究されていました。
#
# 講義の CAUTION（歴史的推測）のとおり、これは推測です。講義が挙げる「現在の技術」（最適化技術、残差接続、混合精度学習、メモリ）と、このプロジェクトでの対応：
#
# | 現在の技術 | このプロジェクト |
# |---|---|
# | AdamW などの最適化手法（適応的学習率） | microgpt は Adam（`microgpt.adam_step`、学習率は 0 へ線形に減衰）で、重み減衰の引数はありません（出力の最後の行の引数の一覧）。球面モードでは重みのノルムが毎ステップ 1 に戻されるので、重み減衰が抑えるはずの「重みの伸び」そのものが起きません |
# | 残差接続 | `gpt` の `x + f(x)` と、`gpt_sphere` の nGPT の残差 $\mathrm{Norm}(h + \alpha(\mathrm{Norm}(f(h)) - h))$（ノート 13 §1） |
# | 混合精度学習 | ノート 12 §1 の float16：ノルムを float32 で計算してクランプする安全策。microgpt 自身は float64 で、`--dtype float32` も選べます |
# | 大規模 GPU メモリ | このプロジェクトは CPU だけで、バッチは名前 16 個程度です。ここでは関係しません |

# %% [markdown]
# ### このモデルが nGPT の論文から変えていること、その理由
#
# microgpt の球面モード `gpt_sphere` は、nGPT の正規化の設計（すべてのベクトルを単位球面に置き、残差を $\mathrm{Norm}(h + \alpha(\mathrm{Norm}(f) - h))$ で進め、ロジットに $s_z$ を掛ける）を
# そのまま使います。しかし論文と同じではない点が2つあります。どちらも、第22章の参照実装（`gpt`）の部品を残したためです。球面モードと RMSNorm モードの違いを、正規化だけに絞って比べられるようにしています。
#
# | | nGPT の論文 | このプロジェクト | 変えると何が起きるか |
# |---|---|---|---|
# | 位置の情報 | RoPE：位置埋め込みを足さず、注意の $q$, $k$ を位置に応じて回転させる | 参照実装と同じく、学習する位置埋め込み `wpe` を `wte` に足してから正規化する（$h_0 = \mathrm{Norm}(\mathrm{wte}[t] + \mathrm{wpe}[p])$） | RoPE なら、入力の星 $h_0$ はトークンだけで決まり、位置は注意の中で **相対的な** ずれとしてだけ効く。`wpe` のパラメータ（`block_size` × $C$）もなくなる |
# | MLP | SwiGLU：$\mathrm{SiLU}(s_v \odot v) \odot (s_u \odot u)$ の2つの射影と2つの倍率。$\sqrt{d_{\text{model}}}$ の因子は SiLU のゲートに入る $s_v$ の側 | 参照実装と同じく ReLU の MLP で、倍率は $s_u$ だけ（初期値に $\sqrt{C}$） | SwiGLU ならゲートの射影の分だけパラメータが増え、$s_v$ の大きさが SiLU の曲がり方を決める。ReLU は正の数倍と入れ替えられるので、$s_u$ の共通の倍率は何も変えない（ノート 10 §1 の実験） |
#
# 講義の「Transformerの構成要素」（注意機構、FFN、残差接続）のうち、球面モードが入力の埋め込みベクトルを正規化する部分と、FFN（フィードフォワード層、ここでは MLP）の部分が論文と違います。
# 講義の言う「概念と実装のギャップ」の一つです。
#
# `wpe` を足してから正規化すると、同じ文字でも位置ごとに少し違う向きの星から出発します。学習した球面モデルで、文字ごとに、位置 0 の $h_0$ と位置 $p$ の $h_0$ のなす角を測ります。
# RoPE なら、この角は常に 0 です。

# %%
cfg_s, st_s = runs["sphere"]
labels = list(vocab) + ["BOS"]                                 # token ids 0..25 are the letters, 26 is BOS
wte_s, wpe_s = st_s.params["wte"], st_s.params["wpe"]
h0 = l2_normalize_np(wte_s[:, None, :] + wpe_s[None, :, :])   # (token, position, C): the starting star
turn = np.degrees(np.arccos(np.clip(np.sum(h0 * h0[:, :1], axis=-1), -1, 1)))   # angle to the same token at p = 0
print(f"h0(トークン, p) と h0(トークン, 0) のなす角（{len(labels)} トークン）: 中央値は p = 1 で "
      f"{np.median(turn[:, 1]):.1f}°、p = 5 で {np.median(turn[:, 5]):.1f}°、全体の最大 {turn.max():.1f}°")
norm_wte, norm_wpe = np.linalg.norm(wte_s, axis=1), np.linalg.norm(wpe_s, axis=1)
print(f"行のノルム: wte {norm_wte.min():.2f} 〜 {norm_wte.max():.2f}、wpe {norm_wpe.min():.2f} 〜 {norm_wpe.max():.2f} "
      "（球面モードではどちらも単位ベクトル：retract が行を正規化する）")
print(f"RoPE なら要らないパラメータ: wpe = block_size x C = {wpe_s.size} 個")

# %% [markdown]
# `wte` と `wpe` の行はどちらも単位ベクトルなので、足してから正規化した $h_0$ は、文字の星と位置の星の「中間」の向きになり、位置が変わると大きく回ります（出力の1行目）。
# 入力の星は「文字」ではなく「文字と位置の組」で、プラネタリウムの星図（ノート 17）に描く `wte` の行は、そのうち文字の成分だけです。
# 論文のように RoPE を使えば、入力の星は文字だけで決まり、位置は注意のロジット $q^\top k$ の中で、2つの位置の差に応じた回転として効きます。
# このプロジェクトが `wpe` を残しているのは、第22章の `gpt` との差を正規化だけにしておくためで、どちらが学習に有利かを確かめたものではありません。
#
# もう一つ、論文と **同じ** にしてある値が、このモデルの大きさでは合わない場面があります。残差の歩幅 α の初期値 `alpha_init` = 0.05 です。
# 各ブロックは最初、$h$ をブロックの出力の方向へ 5% しか動かしません。ランダムな文字列を2回書いた文書で、2回目を1回目から写す課題
# （[`experiments/repeat.py`](../experiments/README.md)）では、2 層のこのモデルは1層目が作った特徴を2層目の注意で読む必要があります。
# 64 文字の文脈で、α = 0.05 の球面モデルは 5 つのシードのうち 1 つしか 10,000 ステップで写し方を覚えませんでした（2回目の損失が 1 nat を下回ったのは 1 つ）。128 文字と 256 文字では 1 つも覚えません。
# α を 0.25 から始めると（`alpha25`）、64・128・256 文字のどれでも 5 つのシードすべてが、RMSNorm とほぼ同じステップ数で覚えました（比の中央値 1.00、1.02、1.15）。はっきり速くなるのではなく、RMSNorm に並びます。
# ただし α は 1/√C の大きさで保存され、使うときに `alpha_init`·√C 倍されるので、`alpha_init` を 5 倍にすると、α の始まりの値と Adam の1ステップで動く幅がどちらも 5 倍になります。
# 64 文字で2つを分けると、始まりだけ 5 倍では 5 つのうち 4 つ、歩幅だけ 5 倍では 3 つが覚え、256 文字ではどちらも 1 つも覚えませんでした（両方 5 倍なら 5 つすべて）。論文の目安 α ≈ 1/層数（ここでは 0.5）は、事前に決めた手順で 10 個のシードを比べると、
# 64 文字でも 256 文字でも 10 個すべてが覚えました。64 文字では RMSNorm より少し遅く（比の中央値 0.84、95% 区間 [0.76, 0.98]）、
# 256 文字では 10 個すべてで RMSNorm より早く覚えました（比の中央値 1.25、95% 区間 [1.17, 1.31]）。
# 文脈が長いほど球面に有利になる向きは論文と同じです。それが 512 文字でも続くかは、事前に決めた規則どおり測定を続けています。
# α = 0.25 はどちらの長さでも RMSNorm と並びますが、覚えないシードがありました（64 文字で 10 個中 1 個、256 文字で 3 個）。
# 名前の学習では α の初期値による差は小さいので（最終の損失で 0.013 nats 以内）、既定値は変えていません。`--alpha-init 0.25` で試せます。

# %% [markdown]
# ## まとめ
#
# | 見たもの | わかったこと | 節 |
# |---|---|---|
# | 運動量 | リーマン勾配を積んでも、運動量ベクトルは今の点の接空間に残らない。移送すれば残るが、速く収束するとは限らない。microgpt の Adam も同じで、球面を守るのはリトラクション | §1 |
# | nGPT の学習 | 球面モードでは隠れ状態も重みもすべてノルム 1。この小さなモデルでは、ステップ数でも時間でも速くならない | §2、§2.1 |
# | 講義の仮説 | 勾配の安定化と学習率の設定の容易さは、ここでは支えられない。高次元の集中現象（ノルムのばらつきが $1/\sqrt{2d}$ で縮む）は確かめられる | 発展 |
# | 歴史的文脈 | 倍率 1 のコサインのロジットには損失の下限があり、バイグラムの基準とほぼ同じ。学習する倍率 $s_z$ がそれを外す（NormFace の指摘） | 発展 |
# | 論文との違い | 位置は学習する `wpe`（論文は RoPE）、MLP は ReLU（論文は SwiGLU）。第22章の `gpt` との差を正規化だけにするため | 発展 |
#
# 次のノート 16 では、講義の中心、vMF と softmax の関係を見て、学習した $s_z$ が集中度 κ であることを確かめます。

# %% [markdown]
# ## 理解度チェック
#
# **問1.** 運動量を使うと、リトラクションで球面に戻していても何が問題になりますか。microgpt の `--riemannian` はどこまでを解決していますか。
#
# <details><summary>答え</summary>
#
# 運動量ベクトルは過去の点の勾配の和なので、リーマン勾配を積んでも今の点の接空間には入りません。新しい点の接空間へ移送して初めて接ベクトルになります。
# `--riemannian` は Adam に渡す前の勾配を接空間へ射影するだけで、Adam のモーメントは移送されず、座標ごとのスケーリングも接空間を保ちません。
# 球面制約を守っているのは、各ステップの後のリトラクションです。
#
# </details>
#
# **問2.** nGPT の「4〜20倍の高速化」を、このノートの1ステップの時間の比だけで否定できますか。
#
# <details><summary>答え</summary>
#
# できません。講義の NOTE のとおり、主張は「同じ精度に届くまでの学習ステップ数」の削減で、しかも大きなモデルと長い文脈での報告です。
# ここで測ったのは1層・$C = 16$・最長 12 トークンの小さなモデルで、その条件はまったく再現できていません。言えるのは「このスケールでは速くならない」ことだけです。
#
# </details>
#
# **問3.** microgpt の球面モードは、入力の星を $\mathrm{Norm}(\mathrm{wte}[t] + \mathrm{wpe}[p])$ で作ります。nGPT の論文のように RoPE を使うと、入力の星と位置の情報はどう変わりますか。
#
# <details><summary>答え</summary>
#
# RoPE では位置埋め込みを足さないので、入力の星はトークンだけで決まり、同じ文字はどの位置でも同じ向きから出発します（発展で測った、位置による角度は 0 になる）。
# 位置は注意の $q$ と $k$ を位置に応じて回転させることで入り、ロジット $q^\top k$ には2つの位置の **差** だけが効きます。学習する `wpe`（`block_size` × $C$ のパラメータ）も要らなくなります。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 上のセルを少し書き換えて確かめる問題です。答えは折りたたみの中にあります。
#
# **練習 1.** 発展の損失の下限の式 $\log(1 + (K-1)e^{-sK/(K-1)})$ で、$K = 27$ のとき、下限をバイグラムの基準より十分小さい 0.1 にするには、倍率 $s$ はいくつ必要ですか。
#
# <details><summary>答え</summary>
#
# $\log(1 + 26\,e^{-27s/26}) = 0.1$ から $e^{-27s/26} = (e^{0.1} - 1)/26 \approx 0.00405$、$s \approx (26/27)\cdot 5.51 \approx 5.3$ です。
# 発展のセルの倍率のリストに 5.3 を足すと、式の列も正単体で測った列もほぼ 0.1 になります。
#
# </details>
#
# **練習 2.** 発展の「高次元の集中現象」のセルで、$d = 16$（microgpt の $C$）のノルムの「標準偏差 / 平均」はいくつでしたか。これは球面制約で失う情報について何を意味しますか。
#
# <details><summary>答え</summary>
#
# 約 0.18 で、$1/\sqrt{2d} = 0.177$ に近い値です。ノルムが平均のまわりに 2 割近くばらつくので、$d = 16$ ではノルムはまだ情報を運べます。
# 768 次元（約 0.026）のように「もともとほぼ球面の上にある」とは言えず、この小さなモデルで球面制約が有利に働かない理由の候補の一つです（仮説であって、証明ではありません）。
#
# </details>
