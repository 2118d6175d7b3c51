"""PNG and HTML reports of ranking evaluations: top-k curves, per-query ranks and timing per stage.

One implementation serves every ``evaluate`` command (metabolites, retrieval, multilabel) and the demo:
:func:`write_evaluation_report` takes rank arrays and timings, draws three figures and writes them, with an HTML page
that embeds them, through temporary files and renames (an interrupted run leaves the previous report or none).
Matplotlib is imported only here, when a report is asked for.
"""

from __future__ import annotations

import base64
import html
import io
import re
from pathlib import Path

import numpy as np

from ._output import write_atomic
from ._reliability import ECE_EXPLAINED, ece_text, reliability_markdown, reliability_sets

MAX_K = 50
#: File names of the figures (``topk`` keeps the demo's historical name ``report.png``).
FIGURES = {"topk": "report.png", "ranks": "ranks.png", "timings": "timings.png", "reliability": "reliability.png"}


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match):
    code = ord(match.group())
    # U+DC80..U+DCFF: a byte that was not UTF-8, kept by ``surrogateescape``; other surrogates as code points.
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _clean(value):
    """``value`` as text that UTF-8 can encode: names that came from undecodable bytes (a tar member or a file name
    read with ``surrogateescape``) show their bytes as ``\\xff`` escapes instead of failing the whole report."""
    return _SURROGATE.sub(_escape_surrogate, str(value))


def _finite_ranks(ranks):
    """Ranks as float64 with ``None`` / NaN (query whose answer is not among its candidates) as ``inf``."""
    values = np.array([np.nan if r is None else r for r in np.ravel(ranks)], dtype=np.float64)
    return np.nan_to_num(values, nan=np.inf)


def topk_curve(ranks, n=None, max_k=MAX_K):
    """Top-k accuracy (%) for ``k = 1 .. max_k``.

    Parameters
    ----------
    ranks : array-like of shape (n_queries,)
        1-based rank of each query's true answer; NaN or None when it is not among the candidates.
    n : int, optional
        Denominator (number of queries); ``len(ranks)`` by default.

    Returns
    -------
    ks : ndarray of shape (max_k,)
    accuracy : ndarray of shape (max_k,)
        Percentage of queries whose answer ranks at most ``k`` (zeros when there are no queries).
    """
    values = _finite_ranks(ranks)
    n = values.size if n is None else n
    ks = np.arange(1, max_k + 1)
    if not n:
        return ks, np.zeros(max_k)
    return ks, 100.0 * np.array([np.sum(values <= k) for k in ks]) / n


def curves(summary):
    """Top-k curves of a metabolite evaluation: this run per structure and per spectrum, and the published scores."""
    return {label: topk_curve(ranks, n) for label, (ranks, n) in _metabolite_ranks(summary).items()}


def _metabolite_ranks(summary):
    lists = summary["lists"]
    evaluated = [d for d in lists if d.get("n_query_spectra", 0) > 0 and d["n_candidates"] > 0]
    out = {"IOKR, per structure (merged spectra)": ([d.get("rank") for d in evaluated], len(evaluated))}
    spectra = [r for d in evaluated for r in d.get("spectrum_ranks", [])]
    out["IOKR, per spectrum"] = (spectra, len(spectra))
    if any("published_rank" in d for d in lists):
        out["published IOKR (all lists)"] = ([d.get("published_rank") for d in lists], len(lists))
    return out


def _png(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _figures(rank_sets, timings, title):
    """The three figures as PNG bytes (``None`` for timings when there are none)."""
    import matplotlib

    title = _clean(title)
    rank_sets = {_clean(label): value for label, value in rank_sets.items()}
    timings = {_clean(k): v for k, v in (timings or {}).items()}

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for label, (ranks, n) in rank_sets.items():
        ks, acc = topk_curve(ranks, n)
        ax.plot(ks, acc, label=label, drawstyle="steps-post")
    ax.set_xscale("log")
    ax.set_xlabel("k (rank of the true answer <= k)")
    ax.set_ylabel("top-k accuracy (%)")
    ax.set_ylim(0, 100)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out["topk"] = _png(fig)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    finite = [v[np.isfinite(v)] for v in (_finite_ranks(r) for r, _ in rank_sets.values())]
    top = max([float(v.max()) for v in finite if v.size] + [2.0])
    bins = np.unique(np.geomspace(1, top + 1, 30).round())
    for label, values, (_, n) in zip(rank_sets, finite, rank_sets.values(), strict=True):
        if values.size:
            # Percentages of each curve's own queries, so sets of very different sizes stay comparable.
            ax.hist(values, bins=bins, weights=np.full(values.size, 100.0 / max(n, 1)), histtype="step",
                    linewidth=1.5, label=f"{label} ({values.size} ranked of {n})")
    ax.set_xscale("log")
    ax.set_xlabel("rank of the true answer (per query; answers not among the candidates omitted)")
    ax.set_ylabel("% of queries")
    ax.grid(True, which="both", alpha=0.3)
    if any(values.size for values in finite):
        ax.legend(loc="upper right", fontsize=8)
    else:  # an empty frame with a legend warning on stderr said nothing; say why there is no histogram
        ax.text(0.5, 0.5, "no query has its true answer among its candidates", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_title("Per-query ranks")
    fig.tight_layout()
    out["ranks"] = _png(fig)
    plt.close(fig)

    stages = {k: float(v) for k, v in (timings or {}).items() if k != "total_s"}
    if stages:
        fig, ax = plt.subplots(figsize=(7, 0.8 + 0.4 * len(stages)), dpi=110)
        names = [k.removesuffix("_s") for k in stages]
        ax.barh(names, list(stages.values()), color="#4477aa")
        ax.invert_yaxis()
        ax.set_xlabel("seconds")
        total = (timings or {}).get("total_s", sum(stages.values()))
        ax.set_title(f"Time per stage (total {float(total):.1f} s)")
        ax.grid(True, axis="x", alpha=0.3)
        fig.tight_layout()
        out["timings"] = _png(fig)
        plt.close(fig)
    return out


def _table(header, rows):
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _img(png, alt):
    return f'<p><img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}"></p>'


def reliability_figure(confidence):
    """Reliability diagram (PNG bytes): accuracy of the top hit against the mean confidence per bin, one panel per
    polarity (the part of a label before ", ": ``"positive, per structure"``) and one curve per query kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = {}
    for label, report in confidence.items():
        panel, _, kind = label.rpartition(", ")
        panels.setdefault(panel, {})[kind] = report
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 5), dpi=110, squeeze=False)
    for ax, (panel, reports) in zip(axes[0], panels.items(), strict=True):
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfect calibration")
        for kind, report in reports.items():
            bins = report["bins"]
            ax.plot([b["mean_confidence"] for b in bins], [b["accuracy"] for b in bins], marker="o",
                    label=f"{kind.replace('_', ' ')} (ECE {report['ece']:.3f}, n={report['n']}"
                          + (f"; perfectly calibrated: {report['perfect_ece']['median']:.3f})" if report.get("perfect_ece")
                             else ")"))
        ax.set_xlabel("confidence of the top hit (bin mean)")
        ax.set_ylabel("fraction of top hits that are right")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
        ax.set_title(f"Reliability of the confidence{': ' + panel if panel else ''}")
    fig.tight_layout()
    png = _png(fig)
    plt.close(fig)
    return png


def write_evaluation_report(out_dir, *, title, rank_sets, timings=None, summary_table=None, notes=(),
                            detail_table=None, reliability=None):
    """Write the report of a ranking evaluation into ``out_dir``: three PNG figures and ``report.html``.

    Parameters
    ----------
    out_dir : str or Path
        Folder (created if needed).
    title : str
        Text anywhere in the report (title, labels, notes, table cells) may hold names that are not valid UTF-8
        (lone surrogates from ``surrogateescape``): they are written as backslash escapes.
    rank_sets : dict of str -> (ranks, n)
        Per curve: the 1-based rank of every query's true answer (NaN or None when absent from its candidates)
        and the number of queries the percentages are taken over.
    timings : dict of str -> float, optional
        Seconds per stage (keys ending in ``_s``); ``total_s`` is shown in the title, not as a bar.
    summary_table : (header, rows), optional
        Headline numbers, shown first.
    notes : sequence of str
        Paragraphs (protocol, data) shown under the title.
    detail_table : (header, rows), optional
        Per-query (or per-list) ranks, shown last.
    reliability : dict, optional
        Calibration of the confidence per query kind (``ece``, ``n``, ``bins``): a reliability diagram and table.

    Returns
    -------
    paths : dict of str -> Path
        ``"html"`` and one entry per figure written (``"topk"``, ``"ranks"``, ``"timings"``).
    """
    out_dir = Path(out_dir)
    figures = _figures(rank_sets, timings, title)
    if reliability:
        figures["reliability"] = reliability_figure(reliability)
    parts = [f"<h1>{html.escape(title)}</h1>"]
    parts += [f"<p>{html.escape(str(note))}</p>" for note in notes if note]
    if summary_table is not None:
        parts.append(_table(*summary_table))
    parts.append("<h2>Top-k accuracy</h2>" + _img(figures["topk"], "top-k accuracy curves"))
    parts.append("<h2>Per-query ranks</h2>" + _img(figures["ranks"], "histogram of per-query ranks"))
    if "timings" in figures:
        rows = [[k, f"{float(v):.2f}"] for k, v in timings.items()]
        parts.append("<h2>Timing per stage</h2>" + _img(figures["timings"], "time per stage")
                     + _table(["stage", "seconds"], rows))
    if reliability:
        rows = [[kind, f"{b['low']:.1f}-{b['high']:.1f}", b["n"], f"{b['mean_confidence']:.3f}",
                 f"{b['accuracy']:.3f}"] for kind, report in reliability.items() for b in report["bins"]]
        eces = "; ".join(f"{kind.replace('_', ' ')}: {ece_text(r)}" for kind, r in reliability.items())
        parts.append("<h2>Confidence</h2>" + f"<p>Expected calibration error: {html.escape(eces)}</p>"
                     + f"<p>{html.escape(ECE_EXPLAINED)}</p>"
                     + _img(figures["reliability"], "reliability diagram")
                     + _table(["queries", "bin", "n", "mean confidence", "accuracy"], rows))
    if detail_table is not None:
        parts.append("<h2>Per query</h2>" + _table(*detail_table))
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{padding:2px 8px;text-align:right}}
table{{border-collapse:collapse}}tr:nth-child(even){{background:#f3f3f3}}</style></head><body>
{"".join(parts)}
</body></html>
"""
    # Everything is rendered before the first file is written: a failure leaves the previous report, never half.
    paths = {key: out_dir / FIGURES[key] for key in figures}
    for key, png in figures.items():
        write_atomic(paths[key], png)
    paths["html"] = out_dir / "report.html"
    write_atomic(paths["html"], _clean(page))
    return paths


def write_report(summary, out_dir, title="Metabolite identification: top-k accuracy"):
    """Report of a metabolite-identification evaluation (``summary`` of ``evaluate_job``).

    Returns
    -------
    png, html : Path
        The top-k figure (``report.png``) and the page (``report.html``); ``ranks.png`` and ``timings.png`` are
        written beside them.
    """
    rows = []
    for key, label in (("per_structure", "IOKR (this run), per structure"),
                       ("per_spectrum", "IOKR (this run), per spectrum"),
                       ("published", "published IOKR (list scores)")):
        if key in summary:
            rows.append([label] + [f"{summary[key][k]:.1f}" for k in ("top1", "top5", "top10", "top20")])
    detail = [[d["list"], d["n_candidates"], d.get("n_query_spectra", 0), "" if d.get("rank") is None else d["rank"],
               d.get("published_rank", "")] for d in summary["lists"]]
    notes = [summary.get("protocol", ""),
             (f"{summary.get('n_lists_with_spectra')} of {summary.get('n_lists')} lists have query spectra; "
              f"{summary.get('n_query_spectra')} query spectra; {summary.get('n_train_structures')} training "
              "structures. Timings on the machine that ran the evaluation.")]
    paths = write_evaluation_report(
        out_dir, title=title, rank_sets=_metabolite_ranks(summary), timings=summary.get("timings_s"),
        summary_table=(["", "top-1 %", "top-5 %", "top-10 %", "top-20 %"], rows), notes=notes,
        detail_table=(["list", "candidates", "query spectra", "rank (merged)", "published rank"], detail),
        reliability=reliability_sets(summary))
    return paths["topk"], paths["html"]


def markdown_report(summary, title="Metabolite identification (IOKR) on PubChem candidate lists"):
    """A Markdown summary: top-k table against the published model, protocol, chosen hyperparameters, timings."""
    lines = [f"# {title}", "", summary.get("protocol", ""), "",
             "| | top-1 % | top-5 % | top-10 % | top-20 % |", "|---|---|---|---|---|"]
    for key, label in (("per_structure", "IOKR (this run), per structure (merged spectra)"),
                       ("per_spectrum", "IOKR (this run), per spectrum"),
                       ("published", "published IOKR (list scores), all lists, ties averaged"),
                       ("published_optimistic", "published IOKR, ties in the true structure's favour"),
                       ("published_on_evaluated_lists", "published IOKR, lists with query spectra")):
        if key in summary:
            lines.append(f"| {label} | " + " | ".join(f"{summary[key][k]:.1f}" for k in
                                                      ("top1", "top5", "top10", "top20")) + " |")
    chosen = summary.get("chosen", {})
    lines += ["", f"- lists: {summary.get('n_lists')} ({summary.get('n_lists_with_spectra')} with query spectra, "
              f"{summary.get('n_lists_without_true_structure')} without their true structure); query spectra: "
              f"{summary.get('n_query_spectra')}; unparsable candidates: {summary.get('n_unparsable_candidates')}",
              f"- training: {summary.get('n_train_structures')} structures from {summary.get('n_train_spectra')} "
              f"spectra; licences {summary.get('train_licenses')}",
              f"- model: kernels {chosen.get('kernels')} with ALIGNF weights "
              f"{[round(w, 3) for w in summary.get('weights', [])]}, sigma_mz={chosen.get('sigma_mz')}, "
              f"sigma_intensity={chosen.get('sigma_intensity')}, output {chosen.get('output_kernel')} "
              f"(gamma={chosen.get('output_gamma')}), alpha={chosen.get('alpha')} chosen by cross-validation; "
              f"structure prior weight {chosen.get('prior_weight', 0.0)} over {chosen.get('prior_neighbors', 10)} "
              "nearest training structures",
              f"- fingerprint: {summary.get('fingerprint')}; cleaning: {summary.get('cleaning')}",
              "- confidence of the top hit, expected calibration error: " + (", ".join(
                  f"{kind} {ece_text(r)}" for kind, r in reliability_sets(summary).items())
                  or "not calibrated") + " (section below)",
              "- timings (s, shared 2-core machine under load): "
              + ", ".join(f"{k}={v:.0f}" for k, v in summary.get("timings_s", {}).items()), "",
              "## Cross-validation (training structures only)", "",
              "| alpha | output_gamma | top-1 | top-5 | top-10 | top-20 |", "|---|---|---|---|---|---|"]
    for row in summary.get("cv", []):
        lines.append(f"| {row.get('alpha')} | {row.get('output_gamma')} | " + " | ".join(
            f"{row[k]:.1f}" for k in ("top1", "top5", "top10", "top20")) + " |")
    return _clean("\n".join(lines) + "\n\n" + reliability_markdown(summary))
