"""Numeric metrics derived from the report, shared by `inspector check` (perfdata) and
`inspector export --prometheus`. Metric names and meanings are declared once, in METRICS.

Extraction reads the JSON form of the report (inspector.model.to_jsonable), so it depends only
on the documented schema, and a section that is unknown simply yields no series for it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from inspector.model import Report, to_jsonable


@dataclass(frozen=True)
class MetricDef:
    name: str          # Prometheus name, without the inspector_ prefix
    help: str
    type: str = "gauge"
    unit: str = ""     # Nagios perfdata unit: "", "s", "%", "B", "c"


@dataclass
class Sample:
    name: str
    value: float
    labels: dict[str, str] = field(default_factory=dict)


METRICS: dict[str, MetricDef] = {m.name: m for m in [
    MetricDef("findings", "Number of findings by level", unit=""),
    MetricDef("health_status", "Worst finding level: 0 ok, 1 warn, 2 crit, 3 unknown"),
    MetricDef("section_up", "1 when the section was collected, 0 when it is unknown"),
    MetricDef("collector_seconds", "Time each collector took", unit="s"),
    MetricDef("block_device_size_bytes", "Size of a block device", unit="B"),
    MetricDef("block_device_read_only", "1 when the block device is read-only"),
    MetricDef("md_degraded", "Number of missing members of an md array"),
    MetricDef("md_sync_progress_ratio", "Resync/recovery progress of an md array (0..1)"),
    MetricDef("dm_suspended", "1 when a device-mapper device is suspended"),
    MetricDef("drive_health_level", "Drive/flash health: 0 ok, 1 warn, 2 crit, 3 unknown"),
    MetricDef("nic_up", "1 when the NIC is operationally up"),
    MetricDef("nic_mtu_bytes", "MTU of a NIC", unit="B"),
    MetricDef("nic_errors_total", "NIC error counters since boot", type="counter", unit="c"),
    MetricDef("nic_offload_enabled", "1 when an offload feature is on"),
    MetricDef("resolver_nameservers", "Nameservers glibc will use (at most 3)"),
    MetricDef("resolver_first_server_loss_seconds", "Predicted lookup delay when the first nameserver is blackholed", unit="s"),
    MetricDef("resolver_all_servers_loss_seconds", "Predicted worst-case lookup time when all nameservers are blackholed", unit="s"),
    MetricDef("cpu_steal_ratio", "Share of CPU time stolen by the hypervisor since boot (0..1)"),
    MetricDef("load_average", "Load average", unit=""),
    MetricDef("virt_layers", "Virtualization layers detected (info metric, value 1)"),
]}

LEVEL_VALUE = {"ok": 0, "warn": 1, "crit": 2, "unknown": 3}


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    return None


def _get(d: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _first(d: dict, *names: str) -> Any:
    for name in names:
        if isinstance(d, dict) and name in d:
            return d[name]
    return None


def collect_metrics(report: Report | dict) -> list[Sample]:
    doc = report if isinstance(report, dict) else to_jsonable(report)
    return list(_iter_metrics(doc))


def _iter_metrics(doc: dict) -> Iterator[Sample]:
    findings = doc.get("findings", [])
    for level in ("crit", "warn", "unknown"):
        yield Sample("findings", sum(1 for f in findings if f.get("level") == level), {"level": level})
    worst = max((LEVEL_VALUE.get(f.get("level"), 0) for f in findings), default=0)
    yield Sample("health_status", worst)
    sections = doc.get("sections", {})
    for name, section in sections.items():
        up = not (isinstance(section, dict) and set(section) == {"unknown"})
        yield Sample("section_up", 1 if up else 0, {"section": name})
    for name, seconds in (doc.get("timings") or {}).items():
        yield Sample("collector_seconds", seconds, {"collector": name})
    yield from _storage(sections.get("storage"))
    yield from _net(sections.get("net"))
    yield from _dns(sections.get("dns"))
    yield from _cpu(sections.get("cpu"))
    yield from _virt(sections.get("virt"))


def _storage(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    devices = s.get("devices", []) or []
    if isinstance(devices, dict):  # the storage section: devices, md and dm keyed by kernel name
        devices = [{**d, "md": (s.get("md") or {}).get(n), "dm": (s.get("dm") or {}).get(n)}
                   for n, d in devices.items() if isinstance(d, dict)]
    for dev in devices:
        if not isinstance(dev, dict) or not isinstance(dev.get("name"), str):
            continue
        labels = {"device": dev["name"]}
        if (size := _num(_first(dev, "size_bytes", "size"))) is not None:
            yield Sample("block_device_size_bytes", size, labels)
        if (ro := _num(_first(dev, "read_only", "ro"))) is not None:
            yield Sample("block_device_read_only", ro, labels)
        md = dev.get("md")
        if isinstance(md, dict):
            if (deg := _num(md.get("degraded"))) is not None:
                yield Sample("md_degraded", deg, labels)
            progress = _num(_first(md, "sync_progress", "progress", "progress_percent"))
            if progress is not None:
                yield Sample("md_sync_progress_ratio", progress if progress <= 1 else progress / 100, labels)
        dm = dev.get("dm")
        if isinstance(dm, dict) and (susp := _num(dm.get("suspended"))) is not None:
            yield Sample("dm_suspended", susp, labels)
    for name, health in (s.get("health") or {}).items():
        level = _first(health, "level", "status") if isinstance(health, dict) else None
        if isinstance(level, str) and level.lower() in LEVEL_VALUE:
            yield Sample("drive_health_level", LEVEL_VALUE[level.lower()], {"device": name})


def _net(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    for nic in _first(s, "nics", "interfaces") or []:
        if not isinstance(nic, dict) or not isinstance(nic.get("name"), str):
            continue
        labels = {"nic": nic["name"]}
        state = nic.get("operstate")
        if isinstance(state, str):
            yield Sample("nic_up", 1 if state == "up" else 0, labels)
        if (mtu := _num(nic.get("mtu"))) is not None:
            yield Sample("nic_mtu_bytes", mtu, labels)
        for key in ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped"):
            value = _num(nic.get(key))
            if value is None:
                value = _num(_get(nic, "statistics", key))
            if value is not None:
                yield Sample("nic_errors_total", value, {**labels, "counter": key})
        features = nic.get("offloads") or nic.get("features")
        if isinstance(features, dict):
            for fname in ("tcp-segmentation-offload", "generic-segmentation-offload",
                          "generic-receive-offload", "large-receive-offload"):
                feat = features.get(fname)
                on = _first(feat, "on", "enabled") if isinstance(feat, dict) else feat
                if isinstance(on, bool):
                    yield Sample("nic_offload_enabled", 1 if on else 0, {**labels, "feature": fname})
        elif isinstance(features, list):
            for feat in features:
                if isinstance(feat, dict) and feat.get("name") in (
                        "tcp-segmentation-offload", "generic-segmentation-offload",
                        "generic-receive-offload", "large-receive-offload"):
                    on = _first(feat, "on", "enabled")
                    if isinstance(on, bool):
                        yield Sample("nic_offload_enabled", 1 if on else 0, {**labels, "feature": feat["name"]})


def _dns(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    servers = _first(s, "used_nameservers", "nameservers")
    if isinstance(servers, list):
        yield Sample("resolver_nameservers", min(len(servers), 3))
    first = _num(_first(s, "first_server_loss_delay_s", "first_server_blackholed_delay_s"))
    if first is None:
        first = _num(_get(s, "delays", "first_server_blackholed_s"))
    if first is not None:
        yield Sample("resolver_first_server_loss_seconds", first)
    worst = _num(_first(s, "all_servers_loss_delay_s", "all_servers_blackholed_delay_s"))
    if worst is None:
        worst = _num(_get(s, "delays", "all_servers_blackholed_s"))
    if worst is not None:
        yield Sample("resolver_all_servers_loss_seconds", worst)


def _cpu(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    steal = _num(_first(s, "steal_percent", "steal_pct"))
    if steal is not None:
        yield Sample("cpu_steal_ratio", steal / 100)
    load = s.get("load_average")
    if isinstance(load, list) and len(load) == 3:
        for period, value in zip(("1m", "5m", "15m"), load):
            if (v := _num(value)) is not None:
                yield Sample("load_average", v, {"period": period})
    elif isinstance(load, dict):
        for period, value in load.items():
            if (v := _num(value)) is not None:
                yield Sample("load_average", v, {"period": str(period)})


def _virt(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    for depth, layer in enumerate(s.get("layers", []) or []):
        if isinstance(layer, dict):
            kind = str(_first(layer, "kind", "layer") or "")
            verdict = str(_first(layer, "verdict", "name") or "")
            flavor = str(layer.get("flavor") or "")
            yield Sample("virt_layers", 1, {"depth": str(depth), "kind": kind, "verdict": verdict,
                                            "flavor": flavor})
