"""Rebuild this corpus from local clones of the source repositories (see PROVENANCE.md).

usage: python make_corpus.py MIRRORS_ROOT
where MIRRORS_ROOT/<owner>+<name>/repo is a git directory of each repository at the commit PROVENANCE.md names.
Copies the files verbatim (git show COMMIT:PATH) and cuts the large MGFs to the records PROVENANCE.md lists.
The hand-written format replicas (files named *_replica.*) are not rebuilt: they are kept as committed.
"""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

# (repository, commit, path in the repository, file here, records kept (1-based, inclusive ranges) or None = whole)
SOURCES = [
    ("matchms/matchms", "8a839cdd92e38c74a4d9946aabd894bc5b0d4764", "tests/testdata/testdata.mgf",
     "matchms/gnps_library_mixed.mgf", None),
    ("matchms/matchms", "8a839cdd92e38c74a4d9946aabd894bc5b0d4764", "tests/testdata/pesticides.mgf",
     "matchms/gnps_pesticides_negative.mgf", None),
    ("matchms/matchms", "8a839cdd92e38c74a4d9946aabd894bc5b0d4764", "tests/testdata/testdata.mzml",
     "matchms/thermo_dda_beer_pos.mzML", None),
    ("matchms/matchms", "8a839cdd92e38c74a4d9946aabd894bc5b0d4764", "tests/testdata/testdata.mzXML",
     "matchms/testdata_neg.mzXML", None),
    ("matchms/matchms", "8a839cdd92e38c74a4d9946aabd894bc5b0d4764", "tests/testdata/massbank_five_spectra.msp",
     "matchms/massbank_five_spectra.msp", None),
    ("matchms/matchms", "8a839cdd92e38c74a4d9946aabd894bc5b0d4764", "tests/testdata/riken_style_five_spectra.msp",
     "matchms/riken_style_five_spectra.msp", None),
    ("matchms/matchms", "8a839cdd92e38c74a4d9946aabd894bc5b0d4764", "tests/testdata/gnps_spectra.json",
     "matchms/gnps_spectra.json", None),
    ("matchms/matchms", "8a839cdd92e38c74a4d9946aabd894bc5b0d4764", "tests/testdata/golm.msp",
     "matchms/golm.msp", None),
    ("iomega/ms2query", "077091a224b243c6deade438640ebe48368dbe06", "tests/test_files/100_test_spectra.mgf",
     "ms2query/100_test_spectra_subset.mgf", [(1, 24), (66, 75)]),
    ("OpenMS/OpenMS", "2f566776511606d2c2d579adf02d50f31adc05da", "src/tests/topp/GNPSExport_1_out.mgf",
     "openms/GNPSExport_1_out_subset.mgf", [(1, 10), (185, 199)]),
    ("OpenMS/OpenMS", "2f566776511606d2c2d579adf02d50f31adc05da", "src/tests/topp/TMTTenPlexMethod_test.mzML",
     "openms/thermo_qexactive_charge2.mzML", None),
    ("LucaCappelletti94/mascot-rs", "cd9de415f328c6a55e15694184da9a8ebebfd3ac",
     "tests/data/20220513_PMA_DBGI_01_04_002.mgf", "mzmine/dbgi_002_fbmn_export.mgf", None),
    ("LucaCappelletti94/mascot-rs", "cd9de415f328c6a55e15694184da9a8ebebfd3ac",
     "tests/data/20220513_PMA_DBGI_01_04_002.mzML_chromatograms_deconvoluted_deisotoped_filtered_enpkg_sirius.mgf",
     "mzmine/dbgi_002_sirius_export.mgf", None),
    ("mzmine/mzmine3", "6c079b46b832328a5b57f2a25556abca136bea24",
     "mzmine-community/src/test/resources/spectral_libraries/fraghub.msp", "mzmine/fraghub.msp", None),
    ("mzmine/mzmine3", "6c079b46b832328a5b57f2a25556abca136bea24",
     "mzmine-community/src/test/resources/spectral_libraries/massbank_eu_lc.txt", "mzmine/massbank_eu_lc.txt", None),
    ("mzmine/mzmine3", "6c079b46b832328a5b57f2a25556abca136bea24",
     "mzmine-community/src/test/resources/json/mzmine.json", "mzmine/mzmine_library.json", None),
    ("mzmine/mzmine3", "6c079b46b832328a5b57f2a25556abca136bea24",
     "mzmine-community/src/test/resources/json/gnps.json", "mzmine/gnps_library.json", None),
]


def mgf_records(text, ranges):
    """The BEGIN IONS ... END IONS blocks numbered in ``ranges`` (1-based, inclusive), verbatim."""
    blocks, current = [], None
    for line in text.splitlines(keepends=True):
        if line.strip() == "BEGIN IONS":
            current = [line]
        elif current is not None:
            current.append(line)
            if line.strip() == "END IONS":
                blocks.append("".join(current) + "\n")
                current = None
    keep = [b for i, b in enumerate(blocks, 1) if any(lo <= i <= hi for lo, hi in ranges)]
    return "".join(keep)


def main(root):
    for repo, commit, path, target, ranges in SOURCES:
        git_dir = Path(root) / repo.replace("/", "+") / "repo"
        data = subprocess.run(["git", "-C", str(git_dir), "show", f"{commit}:{path}"], check=True,
                              capture_output=True).stdout
        if ranges is not None:
            data = mgf_records(data.decode("utf-8"), ranges).encode("utf-8")
        out = HERE / target
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        print(f"{target}: {len(data)} bytes")


if __name__ == "__main__":
    main(sys.argv[1])
