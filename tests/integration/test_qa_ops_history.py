"""QA (monitoring): what the recorder records can be read back. `inspector record` stores each
sample's check result (worst level and findings) but `history` only ever showed probe runs:
a recorder run without --probe ("record findings") answered "no recorded runs"."""
import time

from conftest import fixture_root, run_cli
from inspector.history import HistoryDB


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
