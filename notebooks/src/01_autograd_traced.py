# %% [markdown]
# # 自動微分を1行ずつ追う（`value.Value`）
#
# **対応する章:** microgpt 本の `Value`（スカラー自動微分）の部分。第21章（`linear` / `softmax` / `rmsnorm`）と
# 第22章（`gpt`）は、すべてこの `Value` の演算の組み合わせとして書かれています。その土台の実習です。
#
# このノートで見られるもの：
#
# 1. 小さな式を `Value` で組み、計算グラフを描く（`value.draw_graph`）。
# 2. `backward()` が **どの順に** ノードを訪れ、各辺で `child.grad += local_grad * node.grad` を
#    どう積み上げるかを、ノードごとの表で見る（`value.trace_backward`）。
# 3. micrograd でおなじみの式で、勾配を手計算・公開値・数値微分（中心差分）と照合する。
# 4. 同じノードを2回使うと勾配が足し合わされること、`backward()` を2回呼ぶと葉の勾配が累積すること。
# 5. 20 万段の鎖でも動くように、トポロジカルソートを **再帰ではなく反復** で書く理由（再帰版は `RecursionError` で止まる）。
# 6. Graphviz の DOT テキスト（`value.to_dot`）。

# %%
import sys
from pathlib import Path

ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists())
sys.path.insert(0, str(ROOT))  # value.py, utils.py, ... live at the repo root

import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)

from value import Value, draw_graph, to_dot, topological_order, trace_backward, zero_grad

plt.rcParams["figure.dpi"] = 110

# %% [markdown]
# ## 1. 最初の式：$L = (a \cdot b + c) \cdot f$
#
# 各 `Value` は `data`（順伝播の値）、`grad`（根 $L$ に対する微分）、子ノード、そして
# **子に対する局所勾配**（順伝播のときに計算済み）を持ちます。`labels` で名前を付けて描きます。
# 箱は値（上段が名前、`data`、`grad`。葉は橙、演算の結果は青）、丸は演算（名前が長いものは横長の角丸）、辺の小さな数字は局所勾配 $\partial(\text{親})/\partial(\text{子})$ です。

# %%
a, b, c, f = Value(2.0), Value(-3.0), Value(10.0), Value(-2.0)
e = a * b
d = e + c
L = d * f
names = {a: "a", b: "b", c: "c", e: "e", d: "d", f: "f", L: "L"}

ax = draw_graph(L, labels=names)
ax.set_title("L = (a*b + c) * f   before backward(): every grad is 0")
plt.show()

# %% [markdown]
# `trace_backward` は `backward()` とまったく同じ計算をしながら、訪れた順に1行ずつ記録します。
# 根 $L$ から始まり、各ノードの `grad` が **完成してから** 子へ押し出されることに注目してください
# （逆トポロジカル順だから）。右側の列は、子への辺ごとの「局所勾配」「押し出した量 = 局所勾配 × grad」「押し出した後の子の grad」です。

# %%
rows = trace_backward(L, labels=names)

# %%
ax = draw_graph(L, labels=names)
ax.set_title("after backward(): grad = dL/d(node)")
plt.show()

# %% [markdown]
# 手計算：$L = d f$、$d = e + c$、$e = a b$ なので
#
# | 変数 | 連鎖律 | 値 |
# |---|---|---|
# | $\partial L/\partial f$ | $d$ | $4$ |
# | $\partial L/\partial d$ | $f$ | $-2$ |
# | $\partial L/\partial c$ | $\partial L/\partial d \cdot 1$ | $-2$ |
# | $\partial L/\partial e$ | $\partial L/\partial d \cdot 1$ | $-2$ |
# | $\partial L/\partial a$ | $\partial L/\partial e \cdot b$ | $6$ |
# | $\partial L/\partial b$ | $\partial L/\partial e \cdot a$ | $-4$ |

# %%
hand = {"f": 4.0, "d": -2.0, "c": -2.0, "e": -2.0, "a": 6.0, "b": -4.0}
for v, name in names.items():
    if name in hand:
        assert v.grad == hand[name], (name, v.grad)
print("all six gradients match the hand calculation:", {n: names_v.grad for names_v, n in names.items()})

# %% [markdown]
# ## 2. ニューロン1個：$o = \tanh(x_1 w_1 + x_2 w_2 + b)$
#
# micrograd の講義でおなじみの例です。$b = 6.8813735870195432$ は $o = \tanh(0.8814) = 1/\sqrt2$ になるように選ばれた値で、
# $\partial o/\partial n = 1 - o^2 = 0.5$ がきれいに出ます。

# %%
x1, x2 = Value(2.0), Value(0.0)
w1, w2 = Value(-3.0), Value(1.0)
bias = Value(6.8813735870195432)
x1w1 = x1 * w1
x2w2 = x2 * w2
s = x1w1 + x2w2
n = s + bias
o = n.tanh()
names = {x1: "x1", x2: "x2", w1: "w1", w2: "w2", bias: "b", x1w1: "x1*w1", x2w2: "x2*w2", s: "s", n: "n", o: "o"}
rows = trace_backward(o, labels=names)

# %%
ax = draw_graph(o, labels=names)
ax.set_title("o = tanh(x1*w1 + x2*w2 + b)")
plt.show()

# %% [markdown]
# 手計算：$\partial o/\partial n = 1 - o^2 = 0.5$。よって
# $\partial o/\partial x_1 = 0.5\,w_1 = -1.5$、$\partial o/\partial w_1 = 0.5\,x_1 = 1$、
# $\partial o/\partial x_2 = 0.5\,w_2 = 0.5$、$\partial o/\partial w_2 = 0.5\,x_2 = 0$、$\partial o/\partial b = 0.5$。
# 浮動小数点の丸めがあるので `1e-12` 以内で照合し、さらに **中心差分** $\frac{L(x+h) - L(x-h)}{2h}$ とも比べます。

# %%
hand = {x1: -1.5, w1: 1.0, x2: 0.5, w2: 0.0, bias: 0.5}
for v, g in hand.items():
    assert abs(v.grad - g) < 1e-12, (names[v], v.grad, g)


def neuron(vals):
    """The same expression on fresh leaves, returning the float output (for finite differences)."""
    x1, x2, w1, w2, b = (Value(v) for v in vals)
    return (x1 * w1 + x2 * w2 + b).tanh().data


leaves = [x1, x2, w1, w2, bias]
h = 1e-6
print(f"{'leaf':>4} {'backward()':>12} {'central diff':>14} {'hand':>6}")
for i, v in enumerate(leaves):
    up = [u.data + (h if j == i else 0.0) for j, u in enumerate(leaves)]
    dn = [u.data - (h if j == i else 0.0) for j, u in enumerate(leaves)]
    fd = (neuron(up) - neuron(dn)) / (2 * h)
    assert abs(fd - v.grad) < 1e-8
    print(f"{names[v]:>4} {v.grad:12.8f} {fd:14.8f} {hand[v]:6.2f}")

# %% [markdown]
# ## 3. micrograd README の式
#
# micrograd の README には、PyTorch で検算済みの少し込み入った式があり、
# `g.data = 24.7041`、`a.grad = 138.8338`、`b.grad = 645.5773` と公開されています。
# 同じ式がこのエンジンでも同じ値になり、数値微分とも一致することを確かめます。

# %%
def micrograd_example(a_val, b_val):
    a, b = Value(a_val), Value(b_val)
    c = a + b
    d = a * b + b**3
    c += c + 1
    c += 1 + c + (-a)
    d += d * 2 + (b + a).relu()
    d += 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    g += 10.0 / f
    return a, b, g


a, b, g = micrograd_example(-4.0, 2.0)
g.backward()
h = 1e-6
fd_a = (micrograd_example(-4.0 + h, 2.0)[2].data - micrograd_example(-4.0 - h, 2.0)[2].data) / (2 * h)
fd_b = (micrograd_example(-4.0, 2.0 + h)[2].data - micrograd_example(-4.0, 2.0 - h)[2].data) / (2 * h)
print(f"g.data = {g.data:.4f}   (published 24.7041)")
print(f"a.grad = {a.grad:.4f}  (published 138.8338, central difference {fd_a:.4f})")
print(f"b.grad = {b.grad:.4f}  (published 645.5773, central difference {fd_b:.4f})")
print("nodes in the graph:", len(topological_order(g)))

# %% [markdown]
# ## 4. 勾配は「足し合わされる」
#
# (1) **同じノードを何度も使う**と、それぞれの辺から勾配が届き、`+=` で足し合わされます。
# $y = a \cdot a + 2a$ では $a$ から3本の辺が出ていて（`a*a` に2本、`2*a` に1本）、
# $\partial y/\partial a = a + a + 2 = 2a + 2$。`=` で上書きしていたら間違った答えになります。
# （定数 `2` はノードにならず、`2*a` の局所勾配 2 に畳み込まれています。）
# 図では `a*a` へ向かう2本の辺が別々の線で描かれ、どちらにも局所勾配 3（$= a$）が付いています。表でも2行に分かれています。

# %%
a = Value(3.0)
aa = a * a
a2 = 2 * a
y = aa + a2
names = {a: "a", aa: "a*a", a2: "2*a", y: "y"}
rows = trace_backward(y, labels=names)
print("\na.grad =", a.grad, " (hand: 2a + 2 =", 2 * 3.0 + 2, ")")

# %%
ax = draw_graph(y, labels=names)
ax.set_title("y = a*a + 2*a: three edges leave a, their gradients add up")
plt.show()

# %% [markdown]
# (2) **`backward()` を2回呼ぶ**と、葉（パラメータ）の勾配は PyTorch と同じく累積します（2倍になる）。
# 途中のノードは毎回 0 に戻されるので、2回目はちょうど「1回目をもう一度足した」ことになります。
# 学習ループでは各ステップの前に `zero_grad(params)` で葉の勾配を消します。

# %%
y.backward()
print("after a 2nd backward():", a.grad, "(= 2 x 8)")
zero_grad([a])
y.backward()
print("zero_grad, then backward():", a.grad)

# %% [markdown]
# ## 5. 深い鎖と反復トポロジカルソート
#
# `backward()` はまず `topological_order(root)` で「子が親より先に来る」並びを作り、その逆順に勾配を流します。
# 上の最初の式なら次の順です。

# %%
a, b, c, f = Value(2.0), Value(-3.0), Value(10.0), Value(-2.0)
e = a * b
d = e + c
L = d * f
L.backward()
names = {a: "a", b: "b", c: "c", e: "e", d: "d", f: "f", L: "L"}
print("topological order:", [names[v] for v in topological_order(L)])
print("backward visits  :", [names[v] for v in reversed(topological_order(L))])

# %% [markdown]
# micrograd の元の実装はこの並びを **再帰関数**（`build_topo(child)` を子に対して呼ぶ）で作ります。
# すると鎖の長さがそのまま再帰の深さになり、Python の再帰上限（素の `python` では既定 1000、Jupyter のカーネルでは下の出力のとおり少し大きめ）を超えると `RecursionError` で止まります。
# 長い系列を1ステップずつ積み上げる RNN 風の計算や、何千層もの演算を1つのグラフにすると簡単に超える深さです。
#
# `value.topological_order` は明示的なスタック `(node, expanded)` を使う反復版の深さ優先探索なので、
# 深さはメモリだけで決まります。$y = x \cdot 0.999999^{n}$ を $n = 200{,}000$ 段の鎖で作り、
# 勾配が手計算 $0.999999^{n}$ と一致するかを見ます。
#
# 比較のため、ベンチマーク用に置いてある「元の設計」の `benchmarks/naive_value.NaiveValue`（再帰版）でも同じ鎖を作ります。

# %%
from benchmarks.naive_value import NaiveValue

n_links = 200_000
x = Value(1.0)
y = x
for _ in range(n_links):
    y = y * 0.999999
y.backward()
print(f"value.Value, {n_links:,} links: x.grad = {x.grad:.12f}, hand 0.999999**n = {0.999999 ** n_links:.12f}")
print("recursion limit of this interpreter:", sys.getrecursionlimit())

xn = NaiveValue(1.0)
yn = xn
for _ in range(n_links):
    yn = yn * 0.999999
try:
    yn.backward()
    print("NaiveValue: backward() finished")
except RecursionError as err:
    print("NaiveValue (recursive topological sort): RecursionError:", err)

# %% [markdown]
# ## 6. Graphviz の DOT テキスト
#
# `to_dot(root)` は Graphviz の DOT 形式の文字列を返します（Graphviz 本体は不要）。
# `dot -Tsvg graph.dot -o graph.svg` やオンラインのビューアに貼れば図になります。各辺のラベルは局所勾配です。

# %%
print(to_dot(L, labels=names))
