"""Decoy structures for the confidence calibration: non-library structures from a large public structure set.

Users rank their spectra against lists from PubChem, ChemSpider or a lab's database: mostly structures that are not
among the model's training structures (the library), most of them isomers of the query's formula. Calibration lists
made of training structures only are unlike those lists: the structure prior separates little among library
compounds. Here each training structure gets decoys of its own: the isomers of its formula in a decoy table
(at most :data:`MAX_ISOMERS`, drawn at random, seeded), and, to fill its list up to :data:`LIST_SIZE` candidates,
the decoys of other formulas nearest in monoisotopic mass (within :data:`MAX_MASS_DIFFERENCE`). Decoys that are
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
from ._candidates import CandidateStore

__all__ = ["BUNDLED_DECOYS", "DecoyLists", "DecoyTable", "decoy_lists", "decoy_store", "fingerprint_cache_of",
           "read_decoy_table"]

#: The decoy table shipped with the package: MOSES (ZINC, MIT licence) isomers of the MassBank training formulas.
BUNDLED_DECOYS = Path(__file__).resolve().parents[3] / "datasets" / "data" / "metabolites" / "decoys_moses.tsv.gz"
#: Decoy isomers per training formula (a random draw, seeded, when the table holds more).
MAX_ISOMERS = 100
#: Candidates of a calibration list (training isomers and decoy isomers count; nearest-mass decoys fill up to it).
LIST_SIZE = 100
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


def read_decoy_table(path):
    """Read a decoy table: a header row with a ``smiles`` (or ``structure`` / ``inchi``) column and optionally a
    ``formula`` column; tab- or comma-separated, optionally gzipped.

    Without a formula column the formula is computed with RDKit (slow for millions of rows: write it once into the
    file). Rows with an empty structure are refused; structures RDKit rejects are counted in ``n_without_formula``.

    Raises
    ------
    IOKRDataError
        A missing or unreadable file, no structure column, or an empty table.
    """
    path = Path(path)
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
    structures, formulas = [], []
    for line, row in enumerate(reader, 2):
        if not row:
            continue
        if column >= len(row) or not row[column].strip():
            raise IOKRDataError(f"Decoy table {path}, line {line}: no structure in column '{header[column]}'.")
        structures.append(row[column].strip())
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


def decoy_lists(formulas, library_keys, table, store, *, max_isomers=MAX_ISOMERS, list_size=LIST_SIZE,
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
    max_isomers, list_size : int
    max_mass_difference : float
    seed : int

    Returns
    -------
    DecoyLists
    """
    rng = np.random.default_rng(seed)
    n = len(formulas)
    wanted = {f for f in formulas if f}
    hill = {f: _hill(f) for f in set(table.formulas.tolist())}
    rows_of = {}
    for i, f in enumerate(table.formulas.tolist()):
        h = hill[f]
        if h in wanted:
            rows_of.setdefault(h, []).append(i)
    chosen = []
    for f in sorted(rows_of):
        rows = np.asarray(rows_of[f])
        if rows.size > max_isomers:
            rows = np.sort(rng.choice(rows, max_isomers, replace=False))
        chosen.extend(rows.tolist())
    structures = table.structures[np.asarray(chosen, dtype=np.intp)].tolist()
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
        n_isomers[i] = own.size
        room = list_size - own.size - (training_isomers.get(f, 1) if f else 1)
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
              "max_isomers": int(max_isomers), "list_size": int(list_size),
              "max_mass_difference_da": float(max_mass_difference), "seed": int(seed),
              "n_decoys": len(kept), "n_drawn": len(structures), "n_library_compounds_removed": n_library,
              "n_rejected_by_rdkit": n_rejected,
              "n_structures_with_decoy_isomers": int(np.count_nonzero(n_isomers)),
              "n_structures": n}
    return DecoyLists(pool, indices, n_isomers, record)
