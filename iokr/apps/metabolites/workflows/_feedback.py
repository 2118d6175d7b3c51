"""Where a job reports: progress bars and log lines, or nothing when nobody watches."""

from __future__ import annotations

import dataclasses


class _Silent:
    """The progress of a stage when nobody watches (same calls as :class:`iokr.cli._output.Progress`)."""

    def __call__(self, done=None):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _noop_progress(total, label):
    """Show no progress: the default ``progress`` of :class:`Feedback`.

    Parameters
    ----------
    total : int or None
        Number of steps of the stage, None when unknown (ignored).
    label : str
        Name of the stage (ignored).

    Returns
    -------
    progress : context manager
        Accepts the calls of a progress bar and does nothing.
    """
    return _Silent()


@dataclasses.dataclass(frozen=True)
class Feedback:
    """Where a job reports: progress bars and log lines.

    Parameters
    ----------
    progress : callable, default=no progress shown
        ``progress(total, label)`` gives a stage's progress: a context manager, called with the number done.
    log : callable, default=print
        ``log(message)`` reports one line.
    """

    progress: object = _noop_progress
    log: object = print
