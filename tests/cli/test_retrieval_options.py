"""``iokr retrieval evaluate``: the preprocessing flags (--lsa, --standardize), their defaults and their errors."""

import json

import pytest

from iokr.cli.main import main


@pytest.mark.parametrize("option, value, message", [
    ("--lsa", "0", "argument --lsa: expected a positive integer (LSA dimension), 'none' or 'cv', got '0'"),
    ("--lsa", "many", "argument --lsa: expected a positive integer (LSA dimension), 'none' or 'cv', got 'many'"),
    ("--lsa", "1.5", "argument --lsa: expected a positive integer (LSA dimension), 'none' or 'cv', got '1.5'"),
    ("--standardize", "yes", "argument --standardize: expected 'on', 'off' or 'cv', got 'yes'"),
])
def test_bad_values_are_one_line_usage_errors(tmp_path, capsys, option, value, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["retrieval", "evaluate", option, value, "--output", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"iokr retrieval evaluate: error: {message}"
    assert not (tmp_path / "out").exists()


def test_standardizing_the_tfidf_is_refused_before_any_work(tmp_path, capsys):
    code = main(["retrieval", "evaluate", "--lsa", "none", "--standardize", "on", "--output", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert err == ("iokr retrieval evaluate: error: --standardize on needs an LSA dimension (--lsa N or cv), "
                   "not --lsa none\n")
    assert not (tmp_path / "out").exists()


def test_help_describes_the_preprocessing_flags(capsys):
    with pytest.raises(SystemExit):
        main(["retrieval", "evaluate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--lsa LSA LSA dimension per language" in out and "'cv' (default)" in out
    assert "--standardize STANDARDIZE scale every LSA coordinate to unit variance" in out


def test_fixed_features(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["--quiet", "retrieval", "evaluate", "--splits", "1", "--direction", "en-es", "--lsa", "16",
                 "--standardize", "on", "--alpha", "1", "--output", str(out)]) == 0
    assert "IOKR alpha=1.0, features LSA 16 standardized" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["lsa"], summary["standardize"]) == (16, "on")
    assert "features" not in summary["results"]["en-es"]["per_split"][0]


def test_defaults_choose_features_and_alpha_by_cv(tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.warns(UserWarning):  # the bundled subset has 198 training documents: LSA 256-512 are left out
        assert main(["--quiet", "retrieval", "evaluate", "--splits", "1", "--direction", "es-en", "--output",
                     str(out)]) == 0
    assert "IOKR features and alpha by 5-fold CV on each split's training documents (chosen: " in \
        capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["alpha"], summary["lsa"], summary["standardize"]) == ("cv", "cv", "cv")
    record = summary["results"]["es-en"]["per_split"][0]
    assert record["features"]["lsa"] in (None, 16, 32, 64, 128) and record["alpha"] > 0 and 0 < record["cv_mrr"] <= 1
