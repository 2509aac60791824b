"""Rich rendering: the report (inspector.render.report: findings first, then one renderer per
section), diffs, fleets and the sections' rows.

The package imports nothing itself: a sibling such as inspector.render.diff (`inspector diff`)
would otherwise import every section's collector and rich's console with the report's
functions."""
