"""Model selection on training spectra: structure folds, surrogate candidate lists, the cross-validated search, calibration examples."""
