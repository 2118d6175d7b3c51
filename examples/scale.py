"""Scale: sketched IOKR (Nystrom, sparse sketches, random features), Falkon-style CG, candidate pools streamed from
disk, and the same ranking on a Dask cluster.

User guide: docs/scale.md (and docs/distributed.md). Bundled English/Spanish chapters, a few seconds:

    python examples/scale.py
"""

import tempfile
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from iokr import IOKR, CandidateFile, CandidateSets, SketchedIOKR, config_context, write_candidate_file
from iokr.datasets import load_parallel_text
from iokr.kernels import Gaussian
from iokr.metrics import top_k_accuracy, true_candidate_rank

ids, english, spanish = load_parallel_text()
rng = np.random.default_rng(0)
order = rng.permutation(len(ids))
train, test = order[:250], order[250:]
vx = TfidfVectorizer(min_df=2, sublinear_tf=True).fit([english[i] for i in train])
vy = TfidfVectorizer(min_df=2, sublinear_tf=True).fit([spanish[i] for i in train])
X, X_test = (vx.transform([english[i] for i in idx]).toarray() for idx in (train, test))
Y, C = (vy.transform([spanish[i] for i in idx]).toarray() for idx in (train, test))


def top1(model):
    S = model.decision_function(X_test, C)
    return top_k_accuracy([true_candidate_rank(S[q], q) for q in range(len(test))], 1)


kernel = Gaussian(gamma=0.5)
exact = IOKR(alpha=0.1, input_kernel=kernel).fit(X, Y)
print(f"IOKR (exact, n={len(train)}):              top-1 {top1(exact):5.1f} %")
for solver, extra in (("nystrom", {}), ("sparse", {"sparsity": 0.05}), ("rff", {})):
    sketched = SketchedIOKR(alpha=0.1, input_kernel=kernel, solver=solver, n_components=100, random_state=0,
                            **extra).fit(X, Y)
    print(f"SketchedIOKR solver={solver:8s} (s=100): top-1 {top1(sketched):5.1f} %")

# Falkon: the exact IOKR solution by block CG, Nystrom-preconditioned; K is computed block-wise, never stored.
falkon = SketchedIOKR(alpha=0.1, input_kernel=kernel, solver="falkon", n_components=50, tol=1e-10, max_iter=200,
                      random_state=0).fit(X, Y)
assert np.allclose(falkon.decision_function(X_test, C), exact.decision_function(X_test, C), rtol=1e-5, atol=1e-6)
print("SketchedIOKR solver=falkon reproduces exact IOKR: checked")

# A candidate pool on disk, read in checksummed row blocks under the working-memory budget.
folder = Path(tempfile.mkdtemp(prefix="iokr_pool_"))
pool = write_candidate_file(folder / "candidates.bin", C.astype(np.float32))
assert isinstance(pool, CandidateFile)
with config_context(working_memory=1):  # MiB: many small blocks
    on_disk = exact.rank(X_test, CandidateSets.shared(pool, len(test)), top_k=10)
in_memory = exact.rank(X_test, CandidateSets.shared(C.astype(np.float32), len(test)), top_k=10)
assert all(np.array_equal(a.pool_indices, b.pool_indices) for a, b in zip(on_disk, in_memory, strict=True))
print(f"top-10 from the file {pool.shape} == top-10 in memory: checked")

# The same top-k on a Dask cluster (optional extra: pip install 'iokr[distributed]').
try:
    from iokr.distributed import distributed_top_k, local_client
except ImportError:
    print("dask.distributed is not installed: skipping the cluster run")
else:
    import warnings

    warnings.filterwarnings("ignore", message="Sending large graph")  # the fitted model travels once per worker
    with local_client(n_workers=2) as client:  # threads of this process; see docs/distributed.md for clusters
        indices, scores = distributed_top_k(client, exact, X_test, pool, k=10, candidate_block=64)
    assert np.array_equal(indices, np.array([r.pool_indices for r in on_disk]))
    print("Dask top-10 (2 workers, candidate blocks of 64) == local top-10: checked")
