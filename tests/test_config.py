"""Global configuration: defaults, validation, context restoration, per-call override and thread locality."""

import threading

import numpy as np
import pytest

from iokr import config_context, get_config, set_config
from iokr._config import default_rtol, working_memory_bytes


def test_defaults_and_context_restores():
    config = get_config()
    assert config["working_memory"] == 1024 and config["jitter_schedule"] == (1e-10, 1e-8, 1e-6, 1e-4)
    config["working_memory"] = 1  # a copy: changing it changes nothing
    assert get_config()["working_memory"] == 1024
    assert working_memory_bytes() == 1024 * 2**20
    with config_context(working_memory=2, jitter_schedule=[1e-3]):
        assert get_config()["working_memory"] == 2.0 and get_config()["jitter_schedule"] == (1e-3,)
        assert working_memory_bytes() == 2 * 2**20
        assert working_memory_bytes(0.5) == 2**19  # per-call value wins
    assert get_config()["working_memory"] == 1024
    with pytest.raises(RuntimeError), config_context(working_memory=3):
        raise RuntimeError
    assert get_config()["working_memory"] == 1024


def test_set_config_persists_until_reset():
    saved = get_config()
    try:
        set_config(working_memory=64)
        assert working_memory_bytes() == 64 * 2**20
        set_config(jitter_schedule=(1e-9,))
        assert get_config()["working_memory"] == 64  # untouched by other keys
    finally:
        set_config(**saved)
    assert get_config() == saved


@pytest.mark.parametrize("value", [0, -1, np.nan, np.inf, True, "512", None])
def test_invalid_working_memory(value):
    if value is None:
        assert working_memory_bytes(None) == working_memory_bytes()
        return
    with pytest.raises(ValueError, match=r"'working_memory' must be a positive number of MiB"):
        set_config(working_memory=value)
    with pytest.raises(ValueError, match="'working_memory'"):
        working_memory_bytes(value)
    assert get_config()["working_memory"] == 1024


@pytest.mark.parametrize("schedule", [(), (1e-6, 0.0), (-1e-3,)])
def test_invalid_jitter_schedule(schedule):
    with (pytest.raises(ValueError, match="'jitter_schedule' must be a non-empty sequence of positive floats"),
          config_context(jitter_schedule=schedule)):
        pass
    assert get_config()["jitter_schedule"] == (1e-10, 1e-8, 1e-6, 1e-4)


def test_configuration_is_thread_local():
    seen = {}

    def worker():
        seen["working_memory"] = get_config()["working_memory"]

    with config_context(working_memory=8):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert seen["working_memory"] == 1024


def test_default_rtol_by_dtype():
    assert default_rtol(np.float32) == 1e-4
    assert default_rtol(np.float64) == 1e-10
