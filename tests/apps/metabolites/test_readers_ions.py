"""Files as other tools write them (MZmine, GNPS, NIST / MS-DIAL MSP, ProteoWizard mzML, mzXML, MassBank, matchms
JSON): the precursor ion each record states (read back through read_precursor_ion), quoted structures, what a read
that finds nothing says, and records with unusable peaks kept for queries."""

import gzip
import json
import sqlite3

import numpy as np
import pytest
from ms_xml_files import Scan, mzml, mzxml

from iokr.apps.metabolites import read_spectra
from iokr.apps.metabolites.chemistry._adducts import read_precursor_ion
from iokr.apps.metabolites.importing._query_ids import query_ids
from iokr.apps.metabolites.importing._readers import adduct_from_name
from iokr.exceptions import IOKRDataError

#: MZmine 3 GNPS export: FEATURE_ID / SCANS, CHARGE with sign, no adduct for most features.
MZMINE_MGF = """BEGIN IONS
FEATURE_ID=1
PEPMASS=195.0877
SCANS=1
CHARGE=1+
MSLEVEL=2
60.0 10
138.066 100
END IONS
BEGIN IONS
FEATURE_ID=2
PEPMASS=193.0720
SCANS=2
CHARGE=1-
IONMODE=negative
60.0 10
138.066 100
END IONS
BEGIN IONS
FEATURE_ID=3
PEPMASS=98.0475
SCANS=3
CHARGE=2+
60.0 10
90.0 100
END IONS
BEGIN IONS
FEATURE_ID=4
PEPMASS=217.0696
SCANS=4
CHARGE=1+
ION=[M+Na]+
60.0 10
138.066 100
END IONS
BEGIN IONS
FEATURE_ID=5
PEPMASS=212.1135
SCANS=5
CHARGE=1
ADDUCT=M+NH4
IONMODE=Positive
60.0 10
138.066 100
END IONS
BEGIN IONS
FEATURE_ID=6
PEPMASS=177.0771
SCANS=6
ADDUCT=M+H-H2O
60.0 10
138.066 100
END IONS
"""

GLUCOSE_SMILES = "OC[C@H]1OC(O)[C@H](O)[C@@H](O)[C@@H]1O"


def _gnps_record(pepmass, charge, mode, name, smiles, inchi, spectrum_id, peaks):
    """One record of a GNPS library MGF, fields in GNPS's order."""
    return (f"BEGIN IONS\nPEPMASS={pepmass}\nCHARGE={charge}\nMSLEVEL=2\nIONMODE={mode}\nNAME={name}\n"
            f"SMILES={smiles}\nINCHI={inchi}\nSPECTRUMID={spectrum_id}\nSCANS=1\n{peaks}\nEND IONS\n")


#: A GNPS library MGF: SCANS=1 everywhere, a unique SPECTRUMID, names ending in the adduct, quoted InChIs.
GNPS_MGF = "".join([
    _gnps_record(179.0561, 0, "Negative", "D-Glucose M-H", GLUCOSE_SMILES,
                 '"InChI=1S/C6H12O6/c7-1-2-3(8)4(9)5(10)6(11)12-2/h2-11H,1H2/t2-,3-,4+,5-,6?/m1/s1"',
                 "CCMSLIB00000001", "59.0 10\n89.0 100"),
    _gnps_record(198.0972, 1, "Positive", "D-Glucose M+NH4", GLUCOSE_SMILES, '"InChI=1S/broken"',
                 "CCMSLIB00000002", "85.0 10\n163.0 100"),
    _gnps_record(195.0877, 1, "Positive", "Caffeine [M+H]+", "N/A",
                 '"InChI=1S/C8H10N4O2/c1-10-4-9-6-5(10)7(13)12(3)8(14)11(6)2/h4H,1-3H3"', "CCMSLIB00000003",
                 "110.07 10\n138.066 100"),
])

#: NIST-style MSP (Precursor_type, Ion_mode, DB#) and an MS-DIAL-style record (PRECURSORTYPE, IONMODE).
MSP = """Name: Caffeine
DB#: NIST-1
Precursor_type: [M+H]+
Ion_mode: P
PrecursorMZ: 195.0877
Num Peaks: 2
110.07 10
138.066 100

NAME: Glucose
PRECURSORMZ: 225.0616
PRECURSORTYPE: [M+HCOO]-
IONMODE: Negative
DB#: NIST-2
Num Peaks: 2
59.0 10
89.0 100

Name: Glucose 2
DB#: NIST-3
Precursor_type: [M-2H]2-
Charge: 2-
PrecursorMZ: 89.0244
Num Peaks: 1
59.0 10
"""


def _write(path, text):
    path.write_text(text)
    return path


def _ions(spectra):
    return [read_precursor_ion(m) for m in spectra.metadata]


def _summary(ion):
    return (None if ion.adduct is None else ion.adduct.name, ion.ion_mode, ion.charge, ion.problem)


def test_mzmine_mgf_precursor_ions(tmp_path):
    spectra, _ = read_spectra(_write(tmp_path / "mzmine.mgf", MZMINE_MGF), keep_empty=True)
    assert [_summary(i) for i in _ions(spectra)] == [
        (None, "positive", 1, ""), (None, "negative", -1, ""), (None, "positive", 2, ""),
        ("[M+Na]+", "positive", 1, ""), ("[M+NH4]+", "positive", 1, ""), ("[M+H-H2O]+", "positive", 1, ""),
    ]
    meta = spectra.metadata
    assert meta[2]["charge"] == "2+" and meta[4]["adduct"] == "M+NH4" and meta[4]["ion_mode"] == "Positive"
    assert "adduct_source" not in meta[4]  # from the ADDUCT field, not the name


def test_gnps_library_mgf_names_quotes_and_ids(tmp_path):
    spectra, report = read_spectra(_write(tmp_path / "gnps.mgf", GNPS_MGF), keep_empty=True)
    meta = spectra.metadata
    assert [m.get("adduct") for m in meta] == ["M-H", "M+NH4", "[M+H]+"]
    assert [m.get("adduct_source") for m in meta] == ["name"] * 3
    assert [_summary(i) for i in _ions(spectra)] == [
        ("[M-H]-", "negative", -1, ""), ("[M+NH4]+", "positive", 1, ""), ("[M+H]+", "positive", 1, "")]
    assert meta[0]["inchi"].startswith("InChI=1S/C6H12O6") and meta[2]["inchi"].endswith("1-3H3")
    assert meta[2]["smiles"] is None  # "N/A" is missing, not a structure
    assert [m["scans"] for m in meta] == ["1"] * 3 and meta[1]["spectrum_id"] == "CCMSLIB00000002"
    assert report.notes["quoted structure fields unquoted"] == 3
    assert report.notes["adducts read from the name"] == 3
    assert "3 quoted structure fields unquoted" in report.summary()


def test_smiles_used_where_the_inchi_does_not_read(tmp_path):
    pytest.importorskip("rdkit")
    spectra, report = read_spectra(_write(tmp_path / "gnps.mgf", GNPS_MGF), require_structure=True)
    assert len(spectra) == 3 and report.notes["unreadable InChIs replaced by the SMILES"] == 1
    glucose = spectra.field("inchikey")
    assert glucose[0][:14] == glucose[1][:14] == "WQZGKKKJIJFFOK"  # the broken InChI's record: from its SMILES
    assert spectra.metadata[1]["inchi"] is None and spectra.metadata[1]["inchi_unreadable"] == "InChI=1S/broken"
    assert glucose[2].startswith("RYYVLZVUVIJVGH")  # caffeine: its unquoted InChI
    # without the quotes removed, 2 of the 3 InChIs would not read; without the SMILES fallback, one record is lost
    assert report.n_read == 3 and report.n_skipped == 0


def test_msp_nist_and_msdial_precursor_ions(tmp_path):
    spectra, _ = read_spectra(_write(tmp_path / "lib.msp", MSP))
    assert [_summary(i) for i in _ions(spectra)] == [
        ("[M+H]+", "positive", 1, ""), ("[M+HCOO]-", "negative", -1, ""), ("[M-2H]2-", "negative", -2, "")]
    assert [m.get("spectrum_id") for m in spectra.metadata] == ["NIST-1", "NIST-2", "NIST-3"]


def test_contradictions_are_flagged_not_resolved(tmp_path):
    text = ("BEGIN IONS\nPEPMASS=195.0877\nCHARGE=1-\nIONMODE=positive\n60 1\nEND IONS\n"
            "BEGIN IONS\nPEPMASS=195.0877\nADDUCT=[M+H]+\nIONMODE=negative\n60 1\nEND IONS\n"
            "BEGIN IONS\nPEPMASS=98.0475\nADDUCT=[M+H]+\nCHARGE=2+\n60 1\nEND IONS\n"
            "BEGIN IONS\nPEPMASS=98.0475\nION=[M+H]2+\n60 1\nEND IONS\n"
            "BEGIN IONS\nPEPMASS=98.0475\nNAME=Foo M-H\nIONMODE=positive\n60 1\nEND IONS\n")
    spectra, _ = read_spectra(_write(tmp_path / "c.mgf", text))
    assert [i.problem for i in _ions(spectra)] == [
        "charge 1- contradicts ion mode positive", "adduct [M+H]+ contradicts ion mode negative",
        "adduct [M+H]+ contradicts charge 2+",
        "unreadable adduct: '[M+H]2+': the groups give charge +1 but the text says +2",
        "adduct [M-H]- contradicts ion mode positive"]


@pytest.mark.parametrize("name, adduct", [
    ("Hydroxyzine M+H", "M+H"), ("D-Glucose M-H", "M-H"), ("Caffeine [M+H]+", "[M+H]+"), ("X 2M+Na", "2M+Na"),
    ("Sucrose M+NH4", "M+NH4"), ("Y M-H2O+H", "M-H2O+H"), ("Z [M+2H]2+", "[M+2H]2+"), ("Maltose", None),
    ("Compound M", None), ("Vitamin B12", None), ("L-Methionine", None), ("Unknown", None), (None, None),
    ("Foo [M+H]2+", None), ("Cer(d18:1) M+H", "M+H"), ("Lomaiviticin C M+2H/2", "M+2H/2"),
])
def test_adduct_from_name(name, adduct):
    assert adduct_from_name(name) == adduct


@pytest.mark.parametrize("fmt", ["mzml", "mzxml"])
def test_mzml_mzxml_polarity_charge_and_scan_numbers(tmp_path, fmt):
    scans = [Scan(1, ms_level=1), Scan(17, charge=2, precursor_mz=98.0475), Scan(18, polarity="-", charge=1),
             Scan(19, polarity="+"), Scan(20, ms_level=3), Scan(21, ms_level=1)]
    path = tmp_path / f"run.{'mzML' if fmt == 'mzml' else 'mzXML'}"
    path.write_text(mzml(scans) if fmt == "mzml" else mzxml(scans))
    spectra, report = read_spectra(path, keep_empty=True)
    assert [m["scans"] for m in spectra.metadata] == ["17", "18", "19"]  # scan numbers, not positions
    assert [_summary(i) for i in _ions(spectra)] == [
        (None, "positive", 2, ""), (None, "negative", -1, ""), (None, "positive", None, "")]
    assert report.counts == {"MS1 scans": 2, "MS3 scans": 1}
    assert report.summary() == "3 spectra read, 3 skipped (2 MS1 scans, 1 MS3 scans); only MS2 spectra are used"
    np.testing.assert_allclose(spectra.precursor_mz, [98.0475, 195.0877, 195.0877])
    np.testing.assert_allclose(spectra.peaks(0)[0], [60.0, 138.066])
    if fmt == "mzml":
        assert spectra.metadata[0]["native_id"] == "controllerType=0 controllerNumber=1 scan=17"


def test_gzipped_mzml_and_native_ids_without_scan(tmp_path):
    path = tmp_path / "run.mzML.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(mzml([Scan(5, title="feature 5")], native_id="index={scan}"))
    spectra, _ = read_spectra(path)
    assert "scans" not in spectra.metadata[0] and spectra.metadata[0]["native_id"] == "index=5"
    assert spectra.metadata[0]["title"] == "feature 5"


@pytest.mark.parametrize("fmt", ["mzml", "mzxml"])
def test_zero_ms2_scans_say_what_was_skipped(tmp_path, fmt):
    scans = [Scan(i, ms_level=1) for i in range(1, 4)] + [Scan(9, ms_level=3)]
    path = tmp_path / f"ms1.{fmt}"
    path.write_text(mzml(scans) if fmt == "mzml" else mzxml(scans))
    with pytest.raises(IOKRDataError, match=r"0 spectra read, 4 skipped \(3 MS1 scans, 1 MS3 scans\); only MS2 "
                                            r"spectra are used\.$"):
        read_spectra(path)


def test_malformed_mzml_is_one_error(tmp_path):
    path = tmp_path / "cut.mzML"
    path.write_text(mzml([Scan(1), Scan(2)])[:900])
    with pytest.raises(IOKRDataError, match=r"Cannot parse mzml file .*cut\.mzML"):
        read_spectra(path)


def _sqlite(path):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE spectrum (id INTEGER)")
    con.commit()
    con.close()


@pytest.mark.parametrize("name, content, expected", [
    ("run.raw", b"\x01\xa1F\x00i\x00n\x00n\x00i\x00g\x00a\x00n\x00" + b"\x00" * 40, "a Thermo .raw file"),
    ("run.wiff", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 40, r"a SCIEX \.wiff file"),
    ("run.mzData", b'<?xml version="1.0"?>\n<mzData version="1.05">\n</mzData>\n', "an mzData file"),
    ("run.xml", b'<?xml version="1.0"?>\n<mzData version="1.05">\n</mzData>\n', "an mzData file"),
    ("library.db", None, "Thermo mzVault"),
    ("renamed.bin", b"\x01\xa1F\x00i\x00n\x00n\x00i\x00g\x00a\x00n\x00" + b"\x00" * 40, "a Thermo .raw file"),
])
def test_unsupported_formats_are_named(tmp_path, name, content, expected):
    path = tmp_path / name
    if content is None:
        _sqlite(path)
    else:
        path.write_bytes(content)
    with pytest.raises(IOKRDataError, match=expected) as info:
        read_spectra(path)
    assert "\n" not in str(info.value) and "iokr reads .mgf, .msp, .mzML" in str(info.value)


def test_vendor_folder_is_named(tmp_path):
    (tmp_path / "sample.d").mkdir()
    with pytest.raises(IOKRDataError, match=r"an Agilent/Bruker \.d folder"):
        read_spectra(tmp_path / "sample.d")


GOLM = """Name: M000000_A097001-101-xxx_NA_959,45_PRED_VAR5_ALK_Unknown#bth-pae-001
Num Peaks: 5
70:10 76:35 77:1000 78:110
79:42

Name: M000880_A098001-101-xxx_NA_986,97_TRUE_VAR5_ALK_Glycine, N,N-dimethyl- (1TMS)
MST N: Glycine, N,N-dimethyl- (1TMS)
RI: 986,97
Num Peaks: 2
73:999 116:500
"""


@pytest.mark.parametrize("keep_empty", [False, True])
def test_ei_library_and_msp_without_peaks_say_why(tmp_path, keep_empty):
    # GOLM's colon pairs are peaks (not fields), and no record has a precursor: an EI library, queries or not
    golm = _write(tmp_path / "golm.msp", GOLM)
    with pytest.raises(IOKRDataError, match=r"no record gives a precursor m/z.*an EI / GC-MS library"):
        read_spectra(golm, require_precursor=not keep_empty, keep_empty=keep_empty)
    nist_ei = ("Name: Alanine (2TMS)\nFormula: C9H23NO2Si2\nMW: 233\nNum Peaks: 3\n73 999; 116 500; 147 80;\n\n"
               "Name: Glycine (3TMS)\nNum Peaks: 2\n73 999; 174 400;\n")
    with pytest.raises(IOKRDataError, match=r"no record gives a precursor m/z"):
        read_spectra(_write(tmp_path / "nist_ei.msp", nist_ei), require_precursor=not keep_empty,
                     keep_empty=keep_empty)
    no_peaks = "Name: A\nPrecursorMZ: 100.1\nNum Peaks: 0\n\nName: B\nPrecursorMZ: 120.1\nNum Peaks: 0\n"
    with pytest.raises(IOKRDataError, match=r"no record has peaks"):
        read_spectra(_write(tmp_path / "nist.msp", no_peaks), keep_empty=keep_empty)


def test_golm_colon_pairs_are_read_as_peaks(tmp_path):
    from iokr.apps.metabolites.importing._msfiles import iter_msp  # noqa: PLC0415 - the record level, below read_spectra

    records = list(iter_msp(_write(tmp_path / "golm.msp", GOLM)))
    assert [len(p) for _, _, p in records] == [5, 2] and records[1][2] == [["73", "999"], ["116", "500"]]


MASSBANK_RECORDS = """ACCESSION: MSBNK-BGC_Munich-RP001402
RECORD_TITLE: L-Glutamic acid; LC-ESI-QTOF; MS2; CE: 20; R=; [M+H]+
LICENSE: CC BY
CH$NAME: L-Glutamic acid
CH$NAME: (2S)-2-azaniumyl-5-hydroxy-5-oxopentanoate
CH$FORMULA: C5H9NO4
CH$SMILES: C(CC(=O)O)[C@@H](C(=O)O)N
CH$IUPAC: InChI=1S/C5H9NO4/c6-3(5(9)10)1-2-4(7)8/h3H,1-2,6H2,(H,7,8)(H,9,10)/t3-/m0/s1
CH$LINK: CAS 56-86-0
CH$LINK: INCHIKEY WHUUTDBJXJRKMK-VKHMYHEASA-N
AC$MASS_SPECTROMETRY: MS_TYPE MS2
AC$MASS_SPECTROMETRY: ION_MODE POSITIVE
MS$FOCUSED_ION: PRECURSOR_M/Z 148.0604
MS$FOCUSED_ION: PRECURSOR_TYPE [M+H]+
PK$NUM_PEAK: 3
PK$PEAK: m/z int. rel.int.
  84.0444 1000 999
  102.055 120 120
  130.0499 600 600
//
ACCESSION: MSBNK-X-2
CH$NAME: Glutamate
AC$MASS_SPECTROMETRY: MS_TYPE MS2
AC$MASS_SPECTROMETRY: ION_MODE NEGATIVE
MS$FOCUSED_ION: PRECURSOR_M/Z 146.0459
MS$FOCUSED_ION: PRECURSOR_TYPE [M-H]-
PK$PEAK: m/z int. rel.int.
  102.0561 1000 999
//
ACCESSION: MSBNK-X-3
AC$MASS_SPECTROMETRY: MS_TYPE MS1
PK$PEAK: m/z int. rel.int.
  148.06 1000 999
//
"""


def test_massbank_record_files(tmp_path):
    spectra, report = read_spectra(_write(tmp_path / "MSBNK-BGC_Munich-RP001402.txt", MASSBANK_RECORDS))
    meta = spectra.metadata
    assert [m["spectrum_id"] for m in meta] == ["MSBNK-BGC_Munich-RP001402", "MSBNK-X-2"]
    assert meta[0]["name"] == "L-Glutamic acid" and meta[0]["inchikey"] == "WHUUTDBJXJRKMK-VKHMYHEASA-N"
    assert meta[0]["inchi"].startswith("InChI=1S/C5H9NO4") and meta[0]["license"] == "CC BY"
    assert [_summary(i) for i in _ions(spectra)] == [("[M+H]+", "positive", 1, ""), ("[M-H]-", "negative", -1, "")]
    np.testing.assert_allclose(spectra.precursor_mz, [148.0604, 146.0459])
    np.testing.assert_allclose(spectra.peaks(0)[0], [84.0444, 102.055, 130.0499])
    np.testing.assert_allclose(spectra.peaks(0)[1], [1000, 120, 600])
    assert report.counts == {"MS1 records": 1} and report.summary().endswith("; only MS2 spectra are used")


BAD_PEAKS_MGF = """BEGIN IONS
TITLE=good
PEPMASS=195.0877
60.0 10
138.066 100
END IONS
BEGIN IONS
TITLE=zero mz
PEPMASS=195.0877
0.0 10
138.066 100
END IONS
BEGIN IONS
TITLE=non-finite
PEPMASS=195.0877
60.0 nan
END IONS
BEGIN IONS
TITLE=no precursor
60.0 10
END IONS
"""


def test_records_with_bad_peaks_are_kept_for_queries_and_skipped_for_training(tmp_path):
    path = _write(tmp_path / "q.mgf", BAD_PEAKS_MGF)
    spectra, report = read_spectra(path, require_precursor=False, keep_empty=True)
    assert [m["title"] for m in spectra.metadata] == ["good", "zero mz", "non-finite", "no precursor"]
    assert [m.get("peak_problem") for m in spectra.metadata] == [None, "non-positive m/z", "non-finite peaks", None]
    np.testing.assert_array_equal(spectra.n_peaks, [2, 0, 0, 1])
    assert report.notes == {"kept without their peaks (non-positive m/z)": 1,
                            "kept without their peaks (non-finite peaks)": 1}
    spectra, report = read_spectra(path)
    assert len(spectra) == 1 and report.counts == {"non-positive m/z": 1, "non-finite peaks": 1,
                                                   "missing precursor m/z": 1}


def test_jsonl_precursor_ion_ids_and_kept_bad_peaks(tmp_path):
    base = {"accession": "MSBNK-A-1", "license": "CC BY", "precursor_mz": 179.0561, "precursor_type": "[M-H]-",
            "ion_mode": "NEGATIVE", "inchi": '"InChI=1S/C2H6O/c1-2-3/h3H,2H2,1H3"',
            "peaks": [[59.0, 10.0], [89.0, 100.0]]}
    records = [base, {**base, "accession": "MSBNK-A-2", "peaks": [[-1.0, 5.0]]}]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    spectra, report = read_spectra(path, keep_empty=True)
    assert [m["spectrum_id"] for m in spectra.metadata] == ["MSBNK-A-1", "MSBNK-A-2"]
    assert _summary(read_precursor_ion(spectra.metadata[0])) == ("[M-H]-", "negative", -1, "")
    assert spectra.metadata[0]["inchi"].startswith("InChI=1S/C2H6O")
    assert spectra.metadata[1]["peak_problem"] == "non-positive m/z"
    spectra, report = read_spectra(path)
    assert len(spectra) == 1 and report.counts == {"non-positive m/z": 1}


def test_matchms_json_precursor_ion(tmp_path):
    exporting = pytest.importorskip("matchms.exporting")
    importing = pytest.importorskip("matchms.importing")
    mgf = _write(tmp_path / "m.mgf", MZMINE_MGF)
    out = tmp_path / "m.json"
    exporting.save_as_json(list(importing.load_from_mgf(str(mgf))), str(out))
    spectra, _ = read_spectra(out, keep_empty=True)
    summaries = [_summary(i)[:3] for i in _ions(spectra)]
    assert summaries[1] == (None, "negative", -1) and summaries[2] == (None, "positive", 2)
    assert spectra.metadata[2]["charge"] == "2+"  # matchms's signed int, written with its sign
    assert summaries[3][0] == "[M+Na]+" and summaries[5][0] == "[M+H-H2O]+"


def _pyteomics_ms2(path, fmt):
    """The reference: pyteomics's reading of the MS2 scans (precursor m/z, charge, polarity, peaks)."""
    module = pytest.importorskip(f"pyteomics.{fmt}")
    out = []
    with module.read(str(path)) as reader:
        for scan in reader:
            if scan.get("ms level", scan.get("msLevel")) != 2:
                continue
            if fmt == "mzml":
                ion = scan["precursorList"]["precursor"][0]["selectedIonList"]["selectedIon"][0]
                mz, charge = ion.get("selected ion m/z"), ion.get("charge state")
                mode = "positive" if "positive scan" in scan else "negative" if "negative scan" in scan else None
            else:
                ion = scan["precursorMz"][0]
                mz, charge = ion["precursorMz"], ion.get("precursorCharge")
                mode = {"+": "positive", "-": "negative"}.get(scan.get("polarity"))
            out.append((mz, None if charge is None else int(charge), mode, scan["m/z array"], scan["intensity array"]))
    return out


@pytest.mark.parametrize("fmt", ["mzml", "mzxml"])
@pytest.mark.parametrize("precision, compress, nested", [(64, False, False), (32, True, False), (64, True, True),
                                                         (32, False, True)])
def test_ms_xml_reader_matches_pyteomics(tmp_path, fmt, precision, compress, nested):
    rng = np.random.default_rng(precision + compress)
    scans = []
    for i in range(1, 13):
        peaks = sorted(zip(rng.uniform(50, 500, 7).round(4), rng.uniform(1, 1e5, 7).round(1), strict=True))
        scans.append(Scan(i, ms_level=1 if i % 4 == 1 else 2, precursor_mz=round(float(rng.uniform(100, 900)), 5),
                          charge=[None, 1, 2, 3][i % 4], polarity="+-"[i % 2], peaks=peaks))
    path = tmp_path / f"run.{fmt}"
    path.write_text(mzml(scans, precision=precision, compress=compress) if fmt == "mzml" else
                    mzxml(scans, precision=precision, compress=compress, nested=nested))
    reference = _pyteomics_ms2(path, fmt)
    spectra, report = read_spectra(path, keep_empty=True)
    assert len(spectra) == len(reference) == 9 and report.counts == {"MS1 scans": 3}
    for i, (mz, charge, mode, mzs, intensities) in enumerate(reference):
        meta = spectra.metadata[i]
        assert spectra.precursor_mz[i] == pytest.approx(mz, rel=1e-12)
        assert meta.get("charge") == (None if charge is None else str(charge)) and meta["ion_mode"] == mode
        np.testing.assert_array_equal(spectra.peaks(i)[0], mzs)
        np.testing.assert_array_equal(spectra.peaks(i)[1], intensities)


@pytest.mark.parametrize("fmt", ["mzml", "mzxml"])
def test_undecodable_arrays_are_that_scans_problem(tmp_path, fmt):
    text = mzml([Scan(1), Scan(2)]) if fmt == "mzml" else mzxml([Scan(1), Scan(2)])
    marker = "<binary>" if fmt == "mzml" else 'compressedLen="0">'
    start = text.index(marker) + len(marker)
    text = text[:start] + "AAAA" + text[start:]  # the first scan's first array: 3 bytes too many
    path = tmp_path / f"bad.{fmt}"
    path.write_text(text)
    spectra, report = read_spectra(path)
    assert len(spectra) == 1 and report.counts == {"malformed peaks": 1}
    spectra, _ = read_spectra(path, keep_empty=True)
    assert [m.get("peak_problem") for m in spectra.metadata] == ["malformed peaks", None]


def test_hostile_xml_is_one_error(tmp_path):
    entities = '<!ENTITY lol "lollollollollollollollollollol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10))
    laughs = (f'<?xml version="1.0"?>\n<!DOCTYPE lolz [{entities}]>\n<mzML><run><spectrumList>'
              '<spectrum id="&lol9;" defaultArrayLength="0"></spectrum></spectrumList></run></mzML>\n')
    secret = tmp_path / "secret.txt"
    secret.write_text("scan=1")
    external = (f'<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY ext SYSTEM "file://{secret}">]>\n<mzML><run>'
                '<spectrumList><spectrum id="&ext;" defaultArrayLength="0"></spectrum></spectrumList></run></mzML>\n')
    for name, text, reason in (("laughs.mzML", laughs, "amplification"), ("xxe.mzML", external, "entity")):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(IOKRDataError, match=rf"Cannot parse mzml file .*{name}.*{reason}"):
            read_spectra(path)


SIRIUS_MGF = """BEGIN IONS
FEATURE_ID=1
MSLEVEL=1
PEPMASS=195.0877
CHARGE=1+
195.0877 100
196.0910 10
END IONS
BEGIN IONS
FEATURE_ID=1
MSLEVEL=2
PEPMASS=195.0877
CHARGE=1+
138.066 100
END IONS
BEGIN IONS
FEATURE_ID=2
MSLEVEL=1
PEPMASS=181.0707
CHARGE=1+
181.0707 100
END IONS
BEGIN IONS
FEATURE_ID=2
MSLEVEL=2
PEPMASS=181.0707
CHARGE=1+
85.0 100
END IONS
"""


def test_ms1_records_of_mgf_and_msp_are_skipped_and_counted(tmp_path):
    spectra, report = read_spectra(_write(tmp_path / "sirius.mgf", SIRIUS_MGF), keep_empty=True)
    assert [m["feature_id"] for m in spectra.metadata] == ["1", "2"] and report.counts == {"MS1 records": 2}
    assert query_ids(spectra.metadata).ids == ["1", "2"]  # MS1 blocks would have made FEATURE_ID repeat
    ms1_only = SIRIUS_MGF.replace("MSLEVEL=2", "MSLEVEL=1")
    with pytest.raises(IOKRDataError, match=r"0 spectra read, 4 skipped \(4 MS1 records\); only MS2 spectra"):
        read_spectra(_write(tmp_path / "ms1.mgf", ms1_only), keep_empty=True)
    msp = MSP.replace("Precursor_type: [M+H]+", "Precursor_type: [M+H]+\nSpectrum_type: MS1")
    spectra, report = read_spectra(_write(tmp_path / "lib.msp", msp))
    assert [m["spectrum_id"] for m in spectra.metadata] == ["NIST-2", "NIST-3"] and report.counts == {"MS1 records": 1}


def test_mzmine_library_json_lines(tmp_path):
    pytest.importorskip("rdkit")
    record = {"softwaresource": "mzmine3", "adduct": "[M+H]+ (1.0073)", "polarity": "POSITIVE", "charge": 1,
              "compound_name": "Caffeine", "smiles": "Cn1cnc2c1c(=O)n(C)c(=O)n2C", "precursor_mz": 195.0877,
              "ms_level": 2, "signals": [[110.07, 10.0], [138.066, 100.0]]}
    path = tmp_path / "mzmine_library.json"
    path.write_text(json.dumps(record) + "\n" + json.dumps({**record, "compound_name": "No structure",
                                                             "smiles": None}) + "\n")
    spectra, report = read_spectra(path, require_structure=True)
    assert len(spectra) == 1 and report.counts == {"missing structure": 1}
    assert spectra.metadata[0]["name"] == "Caffeine" and spectra.metadata[0]["inchikey"].startswith("RYYVLZVUVIJVGH")
    assert _summary(read_precursor_ion(spectra.metadata[0])) == ("[M+H]+", "positive", 1, "")
    np.testing.assert_allclose(spectra.peaks(0)[0], [110.07, 138.066])


_MZMINE = {"softwaresource": "mzmine3", "adduct": "[M+H]+ (1.0073)", "polarity": "POSITIVE", "charge": 1,
           "precursor_mz": 195.0877, "ms_level": 2, "signals": [[110.07, 10.0], [138.066, 100.0]]}


@pytest.mark.parametrize("extra, field, ids", [
    # MZmine's writer names its library entry id 'lib_id' (DBEntryField.ENTRY_ID, MSP 'DB#', MGF 'SPECTRUMID')
    ({"lib_id": ["LIB-7", "LIB-8"]}, "spectrum_id", ["LIB-7", "LIB-8"]),
    ({"entry_id": ["E1", "E2"]}, "spectrum_id", ["E1", "E2"]),  # its reader's own key for the same field
    ({"feature_id": [12, 14], "lib_id": ["A", "B"]}, "feature_id", ["12", "14"]),
    ({"scan_number": [3, 3], "lib_id": ["A", "B"]}, "spectrum_id", ["A", "B"]),  # repeats: falls back
    ({}, "name", ["Caffeine", "Theobromine"]),  # no id field: the compound name, as MSP 'Name'
])
def test_mzmine_library_json_ids(tmp_path, extra, field, ids):
    records = [{**_MZMINE, "compound_name": name, **{k: v[i] for k, v in extra.items()}}
               for i, name in enumerate(["Caffeine", "Theobromine"])]
    path = tmp_path / "mzmine_library.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    spectra, _ = read_spectra(path, keep_empty=True)
    got = query_ids(spectra.metadata)
    assert (got.field_used, got.ids) == (field, ids)


@pytest.mark.parametrize("encoding, newline", [("utf-16", "\n"), ("utf-16-le", "\r\n"), ("utf-16-be", "\n"),
                                               ("utf-8", "\r"), ("utf-16", "\r")])
def test_line_ends_and_utf16_give_the_same_spectra(tmp_path, encoding, newline):
    reference, _ = read_spectra(_write(tmp_path / "ref.msp", MSP))
    data = MSP.replace("\n", newline).encode(encoding)
    if encoding in ("utf-16-le", "utf-16-be"):  # with its byte-order mark, as Windows tools write it
        data = "\ufeff".encode(encoding) + data
    path = tmp_path / "lib.msp"
    path.write_bytes(data)
    spectra, report = read_spectra(path)
    assert report.summary() == "3 spectra read"
    assert spectra.metadata == [{**m, "source": str(path)} for m in reference.metadata]
    np.testing.assert_array_equal(spectra.mz, reference.mz)
    np.testing.assert_array_equal(spectra.precursor_mz, reference.precursor_mz)
