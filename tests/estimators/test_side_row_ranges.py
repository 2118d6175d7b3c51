"""The kernel output side transforms a candidate block in row ranges that stay in cache: the representation, the
squared norms and the candidate term equal those of the whole block in one piece (brute force: one range), for
count, binary and general fingerprint kernels and every decoding rule."""

import numpy as np
import pytest

from iokr import IOKR
from iokr.decoding import BinaryTanimotoIndex, CountTanimotoIndex
from iokr.decoding._neighbours import top_mean
from iokr.estimators import _sides
from iokr.kernels import GaussianTanimoto, Tanimoto


def _counts(rng, n, p, density=0.03, high=7):
    return (rng.random((n, p)) < density) * rng.integers(1, high, size=(n, p))


@pytest.mark.parametrize("outputs", ["counts", "bits", "general"])
@pytest.mark.parametrize("kernel", [Tanimoto(), GaussianTanimoto(gamma=0.4)])
@pytest.mark.parametrize("decoding", ["distance", "inner", "cosine"])
def test_row_ranges_give_the_whole_blocks_values(outputs, kernel, decoding, monkeypatch):
    rng = np.random.default_rng(0)
    p = 700
    Y = _counts(rng, 45, p).astype(np.float64)
    C = _counts(rng, 130, p).astype(np.float32)
    if outputs == "bits":
        Y, C = (Y > 0).astype(np.float64), (C > 0).astype(np.float32)
    if outputs == "general":  # fractional outputs: no exact fast path
        Y[0, 0] = 0.5
    C[3] = 0
    model = IOKR(alpha=0.2, input_kernel="gaussian", output_kernel=kernel, decoding=decoding,
                 center_output=True, normalize_output=True).fit(rng.normal(size=(45, 3)), Y)
    side = model.output_
    expected_index = {"counts": CountTanimotoIndex, "bits": BinaryTanimotoIndex, "general": type(None)}[outputs]
    assert isinstance(side.binary, expected_index)

    def term(cross):
        return top_mean(cross, 2)

    monkeypatch.setattr(_sides, "CACHE_ROWS_BYTES", 1 << 40)  # one range: the whole block
    whole = side.candidate_block(C, decoding, cross_term=term)
    for size in (1, 8 * 45 * 7, 8 * 45 * 64):  # one row, 7 rows, 64 rows at a time
        monkeypatch.setattr(_sides, "CACHE_ROWS_BYTES", size)
        R, offset = side.candidate_block(C, decoding, cross_term=term)
        np.testing.assert_array_equal(R, whole[0])
        np.testing.assert_array_equal(offset, whole[1])
        assert R.dtype == whole[0].dtype == np.float32
