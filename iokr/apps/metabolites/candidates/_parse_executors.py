"""Where the structures of an index build are parsed: this process, local worker processes, or a Dask cluster.

Parsing and fingerprinting (RDKit) dominate indexing; each task is one chunk of structure texts, parsed by the same
function (:func:`~._database.parse_texts`) wherever it runs, so every executor gives the same results. Results come
back in task order with a bounded number of tasks in flight (memory stays a few chunks whatever the table's size).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from ....distributed import DistributedRunError, connect, local_client
from ....exceptions import IOKRDataError
from ....io._workers import worker_pool
from ._database import parse_texts

#: ``--scheduler`` value asking for a Dask LocalCluster on this machine.
LOCAL_CLUSTER = "local"


@contextmanager
def _dask_client(scheduler, n_workers):
    try:
        context = (local_client(n_workers=n_workers, processes=True) if scheduler == LOCAL_CLUSTER
                   else connect(scheduler))
        with context as client:
            yield client
    except ImportError as exc:
        raise IOKRDataError(f"--scheduler {scheduler} needs Dask: pip install 'iokr[distributed]' ({exc}).") \
            from None
    except OSError as exc:
        raise IOKRDataError(f"--scheduler {scheduler}: no Dask scheduler answers there ({exc}).") from None


def parse_in_order(tasks, fingerprint, n_jobs=None, scheduler=None):
    """Parse ``tasks`` and yield ``(key, payload, parsed)`` in task order.

    Parameters
    ----------
    tasks : iterable of (key, payload, texts)
        ``texts``: a list of per-row structure-text tuples; ``key`` and ``payload`` are passed through.
    fingerprint : dict
        :meth:`Fingerprinter.params` of the fingerprints to compute.
    n_jobs : int, optional
        Local worker processes (default: the number of CPUs; 1 parses in this process), or the number of workers
        of a Dask LocalCluster.
    scheduler : str, optional
        A Dask scheduler address (``tcp://host:8786``) or :data:`LOCAL_CLUSTER`; None runs locally.
    """
    n_jobs = (os.cpu_count() or 1) if n_jobs is None else max(int(n_jobs), 1)
    if scheduler is None and n_jobs == 1:
        for key, payload, texts in tasks:
            yield key, payload, parse_texts(texts, fingerprint)
        return
    if scheduler is None:
        with worker_pool(n_jobs) as pool:  # workers die with this process, even on kill -9
            yield from _bounded(tasks, lambda texts: pool.submit(parse_texts, texts, fingerprint), n_jobs,
                                lambda future: future.result())
        return
    with _dask_client(scheduler, n_jobs) as client:
        width = max(len(client.scheduler_info().get("workers", {})), 1)

        def result(future):
            try:
                return future.result()
            except Exception as exc:
                raise DistributedRunError(f"indexing on Dask ({scheduler}): a parse task failed: {exc!r}; nothing "
                                          "of it was written (run again to resume).") from exc

        yield from _bounded(tasks, lambda texts: client.submit(parse_texts, texts, fingerprint, pure=False,
                                                               retries=2), width, result)


def _bounded(tasks, submit, width, result):
    pending = []
    for key, payload, texts in tasks:
        pending.append((key, payload, submit(texts)))
        if len(pending) > 2 * width:  # bounded look-ahead
            key, payload, future = pending.pop(0)
            yield key, payload, result(future)
    for key, payload, future in pending:
        yield key, payload, result(future)
