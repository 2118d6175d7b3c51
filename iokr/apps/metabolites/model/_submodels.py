"""A model file of several sub-models, one per precursor type (``[M+H]+``, ``[M-H]-``, ...), and its loader.

Layout (``"submodels"`` in the file's metadata, ``"submodel_layout"``: :data:`SUBMODEL_LAYOUT`): one entry per sub-model, in the order trained, with its
``precursor_type``, the ``prefix`` of its arrays (``s0_``, ``s1_``, ...: the arrays of
:func:`~._persist.submodel_arrays`), its ``model_params``, ``n_train``, ``n_output_features`` and ``extra`` (its
cross-validation table, calibration, training counts). Fingerprint and cleaning settings are shared. The file's
SHA-256 and per-member checksums (:mod:`iokr.io`) cover every sub-model's arrays and records.

Files written before sub-models (one model, its types in ``extra.precursor_types``, or none:
:data:`LEGACY_PRECURSOR_TYPES`) load as one sub-model serving each recorded type.

Sub-models are rebuilt from their stored state when first used (:meth:`MetaboliteModel.submodel`, see
:mod:`._persist`): a run whose queries are all positive never rebuilds the negative one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ....io import ModelFileError, save_model_file
from ._confidence import Calibration
from ._persist import KIND, read_model, rebuild_cleaning, rebuild_submodel, submodel_arrays
from ._routing import ASSUME_MAPPING, route_query

#: Version of the sub-model layout written (metadata ``submodel_layout``); newer layouts are refused on load.
SUBMODEL_LAYOUT = 1

#: Precursor type of model files written before models recorded theirs: iokr trained only on the shared
#: MassBank [M+H]+ spectra then.
LEGACY_PRECURSOR_TYPES = ("[M+H]+",)


@dataclass
class TrainedSubmodel:
    """One fitted sub-model to save: its precursor type, the model, and its record (CV table, calibration...)."""

    precursor_type: str
    model: object
    extra: dict = field(default_factory=dict)


def save_metabolite_model(path, submodels, fingerprinter, cleaning, extra=None):
    """Write fitted sub-models, one per precursor type, into one model file.

    Parameters
    ----------
    path : str or Path
        Model file to write (atomically).
    submodels : list of TrainedSubmodel
        The fitted sub-models, of distinct precursor types; stored in this order.
    fingerprinter : Fingerprinter
        Fingerprint settings shared by the sub-models.
    cleaning : Cleaning
        Peak cleaning settings shared by the sub-models.
    extra : dict, optional
        Further JSON-serializable metadata of the whole file (``extra``, beside ``precursor_types``).

    Returns
    -------
    path : Path
        The file written.
    """
    types = [s.precursor_type for s in submodels]
    if not types or len(set(types)) != len(types):
        raise ValueError(f"save_metabolite_model needs sub-models of distinct precursor types, got {types}")
    arrays, entries = {}, []
    for i, sub in enumerate(submodels):
        prefix = f"s{i}_"
        sub_arrays, meta = submodel_arrays(sub.model, fingerprinter, prefix)
        arrays.update(sub_arrays)
        entries.append({"precursor_type": sub.precursor_type, "prefix": prefix, **meta,
                        "extra": {**sub.extra, "precursor_types": [sub.precursor_type]}})
    meta = {"fingerprint": fingerprinter.params(), "cleaning": cleaning.params(), "submodels": entries,
            "submodel_layout": SUBMODEL_LAYOUT,
            "extra": {"precursor_types": sorted(types), **(extra or {})}}
    return save_model_file(path, arrays, meta, kind=KIND)


class MetaboliteModel:
    """A model file's sub-models, refitted on first use, and the routing of queries to them.

    Use :func:`load_metabolite_model` to build one.

    Parameters
    ----------
    path : str or Path
        The model file (named in errors; sub-models are rebuilt from ``arrays``).
    arrays : dict of str to ndarray
        The file's arrays.
    metadata : dict
        The file's metadata.
    fingerprinter : Fingerprinter
        The file's fingerprint settings.

    Attributes
    ----------
    precursor_types : tuple of str
        Canonical precursor types the model serves, sorted.
    fingerprinter : Fingerprinter
    cleaning : Cleaning
    metadata : dict
        The file's metadata.
    """

    def __init__(self, path, arrays, metadata, fingerprinter):
        self.path, self._arrays, self.metadata, self.fingerprinter = path, arrays, metadata, fingerprinter
        self.cleaning = rebuild_cleaning(metadata, path)
        entries = metadata.get("submodels")
        if entries is None:  # a file of one model: one sub-model serving every type it recorded
            extra = metadata.get("extra") or {}
            types = extra.get("precursor_types") or list(LEGACY_PRECURSOR_TYPES)
            record = {**metadata, "prefix": "", "extra": extra}
            self._entries = {t: record for t in types}
        else:
            layout = metadata.get("submodel_layout")
            if not isinstance(layout, int) or isinstance(layout, bool) or not 1 <= layout <= SUBMODEL_LAYOUT:
                raise ModelFileError(f"Model file {path} has sub-model layout {layout!r}; this iokr reads layouts 1 "
                                     f"to {SUBMODEL_LAYOUT} (a newer iokr wrote it?).")
            if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
                raise ModelFileError(f"Model file {path} is incomplete or inconsistent (field 'submodels' must be a "
                                     "non-empty list of records).")
            self._entries = {}
            for e in entries:
                t = e.get("precursor_type")
                if not isinstance(t, str) or t in self._entries or not isinstance(e.get("prefix"), str):
                    raise ModelFileError(f"Model file {path} is incomplete or inconsistent (sub-model record with "
                                         f"precursor type {t!r} and prefix {e.get('prefix')!r}).")
                self._entries[t] = e
        self.precursor_types = tuple(sorted(self._entries))
        self._fitted = {}

    def _entry(self, precursor_type):
        if precursor_type not in self._entries:
            raise KeyError(f"the model has no {precursor_type} sub-model; it has {', '.join(self.precursor_types)}")
        return self._entries[precursor_type]

    def submodel(self, precursor_type):
        """Return the fitted :class:`MetaboliteIdentifier` of a precursor type (rebuilt from the file on first use).

        Parameters
        ----------
        precursor_type : str
            The type whose sub-model is wanted, one of :attr:`precursor_types` (:meth:`route` chooses it).

        Returns
        -------
        model : MetaboliteIdentifier
            The fitted sub-model, kept for later calls.

        Raises
        ------
        KeyError
            When the model has no sub-model of that type.
        """
        entry = self._entry(precursor_type)
        key = id(entry)  # a legacy file's types share one model
        if key not in self._fitted:
            self._fitted[key] = rebuild_submodel(self.path, self._arrays, entry, self.fingerprinter, self.cleaning,
                                                 entry["prefix"])
        return self._fitted[key]

    def record(self, precursor_type):
        """Return a sub-model's record: its cross-validation table, calibration, training counts (``extra``).

        Parameters
        ----------
        precursor_type : str
            One of :attr:`precursor_types` (the types of a file written before sub-models share one record).

        Returns
        -------
        record : dict
            The sub-model's ``extra`` metadata (empty when it has none).
        """
        return self._entry(precursor_type).get("extra") or {}

    def calibration(self, precursor_type):
        """Return the confidence calibration of a sub-model.

        Parameters
        ----------
        precursor_type : str
            One of :attr:`precursor_types`; its :meth:`record` holds the calibration.

        Returns
        -------
        calibration : Calibration or None
            Read from the sub-model's record; None when it has none.
        """
        data = self.record(precursor_type).get("calibration")
        return Calibration.from_dict(data) if data else None

    def route(self, ion, policy="refuse", adduct_text=None):
        """Choose the sub-model that serves a query (see :mod:`._routing`).

        Parameters
        ----------
        ion : PrecursorIon
            The query's precursor ion as its file gives it (adduct, ion mode, charge, problem).
        policy : {"refuse", "assume"}, default="refuse"
            What to do with a precursor type the model was not trained on: refuse the query, or rank it with the
            sub-model of :data:`~._routing.ASSUME_MAPPING` (else the default type of its polarity).
        adduct_text : str, optional
            The adduct text as the file gives it (named in the detail when it cannot be read).

        Returns
        -------
        route : Route
            ``submodel`` is the serving precursor type, or None with ``status`` and ``detail`` saying why.
        """
        return route_query(ion, self.precursor_types, policy, adduct_text)

    def describe(self, routes=()):
        """Describe the model's precursor types, its ``--adduct-policy assume`` mapping and the routed queries.

        Parameters
        ----------
        routes : iterable of Route, default=()
            Routes of the queries of a run (:meth:`route`).

        Returns
        -------
        description : dict
            ``model_precursor_types`` (list of str), ``adduct_mapping`` (the entries of
            :data:`~._routing.ASSUME_MAPPING` this model can serve) and ``queries_per_submodel`` (routed queries
            per precursor type, sorted by type).
        """
        counts = Counter(r.submodel for r in routes if r.submodel is not None)
        return {"model_precursor_types": list(self.precursor_types),
                "adduct_mapping": {k: v for k, v in ASSUME_MAPPING.items() if v in self.precursor_types},
                "queries_per_submodel": dict(sorted(counts.items()))}


def load_metabolite_model(path, contents=None):
    """Read a model file (of sub-models, or of one model as written before them) as a :class:`MetaboliteModel`.

    Parameters
    ----------
    path : str or Path
        The model file.
    contents : tuple, optional
        :func:`~._persist.read_model`'s result for ``path``, when already read.

    Returns
    -------
    model : MetaboliteModel
        The file's sub-models (rebuilt on first use) and their routing.
    """
    arrays, meta, fingerprinter = read_model(path) if contents is None else contents
    return MetaboliteModel(path, arrays, meta, fingerprinter)
