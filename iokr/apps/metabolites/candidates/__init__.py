"""Candidate structures: candidate lists, the formula- and mass-keyed structure store and database, candidate sources, decoy lists."""
