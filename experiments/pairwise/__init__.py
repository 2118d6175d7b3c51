"""Real-data checks of the pairwise and ranking estimators:
``python -m experiments pairwise --data /work/shared/data [--output reports]``.

Writes ``reports/pairwise.json`` and ``reports/pairwise.md`` (``--set update=True`` keeps the sections skipped in this run):

1. Davis (68 drugs x 442 kinases, complete Kd labels): RLScore's tutorial outputs ``kron_rls1..4.out`` (KronRLS with a
   linear kernel on the similarity rows, settings A-D) and ``two_step1..4.out`` (TwoStepRLS) reproduced regparam by
   regparam, then lambda and kernel chosen by the closed-form cross-validation of each setting on the training part.
   Conditional ranking of targets per drug (ConditionalRankRLS vs KronRLS), lambda by each setting's closed-form CV,
   with spot checks of the closed forms against explicit refits.
2. Boston housing: all of RLScore's RankRLS outputs: ``ranking1.out`` (GlobalRankRLS), ``ranking2.out`` (leave-pair-out
   selection), ``pairwise_ranking.out`` (PPRankRLS on 1000 sampled preferences: PreferenceRankRLS on the same pairs)
   and ``ranking3..5.out`` (RLScore's seeded 5-fold split, closed-form fold hold-outs).
3. Rock-paper-scissors tournaments (synthetic, section 6.1 of Pahikkala et al. 2013): ordinary vs reciprocal
   Kronecker kernel, regression vs ranking loss.
4. Yamanishi nr / gpcr / ic: AUC and AUPR of KronRLS under the four settings by closed-form cross-validation.
5. KIBA (incomplete labels): KronRLS by conjugate gradient, DeepDTA folds (needs RDKit).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from threadpoolctl import threadpool_limits

from experiments._common.reports import Outputs
from experiments.pairwise.davis import SETTINGS, davis_conditional_ranking, davis_reproduction, davis_selection
from experiments.pairwise.interactions import kiba, pairwise_baselines, yamanishi
from experiments.pairwise.ranking import housing, rock_paper_scissors
from experiments.pairwise.report import render  # noqa: F401 (the study's surface)

#: Heading of the hand-written reading at the end of pairwise.md, kept when the report is regenerated.
READING = "## Reading of the baselines (issue 19)"
SECTIONS = ("davis", "selection", "ranking_cv", "housing", "rps", "yamanishi", "kiba", "baselines")
BASELINE_DATA = ("davis", "kiba", "metz")


@dataclass(frozen=True)
class Config:
    """The study's choices.

    Attributes
    ----------
    skip : tuple of str
        Sections not run, among :data:`SECTIONS`.
    baselines : bool
        Run the baselines beside KronRLS (issue 19; False is the same as skipping "baselines").
    baseline_data : tuple of str
        Data sets of the baselines section, among :data:`BASELINE_DATA`.
    baseline_settings : tuple of str
        Settings of the baselines section (when updating, the others are kept).
    update : bool
        Keep the sections of the existing ``pairwise.json`` that are skipped in this run.
    threads : int
        BLAS threads (1: on a loaded shared machine more threads oversubscribe).
    rps_repeats : int
        Rock-paper-scissors tournaments per setting.
    """

    skip: tuple = ()
    baselines: bool = True
    baseline_data: tuple = BASELINE_DATA
    baseline_settings: tuple = SETTINGS
    update: bool = False
    threads: int = 1
    rps_repeats: int = 10


#: Only the synthetic rock-paper-scissors tournaments, one per setting (the other sections need the shared
#: pairwise/ data).
QUICK = Config(skip=tuple(s for s in SECTIONS if s != "rps"), rps_repeats=1)
OUTPUTS = Outputs(json="pairwise.json", markdown="pairwise.md", keep=READING, json_indent=1, json_newline=False)


def _check(config):
    for name, given, allowed in (("skip", config.skip, SECTIONS), ("baseline_data", config.baseline_data, BASELINE_DATA),
                                 ("baseline_settings", config.baseline_settings, SETTINGS)):
        if set(given) - set(allowed):
            raise ValueError(f"{name}: expected values among {allowed}, got {sorted(set(given) - set(allowed))}")


def run(config, data, previous=None, checkpoint=None):
    """The sections not skipped, over ``previous`` (the existing results) when updating (``checkpoint`` unused)."""
    _check(config)
    with threadpool_limits(limits=config.threads):
        return _run(config, data, previous)


def _run(config, data, previous):
    report = dict(previous) if previous else {}
    report.pop("seconds_total", None)  # a total over the sections of an earlier run would mislead
    t0 = time.perf_counter()
    steps = (
        ("davis", "davis", lambda: davis_reproduction(data / "pairwise" / "davis",
                                                      data / "pairwise" / "davis" / "rlscore_reference_outputs")),
        ("selection", "davis_selection", lambda: davis_selection(data / "pairwise" / "davis")),
        ("ranking_cv", "davis_conditional_ranking", lambda: davis_conditional_ranking(data / "pairwise" / "davis")),
        ("housing", "housing", lambda: housing(data / "ranking")),
        ("rps", "rock_paper_scissors", lambda: rock_paper_scissors(repeats=config.rps_repeats)),
        ("yamanishi", "yamanishi", lambda: yamanishi(data / "pairwise" / "yamanishi")),
        ("kiba", "kiba", lambda: kiba(data / "pairwise" / "kiba")),
    )
    for section, key, compute in steps:
        if section not in config.skip:
            report[key] = compute()
            print(f"{section} done", time.perf_counter() - t0, flush=True)
    if config.baselines and "baselines" not in config.skip:
        report["baselines"] = pairwise_baselines(data, config.baseline_data, log=lambda m: print(m, flush=True),
                                                 previous=report.get("baselines"), settings=config.baseline_settings)
        print("baselines done", time.perf_counter() - t0, flush=True)
    report["seconds_last_run"] = time.perf_counter() - t0
    return report
