"""IOKR fit and candidate scoring: ours vs the naive closed form vs scikit-learn KernelRidge; streamed top-k
throughput against this machine's sgemm rate.

Rows:
- fit+score: IOKR fit on n training points and dense scores of m queries x c shared candidates. "naive" is the
  brief's formula with an explicit inverse and full kernel matrices, ``K_t (K + lambda I)^{-1} K_y(Y, C)``; "sklearn"
  is ``KernelRidge(kernel="rbf").fit(X, Y).predict(X_t) @ C.T``. Same inputs, centering/normalization off, so all
  three compute the same scores (max relative difference reported).
- top-k throughput: ``rank(X_t, CandidateSets.shared(pool), top_k=100)`` with 2048-bit fingerprints stored bit-packed,
  cosine decoding, float32; the rate is flops of the score products (2 m c p) per second, divided by the sgemm rate
  measured on the same shapes in the same run. Peak RSS is measured in a separate process, before scoring (Python,
  the model and the bit-packed pool) and after; their difference is what scoring added under the 1 GiB budget.
  Exactness: the top-100 of sampled queries equals a brute-force full sort of all their scores.
"""

from __future__ import annotations

import numpy as np
from sklearn.kernel_ridge import KernelRidge

from benchmarks._harness import best_time as _timed
from benchmarks._harness import child_json, sgemm_rate
from benchmarks._iokr_throughput import P_BITS
from iokr import IOKR
from iokr.kernels import Gaussian


def _fit_score_row(n, m, c, d=64, gamma=0.02, alpha=0.5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X_test = rng.normal(size=(m, d))
    Y = (rng.random((n, P_BITS)) < 0.1).astype(np.float64)
    C = (rng.random((c, P_BITS)) < 0.1).astype(np.float64)

    def ours():
        model = IOKR(alpha=alpha, input_kernel=Gaussian(gamma), center_input=False, normalize_input=False,
                     center_output=False, normalize_output=False, decoding="inner").fit(X, Y)
        return model.decision_function(X_test, C)

    def naive():
        kernel = Gaussian(gamma)
        M = np.linalg.inv(kernel(X) + alpha * np.eye(n))
        return kernel(X_test, X) @ M @ (Y @ C.T)

    def sklearn():
        ridge = KernelRidge(alpha=alpha, kernel="rbf", gamma=gamma).fit(X, Y)
        return ridge.predict(X_test) @ C.T

    t_ours, S = _timed(ours)
    t_naive, S_naive = _timed(naive)
    t_sk, S_sk = _timed(sklearn)
    scale = np.abs(S_naive).max()
    return {"case": f"fit+score n={n} m={m} c={c} p={P_BITS}", "ours_s": t_ours, "naive_s": t_naive,
            "sklearn_s": t_sk, "naive/ours": t_naive / t_ours, "sklearn/ours": t_sk / t_ours,
            "max_rel_diff_naive": float(np.abs(S - S_naive).max() / scale),
            "max_rel_diff_sklearn": float(np.abs(S - S_sk).max() / scale)}


def _throughput_row(n_queries, n_candidates, mode, top_k=100):
    code = (f"from benchmarks._iokr_throughput import throughput; "
            f"throughput({n_queries}, {n_candidates}, {top_k}, {mode!r})")
    result = child_json(["-c", code])
    flops = 2.0 * n_queries * n_candidates * P_BITS
    rate = flops / result["seconds"]
    reference = sgemm_rate(n_queries, min(n_candidates, 50_000), P_BITS)
    return {"case": f"{mode} {n_queries} x {n_candidates} x {P_BITS} bits" + (f" top-{top_k}" if mode == "rank" else ""),
            "ours_s": result["seconds"], "GFLOPs": rate / 1e9, "sgemm_GFLOPs": reference / 1e9,
            "fraction_of_sgemm": rate / reference, "peak_rss_mib": result["peak_rss_mib"],
            "rss_before_scoring_mib": result["rss_before_scoring_mib"],
            "scoring_rss_mib": result["peak_rss_mib"] - result["rss_before_scoring_mib"],
            "budget_mib": 1024, "topk_exact": result["topk_exact"]}


def run(quick=False, data_dir=None):
    rows = []
    if quick:
        rows.append(_fit_score_row(n=500, m=200, c=2000))
        rows.append(_throughput_row(200, 50_000, "rank"))
        return rows
    rows.append(_fit_score_row(n=2000, m=500, c=20_000))
    rows.append(_fit_score_row(n=4000, m=1000, c=20_000))
    rows.append(_throughput_row(1000, 50_000, "dense"))
    rows.append(_throughput_row(1000, 1_000_000, "rank"))
    return rows
