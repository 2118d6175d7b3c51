"""The retrieval protocol of the MP-IOKR paper (Brouard et al. 2017, Table 2) on aligned documents.

For each random 50/50 split of the aligned pairs: TF-IDF vectorizers are fitted on the training documents of each
language only; IOKR learns source -> target TF-IDF; each test source document ranks all test target documents
(candidates shared by every query) and the rank of its aligned translation is recorded.
"""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from ...decoding import CandidateSets
from ...estimators import IOKR
from ...metrics import mean_reciprocal_rank, top_k_accuracy, true_candidate_rank
from ._selection import DEFAULT_ALPHAS, select_alpha, warn_grid_edges

TOP_K = (1, 5, 10)


@dataclass(frozen=True)
class RetrievalSplit:
    """Features of one split.

    Attributes
    ----------
    gram_train : ndarray of shape (n_train, n_train)
        Linear kernel of the source TF-IDF on training documents.
    gram_test : ndarray of shape (n_test, n_train)
        Linear kernel between test and training source documents.
    diag_test : ndarray of shape (n_test,)
        Source test documents' squared norms (for normalization).
    Y_train : ndarray of shape (n_train, vocabulary)
        Target-language TF-IDF of training documents.
    Y_test : ndarray of shape (n_test, vocabulary)
        Target-language TF-IDF of test documents: the candidates, in test order (query i's answer is row i).
    """

    gram_train: np.ndarray
    gram_test: np.ndarray
    diag_test: np.ndarray
    Y_train: np.ndarray
    Y_test: np.ndarray


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
                       progress=None, alphas=DEFAULT_ALPHAS):
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
        splits; with ``alpha="cv"`` each ``per_split`` record also holds its ``alpha`` and ``cv_mrr``.
    """
    if len(source) != len(target):
        raise ValueError(f"'source' and 'target' must be aligned; got {len(source)} and {len(target)} documents.")
    if isinstance(n_splits, bool) or not isinstance(n_splits, numbers.Integral) or n_splits < 1:
        raise ValueError(f"'n_splits' must be a positive int, got {n_splits!r}.")
    if isinstance(alpha, str) and alpha != "cv":
        raise ValueError(f"'alpha' must be a positive float or 'cv', got {alpha!r}.")
    rng = np.random.default_rng(seed)
    n = len(source)
    n_train = int(round(train_fraction * n))
    per_split, all_ranks = [], []
    timings = {"features_s": 0.0, "selection_s": 0.0, "fit_s": 0.0, "rank_s": 0.0}
    for split_number in range(n_splits):
        permutation = rng.permutation(n)
        t0 = time.perf_counter()
        split = make_split(source, target, permutation[:n_train], permutation[n_train:])
        timings["features_s"] += time.perf_counter() - t0
        chosen = {}
        if model is None and alpha == "cv":
            t0 = time.perf_counter()
            chosen["alpha"], chosen["cv_mrr"] = select_alpha(split, alphas, seed=seed)
            timings["selection_s"] += time.perf_counter() - t0
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
    if model is None and alpha == "cv":
        warn_grid_edges([r["alpha"] for r in per_split], alphas)
    summary = {key: (float(np.mean([r[key] for r in per_split])), float(np.std([r[key] for r in per_split])))
               for key in (*(f"top{k}" for k in TOP_K), "mrr")}
    summary["per_split"] = per_split
    summary["ranks"] = all_ranks
    summary["timings_s"] = timings
    return summary
