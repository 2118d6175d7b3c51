"""Text kernels with positional information for natural-language disambiguation (Pahikkala et al. 2005, 2009).

- :func:`tokenize`, :class:`ContextFeaturizer`: the window around a target occurrence as a sparse word-position
  matrix;
- kernels on them (:class:`BagOfWordsKernel`, :class:`ContextualWeightingKernel`, :class:`WordPositionKernel`,
  :class:`TransformedContextKernel`), all linear in transformed features, with explicit sparse features and primal
  weights for O(nnz) prediction;
- :class:`CooccurrenceLSA`: word similarities learned from unlabeled text, for the word transformation;
- :class:`ContextRLSClassifier`: RLS classification with closed-form cross-validation, primal prediction.
"""

from ._classifier import ContextRLSClassifier
from ._contexts import ContextFeaturizer, context_offsets
from ._kernels import (
                       BagOfWordsKernel,
                       ContextKernel,
                       ContextualWeightingKernel,
                       TransformedContextKernel,
                       WordPositionKernel,
)
from ._positional import (
                       bag_of_words_gram,
                       contextual_weighting_gram,
                       one_parameter_gram,
                       psd_factor,
                       word_position_gram,
)
from ._tokens import tokenize
from ._word_similarity import CooccurrenceLSA

__all__ = [
    "BagOfWordsKernel",
    "ContextFeaturizer",
    "ContextKernel",
    "ContextRLSClassifier",
    "ContextualWeightingKernel",
    "CooccurrenceLSA",
    "TransformedContextKernel",
    "WordPositionKernel",
    "bag_of_words_gram",
    "context_offsets",
    "contextual_weighting_gram",
    "one_parameter_gram",
    "psd_factor",
    "tokenize",
    "word_position_gram",
]
