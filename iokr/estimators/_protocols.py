"""The two side protocols every kernel regression estimator is built from.

An estimator that decodes (IOKR, SketchedIOKR, MP-IOKR, IOKRCV's hold-out scoring) holds an *input side*, which turns
query inputs into transformed test-versus-basis kernel blocks, and an *output side*, which turns the predictions of
those blocks into query representations and candidates into candidate representations under a decoding rule
(:func:`iokr.decoding.decoding_rule`). The variants differ in where the numbers come from (kernel blocks, sketched
features, an extended basis of candidates) but all answer these calls, so the estimators' prediction and scoring code
is written once against the protocols. ``tests/estimators/test_side_protocols.py`` holds every variant to them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class InputSideProtocol(Protocol):
    """Transformed input kernel of a fitted estimator, queried block by block.

    Attributes
    ----------
    n_train : int
        Width of :meth:`test_block`: the size of the basis the predictor is expanded on.
    n_features_in : int
        Input features (training inputs, for a precomputed kernel) expected from test inputs.
    """

    n_train: int
    n_features_in: int

    def check_test(self, X_test, input_diag=None):
        """Validate test inputs; returns ``(X_test, input_diag)`` ready for :meth:`test_block`."""

    def test_block(self, X_test, rows, input_diag=None):
        """Transformed ``k(x_test[rows], basis)`` of shape (n_rows, n_train), float64."""


@runtime_checkable
class OutputSideProtocol(Protocol):
    """Transformed output space of a fitted estimator: query and candidate representations for decoding.

    Scores are ``<Q, R> + offset`` with ``Q`` from :meth:`query_representation` and ``(R, offset)`` from
    :meth:`candidate_block`, for the same ``decoding`` (a name or a :class:`~iokr.decoding.DecodingRule`).

    Attributes
    ----------
    kernel : Kernel
        The output kernel (candidates are validated by it).
    explicit : bool
        True when queries and candidates are explicit output features; False when they are coefficients over, and
        kernel values against, a basis of training outputs.
    n_features : int
        Output features of candidates.
    """

    kernel: object
    explicit: bool
    n_features: int

    def query_representation(self, H, decoding, *, norm_floor=None):
        """Query representations ``Q`` (m, r) from predictions ``H`` (m, r) under ``decoding``."""

    def candidate_block(self, C, decoding, name="candidates"):
        """``(R, offset)`` of a block of candidate output features ``C`` (n_c, n_features) under ``decoding``."""

    def candidate_bytes_per_row(self, n_train):
        """Temporary bytes :meth:`candidate_block` needs per candidate row."""

    def binary_rule(self, decoding):
        """The affine form of :meth:`candidate_block` for 0/1 candidates (a BinaryRule), or None."""
