"""Multi-label classification as structured prediction: IOKR decoded over the label sets seen in training."""

from ._protocol import evaluate_multilabel, predict_label_sets, select_multilabel
from ._selection import DEFAULT_ALPHAS, DEFAULT_GAMMA_SCALES, OUTPUT_NORMALIZATIONS, SCALINGS, GridEdgeWarning

__all__ = ["DEFAULT_ALPHAS", "DEFAULT_GAMMA_SCALES", "OUTPUT_NORMALIZATIONS", "SCALINGS", "GridEdgeWarning",
           "evaluate_multilabel", "predict_label_sets", "select_multilabel"]
