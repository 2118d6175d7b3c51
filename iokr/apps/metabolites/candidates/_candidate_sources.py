"""Where ``identify`` takes each query's candidates from: a structure database, or a collection of lists.

Both sources answer the same questions: which candidates fit a query (``select``: by canonical formula, or by
monoisotopic mass within ``[low, high]``), their fingerprints, their canonical formulas (``formulas_of``, for
models with annotated kernels) and their output columns (``records``).

- :class:`DatabaseSource`: an indexed database (``iokr metabolites index``), or one CSV/TSV/SDF indexed into a
  temporary file;
- :class:`ListSource`: a folder or ``.tar.gz`` of per-formula lists (``scoring_list=<FORMULA>_...csv``), each
  list selected by the canonical form of the formula in its name (or of its structures);
- :class:`~._query_lists.QueryListSource`: per-query lists (a folder or archive of ``<query_id>.csv`` files, or
  one table with a ``query_id`` column), each query ranked among its own list (``per_query``).

The user's columns keep their names in the outputs unless a name is taken by a derived or result column
(:func:`~._database.output_names`); ``renamed`` maps each renamed column to its output name.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np

from ....exceptions import IOKRDataError
from ..chemistry._formulas import FormulaError, canonical_formula
from ..chemistry._structures import formula_mass, parent_of
from ._candidate_store import CandidateStore
from ._candidates import _iter_sources, is_per_formula_name, read_candidate_lists
from ._database import CANDIDATE_COLUMNS, StructureDatabase, output_names
from ._query_lists import QueryListSource, query_id_column, tables_of_sources
from ._sharded_database import ShardedStructureDatabase, is_store_folder
from ._structure_tables import read_structure_rows

#: Candidate ids of formula lookups a :class:`DatabaseSource` keeps for queries that repeat a formula (replicate
#: spectra, isomers): at most this many ids in all (8 MiB), the least recently used formula dropped first. The 514
#: ranked queries of the 1,000 MassBank spectra of ``bench_store_scale`` name 13 formulas; against 1.9M structures
#: each lookup lists 250 ids on average, read through the index and checked against the table every time.
FORMULA_CACHE_IDS = 1 << 20


class DatabaseSource:
    """Candidates from a :class:`StructureDatabase`."""

    def __init__(self, db, name=None, reserved=()):
        self.db = db
        self.name = db.path if name is None else name
        self.names = output_names(db.user_columns, CANDIDATE_COLUMNS, reserved)
        self.columns = list(CANDIDATE_COLUMNS) + [self.names[c] for c in db.user_columns]
        self.renamed = {c: n for c, n in self.names.items() if c != n}
        self._by_formula, self._cached_ids = OrderedDict(), 0

    def select(self, formula, low, high):
        """Ids of the candidates of canonical ``formula`` (repeated formulas answered from the last lookups), or
        of the monoisotopic mass window ``[low, high]``; a read-only array."""
        if not formula:
            return self.db.by_mass(low, high)
        ids = self._by_formula.pop(formula, None)
        if ids is None:
            ids = self.db.by_formula(formula)
            ids.flags.writeable = False  # shared by the queries of the formula
            self._cached_ids += ids.size
        self._by_formula[formula] = ids
        while self._cached_ids > FORMULA_CACHE_IDS and len(self._by_formula) > 1:
            self._cached_ids -= self._by_formula.popitem(last=False)[1].size
        return ids

    def fingerprints(self, ids, fingerprinter, compact=False):
        return self.db.fingerprints(ids, fingerprinter, compact=compact)

    def formulas_of(self, ids):
        return self.db.formulas(ids)

    def records(self, ids):
        return self.db.records(ids, self.names)

    def describe(self):
        return f"structure database {self.name} ({self.db.n_structures} structures)"


class ListSource:
    """Candidates from per-formula lists (read by :func:`read_candidate_lists`, fingerprints cached in ``store``)."""

    columns = list(CANDIDATE_COLUMNS) + ["structure", "list"]
    renamed = {}

    def __init__(self, lists, store):
        self.store = store
        self.texts, self.list_of, formulas = [], [], []
        self.by_formula = {}
        for li, lst in enumerate(lists):
            try:
                formula = canonical_formula(lst.formula) if lst.formula else None
            except FormulaError:
                formula = None
            formulas.append(formula)
            start = len(self.texts)
            self.texts.extend(lst.structures)
            self.list_of.extend([li] * len(lst.structures))
            if formula:
                self.by_formula.setdefault(formula, []).extend(range(start, len(self.texts)))
        self.names = [lst.name for lst in lists]
        self.formulas = formulas
        self.masses = {f: formula_mass(f) for f in self.by_formula}  # neutral-equivalent (see ._structures)

    def select(self, formula, low, high):
        if formula:
            return np.asarray(self.by_formula.get(formula, []), dtype=np.int64)
        rows = [r for f, m in self.masses.items() if low <= m <= high for r in self.by_formula[f]]
        return np.asarray(sorted(rows), dtype=np.int64)

    def fingerprints(self, ids, fingerprinter, compact=False):
        return self.store.fingerprints([self.texts[i] for i in ids], compact=compact)

    def formulas_of(self, ids):
        return [self.formulas[self.list_of[i]] or "" for i in ids]

    def records(self, ids):
        out = []
        for i in ids:
            text, li = self.texts[i], self.list_of[i]
            parent = parent_of(text)
            formula = self.formulas[li] or ""
            out.append({"identifier": "", "name": "", "inchikey": parent.key if parent is not None else "",
                        "smiles": parent.smiles if parent is not None else "", "formula": formula,
                        "monoisotopic_mass": f"{self.masses[formula]:.5f}" if formula in self.masses else "",
                        "structure": text, "list": self.names[li]})
        return out

    def describe(self):
        return f"{len(self.names)} candidate lists ({len(self.texts)} structures)"


def open_source(path, fingerprinter, store_path=None, progress=None, reserved=()):
    """The candidate source for ``identify --candidates PATH``.

    - ``.sqlite`` / ``.db``: an indexed database (opened read-only); a folder of shards written by ``index``
      (:mod:`._sharded_database`);
    - a folder or ``.tar(.gz)``: per-formula lists when its files follow the shared naming
      ``scoring_list=<FORMULA>_spec=..._id=...``; otherwise per-query lists, one file per query named by its
      query id (``<query_id>.csv``, ``.tsv``, ``.psv``, ``.txt``, ``.sdf``). A mix of both namings is refused;
    - any other file: per-query lists when it has a query-id column (``query_id``); otherwise one CSV/TSV/PSV/SDF
      indexed into SQLite's private temporary file (on disk beyond a small page cache, deleted on close; each query
      still gets only the structures that fit it).

    ``progress``: the jobs' factory ``progress(total, label)``, used while a table is indexed. ``reserved``: output
    column names the user's columns must not take (they are prefixed, see :func:`~._database.output_names`).
    """
    path = Path(path)
    if not path.exists():
        raise IOKRDataError(f"Candidates {path} do not exist.")
    name = path.name.lower()
    if name.endswith((".sqlite", ".db", ".sqlite3")):
        return DatabaseSource(StructureDatabase(path), reserved=reserved)
    if is_store_folder(path):
        return DatabaseSource(ShardedStructureDatabase(path), reserved=reserved)
    if path.is_dir() or name.endswith((".tar.gz", ".tgz", ".tar")):
        store = CandidateStore(store_path if store_path else "", fingerprinter)
        sources = list(_iter_sources(path))
        per_formula = [n for n, _ in sources if is_per_formula_name(n)]
        if per_formula and len(per_formula) == len(sources):
            return ListSource(read_candidate_lists(path, store, sources=sources), store)
        if per_formula:
            other = next(n for n, _ in sources if not is_per_formula_name(n))
            raise IOKRDataError(f"Candidates {path} mix per-formula lists ({per_formula[0]}) and per-query lists "
                                f"({other}); keep one kind per folder or archive.")
        return QueryListSource(tables_of_sources(sources, path), store, path, reserved)
    sdf = name.removesuffix(".gz").endswith((".sdf", ".mol"))  # an SDF is a structure table, never per query
    columns, rows, structure_columns = ([], None, None) if sdf else read_structure_rows(path, what="Candidates")
    if query_id_column(columns) is not None:
        store = CandidateStore(store_path if store_path else "", fingerprinter)
        return QueryListSource([(None, path.name, columns, rows, structure_columns)], store, path, reserved)
    if progress is None:
        db, _ = StructureDatabase.build(path, "", fingerprinter)
    else:
        with progress(None, f"indexing {path.name} (rows)") as tick:
            db, _ = StructureDatabase.build(path, "", fingerprinter, progress=tick)
    return DatabaseSource(db, name=f"{path} (indexed for this run; 'iokr metabolites index' builds it once)",
                          reserved=reserved)
