import itertools

import numpy as np
import pytest

from iokr.apps.metabolites import Spectra
from iokr.apps.metabolites.chemistry._annotation import (
    ELEMENTS,
    AnnotationSettings,
    annotate,
    decode,
    encode,
    key_to_formula,
    precursor_ion,
)
from iokr.apps.metabolites.chemistry._formulas import ELECTRON_MASS, ELEMENT_MASSES, parse_formula

VALENCE = {e: v for e, v, _ in ELEMENTS}
PROTON = ELEMENT_MASSES["H"] - ELECTRON_MASS


def _naive_explanations(formula, adduct_counts, charge, mz, settings):
    """Every (peak, fragment formula) pair by plain enumeration of all subformulas, one at a time."""
    counts, _ = parse_formula(formula)
    for e, n in adduct_counts.items():
        counts[e] = counts.get(e, 0) + n
    elements = sorted(counts)
    precursor_mass = sum(ELEMENT_MASSES[e] * counts[e] for e in elements) - charge * ELECTRON_MASS
    found = set()
    for combo in itertools.product(*(range(counts[e] + 1) for e in elements)):
        if sum(combo) == 0:
            continue
        rdbe = 1 + sum(n * (VALENCE[e] - 2) / 2 for e, n in zip(elements, combo, strict=True))
        if rdbe < -0.5:
            continue
        mass = sum(ELEMENT_MASSES[e] * n for e, n in zip(elements, combo, strict=True)) - charge * ELECTRON_MASS
        for j, m in enumerate(mz):
            tol = max(m * settings.ppm * 1e-6, settings.abs_tolerance)
            if abs(m - mass) <= tol and m <= precursor_mass + tol:
                found.add((j, "".join(f"{e}{n}" for e, n in zip(elements, combo, strict=True) if n)))
    return found, precursor_mass


def _as_pairs(annotation, elements):
    pairs = set()
    for j in range(annotation.offsets.size - 1):
        for key in annotation.fragment[annotation.offsets[j]:annotation.offsets[j + 1]]:
            counts = dict(zip([e for e, _, _ in ELEMENTS], decode(key).tolist(), strict=True))
            pairs.add((j, "".join(f"{e}{counts[e]}" for e in elements if counts[e])))
    return pairs


@pytest.mark.parametrize("formula,adduct,added,charge", [
    ("C6H12O6", "[M+H]+", {"H": 1}, 1),
    ("C5H5N5O", "[M+Na]+", {"Na": 1}, 1),
    ("C4H7NO2S", "[M-H]-", {"H": -1}, -1),
    ("C7H7ClN2O", "[M+H-H2O]+", {"H": -1, "O": -1}, 1),
])
@pytest.mark.parametrize("ppm,abs_tolerance", [(10.0, 0.002), (50.0, 0.02)])
def test_annotation_matches_naive_enumeration(formula, adduct, added, charge, ppm, abs_tolerance):
    rng = np.random.default_rng(len(formula) + int(ppm))
    settings = AnnotationSettings(ppm=ppm, abs_tolerance=abs_tolerance)
    _, precursor_mass = _naive_explanations(formula, added, charge, [], settings)
    # peaks: a few near true subformula masses (within and just outside the window), random ones, one above
    vec, _ = precursor_ion(formula, adduct)
    frags = rng.integers(0, vec + 1, size=(12, vec.size))
    frag_mass = frags @ np.array([ELEMENT_MASSES[e] for e, _, _ in ELEMENTS]) - charge * ELECTRON_MASS
    frag_mass = frag_mass[frag_mass > 5]
    noise = rng.uniform(-1.5, 1.5, size=frag_mass.size) * np.maximum(frag_mass * ppm * 1e-6, abs_tolerance)
    mz = np.concatenate([frag_mass + noise, rng.uniform(10, precursor_mass, size=15), [precursor_mass + 3.0]])
    mz = np.sort(mz[mz > 1])
    S = Spectra.from_peak_lists([np.column_stack([mz, np.ones_like(mz)])], [precursor_mass],
                                [{"formula": formula, "adduct": adduct}])
    ann = annotate(S, settings)
    elements = sorted(parse_formula(formula)[0].keys() | added.keys())
    expected, _ = _naive_explanations(formula, added, charge, S.mz, settings)
    assert expected, "the test should place peaks on subformulas"
    assert _as_pairs(ann, elements) == expected
    assert ann.report.n_peaks_above_precursor == 1
    assert ann.report.n_annotated_spectra == 1 and not ann.report.fallbacks
    # losses are the element-wise differences to the precursor ion, never negative
    diff = decode(ann.precursor[0]) - decode(ann.fragment)
    np.testing.assert_array_equal(decode(ann.loss), diff)
    assert np.all(diff >= 0)


def test_precursor_ion_formulas():
    for formula, adduct, expected in [("C6H12O6", "[M+H]+", "C6H13O6+"), ("C6H12O6", "M+Na", "C6H12NaO6+"),
                                      ("C6H12O6", "[M+H-H2O]+", "C6H11O5+"), ("C6H12O6", "[M-H]-", "C6H11O6-"),
                                      ("C2H4O2", "[2M+H]+", "C4H9O4+")]:
        vec, charge = precursor_ion(formula, adduct)
        assert key_to_formula(int(encode(vec)), charge) == expected


def test_keys_round_trip():
    rng = np.random.default_rng(1)
    limits = np.array([(1 << b) - 1 for _, _, b in ELEMENTS])
    counts = rng.integers(0, limits + 1, size=(50, limits.size))
    np.testing.assert_array_equal(decode(encode(counts)), counts)


def _one(formula, mz, precursor, adduct="[M+H]+", inchi=None):
    meta = {"formula": formula, "adduct": adduct}
    if inchi:
        meta["inchi"] = inchi
    return mz, precursor, meta


@pytest.mark.parametrize("entry,reason", [
    (_one(None, [91.0542], 181.0859), "no_formula"),
    (_one("C6H12O6x", [91.0542], 181.0859), "bad_formula"),
    (_one("C2H6Hg", [91.0542], 181.0859), "unsupported_element"),
    (_one("C5H14NO+", [91.0542], 105.1), "charged_formula"),
    (_one("C6H12O6", [91.0542], 181.0859, adduct="[M+Q]+"), "bad_adduct"),
    (_one("C6H12O6", [91.0542], 91.04, adduct="[M+2H]2+"), "unsupported_charge"),
    (_one("C6H12O6", [91.0542], 250.0), "precursor_mismatch"),
    (_one("C6H12O6", [91.05, 103.0, 127.04], 181.0859), "low_resolution"),
    (_one("C300H12O6", [91.0542], None), "too_large"),
])
def test_fallbacks_are_counted_never_raised(entry, reason):
    mz, precursor, meta = entry
    good = _one("C6H12O6", [85.0284, 127.0390], 181.0707)
    S = Spectra.from_peak_lists([np.column_stack([m, np.ones(len(m))]) for m in (mz, good[0])],
                                [np.nan if precursor is None else precursor, good[1]], [meta, good[2]])
    ann = annotate(S)
    assert dict(ann.report.fallbacks) == {reason: 1}
    assert ann.precursor[0] == -1 and ann.precursor[1] >= 0
    assert np.all(np.diff(ann.offsets)[:len(mz)] == 0)
    assert ann.report.n_annotated_spectra == 1
    assert "1/2 spectra annotated" in ann.report.summary()
    assert ann.fallback == (reason, "")  # per spectrum, for identify's per-query report
    n_explained, n_above = ann.per_spectrum(S)
    assert n_explained.tolist() == [0, 2] and n_above.tolist() == [0, 0]


def test_peaks_above_the_precursor_are_counted_per_spectrum():
    """Peaks heavier than the precursor ion (beyond the m/z tolerance) stay unannotated and are counted, per spectrum
    and in the report; the precursor ion itself within tolerance is not 'above'."""
    mz = [[85.0284, 127.0390, 181.0707, 181.0707 + 0.0015, 190.0, 300.0], [85.0284, 200.0]]
    S = Spectra.from_peak_lists([np.column_stack([m, np.ones(len(m))]) for m in mz], [181.0707, 181.0707],
                                [{"formula": "C6H12O6"}, {"formula": None}])
    ann = annotate(S)
    n_explained, n_above = ann.per_spectrum(S)
    assert n_explained.tolist() == [4, 0] and n_above.tolist() == [2, 0]  # fallback spectra count nothing
    assert ann.above_precursor.tolist() == [False] * 4 + [True, True, False, False]
    assert ann.report.n_peaks_above_precursor == 2 and ann.fallback == ("", "no_formula")


def test_formula_from_inchi_first():
    inchi = "InChI=1S/C6H12O6/c7-1-2-3(8)4(9)5(10)6(11)12-2/h2-11H,1H2"
    mz = np.array([85.0284, 127.0390])
    S = Spectra.from_peak_lists([np.column_stack([mz, np.ones(2)])], [181.0707],
                                [{"formula": "C7H14O6", "inchi": inchi}])
    ann = annotate(S)
    assert key_to_formula(int(ann.precursor[0]), 1) == "C6H13O6+"
    assert ann.report.n_peaks_annotated == 2
