"""SATA/SAS health from `smartctl --json -a /dev/sdX` (smartmontools 7+), else its text form
`smartctl -a /dev/sdX` (smartmontools 6, and what a sosreport keeps).

smartctl's exit status is a bit mask (smartctl(8) "RETURN VALUES"); a non-zero status is normal
output, not a failure of the command, so it is decoded rather than treated as an error.

A drive behind a RAID controller is addressed with `-d TYPE` (megaraid,N cciss,N ...) on the
controller's device (inspector.discover.raid_drives); `collect` takes that address too.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from inspector.discover.drive_cmd import ParseError, failure, garbage, parse_int
from inspector.model import Unknown
from inspector.roots.host import HostRoot

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
    device: str                                # sda ...; a drive behind a controller: its address
    kind: str = "smart"
    level: str = "ok"   # worst finding (ok/warn/crit/unknown) for JSON readers, set by health.drives
    source: str = "smartctl --json -a"         # the command it came from
    protocol: str | Unknown = MISSING          # ATA, SCSI
    model: str | Unknown = MISSING             # model_name (SCSI: vendor and product)
    serial: str | Unknown = MISSING            # serial_number
    firmware: str | Unknown = MISSING          # firmware_version
    capacity_bytes: int | Unknown = MISSING    # user_capacity.bytes ("User Capacity:" in text)
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


@dataclass(frozen=True)
class Unreadable(Unknown):
    """A drive smartctl was asked about but could not read (open failed, no answer, hung):
    its health is unknown, which health.drives reports, unlike a drive nobody asked about
    (smartctl not installed, not kept in a sosreport) or one without SMART (a virtual disk)."""


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
    capacity = doc.get("user_capacity")
    if isinstance(capacity, dict) and (size := _num(capacity.get("bytes"))) is not None:
        h.capacity_bytes = size
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
    open_failed = any(_OPEN_FAILED.search(m) for m in h.messages)
    if (h.exit_status & 0b11 or open_failed) and not isinstance(h.smart_passed, bool) \
            and not h.attributes:
        why = "; ".join(h.messages) or "; ".join(h.exit_status_bits)
        if h.exit_status & 0b10 or open_failed:
            return Unreadable(f"smartctl could not open it: {why}")
        return Unknown(f"smartctl: {why}")   # bit 0: e.g. a virtio disk, no SMART protocol
    return None


# smartctl's words for a device it could not open (os_linux.cpp: "Smartctl open device: X
# failed: REASON"; a RAID logical volume: "... please try adding '-d megaraid,N'")
_OPEN_FAILED = re.compile(r"open device: .* failed|please try adding '-d ")


@dataclass(frozen=True)
class Address:
    """How smartctl reaches a drive: its device path and, behind a controller, `-d TYPE`."""
    path: str                 # /dev/sda, /dev/bus/0, /dev/sg1
    dtype: str | None = None  # megaraid,1 sat+megaraid,0 cciss,3 aacraid,0,0,2 areca,1/1

    def options(self) -> list[str]:
        return ["-d", self.dtype, self.path] if self.dtype else [self.path]

    def label(self) -> str:
        return f"{self.path} -d {self.dtype}" if self.dtype else self.path.removeprefix("/dev/")


def collect(root: HostRoot, device: str, timeout: float,
            address: Address | None = None) -> SmartHealth | Unknown:
    """JSON first; the text form when the JSON is not to be had (smartctl 6 knows no --json,
    a sosreport keeps `smartctl -a /dev/sdX`)."""
    address = address or Address(f"/dev/{device}")
    name = address.label() if address.dtype else device
    result = root.run(["smartctl", "--json", "-a", *address.options()], timeout=timeout)
    problem = failure(result, nonzero_ok=True)
    if problem is not None:
        if result.error is None or not any(w in result.error for w in _NOT_KEPT):
            return _unreadable(problem)
        # a sosreport keeps the text form; so does a capture of a smartctl without --json
        return _text_collect(root, name, address, timeout, problem)
    try:
        h = parse_smartctl(result.stdout, name)
    except ParseError:
        if result.returncode not in (None, 0) and "json" in result.stdout.lower():
            return _text_collect(root, name, address, timeout, garbage("smartctl", result.stdout))
        return _unreadable(garbage("smartctl", result.stdout))
    unusable = usable(h)
    return h if unusable is None else unusable


_NOT_KEPT = ("not in this sosreport", "not recorded")


def _text_collect(root: HostRoot, name: str, address: Address, timeout: float,
                  json_problem: Unknown) -> SmartHealth | Unknown:
    result = root.run(["smartctl", "-a", *address.options()], timeout=timeout)
    problem = failure(result, nonzero_ok=True)
    if problem is not None:
        # nothing of either form: say what the JSON attempt met (it names the text one if kept)
        return json_problem if result.error and any(w in result.error for w in _NOT_KEPT) \
            else _unreadable(problem)
    try:
        h = parse_smartctl_text(result.stdout, name, result.returncode)
    except ParseError:
        return _unreadable(garbage("smartctl", result.stdout))
    unusable = usable(h)
    return h if unusable is None else unusable


def _unreadable(problem: Unknown) -> Unknown:
    """smartctl ran (or was started) on the drive and gave nothing usable: hung, failed,
    printed garbage. Not installed or not recorded stays a plain Unknown."""
    reason = problem.reason
    if "not installed" in reason or "not recorded" in reason or "not in this sosreport" in reason:
        return problem
    return Unreadable(reason)


# ----------------------------------------------------------------------------- text form
_TEXT_FIELDS = {"Device Model": "model", "Model Number": "model", "Product": "product",
                "Vendor": "vendor", "Serial Number": "serial", "Serial number": "serial",
                "Firmware Version": "firmware", "Revision": "firmware"}
_ATTR_ROW = re.compile(r"^\s*(\d{1,3})\s+(\S+)\s+(0x[0-9a-fA-F]{4}|[-A-Z]{6,7})\s+(\d+)\s+(\d+)"
                       r"\s+(\d+|---)\s+(.*)$")
_BANNER = re.compile(r"^smartctl \d+\.\d+")


def parse_smartctl_text(text: str, device: str = "", returncode: int | None = None) -> SmartHealth:
    """Parse `smartctl -a` as printed (ATA and SCSI/SAS). Raises ParseError when it is not
    smartctl's output. `returncode`: its exit status when known (a sosreport of sos 3.x
    does not keep it): the bit mask is decoded as for JSON."""
    lines = text.splitlines()
    if not any(_BANNER.match(line) or line.startswith("=== START OF") for line in lines[:12]):
        raise ParseError("not smartctl -a output")
    h = SmartHealth(device=device, source="smartctl -a (text)")
    if returncode:
        h.exit_status = returncode & 0xFF
        h.exit_status_bits = decode_exit_status(h.exit_status)
        h.evidence["exit_status"] = f"exit status: {h.exit_status}"
    fields: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if sep and key in _TEXT_FIELDS and value:
            fields.setdefault(_TEXT_FIELDS[key], value)
        elif _OPEN_FAILED.search(line) or line.rstrip().endswith("Unable to detect device type") \
                or line.startswith(("Read Device Identity failed", "A mandatory SMART command failed")):
            h.messages.append(line.strip())
        elif key == "User Capacity" and (size := parse_int(value)) is not None:
            h.capacity_bytes = size
        elif key == "SMART support is" and value.startswith(("Available", "Unavailable")):
            h.smart_available = value.startswith("Available")
        elif key == "SMART overall-health self-assessment test result":
            h.smart_passed = value.upper().startswith("PASSED")
            h.evidence["smart_passed"] = line.strip()
        elif key == "SMART Health Status":
            h.smart_passed = value.upper() == "OK"
            h.evidence["smart_passed"] = line.strip()
        elif key == "Current Drive Temperature" and (celsius := parse_int(value)) is not None \
                and celsius > 0:   # 0 C: the device reports none (a RAID logical volume)
            h.temperature_c = celsius
            h.evidence["temperature_c"] = line.strip()
        elif key == "Elements in grown defect list" and (count := parse_int(value)) is not None:
            h.grown_defects = count
            h.evidence["grown_defects"] = line.strip()
        elif key.startswith("Accumulated power on time") and (hours := parse_int(value)) is not None:
            h.power_on_hours = hours
            h.evidence["power_on_hours"] = line.strip()
        elif (row := _ATTR_ROW.match(line)) is not None:
            _text_attribute(h, row, line)
    if "model" in fields:
        h.model = fields["model"]
    elif "product" in fields:
        h.model = " ".join(fields[k] for k in ("vendor", "product") if k in fields)
    if "serial" in fields:
        h.serial = fields["serial"]
    if "firmware" in fields:
        h.firmware = fields["firmware"]
    if "vendor" in fields or "product" in fields:
        h.protocol = "SCSI"
    elif "model" in fields:
        h.protocol = "NVMe" if any(line.startswith("Model Number:") for line in lines) else "ATA"
    return h


def _text_attribute(h: SmartHealth, row: re.Match, line: str) -> None:
    attr_id, name, flags = int(row[1]), row[2], row[3]
    rest = row[7].split()
    # the long table: TYPE UPDATED WHEN_FAILED RAW; the brief one (-f brief): FAIL RAW
    when, raw_words = ((rest[2] if len(rest) > 2 else "-"), rest[3:]) if flags.startswith("0x") \
        else ((rest[0] if rest else "-"), rest[1:])
    raw_text = " ".join(raw_words)
    raw = parse_int(raw_words[0]) if raw_words else None
    if attr_id == 194 and raw is not None and not known_temperature(h):
        h.temperature_c = raw
        h.evidence["temperature_c"] = line.strip()
    if attr_id == 9 and raw is not None:
        h.power_on_hours = raw
        h.evidence["power_on_hours"] = line.strip()
    if attr_id not in WATCHED_ATTRIBUTES:
        return
    when_failed = {"-": "", "FAILING_NOW": "now", "NOW": "now", "In_the_past": "past",
                   "Past": "past"}.get(when, when.lower())
    h.attributes[attr_id] = SmartAttribute(
        id=attr_id, name=name, raw=raw, value=int(row[4]), worst=int(row[5]),
        thresh=int(row[6]) if row[6].isdigit() else None, when_failed=when_failed)
    h.evidence[f"attr_{attr_id}"] = f"{attr_id} {name} raw {raw_text}"


def known_temperature(h: SmartHealth) -> bool:
    return isinstance(h.temperature_c, int)
