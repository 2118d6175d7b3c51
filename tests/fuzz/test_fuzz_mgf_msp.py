"""Fuzz the MGF and MSP spectra readers (parsed by matchms, checked and wrapped by iokr)."""

import numpy as np
import pytest
from fuzz_helpers import fuzz_settings, mutated, run_reader
from hypothesis import given
from hypothesis import strategies as st

from iokr.apps.metabolites import read_spectra
from iokr.exceptions import IOKRDataError

pytest.importorskip("matchms")

FMT = "mgf_msp"

VALID_MGF = b"""BEGIN IONS
TITLE=first
PEPMASS=181.0707
CHARGE=1+
INCHIKEY=WQZGKKKJIJFFOK-GASJEMHNSA-N
SMILES=OCC1OC(O)C(O)C(O)C1O
85.0284 10.0
127.0390 100.0
163.0601 45.5
END IONS

BEGIN IONS
TITLE=second
PEPMASS=250.5 1000
SPECTRUM_ID=S2
55.0 3.0
99.5 20.0
END IONS
"""

VALID_MSP = b"""Name: glucose
PrecursorMZ: 181.0707
InChIKey: WQZGKKKJIJFFOK-GASJEMHNSA-N
Formula: C6H12O6
Num Peaks: 3
85.0284 10
127.0390 100
163.0601 45.5

Name: other
PRECURSORMZ: 250.5
Comments: "SMILES=CCO"
Num Peaks: 2
55.0\t3.0
99.5\t20.0
"""

TOKENS = [b"BEGIN IONS\n", b"END IONS\n", b"PEPMASS=", b"CHARGE=", b"=", b"Num Peaks: ", b"Name: ", b"PrecursorMZ: ",
          b"Num Peaks: 999999\n", b"1e309 1e309\n", b"-5 1\n", b"5 -1\n", b"nan nan\n", b"1 2 3 4\n", b"a b\n"]

#: Peak lines and header values of any shape.
field_values = st.one_of(
    st.sampled_from(["", "0", "-1", "nan", "inf", "1e309", "1e-400", "abc", "1 2 3", "9" * 400, "+", "1+", "2-"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=10),
)


def _check_result(result):
    if result is None:
        return
    spectra, report = result
    assert len(spectra) == report.n_read >= 1
    assert np.isfinite(spectra.mz).all() and (spectra.mz > 0).all() and (spectra.intensity > 0).all()
    assert np.all((spectra.precursor_mz > 0) | np.isnan(spectra.precursor_mz))
    for meta in spectra.metadata:
        assert all(v is None or isinstance(v, str) for v in meta.values()), meta


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_mgf_msp")


@fuzz_settings(scale=2)
@given(data=mutated(VALID_MGF, TOKENS), require_precursor=st.booleans())
def test_mutated_mgf(workdir, data, require_precursor):
    path = workdir / "spectra.mgf"
    path.write_bytes(data)
    _check_result(run_reader(FMT, read_spectra, path, require_precursor=require_precursor))


@fuzz_settings(scale=2)
@given(data=mutated(VALID_MSP, TOKENS), require_structure=st.booleans())
def test_mutated_msp(workdir, data, require_structure):
    path = workdir / "spectra.msp"
    path.write_bytes(data)
    _check_result(run_reader(FMT, read_spectra, path, require_structure=require_structure))


@fuzz_settings(scale=2)
@given(pepmass=field_values, charge=field_values,
       peaks=st.lists(st.tuples(field_values, field_values), max_size=4), num_peaks=field_values)
def test_generated_fields(workdir, pepmass, charge, peaks, num_peaks):
    """Header values and peak lines of any shape in both formats."""
    peak_lines = "".join(f"{a} {b}\n" for a, b in peaks)
    mgf = f"BEGIN IONS\nTITLE=t\nPEPMASS={pepmass}\nCHARGE={charge}\n{peak_lines}END IONS\n"
    msp = f"Name: t\nPrecursorMZ: {pepmass}\nNum Peaks: {num_peaks}\n{peak_lines}\n"
    for name, text in (("gen.mgf", mgf), ("gen.msp", msp)):
        path = workdir / name
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
        _check_result(run_reader(FMT, read_spectra, path))


# -- regression tests for crashes the fuzzer found ----------------------------------------------------------------


@pytest.mark.parametrize("text", [b"BEGIN IONS", b"BEGIN IONS\nT", b"BEGIN IONS\n1 2\nBEGIN IONS\nEND IONS\n",
                                  b"BEGIN IONS\nPEPMASS=100\n55.0 3/0\nEND IONS\n"])
def test_parser_errors_are_typed_and_name_the_file(tmp_path, text):
    path = tmp_path / "bad.mgf"
    path.write_bytes(text)
    with pytest.raises(IOKRDataError, match="bad.mgf"):
        read_spectra(path)


def test_require_structure_reports_the_dropped_records(tmp_path):
    path = tmp_path / "two.msp"
    path.write_bytes(VALID_MSP)
    spectra, report = read_spectra(path, require_structure=True)
    assert len(spectra) == report.n_read == 1
    assert [reason for _, reason in report.skipped] == ["missing structure"]
