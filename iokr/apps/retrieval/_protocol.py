"""The retrieval protocol of the MP-IOKR paper (Brouard et al. 2017, Table 2) on aligned documents.

For each random 50/50 split of the aligned pairs: TF-IDF vectorizers are fitted on the training documents of each
language only; optionally each language's TF-IDF is preprocessed (LSA, standardization: :mod:`._features`, fitted on
the training documents); IOKR learns source -> target features; each test source document ranks all test target
documents (candidates shared by every query) and the rank of its aligned translation is recorded.
"""

from __future__ import annotations

import numbers
import time

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from ...decoding import CandidateSets
from ...estimators import IOKR
from ...metrics import mean_reciprocal_rank, top_k_accuracy, true_candidate_rank
from ._features import TFIDF, Features, SplitFeatures
from ._selection import DEFAULT_ALPHAS, select_setting, warn_grid_edges
from ._split import RetrievalSplit

TOP_K = (1, 5, 10)


def make_split(source, target, train_index, test_index, min_df=2):
    """TF-IDF features of a split, vectorizers fitted on the training documents of each language only."""
    source_vec = TfidfVectorizer(min_df=min_df, sublinear_tf=True)
    target_vec = TfidfVectorizer(min_df=min_df, sublinear_tf=True)
    Xs_train = source_vec.fit_transform([source[i] for i in train_index])
    Xs_test = source_vec.transform([source[i] for i in test_index])
    Y_train = target_vec.fit_transform([target[i] for i in train_index]).toarray()
    Y_test = target_vec.transform([target[i] for i in test_index]).toarray()
    gram_train = (Xs_train @ Xs_train.T).toarray()
    gram_test = (Xs_test @ Xs_train.T).toarray()
    diag_test = np.asarray(Xs_test.multiply(Xs_test).sum(axis=1)).ravel()
    return RetrievalSplit(gram_train, gram_test, diag_test, Y_train, Y_test)


def retrieval_ranks(model, split, timings=None):
    """Fit ``model`` (an IOKR-like estimator with a precomputed input kernel) and rank the aligned documents.

    Parameters
    ----------
    model : estimator
    split : RetrievalSplit
    timings : dict, optional
        Seconds spent fitting and ranking are added to its ``"fit_s"`` and ``"rank_s"`` entries.

    Returns
    -------
    ranks : ndarray of shape (n_test,)
        1-based rank of each query's translation among all test target documents (ties: average).
    """
    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    model.fit(split.gram_train, split.Y_train)
    t1 = time.perf_counter()
    candidates = CandidateSets.shared(split.Y_test, split.gram_test.shape[0])
    rankings = model.rank(split.gram_test, candidates, input_diag=split.diag_test)
    timings["fit_s"] = timings.get("fit_s", 0.0) + t1 - t0
    timings["rank_s"] = timings.get("rank_s", 0.0) + time.perf_counter() - t1
    ranks = np.empty(len(rankings))
    for q, ranking in enumerate(rankings):
        scores = np.empty(ranking.n_candidates)
        scores[ranking.order] = ranking.scores
        ranks[q] = true_candidate_rank(scores, q, ties="average")
    return ranks


def evaluate_retrieval(source, target, *, n_splits=10, alpha=1.0, train_fraction=0.5, seed=0, model=None,
                       progress=None, alphas=DEFAULT_ALPHAS, features=TFIDF):
    """Mean and std of top-1/5/10 (%) and MRR over random splits.

    Parameters
    ----------
    source, target : list of str
        Aligned documents.
    n_splits : int, default=10
    alpha : float or "cv", default=1.0
        IOKR regularization (ignored when ``model`` is given); ``"cv"`` chooses it on every split's training
        documents from ``alphas`` by closed-form k-fold MRR (:func:`~._selection.select_alpha`; the command line's
        default), with a :class:`~iokr.exceptions.GridEdgeWarning` when a choice is at an end of the grid.
    alphas : sequence of float, default=DEFAULT_ALPHAS
        The grid of ``alpha="cv"``.
    features : Features or sequence of Features, default=TFIDF
        Preprocessing of both languages' TF-IDF (:class:`~._features.Features`; the default is the TF-IDF itself).
        A sequence of several settings is searched with alpha, jointly, by the same closed-form k-fold MRR on every
        split's training documents (:func:`~._selection.select_setting`; ``feature_grid()`` is the command line's
        default), with a :class:`~iokr.exceptions.GridEdgeWarning` when a chosen LSA dimension is at an end of the
        grid's dimensions. Ignored when ``model`` is given.
    train_fraction : float, default=0.5
    seed : int, default=0
    model : estimator, optional
        Defaults to ``IOKR(alpha, input_kernel="precomputed", output_kernel="linear")`` with centering and
        normalization on both sides.
    progress : callable, optional
        Called with the split number after each split.

    Returns
    -------
    summary : dict
        ``{"top1": (mean, std), "top5": ..., "top10": ..., "mrr": ..., "per_split": [...], "ranks": [...],
        "timings_s": {...}}``: ``ranks`` holds every split's per-query ranks (one list per split), ``timings_s``
        the seconds spent on features (TF-IDF and kernels), model selection, fitting and ranking, summed over
        splits; when settings are chosen by CV each ``per_split`` record also holds its ``alpha``, ``cv_mrr`` and
        ``features`` (``{"lsa": ..., "standardize": ...}``).
    """
    if len(source) != len(target):
        raise ValueError(f"'source' and 'target' must be aligned; got {len(source)} and {len(target)} documents.")
    if isinstance(n_splits, bool) or not isinstance(n_splits, numbers.Integral) or n_splits < 1:
        raise ValueError(f"'n_splits' must be a positive int, got {n_splits!r}.")
    if isinstance(alpha, str) and alpha != "cv":
        raise ValueError(f"'alpha' must be a positive float or 'cv', got {alpha!r}.")
    try:
        grid = (features,) if isinstance(features, Features) else tuple(features)
    except TypeError:  # not a sequence
        grid = ()
    if not grid or not all(isinstance(f, Features) for f in grid):
        raise ValueError(f"'features' must be a Features setting or a non-empty sequence of them, got {features!r}.")
    search = model is None and (alpha == "cv" or len(grid) > 1)
    grid_alphas = tuple(alphas) if alpha == "cv" else (alpha,)
    rng = np.random.default_rng(seed)
    n = len(source)
    n_train = int(round(train_fraction * n))
    per_split, all_ranks, searched_dims = [], [], set()
    timings = {"features_s": 0.0, "selection_s": 0.0, "fit_s": 0.0, "rank_s": 0.0}
    for split_number in range(n_splits):
        permutation = rng.permutation(n)
        t0 = time.perf_counter()
        split = SplitFeatures(make_split(source, target, permutation[:n_train], permutation[n_train:]))
        timings["features_s"] += time.perf_counter() - t0
        chosen, setting = {}, grid[0]
        if search:
            t0 = time.perf_counter()
            choice = select_setting(split, grid, grid_alphas, seed=seed)
            setting = choice["features"]
            searched_dims.update(f.lsa for f in choice["grid"] if f.lsa is not None)
            chosen = {"alpha": choice["alpha"], "cv_mrr": choice["cv_mrr"], "features": setting.as_dict()}
            timings["selection_s"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        split = split.get(setting if model is None else TFIDF)
        timings["features_s"] += time.perf_counter() - t0
        estimator = model if model is not None else IOKR(alpha=chosen.get("alpha", alpha),
                                                          input_kernel="precomputed")
        ranks = retrieval_ranks(estimator, split, timings)
        record = {f"top{k}": top_k_accuracy(ranks, k) for k in TOP_K}
        record["mrr"] = mean_reciprocal_rank(ranks)
        record.update(chosen)
        per_split.append(record)
        all_ranks.append(ranks.tolist())
        if progress is not None:
            progress(split_number + 1)
    if search and alpha == "cv":
        warn_grid_edges([r["alpha"] for r in per_split], grid_alphas)
    dims = sorted(searched_dims)
    if len(dims) > 1:
        chosen_dims = [r["features"]["lsa"] for r in per_split if r["features"]["lsa"] is not None]
        warn_grid_edges(chosen_dims, dims, what="lsa")
    summary = {key: (float(np.mean([r[key] for r in per_split])), float(np.std([r[key] for r in per_split])))
               for key in (*(f"top{k}" for k in TOP_K), "mrr")}
    summary["per_split"] = per_split
    summary["ranks"] = all_ranks
    summary["timings_s"] = timings
    return summary
