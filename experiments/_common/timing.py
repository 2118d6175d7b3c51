"""Wall time and peak memory of a study's steps: the benchmark harness's measures, so both folders time alike."""

from benchmarks._harness import best_time, measure, peak_rss_mib

__all__ = ["best_time", "measure", "peak_rss_mib"]
