"""Model files load only when intact: every kind of tampering is rejected with a ModelFileError that says why.

Covers the generic format (:mod:`iokr.io`) and fitted metabolite identifiers stored in it.
"""

import io
import json

import numpy as np
import pytest
from zip_members import read_members as _members
from zip_members import write_members as _write

from iokr.apps.metabolites import (
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    Spectra,
    load_identifier,
    save_identifier,
)
from iokr.io import FORMAT_VERSION, ModelFileError, load_model_file, save_model_file

ARRAYS = {"a": np.arange(12.0).reshape(3, 4), "names": np.array(["x", "yz"]), "bits": np.array([1, 0], np.uint8)}
META = {"alpha": 0.1, "kernels": ["ppk"]}


def _npy(array):
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=True)
    return buf.getvalue()


def _meta_of(members):
    return json.loads(np.load(io.BytesIO(members["__metadata__.npy"]), allow_pickle=False).tobytes())


def _with_meta(members, meta):
    return {**members, "__metadata__.npy": _npy(np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))}


@pytest.fixture
def model(tmp_path):
    return save_model_file(tmp_path / "model.npz", ARRAYS, META, kind="test")


def test_file_written_by_this_version_loads(model):
    arrays, meta = load_model_file(model, kind="test")
    assert set(arrays) == set(ARRAYS) and all(np.array_equal(arrays[k], ARRAYS[k]) for k in ARRAYS)
    assert all(arrays[k].dtype == ARRAYS[k].dtype for k in ARRAYS)
    assert meta["format"] == "iokr-model" and meta["format_version"] == FORMAT_VERSION and len(meta["sha256"]) == 64
    assert {k: meta[k] for k in META} == META


def _tamper(kind, path, tmp_path):  # noqa: C901 - one branch per tampering kind, the test's data
    """Write the tampered variant ``kind`` of the model file at ``path``; return it."""
    members = _members(path)
    out = tmp_path / f"{kind}.npz"
    if kind == "flip_compressed_payload":
        blob = bytearray(path.read_bytes())
        blob[blob.index(b"a.npy") + 40] ^= 0x10  # inside member a's deflate stream
        out.write_bytes(bytes(blob))
        return out
    if kind.startswith("truncated_"):
        blob = path.read_bytes()
        out.write_bytes(blob[: int(len(blob) * float(kind.split("_")[1]))])
        return out
    meta = _meta_of(members)
    if kind == "flip_payload_byte":  # zip re-written: its CRCs are valid, only the SHA-256 can tell
        data = bytearray(members["a.npy"])
        data[-1] ^= 0x01
        members["a.npy"] = bytes(data)
    elif kind == "flip_json_byte":
        raw = bytearray(json.dumps(meta, sort_keys=True).encode())
        raw[raw.index(b'"alpha"') + 1] ^= 0x80  # invalid UTF-8
        members["__metadata__.npy"] = _npy(np.frombuffer(bytes(raw), dtype=np.uint8))
    elif kind == "edited_json_value":
        members = _with_meta(members, {**meta, "alpha": 0.2})
    elif kind == "edited_checksum":
        members = _with_meta(members, {**meta, "sha256": "0" * 64})
    elif kind == "removed_checksum":
        members = _with_meta(members, {k: v for k, v in meta.items() if k != "sha256"})
    elif kind == "newer_version":
        members = _with_meta(members, {**meta, "format_version": FORMAT_VERSION + 1})
    elif kind == "invalid_version":
        members = _with_meta(members, {**meta, "format_version": "1"})
    elif kind == "other_format":
        members = _with_meta(members, {**meta, "format": "something-else"})
    elif kind == "extra_member":
        members["extra.npy"] = _npy(np.zeros(3))
    elif kind == "missing_member":
        members.pop("bits.npy")
    elif kind == "wrong_dtype":
        members["a.npy"] = _npy(ARRAYS["a"].astype(np.float32))
    elif kind == "wrong_shape":
        members["a.npy"] = _npy(ARRAYS["a"].reshape(4, 3))
    elif kind == "object_dtype":
        members["a.npy"] = _npy(np.array([{"x": 1}], dtype=object))
    elif kind == "missing_metadata":
        members.pop("__metadata__.npy")
    elif kind == "metadata_wrong_dtype":
        members["__metadata__.npy"] = _npy(np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8).astype(np.int64))
    elif kind == "not_npy_member":
        members["readme.txt"] = b"hello"
    else:  # pragma: no cover
        raise ValueError(kind)
    return _write(out, members)


TAMPERING = {
    "flip_compressed_payload": "truncated or corrupted",
    "truncated_0.3": "truncated or corrupted",
    "truncated_0.9": "truncated or corrupted",
    "truncated_0.999": "truncated or corrupted",
    "flip_payload_byte": "SHA-256",
    "flip_json_byte": "corrupted metadata",
    "edited_json_value": "SHA-256",
    "edited_checksum": "SHA-256",
    "removed_checksum": "SHA-256",
    "newer_version": f"format version {FORMAT_VERSION + 1}.*Upgrade iokr",
    "invalid_version": "invalid format version",
    "other_format": "not an iokr model file",
    "extra_member": "unknown member 'extra.npy'",
    "missing_member": "'bits.npy' listed in its metadata are missing",
    "wrong_dtype": "member 'a.npy' holds float32 of shape \\(3, 4\\), but the metadata declares float64",
    "wrong_shape": "member 'a.npy' holds float64 of shape \\(4, 3\\), but the metadata declares float64 of shape",
    "object_dtype": "Python objects",
    "missing_metadata": "no iokr metadata",
    "metadata_wrong_dtype": "corrupted metadata",
    "not_npy_member": "'readme.txt' is not a .npy array",
}


@pytest.mark.parametrize("kind", list(TAMPERING))
def test_tampered_model_file_is_rejected(model, tmp_path, kind):
    path = _tamper(kind, model, tmp_path)
    with pytest.raises(ModelFileError, match=TAMPERING[kind]) as info:
        load_model_file(path, kind="test")
    assert str(path) in str(info.value)  # the message names the file


def test_missing_file_and_wrong_kind(model, tmp_path):
    with pytest.raises(ModelFileError, match="does not exist"):
        load_model_file(tmp_path / "absent.npz")
    with pytest.raises(ModelFileError, match="holds a 'test' model, expected 'metabolites'"):
        load_model_file(model, kind="metabolites")


def test_writer_refuses_object_arrays_and_unserializable_metadata(tmp_path):
    with pytest.raises(TypeError, match="dtype object"):
        save_model_file(tmp_path / "o.npz", {"o": np.array([{}], dtype=object)}, {}, kind="t")
    with pytest.raises(TypeError, match="JSON-serializable"):
        save_model_file(tmp_path / "m.npz", {}, {"f": object()}, kind="t")
    assert not list(tmp_path.iterdir())  # nothing half-written


# -- metabolite identifiers ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def identifier(tmp_path_factory):
    pytest.importorskip("rdkit")

    rng = np.random.default_rng(0)
    peak_lists = [np.column_stack([np.sort(rng.uniform(50, 200, 5)), rng.uniform(0.1, 1, 5)]) for _ in range(6)]
    meta = [{"accession": f"A{i}", "inchikey": f"KEY{i:011d}-X-N", "inchi": "InChI=1S/x", "license": "CC0"}
            for i in range(6)]
    S = Spectra.from_peak_lists(peak_lists, np.full(6, 250.0), meta)
    Y = (rng.random((6, 32)) < 0.3).astype(float)
    model = MetaboliteIdentifier(kernels=("ppk",), weights="uniform", alpha=0.5).fit(S, Y)
    path = tmp_path_factory.mktemp("identifier") / "ident.npz"
    save_identifier(path, model, Fingerprinter(kind="morgan_bits", n_bits=32, radius=1), Cleaning())
    return path, model, S


def test_identifier_written_by_this_version_loads_with_equal_scores(identifier):
    path, model, S = identifier
    loaded, fingerprinter, _, meta = load_identifier(path)
    candidates = [(np.random.default_rng(1).random((7, 32)) < 0.3).astype(float)]
    np.testing.assert_allclose(loaded.score_sets(S[:2], candidates * 2)[0], model.score_sets(S[:2], candidates * 2)[0],
                               rtol=1e-12, atol=1e-12)
    assert fingerprinter.n_features == 32 and meta["kind"] == "metabolites"


@pytest.mark.parametrize("kind", list(TAMPERING))
def test_tampered_identifier_is_rejected(identifier, tmp_path, kind):
    path = _tamper(kind, _with_generic_members(identifier[0], tmp_path), tmp_path)
    with pytest.raises(ModelFileError, match=TAMPERING[kind]):
        load_identifier(path)


def _with_generic_members(path, tmp_path):
    """The identifier file plus members ``a``, ``bits`` and field ``alpha``, which the tampering recipes address."""
    arrays, meta = load_model_file(path, kind="metabolites")
    meta = {k: v for k, v in meta.items() if k not in ("format", "format_version", "library_version", "kind",
                                                        "sha256")}
    arrays["a"] = np.arange(12.0).reshape(3, 4)
    arrays["bits"] = np.array([1, 0], np.uint8)
    return save_model_file(tmp_path / "ident_src.npz", arrays, {**meta, "alpha": 0.1}, kind="metabolites")


@pytest.mark.parametrize("name, value, match", [
    ("train_mz", np.zeros(3), "inconsistent"),
    ("train_mz", np.array(["a"] * 30), "train_mz"),
    ("train_offsets", np.arange(7.0), "train_offsets"),
    ("train_keys", np.zeros(6), "train_keys"),
    ("Y_packed", np.zeros((5, 4), np.uint8), "training fingerprints have shape"),
    ("train_precursor_mz", None, "train_precursor_mz"),
])
def test_resigned_identifier_with_wrong_member(identifier, tmp_path, name, value, match):
    """A valid checksum over a member of the wrong dtype or shape (or a missing member): the loader's own checks."""
    arrays, meta = load_model_file(identifier[0], kind="metabolites")
    meta = {k: v for k, v in meta.items() if k not in ("format", "format_version", "library_version", "kind",
                                                        "sha256")}
    if value is None:
        arrays.pop(name)
    else:
        arrays[name] = value
    path = save_model_file(tmp_path / "resigned.npz", arrays, meta, kind="metabolites")
    with pytest.raises(ModelFileError, match=match):
        load_identifier(path)


def test_generic_model_file_is_not_an_identifier(model):
    pytest.importorskip("rdkit")

    with pytest.raises(ModelFileError, match="expected 'metabolites'"):
        load_identifier(model)


def _resigned(path, tmp_path, edit):
    arrays, meta = load_model_file(path, kind="metabolites")
    meta = {k: v for k, v in meta.items() if k not in ("format", "format_version", "library_version", "kind",
                                                        "sha256")}
    edit(arrays, meta)
    return save_model_file(tmp_path / "resigned.npz", arrays, meta, kind="metabolites")


@pytest.fixture(scope="module")
def two_kernel_identifier(identifier, tmp_path_factory):
    _, _, S = identifier
    Y = (np.random.default_rng(2).random((6, 32)) < 0.3).astype(float)
    model = MetaboliteIdentifier(kernels=("ppk", "ppk_nl"), weights=(0.8, 0.2), alpha=0.5).fit(S, Y)
    path = tmp_path_factory.mktemp("two_kernels") / "ident.npz"
    save_identifier(path, model, Fingerprinter(kind="morgan_bits", n_bits=32, radius=1), Cleaning())
    return path


def _permute_kernels(arrays, meta):
    meta["model_params"] = {**meta["model_params"], "kernels": meta["model_params"]["kernels"][::-1]}


def _permute_weights(arrays, meta):
    meta["model_params"] = {**meta["model_params"], "weights": meta["model_params"]["weights"][::-1]}


@pytest.mark.parametrize("edit, match", [
    (_permute_kernels, r"kernel list of 'model_params' \['ppk_nl', 'ppk'\] is not the stored list 'kernels'"),
    (_permute_weights, r"MKL weights of 'model_params' \[0.2, 0.8\] are not the stored array 'weights'"),
    (lambda arrays, meta: arrays.update(kernels=np.array(["ppk_nl", "ppk", "ppk"])), "kernel list"),
])
def test_resigned_identifier_with_permuted_kernels_is_refused(two_kernel_identifier, tmp_path, edit, match):
    assert load_identifier(two_kernel_identifier)[0].kernels == ("ppk", "ppk_nl")
    with pytest.raises(ModelFileError, match=match):
        load_identifier(_resigned(two_kernel_identifier, tmp_path, edit))


def test_permuting_kernels_with_their_weights_everywhere_is_the_same_model(two_kernel_identifier, identifier,
                                                                          tmp_path):
    def permute_all(arrays, meta):
        _permute_kernels(arrays, meta)
        _permute_weights(arrays, meta)
        arrays["kernels"], arrays["weights"] = arrays["kernels"][::-1].copy(), arrays["weights"][::-1].copy()

    S = identifier[2]
    original = load_identifier(two_kernel_identifier)[0]
    permuted = load_identifier(_resigned(two_kernel_identifier, tmp_path, permute_all))[0]
    candidates = [(np.random.default_rng(1).random((7, 32)) < 0.3).astype(float)] * 2
    np.testing.assert_allclose(permuted.score_sets(S[:2], candidates)[0], original.score_sets(S[:2], candidates)[0],
                               rtol=1e-10, atol=1e-12)
