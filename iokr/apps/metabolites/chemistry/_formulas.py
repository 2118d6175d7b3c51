"""Molecular formulas: parsing in any element order, the canonical Hill form, monoisotopic masses.

Queries and candidate databases write formulas in many ways (``C19H23N2Cl``, ``C19H23ClN2``, ``[C5H14NO]+``);
candidates are matched to a query by the canonical form of both, never by the text as given.
"""

from __future__ import annotations

import re

#: Monoisotopic masses (most abundant isotope, Da) of the elements met in metabolomics databases.
ELEMENT_MASSES = {
    "H": 1.00782503207, "B": 11.0093054, "C": 12.0, "N": 14.0030740048, "O": 15.99491461956,
    "F": 18.99840322, "Na": 22.9897692809, "Mg": 23.985041700, "Al": 26.98153863, "Si": 27.9769265325,
    "P": 30.97376163, "S": 31.97207100, "Cl": 34.96885268, "K": 38.96370668, "Ca": 39.96259098,
    "Fe": 55.9349375, "Co": 58.9331950, "Ni": 57.9353429, "Cu": 62.9295975, "Zn": 63.9291422,
    "As": 74.9215965, "Se": 79.9165213, "Br": 78.9183371, "Mo": 97.9054082, "Sn": 119.9021947,
    "I": 126.904473, "Pt": 194.9647911, "Hg": 201.970643, "Li": 7.01600455, "Gd": 157.9241039,
}
#: Mass of an electron (Da).
ELECTRON_MASS = 0.00054857990946

_SPACED_CHARGE = re.compile(r"^(\S+)\s+(\d*[+-]|[+-]\d*)$")
_TOKEN = re.compile(r"([A-Z][a-z]?)(\d*)")
_FORMULA = re.compile(r"^\[?((?:[A-Z][a-z]?\d*)+)\]?(?:([+-])(\d*)|(\d*)([+-]))?$")


class FormulaError(ValueError):
    """A molecular formula that cannot be read (unknown element, stray characters)."""


def parse_formula(text):
    """Element counts and charge of a molecular formula written in any element order.

    Parameters
    ----------
    text : str
        E.g. ``"C19H23N2Cl"``, ``"C5H14NO+"``, ``"[C5H14NO]+"``, ``"C2H4O2-2"`` or ``"C2H4O2 2-"``.

    Returns
    -------
    counts : dict of str to int
        Positive element counts (repeated elements added up).
    charge : int

    Raises
    ------
    FormulaError
        Naming the formula and what is wrong with it.
    """
    if not isinstance(text, str):
        raise FormulaError(f"a molecular formula must be text, got {type(text).__name__}")
    stripped = text.strip()
    spaced = _SPACED_CHARGE.match(stripped)  # "C2H4O2 2-": the charge apart from the atoms
    compact = (spaced.group(1) + spaced.group(2)[::-1] if spaced and spaced.group(2)[0].isdigit() else
               spaced.group(1) + spaced.group(2) if spaced else stripped)
    match = _FORMULA.match(compact)
    if match is None:
        raise FormulaError(f"{text!r} is not a molecular formula (expected element symbols with counts, e.g. "
                           "C9H8O4, optionally followed by a charge such as + or 2-)")
    counts = {}
    for symbol, count in _TOKEN.findall(match.group(1)):
        if symbol not in ELEMENT_MASSES:
            raise FormulaError(f"{text!r} holds the element {symbol!r}, which is not among the supported "
                               f"elements ({', '.join(sorted(ELEMENT_MASSES))})")
        counts[symbol] = counts.get(symbol, 0) + (int(count) if count else 1)
    counts = {k: v for k, v in counts.items() if v > 0}
    if not counts:
        raise FormulaError(f"{text!r} holds no atoms")
    sign = match.group(2) or match.group(5)
    size = match.group(3) if match.group(2) else match.group(4)
    charge = 0 if sign is None else (int(size) if size else 1) * (1 if sign == "+" else -1)
    return counts, charge


def format_formula(counts, charge=0):
    """Hill order: C, then H, then the other elements alphabetically (all alphabetical without carbon);
    a charge as RDKit writes it (``+``, ``-``, ``+2``)."""
    order = sorted(counts)
    if "C" in counts:
        order = ["C"] + (["H"] if "H" in counts else []) + [e for e in order if e not in ("C", "H")]
    text = "".join(f"{e}{counts[e] if counts[e] != 1 else ''}" for e in order if counts[e] > 0)
    if charge:
        text += ("+" if charge > 0 else "-") + (str(abs(charge)) if abs(charge) != 1 else "")
    return text


def canonical_formula(text):
    """Rewrite a formula given in any element order in its canonical Hill form.

    Parameters
    ----------
    text : str
        Molecular formula in any element order, optionally charged (``"[C5H14NO]+"``; see :func:`parse_formula`).

    Returns
    -------
    formula : str
        Hill order (``C19H23N2Cl`` -> ``C19H23ClN2``), the charge as RDKit writes it (``+``, ``-``, ``+2``).

    Raises
    ------
    FormulaError
        When ``text`` is not a formula of supported elements.
    """
    return format_formula(*parse_formula(text))


def monoisotopic_mass(text):
    """Compute the monoisotopic mass of a formula.

    Parameters
    ----------
    text : str
        Molecular formula of a neutral molecule or of an ion (see :func:`parse_formula`).

    Returns
    -------
    mass : float
        Monoisotopic mass (Da); for a charged formula the mass of the ion (electrons counted).

    Raises
    ------
    FormulaError
        When ``text`` is not a formula, or holds an element without a mass in :data:`ELEMENT_MASSES`.
    """
    counts, charge = parse_formula(text)
    return sum(ELEMENT_MASSES[e] * n for e, n in counts.items()) - charge * ELECTRON_MASS
