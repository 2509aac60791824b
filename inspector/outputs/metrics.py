"""Numeric metrics derived from the report, shared by `inspector check` (perfdata) and
`inspector export --prometheus`. Metric names and meanings are declared once, in METRICS.

Names follow the Prometheus guide: base units (seconds, bytes), 0-1 shares end in `_ratio`,
cumulative counters are typed counter and end in `_total`, info metrics end in `_info` and
have the value 1. The names this replaced are still written for one release, with the same
labels and their old units, and a HELP text that starts with DEPRECATED and names the
replacement (DEPRECATED_NAMES).

Extraction reads the JSON form of the report (inspector.model.to_jsonable), so it depends only
on the documented schema, and a section that is unknown simply yields no series for it."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from inspector import __version__
from inspector.discover.drives import kind_of
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


_CURRENT: list[MetricDef] = [
    MetricDef("build_info", "Inspector version that wrote the metrics (info metric, value 1)"),
    MetricDef("findings", "Number of findings by level"),
    MetricDef("live_finding", "A live finding active now (value 1), by code, subject and "
                              "level (record --samples --textfile, export --live)"),
    MetricDef("health_status", "Overall status as `inspector check` (no thresholds, nothing "
                               "ignored): 0 ok, 1 warn, 2 crit, 3 unknown (nothing worse than "
                               "warn found, and a section was not collected, or only unknown "
                               "findings)"),
    MetricDef("section_up", "1 when the section was collected without timeout or error AND its "
                            "primary input is known and not empty (storage: block devices, net: "
                            "NICs, dns: resolv.conf, cpu: online CPUs or model, virt: evidence for a "
                            "layer); "
                            "else 0"),
    MetricDef("collector_duration_seconds", "Time each section's collector took", unit="s"),
    MetricDef("rules_duration_seconds", "Time the health rules took", unit="s"),
    MetricDef("report_duration_seconds", "Time the whole report took (collectors in "
                                         "parallel, then the rules)", unit="s"),
    MetricDef("block_device_size_bytes", "Size of a block device", unit="B"),
    MetricDef("block_device_read_only", "1 when the block device is read-only"),
    MetricDef("md_degraded", "Number of missing members of an md array"),
    MetricDef("md_recovering", "1 when a degraded md array is rebuilding (recovery or resync "
                               "running or delayed), 0 otherwise"),
    MetricDef("md_sync_progress_ratio", "Resync/recovery progress of an md array (0..1)"),
    MetricDef("dm_suspended", "1 when a device-mapper device is suspended"),
    MetricDef("drive_health_level", "Drive/flash health: 0 ok, 1 warn, 2 crit, 3 unknown "
                                    "(the health tool failed, timed out or is missing); "
                                    "virtual disks (virtio, Xen) have no health and no series; "
                                    "kind: fio, hio, nvme, smart (SATA/SAS), from the device "
                                    "name when the tool failed, so the series stays one"),
    MetricDef("drive_info", "A drive or flash card and which one to pull: model, serial, "
                            "firmware (smartctl_exporter's smartctl_device; the tool's answer, "
                            "else sysfs; empty when neither says) (info metric, value 1)"),
    MetricDef("drive_temperature_celsius", "Drive or flash card temperature"),
    MetricDef("drive_media_errors_total", "NVMe media and data integrity errors", type="counter",
              unit="c"),
    MetricDef("flash_reserves_ratio", "Fusion-io reserve space left (0..1)"),
    MetricDef("flash_reserves_warn_ratio", "Fusion-io card's own warning level for its "
                                           "reserves (0..1)"),
    MetricDef("flash_rated_pbw_remaining_ratio", "Fusion-io rated PBW remaining (0..1)"),
    MetricDef("flash_bad_block_rate_ratio", "Huawei ES3000 max bad block rate (0..1)"),
    MetricDef("flash_rw_errors_total", "Huawei ES3000 read/write errors", type="counter",
              unit="c"),
    MetricDef("flash_io_timeouts_total", "Huawei ES3000 IO timeouts", type="counter", unit="c"),
    MetricDef("nvme_available_spare_ratio", "NVMe available spare (0..1)"),
    MetricDef("nvme_available_spare_threshold_ratio", "NVMe vendor threshold for the available "
                                                      "spare (0..1): at or below it the drive "
                                                      "is critical"),
    MetricDef("nvme_endurance_used_ratio", "NVMe rated endurance used (0..1, above 1 past the "
                                           "rating)"),
    MetricDef("nic_info", "A NIC and what it is: kind (physical, virtual, bridge, bond, vlan, "
                          "loopback ...) and driver (info metric, value 1). NIC series are "
                          "labelled device, as node_exporter's node_network_*; their nic label "
                          "is DEPRECATED (the same value), removed in the next release"),
    MetricDef("nic_up", "1 when the NIC is operationally up"),
    MetricDef("nic_admin_up", "1 when the NIC is administratively up (IFF_UP)"),
    MetricDef("nic_carrier", "1 when the NIC has carrier (link); no series when it is "
                             "administratively down"),
    MetricDef("nic_mtu_bytes", "MTU of a NIC", unit="B"),
    MetricDef("nic_receive_errors_total", "Receive errors since boot (rx_errors)",
              type="counter", unit="c"),
    MetricDef("nic_transmit_errors_total", "Transmit errors since boot (tx_errors)",
              type="counter", unit="c"),
    MetricDef("nic_receive_drops_total", "Received packets dropped since boot (rx_dropped: "
                                         "no buffer, filtered; not errors)", type="counter",
              unit="c"),
    MetricDef("nic_transmit_drops_total", "Packets dropped on transmit since boot (tx_dropped)",
              type="counter", unit="c"),
    MetricDef("nic_receive_packets_total", "Packets received since boot", type="counter",
              unit="c"),
    MetricDef("nic_transmit_packets_total", "Packets transmitted since boot", type="counter",
              unit="c"),
    MetricDef("nic_offload_enabled", "1 when an offload feature is on"),
    MetricDef("resolver_nameservers", "Nameservers glibc will use (at most 3)"),
    MetricDef("resolver_nameserver_info", "Nameservers glibc uses, in order (info metric, value 1)"),
    MetricDef("resolver_first_server_loss_seconds",
              "Predicted lookup delay when the first nameserver is blackholed", unit="s"),
    MetricDef("resolver_all_servers_loss_seconds",
              "Predicted worst-case lookup time when all nameservers are blackholed", unit="s"),
    MetricDef("cpu_steal_ratio", "Share of CPU time stolen by the hypervisor since boot (0..1)"),
    MetricDef("load_average", "Load average"),
    MetricDef("virt_layer_info", "Virtualization layers detected, outermost first (info "
                                 "metric, value 1)"),
    # probe runs (`record --textfile`, `export --prometheus --probe SPEC`): the last run's figures
    MetricDef("probe_success", "1 when the last probe run completed without error"),
    MetricDef("probe_last_run_timestamp_seconds", "When the last probe run started (unix time)",
              unit="s"),
    MetricDef("probe_duration_seconds", "How long the last probe run measured", unit="s"),
    MetricDef("probe_requests", "Requests made in the last probe run"),
    MetricDef("probe_errors", "Errors in the last probe run: failed memcached requests, DNS "
                              "servers that did not answer, 1 for an IO run that failed"),
    MetricDef("probe_ops_per_second", "Requests per second in the last probe run"),
    MetricDef("probe_throughput_bytes_per_second", "Bytes per second in the last IO probe run",
              unit="B"),
    # the last run's summary: its _count and _sum start from 0 with each run, so they give the
    # run's mean (_sum / _count), not a rate()
    MetricDef("probe_latency_seconds", "Request latency of the last probe run: quantiles, "
                                       "_sum and _count of that run alone",
              type="summary", unit="s"),
    MetricDef("probe_latency_mean_seconds", "Mean request latency of the last probe run",
              unit="s"),
    MetricDef("probe_latency_stddev_seconds", "Standard deviation of the request latency of the "
                                              "last probe run (ioping's mdev)", unit="s"),
    MetricDef("probe_latency_max_seconds", "Slowest request of the last probe run", unit="s"),
]

# old name -> (new name, factor from the new value to the old one, old help). Written beside
# the new names until the next release; the README lists them.
DEPRECATED_NAMES: dict[str, tuple[str, float, str]] = {
    "flash_reserves_percent": ("flash_reserves_ratio", 100.0, "Fusion-io reserve space left, %"),
    "flash_rated_pbw_remaining_percent": ("flash_rated_pbw_remaining_ratio", 100.0,
                                          "Fusion-io rated PBW remaining, %"),
    "flash_bad_block_rate_percent": ("flash_bad_block_rate_ratio", 100.0,
                                     "Huawei ES3000 max bad block rate, %"),
    "flash_rw_errors": ("flash_rw_errors_total", 1.0, "Huawei ES3000 read/write errors"),
    "flash_io_timeouts": ("flash_io_timeouts_total", 1.0, "Huawei ES3000 IO timeouts"),
    "nvme_available_spare_percent": ("nvme_available_spare_ratio", 100.0,
                                     "NVMe available spare, %"),
    "nvme_percent_used": ("nvme_endurance_used_ratio", 100.0, "NVMe endurance used, %"),
    "drive_media_errors": ("drive_media_errors_total", 1.0, "NVMe media errors"),
    "virt_layers": ("virt_layer_info", 1.0, "Virtualization layers detected (value 1)"),
}
# collector_seconds is deprecated too, but not a plain rename: its collector="health" and
# collector="total" series (which made sum() count everything twice) became their own metrics.
_COLLECTOR_SECONDS = "collector_seconds"
# nic_errors_total{counter} counted drops as errors: its counters became their own metrics
_NIC_ERRORS = "nic_errors_total"
NIC_COUNTERS = {"rx_errors": "nic_receive_errors_total", "tx_errors": "nic_transmit_errors_total",
                "rx_dropped": "nic_receive_drops_total", "tx_dropped": "nic_transmit_drops_total"}
_DEPRECATED = "DEPRECATED, removed in the next release: use inspector_"
_DEPRECATED_DEFS = [
    MetricDef(_COLLECTOR_SECONDS, f"{_DEPRECATED}collector_duration_seconds (sections), "
                                  "inspector_rules_duration_seconds and "
                                  "inspector_report_duration_seconds. Time each collector took, "
                                  "health and total included", unit="s"),
    MetricDef(_NIC_ERRORS, f"{_DEPRECATED}nic_receive_errors_total, "
                           "inspector_nic_transmit_errors_total, inspector_nic_receive_drops_total "
                           "and inspector_nic_transmit_drops_total. NIC errors and drops since "
                           "boot, by counter", type="counter", unit="c"),
    *(MetricDef(old, f"{_DEPRECATED}{new}. {text}")
      for old, (new, _factor, text) in DEPRECATED_NAMES.items()),
]
METRICS: dict[str, MetricDef] = {m.name: m for m in _CURRENT + _DEPRECATED_DEFS}

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
            isinstance(layer, dict) and isinstance(layer.get("evidence"), list) and layer["evidence"]
            for layer in layers)
    return any(_input_known(section.get(f)) for f in fields)


def _input_known(value: Any) -> bool:
    """Known: present, not Unknown, and not an empty listing (no /sys/block entries at all
    means /sys/block could not be read, not a host without disks)."""
    if value is None or _is_unknown(value):
        return False
    return not (isinstance(value, (dict, list, str)) and len(value) == 0)


def plugin_status(levels: Iterable[str], unchecked: bool) -> int:
    """The Nagios status of findings at these levels ("ok", "warn", "crit", "unknown"):
    CRITICAL whenever something is crit; else UNKNOWN when part of the host went unchecked (a
    section not collected, nothing collected, a thresholded value unknown: the disks that hung
    may be what is wrong, so never OK, nor only WARNING); else WARNING for a warn; else
    UNKNOWN for unknown findings; else OK. `inspector check` adds its thresholds' levels."""
    levels = set(levels)
    if "crit" in levels:
        return 2
    if unchecked:
        return 3
    if "warn" in levels:
        return 1
    return 3 if "unknown" in levels else 0


def went_unchecked(codes: Iterable[str], sections: dict) -> bool:
    """A section was not collected, or none is up (see section_up)."""
    return any(code.endswith(".not_collected") for code in codes) \
        or not any(section_up(name, value) for name, value in sections.items())


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    return None


def _scaled(value: float, factor: float) -> float:
    """value * factor without the binary noise (99.46 * 0.01 = 0.9945999999999999)."""
    return value if factor == 1 else float(f"{value * factor:.12g}")


def _get(d: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def collect_metrics(report: Report | dict) -> list[Sample]:
    doc = report if isinstance(report, dict) else to_jsonable(report)
    return with_deprecated(_iter_metrics(doc))


def with_deprecated(samples: Iterable[Sample]) -> list[Sample]:
    """`samples` plus, for each one whose name replaced an old one, the old series."""
    renamed = {new: (old, factor) for old, (new, factor, _text) in DEPRECATED_NAMES.items()}
    out = list(samples)
    for s in list(out):
        if s.name in renamed:
            old, factor = renamed[s.name]
            out.append(Sample(old, _scaled(s.value, factor), s.labels))
    return out


def _iter_metrics(doc: dict) -> Iterator[Sample]:
    yield Sample("build_info", 1, {"version": __version__})
    findings = [f for f in doc.get("findings", []) if isinstance(f, dict)]
    for level in ("crit", "warn", "unknown"):
        yield Sample("findings", sum(1 for f in findings if f.get("level") == level), {"level": level})
    sections = doc.get("sections", {})
    yield Sample("health_status", plugin_status(
        (str(f.get("level")) for f in findings),
        went_unchecked((str(f.get("code") or "") for f in findings), sections)))
    for name, section in sections.items():
        yield Sample("section_up", 1 if section_up(name, section) else 0, {"section": name})
    yield from _timings(doc.get("timings") or {})
    yield from _storage(sections.get("storage"))
    yield from _net(sections.get("net"))
    yield from _dns(sections.get("dns"))
    yield from _cpu(sections.get("cpu"))
    yield from _virt(sections.get("virt"))


def _timings(timings: dict) -> Iterator[Sample]:
    for name, seconds in timings.items():
        if (value := _num(seconds)) is None:
            continue
        yield Sample(_COLLECTOR_SECONDS, value, {"collector": name})
        if name == "health":
            yield Sample("rules_duration_seconds", value)
        elif name == "total":
            yield Sample("report_duration_seconds", value)
        else:
            yield Sample("collector_duration_seconds", value, {"collector": name})


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
    arrays = s.get("md")
    for name, md in (arrays.items() if isinstance(arrays, dict) else []):
        if not isinstance(md, dict):
            continue
        if (deg := _num(md.get("degraded"))) is not None:
            yield Sample("md_degraded", deg, {"device": name})
            yield Sample("md_recovering", 1 if deg > 0 and _md_syncing(md) else 0,
                         {"device": name})
        if (pct := _num(md.get("progress_percent"))) is not None:
            yield Sample("md_sync_progress_ratio", _scaled(pct, PERCENT), {"device": name})
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
        level_value = LEVEL_VALUE.get(level.lower(), UNKNOWN_LEVEL) if isinstance(level, str) \
            else UNKNOWN_LEVEL
        yield Sample("drive_health_level", level_value, {"device": name, "kind": _kind(name, health)})
        device = _get(devices, name) if isinstance(devices, dict) else None
        yield Sample("drive_info", 1, {"device": name, **_identity(health, device)})
        for field_name, (metric, scale) in DRIVE_GAUGES.items():
            if (value := _num(health.get(field_name))) is not None:
                yield Sample(metric, _scaled(value, scale), {"device": name})


def _kind(name: str, health: dict) -> str:
    """The health block's kind; when the tool failed (no block), the kind the device name says:
    a drive whose level goes from 2 to 3 keeps its series, and an alert on it its labels."""
    kind = health.get("kind")
    if isinstance(kind, str) and kind:
        return kind
    if name.startswith("fct"):
        return "fio"                     # a Fusion-io controller without a block device
    guessed = kind_of(name)
    return guessed if guessed in ("fio", "hio", "nvme", "smart") else ""


# label -> the fields that say it, in the health block first, then in the block device (sysfs)
IDENTITY = {"model": (("model", "product"), ("model",)),
            "serial": (("serial",), ("serial",)),
            "firmware": (("firmware", "controller_firmware"), ())}


def _identity(health: dict, device: Any) -> dict[str, str]:
    out = {}
    for label, (health_fields, device_fields) in IDENTITY.items():
        values = [health.get(f) for f in health_fields]
        if isinstance(device, dict):
            values += [device.get(f) for f in device_fields]
        out[label] = next((v.strip() for v in values if isinstance(v, str) and v.strip()), "")
    return out


def _md_syncing(md: dict) -> bool:
    """A resync, recovery or reshape running or waiting (sysfs, else /proc/mdstat)."""
    action = md.get("sync_action")
    if isinstance(action, str) and action not in ("idle", "frozen"):
        return True
    return isinstance(_get(md, "mdstat", "progress"), dict)


# Virtual disks (virtio_blk, Xen blkfront) have no health source at all: their health block is
# unknown by nature, not because a tool failed, so they get no drive_health_level series (a 3
# there would page for every VM in a fleet that alerts on "health unknown").
NO_HEALTH_FAMILIES = {"virtio", "xen"}

# drive/flash health fields exported as gauges: field in the model -> (metric, factor)
PERCENT = 0.01
DRIVE_GAUGES = {
    "temperature_c": ("drive_temperature_celsius", 1.0),
    "reserves_pct": ("flash_reserves_ratio", PERCENT),
    "reserves_warn_pct": ("flash_reserves_warn_ratio", PERCENT),
    "pbw_remaining_pct": ("flash_rated_pbw_remaining_ratio", PERCENT),
    "max_bad_block_rate_pct": ("flash_bad_block_rate_ratio", PERCENT),
    "rw_error": ("flash_rw_errors_total", 1.0),
    "io_timeout": ("flash_io_timeouts_total", 1.0),
    "available_spare_pct": ("nvme_available_spare_ratio", PERCENT),
    "spare_threshold_pct": ("nvme_available_spare_threshold_ratio", PERCENT),
    "percent_used": ("nvme_endurance_used_ratio", PERCENT),
    "media_errors": ("drive_media_errors_total", 1.0),
}
OFFLOADS_EXPORTED = ("tcp-segmentation-offload", "generic-segmentation-offload",
                     "generic-receive-offload", "large-receive-offload")
NIC_PACKETS = {"rx_packets": "nic_receive_packets_total", "tx_packets": "nic_transmit_packets_total"}


def _net(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    for nic in s.get("nics") or []:
        if not isinstance(nic, dict) or not isinstance(nic.get("name"), str):
            continue
        # device: node_exporter's label, for joins with node_network_*; nic: deprecated
        labels = {"device": nic["name"], "nic": nic["name"]}
        driver = nic.get("driver")
        yield Sample("nic_info", 1, {**labels, "kind": str(nic.get("kind") or ""),
                                     "driver": driver if isinstance(driver, str) else ""})
        if isinstance(nic.get("operstate"), str):
            yield Sample("nic_up", 1 if nic["operstate"] == "up" else 0, labels)
        for key, metric in (("admin_up", "nic_admin_up"), ("carrier", "nic_carrier")):
            if isinstance(nic.get(key), bool):
                yield Sample(metric, 1 if nic[key] else 0, labels)
        if (mtu := _num(nic.get("mtu"))) is not None:
            yield Sample("nic_mtu_bytes", mtu, labels)
        for key, metric in NIC_COUNTERS.items():
            if (value := _num(_get(nic, "statistics", key))) is not None:
                yield Sample(metric, value, labels)
                yield Sample(_NIC_ERRORS, value, {**labels, "counter": key})
        for key, metric in NIC_PACKETS.items():
            if (value := _num(_get(nic, "statistics", key))) is not None:
                yield Sample(metric, value, labels)
        for feat in nic.get("offloads") or []:
            if isinstance(feat, dict) and feat.get("name") in OFFLOADS_EXPORTED \
                    and isinstance(feat.get("on"), bool):
                yield Sample("nic_offload_enabled", 1 if feat["on"] else 0,
                             {**labels, "feature": feat["name"]})


def _dns(s: Any) -> Iterator[Sample]:
    if not isinstance(s, dict):
        return
    servers = s.get("used_nameservers")
    # an unreadable resolv.conf leaves the list empty: unknown is no series, not 0 servers
    if isinstance(servers, list) and not _is_unknown(s.get("config")):
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
        yield Sample("cpu_steal_ratio", _scaled(steal, PERCENT))
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
            yield Sample("virt_layer_info", 1, {"depth": str(depth), "kind": kind,
                                                "verdict": verdict, "flavor": flavor})


# ----------------------------------------------------------------------------- probe runs
MICRO = 1e-6
LATENCY_QUANTILES = {"p50_us": "0.5", "p90_us": "0.9", "p99_us": "0.99", "p99.9_us": "0.999"}
LATENCY_FIGURES = {"avg_us": "probe_latency_mean_seconds",
                   "mdev_us": "probe_latency_stddev_seconds",
                   "max_us": "probe_latency_max_seconds"}


def probe_metrics(runs: Iterable[dict], started_at: float) -> list[Sample]:
    """Series for probe runs as snapshots and `record` keep them ({"spec", "kind", "summary",
    "error"}, see inspector.probes.forked_runs), labelled by kind and by the spec they were
    asked for (`probe="io:/var/lib/mysql"`, as history and diff name them). A figure a failed
    run did not reach has no series; its success is 0 and its timestamp is written, so a probe
    that stopped working shows as such."""
    out: list[Sample] = []
    for run in runs:
        if not isinstance(run, dict):
            continue
        labels = {"kind": str(run.get("kind") or ""), "probe": str(run.get("spec") or "")}
        summary = run["summary"] if isinstance(run.get("summary"), dict) else {}
        out.append(Sample("probe_success", 0 if run.get("error") else 1, labels))
        out.append(Sample("probe_last_run_timestamp_seconds", started_at, labels))
        out.append(Sample("probe_errors", _probe_errors(run, summary), labels))
        for key, metric, scale in (("duration_s", "probe_duration_seconds", 1.0),
                                   ("requests", "probe_requests", 1.0),
                                   ("ops_per_s", "probe_ops_per_second", 1.0),
                                   ("bytes_per_s", "probe_throughput_bytes_per_second", 1.0)):
            if (value := _num(summary.get(key))) is not None:
                out.append(Sample(metric, value * scale, labels))
        if not summary.get("requests"):
            continue     # no request finished: latency figures of nothing
        for key, quantile in LATENCY_QUANTILES.items():
            if (us := _num(summary.get(key))) is not None:
                out.append(Sample("probe_latency_seconds", _scaled(us, MICRO),
                                  {**labels, "quantile": quantile}))
        requests, mean_us = _num(summary.get("requests")), _num(summary.get("avg_us"))
        if requests is not None and mean_us is not None:     # the run's own sum and count
            out.append(Sample("probe_latency_seconds_sum", _scaled(mean_us * requests, MICRO),
                              labels))
            out.append(Sample("probe_latency_seconds_count", requests, labels))
        for key, metric in LATENCY_FIGURES.items():
            if (us := _num(summary.get(key))) is not None:
                out.append(Sample(metric, _scaled(us, MICRO), labels))
    return out


def _probe_errors(run: dict, summary: dict) -> float:
    errors = summary.get("errors")
    if isinstance(errors, dict):                      # memcached: failed requests by cause
        return float(sum(v for v in errors.values() if _num(v) is not None))
    servers = summary.get("servers")
    if isinstance(servers, dict) and servers:         # dns: servers that did not answer
        return float(sum(1 for v in servers.values()
                         if not (isinstance(v, dict) and v.get("kind") == "answered")))
    return 1.0 if run.get("error") else 0.0
