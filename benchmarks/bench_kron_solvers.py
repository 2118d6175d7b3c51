"""KronRLS on incomplete labels: CG against MINRES (``solver=``) to the same stated tolerance.

Both solvers stop at the first iterate whose true relative residual ``||y - (K_q + alpha I) a|| / ||y||`` is at
most ``tol`` (``cg_info_.relative_residuals``). Gaussian kernels on 20-d Gaussian inputs, pairs sampled without
replacement, random labels. The floor is ``iterations x one operator product`` (``SampledKroneckerOperator.matvec``
timed in the same process): the solvers' own vector work is what lies above it. One BLAS thread, one run each, on
a shared 2-core machine.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from benchmarks._harness import best_time, one_blas_thread
from iokr import KronRLS
from iokr.kernels import Gaussian
from iokr.linalg import SampledKroneckerOperator


def run(quick=False, data_dir=None):
    with one_blas_thread():
        return _run(quick)


def _run(quick):
    rng = np.random.default_rng(0)
    cases = [(200, 10_000, 1.0, 1e-6), (200, 10_000, 0.01, 1e-6)] if quick else \
        [(300, 20_000, 1.0, 1e-6), (300, 20_000, 0.01, 1e-6), (300, 20_000, 0.01, 1e-10), (1000, 100_000, 1.0, 1e-6)]
    rows = []
    for n_nodes, q, alpha, tol in cases:
        K1 = Gaussian(gamma=0.05)(rng.normal(size=(n_nodes, 20)))
        K2 = Gaussian(gamma=0.05)(rng.normal(size=(n_nodes, 20)))
        flat = rng.choice(n_nodes * n_nodes, size=q, replace=False)
        r, c = flat // n_nodes, flat % n_nodes
        y = rng.normal(size=q)
        op = SampledKroneckerOperator(K1, K2, r, c)
        v = rng.normal(size=q)
        t_mv, _ = best_time(partial(op.matvec, v), repeat=3)
        row = {"case": f"{n_nodes}^2 nodes, {q} pairs, alpha={alpha:g}, tol={tol:g}", "matvec_s": t_mv}
        models = {}
        for solver in ("cg", "minres"):
            t, model = best_time(partial(_fit, solver, alpha, tol, K1, K2, (r, c, y)))
            models[solver] = model
            row.update({f"{solver}_iter": model.n_iter_, f"{solver}_s": t,
                        f"{solver}_rel_residual": float(model.cg_info_.relative_residuals[0]),
                        f"{solver}_over_floor": t / (model.n_iter_ * t_mv)})
        row["minres_speedup"] = row["cg_s"] / row["minres_s"]
        row["iter_ratio_minres_over_cg"] = row["minres_iter"] / row["cg_iter"]
        pc, pm = (models[s].predict(K1, K2, pairs=(r, c)) for s in ("cg", "minres"))
        row["max_rel_diff_predictions"] = float(np.abs(pc - pm).max() / np.abs(pc).max())
        rows.append(row)
    return rows


def _fit(solver, alpha, tol, K1, K2, triplets):
    return KronRLS(alpha=alpha, tol=tol, solver=solver, max_iter=5000).fit(K1, K2, triplets)

