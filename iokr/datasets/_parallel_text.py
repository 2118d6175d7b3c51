"""Aligned English/Spanish documents (Bible chapters, public domain) for cross-lingual retrieval."""

from __future__ import annotations

from pathlib import Path

from ..exceptions import IOKRDataError
from ..io import iter_lines, loads_json

BUNDLED_PARALLEL_TEXT = Path(__file__).parent / "data" / "parallel_text" / "bible_chapters_subset.jsonl.gz"
_SHARED_NAME = "bible_kjv_en__rv1909_es.chapters.jsonl.gz"


def _file_in_folder(folder, name):
    """``folder / name``, refusing a symlink that leads outside ``folder`` (its content is never read or echoed)."""
    path = folder / name
    try:
        target = path.resolve(strict=True)
        inside = target.is_relative_to(folder.resolve(strict=True))
    except (OSError, RuntimeError):  # missing, or a symlink loop
        raise IOKRDataError(f"No parallel-text file {name} in folder {folder}.") from None
    if not inside:
        raise IOKRDataError(f"{path} is a symlink to a file outside the folder {folder}; refusing to read it "
                            "(pass the file itself to read it).")
    return path


def load_parallel_text(path=None):
    """Load aligned documents.

    Parameters
    ----------
    path : str or Path, optional
        A JSONL file (plain or gzip-compressed, detected from the content) with one ``{"id", "en", "es"}`` record
        per line, or a folder containing ``bible_kjv_en__rv1909_es.chapters.jsonl.gz`` (which must not be a
        symlink to a file outside the folder). Defaults to the bundled subset (397 chapters).

    Returns
    -------
    ids : list of str
        Document identifiers (e.g. ``"Gen.1"``).
    english, spanish : list of str
        Aligned document texts (verses joined by spaces).

    Raises
    ------
    FileNotFoundError
        ``path`` is neither a file nor a folder.
    IOKRDataError
        A record that is not ``{"id", "en": [str, ...], "es": [str, ...]}``, invalid or too deeply nested JSON, a
        line longer than the ``max_line_bytes`` cap, a gzip file beyond the ``max_compression_ratio`` cap, text
        that is not UTF-8 or a damaged gzip stream (see :func:`iokr.io.iter_lines`); the message names the line.
    """
    path = Path(path) if path is not None else BUNDLED_PARALLEL_TEXT
    if path.is_dir():
        path = _file_in_folder(path, _SHARED_NAME)
    if not path.is_file():
        raise FileNotFoundError(f"No parallel-text file at {path}.")
    ids, english, spanish = [], [], []
    for number, line in iter_lines(path, what="Parallel-text file"):
        if not line.strip():
            continue
        record = loads_json(line, what=f"Parallel-text file {path}", where=f"line {number}")
        try:
            en, es = record["en"], record["es"]
            if not all(isinstance(v, list) and all(isinstance(t, str) for t in v) for v in (en, es)):
                raise TypeError("'en' and 'es' must be lists of verse strings")
            if not isinstance(record["id"], (str, int)) or isinstance(record["id"], bool):
                raise TypeError(f"'id' must be a string or an int, got {type(record['id']).__name__}")
        except KeyError as exc:
            raise IOKRDataError(f"{path}: line {number} is not a valid chapter record (no field {exc}).") from None
        except TypeError as exc:  # also: a record that is not an object
            message = str(exc) if "must be" in str(exc) else f"expected a JSON object, got {type(record).__name__}"
            raise IOKRDataError(f"{path}: line {number} is not a valid chapter record ({message}).") from None
        ids.append(str(record["id"]))
        english.append(" ".join(en))
        spanish.append(" ".join(es))
    return ids, english, spanish
