"""Queries of models with annotated kernels, scored under the formula of each candidate (``_hypotheses.py``)."""

import copy

import numpy as np
import pytest
from reference import assert_close_to_scale
from test_annotated_kernels import MASSES, annotated_spectra

from iokr.apps.metabolites import Fingerprinter, MetaboliteIdentifier, Spectra
from iokr.apps.metabolites.candidates._candidate_sources import open_source
from iokr.apps.metabolites.chemistry._annotation import precursor_ion
from iokr.apps.metabolites.chemistry._formulas import ELECTRON_MASS, monoisotopic_mass
from iokr.apps.metabolites.model._hypotheses import (
    HYPOTHESIS_BLOCK,
    annotation_totals,
    hypothesis_spectra,
    hypothesis_test_kernel,
    query_grams,
    score_hypotheses,
)
from iokr.apps.metabolites.ranking._identify import IdentifySettings, Query, score_queries

TRUE = "C9H11NO2"
#: The query's formula, three formulas within 0.05 Da of it (annotated), one off by 8 Da (the measured precursor
#: does not fit it: fallback) and one with an element the annotation does not support (fallback).
WINDOW = np.array([TRUE, "C8H11N3O", "C9H11NS", "C7H11N5", "C6H11N3O3", "C6H9AsO"], dtype=object)
N_FP = 32


def _query_peaks(formula, rng, shift=0.0, decimals=None):
    """Peaks on the fixed subformulas :func:`annotated_spectra` draws for ``formula`` (shifted by ``shift``)."""
    vec, _ = precursor_ion(formula, "[M+H]+")
    precursor = float(vec @ MASSES - ELECTRON_MASS)
    pool = np.random.default_rng(len(formula) * 7 + int(vec.sum())).integers(0, vec + 1, size=(8, vec.size))
    mz = pool @ MASSES - ELECTRON_MASS
    mz = mz[(mz > 20) & (mz < precursor - 0.5)] + shift
    if decimals is not None:
        mz = np.round(mz, decimals)
    return np.column_stack([mz, rng.uniform(0.1, 1.0, mz.size)]), precursor


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(5)
    S = annotated_spectra(rng, 40)
    Y = (rng.random((40, N_FP)) < 0.3).astype(float)
    # uniform weights: ALIGNF gives the token kernels weight 0 on such small data, which would test nothing
    model = MetaboliteIdentifier(kernels=("ppk", "fragments", "losses"), weights="uniform", alpha=0.1).fit(S, Y)
    return model, rng


def _queries(rng):
    """0: the true formula's fragments and one peak above the precursor; 1: every peak shifted by 0.5 Da
    (explained under no formula); 2: low resolution (two decimals); 3: an 'inchi' naming another structure."""
    peaks, precursor = _query_peaks(TRUE, rng)
    above = np.vstack([peaks, [[precursor + 3.0, 0.5]]])
    lists = [above, _query_peaks(TRUE, rng, shift=0.5)[0], _query_peaks(TRUE, rng, decimals=2)[0], peaks]
    meta = [{"feature_id": str(i)} for i in range(4)]
    meta[3]["inchi"] = "InChI=1S/C2H6O/c1-2-3/h3H,2H2,1H3"
    return Spectra.from_peak_lists(lists, np.full(4, precursor), meta)


@pytest.mark.parametrize("input_gamma", [None, 0.7])
def test_hypothesis_rows_are_the_models_test_kernel(fitted, input_gamma):
    model, rng = fitted
    model = copy.deepcopy(model).set_params(input_gamma=input_gamma)
    model.fit(model.train_spectra_, model.train_outputs_)
    Q = _queries(rng)
    of_query = np.repeat(np.arange(4), WINDOW.size + 1)
    formulas = [None, *WINDOW] * 4
    hyps = hypothesis_spectra(Q, of_query, formulas, ["[M+H]+"] * of_query.size)
    assert all("inchi" not in m for m in hyps.metadata) and hyps.metadata[1]["formula"] == TRUE
    K, diag, tokens = hypothesis_test_kernel(model, hyps, of_query, query_grams(model, Q))
    K_ref, diag_ref = model.test_kernel(hyps)
    np.testing.assert_array_equal(K, K_ref)
    np.testing.assert_array_equal(diag, diag_ref)
    # tokens: exactly the hypotheses whose row differs from the query's row without formula
    no_formula = np.repeat(np.arange(0, of_query.size, WINDOW.size + 1), WINDOW.size + 1)
    differs = np.any(K[no_formula] != K, axis=1) | (diag != diag[no_formula])
    np.testing.assert_array_equal(tokens, differs)
    assert tokens[1] and not tokens[WINDOW.size + 2]  # query 0 under its formula; query 1 under none


def _sq_norm_by_decodings(model, K, diag, C):
    """``||h||^2`` of one query from the scores of the inner, cosine and distance decodings:
    ``I = <h, psi>``, ``D = 2 I - ||psi||^2``, ``cos = I / (||h|| ||psi||)``; also checks ``||psi|| = 1`` (the
    model's output features are centered and normalized)."""
    scores = {}
    for rule in ("inner", "cosine", "distance"):
        iokr = copy.deepcopy(model.iokr_).set_params(decoding=rule)
        scores[rule] = iokr.decision_function(K, C, input_diag=diag)[0]
    psi = np.sqrt(2.0 * scores["inner"] - scores["distance"])
    np.testing.assert_allclose(psi, 1.0, rtol=1e-5)
    estimates = (scores["inner"] / (scores["cosine"] * psi)) ** 2
    np.testing.assert_allclose(estimates, estimates[0], rtol=1e-5)
    return float(np.median(estimates))


@pytest.mark.parametrize("across", ["inner", "preimage"])
def test_scores_do_not_depend_on_how_the_formula_is_known(fitted, across):
    """The true formula's candidates get the same scores whether the query gives its formula or the candidates
    come from a mass window of six formulas. Those scores are the model's scores of the query carrying that formula
    (``across="inner"``), or these shifted by ||h_f||^2 - ||h_0||^2, checked against the scores of three decoding
    rules (``"preimage"``)."""
    model, rng = fitted
    Q = _queries(rng)[np.array([0])]
    C = (rng.random((36, N_FP)) < 0.3).astype(float)
    formulas = WINDOW[np.arange(36) % WINDOW.size]
    window, (hyp,) = score_hypotheses(model, Q, ["[M+H]+"], C, [np.arange(36)], [formulas], across=across)
    true = np.flatnonzero(formulas == TRUE)
    given, (hyp_given,) = score_hypotheses(model, Q, ["[M+H]+"], C, [true], [formulas[true]], given=[True],
                                           across=across)
    assert_close_to_scale(window[0][true], given[0])
    shifts = dict(zip(hyp.formulas, hyp.shift, strict=True))
    h0 = hypothesis_spectra(Q, [0], [None], ["[M+H]+"])
    sq0 = _sq_norm_by_decodings(model, *model.test_kernel(h0), C)
    for f in WINDOW:
        mine = np.flatnonzero(formulas == f)
        spectra = hypothesis_spectra(Q, [0], [f], ["[M+H]+"])
        own = model.score_sets(spectra, [C[mine]])[0]
        if across == "inner":
            assert shifts[f] == 0.0
            assert_close_to_scale(window[0][mine], own)
        else:
            np.testing.assert_allclose(window[0][mine], own - shifts[f], rtol=1e-12, atol=1e-12)
            expected = _sq_norm_by_decodings(model, *model.test_kernel(spectra), C) - sq0
            np.testing.assert_allclose(shifts[f], expected, rtol=1e-5, atol=1e-9)
            assert (shifts[f] != 0.0) == (f in (TRUE, "C8H11N3O", "C9H11NS", "C7H11N5"))
    assert dict(zip(hyp.formulas, hyp.fallback, strict=True)) == {
        TRUE: "", "C8H11N3O": "", "C9H11NS": "", "C7H11N5": "", "C6H11N3O3": "precursor_mismatch",
        "C6H9AsO": "unsupported_element"}
    assert hyp.n_above[hyp.formulas.index(TRUE)] == 1
    assert hyp_given.summary(TRUE) == "C9H11NO2: 5/9 peaks explained, 1 above the precursor"
    assert hyp.summary(TRUE) == ("4/6 candidate formulas annotated; fallback to the unannotated kernels: "
                                 "precursor_mismatch=1, unsupported_element=1; top hit C9H11NO2: 5/9 peaks "
                                 "explained, 1 above the precursor")
    with pytest.raises(ValueError, match="'across' parameter"):
        score_hypotheses(model, Q, ["[M+H]+"], C, [true], [formulas[true]], across="joint")


def test_unexplained_queries_fall_back_exactly_to_the_unannotated_scores(fitted):
    """Peaks explained under no formula, or a low-resolution spectrum: every hypothesis falls back, and the scores
    are those of the query without formula, to rounding (every annotated row 0)."""
    model, rng = fitted
    Q = _queries(rng)[np.array([1, 2])]
    C = (rng.random((24, N_FP)) < 0.3).astype(float)
    formulas = WINDOW[np.arange(24) % WINDOW.size]
    scores, hyps = score_hypotheses(model, Q, ["[M+H]+"] * 2, C, [np.arange(24)] * 2, [formulas] * 2)
    reference = model.score_sets(hypothesis_spectra(Q, [0, 1], [None, None], ["[M+H]+"] * 2), [C, C])
    for s, ref in zip(scores, reference, strict=True):
        assert_close_to_scale(s, ref)
    assert hyps[0].fallback.count("no_peak_explained") == 4 and hyps[1].fallback.count("low_resolution") == 5
    assert hyps[0].n_annotated == hyps[1].n_annotated == 0 and set(hyps[0].shift) == {0.0}
    assert hyps[1].summary(TRUE).endswith("top hit C9H11NO2: fallback (low_resolution)")
    totals = annotation_totals([None, *hyps])
    assert totals["queries"] == 2 and totals["queries_annotated"] == 0 and totals["formula_hypotheses"] == 12
    assert totals["fallbacks"] == {"low_resolution": 5, "no_peak_explained": 4, "precursor_mismatch": 1,
                                   "unsupported_element": 2}


def test_query_inchi_is_not_read_and_blocks_do_not_change_scores(fitted, monkeypatch):
    """A query's own 'inchi' field names no hypothesis; splitting the hypotheses into small blocks changes no
    score."""
    model, rng = fitted
    Q = _queries(rng)
    C = (rng.random((18, N_FP)) < 0.3).astype(float)
    formulas = WINDOW[np.arange(18) % WINDOW.size]
    args = (model, Q, ["[M+H]+"] * 4, C, [np.arange(18)] * 4, [formulas] * 4)
    whole, _ = score_hypotheses(*args)
    plain = Spectra(Q.mz, Q.intensity, Q.offsets, Q.precursor_mz, [{}] * 4)[np.array([3])]
    assert_close_to_scale(whole[3], score_hypotheses(model, plain, ["[M+H]+"], C, [np.arange(18)],
                                                     [formulas])[0][0])
    # read as the query's structure, the InChI (C2H6O) would make every hypothesis a precursor mismatch
    assert score_hypotheses(*args)[1][3].n_annotated == 4
    monkeypatch.setattr("iokr.apps.metabolites.model._hypotheses.HYPOTHESIS_BLOCK", 3)
    assert HYPOTHESIS_BLOCK > 3
    for a, b in zip(score_hypotheses(*args)[0], whole, strict=True):
        assert_close_to_scale(a, b)


class _Source:
    """A candidate source in memory (the interface of :mod:`._candidate_sources`)."""

    def __init__(self, C, formulas):
        self.C, self.formulas = C, formulas

    def fingerprints(self, ids, fingerprinter, compact=False):
        return self.C[ids]

    def formulas_of(self, ids):
        return list(self.formulas[ids])


def _ok_queries(n_candidates, given):
    out = []
    for row in range(2):
        q = Query(row=row, query_id=str(row), precursor_mz=166.0, adduct="[M+H]+", formula=given[row])
        q.candidates = np.arange(n_candidates) if not given[row] else np.arange(0, n_candidates, WINDOW.size)
        out.append(q)
    return out


def test_default_model_scores_are_unchanged(fitted):
    """A model without annotated kernels takes the model's own route (the same scores to rounding) and reports no annotation."""
    model, rng = fitted
    default = MetaboliteIdentifier(alpha=0.1).fit(model.train_spectra_, model.train_outputs_)
    Q = _queries(rng)
    C = (rng.random((30, N_FP)) < 0.3).astype(float)
    source = _Source(C, WINDOW[np.arange(30) % WINDOW.size])
    queries = _ok_queries(30, ["", TRUE])
    got = [r.scores for r in score_queries(default, Q, queries, source, None, IdentifySettings())]
    expected = default.score_sets(Q[np.array([0, 1])], [C, C[queries[1].candidates]])
    for q, s, ref in zip(queries, got, expected, strict=True):
        assert_close_to_scale(s, ref)
        assert q.annotation == "" and q.hypotheses is None
    # the annotated model through the same route: the source's formulas, or the query's own
    queries = _ok_queries(30, ["", TRUE])
    got = [r.scores for r in score_queries(model, Q, queries, source, None, IdentifySettings())]
    window, _ = score_hypotheses(model, Q[np.array([0])], ["[M+H]+"], C, [np.arange(30)], [source.formulas])
    assert_close_to_scale(got[0], window[0])
    assert queries[0].annotation.startswith("4/6 candidate formulas annotated")
    assert queries[1].annotation == "C9H11NO2: fallback to the unannotated kernels (no_peak_explained)"
    assert queries[1].hypotheses.given and queries[1].hypotheses.formulas == (TRUE,)


def test_candidate_sources_give_canonical_formulas(tmp_path):
    """Both sources name each candidate's canonical formula, the key ``identify`` groups hypotheses by."""
    folder = tmp_path / "lists"
    folder.mkdir()
    for formula, smiles in (("NO2C9H11", ["NC(Cc1ccccc1)C(=O)O", "CNc1ccccc1CC(=O)O"]),
                            ("C8H11N3O", ["Cc1ccc(NC(N)=O)cc1N"]), ("C2H6O", ["CCO"])):
        name = f"scoring_list={formula}_spec=X_id=AAAAAAAAAAAAAA-UHFFFAOYSA-N.csv"
        (folder / name).write_text("smiles\n" + "\n".join(smiles) + "\n")
    lists = open_source(folder, Fingerprinter())
    ids = lists.select(TRUE, None, None)
    assert ids.size == 2 and lists.formulas_of(ids) == [TRUE, TRUE]  # canonical, whatever the file name's order
    window = lists.select(None, monoisotopic_mass(TRUE) - 0.05, monoisotopic_mass(TRUE) + 0.05)
    assert sorted(lists.formulas_of(window)) == ["C8H11N3O", TRUE, TRUE]
    table = tmp_path / "structures.csv"
    table.write_text("SMILES\nNC(Cc1ccccc1)C(=O)O\nOCC\nCCO\n")
    db = open_source(table, Fingerprinter())
    ids = db.select(None, 0.0, 1000.0)
    assert sorted(db.formulas_of(ids)) == ["C2H6O", "C9H11NO2"]
    assert db.formulas_of(db.select("C9H11NO2", None, None)) == ["C9H11NO2"]
