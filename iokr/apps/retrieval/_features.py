"""Preprocessing of retrieval features, fitted on a split's training documents: LSA per language, standardization.

A :class:`Features` setting turns the TF-IDF of a :class:`~._protocol.RetrievalSplit` into the features IOKR sees on
both sides (the source's input kernel and the target's output features):

- ``lsa=None``: the TF-IDF itself (linear kernel), the protocol of the MP-IOKR paper;
- ``lsa=k``: latent semantic analysis per language, the ``k`` leading left singular directions of that language's
  training TF-IDF matrix (uncentered, as ``sklearn.decomposition.TruncatedSVD``). They come from the training
  Gram ``G = A A^T = U diag(s) U^T``: training coordinates ``U_k diag(s_k)^{1/2}``, test coordinates
  ``G_test U_k diag(s_k)^{-1/2}`` (the projection ``A_test V_k`` onto the right singular vectors, since
  ``V_k = A^T U_k diag(s_k)^{-1/2}``). One eigendecomposition of each ``n x n`` Gram serves every ``k``;
- ``standardize=True`` (with LSA): every LSA coordinate is scaled to unit standard deviation on the training
  documents (``StandardScaler`` statistics; IOKR centers its features itself), which whitens the LSA space, as CCA
  does before matching directions.

Nothing here sees the alignment: each language's transform is fitted on its own training documents.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ...linalg import EigenPath
from ._split import RetrievalSplit

#: LSA dimensions of the default grid (per language); the TF-IDF itself is the grid's other end.
LSA_DIMS = (16, 32, 64, 128, 256, 384, 512)
#: Relative size under which an eigenvalue of a training Gram counts as zero (the LSA dimension exceeds the rank).
RANK_RTOL = 1e-10


@dataclass(frozen=True)
class Features:
    """One preprocessing setting of the retrieval features.

    Parameters
    ----------
    lsa : int or None, default=None
        LSA dimension per language, or None for the TF-IDF itself.
    standardize : bool, default=False
        Scale every LSA coordinate to unit standard deviation on the training documents (only with ``lsa``).
    """

    lsa: int | None = None
    standardize: bool = False

    def __post_init__(self):
        if self.lsa is not None and (isinstance(self.lsa, bool) or not isinstance(self.lsa, numbers.Integral)
                                     or self.lsa < 1):
            raise ValueError(f"The 'lsa' parameter of Features must be a positive int or None, got {self.lsa!r}.")
        if not isinstance(self.standardize, (bool, np.bool_)):
            raise ValueError(f"The 'standardize' parameter of Features must be a bool, got {self.standardize!r}.")
        if self.standardize and self.lsa is None:
            raise ValueError("The 'standardize' parameter of Features needs 'lsa' (an LSA dimension): the TF-IDF "
                             "has more terms than training documents, so its per-term scale is not estimable.")

    def __str__(self):
        if self.lsa is None:
            return "TF-IDF"
        return f"LSA {self.lsa}" + (" standardized" if self.standardize else "")

    def as_dict(self):
        """``{"lsa": ..., "standardize": ...}`` for JSON records."""
        return {"lsa": self.lsa, "standardize": bool(self.standardize)}


#: The TF-IDF itself, the MP-IOKR paper's features.
TFIDF = Features()


def feature_grid(lsa="cv", standardize="cv"):
    """The settings searched for the given choices (``"cv"``: every value of the default grid).

    Parameters
    ----------
    lsa : "cv", None or int, default="cv"
        ``"cv"``: the TF-IDF and every dimension of :data:`LSA_DIMS`.
    standardize : "cv" or bool, default="cv"
        ``"cv"``: both, where defined (the TF-IDF is never standardized).

    Returns
    -------
    grid : tuple of Features
        In order: TF-IDF, then LSA by increasing dimension, plain before standardized.
    """
    dims = (None, *LSA_DIMS) if isinstance(lsa, str) and lsa == "cv" else (lsa,)
    if isinstance(standardize, str):
        if standardize != "cv":
            raise ValueError(f"'standardize' must be a bool or 'cv', got {standardize!r}.")
        scales = (False, True)
    else:
        scales = (standardize,)
    if dims == (None,) and scales == (True,):
        Features(None, True)  # raises the error naming 'standardize'
    return tuple(Features(d, s) for s in scales for d in dims if not (s and d is None))


class SplitFeatures:
    """The features of every :class:`Features` setting for one split, the decompositions shared between settings.

    Parameters
    ----------
    split : RetrievalSplit
        TF-IDF features of the split (:func:`~._protocol.make_split`).
    """

    def __init__(self, split):
        self.split = split
        self._source, self._target = None, None

    @property
    def n_train(self):
        return self.split.gram_train.shape[0]

    def _coordinates(self, side, features):
        if side == "source":
            if self._source is None:
                self._source = _Lsa(self.split.gram_train, self.split.gram_test, "source")
            return self._source.coordinates(features)
        if self._target is None:
            Y_train, Y_test = self.split.Y_train, self.split.Y_test
            self._target = _Lsa(Y_train @ Y_train.T, Y_test @ Y_train.T, "target")
        return self._target.coordinates(features)

    def get(self, features):
        """:class:`~._protocol.RetrievalSplit` of ``features`` (the TF-IDF split itself when ``lsa`` is None)."""
        if not isinstance(features, Features):
            raise TypeError(f"'features' must be a Features setting, got {type(features).__name__}.")
        if features.lsa is None:
            return self.split
        if features.lsa >= self.n_train:
            raise ValueError(f"'lsa' ({features.lsa}) must be smaller than the number of training documents "
                             f"({self.n_train}).")
        Z_train, Z_test = self._coordinates("source", features)
        Y_train, Y_test = self._coordinates("target", features)
        return RetrievalSplit(Z_train @ Z_train.T, Z_test @ Z_train.T, np.einsum("ij,ij->i", Z_test, Z_test),
                              Y_train, Y_test)


class _Lsa:
    """LSA coordinates of one language from its training Gram and test-by-training products."""

    def __init__(self, gram_train, gram_test, name):
        path = EigenPath(gram_train, name=f"{name} TF-IDF Gram")
        order = np.argsort(path.eigenvalues)[::-1]  # descending; eigh returns ascending
        self.values = path.eigenvalues[order]
        self.vectors = path.eigenvectors[:, order]
        self.gram_test = np.asarray(gram_test, dtype=np.float64)
        self.name = name

    def coordinates(self, features):
        k = features.lsa
        values = self.values[:k]
        if values.size < k or not values[-1] > RANK_RTOL * max(float(self.values[0]), 1e-300):
            rank = int(np.sum(self.values > RANK_RTOL * max(float(self.values[0]), 1e-300)))
            raise ValueError(f"'lsa' ({k}) exceeds the rank ({rank}) of the {self.name} training TF-IDF.")
        root = np.sqrt(values)
        train = self.vectors[:, :k] * root
        test = (self.gram_test @ self.vectors[:, :k]) / root
        if features.standardize:
            scale = train.std(axis=0)
            scale[scale == 0] = 1.0  # a constant coordinate (a constant eigenvector): centering removes it anyway
            train, test = train / scale, test / scale
        return train, test
