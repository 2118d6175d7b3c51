"""Metabolite identification: spectrum-kernel Grams, training, scoring against a large candidate pool, the
candidate store and fingerprinting, on the shared MassBank data (``--data`` = the shared data folder) or on the
bundled subset.

Rows:
- PPK Gram (merged / single spectra): our sorted-window PPK vs the naive double loop over peak pairs (timed on a
  subset, extrapolated by the number of spectrum pairs); max relative difference on that subset.
- Full single-spectrum Gram: a block of rows against all spectra, extrapolated to the full square Gram (the
  50,000 x 50,000 float64 Gram itself needs 20 GB, so it is computed block-wise).
- train: base Grams + ALIGNF + IOKR fit on all training structures (one merged spectrum each).
- score: 1,000 queries x 100,000 candidates (the real candidates, repeated to 100k) with top-20.
- store: parsing + fingerprinting throughput, and the same lookups from the SQLite cache.
Timings on a shared 2-core machine under load from other jobs: ``ours_s`` is wall time (an upper bound),
``ours_cpu_s`` the process CPU time (all threads), closer to what an idle machine would need.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from benchmarks._memory import peak_rss_mib


def _rss_mb():
    return peak_rss_mib()


def _naive_ppk(S, T, sigma_mz, sigma_int):
    K = np.zeros((len(S), len(T)))
    for i in range(len(S)):
        a_mz, a_int = S.peaks(i)
        for j in range(len(T)):
            b_mz, b_int = T.peaks(j)
            K[i, j] = np.exp(-(a_mz[:, None] - b_mz[None, :]) ** 2 / (4 * sigma_mz**2)
                             - (a_int[:, None] - b_int[None, :]) ** 2 / (4 * sigma_int**2)).sum()
    return K


def run(quick=False, data_dir=None):
    from iokr.apps.metabolites import (
        CandidateStore,
        Cleaning,
        Fingerprinter,
        MetaboliteIdentifier,
        PeakProductKernel,
        read_candidate_lists,
        read_spectra,
    )
    from iokr.apps.metabolites._pipeline import training_set
    from iokr.datasets._metabolites import BUNDLED_METABOLITES
    from iokr.decoding import CandidateSets

    if data_dir:
        spectra_path = Path(data_dir) / "metabolites" / "massbank_ms2_posMH_permissive.jsonl.gz"
    else:
        spectra_path = BUNDLED_METABOLITES["spectra"]
    rows = []
    spectra, _ = read_spectra(spectra_path, require_structure=True)
    cleaning = Cleaning()
    single = cleaning.single(spectra)
    single = single[np.flatnonzero(single.n_peaks > 0)]
    merged, _ = cleaning.merged(single)
    kernel = PeakProductKernel(0.005, 0.25)
    n_naive = 40 if quick else 100
    for label, S in (("merged", merged), ("single", single)):
        sub = S[: n_naive]
        t_naive = time.perf_counter()
        ref = _naive_ppk(sub, sub, 0.005, 0.25)
        t_naive = time.perf_counter() - t_naive
        t_ours = time.perf_counter()
        got = kernel(sub)
        t_ours = time.perf_counter() - t_ours
        n_rows = len(S) if label == "merged" else min(len(S), 1000 if quick else 2000)
        t_block, c_block = time.perf_counter(), time.process_time()
        kernel(S[:n_rows], S)
        t_block, c_block = time.perf_counter() - t_block, time.process_time() - c_block
        full = t_block * len(S) / n_rows
        rows.append({"task": f"PPK Gram, {label} spectra", "n_spectra": len(S),
                     "mean_peaks": float(S.n_peaks.mean()), "rows_timed": n_rows, "ours_s": full,
                     "ours_cpu_s": c_block * len(S) / n_rows,
                     "naive_s_extrapolated": t_naive * (len(S) / n_naive) ** 2,
                     "ratio_naive_over_ours": t_naive / max(t_ours, 1e-9),
                     "max_rel_diff": float(np.max(np.abs(got - ref)) / np.max(np.abs(ref))),
                     "note": "full Gram time extrapolated from the rows timed" if n_rows < len(S) else "full Gram"})
    fp = Fingerprinter()
    store = CandidateStore(":memory:", fp)
    t = time.perf_counter()
    train = training_set(spectra, store, cleaning)
    t_fp = time.perf_counter() - t
    model = MetaboliteIdentifier(kernels=("ppk", "ppk_nl", "binned", "binned_nl"), alpha=0.3)
    t, c = time.perf_counter(), time.process_time()
    model.fit(train.spectra, train.Y)
    rows.append({"task": "train (4 base Grams + ALIGNF + IOKR fit)", "n_spectra": len(train.spectra),
                 "ours_s": time.perf_counter() - t, "ours_cpu_s": time.process_time() - c,
                 "peak_rss_mb": _rss_mb()})
    # candidates: the real lists' structures (cached fingerprints), repeated up to 100k rows
    cstore = CandidateStore(":memory:", fp)
    t = time.perf_counter()
    cstore.attach_cache(BUNDLED_METABOLITES["fingerprint_cache"])
    lists = read_candidate_lists(BUNDLED_METABOLITES["candidates"], cstore)
    t_cached = time.perf_counter() - t
    structures = [s for lst in lists for s in lst.structures]
    rows.append({"task": "candidate store from bundled cache (no parsing)", "n_structures": len(structures),
                 "ours_s": t_cached, "per_s": len(structures) / t_cached})
    n_fresh = 200 if quick else 1000
    fresh = CandidateStore(":memory:", fp)
    t = time.perf_counter()
    fresh.fingerprints(structures[:n_fresh])
    t_parse = time.perf_counter() - t
    t = time.perf_counter()
    fresh.fingerprints(structures[:n_fresh])
    t_again = time.perf_counter() - t
    rows.append({"task": "fingerprinting InChI -> RDKit mol -> Morgan counts + MACCS", "n_structures": n_fresh,
                 "ours_s": t_parse, "per_s": n_fresh / t_parse, "cached_lookup_s": t_again,
                 "ratio_fresh_over_cached": t_parse / max(t_again, 1e-9)})
    rows.append({"task": "training fingerprints (parse + fingerprint)", "n_structures": len(train.spectra),
                 "ours_s": t_fp})
    pool = cstore.fingerprints(structures)
    n_cand = 20000 if quick else 100000
    reps = int(np.ceil(n_cand / len(pool)))
    pool = np.tile(pool, (reps, 1))[:n_cand]
    n_queries = 100 if quick else 1000
    queries = merged[np.arange(n_queries) % len(merged)]
    t, c = time.perf_counter(), time.process_time()
    K, diag = model.test_kernel(queries)
    t_kernel = time.perf_counter() - t
    t = time.perf_counter()
    rankings = model.iokr_.rank(K, CandidateSets.shared(pool, n_queries), top_k=20, input_diag=diag)
    t_score = time.perf_counter() - t
    c_total = time.process_time() - c
    rows.append({"task": "score queries x candidates (top-20)", "n_queries": n_queries, "n_candidates": n_cand,
                 "ours_s": t_kernel + t_score, "ours_cpu_s": c_total, "input_kernel_s": t_kernel,
                 "scoring_s": t_score,
                 "peak_rss_mb": _rss_mb(), "n_returned": sum(len(r.order) for r in rankings)})
    return rows
