"""Fuzz candidate pools on disk (iokr.decoding.CandidateFile): damaged data files and manifests of any shape."""

import json

import numpy as np
import pytest
from fuzz_helpers import fuzz_settings, json_values, mutated, run_reader
from hypothesis import given
from hypothesis import strategies as st

from iokr.decoding import CandidateFile, PackedBinaryFeatures, write_candidate_file
from iokr.exceptions import IOKRDataError

FMT = "candidate_file"
FIELDS = ["format", "dtype", "n_rows", "row_width", "n_features", "packed", "block_rows", "crc32"]
field_values = st.one_of(
    json_values, st.integers(-3, 40),
    st.sampled_from(["<f4", "<f8", "|u1", "|b1", "<i8", ">f8", "|O", "<U3", "|V0", "|S0", "<M8[s]", "<c16", "xyz",
                     ",u1", "(2)u1,", "iokr-candidates-1", "iokr-candidates-2"]),
    st.lists(st.integers(-1, 2**32 + 1), max_size=5),
)


def _seed(workdir, packed):
    bits = (np.random.default_rng(0).random((9, 13)) < 0.4).astype(np.uint8)
    pool = PackedBinaryFeatures.from_dense(bits) if packed else bits.astype(np.float32)
    f = write_candidate_file(workdir / f"seed_{packed}.bin", pool, block_rows=4)
    f.close()
    return (workdir / f"seed_{packed}.bin").read_bytes(), json.loads((workdir / f"seed_{packed}.bin.json").read_text())


def _open_and_read_all(path):
    f = CandidateFile(path, verify="always")
    try:
        full = f[:]
        assert full.shape == f.shape and full.dtype == f.dtype
        if len(f):
            np.testing.assert_array_equal(f[np.arange(len(f))[::-1]], full[::-1])
            np.testing.assert_array_equal(f[-1], full[-1])
        return full
    finally:
        f.close()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_candidate_file")


@pytest.fixture(scope="module")
def seeds(workdir):
    return {packed: _seed(workdir, packed) for packed in (True, False)}


@fuzz_settings(scale=3)
@given(packed=st.booleans(), data=st.data())
def test_mutated_data_file(workdir, seeds, packed, data):
    blob, manifest = seeds[packed]
    path = workdir / "pool.bin"
    path.write_bytes(data.draw(mutated(blob, max_ops=3)))
    (workdir / "pool.bin.json").write_text(json.dumps(manifest))
    run_reader(FMT, _open_and_read_all, path)


@fuzz_settings(scale=3)
@given(packed=st.booleans(), data=st.data())
def test_mutated_manifest_bytes(workdir, seeds, packed, data):
    blob, manifest = seeds[packed]
    path = workdir / "pool.bin"
    path.write_bytes(blob)
    (workdir / "pool.bin.json").write_bytes(data.draw(mutated(json.dumps(manifest).encode(), max_ops=3)))
    run_reader(FMT, _open_and_read_all, path)


@fuzz_settings(scale=4)
@given(packed=st.booleans(), changes=st.dictionaries(st.sampled_from(FIELDS), field_values, min_size=1, max_size=3),
       drop=st.lists(st.sampled_from(FIELDS), max_size=2), as_list=st.booleans())
def test_manifest_fields_of_wrong_type(workdir, seeds, packed, changes, drop, as_list):
    """Every manifest field replaced by values of other types and ranges (or missing); the manifest not an object."""
    blob, manifest = seeds[packed]
    manifest = {k: v for k, v in {**manifest, **changes}.items() if k not in drop}
    path = workdir / "pool.bin"
    path.write_bytes(blob)
    (workdir / "pool.bin.json").write_text(json.dumps(list(manifest.values()) if as_list else manifest))
    run_reader(FMT, _open_and_read_all, path)


# -- regression tests for crashes the fuzzer found ----------------------------------------------------------------


@pytest.mark.parametrize("change, field", [
    ({"dtype": "|O"}, "dtype"), ({"dtype": "xyz"}, "dtype"), ({"dtype": ",u1"}, "dtype"), ({"dtype": "<U3"}, "dtype"),
    ({"block_rows": 0}, "block_rows"), ({"n_rows": -1}, "n_rows"), ({"n_rows": "9"}, "n_rows"),
    ({"crc32": 5}, "crc32"), ({"packed": "no"}, "packed"), ({"row_width": 1}, "row_width"),
    ({"n_features": 1000}, "row_width"),
])
def test_malformed_manifest_fields_are_named(workdir, seeds, change, field):
    blob, manifest = seeds[True]
    path = workdir / "named.bin"
    path.write_bytes(blob)
    (workdir / "named.bin.json").write_text(json.dumps({**manifest, **change}))
    with pytest.raises(IOKRDataError, match=field):
        CandidateFile(path)


def test_manifest_that_is_not_an_object(workdir, seeds):
    blob, manifest = seeds[False]
    path = workdir / "list.bin"
    path.write_bytes(blob)
    (workdir / "list.bin.json").write_text(json.dumps(list(manifest.values())))
    with pytest.raises(IOKRDataError, match="JSON object"):
        CandidateFile(path)


def test_missing_data_file_is_a_typed_error(workdir, seeds):
    _, manifest = seeds[False]
    (workdir / "gone.bin.json").write_text(json.dumps(manifest))
    with pytest.raises(IOKRDataError, match="gone.bin"):
        CandidateFile(workdir / "gone.bin")
