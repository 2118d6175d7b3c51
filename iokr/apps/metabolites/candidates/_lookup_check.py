"""The check behind every indexed lookup of a structure database: the rows an index lists must fit the lookup by
their own values in the table.

A lookup by formula or mass goes through an SQLite index; a damaged index entry (a flipped row id or key) would bring
a row of another formula or mass. So the table's own ``mass`` and ``formula`` of each listed row (read ``NOT
INDEXED``, by row id) must fit. :class:`TableValues` reads them once per row and keeps them, so a run whose queries'
windows overlap (1,000 queries on the 70k store: 2 million listed rows, 49,000 distinct) reads each row once instead
of once per lookup: 0.74 s of CPU per 1,000 queries before, one SQL statement per 900 listed rows.
"""

from __future__ import annotations

import numpy as np

#: Row ids per SQL statement (SQLite's default limit of host parameters is 999).
CHUNK = 900


class TableValues:
    """``mass`` and ``formula`` of table rows by row id, read from the table (not an index) once per row.

    Parameters
    ----------
    read : callable
        ``read(sql, args) -> rows`` on the database (errors worded by the caller).
    """

    def __init__(self, read):
        self._read = read
        self._known = np.zeros(0, dtype=bool)
        self._mass = np.zeros(0)
        self._formula = np.zeros(0, dtype=object)

    def _grow(self, size):
        if size <= self._known.size:
            return
        size = max(size, 2 * self._known.size)
        extra = size - self._known.size
        self._known = np.concatenate([self._known, np.zeros(extra, dtype=bool)])
        self._mass = np.concatenate([self._mass, np.full(extra, np.nan)])
        self._formula = np.concatenate([self._formula, np.full(extra, None, dtype=object)])

    def _fill(self, ids):
        """Read the rows of ``ids`` not read yet; a listed row that is not in the table keeps no mass or formula."""
        self._grow(int(ids.max()) + 1)
        todo = np.unique(ids[~self._known[ids]])
        for start in range(0, todo.size, CHUNK):
            chunk = todo[start:start + CHUNK].tolist()
            rows = self._read(f"SELECT id, mass, typeof(mass), formula FROM structures NOT INDEXED WHERE id IN "
                              f"({','.join('?' * len(chunk))})", chunk)
            for row_id, mass, kind, formula in rows:
                if isinstance(row_id, int) and 0 <= row_id < self._known.size:
                    self._mass[row_id] = mass if kind == "real" else np.nan
                    self._formula[row_id] = formula
            self._known[chunk] = True

    def _first_stray(self, ids, is_stray):
        """The first of ``ids`` that is negative (no row id) or, once its row is read, ``is_stray``; or None."""
        if ids.size == 0:
            return None
        if ids.min() < 0:
            return int(ids[ids < 0][0])
        self._fill(ids)
        bad = np.flatnonzero(is_stray(ids))
        return int(ids[bad[0]]) if bad.size else None

    def stray_by_mass(self, ids, low, high):
        """The first of ``ids`` (int64 row ids from an index) whose table mass is not a real number in
        ``[low, high]``, or None."""
        return self._first_stray(ids, lambda rows: ~((self._mass[rows] >= low) & (self._mass[rows] <= high)))

    def stray_by_formula(self, ids, formula):
        """The first of ``ids`` whose table formula is not ``formula``, or None."""
        return self._first_stray(ids, lambda rows: self._formula[rows] != formula)
