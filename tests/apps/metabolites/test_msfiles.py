"""iokr's streaming MGF/MSP readers against matchms's (the reference) on the same files, plus what matchms does not
do: identities kept, gzip, CRLF, a cap on the line length, records without precursor kept for queries."""

import gzip

import numpy as np
import pytest

import iokr
from iokr.apps.metabolites import read_spectra
from iokr.apps.metabolites.importing._msfiles import harmonize, iter_mgf, iter_msp
from iokr.exceptions import IOKRDataError

MGF = """# exported by MZmine
COM=global comment
BEGIN IONS
FEATURE_ID=12
PEPMASS=195.0877 3481.2
SCANS=12
RTINSECONDS=61.5
CHARGE=1+
MSLEVEL=2
FORMULA=C8H10N4O2
TITLE=caffeine; scan=12
60.0 10
138.066\t100
110.0715 5.5
END IONS

BEGIN IONS
FEATURE_ID=13
PEPMASS=217.0696
CHARGE=1+
ION=[M+Na]+
SMILES=Cn1cnc2c1c(=O)n(C)c(=O)n2C
60.5 10
139.0 100
END IONS
BEGIN IONS
FEATURE_ID=14
SCANS=20
CHARGE=1-
IONMODE=negative
61.0 3
END IONS
"""

MSP = """NAME: caffeine
PRECURSORMZ: 195.0877
PRECURSOR_TYPE: [M+H]+
Ion_mode: P
Formula: C8H10N4O2
InChIKey: RYYVLZVUVIJVGH-UHFFFAOYSA-N
DB#: MSBNK-TEST-1
Num Peaks: 3
60.0 10
138.066 100; 110.0715 5.5

Name: second
PrecursorMZ: 217.0696
Precursor_type: [M+Na]+
Num Peaks: 2
60.5\t10
139.0\t100
Name: third without a blank line
PrecursorMZ: 300.1
Num Peaks: 1
61.0 3
"""


def _write(tmp_path, name, text, gz=False, crlf=False):
    data = text.replace("\n", "\r\n") if crlf else text
    path = tmp_path / (name + (".gz" if gz else ""))
    if gz:
        with gzip.open(path, "wt", newline="") as handle:
            handle.write(data)
    else:
        path.write_bytes(data.encode())
    return path


@pytest.mark.parametrize("fmt, text", [("mgf", MGF), ("msp", MSP)])
def test_peaks_and_precursors_match_matchms(tmp_path, fmt, text):
    importing = pytest.importorskip("matchms.importing")
    path = _write(tmp_path, f"q.{fmt}", text)
    loader = importing.load_from_mgf if fmt == "mgf" else importing.load_from_msp
    reference = [s for s in loader(str(path)) if s is not None]
    spectra, report = read_spectra(path, keep_empty=True)
    assert len(spectra) == len(reference) == report.n_read
    for i, ref in enumerate(reference):
        mz, intensity = spectra.peaks(i)
        np.testing.assert_allclose(mz, ref.peaks.mz)
        np.testing.assert_allclose(intensity, ref.peaks.intensities)
        expected = ref.get("precursor_mz")
        got = spectra.precursor_mz[i]
        assert (np.isnan(got) and expected is None) or got == pytest.approx(expected)


@pytest.mark.parametrize("gz, crlf", [(False, False), (True, False), (False, True), (True, True)])
def test_identities_and_ions_are_kept(tmp_path, gz, crlf):
    spectra, report = read_spectra(_write(tmp_path, "q.mgf", MGF, gz=gz, crlf=crlf), keep_empty=True)
    meta = spectra.metadata
    assert [m.get("feature_id") for m in meta] == ["12", "13", "14"]
    assert meta[0]["scans"] == "12" and meta[0]["title"] == "caffeine; scan=12" and meta[0]["formula"] == "C8H10N4O2"
    assert meta[1]["adduct"] == "[M+Na]+" and meta[1]["smiles"].startswith("Cn1")
    assert meta[2]["charge"] == "1-" and meta[2]["ion_mode"] == "negative" and np.isnan(spectra.precursor_mz[2])
    assert spectra.precursor_mz[0] == pytest.approx(195.0877)  # PEPMASS's intensity dropped
    assert [m["record"] for m in meta] == ["0", "1", "2"]
    # without keep_empty the record lacking its precursor is skipped, with its reason
    spectra, report = read_spectra(_write(tmp_path, "r.mgf", MGF, gz=gz, crlf=crlf))
    assert len(spectra) == 2 and "1 missing precursor m/z" in report.summary()


def test_msp_fields_and_records_without_blank_lines(tmp_path):
    records = list(iter_msp(_write(tmp_path, "q.msp", MSP)))
    assert len(records) == 3 and [len(p) for _, _, p in records] == [3, 2, 1]
    meta = harmonize(records[0][1])
    assert meta["adduct"] == "[M+H]+" and meta["spectrum_id"] == "MSBNK-TEST-1" and meta["ion_mode"] == "P"
    spectra, _ = read_spectra(_write(tmp_path, "q.msp", MSP))
    assert spectra.metadata[0]["accession"] == "MSBNK-TEST-1" and spectra.metadata[1]["adduct"] == "[M+Na]+"


def test_mgf_global_parameters_and_cut_files(tmp_path):
    text = "CHARGE=1+\nBEGIN IONS\nPEPMASS=100\n50 1\nEND IONS\nBEGIN IONS\nPEPMASS=200\n60 1\n"
    records = list(iter_mgf(_write(tmp_path, "q.mgf", text)))
    assert [r[1]["charge"] for r in records] == ["1+", "1+"] and len(records) == 2


def test_overlong_line_is_one_error_naming_file_and_line(tmp_path):
    path = tmp_path / "long.mgf"
    with open(path, "w") as handle:
        handle.write("BEGIN IONS\nTITLE=" + "x" * 5000 + "\nEND IONS\n")
    with iokr.config_context(max_line_bytes=1000), pytest.raises(IOKRDataError, match=r"long\.mgf.*line 2"):
        read_spectra(path)


def test_training_records_with_smiles_only_get_inchikeys(tmp_path):
    pytest.importorskip("rdkit")
    text = ("BEGIN IONS\nPEPMASS=195.0877\nSMILES=Cn1cnc2c1c(=O)n(C)c(=O)n2C\n60 1\nEND IONS\n"
            "BEGIN IONS\nPEPMASS=181.07\nINCHI=InChI=1S/C6H12O6/c7-1-2-3(8)4(9)5(10)6(11)12-2/h2-11H,1H2\n60 1\n"
            "END IONS\nBEGIN IONS\nPEPMASS=100\n60 1\nEND IONS\n")
    spectra, report = read_spectra(_write(tmp_path, "t.mgf", text), require_structure=True)
    assert spectra.field("inchikey")[0] == "RYYVLZVUVIJVGH-UHFFFAOYSA-N"
    assert spectra.field("inchikey")[1].startswith("WQZGKKKJIJFFOK") and "1 missing structure" in report.summary()


def test_matchms_json_goes_through_matchms(tmp_path):
    exporting = pytest.importorskip("matchms.exporting")
    importing = pytest.importorskip("matchms.importing")
    path = _write(tmp_path, "q.mgf", MGF)
    out = tmp_path / "q.json"
    exporting.save_as_json([s for s in importing.load_from_mgf(str(path))], str(out))
    spectra, _ = read_spectra(out, keep_empty=True)
    assert [m.get("feature_id") for m in spectra.metadata] == ["12", "13", "14"]
    assert spectra.metadata[1]["adduct"] == "[M+Na]+"


def test_format_from_content_when_the_name_does_not_say(tmp_path):
    spectra, _ = read_spectra(_write(tmp_path, "q_noext", MGF, gz=True), keep_empty=True)
    assert [m.get("feature_id") for m in spectra.metadata] == ["12", "13", "14"]
    spectra, _ = read_spectra(_write(tmp_path, "library.txt", MSP))
    assert len(spectra) == 3


def test_gzipped_matchms_formats_are_capped(tmp_path):
    path = tmp_path / "bomb.mzML.gz"
    with gzip.open(path, "wb", compresslevel=9) as handle:
        for _ in range(40):
            handle.write(b"<" + b" " * (1 << 20))
    with iokr.config_context(max_compression_ratio=10), pytest.raises(IOKRDataError, match="compression bomb"):
        read_spectra(path)
