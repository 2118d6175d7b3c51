"""MP-IOKR with alpha (and the reverse models' gamma) chosen by hold-out over one factorization per setting."""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator

from .._docstrings import fill_doc, parameters
from ..decoding import CandidateSets
from ..decoding.developer import as_candidate_sets
from ..estimators import MPIOKR
from ..linalg import mixing_holdout_coefficients
from ._scoring import HoldoutResult, needs_candidates, ranking_score, true_positions
from ._search import DEFAULT_ALPHAS, SEARCH_DOCS, BestEstimatorMixin, PathSearchMixin, truth_ranks

#: ``path_method`` of the CV estimators -> route of :class:`~iokr.linalg.ProductShiftPath`.
_ROUTES = {"auto": "auto", "eigen": "eigen", "cholesky": "lu"}


@fill_doc(estimator_parameters=parameters(MPIOKR, "input_kernel, output_kernel",
                                          "center_input, normalize_input, center_output, normalize_output", "decoding"),
          subsampling_parameters=parameters(MPIOKR, "candidate_fraction", "random_state"),
          fit_parameters=parameters(MPIOKR.fit, "X", "Y", "candidate_sets", "candidate_inputs"), **SEARCH_DOCS)
class MPIOKRCV(PathSearchMixin, BestEstimatorMixin, BaseEstimator):
    """MP-IOKR whose ``alpha`` (and ``gamma``) are chosen by hold-out, one factorization serving each alpha path.

    ``approximation="known"``: exact closed-form hold-out from one fit on all data (no refit per split). Leaving the
    examples ``H`` out of objective (4) removes their pseudo-examples, ``B_C = B - sum_{i in H} B_i``; the model
    trained without them predicts at each held-out input exactly
    ``(Z B)_i - alpha Z_iS (I - D Z_SS)^{-1} D (M^{-1})_S`` (:func:`~iokr.linalg.mixing_holdout_coefficients`,
    derivation in :mod:`iokr.linalg._product_path`).

    ``approximation="joint"`` / ``"separate"``: **exact refits** per split. Refitting on a training side also
    retrains the reverse models ``g`` on that side, which changes every approximated candidate input (a rank-|H|
    change of ``E`` per group on top of the removed pseudo-examples); that closed form is not implemented, so each
    split and ``gamma`` fits :class:`~iokr.MPIOKR` on its training side once and the product ``D_K B`` of that fit
    serves the whole alpha grid (:class:`~iokr.linalg.ProductShiftPath`). The candidate statistics of a split are
    computed once and reused by every ``gamma``.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,), default=DEFAULT_ALPHAS
        Regularization values searched.
    gammas : list, optional
        Values of MP-IOKR's ``gamma`` searched (each a float, or one value per base kernel for ``"separate"``);
        default: ``[gamma]``. Not used by ``"known"`` (an error if given).
    cv : None, int, splitter or iterable, default=None
        As in :class:`IOKRCV` (complement-training splits; ``None`` is leave-one-out).
    groups : array-like of shape (n,), optional
        Group labels; here *or* in ``fit``.
    scoring : {"mse", "top1", "top10", "top<k>", "mrr"} or callable, default="mse"
        ``"mse"``: negated mean output-space squared error ``||h_C(x_i) - psi(y_i)||^2``. Ranking scores rank each
        held-out example's own output in its set of ``scoring_sets`` (default: its training candidate set) with the
        hold-out prediction. A callable receives a :class:`HoldoutResult` per split; greater is better.
    store_cv_results : bool, default=False
        Keep the hold-out values in ``cv_results_`` (see Attributes).
    path_method : {"auto", "eigen", "cholesky"}, default="auto"
        Route of the alpha path: two symmetric eigendecompositions for the whole grid, or one LU factorization of
        ``alpha I + D_K B`` per alpha (``"cholesky"``); ``"auto"`` as :class:`~iokr.linalg.RegularizationPath`.
    %(estimator_parameters)s
    working_memory : float, optional
        Budget in MiB for temporaries of scoring; the global setting by default.
    approximation : {"known", "joint", "separate"}, default="known"
        As in :class:`~iokr.MPIOKR`; decides the hold-out route (closed form or refits).
    gamma : float or sequence of float, default=1.0
        As in :class:`~iokr.MPIOKR`, when ``gammas`` is None.
    %(subsampling_parameters)s

    Attributes
    ----------
    %(best_attributes)s
    cv_results_ : dict
        ``params``, ``param_alpha``, ``param_gamma`` (approximated inputs), ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``split_test_scores``. With ``store_cv_results=True`` also ``holdout_predictions``, a
        list (one entry per setting, in ``params`` order) of arrays: shape (n, p), transformed output features
        (explicit output kernels), or (n, n + n_pool), combinations of ``[training outputs; candidate pool rows]``
        in the transformed output space (kernel outputs); and ``holdout_ranks`` (n,) per setting when scoring sets
        are available. Rows no split holds out are NaN.
    best_estimator_ : MPIOKR
        Refit on all data with the best setting (``"known"``: the all-data fit's product, at ``alpha_``).
    holdout_method_ : {"closed_form", "refit"}
    cv_scheme_ : str
    n_splits_ : int

    Notes
    -----
    Transforms. The closed form (``"known"``) uses centering/normalization statistics of the whole training set and
    the candidate subsample drawn once on all data: its hold-out values equal MP-IOKR refits on each training side
    with those transforms and candidates held fixed (with ``center_*=normalize_*=False`` and
    ``candidate_fraction=1``, plain refits). The refit variants refit everything per split, transforms and
    subsampling included. Training candidate sets of the training side are the given sets of its examples.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.model_selection import MPIOKRCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 3))
    >>> Y = X @ rng.normal(size=(3, 4))
    >>> sets = [Y[rng.choice(20, 4, replace=False)] for _ in range(20)]
    >>> inputs = [X[rng.choice(20, 4, replace=False)] for _ in range(20)]
    >>> cv = MPIOKRCV(alphas=[0.1, 1.0], cv=4).fit(X, Y, sets, inputs)
    >>> cv.alpha_ in (0.1, 1.0)
    True
    """

    _estimator = MPIOKR

    def __init__(self, alphas=DEFAULT_ALPHAS, gammas=None, cv=None, groups=None, scoring="mse",
                 store_cv_results=False, path_method="auto", input_kernel="linear", output_kernel="linear",
                 center_input=True, normalize_input=True, center_output=True, normalize_output=True,
                 decoding="distance", working_memory=None, approximation="known", gamma=1.0, candidate_fraction=1.0,
                 random_state=None):
        self.alphas = alphas
        self.gammas = gammas
        self.cv = cv
        self.groups = groups
        self.scoring = scoring
        self.store_cv_results = store_cv_results
        self.path_method = path_method
        self.input_kernel = input_kernel
        self.output_kernel = output_kernel
        self.center_input = center_input
        self.normalize_input = normalize_input
        self.center_output = center_output
        self.normalize_output = normalize_output
        self.decoding = decoding
        self.working_memory = working_memory
        self.approximation = approximation
        self.gamma = gamma
        self.candidate_fraction = candidate_fraction
        self.random_state = random_state

    def _gamma_grid(self, owner):
        if self.gammas is None:
            return [{}]
        if self.approximation == "known":
            raise ValueError(f"The 'gammas' parameter of {owner} is only used with approximated candidate inputs "
                             f"('joint', 'separate'); got approximation='known'. Pass gammas=None.")
        values = list(self.gammas) if not isinstance(self.gammas, (str, bytes)) else []
        if not values:
            raise ValueError(f"The 'gammas' parameter of {owner} must be a non-empty list of gamma values or None. "
                             f"Got {self.gammas!r} instead.")
        return [{"gamma": g} for g in values]

    def fit(self, X, Y, candidate_sets, candidate_inputs=None, *, scoring_sets=None, groups=None):
        """Search the grid by hold-out, then refit :attr:`best_estimator_` on all data.

        Parameters
        ----------
        %(fit_parameters)s
        scoring_sets : CandidateSets or list of n arrays of shape (m_i, p), optional
            The sets the ranking scores rank each held-out example's own output in (it must be in its set);
            default: the training candidate sets.
        %(groups)s

        %(returns)s
        """
        owner, scoring, Y = self._check_scoring_outputs(Y)
        n = Y.shape[0]
        settings = self._gamma_grid(owner)
        alphas, holdouts, scheme = self._setup(n, groups, None)
        route = _ROUTES[self.path_method]
        base = self._base_params()
        checker = MPIOKR(**base)
        checker._check_mp_params()
        sets = checker._check_sets(candidate_sets, n, Y.shape[1])
        ranking = as_candidate_sets(scoring_sets, n, Y.shape[1]) if scoring_sets is not None else sets
        truth = true_positions(ranking, Y, owner, required=needs_candidates(scoring))
        context = _Context(holdouts, scoring, ranking, truth, Y, n, self.decoding, self.working_memory,
                           self.store_cv_results)
        context.n_pool = sets.pool.shape[0]
        if self.approximation == "known":
            self.holdout_method_ = "closed_form"
            model, path = self._closed_form(X, Y, candidate_sets, candidate_inputs, alphas, route, base, context)
        else:
            self.holdout_method_ = "refit"
            self._refits(X, Y, sets, settings, alphas, route, base, context)
        rows = [{**setting, "alpha": float(a)} for setting in settings for a in alphas]
        self._finish(rows, context.scores, [r["alpha"] for r in rows], scheme, len(holdouts))
        if "param_gamma" in self.cv_results_:  # one entry per setting, also for per-kernel gamma lists
            column = np.empty(len(rows), dtype=object)
            for i, row in enumerate(rows):
                column[i] = row["gamma"]
            self.cv_results_["param_gamma"] = column
        if self.store_cv_results:
            self.cv_results_["holdout_predictions"] = context.predictions
            if context.has_ranks:
                self.cv_results_["holdout_ranks"] = context.ranks
        if self.approximation == "known":
            self.best_estimator_ = _at_alpha(model, path, self.alpha_)
        else:
            params = {**base, **settings[self.best_index_ // alphas.size], "alpha": self.alpha_}
            self.best_estimator_ = MPIOKR(**params).fit(X, Y, sets)
        self.n_features_in_ = self.best_estimator_.n_features_in_
        self.n_output_features_ = self.best_estimator_.n_output_features_
        return self

    def _closed_form(self, X, Y, candidate_sets, candidate_inputs, alphas, route, base, context):
        """All-data fit, then the exact hold-out of every split at every alpha (``"known"``)."""
        model = MPIOKR(**base, alpha=float(alphas[0]))
        model._keep_system = {"alphas": alphas, "method": route}
        model.fit(X, Y, candidate_sets, candidate_inputs)
        system = model._system
        gram, mixing, path = system["gram"], system["mixing"], system["path"]
        layout = system["layout"]
        used, kept = layout.used_rows, system["used"]
        mean_op = layout.mean_operator[:, used].tocsr()
        held = [system["merge"].T @ _held_mixing(mean_op, rows) @ system["merge"] for rows in context.holdouts]
        explicit = model.output_.explicit
        basis_features = model._basis_output_features(system["sets"], kept) if explicit else None
        values = _OutputValues(model.output_, context)
        basis_rows = np.concatenate([np.arange(context.n), context.n + kept])
        for shift in path:
            coefficients = mixing_holdout_coefficients(shift, gram, mixing, held, context.holdouts)
            preds = np.vstack(coefficients)
            if explicit:
                preds = preds @ basis_features
            values.record(preds, basis_rows)
        return model, path

    def _refits(self, X, Y, sets, settings, alphas, route, base, context):
        """Per split: one MP-IOKR fit per ``gamma`` on its training side; the alpha path reuses its ``D_K B``."""
        n = context.n
        precomputed = isinstance(self.input_kernel, str) and self.input_kernel == "precomputed"
        per_setting = [[None] * len(context.holdouts) for _ in range(len(settings) * alphas.size)]
        X = np.asarray(X) if precomputed else X
        for k, rows in enumerate(context.holdouts):
            train = np.setdiff1d(np.arange(n), rows)
            train_sets = CandidateSets(sets.pool, [sets.indices[i] for i in train])
            X_train = X[np.ix_(train, train)] if precomputed else X[train]
            X_test = X[np.ix_(rows, train)] if precomputed else X[rows]
            stats = None
            for g, setting in enumerate(settings):
                model = MPIOKR(**{**base, **setting}, alpha=float(alphas[0]))
                model._keep_system = {"alphas": alphas, "method": route}
                model.fit(X_train, Y[train], train_sets, candidate_stats=stats)
                stats = model.candidate_stats_
                system = model.__dict__.pop("_system")
                X_checked, diag = model.input_.check_test(X_test)
                test_gram = model.input_.test_block(X_checked, slice(None), diag)
                basis_rows = np.concatenate([train, n + system["layout"].used_rows])
                values = _OutputValues(model.output_, context.for_split(k))
                for j, shift in enumerate(system["path"]):
                    model._use_shift(shift, system["rhs_factory"])
                    per_setting[g * alphas.size + j][k] = values.split_values(model._coefficients(test_gram),
                                                                              basis_rows)
        for split_values in per_setting:
            context.record_splits(split_values)


def _held_mixing(mean_op, rows):
    """``sum_{i in H} B_i`` over ``[examples; used candidates]``: ``B_i = e_i e_i^T - e_i v_i^T - v_i e_i^T +
    diag(v_i)`` with ``v_i`` the set weights of example ``i`` (``e_i e_i^T`` for an empty set)."""
    n = mean_op.shape[0]
    indicator = np.zeros(n)
    indicator[rows] = 1.0
    cross = sparse.diags(indicator) @ mean_op
    return sparse.bmat([[sparse.diags(indicator), -cross],
                        [-cross.T, sparse.diags(np.asarray(cross.sum(axis=0)).ravel())]], format="csr")


def _at_alpha(model, path, alpha):
    """The all-data ``"known"`` fit moved to ``alpha`` on its path (no new product or transform)."""
    system = model.__dict__.pop("_system")
    del model._keep_system
    model.set_params(alpha=alpha)
    shift = path.shift(alpha)
    model._shift = shift  # what _use_shift sets; the basis and mixing of the fit stay
    if model.output_.explicit:
        model.dual_coef_ = shift.solve_transposed(np.asarray(system["rhs_factory"](), dtype=np.float64))
    return model


class _Context:
    """What every evaluation shares: splits, scoring, ranking sets, and the per-setting stores."""

    def __init__(self, holdouts, scoring, ranking, truth, Y, n, decoding, working_memory, store):
        self.holdouts, self.scoring, self.ranking, self.truth, self.Y, self.n = holdouts, scoring, ranking, truth, Y, n
        self.decoding, self.working_memory, self.store = decoding, working_memory, store
        self.rows = np.concatenate(holdouts)
        self.bounds = np.cumsum([0] + [h.size for h in holdouts])
        self.scores, self.predictions, self.ranks = [], [], []
        self.has_ranks = True
        self.n_pool = 0  # rows of the training candidate pool (the stored coefficients' second block)

    def for_split(self, k):
        view = _Context([self.holdouts[k]], self.scoring, self.ranking, self.truth, self.Y, self.n, self.decoding,
                        self.working_memory, self.store)
        view.n_pool = self.n_pool
        return view

    def record_splits(self, split_values):
        """One setting's values, given per split as (score, rows, predictions, ranks)."""
        self.scores.append([v[0] for v in split_values])
        if self.store:
            self._store([v[1] for v in split_values], [v[2] for v in split_values], [v[3] for v in split_values])

    def _store(self, rows, predictions, ranks):
        width = predictions[0].shape[1]
        out = np.full((self.n, width), np.nan)
        for r, p in zip(rows, predictions, strict=True):
            out[r] = p
        self.predictions.append(out)
        if ranks[0] is None:
            self.has_ranks = False
            return
        stored = np.full(self.n, np.nan)
        for r, values in zip(rows, ranks, strict=True):
            stored[r] = values
        self.ranks.append(stored)


class _OutputValues:
    """Scores (and stored values) of hold-out predictions in one fitted model's transformed output space."""

    def __init__(self, output, context):
        self.output, self.context = output, context
        self.explicit = output.explicit
        self._basis_gram = None if self.explicit else output.basis.gram(output.side.train_gram)
        self._own = output.candidate_block(context.Y[context.rows], "distance")

    def _sq_errors(self, preds):
        R, neg_sq = self._own
        norms = (np.einsum("ij,ij->i", preds, preds) if self.explicit
                 else np.einsum("ij,ij->i", preds @ self._basis_gram, preds))
        return np.clip(norms - 2.0 * np.einsum("ij,ij->i", preds, R) - neg_sq, 0.0, None)

    def _ranks(self, preds):
        c = self.context
        queries = self.output.query_representation(preds, c.decoding)
        subsets = CandidateSets(c.ranking.pool, [c.ranking.indices[i] for i in c.rows])
        return truth_ranks(queries, subsets, lambda C: self.output.candidate_block(C, c.decoding),
                           self.output.candidate_bytes_per_row(queries.shape[1]), c.truth[c.rows], c.working_memory)

    def split_values(self, preds, basis_rows):
        """(score, rows, stored prediction, ranks) of the one split of a per-split context."""
        return self._values(preds, basis_rows)[0]

    def record(self, preds, basis_rows):
        """Score every split of the context at one setting (preds stacked in the order of its hold-out sets)."""
        self.context.record_splits(self._values(preds, basis_rows))

    def _values(self, preds, basis_rows):
        c = self.context
        sq = self._sq_errors(preds)
        ranks = tops = None
        if needs_candidates(c.scoring) or callable(c.scoring) or c.store:
            ranks, tops = self._ranks(preds)
        stored = preds
        if not self.explicit:  # coefficients over [training outputs; pool rows]
            stored = np.zeros((preds.shape[0], c.n + c.n_pool))
            stored[:, basis_rows] = preds
        out = []
        for k, rows in enumerate(c.holdouts):
            part = slice(c.bounds[k], c.bounds[k + 1])
            if c.scoring == "mse":
                score = -float(np.mean(sq[part]))
            elif callable(c.scoring):
                result = HoldoutResult(rows, sq[part], ranks[part], tops[part],
                                       preds[part] if self.explicit else None,
                                       None if self.explicit else stored[part])
                score = float(c.scoring(result))
            else:
                score = ranking_score(c.scoring, ranks[part])
            out.append((score, rows, stored[part], None if ranks is None else ranks[part]))
        return out
