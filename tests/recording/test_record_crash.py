"""`record --samples` and what can happen to it: SIGKILL at any moment (during a write too), a
filesystem that fills up, SIGTERM. Every interval committed before stays, whole; nothing
half-written is ever read back; the database stays intact and writable."""
from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

from conftest import fill_until_full, fixture_root, inspector_bin, run_cli
from recording_helpers import committed, start_recorder, stop, wait_for_intervals


def _check(db: str) -> list[tuple[int, float]]:
    """Integrity, no rows of an interval that is not there, and every interval readable."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        for table in ("sample_disks", "sample_nics", "sample_procs", "sample_findings"):
            orphans = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE interval_id NOT IN "
                                   "(SELECT id FROM sample_intervals)").fetchone()[0]
            assert orphans == 0, table
        rows = conn.execute("SELECT id, ts FROM sample_intervals ORDER BY id").fetchall()
    finally:
        conn.close()
    res = run_cli("top", "--db", db, "--json")
    assert res.status == 0, res.err
    assert len(res.out.splitlines()) == len(rows)
    return rows


def test_kill_9_at_random_moments_keeps_every_committed_interval(tmp_path):
    db = str(tmp_path / "h.sqlite")
    rng = random.Random(19)
    seen: set[int] = set()
    for cycle in range(4):
        proc = start_recorder(db, every="200ms")
        try:
            before = len(committed(db))
            rows = wait_for_intervals(db, before + 2, proc)
            time.sleep(rng.uniform(0.0, 0.2))            # anywhere in an interval
            seen |= {i for i, _ in committed(db)}
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=10)
        after = _check(db)
        assert seen <= {i for i, _ in after}, f"cycle {cycle}: committed intervals lost"
        assert len(after) >= len(rows)


# A writer killed by SIGKILL between two statements of one interval's transaction: the
# interval row is in, its device rows are not yet.
MID_WRITE = """
import os, signal, sys
sys.path[:0] = [{tests!r}]
from inspector.record.history import HistoryDB
from inspector.live import rates
from inspector.record.store import SampleWriter
from synthetic import SyntheticHost
db = HistoryDB({db!r})
host = SyntheticHost(disks=20, nics=8)
writer = SampleWriter(db.conn)
prev = host.snapshot(0.0)
for i in range(1, 6):
    cur = host.snapshot(i * 10.0)
    with db.writing("interval"):
        writer.append(prev, cur, rates(prev, cur), 0)
    prev = cur
print("committed", flush=True)
cur = host.snapshot(60.0)
class Dying:
    def __init__(self, conn):
        self.conn = conn
    def __getattr__(self, name):
        return getattr(self.conn, name)
    def executemany(self, *args):
        self.conn.executemany(*args)
        os.kill(os.getpid(), signal.SIGKILL)      # the interval row and its disks are in
writer.conn = Dying(db.conn)
with db.writing("interval"):
    writer.append(prev, cur, rates(prev, cur), 0)
"""


def test_kill_9_inside_an_interval_transaction_leaves_none_of_it(tmp_path):
    db = str(tmp_path / "h.sqlite")
    tests = os.path.dirname(os.path.abspath(__file__))
    writer = subprocess.run([sys.executable, "-c", MID_WRITE.format(tests=tests, db=db)],
                            capture_output=True, text=True, timeout=60)
    assert writer.returncode == -signal.SIGKILL and "committed" in writer.stdout, writer.stderr
    assert os.path.getsize(db + "-wal") > 0         # the torn transaction was in the log
    rows = _check(db)
    assert len(rows) == 5
    res = run_cli("top", "--db", db, "--json")
    assert all('"sda"' in line for line in res.out.splitlines())
    # the next recorder opens it and goes on from there
    proc = start_recorder(db, every="200ms")
    try:
        wait_for_intervals(db, 7, proc)
    finally:
        status, err = stop(proc)
    assert status == 0, err
    assert len(_check(db)) >= 7






def _read_until(proc: subprocess.Popen, text: str, lines: list[str], timeout: float = 20) -> None:
    assert proc.stderr is not None, "start_recorder pipes the recorder's stderr"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return
    raise AssertionError(f"never saw {text!r} in: {''.join(lines)}")


def test_a_full_disk_loses_intervals_says_so_once_and_never_the_database(tiny_fs):
    db = str(tiny_fs / "h.sqlite")
    proc = start_recorder(db, every="200ms")
    lines: list[str] = []
    try:
        wait_for_intervals(db, 3, proc)
        stored_before = {i for i, _ in committed(db)}
        filler = fill_until_full(tiny_fs)
        _read_until(proc, "samples not stored", lines)
        time.sleep(1.0)                              # several more intervals while full
        os.unlink(filler)
        _read_until(proc, "samples stored again", lines)
        count = len(committed(db))
        wait_for_intervals(db, count + 2, proc)
    finally:
        status, rest = stop(proc)
    text = "".join(lines) + rest
    assert status == 1, text                        # a service manager sees the loss
    assert text.count("samples not stored") == 1, text      # said once, not every interval
    assert "database or disk is full" in text and "intervals committed before are intact" in text
    assert "Traceback" not in text and "internal error" not in text, text
    summary = next(line for line in text.splitlines() if line.startswith("samples: "))
    stored = int(summary.split()[1])
    lost = int(summary.split(", ")[1].split()[0])
    assert lost >= 3, summary
    rows = _check(db)
    assert stored_before <= {i for i, _ in rows}
    assert len(rows) == stored, (summary, len(rows))  # every interval it said it stored


def test_bad_arguments_are_one_line(tmp_path):
    db = str(tmp_path / "h.sqlite")
    for argv, needle in ((("--samples", "--once"), "not --once"),
                         (("--samples", "--root", str(fixture_root("xen-pv-guest"))), "live host"),
                         (("--samples", "--sample-every", "10ms"), "at least 200ms"),
                         (("--max-size", "10k"), "1M to 1P"),
                         (("--max-size", "lots"), "not a size")):
        res = run_cli("record", "--db", db, *argv)
        assert res.status == 2 and needle in res.err, (argv, res.err)
        assert len(res.err.strip().splitlines()) == 1, res.err
    assert not os.path.exists(db) or run_cli("top", "--db", db).status == 1


def test_the_binary_replays_what_it_recorded(tmp_path):
    """End to end with the installed binary: record, SIGTERM, top --db, history --samples."""
    db = str(tmp_path / "h.sqlite")
    proc = start_recorder(db, every="250ms")
    try:
        wait_for_intervals(db, 4, proc)
    finally:
        status, err = stop(proc)
    assert status == 0, err
    assert "finishing the current sample" in err and "intervals recorded" in err
    env = {**os.environ, "COLUMNS": "200"}
    top = subprocess.run([inspector_bin(), "top", "--db", db, "--count", "2"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert top.returncode == 0, top.stderr
    blocks = top.stdout.split("\n\n")
    # the first two intervals as recorded (at 250 ms each, longer when the box is loaded)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        spans = [us / 1e6 for us, in conn.execute(
            "SELECT span_us FROM sample_intervals ORDER BY ts LIMIT 2")]
    assert len(blocks) == 2 and all(0 < s < 5 for s in spans), (spans, top.stdout)
    assert all(f"recorded  interval {s:.2f} s" in b for s, b in zip(spans, blocks)), top.stdout
    assert all("%steal" in b and "Device" in b and "NIC" in b for b in blocks)
    hist = subprocess.run([inspector_bin(), "history", "--db", db, "--samples"], env=env,
                          capture_output=True, text=True, timeout=30)
    assert hist.returncode == 0 and "%iowait" in hist.stdout, hist.stderr
    assert textwrap.dedent(hist.stdout).startswith("CPU: by hour of day")
