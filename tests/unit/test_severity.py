"""One ranking of finding levels: a CRIT beside an UNKNOWN is CRIT wherever it is ranked
(Level's values are Nagios' statuses, UNKNOWN = 3, so max() over them would say UNKNOWN)."""
from __future__ import annotations

import json
import shutil
import sqlite3

from conftest import fixture_root, run_cli
from inspector.health import sort_findings
from inspector.model import Finding, HostIdentity, Level, Report, worst


def test_worst_ranks_crit_above_unknown_above_warn():
    assert worst([Level.UNKNOWN, Level.CRIT, Level.WARN]) is Level.CRIT
    assert worst([Level.WARN, Level.UNKNOWN]) is Level.UNKNOWN
    assert worst([Level.OK, Level.WARN]) is Level.WARN
    assert worst([]) is Level.OK
    assert [lv.name for lv in sorted(Level, key=lambda lv: lv.severity)] == \
        ["OK", "WARN", "UNKNOWN", "CRIT"]


def test_report_worst_and_findings_order():
    findings = [Finding(Level.WARN, "a", "w"), Finding(Level.UNKNOWN, "b", "u"),
                Finding(Level.CRIT, "c", "c"), Finding(Level.OK, "d", "o")]
    report = Report(host=HostIdentity("h", "k", "m", "live", 0.0), sections={}, findings=findings)
    assert report.worst() is Level.CRIT
    assert [f.level for f in sort_findings(findings)] == \
        [Level.CRIT, Level.UNKNOWN, Level.WARN, Level.OK]


def _root_with_crit_and_unknown(tmp_path):
    """A degraded raid1 (CRIT) whose capture says dns could not be collected (UNKNOWN)."""
    root = tmp_path / "root"
    shutil.copytree(fixture_root("storage-raid1-faulty"), root, symlinks=True)
    (root / "inspector-sidecar.json").write_text(json.dumps(
        {"version": 1, "facts": {"capture": {"incomplete": {"dns": "timed out after 15 s"}}}}))
    return root


def test_crit_beside_unknown_is_recorded_exported_and_checked_as_crit(tmp_path):
    root = _root_with_crit_and_unknown(tmp_path)
    report = run_cli("--root", str(root), "report", "--json").json()
    assert {"crit", "unknown"} <= {f["level"] for f in report["findings"]}

    db = tmp_path / "history.sqlite"
    rec = run_cli("--root", str(root), "record", "--once", "--db", str(db))
    assert rec.status == 0, rec.err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT worst FROM checks").fetchall() == [("crit",)]

    prom = run_cli("--root", str(root), "export", "--prometheus")
    status = [line for line in prom.out.splitlines() if line.startswith("inspector_health_status")]
    assert status and status[0].split()[-1] == "2", status

    check = run_cli("--root", str(root), "check")
    assert check.status == 2 and check.out.startswith("INSPECTOR CRITICAL"), check.out
