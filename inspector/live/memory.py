"""/proc/meminfo: memory and swap use, as `free` and glances show it.

"used" is MemTotal - MemAvailable (what procps' free calls used since 3.3.10): the kernel's own
estimate of what could be had without swapping, so page cache does not read as used. Dirty and
Writeback matter in an IO incident: a large Dirty figure is the write-back still to come.
"""
from __future__ import annotations

from dataclasses import dataclass

from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

FIELDS = {"MemTotal": "total_kib", "MemFree": "free_kib", "MemAvailable": "available_kib",
          "Buffers": "buffers_kib", "Cached": "cached_kib", "SwapTotal": "swap_total_kib",
          "SwapFree": "swap_free_kib", "Dirty": "dirty_kib", "Writeback": "writeback_kib"}


@dataclass(slots=True)
class MemoryUse:
    """Figures in KiB (meminfo's "kB" are KiB)."""
    total_kib: int
    available_kib: int
    free_kib: int = 0
    buffers_kib: int = 0
    cached_kib: int = 0
    swap_total_kib: int = 0
    swap_free_kib: int = 0
    dirty_kib: int = 0
    writeback_kib: int = 0

    @property
    def used_kib(self) -> int:
        return max(self.total_kib - self.available_kib, 0)

    @property
    def swap_used_kib(self) -> int:
        return max(self.swap_total_kib - self.swap_free_kib, 0)


def parse_meminfo(text: str) -> MemoryUse | Unknown:
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        name = FIELDS.get(key)
        if name is None:
            continue
        try:
            values[name] = int(rest.split()[0])
        except (IndexError, ValueError):
            continue
    if "total_kib" not in values:
        return Unknown("no MemTotal in /proc/meminfo")
    if "available_kib" not in values:   # kernels before 3.14: free + buffers + cache
        values["available_kib"] = (values.get("free_kib", 0) + values.get("buffers_kib", 0)
                                   + values.get("cached_kib", 0))
    return MemoryUse(**values)


def read_memory(root: HostRoot) -> MemoryUse | Unknown:
    try:
        return parse_meminfo(root.read_text("proc/meminfo", 16384))
    except Unavailable as exc:
        return exc.unknown()
