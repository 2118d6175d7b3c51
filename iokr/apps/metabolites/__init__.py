"""Metabolite identification from MS/MS spectra (Brouard et al. 2016): rank candidate structures for each spectrum.

Three calls for a notebook, the same three the command line makes::

    from iokr.apps.metabolites import identify, train, evaluate
    results = identify("queries.mgf", "candidates.tsv")   # the ready model; or model="model.npz" from train()
    results.identifications_frame()                         # one row per query (needs pandas)
    results.write("out/")                                   # the command line's output folder

The package reads in the order data flows (``docs/metabolites.md`` shows the tree): ``spectra`` (the container,
cleaning) -> ``chemistry`` (formulas, adducts, structures, fingerprints, annotation) -> ``importing`` (files) ->
``kernels`` -> ``candidates`` (lists, store, database) -> ``model`` (the estimator, sub-models, confidence, files)
-> ``evaluation`` -> ``selection`` (cross-validation) -> ``exporting`` (output schema, writers, report) ->
``ranking`` (a query file against a candidate source) -> ``workflows`` (train, identify, evaluate); every default is
in ``defaults``. RDKit is needed for fingerprints and candidates, matchms for MGF/MSP files
(``pip install 'iokr[chem]'``).

Names are loaded on first access (PEP 562), so ``iokr.apps.metabolites.defaults`` is read without numpy.
"""

from importlib import import_module as _import_module

#: Public name -> the module defining it (relative to this package).
_LAZY = {
    # workflows: paths and settings in, typed results out
    "identify": "workflows._identify", "train": "workflows._api", "evaluate": "workflows._api",
    "IdentifyResults": "workflows._results", "TrainingResult": "workflows._api", "EvaluationResult": "workflows._api",
    "SubmodelSummary": "workflows._api", "IdentifySettings": "ranking._identify", "TrainingConfig": "workflows._fit",
    "Feedback": "workflows._feedback", "default_model_path": "workflows._default_model",
    "ensure_default_model": "workflows._default_model", "forget_verified_model": "workflows._default_model",
    # exporting
    "write_identify_folder": "exporting._writers", "CandidateTableWriter": "exporting._writers",
    "write_identify_files": "exporting._writers",
    "QUERY_COLUMNS": "exporting._schema", "RESULT_COLUMNS": "exporting._schema", "IDENTIFY_FILES": "exporting._schema",
    "REPORT_FILE": "exporting._schema", "ReportCandidates": "exporting._report_page", "report_html": "exporting._report_page",
    # spectra and files
    "Spectra": "spectra._spectra", "clean_spectra": "spectra._spectra", "merge_spectra": "spectra._spectra",
    "concatenate": "spectra._spectra", "Cleaning": "spectra._cleaning", "read_spectra": "importing._readers",
    "read_massbank_jsonl": "importing._readers", "ReadReport": "importing._readers",
    # chemistry
    "Fingerprinter": "chemistry._fingerprints", "FINGERPRINTS": "chemistry._fingerprints",
    "FINGERPRINT_PARTS": "chemistry._fingerprints", "inchikey": "chemistry._fingerprints",
    "parse_structure": "chemistry._fingerprints", "canonical_formula": "chemistry._formulas",
    "monoisotopic_mass": "chemistry._formulas", "FormulaError": "chemistry._formulas",
    "annotate": "chemistry._annotation", "AnnotationReport": "chemistry._annotation",
    "AnnotationSettings": "chemistry._annotation", "precursor_ion": "chemistry._annotation",
    "subformulas": "chemistry._annotation",
    # kernels
    "SpectrumKernel": "kernels._kernels", "PeakProductKernel": "kernels._kernels", "BinnedKernel": "kernels._kernels",
    "FormulaTokenKernel": "kernels._annotated_kernels",
    # candidates
    "CandidateList": "candidates._candidates", "CandidateStore": "candidates._candidate_store",
    "read_candidate_lists": "candidates._candidates", "StructureDatabase": "candidates._database",
    "ShardedStructureDatabase": "candidates._sharded_database", "build_store": "candidates._shard_build",
    # model
    "MetaboliteIdentifier": "model._model", "make_output_kernel": "kernels._factories",
    "make_spectrum_kernel": "kernels._factories", "MetaboliteModel": "model._submodels",
    "load_metabolite_model": "model._submodels", "save_metabolite_model": "model._submodels",
    "load_identifier": "model._persist", "save_identifier": "model._persist", "load_fingerprinter": "model._persist",
}

#: Names for studies and benchmarks (``experiments/``, ``benchmarks/``): stable, resolvable here, not part of the
#: user-facing ``__all__``.
_STUDY = {
    "parse_adduct": "chemistry._adducts", "AdductError": "chemistry._adducts",
    "molecular_formula": "chemistry._fingerprints", "expected_calibration_error": "model._confidence",
    "hypothesis_spectra": "model._hypotheses", "prediction_sq_norms": "model._hypotheses",
    "score_hypotheses": "model._hypotheses", "SCORING_WORKING_MEMORY": "model._model",
    "BUNDLED_DECOYS": "candidates._decoys", "decoy_lists": "candidates._decoys",
    "read_decoy_table": "candidates._decoys", "decoy_store": "candidates._decoys",
    "decoy_list_scores": "selection._calibration_examples", "has_isomer": "selection._calibration_examples",
    "training_list_examples": "selection._calibration_examples", "fit_calibration": "model._confidence",
    "top_hit_features": "model._confidence", "fit_calibration_on_lists": "model._confidence",
    "TrainingSet": "selection._pipeline", "cross_validate_refit": "selection._pipeline",
    "evaluate_lists": "evaluation._evaluation", "topk_percentages": "evaluation._evaluation",
    "cross_validate": "selection._pipeline", "training_set": "selection._pipeline", "fold_ids": "selection._pipeline",
    "formula_candidate_sets": "selection._pipeline", "normalized_gram": "kernels._kernels", "weighted_sum": "kernels._kernels",
}

#: Defaults, readable here as before (their one place is :mod:`.defaults`).
_DEFAULTS = frozenset({"DEFAULT_FINGERPRINT", "DEFAULT_PARAMS", "DEFAULT_GRID", "DEFAULT_SURROGATE",
                       "DEFAULT_MIN_STRUCTURES"})

__all__ = sorted(_LAZY)


#: Names this package had before the layout of issue #29, with where they went (said in the error).
_MOVED = {
    "identify_job": "identify(spectra, candidates, model) (it returns IdentifyResults; .write(folder) writes the "
                    "command line's folder)",
    "train_job": "train(spectra, output) (it returns a TrainingResult)",
    "evaluate_job": "evaluate(spectra, candidates) (it returns an EvaluationResult; .summary is the old dict)",
    "alignf_weights": "iokr.model_selection.alignf_gram_weights(grams, target)",
    "fold_candidate_sets": "iokr.model_selection.fold_candidate_sets(Y, folds)",
}


def __getattr__(name):
    module = "defaults" if name in _DEFAULTS else _LAZY.get(name) or _STUDY.get(name)
    if module is None:
        if name in _MOVED:  # an ImportError: ``from ... import`` would turn an AttributeError into a bare one
            raise ImportError(f"iokr.apps.metabolites.{name} was replaced: use {_MOVED[name]}.")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))

