"""Figures in the unit that shows them: 50 µs, not 0.0 ms; 1.2k/s, not 1234.5678/s."""
from __future__ import annotations


def latency_ms(ms: float | None) -> str:
    """A latency given in milliseconds (iostat's await): µs below 1 ms, s from 10 s."""
    if ms is None:
        return "-"
    if ms <= 0:
        return "0"
    if ms < 1.0:
        return f"{ms * 1000:.0f} µs"
    if ms < 10.0:
        return f"{ms:.1f} ms"
    if ms < 10_000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.0f} s"


def per_s(value: float | None, decimal_below: float = 10) -> str:
    """Operations per second in at most 5 characters: 0, 0.5, 12, 950, 1.2k, 35k, 2.0M; with
    k and M, one decimal below `decimal_below` (the probe charts keep it to 99.9k)."""
    if value is None:
        return "-"
    if value <= 0:
        return "0"
    if value < 10:
        return f"{value:.1f}"
    if value < 1000:
        return f"{value:.0f}"
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= div:
            v = value / div
            return f"{v:.1f}{suffix}" if v < decimal_below else f"{v:.0f}{suffix}"
    return f"{value:.0f}"


def bytes_s(value: float | None) -> str:
    """Bytes per second, decimal units as NIC and disk vendors quote them."""
    if value is None:
        return "-"
    for div, unit in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if value >= div:
            v = value / div
            return f"{v:.1f} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{value:.0f} B/s"


def size(n: float | None) -> str:
    """Bytes as lsblk prints sizes: 256G, 1.8T, 512M."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "K", "M", "G", "T", "P"):
        if value < 1024 or unit == "P":
            if unit == "B":
                return f"{value:.0f}B"
            return f"{value:.1f}{unit}" if value < 10 and value != int(value) else f"{value:.0f}{unit}"
        value /= 1024
    return f"{n}B"


def pct(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}%"
