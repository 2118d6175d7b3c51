import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

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
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


# -- inputs are never modified: every `iokr` command run by the tests is checked ----------------------------------
#: Options whose value is written by the command (everything else that names an existing path is an input).
_OUTPUT_OPTIONS = ("--output", "--store")


def _tree_digest(path):
    import hashlib
    from pathlib import Path

    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()) if path.is_dir() else [path]
    digest = hashlib.blake2b(digest_size=16)
    for p in files:
        digest.update(str(p.relative_to(path) if path.is_dir() else p.name).encode())
        with open(p, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _input_paths(argv):
    from pathlib import Path

    argv = [str(a) for a in argv]
    outputs = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in _OUTPUT_OPTIONS}
    inputs = []
    for i, arg in enumerate(argv):
        written = i > 0 and argv[i - 1] in _OUTPUT_OPTIONS
        if arg.startswith("-") or (written and argv.count(arg) == 1):
            continue
        path = Path(arg)
        try:
            if (path.is_file() or path.is_dir()) and (not written or arg not in outputs or argv.count(arg) > 1):
                inputs.append(path)
        except OSError:
            continue
    return inputs


def pytest_configure(config):
    """Wrap ``iokr.cli.main.main`` before test modules import it: each call's input files and folders (every
    existing path on the command line but the outputs) must hash the same after the command as before."""
    import iokr.cli.main as cli

    original = cli.main
    if getattr(original, "_checks_inputs", False):
        return

    def main(argv=None, *args, **kwargs):
        inputs = _input_paths(argv or [])
        before = {p: _tree_digest(p) for p in inputs}
        try:
            return original(argv, *args, **kwargs)
        finally:
            changed = [str(p) for p in inputs if not p.exists() or _tree_digest(p) != before[p]]
            assert not changed, f"iokr {' '.join(map(str, argv or []))} modified its inputs: {changed}"

    main._checks_inputs = True
    cli.main = main
