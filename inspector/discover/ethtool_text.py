"""ethtool's printed output, read back: for roots that keep what ethtool printed instead of
the kernel state Inspector reads live (a sosreport runs `ethtool`, `ethtool -i` and
`ethtool -k` per interface).

`feature_rows(text)` turns `ethtool -k` lines back into the raw feature rows of
inspector.discover.net_offloads, so `ethtool_offloads()` prints the same lines again:
"[fixed]" is a feature not in hw_features (available False); "[requested on|off]" is the
wanted state where it differs from the active one. ethtool does not say which fixed features
the kernel marks never-changing, so never_changed is False (the line reads the same).
"""
from __future__ import annotations

from typing import Any

from inspector.discover.net_offloads import LEGACY_FLAGS


def key_values(text: str) -> dict[str, str]:
    """`key: value` lines (ethtool -i, the settings of plain `ethtool IF`), keys stripped."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and key.strip() not in out:
            out[key.strip()] = value.strip()
    return out


def speed_mbps(value: str | None) -> int | None:
    """`1000Mb/s` -> 1000; `Unknown!` -> -1 (SPEED_UNKNOWN, what sysfs says); else None."""
    if not value:
        return None
    if value.lower().startswith("unknown"):
        return -1
    digits = value.removesuffix("Mb/s").strip()
    return int(digits) if digits.isdigit() else None


def duplex(value: str | None) -> str | None:
    """`Full` -> full, `Half` -> half, `Unknown! (255)` -> unknown (sysfs's words)."""
    if not value:
        return None
    word = value.split()[0].rstrip("!").lower()
    return word if word in ("full", "half", "unknown") else None


_LEGACY_EXACT = {long: pattern for long, pattern in LEGACY_FLAGS if "*" not in pattern}


class LegacyFormat(ValueError):
    """`ethtool -k` of ethtool before 3.0 ("Offload parameters for eth0:"): legacy groups only,
    without the features behind them, so the kernel's rows cannot be rebuilt."""


def feature_rows(text: str) -> list[dict[str, Any]] | None:
    """Raw feature rows from `ethtool -k` output; None when it lists no feature; LegacyFormat
    when the output has a legacy group whose features are not listed."""
    lines = [line for line in text.splitlines() if ":" in line]
    parsed = []
    for line in lines:
        name, _, state = line.partition(":")
        words = state.split()
        if not words or words[0] not in ("on", "off") or " " in name.strip():
            continue   # "Features for eth0:", error text
        parsed.append((line.startswith(("\t", " ")), name.strip(), words))
    rows: list[dict[str, Any]] = []
    for i, (indented, name, words) in enumerate(parsed):
        has_children = i + 1 < len(parsed) and parsed[i + 1][0]
        if not indented and name in dict(LEGACY_FLAGS) and has_children:
            continue   # a group header: its features follow, indented
        if not indented and name in dict(LEGACY_FLAGS):   # a group of one: its kernel name
            if name not in _LEGACY_EXACT:
                raise LegacyFormat(f"ethtool -k lists {name} without its features "
                                   "(ethtool older than 3.0)")
            name = _LEGACY_EXACT[name]
        rows.append(_row(name, words))
    return rows or None


def _row(name: str, words: list[str]) -> dict[str, Any]:
    active = words[0] == "on"
    suffix = " ".join(words[1:])
    fixed = "[fixed]" in suffix
    requested = active
    if "[requested on]" in suffix:
        requested = True
    elif "[requested off]" in suffix:
        requested = False
    return {"name": name, "available": not fixed, "requested": requested, "active": active,
            "never_changed": False}
