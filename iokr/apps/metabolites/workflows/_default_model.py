"""The ready model: trained from the MassBank subsets bundled in the package on first use, then cached.

One model file with an ``[M+H]+`` sub-model (the bundled positive spectra) and an ``[M-H]-`` sub-model (the bundled
negative ones): queries of either polarity are ranked (see :mod:`._routing`).

``iokr metabolites identify`` without ``--model`` uses it. The cache folder is ``$IOKR_CACHE_DIR`` when set, else
``$XDG_CACHE_HOME/iokr``, else ``~/.cache/iokr``; the file name carries the package version and a digest of the
bundled spectra, the bundled decoy table and the training and calibration settings, so a new release, new data or a
new default trains a new model and never reuses a stale one. Training takes about a minute on 2 cores; the model is
written atomically, so an interrupted first run leaves no half file.

The cache fails fast and heals: its folder's writability is checked before training (one line naming the folder and
``IOKR_CACHE_DIR``, not a failure after the training); the run that trains claims the model's path
(:mod:`iokr.io._ownership`), so concurrent first runs wait for one training instead of repeating it, and sweeps the
temporaries of killed trainings; a cached model that fails its checks (damaged, truncated, replaced) is trained again
with a note, instead of being refused on every run. A verified model is remembered by its size, modification time
and inode (``.<name>.verified`` beside it), so the checksums are not recomputed on every run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from .... import __version__
from ....datasets import BUNDLED_METABOLITES
from ....io import ModelFileError, load_model_file
from ....io._atomic import sweep_target, temporary_path
from ....io._ownership import claim, release
from ..candidates._decoys import BUNDLED_DECOYS
from ..defaults import (
    DEFAULT_CALIBRATION_DECOYS,
    DEFAULT_CALIBRATION_FAMILY,
    DEFAULT_CALIBRATION_FEATURES,
    DEFAULT_FINGERPRINT,
    DEFAULT_GRID,
    DEFAULT_PARAMS,
)
from ._feedback import Feedback
from ._train import train_job


def cache_dir():
    """The folder of iokr's cached files (see the module docstring)."""
    if os.environ.get("IOKR_CACHE_DIR"):
        return Path(os.environ["IOKR_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "iokr"


def default_model_path():
    """Return the path of the cached ready model for this version, bundled data and training settings.

    Returns
    -------
    path : Path
        ``metabolites-model-<version>-<digest>.npz`` in :func:`cache_dir` (the file may not exist yet).
    """
    digest = hashlib.blake2b(digest_size=8)
    for spectra in ready_model_spectra():
        digest.update(Path(spectra).read_bytes())
    # the confidence's settings and decoy table too: a model cached before a new calibration default would keep
    # the old confidence on every later run
    calibration = [DEFAULT_CALIBRATION_DECOYS, DEFAULT_CALIBRATION_FEATURES, DEFAULT_CALIBRATION_FAMILY]
    digest.update(json.dumps([DEFAULT_FINGERPRINT, DEFAULT_PARAMS, DEFAULT_GRID, calibration], sort_keys=True,
                             default=str).encode())
    if DEFAULT_CALIBRATION_DECOYS == "bundled":
        digest.update(Path(BUNDLED_DECOYS).read_bytes())
    return cache_dir() / f"metabolites-model-{__version__}-{digest.hexdigest()}.npz"


def ready_model_spectra():
    """The bundled spectra files the ready model is trained on (positive, then negative)."""
    return [BUNDLED_METABOLITES["spectra"], BUNDLED_METABOLITES["negative_spectra"]]


class CacheError(OSError):
    """The cache folder cannot hold the ready model (one line naming the folder and how to choose another)."""


def check_cache_writable(folder):
    """Raise :class:`CacheError` unless a file can be created in ``folder`` (created if missing).

    Parameters
    ----------
    folder : Path
    """
    probe = temporary_path(Path(folder) / "write-probe")  # named like a temporary: swept if we die right here
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        probe.unlink()
    except OSError as exc:
        source = "IOKR_CACHE_DIR" if os.environ.get("IOKR_CACHE_DIR") else "the default cache folder"
        raise CacheError(f"cannot write the ready model into the cache folder {folder} ({source}): "
                         f"{exc.strerror or exc}; set IOKR_CACHE_DIR to a writable folder, or pass --model.") from None


def _stamp(path):
    info = os.stat(path)
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "inode": info.st_ino}


def _stamp_path(path):
    return path.with_name(f".{path.name}.verified")


def _cached_model_usable(path, log):
    """Whether the cached model at ``path`` exists and passes its checks; a damaged one is removed, with a note."""
    try:
        stamp = _stamp(path)
    except OSError:  # missing, or its folder is not one (the writability check names the problem)
        return False
    try:
        if json.loads(_stamp_path(path).read_text()) == stamp:
            return True
    except (OSError, ValueError):
        pass
    try:
        load_model_file(path, kind="metabolites")
    except ModelFileError as exc:
        log(f"note: the cached ready model is damaged ({exc}); training it again")
        return False
    with contextlib.suppress(OSError):  # only a shortcut for later runs
        _stamp_path(path).write_text(json.dumps(stamp))
    return True


def forget_verified_model(path):
    """Remove a cached model found damaged when read in full, and its verified stamp.

    The next :func:`ensure_default_model` trains it again. Files already gone are no error.

    Parameters
    ----------
    path : str or Path
        The cached model file.
    """
    for target in (_stamp_path(Path(path)), Path(path)):
        with contextlib.suppress(OSError):
            target.unlink()


def _sweep_if_free(path):
    """Remove the temporaries of killed trainings of ``path`` when no live run is training it (cheap: one listing
    of the cache folder; the claim is taken only when there is something to remove)."""
    prefix = f".{path.name}.tmp-"
    try:
        if not any(name.startswith(prefix) for name in os.listdir(path.parent)):
            return
        claim(path)
    except OSError:  # OutputInUseError: a training is under way (its temporary is live); or the folder is gone
        return
    try:
        sweep_target(path)
    finally:
        release(path)


def ensure_default_model(progress=None, log=print):
    """The ready model's path, training and caching it first when it is missing or damaged.

    Parameters
    ----------
    progress : callable, optional
        The progress factory of the training (see :class:`~._feedback.Feedback`).
    log : callable, default=print
        Status lines (the training's start, a note about a damaged cached model).

    Returns
    -------
    path : Path
        The verified cached model.

    Raises
    ------
    CacheError
        The cache folder cannot be written (checked before training).
    """
    path = default_model_path()
    if _cached_model_usable(path, log):
        _sweep_if_free(path)
        return path
    check_cache_writable(path.parent)
    claim(path, wait=True)  # another run training it: wait for it, then use its model
    try:
        sweep_target(path)  # temporaries of trainings killed before they saved
        if _cached_model_usable(path, log):
            return path
        log(f"no ready model yet: training one on the bundled MassBank subsets ([M+H]+ and [M-H]-; about a minute, "
            f"once); cached at {path}")
        feedback = Feedback(log=log) if progress is None else Feedback(progress, log)
        train_job(ready_model_spectra(), path, feedback=feedback)
        with contextlib.suppress(OSError):
            _stamp_path(path).write_text(json.dumps(_stamp(path)))
    finally:
        release(path)
    return path
