"""Export extra English text (public domain / PSF-licensed) from Debian packages to one JSONL file.

Usage (after `apt-get download sword-text-web python3.11-doc dict-devil` and `dpkg-deb -x <deb> ex` for each;
pysword 0.2.8 from PyPI reads the SWORD module):

    python export_english_text.py ex english_text.paragraphs.jsonl.gz

One JSON object per line: {"source": "web" | "pydoc" | "devil", "doc": <document id>, "text": <paragraph>}.
Documents: a WEB chapter ("Gen.1"), a Python documentation page ("tutorial/controlflow"), one Devil's Dictionary entry.
"""
import gzip
import json
import os
import re
import sys

root, out_path = sys.argv[1], sys.argv[2]
records = []

# --- World English Bible (public domain), verse by verse, a chapter per document.
from pysword.modules import SwordModules  # noqa: E402

mods = SwordModules(os.path.join(root, "usr/share/sword"))
mods.parse_modules()
bible = mods.get_bible_from_module("engWEB2015eb")
books = bible.get_structure().get_books()
for testament in ("ot", "nt"):
    for book in books[testament]:
        for ch in range(1, book.num_chapters + 1):
            for v in range(1, book.chapter_lengths[ch - 1] + 1):
                t = re.sub(r"\s+", " ", bible.get(books=[book.osis_name], chapters=[ch], verses=[v], clean=True)).strip()
                if t:
                    records.append({"source": "web", "doc": f"{book.osis_name}.{ch}", "text": t})
n_web = len(records)

# --- Python 3.11 documentation (PSF License Version 2): prose paragraphs of the reST sources.
ROLE = re.compile(r":[a-z:]+:`!?~?([^`<]*?)(?:\s*<[^>]*>)?`")
LINK = re.compile(r"`([^`<]+?)\s*<[^>]*>`_+")
LIT = re.compile(r"``([^`]+)``")
src = os.path.join(root, "usr/share/doc/python3.11/html/_sources")
for dirpath, _, files in sorted(os.walk(src)):
    for name in sorted(files):
        if not name.endswith(".rst.txt"):
            continue
        path = os.path.join(dirpath, name)
        doc = os.path.relpath(path, src)[: -len(".rst.txt")]
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        para, in_code = [], False
        def flush(para=para, doc=doc):  # bound now: one paragraph buffer and document per file
            text = " ".join(para).strip()
            para.clear()
            text = LIT.sub(r"\1", LINK.sub(r"\1", ROLE.sub(r"\1", text)))
            text = re.sub(r"[*`|]", "", text)
            text = re.sub(r"\s+", " ", text).strip()
            if len(text.split()) >= 5:
                records.append({"source": "pydoc", "doc": doc, "text": text})
        for line in lines:
            if not line.strip():
                flush()
                continue
            if line[0] in " \t":  # indented: code blocks, directive bodies, nested lists
                flush()
                continue
            if line.startswith(".. ") or re.fullmatch(r"[=\-~^*#+\"'`:.]{3,}", line.strip()) or line.startswith(("+", "|")):
                flush()
                continue
            if line.rstrip().endswith("::"):
                para.append(line.rstrip()[:-1])
                flush()
                continue
            para.append(line.strip())
        flush()
n_pydoc = len(records) - n_web

# --- The Devil's Dictionary (Ambrose Bierce, 1911; public domain): one entry per document.
with gzip.open(os.path.join(root, "usr/share/dictd/devil.dict.dz"), "rt", encoding="utf-8", errors="replace") as f:
    raw = f.read()
entries = re.split(r"\n(?=[A-Z][A-Z' ,.-]+, [a-z.]+)", raw)
for k, entry in enumerate(entries):
    text = re.sub(r"\s+", " ", entry).strip()
    if len(text.split()) >= 5:
        records.append({"source": "devil", "doc": f"devil.{k}", "text": text})
n_devil = len(records) - n_web - n_pydoc

with gzip.open(out_path, "wt", encoding="utf-8", compresslevel=9) as f:
    for r in records:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
print({"web_verses": n_web, "pydoc_paragraphs": n_pydoc, "devil_entries": n_devil})
