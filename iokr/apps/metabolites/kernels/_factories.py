"""The app's kernels by name: the base spectrum kernels and the output (fingerprint) kernels a model names in its
parameters (``MetaboliteIdentifier(kernels=..., output_kernel=...)``) and a model file records."""

from __future__ import annotations

from ....kernels import GaussianTanimoto, Linear, Normalized, Tanimoto
from ._annotated_kernels import FormulaTokenKernel
from ._kernels import BinnedKernel, PeakProductKernel

SPECTRUM_KERNELS = ("ppk", "ppk_nl", "binned", "binned_nl", "fragments", "losses", "pair_losses")
OUTPUT_KERNELS = ("gaussian_tanimoto", "tanimoto", "linear")


def make_spectrum_kernel(name, sigma_mz=0.005, sigma_intensity=0.25, bin_width=0.01):
    """Return the base spectrum kernel of a given name.

    Parameters
    ----------
    name : {"ppk", "ppk_nl", "binned", "binned_nl", "fragments", "losses", "pair_losses"}
        :class:`PeakProductKernel` or :class:`BinnedKernel` on fragments or neutral losses (``"_nl"``), or a
        :class:`FormulaTokenKernel` on annotated peaks: shared subformulas of the structure's formula (spectra
        without a usable formula have none and rely on the other kernels).
    sigma_mz, sigma_intensity, bin_width : float, default=0.005, 0.25, 0.01
        Widths of the peak product kernels (``sigma_intensity=None``: product of intensities) and bin width of the
        binned kernels, each unused by the other kernels.

    Returns
    -------
    kernel : SpectrumKernel
        The kernel, with its other parameters at their defaults.
    """
    if name == "ppk":
        return PeakProductKernel(sigma_mz, sigma_intensity)
    if name == "ppk_nl":
        return PeakProductKernel(sigma_mz, sigma_intensity, neutral_loss=True)
    if name == "binned":
        return BinnedKernel(bin_width)
    if name == "binned_nl":
        return BinnedKernel(bin_width, neutral_loss=True)
    if name in ("fragments", "losses", "pair_losses"):
        return FormulaTokenKernel(tokens=name)
    raise ValueError(f"Unknown spectrum kernel {name!r}; expected one of {SPECTRUM_KERNELS}.")


def make_output_kernel(name, gamma=1.0):
    """Return the output (fingerprint) kernel by name.

    Parameters
    ----------
    name : {"tanimoto", "gaussian_tanimoto", "linear"}
        Tanimoto; ``exp(-2 gamma (1 - Tanimoto))``; the cosine-normalized inner product.
    gamma : float, default=1.0
        Width of ``"gaussian_tanimoto"`` (unused by the others).

    Returns
    -------
    kernel : Kernel
        The kernel on fingerprint rows.
    """
    if name == "gaussian_tanimoto":
        return GaussianTanimoto(gamma=gamma, form="inner")
    if name == "tanimoto":
        return Tanimoto(form="inner")
    if name == "linear":
        return Normalized(Linear())
    raise ValueError(f"Unknown output kernel {name!r}; expected one of {OUTPUT_KERNELS}.")
