"""Start-up time of a command: modules scikit-learn imports but ``iokr`` commands rarely use, loaded on first use.

scikit-learn 1.9 imports ``scipy.stats`` and ``pandas`` unconditionally (``sklearn/utils/fixes.py``, reached from
``sklearn.base``, which every ``iokr`` estimator subclasses): measured with ``python -X importtime``, 0.5 s and 0.3 s
of the 2.4 s that ``import iokr.apps.metabolites`` took, while ``identify`` calls neither; ``scipy.special``
(0.1 s, from ``sklearn.utils._array_api``) likewise. Before a command runs,
:func:`defer_unused_imports` puts a placeholder module for each of :data:`DEFERRED` into ``sys.modules``: an
``import`` of it binds the placeholder without running the package, and the first attribute read (``pd.DataFrame``,
``from scipy.stats import rankdata``, a submodule import reading ``__path__``) imports the real module, copies its
namespace into the placeholder and returns the real attribute. Code that uses these modules works unchanged, only
later; iokr's own uses of ``scipy.stats`` are imported inside the functions that need them (see
``tests/test_import_layers.py``, ``LAZY_THIRD_PARTY``).

Only modules that are installed and not imported yet get a placeholder (a missing package still fails where it is
imported, not later), and only the command line installs them: importing ``iokr`` changes nothing.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
import types

#: Modules given a placeholder before a command runs.
DEFERRED = ("scipy.stats", "scipy.special", "pandas")

_LOCK = threading.RLock()


class DeferredModule(types.ModuleType):
    """A placeholder in ``sys.modules`` that imports the real module on its first missing attribute."""

    def __getattr__(self, attribute):
        name = self.__name__
        with _LOCK:  # two threads reading a first attribute import the module once
            if sys.modules.get(name) is self:
                del sys.modules[name]
                try:
                    real = importlib.import_module(name)
                except BaseException:
                    sys.modules[name] = self
                    raise
                self.__dict__.update(real.__dict__)
        return getattr(sys.modules[name], attribute)


def _installed(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def defer_unused_imports(names=DEFERRED):
    """Put a :class:`DeferredModule` in ``sys.modules`` for each of ``names`` that is installed and not imported.

    Returns
    -------
    deferred : list of str
        The names given a placeholder.
    """
    deferred = []
    for name in names:
        if name in sys.modules or not _installed(name):
            continue
        module = DeferredModule(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        sys.modules[name] = module
        deferred.append(name)
    return deferred
