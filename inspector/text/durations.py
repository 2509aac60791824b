"""Durations as the command line takes and shows them (`250ms`, `5s`, `5m`, `1h`, `30d`): the
one parser every option and every time expression uses. Below the commands, so library modules
(inspector.record.time_points) parse durations without importing the command layer."""
from __future__ import annotations

import argparse
import math
import re

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "": 1.0,
                   "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hour": 3600.0,
                   "d": 86400.0, "day": 86400.0, "w": 604800.0}
# re.ASCII: \d alone also matches Arabic-Indic, fullwidth and other Unicode digits, which int()
# and float() then accept, as they accept "1_000"; a number on our command line is ASCII
# digits only, as strtol() reads them.
_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)(e[+-]?\d+)?\s*([a-z]*)\s*",
                       re.IGNORECASE | re.ASCII)
_INTEGER = re.compile(r"\s*[+-]?\d+\s*", re.ASCII)
_DECIMAL = re.compile(r"\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?\s*",
                      re.IGNORECASE | re.ASCII)
DURATION_EXAMPLES = "250ms, 5s, 5m, 1h, 30d"


def format_duration(seconds: float) -> str:
    """The shortest exact form: 0.25 -> 250ms, 3600 -> 1h, 90 -> 90s."""
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1),
                       ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= size and abs(seconds / size - round(seconds / size)) < 1e-9:
            return f"{round(seconds / size)}{unit}"
    return f"{seconds:g}s"


def _shown(text: str) -> str:
    """The argument as quoted in a message, cut short (a 5000-digit number is one line too)."""
    return repr(text if len(text) <= 32 else text[:29] + "...")


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e16 else f"{value:g}"


def is_plain_number(text: str) -> bool:
    """Whether `text` is a decimal number in ASCII digits (sign, point, exponent allowed): not
    '１', '٣', '1_000', 'nan' or 'inf', all of which float() would take."""
    return _DECIMAL.fullmatch(text) is not None


def _not_finite(text: str) -> bool:
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


class Duration:
    """argparse type: a duration as `250ms`, `5s`, `5m`, `1h`, `30d` (a bare number is seconds),
    greater than 0 (or 0 too, with `zero=True`) and at most `maximum` seconds."""

    def __init__(self, maximum: float, zero: bool = False):
        self.maximum, self.zero = maximum, zero
        self.__name__ = "duration"        # argparse names the type in its own messages

    @property
    def bounds(self) -> str:
        """For --help: 'at most 1h' or '0 to 1h'."""
        top = format_duration(self.maximum)
        return f"0 to {top}" if self.zero else f"at most {top}"

    def __call__(self, text: str) -> float:
        m = _DURATION.fullmatch(text)
        unit = m and _DURATION_UNITS.get(m.group(3).lower())
        if not m or unit is None:
            if _not_finite(text):
                raise argparse.ArgumentTypeError(f"{_shown(text)} must be a finite number")
            if text.strip().startswith("-") and _DURATION.fullmatch(text.strip()[1:]):
                raise argparse.ArgumentTypeError(
                    f"{_shown(text)} must be {'0 or more' if self.zero else 'greater than 0'}")
            raise argparse.ArgumentTypeError(
                f"{_shown(text)} is not a number or a duration (examples: {DURATION_EXAMPLES})")
        value = float(m.group(1) + (m.group(2) or "")) * unit   # 1e400 is inf: over the bound
        if value == 0 and not self.zero:
            raise argparse.ArgumentTypeError(f"{_shown(text)} must be greater than 0")
        if value > self.maximum:
            raise argparse.ArgumentTypeError(
                f"{_shown(text)} must be at most {format_duration(self.maximum)}")
        return value


def utc_offset(seconds: int) -> str:
    """A UTC offset in seconds as recordings show it: 3600 -> UTC+01:00."""
    sign = "-" if seconds < 0 else "+"
    h, m = divmod(abs(seconds) // 60, 60)
    return f"UTC{sign}{h:02d}:{m:02d}"
