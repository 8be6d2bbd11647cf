# %% [markdown]
# # 第22章 `gpt`（3）：球面版 `gpt_sphere` との差分と、温度つきサンプリング
#
# （目安：本編 約39分、練習問題 約24分）
#
# **対応する章:** microgpt 本 第22章（推論）と、講義3「プラネタリウムの建設: 球面へのパラダイムシフト」への橋渡し。
# ノート 08 の `gpt` と、同じ引数を取る超球面版（nGPT）`gpt_sphere` を行単位で比べ、学習したモデルから温度を変えて名前を生成します。
#
# このノートで見られるもの：
#
# 1. `gpt` と `gpt_sphere` の **行単位の差分** と、違いの一つひとつの説明。初期化直後の球面版の確率に上限があること（$s_u$ が共通の倍率では何も変えないことは発展で）。
# 2. 温度を変えたときの最初の文字の分布と、各温度で生成した名前。第22章の推論ループ（`engine="value"`）と NumPy 版が同じ名前を出すこと。
# 3. **第22章のしめくくり**：自分の `Value` に累乗を足し、ノート 03 の3つの関数をその上で動かし、01 の `Value`、06 の `exp`、08 の `log`、09 の Adam も合わせた自分の部品だけで tiny GPT を学習して `microgpt.train` と比べる。
# 4. まとめ、理解度チェックと練習問題（球面モードで増えるパラメータ、温度つき softmax）。
#
# §1 には「予想してから確かめる」問いがあります。答えを開く前に、次のセルが何を表示するか予想してみてください。

# %%
import contextlib
import difflib
import inspect
import io
import math  # noqa: F401  (math.exp, math.log, math.tanh: for the pieces pasted in §3)
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
from utils import softmax_np

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=4, suppress=True)
docs = microgpt.load_corpus("names")
vocab = microgpt.build_vocab(docs)
train_docs, val_docs = microgpt.split_docs(docs, seed=42)
BOS = len(vocab)
cfg = microgpt.GPTConfig(vocab_size=len(vocab) + 1)
with contextlib.redirect_stdout(io.StringIO()):   # the model of notebooks 08 and 09: 2000 steps, a few seconds
    params = microgpt.train(train_docs, val_docs, vocab, cfg, steps=2000, batch_size=16, engine="numpy",
                            eval_every=2000, seed=42).params


def nums(vec):
    """The numbers inside a list of Values, as an array (for printing)."""
    return np.array([v.data for v in vec])

# %% [markdown]
# ## 1. `gpt` と `gpt_sphere` の差分
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
# | 埋め込みの後の `x = rmsnorm(x)` | `h = l2_normalize(...)` | `rmsnorm` は $x/\mathrm{RMS}(x)$ なので出力のノルムは約 $\sqrt{C} = 4$（ノート 08 §4.1 の出力）。`l2_normalize` は $x/\lVert x\rVert$ で、半径 1 の単位超球面に置きます。球面版では重み行列の各ベクトルも単位ベクトルに保たれます（学習の各ステップの後にリトラクションで球面に戻す）。 |
# | ブロック入口の `x = rmsnorm(x)` | なし | 隠れ状態 $h$ はすでに単位ベクトルなので、入口の正規化は要りません。 |
# | $q, k$ はそのまま、ロジットは $q_h \cdot k_h / \sqrt{d}$ | ヘッドごとに $q_h, k_h$ を `l2_normalize` して学習可能な $s_{qk}$ を掛け、ロジットは $q_h \cdot k_h \cdot \sqrt{d}$ | 単位ベクトル同士の内積はコサインで $[-1, 1]$ に収まります。$\sqrt{d}$ で割るとロジットがさらに小さくなり注意がほぼ一様になるので、逆に $\sqrt{d}$ を掛け、残りの倍率は $s_{qk}$（初期値 1）に学ばせます。`gpt` の $1/\sqrt{d}$ は、ノルムが制御されていない内積の分散を抑えるためのものです。 |
# | 残差 `x = x + f(x)`（注意と MLP の2か所） | $h \leftarrow \mathrm{Norm}(h + \alpha\,(\mathrm{Norm}(f(h)) - h))$ | ブロックの出力を足し込むのではなく、球面上の $h$ から正規化した出力 $\mathrm{Norm}(f(h))$ の方向へ、次元ごとの学習可能な歩幅 $\alpha$（初期値 `alpha_init` = 0.05）だけ進み、`l2_normalize` で球面に戻します。コードは $h$ を `l2_normalize(h)` と書きますが、$h$ はすでに単位ベクトルなので同じものです。 |
# | `mlp_fc1` の出力をそのまま ReLU へ | `mlp_fc1` の出力に $s_u$ を掛けてから ReLU | 入力が単位ベクトルなので `mlp_fc1` の出力（コサイン）は小さくなります。学習可能な $s_u$（初期値 $\sqrt{C} = 4$、隠れ層のユニットごとに1つ）を掛けます。ただし ReLU の後には正規化 $\mathrm{Norm}(h_M)$ が来るので、**全ユニットの $s_u$ を同じ倍率で変えても何も変わりません**。効くのはユニットどうしの比だけです（発展で確かめます）。 |
# | `logits = linear(x, lm_head)` | `linear(h, lm_head)` に $s_z$ を掛ける | `lm_head` の行も $h$ も単位ベクトルなので、ロジットはコサイン（$[-1, 1]$）。そのままでは softmax がほとんど平らにしかならないので、トークンごとの学習可能な $s_z$ がロジットの幅を決めます。講義3 の von Mises–Fisher 分布の集中度 κ にあたるのがこの $s_z$ です（講義3 のノート 16 §1）。 |
# | — | `base = n_embd ** -0.5`、`_abs(a)` | 倍率 $s_{qk}, \alpha, s_z$ は小さな値（`base` = $1/\sqrt{C}$）で保存し、順伝播で掛け戻します（Adam の一歩がちょうどよい大きさになる、nGPT の工夫）。$\alpha$ は絶対値を取って正に保ちます。 |
# | ヘッドのループ変数 `h` | `hd` | 球面版では `h` が隠れ状態の名前なので、ループ変数の名前を変えただけです。 |


# %% [markdown]
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
print(f"初期化直後の球面版：全位置のロジットの絶対値の最大 = {np.abs(logits_sphere).max():.4f}")
print(f"最大の確率 = {softmax_np(logits_sphere).max():.4f}、上限 e^2 / (e^2 + 26) = "
      f"{np.exp(2) / (np.exp(2) + 26):.4f}")
logits_sphere_np, _ = microgpt.gpt_forward(params_sphere, tokens[:-1], cfg_sphere)
print("gpt_sphere と gpt_forward（球面版）のロジットの差の最大 =", np.abs(logits_sphere - logits_sphere_np).max())

# %% [markdown]
# ロジットの絶対値は最大でも 0.6634 で 1 を超えず、最大の確率は 0.0664 と、上限 0.2213 よりさらに小さくとどまります。
# 学習で $s_z$ が大きくなって初めて、球面版のモデルは鋭い予測を出せます（この $s_z$ の学習は講義3 のノート 15、16 で見ます）。

# %% [markdown]
# ## 2. 温度を変えてサンプリング
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
    print(f"T = {t:4}：最も確率の高い最初の文字 {letters[int(p.argmax())]!r}（p = {p.max():.3f}）、"
          f"最初に BOS（空の名前）p = {p[BOS]:.4f}")

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
    empty = f"、空の名前 {len(names) - len(real)} 個" if len(real) < len(names) else ""
    print(f"T = {t:4}：{', '.join(map(repr, names))}（空でない {len(real)} 個のうち訓練データにないもの {new} 個{empty}）")

# %% [markdown]
# ここまでの `sample` は NumPy エンジン（既定の `engine="numpy"`）で、10 個の名前を 1 位置ずつまとめて進めました。
# `engine="value"` にすると、第22章の推論ループそのもの（`microgpt.sample_value`）が動きます。`gpt()` を 1 位置ずつ呼び、
# KV キャッシュを 1 つずつ伸ばし、`softmax(logits / temperature)` から 1 文字ずつ引きます。
# 2 つのエンジンは各位置の抽選に同じ一様乱数 `u[i, pos]`（同じシードの乱数列の行 `i`）を使うので、同じ名前が出るはずです。

# %%
by_value = microgpt.sample(params, cfg, vocab, num_samples=10, temperature=0.5, seed=7, engine="value")
by_numpy = microgpt.sample(params, cfg, vocab, num_samples=10, temperature=0.5, seed=7, engine="numpy")
print("engine='value' の名前：", ", ".join(by_value))
print("engine='numpy' と同じ名前：", by_value == by_numpy)

# %% [markdown]
# ## 3. 第22章のしめくくり：自分の部品だけで学習する
#
# 第22章の部品は、ここまでにすべて自分で書いてきました。ノート 01 の `Value`（と練習問題 1 の `relu`）、06 の `exp`、08 の `log`、03 の `linear`、`softmax`、`rmsnorm`、09 の `adam_update` です。
# 残る累乗をここで足し、それらだけで tiny GPT を学習して、損失を `microgpt.train` と比べます。
#
# **組み立て（貼り付け）：** 下のセルの `= None` の4行を、それぞれのノートのセル（`def` や `class` のセル）に置き換えてください。
# 貼ったものはそれぞれのノートと同じチェックにもう一度かけ、貼らなければ解答例（`worked_solutions.md` と同じもの）で先へ進みます。

# %%
Value = relu = None                 # ここにノート 01 の Value のクラスと add、mul、tanh、topological_order、backward、relu を貼る
exp = log = None                    # ここにノート 06 の exp とノート 08 の log を貼る
linear = softmax = rmsnorm = None   # ここにノート 03 の linear、softmax、rmsnorm を貼る
adam_update = None                  # ここにノート 09 の adam_update を貼る

# %%
import utils  # (the chapter's functions: where a piece is not pasted yet, or not yet right)

worked = []                         # the pieces that continue as the worked solutions
if Value is None:
    Value = exercises.value_01()
    worked.append("Value")
for name, check, reference in (("relu", lambda f: exercises.check_01_relu(Value, f), exercises.relu_01),
                               ("exp", lambda f: exercises.check_06_exp(Value, f), exercises.exp_06),
                               ("log", lambda f: exercises.check_08_log(Value, f), exercises.log_08),
                               ("linear", exercises.check_03_linear, utils.linear),
                               ("softmax", exercises.check_03_softmax, utils.softmax),
                               ("rmsnorm", exercises.check_03_rmsnorm, utils.rmsnorm),
                               ("adam_update", exercises.check_09_adam, exercises.adam_update_09)):
    if globals().get(name) is None or not check(globals()[name]):   # not pasted, or not yet right
        globals()[name] = reference
        worked.append(name)
print("この先は解答例で続ける部品：", "、".join(worked) if worked else "なし（すべて自分の部品）")

# %% [markdown]
# 累乗 $a^k$（$k$ はただの数）の微分は $k a^{k-1}$ です。`rmsnorm` の $(ms + \epsilon)^{-1/2}$ と、割り算 $a/b = a \cdot b^{-1}$ がこれを使います。
# `power(a, k)` を1つのノードとして書いてください。チェックは 06、08 と同じく、局所勾配を数値微分と比べます。

# %%
def power(a, k):
    # ここに書く：Value(a.data ** k, (a,), (局所勾配,), f"**{k}")
    raise NotImplementedError


# %%
if not exercises.check_10_power(Value, power):   # 未回答か、まだ合わなければ、この先は解答例で
    power = exercises.power_10

# %% [markdown]
# 関数をクラスの属性にすると、メソッドになります（`Value.exp = exp` なら `v.exp()` は `exp(v)`）。
# 引き算と割り算は新しいノードを作らず、`*`、`+`、累乗の組み合わせで書きます。これで `softmax` と `rmsnorm` も自分の `Value` の上で動くので、
# 3つの関数の値と勾配を、章の関数を `value.py` の `Value` で動かしたものと比べます。

# %%
Value.exp, Value.log, Value.relu, Value.__pow__ = exp, log, relu, power
Value.__neg__ = lambda a: a * -1.0               # -a = a · (-1)
Value.__sub__ = lambda a, b: a + -b              # a - b = a + (-b)（b がただの数でも）
Value.__truediv__ = lambda a, b: a * b ** -1     # a / b = a · b^(-1)
exercises.compare_on_values_10(Value, linear, softmax, rmsnorm)

# %% [markdown]
# `gpt` のコードは第22章のままで、その中の名前 `linear`、`softmax`、`rmsnorm` だけを自分の関数に差し替えて実行します（`types.FunctionType` で、同じコードを別の名前の表で動かす）。
# パラメータは自分の `Value` に入れ、学習ループはノート 09 §2 と同じ4つの手順、Adam は自分の `adam_update` です。30 ステップの損失を、同じデータ、シード、初期値の `microgpt.train` と並べます。

# %%
import types

my_gpt = types.FunctionType(microgpt.gpt.__code__, {**vars(microgpt), "linear": linear,
                                                    "softmax": softmax, "rmsnorm": rmsnorm})
model = {key: [[Value(x) for x in row] for row in w.tolist()]
         for key, w in microgpt.init_params(cfg, seed=42).items()}
param_list = [p for mat in model.values() for row in mat for p in row]
m_adam, v_adam = np.zeros(len(param_list)), np.zeros(len(param_list))
train_tokens = [microgpt.doc_tokens(d, vocab) for d in train_docs]
my_losses = []
for step in range(30):
    tokens = train_tokens[step % len(train_tokens)]
    n = min(cfg.block_size, len(tokens) - 1)
    keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
    for p in param_list:                                               # zero_grad
        p.grad = 0.0
    loss = (1 / n) * sum(-softmax(my_gpt(tokens[i], i, keys, values, model, cfg))[tokens[i + 1]].log()
                         for i in range(n))                             # forward and loss
    loss.backward()                                                     # backward
    new = adam_update(np.array([p.data for p in param_list]), np.array([p.grad for p in param_list]),
                      m_adam, v_adam, step + 1, 0.01 * (1 - step / 30))  # Adam, lr decayed to 0
    for p, x in zip(param_list, new.tolist()):
        p.data = x
    my_losses.append(loss.data)
with contextlib.redirect_stdout(io.StringIO()):        # train prints each step's loss; not needed here
    reference_run = microgpt.train(train_docs, val_docs, vocab, cfg, steps=30, batch_size=1, engine="value",
                                   eval_every=30, seed=42)
diff = np.abs(np.array(my_losses) - reference_run.train_loss)
print("ステップ          1       2       3  ...      28      29      30")
for label, losses in (("自分の部品     ", my_losses), ("microgpt.train ", reference_run.train_loss)):
    print(label, " ".join(f"{x:7.4f}" for x in losses[:3]), "...", " ".join(f"{x:7.4f}" for x in losses[-3:]))
print(f"完全一致したステップ {int((diff == 0).sum())} / 30（最初に差が出たのはステップ "
      f"{int(np.argmax(diff > 0)) + 1 if diff.any() else '—'}）、損失の差の最大 {diff.max():.1e}")

# %% [markdown]
# 自分の部品だけで、第22章の学習が再現できました。解答例の部品では、30 ステップのうち 19 が完全一致し（最初に差が出るのはステップ 6）、差の最大は $8.9 \times 10^{-16}$（損失の最後の桁）です（上の出力）。
# 差の出どころは2つで、どちらも丸めです：割り算を $a \cdot b^{-1}$ と計算すると丸めが1回増えること（`value.py` は $a/b$ を1回で計算する。3つの関数の表で `softmax` の行だけが完全一致しないのはこのため）と、
# 何度も使われるノードで、勾配を足し合わせる順番がトポロジカル順の違いで変わること（浮動小数点の足し算は順番で最後の桁が変わる）です。
# 2つとも `value.py` と同じにすると、勾配も損失も完全に一致します（発展で、1ステップ目の勾配で確かめます）。
# 自分の部品で差が $10^{-12}$ より大きければ、上のチェックの表のどの点で外れたかを見てください。

# %% [markdown]
# ## 発展：共通の $s_u$ は何も変えない（読み飛ばしてよい）
#
# §1 の表の $s_u$ の行を確かめます。ReLU は正の数倍と入れ替えられる（$\mathrm{relu}(cu) = c\,\mathrm{relu}(u)$、$c > 0$：正の同次性）ので、
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
print(f"全ユニットの s_u を 7.3 倍：ロジットの変化の最大 = {np.abs(after_all - before).max():.1e}")
print(f"半分のユニットだけ 7.3 倍：ロジットの変化の最大 = {np.abs(after_half - before).max():.3f}")
u = np.linspace(-3, 3, 7)
silu = lambda t: t / (1 + np.exp(-t))  # noqa: E731  (nGPT's SwiGLU gate)
print("7.3 倍して割り戻した差の最大：relu(7.3 u) / 7.3 - relu(u) =", np.abs(np.maximum(7.3 * u, 0) / 7.3 - np.maximum(u, 0)).max(),
      "、silu(7.3 u) / 7.3 - silu(u) =", np.round(np.abs(silu(7.3 * u) / 7.3 - silu(u)).max(), 3))

# %% [markdown]
# 全ユニットを同じ倍率で変えたときのロジットの変化は丸め誤差の大きさで、半分だけ変えると目に見えて変わります（上の出力の2行）。
# $s_u$ が決めるのは「隠れ層の大きさ」ではなく、**ユニットどうしの相対的な重み** です。
# nGPT の論文とコードでは、MLP は ReLU ではなく SwiGLU（$\mathrm{SiLU}(s_v \odot v) \odot (s_u \odot u)$）で、$\sqrt{d_{\text{model}}}$ の因子は
# $s_u$ ではなく SiLU のゲートに入る $s_v$ の側にあります。SiLU は正の同次性を持たない（最後の行：7.3 倍して割り戻すと値が変わる）ので、
# そちらの倍率には意味があるからです。このプロジェクトが論文から変えている点（ReLU と $s_u$ だけ、学習する位置埋め込み `wpe`）は、
# 講義3 のノート 15 の発展 にまとめています。


# %% [markdown]
# ## 発展：差の出どころ（読み飛ばしてよい）
#
# §3 の差の2つの出どころを、1ステップ目の勾配（全パラメータ）で確かめます。解答例の `Value` の割り算を `value.py` と同じ1つのノードにし、
# 次に `backward` が訪れる順番も `value.py` のトポロジカル順（スタックを使う深さ優先探索で、子を逆の順に訪れる）にします。

# %%
import value


def first_step_grads(V):
    """Every parameter's gradient after the first step's backward(), on the Value class V."""
    model = {key: [[V(x) for x in row] for row in w.tolist()]
             for key, w in microgpt.init_params(cfg, seed=42).items()}
    tokens = train_tokens[0]
    n = min(cfg.block_size, len(tokens) - 1)
    keys, values = [[] for _ in range(cfg.n_layer)], [[] for _ in range(cfg.n_layer)]
    loss = (1 / n) * sum(-softmax(my_gpt(tokens[i], i, keys, values, model, cfg))[tokens[i + 1]].log()
                         for i in range(n))
    loss.backward()
    return np.array([p.grad for mat in model.values() for row in mat for p in row])


def divide(a, b):  # a / b in one node, as value.py: d/da = 1/b, d/db = -(a/b)(1/b)
    b = b if isinstance(b, type(a)) else type(a)(b)
    out, inv = a.data / b.data, 1 / b.data
    return type(a)(out, (a, b), (inv, -out * inv), "/")


def backward_in_value_py_order(root):
    root.grad = 1.0
    for node in reversed(value.topological_order(root)):
        for child, local_grad in zip(node._children, node._local_grads):
            child.grad += local_grad * node.grad


want = first_step_grads(value.Value)
V = exercises.value_01()
V.exp, V.log, V.relu, V.__pow__ = exercises.exp_06, exercises.log_08, exercises.relu_01, exercises.power_10
V.__neg__, V.__sub__, V.__truediv__ = Value.__neg__, Value.__sub__, Value.__truediv__
for label, attr, new_method in (("解答例の Value のまま", None, None), ("割り算を1つのノードに", "__truediv__", divide),
                                ("足す順番も value.py と同じに", "backward", backward_in_value_py_order)):
    if attr:
        setattr(V, attr, new_method)
    got = first_step_grads(V)
    print(f"{label}：{want.size} 個の勾配のうち value.py と完全一致 {int((got == want).sum())} 個、"
          f"差の最大 {np.abs(got - want).max():.1e}")


# %% [markdown]
# ## まとめ
#
# | 見たこと | 要点 | 節 |
# |---|---|---|
# | `gpt_sphere` | 正規化を RMSNorm から単位球面（`l2_normalize`）へ。残差は足し込みではなく球面上の一歩。注意のロジットは $\sqrt d$ を掛ける | §1 |
# | $s_u$ と $s_z$ | $s_u$ は共通の倍率では何も変えない（ReLU の後に正規化）。ロジットはコサインに $s_z$ を掛けたもので、初期化直後は確率に上限がある | §1, 発展 |
# | 温度 | `softmax(logits / T)`：低いと無難な名前、高いと分布が平らになり、空の名前も出る | §2 |
# | 2つのエンジン | 第22章の推論ループ（`engine="value"`）と NumPy 版は、同じ乱数で同じ名前を出す | §2 |
# | 自分の部品で学習 | 自分の `Value`、3つの関数、Adam で `gpt` のコードを学習すると、損失は `microgpt.train` と最後の桁まで（丸めの順番の違いだけ）同じ | §3 |
#
# ## 理解度チェック
#
# **問1.** `gpt` は注意のロジットを $\sqrt{d}$（$d$ = `head_dim`）で **割り**、`gpt_sphere` は $\sqrt{d}$ を **掛け** ます。なぜ逆なのですか。
#
# <details><summary>答え</summary>
#
# `gpt` の $q, k$ はノルムが制御されておらず、成分の分散が 1 程度なら内積 $q \cdot k$ の分散は $d$ 程度になります。$\sqrt{d}$ で割ると、ロジットの大きさが $d$ によらず
# 1 程度に保たれ、softmax が飽和するのを防げます。`gpt_sphere` の $q, k$ はヘッドごとに単位ベクトルにされるので、内積はコサインで $[-1, 1]$ に収まります。
# これをさらに割ると注意がほとんど一様になってしまうので、逆に $\sqrt{d}$ を掛け、残りは学習可能な $s_{qk}$ に任せます。
#
# </details>
#
# **問2.** 初期化直後の球面版で、1つの文字の確率が $e^2/(e^2 + 26) \approx 0.22$ を超えられないのはなぜですか。
#
# <details><summary>答え</summary>
#
# $s_z$ の初期値が 1 なので、ロジットはコサインそのもので $[-1, 1]$ に収まります。確率が最も偏るのは 1 つが 1、残り 26 個が $-1$ のときで、そのとき $e^2/(e^2 + 26)$ です（§1）。
#
# </details>
#
# **問3.** 温度 $T$ を 0 に近づけると、また非常に大きくすると、`sample` の出力はそれぞれどうなりますか。$T = 1$ は何を意味しますか。
#
# <details><summary>答え</summary>
#
# $T \to 0$ では最大のロジットのトークンに確率 1 を置く（毎回 argmax を選ぶ）分布に、$T \to \infty$ ではすべてのロジットが 0 に縮むので一様分布（$1/27$）に近づきます。
# $T = 1$ はモデルが学習した分布そのもので、訓練の損失が測っているのはこの分布です（§2）。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を自分のコードに置き換えてから、その下のチェックセルを実行してください。
# チェックは、いくつかの入力であなたの答えとプロジェクトの関数で計算した答えを比べて表にします（まだ解いていなければ 未回答）。
# プロジェクトの関数を呼べば答えは出せますが、自分で読み取って書くことが練習の目的です。
#
# ### 練習問題 1：球面モードで増えるパラメータ
#
# 球面モード（`GPTConfig(norm="sphere")`）には、rmsnorm と同じ行列のほかに **学習可能な倍率のベクトル** があります。§1 の差分の `+` の行に出てくる
# `state_dict[...]` のキーから、どんなベクトルが層ごと（とモデル全体）にいくつあるか、それぞれの長さがいくつかを読み取り、
# 球面モードで増えるパラメータの個数を `cfg` から返す `sphere_extra(cfg)` を書いてください。チェックは、いくつかの設定で
# `microgpt.init_params` の要素数の、球面モードと rmsnorm の差と比べます。
#
# <details><summary>ヒント 1</summary>
#
# 差分の `+` の行で `state_dict[...]` に現れるキーのうち、`-` の行にないものを書き出してください。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 倍率のベクトルは、成分ごとに掛け合わされる相手と同じ長さです。$s_u$ が掛かるのは `mlp_fc1` の出力で、その長さは `mlp_fc1` の行の数です。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「10-1」にあります。
#
# </details>

# %%
def sphere_extra(cfg):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_10_sphere_extra(sphere_extra)

# %% [markdown]
# ### 練習問題 2：温度つきの次トークン分布
#
# 関数 `temperature_probs(logits, temperature)` を書いてください。`logits` は長さ $V$ の数のリスト、`temperature` は正の数で、
# $\mathrm{softmax}(\text{logits} / T)$ を長さ $V$ の NumPy 配列で返します（`sample` が次の文字を引く分布）。`utils.softmax_np` を使わずに、最大値を引いてから `exp` してください。
# チェックは `utils.softmax_np(logits / T)` と比べ、とても大きなロジットと小さな温度（ロジット 1000 で $T = 0.1$）も試します。
#
# <details><summary>ヒント 1</summary>
#
# ロジット 1000 を $T = 0.1$ で割ると 10000 で、`np.exp(10000)` は inf です。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 全部のロジットから同じ数を引いても確率は変わりません（softmax のシフト不変性）。どの数を引けば、`exp` の引数が 0 以下になりますか。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「10-2」にあります。
#
# </details>

# %%
def temperature_probs(logits, temperature):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_10_temperature_probs(temperature_probs)
