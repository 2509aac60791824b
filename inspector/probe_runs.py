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


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1000.0


def _run_io(spec: ProbeSpec, seconds: float) -> tuple[dict, str | None]:
    """A short read-only ioping-style run (directory targets probe a private temp file)."""
    import asyncio
    from inspector.probes.io_latency import IoConfig, IoLatencyProbe
    from inspector.probes.io_target import TargetError, open_target
    try:
        target = open_target(spec.target)
    except TargetError as exc:
        return {}, str(exc)
    try:
        probe = IoLatencyProbe(target, IoConfig(deadline=seconds))
        result = asyncio.run(probe.run_to_end())
    finally:
        target.close()
    lat = result.latency
    summary = {
        "requests": result.requests, "duration_s": result.wall_ns / 1e9,
        "ops_per_s": result.iops_mean, "wall_ops_per_s": result.iops_wall,
        "bytes_per_s": result.bytes_per_s, "min_us": _us(lat.min_ns), "avg_us": _us(lat.avg_ns),
        "max_us": _us(lat.max_ns), "mdev_us": _us(lat.mdev_ns),
        **{f"{k}_us": _us(v) for k, v in lat.percentiles_ns.items()},
        "direct": result.direct, "description": result.description,
        "intervals": {
            "p99_us": [_us(s.stats.p99_ns) for s in result.samples if s.stats.p99_ns is not None],
            "avg_us": [_us(s.stats.avg_ns) for s in result.samples if s.stats.avg_ns is not None],
        },
    }
    return summary, result.error


def _run_dns(spec: ProbeSpec, seconds: float) -> tuple[dict, str | None]:
    """One round against the host's nameservers, plus the glibc prediction."""
    from inspector.discover.resolver import collect
    from inspector.host import HostRoot
    from inspector.model import Unknown
    from inspector.probes.dns_failover import DnsFailoverProbe, DnsProbeSettings
    from inspector.probes.dns_query import parse_server
    section = collect(HostRoot("/"))
    if isinstance(section.config, Unknown):
        return {}, f"resolver configuration: {section.config.reason}"
    cfg = section.config
    name = spec.target or (cfg.search[0] if cfg.search else ".")
    probe = DnsFailoverProbe(DnsProbeSettings(
        servers=[parse_server(s) for s in cfg.used_nameservers], resolver=cfg, name=name,
        rdtypes=["A", "AAAA"] if name != "." else ["NS"], timeout=min(seconds, cfg.effective_timeout)))
    result = probe.run_once()
    answered = [s.latency_s for s in result.servers if s.kind == "answered" and s.latency_s is not None]
    summary = {
        "requests": len(result.servers), "name": name,
        "servers": {s.server: {"kind": s.kind, "latency_us": None if s.latency_s is None else s.latency_s * 1e6}
                    for s in result.servers},
        "avg_us": sum(answered) / len(answered) * 1e6 if answered else None,
        "predicted_lookup_s": result.prediction.seconds,
        "first_server_blackholed_s": result.what_ifs[0].blackholed.seconds if result.what_ifs else None,
    }
    down = [f"{s.server} {s.kind}" for s in result.servers if s.kind != "answered"]
    return summary, ("; ".join(down) if down else None)


_RUNNERS = {"io": _run_io, "dns": _run_dns, "memcached": _not_available}
