"""The last minutes of every live figure the screens chart, kept by the app across screens.

One bounded deque per series ("cpu.user", "disk.vda.util", "nic.eth0.rx" ...), fed once per
live sample in the UI thread. A device that disappears loses its series; a host with thousands
of devices keeps series for the first MAX_DEVICES only (each figure's series holds CAPACITY
floats: tests/bench/bench_costs.py prints its size).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Literal

CAPACITY = 300          # 5 minutes at 1 Hz
MAX_DEVICES = 64

CpuFigure = Literal["user", "system", "iowait", "steal"]
DiskFigure = Literal["util", "await", "iops"]
NicFigure = Literal["rx", "tx", "errors"]


# The series' names, in one place: Trends.push files them, the screens read them back.
def cpu_series(figure: CpuFigure) -> str:
    return f"cpu.{figure}"


def disk_series(device: str, figure: DiskFigure) -> str:
    return f"disk.{device}.{figure}"


def nic_series(nic: str, figure: NicFigure) -> str:
    return f"nic.{nic}.{figure}"


class Trends:
    def __init__(self, capacity: int = CAPACITY):
        self.capacity = capacity
        self._series: dict[str, deque] = {}
        self.samples = 0

    def get(self, key: str) -> deque:
        return self._series.get(key) or deque()

    def keys(self) -> Iterable[str]:
        return self._series.keys()

    def add(self, key: str, value: float | None) -> None:
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = deque(maxlen=self.capacity)
        series.append(value)

    def push(self, view) -> None:
        """Every figure of one LiveView (inspector.tui.live)."""
        if view is None:
            return
        self.samples += 1
        seen = set()

        def add(key: str, value) -> None:
            seen.add(key)
            self.add(key, value)
        cpu = view.cpu
        if hasattr(cpu, "user"):
            for name in ("user", "system", "iowait", "steal"):
                add(cpu_series(name), getattr(cpu, name))
        load = view.load
        if hasattr(load, "load1"):
            add("load1", load.load1)
        pressure = view.pressure if isinstance(view.pressure, dict) else {}
        for resource, p in pressure.items():
            if hasattr(p, "some_avg10"):
                add(f"psi.{resource}", p.some_avg10)
        memory = view.memory
        if hasattr(memory, "total_kib") and memory.total_kib:
            add("mem.used", 100.0 * memory.used_kib / memory.total_kib)
        for disk in view.disks[:MAX_DEVICES]:
            add(disk_series(disk.name, "util"), disk.util)
            add(disk_series(disk.name, "await"), disk.await_ms)
            add(disk_series(disk.name, "iops"), (disk.r_s or 0.0) + (disk.w_s or 0.0))
        for nic in view.nics[:MAX_DEVICES]:
            add(nic_series(nic.name, "rx"), nic.rx_bps)
            add(nic_series(nic.name, "tx"), nic.tx_bps)
            add(nic_series(nic.name, "errors"), (nic.errors_s or 0.0) + (nic.drops_s or 0.0))
        # a device gone from a good sample loses its series (not on a failed read: no list)
        prefixes = tuple(p for p, items in (("disk.", view.disks), ("nic.", view.nics)) if items)
        for key in [k for k in self._series if k.startswith(prefixes) and k not in seen]:
            del self._series[key]
