"""Every input-side and output-side variant against its protocol and against naive formulas.

Input sides (``InputSideProtocol``): IOKR's kernel and precomputed sides, the sketched feature side, MP-IOKR's plain,
known-candidate and grouped sides. Their test blocks on the training inputs are checked against the centering /
normalization formula applied to the raw kernel by hand.

Output sides (``OutputSideProtocol``): explicit features, kernel outputs (with and without the binary Tanimoto
counts), the sketched output features, MP-IOKR's output basis, IOKRCV's hold-out targets. For each decoding rule the
bilinear score ``<Q, R> + offset`` is checked against the rule written out (``-||h - psi||^2 + ||h||^2``,
``<h, psi>``, cosine) with ``h`` and ``psi`` built by hand in the side's output space.
"""

import numpy as np
import pytest

from iokr.decoding import DECODINGS, CandidateSets, PackedBinaryFeatures, decoding_rule, dense_scores
from iokr.decoding.developer import Scorer
from iokr.estimators import InputSideProtocol, OutputSide, OutputSideProtocol
from iokr.estimators.iokr import IOKR
from iokr.estimators.mpiokr import MPIOKR
from iokr.estimators.sketched import SketchedIOKR
from iokr.kernels import Gaussian, GaussianTanimoto, Linear, Polynomial, Tanimoto, WeightedSum
from iokr.model_selection._iokrcv import _OutputTarget

N, D, P = 12, 4, 6


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    Y = (rng.random((N, P)) < 0.4).astype(np.float64)
    Y[0] = 0.0  # a zero output: zero norms must stay zero under every rule
    return X, Y


def naive_transform(K, n_train, center, normalize):
    """Centering on the first ``n_train`` points, then unit norm, of a raw Gram over [train; others] (kernel form)."""
    K = np.array(K, dtype=np.float64)
    if center:
        r = K[:, :n_train].mean(axis=1)
        K = K - r[:, None] - r[None, :] + K[:n_train, :n_train].mean()
    if normalize:
        d = np.clip(np.diag(K), 0.0, None)
        inv = np.where(d > 1e-12 * max(d.max(), 1e-300), 1.0 / np.sqrt(np.where(d > 0, d, 1.0)), 0.0)
        K = K * inv[:, None] * inv[None, :]
    return K


# -- input sides -------------------------------------------------------------------------------------------------
def _iokr_input():
    X, Y = _data()
    model = IOKR(input_kernel=Gaussian(0.3)).fit(X, Y)
    return model.input_, X, naive_transform(Gaussian(0.3)(X), N, True, True)


def _precomputed_input():
    X, Y = _data()
    K = Gaussian(0.3)(X)
    model = IOKR(input_kernel="precomputed", normalize_input=False).fit(K, Y)
    return model.input_, K, naive_transform(K, N, True, False)


def _sketched_input():
    X, Y = _data()
    model = SketchedIOKR(input_kernel=Gaussian(0.3), n_components=N, random_state=0).fit(X, Y)
    # Full-rank sketch: the transformed features reproduce the transformed Gram (as Gram of features).
    return model.input_, X, naive_transform(Gaussian(0.3)(X), N, True, True)


def _falkon_input():
    X, Y = _data()
    model = SketchedIOKR(input_kernel=Gaussian(0.3), solver="falkon", n_components=4, random_state=0).fit(X, Y)
    return model.input_, X, naive_transform(Gaussian(0.3)(X), N, True, True)


def _mp_sets(Y, rng):
    pool = (rng.random((5, P)) < 0.4).astype(np.float64)
    return pool, [pool[np.sort(rng.choice(5, 2, replace=False))] for _ in range(N)]


def _mp_plain_input():
    X, Y = _data()
    _, sets = _mp_sets(Y, np.random.default_rng(1))
    model = MPIOKR(input_kernel=Gaussian(0.3), approximation="joint").fit(X, Y, sets)
    return model.input_, X, naive_transform(Gaussian(0.3)(X), N, True, True)


def _mp_known_input():
    X, Y = _data()
    rng = np.random.default_rng(2)
    _, sets = _mp_sets(Y, rng)
    inputs = [rng.normal(size=(s.shape[0], D)) for s in sets]
    model = MPIOKR(input_kernel=Gaussian(0.3), approximation="known").fit(X, Y, sets, inputs)
    side = model.input_
    basis = np.vstack([X, side.basis.extra])
    return side, X, naive_transform(Gaussian(0.3)(basis), N, True, True)[:N]


def _mp_grouped_input():
    X, Y = _data()
    _, sets = _mp_sets(Y, np.random.default_rng(3))
    kernel = WeightedSum([Gaussian(0.3), Linear(), Polynomial(2)], [0.5, 0.2, 0.3])
    model = MPIOKR(input_kernel=kernel, approximation="separate", gamma=[1.0, 2.0, 1.0]).fit(X, Y, sets)
    # The groups' blocks sum to the transformed combined kernel.
    return model.input_, X, naive_transform(kernel(X), N, True, True)


def _group_sum(side, block):
    n_groups = block.shape[1] // side.n_examples if hasattr(side, "groups") else 1
    return sum(np.split(block, n_groups, axis=1))


INPUT_SIDES = {
    "InputSide": (_iokr_input, False),
    "InputSide-precomputed": (_precomputed_input, False),
    "_FeatureInput": (_sketched_input, True),
    "InputSide-falkon": (_falkon_input, False),
    "_PlainInput": (_mp_plain_input, False),
    "_KnownInput": (_mp_known_input, False),
    "_GroupedInput": (_mp_grouped_input, False),
}


@pytest.mark.parametrize("name", sorted(INPUT_SIDES))
def test_input_side_protocol_and_naive_gram(name):
    build, features = INPUT_SIDES[name]
    side, X, reference = build()
    assert isinstance(side, InputSideProtocol)
    X_test, diag = side.check_test(X, None)
    block = side.test_block(X_test, slice(None), diag)
    assert block.shape == (X.shape[0], side.n_train) and block.dtype == np.float64
    chunked = np.vstack([side.test_block(X_test, slice(a, a + 5), diag) for a in range(0, X.shape[0], 5)])
    np.testing.assert_allclose(chunked, block, rtol=1e-12, atol=1e-12)
    got = block @ block.T if features else _group_sum(side, block)
    np.testing.assert_allclose(got, reference, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("name", sorted(INPUT_SIDES))
def test_input_side_rejects_wrong_width(name):
    side, X, _ = INPUT_SIDES[name][0]()
    with pytest.raises(ValueError, match="features"):
        side.check_test(np.ones((2, X.shape[1] + 1)), None)


# -- output sides ------------------------------------------------------------------------------------------------
class Space:
    """``h`` and ``psi(c)`` written out: coefficients ``H`` over a basis of Gram ``G`` (or features, ``G = None``)."""

    def __init__(self, candidates, G=None, idx=None, features=None):
        self.candidates, self.G, self.idx, self.features = candidates, G, idx, features

    def width(self):
        return self.features.shape[1] if self.G is None else self.G.shape[0]

    def terms(self, H):
        """``<h, psi(c)>`` (m, c), ``||h||^2`` (m,), ``||psi(c)||^2`` (c,)."""
        if self.G is None:
            return H @ self.features.T, (H * H).sum(1), (self.features**2).sum(1)
        return H @ self.G[:, self.idx], np.einsum("ij,jk,ik->i", H, self.G, H), np.diag(self.G)[self.idx]


def _explicit_space(Y, center, normalize):
    F = np.array(Y, dtype=np.float64)
    if center:
        F = F - F.mean(axis=0)
    if normalize:
        norms = np.linalg.norm(F, axis=1)
        F = F * np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)[:, None]
    return F


def _linear(center=True, normalize=True):
    X, Y = _data()
    side = IOKR(center_output=center, normalize_output=normalize).fit(X, Y).output_
    return side, Space(Y, features=_explicit_space(Y, center, normalize))


def _kernel(kernel):
    def build():
        X, Y = _data()
        side = IOKR(output_kernel=kernel).fit(X, Y).output_
        return side, Space(Y, G=naive_transform(kernel(Y), N, True, True), idx=np.arange(N))
    return build


def _sketched_output():
    X, Y = _data()
    model = SketchedIOKR(output_kernel=Gaussian(0.5), n_components=N, output_components=N, random_state=0).fit(X, Y)
    side = model.output_
    return side, Space(Y, features=_explicit_space(side.kernel.features(Y), True, True))


def _mp_output_basis():
    X, Y = _data()
    _, sets = _mp_sets(Y, np.random.default_rng(4))
    side = MPIOKR(output_kernel=Gaussian(0.5), approximation="joint").fit(X, Y, sets).output_
    rows = np.vstack([side.basis.train, side.basis.extra])
    return side, Space(rows, G=naive_transform(Gaussian(0.5)(rows), N, True, True), idx=np.arange(rows.shape[0]))


def _target_features():
    _, Y = _data()
    side = OutputSide("linear", True, True).fit(Y)
    target = _OutputTarget(side, N)
    assert target.explicit
    return target, Space(Y, features=_explicit_space(Y, True, True))


def _target_dual():
    _, Y = _data()
    side = OutputSide("linear", True, True).fit(Y)
    target = _OutputTarget(side, P - 1)  # wider features than examples: dual coordinates
    assert not target.explicit
    return target, Space(Y, G=naive_transform(Y @ Y.T, N, True, True), idx=np.arange(N))


def _target_kernel():
    _, Y = _data()
    target = _OutputTarget(OutputSide(Gaussian(0.5), True, True).fit(Y), N)
    return target, Space(Y, G=naive_transform(Gaussian(0.5)(Y), N, True, True), idx=np.arange(N))


OUTPUT_SIDES = {
    "OutputSide-linear": _linear,
    "OutputSide-linear-raw": lambda: _linear(False, False),
    "OutputSide-gaussian": _kernel(Gaussian(0.5)),
    "OutputSide-tanimoto-binary": _kernel(Tanimoto()),
    "OutputSide-gaussian-tanimoto-binary": _kernel(GaussianTanimoto(gamma=0.7)),
    "OutputSide-sketched": _sketched_output,
    "_OutputBasis": _mp_output_basis,
    "_OutputTarget-features": _target_features,
    "_OutputTarget-dual": _target_dual,
    "_OutputTarget-kernel": _target_kernel,
}


def naive_scores(decoding, inner, hh, cc):
    if decoding == "distance":
        return 2.0 * inner - cc[None, :]  # -||h - psi||^2 + ||h||^2
    if decoding == "inner":
        return inner
    scale = np.sqrt(hh)[:, None] * np.sqrt(cc)[None, :]
    return np.divide(inner, scale, out=np.zeros_like(inner), where=scale > 0)


@pytest.mark.parametrize("decoding", DECODINGS)
@pytest.mark.parametrize("name", sorted(OUTPUT_SIDES))
def test_output_side_scores_follow_the_rule(name, decoding):
    side, space = OUTPUT_SIDES[name]()
    assert isinstance(side, OutputSideProtocol)
    H = np.random.default_rng(5).normal(size=(4, space.width()))
    Q = side.query_representation(H, decoding)
    R, offset = side.candidate_block(space.candidates, decoding)
    assert side.candidate_bytes_per_row(N) > 0 and R.shape == (space.candidates.shape[0], Q.shape[1])
    S = Q @ R.T + (0.0 if offset is None else offset[None, :])
    np.testing.assert_allclose(S, naive_scores(decoding, *space.terms(H)), rtol=1e-8, atol=1e-8)
    # A rule object is accepted wherever a name is.
    np.testing.assert_array_equal(side.query_representation(H, decoding_rule(decoding)), Q)


@pytest.mark.parametrize("decoding", DECODINGS)
@pytest.mark.parametrize("name", sorted(OUTPUT_SIDES))
def test_binary_rule_matches_candidate_block(name, decoding):
    side, space = OUTPUT_SIDES[name]()
    rule = side.binary_rule(decoding)
    if rule is None:
        pytest.skip("no affine 0/1 form for this side")
    H = np.random.default_rng(6).normal(size=(3, space.width()))
    Q = side.query_representation(H, decoding)
    pool = (np.random.default_rng(7).random((40, P)) < 0.4).astype(np.uint8)
    pool[0] = 0
    direct = Scorer(3, Q.shape[1], lambda rows: Q[rows], lambda C: side.candidate_block(C, decoding))
    fused = Scorer(3, Q.shape[1], lambda rows: Q[rows], lambda C: side.candidate_block(C, decoding),
                   binary_rule=rule)
    expected = dense_scores(direct, pool.astype(np.float64))
    np.testing.assert_allclose(dense_scores(fused, PackedBinaryFeatures.from_dense(pool)), expected, rtol=1e-5,
                               atol=1e-5)


def test_binary_tanimoto_counts_are_used():
    side, _ = OUTPUT_SIDES["OutputSide-gaussian-tanimoto-binary"]()
    assert side.binary is not None and side.binary.applies_to(np.eye(2, P))
    assert not side.binary.applies_to(np.full((1, P), 0.5))


def test_unknown_decoding_is_rejected_by_every_side():
    for build in OUTPUT_SIDES.values():
        side, space = build()
        with pytest.raises(ValueError, match="'decoding' parameter"):
            side.candidate_block(space.candidates, "euclid")
        with pytest.raises(ValueError, match="'decoding' parameter"):
            side.query_representation(np.zeros((1, space.width())), "euclid")


def test_candidate_sets_scoring_uses_the_same_rule():
    """IOKR.rank through CandidateSets equals the side's bilinear rule on the same rows (no rule branching)."""
    X, Y = _data()
    for decoding in DECODINGS:
        model = IOKR(decoding=decoding).fit(X, Y)
        sets = CandidateSets.shared(Y, 2)
        ranked = model.rank(X[:2], sets)
        scores = model.decision_function(X[:2], Y)
        for q in range(2):
            np.testing.assert_allclose(np.sort(ranked[q].scores), np.sort(scores[q]), rtol=1e-12)


@pytest.mark.parametrize("kernel", [Tanimoto(), GaussianTanimoto(0.5), Linear()])
def test_candidate_bytes_per_row_count_the_candidate_row_itself(kernel):
    # a kernel output side's candidate block reads the candidate rows (expanded to float from a compact pool,
    # validated, their norms) besides the block against the training outputs: with 3 training structures and
    # 2,215-feature fingerprints the rows dominate. Counted by n_train alone, scoring 100k candidates of a
    # 32-structure metabolite model took 2,953 MiB peak under a 256 MiB budget (456 MiB counting the rows).
    Y = (np.random.default_rng(0).random((3, 2215)) < 0.1).astype(np.float64)
    side = OutputSide(kernel, center=False, normalize=False)
    side.fit(Y)
    assert side.candidate_bytes_per_row(3) >= 3 * 8 * Y.shape[1]
