"""Formulas in any element order, adducts in the notations of other tools, and neutral masses, checked against
RDKit's masses and against the ion arithmetic written out by hand."""

import numpy as np
import pytest

from iokr.apps.metabolites._adducts import AdductError, ion_mode_of, parse_adduct
from iokr.apps.metabolites._fingerprints import formula_mass
from iokr.apps.metabolites._formulas import (
    ELECTRON_MASS,
    ELEMENT_MASSES,
    FormulaError,
    canonical_formula,
    monoisotopic_mass,
    parse_formula,
)

PROTON = ELEMENT_MASSES["H"] - ELECTRON_MASS


@pytest.mark.parametrize("text, canonical", [
    ("C19H23N2Cl", "C19H23ClN2"), ("C19H23ClN2", "C19H23ClN2"), ("N2ClH23C19", "C19H23ClN2"),
    ("CH3CH2OH", "C2H6O"), ("NaCl", "ClNa"), ("H2O", "H2O"), ("[C5H14NO]+", "C5H14NO+"), ("C5H14NO+", "C5H14NO+"),
    ("C2H4O2-2", "C2H4O2-2"), ("C2H4O2 2-", "C2H4O2-2"), (" C6H12O6 ", "C6H12O6"), ("CCl2", "CCl2"),
])
def test_canonical_formula_any_order(text, canonical):
    assert canonical_formula(text) == canonical


@pytest.mark.parametrize("text", ["", "c6h12o6", "C6H12O6Xx", "C6(H2O)6", "123", "C6H12O6+-", None, "C0"])
def test_unreadable_formulas_name_the_text(text):
    with pytest.raises(FormulaError):
        parse_formula(text)


def test_monoisotopic_mass_matches_rdkit():
    Chem = pytest.importorskip("rdkit.Chem")
    from rdkit.Chem.Descriptors import ExactMolWt  # noqa: PLC0415 - optional chem extra, after importorskip
    from rdkit.Chem.rdMolDescriptors import CalcMolFormula  # noqa: PLC0415 - optional chem extra, after importorskip

    for smiles in ["CCO", "c1ccccc1O", "OCC1OC(O)C(O)C(O)C1O", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "ClC(Cl)Cl",
                   "CSCC[C@H](N)C(=O)O", "OP(=O)(O)OCC", "Brc1ccc(I)cc1F"]:
        mol = Chem.MolFromSmiles(smiles)
        assert monoisotopic_mass(CalcMolFormula(mol)) == pytest.approx(ExactMolWt(mol), abs=1e-5)


@pytest.mark.parametrize("text, name, n, charge", [
    ("[M+H]+", "[M+H]+", 1, 1), ("M+H", "[M+H]+", 1, 1), ("[M+H]", "[M+H]+", 1, 1), ("[M+H]1+", "[M+H]+", 1, 1), ("[M+Na]+", "[M+Na]+", 1, 1),
    ("[M-H]-", "[M-H]-", 1, -1), ("M-H", "[M-H]-", 1, -1), ("[M-H]1-", "[M-H]-", 1, -1),
    ("[M+H-H2O]+", "[M+H-H2O]+", 1, 1), ("[M+FA-H]-", "[M+FA-H]-", 1, -1), ("[2M+H]+", "[2M+H]+", 2, 1),
    ("[M+2H]2+", "[M+2H]2+", 1, 2), ("[M]+", "[M]+", 1, 1), ("[M+NH4]+", "[M+NH4]+", 1, 1),
])
def test_parse_adduct_notations(text, name, n, charge):
    adduct = parse_adduct(text)
    assert (adduct.name, adduct.n_molecules, adduct.charge) == (name, n, charge)
    assert adduct.ion_mode == ("positive" if charge > 0 else "negative")


def test_neutral_masses_by_hand():
    caffeine = monoisotopic_mass("C8H10N4O2")
    cases = {"[M+H]+": caffeine + PROTON, "[M+Na]+": caffeine + ELEMENT_MASSES["Na"] - ELECTRON_MASS,
             "[M-H]-": caffeine - PROTON, "[M+2H]2+": (caffeine + 2 * PROTON) / 2,
             "[2M+H]+": 2 * caffeine + PROTON, "[M+H-H2O]+": caffeine + PROTON - monoisotopic_mass("H2O"),
             "[M+Cl]-": caffeine + ELEMENT_MASSES["Cl"] + ELECTRON_MASS}
    for text, mz in cases.items():
        adduct = parse_adduct(text)
        assert adduct.precursor_mz(caffeine) == pytest.approx(mz, abs=1e-9)
        assert adduct.neutral_mass(mz) == pytest.approx(caffeine, abs=1e-9)
    assert cases["[M+H]+"] == pytest.approx(195.087652, abs=1e-6)  # caffeine [M+H]+ as tabulated


@pytest.mark.parametrize("text", ["", "foo", "[M+H]+-", "M+Xx", "[0M+H]+", "M", None, "[M+H]0+"])
def test_unreadable_adducts(text):
    with pytest.raises(AdductError):
        parse_adduct(text)


def test_ion_modes():
    assert [ion_mode_of(t) for t in ("Positive", "POS", "+", "negative", "n", "weird", None)] == \
        ["positive", "positive", "positive", "negative", "negative", None, None]


def test_formula_mass_agrees_with_the_legacy_rdkit_route():
    pytest.importorskip("rdkit")

    for f in ("C9H8O4", "C19H23ClN2", "C6H12O6", "C5H11NO2S"):
        assert np.isclose(formula_mass(f), monoisotopic_mass(f), atol=1e-6)
