"""Recorder: real runs into a temp database, SIGKILL mid-run, reopen, retention pruning."""
import signal
import sqlite3
import subprocess
import time

from conftest import inspector_bin, run_cli
from inspector.history import HistoryDB, ProbeRun


def test_killed_recorder_leaves_a_readable_database(tmp_path):
    db = tmp_path / "h.sqlite"
    proc = subprocess.Popen([inspector_bin(), "record", "--every", "0.05s", "--db", str(db)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 20
        while time.time() < deadline:   # wait until it has written a few samples
            time.sleep(0.2)
            if db.exists():
                try:
                    n = sqlite3.connect(db).execute("SELECT COUNT(*) FROM checks").fetchone()[0]
                except sqlite3.OperationalError:
                    continue
                if n >= 3:
                    break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = conn.execute("SELECT worst, findings FROM checks").fetchall()
    assert len(rows) >= 3 and all(w in ("ok", "warn", "crit", "unknown") for w, _ in rows)
    # it can be opened for writing again by the next recorder
    res = run_cli("record", "--once", "--db", str(db))
    assert res.status == 0, res.err
    assert conn.execute("SELECT COUNT(*) FROM checks").fetchone()[0] == len(rows) + 1


def test_sigterm_finishes_the_sample_and_exits(tmp_path):
    db = tmp_path / "h.sqlite"
    proc = subprocess.Popen([inspector_bin(), "record", "--every", "1h", "--db", str(db)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    written = 0
    while time.time() < deadline and not written:   # first sample is in; now it sleeps 1 h
        time.sleep(0.2)
        try:
            written = sqlite3.connect(db).execute("SELECT COUNT(*) FROM checks").fetchone()[0]
        except sqlite3.OperationalError:
            pass
    assert written == 1
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0


def test_retention_prunes_old_rows(tmp_path):
    db = tmp_path / "h.sqlite"
    with HistoryDB(str(db)) as h:
        old = time.time() - 40 * 86400
        h.add_runs([ProbeRun(ts=old, probe="io", target="/x", ops_per_s=1.0),
                    ProbeRun(ts=time.time() - 3600, probe="io", target="/x", ops_per_s=2.0)])
    res = run_cli("record", "--once", "--db", str(db), "--retention", "30d")
    assert res.status == 0, res.err
    with HistoryDB(str(db)) as h:
        assert [r["ops_per_s"] for r in h.runs("io", "/x")] == [2.0]


def test_bad_arguments(tmp_path):
    assert run_cli("record", "--every", "soon").status == 2
    res = run_cli("record", "--once", "--probe", "nfs:/x", "--db", str(tmp_path / "h.sqlite"))
    assert res.status == 2 and "unknown probe" in res.err
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    res = run_cli("record", "--once", "--db", str(tmp_path / "junk.sqlite"))
    assert res.status == 2 and "not a usable history database" in res.err
