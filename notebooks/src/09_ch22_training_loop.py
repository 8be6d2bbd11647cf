# %% [markdown]
# # 第22章 `gpt`（2）：学習ループと Adam を自分で書く
#
# （目安：本編 約37分、練習問題 約24分）
#
# **対応する章:** microgpt 本 第22章（学習ループ）。ノート 08 で読んだ `gpt` を、勾配を下って学習させます。
# `microgpt.train` の中身を、第22章のとおり1つのセルに書き出し、オプティマイザ Adam を自分で書いて、`microgpt.train` と同じ損失になることを確かめます。
#
# このノートで見られるもの：
#
# 1. 学習ループの4つの手順：`zero_grad`、順伝播と損失、`backward`、パラメータの更新。
# 2. **Adam を導いて書く**（組み立て）：移動平均 $m, v$ と、偏り補正 $\hat m = m/(1-\beta_1^t)$ がなぜ要るのか。`microgpt.adam_step` と比べる。
# 3. 書き出したループが `microgpt.train` と同じ損失の列を出すこと。
# 4. **`zero_grad` を忘れると** 損失がどうなるか。
# 5. NumPy エンジンでの 2000 ステップの学習と、一様・ユニグラム・バイグラムの基準との比較。
# 6. よくある質問：損失が NaN になったら（§5）、自分のテキストで学習するには（§6）。
# 7. まとめ、理解度チェックと練習問題（バイグラム基準の損失、Adam の最初の一歩）。

# %%
import contextlib
import io
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

import microgpt
from model_config import flat_buffer
from utils import softmax
from value import zero_grad

plt.rcParams["figure.dpi"] = 100
docs = microgpt.load_corpus("names")
vocab = microgpt.build_vocab(docs)
train_docs, val_docs = microgpt.split_docs(docs, seed=42)
cfg = microgpt.GPTConfig(vocab_size=len(vocab) + 1)      # n_embd 16, n_head 4, n_layer 1, block_size 16
train_tokens = [microgpt.doc_tokens(d, vocab) for d in train_docs]
print(f"訓練用の名前 {len(train_docs)} 個、検証用 {len(val_docs)} 個。最初の名前 {train_docs[0]!r} のトークン列 {train_tokens[0]}")

# %% [markdown]
# ## 1. Adam を導く
#
# いちばん素朴な更新は勾配降下法 $\theta \leftarrow \theta - \mathrm{lr}\cdot g$ です。Adam（Kingma と Ba, 2015）は、勾配 $g_t$ の2つの **指数移動平均** を持ちます。
# $$m_t = \beta_1 m_{t-1} + (1-\beta_1)\,g_t, \qquad v_t = \beta_2 v_{t-1} + (1-\beta_2)\,g_t^2 \qquad (m_0 = v_0 = 0)$$
# $m$ は勾配の平均（向き、ぶれをならしたもの）、$v$ は勾配の2乗の平均（大きさ）の見積もりで、更新は成分ごとに $m/\sqrt v$ の向きに $\mathrm{lr}$ 程度進みます。
# 大きさで割るので、勾配が大きい成分も小さい成分も、同じくらいの歩幅で動きます。microgpt は $\beta_1 = 0.85$、$\beta_2 = 0.99$ です。
#
# **偏り補正。** $m_0 = 0$ から始めるので、最初のうち $m_t$ は小さすぎます。漸化式をほどくと
# $$m_t = (1-\beta_1)\sum_{s=1}^{t} \beta_1^{\,t-s} g_s .$$
# 勾配の期待値がどのステップでも同じ $E[g]$ なら、等比数列の和 $(1-\beta_1)\sum_{s=1}^{t}\beta_1^{\,t-s} = 1-\beta_1^t$ から
# $$E[m_t] = (1-\beta_1^t)\,E[g].$$
# $t = 1$ では $m_1 = 0.15\,g_1$ で、期待値の 15% しかありません。そこで $\hat m_t = m_t/(1-\beta_1^t)$ と割れば $E[\hat m_t] = E[g]$ になります。
# $v$ も同じで $\hat v_t = v_t/(1-\beta_2^t)$。$t$ が大きくなると $\beta^t \to 0$ で補正は消えます。更新は
# $$\theta_t = \theta_{t-1} - \mathrm{lr}\cdot \frac{\hat m_t}{\sqrt{\hat v_t} + \varepsilon}.$$
# 補正しないと、$m_t/\sqrt{v_t}$ の大きさは $\hat m_t/\sqrt{\hat v_t}$ の $(1-\beta_1^t)/\sqrt{1-\beta_2^t}$ 倍になります。次のセルがその倍率です。

# %%
beta1, beta2 = 0.85, 0.99
for t in (1, 2, 5, 10, 20, 50, 100, 500):
    print(f"t = {t:3d}：補正しないときの歩幅の倍率 (1 - β1^t) / √(1 - β2^t) = {(1 - beta1 ** t) / (1 - beta2 ** t) ** 0.5:.3f}")

# %% [markdown]
# microgpt の β では、補正しないと最初のステップで 1.5 倍、10 ステップ目あたりでは 2.6 倍の歩幅になり、$v$ の補正が消えるまで（数百ステップ）1 倍に戻りません。
# 学習の始めは勾配が大きく変わる一番不安定なときで、そこで歩幅が数倍にぶれるのを偏り補正が防ぎます。
#
# **組み立て：** Adam の1ステップ `adam_update(p, g, m, v, t, lr, beta1=0.85, beta2=0.99, eps=1e-8)` を書いてください。`p`, `g`, `m`, `v` は同じ長さの配列、
# `t` は 1 から数えたステップ番号です。`m` と `v` は **その場で** 書き換え（`m[:] = ...`）、新しい `p` を返します。
# チェックは、いくつかのステップ数で `microgpt.adam_step`（学習率の減衰を切ったもの）と `p`, `m`, `v` を比べます。勾配には 0 や $10^{-12}$（$\varepsilon$ より小さい）、5000 も入れてあります。
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「09-3」にあります（チェックが一致すると、その下にも折りたたんで表示されます）。
#
# </details>

# %%
def adam_update(p, g, m, v, t, lr, beta1=0.85, beta2=0.99, eps=1e-8):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
if not exercises.check_09_adam(adam_update):      # not written yet, or not yet right:
    adam_update = exercises.adam_update_09        # the rest goes on with the reference
    print("この先は参照の adam_update で続けます")

# %% [markdown]
# ## 2. 学習ループを書き出す
#
# 第22章の学習ループは、1ステップごとに次の4つを繰り返します。
#
# 1. **`zero_grad`**：前のステップの勾配を 0 に戻す。`backward()` は葉の `.grad` に **足し込む** ので（1つの値が何か所で使われても勾配が正しく足されるように）、
#    戻さなければ前のステップの勾配が残ります。
# 2. **順伝播と損失**：名前を1つ取り、KV キャッシュを空にして、位置ごとに `gpt` を呼び、正解の次の文字の確率の $-\log$ を平均します。
# 3. **`backward`**：損失から全パラメータへ勾配を流す。
# 4. **更新**：勾配を1本の配列に集めて Adam で1ステップ進め、パラメータに書き戻す。学習率は `lr * (1 - step / num_steps)` で 0 へ線形に減らします。
#
# 下のセルがそのループです（スカラーエンジンなので1ステップに 0.1〜0.3 秒かかります。30 ステップだけ回します）。

# %%
def train_loop(num_steps, lr=0.01, forget_zero_grad=False):
    params = microgpt.init_params(cfg, seed=42)
    state_dict = microgpt.values_from_params(params)
    param_list = [p for mat in state_dict.values() for row in mat for p in row]
    m, v = np.zeros(len(param_list)), np.zeros(len(param_list))
    losses = []
    for step in range(num_steps):
        tokens = train_tokens[step % len(train_tokens)]
        n = min(cfg.block_size, len(tokens) - 1)
        keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
        if not forget_zero_grad:
            zero_grad(param_list)                                       # 1. zero_grad
        position_losses = []
        for pos_id in range(n):                                         # 2. forward and loss
            logits = microgpt.gpt(tokens[pos_id], pos_id, keys, values, state_dict, cfg)
            position_losses.append(-softmax(logits)[tokens[pos_id + 1]].log())
        loss = (1 / n) * sum(position_losses)
        loss.backward()                                                 # 3. backward
        lr_t = lr * (1 - step / num_steps)                              # 4. Adam, lr decayed to 0
        new = adam_update(np.array([p.data for p in param_list]),
                          np.array([p.grad for p in param_list]), m, v, step + 1, lr_t)
        for p, x in zip(param_list, new.tolist()):
            p.data = x
        losses.append(loss.data)
    return np.array(losses)


mine = train_loop(30)
with contextlib.redirect_stdout(io.StringIO()):        # train prints each step's loss; not needed here
    reference = microgpt.train(train_docs, val_docs, vocab, cfg, steps=30, batch_size=1, engine="value",
                               eval_every=30, seed=42)
print("ステップ        1       2       3  ...      28      29      30")
print("自分のループ ", " ".join(f"{x:7.4f}" for x in mine[:3]), "...", " ".join(f"{x:7.4f}" for x in mine[-3:]))
print("microgpt.train", " ".join(f"{x:7.4f}" for x in reference.train_loss[:3]), "...",
      " ".join(f"{x:7.4f}" for x in reference.train_loss[-3:]))
print(f"30 ステップの損失の差の最大：{np.abs(mine - reference.train_loss).max():.1e}")

# %% [markdown]
# 書き出したループは `microgpt.train` と同じ損失の列を出します（差は丸め誤差の大きさか 0）。`microgpt.train` の中身も同じループで、
# `engine="numpy"` ではそれを NumPy エンジンで速く回し、ほかには進み具合の表示や検証損失の記録を足しているだけです。1ステップの損失は名前ごとに大きく揺れます（名前1つぶんの平均なので）。
#
# ## 3. `zero_grad` を忘れると
#
# **予想してから確かめる：** 上のループから `zero_grad` の行を消すと、損失はどうなるでしょうか。(a) 変わらない、(b) ゆっくり下がる、(c) 上がっていく。
#
# <details><summary>答え</summary>
#
# (c) です。`.grad` にはそれまでのステップの勾配が全部足し込まれたまま残るので、Adam が見る「勾配」は過去の勾配の和になります。
# ステップが進むほど古い名前の勾配が重く残り、今のパラメータでの勾配とは向きがずれていきます。下のセルと図が、損失が上がっていく様子です。
#
# </details>

# %%
forgot = train_loop(30, forget_zero_grad=True)
for name, losses in (("zero_grad あり", mine), ("zero_grad なし", forgot)):
    print(f"{name}：10 ステップごとの損失の平均", " ".join(f"{x:.3f}" for x in losses.reshape(3, 10).mean(axis=1)))

# %% [markdown]
# 30 ステップでは、まだ差はわずかです（上の出力：足し込まれた勾配は、最初のうちは今の勾配とほぼ同じ向きなので）。長く見るため、同じことを NumPy エンジンで 300 ステップ行います。
# NumPy エンジンの `loss_and_grads` は毎回新しい勾配を返すので、「足し込まれて残る」ことを `accumulated += grad` と書いて再現します。

# %%
from value import Value

w = Value(0.5)
pairs = [(1.0, 2.0), (2.0, 3.0), (3.0, 7.0), (4.0, 9.0)]    # (x, y): the loss (w x - y)^2, summed
sum((w * x - y) ** 2 for x, y in pairs).backward()
whole = w.grad
zero_grad([w])
for half in (pairs[:2], pairs[2:]):                         # two backward() calls, no zero_grad between
    sum((w * x - y) ** 2 for x, y in half).backward()
print(f"4 組まとめた勾配 {whole}、2 組ずつ2回 backward() して足し込まれた勾配 {w.grad}")

# %% [markdown]
# 上の 300 ステップの比較に戻ります。

# %%
def numpy_loop(num_steps, forget_zero_grad, lr=0.01):
    params = microgpt.init_params(cfg, seed=42)
    flat = flat_buffer(params)                          # every parameter, as one array (views per key)
    m, v, accumulated, losses = np.zeros_like(flat), np.zeros_like(flat), np.zeros_like(flat), []
    for step in range(num_steps):
        loss, grads = microgpt.loss_and_grads(params, [train_tokens[step % len(train_tokens)]], cfg, engine="numpy")
        grad = np.concatenate([grads[key].ravel() for key in params])
        accumulated = accumulated + grad if forget_zero_grad else grad
        flat[:] = adam_update(flat, accumulated, m, v, step + 1, lr * (1 - step / num_steps))
        losses.append(loss)
    return np.array(losses)


fig, ax = plt.subplots(figsize=(10, 3.8))
for forget, label in ((False, "zero_grad あり"), (True, "zero_grad なし（勾配が足し込まれて残る）")):
    losses = numpy_loop(300, forget)
    ax.plot(np.arange(25, 301), np.convolve(losses, np.ones(25) / 25, mode="valid"), label=label)
    print(f"{label}：50 ステップごとの損失の平均", " ".join(f"{x:.2f}" for x in losses.reshape(6, 50).mean(axis=1)))
ax.axhline(np.log(27), color="gray", ls=":", label="一様分布の損失 log 27")
ax.set(xlabel="ステップ", ylabel="損失（25 ステップの移動平均）", title="zero_grad を忘れたときの損失（名前 1 つずつ、300 ステップ）")
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# `zero_grad` を忘れると、損失は一様分布の $\log 27 \approx 3.3$ を大きく超えて上がっていきます。何も学習しないモデルより悪い予測です。
# エラーは出ないので、損失の曲線を見ていなければ気づきません。PyTorch でも同じで、`optimizer.zero_grad()` を忘れると勾配は `.grad` に足し込まれ続けます
# （わざと数ステップぶん足し込むのが「勾配の蓄積」で、そのときは足し込んだステップ数で割ってから更新し、更新の後に `zero_grad` します）。
#
# **よくある質問：それなら、なぜ `backward()` は上書きせずに足し込むのですか。** 足し込むのが正しい場面が2つあるからです。
# 同じパラメータを何か所かで使えば、勾配はそれぞれの道の和です（ノート 02 §4）。そして、大きなバッチを小分けにして `backward()` を何回か呼ぶと、
# 足し込まれた勾配は、大きなバッチを一度に計算した勾配と同じになります。メモリに入らないバッチは、こうして学習します。
# ## 4. 2000 ステップの学習と基準との比較
#
# `microgpt.train` を NumPy エンジンで、1ステップに 16 個の名前、2000 ステップ回します（数秒）。検証損失を、ニューラルネットを使わない3つの基準と比べます。
#
# - **一様**：全トークン等確率、$\log 27 \approx 3.30$。
# - **ユニグラム**：訓練データでの各トークンの頻度（+1 平滑化）。
# - **バイグラム**：直前の1トークンだけを見る条件付き頻度（+1 平滑化、makemore の最初のモデル。練習問題 1 で自分で書きます）。
#
# GPT は文脈の最大 16 トークンを注意で見られるので、バイグラムより下に行けるはずです。

# %%
with contextlib.redirect_stdout(io.StringIO()):
    state = microgpt.train(train_docs, val_docs, vocab, cfg, steps=2000, batch_size=16, engine="numpy",
                           eval_every=100, seed=42)
base = microgpt.baselines(train_tokens, [microgpt.doc_tokens(d, vocab) for d in val_docs], cfg)
BASELINE_JA = {"uniform": "一様", "unigram": "ユニグラム", "bigram": "バイグラム"}
fig, ax = plt.subplots(figsize=(10, 4.2))
tl = np.array(state.train_loss)
ax.plot(np.arange(50, len(tl) + 1), np.convolve(tl, np.ones(50) / 50, mode="valid"), label="訓練損失（50 ステップ移動平均）")
ax.plot(*zip(*state.val_loss), "o-", ms=4, color="tab:red", label="検証損失")
for (name, value), ls in zip(base.items(), ("-.", "--", ":")):
    ax.axhline(value, color="0.3", ls=ls, lw=1, label=f"{BASELINE_JA[name]}基準（検証）{value:.3f}")
ax.set(xlabel="ステップ", ylabel="1 トークンあたりの負の対数尤度", ylim=(1.8, 3.7),
       title="microgpt（n_embd 16、4 ヘッド、1 層）を names で学習（NumPy エンジン）")
ax.legend(fontsize=9, ncol=2)
plt.tight_layout()
plt.show()
print(f"検証損失：ステップ 0 で {state.val_loss[0][1]:.4f} → ステップ {state.step} で {state.val_loss[-1][1]:.4f}；"
      f"バイグラム基準 {base['bigram']:.4f}")

# %% [markdown]
# 検証損失は 3.354 から 2.004 まで下がり、バイグラム基準（2.335）を下回りました。
#
# ## 5. 損失が NaN になったら
#
# 損失が `nan` や `inf` になる原因は、ほとんど次の4つです。どれも NumPy の数行で再現できます。
#
# 1. **学習率が大きすぎる**：$f(w) = w^2$ の勾配降下で学習率 1.5 なら、1歩ごとに $w$ が −2 倍になり、約 1000 歩で inf、その次に inf − inf = NaN。
# 2. **0 の log**：確率が 0 に丸められた成分の $-\log p$ は inf、$0 \cdot \log 0$ は NaN。
# 3. **±1000 のロジット**：最大値を引かずに `exp` すると $e^{1000}$ が溢れ、inf / inf が NaN（ノート 03 §2）。
# 4. **float16**：表せる最大の数は 65504。300 の2乗で、もう inf です。

# %%
with np.errstate(all="ignore"):
    w = 1.0
    for _ in range(1100):
        w -= 1.5 * 2 * w                                     # f(w) = w^2, learning rate 1.5
    p = np.array([1.0, 0.0])
    z = np.array([1000.0, 999.0])
    print("1. 学習率 1.5 で 1100 歩：w =", w)
    print("2. -log p =", 0.0 - np.log(p), "、p log p =", p * np.log(p))
    print("3. 最大値を引かない softmax：", np.exp(z) / np.exp(z).sum(), "、引くと", np.exp(z - z.max()) / np.exp(z - z.max()).sum())
    print("4. float16 の 300 の2乗：", np.float16(300) ** 2, "、最大", np.finfo(np.float16).max)

# %% [markdown]
# 調べる順番は、(1) 学習率を 1/10 にして同じことが起きるか、(2) 損失の式が `log` に 0 を渡していないか（log-softmax を使う）、
# (3) `exp` の前に最大値を引いているか、(4) float16 なら float32 で同じことが起きるか、です。
# `microgpt.train` は損失か勾配が有限でなくなったステップで `NumericError` を出して止まります（デバッガの下でも同じです）。重みは最後の正常なステップのままで、`python microgpt.py` はオブザーバーが持っているその状態から、学習が発散したと報告します。
# どの演算で壊れたかは、`python3 dev.py pdb microgpt.py --engine value ...` で実行すると分かります。`value.py` は正でない数の log や `exp` の溢れで `NumericError` を出し、デバッガの下ではそこで止まります（`docs/debugging.ja.md`）。
#
# ## 6. 自分のテキストで学習する
#
# `--corpus` に、1行に1つの文書を書いた UTF-8 のテキストファイルを渡すと、そのファイルで学習します。文字は何でもかまいません（語彙はファイルの文字から作ります）。
# 動物の名前 20 個で試します。

# %%
import subprocess
import tempfile

animals = "たぬき きつね うさぎ りす くま しか いのしし さる ねずみ もぐら いたち かもしか むささび おこじょ てん あなぐま はくびしん やまね こうもり かわうそ"
with tempfile.TemporaryDirectory() as tmp:
    corpus = Path(tmp) / "animals.txt"
    corpus.write_text("\n".join(animals.split()) + "\n", encoding="utf-8")
    run = subprocess.run([sys.executable, str(ROOT / "microgpt.py"), "--corpus", str(corpus), "--engine", "numpy",
                          "--steps", "300", "--eval-every", "300", "--num-samples", "5", "--lang", "ja"],
                         capture_output=True, text=True, check=True)
print("\n".join(line for line in run.stdout.splitlines() if not line.startswith("ステップ ") or "300/300" in line))

# %% [markdown]
# 20 行では、モデルは訓練用の名前を覚えるだけです（訓練損失は下がり、検証損失は基準より悪い：過学習）。生成される名前も、ほとんど訓練データそのものです。
# 意味のある学習には、数千行のテキストを用意してください（`names` は 5163 行）。端末では `python3 dev.py run --corpus ファイル` で同じことができます。

# %% [markdown]
# ## まとめ
#
# | 見たこと | 要点 | 節 |
# |---|---|---|
# | Adam | 勾配の平均 $m$ と2乗の平均 $v$ の指数移動平均。$m_0 = v_0 = 0$ から始めるので $E[m_t] = (1-\beta_1^t)E[g]$、$1-\beta_1^t$ で割って補正する | §1 |
# | 学習ループ | `zero_grad` → 順伝播と損失 → `backward` → 更新。`microgpt.train` と同じ損失の列になる | §2 |
# | `zero_grad` を忘れる | 勾配が足し込まれて残り、損失は一様分布より悪くなるまで上がる。エラーは出ない | §3 |
# | 基準との比較 | 2000 ステップで検証損失はバイグラム基準を下回る | §4 |
#
# ## 理解度チェック
#
# **問1.** $\beta_1 = 0.85$ のとき、偏り補正をしない $m_1$ は勾配 $g_1$ の何倍ですか。補正後の $\hat m_1$ はどうですか。
#
# <details><summary>答え</summary>
#
# $m_1 = (1-\beta_1)g_1 = 0.15\,g_1$ です。補正後は $\hat m_1 = m_1/(1-\beta_1) = g_1$ で、最初のステップから勾配の期待値を正しく見積もります（§1）。
#
# </details>
#
# **問2.** `backward()` は勾配を `.grad` に代入せず、足し込みます。なぜそう作ってあるのですか。そのせいで学習ループに何が必要になりますか。
#
# <details><summary>答え</summary>
#
# 1つの値が計算グラフの何か所で使われても、それぞれの道の勾配を足し合わせるためです（同じ重みが全位置で使われる）。そのため、ステップの初めに `zero_grad` で 0 に戻す必要があり、
# 忘れると過去のステップの勾配が残って、損失が上がっていきます（§3）。
#
# </details>
#
# **問3.** 学習率 `lr * (1 - step / num_steps)` は最後のステップでいくつになりますか。学習率を減らしていく理由は何ですか。
#
# <details><summary>答え</summary>
#
# 最後のステップ（`step = num_steps - 1`）で `lr / num_steps`、ほぼ 0 です。1ステップの損失は名前ごとに揺れるので、学習率が大きいままだと
# パラメータは最後まで揺れ続けます。減らしていくと揺れが小さくなり、最後のほうは細かい調整になります。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を自分のコードに置き換えてから、その下のチェックセルを実行してください。
# チェックは、いくつかの入力であなたの答えとプロジェクトの関数で計算した答えを比べて表にします（まだ解いていなければ 未回答）。
# プロジェクトの関数を呼べば答えは出せますが、自分で導いて書くことが練習の目的です。
#
# ### 練習問題 1：バイグラム基準の検証損失
#
# 関数 `bigram_loss(train_tokens, val_tokens, vocab_size)` を書いてください。`train_tokens` と `val_tokens` はトークン列（`[BOS] + 文字 + [BOS]` の整数のリスト）のリストです。
# 訓練データのすべての隣り合う組（直前のトークン, 次のトークン）を数え、すべての組に 1 を足してから（+1 平滑化）各行を正規化して条件付き確率 $P(\text{次} \mid \text{直前})$ を作り、
# 検証データのすべての隣り合う組の負の対数尤度の平均（float）を返してください。チェックは `microgpt.baselines(...)["bigram"]`（§4 のバイグラム基準）と比べます。
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
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「09-1」にあります。
#
# </details>

# %%
def bigram_loss(train_tokens, val_tokens, vocab_size):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_09_bigram_loss(bigram_loss)

# %% [markdown]
# ### 練習問題 2：Adam の最初の一歩
#
# $m_0 = v_0 = 0$ から始めた Adam の最初のステップ（$t = 1$）で、パラメータが動く量 $\theta_1 - \theta_0$ を、勾配 `g`（配列）と学習率 `lr` から式で返す
# `adam_first_step(g, lr)` を書いてください（$\varepsilon = 10^{-8}$）。§1 の式に $t = 1$ を入れて簡単にすると、$\beta_1$ と $\beta_2$ が消えます。
# チェックは、`g` に $3$、$-10^{-3}$、$10^{-7}$、$-10^{-9}$、$0$、$5000$ を入れて、Adam の1ステップと比べます。
#
# <details><summary>ヒント 1</summary>
#
# $t = 1$ では $m_1 = (1-\beta_1)g$、$v_1 = (1-\beta_2)g^2$ です。偏り補正で割ると $\hat m_1$ と $\hat v_1$ は何になりますか。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $\sqrt{g^2} = |g|$ です。$|g|$ が $\varepsilon$ よりずっと大きいとき、一歩の大きさは $g$ の大きさによらず何になりますか。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「09-2」にあります。
#
# </details>

# %%
def adam_first_step(g, lr):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_09_first_step(adam_first_step)
