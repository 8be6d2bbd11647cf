# %% [markdown]
# # PyTorch の概念を PyTorch なしで
#
# **対応する資料:** 「PyTorchの基本：Parameter、Module、Linear層の仕組み」。
#
# このノートでは、この資料に出てくる PyTorch の基本概念を、このプロジェクトのスカラー自動微分エンジン `value.Value` と
# `utils.py`（第21章の `linear` / `softmax` / `rmsnorm` とその NumPy 版）に対応づけて確かめます。
# 資料の記述のうち PyTorch 2.x の実際の挙動と違うところは、その場で訂正します（このノートは PyTorch を使わないので、
# PyTorch の挙動は文章で述べ、このエンジンでの対応物を実行して見せます。述べた PyTorch の挙動は `tests/test_torch_facts.py` が
# PyTorch 2.x で確かめています。torch が入っていない環境ではそのテストは飛ばされます）。
# 読み終えると、次のものが見られます（先頭の §N がその節）。
#
# - **§1**：`requires_grad` の既定値（普通のテンソルは `False`、`nn.Parameter` は `True`）と、このエンジンでの対応
#   （ただの `float` / パラメータリストに入った `Value`）。
# - **§1**：凍結（フリーズ）をファインチューニングとして：事前学習した重み `w` をオプティマイザから外すと、`w` は
#   事前学習の値のまま動かず、残りのパラメータだけで新しいタスクの損失が下がる様子。
# - **§2**：`model(x)` と `model.forward(x)` の違い：直接呼んでも勾配は記録され、省かれるのは `__call__` の仕事
#   （フック、`model.compile()` 後のコンパイル版への振り分け、JIT トレースでのスコープの記録）。
#   パラメータを持つモジュールを共有しても学習は壊れないこと（勾配が足し合わされるだけ。GPT-2 の `wte` と `lm_head` の重み共有を小さなモデルで）。
#   学習/評価モードは別のスイッチ（`model.train()` / `model.eval()`）で、Dropout がそのフラグで何を変えるか。入れ子のモジュールと `model.to(device)`
#   （モジュールの `to()` はその場で変えて自分自身を返し、テンソルの `to()` は新しいものを返すこと。このプロジェクトでは、全パラメータが1本のバッファのビューなので、型の変換が一度で済むこと）。
#   `nn.Parameter`（原材料）と `nn.Linear`（完成品）を同じ層で並べる。
# - **§3**：`nn.Linear` のバイアスと重みの `[out, in]` レイアウト。GPT-2 のアテンション射影にはバイアスがあり、
#   microgpt にはバイアスが1つもないこと。LLM で `bias=False` が多い理由として資料が挙げる2つを確かめる
#   （キーのバイアスは softmax のシフト不変性で厳密に効かない。バイアスはパラメータのごく一部）。
#   `[out, in]` レイアウトの3つの理由のうち、ブロードキャストの理由は成り立たず、行優先の理由もこの環境では差が出ないこと。
# - **§4**：初期化：He・PyTorch の既定（`nn.Linear`）・microgpt の `N(0, 0.08²)` の標準偏差の比較と、
#   Xavier / He / PyTorch 既定で 30 層を通した活性と勾配の標準偏差（対数軸なので指数的な増減が直線になる）。
# - **§4**：初期値が大きすぎるとき、tanh ではユニットが飽和し（局所勾配 ≈ 0）、それでも 30 層の勾配は爆発する理由。
#   ReLU ではもっと速く爆発すること。
# - **§5**：アテンションの softmax をスケーリング（$1/\sqrt d$）しないと勾配が消える様子を、実際の勾配で。
# - **まとめ、理解度チェックと練習問題**：He 初期化の一様分布版の範囲、バイアスと ReLU のある線形層の逆伝播、キーとバリューに届く勾配（正解すると解答例を開ける）。
#
# §2 と §4 には「予想してから確かめる」問いがあります。答えを開く前に、次のセルが何を表示するか予想してみてください。
#
# コードセルはプロジェクトのモジュールを import して使います。PyTorch の仕組みを説明するための小さなスケッチ
# （`Module` の `__call__`）だけはノートの中に書きます。

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
import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np

from microgpt import (
    GPTConfig,
    baselines,
    build_vocab,
    doc_tokens,
    init_params,
    load_corpus,
    split_docs,
)
from microgpt import adam_step as microgpt_adam
from model_config import flat_buffer, pack_params, param_shapes
from utils import linear, linear_np, linear_np_backward, softmax, softmax_np, softmax_np_backward
from value import Value, topological_order, zero_grad

plt.rcParams["figure.dpi"] = 90

# %% [markdown]
# ## 1. `requires_grad` と `nn.Parameter` ↔ パラメータリストの中の `Value`
#
# 資料は `requires_grad` について「`requires_grad=True (デフォルト)`」と書いていますが、PyTorch 2.x では
# **普通のテンソルの既定値は `False`** です。`torch.tensor(...)` や `torch.rand(...)` で作ったテンソルは
# `requires_grad=False` で、計算は記録されません。既定で `True` になるのは `nn.Parameter(t)` で包んだテンソルだけで
# （`nn.Parameter(t, requires_grad=True)` が既定の引数）、`nn.Module` の属性にすると `model.parameters()` に登録されます。
# 演算の結果は、入力のどれか1つでも `requires_grad=True` なら記録されます（`torch.no_grad()` の中を除く）。
#
# このエンジンでは役割が2つに分かれます。
#
# - **記録されるかどうか** ＝ `Value` か、ただの `float` か。`Value` との演算は計算グラフに記録され、
#   `backward()` で `.grad` が入ります。ただの数（`2.0` など）はノードにすらなりません
#   （`value.py` は定数を、それと演算した `Value` の局所勾配として取り込みます）。
#   ただの `float` が普通のテンソル（`requires_grad=False`）に、`Value` が `requires_grad=True` のテンソルに当たります。
# - **更新されるかどうか** ＝ オプティマイザに渡すリスト `params` に入っているか。
#   これが `model.parameters()`（`nn.Parameter` の登録）に当たります。

# %%
w = Value(0.5)   # like an nn.Parameter: recorded, gets a .grad
b = Value(0.1)
x = 2.0          # plain data, like a plain tensor (requires_grad=False): not even a node in the graph
y = w * x + b
y.backward()
print("y      =", y)
print("w.grad =", w.grad, " (= x)")
print("b.grad =", b.grad, " (= 1)")
print("nodes in the graph:", len(topological_order(y)), "-> w, b, w*x, +  (x enters only as the local gradient of w*x)")

# %% [markdown]
# ### 凍結（フリーズ）＝ ファインチューニング
#
# 資料のとおり、凍結は「学習済みの重みを固定してファインチューニング」するときに使います。
# 小さなモデル $\hat y = v \tanh(w x) + c$ で試します。$w$ は特徴 $\tanh(wx)$ を作る本体、$v, c$ はその上に載るヘッドです。
#
# 1. **事前学習**：タスク A（$y = 2\tanh(1.5x)$）で $w, v, c$ をすべて学習します。
# 2. **ファインチューニング**：タスク B（$y = -1.2\tanh(1.5x) + 0.5$、同じ特徴で別の出力）へ。
#    事前学習した $w$ を凍結して $v, c$ だけを学習します。凍結のやり方は PyTorch と同じく2通りあります。
#    - (i) **オプティマイザから外す**：$w$ は `Value` のままだが `params = [v, c]` だけを更新します。
#      $w$ の勾配は計算されますが使われません（PyTorch でオプティマイザに渡さなかったパラメータと同じ）。
#    - (ii) **`requires_grad=False` 型**：$w$ をただの `float` にします（PyTorch の `w.requires_grad_(False)`）。
#      特徴 $\tanh(wx)$ はただの数として計算され、グラフに入りません。
#    - 比較として (iii) **全部を学習**（凍結しない）。

# %%
xs = [float(v) for v in np.linspace(-2.0, 2.0, 12)]
task_a = [2.0 * math.tanh(1.5 * xi) for xi in xs]
task_b = [-1.2 * math.tanh(1.5 * xi) + 0.5 for xi in xs]


def predict(p, xi):
    """v * tanh(w x) + c. A plain-float w (requires_grad=False) gives a plain-number feature: no graph."""
    feature = (p["w"] * xi).tanh() if isinstance(p["w"], Value) else math.tanh(p["w"] * xi)
    return p["v"] * feature + p["c"]


def train(p, ys, trainable, steps, lr=0.1):
    """Plain SGD on the mean squared error; only the parameters named in `trainable` are updated."""
    losses, w_path = [], []
    for _ in range(steps):
        w_path.append(p["w"].data if isinstance(p["w"], Value) else p["w"])
        loss = sum((predict(p, xi) - yi) ** 2 for xi, yi in zip(xs, ys)) / len(xs)
        zero_grad([q for q in p.values() if isinstance(q, Value)])
        loss.backward()
        for name in trainable:
            p[name].data -= lr * p[name].grad
        losses.append(loss.data)
    return losses, w_path


pretrained = {"w": Value(0.5), "v": Value(0.5), "c": Value(0.0)}
pre_losses, _ = train(pretrained, task_a, ["w", "v", "c"], steps=300)
w_pre = pretrained["w"].data
print(f"pretraining on task A: loss {pre_losses[0]:.3f} -> {pre_losses[-1]:.1e};  w = {w_pre:.4f}, "
      f"v = {pretrained['v'].data:.4f}, c = {pretrained['c'].data:.4f}")

runs = {}
for name, trainable, w_kind in (("(i) w left out of params", ["v", "c"], "Value"),
                                ("(ii) w a plain float", ["v", "c"], "float"),
                                ("(iii) all trained", ["w", "v", "c"], "Value")):
    p = {k: Value(q.data) for k, q in pretrained.items()}   # start from the pretrained values
    if w_kind == "float":
        p["w"] = w_pre
    losses, w_path = train(p, task_b, trainable, steps=150)
    runs[name] = (losses, w_path, p)
    w_now = p["w"].data if isinstance(p["w"], Value) else p["w"]
    w_grad = f"{p['w'].grad:+.3f}" if isinstance(p["w"], Value) else "n/a (not a node)"
    print(f"{name:26s} loss {losses[0]:.3f} -> {losses[-1]:.1e} | w {w_pre:.4f} -> {w_now:.4f} "
          f"(exactly unchanged: {w_now == w_pre}, lowest on the way {min(w_path):.4f}) | "
          f"v = {p['v'].data:+.4f}  c = {p['c'].data:+.4f} | last w.grad = {w_grad}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4))
styles = {"(i)": "-", "(ii)": "--", "(iii)": "-"}  # (i) and (ii) coincide: dashed so both stay visible
labels = {"(i)": "(i) w をオプティマイザから外す", "(ii)": "(ii) w をただの float に",
          "(iii)": "(iii) 全部を学習（凍結なし）"}
for name, (losses, w_path, _) in runs.items():
    key = name.split()[0]
    axes[0].plot(losses, styles[key], label=labels[key])
    axes[1].plot(w_path, styles[key], label=labels[key])
axes[0].set(yscale="log", xlabel="SGD のステップ", ylabel="平均二乗誤差（対数軸）",
            title="タスク B へのファインチューニング：損失")
axes[1].axhline(w_pre, color="gray", lw=0.8, ls=":")
axes[1].annotate(f"事前学習で得た w = {w_pre:.4f}", (100, w_pre), xytext=(0, -6), textcoords="offset points",
                 ha="center", va="top", color="gray")
axes[1].set(xlabel="SGD のステップ", ylabel="w の値", title="事前学習した重み w の動き")
for ax in axes:
    ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# (i) と (ii) は完全に同じ軌跡です。凍結した $w$ は事前学習の値 1.4945 のまま1ビットも変わらず（`exactly unchanged: True`）、
# $v, c$ だけが $-1.2010, +0.5000$ へ動いて、タスク B の損失は 7.370 から $6.6 \times 10^{-7}$ まで下がります
# （0 にならないのは、事前学習の $w$ が 1.5 ちょうどではないぶん）。
# 違いは、(i) では `w.grad` が毎回計算されること（計算の無駄はあるが、凍結を解くには `params` に戻すだけ）、
# (ii) では $w$ がグラフに入らないので計算が軽いことです。PyTorch でオプティマイザに渡さないのが (i)、
# `requires_grad_(False)` が (ii) に当たります。
#
# (iii) の全部を学習では、学習の初め（$v$ が 2.0 から −1.2 へ向かう間）の大きな勾配で $w$ も 1.0486 まで引きずられ、150 ステップ後も
# 1.3727 までしか戻らず、損失は $3.9 \times 10^{-4}$ に留まります。タスク B が事前学習と同じ特徴 $\tanh(1.5x)$ を
# 使うこの例では、凍結したほうが損失も低くなりました。事前学習で得た特徴を壊さず、計算も減らせる、というのが凍結の狙いです。

# %% [markdown]
# ## 2. `nn.Module` / `forward` ↔ `state_dict` を受け取るただの関数
#
# PyTorch の `nn.Module` は、パラメータの登録（`__init__`）と計算の流れ（`forward`）を1つのクラスにまとめます。
# microgpt（第22章）は同じことを **辞書と関数** で書きます。
#
# | PyTorch | このプロジェクト |
# |---|---|
# | `__init__` で `nn.Parameter` を登録 | `state_dict = {"名前": 行列（Value のリストのリスト）}` を作る |
# | `forward(self, x)` | `def mlp(x, state_dict)`（microgpt では `gpt(token_id, pos_id, keys, values, state_dict, cfg)`） |
# | `model.parameters()` | `[p for mat in state_dict.values() for row in mat for p in row]` |
# | `model(x)` と呼ぶ（フック、`model.compile()` 後のコンパイル版、JIT トレースへの振り分けが入る） | ただ関数を呼ぶ。フックもコンパイルも学習/評価モードもない |
# | `with torch.no_grad():`（勾配を記録しない推論） | `Value` を使わず数で計算する。microgpt の `sample(..., engine="numpy")`（既定）は NumPy 版の `gpt_forward` で数だけを計算する。`engine="value"` では第22章の推論ループ `sample_value` が `gpt()` を `Value` で呼ぶので、使わない勾配のための計算グラフも毎回作られる |
# | `model.train()` / `model.eval()`（Dropout などの切り替え） | microgpt には Dropout がないので、切り替えるものがない（下の「学習モードと評価モード」で、切り替えがあるとき何が変わるかを見る） |
#
# ### `model(x)` と `model.forward(x)`：違いは `__call__` が forward の前後でする仕事
#
# 資料は `model.forward(x)` を直接呼ぶのは NG で、その理由を「自動勾配（バックプロパゲーション）用の記録登録や、
# 評価/学習モードの切り替えなど」の下準備が行われないから、としています。PyTorch 2.x の実際はこうです。
#
# - `model(x)` は `nn.Module.__call__` を通ります。PyTorch 2.x の `__call__` は、`forward` を呼ぶ前に3つの振り分けをします。
#   1. `model.compile()` を呼んだ後なら、**コンパイルされた版** の呼び出し（`_compiled_call_impl`）へ。`model.forward(x)` はコンパイルされていない Python の `forward` をそのまま動かします。
#   2. `torch.jit.trace` の最中なら、`_slow_forward` を通して、トレースしたグラフにこのモジュールの名前（スコープ）を記録します。`model.forward(x)` ではこの記録が抜けます。
#   3. そのモジュールに登録された **フック**（forward pre-hook、forward hook、backward hook）と、全モジュール共通のグローバルなフック
#      （`torch.nn.modules.module.register_module_forward_hook` など）を実行します。
#
#   `model.forward(x)` と直接呼ぶと、省かれるのは **このモジュールの** この3つだけです（`forward` の中で `self.sub(x)` と呼んだ子モジュールでは、3つとも働きます）。
# - **勾配の記録は `__call__` の仕事ではありません。** 記録は、`requires_grad=True` のテンソルに対する演算それぞれが
#   行います。だから `model.forward(x)` でも勾配は記録され、`backward()` できます。
# - **学習/評価モードも `__call__` は切り替えません。** `model.train()` / `model.eval()` が `model.training` という
#   フラグを（子モジュールまで）書き換え、`forward` の中の Dropout などがそれを読むだけです。
#   勾配を記録しない計算は、さらに別のスイッチ `torch.no_grad()` です。
#
# それでも `model(x)` と呼ぶのが作法なのは、フックを使う道具（特徴の取り出し、プロファイラ、一部のライブラリ）と、
# `model.compile()` や JIT トレースが正しく働くためです。次のセルは、`nn.Module.__call__` がすることを数行に縮めた **スケッチ**（PyTorch のコードではない）で、
# フックとコンパイル版への振り分けを確かめます（トレースへの振り分けは、PyTorch のない ここでは文章だけにします）。
#
# **予想してから確かめる：** 次のセルは、同じモデルを `model(x)` と `model.forward(x)` の2通りで呼んで `backward()` します。
# `model.forward(x)` のほうで、(a) 出力は計算グラフに記録されるでしょうか、(b) `w.grad` は `model(x)` と同じになるでしょうか、(c) フックは実行されるでしょうか。
#
# <details><summary>答え</summary>
#
# (a) 記録されます、(b) 同じ 2.0 です、(c) 実行されません。記録は `Value`（PyTorch なら `requires_grad=True` のテンソル）の演算それぞれの仕事で、
# 呼び方には関係しません。`model.forward(x)` で省かれるのは、`__call__` が forward の前後でする仕事（フック、コンパイル版への振り分け）だけです（下のセルの出力）。
#
# </details>

# %%
class Module:
    """A sketch of what nn.Module adds around forward: hooks and the compiled path in __call__, a training flag, an
    in-place to(). Not PyTorch's code."""

    def __init__(self):
        self.training = True
        self._forward_hooks = []
        self._compiled_call = None

    def compile(self):            # Module.compile(): from now on, model(x) goes to a compiled version of the call
        def compiled_call(x):
            print("    (the compiled version ran)")
            return self._call_impl(x)
        self._compiled_call = compiled_call

    def register_forward_hook(self, hook):
        self._forward_hooks.append(hook)

    def train(self, mode=True):   # only sets the flag; forward reads it
        self.training = mode
        return self

    def eval(self):
        return self.train(False)

    def __call__(self, x):        # model(x): the compiled version if there is one, else forward and the hooks
        if self._compiled_call is not None:
            return self._compiled_call(x)
        return self._call_impl(x)

    def _call_impl(self, x):
        out = self.forward(x)
        for hook in self._forward_hooks:
            hook(self, x, out)
        return out

    def to(self, dtype):          # model.to(...): every parameter of the tree changed in place; returns the model
        for value in vars(self).values():
            if isinstance(value, Value):
                value.data = float(np.dtype(dtype).type(value.data))   # the same Value object, rounded contents
            elif isinstance(value, Module):
                value.to(dtype)
        return self


class Scale(Module):
    def __init__(self, w):
        super().__init__()
        self.w = Value(w)         # the "nn.Parameter"

    def forward(self, x):
        return self.w * x


model = Scale(3.0)
model.register_forward_hook(lambda module, inp, out: print(f"    forward hook ran: output = {out.data}"))
for how in ("model(x)", "model.forward(x)"):
    zero_grad([model.w])
    print(f"{how}:")
    out = model(2.0) if how == "model(x)" else model.forward(2.0)
    out.backward()
    print(f"    output = {out.data}, recorded in a graph: {bool(out._children)}, w.grad = {model.w.grad}, "
          f"training = {model.training}")
model.eval()
print("after model.eval(): training =", model.training, " (a flag set by eval(), whichever way forward is called)")
model.compile()
print("after model.compile(): model(x) ->", model(2.0).data, "| model.forward(x) ->", model.forward(2.0).data,
      "(no compiled version, no hook)")

# %% [markdown]
# どちらの呼び方でも出力は計算グラフに記録され、`w.grad` は同じ 2.0 です。違うのは `__call__` の仕事が入ったかどうかです。
# `model(x)` ではフックが実行され、`compile()` の後はコンパイル版が動きます。`model.forward(x)` ではどちらも起きません。
# `training` は `model.eval()` を呼んだときにだけ変わります。
#
# 資料の「④ 個別インスタンス vs 使い回し」の使い分けは、辞書と関数で書くとこうなります：別々に学習させたい部品は
# **辞書のキーを分ける**（`fc1.weight` と `fc2.weight`）。パラメータを持たない部品は関数を共有するだけです（共有すると何が起きるかは、次の小節）。
# `utils.rmsnorm` には学習可能なゲインが **ない** ので、ReLU と同じく「ハサミ」側（共有してよい）です。

# %%
rng = np.random.default_rng(0)


def matrix(n_out, n_in, std):
    """An [out][in] matrix of Values (the nn.Linear.weight layout)."""
    return [[Value(float(v)) for v in row] for row in rng.normal(0.0, std, (n_out, n_in))]


def linear_bias(x, w, b):
    """nn.Linear(bias=True): utils.linear (y = Wx) plus a bias vector."""
    return [yi + bi for yi, bi in zip(linear(x, w), b)]


state_dict = {
    "fc1.weight": matrix(4, 2, 0.5), "fc1.bias": matrix(1, 4, 0.0),  # bias kept as a [1][out] matrix
    "fc2.weight": matrix(1, 4, 0.5),                      # bias=False, as in every matrix of microgpt
}


def mlp(x, state_dict):
    """The 'forward': a plain function of the input and the parameters."""
    h = [v.relu() for v in linear_bias(x, state_dict["fc1.weight"], state_dict["fc1.bias"][0])]
    return linear(h, state_dict["fc2.weight"])


params = [p for mat in state_dict.values() for row in mat for p in row]
out = mlp([Value(1.0), Value(-2.0)], state_dict)
out[0].backward()
print("number of parameters:", len(params), "= 4*2 + 4 + 1*4")
print("output:", out[0])
for name, mat in state_dict.items():
    print(f"{name:11s} shape [{len(mat)}][{len(mat[0])}]  grads:", np.round([[p.grad for p in row] for row in mat], 3).tolist())

# %% [markdown]
# ### 共有しても学習は壊れない：重み共有（weight tying）
#
# 資料の「④ 個別インスタンス vs 使い回し」は、パラメータを持つモジュールを2か所で共有すると
# 「お互いのパラメータ学習を破壊し合ってモデルが壊れてしまう」と書いています。これは言い過ぎです。1つのパラメータを2か所で使うと、
# 逆伝播で2本の道の勾配が **足し合わされる** だけで（ノート 01 §5）、学習はふつうに進みます。共有は「2か所の値を同じにする」という制約で、
# 使い道のある設計です。GPT-2 は入力の埋め込み `wte` と出力層 `lm_head` を同じ行列で共有し（weight tying）、ALBERT は全層でパラメータを共有します。
# 資料の言い分のうち正しいのは、norm1 と norm2 の最適な倍率が違うなら、共有するとその違いを表せなくなる、というところまでです。
#
# まず、共有した重みの勾配が2つの使い道の勾配の和になることを、エンジンで確かめます。小さな「名前の次の文字」モデル
# $h = \tanh(E[x]\,A)$、ロジット $= h\,W^\top$ で、出力の重み $W$ を埋め込み $E$ と共有するか（$W = E$）、別に持つか（$W = U$）です。

# %%
def tied_logits(x_ids, E, A, W):
    """h = tanh(E[x] A), logits = h W^T, on Values: E is used twice when W is E (weight tying)."""
    out = []
    for x in x_ids:
        h = [v.tanh() for v in linear(E[x], [list(col) for col in zip(*A)])]
        out.append(linear(h, W))
    return out


rng_t = np.random.default_rng(1)
E_vals, A_vals = rng_t.normal(0, 0.5, (3, 2)), rng_t.normal(0, 0.5, (2, 2))
grads = {}
for tied in (True, False):
    E = [[Value(float(v)) for v in row] for row in E_vals]
    A = [[Value(float(v)) for v in row] for row in A_vals]
    U = [[Value(float(v)) for v in row] for row in E_vals]          # the same numbers, a separate parameter
    logits = tied_logits([0, 2], E, A, E if tied else U)
    loss = sum(-softmax(z)[t].log() for z, t in zip(logits, [1, 0]))
    loss.backward()
    grads[tied] = (np.array([[v.grad for v in row] for row in E]), np.array([[v.grad for v in row] for row in U]))
print("tied: grad of E =\n", np.round(grads[True][0], 6))
print("untied: grad of E (as the input embedding) + grad of U (as the output layer) =\n",
      np.round(grads[False][0] + grads[False][1], 6))
print("max difference:", np.abs(grads[True][0] - (grads[False][0] + grads[False][1])).max())

# %% [markdown]
# 共有した $E$ の勾配は、埋め込みとしての勾配と出力層としての勾配の和です（差は丸め誤差の大きさ）。次に、同じモデルを名前のデータで実際に学習します
# （$C = 16$、NumPy で書いた逆伝播、Adam で 1500 ステップ、バッチ 256 組）。共有版では $E$ の勾配を2つの道の和にします。

# %%
docs_t = load_corpus("names")
vocab_t = build_vocab(docs_t)
train_t, val_t = split_docs(docs_t, seed=42)


def pairs(doc_list):
    ids = [doc_tokens(d, vocab_t) for d in doc_list]
    return (np.array([a for t in ids for a in t[:-1]]), np.array([b for t in ids for b in t[1:]]))


(x_train, y_train), (x_val, y_val) = pairs(train_t), pairs(val_t)
V_t, C_t = len(vocab_t) + 1, 16


def tying_loss_and_grads(P, x, y, tied):
    """Mean next-character NLL of logits = tanh(E[x] A) W^T (W = E when tied, else U) and its gradients."""
    E, A = P["E"], P["A"]
    W = E if tied else P["U"]
    e = E[x]
    h = np.tanh(e @ A)
    probs = softmax_np(h @ W.T)
    loss = -np.log(probs[np.arange(len(y)), y]).mean()
    dz = probs
    dz[np.arange(len(y)), y] -= 1.0
    dz /= len(y)
    dW = dz.T @ h                           # W's gradient as the output layer
    da = (dz @ W) * (1.0 - h * h)
    dE = np.zeros_like(E)
    np.add.at(dE, x, da @ A.T)             # E's gradient as the input embedding
    G = {"A": e.T @ da}
    if tied:
        G["E"] = dE + dW                    # one matrix, two uses: the gradients add
    else:
        G["E"], G["U"] = dE, dW
    return loss, G


def train_tying(tied, steps=1500, batch=256, lr=0.01):
    r = np.random.default_rng(0)
    P = {"E": r.normal(0, 0.3, (V_t, C_t)), "A": r.normal(0, 0.3, (C_t, C_t))}
    if not tied:
        P["U"] = r.normal(0, 0.3, (V_t, C_t))
    M = {k: np.zeros_like(v) for k, v in P.items()}
    S = {k: np.zeros_like(v) for k, v in P.items()}
    for step in range(steps):
        idx = r.integers(0, len(x_train), batch)
        _, G = tying_loss_and_grads(P, x_train[idx], y_train[idx], tied)
        for k in P:                                   # Adam, as microgpt.adam_step
            microgpt_adam(P[k].reshape(-1), G[k].reshape(-1), M[k].reshape(-1), S[k].reshape(-1), step, steps, lr)
    return P, tying_loss_and_grads(P, x_val, y_val, tied)[0]


base_t = baselines([doc_tokens(d, vocab_t) for d in train_t], [doc_tokens(d, vocab_t) for d in val_t],
                   GPTConfig(vocab_size=V_t))
for tied in (True, False):
    P, val_loss = train_tying(tied)
    print(f"{'tied (W = E)':16s}" if tied else f"{'untied (W = U)':16s}",
          f"parameters {sum(v.size for v in P.values()):4d}, val loss {val_loss:.4f}")
print(f"baselines (val): unigram {base_t['unigram']:.4f}, bigram {base_t['bigram']:.4f}")

# %% [markdown]
# 共有した版も、別々に持つ版と同じように学習し、どちらも文字のユニグラムの基準を大きく下回ります（上の出力）。パラメータは $V \times C$ だけ少なくなります。
# 「壊れる」ことはありません。共有が合わないのは、2か所で違う値が最適なときで、そのときは共有が表現力を削ります（損失が別々の版より下がりきらない）。
# それは「壊す」ではなく「制約する」です。
#
# %% [markdown]
# ### 入れ子のモジュールと `model.to(device)`
#
# 資料が挙げる `nn.Module` の恩恵のうち、残りの2つを見ます。
#
# - **モジュールの階層化**：モジュールの属性に別のモジュールを置くと、`model.parameters()` / `model.named_parameters()` は子モジュールの中まで
#   たどって、`attn.w` のように点でつないだ名前でパラメータを集めます。`model.train()` / `model.eval()` も子モジュールまで `training` フラグを書き換えます。
#   GPT はこうして「ブロックの中のアテンションの中の線形層」と組み上げられます。microgpt の `state_dict` のキー `layer0.attn_wq` も同じ点つなぎの名前です。
# - **デバイスの一括転送**：`model.to("cuda")` は、木の中のすべてのパラメータ（とバッファ）をその場で移し、`model` 自身を返します。
#   **テンソル** の `t.to("cuda")` は違い、新しいテンソルを返して `t` はそのまま残ります（だから `t = t.to(device)` と書く）。
#
# 上のスケッチ `Module` に、子モジュールをたどる2つの関数を足して確かめます。`to()` はスケッチの `Module` に書いておいたメソッドで、
# GPU がないので、デバイスの代わりに型（float16 への丸め）を変えます。比べるために、テンソルの `t.to()` にあたる `value_to` も書きます。

# %%
def named_parameters(module, prefix=""):
    """What nn.Module.named_parameters() does: this module's parameters, then each child module's, dotted names."""
    for name, value in vars(module).items():
        if isinstance(value, Value):
            yield prefix + name, value
        elif isinstance(value, Module):
            yield from named_parameters(value, prefix + name + ".")


def set_training(module, mode):
    """What model.train(mode) / model.eval() do: set the flag on this module and on every module inside it."""
    module.training = mode
    for value in vars(module).values():
        if isinstance(value, Module):
            set_training(value, mode)


class Block(Module):
    def __init__(self):
        super().__init__()
        self.attn = Scale(0.5)        # child modules, each with its own parameter
        self.mlp = Scale(-2.0)

    def forward(self, x):
        return self.mlp(self.attn(x))


block = Block()
print("named_parameters:", [(name, p.data) for name, p in named_parameters(block)])
set_training(block, False)            # block.eval()
print("after eval(): training flags", block.training, block.attn.training, block.mlp.training)


def value_to(v, dtype):
    """What tensor.to(...) does: a new object with the converted contents; v itself is left as it was."""
    return Value(float(np.dtype(dtype).type(v.data)))


block.attn.w.data = 0.1               # a value float16 cannot hold exactly
w_object = block.attn.w
returned = block.to("float16")        # module.to: in place
print(f"block.to('float16') returns the block itself: {returned is block}; block.attn.w is the same Value: "
      f"{block.attn.w is w_object}; its data is now {block.attn.w.data!r}")
t = Value(0.1)
t16 = value_to(t, "float16")          # tensor.to: a new object
print(f"value_to(t, 'float16') returns a new Value: {t16 is not t}; t.data stays {t.data!r}, the new one holds "
      f"{t16.data!r}")

cfg_small = GPTConfig(vocab_size=27)
mg_params = init_params(cfg_small)
flat = flat_buffer(mg_params)
print(f"microgpt: {len(mg_params)} parameter arrays, all views of one buffer: "
      f"{all(a.base is flat for a in mg_params.values())} ({flat.size} numbers, {flat.dtype})")
as32 = pack_params(mg_params, cfg_small, dtype=np.float32)   # the whole model converted in one call
print(f"pack_params(..., float32): a new dict, dtypes {sorted({str(a.dtype) for a in as32.values()})}; "
      f"the original stays {mg_params['wte'].dtype} (like tensor.to, not module.to)")

# %% [markdown]
# 名前は `attn.w`、`mlp.w` と点でつながり、`eval()` は子モジュールのフラグまで変えます（上の出力）。
# モジュールの `to()` は木の中のパラメータをその場で変えて `block` 自身を返し（だから `model.to(device)` と書くだけでよい）、
# テンソルの `to()` にあたる `value_to` は新しいものを返して元を残します（だから `t = t.to(device)` と代入し直す）。このプロジェクトには GPU がないので
# デバイスの転送はありませんが、「全パラメータを一度に変える」ことは同じ形で起きます。microgpt の全パラメータは1本の連続したバッファのビュー
# （`flat_buffer`）なので、float32 への変換も1回で済みます（`microgpt.py --dtype float32` の中身）。`pack_params` は新しい辞書を返し、元はそのままです。
# これはモジュールの `model.to()`（その場で変える）ではなく、テンソルの `t.to()`（新しいものを返す）と同じふるまいです。

# %% [markdown]
# ### 学習モードと評価モード：Dropout
#
# 資料の「③ モード切り替え」：`model.train()` / `model.eval()` は `training` フラグを書き換えるだけで、そのフラグを読んで振る舞いを変えるのは
# `forward` の中の部品です。代表が Dropout です。学習モードでは各成分を確率 $p$ で 0 にし、残りを $1/(1-p)$ 倍します
# （期待値が変わらないように。PyTorch の `nn.Dropout` と同じ「inverted dropout」）。評価モードでは何もしません。
# スケッチの `Module` に、フラグを読む `Dropout` を足して確かめます（`Value` で書くので、落とした成分に勾配が届かないことも見えます）。

# %%
class Dropout(Module):
    """nn.Dropout(p): in training mode each entry is zeroed with probability p and the rest scaled by 1 / (1 - p);
    in eval mode the input passes unchanged."""

    def __init__(self, p, seed=0):
        super().__init__()
        self.p, self.rng = p, np.random.default_rng(seed)

    def forward(self, xs):
        if not self.training:
            return xs
        keep = self.rng.random(len(xs)) >= self.p
        return [x * (1.0 / (1.0 - self.p)) if k else x * 0.0 for x, k in zip(xs, keep)]


drop = Dropout(0.5)
xs_d = [Value(float(v)) for v in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)]
for call in (1, 2):
    out_d = drop(xs_d)
    print(f"training, call {call}:", [o.data for o in out_d])
sum(out_d).backward()
print("  grads of the inputs after the 2nd call:", [x.grad for x in xs_d], "(0 where the entry was dropped)")
means = np.mean([[o.data for o in drop(xs_d)] for _ in range(20000)], axis=0)
print("training, mean over 20000 calls:", np.round(means, 2), "(the input: the scaling keeps the expectation)")
drop.eval()
print("eval, two calls:", [o.data for o in drop(xs_d)], [o.data for o in drop(xs_d)], "(the input, every time)")

# %% [markdown]
# 学習モードでは呼ぶたびに違う成分が落ち（上の出力の1、2行目）、落ちた成分の入力には勾配が届きません。平均をとると入力に戻ります。
# 評価モードでは入力がそのまま出てきます。`model.eval()` を呼び忘れて評価すると、評価の結果が毎回ランダムに変わるのはこのためです。
# microgpt には Dropout がないので、学習と評価で計算は変わりません（`train` も `sample` も同じ `gpt` / `gpt_forward`）。
#
# ### `nn.Parameter` と `nn.Linear`：原材料と完成品
#
# 資料の「5. nn.Parameter と nn.Linear の本質的な違い」は、`nn.Parameter` を原材料（ネジ）、`nn.Linear` を完成品（エンジン）にたとえます。
# 同じ線形層を2通りに書いて、何が「完成品」に含まれているかを並べます。
#
# - **原材料だけで**：重み（`[out][in]` の `Value`）とバイアスを自分で作って初期化し、`forward` の計算 $Wx + b$ も自分で書く。
# - **完成品**：`Linear(n_in, n_out)` がそれをまとめて持つ。作ると PyTorch の既定と同じ $U(-1/\sqrt{\text{fan\_in}}, 1/\sqrt{\text{fan\_in}})$ で初期化され、
#   呼ぶと $Wx + b$ を計算し、`named_parameters` に `weight` と `bias` が現れます。

# %%
class Linear(Module):
    """nn.Linear(n_in, n_out): it creates its parameters (an [out][in] weight and a bias), initializes them as
    PyTorch does by default (uniform within 1 / sqrt(fan_in)), and its forward is linear(x, W) + b."""

    def __init__(self, n_in, n_out, rng):
        super().__init__()
        bound = 1 / math.sqrt(n_in)
        self.weight = [[Value(float(v)) for v in row] for row in rng.uniform(-bound, bound, (n_out, n_in))]
        self.bias = [Value(float(v)) for v in rng.uniform(-bound, bound, n_out)]

    def forward(self, x):
        return [y + b for y, b in zip(linear(x, self.weight), self.bias)]


def parameters_of(module, prefix=""):
    """named_parameters for modules whose parameters are Values or lists (of lists) of Values."""
    for name, value in vars(module).items():
        if isinstance(value, list) and value and isinstance(value[0], (Value, list)):
            flat = [v for row in value for v in (row if isinstance(row, list) else [row])]
            yield prefix + name, flat
        elif isinstance(value, Module):
            yield from parameters_of(value, prefix + name + ".")


layer = Linear(4, 3, np.random.default_rng(5))                     # the finished product
W_raw = [[Value(w.data) for w in row] for row in layer.weight]      # the raw materials: the same numbers,
b_raw = [Value(b.data) for b in layer.bias]                         # ... created and wired by hand
x_in = [Value(float(v)) for v in (0.5, -1.0, 2.0, 0.25)]
by_hand = [sum(w * xi for w, xi in zip(row, x_in)) + b for row, b in zip(W_raw, b_raw)]
print("Linear's parameters:", [(name, len(ps)) for name, ps in parameters_of(layer)],
      f"| init bound 1/sqrt(4) = {1 / math.sqrt(4)}, largest |w| = {max(abs(w.data) for r in layer.weight for w in r):.3f}")
print("layer(x)        :", [round(y.data, 6) for y in layer(x_in)])
print("raw parameters  :", [round(y.data, 6) for y in by_hand])

# %% [markdown]
# 計算は同じです（上の出力の2行と3行）。違うのは、誰がパラメータを作り、初期化し、登録し、順伝播を書くかだけです。`Linear` は内部に
# `Parameter`（ここでは `Value`）を持つ「完成品」で、`named_parameters` がその2つを見つけてくれます。原材料で組むと、初期化の範囲も
# 登録も `forward` の式も自分の仕事になります。microgpt はこちらの書き方で、`init_params` がすべての行列を作り、`gpt` が式を書いています。

# %% [markdown]
# ## 3. `nn.Linear`：バイアスと `[out, in]` レイアウト
#
# `utils.linear(x, w)` の `w` は **行が出力、列が入力** です（`nn.Linear.weight` と同じ `[out_features, in_features]`）。
# 行ごとに $y_o = \sum_i w_{oi} x_i$、つまり縦ベクトルで書けば $y = Wx$。
# 行ベクトルのバッチ $X$（形 `[N, in]`）では NumPy 版 `linear_np` が $Y = X W^\top$ を計算します。

# %%
W = np.array([[1.0, 2.0],
              [0.0, -1.0],
              [3.0, 0.5]])            # [out=3, in=2]
X = np.array([[1.0, 1.0],
              [2.0, -1.0]])           # a batch of N=2 row vectors, [N, in]
Y = linear_np(X, W)                   # [N, out] = X @ W.T
print("W.shape", W.shape, " X.shape", X.shape, " -> Y.shape", Y.shape)
print("Y =\n", Y)
print("column-vector view, W @ x for the first x:", W @ X[0])
y_scalar = linear([Value(v) for v in X[0]], [[Value(v) for v in row] for row in W])
print("utils.linear (scalar) for the first x:   ", [float(v.data) for v in y_scalar])

# %% [markdown]
# バイアスがない線形層は $x = 0$ で必ず $y = 0$（原点を通る）。バイアスがあれば平行移動できます。

# %%
zero = [Value(0.0), Value(0.0)]
Wv = [[Value(v) for v in row] for row in W]
bias = [Value(0.5), Value(-1.0), Value(2.0)]
print("bias=False, x = 0 ->", [float(v.data) for v in linear(zero, Wv)])
print("bias=True,  x = 0 ->", [float(v.data) for v in linear_bias(zero, Wv, bias)])

# %% [markdown]
# ### アテンションの射影にバイアスはあるか
#
# 資料は「現代の高性能なLLM（GPT-3、LLaMA、Chinchillaなど）のアテンション射影では、bias=False に設定して
# バイアスをあえて使用しない設計が主流です」と書いています。モデルごとに分けると：
#
# - **GPT-2 にはバイアスがあります。** アテンションの射影 `c_attn`（Q, K, V をまとめた射影）と `c_proj`（出力射影）は
#   どちらもバイアス付きです（Hugging Face の GPT-2 の重みにも `attn.c_attn.bias` と `attn.c_proj.bias` がある）。
#   GPT-3 の論文は、モデルと構造は GPT-2 と同じ（疎なアテンションを交互に使う点を除く）と述べているので、
#   GPT-3 を bias=False の例に挙げるのは根拠が弱いと言えます。
# - **LLaMA はバイアスを落としています**（Q, K, V, 出力の射影も MLP も `bias=False`）。
# - **microgpt はバイアスを1つも持ちません。** 次のセルはパラメータの一覧（`model_config.param_shapes`）を出します。
#   全部が重み行列か埋め込みで、`bias` という名前のものはありません。

# %%
cfg = GPTConfig(vocab_size=27)
shapes = param_shapes(cfg)
for key, shape in shapes:
    print(f"  {key:16s} {str(list(shape)):9s} fan_in = {shape[1]}")
print("any bias among microgpt's parameters:", any("bias" in key for key, _ in shapes))

# %% [markdown]
# ### LLM のアテンションで `bias=False` が多い理由：資料の2つの理由を確かめる
#
# 資料は理由を2つ挙げます。(1)「バイアスがない方が過学習を防ぎやすく、かつ学習が数値的に安定しやすいという研究報告がある」、
# (2)「キーやクエリのベクトルにおいて、単語全体の傾向から『特定の方向（原点からのズレ）』をあえて固定で持たせる必要がない」。
#
# (2) は、射影ごとに分けるともっとはっきり言えます。1つのクエリ $q$ について、キーの射影にバイアス $b_k$ を足すと、ロジット $q \cdot (k_t + b_k)$ は
# **どのキー $t$ にも同じ** $q \cdot b_k$ だけずれるだけです。softmax はシフト不変（第21章、ノート 02）なので、注意の重みは1ビットも変わらず、
# $b_k$ に届く勾配も厳密に 0 です。バリューのバイアス $b_v$ は、重みの和が 1 なので出力にそのまま $b_v$ を足すだけで、出力射影のバイアスにまとめられます。
# 効くのはクエリのバイアス $b_q$ だけです（$b_q \cdot k_t$ はキーごとに違う）。

# %%
r = np.random.default_rng(5)
d_h, T_k = 8, 6
q0, K0, V0 = r.normal(size=d_h), r.normal(size=(T_k, d_h)), r.normal(size=(T_k, d_h))
b_q, b_k, b_v = r.normal(size=d_h), r.normal(size=d_h), r.normal(size=d_h)


def attend_one(q, K, V):
    p = softmax_np(K @ q / math.sqrt(d_h))
    return p, p @ V


p_plain, out_plain = attend_one(q0, K0, V0)
p_bk, out_bk = attend_one(q0, K0 + b_k, V0)
p_bq, _ = attend_one(q0 + b_q, K0, V0)
_, out_bv = attend_one(q0, K0, V0 + b_v)
print(f"key bias:   max |weights change| = {np.abs(p_bk - p_plain).max():.1e}")
dp = r.normal(size=T_k)                                       # any upstream gradient on the weights
ds = softmax_np_backward(dp, p_plain)                         # dL/d(logits); logit t gets q . b_k / sqrt(d)
print(f"            dL/db_k = sum_t dL/ds_t * q / sqrt(d): largest entry {np.abs(ds.sum() * q0 / math.sqrt(d_h)).max():.1e}"
      f"  (sum_t dL/ds_t = {ds.sum():.1e})")
print(f"value bias: output - (output without it) - b_v: max {np.abs(out_bv - out_plain - b_v).max():.1e}  "
      "(a constant added to every output)")
print(f"query bias: max |weights change| = {np.abs(p_bq - p_plain).max():.2f}")

gpt2 = {"n_layer": 12, "n_embd": 768, "vocab": 50257, "n_ctx": 1024}        # GPT-2 small (124M)
C_, L_ = gpt2["n_embd"], gpt2["n_layer"]
weights = gpt2["vocab"] * C_ + gpt2["n_ctx"] * C_ + L_ * (C_ * 3 * C_ + C_ * C_ + C_ * 4 * C_ + 4 * C_ * C_)
linear_biases = L_ * (3 * C_ + C_ + 4 * C_ + C_)              # c_attn, attn.c_proj, c_fc, mlp.c_proj
norm_params = (2 * L_ + 1) * 2 * C_                           # ln_1, ln_2 per block and ln_f: gain and bias
total = weights + linear_biases + norm_params
print(f"\nGPT-2 small: {total:,} parameters; biases of the linear layers {linear_biases:,} "
      f"({linear_biases / total:.3%}), of which in the attention {L_ * 4 * C_:,}")

# %% [markdown]
# キーのバイアスは重みを変えず（差は丸め誤差）、勾配も丸め誤差の大きさの 0 です。バリューのバイアスは定数を足すだけ、重みを動かすのはクエリのバイアスだけです（上の出力）。
# つまり K と V のバイアスは「要らない」のではなく **意味がない**（K）か **別の場所にまとめられる**（V）もので、資料の (2) の理由はこの形で正確になります。
#
# (1) については、数で見ると「過学習を防ぐ」は弱い理由です。GPT-2 small でも、線形層のバイアスは全パラメータの 0.07% にすぎず、外してもモデルの表現力はほとんど変わりません（上の出力）。
# 大きな言語モデルの事前学習は巨大なコーパスをほぼ1周だけ学習することが多く、過学習が主な問題になることはあまりありません。
# 数値的な安定については、PaLM の論文（Chowdhery et al., 2022）が「密な層にも LayerNorm にもバイアスを使わず、大きなモデルの学習の安定性が増した」と報告しています。
# 資料が例に挙げる Chinchilla（Hoffmann et al., 2022）の論文の主題は、計算量を決めたときのモデルの大きさと学習トークン数の配分で、バイアスの有無を論じたものではありません。
# 根拠として引くなら、理由を自ら述べている PaLM のほうが適切です。
#
# ### なぜ `[out, in]` なのか：資料の3つの理由を確かめる
#
# 資料は、`nn.Linear` が重みを `[out_features, in_features]` で持つ理由を3つ挙げます。
#
# 1. **縦ベクトルの数式 $y = Wx$ との整合**：これはそのとおりです。`W[o]` は出力 $o$ のニューロンの重みベクトルそのもの（1行）で、`utils.linear` も `for wo in w` と行ごとに内積を取ります。
#    講義3 の `NormalizedLinear` が `F.normalize(weight, dim=1)` で「行」を正規化するのも、出力ニューロンごとの重みベクトルを単位ベクトルにする、という意味になります。
# 2. **行優先（Row-Major）のメモリ配置で計算が速い**：この環境では差が出ず、理由になりません。`W.T` はコピーではなく、同じメモリを列優先として読む **ビュー** で、
#    行列積のライブラリ（BLAS）は「転置して読む」指定をそのまま受け取ります。この環境の NumPy では、`[in, out]` で持った重みとの積と、結果も時間も同じ程度です（下のセル）。
#    ただし行列積（GEMM）のライブラリは、ハードウェア（とくに GPU）によってはどちらの並びで読むかで速さが違うことがあるので、
#    「どこでも速さは変わらない」とまでは言えません。ここで確かめられるのは、この環境の1回の計測だけです。
# 3. **ブロードキャスト（バッチ処理）への適合**：成り立ちません。`x @ W.T` の先頭のバッチ次元（`[バッチ, ヘッド, 単語数, 特徴量]` など）は `x` の側の話で、
#    重みを `[out, in]` で持っても `[in, out]` で持っても、同じようにブロードキャストされます。

# %%
r = np.random.default_rng(7)
W_oi = r.normal(size=(512, 512))                  # [out, in], as nn.Linear stores it
W_io = np.ascontiguousarray(W_oi.T)               # the same weights stored [in, out]
x_b = r.normal(size=(256, 512))
print(f"W.T is a view of W (no copy): {np.shares_memory(W_oi, W_oi.T)}; row-major (C order): "
      f"{W_oi.T.flags['C_CONTIGUOUS']}, column-major (F order): {W_oi.T.flags['F_CONTIGUOUS']}")
print("x @ W.T and x @ W_io give identical results:", np.array_equal(x_b @ W_oi.T, x_b @ W_io))
t_oi, t_io = [], []
for _ in range(15):                               # alternate the two, keep the fastest of each
    t0 = time.perf_counter()
    x_b @ W_oi.T
    t_oi.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    x_b @ W_io
    t_io.append(time.perf_counter() - t0)
print(f"time of x @ W.T ([out, in] stored) / x @ W ([in, out] stored): {min(t_oi) / min(t_io):.2f}")
x_4d = r.normal(size=(2, 3, 5, 512))              # [batch, heads, tokens, features]
print("4-D input: shapes", (x_4d @ W_oi.T).shape, (x_4d @ W_io).shape, "equal:", np.array_equal(x_4d @ W_oi.T, x_4d @ W_io))

# %% [markdown]
# `W.T` はコピーされない列優先のビューで、積は `[in, out]` で持った重みとの積とビット単位で同じ、時間の比もほぼ 1 です（実行のたびに少し揺れます）。
# 4 次元の入力も、どちらの持ち方でも同じ形・同じ値で計算されます。`[out, in]` を選ぶ理由として確かに残るのは
# 1 の「数式と同じ形」です。3 は理由になりません。2 はこの環境では差が出ないので理由になりませんが、他のハードウェアの GEMM ライブラリには並びの好みがありえます。

# %% [markdown]
# ## 4. 初期化：Xavier、He、PyTorch の既定、microgpt の `N(0, 0.08²)`
#
# 重みの分散を決める式は3つあります（$\text{fan\_in}$ = 入力の次元、$\text{fan\_out}$ = 出力の次元）。
#
# - **Xavier**：$\mathrm{Var}(w) = 2/(\text{fan\_in} + \text{fan\_out})$（tanh 向き）。
# - **He**：$\mathrm{Var}(w) = 2/\text{fan\_in}$（ReLU が半分を 0 にするぶん2倍）。
# - **PyTorch の `nn.Linear` の既定**：$w \sim U(-1/\sqrt{\text{fan\_in}},\ 1/\sqrt{\text{fan\_in}})$
#   （`kaiming_uniform_(weight, a=math.sqrt(5))`、バイアスも同じ範囲の一様分布）。
#   一様分布 $U(-\ell, \ell)$ の分散は $\ell^2/3$ なので $\mathrm{Var}(w) = 1/(3\,\text{fan\_in})$、
#   **He の分散 $2/\text{fan\_in}$ の 1/6** です。
#
# 資料は「nn.Linear を呼び出すと、裏側でこれらの賢い初期化（PyTorchではデフォルトでHe初期化の変形版）が自動で実行され」と書いています。
# 関数としては確かに He（Kaiming）の一様分布版に $a = \sqrt 5$ を渡したものですが、その結果の分散は He の 1/6 で、
# ReLU の層を重ねたときに分散を保つ「He 初期化」とは別物です（このあと 30 層で確かめます）。
#
# microgpt はどの行列も $N(0, 0.08^2)$ で初期化します（`init_params`）。microgpt の fan_in は、上の一覧のとおり
# `mlp_fc2` の 64 を除いてすべて 16 です。この2つの fan_in で、3つの標準偏差を並べます。

# %%
def he_std(fan_in):
    return math.sqrt(2.0 / fan_in)


def torch_default_std(fan_in):   # std of U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    return 1.0 / math.sqrt(3.0 * fan_in)


micro = init_params(cfg)          # microgpt's own init, N(0, 0.08^2)
print("fan_in | He std  PyTorch default std  microgpt std | Var ratios: default/He  microgpt/He  microgpt/default "
      "| std of microgpt's init_params matrix")
for fan_in, key in ((16, "layer0.attn_wq"), (64, "layer0.mlp_fc2")):
    s_he, s_pt, s_mg = he_std(fan_in), torch_default_std(fan_in), 0.08
    print(f"{fan_in:6d} | {s_he:6.4f} {s_pt:20.4f} {s_mg:12.4f} | "
          f"{(s_pt / s_he) ** 2:22.3f} {(s_mg / s_he) ** 2:12.3f} {(s_mg / s_pt) ** 2:17.3f} "
          f"| {micro[key].std():.4f} ({key})")
r = np.random.default_rng(1)
u = r.uniform(-1 / math.sqrt(64), 1 / math.sqrt(64), 1_000_000)
print(f"check: std of 10^6 draws from U(-1/8, 1/8) = {u.std():.4f}  (formula 1/sqrt(3*64) = {torch_default_std(64):.4f})")

# %% [markdown]
# PyTorch 既定の分散は、どの fan_in でも He の 0.167 倍（1/6）です。
# microgpt の 0.08 は、fan_in = 16 では He の分散の 0.051 倍（約 1/20）、PyTorch 既定の分散の 0.307 倍と小さく、
# fan_in = 64 では He の 0.205 倍、PyTorch 既定の 1.229 倍で、既定とほぼ同じ大きさです。どちらの fan_in でも He よりずっと小さい
# （`init_params` が実際に引いた行列の標準偏差は 0.0841 と 0.0782）。microgpt は層が1つで、各ブロックの前に
# `rmsnorm` で大きさをそろえ、残差接続で足し込むので、この小ささが層ごとに掛け算で積み重なることはありません。
# 積み重なると何が起きるかを、正規化も残差もない 30 段の全結合層で見ます。
#
# 幅 256 の全結合層を 30 段重ね、各段で `linear_np`（重み `[out, in]`）→ 活性化関数を通します。
# 各段の **活性の標準偏差**（順伝播）と、出力側から流した **勾配の標準偏差**（`linear_np_backward` による逆伝播）を、
# 層ごとに **対数軸** で描きます。1段ごとに一定の倍率で増減すると、対数軸では直線になり、その傾きが1段あたりの倍率です。
# 分散を保つ初期化は水平な線になります。
#
# **予想してから確かめる：** ReLU の 30 段を PyTorch の `nn.Linear` の既定の初期化（分散が He の 1/6）で通すと、30 段目の活性の標準偏差は
# 1 段目のおよそ何倍になるでしょうか。(a) ほぼ 1 倍、(b) $10^{-1}$ 倍くらい、(c) $10^{-11}$ 倍くらい。
#
# <details><summary>答え</summary>
#
# (c) です。ReLU の1段で分散は $\text{fan\_in}\cdot\mathrm{Var}(w)/2 = 1/6$ 倍、標準偏差は $1/\sqrt 6 \approx 0.408$ 倍になり、それが 29 回掛かるので
# $0.408^{29} \approx 5 \times 10^{-12}$ です。下の表では、1 段目の 0.335 から 30 段目の $2.3 \times 10^{-12}$ まで縮みます。
#
# </details>

# %%
depth, width, batch = 30, 256, 64
acts = {
    "tanh": (np.tanh, lambda y, a: 1.0 - a * a),
    "ReLU": (lambda y: np.maximum(y, 0.0), lambda y, a: (y > 0).astype(float)),
}


def propagate(std, act, dact, uniform=False, seed=0):
    """Forward through `depth` layers, then backward a unit-variance gradient.

    Returns (activation std per layer, std of the gradient arriving at each layer's input, the pre-activations
    of every layer). std is the weight's standard deviation; uniform=True draws U(-sqrt(3) std, sqrt(3) std).
    """
    r = np.random.default_rng(seed)
    h = r.normal(size=(batch, width))
    cache, fwd_std = [], []
    for _ in range(depth):
        if uniform:
            w = r.uniform(-math.sqrt(3) * std, math.sqrt(3) * std, (width, width))
        else:
            w = r.normal(0.0, std, (width, width))
        y = linear_np(h, w)
        a = act(y)
        cache.append((h, w, y, a))
        fwd_std.append(a.std())
        h = a
    g = r.normal(size=h.shape)
    bwd_std = []
    for h_in, w, y, a in reversed(cache):
        g, _ = linear_np_backward(g * dact(y, a), h_in, w)
        bwd_std.append(g.std())
    return np.array(fwd_std), np.array(bwd_std[::-1]), [y for _, _, y, _ in cache]


inits = {   # name: (weight std, uniform?)
    "Xavier": (math.sqrt(2.0 / (width + width)), False),
    "He": (he_std(width), False),
    "PyTorch default": (torch_default_std(width), True),
}
names_ja = {"Xavier": "Xavier", "He": "He", "PyTorch default": "PyTorch 既定（nn.Linear）"}
results = {(a, name): propagate(std, *acts[a], uniform=uni) for a in acts for name, (std, uni) in inits.items()}

fig, axes = plt.subplots(2, 2, figsize=(12, 7.5), sharex=True)
layers = np.arange(1, depth + 1)
colors = {"Xavier": "tab:green", "He": "tab:red", "PyTorch default": "tab:purple"}
for col, a in enumerate(acts):
    for name in inits:
        fwd, bwd, _ = results[(a, name)]
        axes[0, col].plot(layers, fwd, ".-", color=colors[name], label=names_ja[name])
        axes[1, col].plot(layers, bwd, ".-", color=colors[name])
    axes[0, col].set(yscale="log", title=f"{a}：活性の標準偏差（順伝播）", ylabel="活性の標準偏差（対数軸）")
    axes[1, col].set(yscale="log", title=f"{a}：勾配の標準偏差（逆伝播）", ylabel="∂L/∂(層の入力) の標準偏差（対数軸）",
                     xlabel="層（1 = 入力側、30 = 出力側）")
    for ax in axes[:, col]:
        ax.set_ylim(1e-13, 1e1)
        ax.grid(True, which="major", alpha=0.3)
fig.suptitle(f"幅 {width} の全結合層 30 段：初期化ごとの標準偏差（正規化も残差接続もなし）")
fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="upper center", ncol=3, bbox_to_anchor=(0.5, 0.955))
plt.tight_layout(rect=(0, 0, 1, 0.93))
plt.show()

# %%
print("      init            fan_in*Var(w) | act std: layer 1  layer 30  per layer | grad std: layer 1  layer 30 "
      "| ReLU theory per layer sqrt(fan_in*Var/2)")
for a in acts:
    for name, (std, _) in inits.items():
        fwd, bwd, _ = results[(a, name)]
        per_f = (fwd[-1] / fwd[0]) ** (1 / (depth - 1))
        gain = width * std ** 2
        theory = f"{math.sqrt(gain / 2):.3f}" if a == "ReLU" else "-"
        print(f"{a:4s}  {name:15s} {gain:12.3f} | {fwd[0]:16.3g} {fwd[-1]:9.3g} {per_f:10.3f} | "
              f"{bwd[0]:17.3g} {bwd[-1]:9.3g} | {theory}")

# %% [markdown]
# 対数軸の上で、違いは傾きとして読めます。
#
# - **ReLU + He**：水平（1段あたり 0.997 倍）。30 段を通しても活性と勾配の標準偏差がほぼ一定です（活性 0.835 → 0.764）。
# - **ReLU + Xavier**：正方形の層では Xavier の分散は $1/\text{fan\_in}$ で He の半分なので、1段ごとに標準偏差が
#   $1/\sqrt 2 \approx 0.707$ 倍になる直線（実測 0.705）。30 段目の活性は $2.3 \times 10^{-5}$ まで縮みます。
# - **ReLU + PyTorch 既定**：分散が He の 1/6 なので、1段あたり $\sqrt{1/6} \approx 0.408$ 倍（実測 0.412）、
#   30 段目の活性は $2.3 \times 10^{-12}$。PyTorch の既定の初期化は、正規化も残差もない深い ReLU 網の信号を保ちません。
#   勾配も同じ傾きで、入力側へ向かって同じように縮みます（下の段）。
# - **tanh**：Xavier は指数的には崩れず、ゆっくり小さくなるだけ（1段あたり 0.947 倍）。He は少し大きめで、
#   勾配が入力側へ向かって緩やかに増えます（30 段目 1.05 → 1段目 2.94）。PyTorch 既定では活性が小さく tanh がほぼ恒等写像に
#   なるので、1段あたり $\sqrt{\text{fan\_in} \cdot \mathrm{Var}(w)} = 1/\sqrt 3 \approx 0.577$ 倍（実測 0.578）で縮みます。

# %% [markdown]
# ### 初期値が大きすぎると：tanh は飽和、それでも勾配は爆発する
#
# 資料は初期値が大きすぎる場合を「活性化関数（SigmoidやSoftmaxなど）の出力が極端になり、前述の勾配消失や、
# 計算値が無限大に吹っ飛ぶ勾配爆発が起きて学習が崩壊します」と書いています。消失と爆発のどちらが起きるのでしょうか。
#
# 逆伝播の1段は、勾配に「活性化関数の局所勾配 $\phi'(y)$」と「重み $W^\top$」を掛けます。
# 幅が大きいとき、勾配の分散は1段あたり
# $$\chi = \underbrace{\text{fan\_in} \cdot \mathrm{Var}(w)}_{\text{重みの因子}} \times \underbrace{E[\phi'(y)^2]}_{\text{活性化関数の因子}}$$
# 倍になり、$\chi < 1$ なら消失、$\chi > 1$ なら爆発します。重みの標準偏差を $c/\sqrt{\text{fan\_in}}$ と書くと、
# 重みの因子は $c^2$（Xavier は正方形の層で $c = 1$、He は $c = \sqrt 2$、PyTorch 既定は $c = 1/\sqrt 3$）。
#
# - **ReLU** は飽和しません。$\phi'$ は 0 か 1 で、$E[\phi'^2] \approx 1/2$ が $c$ によらず一定です。だから $\chi = c^2/2$：
#   初期値が大きすぎれば、活性も勾配も層ごとに $c^2/2$ 倍ずつ **指数的に爆発** します。
# - **tanh** では、大きな初期値は $|y|$ を大きくし、ユニットが ±1 に **飽和** して $\tanh'(y) \approx 0$ になります。
#   これが資料の言う勾配消失の仕組み（「傾き（微分）はほぼ 0」を掛け算する）で、活性化関数の因子は確かに小さくなります。
#   しかし $y$ が標準偏差 $\sigma$ の正規分布なら、飽和せずに残るユニットの割合は $1/\sigma$ に比例して減るだけなので
#   $E[\tanh'^2] \propto 1/c$ 程度にしか小さくならず、重みの因子 $c^2$ のほうが速く増えます。積の $\chi$ は $c$ にほぼ比例して増え、
#   30 段では勾配は **爆発** します（ReLU よりはゆっくり）。
#
# 次のセルは、重みの大きさ $c$ を 1/4 倍から 16 倍（幅 256 では $N(0, 1)$ が $c = 16$）まで振って、同じ 30 段の網で
# 出力側の層の飽和の割合、$E[\phi'(y)^2]$、1段あたりの勾配の分散の倍率（実測）を測ります。

# %%
scales = 2.0 ** np.arange(-2, 4.5, 0.5)
sweep = {a: [] for a in acts}
for c in scales:
    for a, (act, dact) in acts.items():
        fwd, bwd, ys = propagate(c / math.sqrt(width), act, dact)
        y_last = ys[-1]
        sweep[a].append({
            "saturated": np.mean(np.abs(np.tanh(y_last)) > 0.99) if a == "tanh" else 0.0,
            "dphi2": np.mean(dact(y_last, act(y_last)) ** 2),
            "chi": (bwd[0] / bwd[-1]) ** (2 / (depth - 1)),        # measured per-layer factor of the variance
            "grad1": bwd[0],
        })
print("   c | tanh: saturated  E[tanh'^2]  c^2*E[tanh'^2]  measured chi  grad std at layer 1 "
      "| ReLU: E[relu'^2]  measured chi  grad std at layer 1")
for i, c in enumerate(scales):
    t, rl = sweep["tanh"][i], sweep["ReLU"][i]
    print(f"{c:5.3g} | {t['saturated']:15.1%} {t['dphi2']:11.4f} {c * c * t['dphi2']:15.3f} {t['chi']:13.3f} "
          f"{t['grad1']:20.3g} | {rl['dphi2']:16.3f} {rl['chi']:13.3f} {rl['grad1']:20.3g}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
ax = axes[0]
ax.plot(scales, scales ** 2, "k:", label="重みの因子 $c^2$")
ax.plot(scales, [s["dphi2"] for s in sweep["tanh"]], "o--", color="tab:blue", label="tanh：$E[\\tanh'(y)^2]$（飽和で減る）")
ax.plot(scales, [s["chi"] for s in sweep["tanh"]], "o-", color="tab:blue", label="tanh：1段あたりの倍率 χ（実測）")
ax.plot(scales, [s["chi"] for s in sweep["ReLU"]], "s-", color="tab:orange", label="ReLU：1段あたりの倍率 χ（実測）")
ax.axhline(1.0, color="gray", lw=1)
ax.text(5.5, 1.3, "χ > 1：爆発", color="gray")
ax.text(5.5, 0.75, "χ < 1：消失", color="gray", va="top")
for c0, name in ((1 / math.sqrt(3), "PyTorch 既定"), (1.0, "Xavier"), (math.sqrt(2), "He"), (16.0, "N(0, 1)")):
    ax.axvline(c0, color="gray", lw=0.6, ls="--")
    ax.text(c0, 0.02, name, rotation=90, ha="right", va="bottom", color="gray", fontsize=9,
            transform=ax.get_xaxis_transform())
ax.set_ylim(1e-3, 1e4)
ax.set(xscale="log", yscale="log", xlabel="重みの大きさ c（標準偏差 = c / √fan_in、対数軸）",
       ylabel="1段あたりの勾配の分散の倍率（対数軸）", title="逆伝播の1段：重みの因子 × 活性化関数の因子")
ax.legend(fontsize=9, loc="upper left")
ax = axes[1]
for a, color in (("tanh", "tab:blue"), ("ReLU", "tab:orange")):
    _, bwd, _ = propagate(1.0, *acts[a])
    ax.plot(layers, bwd, ".-", color=color, label=f"{a}、N(0, 1)（c = 16）")
ax.set(yscale="log", xlabel="層（1 = 入力側、30 = 出力側）", ylabel="勾配の標準偏差（対数軸）",
       title="大きすぎる初期値 N(0, 1) での 30 段の勾配")
ax.grid(True, which="major", alpha=0.3)
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# 表と図から読めること：
#
# - **tanh の飽和は本物です。** $N(0,1)$（$c = 16$）では出力側の層のユニットの 86.4% が $|\tanh| > 0.99$ に張り付き、
#   $E[\tanh'^2]$ は 0.0336 まで下がります（飽和しない $c \le 1/\sqrt 2$ では 1）。資料の言う「傾き（微分）はほぼ 0」はこの因子のことです。
# - **それでも勾配は爆発します。** 重みの因子は $c^2 = 256$ で、積は $\chi \approx 8.6$（実測 8.7）。30 段で入力側の勾配の
#   標準偏差は $1.3 \times 10^{14}$ に達します。tanh の $\chi$ は $c$ にほぼ比例して増え、表では $c \ge \sqrt 2$ で 1 を超えています。
# - **ReLU は飽和しないぶん、もっと速く爆発します。** $E[\mathrm{relu}'^2] = 0.496$ は $c$ によらず同じ値です
#   （ReLU は正の定数倍と交換するので、$c$ を変えても 0 か 1 かのパターンは変わらない）。だから $\chi \approx c^2/2$ で、
#   $c = 16$ では $\chi \approx 127$、入力側の勾配の標準偏差は $3.5 \times 10^{31}$ です。
# - **小さすぎる初期値**（$c < 1$）では、どちらも $\chi < 1$ で、信号も勾配も層ごとに縮んで消えます
#   （$c = 1/4$ では1段目の勾配が tanh で $8 \times 10^{-19}$、ReLU で $2 \times 10^{-23}$）。
#
# つまり、大きすぎる初期値で勾配が消えるという説明は、飽和した **1つのユニット** の局所勾配については正しいが、重みを通して
# 何段も掛け算される深い網全体では、大きな重みの因子が勝って勾配は爆発します。飽和による消失が勝つのは、大きさの原因が
# 次の重みではないときです。§5 のアテンションがその例で、スコア $q \cdot k$ は $d$ 個の積の和なので大きくなり、
# しかも softmax は分布全体が1点に張り付く（飽和していない成分が残らない）ので、局所勾配が指数的に小さくなります。

# %% [markdown]
# ## 5. スケーリングしないアテンション softmax の勾配消失
#
# クエリ $q$ とキー $k_1,\dots,k_T$ の成分が標準正規分布なら、内積 $q\cdot k_t$ の標準偏差は $\sqrt d$ です。
# $d = 64$ なら ±8 程度の差がつき、softmax は `[0.999, 0.000, 0.001]` のように **飽和** します。
# 飽和した softmax のヤコビアン $\mathrm{diag}(p) - pp^\top$ はほぼ 0 なので、そこから前へ勾配が流れません。
# $1/\sqrt d$ を掛ければスコアの標準偏差は 1 に戻ります。
#
# まずはスカラーエンジンで、1つのクエリ・8つのキー・$d = 128$ の注意を実際に組み、
# `backward()` で $q$ に届く勾配（前の層 $W_q$ へ流れていく勾配）を比べます。
# 損失は注意出力 $o = \sum_t p_t v_t$ と固定ベクトル $c$ の内積 $L = c \cdot o$ です。

# %%
d, T = 128, 8
r = np.random.default_rng(4)
q_np, K_np, V_np, c_np = r.normal(size=d), r.normal(size=(T, d)), r.normal(size=(T, d)), r.normal(size=d)


def attention_grad(scaled):
    """Scalar-engine attention for one query; returns (probs, dL/dq) for L = c . sum_t p_t v_t."""
    q = [Value(float(v)) for v in q_np]
    scores = [sum(qi * float(ki) for qi, ki in zip(q, k)) for k in K_np]
    if scaled:
        scores = [s / d ** 0.5 for s in scores]
    p = softmax(scores)
    out = [sum(p[t] * float(V_np[t, j]) for t in range(T)) for j in range(d)]
    loss = sum(oj * float(cj) for oj, cj in zip(out, c_np))
    loss.backward()
    return np.array([pt.data for pt in p]), np.array([qi.grad for qi in q])


p_raw, g_raw = attention_grad(scaled=False)
p_sc, g_sc = attention_grad(scaled=True)
np.set_printoptions(precision=4, suppress=True)
print("probs, raw q.k    :", p_raw)
print("probs, q.k/sqrt(d):", p_sc)
print(f"|dL/dq| raw = {np.linalg.norm(g_raw):.3e}   |dL/dq| with 1/sqrt(d) = {np.linalg.norm(g_sc):.3e}   "
      f"ratio scaled/raw = {np.linalg.norm(g_sc) / np.linalg.norm(g_raw):.0f}")

# %% [markdown]
# この例では、スケーリングなしの softmax は1つのキーに張り付き（表示の4桁では `[1, 0, …, 0]`）、$q$ に届く勾配は
# スケーリングありの 525 分の 1 です。ただ、1つの例では偶然2つのキーが拮抗して飽和しないこともあります（その場合は勾配も残る）。
# そこで、同じ計算を NumPy 版（`softmax_np` / `softmax_np_backward`）で 2000 回のランダム試行について行い、
# 次元 $d$ を変えながら「softmax の最大確率」と「$q$ に届く勾配の大きさ $|\partial L/\partial q|$」の中央値を描きます。
# （$\partial L/\partial q = \sum_t \frac{\partial L}{\partial s_t} k_t$、スケーリングありならさらに $1/\sqrt d$ 倍。）

# %%
dims = [4, 8, 16, 32, 64, 128, 256, 512]
trials, T = 2000, 8
stats = {True: ([], []), False: ([], [])}
for d in dims:
    r = np.random.default_rng(d)
    q, K, V, c = (r.normal(size=(trials, d)), r.normal(size=(trials, T, d)),
                  r.normal(size=(trials, T, d)), r.normal(size=(trials, d)))
    raw = np.einsum("nd,ntd->nt", q, K)
    for scaled in (True, False):
        scale = 1 / np.sqrt(d) if scaled else 1.0
        p = softmax_np(raw * scale)
        dp = np.einsum("ntd,nd->nt", V, c)          # dL/dp_t = v_t . c
        ds = softmax_np_backward(dp, p)             # dL/d(score fed to softmax)
        dq = np.einsum("nt,ntd->nd", ds, K) * scale
        stats[scaled][0].append(np.median(p.max(axis=-1)))
        stats[scaled][1].append(np.median(np.linalg.norm(dq, axis=-1)))

fig, axes = plt.subplots(1, 2, figsize=(12, 4))
for scaled, style in ((False, "o-"), (True, "s-")):
    label = "softmax(q·k / √d)（スケーリングあり）" if scaled else "softmax(q·k)（スケーリングなし）"
    axes[0].plot(dims, stats[scaled][0], style, label=label)
    axes[1].plot(dims, stats[scaled][1], style, label=label)
axes[0].set(xscale="log", xlabel="ヘッドの次元 d（対数軸）", ylabel="最大確率 max_t p_t の中央値",
            title="softmax の飽和（キー T = 8 個）")
axes[1].set(xscale="log", yscale="log", xlabel="ヘッドの次元 d（対数軸）", ylabel="|∂L/∂q| の中央値（対数軸）",
            title="クエリに届く勾配の大きさ")
for ax in axes:
    ax.legend()
plt.tight_layout()
plt.show()
print("   d | median max p: raw  scaled | median |dL/dq|: raw     scaled   scaled/raw")
for i, d in enumerate(dims):
    print(f"{d:4d} | {stats[False][0][i]:17.3f} {stats[True][0][i]:7.3f} | {stats[False][1][i]:19.2e} "
          f"{stats[True][1][i]:10.2e} {stats[True][1][i] / stats[False][1][i]:10.3g}")

# %% [markdown]
# スケーリングなしでは $d$ が大きいほど softmax が1点に張り付き（最大確率 → 1）、$q$ に届く勾配が桁違いに小さくなります
# （表の最後の行：$d = 512$ ではスケーリングありの約 300 分の 1）。
# $d$ が小さいうちはスケーリングなしのほうが勾配はむしろ大きい点にも注意してください：スコアの幅がまだ softmax を飽和させない範囲では、
# $1/\sqrt d$ を掛けないぶん勾配がそのまま大きいだけです。勾配消失は、$d$ が大きくなって飽和が始まってから起こります。
# $1/\sqrt d$ で割ると、どの $d$ でも分布の鋭さはほぼ一定で、勾配も消えません。
# microgpt の `gpt` も各ヘッドで `q·k / √head_dim` を使っています（第22章）。

# %% [markdown]
# ## まとめ
#
# | 資料の項目 | ここで確かめたこと | 節 |
# |---|---|---|
# | `requires_grad`、`nn.Parameter` | 普通のテンソルの既定は `False`（資料の「デフォルト True」は訂正）。このエンジンではただの `float` と、`params` に入れた `Value` | §1 |
# | `nn.Module`、`forward`、呼び出しの作法 | `model.forward(x)` でも勾配は記録される。省かれるのは `__call__` の仕事（フック、コンパイル版、トレースのスコープ） | §2 |
# | 個別インスタンスと共有 | 共有しても学習は壊れない（勾配が足される）。GPT-2 は `wte` と `lm_head` を共有する | §2 |
# | モード切り替え | `eval()` はフラグを変えるだけ。Dropout はそのフラグで、落とすかそのまま通すかを変える | §2 |
# | `nn.Linear` とバイアス | `[out, in]` のレイアウトは $y = Wx$ の形。キーのバイアスは softmax のシフト不変性で厳密に効かない | §3 |
# | 初期化 | PyTorch の既定は He の 1/6 の分散。大きすぎると ReLU では爆発、tanh では飽和しても勾配は増える | §4 |
# | 勾配消失 | スケーリングしない注意では、次元が大きいほど softmax が張り付き、勾配が消える | §5 |
#
# ## 理解度チェック
#
# **問1.** PyTorch で `t = torch.rand(3)` としたとき `t.requires_grad` は何ですか。`nn.Parameter(t)` ではどうですか。
# このエンジンではそれぞれ何に当たりますか。
#
# <details><summary>答え</summary>
#
# `torch.rand(3)` などで作った普通のテンソルは `requires_grad=False` です（計算は記録されません）。`nn.Parameter(t)` は
# 既定で `requires_grad=True` で、モジュールの属性にすれば `model.parameters()` に登録されます。このエンジンでは、
# 普通のテンソルがただの `float`（グラフのノードにならない）、`nn.Parameter` が「パラメータリスト `params` に入れた `Value`」に当たります。
#
# </details>
#
# **問2.** `model.forward(x)` と直接呼んだら、`backward()` で勾配は求まりますか。`model(x)` との違いは何ですか。
# 評価モードに切り替えたり、勾配を記録せずに推論したりするにはどうしますか。
#
# <details><summary>答え</summary>
#
# 求まります。勾配の記録は `requires_grad=True` のテンソルに対する各演算が行うので、呼び方によりません。
# `model.forward(x)` で省かれるのは、そのモジュールに登録されたフックの実行だけです。評価モードは `model.eval()`
# （`model.train()` で戻す）、勾配を記録しない推論は `with torch.no_grad():` で、どちらも呼び方とは別のスイッチです。
#
# </details>
#
# **問3.** 正規化も残差もない ReLU の全結合層を 30 段重ね、PyTorch の `nn.Linear` の既定の初期化を使います。
# 1段あたり活性の分散はおよそ何倍になりますか。He 初期化ならどうですか。
#
# <details><summary>答え</summary>
#
# 既定は $\mathrm{Var}(w) = 1/(3\,\text{fan\_in})$ で He の 1/6 です。ReLU の1段で分散は $\text{fan\_in} \cdot \mathrm{Var}(w)/2$ 倍なので
# 既定では 1/6 倍（標準偏差で 0.408 倍）、30 段で標準偏差は $10^{-12}$ 程度まで縮みます。He なら 1 倍で保たれます。
#
# </details>
#
# **問4.** 初期値が大きすぎると tanh のユニットは飽和し、局所勾配 $\tanh'(y)$ はほぼ 0 になります。それなのに、
# このノートの 30 段の tanh 網で $N(0, 1)$ を使うと勾配が爆発したのはなぜですか。
#
# <details><summary>答え</summary>
#
# 逆伝播の1段は、局所勾配と重みの両方を掛けます。飽和で $E[\tanh'^2]$ は $1/c$ 程度にしか減らない（正規分布の $y$ の
# うち 0 の近くに残るユニットが勾配を運ぶ）のに、重みの因子は $c^2$ で増えます。積 $\chi$ は $c$ にほぼ比例して増え、
# $c = 16$ では1段ごとに勾配の分散が約 8.7 倍になります。飽和による消失が勝つのは、アテンションの softmax のように分布全体が飽和し、
# 大きさの原因が次の重みではないときです。
#
# </details>
#
# **問5.** GPT-2 のアテンション射影 `c_attn` と `c_proj` にバイアスはありますか。microgpt ではどうですか。
# キーの射影にだけバイアスを足すと、注意の重みはどう変わりますか。
#
# <details><summary>答え</summary>
#
# GPT-2 ではどちらもバイアス付きです。LLaMA はバイアスを落としています。microgpt はどの行列にもバイアスを持ちません
# （`param_shapes` に `bias` という名前のものがない）。キーのバイアスは、1つのクエリのすべてのロジットに同じ $q \cdot b_k$ を足すだけなので、
# softmax のシフト不変性で注意の重みはまったく変わらず、$b_k$ に届く勾配も 0 です（§3）。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を自分のコードに置き換えてから、その下のチェックセルを実行してください。
# チェックは 正解 / 不正解 / 未回答 を表示します（まだ解いていなければ 未回答）。正解すると、その下に解答例（折りたたみ）が出ます。
# チェックはあなたの関数を呼び終えてから期待する答えを計算し、答えを写すことになるプロジェクトの関数（あらかじめ取ったコピーも）を、あなたの関数が動いている間は使えなくします。
# 数値微分で作った答えは、ReLU の折れ目のそばや softmax が張り付くところで外れ、相対誤差 $10^{-12}$ のチェックに通りません。
# どれも思いとどまらせるための仕組みで、防ぎきるものではありません。
#
# ### 練習問題 1：He 初期化の一様分布版
#
# §4 の `he_std` は、重みを **正規分布** $N(0, \sigma^2)$ で引くときの He 初期化の標準偏差でした。PyTorch の `nn.init.kaiming_uniform_` のように、
# 重みを **一様分布** $U(-\ell, \ell)$ で引いて He 初期化と同じ分散にしたいとき、範囲 $\ell$ はいくつにすればよいでしょうか。
# fan_in を受け取って $\ell$（float）を返す関数 `he_uniform_bound(fan_in)` を書いてください。
#
# チェックは、あなたの $\ell$ で $U(-\ell, \ell)$ の分散が He の分散にちょうど（相対誤差 $10^{-12}$ まで）一致するかを、fan_in を 1 から 12288 まで変えて確かめます。
# サンプルから分散を見積もって探した $\ell$ は、この精度には届きません。正解のときは、その $\ell$ で初期化した ReLU の 30 段の網
# （幅は 64, 256, 128 の繰り返し）に入力を通して、「30 段目 ÷ 1 段目」の活性の標準偏差の比（独立な 5 本の網の幾何平均）も表示します。
#
# <details><summary>ヒント 1</summary>
#
# $U(-\ell, \ell)$ の分散を、密度 $1/(2\ell)$ の積分 $\int_{-\ell}^{\ell} x^2/(2\ell)\,dx$ から求めてください。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# それを He の分散（§4 の `he_std` の2乗）と等しいとおき、$\ell$ について解きます。`he_std` そのものを $\ell$ に使うと、分散が足りません。
#
# </details>

# %%
def he_uniform_bound(fan_in):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


# %%
exercises.check_05_he_uniform_bound(he_uniform_bound)

# %% [markdown]
# ### 練習問題 2：バイアスと ReLU のある線形層の逆伝播
#
# 順伝播 $Y = \mathrm{relu}(X W^\top + b)$（`np.maximum(linear_np(x, w) + b, 0)`、`w` は `[out, in]`、`b` は長さ `out`、`x` は形 `(..., in)`）の逆伝播
# `linear_relu_np_backward(dy, x, w, b)` を書いてください。出力の勾配 `dy`（形 `(..., out)`）から `(dx, dw, db)` を返します。
# 形はそれぞれ `x`、`w`（`[out, in]`）、`b`（`(out,)`）と同じです。`x` の先頭の次元はバッチで、2つ以上あることもあります。
# `utils.linear_np_backward(dy, x, w)`（バイアスも ReLU もない線形層の逆伝播）は使ってかまいません。
#
# チェックは、ReLU の折れ目のすぐそば（前活性が $\pm10^{-12}$）の入力も含めて、相対誤差 $10^{-12}$ で比べます。
# あなたの関数が動いている間は `backward()` が使えません（この層を `Value` で組んでエンジンに逆伝播させるのは、エンジンの答えです）。
#
# <details><summary>ヒント 1</summary>
#
# 外側から順にたどります。ReLU の局所勾配は、前活性 $a = XW^\top + b$ の符号で決まる 0 か 1 です。それを通った後は、バイアス付きの線形層です。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $b$ はバッチのすべての行に同じものが足されます。1つのパラメータが何か所で使われると、勾配はどうなるのでしたか（§2 の重み共有）。
#
# </details>

# %%
def linear_relu_np_backward(dy, x, w, b):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


# %%
exercises.check_05_linear_relu_backward(linear_relu_np_backward)

# %% [markdown]
# ### 練習問題 3：キーとバリューに届く勾配（スケーリングあり・なし）
#
# §5 では、注意の出力から **クエリ** $q$ に届く勾配を計算しました。同じ注意で、**キー** と **バリュー** に届く勾配を求めます。
# 1つのクエリ `q`（形 `(d,)`）、キー `K` とバリュー `V`（どちらも形 `(T, d)`）から、スコア $s_t = \alpha\, q \cdot k_t$
# （`scaled=True` なら $\alpha = 1/\sqrt d$、`False` なら $\alpha = 1$）、重み $p = \mathrm{softmax}(s)$、出力 $o = \sum_t p_t v_t$ を作ります。
# 出力の勾配 `do` $= \partial L/\partial o$（形 `(d,)`）が与えられたとき、`key_value_grads(q, K, V, do, scaled)` は
# $(\partial L/\partial K, \partial L/\partial V)$（どちらも形 `(T, d)`）の組を返します。`utils.softmax_np` と `utils.softmax_np_backward` を使ってかまいません。
#
# チェックは $d = 16$ と $d = 256$ のそれぞれで、スケーリングあり・なしの両方を NumPy エンジンの注意の逆伝播（`numpy_engine.attention_np_backward`）と比べ、
# $|\partial L/\partial K|$ と $|\partial L/\partial V|$ を表示します。チェックの間はその関数と `backward()` は使えません（呼ぶと 不正解 になります）。
# 表示されるのは1組のランダムな $q, K, V$ での値なので、§5 の表（2000 回の中央値）の傾向と逆になることもあります。
# 解けたら、2つの勾配のうち softmax のヤコビアンを通るのはどちらか、スケーリングなしで softmax が飽和したときにどちらが消えるかを考えてみてください。
#
# <details><summary>ヒント 1</summary>
#
# $o = \sum_t p_t v_t$ です。$v_t$ は $o$ に何を掛けて効いていますか。$k_t$ は、スコア $s_t$ と softmax を通してしか $o$ に効きません。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $\partial L/\partial p_t$ を先に求め、softmax の逆伝播（`utils.softmax_np_backward`）に通して $\partial L/\partial s_t$ にします。
# その後、$s_t = \alpha\, q \cdot k_t$ を $k_t$ で微分します。
#
# </details>

# %%
def key_value_grads(q, K, V, do, scaled):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError


# %%
exercises.check_05_key_value_grads(key_value_grads)
