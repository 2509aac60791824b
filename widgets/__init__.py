"""Reusable Textual widgets (installed as inspector.widgets)."""
