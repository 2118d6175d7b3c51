"""Every reader of untrusted files fails with one ``IOKRDataError`` line naming the file (and line) (issue #16).

Deeply nested JSON (``[`` x 100,000) gave a ``RecursionError`` traceback; a 5,000-digit integer aborted the whole
file with Python's int-string conversion ``ValueError`` naming neither file nor line; folder readers followed
symlinks out of the folder and echoed what they read.
"""

import gzip
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from zip_members import read_members as _members
from zip_members import write_members as _rezip

import iokr
from iokr.apps.metabolites import ReadReport, read_massbank_jsonl
from iokr.datasets import load_arff, load_parallel_text
from iokr.decoding import CandidateFile, write_candidate_file
from iokr.exceptions import IOKRDataError
from iokr.io import (
    FORMAT_VERSION,
    MAX_COMPRESSION_RATIO,
    MAX_LINE_BYTES,
    ModelFileError,
    iter_lines,
    load_model_file,
    read_npz,
    save_model_file,
)
from iokr.strings import load_cmudict

DEEP = "[" * 100_000
LONG_INT = "9" * 5000
GOOD = {"accession": "GOOD1", "precursor_mz": 181.07, "peaks": [[50.0, 1.0], [60.0, 2.0]]}
CHAPTER = {"id": "Gen.1", "en": ["In the beginning"], "es": ["En el principio"]}
LEGACY = Path(__file__).parent / "data" / "model_format_v1.npz"


# -- JSON: spectra, parallel text, candidate-file manifests, model metadata -------------------------------------------


@pytest.mark.parametrize("bad, reason", [
    (DEEP, "JSON nested deeper than 100 levels"),
    ('{"accession": "X", "precursor_mz": ' + LONG_INT + ', "peaks": [[1, 1]]}', "integer with more than 4300 digits"),
    ('{"accession": "Y", "peaks": [[' + LONG_INT + ", 1]]}", "integer with more than 4300 digits"),
])
def test_spectra_jsonl_skips_hostile_records_with_a_reason(tmp_path, bad, reason):
    path = tmp_path / "s.jsonl.gz"
    path.write_bytes(gzip.compress((json.dumps(GOOD) + "\n" + bad + "\n" + json.dumps(GOOD) + "\n").encode()))
    spectra, report = read_massbank_jsonl(path)
    assert len(spectra) == 2 and report.skipped == [("line 2", reason)] and report.counts == {reason: 1}
    assert report.summary() == f"2 spectra read, 1 skipped (1 {reason})"


@pytest.mark.parametrize("bad, reason", [
    (DEEP, "JSON nested deeper than 100 levels"),
    ('{"id": ' + LONG_INT + ', "en": [], "es": []}', "integer with more than 4300 digits"),
])
def test_parallel_text_names_the_line(tmp_path, bad, reason):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(CHAPTER) + "\n" + bad + "\n")
    with pytest.raises(IOKRDataError, match=f"^Parallel-text file {path}: line 2: {reason}.$"):
        load_parallel_text(path)


@pytest.mark.parametrize("content, reason", [
    (DEEP, "JSON nested deeper than 100 levels"),
    ('{"format": "iokr-candidates-1", "n_rows": ' + LONG_INT + "}", "integer with more than 4300 digits"),
])
def test_candidate_file_manifest(tmp_path, content, reason):
    pool = write_candidate_file(tmp_path / "pool.bin", np.eye(3, dtype=np.float32))
    manifest = Path(pool.path + ".json")
    manifest.write_text(content)
    with pytest.raises(IOKRDataError, match=f"^Candidate-file manifest {manifest}: {reason}.$"):
        CandidateFile(pool.path)


def test_candidate_file_manifest_size_cap(tmp_path):
    pool = write_candidate_file(tmp_path / "pool.bin", np.eye(3, dtype=np.float32))
    manifest = Path(pool.path + ".json")
    with open(manifest, "wb") as handle:
        handle.truncate(64 * 2**20 + 1)  # sparse file: no disk used
    with pytest.raises(IOKRDataError, match="larger than the 64 MiB cap"):
        CandidateFile(pool.path)


def _npy(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


@pytest.mark.parametrize("text, reason", [
    (DEEP, "JSON nested deeper than 100 levels"),
    ('{"format": "iokr-model", "x": ' + LONG_INT + "}", "integer with more than 4300 digits"),
])
def test_model_metadata(tmp_path, text, reason):
    path = save_model_file(tmp_path / "m.npz", {"a": np.ones(3)}, {}, kind="test")
    members = _members(path)
    members["__metadata__.npy"] = _npy(np.frombuffer(text.encode(), np.uint8))
    _rezip(path, members)
    with pytest.raises(ModelFileError, match=f"^Model file {path} has corrupted metadata \\({reason}\\).$"):
        load_model_file(path)


# -- model files: format 2 streaming, format 1 still read --------------------------------------------------------------


def test_format_1_file_written_by_the_previous_code_still_loads():
    arrays, meta = load_model_file(LEGACY, kind="test")
    assert meta["format_version"] == 1 and "members" not in meta and meta["alpha"] == 0.1
    np.testing.assert_array_equal(arrays["a"], np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(arrays["f"], np.arange(6, dtype=np.int32).reshape(2, 3))
    assert arrays["scalar"].shape == () and arrays["scalar"] == 2.5 and arrays["empty"].shape == (0, 3)
    assert arrays["names"].tolist() == ["x", "yz"] and arrays["bits"].tolist() == [True, False]


def test_format_1_file_damage_is_still_detected(tmp_path):
    members = _members(LEGACY)
    data = bytearray(members["a.npy"])
    data[-1] ^= 1
    members["a.npy"] = bytes(data)
    with pytest.raises(ModelFileError, match="failed its SHA-256 check"):
        load_model_file(_rezip(tmp_path / "m.npz", members))


@pytest.mark.parametrize("array", [
    np.asfortranarray(np.arange(12.0).reshape(3, 4)), np.array(7, dtype=np.int16), np.zeros((0, 4)),
    np.array(["a", "bcd"]), np.arange(10.0)[::2], np.array([[True, False]]), np.zeros(3, dtype=">f8"),
])
def test_format_2_round_trip(tmp_path, array):
    before = array.copy()
    path = save_model_file(tmp_path / "m.npz", {"x": array}, {"k": [1, {"a": None}]}, kind="test")
    arrays, meta = load_model_file(path, kind="test")
    assert meta["format_version"] == FORMAT_VERSION == 2 and meta["members"]["x"]["shape"] == list(array.shape)
    assert arrays["x"].dtype == array.dtype and arrays["x"].shape == array.shape
    np.testing.assert_array_equal(arrays["x"], array)
    np.testing.assert_array_equal(array, before)  # inputs never modified


def test_damaged_member_is_refused_before_the_next_is_inflated(tmp_path):
    path = save_model_file(tmp_path / "m.npz", {"a": np.ones(4), "b": np.zeros(4)}, {}, kind="test")
    members = _members(path)
    data = bytearray(members["a.npy"])
    data[-1] ^= 1
    members["a.npy"] = bytes(data)
    members["b.npy"] = b"never read"  # "a" comes first in name order: its checksum stops the load
    with pytest.raises(ModelFileError, match="member 'a.npy' failed its SHA-256 check"):
        load_model_file(_rezip(path, members))


def test_duplicate_member_is_refused(tmp_path):
    path = save_model_file(tmp_path / "m.npz", {"a": np.ones(4)}, {}, kind="test")
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(path, "a") as archive:
        archive.writestr("a.npy", _npy(np.zeros(4)))
    with pytest.raises(ModelFileError, match="member 'a.npy' appears twice"):
        load_model_file(path)


def test_read_npz_expected_members(tmp_path):
    path = tmp_path / "c.npz"
    np.savez(path, a=np.ones(2), b=np.ones(3))
    assert set(read_npz(path, members={"a", "b"})) == {"a", "b"}
    with pytest.raises(IOKRDataError, match="unknown member 'b.npy'"):
        read_npz(path, members={"a"})


def test_string_members_are_exempt_from_the_ratio_cap(tmp_path):
    """Fixed-width string arrays pad with zeros (the bundled fingerprint cache's formulas compress 320 times)."""
    path = tmp_path / "s.npz"
    np.savez_compressed(path, s=np.array(["C6H12O6"] * 2**20, dtype="<U20"))  # 80 MiB of mostly padding
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("s.npy")
        assert info.file_size > 16 * 2**20 and info.file_size > 100 * info.compress_size
    assert read_npz(path)["s"].shape == (2**20,)


# -- line reader: caps, configuration, handles -------------------------------------------------------------------------


def test_caps_are_documented_constants_and_configurable(tmp_path):
    assert iokr.get_config()["max_line_bytes"] == MAX_LINE_BYTES == 16 * 2**20
    assert iokr.get_config()["max_compression_ratio"] == MAX_COMPRESSION_RATIO == 100
    path = tmp_path / "a.txt"
    path.write_bytes(b"12345\n123456\n")
    with iokr.config_context(max_line_bytes=5):
        with pytest.raises(IOKRDataError, match=f"^Example file {path}: line 2 is longer than the 5 bytes cap"):
            list(iter_lines(path, what="Example file"))
        assert len(list(iter_lines(path, what="Example file", max_line_bytes=6))) == 2  # per call
    assert len(list(iter_lines(path, what="Example file"))) == 2
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="'max_line_bytes' must be a positive int"):
            iokr.set_config(max_line_bytes=bad)
    with pytest.raises(ValueError, match="'max_compression_ratio' must be a number >= 1"):
        iokr.set_config(max_compression_ratio=0.5)


def test_line_cap_applies_to_every_reader(tmp_path):
    with iokr.config_context(max_line_bytes=64):
        path = tmp_path / "s.jsonl"
        path.write_text(json.dumps({**GOOD, "name": "x" * 100}) + "\n")
        with pytest.raises(IOKRDataError, match="Spectra file .* line 1 is longer than the 64 bytes cap"):
            read_massbank_jsonl(path)
        path.write_text("@attribute a numeric\n@attribute b numeric\n@data\n" + "0," * 40 + "0\n")
        with pytest.raises(IOKRDataError, match="ARFF file .* line 4 is longer than the 64 bytes cap"):
            load_arff(path, 1)
        path.write_text("word W ER D\n" + "x" * 70 + "\n")
        with pytest.raises(IOKRDataError, match="CMUdict file .* line 2 is longer than the 64 bytes cap"):
            load_cmudict(path)


def test_iter_lines_reads_handles_and_terminators(tmp_path):
    data = b"a\r\nb\n\nlast"
    assert list(iter_lines(io.BytesIO(gzip.compress(data)), what="X")) == [(1, "a"), (2, "b"), (3, ""), (4, "last")]
    assert list(iter_lines(io.BytesIO(data), what="X", max_line_bytes=4)) == [(1, "a"), (2, "b"), (3, ""),
                                                                               (4, "last")]
    with pytest.raises(IOKRDataError, match="^Cannot read example file .*absent: No such file or directory.$"):
        list(iter_lines(tmp_path / "absent", what="Example file"))


# -- folders and symlinks, content never echoed -------------------------------------------------------------------------


def test_parallel_text_folder_refuses_a_symlink_leading_outside(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "bible_kjv_en__rv1909_es.chapters.jsonl.gz").symlink_to(secret)
    with pytest.raises(IOKRDataError, match="is a symlink to a file outside the folder") as info:
        load_parallel_text(folder)
    assert "root:x" not in str(info.value)
    # A symlink within the folder is fine.
    (folder / "real.jsonl").write_text(json.dumps(CHAPTER) + "\n")
    (folder / "bible_kjv_en__rv1909_es.chapters.jsonl.gz").unlink()
    (folder / "bible_kjv_en__rv1909_es.chapters.jsonl.gz").symlink_to(folder / "real.jsonl")
    assert load_parallel_text(folder)[0] == ["Gen.1"]


def test_cmudict_folder_refuses_a_symlink_leading_outside(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    folder = tmp_path / "dict"
    folder.mkdir()
    (folder / "cmudict.dict").symlink_to(secret)
    with pytest.raises(IOKRDataError, match="is a symlink to a file outside the folder") as info:
        load_cmudict(folder)
    assert "root:x" not in str(info.value)


@pytest.mark.parametrize("reader", ["parallel_text", "arff", "cmudict"])
def test_errors_do_not_echo_file_content(tmp_path, reader):
    secret = "root:x:0:0:root:/root:/bin/bash:" + "s3cr3t" * 20
    path = tmp_path / "f.txt"
    path.write_text(secret + "\n")
    with pytest.raises(IOKRDataError) as info:
        if reader == "parallel_text":
            load_parallel_text(path)
        elif reader == "arff":
            path.write_text("@attribute a numeric\n@attribute b numeric\n@data\n" + secret + ",1\n")
            load_arff(path, 1)
        else:
            path.write_text(secret.replace(":", "") + "\n")
            load_cmudict(path)
    # At most a 30-40 character excerpt locates the error; the line itself is not repeated.
    assert "s3cr3t" * 4 not in str(info.value) and len(str(info.value)) < 300 and "\n" not in str(info.value)


def test_read_report_keeps_the_interface_of_its_callers():
    report = ReadReport()
    assert report.summary() == "0 spectra read" and report.skipped == [] and report.n_skipped == 0
    report.n_read = 2
    report.skip("A", "no peaks")
    report.skip("B", "invalid JSON")
    assert dict(report.skipped) == {"A": "no peaks", "B": "invalid JSON"}
    assert report.summary() == "2 spectra read, 2 skipped (1 invalid JSON, 1 no peaks)"
