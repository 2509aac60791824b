"""Health rules for the dns section."""
from __future__ import annotations

from typing import Iterable

from inspector.model import Finding, Report


def rules(report: Report) -> Iterable[Finding]:
    return []
