"""Distributed execution on Dask (optional extra ``iokr[distributed]``): candidate scoring partitioned over candidate
blocks and query blocks, and cross-validation/parameter grids partitioned over folds and parameter settings.

Results are identical to the local run: the same blocks are scored by the same code, and partial top-k lists are
merged with the library's stable tie policy. A task that fails (a lost worker, a candidate file changed underneath
the run) is retried ``retries`` times by Dask; if it still fails, the whole call raises
:class:`DistributedRunError` and no partial result is returned.

Nothing in the core imports this package.

>>> from iokr.distributed import local_client, distributed_rank  # doctest: +SKIP
>>> with local_client(n_workers=2) as client:                     # doctest: +SKIP
...     rankings = distributed_rank(client, model, X_test, pool, top_k=100)
"""

from ._cluster import DistributedRunError, connect, local_client
from ._grid import distributed_grid_search, grid_search
from ._scoring import distributed_rank, distributed_top_k, plan_tasks

__all__ = [
    "DistributedRunError",
    "connect",
    "distributed_grid_search",
    "distributed_rank",
    "distributed_top_k",
    "grid_search",
    "local_client",
    "plan_tasks",
]
