"""Candidate pooling: ``CandidateSets.from_arrays`` deduplication by row hashing against ``np.unique(axis=0)``.

2,250 query candidate rows of 4,000 features drawn with many duplicates from 1,000 distinct rows: binary
fingerprints (density 0.1, float64) and continuous rows. "before" is the former path, ``np.unique(axis=0,
return_inverse=True)``, which sorts a structured dtype with one field per feature; "after" is
:func:`iokr.decoding._candidates.unique_rows` (hash each row's bytes, sort only the distinct rows). The floor is one
pass over the data measured in the same process (``rows.tobytes()``, a copy of every byte). Best of 3, one BLAS
thread, on a shared 2-core machine.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from benchmarks._harness import best_time
from iokr.decoding import CandidateSets
from iokr.decoding._candidates import unique_rows  # private: no public name for the row hashing yet

_best = partial(best_time, repeat=3)


def run(quick=False, data_dir=None):
    rng = np.random.default_rng(0)
    n_rows, width, n_distinct = (450, 800, 200) if quick else (2250, 4000, 1000)
    rows = []
    for kind in ("binary fingerprints", "continuous"):
        base = ((rng.random((n_distinct, width)) < 0.1).astype(np.float64) if kind.startswith("binary")
                else rng.normal(size=(n_distinct, width)))
        stacked = base[rng.integers(0, n_distinct, size=n_rows)]
        t_floor, _ = _best(stacked.tobytes)
        t_before, (u0, inv0) = _best(lambda s=stacked: np.unique(s, axis=0, return_inverse=True))
        t_after, (u1, inv1) = _best(lambda s=stacked: unique_rows(s))
        sets = np.array_split(stacked, 150)
        t_from_arrays, pooled = _best(lambda s=sets: CandidateSets.from_arrays(s))
        rows.append({
            "case": f"{kind} {n_rows}x{width}, {u1.shape[0]} distinct", "before_np_unique_s": t_before,
            "after_hashing_s": t_after, "from_arrays_s": t_from_arrays, "floor_one_pass_s": t_floor,
            "speedup": t_before / t_after, "after_over_floor": t_after / t_floor,
            "identical_to_np_unique": bool(np.array_equal(u0, u1) and np.array_equal(inv0.ravel(), inv1)
                                           and np.array_equal(pooled.pool, u0)),
        })
    return rows
