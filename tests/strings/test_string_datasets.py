"""Readers of the bundled OCR subset and of CMUdict files."""

import gzip

import numpy as np
import pytest

from iokr.exceptions import IOKRDataError
from iokr.strings import load_cmudict, load_ocr_letters


def test_bundled_ocr_subset():
    data = load_ocr_letters()
    assert len(data["words"]) == len(data["images"]) == data["folds"].size == 1330
    assert set(np.unique(data["folds"])) == {0, 1}
    assert all(x.shape == (len(w), 128) for x, w in zip(data["images"], data["words"], strict=True))
    assert data["words"][0] == "ommanding"
    assert all(set(np.unique(x)) <= {0.0, 1.0} for x in data["images"][:20])


def test_ocr_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_ocr_letters(tmp_path / "missing.npz")
    bad = tmp_path / "bad.npz"
    np.savez(bad, labels=np.zeros(3))
    with pytest.raises(IOKRDataError, match="lacks the array"):
        load_ocr_letters(bad)


def test_cmudict_reader(tmp_path):
    text = "hello HH AH0 L OW1\nhello(2) HH EH0 L OW1\nx-ray EH1 K S R EY2\nread R IY1 D # comment\n"
    path = tmp_path / "cmudict.dict.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(text)
    words, phonemes = load_cmudict(tmp_path)
    assert words == ["hello", "read"]
    assert phonemes == [("HH", "AH", "L", "OW"), ("R", "IY", "D")]
    _, stressed = load_cmudict(path, stress=True, alphabetic_only=False)
    assert stressed[0] == ("HH", "AH0", "L", "OW1") and len(stressed) == 3
    (tmp_path / "broken.dict").write_text("lonely\n")
    with pytest.raises(IOKRDataError, match="line 1"):
        load_cmudict(tmp_path / "broken.dict")
