"""Real-data evaluation of string KDE (Cortes, Mohri & Weston 2005): OCR words and CMUdict grapheme-to-phoneme.

Usage: ``python -m experiments strings --data /work/shared/data [--output reports] [--quick]``

Writes ``reports/strings.json`` and ``reports/strings.md``.

Protocol
--------
- OCR (Taskar's 6,877 words, 10 folds): train on fold 0, test on folds 1-9 (the paper's "one fold for training,
  nine for testing"; we run the first fold only, not all ten, to keep the shared machine free).
  Hyperparameters are chosen by 3-fold cross-validation over words *inside the training fold*.
  Letter accuracy = 1 - sum_i ED(y_i, yhat_i) / sum_i |y_i| (Levenshtein distance: extra or missing letters are
  errors); with perfect segmentation it is the fraction of correct letters.
  (a) perfect segmentation: per-letter kernel ridge onto the 26 one-hot letters, Viterbi with a letter n-gram
      model of the training words, n = 2 and 3. The CV grid (see :func:`segmented`) covers the segment model (the
      paper's cubic kernel on pixels, or a Gaussian kernel on Gaussian-blurred pixels), alpha, raw outputs vs
      logistic calibration fitted on closed-form leave-one-out outputs (emission log P(c|x) - b log P(c)), and the
      LM weight;
  (b) string-to-string without segmentation: input kernel = product kernel on padded image n-grams
      (SequenceProductKernel, Gaussian per image) or eq. 15 for comparison; output = letter n-gram counts (orders
      1..n); candidates = Euler-walk pre-images (learned rounding thresholds, degree repair) and a beam search under
      the exact KDE objective + a letter 5-gram model, ranked together; length either constrained to the predicted
      one (rounded predicted unigram total) or free. See :func:`string_to_string`.
- g2p (CMUdict 1.1.3, first pronunciation of purely a-z words, stress removed: 39 phonemes): words shuffled with
  numpy seed 0; the first 3,000 train, the next 1,000 test. Input: letter n-gram kernel (n = 1..3); output: phoneme
  n-gram counts and Euler pre-image. Phoneme error rate (edit distance / reference length) and word error rate.
"""


from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from experiments._common.reports import Outputs
from experiments.strings.report import render  # noqa: F401 (the study's surface)
from experiments.strings.segmented import segmented
from experiments.strings.string_to_string import g2p, string_to_string
from iokr.strings import load_ocr_letters

SECTIONS = ("segmented", "s2s", "g2p")


@dataclass(frozen=True)
class Config:
    """The study's choices.

    Attributes
    ----------
    quick : bool
        Smaller grids and splits in every section (smoke run).
    only : tuple of str
        Sections run, among :data:`SECTIONS`; the others are kept from the existing JSON when ``update``.
    update : bool
        Merge into the existing ``strings.json``.
    """

    quick: bool = False
    only: tuple = SECTIONS
    update: bool = True


#: Perfect segmentation only, small grids (``--set only=segmented,s2s`` adds string-to-string, minutes even on
#: the bundled words; ``g2p`` needs CMUdict).
QUICK = Config(quick=True, only=("segmented",), update=False)
#: The benchmark summary at the end of strings.md comes from ``python -m benchmarks.run --only strings``.
OUTPUTS = Outputs(json="strings.json", markdown="strings.md", keep="## Benchmarks", json_newline=False)


def run(config, data, previous=None, checkpoint=None):
    """The sections of ``config.only`` over ``previous``; ``checkpoint(report)`` after each section."""
    unknown = set(config.only) - set(SECTIONS)
    if unknown:
        raise ValueError(f"only: expected sections among {SECTIONS}, got {sorted(unknown)}")
    report = dict(previous) if previous else {}
    report["machine_note"] = "timings on a shared 2-core machine (other jobs running); indicative only"
    report["quick"] = config.quick
    ocr = load_ocr_letters(Path(data) / "ocr_letters")
    steps = (("segmented", "ocr_perfect_segmentation", lambda: segmented(ocr, quick=config.quick)),
             ("s2s", "ocr_string_to_string", lambda: string_to_string(ocr, quick=config.quick)),
             ("g2p", "g2p_cmudict", lambda: g2p(data, quick=config.quick)))
    for section, key, compute in steps:
        if section in config.only:
            report[key] = compute()
            if checkpoint:
                checkpoint(report)
    return report
