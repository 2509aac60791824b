"""Drive and flash-card health (placeholder until its collector lands).

Contract: `collect(root, names)` takes block device names from /sys/block and returns
{name: health dataclass} for the devices it knows how to check."""
from __future__ import annotations

from typing import Any

from inspector.host import HostRoot


def collect(root: HostRoot, names: list[str]) -> dict[str, Any]:
    return {}
