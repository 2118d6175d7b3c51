"""Row chunking under a working-memory budget."""

from __future__ import annotations

from .._config import working_memory_bytes


def chunk_rows(n_rows, bytes_per_row, working_memory=None, *, min_rows=1):
    """Number of rows per chunk so that one chunk of temporaries fits the budget.

    Parameters
    ----------
    n_rows : int
        Total number of rows to process.
    bytes_per_row : int
        Bytes of temporary memory one row needs (all blocks the chunk allocates).
    working_memory : float, optional
        Budget in MiB; defaults to the global setting.
    min_rows : int
        Fewest rows a chunk may have; if even these do not fit, ``MemoryError`` is raised.

    Returns
    -------
    rows : int
        Rows per chunk, between ``min_rows`` and ``max(n_rows, min_rows)``.
    """
    budget = working_memory_bytes(working_memory)
    rows = budget // max(int(bytes_per_row), 1)
    if rows < min_rows:
        raise MemoryError(
            f"One chunk of {min_rows} row(s) needs {int(bytes_per_row) * min_rows} bytes, more than the working-memory "
            f"budget of {budget} bytes; raise it with iokr.set_config(working_memory=...) or the working_memory argument."
        )
    return int(max(min(rows, max(n_rows, 1)), min_rows))


def row_slices(n_rows, bytes_per_row, working_memory=None):
    """Yield ``slice`` objects covering ``range(n_rows)`` in budget-sized chunks."""
    step = chunk_rows(n_rows, bytes_per_row, working_memory)
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))
