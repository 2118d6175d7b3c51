"""Output side of string KDE: symbol ids, multi-order n-gram vocabularies and the De Bruijn edge table."""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ._ngrams import iter_ngrams


class OutputSpace:
    """n-gram count features of training output strings, for orders ``1..n``, with integer symbol ids.

    Symbols get ids ``0..A-1`` in sorted order; the start pad is ``A`` and the stop pad ``A + 1``. Columns hold the
    padded n-grams seen in training, order by order (each block sorted), so that the top-order block, the edges of
    the De Bruijn graph, is sorted by source vertex and then by emitted symbol.

    Attributes
    ----------
    alphabet : tuple
    blocks : dict
        ``order -> slice`` of columns.
    vocab : dict
        ``order -> {id tuple: column}``.
    src, dst, sym : ndarray of shape (V_top,)
        Edge table of the top order (vertex ids of (n-1)-grams, emitted symbol id).
    n_nodes, start_node, stop_node : int
    """

    def __init__(self, symbol_strings, n):
        self.n = n
        key = lambda c: (type(c).__name__, repr(c))  # noqa: E731
        self.alphabet = tuple(sorted({c for s in symbol_strings for c in s}, key=key))
        self.index = {c: i for i, c in enumerate(self.alphabet)}
        A = len(self.alphabet)
        self.start_id, self.stop_id = A, A + 1
        encoded = [self.encode(s) for s in symbol_strings]
        self.vocab = {}
        self.blocks = {}
        offset = 0
        for order in range(1, n + 1):
            grams = sorted({g for s in encoded for g in iter_ngrams(s, order, self.start_id, self.stop_id)})
            self.vocab[order] = {g: offset + i for i, g in enumerate(grams)}
            self.blocks[order] = slice(offset, offset + len(grams))
            offset += len(grams)
        self.n_columns = offset
        top = sorted(self.vocab[n], key=lambda g: self.vocab[n][g])
        nodes = sorted({g[:-1] for g in top} | {g[1:] for g in top} | {(self.start_id,) * (n - 1),
                                                                           (self.stop_id,) * (n - 1)})
        self.node_index = {v: i for i, v in enumerate(nodes)}
        self.nodes = nodes
        self.n_nodes = len(nodes)
        self.src = np.array([self.node_index[g[:-1]] for g in top], dtype=np.int64)
        self.dst = np.array([self.node_index[g[1:]] for g in top], dtype=np.int64)
        self.sym = np.array([g[-1] for g in top], dtype=np.int64)
        self.top_grams = top
        self.start_node = self.node_index[(self.start_id,) * (n - 1)]
        self.stop_node = self.node_index[(self.stop_id,) * (n - 1)]
        self.Y = self.features_ids(encoded)

    def encode(self, symbols):
        """Symbol ids of a string over the training alphabet (``KeyError`` for unknown symbols)."""
        return tuple(self.index[c] for c in symbols)

    def encode_lenient(self, symbols):
        """Symbol ids, unknown symbols mapped to ``-1`` (their n-grams are in no vocabulary)."""
        return tuple(self.index.get(c, -1) for c in symbols)

    def decode(self, ids, as_str):
        core = [self.alphabet[i] for i in ids if 0 <= i < len(self.alphabet)]
        if as_str and all(isinstance(c, str) for c in core):
            return "".join(core)
        return tuple(core)

    def feature_dict(self, ids):
        """``column -> count`` of the id string over all orders (n-grams outside the vocabulary are keyed -1)."""
        out = {}
        for order in range(1, self.n + 1):
            vocab = self.vocab[order]
            for g in iter_ngrams(ids, order, self.start_id, self.stop_id):
                j = vocab.get(g, -1 - order)
                out[j] = out.get(j, 0) + 1
        return out

    def features_ids(self, encoded):
        indptr = [0]
        indices = []
        data = []
        for ids in encoded:
            d = self.feature_dict(ids)
            for j, c in d.items():
                if j >= 0:
                    indices.append(j)
                    data.append(c)
            indptr.append(len(indices))
        return sparse.csr_matrix((np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64),
                                  np.asarray(indptr, dtype=np.int64)), shape=(len(encoded), self.n_columns))

    def squared_distance(self, ids, g, g_norm2):
        """``||Phi(ids) - g||^2`` over all orders, without forming ``Phi`` densely."""
        d = self.feature_dict(ids)
        dot = 0.0
        norm = 0.0
        for j, c in d.items():
            norm += c * c
            if j >= 0:
                dot += c * g[j]
        return g_norm2 - 2.0 * dot + norm
