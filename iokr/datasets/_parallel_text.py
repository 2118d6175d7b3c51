"""Aligned English/Spanish documents (Bible chapters, public domain) for cross-lingual retrieval."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

from ..exceptions import IOKRDataError

BUNDLED_PARALLEL_TEXT = Path(__file__).parent / "data" / "parallel_text" / "bible_chapters_subset.jsonl.gz"
_SHARED_NAME = "bible_kjv_en__rv1909_es.chapters.jsonl.gz"


def load_parallel_text(path=None):
    """Load aligned documents.

    Parameters
    ----------
    path : str or Path, optional
        A ``.jsonl.gz`` file, or a folder containing ``bible_kjv_en__rv1909_es.chapters.jsonl.gz``. Defaults to the
        bundled subset (397 chapters).

    Returns
    -------
    ids : list of str
        Document identifiers (e.g. ``"Gen.1"``).
    english, spanish : list of str
        Aligned document texts (verses joined by spaces).
    """
    path = Path(path) if path is not None else BUNDLED_PARALLEL_TEXT
    if path.is_dir():
        path = path / _SHARED_NAME
    if not path.is_file():
        raise FileNotFoundError(f"No parallel-text file at {path}.")
    ids, english, spanish = [], [], []
    number = 0
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    en, es = record["en"], record["es"]
                    if not all(isinstance(v, list) and all(isinstance(t, str) for t in v) for v in (en, es)):
                        raise TypeError("'en' and 'es' must be lists of verse strings")
                    ids.append(str(record["id"]))
                    english.append(" ".join(en))
                    spanish.append(" ".join(es))
                except (ValueError, KeyError, TypeError) as exc:
                    raise IOKRDataError(f"{path}: line {number} is not a valid chapter record ({exc}).") from exc
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:  # not gzip, truncated, damaged, not UTF-8
        raise IOKRDataError(f"{path}: unreadable after line {number} ({type(exc).__name__}: {exc}); expected a "
                            "gzip-compressed JSONL file.") from None
    return ids, english, spanish
