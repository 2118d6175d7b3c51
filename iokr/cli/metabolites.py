"""``iokr metabolites train | identify | evaluate``: metabolite identification from MS/MS spectra."""

from __future__ import annotations

import argparse
import math
import os
import stat
from pathlib import Path

# The app's defaults and output schema import nothing heavy (`iokr --help` stays free of numpy): the help texts
# and the cheap path checks read them from their one place.
from ..apps.metabolites import defaults
from ..apps.metabolites.exporting._schema import CANDIDATES_FILE, IDENTIFY_FILES, REPORT_FILE
from ._output import CommandError, check_outputs, format_table, log, output_folder, progress, write_atomic, write_json

TOP_KEYS = ("top1", "top5", "top10", "top20")


# The jobs' progress factory and status lines: tqdm bars on a terminal, a line per stage otherwise, silent with
# --quiet (one mechanism for every subcommand, in ._output).
_progress = progress
_log = log


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

    from ..apps.metabolites import FINGERPRINT_PARTS

    parts = text.split("+")
    if not parts or any(p not in FINGERPRINT_PARTS for p in parts) or len(set(parts)) != len(parts):
        raise argparse.ArgumentTypeError(f"expected distinct parts from {', '.join(FINGERPRINT_PARTS)} joined by "
                                         f"'+', got {text!r}")
    return text


def _worker_count(text):
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of worker processes >= 1, got {text!r}") from None
    if value < 1:  # 0 and joblib's -1 ("all CPUs") were run as 1 process without a word
        raise argparse.ArgumentTypeError(f"expected a number of worker processes >= 1, got {value} (leave it out "
                                         "for the number of CPUs)")
    return value


def _model_options(args, app):
    """The train / evaluate jobs' :class:`TrainingConfig` from the shared options (app defaults when not given)."""
    fingerprint = dict(defaults.DEFAULT_FINGERPRINT)
    if args.fingerprint is not None:
        fingerprint["kind"] = args.fingerprint
    if args.fingerprint_radius is not None:
        fingerprint["radius"] = args.fingerprint_radius
    return app.TrainingConfig(fingerprint=fingerprint, grid=_grid(args, defaults.DEFAULT_GRID),
                               surrogate=args.cv_lists or defaults.DEFAULT_SURROGATE, n_folds=args.folds,
                               seed=args.seed, store_path=args.store, prior_weight=args.prior_weight,
                               prior_neighbors=args.prior_neighbors,
                               decoys=_decoys_option(args.calibration_decoys, defaults.DEFAULT_CALIBRATION_DECOYS))


def _decoys_option(value, default):
    """``--calibration-decoys``: a decoy table path, "none" (training-structure lists), "bundled" (the bundled MOSES
    table), or the app's default when not given."""
    value = default if value is None else value
    if value is None:
        return None
    if value == "bundled":
        from ..apps.metabolites.candidates._decoys import BUNDLED_DECOYS  # noqa: PLC0415 - the app loads lazily

        return BUNDLED_DECOYS
    return None if value == "none" else value


def _add_model_options(parser):
    parser.add_argument("--fingerprint", default=None, type=_fingerprint_kind,
                        help="fingerprint parts joined by '+' (morgan, fcfp, rdkit, atompair, torsion as _counts "
                             "or _bits; maccs), e.g. morgan_counts+maccs (default: the app's CV-chosen kind)")
    parser.add_argument("--fingerprint-radius", type=int, default=None,
                        help="radius of the Morgan / FCFP parts (default: the app's CV-chosen radius)")
    parser.add_argument("--cv-lists", default=None, choices=defaults.SURROGATES,
                        help="cross-validation candidate lists: the held-out fold, same-formula training "
                             "structures, or the mean of both scores (default: the app's setting)")
    parser.add_argument("--alphas", type=float, nargs="+", default=None,
                        help="regularization values searched by cross-validation (default: the app's grid)")
    parser.add_argument("--output-kernels", nargs="+", default=None, choices=["gaussian_tanimoto", "tanimoto"],
                        help="output kernels searched by cross-validation (default: the app's grid)")
    parser.add_argument("--output-gammas", type=float, nargs="+", default=None,
                        help="Gaussian-Tanimoto output widths searched by cross-validation (default: the app's grid)")
    parser.add_argument("--folds", type=int, default=defaults.DEFAULT_FOLDS,
                        help=f"cross-validation folds over training structures (default: {defaults.DEFAULT_FOLDS})")
    parser.add_argument("--seed", type=int, default=defaults.DEFAULT_SEED,
                        help=f"seed of the random structure folds (default: {defaults.DEFAULT_SEED})")
    parser.add_argument("--store", default=None, help="SQLite candidate store caching parsed structures and "
                        "fingerprints (default: in memory)")
    parser.add_argument("--prior-weight", type=float, default=None,
                        help="weight of the structure prior (candidates similar to the training structures score "
                             "higher); 0 ranks by the spectrum alone (default: the app's cross-validated value)")
    parser.add_argument("--prior-neighbors", type=int, default=None,
                        help="training structures the structure prior averages over, at most all of them "
                             "(default: the app's value)")
    parser.add_argument("--calibration-decoys", default=None, metavar="FILE",
                        help="decoy table of the confidence calibration (.tsv/.csv, optionally .gz, a 'smiles' and "
                             "optionally a 'formula' column): held-out training structures are ranked among its "
                             "non-library isomers and nearest-mass structures; 'none': among training structures "
                             "only; 'bundled': the bundled MOSES subset (the default)")
    parser.add_argument("--min-structures", type=int, default=None,
                        help="training structures a precursor type needs for a sub-model of its own when the "
                             "spectra mix types; the most frequent type is always trained (default: the app's "
                             "value)")


IDENTIFY_HELP = """\
Rank candidate structures for every query spectrum and write, into the --output folder:
  structure_identifications.tsv  one row per query: id, precursor m/z, adduct, formula or mass window used,
                                 number of candidates, the top hit (identifier, name, InChIKey, SMILES, ...),
                                 score, confidence (probability that the top hit is right), status, detail
  structure_candidates.tsv       the top-k candidates per query with every column of the candidate source, the
                                 score and the structure prior (similarity to the nearest training structures)
  parameters.json                the run's settings, sources and status counts
Candidates of a query: those of its molecular formula (FORMULA= in any element order), else those whose
monoisotopic mass is within --ppm of the neutral mass from the precursor m/z and the adduct.
Score: the model's spectrum score plus its structure prior (the candidate's mean similarity to its nearest
training structures, weighted as chosen by cross-validation); candidates resembling known compounds rank higher.
--prior-weight 0 ranks by the spectrum alone (for compounds unlike any known one).

examples:
  iokr metabolites index structures.csv --output structures.sqlite
  iokr metabolites identify --spectra features.mgf --candidates structures.sqlite --output results/
  iokr metabolites identify --model model.npz --spectra q.mgf --candidates lists.tar.gz --output out/ --top-k 20
"""

#: The spectra files the commands read (:func:`iokr.apps.metabolites.read_spectra`), as the help texts name them.
SPECTRA_FORMATS = ".mgf, .msp, .mzML, .mzXML, .json or MassBank .jsonl, each optionally .gz"


def register(subparsers):
    parser = subparsers.add_parser(
        "metabolites", help="identify metabolites from MS/MS spectra", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Metabolite identification: train IOKR on spectra of known structures, index a structure "
                    "database, identify query spectra, evaluate on candidate lists.",
        epilog="examples:\n"
               "  iokr metabolites index structures.csv --output structures.sqlite\n"
               "  iokr metabolites identify --spectra features.mgf --candidates structures.sqlite --output out/\n"
               "  iokr metabolites train --spectra massbank.jsonl.gz --output model.npz\n"
               "  iokr metabolites evaluate --spectra massbank.jsonl.gz --candidates lists.tar.gz --output eval/")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    train = actions.add_parser("train", help="train a model on spectra of known structures")
    train.add_argument("--spectra", required=True, nargs="+", action="extend", metavar="FILE",
                       help=f"training spectra with structures (InChIKey, or SMILES/InChI): {SPECTRA_FORMATS}; "
                            "several files (or the flag repeated) train one model file with one sub-model per "
                            "precursor type with enough structures (types from each spectrum's adduct, ion mode "
                            "and charge)")
    train.add_argument("--output", required=True, help="model file to write (.npz)")
    train.add_argument("--exclude-candidates", default=None,
                       help="candidate lists whose true structures must not be trained on (default: none)")
    _add_model_options(train)
    train.set_defaults(func=run_train)

    identify = actions.add_parser(
        "identify", help="rank candidate structures for query spectra (writes a folder of tables)",
        formatter_class=argparse.RawDescriptionHelpFormatter, description=IDENTIFY_HELP)
    identify.add_argument("--model", default=None,
                          help="model file written by 'train' or 'demo' (default: the ready model, trained from "
                               "the bundled MassBank [M+H]+ and [M-H]- spectra on first use, about a minute, and "
                               "cached in $IOKR_CACHE_DIR, else $XDG_CACHE_HOME/iokr, else ~/.cache/iokr; it ranks "
                               "positive and negative singly charged queries, other types per --adduct-policy)")
    identify.add_argument("--spectra", required=True,
                          help=f"query spectra: {SPECTRA_FORMATS}")
    identify.add_argument("--candidates", required=True,
                          help="a structure database built by 'index' (.sqlite), one CSV/TSV/PSV/SDF of structures "
                               "(indexed for this run), a folder / .tar.gz of per-formula lists "
                               "(scoring_list=<FORMULA>_...), or per-query lists: a folder / .tar.gz of "
                               "<query_id>.csv|.tsv|.psv|.sdf files, or one table with a query_id column")
    identify.add_argument("--output", required=True,
                          help="folder to write: structure_identifications.tsv, structure_candidates.tsv, "
                               "parameters.json (and report.html with --report)")
    identify.add_argument("--top-k", type=int, default=defaults.DEFAULT_TOP_K,
                          help=f"candidates written per query (default: {defaults.DEFAULT_TOP_K})")
    identify.add_argument("--prior-weight", type=float, default=None,
                          help="weight of the structure prior instead of the model's (0: rank by the spectrum "
                               "alone, e.g. for compounds unlike any known one; no confidence is then reported)")
    identify.add_argument("--ppm", type=float, default=defaults.DEFAULT_PPM,
                          help=f"mass window in ppm for queries without a formula (default: {defaults.DEFAULT_PPM:g})")
    identify.add_argument("--query-id-field", default=None,
                          help="metadata field naming each query, in any case, e.g. FEATURE_ID (default: "
                               "FEATURE_ID, else SCANS, SPECTRUMID / DB# / accession, TITLE, mzML native id, NAME; "
                               "a field that repeats falls back to a unique one, else to record positions, as "
                               "the log and parameters.json say)")
    identify.add_argument("--adduct-policy", choices=defaults.ADDUCT_POLICIES, default=defaults.DEFAULT_ADDUCT_POLICY,
                          help="queries of a precursor type the model was not trained on: 'refuse' (status "
                               "'unsupported adduct' or 'unsupported charge') or 'assume' (ranked by the sub-model of "
                               "their polarity, e.g. [M+Na]+ by [M+H]+, [M+Cl]- by [M-H]-, the neutral mass from "
                               "their own adduct; said in 'detail') (default: refuse)")
    identify.add_argument("--ion-mode", choices=defaults.ION_MODES, default=None,
                          help="ion mode of the queries whose file states none (no adduct, ion-mode field or "
                               "signed charge; MZmine's SIRIUS export writes CHARGE=1); what a file states always "
                               "wins; said in 'detail' (default: such queries are ranked only by a model of one "
                               "polarity, else their status is 'unknown ion mode')")
    identify.add_argument("--store", default=None,
                          help="SQLite cache of parsed structures for candidate lists (default: in memory)")
    identify.add_argument("--report", action="store_true",
                          help="also write report.html: one self-contained page (no network) with a sortable, "
                               "filterable table of the queries and, per query, its top-k candidates drawn as "
                               "structures and its spectrum with the peaks the top hit's formula explains")
    identify.set_defaults(func=run_identify)

    index = actions.add_parser("index", help="build a structure database for candidate lookup by formula or mass",
                               description="Parse every structure of a CSV/TSV/SDF (PubChemLite, MetFrag local "
                                           "databases, any table with a SMILES or InChI column) once: canonical "
                                           "formula, monoisotopic mass, InChIKey, fingerprint and every column.")
    index.add_argument("database",
                       help="structures: .csv (comma or semicolon), .tsv or .sdf, optionally .gz, with a SMILES or "
                            "InChI column; rows whose first InChIKey block repeats an earlier row's (stereoisomers) "
                            "are merged into it, keeping the first row's columns")
    index.add_argument("--output", required=True,
                       help="database file to write (.sqlite), or a folder: a store of shards by mass range, "
                            "resumed when a build there was stopped")
    index.add_argument("--model", default=None,
                       help="store the fingerprints of this model (default: those of the ready model)")
    index.add_argument("--append", action="store_true",
                       help="add DATABASE to the store folder --output (duplicates of its structures merged)")
    index.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="parse on Dask: a scheduler address (tcp://host:8786), or 'local' for a LocalCluster "
                            "of --workers processes (a store folder only)")
    index.add_argument("--workers", type=_worker_count, default=None, metavar="N",
                       help="worker processes parsing structures (default: the number of CPUs)")
    index.set_defaults(func=run_index)

    evaluate = actions.add_parser("evaluate", help="structure-disjoint evaluation on candidate lists")
    evaluate.add_argument("--spectra", required=True, nargs="+", action="extend", metavar="FILE",
                          help="spectra with structures (any format of 'train', one or several files); queries are "
                               "the [M+H]+ and [M-H]- spectra of the lists' true structures, reported per polarity")
    evaluate.add_argument("--candidates", required=True, help=".tar.gz or folder of candidate lists")
    evaluate.add_argument("--output", required=True, help="folder for summary.json (and the model)")
    evaluate.add_argument("--report", action="store_true",
                          help="also write report.html with PNG figures (top-k curves, per-query ranks, timings)")
    _add_model_options(evaluate)
    evaluate.set_defaults(func=run_evaluate)


def _check_common(args):
    if args.folds < 2:
        raise CommandError(f"--folds must be >= 2, got {args.folds}.")
    if args.fingerprint_radius is not None and args.fingerprint_radius < 1:
        raise CommandError(f"--fingerprint-radius must be >= 1, got {args.fingerprint_radius}.")
    if not all(0 < a < math.inf for a in [*(args.alphas or ()), *(args.output_gammas or ())]):
        raise CommandError(f"--alphas and --output-gammas must be positive finite numbers, got {args.alphas} and "
                           f"{args.output_gammas}.")
    _check_prior(args)


def _check_prior(args):
    weight = getattr(args, "prior_weight", None)
    if weight is not None and not (weight >= 0 and math.isfinite(weight)):
        raise CommandError(f"--prior-weight must be a finite number >= 0, got {weight}.")
    if weight == 0:
        args.prior_weight = 0.0  # not -0.0 in the outputs
    neighbors = getattr(args, "prior_neighbors", None)
    if neighbors is not None and neighbors < 1:
        raise CommandError(f"--prior-neighbors must be >= 1, got {neighbors}.")
    min_structures = getattr(args, "min_structures", None)
    if min_structures is not None and min_structures < 1:
        raise CommandError(f"--min-structures must be >= 1, got {min_structures}.")


def _min_structures(args):
    return defaults.DEFAULT_MIN_STRUCTURES if args.min_structures is None else args.min_structures


def _load_app():
    try:
        import rdkit  # noqa: F401 - imported lazily by the app; checked here for a one-line error

        from ..apps import metabolites
    except ImportError as exc:
        raise CommandError(f"metabolite identification needs RDKit and matchms ({exc}); "
                           "pip install 'iokr[chem]'.") from None
    return metabolites


def run_train(args):
    _check_common(args)
    check_outputs({"--output": args.output}, {**_spectra_inputs(args.spectra), "--exclude-candidates":
                                               args.exclude_candidates, "--store": args.store},
                  overwrite=args.overwrite, expect="file")
    app = _load_app()
    result = app.train(args.spectra, args.output, _model_options(args, app),
                       exclude_candidates=args.exclude_candidates, feedback=app.Feedback(_progress, _log),
                       min_structures=_min_structures(args), overwrite=args.overwrite)
    print(f"model written to {result.model} ({result.n_train} training structures; sub-models "
          f"{', '.join(result.submodels)})")
    for precursor_type, sub in result.submodels.items():
        print(f"  {precursor_type}: {sub.n_train} structures; chosen: "
              + ", ".join(f"{k}={sub.chosen[k]}" for k in ("alpha", "output_kernel", "output_gamma",
                                                              "prior_weight", "prior_neighbors"))
              + f"; MKL weights {[round(w, 3) for w in sub.weights]}"
              + (f"; confidence not calibrated ({sub.calibration_problem})" if sub.calibration_problem else ""))
    return 0


def _spectra_inputs(paths):
    """The ``--spectra`` files as named inputs (never overwritten by an output)."""
    return {"--spectra" if len(paths) == 1 else f"--spectra {path}": path for path in paths}


def _resolve_model(args):
    if args.model:
        return args.model
    return _load_app().ensure_default_model(progress=_progress, log=_log)


def _check_identify_paths(args):
    """Every path of ``identify`` checked before the model is loaded (a typo costs no waiting)."""
    for option, value, file in (("--spectra", args.spectra, True), ("--candidates", args.candidates, False),
                                ("--model", args.model, True)):
        if value is None:
            continue
        try:
            mode = os.stat(value).st_mode
        except FileNotFoundError:
            raise CommandError(f"{option} {value} does not exist.") from None
        except OSError as exc:  # a symlink loop, a permission denied on the way
            raise CommandError(f"{option} {value} cannot be read ({exc.strerror}).") from None
        if file and not stat.S_ISREG(mode):
            raise CommandError(f"{option} {value} is not a regular file"
                               + (" (a folder)." if stat.S_ISDIR(mode) else "."))
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise CommandError(f"--output {out} is a file; identify writes a folder ({', '.join(IDENTIFY_FILES)}).")
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in IDENTIFY_FILES)
        if foreign:
            raise CommandError(f"--output {out} holds files identify did not write ({', '.join(foreign[:3])}"
                               f"{', ...' if len(foreign) > 3 else ''}); --overwrite replaces only a previous "
                               "identify folder: choose another folder.")


def run_identify(args):
    if args.top_k < 1:
        raise CommandError(f"--top-k must be >= 1, got {args.top_k}.")
    if not args.ppm > 0:
        raise CommandError(f"--ppm must be > 0, got {args.ppm}.")
    inputs = {"--spectra": args.spectra, "--candidates": args.candidates, "--model": args.model, "--store": args.store}
    if args.store is not None and Path(args.store).resolve() == Path(args.output).resolve():
        raise CommandError(f"--store {args.store} is the --output folder; the store is a file of its own: name "
                           "another path.")
    check_outputs({"--output": args.output}, inputs, overwrite=args.overwrite, expect="folder")
    _check_identify_paths(args)
    app = _load_app()
    _check_prior(args)
    settings = app.IdentifySettings(top_k=args.top_k, ppm=args.ppm, query_id_field=args.query_id_field,
                                     adduct_policy=args.adduct_policy, prior_weight=args.prior_weight,
                                     ion_mode=args.ion_mode)
    model = _resolve_model(args)
    from ..io import ModelFileError  # after the app: iokr.io loads numpy, kept out of `iokr --help`

    with output_folder(args.output, overwrite=args.overwrite, inputs=inputs) as tmp:
        try:
            results, report = _identify_into(tmp, model, args, settings, app)
        except ModelFileError as exc:
            if args.model:
                raise
            # the cached ready model damaged in place (same size, time and inode: its verified stamp still matched)
            _log(f"note: the cached ready model is damaged ({exc}); training it again")
            app.forget_verified_model(model)
            results, report = _identify_into(tmp, _resolve_model(args), args, settings, app)
        app.write_identify_files(results, tmp, report=report)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(results.statuses.items(), key=lambda x: (-x[1], x[0])))
    print(f"{len(results.identifications)} queries: {counts}; tables written to {args.output}"
          + (f"; report: {Path(args.output) / REPORT_FILE}" if report is not None else ""))
    return 0


def _identify_into(tmp, model, args, settings, app):
    """Run ``identify`` streaming the candidate table into the folder ``tmp``; ``(results, report rows or None)``."""
    with open(tmp / CANDIDATES_FILE, "w", encoding="utf-8", newline="") as handle:
        # rows written as they are ranked, not held until the end; the report keeps a few fields of each
        table = app.CandidateTableWriter(handle, keep_for_report=args.report)
        results = app.identify(args.spectra, args.candidates, model, settings, store=args.store,
                               feedback=app.Feedback(_progress, _log), candidate_sink=table)
    return results, table.report


def run_index(args):

    out = Path(args.output)
    if out.suffix.lower() not in (".sqlite", ".db", ".sqlite3"):
        return _run_index_store(args, out)
    if args.append or args.scheduler:
        raise CommandError(f"--{'append' if args.append else 'scheduler'} writes a store folder; --output {out} "
                           "names a single file (.sqlite).")
    check_outputs({"--output": out}, {"DATABASE": args.database, "--model": args.model}, overwrite=args.overwrite,
                  expect="file")
    app = _load_app()
    fingerprinter = app.load_fingerprinter(args.model) if args.model else app.TrainingConfig().fingerprinter()
    with _progress(None, "indexing structures (rows read)") as bar:
        db, stats = app.StructureDatabase.build(args.database, out, fingerprinter, progress=bar, n_jobs=args.workers)
    db.close()
    _print_index_stats(args, stats, f"database written to {out} ({out.stat().st_size / 2**20:.1f} MiB)")
    return 0


def _run_index_store(args, out):
    """``index --output FOLDER``: a store of shards by mass range (new, appended to, or resumed)."""
    app = _load_app()
    ours = app.ShardedStructureDatabase.is_store(out)  # the builder refuses a finished store without --append
    check_outputs({"--output": out}, {"DATABASE": args.database, "--model": args.model},
                  overwrite=args.overwrite or ours, expect="folder")
    fingerprinter = app.load_fingerprinter(args.model) if args.model else app.TrainingConfig().fingerprinter()

    def shard_line(info):
        _log(f"shard {info['done']}/{info['total']} ({info['low']:g}-{info['high']:g} Da): "
             f"{info['n_structures']} structures")

    with _progress(None, "indexing structures (rows read)") as bar:
        store, stats = app.build_store(args.database, out, fingerprinter, append=args.append, n_jobs=args.workers,
                                       scheduler=args.scheduler, progress=bar, on_shard=shard_line)
    store.close()
    resumed = f", {stats['n_chunks_resumed']} of {stats['n_chunks']} chunks resumed" if stats["n_chunks_resumed"] \
        else ""
    _print_index_stats(args, stats, f"store {out}: {stats['n_store_structures']} structures in {stats['n_shards']} "
                                    f"shards ({stats['bytes'] / 2**20:.1f} MiB{resumed})")
    return 0


def _print_index_stats(args, stats, written):
    print(f"{stats['n_structures']} structures indexed from {stats['n_rows']} rows ({stats['n_unparsable']} "
          f"unparsable, {stats['n_missing']} without a structure, {stats['n_duplicates']} duplicates merged) in "
          f"{stats['seconds']:.1f} s ({stats['structures_per_s']:.0f} rows/s); {written}")
    print(f"{stats['n_parents']} salts/mixtures reduced to their parent, {stats['n_neutralized']} charged structures "
          f"neutralized, {stats['n_labelled']} isotope-labelled (indexed at their own formula and mass), "
          f"{stats['n_charged']} permanently charged (indexed at their neutral-equivalent mass, for [M]+ / [M]- "
          f"queries), {stats['n_structure_fallbacks']} read from a later structure column (the first unparsable)")
    if stats.get("windows_1252_lines"):
        print(f"{args.database}: {stats['windows_1252_lines']}")


def summary_table(summary):
    header = ["", "top-1 %", "top-5 %", "top-10 %", "top-20 %"]
    rows = []
    labels = [("per_structure", "IOKR (this run), per structure"), ("per_spectrum", "IOKR (this run), per spectrum"),
              ("published", "published IOKR (list scores)")]
    polarities = summary.get("per_polarity") or {}
    if len(polarities) < 2:  # one polarity: the rows as before polarities
        polarities = {"": summary}
    for mode, part in polarities.items():
        for key, label in labels:
            if key in part and (key != "published" or mode in ("", "positive")):
                rows.append([f"{mode} {label}".strip()] + [f"{part[key][k]:.1f}" for k in TOP_KEYS])
    return format_table(header, rows)


def run_evaluate(args):
    _check_common(args)
    inputs = {**_spectra_inputs(args.spectra), "--candidates": args.candidates, "--store": args.store}
    check_outputs({"--output": args.output}, inputs, overwrite=args.overwrite, expect="folder")
    app = _load_app()
    out_dir = Path(args.output)
    with output_folder(out_dir, overwrite=args.overwrite, inputs=inputs) as tmp:
        summary = app.evaluate(args.spectra, args.candidates, _model_options(args, app),
                               model_output=tmp / "model.npz", feedback=app.Feedback(_progress, _log),
                               min_structures=_min_structures(args)).summary
        write_json(tmp / "summary.json", summary)
        from ._report import markdown_report

        write_atomic(tmp / "summary.md", markdown_report(summary))
        print(f"{summary['n_lists_with_spectra']} of {summary['n_lists']} lists have query spectra; "
              f"{summary['n_query_spectra']} query spectra; trained on {summary['n_train_structures']} structures")
        print(summary_table(summary))
        if args.report:
            from ._report import write_report

            _, page = write_report(summary, tmp)
            print(f"report: {out_dir / page.name}")
    print(f"summary written to {out_dir / 'summary.json'}")
    return 0
