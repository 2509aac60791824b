"""Short bounded probe runs for snapshots and the recorder, in one normalised form.

Spec strings: `io:PATH`, `dns` (or `dns:NAME`), `memcached:HOST:PORT`. A run returns
{"spec", "kind", "target", "summary": {...}, "error"} where the summary holds requests,
ops_per_s, bytes_per_s, min/avg/max/mdev_us, p50/p90/p99/p99.9_us and per-interval values
(`intervals`) that diff uses for its significance rule. A failed run keeps its error and
whatever partial figures it had; it never raises.
"""
from __future__ import annotations

from dataclasses import dataclass


class ProbeSpecError(ValueError):
    pass


@dataclass(frozen=True)
class ProbeSpec:
    kind: str
    target: str
    text: str


def parse_probe_spec(text: str) -> ProbeSpec:
    kind, _, rest = text.partition(":")
    if kind == "io":
        if not rest:
            raise ProbeSpecError(f"--probe {text}: io needs a path (io:PATH)")
        return ProbeSpec("io", rest, text)
    if kind == "dns":
        return ProbeSpec("dns", rest, text)
    if kind == "memcached":
        host, _, port = rest.rpartition(":")
        if not host or not port.isdigit():
            raise ProbeSpecError(f"--probe {text}: memcached needs HOST:PORT (memcached:127.0.0.1:11211)")
        return ProbeSpec("memcached", rest, text)
    raise ProbeSpecError(f"--probe {text}: unknown probe (use io:PATH, dns or memcached:HOST:PORT)")


def run_probe(spec: ProbeSpec, seconds: float) -> dict:
    result = {"spec": spec.text, "kind": spec.kind, "target": spec.target, "summary": {}, "error": None}
    try:
        runner = _RUNNERS[spec.kind]
    except KeyError:
        result["error"] = f"unknown probe kind {spec.kind}"
        return result
    try:
        summary, error = runner(spec, seconds)
    except Exception as exc:  # a probe bug is reported in the snapshot, never fatal
        summary, error = {}, f"{type(exc).__name__}: {exc}"
    result["summary"], result["error"] = summary, error
    return result


def _not_available(spec: ProbeSpec, seconds: float) -> tuple[dict, str]:
    return {}, f"{spec.kind} probe not available in this build"


_RUNNERS = {"io": _not_available, "dns": _not_available, "memcached": _not_available}
