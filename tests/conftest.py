import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from input_guard import guard_cli_main
from process_helpers import kill_all
from threadpoolctl import threadpool_limits

# Property-based tests (tests/properties): the "ci" profile is small and derandomized, so CI runs the same examples
# every time and stays within its time budget; IOKR_HYPOTHESIS_PROFILE=long runs a longer randomized campaign.
settings.register_profile(
    "ci",
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long",
    max_examples=150,
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("IOKR_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    # The test matrices are small: one BLAS thread avoids oversubscription when the machine is shared, and makes
    # float rounding independent of the thread count.
    with threadpool_limits(limits=1):
        yield


# -- inputs are never modified: every `iokr` command run by the tests is checked (tests/input_guard.py) ----------
def pytest_configure(config):
    guard_cli_main()


@pytest.fixture(scope="session")
def ready_model_cache(tmp_path_factory):
    """A cache folder holding the ready model (both polarities), trained once for the session on the bundled
    MassBank subsets exactly as ``identify`` without ``--model`` trains it on first use. Point ``IOKR_CACHE_DIR`` at
    it (``monkeypatch.setenv``) to use it."""
    pytest.importorskip("rdkit")
    from iokr.apps.metabolites import ensure_default_model  # noqa: PLC0415 - needs RDKit, checked just above

    cache = tmp_path_factory.mktemp("iokr_cache")
    previous = os.environ.get("IOKR_CACHE_DIR")
    os.environ["IOKR_CACHE_DIR"] = str(cache)
    try:
        ensure_default_model(log=lambda message: None)
    finally:
        if previous is None:
            del os.environ["IOKR_CACHE_DIR"]
        else:
            os.environ["IOKR_CACHE_DIR"] = previous
    return cache


@pytest.fixture
def sessions():
    """Process groups started by a test (``process_helpers.start``), all killed whatever the test's outcome."""
    started = []
    yield started
    kill_all(started)
