"""Run the section collectors (each under a timeout) and the health rules into one Report."""
from __future__ import annotations

import threading
import time
from typing import Any

from inspector.health import evaluate
from inspector.model import HostIdentity, Report, Unknown, known
from inspector.report.sections import BY_NAME, NAMES, all_rules
from inspector.roots.bounded import TimedOut, WorkerFailed, run_bounded, run_forked, timed_out
from inspector.roots.host import HostRoot

DEFAULT_TIMEOUT = 15.0
# the child doing the reads (build_report_forked) answers this long after its collectors'
# deadline at most: health rules and pickling a report take milliseconds
CHILD_GRACE = 1.0


# the TUI imports run_bounded and its timeout from here
CollectorTimeout = TimedOut


def collect_section(root: HostRoot, name: str, timeout: float = DEFAULT_TIMEOUT) -> tuple[Any, float]:
    """One section, never raising: a timeout or a collector bug becomes Unknown(reason)."""
    collector = BY_NAME[name].collect
    start = time.perf_counter()
    try:
        value = run_bounded(lambda: collector(root), timeout, name=f"collect {name}")
    except TimedOut as exc:
        value = Unknown(str(exc))
    except Exception as exc:  # a collector bug must not take the report down
        value = Unknown(f"collector failed: {type(exc).__name__}: {exc}")
    return value, time.perf_counter() - start


def host_identity(root: HostRoot, timeout: float = DEFAULT_TIMEOUT) -> HostIdentity:
    """Which host and when; the hostname file is read under `timeout` like a collector (a
    FUSE mount over /proc that never answers must not hang the report before it starts)."""
    uname = root.uname()      # a fact: os.uname() live, the sidecar on a capture; no file read

    def read_names() -> tuple:
        return (root.try_line("proc/sys/kernel/hostname"),
                None if known(uname) else root.try_line("proc/sys/kernel/osrelease"))
    try:
        hostname, release = run_bounded(read_names, timeout, name="read hostname")
    except TimedOut as exc:
        hostname = release = Unknown(str(exc))
    if not known(hostname) and known(uname):
        hostname = uname["nodename"]    # the same kernel field the file shows
    kernel = uname["release"] if known(uname) else release
    machine = uname["machine"] if known(uname) else Unknown("uname not recorded")
    collected = root.fact("time", "collected_at", time.time)
    return HostIdentity(hostname=hostname, kernel=kernel, machine=machine, source=root.label,
                        collected_at=float(collected) if type(collected) in (int, float) else 0.0)


def build_report(root: HostRoot, sections: list[str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> Report:
    """Every section concurrently, each bounded by `timeout` (one deadline for all), in threads
    of this process: a read that hangs for good leaves its thread behind (see
    build_report_forked for commands that must exit)."""
    names = sections or list(NAMES)
    results: dict[str, Any] = {}
    timings: dict[str, float] = {}
    start = time.perf_counter()
    deadline = time.monotonic() + timeout
    # Sections run concurrently: one slow vendor CLI must not delay the rest.
    threads = []
    for name in names:
        def work(name: str = name) -> None:
            results[name], timings[name] = collect_section(root, name, timeout)
        t = threading.Thread(target=work, daemon=True, name=f"collect-{name}")
        t.start()
        threads.append(t)
    host = host_identity(root, timeout)      # meanwhile, under the same bound
    for t in threads:
        t.join(max(0.0, deadline + 0.05 - time.monotonic()))   # an import that hangs, say
    for name in names:
        if name not in results:
            results[name] = Unknown(timed_out(timeout))
            timings[name] = timeout
    return _finish_report(root, host, names, results, timings, start)


def build_report_forked(root: HostRoot, sections: list[str] | None = None,
                        timeout: float = DEFAULT_TIMEOUT, grace: float = CHILD_GRACE) -> Report:
    """build_report in a child process, for commands: they print and exit on time even when
    a read never returns (a thread stuck in a FUSE request keeps its whole process from
    exiting; the child stays behind instead). Never raises for the host's sake: a child that
    does not answer within `timeout` + `grace` gives a report whose sections are all
    Unknown("timed out after N s")."""
    names = sections or list(NAMES)
    start = time.perf_counter()
    try:
        return run_forked(lambda: build_report(root, names, timeout), timeout + grace)
    except TimedOut:
        reason = timed_out(timeout)
    except WorkerFailed as exc:
        reason = f"collector failed: {exc}"
    host = HostIdentity(hostname=Unknown(reason), kernel=Unknown(reason),
                        machine=Unknown(reason), source=root.label, collected_at=time.time())
    return _finish_report(root, host, names, {n: Unknown(reason) for n in names},
                          {n: timeout for n in names}, start, replay=False)


def _finish_report(root: HostRoot, host: HostIdentity, names: list[str], results: dict,
                   timings: dict, start: float, replay: bool = True) -> Report:
    if replay and not root.live:   # what the capture could not collect on its host stays so
        incomplete = root.fact("capture", "incomplete", dict)
        if isinstance(incomplete, dict):
            for name in names:
                if isinstance(incomplete.get(name), str):
                    results[name] = Unknown(f"not collected when captured: {incomplete[name]}")
    report = Report(host=host, sections={n: results[n] for n in names},
                    timings={n: round(timings[n], 6) for n in names})
    rule_start = time.perf_counter()
    report.findings = evaluate(report, all_rules())
    report.timings["health"] = round(time.perf_counter() - rule_start, 6)
    report.timings["total"] = round(time.perf_counter() - start, 6)
    return report
