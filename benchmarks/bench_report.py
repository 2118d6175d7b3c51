"""``identify --report`` at scale (issue #30): size and build time of ``report.html`` for 1,000 and 10,000 queries
(``--quick``: 100 and 1,000), and whether the page opens and filters without freezing in headless Chromium.

The run is made of real data: the query spectra cycle through the bundled MassBank [M+H]+ subset (7,556 spectra),
each ranked query's top hit is its own structure (so the spectrum plot's peaks are annotated under its formula) and
its other 9 candidates come from the bundled PubChem isomer lists (about 30,000 distinct structures), as a run
against a large structure database would look; 80 % of queries are ``ok``, the others ``no candidates`` or
``unsupported adduct``. Measured: :func:`~iokr.apps.metabolites.report_html` wall time (one run, shared 2-core
machine), the page's size and that of its drawings and of the sections' data blocks; then in headless Chromium,
driven through the DevTools protocol (``Runtime.evaluate`` of :data:`DRIVER` once the page has loaded): the time
from navigation to the end of the page's own script (table, section headers and their data parsed: the controls
work from then on, ``interactive_at_ms``) and to the end of the whole page (``parsed_ms``: the sections' data
blocks and drawings follow the script), the script's own setup (``ready_ms``), and for a status filter, a text
filter, clearing both and a column sort: the page script's time for it, and the longest main-thread task
meanwhile (script, style and layout) (tasks over 50 ms, from the Long Tasks API; 0: none). A page "freezes" when one
task blocks input for long: RAIL's budget for a response is 100 ms. The machine's load average is recorded: other
jobs share its 2 cores, which stretches every wall time.
"""

from __future__ import annotations

import csv
import fcntl
import gzip
import io
import json
import os
import re
import select
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from iokr.apps.metabolites import ReportCandidates, Spectra, report_html
from iokr.datasets._metabolites import BUNDLED_METABOLITES

N_CANDIDATES = 10
BROWSER = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
#: Run in the page once it has loaded (DevTools protocol, ``Runtime.evaluate``): each interaction timed by the page
#: itself (``data-*-ms``: its script) and the longest main-thread task meanwhile (Long Tasks API: tasks over 50 ms;
#: 0 when none).
DRIVER = """(async function () {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  while (document.readyState !== 'complete') await sleep(50);
  const nav = performance.getEntriesByType('navigation')[0], body = document.body;
  const out = {parsed_ms: nav.domContentLoadedEventEnd, loaded_ms: nav.loadEventEnd,
               interactive_at_ms: +body.getAttribute('data-interactive-at-ms'),
               ready_ms: +body.getAttribute('data-ready-ms')};
  let longest = 0;
  new PerformanceObserver(list => list.getEntries().forEach(e => { longest = Math.max(longest, e.duration); }))
    .observe({type: 'longtask'});
  async function timed(name, act, attr) {
    body.removeAttribute(attr); await sleep(300); longest = 0;
    act();
    while (!body.hasAttribute(attr)) await sleep(5);
    await sleep(300);
    out[name + '_ms'] = +body.getAttribute(attr);
    out[name + '_longest_task_ms'] = longest;
  }
  const pick = document.getElementById('f-status'), text = document.getElementById('f-text');
  await timed('filter_status', () => { pick.value = 'ok'; pick.dispatchEvent(new Event('change')); }, 'data-filter-ms');
  await timed('filter_text', () => { text.value = '12'; pick.dispatchEvent(new Event('change')); }, 'data-filter-ms');
  out.shown_after_filters = document.getElementById('count').textContent;
  await timed('filter_clear', () => { text.value = ''; pick.value = ''; pick.dispatchEvent(new Event('change')); },
              'data-filter-ms');
  await timed('sort', () => document.querySelector('#queries .head [data-key=confidence]').click(), 'data-sort-ms');
  out.n_sections = document.querySelectorAll('section.query').length;
  return out;
})()"""


def _evaluate_in_chromium(url, expression, workdir, timeout=900):
    """Open ``url`` in headless Chromium and return the value of an (async) JavaScript expression, through the
    DevTools protocol on ``--remote-debugging-pipe`` (file descriptors 3 and 4: no network, no websocket library)."""
    commands_read, commands_write = os.pipe()
    replies_read, replies_write = os.pipe()
    # the child's ends moved above 9, so that putting them on 3 and 4 after the fork never overwrites one of them
    for name in ("commands_read", "replies_write"):
        fd = locals()[name]
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        if name == "commands_read":
            commands_read = high
        else:
            replies_write = high

    def pipes_as_3_and_4():
        os.dup2(commands_read, 3)
        os.dup2(replies_write, 4)

    process = subprocess.Popen(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", f"--user-data-dir={workdir / 'profile'}",
         "--remote-debugging-pipe", "about:blank"],
        # the pipes land on 3 and 4 after the fork; every other descriptor of ours is close-on-exec already
        close_fds=False, preexec_fn=pipes_as_3_and_4,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(commands_read)
    os.close(replies_write)
    buffer, deadline = b"", time.monotonic() + timeout

    def call(message_id, method, params=None, session=None):
        nonlocal buffer
        message = {"id": message_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(commands_write, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in buffer:
                if not select.select([replies_read], [], [], max(deadline - time.monotonic(), 0))[0]:
                    raise TimeoutError(f"Chromium did not answer {method}")
                chunk = os.read(replies_read, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe during {method}")
                buffer += chunk
            raw, buffer = buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    try:
        pages = []
        while not pages:
            pages = [t for t in call(1, "Target.getTargets")["targetInfos"] if t["type"] == "page"]
        session = call(2, "Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True})["sessionId"]
        call(3, "Page.navigate", {"url": url}, session)  # from about:blank, once attached: timing starts here
        result = call(4, "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True},
                      session)
        call(5, "Browser.close")
        return result["result"]["value"]
    finally:
        os.close(commands_write)
        os.close(replies_read)
        process.wait(timeout=60)


def _structures(limit):
    """SMILES of up to ``limit`` structures of the bundled candidate lists (InChI there)."""
    from rdkit import Chem, RDLogger  # noqa: PLC0415 - RDKit is the optional 'chem' extra

    RDLogger.DisableLog("rdApp.*")
    out = []
    with tarfile.open(BUNDLED_METABOLITES["candidates"]) as tar:
        for member in tar.getmembers():
            if not member.name.endswith(".csv"):
                continue
            for row in csv.DictReader(io.TextIOWrapper(tar.extractfile(member), encoding="utf-8")):
                mol = Chem.MolFromInchi(row["id1"])
                if mol is not None:
                    out.append(Chem.MolToSmiles(mol))
                if len(out) >= limit:
                    return out
    return out


def _run_data(n, records, pool, rng):
    """Identification rows, candidate rows and spectra of ``n`` queries."""
    from rdkit import Chem  # noqa: PLC0415

    ident, candidates, peak_lists, precursors = [], [], [], []
    statuses = rng.choice(["ok", "no candidates", "unsupported adduct"], size=n, p=[0.8, 0.1, 0.1])
    next_candidate = 0
    for i in range(n):
        rec = records[i % len(records)]
        peak_lists.append(np.asarray(rec["peaks"], dtype=float))
        precursors.append(rec["precursor_mz"])
        row = {"query_id": f"F{i}", "precursor_mz": f"{rec['precursor_mz']:.5f}", "adduct": "[M+H]+",
               "query_formula": "", "lookup": "mass", "n_candidates": 0, "status": str(statuses[i]), "detail": "",
               "annotation": ""}
        if statuses[i] == "ok":
            true = Chem.MolToSmiles(Chem.MolFromInchi(rec["inchi"])) if rec["inchi"] not in pool["cache"] else \
                pool["cache"][rec["inchi"]]
            pool["cache"][rec["inchi"]] = true
            smiles = [true] + [pool["smiles"][(next_candidate + k) % len(pool["smiles"])]
                               for k in range(N_CANDIDATES - 1)]
            next_candidate += N_CANDIDATES - 1
            scores = np.sort(rng.normal(size=N_CANDIDATES))[::-1]
            for rank, (s, score) in enumerate(zip(smiles, scores, strict=True), 1):
                candidates.append({"query_id": f"F{i}", "rank": rank, "identifier": f"CID{i}-{rank}",
                                   "name": f"{rec['name']} candidate {rank}" if rank == 1 else f"isomer {rank}",
                                   "smiles": s, "formula": rec["formula_rdkit"] if rank == 1 else "",
                                   "score": f"{score:.6g}", "structure_prior": f"{rng.uniform():.4f}"})
            row.update({"n_candidates": N_CANDIDATES, "identifier": f"CID{i}-1", "name": rec["name"],
                        "score": f"{scores[0]:.6g}", "confidence": f"{rng.uniform():.3f}"})
        else:
            row["detail"] = "synthetic"
        ident.append(row)
    return ident, candidates, Spectra.from_peak_lists(peak_lists, np.array(precursors))


def _in_browser(page, workdir):
    if BROWSER is None:
        return {"browser": "skipped: no chromium"}
    path = workdir / "report.html"
    path.write_text(page, encoding="utf-8")
    t0 = time.perf_counter()
    measured = _evaluate_in_chromium(path.as_uri(), DRIVER, workdir)
    return {"chromium_wall_s": time.perf_counter() - t0, **measured}


def run(quick=False, data_dir=None):
    sizes = (100, 1000) if quick else (1000, 10000)
    records = []
    with gzip.open(BUNDLED_METABOLITES["spectra"], "rt") as handle:
        records = [json.loads(line) for line in handle]
    records = [r for r in records if r.get("inchi") and r.get("precursor_mz") and r.get("precursor_type") == "[M+H]+"]
    pool = {"smiles": _structures(3000 if quick else 30000), "cache": {}}
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        ident, cands, spectra = _run_data(n, records, pool, rng)
        t0 = time.perf_counter()
        page = report_html(ident, ReportCandidates.of(cands), spectra, {"spectra": "benchmark"})
        build = time.perf_counter() - t0
        drawings = re.findall(r'<script type="text/plain" id="s\d+">(.*?)</script>', page, re.S)
        sections = re.findall(r'<script type="(?:application/json|text/plain)" id="[cp]\d+">(.*?)</script>', page,
                              re.S)
        row = {"queries": n, "candidates": len(cands), "structures_drawn": len(drawings), "build_s": build,
               "html_MB": len(page.encode()) / 1e6, "drawings_MB": sum(len(d.encode()) for d in drawings) / 1e6,
               "section_blocks_MB": sum(len(d.encode()) for d in sections) / 1e6,
               "load_average": os.getloadavg()[0]}
        with tempfile.TemporaryDirectory() as tmp:
            row.update(_in_browser(page, Path(tmp)))
        rows.append(row)
        print(row, flush=True)
    return rows


def summary(rows):
    lines = []
    for r in rows:
        if "filter_status_ms" in r:
            tasks = max(r[f"{k}_longest_task_ms"] for k in ("filter_status", "filter_text", "filter_clear", "sort"))
            lines.append(f"- {r['queries']:,} queries: {r['html_MB']:.1f} MB, built in {r['build_s']:.1f} s; "
                         f"controls working {r['interactive_at_ms'] / 1000:.2f} s after navigation, whole page "
                         f"parsed at {r['parsed_ms'] / 1000:.2f} s; filters {r['filter_status_ms']:.0f} / "
                         f"{r['filter_text_ms']:.0f} / {r['filter_clear_ms']:.0f} ms, sort {r['sort_ms']:.0f} ms, "
                         f"longest task meanwhile {tasks:.0f} ms (load average {r['load_average']:.1f} on 2 cores).")
    return "\n".join(lines)
