"""``identify --report``'s page (``report.html``) built from typed rows: escaping of every text from the input files,
one section per query, statuses without candidates shown without a structure, peaks labelled by fragment formula,
RDKit drawings rebuilt from a whitelist, the drawing budget. The page in a real browser:
``test_identify_report_browser.py``."""

import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest

from iokr.apps.metabolites import Spectra
from iokr.apps.metabolites.exporting._report_figures import StructureDrawer, annotate_top_hits, safe_svg, spectrum_svg
from iokr.apps.metabolites.exporting._report_page import ReportCandidates, _svg_block, report_html

pytest.importorskip("rdkit")

SCRIPT_NAME = "<script>alert(1)</script>"
IMG_NAME = '"><img src=x onerror=alert(2)>'
IMG_ID = "'><img src=y onerror=alert(3)>"
CAFFEINE = "Cn1c(=O)c2c(ncn2C)n(C)c1=O"
THEOPHYLLINE = "Cn1c(=O)c2[nH]cnc2n(C)c1=O"
#: Caffeine [M+H]+ and three fragment ions (masses from the formulas, electrons counted), plus one peak no
#: subformula of C8H11N4O2+ explains.
PRECURSOR = 195.08765
FRAGMENTS = {138.06619: "C6H8N3O+", 110.07127: "C5H8N3+", 42.03383: "C2H4N+"}
UNEXPLAINED = 99.5


def _rows():
    """Four queries: two ranked (hostile names and id), one without candidates, one of an unsupported adduct."""
    ident = [
        {"query_id": "Q1", "precursor_mz": f"{PRECURSOR:.5f}", "adduct": "[M+H]+", "query_formula": "",
         "lookup": "mass 194.08037 +- 10 ppm", "n_candidates": 2, "identifier": "CID2519", "name": SCRIPT_NAME,
         "score": "0.91", "confidence": "0.734", "status": "ok", "detail": "", "annotation": ""},
        {"query_id": IMG_ID, "precursor_mz": f"{PRECURSOR:.5f}", "adduct": "[M+H]+", "query_formula": "",
         "lookup": "mass 194.08037 +- 10 ppm", "n_candidates": 1, "identifier": "CID-x", "name": IMG_NAME,
         "score": "0.5", "confidence": "", "status": "ok", "detail": "", "annotation": ""},
        {"query_id": "Q3", "precursor_mz": "1000.50000", "adduct": "[M+H]+", "query_formula": "",
         "lookup": "mass 999.49 +- 10 ppm", "n_candidates": 0, "status": "no candidates",
         "detail": "none for mass 999.49 +- 10 ppm", "annotation": ""},
        {"query_id": "Q4", "precursor_mz": f"{PRECURSOR:.5f}", "adduct": "[M+Foo]+", "query_formula": "", "lookup": "",
         "n_candidates": 0, "status": "unsupported adduct", "detail": "[M+Foo]+; model: [M+H]+", "annotation": ""},
    ]
    candidates = [
        {"query_id": "Q1", "rank": 1, "identifier": "CID2519", "name": SCRIPT_NAME, "smiles": CAFFEINE,
         "formula": "C8H10N4O2", "score": "0.91", "structure_prior": "0.5000"},
        {"query_id": "Q1", "rank": 2, "identifier": "CID2153", "name": "theophylline", "smiles": THEOPHYLLINE,
         "formula": "C7H8N4O2", "score": "0.2", "structure_prior": "0.1000"},
        {"query_id": IMG_ID, "rank": 1, "identifier": "CID-x", "name": IMG_NAME, "smiles": CAFFEINE,
         "formula": "C8H10N4O2", "score": "0.5", "structure_prior": "0.2500"},
    ]
    peaks = sorted([*FRAGMENTS, UNEXPLAINED])
    spectrum = np.column_stack([peaks, np.linspace(10.0, 100.0, len(peaks))])
    spectra = Spectra.from_peak_lists([spectrum, spectrum, spectrum, spectrum], np.array([PRECURSOR] * 2 +
                                                                                           [1000.5, PRECURSOR]))
    return ident, candidates, spectra


class _Markup(HTMLParser):
    """Start tags (with attributes), the text per ``section`` and the scripts of a page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.sections, self.scripts, self.text = [], [], [], []
        self._in_script = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "section":
            self.sections.append({"attrs": dict(attrs), "text": []})
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append([dict(attrs), ""])

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            self.scripts[-1][1] += data
            return
        self.text.append(data)
        if self.sections:
            self.sections[-1]["text"].append(data)


@pytest.fixture(scope="module")
def page():
    ident, candidates, spectra = _rows()
    text = report_html(ident, ReportCandidates.of(candidates), spectra, {"spectra": "queries <b>.mgf"})
    markup = _Markup()
    markup.feed(text)
    data = json.loads(next(body for attrs, body in markup.scripts if attrs.get("id") == "report-data"))
    blocks = {attrs["id"]: json.loads(body) if attrs["type"] == "application/json" else body
              for attrs, body in markup.scripts if attrs.get("id")}
    n = len(markup.sections)
    data["candidates"] = {str(i): blocks[f"c{i}"] for i in range(n) if blocks[f"c{i}"]}
    figures = {"structures": [blocks[f"s{k}"] for k in range(sum(key[0] == "s" for key in blocks))],
               "spectra": [blocks.get(f"p{i}", "") for i in range(n)]}
    return {"text": text, "markup": markup, "data": data, "figures": figures, "ident": ident}


def test_names_and_ids_from_files_are_text_not_markup(page):
    markup, text = page["markup"], page["text"]
    # the only elements are the page's own: no <img>, and the scripts are the page's data and its one script
    assert "img" not in {tag for tag, _ in markup.tags}
    types = [attrs.get("type") for attrs, _ in markup.scripts]
    assert types.count(None) == 1 and set(types) == {None, "application/json", "text/plain"}
    for attrs, body in markup.scripts:  # the figures: SVG only, nothing that could end their element early
        if attrs.get("type") == "text/plain":
            assert body.startswith("<svg") and body.endswith("</svg>") and "script" not in body
    assert not any(name.startswith("on") for _, attrs in markup.tags for name in attrs)
    # ... and the hostile texts are shown as they are: in the table, the section headers and the title
    shown = "".join(markup.text)
    for hostile in (SCRIPT_NAME, IMG_NAME, IMG_ID, "queries <b>.mgf"):
        assert hostile in shown
    assert SCRIPT_NAME not in text and "<img" not in text and "<b>.mgf" not in text
    # the page's data carries them exactly (the script writes them with textContent), with no '<' left in it
    for block in re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', text, re.S):
        assert "<" not in block and ">" not in block
    names = [c[2] for cands in page["data"]["candidates"].values() for c in cands]
    assert SCRIPT_NAME in names and IMG_NAME in names
    assert page["data"]["rows"][1][0] == IMG_ID


def test_every_query_has_its_section_in_order(page):
    sections = page["markup"].sections
    assert [s["attrs"]["id"] for s in sections] == [f"q-{i}" for i in range(len(page["ident"]))]
    for section, row in zip(sections, page["ident"], strict=True):
        words = "".join(section["text"])
        assert row["query_id"] in words and row["status"] in words
    # the table links every row to its section
    links = [attrs["href"] for tag, attrs in page["markup"].tags if tag == "a"]
    assert links == [f"#q-{i}" for i in range(len(page["ident"]))]


def test_queries_without_candidates_have_no_structure_and_say_why(page):
    data, sections = page["data"], page["markup"].sections
    assert set(data["candidates"]) == {"0", "1"}  # JSON keys: rows 0 and 1 are ranked, 2 and 3 are not
    for i, status, detail in ((2, "no candidates", "none for mass 999.49"),
                              (3, "unsupported adduct", "[M+Foo]+; model: [M+H]+")):
        words = "".join(sections[i]["text"])
        assert status in words and detail in words and "top hit" not in words
        assert data["rows"][i][data["fields"].index("spectrum_note")].endswith("no candidate, so no peak annotation.")
    # the unranked queries' spectra are drawn, without explained peaks
    assert page["figures"]["spectra"][3] and "<title>" not in page["figures"]["spectra"][3].split('class="explained"')[1]


def test_ranked_queries_show_every_candidate_with_its_drawing(page):
    data, figures = page["data"], page["figures"]
    first = data["candidates"]["0"]
    assert [c[:3] for c in first] == [[1, "CID2519", SCRIPT_NAME], [2, "CID2153", "theophylline"]]
    assert [c[5:7] for c in first] == [["0.91", "0.5000"], ["0.2", "0.1000"]]
    # one drawing per distinct structure: the second query's caffeine is the first query's drawing
    assert data["candidates"]["1"][0][7] == first[0][7] and len(figures["structures"]) == 2
    for svg in figures["structures"]:
        assert svg.startswith("<svg") and "<path" in svg and "script" not in svg


def test_peaks_explained_by_the_top_formula_are_labelled_with_fragment_formulas(page):
    spectrum = page["figures"]["spectra"][0]
    labels = re.findall(r'<text class="label"[^>]*>([^<]*)</text>', spectrum)
    assert sorted(labels) == sorted(FRAGMENTS.values())
    titles = re.findall(r'<path d="[^"]*"><title>([0-9.]+) ([^ ]+) [-+][0-9.]+ ppm, \d+ %</title>', spectrum)
    assert {round(float(mz), 4): formula for mz, formula in titles} == {round(m, 4): f for m, f in FRAGMENTS.items()}
    note = page["data"]["rows"][0][page["data"]["fields"].index("spectrum_note")]
    assert note.startswith("4 peaks; 3 explained") and "C8H10N4O2" in note


def test_annotation_reasons_are_said_and_nothing_is_invented():
    _, _, spectra = _rows()
    # a wrong formula for the precursor: no peak annotated, the reason given; no formula: nothing to annotate
    peaks, reasons = annotate_top_hits(spectra[:2], ["C20H30O2", ""], ["[M+H]+", "[M+H]+"])
    assert peaks == [{}, {}] and reasons == ["the precursor m/z does not fit the formula and adduct", ""]


def test_drawings_are_rebuilt_from_a_whitelist():
    hostile = ('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">'
               '<script>alert(1)</script><path d="M 0,0 L 5,5" onload="alert(2)" style="stroke:#000"/>'
               '<text x="1" y="2" style="fill:red">&lt;img src=x onerror=alert(3)&gt;</text>'
               '<a href="javascript:alert(4)"><path d="M 1,1 L 2,2" style="stroke:#000"/></a>'
               '<path d="M 1 1" style="x:url(javascript:alert(5))&lt;/style&gt;"/>'
               '<foreignObject><div xmlns="http://www.w3.org/1999/xhtml">hi</div></foreignObject></svg>')
    classes = {}
    svg = safe_svg(hostile, classes)
    assert "script" not in svg and "onload" not in svg and "href" not in svg and "foreignObject" not in svg
    assert "<img" not in svg and "&lt;img src=x onerror=alert(3)&gt;" in svg  # text kept, as text
    assert "javascript" not in svg and "</style" not in "".join(k for key in classes for k in key)
    # the path with a hostile style is dropped; the others keep their geometry under one class
    assert re.findall(r'<path class="(k\d+)" d="([^"]*)"/>', svg) == [("k0", "M0,0L5,5"), ("k0", "M1,1L2,2")]
    merged = safe_svg('<svg viewBox="0 0 9 9"><path d="M 0,0" style="a:b"/><path d="M 1,1" style="a:b"/></svg>', {})
    assert re.findall(r"<path[^>]*>", merged) == ['<path class="k0" d="M0,0 M1,1"/>']  # one style: one path


def test_cxsmiles_atom_labels_never_reach_a_drawing():
    drawer = StructureDrawer()
    labelled = drawer.draw("C* |$;<img src=x onerror=alert(1)>$|")
    plain = drawer.draw("C*")
    assert labelled is not None and drawer.svgs[labelled] == drawer.svgs[plain]
    assert drawer.draw("not a smiles") is None and drawer.n_unparsable == 1


def test_drawing_budget_leaves_later_structures_undrawn_and_says_so():
    ident, candidates, spectra = _rows()
    text = report_html(ident, candidates, spectra, drawer=StructureDrawer(max_structures=1))
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', text, re.S).group(1))
    first = json.loads(re.search(r'id="c0">(.*?)</script>', text, re.S).group(1))
    assert [c[7] for c in first] == [0, -1] and 'id="s1"' not in text
    assert "first 1 distinct structures" in data["not_drawn"]


def test_figure_blocks_refuse_markup_that_would_end_them():
    assert _svg_block("s0", '<svg viewBox="0 0 1 1"></svg>').startswith('<script type="text/plain" id="s0"><svg')
    for bad in ('<svg><text></script><script>alert(1)</text></svg>', "<svg><!-- x --></svg>", "<img src=x>"):
        with pytest.raises(ValueError, match="not a clean SVG"):
            _svg_block("s0", bad)


def test_spectrum_without_peaks_has_no_figure():
    assert spectrum_svg(np.zeros(0), np.zeros(0), 100.0, {}) == ""


def test_rows_and_spectra_must_match():
    ident, candidates, spectra = _rows()
    with pytest.raises(ValueError, match="3 spectra for 4 identification rows"):
        report_html(ident, candidates, spectra[:3])


def test_a_profile_spectrum_plots_its_most_intense_peaks_and_every_explained_one():
    # Before: every point was drawn; a profile-mode spectrum of 50,000 points made a 678 kB plot, so 10,000 such
    # queries a page of about 7 GB. Now the MAX_PLOTTED_PEAKS most intense and every explained peak are drawn
    # (a 640 px wide plot shows no more) and the caption says how many.
    from iokr.apps.metabolites.exporting._report_figures import MAX_PLOTTED_PEAKS  # noqa: PLC0415
    from iokr.apps.metabolites.exporting._report_page import _spectrum_note  # noqa: PLC0415

    n = 50 * MAX_PLOTTED_PEAKS
    mz, intensity = np.linspace(50.0, 1000.0, n), np.random.default_rng(0).random(n)
    explained = {0: ("CH3+", 1.0), 7: ("C2H5+", -2.0)}  # two weak peaks, drawn all the same
    svg = spectrum_svg(mz, intensity, 1000.0, explained)
    plain = re.search(r'<path class="peak" d="([^"]*)"', svg).group(1)
    assert plain.count("M") == MAX_PLOTTED_PEAKS  # the most intense (the two explained ones are not among them)
    assert svg.count("<title>") == 1 + len(explained)  # the precursor line and each explained peak
    strongest = sorted(range(n), key=lambda j: -intensity[j])[:MAX_PLOTTED_PEAKS]
    assert not set(explained) & set(strongest)
    assert plain.startswith(f"M{44 + (mz[min(strongest)] - 2.5) * (640 - 54) / (1000.0 + 47.5 - 2.5):.1f} ")
    assert len(svg) < 30_000
    note = _spectrum_note(n, explained, "", "C8H10N4O2", True)
    assert note.startswith(f"{n} peaks ({MAX_PLOTTED_PEAKS:,} most intense and the explained ones plotted); 2 "
                           "explained")
    assert _spectrum_note(10, explained, "", "C8H10N4O2", True).startswith("10 peaks; 2 explained")


def test_the_run_header_says_the_ion_mode_given_for_queries_that_state_none():
    # identify --ion-mode negative: parameters.json said it, the report's header (top_k, adduct_policy) did not,
    # so a reader of report.html could not tell that queries without an ion mode were ranked as [M-H]-
    ident, candidates, spectra = _rows()
    header = {}
    for mode in ("negative", None):
        text = report_html(ident, ReportCandidates.of(candidates), spectra, {"spectra": "q.mgf", "ion_mode": mode})
        header[mode] = text[text.index('<dl class="run">'):text.index("</dl>")]
    assert "<dt>ion_mode</dt><dd>negative</dd>" in header["negative"]
    assert "ion_mode" not in header[None]  # not given: nothing assumed, nothing said
