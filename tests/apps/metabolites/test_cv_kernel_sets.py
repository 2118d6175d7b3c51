"""A ``kernels`` grid key: the closed-form CV over kernel sets equals one CV per kernel set."""

import numpy as np
from test_annotated_kernels import annotated_spectra

from iokr.apps.metabolites import MetaboliteIdentifier
from iokr.apps.metabolites.selection._pipeline import TrainingSet, cross_validate

BASE = {"kernels": ("ppk", "binned"), "weights": "alignf", "sigma_mz": 0.01, "sigma_intensity": 0.25,
        "bin_width": 0.1, "output_kernel": "tanimoto"}


def test_kernel_sets_in_the_grid_match_separate_searches():
    rng = np.random.default_rng(7)
    spectra = annotated_spectra(rng, 36)
    Y = (rng.random((36, 20)) < 0.3).astype(np.float64)
    Y[:, 0] = 1.0
    train = TrainingSet(spectra, [f"K{i}" for i in range(36)], Y, 36, 0, 0)
    sets = (("ppk", "binned"), ("ppk", "fragments", "losses"))
    grid = {"alpha": (0.1, 1.0), "kernels": sets}
    best, table = cross_validate(train, BASE, grid)
    assert len(table) == 4 and best["kernels"] in sets
    for kernels in sets:
        _, alone = cross_validate(train, {**BASE, "kernels": kernels}, {"alpha": (0.1, 1.0)})
        mine = [r for r in table if r["kernels"] == kernels]
        assert [r["score"] for r in mine] == [r["score"] for r in alone]
        assert [r["weights"] for r in mine] == [r["weights"] for r in alone]
    # base Grams given for the base kernel set are used for that set only

    grams = MetaboliteIdentifier(**BASE).base_grams(spectra)
    _, again = cross_validate(train, BASE, grid, base_grams=grams)
    assert [r["score"] for r in again] == [r["score"] for r in table]
