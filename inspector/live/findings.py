"""LiveFinding: a live rule's finding with the time it began and the time it ended (the type
inspector.health.live produces; here so the live sample can carry it typed)."""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

from inspector.model import Finding, Level


@dataclass
class LiveFinding:
    """A live finding and when it began and ended (unix times)."""
    finding: Finding        # the latest level, message and evidence
    since: float
    ended: float | None = None
    worst: Level = Level.OK  # the worst level it reached

    @property
    def active(self) -> bool:
        return self.ended is None

    @property
    def key(self) -> tuple[str, str]:
        return (self.finding.code, self.finding.subject)

    def as_finding(self) -> Finding:
        """The finding as the other findings read, with its times: an ended one is OK."""
        began = _clock(self.since)
        f = self.finding
        if self.ended is None:
            return replace(f, evidence=[f"since {began}", *f.evidence])
        return replace(f, level=Level.OK,
                       message=f"ended {_clock(self.ended)} (from {began}, worst "
                               f"{self.worst.label}): {f.message}",
                       evidence=[f"from {began} to {_clock(self.ended)}", *f.evidence])


def _clock(wall: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(wall))
