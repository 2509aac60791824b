"""Rich rendering: the report (inspector.render.report: findings first, then one renderer per
section), diffs, fleets and the sections' rows.

The report's functions are re-exported here on first use, not imported with the package: a
sibling such as inspector.render.diff (`inspector diff`) would otherwise import every
section's collector and rich's console with it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inspector.render.report import (  # noqa: F401
        render_header,
        render_report,
        render_section,
        render_timings,
    )

_FROM_REPORT = ("render_header", "render_report", "render_section", "render_timings")


def __getattr__(name: str) -> Any:
    if name in _FROM_REPORT:
        from inspector.render import report
        return getattr(report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
