"""Errors of an index build on Dask: only a failure to reach the scheduler is blamed on ``--scheduler``.

``run_in_order`` reads the table (its ``tasks``) while the Dask client is open; an error of the table read there
(a truncated .csv.gz, a malformed row) used to be caught with the connection's errors and said as
"--scheduler local: not a Dask scheduler address (Structure database x.csv.gz: unreadable after line 133233 ...)".
"""

from contextlib import contextmanager

import pytest

from iokr.apps.metabolites.candidates import _parse_executors
from iokr.exceptions import IOKRDataError


class _Future:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class _Client:
    def scheduler_info(self):
        return {"workers": {"w1": {}}}

    def submit(self, function, *args, **kwargs):
        return _Future(function(*args))


@contextmanager
def _fake_connect(address, **kwargs):
    yield _Client()


def _double(x):
    return 2 * x


def _tasks(error):
    yield "a", None, (1,)
    yield "b", None, (2,)
    raise error


@pytest.mark.parametrize("error", [IOKRDataError("Structure database x.csv.gz: unreadable after line 3 (EOFError)"),
                                   OSError("Structure database x.csv.gz: Input/output error"),
                                   ValueError("a row the reader cannot split")])
def test_an_error_of_the_table_is_not_blamed_on_the_scheduler(monkeypatch, error):
    monkeypatch.setattr(_parse_executors, "connect", _fake_connect)
    with pytest.raises(type(error)) as caught:  # raised while the first tasks are in flight (bounded look-ahead)
        list(_parse_executors.run_in_order(_tasks(error), _double, scheduler="tcp://host:8786"))
    assert caught.value is error  # the table's own error, unchanged
    assert "--scheduler" not in str(caught.value)
    # without an error, the same fake cluster gives every result in task order
    done = _parse_executors.run_in_order(iter([("a", None, (1,)), ("b", None, (2,))]), _double, scheduler="x:1")
    assert [(key, value) for key, _, value in done] == [("a", 2), ("b", 4)]


@pytest.mark.parametrize(("raised", "said"), [
    (OSError("Timed out trying to connect to tcp://127.0.0.1:1 after 30 s"), "no Dask scheduler answers there"),
    (ValueError("missing port number"), "not a Dask scheduler address"),
    # tls:// without a TLS configuration: Dask's TypeError used to reach the user without the option's name
    (TypeError("TLS expects a `ssl_context` argument of type ssl.SSLContext"), "cannot connect"),
])
def test_a_failure_to_connect_names_the_scheduler_option(monkeypatch, raised, said):
    @contextmanager
    def failing(address, **kwargs):
        raise raised
        yield

    monkeypatch.setattr(_parse_executors, "connect", failing)
    with pytest.raises(IOKRDataError, match=f"^--scheduler tls://host:8786: {said} ") as caught:
        list(_parse_executors.run_in_order(_tasks(ValueError("unused")), _double, scheduler="tls://host:8786"))
    assert str(raised) in str(caught.value)
