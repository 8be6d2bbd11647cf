// step_player_text.js -- every word the step player page shows, in Japanese (the default, with the textbook's terms)
// and English. {name} marks a value the page puts in; keys ending in Html hold markup of this file's own.
// step_player.py subsets IPAexGothic to this file's characters (and the others of the page): write no character
// that is not here.
"use strict";

const StepText = {
  ja: {
    docTitle: "ステッププレーヤー — microgpt-sphere",
    title: "ステッププレーヤー：gpt() を 1 行ずつ",
    introHtml: "{what}を、名前「{name}」の各位置で 1 行ずつ実行した記録です。" +
      "<kbd>→</kbd> で 1 行進む · <kbd>↓</kbd> でループを飛ばす · <b>逆伝播</b> で勾配をたどる",
    introOne: "<code lang=\"en\">{fn}()</code>（{norm}）",
    introTwo: "<code lang=\"en\">gpt()</code>（RMSNorm）と <code lang=\"en\">gpt_sphere()</code>（球面）",
    lang: "English", langLabel: "Switch to English",
    barHeading: "操作",
    back: "← 戻る", step: "進む →", over: "↓ ステップオーバー", prevPos: "◀ 前の位置", nextPos: "次の位置 ▶",
    mode: "逆伝播",
    backTip: "1 ステップ戻る（← キー）", stepTip: "1 ステップ進む（→ キー）",
    overTip: "下の階層を飛ばして進む。for の行ではループの終わりまで（↓ または n キー）",
    prevPosTip: "前の位置へ（PageUp）", nextPosTip: "次の位置へ（PageDown）",
    modeTip: "逆伝播モード：コードを下から上へ読み、勾配をたどる（b キー）",
    sliderLabel: "記録の中のステップ",
    stepOf: "ステップ {i} / {n}",
    stepOfTwo: "ステップ {i} / {n}（球面 {j} / {m}）",
    whereHtml: "<b>位置 {p}</b> / {last}：トークン「{tok}」を読み、次の文字「{tgt}」を予測する",
    whereBackHtml: "<b>逆伝播</b>：位置 {p} / {last} の計算を逆順にたどる（トークン「{tok}」→ 次の文字「{tgt}」）",
    rmsnorm: "RMSNorm", sphere: "球面", rmsnormLong: "RMSNorm（元の microgpt）", sphereLong: "球面（nGPT）",
    fresh: "新しく初期化したモデル（学習前）",
    trained: "{run}（{s} ステップ学習済み）",
    nameLoss: "名前全体の損失 {loss}",
    codeHeading: "コード",
    varsHeading: "この行が変えた変数（実行した直後の値）",
    varsHeadingBack: "この行が作った変数の勾配 ∂L/∂変数",
    noVars: "この行で変わった変数はありません",
    args: "引数", returned: "戻り値",
    length: "長さ {n}", shape: "{r} × {c}", scale: "色 ±{m}",
    noGrad: "（勾配なし）",
    cellTitle: "{name}[{i}] = {v}",
    cellTitle2: "{name}[{i}][{j}] = {v}",
    stripLabel: "{name}：{n} 個の値 {list}",
    normRms: "残差の流れ |x| = {n}（x は {len} 次元。rmsnorm の直後なら約 √{C} = {s}）",
    normSphere: "残差の流れ |h| = {n}（h は {len} 次元。球面の上ではいつも 1）",
    normWide: "|{v}| = {n}（{v} は MLP の中の {len} 次元のベクトル）",
    normGrad: "· 勾配 |∂L/∂{v}| = {g}",
    normNone: "残差 {v} はまだありません",
    attnHeading: "アテンション重み（層 {l}、ヘッドごと）",
    attnNone: "この位置ではまだ計算していません",
    attnHead: "ヘッド {h}",
    attnCell: "ヘッド {h}：位置 {t}（「{c}」）へ {v}",
    kvHeading: "KV キャッシュ（層 × 位置）",
    kvLayer: "層 {l}：{n} / {T} 個の位置",
    kvLabel: "KV キャッシュ：層 {l} は {n} 個の位置のキーと値を保持（最大 {T}）",
    probsHeading: "位置 {p} の予測分布（語彙 {V} 文字の確率、上位）",
    target: "正解",
    lossLine: "正解「{c}」の確率 p = {p} → 損失 −log p = {loss}",
    gradsHeading: "パラメータの勾配",
    gradsNote: "逆伝播はここで終わり：名前全体の損失 {loss} の勾配がパラメータに届きました。" +
      "色は行列ごとの最大 |勾配| で正規化しています。",
    gradsMax: "{key}（{shape}）最大 |勾配| {m}",
    gradsRows: "勾配のある行（名前に出てくるトークン）：{list}",
    gradsHint: "逆伝播の終わり（End キー）でパラメータの勾配を表示します",
    lineGo: "{n} 行目まで実行",
    differs: "（球面で変わった行）",
    inside: "{fn}() の中（{caller} の {l} 行目から）",
    announce: "{panel}：{l} 行目 {code}。{vars}",
    announceVars: "変化：{list}。",
    announceEnd: "記録の端です。",
    sayBackward: "逆伝播モード：ステップを逆順にたどり、勾配を表示します。", sayForward: "順伝播モード。",
    helpHeading: "使い方と読み方",
    helpHtml: [
      "<b>→ / ←</b>：1 ステップ進む / 戻る。<b>↓</b> または <b>n</b>：ステップオーバー（下の階層の関数を飛ばす。" +
        "for の行では、そのループが終わるところまで）。<b>PageDown / PageUp</b>：次の位置 / 前の位置。" +
        "<b>Home / End</b>：最初 / 最後。<b>b</b>：逆伝播モード。<b>行番号</b>をクリック（または Tab で移り " +
        "↑↓ で選んで Enter）：その行が次に実行されるところまで進む。",
      "ハイライトした行は、いま実行した行です。右（スマートフォンでは下）の変数は、その行を実行した直後の値です。" +
        "ベクトルは色のついたセルの列で、赤は正、青は負、濃さはそのベクトルの最大 |値| に対する大きさです。" +
        "セルにカーソルを置くか、Tab で列に移ると数値が出ます。",
      "各位置で gpt() は 1 回呼ばれ、そのトークンのキーと値を KV キャッシュに足し、それまでの位置すべてに" +
        "アテンションします。返したロジットの softmax が、次の文字の予測分布です。",
      "<b>逆伝播</b>モードでは、backward() と同じくステップを逆順にたどり、各行が作った変数の勾配（∂L/∂変数、" +
        "L は名前全体の平均損失）を同じセルで表示します。最初の行まで戻ると、パラメータ（wte、wpe、各層の行列）の" +
        "勾配が見えます。",
      "RMSNorm と球面を並べると、残差のノルムの違いが見えます：球面（gpt_sphere）の h はいつも |h| = 1、" +
        "RMSNorm の x は rmsnorm の直後に約 √n_embd です。球面で変わった行には左に印があります。",
    ],
    bos: "BOS",
  },
  en: {
    docTitle: "Step player — microgpt-sphere",
    title: "Step player: gpt() line by line",
    introHtml: "A recording of {what}, run line by line at each position of the name “{name}”. " +
      "<kbd>→</kbd> steps one line · <kbd>↓</kbd> skips a loop · <b>Backward</b> follows the gradients",
    introOne: "<code>{fn}()</code> ({norm})",
    introTwo: "<code>gpt()</code> (RMSNorm) and <code>gpt_sphere()</code> (sphere)",
    lang: "日本語", langLabel: "日本語に切り替え",
    barHeading: "Controls",
    back: "← Back", step: "Step →", over: "↓ Step over", prevPos: "◀ Position", nextPos: "Position ▶",
    mode: "Backward",
    backTip: "One step back (← key)", stepTip: "One step (→ key)",
    overTip: "Step without going one level down; on a for line, to the end of the loop (↓ or n key)",
    prevPosTip: "Previous position (PageUp)", nextPosTip: "Next position (PageDown)",
    modeTip: "Backward mode: read the code bottom to top, following the gradients (b key)",
    sliderLabel: "Step in the recording",
    stepOf: "Step {i} / {n}",
    stepOfTwo: "Step {i} / {n} (sphere {j} / {m})",
    whereHtml: "<b>Position {p}</b> / {last}: reads the token “{tok}”, predicts the next character “{tgt}”",
    whereBackHtml: "<b>Backward</b>: position {p} / {last} in reverse (the token “{tok}”, the next character “{tgt}”)",
    rmsnorm: "RMSNorm", sphere: "Sphere", rmsnormLong: "RMSNorm (the original microgpt)", sphereLong: "Sphere (nGPT)",
    fresh: "a freshly initialized model (untrained)",
    trained: "{run} (trained for {s} steps)",
    nameLoss: "the name's loss {loss}",
    codeHeading: "Code",
    varsHeading: "What this line changed (right after it ran)",
    varsHeadingBack: "Gradients of what this line made, ∂L/∂variable",
    noVars: "This line changed no variable",
    args: "arguments", returned: "returned",
    length: "length {n}", shape: "{r} × {c}", scale: "color ±{m}",
    noGrad: "(no gradient)",
    cellTitle: "{name}[{i}] = {v}",
    cellTitle2: "{name}[{i}][{j}] = {v}",
    stripLabel: "{name}: {n} values {list}",
    normRms: "residual stream |x| = {n} (x has {len} dimensions; right after rmsnorm about √{C} = {s})",
    normSphere: "residual stream |h| = {n} (h has {len} dimensions; on the sphere always 1)",
    normWide: "|{v}| = {n} ({v} is the MLP's {len}-dimensional hidden vector)",
    normGrad: "· gradient |∂L/∂{v}| = {g}",
    normNone: "no residual {v} yet",
    attnHeading: "Attention weights (layer {l}, per head)",
    attnNone: "not computed yet at this position",
    attnHead: "head {h}",
    attnCell: "head {h}: to position {t} (“{c}”) {v}",
    kvHeading: "KV cache (layers × positions)",
    kvLayer: "layer {l}: {n} / {T} positions",
    kvLabel: "KV cache: layer {l} holds the keys and values of {n} positions (at most {T})",
    probsHeading: "Predicted distribution at position {p} (top of the {V}-character vocabulary)",
    target: "target",
    lossLine: "target “{c}” has p = {p} → loss −log p = {loss}",
    gradsHeading: "Gradients of the parameters",
    gradsNote: "The backward pass ends here: the gradient of the name's loss {loss} has reached the parameters. " +
      "Colors are scaled to each matrix's largest |gradient|.",
    gradsMax: "{key} ({shape}) largest |gradient| {m}",
    gradsRows: "rows with a gradient (the tokens of the name): {list}",
    gradsHint: "at the end of the backward pass (End key) the parameters' gradients are shown",
    lineGo: "run to line {n}",
    differs: "(changed in the sphere)",
    inside: "inside {fn}() (from line {l} of {caller})",
    announce: "{panel}: line {l} {code}. {vars}",
    announceVars: "changed: {list}.",
    announceEnd: "End of the recording.",
    sayBackward: "Backward mode: the steps in reverse, with the gradients.", sayForward: "Forward mode.",
    helpHeading: "How to use and read it",
    helpHtml: [
      "<b>→ / ←</b>: one step forward / back. <b>↓</b> or <b>n</b>: step over (skip the functions one level " +
        "down; on a for line, to where that loop ends). <b>PageDown / PageUp</b>: next / previous position. " +
        "<b>Home / End</b>: first / last. <b>b</b>: backward mode. Click a <b>line number</b> (or Tab to it, " +
        "choose with ↑↓ and press Enter): run until that line runs next.",
      "The highlighted line is the one that just ran; the variables beside it (below on a phone) are as it left " +
        "them. A vector is a strip of colored cells: red positive, blue negative, the shade its size against the " +
        "vector's largest |value|. Hover over a cell, or Tab to a strip, to see the numbers.",
      "At each position gpt() is called once: it adds the token's key and value to the KV cache and attends to " +
        "every position so far. The softmax of the logits it returns is the predicted distribution of the next " +
        "character.",
      "In <b>backward</b> mode the steps run in reverse, as backward() goes, and each line shows the gradient of " +
        "what it made (∂L/∂variable, L the name's mean loss) in the same cells. Back at the first line you see " +
        "the gradients of the parameters (wte, wpe, each layer's matrices).",
      "RMSNorm beside the sphere shows the residual's norm: in the sphere (gpt_sphere) |h| = 1 always; RMSNorm's " +
        "x is about √n_embd right after rmsnorm. A mark on the left flags the lines the sphere changed.",
    ],
    bos: "BOS",
  },
};
