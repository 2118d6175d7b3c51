"""Magnitude-preserving IOKR: learning with the training examples' candidate sets (known and approximated inputs).

User guide: docs/mpiokr.md. Bundled English/Spanish chapters, a few seconds:

    python examples/mpiokr.py
"""

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from iokr import IOKR, MPIOKR, CandidateSets
from iokr.datasets import load_parallel_text
from iokr.kernels import Gaussian, Linear, WeightedSum
from iokr.metrics import mean_reciprocal_rank, top_k_accuracy, true_candidate_rank

ids, english, spanish = load_parallel_text()
rng = np.random.default_rng(0)
order = rng.permutation(len(ids))
train, test = order[:150], order[150:300]
vx = TfidfVectorizer(min_df=2, sublinear_tf=True).fit([english[i] for i in train])
vy = TfidfVectorizer(min_df=2, sublinear_tf=True).fit([spanish[i] for i in train])
X, X_test = (vx.transform([english[i] for i in idx]).toarray() for idx in (train, test))
Y, C = (vy.transform([spanish[i] for i in idx]).toarray() for idx in (train, test))

# Candidate set of every training chapter: its own translation and 14 other training translations. Their inputs
# (the English chapters) are known here; "joint"/"separate" approximate them from the outputs instead.
members = [np.concatenate([[i], rng.choice(np.delete(np.arange(len(train)), i), 14, replace=False)])
           for i in range(len(train))]
# As a pool with index lists (the pool is the training outputs): no duplicate search over 4,000-wide rows, which
# lists of arrays would need. Candidate inputs are then given per pool row.
candidate_sets = CandidateSets(Y, members)
candidate_inputs = X


def report(name, model):
    S = model.decision_function(X_test, C)  # each test chapter ranks all test translations
    ranks = [true_candidate_rank(S[q], q) for q in range(len(test))]
    print(f"{name:38s} top-1 {top_k_accuracy(ranks, 1):5.1f} %  top-5 {top_k_accuracy(ranks, 5):5.1f} %  "
          f"MRR {mean_reciprocal_rank(ranks):.3f}")


alpha = 1.0
report("IOKR", IOKR(alpha=alpha).fit(X, Y))
report("MP-IOKR, known candidate inputs", MPIOKR(alpha=alpha, approximation="known")
       .fit(X, Y, candidate_sets, candidate_inputs))
joint = MPIOKR(alpha=alpha, approximation="joint", gamma=1.0).fit(X, Y, candidate_sets)
report("MP-IOKR, joint approximation", joint)
# Refit with another alpha reusing the candidate statistics (no second pass over the candidates).
report("MP-IOKR, joint, alpha=0.3 (cached stats)", MPIOKR(alpha=0.3, approximation="joint", gamma=1.0)
       .fit(X, Y, candidate_sets, candidate_stats=joint.candidate_stats_))
kernel = WeightedSum([Linear(), Gaussian(1.0)], weights=[0.5, 0.5])
report("MP-IOKR, separate (linear + Gaussian)", MPIOKR(alpha=alpha, input_kernel=kernel, approximation="separate",
                                                       gamma=[1.0, 0.1]).fit(X, Y, candidate_sets))

# With every candidate set equal to all training outputs, MP-IOKR is IOKR on centered features with alpha / 2
# (see docs/mpiokr.md). Checked here without normalization, which would act after the centering.
plain = {"normalize_input": False, "normalize_output": False}
sub = slice(0, 60)  # a smaller problem keeps the check fast
everything = CandidateSets.shared(Y[sub], 60)
mp = MPIOKR(alpha=alpha, approximation="known", **plain).fit(X[sub], Y[sub], everything, X[sub])
ref = IOKR(alpha=alpha / 2, **plain).fit(X[sub], Y[sub])
assert np.allclose(mp.decision_function(X_test, C), ref.decision_function(X_test, C), rtol=1e-6, atol=1e-8)
print("MP-IOKR with all training outputs as candidates == IOKR(alpha / 2): checked")
