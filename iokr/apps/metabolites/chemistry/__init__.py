"""Chemistry without spectra files or learning: formulas and masses, adducts and precursor types, structures and their fingerprints, precursor precision, subformula annotation of peaks."""
