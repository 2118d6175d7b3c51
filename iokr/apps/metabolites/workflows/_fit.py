"""Fitting one sub-model on training spectra: the cross-validated search, the final fit and the confidence
calibration, with the settings of :class:`TrainingConfig` (train and evaluate share it)."""

from __future__ import annotations

import dataclasses
import numbers
import time
from pathlib import Path

import numpy as np

from ....kernels import TrainingGrams
from ....kernels._training_grams import GRAM_STORAGES
from ..candidates._candidate_store import CandidateStore
from ..candidates._decoys import BUNDLED_DECOYS, decoy_lists, decoy_store, read_decoy_table
from ..chemistry._fingerprints import Fingerprinter
from ..defaults import (
    DEFAULT_CALIBRATION_DECOYS,
    DEFAULT_CALIBRATION_FAMILY,
    DEFAULT_CALIBRATION_FEATURES,
    DEFAULT_FINGERPRINT,
    DEFAULT_FOLDS,
    DEFAULT_GRAM_STORAGE,
    DEFAULT_GRID,
    DEFAULT_PARAMS,
    DEFAULT_SEED,
    DEFAULT_SURROGATE,
    SURROGATES,
)
from ..model._confidence import fit_calibration_on_lists, top_margins
from ..model._model import MetaboliteIdentifier
from ..ranking._identify import IdentifySettings  # noqa: F401 - the jobs' settings, imported from here by callers
from ..selection._calibration_examples import calibration_data_record, calibration_examples
from ..selection._pipeline import (
    cross_validate,
    grams_for,
    training_set,
    usable_surrogate,
)
from ._feedback import Feedback


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    """How ``train`` and ``evaluate`` build a model: fingerprint, hyperparameter grid and its cross-validation.

    Parameters
    ----------
    fingerprint : str or dict, default=DEFAULT_FINGERPRINT
        A fingerprint kind (other parameters as in :data:`DEFAULT_FINGERPRINT`) or all :class:`Fingerprinter`
        parameters.
    grid : dict or None, default=None
        Hyperparameter grid searched by cross-validation (:data:`DEFAULT_GRID` when None).
    n_folds : int, default=3
        Cross-validation folds over training structures (1: no search, the first value of each grid entry).
    seed : int, default=0
        Seed of the fold assignment.
    surrogate : {"fold", "formula", "both"}, default=DEFAULT_SURROGATE
        Candidate lists of the cross-validation score (see :func:`~._pipeline.cross_validate`).
    store_path : str or Path, optional
        On-disk candidate store reused between runs (a temporary file, deleted at the end, when None).
    gram_storage : {"file", "csr", "dense"}, default="file"
        Where the base training Grams are kept between cross-validation, calibration and the final fit
        (``storage`` of :meth:`~._model.MetaboliteIdentifier.base_grams`; all exact): "file" holds them in a
        temporary file, out of the process's memory while each fold's search runs.
    prior_weight, prior_neighbors : float, int or None, default=None
        The structure prior of the model (:class:`MetaboliteIdentifier`); None: the app's default
        (:data:`DEFAULT_PARAMS`, chosen by ``benchmarks/realdata_structure_prior.py``). ``prior_weight=0``
        scores candidates by the spectrum alone.
    decoys : "bundled", str, Path or None, default=DEFAULT_CALIBRATION_DECOYS ("bundled")
        Decoy table of the confidence calibration (:mod:`._decoys`: held-out training structures ranked among
        non-library isomers and nearest-mass structures, in lists sized like PubChem lists; features
        :data:`~..defaults.DEFAULT_CALIBRATION_FEATURES`); "bundled": :data:`BUNDLED_DECOYS`; None: lists of
        training structures only (margin and size).
    """

    fingerprint: object = dataclasses.field(default_factory=lambda: dict(DEFAULT_FINGERPRINT))
    grid: dict | None = None
    n_folds: int = DEFAULT_FOLDS
    seed: int = DEFAULT_SEED
    surrogate: str = DEFAULT_SURROGATE
    store_path: object = None
    gram_storage: str = DEFAULT_GRAM_STORAGE
    prior_weight: float | None = None
    prior_neighbors: int | None = None
    decoys: object = DEFAULT_CALIBRATION_DECOYS

    def __post_init__(self):
        # Checked here, before any file is read: a bad surrogate used to train with the fold lists silently, and
        # n_folds="3" or seed="a" to fail deep inside with an error naming no parameter.
        for name, low in (("n_folds", 1), ("seed", 0), ("prior_neighbors", 1)):
            value = getattr(self, name)
            if value is None and name == "prior_neighbors":
                continue
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < low:
                raise ValueError(f"The {name!r} parameter of TrainingConfig must be an int >= {low}. Got {value!r}.")
            object.__setattr__(self, name, int(value))
        for name, choices in (("surrogate", SURROGATES), ("gram_storage", GRAM_STORAGES)):
            if getattr(self, name) not in choices:
                raise ValueError(f"The {name!r} parameter of TrainingConfig must be one of {choices}. "
                                 f"Got {getattr(self, name)!r}.")
        if self.grid is not None and not isinstance(self.grid, dict):
            raise ValueError("The 'grid' parameter of TrainingConfig must be a dict of {parameter: list of values} "
                             f"or None. Got {type(self.grid).__name__}.")

    def fingerprinter(self):
        """Return the :class:`Fingerprinter` of :attr:`fingerprint`.

        Returns
        -------
        fingerprinter : Fingerprinter
            The fingerprint the model's output kernel and the candidates use.
        """
        return _fingerprinter(self.fingerprint)


def _fingerprinter(fingerprint):
    """A :class:`Fingerprinter` from a kind (other parameters as in :data:`DEFAULT_FINGERPRINT`) or a dict."""
    if isinstance(fingerprint, str):
        fingerprint = {**DEFAULT_FINGERPRINT, "kind": fingerprint}
    return Fingerprinter(**fingerprint)


def attach_first_cache(store, caches):
    """Attach the first fingerprint cache (a path or a sequence of paths) holding the store's fingerprint
    parameters; missing files and caches of other parameters are skipped. Returns its path, or ``None``."""
    caches = [caches] if isinstance(caches, (str, Path)) else list(caches or ())
    for cache in caches:
        if Path(cache).exists() and store.attach_cache(cache):
            return cache
    return None


def open_store(path, fingerprinter):
    # "": SQLite's private temporary file (on disk beyond a small page cache, deleted on close), not ":memory:"
    return CandidateStore(path if path else "", fingerprinter)


@dataclasses.dataclass
class FitResult:
    """One fitted model and how it was chosen: the training set, CV table, timings, calibration (None with the
    reason in ``calibration_problem`` when it could not be fitted or was degenerate)."""

    model: object
    train: object
    cv: list
    timings: dict
    calibration: object = None
    calibration_problem: str = ""
    calibration_data: dict = dataclasses.field(default_factory=dict)

    def record(self, **more):
        """The sub-model's record stored in a model file (:class:`~._submodels.TrainedSubmodel` ``extra``)."""
        return {"cv": self.cv, "calibration": self.calibration.to_dict() if self.calibration is not None else None,
                "calibration_problem": self.calibration_problem, "calibration_data": self.calibration_data,
                "n_train_structures": len(self.train.spectra),
                "n_train_spectra": self.train.n_spectra, "licenses": self.train.licenses, "timings": self.timings,
                **more}


def fit_with_cv(spectra, store, cleaning, exclude_keys=(), config=None, feedback=None):
    """Training set, cross-validated hyperparameters, final fit.

    Returns a :class:`FitResult`. ``config.surrogate`` selects the CV lists and score
    of :func:`~._pipeline.cross_validate`; when the training set is too small for isomer-like lists (no shared
    formula in some fold) the fold lists are used, and logged.
    """
    feedback = Feedback() if feedback is None else feedback
    train, timings = training_set_of(spectra, store, cleaning, exclude_keys, feedback.log)
    return fit_training_set(train, config, feedback, timings, store=store)


def training_set_of(spectra, store, cleaning, exclude_keys, log):
    t0 = time.perf_counter()
    train = training_set(spectra, store, cleaning, exclude_keys)
    timings = {"training_set_s": time.perf_counter() - t0}
    log(f"training: {len(train.spectra)} structures ({train.n_spectra} spectra; {train.n_excluded_structures} "
        f"evaluated structures excluded; {train.n_unparsable} unparsable structures dropped)")
    return train, timings


def fit_training_set(train, config=None, feedback=None, timings=None, store=None):
    """Cross-validated hyperparameters, calibration and final fit on a :class:`~._pipeline.TrainingSet` (the part
    of :func:`fit_with_cv` after the training set; the caller may have freed the raw spectra): a
    :class:`FitResult`. ``store`` fingerprints the calibration's decoys (a temporary one when None)."""
    config = TrainingConfig() if config is None else config
    feedback = Feedback() if feedback is None else feedback
    progress, log = feedback.progress, feedback.log
    timings = {} if timings is None else timings
    n_folds, seed, surrogate = config.n_folds, config.seed, config.surrogate
    params = dict(DEFAULT_PARAMS)
    for key in ("prior_weight", "prior_neighbors"):
        if getattr(config, key) is not None:
            params[key] = getattr(config, key)
    grid = DEFAULT_GRID if config.grid is None else config.grid
    n_points = int(np.prod([len(v) for v in grid.values()]))
    # read before the cross-validation, so that a bad decoy file is reported before minutes of work
    decoy_path = BUNDLED_DECOYS if config.decoys == "bundled" else config.decoys
    decoy_table = read_decoy_table(decoy_path) if decoy_path is not None and n_folds > 1 else None
    t0 = time.perf_counter()
    cache = {}  # the base Grams cross-validation computed, reused by the calibration and the final fit
    if n_points > 1 and n_folds > 1:
        used = usable_surrogate(train, surrogate, n_folds, seed)
        if used != surrogate:
            log(f"cross-validation: no same-formula training structures in some fold; surrogate lists "
                f"{used!r} instead of {surrogate!r}")
        best, table = cross_validate(train, params, grid, n_folds=n_folds, seed=seed,
                                     progress=progress(n_folds * n_points, "cross-validation fits"),
                                     surrogate=used, gram_cache=cache, gram_storage=config.gram_storage)
        for row in table:
            row["surrogate"] = used
    else:
        best, table = {**params, **{k: v[0] for k, v in grid.items()}}, []
    timings["cross_validation_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = MetaboliteIdentifier(**best)
    grams = grams_for(cache, best)
    cache.clear()
    if grams is None:
        with progress(len(model.kernels), "training Gram blocks (one per spectrum kernel)") as tick:
            grams = TrainingGrams.of(model.base_grams(train.spectra, progress=tick, storage=config.gram_storage))
    calibration, problem, data = None, "no cross-validation folds", {}
    if n_folds > 1:
        try:
            decoys = None
            if decoy_table is not None:
                decoys = decoy_lists(train.formulas, train.keys, decoy_table,
                                     decoy_store(decoy_path, store, config.fingerprinter()), seed=seed)
                unparsable = decoy_table.n_without_formula  # rows dropped by the reader: said, not silent
                log(f"confidence: {decoys.record['n_decoys']} decoys from {decoy_path} "
                    f"({decoys.record['n_structures_with_decoy_isomers']} training structures have decoy isomers"
                    + (f"; {unparsable} rows unparsable, left out" if unparsable else "") + ")")
            # without decoys: the issue #15 calibration (logistic on margin and size)
            family = DEFAULT_CALIBRATION_FAMILY if decoys is not None else "logistic"
            features = DEFAULT_CALIBRATION_FEATURES if decoys is not None and family == "logistic" else ()
            data = calibration_data_record(decoys, n_folds, features, family)
            with progress(n_folds, "confidence calibration folds") as tick:
                scores, truth = calibration_examples(train, best, n_folds, seed, grams, progress=tick, decoys=decoys)
            correct = top_margins(scores, truth)[2]
            data["n_examples"] = int(sum(len(s) > 0 for s in scores))
            data["n_right_top_hits"] = int(np.count_nonzero(correct))
            calibration, problem = fit_calibration_on_lists(scores, truth, features, family), ""
            data["size_weight_clipped"] = calibration.size_weight_clipped
        except ValueError as exc:
            problem = str(exc)
            log(f"confidence: not calibrated ({exc})")
    timings["calibration_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    # The combined Gram is formed before the IOKR fit so that the base Grams are freed first.
    K, weights = model.combined_training_gram(grams, None, train.Y)
    diags = grams.diags
    del grams
    model.fit(train.spectra, train.Y, training_gram=(K, weights, diags))
    del K
    timings["final_fit_s"] = time.perf_counter() - t0
    return FitResult(model, train, table, timings, calibration, problem, data)
