"""``identify --report`` the way a person uses it: the command writes ``report.html`` beside the tables, and a real
headless Chromium (the system package; ``.ci/run`` installs it) opens the page from disk.

Checked in the DOM after the page's script ran: every query's section, structures drawn (inline SVG) for every
ranked query and none for the others, compound names carrying ``<script>`` and ``<img onerror>`` shown as text and
never run, the filters narrowing the table; and a screenshot written (a real PNG of the window's size). Skips only
when no Chromium binary exists.
"""

import csv
import re
import shutil
import struct
import subprocess

import pytest
from metab_helpers import bundled_lists_and_training, train_small_model

from iokr.cli.main import main

pytest.importorskip("rdkit")

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
BROWSER = next((path for path in map(shutil.which, BROWSERS) if path), None)
SCRIPT_NAME = "<script>document.title='pwned'</script>"
IMG_NAME = "\"><img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"
N_TRAIN, N_PER_LIST = 30, 40


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small model, a structure table whose every name is hostile, five queries of four statuses, and
    ``identify --report`` run on them."""
    root = tmp_path_factory.mktemp("report_run")
    lists, (a, b), train = bundled_lists_and_training(2, N_TRAIN)
    model = train_small_model(root, train)
    table = root / "structures.csv"
    with open(table, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Identifier", "CompoundName", "InChI"])
        n = 0
        for rows in lists:
            for row in rows[:N_PER_LIST]:
                writer.writerow([f"CID{n}", f"{(SCRIPT_NAME, IMG_NAME)[n % 2]} compound {n}", row["id1"]])
                n += 1

    def peaks(r):
        return "\n".join(f"{mz} {i}" for mz, i in r["peaks"])

    blocks = [f"FEATURE_ID=101\nPEPMASS={a['precursor_mz']}\nCHARGE=1+\nFORMULA={a['formula_rdkit']}\n"
              f"ADDUCT=[M+H]+\n{peaks(a)}",
              f"FEATURE_ID=102\nPEPMASS={b['precursor_mz']}\nCHARGE=1+\n{peaks(b)}",
              f"FEATURE_ID=103\nPEPMASS={b['precursor_mz']}\nCHARGE=1+\nADDUCT=[M+Na]+\n{peaks(b)}",
              f"FEATURE_ID=104\nPEPMASS=1000.5\nCHARGE=1+\n{peaks(b)}",
              "FEATURE_ID=105\nPEPMASS=200.1\nCHARGE=1+"]
    mgf = root / "features.mgf"
    mgf.write_text("".join(f"BEGIN IONS\n{b}\nEND IONS\n\n" for b in blocks))
    out = root / "identified"
    assert main(["metabolites", "identify", "--model", str(model), "--spectra", str(mgf), "--candidates",
                 str(table), "--output", str(out), "--top-k", "4", "--report"]) == 0
    return {"root": root, "out": out, "model": model, "mgf": mgf, "table": table,
            "statuses": {"101": "ok", "102": "ok", "103": "unsupported adduct", "104": "no candidates",
                         "105": "no peaks"}}


def test_report_is_written_beside_the_tables_and_only_with_the_flag(run, tmp_path):
    assert sorted(p.name for p in run["out"].iterdir()) == ["parameters.json", "report.html",
                                                            "structure_candidates.tsv",
                                                            "structure_identifications.tsv"]
    page = (run["out"] / "report.html").read_text(encoding="utf-8")
    assert "<img" not in page and SCRIPT_NAME not in page
    # no network: nothing is loaded from anywhere (no src/href to a URL, no @import, no url())
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//)", page) and "@import" not in page
    assert "url(" not in page
    plain = tmp_path / "plain"
    assert main(["metabolites", "identify", "--model", str(run["model"]), "--spectra", str(run["mgf"]),
                 "--candidates", str(run["table"]), "--output", str(plain), "--top-k", "4"]) == 0
    assert not (plain / "report.html").exists()
    # a folder with a previous report is an identify folder: --overwrite replaces it
    assert main(["metabolites", "identify", "--model", str(run["model"]), "--spectra", str(run["mgf"]),
                 "--candidates", str(table := run["table"]), "--output", str(run["out"]), "--top-k", "4",
                 "--report", "--overwrite"]) == 0
    assert table.exists() and (run["out"] / "report.html").exists()


def _chromium(url, tmp_path, *extra):
    """Run headless Chromium on ``url`` with a fresh profile; its stdout."""
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", *extra, url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.skipif(BROWSER is None, reason=f"no Chromium binary ({', '.join(BROWSERS)} not on PATH): "
                                            "apt-get install chromium (.ci/run does)")
def test_page_in_a_real_browser(run, tmp_path):
    page = run["out"] / "report.html"
    dom = _chromium(page.as_uri(), tmp_path, "--virtual-time-budget=5000", "--dump-dom")
    assert "data-ready-ms=" in dom  # the page's script ran to its end
    # the injected script and handler never ran; their text is on the page
    assert "pwned" not in re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0] and "<img" not in dom
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt; compound" in dom
    assert "\"&gt;&lt;img src=x onerror=\"document.body.setAttribute('data-pwned','1')\"&gt; compound" in dom
    sections = re.findall(r'<section class="query" id="q-(\d+)" data-row="\d+" data-filled="">(.*?)</section>',
                          dom, re.S)
    assert [int(i) for i, _ in sections] == list(range(len(run["statuses"])))
    for (_, body), (query, status) in zip(sections, run["statuses"].items(), strict=True):
        assert f"<h2>{query}</h2>" in body and status in body
        drawings = body.count('class="mol"')
        cards = len(re.findall(r'class="card( top)?"', body))
        if status == "ok":
            assert drawings == cards >= 1 and "<path" in body
        else:
            assert drawings == cards == 0 and "no structure to show" in body
    # the spectra of the queries with peaks are plotted
    assert [body.count('class="spectrum"') for _, body in sections] == [1, 1, 1, 1, 0]
    screenshot = tmp_path / "report.png"
    _chromium(page.as_uri(), tmp_path, "--virtual-time-budget=5000", f"--screenshot={screenshot}",
              "--window-size=1400,1000")
    png = screenshot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1400, 1000)
    assert len(png) > 30_000  # a page of tables, drawings and plots, not a blank window


@pytest.mark.skipif(BROWSER is None, reason=f"no Chromium binary ({', '.join(BROWSERS)} not on PATH): "
                                            "apt-get install chromium (.ci/run does)")
def test_filters_in_a_real_browser(run, tmp_path):
    """The status and text filters and a column sort (ascending, then descending; queries without a score last),
    driven by a script added to a copy of the page."""
    driver = """<script>
      function shown() {  // the rows on screen, top to bottom
        return Array.prototype.filter.call(document.querySelectorAll('#queries .rows .row'),
          function (tr) { return !tr.hidden; }).sort(function (a, b) {
            return a.getBoundingClientRect().top - b.getBoundingClientRect().top;
          }).map(function (tr) { return tr.firstChild.textContent; }).join(','); }
      var pick = document.getElementById('f-status'), text = document.getElementById('f-text');
      var out = [];
      pick.value = 'ok'; pick.dispatchEvent(new Event('change')); out.push(shown());
      pick.value = ''; pick.dispatchEvent(new Event('change'));
      text.value = '104'; text.dispatchEvent(new Event('input'));
      setTimeout(function () {
        out.push(shown(), document.getElementById('count').textContent);
        text.value = ''; text.dispatchEvent(new Event('input'));
        setTimeout(function () {
          var score = document.querySelector('#queries .head [data-key=score]');
          score.click(); out.push(shown());
          score.click(); out.push(shown());
          document.body.setAttribute('data-driver', out.join('|'));
        }, 50);
      }, 50);
    </script></body>"""
    copy = tmp_path / "driven.html"
    copy.write_text((run["out"] / "report.html").read_text(encoding="utf-8").replace("</body>", driver),
                    encoding="utf-8")
    dom = _chromium(copy.as_uri(), tmp_path, "--virtual-time-budget=5000", "--dump-dom")
    assert re.search(r'data-driver="([^"]*)"', dom).group(1).split("|") == [
        "101,102", "104", "1 of 5 queries shown", "102,101,103,104,105", "101,102,103,104,105"]
