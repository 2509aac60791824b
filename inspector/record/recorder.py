"""`inspector record --samples`: every interval of the live samplers into the history database.

A thread of the recorder with a connection of its own: it samples on a fixed-rate schedule
(one interval every `every` seconds whatever the findings and probes of the main loop are
doing) through inspector.live.worker.SamplerProcess (the reads in a child process, each
source bounded: a hung /proc/diskstats is an Unknown part of that interval, never a stuck
recorder), and writes each interval in one transaction. Oldest intervals go by age
(`retention`) and by size (`max_bytes`).

A write that fails (a full disk) loses that interval only: the database keeps every interval
committed before, the recorder says so once, goes on sampling, and says when intervals are
stored again.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from inspector.config import ConfigError, LiveThresholds, load_config
from inspector.health.live.engine import LiveRules
from inspector.health.live.session import recorded_findings
from inspector.live import rates
from inspector.live.findings import LiveFinding
from inspector.live.sampler import READ_TIMEOUT
from inspector.live.worker import SamplerProcess
from inspector.record.history import HistoryDB, HistoryError, HistoryWriteError, local_offset
from inspector.record.store import SampleWriter
from inspector.roots.host import HostRoot

PRUNE_EVERY = 60.0      # seconds between age/size checks (each is a few index lookups)


class SampleRecorder(threading.Thread):
    """Records until `stop` is set (it finishes the interval it is writing first)."""

    def __init__(self, db_path: str, root: HostRoot, every: float, stop: threading.Event, *,
                 retention: float, max_bytes: int | None, log: Callable[[str], None]):
        super().__init__(name="sample recorder", daemon=True)
        self.db_path, self.root, self.every, self.stop = db_path, root, every, stop
        self.retention, self.max_bytes, self.log = retention, max_bytes, log
        self.stored = 0          # intervals committed
        self.lost = 0            # intervals that could not be written
        self.failure: str | None = None    # why the recorder could not run at all
        self.live: list[LiveFinding] = []  # the live findings of the last interval (textfile)

    def run(self) -> None:
        try:
            db = HistoryDB(self.db_path)
        except (HistoryError, OSError) as exc:
            self.failure = f"samples not recorded: {exc}"
            self.log(self.failure)
            return
        # a source waited for at most half an interval, and never more than a second
        sampler = SamplerProcess(self.root,
                                 read_timeout=min(READ_TIMEOUT, max(0.25, self.every / 2)))
        with db:
            try:
                self._loop(db, sampler)
            except Exception as exc:     # a bug: one line and a failed exit, not a traceback
                self.failure = f"samples stopped: {type(exc).__name__}: {exc}"
                self.log(self.failure)
            finally:
                sampler.close()

    def _loop(self, db: HistoryDB, sampler) -> None:
        writer = SampleWriter(db.conn)
        rules = LiveRules(self._thresholds())
        prev = sampler.sample()
        start = time.monotonic()
        slot = 0
        next_prune = start
        lost_run = 0             # intervals lost since the last one stored
        while True:
            # fixed-rate schedule: a slow sample skips slots instead of drifting
            slot = max(slot + 1, int((time.monotonic() - start) / self.every) + 1)
            if self.stop.wait(max(0.0, start + slot * self.every - time.monotonic())):
                return
            cur = sampler.sample()
            before, prev = prev, cur
            interval = rates(before, cur)
            # the live findings go in with the interval: a replay shows when each began/ended
            found = rules.update(interval)
            self.live = [lf for lf in found if lf.active]
            interval.findings += recorded_findings(found, interval.wall)
            try:
                with db.writing("interval not stored"):
                    writer.append(before, cur, interval, local_offset(interval.wall))
            except HistoryWriteError as exc:
                writer.forget()
                self.lost += 1
                lost_run += 1
                if lost_run == 1:
                    self.log(f"{_now()} samples not stored: {exc} (sampling goes on; the "
                             "intervals committed before are intact)")
                continue
            self.stored += 1
            if lost_run:
                self.log(f"{_now()} samples stored again after {lost_run} lost intervals")
                lost_run = 0
            if time.monotonic() >= next_prune:
                next_prune = time.monotonic() + PRUNE_EVERY
                self._prune(db)

    def _thresholds(self) -> LiveThresholds:
        try:
            return load_config().live
        except ConfigError as exc:
            self.log(f"{_now()} warning: {exc}; the live rules use their defaults")
            return LiveThresholds()

    def _prune(self, db: HistoryDB) -> None:
        try:
            db.prune(time.time() - self.retention)
            if self.max_bytes:
                db.prune_to_size(self.max_bytes)
        except HistoryWriteError as exc:
            self.log(f"{_now()} warning: {exc}")


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")
