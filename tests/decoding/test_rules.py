"""The decoding rule objects against the rules written out on explicit vectors, and their bit-packed affine form."""

import numpy as np
import pytest

from iokr.decoding import (
    DECODINGS,
    CosineDecoding,
    DecodingRule,
    DistanceDecoding,
    InnerDecoding,
    PackedBinaryFeatures,
    decoding_rule,
    dense_scores,
)
from iokr.decoding.developer import Scorer, check_decoding


def _naive(decoding, h, c):
    if decoding == "distance":
        return -np.sum((h - c) ** 2) + np.sum(h**2)
    if decoding == "inner":
        return h @ c
    norm = np.linalg.norm(h) * np.linalg.norm(c)
    return 0.0 if norm == 0 else h @ c / norm


@pytest.mark.parametrize("decoding", DECODINGS)
def test_bilinear_form_equals_rule_written_out(decoding):
    rng = np.random.default_rng(0)
    H, C = rng.normal(size=(4, 5)), rng.normal(size=(7, 5))
    H[1], C[2] = 0.0, 0.0  # zero vectors: cosine 0
    rule = decoding_rule(decoding)
    R, offset = rule.candidate(C, (C * C).sum(1))
    S = rule.query(H) @ R.T + (0.0 if offset is None else offset)
    naive = np.array([[_naive(decoding, h, c) for c in C] for h in H])
    np.testing.assert_allclose(S, naive, rtol=1e-12, atol=1e-12)


def test_unit_norm_candidates_are_not_rescaled():
    C = np.array([[0.6, 0.8], [0.0, 0.0]])
    R, offset = decoding_rule("cosine").candidate(C, np.array([1.0, 0.0]), unit_norm=True)
    assert R is C and offset is None


def test_cosine_norm_floor_zeroes_rounding_noise():
    H = np.array([[1e-12, 0.0], [3.0, 4.0]])
    Q = decoding_rule("cosine").query(H, norm_floor=np.array([1e-10, 1e-10]))
    np.testing.assert_array_equal(Q[0], 0.0)
    np.testing.assert_allclose(Q[1], [0.6, 0.8], rtol=1e-15)


@pytest.mark.parametrize("unit_norm", [False, True])
@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("decoding", DECODINGS)
def test_binary_rule_equals_candidate_transform(decoding, centered, unit_norm):
    rng = np.random.default_rng(1)
    p = 19
    bits = (rng.random((30, p)) < 0.3).astype(np.uint8)
    bits[0] = 0
    mean = bits.mean(axis=0) if centered else None
    Q = rng.normal(size=(3, p))
    rule = decoding_rule(decoding)

    def candidate_block(C):
        R = np.asarray(C, dtype=np.float64) - (0.0 if mean is None else mean)
        sq = (R * R).sum(1)
        if unit_norm:
            R = R * np.where(sq > 0, 1.0 / np.sqrt(np.where(sq > 0, sq, 1.0)), 0.0)[:, None]
            sq = (sq > 0).astype(np.float64)
        return rule.candidate(R, sq, unit_norm=unit_norm)

    direct = dense_scores(Scorer(3, p, lambda rows: Q[rows], candidate_block), bits.astype(np.float64))
    fused = dense_scores(Scorer(3, p, lambda rows: Q[rows], candidate_block,
                                binary_rule=rule.binary_rule(mean, unit_norm=unit_norm)),
                         PackedBinaryFeatures.from_dense(bits))
    np.testing.assert_allclose(fused, direct, rtol=1e-5, atol=1e-5)


def test_names_and_objects():
    assert [decoding_rule(name).name for name in DECODINGS] == list(DECODINGS)
    assert isinstance(decoding_rule("distance"), DistanceDecoding)
    assert isinstance(decoding_rule("inner"), InnerDecoding)
    assert isinstance(decoding_rule("cosine"), CosineDecoding)
    rule = CosineDecoding()
    assert decoding_rule(rule) is rule and isinstance(rule, DecodingRule)
    with pytest.raises(ValueError, match=r"The 'decoding' parameter of IOKR must be one of .* Got 'euclid'"):
        check_decoding("euclid", "IOKR")
    with pytest.raises(ValueError, match="'decoding' parameter must be one of"):
        decoding_rule(None)
