"""The fitted model: ``MetaboliteIdentifier``, formula hypotheses, confidence, sub-models per precursor type, model files."""
