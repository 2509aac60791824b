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


async def io_adapter(run) -> AsyncIterator[dict]:
    from inspector.probes.io_latency import READ, WRITE, IoConfig, IoLatencyProbe
    from inspector.probes.io_target import open_target

    req = run.request
    target = open_target(req.target, write=req.write)  # TargetError: one-line reason
    try:
        probe = IoLatencyProbe(target, IoConfig(
            mode=WRITE if req.write else READ, deadline=req.duration, count=req.count,
            jobs=req.concurrency, sample_period=req.interval))
        run.stop_hook = probe.stop
        ops = 0
        async for s in probe:
            ops += s.requests
            st = s.stats
            # interval p50 when the probe provides it, else the interval mean
            p50 = getattr(st, "p50_ns", None)
            yield {"elapsed": s.t, "ops": ops, "ops_per_s": s.iops,
                   "p50": p50 if p50 is not None else getattr(st, "avg_ns", None),
                   "p99": getattr(st, "p99_ns", None), "max": getattr(st, "max_ns", None),
                   "errors": 1 if s.error else 0, "extra": {"bytes_per_s": s.bytes_per_s}}
        res = probe.result
        if res is not None:
            lat = res.latency
            yield {"elapsed": res.wall_ns / 1e9, "ops": res.requests, "ops_per_s": res.iops_wall,
                   "p50": lat.p("p50"), "p99": lat.p("p99"), "max": lat.max_ns,
                   "errors": 1 if res.error else 0,
                   "extra": _final_extra(lat.percentiles_ns, res.histogram(), lat.max_ns,
                                         res.description)}
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


_FACTORIES = {"io": io_adapter, "memcached": memcached_adapter}
ADAPTERS: dict = {kind: _FACTORIES[kind] for kind in KINDS
                  if kind in _FACTORIES and probe_available(kind) is None}
