"""`-o` (capture, export, snapshot) through inspector.atomic_write: a regular file is replaced
atomically keeping its mode and owner, a symlink to a regular file keeps pointing at the new
content, a new file gets the umask's mode (0600 for a capture), and nothing is left behind
when the write fails."""
from __future__ import annotations

import os
import stat

import pytest

from conftest import fixture_root, run_cli
from inspector.atomic_write import OutputError, atomic_output, write_atomic

ROOT = str(fixture_root("xen-pv-guest"))


def test_an_existing_file_keeps_its_mode_and_owner(tmp_path):
    out = tmp_path / "inspector.prom"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    if os.geteuid() == 0:
        os.chown(out, 1234, 5678)       # root replacing someone else's file: it stays theirs
    res = run_cli("export", "--prometheus", "--root", ROOT, "-o", str(out))
    assert res.status == 0, res.err
    assert "inspector_health_status" in out.read_text()
    st = out.stat()
    assert stat.S_IMODE(st.st_mode) == 0o640
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (1234, 5678)
    assert os.listdir(tmp_path) == ["inspector.prom"]      # no temporary file left


def test_a_symlink_to_a_file_is_followed_and_kept(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "latest.json"
    link.symlink_to(real.name)
    res = run_cli("snapshot", "--root", ROOT, "-o", str(link))
    assert res.status == 0, res.err
    assert link.is_symlink() and os.readlink(link) == "real.json"
    assert '"inspector-snapshot"' in real.read_text()


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "out.json"
    link.symlink_to("target.json")
    assert run_cli("export", "--json", "--root", ROOT, "-o", str(link)).status == 0
    assert link.is_symlink() and (tmp_path / "target.json").read_text().startswith("{")


def test_new_files_follow_the_umask_and_captures_are_private(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomic(str(tmp_path / "a"), b"x")
        write_atomic(str(tmp_path / "b"), b"x", private=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "b").stat().st_mode) == 0o600


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    out = tmp_path / "keep.json"
    out.write_text("previous")
    with pytest.raises(RuntimeError), atomic_output(str(out)) as f:
        f.write(b"half")
        raise RuntimeError("interrupted")
    assert out.read_text() == "previous" and os.listdir(tmp_path) == ["keep.json"]


def test_a_missing_directory_is_one_line(tmp_path):
    res = run_cli("export", "--json", "--root", ROOT, "-o", str(tmp_path / "no" / "x.json"))
    assert res.status == 2 and "no such directory" in res.err
    assert res.err.strip().count("\n") == 0


def test_a_node_put_there_during_the_write_is_not_replaced(tmp_path):
    """Checked again just before the rename: a FIFO (or a device) that appeared meanwhile
    stays, and the temporary file goes."""
    out = tmp_path / "out.json"
    with pytest.raises(OutputError, match="FIFO"), atomic_output(str(out)) as f:
        f.write(b"data")
        os.mkfifo(out)
    assert stat.S_ISFIFO(os.lstat(out).st_mode) and os.listdir(tmp_path) == ["out.json"]
