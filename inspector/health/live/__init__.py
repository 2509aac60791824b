"""Live rules: findings over a sliding window of live samples (inspector.live.Rates), each
with the time it began and, once it clears, the time it ended. See engine.LiveRules and the
API in inspector.live's docstring."""
from __future__ import annotations

from inspector.health.live.engine import RULES, LiveFinding, LiveRules
from inspector.health.live.window import Context, Window

__all__ = ["LiveRules", "LiveFinding", "Context", "Window", "RULES"]
