"""identify through the command line on files as exporters write them: ids from a unique field when SCANS repeats
(said in the log and parameters.json), --query-id-field in any case, a row for a record with a bad peak, and a
FORMULA that contradicts its precursor looked up by mass."""

import csv
import json

import pytest
from test_identify_flow import lab  # noqa: F401 - the module fixture: a small model, structures and spectra

from iokr.cli.main import main


def _table(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


@pytest.fixture(scope="module")
def store(lab, tmp_path_factory):  # noqa: F811 - the imported fixture
    path = tmp_path_factory.mktemp("store") / "structures.sqlite"
    assert main(["metabolites", "index", str(lab["db"]), "--output", str(path), "--model", str(lab["model"])]) == 0
    return path


def _features(lab, root):  # noqa: F811 - the fixture's value, passed on
    a, b = lab["records"]

    def peaks(r, bad=False):
        return ("0.0 5\n" if bad else "") + "\n".join(f"{mz} {i}" for mz, i in r["peaks"])

    wrong = "C6H12O6"  # glucose's formula on record a's precursor: hundreds of ppm off
    blocks = [
        f"SCANS=1\nSPECTRUMID=LIB-A\nPEPMASS={a['precursor_mz']}\nCHARGE=1+\n{peaks(a)}",
        f"SCANS=1\nSPECTRUMID=LIB-B\nPEPMASS={b['precursor_mz']}\nCHARGE=1+\n{peaks(b, bad=True)}",
        f"SCANS=1\nSPECTRUMID=LIB-C\nPEPMASS={a['precursor_mz']}\nCHARGE=1+\nFORMULA={wrong}\n"
        f"{peaks(a)}",
    ]
    mgf = root / "library.mgf"
    mgf.write_text("".join(f"BEGIN IONS\n{b}\nEND IONS\n" for b in blocks))
    return mgf


def test_ids_bad_peaks_and_contradicting_formula(lab, store, tmp_path, capsys):  # noqa: F811
    mgf = _features(lab, tmp_path)
    out = tmp_path / "by_default"
    assert main(["metabolites", "identify", "--model", str(lab["model"]), "--spectra", str(mgf),
                 "--candidates", str(store), "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("3 queries: 2 ok, 1 invalid peaks")
    assert "query ids: scans repeats (3 of 3 records share a value): query ids from spectrum_id" in captured.err
    rows = _table(out / "structure_identifications.tsv")
    assert [r["query_id"] for r in rows] == ["LIB-A", "LIB-B", "LIB-C"]
    assert [r["status"] for r in rows][1] == "invalid peaks"
    assert rows[1]["detail"] == "non-positive m/z: the record's peaks were not used"
    assert rows[2]["query_formula"] == "" and rows[2]["lookup"].startswith("mass ")
    assert "FORMULA C6H12O6 contradicts precursor m/z by" in rows[2]["detail"]
    assert rows[2]["status"] == rows[0]["status"] == "ok" and rows[2]["identifier"] == rows[0]["identifier"]
    params = json.loads((out / "parameters.json").read_text())
    assert params["query_ids"] == {"field": "spectrum_id", "note": "scans repeats (3 of 3 records share a value): "
                                   "query ids from spectrum_id"}

    for field, note in (("SpectrumID", ""), ("spectrum_id", ""),
                        ("SCANS", "SCANS repeats (3 of 3 records share a value): query ids from spectrum_id")):
        out = tmp_path / field
        assert main(["metabolites", "identify", "--model", str(lab["model"]), "--spectra", str(mgf),
                     "--candidates", str(store), "--output", str(out), "--query-id-field", field]) == 0
        assert [r["query_id"] for r in _table(out / "structure_identifications.tsv")] == ["LIB-A", "LIB-B", "LIB-C"]
        assert json.loads((out / "parameters.json").read_text())["query_ids"] == {"field": "spectrum_id",
                                                                                  "note": note}
    capsys.readouterr()
    assert main(["metabolites", "identify", "--model", str(lab["model"]), "--spectra", str(mgf),
                 "--candidates", str(store), "--output", str(tmp_path / "none"), "--query-id-field", "MY_ID"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'MY_ID'" in err and "formula, precursor_mz, scans, spectrum_id" in err
    assert not (tmp_path / "none").exists()
