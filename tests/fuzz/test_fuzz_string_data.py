"""Fuzz the string data readers: Taskar's OCR letters (npz) and CMUdict (plain or gzip text)."""

import io

import numpy as np
import pytest
from fuzz_helpers import fuzz_settings, gzip_bytes, mutated, run_reader
from hypothesis import given
from hypothesis import strategies as st

from iokr.exceptions import IOKRDataError
from iokr.strings import load_cmudict, load_ocr_letters

FMT = "string_data"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_string_data")


def _ocr_arrays():
    rng = np.random.default_rng(0)
    lengths = np.array([3, 2, 4])
    return {"pixels_packed": np.packbits(rng.random((9, 128)) < 0.5, axis=1),
            "labels": rng.integers(0, 26, 9), "word_lengths": lengths, "word_folds": np.array([0, 1, 0])}


def _npz(arrays):
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def _check_ocr(result):
    if result is None:
        return
    assert len(result["images"]) == len(result["words"]) == result["folds"].size
    for image, word in zip(result["images"], result["words"], strict=True):
        assert image.shape == (len(word), 128) and set(np.unique(image)) <= {0.0, 1.0}


@fuzz_settings(scale=3)
@given(data=mutated(_npz(_ocr_arrays()), max_ops=3))
def test_ocr_mutated_archive(workdir, data):
    path = workdir / "ocr_letters_taskar.npz"
    path.write_bytes(data)
    _check_ocr(run_reader(FMT, load_ocr_letters, path))


ocr_values = st.sampled_from([
    None, np.zeros(0), np.zeros((9, 16), np.float64), np.zeros((9, 3), np.uint8), np.zeros(9, np.uint8),
    np.array([-1, 30, 2]), np.array([3, -2, 8]), np.array([9]), np.array([1.5, 2.5]), np.array(["a", "b"]),
    np.zeros((2, 2), np.int64), np.array(4), np.full(9, 25), np.array([0, 0, 9]),
])


@fuzz_settings(scale=3)
@given(edits=st.dictionaries(st.sampled_from(["pixels_packed", "labels", "word_lengths", "word_folds"]),
                             ocr_values, min_size=1, max_size=2))
def test_ocr_members_of_wrong_dtype_or_shape(workdir, edits):
    arrays = _ocr_arrays()
    for name, value in edits.items():
        if value is None:
            arrays.pop(name)
        else:
            arrays[name] = value
    path = workdir / "ocr_letters_taskar.npz"
    path.write_bytes(_npz(arrays))
    _check_ocr(run_reader(FMT, load_ocr_letters, path))


CMUDICT = ("a AH0\na(2) EY1\nabandon AH0 B AE1 N D AH0 N\nzebra Z IY1 B R AH0  # comment\n"
           "\u00e9t\u00e9 EY1 T EY1\n;;; header\n").encode()


def _check_cmudict(result):
    if result is None:
        return
    words, phonemes = result
    assert len(words) == len(phonemes) == len(set(words))
    assert all(isinstance(p, tuple) and p for p in phonemes)


@fuzz_settings(scale=3)
@given(data=mutated(CMUDICT, [b"(", b"(2)", b"#", b" ", b"AH0"]), compress=st.booleans(), stress=st.booleans())
def test_cmudict_mutated(workdir, data, compress, stress):
    path = workdir / ("cmudict.dict.gz" if compress else "cmudict.dict")
    path.write_bytes(gzip_bytes(data) if compress else data)
    _check_cmudict(run_reader(FMT, load_cmudict, path, stress=stress))


@fuzz_settings(scale=2)
@given(data=mutated(gzip_bytes(CMUDICT), max_ops=3))
def test_cmudict_mutated_gzip_stream(workdir, data):
    path = workdir / "cmudict.dict.gz"
    path.write_bytes(data)
    _check_cmudict(run_reader(FMT, load_cmudict, path))


# -- regression tests for crashes the fuzzer found ----------------------------------------------------------------


def test_ocr_garbage_and_npy_files(tmp_path):
    path = tmp_path / "ocr.npz"
    path.write_bytes(b"not an archive at all")
    with pytest.raises(IOKRDataError, match="not an .npz archive"):
        load_ocr_letters(path)
    np.save(tmp_path / "ocr.npy", np.zeros(3))
    (tmp_path / "ocr.npy").rename(path)
    with pytest.raises(IOKRDataError, match="not an .npz archive"):
        load_ocr_letters(path)


@pytest.mark.parametrize("name, value, match", [
    ("pixels_packed", np.zeros((9, 16), np.float64), "pixels_packed"),
    ("word_lengths", np.array([1.5, 2.5]), "word_lengths"), ("word_lengths", np.array([3, -2, 8]), "non-negative"),
])
def test_ocr_members_of_wrong_type(tmp_path, name, value, match):
    arrays = _ocr_arrays()
    arrays[name] = value
    path = tmp_path / "ocr.npz"
    path.write_bytes(_npz(arrays))
    with pytest.raises(IOKRDataError, match=match):
        load_ocr_letters(path)


def test_cmudict_not_utf8_or_truncated(tmp_path):
    path = tmp_path / "cmudict.dict"
    path.write_bytes(b"abc AH0\n\xff\xfe B\n")
    with pytest.raises(IOKRDataError, match="not UTF-8"):
        load_cmudict(path)
    blob = gzip_bytes(CMUDICT * 40)
    gz = tmp_path / "cmudict.dict.gz"
    gz.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(IOKRDataError, match="truncated"):
        load_cmudict(gz)
