"""Retrieval's alpha by closed-form k-fold MRR against explicit refits on the training documents."""

import warnings

import numpy as np
import pytest
from _retrieval_refit import refit_fold_mrr
from sklearn.model_selection import KFold

from iokr.apps.retrieval import evaluate_retrieval, make_split, select_alpha
from iokr.datasets import load_parallel_text
from iokr.exceptions import GridEdgeWarning
from iokr.model_selection import fold_candidate_sets


@pytest.fixture(scope="module")
def split():
    _, english, spanish = load_parallel_text()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(english))[:160]
    return make_split(english, spanish, order[:100], order[100:])


def test_select_alpha_equals_refitting_on_each_fold(split):
    alphas = (1e-3, 1.0, 100.0)
    alpha, cv_mrr = select_alpha(split, alphas, n_folds=4, seed=0)
    folds = list(KFold(4, shuffle=True, random_state=0).split(np.arange(100)))
    assert fold_candidate_sets(split.Y_train, folds).indices[folds[0][1][0]].tolist() == folds[0][1].tolist()
    scores = [refit_fold_mrr(split.gram_train, split.Y_train, a, folds) for a in alphas]
    best = max(scores)  # ties: the largest alpha (the module's rule)
    assert alpha == max(a for a, s in zip(alphas, scores, strict=True) if s == best)
    assert cv_mrr == pytest.approx(max(scores), rel=1e-2)  # normalization statistics of all training documents


def test_cv_alpha_is_recorded_and_grid_edges_warn():
    _, english, spanish = load_parallel_text()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate_retrieval(english[:120], spanish[:120], n_splits=1, alpha="cv", alphas=(1e-6, 1e-5))
    assert result["per_split"][0]["alpha"] in (1e-6, 1e-5)
    assert any(issubclass(w.category, GridEdgeWarning) for w in caught)
    with pytest.raises(ValueError, match="'alpha'"):
        evaluate_retrieval(english[:20], spanish[:20], n_splits=1, alpha="best")
