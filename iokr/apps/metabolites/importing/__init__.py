"""Reading files into ``Spectra``: MGF, MSP, mzML, mzXML, JSON and MassBank JSONL (like ``matchms.importing``), query ids, delimited text."""
