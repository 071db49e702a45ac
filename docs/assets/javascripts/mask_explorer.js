// The mask explorer of the masks chapter: choose L_q, L_k, the real lengths of a padded batch and
// the causal alignment; see which keys each query may attend to and the attention weights of a
// fixed example (window.MASK_EXPLORER_DATA, written by docs_gen/mask_explorer.py from the reference).
//
// The weights are computed here as the reference computes them (reference/attention.py,
// reference/mask_algebra.py):
//   visible[i][j] = j < length_b  AND  causal(i, j)  AND  window(i, j)  AND  same document  AND  prefix-LM
//   causal(i, j)  = true (none) | j <= i + (L_k - L_q) (bottom-right) | j <= i (top-left)
//   window(i, j)  = -left <= j - (i + L_k - L_q) <= right      (an empty extent: no limit on that side)
//   document      = q_segment_ids[i] == kv_segment_ids[j]      (one list given alone serves both, L_q = L_k)
//   prefix-LM     = j < prefix  OR  j <= i                     (L_q = L_k; an OR, passed as a mask)
//   P[i][j]       = exp(s_ij - m_i) / sum over visible j' of exp(s_ij' - m_i),  s = q k^T / sqrt(d)
//   a row with no visible key is all 0 (never NaN).
// Plain JavaScript, no library: the site fetches nothing from outside.
(function () {
  "use strict";

  // extra (optional): {left, right: int or null; qIds, kvIds: int lists or null; prefix: int or null}
  function visibleGrid(Lq, Lk, length, alignment, extra) {
    extra = extra || {};
    var grid = [];
    for (var i = 0; i < Lq; i++) {
      var row = [];
      for (var j = 0; j < Lk; j++) {
        var causal = alignment === "bottom-right" ? j <= i + (Lk - Lq)
          : alignment === "top-left" ? j <= i : true;
        var offset = j - (i + Lk - Lq);  // the key's distance from the query's own position
        var inWindow = (extra.left == null || offset >= -extra.left) && (extra.right == null || offset <= extra.right);
        var sameDoc = extra.kvIds == null || (extra.qIds || extra.kvIds)[i] === extra.kvIds[j];
        var prefixLM = extra.prefix == null || j < extra.prefix || j <= i;
        row.push(j < length && causal && inWindow && sameDoc && prefixLM);
      }
      grid.push(row);
    }
    return grid;
  }

  function weights(q, k, grid) {
    var d = q[0].length, scale = 1 / Math.sqrt(d);
    return grid.map(function (row, i) {
      var s = row.map(function (_, j) {
        var dot = 0;
        for (var c = 0; c < d; c++) dot += q[i][c] * k[j][c];
        return dot * scale;
      });
      var m = -Infinity;
      row.forEach(function (vis, j) { if (vis && s[j] > m) m = s[j]; });
      if (m === -Infinity) return row.map(function () { return 0; });  // no visible key: zeros
      var e = row.map(function (vis, j) { return vis ? Math.exp(s[j] - m) : 0; });
      var z = e.reduce(function (a, b) { return a + b; }, 0);
      return e.map(function (x) { return x / z; });
    });
  }

  function parseLengths(text, Lk) {
    var parts = String(text).split(/[\s,]+/).filter(function (p) { return p.length; });
    if (!parts.length) throw new Error("give at least one length");
    return parts.map(function (p) {
      var n = Number(p);
      if (!Number.isInteger(n) || n < 0 || n > Lk) {
        throw new Error("each length must be a whole number from 0 to L_k = " + Lk + ", not " + p);
      }
      return n;
    });
  }

  function parseExtent(text, name) {  // "" -> null (no limit), else a whole number >= 0
    var t = String(text).trim();
    if (!t.length) return null;
    var n = Number(t);
    if (!Number.isInteger(n) || n < 0) throw new Error(name + " must be empty (no limit) or a whole number >= 0, not " + t);
    return n;
  }

  function parseIds(text, L, name) {  // "" -> null, else L whole numbers
    var parts = String(text).split(/[\s,]+/).filter(function (p) { return p.length; });
    if (!parts.length) return null;
    var ids = parts.map(Number);
    if (ids.some(function (n) { return !Number.isInteger(n); }) || ids.length !== L) {
      throw new Error(name + " must be " + L + " whole numbers, one per position, not " + text);
    }
    return ids;
  }

  function parseExtra(fields, lq, lk) {
    var extra = {
      left: parseExtent(fields.left.value, "window left"),
      right: parseExtent(fields.right.value, "window right"),
      kvIds: parseIds(fields.kvIds.value, lk, "key segment ids"),
      qIds: parseIds(fields.qIds.value, lq, "query segment ids"),
      prefix: parseExtent(fields.prefix.value, "prefix length")
    };
    if (extra.qIds && !extra.kvIds) throw new Error("give the key segment ids too (query ids alone serve nothing)");
    if (extra.kvIds && !extra.qIds && lq !== lk) throw new Error("with L_q != L_k give the query segment ids too");
    if (extra.prefix != null && lq !== lk) throw new Error("prefix-LM needs L_q = L_k");
    return extra;
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (a) { e.setAttribute(a, attrs[a]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function table(kind, b, values, format) {
    var t = el("table", { "class": "mx-grid", "data-kind": kind, "data-batch": String(b) });
    var head = el("tr");
    head.appendChild(el("th", {}, "i \\ j"));
    values[0].forEach(function (_, j) { head.appendChild(el("th", {}, String(j))); });
    t.appendChild(head);
    values.forEach(function (row, i) {
      var tr = el("tr");
      tr.appendChild(el("th", {}, String(i)));
      row.forEach(function (v, j) {
        var cell = format(v, i, j);
        tr.appendChild(el("td", cell.attrs, cell.text));
      });
      t.appendChild(tr);
    });
    return t;
  }

  function build(root) {
    var data = window.MASK_EXPLORER_DATA;
    if (!data) { root.textContent = "The explorer's data (mask_explorer_data.js) did not load."; return; }
    root.innerHTML = "";
    var controls = el("div", { "class": "mx-controls" });
    function number(name, label, value) {
      var l = el("label", {}, label + " ");
      var input = el("input", { type: "number", min: "1", max: String(data.lmax), value: String(value), name: name });
      l.appendChild(input);
      controls.appendChild(l);
      return input;
    }
    var Lq = number("L_q", "L_q", 3), Lk = number("L_k", "L_k", 5);
    var lenLabel = el("label", {}, "real keys per sequence ");
    var lengths = el("input", { type: "text", name: "lengths", value: "5, 3" });
    lenLabel.appendChild(lengths);
    controls.appendChild(lenLabel);
    var alLabel = el("label", {}, "causal ");
    var align = el("select", { name: "alignment" });
    [["none", "none"], ["bottom-right", "bottom-right (the contract)"], ["top-left", "top-left (PyTorch's is_causal)"]]
      .forEach(function (o) { align.appendChild(el("option", { value: o[0] }, o[1])); });
    align.value = "bottom-right";
    alLabel.appendChild(align);
    controls.appendChild(alLabel);
    function text(name, label, placeholder) {
      var l = el("label", {}, label + " ");
      var input = el("input", { type: "text", name: name, value: "", placeholder: placeholder, size: "8" });
      l.appendChild(input);
      controls.appendChild(l);
      return input;
    }
    var fields = {
      left: text("window_left", "window left", "none"),
      right: text("window_right", "window right", "none"),
      kvIds: text("kv_segment_ids", "key segment ids", "none"),
      qIds: text("q_segment_ids", "query segment ids", "as keys"),
      prefix: text("prefix", "prefix-LM prefix", "none")
    };
    root.appendChild(controls);
    var error = el("div", { "class": "mx-error", role: "alert" });
    root.appendChild(error);
    var out = el("div", { "class": "mx-grids" });
    root.appendChild(out);

    function update() {
      error.textContent = "";
      out.innerHTML = "";
      var lq = Number(Lq.value), lk = Number(Lk.value);
      if (!(Number.isInteger(lq) && Number.isInteger(lk) && lq >= 1 && lk >= 1 && lq <= data.lmax && lk <= data.lmax)) {
        error.textContent = "L_q and L_k must be whole numbers from 1 to " + data.lmax + ".";
        return;
      }
      var lens;
      var extra;
      try { lens = parseLengths(lengths.value, lk); extra = parseExtra(fields, lq, lk); }
      catch (e) { error.textContent = e.message; return; }
      var q = data.q.slice(0, lq), k = data.k.slice(0, lk);
      lens.forEach(function (n, b) {
        var grid = visibleGrid(lq, lk, n, align.value, extra), p = weights(q, k, grid);
        var box = el("div", { "class": "mx-batch" });
        box.appendChild(el("div", { "class": "mx-caption" },
          "sequence " + b + ": " + n + " real key" + (n === 1 ? "" : "s") + " of " + lk + ", causal " + align.value));
        var pair = el("div", { "class": "mx-pair" });
        var left = el("div"), right = el("div");
        left.appendChild(el("div", { "class": "mx-caption" }, "may attend (query i down, key j across)"));
        right.appendChild(el("div", { "class": "mx-caption" }, "attention weights P[i][j]"));
        pair.appendChild(left);
        pair.appendChild(right);
        box.appendChild(pair);
        left.appendChild(table("visible", b, grid, function (v, i, j) {
          return { attrs: { "class": v ? "mx-on" : "mx-off", "data-visible": v ? "1" : "0",
                            title: "query " + i + ", key " + j + (v ? ": visible" : ": hidden") },
                   text: v ? "\u2713" : "\u00b7" };
        }));
        right.appendChild(table("weights", b, p, function (v, i, j) {
          return { attrs: { "data-weight": String(v), title: "P[" + i + "][" + j + "] = " + v },
                   text: v === 0 ? "0" : v.toFixed(3) };
        }));
        out.appendChild(box);
      });
    }
    [Lq, Lk, lengths, align].concat(Object.keys(fields).map(function (f) { return fields[f]; }))
      .forEach(function (input) { input.addEventListener("input", update); });
    align.addEventListener("change", update);
    update();
  }

  window.maskExplorer = { visibleGrid: visibleGrid, weights: weights };
  function init() {
    var root = document.getElementById("mask-explorer");
    if (root && !root.dataset.built) { root.dataset.built = "1"; build(root); }
  }
  if (typeof document$ !== "undefined") document$.subscribe(init);  // Material's page-load observable
  else document.addEventListener("DOMContentLoaded", init);
})();
