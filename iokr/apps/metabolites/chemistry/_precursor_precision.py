"""How precisely a record states its precursor m/z, and whether its FORMULA agrees with it at that precision.

A query's FORMULA is the better candidate lookup when it agrees with the precursor m/z (given the adduct); a
formula of another compound or adduct is off by hundreds of ppm. But a precursor m/z is known only as well as the
record states it, and the check must not call a formula wrong for a difference the record cannot resolve:

- its written decimals: ``181.1`` is any m/z in [181.05, 181.15], so a formula whose ion is within half a unit of
  the last written decimal agrees (glucose's [M+H]+ 181.0707 written as 181.1 is 162 ppm off, within 0.05 Da);
- the record's resolution: a record whose every peak m/z is written to at most one decimal (``135.0 83``,
  ``136.0 999``) comes from a unit-resolution instrument (in MassBank 2025.05, 969 of the 1,001 such records are
  triple quadrupoles, LC-ESI-QQ, the rest single quadrupoles and a few others); its precursor m/z is the
  quadrupole's set mass, which resolves the nominal mass only (+-:data:`NOMINAL_MASS_DA`), whatever decimals it is
  written with (MassBank PS010904, ADP on a Waters TQD: PrecursorMZ 428.31, its [M+H]+ 428.0367: 0.27 Da, 639 ppm).

Beyond the wider of the two (and the ppm floor the caller gives), the formula contradicts the precursor and is not
used; a formula taken only thanks to the record's precision is used with a note saying so. The written decimals are
those of the value as read (the shortest text that reads back as the same float): a trailing zero the file wrote
(``428.30``) is not seen, so the tolerance is then one decimal wider than written.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._formulas import monoisotopic_mass, parse_formula

#: Half the spacing of nominal masses: what a unit-resolution precursor m/z resolves.
NOMINAL_MASS_DA = 0.5
#: Peaks written to at most this many decimals make a unit-resolution (nominal-mass) record.
NOMINAL_PEAK_DECIMALS = 1


class FormulaCheck(NamedTuple):
    """Whether a query's FORMULA is used for its lookup, and the note for its ``detail`` (``""``: none)."""

    use: bool
    note: str


def written_decimals(value):
    """Decimals of ``value`` as read: of the shortest text that reads back as the same float (``428.31`` -> 2).

    Parameters
    ----------
    value : float
        A finite m/z.

    Returns
    -------
    int
    """
    text = repr(float(value))
    if "e" in text or "E" in text:  # below 1e-4 or above 1e16: not an m/z written by hand; treat as exact
        return 17
    fraction = text.partition(".")[2].rstrip("0")
    return len(fraction)


def nominal_mass_record(peak_mz):
    """Whether every peak m/z is on a 0.1 grid (written to at most :data:`NOMINAL_PEAK_DECIMALS` decimal): a
    unit-resolution record.

    Parameters
    ----------
    peak_mz : ndarray of shape (n_peaks,)
        The record's peak m/z as read (before cleaning); no peak says nothing about the resolution (``False``).

    Returns
    -------
    bool
    """
    mz = np.asarray(peak_mz, dtype=np.float64)
    if mz.size == 0:
        return False
    scaled = mz * 10.0 ** NOMINAL_PEAK_DECIMALS
    return bool(np.all(np.abs(scaled - np.round(scaled)) < 1e-6 * np.maximum(mz, 1.0)))


def precursor_tolerance(precursor_mz, peak_mz):
    """The difference (Da) the record cannot resolve at ``precursor_mz``, and why.

    Parameters
    ----------
    precursor_mz : float
    peak_mz : ndarray of shape (n_peaks,)
        The record's peak m/z as read.

    Returns
    -------
    tolerance : float
        The wider of half a unit of the precursor's last written decimal and, for a unit-resolution record,
        :data:`NOMINAL_MASS_DA`.
    reason : str
        The words ``detail`` gives for it.
    """
    written = 0.5 * 10.0 ** -written_decimals(precursor_mz)
    if nominal_mass_record(peak_mz) and written <= NOMINAL_MASS_DA:
        return NOMINAL_MASS_DA, "a unit-resolution record (every peak m/z to at most one decimal)"
    return written, "its last written decimal"


def check_formula(formula, adduct, precursor_mz, peak_mz, min_ppm):
    """Whether a neutral ``formula`` agrees with ``precursor_mz`` as ``adduct``, at the record's precision.

    Parameters
    ----------
    formula : str
        Canonical formula; a charged formula is the ion's own and is not checked (used, no note).
    adduct : Adduct
    precursor_mz : float
    peak_mz : ndarray of shape (n_peaks,)
        The record's peak m/z as read (its resolution, see :func:`nominal_mass_record`).
    min_ppm : float
        Agreement within this many ppm needs no note.

    Returns
    -------
    FormulaCheck
        Used within ``min_ppm`` (no note) or within :func:`precursor_tolerance` (a note giving the offset and
        the precision that admits it); else not used, and the note says the formula contradicts the precursor.
    """
    if parse_formula(formula)[1]:
        return FormulaCheck(True, "")
    expected = adduct.precursor_mz(monoisotopic_mass(formula))
    off_da = abs(precursor_mz - expected)
    off_ppm = off_da / expected * 1e6
    if off_ppm <= min_ppm:
        return FormulaCheck(True, "")
    tolerance, reason = precursor_tolerance(precursor_mz, peak_mz)
    if off_da <= tolerance * (1 + 1e-9):
        return FormulaCheck(True, f"FORMULA {formula} taken: precursor m/z {float(precursor_mz)!r} is "
                                  f"{off_ppm:.0f} ppm ({off_da:.3g} Da) from its {adduct.name} {expected:.4f}, "
                                  f"within the {tolerance:g} Da of {reason}")
    return FormulaCheck(False, f"FORMULA {formula} contradicts precursor m/z by {off_ppm:.0f} ppm ({adduct.name}); "
                               "looked up by mass")
