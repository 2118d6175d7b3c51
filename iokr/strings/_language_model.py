"""Character n-gram language model (interpolated absolute discounting) to rank pre-images and for Viterbi.

``P(w | h) = max(c(h, w) - D, 0) / c(h) + D * N1+(h .) / c(h) * P(w | h[1:])``, down to a uniform distribution
over the alphabet plus the stop symbol, so every string over the training alphabet has a finite log-probability.
A symbol never seen in training gets the uniform share ``1 / (|alphabet| + 2)`` of the base level (one extra slot
for "unknown"), so scoring never fails on unseen symbols.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np

from .._validation import check_positive_scalar
from ._ngrams import check_order, check_strings


class NgramLanguageModel:
    """Interpolated absolute-discounting n-gram model over symbols, with start/stop padding.

    Parameters
    ----------
    order : int, default=3
        n of the model (contexts of ``order - 1`` symbols).
    discount : float, default=0.75
        Absolute discount ``D`` in (0, 1).
    start, stop : hashable
        Pad symbols (the start symbol is never predicted).

    Attributes
    ----------
    alphabet_ : tuple
        Sorted training symbols.
    """

    def __init__(self, order=3, discount=0.75, start="^", stop="$"):
        self.order = order
        self.discount = discount
        self.start = start
        self.stop = stop

    def fit(self, strings):
        order = check_order(self.order, "order", "NgramLanguageModel")
        d = check_positive_scalar(self.discount, "discount", "NgramLanguageModel")
        if d >= 1:
            raise ValueError(f"The 'discount' parameter of NgramLanguageModel must be in (0, 1). Got {d!r} instead.")
        symbols, _ = check_strings(strings, "strings", reserved=(self.start, self.stop))
        self.alphabet_ = tuple(sorted({c for s in symbols for c in s}, key=lambda c: (type(c).__name__, repr(c))))
        # counts_[k][context of length k][next symbol]
        self.counts_ = [defaultdict(Counter) for _ in range(order)]
        for s in symbols:
            p = (self.start,) * (order - 1) + tuple(s) + (self.stop,)
            for i in range(order - 1, len(p)):
                for k in range(order):
                    self.counts_[k][p[i - k : i]][p[i]] += 1
        self._totals = [{h: sum(c.values()) for h, c in level.items()} for level in self.counts_]
        self._cache = {}
        self.n_outcomes_ = len(self.alphabet_) + 2
        return self

    def prob(self, symbol, context):
        """``P(symbol | context)``; ``context`` is a tuple (only its last ``order - 1`` symbols are used)."""
        k = self.order - 1
        context = tuple(context)[-k:] if k else ()
        if len(context) < k:
            context = (self.start,) * (k - len(context)) + context
        key = (symbol, context)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._prob(symbol, context)
            self._cache[key] = cached
        return cached

    def _prob(self, symbol, context):
        p = 1.0 / self.n_outcomes_
        for k in range(0, len(context) + 1):
            h = context[len(context) - k :]
            level = self.counts_[k].get(h)
            if level is None:
                continue
            total = self._totals[k][h]
            p = max(level.get(symbol, 0) - self.discount, 0.0) / total + self.discount * len(level) / total * p
        return p

    def log_prob(self, s):
        """Natural log-probability of the string ``s`` (including its stop symbol)."""
        k = self.order - 1
        p = (self.start,) * k + tuple(s) + (self.stop,)
        return float(sum(math.log(self.prob(p[i], p[i - k : i])) for i in range(k, len(p))))

    def transition_table(self, alphabet):
        """Dense log-probabilities for Viterbi over ``alphabet``.

        Returns
        -------
        table : ndarray of shape ((A + 1) ** (order - 1), A + 1)
            ``table[h, c]``: log P(c | history h) where histories are base-(A+1) numbers over ``alphabet`` plus the
            start symbol (id A) and column ``A`` is the stop symbol.
        """
        A = len(alphabet)
        k = self.order - 1
        ext = tuple(alphabet) + (self.start,)
        n_states = (A + 1) ** k
        table = np.empty((n_states, A + 1))
        outcomes = tuple(alphabet) + (self.stop,)
        for h in range(n_states):
            digits = []
            x = h
            for _ in range(k):
                digits.append(x % (A + 1))
                x //= A + 1
            history = tuple(ext[d] for d in reversed(digits))
            for j, c in enumerate(outcomes):
                table[h, j] = math.log(self.prob(c, history))
        return table
