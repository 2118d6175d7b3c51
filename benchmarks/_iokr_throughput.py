"""The child process of ``bench_iokr``'s throughput rows, in a module of its own: the child imports only this module,
the library and the harness, so its peak RSS holds nothing of the parent's peers (scikit-learn's KernelRidge)."""

from __future__ import annotations

import json

import numpy as np

from benchmarks._harness import best_time as _timed
from benchmarks._harness import peak_rss_mib
from iokr import IOKR, CandidateSets, PackedBinaryFeatures, config_context
from iokr.kernels import Gaussian

P_BITS = 2048


def throughput(n_queries, n_candidates, top_k, mode, working_memory=1024, n_check=5, seed=0):
    """Run in a child process: streamed top-k (``mode="rank"``) or dense scores (``mode="dense"``)."""
    rng = np.random.default_rng(seed)
    n_train, d = 2000, 64
    X = rng.normal(size=(n_train, d))
    Y = (rng.random((n_train, P_BITS)) < 0.1).astype(np.float32)
    X_test = rng.normal(size=(n_queries, d))
    packed = np.empty((n_candidates, P_BITS // 8), dtype=np.uint8)
    for start in range(0, n_candidates, 10_000):  # generate in blocks to keep the generator's memory small
        stop = min(start + 10_000, n_candidates)
        packed[start:stop] = np.packbits(rng.random((stop - start, P_BITS), dtype=np.float32) < 0.1, axis=1)
    pool = PackedBinaryFeatures(packed, P_BITS)
    model = IOKR(alpha=1.0, input_kernel=Gaussian(0.01), decoding="cosine").fit(X, Y)
    baseline = peak_rss_mib()
    with config_context(working_memory=working_memory):
        if mode == "rank":
            sets = CandidateSets.shared(pool, n_queries)
            seconds, rankings = _timed(lambda: model.rank(X_test, sets, top_k=top_k))
            exact = []
            for q in rng.choice(n_queries, size=n_check, replace=False):
                scores = model.decision_function(X_test[q:q + 1], pool)[0]
                brute = np.lexsort((np.arange(scores.size), -scores.astype(np.float64)))[:top_k]
                exact.append(bool(np.array_equal(brute, rankings[q].pool_indices)))
            checked = all(exact)
        else:
            seconds, S = _timed(lambda: model.decision_function(X_test, pool))
            checked = None
    peak = peak_rss_mib()
    print(json.dumps({"seconds": seconds, "peak_rss_mib": peak, "rss_before_scoring_mib": baseline,
                      "topk_exact": checked}))
