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
    MetricDef("health_status", "Overall status as `inspector check`: 0 ok, 1 warn, 2 crit, 3 unknown only"),
    MetricDef("section_up", "1 when the section was collected without timeout or error AND its "
                            "primary input is known and not empty (storage: block devices, net: "
                            "NICs, dns: resolv.conf, cpu: online CPUs or model, virt: evidence for a "
                            "layer); "
                            "else 0"),
    MetricDef("collector_seconds", "Time each collector took", unit="s"),
    MetricDef("block_device_size_bytes", "Size of a block device", unit="B"),
    MetricDef("block_device_read_only", "1 when the block device is read-only"),
    MetricDef("md_degraded", "Number of missing members of an md array"),
    MetricDef("md_sync_progress_ratio", "Resync/recovery progress of an md array (0..1)"),
    MetricDef("dm_suspended", "1 when a device-mapper device is suspended"),
    MetricDef("drive_health_level", "Drive/flash health: 0 ok, 1 warn, 2 crit, 3 unknown "
                                    "(the health tool failed, timed out or is missing); "
                                    "virtual disks (virtio, Xen) have no health and no series"),
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
    MetricDef("resolver_nameserver_info", "Nameservers glibc uses, in order (info metric, value 1)"),
    MetricDef("drive_temperature_celsius", "Drive or flash card temperature", unit=""),
    MetricDef("flash_reserves_percent", "Fusion-io reserve space left", unit="%"),
    MetricDef("flash_rated_pbw_remaining_percent", "Fusion-io rated PBW remaining", unit="%"),
    MetricDef("flash_bad_block_rate_percent", "Huawei ES3000 max bad block rate", unit="%"),
    MetricDef("flash_rw_errors", "Huawei ES3000 read/write errors", unit=""),
    MetricDef("flash_io_timeouts", "Huawei ES3000 IO timeouts", unit=""),
    MetricDef("nvme_available_spare_percent", "NVMe available spare", unit="%"),
    MetricDef("nvme_percent_used", "NVMe endurance used", unit="%"),
    MetricDef("drive_media_errors", "NVMe media errors", unit=""),
]}

LEVEL_VALUE = {"ok": 0, "warn": 1, "crit": 2, "unknown": 3}
UNKNOWN_LEVEL = LEVEL_VALUE["unknown"]

# The input without which a section says nothing: any one of these fields known = input known.
PRIMARY_INPUTS: dict[str, tuple[str, ...]] = {
    "storage": ("devices",),       # /sys/block
    "net": ("nics",),              # /sys/class/net
    "dns": ("config",),            # /etc/resolv.conf
    "cpu": ("online", "model"),    # /sys/devices/system/cpu/online, /proc/cpuinfo
    "virt": ("layers",),           # and at least one layer has evidence (see section_up)
}


def _is_unknown(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"unknown"}


def section_up(name: str, section: Any) -> bool:
    """Up = collected without timeout or error (the section is not Unknown) AND its primary
    input is known (a dns section parsed from a missing resolv.conf is not up)."""
    if not isinstance(section, dict) or _is_unknown(section):
        return False
    fields = PRIMARY_INPUTS.get(name)
    if not fields:
        return True
    if name == "virt":   # verdicts are always filled in; with no evidence at all they are guesses
        layers = section.get("layers")
        return isinstance(layers, list) and any(
            isinstance(l, dict) and isinstance(l.get("evidence"), list) and l["evidence"]
            for l in layers)
    return any(_input_known(section.get(f)) for f in fields)


def _input_known(value: Any) -> bool:
    """Known: present, not Unknown, and not an empty listing (no /sys/block entries at all
    means /sys/block could not be read, not a host without disks)."""
    if value is None or _is_unknown(value):
        return False
    return not (isinstance(value, (dict, list, str)) and len(value) == 0)


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


def collect_metrics(report: Report | dict) -> list[Sample]:
    doc = report if isinstance(report, dict) else to_jsonable(report)
    return list(_iter_metrics(doc))


def _iter_metrics(doc: dict) -> Iterator[Sample]:
    findings = doc.get("findings", [])
    for level in ("crit", "warn", "unknown"):
        yield Sample("findings", sum(1 for f in findings if f.get("level") == level), {"level": level})
    levels = {f.get("level") for f in findings}
    # as `inspector check`: crit beats warn beats "could not check"
    worst = 2 if "crit" in levels else 1 if "warn" in levels else 3 if "unknown" in levels else 0
    sections = doc.get("sections", {})
    if worst < 2 and not any(section_up(n, v) for n, v in sections.items()):
        worst = 3            # nothing was collected: not OK, and a WARN would be a guess
    yield Sample("health_status", worst)
    for name, section in sections.items():
        yield Sample("section_up", 1 if section_up(name, section) else 0, {"section": name})
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
    devices = s.get("devices") or {}
    for name, dev in (devices.items() if isinstance(devices, dict) else []):
        if not isinstance(dev, dict):
            continue
        labels = {"device": name}
        if (size := _num(dev.get("size_bytes"))) is not None:
            yield Sample("block_device_size_bytes", size, labels)
        if (ro := _num(dev.get("read_only"))) is not None:
            yield Sample("block_device_read_only", ro, labels)
    for name, md in (s.get("md") or {}).items():
        if not isinstance(md, dict):
            continue
        if (deg := _num(md.get("degraded"))) is not None:
            yield Sample("md_degraded", deg, {"device": name})
        if (pct := _num(md.get("progress_percent"))) is not None:
            yield Sample("md_sync_progress_ratio", pct / 100, {"device": name})
    for name, dm in (s.get("dm") or {}).items():
        if isinstance(dm, dict) and (susp := _num(dm.get("suspended"))) is not None:
            yield Sample("dm_suspended", susp, {"device": name, "dm_name": str(dm.get("name") or "")})
    for name, health in (s.get("health") or {}).items():
        if not isinstance(health, dict):
            continue
        family = _get(devices, name, "family") if isinstance(devices, dict) else None
        if _is_unknown(health) and family in NO_HEALTH_FAMILIES:
            continue     # nothing to ask, nothing failed: as `check`, which says nothing here
        level = health.get("level")
        # a health tool that failed or timed out is the case an alert must see: value 3
        value = LEVEL_VALUE.get(level.lower(), UNKNOWN_LEVEL) if isinstance(level, str) \
            else UNKNOWN_LEVEL
        yield Sample("drive_health_level", value,
                     {"device": name, "kind": str(health.get("kind") or "")})
        for field_name, metric in DRIVE_GAUGES.items():
            if (value := _num(health.get(field_name))) is not None:
                yield Sample(metric, value, {"device": name})


# Virtual disks (virtio_blk, Xen blkfront) have no health source at all: their health block is
# unknown by nature, not because a tool failed, so they get no drive_health_level series (a 3
# there would page for every VM in a fleet that alerts on "health unknown").
NO_HEALTH_FAMILIES = {"virtio", "xen"}

# drive/flash health fields exported as gauges (field in the model -> metric)
DRIVE_GAUGES = {
    "temperature_c": "drive_temperature_celsius",
    "reserves_pct": "flash_reserves_percent",
    "pbw_remaining_pct": "flash_rated_pbw_remaining_percent",
    "max_bad_block_rate_pct": "flash_bad_block_rate_percent",
    "rw_error": "flash_rw_errors",
    "io_timeout": "flash_io_timeouts",
    "available_spare_pct": "nvme_available_spare_percent",
    "percent_used": "nvme_percent_used",
    "media_errors": "drive_media_errors",
}
OFFLOADS_EXPORTED = ("tcp-segmentation-offload", "generic-segmentation-offload",
                     "generic-receive-offload", "large-receive-offload")


def _net(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    for nic in s.get("nics") or []:
        if not isinstance(nic, dict) or not isinstance(nic.get("name"), str):
            continue
        labels = {"nic": nic["name"]}
        if isinstance(nic.get("operstate"), str):
            yield Sample("nic_up", 1 if nic["operstate"] == "up" else 0, labels)
        if (mtu := _num(nic.get("mtu"))) is not None:
            yield Sample("nic_mtu_bytes", mtu, labels)
        for key in ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped"):
            if (value := _num(_get(nic, "statistics", key))) is not None:
                yield Sample("nic_errors_total", value, {**labels, "counter": key})
        for feat in nic.get("offloads") or []:
            if isinstance(feat, dict) and feat.get("name") in OFFLOADS_EXPORTED \
                    and isinstance(feat.get("on"), bool):
                yield Sample("nic_offload_enabled", 1 if feat["on"] else 0,
                             {**labels, "feature": feat["name"]})


def _dns(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    servers = s.get("used_nameservers")
    if isinstance(servers, list):
        yield Sample("resolver_nameservers", len(servers))
        for index, server in enumerate(servers):
            yield Sample("resolver_nameserver_info", 1, {"nameserver": str(server),
                                                         "position": str(index + 1)})
    if (first := _num(s.get("first_server_loss_delay_s"))) is not None:
        yield Sample("resolver_first_server_loss_seconds", first)
    if (worst := _num(s.get("all_servers_loss_delay_s"))) is not None:
        yield Sample("resolver_all_servers_loss_seconds", worst)


def _cpu(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    if (steal := _num(s.get("steal_percent"))) is not None:
        yield Sample("cpu_steal_ratio", steal / 100)
    load = s.get("load_average")
    if isinstance(load, list):
        for period, value in zip(("1m", "5m", "15m"), load):
            if (v := _num(value)) is not None:
                yield Sample("load_average", v, {"period": period})


def _virt(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    for depth, layer in enumerate(s.get("layers", []) or []):
        if isinstance(layer, dict):
            kind = str(layer.get("kind") or "")
            verdict = str(layer.get("verdict") or "")
            flavor = str(layer.get("flavor") or "")
            yield Sample("virt_layers", 1, {"depth": str(depth), "kind": kind, "verdict": verdict,
                                            "flavor": flavor})
