# %% [markdown]
# # PyTorch の概念を組み立てる（2）：モジュールの階層、共有、Dropout、`nn.Linear`
#
# （目安：本編 約40分、練習問題 約24分）
#
# **対応する資料:** 「PyTorchの基本：Parameter、Module、Linear層の仕組み」の 3（nn.Module の恩恵、個別インスタンスと使い回し）、
# 4（Linear 層とバイアス、`[out_features, in_features]`）、5（nn.Parameter と nn.Linear）。
#
# ノート 05 で組み立てた `Module` の続きです。ここでは数の入れ物にこのプロジェクトのスカラーエンジン `value.Value` を使い、
# `Module` に、資料が挙げる残りの恩恵（階層化、`model.to(...)`、学習モードと評価モード）を足していきます。このノートで見られるもの：
#
# - **§1**：入れ子のモジュールと点でつないだ名前、`model.eval()` が子まで届くこと、モジュールの `to()`（その場で変える）とテンソルの `to()`（新しいものを返す）。
# - **§2**：パラメータを持つモジュールを共有しても学習は壊れない（勾配が足されるだけ。GPT-2 の weight tying）。
# - **§3**：学習モードと評価モードで Dropout が何を変えるか。
# - **§4**：`nn.Parameter`（原材料）と `nn.Linear`（完成品）を同じ層で並べる。
# - **§5**：`nn.Linear` の `[out, in]` レイアウトとバイアス。キーのバイアスが厳密に効かないこと、資料の挙げる理由の確かめ。
# - **§6**：ノート 01 の自分の `Value` に `exp` を足す（ノート 10 で自分の部品だけで学習する準備）。
# - **発展**（任意）：torch が入っていれば、§1〜§5 を本物の PyTorch で確かめる（入っていなければ1行の案内だけ）。
# - **まとめ、理解度チェックと練習問題**：バイアスと ReLU のある線形層の逆伝播、Dropout の逆伝播。

# %%
import math
import sys
import time
from pathlib import Path

ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists()), None)
if ROOT is None:  # the kernel was started outside the repository: say so, instead of a bare StopIteration
    raise FileNotFoundError(f"value.py が {Path.cwd()} にもその上のフォルダにもありません。"
                            "Jupyter はこのリポジトリの中（ルートか notebooks/）で起動してください")
for path in (ROOT, ROOT / "notebooks"):  # the project's modules live at the root, exercises.py in notebooks/
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import exercises
import numpy as np

from microgpt import GPTConfig, init_params
from model_config import flat_buffer, pack_params, param_shapes
from utils import linear, softmax, softmax_np, softmax_np_backward
from value import Value

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1. 入れ子のモジュールと `model.to(...)`
#
# 次の `Module` は、ノート 05 の `Module` と同じく `__setattr__` で台帳に登録し、さらに3つを持ちます。
#
# - `named_parameters()`：子モジュールの中までたどり、`attn.w` のように点でつないだ名前で集める（資料の「モジュールの階層化」）。
# - `train()` / `eval()`：`training` フラグを子モジュールまで書き換える（資料の「モード切り替え」）。フラグを書くだけで、読むのは `forward` の中の部品です（§3）。
# - `to(dtype)`：木の中のすべてのパラメータを **その場で** 変えて、モジュール自身を返す（資料の「デバイスの一括転送」）。
#   GPU がないので、デバイスの代わりに型（float16 への丸め）を変えます。

# %%
class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        self.training = True

    def __setattr__(self, name, value):       # notebook 05's build
        if isinstance(value, Value):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def named_parameters(self, prefix=""):
        for name, p in self._parameters.items():
            yield prefix + name, p
        for name, child in self._modules.items():
            yield from child.named_parameters(prefix + name + ".")

    def train(self, mode=True):               # sets the flag here and in every module inside
        object.__setattr__(self, "training", mode)
        for child in self._modules.values():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def to(self, dtype):                      # in place: the same Values, rounded contents
        for _, p in self.named_parameters():
            p.data = float(np.dtype(dtype).type(p.data))
        return self

    def __call__(self, *args):
        return self.forward(*args)


class Scale(Module):
    def __init__(self, w):
        super().__init__()
        self.w = Value(w)

    def forward(self, x):
        return self.w * x


class Block(Module):
    def __init__(self):
        super().__init__()
        self.attn, self.mlp = Scale(0.1), Scale(-2.0)   # child modules, each with its own parameter

    def forward(self, x):
        return self.mlp(self.attn(x))


block = Block()
print("named_parameters：", [(name, p.data) for name, p in block.named_parameters()])
block.eval()
print("eval() のあと training：", block.training, block.attn.training, block.mlp.training)
w_object = block.attn.w
returned = block.to("float16")
print(f"block.to('float16') が返すのは block 自身：{returned is block}、attn.w は同じ Value：{block.attn.w is w_object}、"
      f"値は {block.attn.w.data!r}（0.1 を float16 に丸めたもの）")
t = Value(0.1)
t16 = Value(float(np.float16(t.data)))   # tensor.to(...): a new object; t itself is left as it was
print(f"テンソルの to にあたるもの：新しい Value {t16.data!r}、元の t は {t.data!r} のまま")

# %% [markdown]
# 名前は `attn.w`、`mlp.w` と点でつながり、`eval()` は子のフラグまで変えます。モジュールの `to()` はその場で変えて自分自身を返すので
# `model.to(device)` と書くだけでよく、テンソルの `to()` は新しいものを返すので `t = t.to(device)` と代入し直します。
#
# microgpt では、全パラメータが1本の連続したバッファのビュー（`flat_buffer`）なので、型の変換は1回で済みます（`microgpt.py --dtype float32` の中身）。
# ただし `pack_params` は新しい辞書を返し、元はそのままです。モジュールの `to()` ではなく、テンソルの `to()` と同じふるまいです。

# %%
cfg = GPTConfig(vocab_size=27)
mg = init_params(cfg)
flat = flat_buffer(mg)
print(f"microgpt：{len(mg)} 個のパラメータ配列がすべて1本のバッファ（{flat.size} 個の数）のビュー："
      f"{all(a.base is flat for a in mg.values())}")
as32 = pack_params(mg, cfg, dtype=np.float32)
print(f"pack_params(..., float32)：新しい辞書の型 {sorted({str(a.dtype) for a in as32.values()})}、元は {mg['wte'].dtype} のまま")

# %% [markdown]
# ## 2. 共有しても学習は壊れない：重み共有（weight tying）
#
# 資料の「④ 個別インスタンス vs 使い回し」は、パラメータを持つモジュールを2か所で共有すると
# 「お互いのパラメータ学習を破壊し合ってモデルが壊れてしまう」と書いています。これは言い過ぎです。1つのパラメータを2か所で使うと、
# 逆伝播で2本の道の勾配が **足し合わされる** だけで（ノート 02 §4 の「勾配は足し合わされる」）、学習はふつうに進みます。共有は「2か所の値を同じにする」という制約で、
# GPT-2 は入力の埋め込み `wte` と出力層 `lm_head` を同じ行列で共有しています（weight tying）。
# 資料の言い分のうち正しいのは、LayerNorm の scale と shift パラメータ（拡大縮小と平行移動）の最適な値が norm1 と norm2 で違うなら、
# 共有するとその違いを表せなくなる（表現力を削る）、というところまでです。
# 資料のたとえでは、パラメータを持つモジュールは場所ごとに別の記録を書き込む「個人の日記帳」、持たないものは誰が使っても
# 状態が変わらない「ハサミ」や「電卓」です。日記帳を2か所で共有しても壊れはせず、2か所に同じことを書く約束になるだけです。
#
# 小さな「次の文字」モデル $h = \tanh(E[x]\,A)$、ロジット $= h\,W^\top$ で、出力の重み $W$ を埋め込み $E$ と共有するか（$W = E$）、
# 同じ値の別のパラメータ $U$ にするかで、勾配を比べます。

# %%
def tied_loss(E, A, W):
    """Cross-entropy of two (input, target) pairs; h = tanh(E[x] A), logits = h W^T."""
    loss = 0.0
    for x, target in ((0, 1), (2, 0)):
        h = [v.tanh() for v in linear(E[x], [list(col) for col in zip(*A)])]
        loss = loss - softmax(linear(h, W))[target].log()
    return loss


r = np.random.default_rng(1)
E_vals, A_vals = r.normal(0, 0.5, (3, 2)), r.normal(0, 0.5, (2, 2))
grads = {}
for tied in (True, False):
    E, A, U = ([[Value(float(v)) for v in row] for row in vals] for vals in (E_vals, A_vals, E_vals))
    tied_loss(E, A, E if tied else U).backward()
    grads[tied] = [np.array([[v.grad for v in row] for row in M]) for M in (E, U)]
print("共有した E の勾配：\n", grads[True][0])
print("共有しない場合の E の勾配（埋め込みとして）+ U の勾配（出力層として）：\n", grads[False][0] + grads[False][1])
print("最大の差：", np.abs(grads[True][0] - grads[False][0] - grads[False][1]).max())

# %% [markdown]
# 共有した $E$ の勾配は、埋め込みとしての勾配と出力層としての勾配の和です（差は丸め誤差の大きさ）。オプティマイザはこの和で $E$ を1回更新するだけで、
# 何も「破壊」されません。
#
# ## 3. 学習モードと評価モード：Dropout
#
# `model.train()` / `model.eval()` はフラグを書き換えるだけで、フラグを読んで振る舞いを変えるのは `forward` の中の部品です。代表が Dropout です。
# 学習モードでは各成分を確率 $p$ で 0 にし、残りを $1/(1-p)$ 倍します（期待値が変わらないように。PyTorch の `nn.Dropout` と同じ「inverted dropout」）。
# 評価モードでは何もしません。Dropout はパラメータを持たないので、資料の言うとおり1つを使い回せます（「ハサミ」の側）。

# %%
class Dropout(Module):
    def __init__(self, p, seed=0):
        super().__init__()
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "rng", np.random.default_rng(seed))

    def forward(self, xs):
        if not self.training:
            return xs
        keep = self.rng.random(len(xs)) >= self.p
        return [x * (1.0 / (1.0 - self.p)) if k else x * 0.0 for x, k in zip(xs, keep)]


drop = Dropout(0.5)
xs = [Value(float(v)) for v in range(1, 7)]
for call in (1, 2):
    out = drop(xs)
    print(f"学習モード、{call} 回目：", [o.data for o in out])
sum(out).backward()
print("  2 回目の出力の和に対する入力の勾配：", [x.grad for x in xs], "（落とした成分は 0）")
means = np.mean([[o.data for o in drop(xs)] for _ in range(20000)], axis=0)
print("学習モード、20000 回の平均：", means.round(2), "（入力に戻る：期待値が保たれる）")
drop.eval()
print("評価モード：", [o.data for o in drop(xs)], "（毎回入力のまま）")

# %% [markdown]
# 学習モードでは呼ぶたびに違う成分が落ち、落ちた成分の入力には勾配が届きません。`model.eval()` を呼び忘れて評価すると結果が毎回ランダムに変わるのはこのためです。
# microgpt には Dropout がないので、学習と評価で計算は変わりません。
#
# ## 4. `nn.Parameter` と `nn.Linear`：原材料と完成品
#
# 資料の「5.」は、`nn.Parameter` を原材料（ネジ）、`nn.Linear` を完成品（エンジン）にたとえます。同じ線形層を2通りに書いて並べます。
# 完成品の `Linear(n_in, n_out)` は、作ると重み（`[out][in]`）とバイアスを PyTorch の既定と同じ $U(-1/\sqrt{\text{fan\_in}}, 1/\sqrt{\text{fan\_in}})$ で初期化して登録し、
# 呼ぶと $Wx + b$ を計算します。原材料で組むと、作る・初期化する・式を書くのが自分の仕事です。

# %%
class Linear(Module):
    def __init__(self, n_in, n_out, rng):
        super().__init__()
        bound = 1 / math.sqrt(n_in)
        for o in range(n_out):                # one Value per entry, registered under weight.o.i
            for i in range(n_in):
                setattr(self, f"weight.{o}.{i}", Value(float(rng.uniform(-bound, bound))))
            setattr(self, f"bias.{o}", Value(float(rng.uniform(-bound, bound))))
        object.__setattr__(self, "shape", (n_out, n_in))

    def forward(self, x):
        n_out, n_in = self.shape
        W = [[self._parameters[f"weight.{o}.{i}"] for i in range(n_in)] for o in range(n_out)]
        return [y + self._parameters[f"bias.{o}"] for o, y in enumerate(linear(x, W))]


layer = Linear(4, 3, np.random.default_rng(5))                  # the finished product
W_raw = [[layer._parameters[f"weight.{o}.{i}"].data for i in range(4)] for o in range(3)]
b_raw = [layer._parameters[f"bias.{o}"].data for o in range(3)]  # the raw materials, by hand
x_in = [0.5, -1.0, 2.0, 0.25]
by_hand = [sum(w * xi for w, xi in zip(row, x_in)) + b for row, b in zip(W_raw, b_raw)]
print(f"Linear(4, 3) のパラメータ：{len(list(layer.named_parameters()))} 個（重み 12 + バイアス 3）、"
      f"初期化の範囲 1/√4 = {1 / math.sqrt(4)}、最大の |w| = {np.abs(W_raw).max():.3f}")
print("layer(x)      ：", [round(y.data, 6) for y in layer([Value(v) for v in x_in])])
print("原材料で手書き：", [round(y, 6) for y in by_hand])

# %% [markdown]
# 計算は同じです。違うのは、誰がパラメータを作り、初期化し、登録し、式を書くかだけです。microgpt は原材料の書き方で、`init_params` がすべての行列を作り、`gpt` が式を書いています。
#
# ## 5. `nn.Linear`：`[out, in]` レイアウトとバイアス
#
# `utils.linear(x, w)` の `w` は **行が出力、列が入力** です（`nn.Linear.weight` と同じ `[out_features, in_features]`）。行ごとに $y_o = \sum_i w_{oi} x_i$、
# つまり縦ベクトルで書けば $y = Wx$。行ベクトルのバッチ $X$（形 `[N, in]`）では NumPy 版 `linear_np` が $Y = XW^\top$ を計算します。
# バイアスがなければ $x = 0$ で必ず $y = 0$（原点を通る）で、バイアスがあれば平行移動できます。
#
# ### アテンションの射影にバイアスはあるか
#
# 資料は「現代の高性能なLLM（GPT-3、LLaMA、Chinchillaなど）のアテンション射影では、bias=False」が主流だと書きます。モデルごとに分けると、
# **GPT-2 にはバイアスがあります**（`c_attn` と `c_proj` はどちらもバイアス付き。GPT-3 の論文は構造を GPT-2 と同じとしているので、GPT-3 を例に挙げる根拠は弱い）。
# **LLaMA は落としています。** **microgpt はバイアスを1つも持ちません**（次のセル）。
#
# 資料の理由 (2)「キーやクエリに特定の方向を固定で持たせる必要がない」は、射影ごとに分けるともっとはっきり言えます。
# キーの射影にバイアス $b_k$ を足すと、ロジット $q \cdot (k_t + b_k)$ は **どのキー $t$ にも同じ** $q \cdot b_k$ だけずれるだけです。softmax はシフト不変なので、
# 注意の重みは変わらず、$b_k$ に届く勾配も厳密に 0 です。バリューのバイアス $b_v$ は重みの和が 1 なので出力に $b_v$ を足すだけ（出力射影のバイアスにまとめられる）。
# 効くのはクエリのバイアスだけです。

# %%
print("microgpt のパラメータに bias という名前のものがあるか：", any("bias" in key for key, _ in param_shapes(cfg)))
r = np.random.default_rng(5)
d_h, T_k = 8, 6
q0, K0, V0 = r.normal(size=d_h), r.normal(size=(T_k, d_h)), r.normal(size=(T_k, d_h))
b_q, b_k, b_v = r.normal(size=d_h), r.normal(size=d_h), r.normal(size=d_h)


def attend(q, K, V):
    p = softmax_np(K @ q / math.sqrt(d_h))
    return p, p @ V


p0, out0 = attend(q0, K0, V0)
ds = softmax_np_backward(r.normal(size=T_k), p0)         # dL/d(logits) for any upstream gradient
print(f"キーのバイアス：重みの変化の最大 {np.abs(attend(q0, K0 + b_k, V0)[0] - p0).max():.1e}、"
      f"b_k の勾配 = Σ_t dL/ds_t · q/√d の最大 {np.abs(ds.sum() * q0 / math.sqrt(d_h)).max():.1e}")
print(f"バリューのバイアス：出力 − 元の出力 − b_v の最大 {np.abs(attend(q0, K0, V0 + b_v)[1] - out0 - b_v).max():.1e}")
print(f"クエリのバイアス：重みの変化の最大 {np.abs(attend(q0 + b_q, K0, V0)[0] - p0).max():.2f}")
C_, L_, V_, T_ = 768, 12, 50257, 1024                          # GPT-2 small (124M)
weights = V_ * C_ + T_ * C_ + L_ * (3 * C_ * C_ + C_ * C_ + 4 * C_ * C_ + 4 * C_ * C_)
biases = L_ * (3 * C_ + C_ + 4 * C_ + C_)                      # c_attn, attn.c_proj, c_fc, mlp.c_proj
total = weights + biases + (2 * L_ + 1) * 2 * C_               # + LayerNorm gains and biases
print(f"GPT-2 small：パラメータ {total:,} 個のうち、線形層のバイアスは {biases:,} 個（{biases / total:.3%}）")

# %% [markdown]
# キーのバイアスは重みを変えず、勾配も丸め誤差の大きさの 0 です。K のバイアスは「要らない」のではなく **意味がない**、V のバイアスは **別の場所にまとめられる** もので、
# 資料の理由 (2) はこの形で正確になります。理由 (1)「過学習を防ぎ、数値的に安定」のうち、過学習は弱い理由です（GPT-2 small でも線形層のバイアスは全パラメータの 0.07%：上の出力の最後の行。
# 巨大なコーパスをほぼ1周だけ学習する事前学習では、過学習は主な問題になりにくい）。安定性については PaLM の論文（Chowdhery et al., 2022）が、
# バイアスを使わず大きなモデルの学習が安定したと報告しています。資料の挙げる Chinchilla の論文の主題は計算量の配分で、バイアスを論じたものではありません。
#
# ### なぜ `[out, in]` なのか：資料の3つの理由
#
# 1. **縦ベクトルの数式 $y = Wx$ との整合**：そのとおりです。`W[o]` は出力 $o$ のニューロンの重みベクトルそのもの（1行）です。
# 2. **行優先のメモリ配置で計算が速い**：`W.T` はコピーではなく、同じメモリを列優先として読む **ビュー** で、行列積のライブラリ（BLAS）は「転置して読む」指定をそのまま受け取ります。
#    次のセルで、`[out, in]` で持った重みとの積 `x @ W.T` と、`[in, out]` で持った重みとの積 `x @ W` の時間を、交互に 31 回測った比の中央値で比べます。
#    比は実行のたびに揺れ、ハードウェア（とくに GPU）の行列積のライブラリには並びの好みがありえるので、ここで言えるのはこの環境のこの計測のことだけです。
# 3. **ブロードキャストへの適合**：成り立ちません。`x @ W.T` のバッチ次元は `x` の側の話で、重みをどちらの並びで持っても同じように計算されます（次のセルの最後の行）。

# %%
r = np.random.default_rng(7)
W_oi = r.normal(size=(512, 512))                  # [out, in], as nn.Linear stores it
W_io = np.ascontiguousarray(W_oi.T)               # the same weights stored [in, out]
x_b = r.normal(size=(256, 512))
print(f"W.T は W のビュー（コピーなし）：{np.shares_memory(W_oi, W_oi.T)}、"
      f"結果はビット単位で同じ：{np.array_equal(x_b @ W_oi.T, x_b @ W_io)}")
ratios = []
for _ in range(31):                               # alternate the two; the median of the pair ratios
    t0 = time.perf_counter()
    x_b @ W_oi.T
    t1 = time.perf_counter()
    x_b @ W_io
    ratios.append((t1 - t0) / (time.perf_counter() - t1))
ratio = float(np.median(ratios))
verdict = "ほぼ同じ（差は 1 割未満）" if 0.9 <= ratio <= 1.1 else ("[out, in] のほうが速い" if ratio < 1 else "[in, out] のほうが速い")
print(f"時間の比 (x @ W.T) / (x @ W) の中央値 {ratio:.2f}（31 組の範囲 {min(ratios):.2f}〜{max(ratios):.2f}）：{verdict}")
x_4d = r.normal(size=(2, 3, 5, 512))              # [batch, heads, tokens, features]
print("4 次元の入力：", (x_4d @ W_oi.T).shape, "同じ値：", np.array_equal(x_4d @ W_oi.T, x_4d @ W_io))

# %% [markdown]
# 時間の比とその読み方は上の出力のとおりです（1回の計測で、揺れの範囲も並べています）。`[out, in]` を選ぶ理由として確かに残るのは 1 の「数式と同じ形」です。
# 3 は理由になりません。2 はこの計測だけでは言えず、少なくとも `W.T` がコピーを生まないことは確かです。

# %% [markdown]
# ## 6. 自分の `Value` に `exp` を足す
#
# ノート 01 の `Value` には `+`、`*`、`tanh` しかありません。第22章の `softmax` には `exp`、損失には `log`、`rmsnorm` には累乗が要ります。
# 1回に1つずつ足し（06 で `exp`、08 で `log`、10 で累乗）、ノート 10 で自分の部品だけで学習します。
# $y = e^x$ の微分は $e^x$ 自身なので、局所勾配は出力の値 $y$ です。`exp(a)` を、ノート 01 の `tanh` と同じく1つのノードとして書いてください。
# ここの `Value` は `value.py` のものですが、作り方 `Value(値, 子, 局所勾配, 演算名)` はノート 01 と同じなので、書いた関数はノート 10 で自分の `Value` とそのまま使えます。
# チェックは局所勾配を数値微分（中心差分）と比べるので「完全一致」にはならず、「近い」が正解です。

# %%
def exp(a):
    # ここに書く：e = math.exp(a.data) として Value(e, (a,), (局所勾配,), "exp")
    raise NotImplementedError


# %%
exercises.check_06_exp(Value, exp)

# %% [markdown]
# ## 発展：本物の PyTorch で（任意）
#
# torch が入っている環境なら、次のセルは §1〜§5 で組み立てたものを本物の `nn.Module`、`nn.Dropout`、`nn.Linear` で実行し、このノートの結果と並べます。
# このプロジェクトは PyTorch なしで動くので、入っていなければ1行の案内だけを表示します。

# %%
import importlib.util

if importlib.util.find_spec("torch") is None:
    print("torch は入っていません（見るには .venv で pip install torch。このプロジェクト自体は torch なしで動きます）")
else:
    import torch
    from torch import nn

    class TorchBlock(nn.Module):                            # §1's Block: two child modules
        def __init__(self):
            super().__init__()
            self.attn, self.mlp = nn.Linear(1, 1, bias=False), nn.Linear(1, 1, bias=False)

    def verdict(same):
        return "→ 一致" if same else "→ 不一致"

    tb = TorchBlock()
    names_t, names_mine = [n for n, _ in tb.named_parameters()], [n for n, _ in block.named_parameters()]
    print("§1 named_parameters：PyTorch", names_t, "、ここで組み立てたもの", names_mine,
          verdict([n.split(".")[0] for n in names_t] == [n.split(".")[0] for n in names_mine]))
    tb.eval()
    flags_t = (tb.training, tb.attn.training, tb.mlp.training)
    flags_mine = (block.training, block.attn.training, block.mlp.training)
    print("§1 eval() のあと training：PyTorch", flags_t, "、ここで組み立てたもの", flags_mine, verdict(flags_t == flags_mine))
    w_before = tb.attn.weight
    to_t = (tb.to(torch.float16) is tb, tb.attn.weight is w_before)
    print(f"§1 モジュールの to が自分自身を返し、同じ Parameter を変える：PyTorch {to_t}、ここで組み立てたもの "
          f"{(returned is block, block.attn.w is w_object)}", verdict(to_t == (returned is block, block.attn.w is w_object)))

    def torch_tied_loss(E, A, W):                           # §2's tied_loss: h = tanh(E[x] A), W h
        loss = 0.0
        for x, target in ((0, 1), (2, 0)):
            loss = loss - torch.log_softmax(W @ torch.tanh(E[x] @ A), dim=0)[target]
        return loss

    E_t = torch.tensor(E_vals, requires_grad=True)
    torch_tied_loss(E_t, torch.tensor(A_vals), E_t).backward()
    print(f"§2 共有した E の勾配：PyTorch と Value の差の最大 {np.abs(E_t.grad.numpy() - grads[True][0]).max():.1e}")
    t_drop, x6 = nn.Dropout(0.5), torch.arange(1.0, 7.0)
    kept = t_drop(x6)
    print("§3 nn.Dropout(0.5)：学習モード", kept.tolist(), "（落とすか 2 倍か）",
          verdict(bool(((kept == 0) | (kept == 2 * x6)).all())), "、評価モードで入力のまま",
          verdict(torch.equal(t_drop.eval()(x6), x6)))
    t_layer = nn.Linear(4, 3)
    print(f"§4、§5 nn.Linear(4, 3)：weight の形 {tuple(t_layer.weight.shape)}（[out, in]。ここでは {layer.shape}）",
          verdict(tuple(t_layer.weight.shape) == layer.shape), f"、パラメータ {sum(q.numel() for q in t_layer.parameters())} 個"
          f"（ここでは {len(list(layer.named_parameters()))} 個）",
          verdict(sum(q.numel() for q in t_layer.parameters()) == len(list(layer.named_parameters()))))


# %% [markdown]
# ## まとめ
#
# | 資料の項目 | ここで確かめたこと | 節 |
# |---|---|---|
# | 階層化、モード切り替え、`model.to` | 名前は点でつながる。`eval()` は子まで届くフラグ。モジュールの `to()` はその場で、テンソルの `to()` は新しいものを返す | §1 |
# | 個別インスタンスと共有 | 共有しても学習は壊れない（勾配が足される）。GPT-2 は `wte` と `lm_head` を共有する | §2 |
# | Dropout | 学習モードでは落として $1/(1-p)$ 倍、評価モードでは何もしない | §3 |
# | `nn.Parameter` と `nn.Linear` | 同じ計算。完成品は作る・初期化する・登録する・式を書くをまとめて持つ | §4 |
# | `nn.Linear` とバイアス | `[out, in]` は $y = Wx$ の形。キーのバイアスは softmax のシフト不変性で厳密に効かない | §5 |
# | 自分の `Value` に `exp` | 局所勾配は出力の値 $e^x$ そのもの。数値微分と「近い」で確かめる | §6 |
#
# ## 理解度チェック
#
# **問1.** `model.eval()` を呼ぶと、`model` の中の Dropout は何を変えますか。勾配の記録は止まりますか。
#
# <details><summary>答え</summary>
#
# `eval()` は `training` フラグを子モジュールまで `False` にするだけで、Dropout はそのフラグを読んで何も落とさなくなります。
# 勾配の記録は止まりません。記録を止めるのは別のスイッチ `torch.no_grad()`（ノート 05 §3）で、評価では両方を使うのがふつうです。
#
# </details>
#
# **問2.** 同じ `nn.Linear` を2か所で使うと、その重みの勾配はどうなりますか。それは学習を壊しますか。
#
# <details><summary>答え</summary>
#
# 2か所の使い道の勾配の和になります（§2）。学習は壊れません。2か所の重みが同じ値に縛られるという制約が加わるだけで、
# 2か所で違う値が最適なら、その違いを表せなくなる（表現力を削る）というのが正しい言い方です。
#
# </details>
#
# **問3.** キーの射影にだけバイアスを足すと、注意の重みはどう変わりますか。バリューの射影のバイアスはどうですか。
#
# <details><summary>答え</summary>
#
# キーのバイアスは、1つのクエリのすべてのロジットに同じ $q \cdot b_k$ を足すだけなので、softmax のシフト不変性で重みはまったく変わらず、$b_k$ の勾配も 0 です。
# バリューのバイアスは、重みの和が 1 なので出力に $b_v$ をそのまま足すだけで、出力射影のバイアスにまとめられます（§5）。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を自分のコードに置き換えてから、その下のチェックセルを実行してください。
# チェックは、いくつかの入力であなたの答えとプロジェクトの関数で計算した答えを比べて表にします（まだ解いていなければ 未回答）。
# プロジェクトの関数を呼べば答えは出せますが、式を導いて書くことが練習の目的です。
#
# ### 練習問題 1：バイアスと ReLU のある線形層の逆伝播
#
# 順伝播 $Y = \mathrm{relu}(XW^\top + b)$（`np.maximum(linear_np(x, w) + b, 0)`、`w` は `[out, in]`、`b` は長さ `out`、`x` は形 `(..., in)`）の逆伝播
# `linear_relu_np_backward(dy, x, w, b)` を書いてください。出力の勾配 `dy`（形 `(..., out)`）から `(dx, dw, db)` を返します。
# 形はそれぞれ `x`、`w`、`b` と同じです。`x` の先頭の次元はバッチで、2つ以上あることもあります。
# `utils.linear_np_backward(dy, x, w)`（バイアスも ReLU もない線形層の逆伝播）は使ってかまいません。
# チェックは、ReLU の折れ点のすぐそば（活性化前の値が $\pm10^{-12}$）の入力も含めて比べます。
#
# <details><summary>ヒント 1</summary>
#
# 外側から順にたどります。ReLU の局所勾配は、活性化前の値 $a = XW^\top + b$ の符号で決まる 0 か 1 です。それを通った後は、バイアス付きの線形層です。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $b$ はバッチのすべての行に同じものが足されます。1つのパラメータが何か所で使われると、勾配はどうなるのでしたか（§2）。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「06-1」にあります。
#
# </details>

# %%
def linear_relu_np_backward(dy, x, w, b):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_06_linear_relu_backward(linear_relu_np_backward)

# %% [markdown]
# ### 練習問題 2：Dropout の逆伝播
#
# §3 の Dropout を配列で書くと、順伝播は `y = x * keep / (1 - p)` です（`keep` は成分ごとの True / False）。
# 出力の勾配 `dy`、同じ `keep`、確率 `p` から入力の勾配を返す `dropout_backward(dy, keep, p)` を書いてください。
#
# <details><summary>ヒント 1</summary>
#
# 成分ごとの掛け算なので、局所勾配も成分ごとです。$y_i = x_i \cdot c_i$ の $\partial y_i / \partial x_i$ は何ですか。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 落とした成分（`keep` が False）の勾配は 0、残した成分は $1/(1-p)$ 倍です（§3 の出力の勾配の行）。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「06-2」にあります。
#
# </details>

# %%
def dropout_backward(dy, keep, p):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_06_dropout_backward(dropout_backward)
