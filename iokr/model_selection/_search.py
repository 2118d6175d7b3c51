"""Grid search over alpha paths (and kernel parameters) by closed-form hold-out, shared by RLSCV and IOKRCV.

For every input-kernel setting the transformed training Gram is factored once by a
:class:`~iokr.linalg.RegularizationPath`; every alpha then costs only the per-alpha hold-out algebra of
:mod:`iokr.linalg._holdout`, and every output-kernel setting only its own right-hand sides.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._docstrings import fill_doc, parameters
from ..decoding import set_scores
from ..decoding.developer import Scorer, check_decoding
from ..estimators import IOKR, check_output_features
from ..estimators.rls import RLS, check_targets, check_y_given, n_samples
from ..kernels import make_kernel
from ..linalg import RegularizationPath, holdout_residuals, loo_residuals, loo_squared_errors
from ..linalg.developer import PATH_METHODS, check_alphas, check_loo_tol
from ._scoring import check_scoring, ranks_of_truth
from ._splits import holdout_splits, resolve_groups

#: Docstring entries every search shares (substituted by :func:`~iokr._docstrings.fill_doc`): the first attributes
#: set by :meth:`PathSearchMixin._finish`, the ``groups`` parameter of ``fit`` and its Returns section.
SEARCH_DOCS = {
    "best_attributes": """
        alpha_ : float
            Regularization value of the best setting.
        best_params_ : dict
            The best setting: ``"alpha"`` and the values of the searched parameters.
        best_score_ : float
            Mean hold-out score of the best setting (greater is better).
        best_index_ : int
            Row of the best setting in ``cv_results_``; ties in the mean score go to the first setting in grid order
            (alphas in the given order).""",
    "tol": """
        tol : float, default=DEFAULT_TOL
            Relative accuracy asked of the leave-one-out mean squared errors on the grid route (eigen path, squared
            error, leave-one-out): the skeleton of :func:`~iokr.linalg.loo_squared_errors` is loosened so that every
            ``mean_test_score`` is certified within ``tol`` of its exact value (the bound of this run is reported in
            ``cv_results_["mean_test_score_bound"]``), and alphas whose certified interval overlaps the best one's
            are recomputed exactly, so ``alpha_`` is the exact route's. ``0`` keeps the exact route (skeleton
            certified to 1e-12). The default, 1e-3, is ten times finer than a 1 % plotting resolution; the
            certified bounds are usually far under it. Other routes are exact and ignore it.""",
    "groups": """
        groups : array-like of shape (n,), optional
            Only if not given to the constructor.""",
    "returns": """
        Returns
        -------
        self : object
            The fitted search, with :attr:`best_estimator_` refitted on all data.""",
}

#: Default relative accuracy of the grid of leave-one-out errors (see the ``tol`` parameter of the searches).
DEFAULT_TOL = 1e-3

#: 31 values from 1e-6 to 1e2, log-spaced (``np.logspace(-6, 2, 31)``), as a tuple so the default is immutable.
DEFAULT_ALPHAS = tuple(np.logspace(-6, 2, 31).tolist())


def expand_grid(param_grid, prefixes, owner):
    """Split a dict of parameter lists into the combinations of each prefix group (in ``prefixes`` order)."""
    if param_grid is None:
        return [[{}] for _ in prefixes]
    if not isinstance(param_grid, dict):
        raise ValueError(f"The 'param_grid' parameter of {owner} must be a dict of parameter lists or None. "
                         f"Got {param_grid!r} instead.")
    groups = [{} for _ in prefixes]
    for key, values in param_grid.items():
        g = next((g for g, prefix in enumerate(prefixes) if key == prefix or key.startswith(prefix + "__")), None)
        if g is None:
            raise ValueError(f"{owner}: 'param_grid' key {key!r} must be one of {list(prefixes)} or start with "
                             f"'<one of them>__' (e.g. '{prefixes[0]}__gamma').")
        values = list(values) if not isinstance(values, (str, bytes)) and np.ndim(values) <= 1 else None
        if not values:
            raise ValueError(f"{owner}: 'param_grid[{key!r}]' must be a non-empty list of values.")
        groups[g][key] = values
    return [[dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())] for grid in groups]


def apply_setting(params, setting):
    """Constructor parameters with a grid setting applied, never mutating the caller's kernel objects.

    Nested keys (``"kernel__gamma"``) are set on a deep copy of the kernel (a deep copy, not ``clone``, so fitted
    kernels such as :class:`AlignedKernelSum` keep their fitted state).
    """
    params = dict(params)
    nested = {}
    for key, value in setting.items():
        outer, _, inner = key.partition("__")
        if inner:
            nested.setdefault(outer, {})[inner] = value
        else:
            params[key] = value
    for outer, inner in nested.items():
        kernel = params[outer]
        kernel = make_kernel(kernel, outer) if isinstance(kernel, str) else copy.deepcopy(kernel)
        params[outer] = kernel.set_params(**inner)
    return params


def per_example(holdouts, values, n):
    """Hold-out values stacked in the order of ``concatenate(holdouts)``, put back in example order.

    When every example is held out exactly once (leave-one-out, k-fold, leave-one-group-out) the result has one row
    per training example, ``(n, ...)``; otherwise (repeated splitters) the stacked values are returned as they are.
    """
    rows = np.concatenate(holdouts)
    if rows.size != n or np.unique(rows).size != n:
        return values
    out = np.empty_like(values)
    out[rows] = values
    return out


class PathSearchMixin:
    """Shared bookkeeping: splits, result table, best index; subclasses supply the per-alpha evaluation."""

    def _setup(self, X_len, fit_groups, y_for_split):
        owner = type(self).__name__
        alphas = check_alphas(self.alphas, "alphas", owner)
        if self.path_method not in PATH_METHODS:
            raise ValueError(f"The 'path_method' parameter of {owner} must be one of {PATH_METHODS}. "
                             f"Got {self.path_method!r} instead.")
        check_loo_tol(getattr(self, "tol", 0.0), owner)  # searches without a grid route have no tol
        refit = getattr(self, "refit", True)  # searches that always refit have no such parameter
        if not isinstance(refit, (bool, np.bool_)):
            raise ValueError(f"The 'refit' parameter of {owner} must be a bool. Got {refit!r} instead.")
        groups = resolve_groups(self.groups, fit_groups, X_len, owner)
        holdouts, scheme = holdout_splits(self.cv, X_len, groups, y_for_split, owner)
        return alphas, holdouts, scheme

    def _finish(self, rows, split_scores, alphas_used, scheme, n_splits, stored=None, bounds=None):
        """Store ``cv_results_`` and the best setting; ``bounds`` (``(mean bound, split bounds)`` per row, from the
        searches with a ``tol``) add the ``*_bound`` columns."""
        split_scores = np.asarray(split_scores, dtype=np.float64)
        if not np.isfinite(split_scores).all():
            raise FloatingPointError(f"{type(self).__name__}: non-finite hold-out scores; check the kernel and data.")
        mean = split_scores.mean(axis=1)
        order = np.argsort(-mean, kind="stable")
        rank = np.empty(mean.size, dtype=np.int32)
        rank[order] = np.arange(1, mean.size + 1)
        # Equal means share the best (smallest) rank, as in scikit-learn.
        for i in range(1, mean.size):
            if mean[order[i]] == mean[order[i - 1]]:
                rank[order[i]] = rank[order[i - 1]]
        results = {"params": rows, "param_alpha": np.array(alphas_used)}
        for key in sorted({k for row in rows for k in row if k != "alpha"}):
            results[f"param_{key}"] = np.array([row.get(key) for row in rows], dtype=object)
        results.update(mean_test_score=mean, std_test_score=split_scores.std(axis=1), rank_test_score=rank,
                       split_test_scores=split_scores)
        if bounds is not None:
            results.update(mean_test_score_bound=np.array([b[0] for b in bounds], dtype=np.float64),
                           split_test_score_bound=np.array([b[1] for b in bounds], dtype=np.float64))
        results.update(stored or {})  # store_cv_results: per-setting hold-out values, in ``params`` order
        self.cv_results_ = results
        self.best_index_ = int(order[0])
        self.best_params_ = dict(rows[self.best_index_])
        self.best_score_ = float(mean[self.best_index_])
        self.alpha_ = float(self.best_params_["alpha"])
        self.cv_scheme_ = scheme
        self.n_splits_ = int(n_splits)


class BestEstimatorMixin:
    """Tags, first checks, forwarded parameters and prediction of the structured-output CV estimators
    (:class:`IOKRCV`, :class:`MPIOKRCV`); subclasses set ``_estimator``, the class they refit (:class:`~iokr.IOKR`
    or one of its subclasses), and prediction goes through the refitted :attr:`best_estimator_`."""

    def __sklearn_tags__(self):
        # Those of the IOKR it refits (MPIOKR keeps them): Y is a required 2-D array of output features.
        return IOKR(input_kernel=self.input_kernel).__sklearn_tags__()

    def _base_params(self):
        """The parameters of the refitted estimator (``_estimator``) as the search holds them: all but ``alpha``."""
        return {name: getattr(self, name) for name in self._estimator._get_param_names() if name != "alpha"}

    def _check_scoring_outputs(self, Y):
        """``(owner, scoring, Y)``: the scoring and decoding names and the output features, checked before any fit."""
        owner = type(self).__name__
        scoring = check_scoring(self.scoring, owner, {"mse", "top1", "top10", "mrr"})
        check_decoding(self.decoding, owner)
        return owner, scoring, check_output_features(Y, owner)

    # Each method's contract is IOKR's (MPIOKR inherits them), served by best_estimator_.
    def predict(self, X, candidate_sets, *, input_diag=None):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X, candidate_sets, input_diag=input_diag)

    def rank(self, X, candidate_sets, top_k=None, *, input_diag=None, candidate_term=None):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.rank(X, candidate_sets, top_k, input_diag=input_diag,
                                         candidate_term=candidate_term)

    def decision_function(self, X, C, *, input_diag=None):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X, C, input_diag=input_diag)

    def predict_features(self, X, *, input_diag=None):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_features(X, input_diag=input_diag)

    predict.__doc__ = IOKR.predict.__doc__
    rank.__doc__ = IOKR.rank.__doc__
    decision_function.__doc__ = IOKR.decision_function.__doc__
    predict_features.__doc__ = IOKR.predict_features.__doc__


def truth_ranks(queries, subsets, candidate_block, bytes_per_row, truth, working_memory):
    """Rank of each query's true candidate (position ``truth``) in its set, and its best-scoring pool row.

    ``queries`` are the hold-out predictions in the decoding's query form, one row per set of ``subsets``; scoring is
    the memory-budgeted :class:`~iokr.decoding.developer.Scorer` (ties averaged, ``-1`` as best row for an empty set).
    """
    scorer = Scorer(queries.shape[0], queries.shape[1], lambda block: queries[block], candidate_block, bytes_per_row)
    scores = set_scores(scorer, subsets, working_memory)
    tops = np.array([subsets.indices[q][int(np.argmax(s))] if s.size else -1 for q, s in enumerate(scores)],
                    dtype=np.intp)
    return ranks_of_truth(scores, truth), tops


@fill_doc(fit_parameters=parameters(RLS.fit), **SEARCH_DOCS)
class RLSCV(PathSearchMixin, RegressorMixin, BaseEstimator):
    """Kernel RLS with the regularization (and kernel parameters) chosen by closed-form cross-validation.

    Every hold-out prediction is exact, ``f_C(X_H) = Y_H - (G_HH)^{-1} A_H`` with ``G = (K + alpha I)^{-1}``,
    from one factorization per kernel setting (Pahikkala 2008, eq. 2.56); no model is retrained until the final
    refit of :attr:`best_estimator_` on all data.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,), default=DEFAULT_ALPHAS
        Regularization values, all > 0.
    param_grid : dict, optional
        Kernel parameters to search, keys ``"kernel"`` or ``"kernel__<name>"`` (e.g. ``{"kernel__gamma": [...]}``).
        Each setting is factored once and serves the whole alpha grid.
    cv : None, int, splitter or iterable, default=None
        ``None``: exact leave-one-out (leave-one-group-out with groups); int: ``KFold`` (``GroupKFold`` with
        groups); or any scikit-learn splitter whose training side is the complement of the test side.
    groups : array-like of shape (n,), optional
        Group labels. Give them here *or* to ``fit``, not both (an error otherwise).
    scoring : "mse" or callable, default="mse"
        ``"mse"``: negated mean squared error over held-out entries. A callable gets ``(y_true, y_pred)`` of one
        split and returns a float, greater is better.
    store_cv_results : bool, default=False
        Keep every hold-out prediction in ``cv_results_["holdout_predictions"]``.
    kernel : Kernel or str, default="linear"
        As in :class:`~iokr.estimators.rls.RLS` (``"precomputed"``: ``X`` is the training Gram).
    center : bool, default=False
        Center the kernel feature map and fit an unpenalized intercept, as :class:`~iokr.estimators.rls.RLS`; the
        hold-out values refit the intercept (and so the centering) on every training side, exactly (see Notes).
    normalize : bool, default=False
        Kernel normalization, its statistics fitted on the whole training set (see Notes).
    path_method : {"auto", "eigen", "cholesky"}, default="auto"
        Route of the regularization path (see :class:`~iokr.linalg.RegularizationPath`).
    working_memory : float, optional
        Budget in MiB for temporaries; the global setting by default.
    %(tol)s

    Attributes
    ----------
    %(best_attributes)s
    cv_results_ : dict of arrays
        ``params``, ``param_alpha``, ``param_<name>``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score`` and ``split_test_scores`` (n_settings, n_splits); ``mean_test_score_bound``
        (n_settings,) and ``split_test_score_bound`` (n_settings, n_splits), certified bounds on their distance to
        the exact closed form (skeleton compression and float64 round-off of the products; zero where the values
        were computed alpha by alpha, exact up to round-off). With ``store_cv_results``, also
        ``holdout_predictions``: a list (one entry per setting, in ``params`` order) of arrays of the shape of ``y``
        holding every example's hold-out prediction (stacked in split order when splits repeat examples).
    best_estimator_ : RLS
        Refit on all data with the best setting.
    path_methods_ : list of str
        Route taken per kernel setting (``"eigen"`` or ``"cholesky"``).
    skeleton_alphas_ : list of (ndarray or None)
        Per kernel setting, the alphas whose products served the whole grid of leave-one-out errors
        (:func:`~iokr.linalg.loo_squared_errors`, at the accuracy ``tol`` asks); None when the grid was evaluated
        alpha by alpha.
    cv_scheme_ : str
    n_splits_ : int

    Notes
    -----
    With ``center=True`` the model has an unpenalized intercept, ``f = K c + b``, and the closed form uses its shifted
    inverse ``G_inf = lim_{t -> inf} (K + t 1 1^T + alpha I)^{-1}`` (:class:`~iokr.linalg.RegularizationPath` with
    ``intercept=True``). Refitting this model on a training side is refitting the centering of inputs *and* targets
    on that side's own means, so with ``normalize=False`` every hold-out value equals that of
    ``RLS(center=True)`` retrained on the training side (no statistic of a held-out example is used). Normalization
    statistics are those of the whole training set (each example's norm after global centering): the hold-out
    value is then that of retraining with the normalization held fixed.
    """

    def __init__(self, alphas=DEFAULT_ALPHAS, param_grid=None, cv=None, groups=None, scoring="mse",
                 store_cv_results=False, kernel="linear", center=False, normalize=False, path_method="auto",
                 working_memory=None, tol=DEFAULT_TOL):
        self.alphas = alphas
        self.param_grid = param_grid
        self.cv = cv
        self.groups = groups
        self.scoring = scoring
        self.store_cv_results = store_cv_results
        self.kernel = kernel
        self.center = center
        self.normalize = normalize
        self.path_method = path_method
        self.working_memory = working_memory
        self.tol = tol

    def __sklearn_tags__(self):
        return RLS(kernel=self.kernel).__sklearn_tags__()

    def fit(self, X, y, groups=None):
        """Search the grid, then refit :attr:`best_estimator_` on all of ``X, y``.

        Parameters
        ----------
        %(fit_parameters)s
        %(groups)s

        %(returns)s
        """
        owner = type(self).__name__
        scoring = check_scoring(self.scoring, owner, {"mse"})
        (kernel_grid,) = expand_grid(self.param_grid, ("kernel",), owner)
        base = {"kernel": self.kernel, "center": self.center, "normalize": self.normalize,
                "working_memory": self.working_memory}
        check_y_given(y, owner)
        n = n_samples(X)
        alphas, holdouts, scheme = self._setup(n, groups, np.asarray(y))
        rows, scores, stored, bounds, self.path_methods_, self.skeleton_alphas_ = [], [], [], [], [], []
        best = (-np.inf, None, None, -1, None)  # (mean score, model, shifted solver, row, Gram): the refit reuses them
        for setting in kernel_grid:
            model = RLS(**apply_setting(base, setting))
            gram = model._fit_gram(X)
            y_checked = check_targets(y, gram.shape[0])
            path = RegularizationPath(gram, alphas, method=self.path_method, name="kernel", intercept=self.center)
            for alpha, solver, split_scores, predictions, bound in self._path_scores(path, y_checked, holdouts,
                                                                                    scoring):
                rows.append({**setting, "alpha": float(alpha)})
                scores.append(split_scores)
                stored.append(predictions)
                bounds.append(bound)
                if np.mean(split_scores) > best[0]:
                    best = (float(np.mean(split_scores)), model, solver, len(rows) - 1, gram)
            self.path_methods_.append(path.method)
        extra = ({"holdout_predictions": [per_example(holdouts, p, n) for p in stored]}
                 if self.store_cv_results else None)
        self._finish(rows, scores, [row["alpha"] for row in rows], scheme, len(holdouts), extra, bounds)
        # Refit on all data through the best setting's own Gram and factorization (no second kernel or
        # factorization); ties go to the first setting, as in _finish.
        _, model, solver, row, gram = best
        if row == self.best_index_:
            self.best_estimator_ = model.set_params(alpha=self.alpha_)._set_solution(solver, gram,
                                                                                    check_targets(y, solver.n))
        else:  # a tie resolved differently by the two orderings: refit from scratch
            self.best_estimator_ = RLS(**apply_setting(base, self.best_params_)).fit(X, y)
        self.n_features_in_ = self.best_estimator_.n_features_in_
        return self

    def _path_scores(self, path, y, holdouts, scoring):
        """Yield ``(alpha, solver, split scores, stacked hold-out predictions or None, (mean bound, split bounds))``
        along one path."""
        rows_all = np.concatenate(holdouts)
        bounds = np.cumsum([0] + [h.size for h in holdouts])
        loo = rows_all.size == len(holdouts)  # singleton hold-outs: vectorized leave-one-out values
        grid_errors, skeleton, exact = None, None, (0.0, np.zeros(len(holdouts)))
        if scoring == "mse" and loo and path.method == "eigen" and not self.store_cv_results:
            # Squared errors for the whole grid at once (a few skeleton alphas carry the products).
            grid_errors, skeleton, grid_bounds = loo_squared_errors(
                path.eigen, y, path.alphas, working_memory=self.working_memory, tol=self.tol, return_bounds=True)
            scale = 1 if y.ndim == 1 else y.shape[1]
            grid_errors /= scale
            row_bounds, mean_bounds = grid_bounds.rows / scale, grid_bounds.mean / scale
        self.skeleton_alphas_.append(None if skeleton is None else path.alphas[skeleton.indices])
        token, token_method = None, None
        for j, solver in enumerate(path):
            predictions, bound = None, exact
            if grid_errors is not None:
                per_row = grid_errors[j, rows_all]
                bound = (float(mean_bounds[j]), row_bounds[j, rows_all])
            else:
                if solver.method != token_method:  # the eigen projection serves all alphas of the path
                    token, token_method = solver.prepare(y), solver.method
                if loo:
                    residuals = loo_residuals(solver, token)[rows_all]
                else:
                    residuals = np.concatenate(holdout_residuals(solver, token, holdouts))
                predictions = y[rows_all] - residuals
                per_row = (residuals**2).reshape(rows_all.size, -1).mean(axis=1)
            if scoring == "mse":
                split_scores = list(-np.add.reduceat(per_row, bounds[:-1]) / np.diff(bounds))
            else:
                split_scores = [float(scoring(y[h], predictions[bounds[k]:bounds[k + 1]]))
                                for k, h in enumerate(holdouts)]
            yield path.alphas[j], solver, split_scores, predictions, bound

    def predict(self, X, *, input_diag=None):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X, input_diag=input_diag)

    predict.__doc__ = RLS.predict.__doc__  # the same contract, served by best_estimator_
