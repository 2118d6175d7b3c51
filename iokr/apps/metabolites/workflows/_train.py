"""``train``: one sub-model per precursor type with enough structures, saved as one model file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..candidates._candidates import read_candidate_lists
from ..defaults import (
    DEFAULT_MIN_STRUCTURES,
)
from ..importing._readers import read_spectra
from ..model._submodels import TrainedSubmodel, save_metabolite_model
from ..model._training import (
    precursor_types,
    read_training_files,
    structures_per_type,
    types_to_train,
)
from ..ranking._identify import IdentifySettings  # noqa: F401 - the jobs' settings, imported from here by callers
from ..selection._pipeline import (
    Cleaning,
)
from ._feedback import Feedback
from ._fit import TrainingConfig, fit_with_cv, open_store


def as_paths(paths):
    return [paths] if isinstance(paths, (str, Path)) else list(paths)


def read_training_spectra(paths, log):
    """Training spectra of every file (structures required) and each file's read summary."""
    return read_training_files(paths, lambda path: read_spectra(path, require_structure=True), log)


def training_types(spectra, reads, exclude, config, min_structures, log):
    """Precursor type of every training spectrum, the types that get a sub-model, and the model file's record of
    both (``training_files``, ``precursor_type_counts``, ``structures_per_precursor_type``, ``min_structures``)."""
    types, counts = precursor_types(spectra, log)
    n_structures = structures_per_type(spectra, types, exclude)
    chosen = types_to_train(n_structures, min_structures, config.n_folds, log)
    record = {"training_files": reads, "precursor_type_counts": counts,
              "structures_per_precursor_type": dict(sorted(n_structures.items())), "min_structures": min_structures}
    return types, chosen, record


def train_job(spectra_paths, output, config=None, *, exclude_candidates=None, feedback=None,
              min_structures=DEFAULT_MIN_STRUCTURES):
    """Train one sub-model per precursor type with enough structures on spectra files and save the model file.

    Parameters
    ----------
    spectra_paths : str, Path or sequence of them
        Training spectra with structures; their precursor types come from each spectrum's adduct, ion mode and
        charge (see :mod:`._training`).
    output : str or Path
        The model file to write.
    config : TrainingConfig, optional
    exclude_candidates : str or Path, optional
        Candidate lists whose true structures are left out of training.
    feedback : Feedback, optional
    min_structures : int, default=DEFAULT_MIN_STRUCTURES
        Structures a precursor type needs for its own sub-model (the most frequent type is always trained).
    """
    config = TrainingConfig() if config is None else config
    feedback = Feedback() if feedback is None else feedback
    log = feedback.log
    fingerprinter = config.fingerprinter()
    store = open_store(config.store_path, fingerprinter)
    exclude = []
    if exclude_candidates:
        exclude = [lst.true_key for lst in read_candidate_lists(exclude_candidates, store) if lst.true_key]
    spectra, reads = read_training_spectra(as_paths(spectra_paths), log)
    types, chosen, record = training_types(spectra, reads, exclude, config, min_structures, log)
    cleaning = Cleaning()
    submodels, out = [], {}
    for precursor_type in chosen:
        rows = np.flatnonzero(types == precursor_type)
        log(f"sub-model {precursor_type}: {rows.size} spectra")
        fit = fit_with_cv(spectra[rows], store, cleaning, exclude, config, feedback)
        submodels.append(TrainedSubmodel(precursor_type, fit.model, fit.record()))
        out[precursor_type] = {"n_train": len(fit.train.spectra), "cv": fit.cv, "timings": fit.timings,
                               "chosen": {k: jsonable(v) for k, v in fit.model.get_params().items()},
                               "weights": fit.model.weights_.tolist(), "calibration_problem": fit.calibration_problem}
    del spectra
    save_metabolite_model(output, submodels, fingerprinter, cleaning, extra=record)
    first = out[chosen[0]]
    return {"model": str(output), "n_train": sum(v["n_train"] for v in out.values()), "submodels": out,
            "cv": first["cv"], "timings": first["timings"], "chosen": first["chosen"], "weights": first["weights"]}


def jsonable(v):
    if isinstance(v, tuple):
        return list(v)
    return v
