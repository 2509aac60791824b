"""CPU discovery on this machine: load average present, topology and steal agree with the OS."""
from __future__ import annotations

import os

import psutil
import pytest

from inspector.discover import cpu
from inspector.roots.host import HostRoot


def test_live_cpu_section():
    s = cpu.collect(HostRoot("/"))
    assert s.threads == os.sysconf("SC_NPROCESSORS_ONLN")
    assert isinstance(s.cores, int) and 1 <= s.cores <= s.threads
    assert isinstance(s.sockets, int) and s.sockets >= 1
    assert isinstance(s.model, str) and s.model
    load = os.getloadavg()
    assert isinstance(s.load_average, list), s.load_average
    assert s.load_average[0] == pytest.approx(load[0], abs=1.0)
    tasks, runnable = s.volatile.tasks, s.volatile.runnable
    assert isinstance(tasks, int) and isinstance(runnable, int), (tasks, runnable)
    assert tasks >= runnable >= 1
    times = psutil.cpu_times()
    share = 100 * times.steal / (sum(times) - times.guest - times.guest_nice)
    assert s.steal_percent == pytest.approx(share, abs=0.5)
