// planetarium_text.js -- every word the planetarium page shows, in Japanese (the default, with lecture 3's terms)
// and English. {name} marks a value the page puts in. Only characters the embedded font has are used here
// (planetarium.py subsets IPAexGothic to this file's characters, and a test checks the page's text against it).
"use strict";

const PlanetText = {
  ja: {
    docTitle: "プラネタリウム — microgpt-sphere",
    title: "プラネタリウム：単位球面の上で学習を再生する",
    subtitle: "第3回「プラネタリウムの建設」── 星（トークンの埋め込み）は、単位球面上の向きで意味を持つ。" +
      "ドラッグまたは矢印キーで回転、星をクリックで選択。",
    subtitleShort: "星（トークンの埋め込み）は、単位球面上の向きで意味を持つ。",
    hint: "▶ で学習を再生 · 名前を入力 · ガイドツアー",
    capKappa: "κ = {k}",
    lang: "English", langLabel: "Switch to English",
    tourOpen: "ガイドツアー", tourBack: "◀ 前へ", tourNext: "次へ ▶", tourClose: "閉じる", tourCount: "{i} / {n}",
    play: "▶ 再生", pause: "‖ 停止", prevSnap: "◀", nextSnap: "▶",
    prevSnapLabel: "前のスナップショットへ", nextSnapLabel: "次のスナップショットへ",
    speed: "速さ", replayLabel: "再生位置（学習ステップ）",
    step: "学習ステップ {s} / {n}",
    stepAt: "数値はスナップショット {i} / {m}（ステップ {k}）のもの",
    stepBetween: "ステップ {a} と {b} のスナップショットの間（星は大円に沿って補間）。数値はステップ {a} のもの",
    thinned: "（履歴の {r} 個のスナップショットのうち {m} 個を収録）",
    lossTitle: "損失の推移",
    lossX: "学習ステップ", lossY: "損失", lossTrain: "訓練（移動平均）", lossVal: "検証", lossNow: "いま",
    prefix: "名前の書き出し（接頭辞）：各位置の隠れ状態 h をたどる",
    placeholder: "例：{ex}（入力してください）",
    prefixOk: "{n} 個の位置：BOS{chars}。最後の位置 ◎ が次の文字を読み出す（BOS（終わり）なら名前はそこで終わる）。",
    prefixFolded: "大文字は語彙に合わせて小文字にしました。",
    prefixUnknown: "{run}：「{c}」は語彙にない文字です。道はその手前まで。",
    prefixCropped: "{run}：学習と同じく、最初の {T} 個の位置（BOS と {k} 文字）で切りました。",
    temp: "温度 T",
    tempLabel: "T = {T}：集中度 κ = s_z / T", tempLabelRms: "T = {T}：ロジットを T で割る",
    layers: "表示するもの",
    optStars: "入力の星（埋め込み wte の行）",
    optOut: "出力の星（lm_head の行）と vMF キャップ", optOutRms: "出力の星（lm_head の行）",
    optAllCaps: "vMF キャップを上位 3 文字すべてに", optTrueH: "出力の星を h からの本当の角度に置く",
    optPath: "名前の道（隠れ状態 h と残差ステップ）",
    optDrift: "リトラクション前の位置（Adam の一歩）",
    optTrail: "星の軌跡（ステップ 0 から）",
    probsTitle: "次の文字の確率 softmax(z / T)（上位 8 文字）",
    probsNone: "接頭辞を直すと表示します",
    attnTitle: "最後の位置のアテンション重み（層・ヘッドごと）",
    attnHead: "層{l} ヘッド{h}",
    readout: "次の文字：{list}",
    readoutSep: "・",
    readoutNone: "次の文字：—",
    faceH: "h を正面に", faceHLabel: "{run} の隠れ状態 h を正面に向ける",
    skyLabel: "{run} の空。矢印キーで回転、Enter で h を正面に。上位の文字：{list}",
    starPick: "星を選ぶ", starNone: "（なし）",
    cosHint: "星をクリック（または上の一覧から選択）すると、{C} 次元での本当のコサインで近い星を表示します。2 つ選ぶとその 2 つのコサイン。",
    cosLine: "{run}：cos θ = <b>{c}</b>（{C} 次元）、図の上では {c3}",
    nearLine: "{run}：「{a}」に近い星（{C} 次元の cos）：{list}",
    sphere: "球面モード（nGPT）", rmsnorm: "RMSNorm（元の microgpt）", sphereShort: "球面（nGPT）",
    rmsnormShort: "RMSNorm",
    info1: "ステップ <b>{s}</b> · 訓練損失 <b>{tl}</b>（移動平均）· 検証損失 <b>{vl}</b>（ステップ {vs}）",
    infoUnit: "どの星もノルム 1：意味は向きだけが担う",
    infoNorm: "星の大きさ＝ノルム |wte_i|（{lo}〜{hi}）：球面モードが捨てるもの",
    infoDrift: "Adam の一歩で星は球面から最大 {d} 外れ、リトラクションが引き戻す（図では再生の間ずっと ×{G}）",
    infoDrift0: "ステップ 0：まだ Adam の一歩はない（初期化の直後）",
    capWhole: "{c}：κ = {k}、キャップは球面全体",
    capAnti: "（反対側）",
    farSide: "（裏）",
    bosEnd: "BOS（終わり）",
    quickHeading: "名前と再生", controlsHeading: "設定と数値", skiesHeading: "空（各 run の星）", notesHeading: "この図の読み方",
    legendIn: "入力の星", legendOut: "出力の星", legendBos: "BOS（名前の始まり・終わり）", legendH: "h（最後の位置）",
    legendCap: "vMF キャップ（1 位）", legendCaps: "vMF キャップ（上位 3）", legendSize: "（大きさ＝ノルム）", legendUnit: "どれもノルム 1",
    capLine: "○ キャップは、その文字自身の vMF 密度 exp(κ w·h) がピークの 1/e に落ちる範囲で、半径 arccos(1 − 1/κ) は" +
      " κ = s_z / T だけで決まり、h にはよりません。どの文字が勝つかは全文字の κ w·h の比べ合いで決まるので、最も確率の" +
      "高い文字のキャップの外に h があることも、キャップの中でほかの文字が勝つこともあります。",
    announceTop: "{run}：次の文字 {list}。",
    announcePause: "停止：ステップ {s}。", announceStep: "ステップ {s}。",
    skip: "空へ移動", tempValue: "T = {T}",
    lossSummary: "損失の推移。ステップ {s}：{list}", lossRun: "{run} の訓練損失 {tl}、検証損失 {vl}",
    announceName: "名前「{p}」。",
    info2: "この時点の埋め込みの分散のうち {p}% を地図の 3 方向が説明（射影して単位球面 S² に正規化）。薄い星ほど射影で長さを失っている",
    // the notes: the page puts together those that speak of what its skies draw ({C}: the width, {p}: the share of
    // the replay's time the first tenth of the steps takes on this page)
    notes: {
      projection: "<b>射影。</b>{C} 次元の星は描けないので、最後のスナップショットの埋め込み wte の上位3主成分の方向に射影し、" +
        "もう一度単位球面 S² に正規化して描いています。2 つめ以降の空の基底は、共通の文字が 1 つめの空とできるだけ同じ場所に" +
        "来るよう回転してあります（直交プロクラステス）。図の上の角度は本当の角度から歪みます。射影で長さの多くを失った星ほど薄く" +
        "描きます。出力の星は、h との角度だけは正確になるよう、h を通る大円に沿って本当の角度 arccos(w·h) の位置に置きます" +
        "（オプションで切り替え）：h に近い出力の星ほど、その文字が次に来やすい。正確な値（コサイン、確率）は数値で示します。",
      caps: "<b>vMF キャップ。</b>確率が 1 位の文字（オプションで上位 3 文字）の出力の星 w_k を囲む円は、vMF 分布 exp(κ w_k·h) の密度がピークの 1/e に落ちる角度 " +
        "cos θ = 1 − 1/κ です（κ = s_z,k / T）。κ が大きいほどキャップは小さく、その文字の確率は h の向きに敏感です。" +
        "|κ| ≦ 1/2 ならキャップは球面全体。s_z が負の文字は、h が w_k から離れるほど確率が上がります：密度のピークは反対側の点 −w_k" +
        " にあり、キャップはそこに破線で描きます。",
      capsRms: "RMSNorm ではノルムが固定されず、ロジットはコサインではないので vMF との対応は" +
        "成り立ちません（講義の「前提が崩れる場合」）：RMSNorm の空にはキャップを描かず、◆ の大きさで確率だけを示します。",
      rmsOnly: "<b>確率と星の大きさ。</b>RMSNorm ではノルムが固定されません。ロジットは出力の星と h の内積で、" +
        "長さにもよるので、h との角度だけでは確率は決まりません：◆ の大きさが確率、入力の星の大きさがノルム |wte_i| です。",
      retraction: "<b>リトラクション。</b>球面モードでは Adam の一歩で星が単位球面の外（や内）にずれ、リトラクション w ← w/|w| が" +
        "半径方向に引き戻します。ピンクの線と輪は外へ（|w| > 1）、青は内へ（|w| < 1）のずれ。ずれは小さいので図では拡大しています。" +
        "倍率は再生の間ずっと同じなので、学習率が 0 に向かって減るにつれてずれが縮むのが見えます。",
      pathSphere: "<b>名前の道。</b>各位置の隠れ状態 h（埋め込みの後、各ブロックの後）を点で、残差ステップ " +
        "h ← Norm(h + α(Norm(f(h)) − h)) を大円の弧（{C} 次元の弧の射影）で結びます。数字は位置、◎ は最後の位置。" +
        "破線は位置から位置への移り変わり、点線は最後の位置でブロックが向かう先 Norm(f(h))。",
      pathRms: "<b>名前の道。</b>各位置の隠れ状態 h（埋め込みの後、各ブロックの後）の向きを点で、RMSNorm の残差ステップ " +
        "h ← h + f(RMSNorm(h)) の前後を大円の弧（{C} 次元の弧の射影）で結びます（h の長さの変化は描きません）。" +
        "数字は位置、◎ は最後の位置。破線は位置から位置への移り変わり。",
      pathBoth: "<b>名前の道。</b>各位置の隠れ状態 h（埋め込みの後、各ブロックの後）の向きを点で、残差ステップの前後を" +
        "大円の弧（{C} 次元の弧の射影）で結びます。残差ステップは、球面モードでは h ← Norm(h + α(Norm(f(h)) − h))、" +
        "RMSNorm では h ← h + f(RMSNorm(h))（h の長さの変化は描きません）。数字は位置、◎ は最後の位置。破線は位置から位置への" +
        "移り変わり、点線（球面モードの空だけ）は最後の位置でブロックが向かう先 Norm(f(h))。",
      replay: "<b>再生。</b>スナップショットは学習の初めほど密です。再生の時間は星の動きに合わせて配分します：" +
        "スナップショットの間の時間は、{q}% を星（入力と出力）が {C} 次元で動く角度に、残りの {r}% を学習ステップの数に比例させます。" +
        "星は学習の初めによく動くので、このページでは最初の 10% のステップに再生時間の {p}% を使います。" +
        "スナップショットの間は星を大円に沿って補間します（slerp）。確率などの数値は、いまの位置の直前のスナップショットで計算したものです。" +
        "ページは重みをスナップショット間の差分として 8 ビットで保存しているので、確率は学習した重みそのものでの値と最大 0.001 ほど違います。",
    },
    // the tour: its steps are chosen from the runs on the page ({i} is the step's number, {run} a sky's title)
    tour: {
      stars1: "<b>{i}. 星。</b>白い点 ● は入力の星（埋め込み wte の行）、オレンジの ◆ は出力の星（lm_head の行）、金の点は BOS" +
        "（名前の始まりと終わりの記号）。この空は {run} の星です。ドラッグか矢印キーで回してみましょう。",
      starsMany: "<b>{i}. 星。</b>白い点 ● は入力の星（埋め込み wte の行）、オレンジの ◆ は出力の星（lm_head の行）、金の点は BOS" +
        "（名前の始まりと終わりの記号）。{n} つの空：{list}。カメラは共通で、どの空も一緒に回ります。同じ文字の位置は空どうしで" +
        "中央値 {deg}° 離れています（地図の 3 方向は run ごとに違い、回転でそろえても重なりきりません）。",
      replay: "<b>{i}. 再生。</b>ステップ 0（初期化の直後）から学習を再生します。星が動いて、似た役割の文字が集まっていきます。" +
        "再生の時間は、星がよく動く区間ほど長く取ります。速さは「速さ」で変えられます。",
      path: "<b>{i}. 名前の道。</b>「{ex}」と入力しました。緑の点が各位置の隠れ状態 h、弧が残差ステップ、◎ が最後の位置です。" +
        "カメラを {run} の h に向けました。各空の下と確率の一覧に、次の文字の上位 3 つが出ます（BOS（終わり）は名前がそこで終わること）。",
      caps: "<b>{i}. キャップと温度。</b>{run} の空で、上位の文字の出力の星を囲む円が vMF キャップ（κ = s_z / T）：その文字自身の" +
        "密度の広がりで、その文字が勝つ範囲ではありません。温度を下げる（T = 0.5）と κ が倍になり、キャップは小さく、確率は上位に集まります。",
      tempRms: "<b>{i}. 温度。</b>温度を下げる（T = 0.5）と確率は上位の文字に集まり、◆ の大きさ（確率）が変わります。RMSNorm の" +
        "ロジットはコサインではないので、確率は ◆ の大きさだけで示します。",
      retraction: "<b>{i}. リトラクション。</b>{run} の空で学習の初めに戻り、Adam の一歩で球面から押し出された位置を線と輪で示します。" +
        "再生すると、学習率が下がるにつれて輪は小さくなり、星は球面に留まります。",
    },
  },
  en: {
    docTitle: "Planetarium — microgpt-sphere",
    title: "Planetarium: replaying training on the unit sphere",
    subtitle: "Lecture 3, “Building the planetarium”: stars (token embeddings) get their meaning from their " +
      "direction on the unit sphere. Drag or use the arrow keys to rotate, click stars to pick them.",
    subtitleShort: "Stars (token embeddings) get their meaning from their direction on the unit sphere.",
    hint: "▶ replays training · type a name · the guided tour",
    capKappa: "κ = {k}",
    lang: "日本語", langLabel: "日本語に切り替える",
    tourOpen: "Guided tour", tourBack: "◀ Back", tourNext: "Next ▶", tourClose: "Close", tourCount: "{i} / {n}",
    play: "▶ Play", pause: "‖ Pause", prevSnap: "◀", nextSnap: "▶",
    prevSnapLabel: "Previous snapshot", nextSnapLabel: "Next snapshot",
    speed: "Speed", replayLabel: "Replay position (training step)",
    step: "training step {s} / {n}",
    stepAt: "numbers of snapshot {i} / {m} (step {k})",
    stepBetween: "between the snapshots of steps {a} and {b} (stars interpolated along great circles); numbers of step {a}",
    thinned: " ({m} of the history's {r} snapshots on this page)",
    lossTitle: "Loss during training",
    lossX: "training step", lossY: "loss", lossTrain: "train (running mean)", lossVal: "val", lossNow: "now",
    prefix: "Start of a name: the hidden state h at each position",
    placeholder: "e.g. {ex} (type here)",
    prefixOk: "{n} positions: BOS{chars}; the last one ◎ reads out the next character (BOS (end) ends the name).",
    prefixOk1: "1 position: BOS; it reads out the first character.",
    prefixFolded: "Upper case was folded to the vocabulary's lower case.",
    prefixUnknown: "{run}: “{c}” is not in the vocabulary; the path stops before it.",
    prefixCropped: "{run}: cropped to the first {T} positions (BOS and {k} characters), as in training.",
    temp: "Temperature T",
    tempLabel: "T = {T}: concentration κ = s_z / T", tempLabelRms: "T = {T}: the logits divided by T",
    layers: "Show",
    optStars: "Input stars (rows of the embedding wte)",
    optOut: "Output stars (rows of lm_head) and vMF caps", optOutRms: "Output stars (rows of lm_head)",
    optAllCaps: "vMF caps for all top 3 characters", optTrueH: "Output stars at their true angle from h",
    optPath: "A name's path (hidden states h, residual steps)",
    optDrift: "Position before the retraction (Adam's step)",
    optTrail: "Star trails (from step 0)",
    probsTitle: "Next-character probabilities softmax(z / T) (top 8)",
    probsNone: "shown once the prefix is valid",
    attnTitle: "Attention weights of the last position (per layer and head)",
    attnHead: "layer {l} head {h}",
    readout: "next: {list}",
    readoutSep: " · ",
    readoutNone: "next: –",
    faceH: "face h", faceHLabel: "Turn the camera to {run}'s hidden state h",
    skyLabel: "Sky of {run}. Arrow keys rotate, Enter faces h. Top characters: {list}",
    starPick: "Pick a star", starNone: "(none)",
    cosHint: "Click a star (or pick one above) to list its nearest stars by the true cosine in {C} dimensions; pick two for their cosine.",
    cosLine: "{run}: cos θ = <b>{c}</b> ({C}-D); on the map {c3}",
    nearLine: "{run}: nearest to “{a}” (cos in {C}-D): {list}",
    sphere: "sphere mode (nGPT)", rmsnorm: "RMSNorm (the original microgpt)", sphereShort: "sphere (nGPT)",
    rmsnormShort: "RMSNorm",
    info1: "step <b>{s}</b> · train loss <b>{tl}</b> (running mean) · val loss <b>{vl}</b> (step {vs})",
    info2: "the map's 3 directions explain {p}% of this snapshot's embedding variance (projected, re-normalized onto S²); the fainter a star, the more of its length the projection lost",
    infoUnit: "every star has norm 1: only its direction carries meaning",
    infoNorm: "star size = norm |wte_i| ({lo} to {hi}): what sphere mode throws away",
    infoDrift: "Adam's step pushed the stars up to {d} off the sphere; the retraction pulls them back (map: ×{G} for the whole replay)",
    infoDrift0: "step 0: no Adam step yet (right after initialization)",
    capWhole: "{c}: κ = {k}, the cap is the whole sphere",
    capAnti: " (opposite)",
    farSide: " (far)",
    bosEnd: "BOS (end)",
    quickHeading: "Name and replay", controlsHeading: "Settings and numbers", skiesHeading: "Skies (the stars of each run)",
    notesHeading: "How to read this map",
    legendIn: "input star", legendOut: "output star", legendBos: "BOS (start and end of a name)", legendH: "h (last position)",
    legendCap: "vMF cap (the likeliest)", legendCaps: "vMF caps (top 3)", legendSize: "(size = norm)", legendUnit: "all of norm 1",
    capLine: "○ A cap is where that character's own vMF density exp(κ w·h) falls to 1/e of its peak: its radius " +
      "arccos(1 − 1/κ) depends on κ = s_z / T alone, not on h. Which character wins is decided by comparing κ w·h " +
      "across all characters, so h can lie outside the likeliest character's cap, and inside a cap while another " +
      "character is likelier.",
    announceTop: "{run}: next {list}.",
    announcePause: "Paused at step {s}.", announceStep: "Step {s}.",
    skip: "Skip to the skies", tempValue: "T = {T}",
    lossSummary: "Loss during training. Step {s}: {list}", lossRun: "{run}: train loss {tl}, val loss {vl}",
    announceName: "Name “{p}”.",
    notes: {
      projection: "<b>Projection.</b> {C}-dimensional stars cannot be drawn: they are projected onto the top 3 principal " +
        "directions of the last snapshot's embeddings (wte) and re-normalized onto the unit sphere S². Every sky after " +
        "the first is turned so that the characters they share sit as near as they can to the first sky's (orthogonal " +
        "Procrustes). Angles on the map are distorted; a star is the fainter the more of its length the projection " +
        "lost. Output stars are placed at their true angle arccos(w·h) from h, along the map's great circle through h " +
        "(an option): their nearness to h is the real one. The exact values (cosines, probabilities) are shown as numbers.",
      caps: "<b>vMF caps.</b> The circle around the output star w_k of the likeliest character (of each of the top 3, " +
        "as an option) is where the vMF density exp(κ w_k·h) falls to 1/e of its peak: cos θ = 1 − 1/κ with κ = s_z,k / T. The larger κ, the smaller the cap " +
        "and the more that character's probability depends on the direction of h; for |κ| ≦ 1/2 the cap is the whole " +
        "sphere. A character with a negative s_z gets likelier the further h points from w_k: its density peaks at " +
        "the opposite point −w_k, where its cap is drawn dashed.",
      capsRms: " In RMSNorm the norms are free and the logits are no cosines, so the vMF correspondence does not hold " +
        "(the lecture's caution): the RMSNorm sky has no caps, ◆'s size shows the probability.",
      rmsOnly: "<b>Probabilities and star sizes.</b> In RMSNorm the norms are free. A logit is the dot product of an " +
        "output star with h and depends on their lengths too, so the angle from h alone does not decide the " +
        "probability: ◆'s size shows the probability, an input star's size its norm |wte_i|.",
      retraction: "<b>Retraction.</b> In sphere mode Adam's step moves each star off the unit sphere (outward or inward) and " +
        "the retraction w ← w/|w| pulls it back along the radius. Pink lines and rings: pushed out (|w| > 1); blue: " +
        "pushed in (|w| < 1). The offsets are small, so the map exaggerates them, by one factor for the whole replay: " +
        "as the learning rate decays to 0 the offsets visibly shrink.",
      pathSphere: "<b>A name's path.</b> Dots are the hidden state h at each position (after the embedding, after each " +
        "block); arcs are the residual steps h ← Norm(h + α(Norm(f(h)) − h)), great-circle arcs in {C} " +
        "dimensions, projected. Numbers are positions, ◎ the last one. Dashed: from one position to the next; " +
        "dotted: where the block pulls the last position, Norm(f(h)).",
      pathRms: "<b>A name's path.</b> Dots are the direction of the hidden state h at each position (after the " +
        "embedding, after each block); great-circle arcs ({C}-dimensional arcs, projected) join the two sides of " +
        "RMSNorm's residual step h ← h + f(RMSNorm(h)) (the change of h's length is not drawn). Numbers are " +
        "positions, ◎ the last one. Dashed: from one position to the next.",
      pathBoth: "<b>A name's path.</b> Dots are the direction of the hidden state h at each position (after the " +
        "embedding, after each block); great-circle arcs ({C}-dimensional arcs, projected) join the two sides of each " +
        "residual step: h ← Norm(h + α(Norm(f(h)) − h)) in sphere mode, h ← h + f(RMSNorm(h)) in RMSNorm (the change " +
        "of h's length is not drawn). Numbers are positions, ◎ the last one. Dashed: from one position to the next; " +
        "dotted (sphere skies only): where the block pulls the last position, Norm(f(h)).",
      replay: "<b>Replay.</b> Snapshots are densest early in training. The replay spends its time where the stars " +
        "move: between two snapshots, {q}% of the time in proportion to the angle the stars (input and output) move " +
        "in {C} dimensions and the other {r}% in proportion to training steps. The stars move most early on, so on " +
        "this page the first 10% of the steps take {p}% of the replay. Between snapshots the stars move along great " +
        "circles (slerp). Probabilities and other numbers are those of the last snapshot at or before the current " +
        "step. The page stores the weights as 8-bit differences between snapshots, so its probabilities differ from " +
        "those of the run's own weights by up to about 0.001.",
    },
    tour: {
      stars1: "<b>{i}. Stars.</b> White dots ● are input stars (rows of the embedding wte), orange ◆ output stars (rows " +
        "of lm_head), the gold dot is BOS (the mark that starts and ends a name). This sky holds the stars of {run}. " +
        "Drag it, or use the arrow keys.",
      starsMany: "<b>{i}. Stars.</b> White dots ● are input stars (rows of the embedding wte), orange ◆ output stars " +
        "(rows of lm_head), the gold dot is BOS (the mark that starts and ends a name). {n} skies: {list}. One camera " +
        "turns them all. The same character sits a median {deg}° apart from one sky to another (each run's map has its " +
        "own 3 directions; turned to match, they still do not coincide).",
      replay: "<b>{i}. Replay.</b> Training replays from step 0 (right after initialization): the stars move, and " +
        "characters with similar roles gather. The replay spends its time where the stars move most. Change the speed " +
        "with “Speed”.",
      path: "<b>{i}. A name's path.</b> “{ex}” is typed: green dots are the hidden state h at each position, arcs the " +
        "residual steps, ◎ the last position. The camera now faces {run}'s h. The top 3 next characters are under each " +
        "sky and in the list of probabilities (BOS (end) means the name ends there).",
      caps: "<b>{i}. Caps and temperature.</b> On the sky of {run}, the circles around the top characters' output stars " +
        "are vMF caps (κ = s_z / T): each character's own density, not where it wins. Lowering the temperature " +
        "(T = 0.5) doubles κ: the caps shrink and the probability gathers on the top characters.",
      tempRms: "<b>{i}. Temperature.</b> Lowering the temperature (T = 0.5) gathers the probability on the top " +
        "characters, and the sizes of ◆ (the probabilities) change. RMSNorm's logits are no cosines: the sizes of " +
        "◆ alone show the probabilities.",
      retraction: "<b>{i}. Retraction.</b> On the sky of {run}, back near the start of training: lines and rings " +
        "show where Adam's step pushed each star off the sphere. Play on: as the learning rate decays the rings " +
        "shrink, and the stars stay on the sphere.",
    },
  },
};

if (typeof module !== "undefined") module.exports = PlanetText;
