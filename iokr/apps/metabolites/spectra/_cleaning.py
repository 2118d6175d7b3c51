"""The peak cleaning applied to every spectrum, training and queries alike (one settings object, saved in model
files)."""

from __future__ import annotations

from dataclasses import dataclass

from ._spectra import clean_spectra, merge_spectra


@dataclass
class Cleaning:
    """Peak cleaning applied to every spectrum (training and queries alike)."""

    min_relative_intensity: float = 0.01
    remove_precursor: bool = True
    max_peaks_single: int | None = None
    max_peaks_merged: int = 100
    merge_mz_tolerance: float = 0.01

    def single(self, spectra):
        return clean_spectra(spectra, min_relative_intensity=self.min_relative_intensity,
                             max_peaks=self.max_peaks_single, remove_precursor=self.remove_precursor)

    def merged(self, cleaned, groups=None):
        merged, labels = merge_spectra(cleaned, groups, mz_tolerance=self.merge_mz_tolerance)
        merged = clean_spectra(merged, min_relative_intensity=0.0, max_peaks=self.max_peaks_merged,
                               remove_precursor=False)
        return merged, labels

    def params(self):
        return dict(self.__dict__)
