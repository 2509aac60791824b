"""A file named on the command line (diff's snapshots, history import-ioping's log) that is not
a regular file is refused with one line naming what it is, exit 2: `inspector diff /tmp /tmp`
said "internal error: IsADirectoryError" (the directory opened fine; the file object made of
it did not). Stdin ("-") is the one exception: a pipe or a terminal."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import inspector_bin, require_root, run_bin
from inspector.roots.input_files import READ_STALL_S, InputError, read_input
from overlapped_runs import OverlappedRuns, selected_params
from slowness import slack
from stall_mount import run_stalled


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "fifo")
    return tmp / "fifo"


@pytest.mark.parametrize("kind, make", [
    ("a directory", lambda tmp: tmp),
    ("a FIFO", _fifo),
    ("a character device", lambda tmp: "/dev/null"),
])
def test_what_is_not_a_regular_file_is_refused_in_one_line(tmp_path, kind, make):
    path = str(make(tmp_path))
    done = run_bin("diff", path, path, timeout=20)
    assert done.returncode == 2, done
    assert done.stderr == f"inspector: {path}: {kind}, not a snapshot file\n"
    assert done.stdout == ""


def test_history_import_refuses_a_directory(tmp_path):
    done = run_bin("history", "import-ioping", str(tmp_path), "--db",
                   str(tmp_path / "h.sqlite"), timeout=20)
    assert done.returncode == 2, done
    assert done.stderr == f"inspector: {tmp_path}: a directory, not an ioping log file\n"
    assert not (tmp_path / "h.sqlite").exists()


def test_stdin_may_be_a_pipe(tmp_path):
    done = run_bin("diff", "-", str(tmp_path), input="", timeout=20)
    assert done.returncode == 2 and "-: empty file, not a snapshot" in done.stderr, done


def _diff_on_stalled_reads(tmp_path) -> tuple[dict, object]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    snapshot = mnt / "disk.img"
    return run_stalled(str(mnt), 0, [inspector_bin(), "diff", str(snapshot), str(snapshot)],
                       cap=30), snapshot


@pytest.fixture(scope="module", autouse=True)
def stalled(request, tmp_path_factory):
    """The stalled-read run, started before this module's first test: its READ_STALL_S wait
    overlaps the other tests (quick refusals with no time bound) instead of following them."""
    runs = OverlappedRuns(at_once=1)
    if os.geteuid() == 0 and selected_params(request,
                                             "test_a_snapshot_whose_reads_stall_is_given_up"):
        runs.start("diff", _diff_on_stalled_reads, tmp_path_factory.mktemp("stall"))
    yield runs
    runs.close()


def test_a_snapshot_whose_reads_stall_is_given_up(stalled):
    """A snapshot on a mount that answers its stat and open, then holds every read (a dying
    NFS server): `diff` slept in the kernel for good, deaf to Ctrl-C. A child reads it now,
    and diff gives up once it has made no progress for READ_STALL_S."""
    require_root()
    res, snapshot = stalled.result("diff")
    print("diff ended after", res["seconds"], "s:", res["stderr"].strip())
    assert not res["hung"] and res["held"] >= 1 and res["stuck_after_release"] == 0, res
    assert res["status"] == 2 and res["after_held"] <= READ_STALL_S + slack(1.5), res
    assert res["stderr"] == (f"inspector: {snapshot}: no progress reading it for "
                             f"{READ_STALL_S:g} s (a hung filesystem? look for processes in D "
                             "state)\n")


# after the stalled run, whose pipes would come and go while it counts descriptors
def test_read_input_leaves_no_descriptor_open(tmp_path, stalled):
    stalled.wait_all()          # its pipes, opened and closed meanwhile, are not read_input's
    os.mkfifo(tmp_path / "fifo")
    before = len(os.listdir("/proc/self/fd"))
    for refused in (tmp_path, tmp_path / "fifo", "/dev/null"):
        with pytest.raises(InputError, match="not a snapshot file$"):
            read_input(str(refused), 1 << 20, "snapshot")
    assert len(os.listdir("/proc/self/fd")) == before
