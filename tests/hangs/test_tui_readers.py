"""The TUI's reads of the host, in-process: discovery in its child (tui.discovery) names a
section that does not answer, first as "no answer yet" then "timed out", and never starts it
again while it hangs; the live sampler (tui.live) bounds /proc/meminfo, /proc/pressure and
/proc/self/mountinfo per source like LiveSampler does. (A read that hangs is a function that
sleeps or waits here; test_tui_hung.py has the real FUSE mount and the real binary.)"""
from __future__ import annotations

import os
import threading
import time

import pytest

from conftest import fixture_root, replace_section
from inspector.live import filesystems as filesystems_module
from inspector.live import sampler as sampler_module
from inspector.live.sampler import LiveSampler
from inspector.model import Unknown, known
from inspector.roots.bounded import TimedOut
from inspector.roots.host import HostRoot
from inspector.tui import live as live_module
from inspector.tui.discovery import DiscoveryProcess
from slowness import slack


def _threads(pid: int) -> int:
    # fixed: a finished read's thread is gone a moment after its result is in, and nothing
    # says when (the count is compared before and after: a stuck thread stays)
    time.sleep(0.3)
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.fixture
def storage_hangs(monkeypatch):
    """The storage collector never returns (in the child, which is forked with this patch)."""
    def hung(root):
        time.sleep(3600)
    replace_section(monkeypatch, "storage", collect=hung)


@pytest.mark.serial
def test_discovery_names_the_section_still_out_then_times_it_out(storage_hangs):
    root = HostRoot(str(fixture_root("kvm-virtio-guest")))
    discovery = DiscoveryProcess(root, timeout=1.2)
    interims = []
    try:
        start = time.monotonic()
        report = discovery.collect(0.5, lambda r, pending: interims.append(
            (time.monotonic() - start, r, pending)))
        took = time.monotonic() - start
        assert 1.1 <= took < 1.2 + slack(1.0), took
        [(after, early, pending)] = interims
        assert after < 0.5 + slack(0.7) and pending == ["storage"]
        assert early.sections["storage"] == Unknown("no answer yet after 0.5 s "
                                                    "(waiting up to 1.2 s)")
        assert any(f.code == "storage.not_collected" for f in early.findings)
        assert known(early.sections["virt"]) and known(early.sections["dns"])
        assert report.sections["storage"] == Unknown("timed out after 1.2 s")
        assert known(report.sections["net"]) and known(report.host.hostname)

        # the next refresh does not wait for it again, nor start it again: no new stuck
        # thread in the child
        worker = discovery._service._worker
        assert worker is not None          # the child that answered above
        pid = worker.pid
        threads = _threads(pid)
        for _ in range(3):
            start = time.monotonic()
            again = discovery.collect()
            assert time.monotonic() - start < slack(1.5)
            assert again.sections["storage"].reason.startswith("timed out: no answer for ")
            assert known(again.sections["cpu"])
        assert _threads(pid) == threads
    finally:
        discovery.close()


def test_a_discovery_child_that_does_not_answer_is_replaced(storage_hangs):
    """The child's answer does not come in time (here: asked for less time than its
    sections' deadline): TimedOut, that child is given up, the next collection forks a new
    one."""
    root = HostRoot(str(fixture_root("kvm-virtio-guest")))
    discovery = DiscoveryProcess(root, timeout=1.0)
    first = discovery._service._worker
    try:
        with pytest.raises(TimedOut):
            discovery._service.call(("start", 5.0), 0.2)
        assert first is not None and not first.alive
        report = discovery.collect()
        assert discovery._service._worker is not first and known(report.sections["cpu"])
    finally:
        discovery.close()




def test_live_memory_that_hangs_is_named_and_not_read_again(hang):
    calls = hang(sampler_module, "read_memory")
    sampler = live_module.LiveFeed(LiveSampler(HostRoot("/"), read_timeout=0.3).sample)
    assert sampler.sample() is None            # primes the counters
    time.sleep(0.1)     # fixed: the counters' interval, so the next sample has rates
    start = time.monotonic()
    view = sampler.sample()
    assert time.monotonic() - start < 0.3 + slack(0.3)
    assert view is not None and isinstance(view.memory, Unknown)
    assert view.memory.reason.startswith("/proc/meminfo timed out: no answer for ")
    assert "/proc/meminfo" in view.timed_out
    assert isinstance(view.pressure, (dict, Unknown)) and view.cpu is not None
    assert view.disks and not view.disks_error      # the other sources stand
    for _ in range(3):
        sampler.sample()
    assert calls["read_memory"] == 1


def test_live_pressure_that_hangs_is_named(hang):
    hang(sampler_module, "read_pressure")
    sampler = live_module.LiveFeed(LiveSampler(HostRoot("/"), read_timeout=0.3).sample)
    sampler.sample()
    view = sampler.sample()
    assert view is not None and isinstance(view.pressure, Unknown)
    assert view.pressure.reason.startswith("/proc/pressure timed out")
    assert known(view.memory)


def test_a_mount_list_that_hangs_is_named_and_not_read_again(monkeypatch):
    release = threading.Event()
    root = HostRoot("/")
    real = root.try_text
    calls = []

    def try_text(rel, *args, **kwargs):
        if rel == "proc/self/mountinfo":
            calls.append(rel)
            release.wait(30)
        return real(rel, *args, **kwargs)
    monkeypatch.setattr(root, "try_text", try_text)
    sampler = filesystems_module.FilesystemSampler(root, timeout=0.3)
    try:
        start = time.monotonic()
        first = sampler.sample()
        assert time.monotonic() - start < 0.3 + slack(0.2)
        assert first == Unknown("/proc/self/mountinfo timed out after 0.3 s")
        second = sampler.sample()
        assert isinstance(second, Unknown)
        assert second.reason.startswith("/proc/self/mountinfo timed out: no answer for ")
        assert len(calls) == 1
    finally:
        release.set()
    # answered: read again, once the released read has come back
    deadline = time.monotonic() + slack(2.0)
    while not isinstance(sampler.sample(), list):
        assert time.monotonic() < deadline, "the mount list was not read again once answered"
        time.sleep(0.02)


def test_the_live_sampler_in_its_child_answers_and_closes():
    sampler = live_module.make_sampler(HostRoot("/"))
    assert sampler is not None
    try:
        assert sampler.sample() is None
        time.sleep(0.2)     # fixed: the counters' interval, so the next sample has rates
        view = sampler.sample()
        assert view is not None
        assert view.cpu is not None and known(view.memory) and view.timed_out == {}
        worker = sampler._sampler._worker
        assert worker is not None
        pid = worker.pid
    finally:
        sampler.close()
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                break
        except ChildProcessError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the sampler's child did not end on close")
