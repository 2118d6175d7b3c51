"""bench_kron_solvers on a tiny grid: every time-to-tolerance row meets its tolerance, and the peer's oracle stop
picks the first recorded iterate that does (a stand-in with RLScore's callback protocol, RLScore being absent)."""

import numpy as np
import pytest
from scipy.sparse.linalg import LinearOperator, minres

from benchmarks import bench_kron_solvers as bench
from iokr.linalg import SampledKroneckerOperator


class _FakeCGKronRLS:
    """RLScore's CGKronRLS protocol: scipy MINRES to ``maxiter``, ``callback.callback(self)`` with ``self.A``."""

    def __init__(self, K1, K2, Y, label_row_inds, label_col_inds, regparam, maxiter, callback):
        op = SampledKroneckerOperator(K1, K2, label_row_inds, label_col_inds)
        G = LinearOperator((Y.size, Y.size), matvec=lambda v: op.matvec(v) + regparam * v, dtype=np.float64)

        def step(x):
            self.A = x
            callback.callback(self)

        self.A, _ = minres(G, Y, maxiter=maxiter, rtol=1e-20, callback=step)
        callback.finished(self)


def _fake_operator(K1, K2, rows, cols, rows_out, cols_out):
    return SampledKroneckerOperator(K1, K2, rows, cols, rows_out, cols_out)


@pytest.mark.parametrize("peer", [None, (_FakeCGKronRLS, _fake_operator)], ids=["alone", "with-peer"])
def test_rows_meet_their_tolerance(peer):
    rows = bench._case(30, 300, 0.1, True, 1, peer)
    timed = [row for row in rows if "tol" in row]
    assert len(timed) == len(bench.TOLS) * (len(bench.SOLVERS) + (peer is not None))
    for row in timed:
        assert row["rel_residual"] <= row["tol"] * (1 + 1e-9)
        assert row["seconds"] > 0 and row["products"] >= 1 and row["floor_s"] > 0
        assert row["rel_error"] < 1e4 * row["tol"]  # against the dense Cholesky solve
    text = bench.summary(rows)
    if peer is None:
        assert "not importable" in text
    else:
        peer_rows = [row for row in timed if row["solver"].startswith("RLScore")]
        # The oracle stop: the first MINRES iterate under the tolerance, so a looser tolerance stops no later.
        assert peer_rows[0]["products"] <= peer_rows[1]["products"]
        assert all("speedup_vs_rlscore" in row for row in timed if row["solver"].startswith("iokr"))
        assert text.count(">= 3x") == len(bench.TOLS)
