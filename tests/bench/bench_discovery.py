"""Benchmark: what two safety and speed choices of discovery cost on a large tree.

On a generated root of 1,000 multipath maps over 2,000 SCSI paths (tests/fixtures/
storage_roots.py, the root of tests/perf/test_storage_perf.py), CPU time of storage discovery,
the best of BENCH_RUNS (3) runs each, alternating:

- every file read as shipped (inspector/roots/confined.py read_many: an O_PATH handle, its type
  checked, then reopened through /proc/self/fd) against one plain open of the file for
  reading, to show what the check and the second open cost;
- the drive health checks of a capture run one after the other (as shipped: inspector/
  discover/drives.py) against the same checks in threads, live's way;
- per call: the last component opened with a plain openat from its parent's fd, against
  openat2 through ctypes (how ConfinedTree opens a file or directory from a cached one).

Run: `.venv/bin/python tests/bench/bench_discovery.py` (or `make bench`).
"""
from __future__ import annotations

import errno
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from inspector.discover import drives, storage
from inspector.roots import confined
from inspector.roots.host import HostRoot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import storage_roots  # noqa: E402  (the fixture generator)

MAPS = 1000
RUNS = int(os.environ.get("BENCH_RUNS", 3))


@contextmanager
def one_open():
    """ConfinedTree.read_many without the check: each file opened once, for reading, from its
    directory's cached fd, its fds closed together as shipped (a link in the last component,
    or any other failure, takes the shipped path)."""
    shipped = confined.ConfinedTree.read_many

    def read_many(self, directory, names, limit):
        root_fd = self.root_fd
        directory = directory.strip("/")
        subs, entries = confined._plan(names)
        dirs = self._dirs()
        try:
            dir_fds = [dirs.get(confined._join(directory, sub), self, root_fd) for sub in subs]
        except OSError:
            return shipped(self, directory, names, limit)
        out, held = [], []
        try:
            for index, leaf, _name in entries:
                if index < 0:
                    return shipped(self, directory, names, limit)
                fd = os.open(leaf, confined._READ_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fds[index])
                held.append(fd)
                out.append(os.read(fd, limit))
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOENT):
                raise
            return shipped(self, directory, names, limit)
        finally:
            confined._close_all(held)
        return out
    confined.ConfinedTree.read_many = read_many  # type: ignore[method-assign]
    try:
        yield
    finally:
        confined.ConfinedTree.read_many = shipped  # type: ignore[method-assign]


@contextmanager
def drives_in_threads():
    shipped = drives._run_jobs
    drives._run_jobs = lambda jobs, parallel: shipped(jobs, True)
    try:
        yield
    finally:
        drives._run_jobs = shipped


def discovery_cpu(path: str) -> float:
    start = time.process_time()
    section = storage.collect(HostRoot(path))
    spent = time.process_time() - start
    assert len(section.dm) == MAPS and len(section.devices) == 3 * MAPS
    return spent


def drives_cpu(path: str, names: list[str]) -> float:
    start = time.process_time()
    health = drives.collect(HostRoot(path), names)
    spent = time.process_time() - start
    assert len(health) == len(names)
    return spent


def best_of_alternating(a, b) -> tuple[float, float]:
    best_a = best_b = float("inf")
    for i in range(RUNS):
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            if which == 0:
                best_a = min(best_a, a())
            else:
                best_b = min(best_b, b())
    return best_a, best_b


def per_call_ns(fn, n: int = 20_000) -> float:
    start = time.perf_counter_ns()
    for _ in range(n):
        os.close(fn())
    return (time.perf_counter_ns() - start) / n


def bench(path: str) -> dict[str, float]:
    print(f"\nstorage discovery, {MAPS} multipath maps over {2 * MAPS} paths, CPU best of {RUNS}")
    HostRoot(path)                     # warm: the tree in the dentry cache, modules imported

    def with_one_open() -> float:
        with one_open():
            return discovery_cpu(path)
    shipped, single = best_of_alternating(lambda: discovery_cpu(path), with_one_open)
    print(f"  files checked then reopened (shipped): {shipped:.3f} s")
    print(f"  one plain open per file:               {single:.3f} s  (the check and second "
          f"open: {100 * (shipped - single) / shipped:.0f}% of discovery)")

    names = sorted(os.listdir(os.path.join(path, "sys", "block")))
    names = [n for n in names if drives.kind_of(n) == "smart"]

    def threaded() -> float:
        with drives_in_threads():
            return drives_cpu(path, names)
    serial, in_threads = best_of_alternating(lambda: drives_cpu(path, names), threaded)
    print(f"  drive health of {len(names)} paths (a capture), in turn (shipped): {serial:.3f} s")
    print(f"  the same in threads:                   {in_threads:.3f} s  "
          f"(+{in_threads - serial:.3f} s)")

    tree = confined.ConfinedTree(path)
    rel = f"sys/block/{names[0]}/size"
    parent, _, name = rel.rpartition("/")
    parent_fd = tree.open_path(parent, confined._PATH_FLAGS | os.O_DIRECTORY)
    root_fd = tree.root_fd
    flags = confined._PATH_FLAGS
    openat = per_call_ns(lambda: os.open(name, flags | os.O_NOFOLLOW, dir_fd=parent_fd))
    result = {"shipped": shipped, "single": single, "serial": serial, "threads": in_threads,
              "openat_ns": openat}
    if tree.uses_openat2:
        openat2 = per_call_ns(lambda: confined._openat2(root_fd, os.fsencode(rel), flags))
        result["openat2_ns"] = openat2
        print(f"  O_PATH open and close of {rel}: openat from the parent {openat:.0f} ns, "
              f"openat2 through ctypes {openat2:.0f} ns ({openat2 / openat:.1f}x)")
    else:
        print(f"  O_PATH open and close: openat from the parent {openat:.0f} ns; no openat2 here")
    os.close(parent_fd)
    tree.close()
    return result


def build_root() -> tuple[str, str]:
    """sysfs lives in memory: the root goes on tmpfs (/dev/shm) when there is one."""
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    top = tempfile.mkdtemp(prefix="bench-discovery-", dir=shm)
    path = os.path.join(top, f"mpath-{MAPS}")
    storage_roots.build_multipath_root(path, MAPS)
    return top, path


def test_bench_discovery():
    top, path = build_root()
    try:
        result = bench(path)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert all(v > 0 for v in result.values()), result


if __name__ == "__main__":
    test_bench_discovery()
