"""`inspector probe io -s SIZE` (B13): sizes that cannot work are refused before anything is
prepared, in one line with status 2 naming the size and the multiple it needs; real files on
ext4/the test filesystem, a directory, and a loop device with 4 KiB logical blocks."""
import os
import subprocess
from contextlib import contextmanager

import pytest

from conftest import require_root, run_cli
from inspector.probes.io.align import device_geometry
from inspector.roots.host import HostRoot


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(8 << 20))
    return str(path)


def block_size_of(path: str) -> int:
    geometry = device_geometry(HostRoot("/"), os.stat(path).st_dev)
    assert not hasattr(geometry, "reason"), f"test filesystem has no block device: {geometry}"
    return max(geometry.logical_block_size, 512)


@contextmanager
def loop_device(backing, sector_size: int):
    dev = subprocess.run(["losetup", "-f", "--show", "-b", str(sector_size), str(backing)],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def refused(r, *words):
    assert r.status == 2, (r.status, r.out, r.err)
    assert r.out == ""                                  # nothing ran
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_misaligned_size_on_a_file_names_size_and_block_size(data_file):
    multiple = block_size_of(data_file)
    refused(run_cli("probe", "io", data_file, "-s", "3"), "request size 3", f"multiple of {multiple}")
    refused(run_cli("probe", "io", data_file, "-s", "1000", "-c", "3"), "request size 1000",
            f"multiple of {multiple}")


def test_misaligned_size_in_a_directory_is_refused_before_the_run(tmp_path):
    multiple = block_size_of(str(tmp_path))
    r = run_cli("probe", "io", str(tmp_path), "-s", "3", "-c", "5", "-S", "1m")
    refused(r, "request size 3", f"multiple of {multiple}")
    assert os.listdir(tmp_path) == []


def test_zero_negative_and_too_large_sizes(data_file):
    refused(run_cli("probe", "io", data_file, "-s", "0"), "request size 0", "positive")
    refused(run_cli("probe", "io", data_file, "--size=-4k"), "request size -4k", "positive")
    refused(run_cli("probe", "io", data_file, "-s", "16m"), "request size 16777216",
            "larger than", "8388608")
    refused(run_cli("probe", "io", data_file, "-s", "8k", "-S", "4k"), "working set 4096",
            "smaller than one request")


def test_suffixes_and_buffered_sizes_are_accepted(data_file):
    for size, expect in (("4k", 4096), ("1m", 1 << 20), ("8KiB", 8192)):
        r = run_cli("probe", "io", data_file, "-s", size, "-c", "3", "--json")
        assert r.status == 0, r.err
        assert r.json()["summary"]["request_size"] == expect and r.json()["summary"]["direct"]
    r = run_cli("probe", "io", data_file, "-s", "3", "--cached", "-c", "3", "--json")
    assert r.status == 0, r.err                        # buffered IO takes any size
    assert r.json()["summary"]["request_size"] == 3


def test_loop_device_with_4k_blocks_needs_whole_blocks(tmp_path):
    require_root()
    backing = tmp_path / "disk.img"
    content = os.urandom(4 << 20)
    backing.write_bytes(content)
    with loop_device(backing, 4096) as dev:
        name = os.path.basename(dev)
        assert HostRoot("/").read_line(f"sys/block/{name}/queue/logical_block_size") == "4096"
        refused(run_cli("probe", "io", dev, "-s", "512"), "request size 512",
                f"multiple of 4096, the logical block size of {name}")
        r = run_cli("probe", "io", dev, "-s", "4k", "-c", "5", "--json")
        assert r.status == 0, r.err
        assert r.json()["summary"]["requests"] == 4
    assert backing.read_bytes() == content
