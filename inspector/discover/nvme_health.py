"""NVMe health: `nvme smart-log -o json` (nvme-cli), else `smartctl --json -a`, else sysfs only.

nvme-cli reports the composite temperature in Kelvin; smartctl in Celsius. Critical-warning
bits are defined by the NVMe base specification (SMART / Health Information log, byte 0).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from inspector.discover.drive_cmd import ParseError, failure, garbage
from inspector.model import Unknown, known
from inspector.roots.host import HostRoot

# bit -> meaning (NVMe base spec, SMART log byte 0)
CRITICAL_WARNING_BITS = {
    0: "available spare below threshold",
    1: "temperature outside threshold",
    2: "NVM subsystem reliability degraded",
    3: "media placed in read-only mode",
    4: "volatile memory backup failed",
    5: "persistent memory region read-only",
}
NO_TOOL = Unknown("neither nvme nor smartctl installed")


@dataclass
class NvmeHealth:
    """An NVMe namespace's health: the controller's SMART / Health Information log."""
    device: str                 # the namespace block device: nvme0n1
    kind: str = "nvme"
    level: str = "ok"   # worst finding (ok/warn/crit/unknown) for JSON readers, set by health.drives
    source: str = "sysfs"       # nvme smart-log | smartctl | sysfs (identity only: no tool)
    controller: str | Unknown = Unknown("not present")  # its controller: nvme0
    model: str | Unknown = Unknown("not present")       # controller model (sysfs model)
    serial: str | Unknown = Unknown("not present")      # serial number (sysfs serial)
    firmware: str | Unknown = Unknown("not present")    # firmware revision (sysfs firmware_rev)
    # controller state (sysfs state): live is normal; resetting, connecting, dead ... are not
    controller_state: str | Unknown = Unknown("not present")
    # SMART log byte 0, a bit mask (bits in critical_warnings); any bit set is critical
    critical_warning: int | Unknown = NO_TOOL
    critical_warnings: list[str] = field(default_factory=list)  # the set bits, in words
    temperature_c: float | Unknown = NO_TOOL  # composite temperature in C (nvme-cli gives K)
    # percent of spare blocks left (0-100); critical at or below spare_threshold_pct
    available_spare_pct: int | Unknown = NO_TOOL
    spare_threshold_pct: int | Unknown = NO_TOOL  # the vendor's threshold for it, percent
    # vendor's estimate of rated life used, percent; may pass 100; warn at 90
    percent_used: int | Unknown = NO_TOOL
    media_errors: int | Unknown = NO_TOOL  # unrecovered data integrity errors, lifetime; warn > 0
    error_log_entries: int | Unknown = NO_TOOL  # error log entries over the controller's life
    power_on_hours: int | Unknown = NO_TOOL  # hours powered on
    unsafe_shutdowns: int | Unknown = NO_TOOL  # power losses without a shutdown notification
    evidence: dict[str, str] = field(default_factory=dict)  # field -> the JSON key: value


def decode_critical_warning(value: int) -> list[str]:
    return [text for bit, text in CRITICAL_WARNING_BITS.items() if value & (1 << bit)] + \
        [f"reserved bit {bit}" for bit in range(6, 8) if value & (1 << bit)]


def _int(value: object) -> int | None:
    """nvme-cli prints plain numbers, newer versions sometimes {"value": n} or "35 C"."""
    if isinstance(value, dict):
        value = value.get("value", value.get("raw"))
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value == value and abs(value) < 2**63:
        return int(value)
    if isinstance(value, str):
        digits = value.strip().split(" ")[0].rstrip("%")
        try:
            return int(float(digits))
        except (ValueError, OverflowError):
            return None
    return None


def _set(h: NvmeHealth, attr: str, value: int | float | None, key: str, raw: object) -> None:
    if value is None:
        setattr(h, attr, Unknown(f"{key} missing"))
    else:
        setattr(h, attr, value)
        h.evidence[attr] = f"{key}: {raw}"


def _load(text: str) -> dict:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ParseError("JSON is not an object")
    return doc


def parse_nvme_cli(text: str, h: NvmeHealth) -> NvmeHealth:
    """Fill `h` from `nvme smart-log -o json`. Raises ParseError."""
    doc = _load(text)
    if "critical_warning" not in doc:
        raise ParseError("no critical_warning in nvme smart-log JSON")
    h.source = "nvme smart-log"
    cw = _int(doc.get("critical_warning"))
    _set(h, "critical_warning", cw, "critical_warning", doc.get("critical_warning"))
    h.critical_warnings = decode_critical_warning(cw) if cw is not None else []
    raw_temp = doc.get("temperature")
    kelvin = _int(raw_temp)
    if isinstance(raw_temp, str) and raw_temp.strip().upper().endswith("C"):
        _set(h, "temperature_c", kelvin, "temperature", raw_temp)   # already Celsius
    else:
        _set(h, "temperature_c", None if kelvin is None else kelvin - 273, "temperature (K)", raw_temp)
    for attr, key in (("available_spare_pct", "avail_spare"), ("spare_threshold_pct", "spare_thresh"),
                      ("percent_used", "percent_used"), ("media_errors", "media_errors"),
                      ("error_log_entries", "num_err_log_entries"),
                      ("power_on_hours", "power_on_hours"), ("unsafe_shutdowns", "unsafe_shutdowns")):
        if key not in doc and key == "percent_used":
            key = "percentage_used"
        _set(h, attr, _int(doc.get(key)), key, doc.get(key))
    return h


def parse_smartctl_nvme(text: str, h: NvmeHealth) -> NvmeHealth:
    """Fill `h` from `smartctl --json -a` on an NVMe device. Raises ParseError."""
    doc = _load(text)
    log = doc.get("nvme_smart_health_information_log")
    if not isinstance(log, dict):
        raise ParseError("no nvme_smart_health_information_log in smartctl JSON")
    h.source = "smartctl"
    cw = _int(log.get("critical_warning"))
    _set(h, "critical_warning", cw, "critical_warning", log.get("critical_warning"))
    h.critical_warnings = decode_critical_warning(cw) if cw is not None else []
    temp = doc.get("temperature")
    current = temp.get("current") if isinstance(temp, dict) else log.get("temperature")
    _set(h, "temperature_c", _int(current), "temperature (C)", current)
    for attr, key in (("available_spare_pct", "available_spare"),
                      ("spare_threshold_pct", "available_spare_threshold"),
                      ("percent_used", "percentage_used"), ("media_errors", "media_errors"),
                      ("error_log_entries", "num_err_log_entries"),
                      ("power_on_hours", "power_on_hours"), ("unsafe_shutdowns", "unsafe_shutdowns")):
        _set(h, attr, _int(log.get(key)), key, log.get(key))
    return h


def sysfs_identity(root: HostRoot, device: str) -> NvmeHealth:
    h = NvmeHealth(device=device)
    base = f"sys/block/{device}/device"
    # For a namespace, sys/block/nvme0n1/device is the controller (nvme0).
    h.controller = root.link_name(base) or Unknown("no device link in sysfs")
    for attr, name in (("model", "model"), ("serial", "serial"), ("firmware", "firmware_rev"),
                       ("controller_state", "state")):
        setattr(h, attr, root.try_line(f"{base}/{name}"))
    return h


def collect(root: HostRoot, device: str, timeout: float) -> NvmeHealth:
    h = sysfs_identity(root, device)
    reasons = []
    result = root.run(["nvme", "smart-log", f"/dev/{device}", "-o", "json"], timeout=timeout)
    problem = failure(result)
    if problem is None:
        try:
            return parse_nvme_cli(result.stdout, h)
        except ParseError:
            problem = garbage("nvme", result.stdout)
    reasons.append(problem.reason)
    result = root.run(["smartctl", "--json", "-a", f"/dev/{device}"], timeout=timeout)
    problem = failure(result, nonzero_ok=True)
    if problem is None:
        try:
            return parse_smartctl_nvme(result.stdout, h)
        except ParseError:
            problem = _smartctl_reason(result.stdout)
    reasons.append(problem.reason)
    if all("not installed" in r for r in reasons):
        return h   # sysfs only; SMART fields already say neither tool is installed
    reason = Unknown("; ".join(reasons))
    for attr in ("critical_warning", "temperature_c", "available_spare_pct", "spare_threshold_pct",
                 "percent_used", "media_errors", "error_log_entries", "power_on_hours",
                 "unsafe_shutdowns"):
        setattr(h, attr, reason)
    return h


def _smartctl_reason(text: str) -> Unknown:
    """Why smartctl JSON carries no NVMe log (device open failed ...), else 'garbage'."""
    from inspector.discover.smart import parse_smartctl, usable
    try:
        unusable = usable(parse_smartctl(text))
    except ParseError:
        return garbage("smartctl", text)
    return unusable if unusable is not None else Unknown("smartctl gave no NVMe health log")


def has_smart(h: NvmeHealth) -> bool:
    return known(h.critical_warning)
