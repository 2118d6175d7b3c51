"""Training Grams of several base kernels, computed once and read by row blocks (out of core when asked).

Multiple-kernel learning reuses the base Grams of its training inputs for every cross-validation fold, the
calibration and the final fit (the metabolite app does so with its spectrum kernels). :class:`TrainingGrams` holds them (dense, or compact: CSR, exact) with
their raw diagonals, and gives what those steps need without forming ``n x n`` temporaries beside the one result:

- :meth:`TrainingGrams.combined`: ``sum_k w_k G_k`` on any rows x columns, built block by block in one output
  array; every entry is computed by the same floating-point operations, in the same order, as
  ``sum(w * G for w, G in zip(weights, grams))`` on dense sub-Grams, so it is bit-identical to that sum;
- :meth:`TrainingGrams.alignment_terms`: ALIGNF's ``M_kl = <K_k^c, K_l^c>_F`` and ``a_k = <K_k^c, T^c>_F`` with
  the centered Grams formed one row block at a time (the sums are accumulated over blocks, so they can differ from
  one whole-matrix product in the last bits);
- :meth:`TrainingGrams.subset`: the Grams of a subset of the training rows (a cross-validation fold's training
  side) as a view, without copying sub-Grams.

Storage (e.g. ``storage`` of the metabolite app's ``MetaboliteIdentifier.base_grams``), all exact:

- ``"csr"``: the float64 nonzero entries in memory (normalized PPK and binned Grams of merged MassBank spectra are
  20-45 % nonzero: about half the bytes of the dense Grams); blocks are made dense on reading;
- ``"file"``: the same CSR arrays in an unlinked temporary file (as the candidate store keeps its rows in SQLite's
  temporary file): the process holds only the row pointers, and the blocks being read. The file's pages are the
  operating system's cache, reclaimable under memory pressure (then re-read from disk).
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import scipy.sparse as sp

from ..linalg.developer import row_slices

#: Budget (MiB) of the dense row blocks that :class:`TrainingGrams` forms at a time.
GRAM_BLOCK_MEMORY = 64

#: Storage of :meth:`MetaboliteIdentifier.base_grams` (see the module notes).
GRAM_STORAGES = ("dense", "csr", "file")


def input_gaussian(K, da, db, gamma):
    """``exp(-gamma * clip(da[:, None] + db[None, :] - 2 K, 0))``: the Gaussian of the combined kernel's distance,
    shape of ``K`` (a new array; ``K`` is not modified). ``da``, ``db``: the combined diagonals of rows and
    columns."""
    D = da[:, None] + db[None, :]
    D -= 2.0 * K
    np.clip(D, 0.0, None, out=D)
    return np.exp(-gamma * D)


def compact_gram(K, working_memory=GRAM_BLOCK_MEMORY):
    """CSR copy of a dense Gram holding its nonzero entries exactly, built by row blocks (int32 column indices)."""
    K = np.asarray(K)
    n_rows, n_cols = K.shape
    data, indices, counts = [], [], [np.zeros(1, dtype=np.int64)]
    for rows in row_slices(n_rows, max(n_cols, 1) * 24, working_memory):
        block = K[rows]
        r, c = np.nonzero(block)
        data.append(block[r, c])
        indices.append(c.astype(np.int32))
        counts.append(np.bincount(r, minlength=block.shape[0]))
    indptr = np.cumsum(np.concatenate(counts))
    return sp.csr_matrix((np.concatenate(data), np.concatenate(indices), indptr), shape=K.shape)


class FileGram:
    """A CSR Gram whose nonzero values and column indices are kept in an unlinked temporary file.

    Only the row pointers stay in memory; :meth:`rows` reads the byte range of the requested rows (their covering
    range when the rows are not consecutive) and returns them dense, with the exact stored values.

    Parameters
    ----------
    csr : scipy.sparse.csr_matrix of shape (n, m)
    """

    def __init__(self, csr):
        csr = sp.csr_matrix(csr)
        csr.sort_indices()
        self.shape = csr.shape
        self.indptr = np.asarray(csr.indptr, dtype=np.int64)
        self.nnz = int(csr.nnz)
        self._file = tempfile.TemporaryFile(prefix="iokr-gram-")  # noqa: SIM115 - lives as long as this object
        self._file.write(np.ascontiguousarray(csr.data, dtype=np.float64).data)
        self._file.write(np.ascontiguousarray(csr.indices, dtype=np.int32).data)
        self._file.flush()

    def _read(self, dtype, offset, count):
        out = np.empty(count, dtype=dtype)
        view, done = memoryview(out).cast("B"), 0
        while done < view.nbytes:
            if hasattr(os, "preadv"):
                got = os.preadv(self._file.fileno(), [view[done:]], offset + done)
            else:  # no positional read on this platform: seek, then read (one reader per file)
                self._file.seek(offset + done)
                got = self._file.readinto(view[done:])
            if not got:
                raise OSError("the temporary Gram file ended early")
            done += got
        return out

    def rows(self, rows):
        """Dense float64 rows (int array or slice) of the stored Gram."""
        rows = np.arange(self.shape[0])[rows] if isinstance(rows, slice) else np.asarray(rows, dtype=np.intp)
        if rows.size == 0:
            return np.zeros((0, self.shape[1]))
        lo, hi = int(rows.min()), int(rows.max()) + 1
        start, stop = int(self.indptr[lo]), int(self.indptr[hi])
        data = self._read(np.float64, 8 * start, stop - start)
        indices = self._read(np.int32, 8 * self.nnz + 4 * start, stop - start)
        cover = sp.csr_matrix((data, indices, self.indptr[lo:hi + 1] - start), shape=(hi - lo, self.shape[1]))
        return cover[rows - lo].toarray()

    def close(self):
        self._file.close()


def _dense_rows(G, rows):
    if isinstance(G, FileGram):
        return G.rows(rows)
    if sp.issparse(G):
        return G[rows].toarray()
    return G[rows]


class TrainingGrams:
    """Normalized base Grams on training spectra (dense, CSR or in a file) with their raw diagonals; a row subset is
    a view.

    Parameters
    ----------
    grams : list of ndarray, scipy.sparse.csr_matrix or FileGram, each of shape (N, N)
        Normalized base Grams on all ``N`` training spectra.
    diags : list of ndarray of shape (N,), or None
        Raw self-similarities (``k(a, a)`` before normalization).
    rows : ndarray of int, optional
        Positions (among the ``N``) this view covers, in order; all by default.
    """

    def __init__(self, grams, diags=None, rows=None):
        self._grams = list(grams)
        self._diags = None if diags is None else list(diags)
        n = self._grams[0].shape[0] if self._grams else 0
        self._rows = None if rows is None else np.asarray(rows, dtype=np.intp)
        self.n = n if self._rows is None else self._rows.size

    @classmethod
    def of(cls, base_grams):
        """A :class:`TrainingGrams` from itself or from a ``(grams, diags)`` pair."""
        if isinstance(base_grams, cls):
            return base_grams
        grams, diags = base_grams
        return cls(grams, diags)

    @property
    def n_kernels(self):
        return len(self._grams)

    @property
    def storage(self):
        """``"dense"``, ``"csr"`` or ``"file"`` (see the module notes)."""
        if any(isinstance(G, FileGram) for G in self._grams):
            return "file"
        return "csr" if any(sp.issparse(G) for G in self._grams) else "dense"

    @property
    def diags(self):
        """Raw diagonals on this view's rows (list of ndarray of shape (n,))."""
        if self._diags is None:
            raise ValueError("These TrainingGrams were made without their raw diagonals.")
        return [d if self._rows is None else d[self._rows] for d in self._diags]

    def nbytes(self):
        """Bytes held by the stored Grams (shared by all views)."""
        def held(G):
            if isinstance(G, FileGram):
                return G.indptr.nbytes
            return G.data.nbytes + G.indices.nbytes + G.indptr.nbytes if sp.issparse(G) else G.nbytes

        return sum(held(G) for G in self._grams)

    def subset(self, rows):
        """The Grams on ``rows`` (positions in this view) without copying them."""
        rows = np.asarray(rows, dtype=np.intp)
        return TrainingGrams(self._grams, self._diags, rows if self._rows is None else self._rows[rows])

    def _index(self, positions):
        """Positions of this view as positions of the stored Grams (``None``: all)."""
        if positions is None:
            return slice(None) if self._rows is None else self._rows
        positions = np.arange(self.n)[positions] if isinstance(positions, slice) else np.asarray(positions)
        return positions if self._rows is None else self._rows[positions]

    def block(self, k, rows=None, cols=None):
        """Dense float64 ``G_k[rows][:, cols]`` (positions in this view; ``None``: all), exact."""
        G, r, c = self._grams[k], self._index(rows), self._index(cols)
        if isinstance(G, np.ndarray) and not (isinstance(r, slice) or isinstance(c, slice)):
            return np.ascontiguousarray(G[np.ix_(r, c)])
        block = _dense_rows(G, r)
        # C order whatever the indexing: row reductions (means) then sum in the same order on every route
        return np.ascontiguousarray(block if isinstance(c, slice) else block[:, c])

    def _length(self, positions):
        return self.n if positions is None else np.arange(self.n)[positions].size

    def _row_blocks(self, n_rows, n_cols, n_arrays):
        return row_slices(n_rows, max(n_cols, 1) * 8 * n_arrays, GRAM_BLOCK_MEMORY)

    def combined(self, weights, rows=None, cols=None, *, gamma=None, diags=None):
        """``sum_k w_k G_k`` on ``rows x cols``, optionally through ``exp(-gamma (da_i + db_j - 2 K_ij))``.

        Bit-identical to ``K = sum(w * G for w, G in zip(weights, sub_grams))`` on the dense sub-Grams, and to
        ``exp(-gamma * clip(da[:, None] + db[None, :] - 2.0 * K, 0))`` with ``gamma``; only one block of
        temporaries is formed at a time.

        Parameters
        ----------
        weights : sequence of float, one per kernel
        rows, cols : ndarray of int or slice, optional
            Positions in this view (all by default).
        gamma : float, optional
        diags : tuple (da, db), required with ``gamma``
            Combined unit diagonals of the rows and the columns.

        Returns
        -------
        K : ndarray of shape (n_rows, n_cols)
        """
        rows_all = np.arange(self.n) if rows is None else np.arange(self.n)[rows]
        n_cols = self._length(cols)
        out = np.empty((rows_all.size, n_cols))
        for part in self._row_blocks(rows_all.size, n_cols, 3):
            r = rows_all[part]
            acc = weights[0] * self.block(0, r, cols)
            for k in range(1, self.n_kernels):
                acc += weights[k] * self.block(k, r, cols)
            if gamma is not None:
                acc = input_gaussian(acc, diags[0][part], diags[1], gamma)
            out[part] = acc
        return out

    def alignment_terms(self, target):
        """ALIGNF's ``M`` (n_kernels, n_kernels) and ``a`` (n_kernels,) of the centered Grams of this view.

        ``K^c = K - r 1^T - 1 r^T + mean(r)`` with ``r`` the row means , formed
        one row block at a time; ``target`` is the dense (n, n) output Gram of this view's rows.
        """
        m, n = self.n_kernels, self.n
        target = np.asarray(target, dtype=np.float64)
        if target.shape != (n, n):
            raise ValueError(f"'target' must have shape ({n}, {n}), got {target.shape}.")
        means = [np.empty(n) for _ in range(m)]
        for part in self._row_blocks(n, n, 1):
            for k in range(m):
                means[k][part] = self.block(k, np.arange(n)[part]).mean(axis=1)
        t_means = target.mean(axis=1)
        centers = [(r, r.mean()) for r in [*means, t_means]]
        M, a = np.zeros((m, m)), np.zeros(m)
        for part in self._row_blocks(n, n, m + 2):
            size = part.stop - part.start
            flat = np.empty((m + 1, size * n))
            for k in range(m + 1):
                block = self.block(k, np.arange(n)[part]) if k < m else target[part]
                r, mu = centers[k]
                flat[k] = (block - r[part][:, None] - r[None, :] + mu).ravel()
            M += flat[:m] @ flat[:m].T
            a += flat[:m] @ flat[m]
        return M, a
