"""Confidence calibration on decoy lists (issue #30): decoy selection, the fold model's prior without the held-out
structure, refusals, and the expected calibration error, each against a brute-force reference."""

import gzip
import json

import numpy as np
import pytest
from metab_helpers import bundled_lists_and_training, random_spectra

from iokr.apps.metabolites import CandidateStore, Fingerprinter, MetaboliteIdentifier, read_spectra
from iokr.apps.metabolites.candidates._decoys import (
    BUNDLED_DECOYS,
    DecoyLists,
    DecoyTable,
    decoy_lists,
    read_decoy_table,
)
from iokr.apps.metabolites.chemistry._structures import formula_mass
from iokr.apps.metabolites.model._confidence import expected_calibration_error, fit_calibration
from iokr.apps.metabolites.selection._calibration_examples import calibration_examples, decoy_list_scores
from iokr.apps.metabolites.selection._pipeline import Cleaning, TrainingSet
from iokr.apps.metabolites.workflows._fit import TrainingConfig, fit_with_cv
from iokr.exceptions import IOKRDataError

# isomers of C7H8O (108.06), C8H10O (122.07) and C6H6O (94.04); o-cresol is the library compound
C7H8O = ["Cc1ccccc1O", "Cc1cccc(O)c1", "Cc1ccc(O)cc1", "OCc1ccccc1", "COc1ccccc1"]
C8H10O = ["CCc1ccccc1O", "CCc1ccc(O)cc1", "Cc1ccc(C)c(O)c1", "OCCc1ccccc1", "CCOc1ccccc1", "COCc1ccccc1"]
C6H6O = ["Oc1ccccc1"]


def _write(tmp_path, rows, header="smiles\tformula", name="decoys.tsv.gz"):
    path = tmp_path / name
    with gzip.open(path, "wt") as handle:
        handle.write(header + "\n" + "".join(r + "\n" for r in rows))
    return path


def test_decoy_table_computes_missing_formulas_and_names_bad_files(tmp_path):
    table = read_decoy_table(_write(tmp_path, [*C7H8O[:2], "not-a-smiles"], header="SMILES"))
    assert table.structures.tolist() == C7H8O[:2] and table.formulas.tolist() == ["C7H8O", "C7H8O"]
    assert table.n_without_formula == 1
    with pytest.raises(IOKRDataError, match="no 'smiles', 'structure' or 'inchi' column"):
        read_decoy_table(_write(tmp_path, ["x"], header="name", name="b.tsv.gz"))
    with pytest.raises(IOKRDataError, match="does not exist"):
        read_decoy_table(tmp_path / "missing.tsv")
    with pytest.raises(IOKRDataError, match="line 3: no structure"):
        read_decoy_table(_write(tmp_path, ["CCO\tC2H6O", "\tC2H6O"], name="c.tsv.gz"))


def test_a_decoy_table_rdkit_rejects_entirely_or_a_folder_is_named(tmp_path):
    # Before: a table whose every structure RDKit rejected trained a model "not calibrated (... no decoy lists)"
    # without a word about the table; a folder was said not to exist.
    with pytest.raises(IOKRDataError, match=r"none of its 2 structures.*line 2"):
        read_decoy_table(_write(tmp_path, ["C1CC", "not-a-smiles"], header="smiles"))
    with pytest.raises(IOKRDataError, match="is a folder"):
        read_decoy_table(tmp_path)


def test_decoy_rows_rdkit_rejects_are_counted_in_the_record():
    # Before: rows whose formula RDKit could not compute were dropped with no count in the log or the model file
    store, _, table, library, formulas = _three_formulas()
    table = DecoyTable(table.structures, table.formulas, table.source, n_without_formula=3)
    assert decoy_lists(formulas, library, table, store, list_size=8).record["n_table_rows_unparsable"] == 3


def _brute_decoys(formulas, table, library, store, list_size, window):
    """Per training structure, the set of decoy texts: isomers, then the nearest other masses within ``window``."""
    keys, _ = store.keys_for(list(table.structures))
    decoys = [(s, f) for s, f, k in zip(table.structures, table.formulas, keys, strict=True) if k not in library]
    out = []
    for f in formulas:
        own = {s for s, g in decoys if g == f}
        room = list_size - len(own) - formulas.count(f)
        others = sorted(((abs(formula_mass(g) - formula_mass(f)), s) for s, g in decoys if g != f), key=lambda t: t[0])
        out.append(own | {s for d, s in others[:max(room, 0)] if d <= window})
    return out


def _three_formulas():
    """A store, the decoy rows of three formulas and their table, o-cresol as the library, training formulas."""
    store = CandidateStore("", Fingerprinter(kind="morgan_counts+maccs", n_bits=256, radius=2))
    rows = C7H8O + C8H10O + C6H6O
    table = DecoyTable(np.array(rows, dtype=object),
                       np.array(["C7H8O"] * 5 + ["C8H10O"] * 6 + ["C6H6O"], dtype=object), "test")
    return store, rows, table, {store.keys_for([C7H8O[0]])[0][0]}, ["C7H8O", "C8H10O", "C8H10O", None]


@pytest.mark.parametrize("list_size,window", [(4, 20.0), (6, 20.0), (8, 10.0), (30, 100.0)])
def test_decoy_lists_against_brute_force(list_size, window):
    store, rows, table, library, formulas = _three_formulas()
    got = decoy_lists(formulas, library, table, store, list_size=list_size, max_mass_difference=window)
    kept = [s for s, k in zip(rows, store.keys_for(rows)[0], strict=True) if k not in library]
    assert got.record["n_decoys"] == len(got.pool) == 10 and got.record["n_library_compounds_removed"] == 1
    # C6H6O is no training formula: its row is not drawn, so it cannot fill a list
    drawn = [s for s in kept if s not in C6H6O]
    np.testing.assert_array_equal(got.pool[:], store.fingerprints(drawn))
    expected = _brute_decoys(formulas[:3], DecoyTable(np.array(drawn, dtype=object),
                                                      np.array(["C7H8O"] * 4 + ["C8H10O"] * 6, dtype=object), ""),
                             library, store, list_size, window)
    for i in range(3):
        assert {drawn[j] for j in got.indices[i]} == expected[i]
        assert len(set(got.indices[i].tolist())) == got.indices[i].size
    assert got.n_isomers.tolist() == [4, 6, 6, 0] and got.indices[3].size == 0


def test_isomers_per_formula_are_capped_by_a_seeded_draw():
    store = CandidateStore("", Fingerprinter(kind="morgan_counts+maccs", n_bits=256, radius=2))
    table = DecoyTable(np.array(C8H10O, dtype=object), np.array(["C8H10O"] * 6, dtype=object), "test")
    a = decoy_lists(["C8H10O"], set(), table, store, max_isomers=3, list_size=100, seed=1)
    b = decoy_lists(["C8H10O"], set(), table, store, max_isomers=3, list_size=100, seed=1)
    assert a.n_isomers.tolist() == [3] and a.record["n_drawn"] == 3
    np.testing.assert_array_equal(a.pool[:], b.pool[:])


@pytest.mark.parametrize("targets,window", [((3, 4, 9, 2), 20.0), ((12, 2, 5, 7), 20.0), ((6, 6, 6, 6), 10.0),
                                             ((30, 30, 30, 30), 100.0)])
def test_sized_decoy_lists_against_brute_force(monkeypatch, targets, window):
    """Lists of a drawn size: every isomer when they fit (a seeded draw of them when not), then the nearest other
    masses within the window, never more candidates (training isomers included) than the drawn size."""
    from iokr.apps.metabolites.candidates import _decoys  # noqa: PLC0415

    monkeypatch.setattr(_decoys, "sample_list_sizes", lambda n, seed=0: np.array(targets[:n], dtype=np.int64))
    store, rows, table, library, formulas = _three_formulas()
    got = decoy_lists(formulas, library, table, store, max_mass_difference=window)
    assert got.record["max_isomers"] is None and "log-normal" in got.record["list_size"]
    drawn = [s for s, k in zip(rows, store.keys_for(rows)[0], strict=True) if k not in library and s not in C6H6O]
    pool_formula = {s: ("C7H8O" if s in C7H8O else "C8H10O") for s in drawn}
    for i, f in enumerate(formulas[:3]):
        room = targets[i] - formulas.count(f)
        isomers = [s for s in drawn if pool_formula[s] == f]
        others = sorted((abs(formula_mass(pool_formula[s]) - formula_mass(f)), s) for s in drawn
                        if pool_formula[s] != f)
        others = [s for d, s in others if d <= window]
        listed = [drawn[j] for j in got.indices[i]]
        assert len(set(listed)) == len(listed) <= max(room, 0)
        own = [s for s in listed if pool_formula[s] == f]
        assert len(own) == min(len(isomers), max(room, 0)) == got.n_isomers[i]
        # the fill: all other-formula decoys in the window when they fit (two formulas: nearest = all of the other)
        assert len(listed) - len(own) == min(len(others), max(room - len(own), 0))
    assert got.indices[3].size == 0
    again = decoy_lists(formulas, library, table, store, max_mass_difference=window)
    assert all(np.array_equal(a, b) for a, b in zip(got.indices, again.indices, strict=True))  # seeded


def test_sampled_list_sizes_follow_the_documented_log_normal():
    from iokr.apps.metabolites.candidates._decoys import (  # noqa: PLC0415
        MAX_DRAWN_SIZE,
        MIN_DRAWN_SIZE,
        PUBCHEM_LOG_SIZE_MEAN,
        sample_list_sizes,
    )

    sizes = sample_list_sizes(20000, seed=3)
    assert sizes.min() >= MIN_DRAWN_SIZE and sizes.max() <= MAX_DRAWN_SIZE
    assert np.median(np.log(sizes)) == pytest.approx(PUBCHEM_LOG_SIZE_MEAN, abs=0.05)
    np.testing.assert_array_equal(sizes, sample_list_sizes(20000, seed=3))
    with pytest.raises(ValueError, match="list_size must be 'pubchem' or an int; got 'big'"):
        decoy_lists(["C8H10O"], set(), DecoyTable(np.array(C8H10O, dtype=object),
                                                  np.array(["C8H10O"] * 6, dtype=object), "t"),
                    CandidateStore("", Fingerprinter(kind="morgan_counts+maccs", n_bits=256, radius=2)),
                    list_size="big")


def _tanimoto(a, b):
    dot = float(a @ b)
    return dot / float(a @ a + b @ b - dot)


def _problem(n=30, n_features=16, seed=0):
    rng = np.random.default_rng(seed)
    spectra = random_spectra(rng, n, grid=1.0)
    Y = rng.integers(0, 3, size=(n, n_features)).astype(np.float64)
    formulas = [f"C{i % 7 + 1}H4" for i in range(n)]
    pool = rng.integers(0, 3, size=(12, n_features)).astype(np.float64)
    indices = [rng.choice(12, size=int(rng.integers(0, 6)), replace=False) for _ in range(n)]
    decoys = DecoyLists(pool, indices, np.array([idx.size for idx in indices]), {})
    return spectra, Y, formulas, decoys


@pytest.mark.parametrize("k", [1, 2])
def test_decoy_list_scores_take_the_prior_of_a_model_that_has_not_seen_the_held_out_structure(k):
    spectra, Y, formulas, decoys = _problem()
    tr, te = np.arange(20), np.arange(20, 30)
    kwargs = {"kernels": ("ppk", "binned"), "output_kernel": "tanimoto", "prior_neighbors": k}
    model = MetaboliteIdentifier(prior_weight=0.7, **kwargs).fit(spectra[tr], Y[tr])
    plain = MetaboliteIdentifier(prior_weight=0.0, **kwargs).fit(spectra[tr], Y[tr])
    scores, truth = decoy_list_scores(model, spectra[te], Y, formulas, te, decoys, model.test_kernel(spectra[te]))
    for q, i in enumerate(te):
        own = np.array([j for j, f in enumerate(formulas) if f == formulas[i]])
        candidates = np.vstack([Y[own], decoys.pool[decoys.indices[i]]])
        base = plain.score_sets(spectra[te[q:q + 1]], [candidates])[0]
        # brute-force prior: mean of the k largest similarities to the training structures of the fold (i is not
        # one of them, so its prior is the one recomputed with i removed from the library)
        prior = np.array([np.mean(sorted(_tanimoto(c, y) for y in Y[tr])[-k:]) for c in candidates])
        np.testing.assert_allclose(scores[q], base + 0.7 * prior, rtol=1e-6, atol=1e-9)
        assert own[truth[q]] == i
        library_prior = np.mean(sorted(_tanimoto(Y[i], y) for y in np.vstack([Y[tr], Y[i:i + 1]]))[-k:])
        if k == 1:  # with itself in the library its prior would be 1: the held-out structure does not get that
            assert library_prior == 1.0 and prior[truth[q]] < 1.0 or np.any(np.all(Y[tr] == Y[i], axis=1))


def test_calibration_examples_on_decoy_lists_rank_every_held_out_structure_with_an_isomer():
    spectra, Y, formulas, decoys = _problem(n=42)
    formulas[0] = "C99"  # a formula of its own and no decoys: no example
    decoys.indices[0] = np.zeros(0, dtype=np.intp)
    decoys.n_isomers[0] = 0
    train = TrainingSet(spectra, [f"K{i}" for i in range(42)], Y, 42, 0, 0, {}, formulas)
    params = {"kernels": ("ppk", "binned"), "output_kernel": "tanimoto", "prior_weight": 0.5}
    grams = MetaboliteIdentifier(**params).base_grams(spectra)
    scores, truth = calibration_examples(train, params, 3, 0, grams, decoys=decoys)
    assert len(scores) == len(truth) == 41
    sizes = np.array([s.size for s in scores])
    expected_sizes = sorted(sum(g == formulas[i] for g in formulas) + decoys.indices[i].size for i in range(1, 42))
    assert sorted(sizes.tolist()) == expected_sizes
    lonely = TrainingSet(spectra, train.keys, Y, 42, 0, 0, {}, [f"F{i}" for i in range(42)])
    none = DecoyLists(decoys.pool, [np.zeros(0, dtype=np.intp)] * 42, np.zeros(42, dtype=np.int64), {})
    with pytest.raises(ValueError, match="no held-out training structure with an isomer"):
        calibration_examples(lonely, params, 3, 0, grams, decoys=none)


def _naive_ece(p, y, n_bins=10):
    total = 0.0
    for b in range(n_bins):
        members = [i for i in range(len(p)) if (b / n_bins <= p[i] < (b + 1) / n_bins) or (b == n_bins - 1 and
                                                                                          p[i] == 1.0)]
        if members:
            total += len(members) / len(p) * abs(np.mean([y[i] for i in members]) - np.mean([p[i] for i in members]))
    return total


@pytest.mark.parametrize("seed", range(5))
def test_expected_calibration_error_against_a_naive_loop(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.random(200), [0.0, 0.1, 0.5, 0.9, 1.0]])  # bin edges go to the upper bin, 1.0 to the last
    y = rng.random(p.size) < p
    ece, bins = expected_calibration_error(p, y)
    assert ece == pytest.approx(_naive_ece(p, y), abs=1e-12)
    assert sum(b["n"] for b in bins) == p.size


def test_a_fit_with_an_extreme_coefficient_is_refused():
    """A step in the margin, blurred by two flipped outcomes: not separable, but the slope is beyond the limit."""
    margins = np.linspace(0.9, 1.1, 400)
    correct = margins > 1.0
    correct[[190, 210]] = ~correct[[190, 210]]
    with pytest.raises(ValueError, match=r"degenerate calibration fit \(a coefficient of magnitude"):
        fit_calibration(margins, np.full(400, 50), correct)


def _small_fit(tmp_path, decoys_of):
    """Fits with CV on a small bundled training set, one per ``decoys_of(table)`` value (the table: isomers of the
    training formulas); also the query spectra."""
    _, queries, records = bundled_lists_and_training(3, 150)
    spectra, query_spectra = (_read(tmp_path / name, recs) for name, recs in (("t.jsonl", records),
                                                                             ("q.jsonl", queries)))
    fingerprint = {"kind": "morgan_counts+maccs", "n_bits": 256, "radius": 2}
    store = CandidateStore("", Fingerprinter(**fingerprint))
    formulas = sorted({f for f in store.formulas_for([r["inchi"] for r in records]) if f})
    table = _write(tmp_path, [f"{s}\t{f}" for s, f in zip(*_isomers_of(formulas), strict=True)])
    grid = {"alpha": (0.1,), "input_gamma": (None,), "output_kernel": ("tanimoto",), "output_gamma": (1.0,),
            "sigma_mz": (0.001,)}
    fits = [fit_with_cv(spectra, store, Cleaning(), config=TrainingConfig(fingerprint=fingerprint, grid=grid,
                                                                          decoys=decoys))
            for decoys in decoys_of(table)]
    return fits, table, query_spectra


def test_the_calibration_leaves_the_final_model_scores_unchanged(tmp_path):
    """Decoy lists or training lists: the calibration differs, the fitted model and its scores do not."""
    fits, table, query_spectra = _small_fit(tmp_path, lambda table: (None, table))
    assert fits[0].calibration_data["lists"].startswith("training structures only")
    assert fits[1].calibration_data["decoys"]["source"] == str(table)
    assert fits[1].calibration_data["n_examples"] != fits[0].calibration_data["n_examples"]
    candidates = [fits[0].train.Y[:40]] * len(query_spectra)
    a, b = (fit.model.score_sets(query_spectra, candidates) for fit in fits)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def test_a_list_softmax_default_trains_without_the_logistic_features(tmp_path, monkeypatch):
    """DEFAULT_CALIBRATION_FAMILY = "list_softmax" drops the logistic features (the family takes none)."""
    from iokr.apps.metabolites.workflows import _fit  # noqa: PLC0415

    monkeypatch.setattr(_fit, "DEFAULT_CALIBRATION_FAMILY", "list_softmax")
    fit = _small_fit(tmp_path, lambda table: (table,))[0][0]
    assert fit.calibration_data["family"] == "list_softmax" and len(fit.calibration_data["features"]) == 1
    assert "family" not in fit.calibration_problem  # fitted, or refused for a reason of the data, never the setup
    if fit.calibration is not None:
        assert fit.calibration.features == ("margin", "size", "list_softmax") and fit.calibration.intercept == 0.0


def _read(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return read_spectra(path, require_structure=True)[0]


def _isomers_of(formulas):
    """A few bundled MOSES isomers of each formula (the bundled decoy table)."""
    table = read_decoy_table(BUNDLED_DECOYS)
    wanted, texts, out = set(formulas), [], []
    counts = {}
    for s, f in zip(table.structures, table.formulas, strict=True):
        if f in wanted and counts.get(f, 0) < 5:
            counts[f] = counts.get(f, 0) + 1
            texts.append(s)
            out.append(f)
    return texts, out


def test_a_decoy_table_with_a_fingerprint_cache_is_fingerprinted_from_it(tmp_path):
    from iokr.apps.metabolites.candidates._decoys import decoy_store, fingerprint_cache_of  # noqa: PLC0415
    from iokr.apps.metabolites.chemistry._fingerprint_cache import export_fingerprint_cache  # noqa: PLC0415

    fingerprinter = Fingerprinter(kind="morgan_counts+maccs", n_bits=256, radius=2)
    path = _write(tmp_path, [f"{s}\tC8H10O" for s in C8H10O])
    assert fingerprint_cache_of(path) == tmp_path / "decoys.fingerprints.npz"
    plain = CandidateStore("", fingerprinter)
    assert decoy_store(path, plain, fingerprinter) is plain  # no cache yet
    export_fingerprint_cache(plain, C8H10O, fingerprint_cache_of(path))
    cached = decoy_store(path, plain, fingerprinter)
    assert cached is not plain
    table = read_decoy_table(path)
    a = decoy_lists(["C8H10O"], set(), table, plain)
    b = decoy_lists(["C8H10O"], set(), table, cached)
    np.testing.assert_array_equal(a.pool[:], b.pool[:])
    assert cached.n_computed == 0
    other = Fingerprinter(kind="morgan_counts+maccs", n_bits=512, radius=2)  # a cache of other parameters: ignored
    assert decoy_store(path, None, other)._cache is None


def test_a_cache_written_from_fingerprints_read_elsewhere_equals_the_exported_one(tmp_path):
    """``write_fingerprint_cache`` (the bundled table's cache, fingerprints read from a structure store) gives the
    same lookups as ``export_fingerprint_cache``, which fingerprints with RDKit."""
    from iokr.apps.metabolites.chemistry._fingerprint_cache import (  # noqa: PLC0415
        export_fingerprint_cache,
        write_fingerprint_cache,
    )

    fingerprinter = Fingerprinter(kind="morgan_counts+maccs", n_bits=256, radius=2)
    plain = CandidateStore("", fingerprinter)
    export_fingerprint_cache(plain, C8H10O, tmp_path / "exported.npz")
    keys = plain.keys_for(C8H10O)[0]
    write_fingerprint_cache(tmp_path / "written.npz", C8H10O, keys, plain.formulas_for(C8H10O),
                            plain.fingerprints(C8H10O).astype(np.uint8), fingerprinter)
    exported, written = CandidateStore("", fingerprinter), CandidateStore("", fingerprinter)
    assert exported.attach_cache(tmp_path / "exported.npz") == written.attach_cache(tmp_path / "written.npz") == 6
    np.testing.assert_array_equal(written.fingerprints(C8H10O), exported.fingerprints(C8H10O))
    assert written.keys_for(C8H10O)[0] == keys and written.formulas_for(C8H10O) == ["C8H10O"] * 6
    assert written.n_computed == 0
    with pytest.raises(ValueError, match="6 texts, 5 keys, 6 formulas and fingerprints of shape"):
        write_fingerprint_cache(tmp_path / "bad.npz", C8H10O, keys[:5], ["C8H10O"] * 6,
                                np.zeros((6, fingerprinter.n_features)), fingerprinter)
    assert not (tmp_path / "bad.npz").exists()


def test_the_bundled_decoy_table_ships_the_default_fingerprints():
    from iokr.apps.metabolites.candidates._decoys import decoy_store  # noqa: PLC0415
    from iokr.apps.metabolites.defaults import DEFAULT_FINGERPRINT  # noqa: PLC0415

    store = decoy_store(BUNDLED_DECOYS, None, Fingerprinter(**DEFAULT_FINGERPRINT))
    table = read_decoy_table(BUNDLED_DECOYS)
    assert store._cache is not None and len(store._cache["index"]) == len(table.structures) == 45373
    picked = list(table.structures[::5000])
    fresh = CandidateStore("", Fingerprinter(**DEFAULT_FINGERPRINT))
    np.testing.assert_array_equal(store.fingerprints(picked), fresh.fingerprints(picked))
    assert store.n_computed == 0


def test_train_names_a_missing_decoy_table_and_writes_no_model(tmp_path, capsys):
    from iokr.cli.main import main  # noqa: PLC0415

    _, _, records = bundled_lists_and_training(1, 40)
    train = tmp_path / "train.jsonl"
    train.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    missing = tmp_path / "no_such_decoys.tsv"
    code = main(["metabolites", "train", "--spectra", str(train), "--output", str(tmp_path / "model.npz"),
                 "--alphas", "0.3", "--folds", "2", "--calibration-decoys", str(missing)])
    assert code != 0 and not (tmp_path / "model.npz").exists()
    assert f"Decoy table {missing} does not exist" in capsys.readouterr().err
