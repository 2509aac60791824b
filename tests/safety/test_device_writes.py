"""Writes that must never happen: `record --db /dev/loopN` and even `history --db /dev/loopN`
wrote an SQLite header over an ext4 filesystem (and -wal/-shm files into /dev); `capture`,
`export` and `snapshot -o /dev/...` replaced the device node with a regular file. Each is now
refused in one line with exit 2, on a real loop device with a real ext4 filesystem that
`blkid` and `e2fsck -n` still find intact afterwards."""
from __future__ import annotations

import os
import stat

import pytest

from conftest import FIXTURES, fixture_root, run_cli
from inspector.record.history import HistoryDB, HistoryError
from safety_helpers import assert_char_device, ext4_loop_fixture, one_line, private_null_fixture  # noqa: F401  (the ext4_loop and private_null fixtures)

ROOT = str(fixture_root("xen-pv-guest"))


def _refused(res, *words: str) -> None:
    assert res.status == 2, (res.status, res.out, res.err)
    assert one_line(res.err) and "internal error" not in res.err, res.err
    for word in words:
        assert word in res.err, res.err


def _writers(target: str) -> list[tuple[str, ...]]:
    """Every command that writes to --db or -o, aimed at `target`."""
    log = str(FIXTURES / "samples/ioping/periodic-log.txt")
    return [("record", "--once", "--root", ROOT, "--db", target),
            ("history", "--db", target),
            ("history", "--db", target, "--checks", "--json"),
            ("history", "import-ioping", log, "--db", target),
            ("export", "--prometheus", "--root", ROOT, "-o", target),
            ("export", "--json", "--root", ROOT, "-o", target),
            ("snapshot", "--root", ROOT, "-o", target),
            ("capture", "-o", target)]


def test_nothing_writes_to_a_block_device(ext4_loop):
    for argv in _writers(ext4_loop.device):
        _refused(run_cli(*argv), ext4_loop.device, "block device")
        ext4_loop.assert_intact()
    assert stat.S_ISBLK(os.stat(ext4_loop.device).st_mode)


def test_nothing_writes_through_a_symlink_to_a_block_device(ext4_loop, tmp_path):
    link = tmp_path / "looks-like-a-file.sqlite"
    link.symlink_to(ext4_loop.device)
    for argv in _writers(str(link)):
        _refused(run_cli(*argv), "block device")
        assert link.is_symlink() and os.readlink(link) == ext4_loop.device
    ext4_loop.assert_intact()
    assert sorted(os.listdir(tmp_path)) == ["fs.img", link.name]    # no -wal, -shm, temp file


def test_the_tui_history_reader_refuses_a_device_too(ext4_loop):
    """The TUI's history chart opens HistoryDB(path, create=False), like `history`."""
    with pytest.raises(HistoryError, match="block device"):
        HistoryDB(ext4_loop.device, create=False)
    with pytest.raises(HistoryError, match="block device"):
        HistoryDB(ext4_loop.device)
    ext4_loop.assert_intact()


def test_dev_null_stays_a_character_device(private_null, tmp_path):
    link = tmp_path / "out.prom"
    link.symlink_to(private_null)
    for target in (str(private_null), str(link)):
        for argv in _writers(target):
            _refused(run_cli(*argv), "character device")
            assert_char_device(private_null)
    assert sorted(os.listdir(tmp_path)) == ["null", "out.prom"]


def test_a_fifo_is_refused_without_waiting_for_a_reader(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for argv in _writers(str(fifo)):
        _refused(run_cli(*argv), "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_directory_is_refused_where_a_file_is_meant(tmp_path):
    for argv in _writers(str(tmp_path)):
        if argv[0] == "snapshot":
            continue                  # snapshot -o DIR writes its default name inside DIR
        _refused(run_cli(*argv), "directory")
    assert os.listdir(tmp_path) == []
