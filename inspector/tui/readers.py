"""The TUI's readers of the host, started before Textual is imported.

Discovery and live sampling each read the host in a child process of their own (tui.discovery,
tui.live): forked from a process that has not imported Textual and Rich yet, each child holds
about 12 MB less (a forked child's resident size starts as its parent's), so
`inspector/commands/tui.py` starts them first and hands them to InspectorApp.
"""
from __future__ import annotations

from typing import Any

from inspector.collect import DEFAULT_TIMEOUT
from inspector.roots.host import HostRoot
from inspector.tui.discovery import DiscoveryProcess


def start_readers(root: HostRoot, timeout: float = DEFAULT_TIMEOUT
                  ) -> tuple[DiscoveryProcess, Any]:
    """(discovery, sampler): the sampler False where there is nothing live to sample (a
    capture), which InspectorApp reads as "live sampling off"."""
    from inspector.tui.live import make_sampler
    discovery = DiscoveryProcess(root, timeout)
    sampler = make_sampler(root)
    return discovery, sampler if sampler is not None else False
