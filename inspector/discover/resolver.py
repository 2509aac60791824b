"""Discovery of the resolver section (placeholder until its collector lands)."""
from __future__ import annotations

from dataclasses import dataclass

from inspector.host import HostRoot


@dataclass
class ResolverSection:
    pass


def collect(root: HostRoot) -> ResolverSection:
    return ResolverSection()
