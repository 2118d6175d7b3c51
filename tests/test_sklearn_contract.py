"""The scikit-learn estimator contract, through ``parametrize_with_checks``, for every public estimator.

Checks that cannot apply to a structured-output, pairwise or string estimator are expected failures, each with its
reason (``tests/reference``: ``SKLEARN_NOT_APPLICABLE``); the regressors RLS, RLSCV and RankRLS run the full
regressor checks. Kernels and ContextFeaturizer have no ``fit(X, y)``: they get the API checks that do not fit.
"""

import warnings

import numpy as np
import pytest
from reference import IOKR_LIKE_NOT_APPLICABLE, IOKR_LIKE_SKLEARN_CHECKS, SKLEARN_NOT_APPLICABLE
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import estimator_checks
from sklearn.utils.estimator_checks import estimator_checks_generator, parametrize_with_checks

from iokr import (
    IOKR,
    IOKRCV,
    MPIOKR,
    MPIOKRCV,
    RLS,
    RLSCV,
    ConditionalRankRLS,
    ConditionalRankRLSCV,
    ContextFeaturizer,
    ContextRLSClassifier,
    KronRLS,
    KronRLSCV,
    RankRLS,
    RankRLSCV,
    SegmentedStringKDE,
    SketchedIOKR,
    StringKDE,
    TwoStepRLS,
    TwoStepRLSCV,
)
from iokr.kernels import (
    Gaussian,
    GaussianTanimoto,
    Linear,
    Normalized,
    Polynomial,
    RandomFourierFeatures,
    Tanimoto,
    WeightedSum,
)
from iokr.strings import NgramKernel, SequenceNgramKernel, SequencePolynomialKernel
from iokr.text import BagOfWordsKernel, ContextualWeightingKernel, TransformedContextKernel, WordPositionKernel

ESTIMATORS = [
    IOKR(),
    IOKR(input_kernel=Gaussian(0.5), output_kernel=Tanimoto(), decoding="cosine"),
    SketchedIOKR(n_components=5, random_state=0),
    IOKRCV(alphas=[0.1, 1.0, 10.0]),
    MPIOKR(approximation="joint"),
    MPIOKRCV(alphas=[0.1, 1.0]),
    RLS(),
    RLS(kernel=Gaussian(0.5), center=True, normalize=True),
    RLS(kernel="precomputed"),
    RLSCV(),
    RankRLS(),
    RankRLS(kernel=Gaussian(0.5)),
    RankRLSCV(alphas=[0.1, 1.0]),
    KronRLS(),
    ConditionalRankRLS(),
    TwoStepRLS(),
    KronRLSCV(alphas=[0.1, 1.0]),
    ConditionalRankRLSCV(alphas=[0.1, 1.0]),
    TwoStepRLSCV(alphas=[0.1, 1.0]),
    StringKDE(),
    SegmentedStringKDE(),
    ContextRLSClassifier(),
]


_NOT_A_KERNEL = ("the check turns the precomputed Gram into an invalid kernel (negated, or truncated to integers), "
                 "which is no longer positive semidefinite; RLS refuses it with a LinAlgError naming the kernel")


def expected_failed_checks(estimator):
    reasons = dict(SKLEARN_NOT_APPLICABLE.get(type(estimator).__name__, {}))
    if isinstance(estimator, RLS) and estimator.kernel == "precomputed":
        reasons.update(check_positive_only_tag_during_fit=_NOT_A_KERNEL, check_estimators_dtypes=_NOT_A_KERNEL)
    return reasons


def _check_name(check):
    return getattr(check, "func", check).__name__


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_contract(estimator, check):
    reason = expected_failed_checks(estimator).get(_check_name(check))
    failure = None
    with warnings.catch_warnings():
        # Some checks fit on one or two examples: the warnings they raise are about the data, not the contract.
        warnings.simplefilter("ignore", UserWarning)
        try:
            check(estimator)
        except Exception as error:
            if reason is None:
                raise
            failure = f"{type(error).__name__}: {' '.join(str(error).split())[:120]}"
    if failure is not None:
        # Outside the except block: reporting the expected failure then formats one short frame instead of the
        # check's whole traceback (which made ~300 expected failures cost tens of seconds).
        pytest.xfail(f"{reason} (got {failure})")


def _check_names(estimator):
    return {_check_name(check) for _, check in estimator_checks_generator(estimator, mark=None)}


def test_iokr_like_check_lists_are_consistent():
    """The checks run one by one in tests/estimators (IOKR_LIKE_SKLEARN_CHECKS) are not among those that cannot
    apply, and every check that cannot apply is one scikit-learn generates."""
    applicable, not_applicable = set(IOKR_LIKE_SKLEARN_CHECKS), set(IOKR_LIKE_NOT_APPLICABLE)
    assert not applicable & not_applicable
    assert not_applicable <= _check_names(IOKR())


def test_every_expected_failure_names_a_generated_check():
    for estimator in ESTIMATORS:
        unknown = set(expected_failed_checks(estimator)) - _check_names(estimator)
        assert not unknown, (type(estimator).__name__, unknown)


# -- objects without fit(X, y): kernels and the featurizer -------------------------------------------------------

API_CHECKS = [
    "check_no_attributes_set_in_init",
    "check_get_params_invariance",
    "check_set_params",
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_valid_tag_types",
]

NON_FITTING = [
    Linear(), Polynomial(degree=3, gamma=0.5, coef0=0.0), Gaussian(0.3), Tanimoto("minmax"), GaussianTanimoto(2.0),
    Normalized(Polynomial()), WeightedSum([Linear(), Gaussian(0.5)], [0.5, 0.5]), RandomFourierFeatures(n_components=8),
    NgramKernel(n=2), SequenceNgramKernel(Gaussian(0.1), n=2), SequencePolynomialKernel(n=2),
    BagOfWordsKernel(window=2), ContextualWeightingKernel(), WordPositionKernel(theta=0.2),
    TransformedContextKernel(theta=0.3), ContextFeaturizer(window=3),
]


@pytest.mark.parametrize("check_name", API_CHECKS)
@pytest.mark.parametrize("obj", NON_FITTING, ids=lambda o: type(o).__name__)
def test_api_checks_of_kernels_and_featurizer(check_name, obj):
    getattr(estimator_checks, check_name)(type(obj).__name__, clone(obj))


@pytest.mark.parametrize("obj", NON_FITTING, ids=lambda o: type(o).__name__)
def test_clone_keeps_nested_parameters(obj):
    copy = clone(obj)
    assert copy is not obj and repr(copy) == repr(obj)
    assert set(copy.get_params(deep=True)) == set(obj.get_params(deep=True))


def test_context_classifier_predict_before_fit_raises_not_fitted():
    # Regression: predict read classes_ before checking the fit and raised an AttributeError.
    with pytest.raises(NotFittedError, match="ContextRLSClassifier instance is not fitted yet"):
        ContextRLSClassifier().predict(np.zeros((2, 10)))


def test_regressors_declare_multi_output_and_refuse_missing_y():
    # Regression: y of shape (n, 1) made scikit-learn expect a DataConversionWarning (multi_output tag unset), and
    # fit(X, None) raised a message scikit-learn does not recognise.
    X = np.random.default_rng(0).normal(size=(6, 2))
    for estimator in (RLS(), RLSCV(alphas=[1.0])):
        assert estimator.__sklearn_tags__().target_tags.multi_output
        with pytest.raises(ValueError, match="requires y to be passed, but the target y is None"):
            estimator.fit(X, None)
    assert RLS(kernel="precomputed").__sklearn_tags__().input_tags.pairwise


def test_feature_count_and_1d_messages_follow_scikit_learn():
    X = np.random.default_rng(0).normal(size=(6, 3))
    model = RLS().fit(X, X[:, 0])
    with pytest.raises(ValueError, match="X has 2 features, but RLS is expecting 3 features as input"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="Reshape your data"):
        model.predict(X[0])
