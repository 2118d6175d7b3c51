"""The CSI:FingerID-style baseline's pieces against direct computations on tiny data."""

import numpy as np
import pytest
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from experiments.baselines.metabolite import EPS, _log_odds_weights, fit_platt, select_alpha


def test_platt_scaling_matches_a_logistic_regression_on_platt_targets():
    rng = np.random.default_rng(0)
    d = rng.normal(size=(200, 3))
    bits = (d + 0.8 * rng.normal(size=d.shape) > 0).astype(float)
    a, b = fit_platt(d, bits)
    for j in range(3):
        # Platt's smoothed targets as sample weights of a duplicated data set: the same likelihood
        n_pos = bits[:, j].sum()
        t = np.where(bits[:, j] > 0, (n_pos + 1) / (n_pos + 2), 1 / (200 - n_pos + 2))
        X = np.concatenate([d[:, [j]], d[:, [j]]])
        y = np.concatenate([np.ones(200), np.zeros(200)])
        ref = LogisticRegression(C=1e10, tol=1e-10, max_iter=1000).fit(X, y, sample_weight=np.concatenate([t, 1 - t]))
        np.testing.assert_allclose([a[j], b[j]], [ref.coef_[0, 0], ref.intercept_[0]], rtol=1e-4, atol=1e-5)


def test_constant_bits_get_their_smoothed_frequency():
    d = np.random.default_rng(1).normal(size=(10, 2))
    a, b = fit_platt(d, np.column_stack([np.ones(10), np.zeros(10)]))
    np.testing.assert_allclose(a, 0.0)
    np.testing.assert_allclose(expit(b), [11 / 12, 1 / 12])


def test_log_odds_weights_give_the_bernoulli_log_likelihood():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=(3, 5))
    p[0, 0] = 1.0  # clipped to 1 - EPS
    y = (rng.uniform(size=(4, 5)) > 0.5).astype(float)
    w, c = _log_odds_weights(p)
    q = np.clip(p, EPS, 1 - EPS)
    direct = np.array([[np.sum(yy * np.log(qq) + (1 - yy) * np.log(1 - qq)) for yy in y] for qq in q])
    np.testing.assert_allclose(w @ y.T + c[:, None], direct)


def test_select_alpha_prefers_the_informative_regularization():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    bits = (X @ rng.normal(size=(4, 12)) > 0).astype(float)
    K = X @ X.T
    alpha, table = select_alpha(K, bits, n_folds=3, seed=0, alphas=(0.01, 1e6))
    assert alpha == pytest.approx(0.01) and table[0]["score"] > table[1]["score"]
