"""Warning and error categories raised by iokr, so callers can filter them precisely.

``ConvergenceWarning`` and ``NotFittedError`` are scikit-learn's own classes (so filters and ``except`` clauses
written for scikit-learn catch ours too); they are looked up on first access, so importing this module does not
import scikit-learn.
"""

from typing import TYPE_CHECKING

__all__ = [
    "ConvergenceWarning",
    "EmptyCandidateSetWarning",
    "GridEdgeWarning",
    "IOKRDataError",
    "NotFittedError",
    "NumericalStabilityWarning",
]

_FROM_SKLEARN = ("ConvergenceWarning", "NotFittedError")


if TYPE_CHECKING:
    from sklearn.exceptions import ConvergenceWarning, NotFittedError


def __getattr__(name):
    if name in _FROM_SKLEARN:
        from sklearn import exceptions  # noqa: PLC0415 - `import iokr` loads this module and must not load scikit-learn

        value = getattr(exceptions, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


class NumericalStabilityWarning(UserWarning):
    """A factorization needed jitter or fell back to a more stable route."""


class GridEdgeWarning(UserWarning):
    """A hyperparameter chosen by cross-validation lies at an edge of its grid: the grid may be too narrow."""


class EmptyCandidateSetWarning(UserWarning):
    """Some queries had no candidates; their rankings are empty."""


class IOKRDataError(ValueError):
    """Input data (files, spectra, structures, model files) is malformed."""
