"""RLS and RankRLS with closed-form cross-validation, on real candidate lists (needs RDKit: pip install 'iokr[chem]').

User guide: docs/rls_rankrls.md. Bundled PubChem candidate lists (30 of the 60) with the scores of the published
IOKR model (Brouard et al. 2016), about 10 seconds:

    python examples/ranking.py

The question: how much of the published model's ranking of a list is predictable from the candidate structure
alone (fingerprints), for a list never seen in training? Each list is a query; RankRLS learns the within-list order
from the others (leave-query-out in closed form); RLS regresses the raw scores.
"""
# requires: rdkit

import tarfile
import tempfile
from pathlib import Path

import numpy as np

from iokr import RLSCV, RankRLS
from iokr.apps.metabolites import CandidateStore, Fingerprinter, read_candidate_lists
from iokr.datasets import BUNDLED_METABOLITES
from iokr.kernels import Tanimoto
from iokr.metrics import concordance_index, true_candidate_rank

# 30 of the bundled lists, extracted to a folder (reading all 60 takes about twice as long).
folder = Path(tempfile.mkdtemp(prefix="iokr_lists_"))
with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
    for member in sorted((m for m in tar.getmembers() if m.name.endswith(".csv")), key=lambda m: m.name)[:30]:
        (folder / Path(member.name).name).write_bytes(tar.extractfile(member).read())
store = CandidateStore(":memory:", Fingerprinter("morgan_counts+maccs"))
store.attach_cache(BUNDLED_METABOLITES["fingerprint_cache"])  # fingerprints precomputed for the bundled lists
lists = [lst for lst in read_candidate_lists(folder, store)
         if lst.scores is not None and lst.true_index is not None and len(lst) >= 10]

# 25 candidates per list (the true structure always kept), so the dense Gram stays small.
rng = np.random.default_rng(0)
X, y, qids, is_true = [], [], [], []
for q, lst in enumerate(lists):
    others = np.delete(np.arange(len(lst)), lst.true_index)
    keep = np.concatenate([[lst.true_index], rng.choice(others, min(24, others.size), replace=False)])
    X.append(store.fingerprints([lst.structures[i] for i in keep]))
    y.append(lst.scores[keep])
    qids.append(np.full(keep.size, q))
    is_true.append(np.arange(keep.size) == 0)
X, y, qids, is_true = (np.concatenate(v) for v in (X, y, qids, is_true))
K = Tanimoto()(X)  # Tanimoto kernel <a, b> / (|a|^2 + |b|^2 - <a, b>) on fingerprint counts
print(f"{len(lists)} lists, {len(y)} candidates, {X.shape[1]} fingerprint features")


def per_query_concordance(pred):
    return np.mean([concordance_index(y[qids == q], pred[qids == q]) for q in range(len(lists))])


alphas = np.logspace(-3, 2, 6)
model = RankRLS(alpha=1.0, kernel="precomputed").fit(K, y, qids)
for a in alphas:
    lqo = model.leave_query_out(alpha=a)  # one eigendecomposition of W K W serves every alpha
    print(f"  RankRLS alpha={a:g}: leave-query-out concordance with the published order {per_query_concordance(lqo):.3f}")

# Closed form == retraining without the query (checked for the first list).
q0 = qids == 0
refit = RankRLS(alpha=1.0, kernel="precomputed").fit(K[np.ix_(~q0, ~q0)], y[~q0], qids[~q0])
pred = refit.predict(K[np.ix_(q0, ~q0)])
lqo = model.leave_query_out()
assert np.allclose(pred - pred.mean(), lqo[q0] - lqo[q0].mean(), rtol=1e-6, atol=1e-8)
print("  leave-query-out == retraining without the list: checked")

# RLS on raw scores (a regression loss mixes the lists' score scales), leave-one-list-out in closed form: RLSCV
# with the lists as groups calls the scoring on every held-out list's exact hold-out predictions.
rls = RLSCV(alphas=alphas, kernel="precomputed", cv=None, groups=qids,
            scoring=lambda y_true, y_pred: concordance_index(y_true, y_pred)).fit(K, y)
print(f"  RLS (regression), leave-list-out concordance {rls.best_score_:.3f} at alpha {rls.alpha_:g}")

# Where does a structure-only ranker put the true structure? (a prior, no spectrum used)
best = RankRLS(alpha=alphas[np.argmax([per_query_concordance(model.leave_query_out(alpha=a)) for a in alphas])],
               kernel="precomputed").fit(K, y, qids)
lqo = best.leave_query_out()
ranks = [true_candidate_rank(lqo[qids == q], int(np.flatnonzero(is_true[qids == q])[0])) for q in range(len(lists))]
published = [true_candidate_rank(y[qids == q], 0) for q in range(len(lists))]
print(f"median rank of the true structure among 25: structure-only RankRLS {np.median(ranks):.1f}, "
      f"published IOKR scores {np.median(published):.1f}")
