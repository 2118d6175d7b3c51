"""numpydoc validation of the public API: every name exported by ``iokr`` and by the metabolite app
(``iokr.apps.metabolites.__all__``), and every public method or property defined in iokr (methods inherited from
scikit-learn keep scikit-learn's docstrings and are not checked here).

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

import importlib
import importlib.util
import inspect

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

IGNORED = {"ES01", "SA01", "EX01", "RT02", "GL01", "GL02"}


def _public_names(module_name):
    module = importlib.import_module(module_name)
    names = []
    for name in module.__all__:
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue  # __version__, column tuples, defaults
        names.append(f"{module_name}.{name}")
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
                names.append(f"{module_name}.{name}.{attr}")
    return names


PUBLIC_NAMES = _public_names("iokr")

#: The metabolite app's optional dependencies: its other tests skip without them, and so does its part here.
APP_MISSING = [name for name in ("rdkit", "matchms") if importlib.util.find_spec(name) is None]
APP_SKIP_REASON = f"the metabolite app needs {' and '.join(APP_MISSING)} (pip install 'iokr[chem]')"
APP_NAMES = [] if APP_MISSING else _public_names("iokr.apps.metabolites")


def _app_params():
    if APP_MISSING:
        return [pytest.param("iokr.apps.metabolites", marks=pytest.mark.skip(reason=APP_SKIP_REASON))]
    return APP_NAMES


def test_public_api_is_covered():
    assert len(PUBLIC_NAMES) > 80 and "iokr.IOKR.fit" in PUBLIC_NAMES and "iokr.CandidateFile.shape" in PUBLIC_NAMES


@pytest.mark.skipif(bool(APP_MISSING), reason=APP_SKIP_REASON)
def test_app_api_is_covered():
    assert len(APP_NAMES) > 150 and "iokr.apps.metabolites.MetaboliteIdentifier.fit" in APP_NAMES
    assert "iokr.apps.metabolites.Spectra.shape" in APP_NAMES  # properties too
    assert "iokr.apps.metabolites.PeakProductKernel.diag" in APP_NAMES  # methods inherited from iokr.Kernel too


def _check(name):
    result = numpydoc_validate.validate(name)
    errors = [(code, message) for code, message in result["errors"] if code not in IGNORED]
    assert not errors, f"{name} ({result['file']}:{result['file_line']}):\n" + "\n".join(
        f"  {code}: {message}" for code, message in errors)


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_docstring(name):
    _check(name)


@pytest.mark.parametrize("name", _app_params())
def test_app_docstring(name):
    _check(name)
