"""Inputs that must be bounded: `diff /dev/zero x.json` took 4.9 GB in 6 s; deep nesting, NaN
and 1e308 timestamps, a finding with `level: 5` (read as a regression). Each is now one line,
exit 2 (an error, never 1, which a runbook reads as "regressions")."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from conftest import FIXTURES, own_peak_rss_snippet, run_cli
from inspector.compare.snapshot import MAX_SNAPSHOT_BYTES
from safety_helpers import one_line

SNAPSHOT: dict[str, Any] = {     # a JSON document, edited per test
    "kind": "inspector-snapshot", "snapshot_version": 1, "schema_version": 1,
    "created_at": 1_700_000_000.0,
    "report": {"host": {"hostname": "db1", "kernel": "6.1", "machine": "x86_64",
                        "source": "live", "collected_at": 1_700_000_000.0},
               "sections": {"cpu": {"load_average": [0.1, 0.2, 0.3]}},
               "findings": [{"level": "warn", "subject": "eth0", "message": "x",
                             "code": "net.a"}]},
    "probes": [],
}


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.json"
    path.write_text(json.dumps(SNAPSHOT))
    return str(path)


def _diff_error(*args: str, words: tuple[str, ...] = ()) -> str:
    res = run_cli("diff", *args)
    assert res.status == 2, (res.status, res.out, res.err)
    assert one_line(res.err) and "internal error" not in res.err, res.err
    for word in words:
        assert word in res.err, res.err
    return res.err


def _written(tmp_path, doc, name="bad.json") -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def test_dev_zero_is_refused_at_once_and_small(good):
    """In a child process: its peak RSS says nothing was read."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", "import resource, sys\n"
                           "from inspector.cli import main\n"
                           "code = main(['diff', '/dev/zero', sys.argv[1]])\n"
                           + own_peak_rss_snippet() + "\n"
                           "sys.exit(code)", good], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "character device, not a snapshot file" in done.stderr
    assert time.monotonic() - start < 10
    assert int(done.stdout.split()[-1]) < 200_000, done.stdout    # KB: no 4.9 GB read


def test_a_fifo_is_refused_without_waiting(tmp_path, good):
    fifo = tmp_path / "before.json"
    os.mkfifo(fifo)
    _diff_error(str(fifo), good, words=("FIFO",))


def test_a_file_over_the_bound_is_refused_before_reading(tmp_path, good):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(MAX_SNAPSHOT_BYTES + 1)         # sparse: costs no disk
    _diff_error(str(big), good, words=("64 MiB",))


def test_stdin_is_read_bounded_too(good):
    done = subprocess.run([sys.executable, "-m", "inspector", "diff", "-", good],
                          input=json.dumps(SNAPSHOT), capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "No changes" in done.stdout, done.stderr
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run([sys.executable, "-m", "inspector", "diff", "-", good],
                              stdin=zero, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "over the 64 MiB" in done.stderr, done.stderr
    _diff_error("-", "-", words=("both be -",))


@pytest.mark.parametrize("depth", [100_000, 100])
def test_deep_nesting_is_refused(tmp_path, good, depth):
    doc = copy.deepcopy(SNAPSHOT)
    doc["report"]["sections"]["cpu"] = "@"
    text = json.dumps(doc).replace('"@"', "[" * depth + "]" * depth)
    _diff_error(_written(tmp_path, text), good, words=("nested",))


def test_a_billion_laughs_of_empty_objects_is_refused(tmp_path, good):
    doc = copy.deepcopy(SNAPSHOT)
    doc["report"]["sections"]["cpu"] = "@"
    text = json.dumps(doc).replace('"@"', "[" + ",".join(["{}"] * 1_100_000) + "]")
    _diff_error(_written(tmp_path, text), good, words=("JSON objects and arrays",))


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_are_refused(tmp_path, good, value):
    text = json.dumps(SNAPSHOT).replace('"created_at": 1700000000.0', f'"created_at": {value}')
    assert value in text
    _diff_error(_written(tmp_path, text), good)
    text = json.dumps(SNAPSHOT).replace("0.2", value)                 # anywhere in the file
    _diff_error(_written(tmp_path, text), good)


@pytest.mark.parametrize("where", ["created_at", "collected_at"])
@pytest.mark.parametrize("value", [1e308, -1, "yesterday", True])
def test_timestamps_that_are_not_times_are_refused(tmp_path, good, where, value):
    doc = copy.deepcopy(SNAPSHOT)
    if where == "created_at":
        doc["created_at"] = value
    else:
        doc["report"]["host"]["collected_at"] = value
    _diff_error(_written(tmp_path, doc), good, words=("is not a time",))
    _diff_error(good, _written(tmp_path, doc), words=("is not a time",))


@pytest.mark.parametrize("level", [5, "fatal", None, ["warn"], "WARN"])
def test_a_finding_level_outside_the_enum_is_malformed_never_a_regression(tmp_path, good, level):
    doc = copy.deepcopy(SNAPSHOT)
    doc["report"]["findings"][0]["level"] = level
    err = _diff_error(good, _written(tmp_path, doc), words=("is not one of ok, warn, crit",))
    assert "regression" not in err
    res = run_cli("diff", good, _written(tmp_path, doc), "--json")
    assert res.status == 2 and res.out == ""


def test_an_unknown_drive_health_level_is_no_verdict(tmp_path, good):
    before = copy.deepcopy(SNAPSHOT)
    before["report"]["sections"]["storage"] = {"health": {"sda": {"level": "ok"}}}
    after = copy.deepcopy(before)
    after["report"]["sections"]["storage"]["health"]["sda"]["level"] = "bogus"
    res = run_cli("diff", _written(tmp_path, before, "a.json"), _written(tmp_path, after),
                  "--json")
    assert res.status == 0 and res.json()["regressions"] == 0, res.out


def test_a_snapshot_we_write_is_one_we_read(tmp_path):
    """allow_nan=False on writing: a NaN in a probe's figures becomes null, not a file that
    diff refuses."""
    from inspector.compare.snapshot import build_snapshot, read_snapshot, write_snapshot
    from inspector.report.collect import build_report
    from inspector.roots.host import HostRoot
    report = build_report(HostRoot(str(FIXTURES / "roots" / "xen-pv-guest")))
    probes = [{"spec": "io:/x", "kind": "io", "target": "/x", "error": None,
               "summary": {"p99_us": float("nan"), "avg_us": float("inf")}}]
    path = str(tmp_path / "s.json")
    write_snapshot(build_snapshot(report, probes), path)
    assert read_snapshot(path)["probes"][0]["summary"] == {"p99_us": None, "avg_us": None}


def test_memory_of_a_bounded_snapshot_stays_bounded(tmp_path, good):
    """The largest snapshot that passes the checks: peak RSS in a child stays far below the
    gigabytes an unbounded read took."""
    doc = copy.deepcopy(SNAPSHOT)
    doc["report"]["sections"]["cpu"] = {"blob": "x" * (MAX_SNAPSHOT_BYTES - 4096)}
    big = _written(tmp_path, doc, "big.json")
    done = subprocess.run([sys.executable, "-c", "import resource, sys\n"
                           "from inspector.cli import main\n"
                           "code = main(['diff', '--json', sys.argv[1], sys.argv[2]])\n"
                           "sys.stderr.write(str([l for l in open('/proc/self/status') if "
                           "l.startswith('VmHWM')][0].split()[1]))\n"
                           "sys.exit(code)", good, big],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert int(done.stderr.split()[-1]) < 800_000, done.stderr          # KB
