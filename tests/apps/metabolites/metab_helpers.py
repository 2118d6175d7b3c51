import numpy as np
import pytest

from iokr.apps.metabolites import Spectra


def random_spectra(rng, n, max_peaks=12, mz_range=(50.0, 300.0), grid=None, empty_every=None):
    """Random spectra; ``grid`` snaps m/z to a coarse grid so that many peaks coincide across spectra."""
    peak_lists, precursors = [], []
    for i in range(n):
        k = 0 if (empty_every and i % empty_every == 0) else int(rng.integers(1, max_peaks + 1))
        mz = rng.uniform(*mz_range, size=k)
        if grid is not None:
            mz = np.round(mz / grid) * grid + rng.normal(scale=grid / 50, size=k)
        peak_lists.append(np.column_stack([mz, rng.uniform(0.01, 1.0, size=k)]))
        precursors.append(mz_range[1] + rng.uniform(1, 20))
    meta = [{"accession": f"A{i}", "inchikey": f"KEY{i % 5:011d}-X-N"} for i in range(n)]
    return Spectra.from_peak_lists(peak_lists, np.array(precursors), meta)


@pytest.fixture
def spectra_factory():
    return random_spectra
