"""The style sheet and script inlined into the ``identify`` report (:mod:`._report_page`): plain CSS and JavaScript,
no library, nothing fetched.

The script never writes file text as markup: ids, names and SMILES reach the page through ``textContent``; only the
figures (SVG whitelisted and escaped by :mod:`._report_figures`) are inserted as markup. Sections are filled (cards
and figures) when the page opens for small runs, else when they scroll near the viewport, so a 10,000-query page
opens and filters without building 100,000 drawings. A filter or sort is one pass over the rows (touching only
those that change) and one layout: changing them a slice per task was tried and took seconds in all at 10,000
queries, since every slice paid a layout of the whole list. ``data-ready-ms`` / ``data-filter-ms`` /
``data-sort-ms`` on ``<body>`` give the script time of the page's setup and of the last filter or sort (read by the
benchmark and the tests; the longest task, layout included, is measured by the benchmark).
"""

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
header,main{max-width:1320px;margin:0 auto;padding:0 16px}
h1{font-size:20px;margin:16px 0 4px}
h2{font-size:16px;margin:0;word-break:break-all}
.run{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font-size:12px;color:#444;margin:8px 0}
.run dt{font-weight:600}.run dd{margin:0;word-break:break-all}
.controls{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin:10px 0;padding:8px 10px;background:#fff;
border:1px solid #d8dce2;border-radius:6px;position:sticky;top:0;z-index:2}
.controls input[type=text]{width:220px}.controls input[type=number]{width:70px}
#count{color:#555;margin-left:auto}
.table-box{max-height:42vh;overflow:auto;background:#fff;border:1px solid #d8dce2;border-radius:6px}
.rows{display:flex;flex-direction:column}
.row{display:grid;grid-template-columns:minmax(0,13fr) 9fr 8fr 12fr 9fr minmax(0,31fr) 8fr 9fr;gap:0 10px;
padding:3px 8px;border-bottom:1px solid #eceef1;content-visibility:auto;contain-intrinsic-size:auto 25px}
[hidden]{display:none!important}
.row>span{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.row.head{position:sticky;top:0;z-index:1;background:#eef1f5;font-weight:600;content-visibility:visible}
.head span{cursor:pointer;user-select:none}
.head [aria-sort=ascending]::after{content:" \\25B2"}.head [aria-sort=descending]::after{content:" \\25BC"}
.row .num{text-align:right;font-variant-numeric:tabular-nums}
.status{display:inline-block;padding:0 6px;border-radius:8px;background:#e3e6ea;font-size:12px}
.status.ok{background:#d3f0da}
section.query{background:#fff;border:1px solid #d8dce2;border-radius:6px;margin:14px 0;padding:10px 12px;
content-visibility:auto;contain-intrinsic-size:auto 420px}
.meta{margin:4px 0 8px;color:#444;font-size:13px;word-break:break-word}
.note{color:#6a4b00;background:#fff7e0;padding:4px 8px;border-radius:4px;font-size:13px}
.body{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
.cards{display:flex;flex-wrap:wrap;gap:10px;flex:1 1 480px}
.card{width:226px;border:1px solid #e1e4e8;border-radius:6px;padding:4px;font-size:12px;overflow:hidden}
.card.top{border-color:#2e7d32;box-shadow:0 0 0 1px #2e7d32}
.card .structure{height:170px;display:flex;align-items:center;justify-content:center;color:#888;background:#fff}
.card .structure svg{width:218px;height:166px}
.card .ident{font-weight:600;word-break:break-all}.card .name{word-break:break-word}
.card .smiles{color:#666;font-family:monospace;font-size:11px;word-break:break-all;max-height:3.2em;overflow:hidden}
figure{margin:0 0 10px}figcaption{font-size:12px;color:#555}
svg.spectrum{max-width:100%;height:auto;background:#fff}
svg.spectrum .axis{stroke:#333;fill:none}svg.spectrum .peak{stroke:#8a8f98;stroke-width:1.2}
svg.spectrum .explained{stroke:#c62828;stroke-width:2}svg.spectrum .precursor{stroke:#1565c0;stroke-dasharray:3 3}
svg.spectrum text{font-size:10px;fill:#333}svg.spectrum .label{fill:#c62828;font-size:10px}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var start = performance.now();
  var data = JSON.parse(document.getElementById("report-data").textContent);
  function text(id) {  // a section's candidates (JSON) or a figure (SVG): read when a section is filled
    var e = document.getElementById(id);
    return e ? e.textContent : "";
  }
  var F = {};
  data.fields.forEach(function (name, k) { F[name] = k; });
  var rows = data.rows, n = rows.length;
  var tbody = document.querySelector("#queries .rows");
  var trs = Array.prototype.slice.call(tbody.children);
  var sections = Array.prototype.slice.call(document.querySelectorAll("section.query"));
  var haystack = rows.map(function (r) {
    return (r[F.query_id] + "\u0000" + r[F.identifier] + "\u0000" + r[F.name]).toLowerCase();
  });
  var fText = document.getElementById("f-text"), fStatus = document.getElementById("f-status");
  var fConf = document.getElementById("f-confidence"), count = document.getElementById("count");

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function applyFilter() {
    var t0 = performance.now();
    var text = fText.value.trim().toLowerCase(), status = fStatus.value, min = parseFloat(fConf.value);
    var shown = 0;
    for (var i = 0; i < n; i++) {  // only the rows and sections whose state changes are touched
      var r = rows[i], c = r[F.confidence];
      var keep = (!status || r[F.status] === status) && (!text || haystack[i].indexOf(text) >= 0) &&
        (!(min > 0) || (c !== "" && +c >= min));
      if (trs[i].hidden === keep) trs[i].hidden = !keep;
      if (sections[i].hidden === keep) sections[i].hidden = !keep;
      if (keep) shown++;
    }
    count.textContent = shown + " of " + n + " queries shown";
    document.body.setAttribute("data-filter-ms", (performance.now() - t0).toFixed(1));
  }
  var pending = null;
  function laterFilter() {  // typing in a 10,000-query page filters once per pause, not once per key
    if (pending) clearTimeout(pending);
    pending = setTimeout(applyFilter, n > 2000 ? 200 : 0);
  }
  fText.addEventListener("input", laterFilter);
  fStatus.addEventListener("change", applyFilter);
  fConf.addEventListener("input", laterFilter);

  var numeric = {precursor_mz: 1, score: 1, confidence: 1, n_candidates: 1};
  var order = rows.map(function (_, i) { return i; });
  Array.prototype.forEach.call(document.querySelectorAll("#queries .head [data-key]"), function (th) {
    th.addEventListener("click", function () {
      var t0 = performance.now(), name = th.getAttribute("data-key"), key = F[name], isNum = numeric[name];
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
      var keys = rows.map(function (r) {  // compared as numbers or as lower-case text; empty values last
        var v = r[key];
        return v === "" ? null : isNum ? +v : String(v).toLowerCase();
      });
      order.sort(function (a, b) {
        var x = keys[a], y = keys[b];
        if (x === null || y === null) return (x === null) - (y === null) || a - b;
        return dir * (x < y ? -1 : x > y ? 1 : 0) || a - b;
      });
      // the rows keep their place in the document and take their place on screen from CSS 'order': moving
      // 10,000 nodes took 200-600 ms, this 30-40 ms (benchmarks/bench_report.py)
      order.forEach(function (i, k) { trs[i].style.order = k; });
      document.body.setAttribute("data-sort-ms", (performance.now() - t0).toFixed(1));
    });
  });

  function card(c, top, confidence) {
    var box = el("div", top ? "card top" : "card");
    var pic = el("div", "structure");
    if (c[7] >= 0) pic.innerHTML = text("s" + c[7]);  // whitelisted SVG (see _report_figures.safe_svg)
    else pic.textContent = c[4] ? data.not_drawn : "no structure";
    box.appendChild(pic);
    box.appendChild(el("div", "ident", "#" + c[0] + " " + c[1]));
    if (c[2]) box.appendChild(el("div", "name", c[2]));
    var nums = "score " + c[5] + " \u00b7 prior " + c[6];
    if (top && confidence !== "") nums += " \u00b7 confidence " + confidence;
    box.appendChild(el("div", "nums", nums));
    if (c[3]) box.appendChild(el("div", "formula", c[3]));
    if (c[4]) box.appendChild(el("div", "smiles", c[4]));
    return box;
  }

  function fill(section) {
    if (section.hasAttribute("data-filled")) return;
    section.setAttribute("data-filled", "");
    var i = +section.getAttribute("data-row"), r = rows[i], body = section.querySelector(".body");
    var cands = JSON.parse(text("c" + i) || "[]"), spectrum = text("p" + i);
    if (spectrum) {
      var fig = el("figure");
      fig.innerHTML = spectrum;  // drawn by _report_figures.spectrum_svg, its text escaped
      fig.appendChild(el("figcaption", "", r[F.spectrum_note]));
      body.appendChild(fig);
    }
    if (!cands.length) {
      var note = el("p", "note", "No candidate ranked (status: ");
      note.appendChild(el("bdi", "", r[F.status]));  // file text bidi-isolated, as in the header
      if (r[F.detail]) { note.appendChild(document.createTextNode("; ")); note.appendChild(el("bdi", "", r[F.detail])); }
      note.appendChild(document.createTextNode("): no structure to show."));
      body.appendChild(note);
      return;
    }
    var grid = el("div", "cards");
    cands.forEach(function (c, k) { grid.appendChild(card(c, k === 0, r[F.confidence])); });
    body.appendChild(grid);
  }

  function fillSections() {  // the sections' data blocks follow this script: fill once the page is parsed
    if (n <= data.eager_sections || !("IntersectionObserver" in window)) {
      sections.forEach(fill);
      return;
    }
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) { fill(e.target); observer.unobserve(e.target); }
      });
    }, {rootMargin: "600px 0px"});
    sections.forEach(function (s) { observer.observe(s); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fillSections);
  else fillSections();
  count.textContent = n + " of " + n + " queries shown";
  document.body.setAttribute("data-ready-ms", (performance.now() - start).toFixed(1));
  document.body.setAttribute("data-interactive-at-ms", performance.now().toFixed(1));
})();
"""
