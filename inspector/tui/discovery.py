"""The TUI's discovery: the report's sections collected in a child process, each under a
deadline, naming the ones that do not answer.

Like `inspector report` (collect.build_report_forked) the reads happen in a child, so a section
stuck in the kernel never keeps the TUI from exiting (inspector.tui.forked). Unlike it, the
child lives for the session and remembers what hangs (inspector.roots.bounded.Reads): a section
whose read from an earlier refresh has not returned is not started again (one stuck thread
per hung section, not one more every refresh) and reads Unknown("timed out: no answer for
N s") until it returns.

The first collection answers in two steps: after `patience` seconds the sections that
answered are shown, the others as Unknown("no answer yet after 3 s ..."), named in the
findings and the status line; the rest follows when they answer or their deadline passes
("timed out after 15 s").
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from inspector.model import HostIdentity, Report, Unknown, known
from inspector.report.collect import _finish_report, host_identity
from inspector.report.sections import BY_NAME, NAMES
from inspector.roots.bounded import Reads, Worker
from inspector.roots.host import HostRoot
from inspector.text.escapes import printable
from inspector.tui.forked import ForkedService

PATIENCE = 3.0            # the first collection shows what answered after this
ANSWER_GRACE = 1.0        # the child's answer past its deadline: rules and pickling
HOST = "host"             # the read of the hostname (and release on a capture without uname)
FOREVER = 365 * 86400.0   # host_identity's own bound: Reads bounds it, without a thread a call


class DiscoveryProcess:
    """`collect(patience, interim)` -> Report, from the child; raises inspector.roots.bounded's
    TimedOut or WorkerFailed when the child itself does not answer (then a new one is
    forked for the next collection)."""

    def __init__(self, root: HostRoot, timeout: float, worker: Worker | None = None):
        """`worker`: a child already serving `discovery_service(root, timeout)`
        (inspector.tui.readers); by default one is forked."""
        self.timeout = timeout
        self._service = ForkedService(lambda: discovery_service(root, timeout), worker)

    def collect(self, patience: float | None = None, interim=None) -> Report:
        """The report when every section answered or the deadline passed. With `patience`,
        `interim(report, pending)` gets the report as it stands after that many seconds if
        sections are still out (`pending` names them)."""
        started = time.monotonic()
        wait = self.timeout if patience is None else min(patience, self.timeout)
        report, pending = self._service.call(("start", wait), wait + ANSWER_GRACE)
        if pending and interim is not None:
            interim(report, pending)
        if pending:
            left = max(0.0, self.timeout - (time.monotonic() - started))
            report, pending = self._service.call(("finish", left), left + ANSWER_GRACE)
        return report

    def close(self) -> None:
        self._service.close()


def discovery_service(root: HostRoot, timeout: float) -> Callable[[Any], Any]:
    """What the child answers DiscoveryProcess's requests with (built before the fork)."""
    return _Collection(root, timeout).serve


class _Collection:
    """The child's side: one collection at a time, its reads kept across collections."""

    def __init__(self, root: HostRoot, timeout: float):
        self.root, self.timeout = root, timeout
        self.reads = Reads(patience=0.0)
        self.current: dict[str, Any] = {}
        self.started = self.deadline = self.began = 0.0
        self.last_host: HostIdentity | None = None
        self.escaped = _Escaped()

    def serve(self, request: tuple[str, float]) -> tuple[Report, list[str]]:
        """("start", wait): a new collection, as it stands after `wait` seconds at most;
        ("finish", _): the same collection once every section answered or timed out."""
        step, wait = request
        if step == "start" or not self.current:
            self._start()
            until = min(self.deadline, self.started + wait)
        else:
            until = self.deadline
        report, pending = self._report(until, final=until >= self.deadline)
        # a device model or hostname carrying escape sequences (a hostile or broken capture)
        # must not drive the operator's terminal: escaped here, off the UI's process
        return self.escaped.report(report), pending

    def _start(self) -> None:
        root = self.root
        self.started = time.monotonic()
        self.began = time.perf_counter()
        self.deadline = self.started + self.timeout
        self.current = {name: self.reads.start(name, _collector(root, name)) for name in NAMES}
        self.current[HOST] = self.reads.start(HOST, lambda: host_identity(root, FOREVER))

    def _report(self, until: float, final: bool) -> tuple[Report, list[str]]:
        results: dict[str, Any] = {}
        timings: dict[str, float] = {}
        pending: list[str] = []
        for name in NAMES:
            read = self.current[name]
            value = read.result(until)
            if read.timed_out is None:
                if isinstance(value, tuple):
                    results[name], timings[name] = value
                else:     # Reads' own Unknown: the read itself failed
                    results[name], timings[name] = value, time.monotonic() - self.started
                continue
            timings[name] = time.monotonic() - self.started
            if final or not read.fresh:   # hung since an earlier refresh: no use waiting
                results[name] = Unknown(read.timed_out)
            else:
                pending.append(name)
                waited = round(until - self.started, 1)
                results[name] = Unknown(f"no answer yet after {waited:g} s "
                                        f"(waiting up to {self.timeout:g} s)")
        host = self.current[HOST].result(until)
        if isinstance(host, HostIdentity):
            self.last_host = host
        else:   # the hostname read hangs: what uname says, or the last one read
            host = self.last_host or _identity_from_uname(self.root, host)
        report = _finish_report(self.root, host, list(NAMES), results, timings, self.began)
        return report, pending


class _Escaped:
    """printable() of a report, part by part (the host, each section, the findings), a part
    equal to the one escaped last time reused as it is: escaping copies every object of the
    report (35,000 calls), which was a third of the child's CPU, and most sections read the
    same from one refresh to the next. printable is idempotent, so a new part equal to the
    last escaped one escapes to it."""

    def __init__(self) -> None:
        self._last: dict[Any, Any] = {}

    def report(self, report: Report) -> Report:
        return dataclasses.replace(
            report, host=self._part(HOST, report.host),
            sections={name: self._part(("section", name), value)
                      for name, value in report.sections.items()},
            findings=self._part("findings", report.findings))

    def _part(self, key: Any, value: Any) -> Any:
        last = self._last.get(key, _NONE)
        if last is not _NONE and type(last) is type(value) and last == value:
            return last
        self._last[key] = escaped = printable(value)
        return escaped


_NONE = object()


def _collector(root: HostRoot, name: str):
    """A section's collector as a read: (value, seconds), a collector bug as Unknown."""
    collector = BY_NAME[name].collect

    def collect() -> tuple[Any, float]:
        start = time.perf_counter()
        try:
            value = collector(root)
        except Exception as exc:   # a collector bug must not take the report down
            value = Unknown(f"collector failed: {type(exc).__name__}: {exc}")
        return value, time.perf_counter() - start
    return collect


def _identity_from_uname(root: HostRoot, why: Unknown) -> HostIdentity:
    """The host without reading its files (collect.host_identity's fallback): uname's node
    name is the kernel field /proc/sys/kernel/hostname shows."""
    uname = root.uname()
    reason = Unknown(f"hostname {why.reason}")
    collected = root.fact("time", "collected_at", time.time)
    at = float(collected) if type(collected) in (int, float) else 0.0
    if known(uname):
        return HostIdentity(hostname=uname["nodename"], kernel=uname["release"],
                            machine=uname["machine"], source=root.label, collected_at=at)
    return HostIdentity(hostname=reason, kernel=reason, machine=Unknown("uname not recorded"),
                        source=root.label, collected_at=at)
