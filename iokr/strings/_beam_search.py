"""Left-to-right beam search for pre-images of given lengths under the exact KDE objective plus a language model.

For predicted counts ``g`` (all orders ``1..n`` of an :class:`OutputSpace`) the pre-image objective of a string
``y`` is ``||Phi(y)||^2 - 2 <Phi(y), g>`` (``||g||^2`` dropped) plus ``lm_weight`` times the negative
log-probability of ``y`` under a language model. Appending a symbol adds one n-gram per order; an n-gram whose
count goes from ``c`` to ``c + 1`` changes ``||Phi||^2`` by ``2 c + 1`` and the cross term by ``-2 g_u``, so the
objective of a prefix is exact and additive over steps (the previous count ``c`` is found by scanning the prefix,
so repeated n-grams, in or outside the training vocabulary, are counted exactly; outside it there is no ``g``).
Cost per step ``O(beam_width * |alphabet| * n * length)``, vectorized over hypotheses and symbols; the language
model's next-symbol costs are cached per context.
The search keeps the ``beam_width`` best prefixes of each length (all hypotheses of a step share a length, so
their scores are comparable), and at every requested length hands all surviving prefixes over to an exact
rescoring that adds the stop n-grams. Unlike the Euler walk, the length is a parameter: with ``lengths = {L}``
the pre-image has exactly ``L`` symbols, which keeps a strong language model from preferring short strings.
With a beam at least ``|alphabet| ** max(lengths)`` the search is exhaustive.
"""

from __future__ import annotations

import math

import numpy as np


class BeamSearch:
    """Tables of column ids by (context, next symbol) for :meth:`search`.

    Parameters
    ----------
    space : OutputSpace
        Output n-gram columns (orders ``1..space.n``).
    language_model : NgramLanguageModel or None
        Model over symbol ids (``start_id`` / ``stop_id`` pads), fitted on the training outputs.
    """

    def __init__(self, space, language_model=None):
        self.space = space
        self.lm = language_model
        A = len(space.alphabet)
        self.A = A
        n = space.n
        self.n = n
        base = A + 1  # letters and the start pad
        # col_tables[o][context id, a] = column of the order-o n-gram (context, a), -1 outside the vocabulary
        self.col_tables = []
        for o in range(1, n + 1):
            table = np.full((base ** (o - 1), A), -1, dtype=np.int64)
            for gram, col in space.vocab[o].items():
                ctx, last = gram[:-1], gram[-1]
                if last >= A or any(s == space.stop_id for s in ctx):
                    continue
                cid = 0
                for s in ctx:
                    cid = cid * base + (A if s == space.start_id else s)
                table[cid, last] = col
            self.col_tables.append(table)
        self._lm_cache = {}

    def _lm_costs(self, context):
        """``-log P(a | context)`` for every symbol id ``a`` (array of shape (A,)), cached by context."""
        k = self.lm.order - 1
        key = context[-k:] if k else ()
        out = self._lm_cache.get(key)
        if out is None:
            out = np.array([-math.log(self.lm.prob(a, key)) for a in range(self.A)])
            self._lm_cache[key] = out
        return out

    def search(self, g, lengths, beam_width, lm_weight=0.0, return_scores=False):
        """Surviving prefixes at each requested length.

        Parameters
        ----------
        g : ndarray of shape (n_columns,)
            Predicted counts.
        lengths : sequence of int
            Lengths (>= 0) of the strings to return.
        beam_width : int
            Prefixes kept per step.
        lm_weight : float
            Weight of the language model's negative log-probability (ignored without a model).
        return_scores : bool, default=False
            Also return each candidate's prefix score: the objective and language-model cost of its n-grams and
            symbols *before* the stop pad (the stop n-grams are left to the exact rescoring).

        Returns
        -------
        candidates : list of tuple of int
            Symbol-id strings (up to ``beam_width`` per length), distinct.
        scores : list of float
            Only with ``return_scores``.
        """
        A, n = self.A, self.n
        lengths = sorted({int(L) for L in lengths if L >= 0})
        out = [()] if lengths and lengths[0] == 0 else []
        out_scores = [0.0] * len(out)
        if not lengths or lengths[-1] == 0:
            return (out, out_scores) if return_scores else out
        use_lm = self.lm is not None and lm_weight > 0
        base = A + 1
        pads = n - 1
        g = np.asarray(g, dtype=np.float64)
        # hypotheses: symbols behind n - 1 start pads (id A), and prefix scores
        seqs = np.full((1, pads), A, dtype=np.int64)
        scores = np.zeros(1)
        for step in range(1, lengths[-1] + 1):
            H, width = seqs.shape
            t = width - pads  # current prefix length
            rows = np.arange(H)
            delta = np.zeros((H, A))
            for o in range(1, n + 1):
                ctx = seqs[:, width - (o - 1) :]
                cid = np.zeros(H, dtype=np.int64)
                for j in range(o - 1):
                    cid = cid * base + ctx[:, j]
                c = self.col_tables[o - 1][cid]  # (H, A)
                known = c >= 0
                # earlier occurrences of (context, a): count c -> c + 1 changes ||Phi||^2 by 2 c + 1
                prev = np.zeros((H, A))
                for e in range(t):
                    end = pads + e
                    same = np.all(seqs[:, end - (o - 1) : end] == ctx, axis=1) if o > 1 else np.ones(H, bool)
                    prev[rows, seqs[:, end]] += same
                delta += 2.0 * prev + 1.0 - np.where(known, 2.0 * g[np.maximum(c, 0)], 0.0)
            if use_lm:
                for h in range(H):
                    delta[h] += lm_weight * self._lm_costs(tuple(int(s) for s in seqs[h, pads:]))
            flat = (scores[:, None] + delta).ravel()
            keep = min(int(beam_width), flat.size)
            # stable choice among ties: lowest (hypothesis, symbol) index
            idx = np.argsort(flat, kind="stable")[:keep]
            h_idx, a_idx = np.divmod(idx, A)
            seqs = np.hstack([seqs[h_idx], a_idx[:, None]])
            scores = flat[idx]
            if step in lengths:
                out.extend(tuple(int(s) for s in row[pads:]) for row in seqs)
                out_scores.extend(float(v) for v in scores)
        return (out, out_scores) if return_scores else out
