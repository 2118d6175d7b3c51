"""Precursor ion types (adducts): parsing, ion mode, and the neutral mass of a precursor m/z.

Adducts are read in the notation of MassBank, GNPS, MZmine and SIRIUS: ``[M+H]+``, ``[M+Na]+``, ``[M-H]-``,
``[M+H-H2O]+``, ``[M+FA-H]-``, ``[2M+H]+``, ``[M+2H]2+``, ``[M]+``, also without brackets (``M+H``) or with an
explicit charge count (``[M+H]1+``). Every adduct has one canonical text, so a model trained on ``M+H`` accepts a
query written ``[M+H]+``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._formulas import ELECTRON_MASS, FormulaError, monoisotopic_mass

#: Abbreviations used in adduct names, as formulas.
GROUPS = {"FA": "CH2O2", "HCOOH": "CH2O2", "HCOO": "CHO2", "ACN": "C2H3N", "MeOH": "CH4O", "CH3OH": "CH4O",
          "AcOH": "C2H4O2", "HAc": "C2H4O2", "Hac": "C2H4O2", "CH3COOH": "C2H4O2", "CH3COO": "C2H3O2",
          "TFA": "C2HF3O2", "DMSO": "C2H6OS", "IsoProp": "C3H8O", "NH4": "NH4", "H2O": "H2O"}

_ADDUCT = re.compile(r"^\[?(?P<n>\d*)M(?P<groups>(?:[+-]\d*[A-Za-z][A-Za-z0-9]*)*)\]?(?P<charge>\d*[+-]*)$")
_GROUP = re.compile(r"([+-])(\d*)([A-Za-z][A-Za-z0-9]*)")


class AdductError(ValueError):
    """An adduct text that cannot be read."""


@dataclass(frozen=True)
class Adduct:
    """One precursor ion type.

    Attributes
    ----------
    name : str
        Canonical text, e.g. ``"[M+H]+"``, ``"[M+2H]2+"``.
    n_molecules : int
        ``n`` of ``[nM...]``.
    charge : int
        Signed charge of the ion.
    mass_shift : float
        Mass added to ``n_molecules`` neutral molecules by the groups (Da), electrons not counted.
    """

    name: str
    n_molecules: int
    charge: int
    mass_shift: float

    @property
    def ion_mode(self):
        """``"positive"`` or ``"negative"``."""
        return "positive" if self.charge > 0 else "negative"

    def neutral_mass(self, precursor_mz):
        """Monoisotopic mass of the neutral molecule whose ion of this type has m/z ``precursor_mz``."""
        ion_mass = precursor_mz * abs(self.charge) + self.charge * ELECTRON_MASS
        return (ion_mass - self.mass_shift) / self.n_molecules

    def precursor_mz(self, neutral_mass):
        """m/z of this ion of a neutral molecule of mass ``neutral_mass`` (the inverse of :meth:`neutral_mass`)."""
        return (neutral_mass * self.n_molecules + self.mass_shift - self.charge * ELECTRON_MASS) / abs(self.charge)


def _group_mass(name):
    try:
        return monoisotopic_mass(GROUPS.get(name, name))
    except FormulaError:
        raise AdductError(f"unknown group {name!r}") from None


def parse_adduct(text):
    """Read an adduct text.

    Parameters
    ----------
    text : str

    Returns
    -------
    Adduct

    Raises
    ------
    AdductError
        Naming the text and what could not be read.
    """
    if not isinstance(text, str) or not text.strip():
        raise AdductError(f"an adduct must be non-empty text, got {text!r}")
    compact = text.strip().replace(" ", "")
    match = _ADDUCT.match(compact)
    if match is None:
        raise AdductError(f"{text!r} is not an adduct such as [M+H]+ or [M-H]-")
    n = int(match.group("n")) if match.group("n") else 1
    charge_text = match.group("charge")
    groups = _GROUP.findall(match.group("groups"))
    if n < 1:
        raise AdductError(f"{text!r}: the number of molecules must be >= 1")
    shift, canonical = 0.0, ""
    for sign, count, name in groups:
        k = int(count) if count else 1
        try:
            mass = _group_mass(name)
        except AdductError as exc:
            raise AdductError(f"{text!r}: {exc}") from None
        shift += (1 if sign == "+" else -1) * k * mass
        canonical += f"{sign}{count}{name}"
    signs = charge_text.strip("0123456789")
    digits = charge_text.strip("+-")
    if not signs:
        # "M+H" without a charge: the sign of the last group, one charge (the usual shorthand).
        if not groups:
            raise AdductError(f"{text!r}: no charge")
        signs = groups[-1][0]
    if len(set(signs)) != 1:
        raise AdductError(f"{text!r}: unreadable charge {charge_text!r}")
    size = int(digits) if digits else len(signs)
    if size < 1:
        raise AdductError(f"{text!r}: the charge must not be 0")
    charge = size if signs[0] == "+" else -size
    name = f"[{n if n > 1 else ''}M{canonical}]{size if size > 1 else ''}{signs[0]}"
    return Adduct(name=name, n_molecules=n, charge=charge, mass_shift=shift)


def ion_mode_of(text):
    """``"positive"`` / ``"negative"`` from an ion-mode field (``positive``, ``POS``, ``+``, ``p``...), or None."""
    if not isinstance(text, str):
        return None
    t = text.strip().lower()
    if t in ("positive", "pos", "p", "+", "positive mode", "1"):
        return "positive"
    if t in ("negative", "neg", "n", "-", "negative mode", "-1"):
        return "negative"
    return None
