"""``report.html``: a right-to-left override (U+202E) or other bidi control in a name, identifier or detail from an
input file reorders only that text, never the numbers printed after it.

Before: a compound named ``caffeine <U+202E>EXE.fdp`` made the section header read ``... confidence 437.0`` for a
confidence of 0.734 (the override ran on to the end of the line). Checked in a real headless Chromium, by where the
browser places the digits of the confidence; and in the markup, for a quick check where no browser is installed.
"""

import re
import shutil
import subprocess

import pytest

from iokr.apps.metabolites.exporting._report_page import ReportCandidates, report_html

pytest.importorskip("rdkit")

from test_identify_report import _rows  # noqa: E402 - after the rdkit skip

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
BROWSER = next((path for path in map(shutil.which, BROWSERS) if path), None)
RLO, PDI_FREE_NAME = "\u202e", "caffeine \u202eEXE.fdp"


def _hostile_page():
    ident, candidates, spectra = _rows()
    ident[0]["identifier"] = candidates[0]["identifier"] = f"CID{RLO}2519"
    ident[0]["name"] = candidates[0]["name"] = PDI_FREE_NAME
    ident[2]["detail"] = f"none for mass {RLO}999.49 +- 10 ppm"
    ident[3]["adduct"] = f"[M+{RLO}Foo]+"
    return report_html(ident, ReportCandidates.of(candidates), spectra, {"spectra": f"q{RLO}.mgf"})


def test_file_text_in_the_section_headers_is_bidi_isolated():
    page = _hostile_page()
    headers = re.findall(r'<p class="meta">(.*?)</p>', page)
    assert len(headers) == 4
    for header in headers:
        # every override sits inside an isolate that closes before the next text of ours
        outside = re.sub(r"<bdi>[^<]*</bdi>", "", header)
        assert RLO not in outside, header
    assert f"<bdi>{PDI_FREE_NAME}</bdi>, confidence 0.734" in headers[0]


@pytest.mark.skipif(BROWSER is None, reason=f"no Chromium binary ({', '.join(BROWSERS)} not on PATH): "
                                            "apt-get install chromium (.ci/run does)")
def test_an_override_in_a_name_never_reverses_the_confidence_on_screen(tmp_path):
    # the driver finds the header text "0.734" and asks the browser where its first and last digit are drawn
    driver = """<script>
      var meta = document.querySelector('#q-0 .meta'), walker = document.createTreeWalker(meta, NodeFilter.SHOW_TEXT);
      var node, where = 'not found';
      while ((node = walker.nextNode())) {
        var k = node.data.indexOf('0.734');
        if (k < 0) continue;
        var first = document.createRange(), last = document.createRange();
        first.setStart(node, k); first.setEnd(node, k + 1); last.setStart(node, k + 4); last.setEnd(node, k + 5);
        where = first.getBoundingClientRect().left < last.getBoundingClientRect().left ? 'ltr' : 'reversed';
      }
      document.body.setAttribute('data-digits', where);
    </script></body>"""
    page = tmp_path / "report.html"
    page.write_text(_hostile_page().replace("</body>", driver), encoding="utf-8")
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
               "--virtual-time-budget=3000", "--window-size=1400,900", "--dump-dom", page.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r'data-digits="([^"]*)"', done.stdout).group(1) == "ltr"
