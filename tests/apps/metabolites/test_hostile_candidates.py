"""Hostile candidate inputs (issue #16): each is built at test time and rejected quickly with one clear error, in a
subprocess whose peak memory is measured, or read correctly (hard links, byte-order marks)."""

import io
import os
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest

from iokr.apps.metabolites import read_candidate_lists
from iokr.apps.metabolites.candidates._candidates import _iter_sources
from iokr.exceptions import IOKRDataError

pytest.importorskip("rdkit")
ROOT = Path(__file__).resolve().parents[3]
LIST = 'id1,score\n"InChI=1S/C2H6O/c1-2-3/h3H,2H2,1H3",0.5\n"InChI=1S/C2H6O/c1-3-2/h1-2H3",0.2\n'


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


class _Repeat(io.RawIOBase):
    """``n`` bytes of one repeated block, produced on the fly (a bomb is never held in memory)."""

    def __init__(self, block, n):
        self.block, self.left = block, n

    def readable(self):
        return True

    def readinto(self, buffer):
        k = min(len(buffer), self.left)
        reps = self.block * (k // len(self.block) + 1)
        buffer[:k] = reps[:k]
        self.left -= k
        return k


def _bomb(path, n_bytes, block):
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo("scoring_list=C2H6O_spec=x_id=LFQSCWFLJHTTHZ-UHFFFAOYSA-N.csv")
        info.size = n_bytes
        tar.addfile(info, io.BufferedReader(_Repeat(block, n_bytes), 1 << 20))
    return path


def _reject_in_subprocess(path):
    """(seconds, peak RSS in MiB, stderr) of reading the lists of ``path`` in a fresh interpreter."""
    code = textwrap.dedent(f"""
        import sys
        from iokr.apps.metabolites import read_candidate_lists
        from iokr.exceptions import IOKRDataError
        try:
            read_candidate_lists({str(path)!r})
        except IOKRDataError as exc:
            print("ERROR", exc, file=sys.stderr)
        # VmHWM: this process's own peak (ru_maxrss would report the larger pytest parent's after fork+exec)
        peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
        print("RSS", int(peak.split()[1]) / 1024, file=sys.stderr)
    """)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         check=True)
    seconds = time.perf_counter() - start
    rss = float(next(line.split()[1] for line in out.stderr.splitlines() if line.startswith("RSS")))
    return seconds, rss, out.stderr


@pytest.mark.parametrize("n_bytes, block", [(1 << 30, b"x" * 4096), (100 << 20, LIST.split("\n", 1)[1].encode())])
def test_archive_bombs_are_refused_before_reading(tmp_path, n_bytes, block):
    """One 1 GiB single-line CSV (was 7.5 GB), and 100 MiB of repeated rows (was 2.7 GB)."""
    path = _bomb(tmp_path / "bomb.tar.gz", n_bytes, block)
    assert path.stat().st_size < 5 << 20
    seconds, rss, err = _reject_in_subprocess(path)
    assert "ERROR" in err and ("compression bomb" in err or "larger than" in err), err
    assert rss < 300, rss
    assert seconds < 60  # mostly the interpreter start-up on a shared machine; the refusal itself is immediate


def test_fifo_and_links_outside_the_folder_are_skipped(tmp_path):
    folder = tmp_path / "lists"
    folder.mkdir()
    (folder / "scoring_list=C2H6O_spec=a_id=LFQSCWFLJHTTHZ-UHFFFAOYSA-N.csv").write_text(LIST)
    os.mkfifo(folder / "pipe.csv")  # reading it would block forever
    secret = tmp_path / "secret.csv"
    secret.write_text("id1\nsecret-content\n")
    (folder / "link.csv").symlink_to(secret)
    names = [name for name, _ in _iter_sources(folder)]
    assert names == ["scoring_list=C2H6O_spec=a_id=LFQSCWFLJHTTHZ-UHFFFAOYSA-N.csv"]


def test_hard_link_members_are_read(tmp_path):
    path = tmp_path / "lists.tar"
    with tarfile.open(path, "w") as tar:
        _add(tar, "a/scoring_list=C2H6O_spec=a_id=LFQSCWFLJHTTHZ-UHFFFAOYSA-N.csv", LIST.encode())
        link = tarfile.TarInfo("b/scoring_list=C2H6O_spec=b_id=LFQSCWFLJHTTHZ-UHFFFAOYSA-N.csv")
        link.type, link.linkname = tarfile.LNKTYPE, "a/scoring_list=C2H6O_spec=a_id=LFQSCWFLJHTTHZ-UHFFFAOYSA-N.csv"
        tar.addfile(link)
    lists = read_candidate_lists(path)
    assert [len(lst) for lst in lists] == [2, 2]


def test_byte_order_mark_and_unsupported_archives(tmp_path):
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfsmiles,score\nCCO,0.5\nCOC,0.2\n")
    assert len(read_candidate_lists(bom)[0]) == 2
    for name in ("lists.zip", "lists.tar.xz"):
        (tmp_path / name).write_bytes(b"PK\x03\x04 not read")
        with pytest.raises(IOKRDataError, match="unsupported archive format"):
            read_candidate_lists(tmp_path / name)
