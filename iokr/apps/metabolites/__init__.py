"""Metabolite identification from MS/MS spectra (Brouard et al. 2016): spectra reading and cleaning, spectrum
kernels, RDKit fingerprints, candidate lists and a formula-keyed candidate store, train / identify / evaluate.

RDKit is needed for fingerprints and candidates, matchms for MGF/MSP files (``pip install 'iokr[chem]'``).
"""

from ._candidates import CandidateList, CandidateStore, read_candidate_lists
from ._fingerprints import FINGERPRINT_PARTS, FINGERPRINTS, Fingerprinter, inchikey, parse_structure
from ._kernels import BinnedKernel, PeakProductKernel, normalized_gram
from ._model import MetaboliteIdentifier, alignf_weights, make_spectrum_kernel
from ._persist import load_identifier, save_identifier
from ._pipeline import Cleaning, cross_validate, evaluate_lists, formula_candidate_sets, training_set
from ._readers import ReadReport, read_massbank_jsonl, read_spectra
from ._spectra import Spectra, clean_spectra, concatenate, merge_spectra

__all__ = [
    "FINGERPRINTS",
    "FINGERPRINT_PARTS",
    "BinnedKernel",
    "CandidateList",
    "CandidateStore",
    "Cleaning",
    "Fingerprinter",
    "MetaboliteIdentifier",
    "PeakProductKernel",
    "ReadReport",
    "Spectra",
    "alignf_weights",
    "clean_spectra",
    "concatenate",
    "cross_validate",
    "evaluate_lists",
    "formula_candidate_sets",
    "inchikey",
    "load_identifier",
    "make_spectrum_kernel",
    "merge_spectra",
    "normalized_gram",
    "parse_structure",
    "read_candidate_lists",
    "read_massbank_jsonl",
    "read_spectra",
    "save_identifier",
    "training_set",
]
