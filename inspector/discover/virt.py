"""Discovery of the virt section (placeholder until its collector lands)."""
from __future__ import annotations

from dataclasses import dataclass

from inspector.host import HostRoot


@dataclass
class VirtSection:
    pass


def collect(root: HostRoot) -> VirtSection:
    return VirtSection()
