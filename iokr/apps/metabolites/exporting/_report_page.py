"""``identify --report``: ``report.html``, one self-contained page of an identify run (no network; opens from a USB
stick).

The page holds a table of the queries (id, precursor m/z, adduct, status, top hit, score, confidence; sortable,
filterable by id or hit, status and minimum confidence) and one section per query: its query spectrum with the
peaks the top candidate's formula explains (:func:`~._report_figures.annotate_top_hits`) and its top-k candidates
drawn as structures with identifier, name, score, structure prior and (for the top hit) confidence.

It is built from what the TSV writer gets (the identification rows, the candidate rows) plus the query spectra.
Every text from the input files is escaped: in the markup by :func:`html.escape`; in the page's data (JSON in a
``<script type="application/json">``) ``<``, ``>`` and ``&`` are written as ``\\u003c`` ..., and the script shows
them through ``textContent`` (:mod:`._report_assets`). Large runs stay usable: table rows and section headers are
plain markup, the cards and figures of a section are built when it scrolls into view, and distinct structures are
drawn up to :data:`~._report_figures.MAX_DRAWN_STRUCTURES` (``benchmarks/bench_report.py`` measures size and times).
"""

from __future__ import annotations

import html
import json

from ._report_assets import CSS, SCRIPT
from ._report_figures import MAX_PLOTTED_PEAKS, StructureDrawer, annotate_top_hits, spectrum_svg
from ._schema import REPORT_FILE  # noqa: F401 - the report's file name, read here by callers

#: Runs with at most this many queries get every section filled when the page opens (else: when scrolled to).
EAGER_SECTIONS = 200

#: Per query, the page's data fields (``report-data`` JSON ``rows``), in this order.
ROW_FIELDS = ("query_id", "precursor_mz", "adduct", "status", "detail", "identifier", "name", "score", "confidence",
              "n_candidates", "lookup", "query_formula", "spectrum_note")
#: Columns of the query table: (data field, header).
TABLE_COLUMNS = (("query_id", "query"), ("precursor_mz", "precursor m/z"), ("adduct", "adduct"),
                 ("status", "status"), ("identifier", "top hit"), ("name", "name"), ("score", "score"),
                 ("confidence", "confidence"))
_NUMERIC = {"precursor_mz", "score", "confidence", "n_candidates"}
_NUM_CLASS = ' class="num"'
#: Fields of a candidate row kept for the report (besides its rank).
CANDIDATE_FIELDS = ("identifier", "name", "formula", "smiles", "score", "structure_prior")


class ReportCandidates:
    """The candidate rows of ``structure_candidates.tsv``, kept per query for the report as they are written.

    Only :data:`CANDIDATE_FIELDS` are kept (a few hundred bytes per row). Call it (or :meth:`add`) with each row.
    """

    def __init__(self):
        self.by_query = {}

    def add(self, row):
        """Keep one candidate row.

        Parameters
        ----------
        row : dict
            A row of ``structure_candidates.tsv``: ``query_id``, ``rank`` and :data:`CANDIDATE_FIELDS` (missing or
            empty fields kept as ``""``).
        """
        kept = (int(row["rank"]), *(str(row.get(name, "") or "") for name in CANDIDATE_FIELDS))
        self.by_query.setdefault(str(row["query_id"]), []).append(kept)

    __call__ = add

    @classmethod
    def of(cls, rows):
        """Build the report's view of candidate rows already collected.

        Parameters
        ----------
        rows : iterable of dict
            Rows of ``structure_candidates.tsv`` (see :meth:`add`).

        Returns
        -------
        kept : ReportCandidates
            The rows, kept per query.
        """
        kept = cls()
        for row in rows:
            kept.add(row)
        return kept


def _json_block(element_id, value):
    """``value`` as JSON inside a ``<script type="application/json">``: no ``<``, ``>`` or ``&`` left in it, so
    no text can close the element or open markup."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _svg_block(element_id, svg):
    """An SVG figure as raw text in a ``<script type="text/plain">`` (JSON would escape each ``<``, ``>`` and ``"``
    of the markup: a third more bytes). The figures of :mod:`._report_figures` are built with escaped text and
    whitelisted elements, so they hold no ``</script`` or ``<!--`` that would end or confuse the element;
    checked here all the same."""
    lowered = svg.lower()
    if not lowered.startswith("<svg") or "</script" in lowered or "<!--" in lowered:
        raise ValueError(f"report figure {element_id}: not a clean SVG drawing.")
    return f'<script type="text/plain" id="{element_id}">{svg}</script>'


def _text(value):
    return html.escape("" if value is None else str(value), quote=True)


def _isolated(value):
    """Text from an input file inside a line of ours, escaped and bidi-isolated: a right-to-left override (U+202E)
    in a name reorders that name only, not the numbers that follow it (a confidence 0.734 read as 437.0)."""
    return f"<bdi>{_text(value)}</bdi>" if value not in (None, "") else ""


def report_html(identifications, candidates, spectra, parameters=None, *, drawer=None):
    """The ``report.html`` of an identify run, as text.

    Parameters
    ----------
    identifications : list of dict, length n_queries
        The rows of ``structure_identifications.tsv`` (query order).
    candidates : ReportCandidates or list of dict
        The rows of ``structure_candidates.tsv`` (``query_id``, ``rank``, candidate columns, ``score``,
        ``structure_prior``).
    spectra : Spectra of length n_queries
        The query spectra as read, row ``i`` that of ``identifications[i]``.
    parameters : dict, optional
        ``parameters.json`` of the run (sources, statuses, calibration: shown in the page's header).
    drawer : StructureDrawer, optional
        Draws the structures (its ``max_structures`` bounds the drawings).

    Returns
    -------
    page : str
        The whole self-contained page (no network needed to open it).
    """
    if len(spectra) != len(identifications):
        raise ValueError(f"report_html: {len(spectra)} spectra for {len(identifications)} identification rows.")
    kept = candidates if isinstance(candidates, ReportCandidates) else ReportCandidates.of(candidates)
    drawer = StructureDrawer() if drawer is None else drawer
    per_query = [kept.by_query.get(str(row["query_id"]), []) if row.get("status") == "ok" else []
                 for row in identifications]
    formulas = [cands[0][3] if cands else "" for cands in per_query]
    adducts = [row.get("adduct", "") if cands else "" for row, cands in zip(identifications, per_query, strict=True)]
    explained, reasons = annotate_top_hits(spectra, formulas, adducts)
    rows, per_section = [], []
    for i, (row, cands) in enumerate(zip(identifications, per_query, strict=True)):
        mz, intensity = spectra.peaks(i)
        note = _spectrum_note(len(mz), explained[i], reasons[i], formulas[i], bool(cands))
        rows.append([_field(row, name) for name in ROW_FIELDS[:-1]] + [note])
        drawn = [[rank, ident, name, formula, smiles, score, prior, -1 if (k := drawer.draw(smiles)) is None else k]
                 for rank, ident, name, formula, smiles, score, prior in cands]
        per_section.append((drawn, spectrum_svg(mz, intensity, float(spectra.precursor_mz[i]), explained[i])))
    data = {"fields": list(ROW_FIELDS), "rows": rows, "eager_sections": EAGER_SECTIONS,
            "not_drawn": f"not drawn (the report draws the first {drawer.max_structures:,} distinct structures; "
                         "this run has more)"}
    # each section's candidates (c<i>) and spectrum plot (p<i>), and each drawing (s<k>), in a block of its own at
    # the end of the page: read when a section is filled, so the page never parses the tens of megabytes of a large
    # run at once, and its controls work as soon as the table is in
    blocks = []
    for i, (drawn, plot) in enumerate(per_section):
        blocks += [_json_block(f"c{i}", drawn)] + ([_svg_block(f"p{i}", plot)] if plot else [])
    blocks += [_svg_block(f"s{k}", svg) for k, svg in enumerate(drawer.svgs)]
    return _page(rows, parameters or {}, drawer.css(), data, blocks)


def _field(row, name):
    value = row.get(name, "")
    return "" if value is None else value if isinstance(value, int) and name == "n_candidates" else str(value)


def _spectrum_note(n_peaks, explained, reason, formula, ranked):
    peaks = f"{n_peaks} peaks" + (f" ({MAX_PLOTTED_PEAKS:,} most intense and the explained ones plotted)"
                                  if n_peaks > MAX_PLOTTED_PEAKS else "")
    if not ranked:
        return f"{peaks}; no candidate, so no peak annotation."
    if reason:
        return f"{peaks}; none annotated under {formula}: {reason}."
    return (f"{peaks}; {len(explained)} explained by fragments of the top candidate's formula {formula} "
            "(red; hover for formula and error).")


def _page(rows, parameters, structure_css, data, blocks):
    statuses = sorted({row[3] for row in rows})
    title = f"iokr identify: {parameters.get('spectra', '')}"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           # the page loads nothing: no scripts, styles, fonts or images from anywhere but itself
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
           "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
           f"<title>{_text(title)}</title>", f"<style>{CSS}{structure_css}</style></head><body>",
           "<header><h1>iokr identify report</h1>", _run_info(parameters, len(rows)), "</header><main>",
           "<noscript><p class=\"note\">Sorting, filtering, structures and spectra need JavaScript; the table and "
           "the sections below are readable without it.</p></noscript>",
           '<div class="controls"><label>query / hit contains <input type="text" id="f-text"></label>',
           '<label>status <select id="f-status"><option value="">all</option>',
           *(f'<option value="{_text(s)}">{_text(s)}</option>' for s in statuses),
           '</select></label><label>confidence &ge; <input type="number" id="f-confidence" min="0" max="1" '
           'step="0.05" value="0"></label><span id="count"></span></div>',
           # a grid of rows rather than a <table>: each row can skip layout while scrolled out of view
           # (content-visibility), which keeps sorting and filtering 10,000 rows fast
           '<div class="table-box" id="queries" role="table"><div class="row head" role="row">',
           *(f'<span role="columnheader" data-key="{key}"{_NUM_CLASS if key in _NUMERIC else ""}>'
             f"{_text(header)}</span>" for key, header in TABLE_COLUMNS),
           '</div><div class="rows">']
    index = {name: k for k, name in enumerate(ROW_FIELDS)}
    for i, row in enumerate(rows):
        cells = []
        for key, _ in TABLE_COLUMNS:
            value = _text(row[index[key]])
            if key == "query_id":
                value = f'<a href="#q-{i}">{value}</a>'
            elif key == "status":
                value = f'<span class="status{" ok" if row[index["status"]] == "ok" else ""}">{value}</span>'
            css = "num" if key in _NUMERIC else "name" if key == "name" else ""
            cells.append(f'<span role="cell" class="{css}">{value}</span>' if css else
                         f'<span role="cell">{value}</span>')
        out.append(f'<div class="row" role="row">{"".join(cells)}</div>')
    out.append("</div></div>")
    for i, row in enumerate(rows):
        out.append(_section_header(i, row, index))
    out += ["</main>", _json_block("report-data", data), f"<script>{SCRIPT}</script>", *blocks, "</body></html>"]
    return "\n".join(out)


def _section_header(i, row, index):
    status, detail = row[index["status"]], row[index["detail"]]
    facts = [f"precursor m/z {_text(row[index['precursor_mz']]) or '&ndash;'}",
             f"adduct {_isolated(row[index['adduct']]) or '&ndash;'}",
             f'status <span class="status{" ok" if status == "ok" else ""}">{_isolated(status)}</span>']
    if detail:
        facts.append(_isolated(detail))
    if row[index["lookup"]]:
        facts.append(f"{_isolated(row[index['lookup']])}: {_text(row[index['n_candidates']])} candidates")
    if row[index["identifier"]] or row[index["name"]]:
        confidence = row[index["confidence"]]
        facts.append(f"top hit <b>{_isolated(row[index['identifier']])}</b> {_isolated(row[index['name']])}"
                     + (f", confidence {_text(confidence)}" if confidence else ", no confidence"))
    return (f'<section class="query" id="q-{i}" data-row="{i}"><h2>{_text(row[index["query_id"]])}</h2>'
            f'<p class="meta">{" &middot; ".join(facts)}</p><div class="body"></div></section>')


def _run_info(parameters, n_queries):
    """The run's sources and outcome (from ``parameters.json``) as a definition list."""
    items = [("queries", str(n_queries))]
    for key in ("spectra", "candidates", "model", "statuses", "calibration", "top_k", "adduct_policy", "ion_mode"):
        value = parameters.get(key)
        if value not in (None, "", {}):
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            items.append((key, text))
    return '<dl class="run">' + "".join(f"<dt>{_text(k)}</dt><dd>{_text(v)}</dd>" for k, v in items) + "</dl>"
