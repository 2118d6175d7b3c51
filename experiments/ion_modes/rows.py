"""The study's rows: every spectrum's precursor type canonicalized, one merged spectrum per (structure, type), the
structure folds over all types, and each row's CV list (fold lists per polarity, or isomer-like formula lists)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

# No public name yet: the app's adduct parser (issue #29 gives the app a public chemistry/ layer).
from iokr.apps.metabolites import (
    AdductError,
    Cleaning,
    concatenate,
    fold_ids,
    formula_candidate_sets,
    parse_adduct,
    read_massbank_jsonl,
    training_set,
)

MAIN_TYPES = {1: "[M+H]+", -1: "[M-H]-"}
N_FOLDS, SEED = 3, 0


def canonical_types(texts):
    """``{raw text: canonical type}`` for precursor-type texts; spellings of one ion share a name.

    Two texts are the same ion when ``parse_adduct`` gives the same molecule count, charge and mass shift (to 1 mDa):
    ``[M+CH3COO]-`` = ``[M+CH3COOH-H]-``, ``[M+HCOO]-`` = ``[M+FA-H]-`` = ``[M+HCO2]-``. The name is the canonical
    text of the group's most frequent spelling. Texts the parser refuses and empty ones are left out (the committed
    results predate today's parser, which reads radicals such as ``[M]+*`` and refuses ``[M-2H]-``, whose groups
    give charge -2).
    """
    counts = Counter(t for t in texts if t)
    groups = {}
    for text, _ in counts.most_common():
        try:
            adduct = parse_adduct(text)
        except AdductError:
            continue
        key = (adduct.n_molecules, adduct.charge, round(adduct.mass_shift, 3))
        groups.setdefault(key, (adduct.name, []))[1].append(text)
    return {text: name for name, members in groups.values() for text in members}


def polarity_of(type_name):
    """+1 for a positive canonical type, -1 for a negative one."""
    return 1 if parse_adduct(type_name).charge > 0 else -1


@dataclass
class StudyRows:
    """Merged training spectra, one per (structure, canonical precursor type), with their folds.

    Attributes
    ----------
    spectra : Spectra
        ``n`` merged spectra.
    Y : ndarray of shape (n, n_bits)
        Fingerprints of the rows' structures.
    types, keys : ndarray of object, shape (n,)
        Canonical precursor type and first InChIKey block of each row.
    polarity, folds : ndarray of int, shape (n,)
        +1 / -1, and the structure fold (shared by every row of a structure).
    formulas : list of str
        Molecular formula of each row's structure.
    """

    spectra: object
    Y: np.ndarray
    types: np.ndarray
    polarity: np.ndarray
    keys: np.ndarray
    folds: np.ndarray
    formulas: list

    def main(self, pol):
        """Mask of the rows of polarity ``pol``'s main type."""
        return (self.types == MAIN_TYPES[pol]) & (self.polarity == pol)


def read_study_spectra(paths):
    """The spectra with structures of every file in ``paths``, concatenated."""
    return concatenate([read_massbank_jsonl(path, require_structure=True)[0] for path in paths])


def _type_parts(spectra, types, store, exclude, min_structures, max_main):
    """Per canonical type with enough structures: ``(name, spectra, Y, keys, formulas)`` of its merged rows."""
    cleaning, parts = Cleaning(), []
    for name in [t for t, _ in Counter(types.tolist()).most_common() if t]:
        train = training_set(spectra[np.flatnonzero(types == name)], store, cleaning, exclude)
        rows = np.arange(len(train.spectra))
        if name in MAIN_TYPES.values() and max_main and rows.size > max_main:
            rows = np.sort(np.random.default_rng(SEED).choice(rows.size, max_main, replace=False))
        elif name not in MAIN_TYPES.values() and rows.size < min_structures:
            continue
        parts.append((name, train.spectra[rows], np.asarray(train.Y, dtype=np.float64)[rows],
                      [k[:14] for k in np.asarray(train.keys, dtype=object)[rows]],
                      [train.formulas[r] for r in rows]))
    return parts


def study_rows(spectra, store, exclude, min_structures, max_main=None):
    """:class:`StudyRows` of the main types and of every type with ``min_structures`` training structures.

    ``exclude`` lists structures (first InChIKey block) never trained on; ``max_main`` subsamples the main types'
    structures (seeded) to shorten the run; None keeps all.
    """
    names = canonical_types(spectra.field("adduct"))
    types = np.array([names.get(t or "") or "" for t in spectra.field("adduct")], dtype=object)
    parts = _type_parts(spectra, types, store, exclude, min_structures, max_main)
    keys = np.array([k for *_, ks, _ in parts for k in ks], dtype=object)
    unique = sorted(set(keys.tolist()))
    fold_of = dict(zip(unique, fold_ids(len(unique), N_FOLDS, SEED), strict=True))
    row_types = np.array([name for name, s, *_ in parts for _ in range(len(s))], dtype=object)
    return StudyRows(spectra=concatenate([s for _, s, *_ in parts]), Y=np.vstack([p[2] for p in parts]),
                     types=row_types, polarity=np.array([polarity_of(t) for t in row_types]),
                     keys=keys, folds=np.array([fold_of[k] for k in keys]),
                     formulas=[f for p in parts for f in p[4]])


def fold_lists(rows):
    """Each row's CV list: the held-out main-type structures of its fold and polarity (plus itself if absent)."""
    lists = []
    members = {(f, p): np.flatnonzero(rows.main(p) & (rows.folds == f)) for f in range(N_FOLDS) for p in (1, -1)}
    for i in range(len(rows.keys)):
        own = members[(rows.folds[i], rows.polarity[i])]
        lists.append(own if rows.keys[i] in set(rows.keys[own].tolist()) else np.append(own, i))
    return lists


def formula_lists(rows):
    """``(lists, scored)``: each row's isomer-like list (the app's ``formula_candidate_sets`` over one row per
    structure: all study structures of its molecular formula, any type and fold, filled up to 20 by the nearest
    masses) and whether the row is scored (its formula is shared by another structure)."""
    first = {}
    for i, k in enumerate(rows.keys):
        first.setdefault(k, i)
    reps = np.array(sorted(first.values()))
    sets, scored = formula_candidate_sets(rows.Y[reps], [rows.formulas[r] for r in reps])
    where = {rows.keys[r]: j for j, r in enumerate(reps)}
    lists = [reps[sets.indices[where[k]]] for k in rows.keys]
    return lists, np.array([scored[where[k]] for k in rows.keys])
