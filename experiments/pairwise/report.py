"""The Markdown report ``pairwise.md`` of the pairwise study from its JSON."""

from __future__ import annotations

from pathlib import Path

from experiments.baselines import pairwise as baselines
from experiments.pairwise.davis import SETTINGS


def render(report):
    """The Markdown report ``pairwise.md`` from the study's JSON."""
    lines = ["# Pairwise learning and ranking on real data", "",
             "Timings were taken on a shared 2-core machine (other jobs running); they are indicative only.", ""]
    if report.get("davis"):
        lines += _md_davis(report)
    if report.get("davis_conditional_ranking"):
        lines += _md_conditional_ranking(report["davis_conditional_ranking"])
    if report.get("housing"):
        lines += _md_housing(report["housing"])
    if report.get("rock_paper_scissors"):
        lines += _md_rock_paper_scissors(report["rock_paper_scissors"])
    if report.get("yamanishi"):
        lines += _md_yamanishi(report["yamanishi"])
    lines += _md_kiba(report.get("kiba"))
    if report.get("baselines"):
        lines += baselines.baseline_markdown(report["baselines"])
    lines += _md_speed()
    return "\n".join(lines) + "\n"


def _md_davis(report):
    dv = report["davis"]
    lines = []
    lines += ["## Davis: RLScore tutorial outputs (KronRLS, linear kernel on similarity rows)", "",
              "| setting | reference | best log2(lambda) | best cindex (iokr) | RLScore best "
              "| max abs diff over grid |",
              "|---|---|---|---|---|---|"]
    for s, r in dv["kron_rls"].items():
        ref_best = max(x["rlscore"] for x in r["rows"])
        lines.append(f"| {s} | {r['reference_file']} | {r['best_log2_alpha']} | {r['best_cindex']:.6f} | "
                     f"{ref_best:.6f} | {r['max_abs_diff']:.1e} |")
    lines += ["", "TwoStepRLS (`two_step1..4.out`): every (lambda1, lambda2) line, test-set and CV cindex.", "",
              "| setting | reference | lines | max abs diff |", "|---|---|---|---|"]
    for s, r in dv["two_step"].items():
        lines.append(f"| {s} | {r['reference_file']} | {r['n_rows']} | {r['max_abs_diff']:.1e} |")
    sel = report.get("davis_selection")
    if sel:
        lines += ["", "## Davis: built-in selection (closed-form CV of each setting on the training part)", "",
                  "| setting | CV scheme | labels | kernel | log2(lambda) | CV cindex | test cindex "
                  "| RLScore tutorial |",
                  "|---|---|---|---|---|---|---|---|"]
        for s, r in sel.items():
            tut = dv["kron_rls"][s]["best_cindex"]
            test = "(= CV)" if s == "A" else f"{r['test_cindex']:.4f}"
            lines.append(f"| {s} | {r['cv_scheme']} | {r['labels']} | {r['kernel']} | {r['log2_alpha']:g} | "
                         f"{r['cv_cindex']:.4f} | {test} | {tut:.4f} (best on test) |")
        lines += ["", "The tutorial's numbers are the best over the grid evaluated on the test set itself; "
                  "ours pick every choice on the training part only. Test cindex is on the chosen label scale "
                  "(pKd = -log10(Kd / 1e9) reverses the order of Kd, so both are scored consistently)."]
    return lines


def _md_conditional_ranking(cr):
    lines = []
    lines += ["", "## Davis: conditional ranking of targets per drug, lambda by each setting's own CV", "",
              "| setting | model | log2(lambda) | CV (per-drug cindex) | test (per-drug cindex) | CV seconds |",
              "|---|---|---|---|---|---|"]
    for s in SETTINGS:
        for name in ("ConditionalRankRLS", "KronRLS"):
            r = cr[s][name]
            test = "(= CV)" if s == "A" else f"{r['test']:.4f}"
            lines.append(f"| {s} | {name} | {r['log2_alpha']:g} | {r['cv']:.4f} | {test} | "
                         f"{r['cv_seconds']:.1f} |")
    checks = ", ".join(f"{s} {cr[s]['spot_check_max_rel_diff']:.1e}" for s in SETTINGS)
    lines += ["", cr["note"], "",
              "ConditionalRankRLS hold-outs are closed forms (A: leave-pair-out, B: leave-drug-out, C: "
              "leave-target-out, D: both, the last with one eigendecomposition per drug); checked against "
              f"explicit refits on three training pairs per setting, max relative difference: {checks}."]
    return lines


def _md_housing(hs):
    lines = []
    r2 = hs["ranking2"]
    lines += ["", "## Boston housing: RLScore RankRLS tutorial (all seven outputs)", "",
              "| output | quantity | RLScore | iokr |", "|---|---|---|---|",
              f"| ranking1 | test cindex | {hs['ranking1']['rlscore']:.6f} | {hs['ranking1']['iokr']:.6f} |",
              f"| ranking2 | chosen lambda (leave-pair-out) | {r2['rlscore_chosen']:g} | {r2['iokr_chosen']:g} |",
              f"| ranking2 | test cindex | {r2['rlscore_test']:.6f} | {r2['iokr_test']:.6f} |",
              f"| ranking2 | LPO performances, max abs diff (20 lambdas) | | {r2['max_abs_diff_lpo']:.1e} |"]
    pp = hs.get("pairwise_ranking")
    if pp:
        lines.append(f"| pairwise_ranking | test cindex ({pp['n_pairs']} sampled preferences, "
                     f"{pp['distinct_pairs']} distinct) | {pp['rlscore']:.6f} | {pp['iokr']:.6f} |")
    r3, r4, r5 = hs.get("ranking3"), hs.get("ranking4"), hs.get("ranking5")
    if r3:
        lines += [f"| ranking3 | 5-fold CV cindex (lambda 1) | {r3['rlscore_cv']:.6f} | {r3['iokr_cv']:.6f} |",
                  f"| ranking3 | test cindex | {r3['rlscore_test']:.6f} | {r3['iokr_test']:.6f} |"]
    if r4:
        lines += [f"| ranking4 | chosen lambda (5-fold) | {r4['rlscore_chosen']:g} | {r4['iokr_chosen']:g} |",
                  (f"| ranking4 | k-fold performances, max abs diff (20 lambdas) | | "
                   f"{r4['max_abs_diff_kfold']:.1e} |"),
                  f"| ranking4 | test cindex | {r4['rlscore_test']:.6f} | {r4['iokr_test']:.6f} |"]
    if r5:
        lines += [(f"| ranking5 | chosen gamma / lambda (Gaussian, 5-fold) | {r5['rlscore_gamma']:f} / "
                   f"{r5['rlscore_regparam']:f} | {r5['iokr_gamma']:f} / {r5['iokr_regparam']:f} |"),
                  f"| ranking5 | best k-fold CV cindex | {r5['rlscore_cv']:.6f} | {r5['iokr_cv']:.6f} |",
                  f"| ranking5 | test cindex | {r5['rlscore_test']:.6f} | {r5['iokr_test']:.6f} |"]
    lines += ["", "pairwise_ranking: `PreferenceRankRLS` on the same 1000 preference pairs as RLScore's script "
              "(the standard-library `random` draws replayed call for call). ranking3-5: RLScore's "
              "`random_folds(250, 5, 10)` replayed exactly (RLScore's own helper crashes on Python 3.11 because "
              "`random.sample` no longer accepts a set; Python <= 3.10 converted it with `tuple()`, which the "
              "script does explicitly); every fold hold-out is the closed form `RankRLS.holdout`, no "
              "retraining. " + (f"ranking5 grid: {r5['grid']}, {r5['seconds']:.0f} s." if r5 else "")]
    return lines


def _md_rock_paper_scissors(rps):
    lines = []
    lines += ["", f"## Rock-paper-scissors (mean test rank loss over {rps['repeats']} tournaments, "
              f"lambda = 2^-30, CG <= 200 iterations)", "",
              "| data | c.reg | c.reg(r) | c.rank | c.rank(r) |", "|---|---|---|---|---|"]
    for w, r in rps["mean_rank_loss"].items():
        lines.append(f"| {w} | {r['c.reg']:.4f} | {r['c.reg(r)']:.4f} | {r['c.rank']:.4f} | {r['c.rank(r)']:.4f} |")
    lines += ["", rps["note"]]
    return lines


def _md_yamanishi(ya):
    lines = []
    lines += ["", "## Yamanishi: KronRLS, closed-form CV in the four settings (AUC / AUPR)", "",
              "| set | shape | A | B (new targets) | C (new drugs) | D (both new) |", "|---|---|---|---|---|---|"]
    for name in ("nr", "gpcr", "ic"):
        r = ya[name]
        cells = [f"{r[s]['auc']:.3f} / {r[s]['aupr']:.3f}" for s in SETTINGS]
        lines.append(f"| {name} | {r['shape'][0]}x{r['shape'][1]} | " + " | ".join(cells) + " |")
    lines += ["", ya["note"]]
    return lines


def _md_kiba(kb):
    if not kb:
        return ["", "KIBA: not run in this report (needs RDKit; `--skip kiba`)."]
    lines = []
    lines += ["", "## KIBA: KronRLS by conjugate gradient on the observed pairs (DeepDTA setting-1 folds)", "",
              f"{kb['shape'][0]} x {kb['shape'][1]}, {kb['observed']} observed; Morgan/Tanimoto drug kernel "
              f"(RDKit), alpha = {kb['alpha']:g} chosen on training fold 5 among "
              f"{', '.join(kb['validation'])}, CG {kb['cg_iterations']} iterations (cap {kb['max_iter']}).", "",
              f"Test: cindex {kb['test_cindex']:.4f}, MSE {kb['test_mse']:.4f} ({kb['seconds']:.0f} s). "
              f"{kb['literature']}"]
    return lines


def _md_speed():
    lines = []
    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "kron.md"
    if bench.exists():
        text = bench.read_text()
        lines += ["", "## Speed, side by side with RLScore HEAD (`python -m benchmarks.run --only kron`)", "",
                  "RLScore commit cc023e6 built from source in a scratch virtual environment (not in the repository) "
                  "and put on `PYTHONPATH`; one run, both libraries with one BLAS thread, on the shared 2-core machine "
                  "under heavy load from other jobs (absolute times are inflated; ratios are what the run measured). "
                  "Full record: `benchmarks/results/kron.json`.", "", text[text.index("| case"):].rstrip(), "",
                  "The CG row compares 50 iterations of iokr's conjugate gradient with 50 of RLScore's MINRES on the "
                  "same system (alpha = 1, Gaussian kernels); neither has converged, so their predictions differ by "
                  "the gap between two Krylov iterates. RankRLS predictions are compared after removing the constant "
                  "offset (rankings are shift invariant); iokr fits RankRLS with one Cholesky solve and builds the "
                  "eigendecomposition only when cross-validation asks for it."]
    return lines
