"""The three jobs behind ``iokr metabolites train | identify | evaluate``, from paths to results.

Each job takes paths, one settings object (:class:`TrainingConfig` for train / evaluate, :class:`IdentifySettings`
for identify) and one :class:`Feedback` (progress bars and log lines), and returns plain data (dicts, lists) for
the command line to print.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from ...exceptions import IOKRDataError
from ._adducts import AdductError, parse_adduct
from ._calibration_examples import calibration_examples
from ._candidate_sources import open_source
from ._candidates import CandidateStore, read_candidate_lists
from ._confidence import Calibration, fit_calibration, top_margins
from ._fingerprints import Fingerprinter
from ._grams import TrainingGrams
from ._hypotheses import annotated_kernels, annotation_totals
from ._identify import RESERVED_COLUMNS, IdentifySettings, plan_queries, query_ids, score_queries
from ._model import MetaboliteIdentifier
from ._persist import load_identifier, read_model, save_identifier
from ._pipeline import (
    DEFAULT_GRID,
    DEFAULT_SURROGATE,
    Cleaning,
    cross_validate,
    evaluate_lists,
    grams_for,
    query_spectra,
    training_set,
    usable_surrogate,
)
from ._readers import read_spectra

#: Fingerprint of ``train`` and ``evaluate`` (:class:`Fingerprinter` parameters): Morgan radius 2 counts + MACCS.
#: The isomer-list cross-validation of ``reports/metabolites.md`` preferred radius 1 by a hair; radius 1 was
#: rejected because it cannot tell isomers apart: 4.8 % of PubChem isomer candidates share their whole
#: fingerprint with another candidate of their list (0.3 % at radius 2), which caps top-1 on those lists.
DEFAULT_FINGERPRINT = {"kind": "morgan_counts+maccs", "n_bits": 2048, "radius": 2}

#: Base model settings shared by train and evaluate (the grid's keys are chosen by cross-validation).
DEFAULT_PARAMS = {"kernels": ("ppk", "ppk_nl", "binned", "binned_nl"), "weights": "alignf", "sigma_mz": 0.005,
                  "sigma_intensity": 0.25, "output_kernel": "gaussian_tanimoto",
                  # the structure prior, chosen by cross-validation on training structures with decoy lists
                  # (benchmarks/realdata_structure_prior.py, reports/metabolites.md)
                  "prior_weight": 0.3, "prior_neighbors": 1}


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
    return _Silent()


@dataclasses.dataclass(frozen=True)
class Feedback:
    """Where a job reports: ``progress(total, label)`` gives a stage's progress callable, ``log(message)`` a line."""

    progress: object = _noop_progress
    log: object = print


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
    """

    fingerprint: object = dataclasses.field(default_factory=lambda: dict(DEFAULT_FINGERPRINT))
    grid: dict | None = None
    n_folds: int = 3
    seed: int = 0
    surrogate: str = DEFAULT_SURROGATE
    store_path: object = None
    gram_storage: str = "file"
    prior_weight: float | None = None
    prior_neighbors: int | None = None

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


def fit_with_cv(spectra, store, cleaning, exclude_keys=(), config=None, feedback=None):
    """Training set, cross-validated hyperparameters, final fit.

    Returns ``(model, train, cv_table, timings, calibration)``. ``config.surrogate`` selects the CV lists and score
    of :func:`~._pipeline.cross_validate`; when the training set is too small for isomer-like lists (no shared
    formula in some fold) the fold lists are used, and logged.
    """
    feedback = Feedback() if feedback is None else feedback
    train, timings = _training_set(spectra, store, cleaning, exclude_keys, feedback.log)
    return fit_training_set(train, config, feedback, timings)


def _training_set(spectra, store, cleaning, exclude_keys, log):
    t0 = time.perf_counter()
    train = training_set(spectra, store, cleaning, exclude_keys)
    timings = {"training_set_s": time.perf_counter() - t0}
    log(f"training: {len(train.spectra)} structures ({train.n_spectra} spectra; {train.n_excluded_structures} "
        f"evaluated structures excluded; {train.n_unparsable} unparsable structures dropped)")
    return train, timings


def fit_training_set(train, config=None, feedback=None, timings=None):
    """Cross-validated hyperparameters, calibration and final fit on a :class:`~._pipeline.TrainingSet` (the part
    of :func:`fit_with_cv` after the training set; the caller may have freed the raw spectra)."""
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
    calibration = None
    if n_folds > 1:
        try:
            with progress(n_folds, "confidence calibration folds") as tick:
                examples = calibration_examples(train, best, n_folds, seed, grams, progress=tick)
            calibration = fit_calibration(*examples)
        except ValueError as exc:
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
    return model, train, table, timings, calibration


def training_precursor_types(spectra, log=print):
    """Canonical precursor types of training spectra; spectra without one (or with an unreadable one) are
    counted and logged, and taken as ``[M+H]+`` when no spectrum names a type."""
    types, n_unknown = set(), 0
    for meta in spectra.metadata:
        try:
            types.add(parse_adduct(meta.get("adduct")).name)
        except AdductError:
            n_unknown += 1
    if not types:
        log(f"training: no spectrum names its precursor type; the model is recorded as {LEGACY_PRECURSOR_TYPES[0]}")
        return list(LEGACY_PRECURSOR_TYPES)
    if n_unknown:
        log(f"training: {n_unknown} spectra name no readable precursor type; the model is recorded as "
            f"{', '.join(sorted(types))}")
    return sorted(types)


def _model_extra(table, calibration, precursor_types, **more):
    return {"cv": table, "precursor_types": precursor_types,
            "calibration": calibration.to_dict() if calibration is not None else None, **more}


def train_job(spectra_path, output, config=None, *, exclude_candidates=None, feedback=None):
    """Train on a spectra file (optionally excluding the true structures of candidate lists) and save the model.

    Parameters
    ----------
    spectra_path, output : str or Path
        Training spectra with structures; the model file to write.
    config : TrainingConfig, optional
    exclude_candidates : str or Path, optional
        Candidate lists whose true structures are left out of training.
    feedback : Feedback, optional
    """
    config = TrainingConfig() if config is None else config
    feedback = Feedback() if feedback is None else feedback
    log = feedback.log
    fingerprinter = config.fingerprinter()
    store = _store(config.store_path, fingerprinter)
    spectra, report = read_spectra(spectra_path, require_structure=True)
    log(f"{spectra_path}: {report.summary()}")
    exclude = []
    if exclude_candidates:
        exclude = [lst.true_key for lst in read_candidate_lists(exclude_candidates, store) if lst.true_key]
    cleaning = Cleaning()
    model, train, table, timings, calibration = fit_with_cv(spectra, store, cleaning, exclude, config, feedback)
    extra = _model_extra(table, calibration, training_precursor_types(spectra, log), timings=timings,
                         licenses=train.licenses)
    save_identifier(output, model, fingerprinter, cleaning, extra=extra)
    return {"model": str(output), "n_train": len(train.spectra), "cv": table, "timings": timings,
            "chosen": {k: _jsonable(v) for k, v in model.get_params().items()}, "weights": model.weights_.tolist()}


def _jsonable(v):
    if isinstance(v, tuple):
        return list(v)
    return v


#: Precursor type of model files written before models recorded theirs: iokr trained only on the shared
#: MassBank [M+H]+ spectra then.
LEGACY_PRECURSOR_TYPES = ("[M+H]+",)


def model_precursor_types(meta):
    """Canonical precursor types a model file was trained on (see :data:`LEGACY_PRECURSOR_TYPES`)."""
    return set((meta.get("extra") or {}).get("precursor_types") or LEGACY_PRECURSOR_TYPES)


def identify_job(model_path, spectra_path, candidates_path, settings=None, *, store_path=None, feedback=None,
                 candidate_sink=None):
    """Rank candidates for every query spectrum of a file (see :mod:`._identify`).

    Parameters
    ----------
    model_path : str or Path
    spectra_path : str or Path
        MGF, MSP, mzML, mzXML, JSON or MassBank JSONL (plain or gzip).
    candidates_path : str or Path
        An indexed structure database, one CSV/TSV/SDF, or a folder / ``.tar.gz`` of per-formula lists.
    settings : IdentifySettings, optional
    store_path : str or Path, optional
        On-disk store for candidates of a CSV/SDF/list source (in memory when None).
    feedback : Feedback, optional
    candidate_sink : callable, optional
        ``candidate_sink(candidate_columns) -> write(row)``: the top-k rows are passed to ``write`` as they are
        ranked (memory stays that of one batch) instead of being collected in ``result["candidates"]``.

    Returns
    -------
    result : dict
        ``identifications`` (one dict per query), ``candidates`` (top-k rows; empty with a ``candidate_sink``),
        ``candidate_columns``, ``statuses`` (count per status), ``parameters`` (the run's settings and sources).
    """
    from threadpoolctl import threadpool_limits  # noqa: PLC0415 - threadpoolctl is optional


    settings = IdentifySettings() if settings is None else settings
    feedback = Feedback() if feedback is None else feedback
    progress, log = feedback.progress, feedback.log
    # The cheap checks first (the model file's integrity, the user's files); the model's refit comes last.
    contents = read_model(model_path)
    fingerprinter = contents[2]
    spectra, report = read_spectra(spectra_path, require_precursor=False, keep_empty=True,
                                   id_field=settings.query_id_field)
    log(f"{spectra_path}: {report.summary()}")
    ids = query_ids(spectra.metadata, settings.query_id_field)
    if ids.note:
        log(f"query ids: {ids.note}")
    source = open_source(candidates_path, fingerprinter, store_path, progress=progress, reserved=RESERVED_COLUMNS)
    log(f"candidates: {source.describe()}")
    if source.renamed:
        log("candidate columns renamed (their names are output columns): "
            + ", ".join(f"{c} -> {n}" for c, n in source.renamed.items()))
    # One BLAS thread for the refit of the model's factorization: a 2-thread factorization of a few thousand rows
    # is 10-30 times slower when the other core is busy, and barely faster when it is not.
    with threadpool_limits(limits=1):
        model, fingerprinter, cleaning, meta = load_identifier(model_path, contents)
    adducts = model_precursor_types(meta)
    calibration = (meta.get("extra") or {}).get("calibration")
    calibration = Calibration.from_dict(calibration) if calibration else None
    if settings.prior_weight is not None and settings.prior_weight != model.prior_weight:
        log(f"structure prior weight {settings.prior_weight} instead of the model's {model.prior_weight}: the "
            "confidence calibration holds for the model's weight only, no confidence is reported")
        model.set_params(prior_weight=settings.prior_weight)
        calibration = None
    cleaned = cleaning.single(spectra)
    cleaned = cleaning.merged(cleaned, groups=list(range(len(cleaned))))[0]
    queries = plan_queries(spectra, cleaned.n_peaks, adducts, source, settings, ids=ids)
    n_ok = sum(q.status == "ok" for q in queries)
    identifications, candidates = {}, []
    write = candidates.append if candidate_sink is None else candidate_sink(source.columns)
    for q, scores in score_queries(model, cleaned, queries, source, fingerprinter, settings,
                                   progress(n_ok, "scoring queries")):
        order = np.argsort(-scores, kind="stable")[:settings.top_k]
        margins, sizes, _ = top_margins([scores])
        confidence = calibration.probability(margins, sizes)[0] if calibration is not None else None
        records = source.records(q.candidates[order])
        # the structure prior of each written candidate (its part of the score is prior_weight x this value)
        written, back = np.unique(q.candidates[order], return_inverse=True)
        prior = model.structure_prior(source.fingerprints(written, fingerprinter))[back]
        for rank, (j, record, p) in enumerate(zip(order, records, prior, strict=True), 1):
            write({"query_id": q.query_id, "rank": rank, **record, "score": f"{scores[j]:.6g}",
                   "structure_prior": f"{p:.4f}"})
        identifications[q.row] = {**records[0], "score": f"{scores[order[0]]:.6g}",
                                  "confidence": "" if confidence is None else f"{confidence:.3f}"}
    rows, statuses = [], {}
    for q in queries:
        statuses[q.status] = statuses.get(q.status, 0) + 1
        rows.append({"query_id": q.query_id, "precursor_mz": "" if not np.isfinite(q.precursor_mz) else
                     f"{q.precursor_mz:.5f}", "adduct": q.adduct, "query_formula": q.formula, "lookup": q.lookup,
                     "n_candidates": int(q.candidates.size), **identifications.get(q.row, {}), "status": q.status,
                     "detail": q.detail, "annotation": q.annotation})
    parameters = {"model": str(model_path), "model_precursor_types": sorted(adducts),
                  "calibrated": calibration is not None, "spectra": str(spectra_path),
                  "spectra_read": report.summary(), "candidates": str(candidates_path),
                  "candidate_source": source.describe(), "candidate_columns_renamed": source.renamed,
                  "top_k": settings.top_k, "ppm": settings.ppm,
                  "query_id_field": settings.query_id_field, "adduct_policy": settings.adduct_policy,
                  "query_ids": {"field": ids.field_used, "note": ids.note},
                  "fingerprint": fingerprinter.params(), "statuses": statuses,
                  "structure_prior": {"weight": model.prior_weight, "neighbors": model.prior_neighbors},
                  "annotation": annotation_totals([q.hypotheses for q in queries]) if annotated_kernels(model) else
                  "not used (the model has no annotated kernels)"}
    if annotated_kernels(model):
        totals = parameters["annotation"]
        falls = ", ".join(f"{k}={v}" for k, v in totals["fallbacks"].items()) or "none"
        log(f"annotation: {totals['queries_annotated']}/{totals['queries']} scored queries annotated under at least "
            f"one formula; {totals['hypotheses_annotated']}/{totals['formula_hypotheses']} formula hypotheses "
            f"annotated, fallbacks to the unannotated kernels: {falls}; "
            f"{totals['peaks_above_precursor_dropped_by_cleaning']} peaks above the precursor dropped by cleaning, "
            f"{totals['peaks_above_precursor']} left unannotated")
    return {"identifications": rows, "candidates": candidates, "candidate_columns": source.columns,
            "statuses": statuses, "parameters": parameters}


def evaluate_job(spectra_path, candidates_path, config=None, *, model_output=None, fingerprint_cache=None,
                 feedback=None):
    """Structure-disjoint evaluation on candidate lists (see :func:`~._pipeline.evaluate_lists`).

    Parameters
    ----------
    spectra_path, candidates_path : str or Path
        Spectra with structures; candidate lists naming their true structures.
    config : TrainingConfig, optional
    model_output : str or Path, optional
        Where to save the model trained without the lists' true structures.
    fingerprint_cache : str, Path or sequence of them, optional
        :func:`export_fingerprint_cache` files; the first one holding this fingerprint's parameters is attached
        (missing files and other parameters are skipped).
    feedback : Feedback, optional
    """
    t_start = time.perf_counter()
    config = TrainingConfig() if config is None else config
    feedback = Feedback() if feedback is None else feedback
    progress, log = feedback.progress, feedback.log
    n_folds = config.n_folds
    fingerprinter = config.fingerprinter()
    store = _store(config.store_path, fingerprinter)
    attach_first_cache(store, fingerprint_cache)
    spectra, report = read_spectra(spectra_path, require_structure=True)
    log(f"{spectra_path}: {report.summary()}")
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
    cleaning = Cleaning()
    train, timings = _training_set(spectra, store, cleaning, exclude, log)
    # From here on only the spectra of the lists' true structures are read (the queries): the others are freed
    # before the cross-validation, where the job's memory peaks.
    precursor_types = training_precursor_types(spectra, log) if model_output else None
    spectra = query_spectra(spectra, exclude)
    model, train, table, timings, calibration = fit_training_set(train, config, feedback, timings)
    store.detach_cache()  # every structure scored from here on is in the store (about 60 MB for the bundled cache)
    timings["candidate_lists_s"] = t_lists
    t0 = time.perf_counter()
    summary = evaluate_lists(model, spectra, lists, store, cleaning, progress=progress(2, "scoring queries"),
                             calibration=calibration)
    timings["scoring_s"] = time.perf_counter() - t0
    timings["total_s"] = time.perf_counter() - t_start
    if model_output:
        save_identifier(model_output, model, fingerprinter, cleaning,
                        extra=_model_extra(table, calibration, precursor_types))
    summary.update({
        "spectra_read": report.summary(), "n_unparsable_candidates": n_bad,
        "protocol": "structure-disjoint: the lists' true structures (first InChIKey block) are excluded from "
                    "training; one merged spectrum per training structure; hyperparameters by "
                    f"{n_folds}-fold cross-validation over training structures (CV lists: see cv_surrogate); "
                    "per_structure = one query per list, the merged spectrum of all the true structure's spectra; "
                    "per_spectrum = every single spectrum of the true structure as a query; percentages over lists "
                    "(resp. spectra) that have query spectra",
        "n_train_structures": len(train.spectra), "n_train_spectra": train.n_spectra,
        "train_licenses": train.licenses,
        "chosen": {k: _jsonable(v) for k, v in model.get_params().items()}, "weights": model.weights_.tolist(),
        "cv": table, "cv_surrogate": table[0]["surrogate"] if table else None, "timings_s": timings,
        "fingerprint": fingerprinter.params(), "cleaning": cleaning.params(),
    })
    return summary
