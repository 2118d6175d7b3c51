"""Moved to :mod:`experiments._common.reports`; this name stays for accuracy scripts still in ``benchmarks/``
(``realdata_ion_modes.py`` on another branch imports it) until they move to ``experiments/``."""

from experiments._common.reports import write_keeping_section

__all__ = ["write_keeping_section"]
