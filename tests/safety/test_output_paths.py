"""`-o` (capture, export, snapshot) through inspector.writing.atomic: a regular file is replaced
atomically keeping its mode and owner, a symlink to a regular file keeps pointing at the new
content, a new file gets the umask's mode (0600 for a capture), and nothing is left behind
when the write fails. A path ending in / names a directory and never creates a file; an empty
path is a usage error, never the default. (Other users' links: tests/security/test_planted_links.)"""
from __future__ import annotations

import os
import stat

import pytest

from conftest import fixture_root, run_bin, run_cli
from inspector.writing.atomic import OutputError, atomic_output, write_atomic

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


FILE_OPTIONS = {
    "snapshot -o": ["snapshot", "--root", ROOT, "-o"],
    "export --json -o": ["export", "--json", "--root", ROOT, "-o"],
    "export --prometheus -o": ["export", "--prometheus", "--root", ROOT, "-o"],
    "record --textfile": ["record", "--once", "--root", ROOT, "--textfile"],
    "record --db": ["record", "--once", "--root", ROOT, "--db"],
    "capture -o": ["capture", "--timeout", "5s", "-o"],
}


def run_binary(argv: list[str], given: str) -> tuple[int, str]:
    res = run_bin(*argv, given)
    return res.returncode, res.stderr


def run_in_process(argv: list[str], given: str) -> tuple[int, str]:
    res = run_cli(*argv, given)
    return res.status, res.err


@pytest.mark.parametrize("option", FILE_OPTIONS)
def test_a_trailing_slash_never_creates_a_file(tmp_path, option):
    """`-o newdir/` (no such directory) created the file newdir and said "wrote newdir/";
    like `cp x newdir/` ("Not a directory") it is an error, and nothing is created."""
    argv = FILE_OPTIONS[option]
    if option == "record --textfile":
        argv = [*argv[:-1], "--db", str(tmp_path / "h.sqlite"), argv[-1]]
    work = tmp_path / "work"
    work.mkdir()
    # every form through every option; the real binary takes one form per option (each form
    # by two options) and the rest run in-process: one check of the path serves them all
    forms = (f"{work}/newdir/", f"{work}/newdir/.", f"{work}/newdir//")
    by_binary = forms[list(FILE_OPTIONS).index(option) % len(forms)]
    for given in forms:
        status, err = run_binary(argv, given) if given == by_binary else run_in_process(argv, given)
        assert status == 2, (given, status, err)
        assert "no such directory" in err and "names a directory" in err
        assert err.strip().count("\n") == 0, err
    (work / "file").write_text("kept\n")
    res = run_bin(*argv, f"{work}/file/")
    assert res.returncode == 2 and "is not a directory" in res.stderr, res.stderr
    assert sorted(os.listdir(work)) == ["file"] and (work / "file").read_text() == "kept\n"


def test_snapshot_into_an_existing_directory_with_a_slash(tmp_path):
    res = run_bin("snapshot", "--root", ROOT, "-o", f"{tmp_path}/")
    assert res.returncode == 0, res.stderr
    [name] = os.listdir(tmp_path)
    assert name.startswith("inspector-") and name.endswith(".json")
    assert res.stdout.strip() == os.path.join(f"{tmp_path}/", name)


@pytest.mark.parametrize("command", ["export --json -o", "export --prometheus -o",
                                     "record --textfile", "capture -o"])
def test_an_existing_directory_is_refused_where_a_file_is_written(tmp_path, command):
    argv = FILE_OPTIONS[command]
    res = run_bin(*argv, f"{tmp_path}/")
    assert res.returncode == 2 and "is a directory" in res.stderr, res.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("argv", [
    *([*argv, ""] for argv in FILE_OPTIONS.values()),
    ["history", "--db", ""], ["history", "import-ioping", "/dev/null", "--db", ""],
    ["top", "--db", ""], ["tui", "--db", ""],
], ids=lambda a: " ".join(a[:2]) + " " + a[-2])
def test_an_empty_path_is_a_usage_error(tmp_path, argv):
    """`-o ""` and `--db ""` meant the default path (a file in the current directory, the
    default database): a usage error now, before anything runs."""
    res = run_bin(*argv, cwd=tmp_path)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "an empty path names no file" in res.stderr and "Traceback" not in res.stderr
    assert os.listdir(tmp_path) == []


def test_links_are_resolved_as_the_kernel_does(tmp_path, monkeypatch):
    """Relative targets, '..' after a link (the physical parent), a link to a directory in
    the middle, a loop, a link to '/'."""
    from inspector.writing.paths import OutputError, walk
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "to_b").symlink_to("a/b")
    (tmp_path / "up").symlink_to("a/b/..")                  # = a
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "slash").symlink_to("/")
    monkeypatch.chdir(tmp_path)
    for given, directory, name in (("to_b/x", tmp_path / "a" / "b", "x"),
                                   ("to_b/../y", tmp_path / "a", "y"),
                                   (f"{tmp_path}/up/z", tmp_path / "a", "z")):
        with walk(given) as place:
            assert (place.directory, place.name, place.entry) == (str(directory), name, None)
    with pytest.raises(OutputError, match="too many levels"):
        walk("loop1")
    with pytest.raises(OutputError, match="is a directory"):
        write_atomic(str(tmp_path / "slash"), b"x")


def test_a_directory_swapped_for_a_link_during_the_lookup_is_not_followed(tmp_path,
                                                                           monkeypatch):
    """Between the check of a component and the step into it, `d` becomes a link elsewhere:
    the step (O_NOFOLLOW) refuses it and nothing is written there."""
    from inspector.writing import paths as output_paths
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "d").mkdir()
    real_lstat = os.lstat

    def swapping_lstat(name, *, dir_fd=None):
        st = real_lstat(name, dir_fd=dir_fd)
        if name == "d" and stat.S_ISDIR(st.st_mode):
            os.rmdir(tmp_path / "d")
            os.symlink(elsewhere, tmp_path / "d")
        return st
    monkeypatch.setattr(output_paths.os, "lstat", swapping_lstat)
    with pytest.raises(OutputError, match="d: "):
        write_atomic(str(tmp_path / "d" / "out.json"), b"{}")
    monkeypatch.undo()
    assert os.listdir(elsewhere) == []
