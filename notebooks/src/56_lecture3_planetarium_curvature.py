# %% [markdown]
# @@HEAD@@

# %% [markdown]
# @@SETUP@@

# %% [markdown]
# ## 6. プラネタリウム：学習した埋め込みの星図
#
# 講義の対応表では、ドーム＝単位球面 $\mathbb{S}^{d-1}$、星＝データ点（埋め込みベクトル）、星座＝意味的なクラスター、星同士の角度＝類似度、星の明るさ＝「（この比喩では使わない。ノルムを捨てた）」でした。
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


print(f"max | ||wte row|| - 1 | = {np.abs(np.linalg.norm(wte, axis=1) - 1).max():.1e}")
off_diagonal = (wte_init @ wte_init.T)[~np.eye(len(labels), dtype=bool)]
print(f"before training, every pair of different rows: cos std {off_diagonal.std():.2f} (random directions in R^16: "
      f"about 1/sqrt(16) = {1 / np.sqrt(16):.2f}), from {off_diagonal.min():+.2f} to {off_diagonal.max():+.2f}")
for name, e in (("before training", wte_init), ("after training", wte)):
    c = e @ e.T
    print(f"{name:15s}: mean cos vowel-vowel {mean_off_diagonal(c, vowel_ids, vowel_ids):+.2f}, "
          f"consonant-consonant {mean_off_diagonal(c, consonant_ids, consonant_ids):+.2f}, "
          f"vowel-consonant {mean_off_diagonal(c, vowel_ids, consonant_ids):+.2f}, "
          f"BOS-letters {c[bos, :bos].mean():+.2f}")
cos_wte = wte @ wte.T
for ch in ("a", "e", "o", "k", "s", "n", "BOS"):
    i = labels.index(ch)
    near = [j for j in np.argsort(-cos_wte[i]) if j != i][:3]
    print(f"  nearest stars to '{ch}': " + ", ".join(f"{labels[j]} ({cos_wte[i, j]:.2f})" for j in near))

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
# 学習前は cos が 0 のまわりにばらつくだけで、母音・子音のブロックの構造はありません（`before training` の行。16 次元のランダムな向きどうしの $1/\sqrt{16}$ と同じ程度）。
# 学習後は左上の母音のブロックが赤く、母音と子音の間は青くなりました。母音どうしは平均して近い向き、母音と子音は平均して離れた向きです（`after training` の行）。
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
print(f"over all {pair_cos.size} pairs of stars: cos from {pair_cos.min():+.3f} to {pair_cos.max():+.3f}")

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
print(f"variance explained by the top 3 principal directions: {share[:3].round(3)} (total {share[:3].sum():.0%})")
cos_3d = stars @ stars.T
iu = np.triu_indices(len(labels), 1)
print(f"correlation of the pairwise cosines in 16-D and on the 3-D map: {np.corrcoef(cos_wte[iu], cos_3d[iu])[0, 1]:.2f}")
print(f"on the 3-D map: mean cos vowel-vowel {mean_off_diagonal(cos_3d, vowel_ids, vowel_ids):+.2f}, "
      f"consonant-consonant {mean_off_diagonal(cos_3d, consonant_ids, consonant_ids):+.2f}, "
      f"vowel-consonant {mean_off_diagonal(cos_3d, vowel_ids, consonant_ids):+.2f}")
vowel_center = l2_normalize_np(stars[vowel_ids].mean(axis=0))   # look at the dome from the vowels' side, then the other
print(f"cos(vowel center, star) on the map: vowels {np.round(stars[vowel_ids] @ vowel_center, 2)}, "
      f"consonants with cos > 0: {sum(stars[i] @ vowel_center > 0 for i in consonant_ids)} of {len(consonant_ids)}, "
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
# 母音（赤い丸）は左のドームの手前に集まって一つの「星座」を作り、子音（青い三角）の多くは右のドーム、反対側の半球に広がります（`cos(vowel center, star)` の行）。
# ただし、上位 3 方向が説明するのは分散の一部で（`variance explained` の行）、この星図は 16 次元の配置の「影」です。正確な角度は、コサイン類似度の行列で読んでください。
# ノルムはすべて 1 なので、星の「明るさ」はありません。意味を担うのは配置（角度）だけです。
#
# ### このノートの学習を、プラネタリウムのページで再生する
#
# §3 の2つの学習で記録したスナップショットから、`planetarium.py` が1つの HTML ページを書き出します。星が落ち着いていく様子、Adam の一歩とリトラクション、
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
print(f"snapshots per run: {[len(h) for h in histories.values()]}; page: notebooks/{page.name}, "
      f"{page.stat().st_size / 2**20:.1f} MiB")
display(HTML(f'<a href="{page.name}" target="_blank">プラネタリウムのページを開く（notebooks/{page.name}：このセルを実行すると作られます）</a>'))

# %% [markdown]
# ページは `notebooks/planetarium_lecture3.html` に書き出されます。リポジトリには入れていないので、このノートを自分で実行したときに作られ、上のリンクから開けます。
# 左右に rmsnorm と sphere の2つの学習が並び、スライダーで学習を再生できます。

# %% [markdown]
# ### 6.1 第1回の「星空」との違い：連続した夜空
#
# 講義の NOTE のとおり、第1回の「星＝単語、星座＝トピック」は **離散的な星空** で、星はあっても、それらを浮かべる連続的な空間がありませんでした。
# 本回の単位球面は連続した夜空で、星と星の **あいだ** の点もすべて「向き」として意味を持ちます。
# 球面モデルの星 `a` から星 `k` まで、測地線（大円の弧）に沿って進み（`sphere.exp_map`）、途中の点にいちばん近い星を調べます。
# また、モデルが実際に予測に使う最後の隠れ状態 $h$ も、この夜空の上の点です。$h$ が出力の星（`lm_head` の行）にどれだけ近いかも見ます。

# %%
star_a, star_k = wte[labels.index("a")], wte[labels.index("k")]
arc = geodesic_distance_np(star_a, star_k)
toward_k = l2_normalize_np(tangent_project(star_a, star_k))      # the unit tangent at 'a' pointing to 'k'
print(f"angle between the stars a and k: {np.degrees(arc):.1f} deg")
for t in np.linspace(0, 1, 9):
    point = sphere.exp_map(star_a, t * arc * toward_k)
    c_ = wte @ point
    nearest = np.argsort(-c_)[:2]
    print(f"  {t:5.3f} of the way: |point| = {np.linalg.norm(point):.6f}, nearest stars "
          + ", ".join(f"{labels[j]} (cos {c_[j]:.2f})" for j in nearest))
max_cos_out = cos_theta[mask].max(axis=1)
print(f"last hidden states h of the val positions: cos to the nearest output star (lm_head row): median "
      f"{np.median(max_cos_out):.2f}, range {max_cos_out.min():.2f} .. {max_cos_out.max():.2f}")

# %% [markdown]
# 弧の上のどの点もノルム 1 で、いちばん近い星は道のりの半ばで `a` から `k` に入れ替わり、2番目に近い星も途中で何度も変わっていきます。
# 途中の点はどの文字でもありませんが、夜空の中の「向き」として、どの星に近いかが連続的に決まります。予測に使われる $h$ も、出力の星のどれかにぴったり重なることはなく
# （出力の最後の行：いちばん近い星とのコサインの中央値は 1 よりずっと小さい）、星と星のあいだから、全部の星との角度で次の文字の確率が決まります。
# 離散的な星しかなかった第1回の星空では、こうした「あいだ」に意味はありませんでした。
#
# ### 6.2 プラネタリウムの賞味期限
#
# 講義の CAUTION のとおり、このメタファーは「空間全体が均一な曲率を持つ球面」であることを前提にしています。球面はどこでも同じ形をしていて、ドームのどこに星座を貼っても、
# 同じ大きさの三角形は同じ内角の和を持ちます（§8 で、ばらばらな位置で測って確かめます）。第12回の双曲空間のように曲率が負の空間や、場所によって曲率が変わる一般の多様体では、
# 「ドームに星を貼る」という単純な描像は成り立ちません。プラネタリウムは、球面という特殊な場合のための直感です。


# %% [markdown]
# ## 8. 曲率の影響と双曲空間（講義の見通し）
#
# 球面は **正の曲率** を持つ多様体で、講義のとおり「三角形の内角の和が180°を超える」空間です。第12回で扱う双曲空間は **負の曲率** を持ち、内角の和は 180° に届きません。
# 同じ作り方で、3辺の長さが等しい測地線の三角形を、球面 $\mathbb{S}^2$ と双曲面に作り、内角の和を測ります。双曲面はミンコフスキー空間 $\mathbb{R}^{1,2}$ の中の
# $-t^2 + x^2 + y^2 = -1$（$t > 0$）で、内積を $\langle u, v\rangle = -u_0 v_0 + u_1 v_1 + u_2 v_2$ に取り替えると、球面とまったく同じ式で距離と角度が測れます。
# 内角は、頂点での接ベクトルどうしの角度です（球面では `sphere.tangent_project`）。

# %%
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


print(f"{'side':>6} | {'angle sum: sphere':>17} {'plane':>6} {'hyperbolic':>11}")
for side in (0.1, 0.5, 1.0, 1.5):
    sums = {}
    for space in ("sphere", "hyperbolic"):
        rho = bisect(lambda r, space=space: side_length(triangle(r, space), space), 1e-9, 1.5, side)
        sums[space] = angle_sum(triangle(rho, space), space)
    print(f"{side:6.2f} | {sums['sphere']:17.2f} {180:6d} {sums['hyperbolic']:11.2f}")
print("the octant triangle (1,0,0), (0,1,0), (0,0,1) on S^2:", round(angle_sum(np.eye(3), "sphere"), 6), "degrees")

rng = np.random.default_rng(11)
rho_05 = bisect(lambda r: side_length(triangle(r, "sphere"), "sphere"), 1e-9, 1.5, 0.5)
moved = []
for _ in range(5):                                   # the same triangle, rotated to random places on the sphere
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    moved.append(angle_sum(triangle(rho_05, "sphere") @ Q.T, "sphere"))
print("side 0.5 at five random places on S^2: angle sums", np.round(moved, 6))

print(f"\n{'r':>4} | circumference of a circle of radius r: {'sphere':>8} {'plane':>8} {'hyperbolic':>11}")
phi = np.linspace(0, 2 * np.pi, 3601)
for r in (0.5, 1.0, 2.0, 3.0):
    on_s = np.stack([np.full_like(phi, np.cos(r)), np.sin(r) * np.cos(phi), np.sin(r) * np.sin(phi)], axis=1)
    on_h = np.stack([np.full_like(phi, np.cosh(r)), np.sinh(r) * np.cos(phi), np.sinh(r) * np.sin(phi)], axis=1)
    c_s = geodesic_distance_np(on_s[:-1], on_s[1:]).sum()       # the polygon through 3600 points on the circle
    c_h = np.arccosh(np.maximum(-minkowski(on_h[:-1], on_h[1:]), 1.0)).sum()
    print(f"{r:4.1f} | {'':39s}{c_s:8.2f} {2 * np.pi * r:8.2f} {c_h:11.2f}   (2 pi sin r = {2 * np.pi * np.sin(r):.2f}, "
          f"2 pi sinh r = {2 * np.pi * np.sinh(r):.2f})")

for deg in (60, 90, 150, 180):
    u_ = np.array([1.0, 0.0, 0.0])
    v_ = np.array([np.cos(np.radians(deg)), np.sin(np.radians(deg)), 0.0])
    print(f"two unit vectors {deg:3d} deg apart: the midpoint of the straight chord has norm {np.linalg.norm((u_ + v_) / 2):.3f}")

# %% [markdown]
# - **内角の和**：球面の三角形は 180° を超え、双曲面の三角形は 180° に届きません。差は三角形が大きいほど大きく、小さな三角形ではどちらも平面の 180° に近づきます（曲率は「小さな範囲では平ら」に見える）。
#   球面の八分円の三角形（3つの角がすべて直角）は 270° です。
# - **均一な曲率**：同じ三角形を球面のばらばらな位置に移しても、内角の和は丸め誤差まで同じです（§6.2 の「均一な曲率」）。
# - **円周の長さ**：半径 $r$ の円の周は、平面で $2\pi r$、球面で $2\pi\sin r$（$r = \pi/2$ を過ぎると縮む）、双曲面で $2\pi\sinh r$（$r$ とともに **指数的に** 増える）です。
#   木構造のように「深さとともに指数的に増える」階層を埋め込むには、中心から離れるほど空間が指数的に広がる双曲空間が向いている、というのが講義の見通し（第12回）の根拠です。
#   球面では逆に、遠くへ行くほど場所が足りなくなります。
# - **直線で結べない**：球面上の2点を結ぶ直線（弦）の中点は球面の内側にあり、正規化し直さないと球面に戻りません（講義の「遠い二点を直線で結ぶことができない」）。
#   正反対の2点では中点が原点になり、正規化の向きさえ決まりません（ノート 04 §2 のクランプする ε が守るのは、こういう点です）。
#
# 講義のまとめのとおり、空間の曲率は表現したい構造に応じて選ぶものです。球面（正の曲率）はノルムの混乱を断ち切るのに向き、階層構造には双曲空間（負の曲率）が向くことがあります。

# %% [markdown]
# ## まとめ：球面という設計の選択
#
# 講義の最後のまとめの表に、2つのノートで確かめたことを並べます。
#
# | 概念 | 講義の定義 | 本回での役割（講義） | ノート 04 と 06 で確かめたこと |
# |---|---|---|---|
# | 球面制約 | すべての埋め込みを単位球面 $\mathbb{S}^{d-1}$ 上に置く | ノルムの混乱を根本から断ち切る設計 | $\mathbb{R}^{768}$ の単位ベクトルは 767 次元の $\mathbb{S}^{767}$ の上にある（04 §1）。重みを球面に保つのは初期化ではなく毎ステップのリトラクション（04 §3）。リーマン勾配と射影勾配法の違いは η の次数に出る（06 §2） |
# | nGPT | 重みも埋め込みも完全に正規化した Transformer 設計 | 球面制約の実用例。学習効率の改善も報告 | この小さなモデルでは、ステップ数でも時間でも速くならない（06 §3.1）。仮説はここでは支えられない（06 §3.2）。論文との違いは位置（`wpe` と RoPE）と MLP（ReLU と SwiGLU）（06 §4） |
# | プラネタリウム・メタファー | 球面をドーム、埋め込みを星として捉える | 角度が意味を担うという直感の可視化 | 学習した `wte` の星図で、母音が1つの星座になる。コサインと内積は単位ベクトルのときだけ一致する（06 §5、§6） |
# | vMF 分布 | 球面上の方向分布。集中度 κ が分布の鋭さを制御 | Softmax との形式的対応。第4回と第7回に接続 | 平均方向の近くでは角度についてのガウス分布（04 §4）。softmax は vMF 混合の事後確率で、microgpt では $s_z$ が κ、温度は κ を割る（06 §5）。条件付けなら κ = ‖m‖/σ² は厳密（06 §1.1） |
# | 球面設計の限界 | ノルムに意味がある場合、回帰タスク等では適さない | 「球面が常に良い」という過剰一般化を防ぐ | rmsnorm モードでは隠れ状態のノルムが確信度を運ぶ。球面モードは角度と $s_z$ に載せ替える（06 §7）。曲率は表したい構造で選ぶ（06 §8） |

# %% [markdown]

# %% [markdown]
# @@END@@
