"""Kernel objects: ``K(A, B)`` blocks and diagonals, chunked under the working-memory budget.

>>> from iokr.kernels import Gaussian, Tanimoto
>>> K = Gaussian(gamma=0.5)
"""

from ._base import Kernel
from ._basis_transform import TransformedBasis
from ._combination import Normalized, Precomputed, WeightedSum
from ._fingerprint import GaussianTanimoto, Tanimoto
from ._random_features import RandomFourierFeatures
from ._training_grams import FileGram, TrainingGrams
from ._transform import FeatureTransform, KernelTransform
from ._vector import Gaussian, Linear, Polynomial

_BY_NAME = {
    "linear": Linear,
    "polynomial": Polynomial,
    "gaussian": Gaussian,
    "rbf": Gaussian,
    "tanimoto": Tanimoto,
    "gaussian_tanimoto": GaussianTanimoto,
}


def make_kernel(spec, name="kernel"):
    """Return a kernel object from a kernel object or a name (``"linear"``, ``"gaussian"``, ``"tanimoto"``, ...).

    ``"precomputed"`` is returned unchanged: estimators then take Gram matrices instead of features.
    """
    if isinstance(spec, Kernel):
        return spec
    if isinstance(spec, str):
        if spec == "precomputed":
            return spec
        if spec in _BY_NAME:
            return _BY_NAME[spec]()
        raise ValueError(
            f"Unknown {name} {spec!r}; expected a Kernel object, 'precomputed' or one of {sorted(_BY_NAME)}."
        )
    raise TypeError(f"The '{name}' parameter must be a Kernel object or a name string. Got {spec!r} instead.")


__all__ = [
    "FileGram",
    "TrainingGrams",
    "TransformedBasis",
    "FeatureTransform",
    "Gaussian",
    "GaussianTanimoto",
    "Kernel",
    "KernelTransform",
    "Linear",
    "Normalized",
    "Polynomial",
    "Precomputed",
    "RandomFourierFeatures",
    "Tanimoto",
    "WeightedSum",
    "make_kernel",
]
