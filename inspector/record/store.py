"""Recorded live samples (`inspector record --samples`) in the history database, and back.

What one interval stores is what `inspector top` needs to print it again, and nothing is a
JSON blob per sample: the counters' increases over the interval (the deltas /proc/diskstats,
/sys/class/net/*/statistics and /proc/stat moved by), as integer columns, from which the
figures are computed again with the very functions `top` uses live (`device_rates`,
`nic_rates`, `percent`): a replayed interval prints the same numbers as it did live.

- `sample_intervals`: one row per interval: its end (unix seconds), the host's UTC offset
  then, its length (µs), the CPU jiffies per state, context switches and interrupts, the
  run/blocked gauges and the load average (hundredths), and `devset` (below). `note` is
  NULL unless something was unknown (a source that timed out, /proc/[pid]/io without root)
  or devices came and went: then a row of `sample_notes`, a small JSON object saying what,
  shared by every interval with the same note (a recorder without root has one for all).
- `sample_disks`, `sample_nics`: one row per device per interval, WITHOUT ROWID keyed by
  (interval, device), only for devices that moved: an idle device costs nothing. Which
  devices were there (and each NIC's operstate and carrier) is the interval's `devset`, a
  row of `sample_devsets` shared by every interval with the same devices; `sample_devices`
  names each device once with its place in the stack (kind, parent, md/dm members, dm alias,
  which counters its kernel has).
- `sample_procs` (top IO processes, D-state tasks) and `sample_findings` (NIC stalls, tasks
  stuck in D): rows only when there are some.

Idle devices cost nothing: tests/bench/bench_record.py prints the size an interval takes on a
host whose 20 disks and 8 NICs all move every interval, and when a third of them do. Pruning is
oldest first, by age (`prune_older`) and by size (`prune_to_size`). Every write is part of
the caller's transaction (HistoryDB's), so an interval lands whole or not at all.
"""
from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from inspector.live.cpustat import STATES, CpuRates, LoadAvg, percent
from inspector.live.diskstats import (
    DiskChanges,
    DiskCounters,
    DiskInfo,
    DiskRates,
    counter_delta,
    device_rates,
    flag_busy_members,
)
from inspector.live.netstats import COUNTERS as NIC_COUNTERS
from inspector.live.netstats import NicCounters, NicRates, nic_rates
from inspector.live.procs import DStateProc, ProcIoRate
from inspector.live.sampler import Counters, Rates
from inspector.model import Finding, Level, Unknown, known
from inspector.record.damage import OFFSET_RANGE, TS_RANGE, Damage, finite

# /proc/diskstats columns after the name (DiskCounters' fields), in order; in_flight is the
# one gauge (stored as read, not as an increase)
DISK_FIELDS = ("rd_ios", "rd_merges", "rd_sectors", "rd_ticks", "wr_ios", "wr_merges",
               "wr_sectors", "wr_ticks", "in_flight", "io_ticks", "time_in_queue",
               "dc_ios", "dc_merges", "dc_sectors", "dc_ticks", "fl_ios", "fl_ticks")
_GAUGES = {"in_flight"}
_CPU_COLUMNS = tuple(f"cpu_{s}" for s in STATES)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS sample_intervals (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,               -- end of the interval, unix seconds
    tz_offset_s INTEGER NOT NULL,   -- the host's local time = ts + tz_offset_s
    span_us INTEGER NOT NULL,       -- length of the interval
    devset INTEGER,                 -- sample_devsets.id: the devices present
    {', '.join(f'{c} INTEGER' for c in _CPU_COLUMNS)},  -- jiffies in each state
    ncpu INTEGER,
    ctxt INTEGER, intr INTEGER,     -- increases
    procs_running INTEGER, procs_blocked INTEGER,
    load1 INTEGER, load5 INTEGER, load15 INTEGER,   -- hundredths
    runnable INTEGER, threads INTEGER,
    note INTEGER                    -- sample_notes.id: unknown parts, devices come and gone
);
CREATE INDEX IF NOT EXISTS sample_intervals_by_ts ON sample_intervals (ts);
CREATE TABLE IF NOT EXISTS sample_devices (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,             -- disk | nic
    name TEXT NOT NULL,
    info TEXT NOT NULL,             -- JSON: a disk's kind, parent, members, alias, fields
    UNIQUE (kind, name, info)
);
CREATE TABLE IF NOT EXISTS sample_notes (
    id INTEGER PRIMARY KEY,
    note TEXT NOT NULL UNIQUE       -- JSON: unknown parts and why, timed-out sources
);
CREATE TABLE IF NOT EXISTS sample_devsets (
    id INTEGER PRIMARY KEY,
    members TEXT NOT NULL UNIQUE    -- "d12 d13 n20/up/1": disks, NICs with operstate/carrier
);
CREATE TABLE IF NOT EXISTS sample_disks (
    interval_id INTEGER NOT NULL,
    device_id INTEGER NOT NULL,
    {', '.join(f'{f} INTEGER' for f in DISK_FIELDS)},
    PRIMARY KEY (interval_id, device_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sample_nics (
    interval_id INTEGER NOT NULL,
    device_id INTEGER NOT NULL,
    {', '.join(f'{c} INTEGER' for c in NIC_COUNTERS)},
    PRIMARY KEY (interval_id, device_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sample_procs (
    interval_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,             -- io (top IO process) | d (task in D state)
    pid INTEGER, tgid INTEGER, comm TEXT, wchan TEXT,
    read_bytes INTEGER, write_bytes INTEGER,        -- io: bytes over the interval
    seconds REAL, since REAL,                       -- d: time in D, since (unix)
    PRIMARY KEY (interval_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sample_findings (
    interval_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    level TEXT NOT NULL, code TEXT, subject TEXT, message TEXT,
    PRIMARY KEY (interval_id, seq)
) WITHOUT ROWID;
"""
_CHILD_TABLES = ("sample_disks", "sample_nics", "sample_procs", "sample_findings")
_INTERVAL_COLUMNS = ("ts", "tz_offset_s", "span_us", "devset", *_CPU_COLUMNS, "ncpu", "ctxt",
                     "intr", "procs_running", "procs_blocked", "load1", "load5", "load15",
                     "runnable", "threads", "note")
# An interval whose time, offset or length is not one is left out of every read (a malformed
# database: text or 1e300 there ended `top --db` in a TypeError or an OverflowError)
WELL_FORMED = (f"typeof(ts) IN ('integer', 'real') AND ts BETWEEN {TS_RANGE[0]} AND "
                f"{TS_RANGE[1]} AND typeof(tz_offset_s) IN ('integer', 'real') AND "
                f"tz_offset_s BETWEEN {OFFSET_RANGE[0]} AND {OFFSET_RANGE[1]} AND "
                "typeof(span_us) IN ('integer', 'real') AND span_us > 0")
_BAD_ROW = ()       # a child row with a value that is not a number: its device is left out


def has_samples(conn: sqlite3.Connection) -> bool:
    """Whether the database has the sample tables (an older history has none: nothing
    recorded, never an error)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' "
                        "AND name='sample_intervals'").fetchone() is not None


# ----------------------------------------------------------------------------- writing
def _delta(prev: int | None, cur: int | None) -> int | None:
    return None if prev is None or cur is None else counter_delta(prev, cur)


def disk_deltas(p: DiskCounters, c: DiskCounters) -> tuple[int | None, ...]:
    """The interval's row of one device: increases (wraps handled as `top` does), in_flight
    as read."""
    return tuple(getattr(c, f) if f in _GAUGES else _delta(getattr(p, f), getattr(c, f))
                 for f in DISK_FIELDS)


def _field_count(c: DiskCounters) -> int:
    return 20 if c.fl_ios is not None else 18 if c.dc_ios is not None else 14


def _carrier_text(carrier) -> str:
    return "?" if not known(carrier) else "1" if carrier else "0"


class SampleWriter:
    """Appends intervals to the sample tables of an open, writable connection. Remembers the
    ids of devices and device sets it wrote (forgotten when a write fails: they may not have
    been committed)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._devices: dict[tuple[str, str, str], int] = {}
        self._devsets: dict[str, int] = {}
        self._notes: dict[str, int] = {}

    def forget(self) -> None:
        """After a failed (rolled back) write: ids handed out in it do not exist."""
        self._devices.clear()
        self._devsets.clear()
        self._notes.clear()

    def append(self, prev: Counters, cur: Counters, r: Rates, tz_offset_s: int) -> int:
        """Store the interval between two snapshots of one sampler (`r` = rates(prev, cur)),
        inside the caller's transaction. Returns the interval's id."""
        conn = self.conn
        notes: dict = {}
        unknown = {part: value.reason for part, value in
                   (("disks", r.disks), ("nics", r.nics), ("cpu", r.cpu), ("load", r.load),
                    ("dstate", r.dstate), ("top_io", r.top_io)) if isinstance(value, Unknown)}
        if unknown:
            notes["unknown"] = unknown
        if r.timed_out:
            notes["timed_out"] = dict(r.timed_out)
        if r.disk_changes.appeared:
            notes["appeared"] = list(r.disk_changes.appeared)
        if r.disk_changes.vanished:
            notes["vanished"] = list(r.disk_changes.vanished)
        disk_rows, nic_rows, members = [], [], []
        # rates of a part imply both snapshots had it (else that part of `r` is Unknown)
        if isinstance(r.disks, list) and isinstance(prev.disks, dict) \
                and isinstance(cur.disks, dict):
            for d in r.disks:
                p, c = prev.disks[d.name], cur.disks[d.name]
                info = {"kind": d.kind, "parent": d.parent, "members": list(d.members),
                        "alias": d.alias, "fields": _field_count(c)}
                dev = self._device("disk", d.name, json.dumps(info, sort_keys=True))
                members.append(f"d{dev}")
                row = disk_deltas(p, c)
                if any(row):
                    disk_rows.append((dev, *row))
        if isinstance(r.nics, list) and isinstance(prev.nics, dict) \
                and isinstance(cur.nics, dict):
            for n in r.nics:
                pn, cn = prev.nics[n.name], cur.nics[n.name]
                dev = self._device("nic", n.name, "")
                state = n.operstate if known(n.operstate) else "?"
                members.append(f"n{dev}/{_clean(state)}/{_carrier_text(n.carrier)}")
                nic_row = tuple(_delta(a, b) for a, b in zip(pn.counters, cn.counters))
                if any(nic_row) or None in nic_row:
                    nic_rows.append((dev, *nic_row))
        cpu_values: tuple = (None,) * (len(_CPU_COLUMNS) + 5)
        if known(r.cpu) and known(prev.cpu) and known(cur.cpu):
            pc, cc = prev.cpu, cur.cpu
            jiffies = tuple(max(c - p, 0) for p, c in zip(pc.total, cc.total))
            cpu_values = (*jiffies, len(cc.per_cpu), _increase(pc.ctxt, cc.ctxt),
                          _increase(pc.intr, cc.intr), cc.procs_running, cc.procs_blocked)
        load = r.load
        load_values = ((round(load.load1 * 100), round(load.load5 * 100),
                        round(load.load15 * 100), load.runnable, load.threads)
                       if known(load) else (None,) * 5)
        devset = self._devset(" ".join(members)) if members else None
        values = (r.wall, tz_offset_s, round(r.interval * 1e6), devset, *cpu_values,
                  *load_values,
                  self._note(json.dumps(notes, sort_keys=True)) if notes else None)
        interval = _inserted(conn.execute(
            f"INSERT INTO sample_intervals ({', '.join(_INTERVAL_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(_INTERVAL_COLUMNS))})", values))
        if disk_rows:
            conn.executemany(f"INSERT INTO sample_disks VALUES ({interval}, "
                             f"{', '.join('?' * (len(DISK_FIELDS) + 1))})", disk_rows)
        if nic_rows:
            conn.executemany(f"INSERT INTO sample_nics VALUES ({interval}, "
                             f"{', '.join('?' * (len(NIC_COUNTERS) + 1))})", nic_rows)
        procs: list[tuple] = []
        if known(r.top_io):
            procs += [("io", p.pid, None, p.comm, None, round(p.read_bytes_s * r.interval),
                       round(p.write_bytes_s * r.interval), None, None) for p in r.top_io]
        if known(r.dstate):
            procs += [("d", d.pid, d.tgid, d.comm, d.wchan if known(d.wchan) else None,
                       None, None, d.seconds, d.since) for d in r.dstate]
        if procs:
            conn.executemany(f"INSERT INTO sample_procs VALUES ({interval}, ?, ?, ?, ?, ?, ?, "
                             "?, ?, ?, ?)", [(i, *row) for i, row in enumerate(procs)])
        if r.findings:
            conn.executemany(f"INSERT INTO sample_findings VALUES ({interval}, ?, ?, ?, ?, ?)",
                             [(i, f.level.label, f.code, f.subject, f.message)
                              for i, f in enumerate(r.findings)])
        return interval

    def _device(self, kind: str, name: str, info: str) -> int:
        key = (kind, name, info)
        found = self._devices.get(key)
        if found is None:
            row = self.conn.execute("SELECT id FROM sample_devices WHERE kind=? AND name=? "
                                    "AND info=?", key).fetchone()
            found = row[0] if row else _inserted(self.conn.execute(
                "INSERT INTO sample_devices (kind, name, info) VALUES (?, ?, ?)", key))
            self._devices[key] = found
        return found

    def _devset(self, members: str) -> int:
        return self._interned(self._devsets, "sample_devsets", "members", members)

    def _note(self, note: str) -> int:
        return self._interned(self._notes, "sample_notes", "note", note)

    def _interned(self, cache: dict[str, int], table: str, column: str, text: str) -> int:
        """The id of the row holding `text` (added when new)."""
        found = cache.get(text)
        if found is None:
            row = self.conn.execute(f"SELECT id FROM {table} WHERE {column}=?",
                                    (text,)).fetchone()
            found = row[0] if row else _inserted(self.conn.execute(
                f"INSERT INTO {table} ({column}) VALUES (?)", (text,)))
            cache[text] = found
        return found


def _inserted(cursor: sqlite3.Cursor) -> int:
    """The rowid an INSERT gave its row."""
    rowid = cursor.lastrowid
    if rowid is None:
        raise sqlite3.DatabaseError("an INSERT gave no row id")
    return rowid


def _increase(prev: int | None, cur: int | None) -> int | None:
    return None if prev is None or cur is None else max(cur - prev, 0)


def _clean(state: str) -> str:
    """An operstate as one token of a devset (the kernel's are single words)."""
    return "".join(ch for ch in state if ch.isalnum()) or "?"


# ----------------------------------------------------------------------------- pruning
def prune_older(conn: sqlite3.Connection, older_than_ts: float) -> int:
    """Delete the intervals that ended before `older_than_ts` (caller's transaction)."""
    if not has_samples(conn):
        return 0
    ids = "SELECT id FROM sample_intervals WHERE ts < ?"
    if conn.execute(ids + " LIMIT 1", (older_than_ts,)).fetchone() is None:
        return 0
    for table in _CHILD_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE interval_id IN ({ids})", (older_than_ts,))
    return conn.execute("DELETE FROM sample_intervals WHERE ts < ?", (older_than_ts,)).rowcount


def prune_oldest(conn: sqlite3.Connection, count: int) -> int:
    """Delete the `count` oldest intervals (by id: the order they were written)."""
    row = conn.execute("SELECT id FROM sample_intervals ORDER BY id LIMIT 1 OFFSET ?",
                       (max(count - 1, 0),)).fetchone()
    if row is None:
        row = conn.execute("SELECT MAX(id) FROM sample_intervals").fetchone()
        if row[0] is None:
            return 0
    last = row[0]
    for table in _CHILD_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE interval_id <= ?", (last,))
    return conn.execute("DELETE FROM sample_intervals WHERE id <= ?", (last,)).rowcount


def used_bytes(conn: sqlite3.Connection) -> int:
    """Bytes of the database's pages in use (free pages are reused before the file grows)."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return (pages - free) * conn.execute("PRAGMA page_size").fetchone()[0]


def interval_count(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT MAX(id) - MIN(id) + 1 FROM sample_intervals").fetchone()
    return row[0] or 0


# what a size prune leaves: room for a good while before the next one, so the oldest
# intervals go in batches rather than one per interval
SIZE_HEADROOM = 0.9


def size_excess_intervals(conn: sqlite3.Connection, max_bytes: int) -> int:
    """How many of the oldest intervals to delete to bring the used pages under
    SIZE_HEADROOM x `max_bytes` (0 when under `max_bytes`), estimated from the average
    interval: the caller deletes, commits and asks again."""
    used = used_bytes(conn)
    if used <= max_bytes or not has_samples(conn):
        return 0
    count = interval_count(conn)
    if not count:
        return 0
    per_interval = used / count     # an over-estimate of what one costs: other tables too
    return max(1, min(count, math.ceil((used - SIZE_HEADROOM * max_bytes) / per_interval)))


# ----------------------------------------------------------------------------- reading
@dataclass
class _Device:
    kind: str
    name: str
    info: dict


@dataclass
class Span:
    """What the tables hold: how many intervals, from when to when."""
    intervals: int
    first_ts: float | None
    last_ts: float | None
    offsets: list[int] = field(default_factory=list)    # UTC offsets seen


class SampleReader:
    """Recorded intervals back as inspector.live.Rates (what `top` prints), read-only."""

    CHUNK = 512       # intervals read per query when streaming a range

    def __init__(self, conn: sqlite3.Connection, damage: Damage | None = None):
        self.conn = conn
        self.available = has_samples(conn)
        # what a malformed database made us skip (shared with its HistoryDB's, when given)
        self.damage = damage if damage is not None else Damage()
        self._devices: dict[int, _Device] = {}
        self._devsets: dict[int, list[tuple]] = {}
        self._notes: dict[int, dict] = {}

    def span(self) -> Span:
        if not self.available:
            return Span(0, None, None)
        try:
            count, first, last = self.conn.execute(
                "SELECT COUNT(*), MIN(ts), MAX(ts) FROM sample_intervals "
                f"WHERE {WELL_FORMED}").fetchone()
            offsets = [int(o) for (o,) in self.conn.execute(
                f"SELECT DISTINCT tz_offset_s FROM sample_intervals WHERE {WELL_FORMED} "
                "ORDER BY 1")]
            malformed = self.conn.execute(
                f"SELECT COUNT(*) FROM sample_intervals WHERE NOT ({WELL_FORMED})").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            self.damage.add(f"sample intervals unreadable ({exc})")
            return Span(0, None, None)
        if malformed:
            self.damage.add("sample intervals with a malformed time or length skipped",
                            malformed)
        return Span(count, first, last, offsets)

    def offset_near(self, ts: float) -> int:
        """The recorded host's UTC offset at the interval nearest `ts` (this machine's own
        when nothing is recorded)."""
        if self.available:
            for sql in (f"SELECT tz_offset_s FROM sample_intervals WHERE ts <= ? AND "
                        f"{WELL_FORMED} ORDER BY ts DESC LIMIT 1",
                        f"SELECT tz_offset_s FROM sample_intervals WHERE ts > ? AND "
                        f"{WELL_FORMED} ORDER BY ts LIMIT 1"):
                row = self.conn.execute(sql, (ts,)).fetchone()
                if row is not None:
                    return int(row[0])
        return int(time.localtime(ts).tm_gmtoff)

    def timeline(self) -> list[tuple[int, float]]:
        """(id, end time) of every interval in time order: what a timeline moves through."""
        if not self.available:
            return []
        return list(self.conn.execute(f"SELECT id, ts FROM sample_intervals WHERE {WELL_FORMED} "
                                      "ORDER BY ts, id"))

    def between(self, start: float | None = None, end: float | None = None,
                limit: int | None = None) -> Iterator[RecordedRates]:
        """The intervals that ended within [start, end], oldest first, read in chunks."""
        if not self.available:
            return
        after: tuple[float, int] = (-math.inf, -1)
        done = 0
        while limit is None or done < limit:
            size = self.CHUNK if limit is None else min(self.CHUNK, limit - done)
            sql = (f"SELECT id, {', '.join(_INTERVAL_COLUMNS)} FROM sample_intervals "
                   f"WHERE (ts > ? OR (ts = ? AND id > ?)) AND {WELL_FORMED}")
            args: list = [after[0], after[0], after[1]]
            if start is not None:
                sql += " AND ts >= ?"
                args.append(start)
            if end is not None:
                sql += " AND ts <= ?"
                args.append(end)
            try:
                rows = self.conn.execute(sql + " ORDER BY ts, id LIMIT ?",
                                         (*args, size)).fetchall()
            except sqlite3.DatabaseError as exc:       # a damaged page: what came before stays
                self.damage.add(f"sample intervals past a damaged page not read ({exc})")
                return
            if not rows:
                return
            yield from self._decode(rows)
            done += len(rows)
            after = (rows[-1][1], rows[-1][0])

    def by_ids(self, ids: Iterable[int]) -> list[RecordedRates]:
        """The intervals with these ids, in the order given (missing ones left out)."""
        ids = list(ids)
        if not ids or not self.available:
            return []
        found: dict[int, tuple] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            for row in self.conn.execute(
                    f"SELECT id, {', '.join(_INTERVAL_COLUMNS)} FROM sample_intervals "
                    f"WHERE id IN ({', '.join('?' * len(part))}) AND {WELL_FORMED}", part):
                found[row[0]] = row
        rows = [found[i] for i in ids if i in found]
        decoded = {r.interval_id: r for r in self._decode(sorted(rows))}
        return [decoded[i] for i in ids if i in decoded]

    # ------------------------------------------------------------------ decoding
    def _decode(self, rows: list[tuple]) -> list[RecordedRates]:
        low, high = min(r[0] for r in rows), max(r[0] for r in rows)
        wanted = {r[0] for r in rows}
        disks = self._children("sample_disks", low, high, wanted)
        nics = self._children("sample_nics", low, high, wanted)
        procs = self._children("sample_procs", low, high, wanted)
        findings = self._children("sample_findings", low, high, wanted)
        out = []
        for row in rows:
            try:
                out.append(self._interval(row, disks.get(row[0], {}), nics.get(row[0], {}),
                                          procs.get(row[0], {}), findings.get(row[0], {})))
            except (TypeError, ValueError, OverflowError, ZeroDivisionError, KeyError,
                    AttributeError):      # a value of the wrong kind the checks let through
                self.damage.add("sample intervals with malformed values skipped")
        return out

    def _children(self, table: str, low: int, high: int, wanted: set[int]) -> dict:
        out: dict[int, dict] = {}
        try:
            for row in self.conn.execute(f"SELECT * FROM {table} WHERE interval_id BETWEEN ? "
                                         "AND ?", (low, high)):
                if row[0] in wanted:
                    out.setdefault(row[0], {})[row[1]] = self._checked(table, row[2:])
        except sqlite3.DatabaseError as exc:
            self.damage.add(f"{table} rows past a damaged page not read ({exc})")
        return out

    def _checked(self, table: str, values: tuple) -> tuple:
        """A child row whose numbers are numbers (else _BAD_ROW: its device or process is
        left out of the interval, and counted)."""
        if table in ("sample_disks", "sample_nics"):
            numbers = values
        elif table == "sample_procs":       # kind, pid, tgid, comm, wchan, rd, wr, s, since
            numbers = (values[1], values[2], *values[5:])
            since = values[8]
            if finite(since) and not TS_RANGE[0] <= since <= TS_RANGE[1]:   # shown as a time
                self.damage.add(f"{table} rows with a time out of range left out")
                return _BAD_ROW
        else:
            return tuple(v if v is None or isinstance(v, str) else str(v) for v in values)
        if all(v is None or finite(v) for v in numbers):
            return values
        self.damage.add(f"{table} rows with a value that is not a number left out")
        return _BAD_ROW

    def _device(self, device_id: int) -> _Device:
        dev = self._devices.get(device_id)
        if dev is None:
            row = self.conn.execute("SELECT kind, name, info FROM sample_devices WHERE id=?",
                                    (device_id,)).fetchone()
            if row is None:
                dev = _Device("disk", f"device {device_id}", {})
            else:
                try:
                    info = json.loads(row[2]) if row[2] else {}
                except ValueError:
                    info = {}
                dev = _Device(row[0], row[1], info if isinstance(info, dict) else {})
            self._devices[device_id] = dev
        return dev

    def _notes_of(self, note: int | None) -> dict:
        if note is None:
            return {}
        found = self._notes.get(note)
        if found is None:
            row = self.conn.execute("SELECT note FROM sample_notes WHERE id=?",
                                    (note,)).fetchone()
            try:
                found = json.loads(row[0]) if row else {}
            except ValueError:
                found = {}
            found = found if isinstance(found, dict) else {}
            self._notes[note] = found
        return found

    def _members(self, devset: int | None) -> list[tuple]:
        """[("d", device id) | ("n", device id, operstate, carrier)] of a device set."""
        if devset is None:
            return []
        members = self._devsets.get(devset)
        if members is None:
            row = self.conn.execute("SELECT members FROM sample_devsets WHERE id=?",
                                    (devset,)).fetchone()
            members = []
            for token in (row[0].split() if row else []):
                kind, _, rest = token.partition("/")
                if token.startswith("d") and token[1:].isdigit():
                    members.append(("d", int(token[1:])))
                elif kind.startswith("n") and kind[1:].isdigit():
                    state, _, carrier = rest.partition("/")
                    members.append(("n", int(kind[1:]), state, carrier))
            self._devsets[devset] = members
        return members

    def _interval(self, row: tuple, disk_rows: dict, nic_rows: dict, proc_rows: dict,
                  finding_rows: dict) -> RecordedRates:
        values = dict(zip(("id", *_INTERVAL_COLUMNS), row))
        for column in _INTERVAL_COLUMNS[3:]:     # figures past ts, offset and span
            if values[column] is not None and not finite(values[column]):
                values[column] = None
                self.damage.add("sample figures that are not numbers read as unknown")
        values["tz_offset_s"] = int(values["tz_offset_s"])
        span = values["span_us"] / 1e6
        notes = self._notes_of(values["note"])
        unknown = notes.get("unknown", {})

        def missing(part: str, otherwise):
            # (not `or`: an Unknown is falsy)
            return Unknown(str(unknown[part])) if part in unknown else otherwise

        disks: list[DiskRates] | Unknown = missing("disks", [])
        nics: list[NicRates] | Unknown = missing("nics", [])
        for member in self._members(values["devset"]):
            if _BAD_ROW in (disk_rows.get(member[1]), nic_rows.get(member[1])):
                continue
            dev = self._device(member[1])
            if member[0] == "d" and isinstance(disks, list):
                disks.append(_disk_rates(dev, disk_rows.get(member[1]), span))
            elif member[0] == "n" and isinstance(nics, list):
                nics.append(_nic_rates(dev, nic_rows.get(member[1]), member[2], member[3],
                                       span))
        if isinstance(disks, list):
            flag_busy_members(disks)
        cpu: CpuRates | Unknown = missing("cpu", None)
        if cpu is None:
            cpu = _cpu_rates(values, span)
        load: LoadAvg | Unknown = missing("load", None)
        if load is None:
            load = (LoadAvg(values["load1"] / 100, values["load5"] / 100,
                            values["load15"] / 100, values["runnable"], values["threads"])
                    if values["load1"] is not None else Unknown("load not recorded"))
        top_io: list[ProcIoRate] | Unknown = missing("top_io", [])
        dstate: list[DStateProc] | Unknown = missing("dstate", [])
        for seq in sorted(proc_rows):
            if proc_rows[seq] == _BAD_ROW:
                continue
            kind, pid, tgid, comm, wchan, rd, wr, seconds, since = proc_rows[seq]
            if kind == "io" and isinstance(top_io, list):
                top_io.append(ProcIoRate(pid, comm, (rd or 0) / span if span else 0.0,
                                         (wr or 0) / span if span else 0.0))
            elif kind == "d" and isinstance(dstate, list):
                dstate.append(DStateProc(pid, tgid, comm,
                                         wchan if wchan is not None else Unknown("wchan unknown"),
                                         seconds or 0.0, since or 0.0))
        findings = [Finding(level=_level(level), subject=subject or "", message=message or "",
                            code=code or "")
                    for level, code, subject, message in
                    (finding_rows[seq] for seq in sorted(finding_rows))]
        changes = DiskChanges(list(notes.get("appeared", [])), list(notes.get("vanished", [])))
        return RecordedRates(interval=span, wall=values["ts"], disks=disks, disk_changes=changes,
                             nics=nics, cpu=cpu, load=load, dstate=dstate, top_io=top_io,
                             findings=findings, timed_out=dict(notes.get("timed_out", {})),
                             tz_offset_s=values["tz_offset_s"], interval_id=values["id"])


@dataclass
class RecordedRates(Rates):
    """Rates read back from the database, with the id of their interval."""
    interval_id: int = field(default=0, metadata={"json_skip": True})


def _level(label: str) -> Level:
    try:
        return Level[str(label).upper()]
    except KeyError:
        return Level.UNKNOWN


def _zero_counters(name: str, fields: int) -> DiskCounters:
    zero = DiskCounters(name, 0, 0, *([0] * 11))
    if fields >= 18:
        zero.dc_ios = zero.dc_merges = zero.dc_sectors = zero.dc_ticks = 0
    if fields >= 20:
        zero.fl_ios = zero.fl_ticks = 0
    return zero


def _disk_rates(dev: _Device, row: tuple | None, span: float) -> DiskRates:
    info = dev.info
    fields = info.get("fields", 20)
    zero = _zero_counters(dev.name, fields)
    if row is None:      # idle in this interval: nothing moved, nothing in flight
        cur = _zero_counters(dev.name, fields)
    else:
        cur = DiskCounters(dev.name, 0, 0, *row)
    topology = DiskInfo(dev.name, info.get("kind", "disk"), parent=info.get("parent"),
                        members=list(info.get("members") or []), alias=info.get("alias"))
    return device_rates(zero, cur, span, topology)


def _nic_rates(dev: _Device, row: tuple | None, state: str, carrier: str,
               span: float) -> NicRates:
    operstate = state if state != "?" else Unknown("operstate unreadable when recorded")
    carrier_value = (True if carrier == "1" else False if carrier == "0"
                     else Unknown("carrier unreadable when recorded"))
    deltas = row if row is not None else (0,) * len(NIC_COUNTERS)
    zero = tuple(None if v is None else 0 for v in deltas)
    return nic_rates(NicCounters(dev.name, operstate, carrier_value, zero),
                     NicCounters(dev.name, operstate, carrier_value, tuple(deltas)), span)


def _cpu_rates(values: dict, span: float) -> CpuRates | Unknown:
    jiffies = tuple(values[c] for c in _CPU_COLUMNS)
    if None in jiffies:
        return Unknown("CPU not recorded")
    out = CpuRates(overall=percent("all", (0,) * len(jiffies), jiffies))
    if span > 0:
        if values["ctxt"] is not None:
            out.ctxt_s = values["ctxt"] / span
        if values["intr"] is not None:
            out.intr_s = values["intr"] / span
    if values["procs_running"] is not None:
        out.procs_running = values["procs_running"]
    if values["procs_blocked"] is not None:
        out.procs_blocked = values["procs_blocked"]
    return out
