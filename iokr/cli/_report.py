"""PNG and HTML report of a metabolite-identification evaluation: top-k curves against the published model."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import numpy as np

from ._output import write_atomic

MAX_K = 50


def _curve(ranks, n):
    ranks = np.nan_to_num(np.asarray(ranks, dtype=np.float64), nan=np.inf)
    ks = np.arange(1, MAX_K + 1)
    return ks, np.array([100.0 * np.sum(ranks <= k) / n for k in ks]) if n else np.zeros(MAX_K)


def curves(summary):
    """Top-k curves (k = 1..50) of this run per structure and per spectrum, and of the published scores."""
    lists = summary["lists"]
    evaluated = [d for d in lists if d.get("n_query_spectra", 0) > 0 and d["n_candidates"] > 0]
    out = {}
    struct = [np.nan if d.get("rank") is None else d["rank"] for d in evaluated]
    out["IOKR, per structure (merged spectra)"] = _curve(struct, len(evaluated))
    spec = [r for d in evaluated for r in d.get("spectrum_ranks", [])]
    out["IOKR, per spectrum"] = _curve(spec, len(spec))
    if any("published_rank" in d for d in lists):
        pub = [d.get("published_rank", np.nan) for d in lists]
        out["published IOKR (all lists)"] = _curve(pub, len(lists))
    return out


def write_report(summary, out_dir, title="Metabolite identification: top-k accuracy"):
    """Write ``report.png`` and ``report.html`` (with the PNG embedded) into ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for label, (ks, acc) in curves(summary).items():
        ax.plot(ks, acc, label=label, drawstyle="steps-post")
    ax.set_xscale("log")
    ax.set_xlabel("k (rank of the true structure <= k)")
    ax.set_ylabel("top-k accuracy (%)")
    ax.set_ylim(0, 100)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    png = buffer.getvalue()
    (out_dir / "report.png").write_bytes(png)
    rows = []
    for key, label in (("per_structure", "IOKR (this run), per structure"),
                       ("per_spectrum", "IOKR (this run), per spectrum"),
                       ("published", "published IOKR (list scores)")):
        if key in summary:
            cells = "".join(f"<td>{summary[key][k]:.1f}</td>" for k in ("top1", "top5", "top10", "top20"))
            rows.append(f"<tr><th>{html.escape(label)}</th>{cells}</tr>")
    detail = "".join(
        f"<tr><td>{html.escape(d['list'])}</td><td>{d['n_candidates']}</td><td>{d.get('n_query_spectra', 0)}</td>"
        f"<td>{'' if d.get('rank') is None else d['rank']}</td><td>{d.get('published_rank', '')}</td></tr>"
        for d in summary["lists"])
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{padding:2px 8px;text-align:right}}
table{{border-collapse:collapse}}tr:nth-child(even){{background:#f3f3f3}}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{html.escape(summary.get('protocol', ''))}</p>
<p>{summary.get('n_lists_with_spectra')} of {summary.get('n_lists')} lists have query spectra;
{summary.get('n_query_spectra')} query spectra; {summary.get('n_train_structures')} training structures.</p>
<table><tr><th></th><th>top-1 %</th><th>top-5 %</th><th>top-10 %</th><th>top-20 %</th></tr>{''.join(rows)}</table>
<p><img alt="top-k curves" src="data:image/png;base64,{base64.b64encode(png).decode()}"></p>
<h2>Per list</h2><table><tr><th>list</th><th>candidates</th><th>query spectra</th><th>rank (merged)</th>
<th>published rank</th></tr>{detail}</table></body></html>
"""
    write_atomic(out_dir / "report.html", page)
    return out_dir / "report.png", out_dir / "report.html"


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
              f"(gamma={chosen.get('output_gamma')}), alpha={chosen.get('alpha')} chosen by cross-validation",
              f"- fingerprint: {summary.get('fingerprint')}; cleaning: {summary.get('cleaning')}",
              "- timings (s, shared 2-core machine under load): "
              + ", ".join(f"{k}={v:.0f}" for k, v in summary.get("timings_s", {}).items()), "",
              "## Cross-validation (training structures only)", "",
              "| alpha | output_gamma | top-1 | top-5 | top-10 | top-20 |", "|---|---|---|---|---|---|"]
    for row in summary.get("cv", []):
        lines.append(f"| {row.get('alpha')} | {row.get('output_gamma')} | " + " | ".join(
            f"{row[k]:.1f}" for k in ("top1", "top5", "top10", "top20")) + " |")
    return "\n".join(lines) + "\n"
