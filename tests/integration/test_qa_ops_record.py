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
