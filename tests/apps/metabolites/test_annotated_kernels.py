import gzip
import itertools
import json

import numpy as np
import pytest

from iokr.apps.metabolites import (
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    Spectra,
    load_identifier,
    normalized_gram,
    read_spectra,
    save_identifier,
)
from iokr.apps.metabolites.chemistry._annotation import ELEMENTS, AnnotationSettings, annotate, decode, precursor_ion
from iokr.apps.metabolites.chemistry._formulas import ELECTRON_MASS, ELEMENT_MASSES
from iokr.apps.metabolites.kernels._annotated_kernels import FormulaTokenKernel
from iokr.datasets._metabolites import BUNDLED_METABOLITES

FORMULAS = ("C6H12O6", "C9H11NO2", "C8H10N4O2", "C10H10O3", "C7H7ClN2O", "C5H5N5O")
MASSES = np.array([ELEMENT_MASSES[e] for e, _, _ in ELEMENTS])


def annotated_spectra(rng, n, fallback_every=5):
    """[M+H]+ spectra of small formulas: peaks on random subformulas (+ noise within 5 ppm) and random peaks;
    every ``fallback_every``-th spectrum has no formula."""
    peak_lists, precursors, meta = [], [], []
    for i in range(n):
        formula = FORMULAS[int(rng.integers(len(FORMULAS)))]
        vec, _ = precursor_ion(formula, "[M+H]+")
        precursor = float(vec @ MASSES - ELECTRON_MASS)
        # fragments drawn from 8 fixed subformulas per formula, so that spectra share fragments and losses
        pool = np.random.default_rng(len(formula) * 7 + int(vec.sum())).integers(0, vec + 1, size=(8, vec.size))
        frags = pool[rng.choice(8, size=int(rng.integers(2, 7)), replace=False)]
        mz = frags @ MASSES - ELECTRON_MASS
        mz = mz[(mz > 20) & (mz < precursor - 0.5)]
        mz = np.concatenate([mz * (1 + rng.uniform(-5e-6, 5e-6, mz.size)), rng.uniform(30, precursor - 1, 3)])
        peak_lists.append(np.column_stack([mz, rng.uniform(0.05, 1.0, mz.size)]))
        precursors.append(precursor)
        meta.append({"formula": None if i % fallback_every == 2 else formula, "adduct": "[M+H]+",
                     "inchikey": f"KEY{i:011d}-X-N", "inchi": f"x{i}"})
    return Spectra.from_peak_lists(peak_lists, np.array(precursors), meta)


def _naive_features(S, tokens, power, explanations):
    """Explicit feature map: one dict {token: weight} per spectrum, built peak by peak (pair by pair)."""
    ann = annotate(S, AnnotationSettings())
    feats = []
    for i in range(len(S)):
        f, entries = {}, []
        for p in range(S.offsets[i], S.offsets[i + 1]):
            a, b = ann.offsets[p], ann.offsets[p + 1]
            if a == b:
                continue
            chosen = [a + int(np.argmin(np.abs(ann.error_ppm[a:b])))] if explanations == "best" else range(a, b)
            for e in chosen:
                entries.append((p, int(ann.fragment[e]), S.intensity[p] ** power / len(chosen)))
                token = int(ann.fragment[e] if tokens == "fragments" else ann.loss[e])
                if tokens != "pair_losses" and token != 0:
                    f[token] = f.get(token, 0.0) + S.intensity[p] ** power / len(chosen)
        if tokens == "pair_losses":
            for (p, fp, wp), (q, fq, wq) in itertools.combinations(entries, 2):
                big, small = (fp, fq) if np.all(decode(fp) >= decode(fq)) else (fq, fp)
                if p != q and big != small and np.all(decode(big) >= decode(small)):
                    f[big - small] = f.get(big - small, 0.0) + np.sqrt(wp * wq)
        feats.append(f)
    return feats


def _naive_kernel(FA, FB):
    return np.array([[sum(w * fb.get(t, 0.0) for t, w in fa.items()) for fb in FB] for fa in FA])


@pytest.mark.parametrize("tokens", ["fragments", "losses", "pair_losses"])
@pytest.mark.parametrize("explanations", ["best", "all"])
@pytest.mark.parametrize("power", [0.5, 1.0])
def test_formula_token_kernel_matches_explicit_feature_map(tokens, explanations, power):
    rng = np.random.default_rng(3)
    S, T = annotated_spectra(rng, 14), annotated_spectra(rng, 9)
    k = FormulaTokenKernel(tokens=tokens, power=power, explanations=explanations)
    FS, FT = _naive_features(S, tokens, power, explanations), _naive_features(T, tokens, power, explanations)
    expected = _naive_kernel(FS, FT)
    assert expected.max() > 0
    np.testing.assert_allclose(k(S, T), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k.compute_diag(S), np.diag(_naive_kernel(FS, FS)), rtol=1e-12, atol=1e-14)
    K = k(S)
    np.testing.assert_allclose(K, K.T, rtol=1e-12, atol=1e-14)
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * np.abs(K).max()
    # spectra without a formula have no tokens: zero rows, counted in the report
    assert np.all(K[2] == 0) and k.annotation_report(S).fallbacks["no_formula"] == 3


def test_formula_token_kernel_blocks_do_not_depend_on_batch():
    rng = np.random.default_rng(4)
    S, T = annotated_spectra(rng, 12), annotated_spectra(rng, 7)
    k = FormulaTokenKernel()
    full = k(S, T)
    np.testing.assert_array_equal(np.vstack([k(S[:5], T), k(S[5:], T)]), full)
    np.testing.assert_array_equal(k(S, T, working_memory=3e-4), full)


def test_formula_token_kernel_rejects_bad_parameters():
    S = annotated_spectra(np.random.default_rng(0), 3)
    with pytest.raises(ValueError, match="'tokens' parameter of FormulaTokenKernel"):
        FormulaTokenKernel(tokens="pairs")(S)
    with pytest.raises(ValueError, match="explanations"):
        FormulaTokenKernel(explanations="first")(S)
    with pytest.raises(TypeError, match="Spectra"):
        FormulaTokenKernel()(np.zeros((3, 2)))


def test_identifier_with_annotated_kernels():
    rng = np.random.default_rng(5)
    S = annotated_spectra(rng, 30)
    Y = (rng.random((30, 16)) < 0.3).astype(float)
    model = MetaboliteIdentifier(kernels=("ppk", "fragments", "losses"), alpha=0.1).fit(S, Y)
    assert model.weights_.shape == (3,) and np.isclose(model.weights_.sum(), 1.0)
    Q = annotated_spectra(rng, 6)
    scores = model.score_sets(Q, [Y[:10]] * 6)
    assert all(np.isfinite(s).all() for s in scores)
    K, _, _ = normalized_gram(FormulaTokenKernel(tokens="losses"), Q, S)
    assert np.all(K[2] == 0) and np.all((K >= 0) & (K <= 1 + 1e-12))


def test_model_file_roundtrip_with_annotated_kernels(tmp_path):
    """Model files keep the training InChIs, not the formula fields: the reloaded model annotates its training
    spectra from the InChI (and the default [M+H]+) and scores exactly as the fitted one."""

    with gzip.open(BUNDLED_METABOLITES["spectra"], "rt") as handle:
        records = [json.loads(line) for line in itertools.islice(handle, 80)]
    path = tmp_path / "spectra.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    spectra, _ = read_spectra(path, require_structure=True)
    cleaning = Cleaning()
    merged, _ = cleaning.merged(cleaning.single(spectra))
    fp = Fingerprinter()
    Y, ok = fp.transform([m["inchi"] for m in merged.metadata])
    train, Y = merged[np.flatnonzero(ok)], Y[ok]
    model = MetaboliteIdentifier(kernels=("ppk", "fragments", "losses"), alpha=0.3).fit(train, Y)
    assert FormulaTokenKernel().annotation_report(train).n_annotated_spectra == len(train)
    saved = save_identifier(tmp_path / "m.npz", model, fp, cleaning)
    loaded = load_identifier(saved)[0]
    assert FormulaTokenKernel().annotation_report(loaded.train_spectra_).n_annotated_spectra == len(train)
    queries = cleaning.single(spectra)[:10]
    for a, b in zip(model.test_kernel(queries), loaded.test_kernel(queries), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(loaded.weights_, model.weights_)
