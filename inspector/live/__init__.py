"""Live samplers (rates need two samples): diskstats, NIC counters, CPU, processes."""
from __future__ import annotations

from inspector.host import HostRoot


def capture_sample(root: HostRoot) -> None:
    """Read one sample of every live counter through `root` so a capture carries it."""
