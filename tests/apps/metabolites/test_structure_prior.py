"""The structure prior of candidate scoring: score = IOKR score + prior_weight x neighbour similarity."""

import numpy as np
import pytest
from metab_helpers import random_spectra

from iokr.apps.metabolites import Fingerprinter, MetaboliteIdentifier, load_identifier, save_identifier
from iokr.apps.metabolites._pipeline import Cleaning
from iokr.decoding import CandidateSets, CountFeatures


def _fitted(prior_weight, prior_neighbors=2, n=30, seed=0):
    rng = np.random.default_rng(seed)
    spectra = random_spectra(rng, n, grid=1.0)
    Y = rng.integers(0, 3, size=(n, 16)).astype(np.float64)
    model = MetaboliteIdentifier(kernels=("ppk", "binned"), output_kernel="tanimoto", prior_weight=prior_weight,
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
