"""Recorded history in SQLite: probe runs, report findings and live samples over time.

One writer (the recorder), WAL journal, every sample written in one transaction: a recorder
killed mid-write (SIGKILL, power loss) leaves the database at the last committed sample.
Times are stored as unix seconds plus the UTC offset of the host (or of the imported log), so
the hour-of-day table is in the host's local time ("slow every night from 3 to 8").
The live samples (`record --samples`) have tables of their own: inspector.record.store.
Old rows go by age (`prune`) and, for samples, by size too (`prune_to_size`), oldest first.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from inspector.record.damage import Damage, finite, valid_time
from inspector.writing.paths import Place, file_kind

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


class NoHistory(HistoryError):
    """Reading a database that does not exist (yet): nothing was recorded."""


class HistoryWriteError(HistoryError):
    """A sample could not be stored (disk full, I/O error): it is lost, the database is not."""


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


SQLITE_MAGIC = b"SQLite format 3\x00"
WAL_LIMIT = 4 << 20        # bytes the -wal file is truncated to after a checkpoint
_TABLES = {"meta", "probe_runs", "checks"}     # what makes an SQLite file an Inspector history


class HistoryDB:
    """The history database at `path`: for writing (`create`, the recorder and imports) or for
    reading only (`history`, the TUI's chart), which never writes, creates a schema, switches
    the journal mode, or creates -wal/-shm files beside a database that has none.

    Only a regular file or a new path (in an existing directory; `make_dirs` creates the
    default one) is opened: `--db /dev/sda`, a symlink to a device, a FIFO is refused before
    SQLite sees it (SQLite would write its header over the device). An existing file must be an
    Inspector history (an empty file counts as new); any other SQLite file is left untouched.
    The file is opened and checked here (O_NOFOLLOW, fstat) and must still be that file once
    SQLite has opened its path."""

    def __init__(self, path: str, create: bool = True, make_dirs: bool = False):
        self.path = path
        self.read_only = not create
        self.note = ""        # said to the reader when opened read-only
        self.missing = False  # see empty()
        self.damage = Damage()  # what reading found malformed (rows skipped or mended)
        # set once a connection is open (close() copes with none yet)
        self.conn: sqlite3.Connection
        place = _vet_path(path, create, make_dirs)
        real, created = place.path, place.entry is None
        try:
            fd = _create_new(path, place) if created else _open_checked(path, place)
        except BaseException:
            place.close()
            raise
        try:
            header = os.pread(fd, 100, 0)
            if header and not header.startswith(SQLITE_MAGIC):
                raise HistoryError(f"{path}: not a usable history database: not an SQLite file "
                                   "(left untouched)")
            if not create and not header:
                self.conn = _empty_history()          # an empty file: nothing recorded
                return
            if header:
                # a foreign database is refused before anything could write to it
                self._read_only_connection(real, fd, wal=header[18:20] == b"\x02\x02")
                if create:
                    try:
                        self._refuse_if_damaged()
                    finally:
                        self.conn.close()
            if create:
                self._writable_connection(real, fd)
        except sqlite3.DatabaseError as exc:
            self.close()          # no open file left behind (a mount stays unmountable)
            if created:
                _remove_created(place, fd)
            raise HistoryError(f"{path}: not a usable history database: {exc}") from None
        except BaseException:
            self.close()
            if created:
                _remove_created(place, fd)
            raise
        finally:
            os.close(fd)
            place.close()

    @classmethod
    def recording(cls, path: str) -> HistoryDB:
        """An existing recording, read-only (never created, never written), for replay;
        HistoryError with one line (naming `path`) otherwise."""
        try:
            return cls(path, create=False)
        except NoHistory:
            raise HistoryError(f"{path}: no such history database") from None
        except OSError as exc:
            raise HistoryError(str(exc)) from None

    @classmethod
    def empty(cls, path: str) -> HistoryDB:
        """What reading a database that does not exist yet gives: no runs, no checks."""
        db = cls.__new__(cls)
        db.path, db.read_only, db.note, db.missing = path, True, "", True
        db.damage = Damage()
        db.conn = _empty_history()
        return db

    def _writable_connection(self, real: str, fd: int) -> None:
        self.read_only = False
        # mode=rw: SQLite never creates the file (we did, or checked the one there)
        self.conn = sqlite3.connect(f"{_uri(real)}?mode=rw", uri=True, timeout=10,
                                    isolation_level=None)
        _still_same_file(self.path, real, fd)
        try:
            # a new database gives the pages that pruning frees back to the filesystem
            # (`prune_to_size`); on an existing one this is a no-op (it would need a VACUUM)
            self.conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            self.conn.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: durable at checkpoint, never corrupt
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA busy_timeout=10000")
            # the -wal file is cut back to this after a checkpoint (a big prune grows it)
            self.conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
            self.conn.executescript(_SCHEMA + _sample_store().SCHEMA)
            self._check_version()
            self._ensure_unique_runs()
        except sqlite3.OperationalError as exc:   # a full disk, a read-only mount, a lock
            raise HistoryError(f"{self.path}: cannot open for writing: {exc}"
                               f"{_no_space_hint(real)}") from None

    def _read_only_connection(self, real: str, fd: int, wal: bool) -> None:
        """Open read-only and check it is an Inspector history (HistoryError if not).

        A WAL database without a -wal file holds everything in the main file: opened as
        immutable, since even mode=ro would create -wal and -shm files beside it. With a -wal
        (a recorder is running, or was killed) mode=ro reads it; when the -shm cannot be
        created (a read-only mount, another user's directory) immutable is the fallback,
        without the samples still in the -wal."""
        uri = _uri(real)
        attempts = [("mode=ro", "")]
        try:
            wal_size: int | None = os.path.getsize(real + "-wal")
        except OSError:
            wal_size = None
        if wal and wal_size is None:
            attempts = [("immutable=1", "")]
        elif wal:
            attempts.append(("immutable=1", "opened read-only without its write-ahead log "
                                            "(no write access beside it): the latest samples "
                                            "may be missing" if wal_size else ""))
        failure: sqlite3.DatabaseError | None = None
        for query, note in attempts:
            try:
                conn = sqlite3.connect(f"{uri}?{query}", uri=True, timeout=10,
                                       isolation_level=None)
            except sqlite3.DatabaseError as exc:
                failure = exc
                continue
            self.conn = conn
            _still_same_file(self.path, real, fd)
            try:
                tables = {name for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'")}
            except sqlite3.DatabaseError as exc:
                conn.close()
                del self.conn
                failure = exc
                continue
            if not tables >= _TABLES:
                found = ", ".join(sorted(tables)[:5]) or "none"
                raise HistoryError(f"{self.path}: not a usable history database: an SQLite "
                                   f"database of something else (tables: {found}); left "
                                   "untouched")
            self.read_only, self.note = True, note
            self._check_version()
            return
        raise failure or sqlite3.DatabaseError("cannot open")

    def _refuse_if_damaged(self) -> None:
        """SQLite's quick_check (every page and b-tree, ~0.2 s per 150 MB cached) before the
        first write: a write into a damaged database can spread the damage over pages that
        were still readable. HistoryError in one line; readers still read what they can."""
        try:
            problems = [line for (text,) in self.conn.execute("PRAGMA quick_check(20)")
                        for line in str(text).splitlines() if not line.startswith("***")]
        except sqlite3.DatabaseError as exc:
            problems = [str(exc)]
        if problems and problems != ["ok"]:
            more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
            raise HistoryError(f"{self.path}: damaged, not written: {problems[0][:160]}{more}; "
                               f"`inspector history --db {self.path}` reads what it can, "
                               f"`sqlite3 {self.path} .recover` salvages it")

    def _check_version(self) -> None:
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'") \
                .fetchone()
        except sqlite3.DatabaseError as exc:
            if not self.read_only:
                raise
            self.damage.add(f"schema version unreadable ({exc})")      # read the rest
            return
        if self.read_only and (row is None or not str(row[0]).isdigit()):
            if row is not None:
                self.damage.add(f"schema version {str(row[0])[:20]!r} is not a number")
            return
        if row is None:
            self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                              (str(SCHEMA_VERSION),))
        elif not str(row[0]).isdigit():
            raise HistoryError(f"{self.path}: schema version {str(row[0])[:20]!r} is not one an "
                               "Inspector history has")
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

    def __enter__(self) -> HistoryDB:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ writes
    def add_runs(self, runs: Iterable[ProbeRun]) -> int:
        """Store runs; returns how many were new (a run already stored is skipped)."""
        return self.record_sample(list(runs), None)

    def record_sample(self, runs: list[ProbeRun],
                      check: tuple[float, str, list[dict], str | None] | None) -> int:
        """One recorder tick: all of it lands, or none of it (HistoryWriteError: a full disk,
        an I/O error; the samples committed before are intact). Returns the new runs."""
        rows = [tuple(json.dumps(r.detail, sort_keys=True) if c == "detail" else getattr(r, c)
                      for c in _RUN_COLUMNS) for r in runs]
        added = 0
        with self._writing("sample not stored"), self._transaction():
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
        with self._writing("old rows not pruned"), self._transaction():
            n = self.conn.execute("DELETE FROM probe_runs WHERE ts < ?", (older_than_ts,)).rowcount
            n += self.conn.execute("DELETE FROM checks WHERE ts < ?", (older_than_ts,)).rowcount
            n += _sample_store().prune_older(self.conn, older_than_ts)
        if n:
            self._release_free_pages()
        return n

    def prune_to_size(self, max_bytes: int) -> int:
        """Delete the oldest recorded samples until the database's pages in use are under
        `max_bytes` (with some headroom, so this happens in batches); returns the intervals
        deleted. Probe runs and checks are never pruned for size (a few kB a day; imported
        logs are kept). HistoryWriteError when that cannot be written."""
        deleted = 0
        for _ in range(20):       # each pass estimates from the average interval
            excess = _sample_store().size_excess_intervals(self.conn, max_bytes)
            if not excess:
                break
            with self._writing("oldest samples not pruned"), self._transaction():
                deleted += _sample_store().prune_oldest(self.conn, excess)
        if deleted:
            self._release_free_pages()
        return deleted

    def used_bytes(self) -> int:
        return _sample_store().used_bytes(self.conn)

    def _release_free_pages(self) -> None:
        """Give freed pages back to the filesystem (databases created with auto_vacuum);
        elsewhere they are reused before the file grows."""
        with contextlib.suppress(sqlite3.Error):
            # executescript steps it to its end (execute frees one page per step)
            self.conn.executescript("PRAGMA incremental_vacuum")

    @contextlib.contextmanager
    def writing(self, what: str):
        """One transaction of the caller's writes: all of it lands, or none of it
        (HistoryWriteError saying `what` was lost: a full disk, an I/O error)."""
        with self._writing(what), self._transaction():
            yield self.conn

    class _Tx:
        def __init__(self, conn: sqlite3.Connection):
            self.conn = conn

        def __enter__(self):
            self.conn.execute("BEGIN IMMEDIATE")

        def __exit__(self, exc_type, *_):
            if exc_type is None:
                try:
                    self.conn.execute("COMMIT")
                    return
                except sqlite3.Error:
                    self._rollback()
                    raise
            self._rollback()

        def _rollback(self) -> None:
            # SQLite may have rolled back already (SQLITE_FULL during COMMIT): a second
            # ROLLBACK would fail and hide why
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")

    def _transaction(self) -> _Tx:
        return HistoryDB._Tx(self.conn)

    @contextlib.contextmanager
    def _writing(self, what: str):
        """sqlite3 errors of a write as HistoryWriteError: one line naming the database."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise HistoryWriteError(f"{self.path}: {what}: {exc}") from None

    # ------------------------------------------------------------------ reads
    # Every read keeps what it can: a row whose time is not a time is skipped, a figure that
    # is not a number reads as unknown (None), findings that are not JSON as none, and rows
    # past a damaged page are lost while those before it are kept; `damage` says what.
    def targets(self) -> list[tuple[str, str, int]]:
        rows = self._rows("SELECT probe, target, COUNT(*) FROM probe_runs GROUP BY probe, "
                          "target ORDER BY probe, target", [], "probe targets")
        return [(str(probe), str(target), count) for probe, target, count in rows]

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
        out = []
        for row in self._rows(sql, args, "probe runs"):
            run = dict(zip(_RUN_COLUMNS, row))
            if not valid_time(run["ts"], run["tz_offset_s"]):
                self.damage.add("probe runs with a malformed time skipped")
                continue
            run["tz_offset_s"] = int(run["tz_offset_s"])
            for column in _RUN_NUMBERS:
                if run[column] is not None and not finite(run[column]):
                    run[column] = None
                    self.damage.add("probe run figures that are not numbers read as unknown")
            for column in ("host", "probe", "target", "source", "error"):
                if run[column] is not None and not isinstance(run[column], str):
                    run[column] = str(run[column])
            out.append(run)
        return out

    def checks(self) -> list[dict]:
        out = []
        for ts, tz, host, worst, text in self._rows(
                "SELECT ts, tz_offset_s, host, worst, findings FROM checks ORDER BY ts", [],
                "checks"):
            if not valid_time(ts, tz):
                self.damage.add("checks with a malformed time skipped")
                continue
            if worst not in CHECK_LEVELS:
                self.damage.add("checks with no known worst level read as unknown")
                worst = "unknown"
            findings = _findings(text)
            if findings is None:
                self.damage.add("checks whose findings are not a JSON list read as none")
                findings = []
            out.append({"ts": ts, "tz_offset_s": int(tz),
                        "host": host if host is None or isinstance(host, str) else str(host),
                        "worst": worst, "findings": findings})
        return out

    def _rows(self, sql: str, args: list, what: str) -> list[tuple]:
        """The rows of a query, up to a damaged page (then the ones read before it)."""
        rows: list[tuple] = []
        try:
            for row in self.conn.execute(sql, args):
                rows.append(row)
        except sqlite3.DatabaseError as exc:
            self.damage.add(f"{what} past a damaged page not read ({exc})")
        return rows


_RUN_NUMBERS = ("requests", "duration_s", "ops_per_s", "bytes_per_s", "lat_min_us",
                "lat_avg_us", "lat_max_us", "lat_mdev_us", "lat_p99_us")


def _findings(text: object) -> list[dict] | None:
    """A check's findings: a JSON list of objects (others dropped), None if not one."""
    if not isinstance(text, (str, bytes)):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return [f for f in value if isinstance(f, dict)] if isinstance(value, list) else None


def _uri(path: str) -> str:
    from urllib.parse import quote
    return "file:" + quote(path)


def _vet_path(path: str, create: bool, make_dirs: bool) -> Place:
    """Where the database is: its directory held open, its links followed under the kernel's
    protected_symlinks rule (inspector.writing.paths: another user's link in /tmp is refused,
    never followed), and what is there (None: a new path). HistoryError for anything but a
    regular file or a new path, NoHistory for reading a missing one."""
    from inspector.writing.paths import NoSuchDirectory, OutputError, check_entry, walk
    if make_dirs and create:
        directory = os.path.dirname(os.path.abspath(path))
        try:
            # 0700 as the XDG base directory spec asks of what it creates: a user's history
            # names their probe targets and their hosts' findings
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise HistoryError(f"{path}: cannot create {directory}: "
                               f"{exc.strerror or exc}") from None
    try:
        place = walk(path)
    except NoSuchDirectory as exc:
        if not create:
            raise NoHistory(f"{path}: no such history database") from None
        raise HistoryError(str(exc)) from None
    except OutputError as exc:
        raise HistoryError(str(exc)) from None
    except OSError as exc:
        raise HistoryError(f"{path}: {exc.strerror or exc}") from None
    try:
        via = f" ({place.path})" if place.path != os.path.abspath(path) else ""
        if place.entry is None and not create:
            raise NoHistory(f"{path}: no such history database")
        if place.entry is not None and not stat.S_ISREG(place.entry.st_mode):
            raise HistoryError(f"{path}{via} is {file_kind(place.entry.st_mode)}, not a history "
                               "database: refusing to open it")
        for suffix in ("", "-wal", "-shm", "-journal"):     # SQLite opens these by name too
            try:
                side = os.lstat(place.name + suffix, dir_fd=place.dir_fd)
            except FileNotFoundError:
                continue
            if suffix and not stat.S_ISREG(side.st_mode):
                raise HistoryError(f"{place.path}{suffix} is {file_kind(side.st_mode)}: refusing "
                                   "to open the history database beside it")
            if create:     # written: never a file another user planted in /tmp
                check_entry(path + suffix, Place(place.dir_fd, place.directory,
                                                 place.name + suffix, None), side,
                            "write into")
    except OutputError as exc:
        place.close()
        raise HistoryError(str(exc)) from None
    except BaseException:
        place.close()
        raise
    return place


def _open_checked(path: str, place: Place) -> int:
    """A descriptor on the regular file at `place` (never through a symlink, never blocking
    on a FIFO put there since the check); HistoryError otherwise."""
    try:
        fd = os.open(place.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=place.dir_fd)
    except OSError as exc:
        raise HistoryError(f"{path}: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise HistoryError(f"{path} is {file_kind(mode)}, not a history database: refusing "
                           "to open it")
    return fd


def _create_new(path: str, place: Place) -> int:
    """Create the database file ourselves, in the directory held open: O_EXCL|O_NOFOLLOW, so a
    link or a node that appeared at the path since it was checked is never opened."""
    try:
        return os.open(place.name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                       | os.O_CLOEXEC, 0o644, dir_fd=place.dir_fd)
    except FileExistsError:
        raise HistoryError(f"{path}: appeared while it was being created; not opened") from None
    except OSError as exc:
        raise HistoryError(f"{path}: cannot create: {exc.strerror or exc}") from None


def _remove_created(place: Place, fd: int) -> None:
    """A database we created and could not set up (a full disk): no empty file is left,
    nor the side files SQLite made for it (none was there: _vet_path)."""
    mine = os.fstat(fd)
    with contextlib.suppress(OSError):
        now = os.lstat(place.name, dir_fd=place.dir_fd)
        if (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
            os.unlink(place.name, dir_fd=place.dir_fd)
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            if os.lstat(place.name + suffix, dir_fd=place.dir_fd).st_uid == os.geteuid():
                os.unlink(place.name + suffix, dir_fd=place.dir_fd)


def _still_same_file(path: str, real: str, fd: int) -> None:
    """After SQLite opened `real` by name: it must still be the file checked through `fd`
    (a swap in between would have SQLite write elsewhere)."""
    try:
        now = os.stat(real)
    except OSError as exc:
        raise HistoryError(f"{path}: {exc.strerror or exc} while opening") from None
    then = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (then.st_dev, then.st_ino):
        raise HistoryError(f"{path}: replaced while it was being opened; not used")


def _no_space_hint(path: str) -> str:
    try:
        full = os.statvfs(os.path.dirname(path)).f_bavail == 0
    except OSError:
        return ""
    return " (no space left on its filesystem)" if full else ""


def _sample_store():
    """inspector.record.store, imported where samples are written, pruned or their tables made:
    it imports the live samplers (inspector.live, ~35 ms), which `history` reading probe runs
    and checks does not use."""
    from inspector.record import store
    return store


def _empty_history() -> sqlite3.Connection:
    """An empty history in memory: what reading a database with nothing recorded returns."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(_SCHEMA + _sample_store().SCHEMA)
    return conn


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
    # throughput in MiB/s across the runs that carry it (ioping's MiB/s, an io probe's bytes
    # per request x requests per second); None when none does
    mib_s_mean: float | None = None
    mib_s_stdev: float | None = None


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


MIB = float(1 << 20)


def run_bytes_per_s(run: dict) -> float | None:
    """A run's throughput: what it stored, else its request size times its requests per
    second when its summary says the request size."""
    if run.get("bytes_per_s") is not None:
        return run["bytes_per_s"]
    detail = run.get("detail")
    if isinstance(detail, str) and "request_size" in detail:
        try:
            detail = json.loads(detail)
        except ValueError:
            return None
    if not isinstance(detail, dict):
        return None
    summary = detail["summary"] if isinstance(detail.get("summary"), dict) else detail
    size = summary.get("request_size")
    ops = run.get("ops_per_s")
    if isinstance(size, (int, float)) and isinstance(ops, (int, float)) and size > 0:
        return float(size) * ops
    return None


def aggregate(runs: list[dict], by: str = "hour") -> list[Bucket]:
    """Per hour of day (local time of the run) or per calendar day: mean and standard deviation
    of ops/s (or IOPS), of throughput (MiB/s, where runs carry it) and of mean latency, plus
    the mean p99 where recorded."""
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
        mib_mean, mib_sd = _mean_stdev([b / MIB for r in ok
                                        if (b := run_bytes_per_s(r)) is not None])
        out.append(Bucket(key, len(rows), ops_mean, ops_sd, lat_mean, lat_sd, p99,
                          len(rows) - len(ok), mib_mean, mib_sd))
    return out
