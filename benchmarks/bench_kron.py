"""KronRLS (closed form), Kronecker CG on incomplete labels and RankRLS, side by side with RLScore HEAD.

RLScore is imported if possible (build it from source in a scratch virtual environment and put its site-packages on
``PYTHONPATH``); otherwise its columns are left empty with a note. Timings are wall-clock medians (3 runs; CG 1 run)
with one BLAS thread for both libraries, on a shared 2-core machine with other jobs running: ratios are indicative.
"""

from __future__ import annotations

import numpy as np

from benchmarks._harness import median_time, one_blas_thread
from benchmarks._harness import rel_diff as _rel
from iokr import KronRLS, RankRLS
from iokr.kernels import Gaussian
from iokr.linalg import SampledKroneckerOperator


def _rlscore():
    try:
        from rlscore.learner import CGKronRLS, GlobalRankRLS  # noqa: PLC0415 - optional peer, absent in most setups
        from rlscore.learner import KronRLS as RKronRLS  # noqa: PLC0415
        from rlscore.utilities.pairwise_kernel_operator import PairwiseKernelOperator  # noqa: PLC0415
    except ImportError as exc:  # pragma: no cover - depends on the environment
        return None, f"RLScore not importable ({exc}); RLScore columns skipped"
    return {"KronRLS": RKronRLS, "CGKronRLS": CGKronRLS, "GlobalRankRLS": GlobalRankRLS,
            "PairwiseKernelOperator": PairwiseKernelOperator}, ""


def _gauss_gram(rng, n, d=20, gamma=None):
    X = rng.normal(size=(n, d))
    return Gaussian(gamma=gamma or 1.0 / d)(X), X


def run(quick=False, data_dir=None):
    # One BLAS thread for both libraries: on a loaded shared machine more threads oversubscribe the cores and
    # make eigendecompositions tens of times slower, for both sides alike.
    with one_blas_thread():
        return _run(quick)


def _run(quick):
    rng = np.random.default_rng(0)
    peer, note = _rlscore()
    repeat = 1 if quick else 3
    rows = [_closed_form_row(rng, n, peer, repeat) for n in ((100, 200) if quick else (500, 2000))]
    rows += _incomplete_rows(rng, quick, peer, repeat)
    rows.append(_rankrls_row(rng, quick, peer, repeat))
    if not peer:
        for row in rows:
            row["note"] = note
    return rows


def _closed_form_row(rng, n, peer, repeat):
    """KronRLS closed form on complete labels: fit + predict on the training pairs."""
    K1, _ = _gauss_gram(rng, n)
    K2, _ = _gauss_gram(rng, n)
    Y = rng.normal(size=(n, n))
    t_ours, P = median_time(lambda: KronRLS(alpha=1.0).fit(K1, K2, Y).predict(K1, K2), repeat)
    row = {"case": f"KronRLS fit+predict {n}x{n}", "iokr_s": t_ours}
    if peer:
        def theirs():
            model = peer["KronRLS"](K1=K1, K2=K2, Y=Y.ravel(order="F"), regparam=1.0)
            return model.predict(K1, K2)

        t_peer, Pr = median_time(theirs, repeat)
        row.update(rlscore_s=t_peer, speedup_vs_rlscore=t_peer / t_ours,
                   max_rel_diff=_rel(P.ravel(order="F"), np.asarray(Pr).ravel()))
    return row


def _incomplete_rows(rng, quick, peer, repeat):
    """Conjugate gradient on incomplete labels, matrix-free vec-trick operator: the operator, then the solver."""
    n_nodes, q, iters = ((300, 20_000, 20) if quick else (1000, 200_000, 50))
    K1, _ = _gauss_gram(rng, n_nodes)
    K2, _ = _gauss_gram(rng, n_nodes)
    flat = rng.choice(n_nodes * n_nodes, size=q, replace=False)
    r, c = flat // n_nodes, flat % n_nodes
    y = rng.normal(size=q)
    op = SampledKroneckerOperator(K1, K2, r, c)
    v = rng.normal(size=q)
    t_mv, mv = median_time(lambda: op.matvec(v), repeat)

    def naive_mv():  # the operator with no structure beyond numpy: scatter, two dense products, gather
        V = np.zeros((n_nodes, n_nodes))
        np.add.at(V, (r, c), v)
        return (K1 @ V @ K2.T)[r, c]

    t_naive, mv_naive = median_time(naive_mv, repeat)
    mv_row = {"case": f"Kronecker operator matvec {n_nodes}^2 nodes, {q} pairs", "iokr_s": t_mv, "naive_s": t_naive,
              "speedup_vs_naive": t_naive / t_mv, "max_rel_diff": _rel(mv, mv_naive)}
    r32, c32 = r.astype(np.int32), c.astype(np.int32)
    if peer:
        pko = peer["PairwiseKernelOperator"](K1, K2, r32, c32, r32, c32)
        t_pmv, mv_peer = median_time(lambda: pko.matvec(v), repeat)
        mv_row.update(rlscore_s=t_pmv, speedup_vs_rlscore=t_pmv / t_mv, max_rel_diff=_rel(mv, np.asarray(mv_peer)))
    t_cg, model = median_time(lambda: KronRLS(alpha=1.0, max_iter=iters, tol=1e-30, solver="cg").fit(K1, K2, (r, c, y)), 1)
    pred = model.predict(K1, K2, pairs=(r, c))
    cg_row = {"case": f"KronRLS CG {n_nodes}^2 nodes, {q} pairs, {iters} iterations", "iokr_s": t_cg,
              "iokr_rel_residual": float(model.cg_info_.relative_residuals[0])}
    if peer:
        def theirs_cg():
            return peer["CGKronRLS"](K1=K1, K2=K2, Y=y, label_row_inds=r32, label_col_inds=c32, regparam=1.0,
                                     maxiter=iters)

        t_pcg, pm = median_time(theirs_cg, 1)
        pred_peer = pm.predict(K1, K2, r32, c32)
        cg_row.update(rlscore_s=t_pcg, speedup_vs_rlscore=t_pcg / t_cg,
                      max_rel_diff=_rel(pred, np.asarray(pred_peer).ravel()),
                      note="RLScore runs MINRES, iokr CG: same system, iterates differ slightly")
    return [mv_row, cg_row]


def _rankrls_row(rng, quick, peer, repeat):
    """RankRLS, Gaussian kernel, global ranking."""
    n = 400 if quick else 2000
    X = rng.normal(size=(n, 10))
    y = X[:, 0] - 2 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    gamma = 0.1
    t_rank, pr = median_time(lambda: RankRLS(alpha=1.0, kernel=Gaussian(gamma=gamma)).fit(X, y).predict(X[:200]),
                             repeat)
    row = {"case": f"RankRLS Gaussian n={n} fit+predict(200)", "iokr_s": t_rank}
    if peer:
        def theirs_rank():
            return peer["GlobalRankRLS"](X, y, regparam=1.0, kernel="GaussianKernel", gamma=gamma).predict(X[:200])

        t_prank, prr = median_time(theirs_rank, repeat)
        row.update(rlscore_s=t_prank, speedup_vs_rlscore=t_prank / t_rank,
                   max_rel_diff=_rel(pr - pr.mean(), np.asarray(prr).ravel() - np.mean(prr)))
    return row
