"""The Markdown report ``mpiokr_metabolites.md`` from the study's JSON."""

from __future__ import annotations

import numpy as np
from scipy.stats import binomtest

from experiments.mpiokr_metabolites.models import PAPER_TABLE3


def _fmt(row):
    return " | ".join(f"{row[f'top{k}']:.1f}" for k in (1, 5, 10, 20))


def _paired(report, name, field):
    """Lists (or spectra) where ``name`` ranks the true structure better / worse than IOKR, and the right-tailed
    sign test p-value (equal ranks dropped) that ``name``'s ranks are lower, as in the paper's Table 4."""

    def flat(model):
        values = report["models"][model][field]
        if field == "spectrum_ranks":
            values = [r for rs in values if rs for r in rs]
        return np.array([np.nan if v is None else v for v in values], dtype=float)

    a, b = flat(name), flat("IOKR")
    ok = ~(np.isnan(a) | np.isnan(b))
    better, worse = int((a[ok] < b[ok]).sum()), int((a[ok] > b[ok]).sum())
    p = float(binomtest(better, better + worse, 0.5, alternative="greater").pvalue) if better + worse else 1.0
    return better, worse, p


def _doc_section(doc, start, end):
    i = doc.index(start)
    return doc[i:doc.index(end) if end else len(doc)].strip()


#: Row labels of the markdown tables (other model names are printed as they are).
_LABELS = {"IOKR": "IOKR", "joint-all": "MP-IOKR (j), all", "joint-1%": "MP-IOKR (j), 1%",
           "separate-all": "MP-IOKR (s), all", "separate-1%": "MP-IOKR (s), 1%"}


def _label(name):
    return _LABELS.get(name, name)


def _folds_note(r):
    return f" (fold {', '.join(map(str, r['cv_folds']))} only)" if r.get("cv_folds") else ""


def _md_header(report, doc):
    """Title, command, machine, the stand-in caveat, the protocol (from the module docstring) and the data sizes."""
    st = report["standin"]
    return [
        "# MP-IOKR vs IOKR: metabolite identification on the 60 PubChem dev lists", "",
        f"`{report['command']}` (code: `experiments/mpiokr_metabolites/`; caches in `cache`)", "",
        (f"Measured {report['date']} on a 2-core machine shared with 3 other agents' jobs (BLAS on "
        f"{report['threads']} thread; wall times are upper bounds); {report['total_s']:.0f} s for this invocation "
        "(stages cached by earlier invocations are not recomputed, see the timings table for each stage), peak RSS "
        f"{report['peak_rss_mib']:.0f} MiB."), "",
        ("> **Caveat: stand-in training candidate sets.** The paper trains MP-IOKR with the PubChem candidates of each "
        "training structure's formula; they are not in the shared data and there is no network. Here the candidate "
        "set of training structure i is the other training structures with the same molecular formula, completed "
        f"by the training structures nearest in monoisotopic mass to {st['size']} candidates (\"all\"; sets of "
        f"{st['set_sizes'][0]}-{st['set_sizes'][1]}, {st['n_memberships_all']:,} memberships over a pool of "
        f"{report['n_train_structures'] - report['n_list_candidates_in_training']:,} structures); \"1%\" is "
        f"MP-IOKR's seeded `candidate_fraction={st['fraction']}` subsample of each set "
        f"(`ceil({st['fraction']} x {st['size']})` = {int(np.ceil(st['fraction'] * st['size']))} per set). The "
        f"{report['n_list_candidates_in_training']} training structures that are candidates of the 60 lists are "
        "never candidates (the lists' true structures are not in training at all). Most stand-in candidates have "
        "another formula than the training structure, unlike PubChem isomers, so these results test the method "
        "on a weaker candidate signal than the paper's, not the paper's numbers."), "",
        _doc_section(doc, "Protocol:", "**Stand-in"), "", _doc_section(doc, "Model selection", None), "",
        (f"Training: {report['n_train_structures']:,} structures ({report['n_train_spectra']:,} spectra; "
        f"{report['n_excluded_structures']} evaluated structures excluded). Queries: 60 lists (per structure: the "
        f"merged spectrum of the true structure), {report['n_query_spectra']:,} spectra (per spectrum). ALIGNF "
        f"weights (ppk, ppk_nl, binned, binned_nl): {np.round(report['weights'], 3).tolist()}.")]


def _md_topk(report):
    """Top-k table on the 60 lists, with the published model's rows."""
    lines = ["", "## Top-k accuracy (%) on the 60 lists", "",
             "| model | per structure top-1 | top-5 | top-10 | top-20 | per spectrum top-1 | top-5 | top-10 | top-20 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in report["models"].items():
        lines.append(f"| {_label(name)} | {_fmt(r['per_structure'])} | {_fmt(r['per_spectrum'])} |")
    pub = report["published"]
    if "published" in pub:
        lines.append(f"| published IOKR (list scores, ties averaged) | {_fmt(pub['published'])} | | | | |")
        lines.append(f"| published IOKR (ties in its favour) | {_fmt(pub['published_optimistic'])} | | | | |")
    return lines


def _both(rows):
    return " / ".join(f"{a} and {b}" for a, b in rows)


def _md_paired(report):
    """Paired sign tests against IOKR, then the paper's Table 3 for context."""
    models = report["models"]
    lines = ["", ("Ties are counted half-way for every model. Paired comparison with IOKR (rank of the true "
             "structure; better = smaller rank; right-tailed sign test that MP-IOKR's ranks are lower, equal "
             "ranks dropped, as the paper's Table 4; the spectra of one structure are not independent):"), "",
             "| model | lists better / worse | p | spectra better / worse | p |", "|---|---|---|---|---|"]
    if "IOKR" in models:
        for name in models:
            if name == "IOKR":
                continue
            b1, w1, p1 = _paired(report, name, "ranks")
            b2, w2, p2 = _paired(report, name, "spectrum_ranks")
            lines.append(f"| {_label(name)} | {b1} / {w1} | {p1:.2g} | {b2} / {w2} | {p2:.2g} |")
    t = PAPER_TABLE3
    lines += ["", ("For context only (other data: GNPS spectra, 24 kernels including fragmentation trees, 10-fold CV, "
                   "real PubChem training candidates), the paper's Table 3, top-1 / top-10 / top-20: IOKR "
                   f"{' / '.join(map(str, t['IOKR']))}; MP-IOKR (j) all and 1%: {_both(t['MP-IOKR (j)'])}; MP-IOKR (s) "
                   f"all and 1%: {_both(t['MP-IOKR (s)'])}: gains of 0-0.5 points top-1, 0.7-1.6 top-10, 0.7-1.4 "
                   "top-20, sign test p < 1e-7 against IOKR.")]
    return lines


def _md_cv_row(report, name, r):
    """One row of the 'what cross-validation chose' table."""
    if r["cv"] is None:
        return (f"| {_label(name)} | (as {_label(r['alpha_from'])}) | "
                f"{r['alpha']} (CV of {_label(r['alpha_from'])}) | | | | | |")
    best = max(r["cv"], key=lambda row: row["score"])
    best = {"top1": np.nan, "top5": np.nan, "top10": np.nan, "top20": np.nan, **best}
    topk = " | ".join("-" if np.isnan(best[f"top{k}"]) else f"{best[f'top{k}']:.1f}" for k in (1, 5, 10, 20))
    if r["gamma"] is None:
        gamma = "-"
    elif r.get("groups"):
        gamma = "; ".join(f"{report['gamma_separate'][g[0]]}: {', '.join(g)}" for g in r["groups"])
    else:
        gamma = str(r["gamma"])
    return f"| {_label(name)} | {gamma} | {r['alpha']} | {topk} | {best['score']:.2f}{_folds_note(r)} |"


def _md_cv(report):
    """What cross-validation chose, and the CV score per alpha."""
    st, alphas = report["standin"], report["alphas"]
    lines = ["", "## What cross-validation chose (training structures only)", "",
             "| model | gamma (groups) | alpha | CV top-1 | top-5 | top-10 | top-20 | CV score |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [_md_cv_row(report, name, r) for name, r in report["models"].items()]
    lines += ["", ("CV score = mean of top-1/10/20 (%) of the held-out structures, each ranked among its stand-in "
              f"list built inside its held-out fold ({st['size']} candidates), averaged over the 3 folds. Score "
              "per alpha:"), "", "| model | " + " | ".join(f"alpha={a}" for a in alphas) + " |",
              "|---|" + "---|" * len(alphas)]
    for name, r in report["models"].items():
        if r["cv"] is None:
            continue
        by_alpha = {row["alpha"]: row["score"] for row in r["cv"]}
        lines.append(f"| {_label(name)}{_folds_note(r)} | " + " | ".join(
            f"{by_alpha[a]:.2f}" if a in by_alpha else "" for a in alphas) + " |")
    for name, rows in report.get("fold0_scores", {}).items():
        by_alpha = {row["alpha"]: row["score"] for row in rows}
        lines.append(f"| {_label(name)} (fold 0 only) | " + " | ".join(
            f"{by_alpha[a]:.1f}" if a in by_alpha else "" for a in alphas) + " |")
    if report.get("fold0_scores"):
        lines += ["", ("Fold-0-only rows: the same held-out structures as the separate approximation's CV, scores as "
                  "logged (one decimal) by the run that computed the 3-fold CV.")]
    return lines


def _md_gamma(report):
    """Reverse-model hold-out errors per gamma, the chosen one in bold."""
    g = report["gamma_cv"]
    lines = ["", ("Reverse-model hold-out error `sum_j ||phi(x_j) - g(y_j)||^2 / l` (3 folds) per gamma, in the "
             "transformed feature space each gamma serves (per base kernel for the separate approximation, "
             f"the combined kernel for the joint one; computed in {g['seconds']:.0f} s); **bold** = chosen:"), "",
             "| kernel | " + " | ".join(f"{x:g}" for x in g["gammas"]) + " |", "|---|" + "---|" * len(g["gammas"])]
    for kname, errs in g["errors"].items():
        best = int(np.argmin(errs))
        lines.append(f"| {kname} | " + " | ".join(
            (f"**{e:.4f}**" if i == best else f"{e:.4f}") for i, e in enumerate(errs)) + " |")
    return lines


def _num(value, fmt):
    return "-" if value is None or np.isnan(value) else format(value, fmt)


def _md_timings(report):
    """Wall times per model and stage, and of the base Grams."""
    lines = ["", "## Timings (s, wall, shared machine, one BLAS thread)", "",
             ("| model | CV (3 folds x alphas) | final fit | of which candidate statistics | model estimation "
             "(fit minus statistics) | scoring the 60 lists + spectra |"), "|---|---|---|---|---|---|"]
    for name, r in report["models"].items():
        if r.get("alpha_from"):
            cv = "- (alpha of " + _label(r["alpha_from"]) + ")"
        elif r.get("cv_folds"):
            cv = f"{_num(r.get('cv_fold_seconds'), '.0f')}{_folds_note(r)}"
        else:
            cv = _num(r["cv_seconds"], ".0f")
        lines.append(f"| {_label(name)} | {cv} | {r['fit_s']:.1f} | {_num(r.get('candidate_stats_s'), '.2f')} "
                     f"| {_num(r.get('model_estimation_s'), '.1f')} | {r['scoring_s']:.0f} |")
    gt = report.get("gram_times")
    if gt:
        lines += ["", (f"Base Grams: {gt['train_grams_s']:.0f} s for the 4 training Grams, "
                  f"{gt['with_queries_s']:.0f} s with the query blocks (cached afterwards).")]
    return lines


def render_report(report, doc):
    """The markdown report of ``report`` (the study's JSON); ``doc``: the study's docstring (its protocol)."""
    lines = _md_header(report, doc) + _md_topk(report) + _md_paired(report) + _md_cv(report) + _md_gamma(report)
    if report.get("reading"):
        lines += ["", "## Reading", ""] + report["reading"]
    lines += _md_timings(report)
    lines += [""] + report.get("notes", [])
    return "\n".join(lines) + "\n"
