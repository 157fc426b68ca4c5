/* seqlab attention viewer. Reads the JSON in #seqlab-data:
 *   {title, view, stacks: [{id, label, qlabel, klabel, queries, keys, qtext, ktext, qseg, kseg,
 *                           shape: [L, H, Tq, Tk], attn: L x H x Tq x Tk nested arrays}]}
 * queries/keys are the tokens' labels ("␣" for a space), qtext/ktext their text, quoted in the tooltips.
 * Head view: queries (left) and keys (right) joined by lines, opacity = weight, one colour per head.
 * Model view: one heatmap thumbnail per layer x head; click one to enlarge.
 * No network, no dependencies. Stable hooks for tests: #layer-select, .head-toggle[data-head],
 * .token[data-side][data-index], #head-canvas, #view-head, #view-model, .thumb[data-layer][data-head],
 * #detail, #detail-canvas, #tab-<id>. */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("seqlab-data").textContent);
  // Weights travel as integers in units of DATA.scale (e.g. 1234 = 0.1234): half the bytes of floats.
  DATA.stacks.forEach(function (s) {
    s.attn.forEach(function (layer) { layer.forEach(function (head) { head.forEach(function (row) {
      for (var j = 0; j < row.length; j++) row[j] *= DATA.scale;
    }); }); });
  });
  var ROW_H = 22, SEG_GAP = 18, LEVELS = 50;  // LEVELS: opacity steps of the lines
  // d3 category10: distinct on light and dark backgrounds; more heads get golden-angle hues.
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#17becf"];
  var VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 73, 137], [49, 104, 142], [38, 130, 142],
                 [31, 158, 137], [53, 183, 121], [110, 206, 88], [181, 222, 43], [253, 231, 37]];
  var LUT = buildLut();
  var state = { tab: 0, view: DATA.view === "model" ? "model" : "head", layer: 0, heads: [],
                focus: null, pinned: false, segFilter: "all", detail: null };
  var rows = null;  // token y positions of the current tab: {q: {ys, height}, k: {ys, height}}

  function $(id) { return document.getElementById(id); }
  function stack() { return DATA.stacks[state.tab]; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function cssVar(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }
  function shown(t) { return t === "" ? "\u2205" : t; }
  // A token's tooltip: its text in quotes (a space token reads " "), its side and index.
  function tip(s, side, i) {
    var text = (side === "q" ? s.qtext : s.ktext) || (side === "q" ? s.queries : s.keys);
    return JSON.stringify(text[i]) + "  (" + side + " " + i + ")";
  }

  function hslToRgb(h, s, l) {
    var a = s * Math.min(l, 1 - l);
    function f(n) { var k = (n + h / 30) % 12; return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1)))); }
    return [f(0), f(8), f(4)];
  }
  function headRgb(h) {
    if (h < PALETTE.length) {
      var x = parseInt(PALETTE[h].slice(1), 16);
      return [(x >> 16) & 255, (x >> 8) & 255, x & 255];
    }
    return hslToRgb((h * 137.508) % 360, 0.62, 0.52);
  }
  function headColor(h, a) {
    var c = headRgb(h);
    return "rgba(" + c[0] + "," + c[1] + "," + c[2] + "," + (a === undefined ? 1 : a) + ")";
  }
  function buildLut() {
    var lut = [];
    for (var i = 0; i < 256; i++) {
      var x = i / 255 * (VIRIDIS.length - 1), k = Math.min(Math.floor(x), VIRIDIS.length - 2), t = x - k;
      lut.push([0, 1, 2].map(function (c) { return Math.round(VIRIDIS[k][c] * (1 - t) + VIRIDIS[k + 1][c] * t); }));
    }
    return lut;
  }
  function sizeCanvas(cv, w, h) {
    var dpr = window.devicePixelRatio || 1;
    cv.width = Math.max(1, Math.round(w * dpr));
    cv.height = Math.max(1, Math.round(h * dpr));
    cv.style.width = w + "px";
    cv.style.height = h + "px";
    var ctx = cv.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }

  /* ---------- tabs and views ---------- */
  function buildTabs() {
    var nav = $("tabs");
    nav.hidden = DATA.stacks.length < 2;
    DATA.stacks.forEach(function (s, i) {
      var b = el("button", "tab", s.label);
      b.type = "button"; b.id = "tab-" + s.id; b.dataset.tab = s.id; b.setAttribute("role", "tab");
      b.addEventListener("click", function () { selectTab(i); });
      nav.appendChild(b);
    });
  }
  function selectTab(i) {
    var s = DATA.stacks[i];
    state.tab = i;
    state.layer = Math.min(state.layer, s.shape[0] - 1);
    state.heads = []; for (var h = 0; h < s.shape[1]; h++) state.heads.push(true);
    state.focus = null; state.pinned = false; state.segFilter = "all";
    document.querySelectorAll("#tabs .tab").forEach(function (b, j) {
      b.setAttribute("aria-selected", j === i ? "true" : "false");
    });
    document.body.dataset.tab = s.id;
    $("q-label").textContent = s.qlabel; $("k-label").textContent = s.klabel;
    buildLayerSelect(); buildHeadToggles(); buildSegments(); buildTokens();
    closeDetail();
    render();
  }
  function setView(v) { state.view = v; closeDetail(); render(); }
  function render() {
    $("head-view").hidden = state.view !== "head";
    $("model-view").hidden = state.view !== "model";
    $("view-head").setAttribute("aria-pressed", state.view === "head" ? "true" : "false");
    $("view-model").setAttribute("aria-pressed", state.view === "model" ? "true" : "false");
    document.body.dataset.view = state.view;
    if (state.view === "head") drawHead(); else buildModel();
  }

  /* ---------- head view ---------- */
  function buildLayerSelect() {
    var sel = $("layer-select"), L = stack().shape[0];
    sel.textContent = "";
    for (var l = 0; l < L; l++) { var o = el("option", null, "Layer " + l); o.value = String(l); sel.appendChild(o); }
    sel.value = String(state.layer);
  }
  function buildHeadToggles() {
    var box = $("head-toggles");
    box.textContent = "";
    state.heads.forEach(function (_, h) {
      var b = el("button", "head-toggle", String(h));
      b.type = "button"; b.dataset.head = String(h);
      b.style.setProperty("--c", headColor(h));
      b.title = "head " + h + " \u2014 click: show/hide, double-click: only this head";
      b.addEventListener("click", function () { state.heads[h] = !state.heads[h]; syncHeads(); });
      b.addEventListener("dblclick", function () {
        state.heads = state.heads.map(function (_, j) { return j === h; }); syncHeads();
      });
      box.appendChild(b);
    });
    syncHeads(true);
  }
  function syncHeads(noDraw) {
    document.querySelectorAll(".head-toggle").forEach(function (b) {
      b.setAttribute("aria-pressed", state.heads[+b.dataset.head] ? "true" : "false");
    });
    if (!noDraw) drawHead();
  }
  function buildSegments() {
    var s = stack(), wrap = $("segment-wrap"), sel = $("segment-select");
    var pair = s.qseg && s.kseg;
    wrap.hidden = !pair;
    $("seg-legend").hidden = !(s.qseg || s.kseg);
    sel.textContent = "";
    [["all", "all"], ["0-0", "A \u2192 A"], ["0-1", "A \u2192 B"], ["1-0", "B \u2192 A"], ["1-1", "B \u2192 B"]]
      .forEach(function (p) { var o = el("option", null, p[1]); o.value = p[0]; sel.appendChild(o); });
    sel.value = "all";
  }
  function positions(n, seg) {
    var ys = [], y = 0;
    for (var i = 0; i < n; i++) {
      if (seg && i > 0 && seg[i] !== seg[i - 1]) y += SEG_GAP;
      ys.push(y); y += ROW_H;
    }
    return { ys: ys, height: y };
  }
  function fillColumn(col, toks, seg, side) {
    col.textContent = "";
    toks.forEach(function (t, i) {
      var d = el("div", "token", shown(t));
      d.dataset.side = side; d.dataset.index = String(i);
      d.title = tip(stack(), side, i);
      if (seg) {
        d.classList.add(seg[i] % 2 ? "seg-b" : "seg-a");
        if (i > 0 && seg[i] !== seg[i - 1]) d.classList.add("seg-start");
      }
      d.addEventListener("mouseenter", function () { if (!state.pinned) { state.focus = { side: side, i: i }; drawHead(); } });
      d.addEventListener("mouseleave", function () { if (!state.pinned) { state.focus = null; drawHead(); } });
      d.addEventListener("click", function () {
        var f = state.focus, same = f && f.side === side && f.i === i;
        state.pinned = !(state.pinned && same);
        state.focus = state.pinned ? { side: side, i: i } : null;
        drawHead();
      });
      col.appendChild(d);
    });
  }
  function buildTokens() {
    var s = stack();
    rows = { q: positions(s.queries.length, s.qseg), k: positions(s.keys.length, s.kseg) };
    fillColumn($("query-col"), s.queries, s.qseg, "q");
    fillColumn($("key-col"), s.keys, s.kseg, "k");
  }
  function segOk(seg, i, want) { return want === null || !seg || seg[i] === want; }
  function drawHead() {
    if (state.view !== "head") return;
    var s = stack(), A = s.attn[state.layer], cv = $("head-canvas");
    var W = parseFloat(getComputedStyle(document.body).getPropertyValue("--canvas-w")) || 280;
    var Hpx = Math.max(rows.q.height, rows.k.height);
    var ctx = sizeCanvas(cv, W, Hpx);
    ctx.clearRect(0, 0, W, Hpx);
    var f = state.focus, Tq = s.shape[2], Tk = s.shape[3];
    var fq = state.segFilter === "all" ? null : +state.segFilter[0];
    var fk = state.segFilter === "all" ? null : +state.segFilter[2];
    // With a focused token, the other side's edge holds per-head weight strips; lines stop short of them.
    var pad = stripWidth(s.shape[1]);
    var xa = f && f.side === "k" ? pad + 3 : 1, xb = f && f.side === "q" ? W - pad - 3 : W - 1;
    var minW = f ? 0.002 : 0.01;  // skip invisible lines (opacity < 1%)
    // Lines are bucketed by opacity (LEVELS steps), each bucket stroked as one path: a few
    // hundred strokes instead of one per line, so BERT-base at 128 tokens redraws in ~0.3 s.
    var paths = [], count = 0;
    state.heads.forEach(function (on, h) {
      if (!on) return;
      var buckets = [];
      for (var i = 0; i < Tq; i++) {
        if (!segOk(s.qseg, i, fq) || (f && f.side === "q" && f.i !== i)) continue;
        var row = A[h][i], y0 = rows.q.ys[i] + ROW_H / 2;
        for (var j = 0; j < Tk; j++) {
          var w = row[j];
          if (w < minW || !segOk(s.kseg, j, fk) || (f && f.side === "k" && f.i !== j)) continue;
          var k = Math.max(1, Math.min(LEVELS, Math.round(w * LEVELS)));
          var path = buckets[k] || (buckets[k] = new Path2D());
          path.moveTo(xa, y0); path.lineTo(xb, rows.k.ys[j] + ROW_H / 2);
          count++;
        }
      }
      paths.push([h, buckets]);
    });
    // Many lines: 1 px, the rasteriser's hairline fast path (wider lines cost ~4x without a GPU).
    ctx.lineWidth = f ? 2.4 : count > 4000 ? 1 : 1.6;
    ctx.lineCap = ctx.lineWidth > 1 ? "round" : "butt";
    paths.forEach(function (p) {
      ctx.strokeStyle = headColor(p[0]);
      p[1].forEach(function (path, k) { ctx.globalAlpha = k / LEVELS; ctx.stroke(path); });
    });
    if (f) drawStrips(ctx, s, A, f, W, pad);
    ctx.globalAlpha = 1;
    cv.dataset.layer = String(state.layer);
    markTokens(s, A, f, fq, fk);
  }
  function stripWidth(H) { return Math.min(84, 7 * H); }
  // The focused token's weights as blocks on the other side: one column per head, opacity = weight.
  function drawStrips(ctx, s, A, f, W, pad) {
    var H = s.shape[1], bw = pad / H, other = f.side === "q" ? "k" : "q", n = other === "k" ? s.shape[3] : s.shape[2];
    var x0 = other === "k" ? W - pad : 0;
    state.heads.forEach(function (on, h) {
      if (!on) return;
      ctx.fillStyle = headColor(h);
      for (var t = 0; t < n; t++) {
        var w = other === "k" ? A[h][f.i][t] : A[h][t][f.i];
        ctx.globalAlpha = Math.min(1, w);
        ctx.fillRect(x0 + h * bw + 0.5, rows[other].ys[t] + 2, bw - 1, ROW_H - 4);
      }
    });
    ctx.globalAlpha = 1;
  }
  // Outline the focused token; on the other side, each token's tooltip lists the weights per head.
  function markTokens(s, A, f, fq, fk) {
    ["q", "k"].forEach(function (side) {
      var col = $(side === "q" ? "query-col" : "key-col"), seg = side === "q" ? s.qseg : s.kseg;
      var want = side === "q" ? fq : fk;
      Array.prototype.forEach.call(col.children, function (d, i) {
        d.classList.toggle("focus", !!f && f.side === side && f.i === i);
        d.classList.toggle("dim", !segOk(seg, i, want));
        if (!f || f.side === side) { d.title = tip(s, side, i); d.removeAttribute("data-weight"); return; }
        var best = 0, parts = [];
        state.heads.forEach(function (on, h) {
          if (!on) return;
          var w = side === "k" ? A[h][f.i][i] : A[h][i][f.i];
          best = Math.max(best, w);
          parts.push("head " + h + ": " + w.toFixed(3));
        });
        d.title = tip(s, side, i) + "\n" + parts.join("\n");
        d.dataset.weight = best.toFixed(4);
      });
    });
  }

  /* ---------- model view ---------- */
  function heatImage(M) {
    var Tq = M.length, Tk = M[0].length, off = document.createElement("canvas");
    off.width = Tk; off.height = Tq;
    var ctx = off.getContext("2d"), img = ctx.createImageData(Tk, Tq), p = img.data;
    for (var i = 0; i < Tq; i++) {
      for (var j = 0; j < Tk; j++) {
        var c = LUT[Math.max(0, Math.min(255, Math.round(M[i][j] * 255)))], o = 4 * (i * Tk + j);
        p[o] = c[0]; p[o + 1] = c[1]; p[o + 2] = c[2]; p[o + 3] = 255;
      }
    }
    ctx.putImageData(img, 0, 0);
    return off;
  }
  function thumbSize(H) { return H <= 6 ? 96 : H <= 12 ? 72 : 52; }
  function buildModel() {
    var s = stack(), L = s.shape[0], H = s.shape[1], grid = $("model-grid"), px = thumbSize(H);
    grid.textContent = "";
    grid.style.setProperty("--heads", String(H));
    grid.style.setProperty("--thumb", px + "px");
    grid.appendChild(el("div"));
    for (var h = 0; h < H; h++) {
      var c = el("div", "mg-col", "head " + h); c.style.setProperty("--c", headColor(h)); grid.appendChild(c);
    }
    for (var l = 0; l < L; l++) {
      grid.appendChild(el("div", "mg-row", "layer " + l));
      for (h = 0; h < H; h++) grid.appendChild(thumb(s, l, h, px));
    }
  }
  function thumb(s, l, h, px) {
    var cv = el("canvas", "thumb");
    cv.dataset.layer = String(l); cv.dataset.head = String(h);
    cv.title = "layer " + l + ", head " + h + " \u2014 click to enlarge";
    cv.tabIndex = 0;
    var ctx = sizeCanvas(cv, px, px);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(heatImage(s.attn[l][h]), 0, 0, px, px);
    cv.addEventListener("click", function () { openDetail(l, h); });
    cv.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openDetail(l, h); } });
    return cv;
  }
  function openDetail(l, h) {
    state.detail = { layer: l, head: h, hover: null };
    document.querySelectorAll(".thumb").forEach(function (t) {
      t.classList.toggle("selected", +t.dataset.layer === l && +t.dataset.head === h);
    });
    $("detail").hidden = false;
    $("detail").dataset.layer = String(l); $("detail").dataset.head = String(h);
    $("detail-title").textContent = stack().label + " \u00b7 layer " + l + " \u00b7 head " + h;
    $("detail-readout").textContent = "hover a cell: query \u2192 key = weight";
    drawDetail();
  }
  function closeDetail() { state.detail = null; $("detail").hidden = true; }
  function detailGeometry(s) {
    var Tq = s.shape[2], Tk = s.shape[3];
    var cell = Math.max(4, Math.min(28, Math.floor(560 / Math.max(Tq, Tk))));
    var step = Math.max(1, Math.ceil(13 / cell));
    var ctx = document.createElement("canvas").getContext("2d");
    ctx.font = "12px system-ui, sans-serif";
    function widest(toks) { return toks.reduce(function (m, t, i) { return i % step ? m : Math.max(m, ctx.measureText(shown(t)).width); }, 0); }
    var left = Math.ceil(widest(s.queries)) + 10, top = Math.ceil(widest(s.keys)) + 10;
    return { cell: cell, step: step, left: left, top: top, w: left + cell * Tk + 8, h: top + cell * Tq + 8, Tq: Tq, Tk: Tk };
  }
  function drawDetail() {
    var d = state.detail; if (!d) return;
    var s = stack(), g = detailGeometry(s), cv = $("detail-canvas"), ctx = sizeCanvas(cv, g.w, g.h);
    var fg = cssVar("--fg") || "#222", muted = cssVar("--muted") || "#777";
    ctx.clearRect(0, 0, g.w, g.h);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(heatImage(s.attn[d.layer][d.head]), g.left, g.top, g.cell * g.Tk, g.cell * g.Tq);
    ctx.font = "12px system-ui, sans-serif";
    var hv = d.hover;
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    for (var i = 0; i < g.Tq; i++) {
      if (i % g.step && !(hv && hv.i === i)) continue;
      ctx.fillStyle = hv && hv.i === i ? fg : muted;
      ctx.fillText(shown(s.queries[i]), g.left - 6, g.top + (i + 0.5) * g.cell);
    }
    ctx.save(); ctx.rotate(-Math.PI / 2); ctx.textAlign = "left";
    for (var j = 0; j < g.Tk; j++) {
      if (j % g.step && !(hv && hv.j === j)) continue;
      ctx.fillStyle = hv && hv.j === j ? fg : muted;
      ctx.fillText(shown(s.keys[j]), -(g.top - 6), g.left + (j + 0.5) * g.cell);
    }
    ctx.restore();
    if (hv) {
      ctx.strokeStyle = "#ffffff"; ctx.lineWidth = 2;
      ctx.strokeRect(g.left + hv.j * g.cell, g.top + hv.i * g.cell, g.cell, g.cell);
    }
    cv._geom = g;
  }
  function detailHover(e) {
    var d = state.detail, cv = $("detail-canvas"), g = cv._geom; if (!d || !g) return;
    var r = cv.getBoundingClientRect();
    var j = Math.floor((e.clientX - r.left - g.left) / g.cell), i = Math.floor((e.clientY - r.top - g.top) / g.cell);
    var inside = i >= 0 && j >= 0 && i < g.Tq && j < g.Tk;
    d.hover = inside ? { i: i, j: j } : null;
    if (inside) {
      var s = stack();
      $("detail-readout").textContent = "\u201c" + shown(s.queries[i]) + "\u201d (" + i + ") \u2192 \u201c" +
        shown(s.keys[j]) + "\u201d (" + j + ") = " + s.attn[d.layer][d.head][i][j].toFixed(4);
    }
    drawDetail();
  }

  /* ---------- theme and wiring ---------- */
  function resolvedTheme() {
    var t = document.documentElement.dataset.theme;
    if (t === "light" || t === "dark") return t;
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
  function init() {
    buildTabs();
    $("view-head").addEventListener("click", function () { setView("head"); });
    $("view-model").addEventListener("click", function () { setView("model"); });
    $("layer-select").addEventListener("change", function (e) {
      state.layer = +e.target.value; state.focus = null; state.pinned = false; drawHead();
    });
    $("segment-select").addEventListener("change", function (e) { state.segFilter = e.target.value; drawHead(); });
    $("heads-all").addEventListener("click", function () { state.heads = state.heads.map(function () { return true; }); syncHeads(); });
    $("heads-none").addEventListener("click", function () { state.heads = state.heads.map(function () { return false; }); syncHeads(); });
    $("detail-close").addEventListener("click", closeDetail);
    $("detail-to-head").addEventListener("click", function () {
      var d = state.detail; if (!d) return;
      state.layer = d.layer; $("layer-select").value = String(d.layer);
      state.heads = state.heads.map(function (_, j) { return j === d.head; });
      syncHeads(true); setView("head");
    });
    $("detail-canvas").addEventListener("mousemove", detailHover);
    $("detail-canvas").addEventListener("mouseleave", function () { if (state.detail) { state.detail.hover = null; drawDetail(); } });
    document.addEventListener("keydown", function (e) { if (e.key === "Escape") closeDetail(); });
    $("theme-toggle").addEventListener("click", function () {
      document.documentElement.dataset.theme = resolvedTheme() === "dark" ? "light" : "dark";
      render(); drawDetail();
    });
    selectTab(0);
    document.body.dataset.ready = "1";
  }
  init();
})();
