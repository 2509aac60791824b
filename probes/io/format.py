"""ioping's human number format, and parsing of the sizes and times users type.

ioping picks the largest unit not above the value; prints no decimals for an exact multiple,
one decimal from 10 units up, two below ("3.35 k iops", "95.5 us", "16 KiB", "159.0 MiB").
"""
from __future__ import annotations

import re

TIME_SUFFIXES = [("hour", 3_600_000_000_000), ("min", 60_000_000_000), ("s", 1_000_000_000),
                 ("ms", 1_000_000), ("us", 1_000), ("ns", 1)]
SIZE_SUFFIXES = [("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30),
                 ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1)]
INT_SUFFIXES = [("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3), ("", 1)]


def _fmt(value: float, suffixes: list[tuple[str, int]]) -> str:
    i = 0
    while i + 1 < len(suffixes) and value < suffixes[i][1]:
        i += 1
    name, mul = suffixes[i]
    if float(value).is_integer() and int(value) % mul == 0:
        text = f"{int(value) // mul}"
    elif value < 10 * mul:
        text = f"{value / mul:.2f}"
    else:
        text = f"{value / mul:.1f}"
    return f"{text} {name}" if name else text


def fmt_time(ns: float | None) -> str:
    """ioping's time units; "-" when there is no figure (no request completed)."""
    return "-" if ns is None else _fmt(ns, TIME_SUFFIXES)


def fmt_size(nbytes: float) -> str:
    return _fmt(nbytes, SIZE_SUFFIXES)


def fmt_int(n: float) -> str:
    return _fmt(n, INT_SUFFIXES)


_NUMBER = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*$")
_SIZE_UNITS = {"": 1, "b": 1, "s": 512, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
               "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
               "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40, "p": 1 << 50,
               "pb": 1 << 50, "pib": 1 << 50}
_TIME_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "ns": 1e-9, "us": 1e-6, "usec": 1e-6,
               "ms": 1e-3, "msec": 1e-3, "m": 60.0, "min": 60.0, "h": 3600.0, "hour": 3600.0}


def parse_size(text: str) -> int:
    """"4k", "64m", "1g", "512" (bytes; powers of two like ioping). ValueError if invalid."""
    m = _NUMBER.match(text)
    unit = m and _SIZE_UNITS.get(m.group(2).lower())
    if not m or unit is None:
        raise ValueError(f"invalid size {text!r} (examples: 4k, 64m, 1g)")
    return int(float(m.group(1)) * unit)


def parse_seconds(text: str) -> float:
    """"3", "3s", "250ms", "1m" -> seconds. ValueError if invalid."""
    m = _NUMBER.match(text)
    unit = m and _TIME_UNITS.get(m.group(2).lower())
    if not m or unit is None:
        raise ValueError(f"invalid time {text!r} (examples: 3, 3s, 250ms, 1m)")
    return float(m.group(1)) * unit
