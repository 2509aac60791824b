"""io_align: the logical block size of the device holding a target, from a sysfs tree read
through a HostRoot (fixture tree here: a disk with 4 KiB logical blocks and its partition)."""
import os

from inspector.model import Unknown
from inspector.probes.io.align import BlockGeometry, device_geometry, required_multiple
from inspector.roots.host import HostRoot


def make_tree(root):
    disk = root / "sys/devices/pci0000:00/0000:00:05.0/nvme/nvme0/nvme0n1"
    (disk / "queue").mkdir(parents=True)
    (disk / "queue/logical_block_size").write_text("4096\n")
    (disk / "nvme0n1p1").mkdir()
    (disk / "nvme0n1p1/partition").write_text("1\n")
    links = root / "sys/dev/block"
    links.mkdir(parents=True)
    os.symlink("../../devices/pci0000:00/0000:00:05.0/nvme/nvme0/nvme0n1", links / "259:0")
    os.symlink("../../devices/pci0000:00/0000:00:05.0/nvme/nvme0/nvme0n1/nvme0n1p1",
               links / "259:1")


def test_disk_and_partition_read_the_disk_queue(tmp_path):
    make_tree(tmp_path)
    root = HostRoot(str(tmp_path))
    disk = device_geometry(root, os.makedev(259, 0))
    part = device_geometry(root, os.makedev(259, 1))
    assert isinstance(disk, BlockGeometry) and isinstance(part, BlockGeometry), (disk, part)
    assert (disk.device, disk.logical_block_size) == ("nvme0n1", 4096)
    assert (part.device, part.logical_block_size) == ("nvme0n1p1", 4096)
    assert required_multiple(part) == 4096


def test_unknown_devices_leave_the_decision_to_a_trial_read(tmp_path):
    make_tree(tmp_path)
    root = HostRoot(str(tmp_path))
    assert isinstance(device_geometry(root, os.makedev(0, 45)), Unknown)      # tmpfs, overlay
    assert isinstance(device_geometry(root, os.makedev(8, 0)), Unknown)       # not in sysfs
    assert required_multiple(device_geometry(root, os.makedev(8, 0))) is None
