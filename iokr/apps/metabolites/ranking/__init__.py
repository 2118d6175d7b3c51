"""Ranking a query file against a candidate source: the per-query plan (precursor type, formula or mass lookup) and the scoring of candidates in batches."""
