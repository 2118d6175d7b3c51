"""Safe model files: arrays in ``.npz`` plus JSON metadata with the library version and a SHA-256 checksum.

No pickle is ever written or read: files hold only numeric/string arrays and JSON. The public names are loaded on
first access, so the command line can use :mod:`iokr.io._atomic` without importing numpy.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

_LAZY = {
    "FORMAT_VERSION": "_model_file",
    "ModelFileError": "_model_file",
    "load_model_file": "_model_file",
    "save_model_file": "_model_file",
    "read_npz": "_npz",
}

__all__ = ["FORMAT_VERSION", "ModelFileError", "load_model_file", "read_npz", "save_model_file"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from ._model_file import FORMAT_VERSION, ModelFileError, load_model_file, save_model_file
    from ._npz import read_npz
