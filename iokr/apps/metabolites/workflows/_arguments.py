"""Checks of the workflows' arguments at the Python boundary: one clear error naming the parameter, what was
expected and what was received (the command line passes strings; a notebook may pass anything)."""

from __future__ import annotations

import os

from ...._validation import is_count


def check_path(value, name, function, *, optional=False, several=False):
    """``value`` as given when it is a path (``str`` or ``os.PathLike``), or a non-empty sequence of paths with
    ``several``; None only when ``optional``.

    Raises
    ------
    TypeError
        Naming ``function``'s parameter ``name``, what it takes and the type received.
    """
    if value is None and optional:
        return value
    if isinstance(value, (str, os.PathLike)):
        return value
    if several and isinstance(value, (list, tuple)) and value and all(isinstance(v, (str, os.PathLike))
                                                                       for v in value):
        return value
    expected = "a path (str or os.PathLike)" + (" or a non-empty list of paths" if several else "") + \
        (" or None" if optional else "")
    raise TypeError(f"The {name!r} parameter of {function} must be {expected}. Got {type(value).__name__} "
                    f"{value!r:.80} instead.")


def check_settings(value, cls, name, function):
    """``value`` when it is a ``cls`` instance, a default ``cls()`` for None."""
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    hint = f"; for a dict d, pass {cls.__name__}(**d)" if isinstance(value, dict) else ""
    raise TypeError(f"The {name!r} parameter of {function} must be an instance of {cls.__name__} or None. Got "
                    f"{type(value).__name__} instead{hint}.")


def check_exists(value, name, function):
    """``value`` when nothing is to be checked (None) or the path exists.

    Called before anything slow (the ready model's first training takes minutes), so a typo costs no waiting.

    Raises
    ------
    FileNotFoundError
        Naming ``function``'s parameter ``name`` and the path.
    """
    if value is not None and not os.path.exists(value):
        raise FileNotFoundError(f"The {name!r} parameter of {function}: {os.fspath(value)} does not exist.")
    return value


def check_output(value, name, function, inputs, *, overwrite):
    """Refuse an output file that is one of the ``inputs``, a folder, or an existing file without ``overwrite``.

    Called before any work: a training takes minutes, and an input replaced by a model is lost.

    Parameters
    ----------
    value : str, os.PathLike or None
        The output file (None: nothing to check).
    name, function : str
        The parameter and the function, for messages.
    inputs : dict of {str: path, sequence of paths or None}
        The function's input parameters.
    overwrite : bool
        Whether an existing file may be replaced.

    Raises
    ------
    ValueError
        ``value`` is one of the inputs (whatever ``overwrite`` says).
    FileExistsError
        ``value`` is a folder, or an existing file and ``overwrite`` is False.
    """
    if value is None:
        return
    path = os.fspath(value)
    if os.path.exists(path):
        for input_name, paths in inputs.items():
            for given in [paths] if isinstance(paths, (str, os.PathLike)) else (paths or ()):
                if os.path.exists(given) and os.path.samefile(given, path):
                    raise ValueError(f"The {name!r} parameter of {function}: {path} is the {input_name!r} input; an "
                                     "output never replaces an input.")
        if os.path.isdir(path):
            raise FileExistsError(f"The {name!r} parameter of {function}: {path} is a folder; {function} writes a "
                                  "model file.")
        if not overwrite:
            raise FileExistsError(f"The {name!r} parameter of {function}: {path} exists; pass overwrite=True to "
                                  "replace it.")


def check_min_structures(value, function):
    """``value`` as an int when it is an integer >= 1 (not a bool), as ``--min-structures`` requires.

    Raises
    ------
    ValueError
        Naming ``function``'s ``min_structures`` parameter and the value received.
    """
    if not is_count(value):
        raise ValueError(f"The 'min_structures' parameter of {function} must be an int >= 1. Got {value!r}.")
    return int(value)
