# %% [markdown]
# # 自動微分を自分で作る：小さな `Value`（足し算・掛け算・tanh・backward）
#
# （目安：本編 約40分、練習問題 約25分）
#
# **対応する章:** microgpt 本の `Value`（スカラー自動微分）の部分。第21章（`linear` / `softmax` / `rmsnorm`）と
# 第22章（`gpt`）は、すべてこの `Value` の演算の組み合わせとして書かれています。その土台を、自分の手で1つずつ作ります。
#
# このノートで見られるもの：
#
# 1. `Value` の骨組み：値 `data`、勾配 `grad`、子ノード、**局所勾配**（順伝播のときに計算しておく $\partial(\text{このノード})/\partial(\text{子})$）。
# 2. 5つの部品：`add`（見本）と、自分で書く `mul`、`tanh`、`topological_order`（トポロジカルソート）、`backward`。1つ書くごとにチェックを実行します。
# 3. 最後に、自分の `Value` とこのプロジェクトの `value.py` を同じ式で動かし、値と勾配が一致することを確かめます。
# 4. まとめ、理解度チェック、練習問題2題（`relu` と `sigmoid` を1つのノードとして足す）。
#
# **チェックについて：** 各チェックは、あなたの関数と `value.py`（このプロジェクトのエンジン）を同じ点で動かし、
# 点ごとに「完全一致」（値として同じ：`==` で等しい）、「近い」（丸め誤差の範囲）、「最大の差」を表にします。書く前は **未回答** と出ます。
# 答えはこのプロジェクト自身の関数が計算しているので、それを呼べばチェックは通ってしまいます。大事なのは、答えを自分で導くことです。
# 行き詰まったら、チェックの下の「行き詰まったら：解答例」を開いてください（`notebooks/worked_solutions.md` の同じ番号の節と同じ内容です）。

# %%
import math  # (math.tanh, math.exp: for your answers too)
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

import value  # the project's engine, to compare with (value.Value; ours below is Value)

# %% [markdown]
# ## 1. 骨組み
#
# 式 $L = (a \cdot b + c) \cdot f$ を計算するとき、途中の値 $e = ab$、$d = e + c$ もそれぞれ1つのノードになります。
# ノードは「自分を作った子」と、子ごとの **局所勾配** $\partial(\text{自分})/\partial(\text{子})$ を覚えておきます。
# 例えば $e = ab$ なら、子は $(a, b)$、局所勾配は $(\partial e/\partial a, \partial e/\partial b) = (b, a)$ です。
# 後で `backward()` が、根から葉へ向かって連鎖律 `child.grad += local_grad * node.grad` を辺ごとに適用します。
#
# 下の骨組みは、Karpathy の microgpt の `Value` と同じ4つの欄を持ちます。演算子 `+`、`*` と `tanh()` は、これから書く関数
# `add`、`mul`、`tanh` を呼ぶだけです（`2 * a` のような普通の数は、葉の `Value` に包んでから渡します）。

# %%
class Value:
    """One scalar node: data, grad, the children it was computed from, d(this)/d(child) for each."""

    def __init__(self, data, children=(), local_grads=(), op=""):
        self.data = data
        self.grad = 0.0                  # d(root)/d(this node), filled in by backward()
        self._children = children        # the Values this node was computed from
        self._local_grads = local_grads  # d(this node)/d(child), one number per child
        self._op = op

    def __add__(self, other):            # self + other (a plain number becomes a leaf first)
        return add(self, other if isinstance(other, Value) else Value(other))

    def __mul__(self, other):
        return mul(self, other if isinstance(other, Value) else Value(other))

    __radd__ = __add__                   # 2 + a
    __rmul__ = __mul__                   # 2 * a

    def tanh(self):
        return tanh(self)

    def backward(self):
        backward(self)

    def __repr__(self):
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g})"


# %% [markdown]
# ## 2. ステップ1：足し算 `add`（見本）
#
# 最初の部品は見本として書いてあります。残りの4つを同じ形で書きます。
# `add(a, b)` は、`data` が `a.data + b.data`、子が `(a, b)` の新しい `Value` を返します。
# 局所勾配は $\partial(a + b)/\partial a = 1$ と $\partial(a + b)/\partial b = 1$ の2つの数で、`Value(data, 子のタプル, 局所勾配のタプル, "+")` の形で作ります。
#
# チェックの3点目 `1e16 + 1` は、和が丸められる点です（$10^{16} + 1$ は float64 では $10^{16}$）。局所勾配は丸めに関係なく決まります。

# %%
def add(a, b):
    return Value(a.data + b.data, (a, b), (1.0, 1.0), "+")


# %%
exercises.check_01_add(Value, add)

# %% [markdown]
# ## 3. ステップ2：掛け算 `mul`
#
# `mul(a, b)` は `data` が `a.data * b.data` のノードです。局所勾配 $\partial(ab)/\partial a$、$\partial(ab)/\partial b$ を、子の順番 `(a, b)` に合わせて並べてください。

# %%
def mul(a, b):
    # ここに書く：Value(a.data * b.data, (a, b), (∂(ab)/∂a, ∂(ab)/∂b), "*")
    raise NotImplementedError


# %%
exercises.check_01_mul(Value, mul)

# %% [markdown]
# ## 4. ステップ3：`tanh`
#
# $t = \tanh x$ の微分は $1 - \tanh^2 x$ です。ここで `math.tanh` で計算した出力 $t$ を使えば、局所勾配は $1 - t^2$ と **出力の値** だけで書けます。
#
# チェックの $x = 20$ は **飽和** した点です。$\tanh 20$ は float64 ではちょうど 1.0 になり、$1 - t^2 = 0$ です。
# 正確な値は $1/\cosh^2 20 \approx 1.7\times10^{-17}$ で、どちらの書き方でも正解です（差は丸め誤差の大きさ）。

# %%
def tanh(a):
    # ここに書く：t = math.tanh(a.data) として Value(t, (a,), (局所勾配,), "tanh")
    raise NotImplementedError


# %%
exercises.check_01_tanh(Value, tanh)

# %% [markdown]
# ## 5. ステップ4：トポロジカルソート `topological_order`
#
# `backward()` は、あるノードの勾配が **完成してから** 子へ押し出さなければなりません。
# ノードの勾配は、そのノードを使うすべての親から届く量の和だからです。
# そこでまず、根から子をたどって届くすべてのノードを、**どのノードもその子より後に来る**ように1回ずつ並べます（トポロジカル順）。
# `backward()` はその逆順に訪れます。
#
# 深さ優先探索で書けます：あるノードを並べる前に、その子を（まだ並べていなければ）すべて先に並べます。ここでは再帰で書いてかまいません（micrograd の `build_topo` と同じ）。
# チェックは `value.py` の `Value` で作ったグラフ（同じノードを何度も使う）で、並べたノードの数、異なるノードの数、
# 親より後に来た（または抜けた）子の数の3つを比べます。並びが `value.py` と同じである必要はありません。

# %%
def topological_order(root):
    # ここに書く：root から届くノードを、子が親より先に来るように1回ずつ並べたリストを返す
    # （node._children で子をたどる。訪れたノードは set に入れておく）
    raise NotImplementedError


# %%
exercises.check_01_topological_order(topological_order)

# %% [markdown]
# **よくある質問：並べずに、再帰で押し出すだけではだめですか。** 「勾配が出たらすぐ子へ押し出し、子で同じことを繰り返す」素朴な再帰を、
# $b = a + a$、$c = b + b$（正しい勾配は $dc/da = 4$）で試します。比べるのはこのプロジェクトの `value.Value` です。

# %%
def naive_backward(node):  # push at once and recurse: no topological order
    for child, local_grad in zip(node._children, node._local_grads):
        child.grad += local_grad * node.grad
        naive_backward(child)


for how in ("素朴な再帰", "トポロジカル順（value.py の backward）"):
    a = value.Value(1.0)
    b = a + a
    c = b + b
    if how == "素朴な再帰":
        c.grad = 1.0
        naive_backward(c)
    else:
        c.backward()
    print(f"{how}：a.grad = {a.grad}（正しくは 4）")

# %% [markdown]
# 素朴な再帰は、$b$ に1本目の辺から 1 だけ届いた時点で $a$ へ押し出し（$a$ に 2）、2本目が届いて $b$ が 2 になるともう一度押し出す（$a$ に 4）ので、
# 最初の 1 を二重に数えて 6 になります。ノードの勾配は、親すべてから届いて **完成してから** 押し出す：それを保証するのがトポロジカル順です。
# （素朴な再帰は、同じノードを何度も通るグラフで、道の数だけ時間もかかります。）

# %% [markdown]
# ## 6. ステップ5：`backward`
#
# 根の勾配は $\partial L/\partial L = 1$ です。あとは `topological_order(root)` の **逆順** に各ノードを訪れ、
# 子ごとに `child.grad += local_grad * node.grad` を実行します（連鎖律）。
#
# `=` ではなく `+=` なのは、同じノードが2回以上使われると（$a \cdot a + 2a$ の $a$ には3本の辺がある）、それぞれの辺から勾配が届いて足し合わされるからです。
# チェックは4つの式で、根の値と葉の勾配を `value.py` と比べます。4つ目の式は $d = ab$ を3か所で使う「ひし形」のグラフです。
# 式はあなたの `Value`（ステップ1〜3の `add`、`mul`、`tanh`）で組むので、それらが済んでいないと、この表も 未回答 になります。

# %%
def backward(root):
    # ここに書く：root.grad = 1.0、それから reversed(topological_order(root)) の順に、子へ勾配を押し出す
    raise NotImplementedError


# %%
exercises.check_01_backward(Value, backward)

# %% [markdown]
# ## 7. 自分の `Value` と `value.py` を比べる
#
# 5つの部品がそろえば、自分の `Value` で任意の（`+`、`*`、`tanh` の）式の勾配が計算できます。
# このプロジェクトの `value.Value` で同じ式を組み、根の値とすべての葉の勾配を比べます。
# 式は $d = ab + c$、$e = \tanh(d)\,a$、$L = e \cdot e + 2d$ で、$a$、$d$、$e$ はそれぞれ2か所で使われます。

# %%
def expression(a, b, c):
    d = a * b + c
    e = d.tanh() * a
    return e * e + 2 * d


def grads(ValueClass):
    """[L, dL/da, dL/db, dL/dc] of expression(), built with ValueClass."""
    return lambda *xs: exercises.grads_01(ValueClass, lambda root: root.backward(), expression, xs)


print("比べる数：[L の値, ∂L/∂a, ∂L/∂b, ∂L/∂c]")
exercises.compare("自分の Value と value.py", grads(Value), grads(value.Value),
                  [("a, b, c = 0.5, -1.2, 0.3", (0.5, -1.2, 0.3)), ("a, b, c = 2, 3, -4", (2.0, 3.0, -4.0))])

# %% [markdown]
# 一致したら、あなたの `Value` は `value.py` と同じ勾配を計算しています。「完全一致」が「いいえ」でも、差が丸め誤差（$10^{-16}$ 程度）なら正しい実装です。
# 足し算の順番や `1 - t*t` と `1 - t**2` のような書き方の違いで、最後の桁が変わることがあります。
#
# <details><summary>発展：value.py はどこが違うか（開くと表示）</summary>
#
# `value.py` の `Value` は、ここで作ったものと同じ4つの欄（と演算名）を持ちますが、実用のためにいくつか違います。
#
# - **定数はノードにしない：** `2 * a` では、2 を葉にせず、局所勾配 2 として `a` の1本の辺に取り込みます。グラフが小さくなります。
# - **反復のトポロジカルソート：** 再帰ではなく自分で管理するスタックを使うので、20 万段の鎖でも `RecursionError` になりません（ノート 02 の発展と練習問題 2）。
# - **途中のノードの勾配を 0 に戻してから押し出す：** `backward()` を2回呼んでも途中のノードの勾配が二重にならず、葉にだけ累積します（ノート 02 §4）。
# - **数値の検査：** `exp` があふれる、`log` に 0 以下が来る、といった場合は、黙って `inf` や `nan` にせず、説明のあるエラーを出します。
#
# </details>

# %% [markdown]
# ## まとめ
#
# | 部品 | 局所勾配 / 役割 |
# |---|---|
# | `add(a, b)` | $(1, 1)$ |
# | `mul(a, b)` | $(b, a)$：相手の値 |
# | `tanh(a)` | $1 - t^2$：出力の値 $t$ で書ける |
# | `topological_order(root)` | 子が親より先に来る並び（深さ優先探索） |
# | `backward(root)` | 根の勾配を 1 にし、逆トポロジカル順に `child.grad += local_grad * node.grad` |
#
# ## 理解度チェック
#
# **問1.** `mul` の局所勾配を `(a.data, b.data)` と逆に書くと、チェックのどの点で差が出ますか。差が出ない点はありますか。
#
# <details><summary>答え</summary>
#
# $a \ne b$ のすべての点で差が出ます（`2 × (-3)` では局所勾配が $(-3, 2)$ のはずが $(2, -3)$ になる）。
# $a = b$ の点（例えば $a \cdot a$）では、逆に書いても同じ値なので差が出ません。チェックする点は、対称な値や 0 のような特別な値を避けて選びます。
#
# </details>
#
# **問2.** `backward` で `reversed(...)` を付け忘れる（トポロジカル順のまま訪れる）と、何が起きますか。
#
# <details><summary>答え</summary>
#
# 最初に訪れるのは葉で、その勾配はまだ 0 です。親から勾配が届く前に子へ押し出すので、根の 1 だけが根の子に届き、それより下の葉の勾配は 0 のまま（または一部だけ）になります。
# 逆順に訪れれば、どのノードもすべての親を処理した後に訪れるので、勾配が完成してから押し出せます。
#
# </details>
#
# **問3.** $y = a \cdot a + 2a$（$a = 3$）で、`+=` を `=` に書き換えると `a.grad` はいくつになりますか。
#
# <details><summary>答え</summary>
#
# この骨組みでは `2 * a` の 2 が葉になり、$a$ へは `a*a` から 3 と 3、`2*a` から 2 が届きます。正しくは和の 8 ですが、
# `=` では最後に押し出した1本だけが残ります（どれが最後かは並びによる：2 か 3）。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 骨組みに新しい演算を足します。各問の解答セルの関数を書き、すぐ下のチェックセルを実行してください。
# チェックは、ステップ1〜5と同じく `value.py` と比べる表を出します（書く前は 未回答）。
#
# ### 練習問題 1：`relu`
#
# $\mathrm{relu}(x) = \max(x, 0)$ を1つのノードとして作る関数 `relu(a)` を書いてください（子は `(a,)` だけ）。
# $x = 0$ では微分できないので、`value.py` と同じく局所勾配を 0 とします。
# チェックは折れ点そのもの（$x = 0$）と、そのすぐそば（$x = \pm10^{-300}$）でも比べます。
#
# <details><summary>ヒント 1</summary>
#
# 折れ線の傾きは、$x > 0$ の側と $x < 0$ の側でそれぞれいくつですか。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 局所勾配は入力が正かどうかだけで決まる数です。`1.0 if a.data > 0 else 0.0`。
#
# </details>

# %%
def relu(a):
    # ここに書く：Value(max(a.data, 0), (a,), (局所勾配,), "relu")
    raise NotImplementedError


# %%
exercises.check_01_relu(Value, relu)

# %% [markdown]
# 折れ点のすぐそばでは、数値微分（中心差分）は折れ点をまたぎます。$x = 10^{-300}$ で刻み $h = 10^{-6}$ の中心差分を計算すると：

# %%
h = 1e-6
for x in (1e-300, -1e-300):
    print(f"x = {x:g}：中心差分 (relu(x+h) - relu(x-h)) / 2h = {(max(x + h, 0) - max(x - h, 0)) / (2 * h)}"
          f"、正しい局所勾配 = {1.0 if x > 0 else 0.0}")

# %% [markdown]
# ### 練習問題 2：`sigmoid`
#
# シグモイド $\sigma(x) = 1/(1 + e^{-x})$ を、`tanh` と同じく **1つのノード** として作る関数 `sigmoid(v)` を書いてください。
# 戻り値は子が `(v,)` だけの新しい `Value` で、`data` は $s = \sigma(x)$（$x$ は `v.data`）です。局所勾配 $d\sigma/dx$ は正しい式ならどの形でもかまいません。
# チェックは $x = -3$ から $30$ までの点で比べます。$x = 30$ は飽和した点で、$s = 1 - 9.4\times10^{-14}$ です。
#
# <details><summary>ヒント 1</summary>
#
# $\sigma(x) = (1 + e^{-x})^{-1}$ を連鎖律で微分してみてください。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 微分に出てくる $e^{-x}$ は、$s = 1/(1 + e^{-x})$ を $e^{-x}$ について解けば $s$ で書けます（`tanh` の $1 - t^2$ と同じく、出力の値で書ける）。
#
# </details>

# %%
def sigmoid(v):
    # ここに書く：one node, Value(s, (v,), (local_grad,), "sigmoid")
    raise NotImplementedError


# %%
exercises.check_01_sigmoid(Value, sigmoid)

# %% [markdown]
# 飽和した $x = 30$ で、数値微分（中心差分）は何を返すでしょうか。$s$ は 1 にごく近く、$s(x \pm h)$ の差は float64 の最後の桁より小さくなります：

# %%
def s(x):
    return 1 / (1 + math.exp(-x))


x = 30.0
print(f"中心差分 (s(x+h) - s(x-h)) / 2h（h = 1e-6）= {(s(x + h) - s(x - h)) / (2 * h)!r}")
print(f"正しい値 e^-x / (1 + e^-x)^2           = {math.exp(-x) / (1 + math.exp(-x)) ** 2!r}")
