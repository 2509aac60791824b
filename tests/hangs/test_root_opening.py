"""A non-live root is opened by a forked child, which passes the tree's fd back over SCM_RIGHTS
(inspector.roots.host._open_tree): the tree must keep every guarantee of one opened in place. Reads
stay confined, a forked reader that reopens the tree by path still refuses a different
directory put in its place, the sidecar's facts arrive, and no descriptor is left behind."""
from __future__ import annotations

import gc
import json
import os

import pytest

from inspector.captures.capture import CaptureError, open_root
from inspector.model import Unknown
from inspector.roots.bounded import run_forked
from inspector.roots.host import HostRoot, Unavailable


@pytest.fixture
def tree(tmp_path):
    top = tmp_path / "root"
    (top / "etc").mkdir(parents=True)
    (top / "etc/hostname").write_text("inside\n")
    (top / "etc/passwd").write_text("tree's own passwd\n")
    (top / "etc/escape").symlink_to("/etc/passwd")           # re-rooted: the tree's file
    (top / "etc/climb").symlink_to("../../../../etc/passwd")  # `..` stops at the top
    sidecar = {"version": 1, "facts": {"uname": {"uname": {
        "sysname": "Linux", "nodename": "captured", "release": "6.1.0", "version": "#1",
        "machine": "x86_64"}}}}
    (top / "inspector-sidecar.json").write_text(json.dumps(sidecar))
    return top


def test_reads_through_the_handed_back_tree_stay_confined(tree):
    root = HostRoot(str(tree))
    assert root.read_line("etc/hostname") == "inside"
    assert root.read_line("etc/escape") == "tree's own passwd"
    assert root.read_line("etc/climb") == "tree's own passwd"
    uname = root.uname()                                     # the sidecar, read by the child
    assert isinstance(uname, dict) and uname["nodename"] == "captured"


def test_the_handed_back_tree_is_the_directory_that_was_opened(tree, tmp_path):
    """The fd keeps reading the tree it was opened on after the path moves; a forked reader
    (it reopens by path) refuses the directory that took the path's place."""
    root = HostRoot(str(tree))
    tree.rename(tmp_path / "moved")
    impostor = tmp_path / "root"
    (impostor / "etc").mkdir(parents=True)
    (impostor / "etc/hostname").write_text("impostor\n")
    assert root.read_line("etc/hostname") == "inside"
    in_child = run_forked(lambda: root.try_line("etc/hostname"), 10)
    assert isinstance(in_child, Unknown), in_child
    assert "is no longer the tree opened" in in_child.reason


def test_opening_roots_leaves_no_descriptor_behind(tree):
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))
    HostRoot(str(tree))
    gc.collect()        # what earlier tests in this worker left for the collector closes now
    before = open_fds()
    for _ in range(20):
        root = HostRoot(str(tree))
        root.read_line("etc/hostname")
        del root
    # none more (a leak keeps one per root); fewer when another thread closed one meanwhile
    assert open_fds() <= before


def test_a_tree_that_cannot_be_opened_says_why_on_every_read(tmp_path):
    root = HostRoot(str(tmp_path / "absent"))
    with pytest.raises(Unavailable, match="not present"):
        root.read_text("etc/hostname")


def test_refusals_are_still_one_line(tree, tmp_path):
    (tree / "inspector-sidecar.json").unlink()
    os.mkfifo(tree / "inspector-sidecar.json")
    with pytest.raises(CaptureError, match=r"unreadable sidecar inspector-sidecar.json: "
                                           r"a FIFO, not a file$"):
        open_root(str(tree))
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(CaptureError, match="not a host root or capture"):
        open_root(str(home))
    with pytest.raises(CaptureError, match="no such file or directory"):
        open_root(str(tmp_path / "absent"))
