"""Keys and pre-encoded requests for the memcached load generator.

Keys follow protocol.txt: at most 250 bytes, no spaces or control characters (we use
[0-9a-z] only). Values are opaque data blocks; we use printable ASCII so a human reading a
`get` sees sane bytes. Everything is encoded once, before the run, so the per-request path is a
list index and a `transport.write`.
"""
from __future__ import annotations

import asyncio
import random
import string
import threading
from dataclasses import dataclass

MAX_KEY_BYTES = 250                  # protocol.txt: "the key must not exceed 250 characters"
MAX_VALUE_BYTES = 1024 * 1024        # memcached's default item size limit (-I 1m)
PREENCODE_BUDGET = 64 * 1024 * 1024  # above this, set requests are joined per send instead
_KEY_ALPHABET = string.ascii_lowercase + string.digits
_VALUE_ALPHABET = (string.ascii_letters + string.digits).encode()
# random bytes -> key/value characters in one C-level translate (uniform enough for padding)
_KEY_TABLE = bytes(_KEY_ALPHABET.encode()[b % 36] for b in range(256))
_VALUE_TABLE = bytes(_VALUE_ALPHABET[b % len(_VALUE_ALPHABET)] for b in range(256))


@dataclass(frozen=True)
class SizeRange:
    """A fixed size (lo == hi) or a uniform range, parsed from "N" or "MIN-MAX"."""
    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str | int, what: str, lo_bound: int, hi_bound: int) -> SizeRange:
        raw = str(text).strip()
        try:
            if "-" in raw:
                a, b = raw.split("-", 1)
                lo, hi = int(a), int(b)
            else:
                lo = hi = int(raw)
        except ValueError:
            raise ValueError(f"{what} must be N or MIN-MAX, got {raw!r}") from None
        if lo > hi:
            raise ValueError(f"{what}: minimum {lo} is above maximum {hi}")
        if lo < lo_bound or hi > hi_bound:
            raise ValueError(f"{what} must be within {lo_bound}..{hi_bound} bytes, got {raw}")
        return cls(lo, hi)

    def pick(self, rng: random.Random) -> int:
        # uniform like randint, at a third of its cost (this runs once per key)
        return self.lo if self.lo == self.hi else self.lo + int(rng.random() * (self.hi - self.lo + 1))

    def __str__(self) -> str:
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


def make_key(index: int, size: int, rng: random.Random) -> bytes:
    """A unique key: the index in base 36 (unique), padded with random letters to `size`."""
    head = (_base36(index) + "_").encode()
    if len(head) > size:
        raise ValueError(f"key size {size} is too small for {index + 1} distinct keys")
    return head + rng.randbytes(size - len(head)).translate(_KEY_TABLE)


def _base36(n: int) -> str:
    digits = ""
    while True:
        n, r = divmod(n, 36)
        digits = _KEY_ALPHABET[r] + digits
        if not n:
            return digits


class Workload:
    """key_count keys with their value sizes; `set_request(i)` and `get_request(i)` as bytes."""

    def __init__(self, key_count: int, key_size: SizeRange, value_size: SizeRange,
                 seed: int = 7):
        if key_count < 1:
            raise ValueError("key count must be at least 1")
        rng = random.Random(seed)
        self.key_count = key_count
        self.keys = [make_key(i, key_size.pick(rng), rng) for i in range(key_count)]
        self.value_sizes = [value_size.pick(rng) for _ in range(key_count)]
        blob_len = value_size.hi
        # one random blob; each value is a prefix of it (values need not differ per key)
        self._blob = rng.randbytes(blob_len).translate(_VALUE_TABLE)
        self.get_requests = [b"get " + k + b"\r\n" for k in self.keys]
        self._set_heads = [b"set %s 0 0 %d\r\n" % (k, n) for k, n in zip(self.keys, self.value_sizes)]
        total = sum(len(h) for h in self._set_heads) + sum(self.value_sizes) + 2 * key_count
        self.set_bytes_total = total
        if total <= PREENCODE_BUDGET:
            self.set_requests: list[bytes] | None = [
                h + self._blob[:n] + b"\r\n" for h, n in zip(self._set_heads, self.value_sizes)]
        else:
            self.set_requests = None

    def set_request(self, i: int) -> bytes:
        if self.set_requests is not None:
            return self.set_requests[i]
        return self._set_heads[i] + self._blob[: self.value_sizes[i]] + b"\r\n"


async def build_workload(key_count: int, key_size: SizeRange, value_size: SizeRange,
                         bound_s: float) -> Workload | None:
    """The Workload, or None when it is not built within `bound_s` (what is left of a run's
    deadline). Building is CPU work that grows with the key count (tests/bench/
    bench_memcached.py prints it), so it runs in a daemon thread the deadline can walk away
    from: the thread finishes in the background, and never holds the process's exit."""
    loop = asyncio.get_running_loop()
    built: asyncio.Future[Workload] = loop.create_future()

    def deliver(outcome: Workload | BaseException) -> None:
        if built.done():
            return
        if isinstance(outcome, BaseException):
            built.set_exception(outcome)
        else:
            built.set_result(outcome)

    def build() -> None:
        outcome: Workload | BaseException
        try:
            outcome = Workload(key_count, key_size, value_size)
        except BaseException as exc:        # handed to the run, which says it
            outcome = exc
        try:
            loop.call_soon_threadsafe(deliver, outcome)
        except RuntimeError:                # the loop is gone: the run ended without it
            pass

    threading.Thread(target=build, name="mc-workload", daemon=True).start()
    try:
        return await asyncio.wait_for(asyncio.shield(built), max(0.001, bound_s))
    except TimeoutError:
        return None
