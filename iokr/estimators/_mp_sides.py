"""MP-IOKR's sides and helpers: the input-side variants over training and candidate inputs, the output basis over
``[training outputs; candidate pool]`` and the block operators of the separate approximation.

They implement the side protocols of :mod:`iokr.estimators._protocols` for :class:`~iokr.estimators.MPIOKR`.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ..decoding import decoding_rule
from ..decoding.developer import inverse_norms
from ..kernels import KernelTransform, TransformedBasis
from ._sides import gram_norms


class _BlockDiagonal:
    """``blockdiag(blocks)`` as an operator: ``D_K @ B`` block row by block row, without the dense ``(G l)^2`` matrix.

    The separate approximation's ``D_K = blockdiag(mu_k K'_k)``: its dense product costs ``2 (G l)^3`` flops, the
    block rows ``2 G^2 l^3``.
    """

    def __init__(self, blocks):
        self.blocks = blocks

    def __matmul__(self, other):
        out = np.empty((sum(b.shape[0] for b in self.blocks), other.shape[1]),
                       dtype=np.result_type(other, *self.blocks))
        start = 0
        for block in self.blocks:
            stop = start + block.shape[0]
            np.matmul(block, other[start:stop], out=out[start:stop])
            start = stop
        return out


def _checksum(array):
    array = np.ascontiguousarray(array, dtype=np.float64)
    return (array.shape, float(array.sum()), float(np.einsum("ij,ij->", array, array)),
            float(array[::7].sum()) if array.size else 0.0)


def _row_keys(*blocks):
    """Hashable bytes of each row of the side-by-side blocks (values as float64)."""
    joined = np.concatenate([np.asarray(b, dtype=np.float64).reshape(len(b), -1) for b in blocks], axis=1)
    return [row.tobytes() for row in np.ascontiguousarray(joined)]


def _merge_units(train_inputs, train_outputs, cand_inputs, pool, used):
    """Merge candidates identical (input and output) to a training example or to each other.

    ``Phi_U`` and ``Psi_U`` then have repeated columns; with the 0/1 merge matrix ``S`` (``U -> merged units``),
    ``h(x) = Psi_m (S^T G S)(alpha + K_m S^T G S)^{-1} k_m(x)`` exactly (push-through), on fewer units. When the
    training outputs are the candidates (the paper's cross-lingual setting) the basis halves.

    Returns
    -------
    merge : sparse matrix of shape (l + z, l + z')
    new_units : ndarray of int
        Positions (in ``used``) of the candidates that became new units, in unit order.
    """
    n = train_inputs.shape[0]
    index = {}
    for i, key in enumerate(_row_keys(train_inputs, train_outputs)):
        index.setdefault(key, i)
    targets, new_units = np.empty(used.size, dtype=np.intp), []
    if used.size:
        for j, key in enumerate(_row_keys(cand_inputs, np.asarray(pool[used]))):
            if key not in index:
                index[key] = n + len(new_units)
                new_units.append(j)
            targets[j] = index[key]
    rows = np.arange(n + used.size)
    cols = np.concatenate([np.arange(n), targets])
    merge = sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n + used.size, n + len(new_units)))
    return merge, np.asarray(new_units, dtype=np.intp)


def _mixing_matrix(mean_op, omega):
    """Sparse ``G = [[I, -Vbar^T], [-Vbar, diag(omega)]]`` over ``[examples; used candidates]``."""
    n = mean_op.shape[0]
    return sparse.bmat([[sparse.identity(n), -mean_op], [-mean_op.T, sparse.diags(omega)]], format="csr")


class _PlainInput:
    """The input side of one kernel, against the training examples."""

    def __init__(self, side):
        self.side = side
        self.n_examples = side.n_train
        self.n_train = side.n_train
        self.n_features_in = side.n_features_in

    def check_test(self, X, input_diag=None):
        return self.side.check_test(X, input_diag)

    def test_block(self, X, rows, input_diag=None):
        return self.side.test_block(X, rows, input_diag)


class _KnownInput(_PlainInput):
    """The input side against the training examples followed by the used candidates (known candidate inputs)."""

    def __init__(self, plain, candidate_inputs):
        super().__init__(plain.side)
        side = plain.side
        self.basis = TransformedBasis(side.kernel, side.transform, side.X_train, candidate_inputs)
        self.n_train = self.basis.n_basis

    def test_block(self, X, rows, input_diag=None):
        return self.basis.block(X[rows])[0]


class GroupedInput:
    """Per-group input kernels ``sum_{k in group} mu_k K'_k`` for the separate approximation (Proposition 5).

    Centering is per base kernel (it is linear); the normalization scale comes from the combined kernel, so the
    groups sum to the transformed combined kernel used by ``"joint"``. Public for studies that need the
    transformed per-group training Grams of a combined kernel (``fit_grams(X)``: one ``(n, n)`` Gram per group).

    Parameters
    ----------
    kernels : sequence of Kernel
        The base kernels.
    weights : array-like of shape (n_kernels,)
        Their weights ``mu_k``.
    groups : list of ndarray of int
        Indices of the base kernels of each group.
    center, normalize : bool
        Center each base kernel; normalize by the combined kernel's diagonal.
    """

    def __init__(self, kernels, weights, groups, center, normalize):
        self.kernels, self.weights, self.groups = kernels, weights, groups
        self.center, self.normalize = center, normalize

    def fit_grams(self, X):
        X = self.kernels[0].validate(X, "X")
        self.X_train = X
        self.n_examples, self.n_features_in = X.shape
        self.n_train = X.shape[0] * len(self.groups)
        self.transforms = [KernelTransform(self.center, False) for _ in self.kernels]
        centered = [w * t.fit_transform(k(X)) for k, w, t in zip(self.kernels, self.weights, self.transforms, strict=True)]
        diag = np.clip(sum(np.diag(c) for c in centered), 0.0, None)
        self.train_scale = inverse_norms(diag) if self.normalize else np.ones_like(diag)
        scale = np.outer(self.train_scale, self.train_scale)
        return [sum(centered[k] for k in group) * scale for group in self.groups]

    def check_test(self, X, input_diag=None):
        X = self.kernels[0].validate(X, "X")
        if X.shape[1] != self.n_features_in:
            raise ValueError(f"'X' has {X.shape[1]} features, but the model was fitted with {self.n_features_in} "
                             "features.")
        return X, input_diag

    def test_block(self, X, rows, input_diag=None):
        block = X[rows]
        parts, diag = [], 0.0
        for kernel, weight, transform in zip(self.kernels, self.weights, self.transforms, strict=True):
            cross, d = transform.transform(np.asarray(kernel.compute(block, self.X_train), dtype=np.float64),
                                           kernel.compute_diag(block))
            parts.append(weight * cross)
            diag = diag + weight * d
        scale = inverse_norms(np.clip(diag, 0.0, None)) if self.normalize else np.ones(block.shape[0])
        outer = scale[:, None] * self.train_scale[None, :]
        return np.concatenate([sum(parts[k] for k in group) * outer for group in self.groups], axis=1)


class _OutputBasis:
    """Kernelized output side over ``[training outputs; used candidates]`` (the predictor's output basis).

    Queries are coefficients over the basis; candidates are their transformed kernel values against it. The
    transform is the one fitted on the training outputs, so candidates are not exactly unit norm even with
    ``normalize_output``: cosine decoding always rescales them.
    """

    explicit = False

    def __init__(self, output, pool, used):
        self.side = output
        self.kernel = output.kernel
        self.n_features = output.n_features
        extra = np.asarray(pool[used]) if used.size else np.zeros((0, output.n_features))
        self.basis = TransformedBasis(output.kernel, output.kernel_transform, output.Y_train, extra)
        self._gram = None

    def candidate_block(self, C, decoding, name="candidates"):
        rule = decoding_rule(decoding)
        C = np.asarray(C)
        if C.ndim != 2 or C.shape[1] != self.n_features:
            raise ValueError(f"'{name}' has candidates with {C.shape[-1] if C.ndim else 0} features, but the model "
                             f"was fitted on outputs with {self.n_features} features.")
        C = self.kernel.validate(C, name)
        R, sq_norms = self.basis.block(C)
        if C.dtype == np.float32:
            R = R.astype(np.float32)
        return rule.candidate(R, sq_norms, unit_norm=False)

    def candidate_bytes_per_row(self, n_train):
        return 3 * 8 * self.basis.n_basis

    def binary_rule(self, decoding):
        """Give None: candidates are kernel values against the basis, not the 0/1 rows themselves."""

    def query_norms(self, beta):
        """``||h||`` of coefficient rows over the basis, through the transformed basis Gram (built once)."""
        if self._gram is None:
            self._gram = self.basis.gram(self.side.train_gram)
        return gram_norms(beta, self._gram)

    def query_representation(self, beta, decoding, *, norm_floor=None):
        return decoding_rule(decoding).query(beta, self.query_norms, norm_floor=norm_floor)


#: The former private name (kept for existing imports).
_GroupedInput = GroupedInput
