"""QA (monitoring): the recorder never files one machine's measurements under another's name.
`inspector record --root CAPTURE --probe io:/var/tmp` measured THIS host's disk and stored it
as a run of the capture's host (xen-pv-guest), as `snapshot` already refuses to."""
import sqlite3

from conftest import fixture_root, run_cli


def test_probes_against_a_root_are_refused_and_nothing_is_written(tmp_path):
    db = tmp_path / "h.sqlite"
    res = run_cli("record", "--once", "--root", str(fixture_root("xen-pv-guest")),
                  "--probe", "io:/var/tmp", "--probe-seconds", "0.2", "--db", str(db))
    assert res.status == 2, (res.out, res.err)
    assert "--probe needs the live host" in res.err and res.err.count("\n") == 1
    assert not db.exists() or sqlite3.connect(db).execute(
        "SELECT COUNT(*) FROM probe_runs").fetchone()[0] == 0


def test_a_root_without_probes_still_records_its_findings(tmp_path):
    db = tmp_path / "h.sqlite"
    res = run_cli("record", "--once", "--root", str(fixture_root("xen-pv-guest")),
                  "--db", str(db))
    assert res.status == 0, res.err
    rows = sqlite3.connect(db).execute("SELECT host, worst FROM checks").fetchall()
    assert rows == [("xen-pv-guest", "warn")]


def _checks(db) -> int:
    try:
        return sqlite3.connect(db).execute("SELECT COUNT(*) FROM checks").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _wait_checks(db, n: int, timeout: float = 20) -> int:
    import time
    deadline = time.time() + timeout
    while time.time() < deadline:
        if (got := _checks(db)) >= n:
            return got
        time.sleep(0.1)
    return _checks(db)


def test_nohup_recorder_outlives_the_ssh_session(tmp_path):
    """`nohup inspector record &` then logging out: the hangup must not stop it (it did:
    the recorder re-armed the SIGHUP that nohup ignores, and finished after one sample)."""
    import signal
    import subprocess
    from conftest import inspector_bin
    db = tmp_path / "h.sqlite"
    proc = subprocess.Popen(
        [inspector_bin(), "record", "--every", "0.3s", "--db", str(db)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))     # what nohup does
    try:
        assert _wait_checks(db, 1) >= 1
        proc.send_signal(signal.SIGHUP)
        before = _checks(db)
        assert _wait_checks(db, before + 2) >= before + 2, proc.poll()
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)                     # a kill still stops it cleanly
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "signal 1," not in proc.stderr.read()
