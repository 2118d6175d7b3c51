"""Candidate structures: readers for candidate lists (their formula-keyed store with cached fingerprints is
:mod:`._candidate_store`).

Shared list format: one CSV per query named ``scoring_list=<FORMULA>_spec=<ID>_id=<InChIKey>.csv`` with columns
``id1`` (candidate InChI) and optionally ``score`` (the published model's score), bundled as a ``.tar.gz`` or a
folder. Plain CSV/TSV files (a ``smiles``, ``inchi`` or ``id1`` column) and SDF files are read too.

Candidates are identified by the first InChIKey block (the 2D skeleton) of their parent structure (salts and
mixtures reduced, see :mod:`._structures`): stereoisomers of one skeleton are merged (keeping the best published
score). Structures RDKit rejects are counted per list, apart from rows without a structure ('N/A', blank).
"""

from __future__ import annotations

import csv
import io
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ....exceptions import IOKRDataError
from ....io import check_expansion
from ..chemistry._fingerprint_cache import (
    export_fingerprint_cache,  # noqa: F401 - its public home since the cache existed
)
from ..chemistry._fingerprints import _rdkit
from ._candidate_store import CandidateStore
from ._structure_tables import SDF_REJECTED, clean_value

_NAME = re.compile(r"scoring_list=(?P<formula>[^_]+)_spec=(?P<spec>.+?)_id=(?P<key>[A-Z]{14}-[A-Z]{10}-[A-Z])")
_STRUCTURE_COLUMNS = ("id1", "inchi", "smiles", "structure")


@dataclass
class CandidateList:
    """One query's candidates after parsing and merging duplicates.

    Parameters
    ----------
    name : str
        File name of the list.
    formula : str or None
        Molecular formula from the list's name, else of its first candidate; None for an empty unnamed list.
    true_key : str or None
        InChIKey of the true structure when the list name carries it.
    structures : list of str
        Input text (InChI/SMILES) of each unique candidate.
    keys : list of str
        First InChIKey block of each unique candidate.
    scores : ndarray of shape (n_unique,) or None
        Published scores (maximum over merged duplicates).
    n_rows, n_unparsable, n_duplicates : int
        Rows read; rows whose structure RDKit rejects; rows merged into an earlier candidate of the same key.
    n_missing : int
        Rows without a structure ('N/A', 'nan', blank), not counted as unparsable.
    """

    name: str
    formula: str | None
    true_key: str | None
    structures: list = field(default_factory=list)
    keys: list = field(default_factory=list)
    scores: np.ndarray | None = None
    n_rows: int = 0
    n_unparsable: int = 0
    n_duplicates: int = 0
    n_missing: int = 0

    @property
    def true_index(self):
        """Position of the true structure (first-block match), or ``None`` when the list lacks it."""
        if not self.true_key:
            return None
        key = self.true_key[:14]
        try:
            return self.keys.index(key)
        except ValueError:
            return None

    def __len__(self):
        return len(self.keys)


def _rows_from_text(text, delimiter):
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
    if reader.fieldnames is None:
        return [], None, None
    lower = {c.lower().strip(): c for c in reader.fieldnames}
    column = next((lower[c] for c in _STRUCTURE_COLUMNS if c in lower), None)
    if column is None:
        raise IOKRDataError(f"no structure column: expected one of {_STRUCTURE_COLUMNS}, got {reader.fieldnames}")
    score_col = lower.get("score")
    structures, scores = [], []
    for row in reader:
        structures.append(clean_value(row.get(column)) or None)
        if score_col is not None:
            try:
                scores.append(float(row.get(score_col)))
            except (TypeError, ValueError):
                scores.append(np.nan)
    return structures, (np.asarray(scores) if score_col is not None else None), column


def _sdf_structures(data):
    Chem = _rdkit()
    supplier = Chem.ForwardSDMolSupplier(io.BytesIO(data), sanitize=True)
    return [mol for mol in supplier]  # None entries are structures RDKit rejects


def _name_fields(name):
    m = _NAME.search(name)
    if m is None:
        return None, None
    return m.group("formula"), m.group("key")


#: Largest candidate list file read (bytes, after decompression): a list is a few thousand structures.
MAX_LIST_BYTES = 64 << 20
_LIST_SUFFIXES = (".csv", ".tsv", ".psv", ".sdf", ".txt")


def _read_capped(handle, name, where):
    """The bytes of one list, read in blocks; IOKRDataError naming it once it exceeds :data:`MAX_LIST_BYTES`."""
    blocks, size = [], 0
    while True:
        block = handle.read(1 << 20)
        if not block:
            return b"".join(blocks)
        size += len(block)
        if size > MAX_LIST_BYTES:
            raise IOKRDataError(f"Candidate list {name} in {where} is larger than {MAX_LIST_BYTES >> 20} MiB (the "
                                "limit iokr.apps.metabolites.candidates._candidates.MAX_LIST_BYTES); it is not a candidate list.")
        blocks.append(block)


def _folder_files(path):
    """Regular list files inside ``path`` (symbolic links, FIFOs and devices are skipped: reading a FIFO blocks,
    and a link may lead outside the folder)."""
    root = path.resolve()
    files = []
    for p in sorted(path.rglob("*")):
        if p.suffix.lower() not in _LIST_SUFFIXES or p.is_symlink() or not p.is_file():
            continue
        if root not in p.resolve().parents:
            continue
        files.append(p)
    return files


def is_per_formula_name(name):
    """Whether a list file follows the shared per-formula naming ``scoring_list=<FORMULA>_spec=..._id=...``."""
    return _NAME.search(name) is not None


def _iter_sources(path):
    """Yield ``(name, bytes)`` of each list file (.csv, .tsv, .psv, .txt, .sdf) in a tar(.gz), a folder or a single
    file."""
    path = Path(path)
    if not path.exists():
        raise IOKRDataError(f"Candidate path {path} does not exist.")
    if path.is_dir():
        files = _folder_files(path)
        if not files:
            raise IOKRDataError(f"Candidate folder {path} holds no .csv/.tsv/.sdf file.")
        for p in files:
            with open(p, "rb") as handle:
                yield p.name, _read_capped(handle, p.name, path)
    elif path.name.endswith((".tar.gz", ".tgz", ".tar")):
        try:
            with tarfile.open(path) as tar:
                members = sorted((m for m in tar.getmembers() if (m.isfile() or m.islnk())
                                  and m.name.lower().endswith(_LIST_SUFFIXES)), key=lambda m: m.name)
                if not members:
                    raise IOKRDataError(f"Candidate archive {path} holds no .csv/.tsv/.sdf file.")
                # An archive bomb is refused from the member sizes, before any list is decompressed.
                check_expansion(sum(m.size for m in members), path.stat().st_size,
                                where=f"Candidate archive {path}: its lists")
                for m in members:
                    if m.size > MAX_LIST_BYTES:
                        raise IOKRDataError(f"Candidate list {m.name} in {path} is {m.size >> 20} MiB, larger than "
                                            f"{MAX_LIST_BYTES >> 20} MiB (iokr.apps.metabolites.candidates._candidates."
                                            "MAX_LIST_BYTES); it is not a candidate list.")
                    handle = tar.extractfile(m)  # hard links resolve to their target's data
                    if handle is None:
                        continue
                    yield Path(m.name).name, _read_capped(handle, m.name, path)
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise IOKRDataError(f"Candidate archive {path} is truncated or corrupted ({exc}).") from None
    elif path.name.lower().endswith((".zip", ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".7z", ".rar", ".xz", ".bz2")):
        raise IOKRDataError(f"Candidate path {path}: unsupported archive format; expected a folder, a .tar(.gz) "
                            "or one .csv/.tsv/.sdf file.")
    elif not path.is_file():
        raise IOKRDataError(f"Candidate path {path} is not a regular file or folder.")
    else:
        with open(path, "rb") as handle:
            yield path.name, _read_capped(handle, path.name, path.parent)


def read_candidate_lists(path, store=None, progress=None, *, sources=None):
    """Read candidate lists and merge duplicate structures.

    Parameters
    ----------
    path : str or Path
        A ``.tar.gz``, a folder, or one CSV/TSV/SDF file.
    store : CandidateStore, optional
        Where parsed structures and fingerprints are cached (a temporary store when omitted).
    progress : callable, optional
        Called after each list.
    sources : iterable of (str, bytes), optional
        The lists' file names and contents, already read from ``path`` (by :func:`_iter_sources`).

    Returns
    -------
    lists : list of CandidateList
        One per list file, in the order read (files of a folder or an archive sorted by name).
    """
    store = CandidateStore() if store is None else store
    out = []
    for name, data in (_iter_sources(path) if sources is None else sources):
        formula, true_key = _name_fields(name)
        lower = name.lower()
        scores = None
        try:
            if lower.endswith(".sdf"):
                mols = _sdf_structures(data)
                Chem = _rdkit()
                structures = [Chem.MolToInchi(m) if m is not None else SDF_REJECTED for m in mols]
            else:
                text = data.decode("utf-8-sig")  # a byte-order mark must not hide the first column's name
                header = text.split("\n", 1)[0]
                delimiter = ("\t" if lower.endswith(".tsv") or "\t" in header else
                             "|" if lower.endswith(".psv") or "|" in header else ",")
                structures, scores, _ = _rows_from_text(text, delimiter)
        except (UnicodeDecodeError, csv.Error, IOKRDataError) as exc:
            raise IOKRDataError(f"Candidate list {name}: {exc}") from None
        keys, ok = store.keys_for(structures)
        if any(good and not key for key, good in zip(keys, ok, strict=True)):
            raise IOKRDataError(f"Candidate store {store.label} holds parsed structures without an InChIKey; the "
                                "file is damaged: delete it to rebuild the cache.")
        lst = CandidateList(name=name, formula=formula, true_key=true_key, n_rows=len(structures))
        best, lst_scores = {}, []
        for i, (s, k, good) in enumerate(zip(structures, keys, ok, strict=True)):
            if not good:
                if s is None:
                    lst.n_missing += 1
                else:
                    lst.n_unparsable += 1
                continue
            if k in best:
                lst.n_duplicates += 1
                j = best[k]
                if scores is not None and scores[i] > lst_scores[j]:
                    lst_scores[j] = scores[i]
                continue
            best[k] = len(lst.keys)
            lst.keys.append(k)
            lst.structures.append(s)
            if scores is not None:
                lst_scores.append(scores[i])
        if scores is not None:
            lst.scores = np.asarray(lst_scores if best else [], dtype=np.float64)
        if lst.formula is None and lst.keys:
            lst.formula = store.formula_of(lst.structures[0])
        out.append(lst)
        if progress is not None:
            progress()
    return out
