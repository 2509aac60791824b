"""The parts that bound reads, in-process: the sampler's per-source deadline, the child process
that commands read through, and check's verdict when a collector hangs. (A read that hangs is
a function waiting on an Event here; test_hung_mounts.py has the real FUSE mount.)"""
from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest

from conftest import fixture_root, replace_section, run_cli
from inspector.live import sampler as sampler_module
from inspector.live.sampler import LiveSampler
from inspector.model import Unknown, known
from inspector.roots.bounded import TimedOut, WithFds, Worker, WorkerFailed, run_forked
from inspector.roots.host import HostRoot
from slowness import extra, slack


@pytest.mark.serial
def test_a_source_that_hangs_is_timed_out_once_and_the_rest_is_kept(hang):
    calls = hang(sampler_module, "read_diskstats")
    # the sample's budget is wall time: on a loaded machine the other reads (and the kernel
    # log's, started once vmstat is in) need more of it than 0.3 s
    budget = round(slack(0.3), 1)
    sampler = LiveSampler(HostRoot("/"), read_timeout=budget)
    start = time.monotonic()
    first = sampler.sample()
    took = time.monotonic() - start
    assert took < budget + slack(0.3), took
    assert isinstance(first.disks, Unknown)
    # the time the read had: the budget less the moments before its thread began it (at once
    # when quiet; a loaded machine starts it later)
    waited = re.fullmatch(r"timed out after (\d+(?:\.\d)?) s", first.timed_out["/proc/diskstats"])
    assert waited and float(waited[1]) <= budget, first.timed_out
    assert first.disks.reason == f"/proc/diskstats {first.timed_out['/proc/diskstats']}"
    assert list(first.timed_out) == ["/proc/diskstats"], first.timed_out
    assert known(first.cpu) and known(first.nics) and known(first.load) and known(first.dstate)

    start = time.monotonic()
    second = sampler.sample()          # the read still hangs: not started again, not awaited
    assert time.monotonic() - start < slack(0.2)
    assert isinstance(second.disks, Unknown)
    assert second.disks.reason.startswith("/proc/diskstats timed out: no answer for ")
    assert calls["read_diskstats"] == 1
    assert known(second.cpu)


def test_a_hung_first_source_does_not_starve_the_others(hang):
    """Sources are read in turn in one thread; after the patience, each not begun gets its
    own thread, so /proc/stat hanging (read first) costs the others nothing."""
    hang(sampler_module, "read_cpu")
    # the process walk alone takes longer than 0.5 s on a loaded machine: not the hang's cost
    snap = LiveSampler(HostRoot("/"), read_timeout=slack(0.5)).sample()
    assert isinstance(snap.cpu, Unknown) and "/proc/stat" in snap.timed_out
    assert known(snap.disks) and known(snap.nics) and known(snap.load) and known(snap.uptime)
    assert known(snap.dstate)           # without /proc/stat's blocked count: no thread walk


def test_a_sampler_that_recovers_reads_again(monkeypatch):
    release = threading.Event()
    real = sampler_module.read_loadavg

    def slow(root):
        release.wait(10)
        return real(root)
    monkeypatch.setattr(sampler_module, "read_loadavg", slow)
    sampler = LiveSampler(HostRoot("/"), read_timeout=slack(0.2))
    assert isinstance(sampler.sample().load, Unknown)
    release.set()
    give_up = time.monotonic() + 10     # the late read comes back, and a sample uses it
    while not known((snap := sampler.sample()).load) and time.monotonic() < give_up:
        time.sleep(0.05)
    assert known(snap.load) and snap.timed_out == {}


def test_run_forked_gives_the_value_an_error_or_a_timeout():
    assert run_forked(lambda: os.getpid(), 5) != os.getpid()
    with pytest.raises(WorkerFailed, match="ZeroDivisionError"):
        run_forked(lambda: 1 / 0, 5)
    start = time.monotonic()
    with pytest.raises(TimedOut, match="timed out after 0.3 s"):
        run_forked(lambda: time.sleep(30), 0.3)
    assert time.monotonic() - start < 0.3 + slack(0.7)


def test_a_worker_that_times_out_is_killed_and_not_waited_for():
    def sleep_then_return(seconds: float) -> float:
        time.sleep(seconds)
        return seconds

    worker = Worker(sleep_then_return)
    assert worker.call(0.01, 5) == 0.01
    with pytest.raises(TimedOut):
        worker.call(30, 0.2)
    assert not worker.alive
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(worker.pid, 0)
            state = Path(f"/proc/{worker.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):     # gone, or reaped between the two
            break
        if state == "Z":
            break                       # killed; reaped at the next fork
        time.sleep(0.02)
    else:
        pytest.fail("the timed-out worker is still running")


def test_a_child_hands_back_an_open_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"opened in the child")
    got = run_forked(lambda: WithFds("ok", [os.open(path, os.O_RDONLY)]), 5)
    assert got.value == "ok"
    assert os.pread(got.fds[0], 100, 0) == b"opened in the child"
    os.close(got.fds[0])


def test_the_hostname_read_is_bounded_too(monkeypatch):
    from inspector.report import collect
    real = HostRoot.try_line
    release = threading.Event()

    def try_line(self, rel):
        if rel == "proc/sys/kernel/hostname":
            release.wait(30)
        return real(self, rel)
    monkeypatch.setattr(HostRoot, "try_line", try_line)
    try:
        start = time.monotonic()
        report = collect.build_report(HostRoot(str(fixture_root("storage-raid1-faulty"))),
                                      timeout=0.5)
        assert time.monotonic() - start < 0.5 + slack(0.5)
    finally:
        release.set()
    assert report.host.hostname == Unknown("timed out after 0.5 s")
    assert not any(isinstance(s, Unknown) for s in report.sections.values())


def _hang_collector(monkeypatch, section: str) -> None:
    replace_section(monkeypatch, section, collect=lambda root, *a, **k: time.sleep(60))


def test_check_is_unknown_when_a_collector_hangs_beside_a_warning(monkeypatch):
    """xen-pv-guest has a WARN finding; with storage hung the check said WARNING (exit 1):
    a section not checked may hide worse, so it is UNKNOWN, within --timeout."""
    assert run_cli("check", "--root", str(fixture_root("xen-pv-guest"))).status == 1
    _hang_collector(monkeypatch, "storage")
    start = time.monotonic()
    res = run_cli("check", "--root", str(fixture_root("xen-pv-guest")), "--timeout", "2")
    assert time.monotonic() - start <= 2.0 + extra(0.5)
    assert res.status == 3, res.out
    assert res.out.startswith("INSPECTOR UNKNOWN - storage: storage not collected: timed out")
    assert any(line.startswith("[WARN] ") for line in res.out.splitlines()[1:]), res.out


def test_check_stays_critical_when_a_collector_hangs(monkeypatch):
    _hang_collector(monkeypatch, "net")
    res = run_cli("check", "--root", str(fixture_root("storage-raid1-faulty")), "--timeout", "2")
    assert res.status == 2, res.out
    assert "[UNKNOWN] net: net not collected: timed out" in res.out
