"""Health rules for the virt section."""
from __future__ import annotations

from typing import Iterable

from inspector.model import Finding, Report


def rules(report: Report) -> Iterable[Finding]:
    return []
