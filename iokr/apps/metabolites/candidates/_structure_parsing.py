"""Parsing a structure table's rows for a store: RDKit parent structure, InChIKey, formula, mass and the compact
fingerprint of each row (:func:`parse_texts`), in chunks parsed by worker processes (:func:`parsed_chunks`), and
the counts a build reports (:data:`BUILD_COUNTS`). Shared by the single-file database (:mod:`._database`) and the
sharded store's build (:mod:`._shard_build`)."""

from __future__ import annotations

import itertools
import os

from ...._validation import is_count
from ....io._workers import worker_pool
from ..chemistry._fingerprints import Fingerprinter
from ..chemistry._structures import parents_of
from ._store_format import encode_rows, stored_values
from ._structure_tables import structure_texts


def check_n_jobs(n_jobs, function):
    """Refuse a worker count that is not None or an int >= 1 (``-1``, joblib's "all CPUs", and 0 used to run as one
    process without a word).

    Parameters
    ----------
    n_jobs : object
        The value given.
    function : str
        The function, for the message.

    Raises
    ------
    ValueError
        Naming ``n_jobs``, what was expected and what was given.
    """
    if n_jobs is not None and not is_count(n_jobs):
        raise ValueError(f"The 'n_jobs' parameter of {function} must be None (every CPU) or an int >= 1. Got "
                         f"{n_jobs!r}.")


#: Rows parsed per chunk (one chunk per worker task).
CHUNK_ROWS = 2000


#: The parse result of a row without any structure text ('N/A', 'nan', blank): counted apart from unparsable.
MISSING = "missing"
#: What was done to reach the indexed structure, counted over the parsed rows (duplicates included): fragments removed
#: (salts, hydrates, mixtures), charges neutralized, isotope labels kept, a permanent charge kept, and a later
#: structure column used because an earlier one was unparsable (an InChI RDKit rejects, the SMILES read).
FLAG_COUNTS = ("n_parents", "n_neutralized", "n_labelled", "n_charged", "n_structure_fallbacks")
BUILD_COUNTS = ("n_rows", "n_missing", "n_unparsable", "n_duplicates", *FLAG_COUNTS)


def count_parse_result(counts, result):
    """Count one row's parse result (:func:`parse_texts`) into ``counts`` (:data:`BUILD_COUNTS`); the parsed
    ``(inchikey, smiles, formula, mass, fingerprint bytes)``, or None for a row without a parsable structure."""
    counts["n_rows"] += 1
    if result in (MISSING, None):
        counts["n_missing" if result == MISSING else "n_unparsable"] += 1
        return None
    *parsed, flags = result
    for name, flag in zip(FLAG_COUNTS, flags, strict=True):
        counts[name] += bool(flag)
    return parsed


def parse_texts(texts, fingerprint):
    """Per row of structure texts (``texts``: tuples, :func:`~._structure_tables.structure_texts`; ``fingerprint``:
    :meth:`Fingerprinter.params`): ``(inchikey, smiles, formula, mass, fingerprint bytes, flags)`` of the first text
    RDKit reads (:func:`~._structures.parent_of`: the parent), None if it reads none, :data:`MISSING` if there is
    none; ``flags`` in :data:`FLAG_COUNTS` order. Each step runs over 512 rows at a time (then
    :func:`~._structures.parents_of`, a later text only where the earlier failed, :func:`~._store_format.encode_rows`):
    the same results as row by row (tested), for less CPU, with 512 molecules held (+28 MB), not a whole chunk."""
    fingerprinter = Fingerprinter(**fingerprint)
    return [result for start in range(0, len(texts), 512) for result in _parse_block(texts[start:start + 512],
                                                                                          fingerprinter)]


def _parse_block(texts, fingerprinter):
    chosen = [MISSING if not row else None for row in texts]
    pending, position = [i for i, row in enumerate(texts) if row], 0
    while pending:
        parents = parents_of([texts[i][position] for i in pending])
        for i, parent in zip(pending, parents, strict=True):
            if parent is not None:
                chosen[i] = (position, parent)
        position += 1
        pending = [i for i, parent in zip(pending, parents, strict=True) if parent is None and position < len(texts[i])]
    found = [i for i, pick in enumerate(chosen) if pick not in (MISSING, None)]
    dense, _ = fingerprinter.transform([chosen[i][1].mol for i in found])
    for i, blob in zip(found, encode_rows(stored_values(dense, fingerprinter.binary), fingerprinter.binary),
                       strict=True):
        position, parent = chosen[i]
        flags = (parent.reduced, parent.neutralized and not parent.reduced, parent.labelled, parent.charge != 0,
                 position > 0)
        chosen[i] = (parent.key, parent.smiles, parent.formula, parent.mass, blob, flags)
    return chosen


def parsed_chunks(rows, structure_columns, fingerprinter, n_jobs):
    """``(rows, parsed)`` per chunk of :data:`CHUNK_ROWS` rows, parsed in worker processes when there are several
    chunks (RDKit parsing and fingerprints dominate indexing; results keep the file order)."""
    def texts_of(chunk):
        return [structure_texts(r, structure_columns) for r in chunk]

    rows = iter(rows)
    chunks = iter(lambda: list(itertools.islice(rows, CHUNK_ROWS)), [])
    head = list(itertools.islice(chunks, 2))
    chunks = itertools.chain(head, chunks)
    n_jobs = (os.cpu_count() or 1) if n_jobs is None else n_jobs
    if len(head) < 2 or n_jobs <= 1:
        for chunk in chunks:
            yield chunk, parse_texts(texts_of(chunk), fingerprinter.params())
        return

    with worker_pool(n_jobs) as pool:  # workers die with this process, even on kill -9
        pending = []
        for chunk in chunks:
            pending.append((chunk, pool.submit(parse_texts, texts_of(chunk), fingerprinter.params())))
            if len(pending) > 2 * n_jobs:  # bounded look-ahead: memory stays a few chunks
                chunk, future = pending.pop(0)
                yield chunk, future.result()
        for chunk, future in pending:
            yield chunk, future.result()
