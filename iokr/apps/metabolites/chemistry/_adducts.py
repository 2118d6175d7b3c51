"""Precursor ion types (adducts): parsing, ion mode, and the neutral mass of a precursor m/z.

Adducts are read in the notation of MassBank, GNPS, MZmine, SIRIUS, MS-DIAL and NIST: ``[M+H]+``, ``[M+Na]+``,
``[M-H]-``, ``[M+H-H2O]+``, ``[M-H2O+H]+``, ``[M+FA-H]-``, ``[M+HCOO]-``, ``[2M+H]+``, ``[M+2H]2+``, ``[M]+``,
``[M]+*`` (radical), also without brackets (``M+H``, ``M+H-H2O``) or with an explicit charge count (``[M+H]1+``).

The charge comes from the groups: each cation (H, Li, Na, K, NH4; Ca, Mg twice) added gives +1, each one removed
-1; each anion (Cl, Br, I, F, OH, HCOO, CH3COO) added gives -1; neutral groups (H2O, FA, ACN, MeOH, NH3, any
formula) none. An explicit charge must agree with it (``[M+H]2+`` is refused); it alone gives the charge of a
molecule charged by itself (``[M]+``, ``[M-CH3]-``). Every ion has one canonical text, whatever the notation, so a
model trained on ``M+H-H2O`` accepts a query written ``[M-H2O+H]+``, and ``[M+FA-H]-`` is ``[M+HCOO]-``.

:func:`read_precursor_ion` reads a spectrum's raw ``adduct``, ``ion_mode`` and ``charge`` fields (as the readers
leave them) into one :class:`PrecursorIon`, with any contradiction between them spelled out; every consumer uses it.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from ._formulas import ELECTRON_MASS, FormulaError, canonical_formula, monoisotopic_mass

#: Abbreviations used in adduct names, as formulas.
GROUPS = {"FA": "CH2O2", "HCOOH": "CH2O2", "HCOO": "CHO2", "ACN": "C2H3N", "MeOH": "CH4O", "CH3OH": "CH4O",
          "AcOH": "C2H4O2", "HAc": "C2H4O2", "Hac": "C2H4O2", "CH3COOH": "C2H4O2", "CH3COO": "C2H3O2",
          "OAc": "C2H3O2", "TFA": "C2HF3O2", "DMSO": "C2H6OS", "IsoProp": "C3H8O", "NH4": "NH4", "H2O": "H2O"}
#: Charge each ionic group carries (a group not listed is neutral).
GROUP_CHARGES = {"H": 1, "Li": 1, "Na": 1, "K": 1, "NH4": 1, "Ca": 2, "Mg": 2,
                 "Cl": -1, "Br": -1, "I": -1, "F": -1, "OH": -1, "HCOO": -1, "HCO2": -1, "CH3COO": -1, "OAc": -1}
#: Canonical name of an anion group written in another way.
_ANION_NAMES = {"HCO2": "HCOO", "OAc": "CH3COO"}
#: Canonical name of a neutral group, by its Hill formula (other neutral groups are written as their formula).
_NEUTRAL_NAMES = {"CH2O2": "FA", "C2H4O2": "CH3COOH", "C2H3N": "ACN", "CH4O": "MeOH", "C2HF3O2": "TFA",
                  "C2H6OS": "DMSO", "C3H8O": "IsoProp", "H2O": "H2O", "H3N": "NH3",
                  "FH": "HF", "ClH": "HCl", "BrH": "HBr"}
#: An acid added with a proton removed is its anion added: ``[M+FA-H]-`` is ``[M+HCOO]-``.
_ACID_ANIONS = {"FA": "HCOO", "CH3COOH": "CH3COO"}
#: Order of cations in a canonical name (others alphabetically after them).
_CATION_ORDER = ("H", "Li", "Na", "K", "NH4", "Mg", "Ca")

_ADDUCT = re.compile(r"^(?P<open>\[?)(?P<n>\d*)M(?P<groups>(?:[+-]\d*[A-Za-z][A-Za-z0-9]*)*)(?P<close>\]?)"
                     r"(?P<charge>\d*[+-]*|[+-]\d+)(?P<radical>[*.\u2022]?)$")
_GROUP = re.compile(r"([+-])(\d*)([A-Za-z][A-Za-z0-9]*)")
#: The mass shift MZmine writes after an adduct: "[M+H]+ (1.0073)".
_MASS_SUFFIX = re.compile(r"\s+\(\s*[+-]?\d+(?:\.\d+)?\s*\)$")
#: GNPS writes a multiply charged ion as its m/z divisor: "M+2H/2".
_PER_CHARGE = re.compile(r"/(\d+)$")
_CHARGE_TEXT = re.compile(r"^(?:(?P<d1>\d+)(?P<s1>[+-]?)|(?P<s2>[+-])(?P<d2>\d*))$")


class AdductError(ValueError):
    """An adduct text that cannot be read."""


@dataclass(frozen=True)
class Adduct:
    """One precursor ion type.

    Attributes
    ----------
    name : str
        Canonical text, e.g. ``"[M+H]+"``, ``"[M+2H]2+"``, ``"[M]+*"``.
    n_molecules : int
        ``n`` of ``[nM...]``.
    charge : int
        Signed charge of the ion.
    mass_shift : float
        Mass added to ``n_molecules`` neutral molecules by the groups (Da), electrons not counted.
    radical : bool
        A radical ion (``[M]+*``: the molecule lost an electron); the arithmetic is that of ``[M]+``.
    """

    name: str
    n_molecules: int
    charge: int
    mass_shift: float
    radical: bool = False

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


def _group_formula(name):
    """Hill formula of a group name (an abbreviation or a formula)."""
    try:
        return canonical_formula(GROUPS.get(name, name))
    except FormulaError:
        raise AdductError(f"unknown group {name!r}") from None


def _canonical_groups(groups):
    """Signed counts per canonical group name, acids paired with a removed proton written as their anions."""
    counts = {}
    for sign, count, name in groups:
        k = (int(count) if count else 1) * (1 if sign == "+" else -1)
        if k == 0:
            raise AdductError(f"a group count must be >= 1, got {sign}{count}{name}")
        if name in GROUP_CHARGES:
            key = _ANION_NAMES.get(name, name)
        else:
            formula = _group_formula(name)
            key = _NEUTRAL_NAMES.get(formula, formula)
        counts[key] = counts.get(key, 0) + k
    for acid, anion in _ACID_ANIONS.items():
        paired = min(max(counts.get(acid, 0), 0), max(-counts.get("H", 0), 0))
        if paired:
            counts[acid] -= paired
            counts["H"] += paired
            counts[anion] = counts.get(anion, 0) + paired
    return {k: v for k, v in counts.items() if v}


def _canonical_text(counts):
    """Added neutrals, added ions (cations first), removed ions, removed neutrals: ``+FA``, ``+H-H2O``."""
    def ion_order(name):
        rank = _CATION_ORDER.index(name) if name in _CATION_ORDER else len(_CATION_ORDER)
        return (GROUP_CHARGES[name] < 0, rank, name)

    ions = sorted((g for g in counts if g in GROUP_CHARGES), key=ion_order)
    neutrals = sorted(g for g in counts if g not in GROUP_CHARGES)
    ordered = ([g for g in neutrals if counts[g] > 0] + [g for g in ions if counts[g] > 0]
               + [g for g in ions if counts[g] < 0] + [g for g in neutrals if counts[g] < 0])
    return "".join(f"{'+' if counts[g] > 0 else '-'}{abs(counts[g]) if abs(counts[g]) > 1 else ''}{g}"
                   for g in ordered)


@functools.lru_cache(maxsize=4096)
def _parse_adduct_cached(text):
    return _parse_adduct(text)


def parse_adduct(text):
    """Read an adduct text.

    Results are cached per text (an :class:`Adduct` is immutable): a file of thousands of queries names a handful of
    adducts, and reading one took a quarter of a millisecond (0.8 s of CPU for 1,000 queries' 3,000 reads).

    Parameters
    ----------
    text : str

    Returns
    -------
    Adduct

    Raises
    ------
    AdductError
        Naming the text and what could not be read, e.g. a charge the groups contradict (``[M+H]2+``).
    """
    if not isinstance(text, str):
        raise AdductError(f"an adduct must be non-empty text, got {text!r}")
    return _parse_adduct_cached(text)


def _parse_adduct(text):
    """:func:`parse_adduct` without the cache."""
    if not isinstance(text, str) or not text.strip():
        raise AdductError(f"an adduct must be non-empty text, got {text!r}")
    compact = _MASS_SUFFIX.sub("", text.strip()).replace(" ", "")  # MZmine: "[M+H]+ (1.0073)"
    per_charge = _PER_CHARGE.search(compact)  # GNPS: "M+2H/2" is [M+2H]2+
    if per_charge:
        compact = compact[:per_charge.start()]
    match = _ADDUCT.match(compact)
    # "+1" after the ion only after a bracket: in "M+H+1" it is not a charge
    if match is None or (match.group("charge")[1:].isdigit() and not match.group("close")):
        raise AdductError(f"{text!r} is not an adduct such as [M+H]+ or [M-H]-")
    n = int(match.group("n")) if match.group("n") else 1
    if n < 1:
        raise AdductError(f"{text!r}: the number of molecules must be >= 1")
    try:
        counts = _canonical_groups(_GROUP.findall(match.group("groups")))
    except AdductError as exc:
        raise AdductError(f"{text!r}: {exc}") from None
    implied = sum(GROUP_CHARGES.get(g, 0) * k for g, k in counts.items())
    charge_text = match.group("charge")
    signs, digits = charge_text.strip("0123456789"), charge_text.strip("+-")
    if signs:
        if len(set(signs)) != 1 or (digits and len(signs) > 1):
            raise AdductError(f"{text!r}: unreadable charge {charge_text!r}")
        size = int(digits) if digits else len(signs)
        if size < 1:
            raise AdductError(f"{text!r}: the charge must not be 0")
        charge = size if signs[0] == "+" else -size
        if implied and implied != charge:
            raise AdductError(f"{text!r}: the groups give charge {implied:+d} but the text says {charge:+d}")
    elif digits:
        raise AdductError(f"{text!r}: unreadable charge {charge_text!r}")
    elif implied:
        charge = implied  # "M+H-H2O", "[M+H]": the charge of the ionizing groups
    else:
        raise AdductError(f"{text!r}: no charge (no ionizing group such as +H or -H, no + or - after it)")
    if per_charge and int(per_charge.group(1)) != abs(charge):
        raise AdductError(f"{text!r}: the groups give charge {charge:+d} but the text divides by "
                          f"{per_charge.group(1)}")
    shift = sum(k * monoisotopic_mass(GROUPS.get(g, g)) for g, k in counts.items())
    radical = bool(match.group("radical"))
    size = abs(charge)
    name = (f"[{n if n > 1 else ''}M{_canonical_text(counts)}]{size if size > 1 else ''}"
            f"{'+' if charge > 0 else '-'}{'*' if radical else ''}")
    return Adduct(name=name, n_molecules=n, charge=charge, mass_shift=shift, radical=radical)


def ion_mode_of(text):
    """``"positive"`` / ``"negative"`` from an ion-mode field (``positive``, ``POS``, ``+``, ``p``...), or None."""
    if not isinstance(text, str):
        return None
    t = text.strip().lower()
    if t in ("positive", "pos", "p", "+", "positive mode", "1", "positive scan", "positive ion mode"):
        return "positive"
    if t in ("negative", "neg", "n", "-", "negative mode", "-1", "negative scan", "negative ion mode"):
        return "negative"
    return None


def read_charge(value):
    """``(magnitude, sign)`` of a raw CHARGE value (``"2+"``, ``"1-"``, ``"-1"``, ``"2"``, ``2``, ``"+"``).

    ``sign`` is +1, -1, or None when the value gives none (``"2"``); ``(None, None)`` for no value or ``0``.

    Raises
    ------
    ValueError
        For text that is not a charge.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if isinstance(value, bool):
        raise ValueError(f"charge {value!r} is not a charge such as 2+, 1- or -1")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"charge {value!r} is not a whole number")
        value = int(value)
        return (None, None) if value == 0 else (abs(value), 1 if value > 0 else -1)
    match = _CHARGE_TEXT.match(str(value).strip().replace(" ", ""))
    if match is None:
        raise ValueError(f"charge {value!r} is not a charge such as 2+, 1- or -1")
    digits, sign = (match.group("d1"), match.group("s1")) if match.group("d1") else (match.group("d2"), match.group("s2"))
    size = int(digits) if digits else 1
    if size == 0:
        return None, None
    return size, (None if not sign else 1 if sign == "+" else -1)


@dataclass(frozen=True)
class PrecursorIon:
    """What a spectrum's metadata says about its precursor ion (see :func:`read_precursor_ion`).

    Attributes
    ----------
    adduct : Adduct or None
        Canonical adduct from the adduct text; None when there is no text or it cannot be read.
    ion_mode : {"positive", "negative"} or None
        From the adduct, else the ion-mode field, else the charge's sign.
    charge : int or None
        Signed charge: the adduct's, else CHARGE's (its sign from the CHARGE text, else the ion mode).
    problem : str
        ``""``, or one line: an unreadable adduct or charge, or a contradiction between adduct, ion mode and charge.
    ion_mode_assumed : bool
        The file states no ion mode (no adduct, ion-mode field or signed charge) and ``ion_mode`` is the caller's
        ``default_ion_mode``.
    unsigned_charge : int or None
        The size of a CHARGE written without a sign when nothing in the file gives its sign (``charge`` is then
        None, or signed by the assumed ``ion_mode``).
    unread_ion_mode : str
        The ion-mode field's text when it names neither mode (``"unknown"``, ``"N/A"``, a typo), else ``""``.
    """

    adduct: Adduct | None
    ion_mode: str | None
    charge: int | None
    problem: str
    ion_mode_assumed: bool = False
    unsigned_charge: int | None = None
    unread_ion_mode: str = ""


def _signed(sign):
    return "positive" if sign > 0 else "negative"


def read_precursor_ion(meta, default_ion_mode=None):
    """Read a spectrum's raw ``adduct``, ``ion_mode`` and ``charge`` metadata into a :class:`PrecursorIon`.

    Parameters
    ----------
    meta : dict
        One spectrum's metadata (``Spectra.metadata[i]``); not modified.
    default_ion_mode : {"positive", "negative"} or None, default=None
        The ion mode of a spectrum whose metadata states none (no adduct, ion-mode field or signed charge), e.g.
        MZmine's SIRIUS export, which writes ``CHARGE=1`` without a sign. What the file states always wins.

    Returns
    -------
    PrecursorIon
        ``problem`` names the first of: an unreadable adduct text, an unreadable charge, the adduct against the ion
        mode (``"adduct [M+H]+ contradicts ion mode negative"``), the adduct against the charge (sign or magnitude),
        the charge's sign against the ion mode, or a multiple charge with no sign and no ion mode.
    """
    problems = []
    text = meta.get("adduct")
    adduct = None
    if isinstance(text, str) and text.strip():
        try:
            adduct = parse_adduct(text)
        except AdductError as exc:
            problems.append(f"unreadable adduct: {exc}")
    mode_text = meta.get("ion_mode")
    mode = ion_mode_of(mode_text)
    raw_charge = meta.get("charge")
    try:
        size, sign = read_charge(raw_charge)
    except ValueError as exc:
        problems.append(f"unreadable charge: {exc}")
        size, sign = None, None
    if adduct is not None:
        if mode is not None and mode != adduct.ion_mode:
            problems.append(f"adduct {adduct.name} contradicts ion mode {mode_text.strip()}")
        if size is not None and (size != abs(adduct.charge) or (sign is not None and sign * adduct.charge < 0)):
            problems.append(f"adduct {adduct.name} contradicts charge {str(raw_charge).strip()}")
    if sign is not None and mode is not None and _signed(sign) != mode:
        problems.append(f"charge {str(raw_charge).strip()} contradicts ion mode {mode_text.strip()}")
    ion_mode = adduct.ion_mode if adduct is not None else mode or (_signed(sign) if sign is not None else None)
    unread = "" if mode is not None or mode_text is None else str(mode_text).strip()
    assumed = ion_mode is None and default_ion_mode is not None
    if assumed:
        ion_mode = mode = default_ion_mode
    unsigned = None
    if adduct is not None:
        charge = adduct.charge
    elif size is not None:
        direction = sign if sign is not None else {"positive": 1, "negative": -1}.get(mode)
        charge = None if direction is None else size * direction
        if sign is None and (direction is None or assumed):  # the detail says the file gave a charge without sign
            unsigned = size
        if direction is None and size > 1:
            problems.append(f"charge {str(raw_charge).strip()} has no sign and no ion mode is given (state "
                                "it with --ion-mode)")
    else:
        charge = None
    return PrecursorIon(adduct=adduct, ion_mode=ion_mode, charge=charge, problem=problems[0] if problems else "",
                        ion_mode_assumed=assumed, unsigned_charge=unsigned, unread_ion_mode=unread)
