"""KronRLS (closed form), Kronecker CG on incomplete labels and RankRLS, side by side with RLScore HEAD.

RLScore is imported if possible (build it from source in a scratch virtual environment and put its site-packages on
``PYTHONPATH``); otherwise its columns are left empty with a note. Timings are wall-clock medians (3 runs; CG 1 run)
with one BLAS thread for both libraries, on a shared 2-core machine with other jobs running: ratios are indicative.
"""

from __future__ import annotations

import time

import numpy as np

from iokr.estimators import KronRLS
from iokr.estimators.rankrls import RankRLS
from iokr.kernels import Gaussian
from iokr.linalg import SampledKroneckerOperator


def _rlscore():
    try:
        from rlscore.learner import CGKronRLS, GlobalRankRLS
        from rlscore.learner import KronRLS as RKronRLS
        from rlscore.utilities.pairwise_kernel_operator import PairwiseKernelOperator
    except ImportError as exc:  # pragma: no cover - depends on the environment
        return None, f"RLScore not importable ({exc}); RLScore columns skipped"
    return {"KronRLS": RKronRLS, "CGKronRLS": CGKronRLS, "GlobalRankRLS": GlobalRankRLS,
            "PairwiseKernelOperator": PairwiseKernelOperator}, ""


def _time(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def _gauss_gram(rng, n, d=20, gamma=None):
    X = rng.normal(size=(n, d))
    return Gaussian(gamma=gamma or 1.0 / d)(X), X


def _rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def run(quick=False, data_dir=None):
    from threadpoolctl import threadpool_limits

    # One BLAS thread for both libraries: on a loaded shared machine more threads oversubscribe the cores and
    # make eigendecompositions tens of times slower, for both sides alike.
    with threadpool_limits(limits=1):
        return _run(quick)


def _run(quick):
    rng = np.random.default_rng(0)
    peer, note = _rlscore()
    rows = []
    repeat = 1 if quick else 3

    # KronRLS closed form on complete labels: fit + predict on the training pairs.
    for n in ((100, 200) if quick else (500, 2000)):
        K1, _ = _gauss_gram(rng, n)
        K2, _ = _gauss_gram(rng, n)
        Y = rng.normal(size=(n, n))

        def ours():
            return KronRLS(alpha=1.0).fit(K1, K2, Y).predict(K1, K2)

        t_ours, P = _time(ours, repeat)
        row = {"case": f"KronRLS fit+predict {n}x{n}", "iokr_s": t_ours}
        if peer:
            def theirs():
                model = peer["KronRLS"](K1=K1, K2=K2, Y=Y.ravel(order="F"), regparam=1.0)
                return model.predict(K1, K2)

            t_peer, Pr = _time(theirs, repeat)
            row.update(rlscore_s=t_peer, speedup_vs_rlscore=t_peer / t_ours,
                       max_rel_diff=_rel(P.ravel(order="F"), np.asarray(Pr).ravel()))
        rows.append(row)

    # Conjugate gradient on incomplete labels, matrix-free vec-trick operator.
    n_nodes, q, iters = ((300, 20_000, 20) if quick else (1000, 200_000, 50))
    K1, _ = _gauss_gram(rng, n_nodes)
    K2, _ = _gauss_gram(rng, n_nodes)
    flat = rng.choice(n_nodes * n_nodes, size=q, replace=False)
    r, c = flat // n_nodes, flat % n_nodes
    y = rng.normal(size=q)
    op = SampledKroneckerOperator(K1, K2, r, c)
    v = rng.normal(size=q)
    t_mv, mv = _time(lambda: op.matvec(v), repeat)
    # Naive reference for the operator: scatter, two dense products, gather (no structure beyond numpy).
    def naive_mv():
        V = np.zeros((n_nodes, n_nodes))
        np.add.at(V, (r, c), v)
        return (K1 @ V @ K2.T)[r, c]

    t_naive, mv_naive = _time(naive_mv, repeat)
    row = {"case": f"Kronecker operator matvec {n_nodes}^2 nodes, {q} pairs", "iokr_s": t_mv, "naive_s": t_naive,
           "speedup_vs_naive": t_naive / t_mv, "max_rel_diff": _rel(mv, mv_naive)}
    if peer:
        pko = peer["PairwiseKernelOperator"](K1, K2, r.astype(np.int32), c.astype(np.int32), r.astype(np.int32),
                                             c.astype(np.int32))
        t_pmv, mv_peer = _time(lambda: pko.matvec(v), repeat)
        row.update(rlscore_s=t_pmv, speedup_vs_rlscore=t_pmv / t_mv, max_rel_diff=_rel(mv, np.asarray(mv_peer)))
    rows.append(row)

    def ours_cg():
        model = KronRLS(alpha=1.0, max_iter=iters, tol=1e-30).fit(K1, K2, (r, c, y))
        return model

    t_cg, model = _time(ours_cg, 1)
    pred = model.predict(K1, K2, pairs=(r, c))
    row = {"case": f"KronRLS CG {n_nodes}^2 nodes, {q} pairs, {iters} iterations", "iokr_s": t_cg,
           "iokr_rel_residual": float(model.cg_info_.relative_residuals[0])}
    if peer:
        def theirs_cg():
            return peer["CGKronRLS"](K1=K1, K2=K2, Y=y, label_row_inds=r.astype(np.int32),
                                     label_col_inds=c.astype(np.int32), regparam=1.0, maxiter=iters)

        t_pcg, pm = _time(theirs_cg, 1)
        pred_peer = pm.predict(K1, K2, r.astype(np.int32), c.astype(np.int32))
        row.update(rlscore_s=t_pcg, speedup_vs_rlscore=t_pcg / t_cg,
                   max_rel_diff=_rel(pred, np.asarray(pred_peer).ravel()),
                   note="RLScore runs MINRES, iokr CG: same system, iterates differ slightly")
    rows.append(row)

    # RankRLS, Gaussian kernel, global ranking.
    n = 400 if quick else 2000
    X = rng.normal(size=(n, 10))
    y = X[:, 0] - 2 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    gamma = 0.1

    def ours_rank():
        return RankRLS(alpha=1.0, kernel=Gaussian(gamma=gamma)).fit(X, y).predict(X[:200])

    t_rank, pr = _time(ours_rank, repeat)
    row = {"case": f"RankRLS Gaussian n={n} fit+predict(200)", "iokr_s": t_rank}
    if peer:
        def theirs_rank():
            return peer["GlobalRankRLS"](X, y, regparam=1.0, kernel="GaussianKernel", gamma=gamma).predict(X[:200])

        t_prank, prr = _time(theirs_rank, repeat)
        row.update(rlscore_s=t_prank, speedup_vs_rlscore=t_prank / t_rank,
                   max_rel_diff=_rel(pr - pr.mean(), np.asarray(prr).ravel() - np.mean(prr)))
    rows.append(row)
    if not peer:
        for row in rows:
            row["note"] = note
    return rows
