# %% [markdown]
# # 自動微分を1行ずつ追う（`value.Value`）
#
# （目安：本編 約37分、練習問題 約25分）
#
# **対応する章:** microgpt 本の `Value`（スカラー自動微分）の部分。ノート 01 で自分の `Value` を作りました。
# ここでは、このプロジェクトのエンジン `value.Value` で、`backward()` が何をしているかを1行ずつ追います。
#
# このノートで見られるもの：
#
# 1. 小さな式を `Value` で組み、計算グラフを描く（`tracing.draw_graph`。150 dpi の実寸で表示）。各ノードの `grad` が $\partial L/\partial(\text{そのノード})$ であること。
#    `backward()` が **どの順に** ノードを訪れ、各辺で `child.grad += local_grad * node.grad` をどう積み上げるかを、ノードごとの表で見る（`tracing.trace_backward`）。
# 2. micrograd でおなじみのニューロン1個と README の式（公開値 `a.grad = 138.8338` など）で、勾配を手計算・公開値と照合し、`value.gradient_check` で数値微分（中心差分）とも照合する。
# 3. 局所勾配をわざと間違えたノードを `gradient_check` が FAIL と判定する様子と、この検査の限界（特別な点では間違いを見逃し、折れ点では正しい実装も FAIL になる）。
# 4. 同じノードを2回使うと勾配が足し合わされること、`backward()` を2回呼ぶと葉の勾配が累積すること（PyTorch で2回目がエラーになるのはどんなグラフか）。
# 5. 発展（読み飛ばしてよい）：20 万段の鎖でも動くように、トポロジカルソートを **再帰ではなく反復** で書く理由、勾配消失（0.1 を 324 回掛けると勾配はちょうど 0）、Graphviz の DOT テキスト。
# 6. まとめ、理解度チェック（答えは折りたたみ）と、コードで解く練習問題2題。
#
# §4 と発展には「予想してから確かめる」問いがあります。答えを開く前に、次のセルが何を表示するか予想してみてください。
#
# `trace_backward` と `gradient_check` が印字する表の見出しは英語です（プロジェクトの関数の出力）。列の意味は、それぞれの表の前に日本語で書きます。

# %%
import sys
from pathlib import Path

ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists()), None)
if ROOT is None:  # the kernel was started outside the repository: say so, instead of a bare StopIteration
    raise FileNotFoundError(f"value.py が {Path.cwd()} にもその上のフォルダにもありません。"
                            "Jupyter はこのリポジトリの中（ルートか notebooks/）で起動してください")
for path in (ROOT, ROOT / "notebooks"):  # the project's modules live at the root, exercises.py in notebooks/
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
from figures import (
    show_graph,  # notebooks/figures.py: tracing.draw_graph at 150 dpi, shown at full size
)

from tracing import to_dot, trace_backward
from value import Value, gradient_check, topological_order, zero_grad

plt.rcParams["figure.dpi"] = 110


# %% [markdown]
# ## 1. 最初の式：$L = (a \cdot b + c) \cdot f$
#
# 各 `Value` は `data`（順伝播の値）、`grad`、子ノード、そして
# **子に対する局所勾配**（順伝播のときに計算済み）を持ちます。
#
# `grad` は根 $L$ をこのノードで偏微分した値 $\partial L/\partial(\text{このノード})$ です。
# つまり「このノードの値だけを微小量 $\delta$ 動かしたとき（このノードを作った子は動かさずに）、その変化がこのノードを使うすべての経路を通って $L$ をどれだけ動かすか」の比率で、
# $L$ はおよそ $\text{grad} \times \delta$ だけ変わります。根自身は $\partial L/\partial L = 1$ です。
# `backward()` を呼ぶまでは 0 のままで、まだ意味のある値ではありません。
#
# `labels` で名前を付けて描きます。
# 箱は値（上段が名前、`data`、`grad`。葉は橙、演算の結果は青）、丸は演算（名前が長いものは横長の角丸）、辺の小さな数字は局所勾配 $\partial(\text{親})/\partial(\text{子})$ です。
# 図は 150 dpi で描き、縮小せずに実寸で表示します（ページより広い図は横にスクロールして見てください）。


# %%
a, b, c, f = Value(2.0), Value(-3.0), Value(10.0), Value(-2.0)
e = a * b
d = e + c
L = d * f
names = {a: "a", b: "b", c: "c", e: "e", d: "d", f: "f", L: "L"}

show_graph(L, names, r"$L = (a \cdot b + c) \cdot f$：backward() の前（grad はすべて 0）")

# %% [markdown]
# `trace_backward` は `backward()` とまったく同じ計算をしながら、訪れた順に1行ずつ記録します。
# 表の列は、`node` がノードの名前、`op` が演算、`data` が値、`grad` が $\partial L/\partial(\text{ノード})$、
# 縦線の右が子への辺ごとの `child`（子の名前）、`d node/d child`（局所勾配）、`pushed`（押し出した量）、`child.grad`（押し出した後の子の grad）です。
# 根 $L$ から始まり、各ノードの `grad` が **完成してから** 子へ押し出されることに注目してください
# （逆トポロジカル順だから）。右側の列は、子への辺ごとの「局所勾配」「押し出した量 = 局所勾配 × grad」「押し出した後の子の grad」です。

# %%
rows = trace_backward(L, labels=names)

# %%
show_graph(L, names, r"backward() の後：grad = $\partial L / \partial$(そのノード)")

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
#
# 「$d$ だけを $\delta$ 動かすと $L$ はおよそ $-2\delta$ 変わる」ことも、$d$ を実際に動かして確かめます
# （$d$ を作った $e$ と $c$ はそのまま、$d$ を使う $L = d f$ だけを計算し直す）。


# %%
hand = {"f": 4.0, "d": -2.0, "c": -2.0, "e": -2.0, "a": 6.0, "b": -4.0}
for v, name in names.items():
    if name in hand:
        assert v.grad == hand[name], (name, v.grad)
print("各ノードの grad（根 L は dL/dL = 1）:", {name: v.grad for v, name in names.items()})
print("根以外の6つの勾配は手計算と一致")

delta = 1e-3
L_moved = (d.data + delta) * f.data  # move only d; e and c stay, L = d * f is recomputed
print(f"d を {delta} 動かすと L の変化は {L_moved - L.data:.6f}、d.grad × {delta} = {d.grad * delta:.6f}")

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
show_graph(o, names, r"$o = \tanh(x_1 w_1 + x_2 w_2 + b)$：backward() の後")

# %% [markdown]
# 手計算：$\partial o/\partial n = 1 - o^2 = 0.5$。よって
# $\partial o/\partial x_1 = 0.5\,w_1 = -1.5$、$\partial o/\partial w_1 = 0.5\,x_1 = 1$、
# $\partial o/\partial x_2 = 0.5\,w_2 = 0.5$、$\partial o/\partial w_2 = 0.5\,x_2 = 0$、$\partial o/\partial b = 0.5$。
# 浮動小数点の丸めがあるので `1e-12` 以内で照合します。
#
# さらに **数値微分** とも比べます。`value.gradient_check(f, inputs)` は、`f`（`Value` のリストを受け取り `Value` を1つ返す関数）を
# 新しい葉で組み立てて `backward()` した勾配と、入力を1つずつ $\pm\varepsilon$ だけ動かした **中心差分**
# $\frac{f(x + \varepsilon e_i) - f(x - \varepsilon e_i)}{2\varepsilon}$ とを入力ごとに比べて表を表示し、すべて一致すれば `True` を返します
# （一致の基準は $|\text{誤差}| \le \text{atol} + \text{rtol} \cdot |\text{数値微分}|$。既定は $\varepsilon = 10^{-6}$、rtol $= 10^{-5}$、atol $= 10^{-8}$）。
# 表の `i` は入力の番号（ここでは 0 から順に $x_1, x_2, w_1, w_2, b$）、`input` が入力の値、`backprop` が `backward()` の勾配、`numeric` が中心差分、
# `abs error` と `rel error` が絶対誤差と相対誤差、最後の列が合否（`ok` / `FAIL`）です。


# %%
hand = {x1: -1.5, w1: 1.0, x2: 0.5, w2: 0.0, bias: 0.5}
for v, g in hand.items():
    assert abs(v.grad - g) < 1e-12, (names[v], v.grad, g)
print("backward() の勾配は手計算と一致:", {names[v]: round(v.grad, 12) for v in hand})


def neuron(vals):
    """o = tanh(x1*w1 + x2*w2 + b) on the Values vals = [x1, x2, w1, w2, b]."""
    x1, x2, w1, w2, b = vals
    return (x1 * w1 + x2 * w2 + b).tanh()


ok = gradient_check(neuron, [u.data for u in (x1, x2, w1, w2, bias)])
print("gradient_check の戻り値:", ok)

# %% [markdown]
# ### micrograd README の式
#
# micrograd の README には、PyTorch で検算済みの少し込み入った式があり、
# `g.data = 24.7041`、`a.grad = 138.8338`、`b.grad = 645.5773` と公開されています。
# 同じ式がこのエンジンでも同じ値になり、数値微分とも一致することを確かめます。

# %%
def micrograd_example(a, b):
    """The expression of micrograd's README on the Values a, b; returns g."""
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
    return g


a, b = Value(-4.0), Value(2.0)
g = micrograd_example(a, b)
g.backward()
print(f"g.data = {g.data:.4f}   （公開値 24.7041）")
print(f"a.grad = {a.grad:.4f}  （公開値 138.8338）")
print(f"b.grad = {b.grad:.4f}  （公開値 645.5773）")
print("グラフのノード数:", len(topological_order(g)))
print()
ok = gradient_check(lambda v: micrograd_example(v[0], v[1]), [-4.0, 2.0])

# %% [markdown]
# ## 3. 局所勾配の間違いを `gradient_check` で見つける
#
# `backward()` の連鎖律そのものは数行で、間違えにくい部分です。間違いが入りやすいのは、新しい演算を足すときに書く **局所勾配** のほうです。
# 試しに $x^2$ を1つのノードにする演算 `sq` を手で作り、局所勾配を正しい $2x$ ではなく $x$ と書き間違えてみます
# （`Value(data, 子のタプル, 局所勾配のタプル, 演算名)` で、`Value` の演算と同じ形のノードが作れます）。
# 他の演算と組み合わせた式 $\mathrm{sq}(x_0) \cdot x_1$ で検査します。


# %%
def sq_wrong(x):
    return Value(x.data**2, (x,), (x.data,), "sq")  # wrong local gradient: d(x^2)/dx is 2x, not x


def sq_right(x):
    return Value(x.data**2, (x,), (2 * x.data,), "sq")


print("間違った局所勾配:")
print("戻り値:", gradient_check(lambda v: sq_wrong(v[0]) * v[1], [3.0, -0.5]))
print("\n正しい局所勾配:")
print("戻り値:", gradient_check(lambda v: sq_right(v[0]) * v[1], [3.0, -0.5]))

# %% [markdown]
# 間違えた入力 $x_0$ の行だけが FAIL になり、逆伝播の値 $x_0 x_1 = -1.5$ が数値微分 $2 x_0 x_1 = -3$ の半分になっています。
# 局所勾配が間違っていなければ、$x_1$ の行や正しい `sq_right` の表のように、誤差は丸め程度（ここでは $10^{-9}$ 未満）に収まります。
#
# ただし `gradient_check` は **1点での** 検査です。次の2つに注意します。
#
# - 特別な点では間違いを見逃します。$x = 0$ では正しい $2x$ も間違った $x$ も 0 なので、`sq_wrong` も合格してしまいます。検査する点は 0 や 1 のような特別な値を避け、ばらばらな値にします。
# - 微分できない点（折れ点）では、正しい実装でも FAIL になります。`relu` の $x = 0$ では、逆伝播は局所勾配として 0 を使いますが（この実装の取り決め）、中心差分は $(\varepsilon - 0)/(2\varepsilon) = 0.5$ です。


# %%
print("sq_wrong を x = 0（特別な点）で:")
gradient_check(lambda v: sq_wrong(v[0]), [0.0])
print("\nrelu を折れ点 x = 0（微分できない点）で:")
gradient_check(lambda v: v[0].relu(), [0.0])

# %% [markdown]
# ## 4. 勾配は「足し合わされる」
#
# (1) **同じノードを何度も使う**と、それぞれの辺から勾配が届き、`+=` で足し合わされます。
# $y = a \cdot a + 2a$ では $a$ から3本の辺が出ていて（`a*a` に2本、`2*a` に1本）、
# $\partial y/\partial a = a + a + 2 = 2a + 2$。`=` で上書きしていたら間違った答えになります。
# （定数 `2` はノードにならず、`2*a` の局所勾配 2 として取り込まれています。）
# 図では `a*a` へ向かう2本の辺が別々の線で描かれ、どちらにも局所勾配 3（$= a$）が付いています。表でも2行に分かれています。

# %%
a = Value(3.0)
aa = a * a
a2 = 2 * a
y = aa + a2
names = {a: "a", aa: "a*a", a2: "2*a", y: "y"}
rows = trace_backward(y, labels=names)
print("\na.grad =", a.grad, "（手計算 2a + 2 =", 2 * 3.0 + 2, "）")

# %%
show_graph(y, names, r"$y = a \cdot a + 2a$：$a$ から出る3本の辺の勾配が足し合わされる", fontsize=10)

# %% [markdown]
# (2) **`backward()` を2回呼ぶ**とどうなるでしょうか。上のセルで `backward()` は1回呼ばれ、`a.grad` は 8 です。
#
# **予想してから確かめる：** 次のセルは同じ `y` でもう一度 `backward()` を呼びます。`a.grad` はいくつになるでしょうか。
# そのあと `zero_grad([a])` で葉の勾配を 0 に戻してから `backward()` すると、いくつでしょうか。
#
# <details><summary>答え</summary>
#
# 2回目の後は 16、`zero_grad` の後は 8 です（下のセルの出力）。`backward()` は根の `grad` を 1 にし、途中のノードの `grad` を 0 に戻してから押し出しますが、
# 葉（パラメータ）の `grad` には触れずに `+=` で足し込むので、2回目はちょうど「1回目をもう一度足した」ことになります。
# 学習ループでは各ステップの前に `zero_grad(params)` で葉の勾配を消します。
#
# </details>

# %%
y.backward()
print("2回目の backward() の後:", a.grad, "（= 2 × 8）")
zero_grad([a])
y.backward()
print("zero_grad の後に backward():", a.grad)

# %% [markdown]
# **PyTorch との違い：** PyTorch で同じ式を書いて `y.backward()` を2回呼ぶと、2回目は
# `RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed) ...` で止まります。
# PyTorch は局所勾配を前もって数値にせず、逆伝播のときに計算します。そのために必要な値を、順伝播のときにノードごとに **テンソルとして保存** しておき、
# 1回目の `backward()` が終わるとそれらを解放します。エラーになるかどうかは、グラフに「何かを保存したノード」があるかどうかで決まります。
#
# - **掛け算と割り算** のノードは、相手の因子を保存します（$\partial(uv)/\partial u = v$ なので $v$ が要る）。相手が定数でも同じで、
#   PyTorch は Python の数 `2` を 0 次元のテンソルに包んで保存します。だから `2*b`、`b/2`、`b + 2*b` は、掛け算・割り算が1つあるだけで2回目が **エラー** になります。
# - **足し算・引き算・符号反転** のノードは、局所勾配が ±1 なので何も保存しません。`b + b`、`b + 1`、`b - 3`、`-b` だけのグラフなら、2回目もエラーにならず、
#   葉の `.grad` に累積します（ここの `Value` と同じ）。
#
# つまり「足し算と定数倍だけなら大丈夫」ではなく、「保存するノード（掛け算・割り算、`tanh` や `exp` など）が1つもなければ大丈夫」です。
# 1回目に `y.backward(retain_graph=True)` と渡しておけば保存値が残り、どのグラフでも2回目はここと同じく葉の `.grad` に累積します。
# （このノートは PyTorch を使いません。ここで述べた PyTorch の挙動は、`tests/test_torch_facts.py` が PyTorch 2.x で確かめています。torch が入っていない環境ではそのテストは飛ばされます。）
#
# この `Value` は局所勾配を順伝播のときに数値として各ノードに持たせ、捨てないので、何度でも `backward()` できます。

# %% [markdown]
# ## 発展：深い鎖と反復トポロジカルソート（読み飛ばしてよい）
#
# ノート 01 のステップ4では、トポロジカルソートを再帰で書きました。ここでは、それが長い鎖で止まる理由と、`value.py` が反復で書く理由を見ます。
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
print("トポロジカル順      :", [names[v] for v in topological_order(L)])
print("backward が訪れる順:", [names[v] for v in reversed(topological_order(L))])

# %% [markdown]
# micrograd の元の実装はこの並びを **再帰関数**（`build_topo(child)` を子に対して呼ぶ）で作ります。
# すると鎖の長さがそのまま再帰の深さになり、Python の再帰上限を超えると `RecursionError` で止まります。
# 再帰上限はプログラムが `sys.setrecursionlimit` で変えられる設定値で、環境によって違うことがあるので、
# 決め打ちせずに表示します。このカーネルの値と、素の `python` を別プロセスで起動したときの値です。

# %%
import subprocess

print("このカーネルの再帰上限     :", sys.getrecursionlimit())
plain = subprocess.run([sys.executable, "-c", "import sys; print(sys.getrecursionlimit())"],
                       capture_output=True, text=True, check=True)
print("素の python の再帰上限     :", plain.stdout.strip())

# %% [markdown]
# 比較のため、ベンチマーク用に置いてある「元の設計」の `benchmarks/naive_value.NaiveValue`（再帰版のトポロジカルソート）で、
# $y = x \cdot 0.999999^{n}$ の鎖が何段まで `backward()` できるかを二分探索で測ります。
#
# **予想してから確かめる：** 再帰版が逆伝播できる最長の鎖は、上に表示したこのカーネルの再帰上限と比べてどのくらいでしょうか。
# (a) 再帰上限とちょうど同じ、(b) 再帰上限よりわずかに短い、(c) 再帰上限の半分くらい。
#
# <details><summary>答え</summary>
#
# (b) です。下のセルの出力で、差は数十段です。鎖の1段が再帰の1段（`build_topo` の呼び出し1回）になり、
# 差は `build_topo` の外側ですでに使われている段数（Jupyter のカーネル、このセル、`naive_chain_ok`、`backward` の呼び出し）です。
#
# </details>

# %%
from benchmarks.naive_value import NaiveValue


def naive_chain_ok(n):
    """Can NaiveValue (recursive topological sort) backprop through a chain of n multiplications?"""
    x = NaiveValue(1.0)
    y = x
    for _ in range(n):
        y = y * 0.999999
    try:
        y.backward()
        return True
    except RecursionError:
        return False


lo, hi = 1, 4 * sys.getrecursionlimit()  # naive_chain_ok(lo) is True, naive_chain_ok(hi) is False
assert naive_chain_ok(lo) and not naive_chain_ok(hi)
while hi - lo > 1:
    mid = (lo + hi) // 2
    lo, hi = (mid, hi) if naive_chain_ok(mid) else (lo, mid)
print("このカーネルの再帰上限            :", sys.getrecursionlimit())
print("NaiveValue が逆伝播できる最長の鎖:", lo, "段")
print("差                                :", sys.getrecursionlimit() - lo)

# %% [markdown]
# 再帰版が通る最長の鎖は、再帰上限よりわずかに短いだけです（上の出力の「差」）。
# 長い系列を1ステップずつ積み上げる RNN 風の計算や、何千層もの演算を1つのグラフにすると簡単に超える深さです。
#
# `value.topological_order` は明示的なスタックを使う反復版の深さ優先探索なので、
# 深さはメモリだけで決まります。同じ鎖を $n = 200{,}000$ 段で作り、
# 勾配が手計算 $0.999999^{n}$ と一致するかを見ます。`NaiveValue` では同じ鎖が `RecursionError` で止まります。

# %%
n_links = 200_000
x = Value(1.0)
y = x
for _ in range(n_links):
    y = y * 0.999999
y.backward()
print(f"value.Value、{n_links:,} 段: x.grad = {x.grad:.12f}、手計算 0.999999**n = {0.999999 ** n_links:.12f}")

xn = NaiveValue(1.0)
yn = xn
for _ in range(n_links):
    yn = yn * 0.999999
try:
    yn.backward()
    print(f"NaiveValue、{n_links:,} 段: backward() が終わった")
except RecursionError as err:
    print(f"NaiveValue、{n_links:,} 段（再帰のトポロジカルソート）: RecursionError: {err}")

# %% [markdown]
# この鎖の勾配は $0.999999^{200000} \approx 0.82$ です（上の出力の1行目）。1段あたりの因子が 1 にごく近いので、20 万段を通っても 0.82 倍にしかなりません。
# 因子が 1 より十分小さいと、話が変わります。逆伝播は各段の局所勾配を順に掛けていくので、PyTorch の基本の資料が「伝言ゲーム」にたとえる **勾配消失** が起きます
# （資料の例は $0.1 \times 0.1 \times 0.1 \times \dots \to 0$）。同じ反復版の `backward()` で、$y = x \cdot 0.1^{n}$ の鎖の `x.grad` を見ます。

# %%
import math

for n in (10, 100, 300, 320, 323, 324):
    x = Value(1.0)
    y = x
    for _ in range(n):
        y = y * 0.1
    y.backward()
    print(f"0.1 を掛ける段が {n:3d} 段: x.grad = {x.grad!r}")
print(f"float64 の最小の正の数: {math.ulp(0.0):.3e}")

# %% [markdown]
# 勾配は $10^{-n}$ と指数的に小さくなり、float64 で表せる最小の正の数（約 $4.9\times10^{-324}$）を下回る 324 段で **ちょうど 0.0** になります。
# ここから先の `x` には、学習の信号がまったく届きません。実際のネットワークでは因子は定数ではなく「重み × 活性化関数の局所勾配」で、
# 層を重ねたときに勾配が消える（あるいは爆発する）様子は、PyTorch の概念のノート 07（30 段の全結合層と、スケーリングしないアテンションの softmax）で見ます。

# %% [markdown]
# ### 発展：Graphviz の DOT テキスト
#
# `to_dot(root)` は Graphviz の DOT 形式の文字列を返します（Graphviz 本体は不要）。
# `dot -Tsvg graph.dot -o graph.svg` やオンラインのビューアに貼れば図になります。各辺のラベルは局所勾配です。

# %%
print(to_dot(L, labels=names))

# %% [markdown]
# ## まとめ
#
# | 見たこと | 要点 | 節 |
# |---|---|---|
# | `grad` の意味 | ノードの `grad` は $\partial L/\partial(\text{そのノード})$：その値だけを少し動かしたときの $L$ の変化率 | §1 |
# | `backward()` の1行 | 各辺で `child.grad += local_grad * node.grad`。局所勾配は、ノードを作るときに覚えておく | §1, §2 |
# | 検査 | `gradient_check` は中心差分との照合。特別な点では間違いを見逃し、微分できない点では正しい実装も FAIL になる | §3 |
# | 足し合わせ | 同じノードを2回使うと、2本の道の勾配が足される（だから `+=`）。`backward()` を2回呼ぶと葉の勾配が累積する | §4 |
# | 順番 | 逆トポロジカル順に訪れる。深い鎖では再帰でなく反復で並べる | 発展 |
# | 勾配消失 | 1 未満の因子を掛ける段を重ねると、勾配は指数的に小さくなり、やがてちょうど 0 になる | 発展 |
#
# ## 理解度チェック
#
# **問1.** §1 の式 $L = (a \cdot b + c) \cdot f$ で、`backward()` の後の `d.grad = -2` は何を意味しますか。`e.grad` も $-2$ になるのはなぜですか。
#
# <details><summary>答え</summary>
#
# $d$ の値だけを微小量 $\delta$ 動かすと（$d$ を作った $e$、$c$ はそのまま）、$L = d f$ がおよそ $-2\delta$ 変わる、という意味です（$\partial L/\partial d = f = -2$。§1 で $d$ を実際に動かして確かめました）。
# $e$ は $d = e + c$ を通してだけ $L$ に効き、その辺の局所勾配は $\partial d/\partial e = 1$ なので、$\partial L/\partial e = \partial L/\partial d \cdot 1 = -2$ です。
#
# </details>
#
# **問2.** `backward()` がノードを **逆トポロジカル順**（根から葉へ）に訪れるのはなぜですか。
#
# <details><summary>答え</summary>
#
# あるノードの `grad` は、そのノードを使うすべての親から押し出された量の和です。子へ押し出してよいのは、その和が完成してから、つまりすべての親を処理し終えた後です。
# トポロジカル順では親が子より後に来るので、その逆順に訪れれば、どのノードも親をすべて処理した後に訪れることになります。
#
# </details>
#
# **問3.** `child.grad += local_grad * node.grad` の `+=` を `=` に書き換えると、§4 の $y = a \cdot a + 2a$（$a = 3$）で `a.grad` はいくつになりますか。§4 の表を見て答えてください。
#
# <details><summary>答え</summary>
#
# 2 です（正しくは $2a + 2 = 8$）。表のとおり $a$ へは `a*a` から 3、3、最後に `2*a` から 2 が押し出されます。`=` では最後の 2 だけが残ります。
#
# </details>
#
# **問4.** 同じグラフで `backward()` を2回続けて呼ぶと、この `Value` と PyTorch ではそれぞれどうなりますか。
#
# <details><summary>答え</summary>
#
# この `Value` では、葉の `grad` に2回分が累積します（§4 で `a.grad` が 8 から 16 に）。途中のノードは毎回 0 に戻されます。
# PyTorch では、1回目の `backward()` が逆伝播用に保存したテンソル（ここでは `a*a` の因子 $a$、`2*a` の定数 2）を解放するので、2回目は `RuntimeError` になります。
# 保存するノードが1つもないグラフ（`a + a` や `a + 1` のような足し算・引き算だけ）なら2回目も通りますが、掛け算や割り算が1つでもあれば、相手が定数でもエラーです。
# 1回目に `retain_graph=True` を渡していれば、どのグラフでもここと同じく葉の `.grad` に累積します。
# どちらでも、学習の各ステップの前に勾配を 0 に戻す（`zero_grad`）必要があります。
#
# </details>
#
# **問5.** `gradient_check` がある点で `True` を返したら、局所勾配の実装は正しいと言えますか。
#
# <details><summary>答え</summary>
#
# 言えません。調べたのはその1点だけです。§3 の `sq_wrong` は $x = 0$ では正しい実装と同じ 0 を返すので合格しました。0 や 1 のような特別な点を避け、ばらばらな値の点をいくつか調べます。
# 逆に、微分できない点（`relu` の 0）では、正しい実装でも中心差分と合わずに FAIL になります。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 各問の解答セルの関数を書き、すぐ下のチェックセルを実行してください。チェックは、あなたの関数とこのエンジン（`backward()` や `value.topological_order`）を
# 同じ点で動かし、完全一致・近い・最大の差の表を出します（書く前は 未回答）。答えはプロジェクト自身の関数が計算しています。大事なのは、それを自分で導くことです。

# %%
import exercises

# %% [markdown]
# ### 練習問題 1：$\partial L/\partial a$ を手で求める
#
# 次の $L$ を `Value` で組むと、こうなります。
#
# ```python
# a, b = Value(a0), Value(b0)
# L = ((a * b).tanh() * a - 0.5).relu()
# L.backward()   # a.grad が ∂L/∂a
# ```
#
# $\partial L/\partial a$ を手で導き、関数 `grad_a(a, b)` に書いてください。
# 引数 `a`, `b` は普通の float、戻り値も float です（`math.tanh` を使ってよい）。
# チェックは、いくつかの点で `a.grad` と比べます。`relu` の折れ点（$\tanh(ab)\,a = 1/2$）のすぐそば（相対 $10^{-11}$）の点も含みます。
# そこでは、§3 で見たとおり中心差分が折れ点の両側を平均してしまい、正しい値のどちらにもなりません。
#
# <details><summary>ヒント 1</summary>
#
# $a$ はこの式の中で何か所に現れますか。§4 のとおり、同じノードから出る道の勾配は足し合わされます。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# `relu` が子に渡す局所勾配は、入力が正かどうかだけで決まる数です。`tanh` の局所勾配は、その出力の値で書けます。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「02-1」にあります。
#
# </details>

# %%
def grad_a(a, b):
    # ここに解答を書く: return dL/da for L = relu(tanh(a*b)*a - 0.5)
    raise NotImplementedError


# %%
exercises.check_02_grad_a(grad_a)

# %% [markdown]
# ### 練習問題 2：反復版のトポロジカルソート
#
# 関数 `my_topological_order(root)` を、**再帰を使わずに**（自分で管理するリストをスタックにして）書いてください。
# 戻り値は、`root` から子をたどって届くすべてのノードを、どのノードもその子より後に来るように、ちょうど1回ずつ並べたリストです。
# 並びが `value.topological_order` と同じである必要はありません。
# チェックは、2つの決まった式のグラフ（ノート 01 の `tanh(x1·w1 + x2·w2 + b)` と、同じノード `d` を3回使う `tanh(d)·d + d·c`）と、再帰上限の3倍の長さの鎖で比べます（ノート 01 の再帰版では、鎖の行が `RecursionError` になります）。
#
# <details><summary>ヒント 1</summary>
#
# 再帰版（ノート 01 のステップ4）が呼び出しスタックに覚えていることは何でしょうか。「このノードの子を、もう全部出し終えたか」です。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# スタックに積むものを、ノードだけでなく「ノードと、その子をすでに積んだかどうかの印」の組にしてみてください。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「02-2」にあります。
#
# </details>

# %%
def my_topological_order(root):
    # ここに解答を書く: children before parents, every node once, no recursion
    raise NotImplementedError


# %%
exercises.check_02_topological_order(my_topological_order)
