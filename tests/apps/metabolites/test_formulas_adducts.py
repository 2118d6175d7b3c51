"""Formulas in any element order, adducts in the notations of other tools, and neutral masses, checked against
RDKit's masses and against the ion arithmetic written out by hand."""

import numpy as np
import pytest

from iokr.apps.metabolites.chemistry._adducts import (
    AdductError,
    PrecursorIon,
    ion_mode_of,
    parse_adduct,
    read_charge,
    read_precursor_ion,
)
from iokr.apps.metabolites.chemistry._formulas import (
    ELECTRON_MASS,
    ELEMENT_MASSES,
    FormulaError,
    canonical_formula,
    monoisotopic_mass,
    parse_formula,
)
from iokr.apps.metabolites.chemistry._structures import formula_mass

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
    # MassBank / MS-DIAL / NIST MSP / MZmine / SIRIUS (bracketed) and GNPS (bare) notations of the same ions
    ("[M+H]+", "[M+H]+", 1, 1), ("M+H", "[M+H]+", 1, 1), ("[M+H]", "[M+H]+", 1, 1), ("[M+H]1+", "[M+H]+", 1, 1),
    ("[M+H]+1", "[M+H]+", 1, 1), ("[M + H]+", "[M+H]+", 1, 1), ("M+H+", "[M+H]+", 1, 1),
    ("[M+Na]+", "[M+Na]+", 1, 1), ("M+Na", "[M+Na]+", 1, 1), ("[M+K]+", "[M+K]+", 1, 1),
    ("[M+NH4]+", "[M+NH4]+", 1, 1), ("M+NH4", "[M+NH4]+", 1, 1),
    ("[M-H]-", "[M-H]-", 1, -1), ("M-H", "[M-H]-", 1, -1), ("[M-H]1-", "[M-H]-", 1, -1),
    # unbracketed water loss: positive (the charge of +H), whatever the sign of the last group
    ("M+H-H2O", "[M+H-H2O]+", 1, 1), ("[M+H-H2O]+", "[M+H-H2O]+", 1, 1), ("[M-H2O+H]+", "[M+H-H2O]+", 1, 1),
    ("M-H2O+H", "[M+H-H2O]+", 1, 1), ("[M-2H2O+H]+", "[M+H-2H2O]+", 1, 1), ("[M+H-NH3]+", "[M+H-NH3]+", 1, 1),
    ("M-H-H2O", "[M-H-H2O]-", 1, -1), ("[M-H-CO2-2HF]-", "[M-H-CO2-2HF]-", 1, -1),
    # multiply charged: the groups' charge and the written one agree
    ("[M+2H]2+", "[M+2H]2+", 1, 2), ("M+2H", "[M+2H]2+", 1, 2), ("[M+H+Na]2+", "[M+H+Na]2+", 1, 2),
    ("[M+Na+H]2+", "[M+H+Na]2+", 1, 2), ("[M+H+H]2+", "[M+2H]2+", 1, 2), ("[M+3H]3+", "[M+3H]3+", 1, 3),
    ("[M-2H]2-", "[M-2H]2-", 1, -2), ("[M-2H]--", "[M-2H]2-", 1, -2), ("M-2H", "[M-2H]2-", 1, -2),
    # anions added, and acids added with a proton removed: the same ions, one name
    ("[M+Cl]-", "[M+Cl]-", 1, -1), ("M+Cl", "[M+Cl]-", 1, -1), ("[M+Br]-", "[M+Br]-", 1, -1),
    ("[M+HCOO]-", "[M+HCOO]-", 1, -1), ("[M+HCO2]-", "[M+HCOO]-", 1, -1), ("[M+FA-H]-", "[M+HCOO]-", 1, -1),
    ("M+FA-H", "[M+HCOO]-", 1, -1), ("[M+HCOOH-H]-", "[M+HCOO]-", 1, -1), ("[M+H2CO2-H]-", "[M+HCOO]-", 1, -1),
    ("[M+CH3COO]-", "[M+CH3COO]-", 1, -1), ("[M+CH3COOH-H]-", "[M+CH3COO]-", 1, -1),
    ("[M+Hac-H]-", "[M+CH3COO]-", 1, -1), ("M+CH3COOH-H", "[M+CH3COO]-", 1, -1), ("[M+K-2H]-", "[M+K-2H]-", 1, -1),
    ("[M-2H+K]-", "[M+K-2H]-", 1, -1), ("[M+ACN+H]+", "[M+ACN+H]+", 1, 1), ("[M+CH3OH+H]+", "[M+MeOH+H]+", 1, 1),
    ("[2M+H]+", "[2M+H]+", 2, 1), ("2M+H", "[2M+H]+", 2, 1), ("[2M-H]-", "[2M-H]-", 2, -1),
    ("[2M+Na]+", "[2M+Na]+", 2, 1),
    # molecules charged by themselves, radicals
    ("[M]+", "[M]+", 1, 1), ("M+", "[M]+", 1, 1), ("[M]-", "[M]-", 1, -1), ("[M]+*", "[M]+*", 1, 1),
    ("[M]+.", "[M]+*", 1, 1), ("[M-CH3]-", "[M-CH3]-", 1, -1), ("[M+CH3]+", "[M+CH3]+", 1, 1),
    ("[M-OH]+", "[M-OH]+", 1, 1), ("[M-H+Li]+*", "[M+Li-H]+*", 1, 1),
    # MZmine writes the mass shift after the adduct
    ("[M+H]+ (1.0073)", "[M+H]+", 1, 1), ("[M-H]- (-1.0073)", "[M-H]-", 1, -1),
    # GNPS divides by the charge
    ("M+2H/2", "[M+2H]2+", 1, 2), ("M-2H/2", "[M-2H]2-", 1, -2), ("M+3H/3", "[M+3H]3+", 1, 3),
])
def test_parse_adduct_notations(text, name, n, charge):
    adduct = parse_adduct(text)
    assert (adduct.name, adduct.n_molecules, adduct.charge) == (name, n, charge)
    assert adduct.ion_mode == ("positive" if charge > 0 else "negative")
    assert parse_adduct(adduct.name) == adduct  # the canonical text reads back as itself


# Glucose C6H12O6 and its ions, added up by hand from the element masses (IUPAC) and the electron mass;
# the rounded values are those of adduct-calculator tables (e.g. [M+H]+ 181.070665, [M-H]- 179.056112).
H, C, N, O = ELEMENT_MASSES["H"], 12.0, ELEMENT_MASSES["N"], ELEMENT_MASSES["O"]  # noqa: E741 - element symbols
GLUCOSE = 6 * C + 12 * H + 6 * O
GLUCOSE_IONS = {
    "[M+H]+": (GLUCOSE + H - ELECTRON_MASS, 181.070665), "M+H": (GLUCOSE + H - ELECTRON_MASS, 181.070665),
    "[M+Na]+": (GLUCOSE + ELEMENT_MASSES["Na"] - ELECTRON_MASS, 203.052609),
    "[M+K]+": (GLUCOSE + ELEMENT_MASSES["K"] - ELECTRON_MASS, 219.026547),
    "[M+NH4]+": (GLUCOSE + N + 4 * H - ELECTRON_MASS, 198.097214),
    "[M-H]-": (GLUCOSE - H + ELECTRON_MASS, 179.056112),
    "[M+2H]2+": ((GLUCOSE + 2 * H - 2 * ELECTRON_MASS) / 2, 91.038971),
    "[M-2H]2-": ((GLUCOSE - 2 * H + 2 * ELECTRON_MASS) / 2, 89.024418),
    "[M+H+Na]2+": ((GLUCOSE + H + ELEMENT_MASSES["Na"] - 2 * ELECTRON_MASS) / 2, 102.029943),
    "[M+H-H2O]+": (GLUCOSE + H - (2 * H + O) - ELECTRON_MASS, 163.060100),
    "M+H-H2O": (GLUCOSE + H - (2 * H + O) - ELECTRON_MASS, 163.060100),
    "[M-H2O+H]+": (GLUCOSE + H - (2 * H + O) - ELECTRON_MASS, 163.060100),
    "[M+FA-H]-": (GLUCOSE + (C + 2 * H + 2 * O) - H + ELECTRON_MASS, 225.061591),
    "[M+HCOO]-": (GLUCOSE + (C + H + 2 * O) + ELECTRON_MASS, 225.061591),
    "[M+CH3COOH-H]-": (GLUCOSE + (2 * C + 4 * H + 2 * O) - H + ELECTRON_MASS, 239.077241),
    "[M+CH3COO]-": (GLUCOSE + (2 * C + 3 * H + 2 * O) + ELECTRON_MASS, 239.077241),
    "[M+Cl]-": (GLUCOSE + ELEMENT_MASSES["Cl"] + ELECTRON_MASS, 215.032789),
    "[2M+H]+": (2 * GLUCOSE + H - ELECTRON_MASS, 361.134053),
    "[M]+": (GLUCOSE - ELECTRON_MASS, 180.062840), "[M]+*": (GLUCOSE - ELECTRON_MASS, 180.062840),
    "[M]-": (GLUCOSE + ELECTRON_MASS, 180.063937),
}


@pytest.mark.parametrize("text", sorted(GLUCOSE_IONS))
def test_glucose_ions_by_hand(text):
    by_hand, tabulated = GLUCOSE_IONS[text]
    adduct = parse_adduct(text)
    assert by_hand == pytest.approx(tabulated, abs=1.5e-6)
    assert adduct.precursor_mz(GLUCOSE) == pytest.approx(by_hand, abs=1e-9)
    assert adduct.neutral_mass(by_hand) == pytest.approx(GLUCOSE, abs=1e-9)
    # a 1 mDa error in m/z is |charge| mDa (divided by n) in the neutral mass: |charge| is used, not the sign
    shifted = adduct.neutral_mass(by_hand + 1e-3) - GLUCOSE
    assert shifted == pytest.approx(1e-3 * abs(adduct.charge) / adduct.n_molecules, abs=1e-9)


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


@pytest.mark.parametrize("text", ["", "foo", "[M+H]+-", "M+Xx", "[0M+H]+", "M", None, "[M+H]0+", "[M]", "M+H2O",
                                  "M+H+1", "[M+H]+2-", "[M+0H]+", "2M", "M+2H/3", "M+H/2"])
def test_unreadable_adducts(text):
    with pytest.raises(AdductError):
        parse_adduct(text)


@pytest.mark.parametrize("text, groups, written", [
    ("[M+H]2+", "+1", "+2"), ("[M+H]-", "+1", "-1"), ("[M-H]+", "-1", "+1"), ("[M+2H]+", "+2", "+1"),
    ("[M-2H]-", "-2", "-1"), ("[M+Na]2+", "+1", "+2"), ("[M+Cl]+", "-1", "+1"), ("[M+FA-H]+", "-1", "+1"),
    ("[M+H+Na]+", "+2", "+1"), ("[M-H]2-", "-1", "-2"), ("[M+NH4]-", "+1", "-1"),
])
def test_adducts_whose_groups_contradict_their_charge_are_refused(text, groups, written):
    with pytest.raises(AdductError, match=rf"groups give charge \{groups} but the text says \{written}"):
        parse_adduct(text)


def test_ion_modes():
    assert [ion_mode_of(t) for t in ("Positive", "POS", "+", "negative", "n", "weird", None)] == \
        ["positive", "positive", "positive", "negative", "negative", None, None]


def test_formula_mass_is_the_ion_mass_for_neutral_formulas_and_ignores_a_charge():
    """The one mass formula (issue #29): ``formula_mass`` (candidates: neutral-equivalent, isotope labels) is
    ``monoisotopic_mass`` (ions: electrons counted) on uncharged formulas; a charge suffix is dropped, not counted."""
    pytest.importorskip("rdkit")

    for f in ("C9H8O4", "C19H23ClN2", "C6H12O6", "C5H11NO2S"):
        assert formula_mass(f) == monoisotopic_mass(f)
    # choline: the atoms' mass; the ion's mass is lighter by one electron
    assert formula_mass("C5H14NO+") == monoisotopic_mass("C5H14NO")
    assert np.isclose(monoisotopic_mass("C5H14NO+"), formula_mass("C5H14NO+") - 0.000548579909, atol=1e-9)


@pytest.mark.parametrize("value, expected", [
    ("2+", (2, 1)), ("1-", (1, -1)), ("-1", (1, -1)), ("+2", (2, 1)), ("2", (2, None)), ("1", (1, None)),
    ("+", (1, 1)), ("-", (1, -1)), (" 3+ ", (3, 1)), (2, (2, 1)), (-2, (2, -1)),
    (1.0, (1, 1)), ("0", (None, None)), (0, (None, None)), (None, (None, None)), ("", (None, None)),
])
def test_read_charge(value, expected):
    assert read_charge(value) == expected


@pytest.mark.parametrize("value", ["abc", "2+-", "1.5", 1.5, float("nan"), True, "++2"])
def test_unreadable_charges(value):
    with pytest.raises(ValueError, match="charge"):
        read_charge(value)


@pytest.mark.parametrize("meta, adduct, ion_mode, charge", [
    ({}, None, None, None),
    ({"adduct": "[M+H]+"}, "[M+H]+", "positive", 1),
    ({"adduct": "M+H-H2O", "ion_mode": "positive", "charge": "1+"}, "[M+H-H2O]+", "positive", 1),
    ({"adduct": "[M-H]-", "ion_mode": "NEGATIVE", "charge": "1-"}, "[M-H]-", "negative", -1),
    ({"adduct": "[M-H]-", "ion_mode": "negative", "charge": "1"}, "[M-H]-", "negative", -1),  # unsigned CHARGE
    ({"adduct": "[M+2H]2+", "charge": "2+"}, "[M+2H]2+", "positive", 2),
    ({"adduct": "[M-2H]2-", "charge": "2-", "ion_mode": "Negative"}, "[M-2H]2-", "negative", -2),
    ({"ion_mode": "negative"}, None, "negative", None),
    ({"ion_mode": "POS", "charge": "1"}, None, "positive", 1),
    ({"ion_mode": "negative", "charge": "1"}, None, "negative", -1),
    ({"ion_mode": "positive", "charge": "2+"}, None, "positive", 2),
    ({"ion_mode": "negative", "charge": "2"}, None, "negative", -2),
    ({"charge": "2-"}, None, "negative", -2),
    ({"charge": "-1"}, None, "negative", -1),
    ({"charge": -1}, None, "negative", -1),  # matchms keeps the charge as an int
    ({"charge": "1"}, None, None, None),  # neither sign nor mode: unknown, not assumed
    ({"charge": "0", "ion_mode": "positive"}, None, "positive", None),  # CHARGE=0: not given
    ({"adduct": "[M]+*", "ion_mode": "POSITIVE"}, "[M]+*", "positive", 1),
    ({"adduct": "M+NH4", "adduct_source": "name"}, "[M+NH4]+", "positive", 1),
])
def test_read_precursor_ion_consistent(meta, adduct, ion_mode, charge):
    before = dict(meta)
    ion = read_precursor_ion(meta)
    assert isinstance(ion, PrecursorIon)
    assert (None if ion.adduct is None else ion.adduct.name, ion.ion_mode, ion.charge, ion.problem) == \
        (adduct, ion_mode, charge, "")
    assert meta == before


@pytest.mark.parametrize("meta, adduct, ion_mode, charge, problem", [
    ({"adduct": "[M+H]+", "ion_mode": "negative"}, "[M+H]+", "positive", 1,
     "adduct [M+H]+ contradicts ion mode negative"),
    ({"adduct": "[M-H]-", "ion_mode": "Positive"}, "[M-H]-", "negative", -1,
     "adduct [M-H]- contradicts ion mode Positive"),
    ({"adduct": "[M+H]+", "charge": "2+"}, "[M+H]+", "positive", 1, "adduct [M+H]+ contradicts charge 2+"),
    ({"adduct": "[M+H]+", "charge": "2"}, "[M+H]+", "positive", 1, "adduct [M+H]+ contradicts charge 2"),
    ({"adduct": "[M+2H]2+", "charge": "1+"}, "[M+2H]2+", "positive", 2, "adduct [M+2H]2+ contradicts charge 1+"),
    ({"adduct": "[M+H]+", "charge": "1-"}, "[M+H]+", "positive", 1, "adduct [M+H]+ contradicts charge 1-"),
    ({"adduct": "[M-H]-", "charge": -1, "ion_mode": "positive"}, "[M-H]-", "negative", -1,
     "adduct [M-H]- contradicts ion mode positive"),
    ({"ion_mode": "positive", "charge": "1-"}, None, "positive", None, "charge 1- contradicts ion mode positive"),
    ({"ion_mode": "negative", "charge": "2+"}, None, "negative", None, "charge 2+ contradicts ion mode negative"),
    ({"charge": "2"}, None, None, None, "charge 2 has no sign and no ion mode is given (state it with --ion-mode)"),
    ({"adduct": "[M+H]2+", "ion_mode": "positive"}, None, "positive", None,
     "unreadable adduct: '[M+H]2+': the groups give charge +1 but the text says +2"),
    ({"adduct": "Cat"}, None, None, None, "unreadable adduct: 'Cat' is not an adduct such as [M+H]+ or [M-H]-"),
    ({"ion_mode": "positive", "charge": "two"}, None, "positive", None,
     "unreadable charge: charge 'two' is not a charge such as 2+, 1- or -1"),
])
def test_read_precursor_ion_contradictions(meta, adduct, ion_mode, charge, problem):
    ion = read_precursor_ion(meta)
    assert (None if ion.adduct is None else ion.adduct.name, ion.ion_mode, ion.problem) == (adduct, ion_mode, problem)
    if charge is not None:
        assert ion.charge == charge


@pytest.mark.parametrize(("meta", "default", "ion_mode", "charge", "assumed", "unsigned"), [
    # nothing states the mode: the default gives it, and the sign of an unsigned CHARGE (whose size stays in
    # unsigned_charge, so that the detail says the file gave a charge without its sign)
    ({}, "negative", "negative", None, True, None),
    ({"charge": "1"}, "negative", "negative", -1, True, 1),
    ({"charge": "2"}, "positive", "positive", 2, True, 2),
    ({"charge": "1"}, None, None, None, False, 1),
    ({"charge": 1}, None, "positive", 1, False, None),  # a number is signed (JSON's charge: 1, -1)
    # what the file states wins over the default
    ({"charge": "1+"}, "negative", "positive", 1, False, None),
    ({"ion_mode": "positive", "charge": "1"}, "negative", "positive", 1, False, None),
    ({"adduct": "[M-H]-"}, "positive", "negative", -1, False, None),
])
def test_read_precursor_ion_default_ion_mode(meta, default, ion_mode, charge, assumed, unsigned):
    ion = read_precursor_ion(meta, default)
    assert (ion.ion_mode, ion.charge, ion.ion_mode_assumed, ion.unsigned_charge, ion.problem) == (
        ion_mode, charge, assumed, unsigned, "")
