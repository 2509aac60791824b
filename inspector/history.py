"""Recorded history in SQLite: probe runs and report findings over time.

One writer (the recorder), WAL journal, every sample written in one transaction: a recorder
killed mid-write (SIGKILL, power loss) leaves the database at the last committed sample.
Times are stored as unix seconds plus the UTC offset of the host (or of the imported log), so
the hour-of-day table is in the host's local time ("slow every night from 3 to 8").
"""
from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Iterable

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS probe_runs (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,               -- unix seconds (start of the run)
    tz_offset_s INTEGER NOT NULL,   -- local time = ts + tz_offset_s
    host TEXT,
    probe TEXT NOT NULL,            -- io | dns | memcached
    target TEXT NOT NULL,
    source TEXT NOT NULL,           -- record | import-ioping | snapshot
    requests INTEGER,
    duration_s REAL,
    ops_per_s REAL,                 -- IOPS (1/mean) or ops/s
    bytes_per_s REAL,
    lat_min_us REAL, lat_avg_us REAL, lat_max_us REAL, lat_mdev_us REAL,
    lat_p99_us REAL,
    error TEXT,
    detail TEXT                     -- JSON: the probe's full summary
);
CREATE INDEX IF NOT EXISTS probe_runs_by_target ON probe_runs (probe, target, ts);
-- the same run imported or recorded twice is one run (re-importing a log adds nothing)
-- (created in _ensure_unique_runs, after removing duplicates older databases may hold)
CREATE TABLE IF NOT EXISTS checks (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,
    tz_offset_s INTEGER NOT NULL,
    host TEXT,
    worst TEXT NOT NULL,            -- ok | warn | crit | unknown
    findings TEXT NOT NULL          -- JSON list of {level, subject, code, message}
);
CREATE INDEX IF NOT EXISTS checks_by_ts ON checks (ts);
"""


class HistoryError(Exception):
    pass


def default_db_path() -> str:
    """/var/lib/inspector when root, else the user's XDG data directory."""
    if os.geteuid() == 0:
        return "/var/lib/inspector/history.sqlite"
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return os.path.join(base, "inspector", "history.sqlite")


def local_offset(ts: float | None = None) -> int:
    t = time.localtime(ts if ts is not None else time.time())
    return int(t.tm_gmtoff)


@dataclass
class ProbeRun:
    ts: float
    probe: str
    target: str
    source: str = "record"
    tz_offset_s: int = 0
    host: str | None = None
    requests: int | None = None
    duration_s: float | None = None
    ops_per_s: float | None = None
    bytes_per_s: float | None = None
    lat_min_us: float | None = None
    lat_avg_us: float | None = None
    lat_max_us: float | None = None
    lat_mdev_us: float | None = None
    lat_p99_us: float | None = None
    error: str | None = None
    detail: dict = field(default_factory=dict)


_RUN_COLUMNS = ("ts", "tz_offset_s", "host", "probe", "target", "source", "requests", "duration_s",
                "ops_per_s", "bytes_per_s", "lat_min_us", "lat_avg_us", "lat_max_us",
                "lat_mdev_us", "lat_p99_us", "error", "detail")


class HistoryDB:
    def __init__(self, path: str, create: bool = True):
        self.path = path
        if not create and not os.path.exists(path):
            raise HistoryError(f"{path}: no such history database")
        if create:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.read_only = False
        self.note = ""        # said to the reader when opened read-only
        try:
            self.conn = sqlite3.connect(path, timeout=10, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")   # WAL + NORMAL: durable at checkpoint, never corrupt
            self.conn.execute("PRAGMA busy_timeout=10000")
            self.conn.executescript(_SCHEMA)
            self._check_version()
            self._ensure_unique_runs()
        except sqlite3.DatabaseError as exc:
            # Reading needs no write access: a database on a read-only mount, or the root
            # recorder's file read by an operator who cannot create its -shm file beside it.
            if create or not self._open_read_only(path):
                self.close()          # no open file left behind (a mount stays unmountable)
                raise HistoryError(f"{path}: not a usable history database: {exc}") from None

    def _open_read_only(self, path: str) -> bool:
        from urllib.parse import quote
        uri = "file:" + quote(os.path.abspath(path))
        for query, note in (("mode=ro", ""),
                            ("immutable=1", "opened read-only without its write-ahead log "
                                            "(no write access beside it): the latest samples "
                                            "may be missing")):
            try:
                conn = sqlite3.connect(f"{uri}?{query}", uri=True, timeout=10,
                                       isolation_level=None)
            except sqlite3.DatabaseError:
                continue
            try:
                conn.execute("SELECT COUNT(*) FROM probe_runs").fetchone()
                conn.execute("SELECT COUNT(*) FROM checks").fetchone()
            except sqlite3.DatabaseError:
                conn.close()
                continue
            try:
                self.conn.close()
            except (AttributeError, sqlite3.Error):
                pass
            try:
                wal_pending = os.path.getsize(path + "-wal") > 0
            except OSError:
                wal_pending = False
            self.conn, self.read_only = conn, True
            self.note = note if wal_pending else ""
            self._check_version()
            return True
        return False

    def _check_version(self) -> None:
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None and self.read_only:
            return
        if row is None:
            self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                              (str(SCHEMA_VERSION),))
        elif int(row[0]) > SCHEMA_VERSION:
            raise HistoryError(f"{self.path}: written by a newer Inspector (schema {row[0]} > "
                               f"{SCHEMA_VERSION}); upgrade to read it")

    def _ensure_unique_runs(self) -> None:
        """One row per (ts, probe, target, source): databases from before this rule may hold
        duplicates from importing a log twice; keep the first of each, then enforce it."""
        exists = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='index' "
                                   "AND name='probe_runs_unique'").fetchone()
        if exists:
            return
        with self._transaction():
            self.conn.execute("DELETE FROM probe_runs WHERE id NOT IN (SELECT MIN(id) FROM "
                              "probe_runs GROUP BY ts, probe, target, source)")
            self.conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS probe_runs_unique "
                              "ON probe_runs (ts, probe, target, source)")

    def close(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()

    def __enter__(self) -> "HistoryDB":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ writes
    def add_runs(self, runs: Iterable[ProbeRun]) -> int:
        """Store runs; returns how many were new (a run already stored is skipped)."""
        return self.record_sample(list(runs), None)

    def record_sample(self, runs: list[ProbeRun],
                      check: tuple[float, str, list[dict], str | None] | None) -> int:
        """One recorder tick: all of it lands, or none of it. Returns the number of new runs."""
        rows = [tuple(json.dumps(r.detail, sort_keys=True) if c == "detail" else getattr(r, c)
                      for c in _RUN_COLUMNS) for r in runs]
        added = 0
        with self._transaction():
            if rows:
                before = self.conn.total_changes
                self.conn.executemany(
                    f"INSERT OR IGNORE INTO probe_runs ({', '.join(_RUN_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(_RUN_COLUMNS))})", rows)
                added = self.conn.total_changes - before
            if check:
                ts, worst, findings, host = check
                self.conn.execute("INSERT INTO checks (ts, tz_offset_s, host, worst, findings) "
                                  "VALUES (?, ?, ?, ?, ?)",
                                  (ts, local_offset(ts), host, worst, json.dumps(findings)))
        return added

    def prune(self, older_than_ts: float) -> int:
        with self._transaction():
            n = self.conn.execute("DELETE FROM probe_runs WHERE ts < ?", (older_than_ts,)).rowcount
            n += self.conn.execute("DELETE FROM checks WHERE ts < ?", (older_than_ts,)).rowcount
        return n

    class _Tx:
        def __init__(self, conn: sqlite3.Connection):
            self.conn = conn

        def __enter__(self):
            self.conn.execute("BEGIN IMMEDIATE")

        def __exit__(self, exc_type, *_):
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")

    def _transaction(self) -> "_Tx":
        return HistoryDB._Tx(self.conn)

    # ------------------------------------------------------------------ reads
    def targets(self) -> list[tuple[str, str, int]]:
        return list(self.conn.execute(
            "SELECT probe, target, COUNT(*) FROM probe_runs GROUP BY probe, target ORDER BY probe, target"))

    def runs(self, probe: str | None = None, target: str | None = None) -> list[dict]:
        sql = f"SELECT {', '.join(_RUN_COLUMNS)} FROM probe_runs WHERE 1=1"
        args: list = []
        if probe:
            sql += " AND probe = ?"
            args.append(probe)
        if target:
            sql += " AND target = ?"
            args.append(target)
        sql += " ORDER BY ts"
        return [dict(zip(_RUN_COLUMNS, row)) for row in self.conn.execute(sql, args)]

    def checks(self) -> list[dict]:
        return [{"ts": ts, "tz_offset_s": tz, "host": host, "worst": worst,
                 "findings": json.loads(f)}
                for ts, tz, host, worst, f in self.conn.execute(
                    "SELECT ts, tz_offset_s, host, worst, findings FROM checks ORDER BY ts")]


@dataclass
class Bucket:
    key: str                    # "03" (hour of day) or "2015-02-15" (day)
    runs: int
    ops_mean: float | None
    ops_stdev: float | None
    lat_mean_us: float | None
    lat_stdev_us: float | None
    lat_p99_mean_us: float | None
    errors: int


def _mean_stdev(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)   # sample stdev across runs
    return mean, math.sqrt(var)


def _bucket_key(ts: float, tz_offset_s: int | None, by: str) -> str:
    local = time.gmtime(ts + (tz_offset_s or 0))
    return f"{local.tm_hour:02d}" if by == "hour" else time.strftime("%Y-%m-%d", local)


@dataclass
class CheckBucket:
    key: str                    # "03" (hour of day) or "2015-02-15" (day)
    samples: int
    worst: dict[str, int]       # samples whose worst level was ok / warn / crit / unknown
    findings: list[dict]        # non-ok finding codes, most frequent first: {code, samples}


CHECK_LEVELS = ("ok", "warn", "crit", "unknown")


def aggregate_checks(checks: list[dict], by: str = "hour", top: int = 3) -> list[CheckBucket]:
    """The recorder's check results per hour of day or per day (local time of each sample):
    how many samples were ok, warn, crit or unknown, and which findings came up most."""
    groups: dict[str, list[dict]] = {}
    for c in checks:
        groups.setdefault(_bucket_key(c["ts"], c.get("tz_offset_s"), by), []).append(c)
    out = []
    for key in sorted(groups):
        rows = groups[key]
        worst = {level: sum(1 for r in rows if r["worst"] == level) for level in CHECK_LEVELS}
        codes: dict[str, int] = {}
        for r in rows:
            seen = {f.get("code") or f.get("message") or "?" for f in r["findings"]
                    if isinstance(f, dict) and f.get("level") not in (None, "ok")}
            for code in seen:
                codes[code] = codes.get(code, 0) + 1
        frequent = [{"code": code, "samples": n}
                    for code, n in sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]
        out.append(CheckBucket(key, len(rows), worst, frequent))
    return out


def aggregate(runs: list[dict], by: str = "hour") -> list[Bucket]:
    """Per hour of day (local time of the run) or per calendar day: mean and standard deviation
    of throughput (ops/s or IOPS) and of mean latency, plus the mean p99 where recorded."""
    groups: dict[str, list[dict]] = {}
    for run in runs:
        groups.setdefault(_bucket_key(run["ts"], run["tz_offset_s"], by), []).append(run)
    out = []
    for key in sorted(groups):
        rows = groups[key]
        ok = [r for r in rows if not r["error"]]
        ops_mean, ops_sd = _mean_stdev([r["ops_per_s"] for r in ok if r["ops_per_s"] is not None])
        lat_mean, lat_sd = _mean_stdev([r["lat_avg_us"] for r in ok if r["lat_avg_us"] is not None])
        p99, _ = _mean_stdev([r["lat_p99_us"] for r in ok if r["lat_p99_us"] is not None])
        out.append(Bucket(key, len(rows), ops_mean, ops_sd, lat_mean, lat_sd, p99,
                          len(rows) - len(ok)))
    return out
