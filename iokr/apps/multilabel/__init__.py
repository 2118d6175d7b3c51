"""Multi-label classification as structured prediction: IOKR decoded over the label sets seen in training."""

from ._protocol import evaluate_multilabel, predict_label_sets, select_multilabel
from ._selection import (
    DEFAULT_ALPHAS,
    DEFAULT_GAMMA_SCALES,
    OUTPUT_NORMALIZATIONS,
    SCALINGS,
    GridEdgeWarning,
    closed_form_search,
    default_kernels,
    make_scaler,
)

__all__ = ["DEFAULT_ALPHAS", "DEFAULT_GAMMA_SCALES", "OUTPUT_NORMALIZATIONS", "SCALINGS", "GridEdgeWarning",
           "closed_form_search", "default_kernels", "evaluate_multilabel", "make_scaler", "predict_label_sets",
           "select_multilabel"]
