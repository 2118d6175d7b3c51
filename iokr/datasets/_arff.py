"""A small reader for numeric ARFF files (dense and sparse), as used by the Mulan multi-label benchmarks."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import IOKRDataError
from ..io import iter_lines


def _short(token, width=30):
    """``token`` quoted and cut to ``width`` characters: error messages show where a row is wrong without echoing
    the file's content (it may not be an ARFF file at all)."""
    return repr(token if len(token) <= width else token[:width] + "...")


def _number(token, position):
    try:
        return float(token)
    except ValueError:
        raise ValueError(f"value {position} ({_short(token.strip())}) is not a number") from None


def load_arff(path, n_labels):
    """Read a Mulan ARFF file whose last ``n_labels`` attributes are the binary labels.

    Parameters
    ----------
    path : str or Path
        ARFF file, plain or gzip-compressed (detected from the content), with numeric attributes (dense rows or
        sparse ``{index value, ...}`` rows).
    n_labels : int
        Number of label attributes at the end of the attribute list.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n, n_attributes - n_labels)
    Y : ndarray of int8, shape (n, n_labels)

    Raises
    ------
    IOKRDataError
        A malformed header or row (the message names the line and shows at most 30 characters of the offending
        value), a line longer than the ``max_line_bytes`` cap, a gzip file beyond the ``max_compression_ratio`` cap
        or a damaged gzip stream (see :func:`iokr.io.iter_lines`).
    """
    names, rows, cols, vals = [], [], [], []
    n_rows = 0
    in_data = False
    # Lines are capped (iokr.set_config(max_line_bytes=...)); gzip is detected from the content.
    for number, raw in iter_lines(path, what="ARFF file", errors="replace"):
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
            row_cols, row_vals = _sparse_row(line) if line.startswith("{") else _dense_row(line, len(names))
        except ValueError as exc:
            raise IOKRDataError(f"{path}: line {number}: cannot parse data row ({exc}).") from None
        rows.extend([n_rows] * len(row_cols))
        cols.extend(row_cols)
        vals.extend(row_vals)
        n_rows += 1
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


def _sparse_row(line):
    """Attribute indices and values of a sparse ``{index value, ...}`` row; ValueError names a bad entry."""
    cols, vals = [], []
    for position, item in enumerate(line.strip("{}").split(","), 1):
        item = item.strip()
        if item:
            pair = item.split()
            if len(pair) != 2:
                raise ValueError(f"sparse entry {position} ({_short(item)}) is not 'index value'")
            digits = pair[0].isascii() and pair[0].isdigit() and len(pair[0]) <= 18
            index = int(pair[0]) if digits else -1
            if index < 0:
                raise ValueError(f"sparse entry {position} has no valid attribute index "
                                 f"({_short(pair[0])}; negative attribute index or not an integer)")
            cols.append(index)
            vals.append(_number(pair[1], position))
    return cols, vals


def _dense_row(line, n_attributes):
    """Indices and values of the nonzero attributes of a dense comma-separated row."""
    tokens = line.split(",")
    try:
        values = [float(v) for v in tokens]
    except ValueError:  # name the first bad value without echoing the line
        values = [_number(v, i) for i, v in enumerate(tokens, 1)]
    if len(values) != n_attributes:
        raise ValueError(f"{len(values)} values for {n_attributes} attributes")
    nonzero = np.flatnonzero(values)
    return nonzero.tolist(), np.asarray(values)[nonzero].tolist()
