"""Pairwise learning with Kronecker kernels: KronRLS, ConditionalRankRLS and TwoStepRLS, the four settings,
symmetric / reciprocal kernels and conjugate gradient on incomplete labels.

User guide: docs/kronecker.md. Bundled English/Spanish chapters, a few seconds:

    python examples/kronecker.py

Pairs are (English chapter, Spanish chapter) with label 1 when they are translations of each other: a pairwise
view of cross-lingual retrieval. Setting D (new English *and* new Spanish chapters) is retrieval on unseen text.
"""

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from iokr import ConditionalRankRLS, KronRLS, TwoStepRLS
from iokr.datasets import load_parallel_text
from iokr.metrics import auc, concordance_index, top_k_accuracy, true_candidate_rank

ids, english, spanish = load_parallel_text()
rng = np.random.default_rng(0)
order = rng.permutation(len(ids))
train, test = order[:120], order[120:240]


def cosine_kernels(texts):
    vec = TfidfVectorizer(min_df=2, sublinear_tf=True).fit([texts[i] for i in train])
    F_train, F_test = vec.transform([texts[i] for i in train]), vec.transform([texts[i] for i in test])
    return (F_train @ F_train.T).toarray(), (F_test @ F_train.T).toarray()


K1, K1_test = cosine_kernels(english)  # row domain: English chapters
K2, K2_test = cosine_kernels(spanish)  # column domain: Spanish chapters
Y = np.eye(len(train))  # Y[i, j] = 1 when English chapter i and Spanish chapter j are translations


def retrieval(scores):
    ranks = [true_candidate_rank(scores[q], q) for q in range(scores.shape[0])]
    return f"top-1 {top_k_accuracy(ranks, 1):5.1f} %, top-5 {top_k_accuracy(ranks, 5):5.1f} %"


# Closed form: A = V [(V^T Y U) / (s1 s2^T + alpha)] U^T from the two factor eigendecompositions.
for model in (KronRLS(alpha=0.01), ConditionalRankRLS(alpha=0.01), TwoStepRLS(alpha1=0.1, alpha2=0.1)):
    model.fit(K1, K2, Y)
    print(f"{type(model).__name__:18s} setting D (new chapters on both sides): "
          f"{retrieval(model.predict(K1_test, K2_test))}")

# Closed-form hold-out on the training pairs (eigendecompositions reused for every alpha). The setting decides what
# is left out with a pair: here a translation pair (i, i) is the only positive of its row and of its column, so
# it can only be predicted when neither chapter was seen (setting D); A-C score it below the other pairs.
kron = KronRLS(alpha=0.01).fit(K1, K2, Y)
alphas = [1e-3, 1e-2, 1e-1, 1.0]
for setting in "ABC":
    scores = kron.cv_path(alphas, setting, scoring=lambda Y, P: auc(Y.ravel(), P.ravel()))
    print(f"  KronRLS setting {setting}: AUC per alpha {np.round(scores, 3)}")
# Setting D retrains over one domain (n1 eigendecompositions per alpha): one alpha here.
print(f"  KronRLS setting D: AUC {auc(Y.ravel(), kron.holdout_predictions('D').ravel()):.3f} at alpha 0.01")
# Setting B (a new English chapter) checked against retraining without that row.
P = kron.holdout_predictions("B")
rest = np.arange(1, len(train))
refit = KronRLS(alpha=0.01).fit(K1[np.ix_(rest, rest)], K2, Y[rest])
assert np.allclose(P[0], refit.predict(K1[:1, rest], K2)[0], rtol=1e-6, atol=1e-9)
print("  setting B hold-out == retraining without the row: checked")

# Incomplete labels: 15 % of the pairs observed (all positives kept), conjugate gradient with early stopping.
rows, cols = np.nonzero(rng.random(Y.shape) < 0.15)
rows, cols = np.concatenate([rows, np.arange(len(train))]), np.concatenate([cols, np.arange(len(train))])
cg = KronRLS(alpha=0.01, max_iter=200, solver="cg").fit(K1, K2, (rows, cols, Y[rows, cols]))
print(f"KronRLS, {rows.size} observed pairs, CG ({cg.n_iter_} iterations): {retrieval(cg.predict(K1_test, K2_test))}")

# One domain. Symmetric relation "same book" and reciprocal relation "earlier in the canon" between English chapters.
books = [i.split(".")[0] for i in ids]
position = {b: k for k, b in enumerate(dict.fromkeys(books))}
book = np.array([position[books[i]] for i in train])
book_test = np.array([position[books[i]] for i in test])
same = (book[:, None] == book[None, :]).astype(float)
sym = KronRLS(alpha=0.1, symmetry="symmetric").fit(K1, None, same)
S = sym.predict(K1_test)
assert np.allclose(S, S.T, atol=1e-10)  # symmetric kernel: symmetric predictions
print(f"symmetric KronRLS, same book on new chapter pairs: AUC "
      f"{auc((book_test[:, None] == book_test[None, :]).ravel(), S.ravel()):.3f}")
earlier = np.sign(book[None, :] - book[:, None]).astype(float)  # +1 when chapter i's book comes before j's
rec = KronRLS(alpha=0.1, symmetry="reciprocal").fit(K1, None, earlier)
R = rec.predict(K1_test)
assert np.allclose(R, -R.T, atol=1e-10)  # reciprocal kernel: f(i, j) = -f(j, i)
truth = np.sign(book_test[None, :] - book_test[:, None])
off = truth != 0
print(f"reciprocal KronRLS, which book comes first (new chapters): concordance "
      f"{concordance_index(truth[off], R[off]):.3f}")
