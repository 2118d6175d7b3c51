"""Strings: n-gram features and kernels, Euler-circuit pre-images, and kernel dependency estimation for strings.

Cortes, Mohri & Weston (2005), "A general regression technique for learning transductions".

>>> from iokr.strings import ngram_counts, ngram_preimage
>>> ngram_preimage(ngram_counts("banana", 3), 3)
'banana'
"""

from ._basis import BASIS_METHODS, fit_subset, select_basis
from ._batch_euler import euler_walk_batch
from ._calibration import LogisticCalibration
from ._datasets import load_cmudict, load_ocr_letters
from ._estimator import StringKDE
from ._images import ImageBlur, ImageShifts
from ._kernels import NgramKernel, SequenceNgramKernel, SequencePolynomialKernel, SequenceProductKernel
from ._language_model import NgramLanguageModel
from ._metrics import edit_distance, letter_accuracy, string_error_rate, symbol_error_rate
from ._ngrams import NgramVectorizer, ngram_counts, ngram_features
from ._output_space import OutputSpace
from ._preimage import DeBruijnGraph, has_preimage, ngram_preimage, ngram_preimages
from ._preimage_batch import ngram_preimage_batch
from ._rounding import learn_thresholds, repair_degrees, round_counts
from ._segmented import SegmentedStringKDE
from ._viterbi import viterbi_decode

__all__ = [
    "BASIS_METHODS",
    "DeBruijnGraph",
    "ImageBlur",
    "ImageShifts",
    "LogisticCalibration",
    "NgramKernel",
    "NgramLanguageModel",
    "NgramVectorizer",
    "OutputSpace",
    "SegmentedStringKDE",
    "SequenceNgramKernel",
    "SequencePolynomialKernel",
    "SequenceProductKernel",
    "StringKDE",
    "edit_distance",
    "euler_walk_batch",
    "fit_subset",
    "has_preimage",
    "learn_thresholds",
    "letter_accuracy",
    "load_cmudict",
    "load_ocr_letters",
    "ngram_counts",
    "ngram_features",
    "ngram_preimage",
    "ngram_preimage_batch",
    "ngram_preimages",
    "repair_degrees",
    "round_counts",
    "select_basis",
    "string_error_rate",
    "symbol_error_rate",
    "viterbi_decode",
]
