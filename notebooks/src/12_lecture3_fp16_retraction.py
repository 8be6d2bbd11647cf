# %% [markdown]
# # 第3回 プラネタリウムの建設（2）：float16 の正規化と、球面から外れる重み
#
# （目安：本編 約37分、練習問題 約22分）
#
# **対応する講義:** 幾何学講義 第3回の「実装ノート」のコード例 `03_fp16_instability_demo.py`（数値安定性）と `03_normalized_linear.py`（正規化線形層）、
# 本文の「設計の徹底が本質」。ノート 11 の続きです（ノート 11 の「接空間」を使います）。
#
# このノートで見るもの：
#
# 1. **`03_fp16_instability_demo`**：講義のスクリプトが PyTorch 2.x で実際に表示する値を NumPy で再現し、コメントとの食い違いを確かめる。
# 2. **`03_normalized_linear`**：初期化で1回正規化した重みは、学習で球面から外れること。毎ステップのリトラクションが要ること。
# 3. **発展**（float16 の鑑識：$2^{-23}$ になる理由と、入力の大きさごとの壊れ方。torch が入っていれば、講義のスクリプトを本物の PyTorch で実行し、自分の Adam を `torch.optim.Adam` と比べる）。発展は読み飛ばしてかまいません。
# 4. まとめ、理解度チェック、練習問題。
#
# §1 には「予想してから確かめる」問いがあります。答えを開く前に、次のセルが何を表示するか予想してみてください。

# %%
import sys
from pathlib import Path

ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists()), None)
if ROOT is None:  # the kernel was started outside the repository: say so, not a bare StopIteration
    raise FileNotFoundError(f"value.py が {Path.cwd()} にもその上のフォルダにもありません。"
                            "Jupyter はこのリポジトリの中（ルートか notebooks/）で起動してください")
for path in (ROOT, ROOT / "notebooks"):  # the project's modules at the root, helpers in notebooks/
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import exercises  # notebooks/exercises.py: the checks of the build steps
import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np

from sphere import (
    cosine_similarity_np,
    l2_normalize_np,
    l2_normalize_np_backward,
    normalize_matrix,
    retract,
)
from utils import linear_np, linear_np_backward

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=6, suppress=False)

# %% [markdown]
# ## 1. 数値安定性：float16（コード例 `03_fp16_instability_demo.py`）
#
# 講義のスクリプトは、float16 のごく小さいベクトルとゼロベクトルを正規化して、何が起きるかを表示します。
# ここには PyTorch がないので、PyTorch 2.x（CPU）の計算を NumPy で一つずつ再現します。押さえる点は3つです。
#
# - float16 の最小の正規化数は $2^{-14} \approx 6.1\times10^{-5}$、最小の非正規化数は $2^{-24} \approx 5.96\times10^{-8}$ です。
#   講義の `torch.finfo(torch.float16).tiny / 1024` は $2^{-14}/2^{10} = 2^{-24}$、float16 で表せる **最小の正の数そのもの** です。
# - 混合精度学習でよく使われる bfloat16 は、指数部が float32 と同じ 8 ビットなので、最小の正規化数も float32 と同じ約 $1.2\times10^{-38}$ です。
#   このくらい小さいベクトルでもアンダーフローしない代わりに、仮数部が 7 ビット（10 進で2〜3桁）しかありません。
# - `x.norm()` は float16 の値を **float32 で累積** し、二乗・和・平方根を float32 で計算してから、結果だけを float16 に丸めます。下の `norm_like_torch` がこれを真似ます。
# - テンソルの表示は小数点以下 4 桁です（PyTorch の既定 `precision=4`）。固定小数点なら `0.5000`、指数表記なら仮数の小数点以下 4 桁で `5.9605e-08` です。
#   下の `torch_str` が同じ規則で書式化します。f 文字列に **0 次元** テンソルを入れると、`Tensor.__format__` が `.item()` を使うので Python の float として表示されます。
#
# **予想してから確かめる：** 講義のスクリプトは、$2^{-24}$ を3つ並べたベクトルのノルムを表示します。コメントは「非常に小さい、または0」です。
# 実際には何が表示されるでしょうか。(a) 0、(b) 本当の値 $\sqrt{3}\cdot 2^{-24} \approx 1.03\times10^{-7}$、(c) そのどちらでもない値。
#
# <details><summary>答え</summary>
#
# (c) です。表示は `ノルム: 1.1920928955078125e-07`、つまり $2^{-23}$ で、本当の値より 15.5% 大きい値です。
# そのため `eps` なしの正規化は NaN にならず、長さ 0.866 の、単位ベクトルでないベクトル `[0.5, 0.5, 0.5]` を返します（次のセルの出力。理由はその後の表とセルで）。
#
# </details>

# %%
def torch_str(a):
    """str(t) for a float16 / float32 tensor as PyTorch 2.x prints it: 4 digits, its rule for scientific notation."""
    a = np.asarray(a)
    v = a.astype(np.float64).ravel()
    nz = np.abs(v[np.isfinite(v) & (v != 0)])
    int_mode = bool(np.all(nz == np.floor(nz)))
    sci = nz.size > 0 and (nz.max() / nz.min() > 1000 or nz.max() > 1e8 or (not int_mode and nz.min() < 1e-4))
    if sci:
        items = [f"{x:.4e}" for x in v]
    elif int_mode:
        items = [f"{x:.0f}" + ("" if np.isnan(x) or np.isinf(x) else ".") for x in v]
    else:
        items = [f"{x:.4f}" for x in v]
    width = max(len(s) for s in items)
    body = ", ".join(s.rjust(width) for s in items)
    dtype = "" if a.dtype == np.float32 else f", dtype=torch.{a.dtype}"  # float32 is the default dtype
    return f"tensor({body if a.ndim == 0 else '[' + body + ']'}{dtype})"


def norm_like_torch(x16):
    """x.norm() of a float16 tensor on CPU: squares, sum and sqrt in float32, the result rounded to float16."""
    x32 = x16.astype(np.float32)
    return np.sqrt(np.sum(x32 * x32, dtype=np.float32)).astype(np.float16)


# the lecture's script, line by line
very_small = float(np.finfo(np.float16).tiny) / 1024                 # a Python float, 2^-24
small_fp16 = np.full(3, very_small, dtype=np.float32).astype(np.float16)
norm_fp16 = norm_like_torch(small_fp16)
unsafe = small_fp16 / norm_fp16
zero_fp16 = np.zeros(3, dtype=np.float16)
with np.errstate(invalid="ignore"):
    zero_by_zero = zero_fp16 / norm_like_torch(zero_fp16)

print("--- 講義のスクリプトが PyTorch 2.x で表示するもの ---")
print(f"入力 (float16): {torch_str(small_fp16)}")
print(f"ノルム: {float(norm_fp16)}")                      # f-string of a 0-d tensor: formatted as a Python float
print(f"Unsafe (epsなし): {torch_str(unsafe)}")
print(f"ゼロ入力 (float16): {torch_str(zero_fp16)}, ノルム: {float(norm_like_torch(zero_fp16))}")
print(f"ゼロをepsなしで割る: {torch_str(zero_by_zero)}")
print("--- このあと F.normalize(small_fp16.float(), eps=1e-12) が IndexError を出して、スクリプトは止まる ---")
print()
print("print(small_fp16.norm()) なら:", torch_str(norm_fp16), f"  （2^-23 と等しい: {float(norm_fp16) == 2.0 ** -23}）")
true_norm = np.sqrt(3.0) * 2.0 ** -24
print(f"本当のノルム sqrt(3) * 2^-24 = {true_norm:.4e} と比べると: {float(norm_fp16) / true_norm:.4f} 倍、"
      f"{float(norm_fp16) / true_norm - 1:.1%} 大きすぎる")
print("NumPy の配列で: x / norm =", unsafe, f"、長さ {np.linalg.norm(unsafe.astype(np.float64)):.3f} のベクトル")

# %% [markdown]
# 講義のスクリプトのコメントと、実際に起きることを並べます（左の列は講義のコードからの引用）。
#
# | 講義のコードのコメント | 実際 |
# |---|---|
# | `# min positive normal ≈ 6e-5 なので、それより十分小さい値は 0 になりやすい` | $2^{-14}$ より小さい値は 0 ではなく **非正規化数** になり、精度が落ちるだけです。0 に丸められるのは $2^{-25}$ 以下です。 |
# | `# → 0 になりうる`（`.half()` の行） | $2^{-24}$ は float16 の最小の非正規化数で、**ちょうど表せます**。入力は 0 になりません。 |
# | `# 非常に小さい、または0`（ノルムの行） | 0 ではなく $2^{-23}$ で、本当の値 $\sqrt{3}\cdot 2^{-24}$ より 15.5% 大きい値です。f 文字列では Python の float として 1.1920928955078125e-07 と表示されます。 |
# | `# eps なしで正規化すると不安定（ノルムが 0 に丸められると NaN/Inf）` | ノルムは 0 にならないので NaN も inf も出ません。出てくるのは長さ 0.866 の [0.5, 0.5, 0.5] で、何の警告もなく球面から外れます。NaN より気づきにくい壊れ方です。 |
# | `# NaN が出る`（ゼロ割り） | そのとおり：$0/0$ は NaN です。 |
# | `# 安全策：ノルム計算をfloat32で行い、epsで保護して正規化` | 考え方は正しいのですが、その行 `F.normalize(small_fp16.float(), eps=1e-12)` は **IndexError** で止まります。`F.normalize` の既定は `dim=1` で、1次元テンソルには次元 0 しかないからです。スクリプトはここで終わり、最後の勾配の例は実行されません。`dim=-1` を渡せば、各成分 0.5771 が返ります。 |
#
# $2^{-23}$ になる理由（float32 で累積して float16 に丸める）と、どの大きさの入力なら float16 で正しく正規化できるかは、§2 の後の「発展」で数を追います。急ぐときは読み飛ばしてかまいません。
# %% [markdown]
# ## 2. nGPT 風の設計：正規化線形層（コード例 `03_normalized_linear.py`）
#
# 講義の `NormalizedLinear` は、`__init__` で重みの行を **1回だけ** 正規化し、`forward` では普通の線形層の **出力** を正規化します。
# `NormalizedResidual` は「$x + \alpha\,f(x)$ を正規化して球面に戻す」でした（ノート 13 §1）。講義の「nGPT風の設計：球面制約の維持」の節のコードで、
# 「正規化」と「球面制約」の違い（LayerNorm と球面制約の違い：LayerNorm は統計量をそろえるだけで、その後の線形層で長さが変わる）を、コードの形にしたものです。
# 講義はこの節の最後で「概念と実装のギャップ」にも触れます。下で見るように、初期化で1回正規化するだけでは、学習中に球面制約は保たれません。クラスの代わりに関数で書きます（`nn.Module` との対応は、PyTorch の概念のノート 05、06）。
# 部品はすべて `sphere.py` と `utils.py` のものです。

# %%
def init_normalized_linear(w):
    """The lecture's __init__: the rows of the weight become unit vectors, once (normalize_matrix, axis=1)."""
    return normalize_matrix(w, axis=1)


def normalized_linear(x, w):
    """The lecture's forward: a plain linear layer, whose output is put back on the sphere."""
    return l2_normalize_np(linear_np(x, w))


def normalized_residual(x, module, alpha=0.1):
    """The lecture's NormalizedResidual: x <- Normalize(x + alpha * module(x)) (the normalization is the retraction)."""
    return retract(x + alpha * module(x))


d = 64
rng = np.random.default_rng(3)
W = init_normalized_linear(rng.normal(0.0, 0.08, (d, d)))
x = l2_normalize_np(rng.standard_normal((1000, d)))      # 1000 unit inputs
raw = linear_np(x, W)
out = normalized_linear(x, W)
print("W の行は単位ベクトル: ノルム", np.linalg.norm(W, axis=1)[:4], "...")
print(f"出力を正規化する前: 成分はコサインで [{raw.min():.3f}, {raw.max():.3f}] の中、"
      f"行のノルム {np.linalg.norm(raw, axis=1).min():.3f} 〜 {np.linalg.norm(raw, axis=1).max():.3f}")
print(f"normalized_linear の出力のノルム: {np.linalg.norm(out, axis=1).min():.15f} 〜 "
      f"{np.linalg.norm(out, axis=1).max():.15f}")

# %% [markdown]
# ### 重みは学習で球面から外れる：毎ステップのリトラクション
#
# 講義の `NormalizedLinear` が重みを正規化するのは初期化のときだけです。学習で重みを更新すると、行のノルムは 1 から離れていきます。
# 講義自身が「設計の徹底が本質」で述べているとおりです：
#
# > 行列積や加算などの演算を行うと、結果は一般に球面から外れる。nGPTは、更新で球面から外れたら正規化で戻すことで、表現が常に球面上にあることを保証する。
#
# これは重みの更新にも当てはまります。入力 $x \in \mathbb{S}^{15}$ から出力の向き $y \in \mathbb{S}^{7}$ を当てる小さな問題（損失は $1 - \cos(\hat y, y)$ の平均）で、
# 講義の層の重み $W$（8 行 × 16 列）を 300 ステップ学習します。
#
# - **講義のまま**：初期化で正規化し、あとは Adam（ノート 09 の自分の `adam_update`。`microgpt.adam_step` と同じ更新）で更新するだけ。
# - **毎ステップ リトラクション**：各ステップの後で行を正規化し直す（`normalize_matrix(W, axis=1)`。microgpt が球面モードで毎ステップ呼ぶ `microgpt.retract` と同じ操作）。
#
# 同じことを素朴な SGD（学習率 1）でも行います。
#
# Adam は、ノート 09 で自分で書いた `adam_update` を使います。その上に、毎ステップのリトラクションを自分で足します。
#
# **組み立て（1）：ノート 09 の Adam を持ってくる。** ノート 09 の `def adam_update(...)` のセルを、下のセルの `adam_update = None` の行と置き換えて貼り付けてください。
# 次のセルがノート 09 と同じチェックをもう一度行います（貼らなければ、参照の実装で先へ進みます）。

# %%
adam_update = None   # ここにノート 09 の adam_update を貼る (paste your adam_update from notebook 09)

# %%
if adam_update is None or not exercises.check_09_adam(adam_update):
    adam_update = exercises.adam_update_09        # the rest goes on with the reference
    print("この先は参照の adam_update で続けます")

# %% [markdown]
# **組み立て（2）：Adam の1歩＋リトラクション。** `adam_retract_step(w, grad, m, v, t, lr)` を書いてください。`w` は重み行列（出力の数 × 入力の数）、`grad` は同じ形の勾配、
# `m` と `v` は `w.size` 個の数の1本の配列です。`adam_update` で1歩進めてから（`m`, `v` はその中でその場で書き換わる）、**各行を長さ 1 に戻した** 新しい重みを返します。
# チェックは、球面上から始めた行と長さ 3 から始めた行、勾配 0 の行、$10^{-12}$ から 5000 までの勾配で、何ステップか進めた `W`, `m`, `v` を
# `microgpt.adam_step` と `sphere.normalize_matrix` の組み合わせと比べます（`normalize_matrix` を呼べば済みますが、ここでは割り算を自分で書いてください）。
#
# <details><summary>ヒント 1</summary>
#
# `adam_update` は1本の配列を受け取るので、`w.ravel()` と `grad.ravel()` を渡し、返ってきた配列を `.reshape(w.shape)` で行列に戻します。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# 行ごとの長さは `np.linalg.norm(w_new, axis=1, keepdims=True)`（形は 行の数 × 1）。どの軸に沿って割るかで、行と列のどちらが単位ベクトルになるかが決まります。
# 解答例は `notebooks/worked_solutions.md` の「12-1」にあります。
#
# </details>

# %%
def adam_retract_step(w, grad, m, v, t, lr):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
if not exercises.check_12_adam_retract(adam_retract_step):   # not written yet, or not yet right:
    adam_retract_step = exercises.adam_retract_step_12       # the rest goes on with the reference
    print("この先は参照の adam_retract_step で続けます")

# %% [markdown]
# 自分の `adam_update` と `adam_retract_step` で、4通りを学習します。学習率は microgpt の `train` と同じく、最後のステップで 0 になるよう線形に下げます。

# %%
d_in, d_out, n_data, train_steps = 16, 8, 256, 300
rng = np.random.default_rng(11)
W_teacher = normalize_matrix(rng.standard_normal((d_out, d_in)), axis=1)
X = l2_normalize_np(rng.standard_normal((n_data, d_in)))
Y = l2_normalize_np(linear_np(X, W_teacher) + 0.3 * rng.standard_normal((n_data, d_out)))   # target directions
W_init = init_normalized_linear(rng.normal(0.0, 0.08, (d_out, d_in)))


def cosine_loss_and_grad(w):
    """mean(1 - cos(normalized_linear(X, w), Y)) and its gradient with respect to w."""
    z = linear_np(X, w)
    loss = np.mean(1.0 - np.sum(l2_normalize_np(z) * Y, axis=1))
    dz = l2_normalize_np_backward(-Y / n_data, z)
    return loss, linear_np_backward(dz, X, w)[1]


_, g0 = cosine_loss_and_grad(W_init)
print(f"初期化の時点の |cos(勾配の行, 重みの行)| = {np.round(np.abs(cosine_similarity_np(g0, W_init)), 2)} "
      f"（0 なら接ベクトル）")
drift_runs = {}
for opt in ("Adam", "SGD"):
    for retract_each_step in (False, True):
        w = W_init.copy()
        m, v = np.zeros(w.size), np.zeros(w.size)
        row_norms = [np.linalg.norm(w, axis=1)]
        for step in range(train_steps):
            loss, grad = cosine_loss_and_grad(w)
            lr_t = 0.05 * (1 - step / train_steps)          # decayed linearly to 0, as in microgpt
            if opt == "Adam" and retract_each_step:          # your step of the cell above
                w = adam_retract_step(w, grad, m, v, step + 1, lr_t)
            elif opt == "Adam":                              # your Adam of notebook 09, nothing more
                w = adam_update(w.ravel(), grad.ravel(), m, v, step + 1, lr_t).reshape(w.shape)
            else:
                w = w - 1.0 * grad
                if retract_each_step:
                    w = normalize_matrix(w, axis=1)
            row_norms.append(np.linalg.norm(w, axis=1))
        drift_runs[opt, retract_each_step] = np.array(row_norms)
        print(f"{opt:4s} {'毎ステップ リトラクション' if retract_each_step else '初期化で1回だけ正規化':14s}: "
              f"最終の損失 {cosine_loss_and_grad(w)[0]:.4f}、行のノルム {row_norms[-1].min():.3f} 〜 "
              f"{row_norms[-1].max():.3f}")

fig, axes = plt.subplots(1, 2, figsize=(12, 3.8), sharey=True)
for ax, opt, lr_text in zip(axes, ("Adam", "SGD"), ("lr 0.05", "lr 1.0")):
    for retract_each_step, color, label in ((False, "tab:blue", "講義のまま（初期化で1回だけ正規化）"),
                                            (True, "tab:orange", "毎ステップ リトラクション")):
        rn = drift_runs[opt, retract_each_step]
        ax.plot(rn, color=color, lw=1, alpha=0.8)
        ax.plot([], [], color=color, label=label)          # one legend entry per variant (8 rows each)
    ax.axhline(1.0, color="k", ls=":", lw=1)
    ax.set(xlabel="ステップ", title=f"{opt}（{lr_text}）：重み8行それぞれのノルム")
    ax.legend(fontsize=8, loc="upper left")
axes[0].set_ylabel("行のノルム ||w_i||")
plt.tight_layout()
plt.show()

# %% [markdown]
# 講義のままの層では、Adam でも SGD でも行のノルムが 1 から散らばります（出力の「初期化で1回だけ正規化」の2行）。毎ステップ リトラクションすると、すべての行が厳密に 1 のままで、
# 損失はほとんど変わりません（「毎ステップ リトラクション」の2行）。ずれる理由は3つあります。
#
# 1. 出力を正規化していても、損失は **行ごとの** ノルムに依存します。ある行だけ伸ばすと出力の向きが変わるからです。だから勾配は行の接ベクトルになりません（出力の1行目の |cos| が 0 でない）。
# 2. 勾配が接ベクトルでも、接平面内の1歩は長さを $\sqrt{1 + \eta^2\lVert g\rVert^2}$ 倍にします（ノート 14 §2）。
# 3. Adam は座標ごとに勾配を割るので、接ベクトルの勾配からも接ベクトルでない更新が出てきます。
#
# つまり「球面上の重み」は、初期化ではなく **毎ステップのリトラクション** で保たれる性質です。microgpt の `train` は球面モードで、Adam の各ステップの後に
# `microgpt.retract(params, cfg)` を呼び、すべての重み行列を埋め込み次元の方向に正規化し直しています。


# %% [markdown]
# ## 発展：float16 の鑑識（読み飛ばしてよい）
#
# §1 の講義のスクリプトで、ノルムが 0 にも本当の値にもならず $2^{-23}$ になる理由を、数で追います。その後、入力の大きさを振って、3通りの正規化がどこで壊れるかを図にします。

# %%
x32 = small_fp16.astype(np.float32)
norm32 = np.sqrt(np.sum(x32 * x32, dtype=np.float32))
print(f"本当のノルム sqrt(3) * 2^-24    = {np.sqrt(3.0) * 2.0 ** -24:.4e}")
print(f"float32 のノルム（丸める前）     = {float(norm32):.4e}  = {float(norm32) / 2.0 ** -24:.3f} x 2^-24")
print(f"float16 に丸めた値               = {float(norm_fp16):.4e}  = {float(norm_fp16) / 2.0 ** -24:.0f} x 2^-24 "
      f"（この大きさでの float16 の刻みは {float(np.spacing(np.float16(0))):.4e} = 2^-24）")
units = float(norm32) / 2.0 ** -24
print(f"両隣の float16 の数: {np.floor(units):.0f} x 2^-24 と {np.ceil(units):.0f} x 2^-24、距離は "
      f"{units - np.floor(units):.3f} と {np.ceil(units) - units:.3f}（2^-24 単位）：最近接への丸めは "
      f"{float(norm_fp16) / 2.0 ** -24:.0f} x 2^-24 を選ぶ")
print(f"だから x / norm = 2^-24 / 2^-23 = {unsafe}、長さ sqrt(3)/2 = {np.sqrt(3) / 2:.3f}")
print()
print("ごく小さい数の float16 への丸め:", {f"2^{e}": float(np.float16(2.0 ** e)) for e in (-14, -24, -25)},
      "| 1.5 * 2^-25 ->", float(np.float16(1.5 * 2.0 ** -25)))
with np.errstate(divide="ignore"):
    naive = np.sqrt(np.sum(small_fp16 * small_fp16))           # squares in float16: 2^-48 underflows to 0
    print("float16 だけで計算したノルム（二乗も float16。素の NumPy の float16）:", naive,
          "-> x / norm =", small_fp16 / naive)
safe32 = l2_normalize_np(small_fp16.astype(np.float32), axis=-1, eps=1e-12)   # F.normalize(..., dim=-1, eps=1e-12)
print("F.normalize(small_fp16.float(), dim=-1, eps=1e-12) の結果:", torch_str(safe32), "-> .half():",
      torch_str(safe32.astype(np.float16)))
print("ゼロベクトルに安全策:", torch_str(l2_normalize_np(zero_fp16.astype(np.float32)).astype(np.float16)),
      "| eps = 1e-12 を float16 にすると", float(np.float16(1e-12)), "（eps が守るのは float32 の中だけ）")

# %% [markdown]
# float32 で計算したノルムは $2^{-24}$ の 1.732 倍です（出力の2行目）。float16 はこの大きさでは $2^{-24}$ の整数倍しか表せないので、1.732 倍の両隣の 1 倍と 2 倍のうち、
# 近いほうの 2 倍、つまり $2^{-23}$ に丸められます（「両隣の float16 の数」の行）。割り算 $2^{-24}/2^{-23}$ はちょうど 0.5 です。
# もし float16 の中だけで二乗していたら、$2^{-48}$ は 0 にアンダーフローして `inf` が出ていたはずで（「float16 だけで計算したノルム」の行）、講義のコメントが想定していたのはおそらくこちらです。
# PyTorch は float32 で累積するのでアンダーフローは起きず、代わりに **丸めの粗さ** が残ります。
#
# 安全策の中身は「ノルムを float32 で計算し、$x / \max(\lVert x\rVert, \epsilon)$ とクランプしてから float16 に戻す」です。ε = 1e-12 は float16 では 0 になってしまうので（最後の行）、
# ε が効くのは float32 の中だけです。
#
# どの大きさの入力なら正しく正規化できるのかを、入力の大きさ $s$ を $10^{-9}$ から $10^{6}$ まで振って調べます（$x = s\,[1, 2, 3]/\sqrt{14}$ を float16 に丸めたもの）。
# 出力のノルムは 1 であるべきです。

# %%
scales = np.logspace(-9, 6, 400)
direction = np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)
naive, like_torch, safe_norms, zero_in, inf_in = [], [], [], [], []
with np.errstate(all="ignore"):
    for s in scales:
        v16 = (s * direction).astype(np.float16)
        zero_in.append(not v16.any())
        inf_in.append(not np.isfinite(v16).all())
        n16 = np.sqrt(np.sum(v16 * v16))                                   # everything in float16
        naive.append(np.linalg.norm((v16 / n16).astype(np.float64)))
        like_torch.append(np.linalg.norm((v16 / norm_like_torch(v16)).astype(np.float64)))
        safe_norms.append(np.linalg.norm(l2_normalize_np(v16.astype(np.float32)).astype(np.float16).astype(np.float64)))
naive, like_torch, safe_norms = np.array(naive), np.array(like_torch), np.array(safe_norms)
zero_in, inf_in = np.array(zero_in), np.array(inf_in)
in_range = ~zero_in & ~inf_in
off = in_range & (np.abs(like_torch - 1) > 0.01)
print(f"入力が float16 で表せる範囲: s が {scales[in_range].min():.1e} 〜 {scales[in_range].max():.1e}。"
      f"そこで安全策の |y| と 1 の差は最大 {np.abs(safe_norms[in_range] - 1).max():.1e}")
print(f"PyTorch 風の x / x.norm(): |y| が 1% 以上ずれるのは s が {scales[off & (scales < 1)].max():.1e} まで "
      f"（float16 の最小の正規化数は {float(np.finfo(np.float16).tiny):.1e}）と、"
      f"{scales[off & (scales > 1)].min():.1e} から（ノルムそのものが 65504 を超える）")
print(f"float16 だけ: s が {scales[in_range & ~np.isfinite(naive)].max():.1e} までは inf か NaN、"
      f"{scales[in_range & (np.abs(naive - 1) > 0.01) & (scales < 1)].max():.1e} までは |y| が 1% 以上ずれ、"
      f"{scales[in_range & (naive == 0)].min():.1e} からは 0")

fig, ax = plt.subplots(figsize=(11, 4.4))
ok = np.isfinite(naive)
ax.semilogx(scales[ok], naive[ok], ".", ms=3, label="float16 だけで計算（二乗も float16）")
ax.semilogx(scales[~ok], np.full((~ok).sum(), 1.6), "x", color="tab:red", ms=4,
            label="float16 だけで計算：結果が inf か NaN（高さ 1.6 に表示）")
ax.semilogx(scales, like_torch, "-", color="tab:purple", lw=1.2,
            label="PyTorch の x / x.norm()（float32 で累積し、ノルムを float16 に丸める）")
ax.semilogx(scales, safe_norms, "-", color="tab:green", lw=2, alpha=0.6,
            label="安全策：ノルムを float32 で計算し ε でクランプ、最後に float16")
ax.axvspan(scales[0], scales[zero_in].max(), color="0.9", label="入力が float16 で 0 に丸められる／inf に溢れる")
ax.axvspan(scales[inf_in].min(), scales[-1], color="0.9")
ax.axvline(float(np.finfo(np.float16).tiny), color="0.5", ls=":", lw=1)
ax.text(float(np.finfo(np.float16).tiny) * 1.3, 1.72, "float16 の最小の正規化数 $2^{-14}$", fontsize=8, color="0.3")
ax.set(xlabel="入力の大きさ s = ||x||", ylabel="正規化した結果のノルム", ylim=(-0.1, 1.8),
       title="float16 での L2 正規化：アンダーフロー（左）とオーバーフロー（右）")
ax.legend(fontsize=8, loc="lower center")
plt.tight_layout()
plt.show()

# %% [markdown]
# 3通りの計算を、図の左から右へ読みます。境目の $s$ は、図の上に表示した3行の出力にあります。
#
# - **float16 だけで計算**：小さい側では二乗がアンダーフローしてノルムが 0 になり、結果は `inf` か `NaN` です。その少し上では二乗が非正規化数の範囲に入って粗く、
#   ノルムが 1 からずれます。大きい側では二乗が float16 の最大値 65504 を超えて `inf` になり、出力が 0 に潰れます。
# - **PyTorch の `x / x.norm()`**：float32 で累積するので、二乗のアンダーフローもオーバーフローも起きません。1 からずれるのは、ノルムそのものが float16 の
#   非正規化数の範囲に落ちて粗く丸められるときと、右端でノルムが 65504 を超えるときだけです。講義の例（長さ 0.866）は、左の範囲の1点です。
# - **安全策**：入力が float16 で表せる範囲ではどこでも 1 です。左の灰色の範囲では入力そのものが 0 に丸められ、安全策は NaN ではなくゼロベクトルを返します。
#   右の灰色の範囲では入力の成分がすでに `inf` で、どんな正規化でも救えません。

# %% [markdown]
# ### 本物の PyTorch で（任意）
#
# torch が入っている環境なら、次のセルは講義の `03_fp16_instability_demo.py` の行をそのまま本物の PyTorch で実行して §1 の `torch_str` の再現と並べ、
# §2 で使った自分の `adam_update` と `adam_retract_step` を `torch.optim.Adam`（β1 = 0.85、β2 = 0.99、ε = 1e-8：microgpt と同じ）と比べます。
# このプロジェクトは PyTorch なしで動くので、入っていなければ1行の案内だけを表示します。

# %%
import importlib.util

if importlib.util.find_spec("torch") is None:
    print("torch は入っていません（見るには .venv で pip install torch。このプロジェクト自体は torch なしで動きます）")
else:
    import torch
    import torch.nn.functional as F

    very_small_t = torch.finfo(torch.float16).tiny / 1024                # the lecture's lines, verbatim
    small_t = torch.full((3,), very_small_t, dtype=torch.float32).half()
    zero_t = torch.zeros(3, dtype=torch.float16)
    lines = {"入力 (float16)": (f"{small_t}", torch_str(small_fp16)),
             "ノルム": (f"{small_t.norm()}", f"{float(norm_fp16)}"),
             "Unsafe (epsなし)": (f"{small_t / small_t.norm()}", torch_str(unsafe)),
             "ゼロをepsなしで割る": (f"{zero_t / zero_t.norm()}", torch_str(zero_by_zero))}
    for label, (real, reproduced) in lines.items():
        print(f"{label}: {real}  → §1 の再現と{'同じ' if real == reproduced else '違う：' + reproduced}")
    try:
        F.normalize(small_t.float(), eps=1e-12)
    except IndexError as error:
        print(f"安全策の行 F.normalize(small_fp16.float(), eps=1e-12)：IndexError（{error}）")

    w_t = torch.nn.Parameter(torch.tensor(W_init, dtype=torch.float64))
    adam_t = torch.optim.Adam([w_t], lr=0.05, betas=(0.85, 0.99), eps=1e-8)
    w_mine, m_mine, v_mine = W_init.copy(), np.zeros(W_init.size), np.zeros(W_init.size)
    for step in range(1, 101):                                         # no lr decay: plain Adam
        _, grad = cosine_loss_and_grad(w_mine)
        w_t.grad = torch.tensor(grad)
        adam_t.step()
        with torch.no_grad():
            w_t /= w_t.norm(dim=1, keepdim=True)                      # the retraction, after the step
        w_mine = adam_retract_step(w_mine, grad, m_mine, v_mine, step, 0.05)
    print(f"自分の adam_retract_step と torch.optim.Adam＋行の正規化（100 ステップ）：W の差の最大 "
          f"{np.abs(w_t.detach().numpy() - w_mine).max():.1e}、m の差の最大 "
          f"{np.abs(adam_t.state[w_t]['exp_avg'].numpy().ravel() - m_mine).max():.1e}")


# %% [markdown]
# ## まとめ
#
# | コード例 | 講義のコードが実際に表示するもの | 確かめたこと | 節 |
# |---|---|---|---|
# | `03_fp16_instability_demo` | ノルム $2^{-23}$、正規化の結果 [0.5, 0.5, 0.5]、「安全策」の行で IndexError | float32 で累積して float16 に丸めるので、0 ではなく粗い値になる。NaN ではなく、長さ 0.866 のベクトルが黙って返る。安全策は float32 で計算して ε でクランプ（`dim=-1` を渡す） | §1、発展 |
# | `03_normalized_linear` | （クラスの定義だけ） | 初期化で1回正規化した重みは、Adam でも SGD でも学習で球面から外れる。球面上の重みは、毎ステップのリトラクションで保たれる性質 | §2 |
#
# 次のノート 13 では、講義の正規化残差と nGPT の残差を比べ、円周上の vMF 分布を描きます。

# %% [markdown]
# ## 理解度チェック
#
# **問1.** 講義の float16 のスクリプトで、ノルムが 0 にも本当の値 $\sqrt{3}\cdot 2^{-24} \approx 1.03\times10^{-7}$ にもならず $2^{-23}$ になるのはなぜですか。
# その結果、`eps` なしの正規化は何を返しますか。
#
# <details><summary>答え</summary>
#
# PyTorch は float16 の値を float32 で二乗・合計・平方根してから、結果だけを float16 に丸めます。float32 では $2^{-48}$ もアンダーフローしないので、
# ノルムは $2^{-24}$ の 1.732 倍と正しく計算されます。ところが float16 はこの大きさでは $2^{-24}$ の整数倍しか表せないので、最も近い $2 \times 2^{-24} = 2^{-23}$ に丸められます。
# 割り算は $2^{-24}/2^{-23} = 0.5$ なので結果は [0.5, 0.5, 0.5]、長さ 0.866 のベクトルです。NaN も inf も出ず、何の警告もなく単位ベクトルでないものが返ります。
#
# </details>
#
# **問2.** 講義の `NormalizedLinear` を Adam で学習すると、重みの行のノルムはどうなりますか。球面上に保つには何が必要ですか。
#
# <details><summary>答え</summary>
#
# 初期化で1回正規化しただけなので、学習とともに 1 から離れます。勾配が行に対して接ベクトルでない、接ベクトルでも1歩で長さが伸びる、Adam が座標ごとに割る、の3つが原因です。
# 毎ステップの更新の後で行を正規化し直す（リトラクション）必要があり、microgpt の球面モードは Adam の各ステップの後に `microgpt.retract` でこれを行います。
#
# </details>

# %% [markdown]
# ## 練習問題
#
# 紙と鉛筆（と、上のセル）で考える問題です。答えは折りたたみの中にあります。
#
# **練習 1.** float16 の入力 $x = [2^{-24}, 0, 0]$ を、講義の `x / x.norm()`（float32 で累積し、ノルムを float16 に丸める）で正規化すると、何が返りますか。
# 長さは 1 になりますか。§1 のセルの `small_fp16` を書き換えて確かめてください。
#
# <details><summary>答え</summary>
#
# ノルムは float32 で $2^{-24}$ ちょうどで、float16 でもちょうど表せるので丸めは起きません。結果は $[1, 0, 0]$、長さはちょうど 1 です。
# 壊れたのは、ノルムが float16 の刻み $2^{-24}$ の整数倍でなかった（$\sqrt 3$ 倍だった）からで、入力が小さいこと自体ではありません。
#
# </details>
#
# **練習 2.** §2 の学習で、SGD の学習率を 1.0 から 0.1 にすると、「初期化で1回だけ正規化」の行のノルムの散らばりは小さくなるでしょうか。
# 予想してから、セルの `w = w - 1.0 * grad` を `w = w - 0.1 * grad` に書き換えて確かめてください。
#
# <details><summary>答え</summary>
#
# ほとんど小さくなりません。このセルで測ると、学習率 1.0 では行のノルムが 0.950 〜 1.163、0.1 では 0.859 〜 1.109 で、散らばりの幅は同じ程度です。
# 1歩ごとのずれは小さくなりますが、ずれの主な原因は §2 の理由 1（勾配そのものが行の半径方向の成分を持つ）で、小さな学習率は同じ道のりを多くの歩数で進むだけだからです。
# 学習率で球面上に保つことはできません。保つのは毎ステップのリトラクションです。
#
# </details>
