"""Rich renderer for the cpu section (placeholder until its collector lands)."""
from __future__ import annotations

from rich.console import RenderableType
from rich.pretty import Pretty


def render(section: object) -> RenderableType:
    return Pretty(section)
