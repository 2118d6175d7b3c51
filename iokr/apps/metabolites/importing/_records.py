"""One record of a spectra file: its peaks, structure fields and precursor ion as written, and the read's report.

Shared by every reader of :mod:`._readers`: what counts as usable peaks, missing values ("N/A"), quoted structure
fields (GNPS ``INCHI="InChI=..."``), the adduct a library name ends with, and a :class:`ReadReport` counting what
was skipped, recovered or flagged.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..chemistry._adducts import AdductError, parse_adduct
from ._msfiles import unquote


class ReadReport:
    """What a reader kept and skipped: a count per reason, and the first skipped records.

    Memory stays bounded whatever the number of bad records: only the first :attr:`MAX_EXAMPLES` skipped records
    are kept by id, every other one only adds to its reason's count.

    Attributes
    ----------
    n_read : int
    n_skipped : int
        Records skipped, all reasons together.
    counts : dict of str to int
        Records skipped per reason.
    skipped : list of (record id, reason)
        The first :attr:`MAX_EXAMPLES` skipped records, in file order (``len(skipped) <= n_skipped``).
    notes : dict of str to int
        Records read with something recovered or flagged, per kind (``"quoted structure fields unquoted"``,
        ``"adducts read from the name"``, ``"kept without their peaks (non-positive m/z)"``...).
    fields : set of str
        Harmonized names of the fields the file's records have (at most :attr:`MAX_FIELDS`).
    """

    #: Skipped records kept by id in :attr:`skipped`.
    MAX_EXAMPLES = 100
    #: Field names kept in :attr:`fields`.
    MAX_FIELDS = 200

    def __init__(self):
        self.n_read = 0
        self.n_skipped = 0
        self.counts = {}
        self.skipped = []
        self.notes = {}
        self.fields = set()

    def note(self, kind, n=1):
        """Count ``n`` records read with ``kind`` recovered or flagged.

        Parameters
        ----------
        kind : str
            What was recovered or flagged (a key of :attr:`notes`).
        n : int, default=1
            Records concerned; 0 adds nothing.
        """
        if n:
            self.notes[kind] = self.notes.get(kind, 0) + n

    def see_fields(self, names):
        """Remember the field names of a record (bounded by :attr:`MAX_FIELDS`).

        Parameters
        ----------
        names : collection of str
            The record's field names (a dict's keys are enough).
        """
        if len(self.fields) < self.MAX_FIELDS:  # one set update per record while small: this runs for every record
            self.fields.update(names if len(names) <= self.MAX_FIELDS else list(names)[:self.MAX_FIELDS])

    def skip(self, record, reason):
        """Count a record as skipped and keep its id if it is among the first :attr:`MAX_EXAMPLES`.

        Parameters
        ----------
        record : str
            The record's id (accession, title or line).
        reason : str
            Why it was skipped (a key of :attr:`counts`).
        """
        self.n_skipped += 1
        self.counts[reason] = self.counts.get(reason, 0) + 1
        if len(self.skipped) < self.MAX_EXAMPLES:
            self.skipped.append((record, reason))

    def summary(self):
        """Describe the read in one line of text.

        Returns
        -------
        line : str
            ``"<n> spectra read, <m> skipped (<count> <reason>, ...)"``, reasons in alphabetical order (with a
            remark when MS1 or MS3 records were skipped), then ``"; <count> <note>, ..."`` for what was recovered
            or flagged.
        """
        line = f"{self.n_read} spectra read"
        if self.n_skipped:
            detail = ", ".join(f"{n} {r}" for r, n in sorted(self.counts.items()))
            line += f", {self.n_skipped} skipped ({detail})"
            if any(re.fullmatch(r"MS\S+ (?:scans|records)", r) for r in self.counts):
                line += "; only MS2 spectra are used"
        if self.notes:
            line += "; " + ", ".join(f"{n} {r}" for r, n in sorted(self.notes.items()))
        return line


def as_float(value):
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: JSON integers beyond the float range
        return math.nan
    return out


def as_text(value):
    """A metadata field as text: strings kept, numbers written out, anything else (lists, objects, booleans) None."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def ms_level(value):
    """The MS level a record states (``MSLEVEL=2``, ``Spectrum_type: MS2``, ``MS_TYPE MS1``), or None when it
    states none readable."""
    match = re.fullmatch(r"\s*(?:MS)?(\d+)\s*", str(value), flags=re.IGNORECASE) if value is not None else None
    return int(match.group(1)) if match else None


def check_peaks(peaks):
    """Peaks as an (n, 2) float array, or a reason string when they are unusable (a reader's own reason too)."""
    if isinstance(peaks, str):
        return peaks
    try:
        arr = np.asarray(peaks, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return "non-numeric peaks"
    if arr.size == 0:
        return "no peaks"
    if arr.ndim != 2 or arr.shape[1] != 2:
        return "malformed peaks"
    if not np.isfinite(arr).all():
        return "non-finite peaks"
    if arr[:, 1].min() < 0:
        return "negative intensities"
    if arr[:, 0].min() <= 0:
        return "non-positive m/z"
    arr = arr[arr[:, 1] > 0]
    return arr if arr.size else "no peaks"


#: Metadata carried from a spectrum file to the outputs: the user's identities and the raw precursor ion.
IDENTITY_KEYS = ("feature_id", "scans", "title", "spectrum_id", "native_id", "adduct", "ion_mode", "charge")
#: Values that mean "none" in exported tables.
MISSING = ("none", "nan", "n/a", "na", "null", "")
#: A precursor type at the end of a library name: GNPS "Hydroxyzine M+H", "... [M+H]+", "... 2M+Na".
_NAME_ADDUCT = re.compile(r"(?:^|[\s_])(\[?\d*M(?:[+-]\d*[A-Za-z][A-Za-z0-9]*)*\]?\d*[+-]*\*?(?:/\d+)?)$")


def usable_peaks(raw_peaks, keep_empty, report):
    """``(peaks, problem)``: the record's peaks and ``""``; with ``keep_empty`` a record whose peaks are unusable
    is kept without them, ``problem`` naming why (counted); else ``(None, reason)``."""
    peaks = check_peaks(raw_peaks)
    if not isinstance(peaks, str):
        return peaks, ""
    if not keep_empty:
        return None, peaks
    if peaks == "no peaks":
        return np.zeros((0, 2)), ""
    report.note(f"kept without their peaks ({peaks})")
    return np.zeros((0, 2)), peaks


def structure_fields(get, report, inchikey=("inchikey",), formula=("formula",)):
    """InChIKey, InChI, SMILES and formula of a record (the first non-empty of each field's names), enclosing
    quotes removed (GNPS ``INCHI="InChI=..."``, counted in ``report``), missing values ("N/A") as None."""
    out, quoted = {}, 0
    for key, names in (("inchikey", inchikey), ("inchi", ("inchi",)), ("smiles", ("smiles",)), ("formula", formula)):
        value = None
        for name in names:
            value = as_text(get(name))
            if value:
                break
        if value and value[0] in "\"'":  # a cheap test first: this runs for every record of large files
            value, was_quoted = unquote(value)
            quoted += was_quoted
        if value is not None and (not value.strip() or value.strip().lower() in MISSING):
            value = None
        out[key] = value
    report.note("quoted structure fields unquoted", quoted)
    return out


def adduct_from_name(name):
    """The precursor type a library name ends with (GNPS: ``"Hydroxyzine M+H"``, ``"... [M-H]-"``), as written,
    or None when the last word is not a readable adduct."""
    if not isinstance(name, str):
        return None
    match = _NAME_ADDUCT.search(name.strip())
    if match is None:
        return None
    try:
        parse_adduct(match.group(1))
    except AdductError:
        return None
    return match.group(1)
