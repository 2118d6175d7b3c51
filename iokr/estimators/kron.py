"""KronRLS: pairwise (dyadic) regression with Kronecker kernels.

Labels live on pairs (drug, target) or (node, node). With complete labels ``Y`` of shape (n1, n2) the dual
coefficients ``A`` (same shape) solve ``K1 A K2 + alpha A = Y``, i.e. ``(K2 kron K1 + alpha I) vec(A) = vec(Y)``
(Pahikkala et al. 2013, eq. 18); through ``K1 = V S1 V^T`` and ``K2 = U S2 U^T``,
``A = V [(V^T Y U) / (s1 s2^T + alpha)] U^T`` in ``O(n1^3 + n2^3)`` (Proposition 2, Corollary 1).
Incomplete labels (triplets) are solved by conjugate gradient on the matrix-free pair kernel
(:class:`iokr.linalg.SampledKroneckerOperator`), with early stopping and optional Tikhonov regularization (Sec. 4.4).

Cross-validation follows the four prediction settings (known/new rows x known/new columns): closed forms of
:mod:`iokr.linalg` where the Kronecker structure gives one (``holdout_predictions`` Notes), explicit retraining on
the setting's splits otherwise. The wiring shared with :class:`~iokr.estimators.ConditionalRankRLS` is in
:mod:`iokr.estimators._pairwise`; the search over alphas is :class:`~iokr.model_selection.KronRLSCV`.
"""

from __future__ import annotations

from ..linalg import (
    kron_ridge_holdout,
    kron_ridge_leave_edge_out,
    kron_ridge_symmetric_dual,
    leave_row_and_column_out,
)
from ._pairwise import SYMMETRY, _PairwiseRLS

# ConditionalRankRLS and TwoStepRLS were defined here before the split into one module per family; this path keeps
# working for existing scripts (``from iokr.estimators.kron import ...``).
from .conditional_ranking import ConditionalRankRLS
from .two_step import TwoStepRLS

__all__ = ["ConditionalRankRLS", "KronRLS", "TwoStepRLS"]


class KronRLS(_PairwiseRLS):
    """Kronecker regularized least squares for pairwise (dyadic) regression.

    Parameters
    ----------
    alpha : float, default=1.0
        ``lambda`` of ``(K2 kron K1 + lambda I) vec(A) = vec(Y)`` (Pahikkala et al. 2013, eq. 18). May be 0 only
        for incomplete labels with ``max_iter`` (early stopping regularizes).
    kernel1, kernel2 : Kernel, str, default="precomputed"
        Kernels of the row and column domains; with "precomputed", ``X1`` / ``X2`` are Gram matrices in ``fit``
        and test-by-train blocks in ``predict``. ``kernel2`` is ignored in one-domain mode.
    symmetry : {None, "symmetric", "reciprocal"}, default=None
        One-domain pairwise kernels ``(K kron K)(I +/- P) / 2`` (eq. 8-9) for symmetric or antisymmetric relations.
    max_iter : int, optional
        Iteration cap of the iterative solver on incomplete labels (early stopping).
    tol : float, default=1e-10
        The iterative solver stops when the true relative residual ``||b - M a|| / ||b||`` of the pair system is
        at most ``tol`` (reported in ``cg_info_``); see the Notes of :class:`KronRLS`.
    solver : {"minres", "cg"}, default="minres"
        Iterative solver on incomplete labels. MINRES minimizes the residual over the same Krylov space as CG, so
        it reaches ``tol`` in at most as many operator products; it is the default by measurement
        (``benchmarks/results/kron_solvers.md``: 0-13 % fewer products than CG on 1000 x 1000 grids with 20k and
        200k pairs, at 1e-3 and 1e-6, the same cost per product). "cg" is needed for ``preconditioner_rank``.
    preconditioner_rank : int, optional
        Precondition CG (``solver="cg"``, ``symmetry=None``, ``alpha > 0``) with ``Phi Phi^T + alpha I``, ``Phi``
        the labelled pairs' features of the ``preconditioner_rank`` largest eigenpairs of ``K1 kron K2``
        (:func:`iokr.linalg.sampled_kron_features`); see the Notes. None (default): no preconditioner. Measured
        with rank 100 on 1000 x 1000 grids (``benchmarks/results/kron_solvers.md``): 1.5-2.1x faster than MINRES
        to 1e-3 and 1e-6 at ``alpha=1`` (20k and 200k pairs), 1.05-1.17x at ``alpha=0.01``. It costs two partial
        eigendecompositions of the factors (``O(n^3)`` each, however few pairs are labelled), which is why it is
        not the default.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n1, n2)
        Dual coefficients ``A`` (repeated pairs summed); scores are ``K1_test A K2_test^T`` (with ``A`` projected
        to its (anti)symmetric part in one-domain mode).
    eigen_ : tuple of EigenPath or None
        Factor eigendecompositions of the closed form (None after conjugate gradient).
    n_iter_ : int
        Iterations of the iterative solver (0 for the closed form).
    cg_info_ : CGInfo
        After the iterative solver: ``relative_residuals[0]``, the true ``||b - M a|| / ||b||`` at the stop.

    Notes
    -----
    Incomplete labels (or ``max_iter``) solve ``M a = b`` with ``M = K_q + alpha I`` (``K_q`` the pair kernel on the
    labelled pairs) and ``b`` the labels, by CG or MINRES from ``a = 0``. The stopping rule is stated on the true
    residual: the solver stops at the first iterate with ``||b - M a|| / ||b|| <= tol`` (a cheap recursive estimate
    proposes the stop, one product with ``M`` confirms it), or after ``max_iter`` iterations.

    With ``preconditioner_rank = r``, CG runs on ``P^{-1} M`` with ``P = Phi Phi^T + alpha I`` and
    ``Phi Phi^T = S K_r S^T`` (``K_r`` the rank-``r`` truncation of the Kronecker kernel, ``S`` the pair
    selection). ``0 <= K_q - Phi Phi^T <= lambda_{r+1} I``, so the eigenvalues of ``P^{-1} M`` lie in
    ``[1, 1 + lambda_{r+1} / alpha]``: the outlying top of the spectrum is removed. The setup costs two partial
    eigendecompositions and ``O(q r^2)``; each iteration adds ``O(q r)`` to the operator product. The stopping
    rule stays on the unpreconditioned residual ``||b - M a|| / ||b||``.

    Proposition 3 of the paper: with complete labels, the symmetric (reciprocal) kernel gives the same predictions
    as the ordinary Kronecker kernel trained on ``(Y + Y^T) / 2`` (``(Y - Y^T) / 2``), i.e. on each edge included in
    both directions; the closed form used here is ``S (K kron K + alpha I)^{-1} y + (I - S) y / alpha``.

    Examples
    --------
    >>> import numpy as np
    >>> from iokr.estimators.kron import KronRLS
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    >>> K1, K2 = X1 @ X1.T, X2 @ X2.T
    >>> model = KronRLS(alpha=1.0).fit(K1, K2, rng.normal(size=(5, 4)))
    >>> model.predict(K1[:2], K2).shape
    (2, 4)
    """

    _ranking = False

    def holdout_predictions(self, setting, alpha=None, n_folds=None, random_state=0):
        """Cross-validation predictions on the training pairs under one of the four prediction settings.

        Parameters
        ----------
        setting : {"A", "B", "C", "D"}
            A: leave the pair out (known rows and columns); B: leave the row out (new rows); C: leave the column
            out (new columns); D: leave the row and the column out (new rows and columns; the training pairs share
            neither). In one-domain mode (``symmetry`` set) A leaves out the edge in both directions, and B / C / D
            leave out every pair touching the row node / the column node / both nodes.
        alpha : float or sequence of float, optional
            Regularization to evaluate (default: the fitted one); a sequence gives one prediction array per value,
            stacked along a new first axis (setting D on complete labels then shares every eigendecomposition).
        n_folds : int, optional
            None: leave one group (pair, edge, row, column, node) out. An int: k-fold over those groups, by
            explicit retraining.
        random_state : int, default=0
            Seed of the fold assignment (``n_folds`` only).

        Returns
        -------
        P : ndarray of shape (n1, n2), or (q,) aligned with the training triplets for incomplete labels
            (with a leading (n_alphas,) axis for a sequence of alphas). Each entry is predicted by the model trained
            without the pairs the setting holds out with it; NaN where no split predicts it (one domain, B / C with
            folds: both nodes in one fold).

        Notes
        -----
        Closed forms (complete labels, ``n_folds=None``): with ``symmetry=None``, A-C cost a few
        ``O(n1 n2 (n1 + n2))`` products and D retrains over the smaller domain (``min(n1, n2)`` eigendecompositions)
        with the closed form over the other; one-domain A is :func:`iokr.linalg.kron_ridge_leave_edge_out`
        (``O(n^4)``). One-domain B / C / D (``n`` / ``n`` / ``n (n + 1) / 2`` refits of the closed form on the
        remaining nodes), incomplete labels (conjugate gradient per split) and k-fold are computed by explicit
        retraining.
        """
        return self._holdout(setting, alpha, n_folds, random_state)

    def _closed_holdout(self, setting, alpha):
        if self.one_domain_:
            if setting != "A":
                return None
            eig = self.eigen_[0]
            V, s, sign = eig.eigenvectors, eig.eigenvalues, SYMMETRY[self.symmetry]
            A = kron_ridge_symmetric_dual(V, s, self.Y_, alpha, sign)
            return kron_ridge_leave_edge_out(V, s, self.Y_, A, alpha, sign)
        if setting == "D":
            return self._leave_row_and_column_out([alpha])[0]
        eig1, eig2 = self.eigen_
        return kron_ridge_holdout(eig1.eigenvectors, eig1.eigenvalues, eig2.eigenvectors, eig2.eigenvalues, self.Y_,
                                  alpha, setting)

    def _leave_row_and_column_out(self, alphas):
        """Setting-D closed form for a grid (complete labels, two domains): every eigendecomposition is shared."""
        eig1, eig2 = self.eigen_
        # Loop over the smaller domain, closed form over the larger one.
        if self.shape_[0] <= self.shape_[1]:
            return leave_row_and_column_out(self.K1_, eig2, self.Y_, alphas)
        return leave_row_and_column_out(self.K2_, eig1, self.Y_.T, alphas).transpose(0, 2, 1)

    def _holdout_path(self, alphas, setting, n_folds, random_state):
        if setting == "D" and n_folds is None and self.complete_ and not self.one_domain_:
            alphas = [self._check_cv_args(setting, a, n_folds) for a in alphas]
            yield from self._leave_row_and_column_out(alphas)
            return
        yield from super()._holdout_path(alphas, setting, n_folds, random_state)
