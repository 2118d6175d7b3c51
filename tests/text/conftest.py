import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def one_blas_thread():
    """One BLAS thread: the tests' matrices are small, and two OpenBLAS threads competing for a busy 2-core machine
    made small factorizations tens of times slower."""
    with threadpool_limits(1):
        yield
