"""``evaluate``: the structure-disjoint evaluation on candidate lists, per polarity."""

from __future__ import annotations

import time

import numpy as np

from ....exceptions import IOKRDataError
from ..candidates._candidates import read_candidate_lists
from ..defaults import (
    DEFAULT_MIN_STRUCTURES,
)
from ..model._routing import DEFAULT_TYPES
from ..model._submodels import TrainedSubmodel, save_metabolite_model
from ..ranking._identify import IdentifySettings  # noqa: F401 - the jobs' settings, imported from here by callers
from ..selection._pipeline import (
    Cleaning,
    evaluate_lists,
    query_spectra,
)
from ._feedback import Feedback
from ._fit import TrainingConfig, attach_first_cache, fit_training_set, open_store, training_set_of
from ._train import as_paths, jsonable, read_training_spectra, training_types


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
    store = open_store(config.store_path, fingerprinter)
    attach_first_cache(store, fingerprint_cache)
    paths = as_paths(spectra_paths)
    spectra, reads = read_training_spectra(paths, log)
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
    types, chosen, record = training_types(spectra, reads, exclude, config, min_structures, log)
    cleaning = Cleaning()
    fits, queries = {}, {}
    for precursor_type in chosen:
        part = spectra[np.flatnonzero(types == precursor_type)]
        log(f"sub-model {precursor_type}: {len(part)} spectra")
        train, timings = training_set_of(part, store, cleaning, exclude, log)
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
        "chosen": {k: jsonable(v) for k, v in model.get_params().items()}, "weights": model.weights_.tolist(),
        "cv": table, "cv_surrogate": table[0]["surrogate"] if table else None, "timings_s": dict(fit.timings),
        "calibration_problem": fit.calibration_problem, "calibration_data": fit.calibration_data,
    }
