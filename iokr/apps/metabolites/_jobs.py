"""The three jobs behind ``iokr metabolites train | identify | evaluate``, from paths to results.

Each job takes paths and plain settings, reports progress through an optional callback factory
``progress(total, label) -> callable``, and returns plain data (dicts, lists) for the command line to print.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ...exceptions import IOKRDataError
from ._candidates import CandidateStore, read_candidate_lists
from ._fingerprints import Fingerprinter
from ._model import MetaboliteIdentifier
from ._persist import load_identifier, save_identifier
from ._pipeline import (
    DEFAULT_GRID,
    DEFAULT_SURROGATE,
    Cleaning,
    cross_validate,
    evaluate_lists,
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
                  "sigma_intensity": 0.25, "output_kernel": "gaussian_tanimoto"}


def _noop_progress(total, label):
    return lambda *args: None


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
    return CandidateStore(path if path else ":memory:", fingerprinter)


def fit_with_cv(spectra, store, cleaning, exclude_keys=(), params=None, grid=None, n_folds=3, seed=0,
                progress=_noop_progress, log=print, surrogate=DEFAULT_SURROGATE):
    """Training set, cross-validated hyperparameters, final fit. Returns ``(model, train, cv_table, timings)``.

    ``surrogate`` selects the CV lists and score of :func:`~._pipeline.cross_validate`; when the training set is
    too small for isomer-like lists (no shared formula in some fold) the fold lists are used, and logged.
    """
    params = {**DEFAULT_PARAMS, **(params or {})}
    grid = DEFAULT_GRID if grid is None else grid
    t0 = time.perf_counter()
    train = training_set(spectra, store, cleaning, exclude_keys)
    timings = {"training_set_s": time.perf_counter() - t0}
    log(f"training: {len(train.spectra)} structures ({train.n_spectra} spectra; {train.n_excluded_structures} "
        f"evaluated structures excluded; {train.n_unparsable} unparsable structures dropped)")
    n_points = int(np.prod([len(v) for v in grid.values()]))
    t0 = time.perf_counter()
    if n_points > 1 and n_folds > 1:
        used = usable_surrogate(train, surrogate, n_folds, seed)
        if used != surrogate:
            log(f"cross-validation: no same-formula training structures in some fold; surrogate lists "
                f"{used!r} instead of {surrogate!r}")
        best, table = cross_validate(train, params, grid, n_folds=n_folds, seed=seed,
                                     progress=progress(n_folds * n_points, "cross-validation fits"),
                                     surrogate=used)
        for row in table:
            row["surrogate"] = used
    else:
        best, table = {**params, **{k: v[0] for k, v in grid.items()}}, []
    timings["cross_validation_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = MetaboliteIdentifier(**best).fit(train.spectra, train.Y)
    timings["final_fit_s"] = time.perf_counter() - t0
    return model, train, table, timings


def train_job(spectra_path, output, *, exclude_candidates=None, store_path=None, fingerprint=DEFAULT_FINGERPRINT,
              grid=None, n_folds=3, seed=0, progress=_noop_progress, log=print, surrogate=DEFAULT_SURROGATE):
    """Train on a spectra file (optionally excluding the true structures of candidate lists) and save the model."""
    fingerprinter = _fingerprinter(fingerprint)
    store = _store(store_path, fingerprinter)
    spectra, report = read_spectra(spectra_path, require_structure=True)
    log(f"{spectra_path}: {report.summary()}")
    exclude = []
    if exclude_candidates:
        exclude = [lst.true_key for lst in read_candidate_lists(exclude_candidates, store) if lst.true_key]
    cleaning = Cleaning()
    model, train, table, timings = fit_with_cv(spectra, store, cleaning, exclude, grid=grid, n_folds=n_folds,
                                               seed=seed, progress=progress, log=log, surrogate=surrogate)
    save_identifier(output, model, fingerprinter, cleaning, extra={"cv": table, "timings": timings,
                                                                    "licenses": train.licenses})
    return {"model": str(output), "n_train": len(train.spectra), "cv": table, "timings": timings,
            "chosen": {k: _jsonable(v) for k, v in model.get_params().items()}, "weights": model.weights_.tolist()}


def _jsonable(v):
    if isinstance(v, tuple):
        return list(v)
    return v


def identify_job(model_path, spectra_path, candidates_path, *, top_k=10, store_path=None, progress=_noop_progress,
                 log=print):
    """Rank candidates for every query spectrum.

    Candidates: one CSV/TSV/SDF file (shared by every query), a folder or ``.tar.gz`` of lists (a query gets the
    list whose formula equals its ``formula`` metadata), or a ``.sqlite`` candidate store (looked up by formula).

    Returns
    -------
    rows : list of dict
        ``query``, ``formula``, ``rank``, ``inchikey14``, ``structure``, ``score``, ``status``.
    """
    model, fingerprinter, cleaning, _ = load_identifier(model_path)
    spectra, report = read_spectra(spectra_path, require_precursor=True)
    log(f"{spectra_path}: {report.summary()}")
    candidates_path = Path(candidates_path)
    is_store = candidates_path.suffix in (".sqlite", ".db")
    store = _store(candidates_path if is_store else store_path, fingerprinter)
    by_formula, shared = {}, None
    if not is_store:
        lists = read_candidate_lists(candidates_path, store)
        for lst in lists:
            if lst.n_unparsable:
                log(f"{lst.name}: {lst.n_unparsable} of {lst.n_rows} structures unparsable (skipped)")
        if candidates_path.is_file() and not candidates_path.name.endswith((".tar.gz", ".tgz", ".tar")):
            shared = lists[0]
        else:
            for lst in lists:
                by_formula.setdefault(lst.formula, lst)
    cleaned = cleaning.single(spectra)
    cleaned = cleaning.merged(cleaned, groups=list(range(len(cleaned))))[0] if len(cleaned) else cleaned
    rows, queries, sets_idx, pool, names, offset = [], [], [], [], [], 0
    for i, meta in enumerate(spectra.metadata):
        name = meta.get("accession") or f"query{i}"
        formula = meta.get("formula")
        if shared is not None:
            keys, texts = shared.keys, shared.structures
        elif is_store:
            keys, texts, _ = store.by_formula(formula) if formula else ([], [], None)
        else:
            lst = by_formula.get(formula)
            keys, texts = (lst.keys, lst.structures) if lst else ([], [])
        if cleaned.n_peaks[i] == 0:
            rows.append({"query": name, "formula": formula, "status": "no peaks after cleaning"})
            continue
        if not keys:
            rows.append({"query": name, "formula": formula, "status": "no candidates"})
            continue
        queries.append(i)
        names.append((name, formula, keys, texts))
        pool.append(store.fingerprints(texts))
        sets_idx.append(np.arange(offset, offset + len(keys)))
        offset += len(keys)
    if queries:
        from ...decoding import CandidateSets

        scores = model.score_sets(cleaned[np.asarray(queries)], CandidateSets(np.concatenate(pool), sets_idx))
        for (name, formula, keys, texts), s in zip(names, scores):
            order = np.argsort(-s, kind="stable")[:top_k]
            for r, j in enumerate(order, 1):
                rows.append({"query": name, "formula": formula, "rank": r, "inchikey14": keys[j],
                             "structure": texts[j], "score": float(s[j]), "status": "ok"})
    return rows


def evaluate_job(spectra_path, candidates_path, *, store_path=None, fingerprint=DEFAULT_FINGERPRINT, grid=None,
                 n_folds=3, seed=0, progress=_noop_progress, log=print, model_output=None, fingerprint_cache=None,
                 surrogate=DEFAULT_SURROGATE):
    """Structure-disjoint evaluation on candidate lists (see :func:`~._pipeline.evaluate_lists`).

    ``fingerprint_cache``: a path or a sequence of paths of :func:`export_fingerprint_cache` files; the first one
    holding this fingerprint's parameters is attached (missing files and other parameters are skipped).
    """
    t_start = time.perf_counter()
    fingerprinter = _fingerprinter(fingerprint)
    store = _store(store_path, fingerprinter)
    attach_first_cache(store, fingerprint_cache)
    spectra, report = read_spectra(spectra_path, require_structure=True)
    log(f"{spectra_path}: {report.summary()}")
    t0 = time.perf_counter()
    lists = read_candidate_lists(candidates_path, store, progress=None)
    t_lists = time.perf_counter() - t0
    n_bad = sum(lst.n_unparsable for lst in lists)
    log(f"{candidates_path}: {len(lists)} candidate lists, {sum(len(lst) for lst in lists)} unique candidates, "
        f"{n_bad} unparsable structures, {sum(lst.n_duplicates for lst in lists)} duplicates merged")
    exclude = [lst.true_key for lst in lists if lst.true_key]
    if not exclude:
        raise IOKRDataError(f"The candidate lists in {candidates_path} do not name their true structures "
                            "('_id=<InChIKey>' in the file name); they cannot be evaluated.")
    cleaning = Cleaning()
    model, train, table, timings = fit_with_cv(spectra, store, cleaning, exclude, grid=grid, n_folds=n_folds,
                                               seed=seed, progress=progress, log=log, surrogate=surrogate)
    timings["candidate_lists_s"] = t_lists
    t0 = time.perf_counter()
    summary = evaluate_lists(model, spectra, lists, store, cleaning, progress=progress(2, "scoring queries"))
    timings["scoring_s"] = time.perf_counter() - t0
    timings["total_s"] = time.perf_counter() - t_start
    if model_output:
        save_identifier(model_output, model, fingerprinter, cleaning, extra={"cv": table})
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
