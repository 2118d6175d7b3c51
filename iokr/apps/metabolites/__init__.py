"""Metabolite identification from MS/MS spectra (Brouard et al. 2016): spectra reading and cleaning, spectrum
kernels, RDKit fingerprints, candidate lists and a formula-keyed candidate store, train / identify / evaluate.

RDKit is needed for fingerprints and candidates, matchms for MGF/MSP files (``pip install 'iokr[chem]'``).
"""

from .candidates._candidates import CandidateList, CandidateStore, read_candidate_lists
from .candidates._database import StructureDatabase
from .chemistry._annotation import AnnotationReport, AnnotationSettings, annotate, precursor_ion, subformulas
from .chemistry._fingerprints import FINGERPRINT_PARTS, FINGERPRINTS, Fingerprinter, inchikey, parse_structure
from .chemistry._formulas import FormulaError, canonical_formula
from .exporting._report_page import REPORT_FILE, ReportCandidates, report_html
from .importing._readers import ReadReport, read_massbank_jsonl, read_spectra
from .kernels._annotated_kernels import FormulaTokenKernel
from .kernels._kernels import BinnedKernel, PeakProductKernel, SpectrumKernel, normalized_gram
from .model._model import MetaboliteIdentifier, alignf_weights, make_output_kernel, make_spectrum_kernel
from .model._persist import load_fingerprinter, load_identifier, save_identifier
from .model._submodels import MetaboliteModel, load_metabolite_model, save_metabolite_model
from .model._training import DEFAULT_MIN_STRUCTURES
from .ranking._identify import QUERY_COLUMNS, RESULT_COLUMNS, IdentifySettings
from .selection._pipeline import (
    Cleaning,
    cross_validate,
    evaluate_lists,
    fold_candidate_sets,
    fold_ids,
    formula_candidate_sets,
    topk_percentages,
    training_set,
)
from .spectra._spectra import Spectra, clean_spectra, concatenate, merge_spectra
from .workflows._default_model import default_model_path, ensure_default_model, forget_verified_model
from .workflows._jobs import (
    DEFAULT_FINGERPRINT,
    DEFAULT_GRID,
    DEFAULT_PARAMS,
    DEFAULT_SURROGATE,
    Feedback,
    TrainingConfig,
    evaluate_job,
    identify_job,
    train_job,
)

__all__ = [
    "DEFAULT_PARAMS",
    "DEFAULT_MIN_STRUCTURES",
    "SpectrumKernel",
    "make_output_kernel",
    "subformulas",
    "topk_percentages",
    "AnnotationReport",
    "AnnotationSettings",
    "FormulaTokenKernel",
    "annotate",
    "precursor_ion",
    "DEFAULT_FINGERPRINT",
    "DEFAULT_GRID",
    "DEFAULT_SURROGATE",
    "FINGERPRINTS",
    "FINGERPRINT_PARTS",
    "QUERY_COLUMNS",
    "REPORT_FILE",
    "ReportCandidates",
    "report_html",
    "RESULT_COLUMNS",
    "BinnedKernel",
    "CandidateList",
    "CandidateStore",
    "Cleaning",
    "Feedback",
    "Fingerprinter",
    "IdentifySettings",
    "MetaboliteIdentifier",
    "PeakProductKernel",
    "ReadReport",
    "Spectra",
    "StructureDatabase",
    "TrainingConfig",
    "alignf_weights",
    "clean_spectra",
    "concatenate",
    "cross_validate",
    "FormulaError",
    "canonical_formula",
    "default_model_path",
    "ensure_default_model",
    "forget_verified_model",
    "evaluate_job",
    "evaluate_lists",
    "fold_candidate_sets",
    "fold_ids",
    "formula_candidate_sets",
    "identify_job",
    "inchikey",
    "load_fingerprinter",
    "load_identifier",
    "load_metabolite_model",
    "MetaboliteModel",
    "save_metabolite_model",
    "make_spectrum_kernel",
    "merge_spectra",
    "normalized_gram",
    "parse_structure",
    "read_candidate_lists",
    "read_massbank_jsonl",
    "read_spectra",
    "save_identifier",
    "train_job",
    "training_set",
]
