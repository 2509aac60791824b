"""Sources of the Overview's memory, pressure and filesystem panels: /proc/meminfo, PSI, and
statvfs of the mounted filesystems with every call bounded in time."""
from __future__ import annotations

import os
import threading
import time

from inspector.live.filesystems import FilesystemSampler, FsUse, wanted
from inspector.live.memory import MemoryUse, parse_meminfo
from inspector.live.pressure import Pressure, parse_pressure, read_pressure
from inspector.model import Unknown
from inspector.roots.host import HostRoot


def mounts(sampler: FilesystemSampler) -> dict[str, FsUse]:
    fss = sampler.sample()
    assert isinstance(fss, list), fss          # a live root: statvfs is asked
    return {f.mountpoint: f for f in fss}


def test_meminfo_used_is_total_minus_available_and_old_kernels_estimate_it():
    mem = parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 600 kB\n"
                        "Buffers: 50 kB\nCached: 300 kB\nSwapTotal: 200 kB\nSwapFree: 150 kB\n"
                        "Dirty: 7 kB\n")
    assert isinstance(mem, MemoryUse), mem
    assert mem.used_kib == 400 and mem.swap_used_kib == 50 and mem.dirty_kib == 7
    old = parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 300 kB\n")
    assert isinstance(old, MemoryUse) and old.available_kib == 450
    assert isinstance(parse_meminfo("garbage"), Unknown)


def test_pressure_lines_and_a_kernel_without_psi(tmp_path):
    p = parse_pressure("io", "some avg10=1.50 avg60=2.00 avg300=0.10 total=123\n"
                             "full avg10=0.50 avg60=1.00 avg300=0.00 total=45\n")
    assert isinstance(p, Pressure), p
    assert (p.some_avg10, p.some_avg60, p.full_avg10) == (1.5, 2.0, 0.5)
    cpu = parse_pressure("cpu", "some avg10=3.00 avg60=2.00 avg300=1.00 total=1\n")
    assert isinstance(cpu, Pressure) and cpu.full_avg10 is None
    assert isinstance(parse_pressure("io", "nonsense"), Unknown)
    (tmp_path / "proc").mkdir()
    none = read_pressure(HostRoot(str(tmp_path)))
    assert isinstance(none, Unknown) and "no PSI" in none.reason


def test_which_mounts_count():
    assert wanted("ext4", "/dev/vda1") and wanted("nfs4", "srv:/export")
    assert wanted("fuse.sshfs", "me@host:") and wanted("zfs", "tank/data")
    assert not wanted("tmpfs", "tmpfs") and not wanted("squashfs", "/dev/loop3")
    assert not wanted("proc", "proc") and not wanted("overlay", "overlay")


def test_live_root_filesystem_fill_matches_statvfs():
    root = mounts(FilesystemSampler(HostRoot("/")))["/"]
    st = os.statvfs("/")
    assert root.size_bytes == st.f_blocks * st.f_frsize
    assert root.used_pct is not None and 0.0 <= root.used_pct <= 100.0


def test_a_hung_statvfs_is_unknown_after_the_timeout_and_not_called_again():
    release = threading.Event()
    calls: list[str] = []

    def statvfs(path):
        calls.append(path)
        if path == "/":            # stands for a dead NFS server
            release.wait(30)
        return os.statvfs("/")

    sampler = FilesystemSampler(HostRoot("/"), timeout=0.3, statvfs=statvfs)
    try:
        start = time.monotonic()
        first = mounts(sampler)
        assert time.monotonic() - start < 2.0
        assert first["/"].used_pct is None
        assert "statvfs timed out after 0.3 s" in str(first["/"].size_bytes)
        again = mounts(sampler)
        assert "timed out" in str(again["/"].size_bytes)
        assert calls.count("/") == 1          # the blocked call is not repeated
    finally:
        release.set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        after = mounts(sampler)
        if after["/"].used_pct is not None:
            break
        time.sleep(0.05)
    assert after["/"].used_pct is not None     # once the call returns, fill shows again


def test_a_capture_has_no_filesystem_fill(tmp_path):
    result = FilesystemSampler(HostRoot(str(tmp_path))).sample()
    assert isinstance(result, Unknown) and "capture" in result.reason
