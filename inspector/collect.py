"""Run the section collectors (each under a timeout) and the health rules into one Report."""
from __future__ import annotations

import importlib
import threading
import time
import traceback
from typing import Any, Callable

from inspector.host import HostRoot
from inspector.model import HostIdentity, Report, Unknown, known

# Section name -> module whose `collect(root)` returns that section's dataclass.
SECTIONS: dict[str, str] = {
    "storage": "inspector.discover.storage",
    "virt": "inspector.discover.virt",
    "net": "inspector.discover.net",
    "dns": "inspector.discover.resolver",
    "cpu": "inspector.discover.cpu",
}
DEFAULT_TIMEOUT = 15.0


class CollectorTimeout(Exception):
    pass


def run_bounded(func: Callable[[], Any], timeout: float) -> Any:
    """Run `func` in a daemon thread; raise CollectorTimeout if it does not finish in time.

    A hung read (NFS, a dying disk) cannot be interrupted, but the caller moves on; the daemon
    thread never keeps the process alive."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = func()
        except BaseException as exc:  # reported by the caller, never lost
            box["error"] = exc
            box["trace"] = traceback.format_exc()

    thread = threading.Thread(target=target, daemon=True, name="collector")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise CollectorTimeout(f"timed out after {timeout:g} s")
    if "error" in box:
        exc = box["error"]
        exc.__inspector_trace__ = box.get("trace", "")
        raise exc
    return box.get("value")


def collect_section(root: HostRoot, name: str, timeout: float = DEFAULT_TIMEOUT) -> tuple[Any, float]:
    """One section, never raising: a timeout or a collector bug becomes Unknown(reason)."""
    module = importlib.import_module(SECTIONS[name])
    start = time.perf_counter()
    try:
        value = run_bounded(lambda: module.collect(root), timeout)
    except CollectorTimeout as exc:
        value = Unknown(str(exc))
    except Exception as exc:  # a collector bug must not take the report down
        value = Unknown(f"collector failed: {type(exc).__name__}: {exc}")
    return value, time.perf_counter() - start


def host_identity(root: HostRoot) -> HostIdentity:
    uname = root.uname()
    hostname = root.try_line("proc/sys/kernel/hostname")
    if not known(hostname) and known(uname):
        hostname = uname["nodename"]
    kernel = uname["release"] if known(uname) else root.try_line("proc/sys/kernel/osrelease")
    machine = uname["machine"] if known(uname) else Unknown("uname not recorded")
    collected = root.fact("time", "collected_at", time.time)
    return HostIdentity(hostname=hostname, kernel=kernel, machine=machine, source=root.label,
                        collected_at=float(collected) if type(collected) in (int, float) else 0.0)


def build_report(root: HostRoot, sections: list[str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> Report:
    from inspector.health import evaluate

    names = sections or list(SECTIONS)
    results: dict[str, Any] = {}
    timings: dict[str, float] = {}
    start = time.perf_counter()
    # Sections run concurrently: one slow vendor CLI must not delay the rest.
    threads = []
    for name in names:
        def work(name: str = name) -> None:
            results[name], timings[name] = collect_section(root, name, timeout)
        t = threading.Thread(target=work, daemon=True, name=f"collect-{name}")
        t.start()
        threads.append(t)
    for t in threads:
        t.join(timeout + 1.0)
    for name in names:
        if name not in results:
            results[name] = Unknown(f"timed out after {timeout:g} s")
            timings[name] = timeout
    if not root.live:   # what the capture could not collect on its host stays not collected
        incomplete = root.fact("capture", "incomplete", dict)
        if isinstance(incomplete, dict):
            for name in names:
                if isinstance(incomplete.get(name), str):
                    results[name] = Unknown(f"not collected when captured: {incomplete[name]}")
    report = Report(host=host_identity(root), sections={n: results[n] for n in names},
                    timings={n: round(timings[n], 6) for n in names})
    rule_start = time.perf_counter()
    report.findings = evaluate(report)
    report.timings["health"] = round(time.perf_counter() - rule_start, 6)
    report.timings["total"] = round(time.perf_counter() - start, 6)
    return report
