"""IOKR for set-valued outputs: candidates are the distinct label sets of the training data.

Preprocessing (feature standardization or none), alpha and the input kernel are part of the model and chosen on
the training data only (see :mod:`._selection`); the test split is used once, for the final figure.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.model_selection import KFold

from ...decoding import CandidateSets
from ...metrics import example_f1, hamming_loss, true_candidate_rank
from ._selection import (
    DEFAULT_ALPHAS,
    DEFAULT_GAMMA_SCALES,
    OUTPUT_NORMALIZATIONS,
    SCALINGS,
    closed_form_search,
    default_kernels,
    edge_warnings,
    label_pool,
    make_scaler,
    predict_label_sets,
    refit_cv_f1,
)

__all__ = ["evaluate_multilabel", "predict_label_sets", "select_multilabel"]


def select_multilabel(X_train, Y_train, *, alphas=DEFAULT_ALPHAS, gamma_scales=DEFAULT_GAMMA_SCALES,
                      input_kernels=None, scalings=SCALINGS, output_normalizations=OUTPUT_NORMALIZATIONS, cv=5, seed=0,
                      iokr_params=None, progress=None):
    """Choose preprocessing, output normalization, alpha and input kernel on training data; refit the chosen model.

    Parameters
    ----------
    X_train : ndarray of shape (n, d)
    Y_train : ndarray of shape (n, n_labels)
        Binary label matrix.
    alphas : sequence of float, default=DEFAULT_ALPHAS
        15 values from 1e-4 to 1e3 (log-spaced). Searched from the largest down: equal CV scores go to the larger.
    gamma_scales : sequence of float, default=DEFAULT_GAMMA_SCALES
        Gaussian widths as multiples of ``1 / median squared distance`` of the (preprocessed) training inputs:
        ``4^-5, ..., 4^2`` by default.
    input_kernels : sequence of Kernel or str, optional
        Replace the default kernels (``"linear"`` and the Gaussians of ``gamma_scales``) by these, in every arm.
    scalings : sequence of {"none", "standard"}, default=("none", "standard")
        Preprocessing arms; ``"standard"`` is scikit-learn's ``StandardScaler``.
    output_normalizations : sequence of bool, default=(True, False)
        Arms for IOKR's ``normalize_output`` (unit-norm centered label vectors, or the plain centered ones).
    cv : int
        Number of folds (``KFold``, shuffled with ``seed``), shared by both selection levels.
    iokr_params : dict, optional
        Extra :class:`~iokr.IOKR` parameters (centering, ``normalize_input``), the same in every arm.
    progress : callable, optional
        Called after each arm's closed-form search and after each arm's refit CV.

    Returns
    -------
    model : IOKR
        Refitted on all training data with the chosen setting.
    scaler : StandardScaler or None
        Fitted on all training data (None for ``"none"``).
    record : dict
        ``cv_results`` (closed-form CV example-F1 % per arm, alpha and kernel), ``arms`` (per arm: its choice,
        closed-form score and refit-CV scores), ``best`` (scaling, normalize_output, alpha, input_kernel),
        ``grid_edge`` (messages).
    """
    Y_train = np.asarray(Y_train, dtype=np.float64)
    X_train = np.asarray(X_train, dtype=np.float64)
    folds = list(KFold(cv, shuffle=True, random_state=seed).split(X_train))
    cv_results, arms = [], []
    for scaling in scalings:
        scaler = make_scaler(scaling)
        X = X_train if scaler is None else scaler.fit_transform(X_train)
        kernels = list(input_kernels) if input_kernels is not None else default_kernels(X, gamma_scales)
        for normalize_output in output_normalizations:
            params = {**(iokr_params or {}), "normalize_output": bool(normalize_output)}
            search = closed_form_search(X, Y_train, folds, alphas=alphas, kernels=kernels, iokr_params=params)
            results = search.cv_results_
            for setting, mean, std in zip(results["params"], results["mean_test_score"], results["std_test_score"],
                                   strict=True):
                cv_results.append({"scaling": scaling, "normalize_output": bool(normalize_output),
                                   "alpha": float(setting["alpha"]), "input_kernel": repr(setting["input_kernel"]),
                                   "cv_f1": 100 * float(mean), "cv_f1_std": 100 * float(std)})
            kernel = search.best_params_["input_kernel"]
            arms.append({"scaling": scaling, "normalize_output": bool(normalize_output), "alpha": search.alpha_,
                         "input_kernel": repr(kernel), "closed_form_cv_f1": 100 * search.best_score_,
                         "_kernel": kernel, "_kernels": kernels, "_params": params,
                         "_model": search.best_estimator_, "_scaler": scaler})
            if progress is not None:
                progress()
    for arm in arms:
        if len(arms) > 1:
            scores = refit_cv_f1(X_train, Y_train, folds, arm["scaling"], arm["alpha"], arm["_kernel"], arm["_params"])
            arm["refit_cv_f1"] = 100 * float(scores.mean())
            arm["refit_cv_f1_std"] = 100 * float(scores.std())
        else:
            arm["refit_cv_f1"] = arm["refit_cv_f1_std"] = None
        if progress is not None:
            progress()
    chosen = max(arms, key=lambda a: -np.inf if a["refit_cv_f1"] is None else a["refit_cv_f1"])
    messages = edge_warnings(chosen["alpha"], alphas, chosen["_kernel"], chosen["_kernels"])
    model, scaler = chosen["_model"], chosen["_scaler"]
    best = {key: chosen[key] for key in ("scaling", "normalize_output", "alpha", "input_kernel")}
    arms = [{k: v for k, v in arm.items() if not k.startswith("_")} for arm in arms]
    return model, scaler, {"cv_results": cv_results, "arms": arms, "best": best, "grid_edge": messages}


def evaluate_multilabel(X_train, Y_train, X_test, Y_test, *, alphas=DEFAULT_ALPHAS, gamma_scales=DEFAULT_GAMMA_SCALES,
                        input_kernels=None, scalings=SCALINGS, output_normalizations=OUTPUT_NORMALIZATIONS, cv=5,
                        seed=0, iokr_params=None, progress=None):
    """Choose the model on training data (:func:`select_multilabel`), then evaluate it once on the test split.

    Parameters are those of :func:`select_multilabel`, plus the test split ``X_test, Y_test``.

    Returns
    -------
    result : dict
        The selection record (``cv_results``, ``arms``, ``best``, ``grid_edge``); test ``f1`` (%), ``hamming`` and
        ``exact_match`` (%); ``ranks``: per test example, the 1-based rank of its true label set among the candidate
        label sets (None when that set never occurs in training, so it cannot be predicted); ``example_f1``:
        per-example F1; ``timings_s``: seconds of model selection (including the refit on all training data) and
        test ranking.
    """
    t0 = time.perf_counter()
    Y_train = np.asarray(Y_train, dtype=np.float64)
    model, scaler, record = select_multilabel(
        X_train, Y_train, alphas=alphas, gamma_scales=gamma_scales, input_kernels=input_kernels, scalings=scalings,
        output_normalizations=output_normalizations, cv=cv, seed=seed, iokr_params=iokr_params, progress=progress)
    timings = {"cross_validation_s": time.perf_counter() - t0}
    if scaler is not None:
        X_test = scaler.transform(np.asarray(X_test, dtype=np.float64))
    t0 = time.perf_counter()
    pool = label_pool(Y_train)
    # All candidate scores once: the best set (same stable tie policy as top_k=1) and the true set's rank.
    rankings = model.rank(X_test, CandidateSets.shared(pool, X_test.shape[0]))
    predicted = pool[[ranking.pool_indices[0] for ranking in rankings]]
    timings["test_ranking_s"] = time.perf_counter() - t0
    Y_test = np.asarray(Y_test, dtype=np.float64)
    where = {row.tobytes(): i for i, row in enumerate(pool)}
    ranks = []
    for q, ranking in enumerate(rankings):
        true = where.get(Y_test[q].tobytes())
        if true is None:
            ranks.append(None)
            continue
        scores = np.empty(ranking.n_candidates)
        scores[ranking.order] = ranking.scores
        ranks.append(true_candidate_rank(scores, true, ties="average"))
    per_example = [100 * example_f1(Y_test[q:q + 1], predicted[q:q + 1]) for q in range(Y_test.shape[0])]
    return {**record, "f1": 100 * example_f1(Y_test, predicted), "hamming": hamming_loss(Y_test, predicted),
            "exact_match": 100 * float(np.mean(np.all(Y_test == predicted, axis=1))),
            "n_candidate_sets": int(pool.shape[0]), "ranks": ranks, "example_f1": per_example,
            "timings_s": timings}
