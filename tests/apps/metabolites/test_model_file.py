import io
import json
import zipfile

import numpy as np
import pytest

from iokr.io import FORMAT_VERSION, ModelFileError, load_model_file, save_model_file


def _save(tmp_path):
    arrays = {"a": np.arange(6.0).reshape(2, 3), "names": np.array(["x", "yz"]), "bits": np.array([1, 0], np.uint8)}
    return save_model_file(tmp_path / "m.npz", arrays, {"alpha": 0.1, "kernels": ["ppk"]}, kind="test"), arrays


def test_roundtrip_and_metadata(tmp_path):
    path, arrays = _save(tmp_path)
    loaded, meta = load_model_file(path, kind="test")
    assert set(loaded) == set(arrays)
    for k in arrays:
        np.testing.assert_array_equal(loaded[k], arrays[k])
    assert meta["alpha"] == 0.1 and meta["format_version"] == FORMAT_VERSION and len(meta["sha256"]) == 64
    assert "library_version" in meta
    with pytest.raises(ModelFileError, match="expected 'other'"):
        load_model_file(path, kind="other")


def test_truncated_corrupted_and_tampered_files(tmp_path):
    path, _ = _save(tmp_path)
    data = path.read_bytes()
    (tmp_path / "trunc.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="truncated or corrupted"):
        load_model_file(tmp_path / "trunc.npz")
    # Rewrite one array with other values but keep the stored checksum: detected by the SHA-256 check.
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    with zipfile.ZipFile(tmp_path / "tampered.npz", "w") as z:
        for name, blob in members.items():
            if name == "bits.npy":
                blob = blob[:-1] + bytes([blob[-1] ^ 1])
            z.writestr(name, blob)
    with pytest.raises(ModelFileError, match="SHA-256"):
        load_model_file(tmp_path / "tampered.npz")
    with pytest.raises(ModelFileError, match="does not exist"):
        load_model_file(tmp_path / "missing.npz")
    np.savez(tmp_path / "plain.npz", a=np.zeros(2))
    with pytest.raises(ModelFileError, match="not written by iokr"):
        load_model_file(tmp_path / "plain.npz")


def test_newer_format_and_object_arrays_refused(tmp_path):
    path, _ = _save(tmp_path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta_bytes = np.load(path)["__metadata__"].tobytes()
    meta = json.loads(meta_bytes)
    meta["format_version"] = 99

    buf = io.BytesIO()
    np.save(buf, np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
    members["__metadata__.npy"] = buf.getvalue()
    with zipfile.ZipFile(tmp_path / "new.npz", "w") as z:
        for name, blob in members.items():
            z.writestr(name, blob)
    with pytest.raises(ModelFileError, match="format version 99"):
        load_model_file(tmp_path / "new.npz")
    with pytest.raises(TypeError, match="object"):
        save_model_file(tmp_path / "o.npz", {"o": np.array([{}], dtype=object)}, {}, kind="t")
