"""Ion modes and precursor types (issue #28): which models should serve negative and rare-type spectra, chosen by
cross-validation on training structures, and the negative-mode figures on the 60 shared lists.

::

    python -m experiments ion_modes --data ../shared/data --set store=STORE.sqlite
    python -m experiments ion_modes --data ../shared/data --set parts=cv_formula --set store=STORE.sqlite
    python -m experiments ion_modes --render-only

Study rows (parts ``cv`` and ``cv_formula``, :mod:`experiments.ion_modes.rows`): the three MassBank files; every
spectrum's precursor type canonicalized (:func:`~experiments.ion_modes.rows.canonical_types`: spellings of one ion,
e.g. ``[M+CH3COO]-`` and ``[M+CH3COOH-H]-``, merged by charge and mass shift); the 60 lists' true structures
excluded (first InChIKey block); one merged spectrum per structure and type (``training_set`` per type). Structures
are split into 3 folds (seed 0) over the union of all types, so a structure is held out in every polarity and type
at once. Each held-out row is ranked among the held-out structures of its fold that have a spectrum of its
polarity's main type (``[M+H]+`` / ``[M-H]-``): the app's fold lists, per polarity; a rare-type row whose structure
is not among them is added to its list. Hold-out ranks come in closed form (``IOKRCV``) for the app's alpha grid;
ALIGNF weights are fitted on each fold's training side. Model settings: the app's CV choice on MassBank
(:data:`~experiments.ion_modes.models.PARAMS`), structure prior off (the CV lists hold only training structures).
``cv_formula`` ranks every row in the app's isomer-like lists instead
(:func:`~experiments.ion_modes.rows.formula_lists`; results under ``cv_formula``).

Models compared (Q1, Q2; :mod:`experiments.ion_modes.models`):

- ``separate``: one sub-model per polarity, trained on its main type only (the app's sub-models);
- ``joint-alignf``: one model on both main types; input kernels = the 4 base kernels restricted to same-polarity
  pairs, plus the 2 neutral-loss kernels on all pairs (fragments of [M+H]+ and [M-H]- ions differ by two protons,
  neutral losses do not); ALIGNF weighs the 6 kernels;
- ``joint-c<c>``: the same, with the 4 same-polarity weights from ALIGNF and the loss kernels across polarities at
  ``c`` times their ALIGNF weight;
- ``own``: a rare type's own sub-model (trained on that type's rows only), on a learning curve of training sizes.

Part ``figures`` (Q4): ``iokr metabolites evaluate`` (``evaluate_job``, the app's defaults) on the ``[M-H]-`` file
and the CSI:FingerID-style baseline of :mod:`experiments.metabolite_baseline` on the same training set and queries;
``positive`` reruns the ``[M+H]+`` evaluation, ``negative_no_prior`` the ``[M-H]-`` one with the prior off. Writes
``reports/ion_modes.json`` (a part re-run replaces its section, the others are kept) and
``reports/metabolites_ion_modes.md`` (keeping its hand-written ``## Reading``) with
:mod:`experiments.ion_modes.report`, which holds the decision rules (``CRITERIA``, fixed before the first run) and
applies them (``decisions``).
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments._common.reports import Outputs
from experiments.ion_modes.report import render
from experiments.ion_modes.stages import run_cv, run_figures

PARTS = ("cv", "cv_formula", "figures")
FIGURES = ("negative", "positive", "negative_no_prior")

__all__ = ["FIGURES", "OUTPUTS", "PARTS", "QUICK", "Config", "render", "run"]


@dataclass(frozen=True)
class Config:
    """The study's choices (defaults: the committed report's runs).

    Attributes
    ----------
    parts : tuple of str
        Parts run, among :data:`PARTS`; the others are kept from the existing JSON when ``update``.
    positive, negative, other : str
        MassBank files relative to the data folder: ``[M+H]+``, ``[M-H]-`` and every other type ("" to skip one).
    candidates : str
        The shared candidate lists (their true structures are never trained on; the figures rank them).
    joint, formula_joint : tuple of str
        Joint variants of part ``cv`` / ``cv_formula``: ``"alignf"`` and cross-polarity loss weights ``c``.
    max_main : int or None
        Main types' training structures subsampled to this many (seeded); None keeps all.
    min_structures : int
        A rare type is studied when it has at least this many training structures.
    learning_curve : tuple of int
        Training structures per fold of the own-model curves (plus each type's full size).
    figures : tuple of str
        Evaluations of part ``figures``, among :data:`FIGURES`.
    figure_folds : int
        Structure folds of the figures' hyperparameter search (the app's 3).
    store : str
        SQLite fingerprint store (a cache; "" for a temporary one).
    update : bool
        Merge into the existing JSON (a re-run part replaces its section).
    """

    parts: tuple = PARTS
    positive: str = "metabolites/massbank_ms2_posMH_permissive.jsonl.gz"
    negative: str = "metabolites/massbank_ms2_negMH_permissive.jsonl.gz"
    other: str = "metabolites/massbank_ms2_other_permissive.jsonl.gz"
    candidates: str = "metabolites/pubchem_candidate_sets_dev.tar.gz"
    joint: tuple = ("alignf", "1.0")
    formula_joint: tuple = ()
    max_main: int | None = 1500
    min_structures: int = 20
    learning_curve: tuple = (10, 25, 50, 100, 200)
    figures: tuple = FIGURES
    figure_folds: int = 3
    store: str = ""
    update: bool = True


#: Every part on the data folder's few structures: 5 structures make a rare type, curves at 4 and full size, the
#: negative figures with 2 folds.
QUICK = Config(min_structures=5, learning_curve=(4,), max_main=60, figures=("negative",), figure_folds=2,
               update=False)
OUTPUTS = Outputs(json="ion_modes.json", markdown="metabolites_ion_modes.md", json_indent=1, json_newline=False)


def run(config, data, previous=None, checkpoint=None):
    """The parts of ``config.parts``, over ``previous`` (the existing results) when updating; ``checkpoint`` saves
    the results after each long step."""
    unknown = set(config.parts) - set(PARTS) or set(config.figures) - set(FIGURES)
    if unknown:
        raise ValueError(f"parts / figures: expected names among {PARTS} / {FIGURES}, got {sorted(unknown)}")
    report = dict(previous) if previous else {}
    save = checkpoint or (lambda partial: None)

    def log(message):
        print(message, flush=True)

    for part, kind, joint in (("cv", "fold", config.joint), ("cv_formula", "formula", config.formula_joint)):
        if part in config.parts:
            report[part] = run_cv(config, data, kind, joint, log, lambda cv, p=part: save({**report, p: cv}))
            save(report)
    if "figures" in config.parts:
        report["figures"] = run_figures(config, data, dict(report.get("figures", {})), log,
                                        lambda figures: save({**report, "figures": figures}))
    return report
