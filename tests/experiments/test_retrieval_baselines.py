"""Helpers of ``experiments/baselines/retrieval.py`` against brute-force references."""

import numpy as np
import pytest

from experiments.baselines import retrieval as rb
from iokr.metrics import true_candidate_rank


def test_aligned_ranks_match_true_candidate_rank_with_ties(rng):
    S = rng.integers(0, 3, size=(7, 7)).astype(float)  # many ties
    expected = [true_candidate_rank(S[q], q, ties="average") for q in range(7)]
    np.testing.assert_array_equal(rb.aligned_ranks(S), expected)


def test_cca_component_prefix_equals_an_explicit_refit(rng):
    Z = rng.normal(size=(50, 3))
    A = Z @ rng.normal(size=(3, 12)) + 0.3 * rng.normal(size=(50, 12))
    B = Z @ rng.normal(size=(3, 10)) + 0.3 * rng.normal(size=(50, 10))
    big = rb.LsaCca(lsa_dim=6, n_components=6).fit(A[:40], B[:40])
    for k in (1, 3):
        small = rb.LsaCca(lsa_dim=6, n_components=k).fit(A[:40], B[:40])
        for got, expected in zip(big.transform(A[40:], B[40:], k), small.transform(A[40:], B[40:]), strict=True):
            np.testing.assert_allclose(got, expected, atol=1e-8)


def test_lsa_cca_rejects_more_components_than_lsa_dimensions():
    with pytest.raises(ValueError, match="'n_components' must be <= 'lsa_dim'"):
        rb.LsaCca(lsa_dim=2, n_components=3).fit(np.eye(4), np.eye(4))


def test_corrected_paired_difference_formula():
    a, b = [0.9, 0.8, 0.85, 0.95], [0.7, 0.8, 0.75, 0.7]
    d = np.subtract(a, b)
    diff, se = rb.corrected_paired_difference(a, b, test_fraction=0.5)
    assert diff == pytest.approx(d.mean())
    assert se == pytest.approx(np.sqrt(np.var(d, ddof=1) * (1 / 4 + 1.0)))


def _corpus(rng, n_docs=60, n_topics=6):
    """Aligned documents: the second language writes word ``w<i>`` as ``v<i>`` (same topics, own noise)."""
    source, target = [], []
    for _ in range(n_docs):
        topic = rng.integers(n_topics)
        words = rng.integers(10 * topic, 10 * topic + 10, size=30)
        source.append(" ".join(f"w{w}" for w in words) + f" w{rng.integers(100)}")
        target.append(" ".join(f"v{w}" for w in np.r_[words[:25], rng.integers(60, size=5)]))
    return source, target


def test_run_split_retrieves_aligned_documents(rng):
    source, target = _corpus(rng)
    grid = ((6, (2, 6)),)
    out = rb.run_split(source, target, np.arange(40), np.arange(40, 60), grid=grid, cv=2)
    chance_mrr = np.mean(1.0 / np.arange(1, 21))
    for direction in ("a-b", "b-a"):
        assert out[direction]["chosen"][0] == 6 and out[direction]["chosen"][1] in (2, 6)
        assert out[direction]["mrr"] > 2 * chance_mrr
        assert len(out[direction]["ranks"]) == 20


def test_retrieval_verdict_words():
    iokr = {"per_split": [{"mrr": m, "top1": 100 * m} for m in (0.90, 0.91, 0.92)]}
    worse = {"per_split": [{"mrr": m, "top1": 100 * m} for m in (0.50, 0.52, 0.51)]}
    assert rb.retrieval_verdict(iokr, worse, 10.0, 20.0).startswith("IOKR wins over LSA + CCA")
    assert rb.retrieval_verdict(worse, iokr, 10.0, 20.0).startswith("IOKR loses to")
    assert rb.retrieval_verdict(iokr, iokr, 10.0, 20.0).startswith("IOKR ties with")
