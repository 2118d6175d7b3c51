"""Markdown report of the multi-label study from its JSON (regenerable with ``--render-only``)."""

from __future__ import annotations

import numpy as np

from iokr.apps.multilabel import DEFAULT_ALPHAS, DEFAULT_GAMMA_SCALES

NAMES = {"iokr": "IOKR (new defaults)", "iokr_old": "IOKR (old defaults)", "br_ridge": "BR ridge",
         "br_logreg": "BR logistic", "cc_logreg": "CC logistic"}
BASELINES = ("br_ridge", "br_logreg", "cc_logreg")
#: A difference in example-F1 smaller than this many paired standard errors (over test examples) is a tie.
TIE_SE = 2.0


PROTOCOL = (
    "Protocol: every method chooses its hyperparameters on the training split only, by 5-fold CV of example-F1 on "
    "the same shuffled folds; the test split is used once. IOKR (new defaults): standardization on/off and output "
    "normalization on/off by CV with refits, alpha and the input kernel by IOKRCV's closed-form fold scores (see "
    "`docs/multilabel.md`); IOKR (old defaults): raw features, linear kernel, alpha in {{0.1, 1, 10}}, output "
    "normalization on. Baselines (dense features standardized, sparse bag-of-words features raw): binary "
    "relevance with ridge on +-1 targets (alpha in {n_ridge} log-spaced values {ridge}) and with logistic regression "
    "(C in {{{cs}}}), a classifier chain of "
    "logistic regressions (C by its own CV). Verdict: IOKR vs the best baseline by test F1 (favouring the "
    "baselines); a tie is a paired difference under {tie:g} standard errors over test examples. Time: CV selection "
    "+ refit + test prediction, seconds.")


def paired_difference(a, b):
    """Mean and standard error of the per-example F1 difference ``a - b`` (points)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0


def like_for_like(results):
    """Baseline results on the same training examples as IOKR: ``<name>`` or ``<name>_sub``."""
    out = {}
    for name in BASELINES:
        for key in (name, name + "_sub"):
            if key in results:
                out[name] = results[key]
    return out


def verdict(entry, full=False):
    """One line: IOKR (new defaults) against the best like-for-like baseline (best by test F1).

    ``full``: IOKR on the full training split of a capped set (``iokr_full``) against the baselines' full runs.
    """
    results = entry["results"]
    if full:
        results = {"iokr": results["iokr_full"], **{b: results[b + "_full"] for b in BASELINES
                                                    if b + "_full" in results}}
    if "iokr" not in results:
        return "IOKR not run."
    baselines = like_for_like(results)
    if not baselines:
        return "no baseline run."
    best_name = max(baselines, key=lambda k: baselines[k]["f1"])
    best = baselines[best_name]
    iokr = results["iokr"]
    diff, se = paired_difference(iokr["per_example_f1"], best["per_example_f1"])
    word = "ties with" if abs(diff) < TIE_SE * se else ("wins over" if diff > 0 else "loses to")
    ratio = iokr["total_s"] / max(best["total_s"], 1e-9)
    return (f"IOKR {word} {NAMES[best_name]} ({iokr['f1']:.1f} vs {best['f1']:.1f} example-F1, "
            f"{diff:+.1f} +- {se:.1f} paired SE) at {ratio:.1f}x its time ({iokr['total_s']:.0f} s vs "
            f"{best['total_s']:.0f} s)")


def _cell(results, key, field="f1", fmt="{:.1f}"):
    r = results.get(key)
    return "" if r is None else fmt.format(r[field])


def render_report(report, datasets, grid=None):
    """The report ``multilabel.md``: protocol, tables, verdicts, selection, and the grid curves when given."""
    grids = report["baseline_grids"]
    lines = ["# Multi-label IOKR against binary relevance and classifier chains (issue 19)", "",
             ("Command: `python -m experiments multilabel --data DATA` (nice, `OPENBLAS_NUM_THREADS=1`; "
              "a 2-core machine shared with other jobs, so times are indicative)."), "",
             PROTOCOL.format(n_ridge=len(grids["br_ridge"]),
                             ridge=f"{min(grids['br_ridge']):g}..{max(grids['br_ridge']):g}", cs=", ".join(f"{c:g}" for c in grids["br_logreg"]), tie=TIE_SE), ""]
    narrow = sorted({f"{name} ({key})" for name, entry in report["datasets"].items()
                     for key, r in entry["results"].items()
                     if "grid" in r and list(r["grid"]) != list(grids[key.replace("_sub", "").replace("_full", "")])})
    if narrow:
        lines += [("Baselines run with an older, narrower grid (ridge 1e-2..1e4, C 0.01..10; the wider rerun did not "
                   "finish in the time): " + ", ".join(narrow) + "."), ""]
    lines += _f1_table(report, datasets) + _other_metrics_table(report, datasets) + _verdicts(report, datasets)
    lines += _selection(report, datasets)
    if grid:
        lines += _grid(grid, report, datasets)
    return "\n".join(lines) + "\n"


def _f1_table(report, datasets):
    lines = ["## Example-F1 % (test)", "",
             ("| data | n train / test, d, L | split | IOKR new | IOKR old | BR ridge | BR logistic | CC logistic | "
              "published | IOKR choice |"), "|---|---|---|---|---|---|---|---|---|---|"]
    for name in datasets:
        entry = report["datasets"].get(name)
        if entry is None:
            lines.append(f"| {name} | | | not run | | | | | | |")
            continue
        lines.append(_f1_row(name, entry, report))
    return lines


def _f1_row(name, entry, report):
    res = entry["results"]
    base = like_for_like(res)
    sub = entry.get("iokr_train_subsample")
    size = f"{entry['n_train']} / {entry['n_test']}, {entry['n_features']}, {entry['n_labels']}"
    if sub:
        size += f" (IOKR and like-for-like baselines: {sub}-example training subsample)"
    cells = [_cell(res, "iokr"), _cell(res, "iokr_old")]
    if "iokr_full" in res:
        cells[0] += f" (full train: {res['iokr_full']['f1']:.1f})"
    if sub and entry.get("iokr_old_train") == entry["n_train"]:
        cells[1] += " (full train)"
    for b in BASELINES:
        cell = "" if b not in base else f"{base[b]['f1']:.1f}"
        if b + "_full" in res:
            cell += f" (full train: {res[b + '_full']['f1']:.1f})"
        cells.append(cell)
    published = ", ".join(f"{k} {v}" for k, v in report["published"].get(name, {}).items()) or "-"
    choice = ""
    if "iokr" in res:
        best = res["iokr"]["best"]
        norm = "" if "normalize_output" not in best else (
            ", output normalized" if best["normalize_output"] else ", output not normalized")
        choice = f"{best['scaling']}{norm}, alpha {best['alpha']:.3g}, {best['input_kernel']}"
        if res["iokr"]["grid_edge"]:
            choice += " (grid edge)"
    return f"| {name} | {size} | {entry['split']} | " + " | ".join(cells) + f" | {published} | {choice} |"


def _other_metrics_table(report, datasets):
    lines = ["", "## Hamming loss / exact match % / time s (test; like-for-like training set)", "",
              "| data | " + " | ".join(NAMES[k] for k in ("iokr", "iokr_old", *BASELINES)) + " |",
              "|---|" + "---|" * 5]
    for name in datasets:
        entry = report["datasets"].get(name)
        if entry is None:
            continue
        res = {**entry["results"], **like_for_like(entry["results"])}
        cells = []
        for key in ("iokr", "iokr_old", *BASELINES):
            r = res.get(key)
            cells.append("" if r is None else f"{r['hamming']:.4f} / {r['exact_match']:.1f} / {r['total_s']:.0f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _verdicts(report, datasets):
    lines = ["", "## Per data set", ""]
    for name in datasets:
        entry = report["datasets"].get(name)
        line = f"- **{name}**: " + ("not run." if entry is None else verdict(entry) + ".")
        if entry is not None and entry.get("iokr_train_subsample"):
            line += f" (IOKR and baselines on the same {entry['iokr_train_subsample']}-example subsample.)"
            if "iokr_full" in entry["results"]:
                line += " Full training split: " + verdict(entry, full=True) + "."
            else:
                line += " IOKR (new defaults) not run on the full training split (time)."
        lines.append(line)
    counts = {"wins": 0, "ties": 0, "loses": 0}
    for entry in report["datasets"].values():
        v = verdict(entry)
        for word, key in (("wins over", "wins"), ("ties with", "ties"), ("loses to", "loses")):
            counts[key] += word in v
    lines += ["", (f"Overall: IOKR (new defaults) wins {counts['wins']}, ties {counts['ties']}, loses "
                   f"{counts['loses']} against the best baseline of each data set."), ""]
    return lines


def _selection(report, datasets):
    lines = ["## IOKR selection per data set (training split only)", "",
             "| data | scaling | output normalized | alpha | input kernel | closed-form CV F1 % | refit CV F1 % |",
             "|---|---|---|---|---|---|---|"]
    for name in datasets:
        entry = report["datasets"].get(name)
        if entry is None or "iokr" not in entry["results"]:
            continue
        for arm in entry["results"]["iokr"]["arms"]:
            refit = "" if arm["refit_cv_f1"] is None else f"{arm['refit_cv_f1']:.1f} +- {arm['refit_cv_f1_std']:.1f}"
            lines.append(f"| {name} | {arm['scaling']} | {arm.get('normalize_output', True)} | {arm['alpha']:.3g} | "
                         f"{arm['input_kernel']} | "
                         f"{arm['closed_form_cv_f1']:.1f} | {refit} |")
    edges = []
    for name in datasets:
        entry = report["datasets"].get(name)
        for key, r in ({} if entry is None else entry["results"]).items():
            if r.get("grid_edge") or r.get("at_grid_edge"):
                what = "; ".join(r["grid_edge"]) if r.get("grid_edge") else f"chosen {r['chosen']:g}"
                edges.append(f"{name} / {key}: {what}")
    iokr_edges = [e for e in edges if e.split(" / ")[1].split(":")[0] in ("iokr", "iokr_full")]
    lines += ["", f"IOKR (new defaults) choices at a grid edge: {len(iokr_edges)} of "
                  f"{sum('iokr' in e['results'] for e in report['datasets'].values())} data sets.",
              "", "Choices at a grid edge (the grid may be too narrow there): " + ("; ".join(edges) or "none") + ".",
              "", "Published figures: " + report["published_source"], ""]
    return lines


def _exponent(scale):
    return f"4^{round(float(np.log(scale) / np.log(4)))}"


def _grid(grid, report, datasets):
    """How the default grid was chosen: training-split CV curves (``experiments/multilabel_grid.py``)."""
    scales, alphas = grid["gamma_scales"], np.asarray(grid["alphas"])
    inside = [any(np.isclose(s, d) for d in DEFAULT_GAMMA_SCALES) for s in scales]
    heads = ["linear"] + [_exponent(s) if ok else f"({_exponent(s)})" for s, ok in zip(scales, inside, strict=True)]
    lines = ["## Grid: training-split CV curves behind the default grid", "",
             ("Closed-form 5-fold CV example-F1 % on the *training split only* (`experiments/multilabel_grid.py`"
              f"; alphas {alphas.min():g}..{alphas.max():g}, {alphas.size} values), for the arm the default selection "
              "chose on each set: the best over alpha per input kernel (Gaussian widths as multiples of 1 / median "
              "squared distance; in brackets: outside the default grid), the best kernel in bold; then the alphas "
              "within 0.05 points of the best score for the best kernel (the default grid is "
              f"{min(DEFAULT_ALPHAS):g}..{max(DEFAULT_ALPHAS):g}, ties to the larger alpha)."), "",
             "| data | arm | " + " | ".join(heads) + " | alphas at the best |",
             "|---|---|" + "---|" * (len(heads) + 1)]
    for name in datasets:
        entry = report["datasets"].get(name)
        if name not in grid["curves"] or entry is None or "iokr" not in entry["results"]:
            continue
        best = entry["results"]["iokr"]["best"]
        arm = f"{best['scaling']}/{best.get('normalize_output', True)}"
        f1 = np.asarray(grid["curves"][name][arm])
        per_kernel = f1.max(axis=1)
        top = int(np.argmax(per_kernel))
        cells = [f"**{v:.1f}**" if k == top else f"{v:.1f}" for k, v in enumerate(per_kernel)]
        near = alphas[f1[top] >= f1[top].max() - 0.05]
        lines.append(f"| {name} | {arm} | " + " | ".join(cells) + f" | {near.min():.3g}..{near.max():.3g} |")
    lines.append("")
    return lines
