"""Tokenization of English text into lower-cased words and punctuation marks.

One regular expression, so that training text, unlabeled text and text seen at prediction time are cut the same way.
Contractions and possessives stay one token (``"it's"``, ``"you're"``), because confusion sets such as
``its / it's`` need them whole.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-z0-9]+(?:['\u2019][a-z]+)*|[^\sa-z0-9]")


def tokenize(text):
    """Lower-cased word and punctuation tokens of ``text``.

    Parameters
    ----------
    text : str

    Returns
    -------
    tokens : list of str
        Words (letters and digits, with inner apostrophes kept: ``"it's"``) and single punctuation characters;
        typographic apostrophes are normalized to ``'``.

    Examples
    --------
    >>> tokenize("It's more than a word, then.")
    ["it's", 'more', 'than', 'a', 'word', ',', 'then', '.']
    """
    if not isinstance(text, str):
        raise TypeError(f"'text' must be a str, got {type(text).__name__}.")
    return [t.replace("\u2019", "'") for t in _TOKEN.findall(text.lower())]
