"""A tree given to --root is read inside it, whatever its links say (chroot semantics), with
the kernel's openat2 and with the walk used where openat2 is missing: every test runs both."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import inspector.roots.confined as confined
from conftest import require_root
from inspector.model import Unknown
from inspector.roots.host import HostRoot, Unavailable

MARKER = "ZQXJ-outside-7e1f-JXQZ"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["openat2", "walk"])
def mode(request, monkeypatch):
    """Which resolution HostRoot uses; the walk is forced as on a kernel without openat2."""
    if request.param == "walk":
        monkeypatch.setattr(confined._openat2, "available", False)
    else:
        assert confined._openat2.probe(os.open("/", os.O_PATH)), "openat2 should work here"
    return request.param


def open_root(path, mode) -> HostRoot:
    root = HostRoot(str(path))
    assert isinstance(root._tree, confined.ConfinedTree)
    assert root._tree.uses_openat2 is (mode == "openat2")
    return root


@pytest.fixture
def outside(tmp_path):
    """The analyst's own files: a file, a directory of files and a link whose text is secret."""
    out = tmp_path / "outside"
    (out / "dir").mkdir(parents=True)
    (out / "secret").write_text(MARKER + "\n")
    for name in ("hostname", "size", "mdstat", MARKER):
        (out / "dir" / name).write_text(MARKER + "\n")
    os.symlink(MARKER, out / "dir" / "link")
    return out


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hostname").write_text("tree-host\n")
    (root / "inside").mkdir()
    (root / "inside" / "secret").write_text("inside\n")
    return root


def assert_clean(value) -> None:
    assert MARKER not in repr(value)


def depth_dirs(tree, depth: int):
    d = tree
    for i in range(depth):
        d = d / f"d{i}"
    d.mkdir(parents=True, exist_ok=True)
    return d, "/".join(f"d{i}" for i in range(depth))


@pytest.mark.parametrize("depth", range(0, 7))
def test_absolute_and_climbing_links_at_every_depth(mode, tree, outside, depth):
    d, rel = depth_dirs(tree, depth)
    prefix = f"{rel}/" if rel else ""
    climb = "../" * (depth + 6)
    links = {
        "abs_file": str(outside / "secret"),
        "climb_file": climb + str(outside / "secret").lstrip("/"),
        "abs_dir": str(outside / "dir"),
        "climb_dir": climb + str(outside / "dir").lstrip("/"),
        "dotdot_only": climb.rstrip("/"),
    }
    for name, target in links.items():
        os.symlink(target, d / name)
    root = open_root(tree, mode)
    for name in ("abs_file", "climb_file"):
        value = root.try_text(prefix + name)
        assert isinstance(value, Unknown), value
        climbs = name.startswith("climb")
        assert value.reason == ("link leaves the root" if climbs else "not present")
    for name in ("abs_dir", "climb_dir"):
        for leaf in ("hostname", "size", MARKER):
            assert_clean(root.try_text(f"{prefix}{name}/{leaf}"))
        assert_clean(root.try_listdir(prefix + name))
        assert root.readlink(f"{prefix}{name}/link") is None
        assert not root.exists(f"{prefix}{name}/{MARKER}")
        assert not root.is_dir(prefix + name)
    # '..' as far as it goes is the top of the tree, not the analyst's /
    assert sorted(root.listdir(prefix + "dotdot_only")) == sorted(os.listdir(tree))
    assert root.read_line(prefix + "dotdot_only/etc/hostname") == "tree-host"
    assert root.resolve(prefix + "climb_file") == str(outside / "secret").lstrip("/")


def test_a_link_to_slash_is_the_top_of_the_tree(mode, tree):
    os.symlink("/", tree / "slash")
    os.symlink("/etc", tree / "inside" / "etc")
    root = open_root(tree, mode)
    assert sorted(root.listdir("slash")) == sorted(os.listdir(tree))
    assert root.read_line("slash/etc/hostname") == "tree-host"
    assert root.read_line("inside/etc/hostname") == "tree-host"
    # /etc/os-release exists on this machine, not in the tree
    assert os.path.exists("/etc/os-release")
    assert root.try_text("slash/etc/os-release") == Unknown("not present")
    assert root.is_dir("slash") and root.is_dir("slash/slash/etc")


def test_link_loops_are_unknown_with_the_reason(mode, tree):
    os.symlink("loop_b", tree / "loop_a")
    os.symlink("loop_a", tree / "loop_b")
    os.symlink("self", tree / "self")
    os.symlink("../deep", tree / "inside" / "deep")     # a directory loop through '..'
    os.symlink("inside/deep", tree / "deep")
    root = open_root(tree, mode)
    for rel in ("loop_a", "self", "deep/x", "loop_a/x"):
        value = root.try_text(rel)
        assert value == Unknown("too many levels of symbolic links"), (rel, value)
    with pytest.raises(Unavailable, match="too many levels"):
        root.listdir("loop_b")
    assert not root.is_dir("self")


def test_a_fifo_behind_a_link_is_refused_without_a_read(mode, tree):
    (tree / "dev").mkdir()
    os.mkfifo(tree / "dev" / "fifo")
    (tree / "proc").mkdir()
    os.symlink("../dev/fifo", tree / "proc" / "mdstat")
    os.symlink("/dev/fifo", tree / "proc" / "loadavg")
    # a writer holds the FIFO open with the marker waiting in it
    writer = os.open(tree / "dev" / "fifo", os.O_RDWR | os.O_NONBLOCK)
    os.write(writer, MARKER.encode())
    try:
        root = open_root(tree, mode)
        start = time.monotonic()
        for rel in ("proc/mdstat", "proc/loadavg", "dev/fifo"):
            value = root.try_text(rel)
            assert value == Unknown("a FIFO, not a file"), value
        assert time.monotonic() - start < 1
        assert not root.is_dir("proc/mdstat")
    finally:
        os.close(writer)


@pytest.fixture
def loop_device(tmp_path):
    """A real block device (a loop device) whose content is the marker."""
    require_root()
    backing = tmp_path / "loop.img"
    backing.write_bytes((MARKER + "\n").encode() * 4096)
    dev = subprocess.run(["losetup", "--find", "--show", str(backing)], capture_output=True,
                         text=True, check=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def test_a_device_node_behind_a_link_is_refused(mode, tree, loop_device):
    (tree / "dev").mkdir()
    rdev = os.stat(loop_device).st_rdev
    os.mknod(tree / "dev" / "disk", stat.S_IFBLK | 0o600, rdev)
    os.mknod(tree / "dev" / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    (tree / "sys" / "block" / "sda").mkdir(parents=True)
    os.symlink("/dev/disk", tree / "sys" / "block" / "sda" / "size")
    os.symlink("../../../../../../../dev/disk", tree / "sys" / "block" / "sda" / "model")
    os.symlink("../dev/null", tree / "etc" / "resolv.conf")
    with open(tree / "dev" / "disk", "rb") as disk:
        assert disk.read(len(MARKER)) == MARKER.encode()
    root = open_root(tree, mode)
    for rel in ("sys/block/sda/size", "sys/block/sda/model", "dev/disk", "etc/resolv.conf"):
        assert root.try_text(rel) == Unknown("a device node, not a file"), rel


OPENS_OF_A_DEVICE = """
import ctypes, os, sys
import inspector.roots.confined as confined
from inspector.roots.host import HostRoot
if sys.argv[3] == "walk":
    confined._openat2.available = False
tree, node = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
watch = libc.inotify_init1(os.O_NONBLOCK)
assert libc.inotify_add_watch(watch, node.encode(), 0x20) >= 0     # IN_OPEN

def opens():
    try:
        return len(os.read(watch, 4096)) // 16
    except BlockingIOError:
        return 0

root = HostRoot(tree)
reasons = {root.try_text(rel).reason for rel in ("proc/mdstat", "dev/watchdog", "proc/loadavg")}
during = opens()
os.close(os.open(node, os.O_RDONLY | os.O_NONBLOCK))     # the watch sees an open
print(sorted(reasons), during, opens())
"""


def test_a_device_across_a_mount_is_refused_before_it_is_opened(mode, tree, tmp_path):
    """/dev bind-mounted into the tree (a chroot-prepared image): its device nodes are checked
    on an O_PATH handle and never opened (opening a watchdog starts it; inotify's IN_OPEN, which
    an O_PATH handle does not raise, tells)."""
    require_root()
    devdir = tmp_path / "devdir"
    devdir.mkdir()
    os.mknod(devdir / "watchdog", stat.S_IFCHR | 0o600, os.makedev(1, 3))   # /dev/null's numbers
    (tree / "dev").mkdir()
    (tree / "proc").mkdir()
    os.symlink("/dev/watchdog", tree / "proc" / "mdstat")
    os.symlink("../../../../dev/watchdog", tree / "proc" / "loadavg")
    out = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         'mount --bind "$1" "$2" && exec "$3" -c "$4" "$5" "$6" "$7"', "sh",
         str(devdir), str(tree / "dev"), sys.executable, OPENS_OF_A_DEVICE, str(tree),
         str(devdir / "watchdog"), mode],
        capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert out.stdout.strip() == "['a device node, not a file'] 0 1", out


def test_a_device_in_the_tree_itself_is_never_opened(mode, tree):
    """A device node on the tree's own filesystem (`tar xf` run as root re-creates a hostile
    sosreport's nodes): refused from its O_PATH handle, never opened (no IN_OPEN)."""
    require_root()
    (tree / "dev").mkdir()
    (tree / "proc").mkdir()
    os.mknod(tree / "dev" / "watchdog", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    os.symlink("/dev/watchdog", tree / "proc" / "mdstat")
    os.symlink("../dev/watchdog", tree / "proc" / "loadavg")
    out = subprocess.run([sys.executable, "-c", OPENS_OF_A_DEVICE, str(tree),
                          str(tree / "dev" / "watchdog"), mode],
                         capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert out.stdout.strip() == "['a device node, not a file'] 0 1", out


def test_a_link_swapped_during_reads_never_leads_outside(mode, tree, outside):
    """One thread swaps a link between a directory inside and the analyst's directory while
    reads go through it: the kernel (or the walk's O_NOFOLLOW steps) never follows the swap out."""
    (tree / "inside" / "hostname").write_text("inside\n")
    os.symlink("inside", tree / "to_inside")
    os.symlink(str(outside / "dir"), tree / "to_outside")
    os.symlink("inside", tree / "flip")
    root = open_root(tree, mode)
    stop = threading.Event()

    def swap():
        links = [str(tree / "to_outside"), str(tree / "to_inside")]
        i = 0
        while not stop.is_set():
            tmp = tree / f".flip{i % 2}"
            os.symlink(os.readlink(links[i % 2]), tmp)
            os.rename(tmp, tree / "flip")
            i += 1

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    seen = set()
    try:
        for _ in range(3000):
            value = root.try_text("flip/hostname")
            seen.add(value if isinstance(value, str) else value.reason)
            assert_clean(root.try_listdir("flip"))
    finally:
        stop.set()
        thread.join()
    assert "inside\n" in seen and not [v for v in seen if MARKER in v]


def test_the_sidecar_is_read_inside_the_tree(mode, tree, outside):
    (outside / "sidecar.json").write_text(json.dumps({"facts": {"uname": {"uname": {
        "nodename": MARKER, "release": MARKER, "machine": "x86_64"}}}}))
    os.symlink(str(outside / "sidecar.json"), tree / "inspector-sidecar.json")
    root = open_root(tree, mode)
    assert_clean(root.uname())
    assert isinstance(root.uname(), Unknown)


def test_a_fifo_sidecar_is_a_clear_error_at_once(mode, tree):
    os.mkfifo(tree / "inspector-sidecar.json")
    start = time.monotonic()
    with pytest.raises(Unavailable, match="sidecar.*a FIFO, not a file"):
        HostRoot(str(tree))
    assert time.monotonic() - start < 1


def test_live_reads_keep_their_fast_path():
    root = HostRoot("/")
    assert root._tree is None
    assert root.read_line("proc/sys/kernel/ostype") == "Linux"
