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

from pathlib import Path

import numpy as np

from benchmarks._harness import measure, peak_rss_mib
from iokr.apps.metabolites import (
    CandidateStore,
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    PeakProductKernel,
    read_candidate_lists,
    read_spectra,
    training_set,
)
from iokr.datasets import BUNDLED_METABOLITES
from iokr.decoding import CandidateSets


def _naive_ppk(S, T, sigma_mz, sigma_int):
    K = np.zeros((len(S), len(T)))
    for i in range(len(S)):
        a_mz, a_int = S.peaks(i)
        for j in range(len(T)):
            b_mz, b_int = T.peaks(j)
            K[i, j] = np.exp(-(a_mz[:, None] - b_mz[None, :]) ** 2 / (4 * sigma_mz**2)
                             - (a_int[:, None] - b_int[None, :]) ** 2 / (4 * sigma_int**2)).sum()
    return K


def _ppk_row(label, S, kernel, n_naive, quick):
    sub = S[: n_naive]
    t_naive = measure(lambda: _naive_ppk(sub, sub, 0.005, 0.25))
    t_ours = measure(lambda: kernel(sub))
    ref, got = t_naive.result, t_ours.result
    n_rows = len(S) if label == "merged" else min(len(S), 1000 if quick else 2000)
    block = measure(lambda: kernel(S[:n_rows], S))
    return {"task": f"PPK Gram, {label} spectra", "n_spectra": len(S),
            "mean_peaks": float(S.n_peaks.mean()), "rows_timed": n_rows, "ours_s": block.wall * len(S) / n_rows,
            "ours_cpu_s": block.cpu * len(S) / n_rows,
            "naive_s_extrapolated": t_naive.wall * (len(S) / n_naive) ** 2,
            "ratio_naive_over_ours": t_naive.wall / max(t_ours.wall, 1e-9),
            "max_rel_diff": float(np.max(np.abs(got - ref)) / np.max(np.abs(ref))),
            "note": "full Gram time extrapolated from the rows timed" if n_rows < len(S) else "full Gram"}


def _store_rows(fp, quick):
    """The bundled candidate lists from the fingerprint cache, then fresh fingerprinting; returns the rows, the
    cached store and the lists' structures."""
    cstore = CandidateStore(":memory:", fp)

    def from_cache():
        cstore.attach_cache(BUNDLED_METABOLITES["fingerprint_cache"])
        return read_candidate_lists(BUNDLED_METABOLITES["candidates"], cstore)

    cached = measure(from_cache)
    structures = [s for lst in cached.result for s in lst.structures]
    rows = [{"task": "candidate store from bundled cache (no parsing)", "n_structures": len(structures),
             "ours_s": cached.wall, "per_s": len(structures) / cached.wall}]
    n_fresh = 200 if quick else 1000
    fresh = CandidateStore(":memory:", fp)
    t_parse = measure(lambda: fresh.fingerprints(structures[:n_fresh])).wall
    t_again = measure(lambda: fresh.fingerprints(structures[:n_fresh])).wall
    rows.append({"task": "fingerprinting InChI -> RDKit mol -> Morgan counts + MACCS", "n_structures": n_fresh,
                 "ours_s": t_parse, "per_s": n_fresh / t_parse, "cached_lookup_s": t_again,
                 "ratio_fresh_over_cached": t_parse / max(t_again, 1e-9)})
    return rows, cstore, structures


def _score_row(model, merged, pool, quick):
    n_cand = 20000 if quick else 100000
    reps = int(np.ceil(n_cand / len(pool)))
    pool = np.tile(pool, (reps, 1))[:n_cand]
    n_queries = 100 if quick else 1000
    queries = merged[np.arange(n_queries) % len(merged)]
    kernel = measure(lambda: model.test_kernel(queries))
    K, diag = kernel.result
    score = measure(lambda: model.iokr_.rank(K, CandidateSets.shared(pool, n_queries), top_k=20, input_diag=diag))
    return {"task": "score queries x candidates (top-20)", "n_queries": n_queries, "n_candidates": n_cand,
            "ours_s": kernel.wall + score.wall, "ours_cpu_s": kernel.cpu + score.cpu, "input_kernel_s": kernel.wall,
            "scoring_s": score.wall,
            "peak_rss_mb": peak_rss_mib(), "n_returned": sum(len(r.order) for r in score.result)}


def run(quick=False, data_dir=None):
    if data_dir:
        spectra_path = Path(data_dir) / "metabolites" / "massbank_ms2_posMH_permissive.jsonl.gz"
    else:
        spectra_path = BUNDLED_METABOLITES["spectra"]
    spectra, _ = read_spectra(spectra_path, require_structure=True)
    cleaning = Cleaning()
    single = cleaning.single(spectra)
    single = single[np.flatnonzero(single.n_peaks > 0)]
    merged, _ = cleaning.merged(single)
    kernel = PeakProductKernel(0.005, 0.25)
    n_naive = 40 if quick else 100
    rows = [_ppk_row(label, S, kernel, n_naive, quick) for label, S in (("merged", merged), ("single", single))]
    fp = Fingerprinter()
    store = CandidateStore(":memory:", fp)
    train_t = measure(lambda: training_set(spectra, store, cleaning))
    train = train_t.result
    model = MetaboliteIdentifier(kernels=("ppk", "ppk_nl", "binned", "binned_nl"), alpha=0.3)
    fit = measure(lambda: model.fit(train.spectra, train.Y))
    rows.append({"task": "train (4 base Grams + ALIGNF + IOKR fit)", "n_spectra": len(train.spectra),
                 "ours_s": fit.wall, "ours_cpu_s": fit.cpu, "peak_rss_mb": peak_rss_mib()})
    # candidates: the real lists' structures (cached fingerprints), repeated up to 100k rows
    store_rows, cstore, structures = _store_rows(fp, quick)
    rows += store_rows
    rows.append({"task": "training fingerprints (parse + fingerprint)", "n_structures": len(train.spectra),
                 "ours_s": train_t.wall})
    rows.append(_score_row(model, merged, cstore.fingerprints(structures), quick))
    return rows
