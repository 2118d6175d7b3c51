"""Readers of the string data sets: Taskar's OCR letters (bundled subset or full copy) and CMUdict."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..exceptions import IOKRDataError
from ..io import iter_lines, read_npz

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
        ``cmudict.dict.gz`` / ``cmudict.dict`` (gzip detected from the content) or a folder holding it (or holding
        ``g2p_cmudict/``); a folder's file must not be a symlink to a file outside the folder.
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
                if not candidate.resolve().is_relative_to(file.resolve()):
                    raise IOKRDataError(f"{os.fspath(candidate)!r} is a symlink to a file outside the folder "
                                        f"{os.fspath(file)!r}; refusing to read it (pass the file itself).")
                file = candidate
                break
    if not file.is_file():
        raise FileNotFoundError(f"CMUdict file not found at {os.fspath(file)!r}.")
    words, phonemes = [], []
    seen = set()
    # Capped line reader: gzip detected from the content, an over-long line or a damaged stream is one error.
    for lineno, raw in iter_lines(file, what="CMUdict file"):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) < 2:
            shown = line if len(line) <= 40 else line[:40] + "..."
            raise IOKRDataError(f"{os.fspath(file)!r} line {lineno}: expected 'word PH1 PH2 ...', got {shown!r}.")
        word = parts[0]
        if "(" in word:  # alternate pronunciation "word(2)": keep the first only
            continue
        if word in seen or (alphabetic_only and not (word.isascii() and word.isalpha() and word.islower())):
            continue
        seen.add(word)
        phones = parts[1:] if stress else [p.rstrip("012") for p in parts[1:]]
        words.append(word)
        phonemes.append(tuple(phones))
    return words, phonemes
