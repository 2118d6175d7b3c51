"""Binary disambiguation of a target word from its context: RLS on a context kernel, primal prediction.

Labels are coded ``+1 / -1`` and fitted by kernel regularized least squares (the thesis's RLS classifier). The
regularization and the kernel's parameters are chosen by closed-form cross-validation on the training data only
(:class:`iokr.model_selection.RLSCV`: one factorization per kernel setting serves the whole alpha grid). Prediction
uses the primal weights of the linear context kernel, ``f(x) = x^T w + b``: a sparse dot product per context.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import ParameterGrid, StratifiedGroupKFold, StratifiedKFold
from sklearn.utils.validation import check_is_fitted

from ..metrics import auc
from ..model_selection import RLSCV
from ._kernels import BagOfWordsKernel, ContextKernel

SCORINGS = ("accuracy", "auc")


def _accuracy(y_true, y_pred):
    return float(np.mean(np.where(y_pred > 0, 1.0, -1.0) == y_true))


def _auc(y_true, y_pred):
    if np.unique(y_true).size < 2:  # a fold with one class has no AUC; count it as chance
        return 0.5
    return float(auc(y_true, y_pred))


class ContextRLSClassifier(ClassifierMixin, BaseEstimator):
    """RLS classifier on a context kernel, with alpha and kernel parameters chosen by cross-validation.

    Parameters
    ----------
    kernel : ContextKernel, optional
        Default :class:`BagOfWordsKernel` (window 5).
    param_grid : dict of str -> list, optional
        Kernel parameters to search (e.g. ``{"theta": [0.1, 0.3, 1.0]}``).
    alphas : array-like of shape (n_alphas,), optional
        Regularization grid (all > 0); ``np.logspace(-2, 4, 13)`` by default.
    cv : int, splitter or list of (train, test) pairs, default=5
        Folds: ``StratifiedGroupKFold`` when ``groups`` are given to ``fit``, ``StratifiedKFold`` otherwise (both
        shuffled with ``random_state``), or any complement-training splitter or fixed folds.
    scoring : {"accuracy", "auc"}, default="accuracy"
        Mean fold score that selects the setting.
    fit_intercept : bool, default=True
        Add the constant kernel 1 (a regularized bias ``b = sum_i a_i``).
    random_state : int, default=0
        Seed of the fold shuffling when ``cv`` is an int.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is coded +1.
    kernel_ : ContextKernel
        The kernel with the chosen parameters.
    alpha_ : float
    best_score_ : float
    cv_results_ : list of dict
        ``params``, ``alpha`` and ``score`` (mean fold score) for the best alpha of each kernel setting.
    dual_coef_ : ndarray of shape (n,)
    coef_ : ndarray of shape (n_features,)
        Primal input-space weights (:meth:`ContextKernel.primal_weights`).
    intercept_ : float
    n_features_in_ : int
    """

    def __init__(self, kernel=None, param_grid=None, alphas=None, cv=5, scoring="accuracy",
                 fit_intercept=True, random_state=0):
        self.kernel = kernel
        self.param_grid = param_grid
        self.alphas = alphas
        self.cv = cv
        self.scoring = scoring
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    def _splits(self, y, groups):
        cv = self.cv
        if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
            if cv < 2:
                raise ValueError(f"The 'cv' parameter of {type(self).__name__} must be an int >= 2 or a splitter. "
                                 f"Got {cv!r} instead.")
            splitter = (StratifiedGroupKFold(int(cv), shuffle=True, random_state=self.random_state) if groups is not None
                        else StratifiedKFold(int(cv), shuffle=True, random_state=self.random_state))
        elif hasattr(cv, "split") and not isinstance(cv, (str, bytes)):
            splitter = cv
        elif hasattr(cv, "__iter__") and not isinstance(cv, (str, bytes)):
            return [(np.asarray(tr), np.asarray(te)) for tr, te in cv]
        else:
            raise ValueError(f"The 'cv' parameter of {type(self).__name__} must be an int >= 2, a splitter or a list "
                             f"of (train, test) index pairs. Got {cv!r} instead.")
        index = np.zeros((y.size, 1))
        return [(np.asarray(tr), np.asarray(te)) for tr, te in splitter.split(index, y, groups)]

    def fit(self, X, y, groups=None):
        """Fit on contexts ``X`` (sparse, n x n_words*n_positions) and binary labels ``y`` (n,).

        Parameters
        ----------
        X : sparse matrix of shape (n, n_features)
            Context word-position matrices (from :class:`ContextFeaturizer`).
        y : array-like of shape (n,)
            Exactly two classes.
        groups : array-like of shape (n,), optional
            Documents the contexts come from; folds keep each group whole.

        Returns
        -------
        self : ContextRLSClassifier
            The fitted classifier.
        """
        owner = type(self).__name__
        kernel = BagOfWordsKernel() if self.kernel is None else self.kernel
        if not isinstance(kernel, ContextKernel):
            raise TypeError(f"The 'kernel' parameter of {owner} must be a ContextKernel. Got {kernel!r} instead.")
        if self.scoring not in SCORINGS:
            raise ValueError(f"The 'scoring' parameter of {owner} must be one of {SCORINGS}. Got {self.scoring!r}.")
        X = kernel.validate(X, "X")
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"'y' must have shape ({X.shape[0]},), got {y.shape}.")
        self.classes_ = np.unique(y)
        if self.classes_.size != 2:
            raise ValueError(f"{owner} needs exactly two classes in 'y', got {self.classes_.size}.")
        y_pm = np.where(y == self.classes_[1], 1.0, -1.0)
        if groups is not None:
            groups = np.asarray(groups)
            if groups.shape != y.shape:
                raise ValueError(f"'groups' must have shape {y.shape}, got {groups.shape}.")
        splits = self._splits(y_pm, groups)
        score = _accuracy if self.scoring == "accuracy" else _auc
        offset = 1.0 if self.fit_intercept else 0.0
        best = None
        self.cv_results_ = []
        for setting in ParameterGrid(self.param_grid or {}):
            candidate = clone(kernel).set_params(**setting)
            gram = candidate(X) + offset
            alphas = np.logspace(-2, 4, 13) if self.alphas is None else self.alphas
            search = RLSCV(alphas=alphas, kernel="precomputed", cv=splits, scoring=score).fit(gram, y_pm)
            self.cv_results_.append({"params": setting, "alpha": search.alpha_, "score": search.best_score_})
            if best is None or search.best_score_ > best[0]:
                best = (search.best_score_, candidate, search)
        self.best_score_, self.kernel_, search = best
        self.alpha_ = search.alpha_
        self.dual_coef_ = np.asarray(search.best_estimator_.dual_coef_, dtype=np.float64)
        self.coef_ = self.kernel_.primal_weights(X, self.dual_coef_)
        self.intercept_ = float(self.dual_coef_.sum()) * offset
        self.X_fit_ = X
        self.n_features_in_ = X.shape[1]
        return self

    def decision_function(self, X, *, path="primal"):
        """Compute real-valued scores ``f(x)`` (> 0 predicts ``classes_[1]``).

        Parameters
        ----------
        X : sparse matrix of shape (m, n_features)
            Context word-position matrices, featurized like the training contexts.
        path : {"primal", "dual"}, default="primal"
            ``"primal"``: the sparse dot product ``X @ coef_ + intercept_``; ``"dual"``:
            ``k(X, X_train) dual_coef_ + intercept_`` (same values; kept to check the primal path).

        Returns
        -------
        scores : ndarray of shape (m,)
            Decision value of each context.
        """
        check_is_fitted(self, "coef_")
        X = self.kernel_.validate(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"'X' has {X.shape[1]} features, but {type(self).__name__} was fitted with "
                             f"{self.n_features_in_}; featurize with the same fitted ContextFeaturizer.")
        if path == "primal":
            return np.asarray(X @ self.coef_).ravel() + self.intercept_
        if path == "dual":
            return self.kernel_(X, self.X_fit_) @ self.dual_coef_ + self.intercept_
        raise ValueError(f"'path' must be 'primal' or 'dual'. Got {path!r} instead.")

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : sparse matrix of shape (m, n_features)
            Context word-position matrices, featurized like the training contexts.

        Returns
        -------
        labels : ndarray of shape (m,)
            Predicted class of each context (one of ``classes_``).
        """
        check_is_fitted(self, "coef_")  # before reading classes_ (an AttributeError otherwise)
        return self.classes_[(self.decision_function(X) > 0).astype(np.intp)]
