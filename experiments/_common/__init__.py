"""What every study shares: where its report files go and how they are written, timing and memory measures.

- :mod:`experiments._common.reports`: a study's :class:`Outputs` (JSON and Markdown file names, the hand-written
  section kept when the Markdown is regenerated), :func:`write_keeping_section`, :func:`write_json`;
- :mod:`experiments._common.timing`: wall time and peak memory, from the benchmark harness (one place for both).
"""
