"""Rich renderer for the virt section (placeholder until its collector lands)."""
from __future__ import annotations

from rich.console import RenderableType
from rich.pretty import Pretty


def render(section: object) -> RenderableType:
    return Pretty(section)
