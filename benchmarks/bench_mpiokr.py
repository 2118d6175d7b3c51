"""MP-IOKR: streamed candidate statistics at metabolite scale, and model estimation vs IOKR training.

Full size (``python -m benchmarks.run --only mpiokr``): 4,138 training examples whose candidate sets hold 5.8 million
candidate memberships over 2.5 million unique 2,765-bit fingerprints (the sizes of Brouard et al. 2017, section 3.2:
examples sharing a molecular formula share their candidate set). Fingerprints are synthetic: each bit is on with its
own probability drawn from Beta(0.3, 2.7) (mean density 10 %, many rare bits), stored bit-packed in a memory-mapped
file (865 MB) read through :class:`~iokr.decoding.PackedBinaryFeatures`, as a real candidate store would be.

Rows:

- ``statistics``: ``MPIOKR(approximation="joint").fit`` end to end (one streamed pass computing the per-set means and
  the summed within-set covariance, then model estimation), in a child process whose peak resident memory is
  reported. Peer: the paper's 1 h 42 min CPU for the same statistics. Naive: the per-set loop (each set's candidates
  transformed and their covariance accumulated set by set, no pooling of shared candidates), timed on the first sets
  and scaled to all memberships (labelled as an extrapolation).
- ``model estimation``: refitting with ``candidate_stats=`` (what hyperparameter selection repeats) for l = 4,138
  (joint, Gaussian input kernel) against ``IOKR.fit`` on the same data; naive: Proposition 4 literally (``A`` of
  size l x (l + n)) at a small size where it fits in memory.

Timings: wall-clock and CPU (``time.process_time``, all threads of the process; the paper reports CPU time) on a
shared 2-core machine with other jobs running (wall times depend on their load); BLAS limited to the given threads.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import linalg as sla
from threadpoolctl import threadpool_limits

from benchmarks._harness import child_json, measure, peak_rss_mib
from iokr import IOKR, MPIOKR
from iokr.decoding import CandidateSets, PackedBinaryFeatures

N_BITS = 2765


def _bit_probabilities(n_bits, seed):
    return np.random.default_rng(seed).beta(0.3, 2.7, size=n_bits).astype(np.float32)


def make_pool(path, n_unique, n_bits=N_BITS, seed=0, block=32768):
    """Bit-packed synthetic fingerprints in a memory-mapped file (written once, then reused)."""
    width = (n_bits + 7) // 8
    path = Path(path)
    if not path.exists() or path.stat().st_size != n_unique * width:
        probs = _bit_probabilities(n_bits, seed)
        rng = np.random.default_rng(seed + 1)
        partial = path.with_suffix(".partial")
        out = np.memmap(partial, dtype=np.uint8, mode="w+", shape=(n_unique, width))
        for start in range(0, n_unique, block):
            stop = min(start + block, n_unique)
            out[start:stop] = np.packbits(rng.random((stop - start, n_bits), dtype=np.float32) < probs, axis=1)
        out.flush()
        del out
        partial.rename(path)
    return PackedBinaryFeatures(np.memmap(path, dtype=np.uint8, mode="r", shape=(n_unique, width)), n_bits)


def make_sets(n_examples, n_unique, n_members, seed=0):
    """Formula-like candidate sets: contiguous pool blocks; examples sharing a formula share the whole block."""
    rng = np.random.default_rng(seed)
    n_formulas = max(1, int(0.45 * n_examples))
    sizes = rng.lognormal(0.0, 1.5, size=n_formulas)
    sizes = np.maximum(1, np.floor(sizes / sizes.sum() * n_unique)).astype(np.int64)
    sizes[-1] += n_unique - sizes.sum()
    while sizes[-1] < 1:  # pragma: no cover - rounding guard
        sizes[np.argmax(sizes)] -= 1
        sizes[-1] += 1
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    # Every formula has one example; the others pick formulas with probability ~ size^a, a set so that the expected
    # number of memberships matches n_members.
    extra = n_examples - n_formulas

    def expected(a):
        w = sizes.astype(np.float64) ** a
        return n_unique + extra * float((w / w.sum()) @ sizes)

    lo, hi = -2.0, 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if expected(mid) < n_members else (lo, mid)
    w = sizes.astype(np.float64) ** lo
    formulas = np.concatenate([np.arange(n_formulas), rng.choice(n_formulas, size=extra, p=w / w.sum())])
    rng.shuffle(formulas)
    return [np.arange(starts[f], starts[f] + sizes[f]) for f in formulas]


def _training_data(n_examples, n_features, seed):
    rng = np.random.default_rng(seed)
    probs = _bit_probabilities(N_BITS, 0)
    Y = (rng.random((n_examples, N_BITS), dtype=np.float32) < probs).astype(np.float64)
    X = Y[:, :n_features] @ rng.normal(size=(n_features, n_features)) + 0.5 * rng.normal(size=(n_examples,
                                                                                                  n_features))
    return X, Y


def _naive_statistics(pool, indices, transform, max_members):
    """Per-set loop: transform each set's candidates and accumulate its covariance (shared candidates redone)."""
    start = time.process_time()
    within, members = 0.0, 0
    for idx in indices:
        if members >= max_members:
            break
        R = transform(np.asarray(pool[idx]))
        mean = R.mean(axis=0)
        Rc = R - mean
        within = within + Rc.T @ Rc / len(idx)
        members += len(idx)
    return time.process_time() - start, members


def child(config):
    """One measured configuration, run in its own process (its peak RSS is the measurement)."""
    out = {}
    with threadpool_limits(config["threads"]):
        pool = make_pool(config["pool_path"], config["n_unique"], seed=config["seed"])
        indices = make_sets(config["n_examples"], config["n_unique"], config["n_members"], config["seed"])
        X, Y = _training_data(config["n_examples"], 50, config["seed"])
        sets = CandidateSets(pool, indices)
        out["n_memberships"] = int(sum(len(i) for i in indices))
        params = dict(alpha=1.0, gamma=1.0, input_kernel="gaussian", working_memory=config["working_memory"])
        fit = measure(lambda: MPIOKR(approximation="joint", **params).fit(X, Y, sets))
        model = fit.result
        out["fit_seconds"], out["fit_cpu_seconds"] = fit.wall, fit.cpu
        out["stats_seconds"] = model.candidate_stats_.seconds
        out["stats_cpu_seconds"] = model.candidate_stats_.cpu_seconds
        out["peak_rss_gib_after_fit"] = peak_rss_mib() / 1024.0
        # Model estimation, as repeated for each (alpha, gamma) during model selection: the statistics are reused.
        refits = [MPIOKR(approximation="joint", **dict(params, alpha=alpha, gamma=gamma))
                  for alpha, gamma in ((0.5, 2.0), (0.1, 0.5))]
        times = [measure(lambda m=m: m.fit(X, Y, sets, candidate_stats=model.candidate_stats_)) for m in refits]
        out["estimation_seconds"], out["estimation_cpu_seconds"] = min((t.wall, t.cpu) for t in times)
        peers = [IOKR(alpha=alpha, input_kernel="gaussian") for alpha in (0.5, 0.1)]
        times = [measure(lambda m=m: m.fit(X, Y)) for m in peers]
        out["iokr_seconds"], out["iokr_cpu_seconds"] = min((t.wall, t.cpu) for t in times)
        transform = model.output_.feature_transform.transform
        naive_seconds, naive_members = _naive_statistics(pool, indices, lambda b: transform(b, np.float32),
                                                         config["naive_members"])
        out["naive_seconds_measured"] = naive_seconds
        out["naive_members_measured"] = naive_members
    out["peak_rss_gib"] = peak_rss_mib() / 1024.0
    return out


def _proposition4_naive(n, n_per_set, seed=0):
    """Proposition 4 literally (``A`` of size l x (l + n)) vs the statistics-based estimation, same small problem."""
    rng = np.random.default_rng(seed)
    X, Y = rng.normal(size=(n, 20)), rng.normal(size=(n, 64))
    pool = rng.normal(size=(n * n_per_set // 2, 64))
    indices = [rng.choice(pool.shape[0], size=n_per_set, replace=False) for _ in range(n)]
    alpha, gamma = 0.5, 1.0
    start = time.process_time()
    M = sla.solve(gamma * np.eye(n) + Y @ Y.T, np.eye(n), assume_a="pos")
    Psi_bar = np.stack([pool[i].mean(axis=0) for i in indices], axis=1)
    Psi_C = np.concatenate([(pool[i] - pool[i].mean(axis=0)).T / math.sqrt(n_per_set) for i in indices], axis=1)
    A = np.concatenate([np.eye(n) - M @ Y @ Psi_bar, M @ Y @ Psi_C], axis=1)
    Psi_prime = np.concatenate([Y.T - Psi_bar, Psi_C], axis=1)
    K = X @ X.T
    coef = Psi_prime @ A.T @ sla.solve(alpha * np.eye(n) + K @ A @ A.T, np.eye(n))
    naive = time.process_time() - start
    params = dict(alpha=alpha, gamma=gamma, approximation="joint", center_input=False, normalize_input=False,
                  center_output=False, normalize_output=False)
    sets = CandidateSets(pool, indices)
    start = time.process_time()
    model = MPIOKR(**params).fit(X, Y, sets)
    ours = time.process_time() - start
    error = float(np.abs(model.predict_features(X[:5]) - (coef @ (X @ X[:5].T)).T).max())
    return naive, ours, error


def run(quick=False, data_dir=None, threads=None, pool_dir=None):
    """Rows of the benchmark table; ``threads`` (BLAS) defaults to ``$IOKR_BENCH_THREADS`` or 1."""
    threads = int(threads or os.environ.get("IOKR_BENCH_THREADS", 1))
    if quick:
        config = dict(n_examples=300, n_unique=30_000, n_members=70_000, naive_members=20_000)
    else:
        config = dict(n_examples=4138, n_unique=2_500_000, n_members=5_800_000, naive_members=100_000)
    pool_dir = Path(pool_dir or os.environ.get("IOKR_BENCH_DIR", "/tmp/iokr_bench_mpiokr"))
    pool_dir.mkdir(parents=True, exist_ok=True)
    config.update(seed=0, threads=threads, working_memory=512,
                  pool_path=str(pool_dir / f"pool_{config['n_unique']}x{N_BITS}.bits"))
    # The pool file is written before the measured child starts, so its peak memory is the fit's alone.
    make_pool(config["pool_path"], config["n_unique"], seed=0)
    measured = child_json(["-m", "benchmarks.bench_mpiokr", "--child", json.dumps(config)],
                          cwd=Path(__file__).resolve().parents[1])
    naive_rate = measured["naive_seconds_measured"] / measured["naive_members_measured"]
    naive_full = naive_rate * measured["n_memberships"]
    rows = [{
        "step": "candidate statistics (streamed, joint fit end to end)",
        "size": f"l={config['n_examples']}, {measured['n_memberships']:,} memberships, "
                f"{config['n_unique']:,} unique x {N_BITS} bits",
        "ours_s": measured["stats_seconds"],
        "ours_cpu_s": measured["stats_cpu_seconds"],
        "fit_total_s": measured["fit_seconds"],
        "fit_total_cpu_s": measured["fit_cpu_seconds"],
        "peak_rss_GiB": measured["peak_rss_gib"],
        "naive_cpu_s (extrapolated)": naive_full,
        "naive/ours (cpu)": naive_full / measured["stats_cpu_seconds"],
        "peer": "paper: 1 h 42 min CPU = 6128 s",
        "peer/ours (cpu)": 6128.0 / measured["stats_cpu_seconds"],
        "blas_threads": threads,
    }, {
        "step": "model estimation (refit with candidate_stats)",
        "size": f"l={config['n_examples']}, p={N_BITS}",
        "ours_s": measured["estimation_seconds"],
        "ours_cpu_s": measured["estimation_cpu_seconds"],
        "peer": "IOKR.fit, same data",
        "peer_s": measured["iokr_seconds"],
        "peer_cpu_s": measured["iokr_cpu_seconds"],
        "ours/peer (cpu)": measured["estimation_cpu_seconds"] / measured["iokr_cpu_seconds"],
        "blas_threads": threads,
    }]
    naive, ours, error = _proposition4_naive(200 if quick else 400, 50)
    rows.append({"step": "Proposition 4 literal vs ours (small)", "size": f"l={200 if quick else 400}, n_i=50",
                 "ours_cpu_s": ours, "naive_cpu_s": naive, "naive/ours": naive / ours, "max_abs_diff": error,
                 "blas_threads": threads})
    return rows


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
    else:
        parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
        parser.add_argument("--quick", action="store_true")
        parser.add_argument("--threads", type=int, default=None)
        args = parser.parse_args()
        for row in run(args.quick, threads=args.threads):
            print(row)
