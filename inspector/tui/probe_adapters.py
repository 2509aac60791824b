"""Adapters from each probe module's API to the TUI's interval updates.

An adapter is `async def adapter(run) -> AsyncIterator[dict]` (run: ProbeRun, whose `request`
says what to do). It yields dicts with the fields of ProbeUpdate (minus run_id) every interval,
then one {"summary": ...}. It may set `run.stop_hook` to the probe's own graceful stop (called
on the probe's loop), which keeps the partial figures; otherwise stopping cancels the task.
Only the probes that have landed are registered; the Probes screen says which have not.
"""
from __future__ import annotations

from typing import Any, AsyncIterator

from inspector.tui.probe_runs import KINDS, probe_available


def _final_extra(percentiles: dict, buckets: list, max_ns: Any, note: str = "") -> dict:
    return {"final": True, "percentiles_ns": dict(percentiles), "buckets": list(buckets),
            "max_ns": max_ns, "note": note}


# raw IO latencies held before folding into the histogram: 2 MB, not the CLI's 32 MB (the
# TUI's probe may run for hours; bench_tui's Probes screen went 57 -> 63 MB in 15 s more)
TUI_RAW_LIMIT = 1 << 18


async def io_adapter(run) -> AsyncIterator[dict]:
    from inspector.probes.io_latency import (READ, WRITE, IoConfig, IoLatencyProbe,
                                             uses_native_loop)
    from inspector.probes.io_target import open_target

    req = run.request
    target = open_target(req.target, write=req.write)  # TargetError: one-line reason
    try:
        probe = IoLatencyProbe(target, IoConfig(
            mode=WRITE if req.write else READ, deadline=req.duration, count=req.count,
            jobs=req.concurrency, sample_period=req.interval, raw_limit=TUI_RAW_LIMIT))
        run.stop_hook = probe.stop
        # "python": the C loop is not built, and this screen's own work can show as latency
        loop = "c" if uses_native_loop(probe.cfg) else "python"
        ops = 0
        async for s in probe:
            ops += s.requests
            st = s.stats
            # interval p50 when the probe provides it, else the interval mean
            p50 = getattr(st, "p50_ns", None)
            yield {"elapsed": s.t, "ops": ops, "ops_per_s": s.iops,
                   "p50": p50 if p50 is not None else getattr(st, "avg_ns", None),
                   "p99": getattr(st, "p99_ns", None), "max": getattr(st, "max_ns", None),
                   "errors": 1 if s.error else 0,
                   "extra": {"bytes_per_s": s.bytes_per_s, "primary": "p50" if p50 is not None else "avg",
                             "loop": loop}}
        res = probe.result
        if res is not None:
            lat = res.latency
            yield {"elapsed": res.wall_ns / 1e9, "ops": res.requests, "ops_per_s": res.iops_wall,
                   "p50": lat.p("p50"), "p99": lat.p("p99"), "max": lat.max_ns,
                   "errors": 1 if res.error else 0,
                   "extra": {**_final_extra(lat.percentiles_ns, res.histogram(), lat.max_ns,
                                            res.description), "loop": loop}}
            if res.error:
                raise RuntimeError(res.error)
        yield {"summary": res}
    finally:
        target.close()


def _split_target(target: str) -> tuple[str, int]:
    from inspector.probes.memcached import DEFAULT_PORT
    host, _, port = target.rpartition(":") if ":" in target else (target, "", "")
    host = host or target
    try:
        return host.strip("[]"), int(port) if port else DEFAULT_PORT
    except ValueError:
        raise ValueError(f"memcached target must be HOST[:PORT], not {target!r}") from None


async def memcached_adapter(run) -> AsyncIterator[dict]:
    from inspector.probes.memcached import MemcachedLoad, MemcachedProbe

    req = run.request
    host, port = _split_target(req.target)
    test = "set" if req.write else "get"
    probe = MemcachedProbe(MemcachedLoad(host=host, port=port, concurrency=req.concurrency,
                                         duration_s=req.duration, test=test,
                                         deadline_s=req.duration + 30.0,
                                         sample_interval_s=req.interval))
    run.stop_hook = probe.stop
    ops = 0
    async for s in probe:
        ops += sum(s.ops.values())
        op = max(s.latency_ns, key=lambda k: s.ops.get(k, 0), default=None)
        lat = s.latency_ns.get(op, {}) if op else {}
        yield {"elapsed": s.t_s, "ops": ops, "ops_per_s": s.ops_per_s, "p50": lat.get("p50"),
               "p99": lat.get("p99"), "max": lat.get("max"), "errors": sum(s.errors.values()),
               "extra": {"connections": s.connections}}
    summary = probe.summary
    if summary is not None:
        op = max(summary.ops, key=lambda k: summary.ops[k].ok, default=None) if summary.ops else None
        if op is not None:
            lat = summary.ops[op].latency
            rec = probe.total.get(op)
            yield {"elapsed": summary.load_s, "ops": summary.ops_total,
                   "ops_per_s": summary.ops_per_s, "p50": lat.p("p50"), "p99": lat.p("p99"),
                   "max": lat.max_ns, "errors": summary.error_total,
                   "extra": _final_extra(lat.percentiles_ns, rec.buckets() if rec else [],
                                         lat.max_ns, f"{summary.status}: {summary.reason}")}
        if summary.status == "failed":
            raise RuntimeError(summary.reason)
    yield {"summary": summary}


def _dns_servers(target: str) -> tuple[list[tuple[str, int]], Any]:
    """A resolv.conf path (its nameservers, as glibc reads them) or "ADDR[:PORT],..." (with
    glibc's default options)."""
    import os

    from inspector.discover.resolver_conf import parse_resolv_conf
    if os.path.exists(target):
        with open(target, encoding="utf-8", errors="replace") as f:
            conf = parse_resolv_conf(f.read())
        return [(ns, 53) for ns in conf.nameservers], conf
    servers = []
    for part in target.replace(" ", ",").split(","):
        if not part:
            continue
        if part.startswith("["):                       # [v6]:port
            addr, _, port = part[1:].partition("]")
            port = port.lstrip(":")
        elif part.count(":") == 1:
            addr, _, port = part.partition(":")
        else:
            addr, port = part, ""
        servers.append((addr, int(port) if port else 53))
    conf = parse_resolv_conf("".join(f"nameserver {a}\n" for a, _ in servers))
    return servers, conf


async def dns_adapter(run) -> AsyncIterator[dict]:
    from inspector.probes.dns_failover import DnsFailoverProbe, DnsProbeSettings
    from inspector.probes.latency import LatencyRecorder

    req = run.request
    servers, conf = _dns_servers(req.target)
    if not servers:
        raise ValueError(f"no nameservers in {req.target}")
    interval = max(req.interval, 0.5)
    probe = DnsFailoverProbe(DnsProbeSettings(
        servers=servers, resolver=conf, count=max(1, int(req.duration / interval)),
        interval=interval))
    run.stop_hook = probe.stop
    recorder = LatencyRecorder()
    ops = errors = 0
    round_no, per_server = None, {}

    def flush(elapsed: float) -> dict:
        values = sorted(v for v in per_server.values() if v is not None)
        mid = values[len(values) // 2] if values else None
        # across servers: median, slowest answering, and a silent server counts as missing
        return {"elapsed": elapsed, "ops": ops, "ops_per_s": len(per_server) / interval,
                "p50": None if mid is None else mid * 1e6,
                "p99": None if not values else values[-1] * 1e6,
                "max": None if not values else values[-1] * 1e6, "errors": errors,
                "extra": {"per_server_ms": dict(per_server)}}

    elapsed = 0.0
    async for s in probe.samples():
        if round_no is not None and s.round != round_no and per_server:
            yield flush(elapsed)
            per_server = {}
        round_no, elapsed = s.round, s.t
        ops += 1
        per_server[s.server] = s.latency_ms
        if s.latency_ms is None:
            errors += 1
        else:
            recorder.record(int(s.latency_ms * 1e6))
        if len(per_server) == len(servers):
            yield flush(elapsed)
            per_server = {}
    if per_server:
        yield flush(elapsed)
    result = probe.result()
    summary = recorder.summary()
    prediction = getattr(result, "prediction", None)
    seconds, outcome = getattr(prediction, "seconds", None), getattr(prediction, "outcome", "")
    note = f"glibc lookup now: {outcome}" + (f" after {seconds * 1000:.1f} ms" if seconds else "")
    yield {"elapsed": elapsed, "ops": ops, "ops_per_s": 0.0, "p50": summary.p("p50"),
           "p99": summary.p("p99"), "max": summary.max_ns, "errors": errors,
           "extra": _final_extra(summary.percentiles_ns, recorder.buckets(), summary.max_ns, note)}
    yield {"summary": result}


_FACTORIES = {"io": io_adapter, "memcached": memcached_adapter, "dns": dns_adapter}
ADAPTERS: dict = {kind: _FACTORIES[kind] for kind in KINDS
                  if kind in _FACTORIES and probe_available(kind) is None}
