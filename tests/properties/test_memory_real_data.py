"""Chunked paths on the bundled real data: a shrunken working-memory budget gives the same results.

Spectra from the bundled MassBank subset, their molecules' fingerprints and, as candidates, all bundled molecules
sharing each test spectrum's molecular formula (iokr/datasets/data/metabolites). Under a budget so small that every
block holds one or two rows, the spectrum kernel blocks, the candidate scores, the per-query rankings and the top-k
over a shared pool must equal the unchunked run, and more than one block must actually be used.
"""

import gzip
import itertools
import warnings

import numpy as np
import pytest
from prop_helpers import counting, scoring_blocks, smallest_budget_run

import iokr.decoding._scoring as scoring
import iokr.kernels._base as kernel_base
from iokr import IOKR, config_context
from iokr.apps.metabolites import PeakProductKernel, read_spectra
from iokr.datasets import BUNDLED_METABOLITES
from iokr.decoding import CandidateSets, PackedBinaryFeatures
from iokr.kernels import GaussianTanimoto, Normalized, Tanimoto

N_TRAIN, N_TEST, MAX_CANDIDATES = 30, 5, 12


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """Spectra with a structure in the fingerprint cache, their fingerprints, and per-formula candidate sets."""
    cache = np.load(BUNDLED_METABOLITES["fingerprint_cache"])
    key14, formula, indptr = cache["key14"], cache["formula"], cache["indptr"]
    cols, n_features = cache["cols"], int(cache["n_features"])
    row_of = {k: i for i, k in enumerate(key14)}

    def fingerprints(rows):
        out = np.zeros((len(rows), n_features))
        for j, r in enumerate(rows):
            out[j, cols[indptr[r]:indptr[r + 1]]] = 1.0  # binary presence of each count feature
        return out

    path = tmp_path_factory.mktemp("massbank") / "head.jsonl"
    with gzip.open(BUNDLED_METABOLITES["spectra"], "rt") as source:
        path.write_text("".join(itertools.islice(source, 1500)))
    spectra, _ = read_spectra(path, require_structure=True)
    keys = [m["inchikey"][:14] for m in spectra.metadata]
    keep, seen = [], set()
    for i, k in enumerate(keys):
        if k in row_of and k not in seen:  # one spectrum per molecule
            keep.append(i)
            seen.add(k)
        if len(keep) == N_TRAIN + N_TEST:
            break
    assert len(keep) == N_TRAIN + N_TEST, "the bundled subset changed: too few spectra with cached fingerprints"
    spectra = spectra[np.asarray(keep)]
    rows = [row_of[keys[i]] for i in keep]
    Y = fingerprints(rows)
    sets = []
    for r in rows[N_TRAIN:]:
        same = np.flatnonzero(formula == formula[r])[:MAX_CANDIDATES]
        sets.append(fingerprints(np.union1d(same, [r])))
    return {"X": spectra[:N_TRAIN], "Y": Y[:N_TRAIN], "X_test": spectra[N_TRAIN:], "Y_test": Y[N_TRAIN:],
            "sets": sets, "pool": np.unique(np.vstack(sets), axis=0)}


def test_spectrum_kernel_blocks_chunked_equal_unchunked(bundle):
    kernel = Normalized(PeakProductKernel())
    K = kernel(bundle["X_test"], bundle["X"])
    with counting(kernel_base, "row_slices") as chunks:
        K_chunked, _ = smallest_budget_run(lambda: kernel(bundle["X_test"], bundle["X"]))
    assert chunks[0] == N_TEST  # one test spectrum per block
    np.testing.assert_allclose(K_chunked, K, rtol=1e-12, atol=1e-14)
    assert np.isfinite(K).all() and K.max() <= 1.0 + 1e-12


@pytest.mark.parametrize("output_kernel, decoding", [(Tanimoto(), "distance"), (GaussianTanimoto(gamma=2.0), "cosine")],
                         ids=["tanimoto-distance", "gaussian-tanimoto-cosine"])
def test_scoring_ranking_and_top_k_chunked_equal_unchunked(bundle, output_kernel, decoding):
    model = IOKR(alpha=0.5, input_kernel=Normalized(PeakProductKernel()), output_kernel=output_kernel,
                 decoding=decoding).fit(bundle["X"], bundle["Y"])
    X_test, pool, sets = bundle["X_test"], bundle["pool"], bundle["sets"]

    S = model.decision_function(X_test, pool)
    rankings = model.rank(X_test, sets)
    top = model.rank(X_test, CandidateSets.shared(pool, N_TEST), top_k=5)
    assert np.isfinite(S).all()

    with counting(scoring, "_plan") as plans:
        S_chunked, _ = smallest_budget_run(lambda: model.decision_function(X_test, pool))
    assert scoring_blocks(plans, N_TEST, pool.shape[0]) > 1
    np.testing.assert_allclose(S_chunked, S, rtol=0, atol=1e-12)

    with counting(scoring, "_plan") as plans:
        rankings_chunked, _ = smallest_budget_run(lambda: model.rank(X_test, sets))
    assert len(plans) > 1
    for ranking, chunked in zip(rankings, rankings_chunked, strict=True):
        np.testing.assert_allclose(chunked.scores, ranking.scores, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(chunked.order, ranking.order)

    with counting(scoring, "_plan") as plans:
        top_chunked, _ = smallest_budget_run(lambda: model.rank(X_test, CandidateSets.shared(pool, N_TEST),
                                                                top_k=5))
    assert scoring_blocks(plans, N_TEST, pool.shape[0]) > 1
    for q, (ranking, chunked) in enumerate(zip(top, top_chunked, strict=True)):
        np.testing.assert_allclose(chunked.scores, ranking.scores, rtol=0, atol=1e-12)
        np.testing.assert_allclose(chunked.scores, -np.sort(-S[q])[:5], rtol=0, atol=1e-12)

    # the true structure's rank does not depend on the budget either
    truth = [int(np.flatnonzero((s == y).all(axis=1))[0]) for s, y in zip(sets, bundle["Y_test"], strict=True)]
    ranks = [int(np.flatnonzero(r.order == t)[0]) for r, t in zip(rankings, truth, strict=True)]
    ranks_chunked = [int(np.flatnonzero(r.order == t)[0]) for r, t in zip(rankings_chunked, truth, strict=True)]
    assert ranks == ranks_chunked


def test_bit_packed_pool_scored_in_chunks(bundle):
    """The bit-packed pool (exact intersection counts) gives the dense pool's scores under a tiny budget."""
    model = IOKR(alpha=0.5, input_kernel=Normalized(PeakProductKernel()), output_kernel=Tanimoto()).fit(
        bundle["X"], bundle["Y"])
    pool = bundle["pool"]
    packed = PackedBinaryFeatures(np.packbits(pool.astype(np.uint8), axis=1), pool.shape[1])
    S = model.decision_function(bundle["X_test"], pool)
    with counting(scoring, "_plan") as plans:
        S_packed, _ = smallest_budget_run(lambda: model.decision_function(bundle["X_test"], packed))
    assert scoring_blocks(plans, N_TEST, pool.shape[0]) > 1
    np.testing.assert_allclose(S_packed, S, rtol=0, atol=1e-6)  # float32 intersection counts on one side


def test_fit_under_a_tiny_budget_equals_default(bundle):
    """Kernel blocks of fit (training Gram) are chunked too; the fitted scores do not depend on the budget."""
    params = dict(alpha=0.5, input_kernel=Normalized(PeakProductKernel()), output_kernel=Tanimoto())
    S = IOKR(**params).fit(bundle["X"], bundle["Y"]).decision_function(bundle["X_test"], bundle["pool"])
    with counting(kernel_base, "row_slices") as chunks, warnings.catch_warnings():
        warnings.simplefilter("error")
        with config_context(working_memory=2e-3):
            small = IOKR(**params).fit(bundle["X"], bundle["Y"])
        # scoring counts each expanded candidate row (about 54 KB of 2,215 features) in its chunks, more than the
        # fit's tiny budget: a budget of a few candidate rows per block
        with config_context(working_memory=0.2):
            S_small = small.decision_function(bundle["X_test"], bundle["pool"])
    assert chunks[0] > 2
    np.testing.assert_allclose(S_small, S, rtol=0, atol=1e-12)
