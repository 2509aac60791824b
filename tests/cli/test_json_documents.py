"""Every --json document opens with `schema_version` (and `kind`, the report aside), and the
real documents of every shape, success and failure, validate against the schema their
command's --schema prints (and a broken one does not)."""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]  # no stubs in the test deps
import pytest

from conftest import fixture_root, inspector_bin, run_bin, run_cli
from dns_responders import Responder, closed_port
from inspector.documents.kinds import VERSIONS
from memcached_server import free_port

ROOT = str(fixture_root("flash-mixed"))


def validator(command: str) -> jsonschema.Draft202012Validator:
    res = run_cli(*command.split(), "--schema")
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
    for command in (("probe", "io"), ("probe", "memcached"), ("probe", "dns"), ("history",)):
        res = run_cli(*command, "--schema")     # probe io's TARGET, memcached's HOST:PORT
        assert res.status == 0, res.err
        assert res.json()["title"] == f"inspector {' '.join(command)} --json"


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


# ------------------------------------------------------------------------------ probes
def corrupted(doc: dict, change) -> dict:
    copy = json.loads(json.dumps(doc))
    change(copy)
    return copy


def test_probe_io_json_matches_its_schema(tmp_path):
    v = validator("probe io")
    data = tmp_path / "data.bin"
    data.write_bytes(b"\0" * (1 << 20))
    # the real binary: an in-process run in a test worker was once stopped as by Ctrl-C
    # (a signal meant for the worker, source not found), which is not this test's subject
    run = run_bin("probe", "io", str(data), "-c", "20", "-j", "2", "--cached", "--json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert_stamped(doc, "inspector-probe-io")
    assert len(doc["summary"]["workers"]) == 2 and doc["histogram"] and doc["samples"]
    assert_valid(v, doc)
    ramp = run_bin("probe", "io", str(data), "--cached", "--ramp", "-j", "2", "-w", "0.2s",
                   "--json")
    assert ramp.returncode == 0, ramp.stderr
    ramp_doc = json.loads(ramp.stdout)
    assert_stamped(ramp_doc, "inspector-probe-io-ramp")
    assert [s["jobs"] for s in ramp_doc["ramp"]["steps"]] == [1, 2]
    assert_valid(v, ramp_doc)
    assert not v.is_valid(corrupted(doc, lambda d: d["summary"].__setitem__("requests", "20")))
    assert not v.is_valid(corrupted(doc, lambda d: d["summary"].__setitem__("mode", "append")))
    assert not v.is_valid(corrupted(ramp_doc, lambda d: d["ramp"]["steps"][0]["summary"]
                                    .__setitem__("interrupted", 0)))


def test_probe_dns_json_matches_its_schema(tmp_path):
    v = validator("probe dns")
    conf = tmp_path / "resolv.conf"     # the search list fills `names` and `by_name`
    conf.write_text("nameserver 127.0.0.1\nsearch probe.test\noptions ndots:2 timeout:1\n")
    responder = Responder(mode="ok")
    try:
        answered = run_cli("probe", "dns", "www", "--resolv-conf", str(conf),
                           "--server", responder.server, "--json")
    finally:
        responder.close()
    assert answered.status == 0, answered.err
    unreachable = run_cli("probe", "dns", "www", "--resolv-conf", str(conf),
                          "--server", closed_port(), "--json")
    assert unreachable.status == 1, unreachable.err
    docs = [answered.json(), unreachable.json()]
    assert [d["servers"][0]["kind"] for d in docs] == ["answered", "refused"]
    assert docs[0]["by_name"] and docs[1]["findings"]
    for doc in docs:
        assert_stamped(doc, "inspector-probe-dns")
        assert_valid(v, doc)
    assert not v.is_valid(corrupted(docs[0], lambda d: d["servers"][0]
                                    .__setitem__("latency_s", "2 ms")))
    assert not v.is_valid(corrupted(docs[1], lambda d: d["servers"][0]
                                    .__setitem__("kind", "asleep")))


def test_probe_memcached_json_matches_its_schema(memcached):
    v = validator("probe memcached")
    server = memcached()
    load = run_cli("probe", "memcached", server.address, "-c", "4", "-e", "200", "-t", "mix",
                   "--json")
    assert load.status == 0, load.err
    refused = run_cli("probe", "memcached", f"127.0.0.1:{free_port()}", "-e", "1", "--json")
    assert refused.status == 1, refused.err
    docs = [load.json(), refused.json()]
    assert set(docs[0]["ops"]) == {"set", "get"} and docs[0]["server"]["checks"]
    assert docs[1]["target_error"] == "connect_refused"
    for doc in docs:
        assert_stamped(doc, "inspector-probe-memcached")
        assert_valid(v, doc)
    assert not v.is_valid(corrupted(docs[0], lambda d: d["ops"]["get"]["latency"]
                                    .__setitem__("count", 1.5)))
    assert not v.is_valid(corrupted(docs[1], lambda d: d["errors"].__setitem__("gremlins", 1)))


def test_probe_memcached_ramp_json_matches_its_schema(memcached):
    v = validator("probe memcached")
    server = memcached()
    ramp = run_cli("probe", "memcached", server.address, "--ramp", "--start-connections", "2",
                   "--max-connections", "4", "--step-seconds", "0.3s", "--json")
    assert ramp.status == 0, ramp.err
    refused = run_cli("probe", "memcached", f"127.0.0.1:{free_port()}", "--ramp", "--json")
    assert refused.status == 1, refused.err
    docs = [ramp.json(), refused.json()]
    assert [s["connections"] for s in docs[0]["steps"]] == [2, 4] and docs[1]["steps"] == []
    for doc in docs:
        assert_stamped(doc, "inspector-probe-memcached-ramp")
        assert_valid(v, doc)
    assert not v.is_valid(corrupted(docs[0], lambda d: d["steps"][1]
                                    .__setitem__("opened", "4")))


# ------------------------------------------------------------------------------ history
def _recorded(db: Path) -> bool:
    """A probe run, a check and two sample intervals committed (read as another process)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return all(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] >= least
                       for table, least in (("probe_runs", 1), ("checks", 1),
                                            ("sample_intervals", 2)))
    except sqlite3.OperationalError:     # not created yet
        return False


@pytest.fixture(scope="module")
def recorded_db(tmp_path_factory) -> str:
    """A real `record`: one sample with an io probe run, and live samples every 200 ms."""
    where = tmp_path_factory.mktemp("history")
    (where / "io").mkdir()
    db = where / "h.sqlite"
    recorder = subprocess.Popen(
        [inspector_bin(), "record", "--db", str(db), "--every", "1h", "--probe",
         f"io:{where / 'io'}", "--probe-seconds", "300ms", "--samples", "--sample-every",
         "200ms"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not _recorded(db):
            assert recorder.poll() is None, recorder.communicate()[1]
            assert time.monotonic() < deadline, "nothing recorded after 20 s"
            time.sleep(0.05)
    finally:
        recorder.terminate()               # SIGTERM: the recorder finishes its interval
        _, err = recorder.communicate(timeout=15)
    assert recorder.returncode == 0, err
    return str(db)


def test_history_json_matches_its_schema(recorded_db):
    v = validator("history")
    docs = {}
    for flag, kind in ((None, "inspector-history"), ("--checks", "inspector-history-checks"),
                       ("--samples", "inspector-history-samples")):
        res = run_cli("history", "--json", "--db", recorded_db, *([flag] if flag else []))
        assert res.status == 0, res.err
        docs[kind] = res.json()
        assert_stamped(docs[kind], kind)
        assert_valid(v, docs[kind])
    assert len(docs["inspector-history"]["series"]) == 1
    assert docs["inspector-history-checks"]["checks"][0]["samples"] == 1
    assert docs["inspector-history-samples"]["cpu"][0]["intervals"] >= 2
    by_day = run_cli("history", "--json", "--by", "day", "--db", recorded_db)
    assert_valid(v, by_day.json())
    cases = [("inspector-history", lambda d: next(iter(d["series"].values()))[0]
              .__setitem__("runs", "1")),
             ("inspector-history-checks", lambda d: d["checks"][0]["worst"]
              .__setitem__("fatal", 1)),
             ("inspector-history-samples", lambda d: d["cpu"][0]["iowait"]
              .__setitem__("mean", "low")),
             ("inspector-history", lambda d: d.__setitem__("by", "week"))]
    assert [kind for kind, change in cases if v.is_valid(corrupted(docs[kind], change))] == []


def test_history_json_with_nothing_recorded_matches_its_schema(tmp_path):
    """Nothing recorded: exit 1, and the document still comes out, valid."""
    v = validator("history")
    missing = str(tmp_path / "none.sqlite")
    for flags in ((), ("--checks",), ("--samples",)):
        res = run_cli("history", "--json", "--db", missing, *flags)
        assert res.status == 1, res.err
        assert_valid(v, res.json())
