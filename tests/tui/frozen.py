"""Frozen live data for TUI tests and snapshots: a sampler that always returns the same
LiveView, built from a fixture's report so its devices and NICs have figures, and trends
filled with a deterministic history (the last minutes a real session would have seen)."""
from __future__ import annotations

import math

from inspector.live.cpustat import LoadAvg
from inspector.live.filesystems import FsUse
from inspector.live.memory import MemoryUse
from inspector.live.pressure import Pressure
from inspector.live.procs import DStateProc, ProcIoRate
from inspector.model import Report
from inspector.tui.live import CpuView, DiskRate, LiveView, NicRate

HISTORY = 240


class FrozenSampler:
    """Stands for inspector.tui.live._Sampler: `sample()` returns the same view each time."""

    def __init__(self, view: LiveView | None):
        self.view = view            # None: no sample yet (the app made before its history)
        self.calls = 0

    def sample(self) -> LiveView | None:
        self.calls += 1
        return self.view


def _kind(dev) -> str:
    family = getattr(dev, "family", "disk")
    if getattr(dev, "parent", None):
        return "part"
    return {"md": "md", "dm": "dm", "loop": "loop", "zram": "zram", "rom": "rom"}.get(family, "disk")


def view_from_report(report: Report, wave: float = 1.0) -> LiveView:
    """Every block device and NIC of the report with figures that depend only on its position
    (and `wave`, to make a history): deterministic across runs."""
    view = LiveView(interval=1.0)
    storage = report.section("storage")
    devices = getattr(storage, "devices", {}) or {}
    for i, (name, dev) in enumerate(devices.items()):
        kind = _kind(dev)
        busy = 0.0 if kind in ("loop", "zram", "rom") else (i * 37 % 90 + 5) * wave
        view.disks.append(DiskRate(name, min(100.0, busy), 0.05 + (i % 7) * 1.7 * wave,
                                   busy * 12, busy * 3, busy * 480, busy * 96, busy / 40,
                                   kind=kind, parent=dev.parent, members=list(dev.slaves),
                                   alias=None))
        if name == next((n for n, d in devices.items() if any(m.mountpoint == "/" for m in d.mounts)), None):
            view.root_device = name
    net = report.section("net")
    nics = getattr(net, "nics", []) if isinstance(getattr(net, "nics", None), list) else []
    for i, nic in enumerate(nics):
        up = nic.operstate == "up" or nic.kind == "loopback"
        view.nics.append(NicRate(nic.name, (i + 1) * 1.3e6 * wave if up else 0.0,
                                 (i + 1) * 0.4e6 * wave if up else 0.0, 0.0, 0.5 if i == 1 else 0.0,
                                 stalled=False, operstate=nic.operstate if up else "down",
                                 carrier=True if up else None))
    view.cpu = CpuView(user=22.0 * wave, system=7.5 * wave, iowait=12.0 * wave, steal=3.0 * wave,
                       idle=max(0.0, 100 - 44.5 * wave), cpus=8)
    view.iowait, view.steal = view.cpu.iowait, view.cpu.steal
    view.load = LoadAvg(3.2 * wave, 2.1, 1.4, 4, 512)
    view.memory = MemoryUse(total_kib=32 << 20, available_kib=int((32 - 20 * wave) * (1 << 20)),
                            cached_kib=9 << 20, buffers_kib=1 << 18, swap_total_kib=8 << 20,
                            swap_free_kib=7 << 20, dirty_kib=120 << 10)
    view.pressure = {"cpu": Pressure("cpu", 4.0 * wave, 3.0, None, None),
                     "memory": Pressure("memory", 0.5 * wave, 0.2, 0.1, 0.0),
                     "io": Pressure("io", 18.0 * wave, 12.0, 9.0 * wave, 6.0)}
    view.filesystems = [FsUse("/", "ext4", "/dev/sda1", "8:1", 200 << 30, 120 << 30, 70 << 30),
                        FsUse("/var/lib/mysql", "xfs", "/dev/md1", "9:1", 2 << 40, 1900 << 30,
                              148 << 30)]
    view.top_io = [ProcIoRate(2211, "mysqld", 48e6, 12e6), ProcIoRate(811, "jbd2/sda1-8", 0.0, 2e6)]
    view.dstate = [DStateProc(2230, 2211, "mysqld", "io_schedule", 12.0, 0.0)]
    return view


def frozen_history(report: Report, trends, samples: int = HISTORY) -> LiveView:
    """Fill `trends` with `samples` views of a slow wave; returns the last one."""
    view = None
    for t in range(samples):
        view = view_from_report(report, 0.55 + 0.45 * math.sin(t / 9.0))
        trends.push(view)
    assert view is not None, "frozen_history needs one sample at least"
    return view
