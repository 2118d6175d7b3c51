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

    The rows read so far are kept sorted by row id (found by binary search), so memory follows the rows a run lists,
    not the largest row id: a shard of a 1.9M-structure store holds ids up to 1.9M, and arrays indexed by row id
    cost 17 bytes per id in every shard read (0.13 s of 1,000 queries' lookups only to allocate them).

    Parameters
    ----------
    read : callable
        ``read(sql, args) -> rows`` on the database (errors worded by the caller).
    """

    def __init__(self, read):
        self._read = read
        self._ids = np.zeros(0, dtype=np.int64)
        self._mass = np.zeros(0)
        self._formula = np.zeros(0, dtype=object)
        self._index = None

    def _positions(self, ids):
        """Positions of ``ids`` among the rows read, and whether each was read."""
        if self._index is not None and ids.max() < self._index.size:
            at = self._index[ids]
            found = at >= 0
            return np.where(found, at, 0), found
        at = np.searchsorted(self._ids, ids)
        found = np.zeros(ids.size, dtype=bool)
        inside = at < self._ids.size
        found[inside] = self._ids[at[inside]] == ids[inside]
        return at, found

    def _fill(self, ids):
        """Read the rows of ``ids`` not read yet; a listed row that is not in the table keeps no mass or formula.
        Returns the positions of ``ids`` among the rows read."""
        at, found = self._positions(ids)
        if found.all():
            return at
        todo = np.unique(ids[~found])
        mass, formula = np.full(todo.size, np.nan), np.full(todo.size, None, dtype=object)
        for start in range(0, todo.size, CHUNK):
            chunk = todo[start:start + CHUNK]
            rows = self._read(f"SELECT id, mass, typeof(mass), formula FROM structures NOT INDEXED WHERE id IN "
                              f"({','.join('?' * chunk.size)})", chunk.tolist())
            read = {row_id: (value if kind == "real" else np.nan, text) for row_id, value, kind, text in rows
                    if isinstance(row_id, int)}
            for k, row_id in enumerate(chunk.tolist(), start):
                if row_id in read:
                    mass[k], formula[k] = read[row_id]
        # merged in order (one copy, no sort of the rows read so far: lookups stay as fast as the store grows)
        where = np.searchsorted(self._ids, todo)
        self._ids = np.insert(self._ids, where, todo)
        self._mass = np.insert(self._mass, where, mass)
        self._formula = np.insert(self._formula, where, formula)
        # once the rows read are a sixteenth of the ids up to the largest (a shard of the 1.9M store read whole: a
        # tenth), positions by row id (4 bytes per id, at most 64 per row read) find them without a binary search,
        # whose cache misses cost 0.2 ms per lookup there (the bench's by-mass lookups: 0.07 -> 0.3 ms of check)
        largest = int(self._ids[-1]) + 1
        self._index = None
        if 16 * self._ids.size >= largest and self._ids.size < 2**31:
            self._index = np.full(largest, -1, dtype=np.int32)
            self._index[self._ids] = np.arange(self._ids.size, dtype=np.int32)
        return self._positions(ids)[0]

    def _first_stray(self, ids, is_stray):
        """The first of ``ids`` that is negative (no row id) or, once its row is read, ``is_stray`` (given the
        positions of ``ids`` among the rows read); or None."""
        if ids.size == 0:
            return None
        if ids.min() < 0:
            return int(ids[ids < 0][0])
        bad = np.flatnonzero(is_stray(self._fill(ids)))
        return int(ids[bad[0]]) if bad.size else None

    def stray_by_mass(self, ids, low, high):
        """The first of ``ids`` (int64 row ids from an index) whose table mass is not a real number in
        ``[low, high]``, or None."""
        return self._first_stray(ids, lambda at: ~((self._mass[at] >= low) & (self._mass[at] <= high)))

    def stray_by_formula(self, ids, formula):
        """The first of ``ids`` whose table formula is not ``formula``, or None."""
        return self._first_stray(ids, lambda at: self._formula[at] != formula)
