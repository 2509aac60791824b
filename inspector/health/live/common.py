"""Small helpers the live rules share: figures as text, culprit lists."""
from __future__ import annotations

from inspector.live.processes import ProcessRate

TOP_CULPRITS = 3


def who(p: ProcessRate) -> str:
    return f"{p.comm} (pid {p.pid}, {p.user})"


def culprits(pairs: list[tuple[float, ProcessRate]], unit: str, limit: int = TOP_CULPRITS,
             fmt: str = "{:.0f}") -> list[str]:
    return [f"{who(p)} {fmt.format(v)}{unit}" for v, p in pairs[:limit]]


def mib(kib: float) -> str:
    return f"{kib / 1024:.0f} MiB"


def bytes_s(value: float) -> str:
    for unit, size in (("GiB/s", 1 << 30), ("MiB/s", 1 << 20), ("KiB/s", 1 << 10)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B/s"


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
