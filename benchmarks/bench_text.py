"""Context kernels on sparse word-position matrices: Gram and prediction timings against the naive formulas.

Data: the KJV chapters bundled with iokr.datasets (public domain); contexts (window +-8) of every their/there
occurrence (quick: the first 800). Rows:

- gram_<kernel>: ``K = A (W_hat kron P_hat) A^T`` of n contexts by our sparse route, against the peer route
  "explicit features" (scikit-learn ``linear_kernel`` on the dense explicit feature map ``vec(X P)``), and against
  the naive formula on dense word-position vectors (``A_dense (I kron P_hat) A_dense^T`` with the Kronecker product
  formed, restricted to the words that occur) on the first 150 contexts (ours timed on the same subset for that
  ratio); ``max_abs_err`` over both comparisons.
- predict_<kernel>: scores of n_test new contexts from a model on n_train contexts: the primal path
  ``X_new @ w`` (O(nnz) per context, thesis section 2.1.2) against the dual path ``k(X_new, X_train) a``.

Timings: single runs on a shared 2-core machine (other agents running), one BLAS thread.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics.pairwise import linear_kernel

from benchmarks._harness import best_time as _timed
from benchmarks._harness import one_blas_thread
from iokr.datasets import load_parallel_text
from iokr.text import BagOfWordsKernel, ContextFeaturizer, TransformedContextKernel, WordPositionKernel, tokenize

WINDOW = 8
N_NAIVE = 150


def _gram_row(name, kernel, X):
    t_ours, K = _timed(lambda: kernel(X))
    t_peer, K_peer = _timed(lambda: linear_kernel(kernel.features(X).toarray()))
    # Naive: dense vectors on the words that occur, the Kronecker product formed explicitly; on the first N_NAIVE
    # contexts only (its cost grows with (words x positions)^2), against ours on the same subset.
    n_pos = 2 * WINDOW
    sub = X[:N_NAIVE]
    used = np.unique(sub.indices // n_pos)
    cols = (used[:, None] * n_pos + np.arange(n_pos)[None, :]).ravel()
    dense = sub[:, cols].toarray()
    M = np.kron(np.eye(used.size), kernel.position_gram())
    t_naive, K_naive = _timed(lambda: dense @ M @ dense.T)
    t_ours_sub, K_sub = _timed(lambda: kernel(sub))
    return {"row": f"gram_{name}", "n": X.shape[0], "ours_s": t_ours,
            "peer_explicit_features_s": t_peer, "peer_over_ours": t_peer / t_ours,
            "n_naive": sub.shape[0], "words_naive": int(used.size), "ours_on_naive_subset_s": t_ours_sub,
            "naive_s": t_naive, "naive_over_ours": t_naive / t_ours_sub,
            "max_abs_err": float(max(np.abs(K_sub - K_naive).max(), np.abs(K - K_peer).max()))}


def _predict_row(name, kernel, X, rng):
    n_train = X.shape[0] * 3 // 4
    a = rng.standard_normal(n_train)
    t_w, w = _timed(lambda: kernel.primal_weights(X[:n_train], a))
    X_new = X[n_train:]
    t_primal, s_primal = _timed(lambda: X_new @ w)
    t_dual, s_dual = _timed(lambda: kernel(X_new, X[:n_train]) @ a)
    return {"row": f"predict_{name}", "n": X_new.shape[0], "n_train": n_train, "ours_s": t_primal,
            "primal_weights_once_s": t_w, "dual_s": t_dual, "dual_over_primal": t_dual / t_primal,
            "max_abs_err": float(np.abs(s_primal - s_dual).max())}


def run(quick=False, data_dir=None):
    _, english, _ = load_parallel_text()
    texts = [tokenize(t) for t in english]
    occ = [(texts[k], i) for k, tokens in enumerate(texts) for i, t in enumerate(tokens) if t in ("their", "there")]
    occ = occ[:800] if quick else occ[:2000]
    X = ContextFeaturizer(window=WINDOW).fit(texts).transform(occ)
    rows = []
    rng = np.random.default_rng(0)
    with one_blas_thread():
        for name, kernel in [("bag_of_words", BagOfWordsKernel(WINDOW)),
                             ("word_position", WordPositionKernel(WINDOW, theta=0.5)),
                             ("one_parameter", TransformedContextKernel(WINDOW, theta=0.3))]:
            rows.append(_gram_row(name, kernel, X))
            rows.append(_predict_row(name, kernel, X, rng))
    return rows
