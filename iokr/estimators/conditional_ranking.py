"""ConditionalRankRLS: conditional ranking with Kronecker kernels (RankRLS loss centered per row node).

The loss of Pahikkala et al. (2013, eq. 6 and 30-33) ranks the columns conditioned on each row. With complete labels
it is Kronecker ridge regression on the factors ``K1`` and ``C K2 C`` (Corollary 2); its closed forms and hold-out
algebra live in :mod:`iokr.linalg._kron_ranking`, the shared wiring in :mod:`iokr.estimators._pairwise`, and the
search over alphas is :class:`~iokr.model_selection.ConditionalRankRLSCV`.
"""

from __future__ import annotations

from ..linalg import kron_ranking_holdout, kron_ranking_leave_row_and_column_out
from ._pairwise import _PairwiseRLS

__all__ = ["ConditionalRankRLS"]


class ConditionalRankRLS(_PairwiseRLS):
    """Conditional ranking with Kronecker kernels: RankRLS loss centered per conditioning (row) node.

    Minimizes ``sum_v sum_{e, e' in E_v} (y_e - y_e' - f(e) + f(e'))^2 + lambda ||f||^2`` where ``E_v`` are the
    labelled pairs of row node ``v`` (Pahikkala et al. 2013, eq. 6 and 30-33): the columns are ranked conditioned
    on each row. Attributes as :class:`KronRLS`.

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization ``lambda`` (as in :class:`KronRLS`).
    kernel1, kernel2 : Kernel, str, default="precomputed"
        Kernels of the conditioning (row) and ranked (column) domains, as in :class:`KronRLS`.
    symmetry : {None, "symmetric", "reciprocal"}, default=None
        One-domain pairwise kernels, as in :class:`KronRLS`.
    max_iter : int, optional
        Iteration cap of the iterative solver on incomplete labels (early stopping).
    tol : float, default=1e-10
        Stopping rule of the iterative solver on the true relative residual, as in :class:`KronRLS`.
    solver : {"minres", "cg"}, default="minres"
        Iterative solver on incomplete labels, as in :class:`KronRLS`.
    preconditioner_rank : int, optional
        Kronecker eigenpairs of the CG preconditioner, as in :class:`KronRLS` (here ``L Phi`` with ``L`` the
        per-row centering, since the system is ``L K_q L + alpha I``).

    Notes
    -----
    With complete labels the loss matrix is ``L = C kron I`` (``C`` the n2 x n2 centering matrix) and the solution of
    ``(L Kbar + lambda I) a = L y`` lies in ``range(L)``, where it solves
    ``((C K2 C) kron K1 + lambda I) a = L y``: a Kronecker system with factors ``K1`` and ``C K2 C``, solved in
    closed form for any PSD kernels (Corollary 2). Symmetric/reciprocal kernels and incomplete labels use conjugate
    gradient on ``(L Kq L + lambda I) a = L y`` (SPD, same solution). Scores are meaningful up to a per-row shift.
    """

    _ranking = True

    def holdout_predictions(self, setting, alpha=None, n_folds=None, random_state=0):
        """Cross-validation predictions under one of the four settings (see :meth:`KronRLS.holdout_predictions`).

        The ranking loss leaves a free offset per row; predictions for rows that keep training labels (settings A
        and C) include the least-squares row intercept of the model that made them, so scores from different
        hold-out models are comparable within a row. Setting B returns row-centered predictions (a whole row comes
        from one model); setting D (and B by retraining) the plain kernel scores ``K1 A K2^T``.

        Parameters
        ----------
        setting : {"A", "B", "C", "D"}
            Held-out unit: pair, row, column, or row and column (see :meth:`KronRLS.holdout_predictions`).
        alpha : float or sequence of float, optional
            Regularization to evaluate (default: the fitted one); a sequence stacks one array per value.
        n_folds : int, optional
            None: leave one group out (closed forms where they exist). An int: k-fold by explicit retraining.
        random_state : int, default=0
            Seed of the fold assignment (``n_folds`` only).

        Returns
        -------
        P : ndarray of shape (n1, n2), or (q,) aligned with the training triplets for incomplete labels
            Each entry predicted by the model trained without the pairs the setting holds out with it.

        Notes
        -----
        Closed forms (complete labels, ``symmetry=None``, ``n_folds=None``), all from ``K1 = V S1 V^T`` and
        ``C K2 C = U S2 U^T``: conditional ranking is KronRLS with an unpenalized intercept per row, a penalized
        least-squares fit, so the model trained without a set ``S`` of pairs equals the full model refitted with
        ``y_S`` replaced by its own predictions, ``(I - H_SS) f_S = (H y)_S - H_SS y_S``. A: ``H_SS`` is the
        diagonal of ``H``; B: leave-row-out of KronRLS on ``(K1, C K2 C, Y C)``; C: ``H_SS`` for a column is
        diagonal in the eigenbasis of ``K1`` (:func:`iokr.linalg.kron_ranking_holdout`); D: ``n1`` row refits, each
        with the closed-form column hold-out (:func:`iokr.linalg.kron_ranking_leave_row_and_column_out`). Other
        cases (one domain, incomplete labels, ``n_folds``) retrain explicitly on the setting's splits.
        """
        return self._holdout(setting, alpha, n_folds, random_state)

    def _closed_holdout(self, setting, alpha):
        if self.one_domain_:
            return None
        eig1, eig2 = self.eigen_
        if setting == "D":
            return kron_ranking_leave_row_and_column_out(self.K1_, self.K2_, eig2, self.Y_, alpha)
        return kron_ranking_holdout(eig1.eigenvectors, eig1.eigenvalues, eig2.eigenvectors, eig2.eigenvalues, self.Y_,
                                    alpha, setting)
