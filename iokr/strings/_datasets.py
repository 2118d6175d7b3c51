"""Readers of the string data sets: Taskar's OCR letters (bundled subset or full copy) and CMUdict."""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np

from ..exceptions import IOKRDataError
from ..io import read_npz

BUNDLED_OCR = (
    Path(__file__).resolve().parent.parent / "datasets" / "data" / "ocr_letters_subset" / "ocr_letters_subset.npz"
)


def load_ocr_letters(path=None):
    """Taskar's OCR words as image sequences.

    Parameters
    ----------
    path : str or Path, optional
        ``ocr_letters_taskar.npz`` (or a folder holding it, or a folder holding ``ocr_letters/``); the bundled subset
        (folds 0 and 1) when None.

    Returns
    -------
    data : dict
        ``images``: list of (L_i, 128) float64 arrays of 0/1 pixels; ``words``: list of str; ``folds``: int array.
    """
    if path is None:
        file = BUNDLED_OCR
    else:
        file = Path(path)
        if file.is_dir():
            for candidate in (file / "ocr_letters_taskar.npz", file / "ocr_letters" / "ocr_letters_taskar.npz"):
                if candidate.exists():
                    file = candidate
                    break
    if not file.is_file():
        raise FileNotFoundError(f"OCR letters file not found at {os.fspath(file)!r}.")
    name = os.fspath(file)
    d = read_npz(file, what="OCR letters file")
    for key in ("pixels_packed", "labels", "word_lengths", "word_folds"):
        if key not in d:
            raise IOKRDataError(f"{name!r} lacks the array {key!r}; expected the OCR letters npz.")
    packed, labels, lengths, folds = d["pixels_packed"], d["labels"], d["word_lengths"], d["word_folds"]
    if packed.dtype != np.uint8 or packed.ndim != 2 or packed.shape[1] < 16:
        raise IOKRDataError(f"{name!r}: 'pixels_packed' must be a 2-D uint8 array of 16 bytes per letter, got "
                            f"{packed.dtype} of shape {packed.shape}.")
    for key, a in (("labels", labels), ("word_lengths", lengths), ("word_folds", folds)):
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise IOKRDataError(f"{name!r}: {key!r} must be a 1-D integer array, got {a.dtype} of shape {a.shape}.")
    pixels = np.unpackbits(packed, axis=1)[:, :128].astype(np.float64)
    labels, lengths, folds = labels.astype(np.int64), lengths.astype(np.int64), folds.astype(np.int64)
    if folds.size != lengths.size or (lengths.size and lengths.min() < 0):
        raise IOKRDataError(f"{name!r}: one fold and one non-negative length per word expected ({folds.size} folds, "
                            f"{lengths.size} lengths).")
    if lengths.sum() != labels.size or pixels.shape[0] != labels.size:
        raise IOKRDataError(
            f"{os.fspath(file)!r}: word lengths sum to {lengths.sum()} but there are {labels.size} letters."
        )
    if labels.size and (labels.min() < 0 or labels.max() > 25):
        raise IOKRDataError(f"{os.fspath(file)!r}: letter labels must be in 0..25.")
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    images = [pixels[bounds[i] : bounds[i + 1]] for i in range(lengths.size)]
    words = ["".join(letters[labels[bounds[i] : bounds[i + 1]]]) for i in range(lengths.size)]
    return {"images": images, "words": words, "folds": folds}


def load_cmudict(path, *, stress=False, alphabetic_only=True):
    """CMU pronouncing dictionary: first pronunciation of each word.

    Parameters
    ----------
    path : str or Path
        ``cmudict.dict.gz`` / ``cmudict.dict`` or a folder holding it (or holding ``g2p_cmudict/``).
    stress : bool, default=False
        Keep stress digits on vowels (69 symbols) or drop them (39 phonemes).
    alphabetic_only : bool, default=True
        Keep only words made of the letters a-z.

    Returns
    -------
    words : list of str
    phonemes : list of tuple of str
        In the order of the file (sorted by word).
    """
    file = Path(path)
    if file.is_dir():
        for candidate in (file / "cmudict.dict.gz", file / "cmudict.dict", file / "g2p_cmudict" / "cmudict.dict.gz"):
            if candidate.exists():
                file = candidate
                break
    if not file.is_file():
        raise FileNotFoundError(f"CMUdict file not found at {os.fspath(file)!r}.")
    opener = gzip.open if file.suffix == ".gz" else open
    words, phonemes = [], []
    seen = set()
    lineno = 0
    try:
        with opener(file, "rt", encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                parts = line.split()
                if len(parts) < 2:
                    raise IOKRDataError(
                        f"{os.fspath(file)!r} line {lineno}: expected 'word PH1 PH2 ...', got {line!r}.")
                word = parts[0]
                if "(" in word:  # alternate pronunciation "word(2)": keep the first only
                    continue
                if word in seen or (alphabetic_only and not (word.isascii() and word.isalpha() and word.islower())):
                    continue
                seen.add(word)
                phones = parts[1:] if stress else [p.rstrip("012") for p in parts[1:]]
                words.append(word)
                phonemes.append(tuple(phones))
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:  # truncated/damaged .gz, not UTF-8
        raise IOKRDataError(f"{os.fspath(file)!r}: unreadable after line {lineno} ({type(exc).__name__}: {exc}); "
                            "the file is truncated, corrupted or not UTF-8 text.") from None
    return words, phonemes
