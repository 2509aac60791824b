"""The TUI's readers of the host, started before Textual is imported.

Discovery and live sampling read the host in one child process (tui.discovery, tui.live), each
service on a socket and in a thread of its own there (inspector.roots.bounded.Worker
.in_one_child): a child's resident size starts as its parent's, so one child instead of two
is about 20 MB less summed over the TUI's processes, and forked from a process that has not
imported Textual and Rich yet, it holds about 12 MB less again. `inspector/commands/tui.py`
starts them first and hands them to InspectorApp. A service whose child does not answer in
time ends it and forks one of its own (the other service then does the same at its next call).
"""
from __future__ import annotations

from typing import Any

from inspector.report.collect import DEFAULT_TIMEOUT
from inspector.roots.bounded import Worker
from inspector.roots.host import HostRoot
from inspector.tui.discovery import DiscoveryProcess, discovery_service


def start_readers(root: HostRoot, timeout: float = DEFAULT_TIMEOUT
                  ) -> tuple[DiscoveryProcess, Any]:
    """(discovery, sampler): the sampler False where there is nothing live to sample (a
    capture), which InspectorApp reads as "live sampling off"."""
    from inspector.live.sampler import READ_TIMEOUT
    from inspector.live.worker import sampler_service
    if not root.live:       # tui.live.unavailable_reason, read before importing tui.live
        return DiscoveryProcess(root, timeout), False
    discovery_worker, sampler_worker = Worker.in_one_child(
        [discovery_service(root, timeout), sampler_service(root, read_timeout=READ_TIMEOUT)])
    # after the fork: the live rules and the configuration (tui.live) run in the UI only,
    # and the child's resident size is what the UI had imported when it forked
    from inspector.tui.live import make_sampler
    discovery = DiscoveryProcess(root, timeout, discovery_worker)
    sampler = make_sampler(root, sampler_worker)
    return discovery, sampler if sampler is not None else False
