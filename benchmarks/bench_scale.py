"""Scale: streamed cosine scoring of 10^7 on-disk fingerprints, popcount vs float Tanimoto, sketched IOKR for large n,
Dask (2 workers) vs local scoring, with a scaling model for 16 workers.

The issue's target case alone (1,000 queries x 10,000,000 candidates, 2048 bits, cosine, top-100), with its rows merged
into ``reports/scale.json`` and ``reports/scale.md`` (other rows are kept)::

    python -m benchmarks.bench_scale --pool /tmp/iokr_pool_1e7.bin

writes the 2.56 GB bit-packed pool at ``--pool`` if it is not there (kept for later runs), scores it in a child
process (``model.rank``, the fused 0/1 path), checks the top-100 of 5 sampled queries against an independent float64
brute force over all 10^7 candidates, and records the child's peak RSS (``VmHWM``). ``--queries/--candidates``
change the size (e.g. ``--candidates 100000`` for a smoke run), ``--compare-direct`` also times the path without the
fused rule in the same process, ``--output DIR`` writes elsewhere. ``python -m benchmarks.run --only scale`` runs
every section at full size, the target case included (on a temporary pool).

Rows:
- stream: ``rank(X_t, CandidateSets.shared(CandidateFile), top_k=100)``, 2048-bit fingerprints stored bit-packed in a
  checksummed candidate file (read block by block with ``os.pread``), cosine decoding, float32 BLAS. The rate is the
  flops of the score products (2 m c p) per second, divided by the sgemm rate measured in the same child process on
  the same block shape (1000 x 10,000 x 2048) before and after the run (the better of the two is used). Peak RSS
  (``VmHWM``) of the child covers Python, the model, all blocks and the top-k state. Exactness: the top-100 of 5
  sampled queries equals a float64 brute force over the whole pool (byte-table inner products, no float32, stable
  sort); ``--compare-direct`` also times the path without the fused 0/1 rule.
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

import argparse
import json
import os
import signal
import tempfile
import threading
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np

from benchmarks._harness import best_time as _timed
from benchmarks._harness import child_json, format_table, machine_info, peak_rss_mib
from benchmarks._harness import sgemm_rate as _sgemm_rate
from iokr import IOKR, CandidateSets, SketchedIOKR, config_context
from iokr.decoding import (
    CandidateFile,
    CandidateFileWriter,
    PackedBinaryFeatures,
    _bits,  # private: no public names for the byte-table brute force and the popcount Tanimoto
    top_k_scores,
)
from iokr.kernels import Gaussian, Tanimoto

P_BITS = 2048
#: (queries, candidates, top-k) of the issue's streamed-scoring target.
TARGET = (1000, 10_000_000, 100)


def _random_fingerprint_bytes(rng, rows):
    """Packed rows with bit density 1/8 (AND of three uniform bytes): generated fast, realistic sparsity."""
    shape = (rows, P_BITS // 8)
    return rng.integers(0, 256, shape, dtype=np.uint8) & rng.integers(0, 256, shape, dtype=np.uint8) & \
        rng.integers(0, 256, shape, dtype=np.uint8)


def _write_pool(path, n_candidates, seed=1):
    rng = np.random.default_rng(seed)
    with CandidateFileWriter(path, P_BITS, packed=True, block_rows=65536) as writer:
        for start in range(0, n_candidates, 65536):
            rows = min(65536, n_candidates - start)
            writer.append(PackedBinaryFeatures(_random_fingerprint_bytes(rng, rows), P_BITS))


def _model(n_train=2000, d=64, seed=0, decoding="cosine"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train, d))
    Y = PackedBinaryFeatures(_random_fingerprint_bytes(rng, n_train), P_BITS)[:]
    return IOKR(alpha=1.0, input_kernel=Gaussian(0.01), decoding=decoding).fit(X, Y), rng


def _brute_force_top_k(model, X, pool, top_k, chunk=16384):
    """Float64 top-``top_k`` of every query over the whole packed pool, computed independently of the scorer.

    Inner products of the 0/1 candidates with ``h(x)`` and with the centering mean come from per-byte lookup tables
    summed in float64 (no unpacking, no float32), then the explicit formula of each decoding; every chunk's
    candidates are merged by a stable sort. Memory: ``chunk x n_bytes`` float64 per lookup.
    """
    out = model.output_
    H = model.predict_features(X)
    p = pool.shape[1]
    mean = out.feature_transform.mean_ if out.center else np.zeros(p)
    tables = [_bits.byte_dot_table(h) for h in H]
    mean_table, mean_sq = _bits.byte_dot_table(mean), float(mean @ mean)
    h_mean = H @ mean
    h_norm = np.linalg.norm(H, axis=1)
    best_idx = np.zeros((len(H), 0), dtype=np.int64)
    best_scores = np.zeros((len(H), 0))
    for start in range(0, pool.shape[0], chunk):
        stop = min(start + chunk, pool.shape[0])
        packed = pool.packed_rows(start, stop)
        counts = _bits.packed_row_counts(packed, p).astype(np.float64)
        sq = np.maximum(counts - 2 * _bits.packed_dot(packed, mean_table) + mean_sq, 0.0)
        inv = np.where(sq > 0, 1 / np.sqrt(np.where(sq > 0, sq, 1)), 0.0)
        inner = np.stack([_bits.packed_dot(packed, t) for t in tables]) - h_mean[:, None]  # <h, c - m>
        if out.normalize:
            inner *= inv[None, :]
            sq = (sq > 0).astype(np.float64)
        if model.decoding == "distance":
            S = 2 * inner - sq[None, :]
        elif model.decoding == "cosine":
            S = inner * (1.0 if out.normalize else inv[None, :]) / np.where(h_norm > 0, h_norm, 1)[:, None]
        else:
            S = inner
        idx = np.concatenate([best_idx, np.broadcast_to(np.arange(start, stop), S.shape)], axis=1)
        scores = np.concatenate([best_scores, S], axis=1)
        order = np.stack([np.lexsort((i, -sc))[:top_k] for i, sc in zip(idx, scores, strict=True)])
        best_idx = np.take_along_axis(idx, order, axis=1)
        best_scores = np.take_along_axis(scores, order, axis=1)
    return best_idx, best_scores


def stream_child(n_queries, n_candidates, top_k, path, working_memory=1024, n_check=5, out=None,
                 methods=("fused",)):
    """Child process: write (if needed) and score an on-disk pool; prints one JSON line.

    ``methods``: ``"fused"`` is ``model.rank`` (bit-packed blocks scored by the fused rule, the library's path);
    ``"direct"`` scores the same blocks with the binary rule switched off (unpack to float32, finiteness check,
    centered copy, scaled copy, then the product: the path before the fused rule), for a same-process comparison.
    """
    if not os.path.exists(path + ".json"):
        t_write, _ = _timed(lambda: _write_pool(path, n_candidates))
    else:
        t_write = None
    model, rng = _model()
    X_test = rng.normal(size=(n_queries, 64))
    pool = CandidateFile(path)
    if pool.shape[0] != n_candidates:
        raise ValueError(f"{path} holds {pool.shape[0]} candidates, not {n_candidates}; remove it or pass another path.")
    block = min(n_candidates, 10_000)
    baseline = peak_rss_mib()
    result = {"rss_before_scoring_mib": baseline, "write_seconds": t_write, "file_bytes": os.path.getsize(path),
              "methods": {}}
    rankings = None
    for method in methods:
        rate_before = _sgemm_rate(n_queries, block, P_BITS)
        cpu_rate_before = _sgemm_rate(n_queries, block, P_BITS, cpu=True)
        cpu_start = time.process_time()
        with config_context(working_memory=working_memory):
            if method == "fused":
                seconds, ranked = _timed(lambda: model.rank(X_test, CandidateSets.shared(pool, n_queries),
                                                            top_k=top_k))
                indices = np.array([r.pool_indices for r in ranked])
            elif method == "direct":
                scorer = replace(model.scorer(X_test), binary_rule=None)
                seconds, (indices, _) = _timed(partial(top_k_scores, scorer, pool, top_k))
            else:
                raise ValueError(f"unknown method {method!r}")
        cpu_seconds = time.process_time() - cpu_start
        rate_after = _sgemm_rate(n_queries, block, P_BITS)
        cpu_rate_after = _sgemm_rate(n_queries, block, P_BITS, cpu=True)
        key = method if method not in result["methods"] else f"{method}#{len(result['methods']) + 1}"
        result["methods"][key] = {"seconds": seconds, "sgemm_before": rate_before, "sgemm_after": rate_after,
                                     "cpu_seconds": cpu_seconds, "sgemm_cpu_before": cpu_rate_before,
                                     "sgemm_cpu_after": cpu_rate_after, "peak_rss_mib": peak_rss_mib()}
        if rankings is None:
            rankings = indices
        result["methods"][key]["same_as_first"] = bool(np.array_equal(indices, rankings))
    result["peak_rss_mib"] = peak_rss_mib()
    sample = np.sort(rng.choice(n_queries, size=min(n_check, n_queries), replace=False))
    t_check, (brute_idx, brute_scores) = _timed(lambda: _brute_force_top_k(model, X_test[sample], pool, top_k))
    exact, within = [], []
    for row, q in enumerate(sample):
        exact.append(bool(np.array_equal(brute_idx[row], rankings[q])))
        # Near-ties closer than float32 round-off may swap; anything else is a selection error.
        kth = brute_scores[row, -1]
        tol = 1e-5 * max(np.abs(brute_scores[row]).max(), 1e-30)
        missing = np.setdiff1d(brute_idx[row], rankings[q])
        within.append(bool(missing.size == 0 or np.all(brute_scores[row][np.isin(brute_idx[row], missing)] <= kth + tol)))
    result.update({"topk_exact": all(exact), "topk_within_roundoff": all(within), "n_checked": int(sample.size),
                   "check_seconds": t_check})
    print(json.dumps(result), flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(result, f)


def stream_row(n_queries, n_candidates, top_k=100, path=None, keep=False, methods=("fused",)):
    """Score ``n_queries`` x ``n_candidates`` in a child process; one row per method (see :func:`stream_child`).

    ``path``: an existing or new pool file (``path + ".json"`` is its manifest); a temporary one is written and
    removed when omitted. ``keep`` keeps a temporary pool.
    """
    tmp = None
    if path is None:
        tmp = tempfile.mkdtemp(prefix="iokr_scale_")
        path = os.path.join(tmp, "pool.bin")
    code = (f"from benchmarks.bench_scale import stream_child; "
            f"stream_child({n_queries}, {n_candidates}, {top_k}, {path!r}, methods={tuple(methods)!r})")
    try:
        result = child_json(["-c", code])
    finally:
        if tmp is not None and not keep:
            for name in ("pool.bin", "pool.bin.json"):
                if os.path.exists(os.path.join(tmp, name)):
                    os.remove(os.path.join(tmp, name))
            os.rmdir(tmp)
    return stream_result_rows(result, n_queries, n_candidates, top_k)


def stream_result_rows(result, n_queries, n_candidates, top_k):
    flops = 2.0 * n_queries * n_candidates * P_BITS
    rows = []
    for method, m in result["methods"].items():
        rate = flops / m["seconds"]
        reference = max(m["sgemm_before"], m["sgemm_after"])
        base, _, run = method.partition("#")
        label = "fused 0/1 sgemm" if base == "fused" else "direct: unpack, check, center, scale (before)"
        label += f" (run {run})" if run else ""
        rows.append({"case": f"stream {n_queries} x {n_candidates:,} x {P_BITS} bits cosine top-{top_k} "
                             f"(disk, packed), {label}",
                     "ours_s": m["seconds"], "GFLOPs": rate / 1e9, "sgemm_GFLOPs": reference / 1e9,
                     "fraction_of_sgemm": rate / reference,
                     "cpu_s": m["cpu_seconds"],
                     "fraction_of_sgemm_cpu": (flops / m["cpu_seconds"]) / max(m["sgemm_cpu_before"],
                                                                                m["sgemm_cpu_after"]),
                     "peak_rss_mib": m["peak_rss_mib"],
                     "scoring_rss_mib": m["peak_rss_mib"] - result["rss_before_scoring_mib"],
                     "same_rankings_as_first": m["same_as_first"],
                     "topk_exact_vs_float64": result["topk_exact"],
                     "topk_within_roundoff": result["topk_within_roundoff"], "n_checked": result["n_checked"],
                     "check_s": result["check_seconds"], "pool_write_s": result["write_seconds"]})
    return rows


def tanimoto_rows(n_candidates=20_000, n_train=2000, seed=0):
    rng = np.random.default_rng(seed)
    C = PackedBinaryFeatures(_random_fingerprint_bytes(rng, n_candidates), P_BITS)[:]
    Y = PackedBinaryFeatures(_random_fingerprint_bytes(rng, n_train), P_BITS)[:].astype(np.float64)
    words = _bits.pack_words(Y)
    counts = _bits.bit_counts(words)
    t_float, T_float = _timed(lambda: Tanimoto().compute(C, Y))
    t_float32, T_float32 = _timed(lambda: Tanimoto().compute(C, Y.astype(np.float32)))
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
    rank = 1 + (own[:, None] < S).sum(axis=1)  # pessimism-free: strictly better candidates only
    return {f"top{k}": float(np.mean(rank <= k)) for k in ks}


def sketched_rows(quick=False):
    rows = []
    gamma, alpha = 0.05, 1.0
    n_both = 1000 if quick else 3000
    X, Y = _synthetic_regression(n_both + 1000)
    X_tr, Y_tr, X_te, Y_te = X[:n_both], Y[:n_both], X[n_both:], Y[n_both:]
    t_exact, exact = _timed(lambda: IOKR(alpha=alpha, input_kernel=Gaussian(gamma)).fit(X_tr, Y_tr))
    acc_exact = _retrieval_accuracy(exact, X_te, Y_te)
    for solver, s in (("nystrom", 200), ("greedy", 200), ("cholesky", 200), ("nystrom", 1000), ("rff", 2000),
                      ("falkon", 500)):
        kwargs = dict(max_iter=200, tol=1e-6) if solver == "falkon" else {}
        sketched = SketchedIOKR(alpha=alpha, input_kernel=Gaussian(gamma), solver=solver, n_components=s,
                                random_state=0, **kwargs)
        t, model = _timed(partial(sketched.fit, X_tr, Y_tr))
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
    from distributed import get_task_stream  # noqa: PLC0415 - the optional "distributed" extra

    from iokr.distributed import distributed_top_k, local_client  # noqa: PLC0415 - the optional "distributed" extra

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
        rows += stream_row(200, 100_000, methods=("fused", "direct"))
    else:
        rows += stream_row(*TARGET)
    return rows


def lost_worker_row(n_queries=50, n_candidates=200_000):
    """Kill one of two worker processes while tasks run: the run must retry and return the local result, or fail."""
    from iokr.distributed import (  # noqa: PLC0415 - the optional "distributed" extra
        DistributedRunError,
        distributed_top_k,
        local_client,
    )

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


def merge_report_rows(rows, output="reports", name="scale"):
    """Merge ``rows`` into ``output/name.json`` (rows with the same ``case`` are replaced) and rewrite the
    streamed-scoring table of ``output/name.md`` between its markers (appended when absent)."""
    os.makedirs(output, exist_ok=True)
    json_path, md_path = os.path.join(output, f"{name}.json"), os.path.join(output, f"{name}.md")
    record = {"benchmark": name, "rows": []}
    if os.path.exists(json_path):
        with open(json_path) as f:
            record = json.load(f)
    stamp = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "load_average_1min": os.getloadavg()[0]}
    new = [{**row, **stamp} for row in rows]
    cases = {row["case"] for row in new}
    record["rows"] = [row for row in record.get("rows", []) if row.get("case") not in cases] + new
    record["stream_machine"] = machine_info()
    tmp = json_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f, indent=2, default=float)
    os.replace(tmp, json_path)
    stream = [row for row in record["rows"] if str(row.get("case", "")).startswith("stream ")]
    begin, end = "<!-- stream rows: begin (benchmarks.bench_scale) -->", "<!-- stream rows: end -->"
    block = (f"{begin}\n\nTimings on a shared 2-core machine (the 1-minute load average at the end of each run is in "
             f"the row); `fraction_of_sgemm` divides by the sgemm rate measured in the same process.\n\n"
             f"{format_table(stream)}\n{end}")
    text = Path(md_path).read_text() if os.path.exists(md_path) else f"# {name}\n"
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n## Streamed scoring runs\n\n" + block + "\n"
    with open(md_path + ".tmp", "w") as f:
        f.write(text)
    os.replace(md_path + ".tmp", md_path)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Streamed scoring of an on-disk bit-packed pool (the issue's "
                                                 "1000 x 10^7 target by default); rows merged into reports/scale.*")
    parser.add_argument("--queries", type=int, default=TARGET[0])
    parser.add_argument("--candidates", type=int, default=TARGET[1])
    parser.add_argument("--top-k", type=int, default=TARGET[2])
    parser.add_argument("--pool", default=None, help="pool file (written if absent, kept); temporary by default")
    parser.add_argument("--compare-direct", action="store_true",
                        help="also time the path without the fused 0/1 rule, in the same process")
    parser.add_argument("--output", default="reports")
    args = parser.parse_args(argv)
    methods = ("fused", "direct") if args.compare_direct else ("fused",)
    rows = stream_row(args.queries, args.candidates, args.top_k, path=args.pool, keep=args.pool is not None,
                      methods=methods)
    merge_report_rows(rows, args.output)
    print(format_table(rows), flush=True)
    return rows


if __name__ == "__main__":
    main()
