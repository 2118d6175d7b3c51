"""Timing shared by the benchmarks."""

import time


def best_time(fn, repeat=1):
    """``(best wall time in seconds over ``repeat`` calls, the last call's result)``."""
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out
