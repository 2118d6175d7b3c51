"""Training Grams computed once and read by blocks equal the Grams recomputed and sliced densely.

Real spectra: merged spectra of the first structures of the bundled MassBank subset with their fingerprints from
the bundled fingerprint cache (iokr/datasets/data/metabolites). The block budget is shrunk so that every route
uses many blocks.
"""

import gzip
import json

import numpy as np
import pytest

import iokr.kernels._training_grams as grams_module
from iokr.apps.metabolites import MetaboliteIdentifier, read_spectra
from iokr.apps.metabolites.kernels._factories import make_output_kernel
from iokr.apps.metabolites.selection._calibration_examples import calibration_examples
from iokr.apps.metabolites.selection._pipeline import (
    Cleaning,
    TrainingSet,
    _sliced_test_kernel,
    cross_validate,
    cross_validate_refit,
    fold_ids,
)
from iokr.datasets import BUNDLED_METABOLITES
from iokr.kernels._training_grams import TrainingGrams, compact_gram
from iokr.model_selection import learn_weights

N_STRUCTURES = 60
PARAMS = {"kernels": ("ppk", "ppk_nl", "binned", "binned_nl"), "weights": "alignf", "sigma_mz": 0.001,
          "sigma_intensity": 0.25, "output_kernel": "tanimoto", "alpha": 0.1}


@pytest.fixture(scope="module")
def train(tmp_path_factory):
    """One merged spectrum per structure (first structures of the bundled subset) and count fingerprints."""
    cache = np.load(BUNDLED_METABOLITES["fingerprint_cache"])
    key14, indptr, cols = cache["key14"], cache["indptr"], cache["cols"]
    values = cache["vals"]
    row_of = {k: i for i, k in enumerate(key14)}
    path = tmp_path_factory.mktemp("massbank") / "head.jsonl"
    lines, per_key = [], {}
    with gzip.open(BUNDLED_METABOLITES["spectra"], "rt") as source:
        for line in source:  # up to 3 spectra of each of the first N_STRUCTURES structures with fingerprints
            key = json.loads(line).get("inchikey_rdkit", "")[:14]
            if key in row_of and per_key.get(key, 0) < 3 and (key in per_key or len(per_key) < N_STRUCTURES):
                per_key[key] = per_key.get(key, 0) + 1
                lines.append(line)
    path.write_text("".join(lines))
    spectra, _ = read_spectra(path, require_structure=True)
    keys = np.array([m["inchikey"][:14] for m in spectra.metadata])
    chosen = [k for k in dict.fromkeys(keys.tolist()) if k in row_of][:N_STRUCTURES]
    assert len(chosen) == N_STRUCTURES, "the bundled subset changed: too few structures with cached fingerprints"
    cleaning = Cleaning()
    rows = np.flatnonzero(np.isin(keys, chosen))
    merged, labels = cleaning.merged(cleaning.single(spectra[rows]), groups=keys[rows].tolist())
    Y = np.zeros((len(labels), int(cache["n_features"])), dtype=np.float32)
    for i, k in enumerate(labels):
        r = row_of[k]
        Y[i, cols[indptr[r]:indptr[r + 1]]] = values[indptr[r]:indptr[r + 1]]
    return TrainingSet(merged, list(labels), Y, len(rows), 0, 0)


@pytest.fixture
def small_blocks(monkeypatch):
    """A block budget of a few rows (about 3 KiB per block)."""
    monkeypatch.setattr(grams_module, "GRAM_BLOCK_MEMORY", 0.003)


def _center(K):
    """Reference centering (the whole matrix at once)."""
    row = K.mean(axis=1)
    return K - row[:, None] - row[None, :] + row.mean()


def test_compact_gram_keeps_every_value(train):
    K, _ = MetaboliteIdentifier(**PARAMS).base_grams(train.spectra)
    for G in K:
        C = compact_gram(G, working_memory=0.01)
        assert 0 < C.nnz < G.size  # really sparse, and more than one block was needed
        np.testing.assert_array_equal(C.toarray(), G)


@pytest.mark.parametrize("gamma", [None, 0.5])
@pytest.mark.parametrize("compact", [False, True])
def test_combined_blocks_bit_identical_to_dense_sum(train, small_blocks, compact, gamma):
    dense, diags = MetaboliteIdentifier(**PARAMS).base_grams(train.spectra)
    grams = TrainingGrams([compact_gram(G) if compact else G for G in dense], diags)
    weights = np.array([0.4, 0.3, 0.2, 0.1])
    rng = np.random.default_rng(0)
    rows, cols = rng.permutation(len(diags[0]))[:40], np.sort(rng.permutation(len(diags[0]))[:55])
    da, db = rng.random(40), rng.random(55)
    expected = sum(w * G[np.ix_(rows, cols)] for w, G in zip(weights, dense, strict=True))
    if gamma is not None:
        D = da[:, None] + db[None, :] - 2.0 * expected
        np.clip(D, 0.0, None, out=D)
        expected = np.exp(-gamma * D)
    got = grams.combined(weights, rows, cols, gamma=gamma, diags=None if gamma is None else (da, db))
    np.testing.assert_array_equal(got, expected)
    sub = grams.subset(rows)  # a view composes its rows with the requested positions
    view = sum(w * G[np.ix_(rows[:10], rows[5:9])] for w, G in zip(weights, dense, strict=True))
    np.testing.assert_array_equal(sub.combined(weights, np.arange(10), np.arange(5, 9)), view)
    np.testing.assert_array_equal(sub.combined(weights, slice(0, 10))[:, 5:9], view)


def test_alignment_terms_equal_whole_matrix_centering(train, small_blocks):
    dense, diags = MetaboliteIdentifier(**PARAMS).base_grams(train.spectra)
    rows = np.flatnonzero(fold_ids(len(diags[0]), 3, 0) != 0)
    Y = np.asarray(train.Y, dtype=np.float64)[rows]
    target = make_output_kernel("tanimoto")(Y)
    M, a = TrainingGrams([compact_gram(G) for G in dense], diags).subset(rows).alignment_terms(target)
    flat = np.stack([_center(G[np.ix_(rows, rows)]).ravel() for G in dense])
    np.testing.assert_allclose(M, flat @ flat.T, rtol=1e-12)
    np.testing.assert_allclose(a, flat @ _center(target).ravel(), rtol=1e-12)
    expected = learn_weights([_center(G[np.ix_(rows, rows)]) for G in dense], _center(target), "alignf")
    got = MetaboliteIdentifier(**PARAMS).combined_training_gram(dense, diags, train.Y, weights_from=rows)[1]
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_reused_grams_fit_equals_recomputed_fit(train):
    """A fold's model fitted from the Grams on all structures (a view) equals one fitted from scratch on the fold."""
    spectra, Y = train.spectra, train.Y
    grams = MetaboliteIdentifier(**PARAMS).base_grams(spectra, storage="csr")
    folds = fold_ids(len(spectra), 3, 0)
    tr, te = np.flatnonzero(folds != 1), np.flatnonzero(folds == 1)
    reused = MetaboliteIdentifier(**PARAMS).fit(spectra[tr], Y[tr], base_grams=grams.subset(tr))
    fresh = MetaboliteIdentifier(**PARAMS).fit(spectra[tr], Y[tr])
    np.testing.assert_allclose(reused.weights_, fresh.weights_, rtol=1e-12)
    K_reused, diag_reused = _sliced_test_kernel(reused, grams, te, tr)
    K_fresh, diag_fresh = fresh.test_kernel(spectra[te])
    np.testing.assert_allclose(K_reused, K_fresh, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(diag_reused, diag_fresh)
    scores = [reused.score_sets(spectra[te], [Y[te]] * te.size, test_kernel=(K_reused, diag_reused)),
              fresh.score_sets(spectra[te], [Y[te]] * te.size)]
    for a, b in zip(*scores, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
        assert np.argmax(a) == np.argmax(b)


def test_final_fit_from_combined_gram_equals_fit_from_base_grams(train):
    spectra, Y = train.spectra, train.Y
    grams = MetaboliteIdentifier(**PARAMS).base_grams(spectra, storage="csr")
    model = MetaboliteIdentifier(**PARAMS)
    K, weights = model.combined_training_gram(grams, None, Y)
    model.fit(spectra, Y, training_gram=(K, weights, grams.diags))
    reference = MetaboliteIdentifier(**PARAMS).fit(spectra, Y, base_grams=grams)
    np.testing.assert_array_equal(model.weights_, reference.weights_)
    queries = spectra[:7]
    np.testing.assert_array_equal(model.test_kernel(queries)[0], reference.test_kernel(queries)[0])
    for a, b in zip(model.score_sets(queries, [Y[:20]] * 7), reference.score_sets(queries, [Y[:20]] * 7),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="training_gram"):
        MetaboliteIdentifier(**PARAMS).fit(spectra, Y, training_gram=(K[:5, :5], weights, grams.diags))


def test_test_kernel_accumulated_in_place_equals_sum_of_kernels(train):
    spectra, Y = train.spectra, train.Y
    model = MetaboliteIdentifier(**{**PARAMS, "input_gamma": 0.7}).fit(spectra[10:], Y[10:])
    from iokr.apps.metabolites.kernels._kernels import normalized_gram  # noqa: PLC0415

    blocks, test_unit = [], []
    for kernel, d_train in zip(model.base_kernels_, model.train_raw_diags_, strict=True):
        G, d, _ = normalized_gram(kernel, spectra[:10], spectra[10:], diag_b=d_train)
        blocks.append(G)
        test_unit.append((d > 0).astype(float))
    K = sum(w * G for w, G in zip(model.weights_, blocks, strict=True))
    da = sum(w * d for w, d in zip(model.weights_, test_unit, strict=True))
    db = sum(w * (d > 0).astype(float) for w, d in zip(model.weights_, model.train_raw_diags_, strict=True))
    expected = np.exp(-0.7 * np.clip(da[:, None] + db[None, :] - 2.0 * K, 0.0, None))
    got, diag = model.test_kernel(spectra[:10])
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(diag, np.ones(10))


@pytest.mark.parametrize("storage", ["csr", "file"])
def test_cross_validation_and_calibration_same_with_dense_or_compact_grams(train, small_blocks, storage):
    grid = {"alpha": (0.03, 0.3), "output_kernel": ("tanimoto",)}
    dense = MetaboliteIdentifier(**PARAMS).base_grams(train.spectra)
    cache = {}
    best, table = cross_validate(train, PARAMS, grid, n_folds=3, gram_cache=cache, gram_storage=storage)
    (compact,) = cache.values()
    assert compact.storage == storage and compact.nbytes() < sum(G.nbytes for G in dense[0]) / 2
    best_dense, table_dense = cross_validate(train, PARAMS, grid, n_folds=3, base_grams=dense)
    assert (best, table) == (best_dense, table_dense)
    (scores_a, truth_a), (scores_b, truth_b) = (calibration_examples(train, best, 3, 0, grams)
                                                for grams in (compact, dense))
    assert truth_a == truth_b
    for a, b in zip(scores_a, scores_b, strict=True):
        np.testing.assert_array_equal(a, b)
    refit = cross_validate_refit(train, PARAMS, {"alpha": (0.3,)}, n_folds=3, base_grams=compact)[1]
    assert refit == cross_validate_refit(train, PARAMS, {"alpha": (0.3,)}, n_folds=3)[1]


@pytest.mark.parametrize("positional_reads", [True, False])
def test_file_gram_reads_exact_rows(train, monkeypatch, positional_reads):
    if not positional_reads:  # platforms without os.preadv: seek and read
        monkeypatch.delattr(grams_module.os, "preadv", raising=False)
    (dense, _), stored = (MetaboliteIdentifier(**PARAMS).base_grams(train.spectra, storage=s) for s in ("dense", "file"))
    rng = np.random.default_rng(1)
    for k, G in enumerate(dense):
        for rows in (np.arange(len(G)), np.sort(rng.permutation(len(G))[:13]), rng.permutation(len(G))[:9],
                     np.array([5]), slice(3, 17)):
            np.testing.assert_array_equal(stored.block(k, rows), G[rows])
    assert stored.nbytes() == sum((len(G) + 1) * 8 for G in dense)  # only the row pointers stay in memory
    with pytest.raises(ValueError, match="'storage' parameter of base_grams"):
        MetaboliteIdentifier(**PARAMS).base_grams(train.spectra, storage="disk")
