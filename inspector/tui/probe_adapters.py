"""Adapters from each probe module's API to the TUI's interval updates.

An adapter is `async def adapter(request) -> AsyncIterator[dict]` yielding dicts with the fields
of ProbeUpdate (minus run_id) every interval, and one final {"summary": ...}. Only the probes
that have landed are registered; the Probes screen says plainly which ones have not.
"""
from __future__ import annotations

from typing import AsyncIterator

from inspector.tui.probe_runs import KINDS, ProbeRequest, probe_available

ADAPTERS: dict = {}


def _register() -> None:
    for kind in KINDS:
        if probe_available(kind) is None and kind in _FACTORIES:
            ADAPTERS[kind] = _FACTORIES[kind]


_FACTORIES: dict = {}
_register()
