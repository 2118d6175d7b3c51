"""Accuracy studies on real data, behind ``reports/``: ``python -m experiments NAME --data DIR [--quick]``.

Each study is one module (or package) of this folder with the same surface:

- ``Config``: a frozen dataclass of every choice of the study (its defaults are the committed report's run);
- ``QUICK``: the ``Config`` of a smoke run (``--quick``), small enough for the bundled data subsets;
- ``OUTPUTS``: its report files (:class:`experiments._common.reports.Outputs`);
- ``run(config, data, previous=None, checkpoint=None) -> dict``: the results, JSON-ready (``data`` is the shared
  data folder; ``previous`` the study's earlier results when it updates them; ``checkpoint(report)`` saves a partial
  report between long steps);
- ``render(report) -> str``: the Markdown report.

Speed and memory benchmarks are in ``benchmarks/`` (``python -m benchmarks.run``).
"""

import importlib

#: Study name -> one line on what it measures (the module is ``experiments.<name>``).
STUDIES = {
    "core": "cross-lingual retrieval (IOKR vs LSA+CCA) and bibtex multi-label (issue 2)",
    "confidence_calibration": "metabolites: features of the top hit's confidence chosen by CV on decoy lists",
    "formula_hypotheses": "metabolites: comparing candidates of different formulas without a query formula",
    "ion_modes": "metabolites: ion modes and precursor types, separate or joint sub-models, rare types (issue 28)",
    "metabolite_baseline": "metabolites: IOKR vs a CSI:FingerID-style baseline on the same folds and lists",
    "model_selection": "alpha and kernel chosen by closed-form CV (retrieval, bibtex, Boston housing)",
    "mpiokr": "cross-lingual retrieval, IOKR vs MP-IOKR (Brouard et al. 2017)",
    "mpiokr_metabolites": "metabolites: MP-IOKR vs IOKR on stand-in training candidate sets",
    "multilabel": "IOKR vs binary relevance and classifier chains on 13 Mulan sets",
    "multilabel_grid": "training-split CV curves behind the multi-label default grid",
    "pairwise": "pairwise learning: Davis, KIBA, Metz, Yamanishi, Boston ranking, rock-paper-scissors",
    "single_spectra_metabolites": "metabolites: training on single spectra per structure vs merged spectra",
    "sketched_metabolites": "metabolites: sketched (Nystrom) IOKR on all MassBank single spectra",
    "strings": "string KDE: OCR words and CMUdict grapheme-to-phoneme",
    "structure_prior": "metabolites: the structure prior's weight chosen by CV with decoy lists",
    "text": "context-sensitive spelling correction with positional kernels (issue 10)",
}


def load(name):
    """The module of study ``name`` (a key of :data:`STUDIES`).

    Raises
    ------
    KeyError
        ``name`` is not a study; the message lists them.
    """
    if name not in STUDIES:
        raise KeyError(f"unknown study {name!r}; expected one of: {', '.join(STUDIES)}")
    return importlib.import_module(f"experiments.{name}")
