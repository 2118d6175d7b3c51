"""Input Output Kernel Regression (IOKR) with candidate-set decoding."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._config import working_memory_bytes
from .._docstrings import fill_doc
from .._validation import check_positive_scalar
from ..decoding import QueryRanking, decoding_rule, dense_scores, rankings_from_scores, set_scores, top_k_scores
from ..decoding.developer import Scorer, as_candidate_sets, check_decoding, row_norms, warn_empty
from ..linalg import CholeskyFactor, cholesky_shifted
from ..linalg.developer import row_slices
from ._sides import InputSide, OutputSide, check_output_features

#: Relative rounding level of ``||h(x)||`` under which cosine decoding scores a query 0 (see ``_cosine_norm_floor``).
COSINE_NORM_RTOL = 1e-10

#: The query parameters of every prediction method (and of the searches that predict through an IOKR).
_QUERY_DOCS = {
    "X": """
        X : array-like of shape (m, d), or (m, n) test-by-train Gram when precomputed
            Query inputs.""",
    "input_diag": """
        input_diag : array-like of shape (m,), optional
            ``k(x, x)`` of the test inputs; needed only with a precomputed, normalized input kernel.""",
    "candidate_term": """
        candidate_term : callable, optional
            ``f(k_y(C, Y)) -> (n_c,)``: a per-candidate term computed from the raw output-kernel values of a block
            of candidates against the training outputs (shape (n_c, n)), added to the candidates' scores (a
            prior over outputs, e.g. :func:`iokr.decoding.top_mean` of the block); it reads the block the scoring
            computes anyway. The block is read-only; ``f`` must return finite values. Kernel output sides only (not
            an explicit linear output kernel).""",
}


@fill_doc(**_QUERY_DOCS)
class IOKR(BaseEstimator):
    """Input Output Kernel Regression: kernel ridge regression into an output RKHS, decoded over candidates.

    Learning solves ``min_W sum_i ||W phi(x_i) - psi(y_i)||^2 + alpha ||W||_F^2``, whose solution predicts
    ``h(x) = sum_i c_i(x) psi(y_i)`` with ``c(x) = (K_x + alpha I)^{-1} k_x(x)``. A query is decoded by scoring its
    candidates ``y``:

    - ``"inner"``: ``<h(x), psi(y)> = k_x(x)^T (K_x + alpha I)^{-1} k_y(Y, y)`` (the brief's formula);
    - ``"distance"``: ``-||h(x) - psi(y)||^2 + ||h(x)||^2 = 2 <h(x), psi(y)> - k_y(y, y)`` (exact pre-image);
    - ``"cosine"``: ``<h(x), psi(y)> / (||h(x)|| ||psi(y)||)``.

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization ``lambda`` of ``(K_x + lambda I)``, with no hidden scaling by ``n``. Codes that minimize
        ``(1/n) sum_i ||.||^2 + lambda' ||W||^2`` use ``alpha = n * lambda'``.
    input_kernel : Kernel or str, default="linear"
        Kernel on inputs, a name (``"gaussian"``, ...) or ``"precomputed"`` (then ``X`` is a Gram matrix).
    output_kernel : Kernel or str, default="linear"
        Kernel on output features. Linear (and normalized linear) kernels use explicit features (fast path).
    center_input, normalize_input : bool, default=True
        Center input features on the training mean, then scale them to unit norm (in kernel form).
    center_output, normalize_output : bool, default=True
        The same for output features; candidates are transformed with the training statistics.
    decoding : {"distance", "inner", "cosine"}, default="distance"
        Score of a candidate ``c`` for the prediction ``h(x)``: ``-||h(x) - psi(c)||^2``, ``<h(x), psi(c)>`` or their
        cosine (see :mod:`iokr.decoding._rules`).
    working_memory : float, optional
        Budget in MiB for temporaries of scoring; the global setting by default.

    Attributes
    ----------
    n_features_in_ : int
        Input features (or training inputs, when precomputed).
    n_output_features_ : int
        Output features ``p``.
    dual_coef_ : ndarray of shape (n, p)
        ``(K_x + alpha I)^{-1} Psi`` with transformed output features (explicit output path only).
    jitter_ : float
        Jitter added to the diagonal for the Cholesky factorization (0.0 normally).

    Notes
    -----
    The linear system is solved by a Cholesky factorization (with an escalating jitter if the kernel is
    numerically singular); no inverse is formed. Scoring processes queries and candidates in chunks under the
    working-memory budget and runs in the candidates' precision (float32 candidates use float32 BLAS).

    References
    ----------
    Brouard et al., Fast metabolite identification with input output kernel regression, Bioinformatics 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr import IOKR
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 3))
    >>> Y = X @ rng.normal(size=(3, 4))  # outputs that depend on the inputs
    >>> model = IOKR(alpha=0.1).fit(X, Y)
    >>> model.decision_function(X[:2], Y).shape
    (2, 20)
    """

    def __init__(self, alpha=1.0, input_kernel="linear", output_kernel="linear", center_input=True,
                 normalize_input=True, center_output=True, normalize_output=True, decoding="distance",
                 working_memory=None):
        self.alpha = alpha
        self.input_kernel = input_kernel
        self.output_kernel = output_kernel
        self.center_input = center_input
        self.normalize_input = normalize_input
        self.center_output = center_output
        self.normalize_output = normalize_output
        self.decoding = decoding
        self.working_memory = working_memory

    # -- fitting -----------------------------------------------------------------------------------------------
    def _check_params(self):
        alpha = check_positive_scalar(self.alpha, "alpha", type(self).__name__)
        check_decoding(self.decoding, type(self).__name__)
        if self.working_memory is not None:
            working_memory_bytes(self.working_memory)  # raises a ValueError naming 'working_memory'
        return alpha

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Y is a required 2-D array of output features (scikit-learn's checks then pass 2-D targets).
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        tags.input_tags.pairwise = self.input_kernel == "precomputed"
        return tags

    def _check_outputs(self, Y):
        return check_output_features(Y, type(self).__name__)

    def _fit_sides(self, X, Y):
        """Validate, build both sides and return the transformed input Gram."""
        self.input_ = InputSide(self.input_kernel, self.center_input, self.normalize_input, type(self).__name__)
        self.output_ = OutputSide(self.output_kernel, self.center_output, self.normalize_output)
        gram = self.input_.fit_gram(X)
        self.output_.fit(Y)
        if Y.shape[0] != gram.shape[0]:
            raise ValueError(f"'X' has {gram.shape[0]} examples but 'Y' has {Y.shape[0]}.")
        self.n_features_in_ = self.input_.n_features_in
        self.n_output_features_ = self.output_.n_features
        return gram

    def fit(self, X, Y):
        """Fit the regression from inputs to the output feature space.

        ``K_x + alpha I`` is factored once (Cholesky); explicit output features keep the dual coefficients
        ``(K_x + alpha I)^{-1} Psi``, kernel outputs the factor itself.

        Parameters
        ----------
        X : array-like of shape (n, d), or (n, n) Gram when ``input_kernel="precomputed"``
            Training inputs.
        Y : array-like of shape (n, p)
            Output features (fingerprints, label vectors, TF-IDF ...).

        Returns
        -------
        self : IOKR
            The fitted estimator.
        """
        alpha = self._check_params()
        Y = self._check_outputs(Y)
        gram = self._fit_sides(X, Y)
        self._fit_coefficients(gram, alpha)
        return self

    def _fit_coefficients(self, gram, alpha):
        factor = cholesky_shifted(gram, alpha, name="input kernel")
        self.jitter_ = factor.jitter
        if self.output_.explicit:
            self.dual_coef_ = factor.solve(self.output_.train_features)
            self.factor_ = None
        else:
            self.factor_ = factor

    def fitted_state(self):
        """Return what scoring reads of the fit, as float64 arrays by name.

        For a fit on a precomputed input Gram with a kernel output side: the Cholesky factor of the transformed Gram
        (packed lower triangle), its shift and jitter, and both transforms' statistics. :meth:`restore` rebuilds the
        fitted model from them and the training outputs, with no ``n x n`` Gram and no factorization; its scores are
        those of this model bit for bit.

        Returns
        -------
        state : dict of str to ndarray
            ``factor`` (packed lower triangle, ``n (n + 1) / 2``), ``shift`` (``[alpha, jitter]``), and the
            ``input_*`` / ``output_*`` transform statistics.
        """
        check_is_fitted(self, "output_")
        if not self.input_.precomputed or self.output_.explicit:
            raise ValueError("fitted_state covers an IOKR fitted on a precomputed input Gram with a kernel output "
                             "side (no explicit output features).")
        state = {"factor": self.factor_.packed(), "shift": np.array([self.factor_.alpha, self.factor_.jitter])}
        for side, transform in (("input", self.input_.transform), ("output", self.output_.kernel_transform)):
            state.update({f"{side}_{name}": value for name, value in transform.fitted_state().items()})
        return state

    def restore(self, Y, state):
        """Restore the fitted model from :meth:`fitted_state`'s arrays and the training outputs.

        The model is as if fitted on the precomputed Gram those arrays came from; every array is checked (shapes,
        dtypes, finite values, a positive factor diagonal) and a mismatch raises a ValueError.

        Parameters
        ----------
        Y : array-like of shape (n, p)
            The training outputs.
        state : dict of str to ndarray
            :meth:`fitted_state` of the fit.

        Returns
        -------
        self : IOKR
            The fitted model.
        """
        alpha = self._check_params()
        Y = self._check_outputs(Y)
        n = Y.shape[0]
        shift = np.asarray(state.get("shift"))
        if shift.dtype != np.float64 or shift.shape != (2,) or shift[0] != alpha:
            raise ValueError(f"The saved state's 'shift' must be [alpha, jitter] with alpha={alpha!r}, got {shift!r}.")
        input_side = InputSide("precomputed", self.center_input, self.normalize_input, type(self).__name__)
        output_side = OutputSide(self.output_kernel, self.center_output, self.normalize_output)
        parts = {"input": {}, "output": {}}
        for name, value in state.items():
            side, _, rest = name.partition("_")
            if side in parts:
                parts[side][rest] = value
            elif name not in ("factor", "shift"):
                raise ValueError(f"The saved state holds an unknown array {name!r}.")
        input_side.transform.restore(parts["input"], n)
        input_side.n_train = input_side.n_features_in = n
        output_side.restore(Y, parts["output"])
        factor = CholeskyFactor.from_packed(state.get("factor"), n, shift[0], shift[1])
        self.input_, self.output_ = input_side, output_side
        self.n_features_in_, self.n_output_features_ = n, output_side.n_features
        self.factor_, self.jitter_ = factor, factor.jitter
        return self

    def _set_fitted(self, input_side, output_side, dual_coef):
        """Fitted state from sides fitted elsewhere and the dual coefficients ``(K_x + alpha I)^{-1} Psi`` of an
        explicit output side (:class:`~iokr.model_selection.IOKRCV` reuses its path's decomposition)."""
        self._check_params()
        self.input_, self.output_ = input_side, output_side
        self.n_features_in_ = input_side.n_features_in
        self.n_output_features_ = output_side.n_features
        self.dual_coef_, self.factor_, self.jitter_ = dual_coef, None, 0.0
        return self

    # -- prediction ----------------------------------------------------------------------------------------------
    def _coefficients(self, test_gram):
        """``h(x)`` features (explicit path) or ``c(x)^T`` dual weights (kernel path) for a block of queries."""
        if self.output_.explicit:
            return test_gram @ self.dual_coef_
        return self.factor_.solve(test_gram.T).T

    def _scorer(self, X, input_diag, candidates_name="candidates", candidate_term=None):
        check_is_fitted(self, "output_")
        self._check_params()
        if candidate_term is not None and not (isinstance(self.output_, OutputSide) and not self.output_.explicit):
            raise ValueError("'candidate_term' needs a kernel output side (an output kernel without explicit "
                             f"features); {type(self).__name__} scores this one through features.")
        X, input_diag = self.input_.check_test(X, input_diag)
        width = self.output_.n_features if self.output_.explicit else self.input_.n_train
        rule = decoding_rule(self.decoding)
        norm_floor = self._cosine_norm_floor() if rule.needs_query_norms else None

        def query_block(rows):
            block = self.input_.test_block(X, rows, input_diag)
            coefficients = self._coefficients(block)
            floor = None if norm_floor is None else norm_floor(block, coefficients)
            return self.output_.query_representation(coefficients, rule, norm_floor=floor)

        def candidate_block(C):
            if candidate_term is None:
                return self.output_.candidate_block(C, rule, candidates_name)
            return self.output_.candidate_block(C, rule, candidates_name, cross_term=candidate_term)

        # Output sides without an affine 0/1 form (kernel outputs, MP-IOKR's basis) give no binary rule: every pool
        # is then scored through candidate_block. A candidate term may copy its block once more.
        extra = 0 if candidate_term is None else 8 * self.input_.n_train
        return Scorer(X.shape[0], max(width, self.input_.n_train), query_block, candidate_block,
                      self.output_.candidate_bytes_per_row(self.input_.n_train) + extra,
                      binary_rule=self.output_.binary_rule(rule))

    def prediction_norms(self, X, *, input_diag=None):
        """Return the norms ``||h(x)||`` of the predictions in the output space, one per query.

        With distance decoding a candidate's score is ``2 <h(x), psi(y)> - ||psi(y)||^2``, so ``score - ||h(x)||^2``
        is minus the squared distance from the prediction: what compares across candidate lists scored for the
        same query under different inputs. Computed by row blocks under the working-memory budget.

        Parameters
        ----------
        %(X)s
        %(input_diag)s

        Returns
        -------
        norms : ndarray of shape (n_queries,)
            ``||h(x)||`` of each query (the norm of ``c^T K_y c`` on the kernel path).
        """
        check_is_fitted(self, "output_")
        X, input_diag = self.input_.check_test(X, input_diag)
        out = np.empty(X.shape[0])
        width = self.output_.n_features if self.output_.explicit else self.input_.n_train
        for rows in row_slices(X.shape[0], 8 * (self.input_.n_train + width), self.working_memory):
            out[rows] = self.output_.query_norms(self._coefficients(self.input_.test_block(X, rows, input_diag)))
        return out

    def scorer(self, X, *, input_diag=None, candidates_name="candidates", candidate_term=None):
        """Return the bilinear scoring rule of the fitted model for the queries ``X``.

        Runs that organize the scoring themselves (:mod:`iokr.distributed`) score with it exactly as
        :meth:`rank` and :meth:`decision_function` do.

        Parameters
        ----------
        %(X)s
        %(input_diag)s
        candidates_name : str, default="candidates"
            Name of the candidates in error messages.
        %(candidate_term)s

        Returns
        -------
        scorer : Scorer
            Query and candidate representations under the model's decoding rule (see
            :class:`iokr.decoding.developer.Scorer`).
        """
        return self._scorer(X, input_diag, candidates_name, candidate_term)

    def _explicit_weights(self):
        """``W`` with ``h(x) = test_block(x) @ W`` on the explicit output path (None otherwise)."""
        return self.dual_coef_ if self.output_.explicit else None

    def _cosine_norm_floor(self):
        """Per-query rounding level of ``||h(x)||``, under which cosine decoding treats ``h(x)`` as zero.

        ``h(x)`` can be zero in exact arithmetic (degenerate data cancel in ``sum_i c_i psi(y_i)``); normalizing its
        rounding noise would give scores of +-1 that change with the batch, the chunking and the training order.
        Explicit path: ``||h|| <= ||k_x|| ||W||_F`` and the error of the product is ``~ n eps`` of that bound.
        Kernel path: ``||h||^2 = c^T K_y c`` is computed with an absolute error ``~ eps ||c||^2 ||K_y||``.
        """
        if not isinstance(self.output_, OutputSide):
            return None
        weights = self._explicit_weights()
        if weights is not None:
            bound = float(np.linalg.norm(weights))
            return lambda block, coefficients: COSINE_NORM_RTOL * row_norms(block) * bound
        if self.output_.explicit:
            return None
        gram_norm = float(np.abs(self.output_.train_gram).sum(axis=1).max()) if self.output_.train_gram.size else 0.0
        return lambda block, coefficients: np.sqrt(COSINE_NORM_RTOL * gram_norm) * row_norms(coefficients)

    def predict_features(self, X, *, input_diag=None):
        """Predict ``h(x)`` in the (transformed) output feature space.

        Only for output kernels with explicit features. The space is that of the training outputs after the
        output centering/normalization (``center_output`` / ``normalize_output``).

        Parameters
        ----------
        %(X)s
        %(input_diag)s

        Returns
        -------
        H : ndarray of shape (m, p)
            Predicted output features of each query.
        """
        check_is_fitted(self, "output_")
        if not self.output_.explicit:
            raise ValueError(
                f"predict_features needs an output kernel with explicit features (e.g. 'linear'); "
                f"{type(self.output_.kernel).__name__} has none. Use decision_function or rank with candidates."
            )
        X, input_diag = self.input_.check_test(X, input_diag)
        return self._coefficients(self.input_.test_block(X, slice(None), input_diag))

    def decision_function(self, X, C, *, input_diag=None):
        """Score candidates ``C`` shared by all queries (higher is better).

        Parameters
        ----------
        %(X)s
        C : array-like of shape (c, p)
            Candidate output features (ndarray, memmap or :class:`~iokr.decoding.PackedBinaryFeatures`).
        %(input_diag)s

        Returns
        -------
        S : ndarray of shape (m, c)
            Score of every candidate for every query.
        """
        if getattr(C, "ndim", None) != 2:
            C = np.asarray(C)
        self._check_candidate_width(C)
        return dense_scores(self._scorer(X, input_diag, "C"), C, self.working_memory)

    def _check_candidate_width(self, C):
        check_is_fitted(self, "output_")
        if C.ndim != 2 or C.shape[1] != self.n_output_features_:
            raise ValueError(f"'C' must have shape (n_candidates, {self.n_output_features_}), got {C.shape}.")

    def rank(self, X, candidate_sets, top_k=None, *, input_diag=None, candidate_term=None):
        """Rank each query's candidates.

        Parameters
        ----------
        %(X)s
        candidate_sets : CandidateSets or list of m arrays of shape (n_q, p)
            Candidate output features of each query.
        top_k : int, optional
            Keep only the best ``top_k`` per query.
        %(input_diag)s
        %(candidate_term)s

        Returns
        -------
        rankings : list of QueryRanking
            Per query: candidate positions best first, their scores and pool rows. Queries with empty sets get
            empty rankings and an :class:`~iokr.exceptions.EmptyCandidateSetWarning`.
        """
        check_is_fitted(self, "output_")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1):
            raise ValueError(f"'top_k' must be a positive int or None, got {top_k!r}.")
        n_queries = np.shape(X)[0]
        sets = as_candidate_sets(candidate_sets, n_queries, self.n_output_features_)
        scorer = self._scorer(X, input_diag, "candidate_sets", candidate_term)
        if sets.is_shared and top_k is not None:
            indices, scores = top_k_scores(scorer, sets.pool, top_k, self.working_memory)
            n_pool = sets.pool.shape[0]
            warn_empty(sets.empty_queries)  # an empty shared pool leaves every query without candidates
            return [QueryRanking(indices[q], scores[q], indices[q], n_pool) for q in range(n_queries)]
        return rankings_from_scores(set_scores(scorer, sets, self.working_memory), sets, top_k)

    def predict(self, X, candidate_sets, *, input_diag=None):
        """Predict the best candidate of each query.

        Parameters
        ----------
        %(X)s
        candidate_sets : CandidateSets or list of m arrays of shape (n_q, p)
            Candidate output features of each query.
        %(input_diag)s

        Returns
        -------
        best : ndarray of shape (m, p), float64
            Features of each query's best candidate; rows of NaN for queries without candidates (reported by an
            :class:`~iokr.exceptions.EmptyCandidateSetWarning`).
        """
        n_queries = np.shape(X)[0]
        check_is_fitted(self, "output_")
        sets = as_candidate_sets(candidate_sets, n_queries, self.n_output_features_)
        scores = set_scores(self._scorer(X, input_diag, "candidate_sets"), sets, self.working_memory)
        best = np.full((n_queries, self.n_output_features_), np.nan)
        for q, s in enumerate(scores):
            if s.size:
                row = sets.indices[q][int(np.argmax(s))]
                best[q] = np.asarray(sets.pool[row:row + 1])[0]
        warn_empty(sets.empty_queries)
        return best

