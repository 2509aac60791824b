"""The history database opened and used from a forked child, for the commands: a database on
a filesystem that stops answering (a held lookup, open or read: NFS, a dying FUSE server) left
`history`, `top --db`, `record --once` and `import-ioping` asleep in the kernel until killed,
deaf to Ctrl-C and SIGTERM.

BoundedHistory has the methods of HistoryDB the commands use; each runs in a child process
that holds the open database (inspector.roots.bounded.Worker), waited for while the child
reads, writes or computes and given up after STALL_S seconds of none of those: one line
("no answer from its filesystem for 5 s"), and the command ends. A signal ends the wait at
once (the child is killed; one stuck in the kernel ends when its filesystem answers). SQLite
keeps a write the child did not finish out of the database (its WAL), so giving up never
leaves half a sample.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from inspector.record.damage import Damage
from inspector.record.history import (
    HistoryDB,
    HistoryError,
    HistoryWriteError,
    NoHistory,
    ProbeRun,
)
from inspector.roots.bounded import TimedOut, Worker, WorkerFailed

STALL_S = 5.0       # seconds without progress (reads, writes, CPU) before giving up
CHUNK = 256         # recorded intervals per round trip when streaming them


class _Server:
    """The child's side: one HistoryDB, and the sample streams opened on it."""

    def __init__(self) -> None:
        self.db: HistoryDB | None = None
        self.streams: dict[int, Iterator] = {}
        self.reader: Any = None

    def __call__(self, request: tuple[str, tuple]) -> tuple:
        op, args = request
        try:
            value = getattr(self, f"op_{op}")(*args)
        except NoHistory as exc:
            return ("nohistory", str(exc))
        except HistoryWriteError as exc:
            return ("write", str(exc))
        except HistoryError as exc:
            return ("history", str(exc))
        except OSError as exc:
            return ("history", f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
        except sqlite3.DatabaseError as exc:     # a damaged page under a query
            path = self.db.path if self.db is not None else "history database"
            return ("history", f"{path}: damaged: {exc}; `sqlite3 {path} .recover` "
                               "salvages what is left")
        return ("ok", value, dict(self.db.damage.counts) if self.db is not None else {})

    def _open(self) -> HistoryDB:
        assert self.db is not None, "not opened"
        return self.db

    def op_open(self, path: str, create: bool, make_dirs: bool, missing_ok: bool) -> dict:
        try:
            self.db = HistoryDB(path, create=create, make_dirs=make_dirs)
        except NoHistory:
            if not missing_ok:
                raise
            self.db = HistoryDB.empty(path)
        return {"path": self.db.path, "note": self.db.note, "missing": self.db.missing,
                "read_only": self.db.read_only}

    def op_close(self) -> None:
        # closed here, not by the child's exit: the last connection's close checkpoints the
        # WAL and removes -wal and -shm
        if self.db is not None:
            self.db.close()
            self.db = None

    def op_call(self, method: str, args: tuple) -> Any:
        return getattr(self._open(), method)(*args)

    def op_sample_tables(self, by: str, disks: list[str] | None) -> Any:
        from inspector.record.sample_history import sample_tables
        return sample_tables(self._open().conn, by, disks=disks)

    def _samples(self) -> Any:
        if self.reader is None:
            from inspector.record.store import SampleReader
            self.reader = SampleReader(self._open().conn, self._open().damage)
        return self.reader

    def op_span(self) -> Any:
        return self._samples().span()

    def op_offset_near(self, ts: float) -> int:
        return self._samples().offset_near(ts)

    def op_between(self, start: float | None, end: float | None, limit: int | None) -> int:
        key = len(self.streams) + 1
        self.streams[key] = self._samples().between(start, end, limit)
        return key

    def op_next(self, key: int, count: int) -> list:
        stream = self.streams[key]
        out = []
        for item in stream:
            out.append(item)
            if len(out) >= count:
                break
        if len(out) < count:
            del self.streams[key]
        return out


class BoundedHistory:
    """HistoryDB(path, create, make_dirs) in a child; `missing_ok`: a database not there yet
    reads as nothing recorded (HistoryDB.empty) instead of NoHistory."""

    def __init__(self, path: str, create: bool = True, make_dirs: bool = False,
                 missing_ok: bool = False):
        self.path = path
        self.damage = Damage()
        self._stalled = False
        self._worker = Worker(_Server())
        try:
            info = self._call("open", path, create, make_dirs, missing_ok)
        except BaseException:
            self._worker.abandon()
            raise
        self.path, self.note = info["path"], info["note"]
        self.missing, self.read_only = info["missing"], info["read_only"]

    def _call(self, op: str, *args: Any, write: bool = False) -> Any:
        # a write that cannot be made is a HistoryWriteError: the recorder loses that sample
        # and goes on (and says so), as for a full disk
        error = HistoryWriteError if write else HistoryError
        if self._stalled:
            raise error(f"{self.path}: its filesystem stopped answering (no answer for "
                        f"{STALL_S:g} s earlier); not used again by this command")
        try:
            reply = self._worker.call_while_progressing((op, args), STALL_S)
        except TimedOut:
            self._stalled = True
            raise error(f"{self.path}: no answer from its filesystem for {STALL_S:g} s "
                        "(a hung mount? look for processes in D state)") from None
        except WorkerFailed as exc:
            self._worker.abandon()
            self._stalled = True
            raise error(f"{self.path}: cannot be used ({exc})") from None
        if reply[0] == "ok":
            if reply[2]:         # the child's counts so far (none once it closed the database)
                self.damage.counts = reply[2]
            return reply[1]
        error = {"nohistory": NoHistory, "write": HistoryWriteError}.get(reply[0], HistoryError)
        raise error(reply[1])

    # HistoryDB's methods the commands use
    def runs(self, probe: str | None = None, target: str | None = None) -> list[dict]:
        return self._call("call", "runs", (probe, target))

    def checks(self) -> list[dict]:
        return self._call("call", "checks", ())

    def targets(self) -> list[tuple[str, str, int]]:
        return self._call("call", "targets", ())

    def add_runs(self, runs: list[ProbeRun]) -> int:
        return self._call("call", "add_runs", (list(runs),), write=True)

    def record_sample(self, runs: list[ProbeRun], check: Any) -> int:
        return self._call("call", "record_sample", (runs, check), write=True)

    def prune(self, older_than_ts: float) -> int:
        return self._call("call", "prune", (older_than_ts,), write=True)

    def prune_to_size(self, max_bytes: int) -> int:
        return self._call("call", "prune_to_size", (max_bytes,), write=True)

    def used_bytes(self) -> int:
        return self._call("call", "used_bytes", ())

    def sample_tables(self, by: str, disks: list[str] | None = None) -> Any:
        return self._call("sample_tables", by, disks)

    def samples(self) -> BoundedSamples:
        return BoundedSamples(self)

    def close(self) -> None:
        if not self._stalled and self._worker.alive:
            try:
                self._call("close")
            except HistoryError:
                pass
        self._worker.close()

    def __enter__(self) -> BoundedHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BoundedSamples:
    """store.SampleReader's reading side over a BoundedHistory (top --db's replay)."""

    def __init__(self, history: BoundedHistory):
        self.history = history

    @property
    def damage(self) -> Damage:
        return self.history.damage

    def span(self) -> Any:
        return self.history._call("span")

    def offset_near(self, ts: float) -> int:
        return self.history._call("offset_near", ts)

    def between(self, start: float | None = None, end: float | None = None,
                limit: int | None = None) -> Iterator:
        key = self.history._call("between", start, end, limit)
        while True:
            chunk = self.history._call("next", key, CHUNK)
            yield from chunk
            if len(chunk) < CHUNK:
                return
