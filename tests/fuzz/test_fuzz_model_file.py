"""Fuzz model files: the generic checksummed format (iokr.io) and fitted metabolite identifiers on top of it.

Byte-level damage must be caught by the archive checks or the SHA-256; content that is damaged and then re-signed
(a valid checksum over wrong fields, dtypes or shapes) must be caught by the metabolite loader's own checks.
"""

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fuzz_helpers import fuzz_settings, json_values, mutated, run_reader
from hypothesis import given
from hypothesis import strategies as st

from iokr.apps.metabolites import (
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    Spectra,
    load_identifier,
    save_identifier,
)
from iokr.io import ModelFileError, load_model_file, read_npz, save_model_file

FMT = "model_file"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_model_file")


@pytest.fixture(scope="module")
def generic_blob(workdir):
    arrays = {"a": np.arange(12.0).reshape(3, 4), "names": np.array(["x", "yz"]), "bits": np.array([1, 0], np.uint8)}
    path = save_model_file(workdir / "seed.npz", arrays, {"alpha": 0.1, "kernels": ["ppk"]}, kind="test")
    return path.read_bytes()


def _members(blob):
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        return {n: z.read(n) for n in z.namelist()}


def _zip(members, compress=True):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _npy(array):
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=True)  # object arrays too: the reader must refuse them
    return buf.getvalue()


@fuzz_settings(scale=4)
@given(data=st.data())
def test_mutated_archive_bytes(workdir, generic_blob, data):
    path = workdir / "m.npz"
    path.write_bytes(data.draw(mutated(generic_blob, max_ops=3)))
    run_reader(FMT, load_model_file, path, kind="test")


LEGACY = Path(__file__).resolve().parents[1] / "io" / "data" / "model_format_v1.npz"


@fuzz_settings(scale=2)
@given(data=mutated(LEGACY.read_bytes(), max_ops=3))
def test_mutated_format_1_file(workdir, data):
    """Files of format version 1 (written by the previous code, no per-member metadata) are still read safely."""
    path = workdir / "legacy.npz"
    path.write_bytes(data)
    run_reader(FMT, load_model_file, path, kind="test")


@fuzz_settings(scale=4)
@given(member=st.sampled_from(["a.npy", "names.npy", "bits.npy", "__metadata__.npy"]), compress=st.booleans(),
       data=st.data())
def test_mutated_member_bytes(workdir, generic_blob, member, compress, data):
    """Damage inside one member (npy header or payload), archive re-zipped so the zip CRCs are valid."""
    members = _members(generic_blob)
    members[member] = data.draw(mutated(members[member], max_ops=3))
    path = workdir / "m.npz"
    path.write_bytes(_zip(members, compress))
    run_reader(FMT, load_model_file, path, kind="test")


extra_arrays = st.sampled_from([
    np.zeros(3), np.array([{}], dtype=object), np.array([1, "a"], dtype=object), np.zeros((0, 5)),
    np.array(["x" * 40]), np.zeros(2, dtype=np.complex128), np.zeros((2, 2), dtype=">f8"), np.array(1e308),
])


@fuzz_settings(scale=3)
@given(edits=st.dictionaries(st.sampled_from(["format", "format_version", "kind", "sha256", "alpha", "extra"]),
                             json_values, min_size=1, max_size=3),
       member=st.none() | st.sampled_from(["a.npy", "extra.npy", "bits.npy"]), array=extra_arrays)
def test_edited_metadata_and_members(workdir, generic_blob, edits, member, array):
    """Metadata fields of any JSON type, extra or replaced members (object, complex, big-endian, empty)."""
    members = _members(generic_blob)
    meta = json.loads(np.load(io.BytesIO(members["__metadata__.npy"])).tobytes())
    meta.update(edits)
    members["__metadata__.npy"] = _npy(np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
    if member is not None:
        members[member] = _npy(array)
    path = workdir / "m.npz"
    path.write_bytes(_zip(members))
    result = run_reader(FMT, load_model_file, path, kind="test")
    if result is not None:  # only content equal to what was signed can pass the checksum
        seed = workdir / "seed_copy.npz"
        seed.write_bytes(generic_blob)
        arrays, signed = load_model_file(seed, kind="test")
        assert result[1] == signed and set(result[0]) == set(arrays)
        assert all(np.array_equal(result[0][k], arrays[k]) and result[0][k].dtype == arrays[k].dtype for k in arrays)


# -- metabolite identifiers ---------------------------------------------------------------------------------------

FP_PARAMS = {"kind": "morgan_bits", "n_bits": 32, "radius": 1}


@pytest.fixture(scope="module")
def identifier_blob(workdir):
    pytest.importorskip("rdkit")

    rng = np.random.default_rng(0)
    peak_lists = [np.column_stack([np.sort(rng.uniform(50, 200, 5)), rng.uniform(0.1, 1, 5)]) for _ in range(6)]
    meta = [{"accession": f"A{i}", "inchikey": f"KEY{i:011d}-X-N", "inchi": "InChI=1S/x", "license": "CC0"}
            for i in range(6)]
    S = Spectra.from_peak_lists(peak_lists, np.full(6, 250.0), meta)
    Y = (rng.random((6, 32)) < 0.3).astype(float)
    model = MetaboliteIdentifier(kernels=("ppk",), weights="uniform", alpha=0.5).fit(S, Y)
    path = save_identifier(workdir / "ident.npz", model, Fingerprinter(**FP_PARAMS), Cleaning())
    return path.read_bytes()


def _load_and_check(path):
    model, fingerprinter, _, _ = load_identifier(path)
    assert model.weights_.shape == (1,) and fingerprinter.n_features == 32
    return model


@fuzz_settings(scale=1)
@given(data=st.data())
def test_identifier_mutated_bytes(workdir, identifier_blob, data):
    path = workdir / "ident_m.npz"
    path.write_bytes(data.draw(mutated(identifier_blob, max_ops=3)))
    run_reader(FMT, _load_and_check, path)


ARRAY_NAMES = ["train_mz", "train_intensity", "train_offsets", "train_precursor_mz", "train_keys", "train_inchi",
               "train_accessions", "train_licenses", "weights", "Y_packed"]
replacement_arrays = st.sampled_from([
    None, np.zeros(0), np.zeros(6), np.full(6, np.nan), np.full(30, -1.0), np.arange(7), np.arange(7)[::-1].copy(),
    np.array(["a"] * 6), np.array(["a"] * 5), np.zeros((6, 4), np.uint8), np.zeros((6, 4), np.float64),
    np.array([np.inf] * 30), np.zeros((2, 3, 4)), np.array(5), np.array([b"x"] * 6),
])
META_FIELDS = ["model_params", "fingerprint", "cleaning", "n_train", "n_output_features"]


@fuzz_settings(scale=2)
@given(array_edits=st.dictionaries(st.sampled_from(ARRAY_NAMES), replacement_arrays, max_size=2),
       meta_edits=st.dictionaries(st.sampled_from(META_FIELDS), json_values, max_size=2),
       param_edits=st.dictionaries(st.sampled_from(["alpha", "kernels", "weights", "output_kernel", "sigma_mz",
                                                    "kind", "n_bits", "radius", "min_relative_intensity",
                                                    "max_peaks_merged"]), json_values, max_size=2))
def test_identifier_resigned_with_wrong_content(workdir, identifier_blob, array_edits, meta_edits, param_edits):
    """A valid checksum over wrong content: missing arrays, wrong dtypes/shapes/values, fields of any type."""
    src = workdir / "ident_src.npz"
    src.write_bytes(identifier_blob)
    arrays, meta = load_model_file(src, kind="metabolites")
    for name, value in array_edits.items():
        if value is None:
            arrays.pop(name, None)
        else:
            arrays[name] = value
    meta = {k: v for k, v in meta.items() if k not in ("format", "format_version", "library_version", "kind", "sha256")}
    meta.update(meta_edits)
    for key, value in param_edits.items():
        for section in ("model_params", "fingerprint", "cleaning"):
            if isinstance(meta.get(section), dict) and key in meta[section]:
                meta[section] = {**meta[section], key: value}
    path = save_model_file(workdir / "ident_r.npz", arrays, meta, kind="metabolites")
    run_reader(FMT, _load_and_check, path)


# -- regression tests for crashes the fuzzer found ----------------------------------------------------------------


def test_npy_file_instead_of_archive(workdir):
    path = workdir / "bare.npz"
    path.write_bytes(_npy(np.zeros(3)))
    with pytest.raises(ModelFileError, match="not an .npz archive"):
        load_model_file(path)


def test_declared_shape_larger_than_member(workdir, generic_blob):
    members = _members(generic_blob)
    members["a.npy"] = members["a.npy"].replace(b"(3, 4)", b"(3000000000, 4)", 1).replace(b"   ", b"", 1)
    path = workdir / "huge.npz"
    path.write_bytes(_zip(members))
    # The metadata (format version 2) declares the member's shape: the header is refused before any allocation.
    with pytest.raises(ModelFileError, match=r"'a.npy' holds float64 of shape \(3000000000, 4\), but the metadata"):
        load_model_file(path)
    # Without metadata to compare with, the declared bytes must equal the bytes the member holds.
    with pytest.raises(ModelFileError, match="'a.npy' declares shape"):
        read_npz(path, what="Model file", error=ModelFileError)


def test_member_without_npy_header(workdir, generic_blob):
    members = _members(generic_blob)
    members["notes.txt"] = b"hello"
    path = workdir / "txt.npz"
    path.write_bytes(_zip(members))
    with pytest.raises(ModelFileError, match="notes.txt"):
        load_model_file(path)


def test_damaged_deflate_stream(workdir, generic_blob):
    members = _members(generic_blob)
    blob = bytearray(_zip({"a.npy": members["a.npy"] * 50, **members}))
    start = blob.index(b"a.npy") + 5
    blob[start + 40: start + 60] = bytes(20)  # inside the compressed payload; the zip directory stays valid
    path = workdir / "zlib.npz"
    path.write_bytes(bytes(blob))
    with pytest.raises(ModelFileError, match="truncated or corrupted"):
        load_model_file(path)


@pytest.mark.parametrize("version", [0, -1, True, 1.0, "1"])
def test_invalid_format_versions(workdir, generic_blob, version):
    members = _members(generic_blob)
    meta = json.loads(np.load(io.BytesIO(members["__metadata__.npy"])).tobytes())
    meta["format_version"] = version
    members["__metadata__.npy"] = _npy(np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
    path = workdir / "version.npz"
    path.write_bytes(_zip(members))
    with pytest.raises(ModelFileError, match="invalid format version"):
        load_model_file(path)


def test_resigned_identifier_with_wrong_fingerprint_width(workdir, identifier_blob):
    src = workdir / "w_src.npz"
    src.write_bytes(identifier_blob)
    arrays, meta = load_model_file(src, kind="metabolites")
    meta = {k: v for k, v in meta.items() if k in META_FIELDS}
    meta["fingerprint"] = {**meta["fingerprint"], "n_bits": 64}
    path = save_model_file(workdir / "w.npz", arrays, meta, kind="metabolites")
    with pytest.raises(ModelFileError, match="n_output_features"):
        load_identifier(path)


def test_resigned_identifier_with_nonfinite_peaks(workdir, identifier_blob):
    src = workdir / "nf_src.npz"
    src.write_bytes(identifier_blob)
    arrays, meta = load_model_file(src, kind="metabolites")
    arrays["train_mz"] = np.where(np.arange(arrays["train_mz"].size) == 0, np.nan, arrays["train_mz"])
    meta = {k: v for k, v in meta.items() if k in META_FIELDS}
    path = save_model_file(workdir / "nf.npz", arrays, meta, kind="metabolites")
    with pytest.raises(ModelFileError, match="finite"):
        load_identifier(path)


@pytest.mark.parametrize("old, new", [(b"'shape'", b"'sh)pe'"), (b"}", b" ")])
def test_damaged_npy_header_is_a_typed_error(workdir, generic_blob, old, new):
    # NumPy parses the header with ast.literal_eval: SyntaxError / tokenize.TokenError on damage
    members = _members(generic_blob)
    members["a.npy"] = members["a.npy"].replace(old, new, 1)
    path = workdir / "header.npz"
    path.write_bytes(_zip(members))
    with pytest.raises(ModelFileError, match="header.npz"):
        load_model_file(path)
