"""The history database: reading never writes, and a file that is not an Inspector history is
never touched. `history` used to create the schema and switch a database to WAL; an SQLite
file of another program given as --db gained Inspector's tables."""
from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, fixture_root, run_cli
from inspector.record import history
from inspector.record.history import HistoryDB, HistoryError, NoHistory
from safety_helpers import fingerprint, one_line

ROOT = str(fixture_root("xen-pv-guest"))
IOPING_LOG = str(FIXTURES / "samples/ioping/periodic-log.txt")


def _beside(path) -> list[str]:
    return sorted(os.listdir(os.path.dirname(path)))


def _foreign(path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('alice')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("wal", [False, True])
def test_another_programs_database_is_refused_untouched(tmp_path, wal):
    db = tmp_path / "app.sqlite"
    _foreign(str(db))
    if wal:
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.close()
    before, files = fingerprint(db), _beside(db)
    for argv in (("record", "--once", "--root", ROOT, "--db", str(db)),
                 ("history", "--db", str(db)),
                 ("history", "--db", str(db), "--checks", "--json"),
                 ("history", "import-ioping", IOPING_LOG, "--db", str(db))):
        res = run_cli(*argv)
        assert res.status == 2 and one_line(res.err), (argv, res.status, res.err)
        assert "not a usable history database" in res.err and "users" in res.err, res.err
        assert fingerprint(db) == before and _beside(db) == files     # no -wal, no -shm
    with pytest.raises(HistoryError, match="something else"):
        HistoryDB(str(db), create=False)                              # the TUI's reader
    assert fingerprint(db) == before and _beside(db) == files


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path):
    db = tmp_path / "notes.txt"
    db.write_text("my notes\n" * 100)
    before = fingerprint(db)
    for argv in (("record", "--once", "--root", ROOT, "--db", str(db)), ("history", "--db", str(db))):
        res = run_cli(*argv)
        assert res.status == 2 and "not an SQLite file" in res.err, res.err
    assert fingerprint(db) == before and _beside(db) == ["notes.txt"]


def test_an_empty_sqlite_database_without_tables_is_not_a_history(tmp_path):
    db = tmp_path / "empty.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 7")       # a valid database file with no tables
    conn.close()
    before = fingerprint(db)
    res = run_cli("record", "--once", "--root", ROOT, "--db", str(db))
    assert res.status == 2 and "tables: none" in res.err, res.err
    assert fingerprint(db) == before


def _recorded(tmp_path) -> str:
    db = str(tmp_path / "h.sqlite")
    res = run_cli("record", "--once", "--root", ROOT, "--db", db)
    assert res.status == 0, res.err
    return db


def test_reading_a_history_in_rollback_journal_mode_leaves_it_so(tmp_path):
    """history on a database that is not in WAL: no journal mode switch, no -wal/-shm."""
    db = _recorded(tmp_path)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode=DELETE").fetchone() == ("delete",)
    conn.close()
    before, files = fingerprint(Path(db)), _beside(db)
    assert files == ["h.sqlite"]
    for argv in (("history", "--db", db), ("history", "--db", db, "--checks", "--json")):
        res = run_cli(*argv)
        assert res.status in (0, 1) and "internal error" not in res.err, res.err
    assert run_cli("history", "--db", db, "--checks", "--json").json()["checks"][0]["samples"] == 1
    assert _beside(db) == files and fingerprint(Path(db)) == before
    with open(db, "rb") as f:
        assert f.read(20)[18:20] == b"\x01\x01"     # still a rollback-journal database


def test_reading_a_closed_wal_history_creates_no_files(tmp_path):
    db = _recorded(tmp_path)
    assert _beside(db) == ["h.sqlite"]              # the recorder checkpointed and cleaned up
    res = run_cli("history", "--db", db, "--checks", "--json")
    assert res.status == 0 and res.json()["checks"][0]["samples"] == 1
    assert _beside(db) == ["h.sqlite"]


def test_reading_while_the_recorder_writes(tmp_path):
    """A recorder holding the database open (its -wal has the latest sample): read with it.
    The recorder is another process, as it is in life (SQLite's state does not survive the
    fork of the child `history` reads from)."""
    db = _recorded(tmp_path)
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom inspector.record.history import HistoryDB\n"
         "with HistoryDB(sys.argv[1]) as w:\n"
         "    w.record_sample([], (1_700_000_000.0, 'warn', [], 'h'))\n"
         "    print('written', flush=True)\n    sys.stdin.read()\n", db],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "written\n"
        assert os.path.getsize(db + "-wal") > 0
        res = run_cli("history", "--db", db, "--checks", "--json")
        assert res.status == 0 and sum(b["samples"] for b in res.json()["checks"]) == 2
    finally:
        writer.communicate("", timeout=30)


def test_a_missing_database_reads_as_nothing_recorded(tmp_path):
    db = tmp_path / "never-recorded.sqlite"
    res = run_cli("history", "--db", str(db))
    assert res.status == 1 and one_line(res.err) and "no recorded runs" in res.err
    assert "no history database" in res.err
    res = run_cli("history", "--db", str(db), "--checks", "--json")
    assert res.status == 1 and res.json()["checks"] == []
    assert not db.exists() and os.listdir(tmp_path) == []
    with pytest.raises(NoHistory):
        HistoryDB(str(db), create=False)


def test_a_missing_directory_is_an_error_not_created(tmp_path):
    res = run_cli("record", "--once", "--root", ROOT, "--db", str(tmp_path / "typo" / "h.sqlite"))
    assert res.status == 2 and "no such directory" in res.err and one_line(res.err)
    assert os.listdir(tmp_path) == []


def test_an_empty_file_is_a_new_history(tmp_path):
    db = tmp_path / "h.sqlite"
    db.touch()
    assert run_cli("history", "--db", str(db)).status == 1        # nothing recorded, untouched
    assert db.stat().st_size == 0
    assert run_cli("record", "--once", "--root", ROOT, "--db", str(db)).status == 0
    assert run_cli("history", "--db", str(db), "--checks", "--json").json()["checks"]


def test_a_device_node_beside_the_database_is_refused(tmp_path):
    """SQLite opens DB-wal and DB-shm by name: a device planted there is refused too."""
    from conftest import require_root
    require_root()
    db = _recorded(tmp_path)
    os.mknod(db + "-wal", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    for argv in (("history", "--db", db), ("record", "--once", "--root", ROOT, "--db", db)):
        res = run_cli(*argv)
        assert res.status == 2 and "h.sqlite-wal is a character device" in res.err, res.err
    assert stat.S_ISCHR(os.lstat(db + "-wal").st_mode)


def test_a_file_swapped_while_sqlite_opens_it_is_not_used(tmp_path, monkeypatch):
    """The file checked (fstat through our own descriptor) must be the one SQLite opened by
    name: a swap in between is caught and the swapped-in file is never written."""
    db = _recorded(tmp_path)
    other = tmp_path / "other.sqlite"
    _foreign(str(other))
    foreign = fingerprint(other)
    real_connect = sqlite3.connect

    def swapping_connect(database, *args, **kwargs):
        if "mode=rw" in str(database):     # the writer's open: the attacker's moment
            os.replace(other, db)
        return real_connect(database, *args, **kwargs)
    monkeypatch.setattr(history.sqlite3, "connect", swapping_connect)
    with pytest.raises(HistoryError, match="replaced while it was being opened"):
        HistoryDB(db)
    assert fingerprint(Path(db)) == foreign     # the swapped-in file was not written


def test_a_fifo_as_database_does_not_hang(tmp_path):
    fifo = tmp_path / "h.sqlite"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "inspector", "history", "--db", str(fifo)],
                          capture_output=True, text=True, timeout=20)
    assert done.returncode == 2 and "FIFO" in done.stderr, done.stderr
