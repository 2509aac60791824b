"""Recorder: real runs into a temp database, SIGKILL mid-run, reopen, retention pruning."""
import signal
import sqlite3
import subprocess
import time

from conftest import fixture_root, inspector_bin, run_cli
from inspector.record.history import HistoryDB, ProbeRun


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
    # it can be opened for writing again by the next recorder: another process, as in use
    # (run in-process it would fork its database child from this one, which holds `conn`:
    # SQLite's lock state does not survive a fork, the child's open failed or waited)
    res = subprocess.run([inspector_bin(), "record", "--once", "--db", str(db)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
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


# The recorder never files one machine's measurements under another's name. `inspector record
# --root CAPTURE --probe io:/var/tmp` measured THIS host's disk and stored it as a run of the
# capture's host (xen-pv-guest), as `snapshot` already refuses to.

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
        # a capture, not this host: beside the parallel part's hung FUSE mounts a host sample
        # costs its collectors' timeouts, and two samples did not come within 20 s
        [inspector_bin(), "record", "--every", "0.3s", "--root", str(fixture_root("xen-pv-guest")),
         "--db", str(db)],
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
    assert proc.stderr is not None
    assert "signal 1," not in proc.stderr.read()


# What the recorder records can be read back. `inspector record` stores each sample's check result
# (worst level and findings) but `history` only ever showed probe runs: a recorder run without
# --probe ("record findings") answered "no recorded runs".

def test_recorded_checks_read_back_by_hour_and_day(tmp_path):
    db = tmp_path / "h.sqlite"
    for name in ("xen-pv-guest", "xen-pv-guest", "storage-raid1-faulty"):
        res = run_cli("record", "--once", "--root", str(fixture_root(name)), "--db", str(db))
        assert res.status == 0, res.err
    # probe history alone says where the samples are instead of "no recorded runs"
    res = run_cli("history", "--db", str(db))
    assert res.status == 1 and "3 recorded checks: inspector history --checks" in res.err
    # --json agrees with the text form: a valid, empty document and exit 1
    res = run_cli("history", "--db", str(db), "--json")
    assert res.status == 1 and res.json()["series"] == {}
    res = run_cli("history", "--db", str(db), "--checks", "--by", "day", "--json")
    assert res.status == 0, res.err
    doc = res.json()
    today = time.strftime("%Y-%m-%d", time.localtime())
    [bucket] = doc["checks"]
    assert bucket["key"] == today and bucket["samples"] == 3
    assert bucket["worst"] == {"ok": 0, "warn": 2, "crit": 1, "unknown": 0}
    codes = {f["code"]: f["samples"] for f in bucket["findings"]}
    assert codes["net.xen_tso"] == 2 and codes["md.degraded"] == 1, codes
    text = run_cli("history", "--db", str(db), "--checks")
    assert text.status == 0, text.err
    assert "recorded checks: by hour of day" in text.out
    row = next(line for line in text.out.splitlines() if line.startswith(time.strftime("%H")))
    assert row.split()[:12:2] == [time.strftime("%H"), "3", "0", "2", "1", "0"], row


def test_checks_bucket_in_the_local_time_of_each_sample(tmp_path):
    db = tmp_path / "h.sqlite"
    with HistoryDB(str(db)) as h:
        h.record_sample([], (1_700_000_000.0, "ok", [], "a"))    # 22:13 UTC
    with HistoryDB(str(db)) as h:                                # as if logged at UTC+09:00
        h.conn.execute("UPDATE checks SET tz_offset_s = 32400")
    doc = run_cli("history", "--db", str(db), "--checks", "--json").json()
    assert [b["key"] for b in doc["checks"]] == ["07"] and doc["utc_offsets_s"] == [32400]
    assert run_cli("history", "--db", str(db), "--checks", "--probe", "io").status == 2


def test_a_database_on_a_read_only_mount_can_be_read(tmp_path):
    """Reading history needs no write access: a recorder's database on a read-only mount (a
    backup, a snapshot of /var/lib) or read by an operator who cannot create the -shm file
    beside it said "not a usable history database: unable to open database file"."""
    import subprocess

    from conftest import require_root
    require_root()
    src = tmp_path / "src"
    src.mkdir()
    db = src / "h.sqlite"
    run_cli("record", "--once", "--root", str(fixture_root("xen-pv-guest")), "--db", str(db))
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "--bind", str(src), str(ro)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
        res = run_cli("history", "--db", str(ro / "h.sqlite"), "--checks", "--json")
        assert res.status == 0, res.err
        assert [b["samples"] for b in res.json()["checks"]] == [1]
        assert "not a usable" not in res.err
        # and nothing was written there (it could not be): the recorder still owns the file
        assert run_cli("record", "--once", "--db", str(ro / "h.sqlite")).status == 2
    finally:
        done = subprocess.run(["umount", str(ro)], capture_output=True, text=True)
        if done.returncode:
            subprocess.run(["umount", "-l", str(ro)], check=False)
    # inspector left no file open on the mount (a failed open used to leak its connection)
    assert done.returncode == 0, done.stderr
