"""A diff's change as plain text for people: values with units, records by their telling
fields, "before -> after". Shared by `inspector diff` (inspector.render.diff lays it out) and
the fleet comparison's one-line notes (inspector.compare.fleet)."""
from __future__ import annotations

import json
import math
from typing import Any

from inspector.compare.diff import Change, _last_key

# Fields worth naming when a whole record (a device, a NIC, a finding) appears or disappears.
SUMMARY_FIELDS = ("level", "message", "type", "kind", "family", "size_bytes", "model", "driver",
                  "mtu", "state", "operstate", "verdict", "array_state", "degraded", "value",
                  "avg_us", "p99_us")
MAX_LIST_ITEMS = 8
# A value or path longer than this is shown cut, with its length: a 10 MB hostname wrapped
# whole cost minutes and thousands of lines; `diff --json` keeps every character.
MAX_SHOWN_CHARS = 400


def _iec(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


def _number(value: float) -> str:
    if isinstance(value, int) or (math.isfinite(value) and float(value).is_integer()):
        return str(int(value))
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 100:
        return f"{value:.1f}"
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if text not in ("0", "-0") else f"{value:.2g}"


def format_value(value: Any, key: str = "") -> str:
    """A model value as a person reads it: units from the key's suffix, rounded floats, lists
    joined compactly, records summarised by their telling fields, unknowns with their reason."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if key.endswith("_per_s"):       # a rate, not seconds: ops_per_s, bytes_per_s
            unit = key[:-len("_per_s")]
            if unit.endswith("bytes"):
                return f"{_iec(value)}/s"
            return f"{_number(value)} {unit.rsplit('_', 1)[-1]}/s"
        if key.endswith("bytes") or key in ("size", "bytes"):
            return _iec(value)
        if key.endswith("_kib"):
            return _iec(value * 1024)
        if key.endswith("_us"):
            return f"{value / 1000:.2f} ms" if abs(value) >= 1000 else f"{_number(value)} us"
        if key.endswith("_s") or key.endswith("_seconds"):
            return f"{_number(value)} s"
        if key.endswith("_pct") or key.endswith("_percent"):
            return f"{_number(value)}%"
        return _number(value)
    if isinstance(value, str):
        return shown_text(value) if value else '""'
    if isinstance(value, list):
        if not value:
            return "none"
        items = [_list_item(v) for v in value[:MAX_LIST_ITEMS]]
        more = f", +{len(value) - MAX_LIST_ITEMS} more" if len(value) > MAX_LIST_ITEMS else ""
        return ", ".join(items) + more
    if isinstance(value, dict):
        if not value:
            return "none"
        if set(value) == {"unknown"}:
            return f"unknown ({value['unknown']})"
        return _record(value)
    return str(value)


def shown_text(text: str, start: int = 0) -> str:
    """`text` whole when short; else MAX_SHOWN_CHARS of it from `start`, marked as cut and
    with its length (so two cut values are never shown as one)."""
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    where = f", from character {start + 1}" if start else ""
    end = start + MAX_SHOWN_CHARS
    return (("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
            + f" ({len(text)} characters{where}; diff --json has all)")


def first_difference(a: str, b: str) -> int:
    """The index of the first character where `a` and `b` differ (the shorter one's length
    when one begins the other): by halving with slice comparisons, O(n log n) in C instead
    of a Python loop over ten million characters."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while hi - lo > 1:         # a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _list_item(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("name", "device", "server", "kind", "code"):
            if isinstance(value.get(key), (str, int)) and not isinstance(value.get(key), bool):
                return str(value[key])
        return "{…}"
    return format_value(value)


def _record(value: dict) -> str:
    parts = []
    for key in SUMMARY_FIELDS:
        v = value.get(key)
        if v is None or isinstance(v, (dict, list)):
            continue
        label = key[:-len("_bytes")] if key.endswith("_bytes") else key
        parts.append(f"{label} {format_value(v, key)}")
    if parts:
        return ", ".join(parts)
    scalars = [f"{k} {format_value(v, k)}" for k, v in value.items()
               if v is not None and not isinstance(v, (dict, list))][:6]
    return ", ".join(scalars) if scalars else json.dumps(value, sort_keys=True)[:60] + "…"


def _key_of(change: Change) -> str:
    return _last_key(change.path)


def change_text(change: Change) -> str:
    """What happened to the value: "1500 -> 9000", "added: ...", "removed (was: ...)"."""
    key = _key_of(change)
    if change.category == "findings":
        f = change.after if change.after is not None else change.before
        return "" if change.note else format_value(f, key)
    before, after = format_value(change.before, key), format_value(change.after, key)
    if before == after and change.before != change.after:   # rounding or a cut hid it
        if isinstance(change.before, str) and isinstance(change.after, str):
            start = max(0, first_difference(change.before, change.after) - 40)
            before, after = shown_text(change.before, start), shown_text(change.after, start)
        else:
            before, after = shown_text(str(change.before)), shown_text(str(change.after))
    if change.kind == "added" or (change.before is None and change.after is not None):
        return f"now: {after}"
    if change.kind == "removed" or (change.after is None and change.before is not None):
        return f"was: {before}"
    return f"{before} -> {after}"


def display_path(change: Change) -> str:
    path = shown_text(change.path)         # an identity can be as long as a value
    return f"finding {path}" if change.category == "findings" else path
