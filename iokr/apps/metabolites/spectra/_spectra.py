"""MS/MS spectra as a compact peak store (CSR layout), with cleaning and per-structure merging.

One :class:`Spectra` object holds many spectra: all peaks concatenated in ``mz`` / ``intensity``, spectrum ``i``
owning ``offsets[i]:offsets[i + 1]``, plus one precursor m/z and one metadata dict (accession, licence, structure)
per spectrum. Kernels read the arrays directly, so no Python object is created per peak.
"""

from __future__ import annotations

import numpy as np

from ....exceptions import IOKRDataError

#: Metadata kept per spectrum (accession and licence must follow any redistributed record). The precursor ion is
#: kept raw, as the file writes it (``adduct``, ``adduct_source`` = ``"name"`` when read from a library name,
#: ``ion_mode``, ``charge``): :func:`~._adducts.read_precursor_ion` interprets it. ``peak_problem``: why a query's
#: peaks were dropped (``keep_empty``); ``inchi_unreadable``: an InChI RDKit rejected, replaced by the SMILES.
METADATA_KEYS = ("accession", "license", "name", "inchikey", "inchi", "smiles", "formula", "source", "adduct",
                 "record", "feature_id", "scans", "title", "spectrum_id", "native_id", "ion_mode", "charge",
                 "adduct_source", "peak_problem", "inchi_unreadable")


class Spectra:
    """A collection of centroided MS/MS spectra.

    Parameters
    ----------
    mz, intensity : ndarray of shape (n_peaks,)
        All peaks, spectrum after spectrum; within a spectrum sorted by m/z.
    offsets : ndarray of int64, shape (n_spectra + 1,)
        Spectrum ``i`` owns peaks ``offsets[i]:offsets[i + 1]``.
    precursor_mz : ndarray of shape (n_spectra,)
        Precursor m/z; ``NaN`` when unknown.
    metadata : list of dict, optional
        One dict per spectrum (keys of ``METADATA_KEYS``).

    Notes
    -----
    ``Spectra`` behaves like a 2-D array for the kernel machinery: ``len``, ``shape[0]``, ``dtype`` and row slicing
    (``spectra[a:b]``, ``spectra[index_array]``) return a new ``Spectra``.
    """

    dtype = np.dtype(np.float64)
    ndim = 2

    def __init__(self, mz, intensity, offsets, precursor_mz, metadata=None):
        self.mz = np.ascontiguousarray(mz, dtype=np.float64)
        self.intensity = np.ascontiguousarray(intensity, dtype=np.float64)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.precursor_mz = np.ascontiguousarray(precursor_mz, dtype=np.float64)
        n = self.offsets.size - 1
        if self.mz.shape != self.intensity.shape or self.offsets[0] != 0 or self.offsets[-1] != self.mz.size \
                or self.precursor_mz.shape != (n,) or np.any(np.diff(self.offsets) < 0):
            raise ValueError("Spectra: inconsistent peak arrays, offsets and precursor m/z.")
        self.metadata = [dict() for _ in range(n)] if metadata is None else list(metadata)
        if len(self.metadata) != n:
            raise ValueError(f"Spectra: {len(self.metadata)} metadata entries for {n} spectra.")

    @classmethod
    def from_peak_lists(cls, peak_lists, precursor_mz, metadata=None):
        """Build from one ``(n_peaks_i, 2)`` array of ``[m/z, intensity]`` rows per spectrum.

        Peaks are sorted by m/z; non-finite values, an m/z <= 0 or a negative intensity raise
        :class:`~iokr.exceptions.IOKRDataError` naming the spectrum.

        Parameters
        ----------
        peak_lists : sequence of array-like of shape (n_peaks_i, 2)
            ``[m/z, intensity]`` rows of each spectrum, in any order; empty for a spectrum without peaks.
        precursor_mz : array-like of shape (n_spectra,)
            Precursor m/z per spectrum; ``NaN`` when unknown.
        metadata : list of dict, optional
            One dict per spectrum (keys of ``METADATA_KEYS``); empty dicts by default.

        Returns
        -------
        spectra : Spectra
            The spectra, in the order of ``peak_lists``.
        """
        arrays = []
        for i, peaks in enumerate(peak_lists):
            arr = np.asarray(peaks, dtype=np.float64).reshape(-1, 2) if len(peaks) else np.zeros((0, 2))
            if not np.isfinite(arr).all() or (arr.size and (arr[:, 0].min() <= 0 or arr[:, 1].min() < 0)):
                name = (metadata[i].get("accession") if metadata else None) or f"#{i}"
                raise IOKRDataError(f"Spectrum {name}: peaks must be finite with m/z > 0 and intensity >= 0.")
            arrays.append(arr[np.argsort(arr[:, 0], kind="stable")])
        sizes = [a.shape[0] for a in arrays]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        stacked = np.concatenate(arrays, axis=0) if arrays else np.zeros((0, 2))
        return cls(stacked[:, 0], stacked[:, 1], offsets, precursor_mz, metadata)

    # -- array-like protocol ---------------------------------------------------------------------------------------
    def __len__(self):
        return self.offsets.size - 1

    @property
    def shape(self):
        """Shape ``(n_spectra, 2)``, so the kernel machinery can treat the spectra like rows of a 2-D array."""
        return (len(self), 2)

    @property
    def n_peaks(self):
        """Peaks per spectrum, shape (n_spectra,)."""
        return np.diff(self.offsets)

    def peaks(self, i):
        """Return the peaks of spectrum ``i`` as views (no copy).

        Parameters
        ----------
        i : int
            Spectrum index.

        Returns
        -------
        mz : ndarray of shape (n_peaks_i,)
            Peak m/z, ascending.
        intensity : ndarray of shape (n_peaks_i,)
            Intensities, in the same order.
        """
        a, b = self.offsets[i], self.offsets[i + 1]
        return self.mz[a:b], self.intensity[a:b]

    def spectrum_index(self):
        """Return the spectrum each peak belongs to.

        Returns
        -------
        index : ndarray of int, shape (n_peaks,)
            Spectrum index of every peak of ``mz`` / ``intensity``, non-decreasing.
        """
        return np.repeat(np.arange(len(self)), self.n_peaks)

    def __getitem__(self, rows):
        if isinstance(rows, slice):
            rows = np.arange(len(self))[rows]
        rows = np.atleast_1d(np.asarray(rows))
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        starts, sizes = self.offsets[rows], self.n_peaks[rows]
        take = _ranges(starts, sizes)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        return Spectra(self.mz[take], self.intensity[take], offsets, self.precursor_mz[rows],
                       [self.metadata[i] for i in rows])

    def field(self, key):
        """Return one metadata field of every spectrum.

        Parameters
        ----------
        key : str
            Metadata key (one of ``METADATA_KEYS``, or any other key the dicts hold).

        Returns
        -------
        values : list of length n_spectra
            The value per spectrum, ``None`` where missing.
        """
        return [m.get(key) for m in self.metadata]

    def structure_keys(self):
        """Return the first InChIKey block (connectivity) per spectrum: the unit of structure-disjoint splits.

        Returns
        -------
        keys : list of str, length n_spectra
            The first 14 characters of each ``inchikey``; ``""`` for a spectrum without one.
        """
        return [(k or "")[:14] for k in self.field("inchikey")]

    def __repr__(self):
        return f"Spectra(n_spectra={len(self)}, n_peaks={self.mz.size})"


def _ranges(starts, sizes):
    """Concatenation of ``arange(s, s + n)`` for each pair, vectorized."""
    total = int(np.sum(sizes))
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(sizes)
    shift = np.repeat(starts - (ends - sizes), sizes)
    return np.arange(total) + shift


def concatenate(spectra_list):
    """Concatenate several :class:`Spectra` into one.

    Parameters
    ----------
    spectra_list : sequence of Spectra
        The collections, in order.

    Returns
    -------
    spectra : Spectra
        All their spectra, in the order given, with their metadata.
    """
    offsets = [np.zeros(1, dtype=np.int64)]
    base = 0
    for s in spectra_list:
        offsets.append(s.offsets[1:] + base)
        base += s.mz.size
    return Spectra(np.concatenate([s.mz for s in spectra_list]), np.concatenate([s.intensity for s in spectra_list]),
                   np.concatenate(offsets), np.concatenate([s.precursor_mz for s in spectra_list]),
                   [m for s in spectra_list for m in s.metadata])


def clean_spectra(spectra, *, min_relative_intensity=0.01, max_peaks=None, remove_precursor=True,
                  precursor_tolerance=0.5, mz_min=0.0, sqrt_intensity=False):
    """Clean every spectrum and rescale its intensities to a maximum of 1.

    Parameters
    ----------
    spectra : Spectra
        Spectra to clean (not modified).
    min_relative_intensity : float, default=0.01
        Drop peaks below this fraction of the spectrum's most intense peak (after precursor removal).
    max_peaks : int, optional
        Keep at most this many most intense peaks.
    remove_precursor : bool, default=True
        Drop peaks with m/z above ``precursor_mz - precursor_tolerance`` (the precursor and anything heavier).
    precursor_tolerance : float, default=0.5
        Margin (Da) below the precursor m/z for ``remove_precursor``.
    mz_min : float, default=0.0
        Drop peaks with lower m/z.
    sqrt_intensity : bool, default=False
        Replace intensities by their square roots (after scaling), which damps dominant peaks.

    Returns
    -------
    cleaned : Spectra
        A new object; spectra may become empty (no peak left), never removed, so rows stay aligned.
    """
    if not 0 <= min_relative_intensity < 1:
        raise ValueError(f"'min_relative_intensity' must be in [0, 1), got {min_relative_intensity!r}.")
    if max_peaks is not None and (not isinstance(max_peaks, (int, np.integer)) or max_peaks < 1):
        raise ValueError(f"'max_peaks' must be a positive int or None, got {max_peaks!r}.")
    spec = spectra.spectrum_index()
    keep = spectra.mz > mz_min
    if remove_precursor:
        limit = spectra.precursor_mz[spec] - precursor_tolerance
        keep &= ~(spectra.mz > limit)  # NaN precursor: nothing removed
    intensity = np.where(keep, spectra.intensity, 0.0)
    n = len(spectra)
    peak_max = np.zeros(n)
    np.maximum.at(peak_max, spec, intensity)
    scale = np.divide(1.0, peak_max, out=np.zeros(n), where=peak_max > 0)
    relative = intensity * scale[spec]
    keep &= relative > 0
    keep &= relative >= min_relative_intensity
    if max_peaks is not None:
        # rank peaks within each spectrum by decreasing intensity: sort by (spectrum, -intensity)
        order = np.lexsort((-relative, spec))
        rank = np.empty_like(order)
        starts = spectra.offsets[:-1]
        rank[order] = np.arange(order.size) - np.repeat(starts, spectra.n_peaks)
        keep &= rank < max_peaks
    values = np.sqrt(relative) if sqrt_intensity else relative
    counts = np.bincount(spec[keep], minlength=n)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return Spectra(spectra.mz[keep], values[keep], offsets, spectra.precursor_mz, spectra.metadata)


def merge_spectra(spectra, groups=None, *, mz_tolerance=0.01):
    """Merge the spectra of each group (by default: each structure, first InChIKey block) into one spectrum.

    Peaks of all the group's spectra (intensities scaled to a maximum of 1 per spectrum) are pooled, sorted by m/z
    and clustered greedily: a peak within ``mz_tolerance`` of the previous one joins its cluster. A cluster becomes
    one peak at the intensity-weighted mean m/z with the mean intensity over the group's spectra (spectra lacking
    the peak count as 0), then rescaled to a maximum of 1.

    Parameters
    ----------
    spectra : Spectra
        Spectra to merge (usually cleaned; not modified).
    groups : sequence of hashable, optional
        Group label per spectrum; ``spectra.structure_keys()`` by default.
    mz_tolerance : float, default=0.01
        Largest m/z gap (Da) between consecutive pooled peaks of one cluster.

    Returns
    -------
    merged : Spectra
        One spectrum per group, in order of first appearance; metadata of the group's first spectrum plus
        ``n_merged`` and the list of merged ``accessions``.
    labels : list
        The group label of every merged spectrum.
    """
    groups = spectra.structure_keys() if groups is None else list(groups)
    if len(groups) != len(spectra):
        raise ValueError(f"'groups' must have one label per spectrum ({len(spectra)}), got {len(groups)}.")
    labels, group_of = [], {}
    gid = np.empty(len(spectra), dtype=np.int64)
    for i, g in enumerate(groups):
        if g not in group_of:
            group_of[g] = len(labels)
            labels.append(g)
        gid[i] = group_of[g]
    n_groups = len(labels)
    spec = spectra.spectrum_index()
    peak_max = np.zeros(len(spectra))
    np.maximum.at(peak_max, spec, spectra.intensity)
    scale = np.divide(1.0, peak_max, out=np.zeros(len(spectra)), where=peak_max > 0)
    rel = spectra.intensity * scale[spec]
    pg = gid[spec]
    order = np.lexsort((spectra.mz, pg))
    mz, rel, pg = spectra.mz[order], rel[order], pg[order]
    new_cluster = np.ones(mz.size, dtype=bool)
    new_cluster[1:] = (pg[1:] != pg[:-1]) | (np.diff(mz) > mz_tolerance)
    cluster = np.cumsum(new_cluster) - 1
    n_clusters = int(cluster[-1]) + 1 if mz.size else 0
    weight = np.bincount(cluster, weights=rel, minlength=n_clusters)
    weighted_mz = np.bincount(cluster, weights=rel * mz, minlength=n_clusters)
    plain_mz = np.bincount(cluster, weights=mz, minlength=n_clusters) / np.maximum(
        np.bincount(cluster, minlength=n_clusters), 1)
    c_mz = np.divide(weighted_mz, weight, out=plain_mz.copy(), where=weight > 0)
    c_group = pg[new_cluster]
    n_in_group = np.bincount(gid, minlength=n_groups)
    c_int = weight / n_in_group[c_group]
    g_max = np.zeros(n_groups)
    np.maximum.at(g_max, c_group, c_int)
    c_int = c_int * np.divide(1.0, g_max, out=np.zeros(n_groups), where=g_max > 0)[c_group]
    counts = np.bincount(c_group, minlength=n_groups)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    first = np.full(n_groups, -1)
    precursor = np.full(n_groups, np.nan)
    accessions = [[] for _ in range(n_groups)]
    for i in range(len(spectra)):
        g = gid[i]
        if first[g] < 0:
            first[g] = i
        if np.isnan(precursor[g]) and np.isfinite(spectra.precursor_mz[i]):
            precursor[g] = spectra.precursor_mz[i]
        accessions[g].append(spectra.metadata[i].get("accession"))
    metadata = []
    for g in range(n_groups):
        meta = dict(spectra.metadata[first[g]])
        meta["n_merged"] = int(n_in_group[g])
        meta["accessions"] = accessions[g]
        metadata.append(meta)
    return Spectra(c_mz, c_int, offsets, precursor, metadata), labels
