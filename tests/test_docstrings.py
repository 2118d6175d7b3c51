"""numpydoc validation of the public API: every name exported by ``iokr`` and every public method or property
defined in iokr (methods inherited from scikit-learn keep scikit-learn's docstrings and are not checked here).

Ignored error codes, for every object:

- ``ES01`` (no extended summary), ``SA01`` (no See Also section), ``EX01`` (no Examples section): optional
  sections. A one-line summary is enough for many methods; examples and cross-references live in the user guide
  and in the class docstrings where they help. scikit-learn's ``test_docstrings.py`` skips the same three for
  methods.
- ``RT02`` (first line of a Returns entry must be only the type): we name returned values
  (``scores : ndarray of shape (n_queries,)``) as scikit-learn does; scikit-learn ignores RT02 for the same reason.
- ``GL01`` / ``GL02`` (blank-line placement around the summary): layout, not content; scikit-learn ignores both.

``GL08`` (no docstring) is *not* ignored: methods inherited from scikit-learn (``get_params``, ``set_params``,
``score`` of the mixins ...) are not collected at all, since their docstrings are scikit-learn's; every method and
property iokr defines, including those inherited from iokr base classes, must have one.

Everything else is enforced: every parameter documented with a type and a description (PR01-PR10), a Returns
section with descriptions where a function returns (RT01, RT03), summaries that are one line, start with a capital
and end with a period in the imperative mood (SS01-SS06), known section names and order (GL03-GL10).
"""

import inspect

import pytest

import iokr

numpydoc_validate = pytest.importorskip("numpydoc.validate")

IGNORED = {"ES01", "SA01", "EX01", "RT02", "GL01", "GL02"}


def _public_names():
    names = []
    for name in iokr.__all__:
        obj = getattr(iokr, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue  # __version__
        names.append(f"iokr.{name}")
        if inspect.isclass(obj):
            for attr in sorted(dir(obj)):
                if attr.startswith("_"):
                    continue
                static = inspect.getattr_static(obj, attr)
                target = static.fget if isinstance(static, property) else getattr(obj, attr)
                if not (isinstance(static, property) or inspect.isfunction(target) or inspect.ismethod(target)):
                    continue
                if not getattr(target, "__module__", "").startswith("iokr"):
                    continue  # inherited from scikit-learn (get_params, set_params, ...)
                names.append(f"iokr.{name}.{attr}")
    return names


PUBLIC_NAMES = _public_names()


def test_public_api_is_covered():
    assert len(PUBLIC_NAMES) > 80 and "iokr.IOKR.fit" in PUBLIC_NAMES and "iokr.CandidateFile.shape" in PUBLIC_NAMES


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_docstring(name):
    result = numpydoc_validate.validate(name)
    errors = [(code, message) for code, message in result["errors"] if code not in IGNORED]
    assert not errors, f"{name} ({result['file']}:{result['file_line']}):\n" + "\n".join(
        f"  {code}: {message}" for code, message in errors)
