"""Short bounded probe runs for snapshots and the recorder, through the probe layer.

Spec strings (`--probe SPEC`): `io:PATH`, `dns` (or `dns:NAME`), `memcached:HOST[:PORT]`, made
into the same ProbeRequest as the TUI's form (inspector.probes.request). A run returns
{"spec", "kind", "target", "summary": {...}, "error"} where the summary is RunSummary.figures():
requests, ops_per_s, bytes_per_s, min/avg/max/mdev_us, p50/p90/p99/p99.9_us and per-interval
values (`intervals`) that diff uses for its significance rule. A failed run keeps its error and
whatever partial figures it had; it never raises.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from inspector.bounded import TimedOut, WorkerFailed, run_forked
from inspector.probes.base import ProbeError as ProbeSpecError
from inspector.probes.request import ProbeRequest, parse_spec

__all__ = ["ProbeSpecError", "parse_probe_spec", "run_probe", "run_probe_forked"]

# A short probe run (snapshot, record) ends by its seconds plus this (set-up included: the
# IO probe writes and syncs its 64 MiB test file first) or is reported timed out.
PROBE_GRACE = 3.0


def parse_probe_spec(text: str) -> ProbeRequest:
    """`io:PATH`, `dns`, `dns:NAME` or `memcached:HOST[:PORT]`; ProbeSpecError otherwise."""
    return parse_spec(text)


def run_probe(request: ProbeRequest, seconds: float | None = None) -> dict:
    """Run `request` (for `seconds`, when given) to its end; never raises."""
    from inspector.probes.driver import ProbeDriver
    from inspector.probes.request import open_probe
    if seconds is not None:
        request = replace(request, duration=seconds)
    # what the run is filed under (history, diff): the spec's text after "kind:"
    result: dict[str, Any] = {"spec": request.text, "kind": str(request.kind),
              "target": request.text.partition(":")[2], "summary": {}, "error": None}
    probe = None
    try:
        probe = open_probe(request)
        ProbeDriver(probe).run()
    except ProbeSpecError as exc:
        result["error"] = str(exc)
    except Exception as exc:  # a probe bug is reported in the snapshot, never fatal
        result["error"] = f"{type(exc).__name__}: {exc}"
    run = probe.result if probe is not None else None
    if run is not None:
        summary = run.summary()
        result["summary"] = summary.figures()
        result["error"] = result["error"] or summary.error
    return result


def run_probe_forked(spec: ProbeRequest, seconds: float) -> dict:
    """run_probe in a child: a probe whose target hangs (an IO probe on a FUSE mount that
    never answers) is a failed run "timed out after N s", and the command goes on with the
    rest of its sample."""
    try:
        return run_forked(lambda: run_probe(spec, seconds), seconds + PROBE_GRACE)
    except (TimedOut, WorkerFailed) as exc:
        return {"spec": spec.text, "kind": spec.kind, "target": spec.target, "summary": {},
                "error": str(exc)}
