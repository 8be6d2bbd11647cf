# %% [markdown]
# # 第3回 プラネタリウムの建設（7）：プラネタリウムの星図と、曲率
#
# （目安：本編 約40分、練習問題 約15分）
#
# **対応する講義:** 幾何学講義 第3回の「プラネタリウム・メタファー」（対応表、第1回の星空との違い、CAUTION の賞味期限、角度が意味を担う）、
# 「曲率の影響」（NOTE 双曲空間との対比）と、最後のまとめ。第3回の最後のノートです。
#
# このノートで見るもの：
#
# 0. 準備：ノート 15 と同じ2つのモデルを学習し直す（同じシードなので同じ重み）。
# 1. プラネタリウム：学習した埋め込みの星図。cos = 1 / 0 / −1 の例、第1回の星空との違い。
# 2. 曲率：内角の和、ガウス・ボネの定理で「均一な曲率」を測る、円周の長さと双曲空間。
# 3. **発展**（読み飛ばしてかまいません）：このノートの学習から作るプラネタリウムのページ（`planetarium.py`）、「測地線は曲がる」の正確な意味。
# 4. 第3回全体のまとめ（講義のまとめの表に沿って）、理解度チェック、練習問題（vMF 混合の事後確率の勾配を自分で書く）。

# %%
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = next((p for p in (Path.cwd(), *Path.cwd().parents) if (p / "value.py").exists()), None)
if ROOT is None:  # the kernel was started outside the repository: say so, not a bare StopIteration
    raise FileNotFoundError(f"value.py が {Path.cwd()} にもその上のフォルダにもありません。"
                            "Jupyter はこのリポジトリの中（ルートか notebooks/）で起動してください")
for path in (ROOT, ROOT / "notebooks"):  # the project's modules at the root, helpers in notebooks/
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import lecture3_runs  # notebooks/lecture3_runs.py: the two microgpt runs lecture 3's sittings share
import matplotlib.pyplot as plt
import matplotlib_fontja  # noqa: F401  (figure text in Japanese: registers the IPAexGothic font)
import numpy as np
from IPython.display import HTML, Markdown, display
from matplotlib.lines import Line2D

import microgpt
import sphere
from harness.history import HISTORY_NAME
from sphere import geodesic_distance_np, l2_normalize_np, tangent_project
from utils import softmax_np

plt.rcParams["figure.dpi"] = 100
np.set_printoptions(precision=6, suppress=False)

# %% [markdown]
# ## 0. 準備：2つのモデルを学習する
#
# ノート 15 §2 と同じ学習です（`notebooks/lecture3_runs.py` の `train_both()`）。プラネタリウムのページのための重みのスナップショットも、ここで記録されます。

# %%
data = lecture3_runs.train_both()
runs, histories, vocab, labels = data.runs, data.histories, data.vocab, data.labels
inputs, mask = data.inputs, data.mask                  # the first 200 validation names
cfg_s, st_s = runs["sphere"]
bos = len(vocab)                                       # token ids 0..25 are the letters, 26 is BOS
kind = ["BOS" if c == "BOS" else "母音" if c in "aeiou" else "子音" for c in labels]
kind_color = {"母音": "tab:red", "子音": "tab:blue", "BOS": "k"}
print(f"球面モデルの最終の検証損失 {st_s.val_loss[-1][1]:.4f}、星（wte の行）は {len(labels)} 個、各 {cfg_s.n_embd} 次元")

# %% [markdown]
# ## 1. プラネタリウム：学習した埋め込みの星図
#
# 講義の対応表では、ドーム＝単位球面 $\mathbb{S}^{d-1}$、星＝データ点（埋め込みベクトル）、星座＝意味的なクラスター、星同士の角度＝類似度、星の明るさ＝「（この比喩では使わない。ノルムを捨てた）」でした。
# 講義の「球面を「ドーム」として捉える」：プラネタリウム・メタファーで、学習した埋め込み空間を星図にします。星の明るさ（ノルム）を捨てることが、第2回の「ノルムの呪い」への講義の答えでした。
# 球面モードの microgpt では、トークン埋め込み `wte` の 27 行（26 文字と BOS）が、まさに $\mathbb{S}^{15}$ 上の 27 個の星です。どの行もノルム 1 です。
#
# 星同士の角度を、コサイン類似度の行列で見ます。母音 a, e, i, o, u、子音、BOS の順に並べ、比較のため学習前（`microgpt.init_params`、同じシード）の行列も並べます。

# %%
wte = st_s.params["wte"]
wte_init = microgpt.init_params(cfg_s, seed=42)["wte"]
vowel_ids = [i for i, c in enumerate(labels) if c in "aeiou"]
consonant_ids = [i for i, c in enumerate(labels) if c != "BOS" and c not in "aeiou"]
order_star = vowel_ids + consonant_ids + [bos]


def mean_off_diagonal(c, rows, cols):
    block = c[np.ix_(rows, cols)]
    return block[~np.eye(len(rows), dtype=bool)].mean() if rows == cols else block.mean()


print(f"| ||wte の行|| - 1 | の最大 = {np.abs(np.linalg.norm(wte, axis=1) - 1).max():.1e}")
off_diagonal = (wte_init @ wte_init.T)[~np.eye(len(labels), dtype=bool)]
print(f"学習前、異なる2行のすべての組: cos の標準偏差 {off_diagonal.std():.2f}（R^16 のランダムな向きなら "
      f"約 1/sqrt(16) = {1 / np.sqrt(16):.2f}）、{off_diagonal.min():+.2f} 〜 {off_diagonal.max():+.2f}")
for name, e in (("学習前", wte_init), ("学習後", wte)):
    c = e @ e.T
    print(f"{name}: cos の平均 母音-母音 {mean_off_diagonal(c, vowel_ids, vowel_ids):+.2f}、"
          f"子音-子音 {mean_off_diagonal(c, consonant_ids, consonant_ids):+.2f}、"
          f"母音-子音 {mean_off_diagonal(c, vowel_ids, consonant_ids):+.2f}、"
          f"BOS-文字 {c[bos, :bos].mean():+.2f}")
cos_wte = wte @ wte.T
for ch in ("a", "e", "o", "k", "s", "n", "BOS"):
    i = labels.index(ch)
    near = [j for j in np.argsort(-cos_wte[i]) if j != i][:3]
    print(f"  '{ch}' にいちばん近い星: " + ", ".join(f"{labels[j]} ({cos_wte[i, j]:.2f})" for j in near))

fig, axes = plt.subplots(1, 2, figsize=(14, 6.2))
for ax, (title, e) in zip(axes, (("学習前（初期化）", wte_init), ("学習後（球面モード）", wte))):
    c = (e @ e.T)[np.ix_(order_star, order_star)]
    im = ax.imshow(c, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(len(order_star)), [labels[i] for i in order_star], fontsize=7)
    ax.set_yticks(range(len(order_star)), [labels[i] for i in order_star], fontsize=7)
    for pos in (len(vowel_ids) - 0.5, len(vowel_ids) + len(consonant_ids) - 0.5):
        ax.axhline(pos, color="k", lw=0.8)
        ax.axvline(pos, color="k", lw=0.8)
    ax.set_title(title)
fig.suptitle("wte の行（トークン埋め込み）どうしのコサイン類似度 cos θ（母音、子音、BOS の順）")
fig.colorbar(im, ax=axes, shrink=0.8, label="cos θ（1 = 同じ向き、0 = 直交、-1 = 反対向き）")
plt.show()

# %% [markdown]
# 学習前は cos が 0 のまわりにばらつくだけで、母音・子音のブロックの構造はありません（「学習前」の行。16 次元のランダムな向きどうしの $1/\sqrt{16}$ と同じ程度）。
# 学習後は左上の母音のブロックが赤く、母音と子音の間は青くなりました。母音どうしは平均して近い向き、母音と子音は平均して離れた向きです（「学習後」の行）。
# 1文字先を予測するモデルにとって、母音どうし・子音どうしは「次に来る文字」の傾向が似ているからだと考えられます。
#
# ### 角度が意味を担う：cos = 1、0、−1
#
# 講義は、コサインの3つの値を「同じ方向、完全に類似」「直交、無関係」「反対方向、対立」と読みます。学習した星の組から、コサインがいちばん大きい組、0 にいちばん近い組、
# いちばん小さい組を選んで、講義の表の形に並べます（表の数はこのセルが計算したもの）。

# %%
pairs_idx = np.triu_indices(len(labels), 1)
pair_cos = cos_wte[pairs_idx]
picks = {"cos θ = 1 に近い（同じ方向）": int(np.argmax(pair_cos)), "cos θ = 0 に近い（直交）": int(np.argmin(np.abs(pair_cos))),
         "cos θ = −1 に近い（反対方向）": int(np.argmin(pair_cos))}
rows = ["| 講義の読み方 | 学習した星の組 | cos θ | θ |", "|---|---|---|---|"]
for reading, k in picks.items():
    i, j = pairs_idx[0][k], pairs_idx[1][k]
    rows.append(f"| {reading} | `{labels[i]}` と `{labels[j]}` | {pair_cos[k]:+.3f} | {np.degrees(np.arccos(pair_cos[k])):.1f}° |")
display(Markdown("\n".join(rows)))
print(f"星の組 {pair_cos.size} 個すべてで: cos は {pair_cos.min():+.3f} 〜 {pair_cos.max():+.3f}")

# %% [markdown]
# 学習した星にも、ほぼ同じ向きの組、ほぼ直交する組、かなり反対を向く組があります。ただし 27 個の星を 16 次元に置くと、ぴったり反対向き（cos = −1）の組はできにくく、
# いちばん小さいコサインでも −1 までは下がりません（表の下の行の範囲）。「同じ方向」の組が似た役割の文字になっているか、表の組を上の行列で確かめてみてください。
#
# 16 次元の球面は描けないので、3 次元に射影して「星図」にします。`wte` の行を主成分（平均を引いた行列の特異ベクトル）の上位 3 方向に射影し、射影した点をもう一度単位球面 $\mathbb{S}^2$ に正規化して、
# ワイヤーフレームのドームに置きます。上位 3 方向が説明する分散の割合も出力します。この割合が 1 より小さい分だけ、図の上の角度は本当の角度から歪んでいます。

# %%
centered = wte - wte.mean(axis=0)
_, svals, vt = np.linalg.svd(centered, full_matrices=False)
share = svals ** 2 / np.sum(svals ** 2)
stars = l2_normalize_np(wte @ vt[:3].T)                         # top-3 principal directions, back onto S^2
print(f"上位 3 主成分が説明する分散の割合: {share[:3].round(3)}（合計 {share[:3].sum():.0%}）")
cos_3d = stars @ stars.T
iu = np.triu_indices(len(labels), 1)
print(f"16 次元と 3 次元の星図での、組ごとのコサインの相関: {np.corrcoef(cos_wte[iu], cos_3d[iu])[0, 1]:.2f}")
print(f"3 次元の星図で: cos の平均 母音-母音 {mean_off_diagonal(cos_3d, vowel_ids, vowel_ids):+.2f}、"
      f"子音-子音 {mean_off_diagonal(cos_3d, consonant_ids, consonant_ids):+.2f}、"
      f"母音-子音 {mean_off_diagonal(cos_3d, vowel_ids, consonant_ids):+.2f}")
vowel_center = l2_normalize_np(stars[vowel_ids].mean(axis=0))   # look at the dome from the vowels' side, then the other
print(f"星図での cos(母音の重心, 星): 母音 {np.round(stars[vowel_ids] @ vowel_center, 2)}、"
      f"cos > 0 の子音は {len(consonant_ids)} 個中 {sum(stars[i] @ vowel_center > 0 for i in consonant_ids)} 個、"
      f"BOS {stars[bos] @ vowel_center:+.2f}")

fig = plt.figure(figsize=(15, 7))
u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 30), np.linspace(0, np.pi, 15))
for n_view, (toward, side) in enumerate(((vowel_center, "母音の側から"), (-vowel_center, "反対側から"))):
    elev, azim = np.degrees(np.arcsin(toward[2])), np.degrees(np.arctan2(toward[1], toward[0]))
    ax = fig.add_subplot(1, 2, n_view + 1, projection="3d")
    ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.88", lw=0.4)
    for kind_name, ids, marker in (("母音", vowel_ids, "o"), ("子音", consonant_ids, "^"), ("BOS", [bos], "*")):
        for front in (True, False):      # stars on the near half of the dome bold, the far half faint
            sel = [i for i in ids if (stars[i] @ toward > 0) == front]
            if not sel:
                continue
            p_ = stars[sel]
            ax.scatter(p_[:, 0], p_[:, 1], p_[:, 2], color=kind_color[kind_name], marker=marker,
                       s=(160 if kind_name == "BOS" else 50) * (1 if front else 0.6), alpha=1 if front else 0.25,
                       depthshade=False)
            for i in sel:
                ax.text(*(1.13 * stars[i]), labels[i], fontsize=11 if front else 8, color=kind_color[kind_name],
                        alpha=1 if front else 0.35)
    ax.view_init(elev=elev, azim=azim)
    ax.set(xlim=(-1, 1), ylim=(-1, 1), zlim=(-1, 1), box_aspect=(1, 1, 1), xticks=[], yticks=[], zticks=[],
           xlabel="第1主成分", ylabel="第2主成分", zlabel="第3主成分")
    ax.set_title(f"プラネタリウム：wte の 27 個の星（上位 3 主成分）、{side}\n手前の半球は濃く、奥の半球は薄く表示",
                 fontsize=11)
    ax.legend(handles=[Line2D([], [], ls="", marker=mk, ms=ms, color=kind_color[kn], label=kn)
                       for kn, mk, ms in (("母音", "o", 7), ("子音", "^", 7), ("BOS", "*", 11))],
              loc="upper left", fontsize=9)
plt.tight_layout()
plt.show()

# %% [markdown]
# 左は母音の重心の方向から、右はその反対側からドームを見たものです。手前の半球の星を濃く、奥の半球の星を薄く描いています。
# 母音（赤い丸）は左のドームの手前に集まって一つの「星座」を作り、子音（青い三角）の多くは右のドーム、反対側の半球に広がります（「cos(母音の重心, 星)」の行）。
# ただし、上位 3 方向が説明するのは分散の一部で（「上位 3 主成分が説明する分散の割合」の行）、この星図は 16 次元の配置の「影」です。正確な角度は、コサイン類似度の行列で読んでください。
# ノルムはすべて 1 なので、星の「明るさ」はありません。意味を担うのは配置（角度）だけです。


# %% [markdown]
# ### 1.1 第1回の「星空」との違い：連続した夜空
#
# 講義の NOTE のとおり、第1回の「星＝単語、星座＝トピック」は **離散的な星空** で、星はあっても、それらを浮かべる連続的な空間がありませんでした。
# 本回の単位球面は連続した夜空で、星と星の **あいだ** の点もすべて「向き」として意味を持ちます。
# 球面モデルの星 `a` から星 `k` まで、測地線（大円の弧）に沿って進み（`sphere.exp_map`、指数写像）、途中の点にいちばん近い星を調べます。
# また、モデルが実際に予測に使う最後の隠れ状態 $h$ も、この夜空の上の点です。$h$ が出力の星（`lm_head` の行）にどれだけ近いかも見ます。

# %%
star_a, star_k = wte[labels.index("a")], wte[labels.index("k")]
arc = geodesic_distance_np(star_a, star_k)
toward_k = l2_normalize_np(tangent_project(star_a, star_k))      # the unit tangent at 'a' pointing to 'k'
print(f"星 a と星 k のなす角: {np.degrees(arc):.1f}°")
for t in np.linspace(0, 1, 9):
    point = sphere.exp_map(star_a, t * arc * toward_k)
    c_ = wte @ point
    nearest = np.argsort(-c_)[:2]
    print(f"  道のりの {t:5.3f}: |点| = {np.linalg.norm(point):.6f}、近い星 "
          + ", ".join(f"{labels[j]} (cos {c_[j]:.2f})" for j in nearest))
_, acts_s = microgpt.gpt_forward(st_s.params, inputs, cfg_s)
max_cos_out = (acts_s.hidden[-1] @ st_s.params["lm_head"].T)[mask].max(axis=1)
print(f"検証の位置の最後の隠れ状態 h: いちばん近い出力の星（lm_head の行）とのコサインの中央値 "
      f"{np.median(max_cos_out):.2f}、範囲 {max_cos_out.min():.2f} 〜 {max_cos_out.max():.2f}")

# %% [markdown]
# 弧の上のどの点もノルム 1 で、いちばん近い星は道のりの半ばで `a` から `k` に入れ替わり、2番目に近い星も途中で何度も変わっていきます。
# 途中の点はどの文字でもありませんが、夜空の中の「向き」として、どの星に近いかが連続的に決まります。予測に使われる $h$ も、出力の星のどれかにぴったり重なることはなく
# （出力の最後の行：いちばん近い星とのコサインの中央値は 1 よりずっと小さい）、星と星のあいだから、全部の星との角度で次の文字の確率が決まります。
# 離散的な星しかなかった第1回の星空では、こうした「あいだ」に意味はありませんでした。
#
# ### 1.2 プラネタリウムの賞味期限
#
# 講義の CAUTION のとおり、このメタファーは「空間全体が均一な曲率を持つ球面」であることを前提にしています。球面はどこでも同じ形をしていて、ドームのどこに星座を貼っても、
# どの三角形でも「内角の和の 180° からの超過 ÷ 面積」が同じ値（曲率）になります（§2 で、いろいろな三角形で測って確かめます）。第12回の双曲空間のように曲率が負の空間や、場所によって曲率が変わる一般の多様体では、
# 「ドームに星を貼る」という単純な描像は成り立ちません。プラネタリウムは、球面という特殊な場合のための直感です。


# %% [markdown]
# ## 2. 曲率の影響と双曲空間（講義の見通し）
#
# プラネタリウムの賞味期限（§1.2）は、曲率が一様かどうかで決まります。球面は **正の曲率** を持つ多様体で、講義のとおり「三角形の内角の和が180°を超える」空間です。第12回で扱う双曲空間は **負の曲率** を持ち、内角の和は 180° に届きません。
# 同じ作り方で、3辺の長さが等しい測地線の三角形を、球面 $\mathbb{S}^2$ と双曲面に作り、内角の和を測ります。双曲面はミンコフスキー空間 $\mathbb{R}^{1,2}$ の中の
# $-t^2 + x^2 + y^2 = -1$（$t > 0$）で、内積を $\langle u, v\rangle = -u_0 v_0 + u_1 v_1 + u_2 v_2$ に取り替えると、球面とまったく同じ式で距離と角度が測れます。
# 内角は、頂点での接ベクトルどうしの角度です（球面では `sphere.tangent_project`）。

# %%
def bisect(f, lo, hi, target, iters=60):
    """x in [lo, hi] with f(x) = target, for f increasing."""
    for _ in range(iters):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def minkowski(u, v):
    return -u[..., 0] * v[..., 0] + (u[..., 1:] * v[..., 1:]).sum(axis=-1)


def triangle(rho, space):
    """Three points at distance rho from the 'north pole', 120 degrees apart around it."""
    phis = np.radians([90.0, 210.0, 330.0])
    if space == "sphere":
        return np.stack([[np.cos(rho), np.sin(rho) * np.cos(p), np.sin(rho) * np.sin(p)] for p in phis])
    return np.stack([[np.cosh(rho), np.sinh(rho) * np.cos(p), np.sinh(rho) * np.sin(p)] for p in phis])


def side_length(P, space):
    return float(geodesic_distance_np(P[0], P[1])) if space == "sphere" else float(np.arccosh(-minkowski(P[0], P[1])))


def angle_sum(P, space):
    """Sum of the interior angles (degrees): the angle between the tangent vectors towards the other two corners."""
    total = 0.0
    for i in range(3):
        a, b, c = P[i], P[(i + 1) % 3], P[(i + 2) % 3]
        if space == "sphere":
            tb, tc = tangent_project(a, b), tangent_project(a, c)
            total += np.degrees(np.arccos(tb @ tc / (np.linalg.norm(tb) * np.linalg.norm(tc))))
        else:                                        # on the hyperboloid: project with the Minkowski inner product
            tb, tc = b + minkowski(a, b) * a, c + minkowski(a, c) * a
            total += np.degrees(np.arccos(minkowski(tb, tc) / np.sqrt(minkowski(tb, tb) * minkowski(tc, tc))))
    return total


print(f"{'辺の長さ':>6} | {'内角の和: 球面':>12} {'平面':>5} {'双曲面':>8}")
for side in (0.1, 0.5, 1.0, 1.5):
    sums = {}
    for space in ("sphere", "hyperbolic"):
        rho = bisect(lambda r, space=space: side_length(triangle(r, space), space), 1e-9, 1.5, side)
        sums[space] = angle_sum(triangle(rho, space), space)
    print(f"{side:6.2f} | {sums['sphere']:17.2f} {180:6d} {sums['hyperbolic']:11.2f}")
print("S^2 の八分円の三角形 (1,0,0), (0,1,0), (0,0,1) の内角の和:", round(angle_sum(np.eye(3), "sphere"), 6), "°")

print(f"\n{'r':>4} | 半径 r の円の周の長さ: {'球面':>8} {'平面':>8} {'双曲面':>9}")
phi = np.linspace(0, 2 * np.pi, 3601)
for r in (0.5, 1.0, 2.0, 3.0):
    on_s = np.stack([np.full_like(phi, np.cos(r)), np.sin(r) * np.cos(phi), np.sin(r) * np.sin(phi)], axis=1)
    on_h = np.stack([np.full_like(phi, np.cosh(r)), np.sinh(r) * np.cos(phi), np.sinh(r) * np.sin(phi)], axis=1)
    c_s = geodesic_distance_np(on_s[:-1], on_s[1:]).sum()       # the polygon through 3600 points on the circle
    c_h = np.arccosh(np.maximum(-minkowski(on_h[:-1], on_h[1:]), 1.0)).sum()
    print(f"{r:4.1f} | {'':22s}{c_s:8.2f} {2 * np.pi * r:8.2f} {c_h:11.2f}   （2 pi sin r = {2 * np.pi * np.sin(r):.2f}、"
          f"2 pi sinh r = {2 * np.pi * np.sinh(r):.2f}）")

for deg in (60, 90, 150, 180):
    u_ = np.array([1.0, 0.0, 0.0])
    v_ = np.array([np.cos(np.radians(deg)), np.sin(np.radians(deg)), 0.0])
    print(f"{deg:3d}° 離れた2つの単位ベクトル: 直線（弦）の中点のノルム {np.linalg.norm((u_ + v_) / 2):.3f}")

# %% [markdown]
# - **内角の和**：球面の三角形は 180° を超え、双曲面の三角形は 180° に届きません。差は三角形が大きいほど大きく、小さな三角形ではどちらも平面の 180° に近づきます（曲率は「小さな範囲では平ら」に見える）。
#   球面の八分円の三角形（3つの角がすべて直角）は 270° です。
# - **円周の長さ**：半径 $r$ の円の周は、平面で $2\pi r$、球面で $2\pi\sin r$（$r = \pi/2$ を過ぎると縮む）、双曲面で $2\pi\sinh r$（$r$ とともに **指数的に** 増える）です。
#   木構造のように「深さとともに指数的に増える」階層を埋め込むには、中心から離れるほど空間が指数的に広がる双曲空間が向いている、というのが講義の見通し（第12回）の根拠です。
#   球面では逆に、遠くへ行くほど場所が足りなくなります。
# - **直線で結べない**：球面上の2点を結ぶ直線（弦）の中点は球面の内側にあり、正規化し直さないと球面に戻りません（講義の「遠い二点を直線で結ぶことができない」）。
#   正反対の2点では中点が原点になり、正規化の向きさえ決まりません（ノート 11 §2 のクランプする ε が守るのは、こういう点です）。
#
# ### 2.1 均一な曲率を測る：ガウス・ボネの定理
#
# 「どこでも同じ曲率」は、三角形を回転させて測っても確かめられません。回転は角度を変えないので、どんな曲面でも同じ答えになるからです。
# 曲率を **測る** のはガウス・ボネの定理です。測地線の三角形について
#
# $$(\text{内角の和} - \pi) = \int_{\text{三角形}} K\,dA,$$
#
# つまり曲率 $K$ が一定なら、**角の超過 ÷ 面積 = K** がどの三角形でも同じ値になります。単位球面なら $K = 1$ です。
# 大きさも形も場所もばらばらな測地線の三角形を $\mathbb{S}^2$ の上に作り、内角の和（頂点での接ベクトルの角度）と、面積を **別々に** 測ります。
# 面積は、三角形を 9 万個の小さな平らな三角形で覆って、その面積を足し合わせます（角度は使いません）。

# %%
def spherical_area(P, n=300):
    """Area of the geodesic triangle P (3 unit vectors) from a fine mesh of flat triangles on it."""
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = i + j <= n
    grid = np.zeros((n + 1, n + 1, 3))
    grid[keep] = l2_normalize_np(((n - i - j)[keep, None] * P[0] + i[keep, None] * P[1] + j[keep, None] * P[2]) / n)

    def flat_area(a, b, c):
        return 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=-1)
    up = flat_area(grid[:-1, :-1], grid[1:, :-1], grid[:-1, 1:])[(i + j)[:-1, :-1] <= n - 1].sum()
    down = flat_area(grid[1:, 1:], grid[:-1, 1:], grid[1:, :-1])[(i + j)[1:, 1:] <= n].sum()
    return up + down


rng = np.random.default_rng(12)
print(f"{'三角形':>10} | {'内角の和（°）':>10} {'角の超過（rad）':>12} {'面積':>9} {'超過 ÷ 面積':>10}")
shapes = [("八分円", np.eye(3))]
for k in range(5):                        # random triangles: different sizes, shapes and places
    center = l2_normalize_np(rng.standard_normal(3))
    spread = (0.15, 0.4, 0.7, 1.0, 1.3)[k]
    shapes.append((f"ランダム {k + 1}", l2_normalize_np(center + spread * rng.standard_normal((3, 3)))))
for name, P in shapes:
    excess = np.radians(angle_sum(P, "sphere")) - np.pi
    area = spherical_area(P)
    print(f"{name:>10} | {angle_sum(P, 'sphere'):14.3f} {excess:16.5f} {area:10.5f} {excess / area:13.5f}")

# %% [markdown]
# 大きさも形も場所も違う三角形で、角の超過 ÷ 面積はどれも 1 です（最後の列。小さな差は面積の近似の誤差）。八分円の三角形は超過 $\pi/2$、面積 $4\pi/8 = \pi/2$ です。
# これが「空間全体が均一な曲率 1 を持つ」ことの意味で、プラネタリウムのドームのどこに星座を貼っても同じ幾何が成り立つ理由です（§1.2）。
# 双曲面（曲率 −1）では、同じ定理から超過は負（内角の和が 180° に届かない）で、超過 ÷ 面積は −1 です（ここでは面積を測っていません）。


# %% [markdown]
# ## 発展：プラネタリウムのページと、測地線の曲がり方（読み飛ばしてよい）
#
# 本編の寄り道を2つ：このノートの学習をプラネタリウムのページで再生することと、「測地線は曲がる」の正確な言い方です。

# %% [markdown]
# ### このノートの学習を、プラネタリウムのページで再生する
#
# §0 の2つの学習で記録したスナップショットから、`planetarium.py` が1つの HTML ページを書き出します。星が落ち着いていく様子、Adam の一歩とリトラクション、
# 入力した名前の隠れ状態の道、vMF のキャップとしての次の文字の確率を、ドラッグで回せる球面の上に描くページです（docs/planetarium.md）。
# ページはネットワークもサーバーも使わず、ブラウザで開くだけで動きます。作るのはコマンドラインと同じ `python planetarium.py RUN_DIR ... --html PATH` です。

# %%
run_root = Path(tempfile.mkdtemp(prefix="microgpt-06-"))
for norm, history in histories.items():                      # one run folder per mode, holding its history.npz
    (run_root / norm).mkdir()
    history.save(str(run_root / norm / HISTORY_NAME), runs[norm][1].train_loss, runs[norm][1].val_loss)
page = ROOT / "notebooks" / "planetarium_lecture3.html"
made = subprocess.run([sys.executable, str(ROOT / "planetarium.py"), str(run_root / "rmsnorm"), str(run_root / "sphere"),
                       "--html", str(page)], capture_output=True, text=True, cwd=ROOT)
shutil.rmtree(run_root)                                       # the page holds everything it needs
assert made.returncode == 0, f"planetarium.py could not write the page: {made.stderr.strip()}"
print(f"学習ごとのスナップショットの数: {[len(h) for h in histories.values()]}、ページ: notebooks/{page.name}、"
      f"{page.stat().st_size / 2**20:.1f} MiB")
display(HTML(f'<a href="{page.name}" target="_blank">プラネタリウムのページを開く（notebooks/{page.name}：このセルを実行すると作られます）</a>'))

# %% [markdown]
# ページは `notebooks/planetarium_lecture3.html` に書き出されます。リポジトリには入れていないので、このノートを自分で実行したときに作られ、上のリンクから開けます。
# 左右に rmsnorm と sphere の2つの学習が並び、スライダーで学習を再生できます。

# %% [markdown]
# ### 「測地線は曲がる」を正確に言う
#
# 講義は「球面上では『遠い二点を直線で結ぶ』ことができない（測地線は曲がる）」と書きます。前半はそのとおりです（上の弦の中点の行）。
# ただ、後半は言い直しておきます。測地線（大円の弧）は、球面の上では **いちばんまっすぐな曲線** です。球面の上を歩く人にとって、大円に沿って進むことは、
# 左右どちらにもハンドルを切らずに進むことです。曲がって見えるのは、球面を外の $\mathbb{R}^d$ から眺めたときだけです。
#
# これは数で確かめられます。曲線 $\gamma(s)$（弧長 $s$）の加速度 $\gamma''$ を、球面に垂直な成分（外から見た曲がり）と、接する成分（球面の上での曲がり、**測地的曲率**）に分けます。
# 大円では接する成分が 0、緯度の円（角半径 $r$ の小円）では $\cot r$ です。

# %%
print(f"{'曲線':>20} | {'R^3 から見た曲がり |γ′′|':>18} {'球面の上での曲がり':>14} {'理論値':>8}")
s = np.linspace(0, 1, 2001)
ds = s[1] - s[0]
for name, r in (("大円（測地線）", np.pi / 2), ("小円 r = 1.0", 1.0), ("小円 r = 0.5", 0.5), ("小円 r = 0.2", 0.2)):
    phi_s = s / np.sin(r)                              # arc length s along a circle at angular radius r
    curve = np.stack([np.full_like(s, np.cos(r)), np.sin(r) * np.cos(phi_s), np.sin(r) * np.sin(phi_s)], axis=1)
    accel = (curve[2:] - 2 * curve[1:-1] + curve[:-2]) / ds**2    # second difference: gamma''
    tangential = accel - np.sum(accel * curve[1:-1], axis=1, keepdims=True) * curve[1:-1]
    print(f"{name:>20} | {np.linalg.norm(accel, axis=1).mean():22.4f} {np.linalg.norm(tangential, axis=1).mean():18.4f} "
          f"{1 / np.tan(r):10.4f}")

# %% [markdown]
# 大円の加速度はすべて球面に垂直（長さ 1、外から見ると半径 1 の円）で、球面の上での曲がりは丸め誤差の 0 です。小円は外から見ても曲がっていますが、
# 球面の上でも $\cot r$ だけ曲がっています。球面の上を歩く人が緯度の円に沿って進むには、ずっとハンドルを切り続けなければなりません。
# 講義の「測地線は曲がる」は「$\mathbb{R}^d$ から見ると曲がっている」という意味で読み、球面の上では測地線こそが「まっすぐ」だと覚えておくのが正確です。
# 正の曲率の効果は、まっすぐな測地線どうしが近づいていくこと（平行に出発した2本の大円が極で交わる）に現れます。三角形の内角の和が 180° を超えるのも、このためです。
#
# 講義のまとめのとおり、空間の曲率は表現したい構造に応じて選ぶものです。球面（正の曲率）はノルムの混乱を断ち切るのに向き、階層構造には双曲空間（負の曲率）が向くことがあります。

# %% [markdown]
# ## まとめ：球面という設計の選択（第3回全体）
#
# 講義の最後のまとめの表に、第3回の7つのノート（11〜17）で確かめたことを並べます。
#
# | 概念 | 講義の定義 | 本回での役割（講義） | ノートで確かめたこと |
# |---|---|---|---|
# | 球面制約 | すべての埋め込みを単位球面 $\mathbb{S}^{d-1}$ 上に置く | ノルムの混乱を根本から断ち切る設計 | RMSNorm のモデルでは1つのノルムが強度と確信度を同時に運ぶ（ノート 11 §0）。$\mathbb{R}^{768}$ の単位ベクトルは $\mathbb{S}^{767}$ の上にある（ノート 11 §1）。重みを球面に保つのは毎ステップのリトラクション（ノート 12 §2）。リーマン勾配と射影勾配法の違いは η の次数に出る（ノート 14 §2） |
# | nGPT | 重みも埋め込みも完全に正規化した Transformer 設計 | 球面制約の実用例。学習効率の改善も報告 | この小さなモデルでは、ステップ数でも時間でも速くならない（ノート 15 §2.1）。仮説はここでは支えられない（ノート 15 の発展）。論文との違いは位置（`wpe` と RoPE）と MLP（ReLU と SwiGLU）（ノート 15 の発展） |
# | プラネタリウム・メタファー | 球面をドーム、埋め込みを星として捉える | 角度が意味を担うという直感の可視化 | 学習した `wte` の星図で、母音が1つの星座になる（ノート 17 §1）。コサインと内積は単位ベクトルのときだけ一致する（ノート 16 §1）。どの三角形でも角の超過 ÷ 面積 = 1：均一な曲率（ノート 17 §2.1） |
# | vMF 分布 | 球面上の方向分布。集中度 κ が分布の鋭さを制御 | Softmax との形式的対応。第4回と第7回に接続 | 平均方向の近くでは角度についてのガウス分布、κ → ∞ でデルタ関数（ノート 13 §2）。softmax は vMF 混合の事後確率で、microgpt では $s_z$ が κ（ノート 16 §1）。ガウス分布からの κ は、条件付けなら $\lVert\mathbf m\rVert/\sigma^2$ が厳密、射影なら次元の項がつく（ノート 14 の発展） |
# | 球面設計の限界 | ノルムに意味がある場合、回帰タスク等では適さない | 「球面が常に良い」という過剰一般化を防ぐ | 正規化しないヘッドではロジットが κ·cos にならない（ノート 16 §2）。球面モードは確信度を角度と $s_z$ に載せ替える（ノート 16 §3）。曲率は表したい構造で選ぶ（ノート 17 §2） |

# %% [markdown]
# ## 理解度チェック
#
# **問1.** 「球面はどこでも同じ曲率を持つ」を確かめるのに、1つの三角形を回転させて内角の和を測るのでは足りないのはなぜですか。何を測ればよいですか。
#
# <details><summary>答え</summary>
#
# 回転は角度を保つので、どんな曲面の上でも、回転させた三角形の内角の和は変わりません。回転で何かを示せるのは、回転がその曲面自身を保つことを知っているときだけです。
# 曲率そのものを測るのはガウス・ボネの定理で、いろいろな測地線の三角形について「内角の和 − π」を面積で割った値が、どれも同じ（単位球面なら 1）になることを確かめます（§2.1）。
#
# </details>
#
# **問2.** 講義の「測地線は曲がる」は、どういう意味で正しく、どういう意味で誤解を招きますか。
#
# <details><summary>答え</summary>
#
# 外の $\mathbb{R}^d$ から見ると、大円は半径 1 の円で、曲がっています（加速度の大きさ 1）。しかし球面の上での曲がり（測地的曲率）は 0 で、測地線は球面の上でいちばんまっすぐな曲線です。
# 曲率の効果は、まっすぐな測地線どうしが近づくこと（三角形の内角の和が 180° を超えること）に現れます（発展）。
#
# </details>
#
# **問3.** プラネタリウムの星図（3 次元の主成分に射影した図）で読んだ角度を、そのまま 16 次元の星の角度として使ってよいですか。
#
# <details><summary>答え</summary>
#
# よくありません。上位 3 主成分は分散の一部しか説明しないので、星図は 16 次元の配置の「影」で、角度は歪んでいます（「上位 3 主成分が説明する分散の割合」の行）。
# 正確な角度は、16 次元のコサイン類似度の行列で読みます（§1）。
#
# </details>

# %% [markdown]
# ## 練習問題：vMF 混合の事後確率の勾配
#
# 解答セルの `raise NotImplementedError` を消して関数を書き、その下のチェックセルを実行してください。チェックは、あなたの関数と、同じ量を `Value` で組んで
# `backward()` したものを同じ入力で呼び、点ごとに「完全一致」「近い」「最大の差」を表にします。`backward()` を呼べば答えは出ますが、この練習の中身は、勾配の式を自分で導くことです。
#
# ノート 16 §1 の混合モデル（クラス $k$ の点が $\mathrm{vMF}(\boldsymbol\mu_k, \kappa_k)$ から生まれ、クラスが事前確率 $\pi_k$ で選ばれる）で、点 $\mathbf x$ を球面の上で動かすと、
# クラス $k$ の事後確率 $p(k\mid\mathbf x)$ はどう変わるでしょうか。球面の上の点を、microgpt と同じく、正規化する前のベクトル $\mathbf r$ から $\mathbf x = \mathrm{Norm}(\mathbf r)$ で作ります。
# `r`（形 `(d,)`）、`mus`（形 `(K, d)`、行は単位ベクトル）、`kappas` と `priors`（形 `(K,)`）、クラスの番号 `k` から、$\log p(k\mid\mathrm{Norm}(\mathbf r))$ の $\mathbf r$ についての勾配
# （形 `(d,)`）を返す関数 `vmf_posterior_grad(r, mus, kappas, priors, k)` を書いてください。$\lVert\mathbf r\rVert = 1$ では、それがリーマン勾配（ノート 14 §2）です。
#
# 事後確率は $z_j = \log\pi_j + \log C_d(\kappa_j) + \kappa_j\,\boldsymbol\mu_j^\top\mathbf x$ の softmax です（$\log C_d$ は `sphere.vmf_log_normalizer(d, kappas)`）。κ は 1000 まで調べるので、
# 事後確率は対数のまま計算してください。下の `mixture_posterior`（ノート 16 §1 と同じ）も対数のまま計算しますが、$\mathbf x$ を単位ベクトルと仮定しています。
# $\lVert\mathbf r\rVert < \varepsilon$ では $\mathbf x = \mathbf r/\varepsilon$ が長さ 1 より短く、そこでは少しずれます。チェックは、$\lVert\mathbf r\rVert$ が正規化のクランプの折れ点（ε）のすぐ上と下の点も含み、差は勾配の項の大きさ $\kappa/\lVert\mathbf r\rVert$ を 1 とした単位で表示します。
#
# この勾配は、microgpt の球面モードで最後の隠れ状態に届く勾配と同じ形です。ノート 16 の練習問題の損失は、κ を $s_z$ に、事前確率を $1/C_d(\kappa_k)$ に比例させた混合の、この事後確率の $-\log$ です。
#
# <details><summary>ヒント 1</summary>
#
# $\log p(k\mid\mathbf x) = z_k - \log\sum_j e^{z_j}$ と書けます。$z_j$ は $\log\pi_j$、$\log C_d(\kappa_j)$ と、$\mathbf x$ に依存する項の和です。どの項が $\mathbf x$ によりますか。
#
# </details>
#
# <details><summary>ヒント 2</summary>
#
# $\log\sum_j e^{z_j}$ の勾配は、各 $z_j$ の勾配を事後確率で重み付けした平均です（softmax の逆伝播と同じ形）。$\mathbf x$ についての勾配が出たら、$\mathrm{Norm}$ の逆伝播（ノート 11 の練習問題）で $\mathbf r$ まで戻します。
#
# </details>
#
# <details><summary>解答例（行き詰まったら）</summary>
#
# `notebooks/worked_solutions.md` の「17-1」にあります。チェックで「すべての点で一致しました」と出ると、ここにも表示されます。
#
# </details>

# %%
import exercises  # the check cells (notebooks/exercises.py)


def mixture_posterior(x, mus, kappas, priors):
    """Bayes: p(k | x) = pi_k vMF(x | mu_k, kappa_k) / sum_j pi_j vMF(x | mu_j, kappa_j), from log densities."""
    log_joint = np.stack([np.log(p) + sphere.vmf_log_density(x, m, k) for m, k, p in zip(mus, kappas, priors)], axis=1)
    return softmax_np(log_joint)


# %%
def vmf_posterior_grad(r, mus, kappas, priors, k):
    # ここに解答を書く (write your answer here)
    raise NotImplementedError

# %%
exercises.check_17_vmf_posterior_grad(vmf_posterior_grad)
