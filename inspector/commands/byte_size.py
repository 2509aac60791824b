"""argparse type for a size in bytes (`512M`, `2G`, `1.5g`, powers of two like ioping's), with
the bounds said in --help and a usage line for anything else, as common.Duration does for
durations."""
from __future__ import annotations

import argparse


def _shown(size: int) -> str:
    for unit, scale in (("P", 1 << 50), ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20),
                        ("k", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


class ByteSize:
    def __init__(self, minimum: int, maximum: int):
        self.minimum, self.maximum = minimum, maximum
        self.__name__ = "size"

    @property
    def bounds(self) -> str:
        return f"{_shown(self.minimum)} to {_shown(self.maximum)}"

    def __call__(self, text: str) -> int:
        from inspector.probes.io.format import parse_size
        shown = repr(text if len(text) <= 32 else text[:29] + "...")
        try:
            if not text.isascii() or "_" in text:     # '１G', '1_000': int() takes them
                raise ValueError(text)
            value = parse_size(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{shown} is not a size (examples: 512M, 2G)") \
                from None
        if not self.minimum <= value <= self.maximum:
            raise argparse.ArgumentTypeError(f"{shown} must be {self.bounds}")
        return value
