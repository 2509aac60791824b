"""Links planted by another user: root's outputs (-o, --textfile, --db) never follow them.

A real second user (`nobody`, via setpriv) plants symlinks in a sticky world-writable
directory made for the test (mode 1777, like /tmp, but private to it) towards a root-only file
and into a root-only directory; the real `inspector` binary runs as root. The kernel's rule
(fs.protected_symlinks, which a path resolved in userspace escapes) is applied by Inspector
itself: another user's link there is refused with one line naming the link and its owner, and
the victim keeps its content, owner, mode and inode; nothing appears in the root-only
directory. A link the rule allows (root's own, or the directory owner's) still works."""
from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import fixture_root, inspector_bin, require_root, run_bin, run_cli

ROOT = str(fixture_root("xen-pv-guest"))
NOBODY = pwd.getpwnam("nobody")


def as_nobody(*argv: str) -> None:
    subprocess.run(["setpriv", "--reuid", str(NOBODY.pw_uid), "--regid", str(NOBODY.pw_gid),
                    "--clear-groups", *argv], check=True, timeout=30)


def plant(link: Path, target: Path | str) -> Path:
    """`ln -s target link` as nobody."""
    as_nobody("ln", "-s", str(target), str(link))
    assert os.lstat(link).st_uid == NOBODY.pw_uid
    return link


def state(path: Path) -> tuple:
    """What a planted write would change: content, owner, mode, inode, mtime."""
    st = os.lstat(path)
    return (hashlib.sha256(path.read_bytes()).hexdigest(), st.st_uid, st.st_gid,
            stat.S_IMODE(st.st_mode), st.st_ino, st.st_mtime_ns)


@dataclass
class Scene:
    shared: Path        # sticky, world-writable, owned by root (a private /tmp)
    secret: Path        # root-only directory (0700)
    victim: Path        # root-only file in it (0600)
    private: Path       # root-only directory for the outputs the test does not attack

    def assert_untouched(self, before: tuple) -> None:
        assert state(self.victim) == before
        assert sorted(os.listdir(self.secret)) == ["victim"]


@pytest.fixture
def scene(tmp_path):
    require_root()
    # not under tmp_path (0700 parents: nobody could not reach it), not /tmp itself
    shared = Path(tempfile.mkdtemp(prefix="inspector-planted-", dir="/tmp"))
    os.chmod(shared, 0o1777)
    secret = tmp_path / "secret"
    secret.mkdir(mode=0o700)
    victim = secret / "victim"
    victim.write_text("root's own data\n")
    os.chmod(victim, 0o600)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    try:
        yield Scene(shared, secret, victim, private)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def assert_refused(res: subprocess.CompletedProcess, link: Path) -> None:
    err = res.stderr.strip()
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert err.count("\n") == 0, err                       # one line
    assert str(link) in err and "nobody" in err and "refusing to follow" in err, err
    assert "Traceback" not in err


OUTPUT_COMMANDS = {
    "snapshot -o": lambda out, s: ["snapshot", "--root", ROOT, "-o", out],
    "export --json -o": lambda out, s: ["export", "--json", "--root", ROOT, "-o", out],
    "export --prometheus -o": lambda out, s: ["export", "--prometheus", "--root", ROOT,
                                              "-o", out],
    "record --textfile": lambda out, s: ["record", "--once", "--root", ROOT, "--textfile", out,
                                         "--db", str(s.private / "h.sqlite")],
    "record --db": lambda out, s: ["record", "--once", "--root", ROOT, "--db", out],
    "capture -o": lambda out, s: ["capture", "--timeout", "5s", "-o", out],
}


def run_output(command: str, out: Path, scene: Scene, binary: bool) -> subprocess.CompletedProcess:
    """The output command writing to `out`: the real binary, or in-process."""
    argv = OUTPUT_COMMANDS[command](str(out), scene)
    if binary:
        return run_bin(*argv)
    res = run_cli(*argv)
    return subprocess.CompletedProcess(argv, res.status, res.out, res.err)


def by_binary(command: str, case: int) -> bool:
    """Which of a command's cases (0, 1) the real binary runs, the other in-process: every
    command through every case, the binary on each command and case, half the starts."""
    return list(OUTPUT_COMMANDS).index(command) % 2 == case


@pytest.mark.parametrize("command", OUTPUT_COMMANDS)
def test_a_link_to_a_root_only_file_is_not_followed(scene, command):
    link = plant(scene.shared / "evil", scene.victim)
    before = state(scene.victim)
    res = run_output(command, link, scene, binary=by_binary(command, 0))
    assert_refused(res, link)
    scene.assert_untouched(before)
    assert os.readlink(link) == str(scene.victim)          # the link itself stays too


@pytest.mark.parametrize("command", OUTPUT_COMMANDS)
def test_a_dangling_link_creates_nothing_in_a_root_only_directory(scene, command):
    link = plant(scene.shared / "dangling", scene.secret / "created")
    before = state(scene.victim)
    res = run_output(command, link, scene, binary=by_binary(command, 1))
    assert_refused(res, link)
    scene.assert_untouched(before)


MIDDLE_COMMANDS = ["snapshot -o", "export --prometheus -o", "record --db"]


@pytest.mark.parametrize("command", MIDDLE_COMMANDS)
def test_a_link_in_the_middle_of_the_path_is_not_followed(scene, command):
    """nobody's link to the root-only directory, used as a directory of the path."""
    link = plant(scene.shared / "dir", scene.secret)
    before = state(scene.victim)
    existing_by_binary = MIDDLE_COMMANDS.index(command) % 2 == 0     # the other case in-process
    res = run_output(command, link / "victim", scene, binary=existing_by_binary)
    assert_refused(res, link)
    res = run_output(command, link / "new", scene, binary=not existing_by_binary)
    assert_refused(res, link)
    scene.assert_untouched(before)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """A recording made by root, once for the module (each test links its own copy)."""
    made = tmp_path_factory.mktemp("recording") / "h.sqlite"
    res = run_bin("record", "--once", "--root", ROOT, "--db", str(made))
    assert res.returncode == 0, res.stderr
    return made


@pytest.mark.parametrize("argv", [
    ["history", "--db"], ["history", "--checks", "--db"], ["top", "--db"],
    ["history", "import-ioping", "LOG", "--db"],
], ids=lambda a: " ".join(a))
def test_history_readers_and_imports_refuse_a_planted_database_link(scene, recording, argv):
    """Every command that opens the history database applies the rule before SQLite opens
    anything (a recording made by root, linked by nobody)."""
    made = scene.private / "h.sqlite"
    shutil.copy(recording, made)
    link = plant(scene.shared / "h.sqlite", made)
    recorded = state(made)
    log = scene.private / "ioping.log"
    log.write_text("4096 256 time=1.0 ms\n")
    res = run_bin(*[str(log) if a == "LOG" else a for a in argv], str(link))
    assert_refused(res, link)
    assert state(made) == recorded


def test_a_link_planted_beside_the_database_is_refused(scene):
    """SQLite opens DB-wal by name: nobody's link there to the victim is refused, before a
    database is created."""
    plant(scene.shared / "h.sqlite-wal", scene.victim)
    before = state(scene.victim)
    res = run_bin("record", "--once", "--root", ROOT, "--db", str(scene.shared / "h.sqlite"))
    assert res.returncode == 2 and "h.sqlite-wal is a symbolic link" in res.stderr, res.stderr
    assert sorted(os.listdir(scene.shared)) == ["h.sqlite-wal"]
    scene.assert_untouched(before)


@pytest.mark.parametrize("command", ["snapshot -o", "export --json -o", "record --textfile"])
def test_another_users_file_in_the_sticky_directory_is_not_replaced(scene, command):
    """fs.protected_regular's rule: nobody's file there would be replaced by root's output and
    handed back to nobody (the owner of a replaced file is kept)."""
    planted = scene.shared / "out"
    as_nobody("sh", "-c", f"echo mine > {planted}")
    before = state(planted)
    res = run_bin(*OUTPUT_COMMANDS[command](str(planted), scene))
    assert res.returncode == 2 and "refusing to replace a file owned by nobody" in res.stderr
    assert res.stderr.strip().count("\n") == 0, res.stderr
    assert state(planted) == before


@pytest.mark.parametrize("command", ["snapshot -o", "export --prometheus -o",
                                     "record --textfile", "record --db"])
def test_roots_own_link_is_followed(scene, command):
    """The kernel's rule allows a link owned by the one who follows it."""
    target = scene.private / "target"
    link = scene.shared / "mine"
    link.symlink_to(target)                                 # root's, in the sticky directory
    res = run_bin(*OUTPUT_COMMANDS[command](str(link), scene))
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and target.stat().st_size > 0


def test_the_directory_owners_link_is_followed(scene):
    """...and one owned by the sticky directory's owner (nobody's own sticky directory)."""
    owned = scene.shared / "nobodys"
    as_nobody("mkdir", "-m", "1777", str(owned))
    target = scene.private / "target.json"
    link = plant(owned / "out.json", target)
    res = run_bin("export", "--json", "--root", ROOT, "-o", str(link))
    assert res.returncode == 0, res.stderr
    assert target.read_text().startswith("{")
    assert os.stat(target).st_uid == 0                       # a new file: root's


def test_another_users_database_in_the_sticky_directory_is_not_written(scene):
    """A database nobody put in the shared directory is read (history) but never written by
    root's recorder: its content could be anything nobody wants root's SQLite to write."""
    planted = scene.shared / "h.sqlite"
    as_nobody(inspector_bin(), "record", "--once", "--root", ROOT, "--db", str(planted))
    before = state(planted)
    res = run_bin("record", "--once", "--root", ROOT, "--db", str(planted))
    assert res.returncode == 2, res.stderr
    assert "refusing to write into a file owned by nobody" in res.stderr, res.stderr
    assert state(planted) == before
    assert run_bin("history", "--checks", "--db", str(planted)).returncode == 0
