"""A FORMULA checked against the precursor m/z at the precision the record states: its written decimals, and the
nominal mass of a unit-resolution record (peaks to one decimal); the detail says when a formula was taken that way.
Policy tests on the function, then through plan_queries on MGF / MSP text."""

import numpy as np
import pytest
from test_query_planning import RecordingSource

from iokr.apps.metabolites import read_spectra
from iokr.apps.metabolites.chemistry._adducts import parse_adduct
from iokr.apps.metabolites.chemistry._formulas import monoisotopic_mass
from iokr.apps.metabolites.chemistry._precursor_precision import (
    NOMINAL_MASS_DA,
    check_formula,
    nominal_mass_record,
    precursor_tolerance,
    written_decimals,
)
from iokr.apps.metabolites.ranking._identify import IdentifySettings, plan_queries

GLUCOSE = monoisotopic_mass("C6H12O6")
MH = parse_adduct("[M+H]+")
ACCURATE_PEAKS = np.array([60.0444, 138.0662])
NOMINAL_PEAKS = np.array([135.0, 136.0])


@pytest.mark.parametrize("value, expected", [(428.31, 2), (181.1, 1), (181.0, 0), (428.0, 0), (181.0707, 4),
                                             (303.133484, 6), (0.5, 1), (1234.56789, 5)])
def test_written_decimals_of_the_value_as_read(value, expected):
    assert written_decimals(value) == expected


def test_nominal_mass_record_is_every_peak_to_at_most_one_decimal():
    assert nominal_mass_record(NOMINAL_PEAKS) and nominal_mass_record(np.array([205.2, 259.2, 303.1]))
    assert not nominal_mass_record(np.array([135.0, 136.06]))  # one accurate peak: an accurate-mass record
    assert not nominal_mass_record(ACCURATE_PEAKS)
    assert not nominal_mass_record(np.array([]))  # no peak says nothing about the resolution


@pytest.mark.parametrize("precursor, peaks, tolerance", [
    (181.0707, ACCURATE_PEAKS, 0.00005),  # four decimals: half a unit of the fourth
    (181.1, ACCURATE_PEAKS, 0.05),
    (181.0, ACCURATE_PEAKS, 0.5),
    (428.31, NOMINAL_PEAKS, NOMINAL_MASS_DA),  # a unit-resolution record, whatever the precursor's decimals
    (303.133484, np.array([205.2, 303.1]), NOMINAL_MASS_DA),
])
def test_precursor_tolerance_is_the_wider_of_written_precision_and_resolution(precursor, peaks, tolerance):
    got, _ = precursor_tolerance(precursor, peaks)
    assert got == pytest.approx(tolerance)


def _brute_force_use(formula, adduct, precursor, peaks, min_ppm):
    """The policy spelled out: within ``min_ppm``, or within half a unit of the precursor's last written decimal,
    or within 0.5 Da on a record whose every peak is written to at most one decimal."""
    expected = adduct.precursor_mz(monoisotopic_mass(formula))
    decimals = len(repr(float(precursor)).split(".")[1].rstrip("0"))
    on_tenths = len(peaks) > 0 and all(len(repr(float(p)).split(".")[1].rstrip("0")) <= 1 for p in peaks)
    return (abs(precursor - expected) <= expected * min_ppm * 1e-6
            or abs(precursor - expected) <= 0.5 * 10.0 ** -decimals + 1e-12
            or (on_tenths and abs(precursor - expected) <= 0.5))


@pytest.mark.parametrize("offset_da", [0.0, 0.002, -0.004, 0.006, 0.03, -0.049, 0.051, 0.27, -0.45, 0.55, 1.008])
@pytest.mark.parametrize("decimals", [0, 1, 2, 4, 6])
@pytest.mark.parametrize("peaks", [ACCURATE_PEAKS, NOMINAL_PEAKS], ids=["accurate", "nominal"])
def test_check_formula_agrees_with_the_policy_spelled_out(offset_da, decimals, peaks):
    precursor = round(MH.precursor_mz(GLUCOSE) + offset_da, decimals)
    check = check_formula("C6H12O6", MH, precursor, peaks, 20.0)
    assert check.use is _brute_force_use("C6H12O6", MH, precursor, peaks, 20.0), (precursor, check)
    off_ppm = abs(precursor - MH.precursor_mz(GLUCOSE)) / MH.precursor_mz(GLUCOSE) * 1e6
    if off_ppm <= 20.0:
        assert check.note == ""  # the ordinary case says nothing
    elif check.use:
        assert check.note.startswith("FORMULA C6H12O6 taken") and f"{off_ppm:.0f} ppm" in check.note
    else:
        assert check.note == f"FORMULA C6H12O6 contradicts precursor m/z by {off_ppm:.0f} ppm ([M+H]+); " \
                             "looked up by mass"


def test_a_formula_of_another_adduct_still_contradicts_a_nominal_record():
    # glucose's [M+Na]+ m/z, written to one decimal on a unit-resolution record, is 22 Da from its [M+H]+
    check = check_formula("C6H12O6", MH, 203.1, NOMINAL_PEAKS, 20.0)
    assert not check.use and "contradicts precursor m/z" in check.note


def test_a_charged_formula_is_not_checked():
    assert check_formula("C5H14NO+", MH, 300.0, ACCURATE_PEAKS, 20.0) == (True, "")


# -- through plan_queries, as the files write them ---------------------------------------------------------------------
def _plan(path):
    spectra, _ = read_spectra(path, keep_empty=True)
    source = RecordingSource()
    return plan_queries(spectra, spectra.n_peaks, {"[M+H]+"}, source, IdentifySettings()), source


def test_a_unit_resolution_msp_record_is_looked_up_by_its_formula_and_says_so(tmp_path):
    # MassBank PS010904 as matchms ships it: ADP on a Waters TQD (LC-ESI-QQ), PrecursorMZ 428.31, peaks 135.0 / 136.0
    path = tmp_path / "adp.msp"
    path.write_text("Name: ADP\nDB#: PS010904\nPrecursorMZ: 428.31\nInstrument_type: LC-ESI-QQ\n"
                    "Ion_mode: POSITIVE\nFormula: C10H15N5O10P2\nNum Peaks: 2\n135.0 83\n136.0 999\n\n")
    (q,), source = _plan(path)
    expected = MH.precursor_mz(monoisotopic_mass("C10H15N5O10P2"))
    assert expected == pytest.approx(428.0367, abs=1e-4)
    assert q.status == "ok" and q.formula == "C10H15N5O10P2" and q.lookup == "formula C10H15N5O10P2"
    assert source.calls == [("C10H15N5O10P2", None, None)]
    assert q.detail == ("no adduct given: assumed [M+H]+ (positive ion mode); "
                        "FORMULA C10H15N5O10P2 taken: precursor m/z 428.31 is 639 ppm (0.273 Da) from its [M+H]+ "
                        "428.0367, within the 0.5 Da of a unit-resolution record (every peak m/z to at most one "
                        "decimal)")


def test_the_same_precursor_with_accurate_peaks_contradicts_its_formula(tmp_path):
    path = tmp_path / "adp.mgf"
    path.write_text("BEGIN IONS\nFEATURE_ID=1\nPEPMASS=428.31\nCHARGE=1+\nADDUCT=[M+H]+\nFORMULA=C10H15N5O10P2\n"
                    "135.0545 83\n136.0618 999\nEND IONS\n")
    (q,), source = _plan(path)
    assert q.formula == "" and q.lookup.startswith("mass ") and source.calls[0][0] is None
    assert q.detail == "FORMULA C10H15N5O10P2 contradicts precursor m/z by 639 ppm ([M+H]+); looked up by mass"


def test_a_precursor_written_to_one_decimal_takes_a_formula_within_its_rounding(tmp_path):
    # glucose [M+H]+ 181.0707 written as 181.1: 162 ppm off, within the +-0.05 Da of one decimal
    path = tmp_path / "glc.mgf"
    path.write_text("BEGIN IONS\nFEATURE_ID=1\nPEPMASS=181.1\nCHARGE=1+\nADDUCT=[M+H]+\nFORMULA=C6H12O6\n"
                    "85.0284 20\n163.0601 100\nEND IONS\n")
    (q,), _ = _plan(path)
    assert q.formula == "C6H12O6" and q.lookup == "formula C6H12O6"
    assert q.detail == ("FORMULA C6H12O6 taken: precursor m/z 181.1 is 162 ppm (0.0293 Da) from its [M+H]+ "
                        "181.0707, within the 0.05 Da of its last written decimal")
