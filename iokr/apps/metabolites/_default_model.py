"""The ready model: trained from the MassBank subsets bundled in the package on first use, then cached.

One model file with an ``[M+H]+`` sub-model (the bundled positive spectra) and an ``[M-H]-`` sub-model (the bundled
negative ones): queries of either polarity are ranked (see :mod:`._routing`).

``iokr metabolites identify`` without ``--model`` uses it. The cache folder is ``$IOKR_CACHE_DIR`` when set, else
``$XDG_CACHE_HOME/iokr``, else ``~/.cache/iokr``; the file name carries the package version and a digest of the
bundled spectra and the training settings, so a new release or new data trains a new model and never reuses a stale
one. Training takes about a minute on 2 cores; the model is written atomically, so an interrupted first run leaves
no half file.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ... import __version__
from ...datasets import BUNDLED_METABOLITES
from ._jobs import DEFAULT_FINGERPRINT, DEFAULT_PARAMS, Feedback, train_job
from ._pipeline import DEFAULT_GRID


def cache_dir():
    """The folder of iokr's cached files (see the module docstring)."""
    if os.environ.get("IOKR_CACHE_DIR"):
        return Path(os.environ["IOKR_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "iokr"


def default_model_path():
    """Path of the cached ready model for this version, bundled data and training settings."""
    digest = hashlib.blake2b(digest_size=8)
    for spectra in ready_model_spectra():
        digest.update(Path(spectra).read_bytes())
    digest.update(json.dumps([DEFAULT_FINGERPRINT, DEFAULT_PARAMS, DEFAULT_GRID], sort_keys=True,
                             default=str).encode())
    return cache_dir() / f"metabolites-model-{__version__}-{digest.hexdigest()}.npz"


def ready_model_spectra():
    """The bundled spectra files the ready model is trained on (positive, then negative)."""
    return [BUNDLED_METABOLITES["spectra"], BUNDLED_METABOLITES["negative_spectra"]]


def ensure_default_model(progress=None, log=print):
    """The ready model's path, training and caching it first when it is missing."""
    path = default_model_path()
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    log(f"no ready model yet: training one on the bundled MassBank subsets ([M+H]+ and [M-H]-; about a minute, "
        f"once); cached at {path}")
    feedback = Feedback(log=log) if progress is None else Feedback(progress, log)
    train_job(ready_model_spectra(), path, feedback=feedback)
    return path
