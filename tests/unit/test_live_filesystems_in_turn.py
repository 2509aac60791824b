"""The filesystem sweep's statvfs calls run one after the other in one thread; when one hangs,
each call not begun yet gets a thread of its own after a short patience, so the other
mounts' fill still comes in, and a sweep never takes longer than its timeout."""
from __future__ import annotations

import os
import threading
import time

from inspector.discover.block import Mount
from inspector.live.filesystems import FilesystemSampler
from inspector.roots.host import HostRoot

PATHS = ["/mnt/a", "/mnt/b", "/mnt/c", "/mnt/d"]


class FourMounts(FilesystemSampler):
    def mounts(self):
        return [(f"8:{i}", Mount(path, "ext4", f"/dev/sd{i}", "rw", False))
                for i, path in enumerate(PATHS)]


def test_the_calls_of_a_sweep_share_one_thread():
    threads: set[threading.Thread] = set()

    def statvfs(path):
        threads.add(threading.current_thread())
        return os.statvfs("/")
    fss = FourMounts(HostRoot("/"), statvfs=statvfs).sample()
    assert isinstance(fss, list) and [f.used_pct is not None for f in fss] == [True] * 4
    assert len(threads) == 1


def test_a_hung_call_leaves_the_others_answered_within_the_timeout():
    release = threading.Event()
    # the Thread objects, held: a finished thread's ident is given to the next one started
    threads: dict[str, threading.Thread] = {}
    calls: list[str] = []

    def statvfs(path):
        calls.append(path)
        threads[path] = threading.current_thread()
        if path == "/mnt/b":           # stands for a dead NFS server, second in turn
            release.wait(30)
        return os.statvfs("/")
    sampler = FourMounts(HostRoot("/"), timeout=1.0, statvfs=statvfs)
    try:
        start = time.monotonic()
        fss = {f.mountpoint: f for f in sampler.sample()}    # type: ignore[union-attr]
        took = time.monotonic() - start
        assert took < 1.0 + 1.0        # the timeout, and room for a loaded machine
        assert "statvfs timed out after 1 s" in str(fss["/mnt/b"].size_bytes)
        assert all(fss[p].used_pct is not None for p in ("/mnt/a", "/mnt/c", "/mnt/d"))
        # c and d were not begun when b hung: each had a thread of its own
        assert threads["/mnt/a"] is threads["/mnt/b"]
        assert len({id(threads[p]) for p in ("/mnt/b", "/mnt/c", "/mnt/d")}) == 3
        again = {f.mountpoint: f for f in sampler.sample()}  # type: ignore[union-attr]
        assert "timed out" in str(again["/mnt/b"].size_bytes)
        assert again["/mnt/c"].used_pct is not None
        assert calls.count("/mnt/b") == 1        # the blocked call is not repeated
    finally:
        release.set()
