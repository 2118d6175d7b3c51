"""Training spectra of several files and precursor types: one sub-model per type with enough structures.

Each training spectrum's precursor type comes from :func:`~._adducts.read_precursor_ion` (the file's adduct, ion
mode and charge), never from a default that its own metadata contradicts:

- a readable adduct without a contradiction: that adduct's canonical type;
- no adduct, a singly charged ion of known polarity: the polarity's default type (``[M+H]+`` / ``[M-H]-``),
  counted and logged as *implied*;
- nothing at all (no adduct, ion mode or charge): ``[M+H]+`` when no spectrum of the set is negative (the shared
  MassBank [M+H]+ files and older training files), counted and logged; skipped otherwise;
- an unreadable adduct, a contradiction, or a multiply charged ion without an adduct: skipped and counted.

A precursor type gets its own sub-model when it has at least ``min_structures`` training structures (after the
evaluated structures are excluded); the most frequent type is always trained, so a file of one type trains one model
as before, provided it has at least :func:`minimum_structures` structures.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ....exceptions import IOKRDataError
from ..chemistry._adducts import read_precursor_ion
from ..defaults import DEFAULT_TYPES
from ..spectra._spectra import concatenate

#: Structures per cross-validation fold a model needs at least (every fold a training and a held-out side).
MIN_STRUCTURES_PER_FOLD = 3


def minimum_structures(n_folds):
    """Fewest training structures any model is trained on (``n_folds`` folds of :data:`MIN_STRUCTURES_PER_FOLD`)."""
    return max(2, MIN_STRUCTURES_PER_FOLD * max(int(n_folds), 1))


def read_training_files(paths, read, log):
    """Spectra of several files as one :class:`Spectra` (``read(path) -> (spectra, report)``) and each file's read
    summary (``{path: summary}``, also logged)."""
    paths = [paths] if not isinstance(paths, (list, tuple)) else list(paths)
    if not paths:
        raise IOKRDataError("At least one --spectra file is needed, got none.")
    parts, summaries = [], {}
    for path in paths:
        spectra, report = read(path)
        log(f"{path}: {report.summary()}")
        summaries[str(path)] = report.summary()
        parts.append(spectra)
    return (parts[0] if len(parts) == 1 else concatenate(parts)), summaries


def precursor_types(spectra, log=print):
    """Canonical precursor type of each training spectrum (``""``: skipped) and the counts of how each was read.

    Returns
    -------
    types : ndarray of str, shape (n,)
    counts : dict
        ``named`` (adduct given), ``implied`` (from ion mode / charge), ``assumed`` (no information: ``[M+H]+``),
        ``skipped`` (reason -> count).
    """
    ions = [read_precursor_ion(meta) for meta in spectra.metadata]
    any_negative = any(ion.ion_mode == "negative" and not ion.problem for ion in ions)
    types, named, implied, assumed, skipped = [], 0, Counter(), 0, Counter()
    for ion, meta in zip(ions, spectra.metadata, strict=True):
        if ion.problem:
            skipped["contradictory or unreadable precursor ion" if meta.get("adduct") or ion.adduct else
                    "contradictory ion mode and charge"] += 1
            types.append("")
        elif ion.adduct is not None:
            named += 1
            types.append(ion.adduct.name)
        elif ion.charge is not None and abs(ion.charge) > 1:
            skipped["multiply charged without an adduct"] += 1
            types.append("")
        elif ion.ion_mode is not None:
            implied[DEFAULT_TYPES[ion.ion_mode]] += 1
            types.append(DEFAULT_TYPES[ion.ion_mode])
        elif not any_negative:
            assumed += 1
            types.append(DEFAULT_TYPES["positive"])
        else:
            skipped["no adduct, ion mode or charge in a set with negative spectra"] += 1
            types.append("")
    if implied:
        log(f"training: {sum(implied.values())} spectra name no adduct; taken as the type their ion mode / charge "
            f"implies ({', '.join(f'{n} {t}' for t, n in sorted(implied.items()))})")
    if assumed:
        log(f"training: {assumed} spectra name no adduct, ion mode or charge; taken as {DEFAULT_TYPES['positive']}")
    if skipped:
        log(f"training: {sum(skipped.values())} spectra skipped ("
            + ", ".join(f"{n} {r}" for r, n in sorted(skipped.items())) + ")")
    counts = {"named": named, "implied": dict(implied), "assumed": assumed, "skipped": dict(skipped)}
    return np.array(types, dtype=object), counts


def structures_per_type(spectra, types, exclude_keys=()):
    """Distinct training structures (first InChIKey block, excluded ones left out) of each precursor type."""
    exclude = {k[:14] for k in exclude_keys if k}
    keys = spectra.structure_keys()
    per_type = {}
    for key, t in zip(keys, types, strict=True):
        if t and key and key[:14] not in exclude:
            per_type.setdefault(t, set()).add(key[:14])
    return {t: len(v) for t, v in per_type.items()}


def types_to_train(n_structures, min_structures, n_folds, log=print):
    """The precursor types that get a sub-model (most structures first; see the module docstring).

    Raises
    ------
    IOKRDataError
        When not even the most frequent type has :func:`minimum_structures` structures.
    """
    need = minimum_structures(n_folds)
    ranked = sorted(n_structures.items(), key=lambda kv: (-kv[1], kv[0]))
    if not ranked or ranked[0][1] < need:
        got = ranked[0][1] if ranked else 0
        which = f" of {ranked[0][0]}" if ranked else ""
        raise IOKRDataError(f"training: need at least {need} training structures (got {got}{which}).")
    chosen = [t for t, n in ranked if n >= min_structures] or [ranked[0][0]]
    if ranked[0][0] not in chosen:
        chosen.insert(0, ranked[0][0])
    left = [f"{t} ({n})" for t, n in ranked if t not in chosen]
    if left:
        log(f"training: precursor types with fewer than {min_structures} structures get no sub-model: "
            f"{', '.join(left)}")
    return chosen
