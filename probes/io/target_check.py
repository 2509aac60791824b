"""What an IO probe's target is (a directory, something else, nothing), asked of a forked child
under a deadline (probes.bounded_ask). The TUI's form checks the target before its
confirmation, in the UI's process: a stat there of a path on a mount that never answers froze
the screen for good, and the thread stuck in it would keep the process from exiting.

The answer is kept for a second, so the confirmation that follows a check does not ask
again."""
from __future__ import annotations

import os
import time

from inspector.probes.bounded_ask import ask_bounded
from inspector.roots.bounded import TimedOut, WorkerFailed

CHECK_TIMEOUT_S = 2.0
KEPT_S = 1.0
HUNG = "(a hung filesystem? look for processes in D state)"

_last: dict[str, tuple[float, str]] = {}


class NoAnswer(Exception):
    """The target did not answer in time; str() is the line for the operator."""


def target_kind(path: str, timeout: float = CHECK_TIMEOUT_S) -> str:
    """"dir", "other" (a file, a block device ...) or "missing"; NoAnswer when the path has
    not answered within `timeout` seconds."""
    now = time.monotonic()
    kept = _last.get(path)
    if kept is not None and now - kept[0] < KEPT_S:
        return kept[1]
    try:
        kind = ask_bounded(lambda: _kind(path), timeout)
    except TimedOut:
        raise NoAnswer(f"no answer from {path} after {timeout:g} s {HUNG}") from None
    except WorkerFailed as exc:
        raise NoAnswer(f"{path}: cannot be checked ({exc})") from None
    _last.clear()               # one path at a time: the form's
    _last[path] = (now, kind)
    return kind


def _kind(path: str) -> str:
    if os.path.isdir(path):
        return "dir"
    return "other" if os.path.exists(path) else "missing"
