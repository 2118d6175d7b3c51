"""``docs/index.md``'s code map is the current tree of ``iokr/`` (issue #29: a newcomer's path from README to the
code that ranks one query is three hops or fewer)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_code_map_in_docs_index_is_current():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "module_tree.py"), "--check"], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr


def test_readme_reaches_the_code_that_ranks_one_query_in_three_hops():
    """README -> docs/index.md -> ranking/_identify.py -> model/_model.py, each hop a link of the page before."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "(docs/index.md#where-the-code-is)" in readme
    links = re.findall(r"\]\((\.\./iokr/[^)]+)\)", index.split("## Where the code is", 1)[1])
    for target in ("../iokr/apps/metabolites/ranking/_identify.py", "../iokr/apps/metabolites/model/_model.py"):
        assert target in links and (ROOT / "docs" / target).resolve().exists()
    ranking = (ROOT / "iokr/apps/metabolites/ranking/_identify.py").read_text(encoding="utf-8")
    assert "def score_queries(" in ranking and "score_sets" in ranking
