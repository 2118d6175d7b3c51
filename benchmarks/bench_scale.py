"""Scale: streamed cosine scoring of 10^7 on-disk fingerprints, popcount vs float Tanimoto, sketched IOKR for large n,
Dask (2 workers) vs local scoring, with a scaling model for 16 workers.

Rows:
- stream: ``rank(X_t, CandidateSets.shared(CandidateFile), top_k=100)``, 2048-bit fingerprints stored bit-packed in a
  checksummed candidate file (read block by block with ``os.pread``), cosine decoding, float32 BLAS. The rate is the
  flops of the score products (2 m c p) per second, divided by the sgemm rate measured in the same child process on
  the same block shape (1000 x 10,000 x 2048) before and after the run (the better of the two is used). Peak RSS
  (``ru_maxrss``) of the child covers Python, the model, all blocks and the top-k state. Exactness: the top-100 of
  sampled queries equals a stable full sort of all their scores.
- tanimoto: ``k(C, Y_train)`` for binary fingerprints: float64 Tanimoto kernel (the generic path), the popcount path
  (``np.bitwise_count`` on uint64 words) and float32 BLAS intersection counts; equal results checked.
- sketched: IOKR with a Nystrom input sketch on n synthetic examples vs exact IOKR on a size where both run
  (top-1/top-10 retrieval accuracy of held-out examples among candidates), and fit time at n = 100,000.
- dask: 2-worker LocalCluster vs local ``rank``: identical rankings, wall times, per-task costs; a scaling model
  ``T(w) = T_setup + ceil(tasks / w) * t_task + w * t_ship`` fitted from measured per-task costs, evaluated at 16.

Timings were taken on a shared 2-core machine (other jobs running); ratios measured in the same process are the
meaningful numbers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks._memory import peak_rss_mib

P_BITS = 2048


def _timed(fn, repeat=1):
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _sgemm_rate(m, c, p, repeat=3, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.random((m, p), dtype=np.float32)
    B = rng.random((c, p), dtype=np.float32)
    A @ B[:64].T
    seconds, _ = _timed(lambda: A @ B.T, repeat=repeat)
    return 2.0 * m * c * p / seconds


def _random_fingerprint_bytes(rng, rows):
    """Packed rows with bit density 1/8 (AND of three uniform bytes): generated fast, realistic sparsity."""
    shape = (rows, P_BITS // 8)
    return rng.integers(0, 256, shape, dtype=np.uint8) & rng.integers(0, 256, shape, dtype=np.uint8) & \
        rng.integers(0, 256, shape, dtype=np.uint8)


def _write_pool(path, n_candidates, seed=1):
    from iokr.decoding import CandidateFileWriter, PackedBinaryFeatures

    rng = np.random.default_rng(seed)
    with CandidateFileWriter(path, P_BITS, packed=True, block_rows=65536) as writer:
        for start in range(0, n_candidates, 65536):
            rows = min(65536, n_candidates - start)
            writer.append(PackedBinaryFeatures(_random_fingerprint_bytes(rng, rows), P_BITS))


def _model(n_train=2000, d=64, seed=0, decoding="cosine"):
    from iokr import IOKR
    from iokr.decoding import PackedBinaryFeatures
    from iokr.kernels import Gaussian

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train, d))
    Y = PackedBinaryFeatures(_random_fingerprint_bytes(rng, n_train), P_BITS)[:]
    return IOKR(alpha=1.0, input_kernel=Gaussian(0.01), decoding=decoding).fit(X, Y), rng


def stream_child(n_queries, n_candidates, top_k, path, working_memory=1024, n_check=5, out=None):
    """Child process: write (if needed) and score an on-disk pool; prints one JSON line."""
    from iokr import CandidateSets, config_context
    from iokr.decoding import CandidateFile

    if not os.path.exists(path + ".json"):
        t_write, _ = _timed(lambda: _write_pool(path, n_candidates))
    else:
        t_write = None
    model, rng = _model()
    X_test = rng.normal(size=(n_queries, 64))
    pool = CandidateFile(path)
    block = min(n_candidates, 10_000)
    rate_before = _sgemm_rate(n_queries, block, P_BITS)
    baseline = peak_rss_mib()
    with config_context(working_memory=working_memory):
        seconds, rankings = _timed(lambda: model.rank(X_test, CandidateSets.shared(pool, n_queries), top_k=top_k))
    peak = peak_rss_mib()
    rate_after = _sgemm_rate(n_queries, block, P_BITS)
    sample = np.sort(rng.choice(n_queries, size=n_check, replace=False))
    with config_context(working_memory=working_memory):
        t_check, S = _timed(lambda: model.decision_function(X_test[sample], pool))
    exact = []
    for row, q in enumerate(sample):
        brute = np.lexsort((np.arange(S.shape[1]), -S[row].astype(np.float64)))[:top_k]
        exact.append(bool(np.array_equal(brute, rankings[q].pool_indices)))
    result = {"seconds": seconds, "peak_rss_mib": peak, "rss_before_scoring_mib": baseline,
              "sgemm_before": rate_before, "sgemm_after": rate_after, "topk_exact": all(exact),
              "n_checked": n_check, "check_seconds": t_check, "write_seconds": t_write,
              "file_bytes": os.path.getsize(path)}
    print(json.dumps(result), flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(result, f)


def stream_row(n_queries, n_candidates, top_k=100, path=None, keep=False):
    tmp = None
    if path is None:
        tmp = tempfile.mkdtemp(prefix="iokr_scale_")
        path = os.path.join(tmp, "pool.bin")
    code = (f"from benchmarks.bench_scale import stream_child; "
            f"stream_child({n_queries}, {n_candidates}, {top_k}, {path!r})")
    try:
        proc = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    finally:
        if tmp is not None and not keep:
            for name in ("pool.bin", "pool.bin.json"):
                if os.path.exists(os.path.join(tmp, name)):
                    os.remove(os.path.join(tmp, name))
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return stream_result_row(result, n_queries, n_candidates, top_k)


def stream_result_row(result, n_queries, n_candidates, top_k):
    flops = 2.0 * n_queries * n_candidates * P_BITS
    rate = flops / result["seconds"]
    reference = max(result["sgemm_before"], result["sgemm_after"])
    return {"case": f"stream {n_queries} x {n_candidates:,} x {P_BITS} bits cosine top-{top_k} (disk, packed)",
            "ours_s": result["seconds"], "GFLOPs": rate / 1e9, "sgemm_GFLOPs": reference / 1e9,
            "fraction_of_sgemm": rate / reference, "peak_rss_mib": result["peak_rss_mib"],
            "scoring_rss_mib": result["peak_rss_mib"] - result["rss_before_scoring_mib"],
            "topk_exact": result["topk_exact"], "n_checked": result["n_checked"]}


def tanimoto_rows(n_candidates=20_000, n_train=2000, seed=0):
    from iokr.decoding import PackedBinaryFeatures, _bits
    from iokr.kernels import Tanimoto

    rng = np.random.default_rng(seed)
    C = PackedBinaryFeatures(_random_fingerprint_bytes(rng, n_candidates), P_BITS)[:]
    Y = PackedBinaryFeatures(_random_fingerprint_bytes(rng, n_train), P_BITS)[:].astype(np.float64)
    words = _bits.pack_words(Y)
    counts = _bits.bit_counts(words)
    t_float, T_float = _timed(lambda: Tanimoto()._block(C, Y))
    t_float32, T_float32 = _timed(lambda: Tanimoto()._block(C, Y.astype(np.float32)))
    t_pop, T_pop = _timed(lambda: _bits.binary_tanimoto(C, words, counts, method="popcount"))
    Yf = Y.astype(np.float32)
    t_blas, T_blas = _timed(lambda: _bits.binary_tanimoto(C, words, counts, method="blas", B_bits=Yf))
    return [{"case": f"Tanimoto k(C, Y) {n_candidates} x {n_train} x {P_BITS} bits", "float64_kernel_s": t_float,
             "float32_kernel_s": t_float32, "popcount_s": t_pop, "blas_counts_s": t_blas,
             "float64/popcount": t_float / t_pop, "float32/popcount": t_float32 / t_pop,
             "float64/blas_counts": t_float / t_blas,
             "popcount_equal_float64": bool(np.array_equal(T_pop, T_float)),
             "blas_equal_float64": bool(np.array_equal(T_blas, T_float))}]


def _synthetic_regression(n, d=20, p=256, seed=0):
    """Inputs and binary outputs sharing a latent structure, so retrieval accuracy is meaningful."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 8))
    X = np.tanh(latent @ rng.normal(size=(8, d))) + 0.3 * rng.normal(size=(n, d))
    logits = latent @ rng.normal(size=(8, p))
    Y = (logits > 1.0).astype(np.float32)
    return X, Y


def _retrieval_accuracy(model, X_test, Y_test, ks=(1, 10)):
    S = model.decision_function(X_test, Y_test)
    own = S[np.arange(S.shape[0]), np.arange(S.shape[0])]
    rank = 1 + (S > own[:, None]).sum(axis=1)  # pessimism-free: strictly better candidates only
    return {f"top{k}": float(np.mean(rank <= k)) for k in ks}


def sketched_rows(quick=False):
    from iokr import IOKR
    from iokr.estimators.sketched import SketchedIOKR
    from iokr.kernels import Gaussian

    rows = []
    gamma, alpha = 0.05, 1.0
    n_both = 1000 if quick else 3000
    X, Y = _synthetic_regression(n_both + 1000)
    X_tr, Y_tr, X_te, Y_te = X[:n_both], Y[:n_both], X[n_both:], Y[n_both:]
    t_exact, exact = _timed(lambda: IOKR(alpha=alpha, input_kernel=Gaussian(gamma)).fit(X_tr, Y_tr))
    acc_exact = _retrieval_accuracy(exact, X_te, Y_te)
    for solver, s in (("nystrom", 200), ("nystrom", 1000), ("rff", 2000), ("falkon", 500)):
        kwargs = dict(max_iter=200, tol=1e-6) if solver == "falkon" else {}
        t, model = _timed(lambda: SketchedIOKR(alpha=alpha, input_kernel=Gaussian(gamma), solver=solver,
                                               n_components=s, random_state=0, **kwargs).fit(X_tr, Y_tr))
        acc = _retrieval_accuracy(model, X_te, Y_te)
        rows.append({"case": f"n={n_both} {solver} s={s} vs exact", "fit_s": t, "exact_fit_s": t_exact,
                     "exact/sketched": t_exact / t, "top1": acc["top1"], "exact_top1": acc_exact["top1"],
                     "top10": acc["top10"], "exact_top10": acc_exact["top10"],
                     "top1_loss": acc_exact["top1"] - acc["top1"]})
    n_big = 20_000 if quick else 100_000
    X, Y = _synthetic_regression(n_big + 1000, seed=1)
    t, model = _timed(lambda: SketchedIOKR(alpha=alpha, input_kernel=Gaussian(gamma), solver="nystrom",
                                           n_components=1000, random_state=0).fit(X[:n_big], Y[:n_big]))
    acc = _retrieval_accuracy(model, X[n_big:], Y[n_big:])
    rows.append({"case": f"n={n_big:,} nystrom s=1000 (exact IOKR: {8 * n_big**2 / 2**30:.0f} GiB Gram)",
                 "fit_s": t, "top1": acc["top1"], "top10": acc["top10"],
                 "peak_rss_mib": peak_rss_mib()})
    return rows


def dask_rows(quick=False, n_queries=200, n_candidates=400_000, n_workers=2):
    from distributed import get_task_stream

    from iokr import CandidateSets
    from iokr.decoding import PackedBinaryFeatures
    from iokr.distributed import distributed_top_k, local_client

    model, rng = _model()
    if quick:
        n_candidates = 50_000
    X_test = rng.normal(size=(n_queries, 64))
    pool = PackedBinaryFeatures(_random_fingerprint_bytes(rng, n_candidates), P_BITS)
    t_local, local = _timed(lambda: model.rank(X_test, CandidateSets.shared(pool, n_queries), top_k=100))
    local_idx = np.array([r.pool_indices for r in local])
    local_scores = np.array([r.scores for r in local])
    block = n_candidates // 8
    n_tasks = -(-n_candidates // block)
    tiny = PackedBinaryFeatures(pool.packed[:1000], P_BITS)
    with local_client(n_workers=n_workers, processes=False) as client:
        distributed_top_k(client, model, X_test[:1], tiny, 10)  # warm-up
        # Fixed cost of one call (scatter model/pool/queries, schedule, gather, merge) with negligible compute.
        t_fixed, _ = _timed(lambda: distributed_top_k(client, model, X_test[:1], tiny, 10), repeat=3)
        with get_task_stream(client) as stream:
            t_dist, (idx, scores) = _timed(lambda: distributed_top_k(client, model, X_test, pool, 100,
                                                                     candidate_block=block))
    durations = [sum(ss["stop"] - ss["start"] for ss in task["startstops"] if ss["action"] == "compute")
                 for task in stream.data if str(task.get("key", "")).startswith(("_task", "('_task"))]
    t_task = float(np.mean(durations)) if durations else float("nan")
    identical = bool(np.array_equal(idx, local_idx) and np.array_equal(scores, local_scores))
    rows = [{"case": f"dask {n_workers} thread workers vs local: {n_queries} x {n_candidates:,} top-100, "
                     f"{n_tasks} tasks", "local_s": t_local, "dask_s": t_dist, "dask/local": t_dist / t_local,
             "fixed_call_s": t_fixed, "task_s_mean": t_task, "n_tasks_timed": len(durations),
             "identical_rankings": identical}]
    # Scaling model, one worker per machine like this one: T(w) = t_fixed + ceil(tasks / w) * t_task, with t_task
    # proportional to queries x candidates per task (measured above on the workers).
    per_entry = t_task / (block * n_queries)
    for n_big_tasks, w in ((10, 1), (10, 2), (10, 16), (160, 1), (160, 2), (160, 4), (160, 8), (160, 16)):
        t_big = per_entry * (10_000_000 / n_big_tasks) * 1000
        t_pred = t_fixed + -(-n_big_tasks // w) * t_big
        rows.append({"case": f"model: 1000 x 10M, {n_big_tasks} tasks of {10_000_000 // n_big_tasks:,} "
                             f"candidates, {w} workers", "predicted_s": t_pred,
                     "speedup_vs_1": (t_fixed + n_big_tasks * t_big) / t_pred})
    return rows


def run(quick=False, data_dir=None):
    rows = []
    rows += tanimoto_rows(n_candidates=4000 if quick else 20_000)
    rows += sketched_rows(quick)
    rows += dask_rows(quick)
    rows.append(lost_worker_row())
    if quick:
        rows.append(stream_row(200, 100_000))
    else:
        rows.append(stream_row(1000, 10_000_000))
    return rows


def lost_worker_row(n_queries=50, n_candidates=200_000):
    """Kill one of two worker processes while tasks run: the run must retry and return the local result, or fail."""
    import signal
    import threading

    from iokr import CandidateSets
    from iokr.decoding import PackedBinaryFeatures
    from iokr.distributed import DistributedRunError, distributed_top_k, local_client

    model, rng = _model(n_train=500)
    X_test = rng.normal(size=(n_queries, 64))
    pool = PackedBinaryFeatures(_random_fingerprint_bytes(rng, n_candidates), P_BITS)
    local = model.rank(X_test, CandidateSets.shared(pool, n_queries), top_k=100)
    local_idx = np.array([r.pool_indices for r in local])
    with local_client(n_workers=2, processes=True, threads_per_worker=1) as client:
        pids = client.run(os.getpid)  # worker address -> pid
        result = {}

        def call():
            try:
                result["idx"], _ = distributed_top_k(client, model, X_test, pool, 100,
                                                     candidate_block=n_candidates // 16, retries=2)
            except DistributedRunError as exc:
                result["error"] = exc

        start = time.perf_counter()
        worker = threading.Thread(target=call)
        worker.start()
        killed = None
        while worker.is_alive() and killed is None:  # kill a worker while it is computing one of our tasks
            busy = [addr for addr, keys in client.processing().items()
                    if any(str(key).startswith("_task") for key in keys)]
            if busy:
                time.sleep(0.5)
                killed = busy[0]
                os.kill(pids[killed], signal.SIGKILL)
            time.sleep(0.05)
        worker.join()
        seconds = time.perf_counter() - start
        if "idx" in result:
            outcome = "identical to local" if np.array_equal(result["idx"], local_idx) else "DIFFERENT (bug)"
        else:
            outcome = f"clean failure: {str(result['error'])[:100]}"
        outcome += "" if killed else " (no worker was killed: tasks finished first)"
    return {"case": f"lost worker: SIGKILL 1 of 2 worker processes while it computes a task of {n_queries} x {n_candidates:,} top-100 "
                    "(16 tasks, retries=2)", "dask_s": seconds, "outcome": outcome}
