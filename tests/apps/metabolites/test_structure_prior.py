"""The structure prior of candidate scoring: score = IOKR score + prior_weight x neighbour similarity."""

import numpy as np
import pytest
from metab_helpers import random_spectra

from iokr.apps.metabolites import Fingerprinter, MetaboliteIdentifier, load_identifier, save_identifier
from iokr.apps.metabolites.selection._calibration_examples import _training_list_scores
from iokr.apps.metabolites.selection._pipeline import Cleaning
from iokr.decoding import CandidateSets, CountFeatures, PackedBinaryFeatures


def _fitted(prior_weight, prior_neighbors=2, n=30, seed=0, output_kernel="tanimoto", binary=False):
    rng = np.random.default_rng(seed)
    spectra = random_spectra(rng, n, grid=1.0)
    Y = rng.integers(0, 3, size=(n, 16)).astype(np.float64)
    if binary:
        Y = np.minimum(Y, 1.0)
    model = MetaboliteIdentifier(kernels=("ppk", "binned"), output_kernel=output_kernel, prior_weight=prior_weight,
                                 prior_neighbors=prior_neighbors).fit(spectra, Y)
    return model, spectra, Y


def _tanimoto(a, b):
    dot = float(a @ b)
    return dot / float(a @ a + b @ b - dot)


def test_prior_adds_the_weighted_mean_of_the_nearest_training_similarities():
    plain, spectra, Y = _fitted(0.0)
    weighted, _, _ = _fitted(0.7, prior_neighbors=3)
    rng = np.random.default_rng(5)
    pool = rng.integers(0, 3, size=(12, 16)).astype(np.uint8)
    sets = CandidateSets(CountFeatures(pool), [np.array([0, 3, 5]), np.arange(12), np.array([11, 2])])
    queries = spectra[:3]
    base = plain.score_sets(queries, sets)
    got = weighted.score_sets(queries, sets)
    for q in range(3):
        rows = sets.indices[q]
        # brute force: every training structure's similarity, the 3 largest averaged
        prior = [np.mean(sorted((_tanimoto(pool[r].astype(float), y) for y in Y), reverse=True)[:3]) for r in rows]
        np.testing.assert_allclose(got[q], base[q] + 0.7 * np.array(prior), rtol=1e-6, atol=1e-9)


def _brute_prior(kernel, pool, Y, k):
    return np.array([np.mean(sorted((kernel(c, y) for y in Y), reverse=True)[:k]) for c in pool])


def _gaussian_tanimoto(a, b):
    return np.exp(-2.0 * (1.0 - _tanimoto(a, b)))


def _cosine(a, b):
    return float(a @ b) / np.sqrt(float(a @ a) * float(b @ b))


@pytest.mark.parametrize("output_kernel,kernel", [("tanimoto", _tanimoto), ("gaussian_tanimoto", _gaussian_tanimoto),
                                                  ("linear", _cosine)])
@pytest.mark.parametrize("pool_kind", ["dense", "counts", "packed"])
def test_prior_in_the_scoring_pass_or_apart_equals_brute_force(output_kernel, kernel, pool_kind):
    """The kernel outputs read the prior from the scoring's own candidate block (IOKR.rank's candidate_term), the
    linear output computes it apart; dense, count and bit-packed pools (the binary Tanimoto path) alike."""
    binary = pool_kind == "packed"
    plain, spectra, Y = _fitted(0.0, output_kernel=output_kernel, binary=binary)
    weighted, _, _ = _fitted(1.3, prior_neighbors=4, output_kernel=output_kernel, binary=binary)
    rng = np.random.default_rng(7)
    dense = rng.integers(0, 2 if binary else 3, size=(9, 16)).astype(np.uint8)
    dense[0] = 0 if output_kernel != "linear" else 1  # an all-zero candidate (Tanimoto 1 with an all-zero one)
    pool = {"dense": dense.astype(np.float64), "counts": CountFeatures(dense),
            "packed": PackedBinaryFeatures.from_dense(dense.astype(bool))}[pool_kind]
    sets = CandidateSets(pool, [np.arange(9), np.array([8, 1, 4])])
    prior = _brute_prior(kernel, dense.astype(np.float64), Y, 4)
    for q, (base, got) in enumerate(zip(plain.score_sets(spectra[:2], sets), weighted.score_sets(spectra[:2], sets),
                                        strict=True)):
        np.testing.assert_allclose(got, base + 1.3 * prior[sets.indices[q]], rtol=1e-5, atol=1e-6)


def test_a_training_structure_gets_prior_one_with_one_neighbour_and_zero_weight_changes_nothing():
    model, spectra, Y = _fitted(0.5, prior_neighbors=1)
    np.testing.assert_allclose(model.structure_prior(Y[:4]), 1.0)
    plain, _, _ = _fitted(0.0)
    sets = [Y[:5], Y[5:9]]
    # prior_weight = 0 computes no prior at all: the same scores bit for bit as a model without the parameter set
    refit = MetaboliteIdentifier(**{**plain.get_params(), "prior_neighbors": 7}).fit(spectra, Y)
    for a, b in zip(plain.score_sets(spectra[:2], sets), refit.score_sets(spectra[:2], sets), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("param,bad", [("prior_weight", -0.1), ("prior_weight", float("nan")),
                                       ("prior_weight", "high"), ("prior_neighbors", 0),
                                       ("prior_neighbors", 2.5), ("prior_neighbors", True)])
def test_bad_prior_parameters_name_themselves(param, bad):
    rng = np.random.default_rng(0)
    spectra = random_spectra(rng, 6)
    with pytest.raises(ValueError, match=f"'{param}' parameter of MetaboliteIdentifier"):
        MetaboliteIdentifier(kernels=("ppk",), **{param: bad}).fit(spectra, rng.random((6, 4)))


@pytest.mark.parametrize("k", [1, 3, 29, 40])
def test_leave_self_out_prior_is_the_prior_against_the_other_training_structures(k):
    model, spectra, Y = _fitted(0.3, prior_neighbors=k)
    rng = np.random.default_rng(2)
    outsiders = rng.integers(0, 3, size=(4, 16)).astype(np.float64)
    pool = np.vstack([Y[:6], outsiders])
    flags = np.array([True] * 6 + [False] * 4)
    got = model.structure_prior(pool, leave_self_out=flags)
    expected = [_brute_prior(_tanimoto, pool[i:i + 1], np.delete(Y, i, axis=0), k)[0] for i in range(6)]
    expected += list(_brute_prior(_tanimoto, outsiders, Y, k))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="'leave_self_out' needs an int 'n_neighbors'"):
        model.structure_prior(pool, n_neighbors=(1, 2), leave_self_out=flags)


def test_calibration_lists_of_training_structures_score_their_prior_without_themselves():
    model, spectra, Y = _fitted(0.8, prior_neighbors=2)
    plain, _, _ = _fitted(0.0)
    lists = [np.array([0, 5, 9]), np.array([3, 4])]
    K, diag = model.test_kernel(spectra[10:12])
    got = _training_list_scores(model, spectra[10:12], Y, lists, np.arange(30), (K, diag))
    base = plain.score_sets(spectra[10:12], CandidateSets(Y, lists))
    for q, idx in enumerate(lists):
        loo = [_brute_prior(_tanimoto, Y[i:i + 1], np.delete(Y, i, axis=0), 2)[0] for i in idx]
        np.testing.assert_allclose(got[q], base[q] + 0.8 * np.array(loo), rtol=1e-6, atol=1e-9)
    assert model.prior_weight == 0.8  # restored
@pytest.mark.parametrize("param,bad", [("prior_weight", -1.0), ("prior_weight", float("nan")),
                                       ("prior_weight", "abc"), ("prior_weight", None),
                                       ("prior_neighbors", 0), ("prior_neighbors", 2.5)])
def test_prior_parameters_set_after_fit_are_checked_where_scoring_reads_them(param, bad):
    # the prior is the one part of the model read at scoring time: a negative or NaN weight set after fit was
    # silently taken as 0 (the spectrum alone), other bad values failed deep inside with a TypeError
    model, spectra, Y = _fitted(0.5)
    model.set_params(**{param: bad})
    with pytest.raises(ValueError, match=f"'{param}' parameter of MetaboliteIdentifier"):
        model.score_sets(spectra[:1], [Y[:3]])


def test_numpy_scalar_prior_parameters_fit_and_also_save(tmp_path):
    # fit accepts numpy scalars (np.float32 weight, np.int64 neighbours, e.g. from a grid array); the model file's
    # JSON metadata refused them ("Object of type float32 is not JSON serializable")
    rng = np.random.default_rng(3)
    fp = Fingerprinter()
    spectra = random_spectra(rng, 10, grid=1.0)
    Y = rng.integers(0, 3, size=(10, fp.n_features)).astype(np.float64)
    model = MetaboliteIdentifier(kernels=("ppk",), alpha=np.float32(0.5), prior_weight=np.float32(0.25),
                                 prior_neighbors=np.int64(2)).fit(spectra, Y)
    loaded = load_identifier(save_identifier(tmp_path / "m.npz", model, fp, Cleaning()))[0]
    assert (loaded.prior_weight, loaded.prior_neighbors, loaded.alpha) == (0.25, 2, 0.5)
    assert type(loaded.prior_weight) is float and type(loaded.prior_neighbors) is int
    np.testing.assert_allclose(loaded.score_sets(spectra[:2], [Y[:4], Y[4:6]])[0],
                               model.score_sets(spectra[:2], [Y[:4], Y[4:6]])[0], rtol=1e-6)


@pytest.mark.parametrize("flags", [np.zeros(5, dtype=bool), np.array([0]), np.array([0, 0, 0, 0, 0, 0, 1, 0])])
def test_leave_self_out_flags_are_checked_even_when_they_leave_nothing_out(flags):
    # the flags were checked only when one of them was set: a too-short all-False mask, or the row indices [0]
    # (read as one False flag), were silently ignored and gave every row its plain prior; 0/1 integers are not
    # flags either (an index array of the right length would be read as flags)
    model, _, Y = _fitted(0.3)
    with pytest.raises(ValueError, match="'leave_self_out' must be one bool per row"):
        model.structure_prior(Y[:8], leave_self_out=flags)
