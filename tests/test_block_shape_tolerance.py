"""The tolerance helpers of ``tests/reference`` fail where they must: they replaced bit-for-bit assertions that
depended on the BLAS kernel (issue #27), so they must still catch every real difference."""

import numpy as np
import pytest
from reference import BLOCK_SHAPE_RTOL, assert_close_to_scale, assert_rankings_agree


def test_close_to_scale_accepts_rounding_and_rejects_real_differences():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(40, 300)), rng.normal(size=(300, 7))
    whole = A @ B
    by_rows = np.vstack([A[i:i + 1] @ B for i in range(40)])  # GEMV-like blocks: other rounding, same numbers
    assert_close_to_scale(by_rows, whole)
    wrong = whole.copy()
    wrong[3, 2] += 1e-9 * np.abs(whole).max()
    with pytest.raises(AssertionError):
        assert_close_to_scale(wrong, whole)
    with pytest.raises(AssertionError, match="shapes differ"):
        assert_close_to_scale(whole[:, :6], whole)
    # relative to the scale, not to each entry: an entry near zero may carry the rounding of the others
    assert_close_to_scale([1.0, 1e-17], [1.0, 0.0])


def test_rankings_agree_only_up_to_near_ties():
    scores = np.array([0.5, 0.9, 0.9 + 1e-16, 0.1, 0.3])
    assert_rankings_agree([2, 1, 0, 4, 3], [1, 2, 0, 4, 3], scores)  # a near-tie swapped
    with pytest.raises(AssertionError, match="not by decreasing score"):
        assert_rankings_agree([2, 1, 0, 4, 3], [2, 1, 4, 0, 3], scores)  # 0.5 and 0.3 swapped
    with pytest.raises(AssertionError, match="beyond ties"):
        assert_rankings_agree([2, 1, 0], [2, 1, 4], scores)  # top-3 lists that differ by a real score
    with pytest.raises(AssertionError, match="not by decreasing score"):
        assert_rankings_agree([3, 1, 2, 0, 4], [3, 1, 2, 0, 4], scores)
    with pytest.raises(AssertionError, match="different lengths"):
        assert_rankings_agree([2, 1], [2, 1, 0], scores)
    apart = np.array([1.0, 1.0 + 100 * BLOCK_SHAPE_RTOL])  # 100 times the tolerance: a real difference
    assert_rankings_agree([1, 0], [1, 0], apart)
    with pytest.raises(AssertionError, match="not by decreasing score"):
        assert_rankings_agree([1, 0], [0, 1], apart)
