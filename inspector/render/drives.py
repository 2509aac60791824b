"""Rich rendering of one device's health block (placeholder until drive health lands)."""
from __future__ import annotations

from rich.console import RenderableType
from rich.pretty import Pretty


def render_health(health: object) -> RenderableType:
    return Pretty(health)
