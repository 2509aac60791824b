"""Every command and the TUI on a hostile tree: a capture of this machine where files and
directories at every depth became links to the analyst's own copy of them (absolute, climbing
past the top with `..`, absolute with `..`), the hostname a link out, /proc/mdstat a link to a
FIFO with the marker waiting in it, a disk's size a link to a real block device holding the
marker. Nothing of the outside copy (every file of it holds the marker) may reach any output."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import require_root, run_bin
from inspector.roots.host import SIDECAR_NAME, HostRoot
from inspector.roots.safe_extract import extract

MARKER = "ZQXJ7E1FOUTSIDEJXQZ"
FRAGMENTS = (MARKER, MARKER[:8], MARKER[-8:], "OUTSIDE")


def leaks(text: str) -> list[str]:
    flat = "".join(text.split())
    return [f for f in FRAGMENTS if f in flat]


@pytest.fixture(scope="module")
def base_tree(tmp_path_factory):
    """An unpacked capture of this machine."""
    work = tmp_path_factory.mktemp("base")
    res = run_bin("capture", "-o", str(work / "cap.tar.gz"), timeout=120)
    assert res.returncode == 0, res.stderr
    tree = work / "tree"
    tree.mkdir()
    extract(str(work / "cap.tar.gz"), str(tree))
    return tree


def link_out(path: Path, target: Path, variant: int) -> None:
    depth = len(path.parts)
    if variant == 0:
        os.symlink(str(target), path)                                   # absolute
    elif variant == 1:
        os.symlink("../" * depth + str(target).lstrip("/"), path)       # climbing past the top
    else:
        os.symlink("/../../.." + str(target), path)                     # absolute with '..'


@pytest.fixture(scope="module")
def hostile(base_tree, tmp_path_factory):
    require_root()
    work = tmp_path_factory.mktemp("hostile")
    outside, root = work / "outside", work / "root"
    shutil.copytree(base_tree, outside, symlinks=True)
    shutil.copytree(base_tree, root, symlinks=True)
    for path in outside.rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.write_text(f"{MARKER} 1 {MARKER}\n")
    special = plant_specials(root, outside, work)
    # directories, then files, at every depth become links to the outside copy; the
    # directories holding the FIFO, device and hostname links stay
    keep = {parent for path in special for parent in path.relative_to(root).parents}
    replaced_dirs: list[Path] = []
    for i, path in enumerate(sorted(p for p in root.rglob("*")
                                    if p.is_dir() and not p.is_symlink())):
        rel = path.relative_to(root)
        if i % 7 != 3 or rel in keep or any(d in rel.parents for d in replaced_dirs):
            continue
        shutil.rmtree(path)
        (outside / rel / MARKER).write_text(MARKER)      # a listing that escaped would name it
        link_out(root / rel, outside / rel, i % 3)
        replaced_dirs.append(rel)
    for i, path in enumerate(sorted(p for p in root.rglob("*")
                                    if p.is_file() and not p.is_symlink())):
        rel = path.relative_to(root)
        if rel.name == SIDECAR_NAME or i % 4 == 3:
            continue                                       # some real content stays
        path.unlink()
        link_out(path, outside / rel, i % 3)
    writer = os.open(root / "dev/fifo", os.O_RDWR | os.O_NONBLOCK)
    os.write(writer, MARKER.encode())
    yield root
    os.close(writer)
    subprocess.run(["losetup", "-d", LOOP[0]], check=False)


LOOP: list[str] = []


def plant_specials(root: Path, outside: Path, work: Path) -> list[Path]:
    """The hostname a link out; /proc/mdstat and /proc/loadavg links to a FIFO; two disks'
    size links to a real block device (a loop device) holding the marker."""
    hostname = root / "proc/sys/kernel/hostname"
    hostname.parent.mkdir(parents=True, exist_ok=True)
    hostname.unlink(missing_ok=True)
    (outside / "proc/sys/kernel").mkdir(parents=True, exist_ok=True)
    (outside / "proc/sys/kernel/hostname").write_text(MARKER + "\n")
    os.symlink(str(outside / "proc/sys/kernel/hostname"), hostname)
    special = [hostname]
    (root / "dev").mkdir(exist_ok=True)
    os.mkfifo(root / "dev/fifo")
    for rel in ("proc/mdstat", "proc/loadavg"):
        (root / rel).unlink(missing_ok=True)
        os.symlink("/dev/fifo", root / rel)
        special.append(root / rel)
    backing = work / "disk.img"
    backing.write_bytes((MARKER + "\n").encode() * 4096)
    LOOP[:] = [subprocess.run(["losetup", "--find", "--show", str(backing)], capture_output=True,
                              text=True, check=True).stdout.strip()]
    os.mknod(root / "dev/disk", stat.S_IFBLK | 0o600, os.stat(LOOP[0]).st_rdev)
    blocks = sorted((root / "sys/block").iterdir()) if (root / "sys/block").is_dir() else []
    for block in [b for b in blocks if b.is_dir()][:2]:
        size = block.resolve() / "size"       # the device's own directory, inside the tree
        assert root in size.parents
        size.unlink(missing_ok=True)
        os.symlink("../../../../../../../../dev/disk", size)
        special.append(size)
    special.append(root / "dev/disk")
    return special


def test_the_hostile_tree_would_leak_if_links_were_followed(hostile):
    """The test's own premise: followed as the kernel does outside a chroot, the links lead to
    the marker (hostname, a replaced directory, a replaced file, the device)."""
    assert leaks((hostile / "proc/sys/kernel/hostname").read_text())
    followed = [p for p in hostile.rglob("*") if p.is_symlink() and p.is_file()
                and not stat.S_ISFIFO(os.stat(p).st_mode) and leaks(p.read_text(errors="replace"))]
    assert len(followed) > 50


COMMANDS = [
    ["report"],
    ["report", "--json"],
    ["report", "--section", "storage"],
    ["export", "--prometheus"],
    ["export", "--json"],
    ["check"],
    ["top", "--count", "1", "--all", "--wide"],
    ["top", "--count", "1", "--json"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_no_command_prints_anything_from_outside(hostile, argv):
    res = run_bin(*argv, "--root", str(hostile), timeout=60)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    assert res.returncode in (0, 1, 2, 3), res
    assert not leaks(res.stdout) and not leaks(res.stderr), (leaks(res.stdout), leaks(res.stderr))


def test_snapshot_file_has_nothing_from_outside(hostile, tmp_path):
    out = tmp_path / "snap.json"
    res = run_bin("snapshot", "--root", str(hostile), "-o", str(out), timeout=60)
    assert res.returncode == 0, res.stderr
    text = out.read_text()
    json.loads(text)
    assert not leaks(text) and not leaks(res.stderr)


def test_the_report_still_reads_what_the_tree_holds(hostile):
    """Confinement is not blindness: the files left in place are read."""
    doc = json.loads(run_bin("report", "--json", "--root", str(hostile), timeout=60).stdout)
    assert doc["host"]["hostname"] != MARKER
    root = HostRoot(str(hostile))
    kept = [p for p in hostile.rglob("*") if p.is_file() and not p.is_symlink()
            and p.name != SIDECAR_NAME and p.stat().st_size]
    assert kept and all(root.read_bytes(str(p.relative_to(hostile))) == p.read_bytes()
                        for p in kept[:50])


SCREENS = {"1": "OverviewScreen", "2": "StorageScreen", "3": "VirtScreen", "4": "NetScreen",
           "5": "DnsScreen", "6": "ProbesScreen"}


async def test_the_tui_shows_nothing_from_outside(hostile):
    from inspector.tui.app import InspectorApp
    app = InspectorApp(HostRoot(str(hostile)), refresh=0)
    screens = []
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(200):
            if app.report is not None or app.collect_error:
                break
            await pilot.pause(0.05)
        assert app.report is not None, app.collect_error
        for key, name in SCREENS.items():
            await pilot.press(key)
            for _ in range(100):
                if type(app.screen).__name__ == name:
                    break
                await pilot.pause(0.05)
            assert type(app.screen).__name__ == name
            # settled as the snapshot tests settle a screen (no live sampler on a capture):
            # three refreshes, the one that sizes a DataTable's columns among them (a fixed
            # 0.3 s did the same on a quiet machine and less on a loaded one)
            for _ in range(3):
                await pilot.pause()
            screens.append(app.export_screenshot())
    assert len(screens) == 6
    for svg in screens:
        assert not leaks(svg)
