"""Docstring text written once and shared: an estimator's parameters in the search that refits it, a search's
common entries in every search.

A docstring names a fragment on a line of its own, ``%(name)s``, indented as the fragment's lines should stand;
:func:`fill_doc` substitutes it when the function or class is defined (import time; on a class, in its methods'
docstrings too), so ``help()``, Sphinx and numpydoc read the full text. :func:`parameters` takes entries from
another docstring's Parameters section, so the owner of a parameter (the estimator) keeps its docstring whole where
it is written, and the search that forwards the parameter shows the same words. Where a method's whole contract is
another's (a search predicting through its ``best_estimator_``), the code base assigns ``__doc__`` directly instead.
"""

from __future__ import annotations

import inspect
import re
import textwrap

__all__ = ["fill_doc", "parameters"]

_FIELD = re.compile(r"^(?P<indent>[ \t]*)%\((?P<name>\w+)\)s[ \t]*$", re.MULTILINE)
_RULE = re.compile(r"^-{3,}$")


def fill_doc(**fragments):
    """Return a decorator replacing each line ``%(name)s`` of a docstring by ``fragments[name]``.

    Parameters
    ----------
    **fragments : str
        Text of each fragment, at any indentation (it is dedented, then indented as its placeholder).

    Returns
    -------
    decorate : callable
        Takes a function or class, substitutes its ``__doc__`` in place and returns it; for a class, also the
        docstrings of the functions and properties its body defines. A placeholder without a fragment raises a
        ``KeyError`` naming it; docstrings stripped by ``python -OO`` are left as they are.
    """

    def replace(match):
        name = match["name"]
        if name not in fragments:
            raise KeyError(f"fill_doc: the docstring names the fragment {name!r}, but only {sorted(fragments)} "
                           "were given.")
        text = textwrap.dedent(fragments[name]).strip("\n")
        return textwrap.indent(text, match["indent"])

    def fill(obj):
        if obj.__doc__ is not None:
            obj.__doc__ = _FIELD.sub(replace, obj.__doc__)

    def decorate(obj):
        fill(obj)
        if inspect.isclass(obj):
            for member in vars(obj).values():
                if isinstance(member, property) or inspect.isfunction(member):
                    fill(member)  # a property holds its own copy of its getter's docstring
        return obj

    return decorate


def parameters(owner, *names):
    """Entries of the Parameters section of ``owner``'s docstring, as text at indentation 0.

    Parameters
    ----------
    owner : class or function
        Whose docstring holds the entries (numpydoc layout).
    *names : str
        The entries wanted, in the order wanted, each named as its first line names it (``"kernel1, kernel2"``);
        all of them, in their own order, when none is given.

    Returns
    -------
    text : str
        The entries (header lines and their indented descriptions); empty when the docstring was stripped
        (``python -OO``).
    """
    doc = inspect.getdoc(owner)
    if doc is None:
        return ""
    entries = _parameter_entries(doc, owner)
    missing = [name for name in names if name not in entries]
    if missing:
        raise KeyError(f"parameters: {getattr(owner, '__qualname__', owner)!r} documents no parameter {missing}; "
                       f"it documents {list(entries)}.")
    return "\n".join(entries[name] for name in (names or entries))


def _parameter_entries(doc, owner):
    """``{name: entry text}`` of the Parameters section of a cleaned (dedented) docstring, in order."""
    lines = doc.splitlines()
    try:
        start = next(i + 2 for i in range(len(lines) - 1)
                     if lines[i].strip() == "Parameters" and _RULE.match(lines[i + 1].strip()))
    except StopIteration:
        raise KeyError(f"parameters: {getattr(owner, '__qualname__', owner)!r} has no Parameters section.") from None
    entries, name = {}, None
    for i in range(start, len(lines)):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and _RULE.match(lines[i + 1].strip()):
            break  # the next section's header
        if line and not line[0].isspace():
            name = line.split(" : ")[0].strip()
            entries[name] = [line]
        elif name is not None:
            entries[name].append(line)
    return {key: "\n".join(entry).rstrip() for key, entry in entries.items()}
