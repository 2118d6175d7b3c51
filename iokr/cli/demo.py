"""``iokr demo``: the README's main job on bundled real data.

Metabolite identification: train IOKR on the bundled MassBank subsets, one sub-model for [M+H]+ and one for [M-H]-
(structure-disjoint from the candidate lists' true structures, hyperparameters by cross-validation on training
structures), rank the 60 bundled PubChem candidate lists with the positive spectra of their true structures, and
those lists whose true structure has [M-H]- spectra with the negative ones; print the top-k tables (positive next to
the published model's) and write a PNG + HTML report with top-k curves (positive).
"""

from __future__ import annotations

from pathlib import Path

from ._output import CommandError, output_folder, write_json
from .metabolites import _load_app, _log, _progress, summary_table


def register(subparsers):
    parser = subparsers.add_parser("demo", help="run the main job (metabolite identification) on the bundled data")
    parser.add_argument("--output", default="results/demo", help="folder for summary.json and the report")
    parser.add_argument("--folds", type=int, default=3)
    parser.set_defaults(func=run)


def run(args):
    from ..datasets._metabolites import BUNDLED_METABOLITES
    from ._report import write_report

    if args.folds < 2:  # as train and evaluate: a 0- or 1-fold "CV" chooses nothing
        raise CommandError(f"--folds must be >= 2, got {args.folds}.")
    inputs = {f"bundled {key}": path for key, path in BUNDLED_METABOLITES.items()}
    out = Path(args.output)
    with output_folder(out, overwrite=args.overwrite, inputs=inputs) as tmp:
        app = _load_app()
        print("Metabolite identification on the bundled MassBank subsets ([M+H]+ and [M-H]-) and 60 PubChem "
              "candidate lists")
        # the app's default grid, chosen by CV on the full training data
        summary = app.evaluate([BUNDLED_METABOLITES["spectra"], BUNDLED_METABOLITES["negative_spectra"]],
                               BUNDLED_METABOLITES["candidates"], app.TrainingConfig(n_folds=args.folds),
                               fingerprint_cache=BUNDLED_METABOLITES["fingerprint_cache"],
                               model_output=tmp / "model.npz", feedback=app.Feedback(_progress, _log)).summary
        write_json(tmp / "summary.json", summary)
        for mode, part in summary["per_polarity"].items():
            print(f"{mode} ({part['precursor_type']}): {part['n_lists_with_spectra']} of {part['n_lists']} lists have "
                  f"query spectra; {part['n_query_spectra']} query spectra; trained on {part['n_train_structures']} "
                  f"structures (alpha={part['chosen']['alpha']} by {args.folds}-fold CV; MKL weights "
                  f"{[round(w, 2) for w in part['weights']]})")
        print(summary_table(summary))
        png, page = write_report(summary, tmp)
    print(f"report: {out / png.name}, {out / page.name}; summary: {out / 'summary.json'}; model: {out / 'model.npz'}")
    print("identify your own spectra with this model (trained without the 60 lists' true structures):\n"
          f"  iokr metabolites identify --model {out / 'model.npz'} --spectra YOUR.mgf --candidates "
          "YOUR_STRUCTURES.csv --output identified/")
    return 0
