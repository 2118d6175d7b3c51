"""Minimal valid mzML and mzXML files written by the tests (what ProteoWizard / Thermo / MZmine write, reduced to
the elements readers use): scans with an MS level, a polarity, a precursor with its charge, and peaks."""

import base64
import struct
import zlib
from dataclasses import dataclass, field


@dataclass
class Scan:
    """One scan: ``peaks`` as (m/z, intensity) pairs; ``polarity`` "+", "-" or None; ``charge`` int or None."""

    scan: int
    ms_level: int = 2
    precursor_mz: float | None = 195.0877
    charge: int | None = None
    polarity: str | None = "+"
    peaks: list = field(default_factory=lambda: [(60.0, 10.0), (138.066, 100.0)])
    title: str | None = None


def _floats(values, fmt, compress=False):
    data = struct.pack(fmt % len(values), *values)
    return base64.b64encode(zlib.compress(data) if compress else data).decode()


def mzml(scans, native_id="controllerType=0 controllerNumber=1 scan={scan}", precision=64, compress=False):
    """mzML 1.1 text of ``scans`` (native ids in Thermo's form unless ``native_id`` says otherwise), arrays of
    ``precision``-bit floats, zlib-compressed or not."""
    parts = ['<?xml version="1.0" encoding="utf-8"?>',
             '<mzML xmlns="http://psi.hupo.org/ms/mzml" version="1.1.0">',
             '<cvList count="1"><cv id="MS" fullName="PSI-MS" URI="https://purl.obolibrary.org/obo/ms.obo"/></cvList>',
             '<run id="run1">', f'<spectrumList count="{len(scans)}">']
    for i, s in enumerate(scans):
        mz = [p[0] for p in s.peaks]
        inten = [p[1] for p in s.peaks]
        parts.append(f'<spectrum index="{i}" id="{native_id.format(scan=s.scan)}" defaultArrayLength="{len(mz)}">')
        parts.append(f'<cvParam cvRef="MS" accession="MS:1000511" name="ms level" value="{s.ms_level}"/>')
        if s.polarity == "+":
            parts.append('<cvParam cvRef="MS" accession="MS:1000130" name="positive scan" value=""/>')
        elif s.polarity == "-":
            parts.append('<cvParam cvRef="MS" accession="MS:1000129" name="negative scan" value=""/>')
        if s.title:
            parts.append(f'<cvParam cvRef="MS" accession="MS:1000796" name="spectrum title" value="{s.title}"/>')
        if s.ms_level > 1 and s.precursor_mz is not None:
            charge = ("" if s.charge is None else
                      f'<cvParam cvRef="MS" accession="MS:1000041" name="charge state" value="{s.charge}"/>')
            parts.append('<precursorList count="1"><precursor><selectedIonList count="1"><selectedIon>'
                         f'<cvParam cvRef="MS" accession="MS:1000744" name="selected ion m/z" '
                         f'value="{s.precursor_mz}"/>{charge}</selectedIon></selectedIonList></precursor>'
                         '</precursorList>')
        parts.append('<binaryDataArrayList count="2">')
        float_param = ('<cvParam cvRef="MS" accession="MS:1000523" name="64-bit float" value=""/>' if precision == 64
                       else '<cvParam cvRef="MS" accession="MS:1000521" name="32-bit float" value=""/>')
        compression = ('<cvParam cvRef="MS" accession="MS:1000574" name="zlib compression" value=""/>' if compress
                       else '<cvParam cvRef="MS" accession="MS:1000576" name="no compression" value=""/>')
        for values, acc, name in ((mz, "MS:1000514", "m/z array"), (inten, "MS:1000515", "intensity array")):
            data = _floats(values, "<%dd" if precision == 64 else "<%df", compress)
            parts.append(f'<binaryDataArray encodedLength="{len(data)}">{float_param}{compression}'
                         f'<cvParam cvRef="MS" accession="{acc}" name="{name}" value=""/>'
                         f'<binary>{data}</binary></binaryDataArray>')
        parts.append('</binaryDataArrayList></spectrum>')
    parts += ['</spectrumList>', '</run>', '</mzML>']
    return "\n".join(parts) + "\n"


def mzxml(scans, precision=64, compress=False, nested=False):
    """mzXML 3.2 text of ``scans`` (flat, as MZmine and msconvert write them; ``nested``: each MS2 scan inside the
    MS1 scan before it, as older Thermo converters write them)."""
    parts = ['<?xml version="1.0" encoding="ISO-8859-1"?>',
             '<mzXML xmlns="http://sashimi.sourceforge.net/schema_revision/mzXML_3.2">',
             f'<msRun scanCount="{len(scans)}">']
    open_ms1 = False
    for s in scans:
        if nested and open_ms1 and s.ms_level == 1:
            parts.append('</scan>')
            open_ms1 = False
        pairs = [v for p in s.peaks for v in p]
        polarity = f' polarity="{s.polarity}"' if s.polarity else ""
        parts.append(f'<scan num="{s.scan}" msLevel="{s.ms_level}" peaksCount="{len(s.peaks)}"{polarity} '
                     'centroided="1">')
        if s.ms_level > 1 and s.precursor_mz is not None:
            charge = "" if s.charge is None else f' precursorCharge="{s.charge}"'
            parts.append(f'<precursorMz precursorIntensity="1000"{charge} activationMethod="CID">'
                         f'{s.precursor_mz}</precursorMz>')
        parts.append(f'<peaks precision="{precision}" byteOrder="network" contentType="m/z-int" '
                     f'compressionType="{"zlib" if compress else "none"}" compressedLen="0">'
                     f'{_floats(pairs, ">%dd" if precision == 64 else ">%df", compress)}</peaks>')
        if nested and s.ms_level == 1:
            open_ms1 = True
        else:
            parts.append('</scan>')
    parts += ['</scan>'] if open_ms1 else []
    parts += ['</msRun>', '</mzXML>']
    return "\n".join(parts) + "\n"
