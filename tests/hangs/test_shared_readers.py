"""The TUI's discovery and live sampler share one child (inspector.tui.readers): both answer
from it, closing both ends it, and a service that gives the child up (it did not answer in
time) leaves the other to fork a child of its own at its next call, not to fail."""
from __future__ import annotations

import os
import time

import pytest

from inspector.model import known
from inspector.roots.bounded import TimedOut, Worker
from inspector.roots.host import HostRoot
from inspector.tui.discovery import DiscoveryProcess
from inspector.tui.readers import start_readers
from slowness import slack


def _worker(discovery: DiscoveryProcess) -> Worker:
    worker = discovery._service._worker
    assert worker is not None
    return worker


def _ended(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return True
        except ChildProcessError:
            return True
        time.sleep(0.05)
    return False


def _children() -> set[int]:
    with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
        return {int(pid) for pid in f.read().split()}


def test_discovery_and_sampler_answer_from_one_child():
    before = _children()
    discovery, sampler = start_readers(HostRoot("/"), timeout=5.0)
    try:
        pid = _worker(discovery).pid
        assert sampler._sampler._worker.pid == pid
        assert _children() - before == {pid}          # one child, not one per service
        assert sampler.sample() is None                # primes the counters
        report = discovery.collect()                   # while the sampler's half is idle
        time.sleep(0.2)
        view = sampler.sample()
        assert known(report.sections["cpu"]) and known(report.host.hostname)
        assert view is not None and known(view.memory) and view.cpu is not None
    finally:
        discovery.close()
        assert not _ended(pid, 0.3)                    # the sampler still uses it
        sampler.close()
    assert _ended(pid, slack(3.0)), "the shared child did not end once both closed"


def test_a_service_that_gives_the_child_up_leaves_the_other_to_fork_its_own():
    discovery, sampler = start_readers(HostRoot("/"), timeout=5.0)
    shared = _worker(discovery)
    try:
        with pytest.raises(TimedOut):      # asked to answer sooner than it can
            discovery._service.call(("start", 3.0), 0.01)
        assert not shared.alive and not sampler._sampler._worker.alive
        assert _ended(shared.pid, slack(3.0))
        # the sampler's next call forks its own child instead of failing on the dead one
        assert sampler.sample() is None
        time.sleep(0.2)
        view = sampler.sample()
        assert view is not None and known(view.memory)
        assert sampler._sampler._worker.pid != shared.pid
        report = discovery.collect()
        assert known(report.sections["cpu"])
        assert _worker(discovery).pid not in (shared.pid,
                                                      sampler._sampler._worker.pid)
    finally:
        discovery.close()
        sampler.close()


def test_workers_in_one_child_each_answer_their_own_requests():
    first, second = Worker.in_one_child([lambda r: ("first", r), lambda r: ("second", r)])
    try:
        assert first.pid == second.pid
        assert second.call(2, 5.0) == ("second", 2)
        assert first.call(1, 5.0) == ("first", 1)
        first.close()
        assert second.call(3, 5.0) == ("second", 3)   # the child serves on
    finally:
        first.close()
        second.close()
    assert _ended(first.pid, slack(3.0))
