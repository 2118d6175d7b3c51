"""Subformula annotation of MS/MS peaks: which fragment-ion formulas of the precursor ion explain each peak.

Given the molecular formula ``M`` of a spectrum's structure and its precursor type (``[M+H]+`` ...), the
precursor ion's formula ``P`` is ``n M`` plus the adduct's groups. Every fragment ion is a subformula of ``P``
(element counts ``0 <= f_e <= P_e``) with the precursor's charge. The candidate fragments of one precursor formula
are enumerated once (cached), vectorized, filtered by the ring-and-double-bond rule for ions (SIRIUS:
``RDBE = 1 + sum_e n_e (v_e - 2) / 2 >= -0.5``) and sorted by ion mass; each peak is then explained by the
candidates whose ion mass lies within ``max(ppm * m/z * 1e-6, abs_tolerance)`` of its m/z (two ``searchsorted``).

Formulas are int64 keys: each supported element owns a fixed bit field (:data:`ELEMENTS`), so a formula is
``sum_e n_e << shift_e``, and since a fragment never exceeds the precursor element-wise, the neutral loss of a
fragment is simply ``key(P) - key(f)`` (no borrow between fields).

Fallbacks (the spectrum keeps its peaks, all unannotated, and the reason is counted in :class:`AnnotationReport`):
no formula, an unreadable formula or one with unsupported elements or a charge, an unreadable or unsupported
precursor type (|charge| != 1), counts beyond the bit fields or too many subformulas, a measured precursor m/z
that does not fit the formula (wrong metadata), and low-resolution spectra (every m/z on a 0.01 grid: annotation
would be ambiguous). Single peaks above the precursor ion's mass are left unannotated and counted.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..spectra._spectra import _ranges
from ._adducts import _GROUP, GROUPS, AdductError, parse_adduct
from ._formulas import ELECTRON_MASS, ELEMENT_MASSES, FormulaError, format_formula, parse_formula

#: Supported elements: (symbol, valence for the RDBE rule, bits of the key's field); 62 bits in all.
ELEMENTS = (("C", 4, 8), ("H", 1, 9), ("N", 3, 5), ("O", 2, 6), ("P", 3, 3), ("S", 2, 4), ("F", 1, 5),
            ("Cl", 1, 4), ("Br", 1, 3), ("I", 1, 3), ("Si", 4, 4), ("B", 3, 2), ("Se", 2, 2), ("Na", 1, 2),
            ("K", 1, 2))
SYMBOLS = tuple(e for e, _, _ in ELEMENTS)
_SHIFTS = np.concatenate([[0], np.cumsum([b for _, _, b in ELEMENTS])[:-1]]).astype(np.int64)
_LIMITS = np.array([(1 << b) - 1 for _, _, b in ELEMENTS], dtype=np.int64)
_MASSES = np.array([ELEMENT_MASSES[e] for e in SYMBOLS])
_HALF_VALENCE = np.array([(v - 2) / 2.0 for _, v, _ in ELEMENTS])

#: Fallback reasons counted per spectrum in :attr:`AnnotationReport.fallbacks`.
FALLBACKS = ("no_formula", "bad_formula", "unsupported_element", "charged_formula", "bad_adduct",
             "unsupported_charge", "too_large", "precursor_mismatch", "low_resolution")


@dataclass(frozen=True)
class AnnotationSettings:
    """Tolerances of the annotation.

    Parameters
    ----------
    ppm : float, default=10.0
        Relative m/z tolerance of a peak (SIRIUS's default MS/MS deviation for Q-TOF / Orbitrap data).
    abs_tolerance : float, default=0.002
        Absolute floor (Da): below ``abs_tolerance / ppm * 1e6`` m/z (200 at the defaults) the window is this wide.
    precursor_tolerance : float, default=0.05
        A measured precursor m/z farther than this (Da) from the formula's ion m/z means the formula or the
        precursor type does not belong to the spectrum: fallback ``"precursor_mismatch"``.
    default_adduct : str, default="[M+H]+"
        Precursor type of spectra naming none (model files keep no precursor type per training spectrum).
    max_subformulas : int, default=2_000_000
        Precursor formulas with more element-count combinations fall back (``"too_large"``).
    """

    ppm: float = 10.0
    abs_tolerance: float = 0.002
    precursor_tolerance: float = 0.05
    default_adduct: str = "[M+H]+"
    max_subformulas: int = 2_000_000


@dataclass
class AnnotationReport:
    """What the annotation did: counts of spectra, fallbacks, peaks, and the time taken.

    :func:`annotate` fills one in; every field defaults to zero (an empty counter for ``fallbacks``).

    Parameters
    ----------
    n_spectra : int, default=0
        Spectra given to the annotation.
    n_annotated_spectra : int, default=0
        Spectra annotated (those that did not fall back).
    fallbacks : collections.Counter, default=Counter()
        Number of spectra per fallback reason (keys from :data:`FALLBACKS`).
    n_peaks : int, default=0
        Peaks of all spectra, fallback spectra included.
    n_peaks_annotated : int, default=0
        Peaks with at least one explanation.
    n_peaks_above_precursor : int, default=0
        Peaks of annotated spectra above the precursor ion's mass (left unannotated).
    n_precursor_formulas : int, default=0
        Distinct precursor ions (formula key and charge) whose subformulas were enumerated.
    seconds : float, default=0.0
        Wall-clock time of the annotation.
    """

    n_spectra: int = 0
    n_annotated_spectra: int = 0
    fallbacks: Counter = field(default_factory=Counter)
    n_peaks: int = 0
    n_peaks_annotated: int = 0
    n_peaks_above_precursor: int = 0
    n_precursor_formulas: int = 0
    seconds: float = 0.0

    @property
    def peak_share(self):
        """Share of peaks with at least one explanation (over all peaks, fallback spectra included)."""
        return self.n_peaks_annotated / self.n_peaks if self.n_peaks else float("nan")

    def summary(self):
        """Describe the counts in one line of text, for logs and reports.

        Returns
        -------
        text : str
            Annotated spectra and fallback reasons, explained peaks (and their share), peaks above the precursor,
            precursor formulas and seconds.
        """
        falls = ", ".join(f"{k}={v}" for k, v in sorted(self.fallbacks.items())) or "none"
        return (f"{self.n_annotated_spectra}/{self.n_spectra} spectra annotated (fallbacks: {falls}); "
                f"{self.n_peaks_annotated}/{self.n_peaks} peaks explained ({100 * self.peak_share:.1f} %), "
                f"{self.n_peaks_above_precursor} above the precursor; {self.n_precursor_formulas} precursor "
                f"formulas; {self.seconds:.2f} s")


@dataclass(frozen=True)
class Annotation:
    """Explanations of every peak of a :class:`Spectra` (CSR over peaks).

    Attributes
    ----------
    offsets : ndarray of int64, shape (n_peaks + 1,)
        Peak ``j`` is explained by entries ``offsets[j]:offsets[j + 1]`` (none: unannotated).
    fragment : ndarray of int64, shape (n_explanations,)
        Fragment-ion formula keys.
    loss : ndarray of int64, shape (n_explanations,)
        Neutral-loss keys ``key(precursor ion) - key(fragment)`` (0: the precursor ion itself).
    error_ppm : ndarray of shape (n_explanations,)
        ``(m/z - ion mass) / ion mass * 1e6``.
    precursor : ndarray of int64, shape (n_spectra,)
        Precursor-ion key per spectrum, -1 for fallback spectra.
    report : AnnotationReport
    fallback : tuple of str, length n_spectra
        Per spectrum, its fallback reason (one of :data:`FALLBACKS`), ``""`` when annotated.
    above_precursor : ndarray of bool, shape (n_peaks,)
        Peaks above the precursor ion's mass (left unannotated) of annotated spectra.
    """

    offsets: np.ndarray
    fragment: np.ndarray
    loss: np.ndarray
    error_ppm: np.ndarray
    precursor: np.ndarray
    report: AnnotationReport
    fallback: tuple
    above_precursor: np.ndarray

    def per_spectrum(self, spectra):
        """``(n_explained, n_above)``: peaks with an explanation and peaks above the precursor, per spectrum
        (ndarrays of int of shape (n_spectra,)) of the ``spectra`` this annotation was computed on."""
        index = spectra.spectrum_index()
        explained = np.diff(self.offsets) > 0
        n = len(spectra)
        return (np.bincount(index[explained], minlength=n), np.bincount(index[self.above_precursor], minlength=n))


def encode(counts):
    """Formula key(s) of element-count vector(s) in :data:`SYMBOLS` order, shape (..., n_elements)."""
    return np.asarray(counts, dtype=np.int64) @ (np.int64(1) << _SHIFTS)


def decode(keys):
    """Element counts of formula key(s), shape (..., n_elements)."""
    keys = np.asarray(keys, dtype=np.int64)
    return (keys[..., None] >> _SHIFTS) & _LIMITS


def key_to_formula(key, charge=0):
    """Hill-order text of one key (for reports and tests)."""
    return format_formula(dict(zip(SYMBOLS, decode(key).tolist(), strict=True)), charge)


class _Fallback(Exception):
    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


_INCHI_FORMULA = re.compile(r"^InChI=1S?/([^/]+)")


def structure_formula(meta):
    """Molecular formula of a spectrum's structure: from its InChI (no charge layer) or its ``formula`` field.

    The InChI comes first because model files store it for their training spectra (not the formula field), so
    a reloaded model annotates them as the fitted one did.
    """
    inchi = meta.get("inchi") or ""
    match = _INCHI_FORMULA.match(inchi)
    if match and "/q" not in inchi and "/p" not in inchi and "." not in match.group(1):
        return match.group(1)
    return meta.get("formula") or None


def _adduct_counts(text):
    """``(n_molecules, added element counts, charge)`` of a precursor type, or a :class:`_Fallback`."""
    try:
        adduct = parse_adduct(text)
    except AdductError:
        raise _Fallback("bad_adduct") from None
    if abs(adduct.charge) != 1:
        raise _Fallback("unsupported_charge")
    inner = adduct.name[adduct.name.index("M") + 1:adduct.name.rindex("]")]
    added = Counter()
    for sign, count, name in _GROUP.findall(inner):
        try:
            group, _ = parse_formula(GROUPS.get(name, name))
        except FormulaError:
            raise _Fallback("bad_adduct") from None
        for e, n in group.items():
            added[e] += (1 if sign == "+" else -1) * (int(count) if count else 1) * n
    return adduct.n_molecules, added, adduct.charge


def precursor_ion(formula, adduct):
    """Compute the element counts and charge of the precursor ion of a neutral formula and a precursor type.

    Parameters
    ----------
    formula : str or None
        Neutral molecular formula of the structure (``"C6H12O6"``).
    adduct : str
        Precursor type (``"[M+H]+"``, ``"[2M+Na]+"``, ...).

    Returns
    -------
    counts : ndarray of int64, shape (n_elements,)
        Element counts of the ion, in :data:`SYMBOLS` order.
    charge : int
        Charge of the ion, +1 or -1.

    Raises
    ------
    _Fallback
        With its reason (one of :data:`FALLBACKS`: ``"no_formula"``, ``"bad_formula"``, ``"charged_formula"``,
        ``"bad_adduct"``, ``"unsupported_charge"``, ``"unsupported_element"``, ``"too_large"``) when the ion
        cannot be annotated.
    """
    if not formula:
        raise _Fallback("no_formula")
    try:
        counts, charge = parse_formula(formula)
    except FormulaError:
        raise _Fallback("bad_formula") from None
    if charge:
        raise _Fallback("charged_formula")
    n, added, ion_charge = _adduct_counts(adduct)
    ion = Counter({e: n * c for e, c in counts.items()})
    ion.update(added)
    if set(ion) - set(SYMBOLS):
        raise _Fallback("unsupported_element")
    vec = np.array([ion.get(e, 0) for e in SYMBOLS], dtype=np.int64)
    if np.any(vec < 0) or not vec.any():
        raise _Fallback("bad_adduct")  # the adduct removes atoms the molecule lacks ([M-H2O+H]+ of CH4)
    if np.any(vec > _LIMITS):
        raise _Fallback("too_large")
    return vec, ion_charge


def ion_masses(counts, charge):
    """Ion mass of element-count rows: atoms minus ``charge`` electrons."""
    return np.asarray(counts, dtype=np.float64) @ _MASSES - charge * ELECTRON_MASS


@lru_cache(maxsize=512)
def subformulas(precursor_key, charge, max_subformulas=2_000_000):
    """All plausible fragment ions of a precursor ion, sorted by mass (cached per precursor).

    Parameters
    ----------
    precursor_key : int
        Key of the precursor ion's formula.
    charge : int
        Charge of the precursor (and of its fragments).
    max_subformulas : int

    Returns
    -------
    keys : ndarray of int64, shape (n_fragments,)
    masses : ndarray of shape (n_fragments,)
        Ion masses, ascending.

    Raises
    ------
    _Fallback
        ``"too_large"`` when the precursor has more than ``max_subformulas`` element-count combinations.
    """
    bound = decode(precursor_key)
    present = np.flatnonzero(bound)
    dims = tuple(int(b) + 1 for b in bound[present])
    if int(np.prod(dims, dtype=np.float64)) > max_subformulas:
        raise _Fallback("too_large")
    grid = np.indices(dims, dtype=np.int32).reshape(len(dims), -1).T  # every count vector, (n, n_present)
    rdbe = 1.0 + grid @ _HALF_VALENCE[present]
    grid = grid[(rdbe >= -0.5) & (grid.sum(axis=1) > 0)]
    masses = grid @ _MASSES[present] - charge * ELECTRON_MASS
    order = np.argsort(masses, kind="stable")
    keys, masses = grid[order].astype(np.int64) @ (np.int64(1) << _SHIFTS[present]), masses[order]
    keys.flags.writeable = masses.flags.writeable = False  # shared through the cache
    return keys, masses


def _low_resolution(mz):
    """Every m/z on a 0.01 grid (at most two decimals): nominal or low-resolution peaks."""
    return mz.size > 0 and bool(np.all(np.abs(mz * 100.0 - np.round(mz * 100.0)) < 1e-6 * np.maximum(mz, 1.0)))


def _spectrum_precursor(spectra, i, settings, ions):
    """``(precursor key, charge)`` of spectrum ``i`` or a :class:`_Fallback`; ``ions`` caches the precursor ion
    per (formula, adduct) text."""
    meta = spectra.metadata[i]
    text = (structure_formula(meta), meta.get("adduct") or settings.default_adduct)
    if text not in ions:
        try:
            vec, charge = precursor_ion(*text)
            ions[text] = (int(encode(vec)), charge, float(ion_masses(vec, charge)))
        except _Fallback as exc:
            ions[text] = exc
    if isinstance(ions[text], _Fallback):
        raise ions[text]
    key, charge, mass = ions[text]
    if _low_resolution(spectra.peaks(i)[0]):
        raise _Fallback("low_resolution")
    measured = spectra.precursor_mz[i]
    if np.isfinite(measured) and abs(measured - mass) > settings.precursor_tolerance:
        raise _Fallback("precursor_mismatch")
    return key, charge


def _match(mz, keys, masses, precursor_key, precursor_mass, settings):
    """Explanations of peaks ``mz`` of spectra sharing one precursor: per-peak counts, flat arrays, and the mask of
    peaks above the precursor."""
    tol = np.maximum(mz * settings.ppm * 1e-6, settings.abs_tolerance)
    lo = np.searchsorted(masses, mz - tol, side="left")
    hi = np.searchsorted(masses, mz + tol, side="right")
    above = mz > precursor_mass + tol
    hi = np.where(above, lo, hi)
    counts = hi - lo
    take = _ranges(lo, counts)
    peak_mz = np.repeat(mz, counts)
    frag = keys[take]
    error = (peak_mz - masses[take]) / masses[take] * 1e6
    return counts, frag, precursor_key - frag, error, above


def annotate(spectra, settings=None):
    """Annotate every peak of every spectrum with its candidate fragment-ion formulas.

    Parameters
    ----------
    spectra : Spectra
        Metadata ``inchi`` / ``formula`` give the structure's formula, ``adduct`` the precursor type.
    settings : AnnotationSettings, optional
        Tolerances and limits; ``AnnotationSettings()`` (its defaults) when omitted.

    Returns
    -------
    annotation : Annotation
        Never raises for bad metadata: such spectra are counted in ``annotation.report.fallbacks``.
    """
    settings = AnnotationSettings() if settings is None else settings
    t0 = time.perf_counter()
    report = AnnotationReport(n_spectra=len(spectra), n_peaks=int(spectra.mz.size))
    n = len(spectra)
    precursor = np.full(n, -1, dtype=np.int64)
    fallback = [""] * n
    groups, ions = {}, {}
    for i in range(n):
        try:
            groups.setdefault(_spectrum_precursor(spectra, i, settings, ions), []).append(i)
        except _Fallback as exc:
            report.fallbacks[exc.reason] += 1
            fallback[i] = exc.reason
    n_expl = np.zeros(spectra.mz.size, dtype=np.int64)
    above_precursor = np.zeros(spectra.mz.size, dtype=bool)
    parts = []
    for (key, charge), members in groups.items():
        members = np.asarray(members)
        try:
            keys, masses = subformulas(key, charge, settings.max_subformulas)
        except _Fallback as exc:
            report.fallbacks[exc.reason] += members.size
            for i in members:
                fallback[i] = exc.reason
            continue
        precursor[members] = key
        report.n_precursor_formulas += 1
        peaks = _ranges(spectra.offsets[members], spectra.n_peaks[members])
        counts, frag, loss, error, above = _match(spectra.mz[peaks], keys, masses, key,
                                                  float(ion_masses(decode(key), charge)), settings)
        n_expl[peaks] = counts
        above_precursor[peaks] = above
        report.n_peaks_above_precursor += int(above.sum())
        parts.append((peaks, counts, frag, loss, error))
    report.n_annotated_spectra = int((precursor >= 0).sum())
    offsets = np.concatenate([[0], np.cumsum(n_expl)]).astype(np.int64)
    fragment = np.zeros(offsets[-1], dtype=np.int64)
    loss, error = np.zeros_like(fragment), np.zeros(offsets[-1])
    for peaks, counts, frag, lo, err in parts:
        # peaks of a group are in increasing order, so the group's explanations land in its peaks' slots in order
        slots = _ranges(offsets[peaks], counts)
        fragment[slots], loss[slots], error[slots] = frag, lo, err
    report.n_peaks_annotated = int((n_expl > 0).sum())
    report.seconds = time.perf_counter() - t0
    return Annotation(offsets, fragment, loss, error, precursor, report, tuple(fallback), above_precursor)
