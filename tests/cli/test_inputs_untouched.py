"""The whole CLI test suite checks that no command modifies its inputs (tests/conftest.py wraps ``main``)."""

from input_guard import _input_paths, _tree_digest

from iokr.cli.main import main


def test_every_cli_call_in_the_tests_is_checked():
    assert getattr(main, "_checks_inputs", False)


def test_input_paths_are_every_existing_path_but_the_outputs(tmp_path):
    spectra, db, out, store = (tmp_path / n for n in ("q.mgf", "db.csv", "out", "s.sqlite"))
    for p in (spectra, db, store):
        p.write_text("x")
    out.mkdir()
    argv = ["metabolites", "identify", "--spectra", str(spectra), "--candidates", str(db), "--output", str(out),
            "--store", str(store)]
    assert _input_paths(argv) == [spectra, db]
    # an output that is also given as an input stays an input (the command must refuse it)
    assert _input_paths(["x", "--candidates", str(db), "--output", str(db)]) == [db, db]
    before = _tree_digest(tmp_path)
    (out / "new").write_text("y")
    assert _tree_digest(tmp_path) != before
