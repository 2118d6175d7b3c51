"""IOKR in a few lines: cross-lingual retrieval on the bundled English/Spanish Bible chapters.

User guide: docs/iokr.md. Runs on the data bundled with the package (no download), in a few seconds:

    python examples/iokr_quickstart.py

An English chapter is the input, the TF-IDF vector of its Spanish translation the output; each test chapter ranks
all test Spanish chapters (the candidates) and we report where its own translation lands.
"""

import numpy as np
from scipy import linalg

from iokr import IOKR, CandidateSets, config_context
from iokr.apps.retrieval import make_split
from iokr.datasets import load_parallel_text
from iokr.metrics import mean_reciprocal_rank, top_k_accuracy, true_candidate_rank

ids, english, spanish = load_parallel_text()  # 397 aligned chapters, public domain
rng = np.random.default_rng(0)
order = rng.permutation(len(ids))
train, test = order[:200], order[200:]
# TF-IDF of each language fitted on training chapters only; linear kernels between English TF-IDF vectors.
split = make_split(english, spanish, train, test)
K_train, K_test, diag_test = split.gram_train, split.gram_test, split.diag_test
Y_train, C = split.Y_train, split.Y_test  # Spanish TF-IDF: training outputs, and the candidates
print(f"{len(train)} training chapters, {len(test)} test chapters, {Y_train.shape[1]} Spanish TF-IDF features")

# 1. Fit and rank. With a precomputed, normalized input kernel the test diagonal k(x, x) is needed.
model = IOKR(alpha=1.0, input_kernel="precomputed", output_kernel="linear").fit(K_train, Y_train)
S = model.decision_function(K_test, C, input_diag=diag_test)  # (n_test, n_candidates), higher is better
ranks = np.array([true_candidate_rank(S[q], q) for q in range(len(test))])  # translation of query q is row q
print(f"distance decoding: top-1 {top_k_accuracy(ranks, 1):.1f} %, top-5 {top_k_accuracy(ranks, 5):.1f} %, "
      f"MRR {mean_reciprocal_rank(ranks):.3f}")

# 2. The same through rank(): per-query candidate sets over one pool, top-k kept.
sets = CandidateSets.shared(C, len(test))
rankings = model.rank(K_test, sets, top_k=5, input_diag=diag_test)
assert all(r.pool_indices[0] == int(np.argmax(S[q])) for q, r in enumerate(rankings))

# 3. Decoding rules. With normalize_output=True (the default) every candidate has unit norm and the three rules
#    rank alike; without it they differ through the candidates' norms.
for decoding in ("distance", "inner", "cosine"):
    m = IOKR(alpha=1.0, input_kernel="precomputed", decoding=decoding, normalize_output=False).fit(K_train, Y_train)
    S_d = m.decision_function(K_test, C, input_diag=diag_test)
    r = [true_candidate_rank(S_d[q], q) for q in range(len(test))]
    print(f"  normalize_output=False, decoding={decoding:8s} top-1 {top_k_accuracy(r, 1):5.1f} %")

# 4. The closed form of the docs (no centering/normalization, "inner" decoding):
#    score(x, c) = k_x(x)^T (K_x + alpha I)^{-1} K_y(Y, c).
plain = IOKR(alpha=1.0, input_kernel="precomputed", decoding="inner", center_input=False, normalize_input=False,
             center_output=False, normalize_output=False).fit(K_train, Y_train)
M = linalg.cho_solve(linalg.cho_factor(K_train + 1.0 * np.eye(len(train))), Y_train @ C.T)
assert np.allclose(plain.decision_function(K_test, C), K_test @ M, rtol=1e-8, atol=1e-10)

# 5. Chunked scoring: a tiny working-memory budget changes the blocks, not the scores.
with config_context(working_memory=1):  # MiB: a few test rows per chunk instead of all at once
    S_small = model.decision_function(K_test, C, input_diag=diag_test)
assert np.allclose(S_small, S, rtol=1e-10, atol=1e-12)
print("closed form and chunked scoring checked")
