import numpy as np
import pytest
from metab_helpers import random_spectra

from iokr.apps.metabolites import Spectra, clean_spectra, concatenate, merge_spectra
from iokr.exceptions import IOKRDataError


def _naive_clean(mz, inten, precursor, threshold, max_peaks, remove_precursor, tol):
    keep = np.ones(mz.size, bool)
    if remove_precursor and np.isfinite(precursor):
        keep &= mz <= precursor - tol
    mz, inten = mz[keep], inten[keep]
    if mz.size == 0 or inten.max() <= 0:
        return mz[:0], inten[:0]
    rel = inten / inten.max()
    keep = (rel >= threshold) & (rel > 0)
    mz, rel = mz[keep], rel[keep]
    if max_peaks is not None and mz.size > max_peaks:
        order = np.lexsort((np.arange(rel.size), -rel))[:max_peaks]
        order.sort()
        mz, rel = mz[order], rel[order]
    return mz, rel


@pytest.mark.parametrize("threshold", [0.0, 0.2])
@pytest.mark.parametrize("max_peaks", [None, 3])
@pytest.mark.parametrize("remove_precursor", [True, False])
def test_clean_matches_naive(threshold, max_peaks, remove_precursor):
    rng = np.random.default_rng(1)
    S = random_spectra(rng, 30, empty_every=7, mz_range=(50, 200))
    S.precursor_mz[::3] = 120.0  # some precursors inside the peak range
    S.precursor_mz[4] = np.nan
    C = clean_spectra(S, min_relative_intensity=threshold, max_peaks=max_peaks, remove_precursor=remove_precursor,
                      precursor_tolerance=0.5)
    assert len(C) == len(S)
    for i in range(len(S)):
        mz, inten = S.peaks(i)
        ref_mz, ref_int = _naive_clean(mz, inten, S.precursor_mz[i], threshold, max_peaks, remove_precursor, 0.5)
        got_mz, got_int = C.peaks(i)
        np.testing.assert_array_equal(got_mz, ref_mz)
        np.testing.assert_allclose(got_int, ref_int, rtol=1e-12)


def test_slicing_and_concatenate_roundtrip():
    rng = np.random.default_rng(2)
    S = random_spectra(rng, 10)
    parts = concatenate([S[:3], S[3:7], S[np.array([7, 8, 9])]])
    np.testing.assert_array_equal(parts.mz, S.mz)
    np.testing.assert_array_equal(parts.offsets, S.offsets)
    assert parts.field("accession") == S.field("accession")
    sub = S[np.array([5, 1])]
    np.testing.assert_array_equal(sub.peaks(0)[0], S.peaks(5)[0])
    np.testing.assert_array_equal(sub.peaks(1)[1], S.peaks(1)[1])


def test_from_peak_lists_rejects_bad_values():
    with pytest.raises(IOKRDataError, match="S1"):
        Spectra.from_peak_lists([[[100.0, -1.0]]], np.array([200.0]), [{"accession": "S1"}])
    with pytest.raises(IOKRDataError):
        Spectra.from_peak_lists([[[np.nan, 1.0]]], np.array([200.0]))


def test_merge_matches_naive_clustering():
    rng = np.random.default_rng(3)
    S = random_spectra(rng, 20, grid=1.0)
    groups = [i % 4 for i in range(len(S))]
    M, labels = merge_spectra(S, groups, mz_tolerance=0.05)
    assert labels == [0, 1, 2, 3]
    for g in range(4):
        members = [i for i in range(len(S)) if groups[i] == g]
        pts = []
        for i in members:
            mz, inten = S.peaks(i)
            pts += list(zip(mz, inten / inten.max(), strict=True))
        pts.sort()
        clusters, current = [], [pts[0]]
        for p in pts[1:]:
            if p[0] - current[-1][0] > 0.05:
                clusters.append(current)
                current = [p]
            else:
                current.append(p)
        clusters.append(current)
        ref_int = np.array([sum(w for _, w in c) / len(members) for c in clusters])
        ref_mz = np.array([sum(m * w for m, w in c) / sum(w for _, w in c) for c in clusters])
        mz, inten = M.peaks(g)
        np.testing.assert_allclose(mz, ref_mz, rtol=1e-12)
        np.testing.assert_allclose(inten, ref_int / ref_int.max(), rtol=1e-12)
        assert M.metadata[g]["n_merged"] == len(members)
        assert M.metadata[g]["accessions"] == [S.metadata[i]["accession"] for i in members]
