"""`inspector --ssh HOST top` against the real sshd: the same per-device reads as local `top`
over the same IO. A read-only loop device gets a known number of O_DIRECT reads while both tops
run; each top's r/s times its intervals, summed, is the reads it saw: both must agree within
2 %, and with the count issued."""
from __future__ import annotations

import json
import mmap
import os
import random
import subprocess
import threading
import time

import pytest
from ssh_fixtures import host_sshd  # noqa: F401  (fixture)

from conftest import inspector_bin, require_root

READS = 3000


@pytest.fixture
def loop_device(tmp_path):
    require_root()
    image = tmp_path / "disk.img"
    with open(image, "wb") as f:
        f.truncate(64 << 20)
    device = subprocess.run(["losetup", "-r", "-f", "--show", str(image)], check=True,
                            capture_output=True, text=True).stdout.strip()
    yield device
    subprocess.run(["losetup", "-d", device], check=False)


def _read_directly(device: str, count: int, seconds: float) -> None:
    """`count` 4 KiB O_DIRECT reads spread over `seconds` (reading only: never a write)."""
    fd = os.open(device, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 4096)
    blocks = (64 << 20) // 4096
    try:
        start = time.monotonic()
        for i in range(count):
            os.preadv(fd, [buf], random.randrange(blocks) * 4096)
            delay = start + (i + 1) * seconds / count - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    finally:
        os.close(fd)
        buf.close()


def _reads_seen(lines: list[str], name: str) -> tuple[float, int]:
    total, samples = 0.0, 0
    for line in lines:
        doc = json.loads(line)
        assert isinstance(doc["disks"], list), doc["disks"]     # every sample read
        for disk in doc["disks"]:
            if disk["name"] == name:
                total += disk["r_s"] * doc["interval"]
                samples += 1
    return total, samples


def _start(argv: list[str]) -> tuple[subprocess.Popen, list[str], threading.Event]:
    proc = subprocess.Popen([inspector_bin(), *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    first = threading.Event()

    def collect():
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            first.set()
        first.set()

    threading.Thread(target=collect, daemon=True).start()
    return proc, lines, first


def test_top_over_ssh_counts_the_reads_local_top_counts(host_sshd, loop_device):  # noqa: F811
    name = os.path.basename(loop_device)
    remote, remote_lines, remote_started = _start(
        ["--ssh", host_sshd.destination, *host_sshd.cli_options(), "top", "--json",
         "--interval", "1s", "--count", "16"])
    assert remote_started.wait(180), "ssh top printed nothing"
    local, local_lines, local_started = _start(["top", "--json", "--interval", "1s",
                                                "--count", "9"])
    assert local_started.wait(60)
    time.sleep(1.0)
    _read_directly(loop_device, READS, 3.0)
    for proc in (local, remote):
        proc.wait(120)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    local_reads, local_samples = _reads_seen(local_lines, name)
    remote_reads, remote_samples = _reads_seen(remote_lines, name)
    assert local_samples >= 8 and remote_samples >= 8
    assert abs(local_reads - READS) <= 0.02 * READS, local_reads
    assert abs(remote_reads - local_reads) <= 0.02 * local_reads, (remote_reads, local_reads)
    # and the rate itself: the busiest second of each, the same steady ~1000 r/s
    peak_local = max(d["r_s"] for line in local_lines for d in json.loads(line)["disks"]
                     if d["name"] == name)
    peak_remote = max(d["r_s"] for line in remote_lines for d in json.loads(line)["disks"]
                      if d["name"] == name)
    assert peak_remote > 0.5 * peak_local
    # intervals are the host's own (its /proc/uptime), however late each frame arrived: they
    # add up to the time the samples spanned
    intervals = [json.loads(line)["interval"] for line in remote_lines]
    walls = [json.loads(line)["wall"] for line in remote_lines]
    assert all(i > 0 for i in intervals)
    assert abs(sum(intervals[1:]) - (walls[-1] - walls[0])) < 0.1
