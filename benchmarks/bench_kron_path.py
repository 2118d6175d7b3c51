"""KronRLS setting D (leave row and column out) over a grid of 31 alphas: shared decompositions vs one alpha.

Complete labels, Gaussian kernels on 10-d Gaussian inputs, ``n1 = n2 = n``. "per-alpha route" is what
``cv_path(alphas, "D")`` did before (one ``holdout_predictions("D", alpha)`` per alpha: ``n`` eigendecompositions
of size ``n - 1`` each time); "grid" is ``cv_path`` now (:func:`iokr.linalg.leave_row_and_column_out`: the
``n`` eigendecompositions once, then three ``(n - 1, n) x (n, n)`` products per row and alpha). Floors measured in
the same process: ``eigh_floor_s`` = the ``n`` eigendecompositions alone (LAPACK ``syevd``); ``gemm_floor_*`` = the
``3 n`` matrix products of shape ``(n - 1, n) x (n, n)`` one alpha needs, and the same products with the 31 alphas
stacked (``(31 (n - 1), n) x (n, n)``, as the grid computes them), at the machine's GEMM rate. One BLAS thread,
best of 2 (per-alpha route: 1 run), on a shared 2-core machine.

``floor_ratio_31_over_1 = (eigh + gemm_31) / (eigh + gemm_1)`` is the least a 31-alpha grid can cost relative to
one alpha when the per-alpha products are exact: at these sizes the per-alpha products (``3 n^2 (n - 1)``
multiply-adds per row) cost about as much as the eigendecompositions, so the grid cannot reach 3x one alpha by
sharing the decompositions alone.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from benchmarks._harness import best_time, eigh_seconds, gemm_seconds, one_blas_thread
from iokr import KronRLS
from iokr.kernels import Gaussian


def _mse(y, p):
    return -np.mean((y - p) ** 2)


_best = partial(best_time, repeat=2)


def run(quick=False, data_dir=None):
    with one_blas_thread():
        return _run(quick)


def _run(quick):
    rng = np.random.default_rng(0)
    alphas = np.logspace(-3, 3, 31)
    rows = []
    for n in ((40, 80) if quick else (100, 200)):
        K1 = Gaussian(gamma=0.1)(rng.normal(size=(n, 10)))
        K2 = Gaussian(gamma=0.1)(rng.normal(size=(n, 10)))
        Y = rng.normal(size=(n, n))
        model = KronRLS(alpha=1.0).fit(K1, K2, Y)

        t_one, _ = _best(lambda m=model: m.cv_path(alphas[15:16], "D", scoring=_mse))
        t_grid, grid = _best(lambda m=model: m.cv_path(alphas, "D", scoring=_mse))
        t_before, before = _best(
            lambda m=model: np.array([_mse(m.Y_.ravel(), m.holdout_predictions("D", alpha=a).ravel()) for a in alphas]),
            repeat=1)
        minor = K1[1:, 1:]
        t_eigh = eigh_seconds(minor, count=n, repeat=2).wall
        B = rng.normal(size=(n, n))
        A1, A31 = rng.normal(size=(n - 1, n)), rng.normal(size=(31 * (n - 1), n))
        # The products of one row, timed once and counted n times: one alpha, and all 31 alphas stacked (as the grid
        # computes them).
        t_gemm1 = n * gemm_seconds(A1, B, products=3)
        t_gemm31 = n * gemm_seconds(A31, B, products=3)
        floor_one, floor_grid = t_eigh + t_gemm1, t_eigh + t_gemm31
        rows.append({
            "case": f"n1=n2={n}, 31 alphas", "one_alpha_s": t_one, "grid_31_s": t_grid,
            "per_alpha_route_31_s": t_before, "eigh_floor_s": t_eigh, "gemm_floor_one_alpha_s": t_gemm1,
            "gemm_floor_31_alphas_s": t_gemm31, "grid_over_one_alpha": t_grid / t_one,
            "floor_ratio_31_over_1": floor_grid / floor_one, "speedup_vs_per_alpha_route": t_before / t_grid,
            "one_alpha_over_floor": t_one / floor_one, "grid_over_floor": t_grid / floor_grid,
            "max_rel_diff_scores": float(np.max(np.abs(grid - before) / np.abs(before))),
        })
    return rows
