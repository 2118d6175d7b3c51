"""The train and evaluate jobs, from paths to results (``identify`` is in :mod:`._identify`).

Each job takes paths, one settings object (:class:`TrainingConfig`) and one :class:`Feedback` (progress bars and
log lines), and returns plain data (dicts, lists); :mod:`._api` gives them typed results.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from ....exceptions import IOKRDataError
from ....kernels import TrainingGrams
from ..candidates._candidates import CandidateStore, read_candidate_lists
from ..candidates._decoys import BUNDLED_DECOYS, decoy_lists, decoy_store, read_decoy_table
from ..chemistry._fingerprints import Fingerprinter
from ..defaults import (
    DEFAULT_CALIBRATION_DECOYS,
    DEFAULT_CALIBRATION_FEATURES,
    DEFAULT_FINGERPRINT,
    DEFAULT_FOLDS,
    DEFAULT_GRAM_STORAGE,
    DEFAULT_GRID,
    DEFAULT_MIN_STRUCTURES,
    DEFAULT_PARAMS,
    DEFAULT_SEED,
    DEFAULT_SURROGATE,
)
from ..importing._readers import read_spectra
from ..model._confidence import fit_calibration_on_lists, top_margins
from ..model._model import MetaboliteIdentifier
from ..model._routing import DEFAULT_TYPES
from ..model._submodels import TrainedSubmodel, save_metabolite_model
from ..model._training import (
    precursor_types,
    read_training_files,
    structures_per_type,
    types_to_train,
)
from ..ranking._identify import IdentifySettings  # noqa: F401 - the jobs' settings, imported from here by callers
from ..selection._calibration_examples import calibration_data_record, calibration_examples
from ..selection._pipeline import (
    Cleaning,
    cross_validate,
    evaluate_lists,
    grams_for,
    query_spectra,
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

    def fingerprinter(self):
        """The :class:`Fingerprinter` of :attr:`fingerprint`."""
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


def _store(path, fingerprinter):
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
    train, timings = _training_set(spectra, store, cleaning, exclude_keys, feedback.log)
    return fit_training_set(train, config, feedback, timings, store=store)


def _training_set(spectra, store, cleaning, exclude_keys, log):
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
                log(f"confidence: {decoys.record['n_decoys']} decoys from {decoy_path} "
                    f"({decoys.record['n_structures_with_decoy_isomers']} training structures have decoy isomers)")
            features = DEFAULT_CALIBRATION_FEATURES if decoys is not None else ()
            data = calibration_data_record(decoys, n_folds, features)
            with progress(n_folds, "confidence calibration folds") as tick:
                scores, truth = calibration_examples(train, best, n_folds, seed, grams, progress=tick, decoys=decoys)
            correct = top_margins(scores, truth)[2]
            data["n_examples"] = int(sum(len(s) > 0 for s in scores))
            data["n_right_top_hits"] = int(np.count_nonzero(correct))
            calibration, problem = fit_calibration_on_lists(scores, truth, features), ""
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


def _as_paths(paths):
    return [paths] if isinstance(paths, (str, Path)) else list(paths)


def _read_training_spectra(paths, log):
    """Training spectra of every file (structures required) and each file's read summary."""
    return read_training_files(paths, lambda path: read_spectra(path, require_structure=True), log)


def _training_types(spectra, reads, exclude, config, min_structures, log):
    """Precursor type of every training spectrum, the types that get a sub-model, and the model file's record of
    both (``training_files``, ``precursor_type_counts``, ``structures_per_precursor_type``, ``min_structures``)."""
    types, counts = precursor_types(spectra, log)
    n_structures = structures_per_type(spectra, types, exclude)
    chosen = types_to_train(n_structures, min_structures, config.n_folds, log)
    record = {"training_files": reads, "precursor_type_counts": counts,
              "structures_per_precursor_type": dict(sorted(n_structures.items())), "min_structures": min_structures}
    return types, chosen, record


def train_job(spectra_paths, output, config=None, *, exclude_candidates=None, feedback=None,
              min_structures=DEFAULT_MIN_STRUCTURES):
    """Train one sub-model per precursor type with enough structures on spectra files and save the model file.

    Parameters
    ----------
    spectra_paths : str, Path or sequence of them
        Training spectra with structures; their precursor types come from each spectrum's adduct, ion mode and
        charge (see :mod:`._training`).
    output : str or Path
        The model file to write.
    config : TrainingConfig, optional
    exclude_candidates : str or Path, optional
        Candidate lists whose true structures are left out of training.
    feedback : Feedback, optional
    min_structures : int, default=DEFAULT_MIN_STRUCTURES
        Structures a precursor type needs for its own sub-model (the most frequent type is always trained).
    """
    config = TrainingConfig() if config is None else config
    feedback = Feedback() if feedback is None else feedback
    log = feedback.log
    fingerprinter = config.fingerprinter()
    store = _store(config.store_path, fingerprinter)
    exclude = []
    if exclude_candidates:
        exclude = [lst.true_key for lst in read_candidate_lists(exclude_candidates, store) if lst.true_key]
    spectra, reads = _read_training_spectra(_as_paths(spectra_paths), log)
    types, chosen, record = _training_types(spectra, reads, exclude, config, min_structures, log)
    cleaning = Cleaning()
    submodels, out = [], {}
    for precursor_type in chosen:
        rows = np.flatnonzero(types == precursor_type)
        log(f"sub-model {precursor_type}: {rows.size} spectra")
        fit = fit_with_cv(spectra[rows], store, cleaning, exclude, config, feedback)
        submodels.append(TrainedSubmodel(precursor_type, fit.model, fit.record()))
        out[precursor_type] = {"n_train": len(fit.train.spectra), "cv": fit.cv, "timings": fit.timings,
                               "chosen": {k: _jsonable(v) for k, v in fit.model.get_params().items()},
                               "weights": fit.model.weights_.tolist(), "calibration_problem": fit.calibration_problem}
    del spectra
    save_metabolite_model(output, submodels, fingerprinter, cleaning, extra=record)
    first = out[chosen[0]]
    return {"model": str(output), "n_train": sum(v["n_train"] for v in out.values()), "submodels": out,
            "cv": first["cv"], "timings": first["timings"], "chosen": first["chosen"], "weights": first["weights"]}


def _jsonable(v):
    if isinstance(v, tuple):
        return list(v)
    return v


def evaluate_job(spectra_paths, candidates_path, config=None, *, model_output=None, fingerprint_cache=None,
                 feedback=None, min_structures=DEFAULT_MIN_STRUCTURES):
    """Structure-disjoint evaluation on candidate lists, per polarity (see :func:`~._pipeline.evaluate_lists`).

    One sub-model per precursor type with enough structures is trained on all given files without the lists' true
    structures (as :func:`train_job`); the lists are queried with the spectra of their true structures of each
    polarity's default type (:data:`~._routing.DEFAULT_TYPES`: ``[M+H]+`` spectra ranked by the ``[M+H]+``
    sub-model, ``[M-H]-`` spectra by the ``[M-H]-`` one).

    Parameters
    ----------
    spectra_paths : str, Path or sequence of them
        Spectra with structures.
    candidates_path : str or Path
        Candidate lists naming their true structures.
    config : TrainingConfig, optional
    model_output : str or Path, optional
        Where to save the model trained without the lists' true structures.
    fingerprint_cache : str, Path or sequence of them, optional
        :func:`export_fingerprint_cache` files; the first one holding this fingerprint's parameters is attached
        (missing files and other parameters are skipped).
    feedback : Feedback, optional
    min_structures : int, default=DEFAULT_MIN_STRUCTURES

    Returns
    -------
    summary : dict
        ``per_polarity``: ``{"positive": {...}, "negative": {...}}`` for the polarities evaluated, each with its
        top-k tables, training counts, CV table and timings; the positive polarity's (else the first one's) keys
        are also at the top level, as before polarities.
    """
    t_start = time.perf_counter()
    config = TrainingConfig() if config is None else config
    feedback = Feedback() if feedback is None else feedback
    progress, log = feedback.progress, feedback.log
    fingerprinter = config.fingerprinter()
    store = _store(config.store_path, fingerprinter)
    attach_first_cache(store, fingerprint_cache)
    paths = _as_paths(spectra_paths)
    spectra, reads = _read_training_spectra(paths, log)
    t0 = time.perf_counter()
    with progress(None, "reading candidate lists") as tick:
        lists = read_candidate_lists(candidates_path, store, progress=tick)
    t_lists = time.perf_counter() - t0
    n_bad = sum(lst.n_unparsable for lst in lists)
    log(f"{candidates_path}: {len(lists)} candidate lists, {sum(len(lst) for lst in lists)} unique candidates, "
        f"{n_bad} unparsable structures, {sum(lst.n_duplicates for lst in lists)} duplicates merged")
    exclude = [lst.true_key for lst in lists if lst.true_key]
    if not exclude:
        raise IOKRDataError(f"The candidate lists in {candidates_path} do not name their true structures "
                            "('_id=<InChIKey>' in the file name); they cannot be evaluated.")
    types, chosen, record = _training_types(spectra, reads, exclude, config, min_structures, log)
    cleaning = Cleaning()
    fits, queries = {}, {}
    for precursor_type in chosen:
        part = spectra[np.flatnonzero(types == precursor_type)]
        log(f"sub-model {precursor_type}: {len(part)} spectra")
        train, timings = _training_set(part, store, cleaning, exclude, log)
        # From here on only the spectra of the lists' true structures are read (the queries): the others are freed
        # before the cross-validation, where the job's memory peaks.
        if precursor_type in DEFAULT_TYPES.values():
            queries[precursor_type] = query_spectra(part, exclude)
        del part
        fits[precursor_type] = fit_training_set(train, config, feedback, timings, store=store)
        timings["candidate_lists_s"] = t_lists
    del spectra
    store.detach_cache()  # every structure scored from here on is in the store (about 60 MB for the bundled cache)
    per_polarity = {}
    for mode, precursor_type in DEFAULT_TYPES.items():
        if precursor_type not in fits or not len(queries[precursor_type]):
            log(f"evaluation: no {mode} {precursor_type} sub-model or no {precursor_type} spectrum of a list's true "
                f"structure; the {mode} polarity is not evaluated")
            continue
        fit = fits[precursor_type]
        t0 = time.perf_counter()
        summary = evaluate_lists(fit.model, queries[precursor_type], lists, store, cleaning,
                                 progress=progress(2, f"scoring {mode} queries"), calibration=fit.calibration)
        fit.timings["scoring_s"] = time.perf_counter() - t0
        summary.update(_fit_summary(fit, precursor_type, config.n_folds))
        per_polarity[mode] = summary
    if not per_polarity:
        raise IOKRDataError("No candidate list has an [M+H]+ or [M-H]- spectrum of its true structure among the "
                        "given spectra; nothing to evaluate.")
    if model_output:
        save_metabolite_model(model_output, [TrainedSubmodel(t, fits[t].model, fits[t].record()) for t in chosen],
                              fingerprinter, cleaning, extra=record)
    top = dict(per_polarity.get("positive") or next(iter(per_polarity.values())))
    top["timings_s"] = {**top["timings_s"], "total_s": time.perf_counter() - t_start}
    top.update({"spectra_read": reads[str(paths[0])] if len(paths) == 1 else reads,
                "n_unparsable_candidates": n_bad, "fingerprint": fingerprinter.params(), "cleaning": cleaning.params(),
                "precursor_types": {"counts": record["precursor_type_counts"],
                                    "structures": record["structures_per_precursor_type"],
                                    "submodels": chosen, "min_structures": min_structures},
                "per_polarity": per_polarity})
    return top


def _fit_summary(fit, precursor_type, n_folds):
    """What :func:`evaluate_job` reports of one sub-model's training."""
    model, table = fit.model, fit.cv
    return {
        "precursor_type": precursor_type,
        "protocol": "structure-disjoint: the lists' true structures (first InChIKey block) are excluded from "
                    "training; one merged spectrum per training structure; hyperparameters by "
                    f"{n_folds}-fold cross-validation over training structures (CV lists: see cv_surrogate); "
                    f"queries are the {precursor_type} spectra of the true structures, ranked by the "
                    f"{precursor_type} sub-model; per_structure = one query per list, the merged spectrum of all "
                    "the true structure's spectra; per_spectrum = every single spectrum of the true structure as a "
                    "query; percentages over lists (resp. spectra) that have query spectra",
        "n_train_structures": len(fit.train.spectra), "n_train_spectra": fit.train.n_spectra,
        "train_licenses": fit.train.licenses,
        "chosen": {k: _jsonable(v) for k, v in model.get_params().items()}, "weights": model.weights_.tolist(),
        "cv": table, "cv_surrogate": table[0]["surrogate"] if table else None, "timings_s": dict(fit.timings),
        "calibration_problem": fit.calibration_problem, "calibration_data": fit.calibration_data,
    }

