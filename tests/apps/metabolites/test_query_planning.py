"""Query ids that survive any exporter, a row for every record (bad peaks included), and a FORMULA that contradicts
the precursor m/z not used silently: plan_queries on small files written as other tools write them."""

import numpy as np
import pytest
from ms_xml_files import Scan, mzml, mzxml

from iokr.apps.metabolites import read_spectra
from iokr.apps.metabolites.chemistry._formulas import monoisotopic_mass
from iokr.apps.metabolites.importing._query_ids import POSITIONS, query_ids
from iokr.apps.metabolites.ranking._identify import FORMULA_MIN_PPM, IdentifySettings, plan_queries
from iokr.exceptions import IOKRDataError

GLUCOSE = monoisotopic_mass("C6H12O6")
PROTON = 1.00727646688


class RecordingSource:
    """A candidate source that records its lookups and returns one candidate for each."""

    def __init__(self):
        self.calls = []

    def select(self, formula, low, high):
        self.calls.append((formula, low, high))
        return np.array([0], dtype=np.int64)


def _mgf(records):
    out = []
    for fields, peaks in records:
        out += ["BEGIN IONS", *(f"{k}={v}" for k, v in fields.items()), *peaks, "END IONS"]
    return "\n".join(out) + "\n"


def _plan(spectra, settings=None, model=("[M+H]+",)):
    source = RecordingSource()
    settings = IdentifySettings() if settings is None else settings
    queries = plan_queries(spectra, spectra.n_peaks, set(model), source, settings)
    return queries, source


PEAKS = ["60.0 10", "138.066 100"]


def test_gnps_repeated_scans_fall_back_to_spectrumid(tmp_path):
    records = [({"PEPMASS": 181.07, "SCANS": 1, "SPECTRUMID": f"CCMSLIB0000{i}"}, PEAKS) for i in range(4)]
    path = tmp_path / "gnps.mgf"
    path.write_text(_mgf(records))
    spectra, _ = read_spectra(path, keep_empty=True)
    ids = query_ids(spectra.metadata)
    assert ids.ids == [f"CCMSLIB0000{i}" for i in range(4)] and ids.field_used == "spectrum_id"
    assert ids.note == "scans repeats (4 of 4 records share a value): query ids from spectrum_id"
    queries, _ = _plan(spectra)
    assert [q.query_id for q in queries] == ids.ids


def test_repeated_field_without_a_unique_one_gives_positions(tmp_path):
    records = [({"PEPMASS": 181.07, "SCANS": 1, "TITLE": "same"}, PEAKS) for _ in range(3)]
    path = tmp_path / "r.mgf"
    path.write_text(_mgf(records))
    spectra, _ = read_spectra(path, keep_empty=True)
    ids = query_ids(spectra.metadata)
    assert ids.ids == ["1", "2", "3"] and ids.field_used == POSITIONS
    assert ids.note == "scans repeats (3 of 3 records share a value): query ids are the records' 1-based positions"
    # a field missing from some records is not used for the others
    records = [({"PEPMASS": 181.07, "FEATURE_ID": 7}, PEAKS), ({"PEPMASS": 181.07}, PEAKS)]
    path.write_text(_mgf(records))
    spectra, _ = read_spectra(path, keep_empty=True)
    ids = query_ids(spectra.metadata)
    assert ids.ids == ["1", "2"] and ids.note.startswith("feature_id missing in 1 of 2 records")


@pytest.mark.parametrize("field", ["FEATURE_ID", "feature_id", "Feature_ID", "featureid", "FeatureID"])
def test_query_id_field_in_any_case(tmp_path, field):
    records = [({"PEPMASS": 181.07, "SCANS": 10 + i, "FEATURE_ID": 100 + i}, PEAKS) for i in range(3)]
    path = tmp_path / "mz.mgf"
    path.write_text(_mgf(records))
    spectra, _ = read_spectra(path, keep_empty=True, id_field=field)
    ids = query_ids(spectra.metadata, field)
    assert ids.ids == ["100", "101", "102"] and ids.field_used == "feature_id" and ids.note == ""
    queries, _ = _plan(spectra, IdentifySettings(query_id_field=field))
    assert [q.query_id for q in queries] == ["100", "101", "102"]


def test_a_field_of_the_file_not_among_the_known_ones(tmp_path):
    records = [({"PEPMASS": 181.07, "MY_ID": f"q{i}"}, PEAKS) for i in range(2)]
    path = tmp_path / "own.mgf"
    path.write_text(_mgf(records))
    spectra, _ = read_spectra(path, keep_empty=True, id_field="My_Id")
    assert query_ids(spectra.metadata, "MY_ID").ids == ["q0", "q1"]


def test_absent_query_id_field_is_one_line_naming_field_and_keys(tmp_path):
    records = [({"PEPMASS": 181.07, "SCANS": 3, "TITLE": "a"}, PEAKS)]
    path = tmp_path / "a.mgf"
    path.write_text(_mgf(records))
    with pytest.raises(IOKRDataError, match=r"no record has the query-id field 'FEATURE_ID' \(matched in any case\); "
                                            r"the records' fields are: precursor_mz, scans, title\.$"):
        read_spectra(path, keep_empty=True, id_field="FEATURE_ID")
    spectra, _ = read_spectra(path, keep_empty=True)
    with pytest.raises(ValueError, match=r"query-id field 'FEATURE_ID' is in no record"):
        query_ids(spectra.metadata, "FEATURE_ID")


def test_msp_ids_from_db_number_then_name(tmp_path):
    path = tmp_path / "lib.msp"
    path.write_text("Name: A\nDB#: X-1\nPrecursorMZ: 181.07\nNum Peaks: 1\n60 1\n\n"
                    "Name: B\nDB#: X-2\nPrecursorMZ: 181.07\nNum Peaks: 1\n60 1\n")
    spectra, _ = read_spectra(path)
    assert query_ids(spectra.metadata).ids == ["X-1", "X-2"]
    path.write_text("Name: A\nPrecursorMZ: 181.07\nNum Peaks: 1\n60 1\n\nName: B\nPrecursorMZ: 181.07\n"
                    "Num Peaks: 1\n60 1\n")
    spectra, _ = read_spectra(path)
    ids = query_ids(spectra.metadata)
    assert ids.ids == ["A", "B"] and ids.field_used == "name"


@pytest.mark.parametrize("fmt", ["mzml", "mzxml"])
def test_mzml_mzxml_ids_are_scan_numbers(tmp_path, fmt):
    scans = [Scan(1, ms_level=1), Scan(12), Scan(13, ms_level=1), Scan(14)]
    path = tmp_path / f"run.{fmt}"
    path.write_text(mzml(scans) if fmt == "mzml" else mzxml(scans))
    spectra, _ = read_spectra(path, keep_empty=True)
    ids = query_ids(spectra.metadata)
    assert ids.ids == ["12", "14"] and ids.field_used == "scans"


def test_massbank_accessions_are_ids(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"accession": "MSBNK-A-1", "precursor_mz": 181.07, "peaks": [[60, 1]]}\n'
                    '{"accession": "MSBNK-A-2", "precursor_mz": 181.07, "peaks": [[60, 1]]}\n')
    spectra, _ = read_spectra(path, keep_empty=True)
    assert query_ids(spectra.metadata).ids == ["MSBNK-A-1", "MSBNK-A-2"]


def test_every_record_keeps_a_row_with_a_status(tmp_path):
    records = [({"FEATURE_ID": 1, "PEPMASS": 181.07}, PEAKS), ({"FEATURE_ID": 2, "PEPMASS": 181.07}, ["0 5", *PEAKS]),
               ({"FEATURE_ID": 3, "PEPMASS": 181.07}, ["60 inf"]), ({"FEATURE_ID": 4}, PEAKS),
               ({"FEATURE_ID": 5, "PEPMASS": 181.07}, [])]
    path = tmp_path / "q.mgf"
    path.write_text(_mgf(records))
    spectra, _ = read_spectra(path, require_precursor=False, keep_empty=True)
    queries, _ = _plan(spectra)
    assert [(q.query_id, q.status) for q in queries] == [
        ("1", "ok"), ("2", "invalid peaks"), ("3", "invalid peaks"), ("4", "no precursor m/z"), ("5", "no peaks")]
    assert queries[1].detail == "non-positive m/z: the record's peaks were not used"
    assert queries[2].detail == "non-finite peaks: the record's peaks were not used"


def _formula_query(tmp_path, formula, mz, adduct=None):
    fields = {"FEATURE_ID": 1, "PEPMASS": mz, "FORMULA": formula}
    if adduct:
        fields["ADDUCT"] = adduct
    path = tmp_path / "f.mgf"
    path.write_text(_mgf([(fields, PEAKS)]))
    return read_spectra(path, keep_empty=True)[0]


def test_formula_that_contradicts_the_precursor_is_not_used(tmp_path):
    # glucose's formula with the m/z of its [M+Na]+ taken as [M+H]+: (203.0526 - 181.0707) / 181.0707 = 121,400 ppm
    spectra = _formula_query(tmp_path, "C6H12O6", 203.05261, "[M+H]+")
    (q,), source = _plan(spectra)
    off = (203.05261 - (GLUCOSE + PROTON)) / (GLUCOSE + PROTON) * 1e6
    assert q.status == "ok" and q.formula == "" and q.lookup.startswith("mass ")
    assert q.detail == f"FORMULA C6H12O6 contradicts precursor m/z by {off:.0f} ppm ([M+H]+); looked up by mass"
    (formula, low, high), = source.calls
    mass = 203.05261 - PROTON
    assert formula is None and low == pytest.approx(mass * (1 - 10e-6)) and high == pytest.approx(mass * (1 + 10e-6))


@pytest.mark.parametrize("off_ppm, used", [(0.0, True), (9.0, True), (-19.5, True), (20.5, False), (-40.0, False)])
def test_formula_tolerance_is_max_of_ppm_and_floor(tmp_path, off_ppm, used):
    mz = (GLUCOSE + PROTON) * (1 + off_ppm * 1e-6)
    (q,), source = _plan(_formula_query(tmp_path, "C6H12O6", f"{mz:.6f}"), IdentifySettings(ppm=5.0))
    assert FORMULA_MIN_PPM == 20.0
    assert (q.formula == "C6H12O6") is used and (source.calls[0][0] == "C6H12O6") is used
    assert ("contradicts precursor m/z" in q.detail) is (not used)
    # with a wider --ppm the window is the tolerance
    (q,), _ = _plan(_formula_query(tmp_path, "C6H12O6", f"{mz:.6f}"), IdentifySettings(ppm=50.0))
    assert q.formula == "C6H12O6"


def test_formula_checked_with_the_queries_adduct(tmp_path):
    # [M-H]- of glucose: consistent under the adduct, 11,000 ppm off under [M+H]+
    spectra = _formula_query(tmp_path, "C6H12O6", GLUCOSE - PROTON, "[M-H]-")
    (q,), _ = _plan(spectra, model=("[M-H]-",))
    assert q.formula == "C6H12O6" and q.detail == ""
