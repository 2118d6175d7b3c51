"""Reading untrusted files with bounded memory, and safe model files.

- :func:`iter_lines`: the line reader of every text-file reader (plain or gzip detected from the content), with a
  cap on the line length and on the compression ratio;
- :func:`loads_json` / :func:`load_json_file`: JSON with nesting, integer-length and file-size limits, failing with
  one :class:`JSONDataError` line;
- :func:`read_npz`, :func:`save_model_file` / :func:`load_model_file`: arrays in ``.npz`` plus JSON metadata with the
  library version and SHA-256 checksums, streamed and checked member by member. No pickle is ever written or read.

Private helpers of the command line and the applications: :mod:`._atomic` (outputs written whole or not at all,
temporaries of killed runs swept), :mod:`._ownership` (one run owns an output: an ``flock`` claim beside it) and
:mod:`._workers` (worker processes that die with their parent).

Caps default to the values of :func:`iokr.get_config` (``max_line_bytes``, ``max_compression_ratio``). The public
names are loaded on first access, so the command line can use :mod:`iokr.io._atomic` without importing numpy.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

_LAZY = {
    "MAX_JSON_DEPTH": "_json", "MAX_JSON_FILE_BYTES": "_json", "JSONDataError": "_json", "load_json_file": "_json",
    "loads_json": "_json", "MAX_COMPRESSION_RATIO": "_lines", "MAX_LINE_BYTES": "_lines",
    "RATIO_CHECK_BYTES": "_lines", "check_expansion": "_lines", "iter_lines": "_lines", "LegacyLines": "_lines", "read_capped": "_lines",
    "FORMAT_VERSION": "_model_file", "ModelFileError": "_model_file", "load_model_file": "_model_file",
    "save_model_file": "_model_file", "read_npz": "_npz", "atomic_open": "_atomic",
}

__all__ = [
    "FORMAT_VERSION",
    "MAX_COMPRESSION_RATIO",
    "MAX_JSON_DEPTH",
    "MAX_JSON_FILE_BYTES",
    "MAX_LINE_BYTES",
    "RATIO_CHECK_BYTES",
    "JSONDataError",
    "ModelFileError",
    "atomic_open",
    "check_expansion",
    "iter_lines",
    "LegacyLines",
    "load_json_file",
    "load_model_file",
    "loads_json",
    "read_capped",
    "read_npz",
    "save_model_file",
]


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
    from ._atomic import atomic_open
    from ._json import MAX_JSON_DEPTH, MAX_JSON_FILE_BYTES, JSONDataError, load_json_file, loads_json
    from ._lines import (
        MAX_COMPRESSION_RATIO,
        MAX_LINE_BYTES,
        RATIO_CHECK_BYTES,
        check_expansion,
        iter_lines,
        read_capped,
    )
    from ._model_file import FORMAT_VERSION, ModelFileError, load_model_file, save_model_file
    from ._npz import read_npz
