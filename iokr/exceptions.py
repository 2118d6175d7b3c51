"""Warning and error categories raised by iokr, so callers can filter them precisely."""

from sklearn.exceptions import ConvergenceWarning, NotFittedError

__all__ = [
    "ConvergenceWarning",
    "NotFittedError",
    "NumericalStabilityWarning",
    "EmptyCandidateSetWarning",
    "IOKRDataError",
]


class NumericalStabilityWarning(UserWarning):
    """A factorization needed jitter or fell back to a more stable route."""


class EmptyCandidateSetWarning(UserWarning):
    """Some queries had no candidates; their rankings are empty."""


class IOKRDataError(ValueError):
    """Input data (files, spectra, structures, model files) is malformed."""
