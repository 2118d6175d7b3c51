"""Every concrete kernel of the package (and an example written only from docs/kernels.md) against the contract of
:class:`iokr.kernels.Kernel`: symmetric, PSD on valid inputs, ``diag`` equal to the Gram diagonal, ``features``
reproducing the Gram where declared, chunked ``__call__`` equal to one block, clone/get_params round trip, and the
float32 policy (float32 arrays in, float32 block out; float64 otherwise).

Kernels are discovered by walking the subclasses of ``Kernel`` after importing every subpackage: a new kernel
without a case below fails ``test_every_kernel_has_a_case``.
"""

import importlib
import pkgutil
import re
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from sklearn.base import clone

import iokr
from iokr.apps.metabolites import BinnedKernel, FormulaTokenKernel, PeakProductKernel, Spectra
from iokr.estimators.sketched import _SketchedFeatures
from iokr.kernels import (
    Gaussian,
    GaussianTanimoto,
    Kernel,
    Linear,
    Normalized,
    Polynomial,
    Precomputed,
    RandomFourierFeatures,
    Tanimoto,
    WeightedSum,
)
from iokr.linalg import nystrom_whitening
from iokr.model_selection import AlignedKernelSum
from iokr.strings import NgramKernel, SequenceNgramKernel, SequencePolynomialKernel, SequenceProductKernel
from iokr.text import BagOfWordsKernel, ContextualWeightingKernel, TransformedContextKernel, WordPositionKernel

#: Bases that need a subclass to be usable (abstract hooks): not instantiated on their own.
ABSTRACT = {"SpectrumKernel", "_SequenceKernel", "ContextKernel"}


class Laplacian(Kernel):
    """The example of docs/kernels.md ("Writing a kernel"), copied as written."""

    temporaries_per_entry = 1  # cdist's distance block, exponentiated in place

    def __init__(self, gamma=1.0):
        self.gamma = gamma

    def compute(self, A, B):
        if not self.gamma > 0:
            raise ValueError(f"The 'gamma' parameter of Laplacian must be > 0. Got {self.gamma!r} instead.")
        D = cdist(A, B, metric="cityblock").astype(np.result_type(A, B), copy=False)
        D *= -self.gamma
        return np.exp(D, out=D)

    def compute_diag(self, A):
        return np.ones(A.shape[0], dtype=A.dtype)


# -- inputs ------------------------------------------------------------------------------------------------------
def _normal(rng, n):
    return rng.normal(size=(n, 4))


def _counts(rng, n):
    return rng.integers(0, 3, size=(n, 12)).astype(np.float64)


def _bits(rng, n):
    return (rng.random((n, 16)) < 0.3).astype(np.float64)


def _indices(rng, n):
    return rng.integers(0, 9, size=(n, 1))


WORDS = ["abc", "abd", "", "bcd", "aaa", "cab", "b", "dcba", "abab", "cc"]


def _strings(rng, n):
    return [WORDS[i] for i in rng.integers(0, len(WORDS), size=n)]


def _sequences(rng, n):
    return [rng.normal(size=(int(rng.integers(1, 5)), 3)) for _ in range(n)]


def _contexts(rng, n):
    # 5 words x 4 positions (window 2), a few occurrences per context.
    M = sp.random(n, 20, density=0.3, random_state=np.random.RandomState(int(rng.integers(2**31))),
                  data_rvs=lambda k: np.ones(k))
    return sp.csr_matrix(M)


def _spectra(rng, n):
    peaks = []
    for _ in range(n):
        k = int(rng.integers(1, 6))
        mz = np.round(rng.uniform(50.0, 60.0, size=k), 1) + rng.normal(scale=0.002, size=k)
        peaks.append(np.column_stack([mz, rng.uniform(0.05, 1.0, size=k)]))
    return Spectra.from_peak_lists(peaks, np.full(n, 80.0))


def _annotated_spectra(rng, n):
    """[M+H]+ spectra of two small formulas whose peaks sit on shared subformulas (and one without a formula)."""
    masses = {"C": 12.0, "H": 1.00782503207, "N": 14.0030740048, "O": 15.99491461956}
    fragments = {"C6H12O6": ("C6H11O5", "C5H9O4", "C4H7O3", "C3H5O2", "C2H5O2"),
                 "C9H11NO2": ("C9H10NO", "C8H10N", "C7H7", "C6H5", "C8H8NO")}
    peaks, precursors, meta = [], [], []
    for i in range(n):
        formula = ("C6H12O6", "C9H11NO2")[i % 2]
        chosen = rng.choice(5, size=int(rng.integers(1, 5)), replace=False)
        mz = [sum(masses[e] * c for e, c in _counts_of(fragments[formula][j]).items()) - 0.00054858 for j in chosen]
        peaks.append(np.column_stack([mz, rng.uniform(0.05, 1.0, size=len(mz))]))
        precursors.append(sum(masses[e] * c for e, c in _counts_of(formula).items()) + 1.00727646688)
        meta.append({"formula": None if i == 3 else formula, "adduct": "[M+H]+"})
    return Spectra.from_peak_lists(peaks, np.array(precursors), meta)


def _counts_of(formula):
    return {e: int(c or 1) for e, c in re.findall(r"([A-Z][a-z]?)(\d*)", formula)}


# -- cases -------------------------------------------------------------------------------------------------------
def _gram9():
    F = np.random.default_rng(9).normal(size=(9, 3))
    return F @ F.T


def _sketched(residual):
    rng = np.random.default_rng(5)
    points = rng.normal(size=(6, 4))
    base = Gaussian(gamma=0.3)
    return _SketchedFeatures(base, points, nystrom_whitening(base(points)), residual=residual)


def _aligned():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(15, 4))
    return AlignedKernelSum([Linear(), Gaussian(gamma=0.2)], method="align").fit(X, X[:, :2])


def _fit_aligned(kernel):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(15, 4))
    return kernel.fit(X, X[:, :2])


@dataclass
class Case:
    make: object
    inputs: object
    arrays: bool = True  # dense float inputs: the float32 policy applies
    prepare: object = field(default=lambda kernel: kernel)  # refit after clone (fitted kernels)
    rtol: float = 1e-10
    f32_atol: float = 1e-4  # float32 against float64 results, relative to max(1, max |K|)


CASES = {
    "Linear": Case(Linear, _normal),
    "Polynomial": Case(lambda: Polynomial(degree=3, gamma=0.5, coef0=1.0), _normal),
    "Gaussian": Case(lambda: Gaussian(gamma=0.4), _normal),
    "Tanimoto": Case(Tanimoto, _bits),
    "Tanimoto-minmax": Case(lambda: Tanimoto(form="minmax"), _counts),
    "GaussianTanimoto": Case(lambda: GaussianTanimoto(gamma=0.7), _bits),
    "GaussianTanimoto-minmax": Case(lambda: GaussianTanimoto(gamma=0.7, form="minmax"), _counts),
    "RandomFourierFeatures": Case(lambda: RandomFourierFeatures(gamma=0.3, n_components=40, random_state=1), _normal,
                                  rtol=1e-5),
    "Normalized": Case(lambda: Normalized(Polynomial(degree=2)), _normal),
    "Normalized-features": Case(lambda: Normalized(Linear()), _normal),
    "WeightedSum": Case(lambda: WeightedSum([Linear(), Gaussian(gamma=0.2)], [0.3, 0.7]), _normal),
    "Precomputed": Case(lambda: Precomputed(_gram9()), _indices, arrays=False),
    "_SketchedFeatures": Case(lambda: _sketched(False), _normal, rtol=1e-6),
    # The residual coordinate sqrt(k(a, a) - ||f(a)||^2) turns the float32 rounding of the inputs (~1e-7) into ~3e-4.
    "_SketchedFeatures-residual": Case(lambda: _sketched(True), _normal, rtol=1e-6, f32_atol=2e-3),
    "AlignedKernelSum": Case(_aligned, _normal, prepare=_fit_aligned),
    "NgramKernel": Case(lambda: NgramKernel(n=2), _strings, arrays=False),
    "NgramKernel-normalized": Case(lambda: NgramKernel(n=3, normalize=True), _strings, arrays=False),
    "SequenceNgramKernel": Case(lambda: SequenceNgramKernel(base=Gaussian(gamma=0.3), n=2), _sequences, arrays=False),
    "SequencePolynomialKernel": Case(lambda: SequencePolynomialKernel(n=2, degree=2, normalize=True), _sequences,
                                     arrays=False),
    "SequenceProductKernel": Case(lambda: SequenceProductKernel(base=Linear(), n=2), _sequences, arrays=False),
    "BagOfWordsKernel": Case(lambda: BagOfWordsKernel(window=2), _contexts, arrays=False),
    "ContextualWeightingKernel": Case(lambda: ContextualWeightingKernel(window=2), _contexts, arrays=False),
    "WordPositionKernel": Case(lambda: WordPositionKernel(window=2, theta=0.5), _contexts, arrays=False),
    "TransformedContextKernel": Case(
        lambda: TransformedContextKernel(window=2, theta=0.3, word_mix=0.4,
                                         word_embedding=np.random.default_rng(3).normal(size=(5, 2))),
        _contexts, arrays=False),
    "PeakProductKernel": Case(lambda: PeakProductKernel(sigma_mz=0.01), _spectra, arrays=False),
    "PeakProductKernel-products": Case(lambda: PeakProductKernel(sigma_mz=0.01, sigma_intensity=None), _spectra,
                                       arrays=False),
    "BinnedKernel": Case(lambda: BinnedKernel(bin_width=0.1), _spectra, arrays=False),
    "FormulaTokenKernel-fragments": Case(lambda: FormulaTokenKernel("fragments"), _annotated_spectra, arrays=False),
    "FormulaTokenKernel-losses": Case(lambda: FormulaTokenKernel("losses"), _annotated_spectra, arrays=False),
    "FormulaTokenKernel-pair_losses": Case(lambda: FormulaTokenKernel("pair_losses"), _annotated_spectra,
                                           arrays=False),
    "Laplacian (docs example)": Case(lambda: Laplacian(gamma=0.3), _normal),
}


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _package_kernels():
    for module in pkgutil.walk_packages(iokr.__path__, "iokr."):
        if module.name.startswith(("iokr.cli", "iokr.distributed")):
            continue  # command line and Dask: no kernels, optional dependencies
        importlib.import_module(module.name)
    return {cls.__name__ for cls in _subclasses(Kernel) if cls.__module__.startswith("iokr.")}


def test_every_kernel_has_a_case():
    covered = {type(case.make()).__name__ for case in CASES.values()}
    missing = _package_kernels() - ABSTRACT - covered
    assert not missing, f"kernels without a conformance case: {sorted(missing)}"


def _dense(M):
    return M.toarray() if sp.issparse(M) else np.asarray(M)


def _sides(case, seed=0):
    rng = np.random.default_rng(seed)
    return case.inputs(rng, 9), case.inputs(rng, 5)


def _smallest_budget_call(kernel, A, B):
    """``kernel(A, B)`` under the smallest budget (doubling from 16 bytes) that fits one row: a few rows per chunk."""
    budget = 16 / 2**20
    while True:
        try:
            return kernel(A, B, working_memory=budget)
        except MemoryError:
            budget *= 2


@pytest.fixture(params=sorted(CASES), ids=str)
def case(request):
    return CASES[request.param]


def test_symmetric_and_psd(case):
    kernel = case.make()
    A, _ = _sides(case)
    K = kernel(A)
    np.testing.assert_allclose(K, K.T, rtol=case.rtol, atol=case.rtol * np.abs(K).max())
    eigenvalues = np.linalg.eigvalsh(0.5 * (K + K.T))
    assert eigenvalues.min() >= -1e-8 * max(1.0, eigenvalues.max()), eigenvalues.min()


def test_diag_is_gram_diagonal(case):
    kernel = case.make()
    A, _ = _sides(case, seed=1)
    np.testing.assert_allclose(kernel.diag(A), np.diag(kernel(A)), rtol=case.rtol, atol=1e-12)


def test_features_reproduce_gram(case):
    kernel = case.make()
    if not kernel.has_explicit_features:
        pytest.skip("no explicit feature map declared")
    A, B = _sides(case, seed=2)
    F_a, F_b = kernel.features(A), kernel.features(B)
    np.testing.assert_allclose(_dense(F_a @ F_b.T), kernel(A, B), rtol=case.rtol, atol=1e-12)


def test_chunked_call_equals_one_block(case):
    kernel = case.make()
    A, B = _sides(case, seed=3)
    whole = kernel.compute(kernel.validate(A, "A"), kernel.validate(B, "B"))
    chunked = _smallest_budget_call(kernel, A, B)
    np.testing.assert_allclose(chunked, _dense(whole), rtol=case.rtol, atol=1e-12)
    np.testing.assert_allclose(kernel(A, B, working_memory=64), chunked, rtol=case.rtol, atol=1e-12)


def test_clone_and_get_params_round_trip(case):
    kernel = case.make()
    params = kernel.get_params(deep=False)
    copy = clone(kernel)
    assert type(copy) is type(kernel) and set(copy.get_params(deep=False)) == set(params)
    assert type(kernel)(**params).get_params(deep=False).keys() == params.keys()
    A, B = _sides(case, seed=4)
    np.testing.assert_allclose(case.prepare(copy)(A, B), kernel(A, B), rtol=case.rtol, atol=1e-12)


def test_float32_policy(case):
    kernel = case.make()
    A, B = _sides(case, seed=5)
    K64 = kernel(A, B)
    assert K64.dtype == np.float64
    if not case.arrays:
        return
    K32 = kernel(A.astype(np.float32), B.astype(np.float32))
    assert K32.dtype == np.float32
    assert kernel(A.astype(np.float32), B).dtype == np.float64  # mixed precision is float64
    np.testing.assert_allclose(K32, K64, rtol=1e-3, atol=case.f32_atol * max(1.0, np.abs(K64).max()))


def test_example_kernel_rejects_bad_parameter():
    with pytest.raises(ValueError, match="'gamma' parameter of Laplacian"):
        Laplacian(gamma=-1.0)(np.ones((2, 3)))


def test_example_kernel_matches_naive_formula():
    rng = np.random.default_rng(7)
    A, B = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    naive = np.array([[np.exp(-0.3 * np.abs(a - b).sum()) for b in B] for a in A])
    np.testing.assert_allclose(Laplacian(gamma=0.3)(A, B), naive, rtol=1e-12)
