"""Every --json document opens with `schema_version` (and `kind`, the report aside), and where a
command has --schema, its real documents validate against the schema it prints (and a broken
one does not)."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import jsonschema
import pytest

from conftest import fixture_root, run_bin, run_cli
from inspector.documents import VERSIONS

ROOT = str(fixture_root("flash-mixed"))


def validator(command: str) -> jsonschema.Draft202012Validator:
    res = run_cli(command, "--schema")
    assert res.status == 0, res.err
    schema = res.json()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def assert_valid(v: jsonschema.Draft202012Validator, doc: dict) -> None:
    error = jsonschema.exceptions.best_match(v.iter_errors(doc))
    assert error is None, f"/{'/'.join(map(str, error.absolute_path))}: {error.message[:300]}"


def assert_stamped(doc: dict, kind: str) -> None:
    assert list(doc)[:2] == ["schema_version", "kind"], list(doc)[:4]
    assert doc["kind"] == kind and doc["schema_version"] == VERSIONS[kind]


# ------------------------------------------------------------------------------ report
@pytest.mark.parametrize("argv", [["report", "--json"], ["export", "--json"]])
def test_report_json_puts_findings_before_sections(argv):
    res = run_cli(*argv, "--root", ROOT)
    assert res.status == 0, res.err
    doc = res.json()
    assert list(doc) == ["schema_version", "host", "findings", "sections"]
    assert doc["findings"], "the fixture has findings"
    # `report --json | head -40` shows the first finding
    head = res.out.splitlines()[:40]
    assert any('"code": "' in line for line in head), head


def test_report_json_diagnose_adds_timings_last():
    doc = run_cli("report", "--json", "--diagnose", "--root", ROOT, "--section", "cpu").json()
    assert list(doc) == ["schema_version", "host", "findings", "sections", "timings"]


# ------------------------------------------------------------------- snapshot and diff
@pytest.fixture(scope="module")
def two_snapshots(tmp_path_factory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("snap")
    before, after = where / "before.json", where / "after.json"
    assert run_cli("snapshot", "--root", ROOT, "-o", str(before)).status == 0
    assert run_cli("snapshot", "--root", str(fixture_root("storage-raid1-faulty")),
                   "-o", str(after)).status == 0
    return before, after


def test_snapshot_file_matches_its_schema(two_snapshots):
    v = validator("snapshot")
    for path in two_snapshots:
        assert_valid(v, json.loads(path.read_text()))
    doc = json.loads(two_snapshots[0].read_text())
    doc["snapshot_version"] = 99
    assert not v.is_valid(doc)


def test_diff_json_matches_its_schema(two_snapshots):
    v = validator("diff")
    res = run_cli("diff", *map(str, two_snapshots), "--json")
    assert res.status == 1, res.err
    doc = res.json()
    assert_stamped(doc, "inspector-diff")
    assert doc["regressions"] > 0
    assert_valid(v, doc)
    doc["changes"][0]["regression"] = "yes"
    assert not v.is_valid(doc)


def test_schema_needs_no_other_argument():
    # like --version: `inspector diff --schema` without BEFORE AFTER
    assert run_cli("diff", "--schema").status == 0
    assert run_cli("fleet", "--schema").json()["title"] == "inspector fleet --json"


# ------------------------------------------------------------------------------ fleet
def test_fleet_json_matches_its_schema(tmp_path, two_snapshots):
    v = validator("fleet")
    dirs = []
    for name, snapshot in zip(("before", "after"), two_snapshots):
        host = tmp_path / name / "db1" / "var" / "tmp"
        host.mkdir(parents=True)
        shutil.copy(snapshot, host / "inspector.json")
        dirs.append(str(tmp_path / name))
    rows = run_cli("fleet", dirs[0], "--json").json()
    assert rows["kind"] == "inspector-fleet" and rows["hosts"]
    assert_valid(v, rows)
    diffs = run_cli("fleet", *dirs, "--json")
    assert diffs.status == 1
    assert diffs.json()["kind"] == "inspector-fleet-diff"
    assert_valid(v, diffs.json())
    rows["hosts"][0]["level"] = 3
    assert not v.is_valid(rows)


# -------------------------------------------------------------------------------- top
def test_top_json_lines_match_their_schema():
    v = validator("top")
    boot = run_cli("top", "--json", "--root", ROOT)
    assert boot.status == 0, boot.err
    doc = json.loads(boot.out)
    assert_stamped(doc, "inspector-top-boot")
    assert_valid(v, doc)
    live = run_bin("top", "--json", "--interval", "0.2", "--count", "2", timeout=30)
    assert live.returncode == 0, live.stderr
    lines = [json.loads(line) for line in live.stdout.splitlines()]
    assert len(lines) == 2
    for line in lines:
        assert_stamped(line, "inspector-top")
        assert_valid(v, line)
    lines[0]["interval"] = "one second"
    assert not v.is_valid(lines[0])


# ------------------------------------------- documents without --schema yet: stamped only
def test_probe_documents_are_stamped(tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(b"\0" * (1 << 20))
    io = run_cli("probe", "io", str(data), "-c", "3", "--cached", "--json")
    assert io.status == 0, io.err
    assert_stamped(io.json(), "inspector-probe-io")
    ramp = run_cli("probe", "io", str(data), "--cached", "--ramp", "-j", "2", "-w", "0.2s",
                   "--json")
    assert ramp.status == 0, ramp.err
    assert_stamped(ramp.json(), "inspector-probe-io-ramp")
    dns = run_bin("probe", "dns", "--server", "127.0.0.1:1", "--timeout", "1s", "--json",
                  timeout=30)
    assert dns.returncode == 1, dns.stderr
    assert_stamped(json.loads(dns.stdout), "inspector-probe-dns")
    mc = run_bin("probe", "memcached", "127.0.0.1:1", "-e", "1", "--json", timeout=30)
    assert mc.returncode == 1
    assert_stamped(json.loads(mc.stdout), "inspector-probe-memcached")
    ramp = run_bin("probe", "memcached", "127.0.0.1:1", "--ramp", "--json", timeout=30)
    assert_stamped(json.loads(ramp.stdout), "inspector-probe-memcached-ramp")


def test_history_documents_are_stamped(tmp_path):
    db = tmp_path / "h.sqlite"
    assert run_cli("record", "--once", "--root", ROOT, "--db", str(db)).status == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM checks").fetchone()[0] == 1
    checks = run_cli("history", "--checks", "--json", "--db", str(db))
    assert checks.status == 0, checks.err
    assert_stamped(checks.json(), "inspector-history-checks")
    runs = run_cli("history", "--json", "--db", str(db))
    assert runs.status == 1        # nothing probed: no runs, and the document still comes out
    assert_stamped(runs.json(), "inspector-history")
