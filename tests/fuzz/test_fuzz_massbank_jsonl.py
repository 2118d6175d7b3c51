"""Fuzz the MassBank JSONL spectra reader (plain and gzip): mutated valid files and records with wrong field types."""

import json

import numpy as np
import pytest
from fuzz_helpers import fuzz_settings, gzip_bytes, json_values, mutated, run_reader
from hypothesis import given
from hypothesis import strategies as st

from iokr.apps.metabolites import read_massbank_jsonl, read_spectra
from iokr.apps.metabolites.spectra._spectra import METADATA_KEYS
from iokr.exceptions import IOKRDataError

FMT = "massbank_jsonl"

VALID_RECORDS = [
    {"accession": "MSBNK-A-1", "license": "CC BY", "name": "x", "precursor_mz": 181.07, "precursor_type": "[M+H]+",
     "exact_mass": 180.06, "inchikey_rdkit": "WQZGKKKJIJFFOK-GASJEMHNSA-N", "inchi": "InChI=1S/C6H12O6/c7-1-2",
     "smiles": "OCC1OC(O)C(O)C(O)C1O", "formula_rdkit": "C6H12O6", "peaks": [[85.03, 10.0], [127.04, 100.0]]},
    {"accession": "MSBNK-A-2", "precursor_type": "[M+H]+", "exact_mass": 150.0,
     "inchikey": "ABCDEFGHIJKLMN-UHFFFAOYSA-N",
     "peaks": [[55.0, 3.5], [56.0, 0.0], [99.5, 1e6]]},
    {"accession": "MSBNK-A-3", "precursor_mz": "200.1", "peaks": [[100.0, 1.0]]},
]
VALID = ("\n".join(json.dumps(r) for r in VALID_RECORDS) + "\n").encode()
FIELDS = ["accession", "license", "name", "precursor_mz", "precursor_type", "exact_mass", "inchikey_rdkit",
          "inchikey", "inchi", "smiles", "formula_rdkit", "formula", "peaks", "source_path"]
TOKENS = [b'"peaks"', b'"precursor_mz"', b'"[M+H]+"', b'"exact_mass"', b"[[1e309, 1]]", b"[[-5, 1]]", b"[[5, -1]]",
          b"[[NaN, 1]]", b"[[1, 2, 3]]", b"[1, 2]", b'[["a", "b"]]', b"123456789012345678901234567890e999"]

peaks_values = st.one_of(
    json_values,
    st.lists(st.lists(json_values, max_size=3), max_size=4),
    st.lists(st.tuples(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10**400, 10**400),
                       st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10**400, 10**400)), max_size=5),
)


def _check_result(result, require_structure=False):
    if result is None:
        return
    spectra, report = result
    assert len(spectra) == report.n_read >= 1
    assert np.isfinite(spectra.mz).all() and (spectra.mz > 0).all()
    assert np.isfinite(spectra.intensity).all() and (spectra.intensity > 0).all()
    assert np.all(np.diff(spectra.offsets) >= 1)
    assert np.all((spectra.precursor_mz > 0) | np.isnan(spectra.precursor_mz))
    for meta in spectra.metadata:
        assert set(meta) <= set(METADATA_KEYS)
        assert all(v is None or isinstance(v, str) for v in meta.values()), meta
        if require_structure:
            assert meta["inchikey"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_jsonl")


@fuzz_settings(scale=4)
@given(data=mutated(VALID, TOKENS), compress=st.booleans(), require_precursor=st.booleans())
def test_mutated_file(workdir, data, compress, require_precursor):
    path = workdir / ("spectra.jsonl.gz" if compress else "spectra.jsonl")
    path.write_bytes(gzip_bytes(data) if compress else data)
    _check_result(run_reader(FMT, read_spectra, path, require_precursor=require_precursor))


@fuzz_settings(scale=2)
@given(data=mutated(gzip_bytes(VALID), max_ops=3))
def test_mutated_gzip_stream(workdir, data):
    path = workdir / "damaged.jsonl.gz"
    path.write_bytes(data)
    _check_result(run_reader(FMT, read_massbank_jsonl, path))


@fuzz_settings(scale=4)
@given(records=st.lists(st.dictionaries(st.sampled_from(FIELDS), json_values | peaks_values, max_size=8)
                        | json_values, min_size=1, max_size=4),
       valid_first=st.booleans(), require_structure=st.booleans())
def test_records_with_wrong_field_types(workdir, records, valid_first, require_structure):
    """Fields of any JSON type (huge integers, NaN, nested lists, strings where numbers belong)."""
    if valid_first:
        records = [VALID_RECORDS[0], *records]
    lines = []
    for rec in records:
        try:
            lines.append(json.dumps(rec))
        except (ValueError, OverflowError):  # pragma: no cover - json.dumps accepts every value drawn here
            continue
    path = workdir / "typed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    _check_result(run_reader(FMT, read_massbank_jsonl, path, require_structure=require_structure),
                  require_structure=require_structure)


# -- regression tests for crashes the fuzzer found ----------------------------------------------------------------


@pytest.mark.parametrize("value", ["10" * 200, "[[" + "9" * 400 + ", 1]]"])
def test_huge_integers_are_skipped_not_overflow(tmp_path, value):
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(VALID_RECORDS[2])[:-1] + ', "exact_mass": 1}\n'
                    + f'{{"accession": "H", "precursor_mz": {value if value[0] != "[" else 100}, '
                    f'"peaks": {value if value[0] == "[" else "[[1, 1]]"}}}\n')
    spectra, report = read_massbank_jsonl(path)
    assert len(spectra) == 1 and report.skipped[0][0] == "H"


def test_truncated_gzip_stream_is_a_typed_error(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    blob = gzip_bytes(VALID * 50)
    path.write_bytes(blob[:len(blob) // 2])
    with pytest.raises(IOKRDataError, match="truncated"):
        read_massbank_jsonl(path)
    corrupt = bytearray(blob)
    corrupt[20] ^= 0xFF
    path.write_bytes(bytes(corrupt))
    with pytest.raises(IOKRDataError, match=str(path.name)):
        read_massbank_jsonl(path)


def test_metadata_fields_of_wrong_type_become_text_or_none(tmp_path):
    path = tmp_path / "types.jsonl"
    rec = dict(VALID_RECORDS[2], accession=12, name=["a"], inchikey={"k": 1}, formula=True)
    path.write_text(json.dumps(rec) + "\n")
    spectra, _ = read_massbank_jsonl(path)
    meta = spectra.metadata[0]
    assert meta["accession"] == "12" and meta["name"] is None and meta["inchikey"] is None and meta["formula"] is None
