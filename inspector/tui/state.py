"""What a screen reads from the app and asks of it, typed. InspectorApp implements
InspectorState; screens reach it as `self.inspector` (inspector.tui.base), never through
getattr/hasattr on `self.app`. Textual's own App API (push_screen, size, batch_update ...) stays
`self.app`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:   # types only: the app imports the screens, which import this
    from inspector.model import Report
    from inspector.probes.request import ProbeRequest
    from inspector.roots.host import HostRoot
    from inspector.tui.live import LiveView
    from inspector.tui.probes.runs import ProbeManager
    from inspector.tui.trends import Trends


class InspectorState(Protocol):
    root: HostRoot                      # the host (live "/") or capture shown
    report: Report | None               # the latest discovery; None before the first
    collect_error: str | None           # why the last discovery failed or timed out
    sampler: Any                        # the live sampler; None: live sampling is off
    live_sample: LiveView | None        # the latest live rates
    live_error: str | None              # why there is no current live sample
    trends: Trends                      # the last minutes of every live figure
    probes: ProbeManager                # the probe runs of the session
    # a form the Probes screen opens when it is shown: (kind, target)
    pending_probe_form: tuple[str, str | None] | None
    pending_probe_requests: list[ProbeRequest]   # `inspector --probe SPEC`: started at launch

    def status_line(self) -> str: ...

    def open_probe_form(self, kind: str, target: str | None = None) -> None: ...

    def open_history(self) -> None: ...

    def action_back(self) -> None: ...
