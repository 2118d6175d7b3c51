"""Saving a fitted IOKR's state (:meth:`IOKR.fitted_state`) and restoring it without the Gram (:meth:`IOKR.restore`):
the restored model scores bit for bit as the fitted one, under every decoding rule, and a damaged state is refused."""

import numpy as np
import pytest

from iokr import IOKR
from iokr.kernels import GaussianTanimoto, Linear, Tanimoto


def _data(seed=0, n=30, p=24):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    Y = rng.integers(0, 4, (n, p)).astype(float)
    return X @ X.T, Y, rng


@pytest.mark.parametrize("decoding", ["distance", "inner", "cosine"])
@pytest.mark.parametrize("kernel", [Tanimoto(form="inner"), GaussianTanimoto(gamma=0.7, form="inner")])
@pytest.mark.parametrize("center", [True, False])
def test_restored_iokr_scores_bit_for_bit(decoding, kernel, center):
    K, Y, rng = _data()
    kwargs = {"alpha": 0.2, "input_kernel": "precomputed", "output_kernel": kernel, "decoding": decoding,
              "center_input": center, "center_output": center}
    fitted = IOKR(**kwargs).fit(K, Y)
    state = {name: value.copy() for name, value in fitted.fitted_state().items()}
    restored = IOKR(**kwargs).restore(Y, state)
    X_test = rng.normal(size=(6, 5))
    cross = X_test @ rng.normal(size=(5, 30))
    diag = np.einsum("ij,ij->i", cross, cross) / 30 + 1.0
    C = rng.integers(0, 4, (13, Y.shape[1])).astype(float)
    np.testing.assert_array_equal(restored.decision_function(cross, C, input_diag=diag),
                                  fitted.decision_function(cross, C, input_diag=diag))
    np.testing.assert_array_equal(restored.output_.train_gram, fitted.output_.train_gram)
    np.testing.assert_array_equal(restored.factor_.lower, fitted.factor_.lower)


def test_fitted_state_needs_a_precomputed_gram_and_a_kernel_output():
    K, Y, _ = _data()
    with pytest.raises(ValueError, match="precomputed input Gram with a kernel output"):
        IOKR(input_kernel="precomputed", output_kernel=Linear()).fit(K, Y).fitted_state()
    with pytest.raises(ValueError, match="precomputed input Gram with a kernel output"):
        IOKR(output_kernel=Tanimoto(form="inner")).fit(K[:, :5], Y).fitted_state()


@pytest.mark.parametrize("damage", ["alpha", "factor", "transform", "unknown"])
def test_a_damaged_state_is_refused(damage):
    K, Y, _ = _data()
    kwargs = {"alpha": 0.2, "input_kernel": "precomputed", "output_kernel": Tanimoto(form="inner")}
    state = IOKR(**kwargs).fit(K, Y).fitted_state()
    if damage == "alpha":
        kwargs["alpha"] = 0.3
    elif damage == "factor":
        state["factor"] = state["factor"].astype(np.float32)
    elif damage == "transform":
        state["input_diag"] = -state["input_diag"]
    else:
        state["output_extra"] = np.zeros(1)
    with pytest.raises(ValueError, match="shift|factor|diag|exactly"):
        IOKR(**kwargs).restore(Y, state)
