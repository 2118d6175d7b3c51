"""StringKDE: string-to-string regression with n-gram count outputs and Euler-walk pre-images.

Cortes, Mohri & Weston (2005), "A general regression technique for learning transductions", ICML.
"""

from __future__ import annotations

import numbers
from collections import Counter

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_nonnegative_scalar, check_positive_scalar
from ._batch_euler import euler_walk_batch
from ._beam_search import BeamSearch
from ._graph_search import GraphSearch
from ._kernels import NgramKernel
from ._language_model import NgramLanguageModel
from ._metrics import letter_accuracy
from ._ngrams import check_order, check_strings, iter_ngrams
from ._output_space import OutputSpace
from ._preimage import DeBruijnGraph
from ._regression import KernelRidgeOutputs, _n_items
from ._rounding import edge_lists, learn_thresholds, repair_degrees, round_counts


class StringKDE(BaseEstimator):
    """Kernel dependency estimation for strings: ridge regression of output n-gram counts, Euler pre-images.

    Regresses the counts of all padded output n-grams of orders ``1..n`` on the input kernel with one shared
    solve (Model 1, eq. 3), rounds the order-``n`` predictions with per-n-gram thresholds learned on leave-one-out
    training predictions (sec. 6.3), repairs the degree imbalance of the resulting De Bruijn graph, and spells
    its Euler paths (sec. 4). Alternative pre-images (different Euler paths) are ranked by the KDE objective
    ``||Phi(y) - g(x)||^2`` over all orders plus ``lm_weight`` times the negative log-probability of an n-gram
    language model fitted on the training outputs.

    Parameters
    ----------
    input_kernel : Kernel or "precomputed", default=None
        Kernel on the inputs (``NgramKernel(n=3)`` on strings when None). With ``"precomputed"``, ``fit`` takes the
        (m, m) training Gram matrix and ``predict`` the (n_test, m) cross-Gram matrix.
    n : int, default=2
        Order of the output n-grams used for the pre-image (orders ``1..n`` are all regressed).
    alpha : float, default=1.0
        Ridge regularization (``gamma`` of eq. 2).
    start, stop : hashable, default="^", "$"
        Pad symbols of the output strings.
    rounding : {"learned", "nearest"}, default="learned"
        Per-n-gram thresholds learned on held-out training predictions, or plain rounding (threshold 0.5).
    rounding_criterion : {"l1", "total"}, default="l1"
        See :func:`iokr.strings.learn_thresholds`.
    repair : bool, default=True
        Repair the degree imbalance of the rounded counts by cheapest single-count moves.
    max_alternatives : int, default=16
        Euler paths enumerated per prediction for ranking; 1 uses the vectorized single-walk decoder only.
    lm_order : int or None, default=3
        Order of the language model; None for no language model.
    lm_weight : float, default=0.0
        Weight of the language model's negative log-probability in the ranking of alternatives.
    threshold_shifts : sequence of float, default=(0.0,)
        Extra candidate pre-images come from the counts rounded with ``thresholds_ + shift`` (then repaired) for
        each shift; negative shifts give longer strings. All candidates are ranked together.
    graph_search : bool, default=False
        Add as candidates the best paths of every length through the graph of all training n-grams under the
        additive approximation of the objective (see :mod:`iokr.strings._graph_search`); they are re-ranked with
        the exact objective together with the Euler-walk pre-images, so they only help when they score better.
    beam_width : int, default=0
        When > 0, add as candidates the prefixes kept by a left-to-right beam search of this width under the exact
        objective plus ``lm_weight`` times the language model of order ``lm_order`` (see
        :mod:`iokr.strings._beam_search`), at every allowed length (``length``); 0 for no beam search.
    length : {"free", "predicted"}, default="free"
        ``"predicted"``: only strings of length ``L +- length_slack`` are candidates, where ``L`` is the predicted
        number of symbols (the rounded sum of the predicted unigram counts, never a property of the input); when
        no candidate has such a length the constraint is dropped for that input. ``"free"``: any length; the
        beam search then runs up to the longest training output plus ``length_slack``.
    length_slack : int, default=0
        Allowed deviation from the predicted length.
    basis : {"full", "random", "cholesky", "greedy"}, default="full"
        Exact kernel ridge or a subset-of-regressors approximation on ``n_basis`` training points.
    n_basis : int, optional
        Basis size for the approximations.
    random_state : int, optional
        Seed of ``basis="random"``.

    Attributes
    ----------
    output_space_ : OutputSpace
        Alphabet, n-gram vocabularies and De Bruijn edge table of the training outputs.
    thresholds_ : ndarray of shape (n_top_ngrams,)
        Rounding thresholds of the order-``n`` n-grams.
    language_model_ : NgramLanguageModel or None
    n_train_ : int

    Notes
    -----
    Predictions use only n-grams seen in training outputs, so predicted strings are over the training alphabet.
    A prediction whose counts are all zero is the empty string.

    References
    ----------
    C. Cortes, M. Mohri, J. Weston. A general regression technique for learning transductions. ICML 2005.

    Examples
    --------
    >>> from iokr.strings import StringKDE
    >>> words = ["abc", "abd", "bcd", "bca"]
    >>> model = StringKDE(n=2, alpha=1e-3).fit(words, words)
    >>> model.predict(["abc"])
    ['abc']
    """

    def __init__(self, input_kernel=None, n=2, alpha=1.0, start="^", stop="$", rounding="learned",
                 rounding_criterion="l1", repair=True, max_alternatives=16, lm_order=3, lm_weight=0.0,
                 threshold_shifts=(0.0,), graph_search=False, beam_width=0, length="free", length_slack=0,
                 basis="full", n_basis=None, random_state=None):
        self.input_kernel = input_kernel
        self.n = n
        self.alpha = alpha
        self.start = start
        self.stop = stop
        self.rounding = rounding
        self.rounding_criterion = rounding_criterion
        self.repair = repair
        self.max_alternatives = max_alternatives
        self.lm_order = lm_order
        self.lm_weight = lm_weight
        self.threshold_shifts = threshold_shifts
        self.graph_search = graph_search
        self.beam_width = beam_width
        self.length = length
        self.length_slack = length_slack
        self.basis = basis
        self.n_basis = n_basis
        self.random_state = random_state

    # -- validation ---------------------------------------------------------------------------------------------
    def _check_params(self):
        name = type(self).__name__
        check_order(self.n, "n", name)
        check_positive_scalar(self.alpha, "alpha", name)
        if self.rounding not in ("learned", "nearest"):
            raise ValueError(
                f"The 'rounding' parameter of {name} must be 'learned' or 'nearest'. Got {self.rounding!r}."
            )
        if self.rounding_criterion not in ("l1", "total"):
            raise ValueError(
                f"The 'rounding_criterion' parameter of {name} must be 'l1' or 'total'. "
                f"Got {self.rounding_criterion!r}."
            )
        check_order(self.max_alternatives, "max_alternatives", name)
        if self.lm_order is not None:
            check_order(self.lm_order, "lm_order", name)
        check_nonnegative_scalar(self.lm_weight, "lm_weight", name)
        for param in ("beam_width", "length_slack"):
            value = getattr(self, param)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"The '{param}' parameter of {name} must be an int >= 0. Got {value!r}.")
        if self.length not in ("free", "predicted"):
            raise ValueError(f"The 'length' parameter of {name} must be 'free' or 'predicted'. Got {self.length!r}.")
        if self.start == self.stop:
            raise ValueError(f"The 'start' and 'stop' parameters of {name} must differ. Got {self.start!r} for both.")

    def _kernel(self):
        return NgramKernel(n=3) if self.input_kernel is None else self.input_kernel

    # -- fit ----------------------------------------------------------------------------------------------------
    def fit(self, X, y):
        """Fit on inputs ``X`` (what the input kernel takes) and output strings ``y``.

        Parameters
        ----------
        X : sequence of inputs of length m, or ndarray of shape (m, m) with ``input_kernel="precomputed"``
            Training inputs (what the input kernel takes).
        y : sequence of m strings (``str`` or sequences of symbols)
            Training output strings.

        Returns
        -------
        self : StringKDE
            The fitted estimator.
        """
        self._check_params()
        symbols, self.str_output_ = check_strings(y, "y", reserved=(self.start, self.stop))
        m = len(symbols)
        if _n_items(X) != m:
            raise ValueError(f"'X' has {_n_items(X)} samples but 'y' has {m} strings.")
        space = OutputSpace(symbols, int(self.n))
        Y = space.Y.toarray()
        reg = KernelRidgeOutputs(self._kernel(), self.alpha, self.basis, self.n_basis, self.random_state,
                                 type(self).__name__)
        held_out = reg.fit(X, Y, loo=self.rounding == "learned")
        top = space.blocks[int(self.n)]
        if self.rounding == "learned":
            self.thresholds_ = learn_thresholds(held_out[:, top], Y[:, top], criterion=self.rounding_criterion)
        else:
            self.thresholds_ = np.full(top.stop - top.start, 0.5)
        encoded = [space.encode(s) for s in symbols]
        if self.lm_order is not None:
            self.language_model_ = NgramLanguageModel(self.lm_order, start=space.start_id, stop=space.stop_id)
            self.language_model_.fit(encoded)
        else:
            self.language_model_ = None
        self._edge_lists = edge_lists(space.src, space.dst, space.n_nodes)
        self._max_length = max(len(s) for s in symbols) + 2 * (int(self.n) - 1) + 1
        if self.graph_search:
            lm_cost = None
            if self.language_model_ is not None:
                lm = self.language_model_
                lm_cost = np.array([-np.log(lm.prob(g[-1], g[:-1])) for g in space.top_grams])
            self._graph_search = GraphSearch(space, lm_cost)
        self._max_output_length = max(len(s) for s in symbols)
        if self.beam_width:
            self._beam_search = BeamSearch(space, self.language_model_)
        self.output_space_ = space
        self.regressor_ = reg
        self.n_train_ = m
        return self

    # -- predict --------------------------------------------------------------------------------------------------
    def predict_counts(self, X):
        """Predict real-valued n-gram counts.

        Parameters
        ----------
        X : inputs (as in :meth:`fit`), n_samples of them
            Test inputs.

        Returns
        -------
        counts : ndarray of shape (n_samples, n_columns)
            Predicted count of every n-gram column of ``output_space_``.
        """
        check_is_fitted(self, "regressor_")
        return self.regressor_.predict(X)

    def _integer_counts(self, G, shift=0.0):
        space = self.output_space_
        top = G[:, space.blocks[space.n]]
        C = round_counts(top, np.clip(self.thresholds_ + shift, 0.0, 1.0))
        if self.repair:
            out_edges, in_edges = self._edge_lists
            for i in range(C.shape[0]):
                C[i], _ = repair_degrees(C[i], top[i], self.thresholds_, space.src, space.dst, space.n_nodes,
                                         space.start_node, space.stop_node, out_edges=out_edges, in_edges=in_edges)
        return top, C

    def _candidates(self, c_row, raw_row):
        space = self.output_space_
        n = space.n
        counts = {space.top_grams[j]: int(c_row[j]) for j in np.flatnonzero(c_row)}
        graph = DeBruijnGraph(counts, n)
        start = (space.start_id,) * (n - 1)
        stop = (space.stop_id,) * (n - 1)
        walk = graph.walk(start)
        paths = [walk]
        # Enumerate alternatives only when the single walk is an exact pre-image (an Euler path exists); otherwise
        # the depth-first enumeration would search in vain.
        ids = tuple(int(s) for s in walk if s < space.start_id)
        if int(self.max_alternatives) > 1 and Counter(iter_ngrams(ids, n, space.start_id, space.stop_id)) == counts:
            paths = graph.euler_paths(start, stop if n > 1 else None, max_results=int(self.max_alternatives),
                                      max_steps=20 * (graph.n_edges + 1) * int(self.max_alternatives)) or [walk]
        if self.repair and raw_row is not None:
            plain = round_counts(raw_row, self.thresholds_)
            if not np.array_equal(plain, c_row):
                counts = {space.top_grams[j]: int(plain[j]) for j in np.flatnonzero(plain)}
                paths.append(DeBruijnGraph(counts, n).walk(start))
        out = []
        seen = set()
        for p in paths:
            ids = tuple(int(s) for s in p if s < space.start_id)
            if ids not in seen:
                seen.add(ids)
                out.append(ids)
        return out

    def _rank(self, candidates, g):
        space = self.output_space_
        g_norm2 = float(g @ g)
        scores = []
        for ids in candidates:
            s = space.squared_distance(ids, g, g_norm2)
            if self.language_model_ is not None and self.lm_weight > 0:
                s -= self.lm_weight * self.language_model_.log_prob(ids)
            scores.append(s)
        # Pre-images with the same n-gram counts have the same objective up to rounding, and the rounding changes
        # with the batch and chunk sizes of the regression: scores within a relative 1e-9 are ties, broken by the
        # symbol ids so that a query's prediction does not depend on the other queries of the batch.
        tol = 1e-9 * max(1.0, g_norm2, max((abs(s) for s in scores), default=0.0))
        order = sorted(range(len(candidates)), key=lambda i: scores[i])
        groups, start = [], 0
        for j in range(1, len(order) + 1):
            if j == len(order) or scores[order[j]] - scores[order[j - 1]] > tol:
                groups.append(sorted(order[start:j], key=lambda i: candidates[i]))
                start = j
        order = [i for group in groups for i in group]
        return [candidates[i] for i in order], [scores[i] for i in order]

    def predicted_length(self, G):
        """Return the predicted number of symbols: the rounded sum of the predicted unigram counts.

        Parameters
        ----------
        G : ndarray of shape (n_samples, n_columns) or (n_columns,)
            Predicted counts (see :meth:`predict_counts`).

        Returns
        -------
        lengths : ndarray of shape (n_samples,) of int
            ``max(0, rint(sum of the order-1 columns))``; never read from the input itself.
        """
        check_is_fitted(self, "regressor_")
        G = np.atleast_2d(G)
        return np.maximum(np.rint(G[:, self.output_space_.blocks[1]].sum(axis=1)), 0).astype(np.int64)

    def _allowed_lengths(self, g):
        slack = int(self.length_slack)
        if self.length == "predicted":
            L = int(self.predicted_length(g)[0])
            return list(range(max(L - slack, 0), L + slack + 1))
        return list(range(self._max_output_length + slack + 1))

    def predict(self, X, return_alternatives=None):
        """Predict output strings.

        Parameters
        ----------
        X : inputs (as in :meth:`fit`), n_samples of them
            Test inputs.
        return_alternatives : int, optional
            When given, return for each input up to this many alternative pre-images, best first.

        Returns
        -------
        y_pred : list of n_samples strings, or list of n_samples lists of strings with ``return_alternatives``
            The pre-image (decoded string) of each input.
        """
        check_is_fitted(self, "regressor_")
        k = None
        if return_alternatives is not None:
            k = check_order(return_alternatives, "return_alternatives", type(self).__name__)
        space = self.output_space_
        out = []
        fast = (int(self.max_alternatives) == 1 and (k is None or k == 1) and not self.beam_width
                and self.length == "free" and not self.graph_search)
        for _, G in self.regressor_.predict_chunks(X):
            raw, C = self._integer_counts(G)
            if fast:
                symbols, offsets = euler_walk_batch(C, space.src, space.dst, space.sym, space.start_node,
                                                    space.n_nodes)
                for r in range(C.shape[0]):
                    s = space.decode(symbols[offsets[r] : offsets[r + 1]].tolist(), self.str_output_)
                    out.append([s] if k else s)
                continue
            extra = [self._integer_counts(G, float(shift))[1] for shift in self.threshold_shifts if shift != 0.0]
            for r in range(C.shape[0]):
                candidates = self._candidates(C[r], raw[r])
                for Cs in extra:
                    candidates += [c for c in self._candidates(Cs[r], None) if c not in candidates]
                if self.graph_search:
                    candidates += [c for c in self._graph_search.best_paths(G[r], self._max_length, self.lm_weight)
                                   if c not in candidates]
                lengths = self._allowed_lengths(G[r])
                if self.beam_width:
                    seen = set(candidates)
                    candidates += [c for c in self._beam_search.search(G[r], lengths, int(self.beam_width),
                                                                         self.lm_weight) if c not in seen]
                if self.length == "predicted":
                    allowed = set(lengths)
                    candidates = [c for c in candidates if len(c) in allowed] or candidates
                ranked, _ = self._rank(candidates, G[r])
                if k is None:
                    out.append(space.decode(ranked[0], self.str_output_))
                else:
                    out.append([space.decode(ids, self.str_output_) for ids in ranked[:k]])
        return out

    def score(self, X, y):
        """Return the letter accuracy of the predictions (see :func:`iokr.strings.letter_accuracy`).

        Parameters
        ----------
        X : inputs (as in :meth:`fit`), n_samples of them
            Test inputs.
        y : sequence of n_samples strings
            True output strings.

        Returns
        -------
        score : float
            ``1 - sum ED / sum |y|`` (edit distances between predicted and true strings).
        """
        return letter_accuracy(y, self.predict(X))
