"""A small reader for numeric ARFF files (dense and sparse), as used by the Mulan multi-label benchmarks."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..exceptions import IOKRDataError


def _open(path):
    path = Path(path)
    return gzip.open(path, "rt", encoding="utf-8", errors="replace") if path.suffix == ".gz" else \
        open(path, encoding="utf-8", errors="replace")


def load_arff(path, n_labels):
    """Read a Mulan ARFF file whose last ``n_labels`` attributes are the binary labels.

    Parameters
    ----------
    path : str or Path
        ``.arff`` or ``.arff.gz`` file with numeric attributes (dense rows or sparse ``{index value, ...}`` rows).
    n_labels : int
        Number of label attributes at the end of the attribute list.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n, n_attributes - n_labels)
    Y : ndarray of int8, shape (n, n_labels)
    """
    names, rows, cols, vals = [], [], [], []
    n_rows = 0
    in_data = False
    number = 0
    try:
        with _open(path) as handle:
            for number, raw in enumerate(handle, 1):
                line = raw.strip()
                if not line or line.startswith("%"):
                    continue
                if not in_data:
                    lower = line.lower()
                    if lower.startswith("@attribute"):
                        parts = line.split()
                        if len(parts) < 2:
                            raise IOKRDataError(f"{path}: line {number}: @attribute without a name.")
                        names.append(parts[1])
                    elif lower.startswith("@data"):
                        in_data = True
                    continue
                try:
                    if line.startswith("{"):
                        for item in line.strip("{}").split(","):
                            item = item.strip()
                            if item:
                                index, value = item.split()
                                if int(index) < 0:
                                    raise ValueError(f"negative attribute index {index}")
                                rows.append(n_rows)
                                cols.append(int(index))
                                vals.append(float(value))
                    else:
                        values = [float(v) for v in line.split(",")]
                        if len(values) != len(names):
                            raise ValueError(f"{len(values)} values for {len(names)} attributes")
                        nonzero = np.flatnonzero(values)
                        rows.extend([n_rows] * nonzero.size)
                        cols.extend(nonzero.tolist())
                        vals.extend(np.asarray(values)[nonzero].tolist())
                except ValueError as exc:
                    raise IOKRDataError(f"{path}: line {number}: cannot parse data row ({exc}).") from exc
                n_rows += 1
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or damaged .gz stream
        raise IOKRDataError(f"{path}: unreadable after line {number} ({type(exc).__name__}: {exc}); the file is "
                            "truncated or corrupted.") from None
    n_attributes = len(names)
    if not 0 < n_labels < n_attributes:
        raise IOKRDataError(f"'n_labels' must be in [1, {n_attributes - 1}] for {path}, got {n_labels}.")
    if cols and max(cols) >= n_attributes:
        raise IOKRDataError(f"{path}: attribute index {max(cols)} beyond the {n_attributes} declared attributes.")
    full = sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, n_attributes))
    n_features = n_attributes - n_labels
    X = full[:, :n_features].tocsr()
    Y = full[:, n_features:].toarray()
    if not np.isin(Y, (0, 1)).all():
        raise IOKRDataError(f"{path}: label attributes must be 0/1.")
    return X, Y.astype(np.int8)
