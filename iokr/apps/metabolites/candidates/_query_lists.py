"""Per-query candidate lists, as MetFrag and challenge users have them: each query ranked among its own list.

Two layouts (see :func:`~._candidate_sources.open_source` for how they are told apart from the other sources):

- a folder or ``.tar(.gz)`` of one table per query, named by the query id: ``<query_id>.csv`` / ``.tsv`` /
  ``.psv`` / ``.txt`` / ``.sdf`` (the query id is the file name without its extension);
- one table with a query-id column (named ``query_id``; case, spaces and underscores ignored: ``Query ID``,
  ``queryId``), its rows grouped by that column.

A query is given its list whatever its formula or mass (no lookup); a list whose candidates' masses do not fit the
query's neutral mass within ``ppm`` gets a warning in ``detail``. Rows are read as in a structure database
(:mod:`._structure_tables`: columns recognised, missing values counted, structures reduced to their parent); a
structure repeated within one list (same first InChIKey block and formula) is kept once, the first row winning.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ....exceptions import IOKRDataError
from ..chemistry._formulas import FormulaError
from ..chemistry._structures import formula_mass, parent_of
from ._database import CANDIDATE_COLUMNS, output_names
from ._structure_tables import (
    IDENTIFIER_COLUMNS,
    clean_value,
    name_column,
    pick,
    structure_rows_of_bytes,
    structure_texts,
)

#: Squashed names of the column that names each row's query in a single per-query table.
QUERY_ID_COLUMNS = ("queryid",)
#: Derived columns of a per-query candidate: :data:`CANDIDATE_COLUMNS`, the structure text as given, and its list.
LIST_COLUMNS = (*CANDIDATE_COLUMNS, "structure", "list")


def query_id_column(columns):
    """The query-id column of a table (see :data:`QUERY_ID_COLUMNS`), or None."""
    return pick(columns, QUERY_ID_COLUMNS)


def query_id_of_file(name):
    """The query id a per-query list file names: its name without ``.gz`` and its table extension."""
    stem = Path(name).name
    stem = stem[:-3] if stem.lower().endswith(".gz") else stem
    return stem.rsplit(".", 1)[0] if "." in stem else stem


class QueryListSource:
    """Candidates given per query (see the module docstring).

    Parameters
    ----------
    tables : iterable of (str or None, str, list, iterable, list)
        ``(query_id, list_name, columns, rows, structure_columns)`` per table; ``query_id`` None: each row names
        its query in the table's query-id column.
    store : CandidateStore
        Parses the structures (as their parents) and caches their fingerprints.
    where : str
        The path, for messages.
    reserved : sequence of str
        Output column names the user's columns must not take (:func:`~._database.output_names`).

    Attributes
    ----------
    counts : dict
        ``n_lists``, ``n_rows``, ``n_missing``, ``n_unparsable``, ``n_duplicates``, ``n_structure_fallbacks``.
    """

    per_query = True

    def __init__(self, tables, store, where, reserved=()):
        self.store, self.where = store, where
        self.texts, self.user, self.list_of, self.ids, self.list_names = [], [], [], [], []
        self.by_query = {}
        self.user_columns = []
        self.counts = dict.fromkeys(("n_rows", "n_missing", "n_unparsable", "n_duplicates",
                                     "n_structure_fallbacks"), 0)
        pending, names_by_query = [], {}
        for query, name, columns, rows, structure_columns in tables:
            qcol = query_id_column(columns) if query is None else None
            id_col, name_col = pick(columns, IDENTIFIER_COLUMNS), name_column(columns)
            self.user_columns.extend(c for c in columns if c not in self.user_columns)
            for row in rows:
                qid = query if query is not None else clean_value(row.get(qcol))
                if not qid:
                    raise IOKRDataError(f"Candidates {where}: {name} has a row without a query id in column "
                                        f"{qcol!r}.")
                names_by_query.setdefault(qid, name if query is not None else f"{name} ({qcol} {qid})")
                pending.append((qid, name, row, structure_texts(row, structure_columns),
                                clean_value(row.get(id_col)) if id_col else "",
                                clean_value(row.get(name_col)) if name_col else ""))
        texts = [t for *_, row_texts, _, _ in pending for t in row_texts]
        keys, ok = store.keys_for(texts) if texts else ([], np.zeros(0, dtype=bool))
        # a structure's identity within a list: first InChIKey block and formula (isotope-labelled forms apart)
        keys = list(zip(keys, store.formulas_for(texts) if texts else [], strict=True))
        parsed = dict(zip(texts, zip(keys, ok, strict=True), strict=True))
        seen = set()
        for qid, name, row, row_texts, identifier, label in pending:
            self.counts["n_rows"] += 1
            members = self.by_query.setdefault(qid, [])
            if name not in self.list_names:
                self.list_names.append(name)
            if not row_texts:
                self.counts["n_missing"] += 1
                continue
            position = next((i for i, t in enumerate(row_texts) if parsed[t][1]), None)
            if position is None:
                self.counts["n_unparsable"] += 1
                continue
            self.counts["n_structure_fallbacks"] += position > 0
            text = row_texts[position]
            if (qid, parsed[text][0]) in seen:
                self.counts["n_duplicates"] += 1
                continue
            seen.add((qid, parsed[text][0]))
            members.append(len(self.texts))
            self.texts.append(text)
            self.user.append({c: row.get(c, "") for c in self.user_columns if c in row})
            self.list_of.append(self.list_names.index(name))
            self.ids.append((identifier, label))
        self.counts["n_lists"] = len(self.by_query)
        self.output_names = output_names(self.user_columns, LIST_COLUMNS, reserved, derived_prefix="candidate_")
        self.columns = list(LIST_COLUMNS) + [self.output_names[c] for c in self.user_columns]
        self.renamed = {c: n for c, n in self.output_names.items() if c != n}
        self._names_by_query = names_by_query

    def plan(self, query_id, neutral_mass, ppm):
        """``(ids, lookup, status, note)`` of one query: its list's row ids, the lookup text, ``"ok"`` or
        ``"no candidates"``, and a warning (``""`` when none) counting candidates off ``neutral_mass`` by more than
        ``ppm``."""
        ids = self.for_query(query_id)
        if ids is None:
            return np.zeros(0, dtype=np.int64), "", "no candidates", f"no candidate list for query id {query_id}"
        lookup = f"list {self._names_by_query[query_id]}"
        if ids.size == 0:
            return ids, lookup, "no candidates", f"the list of query id {query_id} holds no usable structure"
        masses = self.masses_of(ids)
        off = np.abs(masses - neutral_mass) > neutral_mass * ppm * 1e-6
        off |= ~np.isfinite(masses)
        note = (f"warning: {int(off.sum())} of {ids.size} candidates outside {ppm:g} ppm of the neutral mass "
                f"{neutral_mass:.5f}" if off.any() else "")
        return ids, lookup, "ok", note

    def for_query(self, query_id):
        """Row ids of the list of ``query_id`` (its order in the file), or None when there is no such list."""
        members = self.by_query.get(query_id)
        return None if members is None else np.asarray(members, dtype=np.int64)

    def masses_of(self, ids):
        """Neutral-equivalent monoisotopic mass of candidates ``ids`` (NaN where the formula is unreadable)."""
        out = []
        for formula in self.formulas_of(ids):
            try:
                out.append(formula_mass(formula))
            except FormulaError:
                out.append(np.nan)
        return np.asarray(out, dtype=np.float64)

    def select(self, formula, low, high):
        raise IOKRDataError(f"Candidates {self.where} are per-query lists; they are selected by query id, not by "
                            "formula or mass.")

    def fingerprints(self, ids, fingerprinter, compact=False):
        return self.store.fingerprints([self.texts[i] for i in ids], compact=compact)

    def formulas_of(self, ids):
        return [f or "" for f in self.store.formulas_for([self.texts[i] for i in ids])]

    def records(self, ids):
        out = []
        for i in ids:
            text = self.texts[i]
            parent = parent_of(text)
            identifier, label = self.ids[i]
            record = {"identifier": identifier, "name": label, "inchikey": parent.key if parent else "",
                      "smiles": parent.smiles if parent else "", "formula": parent.formula if parent else "",
                      "monoisotopic_mass": f"{parent.mass:.5f}" if parent else "", "structure": text,
                      "list": self.list_names[self.list_of[i]]}
            record.update({self.output_names[c]: v for c, v in self.user[i].items()})
            out.append(record)
        return out

    def describe(self):
        c = self.counts
        return (f"per-query candidate lists {self.where} ({c['n_lists']} queries, {len(self.texts)} candidates; "
                f"{c['n_missing']} rows without a structure, {c['n_unparsable']} unparsable, {c['n_duplicates']} "
                f"duplicates merged, {c['n_structure_fallbacks']} read from a later structure column)")


def tables_of_sources(sources, where):
    """``(query_id, name, columns, rows, structure_columns)`` per list file of a per-query folder or archive; one
    file per query id (two files naming one query are refused)."""
    seen = {}
    for name, data in sources:
        query = query_id_of_file(name)
        if query in seen:
            raise IOKRDataError(f"Candidates {where}: {seen[query]} and {name} both name query id {query!r}; "
                                "keep one list per query.")
        seen[query] = name
        columns, rows, structure_columns = structure_rows_of_bytes(name, data, f"Candidate list {name} in {where}")
        yield query, name, columns, rows, structure_columns
