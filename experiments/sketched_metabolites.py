"""Sketched IOKR on the MassBank training spectra as single spectra (issue 8, "Large-n training" on real data).

    python -m experiments sketched_metabolites --data /path/to/shared/data [--output reports]
        [--set store=STORE.sqlite] [--set n_components=1500] [--set output_components=2000] [--set subsample=4000]

Protocol: the app's evaluate job (``iokr.apps.metabolites``), except that the model trains on every cleaned single
spectrum instead of one merged spectrum per structure. Spectra are read and cleaned with the app's readers and
:class:`~iokr.apps.metabolites.selection._pipeline.Cleaning`; the 60 lists' true structures (first InChIKey block) are
excluded from training by :func:`~iokr.apps.metabolites.selection._pipeline.training_set` (``merge=False``); the lists are
scored per structure and per spectrum by :func:`~iokr.apps.metabolites.selection._pipeline.evaluate_lists`.

Model: the app's combined input kernel (4 cosine-normalized base kernels, PPK, neutral-loss PPK, binned, binned
neutral-loss, with the app's default widths, ``sigma_mz=0.001``) and Tanimoto output kernel, ``alpha = 0.1`` (the
app's default, chosen by its cross-validation on merged training spectra; not tuned here). ALIGNF weights are fitted
on a seeded random subsample of 2,000 training spectra (the full ``n x n`` Grams are what the sketch avoids).
:class:`iokr.estimators.SketchedIOKR` (``solver="nystrom"``) fits ridge regression on Nystrom features of this kernel
on ``s`` seeded random landmarks: only ``K(X, X_landmarks)`` is computed, in row blocks (the ``n x n`` Gram is never
formed). Output side: the Tanimoto kernel's kernel-output path would need an ``n x n`` projector, and
SketchedIOKR's output sketch (``output_components=m``) is compared in the table (it lost much accuracy before
the fixes described under Reading); the training
fingerprints take at most 4,485 distinct values (one per structure), so the output kernel is given as explicit features exact for IOKR
decoding (:class:`TrainingOutputFeatures`: Nystrom features on all distinct training fingerprints plus a
residual-norm coordinate; same scores as the kernel form).

Subsample comparison: on a seeded random subsample of training spectra, exact IOKR (the app's
:class:`MetaboliteIdentifier`, same kernel weights) vs the sketch, input sketch only and input + output sketch.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from experiments._common.reports import Outputs
from experiments._common.timing import best_time, peak_rss_mib
from iokr import SketchedIOKR
from iokr.apps.metabolites import (
    DEFAULT_GRID,
    DEFAULT_PARAMS,
    CandidateStore,
    Cleaning,
    Fingerprinter,
    MetaboliteIdentifier,
    SpectrumKernel,
    evaluate_lists,
    make_output_kernel,
    make_spectrum_kernel,
    normalized_gram,
    read_candidate_lists,
    read_spectra,
    training_set,
)
from iokr.kernels import Kernel
from iokr.linalg import nystrom_whitening
from iokr.linalg.developer import row_slices

#: The app's model settings at the cross-validated defaults (alpha, output kernel and sigma_mz of DEFAULT_GRID).
#: No structure prior: the committed report predates it, and the prior needs the kernel output side that the sketched
#: model replaces by features (``candidate_term`` refuses a feature-scored model).
PARAMS = {**DEFAULT_PARAMS, "output_kernel": DEFAULT_GRID["output_kernel"][0],
          "sigma_mz": DEFAULT_GRID["sigma_mz"][0], "alpha": 0.1, "prior_weight": 0.0}

EXACT_MERGED = {  # reports/metabolites.md: exact IOKR on 4,485 merged training spectra (the app's evaluate job)
    "per_structure": {"top1": 41.7, "top5": 60.0, "top10": 66.7, "top20": 71.7},
    "per_spectrum": {"top1": 41.0, "top5": 60.2, "top10": 67.8, "top20": 74.3},
    "fit_s": 18.0, "peak_rss_mib": 3.1 * 1024,  # final fit; peak RSS of the whole evaluate command (with its CV)
}


class CombinedSpectrumKernel(SpectrumKernel):
    """The app's combined input kernel ``sum_k w_k Kn_k`` on :class:`Spectra` (no input Gaussian), block by block.

    Each block is :func:`normalized_gram` of the app's base kernels, combined as :class:`MetaboliteIdentifier`
    does (``sum_k w_k G_k``, in the order of the kernels); the diagonal is the weighted sum of the unit diagonals
    (0 for a spectrum without peaks). Checked against the identifier's ``test_kernel`` in
    ``tests/experiments/test_sketched_metabolites_study.py``.
    """

    temporaries_per_entry = 6

    def __init__(self, kernels=("ppk",), weights=(1.0,), sigma_mz=0.005, sigma_intensity=0.25, bin_width=0.01):
        self.kernels = kernels
        self.weights = weights
        self.sigma_mz = sigma_mz
        self.sigma_intensity = sigma_intensity
        self.bin_width = bin_width

    def _base(self):
        return [make_spectrum_kernel(k, self.sigma_mz, self.sigma_intensity, self.bin_width) for k in self.kernels]

    def __call__(self, A, B=None, *, working_memory=None):
        A = self.validate(A, "A")
        B = A if B is None else self.validate(B, "B")
        base = self._base()
        diags_b = [k.compute_diag(B) for k in base]
        out = np.empty((len(A), len(B)))
        for rows in row_slices(len(A), 8 * max(len(B), 1) * (1 + self.temporaries_per_entry), working_memory):
            block = A[rows]
            grams = [normalized_gram(k, block, B, diag_b=d, working_memory=working_memory)[0]
                     for k, d in zip(base, diags_b, strict=True)]
            weights = np.asarray(self.weights, dtype=np.float64)
            out[rows] = sum(w * G for w, G in zip(weights, grams, strict=True))
        return out

    def compute(self, A, B):
        return self(A, B)

    def compute_diag(self, A):
        # a normalized base kernel's diagonal: 1 for a spectrum with peaks, 0 without (its raw diagonal is 0)
        return sum(w * (k.compute_diag(A) > 0).astype(np.float64)
                   for w, k in zip(self.weights, self._base(), strict=True))


class TrainingOutputFeatures(Kernel):
    """Explicit features of an output kernel, exact for IOKR decoding against the given training outputs.

    ``f(c) = [k(c, U) W, sqrt(k(c, c) - ||k(c, U) W||^2)]`` with ``U`` the distinct training outputs and
    ``W = nystrom_whitening(k(U, U))``. Since every training output is in ``U``, ``<f(c), f(y_i)> = k(c, y_i)``
    (the residual coordinate of a training output is 0) and ``||f(c)||^2 = k(c, c)``: the centered and normalized
    candidate representation, and so every IOKR score, equals the kernel-form one. Products between two candidates
    are not those of the kernel, but IOKR decoding never uses them. Width: the number of distinct training outputs
    plus one, instead of ``n``.
    """

    has_explicit_features = True

    def __init__(self, base=None, points=None, whitening=None):
        self.base = base
        self.points = points
        self.whitening = whitening

    @classmethod
    def from_outputs(cls, base, Y):
        points = np.unique(np.asarray(Y), axis=0)
        return cls(base, points, nystrom_whitening(np.asarray(base(points), dtype=np.float64)))

    def validate(self, X, name):
        return self.base.validate(X, name)

    def compute_features(self, A):
        Z = np.asarray(self.base.compute(A, self.points), dtype=np.float64) @ self.whitening
        residual = np.asarray(self.base.compute_diag(A), dtype=np.float64) - np.einsum("ij,ij->i", Z, Z)
        out = np.hstack([Z, np.sqrt(np.clip(residual, 0.0, None))[:, None]])
        return out.astype(np.float32 if A.dtype == np.float32 else np.float64, copy=False)

    def compute(self, A, B):
        return self.compute_features(A) @ self.compute_features(B).T

    def compute_diag(self, A):
        return np.asarray(self.base.compute_diag(A), dtype=np.float64)


class SketchedIdentifier(MetaboliteIdentifier):
    """:class:`MetaboliteIdentifier` whose regression ``iokr_`` is a fitted :class:`SketchedIOKR` on raw spectra.

    The sketched model computes its own test features from the query spectra, so the test kernel is the spectra
    themselves; scoring is the inherited :meth:`score_sets`.
    """

    def test_kernel(self, spectra):
        return spectra, None


def _reset_peak_rss():
    """Reset the process's ``VmHWM`` so each run reports its own peak (Linux; a no-op elsewhere)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _sketched_fit(spectra, Y, weights, n_components, output_components, seed):
    kernel = CombinedSpectrumKernel(PARAMS["kernels"], tuple(float(w) for w in weights), PARAMS["sigma_mz"],
                                    PARAMS["sigma_intensity"])
    _reset_peak_rss()

    def fit():
        output, components = make_output_kernel(PARAMS["output_kernel"]), output_components
        if not components:  # exact output side (see TrainingOutputFeatures), no output sketch
            output, components = TrainingOutputFeatures.from_outputs(output, Y), None
        return SketchedIOKR(alpha=PARAMS["alpha"], input_kernel=kernel, output_kernel=output, solver="nystrom",
                            n_components=n_components, output_components=components, random_state=seed).fit(spectra, Y)

    fit_s, est = best_time(fit)
    model = SketchedIdentifier(**{**PARAMS, "weights": [float(w) for w in weights]})
    model.iokr_ = est
    return model, fit_s


def _evaluate(model, spectra, lists, store, cleaning):
    scoring_s, summary = best_time(lambda: evaluate_lists(model, spectra, lists, store, cleaning))
    return {"per_structure": summary["per_structure"], "per_spectrum": summary["per_spectrum"],
            "n_query_spectra": summary["n_query_spectra"], "n_lists_with_spectra": summary["n_lists_with_spectra"],
            "scoring_s": scoring_s}


def _row(label, result):
    s, p = result["per_structure"], result["per_spectrum"]
    fit = result.get("fit_s")
    return (f"| {label} | " + " | ".join(f"{s[f'top{k}']:.1f}" for k in (1, 5, 10, 20)) + " | "
            + " | ".join(f"{p[f'top{k}']:.1f}" for k in (1, 5, 10, 20))
            + f" | {'-' if fit is None else f'{fit:.0f}'} | {result.get('peak_rss_mib', float('nan')):.0f} |")


def render(report):
    """The table of every run (after the exact merged-spectra reference of reports/metabolites.md)."""
    training = (f"Training: {report['n_train_spectra']} single spectra of {report['n_train_structures']} structures "
                f"({report['n_excluded_structures']} evaluated structures excluded, {report['n_unparsable']} "
                f"unparsable dropped). ALIGNF weights (2,000-spectrum subsample): {report['weights']}.")
    legend = ("Top-k % on the 60 PubChem candidate lists (ties averaged). Timings on a 2-core machine shared with "
              "other agents' processes; peak RSS is the process's high-water mark over the fit and scoring of that "
              "row (VmHWM reset before each fit; it includes the data already loaded).")
    header = ("| model | struct top-1 | top-5 | top-10 | top-20 | spectrum top-1 | top-5 | top-10 | top-20 | fit (s) "
              "| peak RSS (MiB) |")
    lines = ["# Sketched IOKR on MassBank single spectra (issue 8)", "",
             f"Command: `{report['command']}`", "", (__doc__ or "").split("\n\n", 2)[-1].strip(), "",
             training, "", legend, "", header, "|---|---|---|---|---|---|---|---|---|---|---|",
             _row("exact IOKR, 4,485 merged spectra (reports/metabolites.md)", EXACT_MERGED)]
    for name, result in report["runs"].items():
        lines.append(_row(name, result))
    lines += ["", "Fit time excludes reading and fingerprinting; it is the estimator's `fit` (kernel blocks, "
              "features, ridge). Scoring times (s): "
              + ", ".join(f"{k}: {v['scoring_s']:.0f}" for k, v in report["runs"].items()) + ".", ""]
    lines += report.get("notes", [])
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Config:
    """The study's choices.

    Attributes
    ----------
    store : str
        A fingerprint store (SQLite) to copy and warm-start from ("" for none).
    n_components : int
        Nystrom landmarks ``s`` of the input sketch.
    output_components : int
        Size of SketchedIOKR's random output sketch, compared on the subsample only (0: not run).
    subsample : int
        Size of the exact-vs-sketch comparison (0: off).
    skip_full, skip_exact : bool
        No sketched fit on all training spectra; no exact IOKR on the subsample.
    seed : int
    update : bool
        Keep the runs already in the existing ``sketched_metabolites.json`` (same data and weights).
    spectra, candidates : str
        Relative to the data folder.
    """

    store: str = ""
    n_components: int = 1500
    output_components: int = 2000
    subsample: int = 4000
    skip_full: bool = False
    skip_exact: bool = False
    seed: int = 0
    update: bool = False
    spectra: str = "metabolites/massbank_ms2_posMH_permissive.jsonl.gz"
    candidates: str = "metabolites/pubchem_candidate_sets_dev.tar.gz"


#: 60 landmarks and a 300-spectrum subsample with a 100-wide output sketch (on the bundled subset in the smoke run).
QUICK = Config(n_components=60, output_components=100, subsample=300)
OUTPUTS = Outputs(json="sketched_metabolites.json", markdown="sketched_metabolites.md")


def _read_data(data, config):
    """Spectra, candidate lists, the store and the training set (single spectra, evaluated structures excluded)."""
    if config.store:
        copy = "/tmp/sketched_metabolites_store.sqlite"  # a copy: the given store is never written to
        shutil.copyfile(config.store, copy)
    store = CandidateStore(copy if config.store else ":memory:", Fingerprinter("morgan_counts+maccs"))
    spectra, read_report = read_spectra(Path(data) / config.spectra, require_structure=True)
    lists = read_candidate_lists(Path(data) / config.candidates, store)
    exclude = [lst.true_key for lst in lists if lst.true_key]
    cleaning = Cleaning()
    train = training_set(spectra, store, cleaning, exclude, merge=False)
    return spectra, read_report, lists, store, cleaning, train


def _alignf_weights(train, Y, rng):
    """ALIGNF weights of the base kernels on a 2,000-spectrum subsample."""
    n = len(train.spectra)
    align = np.sort(rng.choice(n, size=min(2000, n), replace=False))
    t0 = time.perf_counter()
    probe = MetaboliteIdentifier(**PARAMS)
    grams, diags = probe.base_grams(train.spectra[align])
    _, weights = probe.combined_training_gram(grams, diags, Y[align].astype(np.float64))
    print(f"ALIGNF weights {np.round(weights, 4).tolist()} in {time.perf_counter() - t0:.0f} s", flush=True)
    return weights


def _new_report(config, train, read_report, weights, previous):
    report = {
        "command": "python -m experiments sketched_metabolites --data DATA "
                   f"--set n_components={config.n_components} --set output_components={config.output_components} "
                   f"--set subsample={config.subsample}" + (" --set skip_full=True" if config.skip_full else "")
                   + (" --set skip_exact=True" if config.skip_exact else ""),
        "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in PARAMS.items()},
        "n_train_spectra": len(train.spectra), "n_train_structures": len(set(train.keys)),
        "n_excluded_structures": train.n_excluded_structures, "n_unparsable": train.n_unparsable,
        "weights": [round(float(w), 4) for w in weights], "spectra_read": read_report.summary(),
        "train_licenses": train.licenses, "seed": config.seed, "runs": {},
        "notes": ["The machine (2 cores) was shared with other agents' processes during the run."],
    }
    if previous:
        report["runs"] = dict(previous["runs"])
        report["command"] = previous["command"] + "; then " + report["command"] + " --set update=True"
    return report


def _record(report, checkpoint, name, result):
    report["runs"][name] = result
    print(name, {k: v for k, v in result.items() if k.startswith("per_")}, flush=True)
    if checkpoint:
        checkpoint(report)


def _subsample_runs(config, report, checkpoint, evaluation, S, Ys, weights):
    """Exact IOKR and the sketched model (exact output features, then a random output sketch) on one subsample."""
    n_sub = len(S)
    if not config.skip_exact:
        _reset_peak_rss()
        fit_s, exact = best_time(lambda: MetaboliteIdentifier(**{**PARAMS, "weights": [float(w) for w in weights]}).fit(
            S, Ys.astype(np.float64)))
        result = {"fit_s": fit_s, "n": n_sub}
        result.update(_evaluate(exact, *evaluation))
        result["peak_rss_mib"] = peak_rss_mib()
        del exact
        _record(report, checkpoint, f"exact IOKR, n={n_sub} single spectra (subsample)", result)
    for m in dict.fromkeys((0, config.output_components)):  # 0: exact output features
        model, fit_s = _sketched_fit(S, Ys, weights, config.n_components, m, config.seed)
        result = {"fit_s": fit_s, "n": n_sub, "n_components_used": int(model.iokr_.n_components_)}
        result.update(_evaluate(model, *evaluation))
        result["peak_rss_mib"] = peak_rss_mib()
        del model
        label = "exact output features" if not m else f"random output sketch m={m}"
        _record(report, checkpoint, f"sketched, n={n_sub} (same subsample), s={config.n_components}, {label}", result)


def run(config, data, previous=None, checkpoint=None):
    """The sketched fit on every training spectrum, then the subsample comparison; ``checkpoint(report)`` after
    each run; the runs of ``previous`` are kept when updating."""
    t_start = time.perf_counter()
    spectra, read_report, lists, store, cleaning, train = _read_data(data, config)
    evaluation = (spectra, lists, store, cleaning)
    Y = np.asarray(train.Y, dtype=np.float32)
    n = len(train.spectra)
    print(f"read + clean + fingerprint: {time.perf_counter() - t_start:.0f} s; {n} training spectra", flush=True)
    rng = np.random.default_rng(config.seed)
    weights = _alignf_weights(train, Y, rng)
    report = _new_report(config, train, read_report, weights, previous)
    if not config.skip_full:
        model, fit_s = _sketched_fit(train.spectra, Y, weights, config.n_components, 0, config.seed)
        result = {"fit_s": fit_s, "fit_peak_rss_mib": peak_rss_mib(), "n": n,
                  "n_components_used": int(model.iokr_.n_components_)}
        print(f"sketched fit n={n}: {fit_s:.0f} s, peak RSS {result['fit_peak_rss_mib']:.0f} MiB", flush=True)
        result.update(_evaluate(model, *evaluation))
        result["peak_rss_mib"] = peak_rss_mib()
        del model
        _record(report, checkpoint, f"sketched, n={n} single spectra, s={config.n_components}, exact output features", result)
    if config.subsample:
        sub = np.sort(rng.choice(n, size=min(config.subsample, n), replace=False))
        _subsample_runs(config, report, checkpoint, evaluation, train.spectra[sub], Y[sub], weights)
    report["total_s"] = time.perf_counter() - t_start
    return report

