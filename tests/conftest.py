import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    # The test matrices are small: one BLAS thread avoids oversubscription when the machine is shared, and makes
    # float rounding independent of the thread count.
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield
