"""Discovery of the storage section (placeholder until its collector lands)."""
from __future__ import annotations

from dataclasses import dataclass

from inspector.host import HostRoot


@dataclass
class StorageSection:
    pass


def collect(root: HostRoot) -> StorageSection:
    return StorageSection()
