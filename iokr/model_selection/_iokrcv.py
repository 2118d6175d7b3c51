"""IOKR with alpha (and kernel parameters) chosen by closed-form hold-out: squared error or candidate ranking."""

from __future__ import annotations

import numpy as np
from scipy import linalg as sla
from sklearn.base import BaseEstimator

from .._config import working_memory_bytes
from .._docstrings import fill_doc, parameters
from ..decoding import CandidateSets, decoding_rule
from ..decoding.developer import as_candidate_sets
from ..estimators import IOKR, InputSide, OutputSide, gram_norms
from ..linalg import (
    RegularizationPath,
    holdout_residual_coefficients,
    holdout_residuals,
    loo_residuals,
    loo_squared_errors,
)
from ..linalg.developer import sq_norms_in_kernel
from ._duplicates import warn_duplicate_rows
from ._scoring import (
    HoldoutResult,
    needs_candidates,
    ranking_score,
    true_positions,
)
from ._search import (
    DEFAULT_ALPHAS,
    DEFAULT_TOL,
    SEARCH_DOCS,
    BestEstimatorMixin,
    PathSearchMixin,
    apply_setting,
    expand_grid,
    truth_ranks,
)


class _OutputTarget:
    """One output-kernel setting: its fitted output side and the right-hand sides of the hold-out algebra.

    Output kernels with explicit features of width ``p <= n`` work in feature space (hold-out predictions are
    ``(h, p)`` points, one ``n x n x p`` product per alpha). Wider explicit outputs (TF-IDF vocabularies) and kernel
    outputs work in the dual: predictions are combination coefficients over the ``n`` training outputs, errors go
    through the ``n x n`` output Gram and candidates are represented by their kernel values against the training
    outputs, which costs ``n`` instead of ``p`` per candidate and query.
    """

    def __init__(self, side, n):
        self.side = side
        self.explicit = side.explicit and side.train_features.shape[1] <= n
        self.rhs = side.train_features if self.explicit else None
        if side.explicit and not self.explicit:
            self.gram = side.train_features @ side.train_features.T
        else:
            self.gram = None if side.explicit else side.train_gram
        self._token, self._token_method = None, None
        self._pool_cache = None
        self._factor = None
        self.projected = None  # U^T of the error factor on the eigen grid route (kept for the refit if explicit)

    def error_factor(self):
        """``F`` with ``F F^T = K_y`` (transformed): output-space squared errors are Euclidean norms through ``F``."""
        if self.explicit:
            return self.rhs
        if self._factor is None:
            values, vectors = sla.eigh(self.gram, check_finite=False, driver="evd")
            keep = values > 0.0  # round-off negatives of a PSD Gram carry no output-space length
            self._factor = vectors[:, keep] * np.sqrt(values[keep])
        return self._factor

    def token(self, solver):
        if solver.method != self._token_method:  # one eigen projection serves all alphas of the path
            self._token, self._token_method = solver.prepare(self.rhs), solver.method
        return self._token

    def features(self, predictions):
        """Hold-out predictions as transformed output features, when the output kernel has them (else None)."""
        if not self.side.explicit:
            return None
        return predictions if self.explicit else predictions @ self.side.train_features

    @property
    def kernel(self):
        return self.side.kernel

    @property
    def n_features(self):
        return self.side.n_features

    def query_representation(self, predictions, decoding, *, norm_floor=None):
        if self.explicit or not self.side.explicit:
            return self.side.query_representation(predictions, decoding, norm_floor=norm_floor)
        # Dual coefficients over the training outputs of an explicit side: norms through its feature Gram.
        return decoding_rule(decoding).query(predictions, lambda P: gram_norms(P, self.gram), norm_floor=norm_floor)

    def candidate_block(self, C, decoding, name="candidates"):
        R, offset = self.side.candidate_block(C, decoding, name)
        if self.side.explicit and not self.explicit:
            R = R @ self.side.train_features.T.astype(R.dtype, copy=False)
        return R, offset

    def binary_rule(self, decoding):
        """Give None: hold-out pools are scored through :meth:`candidate_block` (cached once for all alphas)."""

    def cached_pool(self, pool, decoding, width, working_memory):
        """The candidate pool and its block function, with representations computed once for all alphas.

        Candidate representations do not depend on alpha: when the whole pool's fits in half the working-memory
        budget it is computed once and the scorer reads rows of it through an index pool; otherwise candidates
        are transformed block by block at every alpha (streaming).
        """
        if pool.shape[0] * (width + 1) * 8 > working_memory_bytes(working_memory) // 2:
            return pool, lambda C: self.candidate_block(C, decoding)
        if self._pool_cache is None or self._pool_cache[0] is not pool or self._pool_cache[1] != decoding:
            R, offset = self.candidate_block(pool[0:pool.shape[0]], decoding)
            self._pool_cache = (pool, decoding, R, offset)
        _, _, R, offset = self._pool_cache

        def block(index_rows):
            rows = np.asarray(index_rows)[:, 0]
            return R[rows], None if offset is None else offset[rows]

        return np.arange(pool.shape[0])[:, None], block

    def candidate_bytes_per_row(self, n):
        width = self.side.n_features if self.side.explicit else n
        return 3 * 8 * (width + n)


def _stored_values(record, n):
    """Per-example arrays of one setting from the split-ordered hold-out values (rows never held out are NaN)."""
    rows, predictions = record["rows"], record["predictions"]
    out = np.full((n,) + predictions.shape[1:], np.nan)
    out[rows] = predictions  # a row held out twice keeps its last split's value (fancy assignment order)
    ranks = None
    if record["ranks"] is not None:
        ranks = np.full(n, np.nan)
        ranks[rows] = record["ranks"]
    return out, ranks


@fill_doc(estimator_parameters=parameters(IOKR, "input_kernel", "output_kernel", "center_input, normalize_input",
                                          "center_output, normalize_output", "decoding"),
          fit_parameters=parameters(IOKR.fit), **SEARCH_DOCS)
class IOKRCV(PathSearchMixin, BestEstimatorMixin, BaseEstimator):
    """IOKR whose regularization (and kernel parameters) are chosen by exact closed-form cross-validation.

    For a hold-out set ``H`` the IOKR model trained on the other examples predicts the output-space point
    ``h_C(x_H) = W_H Psi`` with combination coefficients ``W_H = E_H - (G_HH)^{-1} G_H``,
    ``G = (K_x + alpha I)^{-1}`` (Pahikkala 2008, eq. 2.56 with the training outputs as targets). Squared errors
    ``||h_C(x_i) - psi(y_i)||^2`` (through ``K_y``) and the scores of any candidate follow exactly, without
    refitting; one factorization of ``K_x`` serves the whole alpha grid and every output-kernel setting.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,), default=DEFAULT_ALPHAS
        Grid of regularization values ``alpha`` searched by closed-form hold-out.
    %(estimator_parameters)s
    cv : None, int, splitter or iterable, default=None
        ``None``: exact leave-one-out (leave-one-group-out with groups); int: ``KFold`` (``GroupKFold`` with
        groups); or any scikit-learn splitter whose training side is the complement of the test side.
    groups : array-like of shape (n,), optional
        Group labels (e.g. all spectra of one molecule). Give them here *or* to ``fit``, not both. Exact duplicate
        inputs must share a group (``np.unique(X, axis=0, return_inverse=True)[1]``): without groups a copy on the
        training side predicts its held-out twin and the search favours the smallest alpha; ``fit`` warns when its
        hold-out splits separate exact duplicate examples (equal rows of ``X``, features or precomputed Gram, with
        equal rows of ``Y``).
    scoring : {"mse", "top1", "top10", "top<k>", "mrr"} or callable, default="mse"
        ``"mse"``: negated mean output-space squared error. Ranking scores rank every held-out example's own output
        in its candidate set (``candidate_sets`` of ``fit``) with the hold-out prediction. A callable receives a
        :class:`~iokr.model_selection.HoldoutResult` per split and returns a float, greater is better.
    param_grid : dict, optional
        Kernel parameters, keys ``"input_kernel__<name>"`` / ``"output_kernel__<name>"`` (or whole kernels under
        ``"input_kernel"`` / ``"output_kernel"``). Each input setting is factored once; output settings reuse it.
    path_method : {"auto", "eigen", "cholesky"}, default="auto"
        Route of the regularization path: one eigendecomposition of ``K_x`` for the whole grid, or one Cholesky
        factorization per alpha; ``"auto"`` takes the eigen route for long grids (see
        :class:`~iokr.linalg.RegularizationPath`).
    working_memory : float, optional
        Budget in MiB for temporaries of scoring; the global setting by default.
    store_cv_results : bool, default=False
        Keep every held-out example's hold-out values in ``cv_results_`` (below).
    refit : bool, default=True
        Refit :attr:`best_estimator_` on all data with the best setting. ``False``: the search only (``cv_results_``
        and the ``best_*`` attributes; no ``best_estimator_``, so no prediction), which saves one IOKR fit (a
        factorization and the output Gram) when only the hold-out values are wanted. With one input setting on the
        eigen route and explicit outputs of width ``p <= n`` (squared-error leave-one-out), the refit reuses the
        search's decomposition and ``U^T Psi``: one ``n x n x p`` product instead of a new Gram and Cholesky (the
        same model: the plain ridge solve, recovered from the intercept-deflated decomposition by one bordered
        step, :meth:`~iokr.linalg.EigenPath.solve_without_intercept`).
    %(tol)s

    Attributes
    ----------
    %(best_attributes)s
    cv_results_ : dict of arrays
        ``params``, ``param_alpha``, ``param_<name>``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``split_test_scores`` (n_settings, n_splits); ``mean_test_score_bound`` (n_settings,)
        and ``split_test_score_bound`` (n_settings, n_splits), certified bounds on their distance to the exact
        closed form (skeleton compression and float64 round-off of the products; zero where the values were
        computed alpha by alpha, exact up to round-off). With ``store_cv_results=True`` also
        ``holdout_predictions``: a list (one entry per setting, in ``params`` order) of arrays of shape (n, p),
        the hold-out predictions as transformed output features (as ``HoldoutResult.features``), or of shape
        (n, n), combinations of the training outputs (as ``HoldoutResult.coefficients``: kernel outputs and
        explicit outputs wider than n); and, when ``candidate_sets`` are given, ``holdout_ranks``: a list of arrays
        of shape (n,), the rank of each example's own output in its set (NaN where it is missing). Rows of
        examples no split holds out are NaN; an example held out by several splits keeps its last split's values.
    best_estimator_ : IOKR
        Refit on all data with the best setting (only with ``refit=True``).
    path_methods_ : list of str
        Route of the regularization path per input setting.
    skeleton_alphas_ : list of (ndarray or None)
        Per input setting, the alphas whose ``n x n x p`` products served the whole grid of leave-one-out squared
        errors (:func:`~iokr.linalg.loo_squared_errors`, at the accuracy ``tol`` asks); None when the grid was
        evaluated alpha by alpha (ranking scores, k-fold, Cholesky route).
    cv_scheme_ : str
    n_splits_ : int

    Notes
    -----
    Transforms. The transformed Grams are computed once, with centering/normalization statistics of the whole
    training set. Used naively, global centering leaks the held-out outputs: centered features sum to zero, so
    ``psi_c(y_i) = -sum_{j != i} psi_c(y_j)`` and, with small alphas, leave-one-out "predicts" the held-out output
    exactly. When both sides are centered (the default), the closed form therefore uses the model with an
    unpenalized intercept (:class:`~iokr.linalg.developer.InterceptShift`), which is exactly what refitting the centering on
    each training side gives: with ``normalize_input=normalize_output=False`` every hold-out value equals that of an
    IOKR refitted on the training side (output-space errors, and candidate ranks under ``decoding="distance"``).
    Normalization statistics stay those of the whole training set (each example's norm after global centering),
    a small difference to full refitting, measured on real data in ``reports/model_selection.md``. With only one
    side centered there is no intercept form; the values are those of retraining with the global transforms held
    fixed (and carry the leak above).

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.model_selection import IOKRCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 4))
    >>> Y = np.tanh(X @ rng.normal(size=(4, 3)))  # outputs that depend on the inputs
    >>> cv = IOKRCV(alphas=[0.1, 1.0, 10.0]).fit(X, Y)
    >>> cv.alpha_ in (0.1, 1.0, 10.0)
    True
    """

    _estimator = IOKR

    def __init__(self, alphas=DEFAULT_ALPHAS, input_kernel="linear", output_kernel="linear",
                 center_input=True, normalize_input=True, center_output=True, normalize_output=True,
                 decoding="distance", cv=None, groups=None, scoring="mse", param_grid=None, path_method="auto",
                 working_memory=None, store_cv_results=False, refit=True, tol=DEFAULT_TOL):
        self.alphas = alphas
        self.input_kernel = input_kernel
        self.output_kernel = output_kernel
        self.center_input = center_input
        self.normalize_input = normalize_input
        self.center_output = center_output
        self.normalize_output = normalize_output
        self.decoding = decoding
        self.cv = cv
        self.groups = groups
        self.scoring = scoring
        self.param_grid = param_grid
        self.path_method = path_method
        self.working_memory = working_memory
        self.store_cv_results = store_cv_results
        self.refit = refit
        self.tol = tol

    def fit(self, X, Y, candidate_sets=None, groups=None):
        """Search the grid by closed-form hold-out, then refit :attr:`best_estimator_` on all data.

        Parameters
        ----------
        %(fit_parameters)s
        candidate_sets : CandidateSets or list of n arrays of shape (n_i, p), optional
            One candidate set per training example, containing that example's own output row (exact match);
            needed by the ranking scores. With a callable scoring the sets may lack the own output (its rank is then
            NaN) and the best candidate of each set is passed on (``HoldoutResult.top_candidates``).
        %(groups)s

        %(returns)s
        """
        owner, scoring, Y = self._check_scoring_outputs(Y)
        if needs_candidates(scoring) and candidate_sets is None:
            raise ValueError(f"{owner}: scoring={scoring!r} ranks each example's own output among its candidates; "
                             "pass candidate_sets to fit (one set per training example).")
        input_grid, output_grid = expand_grid(self.param_grid, ("input_kernel", "output_kernel"), owner)
        n = np.shape(X)[0]
        if Y.shape[0] != n:
            raise ValueError(f"'X' has {n} examples but 'Y' has {Y.shape[0]}.")
        sets, truth = None, None
        if candidate_sets is not None:
            sets = as_candidate_sets(candidate_sets, n, Y.shape[1])
            truth = true_positions(sets, Y, owner, required=needs_candidates(scoring))
        alphas, holdouts, scheme = self._setup(n, groups, None)
        warn_duplicate_rows(X, Y, holdouts, owner)
        base = self._base_params()
        rows, scores, used, bounds, self.path_methods_, self.skeleton_alphas_ = [], [], [], [], [], []
        stored = [] if self.store_cv_results else None
        for in_setting in input_grid:
            in_params = apply_setting(base, in_setting)
            input_side = InputSide(in_params["input_kernel"], self.center_input, self.normalize_input)
            gram = input_side.fit_gram(X)
            targets = []
            for out_setting in output_grid:
                out_params = apply_setting(base, out_setting)
                side = OutputSide(out_params["output_kernel"], self.center_output, self.normalize_output)
                targets.append((out_setting, _OutputTarget(side.fit(Y), n)))
            intercept = self.center_input and self.center_output
            path = RegularizationPath(gram, alphas, method=self.path_method, name="input kernel",
                                      intercept=intercept)
            results = self._path_results(path, targets, holdouts, scoring, sets, truth, stored is not None)
            for k, (out_setting, _) in enumerate(targets):
                for j, alpha in enumerate(alphas):
                    rows.append({**in_setting, **out_setting, "alpha": float(alpha)})
                    scores.append(results[(k, j)])
                    bounds.append(results.get((k, j, "bound"), (0.0, np.zeros(len(holdouts)))))
                    used.append(float(alpha))
                    if stored is not None:
                        stored.append(_stored_values(results[(k, j, "stored")], n))
            self.path_methods_.append(path.method)
        self._finish(rows, scores, used, scheme, len(holdouts), bounds=bounds)
        if stored is not None:
            self.cv_results_["holdout_predictions"] = [p for p, _ in stored]
            if sets is not None:
                self.cv_results_["holdout_ranks"] = [r for _, r in stored]
        if self.refit:
            best = IOKR(**apply_setting(base, self.best_params_))
            reused = self._reusable_refit(input_grid, path, targets)
            if reused is None:
                best.fit(X, Y)
            else:  # the path's decomposition and U^T Psi give the dual coefficients with one product
                input_side.owner = IOKR.__name__  # the refitted estimator's name in its own error messages
                dual = path.eigen.solve_without_intercept(gram, reused.rhs, self.best_params_["alpha"],
                                                          projected=reused.projected)
                best._set_fitted(input_side, reused.side, dual)
            self.best_estimator_ = best
            self.n_features_in_ = self.best_estimator_.n_features_in_
            self.n_output_features_ = self.best_estimator_.n_output_features_
        return self

    def _reusable_refit(self, input_grid, path, targets):
        """The best output setting's target when the refit can reuse the last path (else None).

        Only one input setting leaves its path alive at the end; the explicit-output grid route kept ``U^T Psi``.
        """
        if len(input_grid) != 1 or path.method != "eigen":
            return None
        k = self.best_index_ // len(path.alphas)
        target = targets[k][1]
        if not target.explicit or target.projected is None:
            return None
        return target

    def _path_results(self, path, targets, holdouts, scoring, sets, truth, store):
        """Split scores ``{(output setting, alpha index): scores}`` along one input setting's path (with
        ``store``, also ``{(k, j, "stored"): record}``; on the grid route ``{(k, j, "bound"): (mean bound, split
        bounds)}``); records the skeleton alphas of the leave-one-out grid."""
        alphas, results, skeleton = path.alphas, {}, None
        if scoring == "mse" and not store and path.method == "eigen" and all(h.size == 1 for h in holdouts):
            # Squared errors for the whole grid at once: a few skeleton alphas carry the n x n x p products.
            rows_all = np.concatenate(holdouts)
            for k, (_, target) in enumerate(targets):
                factor = target.error_factor()
                # U^T F once: it feeds the grid and, for explicit outputs (F = the training features), the refit.
                target.projected = path.eigen.project(factor)
                sq, skeleton, bounds = loo_squared_errors(path.eigen, factor, alphas,
                                                          working_memory=self.working_memory, tol=self.tol,
                                                          return_bounds=True, projected=target.projected)
                if not target.explicit:
                    target.projected = None
                for j in range(alphas.size):
                    results[(k, j)] = list(-sq[j, rows_all])
                    results[(k, j, "bound")] = (float(bounds.mean[j]), bounds.rows[j, rows_all])
        self.skeleton_alphas_.append(None if skeleton is None else alphas[skeleton.indices])
        for j, solver in enumerate(path):  # (also raises the path's conditioning warnings)
            if (0, j) in results:
                continue
            shared = {}  # output-independent hold-out algebra at this alpha, shared by all output settings
            for k, (_, target) in enumerate(targets):
                record = {} if store else None
                shared["last_use"] = k == len(targets) - 1  # the last output setting may consume the coefficients
                results[(k, j)] = self._split_scores(solver, target, holdouts, scoring, sets, truth, shared, record)
                if record is not None:
                    results[(k, j, "stored")] = record
        return results

    # -- per-alpha hold-out evaluation -------------------------------------------------------------------------------
    def _split_scores(self, solver, target, holdouts, scoring, sets, truth, shared, record=None):
        """Per-split scores at one alpha; hold-out values are stacked in the order of ``concatenate(holdouts)``.

        ``record`` (a dict, optional) receives the rows, the hold-out predictions (features or coefficients, as
        ``HoldoutResult``) and the ranks, for ``store_cv_results``.
        """
        want_predictions = needs_candidates(scoring) or callable(scoring) or record is not None
        rows = np.concatenate(holdouts)
        bounds = np.cumsum([0] + [h.size for h in holdouts])
        loo = rows.size == len(holdouts)  # singleton hold-outs: leave-one-out values, vectorized
        predictions = None
        if target.explicit:
            token = target.token(solver)
            residuals = loo_residuals(solver, token)[rows] if loo else np.vstack(
                holdout_residuals(solver, token, holdouts))
            sq_errors = np.einsum("ij,ij->i", residuals, residuals)
            if want_predictions:
                predictions = target.rhs[rows] - residuals
        else:
            if "coefficients" not in shared:
                if loo:
                    coefficients = solver.inverse_rows(rows)
                    coefficients /= coefficients[np.arange(rows.size), rows][:, None]
                else:
                    coefficients = holdout_residual_coefficients(solver, holdouts, stacked=True)
                shared["coefficients"] = coefficients
            coefficients = shared["coefficients"]
            sq_errors = sq_norms_in_kernel(coefficients, target.gram, self.working_memory)
            if want_predictions:
                if shared.get("last_use", True):  # negated in place: one n x n array fewer at the peak
                    predictions = np.negative(shared.pop("coefficients"), out=coefficients)
                else:
                    predictions = -coefficients
                for k, h in enumerate(holdouts):  # W_H = E_H - R_H vanishes on H
                    predictions[bounds[k]:bounds[k + 1], h] = 0.0
        ranks = tops = None
        if sets is not None and predictions is not None:
            ranks, tops = self._ranks(target, rows, predictions, sets, truth)
        if record is not None:
            features = target.features(predictions)
            record.update(rows=rows, predictions=features if features is not None else predictions, ranks=ranks)
        out = []
        for k, h in enumerate(holdouts):
            part = slice(bounds[k], bounds[k + 1])
            if scoring == "mse":
                out.append(-float(np.mean(sq_errors[part])))
            elif callable(scoring):
                result = HoldoutResult(h, sq_errors[part], None if ranks is None else ranks[part],
                                       None if tops is None else tops[part],
                                       target.features(predictions[part]),
                                       None if target.explicit else predictions[part])
                out.append(float(scoring(result)))
            else:
                out.append(ranking_score(scoring, ranks[part]))
        return out

    def _ranks(self, target, rows, predictions, sets, truth):
        """Rank of each held-out example's own output among its candidates, scored with the hold-out prediction."""
        queries = target.query_representation(predictions, self.decoding)
        pool, candidate_block = target.cached_pool(sets.pool, self.decoding, queries.shape[1], self.working_memory)
        return truth_ranks(queries, CandidateSets(pool, [sets.indices[i] for i in rows]), candidate_block,
                           target.candidate_bytes_per_row(queries.shape[1]), truth[rows], self.working_memory)
