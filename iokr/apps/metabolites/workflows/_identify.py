"""Rank candidates for every query of a spectra file with a model file's sub-models (``identify``).

The per-query plan (precursor type, formula or mass lookup) is :func:`~..ranking._identify.plan_queries`, the
scoring in batches :func:`~..ranking._identify.score_queries`, and which sub-model ranks a query
:mod:`~..model._routing`. The results are typed (:class:`IdentifyResults`); :mod:`..exporting` writes them.
"""

from __future__ import annotations

import numpy as np

from ..candidates._candidate_sources import open_source
from ..importing._readers import read_spectra
from ..model._hypotheses import annotated_kernels, annotation_totals
from ..model._persist import read_model
from ..model._submodels import load_metabolite_model
from ..ranking._identify import RESERVED_COLUMNS, IdentifySettings, plan_queries, query_ids, score_queries
from ._arguments import check_exists, check_path, check_settings
from ._default_model import ensure_default_model
from ._feedback import Feedback
from ._results import IdentifyResults


def identify(spectra, candidates, model=None, settings=None, *, store=None, feedback=None, candidate_sink=None):
    """Rank candidate structures for every query spectrum of a file.

    Parameters
    ----------
    spectra : str or Path
        MGF, MSP, mzML, mzXML, JSON or MassBank JSONL (plain or gzip).
    candidates : str or Path
        An indexed structure database (``iokr metabolites index``), one CSV/TSV/SDF, or a folder / ``.tar.gz`` of
        per-formula lists.
    model : str or Path, optional
        A model file (``iokr metabolites train``); None: the ready model (trained from the bundled spectra on first
        use, then cached; see :func:`ensure_default_model`).
    settings : IdentifySettings, optional
        The top-k, mass window, query ids, adduct policy, structure prior weight, ion mode of the queries whose
        file states none (defaults: :mod:`..defaults`).
    store : str or Path, optional
        On-disk store for candidates of a CSV/SDF/list source (in memory when None).
    feedback : Feedback, optional
        Progress bars and log lines; None: log lines printed, no progress bars (``Feedback(log=lambda line: None)``
        for silence).
    candidate_sink : callable, optional
        ``candidate_sink(candidate_columns) -> write(row)``: the top-k rows are passed to ``write`` as they are
        ranked (memory stays that of one batch; e.g. :class:`~..exporting.CandidateTableWriter`) instead of being
        kept in ``results.candidates``.

    Returns
    -------
    results : IdentifyResults
        One typed row per query (``identifications``), the top-k candidates (``candidates``), the run's
        ``parameters``; ``results.write(folder)`` writes the command line's output folder.

    Raises
    ------
    TypeError
        A parameter of the wrong type (e.g. a :class:`Spectra` instead of its file's path).
    FileNotFoundError
        ``spectra``, ``candidates`` or ``model`` does not exist (checked before the ready model is trained).
    """
    check_path(spectra, "spectra", "identify")
    check_path(candidates, "candidates", "identify")
    check_path(model, "model", "identify", optional=True)
    check_path(store, "store", "identify", optional=True)
    settings = check_settings(settings, IdentifySettings, "settings", "identify")
    for name, path in (("spectra", spectra), ("candidates", candidates), ("model", model)):
        check_exists(path, name, "identify")  # before the ready model's training (minutes) or any reading
    feedback = Feedback() if feedback is None else feedback
    progress, log = feedback.progress, feedback.log
    model_path = ensure_default_model(progress=progress, log=log) if model is None else model
    # The cheap checks first (the model file's integrity, the user's files); the sub-models' loading comes last.
    contents = read_model(model_path)
    fingerprinter = contents[2]
    queries_read, report = read_spectra(spectra, require_precursor=False, keep_empty=True,
                                        id_field=settings.query_id_field)
    log(f"{spectra}: {report.summary()}")
    ids = query_ids(queries_read.metadata, settings.query_id_field)
    if ids.note:
        log(f"query ids: {ids.note}")
    source = open_source(candidates, fingerprinter, store, progress=progress, reserved=RESERVED_COLUMNS)
    log(f"candidates: {source.describe()}")
    if store is not None and getattr(source, "store", None) is None:  # only candidate lists are cached in a store
        log(f"note: store {store} not used: it caches candidate lists, and these candidates are a structure database")
    if source.renamed:
        log("candidate columns renamed (their names are output columns): "
            + ", ".join(f"{c} -> {n}" for c, n in source.renamed.items()))
    models = load_metabolite_model(model_path, contents)
    cleaned = models.cleaning.single(queries_read)
    cleaned = models.cleaning.merged(cleaned, groups=list(range(len(cleaned))))[0]
    queries = plan_queries(queries_read, cleaned.n_peaks, models, source, settings, ids=ids)
    routed = sorted({q.submodel for q in queries if q.status == "ok"})
    calibrations, calibration_state = _calibrations(models, routed, settings, log)
    tops = _top_hits(models, cleaned, queries, source, fingerprinter, settings, calibrations, progress)
    candidate_rows = []
    write = candidate_rows.append if candidate_sink is None else candidate_sink(source.columns)
    rows, statuses = _query_rows(queries, _write_candidates(queries, tops, source, write))
    run = {"model": str(model_path), "spectra": str(spectra), "spectra_read": report.summary(),
           "candidates": str(candidates), "calibrations": calibrations, "calibration_state": calibration_state,
           "statuses": statuses, "ids": ids}
    parameters = _parameters(run, models, routed, queries, source, fingerprinter, settings, log)
    return IdentifyResults(identifications=rows, candidates=candidate_rows, candidate_columns=tuple(source.columns),
                           statuses=statuses, parameters=parameters, spectra=queries_read,
                           candidates_streamed=candidate_sink is not None)


def _calibrations(models, routed, settings, log):
    """Each routed sub-model's confidence calibration and its state for ``parameters.json``; a structure prior weight
    other than the model's (``settings.prior_weight``) is set on the sub-model, and voids its calibration."""
    from threadpoolctl import threadpool_limits  # noqa: PLC0415 - threadpoolctl is optional

    calibrations, state = {}, {}
    for precursor_type in routed:
        # One BLAS thread for a sub-model's loading (a refit of its factorization for older files): a 2-thread
        # factorization of a few thousand rows is 10-30 times slower when the other core is busy.
        with threadpool_limits(limits=1):
            model = models.submodel(precursor_type)
        calibrations[precursor_type] = models.calibration(precursor_type)
        state[precursor_type] = "calibrated" if calibrations[precursor_type] is not None else \
            f"not calibrated ({models.record(precursor_type).get('calibration_problem') or 'no calibration'})"
        if settings.prior_weight is not None and settings.prior_weight != model.prior_weight:
            log(f"structure prior weight {settings.prior_weight} instead of the {precursor_type} sub-model's "
                f"{model.prior_weight}: the confidence calibration holds for the model's weight only, no "
                "confidence is reported")
            model.set_params(prior_weight=settings.prior_weight)
            calibrations[precursor_type] = None
            state[precursor_type] = "not used (--prior-weight differs from the model's)"
    return calibrations, state


def _top_hits(models, cleaned, queries, source, fingerprinter, settings, calibrations, progress):
    """``{query row: (top-k candidate ids, scores, structure priors, confidence or None)}`` of the ranked queries.

    Queries are scored in batches of neighbouring masses; only each one's top-k is kept (a few numbers), so the rows
    can be written afterwards in the input's order.
    """
    tops = {}
    n_ok = sum(q.status == "ok" for q in queries)
    for scored in score_queries(models, cleaned, queries, source, fingerprinter, settings,
                                progress(n_ok, "scoring queries")):
        q, calibration = scored.query, calibrations[scored.query.submodel]
        # the whole list's scores: the calibration's features count candidates near the top hit
        confidence = calibration.confidence([scored.scores])[0] if calibration is not None else None
        tops[q.row] = (q.candidates[scored.top], scored.scores[scored.top], scored.top_prior,
                       None if confidence is None else float(confidence))
    return tops


def _write_candidates(queries, tops, source, write):
    """Pass every ranked query's top-k candidate rows to ``write`` (input order); ``{query row: top hit columns}``."""
    top_hits = {}
    for q in queries:
        if q.row not in tops:
            continue
        top_ids, scores, prior, confidence = tops.pop(q.row)
        records = source.records(top_ids)
        # the structure prior of each written candidate (its part of the score is prior_weight x this value)
        for rank, (record, score, p) in enumerate(zip(records, scores, prior, strict=True), 1):
            write({"query_id": q.query_id, "rank": rank, **record, "score": float(score), "structure_prior": float(p)})
        top_hits[q.row] = {**records[0], "score": float(scores[0]), "confidence": confidence}
    return top_hits


def _query_rows(queries, top_hits):
    """One typed row per query (input order) and the count of queries per status."""
    rows, statuses = [], {}
    for q in queries:
        statuses[q.status] = statuses.get(q.status, 0) + 1
        rows.append({"query_id": q.query_id, "precursor_mz": float(q.precursor_mz) if np.isfinite(q.precursor_mz)
                     else None, "adduct": q.adduct, "query_formula": q.formula, "lookup": q.lookup,
                     "n_candidates": int(q.candidates.size), **top_hits.get(q.row, {}), "status": q.status,
                     "detail": q.detail, "annotation": q.annotation})
    return rows, statuses


def _parameters(run, models, routed, queries, source, fingerprinter, settings, log):
    """``parameters.json``: the run's settings, sources, sub-models, calibration and annotation (logged)."""
    calibrations, ids = run["calibrations"], run["ids"]
    models_used = [models.submodel(t) for t in routed] or [models.submodel(models.precursor_types[0])]
    annotated = any(annotated_kernels(m) for m in models_used)
    parameters = {"model": run["model"], **models.describe(q for q in queries if q.status == "ok"),
                  "calibrated": bool(calibrations) and all(c is not None for c in calibrations.values()),
                  "calibration": run["calibration_state"], "spectra": run["spectra"],
                  "calibration_data": {t: models.record(t).get("calibration_data") for t in routed},
                  "spectra_read": run["spectra_read"], "candidates": run["candidates"],
                  "candidate_source": source.describe(), "candidate_columns_renamed": source.renamed,
                  "top_k": settings.top_k, "ppm": settings.ppm,
                  "query_id_field": settings.query_id_field, "adduct_policy": settings.adduct_policy,
                  "ion_mode": settings.ion_mode,
                  "query_ids": {"field": ids.field_used, "note": ids.note},
                  "fingerprint": fingerprinter.params(), "statuses": run["statuses"],
                  "structure_prior": {"weight": models_used[0].prior_weight,
                                      "neighbors": models_used[0].prior_neighbors},
                  "structure_prior_per_submodel": {t: {"weight": m.prior_weight, "neighbors": m.prior_neighbors}
                                                   for t, m in zip(routed, models_used, strict=False)},
                  "annotation": annotation_totals([q.hypotheses for q in queries]) if annotated else
                  "not used (the model has no annotated kernels)"}
    if annotated:
        totals = parameters["annotation"]
        falls = ", ".join(f"{k}={v}" for k, v in totals["fallbacks"].items()) or "none"
        log(f"annotation: {totals['queries_annotated']}/{totals['queries']} scored queries annotated under at least "
            f"one formula; {totals['hypotheses_annotated']}/{totals['formula_hypotheses']} formula hypotheses "
            f"annotated, fallbacks to the unannotated kernels: {falls}; "
            f"{totals['peaks_above_precursor_dropped_by_cleaning']} peaks above the precursor dropped by cleaning, "
            f"{totals['peaks_above_precursor']} left unannotated")
    return parameters
