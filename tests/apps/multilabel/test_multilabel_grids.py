"""Multi-label default grids: their extent, the tie rule along alpha, and the grid-edge warnings."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import KFold

from iokr.apps.multilabel import DEFAULT_ALPHAS, DEFAULT_GAMMA_SCALES, GridEdgeWarning, select_multilabel
from iokr.apps.multilabel._selection import closed_form_search, default_kernels, edge_warnings, median_sq_distance
from iokr.kernels import Gaussian


def test_default_grids_are_log_spaced_and_as_documented():
    """alpha: 1e-4..1e3 half a decade apart; gamma scales: 4^-5..4^2 a factor 4 apart (module comments, docs)."""
    np.testing.assert_allclose(np.diff(np.log10(DEFAULT_ALPHAS)), 0.5, rtol=0, atol=1e-12)
    assert (min(DEFAULT_ALPHAS), max(DEFAULT_ALPHAS)) == pytest.approx((1e-4, 1e3), rel=1e-12)
    np.testing.assert_allclose(np.diff(np.log(DEFAULT_GAMMA_SCALES) / np.log(4)), 1.0, rtol=0, atol=1e-12)
    assert (min(DEFAULT_GAMMA_SCALES), max(DEFAULT_GAMMA_SCALES)) == (4.0 ** -5, 16.0)


def test_default_kernels_are_linear_then_the_widths_in_grid_order(rng):
    X = rng.normal(size=(40, 3))
    kernels = default_kernels(X, DEFAULT_GAMMA_SCALES)
    assert kernels[0] == "linear" and len(kernels) == 1 + len(DEFAULT_GAMMA_SCALES)
    np.testing.assert_allclose([k.gamma for k in kernels[1:]],
                               np.array(DEFAULT_GAMMA_SCALES) / median_sq_distance(X), rtol=1e-14)


def separable(rng, n=60, n_labels=4):
    Y = (rng.random((n, n_labels)) < 0.4).astype(np.float64)
    X = 5.0 * (2.0 * Y - 1.0) + 0.1 * rng.normal(size=Y.shape)
    return X, Y


def test_equal_cv_scores_go_to_the_larger_alpha(rng):
    """Separable data: every small alpha decodes the same sets (a plateau of exactly equal scores). The search takes
    the largest alpha of the plateau whatever the order of the given grid, not the grid's lower edge."""
    X, Y = separable(rng)
    folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    alphas = np.logspace(-6, 3, 10)
    search = closed_form_search(X, Y, folds, alphas=alphas[::-1][[3, 0, 9, 5, 1, 8, 2, 7, 4, 6]], kernels=["linear"])
    mean = search.cv_results_["mean_test_score"]
    plateau = search.cv_results_["param_alpha"][mean == mean.max()]
    assert plateau.size >= 3  # the case this test is about: several alphas share the best score
    assert search.alpha_ == plateau.max() > alphas.min()
    np.testing.assert_array_equal(search.cv_results_["param_alpha"], np.sort(alphas)[::-1])


def test_plateau_of_small_alphas_raises_no_edge_warning(rng):
    X, Y = separable(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GridEdgeWarning)
        _, _, record = select_multilabel(X, Y, alphas=np.logspace(-6, 3, 10), input_kernels=["linear"],
                                         scalings=("none",), output_normalizations=(True,), cv=3)
    assert record["grid_edge"] == [] and record["best"]["alpha"] > 1e-6


KERNELS = ["linear", Gaussian(gamma=0.01), Gaussian(gamma=0.04), Gaussian(gamma=0.16)]


@pytest.mark.parametrize(("alpha", "kernel", "expected"), [
    (1e-3, KERNELS[2], ["alpha=0.001 is at the edge of the alpha grid [0.001, 10]"]),
    (10.0, KERNELS[2], ["alpha=10 is at the edge of the alpha grid [0.001, 10]"]),
    (0.1, KERNELS[1], ["Gaussian gamma=0.01 is at the edge of the width grid [0.01, 0.16]"]),
    (0.1, KERNELS[3], ["Gaussian gamma=0.16 is at the edge of the width grid [0.01, 0.16]"]),
    (1e-3, KERNELS[3], ["alpha=0.001 is at the edge", "Gaussian gamma=0.16 is at the edge"]),
    (0.1, KERNELS[2], []),
    (0.1, "linear", []),  # the linear kernel has no width
])
def test_edge_warnings_name_each_grid_edge(alpha, kernel, expected):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        messages = edge_warnings(alpha, [1e-3, 0.1, 10.0], kernel, KERNELS)
    assert len(messages) == len(expected) == len(caught)
    for message, start, warning in zip(messages, expected, caught, strict=True):
        assert message.startswith(start)
        assert warning.category is GridEdgeWarning and str(warning.message).startswith(message)
