"""Hold-out sets from the ``cv`` and ``groups`` parameters of the closed-form CV estimators.

``cv=None`` is exact leave-one-out (leave-one-group-out when groups are given), an int is ``KFold`` (``GroupKFold``
with groups), and any scikit-learn splitter (or iterable of ``(train, test)`` pairs) is honoured, groups included.
The closed form predicts each test set from a model trained on *all other* examples, so every split's training side
must be the complement of its test side (true of KFold, GroupKFold, LeaveOneGroupOut, StratifiedKFold, repeated
variants; not of ShuffleSplit with a ``train_size`` or of TimeSeriesSplit).
"""

from __future__ import annotations

import numbers

import numpy as np

from ..linalg.developer import check_holdouts


def resolve_groups(init_groups, fit_groups, n, owner):
    """The groups to use: given either to the constructor or to ``fit``, not both; validated against ``n``."""
    if init_groups is not None and fit_groups is not None:
        raise ValueError(f"{owner}: 'groups' was given both to the constructor and to fit; give it in one place.")
    groups = init_groups if init_groups is not None else fit_groups
    if groups is None:
        return None
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n:
        raise ValueError(f"{owner}: 'groups' must have one label per training example, shape ({n},); "
                         f"got shape {groups.shape}.")
    return groups


def holdout_splits(cv, n, groups=None, y=None, owner="estimator"):
    """Test index sets for ``n`` examples, and a short description of the scheme.

    Returns
    -------
    holdouts : list of ndarray of int
        One test set per split, each leaving a non-empty training side (its complement).
    scheme : str
        ``"leave-one-out"``, ``"leave-one-group-out"``, ``"KFold(5)"``, or the splitter's repr.
    """
    # sklearn.model_selection loads sklearn.metrics and scipy.stats (0.5 s), which identify never uses
    from sklearn.model_selection import GroupKFold, KFold, LeaveOneGroupOut  # noqa: PLC0415 - start-up time

    index = np.arange(n)[:, None]
    if cv is None:
        if groups is None:
            if n < 2:
                raise ValueError(f"{owner}: leave-one-out needs at least 2 training examples, got n_samples={n}.")
            return [np.array([i]) for i in range(n)], "leave-one-out"
        splitter, scheme = LeaveOneGroupOut(), "leave-one-group-out"
    elif isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        if cv < 2:
            raise ValueError(f"The 'cv' parameter of {owner} must be None, an int >= 2, or a splitter. Got {cv!r}.")
        if cv > n:
            raise ValueError(f"{owner}: cv={cv} folds need at least {cv} examples, got {n}.")
        splitter = GroupKFold(int(cv)) if groups is not None else KFold(int(cv))
        scheme = f"{type(splitter).__name__}({int(cv)})"
    elif hasattr(cv, "split") and not isinstance(cv, (str, bytes)):
        splitter, scheme = cv, repr(cv)
    elif hasattr(cv, "__iter__") and not isinstance(cv, (str, bytes)):
        splitter, scheme = None, "given splits"
    else:
        raise ValueError(f"The 'cv' parameter of {owner} must be None, an int >= 2, a splitter with a 'split' "
                         f"method or an iterable of (train, test) pairs. Got {cv!r} instead.")
    if splitter is None:
        pairs = list(cv)
    else:
        if isinstance(splitter, LeaveOneGroupOut) and np.unique(groups).size < 2:
            raise ValueError(f"{owner}: leave-one-group-out needs at least 2 distinct groups; all examples share "
                             "one group, so holding it out would leave the training side empty.")
        try:
            pairs = list(splitter.split(index, y, groups))
        except ValueError as exc:
            raise ValueError(f"{owner}: the splitter {scheme} failed: {exc}") from exc
    holdouts = [_complement_test_side(k, pair, n, owner) for k, pair in enumerate(pairs)]
    return check_holdouts(holdouts, n, "cv splits"), scheme


def _complement_test_side(k, pair, n, owner):
    """Test indices of the ``k``-th (train, test) pair, checked to be non-empty and the complement of train."""
    train, test = (np.asarray(part) for part in pair)
    if test.size == 0:
        raise ValueError(f"{owner}: split {k} has an empty test side.")
    if train.size == 0:
        raise ValueError(f"{owner}: split {k} leaves the training side empty.")
    test = test.astype(np.intp) if test.dtype != bool else np.flatnonzero(test)
    train = train.astype(np.intp) if train.dtype != bool else np.flatnonzero(train)
    if train.size + test.size != n or np.union1d(train, test).size != n:
        raise ValueError(
            f"{owner}: split {k} trains on {train.size} examples and tests on {test.size} of {n}; the closed "
            "form needs the training side to be exactly the complement of the test side (use KFold, GroupKFold, "
            "LeaveOneGroupOut, StratifiedKFold or their repeated variants)."
        )
    return test
