"""SATA/SAS health from `smartctl --json -a /dev/sdX` (smartmontools 7+).

smartctl's exit status is a bit mask (smartctl(8) "RETURN VALUES"); a non-zero status is normal
output, not a failure of the command, so it is decoded rather than treated as an error.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from inspector.discover.drive_cmd import ParseError, failure, garbage
from inspector.host import HostRoot
from inspector.model import Unknown

EXIT_BITS = {
    0: "command line did not parse",
    1: "device open failed or device did not answer IDENTIFY",
    2: "a SMART or ATA command failed, or a data structure checksum error",
    3: "SMART status check returned DISK FAILING",
    4: "prefail attributes at or below threshold",
    5: "attributes were at or below threshold in the past",
    6: "device error log contains errors",
    7: "self-test log contains errors",
}
# Attributes whose raw value should be 0 on a healthy drive.
WATCHED_ATTRIBUTES = {5: "Reallocated_Sector_Ct", 187: "Reported_Uncorrect",
                      197: "Current_Pending_Sector", 198: "Offline_Uncorrectable",
                      199: "UDMA_CRC_Error_Count"}
MISSING = Unknown("not reported by smartctl")


@dataclass
class SmartAttribute:
    """One ATA SMART attribute (ata_smart_attributes.table[] of smartctl --json)."""
    id: int                     # attribute id: 5, 187, 197, 198, 199
    name: str                   # smartctl's name: Reallocated_Sector_Ct ...
    raw: int | None             # raw value (a count for the watched ids); warn when above 0
    value: int | None = None    # normalised value, vendor scale, higher is better
    worst: int | None = None    # lowest normalised value ever recorded
    thresh: int | None = None   # the vendor's failure threshold for the normalised value
    when_failed: str = ""       # "now"/"past": value is/was at or below thresh; "" never


@dataclass
class SmartHealth:
    """A SATA/SAS drive's health from `smartctl --json -a /dev/sdX`."""
    device: str                                # sda ...
    kind: str = "smart"
    level: str = "ok"   # worst finding (ok/warn/crit/unknown) for JSON readers, set by health.drives
    source: str = "smartctl --json -a"         # the command it came from
    protocol: str | Unknown = MISSING          # ATA, SCSI
    model: str | Unknown = MISSING             # model_name (SCSI: vendor and product)
    serial: str | Unknown = MISSING            # serial_number
    firmware: str | Unknown = MISSING          # firmware_version
    smart_available: bool | Unknown = MISSING   # drive supports SMART (smart_support.available)
    smart_passed: bool | Unknown = MISSING     # overall self-assessment (smart_status.passed)
    # smartctl's exit status, a bit mask (smartctl(8)); bits 3, 4, 7 critical, 5, 6 warn
    exit_status: int = 0
    exit_status_bits: list[str] = field(default_factory=list)  # its set bits, in words
    temperature_c: int | Unknown = MISSING     # current temperature in C (temperature.current)
    power_on_hours: int | Unknown = MISSING    # hours powered on (power_on_time.hours)
    # the watched attributes by id: 5, 187, 197, 198 (bad sectors), 199 (cable CRC errors)
    attributes: dict[int, SmartAttribute] = field(default_factory=dict)
    grown_defects: int | Unknown = MISSING     # SAS: grown defect list entries; warn > 0
    messages: list[str] = field(default_factory=list)  # smartctl's own messages (errors, notes)
    evidence: dict[str, str] = field(default_factory=dict)  # field -> the JSON field: value


def decode_exit_status(status: int) -> list[str]:
    return [text for bit, text in EXIT_BITS.items() if status & (1 << bit)]


def _num(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or abs(value) > 2**63:
        return None
    return int(value)


def parse_smartctl(text: str, device: str = "") -> SmartHealth:
    """Parse `smartctl --json -a`. Raises ParseError when it is not smartctl JSON."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("smartctl"), dict):
        raise ParseError("no smartctl object in JSON")
    h = SmartHealth(device=device)
    meta = doc["smartctl"]
    h.exit_status = _num(meta.get("exit_status")) or 0
    h.exit_status_bits = decode_exit_status(h.exit_status)
    h.evidence["exit_status"] = f"smartctl.exit_status: {h.exit_status}"
    for msg in meta.get("messages") or []:
        if isinstance(msg, dict) and isinstance(msg.get("string"), str):
            h.messages.append(msg["string"])
    dev = doc.get("device")
    if isinstance(dev, dict) and isinstance(dev.get("protocol"), str):
        h.protocol = dev["protocol"]
    for field_name, key in (("model", "model_name"), ("serial", "serial_number"),
                            ("firmware", "firmware_version")):
        if isinstance(doc.get(key), str):
            setattr(h, field_name, doc[key])
    if not isinstance(h.model, str):
        parts = [doc[k] for k in ("scsi_vendor", "scsi_product") if isinstance(doc.get(k), str)]
        if parts:
            h.model = " ".join(parts)
    support = doc.get("smart_support")
    if isinstance(support, dict) and isinstance(support.get("available"), bool):
        h.smart_available = support["available"]
    status = doc.get("smart_status")
    if isinstance(status, dict) and isinstance(status.get("passed"), bool):
        h.smart_passed = status["passed"]
        h.evidence["smart_passed"] = f"smart_status.passed: {str(status['passed']).lower()}"
    temp = doc.get("temperature")
    if isinstance(temp, dict) and (celsius := _num(temp.get("current"))) is not None:
        h.temperature_c = celsius
        h.evidence["temperature_c"] = f"temperature.current: {h.temperature_c}"
    pot = doc.get("power_on_time")
    if isinstance(pot, dict) and (hours := _num(pot.get("hours"))) is not None:
        h.power_on_hours = hours
        h.evidence["power_on_hours"] = f"power_on_time.hours: {h.power_on_hours}"
    if (defects := _num(doc.get("scsi_grown_defect_list"))) is not None:
        h.grown_defects = defects
        h.evidence["grown_defects"] = f"scsi_grown_defect_list: {h.grown_defects}"
    table = doc.get("ata_smart_attributes")
    rows = table.get("table") if isinstance(table, dict) else None
    for row in rows if isinstance(rows, list) else []:
        attr_id = _num(row.get("id")) if isinstance(row, dict) else None
        if attr_id is None or attr_id not in WATCHED_ATTRIBUTES:
            continue
        raw = row.get("raw")
        attr = SmartAttribute(id=attr_id, name=str(row.get("name", "")),
                              raw=_num(raw.get("value")) if isinstance(raw, dict) else None,
                              value=_num(row.get("value")), worst=_num(row.get("worst")),
                              thresh=_num(row.get("thresh")),
                              when_failed=str(row.get("when_failed") or ""))
        h.attributes[attr.id] = attr
        raw_text = raw.get("string", attr.raw) if isinstance(raw, dict) else raw
        h.evidence[f"attr_{attr.id}"] = f"{attr.id} {attr.name} raw {raw_text}"
    return h


def usable(h: SmartHealth) -> Unknown | None:
    """Unknown(reason) when smartctl could not read the device at all (bits 0-1, no data)."""
    if h.smart_available is False and not isinstance(h.smart_passed, bool):
        model = f" ({h.model})" if isinstance(h.model, str) else ""
        return Unknown(f"smartctl: device has no SMART support{model}")
    if h.exit_status & 0b11 and not isinstance(h.smart_passed, bool) and not h.attributes:
        why = "; ".join(h.messages) or "; ".join(h.exit_status_bits)
        return Unknown(f"smartctl: {why}")
    return None


def collect(root: HostRoot, device: str, timeout: float) -> SmartHealth | Unknown:
    argv = ["smartctl", "--json", "-a", f"/dev/{device}"]
    result = root.run(argv, timeout=timeout)
    problem = failure(result, nonzero_ok=True)
    if problem is not None:
        return problem
    try:
        h = parse_smartctl(result.stdout, device)
    except ParseError:
        return garbage("smartctl", result.stdout)
    unusable = usable(h)
    return h if unusable is None else unusable
