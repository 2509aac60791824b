# Types of the IO probe's C loop (probes/io/_ioloop.c), for mypy: the compiled module has none.
from array import array
from typing import Any

WRITE: int
FADVISE: int
MIXED: int

def burst(fd: int, buf: Any, size: int, offsets: array[int], ops: bytes | None, first: int,
          count: int, lat: array[int], lat_pos: int, stop_at_ns: int, flags: int,
          stop: Any) -> tuple[int, int, int, int, int]:
    """Timed requests with the GIL released: (ran, t1_ns, writes, err, nbytes)."""

def part(values: array[int], k: int, step: int) -> tuple[int, int, int, list[int], list[int]]:
    """An interval part's figures: (total, min, max, top, mid)."""
