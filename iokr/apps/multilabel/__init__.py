"""Multi-label classification as structured prediction: IOKR decoded over the label sets seen in training."""

from ._protocol import evaluate_multilabel, predict_label_sets

__all__ = ["evaluate_multilabel", "predict_label_sets"]
