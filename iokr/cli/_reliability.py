"""Reliability of the top hit's confidence in ``iokr metabolites evaluate``'s reports, per polarity.

The evaluation summary holds, per polarity (``per_polarity``), the expected calibration error and the reliability
bins of the confidence per structure and per spectrum (``confidence``, from
:func:`iokr.apps.metabolites.model._confidence.calibration_report`) and how the calibration data were formed
(``calibration_data``). This module turns them into the curves of the HTML report's diagram and into a Markdown
section of ``summary.md``; it computes nothing itself.
"""

from __future__ import annotations

from iokr.apps.metabolites.model._noise_floor import N_BINS, N_SIMULATIONS

KINDS = (("per_structure", "per structure"), ("per_spectrum", "per spectrum"))


#: What the ECE and its "perfectly calibrated" figures mean, in the words of summary.md and report.html.
ECE_EXPLAINED = (
    "Expected calibration error (ECE): how far the top hit's confidence is from how often the top hit is right "
    f"(the queries' top-hit confidences in {N_BINS} equal-width bins; sum over bins of (queries in the bin / all queries) "
    "x |fraction of right top hits - mean confidence|; 0 is perfect). Beside it, 'perfectly calibrated at n=...': "
    "the ECE that a confidence which is exactly right on average would still show on this many queries, by chance "
    f"alone ({N_SIMULATIONS:,} seeded simulations whose outcomes are drawn from the confidences themselves, never "
    "the real ones: their median and the band holding 95 % of them). An ECE inside that band cannot be told apart from "
    "chance at this n; only an ECE above it shows a confidence that is off. Per spectrum, 'one outcome per "
    "structure' is the same band when all spectra of one structure are right or wrong together (the truth lies "
    "between the two bands).")


def _floor(floor):
    return f"{floor['median']:.3f} (95 % {floor['low']:.3f}-{floor['high']:.3f})"


def perfect_ece_text(report):
    """What a perfectly calibrated confidence would show at this n (the report's ``perfect_ece``: median and 95 %
    band of simulated outcomes; per spectrum also with one shared outcome per structure), or "" when not known."""
    if not report.get("perfect_ece"):
        return ""
    text = f"perfectly calibrated at n={report['n']}: {_floor(report['perfect_ece'])}"
    if report.get("perfect_ece_shared"):
        text += f"; one outcome per structure: {_floor(report['perfect_ece_shared'])}"
    return text


def ece_text(report):
    """``0.136 (n=60; perfectly calibrated at n=60: 0.071 (95 % 0.035-0.121))``: an ECE beside its noise floor."""
    floor = perfect_ece_text(report)
    return f"{report['ece']:.3f} (n={report['n']}" + (f"; {floor})" if floor else ")")


def _polarities(summary):
    """``{polarity: part}``: the summary's ``per_polarity``, or the summary itself under "" before polarities."""
    return summary.get("per_polarity") or {"": summary}


def reliability_sets(summary):
    """``{"positive, per structure": report, ...}``: every polarity's calibration reports (``ece``, ``n``,
    ``bins``), for :func:`~._report.write_evaluation_report`'s ``reliability``; empty when nothing is calibrated."""
    out = {}
    for mode, part in _polarities(summary).items():
        for key, label in KINDS:
            report = (part.get("confidence") or {}).get(key)
            if report and report.get("n"):
                out[f"{mode}, {label}".lstrip(", ")] = report
    return out


def _describe(data):
    if not data:
        return "not recorded"
    text = data.get("lists", "")
    decoys = data.get("decoys")
    if decoys:
        size = decoys.get("list_size")
        # lists of one size with at most max_isomers isomers, or (issue #30) sizes drawn like PubChem lists'
        fill = (f"at most {decoys.get('max_isomers')} isomers per formula, lists filled to {size}"
                if isinstance(size, int) else f"list sizes {size}, reached {decoys.get('list_sizes_reached')}")
        text += (f"; decoy table {decoys.get('source')}: {decoys.get('n_decoys')} decoys ({fill} by "
                 f"the nearest masses within {decoys.get('max_mass_difference_da')} Da; "
                 f"{decoys.get('n_library_compounds_removed')} library compounds removed); "
                 f"{decoys.get('n_structures_with_decoy_isomers')} of {decoys.get('n_structures')} training "
                 "structures have decoy isomers")
    if data.get("features"):
        text += f"; features {', '.join(data['features'])}"
    if data.get("size_weight_clipped"):
        text += " (the fitted size weight was positive: set to 0, the others refitted)"
    if "n_examples" in data:
        text += f"; {data['n_examples']} ranked lists, {data.get('n_right_top_hits')} right top hits"
    return text + f"; {data.get('n_folds')} structure folds"


def reliability_markdown(summary):
    """A Markdown section: per polarity, how the calibration data were formed, the ECE per structure and per
    spectrum, and the reliability bins."""
    lines = ["## Confidence of the top hit: reliability per polarity", "", ECE_EXPLAINED, ""]
    for mode, part in _polarities(summary).items():
        name = mode or "all queries"
        lines.append(f"### {name} ({part.get('precursor_type', '')})".replace(" ()", ""))
        lines.append("")
        lines.append(f"- calibration data: {_describe(part.get('calibration_data'))}")
        if not part.get("confidence"):
            lines += [f"- not calibrated: {part.get('calibration_problem') or 'no calibration'}", ""]
            continue
        if not any((r or {}).get("n") for r in part["confidence"].values()):
            lines += ["- no ECE: none of the evaluated queries has its true structure in its candidate list", ""]
            continue
        lines += ["", "| queries | ECE | n | mean confidence | accuracy of the top hit | ECE of a perfectly "
                  "calibrated confidence at this n: median (95 % band) |", "|---|---|---|---|---|---|"]
        for key, label in KINDS:
            r = part["confidence"].get(key)
            if r and r.get("n"):
                lines.append(f"| {label} | {r['ece']:.3f} | {r['n']} | {r['mean_confidence']:.3f} | "
                             f"{r['accuracy']:.3f} | {perfect_ece_text(r).partition(': ')[2] or 'not computed'} |")
        lines += ["", "| queries | confidence bin | n | mean confidence | accuracy |", "|---|---|---|---|---|"]
        for key, label in KINDS:
            r = part["confidence"].get(key) or {}
            for b in r.get("bins", []):
                lines.append(f"| {label} | {b['low']:.1f}-{b['high']:.1f} | {b['n']} | {b['mean_confidence']:.3f} "
                             f"| {b['accuracy']:.3f} |")
        lines.append("")
    return "\n".join(lines) + "\n"
