"""The Python API of the app: :func:`train` and :func:`evaluate` with typed results (:func:`identify` is in
:mod:`._identify`). The command line's ``train`` and ``evaluate`` are argument parsing plus these calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..defaults import DEFAULT_MIN_STRUCTURES
from ._arguments import check_min_structures, check_output, check_path, check_settings
from ._evaluate import evaluate_job
from ._fit import TrainingConfig
from ._train import train_job

TOP_KEYS = ("top1", "top5", "top10", "top20")


@dataclass
class SubmodelSummary:
    """One trained sub-model: its precursor type, training structures, chosen parameters and kernel weights.

    Parameters
    ----------
    precursor_type : str
        The sub-model's precursor type, e.g. ``"[M+H]+"``.
    n_train : int
        Training structures.
    chosen : dict
        The parameters chosen by cross-validation (``alpha``, ``output_kernel``, ...).
    weights : list of float
        The base spectrum kernels' weights (ALIGNF).
    cv : list of dict
        The cross-validation table, one row per parameter setting.
    timings : dict of {str: float}
        Seconds per stage.
    calibration_problem : str or None, default=None
        Why the sub-model has no confidence calibration; None when it has one.
    """

    precursor_type: str
    n_train: int
    chosen: dict
    weights: list
    cv: list = field(repr=False)
    timings: dict = field(repr=False)
    calibration_problem: str | None = None


@dataclass
class TrainingResult:
    """What :func:`train` returns.

    Parameters
    ----------
    model : Path
        The model file written.
    n_train : int
        Training structures over all sub-models.
    submodels : dict of {str: SubmodelSummary}
        Per precursor type, in training order (the most frequent type first).
    """

    model: Path
    n_train: int
    submodels: dict


@dataclass
class EvaluationResult:
    """What :func:`evaluate` returns.

    Parameters
    ----------
    summary : dict
        Everything ``summary.json`` holds: per polarity the top-k tables, training counts, CV table, calibration
        and timings.
    """

    summary: dict = field(repr=False)

    def topk(self, per="structure", polarity=None):
        """Return the top-1/5/10/20 percentages per structure or per spectrum.

        Parameters
        ----------
        per : {"structure", "spectrum"}, default="structure"
            Figures per true structure or per query spectrum (docs/metabolites.md, "Protocol of evaluate").
        polarity : {"positive", "negative"} or None, default=None
            One polarity's figures; None: the first evaluated.

        Returns
        -------
        topk : dict of {str: float}
            ``{"top1": ..., "top5": ..., "top10": ..., "top20": ...}``, percentages.
        """
        if per not in ("structure", "spectrum"):
            raise ValueError(f"The 'per' parameter of EvaluationResult.topk must be 'structure' or 'spectrum'. "
                             f"Got {per!r}.")
        part = self.summary
        polarities = self.summary.get("per_polarity") or {}
        if polarity is not None:
            if polarity not in polarities:
                raise ValueError(f"The 'polarity' parameter of EvaluationResult.topk must be one of "
                                 f"{sorted(polarities)}. Got {polarity!r}.")
            part = polarities[polarity]
        return {k: float(part[f"per_{per}"][k]) for k in TOP_KEYS}

    def __repr__(self):
        return f"EvaluationResult(per structure {self.topk('structure')}, per spectrum {self.topk('spectrum')})"


def train(spectra, output, config=None, *, exclude_candidates=None, feedback=None,
          min_structures=DEFAULT_MIN_STRUCTURES, overwrite=False):
    """Train one sub-model per precursor type on spectra files with structures, and write the model file.

    Parameters
    ----------
    spectra : str, Path or sequence of them
        Training spectra with structures (MGF, MSP, JSON, MassBank JSONL; plain or gzip); the precursor type of each
        comes from its adduct, ion mode and charge.
    output : str or Path
        The model file to write (what :func:`identify` takes as ``model``).
    config : TrainingConfig, optional
        Fingerprint, grid and cross-validation (defaults: :mod:`..defaults`).
    exclude_candidates : str or Path, optional
        Candidate lists whose true structures are left out of training.
    feedback : Feedback, optional
        Progress bars and log lines; None: log lines printed, no progress bars (``Feedback(log=lambda line: None)``
        for silence).
    min_structures : int, default=DEFAULT_MIN_STRUCTURES
        Structures a precursor type needs for its own sub-model (the most frequent type is always trained).
    overwrite : bool, default=False
        Replace an existing ``output`` file (never one of the inputs).

    Returns
    -------
    result : TrainingResult
        The model file written, and each sub-model's training structures, chosen parameters and calibration.
    """
    check_path(spectra, "spectra", "train", several=True)
    check_path(output, "output", "train")
    check_path(exclude_candidates, "exclude_candidates", "train", optional=True)
    config = check_settings(config, TrainingConfig, "config", "train")
    min_structures = check_min_structures(min_structures, "train")
    check_output(output, "output", "train", {"spectra": spectra, "exclude_candidates": exclude_candidates},
                 overwrite=overwrite)
    out = train_job(spectra, output, config, exclude_candidates=exclude_candidates, feedback=feedback,
                    min_structures=min_structures)
    submodels = {t: SubmodelSummary(t, s["n_train"], s["chosen"], s["weights"], s["cv"], s["timings"],
                                    s["calibration_problem"]) for t, s in out["submodels"].items()}
    return TrainingResult(Path(out["model"]), int(out["n_train"]), submodels)


def evaluate(spectra, candidates, config=None, *, model_output=None, fingerprint_cache=None, feedback=None,
             min_structures=DEFAULT_MIN_STRUCTURES, overwrite=False):
    """Evaluate on candidate lists, structure-disjoint, per polarity.

    The model is trained without the lists' true structures, then each list is ranked for the spectra of its true
    structure.

    Parameters
    ----------
    spectra : str, Path or sequence of them
        Spectra with structures.
    candidates : str or Path
        Candidate lists naming their true structures (a folder or ``.tar.gz`` of per-formula lists).
    config : TrainingConfig, optional
        Fingerprint, grid and cross-validation (defaults: :mod:`..defaults`).
    model_output : str or Path, optional
        Where to save the model trained without the lists' true structures.
    fingerprint_cache : str, Path or sequence of them, optional
        Fingerprint cache files of candidate structures (the first one made with this fingerprint is used).
    feedback : Feedback, optional
        Progress bars and log lines; None: log lines printed, no progress bars.
    min_structures : int, default=DEFAULT_MIN_STRUCTURES
        Structures a precursor type needs for its own sub-model (the most frequent type is always trained).
    overwrite : bool, default=False
        Replace an existing ``model_output`` file (never one of the inputs).

    Returns
    -------
    result : EvaluationResult
        The top-k tables per polarity, per structure and per spectrum (``result.summary``: ``summary.json``).
    """
    check_path(spectra, "spectra", "evaluate", several=True)
    check_path(candidates, "candidates", "evaluate")
    check_path(model_output, "model_output", "evaluate", optional=True)
    check_path(fingerprint_cache, "fingerprint_cache", "evaluate", optional=True, several=True)
    config = check_settings(config, TrainingConfig, "config", "evaluate")
    min_structures = check_min_structures(min_structures, "evaluate")
    check_output(model_output, "model_output", "evaluate", {"spectra": spectra, "candidates": candidates,
                                                            "fingerprint_cache": fingerprint_cache},
                 overwrite=overwrite)
    return EvaluationResult(evaluate_job(spectra, candidates, config, model_output=model_output,
                                         fingerprint_cache=fingerprint_cache, feedback=feedback,
                                         min_structures=min_structures))
