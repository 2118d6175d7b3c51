"""Where the structures of an index build are parsed: this process, local worker processes, or a Dask cluster.

Parsing and fingerprinting (RDKit) dominate indexing; each task is one chunk of rows, parsed by the same function
(:func:`~._shard_build._part_rows`, through :func:`~._structure_parsing.parse_texts`) wherever it runs, so every executor
gives the same results. Results come back in task order with a bounded number of tasks in flight (memory stays a few
chunks whatever the table's size).
"""

from __future__ import annotations

import os
import re
from contextlib import ExitStack, contextmanager

from ....distributed import DistributedRunError, connect, local_client
from ....exceptions import IOKRDataError
from ....io._workers import worker_pool

#: ``--scheduler`` value asking for a Dask LocalCluster on this machine.
LOCAL_CLUSTER = "local"

#: A Dask scheduler address: an optional protocol, a host name, IPv4 or bracketed IPv6 address, and a port.
_ADDRESS = re.compile(r"(?:(?:tcp|tls|ucx|ws|wss)://)?(?:\[[0-9A-Fa-f:.]+\]|[^\s/:\[\]]+):(\d{1,5})")


def check_scheduler(scheduler):
    """Refuse a ``--scheduler`` value that is neither :data:`LOCAL_CLUSTER` nor an address such as
    ``tcp://host:8786``, before any work (nothing of a build is written for it).

    Parameters
    ----------
    scheduler : str or None
        The value given (None: local processes).

    Raises
    ------
    IOKRDataError
        One line naming ``--scheduler``, what was expected and what was given.
    """
    if scheduler is None or scheduler == LOCAL_CLUSTER:
        return
    match = _ADDRESS.fullmatch(scheduler) if isinstance(scheduler, str) else None
    if match is None or not 0 < int(match.group(1)) < 65536:
        raise IOKRDataError(f"--scheduler {scheduler!r}: expected a Dask scheduler address such as "
                            f"tcp://host:8786, or {LOCAL_CLUSTER!r} for a LocalCluster on this machine.")


@contextmanager
def _dask_client(scheduler, n_workers):
    # only connecting is blamed on --scheduler: the build reads its table while the client is open, and an error
    # of that table (a truncated .csv.gz) must reach the user as it is
    with ExitStack() as stack:
        try:
            client = stack.enter_context(local_client(n_workers=n_workers, processes=True)
                                         if scheduler == LOCAL_CLUSTER else connect(scheduler))
        except ImportError as exc:
            raise IOKRDataError(f"--scheduler {scheduler} needs Dask: pip install 'iokr[distributed]' ({exc}).") \
                from None
        except OSError as exc:
            raise IOKRDataError(f"--scheduler {scheduler}: no Dask scheduler answers there ({exc}).") from None
        except ValueError as exc:  # an address Dask cannot parse (check_scheduler lets only well-formed ones through)
            raise IOKRDataError(f"--scheduler {scheduler}: not a Dask scheduler address ({exc}).") from None
        except TypeError as exc:  # tls:// without a TLS configuration
            raise IOKRDataError(f"--scheduler {scheduler}: cannot connect ({exc}).") from None
        yield client


def run_in_order(tasks, function, n_jobs=None, scheduler=None):
    """Run ``function(*args)`` of every task and yield ``(key, payload, result)`` in task order.

    Parameters
    ----------
    tasks : iterable of (key, payload, args)
        ``args``: the arguments of one call (a chunk to parse); ``key`` and ``payload`` are passed through.
    function : callable
        A module-level function (sent to worker processes by name).
    n_jobs : int, optional
        Local worker processes (default: the number of CPUs; 1 runs in this process), or the number of workers
        of a Dask LocalCluster.
    scheduler : str, optional
        A Dask scheduler address (``tcp://host:8786``) or :data:`LOCAL_CLUSTER`; None runs locally.
    """
    n_jobs = (os.cpu_count() or 1) if n_jobs is None else max(int(n_jobs), 1)
    if scheduler is None and n_jobs == 1:
        for key, payload, args in tasks:
            yield key, payload, function(*args)
        return
    if scheduler is None:
        with worker_pool(n_jobs) as pool:  # workers die with this process, even on kill -9
            yield from _bounded(tasks, lambda args: pool.submit(function, *args), n_jobs,
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

        yield from _bounded(tasks, lambda args: client.submit(function, *args, pure=False, retries=2), width,
                            result)


def _bounded(tasks, submit, width, result):
    pending = []
    for key, payload, args in tasks:
        pending.append((key, payload, submit(args)))
        if len(pending) > 2 * width:  # bounded look-ahead
            key, payload, future = pending.pop(0)
            yield key, payload, result(future)
    for key, payload, future in pending:
        yield key, payload, result(future)
