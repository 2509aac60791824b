"""Discovery of the cpu section (placeholder until its collector lands)."""
from __future__ import annotations

from dataclasses import dataclass

from inspector.host import HostRoot


@dataclass
class CpuSection:
    pass


def collect(root: HostRoot) -> CpuSection:
    return CpuSection()
