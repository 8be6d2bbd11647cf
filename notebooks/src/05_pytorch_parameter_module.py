# %% [markdown]
# # PyTorch の概念を組み立てる（1）：`requires_grad`、`Parameter`、`Module`、`no_grad`
#
# （目安：本編 約37分、練習問題 約24分）
#
# **対応する資料:** 「PyTorchの基本：Parameter、Module、Linear層の仕組み」の 1（Parameter と requires_grad）と
# 3（nn.Module と forward 関数の作法）。
#
# 資料が説明する PyTorch の仕組みを、PyTorch を使わずに **自分で組み立てます**。材料は数を1つだけ持つ小さな
# `Tensor` クラスで、第22章のスカラー自動微分エンジン `value.Value` と同じ考え方（計算グラフを記録し、`backward()` で勾配を流す）です。
# このノートで見られるもの：
#
# - **§1**：`requires_grad` の既定値（普通のテンソルは `False`）と、「どの演算を記録するか」の規則。
# - **§2**：`Parameter` と、属性に代入しただけでパラメータを登録する `Module.__setattr__` を組み立て、`parameters()` で列挙する。
#   資料の `MyModel` をそのまま動かし、`model(x)` と `model.forward(x)` の違いを確かめる。
# - **§3**：`no_grad` を組み立てる（入れ子と例外でも元に戻ること）。
# - **発展**（読み飛ばしてかまいません）：資料の「デバッグ中は `requires_grad=False`」を考える。そのための道具は `no_grad` であること。
#   凍結（ファインチューニング）は `requires_grad=False` の正しい使い道であること。
#   torch が入っていれば、同じことを本物の PyTorch で確かめる（入っていなければ1行の案内だけ）。
# - **まとめ、理解度チェックと練習問題**：`state_dict` と、凍結を守る `sgd_step`。
#
# 組み立てる部品は2つです。それぞれのセルの `raise NotImplementedError` を自分のコードに置き換えてから、すぐ下のチェックを実行してください。
# チェックは、あなたの答えと参考の実装をいくつかの点で比べ、「完全一致」「近い」「最大の差」を表にします。
# まだ書いていなければ、そのあとのセルは参考の実装で先へ進みます。

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

import importlib.util
from contextlib import contextmanager

import exercises

# %% [markdown]
# ## 1. `requires_grad`：記録するかどうか
#
# 資料は「`requires_grad=True (デフォルト)`」と書いていますが、PyTorch 2.x では **普通のテンソルの既定値は `False`** です。
# `torch.tensor(...)` や `torch.rand(...)` で作ったテンソルは記録されません。既定で `True` になるのは `nn.Parameter` で包んだテンソルです（§2）。
# 演算の結果を記録するかどうかは、次の規則で決まります。
#
# > 入力のどれか1つでも `requires_grad=True` なら、結果を記録する（結果も `requires_grad=True` になる）。ただし `no_grad` の中では記録しない。
#
# 次のセルの `Tensor` は、この規則だけを持つ最小のテンソルです（数は1つ、演算は `+` と `*` だけ）。`grad_enabled` は
# PyTorch の `torch.is_grad_enabled()` にあたるスイッチで、§3 で組み立てる `no_grad` がこれを切ります。`backward()` は
# `value.Value` と同じく、トポロジカル順の逆に局所勾配を掛けて足していきます。

# %%
class Tensor:
    """One number, and the graph it was computed in if the op was recorded."""
    grad_enabled = True                   # torch.is_grad_enabled(): False inside no_grad

    def __init__(self, data, requires_grad=False, children=(), local_grads=()):
        self.data, self.requires_grad, self.grad = float(data), requires_grad, None
        self._children, self._local_grads = children, local_grads

    def _result(self, data, other, local_grads):
        inputs = (self, other)
        if Tensor.grad_enabled and any(t.requires_grad for t in inputs):   # the rule above
            return Tensor(data, True, inputs, local_grads)
        return Tensor(data)               # not recorded: a plain tensor with no graph

    def __add__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        return self._result(self.data + other.data, other, (1.0, 1.0))

    def __mul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        return self._result(self.data * other.data, other, (other.data, self.data))

    __radd__, __rmul__ = __add__, __mul__

    def backward(self):
        if not self.requires_grad:        # PyTorch: "element 0 of tensors does not require grad"
            raise RuntimeError("記録されていない Tensor（requires_grad=False）は backward() できません")
        order, seen = [], set()

        def visit(t):
            if id(t) not in seen:
                seen.add(id(t))
                for child in t._children:
                    visit(child)
                order.append(t)

        visit(self)
        grads = {id(self): 1.0}
        for t in reversed(order):         # parents before children: each grad is complete when used
            for child, local in zip(t._children, t._local_grads):
                grads[id(child)] = grads.get(id(child), 0.0) + local * grads[id(t)]
            if not t._children and t.requires_grad:   # a leaf that asked for it: accumulate, as PyTorch
                t.grad = (t.grad or 0.0) + grads[id(t)]


x = Tensor(2.0)                           # plain data: requires_grad=False (PyTorch's default)
w = Tensor(0.5, requires_grad=True)
y = w * x + 1.0
y.backward()
print(f"y = w*x + 1 = {y.data}、y.requires_grad = {y.requires_grad}（w が True なので記録された）")
print(f"w.grad = {w.grad}（= x）、x.grad = {x.grad}（x は記録を求めていないので None）")
z = x * 3.0
print(f"z = x*3：z.requires_grad = {z.requires_grad}、グラフの子 {len(z._children)} 個（何も記録されない）")

# %% [markdown]
# `x` はただのデータで、`x * 3.0` は何も記録しません。`w` が加わった式だけがグラフになり、`backward()` で `w.grad` に勾配が入ります。
# PyTorch と同じく、勾配をまだ受け取っていないテンソルの `.grad` は `0` ではなく `None` です。
#
# ## 2. `Parameter` と `Module` を組み立てる
#
# 資料の言うとおり、`nn.Parameter` で包んだテンソルをモデルの属性にすると、それだけで `model.parameters()` に登録されます。
# `self.w = nn.Parameter(...)` と **代入しただけ** で登録されるのは、`nn.Module` が属性の代入 `__setattr__` を横取りしているからです（資料の言う「重みの自動管理」）。
# 登録はモジュールの仕事で、オプティマイザの仕事ではありません。`torch.optim.SGD(model.parameters(), lr=...)` のオプティマイザは、モジュールが登録済みのパラメータの一覧を受け取って更新するだけです。
#
# - `Parameter` は `requires_grad=True` が既定の `Tensor` です（下のセルの3行）。
# - `Module` は、パラメータの台帳 `_parameters` と子モジュールの台帳 `_modules`（どちらも名前 → 中身の辞書）を持ちます。
#   `parameters()` は自分のパラメータを代入した順に出し、続けて子モジュールの中へ入ります。`model(x)` は `__call__` を通り、
#   `forward` 関数を呼んでから、登録されたフックを実行します（資料の「裏側の下準備」のうち、本当に `__call__` がすること）。
#   PyTorch の `__call__` は、`forward` の **前に** 走るフック（`register_forward_pre_hook`：入力を書き換えることもできる）も実行します。
#   このノートの `Module` は、後のフック（`register_forward_hook`）だけを作ります。
#
# **組み立て 1：** `module_setattr(self, name, value)` を書いてください。`value` が `Parameter` なら `self._parameters[name]` に、
# `Module` なら `self._modules[name]` に入れ、どちらの場合も（それ以外でも）ふつうの属性として `object.__setattr__(self, name, value)` で保存します。
# 同じ名前に代入し直したら、台帳の中身も新しいものに置き換わります（辞書なので、そのまま代入すればそうなります）。
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「05-3」にあります（チェックが一致すると、その下にも折りたたんで表示されます）。
#
# </details>

# %%
class Parameter(Tensor):
    def __init__(self, data, requires_grad=True):   # nn.Parameter: requires_grad defaults to True
        super().__init__(data, requires_grad)


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", {})   # name -> Parameter, in the order set
        object.__setattr__(self, "_modules", {})      # name -> child Module
        object.__setattr__(self, "_hooks", [])

    def parameters(self):
        yield from self._parameters.values()
        for child in self._modules.values():
            yield from child.parameters()

    def register_forward_hook(self, hook):
        self._hooks.append(hook)

    def __call__(self, *args):            # model(x): forward, then the hooks
        out = self.forward(*args)
        for hook in self._hooks:
            hook(self, args, out)
        return out


def module_setattr(self, name, value):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
if not exercises.check_05_setattr(module_setattr, Module, Parameter, Tensor):
    module_setattr = exercises.module_setattr_05      # not written yet: go on with the reference
Module.__setattr__ = module_setattr

# %% [markdown]
# 資料の `MyModel` を、そのままこの `Module` で動かします（資料では `inputs` が定義されていないので、`Tensor(3.0)` にします）。

# %%
class MyModel(Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2


model = MyModel()
inputs = Tensor(3.0)
output = model(inputs)                    # ⭕ the way the notes call it
print(f"model(inputs) = {output.data}、model.forward(inputs) = {model.forward(inputs).data}")
print(f"パラメータ：{list(model.parameters())}、output.requires_grad = {output.requires_grad}")

# %% [markdown]
# `MyModel` はパラメータを1つも持たず、入力もただのデータなので、何も記録されません（`backward()` しようとすればエラーです）。
# パラメータを1つ持たせて、`model(x)` と `model.forward(x)` の違いを見ます。
#
# **予想してから確かめる：** `model.forward(x)` と直接呼んだとき、(a) 出力は記録されるでしょうか、(b) `w.grad` は `model(x)` と同じになるでしょうか、
# (c) フックは実行されるでしょうか。
#
# <details><summary>答え</summary>
#
# (a) 記録されます、(b) 同じです、(c) 実行されません。記録は §1 の規則どおり演算それぞれが行うので、呼び方には関係しません。
#
# </details>

# %%
class Scale(Module):
    def __init__(self, w):
        super().__init__()
        self.w = Parameter(w)             # registered by __setattr__
        self.note = "倍率"                 # not a Parameter: an ordinary attribute

    def forward(self, x):
        return self.w * x


model = Scale(3.0)
model.register_forward_hook(lambda module, args, out: print(f"    フックが実行された：出力 {out.data}"))
print("登録されたパラメータ：", dict(model._parameters).keys(), [p.data for p in model.parameters()])
for how in ("model(x)", "model.forward(x)"):
    model.w.grad = None
    print(f"{how}：")
    out = model(2.0) if how == "model(x)" else model.forward(2.0)
    out.backward()
    print(f"    出力 {out.data}、記録された {out.requires_grad}、w.grad = {model.w.grad}")

# %% [markdown]
# どちらの呼び方でも出力は記録され、`w.grad` は同じ 2.0 です。違うのはフックが実行されたかどうかだけです（PyTorch なら、前のフックも `model.forward(x)` では飛ばされます）。
# 資料は `model.forward(x)` を NG とする理由に「自動勾配用の記録登録や、評価/学習モードの切り替え」を挙げますが、
# 記録は演算それぞれの仕事、モードの切り替えは `model.train()` / `model.eval()` の仕事で、どちらも `__call__` はしません。
# PyTorch 2.x の `__call__` がするのは、`forward` の前のフック（forward pre-hook）と後のフック（forward hook）の実行、逆伝播のフック（`register_full_backward_hook`）の準備、`model.compile()` 後のコンパイル版への振り分け、JIT トレースでのスコープの記録です。
# それでも `model(x)` と呼ぶのが作法なのは、フックを使う道具（特徴の取り出し、プロファイラ）と `compile()` が正しく働くためです。
#
# ## 3. `no_grad` を組み立てる
#
# 推論や評価では勾配は要りません。記録をやめれば、計算グラフのためのメモリと時間が省けます。それが `with torch.no_grad():` です。
# `no_grad` はスイッチ `Tensor.grad_enabled` を切り、ブロックを出るときに **元の値に** 戻します（`True` に戻すのではない：
# `no_grad` の中でもう一度 `no_grad` に入って出たとき、外側はまだ `no_grad` の中です）。ブロックの中で例外が起きても戻します。
#
# **組み立て 2：** `contextlib.contextmanager` を使って `no_grad()` を書いてください。`yield` の前で元の値を取っておいてスイッチを切り、
# `yield` の後で戻します。例外のときも戻すには `try: yield` と `finally:` を使います。
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「05-4」にあります（チェックが一致すると、その下にも折りたたんで表示されます）。
#
# </details>

# %%
@contextmanager
def no_grad():
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
if not exercises.check_05_no_grad(no_grad, Tensor):
    no_grad = exercises.no_grad_05(Tensor)          # not written yet: go on with the reference

model = Scale(3.0)
with no_grad():
    out = model(2.0)
print(f"no_grad の中：出力 {out.data}（値は同じ）、記録された {out.requires_grad}、"
      f"w.requires_grad = {model.w.requires_grad}（フラグはそのまま）")
print(f"no_grad の外：記録された {model(2.0).requires_grad}")

# %% [markdown]
# `no_grad` は値を変えず、記録だけをやめます。パラメータの `requires_grad` には触れないので、ブロックを出ればそのまま学習に戻れます。


# %% [markdown]
# ## 発展：ノートの「デバッグ中は requires_grad=False」と、本物の PyTorch（読み飛ばしてよい）
#
# 本編で組み立てたものを、ノートの記述の1つと、本物の PyTorch に当てはめます。

# %% [markdown]
# ### 資料の「デバッグ中は `requires_grad=False`」
#
# 資料は `requires_grad=False` を指定する場面として、「まず順伝播の数式の動きを手動で追いたいだけ（デバッグ中）」と
# 「学習済みの重みを固定してファインチューニング（フリーズ）したいとき」を挙げます。後者は正しい使い道です。前者には2つの点で注意が要ります。
#
# - 順伝播の値は、記録してもしなくても同じです（§3 の出力）。数式の動きを追うだけなら、何も切り替える必要はありません。
#   記録のメモリや時間を省きたいなら、そのための道具は `no_grad` です。
# - パラメータの `requires_grad` を `False` にするのは、モデルを書き換えることです。戻し忘れると、そのパラメータは **何のエラーもなく** 学習しなくなります。
#
# 次のセルで確かめます。$y = wx + b$ を $y = 2x + 1$ に合わせる小さな学習で、2ステップ目で「デバッグのために」`w.requires_grad = False` にして、
# 戻し忘れた場合と、代わりに `no_grad` で順伝播を追った場合を比べます。更新は `p.data -= lr * p.grad` で、勾配のないパラメータは飛ばします（練習問題 2 の `sgd_step`）。

# %%
class Line(Module):
    def __init__(self):
        super().__init__()
        self.w, self.b = Parameter(0.0), Parameter(0.0)

    def forward(self, x):
        return self.w * x + self.b


def fit(debug, steps=60, lr=0.05):
    model, data = Line(), [(x, 2.0 * x + 1.0) for x in (-1.0, 0.0, 1.0, 2.0)]
    for step in range(steps):
        if step == 1 and debug == "requires_grad":
            model.w.requires_grad = False               # "only tracing the forward" ... and forgotten
        if step == 1 and debug == "no_grad":
            with no_grad():
                model(1.0)                              # trace the forward: nothing recorded
        for p in model.parameters():
            p.grad = None                               # zero_grad
        loss = sum((model(x) + (-t)) * (model(x) + (-t)) for x, t in data)
        loss.backward()
        for p in model.parameters():
            if p.requires_grad and p.grad is not None:
                p.data -= lr * p.grad
    return loss.data, model.w.data, model.b.data


for debug, label in ((None, "デバッグなし"), ("no_grad", "no_grad で順伝播を追った"),
                     ("requires_grad", "w.requires_grad=False のまま")):
    loss, w_end, b_end = fit(debug)
    print(f"最後の損失 {loss:9.2e}  w = {w_end:.4f}  b = {b_end:.4f}  （{label}）")

# %% [markdown]
# `no_grad` で順伝播を追っても学習は変わりません（1行目と2行目が同じ）。`requires_grad=False` を戻し忘れると、$w$ は2ステップ目の値のまま止まり、
# $b$ だけが残りの誤差を埋めようとして、損失は下がりきりません。エラーは出ないので、気づきにくい誤りです。
#
# 一方、**わざと** 止めるのが凍結（フリーズ）です。事前学習した重みの `requires_grad` を `False` にすると、その重みには勾配が届かず、
# オプティマイザも更新しません。残りのパラメータだけが新しいタスクに合わせて動きます。上の3行目は、意図せずに凍結したのと同じことです。

# %% [markdown]
# ### 本物の PyTorch では（任意）
#
# torch が入っている環境なら、次のセルは同じことを本物の `nn.Parameter` と `nn.Module` で確かめ、ここで組み立てたものと一致するかを表示します。
# このプロジェクトは PyTorch なしで動くので、入っていなければ1行の案内だけを表示します。

# %%
if importlib.util.find_spec("torch") is None:
    print("torch は入っていません（見るには .venv で pip install torch。このプロジェクト自体は torch なしで動きます）")
else:
    import torch

    class TorchScale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w, self.scale = torch.nn.Parameter(torch.tensor(3.0)), torch.tensor(5.0)

    tm, mine = TorchScale(), Scale(3.0)
    with torch.no_grad():
        recorded_in_no_grad = (tm.w * 2.0).requires_grad
    with no_grad():
        mine_in_no_grad = (mine.w * 2.0).requires_grad
    agree = {
        "普通のテンソルの requires_grad": (torch.tensor(1.0).requires_grad, Tensor(1.0).requires_grad),
        "Parameter の requires_grad": (tm.w.requires_grad, mine.w.requires_grad),
        "parameters() の値": ([p.item() for p in tm.parameters()], [p.data for p in mine.parameters()]),
        "no_grad の中で記録されるか": (recorded_in_no_grad, mine_in_no_grad),
    }
    for what, (theirs, ours) in agree.items():
        print(f"{what}：PyTorch {theirs}、ここで組み立てたもの {ours} → {'一致' if theirs == ours else '不一致'}")

# %% [markdown]
# ## まとめ
#
# | 資料の項目 | ここで組み立てて確かめたこと | 節 |
# |---|---|---|
# | `requires_grad` | 普通のテンソルの既定は `False`。入力のどれかが `True` なら結果を記録する（`no_grad` の中を除く） | §1 |
# | `nn.Parameter` と `model.parameters()` | `Parameter` は `requires_grad=True` が既定の `Tensor`。`Module.__setattr__` が属性の代入を横取りして台帳に登録する | §2 |
# | `model(x)` と `model.forward(x)` | どちらも記録される。違いは `__call__` の仕事（フック、`compile()` 後の振り分け）だけ | §2 |
# | `no_grad` | 記録のスイッチを切り、出るときに元の値へ戻す（入れ子でも例外でも） | §3 |
# | 「デバッグ中は `requires_grad=False`」 | 順伝播を追うだけなら何も切り替えなくてよい。記録を省くなら `no_grad`。フラグの戻し忘れは学習を黙って止める | 発展 |
# | 凍結 | `requires_grad=False` の正しい使い道。勾配が届かず、更新されない | 発展 |
#
# ## 理解度チェック
#
# **問1.** `t = torch.rand(3)` の `t.requires_grad` は何ですか。`w = nn.Parameter(t)` として `y = t * w` を計算すると、`y.requires_grad` はどうなりますか。
#
# <details><summary>答え</summary>
#
# `t.requires_grad` は `False`（普通のテンソルの既定値）です。`w` は `True` なので、入力のどれかが `True` という規則で `y` は記録され、`y.requires_grad` は `True` です。
#
# </details>
#
# **問2.** `self.w = nn.Parameter(...)` と書くだけで `model.parameters()` に現れるのはなぜですか。`self.w = torch.zeros(3)` ならどうですか。
#
# <details><summary>答え</summary>
#
# `nn.Module` が `__setattr__` で属性の代入を横取りし、値が `Parameter` なら台帳 `_parameters` に、`Module` なら `_modules` に入れるからです（§2 で組み立てたもの）。
# 普通のテンソルは台帳に入らないので、`parameters()` にもオプティマイザにも現れません（PyTorch では、動かしたいが学習しないテンソルは `register_buffer` で登録します）。
#
# </details>
#
# **問3.** 順伝播の途中の値を確かめたいとき、パラメータの `requires_grad` を `False` にするのと、`with torch.no_grad():` で囲むのとでは、何が違いますか。
#
# <details><summary>答え</summary>
#
# どちらでも順伝播の値は同じです。`no_grad` は記録のスイッチを一時的に切るだけで、出れば元に戻り、パラメータには触れません。
# `requires_grad=False` はパラメータそのものを書き換えるので、戻し忘れるとそのパラメータは学習しなくなります（発展の出力の3行目）。値を追うだけなら、どちらも要りません。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 解答セルの `raise NotImplementedError` を自分のコードに置き換えてから、その下のチェックセルを実行してください。
# チェックは、参考の実装と同じ値になるかをいくつかの点で比べて表にします（まだ解いていなければ 未回答）。
# 答えは参考の実装（`exercises.py`）を呼べば出せますが、自分で書くことが練習の目的です。
#
# ### 練習問題 1：`state_dict`
#
# PyTorch の `model.state_dict()` は、パラメータを「点でつないだ名前 → 値」の辞書にします。子モジュール `inner` の中の `w` は `"inner.w"`、
# 孫の中なら `"inner.inner.w"` です。§2 の `Module` について、この辞書（値は `p.data`）を返す `state_dict(module)` を書いてください。
# チェックは、入れ子なしと3段のモデルで、辞書の項目数と各名前の値を比べます。
#
# <details><summary>ヒント 1</summary>
#
# 自分の台帳 `module._parameters` の項目はそのままの名前で入れ、子の台帳 `module._modules` の各子には、名前の前に `"子の名前."` を付けます。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 子の中にも子がいるので、接頭辞 `prefix` を引数に持つ再帰で書くと短くなります：`state_dict(child, prefix + name + ".")`。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「05-1」にあります。
#
# </details>

# %%
def state_dict(module, prefix=""):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_05_state_dict(state_dict, Module, Parameter, Tensor)

# %% [markdown]
# ### 練習問題 2：凍結を守る `sgd_step`
#
# パラメータのリストと学習率を受け取り、各パラメータを `p.data -= lr * p.grad` で更新する `sgd_step(params, lr)` を書いてください。
# ただし、凍結したパラメータ（`requires_grad` が `False`）と、勾配をまだ受け取っていないパラメータ（`grad` が `None`）は更新しません。
# チェックは、凍結なし・1つ凍結・全部凍結の3通りで、更新後の値を比べます。
#
# <details><summary>ヒント 1</summary>
#
# PyTorch のオプティマイザも、`p.grad is None` のパラメータは飛ばします。凍結したパラメータには勾配が届かないので、ふつうはこの条件だけで飛ばされます。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# チェックは、凍結したのに `grad` が残っているパラメータも渡します（凍結する前の勾配）。`requires_grad` も見てください。
#
# </details>
#
# <details><summary>行き詰まったら</summary>
#
# 解答例は `notebooks/worked_solutions.md` の「05-2」にあります。
#
# </details>

# %%
def sgd_step(params, lr):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_05_sgd_step(sgd_step, Parameter)
