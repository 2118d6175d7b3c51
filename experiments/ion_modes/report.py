"""The report of :mod:`experiments.ion_modes`: the decision rules fixed before the study (:data:`CRITERIA`), their
application to the CV summaries (:func:`decisions`) and the Markdown tables of ``reports/metabolites_ion_modes.md``."""

from __future__ import annotations

from experiments.ion_modes.rows import MAIN_TYPES

TOP = ("top1", "top5", "top10", "top20")
#: Training sizes of the own-model curves, for results that predate their ``learning_curve`` key.
LEARNING_CURVE = (10, 25, 50, 100, 200)

#: The decision rules, written down (and committed) before the first cross-validation number was seen.
CRITERIA = """\
**Criteria, fixed before any number was seen** (this text was committed before the first CV run):

- Score of a polarity = the app's fold score: mean of top-1, top-10 and top-20 (%) of its main type's held-out
  structures ranked in the fold lists of that polarity, per fold, averaged over the 3 folds. Alphas from the app's
  grid; `separate` picks one alpha per sub-model (its own polarity's score), a joint model one alpha for both
  (mean of the two scores).
- **Q1**: the best joint variant (by the mean of the two polarity scores) wins over `separate` only if its
  `[M-H]-` score is at least 1.0 point higher **and** its `[M+H]+` score is at most 0.5 point lower; otherwise
  separate sub-models (simpler, what the model file already holds) are the default.
- **Q2** (types with >= 20 training structures): score = mean of top-1/10/20 over all held-out rows of the type
  (pooled over folds), in the same lists. `own` (the type's own sub-model trained on all its training structures,
  at the alpha its polarity's main sub-model chose) is preferred to `assume` (the main sub-model of its polarity)
  when it scores at least 1.0 point higher; otherwise the type is mapped. `min_structures` N = the smallest size
  on the learning curve (own model trained on n structures per fold) at which the own model reaches the
  `assume` score on every studied type that has n training structures; no such n: no own sub-models, all mapped.
  The own model's best-alpha score is reported but not used (it is tuned on the held-out rows).
"""


def _main_of(name):
    """The main type of canonical type ``name``'s polarity, read from the text's final sign (the results hold types
    today's adduct parser refuses, e.g. ``[M-2H]-``)."""
    return MAIN_TYPES[1 if name.endswith("+") else -1]


def decisions(cv):
    """The choices :data:`CRITERIA` makes from the CV summary: Q1's winner, Q2's per-type choice and N."""
    models, chosen = cv["models"], cv["chosen_alphas"]

    def score(model, name, alpha=None):
        return models[model][alpha or chosen[model][_main_of(name)]][name]["score"]
    pos, neg = MAIN_TYPES[1], MAIN_TYPES[-1]
    joint = [m for m in models if m != "separate"]
    best_joint = max(joint, key=lambda m: score(m, pos) + score(m, neg)) if joint else None
    q1 = {"best_joint": best_joint, "winner": "separate"}
    if best_joint:
        q1["neg_gain"] = score(best_joint, neg) - score("separate", neg)
        q1["pos_gain"] = score(best_joint, pos) - score("separate", pos)
        if q1["neg_gain"] >= 1.0 and q1["pos_gain"] >= -0.5:
            q1["winner"] = best_joint
    q2, curves = {}, cv.get("own_curves", {})
    for name, per_size in curves.items():
        alpha = chosen["separate"][_main_of(name)]
        full = per_size[max(per_size, key=int)][alpha]["score"]
        q2[name] = {"assume": score("separate", name), "own": full,
                    "choice": "own" if full >= score("separate", name) + 1.0 else "assume"}
    q2_n = None
    for n in cv.get("learning_curve", LEARNING_CURVE):  # grid sizes only: a type's full size is no common point
        reached = [per_size[str(n)][chosen["separate"][_main_of(name)]]["score"] >= q2[name]["assume"]
                   for name, per_size in curves.items() if str(n) in per_size]
        if reached and all(reached):
            q2_n = n
            break
    return {"q1": q1, "q2": q2, "min_structures": q2_n}


def _cells(entry):
    return " | ".join(f"{entry[k]:.1f}" for k in (*TOP, "score"))


def _q1_table(cv):
    lines = ["| model | type | alpha | top-1 | top-5 | top-10 | top-20 | score | n |",
             "|---|---|---|---|---|---|---|---|---|"]
    for model, alphas in cv["chosen_alphas"].items():
        for name, alpha in alphas.items():
            entry = cv["models"][model][alpha][name]
            lines.append(f"| {model} | {name} | {alpha} | {_cells(entry)} | {entry['n']} |")
    return lines


def _q2_table(cv):
    chosen = cv["chosen_alphas"]["separate"]
    lines = ["| type | structures | assume (main sub-model) top-1/5/10/20, score | own (all) top-1/5/10/20, score |"
             " own, best alpha: score | joint |", "|---|---|---|---|---|---|"]
    for name, per_size in cv.get("own_curves", {}).items():
        main = _main_of(name)
        alpha = chosen[main]
        assume = cv["models"]["separate"][alpha][name]
        full = per_size[max(per_size, key=int)]
        own = full[alpha]
        best = max(full.values(), key=lambda e: e["score"])
        joint = [f"{m}: {cv['models'][m][cv['chosen_alphas'][m][main]][name]['score']:.1f}"
                 for m in cv["models"] if m != "separate"]
        fmt = lambda e: " / ".join(f"{e[k]:.1f}" for k in TOP) + f", **{e['score']:.1f}**"  # noqa: E731
        lines.append(f"| {name} | {cv['study_counts'][name]['structures']} | {fmt(assume)} | {fmt(own)} | "
                     f"{best['score']:.1f} | {'; '.join(joint)} |")
    return lines


def _curve_table(cv):
    chosen = cv["chosen_alphas"]["separate"]
    lines = ["| type | assume score | own score by training structures per fold (n: score) |", "|---|---|---|"]
    for name, per_size in cv.get("own_curves", {}).items():
        alpha = chosen[_main_of(name)]
        curve = ", ".join(f"{n}: {per_size[n][alpha]['score']:.1f}" for n in sorted(per_size, key=int))
        lines.append(f"| {name} | {cv['models']['separate'][alpha][name]['score']:.1f} | {curve} |")
    return lines


def _figures_table(figures):
    lines = ["| model | queries | top-1 % | top-5 % | top-10 % | top-20 % | wall s |", "|---|---|---|---|---|---|---|"]
    for name, label in (("negative", "IOKR, app defaults (prior 0.3), [M-H]-"),
                        ("negative_baseline", "CSI:FingerID-style baseline, [M-H]-"),
                        ("negative_no_prior", "IOKR, prior off, [M-H]-"),
                        ("positive", "IOKR, app defaults, [M+H]+ (check)")):
        if name not in figures:
            continue
        r = figures[name]
        for kind in ("per_structure", "per_spectrum"):
            cells = " | ".join(f"{r[kind][k]:.1f}" for k in TOP)
            lines.append(f"| {label} | {kind.replace('_', ' ')} | {cells} | {r['wall_s']:.0f} |")
    return lines


def _cv_section(cv, title):
    decided = decisions(cv)
    q1 = decided["q1"]
    q1_line = (f"Q1 winner: **{q1['winner']}** (best joint {q1['best_joint']}: [M-H]- {q1['neg_gain']:+.1f}, "
               f"[M+H]+ {q1['pos_gain']:+.1f} points)" if q1["best_joint"] else "Q1: no joint model in this run")
    q2_line = ", ".join(f"{t}: {d['choice']} ({d['assume']:.1f} vs {d['own']:.1f})" for t, d in decided["q2"].items())
    scored = f" Scored rows (formula shared by another structure): {cv['scored_rows']}." if "scored_rows" in cv else ""
    return [f"## CV on training structures: {title}", "",
            f"Study rows per type: {cv['study_counts']} (main types subsampled to {cv['max_main']} structures, "
            f"seeded).{scored} Wall time {cv['timings_s'].get('total_s', 0):.0f} s.", "",
            f"Decisions by `decisions()`: {q1_line}. Q2 (assume vs own score): {q2_line}. "
            f"min_structures by the rule: {decided['min_structures']}.", "",
            "### Q1: separate sub-models or one joint model", "", *_q1_table(cv), "",
            "### Q2: rare types, own sub-model or mapping", "", *_q2_table(cv), "", *_curve_table(cv), ""]


def render(results):
    """The Markdown report of ``results`` (the study's JSON): criteria, each CV section, the figures."""
    lines = ["# Ion modes and precursor types (issue #28): model study", "",
             "Generated by `python -m experiments ion_modes` (the tables re-rendered by `--render-only`) from "
             "`reports/ion_modes.json`; "
             "method in the docstring of `experiments/ion_modes/__init__.py`.", "", CRITERIA]
    for key, title in (("cv", "fold lists (the app's CV lists, per polarity)"),
                       ("cv_formula", "isomer-like formula lists (added after the fold-list numbers, see Reading)")):
        if key in results:
            lines += _cv_section(results[key], title)
    if "figures" in results:
        lines += ["## Q4: figures on the 60 shared lists", "", *_figures_table(results["figures"]), ""]
    return "\n".join(lines) + "\n"
