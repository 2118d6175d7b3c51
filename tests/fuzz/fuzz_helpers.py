"""Shared machinery of the fuzz campaign: input counting, the typed-error contract, a hang watchdog, mutations.

Every fuzz test feeds one generated input to a reader through :func:`run_reader`, which counts it, applies a
watchdog, and lets only the library's typed data errors through (:class:`~iokr.exceptions.IOKRDataError` and its
subclasses such as :class:`~iokr.io.ModelFileError`). Any other exception fails the test, and hypothesis shrinks it
to a minimal input. Counts per format are written by ``conftest.py`` to ``$IOKR_FUZZ_REPORT`` when it is set.
"""

from __future__ import annotations

import gzip
import io
import signal
import tarfile
from collections import defaultdict
from contextlib import contextmanager

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from iokr.exceptions import IOKRDataError

#: Inputs tried, accepted (valid result) and rejected (typed error) per format; ``crashes`` is filled by conftest.
COUNTS = defaultdict(lambda: {"inputs": 0, "accepted": 0, "rejected": 0, "crashes": 0})

#: Seconds one input may take before it counts as a hang.
HANG_SECONDS = 30


class FuzzHang(AssertionError):
    """A reader did not return within :data:`HANG_SECONDS`."""


@contextmanager
def _watchdog(seconds):
    def _raise(signum, frame):
        raise FuzzHang(f"reader still running after {seconds} s (hang)")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_reader(fmt, reader, *args, **kwargs):
    """Call ``reader(*args, **kwargs)``: its result, or ``None`` when it raised a typed data error.

    Any other exception propagates (a crash). A typed error must carry a message.
    """
    COUNTS[fmt]["inputs"] += 1
    with _watchdog(HANG_SECONDS):
        try:
            result = reader(*args, **kwargs)
        except IOKRDataError as exc:
            assert str(exc).strip(), f"{type(exc).__name__} raised without a message"
            COUNTS[fmt]["rejected"] += 1
            return None
    COUNTS[fmt]["accepted"] += 1
    return result


def fuzz_settings(scale=1.0, **overrides):
    """The loaded hypothesis profile ("ci" or "long"), with ``max_examples`` scaled for this reader's cost.

    Files are written per example, so no deadline; the function-scoped-fixture check is off because the tests use
    one directory per module and overwrite their file in each example.
    """
    base = settings.default
    return settings(
        max_examples=max(1, round(base.max_examples * scale)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                               HealthCheck.function_scoped_fixture],
        **overrides,
    )


# -- values and byte mutations --------------------------------------------------------------------------------------

#: Byte strings that break parsers: numbers at the edges of float, JSON literals, separators, invalid UTF-8, markers.
TOKENS = [
    b"", b"0", b"-0", b"-1", b"1e309", b"-1e309", b"1e-400", b"99999999999999999999999999999999999999", b"NaN",
    b"nan", b"Infinity", b"-Infinity", b"inf", b"null", b"true", b"[]", b"{}", b'""', b"[[]]", b"[[1]]",
    b"\x00", b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", "\u00e9\u202e\U0001f600".encode(), b"\n", b"\r\n",
    b"\r", b",", b";", b"\t", b'"', b"'", b"=", b":", b" ", b"{", b"}", b"[", b"]", b"#", b"%",
    # issue #16: nesting beyond the JSON depth cap, integers beyond Python's int-string conversion limit.
    b"[" * 200, b'{"a":' * 120, b"9" * 5000,
]

#: JSON-like values of every type, including huge integers and non-finite floats.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=10**300, max_value=10**400)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)


@st.composite
def mutated(draw, seed, tokens=(), max_ops=4):
    """``seed`` (bytes) after 0..max_ops random edits: flips, truncation, insertions, deletions, duplications and
    token splices (format ``tokens`` plus :data:`TOKENS`). Zero edits keeps the valid file in the mix."""
    data = bytearray(seed)
    pool = list(tokens) + TOKENS
    for _ in range(draw(st.integers(0, max_ops))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "duplicate", "token", "replace"]))
        pos = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            pos = min(pos, len(data) - 1)
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[pos:pos + draw(st.integers(1, 16))]
        elif op == "duplicate":
            data[pos:pos] = data[pos:pos + draw(st.integers(1, 64))]
        elif op == "token":
            data[pos:pos] = draw(st.sampled_from(pool))
        elif op == "replace":
            data[pos:pos + draw(st.integers(1, 8))] = draw(st.sampled_from(pool))
    return bytes(data)


def gzip_bytes(data):
    """``data`` gzip-compressed deterministically (no timestamp), so examples replay identically."""
    return gzip.compress(data, mtime=0)


def tar_gz(members):
    """A ``.tar.gz`` archive (bytes) holding ``{name: bytes}``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip_bytes(buf.getvalue())
