"""The cycle collector set for a session that redraws every second for hours.

A full collection walks every object the collector tracks: with Textual, Rich, the modules and
the first screen loaded that took 52 ms, about once every 30 s at 1 Hz (timed in the TUI at
200x50); young collections ran every 700 allocations, a few per frame. What exists once the
first report is on screen lives for the session, so `settle()` freezes it (gc.freeze: full
collections then walk only what came later, 9 ms) and lets young collections wait for 5,000
allocations. Together: the collector's share of the UI thread from about 3 to 0.8 ms a second.
"""
from __future__ import annotations

import gc

YOUNG_THRESHOLD = 5000
_settled = False


def settle() -> None:
    """Once per process: collect what is garbage now, freeze the rest, widen the young
    generation. Cycles among the frozen objects that die later are never collected: only
    objects of the start (the first screen's footer keys) can be among them, once."""
    global _settled
    if _settled:
        return
    _settled = True
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
    release_free_heap()


def release_free_heap() -> bool:
    """Hand the heap pages start-up freed (imports, the first report's parsing) back to the
    kernel: glibc keeps them resident otherwise. A no-op off glibc."""
    try:
        import ctypes
        return bool(ctypes.CDLL(None).malloc_trim(0))
    except (OSError, AttributeError):
        return False
