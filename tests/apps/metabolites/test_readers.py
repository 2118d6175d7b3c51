import gzip
import json

import numpy as np
import pytest

from iokr.apps.metabolites import read_spectra
from iokr.exceptions import IOKRDataError

GOOD = {"accession": "MSBNK-1", "license": "CC BY", "inchikey_rdkit": "KWILGNNWGSNMPA-UHFFFAOYSA-N",
        "inchi": "InChI=1S/C2H6O/c1-2-3/h3H,2H2,1H3", "formula_rdkit": "C2H6O", "precursor_mz": 179.07,
        "precursor_type": "[M+H]+", "exact_mass": "178.06", "peaks": [[161.06, 50.0], [133.06, 100.0]]}


def _write(path, records, gz=False):
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    opener = gzip.open if gz else open
    with opener(path, "wt") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_jsonl_bad_records_are_skipped_with_reasons(tmp_path, gz):
    records = [GOOD, {**GOOD, "accession": "E", "peaks": []}, {**GOOD, "accession": "N", "peaks": [[100, -1]]},
               {**GOOD, "accession": "X", "peaks": [["a", 1]]},
               {**GOOD, "accession": "P", "precursor_mz": None, "precursor_type": "[M+Na]+"},
               {**GOOD, "accession": "Q", "precursor_mz": "n/a"}, "{not json"]
    path = _write(tmp_path / ("s.jsonl.gz" if gz else "s.jsonl"), records, gz)
    S, report = read_spectra(path)
    # Q: no precursor m/z but an [M+H]+ record with an exact mass, so its precursor is derived
    assert S.field("accession") == ["MSBNK-1", "Q"]
    np.testing.assert_allclose(S.precursor_mz[1], 178.06 + 1.007276)
    reasons = dict(report.skipped)
    assert reasons == {"E": "no peaks", "N": "negative intensities", "X": "non-numeric peaks",
                       "P": "missing precursor m/z", "line 7": "invalid JSON"}
    np.testing.assert_array_equal(S.peaks(0)[0], [133.06, 161.06])  # sorted by m/z
    assert S.metadata[0]["license"] == "CC BY"


def test_jsonl_nothing_usable_and_truncated(tmp_path):
    with pytest.raises(IOKRDataError, match="No usable spectrum"):
        read_spectra(_write(tmp_path / "e.jsonl", [{**GOOD, "peaks": []}]))
    data = gzip.compress(("\n".join(json.dumps(GOOD) for _ in range(200))).encode())
    (tmp_path / "t.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(IOKRDataError, match="truncated"):
        read_spectra(tmp_path / "t.jsonl.gz")
    with pytest.raises(IOKRDataError, match="does not exist"):
        read_spectra(tmp_path / "missing.jsonl")
    # without a known extension the format comes from the content; unrecognizable content is an error
    assert len(read_spectra(_write(tmp_path / "x.txt", [GOOD]))[0]) == 1
    (tmp_path / "y.txt").write_text("m/z intensity\n100 1\n")
    with pytest.raises(IOKRDataError, match="Unknown spectra format"):
        read_spectra(tmp_path / "y.txt")


MGF = """BEGIN IONS
TITLE=first
PEPMASS=179.07
CHARGE=1+
SMILES=CCO
101.5 20
150.2 100
END IONS
BEGIN IONS
TITLE=noprec
101.5 20
END IONS
"""

MSP = """Name: second
PrecursorMZ: 200.1
InChIKey: KWILGNNWGSNMPA-UHFFFAOYSA-N
Num Peaks: 2
90.1 10
120.3 50

"""


def test_mgf_and_msp_through_matchms(tmp_path):
    pytest.importorskip("matchms")
    (tmp_path / "a.mgf").write_text(MGF)
    S, report = read_spectra(tmp_path / "a.mgf")
    assert len(S) == 1 and report.skipped[0][1] == "missing precursor m/z"
    np.testing.assert_allclose(S.precursor_mz, [179.07])
    np.testing.assert_allclose(S.peaks(0)[0], [101.5, 150.2])
    (tmp_path / "b.msp").write_text(MSP)
    S, _ = read_spectra(tmp_path / "b.msp", require_structure=True)
    np.testing.assert_allclose(S.precursor_mz, [200.1])
    assert S.metadata[0]["inchikey"] == "KWILGNNWGSNMPA-UHFFFAOYSA-N"
