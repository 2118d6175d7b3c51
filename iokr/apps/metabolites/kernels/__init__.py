"""Spectrum kernels (probability product, binned) and formula-token kernels as ``iokr.kernels.Kernel`` objects, and their training Grams."""
