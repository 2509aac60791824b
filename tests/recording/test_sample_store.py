"""The sample store: what `top` computed live is what comes back from the database, figure by
figure and block by block; pruning by age and by size, oldest first; a failed write leaves no
trace."""
from __future__ import annotations

import math
import os
import sqlite3

import pytest

from inspector.live import rates
from inspector.live.diskstats import DiskCounters
from inspector.live.netstats import NicCounters
from inspector.live.procs import DStateProc
from inspector.live.text import format_block
from inspector.model import Unknown, to_jsonable
from inspector.record.history import HistoryDB, HistoryWriteError
from inspector.record.store import SampleReader, SampleWriter, used_bytes
from synthetic import START, SyntheticHost, stall_finding

STEP = 10.0


def _record(db: HistoryDB, host: SyntheticHost, count: int, start: int = 0,
            offset: int = 3600, mutate=None) -> list:
    """Write `count` intervals; returns the live Rates of each, as `top` computed them."""
    writer = SampleWriter(db.conn)
    prev = host.snapshot(start * STEP)
    live = []
    for i in range(start + 1, start + count + 1):
        if mutate:
            mutate(i, host)
        cur = host.snapshot(i * STEP)
        r = rates(prev, cur)
        with db.writing("test"):
            writer.append(prev, cur, r, offset)
        live.append(r)
        prev = cur
    return live


def _same(ours, theirs, path="") -> None:
    """Equal JSON trees, numbers within 1e-6 relative (µs-rounded interval lengths)."""
    if isinstance(ours, dict):
        assert set(ours) == set(theirs), (path, set(ours) ^ set(theirs))
        for key in ours:
            _same(ours[key], theirs[key], f"{path}.{key}")
    elif isinstance(ours, list):
        assert len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"{path}[{i}]")
    elif isinstance(ours, float) or isinstance(theirs, float):
        assert math.isclose(ours, theirs, rel_tol=1e-6, abs_tol=1e-6), (path, ours, theirs)
    else:
        assert ours == theirs, (path, ours, theirs)

LIVE_ONLY = ("memory", "pressure", "vm", "softnet", "md", "filesystems", "filesystems_wall",
             "fs_devices", "oom_victims", "top_processes", "live_findings")


def _comparable(r) -> dict:
    doc = to_jsonable(r)
    doc.pop("tz_offset_s", None)
    for key in LIVE_ONLY:                   # figures of the live sample a recording lacks
        doc.pop(key, None)
    if isinstance(doc["cpu"], dict):
        doc["cpu"]["per_cpu"] = []          # the all-CPU split is recorded, not each CPU's
    for proc in doc["top_io"] if isinstance(doc["top_io"], list) else []:
        # stored as whole bytes over the interval
        proc["read_bytes_s"] = round(proc["read_bytes_s"] * STEP) / STEP
        proc["write_bytes_s"] = round(proc["write_bytes_s"] * STEP) / STEP
    return doc


def test_every_figure_comes_back_as_top_computed_it(tmp_path):
    host = SyntheticHost(disks=6, nics=3, busy=0.6)      # some devices idle: no row for them
    host.add_md("md0", ["sda", "sdb"])
    host.dstate = [DStateProc(4242, 4242, "mysqld", "io_schedule", 42.0, START - 40)]

    def mutate(i: int, h: SyntheticHost) -> None:
        if i == 4:
            h.operstate["eth1"] = "down"
            h.findings = [stall_finding("eth0")]
        if i == 6:
            h.findings = []
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        live = _record(db, host, 8, mutate=mutate)
        replay = list(SampleReader(db.conn).between())
    assert len(replay) == len(live) == 8
    for ours, theirs in zip(live, replay):
        _same(_comparable(ours), _comparable(theirs))
        assert theirs.tz_offset_s == 3600
    assert replay[3].findings[0].code == "net.stall"
    assert isinstance(replay[3].nics, list) and isinstance(replay[0].disks, list)
    assert next(n for n in replay[3].nics if n.name == "eth1").operstate == "down"
    md0 = next(d for d in replay[0].disks if d.name == "md0")
    assert md0.kind == "md" and md0.members == ["sda", "sdb"]


def test_a_replayed_block_prints_as_the_live_one(tmp_path):
    host = SyntheticHost(disks=4, nics=2)
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        live = _record(db, host, 3)
        replay = list(SampleReader(db.conn).between())
    for ours, theirs in zip(live, replay):
        ours.cpu.per_cpu = []               # not recorded: the replay has the "all" row
        a, b = format_block(ours, width=200).splitlines(), \
            format_block(theirs, width=200).splitlines()
        assert a[1:] == b[1:]                                       # everything but the time
        assert "UTC+01:00 recorded" in b[0] and b[0].split("  ", 1)[1] == a[0].split("  ", 1)[1]


def test_unknown_parts_old_kernels_and_devices_that_come_and_go(tmp_path):
    host = SyntheticHost(disks=2, nics=1)

    def mutate(i: int, h: SyntheticHost) -> None:
        if i == 2:
            h.unknown = {"disks": Unknown("/proc/diskstats timed out after 1 s")}
        if i == 3:
            h.unknown = {}                      # known again, but no rates yet
        if i == 4:
            h.disks["sdz"] = [0] * 17           # appears: no rate this interval
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        live = _record(db, host, 4, mutate=mutate)
        replay = list(SampleReader(db.conn).between())
    for ours, theirs in zip(live, replay):
        _same(_comparable(ours), _comparable(theirs))
    assert replay[1].disks == Unknown("/proc/diskstats timed out after 1 s")
    assert isinstance(replay[2].disks, Unknown)
    assert replay[3].disk_changes.appeared == ["sdz"]

    # a kernel before 4.18 (14 fields): no discard or flush figures, said as on live
    old = {"sda": DiskCounters("sda", 8, 0, *range(1, 12))}
    newer = {"sda": DiskCounters("sda", 8, 0, *range(11, 22))}
    idle = {"sda": DiskCounters("sda", 8, 0, *range(11, 22))}
    snaps = []
    for i, disks in enumerate((old, newer, idle)):
        s = host.snapshot(100 + i * STEP)
        s.disks, s.topology = disks, {}
        s.nics = {"eth0": NicCounters("eth0", "up", True, (5 * i, None, 1, 1, 0, 0, 0, 0))}
        snaps.append(s)
    with HistoryDB(str(tmp_path / "old.sqlite")) as db:
        writer = SampleWriter(db.conn)
        live = []
        for prev, cur in zip(snaps, snaps[1:]):
            r = rates(prev, cur)
            with db.writing("test"):
                writer.append(prev, cur, r, 0)
            live.append(r)
        replay = list(SampleReader(db.conn).between())
    for ours, theirs in zip(live, replay):
        _same(_comparable(ours), _comparable(theirs))
    assert isinstance(replay[1].disks, list) and isinstance(replay[0].nics, list)
    assert isinstance(replay[1].disks[0].d_s, Unknown)        # idle, and still no discards
    assert isinstance(replay[0].nics[0].tx_bytes_s, Unknown)


def test_the_range_the_order_and_the_count(tmp_path):
    host = SyntheticHost(disks=2, nics=1)
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        _record(db, host, 30)
        reader = SampleReader(db.conn)
        reader.CHUNK = 7                      # several chunks
        walls = [r.wall for r in reader.between(START + 55, START + 205)]
        assert walls == [START + t for t in range(60, 201, 10)]
        assert [r.wall for r in reader.between(START + 55, limit=3)] == \
            [START + 60, START + 70, START + 80]
        span = reader.span()
        assert (span.intervals, span.first_ts, span.last_ts) == (30, START + 10, START + 300)
        ids = [i for i, _ in reader.timeline()]
        assert [r.wall for r in reader.by_ids([ids[5], ids[1]])] == [START + 60, START + 20]


def test_pruning_by_age_keeps_the_newest(tmp_path):
    host = SyntheticHost(disks=3, nics=2)
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        _record(db, host, 20)
        assert db.prune(START + 100.5) == 10
        walls = [r.wall for r in SampleReader(db.conn).between()]
        assert walls == [START + t for t in range(110, 201, 10)]
        for table in ("sample_disks", "sample_nics", "sample_procs"):
            orphans = db.conn.execute(f"SELECT COUNT(*) FROM {table} WHERE interval_id NOT IN "
                                      "(SELECT id FROM sample_intervals)").fetchone()[0]
            assert orphans == 0, table


def test_pruning_by_size_bounds_the_file_and_drops_the_oldest_first(tmp_path):
    path = str(tmp_path / "h.sqlite")
    limit = 1 << 20
    host = SyntheticHost(disks=20, nics=8)
    with HistoryDB(path) as db:
        done = 0
        for _ in range(12):              # ~2.4 MB written in all, pruned as it goes
            _record(db, host, 100, start=done)
            done += 100
            db.prune_to_size(limit)
            assert used_bytes(db.conn) <= limit
        db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        walls = [r.wall for r in SampleReader(db.conn).between()]
    assert os.path.getsize(path) <= limit          # freed pages went back (auto_vacuum)
    assert walls[-1] == START + done * STEP        # the newest kept ...
    assert walls == [START + t * STEP for t in range(done - len(walls) + 1, done + 1)]
    assert 200 < len(walls) < done                 # ... the oldest gone, most of the room used


def test_a_write_that_fails_leaves_nothing_and_the_next_one_lands(tmp_path, monkeypatch):
    host = SyntheticHost(disks=3, nics=1)
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        _record(db, host, 2)
        writer = SampleWriter(db.conn)
        host.disks["sdnew"] = [0] * 17            # a new device: a new devices row too
        prev = host.snapshot(30.0)
        cur = host.snapshot(40.0)

        def failing(*args):                         # the disk fills mid-interval
            raise sqlite3.OperationalError("database or disk is full")
        real = db.conn
        with pytest.raises(HistoryWriteError, match="disk is full"), \
                db.writing("interval not stored"):
            writer.append(prev, cur, rates(prev, cur), 0)
            failing()
        writer.forget()
        assert db.conn is real and len(SampleReader(db.conn).timeline()) == 2
        assert db.conn.execute("SELECT COUNT(*) FROM sample_devices WHERE name='sdnew'"
                               ).fetchone()[0] == 0
        nxt = host.snapshot(50.0)
        with db.writing("interval not stored"):
            writer.append(cur, nxt, rates(cur, nxt), 0)
        replay = list(SampleReader(db.conn).between())
    assert len(replay) == 3 and isinstance(replay[-1].disks, list)
    assert "sdnew" in [d.name for d in replay[-1].disks]


def test_a_note_repeated_every_interval_is_stored_once(tmp_path):
    """A recorder without root: /proc/[pid]/io unknown in every interval, one note for all."""
    host = SyntheticHost(disks=2, nics=1)
    host.unknown = {"proc_io": Unknown("permission denied reading /proc/[pid]/io (needs root)")}
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        _record(db, host, 50)
        notes = db.conn.execute("SELECT COUNT(*) FROM sample_notes").fetchone()[0]
        replay = list(SampleReader(db.conn).between())
    assert notes == 1
    assert all(r.top_io == Unknown("permission denied reading /proc/[pid]/io (needs root)")
               for r in replay)
