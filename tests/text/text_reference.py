"""Brute-force references for the context kernels: dense word-position matrices and explicit transformations.

Nothing here shares code with iokr.text: the matrices are built by loops over offsets, the positional similarities by
loops over position pairs, the transformation matrices explicitly (``P = sqrtm(P_hat)``, ``W = [sqrt(1-m) I;
sqrt(m) E^T]``), and each kernel value is the Frobenius inner product ``<W X P, W Z P>``.
"""

import numpy as np
from scipy import linalg


def offsets(window):
    return [o for o in range(-window, window + 1) if o != 0]


def dense_context(tokens, index, window, vocabulary, mark_boundaries=True):
    """Word-position matrix (n_words, 2 * window) of the target ``tokens[index]``."""
    X = np.zeros((len(vocabulary), 2 * window))
    for p, o in enumerate(offsets(window)):
        j = index + o
        if 0 <= j < len(tokens):
            X[vocabulary.get(tokens[j], vocabulary["<unk>"]), p] += 1.0
        elif mark_boundaries and j == -1:
            X[vocabulary["<s>"], p] += 1.0
        elif mark_boundaries and j == len(tokens):
            X[vocabulary["</s>"], p] += 1.0
    return X


def position_similarity(kind, window, **params):
    """``P_hat`` by a double loop over positions."""
    offs = offsets(window)
    n = len(offs)
    G = np.zeros((n, n))
    for p, a in enumerate(offs):
        for q, b in enumerate(offs):
            if kind == "bow":
                G[p, q] = 1.0
            elif kind in ("cw", "wp"):
                va = abs(a) ** (-params["decay"]) + params["floor"]
                vb = abs(b) ** (-params["decay"]) + params["floor"]
                if kind == "cw":
                    G[p, q] = va * vb
                else:
                    theta = params["theta"]
                    mutual = (1.0 if a == b else 0.0) if np.isinf(theta) else np.exp(-theta * (a - b) ** 2)
                    G[p, q] = va * vb * mutual
            elif kind == "one":
                G[p, q] = np.exp(-params["theta"] * (abs(a) + abs(b) + abs(a - b)))
    return G


def positional_transformation(kind, window, **params):
    """An explicit ``P`` with ``P P^T = position_similarity(kind, window, **params)``.

    Rank-one cases are the weight vector itself; the others a diagonal weighting times the symmetric square root of
    a positive definite mutual-position matrix.
    """
    offs = np.array(offsets(window), dtype=float)
    n = offs.size
    if kind == "bow" or (kind == "one" and params["theta"] == 0):
        return np.ones((n, 1))
    if kind in ("cw", "wp"):
        v = np.abs(offs) ** (-params["decay"]) + params["floor"]
        if kind == "cw" or params["theta"] == 0:
            return v[:, None]
        if np.isinf(params["theta"]):
            return np.diag(v)
        mutual = np.exp(-params["theta"] * (offs[:, None] - offs[None, :]) ** 2)
        return np.diag(v) @ np.real(linalg.sqrtm(mutual))
    return np.real(linalg.sqrtm(position_similarity(kind, window, **params)))


def word_transformation(n_words, embedding=None, mix=0.0):
    """Explicit ``W`` with ``W^T W = (1 - mix) I + mix E E^T``."""
    if embedding is None or mix == 0.0:
        return np.eye(n_words)
    return np.vstack([np.sqrt(1.0 - mix) * np.eye(n_words), np.sqrt(mix) * embedding.T])


def kernel_matrix(XA, XB, W, P):
    """``K[i, j] = <W XA_i P, W XB_j P>_F`` over lists of dense word-position matrices."""
    FA = [W @ X @ P for X in XA]
    FB = [W @ X @ P for X in XB]
    return np.array([[float(np.sum(a * b)) for b in FB] for a in FA])
