"""Textual's Footer, with its old keys let go when it recomposes.

The Footer recomposes on every change of the screen's bindings (each focus change: every
probe run moves the focus twice). Each FooterKey it composes binds its `compact` to the
footer's (`data_bind`), which leaves a (key, setter) entry in the footer's own watcher list;
Textual prunes that list of closed nodes only when `compact` changes, which it never does
here. So every recompose kept the previous keys alive with their styles, render caches and
message queues: ~0.5 MB of the TUI's memory per probe run (Textual issue #6666, open in 8.2).
"""
from __future__ import annotations

from textual.widgets import Footer as TextualFooter

WATCHERS = "__watchers"     # where textual.reactive._watch keeps an object's watchers


class Footer(TextualFooter):
    async def recompose(self) -> None:
        await super().recompose()
        self.prune_watchers()

    def prune_watchers(self) -> None:
        """Drop the entries of closed nodes, Textual's own rule (Reactive._check_watchers)."""
        watchers = getattr(self, WATCHERS, None)
        if not watchers:
            return
        for entries in watchers.values():
            entries[:] = [(node, callback) for node, callback in entries
                          if not getattr(node, "_closing", False)]
