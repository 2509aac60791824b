"""Last-seen drive values kept between runs, so a *rising* bad-block rate can be noticed.

The store is one small JSON file in the state directory:
  $INSPECTOR_STATE_DIR, else /var/lib/inspector when run as root, else
  $XDG_STATE_HOME/inspector (default ~/.local/state/inspector).
It belongs to the machine running inspector, so it is read and written only for a live root;
a capture carries the previous value it saw as a recorded fact instead (see hio.py).

The trend arithmetic is pure (`rose`, `next_trend`) so snapshot/diff can reuse it.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from inspector.roots.fork_locks import lock_renewed_at_fork

STATE_FILE = "drive-trends.json"
# A rise stays reported this long after it was seen, so a warning does not vanish on the very
# next run just because the new (higher) value became the baseline.
RISE_WINDOW_S = 7 * 24 * 3600
_EPSILON = 1e-9
_lock = lock_renewed_at_fork()


def rose(before: float | None, after: float | None) -> bool:
    """True when a value went up between two readings (None: nothing to compare)."""
    return before is not None and after is not None and after > before + _EPSILON


@dataclass
class Trend:
    value: float                 # last value seen
    seen_at: float               # when this value was first seen (unix time)
    rose_from: float | None = None   # the value before the last rise
    rose_at: float | None = None     # when that rise was first seen

    def to_json(self) -> dict:
        return {"value": self.value, "seen_at": self.seen_at, "rose_from": self.rose_from,
                "rose_at": self.rose_at}

    @classmethod
    def from_json(cls, d: object) -> Trend | None:
        if not isinstance(d, dict):
            return None
        try:
            return cls(value=float(d["value"]), seen_at=float(d.get("seen_at", 0.0)),
                       rose_from=None if d.get("rose_from") is None else float(d["rose_from"]),
                       rose_at=None if d.get("rose_at") is None else float(d["rose_at"]))
        except (KeyError, TypeError, ValueError):
            return None


def next_trend(previous: Trend | None, value: float, now: float,
               window: float = RISE_WINDOW_S) -> Trend:
    """The trend after seeing `value` at `now` (pure)."""
    if previous is None:
        return Trend(value=value, seen_at=now)
    if rose(previous.value, value):
        return Trend(value=value, seen_at=now, rose_from=previous.value, rose_at=now)
    if previous.rose_at is not None and now - previous.rose_at < window and value >= previous.value:
        return Trend(value=value, seen_at=now, rose_from=previous.rose_from,
                     rose_at=previous.rose_at)
    return Trend(value=value, seen_at=now)


def state_dir(environ: dict | None = None) -> str:
    env = os.environ if environ is None else environ
    if env.get("INSPECTOR_STATE_DIR"):
        return env["INSPECTOR_STATE_DIR"]
    if os.geteuid() == 0:
        return "/var/lib/inspector"
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "inspector")


class TrendStore:
    """Read and update last-seen values; every failure is swallowed (a trend is a bonus)."""

    def __init__(self, directory: str | None = None):
        self.path = os.path.join(directory or state_dir(), STATE_FILE)

    def _load(self) -> dict:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> Trend | None:
        return Trend.from_json(self._load().get(key))

    def update(self, key: str, value: float, now: float | None = None) -> tuple[Trend | None, Trend]:
        """Record `value`; returns (trend before, trend after)."""
        now = time.time() if now is None else now
        with _lock:
            data = self._load()
            before = Trend.from_json(data.get(key))
            after = next_trend(before, value, now)
            if before is None or (before.value, before.rose_from, before.rose_at) != \
                    (after.value, after.rose_from, after.rose_at):
                data[key] = after.to_json()   # unchanged values are not rewritten every refresh
                self._save(data)
        return before, after

    def _save(self, data: dict) -> None:
        import tempfile  # here, not at the top: only a changed trend is written
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".drive-trends.", dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError:
            pass
