"""Decoding rules as objects: how ``"distance"``, ``"inner"`` and ``"cosine"`` enter the bilinear score.

Every estimator scores a candidate ``c`` for a query ``x`` as ``S = <Q(x), R(c)> + offset(c)`` (see
:mod:`iokr.decoding._scoring`), with ``h(x)`` the prediction and ``psi(c)`` the candidate in output space:

============  ===========================  =====================================  ===================
rule          query transform ``Q``        candidate transform ``R``              offset
============  ===========================  =====================================  ===================
distance      ``2 h``                      ``psi(c)``                             ``-||psi(c)||^2``
inner         ``h``                        ``psi(c)``                             none
cosine        ``h / ||h||``                ``psi(c) / ||psi(c)||``                none
============  ===========================  =====================================  ===================

``-||h - psi(c)||^2 + ||h||^2 = 2 <h, psi(c)> - ||psi(c)||^2``: the distance rule ranks exactly like the pre-image
distance. Zero vectors have zero cosine with everything (their inverse norm is taken as 0). Each rule also gives the
affine form of its candidate transform for bit-packed 0/1 candidates (:class:`~iokr.decoding.developer.BinaryRule`), so the
fused scoring path applies the same rule without forming ``R``.

The output sides of the estimators compute ``h``, ``psi(c)`` and the norms (from explicit features or kernel
blocks); the rules only combine them, so no estimator branches on a rule's name.
"""

from __future__ import annotations

import numpy as np

from ._scoring import BinaryRule

DECODINGS = ("distance", "inner", "cosine")


def _safe_inverse(values):
    """``1 / values`` where positive, 0 elsewhere (float64)."""
    out = np.zeros_like(values, dtype=np.float64)
    positive = values > 0
    out[positive] = 1.0 / values[positive]
    return out


def inverse_norms(sq_norms):
    """``1 / sqrt(sq_norms)`` where positive, 0 elsewhere (a zero vector stays zero after scaling)."""
    return np.sqrt(_safe_inverse(sq_norms))


def row_norms(M):
    """Euclidean norms of the rows of ``M`` (float64), shape (n,)."""
    return np.sqrt(np.einsum("ij,ij->i", M, M, dtype=np.float64))


class DecodingRule:
    """Base of the decoding rules; subclasses set ``name`` and override the transforms.

    Attributes
    ----------
    name : str
        The value of the estimators' ``decoding`` parameter.
    needs_query_norms : bool
        True when :meth:`query` reads ``||h||`` (the caller then passes how to compute it).
    needs_candidate_norms : bool
        True when :meth:`candidate` reads ``||psi(c)||^2`` (the caller may skip computing them otherwise).
    """

    name = None
    needs_query_norms = False
    needs_candidate_norms = False

    def query(self, H, norms=None, *, norm_floor=None):
        """Query representation ``Q`` of shape (m, r) from predictions ``H`` (m, r).

        Parameters
        ----------
        H : ndarray of shape (m, r)
            ``h(x)`` in the side's coordinates (features, or coefficients over a basis).
        norms : callable, optional
            ``norms(H) -> ndarray (m,)``: ``||h(x)||`` in output space (Euclidean row norms by default).
        norm_floor : ndarray of shape (m,), optional
            Norms at or under it are rounding noise around ``h = 0`` and count as 0.
        """
        return H

    def candidate(self, R, sq_norms, *, unit_norm=False):
        """``(R, offset)`` of a candidate block from ``psi(c)`` rows ``R`` and their squared norms.

        Parameters
        ----------
        R : ndarray of shape (n_c, r)
        sq_norms : ndarray of shape (n_c,) or None
            ``||psi(c)||^2`` (may be None when ``needs_candidate_norms`` is False).
        unit_norm : bool, default=False
            The side guarantees ``||psi(c)|| = 1`` (or 0): normalized outputs need no rescaling.

        Returns
        -------
        R : ndarray of shape (n_c, r)
            In the dtype of the input ``R``.
        offset : ndarray of shape (n_c,) or None
        """
        return R, None

    def binary_terms(self, sq_norms, *, unit_norm=False):
        """Per-candidate ``(scale, offset)`` of the affine form, from ``||c - m||^2`` (see :class:`BinaryRule`).

        With ``unit_norm`` the side normalizes each centered candidate, ``R = (c - m) / ||c - m||``.
        """
        raise NotImplementedError

    def binary_rule(self, mean, *, unit_norm=False):
        """:class:`BinaryRule` scoring 0/1 candidates ``c`` whose representation is ``(c - m)``, rescaled.

        Parameters
        ----------
        mean : ndarray of shape (p,) or None
            Centering vector ``m`` of the side (None: no centering).
        unit_norm : bool, default=False
            The side normalizes its candidates (``R = (c - m) / ||c - m||``).
        """
        return BinaryRule(mean, lambda sq_norms: self.binary_terms(sq_norms, unit_norm=unit_norm),
                          needs_norms=unit_norm or self.needs_candidate_norms)

    def __repr__(self):
        return f"decoding_rule({self.name!r})"


class DistanceDecoding(DecodingRule):
    """``-||h - psi(c)||^2`` up to the per-query constant ``||h||^2``: ``Q = 2 h``, offset ``-||psi(c)||^2``."""

    name = "distance"
    needs_candidate_norms = True

    def query(self, H, norms=None, *, norm_floor=None):
        return 2.0 * H

    def candidate(self, R, sq_norms, *, unit_norm=False):
        return R, -sq_norms.astype(R.dtype)

    def binary_terms(self, sq_norms, *, unit_norm=False):
        if unit_norm:  # R = (c - m) / ||c - m||, of squared norm 1 (0 for c == m)
            return inverse_norms(sq_norms), -(sq_norms > 0).astype(np.float64)
        return None, -sq_norms


class InnerDecoding(DecodingRule):
    """``<h, psi(c)>``: both sides unchanged, no offset."""

    name = "inner"

    def binary_terms(self, sq_norms, *, unit_norm=False):
        return (inverse_norms(sq_norms) if unit_norm else None), None


class CosineDecoding(DecodingRule):
    """``<h, psi(c)> / (||h|| ||psi(c)||)``: both sides scaled to unit norm (zero vectors stay zero)."""

    name = "cosine"
    needs_query_norms = True
    needs_candidate_norms = True

    def query(self, H, norms=None, *, norm_floor=None):
        values = row_norms(H) if norms is None else norms(H)
        if norm_floor is not None:
            values = np.where(values <= norm_floor, 0.0, values)
        return H * inverse_norms(values**2)[:, None]

    def candidate(self, R, sq_norms, *, unit_norm=False):
        if unit_norm:
            return R, None
        return R * inverse_norms(sq_norms)[:, None].astype(R.dtype), None

    def binary_terms(self, sq_norms, *, unit_norm=False):
        return inverse_norms(sq_norms), None


_RULES = {rule.name: rule for rule in (DistanceDecoding(), InnerDecoding(), CosineDecoding())}


def decoding_rule(decoding, owner=None):
    """The rule object of a ``decoding`` name (a rule object is returned as is).

    Parameters
    ----------
    decoding : {"distance", "inner", "cosine"} or DecodingRule
    owner : str, optional
        Name of the estimator, for the error message.

    Returns
    -------
    rule : DecodingRule

    Examples
    --------
    >>> import numpy as np
    >>> decoding_rule("distance").query(np.array([[1.0, 2.0]]))
    array([[2., 4.]])
    """
    if isinstance(decoding, DecodingRule):
        return decoding
    rule = _RULES.get(decoding) if isinstance(decoding, str) else None
    if rule is None:
        where = f" of {owner}" if owner else ""
        raise ValueError(f"The 'decoding' parameter{where} must be one of {DECODINGS}. Got {decoding!r} instead.")
    return rule


def check_decoding(decoding, owner):
    """Raise a ValueError naming ``owner`` unless ``decoding`` is one of :data:`DECODINGS`; returns the rule."""
    return decoding_rule(decoding, owner)
