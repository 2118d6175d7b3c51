"""Which format a spectra file is in: from its name, else its content (MassBank records: ``ACCESSION:`` first);
and the formats iokr does not read, named.

A file iokr cannot read gets one line saying what it looks like (a vendor raw file, an mzData file, an mzVault
SQLite library, an EI library without precursors) and what to convert it to, instead of "0 spectra read".
"""

from __future__ import annotations

import zlib

from ....exceptions import IOKRDataError
from ._msfiles import open_text

#: Spectrum file formats by file-name ending (``.gz`` allowed after each); JSON is told apart from JSONL by content.
SPECTRUM_FORMATS = {".mgf": "mgf", ".msp": "msp", ".mzml": "mzml", ".mzxml": "mzxml", ".jsonl": "jsonl",
                    ".json": "json"}

_CONVERT = "convert it to mzML, MGF or MSP (e.g. with ProteoWizard msconvert or MZmine)"
#: Formats recognised by name that iokr does not read, and what to do about them.
UNSUPPORTED_NAMES = {
    ".raw": f"a Thermo .raw file (vendor binary): {_CONVERT}",
    ".d": f"an Agilent/Bruker .d folder (vendor data): {_CONVERT}",
    ".wiff": f"a SCIEX .wiff file (vendor binary): {_CONVERT}",
    ".wiff2": f"a SCIEX .wiff2 file (vendor binary): {_CONVERT}",
    ".mzdata": f"an mzData file (the format mzML replaced): {_CONVERT}",
    ".db": "an SQLite database (a Thermo mzVault library?), not a spectra file: export it to MSP",
    ".cdf": f"a netCDF (ANDI-MS) file: {_CONVERT}",
    ".mzvault": "a Thermo mzVault library: export it to MSP",
}
#: Leading bytes of binary formats, with what they are.
_MAGIC = ((b"SQLite format 3\x00", ".db"), (b"\x01\xa1F\x00i\x00n\x00n\x00i\x00g\x00a\x00n\x00", ".raw"),
          (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", ".wiff"), (b"CDF\x01", ".cdf"), (b"CDF\x02", ".cdf"))


def unsupported_format(path):
    """What an unreadable spectra file (or folder) is, as a phrase, when recognisable by name or leading bytes;
    else None."""
    name = path.name.lower().removesuffix(".gz")
    for ending, what in UNSUPPORTED_NAMES.items():
        if name.endswith(ending):
            return what
    if path.is_file():
        try:
            with open(path, "rb") as handle:
                head = handle.read(64)
        except OSError:
            return None
        for magic, ending in _MAGIC:
            if head.startswith(magic):
                return UNSUPPORTED_NAMES[ending]
        if b"<mzData" in head or (b"<?xml" in head and _has_mzdata(path)):
            return UNSUPPORTED_NAMES[".mzdata"]
    return None


def _has_mzdata(path):
    try:
        with open(path, "rb") as handle:
            return b"<mzData" in handle.read(4096)
    except OSError:
        return False


def check_supported(path):
    """Raise a one-line :class:`IOKRDataError` when ``path`` is a recognisable format iokr does not read."""
    what = unsupported_format(path)
    if what is not None:
        raise IOKRDataError(f"Spectra file {path} is {what}; iokr reads .mgf, .msp, .mzML, .mzXML, .json and "
                            ".jsonl (each optionally .gz).")


def sniff_format(path):
    """The format from the first non-empty line of a (possibly gzipped) file: MGF, MSP, JSON or JSONL; None."""
    try:
        with open_text(path) as handle:
            for _, line in zip(range(50), handle, strict=False):
                text = line.strip().lstrip("\ufeff")
                if not text or text.startswith(("#", ";", "!")):
                    continue
                upper = text.upper()
                if upper == "BEGIN IONS" or upper.startswith(("PEPMASS=", "TITLE=", "CHARGE=")):
                    return "mgf"
                if upper.startswith("NAME:"):
                    return "msp"
                if upper.startswith("ACCESSION:"):
                    return "massbank"
                if text.startswith("["):
                    return "json"
                if text.startswith("{"):
                    return "jsonl"
                if text.startswith("<"):
                    if "mzdata" in text.lower():
                        return None
                    return "mzxml" if "mzxml" in text.lower() else "mzml"
                if "=" in text and text.split("=", 1)[0].replace("_", "").isalnum():
                    continue  # an MGF file's global parameters come before its first BEGIN IONS
                return None
    except (OSError, EOFError, UnicodeDecodeError, zlib.error):
        return None
    return None


def spectrum_format(path):
    """The format from the file name (``.gz`` allowed after the extension), else from the content."""
    name = path.name.lower()
    name = name.removesuffix(".gz")
    fmt = next((f for ext, f in SPECTRUM_FORMATS.items() if name.endswith(ext)), None)
    if fmt in ("json", None):
        sniffed = sniff_format(path)
        fmt = sniffed if fmt is None or sniffed in ("json", "jsonl") else fmt
    return fmt
