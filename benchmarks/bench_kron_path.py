"""KronRLS setting D (leave row and column out) over a grid of 31 alphas: shared decompositions vs one alpha.

Complete labels, Gaussian kernels on 10-d Gaussian inputs, ``n1 = n2 = n``. "per-alpha route" is what
``cv_path(alphas, "D")`` did before (one ``holdout_predictions("D", alpha)`` per alpha: ``n`` eigendecompositions
of size ``n - 1`` each time); "grid" is ``cv_path`` now (:func:`iokr.linalg.leave_row_and_column_out`: the
``n`` eigendecompositions once, then three ``(n - 1, n) x (n, n)`` products per row and alpha). Floors measured in
the same process: ``eigh_floor_s`` = the ``n`` eigendecompositions alone (LAPACK ``syevd``), ``gemm_floor_s`` = the
``3 n`` matrix products one alpha needs, at the machine's GEMM rate. One BLAS thread, best of 2 (per-alpha route:
1 run), on a shared 2-core machine.

``floor_ratio_31_over_1 = (eigh + 31 gemm) / (eigh + gemm)`` is the least a 31-alpha grid can cost relative to one
alpha when the per-alpha products are exact: at these sizes the per-alpha products (``3 n^2 (n - 1)`` multiply-adds
per row) cost about as much as the eigendecompositions, so the grid cannot reach 3x one alpha by sharing the
decompositions alone.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import linalg as sla

from iokr.estimators.kron import KronRLS
from iokr.kernels import Gaussian


def _mse(y, p):
    return -np.mean((y - p) ** 2)


def _best(fn, repeat=2):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def run(quick=False, data_dir=None):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
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
        t_eigh, _ = _best(lambda mi=minor, k=n: [sla.eigh(mi, driver="evd", check_finite=False) for _ in range(k)])
        A, B = rng.normal(size=(n - 1, n)), rng.normal(size=(n, n))
        t_gemm, _ = _best(lambda a=A, b=B, k=n: [a @ b for _ in range(3 * k)])
        rows.append({
            "case": f"n1=n2={n}, 31 alphas", "one_alpha_s": t_one, "grid_31_s": t_grid,
            "per_alpha_route_31_s": t_before, "eigh_floor_s": t_eigh, "gemm_floor_per_alpha_s": t_gemm,
            "grid_over_one_alpha": t_grid / t_one, "speedup_vs_per_alpha_route": t_before / t_grid,
            "grid_over_floor": t_grid / (t_eigh + 31 * t_gemm),
            "floor_ratio_31_over_1": (t_eigh + 31 * t_gemm) / (t_eigh + t_gemm),
            "max_rel_diff_scores": float(np.max(np.abs(grid - before) / np.abs(before))),
        })
    return rows
