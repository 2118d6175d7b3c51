"""Regularization paths: one factorization route serving ``(K + alpha I)^{-1}`` for a whole grid of alphas.

Two routes give the same numbers (to round-off):

- ``"eigen"``: decompose ``K = Q diag(s) Q^T`` once (:class:`~iokr.linalg.EigenPath`); then every alpha costs only
  matrix products, ``(K + alpha I)^{-1} B = Q ((Q^T B) / (s + alpha))`` (Pahikkala 2008, eq. 2.47);
- ``"cholesky"``: one Cholesky factorization of ``K + alpha I`` per alpha.

A dense symmetric eigendecomposition costs far more than one Cholesky factorization (LAPACK ``syevd`` against
``potrf``: about 29 times at n = 4000 with OpenBLAS on the 2-core development machine, 10 to 30 times in general),
and a Cholesky route that must also deliver the diagonal or blocks of the inverse (hold-out and leave-one-out
values) costs about three factorizations per alpha. ``"auto"`` therefore takes the Cholesky route for short grids
(fewer than :data:`EIGEN_MIN_ALPHAS` values) and the eigen route otherwise.

Ill-conditioned systems: when a Cholesky factorization of the path needs jitter (``K + alpha I`` numerically
singular), the path switches to the eigen route, which is exact for any ``alpha > 0`` (no jitter changes the
system), with a :class:`~iokr.exceptions.NumericalStabilityWarning`.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import linalg as sla

from ..exceptions import NumericalStabilityWarning
from ._cholesky import cholesky_shifted
from ._eigen import EigenPath

#: Grids with at least this many alphas take the eigen route under ``method="auto"``.
EIGEN_MIN_ALPHAS = 8
#: Condition number of ``K + alpha I`` above which hold-out values are reported as dominated by round-off.
_ILL_CONDITIONED = 1e13
PATH_METHODS = ("auto", "eigen", "cholesky")


def check_alphas(alphas, name="alphas", owner=None):
    """Validate a grid of regularization values: a non-empty 1-D array of finite floats > 0 (returned float64)."""
    where = f" of {owner}" if owner else ""
    expected = f"The '{name}' parameter{where} must be a non-empty 1-D sequence of finite floats > 0."
    if isinstance(alphas, (str, bytes)) or np.ndim(alphas) != 1:
        raise ValueError(f"{expected} Got {alphas!r} instead.")
    try:
        values = np.asarray(alphas, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{expected} Got {alphas!r} instead.") from None
    if values.size == 0:
        raise ValueError(f"{expected} Got an empty grid.")
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        raise ValueError(f"{expected} Got {values[bad][0]!r} at position {int(np.flatnonzero(bad)[0])}.")
    return values


def choose_path_method(n_alphas):
    """The route ``method="auto"`` takes for a grid of ``n_alphas`` values (see the module notes)."""
    return "eigen" if n_alphas >= EIGEN_MIN_ALPHAS else "cholesky"


class EigenShift:
    """``(K + alpha I)^{-1}`` at one alpha through a shared :class:`EigenPath`.

    ``prepare(B)`` projects right-hand sides once (``Q^T B``); ``solve_prepared`` then costs one product per alpha.
    """

    method = "eigen"

    def __init__(self, path, alpha):
        self.path = path
        self.alpha = float(alpha)
        self._scale = 1.0 / (path.eigenvalues + self.alpha)

    @property
    def n(self):
        return self.path.n

    def prepare(self, rhs):
        return self.path.project(rhs)

    def solve_prepared(self, token):
        return self.path.solve_projected(token, self.alpha)

    def solve(self, rhs):
        return self.path.solve(rhs, self.alpha)

    def inverse_diag(self):
        """``diag((K + alpha I)^{-1})``, shape (n,)."""
        Q = self.path.eigenvectors
        return np.einsum("ij,j,ij->i", Q, self._scale, Q)

    def inverse_rows(self, rows):
        """Rows ``[(K + alpha I)^{-1}]_{rows, :}``, shape (h, n)."""
        Q = self.path.eigenvectors
        return (Q[rows] * self._scale) @ Q.T

    def inverse_block(self, rows):
        """Block ``[(K + alpha I)^{-1}]_{rows, rows}``, shape (h, h)."""
        return self.path.shifted_inverse_block(rows, self.alpha)

    def condition_number(self):
        s = self.path.eigenvalues
        return float((s.max() + self.alpha) / (s.min() + self.alpha)) if s.size else 1.0


class CholeskyShift:
    """``(K + alpha I)^{-1}`` at one alpha through its Cholesky factor (same interface as :class:`EigenShift`)."""

    method = "cholesky"

    def __init__(self, factor):
        self.factor = factor
        self.alpha = factor.alpha
        self._inverse_factor = None

    @property
    def n(self):
        return self.factor.lower.shape[0]

    def prepare(self, rhs):
        return np.asarray(rhs, dtype=np.float64)

    def solve_prepared(self, token):
        return self.factor.solve(token)

    def solve(self, rhs):
        return self.factor.solve(rhs)

    def inverse_diag(self):
        # diag(L^-T L^-1) = column sums of squares of L^-1; L^-1 comes from a triangular solve against I.
        if self._inverse_factor is None:
            # LAPACK trtri inverts the triangle in place: a third of the work of a triangular solve against I.
            inverse, info = sla.lapack.dtrtri(self.factor.lower, lower=1)
            if info != 0:
                raise np.linalg.LinAlgError(f"Cholesky factor is singular at its diagonal entry {info}.")
            self._inverse_factor = inverse
        return np.einsum("ij,ij->j", self._inverse_factor, self._inverse_factor)

    def inverse_rows(self, rows):
        rows = np.arange(self.n)[rows]
        unit = np.zeros((self.n, rows.size))
        unit[rows, np.arange(rows.size)] = 1.0
        return self.factor.solve(unit).T

    def inverse_block(self, rows):
        return self.inverse_rows(rows)[:, rows]

    def condition_number(self):
        d = np.diag(self.factor.lower)
        return float((d.max() / d.min()) ** 2) if d.size else 1.0


class InterceptShift:
    """Shifted solver of the model with an unpenalized intercept, ``f = K c + b 1``, wrapping a plain shifted solver.

    The intercept is the limit ``t -> inf`` of the kernel ``K + t 1 1^T`` (an intercept with penalty ``alpha / t``);
    by Sherman-Morrison its shifted inverse tends to

        G_inf = G - u u^T / s,      G = (K + alpha I)^{-1},  u = G 1,  s = 1^T G 1,

    so every hold-out formula applies unchanged with ``G_inf`` in place of ``G``. Fitting such a model on a training
    side equals centering inputs *and* outputs on that side's own means (ridge with an intercept), which is why the
    closed form with an intercept reproduces estimators whose centering is refitted on every training side.
    """

    def __init__(self, base):
        self.base = base
        self.method = base.method
        self.alpha = base.alpha
        self._u = base.solve(np.ones(base.n))
        self._s = float(self._u.sum())

    @property
    def n(self):
        return self.base.n

    def prepare(self, rhs):
        return (self.base.prepare(rhs), np.asarray(rhs, dtype=np.float64).sum(axis=0))

    def solve_prepared(self, token):
        base_token, _ = token
        A = self.base.solve_prepared(base_token)
        # u^T Y = 1^T G Y = 1^T A (G symmetric).
        correction = A.sum(axis=0) / self._s
        return A - (np.multiply.outer(self._u, correction) if A.ndim > 1 else self._u * correction)

    def solve(self, rhs):
        return self.solve_prepared(self.prepare(rhs))

    def inverse_diag(self):
        return self.base.inverse_diag() - self._u**2 / self._s

    def inverse_rows(self, rows):
        return self.base.inverse_rows(rows) - np.outer(self._u[rows], self._u) / self._s

    def inverse_block(self, rows):
        u = self._u[rows]
        return self.base.inverse_block(rows) - np.outer(u, u) / self._s

    def condition_number(self):
        return self.base.condition_number()


def ridge_solution(solver, gram, y, *, intercept=False):
    """Dual coefficients ``c`` and intercept ``b`` of ``f = K c + b`` at one alpha, from a shifted solver.

    Without ``intercept``: ``c = (K + alpha I)^{-1} y`` and ``b = 0``. With it, ``solver`` serves the intercept model
    ``G_inf = lim_{t -> inf} (K + t 1 1^T + alpha I)^{-1}`` (:class:`InterceptShift` or a constant-deflated eigen
    path), so ``c = G_inf y`` sums to zero and ``b = mean(y - K c)``. ``G_inf 1 = 0``, so ``y`` is centered first: that
    removes the constant component whose ``1 / alpha`` part would otherwise cancel.

    Parameters
    ----------
    solver : EigenShift, CholeskyShift or InterceptShift
    gram : ndarray of shape (n, n)
        ``K`` (used only with ``intercept``).
    y : ndarray of shape (n,) or (n, k)
    intercept : bool, default=False

    Returns
    -------
    dual : ndarray of shape (n,) or (n, k)
    intercept : float or ndarray of shape (k,)
    """
    if not intercept:
        return solver.solve(y), np.zeros(y.shape[1:])[()]
    mean = y.mean(axis=0)
    dual = solver.solve(y - mean)
    return dual, mean - (gram @ dual).mean(axis=0)


class RegularizationPath:
    """Shifted solves ``(K + alpha I)^{-1}`` for a grid of alphas, by the cheaper exact route.

    Parameters
    ----------
    gram : ndarray of shape (n, n)
        Symmetric positive semidefinite matrix; not modified (factored in float64).
    alphas : array-like of shape (n_alphas,)
        Regularization values, all > 0.
    method : {"auto", "eigen", "cholesky"}, default="auto"
        ``"auto"`` takes the eigen route for grids of at least :data:`EIGEN_MIN_ALPHAS` values.
    name : str
        Name used in messages.
    intercept : bool, default=False
        Serve the model with an unpenalized intercept (:class:`InterceptShift`) instead of the plain one.

    Attributes
    ----------
    alphas : ndarray of shape (n_alphas,)
    method : str
        The route taken: ``"eigen"`` or ``"cholesky"`` (after a fallback, ``"eigen"``).
    fallback : bool
        True when a Cholesky route switched to the eigen route because a factorization needed jitter.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.eye(3)
    >>> path = RegularizationPath(K, [0.5, 1.0], method="eigen")
    >>> [float(s.solve(np.ones(3))[0]) for s in path]
    [0.6666666666666666, 0.5]
    """

    def __init__(self, gram, alphas, *, method="auto", name="K", intercept=False):
        self.alphas = check_alphas(alphas)
        self.intercept = bool(intercept)
        if method not in PATH_METHODS:
            raise ValueError(f"The 'method' parameter of RegularizationPath must be one of {PATH_METHODS}. "
                             f"Got {method!r} instead.")
        gram = np.asarray(gram)
        if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
            raise ValueError(f"'{name}' must be a square matrix, got shape {gram.shape}.")
        self.name = name
        self.method = choose_path_method(self.alphas.size) if method == "auto" else method
        self.fallback = False
        self._gram = gram
        self._eigen = EigenPath(gram, name=name, deflate_constant=self.intercept) if self.method == "eigen" else None
        self._warned = False

    def __len__(self):
        return self.alphas.size

    def __iter__(self):
        for i in range(self.alphas.size):
            yield self.at(i)

    @property
    def eigen(self):
        """The shared :class:`EigenPath` (eigen route only, else None; deflated with ``intercept``)."""
        return self._eigen

    def at(self, index):
        """The shifted solver for ``alphas[index]`` (the model with an unpenalized intercept with ``intercept``).

        On the eigen route the intercept is built into the decomposition (``EigenPath(deflate_constant=True)``);
        on the Cholesky route it wraps the factor in :class:`InterceptShift`.
        """
        shift = self._plain(index)
        return InterceptShift(shift) if self.intercept and shift.method == "cholesky" else shift

    def _plain(self, index):
        alpha = float(self.alphas[index])
        if self.method == "cholesky":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NumericalStabilityWarning)
                try:
                    factor = cholesky_shifted(self._gram, alpha, name=self.name)
                except np.linalg.LinAlgError:
                    factor = None
            if factor is not None and factor.jitter == 0.0:
                return CholeskyShift(factor)
            warnings.warn(
                f"'{self.name}' + {alpha:g} I is numerically singular (its Cholesky factorization needed jitter); "
                "switching the regularization path to the eigendecomposition route, exact for any alpha > 0.",
                NumericalStabilityWarning, stacklevel=2)
            self.method, self.fallback = "eigen", True
            self._eigen = EigenPath(self._gram, name=self.name, deflate_constant=self.intercept)
        shift = EigenShift(self._eigen, alpha)
        condition = shift.condition_number()
        if condition > _ILL_CONDITIONED and not self._warned:
            self._warned = True
            warnings.warn(
                f"'{self.name}' + {alpha:g} I has condition number {condition:.3g}; hold-out values at this alpha "
                "are dominated by round-off (still finite). Prefer larger alphas.",
                NumericalStabilityWarning, stacklevel=2)
        return shift
