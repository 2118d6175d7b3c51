"""Figures of the ``identify`` report as inline SVG: candidate structures and annotated query spectra.

Structures are drawn by RDKit (``rdMolDraw2D.MolDraw2DSVG``) and then rebuilt from a whitelist (:func:`safe_svg`):
only geometric elements and attributes survive, text content is escaped, and each drawing's repeated ``style``
strings become short classes defined once for the page (a drawing shrinks about fourfold). Nothing a candidate
file holds reaches a drawing as text: the SMILES is parsed and written back canonically, without the CXSMILES
extensions (atom labels) that RDKit would draw, and names never go into a drawing (they are page text).

Spectra are drawn here (no plotting library): peaks as lines, relative intensity in %, the peaks the top
candidate's formula explains in colour with their fragment-ion formula from the subformula annotation
(:func:`~._annotation.annotate`, called as is) as a tooltip and, for the most intense ones, a label.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import numpy as np

from ..chemistry._adducts import AdductError, parse_adduct
from ..chemistry._annotation import annotate, key_to_formula
from ..spectra._spectra import Spectra

#: Distinct structures drawn per report (about 3.5 ms and 2.2 kB each): candidates beyond it are listed without a
#: drawing, and the page says so. 5,000 keep a 10,000-query report's drawings to ~20 s and ~11 MB
#: (``benchmarks/bench_report.py``).
MAX_DRAWN_STRUCTURES = 5000
#: Explained peaks labelled in a spectrum plot (the most intense that find room); every one has a tooltip.
MAX_PEAK_LABELS = 8
#: Peaks drawn in a spectrum plot: the most intense, plus every explained one. A 640 px wide plot shows no more,
#: and a profile-mode spectrum of 50,000 points made a 678 kB plot (a 10,000-query page of about 7 GB).
MAX_PLOTTED_PEAKS = 1000

#: Why a spectrum's peaks carry no fragment formulas (the annotation's fallback codes, for a reader).
FALLBACK_TEXT = {"no_formula": "the top candidate has no formula", "bad_formula": "unreadable formula",
                 "unsupported_element": "the formula has elements the annotation does not support",
                 "charged_formula": "the formula is charged", "bad_adduct": "the adduct cannot be annotated",
                 "unsupported_charge": "only singly charged ions are annotated",
                 "too_large": "the formula has too many subformulas",
                 "precursor_mismatch": "the precursor m/z does not fit the formula and adduct",
                 "low_resolution": "low-resolution peaks (m/z on a 0.01 grid)"}

_SVG_NS = "{http://www.w3.org/2000/svg}"
_ALLOWED_TAGS = {"path", "ellipse", "circle", "line", "polyline", "polygon", "text", "rect"}
_GEOMETRY = {"d", "points", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "rx", "ry", "r", "width", "height"}
_PAINT = {"style", "fill", "stroke", "stroke-width", "font-size", "font-family", "text-anchor", "opacity"}
_SAFE_GEOMETRY = re.compile(r"^[-+0-9.,eE\sMLHVCSQTAZmlhvcsqtaz]*$")
_SAFE_PAINT = re.compile(r"^[-#\w.:;%, ()]*$")


class StructureDrawer:
    """Draws candidate structures once each (keyed by SMILES) as compact, whitelisted inline SVG.

    Parameters
    ----------
    width, height : int
        Drawing size in pixels.
    max_structures : int
        Distinct structures drawn at most; :meth:`draw` returns ``None`` beyond it (``n_refused`` counts them).

    Attributes
    ----------
    svgs : list of str
        The drawings, in the order first drawn.
    n_refused, n_unparsable : int
        Structures not drawn because of ``max_structures`` / because RDKit could not parse them.
    """

    def __init__(self, width=220, height=170, max_structures=MAX_DRAWN_STRUCTURES):
        self.width, self.height, self.max_structures = width, height, max_structures
        self.svgs, self._index, self._classes = [], {}, {}
        self.n_refused = self.n_unparsable = 0

    def draw(self, smiles):
        """Index of the drawing of ``smiles`` in :attr:`svgs`, or ``None`` (empty, unparsable or over budget)."""
        if not smiles:
            return None
        if smiles in self._index:
            return self._index[smiles]
        if len(self.svgs) >= self.max_structures:
            self.n_refused += 1
            return None
        raw = _rdkit_svg(smiles, self.width, self.height)
        if raw is None:
            self.n_unparsable += 1
            self._index[smiles] = None
            return None
        self._index[smiles] = len(self.svgs)
        self.svgs.append(safe_svg(raw, self._classes))
        return self._index[smiles]

    def css(self):
        """The page's CSS rules for the drawings' style classes (``.mol .kN{...}``)."""
        return "\n".join(f".mol .{name}{{{_css_of(key)}}}" for key, name in self._classes.items())


def _rdkit_svg(smiles, width, height):
    from rdkit import Chem  # noqa: PLC0415 - RDKit is the optional 'chem' extra
    from rdkit.Chem.Draw import rdMolDraw2D  # noqa: PLC0415
    from rdkit.rdBase import BlockLogs  # noqa: PLC0415

    with BlockLogs():  # an unparsable SMILES is counted (n_unparsable), not logged; the log state is restored
        mol = Chem.MolFromSmiles(smiles)
        # written back and read again: canonical SMILES carry no CXSMILES atom labels, which RDKit would draw
        mol = Chem.MolFromSmiles(Chem.MolToSmiles(mol)) if mol is not None else None
        if mol is None:
            return None
        # atom labels as <text> rather than FreeType glyph outlines: less than half the bytes, and faster
        drawer = rdMolDraw2D.MolDraw2DSVG(width, height, -1, -1, True)
        drawer.drawOptions().minFontSize = 10  # atom labels of large molecules stay legible
        drawer.DrawMolecule(mol)
        drawer.FinishDrawing()
        return drawer.GetDrawingText()


def _css_of(key):
    style, fill = key
    return ";".join(p for p in (style.strip(";"), f"fill:{fill}" if fill else "") if p)


def safe_svg(text, classes):
    """An SVG drawing rebuilt from a whitelist: geometric elements and attributes only, styles as classes.

    Parameters
    ----------
    text : str
        SVG markup (RDKit's).
    classes : dict
        ``(style, fill) -> class name``, shared by the drawings of a page; new styles are added to it.

    Returns
    -------
    svg : str
        ``<svg viewBox=... class="mol">...</svg>``: no scripts, event handlers, links, foreign content or
        unescaped text; consecutive paths of one style merged into one. Elements outside the whitelist are
        dropped with their text (whitelisted descendants of a dropped group are kept, flattened).
    """
    root = ET.fromstring(re.sub(r"^<\?xml[^>]*\?>", "", text.strip()))
    view_box = root.get("viewBox", "")
    if not _SAFE_GEOMETRY.match(view_box):
        view_box = ""
    parts, last_class, last_d = [], None, []

    def flush():
        if last_d:
            parts.append(f'<path class="{last_class}" d="{" ".join(last_d)}"/>')
            last_d.clear()

    for element in root.iter():
        tag = element.tag.replace(_SVG_NS, "")
        if element is root or tag not in _ALLOWED_TAGS:
            continue
        attributes = {k: v for k, v in element.attrib.items() if k in _GEOMETRY | _PAINT}
        if tag == "rect" and attributes.get("x", "0") in ("0", "0.0") and attributes.get("y", "0") in ("0", "0.0"):
            continue  # the white background: the page gives the drawing its background
        if not all((_SAFE_GEOMETRY if k in _GEOMETRY else _SAFE_PAINT).match(v) for k, v in attributes.items()):
            continue
        key = (attributes.pop("style", ""), attributes.pop("fill", ""))
        name = classes.setdefault(key, f"k{len(classes)}")
        if tag == "path" and set(attributes) == {"d"}:
            if name != last_class:
                flush()
                last_class = name
            last_d.append(_compact_path(attributes["d"]))
            continue
        flush()
        last_class = None
        geometry = "".join(f' {k}="{html.escape(v)}"' for k, v in attributes.items())
        body = html.escape(element.text or "")
        parts.append(f'<{tag} class="{name}"{geometry}>{body}</{tag}>')
    flush()
    return f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="{view_box}" class="mol">{"".join(parts)}</svg>'


def _compact_path(d):
    """Path data without the spaces around commands (``M 1.0,2.0 L 3.0,4.0`` -> ``M1.0,2.0L3.0,4.0``)."""
    return re.sub(r"\s*([MLHVCSQTAZmlhvcsqtaz])\s*", r"\1", " ".join(d.split()))


def annotate_top_hits(spectra, formulas, adducts):
    """Which peaks of each query the top candidate's formula explains (:func:`~._annotation.annotate`).

    Parameters
    ----------
    spectra : Spectra
        The queries' spectra as read.
    formulas, adducts : sequence of str, length n_queries
        The top candidate's neutral formula and the query's precursor type (``""``: not annotated).

    Returns
    -------
    peaks : list of dict
        Per query, ``{peak position within the spectrum: (fragment-ion formula, error in ppm)}`` (the explanation
        closest in mass where several fit).
    reasons : list of str
        Per query, why no peak could be annotated (``""`` when annotated or nothing to annotate).
    """
    n = len(spectra)
    rows = [i for i in range(n) if formulas[i] and adducts[i]]
    peaks, reasons = [{} for _ in range(n)], [""] * n
    if not rows:
        return peaks, reasons
    subset = spectra[np.array(rows)]
    subset = Spectra(subset.mz, subset.intensity, subset.offsets, subset.precursor_mz,
                     [{"formula": formulas[i], "adduct": adducts[i]} for i in rows])
    annotation = annotate(subset)
    for position, i in enumerate(rows):
        if annotation.fallback[position]:
            reasons[i] = FALLBACK_TEXT.get(annotation.fallback[position], annotation.fallback[position])
            continue
        try:
            charge = parse_adduct(adducts[i]).charge
        except AdductError:
            continue
        start = subset.offsets[position]
        for j in range(int(subset.n_peaks[position])):
            a, b = annotation.offsets[start + j], annotation.offsets[start + j + 1]
            if b > a:
                best = a + int(np.argmin(np.abs(annotation.error_ppm[a:b])))
                peaks[i][j] = (key_to_formula(int(annotation.fragment[best]), charge),
                               float(annotation.error_ppm[best]))
    return peaks, reasons


def spectrum_svg(mz, intensity, precursor_mz, explained, width=640, height=230):
    """An inline SVG stick plot of one spectrum, explained peaks coloured and labelled.

    Parameters
    ----------
    mz, intensity : ndarray of shape (n_peaks,)
    precursor_mz : float
        Marked by a dashed line when finite.
    explained : dict
        ``{peak position: (fragment formula, error in ppm)}`` (see :func:`annotate_top_hits`).
    width, height : int

    Returns
    -------
    svg : str
        ``""`` for a spectrum without peaks. Beyond :data:`MAX_PLOTTED_PEAKS` peaks, the most intense and the
        explained ones are drawn.
    """
    mz, intensity = np.asarray(mz, dtype=float), np.asarray(intensity, dtype=float)
    if mz.size == 0 or not np.any(intensity > 0):
        return ""
    left, right, top, bottom = 44, 10, 30, 28
    low = float(mz.min())
    high = float(max(mz.max(), precursor_mz if np.isfinite(precursor_mz) else -np.inf))
    pad = max(0.05 * (high - low), 5.0)
    low, high = max(0.0, low - pad), high + pad
    scale_x = (width - left - right) / (high - low)
    relative = 100.0 * intensity / intensity.max()
    scale_y = (height - top - bottom) / 100.0
    base = height - bottom

    def x_of(m):
        return left + (m - low) * scale_x

    def y_of(r):
        return base - r * scale_y

    drawn = np.arange(mz.size)
    if mz.size > MAX_PLOTTED_PEAKS:  # the most intense, in m/z order (the explained ones are drawn below)
        drawn = np.sort(np.argsort(-intensity, kind="stable")[:MAX_PLOTTED_PEAKS])
    plain = "".join(f"M{x_of(mz[j]):.1f} {base}V{y_of(relative[j]):.0f}" for j in drawn.tolist() if j not in explained)
    parts = [f'<path class="axis" d="M{left} {top - 4}V{base}H{width - right}"/>']
    for tick in (0, 50, 100):
        parts.append(f'<text class="tick" x="{left - 4}" y="{y_of(tick) + 3:.1f}" text-anchor="end">{tick}</text>')
    parts.append(f'<text class="tick" x="10" y="{top - 8}">%</text>')
    for tick in _ticks(low, high):
        parts.append(f'<text class="tick" x="{x_of(tick):.1f}" y="{base + 14}" text-anchor="middle">{tick:g}</text>')
    parts.append(f'<text class="tick" x="{width - right}" y="{height - 2}" text-anchor="end">m/z</text>')
    if np.isfinite(precursor_mz):
        parts.append(f'<path class="precursor" d="M{x_of(precursor_mz):.1f} {base}V{top - 4}">'
                     f"<title>precursor m/z {precursor_mz:.4f}</title></path>")
    parts.append(f'<path class="peak" d="{plain}"/>')
    labelled = sorted(explained, key=lambda j: -relative[j])[:MAX_PEAK_LABELS]
    # one group of explained peaks, each with its tooltip (m/z, fragment formula, error, relative intensity): the
    # bulk of a plot's bytes, so written tersely
    parts.append('<g class="explained">')
    for j, (formula, error) in sorted(explained.items()):
        tip = f"{mz[j]:.4f} {formula} {error:+.1f} ppm, {relative[j]:.0f} %"
        parts.append(f'<path d="M{x_of(mz[j]):.1f} {base}V{y_of(relative[j]):.0f}"><title>{html.escape(tip)}</title>'
                     "</path>")
    parts.append("</g>")
    placed = []  # (x, y, half width) of the labels drawn: a label overlapping one is lifted, else left out
    for j in labelled:  # kept inside the plot: a label is about 6 px per character wide
        half = 3.2 * len(explained[j][0])
        x = min(max(x_of(mz[j]), left + half + 2), width - right - half)
        y = y_of(relative[j]) - 3
        for _ in range(3):
            if not any(abs(x - px) < half + ph + 2 and abs(y - py) < 11 for px, py, ph in placed):
                break
            y = min(y, min(py for px, py, ph in placed if abs(x - px) < half + ph + 2)) - 11
        else:
            continue
        if y < 10:
            continue
        placed.append((x, y, half))
        parts.append(f'<text class="label" x="{x:.1f}" y="{y:.1f}" '
                     f'text-anchor="middle">{html.escape(explained[j][0])}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="spectrum" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}">{"".join(parts)}</svg>')


def _ticks(low, high, n=6):
    """About ``n`` round m/z ticks within ``[low, high]``."""
    raw = (high - low) / n
    step = 10 ** np.floor(np.log10(raw))
    step *= next(f for f in (1, 2, 5, 10) if f * step >= raw)
    return [float(t) for t in np.arange(np.ceil(low / step) * step, high, step)]
