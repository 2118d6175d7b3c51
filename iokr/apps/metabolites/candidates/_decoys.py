"""Decoy structures for the confidence calibration: non-library structures from a large public structure set.

Users rank their spectra against lists from PubChem, ChemSpider or a lab's database: mostly structures that are not
among the model's training structures (the library), most of them isomers of the query's formula, hundreds to
thousands of them. Calibration lists made of training structures only are unlike those lists: the structure prior
separates little among library compounds. Here each training structure gets decoys of its own, up to a list size
drawn for it (seeded) from the size distribution of real PubChem lists (:func:`sample_list_sizes`, the default
``list_size="pubchem"``; an int gives every list that size): the isomers of its formula in a decoy table (a random
draw, seeded, when there are more than fit), then the decoys of other formulas nearest in monoisotopic mass (within
:data:`MAX_MASS_DIFFERENCE`; a list is shorter than its drawn size when the table has no more decoys in that
window, the record gives the sizes reached). Decoys that are
library compounds (first InChIKey block of a training structure) are removed, so is every decoy RDKit rejects.

The decoy table is a text file of structures (a ``smiles`` column, optionally a ``formula`` column; the bundled
:data:`BUNDLED_DECOYS` is a subset of MOSES, see the README beside it). :mod:`._calibration_examples` ranks each
held-out training structure among its training isomers and its decoys.
"""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ....exceptions import IOKRDataError
from ..chemistry._formulas import FormulaError, canonical_formula
from ..chemistry._structures import formula_mass, parent_of
from ._candidate_store import CandidateStore

__all__ = ["BUNDLED_DECOYS", "DecoyLists", "DecoyTable", "decoy_lists", "decoy_store", "fingerprint_cache_of",
           "read_decoy_table", "sample_list_sizes"]

#: The decoy table shipped with the package: MOSES (ZINC, MIT licence) isomers of the MassBank training formulas.
BUNDLED_DECOYS = Path(__file__).resolve().parents[3] / "datasets" / "data" / "metabolites" / "decoys_moses.tsv.gz"
#: Decoy isomers per training formula with ``list_size`` an int (a random draw, seeded, when the table holds more).
MAX_ISOMERS = 100
#: Candidates of a calibration list with ``list_size`` an int (training and decoy isomers count; nearest-mass decoys
#: fill up to it).
LIST_SIZE = 100
#: Log-normal size distribution of users' candidate lists: mean and standard deviation of log(candidates) over the
#: 60 PubChem lists of the shared data (sizes 2 to 7,705, median 627, geometric mean 412; their sizes only, no
#: structure, score or label read; disclosed in reports/metabolites.md, issue #30).
PUBCHEM_LOG_SIZE_MEAN = 6.02
PUBCHEM_LOG_SIZE_SD = 1.78
#: Bounds of a drawn list size (the largest of the 60 lists holds 7,705 candidates).
MIN_DRAWN_SIZE, MAX_DRAWN_SIZE = 2, 8000
#: Largest mass difference (Da) of a nearest-mass decoy from the training structure's formula.
MAX_MASS_DIFFERENCE = 10.0


def fingerprint_cache_of(table_path):
    """Where a decoy table's fingerprint cache lives: ``decoys.tsv.gz`` -> ``decoys.fingerprints.npz`` beside it
    (written by :func:`~._fingerprint_cache.export_fingerprint_cache`; the bundled table ships one)."""
    path = Path(table_path)
    name = path.name
    for suffix in (".gz", ".tsv", ".csv", ".txt", ".smi"):
        name = name.removesuffix(suffix)
    return path.with_name(name + ".fingerprints.npz")


def decoy_store(table_path, store, fingerprinter):
    """The store that fingerprints a decoy table's structures: a temporary one reading the table's fingerprint cache
    (:func:`fingerprint_cache_of`) when it exists and holds this fingerprint, else ``store`` (a temporary one when
    None). The cache spares minutes of RDKit work on every training run with the bundled table."""

    cache = fingerprint_cache_of(table_path)
    if cache.is_file():
        cached = CandidateStore("", fingerprinter)
        if cached.attach_cache(cache):
            return cached
    return CandidateStore("", fingerprinter) if store is None else store


@dataclass(frozen=True)
class DecoyTable:
    """Decoy structures and their molecular formulas (Hill form).

    Attributes
    ----------
    structures : ndarray of str, shape (n,)
        SMILES or InChI.
    formulas : ndarray of str, shape (n,)
    source : str
        Where the table was read from.
    n_without_formula : int
        Rows whose structure RDKit rejected when the formula had to be computed (not in the table).
    """

    structures: np.ndarray
    formulas: np.ndarray
    source: str
    n_without_formula: int = 0


def sample_list_sizes(n, seed=0):
    """List sizes drawn from the log-normal size distribution of PubChem lists (:data:`PUBCHEM_LOG_SIZE_MEAN`,
    :data:`PUBCHEM_LOG_SIZE_SD`), rounded, clipped to ``[MIN_DRAWN_SIZE, MAX_DRAWN_SIZE]``.

    Returns
    -------
    sizes : ndarray of int, shape (n,)
    """
    draws = np.exp(np.random.default_rng(seed).normal(PUBCHEM_LOG_SIZE_MEAN, PUBCHEM_LOG_SIZE_SD, n))
    return np.clip(np.rint(draws), MIN_DRAWN_SIZE, MAX_DRAWN_SIZE).astype(np.int64)


def read_decoy_table(path):
    """Read a decoy table: a header row with a ``smiles`` (or ``structure`` / ``inchi``) column and optionally a
    ``formula`` column; tab- or comma-separated, optionally gzipped.

    Without a formula column the formula is computed with RDKit (slow for millions of rows: write it once into the
    file). Rows with an empty structure are refused; structures RDKit rejects are counted in ``n_without_formula``.

    Raises
    ------
    IOKRDataError
        A missing or unreadable file, a folder, no structure column, an empty table, or one RDKit rejects
        entirely.
    """
    path = Path(path)
    if path.is_dir():
        raise IOKRDataError(f"Decoy table {path} is a folder (expected a .tsv/.csv file of structures).")
    if not path.is_file():
        raise IOKRDataError(f"Decoy table {path} does not exist (expected a .tsv/.csv file of structures).")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise IOKRDataError(f"Decoy table {path} is not readable text ({exc}).") from None
    first = text.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(text), delimiter="\t" if "\t" in first else ",")
    header = [h.strip().lower() for h in next(reader, [])]
    column = next((header.index(c) for c in ("smiles", "structure", "inchi") if c in header), None)
    if column is None:
        raise IOKRDataError(f"Decoy table {path} has no 'smiles', 'structure' or 'inchi' column; got header "
                            f"{header}.")
    formula_column = header.index("formula") if "formula" in header else None
    structures, formulas, lines = [], [], []
    for line, row in enumerate(reader, 2):
        if not row:
            continue
        if column >= len(row) or not row[column].strip():
            raise IOKRDataError(f"Decoy table {path}, line {line}: no structure in column '{header[column]}'.")
        structures.append(row[column].strip())
        lines.append(line)
        formulas.append(row[formula_column].strip() if formula_column is not None and formula_column < len(row)
                        else "")
    if not structures:
        raise IOKRDataError(f"Decoy table {path} holds no structure.")
    n_missing = 0
    if formula_column is None or not all(formulas):

        for i, (s, f) in enumerate(zip(structures, formulas, strict=True)):
            if not f:
                parent = parent_of(s)
                formulas[i] = parent.formula if parent is not None else ""
        n_missing = sum(not f for f in formulas)
    keep = np.array([bool(f) for f in formulas])
    if not keep.any():
        raise IOKRDataError(f"Decoy table {path}: none of its {len(structures)} structures could be parsed (the "
                            f"first, line {lines[0]}: {structures[0][:80]!r}); expected SMILES or InChI.")
    # the bundled table by its name in the package, not this machine's path (the source goes into model files)
    source = f"bundled {BUNDLED_DECOYS.name} (MOSES, MIT)" if path.resolve() == BUNDLED_DECOYS else str(path)
    return DecoyTable(np.array(structures, dtype=object)[keep], np.array(formulas, dtype=object)[keep], source,
                      n_missing)


def _hill(formula):
    try:
        return canonical_formula(formula)
    except FormulaError:
        return None


def _mass(formula):
    try:
        return float(formula_mass(formula))
    except FormulaError:
        return float("nan")


@dataclass
class DecoyLists:
    """Decoys of each training structure: a pool of fingerprints and one index list per structure.

    Attributes
    ----------
    pool : CountFeatures, PackedBinaryFeatures or ndarray of shape (n_decoys, n_features)
    indices : list of ndarray of int
        Per training structure, its decoys (rows of ``pool``): decoy isomers first, then nearest-mass decoys.
    n_isomers : ndarray of int, shape (n_structures,)
        Decoy isomers of each structure's formula in its list.
    record : dict
        How the decoys were formed (source, parameters, counts), for the model file and the report.
    """

    pool: object
    indices: list
    n_isomers: np.ndarray
    record: dict = field(default_factory=dict)


def decoy_lists(formulas, library_keys, table, store, *, max_isomers=MAX_ISOMERS, list_size="pubchem",
                max_mass_difference=MAX_MASS_DIFFERENCE, seed=0):
    """Decoys of every training structure (see the module docstring).

    Parameters
    ----------
    formulas : list of str or None, length n
        Molecular formula of each training structure (as the store writes them).
    library_keys : iterable of str
        First InChIKey blocks of the library (the training structures): decoys with one of them are removed.
    table : DecoyTable
    store : CandidateStore
        Parses and fingerprints the decoys (the training set's fingerprint).
    max_isomers : int
        Decoy isomers drawn per formula into the pool with an int ``list_size`` ("pubchem": all of them).
    list_size : "pubchem" or int
        Candidates of each list: drawn per structure by :func:`sample_list_sizes` (seed ``seed``), or this many.
    max_mass_difference : float
    seed : int

    Returns
    -------
    DecoyLists
    """
    rng = np.random.default_rng(seed)
    n = len(formulas)
    sized = isinstance(list_size, str)
    if sized and list_size != "pubchem":
        raise ValueError(f"list_size must be 'pubchem' or an int; got {list_size!r}")
    targets = sample_list_sizes(n, seed) if sized else np.full(n, int(list_size), dtype=np.int64)
    if sized:
        max_isomers = None
    wanted = {f for f in formulas if f}
    structures = table.structures[_pool_rows(table, wanted, max_isomers, rng)].tolist()
    keys, ok = store.keys_for(structures)
    parsed = store.formulas_for(structures)
    library = {k[:14] for k in library_keys if k}
    seen, keep = set(), []
    n_library = n_rejected = 0
    for j, (key, good) in enumerate(zip(keys, ok, strict=True)):
        if not good or not parsed[j]:
            n_rejected += 1
        elif key in library:
            n_library += 1
        elif key not in seen:
            seen.add(key)
            keep.append(j)
    kept = [structures[j] for j in keep]
    decoy_formulas = np.array([parsed[j] for j in keep], dtype=object)
    mass_of = {f: _mass(f) for f in set(decoy_formulas.tolist()) | wanted}
    decoy_mass = np.array([mass_of[f] for f in decoy_formulas.tolist()], dtype=np.float64)
    by_mass = np.argsort(decoy_mass, kind="stable")
    sorted_mass = decoy_mass[by_mass]
    members = {}
    for j, f in enumerate(decoy_formulas.tolist()):
        members.setdefault(f, []).append(j)
    training_isomers = {}
    for f in formulas:
        if f:
            training_isomers[f] = training_isomers.get(f, 0) + 1
    indices, n_isomers = [], np.zeros(n, dtype=np.int64)
    for i, f in enumerate(formulas):
        own = np.asarray(members.get(f, []) if f else [], dtype=np.intp)
        room = int(targets[i]) - (training_isomers.get(f, 1) if f else 1)
        if sized and own.size > max(room, 0):  # more isomers than the drawn size holds: a seeded draw
            own = np.sort(rng.choice(own, max(room, 0), replace=False))
        n_isomers[i] = own.size
        room -= own.size
        fill = np.zeros(0, dtype=np.intp)
        m = mass_of.get(f, np.nan) if f else np.nan
        if room > 0 and np.isfinite(m) and sorted_mass.size:
            lo = np.searchsorted(sorted_mass, m - max_mass_difference, side="left")
            hi = np.searchsorted(sorted_mass, m + max_mass_difference, side="right")
            near = by_mass[lo:hi]
            near = near[decoy_formulas[near] != f]
            near = near[np.argsort(np.abs(decoy_mass[near] - m), kind="stable")[:room]]
            fill = np.sort(near)
        indices.append(np.concatenate([own, fill]))
    pool = store.fingerprints(kept, compact=True)
    record = {"source": table.source, "n_table_structures": int(len(table.structures)),
              "max_isomers": None if max_isomers is None else int(max_isomers),
              "list_size": (f"drawn per structure: round(exp(N({PUBCHEM_LOG_SIZE_MEAN}, {PUBCHEM_LOG_SIZE_SD}^2))) "
                            f"clipped to [{MIN_DRAWN_SIZE}, {MAX_DRAWN_SIZE}], the log-normal fit of the sizes of the "
                            "60 shared PubChem lists") if sized else int(list_size),
              "max_mass_difference_da": float(max_mass_difference), "seed": int(seed),
              "n_decoys": len(kept), "n_drawn": len(structures), "n_library_compounds_removed": n_library,
              "n_rejected_by_rdkit": n_rejected, "n_table_rows_unparsable": int(table.n_without_formula),
              "n_structures_with_decoy_isomers": int(np.count_nonzero(n_isomers)),
              "n_structures": n, "list_sizes_reached": _quantiles([own_formula + idx.size for own_formula, idx in
                                                                   zip(_training_counts(formulas, training_isomers),
                                                                       indices, strict=True) if idx.size])}
    return DecoyLists(pool, indices, n_isomers, record)


def _training_counts(formulas, training_isomers):
    """Training structures of each structure's formula (itself included; 1 without a formula)."""
    return [training_isomers.get(f, 1) if f else 1 for f in formulas]


def _quantiles(sizes):
    """Median, mean and the 10/90 % quantiles of the sizes of the lists that have decoys (for the record)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    if sizes.size == 0:
        return {}
    return {"median": float(np.median(sizes)), "mean": float(sizes.mean()),
            "q10": float(np.quantile(sizes, 0.1)), "q90": float(np.quantile(sizes, 0.9))}


def _pool_rows(table, wanted, max_isomers, rng):
    """Rows of the decoy table whose formula (Hill form) is one of ``wanted``: all of them, or at most
    ``max_isomers`` per formula (a seeded draw)."""
    hill = {f: _hill(f) for f in set(table.formulas.tolist())}
    rows_of = {}
    for i, f in enumerate(table.formulas.tolist()):
        h = hill[f]
        if h in wanted:
            rows_of.setdefault(h, []).append(i)
    chosen = []
    for f in sorted(rows_of):
        rows = np.asarray(rows_of[f])
        if max_isomers is not None and rows.size > max_isomers:
            rows = np.sort(rng.choice(rows, max_isomers, replace=False))
        chosen.extend(rows.tolist())
    return np.asarray(chosen, dtype=np.intp)
