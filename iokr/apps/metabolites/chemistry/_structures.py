"""The identity a candidate is indexed and ranked under: its parent structure, true isotopes, and charge.

Candidate tables written by other tools hold salts, hydrates and mixtures (``CCN.Cl.Cl``, ``CCO.O``,
``[Na+].[O-]C(=O)c1ccccc1``), isotope-labelled standards (``[2H]``, ``[13C]``, ``[15N]``) and permanently charged
molecules (choline ``C[N+](C)(C)CCO``). Each is reduced to what a mass spectrometer measures and what SIRIUS and
MetFrag show as the candidate:

- **parent**: the largest organic fragment (RDKit's ``LargestFragmentChooser(preferOrganic=True)``), then charges
  neutralized where RDKit's ``Uncharger`` can (carboxylates, protonated amines; never a quaternary nitrogen).
  Single-fragment molecules without charges skip the standardizer (nothing for it to do; indexing speed is kept).
  The formula, mass, InChIKey, fingerprint and the derived ``smiles`` output column are the parent's; the text the
  user gave stays in their own column (``structure`` for candidate lists).
- **isotopes**: the formula keeps labelled atoms apart as RDKit's ``CalcMolFormula(separateIsotopes=True)`` writes
  them (``D`` and ``T`` for hydrogen, ``[13C]``, ``[15N]``...: d3-metformin is ``C4H8D3N5``, never metformin's
  ``C4H11N5``), and the mass counts each isotope's own mass, so an unlabelled query matches a labelled candidate
  neither by formula nor by mass.
- **charge**: a permanently charged parent keeps its charge in the formula (choline ``C5H14NO+``), and its stored
  mass is the *neutral-equivalent* mass: the sum of its atoms' masses, electrons not subtracted. That is the mass
  ``Adduct.neutral_mass`` gives for a ``[M]+`` (``[M]2+``, ``[M]-``) query at the ion's m/z, which adds the missing
  electrons back; storing the ion's mass instead would put choline 5 ppm away from its own ``[M]+`` query.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ._fingerprints import _rdkit, inchikey, inchikey_of_inchi, molecular_formula, parse_structure
from ._formulas import ELEMENT_MASSES, FormulaError, canonical_formula, monoisotopic_mass

#: Symbols RDKit's formula uses for hydrogen isotopes (``abbreviateHIsotopes``).
_HYDROGEN_ISOTOPES = {"D": 2, "T": 3}
_ISOTOPE_TOKEN = re.compile(r"\[(\d+)([A-Z][a-z]?)\](\d*)|([A-Z][a-z]?)(\d*)")
_CHARGE_SUFFIX = re.compile(r"[+-]\d*$")


@dataclass(frozen=True)
class Parent:
    """A candidate as indexed: its parent molecule and what was done to reach it.

    Attributes
    ----------
    mol : rdkit.Chem.Mol
        The parent structure (the parsed molecule itself when nothing was reduced).
    key : str
        Full InChIKey of the parent.
    smiles : str
        The text as given when nothing was reduced and it is a SMILES; the parent's canonical SMILES otherwise.
    formula : str
        Canonical formula; labelled atoms apart (``C4H8D3N5``), the charge of a charged parent kept (``C5H14NO+``).
    mass : float
        Neutral-equivalent monoisotopic mass (Da): every atom at its own isotope's mass, electrons not subtracted.
    reduced : bool
        Fragments were removed (salt, hydrate, mixture).
    neutralized : bool
        A charge was neutralized by the standardizer.
    labelled : bool
        The parent holds isotope-labelled atoms.
    charge : int
        Net charge left on the parent (permanently charged molecules).
    """

    mol: object
    key: str
    smiles: str
    formula: str
    mass: float
    reduced: bool = False
    neutralized: bool = False
    labelled: bool = False
    charge: int = 0


def _standardizers():
    from rdkit.Chem.MolStandardize import rdMolStandardize  # noqa: PLC0415 - rdkit is an optional dependency

    if not hasattr(_standardizers, "cache"):
        _standardizers.cache = (rdMolStandardize.LargestFragmentChooser(preferOrganic=True),
                                rdMolStandardize.Uncharger())
    return _standardizers.cache


def parent_molecule(mol):
    """``(parent, reduced, neutralized)``: the largest organic fragment of ``mol``, charges neutralized where
    RDKit's ``Uncharger`` can; ``mol`` itself when it is one fragment without charged atoms."""
    Chem = _rdkit()
    n_fragments = len(Chem.GetMolFrags(mol))
    charged = any(atom.GetFormalCharge() for atom in mol.GetAtoms())
    if n_fragments == 1 and not charged:
        return mol, False, False
    chooser, uncharger = _standardizers()
    parent = chooser.choose(mol) if n_fragments > 1 else mol
    before = Chem.MolToSmiles(parent)
    parent = uncharger.uncharge(parent)
    return parent, n_fragments > 1, Chem.MolToSmiles(parent) != before


def isotope_formula(mol):
    """Canonical formula of ``mol`` with labelled atoms apart (``C4H8D3N5``, ``C[13C]H4O2``) and its charge."""
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula  # noqa: PLC0415 - rdkit is an optional dependency

    if any(atom.GetIsotope() for atom in mol.GetAtoms()):
        return CalcMolFormula(mol, True, True)  # RDKit's order; no other tool's formula can equal it by accident
    return canonical_formula(CalcMolFormula(mol))


def formula_mass(formula):
    """Neutral-equivalent monoisotopic mass of a formula (Da), labelled atoms at their isotope's mass.

    ``C4H8D3N5`` (d3-metformin) 132.1203; ``C5H14NO+`` (choline) 104.1075, the mass of its atoms: the charge is
    ignored (see the module docstring). Raises :class:`FormulaError` for text that is no formula.
    """
    if not isinstance(formula, str):
        raise FormulaError(f"a molecular formula must be text, got {type(formula).__name__}")
    body = _CHARGE_SUFFIX.sub("", formula.strip())
    if "[" not in body and not any(symbol in body for symbol in _HYDROGEN_ISOTOPES):
        return monoisotopic_mass(body)  # uncharged once the suffix is gone: the formula's own mass
    table = _rdkit().GetPeriodicTable()
    mass, consumed = 0.0, 0
    for match in _ISOTOPE_TOKEN.finditer(body):
        if match.start() != consumed:
            break
        consumed = match.end()
        isotope, symbol, count = match.group(1), match.group(2), match.group(3)
        if isotope is None:
            symbol, count = match.group(4), match.group(5)
            isotope = _HYDROGEN_ISOTOPES.get(symbol)
            symbol = "H" if isotope else symbol
        try:
            atom = (table.GetMassForIsotope(symbol, int(isotope)) if isotope else ELEMENT_MASSES[symbol])
        except (KeyError, RuntimeError):
            atom = 0.0
        if not atom > 0:  # RDKit gives 0 for an isotope it does not know
            raise FormulaError(f"{formula!r} holds the unknown atom {match.group(0)!r}")
        mass += atom * (int(count) if count else 1)
    if consumed != len(body) or not body:
        raise FormulaError(f"{formula!r} is not a molecular formula")
    return mass


def parent_of(text):
    """The :class:`Parent` of a SMILES or InChI text; ``None`` when RDKit rejects it (or it has no InChIKey or a
    formula with elements :mod:`._formulas` does not know).

    Texts that :func:`may_need_parent` clears (one neutral unlabelled molecule, most of any database) take the
    short way: no standardizer and no walk over the atoms, so indexing is as fast as before parents existed.
    """
    return parents_of([text])[0]


def parents_of(texts):
    """``[parent_of(text) for text in texts]``, one step at a time over all of ``texts``: every text parsed, then
    every parent standardized, then every InChIKey, then every formula. The same results for less CPU: each RDKit
    step runs with its code and tables hot in the caches (on 2,000 MOSES SMILES, parsing and InChIKeys step by step
    took 10-15 % less CPU than row by row).
    """
    mols = [parse_structure(text) if isinstance(text, str) else None for text in texts]
    staged = [None if mol is None else _standardized(text.strip(), mol) for text, mol in zip(texts, mols, strict=True)]
    keys = [None if stage is None else _key(*stage) for stage in staged]
    return [None if key is None else _finished(*stage, key) for stage, key in zip(staged, keys, strict=True)]


def _standardized(text, mol):
    """``(text, parent, reduced, neutralized, plain)``: the parent of ``mol`` parsed from ``text`` (stripped)."""
    plain = not may_need_parent(text)
    parent, reduced, neutralized = (mol, False, False) if plain else parent_molecule(mol)
    return text, parent, reduced, neutralized, plain


def _key(text, parent, reduced, neutralized, plain):
    # The key of an unchanged InChI straight from its text (skips regenerating the InChI from the molecule).
    key = inchikey_of_inchi(text) if text.startswith("InChI=") and not (reduced or neutralized) else None
    return key or inchikey(parent)


def _finished(text, parent, reduced, neutralized, plain, key):
    """The :class:`Parent`, or None when its formula holds an element :mod:`._formulas` does not know."""
    try:
        formula, mass = _plain_formula_mass(molecular_formula(parent)) if plain else _formula_mass(parent)
    except FormulaError:
        return None
    Chem = _rdkit()
    changed = reduced or neutralized
    smiles = text if not changed and not text.startswith("InChI=") else Chem.MolToSmiles(parent)
    labelled = not plain and any(atom.GetIsotope() for atom in parent.GetAtoms())
    return Parent(mol=parent, key=key, smiles=smiles, formula=formula, mass=mass, reduced=reduced,
                  neutralized=neutralized, labelled=labelled, charge=0 if plain else Chem.GetFormalCharge(parent))


@functools.lru_cache(maxsize=1 << 16)
def _plain_formula_mass(rdkit_formula):
    """``(canonical formula, mass)`` of RDKit's formula of a neutral unlabelled molecule, remembered: isomers share
    formulas (the first 20,000 MOSES rows hold 5,864 formulas), and the pair is a pure function of the text."""
    formula = canonical_formula(rdkit_formula)
    return formula, formula_mass(formula)


def _formula_mass(mol):
    formula = isotope_formula(mol)
    return formula, formula_mass(formula)


_SMILES_NEEDS_PARENT = re.compile(r"\.|\[\d|\[[^\]]*[+-]")
_INCHI_NEEDS_PARENT = re.compile(r"/[qpi]")


def may_need_parent(text):
    """Whether a structure text may hold fragments, charges or isotopes, from the text alone. False means the text
    is one neutral unlabelled molecule: a SMILES writes charges and isotopes in brackets (``[N+]``, ``[13C]``) and
    fragments apart with ``.``; an InChI has its charge (``/q``), protons (``/p``) and isotopes (``/i``) in layers
    of their own and its components apart with ``.`` in the formula layer. Parents are then the molecule itself, and
    fingerprints cached before parents existed still hold."""
    if not isinstance(text, str):
        return False
    text = text.strip()
    if text.startswith("InChI="):
        layers = text.split("/")
        return (len(layers) > 1 and "." in layers[1]) or bool(_INCHI_NEEDS_PARENT.search(text))
    return bool(_SMILES_NEEDS_PARENT.search(text))
