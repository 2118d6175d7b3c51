"""Closed-form model selection: alpha paths, exact hold-out without refitting, ranking scores, kernel learning.

User guide: docs/model_selection.md. Runs on the bundled English/Spanish chapters in a few seconds:

    python examples/model_selection.py
"""

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import KFold

from iokr import IOKR, IOKRCV, RLS, RLSCV, CandidateSets
from iokr.datasets import load_parallel_text
from iokr.kernels import Gaussian, Linear
from iokr.model_selection import AlignedKernelSum

ids, english, spanish = load_parallel_text()
rng = np.random.default_rng(0)
train = rng.permutation(len(ids))[:150]
X = TfidfVectorizer(min_df=2, sublinear_tf=True).fit_transform([english[i] for i in train]).toarray()
Y = TfidfVectorizer(min_df=2, sublinear_tf=True).fit_transform([spanish[i] for i in train]).toarray()
K = X @ X.T
alphas = np.logspace(-3, 2, 11)

# 1. IOKRCV, output-space squared error, 5 folds: one eigendecomposition of K serves all 11 alphas.
folds = list(KFold(5, shuffle=True, random_state=0).split(K))
cv = IOKRCV(alphas=alphas, input_kernel="precomputed", normalize_input=False, normalize_output=False,
            cv=[(tr, te) for tr, te in folds]).fit(K, Y)
print(f"IOKRCV (mse, 5 folds): alpha_ = {cv.alpha_:g}, route {cv.path_methods_[0]}")

# The closed form equals refitting IOKR on every training side (centering refitted on each side) -- check it.
i_best = int(np.flatnonzero(cv.cv_results_["param_alpha"] == cv.alpha_)[0])
explicit = []
for tr, te in folds:
    m = IOKR(alpha=cv.alpha_, input_kernel="precomputed", normalize_input=False, normalize_output=False)
    m.fit(K[np.ix_(tr, tr)], Y[tr])
    residual = m.predict_features(K[np.ix_(te, tr)]) - (Y[te] - Y[tr].mean(axis=0))
    explicit.append(-np.mean(np.sum(residual**2, axis=1)))
assert np.allclose(cv.cv_results_["split_test_scores"][i_best], explicit, rtol=1e-7, atol=1e-12)
print("  hold-out scores equal explicit refits:", np.round(explicit, 4))

# 2. Ranking score: each held-out chapter ranks the translations of its own fold (the chapters the model trained on
#    that split has not seen), as at test time. One candidate set per training example, fixed across splits.
fold_of = np.empty(len(train), dtype=int)
for f, (_, te) in enumerate(folds):
    fold_of[te] = f
sets = CandidateSets(Y, [folds[fold_of[i]][1] for i in range(len(train))])
cv_rank = IOKRCV(alphas=alphas, input_kernel="precomputed", cv=folds, scoring="top1").fit(K, Y, sets)
print(f"IOKRCV (top-1 among the ~30 chapters of the held-out fold): alpha_ = {cv_rank.alpha_:g}, "
      f"mean top-1 = {100 * cv_rank.best_score_:.1f} %")

# 3. Exact leave-one-out (cv=None) with a kernel parameter searched too: each gamma is factored once.
cv_loo = IOKRCV(alphas=alphas, input_kernel=Gaussian(1.0), param_grid={"input_kernel__gamma": [0.5, 1.0, 2.0]},
                cv=None).fit(X, Y)
print(f"IOKRCV (leave-one-out, Gaussian input): best {cv_loo.best_params_}")

# 4. RLSCV: scalar regression (log length of the Spanish chapter from the English TF-IDF), exact leave-one-out,
#    checked against refitting RLS without each example.
y = np.log([len(spanish[i].split()) for i in train])
rls_cv = RLSCV(alphas=alphas, kernel="precomputed", cv=None).fit(K, y)
a = rls_cv.alpha_


def keep(i):
    return np.delete(np.arange(len(y)), i)



loo = np.array([RLS(alpha=a, kernel="precomputed").fit(K[np.ix_(keep(i), keep(i))], y[keep(i)])
                .predict(K[i:i + 1, keep(i)])[0] for i in range(len(y))])
assert np.isclose(-np.mean((y - loo) ** 2), rls_cv.best_score_, rtol=1e-8)
print(f"RLSCV: alpha_ = {a:g}, leave-one-out MSE {-rls_cv.best_score_:.4f} (= {len(y)} refits)")

# 5. Multiple kernel learning on the input side: ALIGNF weights for a linear and two Gaussian kernels.
for method in ("unimkl", "align", "alignf"):
    mkl = AlignedKernelSum([Linear(), Gaussian(0.5), Gaussian(2.0)], method=method).fit(X, Y)
    print(f"  {method:7s} weights {np.round(mkl.weights_, 3)}")
model = IOKR(alpha=cv.alpha_, input_kernel=mkl).fit(X, Y)  # the learned kernel is an ordinary input kernel
print("IOKR with the ALIGNF kernel fitted:", model.n_features_in_, "input features")
