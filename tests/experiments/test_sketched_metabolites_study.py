"""``experiments/sketched_metabolites.py``: its combined spectrum kernel against the app's own test kernel.

The study reproduces :class:`MetaboliteIdentifier`'s combination (``sum_k w_k Kn_k`` of cosine-normalized base
kernels, no input Gaussian) block by block; it once imported a private helper of the app that was later removed, so
the module could not even be imported. Here the kernel and its diagonal are checked against a fitted identifier.
"""

import numpy as np
import pytest

from experiments.sketched_metabolites import CombinedSpectrumKernel
from iokr.apps.metabolites import Cleaning, MetaboliteIdentifier, read_spectra
from iokr.datasets import BUNDLED_METABOLITES

pytest.importorskip("rdkit")


@pytest.fixture(scope="module")
def spectra():
    spectra, _ = read_spectra(BUNDLED_METABOLITES["spectra"], require_structure=True)
    single = Cleaning().single(spectra[np.arange(40)])
    return single[np.arange(0, 24)], single[np.arange(24, 40)]


@pytest.mark.parametrize("kernels, weights", [(("ppk",), (1.0,)), (("ppk", "ppk_nl", "binned"), (0.5, 0.3, 0.2))])
def test_combined_kernel_equals_the_identifiers_test_kernel(spectra, kernels, weights):
    train, queries = spectra
    Y = np.random.default_rng(0).integers(0, 2, size=(len(train), 16)).astype(np.float64)
    model = MetaboliteIdentifier(kernels=kernels, weights=list(weights), sigma_mz=0.005).fit(train, Y)
    K_ref, diag_ref = model.test_kernel(queries)
    kernel = CombinedSpectrumKernel(kernels, weights, sigma_mz=0.005)
    np.testing.assert_allclose(kernel(queries, train, working_memory=0.005), K_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kernel.compute_diag(queries), diag_ref, rtol=1e-12, atol=1e-14)
