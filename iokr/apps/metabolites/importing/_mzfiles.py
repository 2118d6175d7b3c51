"""mzML and mzXML files (instrument runs converted by ProteoWizard, MZmine, OpenMS): the MS2 scans as records.

Streamed with the standard library's XML parser, one scan at a time. Not matchms's loaders: they keep neither the
scan's polarity (mzML), its native id or scan number, nor what they skipped; nor pyteomics directly: importing it
takes 4-5 s here (its controlled-vocabulary module), beyond the start-up budget of ``identify``. The tests check
this reader against pyteomics on the same files.

Every MS2 scan becomes a record ``(index, fields, peaks)`` as :mod:`._msfiles` gives them for MGF/MSP, with raw
fields

- ``precursor_mz``; ``charge``: the precursor's charge state as written (unsigned in both formats: its sign is the
  scan's polarity); ``ion_mode``: ``positive`` / ``negative`` from the scan's polarity;
- ``scans``: the scan number (mzXML ``num``; mzML ``scan=N`` / ``scanId=N`` of the native id), ``native_id``
  (mzML ``id``), ``title`` (mzML ``spectrum title``);

and every other scan is passed on as ``(index, None, reason)`` (``"MS1 scans"``, ``"MS3 scans"``), so a read that
finds no MS2 scan says what the file held. Peak arrays that cannot be decoded (numpress compression, bad base64,
wrong length) give the reason ``"malformed peaks"`` for their scan only.
"""

from __future__ import annotations

import base64
import binascii
import re
import xml.etree.ElementTree as ET
import zlib

import numpy as np

from ....exceptions import IOKRDataError

#: Scan number in a native id: Thermo / Bruker / Waters ``scan=N``, Agilent ``scanId=N``.
_SCAN_IN_ID = re.compile(r"(?:^|\s)(?:scan|scanId)=(\d+)(?:\s|$)")
#: PSI-MS accessions read from mzML.
MS_LEVEL, MS1_SPECTRUM, TITLE = "MS:1000511", "MS:1000579", "MS:1000796"
POSITIVE, NEGATIVE = "MS:1000130", "MS:1000129"
SELECTED_MZ, OLD_MZ, CHARGE_STATE = "MS:1000744", "MS:1000040", "MS:1000041"
MZ_ARRAY, INTENSITY_ARRAY, ZLIB, NO_COMPRESSION = "MS:1000514", "MS:1000515", "MS:1000574", "MS:1000576"
_DTYPES = {"MS:1000523": "<f8", "MS:1000521": "<f4", "MS:1000522": "<i8", "MS:1000519": "<i4"}
#: Largest decoded peak array accepted when its length is not declared (bytes).
MAX_ARRAY_BYTES = 256 * 2**20


class _Malformed(ValueError):
    """A scan's peaks cannot be decoded."""


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def _children(elem, name):
    return [c for c in elem if _local(c.tag) == name]


def _decode(text, dtype, compressed, count):
    """Values of one base64 array (little- or big-endian ``dtype``), zlib-inflated when ``compressed``; at most
    ``count`` values (their declared number) or :data:`MAX_ARRAY_BYTES`."""
    try:
        raw = base64.b64decode((text or "").strip(), validate=False)
        limit = np.dtype(dtype).itemsize * count if count is not None else MAX_ARRAY_BYTES
        if compressed:
            inflater = zlib.decompressobj()
            raw = inflater.decompress(raw, limit + 1)
            if len(raw) > limit:
                raise _Malformed("array larger than declared")
        if len(raw) % np.dtype(dtype).itemsize or (count is not None and len(raw) != limit):
            raise _Malformed("array of the wrong length")
    except (binascii.Error, zlib.error, ValueError) as exc:
        raise _Malformed(str(exc)) from None
    return np.frombuffer(raw, dtype=dtype).astype(np.float64)


# -- mzML ------------------------------------------------------------------------------------------------------------

def _params(elem, groups):
    """``{accession: value}`` of an element's own cvParams and of the param groups it references."""
    out = {}
    for child in elem:
        name = _local(child.tag)
        if name == "cvParam":
            out[child.get("accession")] = child.get("value", "")
        elif name == "referenceableParamGroupRef":
            out.update(groups.get(child.get("ref"), {}))
    return out


def _mzml_peaks(spectrum, groups):
    count = spectrum.get("defaultArrayLength")
    count = int(count) if count and count.isdigit() else None
    arrays = {}
    for array_list in _children(spectrum, "binaryDataArrayList"):
        for array in _children(array_list, "binaryDataArray"):
            params = _params(array, groups)
            kind = MZ_ARRAY if MZ_ARRAY in params else INTENSITY_ARRAY if INTENSITY_ARRAY in params else None
            if kind is None:
                continue
            dtype = next((d for acc, d in _DTYPES.items() if acc in params), None)
            if dtype is None or not (ZLIB in params or NO_COMPRESSION in params):
                raise _Malformed("unsupported encoding (numpress or an unknown precision)")
            binary = _children(array, "binary")
            length = array.get("arrayLength")
            n = int(length) if length and length.isdigit() else count
            arrays[kind] = _decode(binary[0].text if binary else "", dtype, ZLIB in params, n)
    mz, intensity = arrays.get(MZ_ARRAY), arrays.get(INTENSITY_ARRAY)
    if mz is None or intensity is None or mz.shape != intensity.shape:
        raise _Malformed("missing or unequal m/z and intensity arrays")
    return np.column_stack([mz, intensity])


def _mzml_record(spectrum, groups):
    params = _params(spectrum, groups)
    level = params.get(MS_LEVEL) or ("1" if MS1_SPECTRUM in params else None)
    if level != "2":
        return None, f"MS{level if level else '?'} scans"
    native_id = spectrum.get("id") or ""
    number = _SCAN_IN_ID.search(native_id)
    ion = {}
    for precursor in spectrum.iter():
        if _local(precursor.tag) == "selectedIon":
            ion = _params(precursor, groups)
            break
    fields = {"precursor_mz": ion.get(SELECTED_MZ) or ion.get(OLD_MZ), "charge": ion.get(CHARGE_STATE),
              "native_id": native_id or None, "scans": number.group(1) if number else None,
              "title": params.get(TITLE),
              "ion_mode": "positive" if POSITIVE in params else "negative" if NEGATIVE in params else None}
    try:
        peaks = _mzml_peaks(spectrum, groups)
    except _Malformed:
        peaks = "malformed peaks"
    return {k: v for k, v in fields.items() if v not in (None, "")}, peaks


# -- mzXML -----------------------------------------------------------------------------------------------------------

def _mzxml_peaks(scan):
    found = _children(scan, "peaks")
    if not found:
        raise _Malformed("no peaks element")
    peaks = found[0]
    precision = peaks.get("precision", "32")
    order = ">" if peaks.get("byteOrder", "network") in ("network", "big") else "<"
    content = peaks.get("contentType") or peaks.get("pairOrder") or "m/z-int"
    if precision not in ("32", "64") or content != "m/z-int":
        raise _Malformed(f"unsupported peaks encoding ({precision}-bit, {content})")
    count = peaks.get("peaksCount") or scan.get("peaksCount")
    count = 2 * int(count) if count and count.isdigit() else None
    values = _decode(peaks.text, f"{order}f{int(precision) // 8}", peaks.get("compressionType") == "zlib", count)
    if values.size % 2:
        raise _Malformed("an odd number of values")
    return values.reshape(-1, 2)


def _mzxml_record(scan):
    level = scan.get("msLevel")
    if level != "2":
        return None, f"MS{level if level else '?'} scans"
    precursor = (_children(scan, "precursorMz") or [None])[0]
    polarity = scan.get("polarity")
    fields = {"precursor_mz": None if precursor is None else (precursor.text or "").strip(),
              "charge": None if precursor is None else precursor.get("precursorCharge"), "scans": scan.get("num"),
              "ion_mode": {"+": "positive", "-": "negative"}.get(polarity, polarity)}
    try:
        peaks = _mzxml_peaks(scan)
    except _Malformed:
        peaks = "malformed peaks"
    return {k: v for k, v in fields.items() if v not in (None, "")}, peaks


def iter_ms_xml(path, fmt):
    """Records of an mzML (``fmt="mzml"``) or mzXML (``"mzxml"``) file: ``(index, fields, peaks)`` per MS2 scan,
    ``(index, None, "MS<n> scans")`` per other scan (see the module docstring).

    Raises
    ------
    IOKRDataError
        The file is not well-formed XML (naming the file and the scans read before).
    """
    scan_tag = "spectrum" if fmt == "mzml" else "scan"
    groups, index, depth, root = {}, 0, 0, None
    try:
        for event, elem in ET.iterparse(str(path), events=("start", "end")):
            name = _local(elem.tag)
            if root is None:
                root = elem
            if name == scan_tag:
                depth += event == "start"
                depth -= event == "end"
            if event != "end":
                continue
            if name == "referenceableParamGroup":
                groups[elem.get("id")] = _params(elem, {})
            elif name == scan_tag:
                fields, peaks = _mzml_record(elem, groups) if fmt == "mzml" else _mzxml_record(elem)
                yield index, fields, peaks
                index += 1
                elem.clear()  # peaks and params read: the memory of one scan at a time
                if depth == 0:
                    root.clear()
    except ET.ParseError as exc:
        raise IOKRDataError(f"Cannot parse {fmt} file {path} after {index} scans (not well-formed XML: {exc})") \
            from None
