"""Dask clients: an embedded ``LocalCluster`` by default, a scheduler address for a real cluster."""

from __future__ import annotations

from contextlib import contextmanager


class DistributedRunError(RuntimeError):
    """A distributed run failed after its retries; no partial result was returned."""


def _import_distributed():
    try:
        import distributed  # noqa: PLC0415 - Dask is an optional dependency
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("iokr.distributed needs Dask: pip install 'iokr[distributed]' (dask[distributed]).") from exc
    return distributed


@contextmanager
def local_client(n_workers=2, threads_per_worker=1, processes=False, memory_limit="auto", **cluster_kwargs):
    """An embedded ``dask.distributed.LocalCluster`` and a client on it, closed on exit.

    Parameters
    ----------
    n_workers : int, default=2
    threads_per_worker : int, default=1
        BLAS already uses threads inside a task; one task per worker thread avoids oversubscription.
    processes : bool, default=False
        Workers as threads of this process (fast start, shared memory) or as separate processes.
    memory_limit : str or int, default="auto"
    **cluster_kwargs
        Passed to ``LocalCluster`` (``dashboard_address=None`` is the default here).
    """
    distributed = _import_distributed()
    cluster_kwargs.setdefault("dashboard_address", None)
    with (distributed.LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=processes,
                                   memory_limit=memory_limit, **cluster_kwargs) as cluster,
          distributed.Client(cluster) as client):
        yield client


@contextmanager
def connect(address, **client_kwargs):
    """A client on a running scheduler (``"tcp://scheduler-host:8786"``), closed on exit (the cluster stays up)."""
    distributed = _import_distributed()
    with distributed.Client(address, **client_kwargs) as client:
        yield client


def _identity(obj):
    return obj


def hold(client, obj):
    """A future holding ``obj`` that survives the loss of the worker keeping it.

    ``client.scatter`` data is lost for good when its worker dies (Dask cannot recompute it) and every task that
    needs it then fails; a task returning ``obj`` keeps ``obj`` in its specification, so the scheduler recomputes it
    on another worker and the dependent tasks can be retried. ``pure=False`` gives every call a fresh key: a key
    reused from an earlier call could be released while this one still needs it.
    """
    return client.submit(_identity, obj, pure=False)


def gather_all(client, futures, what):
    """Results of all ``futures`` in order, or :class:`DistributedRunError` if any failed (then the rest are
    cancelled: no partial result escapes)."""
    distributed = _import_distributed()
    try:
        return client.gather(futures, errors="raise")
    except Exception as exc:
        client.cancel(futures)
        if isinstance(exc, distributed.CancelledError) or type(exc).__name__ in ("KilledWorker", "CancelledError"):
            raise DistributedRunError(f"{what}: a task was lost (worker died or the task was cancelled) and its "
                                      f"retries are exhausted: {exc!r}. No partial result is returned.") from exc
        raise DistributedRunError(f"{what}: a task failed: {exc!r}. No partial result is returned.") from exc
