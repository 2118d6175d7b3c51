"""Model selection for multi-label IOKR, on the training split only: preprocessing, alpha and the input kernel.

Two levels, each with the cheapest exact-enough tool:

1. For each arm -- preprocessing (no scaling / ``StandardScaler``) times output normalization (IOKR's
   ``normalize_output`` on / off) -- alpha and the input kernel (linear, Gaussians whose
   ``gamma`` is a multiple of ``1 / median squared distance``) are chosen by the closed-form k-fold hold-out of
   :class:`~iokr.model_selection.IOKRCV` (one eigendecomposition per kernel serves the whole alpha grid), scored by
   the example-F1 of each held-out example's best candidate among the label sets of *its fold's training side*: the
   candidates a refit on that side would have. The scaler of this step is fitted once on the whole training split,
   so the unsupervised feature statistics of held-out rows enter (a mild leak; labels do not). The closed form is
   otherwise that of refitting IOKR on the training side with the centering refitted and the normalization
   statistics held fixed (exactly a refit when ``normalize_input=normalize_output=False``; tested).
2. The arm is chosen by k-fold CV *with refits*: every fold refits the scaler and IOKR (at that arm's step-1 alpha
   and kernel) on its training side. Refits are needed here: both the per-fold scaler and the output normalization
   move the closed form away from a refit (by up to 3-9 points of F1 on small Mulan sets), the former through the
   held-out rows' statistics, the latter because it is fitted on the whole training split. The step-1 choice saw all
   folds, so every arm's refit score carries the same mild optimism of a selected model; the comparison between arms
   is what matters. These 4 x k refits cost 4-12 % of the selection (Mulan sets, reports/multilabel.md). Choosing
   the arm by its step-1 closed-form score instead would have picked the same arm on all 13 Mulan sets, but that
   score overstates the refit one by up to 11 F1 points (foodtruck, output normalized), so the guard stays.

A :class:`GridEdgeWarning` is issued when the chosen alpha or Gaussian width is at an edge of its grid.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import clone
from sklearn.preprocessing import StandardScaler

from ...decoding import CandidateSets
from ...estimators import IOKR, OutputSide  # OutputSide: the output transform IOKRCV applies, for hold-out scoring
from ...exceptions import GridEdgeWarning
from ...kernels import Gaussian
from ...linalg.developer import check_alphas
from ...metrics import example_f1
from ...model_selection import IOKRCV

#: 15 alphas from 1e-4 to 1e3, half a decade apart (searched from the largest down: equal CV scores go to the
#: stronger regularization, so a plateau of small alphas -- near-separable sets such as genbase -- does not pick its
#: lower end).
DEFAULT_ALPHAS = tuple(np.logspace(-4, 3, 15).tolist())
#: Gaussian ``gamma`` as multiples of ``1 / median squared distance``: a factor 4 apart, from 4^-5 to 4^2 (16384 end
#: to end). Training-split CV curves of the 13 Mulan sets (reports/multilabel.md, "Grid") peak inside this range;
#: below it the Gaussian tends to its linear limit (the CV curve is flat), above it the scores fall.
DEFAULT_GAMMA_SCALES = tuple(4.0 ** k for k in range(-5, 3))
SCALINGS = ("none", "standard")
#: ``normalize_output`` arms: neither is better everywhere (training-split CV, reports/multilabel.md).
OUTPUT_NORMALIZATIONS = (True, False)


def label_pool(Y):
    """The distinct label sets (rows) of ``Y``, sorted, as float64."""
    return np.unique(np.asarray(Y), axis=0).astype(np.float64)


def predict_label_sets(model, X, label_sets):
    """Best label set per row of ``X`` among ``label_sets`` (n_sets, n_labels), for a fitted ``model``."""
    rankings = model.rank(X, CandidateSets.shared(label_sets, X.shape[0]), top_k=1)
    return label_sets[[ranking.pool_indices[0] for ranking in rankings]]


def median_sq_distance(X, max_rows=1000, seed=0):
    """Median squared Euclidean distance between distinct rows (a seeded subsample of ``max_rows``); 1.0 if zero."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] > max_rows:
        X = X[np.random.default_rng(seed).choice(X.shape[0], max_rows, replace=False)]
    sq = np.einsum("ij,ij->i", X, X)
    d2 = np.clip(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0, None)
    values = d2[np.triu_indices(X.shape[0], k=1)]
    median = float(np.median(values)) if values.size else 0.0
    return median if median > 0 else 1.0


def make_scaler(scaling):
    if scaling == "none":
        return None
    if scaling == "standard":
        return StandardScaler()
    raise ValueError(f"Unknown scaling {scaling!r}; expected one of {SCALINGS}.")


def _scaled(scaling, X_fit, *others):
    scaler = make_scaler(scaling)
    if scaler is None:
        return (X_fit, *others)
    scaler.fit(X_fit)
    return (scaler.transform(X_fit), *(scaler.transform(X) for X in others))


def fold_label_sets(Y, folds):
    """The label-set pool (all distinct rows of ``Y``, sorted), and per fold a mask of the sets on its training side."""
    pool, inverse = np.unique(np.asarray(Y), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    masks = np.zeros((len(folds), pool.shape[0]), dtype=bool)
    fold_of = np.empty(Y.shape[0], dtype=np.intp)
    for k, (train, valid) in enumerate(folds):
        masks[k, inverse[train]] = True
        fold_of[valid] = k
    return pool.astype(np.float64), masks, fold_of


def f1_scoring(Y, pool, masks, fold_of, output_side):
    """IOKRCV scoring: example-F1 (0-1) of each held-out example's best label set among its fold's training sets.

    Scores are those of :meth:`iokr.IOKR.decision_function` (distance decoding) from the hold-out predictions in the
    transformed output space, through the same output transform (``output_side``, fitted as IOKRCV fits its own):
    one dense product per split, ties to the first set in pool order (as the decoder).
    """
    R, offset = output_side.candidate_block(pool, "distance")

    def score(result):
        S = output_side.query_representation(result.features, "distance") @ R.T
        if offset is not None:
            S += offset[None, :]
        S[:, ~masks[fold_of[result.indices[0]]]] = -np.inf
        return example_f1(Y[result.indices], pool[np.argmax(S, axis=1)])

    return score


def closed_form_search(X, Y, folds, *, alphas, kernels, iokr_params=None):
    """Step 1 for one arm: IOKRCV over ``alphas`` x ``kernels``, candidates = each fold's training label sets.

    ``alphas`` are searched in decreasing order: IOKRCV gives equal mean scores to the first setting, so a tie goes
    to the larger alpha (and, between kernels, to the earlier kernel of ``kernels``).
    """
    alphas = np.sort(check_alphas(alphas, "alphas", "select_multilabel"))[::-1]
    params = {"center_output": True, "normalize_output": True, **(iokr_params or {})}
    pool, masks, fold_of = fold_label_sets(Y, folds)
    side = OutputSide("linear", params["center_output"], params["normalize_output"]).fit(Y)
    search = IOKRCV(alphas=alphas, input_kernel=kernels[0], param_grid={"input_kernel": list(kernels)},
                    cv=list(folds), scoring=f1_scoring(Y, pool, masks, fold_of, side), path_method="eigen", **params)
    return search.fit(X, Y)


def refit_cv_f1(X, Y, folds, scaling, alpha, kernel, iokr_params=None):
    """Step 2: per-fold example-F1 (0-1) of IOKR refitted with the scaler on each fold's training side."""
    scores = []
    for train, valid in folds:
        X_train, X_valid = _scaled(scaling, X[train], X[valid])
        kernel_copy = kernel if isinstance(kernel, str) else clone(kernel)
        model = IOKR(alpha=alpha, input_kernel=kernel_copy, **(iokr_params or {})).fit(X_train, Y[train])
        scores.append(example_f1(Y[valid], predict_label_sets(model, X_valid, label_pool(Y[train]))))
    return np.array(scores)


def default_kernels(X, gamma_scales, linear=True):
    """``["linear"]`` (if ``linear``) and one Gaussian per scale, ``gamma = scale / median squared distance``."""
    median = median_sq_distance(X)
    return (["linear"] if linear else []) + [Gaussian(gamma=float(s) / median) for s in gamma_scales]


def edge_warnings(alpha, alphas, kernel, kernels):
    """Messages (also issued as :class:`GridEdgeWarning`) for a chosen value at the edge of its grid."""
    messages = []
    alphas = np.asarray(alphas, dtype=np.float64)
    if alphas.size > 1 and alpha in (alphas.min(), alphas.max()):
        messages.append(f"alpha={alpha:g} is at the edge of the alpha grid [{alphas.min():g}, {alphas.max():g}]")
    gammas = [k.gamma for k in kernels if isinstance(k, Gaussian)]
    if isinstance(kernel, Gaussian) and len(gammas) > 1 and kernel.gamma in (min(gammas), max(gammas)):
        messages.append(f"Gaussian gamma={kernel.gamma:.4g} is at the edge of the width grid "
                        f"[{min(gammas):.4g}, {max(gammas):.4g}]")
    for message in messages:
        warnings.warn(f"{message}; consider widening the grid.", GridEdgeWarning, stacklevel=3)
    return messages
