"""CPU seconds per test (this process's and its reaped children's), for finding what makes the
suite slow on a 2-core machine: `INSPECTOR_TEST_CPU_LOG=FILE make test` appends a line per test
phase, `seconds nodeid phase`, from every xdist worker. Wall time (pytest --durations) counts
waiting too; on 2 shared cores, CPU is what the other tests wait for."""
from __future__ import annotations

import os
import resource
from collections.abc import Iterator

import pytest

LOG_ENV = "INSPECTOR_TEST_CPU_LOG"


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _log(item: pytest.Item, phase: str, seconds: float) -> None:
    path = os.environ.get(LOG_ENV)
    if path and seconds >= 0.05:
        with open(path, "a") as log:
            log.write(f"{seconds:.2f} {item.nodeid} {phase}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    start = _cpu()
    yield
    _log(item, "setup", _cpu() - start)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    start = _cpu()
    yield
    _log(item, "call", _cpu() - start)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    start = _cpu()
    yield
    _log(item, "teardown", _cpu() - start)
