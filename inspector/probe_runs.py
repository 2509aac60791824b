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


def _memcached_address(target: str) -> tuple[str, int]:
    """HOST:PORT or [IPv6]:PORT (the spec parser has checked that a port is there)."""
    host, _, port = target.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def _run_memcached(spec: ProbeSpec, seconds: float) -> tuple[dict, str | None]:
    """A short read-only run: gets of keys that are not there (nothing is stored or evicted on
    the server), 4 connections, closed loop, for `seconds`."""
    import asyncio
    from inspector.probes.latency import LatencyRecorder
    from inspector.probes.mc_workload import SizeRange
    from inspector.probes.memcached import MemcachedLoad, MemcachedProbe
    host, port = _memcached_address(spec.target)
    load = MemcachedLoad(host=host, port=port, concurrency=4, duration_s=seconds, test="get",
                         preload=False, key_count=1000, key_size=SizeRange(20, 60),
                         value_size=SizeRange(50, 50), connect_timeout_s=min(3.0, seconds),
                         request_timeout_s=min(2.0, seconds), deadline_s=seconds + 10.0)
    probe = MemcachedProbe(load)

    async def drive() -> list:
        return [sample async for sample in probe]
    try:
        import uvloop
        factory = uvloop.new_event_loop
    except ImportError:
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        samples = runner.run(drive())
    s = probe.summary
    total = LatencyRecorder()
    for rec in probe.total.values():
        total.merge(rec)
    lat = total.summary()
    interval = [lat_ns for sample in samples for lat_ns in sample.latency_ns.values()]
    summary = {
        "requests": s.ops_total, "duration_s": s.load_s, "ops_per_s": s.ops_per_s,
        "test": s.test, "connections": s.connections_opened, "address": s.address,
        "min_us": _us(lat.min_ns), "avg_us": _us(lat.avg_ns), "max_us": _us(lat.max_ns),
        "mdev_us": _us(lat.mdev_ns), **{f"{k}_us": _us(v) for k, v in lat.percentiles_ns.items()},
        "errors": dict(s.errors), "get_hits": s.get_hits, "get_misses": s.get_misses,
        "server_error": s.server.error if s.server else None,
        "intervals": {
            "p99_us": [_us(v["p99"]) for v in interval if "p99" in v],
            "avg_us": [_us(v["avg"]) for v in interval if "avg" in v],
        },
    }
    error = None if s.status == "completed" and not s.errors else f"{s.status}: {s.reason}"
    return summary, error


_RUNNERS = {"io": _run_io, "dns": _run_dns, "memcached": _run_memcached}
