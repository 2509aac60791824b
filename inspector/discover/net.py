"""Discovery of the net section (placeholder until its collector lands)."""
from __future__ import annotations

from dataclasses import dataclass

from inspector.host import HostRoot


@dataclass
class NetSection:
    pass


def collect(root: HostRoot) -> NetSection:
    return NetSection()
