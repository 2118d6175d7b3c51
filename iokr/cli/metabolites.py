"""``iokr metabolites train | identify | evaluate``: metabolite identification from MS/MS spectra."""

from __future__ import annotations

import csv
from pathlib import Path

from ._output import Progress, format_table, write_atomic, write_json

TOP_KEYS = ("top1", "top5", "top10", "top20")


def _progress(total, label):
    return Progress(total, label)


def _log(message):
    import sys

    print(message, file=sys.stderr, flush=True)


def _grid(args, default):
    """The cross-validation grid: the app's default grid, with the values given on the command line."""
    grid = dict(default)
    for key, values in (("alpha", args.alphas), ("output_kernel", args.output_kernels),
                        ("output_gamma", args.output_gammas)):
        if values is not None:
            grid[key] = tuple(values)
    return grid


def _fingerprint_kind(text):
    import argparse

    from ..apps.metabolites._fingerprints import FINGERPRINT_PARTS

    parts = text.split("+")
    if not parts or any(p not in FINGERPRINT_PARTS for p in parts) or len(set(parts)) != len(parts):
        raise argparse.ArgumentTypeError(f"expected distinct parts from {', '.join(FINGERPRINT_PARTS)} joined by "
                                         f"'+', got {text!r}")
    return text


def _model_options(args, jobs):
    """Keyword arguments of the train / evaluate jobs from the shared options (app defaults when not given)."""
    fingerprint = dict(jobs.DEFAULT_FINGERPRINT)
    if args.fingerprint is not None:
        fingerprint["kind"] = args.fingerprint
    if args.fingerprint_radius is not None:
        fingerprint["radius"] = args.fingerprint_radius
    return {"fingerprint": fingerprint, "grid": _grid(args, jobs.DEFAULT_GRID),
            "surrogate": args.cv_lists or jobs.DEFAULT_SURROGATE, "n_folds": args.folds, "seed": args.seed}


def _add_model_options(parser):
    parser.add_argument("--fingerprint", default=None, type=_fingerprint_kind,
                        help="fingerprint parts joined by '+' (morgan, fcfp, rdkit, atompair, torsion as _counts "
                             "or _bits; maccs), e.g. morgan_counts+maccs (default: the app's CV-chosen kind)")
    parser.add_argument("--fingerprint-radius", type=int, default=None,
                        help="radius of the Morgan / FCFP parts (default: the app's CV-chosen radius)")
    parser.add_argument("--cv-lists", default=None, choices=["fold", "formula", "both"],
                        help="cross-validation candidate lists: the held-out fold, same-formula training "
                             "structures, or the mean of both scores (default: the app's setting)")
    parser.add_argument("--alphas", type=float, nargs="+", default=None,
                        help="regularization values searched by cross-validation (default: the app's grid)")
    parser.add_argument("--output-kernels", nargs="+", default=None, choices=["gaussian_tanimoto", "tanimoto"],
                        help="output kernels searched by cross-validation (default: the app's grid)")
    parser.add_argument("--output-gammas", type=float, nargs="+", default=None,
                        help="Gaussian-Tanimoto output widths searched by cross-validation (default: the app's grid)")
    parser.add_argument("--folds", type=int, default=3, help="cross-validation folds over training structures")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", default=None, help="SQLite candidate store caching parsed structures and "
                        "fingerprints (default: in memory)")


def register(subparsers):
    parser = subparsers.add_parser("metabolites", help="identify metabolites from MS/MS spectra")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    train = actions.add_parser("train", help="train a model on spectra of known structures")
    train.add_argument("--spectra", required=True, help="training spectra (MassBank .jsonl(.gz), .mgf, .msp)")
    train.add_argument("--output", required=True, help="model file to write (.npz)")
    train.add_argument("--exclude-candidates", default=None,
                       help="candidate lists whose true structures must not be trained on")
    _add_model_options(train)
    train.set_defaults(func=run_train)

    identify = actions.add_parser("identify", help="rank candidate structures for query spectra")
    identify.add_argument("--model", required=True, help="model file written by 'train'")
    identify.add_argument("--spectra", required=True, help="query spectra (.jsonl(.gz), .mgf, .msp)")
    identify.add_argument("--candidates", required=True,
                          help="one CSV/TSV/SDF (all queries), a folder or .tar.gz of lists (matched by formula), "
                               "or a .sqlite candidate store")
    identify.add_argument("--output", required=True, help="ranked table (.tsv or .csv)")
    identify.add_argument("--top-k", type=int, default=10)
    identify.add_argument("--store", default=None, help="SQLite cache of parsed candidates")
    identify.set_defaults(func=run_identify)

    evaluate = actions.add_parser("evaluate", help="structure-disjoint evaluation on candidate lists")
    evaluate.add_argument("--spectra", required=True, help="spectra in the shared MassBank JSONL format")
    evaluate.add_argument("--candidates", required=True, help=".tar.gz or folder of candidate lists")
    evaluate.add_argument("--output", required=True, help="folder for summary.json (and the model)")
    evaluate.add_argument("--report", action="store_true",
                          help="also write report.html with PNG figures (top-k curves, per-query ranks, timings)")
    _add_model_options(evaluate)
    evaluate.set_defaults(func=run_evaluate)


def _check_common(args):
    from .main import CommandError

    if args.folds < 2:
        raise CommandError(f"--folds must be >= 2, got {args.folds}.")
    if args.fingerprint_radius is not None and args.fingerprint_radius < 1:
        raise CommandError(f"--fingerprint-radius must be >= 1, got {args.fingerprint_radius}.")
    if any(a <= 0 for a in args.alphas or ()) or any(g <= 0 for g in args.output_gammas or ()):
        raise CommandError("--alphas and --output-gammas must be positive.")


def _load_app():
    from .main import CommandError

    try:
        import rdkit  # noqa: F401 - imported lazily by the app; checked here for a one-line error

        from ..apps.metabolites import _jobs
    except ImportError as exc:
        raise CommandError(f"metabolite identification needs RDKit and matchms ({exc}); "
                           "pip install 'iokr[chem]'.") from None
    return _jobs


def run_train(args):
    _check_common(args)
    jobs = _load_app()
    out = jobs.train_job(args.spectra, args.output, exclude_candidates=args.exclude_candidates,
                         store_path=args.store, progress=_progress, log=_log, **_model_options(args, jobs))
    print(f"model written to {out['model']} ({out['n_train']} training structures); chosen: "
          + ", ".join(f"{k}={out['chosen'][k]}" for k in ("alpha", "output_kernel", "output_gamma"))
          + f"; MKL weights {[round(w, 3) for w in out['weights']]}")
    return 0


def run_identify(args):
    from .main import CommandError

    if args.top_k < 1:
        raise CommandError(f"--top-k must be >= 1, got {args.top_k}.")
    jobs = _load_app()
    rows = jobs.identify_job(args.model, args.spectra, args.candidates, top_k=args.top_k, store_path=args.store,
                             progress=_progress, log=_log)
    columns = ["query", "formula", "rank", "inchikey14", "score", "structure", "status"]
    delimiter = "," if str(args.output).lower().endswith(".csv") else "\t"
    import io

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, delimiter=delimiter, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(args.output, buffer.getvalue())
    n_ok = len({r["query"] for r in rows if r.get("status") == "ok"})
    n_bad = len({r["query"] for r in rows if r.get("status") != "ok"})
    print(f"{n_ok} queries ranked, {n_bad} without candidates or peaks; table written to {args.output}")
    return 0


def summary_table(summary):
    header = ["", "top-1 %", "top-5 %", "top-10 %", "top-20 %"]
    rows = []
    labels = [("per_structure", "IOKR (this run), per structure"), ("per_spectrum", "IOKR (this run), per spectrum"),
              ("published", "published IOKR (list scores)")]
    for key, label in labels:
        if key in summary:
            rows.append([label] + [f"{summary[key][k]:.1f}" for k in TOP_KEYS])
    return format_table(header, rows)


def run_evaluate(args):
    _check_common(args)
    jobs = _load_app()
    out_dir = Path(args.output)
    summary = jobs.evaluate_job(args.spectra, args.candidates, store_path=args.store, progress=_progress, log=_log,
                                model_output=out_dir / "model.npz", **_model_options(args, jobs))
    write_json(out_dir / "summary.json", summary)
    from ._report import markdown_report

    write_atomic(out_dir / "summary.md", markdown_report(summary))
    print(f"{summary['n_lists_with_spectra']} of {summary['n_lists']} lists have query spectra; "
          f"{summary['n_query_spectra']} query spectra; trained on {summary['n_train_structures']} structures")
    print(summary_table(summary))
    if args.report:
        from ._report import write_report

        _, page = write_report(summary, out_dir)
        print(f"report: {page}")
    print(f"summary written to {out_dir / 'summary.json'}")
    return 0
