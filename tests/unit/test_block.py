"""Block-device reading: small parsers, and garbage or missing sysfs that must give Unknown."""
import io
import os
import shutil

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import fixture_root
from inspector.discover import block, storage
from inspector.discover.block import (
    family_of,
    parse_mountinfo,
    parse_scheduler,
    parse_swaps,
    swap_device_name,
)
from inspector.model import Unknown, to_jsonable
from inspector.roots.host import HostRoot


def test_scheduler():
    assert parse_scheduler("none [mq-deadline] kyber bfq") == ("mq-deadline", ["none", "mq-deadline", "kyber", "bfq"])
    assert parse_scheduler("[none] mq-deadline") == ("none", ["none", "mq-deadline"])
    assert parse_scheduler("none") == ("none", ["none"])
    assert parse_scheduler("noop deadline") == (None, ["noop", "deadline"])


def test_family_from_name_and_path():
    assert family_of("nvme0n1", "sys/devices/pci0000:00/x/nvme/nvme0/nvme0n1") == "nvme"
    assert family_of("xvda", "sys/devices/vbd-51712/block/xvda") == "xen"
    assert family_of("vda", "sys/devices/pci0000:00/0000:00:04.0/virtio2/block/vda") == "virtio"
    assert family_of("hioa", Unknown("x")) == "flash-hio" and family_of("fioa", "") == "flash-fio"
    assert family_of("sda", "sys/devices/pci0000:00/0000:00:17.0/ata1/host0/x/block/sda") == "ata"
    assert family_of("sdb", "sys/devices/pci0000:00/0000:00:14.0/usb2/2-1/x/block/sdb") == "usb"
    assert family_of("sdc", "sys/devices/platform/host3/x/block/sdc") == "scsi"
    assert family_of("sr0", "") == "rom" and family_of("zram0", "") == "zram"
    assert family_of("dm-3", "") == "dm" and family_of("md127", "") == "md"


def test_mountinfo_escapes_and_bad_lines():
    text = ("36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
            "garbage line\n"
            "37 35 8:1 / /ro ro,relatime - xfs /dev/sda1 ro\n"
            "38 35 8:2 / /short rw - \n")
    rows = parse_mountinfo(text)
    assert [(d, m.mountpoint, m.fstype, m.read_only) for d, m in rows] == [
        ("98:0", "/mnt/with space", "ext3", False), ("8:1", "/ro", "xfs", True)]


def test_swaps():
    swaps = parse_swaps("Filename\tType\tSize\tUsed\tPriority\n/dev/dm-1  partition 2097148 0 -2\n"
                        "/swap\\040file file 1024 12 -3\nshort line\n/dev/sdb2 partition x 0 5\n")
    assert [(s.filename, s.type, s.size_kib, s.priority) for s in swaps][:2] == [
        ("/dev/dm-1", "partition", 2097148, -2), ("/swap file", "file", 1024, -3)]
    assert isinstance(swaps[2].size_kib, Unknown)
    assert swap_device_name("/dev/mapper/vg-swap", {"vg-swap": "dm-4"}) == "dm-4"
    assert swap_device_name("/swapfile", {}) is None


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_mountinfo_and_swaps_never_raise(text):
    parse_mountinfo(text)
    parse_swaps(text)
    parse_scheduler(text)


def reason(value: object) -> str:
    """Why the value is unknown; fails when it was read."""
    assert isinstance(value, Unknown), value
    return value.reason


def copy_root(tmp_path, name):
    dest = tmp_path / name
    shutil.copytree(fixture_root(name), dest, symlinks=True)
    return dest


def test_garbage_sysfs_values_become_unknown_with_a_reason(tmp_path):
    root = copy_root(tmp_path, "storage-raid1-recovering")
    sda = root / "sys/block/sda"
    (sda / "size").write_text("lots\n")
    (sda / "ro").write_text("7\n")
    (sda / "queue/scheduler").write_text("noop deadline\n")
    (sda / "queue/logical_block_size").write_text("")
    (sda / "queue/rotational").unlink()
    md = root / "sys/block/md1/md"
    (md / "raid_disks").write_text("two\n")
    (md / "dev-sdb1/slot").write_text("\x00\xff\n")
    (md / "dev-sda1/state").unlink()
    (root / "proc/mdstat").write_text("md1 : active raid1 sdb1[2] sda1[0]\n      19531")  # truncated
    s = storage.collect(HostRoot(str(root)))
    dev = s.devices["sda"]
    assert "unparsable value 'lots'" in reason(dev.size_bytes)
    assert "unexpected value 7" in reason(dev.read_only)
    assert "no [selected] scheduler" in reason(dev.scheduler)
    assert "unparsable value ''" in reason(dev.queue.logical_block_size)
    assert dev.rotational == Unknown("not present")
    assert isinstance(s.devices["sda1"].size_bytes, int)  # the partition is still fine
    array = s.md["md1"]
    assert "unparsable value 'two'" in reason(array.raid_disks)
    members = {m.name: m for m in array.members}
    assert "unparsable slot" in reason(members["sdb1"].slot)
    assert members["sda1"].state == Unknown("not present")
    assert array.mdstat is not None and array.mdstat.blocks_kib is None
    # the report still renders and serialises
    from rich.console import Console

    from inspector.render.storage import render
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(render(s))
    assert "sda" in console.export_text()
    to_jsonable(s)


def test_missing_sys_block_gives_an_empty_section_with_the_reason(tmp_path):
    (tmp_path / "proc").mkdir()
    s = storage.collect(HostRoot(str(tmp_path)))
    assert s.devices == {} and s.roots == []
    assert s.problems == ["/sys/block: not present"]


def test_without_sys_dev_block_partitions_are_found_by_scanning(tmp_path):
    root = copy_root(tmp_path, "kvm-virtio-guest")
    shutil.rmtree(root / "sys/dev/block")
    s = storage.collect(HostRoot(str(root)))
    assert s.devices["vda"].partitions == ["vda1", "vda14", "vda15"]
    assert s.devices["vda15"].maj_min == "252:15" and s.devices["vda"].maj_min == "252:0"
    assert s.devices["vda1"].mounts[0].mountpoint == "/"
    assert any("/sys/dev/block: not present" in p for p in s.problems)


def test_a_slave_cycle_does_not_hang_the_tree(tmp_path):
    root = copy_root(tmp_path, "storage-multipath")
    # corrupt capture: dm-0 also claims dm-1 as its slave (dm-1 already sits on dm-0)
    os.symlink("../../dm-1", root / "sys/devices/virtual/block/dm-0/slaves/dm-1")
    s = storage.collect(HostRoot(str(root)))
    rows = list(s.walk())
    assert len(rows) < 50


def test_capture_records_what_storage_reads(tmp_path):
    """A recording root writes exactly what the collector read; the copy reports the same."""
    from inspector.captures.capture import open_root, write_capture
    src = HostRoot(str(fixture_root("storage-crypt-md")), record=True)
    before = to_jsonable(storage.collect(src))
    out = tmp_path / "cap.tar.gz"
    write_capture(src, str(out))
    after = to_jsonable(storage.collect(open_root(str(out))))
    for doc in (before, after):
        for dev in doc["devices"].values():
            dev.pop("udev")
    assert after == before


def test_block_inventory_direct():
    inv = block.collect_block(HostRoot(str(fixture_root("storage-multipath"))), with_udev=False)
    assert inv.roots == ["sda", "sdb", "sdc"]
    assert inv.devices["dm-0"].udev is None
