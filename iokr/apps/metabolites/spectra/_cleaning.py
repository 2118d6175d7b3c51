"""The peak cleaning applied to every spectrum, training and queries alike (one settings object, saved in model
files)."""

from __future__ import annotations

from dataclasses import dataclass

from ._spectra import clean_spectra, merge_spectra


@dataclass
class Cleaning:
    """Peak cleaning applied to every spectrum (training and queries alike).

    Parameters
    ----------
    min_relative_intensity : float, default=0.01
        Drop peaks below this fraction of their spectrum's most intense peak (each single spectrum).
    remove_precursor : bool, default=True
        Drop peaks with m/z above ``precursor_mz - 0.5`` in each single spectrum (see :func:`clean_spectra`).
    max_peaks_single : int or None, default=None
        Keep at most this many most intense peaks per single spectrum; ``None`` keeps all.
    max_peaks_merged : int, default=100
        Keep at most this many most intense peaks per merged spectrum.
    merge_mz_tolerance : float, default=0.01
        Largest m/z gap (Da) between consecutive pooled peaks of one merged peak (see :func:`merge_spectra`).
    """

    min_relative_intensity: float = 0.01
    remove_precursor: bool = True
    max_peaks_single: int | None = None
    max_peaks_merged: int = 100
    merge_mz_tolerance: float = 0.01

    def single(self, spectra):
        """Clean single spectra: precursor removal, relative-intensity threshold, peak cap, rescaling to 1.

        Parameters
        ----------
        spectra : Spectra
            Spectra as read.

        Returns
        -------
        cleaned : Spectra
            A new object with one row per input spectrum (some possibly without peaks).
        """
        return clean_spectra(spectra, min_relative_intensity=self.min_relative_intensity,
                             max_peaks=self.max_peaks_single, remove_precursor=self.remove_precursor)

    def merged(self, cleaned, groups=None):
        """Merge cleaned spectra per group, then keep the ``max_peaks_merged`` most intense peaks of each.

        Parameters
        ----------
        cleaned : Spectra
            Spectra cleaned by :meth:`single`.
        groups : sequence of hashable, optional
            Group label per spectrum; the first InChIKey block of each spectrum by default.

        Returns
        -------
        merged : Spectra
            One spectrum per group, in order of first appearance (see :func:`merge_spectra`).
        labels : list
            The group label of every merged spectrum.
        """
        merged, labels = merge_spectra(cleaned, groups, mz_tolerance=self.merge_mz_tolerance)
        merged = clean_spectra(merged, min_relative_intensity=0.0, max_peaks=self.max_peaks_merged,
                               remove_precursor=False)
        return merged, labels

    def params(self):
        """Return the settings as a dict, as model files store them (``Cleaning(**params)`` rebuilds them).

        Returns
        -------
        params : dict
            Field name to value.
        """
        return dict(self.__dict__)
