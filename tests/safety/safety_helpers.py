"""Helpers for the safety tests: a real ext4 filesystem on a loop device (the thing a stray
`--db` or `-o` would destroy), a private device node standing in for /dev/null, and the checks
that say a filesystem is intact."""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import require_root


@dataclass
class Ext4Loop:
    device: str          # /dev/loopN
    uuid: str            # as blkid read it right after mkfs
    image: Path

    def assert_intact(self) -> None:
        """The filesystem is still there, unchanged in identity, and clean."""
        probe = subprocess.run(["blkid", "-p", "-o", "export", self.device], capture_output=True,
                               text=True, timeout=30)
        fields = dict(line.split("=", 1) for line in probe.stdout.split() if "=" in line)
        assert fields.get("TYPE") == "ext4" and fields.get("UUID") == self.uuid, probe.stdout
        fsck = subprocess.run(["e2fsck", "-n", "-f", self.device], capture_output=True,
                              text=True, timeout=60)
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr
        for suffix in ("-wal", "-shm", "-journal"):
            assert not os.path.exists(self.device + suffix), f"{self.device}{suffix} created"


def _have(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.fail(f"these tests need {', '.join(missing)} (apt-get install e2fsprogs util-linux)")


@pytest.fixture(name="ext4_loop")
def ext4_loop_fixture(tmp_path):
    """An 8 MiB ext4 image attached to a loop device; always detached afterwards."""
    require_root()
    _have("losetup", "mkfs.ext4", "blkid", "e2fsck")
    image = tmp_path / "fs.img"
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, timeout=60)
    device = subprocess.run(["losetup", "-f", "--show", str(image)], check=True,
                            capture_output=True, text=True, timeout=30).stdout.strip()
    node = os.stat(device)
    try:
        uuid = subprocess.run(["blkid", "-p", "-s", "UUID", "-o", "value", device],
                              check=True, capture_output=True, text=True, timeout=30).stdout.strip()
        loop = Ext4Loop(device, uuid, image)
        loop.assert_intact()
        yield loop
    finally:
        replaced = not stat.S_ISBLK(os.lstat(device).st_mode) if os.path.lexists(device) \
            else True
        if replaced:
            # a regression replaced the system's device node: put it back before failing,
            # or the machine is left without /dev/loopN (and the loop attached for good)
            if os.path.lexists(device):
                os.unlink(device)
            os.mknod(device, stat.S_IMODE(node.st_mode) | stat.S_IFBLK, node.st_rdev)
            os.chown(device, node.st_uid, node.st_gid)
        subprocess.run(["losetup", "-d", device], capture_output=True, timeout=30)
        assert not replaced, f"{device} was replaced by a regular file (node restored)"


@pytest.fixture(name="private_null")
def private_null_fixture(tmp_path):
    """A character device node like /dev/null (1:3), made in the test's own directory: what
    `-o /dev/null` would break is checked on it, never on the system's /dev/null."""
    require_root()
    node = tmp_path / "null"
    os.mknod(node, 0o666 | 0o020000, os.makedev(1, 3))
    return node


def assert_char_device(path: Path) -> None:
    st = os.lstat(path)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3), oct(st.st_mode)


def fingerprint(path: Path) -> tuple[str, int]:
    """Content hash and mtime (ns): a file left untouched keeps both."""
    return hashlib.sha256(path.read_bytes()).hexdigest(), os.stat(path).st_mtime_ns


def one_line(text: str) -> bool:
    return text.strip() != "" and text.strip().count("\n") == 0
