"""``iokr multilabel``: IOKR over the label sets seen in training (Mulan ARFF files)."""

from __future__ import annotations

from pathlib import Path

from ._output import Progress, format_table, output_folder, write_json

# The app (numpy, scikit-learn) is imported when the command runs, not when `iokr --help` builds the parsers.
SCALING_CHOICES = ("auto", "none", "standard")


def register(subparsers):
    parser = subparsers.add_parser("multilabel", help="multi-label prediction with IOKR (Mulan ARFF)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    evaluate = actions.add_parser("evaluate", help="CV-selected IOKR, example-based F1 on the test split")
    evaluate.add_argument("--train", required=True, help="training ARFF (.arff or .arff.gz)")
    evaluate.add_argument("--test", required=True, help="test ARFF")
    evaluate.add_argument("--labels", type=int, required=True, help="number of label attributes (last ones)")
    evaluate.add_argument("--alphas", type=float, nargs="+", default=None,
                          help="alpha grid (default: 15 values from 1e-4 to 1e3, log-spaced; ties go to the larger alpha)")
    evaluate.add_argument("--gamma-scales", type=float, nargs="*", default=None,
                          help="Gaussian gammas as multiples of 1 / median squared distance of the (scaled) training "
                               "inputs (default: 4^-5 ... 4^2, a factor 4 apart; linear kernel always tried)")
    evaluate.add_argument("--gammas", type=float, nargs="*", default=None,
                          help="instead of --gamma-scales: fixed Gaussian gammas, times 1/n_features")
    evaluate.add_argument("--scaling", choices=SCALING_CHOICES, default="auto",
                          help="feature standardization: 'auto' chooses on/off by CV with refits on training data")
    evaluate.add_argument("--cv", type=int, default=5, help="cross-validation folds on the training split (default: 5)")
    evaluate.add_argument("--output", required=True, help="folder for summary.json (and the report)")
    evaluate.add_argument("--report", action="store_true",
                          help="also write report.html with PNG figures (top-k curve of the true label set's rank "
                               "among the candidate label sets, per-example ranks, timings)")
    evaluate.set_defaults(func=run_evaluate)


def run_evaluate(args):
    from ..apps.multilabel import (
        DEFAULT_ALPHAS,
        DEFAULT_GAMMA_SCALES,
        OUTPUT_NORMALIZATIONS,
        SCALINGS,
        evaluate_multilabel,
    )
    from ..datasets import load_arff
    from ..kernels import Gaussian

    out_dir = Path(args.output)
    with output_folder(out_dir, overwrite=args.overwrite, inputs={"--train": args.train, "--test": args.test}) as tmp:
        X_train, Y_train = load_arff(args.train, args.labels)
        X_test, Y_test = load_arff(args.test, args.labels)
        X_train, X_test = X_train.toarray(), X_test.toarray()
        kernels = None if args.gammas is None else ["linear"] + [Gaussian(g / X_train.shape[1]) for g in args.gammas]
        scalings = SCALINGS if args.scaling == "auto" else (args.scaling,)
        n_arms = len(scalings) * len(OUTPUT_NORMALIZATIONS)
        progress = Progress(n_arms * (2 if n_arms > 1 else 1), "selection steps")
        alphas = DEFAULT_ALPHAS if args.alphas is None else args.alphas
        gamma_scales = DEFAULT_GAMMA_SCALES if args.gamma_scales is None else args.gamma_scales
        result = evaluate_multilabel(X_train, Y_train, X_test, Y_test, alphas=alphas, gamma_scales=gamma_scales,
                                     input_kernels=kernels, scalings=scalings, cv=args.cv, progress=progress)
        rows = [[a["scaling"], a["normalize_output"], a["alpha"], a["input_kernel"], f"{a['closed_form_cv_f1']:.2f}",
                 "" if a["refit_cv_f1"] is None else f"{a['refit_cv_f1']:.2f} +- {a['refit_cv_f1_std']:.2f}"]
                for a in result["arms"]]
        print(format_table(["scaling", "output normalized", "alpha", "input kernel",
                            f"{args.cv}-fold closed-form CV F1 %", f"{args.cv}-fold refit CV F1 %"], rows))
        print(f"selected {result['best']}: test example-F1 {result['f1']:.2f} %, Hamming loss "
              f"{result['hamming']:.4f} ({result['n_candidate_sets']} candidate label sets)")
        write_json(tmp / "summary.json", {**result, "train": str(args.train), "test": str(args.test)})
        if args.report:
            write_report(result, tmp, args.train, args.test)
    if args.report:
        print(f"report: {out_dir / 'report.html'}")
    print(f"summary written to {out_dir / 'summary.json'}")
    return 0


def write_report(result, out_dir, train, test):
    """HTML/PNG report of :func:`~iokr.apps.multilabel.evaluate_multilabel` results."""
    from ._report import write_evaluation_report

    ranks = result["ranks"]
    n_found = sum(r is not None for r in ranks)
    rows = [[result["best"]["alpha"], result["best"]["input_kernel"], f"{result['f1']:.2f}",
             f"{result['hamming']:.4f}", result["n_candidate_sets"], f"{n_found} / {len(ranks)}"]]
    detail = [[q, "" if r is None else f"{r:g}", f"{f:.1f}"]
              for q, (r, f) in enumerate(zip(ranks, result["example_f1"], strict=True))]
    return write_evaluation_report(
        out_dir, title="Multi-label prediction (IOKR over training label sets)",
        rank_sets={"IOKR, true label set among the training label sets": (ranks, len(ranks))},
        timings=result["timings_s"],
        summary_table=(["alpha", "input kernel", "test example-F1 %", "Hamming loss", "candidate label sets",
                        "test sets among candidates"], rows),
        notes=[(f"train {train}, test {test}. Candidates are the distinct label sets of the training data; top-1 "
                "accuracy is the exact-match ratio. A test label set never seen in training cannot be ranked (it "
                "counts as a miss at every k).")],
        detail_table=(["test example", "rank of true set", "example F1 %"], detail))
