"""Multi-label prediction with IOKR: candidates are the label sets seen in training (Mulan ARFF data).

User guide: docs/multilabel.md. Needs a Mulan data set folder (not bundled), e.g. from the shared data:

    python examples/multilabel.py DATA/multilabel/emotions [--report DIR]

The folder holds ``<name>-train.arff(.gz)``, ``<name>-test.arff(.gz)`` and ``<name>.xml`` (the label names).
"""
# requires-data: multilabel/emotions

import argparse
import re
import tempfile
from pathlib import Path

from iokr.apps.multilabel import evaluate_multilabel
from iokr.datasets import load_arff

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("folder", help="Mulan data set folder, e.g. DATA/multilabel/emotions")
parser.add_argument("--report", default=None, help="folder for report.html and its figures (default: a temp dir)")
args = parser.parse_args()

folder = Path(args.folder)
name = folder.name
n_labels = len(re.findall(r"<label\b", (folder / f"{name}.xml").read_text(encoding="utf-8", errors="replace")))
paths = {part: next(folder.glob(f"{name}-{part}.arff*")) for part in ("train", "test")}
X_train, Y_train = load_arff(paths["train"], n_labels)
X_test, Y_test = load_arff(paths["test"], n_labels)
X_train, X_test = X_train.toarray(), X_test.toarray()
print(f"{name}: {X_train.shape[0]} train / {X_test.shape[0]} test examples, {X_train.shape[1]} features, "
      f"{n_labels} labels")

# Defaults: standardization and output normalization on/off, alpha and the input kernel, all chosen by 5-fold CV on
# the training split.
result = evaluate_multilabel(X_train, Y_train, X_test, Y_test, cv=5)
print(f"selected {result['best']}; test example-F1 {result['f1']:.2f} %, Hamming loss {result['hamming']:.4f}, "
      f"{result['n_candidate_sets']} candidate label sets")
found = [r for r in result["ranks"] if r is not None]
print(f"true label set among the candidates for {len(found)} of {len(result['ranks'])} test examples; "
      f"exact matches {sum(r == 1 for r in found)}")

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("matplotlib is not installed: no report (pip install 'iokr[plot]')")
else:
    from iokr.cli.multilabel import write_report

    out = Path(args.report) if args.report else Path(tempfile.mkdtemp(prefix="iokr_multilabel_"))
    print("report:", write_report(result, out, paths["train"], paths["test"])["html"])
