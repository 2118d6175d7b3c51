"""Spectra as arrays (the ``Spectra`` container) and their cleaning and merging; the lowest layer of the app."""
