"""md resync, recovery, check and reshape progress: what is running, how far, how fast.

sysfs first (md(4)): md/sync_action (idle, resync, recover, check, repair, reshape, frozen),
md/sync_completed ("done / total" in 512-byte sectors, or "none"), md/sync_speed (KiB/s over
the last seconds), md/degraded. /proc/mdstat's progress line ("recovery = 12.6%
(12345/97656) finish=1.2min speed=10240K/sec") stands in where sysfs lacks them (an old
kernel, a sosreport).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

_PROGRESS = re.compile(
    r"(?P<action>resync|recovery|reshape|check|repair)\s*=\s*[\d.]+%\s*"
    r"\((?P<done>\d+)/(?P<total>\d+)\)(?:\s*finish=(?P<finish>[\d.]+)min)?"
    r"(?:\s*speed=(?P<speed>\d+)K/sec)?")
_MDSTAT_ACTION = {"recovery": "recover"}


@dataclass(slots=True)
class MdSync:
    """One array's background work at one moment."""
    name: str
    action: str                    # idle, resync, recover, check, repair, reshape, frozen
    done_sectors: int | None       # None: not running, or unknown
    total_sectors: int | None
    speed_kib_s: float | None      # the kernel's own recent speed
    degraded: int | None = None

    @property
    def running(self) -> bool:
        return self.action not in ("idle", "frozen") and self.done_sectors is not None

    @property
    def fraction(self) -> float | None:
        if self.done_sectors is None or not self.total_sectors:
            return None
        return self.done_sectors / self.total_sectors

    def eta_s(self, speed_kib_s: float | None = None) -> float | None:
        """Seconds left at `speed_kib_s` (default: the kernel's figure)."""
        speed = self.speed_kib_s if speed_kib_s is None else speed_kib_s
        if not self.running or not speed or self.total_sectors is None \
                or self.done_sectors is None:
            return None
        return (self.total_sectors - self.done_sectors) / 2 / speed


def _int(text: str | Unknown) -> int | None:
    if isinstance(text, str):
        try:
            return int(text.split()[0])
        except (ValueError, IndexError):
            return None
    return None


def read_md_sync(root: HostRoot, names: list[str]) -> dict[str, MdSync] | Unknown:
    """Every md array among `names` (block device names)."""
    out: dict[str, MdSync] = {}
    mdstat: dict[str, MdSync] | None = None
    for name in names:
        if not name.startswith("md") or not root.exists(f"sys/block/{name}/md"):
            continue
        base = f"sys/block/{name}/md"
        action = root.try_line(f"{base}/sync_action")
        completed = root.try_line(f"{base}/sync_completed")
        if isinstance(action, str) and isinstance(completed, str):
            done = total = None
            if "/" in completed:
                left, _, right = completed.partition("/")
                done, total = _int(left), _int(right)
            out[name] = MdSync(name, action, done, total,
                               _float(root.try_line(f"{base}/sync_speed")),
                               _int(root.try_line(f"{base}/degraded")))
            continue
        if mdstat is None:
            mdstat = read_mdstat_progress(root)
        out[name] = mdstat.get(name) or MdSync(name, "idle", None, None, None)
    return out


def _float(text: str | Unknown) -> float | None:
    if isinstance(text, str):
        try:
            return float(text.split()[0])
        except (ValueError, IndexError):
            return None
    return None


def parse_mdstat_progress(text: str) -> dict[str, MdSync]:
    """Arrays with a progress line in /proc/mdstat (KiB blocks there, sectors here)."""
    out: dict[str, MdSync] = {}
    current = None
    for line in text.splitlines():
        head = line.split(" : ", 1)
        if len(head) == 2 and head[0].strip().startswith("md"):
            current = head[0].strip()
            out[current] = MdSync(current, "idle", None, None, None)
            continue
        match = _PROGRESS.search(line)
        if match and current:
            action = match["action"]
            out[current] = MdSync(current, _MDSTAT_ACTION.get(action, action),
                                  int(match["done"]) * 2, int(match["total"]) * 2,
                                  float(match["speed"]) if match["speed"] else None)
    return out


def read_mdstat_progress(root: HostRoot) -> dict[str, MdSync]:
    try:
        return parse_mdstat_progress(root.read_text("proc/mdstat", 1 << 20))
    except Unavailable:
        return {}
