"""Brute-force reference of the retrieval selection: fold MRR of IOKR refitted on each fold's training side."""

import numpy as np

from iokr.estimators import IOKR
from iokr.metrics import mean_reciprocal_rank, true_candidate_rank


def refit_fold_mrr(gram_train, Y_train, alpha, folds):
    """Mean over ``folds`` of the MRR of each held-out document among its fold (explicit refits, no closed form)."""
    per_fold = []
    for train, test in folds:
        model = IOKR(alpha=alpha, input_kernel="precomputed").fit(gram_train[np.ix_(train, train)], Y_train[train])
        S = model.decision_function(gram_train[np.ix_(test, train)], Y_train[test],
                                    input_diag=np.diag(gram_train)[test])
        per_fold.append(mean_reciprocal_rank([true_candidate_rank(S[j], j) for j in range(test.size)]))
    return float(np.mean(per_fold))
