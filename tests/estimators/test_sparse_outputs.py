"""Sparse output matrices are refused with a message saying so (was "got shape ()", issue #16)."""

import numpy as np
import pytest
import scipy.sparse as sp

from iokr.estimators import IOKR, RLS, SketchedIOKR
from iokr.model_selection import IOKRCV


@pytest.mark.parametrize("make", [sp.csr_matrix, sp.coo_matrix, sp.csr_array])
@pytest.mark.parametrize("estimator", [IOKR(alpha=1.0), IOKRCV(), SketchedIOKR(alpha=1.0)],
                         ids=lambda e: type(e).__name__)
def test_sparse_Y_is_refused_clearly(make, estimator):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(10, 3)), make(rng.random((10, 4)) > 0.5)
    with pytest.raises(TypeError, match=rf"^{type(estimator).__name__}: sparse matrices are not supported for 'Y'; "
                                        r"pass a dense array \(Y.toarray\(\)\), got a \w+ of shape \(10, 4\)\.$"):
        estimator.fit(X, Y)
    estimator.fit(X, Y.toarray())  # the dense equivalent is accepted


def test_sparse_y_is_refused_clearly_by_rls():
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(TypeError, match=r"^Sparse matrices are not supported for 'y'; pass a dense array"):
        RLS(alpha=1.0).fit(X, sp.csr_matrix(np.ones((10, 2))))
