"""iokr._docstrings: fragments substituted at import time, entries taken from another docstring."""

import pytest

from iokr._docstrings import fill_doc, parameters
from iokr.estimators import KronRLS, TwoStepRLS
from iokr.model_selection import ConditionalRankRLSCV, KronRLSCV, TwoStepRLSCV


def _owner(x, y):
    """Do something.

    Parameters
    ----------
    x : int
        First.
    y, z : float
        Second,
        on two lines.

    Returns
    -------
    out : int
        Result.
    """


def test_parameters_takes_named_entries_in_the_order_asked():
    assert parameters(_owner, "y, z", "x") == "y, z : float\n    Second,\n    on two lines.\nx : int\n    First."
    assert parameters(_owner) == "x : int\n    First.\ny, z : float\n    Second,\n    on two lines."


def test_parameters_names_a_missing_entry():
    with pytest.raises(KeyError, match="'w'"):
        parameters(_owner, "w")


def test_fill_doc_indents_each_line_as_its_placeholder():
    @fill_doc(block="a : int\n    Alpha.\n\nb : str\n    Beta.")
    def f():
        """Summary.

        Parameters
        ----------
        %(block)s
        """

    assert "\n        a : int\n            Alpha.\n\n        b : str\n            Beta.\n" in f.__doc__
    assert "%(" not in f.__doc__


def test_fill_doc_refuses_an_unknown_fragment():
    with pytest.raises(KeyError, match="'other'"):
        fill_doc(block="x")(type("C", (), {"__doc__": "Summary.\n\n    %(other)s\n"}))


@pytest.mark.parametrize("search, estimator", [(KronRLSCV, KronRLS), (TwoStepRLSCV, TwoStepRLS)])
def test_searches_show_the_estimators_words(search, estimator):
    # The search's fit documents its data exactly as the estimator's fit does (help() shows the full text).
    assert parameters(search.fit) == parameters(estimator.fit)
    assert search.predict.__doc__ == estimator.predict.__doc__


def test_search_class_docstrings_have_no_placeholder_left():
    for search in (KronRLSCV, ConditionalRankRLSCV, TwoStepRLSCV):
        assert "%(" not in search.__doc__ and "%(" not in search.fit.__doc__
    assert parameters(KronRLSCV, "tol") == parameters(KronRLS, "tol")


def test_fill_doc_on_a_class_fills_its_methods_and_properties():
    @fill_doc(x="x : int\n    The x.")
    class C:
        """Class.

        Parameters
        ----------
        %(x)s
        """

        def f(self, x):
            """Method.

            Parameters
            ----------
            %(x)s
            """

        @property
        def p(self):
            """Property.

            %(x)s
            """

    assert "\n        x : int\n            The x.\n" in C.__doc__
    assert "\n            x : int\n                The x.\n" in C.f.__doc__
    assert "\n            x : int\n                The x.\n" in C.p.__doc__
