"""Storage discovery on this machine, checked against lsblk: vda, zram0 and the loop devices,
plus two loop devices of our own (one mounted, one read-only) so the mount and ro paths run
against the real kernel."""
import json
import os
import subprocess

import pytest

from conftest import require_root, run_bin
from inspector.discover import storage
from inspector.roots.host import HostRoot

# alone, after the parallel part of `make test`: lsblk lists every disk of the host: other workers' loop devices come and go
pytestmark = pytest.mark.serial


def sh(*argv: str, timeout: float = 30) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True).stdout.strip()


def lsblk() -> dict:
    doc = json.loads(sh("lsblk", "-b", "-J", "-a", "-o", "NAME,SIZE,MAJ:MIN,TYPE,RO,RM,MOUNTPOINTS"))
    flat = {}

    def visit(node):
        flat[node["name"]] = node
        for child in node.get("children", []):
            visit(child)
    for node in doc["blockdevices"]:
        visit(node)
    return flat


@pytest.fixture
def loops(tmp_path):
    """A mounted ext4 loop device and a read-only one; detached by their own names afterwards."""
    require_root()
    image, ro_image, mnt = tmp_path / "ext4.img", tmp_path / "ro.img", tmp_path / "mnt"
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    with open(ro_image, "wb") as f:
        f.truncate(4 << 20)
    sh("mkfs.ext4", "-F", "-q", str(image))
    mnt.mkdir()
    devices = []
    try:
        devices.append(sh("losetup", "-f", "--show", str(image)))
        devices.append(sh("losetup", "-f", "--show", "-r", str(ro_image)))
        sh("mount", devices[0], str(mnt))
        yield os.path.basename(devices[0]), os.path.basename(devices[1]), str(mnt), str(image)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=30)
        for dev in devices:
            subprocess.run(["losetup", "-d", dev], capture_output=True, timeout=30)


def test_live_devices_match_lsblk(loops):
    mounted, readonly, mnt, image = loops
    section = storage.collect(HostRoot("/"))
    expected = lsblk()
    for name in ("vda", "zram0", mounted, readonly):
        assert name in section.devices, name
        dev, ref = section.devices[name], expected[name]
        assert dev.size_bytes == int(ref["size"]), name
        assert dev.maj_min == ref["maj:min"].strip(), name
        assert dev.type == ref["type"], name
        assert dev.read_only == ref["ro"] and dev.removable == ref["rm"], name
    # every loop device lsblk lists is found too (others' tests may attach more meanwhile)
    loops_seen = {n for n in expected if n.startswith("loop") and "p" not in n[4:]}
    assert loops_seen - set(section.devices) <= _attached_since(section)
    vda = section.devices["vda"]
    assert vda.family == "virtio" and "/" in [m.mountpoint for m in vda.mounts]
    assert vda.scheduler in vda.schedulers
    assert section.devices["zram0"].family == "zram"
    loop = section.devices[mounted]
    assert [(m.mountpoint, m.fstype) for m in loop.mounts] == [(mnt, "ext4")]
    assert loop.loop_backing_file == image and loop.type == "loop"
    assert section.devices[readonly].read_only is True
    assert "vda" in section.roots and not section.problems


def _attached_since(section) -> set:
    """Loop devices created by concurrent tests after our read: tolerated, nothing else."""
    return {n for n in os.listdir("/sys/block") if n.startswith("loop")} - set(section.devices)


def test_live_udev_properties_are_a_fact_that_captures_carry():
    root = HostRoot("/")
    section = storage.collect(root)
    udev = section.devices["vda"].udev
    assert isinstance(udev, dict) and udev.get("DEVTYPE") == "disk"
    assert root.sidecar()["facts"]["udev"]["vda"] == udev


def test_live_report_cli_shows_storage():
    res = run_bin("report", "--section", "storage")
    assert res.returncode == 0, res.stderr
    assert "vda" in res.stdout and "Traceback" not in res.stdout + res.stderr
    doc = json.loads(run_bin("report", "--section", "storage", "--json", "--diagnose").stdout)
    # as lsblk without -a: size-0 devices (unbound loops, an unset zram) are counted, not listed
    empty = [n for n, d in doc["sections"]["storage"]["devices"].items()
             if d["size_bytes"] == 0 and not d["children"] and not d["mounts"] and not d["parent"]]
    if empty:
        assert f"{len(empty)} empty device" in res.stdout
        assert not any(f"\n│ {name} " in res.stdout for name in empty)
    assert doc["sections"]["storage"]["devices"]["vda"]["size_bytes"] == int(lsblk()["vda"]["size"])
    assert doc["timings"]["storage"] < 2.0
