"""Atomic outputs: the target appears whole with normal permissions, and a failure leaves no file behind."""

import os
import stat

import pytest

from iokr.io._atomic import atomic_open


def test_atomic_open_writes_whole_file_with_umask_permissions(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with atomic_open(target, "w", encoding="utf-8") as handle:
        handle.write("done\n")
    assert target.read_text() == "done\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in target.parent.iterdir()] == ["out.txt"]


def test_atomic_open_failure_keeps_previous_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="interrupted"), atomic_open(target, "w") as handle:
        handle.write("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
