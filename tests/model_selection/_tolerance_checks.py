"""Shared checks of the tolerance route of the path searches (IOKRCV, RLSCV) against their exact route."""

import numpy as np


def assert_tolerance_route_within_bounds(loose, exact, tol):
    """``loose`` (fitted with ``tol``) selects ``exact``'s alpha, with fewer skeleton products, within its bounds."""
    assert loose.alpha_ == exact.alpha_
    assert loose.skeleton_alphas_[0].size < exact.skeleton_alphas_[0].size
    results, reference = loose.cv_results_, exact.cv_results_
    diff = np.abs(results["mean_test_score"] - reference["mean_test_score"])
    assert np.all(diff <= results["mean_test_score_bound"] + reference["mean_test_score_bound"])
    assert np.all(results["mean_test_score_bound"] <= tol * np.abs(reference["mean_test_score"]))
    split_diff = np.abs(results["split_test_scores"] - reference["split_test_scores"])
    assert np.all(split_diff <= results["split_test_score_bound"] + reference["split_test_score_bound"])
    assert results["split_test_score_bound"].shape == results["split_test_scores"].shape
