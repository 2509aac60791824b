"""One probe run in a process of its own, streaming its figures back as JSON lines.

    python -m inspector.probes.child '{"kind": "memcached", "target": "127.0.0.1:11211", ...}' \
        [--parent PID]

The TUI starts one of these per run, so drawing, resizing and key handling (the UI's process,
its GIL and its event loop) never enter the measurement. The run is the CLI's: the same
request -> config_for -> probe -> ProbeDriver path as `inspector probe ...` and `--probe SPEC`.

Protocol, one JSON object per line on stdout (the probe's own output never goes there: stdout
is moved to a private descriptor and Python's sys.stdout points at stderr):

    {"type": "started", "pid": 123, "notes": [...]}        after prepare(): the target is open
    {"type": "interval", "sent": MONO, "interval": {...}}  Interval.to_json(); MONO is
                                                           time.monotonic() when it was made
    {"type": "verdicts", "verdicts": [{...}]}              the front end's findings, if asked
    {"type": "summary", "summary": {...}}                  RunSummary.to_json(), at the end
    {"type": "error", "message": "..."}                    the run could not start or broke
    {"type": "end", "signal": N | null}                    last line

SIGTERM, SIGINT, SIGHUP and SIGQUIT stop the run the CLI's way (partial figures kept, then the
summary); the parent kills the process if it is still there a grace period later; with --parent
(its pid), the run gets SIGTERM when the parent ends, however it ends (parent_death). Lines are
written by a thread of their own, so a slow reader (a parent that is busy, a full pipe) holds
back the stream, which the parent marks as late, never the probe's event loop.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict

from inspector.children.parent_death import PARENT_ARG, end_with_parent
from inspector.probes.base import Interval, Probe, ProbeError, ProbeResult
from inspector.probes.request import ProbeRequest

MODULE = "inspector.probes.child"


def request_to_json(request: ProbeRequest) -> str:
    doc = asdict(request)
    doc["kind"] = str(request.kind)
    return json.dumps(doc)


def request_from_json(text: str) -> ProbeRequest:
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ProbeError("the probe request is not a JSON object")
    return ProbeRequest(**doc)


def command(request: ProbeRequest, module: str = MODULE) -> list[str]:
    """How the parent starts a run: this interpreter, this package (no PATH lookup), `module`
    (this one, or a front end's own that calls main()); the run ends with the process that
    starts it."""
    return [sys.executable, "-m", module, request_to_json(request), PARENT_ARG, str(os.getpid())]


class LineWriter:
    """JSON lines to a descriptor from a thread of its own; put() never blocks."""

    def __init__(self, fd: int):
        self._file = os.fdopen(fd, "w", buffering=1, encoding="utf-8")
        self._queue: queue.SimpleQueue[dict | None] = queue.SimpleQueue()
        self._broken = False
        self._thread = threading.Thread(target=self._main, name="probe-stream", daemon=True)
        self._thread.start()

    def put(self, doc: dict) -> None:
        self._queue.put(doc)

    def close(self, timeout: float = 5.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout)

    def _main(self) -> None:
        while (doc := self._queue.get()) is not None:
            if self._broken:
                continue
            try:
                self._file.write(json.dumps(doc, separators=(",", ":")) + "\n")
            except (BrokenPipeError, OSError, ValueError):   # the parent is gone: run on
                self._broken = True
        try:
            self._file.close()
        except OSError:
            pass


def run(request: ProbeRequest, writer: LineWriter,
        verdicts: Callable[[ProbeResult], list[dict[str, str]]] | None = None) -> int:
    """The CLI's run (probes.outcome.run_probe), its stream on `writer`; 2 when the run could
    not start or broke, else 0. `verdicts(result)`: the front end's findings on the result
    (the TUI's: the CLI's DNS verdicts), sent before the summary."""
    from inspector.probes.driver import STOP_SIGNALS
    from inspector.probes.outcome import run_probe
    opened: list[Probe] = []

    def started(probe: Probe) -> None:
        opened.append(probe)
        writer.put({"type": "started", "pid": os.getpid(),
                    "notes": list(getattr(probe, "notes", []) or [])})

    def on_interval(interval: Interval) -> None:
        writer.put({"type": "interval", "sent": time.monotonic(), "interval": interval.to_json()})

    try:
        outcome = run_probe(request, signals=STOP_SIGNALS, keep_intervals=False,
                            on_prepared=started, on_interval=on_interval)
    except KeyboardInterrupt as exc:            # StoppedBySignal, before the run began
        writer.put({"type": "end", "signal": getattr(exc, "signum", signal.SIGINT)})
        return 0
    summary = outcome.summary
    if outcome.error and (summary is None or outcome.error != summary.error):
        writer.put({"type": "error", "message": outcome.error})     # not the run's own
    result = opened[0].result if opened else None
    if verdicts is not None and result is not None:
        writer.put({"type": "verdicts", "verdicts": verdicts(result)})
    if summary is not None:
        writer.put({"type": "summary", "summary": summary.to_json()})
    writer.put({"type": "end", "signal": outcome.signum})
    return 2 if summary is None and outcome.error else 0


def main(argv: list[str] | None = None,
         verdicts: Callable[[ProbeResult], list[dict[str, str]]] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 3 and argv[1] == PARENT_ARG and argv[2].isdigit():
        end_with_parent(int(argv[2]), signal.SIGTERM)     # stops the run the CLI's way
    # the stream gets a private descriptor; anything printed goes to stderr
    stream_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    writer = LineWriter(stream_fd)
    try:
        try:
            request = request_from_json(argv[0] if argv else sys.stdin.read())
        except (ProbeError, ValueError, TypeError) as exc:
            writer.put({"type": "error", "message": f"bad probe request: {exc}"})
            writer.put({"type": "end", "signal": None})
            return 2
        return run(request, writer, verdicts)
    finally:
        writer.close()


if __name__ == "__main__":
    raise SystemExit(main())
