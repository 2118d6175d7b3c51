"""Loaders for the real data sets the library ships (small licensed subsets) or reads from a given path."""

from ._arff import load_arff
from ._metabolites import BUNDLED_METABOLITES
from ._parallel_text import BUNDLED_PARALLEL_TEXT, load_parallel_text

__all__ = ["BUNDLED_METABOLITES", "BUNDLED_PARALLEL_TEXT", "load_arff", "load_parallel_text"]
