"""Context-sensitive spelling correction on real English text (issue 10): do positional kernels help?

    python -m experiments text --data /path/to/shared/data [--output reports] [--set repeats=10] [--quick]

Task (Golding & Roth 1999; Pahikkala et al. 2005, 2009): for a binary confusion set {a, b} (among/between,
than/then, their/there, ...), every occurrence of a or b in correct English text is an example; its context
(``--window`` tokens each side, the word itself left out) must tell which of the two words belongs there.

Text (public domain / permissive, read from ``--data``):
- ``parallel_text/``: the English side, King James Version (SWORD module engKJV2006eb, Debian sword-text-kjv;
  public domain), one text per verse;
- ``english_text/`` (when present; made by its ``export_english_text.py`` from Debian packages): the World English
  Bible (sword-text-web, public domain), the Python 3.11 documentation prose (python3.11-doc, PSF License 2.0) and
  The Devil's Dictionary (dict-devil, public domain), one text per verse / paragraph / entry.
Documents (a Bible chapter -- KJV and WEB of the same chapter are one document --, a documentation page, a dictionary
entry) are the unit of every split, so near-duplicate verses of the two Bible translations never straddle train and
test.

Protocol: ``--repeats`` random splits of the documents (70 % train / 30 % test, seeds 0..R-1), the same for every
confusion set and method. Examples of a set are capped at ``--max-examples`` (uniform sample, fixed seed). On the
training side, alpha (13 values) and the kernel parameters are chosen by 5-fold grouped, stratified closed-form CV
(iokr.model_selection.RLSCV inside iokr.text.ContextRLSClassifier, scoring accuracy); the test side is scored once.
Methods: bag of words (window +-8); bag of words with its window (2, 4, 8) chosen by CV; contextual weighting
(paper I; decay grid); word-position kernel (paper II; decay x theta); the one-parameter positional transformation
alone (theta; identity word transformation);
the transformation framework (paper III; one-parameter positional transformation theta x word mix with LSA word
vectors). The word vectors are learned once from all the text with the confusion-set words removed (unlabeled text,
no target word seen), the vocabulary (min count 2) from all the text: neither uses labels.

Statistics: per set, mean and std of test accuracy and AUC over the splits; paired comparisons per set by the
corrected resampled t-test (Nadeau & Bengio 2003; repeated splits share examples, so the plain paired t-test is
too liberal), and across sets by the Wilcoxon signed-rank test on the per-set mean differences.

Timings: single runs on a shared 2-core machine (other agents running); only ratios are meaningful.
"""

from __future__ import annotations

import gzip
import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats
from sklearn.model_selection import StratifiedGroupKFold
from threadpoolctl import threadpool_limits

from experiments._common.reports import Outputs
from experiments.text.report import render  # noqa: F401 (the study's surface)
from iokr.metrics import auc
from iokr.text import (
    BagOfWordsKernel,
    ContextFeaturizer,
    ContextRLSClassifier,
    ContextualWeightingKernel,
    CooccurrenceLSA,
    TransformedContextKernel,
    WordPositionKernel,
    tokenize,
)

# Binary confusion sets of Golding & Roth (1999) (and I/me, their/there taken as binary), in their order.
CONFUSION_SETS = [
    ("accept", "except"), ("affect", "effect"), ("among", "between"), ("begin", "being"), ("country", "county"),
    ("its", "it's"), ("lead", "led"), ("passed", "past"), ("peace", "piece"), ("principal", "principle"),
    ("quiet", "quite"), ("raise", "rise"), ("than", "then"), ("their", "there"), ("weather", "whether"),
    ("your", "you're"), ("i", "me"), ("amount", "number"), ("fewer", "less"),
]
ALPHAS = np.logspace(-2, 4, 13)


def load_texts(data):
    """Texts (token lists), their document ids and sources, and a description of each corpus."""
    texts, docs, sources, corpora = [], [], [], []
    kjv = data / "parallel_text" / "bible_kjv_en__rv1909_es.chapters.jsonl.gz"
    n0 = 0
    with gzip.open(kjv, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            for verse in record["en"]:
                texts.append(tokenize(verse))
                docs.append("bible:" + record["id"])
                sources.append("kjv")
    corpora.append({"name": "kjv", "file": str(kjv), "texts": len(texts) - n0,
                    "tokens": sum(len(t) for t in texts[n0:]),
                    "source": "SWORD module engKJV2006eb (Debian sword-text-kjv 14.3-1)", "licence": "public domain"})
    extra = data / "english_text" / "english_text.paragraphs.jsonl.gz"
    described = {
        "web": ("World English Bible, SWORD module engWEB2015eb (Debian sword-text-web 426.0-1)", "public domain"),
        "pydoc": ("Python 3.11 documentation, reST sources (Debian python3.11-doc 3.11.2-6+deb12u9)",
                  "PSF License Version 2"),
        "devil": ("The Devil's Dictionary, Ambrose Bierce 1911 (Debian dict-devil 1.0-13.1)", "public domain"),
    }
    if extra.is_file():
        counts = defaultdict(lambda: [0, 0])
        with gzip.open(extra, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                tokens = tokenize(record["text"])
                src = record["source"]
                texts.append(tokens)
                # The two Bible translations share chapter ids: one document, never split apart.
                docs.append(("bible:" + record["doc"]) if src == "web" else f"{src}:{record['doc']}")
                sources.append(src)
                counts[src][0] += 1
                counts[src][1] += len(tokens)
        for src, (n, tok) in counts.items():
            corpora.append({"name": src, "file": str(extra), "texts": n, "tokens": tok,
                            "source": described.get(src, ("?", "?"))[0], "licence": described.get(src, ("?", "?"))[1]})
    return texts, np.array(docs), np.array(sources), corpora


def find_occurrences(texts, words):
    """(text index, token index, word) of every token in ``words``."""
    wanted = set(words)
    return [(k, i, t) for k, tokens in enumerate(texts) for i, t in enumerate(tokens) if t in wanted]


def methods(window, embedding, quick):
    """(name, kernel, param grid) of the compared methods."""
    decays = [0.5, 1.0, 2.0]
    offsets = np.abs(np.concatenate([np.arange(-window, 0), np.arange(1, window + 1)]))
    # Bag of words of the sub-window |offset| <= r, as a rank-one positional transformation (no re-featurizing).
    sub_windows = [((offsets <= r)[:, None] & (offsets <= r)[None, :]).astype(float)
                   for r in sorted({2, 4, window}) if r <= window]
    return [
        ("bag_of_words", BagOfWordsKernel(window), None),
        ("bag_of_words_window_cv", TransformedContextKernel(window), {"positional": sub_windows}),
        ("contextual_weighting", ContextualWeightingKernel(window, floor=0.025), {"decay": decays}),
        ("word_position", WordPositionKernel(window, floor=0.025), {"decay": decays, "theta": [0.25, 1.0]}),
        ("one_parameter_positional", TransformedContextKernel(window), {"theta": [0.1, 0.3, 1.0]}),
        ("transformation_framework", TransformedContextKernel(window, word_embedding=embedding),
         {"theta": [0.1, 0.3, 1.0], "word_mix": [0.0] if quick else [0.0, 0.3]}),
    ]


def corrected_ttest(diffs, n_train, n_test):
    """Nadeau & Bengio (2003) corrected resampled t-test on per-split differences; two-sided p-value."""
    diffs = np.asarray(diffs, dtype=float)
    J = diffs.size
    if J < 2:
        return float("nan"), float("nan")
    var = diffs.var(ddof=1)
    if var == 0:  # the same difference on every split
        return (float("nan"), 1.0) if diffs.mean() == 0 else (float(np.copysign(np.inf, diffs.mean())), 0.0)
    t = diffs.mean() / np.sqrt((1.0 / J + n_test / n_train) * var)
    return float(t), float(2 * stats.t.sf(abs(t), df=J - 1))


COMPARISONS = [("contextual_weighting", "bag_of_words"), ("word_position", "bag_of_words"),
               ("bag_of_words_window_cv", "bag_of_words"), ("word_position", "bag_of_words_window_cv"),
               ("transformation_framework", "bag_of_words_window_cv"),
               ("one_parameter_positional", "word_position"),
               ("transformation_framework", "one_parameter_positional"),
               ("word_position", "contextual_weighting"), ("transformation_framework", "bag_of_words"),
               ("transformation_framework", "word_position")]


@dataclass(frozen=True)
class Config:
    """The study's choices.

    Attributes
    ----------
    repeats : int
        Random document splits (70 % train / 30 % test, seeds 0..repeats-1).
    window : int
        Context tokens each side.
    max_examples : int
        Examples per confusion set (a uniform sample beyond).
    min_count : int
        Fewest occurrences of each word of a set for the set to be used.
    lsa_components : int
        Dimension of the LSA word vectors.
    quick : bool
        No LSA word mix in the transformation framework's grid (smoke run).
    """

    repeats: int = 6
    window: int = 8
    max_examples: int = 700
    min_count: int = 60
    lsa_components: int = 100
    quick: bool = False


#: One split, 200 examples per set, no LSA mix (``--set repeats=3 --set max_examples=400`` is the old ``--quick``).
QUICK = Config(repeats=1, max_examples=200, quick=True)
OUTPUTS = Outputs(json="text.json", markdown="text.md", keep=None)


def _confusion_sets(texts, sources, min_count):
    """The sets with at least ``min_count`` occurrences of each word, and every set's word counts per source."""
    counts = Counter(t for tokens in texts for t in tokens)
    per_source = {src: Counter(t for tokens, s in zip(texts, sources, strict=True) if s == src for t in tokens)
                  for src in dict.fromkeys(sources)}
    chosen = [cs for cs in CONFUSION_SETS if min(counts[w] for w in cs) >= min_count]
    set_counts = {"/".join(cs): {w: {"total": counts[w], **{src: c[w] for src, c in per_source.items()}} for w in cs}
                  for cs in CONFUSION_SETS}
    return chosen, set_counts


def _chosen_parameters(clf, mname):
    picked = {"alpha": clf.alpha_}
    for k, v in clf.kernel_.get_params().items():
        if k in ("decay", "theta", "word_mix") and not (k in ("theta", "word_mix") and mname.startswith("bag")):
            picked[k] = v
        if k == "positional" and v is not None:
            picked["sub_window"] = int(np.count_nonzero(np.diag(v)) // 2)
    return picked


def _fit_method(entry, mname, kernel, grid, split, timing):
    """Fit one method on one split (inner CV on the training side), append its test scores to ``entry``; on split 0,
    time primal against dual prediction into ``timing``."""
    X, y, groups, train, folds, rep = split
    test = ~train
    t1 = time.time()
    clf = ContextRLSClassifier(kernel, param_grid=grid, alphas=ALPHAS, cv=folds, scoring="accuracy")
    clf.fit(X[train], y[train], groups=groups[train])
    fit_seconds = time.time() - t1
    t2 = time.time()
    scores = clf.decision_function(X[test])
    primal_seconds = time.time() - t2
    m = entry["methods"].setdefault(mname, {"accuracy": [], "auc": [], "chosen": [], "n_train": [],
                                            "n_test": [], "fit_seconds": []})
    m["accuracy"].append(float(np.mean(clf.predict(X[test]) == y[test])))
    m["auc"].append(float(auc(y[test] == clf.classes_[1], scores)))
    m["chosen"].append(_chosen_parameters(clf, mname))
    m["n_train"].append(int(train.sum()))
    m["n_test"].append(int(test.sum()))
    m["fit_seconds"].append(fit_seconds)
    if rep == 0:
        t3 = time.time()
        dual = clf.decision_function(X[test], path="dual")
        dual_seconds = time.time() - t3
        timing[mname] = {
            "n_test": int(test.sum()), "primal_seconds": primal_seconds, "dual_seconds": dual_seconds,
            "dual_over_primal": dual_seconds / max(primal_seconds, 1e-9),
            "max_abs_primal_minus_dual": float(np.max(np.abs(dual - scores)))}


def _comparisons(entry):
    """Paired comparisons of methods on the same splits (corrected resampled t-test)."""
    comps = {}
    for a, b in COMPARISONS:
        ma, mb = entry["methods"].get(a), entry["methods"].get(b)
        if not ma or not mb:
            continue
        comp = {}
        for key in ("accuracy", "auc"):
            d = np.array(ma[key]) - np.array(mb[key])
            t, p = corrected_ttest(d, np.mean(ma["n_train"]), np.mean(ma["n_test"]))
            comp[key] = {"mean_difference": float(d.mean()), "wins": int((d > 0).sum()), "losses": int((d < 0).sum()),
                         "t": t, "p_corrected_resampled_t": p}
        comps[f"{a} - {b}"] = comp
    return comps


def _run_set(cs, texts, docs, featurizer, embedding, config):
    """Every split and method on one confusion set: its results entry and the split-0 prediction timings."""
    name = "/".join(cs)
    occ = find_occurrences(texts, cs)
    rng = np.random.default_rng(12345)
    if len(occ) > config.max_examples:
        occ = [occ[i] for i in np.sort(rng.choice(len(occ), config.max_examples, replace=False))]
    X = featurizer.transform([(texts[k], i) for k, i, _ in occ])
    y = np.array([w for _, _, w in occ])
    groups = docs[[k for k, _, _ in occ]]
    entry = {"n_examples": int(len(y)), "class_counts": {w: int(np.sum(y == w)) for w in cs},
             "majority_baseline": float(max(np.mean(y == w) for w in cs)), "methods": {}}
    unique_docs, timing = np.unique(docs), {}
    for rep in range(config.repeats):
        split_rng = np.random.default_rng(rep)
        train_docs = set(split_rng.choice(unique_docs, int(0.7 * unique_docs.size), replace=False))
        train = np.array([g in train_docs for g in groups])
        if np.unique(y[train]).size < 2 or np.unique(y[~train]).size < 2:
            continue
        # The same inner folds for every method (and computed once: the grouped stratified splitter is slow).
        folds = list(StratifiedGroupKFold(5, shuffle=True, random_state=rep).split(
            np.zeros((int(train.sum()), 1)), y[train], groups[train]))
        for mname, kernel, grid in methods(config.window, embedding, config.quick):
            _fit_method(entry, mname, kernel, grid, (X, y, groups, train, folds, rep), timing)
        accs = {k: v["accuracy"][-1] for k, v in entry["methods"].items()}
        print(f"{name} split {rep}: " + ", ".join(f"{k} {v:.3f}" for k, v in accs.items()), flush=True)
    for m in entry["methods"].values():
        for key in ("accuracy", "auc"):
            m[f"mean_{key}"] = float(np.mean(m[key]))
            m[f"std_{key}"] = float(np.std(m[key], ddof=1)) if len(m[key]) > 1 else 0.0
    entry["comparisons"] = _comparisons(entry)
    return entry, timing


def _across_sets(results):
    """Across sets: Wilcoxon signed-rank on the per-set mean differences of each comparison."""
    across = {}
    for comp_name in next(iter(results.values()))["comparisons"] if results else []:
        for key in ("accuracy", "auc"):
            d = np.array([r["comparisons"][comp_name][key]["mean_difference"] for r in results.values()])
            p = float(stats.wilcoxon(d).pvalue) if d.size >= 2 and np.any(d != 0) else float("nan")
            across.setdefault(comp_name, {})[key] = {
                "sets_better": int((d > 0).sum()), "sets_worse": int((d < 0).sum()),
                "mean_of_set_differences": float(d.mean()), "p_wilcoxon_signed_rank": p}
    return across


def run(config, data, previous=None, checkpoint=None):
    """Per confusion set and method, accuracy and AUC over the splits, paired comparisons and the text's
    description (``previous``, ``checkpoint`` unused)."""
    # One BLAS thread: on the shared 2-core machine, two spinning OpenBLAS threads made a 160 x 160 Cholesky
    # ~40 times slower than one.
    with threadpool_limits(1):
        return _run(config, data)


def _run(config, data):
    started = time.time()
    texts, docs, sources, corpora = load_texts(Path(data))
    print(f"{len(texts)} texts, {sum(len(t) for t in texts)} tokens from {[c['name'] for c in corpora]}")
    chosen, set_counts = _confusion_sets(texts, sources, config.min_count)
    print("chosen sets:", ["/".join(cs) for cs in chosen])
    # Vocabulary and LSA word vectors: unlabeled, computed once; the confusion words are removed from the LSA text.
    t0 = time.time()
    featurizer = ContextFeaturizer(window=config.window, min_count=2).fit(texts)
    confusion_words = {w for cs in CONFUSION_SETS for w in cs}
    lsa_texts = [[t for t in tokens if t not in confusion_words] for tokens in texts]
    embedding = CooccurrenceLSA(n_components=config.lsa_components, window=2).fit(
        lsa_texts, featurizer.vocabulary_).embedding_
    prep_seconds = time.time() - t0
    print(f"vocabulary {featurizer.n_words_} words, LSA {embedding.shape} in {prep_seconds:.1f} s")
    results, timing = {}, {}
    for cs in chosen:
        results["/".join(cs)], set_timing = _run_set(cs, texts, docs, featurizer, embedding, config)
        if set_timing:
            timing["/".join(cs)] = set_timing
    report = {
        "task": "context-sensitive spelling correction, binary confusion sets (Golding & Roth 1999)",
        "protocol": {"repeats": config.repeats, "train_fraction_of_documents": 0.7, "window": config.window,
                     "max_examples_per_set": config.max_examples, "min_count_per_word": config.min_count,
                     "alphas": ALPHAS.tolist(), "inner_cv": "5-fold StratifiedGroupKFold (documents), closed form",
                     "selection_scoring": "accuracy", "vocabulary_min_count": 2,
                     "lsa": {"n_components": int(embedding.shape[1]), "window": 2,
                             "text": "all text with every confusion-set word removed"},
                     "quick": bool(config.quick)},
        "corpora": corpora,
        "vocabulary_size": featurizer.n_words_,
        "word_counts_per_confusion_set": set_counts,
        "chosen_sets": ["/".join(cs) for cs in chosen],
        "results": results,
        "across_sets": _across_sets(results),
        "primal_vs_dual_prediction_split0": timing,
        "preprocessing_seconds": prep_seconds,
        "total_seconds": time.time() - started,
        "machine_note": "shared 2-core machine, other agents running: timings are indicative only",
    }
    return report
