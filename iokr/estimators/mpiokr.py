"""Magnitude-preserving IOKR (MP-IOKR): IOKR that uses the training candidate sets when learning.

Brouard, Bach, Böcker, Rousu, *Magnitude-preserving ranking for structured outputs*, ACML 2017, sections 2.2-2.3.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from .._validation import check_positive_scalar
from ..decoding import CandidateSets, subsample_sets
from ..decoding.developer import CandidateStatistics, set_layout, stream_statistics
from ..exceptions import EmptyCandidateSetWarning
from ..kernels import WeightedSum, make_kernel
from ..linalg import ProductShiftPath, cholesky_shifted
from ._mp_sides import (
    _BlockDiagonal,
    _checksum,
    _GroupedInput,
    _KnownInput,
    _merge_units,
    _mixing_matrix,
    _OutputBasis,
    _PlainInput,
)
from ._sides import InputSide, OutputSide
from .iokr import IOKR

APPROXIMATIONS = ("known", "joint", "separate")


class MPIOKR(IOKR):
    """Magnitude-preserving Input Output Kernel Regression.

    Learning minimizes objective (4) of Brouard et al. (2017),

        sum_i (1 / n_i) sum_{j in C_i} ||(h(x_i) - h(x_j)) - (psi(y_i) - psi(y_j))||^2 + alpha ||h||^2,

    which keeps the differences between each training output and its candidates (Theorem 2: IOKR on inputs and
    outputs centered on the candidate-set means, objective (6)). Prediction and decoding are those of
    :class:`IOKR` (``decision_function``, ``rank``, ``predict``, ``predict_features``).

    Parameters
    ----------
    alpha : float, default=1.0
        ``lambda`` of objective (4), no hidden scaling.
    input_kernel, output_kernel : Kernel or str, default="linear"
        As in :class:`IOKR`.
    center_input, normalize_input, center_output, normalize_output : bool, default=True
        As in :class:`IOKR`. The centering/normalization is fitted on the training examples only and applied to
        candidates and test points; the magnitude-preserving centering acts on top of it.
    decoding : {"distance", "inner", "cosine"}, default="distance"
        As in :class:`IOKR`.
    working_memory : float, optional
        As in :class:`IOKR`.
    approximation : {"known", "joint", "separate"}, default="known"
        ``"known"``: candidate inputs are given (``candidate_inputs``; Proposition 3). ``"joint"``: candidate inputs
        are approximated by a reverse IOKR ``g(y) = Phi_S (gamma I + K_Y)^{-1} k_Y(y)`` on the whole input kernel
        (Proposition 4; with a :class:`~iokr.kernels.WeightedSum` input kernel this is the joint approximation of
        section 2.3.2). ``"separate"``: one reverse model per base kernel of a ``WeightedSum`` input kernel, each with
        its own ``gamma`` (eq. 12, Proposition 5); base kernels sharing a ``gamma`` value are grouped.
    gamma : float or sequence of float, default=1.0
        Regularization of the reverse model(s) ``g``; one value per base kernel for ``"separate"`` (a scalar is
        used for all). Ignored for ``"known"``.
    candidate_fraction : float in (0, 1], default=1.0
        Fraction of each training candidate set used for learning (``max(1, ceil(fraction n_i))`` candidates drawn
        without replacement per non-empty set).
    random_state : int, RandomState or None, default=None
        Seed of the candidate subsampling.

    Attributes
    ----------
    n_features_in_, n_output_features_, jitter_ :
        As in :class:`IOKR` (``jitter_`` is 0.0: the system is solved by LU).
    dual_coef_ : ndarray of shape (n_basis, p)
        ``h(x) = k_B(x)^T dual_coef_`` with explicit output features; ``k_B`` is the transformed input kernel
        against the training examples (``"joint"``), the examples then the used candidates (``"known"``), or one
        block per group of base kernels (``"separate"``).
    candidate_stats_ : CandidateStatistics or None
        Per-set means and summed within-set covariance (approximated inputs); pass it to ``fit(...,
        candidate_stats=...)`` to refit with other ``alpha`` / ``gamma`` without another pass over the candidates.
    gamma_groups_ : list of ndarray
        Base kernel indices of each group (``"separate"``), one group otherwise.
    n_candidates_used_ : int
        Candidate memberships ``n = sum_i n_i`` used for learning (after subsampling).

    Notes
    -----
    All variants share one form. With the basis ``U`` = training examples followed by the used pool candidates,
    ``Psi' = Psi_U P`` for a sparse mixing matrix ``P`` (eq. 7), and ``G = P P^T`` is

        G = [[I_l, -Vbar^T], [-Vbar, diag(omega)]],   Vbar_ci = mult_i(c) / n_i,  omega_c = sum_i Vbar_ci

    (the ``Vbar Vbar^T`` terms of the set covariances cancel the mean terms). Candidate input features are
    ``Phi_U`` (known) or ``D_Phi E`` with ``E_k = [I_l, M_k K_Y(S, C)]``, ``M_k = (gamma_k I + K_Y)^{-1}``
    (approximated). Then

        h(x) = Psi_U G E^T (alpha I + D_K E G E^T)^{-1} k_B(x)

    with ``E = I, D_K = K_U`` (known, equal to Proposition 3's ``(l + n)``-system after merging repeated
    candidates), ``D_K = K_S`` (Proposition 4, ``E G E^T = A A^T``) or ``D_K = blockdiag(mu_k K_S^k)`` (Proposition
    5). With explicit output features only the per-set means ``Psi_bar`` and ``Sigma = sum_i Cov(Psi_{C_i})`` enter:
    ``E_a G E_b^T = I - P^T M_b - M_a P + M_a Y S2 Y^T M_b`` and ``E_k G Psi_U^T = (Y - Ybar) - M_k P Y + M_k Y S2``
    with ``P = Y Ybar^T``, ``S2 = Sigma + Ybar^T Ybar`` (memory ``O(d^2 + d l)``). The non-symmetric system is
    solved by an LU factorization (no inverse is formed).

    Empty candidate sets: the mean of an empty set is taken as 0 and it contributes no covariance, so example
    ``i`` then contributes the plain IOKR term ``||h(x_i) - psi(y_i)||^2``; with every set empty MP-IOKR equals
    :class:`IOKR` with the same ``alpha`` (an :class:`~iokr.exceptions.EmptyCandidateSetWarning` names the
    examples). A set that lacks its own training output is used as given, as in the paper's objective (4): only the
    listed candidates enter the differences; ``y_i`` is neither added nor required.

    References
    ----------
    Brouard, Bach, Böcker, Rousu, Magnitude-preserving ranking for structured outputs, ACML 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr import MPIOKR
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(20, 3)), rng.normal(size=(20, 4))
    >>> sets = [Y[rng.choice(20, 5, replace=False)] for _ in range(20)]
    >>> model = MPIOKR(alpha=0.1, approximation="joint").fit(X, Y, sets)
    >>> model.decision_function(X[:2], Y).shape
    (2, 20)
    """

    def __init__(self, alpha=1.0, input_kernel="linear", output_kernel="linear", center_input=True,
                 normalize_input=True, center_output=True, normalize_output=True, decoding="distance",
                 working_memory=None, approximation="known", gamma=1.0, candidate_fraction=1.0, random_state=None):
        super().__init__(alpha=alpha, input_kernel=input_kernel, output_kernel=output_kernel,
                         center_input=center_input, normalize_input=normalize_input, center_output=center_output,
                         normalize_output=normalize_output, decoding=decoding, working_memory=working_memory)
        self.approximation = approximation
        self.gamma = gamma
        self.candidate_fraction = candidate_fraction
        self.random_state = random_state

    # -- validation ----------------------------------------------------------------------------------------------
    def _check_mp_params(self):
        owner = type(self).__name__
        if self.approximation not in APPROXIMATIONS:
            raise ValueError(f"The 'approximation' parameter of {owner} must be one of {APPROXIMATIONS}. "
                             f"Got {self.approximation!r} instead.")
        fraction = self.candidate_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not 0 < fraction <= 1:
            raise ValueError(f"The 'candidate_fraction' parameter of {owner} must be a float in the range (0, 1]. "
                             f"Got {fraction!r} instead.")
        if self.approximation == "known":
            return None
        gamma = self.gamma
        if np.ndim(gamma) == 0:
            return check_positive_scalar(gamma, "gamma", owner)
        values = list(gamma)
        if not values:
            raise ValueError(f"The 'gamma' parameter of {owner} must be a float or a non-empty sequence of floats. "
                             f"Got {gamma!r} instead.")
        return [check_positive_scalar(g, "gamma", owner) for g in values]

    def _check_sets(self, candidate_sets, n_examples, n_features):
        if isinstance(candidate_sets, np.ndarray) and candidate_sets.ndim == 2:
            raise TypeError("'candidate_sets' must be a CandidateSets or a list of one (n_i, p) array per training "
                            "example; for one candidate matrix shared by all examples use "
                            "CandidateSets.shared(C, n_examples).")
        if not isinstance(candidate_sets, CandidateSets):
            candidate_sets = list(candidate_sets)
            if len(candidate_sets) != n_examples:
                raise ValueError(f"'candidate_sets' must hold one set per training example ({n_examples}), "
                                 f"got {len(candidate_sets)}.")
            for i, s in enumerate(candidate_sets):
                s = np.asarray(s)
                if s.size and (s.ndim != 2 or s.shape[1] != n_features):
                    raise ValueError(f"'candidate_sets[{i}]' must have shape (n_{i}, {n_features}) like 'Y', "
                                     f"got {s.shape}.")
            sets = [np.asarray(s).reshape(-1, n_features) for s in candidate_sets]
            # Candidate inputs are matched to candidates by position, so duplicates are merged only without them.
            return CandidateSets.from_arrays(sets, deduplicate=self.approximation != "known")
        if candidate_sets.n_queries != n_examples:
            raise ValueError(f"'candidate_sets' must hold one set per training example ({n_examples}), "
                             f"got {candidate_sets.n_queries}.")
        if candidate_sets.n_features != n_features:
            raise ValueError(f"Candidates have {candidate_sets.n_features} features, but 'Y' has {n_features}.")
        return candidate_sets

    def _check_candidate_inputs(self, candidate_inputs, raw_sets, sets, input_kernel, n_input_features):
        if self.approximation != "known":
            if candidate_inputs is not None:
                raise ValueError(f"'candidate_inputs' is only used with approximation='known'; got "
                                 f"approximation={self.approximation!r}. Pass candidate_inputs=None.")
            return None
        if candidate_inputs is None:
            raise ValueError("approximation='known' needs 'candidate_inputs': the inputs of the candidates (a list "
                             "matching 'candidate_sets', or one (n_pool, d) array for a CandidateSets). Use "
                             "approximation='joint' or 'separate' when they are unknown.")
        if isinstance(raw_sets, CandidateSets):
            inputs = input_kernel.validate(candidate_inputs, "candidate_inputs")
            if inputs.shape[0] != sets.pool.shape[0]:
                raise ValueError(f"'candidate_inputs' must have one row per pool candidate ({sets.pool.shape[0]}), "
                                 f"got {inputs.shape[0]}.")
        else:
            candidate_inputs = list(candidate_inputs)
            if len(candidate_inputs) != sets.n_queries:
                raise ValueError(f"'candidate_inputs' must hold one array per candidate set ({sets.n_queries}), "
                                 f"got {len(candidate_inputs)}.")
            blocks = []
            for i, (block, size) in enumerate(zip(candidate_inputs, sets.sizes, strict=True)):
                if np.size(block) == 0 and size == 0:
                    continue
                block = input_kernel.validate(block, f"candidate_inputs[{i}]")
                if block.shape[0] != size:
                    raise ValueError(f"'candidate_inputs[{i}]' has {block.shape[0]} rows but 'candidate_sets[{i}]' "
                                     f"has {size} candidates; they must match one to one.")
                blocks.append(block)
            inputs = np.concatenate(blocks, axis=0) if blocks else np.zeros((0, n_input_features))
        if inputs.shape[1] != n_input_features:
            raise ValueError(f"'candidate_inputs' has {inputs.shape[1]} features, but 'X' has {n_input_features}.")
        return inputs

    # -- fitting -------------------------------------------------------------------------------------------------
    def fit(self, X, Y, candidate_sets, candidate_inputs=None, *, candidate_stats=None):
        """Fit MP-IOKR.

        Parameters
        ----------
        X : array-like of shape (n, d), or (n, n) Gram when ``input_kernel="precomputed"`` (approximated inputs)
            Training inputs.
        Y : array-like of shape (n, p)
            Training output features.
        candidate_sets : list of n arrays of shape (n_i, p), or CandidateSets with n sets
            Candidates of each training example (a candidate may appear in several sets).
        candidate_inputs : list of n arrays of shape (n_i, d), or array of shape (n_pool, d), optional
            Inputs of the candidates, matched one to one (required for ``approximation="known"``).
        candidate_stats : CandidateStatistics, optional
            ``candidate_stats_`` of an earlier fit on the same data and candidate settings (other ``alpha`` /
            ``gamma``); skips the pass over the candidates.

        Returns
        -------
        self : MPIOKR
            The fitted estimator.
        """
        alpha = self._check_params()
        gamma = self._check_mp_params()
        Y = self._check_outputs(Y)
        n = Y.shape[0]
        raw_sets = candidate_sets
        sets = self._check_sets(candidate_sets, n, Y.shape[1])
        input_kernel = make_kernel(self.input_kernel, "input_kernel")
        if self.approximation == "known" and input_kernel == "precomputed":
            raise ValueError("approximation='known' needs the candidates' input kernel values; with a precomputed "
                             "kernel use input_kernel=iokr.kernels.Precomputed(full_gram) with index inputs.")
        n_input_features = np.shape(X)[1] if np.ndim(X) == 2 else None
        inputs = self._check_candidate_inputs(candidate_inputs, raw_sets, sets, input_kernel, n_input_features)
        sets = subsample_sets(sets, float(self.candidate_fraction), self.random_state)
        layout = set_layout(sets)
        empty = np.flatnonzero(layout.sizes == 0)
        if empty.size:
            warnings.warn(
                f"{empty.size} training example(s) have empty candidate sets (first: {empty[:5].tolist()}); each "
                "contributes the plain IOKR term ||h(x_i) - psi(y_i)||^2 (no magnitude preservation).",
                EmptyCandidateSetWarning, stacklevel=2)
        self.n_candidates_used_ = int(layout.sizes.sum())

        gram = self._fit_mp_input(X, input_kernel, gamma)
        if Y.shape[0] != self.input_.n_examples:
            raise ValueError(f"'X' has {self.input_.n_examples} examples but 'Y' has {Y.shape[0]}.")
        self.output_ = OutputSide(self.output_kernel, self.center_output, self.normalize_output).fit(Y)
        self.n_features_in_ = self.input_.n_features_in
        self.n_output_features_ = self.output_.n_features
        used = layout.used_rows
        if self.approximation == "known" or not self.output_.explicit:
            # Vbar restricted to the used candidates (the explicit approximated path needs only the statistics).
            mean_op, omega = layout.mean_operator[:, used].tocsr(), layout.weights[used]
        else:
            mean_op = omega = None

        if self.approximation == "known":
            self.candidate_stats_ = None
            merge, new_units = _merge_units(self.input_.side.X_train, Y, inputs[used], sets.pool, used)
            mixing = (merge.T @ _mixing_matrix(mean_op, omega) @ merge).tocsr()
            if mixing.nnz > 0.1 * mixing.shape[0] ** 2:
                mixing = mixing.toarray()  # dense BLAS beats sparse products (e.g. one set shared by all)
            kept = used[new_units]
            self.input_ = _KnownInput(self.input_, inputs[kept])
            gram = self.input_.basis.gram(gram)
            rhs_factory = lambda: mixing @ self._basis_output_features(sets, kept)  # noqa: E731
            self._solve(alpha, gram, mixing, rhs_factory, sets=sets, used=kept, mixing_units=mixing, merge=merge)
        else:
            stats = self._statistics(sets, layout, candidate_stats)
            self.candidate_stats_ = stats
            self._fit_approximated(alpha, gram, stats, mean_op, omega)
        if getattr(self, "_keep_system", None):
            self._system["layout"] = layout
        self.jitter_ = 0.0
        if not self.output_.explicit:
            # Kernelized outputs: the predictor's output basis is [training outputs; used candidates]; IOKR's
            # scoring reads queries of that width (``n_train`` sizes its blocks).
            self.output_ = self._output_basis
            del self._output_basis
            self.input_.n_train = max(self.input_.n_train, self.output_.basis.n_basis)
        return self

    def _fit_mp_input(self, X, input_kernel, gamma):
        """Build ``self.input_`` and return the block-diagonal ``D_K`` (list of per-group transformed Grams)."""
        if self.approximation == "separate":
            if not isinstance(input_kernel, WeightedSum):
                raise ValueError("approximation='separate' approximates each base kernel of a WeightedSum input "
                                 f"kernel separately; got input_kernel={self.input_kernel!r}. Pass "
                                 "iokr.kernels.WeightedSum([...]) or use approximation='joint'.")
            kernels, weights = input_kernel.components()
            gammas = [gamma] * len(kernels) if np.ndim(gamma) == 0 else gamma
            if len(gammas) != len(kernels):
                raise ValueError(f"The 'gamma' parameter of {type(self).__name__} must hold one value per base "
                                 f"kernel ({len(kernels)}) for approximation='separate'. Got {len(gammas)} values.")
            values = sorted(set(gammas))
            self.gamma_groups_ = [np.array([k for k, g in enumerate(gammas) if g == v]) for v in values]
            self._group_gammas = values
            self.input_ = _GroupedInput(kernels, weights, self.gamma_groups_, self.center_input,
                                        self.normalize_input)
            return self.input_.fit_grams(X)
        side = InputSide(input_kernel, self.center_input, self.normalize_input)
        gram = side.fit_gram(X)
        self.input_ = _PlainInput(side)
        self.gamma_groups_ = [np.array([0])]
        self._group_gammas = [gamma]
        return gram if self.approximation == "known" else [gram]

    def _stats_key(self, sets, Y_checksum):
        return (self.approximation != "known", self.output_.explicit, repr(self.output_.kernel), self.center_output,
                self.normalize_output, float(self.candidate_fraction), repr(self.random_state),
                tuple(sets.pool.shape), int(sets.sizes.sum()), Y_checksum)

    def _statistics(self, sets, layout, candidate_stats):
        out = self.output_
        train = out.train_features if out.explicit else out.train_gram
        key = self._stats_key(sets, _checksum(train))
        if candidate_stats is not None:
            if not isinstance(candidate_stats, CandidateStatistics) or candidate_stats.key != key:
                raise ValueError("'candidate_stats' was computed for other training outputs, candidate sets or "
                                 "output settings (kernel, centering, normalization, candidate_fraction, "
                                 "random_state); refit without it.")
            stats = candidate_stats
            if not out.explicit:
                self._output_basis = _OutputBasis(out, sets.pool, layout.used_rows)
            return stats
        if out.explicit:
            def represent(block):
                block = out.kernel.validate(block, "candidates")
                dtype = np.float32 if block.dtype == np.float32 else np.float64
                return out.feature_transform.transform(out.kernel.compute_features(block), dtype=dtype)

            return stream_statistics(layout, represent, out.n_features, key=key,
                                     working_memory=self.working_memory)
        # Kernelized outputs: the candidates are part of the predictor's basis anyway, so their transformed
        # kernel against the training outputs is kept and the statistics read it.
        self._output_basis = _OutputBasis(out, sets.pool, layout.used_rows)
        return stream_statistics(layout, lambda block: block, out.Y_train.shape[0],
                                 pool=self._output_basis.basis.extra_cross, key=key,
                                 working_memory=self.working_memory)

    def _basis_output_features(self, sets, used):
        """Transformed output features of ``[training outputs; used candidates]`` (explicit path)."""
        out = self.output_
        if used.size == 0:
            return out.train_features
        cands = out.kernel.validate(np.asarray(sets.pool[used]), "candidates")
        feats = out.feature_transform.transform(out.kernel.compute_features(cands), dtype=np.float64)
        return np.concatenate([out.train_features, feats], axis=0)

    def _fit_approximated(self, alpha, grams, stats, mean_op, omega):
        out = self.output_
        if out.explicit:
            Y = out.train_features
            means = stats.means
            YS2 = Y @ stats.second_moment
            K_y, P, Q2 = Y @ Y.T, Y @ means.T, YS2 @ Y.T
        else:
            K_y, P, Q2 = out.train_gram, stats.means.T, stats.second_moment
        factors = [cholesky_shifted(K_y, g, name="output kernel") for g in self._group_gammas]
        MP = [f.solve(P) for f in factors]
        MQ2 = [f.solve(Q2) for f in factors]
        del P, Q2
        n, n_groups = K_y.shape[0], len(factors)
        # B = E G E^T, blocks E_a G E_b^T = I - P^T M_b - M_a P + M_a Q2 M_b, built in place to bound memory.
        mixing = np.empty((n * n_groups, n * n_groups))
        for a in range(n_groups):
            for b in range(n_groups):
                block = mixing[a * n:(a + 1) * n, b * n:(b + 1) * n]
                block[...] = factors[a].solve(MQ2[b].T)
                block -= MP[b].T
                block -= MP[a]
                block[np.diag_indices(n)] += 1.0
        del MQ2
        mixing += mixing.T
        mixing *= 0.5
        gram = grams[0] if n_groups == 1 else _BlockDiagonal(grams)

        def rhs_factory():
            return np.concatenate([(Y - means) - MP[k] @ Y + factors[k].solve(YS2) for k in range(n_groups)])

        if not out.explicit:
            # The kernelized predictor expands h over the used candidates: it needs g's factors and the set weights.
            self._factors_y, self._mean_op, self._omega = factors, mean_op, omega
        self._solve(alpha, gram, mixing, rhs_factory if out.explicit else None)

    def _solve(self, alpha, gram, mixing, rhs_factory, **known):
        """Factor ``alpha I + D_K B`` (LU; MPIOKRCV: its path route); explicit outputs: ``dual_coef_``; else keep it."""
        keep = getattr(self, "_keep_system", None)
        if keep:
            # MPIOKRCV: one product D_K B (one route) serves its whole alpha grid; it also reads the basis pieces.
            path = ProductShiftPath(gram, mixing, keep["alphas"], method=keep["method"])
            self._system = {"gram": gram, "mixing": mixing, "rhs_factory": rhs_factory, "path": path, **known}
        else:
            path = ProductShiftPath(gram, mixing, [alpha], method="lu", overwrite=True)
        self._use_shift(path.shift(alpha), rhs_factory, **known)

    def _use_shift(self, shift, rhs_factory, **known):
        """Coefficients from the solver ``shift`` of ``alpha I + D_K B`` (one alpha of a path)."""
        self._shift = shift
        if self.output_.explicit:
            self.dual_coef_ = shift.solve_transposed(np.asarray(rhs_factory(), dtype=np.float64))
            self._known_mixing = None
        else:
            self.dual_coef_ = None
            self._known_mixing = known["mixing_units"] if known else None
            if known:
                self._output_basis = _OutputBasis(self.output_, known["sets"].pool, known["used"])

    # -- prediction ----------------------------------------------------------------------------------------------
    def _coefficients(self, test_gram):
        if self.output_.explicit:
            return test_gram @ self.dual_coef_
        c = self._shift.solve(test_gram.T)
        if self._known_mixing is not None:
            return np.asarray(self._known_mixing @ c).T
        n = self.output_.side.train_gram.shape[0]
        t_train = sum(c[k * n:(k + 1) * n] for k in range(len(self._factors_y)))
        w = sum(f.solve(c[k * n:(k + 1) * n]) for k, f in enumerate(self._factors_y))
        t_pool = self.output_.basis.extra_cross @ w
        beta_train = t_train - self._mean_op @ t_pool
        beta_pool = -(self._mean_op.T @ t_train) + self._omega[:, None] * t_pool
        return np.concatenate([beta_train, beta_pool], axis=0).T
